//! The replication matrix: every change kind on every column type, replicated from one
//! cluster to another, with the destination compared to the source cell by cell (values,
//! `writetime()`, `ttl()`).
//!
//! The clusters are embedded, or the real ones of `SCYLLA_URI` (source) and `SCYLLA_URI2`
//! (destination) when set; when both name the same cluster, the destination is another
//! keyspace of it.

use std::time::Duration;

use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};

use crate::support::*;

const CONVERGE: Duration = Duration::from_secs(30);

/// Source schema: a table with every column type, one with a three-column clustering key
/// (mixed order), one without clustering key, one with a composite partition key and a
/// static column.
fn schema(ks: &str) -> Vec<String> {
    vec![
        format!("CREATE TYPE {ks}.point (x double, y double)"),
        format!(
            "CREATE TYPE {ks}.addr (street text, zip int, geo frozen<point>, tags frozen<set<text>>)"
        ),
        format!(
            "CREATE TABLE {ks}.all_types (pk int, ck int, st text static, \
             c_ascii ascii, c_bigint bigint, c_blob blob, c_boolean boolean, c_date date, \
             c_decimal decimal, c_double double, c_duration duration, c_float float, c_inet inet, \
             c_int int, c_smallint smallint, c_text text, c_time time, c_timestamp timestamp, \
             c_timeuuid timeuuid, c_tinyint tinyint, c_uuid uuid, c_varint varint, \
             c_list list<int>, c_set set<text>, c_map map<int, text>, \
             c_flist frozen<list<int>>, c_fset frozen<set<int>>, c_fmap frozen<map<text, int>>, \
             c_nested map<int, frozen<list<frozen<set<int>>>>>, \
             c_tuple tuple<int, text, frozen<list<int>>>, \
             c_udt addr, c_fudt frozen<addr>, c_list_udt list<frozen<addr>>, \
             PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.mck (pk int, c1 int, c2 text, c3 int, v int, \
             PRIMARY KEY (pk, c1, c2, c3)) \
             WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC, c3 ASC) AND cdc = {{'enabled': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.no_ck (pk text PRIMARY KEY, v int, m map<int, int>) \
             WITH cdc = {{'enabled': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.composite (p1 int, p2 text, c int, s int static, v int, \
             PRIMARY KEY ((p1, p2), c)) WITH cdc = {{'enabled': true}}"
        ),
    ]
}

const TABLES: [&str; 4] = ["all_types", "mck", "no_ck", "composite"];

/// Inserts and additive updates of every kind.
fn phase_writes(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    let mut s = vec![
        format!(
            "INSERT INTO {t} (pk, ck, st, c_ascii, c_bigint, c_blob, c_boolean, c_date, c_decimal, \
             c_double, c_duration, c_float, c_inet, c_int, c_smallint, c_text, c_time, \
             c_timestamp, c_timeuuid, c_tinyint, c_uuid, c_varint, c_list, c_set, c_map, \
             c_flist, c_fset, c_fmap, c_nested, c_tuple, c_udt, c_fudt, c_list_udt) VALUES \
             (1, 1, 'static one', 'ascii', 9223372036854775807, 0xcafe, true, '2024-05-01', \
             12.345, 1.5, 1h30m, 2.25, '10.0.0.1', -7, 300, 'text ''quoted''', '12:34:56.789', \
             '2024-05-01T12:00:00.123Z', 50554d6e-29bb-11e5-b345-feff819cdc9f, 7, \
             123e4567-e89b-12d3-a456-426614174000, 123456789012345678901234567890, [1, 2, 3], \
             {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, [4, 5], {{6, 7}}, {{'x': 1}}, \
             {{1: [{{1, 2}}, {{3}}]}}, (1, 'tuple', [9]), \
             {{street: 'Main', zip: 12345, geo: {{x: 1.0, y: 2.0}}, tags: {{'home'}}}}, \
             {{street: 'Frozen', zip: 1}}, [{{street: 'L1', zip: 1}}])"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int, c_text) VALUES (1, 2, 2, 'ttl') USING TTL 3600"),
        format!("INSERT INTO {t} (pk, ck) VALUES (1, 3)"),
        format!("UPDATE {t} SET c_int = 5 WHERE pk = 1 AND ck = 4"),
        format!("UPDATE {t} SET st = 'static two' WHERE pk = 2"),
        format!(
            "UPDATE {t} SET c_list = c_list + [4], c_set = c_set + {{'c'}}, \
             c_map = c_map + {{3: 'three'}} WHERE pk = 1 AND ck = 1"
        ),
        format!("UPDATE {t} SET c_list = [0] + c_list WHERE pk = 1 AND ck = 1"),
        format!("UPDATE {t} SET c_udt.zip = 54321 WHERE pk = 1 AND ck = 1"),
        format!(
            "UPDATE {t} SET c_list_udt = c_list_udt + [{{street: 'L2', zip: 2}}] \
             WHERE pk = 1 AND ck = 1"
        ),
        format!(
            "BEGIN BATCH INSERT INTO {t} (pk, ck, c_int) VALUES (1, 5, 1); \
             UPDATE {t} SET c_text = 'b' WHERE pk = 1 AND ck = 6; APPLY BATCH"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int) VALUES (1, 7, 7) IF NOT EXISTS"),
        format!("UPDATE {t} SET c_map[5] = 'five' WHERE pk = 1 AND ck = 1"),
        format!("UPDATE {t} SET c_nested = c_nested + {{2: [{{4}}]}} WHERE pk = 1 AND ck = 1"),
        format!("INSERT INTO {t} (pk, ck, c_int) VALUES (3, 1, 1)"),
    ];
    s.extend(mck_grid(ks));
    s.extend([
        format!("INSERT INTO {ks}.no_ck (pk, v, m) VALUES ('a', 1, {{1: 1}})"),
        format!("UPDATE {ks}.no_ck SET v = 2 WHERE pk = 'b'"),
        format!("UPDATE {ks}.no_ck SET m = m + {{2: 2}} WHERE pk = 'a'"),
        format!("INSERT INTO {ks}.composite (p1, p2, c, s, v) VALUES (1, 'x', 1, 1, 1)"),
        format!("INSERT INTO {ks}.composite (p1, p2, c, v) VALUES (1, 'x', 2, 2)"),
        format!("INSERT INTO {ks}.composite (p1, p2, c, v) VALUES (2, 'y', 1, 1)"),
        format!("UPDATE {ks}.composite SET s = 5 WHERE p1 = 2 AND p2 = 'y'"),
    ]);
    s
}

/// Overwrites, element and column deletions, row, range and partition deletes.
fn phase_deletes(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    let row = "WHERE pk = 1 AND ck = 1";
    let mut s = vec![
        format!("DELETE c_text FROM {t} {row}"),
        format!("DELETE c_map FROM {t} {row}"),
        format!("UPDATE {t} SET c_set = c_set - {{'a'}} {row}"),
        format!("UPDATE {t} SET c_map = {{7: 'seven'}} {row}"),
        format!("DELETE c_list[0] FROM {t} {row}"),
        format!("UPDATE {t} SET c_list[0] = 100 {row}"),
        format!("UPDATE {t} SET c_list = c_list - [3] {row}"),
        format!("UPDATE {t} SET c_udt.street = null {row}"),
        format!("UPDATE {t} SET c_udt = {{street: 'New', zip: 2}} WHERE pk = 1 AND ck = 2"),
        format!("UPDATE {t} SET c_set = {{'z'}} {row}"),
        format!(
            "UPDATE {t} SET c_flist = [8], c_fudt = {{street: 'F2'}}, c_tuple = (2, null, null) {row}"
        ),
        format!("UPDATE {t} SET c_int = null {row}"),
        format!("DELETE st FROM {t} WHERE pk = 2"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck = 3"),
        format!("INSERT INTO {t} (pk, ck, c_list) VALUES (1, 5, [42])"),
        format!("DELETE c_udt FROM {t} WHERE pk = 1 AND ck = 2"),
        format!("DELETE c_map[2], c_nested[1] FROM {t} {row}"),
        format!("DELETE FROM {t} WHERE pk = 3"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck = 7 IF EXISTS"),
    ];
    s.extend(mck_range_deletes(ks));
    s.extend([
        format!("DELETE FROM {ks}.no_ck WHERE pk = 'b'"),
        format!("DELETE m[1] FROM {ks}.no_ck WHERE pk = 'a'"),
        format!("DELETE FROM {ks}.composite WHERE p1 = 1 AND p2 = 'x'"),
        format!("DELETE FROM {ks}.composite WHERE p1 = 2 AND p2 = 'y' AND c > 0"),
    ]);
    s
}

/// Writes with TTLs, short (expired before or soon after replication) and long.
fn phase_ttls(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    vec![
        format!("UPDATE {t} USING TTL 3 SET c_int = 1, c_text = 'short' WHERE pk = 1 AND ck = 8"),
        format!(
            "UPDATE {t} USING TTL 3600 SET c_map = c_map + {{1: 'ttl'}}, c_set = {{'ttl'}}, \
             c_bigint = 5 WHERE pk = 1 AND ck = 9"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int) VALUES (1, 10, 1) USING TTL 2"),
        format!("UPDATE {t} USING TTL 3600 SET c_udt.zip = 9 WHERE pk = 1 AND ck = 9"),
    ]
}

/// The rows of `all_types` written with a TTL of 2 or 3 seconds.
const SHORT_TTL_ROWS: [&str; 2] = ["Int(1), Int(8)", "Int(1), Int(10)"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_kind_and_column_type_converges() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks, dest_ks) = (&pair.s, &pair.d, &pair.ks, &pair.dest_ks);
    exec_all(s, &schema(ks)).await?;
    // One destination table exists already; the others are created by the replicator.
    exec(
        d,
        format!("CREATE TABLE {dest_ks}.no_ck (pk text PRIMARY KEY, v int, m map<int, int>)"),
    )
    .await?;

    let mut args = pair.replicator_args(&TABLES.join(","));
    args.extend(["--create-destination-table".into(), "--start=-1m".into()]);
    let mut replicator = spawn_replicator(args);

    for (name, phase) in [
        ("writes", phase_writes(ks)),
        ("deletes", phase_deletes(ks)),
        ("ttls", phase_ttls(ks)),
    ] {
        exec_all(s, &phase).await?;
        for table in TABLES {
            wait_converged(&mut replicator, s, d, ks, dest_ks, table, CONVERGE)
                .await
                .map_err(|e| e.context(format!("after phase {name}")))?;
        }
    }
    // The short TTLs expire on both sides alike.
    wait_for("the short TTLs to expire", CONVERGE, || async {
        let snap = snapshot(s, ks, "all_types").await?;
        Ok(SHORT_TTL_ROWS.iter().all(|k| !snap.contains_key(*k)))
    })
    .await?;
    wait_converged(&mut replicator, s, d, ks, dest_ks, "all_types", CONVERGE).await?;
    let snap = snapshot(d, dest_ks, "all_types").await?;
    for key in SHORT_TTL_ROWS {
        assert!(!snap.contains_key(key), "expired row replicated: {snap:#?}");
    }
    let long = snap
        .get("Int(1), Int(9)")
        .and_then(|r| r.get("c_bigint"))
        .and_then(|c| c.ttl)
        .unwrap_or(0);
    assert!(long > 3500, "long TTL kept: {long}");
    // Lists have the source's order (elements keep their keys).
    let list = &snap["Int(1), Int(1)"]["c_list"].value;
    assert!(list.contains("100"), "{list}");

    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    pair.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_the_log_twice_changes_nothing() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks, dest_ks) = (&pair.s, &pair.d, &pair.ks, &pair.dest_ks);
    exec_all(s, &schema(ks)).await?;
    exec_all(s, &phase_writes(ks)).await?;
    exec_all(s, &phase_deletes(ks)).await?;
    // Two replicators without checkpoints, one after the other, from the same start: the
    // second replays every change the first applied.
    for _ in 0..2 {
        let mut args = pair.replicator_args(&TABLES.join(","));
        args.extend([
            "--create-destination-table".into(),
            "--start=-1m".into(),
            "--no-checkpoints".into(),
        ]);
        let mut replicator = spawn_replicator(args);
        for table in TABLES {
            wait_converged(&mut replicator, s, d, ks, dest_ks, table, CONVERGE).await?;
        }
        assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    }
    pair.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicates_into_another_keyspace_of_the_same_cluster() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    let copy = format!("{ks}_copy");
    create_keyspace(&s, &ks, 1).await?;
    create_keyspace(&s, &copy, 1).await?;
    exec_all(&s, &schema(&ks)).await?;
    let mut args = replicator_args(&hosts(&c), &hosts(&c), &ks, "all_types");
    args.extend([
        "--create-destination-table".into(),
        "--start=-1m".into(),
        format!("--destination-keyspace={copy}"),
    ]);
    let mut replicator = spawn_replicator(args);
    let writes: Vec<String> = phase_writes(&ks)
        .into_iter()
        .filter(|w| w.contains(".all_types"))
        .collect();
    exec_all(&s, &writes).await?;
    // UDT values name their keyspace; the replica's are in the copy's keyspace.
    wait_converged(&mut replicator, &s, &s, &ks, &copy, "all_types", CONVERGE).await?;
    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    drop_keyspace(&s, &ks).await?;
    drop_keyspace(&s, &copy).await?;
    c.shutdown().await;
    Ok(())
}
