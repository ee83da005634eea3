//! The change matrix through Kafka: every change kind the replicator's matrix covers
//! (inserts and updates of every native type, list/set/map additions, removals and
//! replacements, frozen and non-frozen UDTs, a tuple, column deletions, TTLs, row, range and
//! partition deletions, batches (one writing a row twice with different TTLs), lightweight
//! transactions, the static row, a table without clustering key, a three-column clustering
//! key with a descending column) written once, published by three runs of the program
//! (`--format legacy`, the default; `--format advanced --before full --after full`; the same
//! with `--no-schemas`), each given `--start` and `--end` so that it exits by itself once
//! everything is published, then read back with clients nobody here wrote:
//!
//! * Kafka's Java consumer (`kafka-check consume`, read_committed): the exact records, per
//!   key in order: `op`, the key, `before` and `after` as `docs/kafka-events.md` documents
//!   them, the tombstones, the `scylla.*` headers, the `source` block and the times;
//! * Kafka Connect's `JsonConverter` (`kafka-check connect`, `schemas.enable` as the run
//!   writes them): every record converts, to the values we wrote (Connect's `Date` and
//!   `Timestamp` as dates and instants), under the documented schemas;
//! * Debezium's `ExtractNewRecordState` (`kafka-check flatten`,
//!   `delete.tombstone.handling.mode=rewrite`, `add.fields=op`): inserts and updates become
//!   the row (`after`) with `__deleted: "false"`, deletions the row before (`before`) with
//!   `__deleted: "true"`, and tombstones are dropped, as Debezium documents the mode. An event
//!   whose `before` and `after` are both `null` (the advanced format's partition and range
//!   deletions, and its deletions of a row without pre-image) is what the transformation
//!   takes for a truncation: it is dropped too.
//!
//! Snapshot reads (`op: r`) are not part of it. With `MATRIX_DUMP=DIR` the lines each client
//! printed are written to `DIR/{consume,connect,connect-plain,flatten}.json`.

use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, Utc};
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::support::*;

const TEST: &str = "matrix::every_change_kind_arrives_as_documented";

fn schema(ks: &str) -> Vec<String> {
    let cdc = "cdc = {'enabled': true, 'preimage': true, 'postimage': true}";
    vec![
        format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ),
        format!("CREATE TYPE {ks}.addr (street text, zip int)"),
        format!(
            "CREATE TABLE {ks}.m (pk int, ck int, st text static, \
             c_ascii ascii, c_bigint bigint, c_blob blob, c_boolean boolean, c_date date, \
             c_decimal decimal, c_double double, c_duration duration, c_float float, \
             c_inet inet, c_int int, c_smallint smallint, c_text text, c_time time, \
             c_timestamp timestamp, c_timeuuid timeuuid, c_tinyint tinyint, c_uuid uuid, \
             c_varint varint, c_list list<int>, c_set set<text>, c_map map<int, text>, \
             c_flist frozen<list<int>>, c_tuple tuple<int, text>, c_udt addr, \
             c_fudt frozen<addr>, PRIMARY KEY (pk, ck)) WITH {cdc}"
        ),
        format!("CREATE TABLE {ks}.nock (pk int PRIMARY KEY, v text) WITH {cdc}"),
        format!(
            "CREATE TABLE {ks}.mck (pk int, c1 int, c2 text, c3 int, v int, \
             PRIMARY KEY (pk, c1, c2, c3)) \
             WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC, c3 ASC) AND {cdc}"
        ),
    ]
}

/// The statements, one change kind each, on keys of their own (the key names the case in
/// [`expected`]).
fn statements(ks: &str) -> Vec<String> {
    let m = format!("{ks}.m");
    let mut s = vec![
        // pk 1: an insert of every column but the static one.
        format!(
            "INSERT INTO {m} (pk, ck, c_ascii, c_bigint, c_blob, c_boolean, c_date, c_decimal, \
             c_double, c_duration, c_float, c_inet, c_int, c_smallint, c_text, c_time, \
             c_timestamp, c_timeuuid, c_tinyint, c_uuid, c_varint, c_list, c_set, c_map, \
             c_flist, c_tuple, c_udt, c_fudt) VALUES (1, 1, 'ascii', 9223372036854775807, \
             0xcafe, true, '2024-05-01', 12.345, 1.5, 1h30m, 2.25, '::1', -7, 300, \
             '{TEXT_CQL}', '12:34:56.789', '2024-05-01T12:00:00.123Z', \
             50554d6e-29bb-11e5-b345-feff819cdc9f, 7, 123e4567-e89b-12d3-a456-426614174000, \
             123456789012345678901234567890, [1, 2, 3], {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, \
             [4, 5], (1, 'tuple'), {{street: 'Main', zip: 12345}}, \
             {{street: 'Frozen', zip: 1}})"
        ),
        // pk 2: an insert with a TTL.
        format!("INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (2, 1, 2, 'ttl') USING TTL 3600"),
        // pk 3: an update of a row that does not exist.
        format!("UPDATE {m} SET c_int = 5 WHERE pk = 3 AND ck = 1"),
    ];
    // pk 4: the collections and the non-frozen UDT, one change on each row of a partition
    // inserted by one batch.
    let mut batch = String::from("BEGIN UNLOGGED BATCH ");
    for ck in 1..=11 {
        batch.push_str(&format!(
            "INSERT INTO {m} (pk, ck, c_list, c_set, c_map, c_udt) VALUES (4, {ck}, [1, 2], \
             {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, {{street: 'S', zip: 1}}); "
        ));
    }
    batch.push_str("APPLY BATCH");
    s.push(batch);
    s.extend([
        format!("UPDATE {m} SET c_list = c_list + [3] WHERE pk = 4 AND ck = 1"),
        format!("UPDATE {m} SET c_list = [0] + c_list WHERE pk = 4 AND ck = 2"),
        format!("UPDATE {m} SET c_set = c_set - {{'a'}} WHERE pk = 4 AND ck = 3"),
        format!("UPDATE {m} SET c_map[3] = 'three' WHERE pk = 4 AND ck = 4"),
        format!("DELETE c_map[1] FROM {m} WHERE pk = 4 AND ck = 5"),
        format!("UPDATE {m} SET c_list = [9] WHERE pk = 4 AND ck = 6"),
        format!("UPDATE {m} SET c_udt.zip = 2 WHERE pk = 4 AND ck = 7"),
        format!("UPDATE {m} SET c_udt = {{street: 'New', zip: 3}} WHERE pk = 4 AND ck = 8"),
        format!("DELETE c_list[0] FROM {m} WHERE pk = 4 AND ck = 9"),
        format!("DELETE c_set FROM {m} WHERE pk = 4 AND ck = 10"),
        format!("UPDATE {m} SET c_list[0] = 100 WHERE pk = 4 AND ck = 11"),
        // pk 5: frozen values and a tuple replaced, a column deleted, a column set to null.
        format!(
            "BEGIN UNLOGGED BATCH \
             INSERT INTO {m} (pk, ck, c_flist, c_fudt, c_tuple, c_int, c_text) \
             VALUES (5, 1, [1], {{street: 'F', zip: 1}}, (1, 'a'), 1, 'x'); \
             INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (5, 2, 1, 'x'); \
             INSERT INTO {m} (pk, ck, c_int, c_text) VALUES (5, 3, 1, 'x'); APPLY BATCH"
        ),
        format!(
            "UPDATE {m} SET c_flist = [7, 8], c_fudt = {{street: 'F2', zip: 2}}, \
             c_tuple = (2, 'b') WHERE pk = 5 AND ck = 1"
        ),
        format!("DELETE c_text FROM {m} WHERE pk = 5 AND ck = 2"),
        format!("UPDATE {m} SET c_int = null WHERE pk = 5 AND ck = 3"),
        // pk 6: a row deletion.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (6, 1, 6)"),
        format!("DELETE FROM {m} WHERE pk = 6 AND ck = 1"),
        // pk 7: a partition deletion.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (7, 1, 7)"),
        format!("DELETE FROM {m} WHERE pk = 7"),
        // pk 8, 9: range deletions, bounded and open-ended.
        format!("DELETE FROM {m} WHERE pk = 8 AND ck > 1 AND ck <= 5"),
        format!("DELETE FROM {m} WHERE pk = 9 AND ck >= 3"),
        // pk 10: the static row, set then its column deleted.
        format!("UPDATE {m} SET st = 'static' WHERE pk = 10"),
        format!("DELETE st FROM {m} WHERE pk = 10"),
        // pk 11: the static row and a clustering row in one statement.
        format!("INSERT INTO {m} (pk, ck, st, c_int) VALUES (11, 1, 's11', 11)"),
        // pk 12: a logged batch of an insert and an update.
        format!(
            "BEGIN BATCH INSERT INTO {m} (pk, ck, c_int) VALUES (12, 1, 1); \
             UPDATE {m} SET c_text = 'b' WHERE pk = 12 AND ck = 2; APPLY BATCH"
        ),
        // pk 13: lightweight transactions: an insert, an update, a deletion.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (13, 1, 13) IF NOT EXISTS"),
        format!("UPDATE {m} SET c_int = 14 WHERE pk = 13 AND ck = 1 IF c_int = 13"),
        format!("DELETE FROM {m} WHERE pk = 13 AND ck = 1 IF EXISTS"),
        // pk 14: an update with a TTL.
        format!("UPDATE {m} USING TTL 600 SET c_int = 1 WHERE pk = 14 AND ck = 1"),
        // pk 15: an insert over a live row.
        format!("INSERT INTO {m} (pk, ck, c_int) VALUES (15, 1, 1)"),
        format!("INSERT INTO {m} (pk, ck, c_text) VALUES (15, 1, 'again')"),
        // pk 16: one row written twice by a batch, with different TTLs.
        format!(
            "BEGIN UNLOGGED BATCH \
             INSERT INTO {m} (pk, ck, c_int) VALUES (16, 1, 16) USING TTL 100; \
             UPDATE {m} USING TTL 200 SET c_text = 't' WHERE pk = 16 AND ck = 1; APPLY BATCH"
        ),
        // nock: a table without clustering key, its partition deletion the row's.
        format!("INSERT INTO {ks}.nock (pk, v) VALUES (1, 'a')"),
        format!("UPDATE {ks}.nock SET v = 'b' WHERE pk = 1"),
        format!("DELETE FROM {ks}.nock WHERE pk = 1"),
    ]);
    // mck: range deletions on each clustering prefix (c2 descending), a row deletion.
    let mck = format!("{ks}.mck");
    s.extend([
        format!("DELETE FROM {mck} WHERE pk = 1 AND c1 > 1 AND c1 <= 3"),
        format!("DELETE FROM {mck} WHERE pk = 2 AND c1 = 6 AND c2 > 'b' AND c2 <= 'd'"),
        format!("DELETE FROM {mck} WHERE pk = 3 AND c1 = 7 AND c2 = 'c' AND c3 >= 2 AND c3 < 4"),
        format!("DELETE FROM {mck} WHERE pk = 4 AND c1 = 5"),
        format!("DELETE FROM {mck} WHERE pk = 5 AND c1 = 4 AND c2 = 'a' AND c3 = 1"),
    ]);
    s
}

/// `c_text` of pk 1, in CQL and as written: quotes, a non-ASCII letter, a character beyond
/// U+FFFF (a surrogate pair in JSON).
const TEXT_CQL: &str = "h\u{e9}llo ''quoted'' \u{1F600}";
const TEXT: &str = "h\u{e9}llo 'quoted' \u{1F600}";

/// The native columns of `m` other than the key (the legacy format's `Cell`s).
const M_NATIVE: [&str; 20] = [
    "c_ascii",
    "c_bigint",
    "c_blob",
    "c_boolean",
    "c_date",
    "c_decimal",
    "c_double",
    "c_duration",
    "c_float",
    "c_inet",
    "c_int",
    "c_smallint",
    "c_text",
    "c_time",
    "c_timestamp",
    "c_timeuuid",
    "c_tinyint",
    "c_uuid",
    "c_varint",
    "st",
];
/// The other columns of `m`: collections, UDTs, a tuple (not in the legacy format).
const M_NESTED: [&str; 7] = [
    "c_flist", "c_fudt", "c_list", "c_map", "c_set", "c_tuple", "c_udt",
];

/// A table of the matrix: its non-key columns, each with whether the legacy format has it.
struct Table {
    name: &'static str,
    columns: Vec<(&'static str, bool)>,
}

fn tables() -> [Table; 3] {
    [
        Table {
            name: "m",
            columns: M_NATIVE
                .iter()
                .map(|c| (*c, true))
                .chain(M_NESTED.iter().map(|c| (*c, false)))
                .collect(),
        },
        Table {
            name: "nock",
            columns: vec![("v", true)],
        },
        Table {
            name: "mck",
            columns: vec![("v", true)],
        },
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Legacy,
    Advanced,
}

/// One expected record: an event (`op`, `before`, `after` as payload values) or a tombstone
/// (`op` `None`), with its `scylla.*` headers other than `scylla.stream` and `scylla.time`.
#[derive(Clone, Debug)]
struct Want {
    op: Option<&'static str>,
    before: Value,
    after: Value,
    headers: Vec<(&'static str, String)>,
}

impl Want {
    fn header(mut self, name: &'static str, value: &str) -> Want {
        self.headers.push((name, value.to_owned()));
        self
    }
}

/// The expected records of one key of one table, in order.
struct KeyWant {
    table: &'static str,
    /// The key columns and values, in the advanced key's order.
    key: Vec<(&'static str, Value)>,
    records: Vec<Want>,
}

type Cols = Vec<(&'static str, Value)>;

/// Builds the expectations of one format.
struct Expect {
    format: Format,
    tables: [Table; 3],
    keys: Vec<KeyWant>,
}

impl Expect {
    fn table(&self, name: &str) -> &Table {
        self.tables
            .iter()
            .find(|t| t.name == name)
            .expect("a matrix table")
    }

    /// A row of `table` as the format writes it: the key columns, then `set` (advanced: plain
    /// values, every other column `null`; legacy: `set`'s native columns as `{"value": v}`,
    /// the others `null`, no collections, UDTs or tuples).
    fn row(&self, table: &str, key: &Cols, set: &Cols) -> Value {
        let t = self.table(table);
        let mut row = Map::new();
        for (k, v) in key {
            row.insert((*k).to_owned(), v.clone());
        }
        for (c, legacy) in &t.columns {
            let v = set.iter().find(|(n, _)| n == c).map(|(_, v)| v.clone());
            match self.format {
                Format::Advanced => {
                    row.insert((*c).to_owned(), v.unwrap_or(Value::Null));
                }
                Format::Legacy if *legacy => {
                    row.insert(
                        (*c).to_owned(),
                        v.map_or(Value::Null, |v| json!({ "value": v })),
                    );
                }
                Format::Legacy => {}
            }
        }
        Value::Object(row)
    }

    /// Starts the records of a key.
    fn key(&mut self, table: &'static str, key: Cols) {
        self.keys.push(KeyWant {
            table,
            key,
            records: Vec::new(),
        });
    }

    fn cur(&self) -> (&'static str, Cols) {
        let k = self.keys.last().expect("a key first");
        (k.table, k.key.clone())
    }

    fn push(&mut self, w: Want) {
        self.keys.last_mut().expect("a key first").records.push(w);
    }

    /// An insert of a row that did not exist: `after` the row (advanced: the post-image;
    /// legacy: the change's cells).
    fn insert(&mut self, set: Cols) -> &mut Want {
        let (t, key) = self.cur();
        let after = self.row(t, &key, &set);
        self.push(Want {
            op: Some("c"),
            before: Value::Null,
            after,
            headers: Vec::new(),
        });
        self.last()
    }

    /// A change of a row, `op` `c` or `u`. Advanced: `before` the pre-image merged into the
    /// post-image (`pre`, `None` when no pre-image is written), `after` the post-image
    /// (`post`). Legacy: `before` `null` (no pre-images), `after` the change's cells
    /// (`delta`; a column set to `null` is `{"value": null}`).
    fn change(
        &mut self,
        op: &'static str,
        pre: Option<Cols>,
        post: Cols,
        delta: Cols,
    ) -> &mut Want {
        let (t, key) = self.cur();
        let (before, after) = match self.format {
            Format::Advanced => (
                pre.map_or(Value::Null, |p| self.row(t, &key, &p)),
                self.row(t, &key, &post),
            ),
            Format::Legacy => (Value::Null, self.row(t, &key, &delta)),
        };
        self.push(Want {
            op: Some(op),
            before,
            after,
            headers: Vec::new(),
        });
        self.last()
    }

    /// A deletion of a row: `before` the pre-image (`pre`, advanced; `None`: none written),
    /// or the key with every other column `null` (legacy), `after` `null`; then a tombstone.
    fn delete(&mut self, pre: Option<Cols>) {
        let (t, key) = self.cur();
        let before = match self.format {
            Format::Advanced => pre.map_or(Value::Null, |p| self.row(t, &key, &p)),
            Format::Legacy => self.row(t, &key, &vec![]),
        };
        self.push(Want {
            op: Some("d"),
            before,
            after: Value::Null,
            headers: Vec::new(),
        });
        self.tombstone(&[]);
    }

    /// A partition or range deletion (`target`), keyed by the partition: `before` and
    /// `after` `null` (legacy: `before` the key, every other column `null`), the header
    /// `scylla.target`, a range's `scylla.range`; a tombstone after a partition deletion.
    fn extended_delete(&mut self, target: &'static str, range: Option<&str>) {
        let (t, key) = self.cur();
        let before = match self.format {
            Format::Advanced => Value::Null,
            Format::Legacy => self.row(t, &key, &vec![]),
        };
        let mut w = Want {
            op: Some("d"),
            before,
            after: Value::Null,
            headers: vec![("scylla.target", target.to_owned())],
        };
        if let Some(r) = range {
            w = w.header("scylla.range", r);
        }
        self.push(w);
        if range.is_none() {
            self.tombstone(&[("scylla.target", target)]);
        }
    }

    fn tombstone(&mut self, headers: &[(&'static str, &str)]) {
        self.push(Want {
            op: None,
            before: Value::Null,
            after: Value::Null,
            headers: headers.iter().map(|(n, v)| (*n, (*v).to_owned())).collect(),
        });
    }

    fn last(&mut self) -> &mut Want {
        self.keys
            .last_mut()
            .and_then(|k| k.records.last_mut())
            .expect("a record")
    }
}

fn days(y: i32, m: u32, d: u32) -> i64 {
    let date = NaiveDate::from_ymd_opt(y, m, d).expect("a date");
    (date - NaiveDate::from_ymd_opt(1970, 1, 1).expect("the epoch")).num_days()
}

/// Every record the statements give in `format`, by key.
fn expected(format: Format) -> Vec<KeyWant> {
    let mut e = Expect {
        format,
        tables: tables(),
        keys: Vec::new(),
    };
    let m = |pk: i32, ck: Option<i32>| -> Cols { vec![("pk", json!(pk)), ("ck", json!(ck))] };
    let c = |pairs: &[(&'static str, Value)]| -> Cols { pairs.to_vec() };
    let time_ns = NaiveTime::from_hms_milli_opt(12, 34, 56, 789)
        .expect("a time")
        .signed_duration_since(NaiveTime::MIN)
        .num_nanoseconds()
        .expect("in range");
    let timestamp_ms = DateTime::parse_from_rfc3339("2024-05-01T12:00:00.123Z")
        .expect("a time")
        .timestamp_millis();

    // pk 1: every type (the values as docs/kafka-events.md "Values" gives them).
    e.key("m", m(1, Some(1)));
    e.insert(c(&[
        ("c_ascii", json!("ascii")),
        ("c_bigint", json!(i64::MAX)),
        ("c_blob", json!("yv4=")),
        ("c_boolean", json!(true)),
        ("c_date", json!(days(2024, 5, 1))),
        ("c_decimal", json!("12.345")),
        ("c_double", json!(1.5)),
        ("c_duration", json!("1h30m")),
        ("c_float", json!(2.25)),
        ("c_inet", json!("0:0:0:0:0:0:0:1")),
        ("c_int", json!(-7)),
        ("c_smallint", json!(300)),
        ("c_text", json!(TEXT)),
        ("c_time", json!(time_ns)),
        ("c_timestamp", json!(timestamp_ms)),
        ("c_timeuuid", json!("50554d6e-29bb-11e5-b345-feff819cdc9f")),
        ("c_tinyint", json!(7)),
        ("c_uuid", json!("123e4567-e89b-12d3-a456-426614174000")),
        ("c_varint", json!("123456789012345678901234567890")),
        ("c_list", json!([1, 2, 3])),
        ("c_set", json!(["a", "b"])),
        (
            "c_map",
            json!([{"key": 1, "value": "one"}, {"key": 2, "value": "two"}]),
        ),
        ("c_flist", json!([4, 5])),
        ("c_tuple", json!({"field_0": 1, "field_1": "tuple"})),
        ("c_udt", json!({"street": "Main", "zip": 12345})),
        ("c_fudt", json!({"street": "Frozen", "zip": 1})),
    ]));

    // pk 2: a TTL.
    e.key("m", m(2, Some(1)));
    e.insert(c(&[("c_int", json!(2)), ("c_text", json!("ttl"))]))
        .headers
        .push(("scylla.ttl", "3600".to_owned()));

    // pk 3: an update of a missing row: no pre-image.
    e.key("m", m(3, Some(1)));
    let v = c(&[("c_int", json!(5))]);
    e.change("u", None, v.clone(), v);

    // pk 4: collections. Each row is inserted by one batch, then changed once; `before` is
    // the post-image with the changed column from the pre-image: the inserted row.
    let base = c(&[
        ("c_list", json!([1, 2])),
        ("c_set", json!(["a", "b"])),
        (
            "c_map",
            json!([{"key": 1, "value": "one"}, {"key": 2, "value": "two"}]),
        ),
        ("c_udt", json!({"street": "S", "zip": 1})),
    ]);
    let with = |col: &'static str, v: Value| -> Cols {
        base.iter()
            .map(|(n, old)| (*n, if *n == col { v.clone() } else { old.clone() }))
            .collect()
    };
    let changes = [
        ("c_list", json!([1, 2, 3])),
        ("c_list", json!([0, 1, 2])),
        ("c_set", json!(["b"])),
        (
            "c_map",
            json!([{"key": 1, "value": "one"}, {"key": 2, "value": "two"}, {"key": 3, "value": "three"}]),
        ),
        ("c_map", json!([{"key": 2, "value": "two"}])),
        ("c_list", json!([9])),
        ("c_udt", json!({"street": "S", "zip": 2})),
        ("c_udt", json!({"street": "New", "zip": 3})),
        ("c_list", json!([2])),
        ("c_set", Value::Null),
        ("c_list", json!([100, 2])),
    ];
    for (i, (col, v)) in changes.into_iter().enumerate() {
        e.key("m", m(4, Some(i as i32 + 1)));
        e.insert(base.clone());
        // Legacy: the change's cells are collections only: every column `null`.
        e.change("u", Some(base.clone()), with(col, v), vec![]);
    }

    // pk 5: frozen values replaced; a column deleted; a column set to null.
    let frozen = c(&[
        ("c_flist", json!([1])),
        ("c_fudt", json!({"street": "F", "zip": 1})),
        ("c_tuple", json!({"field_0": 1, "field_1": "a"})),
        ("c_int", json!(1)),
        ("c_text", json!("x")),
    ]);
    let plain = c(&[("c_int", json!(1)), ("c_text", json!("x"))]);
    e.key("m", m(5, Some(1)));
    e.insert(frozen.clone());
    e.change(
        "u",
        Some(frozen),
        c(&[
            ("c_flist", json!([7, 8])),
            ("c_fudt", json!({"street": "F2", "zip": 2})),
            ("c_tuple", json!({"field_0": 2, "field_1": "b"})),
            ("c_int", json!(1)),
            ("c_text", json!("x")),
        ]),
        vec![],
    );
    e.key("m", m(5, Some(2)));
    e.insert(plain.clone());
    e.change(
        "u",
        Some(plain.clone()),
        c(&[("c_int", json!(1))]),
        c(&[("c_text", Value::Null)]),
    );
    e.key("m", m(5, Some(3)));
    e.insert(plain.clone());
    e.change(
        "u",
        Some(plain),
        c(&[("c_text", json!("x"))]),
        c(&[("c_int", Value::Null)]),
    );

    // pk 6: a row deletion, its pre-image, a tombstone.
    e.key("m", m(6, Some(1)));
    e.insert(c(&[("c_int", json!(6))]));
    e.delete(Some(c(&[("c_int", json!(6))])));

    // pk 7: a partition deletion, keyed by the partition.
    e.key("m", m(7, Some(1)));
    e.insert(c(&[("c_int", json!(7))]));
    e.key("m", m(7, None));
    e.extended_delete("partition", None);

    // pk 8, 9: range deletions.
    e.key("m", m(8, None));
    e.extended_delete(
        "range",
        Some(r#"{"start":{"ck":1},"start_inclusive":false,"end":{"ck":5},"end_inclusive":true}"#),
    );
    e.key("m", m(9, None));
    e.extended_delete(
        "range",
        Some(r#"{"start":{"ck":3},"start_inclusive":true,"end":{},"end_inclusive":true}"#),
    );

    // pk 10: the static row (keyed with a null clustering column): set, then deleted.
    e.key("m", m(10, None));
    let st = c(&[("st", json!("static"))]);
    e.change("u", None, st.clone(), st.clone())
        .headers
        .push(("scylla.target", "static-row".to_owned()));
    e.change("u", Some(st), vec![], c(&[("st", Value::Null)]))
        .headers
        .push(("scylla.target", "static-row".to_owned()));

    // pk 11: the static row's event first, then the clustering row's.
    e.key("m", m(11, None));
    let st = c(&[("st", json!("s11"))]);
    e.change("u", None, st.clone(), st)
        .headers
        .push(("scylla.target", "static-row".to_owned()));
    e.key("m", m(11, Some(1)));
    e.insert(c(&[("c_int", json!(11))]));

    // pk 12: a batch.
    e.key("m", m(12, Some(1)));
    e.insert(c(&[("c_int", json!(1))]));
    e.key("m", m(12, Some(2)));
    let v = c(&[("c_text", json!("b"))]);
    e.change("u", None, v.clone(), v);

    // pk 13: lightweight transactions.
    e.key("m", m(13, Some(1)));
    e.insert(c(&[("c_int", json!(13))]));
    let v = c(&[("c_int", json!(14))]);
    e.change("u", Some(c(&[("c_int", json!(13))])), v.clone(), v);
    e.delete(Some(c(&[("c_int", json!(14))])));

    // pk 14: an update with a TTL.
    e.key("m", m(14, Some(1)));
    let v = c(&[("c_int", json!(1))]);
    e.change("u", None, v.clone(), v)
        .headers
        .push(("scylla.ttl", "600".to_owned()));

    // pk 15: an insert over a live row: `c` with the pre-image as `before`. With
    // `'preimage': true` it has the columns the insert writes (c_text, null before).
    e.key("m", m(15, Some(1)));
    e.insert(c(&[("c_int", json!(1))]));
    e.change(
        "c",
        Some(vec![]),
        c(&[("c_int", json!(1)), ("c_text", json!("again"))]),
        c(&[("c_text", json!("again"))]),
    );

    // pk 16: a row written twice by one batch with different TTLs: one event in the
    // advanced format (the first write's operation and TTL, both writes' columns), one per
    // write in the legacy format, each with its write's TTL.
    e.key("m", m(16, Some(1)));
    match format {
        Format::Advanced => e
            .insert(c(&[("c_int", json!(16)), ("c_text", json!("t"))]))
            .headers
            .push(("scylla.ttl", "100".to_owned())),
        Format::Legacy => {
            e.insert(c(&[("c_int", json!(16))]))
                .headers
                .push(("scylla.ttl", "100".to_owned()));
            e.change("u", None, vec![], c(&[("c_text", json!("t"))]))
                .headers
                .push(("scylla.ttl", "200".to_owned()));
        }
    }

    // nock: insert, update, and the partition deletion as the row's deletion (no
    // `scylla.target`), with its pre-image and a tombstone.
    e.key("nock", vec![("pk", json!(1))]);
    e.insert(c(&[("v", json!("a"))]));
    let v = c(&[("v", json!("b"))]);
    e.change("u", Some(c(&[("v", json!("a"))])), v.clone(), v);
    e.delete(Some(c(&[("v", json!("b"))])));

    // mck: each range's bounds list the clustering columns it restricts, in key order. With
    // c2 descending, a range of c2 is stored from its greatest value: `start` is the
    // clustering order's start.
    let mck = |pk: i32| -> Cols {
        vec![
            ("pk", json!(pk)),
            ("c1", Value::Null),
            ("c2", Value::Null),
            ("c3", Value::Null),
        ]
    };
    let ranges = [
        r#"{"start":{"c1":1},"start_inclusive":false,"end":{"c1":3},"end_inclusive":true}"#,
        r#"{"start":{"c1":6,"c2":"d"},"start_inclusive":true,"end":{"c1":6,"c2":"b"},"end_inclusive":false}"#,
        r#"{"start":{"c1":7,"c2":"c","c3":2},"start_inclusive":true,"end":{"c1":7,"c2":"c","c3":4},"end_inclusive":false}"#,
        r#"{"start":{"c1":5},"start_inclusive":true,"end":{"c1":5},"end_inclusive":true}"#,
    ];
    for (i, range) in ranges.into_iter().enumerate() {
        e.key("mck", mck(i as i32 + 1));
        e.extended_delete("range", Some(range));
    }
    // A deletion of a row that did not exist: no pre-image.
    e.key(
        "mck",
        vec![
            ("pk", json!(5)),
            ("c1", json!(4)),
            ("c2", json!("a")),
            ("c3", json!(1)),
        ],
    );
    e.delete(None);
    e.keys
}

/// One run of the program.
struct Run {
    prefix: &'static str,
    format: Format,
    schemas: bool,
    args: &'static [&'static str],
}

const RUNS: [Run; 3] = [
    Run {
        prefix: "lg",
        format: Format::Legacy,
        schemas: true,
        args: &[],
    },
    Run {
        prefix: "adv",
        format: Format::Advanced,
        schemas: true,
        args: &[
            "--format", "advanced", "--before", "full", "--after", "full",
        ],
    },
    Run {
        prefix: "ns",
        format: Format::Advanced,
        schemas: false,
        args: &[
            "--format",
            "advanced",
            "--before",
            "full",
            "--after",
            "full",
            "--no-schemas",
        ],
    },
];

/// What a consumed record holds, decoded.
struct Record {
    table: String,
    partition: i64,
    offset: i64,
    /// The key's text as published.
    key_text: String,
    key: Value,
    /// The value (the payload with schemas), `None` for a tombstone.
    value: Option<Value>,
    /// The whole value's JSON, with its schema.
    envelope: Option<Value>,
    value_text: Option<String>,
    headers: Map<String, Value>,
    raw: Value,
}

impl Record {
    fn of(raw: &Value, prefix: &str, ks: &str) -> anyhow::Result<Record> {
        let topic = raw["topic"].as_str().context("no topic")?;
        let table = topic
            .strip_prefix(&format!("{prefix}.{ks}."))
            .with_context(|| format!("topic {topic}"))?
            .to_owned();
        let key_text = raw["key"].as_str().context("a null key")?.to_owned();
        let key: Value = serde_json::from_str(&key_text)?;
        let value_text = raw["value"].as_str().map(str::to_owned);
        let envelope: Option<Value> = value_text
            .as_deref()
            .map(serde_json::from_str)
            .transpose()?;
        let (key, value) = if key.get("schema").is_some() {
            (
                key["payload"].clone(),
                envelope.as_ref().map(|v| v["payload"].clone()),
            )
        } else {
            (key, envelope.clone())
        };
        Ok(Record {
            table,
            partition: raw["partition"].as_i64().context("partition")?,
            offset: raw["offset"].as_i64().context("offset")?,
            key_text,
            key,
            value,
            envelope,
            value_text,
            headers: raw["headers"].as_object().cloned().unwrap_or_default(),
            raw: raw.clone(),
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(Value::as_str)
    }

    /// The `scylla.*` headers other than the stream and the time.
    fn extra_headers(&self) -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(n, _)| *n != "scylla.stream" && *n != "scylla.time")
            .map(|(n, v)| (n.clone(), v.as_str().unwrap_or("<not a string>").to_owned()))
            .collect();
        h.sort();
        h
    }
}

/// Failures collected, to report them all at once.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    fn eq(&mut self, what: impl FnOnce() -> String, got: &Value, want: &Value) {
        if got != want {
            self.0
                .push(format!("{}:\n    got  {got}\n    want {want}", what()));
        }
    }
}

/// The key's text in the format's field order: advanced, partition key then clustering
/// columns; legacy, every key column in the log's (name) order.
fn key_text(format: Format, key: &Cols) -> String {
    let mut cols = key.clone();
    if format == Format::Legacy {
        cols.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    }
    let fields: Vec<String> = cols.iter().map(|(n, v)| format!("\"{n}\":{v}")).collect();
    format!("{{{}}}", fields.join(","))
}

fn key_value(key: &Cols) -> Value {
    Value::Object(
        key.iter()
            .map(|(n, v)| ((*n).to_owned(), v.clone()))
            .collect(),
    )
}

/// The write time (µs) of a timeuuid.
fn uuid_micros(u: &Uuid) -> Option<i64> {
    let (secs, nanos) = u.get_timestamp()?.to_unix();
    Some(secs as i64 * 1_000_000 + i64::from(nanos / 1000))
}

/// The checks of one run's records as Kafka's consumer read them. Returns the records with
/// their expectations, in the order they were read.
fn check_consumed<'w>(
    run: &Run,
    ks: &str,
    consumed: &[Value],
    wants: &'w [KeyWant],
    written: (i64, i64),
    f: &mut Failures,
) -> anyhow::Result<Vec<(Record, &'w Want)>> {
    let mut records = Vec::new();
    for raw in consumed {
        let topic = raw["topic"].as_str().unwrap_or_default();
        if topic.starts_with(&format!("{}.", run.prefix)) {
            records.push(Record::of(raw, run.prefix, ks)?);
        }
    }
    records.sort_by_key(|r| (r.table.clone(), r.partition, r.offset));
    let total: usize = wants.iter().map(|k| k.records.len()).sum();
    f.check(records.len() == total, || {
        format!(
            "{}: {} records, {total} expected",
            run.prefix,
            records.len()
        )
    });
    let mut matched: Vec<Option<&Want>> = vec![None; records.len()];
    for kw in wants {
        let key = key_value(&kw.key);
        let of_key: Vec<usize> = (0..records.len())
            .filter(|&i| records[i].table == kw.table && records[i].key == key)
            .collect();
        let what = |i: usize| format!("{} {}.{} key {key} record {i}", run.prefix, ks, kw.table);
        if of_key.len() != kw.records.len() {
            f.0.push(format!(
                "{}: {} records, {} expected: {:#?}",
                what(0),
                of_key.len(),
                kw.records.len(),
                of_key
                    .iter()
                    .map(|&i| records[i].raw.clone())
                    .collect::<Vec<_>>()
            ));
            continue;
        }
        for (n, (&i, want)) in of_key.iter().zip(&kw.records).enumerate() {
            matched[i] = Some(want);
            let r = &records[i];
            f.check(r.key_text.contains(&key_text(run.format, &kw.key)), || {
                format!(
                    "{}: key {} is not in the documented field order ({})",
                    what(n),
                    r.key_text,
                    key_text(run.format, &kw.key)
                )
            });
            let mut want_headers: Vec<(String, String)> = want
                .headers
                .iter()
                .map(|(a, b)| ((*a).to_owned(), b.clone()))
                .collect();
            want_headers.sort();
            f.check(r.extra_headers() == want_headers, || {
                format!(
                    "{}: headers {:?}, expected {want_headers:?}",
                    what(n),
                    r.extra_headers()
                )
            });
            match (&r.value, want.op) {
                (None, None) => {}
                (Some(v), Some(op)) => {
                    f.eq(|| format!("{} op", what(n)), &v["op"], &json!(op));
                    f.eq(|| format!("{} before", what(n)), &v["before"], &want.before);
                    f.eq(|| format!("{} after", what(n)), &v["after"], &want.after);
                }
                (v, op) => f.0.push(format!(
                    "{}: value {v:?}, expected {}",
                    what(n),
                    op.map_or("a tombstone".to_owned(), |o| format!("op {o}"))
                )),
            }
        }
        // A tombstone comes right after its deletion: the next record of the partition.
        for w in of_key.windows(2) {
            let (a, b) = (&records[w[0]], &records[w[1]]);
            if b.value.is_none() {
                f.check(
                    a.value.as_ref().is_some_and(|v| v["op"] == "d")
                        && a.partition == b.partition
                        && b.offset == a.offset + 1,
                    || format!("{}: a tombstone not right after a deletion", what(0)),
                );
                f.check(
                    a.header("scylla.time") == b.header("scylla.time")
                        && a.header("scylla.stream") == b.header("scylla.stream"),
                    || format!("{}: a tombstone of another change than its event", what(0)),
                );
            }
        }
    }
    // The envelope and the times of every record.
    let version = env!("CARGO_PKG_VERSION");
    for r in &records {
        let what = || format!("{} {}.{} offset {}", run.prefix, ks, r.table, r.offset);
        let Some(time) = r.header("scylla.time") else {
            f.0.push(format!("{}: no scylla.time header", what()));
            continue;
        };
        f.check(
            r.header("scylla.stream").is_some_and(|s| !s.is_empty()),
            || format!("{}: no scylla.stream header", what()),
        );
        let micros = Uuid::parse_str(time).ok().as_ref().and_then(uuid_micros);
        f.check(
            micros.is_some_and(|t| t >= written.0 && t <= written.1),
            || format!("{}: scylla.time {time} is not a write's time", what()),
        );
        let (Some(v), Some(envelope)) = (&r.value, &r.envelope) else {
            continue;
        };
        if run.schemas {
            f.eq(
                || format!("{} value schema name", what()),
                &envelope["schema"]["name"],
                &json!(format!("{}.{ks}.{}.Envelope", run.prefix, r.table)),
            );
        } else {
            f.check(envelope.get("schema").is_none(), || {
                format!("{}: a schema with --no-schemas", what())
            });
        }
        let fields: Vec<&str> = v
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut want_fields = vec![
            "after",
            "before",
            "op",
            "source",
            "transaction",
            "ts_ms",
            "ts_ns",
            "ts_us",
        ];
        want_fields.sort();
        f.check(fields == want_fields, || {
            format!("{}: envelope fields {fields:?}", what())
        });
        let us = micros.unwrap_or_default();
        let ms = us.div_euclid(1000);
        f.eq(
            || format!("{} source", what()),
            &v["source"],
            &json!({
                "version": version, "connector": "scylla", "name": run.prefix,
                "ts_ms": ms, "snapshot": "false", "db": ks, "sequence": null,
                "ts_us": us, "ts_ns": ms * 1_000_000, "keyspace_name": ks,
                "table_name": r.table,
            }),
        );
        f.eq(
            || format!("{} transaction", what()),
            &v["transaction"],
            &Value::Null,
        );
        let processed = v["ts_ms"].as_i64().unwrap_or_default();
        f.check(
            processed >= ms && processed <= Utc::now().timestamp_millis(),
            || format!("{}: ts_ms {processed} is not a processing time", what()),
        );
        // The top-level µs and ns: Debezium's envelope's (legacy without pre-images), null
        // in the connector's own (advanced).
        let (want_us, want_ns) = match run.format {
            Format::Legacy => (json!(processed * 1000), json!(processed * 1_000_000)),
            Format::Advanced => (Value::Null, Value::Null),
        };
        f.eq(|| format!("{} ts_us", what()), &v["ts_us"], &want_us);
        f.eq(|| format!("{} ts_ns", what()), &v["ts_ns"], &want_ns);
    }
    // The changes of one statement share their time: the static row's and the clustering
    // row's (pk 11), a batch's rows (pk 12, 16).
    for pk in [11, 12, 16] {
        let times: std::collections::BTreeSet<Option<&str>> = records
            .iter()
            .filter(|r| r.table == "m" && r.key["pk"] == pk)
            .map(|r| r.header("scylla.time"))
            .collect();
        f.check(times.len() == 1, || {
            format!(
                "{}: the rows of one statement (pk {pk}) at times {times:?}",
                run.prefix
            )
        });
    }
    // The rows of one change in the order of its log rows, the static row first: pk 11's
    // static row before its clustering row, pk 12's batch in statement order (when the
    // records share a partition, which orders them).
    for (pk, first, second) in [(11, Value::Null, json!(1)), (12, json!(1), json!(2))] {
        let at = |ck: &Value| {
            records
                .iter()
                .find(|r| r.table == "m" && r.key["pk"] == pk && r.key["ck"] == *ck)
                .map(|r| (r.partition, r.offset))
        };
        if let (Some(a), Some(b)) = (at(&first), at(&second)) {
            f.check(a.0 != b.0 || a.1 < b.1, || {
                format!(
                    "{}: pk {pk}: the rows of one change out of their log order",
                    run.prefix
                )
            });
        }
    }
    // The struct fields in the log's (name) order: pk 1's insert.
    if let Some(r) = records
        .iter()
        .find(|r| r.table == "m" && r.key["pk"] == 1 && r.value.is_some())
    {
        let text = r.value_text.as_deref().unwrap_or_default();
        let after = text.rfind("\"after\":{").unwrap_or_default();
        let mut names: Vec<&str> = ["pk", "ck"]
            .into_iter()
            .chain(M_NATIVE)
            .chain(if run.format == Format::Advanced {
                M_NESTED.to_vec()
            } else {
                vec![]
            })
            .collect();
        names.sort();
        let positions: Vec<Option<usize>> = names
            .iter()
            .map(|n| text[after..].find(&format!("\"{n}\":")))
            .collect();
        f.check(
            positions.iter().all(Option::is_some) && positions.windows(2).all(|w| w[0] < w[1]),
            || {
                format!(
                    "{}: after's fields are not in the log's order {names:?}: {text}",
                    run.prefix
                )
            },
        );
    }
    let mut out = Vec::new();
    for (r, w) in records.into_iter().zip(matched) {
        if let Some(w) = w {
            out.push((r, w));
        }
    }
    Ok(out)
}

/// A payload value as Kafka Connect's `JsonConverter` reads it under the schema and the
/// checker prints it: `Date` as `"2024-05-01"`, `Timestamp` as `"…T…Z"` (the legacy format's
/// inside their `Cell`s); every other value as written.
fn connect_view(format: Format, row: &Value) -> Value {
    let mut row = row.clone();
    let Some(obj) = row.as_object_mut() else {
        return row;
    };
    for (col, date) in [("c_date", true), ("c_timestamp", false)] {
        let slot = match (format, obj.get_mut(col)) {
            (Format::Advanced, Some(v)) => v,
            (Format::Legacy, Some(Value::Object(cell))) => match cell.get_mut("value") {
                Some(v) => v,
                None => continue,
            },
            _ => continue,
        };
        if let Some(n) = slot.as_i64() {
            *slot = if date {
                let d =
                    NaiveDate::from_ymd_opt(1970, 1, 1).expect("the epoch") + TimeDelta::days(n);
                json!(d.format("%Y-%m-%d").to_string())
            } else {
                let t = DateTime::from_timestamp_millis(n).expect("a time");
                json!(t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
            };
        }
    }
    row
}

fn envelope_view(format: Format, v: &Value) -> Value {
    let mut v = v.clone();
    for side in ["before", "after"] {
        v[side] = connect_view(format, &v[side]);
    }
    v
}

/// A field's schema of a Connect struct schema.
fn field<'a>(schema: &'a Value, name: &str) -> &'a Value {
    schema["fields"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["field"] == name))
        .unwrap_or(&Value::Null)
}

/// `connect` (schemas on): each record converts to the values of the consumed payload, under
/// the documented schemas.
fn check_connect(
    run: &Run,
    ks: &str,
    consumed: &[(Record, &Want)],
    connect: &[Value],
    f: &mut Failures,
) {
    let p = run.prefix;
    let mine: Vec<&Value> = connect
        .iter()
        .filter(|c| {
            c["topic"]
                .as_str()
                .is_some_and(|t| t.starts_with(&format!("{p}.")))
        })
        .collect();
    f.check(mine.len() == consumed.len(), || {
        format!(
            "{p}: connect converted {} records, {} consumed",
            mine.len(),
            consumed.len()
        )
    });
    for (r, _) in consumed {
        let topic = format!("{p}.{ks}.{}", r.table);
        let what = || format!("connect {topic} offset {}", r.offset);
        let Some(c) = mine.iter().find(|c| {
            c["topic"] == topic.as_str() && c["partition"] == r.partition && c["offset"] == r.offset
        }) else {
            f.0.push(format!("{}: missing", what()));
            continue;
        };
        f.check(c.get("error").is_none(), || {
            format!("{}: did not convert: {c}", what())
        });
        f.eq(|| format!("{} key", what()), &c["key"], &r.key);
        match &r.value {
            None => {
                f.eq(|| format!("{} value", what()), &c["value"], &Value::Null);
                f.eq(
                    || format!("{} value schema", what()),
                    &c["value_schema"],
                    &Value::Null,
                );
            }
            Some(v) if run.schemas => f.eq(
                || format!("{} value", what()),
                &c["value"],
                &envelope_view(run.format, v),
            ),
            Some(v) => {
                f.eq(|| format!("{} value", what()), &c["value"], v);
                f.eq(
                    || format!("{} value schema", what()),
                    &c["value_schema"],
                    &Value::Null,
                );
            }
        }
        if !run.schemas {
            f.eq(
                || format!("{} key schema", what()),
                &c["key_schema"],
                &Value::Null,
            );
        }
    }
    if !run.schemas {
        return;
    }
    // The schemas of `m`'s records: the key's, and a few of the value's.
    let Some(c) = mine
        .iter()
        .find(|c| c["topic"] == format!("{p}.{ks}.m").as_str() && !c["value"].is_null())
    else {
        f.0.push(format!("{p}: no record of m converted"));
        return;
    };
    let int = json!({"type": "int32", "optional": true});
    let key_fields = match run.format {
        Format::Advanced => json!([
            {"field": "pk", "type": "int32", "optional": true},
            {"field": "ck", "type": "int32", "optional": true},
        ]),
        Format::Legacy => json!([
            {"field": "ck", "type": "int32", "optional": true},
            {"field": "pk", "type": "int32", "optional": true},
        ]),
    };
    f.eq(
        || format!("{p}: key schema"),
        &c["key_schema"],
        &json!({"type": "struct", "optional": false, "name": format!("{p}.{ks}.m.Key"),
                "fields": key_fields}),
    );
    let schema = &c["value_schema"];
    f.eq(
        || format!("{p}: value schema's name"),
        &schema["name"],
        &json!(format!("{p}.{ks}.m.Envelope")),
    );
    let snapshot = field(field(schema, "source"), "snapshot");
    f.eq(
        || format!("{p}: source.snapshot's schema"),
        &json!([
            &snapshot["name"],
            &snapshot["parameters"]["allowed"],
            &snapshot["default"]
        ]),
        &json!([
            "io.debezium.data.Enum",
            "true,last,false,incremental",
            "false"
        ]),
    );
    for side in ["before", "after"] {
        let s = field(schema, side);
        let suffix = if side == "before" { "Before" } else { "After" };
        f.eq(
            || format!("{p}: {side}'s schema name"),
            &json!([&s["name"], &s["optional"]]),
            &json!([format!("{p}.{ks}.m.{suffix}"), true]),
        );
        f.eq(|| format!("{p}: {side}.pk"), field(s, "pk"), &{
            let mut i = int.clone();
            i["field"] = json!("pk");
            i
        });
        let ts = json!({"type": "int64", "optional": true, "version": 1,
                        "name": "org.apache.kafka.connect.data.Timestamp"});
        let date = json!({"type": "int32", "optional": true, "version": 1,
                          "name": "org.apache.kafka.connect.data.Date"});
        match run.format {
            Format::Advanced => {
                for (col, want) in [("c_timestamp", &ts), ("c_date", &date)] {
                    let mut want = want.clone();
                    want["field"] = json!(col);
                    f.eq(|| format!("{p}: {side}.{col}"), field(s, col), &want);
                }
                let entry = &field(s, "c_map")["items"];
                f.eq(
                    || format!("{p}: {side}.c_map's entries"),
                    &json!([&field(s, "c_map")["type"], &entry["name"], &entry["fields"]]),
                    &json!(["array", format!("{p}.{ks}.m.MapEntry_INT_VARCHAR"), [
                        {"field": "key", "type": "int32", "optional": true},
                        {"field": "value", "type": "string", "optional": true},
                    ]]),
                );
                for (col, name) in [
                    ("c_udt", "UDT_addr"),
                    ("c_fudt", "UDT_addr"),
                    ("c_tuple", "Tuple_INT_VARCHAR"),
                ] {
                    f.eq(
                        || format!("{p}: {side}.{col}'s name"),
                        &field(s, col)["name"],
                        &json!(format!("{p}.{ks}.m.{name}")),
                    );
                }
                f.eq(
                    || format!("{p}: {side}.c_blob"),
                    field(s, "c_blob"),
                    &json!({"field": "c_blob", "type": "bytes", "optional": true}),
                );
            }
            Format::Legacy => {
                let cell = field(s, "c_timestamp");
                let mut value = ts.clone();
                value["field"] = json!("value");
                f.eq(
                    || format!("{p}: {side}.c_timestamp's Cell"),
                    cell,
                    &json!({"field": "c_timestamp", "type": "struct", "optional": true,
                            "name": format!("{p}.{ks}.m.c_timestamp.Cell"),
                            "fields": [value]}),
                );
                for col in M_NESTED {
                    f.check(field(s, col).is_null(), || {
                        format!("{p}: {side} has {col}, not in the legacy format")
                    });
                }
            }
        }
    }
}

/// `flatten` (`delete.tombstone.handling.mode=rewrite`, `add.fields=op`): each record as
/// Debezium documents the mode.
fn check_flatten(
    run: &Run,
    ks: &str,
    consumed: &[(Record, &Want)],
    flatten: &[Value],
    f: &mut Failures,
) {
    let p = run.prefix;
    for (r, want) in consumed {
        let topic = format!("{p}.{ks}.{}", r.table);
        let what = || format!("flatten {topic} offset {} ({want:?})", r.offset);
        let Some(x) = flatten.iter().find(|c| {
            c["topic"] == topic.as_str() && c["partition"] == r.partition && c["offset"] == r.offset
        }) else {
            f.0.push(format!("{}: missing", what()));
            continue;
        };
        let (row, deleted, side) = match want.op {
            Some(op @ ("c" | "u")) => (Some(&want.after), "false", ("After", op)),
            Some("d") if !want.before.is_null() => (Some(&want.before), "true", ("Before", "d")),
            // A tombstone (rewrite drops them), or a deletion with neither side: taken for
            // a truncation, dropped.
            _ => (None, "", ("", "")),
        };
        let Some(row) = row else {
            f.eq(
                || format!("{} dropped", what()),
                &x["dropped"],
                &json!(true),
            );
            continue;
        };
        let mut flat = connect_view(run.format, row);
        flat["__deleted"] = json!(deleted);
        flat["__op"] = json!(side.1);
        f.eq(|| format!("{} value", what()), &x["value"], &flat);
        f.eq(|| format!("{} key", what()), &x["key"], &r.key);
        f.eq(
            || format!("{} value schema's name", what()),
            &x["value_schema"]["name"],
            &json!(format!("{topic}.{}", side.0)),
        );
        // Our headers reach the flattened record (Connect's values: numbers and JSON
        // objects parsed).
        for (name, text) in &want.headers {
            let v = serde_json::from_str::<Value>(text)
                .ok()
                .filter(|v| !v.is_string())
                .unwrap_or_else(|| json!(text));
            f.eq(
                || format!("{} header {name}", what()),
                &x["headers"][*name],
                &v,
            );
        }
    }
}

/// Reads `topics` with `kafka-check SUBCOMMAND` until 3 s pass without a record; if fewer
/// than `expected` came, once more with 15 s (a slow start), then returns what it read.
fn read_back(
    subcommand: &str,
    bootstrap: &str,
    topics: &[String],
    expected: usize,
    extra: &[&str],
) -> anyhow::Result<Vec<Value>> {
    let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for idle in [3, 15] {
        out = kafka_check(
            subcommand,
            bootstrap,
            &topics,
            Until::Idle(Duration::from_secs(idle)),
            extra,
        )?;
        if out.len() >= expected {
            break;
        }
    }
    Ok(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_change_kind_arrives_as_documented() -> anyhow::Result<()> {
    setup_tracing();
    let t0 = Instant::now();
    let Some(broker) = Broker::start(TEST, &[])? else {
        return Ok(());
    };
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    for q in schema(&ks) {
        session
            .query_unpaged(q.as_str(), ())
            .await
            .with_context(|| q.clone())?;
    }
    let before_writes = Utc::now();
    for q in statements(&ks) {
        session
            .query_unpaged(q.as_str(), ())
            .await
            .with_context(|| q.clone())?;
    }
    let after_writes = Utc::now();
    eprintln!("{TEST}: broker, cluster, writes: {:?}", t0.elapsed());

    // The three runs at once, each to its own topics, from before the writes to after them.
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let time = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let start = time(before_writes - TimeDelta::seconds(1));
    let end = time(after_writes + TimeDelta::milliseconds(500));
    let mut programs = Vec::new();
    for run in &RUNS {
        let mut extra = vec!["--start", &start, "--end", &end];
        extra.extend(run.args);
        let args = program_args(&hosts, &ks, "m,nock,mck", &broker, run.prefix, &extra);
        let log = dir.path().join(format!("{}.log", run.prefix));
        programs.push(Program::spawn(&args, &log)?);
    }
    for (run, p) in RUNS.iter().zip(&mut programs) {
        let code = p.exit_code(Duration::from_secs(120)).await?;
        ensure!(
            code == Some(0),
            "the {} run exited with {code:?}: {}",
            run.prefix,
            p.log()
        );
    }
    eprintln!("{TEST}: published: {:?}", t0.elapsed());

    // Read back at once: Kafka's consumer (every run), Connect's converter with schemas (the
    // runs with schemas) and without (the other), Debezium's transformation.
    let wants: Vec<Vec<KeyWant>> = RUNS.iter().map(|r| expected(r.format)).collect();
    let count = |i: usize| -> usize { wants[i].iter().map(|k| k.records.len()).sum() };
    let topics = |pred: &dyn Fn(&Run) -> bool| -> Vec<String> {
        RUNS.iter()
            .filter(|r| pred(r))
            .flat_map(|r| ["m", "nock", "mck"].map(|t| format!("{}.{ks}.{t}", r.prefix)))
            .collect()
    };
    let all = topics(&|_| true);
    let with_schemas = topics(&|r| r.schemas);
    let without = topics(&|r| !r.schemas);
    let n_all: usize = (0..RUNS.len()).map(count).sum();
    let n_schemas: usize = (0..RUNS.len())
        .filter(|&i| RUNS[i].schemas)
        .map(count)
        .sum();
    let n_without = n_all - n_schemas;
    let bootstrap = broker.bootstrap.clone();
    let (consumed, connect, connect_plain, flatten) = std::thread::scope(|s| {
        let consume = s.spawn(|| read_back("consume", &bootstrap, &all, n_all, &[]));
        let connect = s.spawn(|| {
            read_back(
                "connect",
                &bootstrap,
                &with_schemas,
                n_schemas,
                &["--schemas", "true"],
            )
        });
        let plain = s.spawn(|| {
            read_back(
                "connect",
                &bootstrap,
                &without,
                n_without,
                &["--schemas", "false"],
            )
        });
        let flatten = s.spawn(|| {
            read_back(
                "flatten",
                &bootstrap,
                &with_schemas,
                n_schemas,
                &[
                    "--transform-config",
                    "delete.tombstone.handling.mode=rewrite",
                    "--transform-config",
                    "add.fields=op",
                ],
            )
        });
        let join = |h: std::thread::ScopedJoinHandle<'_, anyhow::Result<Vec<Value>>>| {
            h.join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a kafka-check thread panicked")))
        };
        (join(consume), join(connect), join(plain), join(flatten))
    });
    let (consumed, connect, connect_plain, flatten) =
        (consumed?, connect?, connect_plain?, flatten?);
    eprintln!("{TEST}: read back: {:?}", t0.elapsed());
    if let Ok(dump) = std::env::var("MATRIX_DUMP") {
        for (name, lines) in [
            ("consume", &consumed),
            ("connect", &connect),
            ("connect-plain", &connect_plain),
            ("flatten", &flatten),
        ] {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(format!("{dump}/{name}.json"), text)?;
        }
    }

    let written = (
        (before_writes - TimeDelta::milliseconds(10)).timestamp_micros(),
        (after_writes + TimeDelta::milliseconds(10)).timestamp_micros(),
    );
    let mut f = Failures::default();
    for (run, wants) in RUNS.iter().zip(&wants) {
        let records = check_consumed(run, &ks, &consumed, wants, written, &mut f)?;
        if run.schemas {
            check_connect(run, &ks, &records, &connect, &mut f);
            check_flatten(run, &ks, &records, &flatten, &mut f);
        } else {
            check_connect(run, &ks, &records, &connect_plain, &mut f);
        }
    }
    if !f.0.is_empty() {
        bail!("{} failures:\n{}", f.0.len(), f.0.join("\n"));
    }
    eprintln!("{TEST}: checked {n_all} records: {:?}", t0.elapsed());
    Ok(())
}
