//! Helpers for tests: unique keyspace names, a tracing subscriber, driver sessions, and
//! [`TestCluster`], which runs a test against a real Scylla when `SCYLLA_URI` is set.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::NewSessionError;

use crate::{ClusterBuilder, ClusterError, EmbeddedCluster};

/// The environment variable naming a real cluster to test against: `host:port[,host:port...]`.
pub const SCYLLA_URI: &str = "SCYLLA_URI";

/// The cluster a test runs against: an embedded one, or — when `SCYLLA_URI` is set — the real
/// Scylla cluster it names. Tests that only need CQL use this, so the same test checks the
/// embedded cluster and, on demand, real Scylla. Tests that stop or add nodes, split tablets
/// or inject faults need an [`EmbeddedCluster`] and always use one.
#[derive(Debug)]
pub enum TestCluster {
    /// An embedded cluster started for the test.
    Embedded(Box<EmbeddedCluster>),
    /// The external cluster of `SCYLLA_URI`.
    External {
        /// Its contact points.
        contact_points: Vec<String>,
    },
}

impl TestCluster {
    /// The cluster of `SCYLLA_URI` if it is set (and not empty), else an embedded cluster
    /// started from `builder`.
    pub async fn start(builder: ClusterBuilder) -> Result<TestCluster, ClusterError> {
        match std::env::var(SCYLLA_URI) {
            Ok(uri) if !uri.trim().is_empty() => Ok(TestCluster::External {
                contact_points: uri
                    .split(',')
                    .map(|h| h.trim().to_string())
                    .filter(|h| !h.is_empty())
                    .collect(),
            }),
            _ => builder
                .start()
                .await
                .map(|c| TestCluster::Embedded(Box::new(c))),
        }
    }

    /// A driver session connected to the cluster.
    pub async fn session(&self) -> Result<Arc<Session>, NewSessionError> {
        match self {
            TestCluster::Embedded(cluster) => cluster.session().await,
            TestCluster::External { contact_points } => SessionBuilder::new()
                .known_nodes(contact_points)
                .build()
                .await
                .map(Arc::new),
        }
    }

    /// The embedded cluster, if the test runs against one.
    pub fn embedded(&self) -> Option<&EmbeddedCluster> {
        match self {
            TestCluster::Embedded(cluster) => Some(cluster),
            TestCluster::External { .. } => None,
        }
    }

    /// Stops an embedded cluster (an external one is left alone).
    pub async fn shutdown(self) {
        if let TestCluster::Embedded(cluster) = self {
            cluster.shutdown().await;
        }
    }
}

/// A keyspace name no other test (in this process or another) uses: `ks_<pid>_<n>_<random>`,
/// within CQL's 48-character limit.
pub fn unique_keyspace_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random: u32 = rand::random();
    format!("ks_{}_{n}_{random:08x}", std::process::id())
}

/// Installs a `tracing` subscriber for tests (filtered by `RUST_LOG`, default `warn`, output
/// captured by the test harness). Safe to call from every test.
pub fn setup_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

impl EmbeddedCluster {
    /// A driver session connected to this cluster (with its credentials, if any), ready to use:
    /// `Session::connect` has fetched the cluster's metadata.
    pub async fn session(&self) -> Result<Arc<Session>, NewSessionError> {
        let mut builder = SessionBuilder::new().known_node(self.contact_point().to_string());
        if let Some((user, password)) = self.credentials() {
            builder = builder.user(user, password);
        }
        builder.build().await.map(Arc::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyspace_names_are_unique_and_valid() {
        let a = unique_keyspace_name();
        let b = unique_keyspace_name();
        assert_ne!(a, b);
        for name in [a, b] {
            assert!(name.len() <= 48, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            );
        }
    }
}
