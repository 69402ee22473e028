//! Which backend runs the kit's servers: local JVM processes or Docker containers.

use super::install::Installation;
use crate::{Error, Result};

/// The environment variable that picks the backend: `local`, `docker` or `auto` (the default).
pub const BACKEND_ENV: &str = "ZK_TEST_BACKEND";
/// The environment variable naming the image of the Docker backend (default [`DEFAULT_IMAGE`]).
pub const IMAGE_ENV: &str = "ZK_TEST_IMAGE";
/// The image the Docker backend runs unless told otherwise: built locally, without a registry,
/// by `docker/build-image.sh`. The official `zookeeper:3.8` image works too.
pub const DEFAULT_IMAGE: &str = "zk-recipes/zookeeper:3.8";

/// Where the testing kit runs its ZooKeeper servers.
///
/// Both backends give [`TestingServer`](super::TestingServer) and
/// [`TestingCluster`](super::TestingCluster) the same API and semantics: servers on
/// `127.0.0.1` ports, stop / kill / restart with the same port and data, pause / resume, a
/// leader to find. What differs:
///
/// | | `Local` | `Docker` |
/// |---|---|---|
/// | needs | Debian's `zookeeper` package (or `ZOOKEEPER_HOME`) and `java` | feature `docker`, a Docker daemon, the image |
/// | a server is | a JVM child process (`pid()`) | a container (`container_id()`) |
/// | data, log | a temp dir on the host (`data_dir()`, `log_path()`) | the container's own layer; `log_tail()` reads `docker logs` |
/// | pause | `SIGSTOP` | `docker pause` (cgroup freezer) |
/// | partition a cluster server from its peers (clients stay connected) | with [`peer_proxies`](super::TestingClusterBuilder::peer_proxies): proxies on the peer links; otherwise `Unsupported` | iptables rules in its container (`NET_ADMIN`), always |
///
/// Builders choose with `backend(..)`; otherwise [`Backend::from_env`] decides.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// JVM processes from a local ZooKeeper installation.
    Local,
    /// Containers of a ZooKeeper image, through the `testcontainers` crate (feature `docker`).
    Docker,
}

impl Backend {
    /// The backend named by `ZK_TEST_BACKEND`:
    /// - `local`: [`Backend::Local`];
    /// - `docker`: [`Backend::Docker`];
    /// - `auto`, empty or unset: `Local` when `ZOOKEEPER_HOME` is set or a local installation
    ///   is found ([`Installation::discover`]), otherwise `Docker` when the crate was built with
    ///   the `docker` feature, otherwise `Local` (whose start then reports what is missing).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other value; [`Error::Unsupported`] for `docker` when
    /// the crate was built without the `docker` feature.
    pub fn from_env() -> Result<Backend> {
        let value = std::env::var(BACKEND_ENV).unwrap_or_default();
        // A `ZOOKEEPER_HOME` asks for that installation: if it is broken, say so rather than
        // fall through to Docker.
        let home_set = std::env::var_os("ZOOKEEPER_HOME").is_some_and(|home| !home.is_empty());
        Self::parse(&value, || home_set || Installation::discover().is_ok())
    }

    fn parse(value: &str, local_installed: impl FnOnce() -> bool) -> Result<Backend> {
        match value.trim().to_ascii_lowercase().as_str() {
            "local" => Ok(Backend::Local),
            "docker" if cfg!(feature = "docker") => Ok(Backend::Docker),
            "docker" => Err(Error::Unsupported(
                "ZK_TEST_BACKEND=docker needs zk-recipes-testing built with its `docker` feature",
            )),
            "" | "auto" => {
                Ok(if !cfg!(feature = "docker") || local_installed() { Backend::Local } else { Backend::Docker })
            }
            other => {
                Err(Error::InvalidArgument(format!("{BACKEND_ENV}={other:?}: expected `local`, `docker` or `auto`")))
            }
        }
    }

    /// The image the Docker backend uses: `ZK_TEST_IMAGE` when set and not empty, else
    /// [`DEFAULT_IMAGE`].
    pub fn image_from_env() -> String {
        std::env::var(IMAGE_ENV).ok().filter(|image| !image.trim().is_empty()).unwrap_or_else(|| DEFAULT_IMAGE.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_environment_value() {
        assert_eq!(Backend::parse("local", || false).ok(), Some(Backend::Local));
        assert_eq!(Backend::parse(" Local ", || false).ok(), Some(Backend::Local));
        assert_eq!(Backend::parse("auto", || true).ok(), Some(Backend::Local));
        assert_eq!(Backend::parse("", || true).ok(), Some(Backend::Local));
        assert!(matches!(Backend::parse("podman", || true), Err(Error::InvalidArgument(_))));
        if cfg!(feature = "docker") {
            assert_eq!(Backend::parse("docker", || true).ok(), Some(Backend::Docker));
            assert_eq!(Backend::parse("auto", || false).ok(), Some(Backend::Docker));
        } else {
            assert!(matches!(Backend::parse("docker", || true), Err(Error::Unsupported(_))));
            assert_eq!(Backend::parse("auto", || false).ok(), Some(Backend::Local));
        }
    }
}
