//! The TLS settings of a cluster ([`TlsFiles`], set by [`ClusterBuilder::tls`] and its
//! siblings) and the acceptor of its TLS ports made from them when the cluster starts: from
//! a PEM certificate chain and key, checked before anything is bound, or signed by a
//! [`TestCa`] for the addresses the cluster has just bound. A cluster whose native ports
//! speak TLS only ([`ClusterBuilder::tls_only`]) also gets the client side of
//! [`EmbeddedCluster::session`](super::EmbeddedCluster::session): it trusts exactly the
//! server certificate the cluster was started with, whatever the addresses and names.
//!
//! [`ClusterBuilder::tls`]: super::ClusterBuilder::tls
//! [`ClusterBuilder::tls_only`]: super::ClusterBuilder::tls_only

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio_rustls::TlsAcceptor;

use crate::server::listen::AddressPlan;
use crate::server::tls::acceptor;

use super::test_certs::TestCa;

/// The TLS settings of a cluster (see [`ClusterBuilder::tls`](super::ClusterBuilder::tls)).
#[derive(Clone)]
pub(super) struct TlsFiles {
    /// Where the server certificate comes from.
    pub(super) source: TlsSource,
    /// The CA certificates (PEM) that client certificates must be signed by (mutual TLS).
    pub(super) client_ca: Option<Vec<u8>>,
    /// The TLS port of every node (0: a free port).
    pub(super) port: u16,
    /// The shard-aware TLS port of every node (0: a free port).
    pub(super) shard_aware_port: u16,
    /// The native ports themselves speak TLS, and there are no TLS ports besides them.
    pub(super) only: bool,
}

/// The acceptor of a cluster's TLS and the server certificate it presents.
pub(super) struct Served {
    pub(super) acceptor: TlsAcceptor,
    /// The server's certificate chain (PEM, leaf first).
    pub(super) chain_pem: Vec<u8>,
}

/// Where the server certificate comes from.
#[derive(Clone)]
pub(super) enum TlsSource {
    /// Not given yet (only client CA or ports were set).
    Missing,
    /// A certificate chain and key, PEM.
    Pem { cert_chain: Vec<u8>, key: Vec<u8> },
    /// Made at start by a test CA, for every address of the cluster's range and these names.
    Ca { ca: TestCa, names: Vec<String> },
}

impl TlsFiles {
    /// Settings without a certificate, on free ports.
    pub(super) fn new() -> TlsFiles {
        TlsFiles {
            source: TlsSource::Missing,
            client_ca: None,
            port: 0,
            shard_aware_port: 0,
            only: false,
        }
    }

    /// The acceptor of a certificate given as PEM, `None` for one a test CA signs at start;
    /// an error for settings without a certificate or with one that does not load.
    pub(super) fn pem_acceptor(&self) -> Result<Option<Served>, String> {
        match &self.source {
            TlsSource::Missing => {
                Err("TLS settings without a certificate (ClusterBuilder::tls)".into())
            }
            TlsSource::Pem { cert_chain, key } => {
                let acceptor = acceptor(cert_chain, key, self.client_ca.as_deref())?;
                Ok(Some(Served {
                    acceptor,
                    chain_pem: cert_chain.clone(),
                }))
            }
            TlsSource::Ca { .. } => Ok(None),
        }
    }

    /// The acceptor of a certificate that the test CA signs for every address of `plan`'s
    /// range and the settings' DNS names; `None` when the certificate was given as PEM.
    pub(super) fn ca_acceptor(&self, plan: &AddressPlan) -> Result<Option<Served>, String> {
        let TlsSource::Ca { ca, names } = &self.source else {
            return Ok(None);
        };
        let ips: Vec<std::net::IpAddr> = (1..=255)
            .filter_map(|i| plan.node_ip(i))
            .map(Into::into)
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let cert = ca.server_cert(&ips, &names).map_err(|e| e.to_string())?;
        let acceptor = acceptor(
            cert.cert_pem.as_bytes(),
            cert.key_pem.as_bytes(),
            self.client_ca.as_deref(),
        )?;
        Ok(Some(Served {
            acceptor,
            chain_pem: cert.cert_pem.into_bytes(),
        }))
    }

    /// The client side of the cluster's own sessions when its native ports speak TLS only:
    /// trusts exactly the leaf of `served` and, when client certificates are required and a
    /// test CA signs the server's, presents one that CA signs (with a PEM certificate and
    /// mutual TLS, it has no client certificate to present and the cluster refuses it).
    pub(super) fn session_config(&self, served: &Served) -> Result<Arc<ClientConfig>, String> {
        let leaf = CertificateDer::pem_slice_iter(&served.chain_pem)
            .next()
            .ok_or("the TLS certificate: no PEM certificate found")?
            .map_err(|e| format!("the TLS certificate: {e}"))?;
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS protocol versions: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Pinned { leaf, provider }));
        let config = match (&self.source, &self.client_ca) {
            (TlsSource::Ca { ca, .. }, Some(_)) => {
                let client = ca
                    .client_cert("scylla-emulator session")
                    .map_err(|e| e.to_string())?;
                let chain = CertificateDer::pem_slice_iter(client.cert_pem.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("the session's client certificate: {e}"))?;
                let key = PrivateKeyDer::from_pem_slice(client.key_pem.as_bytes())
                    .map_err(|e| format!("the session's client key: {e}"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("the session's client certificate: {e}"))?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }
}

/// Accepts exactly one server certificate (the cluster's own), checking the handshake's
/// signatures with it.
#[derive(Debug)]
struct Pinned {
    leaf: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.leaf.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "not the embedded cluster's own certificate".into(),
            ))
        }
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
            &self.provider.signature_verification_algorithms,
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
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key stays out of debug output.
        f.debug_struct("TlsFiles")
            .field("client_certificates_required", &self.client_ca.is_some())
            .field("port", &self.port)
            .field("shard_aware_port", &self.shard_aware_port)
            .field("only", &self.only)
            .finish_non_exhaustive()
    }
}
