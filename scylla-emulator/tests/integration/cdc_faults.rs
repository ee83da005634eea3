//! Fault injection as the `scylla` driver sees it: every error kind with the fields the
//! driver decodes, `times(n)` rules matching exactly `n` requests, node / shard / opcode /
//! keyspace filters (requests aimed at one node and shard), delays that hold one request
//! while the connection keeps serving others, and dropped connections the driver recovers
//! from. Each request is sent once (no retries), to the node and shard chosen by the test.
//!
//! Fault injection is the embedded cluster's: with `SCYLLA_URI` set, every test here says it
//! is skipped.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError, WriteType};
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::{Consistency, Statement};
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultOpcode, FaultReaction, FaultRule};

use crate::support::timing_sensitive;

/// A cluster with a keyspace holding tables `probe` and `other` (`pk int PRIMARY KEY, v int`).
async fn setup(nodes: usize) -> (EmbeddedCluster, Arc<Session>, String) {
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(nodes)
        .shards_per_node(2)
        .start()
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let ks = unique_keyspace_name();
    for cql in [
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {nodes}}}"
        ),
        format!("CREATE TABLE {ks}.probe (pk int PRIMARY KEY, v int)"),
        format!("CREATE TABLE {ks}.other (pk int PRIMARY KEY, v int)"),
    ] {
        session
            .query_unpaged(cql.clone(), ())
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    (cluster, session, ks)
}

/// An execution profile that sends each request once, to `target` (any node when `None`).
fn profile(target: Option<(SocketAddr, Option<u32>)>) -> ExecutionProfile {
    let mut b = ExecutionProfile::builder()
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        .consistency(Consistency::One);
    if let Some((addr, shard)) = target {
        b = b.load_balancing_policy(SingleTargetLoadBalancingPolicy::new(
            NodeIdentifier::NodeAddress(addr),
            shard,
        ));
    }
    b.build()
}

/// A statement sent once, to `target`.
fn once(cql: String, target: Option<(SocketAddr, Option<u32>)>) -> Statement {
    let mut s = Statement::new(cql);
    s.set_execution_profile_handle(Some(profile(target).into_handle()));
    s
}

/// The server error of a failed request.
fn db_error(r: Result<(), ExecutionError>) -> DbError {
    match r {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, _))) => e,
        other => panic!("expected a server error, got {other:?}"),
    }
}

/// Runs an unprepared statement, discarding its result.
async fn query(session: &Session, s: Statement) -> Result<(), ExecutionError> {
    session.query_unpaged(s, ()).await.map(|_| ())
}

/// Waits until the driver has a connection to every shard of every node: a request aimed at
/// a (node, shard) reaches that shard (the driver opens its per-shard connections in the
/// background and uses another shard's connection meanwhile).
async fn await_shard_connections(cluster: &EmbeddedCluster, session: &Session, ks: &str) {
    let nodes = cluster.node_addresses();
    let start = Instant::now();
    for (i, addr) in nodes.iter().enumerate() {
        for shard in 0..2 {
            loop {
                let before = cluster.request_counts().get(&(i + 1, shard)).copied();
                query(
                    session,
                    once(
                        format!("SELECT * FROM {ks}.other"),
                        Some((*addr, Some(shard))),
                    ),
                )
                .await
                .expect("probe request");
                let after = cluster.request_counts().get(&(i + 1, shard)).copied();
                if after > before {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no connection to node {} shard {shard}",
                    i + 1
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_error_reaches_the_driver_with_its_fields() {
    if !embedded_only(
        "every_fault_error_reaches_the_driver_with_its_fields",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(1).await;
    let read = || once(format!("SELECT * FROM {ks}.probe WHERE pk = 1"), None);
    let one = Consistency::One;
    let cases = [
        (FaultError::Overloaded, DbError::Overloaded),
        (
            FaultError::ReadTimeout,
            DbError::ReadTimeout {
                consistency: one,
                received: 0,
                required: 1,
                data_present: false,
            },
        ),
        (
            FaultError::WriteTimeout,
            DbError::WriteTimeout {
                consistency: one,
                received: 0,
                required: 1,
                write_type: WriteType::Simple,
            },
        ),
        (
            FaultError::Unavailable,
            DbError::Unavailable {
                consistency: one,
                required: 1,
                alive: 0,
            },
        ),
        (FaultError::ServerError, DbError::ServerError),
        (FaultError::IsBootstrapping, DbError::IsBootstrapping),
        (
            FaultError::ReadFailure,
            DbError::ReadFailure {
                consistency: one,
                received: 0,
                required: 1,
                numfailures: 1,
                data_present: false,
            },
        ),
        (FaultError::Invalid, DbError::Invalid),
    ];
    for (fault, expected) in cases {
        cluster.add_fault(FaultRule::new().on_table("probe").error(fault).times(1));
        assert_eq!(
            db_error(query(&session, read()).await),
            expected,
            "{fault:?}"
        );
        // The rule is used up: the same request now succeeds.
        query(&session, read()).await.expect("after the fault");
    }
    // The consistency of the request shows in the error.
    cluster.add_fault(
        FaultRule::new()
            .on_table("probe")
            .error(FaultError::Unavailable)
            .times(1),
    );
    let mut s = read();
    s.set_consistency(Consistency::Two);
    assert_eq!(
        db_error(query(&session, s).await),
        DbError::Unavailable {
            consistency: Consistency::Two,
            required: 2,
            alive: 0
        }
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_times_limited_rule_matches_exactly_that_many_requests() {
    if !embedded_only(
        "a_times_limited_rule_matches_exactly_that_many_requests",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(1).await;
    cluster.add_fault(
        FaultRule::new()
            .on_table("probe")
            .error(FaultError::Overloaded)
            .times(3),
    );
    let mut outcomes = Vec::new();
    for i in 0..8 {
        // Requests to another table do not use up the rule.
        query(
            &session,
            once(format!("SELECT * FROM {ks}.other WHERE pk = {i}"), None),
        )
        .await
        .expect("other table");
        outcomes.push(
            query(
                &session,
                once(
                    format!("INSERT INTO {ks}.probe (pk, v) VALUES ({i}, 0)"),
                    None,
                ),
            )
            .await
            .is_ok(),
        );
    }
    assert_eq!(
        outcomes,
        [false, false, false, true, true, true, true, true]
    );
    // A probability-0 rule never matches; clear_faults removes everything.
    cluster.add_fault(FaultRule::new().with_probability(0.0));
    query(&session, once(format!("SELECT * FROM {ks}.probe"), None))
        .await
        .expect("probability 0");
    cluster.add_fault(FaultRule::new().error(FaultError::ServerError));
    assert!(
        query(&session, once(format!("SELECT * FROM {ks}.probe"), None))
            .await
            .is_err()
    );
    cluster.clear_faults();
    query(&session, once(format!("SELECT * FROM {ks}.probe"), None))
        .await
        .expect("no faults left");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_shard_opcode_and_keyspace_filters_select_requests() {
    if !embedded_only(
        "node_shard_opcode_and_keyspace_filters_select_requests",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(2).await;
    await_shard_connections(&cluster, &session, &ks).await;
    let nodes = cluster.node_addresses();
    let at = |node: usize, shard: u32| Some((nodes[node - 1], Some(shard)));
    // EXECUTE on node 2: Unavailable; node 1 and QUERY requests are untouched.
    cluster.add_fault(
        FaultRule::new()
            .on_node(2)
            .on_opcode(FaultOpcode::Execute)
            .error(FaultError::Unavailable),
    );
    let mut select = session
        .prepare(format!("SELECT * FROM {ks}.probe WHERE pk = ?"))
        .await
        .expect("prepare");
    for (node, shard, fails) in [(1, 0, false), (1, 1, false), (2, 0, true), (2, 1, true)] {
        select.set_execution_profile_handle(Some(profile(at(node, shard)).into_handle()));
        let r = session.execute_unpaged(&select, (1,)).await.map(|_| ());
        assert_eq!(
            r.is_err(),
            fails,
            "EXECUTE on node {node} shard {shard}: {r:?}"
        );
        if fails {
            assert!(matches!(db_error(r), DbError::Unavailable { .. }));
        }
        query(
            &session,
            once(
                format!("SELECT * FROM {ks}.probe WHERE pk = 1"),
                at(node, shard),
            ),
        )
        .await
        .expect("QUERY is not filtered");
    }
    cluster.clear_faults();
    // Shard 1 of node 1 only.
    cluster.add_fault(
        FaultRule::new()
            .on_node(1)
            .on_shard(1)
            .error(FaultError::ServerError),
    );
    for (node, shard) in [(1, 0), (1, 1), (2, 0), (2, 1)] {
        let r = query(
            &session,
            once(
                format!("SELECT * FROM {ks}.probe WHERE pk = 1"),
                at(node, shard),
            ),
        )
        .await;
        assert_eq!(
            r.is_err(),
            (node, shard) == (1, 1),
            "node {node} shard {shard}: {r:?} {:?}",
            cluster.request_counts()
        );
    }
    cluster.clear_faults();
    // BATCH only, and a keyspace filter.
    cluster.add_fault(
        FaultRule::new()
            .on_opcode(FaultOpcode::Batch)
            .error(FaultError::WriteTimeout),
    );
    let mut batch = Batch::new(BatchType::Logged);
    batch.append_statement(format!("INSERT INTO {ks}.probe (pk, v) VALUES (1, 1)").as_str());
    batch.set_execution_profile_handle(Some(profile(None).into_handle()));
    assert!(matches!(
        db_error(session.batch(&batch, ((),)).await.map(|_| ())),
        DbError::WriteTimeout {
            write_type: WriteType::Simple,
            ..
        }
    ));
    query(
        &session,
        once(
            format!("INSERT INTO {ks}.probe (pk, v) VALUES (1, 1)"),
            None,
        ),
    )
    .await
    .expect("not a batch");
    cluster.clear_faults();
    cluster.add_fault(
        FaultRule::new()
            .on_keyspace("no_such_keyspace")
            .error(FaultError::ServerError),
    );
    query(&session, once(format!("SELECT * FROM {ks}.probe"), None))
        .await
        .expect("another keyspace");
    cluster.clear_faults();
    cluster.add_fault(
        FaultRule::new()
            .on_keyspace(ks.clone())
            .error(FaultError::ServerError),
    );
    assert_eq!(
        db_error(query(&session, once(format!("SELECT * FROM {ks}.other"), None)).await),
        DbError::ServerError
    );
    cluster.clear_faults();
    // PREPARE (the driver prepares on several connections and fails only if all do).
    cluster.add_fault(
        FaultRule::new()
            .on_opcode(FaultOpcode::Prepare)
            .error(FaultError::Invalid),
    );
    let e = session
        .prepare(format!("SELECT v FROM {ks}.probe WHERE pk = ?"))
        .await
        .expect_err("PREPARE fails everywhere");
    assert!(e.to_string().contains("injected fault"), "{e}");
    cluster.clear_faults();
    session
        .prepare(format!("SELECT v FROM {ks}.probe WHERE pk = ?"))
        .await
        .expect("PREPARE without faults");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_holds_one_request_while_the_connection_serves_others() {
    let _alone = timing_sensitive().await;
    if !embedded_only(
        "a_delay_holds_one_request_while_the_connection_serves_others",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(1).await;
    await_shard_connections(&cluster, &session, &ks).await;
    let target = Some((cluster.contact_point(), Some(0)));
    cluster.add_fault(
        FaultRule::new()
            .on_table("probe")
            .respond(FaultReaction::Delay(Duration::from_millis(400)))
            .times(1),
    );
    let start = Instant::now();
    let delayed = async {
        query(&session, once(format!("SELECT * FROM {ks}.probe"), target))
            .await
            .expect("delayed request");
        start.elapsed()
    };
    let quick = async {
        // Sent after the delayed one, on the same node and shard.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sent = Instant::now();
        query(&session, once(format!("SELECT * FROM {ks}.other"), target))
            .await
            .expect("other request");
        (sent.elapsed(), start.elapsed())
    };
    let (delayed, (quick, quick_done)) = tokio::join!(delayed, quick);
    assert!(
        delayed >= Duration::from_millis(400),
        "delayed by {delayed:?}"
    );
    assert!(delayed < Duration::from_secs(3), "delayed by {delayed:?}");
    assert!(
        quick < Duration::from_millis(300),
        "other request took {quick:?}"
    );
    assert!(quick_done < delayed, "the other request answered first");
    // Used up: the next one is not delayed.
    let start = Instant::now();
    query(&session, once(format!("SELECT * FROM {ks}.probe"), target))
        .await
        .expect("undelayed");
    assert!(start.elapsed() < Duration::from_millis(300));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_after_executing_applies_the_write_and_answers_the_error() {
    if !embedded_only(
        "an_error_after_executing_applies_the_write_and_answers_the_error",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(1).await;
    let target = Some((cluster.contact_point(), None));
    cluster.add_fault(
        FaultRule::new()
            .on_table("probe")
            .respond(FaultReaction::ErrorAfterExecuting(FaultError::WriteTimeout))
            .times(2),
    );
    // A plain write and a lightweight transaction: both time out as the client sees it,
    // both took effect.
    let err = query(
        &session,
        once(
            format!("INSERT INTO {ks}.probe (pk, v) VALUES (1, 1)"),
            target,
        ),
    )
    .await
    .expect_err("a timeout");
    assert!(
        matches!(
            err,
            ExecutionError::LastAttemptError(RequestAttemptError::DbError(
                DbError::WriteTimeout { .. },
                _
            ))
        ),
        "{err:?}"
    );
    query(
        &session,
        once(
            format!("UPDATE {ks}.probe SET v = 2 WHERE pk = 1 IF v = 1"),
            target,
        ),
    )
    .await
    .expect_err("a timeout");
    let rows = session
        .query_unpaged(format!("SELECT v FROM {ks}.probe WHERE pk = 1"), ())
        .await
        .expect("read")
        .into_rows_result()
        .expect("rows");
    assert_eq!(rows.first_row::<(i32,)>().expect("a row"), (2,));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_fails_the_request_and_the_driver_reconnects() {
    if !embedded_only(
        "a_dropped_connection_fails_the_request_and_the_driver_reconnects",
        "injects faults",
    ) {
        return;
    }
    let (cluster, session, ks) = setup(1).await;
    await_shard_connections(&cluster, &session, &ks).await;
    let target = Some((cluster.contact_point(), Some(1)));
    cluster.add_fault(
        FaultRule::new()
            .on_table("probe")
            .respond(FaultReaction::DropConnection)
            .times(1),
    );
    let r = query(&session, once(format!("SELECT * FROM {ks}.probe"), target)).await;
    assert!(
        matches!(
            r,
            Err(ExecutionError::LastAttemptError(
                RequestAttemptError::BrokenConnectionError(_)
            )) | Err(ExecutionError::ConnectionPoolError(_))
        ),
        "{r:?}"
    );
    // The driver reopens the connection: poll until a request to that shard succeeds.
    let start = Instant::now();
    loop {
        match query(&session, once(format!("SELECT * FROM {ks}.probe"), target)).await {
            Ok(()) => break,
            Err(e) => {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no reconnection: {e}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    cluster.shutdown().await;
}
