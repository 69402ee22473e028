//! Finding Java and Curator's jars, and compiling the peer's source into a shared cache.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// The Java source of the peer, compiled on first use.
pub(super) const SOURCE: &str = include_str!("CuratorPeer.java");
/// The peer's `shedlock.*` commands (a ShedLock-shaped participant), compiled with it.
pub(super) const SHEDLOCK_SOURCE: &str = include_str!("ShedLockCommands.java");
/// The peer's `gzip.*` commands (Curator's compressed reads and writes), compiled with it.
pub(super) const COMPRESSION_SOURCE: &str = include_str!("CompressionCommands.java");

/// The jars the peer needs, relative to the jar directory.
pub(super) const REQUIRED_JARS: &[&str] = &[
    "curator-recipes.jar",
    "curator-framework.jar",
    "curator-client.jar",
    "curator-x-discovery.jar",
    "jackson-databind.jar",
    "jackson-core.jar",
    "jackson-annotations.jar",
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "guava.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
];

pub(super) const DEFAULT_JAR_DIR: &str = "/usr/share/java";
pub(super) const JAR_DIR_ENV: &str = "ZK_RECIPES_CURATOR_JARS";
pub(super) const JRE_HINT: &str =
    "apt-get install -y default-jre-headless libcurator-recipes-java libcurator-discovery-java";
pub(super) const JDK_HINT: &str = "apt-get install -y default-jdk-headless";

/// Finds `name` in `$JAVA_HOME/bin`, then in `$PATH`.
pub(super) fn find_program(name: &str) -> Option<PathBuf> {
    let java_home = std::env::var_os("JAVA_HOME").map(|home| PathBuf::from(home).join("bin"));
    let path = std::env::var_os("PATH");
    java_home
        .into_iter()
        .chain(path.iter().flat_map(std::env::split_paths))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The class path of the required jars, or which are missing.
pub(super) fn jar_classpath() -> Result<String> {
    let dir = std::env::var_os(JAR_DIR_ENV).map(PathBuf::from).unwrap_or_else(|| PathBuf::from(DEFAULT_JAR_DIR));
    let jars: Vec<PathBuf> = REQUIRED_JARS.iter().map(|jar| dir.join(jar)).collect();
    let missing: Vec<&str> = REQUIRED_JARS.iter().zip(&jars).filter(|(_, p)| !p.is_file()).map(|(n, _)| *n).collect();
    if !missing.is_empty() {
        return Err(Error::CuratorNotInstalled {
            searched: format!("{} in {} (set {JAR_DIR_ENV} to look elsewhere)", missing.join(", "), dir.display()),
            install_hint: JRE_HINT,
        });
    }
    let parts: Vec<String> = jars.iter().map(|p| p.display().to_string()).collect();
    Ok(parts.join(":"))
}

/// FNV-1a, stable across Rust versions (unlike `DefaultHasher`).
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Returns the directory holding `CuratorPeer.class`, compiling it first if it is not cached.
pub(super) async fn compiled_classes(classpath: &str) -> Result<(PathBuf, Option<Duration>)> {
    let name =
        format!("zk-recipes-curator-{:016x}", fnv1a([SOURCE, SHEDLOCK_SOURCE, COMPRESSION_SOURCE].concat().as_bytes()));
    let dir = std::env::temp_dir().join(&name);
    if dir.join("CuratorPeer.class").is_file() {
        return Ok((dir, None));
    }
    let javac = find_program("javac").ok_or_else(|| Error::CuratorNotInstalled {
        searched: "`javac` in $JAVA_HOME/bin and $PATH (a JDK is needed to compile the peer)".into(),
        install_hint: JDK_HINT,
    })?;
    let started = Instant::now();
    let work = std::env::temp_dir().join(format!("{name}.tmp-{}-{:08x}", std::process::id(), fastrand::u32(..)));
    let result = compile_into(&javac, classpath, &work).await.and_then(|()| publish(&work, &dir));
    if work.exists() {
        let _ = std::fs::remove_dir_all(&work);
    }
    result.map(|()| (dir, Some(started.elapsed())))
}

pub(super) async fn compile_into(javac: &Path, classpath: &str, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work)?;
    let source = work.join("CuratorPeer.java");
    std::fs::write(&source, SOURCE)?;
    let shedlock = work.join("ShedLockCommands.java");
    std::fs::write(&shedlock, SHEDLOCK_SOURCE)?;
    let compression = work.join("CompressionCommands.java");
    std::fs::write(&compression, COMPRESSION_SOURCE)?;
    let output = tokio::process::Command::new(javac)
        .args(["-encoding", "UTF-8", "-nowarn", "-d"])
        .arg(work)
        .arg("-cp")
        .arg(classpath)
        .arg(&source)
        .arg(&shedlock)
        .arg(&compression)
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::Peer(format!("cannot run {}: {e}", javac.display())))?;
    if !output.status.success() {
        return Err(Error::Peer(format!(
            "javac failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(())
}

/// Moves a finished compile directory into place atomically; losing the race to another
/// process is fine, its classes are the same.
pub(super) fn publish(work: &Path, dir: &Path) -> Result<()> {
    for _ in 0..2 {
        match std::fs::rename(work, dir) {
            Ok(()) => return Ok(()),
            Err(_) if dir.join("CuratorPeer.class").is_file() => return Ok(()),
            Err(e) if dir.exists() => {
                // A broken leftover (e.g. a temp cleaner removed files): replace it.
                tracing::debug!(error = %e, dir = %dir.display(), "replacing incomplete peer class dir");
                let _ = std::fs::remove_dir_all(dir);
            }
            Err(e) => return Err(Error::io(format!("cannot move {} to {}: {e}", work.display(), dir.display()))),
        }
    }
    Err(Error::io(format!("cannot publish the compiled peer to {}", dir.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_jars_are_a_typed_error() {
        let empty = std::env::temp_dir().join(format!("zk-recipes-no-jars-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        std::env::set_var(JAR_DIR_ENV, &empty);
        let result = jar_classpath();
        std::env::remove_var(JAR_DIR_ENV);
        let _ = std::fs::remove_dir_all(&empty);
        match result {
            Err(Error::CuratorNotInstalled { searched, install_hint }) => {
                assert!(searched.contains("curator-recipes.jar"), "{searched}");
                assert_eq!(
                    install_hint,
                    "apt-get install -y default-jre-headless libcurator-recipes-java libcurator-discovery-java"
                );
            }
            other => panic!("expected CuratorNotInstalled, got {other:?}"),
        }
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
