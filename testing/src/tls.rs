//! TLS for test servers: a throwaway certificate authority with server and client certificates
//! (made with `rcgen`), and the `zoo.cfg` lines that make ZooKeeper 3.8 serve TLS with them.
//! The whole module is the `tls` feature.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

use crate::{Error, Result};

/// The connection factory that serves `secureClientPort` (the default NIO one cannot).
const NETTY_FACTORY: &str = "org.apache.zookeeper.server.NettyServerCnxnFactory";

/// A certificate authority and the certificates it signed, as PEM files in a temp dir of their
/// own (removed on drop): what a TLS test server and its clients use.
///
/// The server and client certificates name `localhost` and `127.0.0.1` (the servers listen on
/// loopback) and are valid for as long as tests will run (rcgen's default validity, into the
/// 41st century), or expired since 2020 with
/// [`generate_expired`](Self::generate_expired). Keys are ECDSA P-256, PKCS#8 PEM, which both
/// ZooKeeper's `PEM` key stores and rustls read.
///
/// ```no_run
/// # fn demo() -> zk_recipes_testing::Result<()> {
/// use zk_recipes_testing::TestCertificates;
///
/// let certs = TestCertificates::generate()?;
/// let ca_pem = std::fs::read_to_string(certs.ca_path())?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub struct TestCertificates {
    dir: TempDir,
}

impl TestCertificates {
    /// A new CA, and server and client certificates that stay valid.
    ///
    /// # Errors
    /// [`Error::Io`] when the files cannot be written or a certificate cannot be made.
    pub fn generate() -> Result<Self> {
        Self::make(false)
    }

    /// A new CA, and server and client certificates that expired in 2020 (the CA is valid).
    ///
    /// # Errors
    /// As [`generate`](Self::generate).
    pub fn generate_expired() -> Result<Self> {
        Self::make(true)
    }

    fn make(expired: bool) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("zk-test-tls-").tempdir()?;
        let ca_key = KeyPair::generate().map_err(cert_error)?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        // a name of its own: two test CAs are told apart by name, as real ones are
        ca.distinguished_name.push(DnType::CommonName, format!("zk-recipes test CA {:016x}", fastrand::u64(..)));
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_cert = ca.self_signed(&ca_key).map_err(cert_error)?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf = |name: &str, usage: ExtendedKeyUsagePurpose| -> Result<(String, String)> {
            let key = KeyPair::generate().map_err(cert_error)?;
            let mut params =
                CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).map_err(cert_error)?;
            params.distinguished_name.push(DnType::CommonName, name);
            params.extended_key_usages = vec![usage];
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
            if expired {
                params.not_before = rcgen::date_time_ymd(2019, 1, 1);
                params.not_after = rcgen::date_time_ymd(2020, 1, 1);
            }
            let cert = params.signed_by(&key, &issuer).map_err(cert_error)?;
            Ok((cert.pem(), key.serialize_pem()))
        };
        let (server_cert, server_key) = leaf("zookeeper test server", ExtendedKeyUsagePurpose::ServerAuth)?;
        let (client_cert, client_key) = leaf("zk-recipes test client", ExtendedKeyUsagePurpose::ClientAuth)?;
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text);
        write("ca.pem", &ca_cert.pem())?;
        // ZooKeeper's PEM key store: the key and the certificate in one file
        write("server.pem", &format!("{server_key}{server_cert}"))?;
        write("server-cert.pem", &server_cert)?;
        write("client-cert.pem", &client_cert)?;
        write("client-key.pem", &client_key)?;
        // the same for a Java client (a PEM key store: key and certificate in one file)
        write("client.pem", &format!("{client_key}{client_cert}"))?;
        Ok(TestCertificates { dir })
    }

    /// The CA certificate (PEM): what clients trust.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server's certificate (PEM).
    pub fn server_cert_path(&self) -> PathBuf {
        self.dir.path().join("server-cert.pem")
    }

    /// The server's key store: its private key and certificate in one PEM file.
    pub fn server_key_store_path(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The client certificate (PEM), for mutual TLS.
    pub fn client_cert_path(&self) -> PathBuf {
        self.dir.path().join("client-cert.pem")
    }

    /// The client's private key (PKCS#8 PEM), for mutual TLS.
    pub fn client_key_path(&self) -> PathBuf {
        self.dir.path().join("client-key.pem")
    }

    /// The client's key store: its private key and certificate in one PEM file, as a Java
    /// ZooKeeper client reads it (`zookeeper.ssl.keyStore.type=PEM`).
    pub fn client_key_store_path(&self) -> PathBuf {
        self.dir.path().join("client.pem")
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A server's TLS settings: whose certificates, and whether clients must present one.
#[derive(Debug, Clone)]
pub(crate) struct TlsSettings {
    pub certs: Arc<TestCertificates>,
    pub client_auth: bool,
}

impl TlsSettings {
    /// The `zoo.cfg` lines besides `secureClientPort` (ZooKeeper passes unknown keys on as
    /// `zookeeper.*` system properties, which is where it reads these from).
    pub fn zoo_cfg(&self) -> Vec<(String, String)> {
        let certs = &self.certs;
        let store = certs.server_key_store_path().display().to_string();
        let trust = certs.ca_path().display().to_string();
        [
            ("serverCnxnFactory", NETTY_FACTORY.to_owned()),
            ("ssl.keyStore.location", store),
            ("ssl.keyStore.type", "PEM".to_owned()),
            ("ssl.trustStore.location", trust),
            ("ssl.trustStore.type", "PEM".to_owned()),
            ("ssl.clientAuth", if self.client_auth { "need" } else { "none" }.to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

/// The TLS ports of the kit's running servers: `127.0.0.1:SECURE` → the same server's plaintext
/// `127.0.0.1:PORT` and its certificates. [`fixtures::framework`](crate::fixtures::framework)
/// connects to a TLS port with these certificates, and [`expire_session`](crate::expire_session)
/// sends its impostor to the plaintext port.
static SECURE_PORTS: Mutex<Vec<(String, String, Arc<TestCertificates>)>> = Mutex::new(Vec::new());

fn secure_ports() -> std::sync::MutexGuard<'static, Vec<(String, String, Arc<TestCertificates>)>> {
    SECURE_PORTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records a running server's TLS port (until [`forget_secure_port`]).
pub(crate) fn register_secure_port(secure: String, plain: String, certs: Arc<TestCertificates>) {
    secure_ports().push((secure, plain, certs));
}

/// Forgets a TLS port recorded by [`register_secure_port`] (its server stopped for good).
pub(crate) fn forget_secure_port(secure: &str) {
    secure_ports().retain(|(s, _, _)| s != secure);
}

/// For `host:port` (or `tcp+tls://host:port`) of a running kit server's TLS port: the plaintext
/// `host:port` of the same server and the certificates it serves.
pub(crate) fn secure_port(addr: &str) -> Option<(String, Arc<TestCertificates>)> {
    let addr = addr.trim();
    let addr = addr.strip_prefix("tcp+tls://").unwrap_or(addr);
    secure_ports().iter().find(|(s, _, _)| s == addr).map(|(_, plain, certs)| (plain.clone(), certs.clone()))
}

fn cert_error(e: rcgen::Error) -> Error {
    Error::io(format!("cannot make a test certificate: {e}"))
}
