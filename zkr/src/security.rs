//! `--tls-*` and `--sasl-*`: the framework's TLS and SASL settings from the command line.

use zk_recipes::{FrameworkBuilder, SaslConfig, TlsConfig};

use crate::args::Security;
use crate::exit::{CliError, CliResult};

/// `builder` with the TLS and SASL settings the options ask for. With `--tls-ca` every server
/// of `--connect` is TLS.
///
/// # Errors
/// A usage error (exit 2) for a file that cannot be read.
pub fn apply(options: &Security, mut builder: FrameworkBuilder) -> CliResult<FrameworkBuilder> {
    if let Some(ca) = &options.tls_ca {
        let mut tls = TlsConfig::from_ca_file(ca)?.danger_accept_invalid_hostnames(options.tls_no_verify_hostname);
        if let (Some(cert), Some(key)) = (&options.tls_cert, &options.tls_key) {
            tls = tls.with_client_identity_files(cert, key)?;
        }
        builder = builder.tls(tls);
    }
    if let (Some(user), Some(file)) = (&options.sasl_user, &options.sasl_password_file) {
        let text = std::fs::read_to_string(file)
            .map_err(|e| CliError::usage(format!("cannot read the SASL password file {}: {e}", file.display())))?;
        let password = text.lines().next().unwrap_or_default();
        builder = builder.sasl(SaslConfig::digest_md5(user.clone(), password));
    }
    Ok(builder)
}
