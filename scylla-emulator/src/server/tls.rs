//! The TLS ports of a node: the server side of the driver's own TLS (rustls).
//!
//! As ScyllaDB with `client_encryption_options` enabled and both
//! `native_transport_port_ssl` and `native_shard_aware_transport_port_ssl` set
//! (`transport/controller.cc`, `start_listening_on_tcp_sockets`): the plaintext ports stay,
//! and each node listens on a TLS port and a shard-aware TLS port besides them. SUPPORTED
//! then announces `SCYLLA_SHARD_AWARE_PORT_SSL` next to `SCYLLA_SHARD_AWARE_PORT`, which is
//! what a driver connected over TLS reads to find the shard-aware port (the Rust driver's
//! `network/connection.rs`, `open_connection`).
//!
//! Refusals are per connection, before any CQL frame: a client that does not speak TLS, a
//! client that does not trust the server's certificate (it aborts the handshake), or, with
//! client certificates required (Scylla's `require_client_auth`), a client without one or
//! with one the configured CA did not sign. The handshake's failure closes that connection
//! only; the listener goes on accepting.

use std::sync::Arc;
use std::time::Duration;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

/// How long a client has to complete its TLS handshake after connecting: a client that
/// connects and sends nothing must not hold a connection task forever.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Builds the acceptor of the TLS ports from PEM text: the server's certificate chain
/// (leaf first), its private key (PKCS#8, PKCS#1 or SEC1) and, for mutual TLS, the CA
/// certificates a client certificate must chain to.
pub(crate) fn acceptor(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<TlsAcceptor, String> {
    let chain = certificates(cert_chain_pem, "the TLS certificate")?;
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| format!("the TLS private key: {e}"))?;
    // The driver builds its client context with the process's default provider; the server
    // names its own so that it never depends on which one is installed.
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS protocol versions: {e}"))?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = RootCertStore::empty();
            for cert in certificates(pem, "the TLS client CA")? {
                roots
                    .add(cert)
                    .map_err(|e| format!("the TLS client CA: {e}"))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("the TLS client CA: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("the TLS certificate and key: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Every certificate of a PEM text; at least one.
fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("{what}: no PEM certificate found"));
    }
    Ok(certs)
}
