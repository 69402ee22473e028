//! The Docker backend (feature `docker`): each server is a container of a ZooKeeper image,
//! created and controlled through `testcontainers` (and the `bollard` client it re-exports for
//! what it does not wrap: kill, networks, labels).
//!
//! * A server's client port is published on `127.0.0.1` at a host port the kit picks, fixed in
//!   the container's configuration, so that `docker stop` / `docker start` keep the connect
//!   string. The data stays in the container's own layer.
//! * A cluster gets a private bridge network; the containers find each other by name. Cluster
//!   containers have the `NET_ADMIN` capability: a partition cuts a server off its peers with
//!   iptables rules inside its container, its clients staying connected (see [`partition`]).
//! * Every container and network carries the labels `zk-recipes.test=1`, `zk-recipes.pid`,
//!   `zk-recipes.host` and `zk-recipes.group`. Dropping a server or cluster removes its
//!   containers and network and waits for it; containers of servers that are never dropped
//!   (statics) are removed when the test process exits; those of a test process that was killed
//!   are removed by the next test process that uses Docker on the same machine.

mod container;
mod network;
mod partition;
mod runtime;
mod spec;

use std::sync::Arc;

use futures_util::future::{join_all, try_join_all};
use tokio::time::Instant;

use container::is_port_clash;
pub(crate) use container::{remove_all, Server};
use network::Network;
use spec::{Member, Spec};

use super::backend::Backend;
use super::config::Settings;
use super::four_letter::ServerMode;
use super::ports::{on_free_ports, StartFailure};
use crate::{Error, Result};

/// A fresh name stem for the containers and network of one server or cluster.
fn group() -> String {
    format!("zkr-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

fn image(settings: &Settings) -> String {
    settings.image.clone().unwrap_or_else(Backend::image_from_env)
}

/// Starts a standalone server and waits until it serves.
pub(crate) async fn start_server(settings: &Settings, port: Option<u16>) -> Result<Server> {
    let env = spec::environment(settings, None)?;
    let group = group();
    let deadline = Instant::now() + settings.start_timeout;
    on_free_ports(1, port.map(|port| vec![port]), |ports| {
        let spec = Spec {
            label: "server".into(),
            name: group.clone(),
            image: image(settings),
            env: env.clone(),
            labels: spec::labels(&group),
            host_port: ports[0],
            network: None,
        };
        async move {
            let server = Server::create(spec, None).await.map_err(clash_or_not)?;
            server.wait_until(deadline, |_| true).await?;
            Ok(server)
        }
    })
    .await
}

/// A failed container start, marked as a port clash when a host port was taken meanwhile.
fn clash_or_not(error: Error) -> StartFailure {
    StartFailure { port_clash: is_port_clash(&error), error }
}

/// Starts an ensemble of `n` containers on a new network and waits until every one has joined
/// the quorum. Server `i` has `myid` `i + 1`.
pub(crate) async fn start_cluster(settings: &Settings, n: usize) -> Result<Vec<Server>> {
    let group = group();
    let names: Vec<String> = (1..=n).map(|id| format!("{group}-{id}")).collect();
    let envs = (0..n)
        .map(|i| {
            let my_id = u32::try_from(i + 1).unwrap_or(u32::MAX);
            spec::environment(settings, Some(Member { my_id, names: &names }))
        })
        .collect::<Result<Vec<_>>>()?;
    let network = Arc::new(Network::create(group.clone(), spec::labels(&group)).await?);
    let deadline = Instant::now() + settings.start_timeout;
    on_free_ports(n, None, |ports| {
        let creates = (0..n).map(|i| {
            let spec = Spec {
                label: format!("server {i} (myid {})", i + 1),
                name: names[i].clone(),
                image: image(settings),
                env: envs[i].clone(),
                labels: spec::labels(&group),
                host_port: ports[i],
                network: Some(network.name().to_string()),
            };
            Server::create(spec, Some(network.clone()))
        });
        let created = join_all(creates);
        async move {
            let created = created.await;
            let port_clash = created.iter().any(|c| c.as_ref().is_err_and(is_port_clash));
            // The containers that did start are removed as the results are dropped.
            let servers =
                created.into_iter().collect::<Result<Vec<_>>>().map_err(|error| StartFailure { error, port_clash })?;
            try_join_all(servers.iter().map(|s| s.wait_until(deadline, ServerMode::is_quorum_member))).await?;
            Ok(servers)
        }
    })
    .await
}
