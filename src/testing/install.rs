//! Finding a local ZooKeeper installation and a Java runtime.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The command that installs what the testing kit needs on Debian.
pub const INSTALL_HINT: &str = "sudo apt-get install -y zookeeper default-jre-headless (or: bash scripts/setup.sh)";

/// Where ZooKeeper's jars and a `java` binary are.
#[derive(Debug, Clone)]
pub struct Install {
    /// The `java` executable.
    pub java: PathBuf,
    /// The class path of the server (jars, `:`-separated).
    pub classpath: String,
}

impl Install {
    /// Finds an installation: `ZOOKEEPER_HOME` (a release layout with `lib/*.jar`) when set,
    /// else Debian's `zookeeper` package (`/usr/share/java/zookeeper.jar`). Java comes from
    /// `JAVA_HOME` or `PATH`.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotInstalled`] naming the install command.
    pub fn find() -> Result<Install> {
        Self::find_in(std::env::var_os("ZOOKEEPER_HOME").map(PathBuf::from).as_deref())
    }

    /// [`find`](Self::find) with an explicit `ZOOKEEPER_HOME` (`None`: Debian's layout).
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotInstalled`].
    pub fn find_in(home: Option<&Path>) -> Result<Install> {
        let missing = |searched: String| Error::ZooKeeperNotInstalled { searched, install_hint: INSTALL_HINT };
        let classpath = match home {
            Some(home) => {
                let mut jars = jars_in(&home.join("lib"));
                jars.extend(jars_in(home).into_iter().filter(|j| file_name(j).starts_with("zookeeper")));
                if !jars.iter().any(|j| file_name(j).starts_with("zookeeper")) {
                    return Err(missing(format!("ZOOKEEPER_HOME={} has no zookeeper*.jar", home.display())));
                }
                jars.iter().map(|j| j.display().to_string()).collect::<Vec<_>>().join(":")
            }
            None => {
                let jar = Path::new("/usr/share/java/zookeeper.jar");
                if !jar.exists() {
                    return Err(missing(format!(
                        "{} (Debian's zookeeper package); ZOOKEEPER_HOME unset",
                        jar.display()
                    )));
                }
                jar.display().to_string()
            }
        };
        let java = find_java().ok_or_else(|| missing("java on JAVA_HOME or PATH".into()))?;
        Ok(Install { java, classpath })
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn jars_in(dir: &Path) -> Vec<PathBuf> {
    let mut jars: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jar"))
                .collect()
        })
        .unwrap_or_default();
    jars.sort();
    jars
}

fn find_java() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let java = PathBuf::from(home).join("bin/java");
        if java.exists() {
            return Some(java);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("java")).find(|p| p.exists())
}
