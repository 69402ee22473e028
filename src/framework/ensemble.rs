//! Following a reconfigured ensemble (Curator's `EnsembleTracker`): zookeeper-client keeps the
//! connect string it was given, so after a dynamic reconfiguration a session that the framework
//! re-creates could be sent to servers that left. The framework reads `/zookeeper/config`
//! (with a watch) on every session; once the configuration differs from the one the framework
//! first saw, sessions it re-creates use the client addresses of that configuration.
//!
//! Not followed: an ensemble whose configuration names no client address for some server (a
//! static configuration), and TLS frameworks (`/zookeeper/config` names the plaintext client
//! ports only).

use std::sync::Mutex;

use crate::sync::lock;

/// What the framework knows of the ensemble's configuration.
#[derive(Debug, Default)]
pub(crate) struct EnsembleView {
    /// The configuration the framework first read (its `version=` line).
    baseline: Option<String>,
    /// The servers of a later, different configuration, as a connect string.
    pub(super) servers: Option<String>,
}

/// The shared view, in the framework's `Inner`.
pub(crate) type SharedView = Mutex<EnsembleView>;

impl EnsembleView {
    /// Takes in a configuration just read; whether the servers to use changed.
    pub(super) fn update(&mut self, config: &str) -> bool {
        let version = config_version(config);
        let baseline = self.baseline.get_or_insert_with(|| version.clone());
        if *baseline == version {
            return false;
        }
        let Some(servers) = client_addresses(config) else { return false };
        let changed = self.servers.as_deref() != Some(servers.as_str());
        self.servers = Some(servers);
        changed
    }
}

/// The connect string for the next session: the tracked servers (with `configured`'s chroot
/// suffix, if any) once the ensemble was reconfigured, else `configured` itself.
pub(crate) fn next_connect_string(view: &SharedView, configured: &str) -> String {
    match lock(view).servers.as_deref() {
        Some(servers) => format!("{servers}{}", chroot_suffix(configured)),
        None => configured.to_owned(),
    }
}

/// `configured`'s `/chroot` suffix (after the last host), or "".
fn chroot_suffix(configured: &str) -> &str {
    let hosts_end = configured.rfind(',').map_or(0, |i| i + 1);
    let last = &configured[hosts_end..];
    let last = last.split_once("://").map_or(last, |(_, rest)| rest);
    last.find('/').map_or("", |i| &last[i..])
}

/// The `version=` line of a configuration ("" when there is none).
fn config_version(config: &str) -> String {
    config.lines().find_map(|l| l.trim().strip_prefix("version=")).unwrap_or_default().to_owned()
}

/// The client addresses of every server of a dynamic configuration
/// (`server.N=host:quorum:election[:role];[clientHost:]clientPort`), as a connect string;
/// `None` when some server names none.
pub(crate) fn client_addresses(config: &str) -> Option<String> {
    let mut out = Vec::new();
    for line in config.lines().map(str::trim).filter(|l| l.starts_with("server.")) {
        let (_, spec) = line.split_once('=')?;
        let (server, client) = spec.split_once(';')?;
        let server_host = host_of(server)?;
        let client = client.trim();
        let (host, port) = match client.rsplit_once(':') {
            Some((host, port)) => (host, port),
            None => ("", client),
        };
        port.parse::<u16>().ok()?;
        let host = match host {
            "" | "0.0.0.0" | "[::]" | "::" => server_host,
            host => host,
        };
        out.push(format!("{host}:{port}"));
    }
    (!out.is_empty()).then(|| out.join(","))
}

/// The host of `host:quorum:election[:role]` (an IPv6 host is bracketed).
fn host_of(server: &str) -> Option<&str> {
    let server = server.trim();
    if server.starts_with('[') {
        return server.find(']').map(|i| &server[..=i]);
    }
    server.split(':').next().filter(|h| !h.is_empty())
}

/// Whether a framework built with `cfg` follows reconfigurations.
pub(super) fn tracks(cfg: &super::builder::Config) -> bool {
    #[cfg(feature = "tls")]
    if cfg.tls.is_some() {
        return false;
    }
    cfg.ensemble_tracker
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: &str = "server.1=127.0.0.1:3001:4001:participant;127.0.0.1:2181\n\
        server.2=127.0.0.1:3002:4002:participant;0.0.0.0:2182\n\
        server.3=127.0.0.1:3003:4003:observer;2183\nversion=100000000\n";
    const REPLACED: &str = "server.2=127.0.0.1:3002:4002:participant;0.0.0.0:2182\n\
        server.3=127.0.0.1:3003:4003:observer;2183\n\
        server.4=127.0.0.1:3004:4004:participant;127.0.0.1:2184\nversion=200000005\n";

    #[test]
    fn client_addresses_of_a_dynamic_configuration() {
        assert_eq!(client_addresses(THREE).as_deref(), Some("127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"));
        assert_eq!(client_addresses("server.1=[::1]:1:2;3\n").as_deref(), Some("[::1]:3"));
        // a static configuration (no client address) or none at all: nothing to follow
        assert_eq!(client_addresses("server.1=127.0.0.1:3001:4001\n"), None);
        assert_eq!(client_addresses(""), None);
    }

    #[test]
    fn only_a_changed_configuration_is_followed() {
        let view = Mutex::new(EnsembleView::default());
        assert!(!lock(&view).update(THREE), "the first configuration is the baseline");
        assert_eq!(next_connect_string(&view, "localhost:2181/app"), "localhost:2181/app");
        assert!(lock(&view).update(REPLACED));
        assert!(!lock(&view).update(REPLACED));
        assert_eq!(
            next_connect_string(&view, "localhost:2181/app"),
            "127.0.0.1:2182,127.0.0.1:2183,127.0.0.1:2184/app"
        );
        assert_eq!(next_connect_string(&view, "a:1,b:2"), "127.0.0.1:2182,127.0.0.1:2183,127.0.0.1:2184");
    }
}
