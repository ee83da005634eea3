//! Executor tests through CQL text: a [`TestDb`] runs statements through
//! `Database::handle_request` and decodes the response frames into rows of [`Value`]s or
//! errors.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use rand::SeedableRng;

use super::*;
use crate::cluster::{NodeInfo, ring};
use crate::frame::{BatchStatement, BoundValue};
use crate::types::CqlType;
use crate::types::UserType;
use crate::types::value::{self, Value};

mod write;

/// A decoded RESULT or ERROR.
#[derive(Debug, Clone, PartialEq)]
enum Res {
    Void,
    Rows {
        cols: Vec<(String, CqlType)>,
        rows: Vec<Vec<Option<Value>>>,
        paging: Option<Bytes>,
    },
    SetKeyspace(String),
    Prepared(Bytes),
    SchemaChange,
}

/// An ERROR frame's code and message.
#[derive(Debug, Clone, PartialEq)]
struct Err {
    code: i32,
    message: String,
    body: Bytes,
}

struct TestDb {
    db: Database,
    topology: Topology,
    conn: ConnState,
}

fn config() -> ClusterConfig {
    ClusterConfig {
        shards_per_node: 2,
        vnodes_per_node: 16,
        ignore_msb: 12,
        credentials: None,
        generation_delay: std::time::Duration::from_secs(2),
        default_cdc_ttl: 86400,
        seed: None,
        query_page_size_in_bytes: crate::cluster::DEFAULT_QUERY_PAGE_SIZE_IN_BYTES,
        query_tombstone_page_limit: crate::cluster::DEFAULT_QUERY_TOMBSTONE_PAGE_LIMIT,
    }
}

fn topology(nodes: usize) -> Topology {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut tokens: Vec<Vec<i64>> = Vec::new();
    let mut infos = Vec::new();
    for i in 1..=nodes {
        let t = ring::random_tokens(&mut rng, 16, &tokens);
        tokens.push(t.clone());
        infos.push(NodeInfo {
            index: i,
            ip: IpAddr::V4(Ipv4Addr::new(127, 0, 0, i as u8)),
            host_id: Uuid::from_u128(i as u128),
            tokens: t,
            shards: 2,
            up: true,
        });
    }
    Topology::new(infos)
}

fn read_string(b: &mut Bytes) -> String {
    let n = b.get_u16() as usize;
    let s = String::from_utf8_lossy(&b[..n]).to_string();
    b.advance(n);
    s
}

fn read_type(b: &mut Bytes) -> CqlType {
    let id = b.get_u16();
    match id {
        0x01 => CqlType::Ascii,
        0x02 => CqlType::Bigint,
        0x03 => CqlType::Blob,
        0x04 => CqlType::Boolean,
        0x05 => CqlType::Counter,
        0x06 => CqlType::Decimal,
        0x07 => CqlType::Double,
        0x08 => CqlType::Float,
        0x09 => CqlType::Int,
        0x0B => CqlType::Timestamp,
        0x0C => CqlType::Uuid,
        0x0D => CqlType::Text,
        0x0E => CqlType::Varint,
        0x0F => CqlType::Timeuuid,
        0x10 => CqlType::Inet,
        0x11 => CqlType::Date,
        0x12 => CqlType::Time,
        0x13 => CqlType::Smallint,
        0x14 => CqlType::Tinyint,
        0x15 => CqlType::Duration,
        0x20 => CqlType::List {
            elem: Box::new(read_type(b)),
            frozen: false,
        },
        0x21 => {
            let k = read_type(b);
            let v = read_type(b);
            CqlType::Map {
                key: Box::new(k),
                value: Box::new(v),
                frozen: false,
            }
        }
        0x22 => CqlType::Set {
            elem: Box::new(read_type(b)),
            frozen: false,
        },
        0x30 => {
            let keyspace = read_string(b);
            let name = read_string(b);
            let n = b.get_u16();
            let fields = (0..n).map(|_| (read_string(b), read_type(b))).collect();
            CqlType::Udt {
                def: Arc::new(UserType {
                    keyspace,
                    name,
                    fields,
                }),
                frozen: true,
            }
        }
        0x31 => {
            let n = b.get_u16();
            CqlType::Tuple((0..n).map(|_| read_type(b)).collect())
        }
        other => panic!("unknown type id {other:#x}"),
    }
}

/// Decodes one response frame.
fn decode(frame: &[u8]) -> Result<Res, Err> {
    let mut b = Bytes::copy_from_slice(frame);
    assert_eq!(b.get_u8(), 0x84, "response version");
    let flags = b.get_u8();
    let _stream = b.get_i16();
    let op = b.get_u8();
    let len = b.get_u32() as usize;
    assert_eq!(b.len(), len, "frame length");
    if flags & 0x08 != 0 {
        let n = b.get_u16();
        for _ in 0..n {
            read_string(&mut b);
        }
    }
    if op == 0x00 {
        let code = b.get_i32();
        let message = read_string(&mut b);
        return Err(Err {
            code,
            message,
            body: b,
        });
    }
    assert_eq!(op, 0x08, "RESULT");
    match b.get_i32() {
        1 => Ok(Res::Void),
        2 => {
            let flags = b.get_i32();
            let n = b.get_i32() as usize;
            let paging = if flags & 2 != 0 {
                let l = b.get_i32() as usize;
                let p = b.split_to(l);
                Some(p)
            } else {
                None
            };
            let mut cols = Vec::new();
            if flags & 4 == 0 {
                let global = flags & 1 != 0;
                if global {
                    read_string(&mut b);
                    read_string(&mut b);
                }
                for _ in 0..n {
                    if !global {
                        read_string(&mut b);
                        read_string(&mut b);
                    }
                    let name = read_string(&mut b);
                    cols.push((name, read_type(&mut b)));
                }
            }
            let count = b.get_i32();
            let mut rows = Vec::new();
            for _ in 0..count {
                let mut row = Vec::new();
                for (_, t) in cols.iter().take(n) {
                    let l = b.get_i32();
                    if l < 0 {
                        row.push(None);
                    } else {
                        let bytes = b.split_to(l as usize);
                        row.push(Some(value::decode(t, &bytes).expect("cell decodes")));
                    }
                }
                rows.push(row);
            }
            assert!(b.is_empty(), "trailing bytes in ROWS");
            Ok(Res::Rows { cols, rows, paging })
        }
        3 => Ok(Res::SetKeyspace(read_string(&mut b))),
        4 => {
            let n = b.get_u16() as usize;
            Ok(Res::Prepared(b.split_to(n)))
        }
        5 => Ok(Res::SchemaChange),
        k => panic!("unknown result kind {k}"),
    }
}

fn params(
    values: Vec<BoundValue>,
    page_size: Option<i32>,
    paging_state: Option<Bytes>,
) -> QueryParams {
    QueryParams {
        consistency: Consistency::One,
        values,
        names: None,
        skip_metadata: false,
        page_size,
        paging_state,
        serial_consistency: None,
        timestamp: None,
    }
}

fn bv(v: &Value) -> BoundValue {
    BoundValue::Value(v.to_bytes())
}

impl TestDb {
    fn new() -> TestDb {
        Self::with_nodes(1)
    }

    fn with_nodes(n: usize) -> TestDb {
        TestDb {
            db: Database::new(&config()),
            topology: topology(n),
            conn: ConnState::new(1, 0),
        }
    }

    /// A database with keyspace `ks` (RF 1) in use.
    fn with_ks() -> TestDb {
        let mut t = TestDb::new();
        t.ok("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        t.ok("USE ks");
        t
    }

    fn request(&mut self, request: Request) -> Result<Res, Err> {
        let mut out = BytesMut::new();
        let version = self.db.schema().version;
        let outcome = self
            .db
            .handle_request(&self.topology, &mut self.conn, 1, request, &mut out);
        let r = decode(&out);
        // Every schema change is announced; an unchanged schema (an `IF NOT EXISTS` no-op)
        // announces nothing.
        let changed = self.db.schema().version != version;
        assert_eq!(!outcome.schema_changes.is_empty(), changed, "{r:?}");
        if changed {
            assert_eq!(r, Ok(Res::SchemaChange));
        }
        r
    }

    fn query_with(&mut self, cql: &str, p: QueryParams) -> Result<Res, Err> {
        self.request(Request::Query {
            query: cql.to_string(),
            params: p,
        })
    }

    fn query(&mut self, cql: &str) -> Result<Res, Err> {
        self.query_with(cql, params(Vec::new(), None, None))
    }

    #[track_caller]
    fn ok(&mut self, cql: &str) -> Res {
        match self.query(cql) {
            Ok(r) => r,
            Err(e) => panic!("{cql}: error {:#x} {}", e.code, e.message),
        }
    }

    #[track_caller]
    fn rows(&mut self, cql: &str) -> Vec<Vec<Option<Value>>> {
        match self.ok(cql) {
            Res::Rows { rows, .. } => rows,
            other => panic!("{cql}: not rows: {other:?}"),
        }
    }

    #[track_caller]
    fn err(&mut self, cql: &str) -> Err {
        match self.query(cql) {
            Ok(r) => panic!("{cql}: expected an error, got {r:?}"),
            Err(e) => e,
        }
    }

    fn prepare(&mut self, cql: &str) -> Result<Bytes, Err> {
        match self.request(Request::Prepare {
            query: cql.to_string(),
        })? {
            Res::Prepared(id) => Ok(id),
            other => panic!("not prepared: {other:?}"),
        }
    }

    /// Bind metadata of a statement: (name, type) per variable, pk indexes, lwt.
    fn bind_meta(&mut self, cql: &str) -> (Vec<(String, String)>, Vec<u16>, bool) {
        if let Err(e) = self.prepare(cql) {
            panic!("{cql}: {}", e.message);
        }
        let c = self
            .db
            .prepare(self.conn.keyspace.as_deref(), cql)
            .expect("prepared");
        let p = self.db.planned(&c).expect("planned");
        (
            p.metadata
                .variables
                .iter()
                .map(|v| (v.name.clone(), v.typ.to_string()))
                .collect(),
            p.metadata.pk_indexes.clone(),
            p.metadata.lwt,
        )
    }

    fn execute(
        &mut self,
        id: &Bytes,
        values: Vec<BoundValue>,
        page_size: Option<i32>,
        paging: Option<Bytes>,
    ) -> Result<Res, Err> {
        self.request(Request::Execute {
            id: id.clone(),
            params: params(values, page_size, paging),
        })
    }
}

fn int(i: i32) -> Option<Value> {
    Some(Value::Int(i))
}

fn text(s: &str) -> Option<Value> {
    Some(Value::text(s))
}

// ---------------------------------------------------------------------------------------
// Basics, errors
// ---------------------------------------------------------------------------------------

#[test]
fn use_answers_set_keyspace_with_the_canonical_name() {
    let mut t = TestDb::new();
    t.ok("CREATE KEYSPACE \"MyKs\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    t.ok("CREATE KEYSPACE lower WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    assert_eq!(t.ok("USE \"MyKs\""), Res::SetKeyspace("MyKs".into()));
    assert_eq!(t.ok("USE LOWER"), Res::SetKeyspace("lower".into()));
    assert_eq!(t.conn.keyspace.as_deref(), Some("lower"));
    let e = t.err("USE nope");
    assert_eq!(e.code, 0x2200);
    assert!(e.message.contains("does not exist"), "{}", e.message);
}

#[test]
fn errors_carry_the_right_codes_and_messages() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, v int)");
    let e = t.err("SELEC * FROM t");
    assert_eq!(e.code, 0x2000);
    assert!(e.message.starts_with("line 1:"), "{}", e.message);
    let e = t.err("SELECT * FROM nope");
    assert_eq!(
        (e.code, e.message.as_str()),
        (0x2200, "unconfigured table nope")
    );
    let e = t.err("SELECT * FROM nope.t");
    assert_eq!(
        (e.code, e.message.as_str()),
        (0x2200, "Keyspace nope does not exist")
    );
    let e = t.err("SELECT x FROM t");
    assert_eq!(e.message, "Undefined column name x");
    let e = t.err("INSERT INTO t (pk, v) VALUES (1, 'x')");
    assert_eq!(e.code, 0x2200);
    assert_eq!(
        e.message,
        "Invalid STRING constant (x) for \"v\" of type int"
    );
    let e = t.err("INSERT INTO t (pk, v) VALUES (1, 99999999999)");
    assert_eq!(e.code, 0x2200);
    // Wrong number of values.
    let e = t
        .query_with(
            "INSERT INTO t (pk, v) VALUES (?, ?)",
            params(vec![bv(&Value::Int(1))], None, None),
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "There were 2 markers(?) in CQL but 1 bound variables"
    );
    // A bad bound value.
    let e = t
        .query_with(
            "INSERT INTO t (pk, v) VALUES (?, ?)",
            params(
                vec![
                    bv(&Value::Int(1)),
                    BoundValue::Value(Bytes::from_static(&[1, 2, 3])),
                ],
                None,
                None,
            ),
        )
        .unwrap_err();
    assert_eq!(e.code, 0x2200);
    assert!(
        e.message.starts_with("Exception while binding column v: "),
        "{}",
        e.message
    );
    // Unknown prepared id: Unprepared with the id.
    let id = Bytes::from_static(&[1, 2, 3, 4]);
    let e = t.execute(&id, Vec::new(), None, None).unwrap_err();
    assert_eq!(e.code, 0x2500);
    assert_eq!(&e.body[..], &[0, 4, 1, 2, 3, 4]);
    // Missing keys.
    let e = t.err("UPDATE t SET v = 1");
    assert_eq!(e.code, 0x2000, "{}", e.message);
    let e = t.err("SELECT * FROM t WHERE v = 1");
    assert!(e.message.contains("ALLOW FILTERING"), "{}", e.message);
    let e = t.err("INSERT INTO t (v) VALUES (1)");
    assert_eq!(e.message, "Some partition key parts are missing: pk");
}

#[test]
fn prepared_ids_depend_on_text_and_keyspace_only() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, v int)");
    let a = t.prepare("SELECT * FROM t").unwrap();
    let b = t.prepare("SELECT * FROM t").unwrap();
    assert_eq!(a, b);
    assert_eq!(a, statement_id(Some("ks"), "SELECT * FROM t"));
    let c = t.prepare("SELECT * FROM ks.t").unwrap();
    assert_ne!(a, c);
    // Another connection (another node) gets the same id and can execute it.
    t.conn = ConnState::new(2, 1);
    t.ok("USE ks");
    assert_eq!(t.prepare("SELECT * FROM t").unwrap(), a);
    assert!(matches!(
        t.execute(&a, Vec::new(), None, None),
        Ok(Res::Rows { .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------

const ALL_TYPES: &str = "CREATE TABLE types (pk int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean, \
    da date, de decimal, dou double, du duration, f float, i inet, n int, s smallint, tx text, \
    ti time, ts timestamp, tu timeuuid, tn tinyint, u uuid, vi varint)";

#[test]
fn every_native_type_round_trips_as_literal_and_bound_value() {
    let mut t = TestDb::with_ks();
    t.ok(ALL_TYPES);
    t.ok("INSERT INTO types (pk, a, b, bl, bo, da, de, dou, du, f, i, n, s, tx, ti, ts, tu, tn, u, vi) VALUES \
          (1, 'asc', -9000000000, 0xcafe, true, '2024-01-02', -12.345, 1.5, 1h30m, 2.5, '10.0.0.1', 42, -7, 'héllo', \
          '01:02:03.000000004', '2024-01-02 03:04:05+0000', 50554d6e-29bb-11e5-b345-feff819cdc9f, 5, \
          123e4567-e89b-12d3-a456-426614174000, 123456789012345678901234567890)");
    let rows = t.rows("SELECT pk, a, b, bl, bo, da, de, dou, du, f, i, n, s, tx, ti, ts, tu, tn, u, vi FROM types WHERE pk = 1");
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r[1], text("asc"));
    assert_eq!(r[2], Some(Value::Bigint(-9_000_000_000)));
    assert_eq!(r[3], Some(Value::blob(vec![0xca, 0xfe])));
    assert_eq!(r[4], Some(Value::Boolean(true)));
    assert_eq!(r[5], Some(Value::Date((1 << 31) + 19724)));
    assert_eq!(
        r[6].as_ref().map(|v| v.to_string()),
        Some("-12.345".to_string())
    );
    assert_eq!(r[7], Some(Value::Double(1.5)));
    assert_eq!(
        r[8],
        Some(Value::Duration(value::Duration {
            months: 0,
            days: 0,
            nanos: 5_400_000_000_000
        }))
    );
    assert_eq!(r[9], Some(Value::Float(2.5)));
    assert_eq!(r[10], Some(Value::Inet("10.0.0.1".parse().unwrap())));
    assert_eq!(r[11], int(42));
    assert_eq!(r[12], Some(Value::Smallint(-7)));
    assert_eq!(r[13], text("héllo"));
    assert_eq!(r[14], Some(Value::Time(3_723_000_000_004)));
    assert_eq!(r[15], Some(Value::Timestamp(1_704_164_645_000)));
    assert!(matches!(r[16], Some(Value::Timeuuid(_))));
    assert_eq!(r[17], Some(Value::Tinyint(5)));
    assert!(matches!(r[18], Some(Value::Uuid(_))));
    assert_eq!(
        r[19].as_ref().map(|v| v.to_string()),
        Some("123456789012345678901234567890".to_string())
    );
    // The same values bound to a prepared statement come back identical.
    let id = t
        .prepare("INSERT INTO types (pk, a, b, bl, bo, da, de, dou, du, f, i, n, s, tx, ti, ts, tu, tn, u, vi) \
                  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
        .unwrap();
    let mut values = vec![bv(&Value::Int(2))];
    values.extend(r[1..].iter().map(|v| bv(v.as_ref().unwrap())));
    assert_eq!(t.execute(&id, values, None, None), Ok(Res::Void));
    let again = t.rows("SELECT pk, a, b, bl, bo, da, de, dou, du, f, i, n, s, tx, ti, ts, tu, tn, u, vi FROM types WHERE pk = 2");
    assert_eq!(&again[0][1..], &r[1..]);
    // Nulls and unset values.
    t.ok("INSERT INTO types (pk, n, tx) VALUES (3, null, 'x')");
    let sel = t
        .prepare("SELECT n, tx, b FROM types WHERE pk = ?")
        .unwrap();
    let Ok(Res::Rows { rows, .. }) = t.execute(&sel, vec![bv(&Value::Int(3))], None, None) else {
        panic!("no rows")
    };
    assert_eq!(rows, vec![vec![None, text("x"), None]]);
    let upd = t
        .prepare("UPDATE types SET n = ?, tx = ? WHERE pk = 3")
        .unwrap();
    t.execute(
        &upd,
        vec![bv(&Value::Int(9)), BoundValue::Unset],
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        t.rows("SELECT n, tx FROM types WHERE pk = 3"),
        vec![vec![int(9), text("x")]]
    );
    t.execute(&upd, vec![BoundValue::Null, BoundValue::Unset], None, None)
        .unwrap();
    assert_eq!(
        t.rows("SELECT n, tx FROM types WHERE pk = 3"),
        vec![vec![None, text("x")]]
    );
}

#[test]
fn literal_forms_of_time_types_and_floats() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE x (pk int PRIMARY KEY, ts timestamp, d date, ti time, f float, dbl double, v varint, de decimal)");
    t.ok("INSERT INTO x (pk, ts, d, ti, f, dbl, v, de) VALUES (1, 1000, 2147483648, '00:00:00.000000005', NaN, -Infinity, 1, 3)");
    // ScyllaDB takes no integer constant for a time (`untyped_constant_test_assignment`).
    let e = t.err("INSERT INTO x (pk, ti) VALUES (1, 5)");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            0x2200,
            "Invalid INTEGER constant (5) for \"ti\" of type time"
        )
    );
    let r = t.rows("SELECT ts, d, ti, f, dbl, v FROM x WHERE pk = 1");
    assert_eq!(r[0][0], Some(Value::Timestamp(1000)));
    assert_eq!(r[0][1], Some(Value::Date(1 << 31)));
    assert_eq!(r[0][2], Some(Value::Time(5)));
    assert!(matches!(r[0][3], Some(Value::Float(f)) if f.is_nan()));
    assert_eq!(r[0][4], Some(Value::Double(f64::NEG_INFINITY)));
    t.ok("INSERT INTO x (pk, ts) VALUES (2, '2024-01-02T03:04:05.678Z')");
    assert_eq!(
        t.rows("SELECT ts FROM x WHERE pk = 2"),
        vec![vec![Some(Value::Timestamp(1_704_164_645_678))]]
    );
    t.ok("INSERT INTO x (pk, ts) VALUES (3, '2024-01-02')");
    assert_eq!(
        t.rows("SELECT ts FROM x WHERE pk = 3"),
        vec![vec![Some(Value::Timestamp(1_704_153_600_000))]]
    );
    let e = t.err("INSERT INTO x (pk, ts) VALUES (4, 'tomorrow')");
    assert_eq!(e.code, 0x2200);
    let e = t.err("INSERT INTO x (pk, ti) VALUES (4, '25:00:00')");
    assert_eq!(e.code, 0x2200);
}

#[test]
fn collections_tuples_and_udts_round_trip_nested() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b text)");
    t.ok("CREATE TABLE c (pk int PRIMARY KEY, l list<int>, s set<text>, m map<int, text>, \
          fl frozen<list<int>>, fm frozen<map<text, frozen<list<int>>>>, tup tuple<int, text>, \
          u frozen<ut>, nu ut, lu list<frozen<ut>>, nested map<int, frozen<set<frozen<tuple<int, int>>>>>)");
    t.ok("INSERT INTO c (pk, l, s, m, fl, fm, tup, u, nu, lu, nested) VALUES (1, [3, 1, 2], {'b', 'a'}, {2: 'x', 1: 'y'}, \
          [1], {'k': [1, 2]}, (1, 'one'), {a: 1, b: 'u'}, {b: 'nu'}, [{a: 5}], {1: {(1, 2), (0, 1)}})");
    let r = t.rows("SELECT l, s, m, fl, fm, tup, u, nu, lu, nested FROM c WHERE pk = 1");
    let r = &r[0];
    assert_eq!(
        r[0],
        Some(Value::list(vec![
            Value::Int(3),
            Value::Int(1),
            Value::Int(2)
        ]))
    );
    assert_eq!(
        r[1],
        Some(Value::set(vec![Value::text("a"), Value::text("b")]))
    );
    assert_eq!(
        r[2],
        Some(Value::map(vec![
            (Value::Int(1), Value::text("y")),
            (Value::Int(2), Value::text("x"))
        ]))
    );
    assert_eq!(r[3], Some(Value::list(vec![Value::Int(1)])));
    assert_eq!(
        r[4],
        Some(Value::map(vec![(
            Value::text("k"),
            Value::list(vec![Value::Int(1), Value::Int(2)])
        )]))
    );
    assert_eq!(
        r[5],
        Some(Value::tuple(vec![
            Some(Value::Int(1)),
            Some(Value::text("one"))
        ]))
    );
    assert_eq!(
        r[6],
        Some(Value::udt(vec![
            Some(Value::Int(1)),
            Some(Value::text("u"))
        ]))
    );
    assert_eq!(r[7], Some(Value::udt(vec![None, Some(Value::text("nu"))])));
    assert_eq!(
        r[8],
        Some(Value::list(vec![Value::udt(vec![
            Some(Value::Int(5)),
            None
        ])]))
    );
    let inner = Value::set(vec![
        Value::tuple(vec![Some(Value::Int(0)), Some(Value::Int(1))]),
        Value::tuple(vec![Some(Value::Int(1)), Some(Value::Int(2))]),
    ]);
    assert_eq!(r[9], Some(Value::map(vec![(Value::Int(1), inner)])));
    // The same values bound.
    let id = t.prepare("INSERT INTO c (pk, l, s, m, fl, fm, tup, u, nu, lu, nested) VALUES (2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)").unwrap();
    let vals = r.iter().map(|v| bv(v.as_ref().unwrap())).collect();
    t.execute(&id, vals, None, None).unwrap();
    let again = t.rows("SELECT l, s, m, fl, fm, tup, u, nu, lu, nested FROM c WHERE pk = 2");
    assert_eq!(&again[0], r);
    let e = t.err("INSERT INTO c (pk, u) VALUES (3, {zz: 1})");
    assert_eq!(
        e.message,
        "Unknown field 'zz' in value of user defined type ut"
    );
    let e = t.err("INSERT INTO c (pk, l) VALUES (3, [1, null])");
    assert_eq!(e.message, "null is not supported inside collections");
    // Empty collections read as null.
    t.ok("INSERT INTO c (pk, l, s) VALUES (4, [], {})");
    assert_eq!(
        t.rows("SELECT l, s FROM c WHERE pk = 4"),
        vec![vec![None, None]]
    );
}

// ---------------------------------------------------------------------------------------
// Storage semantics through CQL
// ---------------------------------------------------------------------------------------

#[test]
fn row_markers_keep_inserted_rows_but_not_updated_ones() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO t (pk, ck, v) VALUES (1, 1, 1)");
    t.ok("DELETE v FROM t WHERE pk = 1 AND ck = 1");
    assert_eq!(
        t.rows("SELECT * FROM t WHERE pk = 1"),
        vec![vec![int(1), int(1), None]]
    );
    t.ok("UPDATE t SET v = 2 WHERE pk = 2 AND ck = 2");
    assert_eq!(t.rows("SELECT * FROM t WHERE pk = 2").len(), 1);
    t.ok("DELETE v FROM t WHERE pk = 2 AND ck = 2");
    assert!(t.rows("SELECT * FROM t WHERE pk = 2").is_empty());
    t.ok("UPDATE t SET v = null WHERE pk = 3 AND ck = 3");
    assert!(t.rows("SELECT * FROM t WHERE pk = 3").is_empty());
}

#[test]
fn last_write_wins_with_using_timestamp() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, v int)");
    t.ok("INSERT INTO t (pk, v) VALUES (1, 10) USING TIMESTAMP 1000");
    t.ok("INSERT INTO t (pk, v) VALUES (1, 5) USING TIMESTAMP 999");
    assert_eq!(
        t.rows("SELECT v, writetime(v) FROM t WHERE pk = 1"),
        vec![vec![int(10), Some(Value::Bigint(1000))]]
    );
    t.ok("UPDATE t USING TIMESTAMP 2000 SET v = 20 WHERE pk = 1");
    t.ok("DELETE FROM t USING TIMESTAMP 1500 WHERE pk = 1");
    assert_eq!(t.rows("SELECT v FROM t WHERE pk = 1"), vec![vec![int(20)]]);
    t.ok("DELETE FROM t USING TIMESTAMP 2000 WHERE pk = 1");
    assert!(t.rows("SELECT v FROM t WHERE pk = 1").is_empty());
    // The client's default timestamp is used when there is no USING TIMESTAMP.
    let mut p = params(Vec::new(), None, None);
    p.timestamp = Some(5000);
    t.query_with("INSERT INTO t (pk, v) VALUES (2, 1)", p)
        .unwrap();
    assert_eq!(
        t.rows("SELECT writetime(v) FROM t WHERE pk = 2"),
        vec![vec![Some(Value::Bigint(5000))]]
    );
    // Server timestamps increase.
    t.ok("INSERT INTO t (pk, v) VALUES (3, 1)");
    t.ok("INSERT INTO t (pk, v) VALUES (4, 1)");
    let a = t.rows("SELECT writetime(v) FROM t WHERE pk = 3")[0][0].clone();
    let b = t.rows("SELECT writetime(v) FROM t WHERE pk = 4")[0][0].clone();
    assert!(b > a);
}

#[test]
fn ttls_expire_and_default_ttl_applies() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, v int, w int)");
    t.ok("INSERT INTO t (pk, v) VALUES (1, 1) USING TTL 100");
    t.ok("UPDATE t USING TTL 10 SET w = 2 WHERE pk = 1");
    let r = t.rows("SELECT v, w, ttl(v), ttl(w) FROM t WHERE pk = 1");
    assert_eq!(r[0][2], int(100));
    assert_eq!(r[0][3], int(10));
    t.db.advance_clock(11_000_000);
    assert_eq!(
        t.rows("SELECT v, w FROM t WHERE pk = 1"),
        vec![vec![int(1), None]]
    );
    t.db.advance_clock(90_000_000);
    assert!(t.rows("SELECT * FROM t WHERE pk = 1").is_empty());
    t.ok("CREATE TABLE d (pk int PRIMARY KEY, v int) WITH default_time_to_live = 50");
    t.ok("INSERT INTO d (pk, v) VALUES (1, 1)");
    t.ok("INSERT INTO d (pk, v) VALUES (2, 1) USING TTL 0");
    assert_eq!(
        t.rows("SELECT ttl(v) FROM d WHERE pk = 1"),
        vec![vec![int(50)]]
    );
    assert_eq!(
        t.rows("SELECT ttl(v) FROM d WHERE pk = 2"),
        vec![vec![None]]
    );
    let e = t.err("INSERT INTO d (pk, v) VALUES (3, 1) USING TTL -1");
    assert_eq!(e.message, "A TTL must be greater or equal to 0, but was -1");
}

#[test]
fn every_delete_kind() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, a int, b int, v int, s int static, m map<int, int>, PRIMARY KEY (pk, a, b))");
    let fill = |t: &mut TestDb| {
        t.ok("TRUNCATE t");
        for a in 0..4 {
            for b in 0..3 {
                t.ok(&format!(
                    "INSERT INTO t (pk, a, b, v, m) VALUES (1, {a}, {b}, {}, {{1: 1, 2: 2}})",
                    a * 10 + b
                ));
            }
        }
        t.ok("UPDATE t SET s = 7 WHERE pk = 1");
    };
    let keys = |t: &mut TestDb| -> Vec<(i32, i32)> {
        t.rows("SELECT a, b FROM t WHERE pk = 1")
            .into_iter()
            .filter_map(|r| Some((r[0].as_ref()?.as_int()?, r[1].as_ref()?.as_int()?)))
            .collect()
    };
    fill(&mut t);
    t.ok("DELETE FROM t WHERE pk = 1 AND a = 1 AND b = 1");
    assert_eq!(keys(&mut t).len(), 11);
    t.ok("DELETE FROM t WHERE pk = 1 AND a = 2");
    assert_eq!(keys(&mut t).len(), 8);
    t.ok("DELETE FROM t WHERE pk = 1 AND a = 0 AND b > 0");
    assert_eq!(
        keys(&mut t),
        vec![(0, 0), (1, 0), (1, 2), (3, 0), (3, 1), (3, 2)]
    );
    t.ok("DELETE FROM t WHERE pk = 1 AND a = 3 AND b >= 1 AND b < 2");
    assert_eq!(keys(&mut t), vec![(0, 0), (1, 0), (1, 2), (3, 0), (3, 2)]);
    fill(&mut t);
    t.ok("DELETE FROM t WHERE pk = 1 AND (a, b) >= (1, 1) AND (a, b) < (3, 1)");
    assert_eq!(
        keys(&mut t),
        vec![(0, 0), (0, 1), (0, 2), (1, 0), (3, 1), (3, 2)]
    );
    t.ok("DELETE FROM t WHERE pk = 1 AND a > 1 AND a < 0");
    assert_eq!(keys(&mut t).len(), 6);
    t.ok("DELETE FROM t WHERE pk = 1 AND a <= 0");
    assert_eq!(keys(&mut t), vec![(1, 0), (3, 1), (3, 2)]);
    // Column, element and static deletes.
    t.ok("DELETE v, m[1] FROM t WHERE pk = 1 AND a = 1 AND b = 0");
    assert_eq!(
        t.rows("SELECT v, m FROM t WHERE pk = 1 AND a = 1 AND b = 0"),
        vec![vec![
            None,
            Some(Value::map(vec![(Value::Int(2), Value::Int(2))]))
        ]]
    );
    t.ok("DELETE s FROM t WHERE pk = 1");
    assert_eq!(
        t.rows("SELECT s FROM t WHERE pk = 1 AND a = 1 AND b = 0"),
        vec![vec![None]]
    );
    t.ok("DELETE FROM t WHERE pk = 1");
    assert!(t.rows("SELECT * FROM t WHERE pk = 1").is_empty());
    let e = t.err("DELETE v FROM t WHERE pk = 1 AND a = 1");
    assert!(e.message.contains("must be specified"), "{}", e.message);
}

#[test]
fn collection_operations() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b int)");
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, l list<text>, s set<int>, m map<text, int>, u ut)");
    t.ok("INSERT INTO t (pk, l, s, m) VALUES (1, ['b'], {1}, {'a': 1})");
    t.ok("UPDATE t SET l = l + ['c', 'd'] WHERE pk = 1");
    t.ok("UPDATE t SET l = ['a'] + l WHERE pk = 1");
    t.ok("UPDATE t SET l = ['z', 'y'] + l WHERE pk = 1");
    let l = |t: &mut TestDb| t.rows("SELECT l FROM t WHERE pk = 1")[0][0].clone();
    let list = |xs: &[&str]| Some(Value::list(xs.iter().map(|x| Value::text(x)).collect()));
    assert_eq!(l(&mut t), list(&["z", "y", "a", "b", "c", "d"]));
    t.ok("UPDATE t SET l[1] = 'Y' WHERE pk = 1");
    t.ok("DELETE l[0] FROM t WHERE pk = 1");
    assert_eq!(l(&mut t), list(&["Y", "a", "b", "c", "d"]));
    t.ok("UPDATE t SET l = l - ['a', 'c'] WHERE pk = 1");
    assert_eq!(l(&mut t), list(&["Y", "b", "d"]));
    let e = t.err("UPDATE t SET l[7] = 'x' WHERE pk = 1");
    assert_eq!(e.message, "List index 7 out of bound, list has size 3");
    t.ok("UPDATE t SET s = s + {3, 2}, m = m + {'b': 2}, m['c'] = 3 WHERE pk = 1");
    t.ok("UPDATE t SET s = s - {1}, m = m - {'a'} WHERE pk = 1");
    let r = t.rows("SELECT s, m FROM t WHERE pk = 1");
    assert_eq!(
        r[0][0],
        Some(Value::set(vec![Value::Int(2), Value::Int(3)]))
    );
    assert_eq!(
        r[0][1],
        Some(Value::map(vec![
            (Value::text("b"), Value::Int(2)),
            (Value::text("c"), Value::Int(3))
        ]))
    );
    t.ok("UPDATE t SET m = {'x': 9} WHERE pk = 1");
    assert_eq!(
        t.rows("SELECT m FROM t WHERE pk = 1")[0][0],
        Some(Value::map(vec![(Value::text("x"), Value::Int(9))]))
    );
    t.ok("UPDATE t SET u.b = 4 WHERE pk = 1");
    t.ok("UPDATE t SET u.a = 3 WHERE pk = 1");
    assert_eq!(
        t.rows("SELECT u, u.b FROM t WHERE pk = 1"),
        vec![vec![
            Some(Value::udt(vec![Some(Value::Int(3)), Some(Value::Int(4))])),
            int(4)
        ]]
    );
    t.ok("DELETE u.a FROM t WHERE pk = 1");
    assert_eq!(
        t.rows("SELECT u FROM t WHERE pk = 1")[0][0],
        Some(Value::udt(vec![None, Some(Value::Int(4))]))
    );
    // Overwriting writes a tombstone just below the new elements.
    let before = t.db.applied.lock().len();
    t.ok("UPDATE t USING TIMESTAMP 100000000000000 SET s = {5} WHERE pk = 1");
    let applied = t.db.applied.lock()[before].clone();
    let row = &applied.rows[0].1;
    let Some((
        _,
        crate::storage::CellUpdate::Collection {
            tombstone,
            elements,
        },
    )) = row.cells.first()
    else {
        panic!("not a collection write: {row:?}");
    };
    assert_eq!(*tombstone, Some(99_999_999_999_999));
    assert_eq!(elements[0].ts, 100_000_000_000_000);
    // List keys are timeuuids with the write time (append) or the mirrored time (prepend).
    let before = t.db.applied.lock().len();
    t.ok("UPDATE t USING TIMESTAMP 1700000000000000 SET l = l + ['q'] WHERE pk = 2");
    t.ok("UPDATE t USING TIMESTAMP 1700000000000001 SET l = ['p'] + l WHERE pk = 2");
    let applied = t.db.applied.lock()[before..].to_vec();
    let key_time = |m: &PartitionMutation| match &m.rows[0].1.cells[0].1 {
        crate::storage::CellUpdate::Collection { elements, .. } => match &elements[0].key {
            Value::Timeuuid(u) => crate::types::timeuuid::to_micros(u),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(key_time(&applied[0]), 1_700_000_000_000_000);
    let mirrored = 2 * 1_262_304_000_000_000 - 1_700_000_000_000_001;
    assert!(
        (key_time(&applied[1]) - mirrored).abs() <= 1,
        "{}",
        key_time(&applied[1])
    );
    assert_eq!(
        t.rows("SELECT l FROM t WHERE pk = 2")[0][0],
        list(&["p", "q"])
    );
}

#[test]
fn counters() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE c (pk int PRIMARY KEY, n counter, m counter)");
    t.ok("UPDATE c SET n = n + 5, m = m - 2 WHERE pk = 1");
    t.ok("UPDATE c SET n = n + 1 WHERE pk = 1");
    assert_eq!(
        t.rows("SELECT n, m FROM c WHERE pk = 1"),
        vec![vec![Some(Value::Bigint(6)), Some(Value::Bigint(-2))]]
    );
    let e = t.err("INSERT INTO c (pk, n) VALUES (2, 1)");
    assert_eq!(
        e.message,
        "INSERT statements are not allowed on counter tables, use UPDATE instead"
    );
    let e = t.err("UPDATE c SET n = 3 WHERE pk = 1");
    assert!(
        e.message
            .starts_with("Cannot set the value of counter column n"),
        "{}",
        e.message
    );
    let e = t.err("UPDATE c USING TTL 5 SET n = n + 1 WHERE pk = 1");
    assert_eq!(e.message, "Cannot provide custom TTL for counter updates");
    t.ok("BEGIN COUNTER BATCH UPDATE c SET n = n + 1 WHERE pk = 1; UPDATE c SET n = n + 1 WHERE pk = 1; APPLY BATCH");
    assert_eq!(
        t.rows("SELECT n FROM c WHERE pk = 1"),
        vec![vec![Some(Value::Bigint(8))]]
    );
    let e = t.err("BEGIN BATCH UPDATE c SET n = n + 1 WHERE pk = 1; APPLY BATCH");
    assert_eq!(
        e.message,
        "Cannot include a counter statement in a logged batch"
    );
}

#[test]
fn static_columns() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO t (pk, s) VALUES (1, 5)");
    assert_eq!(
        t.rows("SELECT * FROM t WHERE pk = 1"),
        vec![vec![int(1), None, int(5), None]]
    );
    assert!(t.rows("SELECT * FROM t WHERE pk = 1 AND ck = 1").is_empty());
    t.ok("INSERT INTO t (pk, ck, v) VALUES (1, 1, 1)");
    t.ok("INSERT INTO t (pk, ck, v) VALUES (1, 2, 2)");
    assert_eq!(
        t.rows("SELECT * FROM t WHERE pk = 1"),
        vec![
            vec![int(1), int(1), int(5), int(1)],
            vec![int(1), int(2), int(5), int(2)]
        ]
    );
    assert_eq!(
        t.rows("SELECT DISTINCT pk, s FROM t"),
        vec![vec![int(1), int(5)]]
    );
    let e = t.err("SELECT DISTINCT pk, v FROM t");
    assert!(e.message.contains("DISTINCT"), "{}", e.message);
}

// ---------------------------------------------------------------------------------------
// SELECT
// ---------------------------------------------------------------------------------------

fn select_fixture() -> TestDb {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, a int, b int, v int, PRIMARY KEY (pk, a, b))");
    t.ok("CREATE TABLE d (pk int, c int, v int, PRIMARY KEY (pk, c)) WITH CLUSTERING ORDER BY (c DESC)");
    for pk in 0..3 {
        for a in 0..3 {
            for b in 0..2 {
                t.ok(&format!(
                    "INSERT INTO t (pk, a, b, v) VALUES ({pk}, {a}, {b}, {})",
                    pk * 100 + a * 10 + b
                ));
            }
            t.ok(&format!("INSERT INTO d (pk, c, v) VALUES ({pk}, {a}, {a})"));
        }
    }
    t
}

fn ints(rows: &[Vec<Option<Value>>], col: usize) -> Vec<i32> {
    rows.iter()
        .map(|r| r[col].as_ref().and_then(Value::as_int).unwrap_or(i32::MIN))
        .collect()
}

#[test]
fn select_where_forms() {
    let mut t = select_fixture();
    assert_eq!(
        ints(&t.rows("SELECT v FROM t WHERE pk = 1 AND a = 2"), 0),
        vec![120, 121]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND a IN (2, 0) AND b = 1"),
            0
        ),
        vec![101, 121]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND a > 0 AND a <= 1"),
            0
        ),
        vec![110, 111]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND a = 1 AND b < 1"),
            0
        ),
        vec![110]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND (a, b) > (1, 0) AND (a, b) <= (2, 0)"),
            0
        ),
        vec![111, 120]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND (a, b) IN ((2, 1), (0, 0))"),
            0
        ),
        vec![100, 121]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND (a, b) = (1, 1)"),
            0
        ),
        vec![111]
    );
    let mut pks = ints(
        &t.rows("SELECT pk FROM t WHERE pk IN (2, 0) AND a = 0 AND b = 0"),
        0,
    );
    pks.sort();
    assert_eq!(pks, vec![0, 2]);
    assert_eq!(t.rows("SELECT * FROM t").len(), 18);
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 AND v > 115 ALLOW FILTERING"),
            0
        ),
        vec![120, 121]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE b = 1 AND v < 100 ALLOW FILTERING"),
            0
        ),
        vec![1, 11, 21]
    );
    let e = t.err("SELECT v FROM t WHERE pk = 1 AND b = 1");
    assert_eq!(
        e.message,
        "PRIMARY KEY column \"b\" cannot be restricted as preceding column \"a\" is not restricted"
    );
    let e = t.err("SELECT v FROM t WHERE pk = 1 AND a > 1 AND b = 1");
    assert!(e.message.contains("cannot be restricted"), "{}", e.message);
    let e = t.err("SELECT v FROM t WHERE a = 1");
    assert!(e.message.contains("ALLOW FILTERING"), "{}", e.message);
    // Token ranges.
    let all = t.rows("SELECT token(pk), pk FROM t PER PARTITION LIMIT 1");
    assert_eq!(all.len(), 3);
    let tokens: Vec<i64> = all
        .iter()
        .map(|r| r[0].as_ref().and_then(Value::as_bigint).unwrap())
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "token order");
    let mid = tokens[1];
    let r = t.rows(&format!(
        "SELECT pk FROM t WHERE token(pk) > {mid} PER PARTITION LIMIT 1"
    ));
    assert_eq!(r.len(), 1);
    let r = t.rows(&format!(
        "SELECT pk FROM t WHERE token(pk) >= {mid} AND token(pk) <= {mid}"
    ));
    assert_eq!(r.len(), 6);
    let r = t.rows("SELECT pk FROM t WHERE token(pk) = token(1)");
    assert_eq!(ints(&r, 0), vec![1; 6]);
    // Functions in WHERE on a clustering column.
    t.ok("CREATE TABLE log (s blob, t timeuuid, v int, PRIMARY KEY (s, t))");
    t.ok("INSERT INTO log (s, t, v) VALUES (0x01, minTimeuuid('2024-01-01 00:00:01+0000'), 1)");
    t.ok("INSERT INTO log (s, t, v) VALUES (0x01, maxTimeuuid('2024-01-01 00:00:02+0000'), 2)");
    let r = t.rows("SELECT v FROM log WHERE s = 0x01 AND t >= minTimeuuid('2024-01-01 00:00:01+0000') AND t < minTimeuuid('2024-01-01 00:00:02+0000')");
    assert_eq!(ints(&r, 0), vec![1]);
    let r = t.rows("SELECT v, toUnixTimestamp(t) FROM log WHERE s = 0x01");
    assert_eq!(r[1][1], Some(Value::Bigint(1_704_067_202_000)));
}

#[test]
fn order_by_limits_and_aggregates() {
    let mut t = select_fixture();
    assert_eq!(
        ints(&t.rows("SELECT c FROM d WHERE pk = 1"), 0),
        vec![2, 1, 0]
    );
    assert_eq!(
        ints(&t.rows("SELECT c FROM d WHERE pk = 1 ORDER BY c ASC"), 0),
        vec![0, 1, 2]
    );
    assert_eq!(
        ints(&t.rows("SELECT c FROM d WHERE pk = 1 AND c > 0"), 0),
        vec![2, 1]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT c FROM d WHERE pk = 1 AND c < 2 ORDER BY c ASC"),
            0
        ),
        vec![0, 1]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT v FROM t WHERE pk = 1 ORDER BY a DESC, b DESC LIMIT 3"),
            0
        ),
        vec![121, 120, 111]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT c FROM d WHERE pk IN (1, 2) ORDER BY c ASC"),
            0
        ),
        vec![0, 0, 1, 1, 2, 2]
    );
    let e = t.err("SELECT v FROM t WHERE pk = 1 ORDER BY b");
    assert_eq!(e.code, 0x2200);
    assert_eq!(t.rows("SELECT v FROM t LIMIT 4").len(), 4);
    assert_eq!(t.rows("SELECT v FROM t PER PARTITION LIMIT 2").len(), 6);
    assert_eq!(
        t.rows("SELECT v FROM t PER PARTITION LIMIT 2 LIMIT 5")
            .len(),
        5
    );
    let e = t.err("SELECT v FROM t LIMIT 0");
    assert_eq!(e.message, "LIMIT must be strictly positive");
    assert_eq!(
        t.rows("SELECT COUNT(*) FROM t"),
        vec![vec![Some(Value::Bigint(18))]]
    );
    assert_eq!(
        t.rows("SELECT count(*) FROM t WHERE pk = 9"),
        vec![vec![Some(Value::Bigint(0))]]
    );
    let r = t.ok("SELECT min(v), max(v), sum(v), avg(b), count(v) FROM t WHERE pk = 1");
    let Res::Rows { cols, rows, .. } = r else {
        panic!()
    };
    assert_eq!(cols[0].0, "system.min(v)");
    assert_eq!(
        rows,
        vec![vec![
            int(100),
            int(121),
            int(663),
            int(0),
            Some(Value::Bigint(6))
        ]]
    );
    let r = t.rows("SELECT a, count(*), max(b) FROM t WHERE pk = 1 GROUP BY pk, a");
    assert_eq!(
        r,
        vec![
            vec![int(0), Some(Value::Bigint(2)), int(1)],
            vec![int(1), Some(Value::Bigint(2)), int(1)],
            vec![int(2), Some(Value::Bigint(2)), int(1)],
        ]
    );
    let r = t.ok(
        "SELECT pk AS k, writetime(v), CAST(v AS text) FROM t WHERE pk = 0 AND a = 0 AND b = 1",
    );
    let Res::Rows { cols, rows, .. } = r else {
        panic!()
    };
    assert_eq!(
        cols.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["k", "writetime(v)", "cast(v as text)"]
    );
    assert_eq!(rows[0][2], text("1"));
    t.ok("SELECT * FROM t BYPASS CACHE USING TIMEOUT 30000ms");
}

#[test]
fn paging_returns_every_row_exactly_once() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE p (pk int, ck int, v int, PRIMARY KEY (pk, ck))");
    let ins = t
        .prepare("INSERT INTO p (pk, ck, v) VALUES (?, ?, ?)")
        .unwrap();
    for i in 0..10_000 {
        let (pk, ck) = (i / 100, i % 100);
        t.execute(
            &ins,
            vec![bv(&Value::Int(pk)), bv(&Value::Int(ck)), bv(&Value::Int(i))],
            None,
            None,
        )
        .unwrap();
    }
    let collect = |t: &mut TestDb, cql: &str, page: i32| -> (Vec<i32>, usize) {
        let id = t.prepare(cql).unwrap();
        let mut state = None;
        let mut seen = Vec::new();
        let mut pages = 0;
        loop {
            let Ok(Res::Rows { rows, paging, .. }) =
                t.execute(&id, Vec::new(), Some(page), state.clone())
            else {
                panic!("page failed")
            };
            assert!(rows.len() <= page as usize);
            pages += 1;
            seen.extend(ints(&rows, 0));
            match paging {
                Some(p) => state = Some(p),
                None => break,
            }
        }
        (seen, pages)
    };
    let (mut all, pages) = collect(&mut t, "SELECT v FROM p", 100);
    assert_eq!(all.len(), 10_000);
    assert!((100..=101).contains(&pages), "{pages}");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 10_000);
    let (limited, _) = collect(&mut t, "SELECT v FROM p LIMIT 250", 100);
    assert_eq!(limited.len(), 250);
    let (ppl, _) = collect(&mut t, "SELECT v FROM p PER PARTITION LIMIT 3", 7);
    assert_eq!(ppl.len(), 300);
    assert!(ppl.iter().all(|v| v % 100 < 3));
    let (both, _) = collect(
        &mut t,
        "SELECT v FROM p PER PARTITION LIMIT 150 LIMIT 1234",
        100,
    );
    assert_eq!(both.len(), 1234);
    let (one, _) = collect(&mut t, "SELECT v FROM p WHERE pk = 5 ORDER BY ck DESC", 30);
    assert_eq!(one, (500..600).rev().collect::<Vec<_>>());
    let (inlist, _) = collect(
        &mut t,
        "SELECT v FROM p WHERE pk IN (1, 2, 3) AND ck > 90",
        4,
    );
    assert_eq!(inlist.len(), 27);
    // Without a page size there is never a paging state.
    let Res::Rows { rows, paging, .. } = t.ok("SELECT v FROM p") else {
        panic!()
    };
    assert_eq!((rows.len(), paging), (10_000, None));
    // A garbage paging state is an error, not a crash.
    let id = t.prepare("SELECT v FROM p").unwrap();
    let e = t
        .execute(&id, Vec::new(), Some(10), Some(Bytes::from_static(b"junk")))
        .unwrap_err();
    assert_eq!(e.code, 0x000A);
}

// ---------------------------------------------------------------------------------------
// Bind metadata
// ---------------------------------------------------------------------------------------

#[test]
fn bind_metadata_of_the_golden_statements() {
    let mut t = TestDb::with_ks();
    let none: (Vec<(String, String)>, Vec<u16>, bool) = (vec![], vec![], false);
    for q in [
        "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers USING TIMEOUT 30000ms",
        "SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name FROM system.local WHERE key='local' USING TIMEOUT 30000ms",
        "SELECT keyspace_name, replication, durable_writes FROM system_schema.keyspaces USING TIMEOUT 30000ms",
        "SELECT keyspace_name, table_name, column_name, kind, position, type FROM system_schema.columns USING TIMEOUT 30000ms",
        "SELECT keyspace_name, table_name, partitioner FROM system_schema.scylla_tables USING TIMEOUT 30000ms",
        "SELECT keyspace_name, view_name, base_table_name FROM system_schema.views USING TIMEOUT 30000ms",
        "SELECT schema_version FROM system.local WHERE key='local'",
        "SELECT COUNT(*) FROM system.peers",
    ] {
        assert_eq!(t.bind_meta(q), none, "{q}");
    }
    let (vars, pk, _) = t.bind_meta("SELECT keyspace_name, type_name, field_names, field_types FROM system_schema.types where keyspace_name in ? USING TIMEOUT 30000ms");
    assert_eq!(
        vars,
        vec![("IN(keyspace_name)".into(), "list<text>".into())]
    );
    assert!(pk.is_empty());
    let (vars, ..) = t.bind_meta("SELECT keyspace_name, initial_tablets FROM system_schema.scylla_keyspaces where keyspace_name in ? USING TIMEOUT 30000ms");
    assert_eq!(
        vars,
        vec![("IN(keyspace_name)".into(), "list<text>".into())]
    );
    let (vars, pk, _) = t.bind_meta("SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps' AND time <= ? ORDER BY time DESC LIMIT 1");
    assert_eq!(vars, vec![("time".into(), "timestamp".into())]);
    assert!(pk.is_empty());
    let (vars, ..) = t.bind_meta("SELECT min(time) FROM system_distributed.cdc_generation_timestamps WHERE key='timestamps' AND time > ?");
    assert_eq!(vars, vec![("time".into(), "timestamp".into())]);
    let (vars, pk, _) = t.bind_meta(
        "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
    );
    assert_eq!(vars, vec![("time".into(), "timestamp".into())]);
    assert_eq!(pk, vec![0]);
    let (vars, pk, _) = t.bind_meta("SELECT stream_id FROM system.cdc_streams WHERE keyspace_name=? AND table_name=? AND timestamp=? AND stream_state=0");
    assert_eq!(
        vars,
        vec![
            ("keyspace_name".into(), "text".into()),
            ("table_name".into(), "text".into()),
            ("timestamp".into(), "timestamp".into())
        ]
    );
    assert_eq!(pk, vec![0, 1]);
    let (vars, pk, _) = t.bind_meta(
        "SELECT extensions FROM system_schema.tables WHERE keyspace_name=? AND table_name=?",
    );
    assert_eq!(vars.len(), 2);
    assert_eq!(pk, vec![0]);
    // A CDC-log-like table and a user table.
    t.ok("CREATE TABLE t_scylla_cdc_log (\"cdc$stream_id\" blob, \"cdc$time\" timeuuid, \"cdc$batch_seq_no\" int, v int, PRIMARY KEY (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\"))");
    let (vars, pk, _) = t.bind_meta("SELECT * FROM ks.t_scylla_cdc_log WHERE \"cdc$stream_id\" in ? AND \"cdc$time\" >= minTimeuuid(?) AND \"cdc$time\" < minTimeuuid(?) BYPASS CACHE");
    assert_eq!(vars[0], ("IN(cdc$stream_id)".into(), "list<blob>".into()));
    assert_eq!(vars[1].1, "timestamp");
    assert_eq!(vars[2].1, "timestamp");
    assert!(pk.is_empty());
    let (vars, pk, _) = t.bind_meta("SELECT * FROM \"ks\".\"t_scylla_cdc_log\" WHERE \"cdc$stream_id\" = ? AND \"cdc$time\" > ? AND \"cdc$time\" <= ?");
    assert_eq!(
        vars.iter().map(|v| v.1.as_str()).collect::<Vec<_>>(),
        ["blob", "timeuuid", "timeuuid"]
    );
    assert_eq!(pk, vec![0]);
    let (vars, ..) = t.bind_meta("SELECT * FROM ks.t_scylla_cdc_log WHERE \"cdc$stream_id\" IN (?, ?) AND \"cdc$time\" > ? AND \"cdc$time\" <= ? BYPASS CACHE");
    // The elements of an IN list are received by `value(IN(c))` (Scylla's list literal for
    // the receiver `IN(c)`), not by `c` as in Cassandra.
    assert_eq!(vars[0], ("value(IN(cdc$stream_id))".into(), "blob".into()));
    assert_eq!(vars[1], ("value(IN(cdc$stream_id))".into(), "blob".into()));
    t.ok("CREATE TYPE ut (a int, b int)");
    t.ok("CREATE TABLE t (pk int, ck int, s int static, v int, m map<int,text>, l list<text>, st set<int>, tup frozen<tuple<int, int>>, nu ut, PRIMARY KEY (pk, ck))");
    t.ok("CREATE TABLE ct (pk int, ck int, c counter, PRIMARY KEY (pk, ck))");
    t.ok(
        "CREATE TABLE mt (pk int, ck int, ck1 int, ck2 int, v int, PRIMARY KEY (pk, ck, ck1, ck2))",
    );
    let (vars, pk, _) = t.bind_meta("SELECT writetime(tup), ttl(v), token(pk), pk FROM ks.t WHERE token(pk) > ? AND token(pk) <= ? PER PARTITION LIMIT 1");
    assert_eq!(
        vars,
        vec![
            ("partition key token".into(), "bigint".into()),
            ("partition key token".into(), "bigint".into())
        ]
    );
    assert!(pk.is_empty());
    let (vars, pk, lwt) =
        t.bind_meta("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?");
    assert_eq!(
        vars,
        vec![
            ("pk".into(), "int".into()),
            ("ck".into(), "int".into()),
            ("v".into(), "int".into()),
            ("[ttl]".into(), "int".into()),
            ("[timestamp]".into(), "bigint".into())
        ]
    );
    assert_eq!((pk, lwt), (vec![0], false));
    let (vars, pk, lwt) =
        t.bind_meta("UPDATE t SET m[?] = ?, l[?] = ?, v = ? WHERE pk = :key AND ck = ? IF v = ?");
    assert_eq!(
        vars,
        vec![
            ("key(m)".into(), "int".into()),
            ("value(m)".into(), "text".into()),
            ("idx(l)".into(), "int".into()),
            ("value(l)".into(), "text".into()),
            ("v".into(), "int".into()),
            ("key".into(), "int".into()),
            ("ck".into(), "int".into()),
            ("v".into(), "int".into())
        ]
    );
    assert_eq!((pk, lwt), (vec![5], true));
    let (vars, ..) = t.bind_meta("SELECT v FROM mt WHERE pk = ? AND (ck, ck1) IN ? LIMIT ?");
    assert_eq!(
        vars[1],
        (
            "IN((ck,ck1))".into(),
            "list<frozen<tuple<int, int>>>".into()
        )
    );
    assert_eq!(vars[2], ("[limit]".into(), "int".into()));
    let (vars, ..) =
        t.bind_meta("SELECT v FROM mt WHERE pk = ? AND (ck, ck1) = (?, ?) PER PARTITION LIMIT ?");
    assert_eq!(
        vars.iter().map(|v| v.0.as_str()).collect::<Vec<_>>(),
        ["pk", "(ck,ck1)[0]", "(ck,ck1)[1]", "[per_partition_limit]"]
    );
    let (vars, ..) = t.bind_meta("SELECT v FROM mt WHERE pk = ? AND (ck, ck1) IN ((?, ?), ?)");
    assert_eq!(
        vars,
        vec![
            ("pk".into(), "int".into()),
            ("value(IN((ck,ck1)))[0]".into(), "int".into()),
            ("value(IN((ck,ck1)))[1]".into(), "int".into()),
            (
                "value(IN((ck,ck1)))".into(),
                "frozen<tuple<int, int>>".into()
            ),
        ]
    );
    let (vars, pk, _) = t.bind_meta("SELECT v FROM t WHERE pk IN ?");
    let (vars2, ..) = t.bind_meta("UPDATE ct SET c = c + ? WHERE pk = 1 AND ck = 1");
    assert_eq!(vars2, vec![("c".into(), "counter".into())]);
    assert_eq!(vars, vec![("IN(pk)".into(), "list<int>".into())]);
    assert!(pk.is_empty());
    let (_, _, lwt) =
        t.bind_meta("INSERT INTO mt (pk, ck, ck1, ck2) VALUES (1, 1, 1, 1) IF NOT EXISTS");
    assert!(lwt);
}

/// The receivers of collection-element, tuple-component, condition and CONTAINS markers,
/// named and typed as Scylla names them (cql3/lists.cc `index_spec_of` /
/// `uuid_index_spec_of`, cql3/expr/prepare_expr.cc `*_spec_of`, `component_spec_of`,
/// `get_lhs_receiver`, `get_rhs_receiver`).
#[test]
fn bind_metadata_of_collection_elements_and_conditions_follows_scylla() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b text)");
    t.ok(
        "CREATE TABLE c (pk int PRIMARY KEY, v int, l list<text>, m map<int, text>, \
         s set<int>, tup frozen<tuple<int, text>>, fu frozen<ut>, nu ut, \
         lu list<frozen<ut>>)",
    );
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    // SCYLLA_TIMEUUID_LIST_INDEX: `uuid_idx(l)` of type uuid, not timeuuid.
    let (vars, ..) = t.bind_meta("UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ? WHERE pk = ?");
    assert_eq!(
        vars,
        pairs(&[("uuid_idx(l)", "uuid"), ("value(l)", "text"), ("pk", "int")])
    );
    // Element deletion: `idx(l)`, `key(m)`, `value(s)`.
    let (vars, ..) = t.bind_meta("DELETE l[?], m[?], s[?] FROM c WHERE pk = ?");
    assert_eq!(
        vars,
        pairs(&[
            ("idx(l)", "int"),
            ("key(m)", "int"),
            ("value(s)", "int"),
            ("pk", "int")
        ])
    );
    // Collection literals: elements `value(x)`, map keys `key(m)`; tuple components `x[i]`.
    let (vars, ..) = t.bind_meta(
        "UPDATE c SET l = [?, ?], m = {?: ?}, s = {?}, tup = (?, ?), \
         fu = {a: ?, b: ?} WHERE pk = ?",
    );
    assert_eq!(
        vars,
        pairs(&[
            ("value(l)", "text"),
            ("value(l)", "text"),
            ("key(m)", "int"),
            ("value(m)", "text"),
            ("value(s)", "int"),
            ("tup[0]", "int"),
            ("tup[1]", "text"),
            ("fu.a", "int"),
            ("fu.b", "text"),
            ("pk", "int")
        ])
    );
    // A tuple literal for a UDT: components by position, `u[i]`.
    let (vars, ..) = t.bind_meta("UPDATE c SET fu = (?, ?), nu = (?, 'x') WHERE pk = ?");
    assert_eq!(
        vars,
        pairs(&[
            ("fu[0]", "int"),
            ("fu[1]", "text"),
            ("nu[0]", "int"),
            ("pk", "int")
        ])
    );
    // Conditions: `index(l)` (not `idx(l)`) and `key(m)` subscripts, `value(x)` for the
    // compared element, the bare field name for a UDT field, `IN(v)` / `value(IN(v))`.
    let (vars, _, lwt) = t.bind_meta(
        "UPDATE c SET v = 1 WHERE pk = ? IF l[?] = ? AND m[?] = ? AND fu.a = ? \
         AND v IN (?, ?)",
    );
    assert!(lwt);
    assert_eq!(
        vars,
        pairs(&[
            ("pk", "int"),
            ("index(l)", "int"),
            ("value(l)", "text"),
            ("key(m)", "int"),
            ("value(m)", "text"),
            ("a", "int"),
            ("value(IN(v))", "int"),
            ("value(IN(v))", "int")
        ])
    );
    let (vars, ..) = t.bind_meta("UPDATE c SET v = 1 WHERE pk = ? IF v IN ?");
    assert_eq!(vars, pairs(&[("pk", "int"), ("IN(v)", "list<int>")]));
    // CONTAINS / CONTAINS KEY in a WHERE clause: `value(x)` / `key(m)`.
    let (vars, ..) = t.bind_meta(
        "SELECT * FROM c WHERE l CONTAINS ? AND m CONTAINS KEY ? AND m CONTAINS ? \
         ALLOW FILTERING",
    );
    assert_eq!(
        vars,
        pairs(&[
            ("value(l)", "text"),
            ("key(m)", "int"),
            ("value(m)", "text")
        ])
    );
}

/// `SCYLLA_TIMEUUID_LIST_INDEX(?)` takes a uuid (the bytes of the element's timeuuid key) and
/// sets that element; a tuple literal is accepted for a frozen or non-frozen UDT, positionally,
/// also inside collections, as Scylla accepts it.
#[test]
fn timeuuid_list_index_takes_a_uuid_and_tuple_literals_fill_user_types() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b text)");
    t.ok(
        "CREATE TABLE c (pk int PRIMARY KEY, l list<text>, fu frozen<ut>, nu ut, \
         lu list<frozen<ut>>, mu map<int, frozen<ut>>, tu frozen<tuple<int, frozen<ut>>>)",
    );
    // Two element keys, the second one later: the list is ordered by key time.
    let early = crate::types::timeuuid::from_micros(1_000_000);
    let late = crate::types::timeuuid::from_micros(2_000_000);
    let id = t
        .prepare("UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ? WHERE pk = 1")
        .expect("prepares");
    for (key, v) in [(late, "second"), (early, "first")] {
        t.execute(
            &id,
            vec![
                BoundValue::Value(Bytes::copy_from_slice(key.as_bytes())),
                BoundValue::Value(Bytes::from(v)),
            ],
            None,
            None,
        )
        .expect("executes");
    }
    assert_eq!(
        t.rows("SELECT l FROM c WHERE pk = 1"),
        vec![vec![Some(Value::list(vec![
            Value::text("first"),
            Value::text("second")
        ]))]]
    );
    // A literal uuid works too, and replaces the element with that key.
    t.ok(&format!(
        "UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX({late})] = 'last' WHERE pk = 1"
    ));
    assert_eq!(
        t.rows("SELECT l FROM c WHERE pk = 1"),
        vec![vec![Some(Value::list(vec![
            Value::text("first"),
            Value::text("last")
        ]))]]
    );
    let e = t.err("UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX(3)] = 'x' WHERE pk = 1");
    assert!(e.message.contains("uuid_idx(l)"), "{}", e.message);

    // Tuple literals for user types, short tuples leave the last fields null.
    t.ok(
        "INSERT INTO c (pk, fu, nu, lu, mu, tu) VALUES (2, (1, 'x'), (2, 'y'), [(3, 'z'), (4)], \
         {5: (5, 'v')}, (6, (6, 'w')))",
    );
    let udt = |a: i32, b: Option<&str>| Value::udt(vec![int(a), b.and_then(text)]);
    assert_eq!(
        t.rows("SELECT fu, nu, lu, mu, tu FROM c WHERE pk = 2"),
        vec![vec![
            Some(udt(1, Some("x"))),
            Some(udt(2, Some("y"))),
            Some(Value::list(vec![udt(3, Some("z")), udt(4, None)])),
            Some(Value::map(vec![(Value::Int(5), udt(5, Some("v")))])),
            Some(Value::tuple(vec![int(6), Some(udt(6, Some("w")))])),
        ]]
    );
    t.ok("UPDATE c SET nu = (7) WHERE pk = 2");
    assert_eq!(
        t.rows("SELECT nu FROM c WHERE pk = 2"),
        vec![vec![Some(udt(7, None))]]
    );
    // Field types are checked positionally; a longer tuple is refused.
    let e = t.err("UPDATE c SET fu = ('x', 1) WHERE pk = 2");
    assert_eq!(e.code, 0x2200);
    assert!(e.message.contains("fu[0]"), "{}", e.message);
    let e = t.err("UPDATE c SET fu = (1, 'x', 2) WHERE pk = 2");
    assert!(
        e.message
            .starts_with("Invalid tuple literal for fu: too many elements"),
        "{}",
        e.message
    );
    // A tuple literal is still no value for a non-tuple, non-UDT column.
    let e = t.err("UPDATE c SET l = (1, 2) WHERE pk = 2");
    assert!(
        e.message.starts_with("Invalid tuple type literal for l"),
        "{}",
        e.message
    );
}

// ---------------------------------------------------------------------------------------
// LWT, batches, availability
// ---------------------------------------------------------------------------------------

#[test]
fn lightweight_transactions() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TYPE ut (a int, b int)");
    t.ok("CREATE TABLE t (pk int, ck int, v int, m map<int, int>, u ut, PRIMARY KEY (pk, ck))");
    let r = t.rows("INSERT INTO t (pk, ck, v) VALUES (1, 1, 10) IF NOT EXISTS");
    assert_eq!(r[0][0], Some(Value::Boolean(true)));
    let Res::Rows { cols, rows, .. } =
        t.ok("INSERT INTO t (pk, ck, v) VALUES (1, 1, 20) IF NOT EXISTS")
    else {
        panic!()
    };
    assert_eq!(cols[0].0, "[applied]");
    assert_eq!(rows[0][0], Some(Value::Boolean(false)));
    let v = cols.iter().position(|c| c.0 == "v").unwrap();
    assert_eq!(rows[0][v], int(10));
    assert_eq!(
        t.rows("SELECT v FROM t WHERE pk = 1 AND ck = 1"),
        vec![vec![int(10)]]
    );
    let Res::Rows { cols, rows, .. } = t.ok("UPDATE t SET v = 11 WHERE pk = 1 AND ck = 1 IF v = 5")
    else {
        panic!()
    };
    assert_eq!(
        cols.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["[applied]", "v"]
    );
    assert_eq!(rows[0], vec![Some(Value::Boolean(false)), int(10)]);
    assert_eq!(
        t.rows("UPDATE t SET v = 11, m = {1: 2} WHERE pk = 1 AND ck = 1 IF v = 10")[0][0],
        Some(Value::Boolean(true))
    );
    assert_eq!(
        t.rows("UPDATE t SET v = 12 WHERE pk = 1 AND ck = 1 IF v IN (1, 11) AND m[1] = 2")[0][0],
        Some(Value::Boolean(true))
    );
    assert_eq!(
        t.rows("UPDATE t SET v = 13 WHERE pk = 1 AND ck = 1 IF v > 100")[0][0],
        Some(Value::Boolean(false))
    );
    assert_eq!(
        t.rows("UPDATE t SET u.a = 1 WHERE pk = 1 AND ck = 1 IF u = null")[0][0],
        Some(Value::Boolean(true))
    );
    assert_eq!(
        t.rows("UPDATE t SET v = 14 WHERE pk = 1 AND ck = 1 IF u.a = 1")[0][0],
        Some(Value::Boolean(true))
    );
    assert_eq!(
        t.rows("UPDATE t SET v = 15 WHERE pk = 1 AND ck = 2 IF EXISTS")[0][0],
        Some(Value::Boolean(false))
    );
    assert!(t.rows("SELECT * FROM t WHERE pk = 1 AND ck = 2").is_empty());
    assert_eq!(
        t.rows("DELETE FROM t WHERE pk = 1 AND ck = 1 IF EXISTS")[0][0],
        Some(Value::Boolean(true))
    );
    assert!(t.rows("SELECT * FROM t WHERE pk = 1").is_empty());
    // Conditional batch on one partition.
    let r = t.rows("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (2, 1, 1) IF NOT EXISTS; INSERT INTO t (pk, ck, v) VALUES (2, 2, 2); APPLY BATCH");
    assert_eq!(r[0][0], Some(Value::Boolean(true)));
    assert_eq!(t.rows("SELECT * FROM t WHERE pk = 2").len(), 2);
    let e = t.err("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (3, 1, 1) IF NOT EXISTS; INSERT INTO t (pk, ck, v) VALUES (4, 2, 2); APPLY BATCH");
    assert_eq!(
        e.message,
        "BATCH with conditions cannot span multiple partitions"
    );
}

#[test]
fn batches_merge_mutations_per_partition() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, v1 int, v2 int, PRIMARY KEY (pk, ck))");
    t.ok("CREATE TABLE u (pk int PRIMARY KEY, v int)");
    let before = t.db.applied.lock().len();
    t.ok("BEGIN UNLOGGED BATCH USING TIMESTAMP 5000 \
          UPDATE t SET v1 = 1 WHERE pk = 0 AND ck = 0; UPDATE t SET v2 = 2 WHERE pk = 0 AND ck = 0; \
          UPDATE t SET v1 = 3 WHERE pk = 0 AND ck = 1; INSERT INTO u (pk, v) VALUES (1, 1); \
          DELETE FROM t WHERE pk = 9; APPLY BATCH");
    let applied = t.db.applied.lock()[before..].to_vec();
    assert_eq!(applied.len(), 3, "{applied:?}");
    let m = &applied[0];
    assert_eq!(m.rows.len(), 2);
    assert_eq!(m.rows[0].1.cells.len(), 2, "one row with both cells");
    assert!(applied.iter().all(|m| m.rows.iter().all(|r| {
        r.1.cells
            .iter()
            .all(|c| matches!(c.1, crate::storage::CellUpdate::Atomic { ts: 5000, .. }))
    })));
    assert_eq!(
        t.rows("SELECT v1, v2 FROM t WHERE pk = 0 AND ck = 0"),
        vec![vec![int(1), int(2)]]
    );
    // The BATCH opcode with a text and a prepared entry.
    let id = t
        .prepare("INSERT INTO t (pk, ck, v1) VALUES (?, ?, ?)")
        .unwrap();
    let b = BatchRequest {
        kind: frame::BatchKind::Logged,
        statements: vec![
            BatchStatement {
                query: BatchQuery::Text("INSERT INTO u (pk, v) VALUES (7, 7)".into()),
                values: vec![],
            },
            BatchStatement {
                query: BatchQuery::Prepared(id.clone()),
                values: vec![bv(&Value::Int(7)), bv(&Value::Int(1)), bv(&Value::Int(70))],
            },
        ],
        consistency: Consistency::One,
        serial_consistency: None,
        timestamp: Some(42),
    };
    assert_eq!(t.request(Request::Batch(b.clone())), Ok(Res::Void));
    assert_eq!(
        t.rows("SELECT v1, writetime(v1) FROM t WHERE pk = 7 AND ck = 1"),
        vec![vec![int(70), Some(Value::Bigint(42))]]
    );
    let mut bad = b.clone();
    bad.statements[1].query = BatchQuery::Prepared(Bytes::from_static(b"nope"));
    assert_eq!(t.request(Request::Batch(bad)).unwrap_err().code, 0x2500);
    let e = t.err("BEGIN BATCH USING TIMESTAMP 1 INSERT INTO u (pk, v) VALUES (1, 1) USING TIMESTAMP 2; APPLY BATCH");
    assert_eq!(
        e.message,
        "Timestamp must be set either on BATCH or individual statements"
    );
}

#[test]
fn unavailable_when_too_few_replicas_are_up() {
    let mut t = TestDb::new();
    // system_distributed is RF 3: QUORUM needs 2 replicas, a one-node cluster has 1.
    let mut p = params(Vec::new(), None, None);
    p.consistency = Consistency::Quorum;
    let e = t
        .query_with("SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'", p.clone())
        .unwrap_err();
    assert_eq!(e.code, 0x1000);
    assert_eq!(
        e.message,
        "Cannot achieve consistency level for cl QUORUM. Requires 2, alive 1"
    );
    assert_eq!(&e.body[..], &[0, 4, 0, 0, 0, 2, 0, 0, 0, 1]);
    assert!(
        t.query(
            "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'"
        )
        .is_ok()
    );
    // Three nodes, RF 3, two down.
    let mut t = TestDb::with_nodes(3);
    t.ok("CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
    t.ok("CREATE TABLE k3.t (pk int PRIMARY KEY, v int)");
    assert!(
        t.query_with("INSERT INTO k3.t (pk, v) VALUES (1, 1)", p.clone())
            .is_ok()
    );
    t.topology.nodes[1].up = false;
    t.topology.nodes[2].up = false;
    let e = t
        .query_with("INSERT INTO k3.t (pk, v) VALUES (1, 1)", p.clone())
        .unwrap_err();
    assert_eq!(e.code, 0x1000);
    let e = t.query_with("SELECT * FROM k3.t", p.clone()).unwrap_err();
    assert_eq!(e.code, 0x1000);
    assert!(t.query("SELECT * FROM k3.t").is_ok());
}

#[test]
fn system_local_is_virtual_and_reports_the_schema_version() {
    let mut t = TestDb::with_nodes(2);
    let Res::Rows { cols, rows, .. } =
        t.ok("SELECT schema_version FROM system.local WHERE key='local'")
    else {
        panic!()
    };
    assert_eq!(cols, vec![("schema_version".to_string(), CqlType::Uuid)]);
    assert_eq!(rows, vec![vec![Some(Value::Uuid(t.db.schema().version))]]);
    let peers = t.rows("SELECT peer FROM system.peers");
    assert_eq!(peers.len(), 1);
    let e = t.err("INSERT INTO system.local (key) VALUES ('x')");
    assert_eq!(e.code, 0x2200);
}

/// Throughput of a full scan and of prepared inserts through `handle_request` (server side
/// only). Run with `cargo test --release -p scylla-emulator --lib throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE p (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
    let ins = t
        .prepare("INSERT INTO p (pk, ck, v) VALUES (?, ?, ?)")
        .unwrap();
    let n = 1_000_000;
    let start = std::time::Instant::now();
    let v = bv(&Value::text("some value"));
    for i in 0..n {
        let values = vec![
            bv(&Value::Int(i / 100)),
            bv(&Value::Int(i % 100)),
            v.clone(),
        ];
        let mut out = BytesMut::new();
        t.db.handle_request(
            &t.topology,
            &mut t.conn,
            1,
            Request::Execute {
                id: ins.clone(),
                params: params(values, None, None),
            },
            &mut out,
        );
    }
    let el = start.elapsed();
    println!(
        "prepared inserts: {:.0} writes/s",
        n as f64 / el.as_secs_f64()
    );
    let sel = t.prepare("SELECT * FROM p").unwrap();
    let start = std::time::Instant::now();
    let mut state = None;
    let mut rows = 0usize;
    loop {
        let mut out = BytesMut::new();
        t.db.handle_request(
            &t.topology,
            &mut t.conn,
            1,
            Request::Execute {
                id: sel.clone(),
                params: params(vec![], Some(5000), state.clone()),
            },
            &mut out,
        );
        let Ok(Res::Rows {
            rows: r, paging, ..
        }) = decode(&out)
        else {
            panic!()
        };
        rows += r.len();
        match paging {
            Some(p) => state = Some(p),
            None => break,
        }
    }
    let el = start.elapsed();
    assert_eq!(rows, n as usize);
    println!(
        "full scan: {:.0} rows/s (including the test's own decoding)",
        rows as f64 / el.as_secs_f64()
    );
}

#[test]
fn contains_filters_named_values_and_unset_keys() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, s set<int>, m map<text, int>)");
    t.ok("INSERT INTO t (pk, s, m) VALUES (1, {1, 2}, {'a': 10})");
    t.ok("INSERT INTO t (pk, s, m) VALUES (2, {3}, {'b': 20})");
    assert_eq!(
        ints(
            &t.rows("SELECT pk FROM t WHERE s CONTAINS 3 ALLOW FILTERING"),
            0
        ),
        vec![2]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT pk FROM t WHERE m CONTAINS KEY 'a' ALLOW FILTERING"),
            0
        ),
        vec![1]
    );
    assert_eq!(
        ints(
            &t.rows("SELECT pk FROM t WHERE m['b'] = 20 ALLOW FILTERING"),
            0
        ),
        vec![2]
    );
    let e = t.err("SELECT pk FROM t WHERE s CONTAINS 3");
    assert!(e.message.contains("ALLOW FILTERING"), "{}", e.message);
    // Values sent with names (flag 0x40) are matched to the markers by name.
    let mut p = params(vec![bv(&Value::Int(5)), bv(&Value::Int(9))], None, None);
    p.names = Some(vec!["v".into(), "k".into()]);
    t.ok("CREATE TABLE n (pk int PRIMARY KEY, v int)");
    t.query_with("INSERT INTO n (pk, v) VALUES (:k, :v)", p)
        .unwrap();
    assert_eq!(t.rows("SELECT pk, v FROM n"), vec![vec![int(9), int(5)]]);
    // An unset partition key is an error.
    let e = t
        .query_with(
            "SELECT * FROM n WHERE pk = ?",
            params(vec![BoundValue::Unset], None, None),
        )
        .unwrap_err();
    assert_eq!(e.code, 0x2200);
    assert!(e.message.contains("unset"), "{}", e.message);
    // A DDL statement answers SchemaChange and reports it for the event.
    let mut out = BytesMut::new();
    let outcome = t.db.handle_request(
        &t.topology,
        &mut t.conn,
        1,
        Request::Query {
            query: "CREATE TABLE z (pk int PRIMARY KEY)".into(),
            params: params(vec![], None, None),
        },
        &mut out,
    );
    assert_eq!(outcome.schema_changes.len(), 1);
    assert_eq!(decode(&out), Ok(Res::SchemaChange));
}

/// The Java driver 4.x refreshes one peer with `SELECT * FROM system.peers WHERE peer =
/// :address`, its value sent by name in an unprepared QUERY (flag 0x40).
#[test]
fn a_peer_is_selected_by_a_named_value() {
    let mut t = TestDb::with_nodes(3);
    let ip = |i: u8| Value::Inet(IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)));
    let mut p = params(vec![bv(&ip(3))], None, None);
    p.names = Some(vec!["address".into()]);
    let Ok(Res::Rows { rows, cols, .. }) =
        t.query_with("SELECT * FROM system.peers WHERE peer = :address", p)
    else {
        panic!("rows expected");
    };
    assert_eq!(rows.len(), 1);
    assert_eq!(cols.first().map(|(name, _)| name.as_str()), Some("peer"));
    assert_eq!(rows[0][0], Some(ip(3)));
    // The coordinator is no peer of itself.
    let mut p = params(vec![bv(&ip(1))], None, None);
    p.names = Some(vec!["address".into()]);
    let Ok(Res::Rows { rows, .. }) =
        t.query_with("SELECT * FROM system.peers WHERE peer = :address", p)
    else {
        panic!("rows expected");
    };
    assert!(rows.is_empty());
}
#[path = "select_tests.rs"]
mod select_tests;

#[path = "json_statements.rs"]
mod json_statements;

/// Which SELECTs an index serves without ALLOW FILTERING, as Scylla's
/// `statement_restrictions` decides (`need_filtering`, `index_supports_some_column`,
/// `process_partition_key_restrictions`; the examples of its comments), and which still
/// need it or are refused.
#[test]
fn indexes_decide_which_queries_need_filtering() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (a int, b int, c1 int, c2 int, st int STATIC, v int, w int, \
         s set<int>, m map<int, int>, PRIMARY KEY ((a, b), c1, c2))",
    );
    t.ok(
        "INSERT INTO t (a, b, c1, c2, st, v, w, s, m) VALUES (1, 1, 1, 1, 1, 1, 1, {1, 2}, {1: 1})",
    );
    for target in ["v", "c2", "b", "st", "s", "keys(m)", "entries(m)"] {
        t.ok(&format!("CREATE INDEX ON t ({target})"));
    }
    t.ok("CREATE INDEX loc ON t ((a, b), w)");
    let served = [
        "SELECT * FROM t WHERE v = 1",
        "SELECT * FROM t WHERE a = 1 AND b = 1 AND v = 1",
        "SELECT * FROM t WHERE a = 1 AND b = 1 AND c1 = 1 AND v = 1",
        "SELECT * FROM t WHERE token(a, b) > 0 AND v = 1",
        "SELECT * FROM t WHERE c2 = 1",
        "SELECT * FROM t WHERE b = 1",
        "SELECT * FROM t WHERE st = 1",
        "SELECT * FROM t WHERE s CONTAINS 1",
        "SELECT * FROM t WHERE s CONTAINS 1 AND s CONTAINS 2",
        "SELECT * FROM t WHERE m CONTAINS KEY 1",
        "SELECT * FROM t WHERE m[1] = 1",
        "SELECT * FROM t WHERE a = 1 AND b = 1 AND w = 1",
    ];
    for q in served {
        assert_eq!(t.rows(q).len(), 1, "{q}");
    }
    let filtering = [
        // Two non-key columns; the local index needs its whole partition key.
        "SELECT * FROM t WHERE v = 1 AND w = 1",
        "SELECT * FROM t WHERE w = 1",
        // The indexed column with a clustering column but no partition key.
        "SELECT * FROM t WHERE v = 1 AND c1 = 1",
        // A slice, or CONTAINS on a values index that does not exist.
        "SELECT * FROM t WHERE v > 1",
        "SELECT * FROM t WHERE m CONTAINS 1",
        // Part of the partition key with another restriction.
        "SELECT * FROM t WHERE b = 1 AND v = 1",
        // IN on the partition key keeps a regular index from being used.
        "SELECT * FROM t WHERE a = 1 AND b IN (1, 2) AND v = 1",
    ];
    for q in filtering {
        let e = t.err(q);
        assert!(
            e.message
                .starts_with("Cannot execute this query as it might involve data filtering"),
            "{q}: {}",
            e.message
        );
        // ALLOW FILTERING answers it.
        assert!(t.query(&format!("{q} ALLOW FILTERING")).is_ok(), "{q}");
    }
    // Errors of planning come first.
    assert_eq!(
        t.err("SELECT * FROM t WHERE nosuch = 1 AND v = 1").message,
        "Undefined column name nosuch"
    );
    // Without the indexes, every served query needs filtering.
    for name in [
        "t_v_idx",
        "t_c2_idx",
        "t_b_idx",
        "t_st_idx",
        "t_s_idx",
        "t_m_idx",
        "t_m_idx_1",
        "loc",
    ] {
        t.ok(&format!("DROP INDEX {name}"));
    }
    for q in served {
        assert!(t.query(q).is_err(), "{q}");
    }
}
