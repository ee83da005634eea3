//! Write-side behaviour checked against ScyllaDB's source: conditional statements and
//! batches (`cql3/statements/cas_request.cc`, `batch_statement.cc`), counter restrictions
//! (`modification_statement.cc`).

use super::*;

/// Result columns (names) and rows of a statement answering rows.
#[track_caller]
fn cols_rows(t: &mut TestDb, cql: &str) -> (Vec<String>, Vec<Vec<Option<Value>>>) {
    match t.ok(cql) {
        Res::Rows { cols, rows, .. } => (cols.into_iter().map(|c| c.0).collect(), rows),
        other => panic!("{cql}: not rows: {other:?}"),
    }
}

fn yes() -> Option<Value> {
    Some(Value::Boolean(true))
}

fn no() -> Option<Value> {
    Some(Value::Boolean(false))
}

const LWT_TABLE: &str =
    "CREATE TABLE t (pk int, ck int, v int, t text, m map<text, int>, PRIMARY KEY (pk, ck))";

#[test]
fn conditional_batch_answers_one_old_row_per_statement_in_statement_order() {
    let mut t = TestDb::with_ks();
    t.ok(LWT_TABLE);
    t.ok("INSERT INTO t (pk, ck, v) VALUES (1, 1, 1)");
    // Applied: [applied] + primary key + every column IF NOT EXISTS reads (all of them).
    let (cols, rows) = cols_rows(
        &mut t,
        "BEGIN BATCH UPDATE t SET v = 2 WHERE pk = 1 AND ck = 1 IF v = 1; \
         INSERT INTO t (pk, ck, v) VALUES (1, 2, 20) IF NOT EXISTS; APPLY BATCH",
    );
    assert_eq!(cols, ["[applied]", "pk", "ck", "m", "t", "v"]);
    assert_eq!(
        rows,
        vec![
            vec![yes(), int(1), int(1), None, None, int(1)],
            vec![yes(), None, None, None, None, None],
        ]
    );
    assert_eq!(
        t.rows("SELECT ck, v FROM t WHERE pk = 1"),
        vec![vec![int(1), int(2)], vec![int(2), int(20)]]
    );
    // Not applied: the rows in statement order (ck 2 first), nothing written.
    let (cols, rows) = cols_rows(
        &mut t,
        "BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 2, 30) IF NOT EXISTS; \
         UPDATE t SET v = 9 WHERE pk = 1 AND ck = 1 IF v = 7; APPLY BATCH",
    );
    assert_eq!(cols, ["[applied]", "pk", "ck", "m", "t", "v"]);
    assert_eq!(
        rows,
        vec![
            vec![no(), int(1), int(2), None, None, int(20)],
            vec![no(), int(1), int(1), None, None, int(2)],
        ]
    );
    assert_eq!(
        t.rows("SELECT ck, v FROM t WHERE pk = 1"),
        vec![vec![int(1), int(2)], vec![int(2), int(20)]]
    );
    // Only condition columns (and the key) when no statement is IF [NOT] EXISTS.
    let (cols, rows) = cols_rows(
        &mut t,
        "BEGIN BATCH UPDATE t SET t = 'x' WHERE pk = 1 AND ck = 1 IF v = 2; \
         UPDATE t SET v = 3 WHERE pk = 1 AND ck = 1; APPLY BATCH",
    );
    assert_eq!(cols, ["[applied]", "pk", "ck", "v"]);
    assert_eq!(
        rows,
        vec![
            vec![yes(), int(1), int(1), int(2)],
            vec![yes(), int(1), int(1), int(2)],
        ]
    );
    // A single statement answers over its condition columns only.
    let (cols, rows) = cols_rows(
        &mut t,
        "UPDATE t SET v = 4 WHERE pk = 1 AND ck = 1 IF v = 3",
    );
    assert_eq!(cols, ["[applied]", "v"]);
    assert_eq!(rows, vec![vec![yes(), int(3)]]);
}

#[test]
fn conditional_batch_accepts_a_statement_timestamp_and_writes_at_its_own() {
    let mut t = TestDb::with_ks();
    t.ok(LWT_TABLE);
    let (cols, rows) = cols_rows(
        &mut t,
        "BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS; \
         INSERT INTO t (pk, ck, v) VALUES (1, 2, 1) USING TIMESTAMP 5; APPLY BATCH",
    );
    assert_eq!(cols.len(), 6);
    assert_eq!(rows, vec![vec![yes(), None, None, None, None, None]; 2]);
    let w = t.rows("SELECT writetime(v) FROM t WHERE pk = 1 AND ck = 2");
    let first = t.rows("SELECT writetime(v) FROM t WHERE pk = 1 AND ck = 1");
    assert_ne!(w[0][0], Some(Value::Bigint(5)));
    assert_eq!(
        w, first,
        "both statements are written at the transaction's timestamp"
    );
    // A batch-level timestamp, or one on a conditional statement, is refused.
    let e = t.err(
        "BEGIN BATCH USING TIMESTAMP 5 INSERT INTO t (pk, ck, v) VALUES (1, 3, 1) IF NOT EXISTS; \
         APPLY BATCH",
    );
    assert_eq!(e.code, 0x2200);
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for conditional BATCH"
    );
    let e = t.err(
        "BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 3, 1) IF NOT EXISTS USING TIMESTAMP 5; \
         APPLY BATCH",
    );
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for conditional updates"
    );
    for cql in [
        "INSERT INTO t (pk, ck, v) VALUES (1, 3, 1) IF NOT EXISTS USING TIMESTAMP 5",
        "UPDATE t USING TIMESTAMP 5 SET v = 1 WHERE pk = 1 AND ck = 1 IF v = 1",
        "DELETE FROM t USING TIMESTAMP 5 WHERE pk = 1 AND ck = 1 IF EXISTS",
    ] {
        let e = t.err(cql);
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                0x2200,
                "Cannot provide custom timestamp for conditional updates"
            ),
            "{cql}"
        );
    }
    // A one-statement UNLOGGED conditional batch sees the row the previous batch wrote.
    let rows = t.rows(
        "BEGIN UNLOGGED BATCH INSERT INTO t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS; APPLY BATCH",
    );
    assert_eq!(rows, vec![vec![no(), int(1), int(1), None, None, int(1)]]);
}

#[test]
fn static_column_conditions_are_checked_on_the_static_row() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE s (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))");
    let (cols, rows) = cols_rows(&mut t, "INSERT INTO s (pk, s) VALUES (1, 5) IF NOT EXISTS");
    assert_eq!(cols, ["[applied]", "pk", "ck", "s", "v"]);
    assert_eq!(rows, vec![vec![yes(), None, None, None, None]]);
    assert_eq!(
        t.rows("UPDATE s SET s = 6 WHERE pk = 1 IF s = 5"),
        vec![vec![yes(), int(5)]]
    );
    // The row ck = 1 does not exist: the condition on s is checked on the static row.
    assert_eq!(
        t.rows("UPDATE s SET v = 1 WHERE pk = 1 AND ck = 1 IF s = 6"),
        vec![vec![yes(), int(6)]]
    );
    assert_eq!(
        t.rows("UPDATE s SET v = 9 WHERE pk = 1 AND ck = 3 IF s = 5"),
        vec![vec![no(), int(6)]]
    );
    assert_eq!(
        t.rows("SELECT * FROM s"),
        vec![vec![int(1), int(1), int(6), int(1)]]
    );
    // In a batch: the missing row and the static-only statement both show the static row.
    let (cols, rows) = cols_rows(
        &mut t,
        "BEGIN BATCH UPDATE s SET v = 2 WHERE pk = 1 AND ck = 2 IF s = 6; \
         UPDATE s SET s = 7 WHERE pk = 1; APPLY BATCH",
    );
    assert_eq!(cols, ["[applied]", "pk", "ck", "s"]);
    assert_eq!(
        rows,
        vec![
            vec![yes(), int(1), None, int(6)],
            vec![yes(), int(1), None, int(6)]
        ]
    );
    assert_eq!(
        t.rows("SELECT ck, s, v FROM s WHERE pk = 1"),
        vec![vec![int(1), int(7), int(1)], vec![int(2), int(7), int(2)]]
    );
    // IF NOT EXISTS of a static-only insert looks at the static row only: a partition with
    // rows but no static value does not count as existing.
    t.ok("INSERT INTO s (pk, ck, v) VALUES (2, 1, 1)");
    assert_eq!(
        t.rows("INSERT INTO s (pk, s) VALUES (2, 1) IF NOT EXISTS")[0][0],
        yes()
    );
    assert_eq!(
        t.rows("INSERT INTO s (pk, s) VALUES (2, 2) IF NOT EXISTS")[0][0],
        no()
    );
    // A missing partition: nothing to compare with.
    assert_eq!(
        t.rows("UPDATE s SET v = 1 WHERE pk = 3 AND ck = 1 IF s = null"),
        vec![vec![yes(), None]]
    );
}

#[test]
fn conditional_deletes_must_name_the_whole_row_unless_static() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE s (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO s (pk, ck, s, v) VALUES (1, 1, 1, 1)");
    let regular = "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns";
    for cql in [
        "DELETE FROM s WHERE pk = 1 IF v = 1",
        "DELETE FROM s WHERE pk = 1 IF EXISTS",
        "DELETE FROM s WHERE pk = 1 IF s = 1",
        "DELETE v FROM s WHERE pk = 1 AND ck > 0 IF s = 1",
    ] {
        let e = t.err(cql);
        assert_eq!((e.code, e.message.as_str()), (0x2200, regular), "{cql}");
    }
    let e = t.err("DELETE s FROM s WHERE pk = 1 IF v = 1");
    assert_eq!(
        e.message,
        "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns"
    );
    assert_eq!(
        t.rows("DELETE s FROM s WHERE pk = 1 IF s = 1"),
        vec![vec![yes(), int(1)]]
    );
    assert_eq!(t.rows("SELECT s, v FROM s"), vec![vec![None, int(1)]]);
    // IN is refused on either key, even with one value.
    let e = t.err("DELETE FROM s WHERE pk IN (1) AND ck = 1 IF EXISTS");
    assert_eq!(
        e.message,
        "IN on the partition key is not supported with conditional deletions"
    );
    let e = t.err("UPDATE s SET v = 1 WHERE pk = 1 AND ck IN (1) IF v = 1");
    assert_eq!(
        e.message,
        "IN on the clustering key columns is not supported with conditional updates"
    );
}

#[test]
fn counter_updates_refuse_timestamps_when_executed() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE c (pk int PRIMARY KEY, a counter)");
    let e = t.err("UPDATE c USING TIMESTAMP 10 SET a = a + 1 WHERE pk = 1");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            0x2200,
            "Cannot provide custom timestamp for counter updates"
        )
    );
    let e = t.err("UPDATE c USING TTL 10 SET a = a + 1 WHERE pk = 1");
    assert_eq!(e.message, "Cannot provide custom TTL for counter updates");
    // ScyllaDB checks at execution (`modification_statement::validate`): PREPARE succeeds.
    let id = t
        .prepare("UPDATE c USING TIMESTAMP ? SET a = a + 1 WHERE pk = ?")
        .expect("prepared");
    let e = t
        .execute(
            &id,
            vec![bv(&Value::Bigint(10)), bv(&Value::Int(1))],
            None,
            None,
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for counter updates"
    );
    let e = t.err(
        "BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE c SET a = a + 1 WHERE pk = 1; APPLY BATCH",
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (0x2200, "Cannot provide custom timestamp for counter BATCH")
    );
    let e = t.err(
        "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 UPDATE c SET a = a + 1 WHERE pk = 1; APPLY BATCH",
    );
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for a BATCH containing counters"
    );
    let e = t.err(
        "BEGIN COUNTER BATCH UPDATE c USING TIMESTAMP 5 SET a = a + 1 WHERE pk = 1; APPLY BATCH",
    );
    assert_eq!(
        e.message,
        "Cannot provide custom timestamp for counter updates"
    );
    assert!(t.rows("SELECT a FROM c").is_empty(), "nothing was written");
    t.ok("BEGIN COUNTER BATCH UPDATE c SET a = a + 2 WHERE pk = 1; APPLY BATCH");
    assert_eq!(
        t.rows("SELECT a FROM c"),
        vec![vec![Some(Value::Bigint(2))]]
    );
}

#[test]
fn decimals_equal_in_value_are_one_clustering_key_and_one_element() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE d (pk decimal, ck decimal, v int, s set<decimal>, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO d (pk, ck, v) VALUES (1.0, 1.0, 1)");
    t.ok("INSERT INTO d (pk, ck, v) VALUES (1.0, 1.00, 2)");
    // A partition key is its serialized form: 1.00 is another partition.
    t.ok("INSERT INTO d (pk, ck, v) VALUES (1.00, 1.0, 3)");
    let scale = |v: &Option<Value>| match v {
        Some(Value::Decimal(d)) => d.scale,
        other => panic!("not a decimal: {other:?}"),
    };
    let rows = t.rows("SELECT pk, ck, v FROM d WHERE pk = 1.0");
    assert_eq!(rows.len(), 1, "{rows:?}");
    // The row keeps the key it was first written with.
    assert_eq!((scale(&rows[0][0]), scale(&rows[0][1])), (1, 1));
    assert_eq!(rows[0][2], int(2));
    let rows = t.rows("SELECT pk, v FROM d WHERE pk = 1.00");
    assert_eq!(rows.len(), 1);
    assert_eq!((scale(&rows[0][0]), rows[0][1].clone()), (2, int(3)));
    assert_eq!(
        t.rows("SELECT v FROM d WHERE pk = 1.0 AND ck = 1.000"),
        vec![vec![int(2)]]
    );
    t.ok("UPDATE d SET s = {1.0, 1.00, 2} WHERE pk = 1.0 AND ck = 1");
    let rows = t.rows("SELECT s FROM d WHERE pk = 1.0 AND ck = 1");
    let Some(Value::Set(s)) = &rows[0][0] else {
        panic!("{rows:?}")
    };
    assert_eq!(s.len(), 2, "{s:?}");
    // A condition compares values, not scales.
    assert_eq!(
        t.rows("UPDATE d SET v = 4 WHERE pk = 1.0 AND ck = 1.0 IF v = 2")[0][0],
        yes()
    );
    assert_eq!(
        t.rows("UPDATE d SET s = {5} WHERE pk = 1.0 AND ck = 1.0 IF s CONTAINS 1.000")[0][0],
        yes()
    );
}

/// The CREATE statement DESCRIBE gives for a table.
#[track_caller]
fn describe_table(t: &mut TestDb, table: &str) -> String {
    let rows = t.rows(&format!("DESCRIBE TABLE {table}"));
    match rows[0].get(3) {
        Some(Some(Value::Text(s))) => s.to_string(),
        other => panic!("no create statement: {other:?}"),
    }
}

#[test]
fn new_tables_get_scylla_2025_4_compression_and_tombstone_gc_defaults() {
    let mut t = TestDb::with_nodes(3);
    t.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    t.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v int)");
    let rows = t.rows(
        "SELECT compression FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 't'",
    );
    assert_eq!(
        rows,
        vec![vec![Some(Value::Map(
            vec![(
                Value::text("sstable_compression"),
                Value::text("LZ4WithDictsCompressor")
            )]
            .into()
        ))]]
    );
    let d = describe_table(&mut t, "ks.t");
    assert!(
        d.contains(
            "AND tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '3600'}"
        ),
        "{d}"
    );
    // Cassandra-compatible compressors are stored fully qualified, dictionary ones not;
    // chunk_length_kb is stored as chunk_length_in_kb.
    t.ok("CREATE TABLE ks.z (pk int PRIMARY KEY) WITH compression = {'sstable_compression': 'ZstdCompressor', 'chunk_length_kb': 16, 'compression_level': 3}");
    let d = describe_table(&mut t, "ks.z");
    assert!(
        d.contains("AND compression = {'chunk_length_in_kb': '16', 'compression_level': '3', 'sstable_compression': 'org.apache.cassandra.io.compress.ZstdCompressor'}"),
        "{d}"
    );
    t.ok("CREATE TABLE ks.d (pk int PRIMARY KEY) WITH compression = {'sstable_compression': 'org.apache.cassandra.io.compress.ZstdWithDictsCompressor'}");
    assert!(
        describe_table(&mut t, "ks.d")
            .contains("{'sstable_compression': 'ZstdWithDictsCompressor'}")
    );
    for (cql, code, message) in [
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH compression = {'class': 'LZ4Compressor'}",
            0x2300,
            "Missing sub-option 'sstable_compression' for the 'compression' option.",
        ),
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH compression = {'sstable_compression': 'LZ4Compressor', 'compression_level': 1}",
            0x2300,
            "Unknown compression option 'compression_level'.",
        ),
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH compression = {'sstable_compression': 'LZ4Compressor', 'chunk_length_in_kb': 3}",
            0x2300,
            "chunk_length_in_kb/chunk_length_kb must be a power of 2.",
        ),
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH compression = {'sstable_compression': 'Nope'}",
            0x0000,
            "Unknown sstable_compression: Nope",
        ),
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH tombstone_gc = {'mode': 'repair'}",
            0x2300,
            "tombstone_gc option with mode = repair not supported for table with RF one or local replication strategy",
        ),
        (
            "CREATE TABLE ks.e (pk int PRIMARY KEY) WITH tombstone_gc = {'mode': 'Timeout'}",
            0x2300,
            "Invalid value for tombstone_gc option mode: Timeout",
        ),
    ] {
        let e = t.err(cql);
        assert_eq!((e.code, e.message.as_str()), (code, message), "{cql}");
    }
    // A tablets keyspace that needs repairs defaults to repair mode; its CDC log to timeout.
    t.ok("CREATE KEYSPACE tk WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3} AND tablets = {'enabled': true}");
    t.ok("CREATE TABLE tk.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    assert!(
        describe_table(&mut t, "tk.t")
            .contains("tombstone_gc = {'mode': 'repair', 'propagation_delay_in_seconds': '3600'}")
    );
    let log = t.rows("DESCRIBE TABLE tk.t");
    let Some(Some(Value::Text(alter))) = log[1].get(3) else {
        panic!("{log:?}")
    };
    assert!(
        alter.contains("compression = {'sstable_compression': 'LZ4WithDictsCompressor'}"),
        "{alter}"
    );
    assert!(
        alter
            .contains("tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '3600'}"),
        "{alter}"
    );
    t.ok("CREATE TABLE tk.r (pk int PRIMARY KEY) WITH tombstone_gc = {'mode': 'repair'}");
}

#[test]
fn tablets_keyspaces_store_initial_zero_unless_given() {
    let mut t = TestDb::new();
    t.ok("CREATE KEYSPACE tk WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'enabled': true}");
    t.ok("CREATE KEYSPACE t4 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 4}");
    let rows = t.rows("SELECT keyspace_name, initial_tablets FROM system_schema.scylla_keyspaces");
    assert!(rows.contains(&vec![text("tk"), int(0)]), "{rows:?}");
    assert!(rows.contains(&vec![text("t4"), int(4)]), "{rows:?}");
    let d = t.rows("DESCRIBE KEYSPACE tk");
    let Some(Some(Value::Text(create))) = d[0].get(3) else {
        panic!("{d:?}")
    };
    assert!(
        create.ends_with("AND tablets = {'enabled': true};"),
        "{create}"
    );
    // A CDC log of a table there still gets the embedded cluster's tablet streams.
    t.ok("CREATE TABLE tk.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    let streams = t.rows(
        "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name = 'tk' AND table_name = 't'",
    );
    let distinct: std::collections::BTreeSet<_> = streams.into_iter().collect();
    assert_eq!(
        distinct.len(),
        crate::exec::ddl::tablet_count(0) as usize,
        "{distinct:?}"
    );
}

#[test]
fn schema_tables_show_tuples_frozen_and_dropped_user_types_as_tuples() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b text)");
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, tup tuple<int, text>, l list<frozen<tuple<int>>>, u ut, fu frozen<ut>)");
    let rows = t.rows("SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'");
    for (c, ty) in [
        ("tup", "frozen<tuple<int, text>>"),
        ("l", "list<frozen<tuple<int>>>"),
        ("u", "ut"),
        ("fu", "frozen<ut>"),
    ] {
        assert!(rows.contains(&vec![text(c), text(ty)]), "{c}: {rows:?}");
    }
    t.ok("ALTER TABLE t DROP u");
    t.ok("ALTER TABLE t DROP fu");
    t.ok("ALTER TABLE t DROP tup");
    let rows = t.rows("SELECT column_name, type FROM system_schema.dropped_columns WHERE keyspace_name = 'ks' AND table_name = 't'");
    assert_eq!(
        rows,
        vec![
            vec![text("fu"), text("frozen<tuple<int, text>>")],
            vec![text("tup"), text("frozen<tuple<int, text>>")],
            vec![text("u"), text("frozen<tuple<int, text>>")],
        ]
    );
    // Nothing refers to the type any more: it can be dropped.
    t.ok("DROP TYPE ut");
}
