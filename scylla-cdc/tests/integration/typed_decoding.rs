//! Typed decoding end to end: a table with a column of every CQL type the cluster has in a
//! CDC log (frozen and non-frozen collections, a UDT, a tuple), written with INSERT and
//! UPDATE, read by a `CDCLogReader` whose consumer decodes each row into
//! `#[derive(Deserialize)]` structs; and a counter (no CDC on counter tables: read with an
//! ordinary SELECT and decoded with `decode::from_columns`).
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set. The embedded cluster uses the loopback range 127.0.91.*.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, Utc};
use scylla::value::CqlValue;
use scylla_cdc::decode::{DecodeError, Deletions, ListValues, from_columns};
use scylla_cdc::{CDCRow, Consumer, ConsumerFactory, OperationType};
use scylla_emulator::EmbeddedCluster;
use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;
use uuid::Uuid;

use crate::support::{cluster_and_keyspace, drop_keyspace, reader_of, wait_for};

/// `CREATE TYPE addr (street text, number int)`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
struct Addr {
    street: Option<String>,
    number: Option<i32>,
}

/// A `duration`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
struct CqlDuration {
    months: i32,
    days: i32,
    nanoseconds: i64,
}

/// Every column of `t`, each into its most natural Rust type.
#[derive(Debug, Clone, Deserialize, Serialize)]
struct Row {
    pk: i32,
    ck: i64,
    a: Option<String>,
    tx: Option<String>,
    vc: Option<String>,
    bi: Option<i64>,
    bl: Option<ByteBuf>,
    bo: Option<bool>,
    d: Option<NaiveDate>,
    dc: Option<String>,
    db: Option<f64>,
    du: Option<CqlDuration>,
    f: Option<f32>,
    i: Option<IpAddr>,
    i6: Option<Ipv6Addr>,
    n: Option<i32>,
    si: Option<i16>,
    ti: Option<i8>,
    tm: Option<NaiveTime>,
    ts: Option<DateTime<Utc>>,
    tu: Option<Uuid>,
    uu: Option<Uuid>,
    vi: Option<String>,
    vs: Option<i64>,
    /// Non-frozen `list<text>`: `map<timeuuid, text>` in the log, in list order.
    l: Option<Vec<(Uuid, String)>>,
    fl: Option<Vec<i32>>,
    st: Option<BTreeSet<i32>>,
    fst: Option<HashSet<String>>,
    m: Option<BTreeMap<i32, String>>,
    fm: Option<HashMap<String, i32>>,
    u: Option<Addr>,
    fu: Option<Addr>,
    tup: Option<(i32, String, bool)>,
    ml: Option<BTreeMap<i32, Vec<String>>>,
}

/// Other Rust types the same columns decode into.
#[derive(Debug, Clone, Deserialize)]
struct Alternative {
    pk: u8,
    ck: i128,
    bl: Option<Vec<u8>>,
    d: Option<i32>,
    du: Option<(i32, i32, i64)>,
    i: Option<String>,
    tm: Option<i64>,
    ts: Option<i64>,
    tu: Option<String>,
    vi: Option<i128>,
    dc: Option<f64>,
    l: Option<ListValues<String>>,
    fl: Option<ListValues<i32>>,
    m: Option<Vec<(i64, String)>>,
    u: Option<HashMap<String, Option<CqlText>>>,
    tup: Option<(u8, Option<String>, Option<bool>)>,
}

/// A UDT field as text (for the `HashMap` form of a UDT whose fields are of mixed types).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum CqlText {
    Int(i64),
    Text(String),
}

/// A struct that wants `n`, which most rows do not set.
#[derive(Debug, Deserialize)]
#[allow(dead_code)]
struct NeedsN {
    pk: i32,
    n: i32,
}

/// What the consumer saw of one row.
#[derive(Debug, Clone)]
struct Decoded {
    op: OperationType,
    row: Row,
    alt: Alternative,
    json: serde_json::Value,
    needs_n: Result<(), String>,
    deletions: Deletions,
    removed_from_st: Option<BTreeSet<i32>>,
    /// UDT field indexes.
    removed_from_u: Option<Vec<i16>>,
}

#[derive(Clone, Default)]
struct Decoder(Arc<Mutex<Vec<Decoded>>>);

#[async_trait]
impl Consumer for Decoder {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let typed: Row = row.decode()?;
        let alt: Alternative = row.decode()?;
        let json = serde_json::to_value(&typed)?;
        let needs_n = row.decode::<NeedsN>().map(|_| ()).map_err(|e| {
            assert!(matches!(e, DecodeError::Null { .. }), "{e:?}");
            e.to_string()
        });
        let deletions = row.deletions()?;
        let removed_from_st = deletions.elements_as::<BTreeSet<i32>>("st")?;
        let removed_from_u = deletions.elements_as::<Vec<i16>>("u")?;
        self.0.lock().unwrap().push(Decoded {
            op: row.operation,
            row: typed,
            alt,
            json,
            needs_n,
            deletions,
            removed_from_st,
            removed_from_u,
        });
        Ok(())
    }
}

#[async_trait]
impl ConsumerFactory for Decoder {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(self.clone())
    }
}

const TU: &str = "8e7f4c0a-0000-1000-8000-000000000001";
const UU: &str = "11111111-2222-3333-4444-555555555555";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cql_type_decodes_into_a_struct() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(
        EmbeddedCluster::builder()
            .nodes(1)
            .address(Ipv4Addr::new(127, 0, 91, 1)),
    )
    .await?;
    let ddl = [
        "CREATE TYPE {ks}.addr (street text, number int)",
        "CREATE TABLE {ks}.t (pk int, ck bigint, a ascii, tx text, vc varchar, bi bigint, \
         bl blob, bo boolean, d date, dc decimal, db double, du duration, f float, i inet, \
         i6 inet, n int, si smallint, ti tinyint, tm time, ts timestamp, tu timeuuid, uu uuid, \
         vi varint, vs varint, l list<text>, fl frozen<list<int>>, st set<int>, \
         fst frozen<set<text>>, m map<int, text>, fm frozen<map<text, int>>, u addr, \
         fu frozen<addr>, tup tuple<int, text, boolean>, ml map<int, frozen<list<text>>>, \
         PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
        // CDC cannot be enabled on a counter table: it is read with a plain SELECT.
        "CREATE TABLE {ks}.c (pk int PRIMARY KEY, hits counter)",
    ];
    for s in ddl {
        session.query_unpaged(s.replace("{ks}", &ks), ()).await?;
    }

    let start = Utc::now() - TimeDelta::seconds(1);
    let statements = [
        // pk 1: every scalar, frozen collections, a frozen UDT and a tuple.
        "INSERT INTO {ks}.t (pk, ck, a, tx, vc, bi, bl, bo, d, dc, db, du, f, i, i6, n, si, \
         ti, tm, ts, tu, uu, vi, vs, fl, fst, fm, fu, tup) VALUES (1, 10000000000, 'asc', \
         'héllo', 'vc', -9000000000, 0xcafe, true, '2024-02-29', 12.345, 2.5, 1y2mo3d4h5m6s, \
         1.5, '10.1.2.3', '::1', 42, -7, 8, '01:02:03.000000005', 1700000000123, {TU}, {UU}, \
         123456789012345678901234567890, -5, [3, 1, 2], {'x', 'y'}, {'k': 7}, \
         {street: 'Elm', number: 12}, (4, 'y', false))",
        // pk 2: non-frozen collections and a non-frozen UDT field, added to.
        "UPDATE {ks}.t SET l = l + ['x', 'y'], st = st + {1, 2}, m = m + {1: 'a', 2: 'b'}, \
         u.street = 'Main', ml = ml + {1: ['p', 'q']} WHERE pk = 2 AND ck = 2",
        // pk 3: deletions: elements, a column set to null.
        "UPDATE {ks}.t SET st = st - {5}, m = m - {9}, n = null, u.number = null \
         WHERE pk = 3 AND ck = 3",
        // pk 4: overwrites: a list and a whole UDT.
        "UPDATE {ks}.t SET l = ['z'], u = {street: 'Oak', number: 5}, n = 4 \
         WHERE pk = 4 AND ck = 4",
        "UPDATE {ks}.c SET hits = hits + 5 WHERE pk = 1",
    ];
    for s in statements {
        let s = s
            .replace("{ks}", &ks)
            .replace("{TU}", TU)
            .replace("{UU}", UU);
        session.query_unpaged(s, ()).await?;
    }

    let decoded = Decoder::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", decoded.clone())
        .start_timestamp(start)
        .build()
        .await?;
    let handle = tokio::spawn(handle);
    wait_for(Duration::from_secs(30), "the 4 log rows", || async {
        decoded.0.lock().unwrap().len() >= 4 || handle.is_finished()
    })
    .await;
    reader.stop();
    handle.await??;
    let mut rows = decoded.0.lock().unwrap().clone();
    rows.sort_by_key(|d| d.row.pk);
    assert_eq!(
        rows.iter().map(|d| d.row.pk).collect::<Vec<_>>(),
        vec![1, 2, 3, 4],
        "{rows:#?}"
    );

    // pk 1: every scalar.
    let d = &rows[0];
    let r = &d.row;
    assert_eq!(d.op, OperationType::RowInsert);
    assert_eq!(r.ck, 10_000_000_000);
    assert_eq!(r.a.as_deref(), Some("asc"));
    assert_eq!(r.tx.as_deref(), Some("héllo"));
    assert_eq!(r.vc.as_deref(), Some("vc"));
    assert_eq!(r.bi, Some(-9_000_000_000));
    assert_eq!(
        r.bl.as_deref().map(|b| b.as_slice()),
        Some(&[0xca, 0xfe][..])
    );
    assert_eq!(r.bo, Some(true));
    assert_eq!(r.d, NaiveDate::from_ymd_opt(2024, 2, 29));
    assert_eq!(r.dc.as_deref(), Some("12.345"));
    assert_eq!(r.db, Some(2.5));
    assert_eq!(
        r.du,
        Some(CqlDuration {
            months: 14,
            days: 3,
            nanoseconds: (4 * 3600 + 5 * 60 + 6) * 1_000_000_000
        })
    );
    assert_eq!(r.f, Some(1.5));
    assert_eq!(r.i, Some(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))));
    assert_eq!(r.i6, Some(Ipv6Addr::LOCALHOST));
    assert_eq!(r.n, Some(42));
    assert_eq!(r.si, Some(-7));
    assert_eq!(r.ti, Some(8));
    assert_eq!(r.tm, NaiveTime::from_hms_nano_opt(1, 2, 3, 5));
    assert_eq!(r.ts.map(|t| t.timestamp_millis()), Some(1_700_000_000_123));
    assert_eq!(r.tu, Some(Uuid::parse_str(TU)?));
    assert_eq!(r.uu, Some(Uuid::parse_str(UU)?));
    assert_eq!(r.vi.as_deref(), Some("123456789012345678901234567890"));
    assert_eq!(r.vs, Some(-5));
    assert_eq!(r.fl, Some(vec![3, 1, 2]));
    assert_eq!(r.fst, Some(HashSet::from(["x".to_owned(), "y".to_owned()])));
    assert_eq!(r.fm, Some(HashMap::from([("k".to_owned(), 7)])));
    assert_eq!(
        r.fu,
        Some(Addr {
            street: Some("Elm".into()),
            number: Some(12)
        })
    );
    assert_eq!(r.tup, Some((4, "y".to_owned(), false)));
    assert!(r.l.is_none() && r.st.is_none() && r.m.is_none() && r.u.is_none());
    assert!(d.needs_n.is_ok());
    // The same row, other Rust types.
    let a = &d.alt;
    assert_eq!((a.pk, a.ck), (1, 10_000_000_000));
    assert_eq!(a.bl, Some(vec![0xca, 0xfe]));
    assert_eq!(a.d, Some(19_782));
    assert_eq!(a.du, Some((14, 3, (4 * 3600 + 5 * 60 + 6) * 1_000_000_000)));
    assert_eq!(a.i.as_deref(), Some("10.1.2.3"));
    assert_eq!(a.tm, Some(3_723_000_000_005));
    assert_eq!(a.ts, Some(1_700_000_000_123));
    assert_eq!(a.tu.as_deref(), Some(TU));
    assert_eq!(a.vi, Some(123_456_789_012_345_678_901_234_567_890));
    assert_eq!(a.dc, Some(12.345));
    assert_eq!(a.fl.as_ref().map(|l| l.0.clone()), Some(vec![3, 1, 2]));
    assert_eq!(a.tup, Some((4, Some("y".to_owned()), Some(false))));
    // And as JSON, through the struct's `Serialize`.
    assert_eq!(d.json["ts"], "2023-11-14T22:13:20.123Z");
    assert_eq!(
        d.json["fu"],
        serde_json::json!({"street": "Elm", "number": 12})
    );
    assert_eq!(d.json["tx"], "héllo");

    // pk 2: what the change added to non-frozen collections.
    let d = &rows[1];
    let r = &d.row;
    assert_eq!(d.op, OperationType::RowUpdate);
    let l = r.l.as_ref().expect("l");
    assert_eq!(
        l.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>(),
        vec!["x", "y"]
    );
    assert!(l.iter().all(|(k, _)| k.get_version_num() == 1), "{l:?}");
    assert_eq!(
        d.alt.l.as_ref().map(|l| l.0.clone()),
        Some(vec!["x".to_owned(), "y".to_owned()])
    );
    assert_eq!(r.st, Some(BTreeSet::from([1, 2])));
    assert_eq!(
        r.m,
        Some(BTreeMap::from([(1, "a".to_owned()), (2, "b".to_owned())]))
    );
    assert_eq!(
        d.alt.m,
        Some(vec![(1, "a".to_owned()), (2, "b".to_owned())])
    );
    // A non-frozen UDT: the fields the change did not set are null.
    assert_eq!(
        r.u,
        Some(Addr {
            street: Some("Main".into()),
            number: None
        })
    );
    assert_eq!(
        d.alt.u,
        Some(HashMap::from([
            ("street".to_owned(), Some(CqlText::Text("Main".into()))),
            ("number".to_owned(), None)
        ]))
    );
    assert_eq!(
        r.ml,
        Some(BTreeMap::from([(1, vec!["p".to_owned(), "q".to_owned()])]))
    );
    assert!(r.n.is_none() && r.a.is_none() && r.tup.is_none());
    assert!(d.deletions.is_empty());
    // A field that is not an `Option`, for a column the row does not set.
    let e = d.needs_n.as_ref().unwrap_err();
    assert!(
        e.contains("`n`") && e.contains("int") && e.contains("i32"),
        "{e}"
    );

    // pk 3: deletions are beside the decoded value.
    let d = &rows[2];
    assert!(d.row.n.is_none() && d.row.st.is_none() && d.row.m.is_none());
    assert_eq!(d.deletions.columns, vec!["n"]);
    assert!(d.deletions.is_deleted("n"));
    assert_eq!(d.removed_from_st, Some(BTreeSet::from([5])));
    // A UDT field set to null: its index (1, `number`), and a UDT value with no field set.
    assert_eq!(d.removed_from_u, Some(vec![1]));
    assert_eq!(
        d.row.u,
        Some(Addr {
            street: None,
            number: None
        })
    );
    assert_eq!(
        d.deletions.elements,
        BTreeMap::from([
            ("m".to_owned(), CqlValue::Set(vec![CqlValue::Int(9)])),
            ("st".to_owned(), CqlValue::Set(vec![CqlValue::Int(5)])),
            ("u".to_owned(), CqlValue::Set(vec![CqlValue::SmallInt(1)])),
        ])
    );

    // pk 4: overwrites set the value and the deletion flag together.
    let d = &rows[3];
    assert_eq!(
        d.row
            .l
            .as_ref()
            .map(|l| l.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()),
        Some(vec!["z".to_owned()])
    );
    assert_eq!(
        d.row.u,
        Some(Addr {
            street: Some("Oak".into()),
            number: Some(5)
        })
    );
    assert_eq!(d.row.n, Some(4));
    assert_eq!(d.deletions.columns, vec!["l", "u"]);
    assert!(d.needs_n.is_ok());

    // A counter, from an ordinary query's rows.
    #[derive(Deserialize, Debug, PartialEq)]
    struct Hits {
        pk: i32,
        hits: u64,
    }
    let result = session
        .query_unpaged(format!("SELECT pk, hits FROM {ks}.c WHERE pk = 1"), ())
        .await?
        .into_rows_result()?;
    let specs = result.column_specs();
    let mut decoded_hits = Vec::new();
    for row in result.rows::<scylla::value::Row>()? {
        let row = row?;
        let hits: Hits = from_columns(
            specs
                .iter()
                .zip(&row.columns)
                .map(|(spec, value)| (spec.name(), spec.typ(), value.as_ref())),
        )?;
        decoded_hits.push(hits);
    }
    assert_eq!(decoded_hits, vec![Hits { pk: 1, hits: 5 }]);

    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
