//! Test helpers of the scylla-cdc workspace, on top of the embedded cluster
//! ([`scylla_emulator`]): not published, used by the workspace's tests and benchmarks.
//!
//! - [`TestCluster`]: a test's cluster, embedded, or the real Scylla named by `SCYLLA_URI`
//!   ([`SCYLLA_URI2`] for a second one); [`embedded_only`] reports a test as skipped when it
//!   needs the embedded cluster's control API (stopping or adding nodes, faults) and a real
//!   cluster is configured, [`skip`] reports a part of one.
//! - [`unique_keyspace_name`]: keeps tests apart on a shared cluster.
//! - [`setup_tracing`]: a `RUST_LOG`-filtered subscriber whose output the test harness
//!   captures.
//! - [`statement_on_node`]: a statement the driver sends to one node only.
//! - [`strip_ansi`]: a program's log line without its colours.
//! - [`metrics_scrape`]: free ports, scraping a program's `/metrics`, reading log lines.
//! - [`help_text`]: checks of a program's `--help` (headings, plain text, variables).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::Node;
use scylla::errors::NewSessionError;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::Statement;

use scylla_emulator::{ClusterBuilder, ClusterError, EmbeddedCluster};

pub mod help_text;
pub mod metrics_scrape;

/// The environment variable naming a real cluster to test against: `host:port[,host:port...]`.
pub const SCYLLA_URI: &str = "SCYLLA_URI";

/// The environment variable naming a second real cluster (`host:port[,host:port...]`), used by
/// tests that need two clusters, such as the replicator's (source on `SCYLLA_URI`, destination
/// here). When it is not set, the second cluster is an embedded one.
pub const SCYLLA_URI2: &str = "SCYLLA_URI2";

/// The cluster a test runs against: an embedded one, or — when `SCYLLA_URI` is set — the real
/// Scylla cluster it names. Tests that only need CQL use this, so the same test checks the
/// embedded cluster and, on demand, real Scylla. Tests that stop or add nodes, split tablets
/// or inject faults need an [`EmbeddedCluster`]; they call [`embedded_only`] first, which
/// reports them as skipped when `SCYLLA_URI` is set.
#[derive(Debug)]
pub enum TestCluster {
    /// An embedded cluster started for the test.
    Embedded(Box<EmbeddedCluster>),
    /// The external cluster of `SCYLLA_URI` (or `SCYLLA_URI2`).
    External {
        /// Its contact points.
        contact_points: Vec<String>,
    },
}

/// The contact points named by environment variable `var`, if it is set and not empty.
fn contact_points_from_env(var: &str) -> Option<Vec<String>> {
    let uri = std::env::var(var).ok()?;
    let points: Vec<String> = uri
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    (!points.is_empty()).then_some(points)
}

/// Whether the tests run against a real cluster (`SCYLLA_URI` is set).
pub fn external_cluster_configured() -> bool {
    contact_points_from_env(SCYLLA_URI).is_some()
}

/// For a test that needs the embedded cluster's control API (stopping or adding nodes,
/// splitting tablets, injecting faults, counting requests): `true` if it can run, that is,
/// when `SCYLLA_URI` is not set. When it is set, prints `test <name> ... skipped: <reason>` to
/// the process's standard error — past the test harness's output capture, so it shows in
/// `cargo test`'s output — and returns `false`; the test then returns early.
///
/// ```
/// # async fn t() {
/// if !scylla_cdc_test_utils::embedded_only("stop_node_mid_read", "stops a node") {
///     return;
/// }
/// # }
/// ```
pub fn embedded_only(test: &str, needs: &str) -> bool {
    if !external_cluster_configured() {
        return true;
    }
    skip(
        test,
        &format!("it {needs}, which needs the embedded cluster (SCYLLA_URI is set)"),
    );
    false
}

/// Prints `test <test> ... skipped: <reason>` to the process's standard error, past the test
/// harness's output capture (`eprintln!` would be hidden for a passing test), for a test or a
/// part of one that cannot run on the cluster at hand.
pub fn skip(test: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "test {test} ... skipped: {reason}");
}

impl TestCluster {
    /// The cluster of `SCYLLA_URI` if it is set (and not empty), else an embedded cluster
    /// started from `builder`.
    pub async fn start(builder: ClusterBuilder) -> Result<TestCluster, ClusterError> {
        Self::start_from_env(SCYLLA_URI, builder).await
    }

    /// The second cluster of a two-cluster test: the one of `SCYLLA_URI2` if it is set, else
    /// an embedded cluster started from `builder`.
    pub async fn start_second(builder: ClusterBuilder) -> Result<TestCluster, ClusterError> {
        Self::start_from_env(SCYLLA_URI2, builder).await
    }

    /// The cluster named by environment variable `var` if it is set, else an embedded cluster
    /// started from `builder`.
    pub async fn start_from_env(
        var: &str,
        builder: ClusterBuilder,
    ) -> Result<TestCluster, ClusterError> {
        match contact_points_from_env(var) {
            Some(contact_points) => Ok(TestCluster::External { contact_points }),
            None => builder
                .start()
                .await
                .map(|c| TestCluster::Embedded(Box::new(c))),
        }
    }

    /// The contact points to give a driver or one of the programs (`host:port` each).
    pub fn contact_points(&self) -> Vec<String> {
        match self {
            TestCluster::Embedded(cluster) => vec![cluster.contact_point().to_string()],
            TestCluster::External { contact_points } => contact_points.clone(),
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

/// A statement that the driver sends to `node` only, never retried elsewhere: for node-local
/// tables such as `system.local`, or to check what one node answers.
pub fn statement_on_node(cql: impl Into<String>, node: &Arc<Node>) -> Statement {
    let mut statement = Statement::new(cql.into());
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::Node(node.clone()),
            None,
        ))
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        .build();
    statement.set_execution_profile_handle(Some(profile.into_handle()));
    statement
}

/// A keyspace name no other test (in this process or another) uses: `ks_<pid>_<n>_<random>`,
/// within CQL's 48-character limit.
pub fn unique_keyspace_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random: u32 = rand::random();
    format!("ks_{}_{n}_{random:08x}", std::process::id())
}

/// `text` without its ANSI colour sequences (`ESC [ ... m`): a program's log line as a test
/// matches it, whatever colours the program chose.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_stripped() {
        assert_eq!(
            strip_ansi("\x1b[33m WARN\x1b[0m \x1b[2mlost\x1b[0m: x"),
            " WARN lost: x"
        );
    }

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
