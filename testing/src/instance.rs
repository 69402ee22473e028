//! One test server: its temp dir, configuration, JVM command line and process slot. Shared by
//! [`TestingServer`](super::TestingServer) and [`TestingCluster`](super::TestingCluster).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tempfile::TempDir;
use tokio::time::Instant;

use super::config::ServerConfig;
use super::four_letter::{server_mode, ServerMode};
use super::install::Installation;
use super::process::ZkProcess;
use crate::{Error, Result};

/// How often a starting server is asked whether it serves yet.
pub(crate) const READY_POLL: Duration = Duration::from_millis(50);
/// How long one readiness probe may take.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a graceful stop waits for the JVM before killing it.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);
/// Lines of the log file quoted in errors.
pub(crate) const LOG_TAIL_LINES: usize = 40;

/// JVM flags for a fast start and a small footprint on a small machine.
pub(crate) const JVM_FLAGS: &[&str] = &[
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xms32m",
    "-Xmx256m",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.admin.enableServer=false",
    // Reap empty container nodes within 100 ms (default 60 s), so that tests can watch a lock's
    // parent vanish and sequence numbers restart.
    "-Dznode.container.checkIntervalMs=100",
    "-Dzookeeper.root.logger=WARN,CONSOLE",
    // Elections: re-send notifications at most every second (default: backing off to 60 s), and
    // give up connecting to a dead or paused peer after 2 s (default 5 s).
    "-Dzookeeper.fastleader.maxNotificationInterval=1000",
    "-Dzookeeper.cnxTimeout=2000",
    // A taken election port makes the server exit after 3 tries instead of retrying forever.
    "-Dzookeeper.electionPortBindRetry=3",
];

/// One server's files and process.
#[derive(Debug)]
pub(crate) struct Instance {
    /// "server" or "server 2 (myid 3)", for messages.
    label: String,
    install: Installation,
    conf_dir: PathBuf,
    cfg_path: PathBuf,
    data_dir: PathBuf,
    log_path: PathBuf,
    client_port: u16,
    secure_port: Option<u16>,
    connect_string: String,
    /// Declared before `dir` so that the process dies before its files are removed.
    process: Mutex<Option<ZkProcess>>,
    dir: TempDir,
}

impl Instance {
    /// Creates the temp dir and writes the configuration. `config.data_dir` is replaced by a
    /// directory inside the temp dir.
    pub fn new(label: String, install: Installation, mut config: ServerConfig, my_id: Option<u32>) -> Result<Instance> {
        let dir = tempfile::Builder::new().prefix("zk-test-").tempdir()?;
        let conf_dir = dir.path().join("conf");
        config.data_dir = dir.path().join("data");
        let cfg_path = config.write(&conf_dir, my_id)?;
        Ok(Instance {
            label,
            install,
            conf_dir,
            cfg_path,
            data_dir: config.data_dir.clone(),
            log_path: dir.path().join("zookeeper.log"),
            client_port: config.client_port,
            secure_port: config.secure_port,
            connect_string: format!("127.0.0.1:{}", config.client_port),
            process: Mutex::new(None),
            dir,
        })
    }

    fn slot(&self) -> MutexGuard<'_, Option<ZkProcess>> {
        self.process.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn client_port(&self) -> u16 {
        self.client_port
    }

    pub fn secure_port(&self) -> Option<u16> {
        self.secure_port
    }

    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The configuration directory (`zoo.cfg`, `jaas.conf`, logging).
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The JVM command line.
    fn command(&self) -> Result<Command> {
        let log = File::options().create(true).append(true).open(&self.log_path)?;
        let classpath = std::env::join_paths(
            std::iter::once(self.conf_dir.as_path()).chain(self.install.classpath().iter().map(PathBuf::as_path)),
        )
        .map_err(|e| Error::io(format!("class path: {e}")))?;
        let mut command = Command::new(self.install.java());
        let jaas = self.conf_dir.join(super::config::JAAS_FILE);
        if jaas.is_file() {
            command.arg(format!("-Djava.security.auth.login.config={}", jaas.display()));
        }
        command
            .current_dir(self.dir.path())
            .arg("-cp")
            .arg(classpath)
            .args(JVM_FLAGS)
            .arg(format!("-Dzookeeper.log.dir={}", self.dir.path().display()))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&self.cfg_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        Ok(command)
    }

    /// Starts the JVM. Does nothing if it is already running.
    pub async fn spawn(&self) -> Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let mut process = ZkProcess::spawn(self.command()?).await?;
        tracing::debug!(server = %self.label, pid = process.pid(), port = self.client_port, "spawned");
        {
            let mut slot = self.slot();
            if slot.as_mut().is_none_or(|p| p.try_exit().is_some()) {
                *slot = Some(process);
                return Ok(());
            }
        }
        // Another task started it meanwhile: keep that one.
        process.kill();
        Ok(())
    }

    /// Waits until `srvr` reports a mode that `accept`s, the process exits, or `deadline`.
    ///
    /// # Errors
    /// [`Error::TestServerFailed`] with the log tail when the process exits or the deadline passes.
    pub async fn wait_until(&self, deadline: Instant, accept: impl Fn(&ServerMode) -> bool) -> Result<ServerMode> {
        loop {
            if let Some(status) = self.exit_status() {
                return Err(self.failed(format!("exited ({status}) before serving")));
            }
            if let Ok(Some(mode)) = server_mode(&self.connect_string, PROBE_TIMEOUT).await {
                if accept(&mode) {
                    return Ok(mode);
                }
            }
            if Instant::now() >= deadline {
                return Err(self.failed("not serving in time".into()));
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// The error for a server that failed, with the end of its log.
    pub fn failed(&self, reason: String) -> Error {
        Error::TestServerFailed {
            reason: format!("{} on port {}: {reason}", self.label, self.client_port),
            log_tail: self.log_tail(LOG_TAIL_LINES),
        }
    }

    /// `None` while the process runs (or was never started / was reaped by kill or stop),
    /// the exit status when it died on its own.
    fn exit_status(&self) -> Option<std::process::ExitStatus> {
        self.slot().as_mut().and_then(ZkProcess::try_exit)
    }

    /// Whether the log says a port could not be bound.
    pub fn port_clash(&self) -> bool {
        self.log_tail(200).contains("Address already in use")
    }

    /// The last `lines` lines of the server's log file (empty if it cannot be read).
    pub fn log_tail(&self, lines: usize) -> String {
        read_tail(&self.log_path, lines).unwrap_or_default()
    }

    pub fn is_running(&self) -> bool {
        self.slot().as_mut().is_some_and(|p| p.try_exit().is_none())
    }

    pub fn is_paused(&self) -> bool {
        self.slot().as_mut().is_some_and(|p| p.try_exit().is_none() && p.is_paused())
    }

    pub fn pid(&self) -> Option<u32> {
        let mut slot = self.slot();
        let process = slot.as_mut()?;
        process.try_exit().is_none().then(|| process.pid())
    }

    /// `SIGKILL` and reap. Does nothing if not running.
    pub fn kill(&self) {
        if let Some(mut process) = self.slot().take() {
            process.kill();
        }
    }

    /// `SIGTERM`, wait, then `SIGKILL`. Does nothing if not running.
    pub async fn stop(&self) {
        let process = self.slot().take();
        if let Some(mut process) = process {
            process.stop(STOP_GRACE).await;
        }
    }

    pub fn pause(&self) -> Result<()> {
        match self.slot().as_mut() {
            Some(process) => process.pause(),
            None => Err(self.not_running()),
        }
    }

    pub fn resume(&self) -> Result<()> {
        match self.slot().as_mut() {
            Some(process) => process.resume(),
            None => Err(self.not_running()),
        }
    }

    fn not_running(&self) -> Error {
        Error::InvalidArgument(format!("{} is not running", self.label))
    }
}

fn read_tail(path: &Path, lines: usize) -> std::io::Result<String> {
    const MAX_BYTES: u64 = 64 * 1024;
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(MAX_BYTES)))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    Ok(all[all.len().saturating_sub(lines)..].join("\n"))
}
