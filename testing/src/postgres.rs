//! A throwaway PostgreSQL server for tests that need a database beside ZooKeeper (the fencing
//! crate's): `initdb` into a temp dir, `postgres` on a free loopback port, killed by pid when
//! the handle drops.

use std::io;
use std::os::unix::fs::chown;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;
use tokio::time::Instant;

use crate::ports::{on_free_ports, StartFailure};
use crate::process::ZkProcess;
use crate::{Error, Result};

/// How long a server is given to become ready to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often its log is read while it starts.
const START_POLL: Duration = Duration::from_millis(50);
/// How long a stopping server is given after `SIGINT` (fast shutdown) before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Where Debian's `postgresql-<major>` packages put their programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// The environment variable naming a directory with `initdb` and `postgres`, if not Debian's.
pub const PG_BIN_ENV: &str = "PG_BIN";
/// The superuser of every test cluster (it trusts loopback connections: no password).
pub const PG_USER: &str = "postgres";
/// The name prefix of a cluster's temp dir.
const DIR_PREFIX: &str = "zk-testing-pg-";
/// How old a cluster dir without a server must be before a later start removes it (it may be
/// another process's, being made).
const UNSERVED_AGE: Duration = Duration::from_secs(600);

/// A throwaway PostgreSQL server on `127.0.0.1`, for tests.
///
/// Its cluster is made by `initdb` in a temp dir (trust authentication, UTF-8) and served by a
/// `postgres` process on a free loopback port; dropping the handle kills that process by pid
/// and removes the directory. Run as root, the kit runs both as the `postgres` user (which
/// Debian's package creates), since PostgreSQL refuses to run as root.
///
/// The programs come from [`PG_BIN_ENV`] when set, else from the newest of Debian's
/// `/usr/lib/postgresql/<major>/bin` (`scripts/setup.sh` installs the `postgresql` package).
///
/// ```no_run
/// # async fn demo() -> zk_recipes_testing::Result<()> {
/// let pg = zk_recipes_testing::TestingPostgres::start().await?;
/// println!("connect with {}", pg.connection_string());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct TestingPostgres {
    process: Option<ZkProcess>,
    port: u16,
    // Dropped after the process (fields drop in order): the server is gone before its files.
    dir: TempDir,
}

/// Options of a [`TestingPostgres`]; from [`TestingPostgres::builder`].
#[derive(Debug, Clone, Default)]
pub struct TestingPostgresBuilder {
    durable: bool,
}

impl TestingPostgresBuilder {
    /// Whether commits are flushed to disk as a production server does (`fsync`,
    /// `synchronous_commit` and `full_page_writes` on). Off by default: a test's cluster is
    /// thrown away, and flushing only slows it down. Benchmarks turn it on.
    pub fn durable(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// Makes the cluster and starts its server; returns once it accepts connections.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when no PostgreSQL installation is found (the message says
    /// how to install one); [`Error::TestServerFailed`] with the log's last lines when `initdb`
    /// fails or the server exits or is not ready within a minute; [`Error::Io`] when the temp
    /// dir cannot be made.
    ///
    /// # Cancel safety
    /// Dropping the future kills a server it started and removes its directory.
    pub async fn start(self) -> Result<TestingPostgres> {
        let bin = find_bin()?;
        sweep_abandoned();
        let dir = tempfile::Builder::new().prefix(DIR_PREFIX).tempdir()?;
        let data = dir.path().join("data");
        let owner = run_as();
        if let Some((uid, gid)) = owner {
            chown(dir.path(), Some(uid), Some(gid))?;
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", PG_USER, "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"])
            .stdin(Stdio::null());
        as_owner(&mut initdb, owner);
        let out =
            tokio::task::spawn_blocking(move || initdb.output()).await.map_err(|e| Error::io(e.to_string()))??;
        if !out.status.success() {
            return Err(failed("initdb failed", &String::from_utf8_lossy(&out.stderr)));
        }
        let durable = if self.durable { "on" } else { "off" };
        let (process, port) = on_free_ports(1, None, |ports| {
            let (bin, data, dir) = (bin.clone(), data.clone(), dir.path().to_path_buf());
            async move {
                let port = ports[0];
                let log = dir.join(format!("postgres-{port}.log"));
                let mut server = Command::new(bin.join("postgres"));
                server
                    .arg("-D")
                    .arg(&data)
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-k"])
                    .arg(&dir)
                    .args(["-c", &format!("fsync={durable}"), "-c", &format!("synchronous_commit={durable}")])
                    .args(["-c", &format!("full_page_writes={durable}"), "-c", "max_connections=200"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(&log).map_err(Error::from)?);
                as_owner(&mut server, owner);
                let mut process = ZkProcess::spawn(server).await?;
                match ready(&mut process, &log).await {
                    Ok(()) => Ok((process, port)),
                    Err((reason, tail)) => {
                        process.kill();
                        let port_clash = tail.contains("Address already in use");
                        Err(StartFailure { error: failed(&reason, &tail), port_clash })
                    }
                }
            }
        })
        .await?;
        Ok(TestingPostgres { process: Some(process), port, dir })
    }
}

impl TestingPostgres {
    /// Starts a server with the default options (see [`TestingPostgresBuilder::start`]).
    ///
    /// # Errors
    /// As [`TestingPostgresBuilder::start`].
    ///
    /// # Cancel safety
    /// As [`TestingPostgresBuilder::start`].
    pub async fn start() -> Result<TestingPostgres> {
        Self::builder().start().await
    }

    /// The options of a server to start.
    pub fn builder() -> TestingPostgresBuilder {
        TestingPostgresBuilder::default()
    }

    /// The server's port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server process's pid (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ZkProcess::pid)
    }

    /// A libpq connection string (`key=value` form, as `tokio-postgres` and `psql` take it)
    /// for the `postgres` database as the superuser.
    pub fn connection_string(&self) -> String {
        self.connection_string_for("postgres")
    }

    /// A libpq connection string for the database `dbname` (made with `CREATE DATABASE`).
    pub fn connection_string_for(&self, dbname: &str) -> String {
        format!("host=127.0.0.1 port={} user={PG_USER} dbname={dbname}", self.port)
    }

    /// Stops the server (fast shutdown, then `SIGKILL` after 5 s) and waits for it to exit.
    pub async fn stop(&mut self) {
        if let Some(mut process) = self.process.take() {
            stop_fast(&mut process).await;
        }
    }

    /// The directory of the cluster and its logs (removed when the handle drops).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TestingPostgres {
    fn drop(&mut self) {
        // ZkProcess's Drop kills and reaps it
        self.process.take();
    }
}

/// PostgreSQL's fast shutdown is `SIGINT` (`SIGTERM` waits for the clients to leave).
async fn stop_fast(process: &mut ZkProcess) {
    if let Ok(pid) = libc::pid_t::try_from(process.pid()) {
        if process.try_exit().is_none() {
            // SAFETY: kill(2) has no memory-safety preconditions; the process is not reaped.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    }
    process.stop(STOP_GRACE).await;
}

/// Waits until the log says the server is ready; on failure, why and the log's last lines.
async fn ready(process: &mut ZkProcess, log: &Path) -> std::result::Result<(), (String, String)> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains("database system is ready to accept connections") {
            return Ok(());
        }
        if let Some(status) = process.try_exit() {
            return Err((format!("postgres exited ({status})"), tail(&text)));
        }
        if Instant::now() >= deadline {
            return Err((format!("postgres not ready within {START_TIMEOUT:?}"), tail(&text)));
        }
        tokio::time::sleep(START_POLL).await;
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn failed(reason: &str, log: &str) -> Error {
    Error::TestServerFailed { reason: reason.to_string(), log_tail: tail(log) }
}

/// Removes the cluster dirs (of any earlier test process) whose server is gone: its
/// `postmaster.pid` names a dead process, or it has none and is older than [`UNSERVED_AGE`].
fn sweep_abandoned() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_string_lossy().starts_with(DIR_PREFIX) {
            continue;
        }
        let served = match std::fs::read_to_string(path.join("data/postmaster.pid")) {
            Ok(pid) => pid.lines().next().and_then(|pid| pid.trim().parse::<libc::pid_t>().ok()).is_some_and(alive),
            Err(_) => {
                let age = entry.metadata().and_then(|m| m.modified()).ok().and_then(|at| at.elapsed().ok());
                age.is_none_or(|age| age < UNSERVED_AGE)
            }
        };
        if !served {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

fn alive(pid: libc::pid_t) -> bool {
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    pid > 0 && (unsafe { libc::kill(pid, 0) } == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// The directory with `initdb` and `postgres`.
fn find_bin() -> Result<PathBuf> {
    if let Some(bin) = std::env::var_os(PG_BIN_ENV).filter(|b| !b.is_empty()) {
        let bin = PathBuf::from(bin);
        return match bin.join("initdb").is_file() {
            true => Ok(bin),
            false => Err(Error::InvalidArgument(format!("{PG_BIN_ENV}={} has no initdb", bin.display()))),
        };
    }
    let mut majors: Vec<(u32, PathBuf)> = std::fs::read_dir(DEBIAN_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").is_file())
        .collect();
    majors.sort();
    majors.pop().map(|(_, bin)| bin).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "no PostgreSQL found ({DEBIAN_ROOT}/<major>/bin/initdb, or {PG_BIN_ENV}); install it with: \
             sudo apt-get install -y postgresql (or run scripts/setup.sh)"
        ))
    })
}

/// The `postgres` user's uid and gid when we run as root (PostgreSQL refuses root).
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [name, _, uid, gid, ..] if *name == PG_USER => Some((uid.parse().ok()?, gid.parse().ok()?)),
            _ => None,
        }
    })
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    use std::os::unix::process::CommandExt;
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}
