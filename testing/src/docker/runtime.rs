//! The Docker backend's own tokio runtime, and the process-wide chores: reaching the daemon,
//! removing containers left by dead test processes, removing this process's containers at exit.
//!
//! Every Docker request runs on one long-lived runtime of the kit's own, not on the caller's:
//! `#[tokio::test]` makes a runtime per test, and the HTTP connections to the daemon (kept in
//! a pool that outlives any one test) must not be driven by a runtime that is gone. It also lets
//! the synchronous parts of the API (`kill`, `pause`, `Drop`) wait for the daemon from any
//! thread, inside a runtime or not.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use testcontainers::bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::OnceCell;

use super::spec::{host_name, LABEL_HOST, LABEL_PID, LABEL_TEST};
use crate::{Error, Result};

/// How long removing this process's containers at exit may take.
const EXIT_CLEANUP: Duration = Duration::from_secs(30);

static RUNTIME: Mutex<Option<&'static Runtime>> = Mutex::new(None);

fn runtime() -> Result<&'static Runtime> {
    let mut slot = RUNTIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(runtime) = *slot {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zk-testing-docker")
        .enable_all()
        .build()?;
    let runtime: &'static Runtime = Box::leak(Box::new(runtime));
    *slot = Some(runtime);
    Ok(runtime)
}

/// Runs `job` on the kit's runtime and waits for it without blocking. If the caller stops
/// waiting, `job` still runs to its end, and what it returns is dropped on the kit's runtime.
pub(crate) async fn run<T, F>(job: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    runtime()?.spawn(job).await.map_err(|e| Error::Docker(format!("a Docker task failed: {e}")))?
}

/// Runs `job` on the kit's runtime without waiting for it.
pub(crate) fn spawn<F>(job: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    match runtime() {
        Ok(runtime) => drop(runtime.spawn(job)),
        Err(e) => tracing::warn!(error = %e, "no runtime for a Docker task"),
    }
}

/// Runs `job` on the kit's runtime and blocks the calling thread until it is done; works
/// inside any runtime (also a current-thread one) and outside of one.
pub(crate) fn block<T, F>(job: F) -> Result<T>
where
    F: Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let runtime = runtime()?;
    if Handle::try_current().is_ok_and(|current| current.id() == runtime.handle().id()) {
        // On one of the kit's own threads (a value dropped there): the runtime has more.
        return tokio::task::block_in_place(|| runtime.handle().block_on(job));
    }
    let (reply, answer) = mpsc::channel();
    runtime.spawn(async move {
        let _ = reply.send(job.await);
    });
    answer.recv().map_err(|_| Error::Docker("a Docker task failed".into()))?
}

/// The daemon's client, after the first-use chores (see the module docs). Call on the kit's
/// runtime.
pub(crate) async fn docker() -> Result<Docker> {
    static READY: OnceCell<()> = OnceCell::const_new();
    let docker = testcontainers::core::client::docker_client_instance()
        .await
        .map_err(|e| Error::Docker(format!("no Docker client: {e}")))?;
    READY
        .get_or_try_init(|| async {
            docker.ping().await.map_err(|e| {
                let hint = if e.to_string().contains("is too new") {
                    // bollard 0.21.1 (Cargo.lock) sends no API version, so the daemon answers in
                    // its own; a bollard that sends its version needs an engine that speaks it.
                    " (the Docker client library asks for a newer API than this engine speaks)"
                } else {
                    ""
                };
                Error::Docker(format!("the Docker daemon is not reachable: {e}{hint}"))
            })?;
            sweep_orphans(&docker).await;
            register_exit_cleanup();
            Ok::<_, Error>(())
        })
        .await?;
    Ok(docker)
}

/// The label filters of the kit's objects on this machine, plus `more`.
fn filters(more: &[String]) -> HashMap<String, Vec<String>> {
    let mut labels = vec![format!("{LABEL_TEST}=1"), format!("{LABEL_HOST}={}", host_name())];
    labels.extend(more.iter().cloned());
    HashMap::from([("label".to_string(), labels)])
}

/// Removes (by force) the containers matching the label filters, then their networks; with
/// `only_dead_owners`, only those whose test process has died.
async fn remove_labelled(docker: &Docker, more: &[String], only_dead_owners: bool) {
    let filters = filters(more);
    let owner_dead = |labels: Option<&HashMap<String, String>>| {
        let pid = labels.and_then(|l| l.get(LABEL_PID)).and_then(|p| p.parse::<libc::pid_t>().ok());
        !only_dead_owners || pid.is_some_and(|pid| !process_alive(pid))
    };
    let options = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
    for container in docker.list_containers(Some(options)).await.unwrap_or_default() {
        if let (Some(id), true) = (container.id, owner_dead(container.labels.as_ref())) {
            tracing::debug!(%id, "removing a leftover test container");
            let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
            let _ = docker.remove_container(&id, Some(options)).await;
        }
    }
    let options = ListNetworksOptionsBuilder::new().filters(&filters).build();
    for network in docker.list_networks(Some(options)).await.unwrap_or_default() {
        if let (Some(name), true) = (network.name, owner_dead(network.labels.as_ref())) {
            let _ = docker.remove_network(&name).await;
        }
    }
}

/// Containers of test processes of this machine that died without cleaning up (a `SIGKILL`ed
/// test binary) are removed on the next first use.
async fn sweep_orphans(docker: &Docker) {
    remove_labelled(docker, &[], true).await;
}

fn process_alive(pid: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 only checks for existence and permission.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}

/// Servers that are never dropped (a `static`, like [`shared_server`](crate::shared_server))
/// still have their containers removed when the test process exits normally.
fn register_exit_cleanup() {
    extern "C" fn at_exit() {
        let _ = std::panic::catch_unwind(|| {
            let Ok(runtime) = runtime() else { return };
            let (done, wait) = mpsc::channel();
            runtime.spawn(async move {
                if let Ok(docker) = testcontainers::core::client::docker_client_instance().await {
                    remove_labelled(&docker, &[format!("{LABEL_PID}={}", std::process::id())], false).await;
                }
                let _ = done.send(());
            });
            let _ = wait.recv_timeout(EXIT_CLEANUP);
        });
    }
    // SAFETY: registers a plain function to run at exit; it takes no locks held across exit.
    if unsafe { libc::atexit(at_exit) } != 0 {
        tracing::warn!("could not register the exit cleanup of test containers");
    }
}
