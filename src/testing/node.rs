//! One ZooKeeper server process: its configuration, data directory and lifecycle. Used by
//! both [`TestingServer`](super::TestingServer) and [`TestingCluster`](super::TestingCluster).

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::four_letter::server_mode;
use super::install::Install;
use super::process::Process;
use crate::error::{Error, Result};

/// Peer ports of an ensemble member.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    pub id: u32,
    pub client_port: u16,
    pub quorum_port: u16,
    pub election_port: u16,
}

#[derive(Debug)]
pub(crate) struct Node {
    install: Install,
    dir: TempDir,
    pub client_port: u16,
    process: Option<Process>,
}

/// A free port on 127.0.0.1 (bound and released; the caller binds it soon after).
pub(crate) fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

impl Node {
    /// Writes the configuration of a standalone server (`peers` empty) or of ensemble member
    /// `id`.
    pub fn new(install: &Install, client_port: u16, tick: Duration, id: u32, peers: &[Peer]) -> Result<Node> {
        let dir = tempfile::Builder::new().prefix("zk-recipes-server-").tempdir()?;
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data)?;
        let tick_ms = tick.as_millis().max(1);
        let mut cfg = String::new();
        let _ = writeln!(cfg, "tickTime={tick_ms}");
        let _ = writeln!(cfg, "initLimit=20\nsyncLimit=10");
        let _ = writeln!(cfg, "dataDir={}", data.display());
        let _ = writeln!(cfg, "clientPort={client_port}\nclientPortAddress=127.0.0.1");
        let _ = writeln!(cfg, "admin.enableServer=false\n4lw.commands.whitelist=*");
        let _ = writeln!(cfg, "maxClientCnxns=0\nautopurge.purgeInterval=0");
        if !peers.is_empty() {
            let _ = writeln!(cfg, "standaloneEnabled=false\nquorumListenOnAllIPs=false\nreconfigEnabled=false");
            for p in peers {
                let _ = writeln!(cfg, "server.{}=127.0.0.1:{}:{}", p.id, p.quorum_port, p.election_port);
            }
            std::fs::write(data.join("myid"), format!("{id}\n"))?;
        }
        std::fs::write(dir.path().join("zoo.cfg"), cfg)?;
        std::fs::write(
            dir.path().join("log4j.properties"),
            "log4j.rootLogger=WARN, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n\
             log4j.appender.FILE.File=server.log\nlog4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n\
             log4j.appender.FILE.layout.ConversionPattern=%d %p [%t] %c{1}: %m%n\n",
        )?;
        Ok(Node { install: install.clone(), dir, client_port, process: None })
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(Process::pid)
    }

    pub fn is_running(&mut self) -> bool {
        self.process.as_mut().is_some_and(Process::is_running)
    }

    /// Starts the JVM (no waiting).
    pub fn launch(&mut self) -> Result<()> {
        if self.is_running() {
            return Ok(());
        }
        let log = std::fs::File::create(self.dir.path().join("stdout.log"))?;
        let mut command = Command::new(&self.install.java);
        command
            .current_dir(self.dir.path())
            .args([
                "-Xmx256m",
                "-Xss512k",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                "-Dznode.container.checkIntervalMs=100",
                "-Dzookeeper.jmx.log4j.disable=true",
            ])
            .arg(format!("-Dlog4j.configuration=file:{}/log4j.properties", self.dir.path().display()))
            .arg("-cp")
            .arg(format!("{}:{}", self.dir.path().display(), self.install.classpath))
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.path().join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        self.process = Some(Process::spawn(command)?);
        Ok(())
    }

    /// Waits until the server answers `srvr` with a mode in `modes`.
    pub async fn wait_mode(&mut self, modes: &[&str], timeout: Duration) -> Result<String> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(mode) = server_mode(&self.address()).await {
                if modes.contains(&mode.as_str()) {
                    return Ok(mode);
                }
            }
            if !self.is_running() {
                return Err(Error::Io(format!("ZooKeeper server exited: {}", self.log_tail())));
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Io(format!(
                    "ZooKeeper on {} not serving after {timeout:?}: {}",
                    self.address(),
                    self.log_tail()
                )));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The last lines of the server's output, for error messages.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        for f in ["stdout.log", "server.log"] {
            if let Ok(s) = std::fs::read_to_string(self.dir.path().join(f)) {
                text.push_str(&s);
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    pub fn kill(&mut self) {
        if let Some(p) = self.process.take() {
            p.kill();
        }
    }

    pub async fn stop(&mut self) {
        if let Some(p) = self.process.take() {
            p.stop(Duration::from_secs(5)).await;
        }
    }

    pub fn pause(&self) {
        if let Some(p) = &self.process {
            p.pause();
        }
    }

    pub fn resume(&self) {
        if let Some(p) = &self.process {
            p.resume();
        }
    }
}
