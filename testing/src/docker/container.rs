//! One server in a container: create, stop, kill, start again, pause, partition (see
//! [`partition`](super::partition)), remove. The methods mirror
//! [`Instance`](crate::instance::Instance)'s, so that [`Node`](crate::node::Node) dispatches to
//! either.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use testcontainers::bollard::models::PortBinding;
use testcontainers::bollard::query_parameters::{KillContainerOptionsBuilder, RemoveContainerOptionsBuilder};
use testcontainers::core::{ContainerPort, ExecCommand, ImageExt};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage};
use tokio::time::Instant;

use super::network::Network;
use super::partition::{self, Action};
use super::runtime::{block, docker, run};
use super::spec::{split_image, Spec, CLIENT_PORT};
use crate::backend::DEFAULT_IMAGE;
use crate::four_letter::{server_mode, ServerMode};
use crate::instance::{LOG_TAIL_LINES, PROBE_TIMEOUT, READY_POLL, STOP_GRACE};
use crate::{Error, Result};

type Container = ContainerAsync<GenericImage>;

/// What the hint says when the image is missing.
const IMAGE_HINT: &str = "bash docker/build-image.sh (or set ZK_TEST_IMAGE to an image you have)";
/// The local ZooKeeper 3.9 image `docker/build-image.sh --version 3.9` builds, and its hint.
const IMAGE_3_9: &str = "zk-recipes/zookeeper:3.9";
const IMAGE_3_9_HINT: &str = "bash docker/build-image.sh --version 3.9 (or set ZK_TEST_IMAGE to an image you have)";

/// One ZooKeeper server in a container. Dropping it removes the container.
#[derive(Debug)]
pub(crate) struct Server {
    label: String,
    name: String,
    id: String,
    host_port: u16,
    connect_string: String,
    /// `None` once removed.
    container: Option<Arc<Container>>,
    /// Dropped after the container: the last member of a cluster removes the network.
    network: Option<Arc<Network>>,
    paused: AtomicBool,
    /// Cut off from its peers: the rules are applied again when the container starts again
    /// (a start makes a new network namespace, without them).
    partitioned: AtomicBool,
}

impl Server {
    /// Creates and starts the container of `spec` (on the kit's runtime). A container that was
    /// created but could not start (its host port was taken meanwhile) is removed again.
    pub async fn create(spec: Spec, network: Option<Arc<Network>>) -> Result<Server> {
        let (label, host_port) = (spec.label.clone(), spec.host_port);
        let container = run(create_container(spec)).await?;
        Ok(Server {
            label,
            name: container.1,
            id: container.0.id().to_string(),
            host_port,
            connect_string: format!("127.0.0.1:{host_port}"),
            container: Some(Arc::new(container.0)),
            network,
            paused: AtomicBool::new(false),
            partitioned: AtomicBool::new(false),
        })
    }

    fn container(&self) -> Result<Arc<Container>> {
        self.container.clone().ok_or_else(|| Error::Docker(format!("{} was removed", self.label)))
    }

    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }

    pub fn client_port(&self) -> u16 {
        self.host_port
    }

    /// The data directory inside the container.
    pub fn data_dir(&self) -> &Path {
        Path::new("/data")
    }

    /// There is no log file: the server logs to the container's output.
    pub fn log_path(&self) -> &Path {
        Path::new("")
    }

    pub fn pid(&self) -> Option<u32> {
        None
    }

    pub fn container_id(&self) -> Option<&str> {
        Some(&self.id)
    }

    /// Asks the daemon whether the container runs (a paused one does).
    pub fn is_running(&self) -> bool {
        let Ok(container) = self.container() else { return false };
        block(async move { container.is_running().await.map_err(docker_error("inspect")) }).unwrap_or(false)
    }

    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Whether a `srvr` probe is worth sending (not paused: a paused server never answers).
    pub fn may_serve(&self) -> bool {
        !self.is_paused()
    }

    /// `docker kill` (SIGKILL), then waits until the container has stopped.
    pub fn kill(&self) {
        let Ok(container) = self.container() else { return };
        self.paused.store(false, Ordering::SeqCst);
        let killed = block(async move {
            let docker = docker().await?;
            let options = KillContainerOptionsBuilder::new().signal("SIGKILL").build();
            // A container that is not running answers 409: nothing to kill.
            let _ = docker.kill_container(container.id(), Some(options)).await;
            wait_stopped(&container).await
        });
        if let Err(e) = killed {
            tracing::warn!(server = %self.label, error = %e, "could not kill the container");
        }
    }

    /// `docker stop`: SIGTERM, SIGKILL after the grace period.
    pub async fn stop(&self) {
        let Ok(container) = self.container() else { return };
        let paused = self.paused.swap(false, Ordering::SeqCst);
        let stopped = run(async move {
            if paused {
                let _ = container.unpause().await;
            }
            let grace = i32::try_from(STOP_GRACE.as_secs()).unwrap_or(5);
            container.stop_with_timeout(Some(grace)).await.map_err(docker_error("stop"))
        })
        .await;
        if let Err(e) = stopped {
            tracing::warn!(server = %self.label, error = %e, "could not stop the container");
        }
    }

    /// `docker start`: the same container, data, name and published port. Does nothing if it
    /// runs. A partitioned server is cut off its peers again as soon as it has started.
    pub async fn spawn(&self) -> Result<()> {
        let container = self.container()?;
        let started = run(async move {
            if container.is_running().await.map_err(docker_error("inspect"))? {
                return Ok(false);
            }
            container.start().await.map_err(docker_error("start"))?;
            Ok(true)
        })
        .await?;
        if started && self.partitioned.load(Ordering::SeqCst) {
            self.cut_or_heal(Action::Cut).await?;
        }
        Ok(())
    }

    /// Waits until `srvr` reports a mode that `accept`s, the container stops, or `deadline`.
    pub async fn wait_until(&self, deadline: Instant, accept: impl Fn(&ServerMode) -> bool) -> Result<ServerMode> {
        let container = self.container()?;
        loop {
            if let Ok(Some(mode)) = server_mode(&self.connect_string, PROBE_TIMEOUT).await {
                if accept(&mode) {
                    return Ok(mode);
                }
            }
            let c = container.clone();
            if !run(async move { c.is_running().await.map_err(docker_error("inspect")) }).await? {
                return Err(self.failed("the container stopped before serving".into()));
            }
            if Instant::now() >= deadline {
                return Err(self.failed("not serving in time".into()));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// The error for a server that failed, with the end of its output.
    pub fn failed(&self, reason: String) -> Error {
        Error::TestServerFailed {
            reason: format!("{} (container {}) on port {}: {reason}", self.label, self.name, self.host_port),
            log_tail: self.log_tail(LOG_TAIL_LINES),
        }
    }

    /// A port clash shows when the container starts, not in its log.
    pub fn port_clash(&self) -> bool {
        false
    }

    /// The last `lines` lines of the container's output (`docker logs`).
    pub fn log_tail(&self, lines: usize) -> String {
        let Ok(container) = self.container() else { return String::new() };
        let logs = block(async move {
            let mut out = container.stdout_to_vec().await.map_err(docker_error("logs"))?;
            out.extend(container.stderr_to_vec().await.map_err(docker_error("logs"))?);
            Ok(out)
        });
        let text = String::from_utf8_lossy(&logs.unwrap_or_default()).into_owned();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `docker pause`: the JVM is frozen, connections stay open.
    pub fn pause(&self) -> Result<()> {
        let container = self.container()?;
        block(async move { container.pause().await.map_err(docker_error("pause")) })?;
        self.paused.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// `docker unpause`.
    pub fn resume(&self) -> Result<()> {
        let container = self.container()?;
        block(async move { container.unpause().await.map_err(docker_error("unpause")) })?;
        self.paused.store(false, Ordering::SeqCst);
        Ok(())
    }

    /// Cuts the server off its peers (iptables rules in its container drop its quorum and
    /// election traffic), its clients staying connected. Partitioning twice is partitioned; a
    /// stopped server is cut off when it starts.
    pub async fn partition(&self) -> Result<()> {
        self.cluster_member()?;
        self.cut_or_heal(Action::Cut).await?;
        self.partitioned.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Removes the rules [`partition`](Self::partition) added: the server hears its peers again,
    /// on the same address. Healing a connected (or stopped) server does nothing.
    pub async fn heal(&self) -> Result<()> {
        self.cluster_member()?;
        self.partitioned.store(false, Ordering::SeqCst);
        self.cut_or_heal(Action::Heal).await
    }

    fn cluster_member(&self) -> Result<()> {
        match self.network {
            Some(_) => Ok(()),
            None => Err(Error::Unsupported("only cluster servers can be partitioned")),
        }
    }

    /// Runs the partition script for `action` in the container (`docker exec`). A container that
    /// does not run has no network namespace to change: nothing to do now (see
    /// [`spawn`](Self::spawn)).
    async fn cut_or_heal(&self, action: Action) -> Result<()> {
        let container = self.container()?;
        let label = self.label.clone();
        run(async move {
            let command = ExecCommand::new(["sh".to_string(), "-c".to_string(), partition::script(action)]);
            let mut result = match container.exec(command).await {
                Ok(result) => result,
                Err(e) if !container.is_running().await.map_err(docker_error("inspect"))? => {
                    tracing::debug!(server = %label, error = %e, "not running: the partition applies when it starts");
                    return Ok(());
                }
                Err(e) => return Err(docker_error("exec")(e)),
            };
            let stdout = result.stdout_to_vec().await.map_err(docker_error("exec"))?;
            let stderr = result.stderr_to_vec().await.map_err(docker_error("exec"))?;
            partition::outcome(&label, &String::from_utf8_lossy(&stdout), &String::from_utf8_lossy(&stderr))
        })
        .await
    }

    /// Takes the container out of the server, for [`remove_all`].
    pub fn take(&mut self) -> Option<Arc<Container>> {
        self.container.take()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        remove_all(self.take().into_iter().collect());
    }
}

/// Removes containers (by force, with their anonymous volumes), all at once, and waits.
pub(crate) fn remove_all(containers: Vec<Arc<Container>>) {
    if containers.is_empty() {
        return;
    }
    let removed = block(async move {
        let removals = containers.into_iter().map(|container| async move {
            match Arc::try_unwrap(container) {
                Ok(container) => container.rm().await.map_err(docker_error("rm")),
                // Still used by a request that was given up on: remove by id; the last
                // reference's drop then finds it gone.
                Err(shared) => {
                    let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
                    let docker = docker().await?;
                    docker.remove_container(shared.id(), Some(options)).await.map_err(docker_error("rm"))
                }
            }
        });
        for result in futures_util::future::join_all(removals).await {
            result?;
        }
        Ok(())
    });
    if let Err(e) = removed {
        tracing::warn!(error = %e, "could not remove a test container");
    }
}

async fn create_container(spec: Spec) -> Result<(Container, String)> {
    let docker = docker().await?;
    // The images built locally cannot be pulled: say how to build a missing one.
    let local_hint = match spec.image.as_str() {
        DEFAULT_IMAGE => Some(IMAGE_HINT),
        IMAGE_3_9 => Some(IMAGE_3_9_HINT),
        _ => None,
    };
    if let Some(install_hint) = local_hint {
        if docker.inspect_image(&spec.image).await.is_err() {
            return Err(Error::ZooKeeperNotInstalled {
                searched: format!("the Docker image {} (ZK_TEST_BACKEND=docker) is not there", spec.image),
                install_hint,
            });
        }
    }
    let (repository, tag) = split_image(&spec.image);
    let host_port = spec.host_port;
    let mut request = GenericImage::new(repository, tag)
        .with_container_name(spec.name.clone())
        .with_hostname(spec.name.clone())
        .with_mapped_port(host_port, ContainerPort::Tcp(CLIENT_PORT))
        // Published on 127.0.0.1 only, not on every interface.
        .with_host_config_modifier(move |host| {
            let binding = PortBinding { host_ip: Some("127.0.0.1".into()), host_port: Some(host_port.to_string()) };
            host.port_bindings
                .get_or_insert_with(Default::default)
                .insert(format!("{CLIENT_PORT}/tcp"), Some(vec![binding]));
        });
    for (key, value) in &spec.env {
        request = request.with_env_var(key, value);
    }
    for (key, value) in &spec.labels {
        request = request.with_label(key, value);
    }
    if let Some(network) = &spec.network {
        // NET_ADMIN: partitions are iptables rules in the container's network namespace.
        request = request.with_network(network).with_cap_add("NET_ADMIN");
    }
    match request.start().await {
        Ok(container) => Ok((container, spec.name)),
        Err(e) => {
            // Created but not started (a taken port): not owned by anything, so remove it here.
            let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
            let _ = docker.remove_container(&spec.name, Some(options)).await;
            Err(Error::Docker(format!("starting {} from {}: {e}", spec.label, spec.image)))
        }
    }
}

/// Waits (a few seconds at most) until the container no longer runs.
async fn wait_stopped(container: &Container) -> Result<()> {
    let deadline = Instant::now() + STOP_GRACE;
    while container.is_running().await.map_err(docker_error("inspect"))? {
        if Instant::now() >= deadline {
            return Err(Error::Docker(format!("container {} still runs after a kill", container.id())));
        }
        tokio::time::sleep(READY_POLL).await;
    }
    Ok(())
}

fn docker_error<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Docker(format!("{what}: {e}"))
}

/// Whether a failed start was a host port someone else took meanwhile.
pub(crate) fn is_port_clash(error: &Error) -> bool {
    matches!(error, Error::Docker(m) if m.contains("port is already allocated") || m.contains("address already in use"))
}
