//! What one container is made of: name, image, environment, labels, published port. Pure, so
//! that it is tested without Docker.
//!
//! The environment uses only variables that both the local image (`docker/zk-entrypoint.sh`)
//! and the official `zookeeper` image read, so that `ZK_TEST_IMAGE=zookeeper:3.8` works too.

use crate::config::Settings;
use crate::instance::JVM_FLAGS;
use crate::{Error, Result};

/// The client port inside every container (published on a chosen host port).
pub(crate) const CLIENT_PORT: u16 = 2181;
/// Quorum and election ports inside the containers (on the private network only; a partition
/// drops what goes to or comes from them).
pub(crate) const QUORUM_PORT: u16 = 2888;
pub(crate) const ELECTION_PORT: u16 = 3888;

/// Label on every container and network the kit creates.
pub(crate) const LABEL_TEST: &str = "zk-recipes.test";
/// Label with the pid of the test process that created the container.
pub(crate) const LABEL_PID: &str = "zk-recipes.pid";
/// Label with the host name of the machine of that process.
pub(crate) const LABEL_HOST: &str = "zk-recipes.host";
/// Label shared by the containers (and network) of one server or cluster.
pub(crate) const LABEL_GROUP: &str = "zk-recipes.group";

/// One container to create.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// "server" or "server 2 (myid 3)", for messages.
    pub label: String,
    /// Container name, also its host name on the cluster network.
    pub name: String,
    pub image: String,
    pub env: Vec<(String, String)>,
    pub labels: Vec<(String, String)>,
    /// Host port on 127.0.0.1 the client port is published on.
    pub host_port: u16,
    /// The cluster's private network, `None` for a standalone server (default bridge).
    pub network: Option<String>,
}

/// One member of an ensemble as the container sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Member<'a> {
    pub my_id: u32,
    /// Container names of all members, in `myid` order (`myid` = index + 1).
    pub names: &'a [String],
}

/// The labels of a container or network of `group`.
pub(crate) fn labels(group: &str) -> Vec<(String, String)> {
    vec![
        (LABEL_TEST.into(), "1".into()),
        (LABEL_PID.into(), std::process::id().to_string()),
        (LABEL_HOST.into(), host_name()),
        (LABEL_GROUP.into(), group.into()),
    ]
}

/// This machine's host name (the kernel's), `"unknown"` if it cannot be read.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// The container environment for the kit's settings: standalone when `member` is `None`.
///
/// # Errors
/// [`Error::InvalidArgument`] for an extra `zoo.cfg` setting with whitespace in it (the images
/// split `ZOO_CFG_EXTRA` on whitespace).
pub(crate) fn environment(settings: &Settings, member: Option<Member<'_>>) -> Result<Vec<(String, String)>> {
    let t = &settings.timing;
    let mut extra = vec![
        // Test data is thrown away: no fsync per write.
        "forceSync=no".to_string(),
        // A restarted or reconnected container may have a new address: listen on all of them.
        "quorumListenOnAllIPs=true".to_string(),
        "reconfigEnabled=false".to_string(),
    ];
    if let Some(min) = t.min_session_timeout {
        extra.push(format!("minSessionTimeout={}", min.as_millis()));
    }
    if let Some(max) = t.max_session_timeout {
        extra.push(format!("maxSessionTimeout={}", max.as_millis()));
    }
    for (key, value) in &settings.extra {
        if key.contains(char::is_whitespace) || value.contains(char::is_whitespace) {
            return Err(Error::InvalidArgument(format!(
                "zoo.cfg setting {key:?}={value:?}: the Docker backend takes no whitespace in settings"
            )));
        }
        extra.push(format!("{key}={value}"));
    }
    let mut env = vec![
        ("ZOO_TICK_TIME", t.tick_time.as_millis().to_string()),
        ("ZOO_INIT_LIMIT", t.init_limit.to_string()),
        ("ZOO_SYNC_LIMIT", t.sync_limit.to_string()),
        ("ZOO_ADMINSERVER_ENABLED", "false".into()),
        ("ZOO_4LW_COMMANDS_WHITELIST", "*".into()),
        ("ZOO_CFG_EXTRA", extra.join(" ")),
        ("JVMFLAGS", JVM_FLAGS.join(" ")),
    ];
    match member {
        None => env.push(("ZOO_STANDALONE_ENABLED", "true".into())),
        Some(member) => {
            let servers = member
                .names
                .iter()
                .enumerate()
                .map(|(i, name)| format!("server.{}={name}:{QUORUM_PORT}:{ELECTION_PORT};{CLIENT_PORT}", i + 1))
                .collect::<Vec<_>>()
                .join(" ");
            // A one-server ensemble still runs as a quorum (Mode: leader), like a bigger one.
            env.push(("ZOO_STANDALONE_ENABLED", "false".into()));
            env.push(("ZOO_MY_ID", member.my_id.to_string()));
            env.push(("ZOO_SERVERS", servers));
        }
    }
    Ok(env.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// `image` split into repository and tag (`latest` when it has none); a registry host's port
/// (`host:5000/zk`) is not a tag.
pub(crate) fn split_image(image: &str) -> (&str, &str) {
    match image.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => (repository, tag),
        _ => (image, "latest"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
        env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn standalone_environment() {
        let mut settings = Settings::default();
        settings.timing.max_session_timeout = Some(Duration::from_secs(4));
        settings.extra.push(("localSessionsEnabled".into(), "true".into()));
        let env = environment(&settings, None).unwrap();
        assert_eq!(value(&env, "ZOO_TICK_TIME"), Some("200"));
        assert_eq!(value(&env, "ZOO_STANDALONE_ENABLED"), Some("true"));
        assert_eq!(value(&env, "ZOO_SERVERS"), None);
        let extra = value(&env, "ZOO_CFG_EXTRA").unwrap();
        assert!(extra.contains("maxSessionTimeout=4000"), "{extra}");
        assert!(extra.ends_with("localSessionsEnabled=true"), "{extra}");
        assert!(value(&env, "JVMFLAGS").unwrap().contains("-Dznode.container.checkIntervalMs=100"));
    }

    #[test]
    fn ensemble_environment_names_every_member() {
        let names = vec!["a-1".to_string(), "a-2".to_string(), "a-3".to_string()];
        let env = environment(&Settings::default(), Some(Member { my_id: 2, names: &names })).unwrap();
        assert_eq!(value(&env, "ZOO_MY_ID"), Some("2"));
        assert_eq!(
            value(&env, "ZOO_SERVERS"),
            Some("server.1=a-1:2888:3888;2181 server.2=a-2:2888:3888;2181 server.3=a-3:2888:3888;2181")
        );
        assert_eq!(value(&env, "ZOO_STANDALONE_ENABLED"), Some("false"));
    }

    #[test]
    fn whitespace_in_settings_is_refused() {
        let mut settings = Settings::default();
        settings.extra.push(("a".into(), "b c".into()));
        assert!(matches!(environment(&settings, None), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn images_split_into_repository_and_tag() {
        assert_eq!(split_image("zk-recipes/zookeeper:3.8"), ("zk-recipes/zookeeper", "3.8"));
        assert_eq!(split_image("zookeeper"), ("zookeeper", "latest"));
        assert_eq!(split_image("registry:5000/zk"), ("registry:5000/zk", "latest"));
        assert_eq!(split_image("registry:5000/zk:3.8"), ("registry:5000/zk", "3.8"));
    }
}
