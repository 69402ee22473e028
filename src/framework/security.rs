//! Transport security settings: TLS (feature `tls`) and SASL (features `sasl`, `sasl-gssapi`).
//!
//! Both are kept in the framework's configuration and handed to zookeeper-client for every
//! session the framework opens, the first one and each one it re-creates after a loss.

#[cfg(feature = "tls")]
pub(crate) use tls::LiveTls;
#[cfg(feature = "tls")]
pub use tls::TlsConfig;

#[cfg(feature = "tls")]
mod tls {
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, RwLock};

    use crate::error::{Error, Result};

    /// TLS to the ensemble: the certificate authorities that sign the servers' certificates,
    /// optionally a client certificate (mutual TLS), and whether the server's certificate must
    /// name the host connected to (on by default).
    ///
    /// Certificates and keys are PEM, as ZooKeeper 3.8's `ssl.keyStore.type=PEM` reads them.
    /// Give it to [`FrameworkBuilder::tls`](crate::FrameworkBuilder::tls). Settings read from
    /// files ([`from_ca_file`](Self::from_ca_file),
    /// [`with_client_identity_files`](Self::with_client_identity_files)) are read again by
    /// [`Framework::reload`](crate::Framework::reload), for certificate rotation.
    ///
    /// ```no_run
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use zk_recipes::{Framework, TlsConfig};
    ///
    /// let tls = TlsConfig::from_ca_file("/etc/zk/ca.pem")?
    ///     .with_client_identity_files("/etc/zk/client.pem", "/etc/zk/client-key.pem")?;
    /// let fw = Framework::builder().connect_string("zk1:2281,zk2:2281").tls(tls).connect().await?;
    /// # Ok(()) }
    /// ```
    #[must_use = "a TLS configuration does nothing until given to FrameworkBuilder::tls"]
    #[derive(Clone, PartialEq, Eq)]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub struct TlsConfig {
        pub(crate) ca_pem: String,
        pub(crate) identity: Option<(String, String)>,
        pub(crate) verify_hostname: bool,
        /// Where the CA certificates were read from, to read them again on reload.
        ca_file: Option<PathBuf>,
        /// Where the client certificate and key were read from, likewise.
        identity_files: Option<(PathBuf, PathBuf)>,
    }

    impl std::fmt::Debug for TlsConfig {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // the key stays out of logs
            f.debug_struct("TlsConfig")
                .field("client_identity", &self.identity.is_some())
                .field("verify_hostname", &self.verify_hostname)
                .finish_non_exhaustive()
        }
    }

    impl TlsConfig {
        /// Trusts the certificate authorities in `ca_pem` (one or more PEM certificates; CRLs in
        /// it are honoured too). The PEM is checked when the framework is built.
        pub fn new(ca_pem: impl Into<String>) -> Self {
            TlsConfig {
                ca_pem: ca_pem.into(),
                identity: None,
                verify_hostname: true,
                ca_file: None,
                identity_files: None,
            }
        }

        /// As [`new`](Self::new), reading the PEM from `path`.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] when the file cannot be read.
        pub fn from_ca_file(path: impl AsRef<Path>) -> Result<Self> {
            let mut tls = Self::new(read(path.as_ref(), "CA certificate")?);
            tls.ca_file = Some(path.as_ref().to_owned());
            Ok(tls)
        }

        /// Presents a client certificate (chain, PEM) with its private key (PEM: PKCS#8, PKCS#1
        /// or SEC1) to servers that ask for one: mutual TLS.
        pub fn with_client_identity(mut self, cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
            self.identity = Some((cert_pem.into(), key_pem.into()));
            self.identity_files = None;
            self
        }

        /// As [`with_client_identity`](Self::with_client_identity), reading the PEM files.
        ///
        /// # Errors
        /// [`Error::InvalidArgument`] when a file cannot be read.
        pub fn with_client_identity_files(self, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Result<Self> {
            let (cert, key) = (cert.as_ref(), key.as_ref());
            let mut tls = self.with_client_identity(read(cert, "client certificate")?, read(key, "client key")?);
            tls.identity_files = Some((cert.to_owned(), key.to_owned()));
            Ok(tls)
        }

        /// **Weakens TLS.** With `true`, the server's certificate need not name the host (name
        /// or IP address) of the connect string: a trusted CA must still have signed it, but
        /// anyone holding *some* certificate of that CA can pose as the server. `false` (the
        /// default) checks the name. For ensembles reached through addresses their certificates
        /// do not list, until they are reissued.
        ///
        /// # Examples
        /// ```no_run
        /// # fn demo() -> zk_recipes::Result<()> {
        /// use zk_recipes::TlsConfig;
        ///
        /// // the certificates name zk1.internal..., the ensemble is reached by IP address
        /// let tls = TlsConfig::from_ca_file("/etc/zookeeper/ca.pem")?.danger_accept_invalid_hostnames(true);
        /// # Ok(()) }
        /// ```
        pub fn danger_accept_invalid_hostnames(mut self, accept: bool) -> Self {
            self.verify_hostname = !accept;
            self
        }

        /// Whether a client certificate is presented.
        pub fn has_client_identity(&self) -> bool {
            self.identity.is_some()
        }

        /// These settings with the files they were read from read again (PEM given as text
        /// stays as it is).
        fn reread(&self) -> Result<Self> {
            let mut tls = self.clone();
            if let Some(ca) = &self.ca_file {
                tls.ca_pem = read(ca, "CA certificate")?;
            }
            if let Some((cert, key)) = &self.identity_files {
                tls.identity = Some((read(cert, "client certificate")?, read(key, "client key")?));
            }
            Ok(tls)
        }

        /// The certificates, parsed (this is where bad PEM is found).
        pub(crate) fn certs(&self) -> Result<zookeeper_client::TlsCerts> {
            let bad = |what: &str, e: zookeeper_client::Error| Error::invalid("tls", format!("TLS {what}: {e}"));
            let ca = zookeeper_client::TlsCa::from_pem(&self.ca_pem).map_err(|e| bad("CA certificates", e))?;
            let mut certs = zookeeper_client::TlsCerts::builder().with_ca(ca);
            if let Some((cert, key)) = &self.identity {
                let identity = zookeeper_client::TlsIdentity::from_pem(cert, key)
                    .map_err(|e| bad("client certificate or key", e))?;
                certs = certs.with_identity(identity);
            }
            certs.build().map_err(|e| bad("certificates", e))
        }
    }

    /// The TLS settings a framework uses now, shared by all its sessions: every connection
    /// zookeeper-client makes (a reconnect of the current session, a re-created session) takes
    /// the certificates current at that moment, which [`reload`](Self::reload) replaces.
    #[derive(Clone)]
    pub(crate) struct LiveTls {
        current: Arc<RwLock<TlsConfig>>,
        certs: zookeeper_client::TlsDynamicCerts,
    }

    impl std::fmt::Debug for LiveTls {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.current().fmt(f)
        }
    }

    impl LiveTls {
        /// Checks `config`'s certificates and starts with them.
        pub(crate) fn new(config: TlsConfig) -> Result<Self> {
            let certs = zookeeper_client::TlsDynamicCerts::new(config.certs()?);
            Ok(LiveTls { current: Arc::new(RwLock::new(config)), certs })
        }

        /// The settings in use now.
        pub(crate) fn current(&self) -> TlsConfig {
            self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
        }

        /// Reads the certificate files again; on any error the certificates in use stay.
        pub(crate) fn reload(&self) -> Result<()> {
            let fresh = self.current().reread()?;
            self.certs.update(fresh.certs()?);
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh;
            Ok(())
        }

        /// zookeeper-client's options: the live certificates and the hostname setting.
        pub(crate) fn client_options(&self) -> zookeeper_client::TlsOptions {
            let options = zookeeper_client::TlsOptions::new().with_certs(self.certs.clone());
            // feature `fips`: the FIPS-validated AWS-LC module and FIPS-approved suites only
            #[cfg(feature = "fips")]
            let options = options.with_fips();
            if self.current().verify_hostname {
                return options;
            }
            // SAFETY: not a memory-safety matter; the client marks it `unsafe` because it
            // weakens authentication, which the caller asked for in `danger_accept_invalid_hostnames(true)`.
            unsafe { options.with_no_hostname_verification() }
        }
    }

    fn read(path: &Path, what: &str) -> Result<String> {
        std::fs::read_to_string(path)
            .map_err(|e| Error::invalid("tls", format!("cannot read the {what} file {}: {e}", path.display())))
    }
}

#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
pub use sasl::SaslConfig;

#[cfg(any(feature = "sasl", feature = "sasl-gssapi"))]
mod sasl {
    /// SASL authentication of every session: DIGEST-MD5 with a user and password (feature
    /// `sasl`), or Kerberos through GSSAPI (feature `sasl-gssapi`, using the ticket cache).
    /// Give it to [`FrameworkBuilder::sasl`](crate::FrameworkBuilder::sasl).
    ///
    /// A refusal surfaces as [`Error::AuthFailed`](crate::Error::AuthFailed) from `connect`.
    ///
    /// ```no_run
    /// # #[cfg(feature = "sasl")]
    /// # async fn demo() -> zk_recipes::Result<()> {
    /// use zk_recipes::{Framework, SaslConfig};
    ///
    /// let fw = Framework::builder()
    ///     .connect_string("zk1:2181")
    ///     .sasl(SaslConfig::digest_md5("app", "secret"))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[must_use = "a SASL configuration does nothing until given to FrameworkBuilder::sasl"]
    #[derive(Clone, PartialEq, Eq)]
    #[cfg_attr(docsrs, doc(cfg(any(feature = "sasl", feature = "sasl-gssapi"))))]
    pub struct SaslConfig(Mechanism);

    #[derive(Clone, PartialEq, Eq)]
    enum Mechanism {
        #[cfg(feature = "sasl")]
        DigestMd5 { user: String, password: String },
        #[cfg(feature = "sasl-gssapi")]
        Gssapi,
    }

    impl std::fmt::Debug for SaslConfig {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            // the password stays out of logs
            match &self.0 {
                #[cfg(feature = "sasl")]
                Mechanism::DigestMd5 { user, .. } => f.debug_struct("DigestMd5").field("user", user).finish(),
                #[cfg(feature = "sasl-gssapi")]
                Mechanism::Gssapi => f.write_str("Gssapi"),
            }
        }
    }

    impl SaslConfig {
        /// DIGEST-MD5 as `user` with `password` (a `user_<name>="<password>"` entry of the
        /// server's JAAS `Server` section).
        #[cfg(feature = "sasl")]
        #[cfg_attr(docsrs, doc(cfg(feature = "sasl")))]
        pub fn digest_md5(user: impl Into<String>, password: impl Into<String>) -> Self {
            SaslConfig(Mechanism::DigestMd5 { user: user.into(), password: password.into() })
        }

        /// Kerberos (GSSAPI) with the tickets in the default credential cache.
        #[cfg(feature = "sasl-gssapi")]
        #[cfg_attr(docsrs, doc(cfg(feature = "sasl-gssapi")))]
        pub fn gssapi() -> Self {
            SaslConfig(Mechanism::Gssapi)
        }

        /// zookeeper-client's options for these settings.
        pub(crate) fn client_options(&self) -> zookeeper_client::SaslOptions {
            match &self.0 {
                #[cfg(feature = "sasl")]
                Mechanism::DigestMd5 { user, password } => {
                    zookeeper_client::SaslOptions::digest_md5(user.clone(), password.clone()).into()
                }
                #[cfg(feature = "sasl-gssapi")]
                Mechanism::Gssapi => zookeeper_client::SaslOptions::gssapi().into(),
            }
        }
    }
}
