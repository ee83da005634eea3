//! The TLS settings of a cluster ([`TlsFiles`], set by [`ClusterBuilder::tls`] and its
//! siblings) and the acceptor of its TLS ports made from them when the cluster starts: from
//! a PEM certificate chain and key, checked before anything is bound, or signed by a
//! [`TestCa`] for the addresses the cluster has just bound.
//!
//! [`ClusterBuilder::tls`]: super::ClusterBuilder::tls

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
        }
    }

    /// The acceptor of a certificate given as PEM, `None` for one a test CA signs at start;
    /// an error for settings without a certificate or with one that does not load.
    pub(super) fn pem_acceptor(&self) -> Result<Option<TlsAcceptor>, String> {
        match &self.source {
            TlsSource::Missing => {
                Err("TLS settings without a certificate (ClusterBuilder::tls)".into())
            }
            TlsSource::Pem { cert_chain, key } => {
                acceptor(cert_chain, key, self.client_ca.as_deref()).map(Some)
            }
            TlsSource::Ca { .. } => Ok(None),
        }
    }

    /// The acceptor of a certificate that the test CA signs for every address of `plan`'s
    /// range and the settings' DNS names; `None` when the certificate was given as PEM.
    pub(super) fn ca_acceptor(&self, plan: &AddressPlan) -> Result<Option<TlsAcceptor>, String> {
        let TlsSource::Ca { ca, names } = &self.source else {
            return Ok(None);
        };
        let ips: Vec<std::net::IpAddr> = (1..=255)
            .filter_map(|i| plan.node_ip(i))
            .map(Into::into)
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let cert = ca.server_cert(&ips, &names).map_err(|e| e.to_string())?;
        acceptor(
            cert.cert_pem.as_bytes(),
            cert.key_pem.as_bytes(),
            self.client_ca.as_deref(),
        )
        .map(Some)
    }
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key stays out of debug output.
        f.debug_struct("TlsFiles")
            .field("client_certificates_required", &self.client_ca.is_some())
            .field("port", &self.port)
            .field("shard_aware_port", &self.shard_aware_port)
            .finish_non_exhaustive()
    }
}
