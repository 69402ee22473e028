//! Expiring a live session on purpose.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::Framework;

/// Makes the server expire `framework`'s current session now, the way Curator's
/// `KillSession` does: a second client connects with the same session id and password and
/// then closes, which ends the session on the server. Returns once the framework has noticed
/// the loss (its state went `LOST`); it then builds a new session by itself.
///
/// # Errors
/// [`Error::Closed`] for a closed framework, [`Error::ZooKeeper`] if the second connection
/// fails, [`Error::Timeout`] if the framework did not notice within 30 s.
///
/// # Cancel safety
/// Cancelling after the second client connected still expires the session.
pub async fn expire_session(framework: &Framework) -> Result<()> {
    let before = framework.status();
    let session = framework.session_info()?;
    let timeout = framework.negotiated_session_timeout()?;
    let impostor = zookeeper_client::Client::connector()
        .with_session(session)
        .with_session_timeout(timeout)
        .connect(framework.connect_string())
        .await?;
    drop(impostor);
    let limit = Duration::from_secs(30);
    let mut rx = framework.status_watch();
    let noticed = rx.wait_for(|s| s.closed || s.losses > before.losses);
    match tokio::time::timeout(limit, noticed).await {
        Err(_) => Err(Error::Timeout(limit)),
        Ok(Err(_)) => Err(Error::Closed),
        Ok(Ok(s)) if s.closed => Err(Error::Closed),
        Ok(Ok(_)) => Ok(()),
    }
}
