//! The testing kit of zk-recipes: real ZooKeeper servers for tests, as Curator's
//! `TestingServer` / `TestingCluster` / `KillSession`, but as real processes managed from Rust.
//!
//! * [`TestingServer`]: a standalone server from the local installation (Debian's `zookeeper`
//!   package or `ZOOKEEPER_HOME`), on a free loopback port, in its own temp dir.
//! * [`TestingCluster`]: a real ensemble; kill, stop, pause, restart single servers; find the
//!   leader.
//! * [`expire_session`]: make the server expire a framework's session now.
//! * [`shared_server`]: one server per test binary for tests that do not break it.
//! * [`TcpProxy`]: cut, blackhole, delay a client's link, or drop its replies.
//! * [`curator::CuratorPeer`]: a Java process running Apache Curator, for interop tests.
//! * [`TestingPostgres`]: a throwaway PostgreSQL server on a loopback port (Debian's
//!   `postgresql` package), for tests of writes fenced by a lock's token.
//! * [`fixtures`]: what the integration tests share: a framework with the test defaults,
//!   unique names, `eventually` / `within` deadlines, the ephemeral nodes left under a path.
//!
//! Every process the kit starts is killed when its handle drops, and by the kernel if the
//! test process dies (the JVMs are spawned from one long-lived thread with a parent-death
//! signal).
//!
//! # Backends
//! Servers run as local JVM processes or, with the `docker` feature, as Docker containers, with
//! the same API ([`Backend`] tells what differs). `ZK_TEST_BACKEND` picks one for every server
//! a builder does not place itself: `local`, `docker`, or `auto` (the default: the local
//! installation when there is one, else Docker). `ZK_TEST_IMAGE` names the image (default
//! [`DEFAULT_IMAGE`], built without a registry by `docker/build-image.sh`;
//! `zk-recipes/zookeeper:3.9`, from `docker/build-image.sh --version 3.9`, runs ZooKeeper 3.9;
//! the official `zookeeper:3.8` works too). Every container carries the label `zk-recipes.test=1` and is
//! removed when its handle drops.
//!
//! # Features
//! * `tls` (default): TLS test servers (`TestingBuilder::tls`, `TestCertificates`) and fixtures
//!   that connect to them (`ZKR_TEST_TLS`, see [`shared_server`]). It brings rustls and AWS-LC
//!   (through `zk-recipes/tls` and `rcgen`); `default-features = false` leaves them out, for a
//!   kit that only runs plaintext servers.
//! * `docker`: the Docker backend (above).

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod backend;
mod builder;
mod cluster;
mod config;
pub mod curator;
#[cfg(feature = "docker")]
mod docker;
mod error;
mod expire;
mod fenced;
pub mod fixtures;
mod four_letter;
mod install;
mod instance;
mod links;
mod node;
mod ports;
mod postgres;
mod process;
mod proxy;
mod reconfig;
pub mod refusing;
mod server;
mod shared;
#[cfg(feature = "tls")]
mod tls;

pub use backend::{Backend, BACKEND_ENV, DEFAULT_IMAGE, IMAGE_ENV};
pub use builder::{Ensemble, Standalone, TestingBuilder};
pub use cluster::{TestingCluster, TestingClusterBuilder};
pub use error::{Error, Result};
pub use expire::{expire_session, expire_session_at};
pub use fenced::FencedResource;
pub use four_letter::{
    four_letter_word, four_letter_word_with_timeout, server_mode, ServerMode, FOUR_LETTER_WORD_TIMEOUT,
};
pub use install::{Installation, INSTALL_HINT};
pub use postgres::{TestingPostgres, TestingPostgresBuilder, PG_BIN_ENV, PG_USER};
pub use process::{running_server_pids, running_servers};
pub use proxy::{ProxyMode, TcpProxy};
pub use refusing::RefusingProxy;
pub use server::{TestingServer, TestingServerBuilder};
pub use shared::{server_or_env, shared_server, TLS_ENV};
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::TestCertificates;
