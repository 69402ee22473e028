//! `zkr elect`: take part in a LeaderLatch election, or observe it.

use std::pin::pin;
use std::time::Duration;

use futures_util::StreamExt;
use zk_recipes::{Framework, LeaderLatch, Leadership};

use super::{before_deadline, timed_out};
use crate::args::ElectArgs;
use crate::exit::{self, CliError, CliResult};
use crate::hold::{self, Held};
use serde_json::json;

use crate::{output, Ctx};

/// How long closing the latch may take when we give up before leading.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

pub async fn elect(fw: &Framework, args: ElectArgs, ctx: &mut Ctx) -> CliResult {
    if args.observe {
        return observe(fw, &args.path, ctx).await;
    }
    let id = args.id.clone().unwrap_or_else(default_id);
    let latch = LeaderLatch::new(fw, &args.path, &id)?;
    latch.start().await?;
    let led = ctx
        .signals
        .interruptible(crate::progress::waiting("waiting for leadership", lead(&latch, args.timeout)))
        .await
        .and_then(|led| led);
    let failure = match led {
        Ok(Some(leadership)) => {
            let env = [
                ("ZK_LEADER_PATH", leadership.node().to_string()),
                ("ZK_FENCING_TOKEN", leadership.fencing_token().to_string()),
            ];
            let held = Held::Leader(latch, leadership);
            return hold::run(ctx, held, "leadership", &args.cmd, &env, &args.supervision).await;
        }
        Ok(None) => timed_out(args.timeout.unwrap_or_default(), &format!("leadership of {}", args.path)),
        Err(e) => e,
    };
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, latch.close()).await;
    Err(failure)
}

/// Waits until the latch leads (`None`: timed out) and returns that leadership.
async fn lead(latch: &LeaderLatch, timeout: Option<Duration>) -> CliResult<Option<Leadership>> {
    match timeout {
        None => Ok(Some(latch.await_leadership().await?)),
        Some(t) => Ok(before_deadline(latch.await_leadership_timeout(t).await)?),
    }
}

/// Prints the current leader's id (an empty line when there is none), then one line per
/// change, until SIGINT/SIGTERM.
async fn observe(fw: &Framework, path: &str, ctx: &mut Ctx) -> CliResult {
    let mut leaders = pin!(LeaderLatch::observe(fw, path));
    loop {
        tokio::select! {
            next = leaders.next() => match next {
                Some(Ok(leader)) => {
                    let line = if ctx.global.json {
                        json!({
                            "leader": leader.as_ref().map(|p| p.id.as_str()),
                            "node": leader.as_ref().map(|p| p.node.as_str()),
                        })
                        .to_string()
                    } else {
                        leader.map(|p| p.id).unwrap_or_default()
                    };
                    output::line(&line);
                }
                Some(Err(e)) => return Err(CliError::from(e)),
                None => return Ok(exit::OK),
            },
            _ = ctx.signals.recv() => return Ok(exit::OK),
        }
    }
}

/// `<hostname>-<pid>`.
fn default_id() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let host = if ok {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".to_string()
    };
    format!("{host}-{}", std::process::id())
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_id_is_host_dash_pid() {
        let id = super::default_id();
        let (host, pid) = id.rsplit_once('-').unwrap();
        assert!(!host.is_empty());
        assert_eq!(pid, std::process::id().to_string());
    }
}
