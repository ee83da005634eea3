//! What the printer and the replicator share to reach a secured cluster: credentials that
//! come from the environment or a file instead of the command line, and the TLS context
//! handed to the driver (its rustls support, `SessionBuilder::tls_context`).
//!
//! A [`Password`] is never printed: it has no `Display`, its `Debug` is `Password(***)`, and
//! nothing in either program formats it; only [`Password::expose`] hands it to the driver.
//!
//! TLS verifies the server's certificate against the CA file (or the system's trusted
//! roots) and its name: the driver connects to a node's IP address, so by default the
//! certificate must name that IP; `--tls-server-name` checks a DNS name instead (one
//! certificate for every node, as in most deployments). Turning verification off takes
//! `--tls-insecure-skip-verify` and logs a warning.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientConfig, WebPkiServerVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tracing::warn;

/// A setting of credentials or TLS that cannot be used: a usage error of the program (the
/// command line or the files it names), one line, never holding a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError(String);

impl SettingError {
    fn new(message: impl Into<String>) -> Self {
        SettingError(message.into())
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingError {}

/// A password. It is never printed; [`Password::expose`] is for the driver only.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl Password {
    /// Wraps a password.
    pub fn new(password: impl Into<String>) -> Self {
        Self(password.into())
    }

    /// The password itself, to hand to the driver.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(***)")
    }
}

impl From<&str> for Password {
    fn from(p: &str) -> Self {
        Self::new(p)
    }
}

impl From<String> for Password {
    fn from(p: String) -> Self {
        Self::new(p)
    }
}

/// A user name and its password.
pub type Credentials = (String, Password);

/// The means of giving one cluster's credentials: flags, a password file, the environment.
#[derive(Debug, Clone, Copy)]
pub struct CredentialFlags<'a> {
    /// The user flag (`--user`, `--source-user`).
    pub user_flag: &'a str,
    /// The password flag (`--password`).
    pub password_flag: &'a str,
    /// The password file flag (`--password-file`).
    pub password_file_flag: &'a str,
    /// The environment variable of the user (`SCYLLA_USER`).
    pub user_env: &'a str,
    /// The environment variable of the password (`SCYLLA_PASSWORD`).
    pub password_env: &'a str,
}

/// Resolves one cluster's credentials: the user from its flag or else its environment
/// variable; the password from its flag (warned about: other users of the machine see it),
/// its file (the file's first line, without the line end) or else its environment variable.
/// A user without a password, or a password without a user, is a usage error.
pub fn resolve_credentials(
    names: CredentialFlags<'_>,
    user: Option<String>,
    password: Option<String>,
    password_file: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<Credentials>, SettingError> {
    let user = user.or_else(|| env(names.user_env).filter(|u| !u.is_empty()));
    let password = match (password, password_file) {
        (Some(_), Some(_)) => {
            return Err(SettingError::new(format!(
                "give {} or {}, not both",
                names.password_flag, names.password_file_flag
            )));
        }
        (Some(p), None) => {
            warn!(
                "{} puts the password on the command line, where other users of the machine \
                 can read it; prefer {} or {}",
                names.password_flag, names.password_env, names.password_file_flag
            );
            Some(p)
        }
        (None, Some(path)) => Some(read_password_file(path, names.password_file_flag)?),
        (None, None) => env(names.password_env),
    };
    match (user, password) {
        (Some(user), Some(password)) => Ok(Some((user, Password::new(password)))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(SettingError::new(format!(
            "{} needs a password: {}, {} or {}",
            names.user_flag, names.password_env, names.password_file_flag, names.password_flag
        ))),
        (None, Some(_)) => Err(SettingError::new(format!(
            "a password needs a user: {} or {}",
            names.user_flag, names.user_env
        ))),
    }
}

/// The password in `path`: its first line, without the line end.
fn read_password_file(path: &Path, flag: &str) -> Result<String, SettingError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SettingError::new(format!("{flag}: cannot read {}: {e}", path.display())))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(SettingError::new(format!(
            "{flag}: {} holds no password on its first line",
            path.display()
        )));
    }
    Ok(line.to_string())
}

/// The TLS settings of one cluster connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// CA certificates (PEM) that sign the server's certificate; default: the system's.
    pub ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM), for clusters that require one.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    pub key_file: Option<PathBuf>,
    /// The name the server's certificate must carry (default: the node's IP address).
    pub server_name: Option<String>,
    /// No verification of the server's certificate at all.
    pub insecure_skip_verify: bool,
}

/// The TLS flags of one cluster connection, as given, checked into [`TlsOptions`].
#[derive(Debug, Clone, Default)]
pub struct TlsFlags {
    /// `--tls`.
    pub tls: bool,
    /// `--tls-ca-file`.
    pub ca_file: Option<PathBuf>,
    /// `--tls-cert-file`.
    pub cert_file: Option<PathBuf>,
    /// `--tls-key-file`.
    pub key_file: Option<PathBuf>,
    /// `--tls-server-name`.
    pub server_name: Option<String>,
    /// `--tls-insecure-skip-verify`.
    pub insecure_skip_verify: bool,
}

impl TlsFlags {
    /// `None` without TLS. Any TLS flag turns TLS on (as `--tls` alone does); a
    /// certificate needs its key and the other way round. `prefix` is the flags' prefix in
    /// messages (`--tls`, `--source-tls`).
    pub fn into_options(self, prefix: &str) -> Result<Option<TlsOptions>, SettingError> {
        let any = self.tls
            || self.ca_file.is_some()
            || self.cert_file.is_some()
            || self.key_file.is_some()
            || self.server_name.is_some()
            || self.insecure_skip_verify;
        if !any {
            return Ok(None);
        }
        if self.cert_file.is_some() != self.key_file.is_some() {
            return Err(SettingError::new(format!(
                "{prefix}-cert-file and {prefix}-key-file go together"
            )));
        }
        if let Some(name) = &self.server_name {
            ServerName::try_from(name.clone())
                .map_err(|e| SettingError::new(format!("{prefix}-server-name {name:?}: {e}")))?;
        }
        Ok(Some(TlsOptions {
            ca_file: self.ca_file,
            cert_file: self.cert_file,
            key_file: self.key_file,
            server_name: self.server_name,
            insecure_skip_verify: self.insecure_skip_verify,
        }))
    }
}

/// The crypto provider of every context: the driver's rustls default (aws-lc-rs), named so
/// that it does not depend on a process-wide default being installed.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl TlsOptions {
    /// Builds the driver's TLS context; `what` names the cluster in errors ("the source
    /// cluster"). A file that cannot be read or parsed is a usage error; nothing is contacted.
    pub fn client_config(&self, what: &str) -> Result<Arc<ClientConfig>, SettingError> {
        let bad = |m: String| SettingError::new(format!("TLS to {what}: {m}"));
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?;
        let verifier: Arc<dyn ServerCertVerifier> = if self.insecure_skip_verify {
            warn!(
                "TLS to {what}: --tls-insecure-skip-verify: the server's certificate is NOT \
                 verified; anyone on the network path can read and change the traffic"
            );
            Arc::new(NoVerification(provider))
        } else {
            let mut roots = RootCertStore::empty();
            match &self.ca_file {
                Some(path) => {
                    for cert in read_certificates(path).map_err(bad)? {
                        roots
                            .add(cert)
                            .map_err(|e| bad(format!("{}: {e}", path.display())))?;
                    }
                }
                None => {
                    let found = rustls_native_certs::load_native_certs();
                    let (added, _) = roots.add_parsable_certificates(found.certs);
                    if added == 0 {
                        return Err(bad(
                            "no trusted CA certificates found on this system; give a CA file"
                                .into(),
                        ));
                    }
                }
            }
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| bad(e.to_string()))?;
            let name = match &self.server_name {
                Some(n) => Some(ServerName::try_from(n.clone()).map_err(|e| bad(e.to_string()))?),
                None => None,
            };
            Arc::new(NamedVerification { webpki, name })
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                let chain = read_certificates(cert).map_err(bad)?;
                let key_der = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| bad(format!("{}: {e}", key.display())))?;
                builder
                    .with_client_auth_cert(chain, key_der)
                    .map_err(|e| bad(format!("client certificate: {e}")))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

/// The certificates of a PEM file; at least one.
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate found", path.display()));
    }
    Ok(certs)
}

/// The WebPKI verification of the server's certificate, against `name` when one is
/// configured instead of the node's IP address the driver connects to.
#[derive(Debug)]
struct NamedVerification {
    webpki: Arc<WebPkiServerVerifier>,
    name: Option<ServerName<'static>>,
}

impl ServerCertVerifier for NamedVerification {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = self.name.as_ref().unwrap_or(server_name);
        self.webpki
            .verify_server_cert(end_entity, intermediates, name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `--tls-insecure-skip-verify`: any certificate is accepted (the handshake's signatures are
/// still checked, so the connection is encrypted, but to whoever answers).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: CredentialFlags<'static> = CredentialFlags {
        user_flag: "--user",
        password_flag: "--password",
        password_file_flag: "--password-file",
        user_env: "SCYLLA_USER",
        password_env: "SCYLLA_PASSWORD",
    };

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn passwords_never_print() {
        let p = Password::new("hunter2");
        assert_eq!(format!("{p:?}"), "Password(***)");
        let creds: Credentials = ("u".into(), p);
        assert!(!format!("{creds:?}").contains("hunter2"));
    }

    #[test]
    fn credentials_come_from_flags_file_or_environment() {
        let from_env = resolve_credentials(
            NAMES,
            None,
            None,
            None,
            env(&[("SCYLLA_USER", "eu"), ("SCYLLA_PASSWORD", "ep")]),
        )
        .expect("env");
        assert_eq!(from_env, Some(("eu".into(), "ep".into())));

        let dir = std::env::temp_dir().join(format!("secure-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("pw");
        std::fs::write(&file, "filepw\n").expect("write");
        let from_file = resolve_credentials(
            NAMES,
            Some("fu".into()),
            None,
            Some(&file),
            env(&[("SCYLLA_PASSWORD", "ep")]),
        )
        .expect("file");
        assert_eq!(from_file, Some(("fu".into(), "filepw".into())));
        std::fs::write(&file, "\n").expect("write");
        let empty = resolve_credentials(NAMES, Some("u".into()), None, Some(&file), env(&[]))
            .expect_err("an empty file");
        assert!(empty.to_string().contains("no password"), "{empty}");
        std::fs::remove_dir_all(&dir).expect("cleanup");

        let missing = resolve_credentials(
            NAMES,
            Some("u".into()),
            None,
            Some(Path::new("/nonexistent/pw")),
            env(&[]),
        )
        .expect_err("a missing file");
        assert_eq!(
            crate::cli::CliError::from(missing.clone()).exit_code(),
            crate::cli::exit_code::USAGE
        );

        let no_password = resolve_credentials(NAMES, Some("u".into()), None, None, env(&[]))
            .expect_err("user without password");
        assert!(no_password.to_string().contains("needs a password"));
        let no_user =
            resolve_credentials(NAMES, None, None, None, env(&[("SCYLLA_PASSWORD", "x")]))
                .expect_err("password without user");
        assert!(no_user.to_string().contains("needs a user"));
        assert_eq!(
            resolve_credentials(NAMES, None, None, None, env(&[])).expect("none"),
            None
        );
    }

    #[test]
    fn tls_flags_need_their_pairs() {
        assert_eq!(
            TlsFlags::default().into_options("--tls").expect("off"),
            None
        );
        let on = TlsFlags {
            ca_file: Some("ca.pem".into()),
            ..TlsFlags::default()
        };
        assert!(on.into_options("--tls").expect("on").is_some());
        let half = TlsFlags {
            tls: true,
            cert_file: Some("c.pem".into()),
            ..TlsFlags::default()
        };
        let e = half
            .into_options("--source-tls")
            .expect_err("cert without key");
        assert!(e.to_string().contains("--source-tls-key-file"), "{e}");
    }

    #[test]
    fn an_unreadable_ca_file_is_a_usage_error() {
        let options = TlsOptions {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        let e = options.client_config("the cluster").expect_err("no file");
        assert_eq!(
            crate::cli::CliError::from(e.clone()).exit_code(),
            crate::cli::exit_code::USAGE
        );
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }
}
