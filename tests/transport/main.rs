//! The transport: TLS, mutual TLS and SASL against real ZooKeeper 3.8 servers of this binary's
//! own (the testing kit's `.tls()` servers), and the typed errors of connections that cannot
//! work (wrong CA, expired certificate, missing client certificate, plaintext and TLS on the
//! wrong port, a wrong SASL password), each within the connection timeout.

mod negative;
mod rotation;
mod secure;

use std::time::Duration;

use zk_recipes::{Framework, FrameworkBuilder, RetryNTimes, TlsConfig};
use zk_recipes_testing::TestCertificates;

/// The connection timeout of every framework here: each error must come before it.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(8);

/// A builder for `cs` with the test timeouts.
pub fn builder(cs: &str) -> FrameworkBuilder {
    Framework::builder()
        .connect_string(cs)
        .session_timeout(Duration::from_secs(4))
        .connection_timeout(CONNECTION_TIMEOUT)
        .retry_policy(RetryNTimes::new(20, Duration::from_millis(100)))
}

/// TLS settings trusting `certs`' CA, with its client certificate when `mutual`.
pub fn tls(certs: &TestCertificates, mutual: bool) -> TlsConfig {
    let tls = TlsConfig::from_ca_file(certs.ca_path()).expect("CA file");
    match mutual {
        true => tls.with_client_identity_files(certs.client_cert_path(), certs.client_key_path()).expect("identity"),
        false => tls,
    }
}
