//! Opening one zookeeper-client session with the framework's settings (timeouts, auth, TLS,
//! SASL), and turning its failures into errors that say what failed.
//!
//! zookeeper-client retries a failed TLS handshake like an unreachable server until its
//! deadline, and keeps the reason to itself. So, with the `tls` feature, when a session is not
//! up after a short grace, a probe handshake with each server ([`super::tls_probe`]) runs beside
//! the attempt: when every server fails it for a reason that retrying cannot fix (unknown CA,
//! expired certificate, plaintext port, ...), the attempt is abandoned with [`Error::Tls`] at
//! once instead of [`Error::ConnectTimeout`] at the end of the connection timeout.

use zookeeper_client::Client;

use super::builder::Config;
use crate::error::{Error, Result};

/// How long a session attempt runs before the TLS probe starts beside it (at most).
#[cfg(feature = "tls")]
const PROBE_GRACE: std::time::Duration = std::time::Duration::from_millis(400);

/// Connects a client within the connection timeout.
pub(crate) async fn open_client(cfg: &Config) -> Result<Client> {
    let connecting = connector(cfg)?;
    let outcome = tokio::select! {
        outcome = tokio::time::timeout(cfg.connection_timeout, connecting) => outcome,
        diagnosed = diagnose_after_grace(cfg) => return Err(diagnosed),
    };
    match outcome {
        Err(_) | Ok(Err(zookeeper_client::Error::Timeout)) | Ok(Err(zookeeper_client::Error::NoHosts)) => {
            Err(Error::ConnectTimeout { connect_string: cfg.connect_string.clone(), timeout: cfg.connection_timeout })
        }
        Ok(Err(zookeeper_client::Error::BadArguments(reason))) => {
            Err(Error::invalid("connect_string", format!("connect string {:?}: {reason}", cfg.connect_string)))
        }
        Ok(Err(zookeeper_client::Error::AuthFailed)) => {
            Err(Error::AuthFailed { connect_string: cfg.connect_string.clone() })
        }
        Ok(Err(e)) => Err(Error::from_client(e)),
        Ok(Ok(client)) => Ok(client),
    }
}

/// The session attempt, configured.
fn connector(cfg: &Config) -> Result<impl std::future::Future<Output = Result<Client, zookeeper_client::Error>> + '_> {
    let mut connector = Client::connector().with_session_timeout(cfg.session_timeout).with_readonly(cfg.read_only);
    for (scheme, auth) in &cfg.auth.0 {
        connector = connector.with_auth(scheme, auth);
    }
    #[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
    if let Some(sasl) = &cfg.sasl {
        connector = connector.with_sasl(sasl.client_options());
    }
    #[cfg(feature = "tls")]
    if let Some(tls) = &cfg.tls {
        connector = connector.with_tls(tls.client_options());
        if cfg.tls_everywhere {
            return Ok(futures_util::future::Either::Left(connector.secure_connect(&cfg.connect_string)));
        }
    }
    #[cfg(feature = "tls")]
    return Ok(futures_util::future::Either::Right(connector.connect(&cfg.connect_string)));
    #[cfg(not(feature = "tls"))]
    Ok(connector.connect(&cfg.connect_string))
}

/// Resolves to the error that explains why no session can be made, once the probe has found
/// one; pending forever otherwise (and always without the `tls` feature).
async fn diagnose_after_grace(cfg: &Config) -> Error {
    #[cfg(feature = "tls")]
    {
        tokio::time::sleep(PROBE_GRACE.min(cfg.connection_timeout / 4)).await;
        if let Some(error) = super::tls_probe::diagnose(cfg).await {
            return error;
        }
    }
    let _ = cfg;
    std::future::pending::<Error>().await
}
