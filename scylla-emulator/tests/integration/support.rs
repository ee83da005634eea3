//! Helpers shared by the embedded cluster's integration tests.

use std::future::Future;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla_cdc_test_utils::unique_keyspace_name;
use scylla_emulator::EmbeddedCluster;

/// Polls `condition` every 20 ms until it holds; panics after `timeout`.
pub(crate) async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until every shard of every node has a connection open. A driver session opens its
/// per-shard connections a moment after it is built (longer on a loaded machine); until
/// then it sends a request for a shard without a connection through another shard's, so
/// tests of shard routing wait for this first.
pub(crate) async fn wait_for_every_shard_connected(cluster: &EmbeddedCluster, shards: u32) {
    let nodes = cluster.node_addresses().len();
    wait_until(
        Duration::from_secs(20),
        "every shard of every node has a connection",
        || async move {
            let open = cluster.connection_counts();
            (1..=nodes).all(|n| (0..shards).all(|s| open.get(&(n, s)).is_some_and(|c| *c >= 1)))
        },
    )
    .await;
}

/// Runs a statement that must succeed.
pub(crate) async fn run(session: &Session, cql: &str) {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"));
}

/// A new vnode keyspace with replication factor 1; returns its name. (Tablet keyspaces have
/// other stream sets, and no CDC at all before Scylla 2025.4.)
pub(crate) async fn vnode_keyspace(session: &Session) -> String {
    let ks = unique_keyspace_name();
    run(
        session,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}} \
             AND tablets = {{'enabled': false}}"
        ),
    )
    .await;
    ks
}
