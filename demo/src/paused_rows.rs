//! The paused-holder rows (the "NPC" problem): one worker — a child process — pauses inside its
//! critical section longer than its session timeout while the others go on. The stock is in a
//! store outside ZooKeeper. With the mutex alone, the holder's stale write lands and the stock
//! it wrote back is sold a second time; with the fencing token checked by the store (in memory,
//! or by PostgreSQL), the stale write is refused and nothing is oversold.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use zk_recipes::{Framework, InterProcessMutex};

use crate::store::Store;
use crate::{paused, show_progress, BoxError, Outcome};

/// How many items the others sell while the holder is stopped before it is resumed: they can
/// only sell once its session expired and its lock node went with it.
pub const SOLD_DURING_PAUSE: u64 = 500;
/// The bound on each step (the holder taking the lock, the others selling, the stale write).
const STEP: Duration = Duration::from_secs(60);

/// The lock of a row under `path` (the scope of its fencing tokens).
pub fn lock_path(path: &str) -> String {
    format!("{path}/lock")
}

/// A paused-holder row `name` over `workers` (the holder comes on top), under `path`, selling
/// the stock of `store`. Also returns how many writes the store refused and how long the
/// holder was stopped.
pub async fn sell(
    workers: &[Framework],
    connect: &str,
    namespace: &str,
    path: &str,
    name: &'static str,
    store: Store,
) -> Result<(Outcome, u64, Duration), BoxError> {
    let store = Arc::new(store);
    let lock_path = lock_path(path);
    let mut holder = Holder::spawn(connect, namespace, &lock_path)?;
    within("the holder to take the lock", holder.until_paused(&store)).await??;
    let stopped = Instant::now();
    let started = Instant::now();
    let sold = Arc::new(watch::Sender::new(0u64));
    let (holder_done, _) = watch::channel(false);
    let progress = tokio::spawn(show_progress(name, {
        let sold = sold.clone();
        move || *sold.borrow()
    }));
    let mut tasks = Vec::new();
    for fw in workers {
        let (fw, lock_path, store, sold) = (fw.clone(), lock_path.clone(), store.clone(), sold.clone());
        tasks.push(tokio::spawn(worker(fw, lock_path, store, sold, holder_done.subscribe())));
    }
    within("the others to sell during the pause", sold.subscribe().wait_for(|n| *n >= SOLD_DURING_PAUSE)).await??;
    let paused_for = stopped.elapsed();
    if within("the holder's stale write", holder.resume_and_write(&store)).await?? {
        sold.send_modify(|n| *n += 1);
    }
    within("the holder to exit", holder.child.wait()).await??;
    holder_done.send_replace(true);
    for task in tasks {
        task.await.expect("a seller task panicked")?;
    }
    let elapsed = started.elapsed();
    progress.abort();
    let (left, refused) = (store.read().await?, store.refused());
    let sold = *sold.borrow();
    Ok((Outcome { sold, left, elapsed, handoffs: sold }, refused, paused_for))
}

/// One of the others: sells under the mutex, each write carrying its fencing token. At zero
/// stock it waits for the holder to be done (its stale write may still come) before it stops.
async fn worker(
    fw: Framework,
    lock_path: String,
    store: Arc<Store>,
    sold: Arc<watch::Sender<u64>>,
    mut holder_done: watch::Receiver<bool>,
) -> Result<(), BoxError> {
    let mutex = InterProcessMutex::new(&fw, &lock_path)?;
    loop {
        let guard = mutex.acquire().await?;
        let token = guard.fencing_token();
        let left = store.read().await?;
        let written = left > 0 && store.write(left - 1, token).await?;
        guard.release().await?;
        if written {
            sold.send_modify(|n| *n += 1);
        } else if *holder_done.borrow() {
            return Ok(());
        } else {
            // the store is empty (or refused us): once the holder is done, look once more
            let _ = holder_done.wait_for(|done| *done).await;
        }
    }
}

/// The paused holder's process and its pipes.
struct Holder {
    child: Child,
    to_child: ChildStdin,
    from_child: Lines<BufReader<ChildStdout>>,
}

impl Holder {
    fn spawn(connect: &str, namespace: &str, lock_path: &str) -> Result<Holder, BoxError> {
        let mut child = Command::new(std::env::current_exe()?)
            .args([paused::ARG, connect, namespace, lock_path])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let to_child = child.stdin.take().ok_or("the holder's stdin")?;
        let from_child = BufReader::new(child.stdout.take().ok_or("the holder's stdout")?).lines();
        Ok(Holder { child, to_child, from_child })
    }

    /// Serves the holder's read; returns when it says it stops itself.
    async fn until_paused(&mut self, store: &Store) -> Result<(), BoxError> {
        self.expect("read").await?;
        let left = store.read().await?;
        self.answer(&left.to_string()).await?;
        self.expect("pausing ").await?;
        Ok(())
    }

    /// Resumes the holder (SIGCONT) and serves its write; whether the store took it.
    async fn resume_and_write(&mut self, store: &Store) -> Result<bool, BoxError> {
        let pid = self.child.id().ok_or("the holder exited while stopped")?;
        // SAFETY: kill only sends SIGCONT to our own child, by its pid.
        if unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        let line = self.expect("write ").await?;
        let mut words = line.split_whitespace().skip(1);
        let value: i64 = words.next().ok_or("write: no value")?.parse()?;
        let token: i64 = words.next().ok_or("write: no token")?.parse()?;
        let accepted = store.write(value, token).await?;
        self.answer(if accepted { "ok" } else { "refused" }).await?;
        Ok(accepted)
    }

    async fn expect(&mut self, prefix: &str) -> Result<String, BoxError> {
        let line = self.from_child.next_line().await?.ok_or("the holder exited")?;
        match line.starts_with(prefix) {
            true => Ok(line),
            false => Err(format!("the holder said {line:?}, not {prefix:?}").into()),
        }
    }

    async fn answer(&mut self, line: &str) -> std::io::Result<()> {
        self.to_child.write_all(format!("{line}\n").as_bytes()).await?;
        self.to_child.flush().await
    }
}

async fn within<F: std::future::Future>(what: &str, step: F) -> Result<F::Output, BoxError> {
    tokio::time::timeout(STEP, step).await.map_err(|_| format!("gave up waiting {STEP:?} for {what}").into())
}
