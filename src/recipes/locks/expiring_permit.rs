//! Expirable semaphore permits: a lease of an [`InterProcessSemaphoreV2`] that outlives its
//! session and its process, ends at a deadline, and can be released by id from anywhere.
//!
//! A permit is a PERSISTENT-sequential lease node `<path>/leases/_c_<uuid>-expires-<ms>-lease-<seq>`
//! (with a TTL of the expiry when the server has TTL nodes): Curator counts it as a lease like
//! any other. It is taken as an ordinary (ephemeral) lease first, then swapped for the permit in
//! one transaction (delete the lease, create the permit), so the lease count never changes on
//! the way and the expiry counts from the moment the permit is held.
//!
//! Reclaim and the clock assumption: see [`ExpiringPermit`].
//!
//! [`InterProcessSemaphoreV2`]: crate::InterProcessSemaphoreV2

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::leases::Lease;
use super::permit_name::permit_name;
use crate::error::{Error, Result};
use crate::framework::deadline;
use crate::framework::{paths, Framework, LossReason, ProtectedName, TxnResult};
use crate::ZooKeeperError;

/// A permit of an [`InterProcessSemaphoreV2`](crate::InterProcessSemaphoreV2) that ends at a
/// deadline: from
/// [`acquire_with_expiry`](crate::InterProcessSemaphoreV2::acquire_with_expiry).
///
/// Unlike a [`Lease`], it belongs to no session: it stays held through session expiries, and
/// after this process exits, until it is [released](Self::release) — here, or in any process
/// by its [`permit_id`](Self::permit_id) with
/// [`release_permit`](crate::InterProcessSemaphoreV2::release_permit) — or it expires and is
/// reclaimed. **Dropping it does not release it.**
///
/// # Reclaim, and the clock assumption
/// An expired permit is deleted by whoever needs its place: a waiter of the semaphore (ours)
/// that finds more than `max_leases` leases deletes the permits whose deadline has passed on
/// its own wall clock, and sets a timer for the earliest deadline still ahead. With TTL nodes
/// ([`server_ttl`](Self::server_ttl)) the server also deletes it once it has been unchanged
/// for the expiry (ZooKeeper checks every `zookeeper.containerCheckIntervalMs`, 60 s by
/// default), which frees Curator waiters too. Curator waiters do not reclaim by deadline:
/// without TTL nodes, a Curator process waiting at the head of the semaphore's queue (it holds
/// the internal lock while it waits) waits for an expired permit until it is released by id,
/// and our waiters queue behind it. Where Curator processes share a semaphore with permits,
/// run the ensemble with `zookeeper.extendedTypesEnabled=true`.
///
/// The deadline is the acquirer's wall clock at the acquisition plus the expiry: the recipe
/// assumes that the processes' wall clocks agree (NTP) to well within the expiry. A waiter
/// whose clock runs ahead by `e` reclaims a permit up to `e` before its holder's
/// [`expired`](Self::expired) fires: stop using a permit a margin before it expires.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::InterProcessSemaphoreV2;
/// let pool = InterProcessSemaphoreV2::new(&fw, "/pools/gpu", 4)?;
/// let permit = pool.acquire_with_expiry(Duration::from_secs(600)).await?;
/// let id = permit.permit_id().to_string(); // hand it to the job runner
/// // ... in any process, when the job is done:
/// pool.release_permit(&id).await?;
/// # Ok(()) }
/// ```
#[must_use = "a permit stays held until released by id or expired: dropping it does not release it"]
#[derive(Debug, Clone)]
pub struct ExpiringPermit {
    fw: Framework,
    semaphore: String,
    path: String,
    czxid: i64,
    expires_at: SystemTime,
    deadline: Instant,
    ttl: bool,
}

impl ExpiringPermit {
    /// The permit id: the permit node's name, which
    /// [`release_permit`](crate::InterProcessSemaphoreV2::release_permit) takes.
    pub fn permit_id(&self) -> &str {
        paths::node_name(&self.path)
    }

    /// The permit node's full path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The fencing token: the permit node's creation zxid (it increases across all leases and
    /// permits of the semaphore over time).
    pub fn fencing_token(&self) -> i64 {
        self.czxid
    }

    /// When the permit expires (this process's wall clock at the acquisition plus the expiry;
    /// the deadline recorded in its name).
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    /// Whether its deadline has passed (on this process's monotonic clock).
    pub fn is_expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Resolves at the deadline: stop using the permit then (better a little before).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn expired(&self) {
        tokio::time::sleep_until(self.deadline).await;
    }

    /// Whether the server expires the permit by itself too (a TTL node: the server has
    /// `zookeeper.extendedTypesEnabled`); otherwise only waiters reclaim it.
    pub fn server_ttl(&self) -> bool {
        self.ttl
    }

    /// Releases the permit (deletes its node).
    ///
    /// # Errors
    /// [`Error::LockLost`] when it was gone already: with [`LossReason::Expired`] when
    /// past its deadline (reclaimed), [`LossReason::NodeDeleted`] otherwise (released by id
    /// elsewhere); the framework's errors.
    ///
    /// # Cancel safety
    /// Cancel safe: the permit may or may not have been released; releasing again (or by id)
    /// tells.
    pub async fn release(self) -> Result<()> {
        match delete_permit(&self.fw, &self.path).await {
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => {
                let reason = if self.is_expired() { LossReason::Expired } else { LossReason::NodeDeleted };
                Err(Error::LockLost { path: self.path, reason })
            }
            other => other,
        }
        .map_err(|e| {
            tracing::debug!(semaphore = %self.semaphore, error = %e, "permit release");
            e
        })
    }
}

/// Deletes a permit node: `NoNode` when it is not there.
pub(crate) async fn delete_permit(fw: &Framework, path: &str) -> Result<()> {
    let deleted_earlier = std::sync::atomic::AtomicBool::new(false);
    let sent = &deleted_earlier;
    fw.request("delete", path, |conn| async move {
        match conn.delete(path, None).await {
            // a retry after a lost reply finds it gone: our first attempt deleted it
            Err(Error::ZooKeeper(ZooKeeperError::NoNode)) if sent.load(std::sync::atomic::Ordering::SeqCst) => Ok(()),
            Err(Error::ZooKeeper(e)) if e.is_retryable() => {
                sent.store(true, std::sync::atomic::Ordering::SeqCst);
                Err(Error::ZooKeeper(e))
            }
            other => other,
        }
    })
    .await
}

/// A permit the swap may have made that no caller has: deleted in the background by its
/// protection prefix when dropped before [`claimed`](Self::claimed) — a swap whose outcome is
/// unknown, that failed after it was applied, or that was dropped — in whatever session comes
/// next (a permit is persistent). So no slot stays taken by a permit nobody knows the id of.
struct Unclaimed<'a> {
    fw: &'a Framework,
    name: Option<ProtectedName>,
}

impl Unclaimed<'_> {
    /// The permit is the caller's now.
    fn claimed(mut self) {
        self.name = None;
    }
}

impl Drop for Unclaimed<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            self.fw.delete_protected_in_background(name);
        }
    }
}

/// Swaps a held ordinary `lease` of the semaphore at `semaphore` (leases under `leases_dir`)
/// for a permit that expires after `expiry`, in one transaction: the lease count does not
/// change. `ttl`: create it as a TTL node. Whatever goes wrong once the transaction may have
/// been sent (no reply by the deadline, the call dropped), a permit it made is deleted.
pub(crate) async fn swap_for_permit(
    fw: &Framework,
    semaphore: &str,
    leases_dir: &str,
    lease: Lease,
    expiry: Duration,
    ttl: bool,
) -> Result<ExpiringPermit> {
    let (expires_at, deadline) = (deadline::wall_later(SystemTime::now(), expiry), deadline::after(expiry));
    let protected = ProtectedName::new(leases_dir, &permit_name(expires_at));
    let name = protected.path();
    let (data, mode) = (fw.default_data(), crate::CreateMode::PersistentSequential);
    // the transaction deletes the lease's node: no loss to report when it does
    lease.ending();
    // (not `plain()`: a compressing framework stores the permit's data compressed)
    let txn = fw.transaction().delete(lease.path(), None);
    let txn = if ttl { txn.create_with_ttl(&name, data, mode, expiry) } else { txn.create(&name, data, mode) };
    // (a failure that applied nothing costs the background delete one listing)
    let unclaimed = Unclaimed { fw, name: Some(protected) };
    let created = match txn.commit().await {
        Ok(results) => results.into_iter().nth(1),
        Err(Error::Transaction { index: 0, source: ZooKeeperError::NoNode, .. }) => {
            let path = lease.path().to_string();
            lease.forget();
            return Err(Error::LockLost { path, reason: LossReason::NodeDeleted });
        }
        Err(e) => return Err(e), // the lease goes back when dropped, the permit if made too
    };
    lease.forget();
    // a multi's create answers no stat: read it (czxid is the fencing token)
    let path = match created {
        Some(TxnResult::Create { path, stat: Some(_) }) => path,
        _ => return Err(Error::LockLost { path: name, reason: LossReason::NodeDeleted }),
    };
    let Some(stat) = fw.exists(&path).await? else {
        return Err(Error::LockLost { path, reason: LossReason::NodeDeleted });
    };
    unclaimed.claimed();
    Ok(ExpiringPermit {
        fw: fw.clone(),
        semaphore: semaphore.to_string(),
        path,
        czxid: stat.czxid,
        expires_at,
        deadline,
        ttl,
    })
}
