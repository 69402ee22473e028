//! The paused holder, a child process of the demo: it takes the lock, reads the stock, and
//! stops itself with SIGSTOP inside its critical section — every thread of the process, the
//! session's pings included, as in a long GC pause or a frozen VM. Its session expires on the
//! server and another worker takes the lock. When the demo resumes it (SIGCONT), it writes what
//! it decided before the pause, as a process that does not know it was gone does.
//!
//! It talks to the store in the parent over its stdin and stdout, one line each way:
//! `read` → the stock; `pausing <token>` (then it stops); `write <value> <token>` → `ok` or
//! `refused`.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, Stdin};
use zk_recipes::{Framework, InterProcessMutex};

use crate::BoxError;

/// The first argument that makes the demo's binary the paused holder.
pub const ARG: &str = "--paused-holder";
/// Its session timeout: short, so that the pause outlasts it.
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(1);

/// The child's side: `connect` and `namespace` as the parent's workers, the lock at `lock_path`.
pub async fn run(connect: &str, namespace: &str, lock_path: &str) -> Result<(), BoxError> {
    // SAFETY: prctl with PR_SET_PDEATHSIG only sets this process's parent-death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let fw = Framework::builder()
        .connect_string(connect)
        .namespace(namespace)
        .session_timeout(SESSION_TIMEOUT)
        .connect()
        .await?;
    let mut store = Parent { lines: BufReader::new(tokio::io::stdin()).lines(), out: tokio::io::stdout() };
    let guard = InterProcessMutex::new(&fw, lock_path)?.acquire().await?;
    let token = guard.fencing_token();
    let left: i64 = store.ask("read").await?.parse()?;
    store.say(&format!("pausing {token}")).await?;
    // SAFETY: raise only sends a signal to this process; SIGSTOP stops it until SIGCONT.
    unsafe { libc::raise(libc::SIGSTOP) };
    // Resumed, its session long gone: the write it decided on before the pause.
    store.ask(&format!("write {} {token}", left - 1)).await?;
    drop(guard);
    fw.close();
    Ok(())
}

/// The parent's store, seen from the child.
struct Parent {
    lines: Lines<BufReader<Stdin>>,
    out: tokio::io::Stdout,
}

impl Parent {
    async fn say(&mut self, line: &str) -> std::io::Result<()> {
        self.out.write_all(format!("{line}\n").as_bytes()).await?;
        self.out.flush().await
    }

    async fn ask(&mut self, line: &str) -> Result<String, BoxError> {
        self.say(line).await?;
        Ok(self.lines.next_line().await?.ok_or("the demo closed the store's pipe")?)
    }
}
