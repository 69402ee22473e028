//! A cluster container cut off from its peers while its clients stay connected: iptables rules
//! in the container's own network namespace, run with `docker exec` (cluster containers have
//! the `NET_ADMIN` capability), that drop every TCP segment to or from the quorum and election
//! ports. The client port is not touched: clients reach it through the port published on the
//! host (from the bridge's gateway address), and they, like the kit's `srvr` probe, keep
//! reaching the server. This is what the local backend's peer proxies do.
//!
//! Why not `docker network disconnect` (the backend's partition until iptables came into the
//! image): it cuts the published client port too, so no client can stay connected to a server
//! cut off from its peers, and the container comes back with another address. Why ports and not
//! the peers' addresses: a peer restarted meanwhile may come back on another address, and a rule
//! on ports needs no address at all. The rules drop (no reset), so sockets stay open as in a
//! real partition; the container's other traffic (the client port, DNS) passes. Client
//! connections arrive from the gateway with an ephemeral source port (seen: 192.168.64.1:55644
//! for a gateway 192.168.64.1), never 2888 or 3888 unless the host's `ip_local_port_range`
//! reaches that low.
//!
//! Pure (the script and the reading of its output), so that it is tested without Docker.

use super::spec::{ELECTION_PORT, QUORUM_PORT};
use crate::{Error, Result};

/// What the script prints last when it did its work.
const DONE: &str = "zk-recipes partition: done";
/// What it prints when the image has no iptables at all.
const NO_IPTABLES: &str = "zk-recipes partition: no iptables";

/// The error for an image without iptables.
pub(crate) const NO_IPTABLES_ERROR: Error = Error::Unsupported(
    "partitions on the Docker backend need iptables in the image: rebuild it with \
     `bash docker/build-image.sh --force` (images built before iptables was added, and the \
     official `zookeeper` images, have none)",
);

/// Cut a server off its peers, or heal it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    Cut,
    Heal,
}

/// The rules, as `iptables` arguments after `-C` / `-I` / `-D`: both directions of both chains,
/// for the quorum and the election port.
fn rules() -> Vec<String> {
    let mut rules = Vec::new();
    for chain in ["INPUT", "OUTPUT"] {
        for port in [QUORUM_PORT, ELECTION_PORT] {
            for side in ["--dport", "--sport"] {
                rules.push(format!("{chain} -p tcp {side} {port} -j DROP"));
            }
        }
    }
    rules
}

/// The `sh -c` script that applies `action` inside the container. Idempotent: a rule is added
/// only when it is missing and removed as often as it is there. It takes Debian's default
/// `iptables` (nft) if the kernel serves it, else `iptables-legacy`; a container's network
/// namespace has tables of its own either way.
pub(crate) fn script(action: Action) -> String {
    let mut script = format!(
        "ipt=
for c in iptables iptables-legacy; do
  command -v \"$c\" >/dev/null 2>&1 || continue
  if \"$c\" -w -S INPUT >/dev/null 2>&1; then ipt=$c; break; fi
done
if [ -z \"$ipt\" ]; then
  command -v iptables >/dev/null 2>&1 || {{ echo '{NO_IPTABLES}'; exit 3; }}
  iptables -w -S INPUT; iptables-legacy -w -S INPUT; exit 4
fi
set -e
"
    );
    for rule in rules() {
        let line = match action {
            Action::Cut => format!("\"$ipt\" -w -C {rule} 2>/dev/null || \"$ipt\" -w -I {rule}\n"),
            Action::Heal => format!("while \"$ipt\" -w -D {rule} 2>/dev/null; do :; done\n"),
        };
        script.push_str(&line);
    }
    script.push_str(&format!("echo '{DONE}'\n"));
    script
}

/// What the script's output says: done, no iptables in the image, or the failure (iptables'
/// own words: no `NET_ADMIN`, a kernel without the tables, ...).
pub(crate) fn outcome(label: &str, stdout: &str, stderr: &str) -> Result<()> {
    if stdout.lines().any(|line| line == DONE) {
        return Ok(());
    }
    if stdout.lines().any(|line| line == NO_IPTABLES) {
        return Err(NO_IPTABLES_ERROR);
    }
    let said = format!("{stdout}\n{stderr}");
    Err(Error::Docker(format!("iptables in {label} failed: {}", said.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_cover_both_peer_ports_both_ways_and_not_the_client_port() {
        let rules = rules();
        assert_eq!(rules.len(), 8);
        for port in ["2888", "3888"] {
            for chain in ["INPUT", "OUTPUT"] {
                for side in ["--dport", "--sport"] {
                    let rule = format!("{chain} -p tcp {side} {port} -j DROP");
                    assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
                }
            }
        }
        assert!(rules.iter().all(|r| !r.contains("2181")), "{rules:?}");
    }

    #[test]
    fn cut_adds_only_missing_rules_and_heal_removes_every_copy() {
        let cut = script(Action::Cut);
        assert!(cut.contains("\"$ipt\" -w -C INPUT -p tcp --dport 2888 -j DROP 2>/dev/null || \"$ipt\" -w -I INPUT"));
        assert!(!cut.contains(" -D "));
        let heal = script(Action::Heal);
        assert!(heal.contains("while \"$ipt\" -w -D OUTPUT -p tcp --sport 3888 -j DROP 2>/dev/null; do :; done"));
        assert!(!heal.contains(" -I "));
        for s in [cut, heal] {
            assert!(s.trim_end().ends_with(&format!("echo '{DONE}'")), "{s}");
        }
    }

    #[test]
    fn the_output_is_read_as_done_missing_or_failed() {
        assert!(outcome("server 0", &format!("{DONE}\n"), "").is_ok());
        let missing = outcome("server 0", &format!("{NO_IPTABLES}\n"), "");
        assert!(matches!(&missing, Err(e) if e.to_string() == NO_IPTABLES_ERROR.to_string()), "{missing:?}");
        let failed = outcome("server 1 (myid 2)", "", "iptables v1.8.9 (nf_tables): Permission denied\n");
        assert!(
            matches!(&failed, Err(Error::Docker(m)) if m.contains("server 1 (myid 2)") && m.contains("Permission denied")),
            "{failed:?}"
        );
    }
}
