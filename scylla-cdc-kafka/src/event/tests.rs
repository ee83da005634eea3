//! Tests of the events of real changes (written to an embedded cluster and read back with
//! the library's reader) and of snapshot rows, against the JSON the connector produces.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use scylla::client::session::Session;
use scylla_cdc::{CDCLogReaderBuilder, Change, ChangeConsumer, ChangeConsumerFactory};
use scylla_emulator::EmbeddedCluster;

use super::*;

/// Keeps every change.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<Change>>>);

#[async_trait]
impl ChangeConsumer for Kept {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        self.0.lock().unwrap().push(change);
        Ok(())
    }
}

#[async_trait]
impl ChangeConsumerFactory for Kept {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(self.clone())
    }
}

const KS: &str = "kafka_events";

async fn exec(session: &Session, cql: &str) {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("`{cql}`: {e}"));
}

/// The number of `(stream, cdc$time)` groups in a table's log.
async fn log_groups(session: &Session, table: &str) -> usize {
    let rows = session
        .query_unpaged(
            format!("SELECT \"cdc$stream_id\", \"cdc$time\" FROM {KS}.{table}_scylla_cdc_log"),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    let mut groups = BTreeSet::new();
    for row in rows
        .rows::<(Vec<u8>, scylla::value::CqlTimeuuid)>()
        .unwrap()
    {
        let (stream, time) = row.unwrap();
        groups.insert((stream, uuid::Uuid::from(time)));
    }
    groups.len()
}

/// The tables, their statements, and every change read back, by table.
struct Written {
    session: Arc<Session>,
    changes: BTreeMap<String, Vec<Change>>,
    _cluster: EmbeddedCluster,
}

impl Written {
    /// The changes of `table` whose first row has partition key `pk` (an `int` column
    /// named `pk` or `id`), in write order.
    fn of(&self, table: &str, pk: i32) -> Vec<Change> {
        let mut v: Vec<Change> = self.changes[table]
            .iter()
            .filter(|c| {
                c.rows().next().is_some_and(|r| {
                    let name = ["pk", "id", "b"]
                        .into_iter()
                        .find(|n| r.column_exists(n))
                        .unwrap_or("pk");
                    r.get_value_as::<i32>(name).ok().flatten() == Some(pk)
                })
            })
            .cloned()
            .collect();
        v.sort_by_key(|c| c.timestamp_micros());
        v
    }

    fn table(&self, table: &str) -> TableInfo {
        TableInfo::from_session(&self.session, KS, table).unwrap()
    }
}

const SCHEMA: &[&str] = &[
    "CREATE TYPE kafka_events.addr (street text, zip int)",
    // Every image, a static column.
    "CREATE TABLE kafka_events.t (pk int, ck int, s int static, v text, n int, \
     PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}",
    // No images.
    "CREATE TABLE kafka_events.simple (pk int, ck int, v text, PRIMARY KEY (pk, ck)) \
     WITH cdc = {'enabled': true}",
    // No clustering key.
    "CREATE TABLE kafka_events.nock (id int PRIMARY KEY, name text) \
     WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}",
    // A composite key whose columns are not in name order.
    "CREATE TABLE kafka_events.comp (b int, a text, d int, c int, v int, \
     PRIMARY KEY ((b, a), d, c)) WITH cdc = {'enabled': true}",
    // Every type.
    "CREATE TABLE kafka_events.types (pk int PRIMARY KEY, a ascii, bi bigint, bl blob, \
     bo boolean, d date, de decimal, db double, du duration, f float, i inet, it int, \
     si smallint, tx text, tm time, ts timestamp, tu timeuuid, ti tinyint, u uuid, vi varint, \
     fl frozen<list<int>>, fs frozen<set<text>>, fm frozen<map<int, text>>, \
     ft frozen<tuple<int, text>>, l list<int>, st set<text>, m map<int, text>, \
     fu frozen<addr>, nu addr) \
     WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}",
];

const STATEMENTS: &[&str] = &[
    // t, pk 1: insert, update, set to null, delete.
    "INSERT INTO kafka_events.t (pk, ck, v, n) VALUES (1, 1, 'a', 10)",
    "UPDATE kafka_events.t SET v = 'b' WHERE pk = 1 AND ck = 1",
    "UPDATE kafka_events.t SET v = null WHERE pk = 1 AND ck = 1",
    "DELETE FROM kafka_events.t WHERE pk = 1 AND ck = 1",
    // pk 2: a TTL.
    "INSERT INTO kafka_events.t (pk, ck, v) VALUES (2, 1, 'ttl') USING TTL 100",
    // pk 3: a batch of three rows, a range deletion, a partition deletion.
    "BEGIN UNLOGGED BATCH \
     INSERT INTO kafka_events.t (pk, ck, v, n) VALUES (3, 1, 'x', 1); \
     INSERT INTO kafka_events.t (pk, ck, v, n) VALUES (3, 2, 'y', 2); \
     UPDATE kafka_events.t SET v = 'z' WHERE pk = 3 AND ck = 3; \
     APPLY BATCH",
    "DELETE FROM kafka_events.t WHERE pk = 3 AND ck > 1 AND ck <= 5",
    "DELETE FROM kafka_events.t WHERE pk = 3",
    // pk 4: the static row and a clustering row in one statement.
    "UPDATE kafka_events.t SET s = 5, v = 'w' WHERE pk = 4 AND ck = 1",
    // pk 5: a lightweight transaction.
    "INSERT INTO kafka_events.t (pk, ck, v) VALUES (5, 1, 'lwt') IF NOT EXISTS",
    // pk 6: one row written twice by a batch, with different TTLs (two delta rows).
    "BEGIN UNLOGGED BATCH \
     INSERT INTO kafka_events.t (pk, ck, n) VALUES (6, 1, 6) USING TTL 100; \
     UPDATE kafka_events.t USING TTL 200 SET v = 't' WHERE pk = 6 AND ck = 1; \
     APPLY BATCH",
    // simple (no images), pk 1.
    "INSERT INTO kafka_events.simple (pk, ck, v) VALUES (1, 1, 'a')",
    "UPDATE kafka_events.simple SET v = null WHERE pk = 1 AND ck = 1",
    "DELETE FROM kafka_events.simple WHERE pk = 1 AND ck = 1",
    // nock, id 1: insert, update, delete (a partition deletion).
    "INSERT INTO kafka_events.nock (id, name) VALUES (1, 'a')",
    "UPDATE kafka_events.nock SET name = 'b' WHERE id = 1",
    "DELETE FROM kafka_events.nock WHERE id = 1",
    // comp, b 1: an insert and a range deletion within d = 1.
    "INSERT INTO kafka_events.comp (b, a, d, c, v) VALUES (1, 'x', 1, 3, 7)",
    "DELETE FROM kafka_events.comp WHERE b = 1 AND a = 'x' AND d = 1 AND c >= 2",
    // types, pk 1: every type, then collection and UDT field changes.
    "INSERT INTO kafka_events.types (pk, a, bi, bl, bo, d, de, db, du, f, i, it, si, tx, tm, \
     ts, tu, ti, u, vi, fl, fs, fm, ft, l, st, m, fu, nu) VALUES (1, 'ascii', 1234567890123, \
     0xCAFEBABE, true, '2024-06-10', 12345.67, 3.14159, 1d12h30m, 2.71828, '127.0.0.1', 42, \
     7, 'some text', '12:34:56.789', '2024-06-10T12:34:56.789Z', \
     81d4a030-4632-11f0-9484-409dd8f36eba, 5, 453662fa-db4b-4938-9033-d8523c0a371c, \
     999999999, [1, 2, 3], {'a', 'b'}, {1: 'one', 2: 'two'}, (42, 'foo'), [10, 20], \
     {'x', 'y'}, {1: 'one'}, {street: 'Main', zip: 123}, {street: 'Side', zip: 456})",
    "UPDATE kafka_events.types SET l = l + [30], st = st - {'x'}, m = m + {2: 'two'}, \
     nu.zip = 789 WHERE pk = 1",
    // types, pk 2: a UDT of null fields, an empty frozen list.
    "INSERT INTO kafka_events.types (pk, fu, fl) VALUES (2, {street: null, zip: null}, [])",
];

/// Writes [`STATEMENTS`] into a new cluster and reads every change back.
async fn written() -> Written {
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .start()
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    exec(
        &session,
        "CREATE KEYSPACE kafka_events WITH replication = {'class': 'NetworkTopologyStrategy', \
         'replication_factor': 1} AND tablets = {'enabled': false}",
    )
    .await;
    for s in SCHEMA {
        exec(&session, s).await;
    }
    session.refresh_metadata().await.unwrap();
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    for s in STATEMENTS {
        exec(&session, s).await;
    }
    let tables = ["t", "simple", "nock", "comp", "types"];
    let mut expected = 0;
    for t in tables {
        expected += log_groups(&session, t).await;
    }
    let kept = Kept::default();
    let (mut reader, handle) = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace(KS)
        .tables(tables)
        .change_consumer_factory(Arc::new(kept.clone()))
        .start_timestamp(start)
        .window_size(Duration::from_secs(1))
        .safety_interval(Duration::from_secs(1))
        .sleep_interval(Duration::from_millis(100))
        .build()
        .await
        .expect("reader");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while kept.0.lock().unwrap().len() < expected {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {expected} changes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    reader.stop();
    handle.await.expect("reader ends");
    let mut changes: BTreeMap<String, Vec<Change>> = BTreeMap::new();
    for c in kept.0.lock().unwrap().iter() {
        changes
            .entry(c.table().to_owned())
            .or_default()
            .push(c.clone());
    }
    Written {
        session,
        changes,
        _cluster: cluster,
    }
}

/// The processing time given to every change.
const P: i64 = 1_718_022_900_000;

fn render(r: &mut EventRenderer, c: &Change) -> Vec<Event> {
    let mut out = Vec::new();
    r.render_change(c, P, &mut out).unwrap();
    out
}

fn text(b: &Option<Vec<u8>>) -> String {
    b.as_ref().map_or("<null>".to_owned(), |b| {
        String::from_utf8(b.clone()).unwrap()
    })
}

/// The top-level times of the connector's own envelope (`generalizedEnvelope`: `ts_ms`
/// only) and of Debezium's `Envelope.create/update/delete/read` (also `ts_us`, `ts_ns`).
const TS_MS: &str = r#""ts_ms":1718022900000,"transaction":null,"ts_us":null,"ts_ns":null"#;
const TS_FULL: &str = r#""ts_ms":1718022900000,"transaction":null,"ts_us":1718022900000000,"ts_ns":1718022900000000000"#;

/// The `source` block of a change of `table` (`ScyllaSourceInfoStructMaker`).
fn src(table: &str, c: &Change) -> String {
    let us = c.timestamp_micros();
    let ms = us / 1000;
    format!(
        r#"{{"version":"{}","connector":"scylla","name":"ns","ts_ms":{ms},"snapshot":"false","db":"kafka_events","sequence":null,"ts_us":{us},"ts_ns":{},"keyspace_name":"kafka_events","table_name":"{table}"}}"#,
        env!("CARGO_PKG_VERSION"),
        ms * 1_000_000
    )
}

/// An envelope in the connector's field order (`ScyllaSchema.computeDataCollectionSchema`).
fn envelope(src: &str, before: &str, after: &str, key: Option<&str>, op: &str, ts: &str) -> String {
    let key = key.map_or(String::new(), |k| format!(r#","key":{k}"#));
    format!(r#"{{"source":{src},"before":{before},"after":{after}{key},"op":"{op}",{ts}}}"#)
}

/// An expected record.
#[derive(Debug, Clone, PartialEq)]
struct Want {
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, String)>,
}

fn want(key: &str, value: String) -> Want {
    Want {
        key: Some(key.to_owned()),
        value: Some(value),
        headers: Vec::new(),
    }
}

fn tombstone(key: &str) -> Want {
    Want {
        key: Some(key.to_owned()),
        value: None,
        headers: Vec::new(),
    }
}

impl Want {
    fn header(mut self, name: &str, value: &str) -> Want {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

fn got(events: &[Event]) -> Vec<Want> {
    events
        .iter()
        .map(|e| Want {
            key: e
                .key
                .as_ref()
                .map(|k| String::from_utf8(k.clone()).unwrap()),
            value: e
                .value
                .as_ref()
                .map(|v| String::from_utf8(v.clone()).unwrap()),
            headers: e
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), String::from_utf8(v.clone()).unwrap()))
                .collect(),
        })
        .collect()
}

/// Collects mismatches, so that one run reports every case.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn eq(&mut self, case: &str, events: &[Event], want: &[Want]) {
        let got = got(events);
        if got.len() != want.len() {
            self.0.push(format!(
                "{case}: {} events, want {}\n got: {got:#?}\nwant: {want:#?}",
                got.len(),
                want.len()
            ));
            return;
        }
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if g != w {
                self.0
                    .push(format!("{case}, event {i}:\n got: {g:#?}\nwant: {w:#?}"));
            }
        }
        for e in events {
            for part in [&e.key, &e.value].into_iter().flatten() {
                if let Err(err) = serde_json::from_slice::<serde_json::Value>(part) {
                    self.0.push(format!(
                        "{case}: not JSON ({err}): {}",
                        text(&Some(part.clone()))
                    ));
                }
            }
        }
    }

    fn finish(self) {
        assert!(self.0.is_empty(), "{}", self.0.join("\n\n"));
    }
}

fn opts() -> EventOptions {
    EventOptions {
        schemas: false,
        ..EventOptions::new("ns")
    }
}

fn advanced(before: ImageMode, after: ImageMode) -> EventOptions {
    EventOptions {
        format: OutputFormat::Advanced,
        before,
        after,
        ..opts()
    }
}

/// The events of a list of changes.
fn render_all(r: &mut EventRenderer, changes: &[Change]) -> Vec<Vec<Event>> {
    changes.iter().map(|c| render(r, c)).collect()
}

/// Insert, update, update to null and delete of one row (table `t`, every image logged),
/// in each format and image mode.
fn row_lifecycle(w: &Written, checks: &mut Checks) {
    let cs = w.of("t", 1);
    assert_eq!(cs.len(), 4, "{cs:?}");
    let s: Vec<String> = cs.iter().map(|c| src("t", c)).collect();
    let legacy_key = r#"{"ck":1,"pk":1}"#;
    let key = r#"{"pk":1,"ck":1}"#;

    // Legacy, no pre-images: the README's "Legacy Format Examples" (INSERT, UPDATE, UPDATE
    // to NULL, DELETE) with `Cell`s; `ScyllaChangeRecordEmitterLegacy.fillStructWithChange`.
    // The source and the envelope are written out once, literally.
    let mut r = EventRenderer::new(w.table("t"), opts());
    let ev = render_all(&mut r, &cs);
    checks.eq(
        "legacy insert",
        &ev[0],
        &[want(
            legacy_key,
            format!(
                r#"{{"source":{},"before":null,"after":{{"ck":1,"n":{{"value":10}},"pk":1,"s":null,"v":{{"value":"a"}}}},"op":"c","ts_ms":1718022900000,"transaction":null,"ts_us":1718022900000000,"ts_ns":1718022900000000000}}"#,
                s[0]
            ),
        )],
    );
    checks.eq(
        "legacy update",
        &ev[1],
        &[want(
            legacy_key,
            envelope(
                &s[1],
                "null",
                r#"{"ck":1,"n":null,"pk":1,"s":null,"v":{"value":"b"}}"#,
                None,
                "u",
                TS_FULL,
            ),
        )],
    );
    checks.eq(
        "legacy update to null",
        &ev[2],
        &[want(
            legacy_key,
            envelope(
                &s[2],
                "null",
                r#"{"ck":1,"n":null,"pk":1,"s":null,"v":{"value":null}}"#,
                None,
                "u",
                TS_FULL,
            ),
        )],
    );
    checks.eq(
        "legacy delete",
        &ev[3],
        &[
            want(
                legacy_key,
                envelope(
                    &s[3],
                    r#"{"ck":1,"n":null,"pk":1,"s":null,"v":null}"#,
                    "null",
                    None,
                    "d",
                    TS_FULL,
                ),
            ),
            tombstone(legacy_key),
        ],
    );

    // Legacy with pre-images (`experimental.preimages.enabled`): `before` is the pre-image
    // in `Cell`s, and `generalizedEnvelope` sets `ts_ms` only; a deletion's `before` is the
    // pre-image (`Envelope.delete`).
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            before: ImageMode::Full,
            ..opts()
        },
    );
    let ev = render_all(&mut r, &cs);
    checks.eq(
        "legacy update, pre-image",
        &ev[1],
        &[want(
            legacy_key,
            envelope(
                &s[1],
                r#"{"ck":1,"n":{"value":10},"pk":1,"s":null,"v":{"value":"a"}}"#,
                r#"{"ck":1,"n":null,"pk":1,"s":null,"v":{"value":"b"}}"#,
                None,
                "u",
                TS_MS,
            ),
        )],
    );
    checks.eq(
        "legacy delete, pre-image",
        &ev[3],
        &[
            want(
                legacy_key,
                envelope(
                    &s[3],
                    r#"{"ck":1,"n":{"value":10},"pk":1,"s":null,"v":null}"#,
                    "null",
                    None,
                    "d",
                    TS_FULL,
                ),
            ),
            tombstone(legacy_key),
        ],
    );

    // Advanced, full/full (`CdcIncludeBeforeAfterFullIT`): whole images, plain values,
    // the key partition-then-clustering, `ts_ms` only.
    let mut r = EventRenderer::new(w.table("t"), advanced(ImageMode::Full, ImageMode::Full));
    let ev = render_all(&mut r, &cs);
    let row = |v: &str| format!(r#"{{"ck":1,"n":10,"pk":1,"s":null,"v":{v}}}"#);
    checks.eq(
        "advanced full insert",
        &ev[0],
        &[want(
            key,
            envelope(&s[0], "null", &row(r#""a""#), None, "c", TS_MS),
        )],
    );
    checks.eq(
        "advanced full update",
        &ev[1],
        &[want(
            key,
            envelope(&s[1], &row(r#""a""#), &row(r#""b""#), None, "u", TS_MS),
        )],
    );
    checks.eq(
        "advanced full update to null",
        &ev[2],
        &[want(
            key,
            envelope(&s[2], &row(r#""b""#), &row("null"), None, "u", TS_MS),
        )],
    );
    checks.eq(
        "advanced full delete",
        &ev[3],
        &[
            want(key, envelope(&s[3], &row("null"), "null", None, "d", TS_MS)),
            tombstone(key),
        ],
    );

    // Advanced, only-updated both sides (`CdcIncludeBeforeAfterOnlyUpdatedIT`): an update
    // shows the key and the columns it modified (`fillStructWithOnlyUpdatedColumns`; a
    // column set to null is modified, and null); inserts and deletes whole images.
    let mut r = EventRenderer::new(
        w.table("t"),
        advanced(ImageMode::OnlyUpdated, ImageMode::OnlyUpdated),
    );
    let ev = render_all(&mut r, &cs);
    let only = |v: &str| format!(r#"{{"ck":1,"n":null,"pk":1,"s":null,"v":{v}}}"#);
    checks.eq(
        "advanced only-updated insert",
        &ev[0],
        &[want(
            key,
            envelope(&s[0], "null", &row(r#""a""#), None, "c", TS_MS),
        )],
    );
    checks.eq(
        "advanced only-updated update",
        &ev[1],
        &[want(
            key,
            envelope(&s[1], &only(r#""a""#), &only(r#""b""#), None, "u", TS_MS),
        )],
    );
    checks.eq(
        "advanced only-updated update to null",
        &ev[2],
        &[want(
            key,
            envelope(&s[2], &only(r#""b""#), &only("null"), None, "u", TS_MS),
        )],
    );
    checks.eq(
        "advanced only-updated delete",
        &ev[3],
        &[
            want(key, envelope(&s[3], &row("null"), "null", None, "d", TS_MS)),
            tombstone(key),
        ],
    );

    // Mixed modes (`CdcIncludeBeforeFullAfterOnlyUpdatedIT`,
    // `CdcIncludeBeforeOnlyUpdatedAfterFullIT`): full `before` with only-updated `after` is
    // `fillBeforeStructForUpdate` (modified columns from the pre-image, the rest from the
    // post-image).
    let mut r = EventRenderer::new(
        w.table("t"),
        advanced(ImageMode::Full, ImageMode::OnlyUpdated),
    );
    checks.eq(
        "advanced before full, after only-updated",
        &render(&mut r, &cs[1]),
        &[want(
            key,
            envelope(&s[1], &row(r#""a""#), &only(r#""b""#), None, "u", TS_MS),
        )],
    );
    let mut r = EventRenderer::new(
        w.table("t"),
        advanced(ImageMode::OnlyUpdated, ImageMode::Full),
    );
    checks.eq(
        "advanced before only-updated, after full",
        &render(&mut r, &cs[1]),
        &[want(
            key,
            envelope(&s[1], &only(r#""a""#), &row(r#""b""#), None, "u", TS_MS),
        )],
    );
    // Before only, no post-images: `before` is the pre-image alone.
    let mut r = EventRenderer::new(w.table("t"), advanced(ImageMode::Full, ImageMode::None));
    checks.eq(
        "advanced before full, after none",
        &render(&mut r, &cs[1]),
        &[want(
            key,
            envelope(&s[1], &row(r#""a""#), "null", None, "u", TS_MS),
        )],
    );

    // None/none (`CdcIncludeBeforeAfterNoneIT`), with `payload-key`: the key in the value.
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            key_placement: "kafka-key,payload-after,payload-before,payload-key"
                .parse()
                .unwrap(),
            ..advanced(ImageMode::None, ImageMode::None)
        },
    );
    let ev = render_all(&mut r, &cs);
    for (i, op) in ["c", "u", "u"].into_iter().enumerate() {
        checks.eq(
            &format!("advanced none/none {op}"),
            &ev[i],
            &[want(
                key,
                envelope(&s[i], "null", "null", Some(key), op, TS_MS),
            )],
        );
    }
    checks.eq(
        "advanced none/none d",
        &ev[3],
        &[
            want(key, envelope(&s[3], "null", "null", Some(key), "d", TS_MS)),
            tombstone(key),
        ],
    );

    // `kafka-key,payload-key` (`CdcIncludePkPayloadKeyOnlyIT`): no key columns in the
    // images, a `key` object (renamed by `payload-key-name`), and `kafka-headers`
    // (`buildPkHeaders`: log column order, `ck` before `pk` here).
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            key_placement: "kafka-key,payload-key,kafka-headers".parse().unwrap(),
            payload_key_name: "primaryKey".to_owned(),
            ..advanced(ImageMode::Full, ImageMode::Full)
        },
    );
    let value = format!(
        r#"{{"source":{},"before":{{"n":10,"s":null,"v":"a"}},"after":{{"n":10,"s":null,"v":"b"}},"primaryKey":{key},"op":"u",{TS_MS}}}"#,
        s[1]
    );
    checks.eq(
        "payload-key and kafka-headers",
        &render(&mut r, &cs[1]),
        &[want(key, value).header("ck.ck", "1").header("pk.pk", "1")],
    );

    // No `kafka-key`: without schemas, a null key (the connector fails there) and no
    // tombstone; with schemas, the key schema with a null payload, as the connector.
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            key_placement: "payload-after,payload-before".parse().unwrap(),
            ..advanced(ImageMode::Full, ImageMode::Full)
        },
    );
    let ev = render(&mut r, &cs[3]);
    checks.eq(
        "no kafka-key",
        &ev,
        &[Want {
            key: None,
            value: Some(envelope(&s[3], &row("null"), "null", None, "d", TS_MS)),
            headers: Vec::new(),
        }],
    );
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            key_placement: "payload-after".parse().unwrap(),
            schemas: true,
            ..advanced(ImageMode::None, ImageMode::None)
        },
    );
    let ev = render(&mut r, &cs[3]);
    assert_eq!(
        text(&ev[0].key),
        r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"pk"},{"type":"int32","optional":true,"field":"ck"}],"optional":false,"name":"ns.kafka_events.t.Key"},"payload":null}"#
    );
    assert_eq!(ev.len(), 2, "a tombstone with the schema-only key");

    // Tombstones off (Debezium's `tombstones.on.delete=false`).
    let mut r = EventRenderer::new(
        w.table("t"),
        EventOptions {
            tombstones: false,
            ..opts()
        },
    );
    assert_eq!(render(&mut r, &cs[3]).len(), 1);
}

/// TTL, batch, range and partition deletions, the static row, a lightweight transaction.
fn change_kinds(w: &Written, checks: &mut Checks) {
    let key = |pk: i32, ck: &str| format!(r#"{{"pk":{pk},"ck":{ck}}}"#);
    let mut r = EventRenderer::new(w.table("t"), advanced(ImageMode::Full, ImageMode::Full));
    let mut legacy = EventRenderer::new(w.table("t"), opts());

    // TTL: the connector ignores it; a `scylla.ttl` header.
    let c = &w.of("t", 2)[0];
    checks.eq(
        "ttl",
        &render(&mut r, c),
        &[want(
            &key(2, "1"),
            envelope(
                &src("t", c),
                "null",
                r#"{"ck":1,"n":null,"pk":2,"s":null,"v":"ttl"}"#,
                None,
                "c",
                TS_MS,
            ),
        )
        .header("scylla.ttl", "100")],
    );

    // A batch of three rows: one event per row, in the order of the delta rows, each with
    // its own post-image (the connector's `RowKey`).
    let cs = w.of("t", 3);
    assert_eq!(cs.len(), 3, "{cs:?}");
    let s: Vec<String> = cs.iter().map(|c| src("t", c)).collect();
    checks.eq(
        "batch",
        &render(&mut r, &cs[0]),
        &[
            want(
                &key(3, "1"),
                envelope(
                    &s[0],
                    "null",
                    r#"{"ck":1,"n":1,"pk":3,"s":null,"v":"x"}"#,
                    None,
                    "c",
                    TS_MS,
                ),
            ),
            want(
                &key(3, "2"),
                envelope(
                    &s[0],
                    "null",
                    r#"{"ck":2,"n":2,"pk":3,"s":null,"v":"y"}"#,
                    None,
                    "c",
                    TS_MS,
                ),
            ),
            want(
                &key(3, "3"),
                envelope(
                    &s[0],
                    "null",
                    r#"{"ck":3,"n":null,"pk":3,"s":null,"v":"z"}"#,
                    None,
                    "u",
                    TS_MS,
                ),
            ),
        ],
    );

    // A range deletion (the connector ignores it): a `d` keyed by the partition, its bounds
    // in `scylla.range`, no tombstone.
    let range = r#"{"start":{"ck":1},"start_inclusive":false,"end":{"ck":5},"end_inclusive":true}"#;
    checks.eq(
        "range deletion",
        &render(&mut r, &cs[1]),
        &[want(
            &key(3, "null"),
            envelope(&s[1], "null", "null", None, "d", TS_MS),
        )
        .header("scylla.target", "range")
        .header("scylla.range", range)],
    );
    checks.eq(
        "range deletion, legacy",
        &render(&mut legacy, &cs[1]),
        &[want(
            r#"{"ck":null,"pk":3}"#,
            envelope(
                &s[1],
                r#"{"ck":null,"n":null,"pk":3,"s":null,"v":null}"#,
                "null",
                None,
                "d",
                TS_FULL,
            ),
        )
        .header("scylla.target", "range")
        .header("scylla.range", range)],
    );

    // A partition deletion of a table with a clustering key (the connector ignores it): a
    // `d` keyed by the partition, then a tombstone.
    checks.eq(
        "partition deletion",
        &render(&mut r, &cs[2]),
        &[
            want(
                &key(3, "null"),
                envelope(&s[2], "null", "null", None, "d", TS_MS),
            )
            .header("scylla.target", "partition"),
            tombstone(&key(3, "null")).header("scylla.target", "partition"),
        ],
    );
    // Without the extension, none of the two.
    let mut plain = EventRenderer::new(
        w.table("t"),
        EventOptions {
            extended_deletes: false,
            scylla_headers: false,
            ..advanced(ImageMode::Full, ImageMode::Full)
        },
    );
    assert!(render(&mut plain, &cs[1]).is_empty());
    assert!(render(&mut plain, &cs[2]).is_empty());

    // The static row and a clustering row in one statement: two events, the static row's
    // first, keyed with a null clustering column (as the connector keys it).
    let c = &w.of("t", 4)[0];
    let s4 = src("t", c);
    checks.eq(
        "static and clustering row",
        &render(&mut r, c),
        &[
            want(
                &key(4, "null"),
                envelope(
                    &s4,
                    "null",
                    r#"{"ck":null,"n":null,"pk":4,"s":5,"v":null}"#,
                    None,
                    "u",
                    TS_MS,
                ),
            )
            .header("scylla.target", "static-row"),
            want(
                &key(4, "1"),
                envelope(
                    &s4,
                    "null",
                    r#"{"ck":1,"n":null,"pk":4,"s":null,"v":"w"}"#,
                    None,
                    "u",
                    TS_MS,
                ),
            ),
        ],
    );
    checks.eq(
        "static row, legacy",
        &render(&mut legacy, c)[..1],
        &[want(
            r#"{"ck":null,"pk":4}"#,
            envelope(
                &s4,
                "null",
                r#"{"ck":null,"n":null,"pk":4,"s":{"value":5},"v":null}"#,
                None,
                "u",
                TS_FULL,
            ),
        )
        .header("scylla.target", "static-row")],
    );

    // A lightweight transaction is logged as any insert.
    let c = &w.of("t", 5)[0];
    checks.eq(
        "lwt",
        &render(&mut r, c),
        &[want(
            &key(5, "1"),
            envelope(
                &src("t", c),
                "null",
                r#"{"ck":1,"n":null,"pk":5,"s":null,"v":"lwt"}"#,
                None,
                "c",
                TS_MS,
            ),
        )],
    );

    // No images at all (`simple`): the advanced format has only the key
    // (`CdcIncludeBeforeAfterNoneIT`), the legacy one the delta's cells.
    let cs = w.of("simple", 1);
    let s: Vec<String> = cs.iter().map(|c| src("simple", c)).collect();
    let mut r = EventRenderer::new(
        w.table("simple"),
        advanced(ImageMode::Full, ImageMode::Full),
    );
    checks.eq(
        "no images logged, advanced",
        &render(&mut r, &cs[1]),
        &[want(
            r#"{"pk":1,"ck":1}"#,
            envelope(&s[1], "null", "null", None, "u", TS_MS),
        )],
    );
    let mut r = EventRenderer::new(w.table("simple"), opts());
    checks.eq(
        "no images logged, legacy delete",
        &render(&mut r, &cs[2]),
        &[
            want(
                r#"{"ck":1,"pk":1}"#,
                envelope(
                    &s[2],
                    r#"{"ck":1,"pk":1,"v":null}"#,
                    "null",
                    None,
                    "d",
                    TS_FULL,
                ),
            ),
            tombstone(r#"{"ck":1,"pk":1}"#),
        ],
    );

    // A table without clustering key: its partition deletion is the row's deletion
    // (`isSinglePartitionDelete`), with its pre-image.
    let cs = w.of("nock", 1);
    assert_eq!(cs.len(), 3, "{cs:?}");
    let s = src("nock", &cs[2]);
    let mut r = EventRenderer::new(w.table("nock"), advanced(ImageMode::Full, ImageMode::Full));
    checks.eq(
        "partition deletion without clustering key",
        &render(&mut r, &cs[2]),
        &[
            want(
                r#"{"id":1}"#,
                envelope(&s, r#"{"id":1,"name":"b"}"#, "null", None, "d", TS_MS),
            ),
            tombstone(r#"{"id":1}"#),
        ],
    );
    let mut r = EventRenderer::new(
        w.table("nock"),
        EventOptions {
            before: ImageMode::Full,
            ..opts()
        },
    );
    checks.eq(
        "partition deletion without clustering key, legacy",
        &render(&mut r, &cs[2]),
        &[
            want(
                r#"{"id":1}"#,
                envelope(
                    &s,
                    r#"{"id":1,"name":{"value":"b"}}"#,
                    "null",
                    None,
                    "d",
                    TS_FULL,
                ),
            ),
            tombstone(r#"{"id":1}"#),
        ],
    );
}

/// A row written twice in one change with different TTLs: the legacy format's event per
/// write has that write's TTL; the advanced format's one event has the first write's.
fn ttl_per_write(w: &Written, checks: &mut Checks) {
    let cs = w.of("t", 6);
    assert_eq!(cs.len(), 1, "{cs:?}");
    let s = src("t", &cs[0]);
    let mut legacy = EventRenderer::new(w.table("t"), opts());
    checks.eq(
        "a row written twice with different TTLs, legacy",
        &render(&mut legacy, &cs[0]),
        &[
            want(
                r#"{"ck":1,"pk":6}"#,
                envelope(
                    &s,
                    "null",
                    r#"{"ck":1,"n":{"value":6},"pk":6,"s":null,"v":null}"#,
                    None,
                    "c",
                    TS_FULL,
                ),
            )
            .header("scylla.ttl", "100"),
            want(
                r#"{"ck":1,"pk":6}"#,
                envelope(
                    &s,
                    "null",
                    r#"{"ck":1,"n":null,"pk":6,"s":null,"v":{"value":"t"}}"#,
                    None,
                    "u",
                    TS_FULL,
                ),
            )
            .header("scylla.ttl", "200"),
        ],
    );
    let mut r = EventRenderer::new(w.table("t"), advanced(ImageMode::Full, ImageMode::Full));
    checks.eq(
        "a row written twice with different TTLs, advanced",
        &render(&mut r, &cs[0]),
        &[want(
            r#"{"pk":6,"ck":1}"#,
            envelope(
                &s,
                "null",
                r#"{"ck":1,"n":6,"pk":6,"s":null,"v":"t"}"#,
                None,
                "c",
                TS_MS,
            ),
        )
        .header("scylla.ttl", "100")],
    );
}

/// A composite key: the advanced key has the partition key columns then the clustering
/// ones, each in the log's (name) order (`ScyllaSchema.computeKeySchema`), the legacy key
/// all of them in that order; a range's bounds list the clustering columns in key order.
fn composite_key(w: &Written, checks: &mut Checks) {
    let cs = w.of("comp", 1);
    assert_eq!(cs.len(), 2, "{cs:?}");
    let s: Vec<String> = cs.iter().map(|c| src("comp", c)).collect();
    let mut r = EventRenderer::new(w.table("comp"), advanced(ImageMode::None, ImageMode::None));
    checks.eq(
        "composite key, advanced",
        &render(&mut r, &cs[0]),
        &[want(
            r#"{"a":"x","b":1,"c":3,"d":1}"#,
            envelope(&s[0], "null", "null", None, "c", TS_MS),
        )],
    );
    checks.eq(
        "composite key, range deletion",
        &render(&mut r, &cs[1]),
        &[want(
            r#"{"a":"x","b":1,"c":null,"d":null}"#,
            envelope(&s[1], "null", "null", None, "d", TS_MS),
        )
        .header("scylla.target", "range")
        .header(
            "scylla.range",
            r#"{"start":{"d":1,"c":2},"start_inclusive":true,"end":{"d":1},"end_inclusive":true}"#,
        )],
    );
    let mut r = EventRenderer::new(w.table("comp"), opts());
    checks.eq(
        "composite key, legacy",
        &render(&mut r, &cs[0]),
        &[want(
            r#"{"a":"x","b":1,"c":3,"d":1}"#,
            envelope(
                &s[0],
                "null",
                r#"{"a":"x","b":1,"c":3,"d":1,"v":{"value":7}}"#,
                None,
                "c",
                TS_FULL,
            ),
        )],
    );
}

/// Every CQL type (`ScyllaTypesAllPlainConnectorIT`, `CdcIncludeBeforeAfterBase`'s
/// `JSON_*` constants), collection element changes and a UDT field change.
fn types(w: &Written, checks: &mut Checks) {
    let cs = w.of("types", 1);
    assert_eq!(cs.len(), 2, "{cs:?}");
    let s: Vec<String> = cs.iter().map(|c| src("types", c)).collect();
    let scalars = r#""a":"ascii","bi":1234567890123,"bl":"yv66vg==","bo":true,"d":19884,"db":3.14159,"de":"12345.67","du":"1d12h30m","f":2.71828"#;
    let more = r#""i":"127.0.0.1","it":42"#;
    let rest = r#""si":7"#;
    let tail = r#""ti":5,"tm":45296789000000,"ts":1718022896789,"tu":"81d4a030-4632-11f0-9484-409dd8f36eba","tx":"some text","u":"453662fa-db4b-4938-9033-d8523c0a371c","vi":"999999999""#;
    let frozen = r#""fl":[1,2,3],"fm":[{"key":1,"value":"one"},{"key":2,"value":"two"}],"fs":["a","b"],"ft":{"field_0":42,"field_1":"foo"},"fu":{"street":"Main","zip":123}"#;
    let row = |l: &str, m: &str, nu: &str, st: &str| {
        format!(
            r#"{{{scalars},{frozen},{more},"l":{l},"m":{m},"nu":{nu},"pk":1,{rest},"st":{st},{tail}}}"#
        )
    };
    let before = row(
        "[10,20]",
        r#"[{"key":1,"value":"one"}]"#,
        r#"{"street":"Side","zip":456}"#,
        r#"["x","y"]"#,
    );
    let after = row(
        "[10,20,30]",
        r#"[{"key":1,"value":"one"},{"key":2,"value":"two"}]"#,
        r#"{"street":"Side","zip":789}"#,
        r#"["y"]"#,
    );
    let mut r = EventRenderer::new(w.table("types"), advanced(ImageMode::Full, ImageMode::Full));
    checks.eq(
        "every type, insert",
        &render(&mut r, &cs[0]),
        &[want(
            r#"{"pk":1}"#,
            envelope(&s[0], "null", &before, None, "c", TS_MS),
        )],
    );
    checks.eq(
        "collections and a UDT field, full",
        &render(&mut r, &cs[1]),
        &[want(
            r#"{"pk":1}"#,
            envelope(&s[1], &before, &after, None, "u", TS_MS),
        )],
    );
    // Only-updated: the list append, set removal, map put and UDT field are modified
    // (values, `cdc$deleted_elements_`), nothing else.
    let mut r = EventRenderer::new(
        w.table("types"),
        advanced(ImageMode::OnlyUpdated, ImageMode::OnlyUpdated),
    );
    let nulls = |l: &str, m: &str, nu: &str, st: &str| {
        format!(
            r#"{{"a":null,"bi":null,"bl":null,"bo":null,"d":null,"db":null,"de":null,"du":null,"f":null,"fl":null,"fm":null,"fs":null,"ft":null,"fu":null,"i":null,"it":null,"l":{l},"m":{m},"nu":{nu},"pk":1,"si":null,"st":{st},"ti":null,"tm":null,"ts":null,"tu":null,"tx":null,"u":null,"vi":null}}"#
        )
    };
    checks.eq(
        "collections and a UDT field, only-updated",
        &render(&mut r, &cs[1]),
        &[want(
            r#"{"pk":1}"#,
            envelope(
                &s[1],
                &nulls(
                    "[10,20]",
                    r#"[{"key":1,"value":"one"}]"#,
                    r#"{"street":"Side","zip":456}"#,
                    r#"["x","y"]"#,
                ),
                &nulls(
                    "[10,20,30]",
                    r#"[{"key":1,"value":"one"},{"key":2,"value":"two"}]"#,
                    r#"{"street":"Side","zip":789}"#,
                    r#"["y"]"#,
                ),
                None,
                "u",
                TS_MS,
            ),
        )],
    );
    // Legacy: only native types, as `Cell`s; the collection-only update shows none.
    let mut r = EventRenderer::new(w.table("types"), opts());
    let legacy_row = r#"{"a":{"value":"ascii"},"bi":{"value":1234567890123},"bl":{"value":"yv66vg=="},"bo":{"value":true},"d":{"value":19884},"db":{"value":3.14159},"de":{"value":"12345.67"},"du":{"value":"1d12h30m"},"f":{"value":2.71828},"i":{"value":"127.0.0.1"},"it":{"value":42},"pk":1,"si":{"value":7},"ti":{"value":5},"tm":{"value":45296789000000},"ts":{"value":1718022896789},"tu":{"value":"81d4a030-4632-11f0-9484-409dd8f36eba"},"tx":{"value":"some text"},"u":{"value":"453662fa-db4b-4938-9033-d8523c0a371c"},"vi":{"value":"999999999"}}"#;
    checks.eq(
        "every type, legacy",
        &render(&mut r, &cs[0]),
        &[want(
            r#"{"pk":1}"#,
            envelope(&s[0], "null", legacy_row, None, "c", TS_FULL),
        )],
    );
    checks.eq(
        "collections only, legacy",
        &render(&mut r, &cs[1]),
        &[want(
            r#"{"pk":1}"#,
            envelope(
                &s[1],
                "null",
                r#"{"a":null,"bi":null,"bl":null,"bo":null,"d":null,"db":null,"de":null,"du":null,"f":null,"i":null,"it":null,"pk":1,"si":null,"ti":null,"tm":null,"ts":null,"tu":null,"tx":null,"u":null,"vi":null}"#,
                None,
                "u",
                TS_FULL,
            ),
        )],
    );
    // A UDT of null fields is null (`allNullOrEmpty`); an empty frozen list is `[]`.
    let c = &w.of("types", 2)[0];
    let mut r = EventRenderer::new(w.table("types"), advanced(ImageMode::Full, ImageMode::Full));
    checks.eq(
        "null UDT, empty list",
        &render(&mut r, c),
        &[want(
            r#"{"pk":2}"#,
            envelope(
                &src("types", c),
                "null",
                r#"{"a":null,"bi":null,"bl":null,"bo":null,"d":null,"db":null,"de":null,"du":null,"f":null,"fl":[],"fm":null,"fs":null,"ft":null,"fu":null,"i":null,"it":null,"l":null,"m":null,"nu":null,"pk":2,"si":null,"st":null,"ti":null,"tm":null,"ts":null,"tu":null,"tx":null,"u":null,"vi":null}"#,
                None,
                "c",
                TS_MS,
            ),
        )],
    );
}

/// With `schemas.enable=true`: the whole key and value of an insert, in both formats.
fn with_schemas(w: &Written, checks: &mut Checks) {
    let c = &w.of("simple", 1)[0];
    let s = src("simple", c);
    const SOURCE: &str = r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},{"type":"string","optional":false,"field":"connector"},{"type":"string","optional":false,"field":"name"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},"default":"false","field":"snapshot"},{"type":"string","optional":false,"field":"db"},{"type":"string","optional":true,"field":"sequence"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"},{"type":"string","optional":false,"field":"keyspace_name"},{"type":"string","optional":false,"field":"table_name"}],"optional":false,"name":"com.scylladb.cdc.debezium.connector","field":"source"}"#;
    const TAIL: &str = r#"{"type":"string","optional":true,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block","version":1,"field":"transaction"},{"type":"int64","optional":true,"field":"ts_us"},{"type":"int64","optional":true,"field":"ts_ns"}"#;

    // Legacy: the README's `INSERT` example (with Debezium 2.7's source fields), `Cell`
    // structs named `<logical>.<ks>.<table>.<column>.Cell`.
    let mut r = EventRenderer::new(
        w.table("simple"),
        EventOptions {
            schemas: true,
            ..opts()
        },
    );
    let row = |suffix: &str, field: &str| {
        format!(
            r#"{{"type":"struct","fields":[{{"type":"int32","optional":true,"field":"ck"}},{{"type":"int32","optional":true,"field":"pk"}},{{"type":"struct","fields":[{{"type":"string","optional":true,"field":"value"}}],"optional":true,"name":"ns.kafka_events.simple.v.Cell","field":"v"}}],"optional":true,"name":"ns.kafka_events.simple.{suffix}","field":"{field}"}}"#
        )
    };
    let value_schema = format!(
        r#"{{"type":"struct","fields":[{SOURCE},{},{},{TAIL}],"optional":false,"name":"ns.kafka_events.simple.Envelope"}}"#,
        row("Before", "before"),
        row("After", "after")
    );
    checks.eq(
        "legacy with schemas",
        &render(&mut r, c),
        &[want(
            r#"{"schema":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"ck"},{"type":"int32","optional":true,"field":"pk"}],"optional":false,"name":"ns.kafka_events.simple.Key"},"payload":{"ck":1,"pk":1}}"#,
            format!(
                r#"{{"schema":{value_schema},"payload":{}}}"#,
                envelope(&s, "null", r#"{"ck":1,"pk":1,"v":{"value":"a"}}"#, None, "c", TS_FULL)
            ),
        )],
    );
    assert_eq!(r.value_schema_json(), Some(value_schema.as_bytes()));

    // Advanced, with the payload key (`ScyllaSchema`: the key schema as the `key` field,
    // after `after`).
    let mut r = EventRenderer::new(
        w.table("simple"),
        EventOptions {
            schemas: true,
            key_placement: "kafka-key,payload-after,payload-before,payload-key"
                .parse()
                .unwrap(),
            ..advanced(ImageMode::Full, ImageMode::Full)
        },
    );
    let key_schema = r#"{"type":"struct","fields":[{"type":"int32","optional":true,"field":"pk"},{"type":"int32","optional":true,"field":"ck"}],"optional":false,"name":"ns.kafka_events.simple.Key"}"#;
    let row = |suffix: &str, field: &str| {
        format!(
            r#"{{"type":"struct","fields":[{{"type":"int32","optional":true,"field":"ck"}},{{"type":"int32","optional":true,"field":"pk"}},{{"type":"string","optional":true,"field":"v"}}],"optional":true,"name":"ns.kafka_events.simple.{suffix}","field":"{field}"}}"#
        )
    };
    let key_field = key_schema.replacen(
        r#""name":"ns.kafka_events.simple.Key"}"#,
        r#""name":"ns.kafka_events.simple.Key","field":"key"}"#,
        1,
    );
    let value_schema = format!(
        r#"{{"type":"struct","fields":[{SOURCE},{},{},{key_field},{TAIL}],"optional":false,"name":"ns.kafka_events.simple.Envelope"}}"#,
        row("Before", "before"),
        row("After", "after")
    );
    checks.eq(
        "advanced with schemas",
        &render(&mut r, c),
        &[want(
            &format!(r#"{{"schema":{key_schema},"payload":{{"pk":1,"ck":1}}}}"#),
            format!(
                r#"{{"schema":{value_schema},"payload":{}}}"#,
                envelope(&s, "null", "null", Some(r#"{"pk":1,"ck":1}"#), "c", TS_MS)
            ),
        )],
    );

    // Nested schemas of the advanced format: Connect's logical types, map entries, tuples
    // and UDTs named after the table and their types (`generateTypeName`), arrays.
    let r = EventRenderer::new(
        w.table("types"),
        EventOptions {
            schemas: true,
            ..advanced(ImageMode::Full, ImageMode::Full)
        },
    );
    let schema = String::from_utf8(r.value_schema_json().unwrap().to_vec()).unwrap();
    for part in [
        r#"{"type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date","version":1,"field":"d"}"#,
        r#"{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"ts"}"#,
        r#"{"type":"int64","optional":true,"field":"tm"}"#,
        r#"{"type":"bytes","optional":true,"field":"bl"}"#,
        r#"{"type":"float","optional":true,"field":"f"}"#,
        r#"{"type":"double","optional":true,"field":"db"}"#,
        r#"{"type":"int16","optional":true,"field":"si"}"#,
        r#"{"type":"int8","optional":true,"field":"ti"}"#,
        r#"{"type":"string","optional":true,"field":"de"}"#,
        r#"{"type":"array","items":{"type":"int32","optional":true},"optional":true,"field":"l"}"#,
        r#"{"type":"array","items":{"type":"struct","fields":[{"type":"int32","optional":true,"field":"key"},{"type":"string","optional":true,"field":"value"}],"optional":false,"name":"ns.kafka_events.types.MapEntry_INT_VARCHAR"},"optional":true,"field":"fm"}"#,
        r#"{"type":"struct","fields":[{"type":"int32","optional":true,"field":"field_0"},{"type":"string","optional":true,"field":"field_1"}],"optional":true,"name":"ns.kafka_events.types.Tuple_INT_VARCHAR","field":"ft"}"#,
        r#"{"type":"struct","fields":[{"type":"string","optional":true,"field":"street"},{"type":"int32","optional":true,"field":"zip"}],"optional":true,"name":"ns.kafka_events.types.UDT_addr","field":"nu"}"#,
    ] {
        if !schema.contains(part) {
            checks
                .0
                .push(format!("the types schema lacks {part}:\n{schema}"));
        }
    }
}

/// A renderer of a table without one of the change's columns fails with `SchemaMismatch`.
fn schema_mismatch(w: &Written) {
    let mut table = w.table("t");
    table.regular_columns.retain(|c| c.name != "n");
    let mut r = EventRenderer::new(table, opts());
    let mut out = Vec::new();
    let err = r.render_change(&w.of("t", 1)[0], P, &mut out).unwrap_err();
    assert!(err.downcast_ref::<SchemaMismatch>().is_some(), "{err:#}");
    assert!(out.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_of_real_changes() {
    let w = written().await;
    let mut checks = Checks::default();
    row_lifecycle(&w, &mut checks);
    change_kinds(&w, &mut checks);
    ttl_per_write(&w, &mut checks);
    types(&w, &mut checks);
    composite_key(&w, &mut checks);
    with_schemas(&w, &mut checks);
    schema_mismatch(&w);
    checks.finish();
}

mod snapshot {
    use super::*;
    use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};
    use scylla::value::CqlValue;

    fn table() -> TableInfo {
        let native = |n| ColumnType::Native(n);
        TableInfo {
            keyspace: "ks".into(),
            table: "t".into(),
            partition_key: vec![ColumnInfo::new("pk", native(NativeType::Int))],
            clustering_key: vec![ColumnInfo::new("ck", native(NativeType::Text))],
            static_columns: vec![ColumnInfo::new("s", native(NativeType::Int))],
            regular_columns: vec![
                ColumnInfo::new("n", native(NativeType::Int)),
                ColumnInfo::new("t", native(NativeType::Text)),
                ColumnInfo::new(
                    "v",
                    ColumnType::Collection {
                        frozen: false,
                        typ: CollectionType::List(Box::new(native(NativeType::Int))),
                    },
                ),
            ],
        }
    }

    const SNAP: i64 = 1_718_022_896_789;

    fn source() -> String {
        format!(
            r#"{{"version":"{}","connector":"scylla","name":"ns","ts_ms":1718022896789,"snapshot":"true","db":"ks","sequence":null,"ts_us":1718022896789000,"ts_ns":1718022896789000000,"keyspace_name":"ks","table_name":"t"}}"#,
            env!("CARGO_PKG_VERSION")
        )
    }

    /// Debezium's `Envelope.read`: `op` `r`, `after` the row, `before` null, every
    /// top-level time set, `source.snapshot` `"true"`; no tombstone.
    #[test]
    fn snapshot_rows() {
        let pk = CqlValue::Int(1);
        let ck = CqlValue::Text("a".into());
        let t = CqlValue::Text("x".into());
        let v = CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]);
        let row: Vec<(&str, Option<&CqlValue>)> = vec![
            ("pk", Some(&pk)),
            ("ck", Some(&ck)),
            ("n", None),
            ("t", Some(&t)),
            ("v", Some(&v)),
        ];
        let ts = r#""ts_ms":1718022896789,"transaction":null,"ts_us":1718022896789000,"ts_ns":1718022896789000000"#;
        let mut checks = Checks::default();

        let mut r = EventRenderer::new(table(), advanced(ImageMode::Full, ImageMode::Full));
        let mut out = Vec::new();
        r.render_snapshot_row(&row, SNAP, &mut out).unwrap();
        checks.eq(
            "advanced snapshot row",
            &out,
            &[want(
                r#"{"pk":1,"ck":"a"}"#,
                envelope(
                    &source(),
                    "null",
                    r#"{"ck":"a","n":null,"pk":1,"s":null,"t":"x","v":[1,2]}"#,
                    None,
                    "r",
                    ts,
                ),
            )],
        );

        // Legacy: a column given (even as null) is known, a `Cell`; one not given is null;
        // the list is not in the legacy structs.
        let mut r = EventRenderer::new(table(), opts());
        let mut out = Vec::new();
        r.render_snapshot_row(&row, SNAP, &mut out).unwrap();
        checks.eq(
            "legacy snapshot row",
            &out,
            &[want(
                r#"{"ck":"a","pk":1}"#,
                envelope(
                    &source(),
                    "null",
                    r#"{"ck":"a","n":{"value":null},"pk":1,"s":null,"t":{"value":"x"}}"#,
                    None,
                    "r",
                    ts,
                ),
            )],
        );

        // The static row of a partition: the clustering column null.
        let s = CqlValue::Int(7);
        let mut r = EventRenderer::new(table(), advanced(ImageMode::Full, ImageMode::Full));
        let mut out = Vec::new();
        r.render_snapshot_row(&[("pk", Some(&pk)), ("s", Some(&s))], SNAP, &mut out)
            .unwrap();
        checks.eq(
            "static snapshot row",
            &out,
            &[want(
                r#"{"pk":1,"ck":null}"#,
                envelope(
                    &source(),
                    "null",
                    r#"{"ck":null,"n":null,"pk":1,"s":7,"t":null,"v":null}"#,
                    None,
                    "r",
                    ts,
                ),
            )
            .header("scylla.target", "static-row")],
        );
        checks.finish();

        // Errors, not panics: no partition key, an unknown column.
        let mut out = Vec::new();
        assert!(
            r.render_snapshot_row(&[("ck", Some(&ck))], SNAP, &mut out)
                .is_err()
        );
        let err = r
            .render_snapshot_row(&[("pk", Some(&pk)), ("zz", None)], SNAP, &mut out)
            .unwrap_err();
        assert!(err.downcast_ref::<SchemaMismatch>().is_some());
        assert!(out.is_empty());
        assert_eq!(r.topic_suffix(), "ks.t");
    }
}

/// The time this thread has run on a CPU (Linux's `/proc/thread-self/schedstat`), in ns:
/// unlike the wall clock, not counting the time other processes had the core.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The cost of rendering: the same changes rendered again and again, per event. Run with
/// `cargo test -p scylla-cdc-kafka --lib rendering_cost -- --ignored --nocapture` (best with
/// this crate and `scylla-cdc` optimized: `--config 'profile.dev.package.scylla-cdc-kafka.opt-level=3' --config 'profile.dev.package.scylla-cdc.opt-level=3'`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn rendering_cost() {
    let w = written().await;
    let cases: Vec<(&str, &str, Change, EventOptions)> = vec![
        ("t update, legacy", "t", w.of("t", 1)[1].clone(), opts()),
        (
            "t update, legacy, schemas",
            "t",
            w.of("t", 1)[1].clone(),
            EventOptions {
                schemas: true,
                ..opts()
            },
        ),
        (
            "t update, advanced full/full",
            "t",
            w.of("t", 1)[1].clone(),
            advanced(ImageMode::Full, ImageMode::Full),
        ),
        (
            "t update, advanced only-updated",
            "t",
            w.of("t", 1)[1].clone(),
            advanced(ImageMode::OnlyUpdated, ImageMode::OnlyUpdated),
        ),
        (
            "t insert, advanced none/none",
            "t",
            w.of("t", 1)[0].clone(),
            advanced(ImageMode::None, ImageMode::None),
        ),
        (
            "types insert (29 columns), advanced full/full",
            "types",
            w.of("types", 1)[0].clone(),
            advanced(ImageMode::Full, ImageMode::Full),
        ),
        (
            "types insert (29 columns), legacy",
            "types",
            w.of("types", 1)[0].clone(),
            opts(),
        ),
    ];
    let only = std::env::var("RENDER_BENCH").unwrap_or_default();
    for (name, table, change, options) in cases {
        if !name.contains(only.as_str()) {
            continue;
        }
        let mut r = EventRenderer::new(w.table(table), options);
        let mut out = Vec::with_capacity(8);
        let n = 100_000;
        let mut events = 0usize;
        let mut bytes = 0usize;
        let cpu_start = thread_cpu_ns();
        let start = std::time::Instant::now();
        for _ in 0..n {
            out.clear();
            r.render_change(&change, P, &mut out).unwrap();
            events += out.len();
            bytes += out
                .iter()
                .map(|e| e.key.as_ref().map_or(0, Vec::len) + e.value.as_ref().map_or(0, Vec::len))
                .sum::<usize>();
            std::hint::black_box(&out);
        }
        let per = start.elapsed().as_nanos() as f64 / events as f64;
        let cpu = thread_cpu_ns()
            .zip(cpu_start)
            .map(|(end, start)| (end - start) as f64 / events as f64);
        println!(
            "{name}: {per:.0} ns per event, {} ns of CPU ({:.0} events/s on one core, {} bytes per event)",
            cpu.map_or("?".to_owned(), |c| format!("{c:.0}")),
            1e9 / cpu.unwrap_or(per),
            bytes / events
        );
    }
}

/// Writes the events of every change in several option sets as `kafka-check produce` input
/// (one JSON object a line: key, value and headers as strings, after the table's name and a
/// tab), one file per option set in the directory `$EVENTS_OUT`, and edge values of every
/// native type as snapshot rows: for checking them with Kafka Connect's own `JsonConverter`
/// and Debezium's `ExtractNewRecordState` (`conformance/kafka/kafka-check connect` and
/// `flatten`, after `cut -f2`), and that `JsonConverter` writes them back byte for byte
/// (`scylla-cdc-kafka/conformance/RoundTrip.java`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn dump_events() {
    let Ok(dir) = std::env::var("EVENTS_OUT") else {
        panic!("set EVENTS_OUT to a directory");
    };
    let w = written().await;
    let sets: Vec<(&str, EventOptions)> = vec![
        ("legacy-schemas", EventOptions::new("ns")),
        (
            "legacy-pre-schemas",
            EventOptions {
                before: ImageMode::Full,
                ..EventOptions::new("ns")
            },
        ),
        ("legacy-plain", opts()),
        (
            "advanced-full-schemas",
            EventOptions {
                schemas: true,
                key_placement: "kafka-key,payload-after,payload-before,payload-key,kafka-headers"
                    .parse()
                    .unwrap(),
                ..advanced(ImageMode::Full, ImageMode::Full)
            },
        ),
        (
            "advanced-only-updated-schemas",
            EventOptions {
                schemas: true,
                ..advanced(ImageMode::OnlyUpdated, ImageMode::OnlyUpdated)
            },
        ),
        (
            "advanced-full-plain",
            advanced(ImageMode::Full, ImageMode::Full),
        ),
    ];
    for (name, options) in sets {
        let mut lines = String::new();
        for table in ["t", "simple", "nock", "comp", "types"] {
            let mut r = EventRenderer::new(w.table(table), options.clone());
            let mut changes = w.changes[table].clone();
            changes.sort_by_key(|c| c.timestamp_micros());
            for c in &changes {
                for e in render(&mut r, c) {
                    let mut headers = serde_json::Map::new();
                    for (k, v) in &e.headers {
                        headers.insert(k.clone(), String::from_utf8(v.clone()).unwrap().into());
                    }
                    let line = serde_json::json!({
                        "key": e.key.as_ref().map(|k| String::from_utf8(k.clone()).unwrap()),
                        "value": e.value.as_ref().map(|v| String::from_utf8(v.clone()).unwrap()),
                        "headers": headers,
                    });
                    lines.push_str(&format!("{table}\t{line}\n"));
                }
            }
        }
        std::fs::write(format!("{dir}/{name}.tsv"), lines).unwrap();
    }
    // Edge values of every native type, as snapshot rows (advanced and legacy).
    for (name, options) in [
        (
            "values-advanced-schemas",
            EventOptions {
                schemas: true,
                ..advanced(ImageMode::Full, ImageMode::Full)
            },
        ),
        ("values-legacy-schemas", EventOptions::new("ns")),
    ] {
        let mut lines = String::new();
        let mut r = EventRenderer::new(edge::table(), options);
        for (i, row) in edge::rows().iter().enumerate() {
            let pk = scylla::value::CqlValue::Int(i as i32);
            let mut cols: Vec<(&str, Option<&scylla::value::CqlValue>)> = vec![("pk", Some(&pk))];
            cols.extend(row.iter().map(|(n, v)| (*n, Some(v))));
            let mut out = Vec::new();
            r.render_snapshot_row(&cols, P, &mut out).unwrap();
            for e in out {
                let line = serde_json::json!({
                    "key": String::from_utf8(e.key.unwrap()).unwrap(),
                    "value": String::from_utf8(e.value.unwrap()).unwrap(),
                });
                lines.push_str(&format!("edge\t{line}\n"));
            }
        }
        std::fs::write(format!("{dir}/{name}.tsv"), lines).unwrap();
    }
}

/// A table of every native type and rows of edge values (finite floats: Connect reads
/// `"NaN"` back as a string).
mod edge {
    use scylla::frame::response::result::{ColumnType, NativeType};
    use scylla::value::{
        CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
    };

    use super::super::{ColumnInfo, TableInfo};

    const TYPES: &[(&str, NativeType)] = &[
        ("a", NativeType::Ascii),
        ("bi", NativeType::BigInt),
        ("bl", NativeType::Blob),
        ("bo", NativeType::Boolean),
        ("d", NativeType::Date),
        ("db", NativeType::Double),
        ("de", NativeType::Decimal),
        ("du", NativeType::Duration),
        ("f", NativeType::Float),
        ("i", NativeType::Inet),
        ("it", NativeType::Int),
        ("si", NativeType::SmallInt),
        ("ti", NativeType::TinyInt),
        ("tm", NativeType::Time),
        ("ts", NativeType::Timestamp),
        ("tu", NativeType::Timeuuid),
        ("tx", NativeType::Text),
        ("u", NativeType::Uuid),
        ("vi", NativeType::Varint),
    ];

    pub(super) fn table() -> TableInfo {
        TableInfo {
            keyspace: "ks".into(),
            table: "edge".into(),
            partition_key: vec![ColumnInfo::new("pk", ColumnType::Native(NativeType::Int))],
            clustering_key: vec![],
            static_columns: vec![],
            regular_columns: TYPES
                .iter()
                .map(|(n, t)| ColumnInfo::new(*n, ColumnType::Native(t.clone())))
                .collect(),
        }
    }

    pub(super) fn rows() -> Vec<Vec<(&'static str, CqlValue)>> {
        let dec = |b: &[u8], s: i32| {
            CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_slice_and_exponent(b, s))
        };
        let doubles = [
            0.0,
            -0.0,
            1e7,
            9999999.5,
            1e-3,
            9.99e-4,
            1.5e300,
            -2.2250738585072014e-308,
            0.1 + 0.2,
            123456789.125,
        ];
        let floats = [0.0f32, 1e7, 1e-4, f32::MAX, f32::MIN_POSITIVE, 0.3];
        let texts = [
            "",
            "quote \" back \\ slash",
            "\u{1}\u{8}\t\n\u{c}\r\u{1f}\u{7f}",
            "é ü 日本 😀",
            "</script>/",
        ];
        let mut rows = Vec::new();
        for i in 0..10 {
            let mut row = vec![
                ("db", CqlValue::Double(doubles[i % doubles.len()])),
                ("f", CqlValue::Float(floats[i % floats.len()])),
                ("tx", CqlValue::Text(texts[i % texts.len()].to_owned())),
                ("a", CqlValue::Ascii(texts[i % 2].to_owned())),
                (
                    "bi",
                    CqlValue::BigInt([i64::MIN, i64::MAX, -1, 0, 42][i % 5]),
                ),
                ("it", CqlValue::Int([i32::MIN, i32::MAX, -7][i % 3])),
                ("si", CqlValue::SmallInt([i16::MIN, i16::MAX][i % 2])),
                ("ti", CqlValue::TinyInt([i8::MIN, i8::MAX][i % 2])),
                ("bo", CqlValue::Boolean(i % 2 == 0)),
                (
                    "bl",
                    CqlValue::Blob((0..i as u8 * 3).map(|b| b.wrapping_mul(37)).collect()),
                ),
                (
                    "d",
                    CqlValue::Date(CqlDate(
                        [
                            (1 << 31) - 1,
                            (1 << 31) + 19884,
                            1 << 31,
                            (1 << 31) - 719162,
                        ][i % 4],
                    )),
                ),
                (
                    "tm",
                    CqlValue::Time(CqlTime([0, 86_399_999_999_999, 45_296_789_000_000][i % 3])),
                ),
                (
                    "ts",
                    CqlValue::Timestamp(CqlTimestamp(
                        [-1, 0, 1_718_022_896_789, -62_135_596_800_000][i % 4],
                    )),
                ),
                (
                    "u",
                    CqlValue::Uuid(uuid::Uuid::from_u128(
                        0x0123_4567_89ab_cdef_fedc_ba98_7654_3210 ^ i as u128,
                    )),
                ),
                (
                    "tu",
                    CqlValue::Timeuuid(CqlTimeuuid::from_bytes([i as u8; 16])),
                ),
                (
                    "vi",
                    CqlValue::Varint(CqlVarint::from_signed_bytes_be(vec![0x80 ^ i as u8; i + 1])),
                ),
                (
                    "i",
                    CqlValue::Inet(
                        [
                            "127.0.0.1",
                            "::1",
                            "2001:db8::8a2e:370:7334",
                            "::ffff:10.0.0.1",
                        ][i % 4]
                            .parse()
                            .unwrap(),
                    ),
                ),
                (
                    "du",
                    CqlValue::Duration(CqlDuration {
                        months: i as i32 * 7,
                        days: -(i as i32),
                        nanoseconds: i as i64 * 1_234_567_891,
                    }),
                ),
            ];
            row.push((
                "de",
                [
                    dec(&[0x12, 0xd6, 0x87], 2),
                    dec(&[12], -2),
                    dec(&[5], 300),
                    dec(&[0xff], 0),
                    dec(&[1], 7),
                ][i % 5]
                    .clone(),
            ));
            rows.push(row);
        }
        rows
    }
}
