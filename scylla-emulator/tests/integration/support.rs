//! Helpers shared by the embedded cluster's integration tests: waiting for a condition, a
//! test's cluster, session and keyspace ([`Setup`]), statements that must succeed or fail,
//! and their rows.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::response::query_result::QueryRowsResult;
use scylla::value::{CqlValue, Row};
use scylla_cdc_test_utils::{TestCluster, unique_keyspace_name};
use scylla_emulator::{ClusterBuilder, EmbeddedCluster};

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
    new_keyspace(
        session,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} \
         AND tablets = {'enabled': false}",
    )
    .await
}

/// A new keyspace with `replication` (the map, and any `AND ...` options after it); returns
/// its name.
pub(crate) async fn new_keyspace(session: &Session, replication: &str) -> String {
    let ks = unique_keyspace_name();
    run(
        session,
        &format!("CREATE KEYSPACE {ks} WITH replication = {replication}"),
    )
    .await;
    ks
}

/// The cluster of `builder` (or the one of `SCYLLA_URI`), a session and a new vnode keyspace
/// of replication factor 1 ([`vnode_keyspace`]), which the session does not use.
pub(crate) async fn cluster_and_keyspace(
    builder: ClusterBuilder,
) -> (TestCluster, Arc<Session>, String) {
    let cluster = TestCluster::start(builder).await.expect("cluster starts");
    let session = cluster.session().await.expect("session builds");
    let ks = vnode_keyspace(&session).await;
    (cluster, session, ks)
}

/// A test's cluster, a session to it and the keyspace the session uses.
pub(crate) struct Setup {
    pub(crate) cluster: TestCluster,
    pub(crate) session: Arc<Session>,
    pub(crate) ks: String,
}

impl Setup {
    /// The cluster (an embedded one of `nodes` nodes, or the one of `SCYLLA_URI`) and a
    /// session using a new vnode keyspace of replication factor 1 ([`vnode_keyspace`]: LWT
    /// and CDC on tablet tables are not available in every Scylla release).
    pub(crate) async fn start(nodes: usize) -> Setup {
        let (cluster, session, ks) =
            cluster_and_keyspace(EmbeddedCluster::builder().nodes(nodes)).await;
        session.use_keyspace(&ks, false).await.expect("USE ks");
        Setup {
            cluster,
            session,
            ks,
        }
    }

    /// Drops the keyspace and stops an embedded cluster.
    pub(crate) async fn teardown(self) {
        run(&self.session, &format!("DROP KEYSPACE {}", self.ks)).await;
        self.cluster.shutdown().await;
    }
}

/// The rows result of an unpaged statement that must succeed.
pub(crate) async fn rows_result(session: &Session, cql: &str) -> QueryRowsResult {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
        .into_rows_result()
        .expect("rows")
}

/// All rows of an unpaged query.
pub(crate) async fn rows(session: &Session, cql: &str) -> Vec<Row> {
    rows_result(session, cql)
        .await
        .rows::<Row>()
        .expect("typed rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows decode")
}

/// The int columns of every row (null as `None`).
pub(crate) async fn ints(session: &Session, cql: &str) -> Vec<Vec<Option<i32>>> {
    rows(session, cql)
        .await
        .into_iter()
        .map(|r| {
            r.columns
                .into_iter()
                .map(|c| match c {
                    Some(CqlValue::Int(i)) => Some(i),
                    None => None,
                    other => panic!("{cql}: not an int: {other:?}"),
                })
                .collect()
        })
        .collect()
}

/// The server error (kind and message) of a statement that must fail.
pub(crate) async fn db_error(session: &Session, cql: &str) -> (DbError, String) {
    match session.query_unpaged(cql, ()).await {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, msg))) => (e, msg),
        other => panic!("{cql}: expected a server error, got {other:?}"),
    }
}

/// Asserts that `cql` fails as Invalid with a message containing `expected`.
pub(crate) async fn invalid(session: &Session, cql: &str, expected: &str) {
    let (e, msg) = db_error(session, cql).await;
    assert_eq!(e, DbError::Invalid, "{cql}: {msg}");
    assert!(
        msg.contains(expected),
        "{cql}: message {msg:?} lacks {expected:?}"
    );
}

/// Held by the tests whose assertions measure time (a rate, a deadline, a latency):
/// no two of them run at once, so that each shares the process (where the harness runs two
/// tests at a time, from every module) only with tests that do not measure time. A test takes
/// it first thing (`let _alone = timing_sensitive().await;`).
pub(crate) async fn timing_sensitive() -> tokio::sync::MutexGuard<'static, ()> {
    static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TIMING.lock().await
}
