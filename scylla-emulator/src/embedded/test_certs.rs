//! Certificates for TLS tests, made at run time: a CA, server certificates for the
//! cluster's addresses and client certificates for mutual TLS (no key is checked in).

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A certificate and its private key, both PEM.
#[derive(Clone)]
pub struct TestCertificate {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM, PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for TestCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCertificate").finish_non_exhaustive()
    }
}

/// A certificate authority for tests: signs server and client certificates. Clones share
/// the CA.
#[derive(Clone)]
pub struct TestCa {
    cert_pem: String,
    issuer: Arc<Issuer<'static, KeyPair>>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa").finish_non_exhaustive()
    }
}

/// An error making a test certificate.
#[derive(Debug, thiserror::Error)]
#[error("cannot make a test certificate: {0}")]
pub struct TestCertError(#[from] rcgen::Error);

impl TestCa {
    /// A new self-signed CA whose subject's common name is `name`.
    pub fn new(name: &str) -> Result<TestCa, TestCertError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert_pem = params.self_signed(&key)?.pem();
        Ok(TestCa {
            cert_pem,
            issuer: Arc::new(Issuer::new(params, key)),
        })
    }

    /// The CA's certificate (PEM): what a client's `--tls-ca-file` holds.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A server certificate for `ips` and DNS `names` (subject alternative names).
    pub fn server_cert(
        &self,
        ips: &[IpAddr],
        names: &[&str],
    ) -> Result<TestCertificate, TestCertError> {
        let mut sans: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        sans.extend(ips.iter().map(|ip| ip.to_string()));
        let mut params = CertificateParams::new(sans)?;
        params.distinguished_name.push(
            DnType::CommonName,
            names.first().copied().unwrap_or("server"),
        );
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate whose subject's common name is `name`.
    pub fn client_cert(&self, name: &str) -> Result<TestCertificate, TestCertError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<TestCertificate, TestCertError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &*self.issuer)?;
        Ok(TestCertificate {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}
