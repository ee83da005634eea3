//! The real `scylla` driver against a cluster as a *cluster*: token- and shard-aware
//! routing, a node going down and coming back, events (schema and topology), schema
//! agreement after ALTER, and PasswordAuthenticator.
//!
//! Schema events and schema agreement run against the real cluster of `SCYLLA_URI` when it
//! is set; the tests that count requests per shard, stop or add nodes or configure the
//! cluster's credentials need the embedded cluster and say they are skipped.

use std::collections::BTreeMap;
use std::time::Duration;

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use scylla_cdc_test_utils::{TestCluster, embedded_only, statement_on_node, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultOpcode};

use crate::support::{new_keyspace, run, wait_until};

/// The one row of a result.
fn single<T>(result: scylla::response::query_result::QueryResult) -> T
where
    T: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    result
        .into_rows_result()
        .expect("a rows result")
        .single_row::<T>()
        .expect("exactly one row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_land_on_the_owner_node_and_shard() {
    if !embedded_only(
        "prepared_statements_land_on_the_owner_node_and_shard",
        "counts the requests each node and shard receives",
    ) {
        return;
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(3)
        .vnodes_per_node(16)
        .start()
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = new_keyspace(
        &session,
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk bigint PRIMARY KEY, v int)"),
    )
    .await;
    let insert: PreparedStatement = session
        .prepare(format!("INSERT INTO {ks}.t (pk, v) VALUES (?, ?)"))
        .await
        .expect("prepare");
    // The pool opens one connection per shard a moment after the session is built; node 1
    // also holds the control connection.
    let insert_ref = &insert;
    let session_ref = &session;
    let cluster_ref = &cluster;
    wait_until(
        Duration::from_secs(10),
        "every shard has a connection",
        || async move {
            let open = cluster_ref.connection_counts();
            let per_node = |n: usize| {
                open.range((n, 0)..(n + 1, 0))
                    .map(|(_, c)| *c)
                    .sum::<usize>()
            };
            (1..=3).all(|n| (0..3).all(|s| open.get(&(n, s)).is_some_and(|c| *c >= 1)))
                && per_node(1) >= 4
        },
    )
    .await;
    cluster.reset_request_counts();
    let mut expected: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    for pk in 0..600i64 {
        let token = insert_ref
            .calculate_token(&(pk, 0i32))
            .expect("token")
            .expect("a partition key")
            .value();
        *expected.entry(cluster.token_owner(token)).or_default() += 1;
        session_ref
            .execute_unpaged(insert_ref, (pk, 1i32))
            .await
            .expect("insert");
    }
    // EXECUTE only: the driver may refresh its metadata (QUERY) after the CREATE TABLE event
    // at any moment.
    let counts = cluster.request_counts_of(FaultOpcode::Execute);
    assert_eq!(counts, expected, "requests per (node, shard) vs the owners");
    assert!(
        expected.len() >= 6,
        "600 keys should cover most of the 9 (node, shard) pairs: {expected:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_keeps_working_while_a_node_is_stopped() {
    if !embedded_only(
        "the_session_keeps_working_while_a_node_is_stopped",
        "stops and restarts a node",
    ) {
        return;
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .start()
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = new_keyspace(
        &session,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)"),
    )
    .await;
    let mut insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, v) VALUES (?, ?)"))
        .await
        .expect("prepare");
    insert.set_consistency(Consistency::Quorum);
    insert.set_is_idempotent(true);
    let mut select = session
        .prepare(format!("SELECT v FROM {ks}.t WHERE pk = ?"))
        .await
        .expect("prepare");
    select.set_consistency(Consistency::Quorum);
    select.set_is_idempotent(true);

    cluster.stop_node(2).await.expect("stop node 2");
    for pk in 0..200 {
        session
            .execute_unpaged(&insert, (pk, pk * 10))
            .await
            .unwrap_or_else(|e| panic!("insert {pk} with node 2 down: {e}"));
        let (v,): (i32,) = session
            .execute_unpaged(&select, (pk,))
            .await
            .map(single::<(i32,)>)
            .unwrap_or_else(|e| panic!("select {pk} with node 2 down: {e}"));
        assert_eq!(v, pk * 10);
    }
    // ALL cannot be reached with a replica down.
    let mut all = insert.clone();
    all.set_consistency(Consistency::All);
    let err = session
        .execute_unpaged(&all, (1, 1))
        .await
        .expect_err("CL ALL with a node down");
    assert!(
        err.to_string().contains("Cannot achieve consistency level"),
        "{err}"
    );
    cluster.start_node(2).await.expect("start node 2");
    let session_ref = &session;
    wait_until(
        Duration::from_secs(10),
        "node 2 is back in the pool",
        || async move {
            session_ref
                .get_cluster_state()
                .get_nodes_info()
                .iter()
                .all(|n| n.is_connected())
        },
    )
    .await;
    session
        .execute_unpaged(&all, (1, 1))
        .await
        .expect("CL ALL with every node up");
    cluster.shutdown().await;
}

/// A session that re-reads the keyspaces marked by SCHEMA_CHANGE events every 100 ms (by
/// default it does so every 60 s, and never re-reads the schema on its own otherwise).
async fn observer(contact_points: Vec<String>) -> Session {
    SessionBuilder::new()
        .known_nodes(contact_points)
        .cluster_metadata_refresh_interval(Duration::from_millis(100))
        .build()
        .await
        .expect("observer session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sessions_learn_schema_changes_from_events() {
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(2))
        .await
        .expect("cluster starts");
    let writer = cluster.session().await.expect("session");
    let observer = observer(cluster.contact_points()).await;
    let ks = unique_keyspace_name();
    run(
        &writer,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ),
    )
    .await;
    run(
        &writer,
        &format!("CREATE TABLE {ks}.fresh (pk int PRIMARY KEY, v text)"),
    )
    .await;
    let (observer_ref, ks_ref) = (&observer, &ks);
    wait_until(
        Duration::from_secs(10),
        "the observer sees the new table",
        || async move {
            observer_ref
                .get_cluster_state()
                .get_keyspace(ks_ref)
                .is_some_and(|k| k.tables.contains_key("fresh"))
        },
    )
    .await;
    run(&writer, &format!("DROP KEYSPACE {ks}")).await;
    wait_until(
        Duration::from_secs(10),
        "the observer sees the keyspace dropped",
        || async move {
            observer_ref
                .get_cluster_state()
                .get_keyspace(ks_ref)
                .is_none()
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sessions_learn_topology_changes_from_events() {
    if !embedded_only(
        "other_sessions_learn_topology_changes_from_events",
        "adds and stops nodes",
    ) {
        return;
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(2)
        .generation_delay(Duration::from_secs(1))
        .start()
        .await
        .expect("cluster starts");
    let observer = observer(vec![cluster.contact_point().to_string()]).await;
    let observer_ref = &observer;
    // TOPOLOGY_CHANGE: the new node shows up in the observer's view.
    cluster.add_node().await.expect("add a node");
    wait_until(
        Duration::from_secs(10),
        "the observer sees 3 nodes",
        || async move { observer_ref.get_cluster_state().get_nodes_info().len() == 3 },
    )
    .await;
    // STATUS_CHANGE DOWN: the observer's pool to node 2 goes away.
    cluster.stop_node(2).await.expect("stop node 2");
    wait_until(
        Duration::from_secs(10),
        "the observer sees node 2 down",
        || async move {
            observer_ref
                .get_cluster_state()
                .get_nodes_info()
                .iter()
                .filter(|n| !n.is_connected())
                .count()
                == 1
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_table_reaches_schema_agreement_and_the_new_column_works() {
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(3))
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = new_keyspace(
        &session,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, a int)"),
    )
    .await;
    let before = session.await_schema_agreement().await.expect("agreement");
    run(&session, &format!("ALTER TABLE {ks}.t ADD b text")).await;
    let after = session.await_schema_agreement().await.expect("agreement");
    assert_ne!(before, after, "DDL changes the schema version");
    // Every node reports that version (each asked on its own: system.local is node-local).
    let nodes = session.get_cluster_state().get_nodes_info().to_vec();
    if let Some(embedded) = cluster.embedded() {
        assert_eq!(nodes.len(), embedded.node_addresses().len());
    }
    for node in nodes {
        let q = statement_on_node(
            "SELECT schema_version FROM system.local WHERE key='local'",
            &node,
        );
        let (v,): (uuid::Uuid,) = session
            .query_unpaged(q, ())
            .await
            .map(single::<(uuid::Uuid,)>)
            .expect("schema_version");
        assert_eq!(v, after, "node {}", node.address);
    }
    // The column is in the driver's metadata right away and usable.
    let state = session.get_cluster_state();
    let table = &state.get_keyspace(&ks).expect("keyspace").tables["t"];
    assert!(table.columns.contains_key("b"));
    run(
        &session,
        &format!("INSERT INTO {ks}.t (pk, a, b) VALUES (1, 2, 'three')"),
    )
    .await;
    let (b,): (String,) = session
        .query_unpaged(format!("SELECT b FROM {ks}.t WHERE pk = 1"), ())
        .await
        .map(single::<(String,)>)
        .expect("select b");
    assert_eq!(b, "three");
    // Once dropped, the column is unknown.
    run(&session, &format!("ALTER TABLE {ks}.t DROP b")).await;
    match session
        .query_unpaged(format!("SELECT b FROM {ks}.t"), ())
        .await
    {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Invalid,
            msg,
        ))) => assert!(msg.contains('b'), "{msg}"),
        other => panic!("expected Invalid for the dropped column, got {other:?}"),
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_authentication() {
    if !embedded_only(
        "password_authentication",
        "configures the cluster's credentials",
    ) {
        return;
    }
    let cluster = EmbeddedCluster::builder()
        .credentials("cassandra", "s3cret")
        .start()
        .await
        .expect("cluster starts");
    let ok = cluster.session().await.expect("right credentials");
    ok.query_unpaged("SELECT key FROM system.local", ())
        .await
        .expect("query");
    let wrong = SessionBuilder::new()
        .known_node(cluster.contact_point().to_string())
        .user("cassandra", "wrong")
        .build()
        .await
        .expect_err("wrong password");
    assert!(
        wrong.to_string().to_lowercase().contains("password")
            || wrong.to_string().to_lowercase().contains("authentication"),
        "{wrong}"
    );
    let none = SessionBuilder::new()
        .known_node(cluster.contact_point().to_string())
        .build()
        .await
        .expect_err("no credentials");
    assert!(none.to_string().to_lowercase().contains("auth"), "{none}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_a_counted_table_are_counted_as_reads_writes_and_lwts() {
    if !embedded_only(
        "requests_to_a_counted_table_are_counted_as_reads_writes_and_lwts",
        "reads the embedded cluster's per-table request counters",
    ) {
        return;
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .start()
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = new_keyspace(
        &session,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}",
    )
    .await;
    for t in ["leases", "other"] {
        run(
            &session,
            &format!("CREATE TABLE {ks}.{t} (k int PRIMARY KEY, v int)"),
        )
        .await;
    }
    // Not counted yet: nothing before this call shows.
    run(
        &session,
        &format!("INSERT INTO {ks}.leases (k, v) VALUES (0, 0)"),
    )
    .await;
    cluster.count_table_requests(&ks, "leases");
    assert_eq!(
        cluster.table_request_counts(&ks, "leases"),
        Default::default()
    );

    // Unprepared (QUERY): a write, a read, an LWT.
    run(
        &session,
        &format!("INSERT INTO {ks}.leases (k, v) VALUES (1, 1)"),
    )
    .await;
    run(&session, &format!("SELECT v FROM {ks}.leases WHERE k = 1")).await;
    run(
        &session,
        &format!("UPDATE {ks}.leases SET v = 2 WHERE k = 1 IF v = 1"),
    )
    .await;
    // Prepared (EXECUTE), twice each: reads, an LWT insert, an LWT delete.
    let select = session
        .prepare(format!("SELECT v FROM {ks}.leases WHERE k = ?"))
        .await
        .expect("prepare");
    let insert_if = session
        .prepare(format!(
            "INSERT INTO {ks}.leases (k, v) VALUES (?, 0) IF NOT EXISTS"
        ))
        .await
        .expect("prepare");
    let delete_if = session
        .prepare(format!("DELETE FROM {ks}.leases WHERE k = ? IF EXISTS"))
        .await
        .expect("prepare");
    for k in [5i32, 6] {
        session
            .execute_unpaged(&select, (k,))
            .await
            .expect("select");
        session
            .execute_unpaged(&insert_if, (k,))
            .await
            .expect("insert");
        session
            .execute_unpaged(&delete_if, (k,))
            .await
            .expect("delete");
    }
    // A protocol BATCH: unconditional (a write), then with one condition (an LWT), one
    // request each whatever its statements.
    let plain = session
        .prepare(format!("UPDATE {ks}.leases SET v = ? WHERE k = 7"))
        .await
        .expect("prepare");
    let conditional = session
        .prepare(format!("UPDATE {ks}.leases SET v = ? WHERE k = 7 IF v = ?"))
        .await
        .expect("prepare");
    let mut batch =
        scylla::statement::batch::Batch::new(scylla::statement::batch::BatchType::Unlogged);
    batch.append_statement(plain.clone());
    batch.append_statement(plain.clone());
    session
        .batch(&batch, ((1i32,), (2i32,)))
        .await
        .expect("batch");
    let mut lwt_batch =
        scylla::statement::batch::Batch::new(scylla::statement::batch::BatchType::Unlogged);
    lwt_batch.append_statement(plain);
    lwt_batch.append_statement(conditional);
    session
        .batch(&lwt_batch, ((3i32,), (4i32, 2i32)))
        .await
        .expect("batch");
    // Another table is not counted, and does not count for this one.
    run(
        &session,
        &format!("INSERT INTO {ks}.other (k, v) VALUES (1, 1)"),
    )
    .await;
    run(&session, &format!("SELECT v FROM {ks}.other WHERE k = 1")).await;

    let counts = cluster.table_request_counts(&ks, "leases");
    assert_eq!(
        (counts.reads, counts.writes, counts.lwts),
        (3, 2, 6),
        "{counts:?}"
    );
    assert_eq!(
        cluster.table_request_counts(&ks, "other"),
        Default::default()
    );
    cluster.reset_request_counts();
    assert_eq!(
        cluster.table_request_counts(&ks, "leases"),
        Default::default()
    );
    run(&session, &format!("SELECT v FROM {ks}.leases WHERE k = 1")).await;
    assert_eq!(cluster.table_request_counts(&ks, "leases").reads, 1);
    cluster.shutdown().await;
}
