//! CDC stream changes through the `scylla` driver: a node joining starts a new vnode
//! generation after the generation delay (writes before its timestamp stay in the old
//! streams, writes after it use the new ones), and tablet keyspaces have one stream set per
//! table in `system.cdc_timestamps` / `system.cdc_streams`, renewed by a tablet split.
//!
//! A tablet table's first stream set is also checked on the real cluster of `SCYLLA_URI`
//! when it is set (Scylla 2025.4 or later; an older one refuses CDC on tablets and the test
//! says it is skipped); adding a node and splitting tablets need the embedded cluster.

use std::num::NonZeroU16;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::routing::partitioner::{Murmur3Partitioner, Partitioner};
use scylla::routing::{Sharder, Token};
use scylla::statement::{Consistency, Statement};
use scylla::value::CqlTimeuuid;
use scylla_cdc_test_utils::{
    TestCluster, embedded_only, setup_tracing, skip, unique_keyspace_name,
};
use scylla_emulator::EmbeddedCluster;

use crate::support::{new_keyspace, run, wait_until};

/// All rows of a query (paged), typed.
async fn rows<T>(
    session: &Session,
    statement: Statement,
    values: impl scylla::serialize::row::SerializeRow,
) -> Vec<T>
where
    T: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm> + 'static,
{
    session
        .query_iter(statement, values)
        .await
        .expect("query")
        .rows_stream::<T>()
        .expect("typed rows")
        .try_collect()
        .await
        .expect("decode")
}

/// A statement at consistency ONE (the libraries' choice on a single node).
fn one(cql: &str) -> Statement {
    let mut s = Statement::new(cql);
    s.set_consistency(Consistency::One);
    s
}

/// The token of an `int` partition key.
fn token_of(pk: i32) -> i64 {
    Murmur3Partitioner.hash_one(&pk.to_be_bytes()).value()
}

/// The token of a stream id.
fn stream_token(stream: &[u8]) -> i64 {
    i64::from_be_bytes(stream[..8].try_into().expect("16-byte stream id"))
}

/// µs since the epoch of a timeuuid.
fn micros(u: &CqlTimeuuid) -> i64 {
    let uuid: &uuid::Uuid = u.as_ref();
    let raw = uuid.get_timestamp().expect("version 1").to_gregorian().0;
    (raw as i64 - 0x01B2_1DD2_1381_4000) / 10
}

/// Every generation timestamp, newest first (the table is clustered DESC).
async fn generation_times(session: &Session) -> Vec<DateTime<Utc>> {
    rows::<(DateTime<Utc>,)>(
        session,
        one("SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'"),
        (),
    )
    .await
    .into_iter()
    .map(|r| r.0)
    .collect()
}

/// A generation's vnodes: `(range_end, streams)` in `range_end` order.
async fn descriptions(session: &Session, time: DateTime<Utc>) -> Vec<(i64, Vec<Vec<u8>>)> {
    rows(
        session,
        one("SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?"),
        (time,),
    )
    .await
}

/// The stream of a vnode generation for a base token: the first vnode whose range end is at
/// or after the token (wrapping), stream number `shard_of(token)` of its set.
fn vnode_stream(generation: &[(i64, Vec<Vec<u8>>)], token: i64) -> Vec<u8> {
    let (_, streams) = generation
        .iter()
        .find(|(end, _)| *end >= token)
        .or(generation.first())
        .expect("a generation has vnodes");
    let shards = NonZeroU16::new(streams.len() as u16).expect("streams");
    let shard = Sharder::new(shards, 12).shard_of(Token::new(token));
    streams[shard as usize].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_node_starts_a_new_generation_after_the_delay() {
    if !embedded_only(
        "a_joining_node_starts_a_new_generation_after_the_delay",
        "adds a node",
    ) {
        return;
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .generation_delay(Duration::from_secs(2))
        .start()
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let ks = new_keyspace(
        &session,
        "{'class': 'SimpleStrategy', 'replication_factor': 1}",
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await;
    let first = generation_times(&session).await;
    assert_eq!(first.len(), 1);

    let before_join = Utc::now();
    let switch = cluster.add_node().await.expect("add node");
    let delay = (switch - before_join).num_milliseconds();
    assert!(
        (1_900..=2_500).contains(&delay),
        "generation delay {delay} ms"
    );
    let times = generation_times(&session).await;
    assert_eq!(times, vec![switch, first[0]], "newest first");
    let old = descriptions(&session, first[0]).await;
    let new = descriptions(&session, switch).await;
    assert_eq!(old.len(), 16);
    assert_eq!(new.len(), 32, "16 vnodes per node");
    assert!(new.iter().all(|(_, s)| s.len() == 2), "2 shards per node");
    let old_streams: Vec<&Vec<u8>> = old.iter().flat_map(|(_, s)| s).collect();
    assert!(
        new.iter()
            .flat_map(|(_, s)| s)
            .all(|s| !old_streams.contains(&s)),
        "a new generation has new streams"
    );

    // Writes dated just before and just after the switch (both within the 5 s leeway).
    let switch_us = switch.timestamp_micros();
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, v) VALUES (?, ?) USING TIMESTAMP ?"
        ))
        .await
        .expect("prepare");
    const N: i32 = 40;
    for pk in 0..N {
        session
            .execute_unpaged(&insert, (pk, 0, switch_us - 1000))
            .await
            .expect("before the switch");
        session
            .execute_unpaged(&insert, (pk, 1, switch_us + 1000))
            .await
            .expect("after the switch");
    }
    // Once the switch time has passed, server timestamps use the new generation.
    wait_until(Duration::from_secs(5), "the switch time", || async {
        Utc::now() > switch + chrono::Duration::milliseconds(5)
    })
    .await;
    run(&session, &format!("UPDATE {ks}.t SET v = 2 WHERE pk = {N}")).await;

    let log: Vec<(Vec<u8>, CqlTimeuuid, i32, Option<i32>)> = rows(
        &session,
        one(&format!(
            "SELECT \"cdc$stream_id\", \"cdc$time\", pk, v FROM {ks}.t_scylla_cdc_log"
        )),
        (),
    )
    .await;
    assert_eq!(log.len(), 2 * N as usize + 1);
    for (stream, time, pk, v) in &log {
        let t = micros(time);
        let (generation, name) = match v {
            Some(0) => {
                assert_eq!(t, switch_us - 1000);
                (&old, "old")
            }
            Some(1) => {
                assert_eq!(t, switch_us + 1000);
                (&new, "new")
            }
            _ => {
                assert!(t > switch_us, "a server timestamp after the switch");
                (&new, "new")
            }
        };
        assert_eq!(
            stream,
            &vnode_stream(generation, token_of(*pk)),
            "pk {pk} v {v:?}: the {name} generation's stream"
        );
    }
    // The driver learns about the new node.
    wait_until(Duration::from_secs(10), "the driver to see 2 nodes", || {
        let session = session.clone();
        async move {
            let _ = session.refresh_metadata().await;
            session.get_cluster_state().get_nodes_info().len() == 2
        }
    })
    .await;
    cluster.shutdown().await;
}

/// The last token of tablet `i` of `n` (equal ranges, the last ending at `i64::MAX`).
fn tablet_last_token(i: u64, n: u64) -> i64 {
    let width = (1u128 << 64) / u128::from(n);
    ((width * u128::from(i + 1) - 1) as u64).wrapping_sub(1 << 63) as i64
}

/// `system.cdc_streams` rows of a table: `(timestamp, state, stream)`.
async fn stream_rows(session: &Session, ks: &str) -> Vec<(DateTime<Utc>, i8, Vec<u8>)> {
    rows(
        session,
        one(
            "SELECT timestamp, stream_state, stream_id FROM system.cdc_streams \
             WHERE keyspace_name = ? AND table_name = ?",
        ),
        (ks, "t"),
    )
    .await
}

/// The streams of a set in token order, as a reader fetches them (state 0 = current).
async fn current_streams(session: &Session, ks: &str, at: DateTime<Utc>) -> Vec<Vec<u8>> {
    let mut streams: Vec<Vec<u8>> = rows::<(Vec<u8>,)>(
        session,
        one(
            "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name = ? AND table_name = ? \
             AND timestamp = ? AND stream_state = 0",
        ),
        (ks, "t", at),
    )
    .await
    .into_iter()
    .map(|r| r.0)
    .collect();
    streams.sort_by_key(|s| stream_token(s));
    streams
}

/// The tablet stream of a base token: the first stream whose token is at or after it.
fn tablet_stream(streams: &[Vec<u8>], token: i64) -> &Vec<u8> {
    streams
        .iter()
        .find(|s| stream_token(s) >= token)
        .expect("the last stream ends at the maximum token")
}

/// A CDC table `t (pk int PRIMARY KEY, v int)` in a new tablet keyspace (replication factor
/// 1, 4 initial tablets): the keyspace and the times just before and just after the table's
/// creation. `None` when a real cluster refuses tablets or CDC on them (Scylla before
/// 2025.4): the test then says it is skipped.
async fn tablet_cdc_table(
    test: &str,
    cluster: &TestCluster,
    session: &Session,
) -> Option<(String, DateTime<Utc>, DateTime<Utc>)> {
    let ks = unique_keyspace_name();
    let refused = |what: &str, e: ExecutionError| match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Invalid | DbError::ConfigError,
            msg,
        )) if cluster.embedded().is_none() && msg.contains("tablets") => {
            skip(test, &format!("SCYLLA_URI's cluster refuses {what}: {msg}"));
        }
        e => panic!("{what}: {e}"),
    };
    if let Err(e) = session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1}} AND tablets = {{'enabled': true, 'initial': 4}}"
            ),
            (),
        )
        .await
    {
        refused("a tablets keyspace (tablets disabled)", e);
        return None;
    }
    let (initial,): (Option<i32>,) = session
        .query_unpaged(
            "SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
            (&ks,),
        )
        .await
        .expect("scylla_keyspaces")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert!(initial.is_some(), "a tablets keyspace");
    if cluster.embedded().is_some() {
        assert_eq!(initial, Some(4));
    }
    let before = Utc::now();
    let created = session
        .query_unpaged(
            format!(
                "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"
            ),
            (),
        )
        .await;
    let after = Utc::now();
    match created {
        Ok(_) => Some((ks, before, after)),
        Err(e) => {
            refused("CDC on tablets (Scylla before 2025.4)", e);
            run(session, &format!("DROP KEYSPACE {ks}")).await;
            None
        }
    }
}

/// The stream set timestamps of table `t`, newest first.
async fn stream_set_times(session: &Session, ks: &str) -> Vec<DateTime<Utc>> {
    rows::<(DateTime<Utc>,)>(
        session,
        one("SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = ? AND table_name = ?"),
        (ks, "t"),
    )
    .await
    .into_iter()
    .map(|r| r.0)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablet_tables_have_one_stream_set_per_table() {
    const TEST: &str = "tablet_tables_have_one_stream_set_per_table";
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let Some((ks, before, after)) = tablet_cdc_table(TEST, &cluster, &session).await else {
        cluster.shutdown().await;
        return;
    };
    // The first set is dated 5 s before the log's creation (with a second for the clocks of
    // a real cluster).
    let times = stream_set_times(&session, &ks).await;
    assert_eq!(times.len(), 1);
    let first = times[0];
    let skew = if cluster.embedded().is_some() {
        chrono::Duration::milliseconds(2)
    } else {
        chrono::Duration::seconds(1)
    };
    let lead = chrono::Duration::seconds(5);
    assert!(
        first >= before - lead - skew && first <= after - lead + skew,
        "first set at {first}, table created between {before} and {after}"
    );
    // One stream per tablet, at the tablet's last token; a table has a power of two of
    // equal tablets (the 4 initial ones on the embedded cluster).
    let first_set = current_streams(&session, &ks, first).await;
    let n = first_set.len() as u64;
    assert!(n.is_power_of_two(), "{n} tablets");
    if cluster.embedded().is_some() {
        assert_eq!(n, 4);
        assert_eq!(
            first_set
                .iter()
                .map(|s| stream_token(s))
                .collect::<Vec<_>>(),
            [
                -4_611_686_018_427_387_905,
                -1,
                4_611_686_018_427_387_903,
                i64::MAX
            ]
        );
    }
    let tokens: Vec<i64> = first_set.iter().map(|s| stream_token(s)).collect();
    assert_eq!(
        tokens,
        (0..n).map(|i| tablet_last_token(i, n)).collect::<Vec<_>>()
    );
    for s in &first_set {
        assert_eq!(s.len(), 16);
        let low = u64::from_be_bytes(s[8..].try_into().expect("8 bytes"));
        assert_eq!(low & 0x03ff_ffff, 1, "index 0, version 1");
    }
    // The first timestamp lists every stream as current (0) and opened (2).
    let mut states: Vec<(i8, Vec<u8>)> = stream_rows(&session, &ks)
        .await
        .into_iter()
        .map(|(t, state, s)| {
            assert_eq!(t, first);
            (state, s)
        })
        .collect();
    states.sort();
    let mut want: Vec<(i8, Vec<u8>)> = first_set.iter().map(|s| (0, s.clone())).collect();
    want.extend(first_set.iter().map(|s| (2, s.clone())));
    want.sort();
    assert_eq!(states, want);

    // Writes go to the first stream at or after their token.
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, v) VALUES (?, ?) USING TIMESTAMP ?"
        ))
        .await
        .expect("prepare");
    let now_us = Utc::now().timestamp_micros();
    const N: i32 = 40;
    for pk in 0..N {
        session
            .execute_unpaged(&insert, (pk, 0, now_us))
            .await
            .expect("write");
    }
    // No "past" rule for tablets: a write dated just after the first set is admitted, one
    // before it is not.
    session
        .execute_unpaged(&insert, (N, 0, first.timestamp_micros() + 1000))
        .await
        .expect("dated just after the first set");
    match session
        .execute_unpaged(&insert, (N + 1, 0, first.timestamp_micros() - 1000))
        .await
    {
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::ServerError,
            msg,
        ))) => {
            if cluster.embedded().is_some() {
                assert!(
                    msg.contains("could not find any CDC streams for table"),
                    "{msg}"
                );
            }
        }
        other => panic!("expected a ServerError, got {other:?}"),
    }
    let log: Vec<(Vec<u8>, i32)> = rows(
        &session,
        one(&format!(
            "SELECT \"cdc$stream_id\", pk FROM {ks}.t_scylla_cdc_log"
        )),
        (),
    )
    .await;
    assert_eq!(log.len(), N as usize + 1);
    for (stream, pk) in &log {
        assert_eq!(stream, tablet_stream(&first_set, token_of(*pk)), "pk {pk}");
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tablet_split_renews_the_stream_set() {
    const TEST: &str = "a_tablet_split_renews_the_stream_set";
    if !embedded_only(TEST, "splits a table's tablets") {
        return;
    }
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster");
    let embedded = cluster.embedded().expect("the embedded cluster");
    let session = cluster.session().await.expect("session");
    let (ks, _, _) = tablet_cdc_table(TEST, &cluster, &session)
        .await
        .expect("the embedded cluster has CDC on tablets");
    let times = stream_set_times(&session, &ks).await;
    assert_eq!(times.len(), 1);
    let first = times[0];
    let first_set = current_streams(&session, &ks, first).await;
    assert_eq!(first_set.len(), 4);
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, v) VALUES (?, ?) USING TIMESTAMP ?"
        ))
        .await
        .expect("prepare");
    const N: i32 = 40;
    let now_us = Utc::now().timestamp_micros();
    for pk in 0..N {
        session
            .execute_unpaged(&insert, (pk, 0, now_us))
            .await
            .expect("write");
    }

    // A split: a second set of 8 streams from now + the generation delay.
    let split = embedded.split_tablets(&ks, "t").await.expect("split");
    let delay = (split - Utc::now()).num_milliseconds();
    assert!(
        (1_000..=2_100).contains(&delay),
        "split takes effect in {delay} ms"
    );
    assert_eq!(
        stream_set_times(&session, &ks).await,
        vec![split, first],
        "newest first"
    );
    // The Rust library's lookups of the current and next set.
    let (latest,): (DateTime<Utc>,) = session
        .query_unpaged(
            one(
                "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = ? \
                 AND table_name = ? AND timestamp <= ? ORDER BY timestamp DESC LIMIT 1",
            ),
            (&ks, "t", Utc::now()),
        )
        .await
        .expect("current set")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one");
    assert_eq!(latest, first);
    let (next,): (DateTime<Utc>,) = session
        .query_unpaged(
            one(
                "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = ? \
                 AND table_name = ? AND timestamp > ? ORDER BY timestamp ASC LIMIT 1",
            ),
            (&ks, "t", first),
        )
        .await
        .expect("next set")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one");
    assert_eq!(next, split);

    let second_set = current_streams(&session, &ks, split).await;
    let tokens: Vec<i64> = second_set.iter().map(|s| stream_token(s)).collect();
    assert_eq!(
        tokens,
        (0..8).map(|i| tablet_last_token(i, 8)).collect::<Vec<_>>()
    );
    assert!(second_set.iter().all(|s| !first_set.contains(s)));
    let at_split: Vec<(i8, Vec<u8>)> = stream_rows(&session, &ks)
        .await
        .into_iter()
        .filter(|(t, _, _)| *t == split)
        .map(|(_, state, s)| (state, s))
        .collect();
    let count = |state: i8| at_split.iter().filter(|(s, _)| *s == state).count();
    assert_eq!((count(0), count(1), count(2)), (8, 4, 8));
    assert!(
        at_split
            .iter()
            .filter(|(s, _)| *s == 1)
            .all(|(_, id)| first_set.contains(id)),
        "the closed streams are the first set's"
    );

    // Writes dated after the split use the new set, writes before it the old one.
    let split_us = split.timestamp_micros();
    for pk in 0..N {
        session
            .execute_unpaged(&insert, (pk, 1, split_us + 1000))
            .await
            .expect("after the split");
        session
            .execute_unpaged(&insert, (pk, 2, split_us - 1000))
            .await
            .expect("before the split");
    }
    let log: Vec<(Vec<u8>, i32, Option<i32>)> = rows(
        &session,
        one(&format!(
            "SELECT \"cdc$stream_id\", pk, v FROM {ks}.t_scylla_cdc_log"
        )),
        (),
    )
    .await;
    assert_eq!(log.len(), 3 * N as usize);
    for (stream, pk, v) in &log {
        let set = if *v == Some(1) {
            &second_set
        } else {
            &first_set
        };
        assert_eq!(stream, tablet_stream(set, token_of(*pk)), "pk {pk} v {v:?}");
    }
    // Splitting a table of a vnode keyspace is an error.
    assert!(
        embedded
            .split_tablets("system_distributed", "cdc_generation_timestamps")
            .await
            .is_err()
    );
    cluster.shutdown().await;
}
