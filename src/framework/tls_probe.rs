//! A probe handshake that names why TLS connections to the ensemble fail.
//!
//! zookeeper-client treats a failed handshake like an unreachable server (it retries until its
//! deadline and logs the reason at debug level). When a session attempt is slow, the framework
//! asks this probe, which connects to each server once, the way the client would, with rustls
//! directly, and classifies what happened:
//! - a `tcp+tls` endpoint: the handshake with the same CA, client identity and hostname setting;
//!   then a short read, since a server may refuse our client certificate only after our side of
//!   the handshake is done; a server that closes the connection on our `ClientHello` and answers
//!   a plaintext four-letter word is a plaintext port;
//! - a plaintext endpoint: a `ClientHello`; a server that answers it speaks TLS, so a plaintext
//!   session can never work there.
//!
//! Only when *every* server fails for such a reason is the result an error: a server that is
//! unreachable, slow or fine leaves the session attempt to run its course.
//!
//! Blocking sockets on the blocking pool, each bounded by a timeout: a probe runs at most once
//! per session attempt, so simplicity wins over an async handshake.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct};

use super::builder::Config;
use super::security::TlsConfig;
use crate::error::{Error, TlsFailure};

/// The longest a probe of one server takes to connect, or waits for one reply.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long to wait, after our side of the handshake is done, for the server to refuse it.
const AFTER_HANDSHAKE: Duration = Duration::from_millis(300);
/// What the verifier of a plaintext endpoint's probe answers any certificate with: the server
/// sent one, so it speaks TLS.
const SPEAKS_TLS: &str = "zk-recipes probe: the server presented a certificate";

/// One server of the connect string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

/// What one probe found.
enum Outcome {
    /// Connected (or could not tell what is wrong): leave it to the session attempt.
    Inconclusive,
    /// Refused, not answering, or a name that does not resolve.
    Unreachable,
    /// A reason that retrying cannot fix.
    Failed(TlsFailure),
}

/// The servers of `connect_string`, as zookeeper-client reads it: `tcp://` is plaintext,
/// `tcp+tls://` TLS, no scheme means `tls_default`; the port defaults to 2181; a chroot may
/// follow the last server.
pub(crate) fn endpoints(connect_string: &str, tls_default: bool) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for part in connect_string.split(',') {
        let part = part.trim();
        let (rest, tls) = if let Some(rest) = part.strip_prefix("tcp+tls://") {
            (rest, true)
        } else if let Some(rest) = part.strip_prefix("tcp://") {
            (rest, false)
        } else {
            (part, tls_default)
        };
        let hostport = rest.split('/').next().unwrap_or_default();
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && (!host.contains(':') || host.ends_with(']')) => (host, port),
            _ => (hostport, "2181"),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let (false, Ok(port)) = (host.is_empty(), port.parse()) {
            out.push(Endpoint { host: host.to_owned(), port, tls });
        }
    }
    out
}

/// Probes every server of the configuration; the error when each of them failed for a reason
/// that retrying cannot fix (the first server's), `None` otherwise.
pub(crate) async fn diagnose(cfg: &Config) -> Option<Error> {
    let endpoints = endpoints(&cfg.connect_string, cfg.tls.is_some() && cfg.tls_everywhere);
    let timeout = PROBE_TIMEOUT.min(cfg.connection_timeout);
    let probes = endpoints.into_iter().map(|endpoint| {
        let tls = cfg.tls.as_ref().map(super::security::LiveTls::current);
        tokio::task::spawn_blocking(move || {
            let outcome = probe(&endpoint, tls.as_ref(), timeout);
            (endpoint, outcome)
        })
    });
    let mut first = None;
    for probed in futures_util::future::join_all(probes).await {
        let Ok((endpoint, Outcome::Failed(failure))) = probed else { return None };
        tracing::debug!(host = %endpoint.host, port = endpoint.port, %failure, "TLS probe");
        first.get_or_insert(Error::Tls { server: format!("{}:{}", endpoint.host, endpoint.port), failure });
    }
    first
}

fn probe(endpoint: &Endpoint, tls: Option<&TlsConfig>, timeout: Duration) -> Outcome {
    let Some(addr) = (endpoint.host.as_str(), endpoint.port).to_socket_addrs().ok().and_then(|mut a| a.next()) else {
        return Outcome::Unreachable;
    };
    let Some(socket) = connect(addr, timeout) else { return Outcome::Unreachable };
    let config = match (endpoint.tls, tls) {
        (true, Some(tls)) => client_config(Some(tls)),
        // the client refuses a TLS endpoint without TLS settings before connecting
        (true, None) => return Outcome::Inconclusive,
        (false, _) => client_config(None),
    };
    match config {
        Ok(config) => handshake(socket, config, endpoint, tls.is_some_and(TlsConfig::has_client_identity), addr),
        Err(reason) => Outcome::Failed(TlsFailure::Other(reason)),
    }
}

fn connect(addr: SocketAddr, timeout: Duration) -> Option<TcpStream> {
    let socket = TcpStream::connect_timeout(&addr, timeout).ok()?;
    socket.set_read_timeout(Some(timeout)).ok()?;
    socket.set_write_timeout(Some(timeout)).ok()?;
    Some(socket)
}

fn handshake(
    mut socket: TcpStream,
    config: ClientConfig,
    endpoint: &Endpoint,
    identity: bool,
    addr: SocketAddr,
) -> Outcome {
    let Ok(name) = ServerName::try_from(endpoint.host.clone()) else { return Outcome::Inconclusive };
    let Ok(mut tls) = ClientConnection::new(Arc::new(config), name) else { return Outcome::Inconclusive };
    while tls.is_handshaking() {
        if let Err(e) = tls.complete_io(&mut socket) {
            return classify_io(&e, endpoint.tls, identity, addr);
        }
    }
    if !endpoint.tls {
        // a plaintext endpoint whose server completed a handshake: it speaks TLS
        return Outcome::Failed(TlsFailure::PlaintextToTlsPort);
    }
    // With TLS 1.3 the server checks our certificate after our side is done: give it a moment.
    if socket.set_read_timeout(Some(AFTER_HANDSHAKE)).is_err() {
        return Outcome::Inconclusive;
    }
    match tls.complete_io(&mut socket) {
        Err(e) if !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            classify_io(&e, true, identity, addr)
        }
        _ => Outcome::Inconclusive,
    }
}

fn classify_io(e: &std::io::Error, tls_endpoint: bool, identity: bool, addr: SocketAddr) -> Outcome {
    use std::io::ErrorKind;
    if let Some(tls_error) = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        return match (tls_endpoint, classify_tls(tls_error, identity)) {
            (false, Some(TlsFailure::PlaintextToTlsPort)) => Outcome::Failed(TlsFailure::PlaintextToTlsPort),
            (true, Some(failure)) if failure != TlsFailure::PlaintextToTlsPort => Outcome::Failed(failure),
            _ => Outcome::Inconclusive,
        };
    }
    match e.kind() {
        ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe
            if tls_endpoint && speaks_zookeeper_plaintext(addr) =>
        {
            Outcome::Failed(TlsFailure::NotTls)
        }
        ErrorKind::WouldBlock | ErrorKind::TimedOut => Outcome::Unreachable,
        _ => Outcome::Inconclusive,
    }
}

/// The failure a rustls error stands for; `None` when it says nothing definite.
fn classify_tls(e: &rustls::Error, identity: bool) -> Option<TlsFailure> {
    use rustls::Error as E;
    use AlertDescription as A;
    Some(match e {
        E::General(reason) if reason == SPEAKS_TLS => TlsFailure::PlaintextToTlsPort,
        // BadSignature: a trusted CA's name, but not its signature (another CA of that name)
        E::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature) => {
            TlsFailure::UnknownCa
        }
        E::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => TlsFailure::CertificateExpired,
        E::InvalidCertificate(CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }) => {
            TlsFailure::HostnameMismatch
        }
        E::InvalidCertificate(other) => TlsFailure::BadCertificate(format!("{other:?}")),
        E::AlertReceived(A::CertificateRequired) => TlsFailure::ClientCertificateRequired,
        E::AlertReceived(
            alert @ (A::HandshakeFailure
            | A::BadCertificate
            | A::UnsupportedCertificate
            | A::CertificateRevoked
            | A::CertificateExpired
            | A::CertificateUnknown
            | A::UnknownCA
            | A::AccessDenied
            | A::DecryptError),
        ) => match identity {
            false => TlsFailure::ClientCertificateRequired,
            true => TlsFailure::ClientCertificateRejected(format!("{alert:?}")),
        },
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            TlsFailure::NotTls
        }
        _ => return None,
    })
}

/// Whether the server at `addr` answers a plaintext four-letter word (any ZooKeeper server does,
/// if only to say that the word is not allowed).
fn speaks_zookeeper_plaintext(addr: SocketAddr) -> bool {
    let Some(mut socket) = connect(addr, PROBE_TIMEOUT) else { return false };
    let mut reply = [0u8; 64];
    socket.write_all(b"srvr").is_ok() && socket.read(&mut reply).is_ok_and(|n| n > 0 && reply[..n].is_ascii())
}

/// The probe's client configuration: `tls`'s trust and identity, or (`None`, for a plaintext
/// endpoint) a verifier that stops at the first certificate the server presents.
fn client_config(tls: Option<&TlsConfig>) -> Result<ClientConfig, String> {
    // feature `fips`: the same FIPS module and suites as the sessions' connections
    #[cfg(feature = "fips")]
    let provider = Arc::new(rustls::crypto::default_fips_provider());
    #[cfg(not(feature = "fips"))]
    let provider = CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let Some(tls) = tls else {
        let verifier = ProbeVerifier { webpki: None, verify_hostname: false, provider };
        return Ok(builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)).with_no_client_auth());
    };
    let mut roots = rustls::RootCertStore::empty();
    let mut crls = Vec::new();
    for item in rustls_pemfile::read_all(&mut tls.ca_pem.as_bytes()) {
        match item.map_err(|e| e.to_string())? {
            rustls_pemfile::Item::X509Certificate(cert) => roots.add(cert).map_err(|e| e.to_string())?,
            rustls_pemfile::Item::Crl(crl) => crls.push(crl),
            _ => {}
        }
    }
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .with_crls(crls)
        .build()
        .map_err(|e| e.to_string())?;
    let verifier = ProbeVerifier { webpki: Some(webpki), verify_hostname: tls.verify_hostname, provider };
    let builder = builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier));
    match &tls.identity {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = rustls_pemfile::certs(&mut cert.as_bytes()).collect::<Result<Vec<_>, _>>();
            let key = rustls_pemfile::private_key(&mut key.as_bytes());
            match (chain, key) {
                (Ok(chain), Ok(Some(key))) => builder.with_client_auth_cert(chain, key).map_err(|e| e.to_string()),
                _ => Err("unreadable client certificate or key".into()),
            }
        }
    }
}

/// webpki's verification, with the hostname check optional (as zookeeper-client does it); with
/// no webpki verifier, refuses every certificate with [`SPEAKS_TLS`].
#[derive(Debug)]
struct ProbeVerifier {
    webpki: Option<Arc<WebPkiServerVerifier>>,
    verify_hostname: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ProbeVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else { return Err(rustls::Error::General(SPEAKS_TLS.into())) };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.verify_hostname => Ok(ServerCertVerified::assertion()),
            verified => verified,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::{endpoints, Endpoint};

    #[test]
    fn connect_strings_name_their_endpoints() {
        let ep = |host: &str, port, tls| Endpoint { host: host.into(), port, tls };
        assert_eq!(endpoints("127.0.0.1:2281", true), vec![ep("127.0.0.1", 2281, true)]);
        assert_eq!(
            endpoints("tcp://a:1,tcp+tls://b:2,c/chroot", false),
            vec![ep("a", 1, false), ep("b", 2, true), ep("c", 2181, false)]
        );
        assert_eq!(endpoints("[::1]:7,[::1]", true), vec![ep("::1", 7, true), ep("::1", 2181, true)]);
        assert!(endpoints("", true).is_empty());
    }

    /// Feature `fips`: the build check that the FIPS module is linked and in use (the
    /// sessions' connections are made the same way, by zookeeper-client's `with_fips`).
    #[cfg(feature = "fips")]
    #[test]
    fn with_fips_the_probe_runs_in_fips_mode() {
        let certs = zk_recipes_testing::TestCertificates::generate().expect("certificates");
        let tls = super::TlsConfig::from_ca_file(certs.ca_path()).expect("CA");
        assert!(super::client_config(Some(&tls)).expect("client config").fips());
        assert!(super::client_config(None).expect("plaintext probe config").fips());
    }
}
