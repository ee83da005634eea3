//! Helpers shared by the embedded cluster's integration tests.

// Each test file uses its own subset.
#![allow(dead_code)]

use scylla::client::session::Session;
use scylla_cdc_test_utils::unique_keyspace_name;

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
