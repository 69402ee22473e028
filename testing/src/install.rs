//! Finding a local ZooKeeper installation and a `java` to run it with.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The command that installs what the testing kit needs on Debian or Ubuntu.
pub const INSTALL_HINT: &str = "sudo apt-get install -y zookeeper default-jre-headless (or run scripts/setup.sh)";

/// Where Debian's `zookeeper` package puts the server jar. Its manifest `Class-Path` names
/// the other jars it needs, so it is the only jar the class path must name.
const DEBIAN_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Debian's slf4j binding for log4j 1.2 and log4j itself. `zookeeper.jar`'s manifest only names
/// `slf4j-api`, so without these the server logs nothing at all; with them it honours the
/// `log4j.properties` the kit writes into the server's configuration directory.
const DEBIAN_LOG_JARS: [&str; 2] = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"];

/// The Netty jars that `zookeeper.jar`'s manifest leaves out but its Netty connection factory
/// (the one that serves TLS) needs; in Debian's `libnetty-java`, which `zookeeper` depends on.
pub(crate) const DEBIAN_NETTY_JARS: [&str; 3] = [
    "/usr/share/java/netty-codec.jar",
    "/usr/share/java/netty-resolver.jar",
    "/usr/share/java/netty-transport-native-unix-common.jar",
];

/// A ZooKeeper installation the testing kit can start servers from: a `java` executable and
/// the jars of the server's class path.
///
/// Two layouts are understood:
/// - `ZOOKEEPER_HOME` (or [`Installation::from_zookeeper_home`]): an unpacked Apache release
///   tarball, with the server and its dependencies in `lib/*.jar` (releases before 3.5 keep
///   `zookeeper-*.jar` at the top level, which is searched too). The tarball's own `conf/` is
///   not used: every test server gets a configuration directory of its own.
/// - Debian's `zookeeper` package: `/usr/share/java/zookeeper.jar`.
///
/// When `ZOOKEEPER_HOME` is set, it is the only place looked at: a `ZOOKEEPER_HOME` without
/// jars is an error rather than a silent fall-through to another installation.
///
/// `java` is `$JAVA_HOME/bin/java` when that exists, otherwise the first `java` on `PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    java: PathBuf,
    classpath: Vec<PathBuf>,
}

impl Installation {
    /// Finds the installation named by the `ZOOKEEPER_HOME` environment variable, or, when it is
    /// unset or empty, Debian's `zookeeper` package.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotInstalled`] when `ZOOKEEPER_HOME` holds no ZooKeeper jar, when it is
    /// unset and Debian's jar is absent, or when no `java` executable is found. The error says
    /// where the kit looked and how to install what is missing.
    pub fn discover() -> Result<Self> {
        match std::env::var_os("ZOOKEEPER_HOME").filter(|home| !home.is_empty()) {
            Some(home) => Self::from_zookeeper_home(PathBuf::from(home)),
            None => Self::debian(),
        }
    }

    /// Uses the release-tarball layout under `home` (`home/lib/*.jar`), ignoring the
    /// environment. This is how tests point the kit at a particular installation without
    /// touching process-wide environment variables.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotInstalled`] when `home` holds no `zookeeper*.jar` in `lib/` or at its
    /// top level, or when no `java` executable is found.
    pub fn from_zookeeper_home(home: impl AsRef<Path>) -> Result<Self> {
        let home = home.as_ref();
        let mut jars = jars_in(home);
        jars.extend(jars_in(&home.join("lib")));
        jars.sort();
        let has_server = jars
            .iter()
            .any(|jar| jar.file_name().and_then(OsStr::to_str).is_some_and(|name| name.starts_with("zookeeper")));
        if !has_server {
            return Err(not_installed(format!(
                "ZOOKEEPER_HOME={} has no zookeeper*.jar in lib/ or at its top level",
                home.display()
            )));
        }
        Ok(Installation { java: find_java()?, classpath: jars })
    }

    /// Uses Debian's `zookeeper` package (`/usr/share/java/zookeeper.jar`).
    fn debian() -> Result<Self> {
        let jar = PathBuf::from(DEBIAN_JAR);
        if !jar.is_file() {
            return Err(not_installed(format!("ZOOKEEPER_HOME is unset and {DEBIAN_JAR} does not exist")));
        }
        let mut classpath = vec![jar];
        if DEBIAN_LOG_JARS.iter().all(|j| Path::new(j).is_file()) {
            classpath.extend(DEBIAN_LOG_JARS.iter().map(PathBuf::from));
        }
        classpath.extend(DEBIAN_NETTY_JARS.iter().map(PathBuf::from).filter(|jar| jar.is_file()));
        Ok(Installation { java: find_java()?, classpath })
    }

    /// The `java` executable servers are started with.
    pub fn java(&self) -> &Path {
        &self.java
    }

    /// The jars of the server's class path (the kit puts each server's configuration directory
    /// in front of them).
    pub fn classpath(&self) -> &[PathBuf] {
        &self.classpath
    }
}

fn not_installed(searched: String) -> Error {
    Error::ZooKeeperNotInstalled { searched, install_hint: INSTALL_HINT }
}

/// The `*.jar` files directly inside `dir`; none when it cannot be read.
fn jars_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension() == Some(OsStr::new("jar")) && path.is_file())
        .collect()
}

/// `$JAVA_HOME/bin/java` if it is executable, else the first executable `java` on `PATH`.
fn find_java() -> Result<PathBuf> {
    let from_home = std::env::var_os("JAVA_HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join("bin").join("java"));
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("java"));
    from_home
        .into_iter()
        .chain(on_path)
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| not_installed("no executable `java` in $JAVA_HOME/bin or on $PATH".into()))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_home_is_not_installed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = Installation::from_zookeeper_home(dir.path()).unwrap_err();
        assert!(matches!(err, Error::ZooKeeperNotInstalled { .. }), "{err:?}");
    }

    #[test]
    fn tarball_layout_is_found() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("lib")).expect("mkdir");
        for jar in ["zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "netty.jar"] {
            std::fs::write(dir.path().join("lib").join(jar), b"").expect("write");
        }
        std::fs::write(dir.path().join("lib").join("README"), b"").expect("write");
        match Installation::from_zookeeper_home(dir.path()) {
            Ok(install) => assert_eq!(install.classpath().len(), 3),
            // A machine without java still has to report the typed error.
            Err(err) => assert!(matches!(err, Error::ZooKeeperNotInstalled { .. })),
        }
    }
}
