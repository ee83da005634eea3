//! Prints every change to `ks.t` (columns `pk`, `v`) of a cluster that takes clients over
//! TLS with a password: the session is built with the driver's rustls support
//! (`SessionBuilder::tls_context`, the `scylla` crate's `rustls-023` feature) and handed to
//! `CDCLogReaderBuilder` like any other. The password comes from the environment, never
//! from the command line.
//!
//! Usage: `SCYLLA_USER=... SCYLLA_PASSWORD=... tls HOST:PORT CA.pem` (the cluster's TLS
//! port, `native_transport_port_ssl`, is 9142 by default).
use std::sync::Arc;

use async_trait::async_trait;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::{CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory};

/// A session over TLS: the server's certificate must be signed by a CA of `ca_pem` and name
/// the node's IP address (the driver connects to addresses, not host names).
async fn tls_session(
    host: &str,
    ca_pem: &[u8],
    user: &str,
    password: &str,
) -> anyhow::Result<Session> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert?)?;
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth(); // or .with_client_auth_cert(chain, key) for mutual TLS
    let session = SessionBuilder::new()
        .known_node(host)
        .user(user, password)
        .tls_context(Some(Arc::new(tls)))
        .build()
        .await?;
    Ok(session)
}

struct Printer;

#[async_trait]
impl Consumer for Printer {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let pk: Option<i32> = row.get_value_as("pk")?;
        let v = row.get_value("v")?;
        println!("{} {} pk={pk:?} v={v:?}", row.timestamp(), row.operation);
        Ok(())
    }
}

struct PrinterFactory;

#[async_trait]
impl ConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Printer)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(host), Some(ca_file)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: tls HOST:PORT CA.pem (with SCYLLA_USER and SCYLLA_PASSWORD set)");
    };
    let user = std::env::var("SCYLLA_USER")?;
    let password = std::env::var("SCYLLA_PASSWORD")?;
    let session = tls_session(&host, &std::fs::read(ca_file)?, &user, &password).await?;
    let (mut reader, handle) = CDCLogReaderBuilder::new()
        .session(Arc::new(session))
        .keyspace("ks")
        .table_name("t")
        .consumer_factory(Arc::new(PrinterFactory))
        .build()
        .await?;
    tokio::select! {
        result = handle => result?,
        _ = tokio::signal::ctrl_c() => reader.stop(),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use scylla_emulator::{EmbeddedCluster, TestCa};

    use super::*;

    struct Collect(Arc<Mutex<Vec<Option<i32>>>>);

    #[async_trait]
    impl Consumer for Collect {
        async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
            self.0.lock().expect("lock").push(row.get_value_as("pk")?);
            Ok(())
        }
    }

    struct CollectFactory(Arc<Mutex<Vec<Option<i32>>>>);

    #[async_trait]
    impl ConsumerFactory for CollectFactory {
        async fn new_consumer(&self) -> Box<dyn Consumer> {
            Box::new(Collect(self.0.clone()))
        }
    }

    /// The example's session reads the CDC log of a cluster with TLS and a password.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_the_log_over_tls() -> anyhow::Result<()> {
        let ca = TestCa::new("example CA")?;
        let cluster = EmbeddedCluster::builder()
            .credentials("reader", "example-password")
            .tls_signed_by(&ca, &[])
            .start()
            .await?;
        let host = cluster.tls_contact_point().expect("TLS port").to_string();
        let session = Arc::new(
            tls_session(
                &host,
                ca.cert_pem().as_bytes(),
                "reader",
                "example-password",
            )
            .await?,
        );
        let start = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
        for statement in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE ks.t (pk int PRIMARY KEY, v text) WITH cdc = {'enabled': true}",
            "INSERT INTO ks.t (pk, v) VALUES (7, 'over TLS')",
        ] {
            session.query_unpaged(statement, ()).await?;
        }
        let rows = Arc::new(Mutex::new(Vec::new()));
        let (_reader, handle) = CDCLogReaderBuilder::new()
            .session(session)
            .keyspace("ks")
            .table_name("t")
            .start_timestamp(start)
            .end_timestamp(chrono::Utc::now() + chrono::TimeDelta::milliseconds(100))
            .window_size(Duration::from_secs(1))
            .safety_interval(Duration::from_millis(100))
            .sleep_interval(Duration::from_millis(100))
            .consumer_factory(Arc::new(CollectFactory(rows.clone())))
            .build()
            .await?;
        tokio::time::timeout(Duration::from_secs(30), handle).await??;
        assert_eq!(*rows.lock().expect("lock"), vec![Some(7)]);
        cluster.shutdown().await;
        Ok(())
    }
}
