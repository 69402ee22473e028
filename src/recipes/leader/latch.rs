//! `LeaderLatch`: one leader among the participants of a path, until it closes or loses its
//! session.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_core::Stream;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::leadership::Leadership;
use super::participant::{participants, Participant};
use crate::error::{Error, Result};
use crate::framework::backoff::Backoff;
use crate::framework::deadline;
use crate::framework::LossReason;
use crate::framework::{paths, Framework};
use crate::observe;
use crate::recipes::layout::LATCH_NAME;
use crate::recipes::locks::HeldNode;
use crate::recipes::locks::{contend, forever, Exclusive, Forever, Request};
use crate::sync::lock;

/// How [`LeaderLatch::close_with`] treats observers.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::leader::{CloseMode, LeaderLatch};
///
/// let latch = LeaderLatch::new(&fw, "/elections/indexer", "replica-1")?;
/// latch.start().await?;
/// // step down without telling observers of leadership_changes() (Curator's SILENT)
/// latch.close_with(CloseMode::Silent).await?;
/// # Ok(()) }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseMode {
    /// Observers of [`LeaderLatch::leadership_changes`] are told leadership ended.
    NotifyLeader,
    /// Observers are not told (Curator's `SILENT`); `has_leadership()` is false all the same.
    Silent,
}

/// Leader election by latch: Curator's `LeaderLatch`.
///
/// Each started latch creates an ephemeral-sequential node `<path>/_c_<uuid>-latch-<seq>`
/// holding its id; the lowest node leads, the others each watch their predecessor (the lock
/// engine does the waiting). Leadership is dropped when the connection is suspended (standard
/// error policy), when the session is lost, or when our node is deleted; the latch then
/// re-queues (a new node, as Curator's `reset`) once connected again. Our node's
/// `ephemeralOwner` is checked against the current session before leadership is claimed.
///
/// # Curator compatibility
/// Same node names, data and ordering as Curator 5.x: a Curator `LeaderLatch` and this one on
/// one path elect exactly one leader.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::LeaderLatch;
///
/// let latch = LeaderLatch::new(&fw, "/elections/scheduler", "replica-1")?;
/// latch.start().await?;
/// let leadership = latch.await_leadership_timeout(Duration::from_secs(30)).await?;
/// println!("leading with token {}", leadership.fencing_token());
/// if let Some(leader) = latch.leader().await? {
///     println!("the leader is {}", leader.id);
/// }
/// latch.close().await?;                             // the next participant leads
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LeaderLatch {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    fw: Framework,
    path: String,
    id: String,
    /// The leadership held now, if any.
    state: watch::Sender<Option<Leadership>>,
    leader: AtomicBool,
    silent: AtomicBool,
    task: Mutex<Option<JoinHandle<()>>>,
    started: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = lock(&self.task).take() {
            task.abort();
        }
    }
}

impl LeaderLatch {
    /// A latch at `path` for the participant `id`.
    ///
    /// On a compressing framework
    /// ([`enable_compression`](crate::FrameworkBuilder::enable_compression), or a
    /// [`compressed`](Framework::compressed) handle) the node holds the id gzip-compressed, as
    /// Curator 5.8's `enableCompression()` writes it, and [`participants`](Self::participants)
    /// decompress it.
    ///
    /// # Errors
    /// [`Error::InvalidPath`]. (On a compressing framework, a provider's error for an id it
    /// cannot compress ends each attempt to take part; the latch retries, as after any other
    /// failure to queue.)
    pub fn new(fw: &Framework, path: &str, id: &str) -> Result<Self> {
        paths::validate_recipe_path(path)?;
        Ok(Self {
            inner: Arc::new(Inner {
                fw: fw.clone(),
                path: path.to_string(),
                id: id.to_string(),
                state: watch::Sender::new(None),
                leader: AtomicBool::new(false),
                silent: AtomicBool::new(false),
                task: Mutex::new(None),
                started: AtomicBool::new(false),
            }),
        })
    }

    /// Joins the election: spawns the task that queues our node and follows the leadership.
    ///
    /// Resolves once the task is spawned, without waiting for our node (which needs a
    /// connection) or for leadership: [`await_leadership`](Self::await_leadership) waits for
    /// it, [`watch`](Self::watch) and [`leadership_changes`](Self::leadership_changes) follow
    /// it.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when started before, [`Error::Closed`] for a closed framework.
    ///
    /// # Cancel safety
    /// Cancel safe: it does not wait.
    pub async fn start(&self) -> Result<()> {
        if self.inner.fw.is_closed() {
            return Err(Error::Closed);
        }
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return Err(Error::InvalidState("the latch was started already"));
        }
        let task = self.inner.fw.runtime().spawn(run(Arc::downgrade(&self.inner)));
        *lock(&self.inner.task) = Some(task);
        Ok(())
    }

    /// The participant id.
    #[doc(alias = "getId")]
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The latch path.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Whether this participant leads now.
    pub fn has_leadership(&self) -> bool {
        self.inner.leader.load(Ordering::SeqCst)
    }

    /// The leadership held now, if any: the same value [`await_leadership`](Self::await_leadership)
    /// returned for it (its fencing token, its node, its loss signal).
    pub fn leadership(&self) -> Option<Leadership> {
        self.inner.state.borrow().clone()
    }

    /// The leadership held now (`None` while not leading) as a `watch::Receiver`: for code that
    /// needs only the latest state, not every change; `changed()` wakes on the next change.
    /// Errs (`RecvError`) once the latch is dropped.
    ///
    /// To wait for the end of one leadership, [`Leadership::lost`] is simpler.
    pub fn watch(&self) -> watch::Receiver<Option<Leadership>> {
        self.inner.state.subscribe()
    }

    /// Every leadership change from now on, as a `Stream`: `Some(leadership)` when one is
    /// gained, `None` when it ends (the latest state when several happen quickly; compare the
    /// values, or their fencing tokens, to tell two leaderships apart). Ends when the latch is
    /// dropped.
    #[doc(alias = "addListener")]
    pub fn leadership_changes(&self) -> impl Stream<Item = Option<Leadership>> + Send + 'static {
        let mut rx = self.inner.state.subscribe();
        async_stream::stream! {
            while rx.changed().await.is_ok() {
                let state = rx.borrow_and_update().clone();
                yield state;
            }
        }
    }

    /// Waits until this participant leads, and returns that leadership: its fencing token, its
    /// node, and [`lost`](Leadership::lost), which resolves when it ends. When leading already,
    /// returns the current leadership at once. A leadership known to be over is never
    /// returned: the wait goes on for the next one.
    /// Under a caller's [`with_deadline`](crate::with_deadline) scope it waits until the
    /// scope's deadline at most, as [`await_leadership_timeout`](Self::await_leadership_timeout)
    /// with the time left.
    ///
    /// # Errors
    /// [`Error::Closed`] when the latch or framework closes first.
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    /// ```no_run
    /// # async fn demo(latch: zk_recipes::LeaderLatch) -> zk_recipes::Result<()> {
    /// let leadership = latch.await_leadership().await?;
    /// println!("leading through {} with token {}", leadership.node(), leadership.fencing_token());
    /// let reason = leadership.lost().await;                 // stop leading work when this returns
    /// println!("leadership ended: {reason}");
    /// # Ok(()) }
    /// ```
    #[doc(alias = "await")]
    pub async fn await_leadership(&self) -> Result<Leadership> {
        if let Some(left) = deadline::scope_left() {
            return self.await_leadership_timeout(left).await;
        }
        // (without a deadline the wait ends only with a leadership or an error)
        self.leadership_by(None).await?.ok_or(Error::Closed)
    }

    /// Waits for a leadership not known to be over, until `until` (`None` then).
    async fn leadership_by(&self, until: Option<Instant>) -> Result<Option<Leadership>> {
        let mut rx = self.inner.state.subscribe();
        let closed = self.inner.fw.closed();
        let passed = async move {
            match until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = rx.wait_for(|s| s.as_ref().is_some_and(|l| !l.is_lost())) => {
                r.ok().and_then(|s| s.clone()).ok_or(Error::Closed).map(Some)
            }
            _ = closed => Err(Error::Closed),
            _ = passed => Ok(None),
        }
    }

    /// Waits at most `timeout` for leadership; returns it as
    /// [`await_leadership`](Self::await_leadership) does. The wait ends by the deadline of the
    /// caller's [`with_deadline`](crate::with_deadline) scope too, when that is earlier. A
    /// `timeout` of zero does not wait (the current leadership, or [`Error::Timeout`]);
    /// `Duration::MAX` waits without bound, as [`await_leadership`](Self::await_leadership).
    ///
    /// # Errors
    /// [`Error::Timeout`] when `timeout` passed first (the latch stays in the election); as
    /// [`await_leadership`](Self::await_leadership) otherwise.
    ///
    /// # Cancel safety
    /// Cancel safe.
    #[doc(alias = "await")]
    pub async fn await_leadership_timeout(&self, timeout: Duration) -> Result<Leadership> {
        deadline::timed(self.inner.fw.operation_timeout(), timeout, |at| self.leadership_by(Some(at))).await
    }

    /// Leaves the election, telling observers; see [`close_with`](Self::close_with).
    ///
    /// # Errors
    /// As [`close_with`](Self::close_with).
    ///
    /// # Cancel safety
    /// Cancel safe: the node is deleted in the background if cancelled.
    pub async fn close(&self) -> Result<()> {
        self.close_with(CloseMode::NotifyLeader).await
    }

    /// Leaves the election: leadership ends (its [`Leadership::lost`] resolves with
    /// [`LossReason::Closed`]), our node is deleted. Resolves once the latch's task has stopped
    /// and our node is deleted. Idempotent: a second close (or a close of a
    /// latch never started) is `Ok(())`.
    ///
    /// # Errors
    /// The delete's error (it then continues in the background).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn close_with(&self, mode: CloseMode) -> Result<()> {
        self.inner.silent.store(mode == CloseMode::Silent, Ordering::SeqCst);
        let task = lock(&self.inner.task).take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await; // the task's node guard releases in the background on abort
        }
        // the task's `Term` was dropped with it: the leadership it handed out is over
        let node = self.inner.state.borrow().as_ref().map(|l| l.node().to_string());
        set_leadership(&self.inner, None);
        if let Some(node) = node {
            self.inner.fw.delete_guaranteed(&node).await?;
        }
        Ok(())
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
        participants(&self.inner.fw, &self.inner.path, LATCH_NAME).await
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

    /// Observes the latch at `path` without taking part: the current leader (`None` while
    /// nobody leads), then again each time it changes. One watch on the children; survives
    /// reconnects and new sessions; ends after yielding the first error (an invalid path, a
    /// closed framework, retries exhausted).
    pub fn observe(fw: &Framework, path: &str) -> impl Stream<Item = Result<Option<Participant>>> + Send + 'static {
        super::observe::observe(fw.clone(), path.to_string(), LATCH_NAME)
    }
}

fn set_leadership(inner: &Inner, now: Option<Leadership>) {
    let leading = now.is_some();
    inner.leader.store(leading, Ordering::SeqCst);
    // silent: the state changes, observers are not woken
    let notify = leading || !inner.silent.load(Ordering::SeqCst);
    inner.state.send_if_modified(|s| {
        let changed = *s != now;
        *s = now;
        changed && notify
    });
}

/// Contends, leads until the hold is lost, re-queues; until the latch goes away.
async fn run(inner: std::sync::Weak<Inner>) {
    let mut pause = Backoff::new(Duration::from_millis(50), Duration::from_secs(2)).with_jitter();
    let mut failing = false;
    if let Some(this) = inner.upgrade() {
        observe::Leading::candidate("latch", &this.path);
    }
    loop {
        let Some(this) = inner.upgrade() else { return };
        let fw = this.fw.clone();
        let (path, id) = (this.path.clone(), this.id.clone());
        drop(this);
        // the latch's driver: `latch-` nodes, one leader (the mutex's rules on its own name); a
        // participant's node means something while it waits (it names the participant), so no
        // local queue
        let request = Request { dir: &path, data: id.as_bytes(), driver: &Exclusive::latch() };
        let acquired = forever(async { contend(&fw, &request, Forever).await?.waited() }).await;
        let node = match acquired {
            Ok(acquired) => HeldNode::new(&fw, acquired),
            Err(Error::Closed) => return,
            Err(e) => {
                // once with its context; the retries that follow are debug
                match std::mem::replace(&mut failing, true) {
                    false => {
                        tracing::warn!(%path, error = %e, "leader latch: could not queue; retrying (further failures at debug)")
                    }
                    true => tracing::debug!(%path, error = %e, "leader latch: could not queue; retrying"),
                }
                pause.sleep().await;
                continue;
            }
        };
        pause.reset();
        failing = false;
        let Some(this) = inner.upgrade() else { return };
        let leading = observe::Leading::start("latch", &path);
        let session = observe::session_hex(node.session_id());
        tracing::info!(%path, id = %id, token = node.fencing_token(), %session, "leader latch: leadership gained");
        let (term, leadership) = Leadership::begin(&node);
        set_leadership(&this, Some(leadership));
        drop(this);
        let reason = node.lost().await;
        term.end(reason);
        if let Some(this) = inner.upgrade() {
            set_leadership(&this, None);
        }
        leading.end();
        match reason {
            LossReason::Closed => tracing::info!(%path, %session, "leader latch: leadership ended with the framework"),
            _ => {
                let token = node.fencing_token();
                tracing::warn!(%path, kind = "latch", token, %session, %reason, "leader latch: leadership LOST; queueing again")
            }
        }
        let _ = node.release().await;
        if reason == LossReason::Closed {
            return;
        }
        if fw.wait_until_connected().await.is_err() {
            return;
        }
    }
}
