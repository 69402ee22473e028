//! Real-ZooKeeper testing kit (feature `testing`): Curator's `TestingServer` and
//! `TestingCluster`, in Rust.
//!
//! - [`TestingServer`]: one standalone server on a free loopback port.
//! - [`TestingCluster`]: an ensemble of `n` servers on loopback ports, with failover tools
//!   (kill, stop, restart, pause a chosen server; find and wait for the leader).
//! - [`four_letter_word`]: ZooKeeper's admin commands (`srvr`, `mntr`, ...) over TCP.
//! - [`running_servers`]: how many server JVMs this process has alive, to check that a test
//!   left none behind.
//!
//! # Requirements
//! A local ZooKeeper installation and Java, found as [`Installation::discover`] describes:
//! `ZOOKEEPER_HOME` (an unpacked release tarball), else Debian's `zookeeper` package. On Debian
//! or Ubuntu: `sudo apt-get install -y zookeeper default-jre-headless`, or the project's
//! `scripts/setup.sh`. Without one, starting a server fails with
//! [`Error::ZooKeeperNotInstalled`](crate::Error::ZooKeeperNotInstalled).
//!
//! # Notable behaviors
//! - Every server is a real JVM, with its configuration, data and log in a temp dir of its own;
//!   its log (warnings and up) is at [`TestingServer::log_path`], and the end of it is quoted in
//!   [`Error::TestServerFailed`](crate::Error::TestServerFailed) when a server fails to start.
//! - Servers are killed when their handle is dropped, synchronously and also outside a runtime.
//!   On Linux the kernel also kills them (`PR_SET_PDEATHSIG`) if the test process dies without
//!   running destructors.
//! - The default `tickTime` is 200 ms for fast tests, which limits sessions to 4 s (20 ticks);
//!   use the builders' `tick_time` or `max_session_timeout` for longer sessions.
//! - Ports are picked below the kernel's ephemeral port range, so a restarted server never finds
//!   its port taken by one of the test's own client connections.

mod cluster;
mod config;
mod four_letter;
mod install;
mod instance;
mod ports;
mod process;
mod server;

pub use cluster::{TestingCluster, TestingClusterBuilder};
pub use four_letter::{
    four_letter_word, four_letter_word_with_timeout, server_mode, ServerMode,
    FOUR_LETTER_WORD_TIMEOUT,
};
pub use install::{Installation, INSTALL_HINT};
pub use process::{running_server_pids, running_servers};
pub use server::{TestingServer, TestingServerBuilder};
