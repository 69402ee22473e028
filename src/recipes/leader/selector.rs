//! `LeaderSelector`: run an async task while holding leadership; cancel it when leadership
//! is lost.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use super::leadership::Leadership;
use super::participant::{participants, Participant};
use crate::error::{Error, Result};
use crate::framework::backoff::Backoff;
use crate::framework::Framework;
use crate::framework::LossReason;
use crate::observe::{self, Kind};
use crate::recipes::layout;
use crate::recipes::locks::InterProcessMutex;
use crate::sync::lock;

/// What the leadership task gets: its [`Leadership`] (it derefs to it: fencing token, node,
/// [`lost`](Leadership::lost), [`is_lost`](Leadership::is_lost)) and our id.
///
/// The task is cancelled when the leadership ends; a clone of the context (or of its
/// leadership) handed to work that outlives an await point can ask `is_lost()` or await
/// `lost()` itself.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::LeaderSelector;
///
/// let selector = LeaderSelector::new(&fw, "/elections/compactor", "replica-1", |ctx| async move {
///     // write downstream with the token, so that a stale leader is refused
///     println!("{} leads through {} with token {}", ctx.id(), ctx.node(), ctx.fencing_token());
///     let ending = ctx.clone();
///     tokio::spawn(async move {
///         let reason = ending.lost().await;            // also when the task is cancelled
///         println!("leadership {} ended: {reason}", ending.fencing_token());
///     });
/// })?;
/// selector.start().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeaderContext {
    leadership: Leadership,
    id: String,
}

impl LeaderContext {
    /// The leadership this task runs under (the context derefs to it too).
    pub fn leadership(&self) -> &Leadership {
        &self.leadership
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl std::ops::Deref for LeaderContext {
    type Target = Leadership;

    fn deref(&self) -> &Leadership {
        &self.leadership
    }
}

/// How a leadership ended.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::LeaderSelector;
/// use zk_recipes::leader::LeadershipEnd;
///
/// let selector = LeaderSelector::new(&fw, "/elections/exporter", "replica-1", |_ctx| async move {
///     std::future::pending::<()>().await;
/// })?;
/// let mut ends = selector.leadership_ends();
/// selector.start().await?;
/// ends.wait_for(|end| end.is_some()).await.ok();
/// match *ends.borrow() {
///     Some(LeadershipEnd::Lost(reason)) => eprintln!("lost leadership: {reason}"),
///     other => println!("{other:?}"),
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadershipEnd {
    /// The task returned: leadership is given up (Curator's `takeLeadership` returning).
    Finished,
    /// Leadership was lost; the task was cancelled (dropped at its next await point).
    Lost(LossReason),
    /// [`LeaderSelector::interrupt_leadership`] or `close` cancelled the task.
    Interrupted,
}

type Task = Arc<dyn Fn(LeaderContext) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Leader election that runs a task while leading: Curator's `LeaderSelector`.
///
/// Built on an [`InterProcessMutex`] at `path` whose node holds the participant id. When the
/// mutex is acquired, the task runs; when the task returns, leadership is released. If the
/// hold is lost (suspended under the standard policy, session lost, node deleted) or
/// [`interrupt_leadership`](Self::interrupt_leadership) is called, the task is *cancelled*
/// (its future dropped) — so it cannot go on acting as leader. With
/// [`auto_requeue`](Self::auto_requeue) the selector queues again after each leadership.
///
/// # Curator compatibility
/// Same nodes as Curator's `LeaderSelector` (`<path>/_c_<uuid>-lock-<seq>`, id as data).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::LeaderSelector;
///
/// let selector = LeaderSelector::new(&fw, "/elections/compactor", "replica-1", |ctx| async move {
///     loop {
///         compact(ctx.fencing_token()).await;        // cancelled at an await when leadership is lost
///     }
/// })?
/// .auto_requeue();                                   // queue again after each leadership
/// selector.start().await?;
/// // ... on shutdown:
/// selector.close().await?;
/// # async fn compact(_: i64) {}
/// # Ok(()) }
/// ```
pub struct LeaderSelector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LeaderSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderSelector").field("path", &self.inner.mutex.path()).field("id", &self.inner.id).finish()
    }
}

struct Inner {
    fw: Framework,
    mutex: InterProcessMutex,
    id: String,
    task: Task,
    auto_requeue: AtomicBool,
    requeue: Notify,
    interrupt: Notify,
    leading: watch::Sender<Option<i64>>,
    ends: watch::Sender<Option<LeadershipEnd>>,
    runner: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for LeaderSelector {
    fn drop(&mut self) {
        self.stop();
    }
}

impl LeaderSelector {
    /// A selector at `path` for participant `id`, running `task` while leading.
    ///
    /// On a compressing framework
    /// ([`enable_compression`](crate::FrameworkBuilder::enable_compression), or a
    /// [`compressed`](Framework::compressed) handle) the node holds the id gzip-compressed, as
    /// Curator 5.8's `enableCompression()` writes it, and [`participants`](Self::participants)
    /// decompress it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`].
    pub fn new<F, Fut>(fw: &Framework, path: &str, id: &str, task: F) -> Result<Self>
    where
        F: Fn(LeaderContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mutex = InterProcessMutex::new(fw, path)?.with_data(id.as_bytes().to_vec()).with_kind(Kind::LeaderSelector);
        let task: Task = Arc::new(move |ctx| Box::pin(task(ctx)));
        Ok(Self {
            inner: Arc::new(Inner {
                fw: fw.clone(),
                mutex,
                id: id.to_string(),
                task,
                auto_requeue: AtomicBool::new(false),
                requeue: Notify::new(),
                interrupt: Notify::new(),
                leading: watch::Sender::new(None),
                ends: watch::Sender::new(None),
                runner: Mutex::new(None),
            }),
        })
    }

    /// Queue again automatically after every leadership (Curator's `autoRequeue`).
    pub fn auto_requeue(self) -> Self {
        self.inner.auto_requeue.store(true, Ordering::SeqCst);
        self
    }

    /// Starts contending: spawns the task that queues on the mutex and runs the leadership
    /// task while leading.
    ///
    /// Resolves once that task is spawned, without waiting for our node or for leadership
    /// ([`has_leadership`](Self::has_leadership) and [`leadership_ends`](Self::leadership_ends)
    /// follow it).
    ///
    /// # Errors
    /// [`Error::InvalidState`] when started before; [`Error::Closed`].
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    pub async fn start(&self) -> Result<()> {
        if self.inner.fw.is_closed() {
            return Err(Error::Closed);
        }
        let mut runner = lock(&self.inner.runner);
        if runner.is_some() {
            return Err(Error::InvalidState("the selector was started already"));
        }
        *runner = Some(self.inner.fw.runtime().spawn(run(Arc::downgrade(&self.inner))));
        Ok(())
    }

    /// Queues once more (when not auto-requeueing and the last leadership ended).
    pub fn requeue(&self) {
        self.inner.requeue.notify_one();
    }

    /// Cancels the running leadership task, if any (leadership is released).
    pub fn interrupt_leadership(&self) {
        self.inner.interrupt.notify_waiters();
    }

    /// Whether this participant leads now.
    pub fn has_leadership(&self) -> bool {
        self.inner.leading.borrow().is_some()
    }

    /// The fencing token of the current leadership while leading (as
    /// [`Leadership::fencing_token`](crate::Leadership::fencing_token), which a [`LeaderContext`] derefs to), `None` otherwise.
    pub fn fencing_token(&self) -> Option<i64> {
        *self.inner.leading.borrow()
    }

    /// How the last leadership ended, as a `watch::Receiver` (`None` until one ended): the
    /// latest end is what matters (a leadership ends before the next can start, so
    /// `changed()` sees each one unless the receiver is left unread across two).
    pub fn leadership_ends(&self) -> watch::Receiver<Option<LeadershipEnd>> {
        self.inner.ends.subscribe()
    }

    /// The participant id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// All participants in queue order (the first leads).
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "getParticipants")]
    pub async fn participants(&self) -> Result<Vec<Participant>> {
        participants(&self.inner.fw, self.inner.mutex.path(), layout::LOCK_NAME).await
    }

    /// The current leader, if any.
    ///
    /// # Errors
    /// The framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "getLeader")]
    pub async fn leader(&self) -> Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// Stops: cancels a running leadership task and leaves the queue. Resolves once the
    /// selector's task has stopped (the leadership task is dropped with it) and our node is
    /// handed to the guaranteed background delete. Idempotent: a second close (or a close of
    /// a selector never started) is `Ok(())`. Dropping the selector does the same in the
    /// background.
    ///
    /// # Errors
    /// None today: the `Result` is the lifecycle's shape, common to every recipe.
    ///
    /// # Cancel safety
    /// Cancel safe: the task is stopped at the first poll; only the wait for it is dropped.
    pub async fn close(&self) -> Result<()> {
        if let Some(runner) = self.stop() {
            // aborted: `Err(cancelled)` unless it had ended by itself
            let _ = runner.await;
        }
        Ok(())
    }

    /// Aborts the task (the close of a drop); returns it to wait for.
    fn stop(&self) -> Option<JoinHandle<()>> {
        let runner = lock(&self.inner.runner).take();
        if let Some(r) = &runner {
            r.abort();
        }
        self.inner.leading.send_replace(None);
        runner
    }
}

async fn run(inner: std::sync::Weak<Inner>) {
    let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).with_jitter();
    let mut failing = false;
    if let Some(this) = inner.upgrade() {
        observe::Leading::candidate("selector", this.mutex.path());
    }
    loop {
        let Some(this) = inner.upgrade() else { return };
        let mutex = this.mutex.clone();
        drop(this);
        let guard = match mutex.acquire().await {
            Ok(g) => g,
            Err(Error::Closed) => return,
            Err(e) => {
                // once with its context; the retries that follow are debug
                let path = mutex.path();
                match std::mem::replace(&mut failing, true) {
                    false => {
                        tracing::warn!(%path, error = %e, "leader selector: could not queue; retrying (further failures at debug)")
                    }
                    true => tracing::debug!(%path, error = %e, "leader selector: could not queue; retrying"),
                }
                pause.sleep().await;
                continue;
            }
        };
        pause.reset();
        failing = false;
        let Some(this) = inner.upgrade() else { return };
        let path = mutex.path();
        let leading = observe::Leading::start("selector", path);
        let session = observe::session_hex(guard.session_id());
        tracing::info!(%path, id = %this.id, token = guard.fencing_token(), %session, "leader selector: leadership gained");
        let (term, leadership) = Leadership::begin(&guard);
        this.leading.send_replace(Some(leadership.fencing_token()));
        let ctx = LeaderContext { leadership, id: this.id.clone() };
        let task = (this.task)(ctx);
        let end = tokio::select! {
            () = task => LeadershipEnd::Finished,
            reason = guard.lost() => LeadershipEnd::Lost(reason),
            () = this.interrupt.notified() => LeadershipEnd::Interrupted,
        };
        term.end(match end {
            LeadershipEnd::Lost(reason) => reason,
            // given up: what the task was handed is over
            LeadershipEnd::Finished | LeadershipEnd::Interrupted => LossReason::Closed,
        });
        this.leading.send_replace(None);
        leading.end();
        match end {
            LeadershipEnd::Lost(LossReason::Closed) | LeadershipEnd::Finished | LeadershipEnd::Interrupted => {
                tracing::info!(%path, ?end, %session, "leader selector: leadership ended")
            }
            LeadershipEnd::Lost(reason) => {
                let token = guard.fencing_token();
                tracing::warn!(%path, kind = "selector", token, %session, %reason, "leader selector: leadership LOST")
            }
        }
        this.ends.send_replace(Some(end));
        if let Err(e) = guard.release().await {
            tracing::debug!(error = %e, "leader selector: release after leadership");
        }
        if matches!(end, LeadershipEnd::Lost(_)) && this.fw.wait_until_connected().await.is_err() {
            return;
        }
        if !this.auto_requeue.load(Ordering::SeqCst) {
            this.requeue.notified().await;
        }
    }
}
