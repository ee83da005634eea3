//! The real `scylla` driver against a cluster: writes and reads of every CQL type (prepared
//! and unprepared), paging, batches, LWT, TTL, last-write-wins, deletes and the errors the
//! driver sees.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set (each in a keyspace of its own, dropped at the end).

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use scylla::errors::DbError;
use scylla::statement::batch::{Batch, BatchType};
use scylla::value::{CqlTimeuuid, CqlValue};

use crate::support::{Setup, db_error, rows, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_and_unprepared_round_trips_of_every_type() {
    let setup = Setup::start(1).await;
    let session = &setup.session;
    run(session, "CREATE TYPE ut (a int, b text)").await;
    run(
        session,
        "CREATE TABLE t (pk int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean, d date, \
         de decimal, db double, du duration, f float, i inet, s smallint, tx text, ti time, \
         ts timestamp, tu timeuuid, tn tinyint, u uuid, vi varint, l list<int>, st set<text>, \
         m map<text, int>, fm frozen<map<int, frozen<list<text>>>>, tup tuple<int, text>, \
         fu frozen<ut>, nu ut)",
    )
    .await;
    run(
        session,
        "INSERT INTO t (pk, a, b, bl, bo, d, de, db, du, f, i, s, tx, ti, ts, tu, tn, u, vi, l, st, m, fm, tup, fu, nu) \
         VALUES (1, 'a', 2, 0x03, true, '2024-01-02', 1.5, 2.5, 1d, 3.5, '127.0.0.1', 4, 'text', '01:02:03', \
         '2024-01-02 03:04:05+0000', now(), 5, uuid(), 123456789012345678901234567890, [1, 2], {'x'}, \
         {'k': 1}, {1: ['a']}, (1, 'b'), {a: 1, b: 'c'}, {a: 2})",
    )
    .await;
    let first = rows(session, "SELECT * FROM t WHERE pk = 1").await;
    assert_eq!(first.len(), 1);
    let row = &first[0];
    assert!(row.columns.iter().all(Option::is_some), "{row:?}");
    // Write the same values back through a prepared statement, as the driver encodes them.
    let cols: Vec<String> = session
        .query_unpaged("SELECT * FROM t WHERE pk = 1", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .column_specs()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let markers = vec!["?"; cols.len()].join(", ");
    let insert = session
        .prepare(format!(
            "INSERT INTO t ({}) VALUES ({markers})",
            cols.join(", ")
        ))
        .await
        .expect("prepare");
    let mut values: Vec<Option<CqlValue>> = row.columns.clone();
    values[0] = Some(CqlValue::Int(2));
    session
        .execute_unpaged(&insert, values)
        .await
        .expect("execute");
    let second = rows(session, "SELECT * FROM t WHERE pk = 2").await;
    assert_eq!(second[0].columns[1..], row.columns[1..]);
    // Typed reads.
    let (tu, l): (CqlTimeuuid, Vec<i32>) = session
        .query_unpaged("SELECT tu, l FROM t WHERE pk = 1", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!(l, vec![1, 2]);
    let _ = tu;
    // Nulls.
    let p = session
        .prepare("INSERT INTO t (pk, tx, b) VALUES (?, ?, ?)")
        .await
        .unwrap();
    session
        .execute_unpaged(&p, (3, None::<String>, Some(7i64)))
        .await
        .unwrap();
    let (tx, b): (Option<String>, Option<i64>) = session
        .query_unpaged("SELECT tx, b FROM t WHERE pk = 3", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!((tx, b), (None, Some(7)));
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_over_ten_thousand_rows() {
    let setup = Setup::start(3).await;
    let session = &setup.session;
    run(
        session,
        "CREATE TABLE p (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    let insert = session
        .prepare("INSERT INTO p (pk, ck, v) VALUES (?, ?, ?)")
        .await
        .unwrap();
    for i in 0..10_000i32 {
        session
            .execute_unpaged(&insert, (i / 100, i % 100, i))
            .await
            .unwrap();
    }
    let mut select = session.prepare("SELECT v FROM p").await.unwrap();
    select.set_page_size(100);
    let mut seen: Vec<i32> = session
        .execute_iter(select, ())
        .await
        .unwrap()
        .rows_stream::<(i32,)>()
        .unwrap()
        .map_ok(|(v,)| v)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(seen.len(), 10_000);
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 10_000);
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_lwt_ttl_timestamps_and_deletes() {
    let setup = Setup::start(1).await;
    let session = &setup.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    // A batch of a literal statement and a prepared one.
    let prepared = session
        .prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
        .await
        .unwrap();
    let mut batch = Batch::new(BatchType::Logged);
    batch.append_statement("INSERT INTO t (pk, ck, v) VALUES (1, 1, 1)");
    batch.append_statement(prepared.clone());
    session.batch(&batch, ((), (1, 2, 2))).await.expect("batch");
    assert_eq!(rows(session, "SELECT * FROM t WHERE pk = 1").await.len(), 2);
    // Last write wins.
    run(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (2, 1, 10) USING TIMESTAMP 1000",
    )
    .await;
    run(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (2, 1, 5) USING TIMESTAMP 999",
    )
    .await;
    let (v,): (i32,) = session
        .query_unpaged("SELECT v FROM t WHERE pk = 2 AND ck = 1", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .single_row()
        .unwrap();
    assert_eq!(v, 10);
    // LWT.
    let lwt = rows(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (3, 1, 1) IF NOT EXISTS",
    )
    .await;
    assert_eq!(lwt[0].columns[0], Some(CqlValue::Boolean(true)));
    let lwt = rows(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (3, 1, 2) IF NOT EXISTS",
    )
    .await;
    assert_eq!(lwt[0].columns[0], Some(CqlValue::Boolean(false)));
    // TTL.
    run(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (4, 1, 1) USING TTL 1",
    )
    .await;
    assert_eq!(rows(session, "SELECT * FROM t WHERE pk = 4").await.len(), 1);
    // Scylla counts TTLs in whole seconds: the row expires one to two seconds after the write.
    let deadline = Instant::now() + Duration::from_secs(3);
    while !rows(session, "SELECT * FROM t WHERE pk = 4")
        .await
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the TTL 1 row did not expire");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Deletes.
    run(session, "DELETE FROM t WHERE pk = 1 AND ck > 1").await;
    assert_eq!(rows(session, "SELECT * FROM t WHERE pk = 1").await.len(), 1);
    run(session, "DELETE FROM t WHERE pk = 1").await;
    assert!(
        rows(session, "SELECT * FROM t WHERE pk = 1")
            .await
            .is_empty()
    );
    // Errors reach the driver with their codes (the message texts are Scylla's own; the
    // embedded cluster's are checked where it runs).
    let (e, msg) = db_error(session, "SELECT nope FROM t").await;
    assert_eq!(e, DbError::Invalid, "{msg}");
    assert!(msg.contains("nope"), "{msg}");
    if setup.cluster.embedded().is_some() {
        assert!(msg.contains("Undefined column name nope"), "{msg}");
    }
    let (e, msg) = db_error(session, "SELEKT").await;
    assert_eq!(e, DbError::SyntaxError, "{msg}");
    setup.teardown().await;
}

/// Literals of every type are stored as the values they denote (not only consistently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn literals_read_back_as_the_values_they_denote() {
    use scylla::value::{CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlVarint};
    let setup = Setup::start(1).await;
    let session = &setup.session;
    run(session, "CREATE TYPE ut (a int, b text)").await;
    run(
        session,
        "CREATE TABLE lit (pk int PRIMARY KEY, a ascii, b bigint, bl blob, bo boolean, d date, \
         de decimal, db double, du duration, f float, i inet, s smallint, ti time, ts timestamp, \
         tn tinyint, u uuid, vi varint, st set<text>, m map<text, int>, \
         fm frozen<map<int, frozen<list<text>>>>, tup tuple<int, text>, nu ut)",
    )
    .await;
    run(
        session,
        "INSERT INTO lit (pk, a, b, bl, bo, d, de, db, du, f, i, s, ti, ts, tn, u, vi, st, m, fm, tup, nu) \
         VALUES (1, 'a', -2, 0x0aff, true, '2024-01-02', -1.50, 2.5, 1mo2d3h, 3.5, '::1', 4, \
         '01:02:03.000000004', '2024-01-02 03:04:05.678+0000', -5, 123e4567-e89b-12d3-a456-426614174000, \
         -123456789012345678901234567890, {'y', 'x'}, {'k': 1, 'a': 2}, {2: ['b', 'c'], 1: []}, \
         (1, null), {a: 7})",
    )
    .await;
    let r = rows(
        session,
        "SELECT a, b, bl, bo, d, de, db, du, f, i, s, ti, ts, tn, u, vi, st, m, fm, tup, nu FROM lit WHERE pk = 1",
    )
    .await;
    let c = &r[0].columns;
    let v = |i: usize| c[i].clone().unwrap_or_else(|| panic!("column {i} is null"));
    assert_eq!(v(0), CqlValue::Ascii("a".into()));
    assert_eq!(v(1), CqlValue::BigInt(-2));
    assert_eq!(v(2), CqlValue::Blob(vec![0x0a, 0xff]));
    assert_eq!(v(3), CqlValue::Boolean(true));
    // 2024-01-02 is day 19724 after the epoch; dates count from 2^31.
    assert_eq!(v(4), CqlValue::Date(CqlDate((1 << 31) + 19724)));
    assert_eq!(
        v(5),
        CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(
            (-150i16).to_be_bytes().to_vec(),
            2
        ))
    );
    assert_eq!(v(6), CqlValue::Double(2.5));
    assert_eq!(
        v(7),
        CqlValue::Duration(CqlDuration {
            months: 1,
            days: 2,
            nanoseconds: 3 * 3_600_000_000_000
        })
    );
    assert_eq!(v(8), CqlValue::Float(3.5));
    assert_eq!(v(9), CqlValue::Inet("::1".parse().expect("ip")));
    assert_eq!(v(10), CqlValue::SmallInt(4));
    assert_eq!(v(11), CqlValue::Time(CqlTime(3_723_000_000_004)));
    assert_eq!(v(12), CqlValue::Timestamp(CqlTimestamp(1_704_164_645_678)));
    assert_eq!(v(13), CqlValue::TinyInt(-5));
    assert_eq!(
        v(14),
        CqlValue::Uuid(
            "123e4567-e89b-12d3-a456-426614174000"
                .parse()
                .expect("uuid")
        )
    );
    let big: i128 = -123_456_789_012_345_678_901_234_567_890;
    let bytes = big.to_be_bytes();
    let first = bytes
        .iter()
        .position(|b| *b != 0xff)
        .map_or(bytes.len() - 1, |p| {
            if bytes[p] & 0x80 == 0 { p - 1 } else { p }
        });
    assert_eq!(
        v(15),
        CqlValue::Varint(CqlVarint::from_signed_bytes_be(bytes[first..].to_vec()))
    );
    assert_eq!(
        v(16),
        CqlValue::Set(vec![CqlValue::Text("x".into()), CqlValue::Text("y".into())]),
        "sets come back sorted"
    );
    assert_eq!(
        v(17),
        CqlValue::Map(vec![
            (CqlValue::Text("a".into()), CqlValue::Int(2)),
            (CqlValue::Text("k".into()), CqlValue::Int(1)),
        ]),
        "maps come back sorted by key"
    );
    assert_eq!(
        v(18),
        CqlValue::Map(vec![
            (CqlValue::Int(1), CqlValue::List(vec![])),
            (
                CqlValue::Int(2),
                CqlValue::List(vec![CqlValue::Text("b".into()), CqlValue::Text("c".into())])
            ),
        ])
    );
    assert_eq!(v(19), CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]));
    match v(20) {
        CqlValue::UserDefinedType { fields, .. } => {
            assert_eq!(fields.len(), 2);
            assert_eq!(fields[0].0, "a");
            assert_eq!(fields[0].1, Some(CqlValue::Int(7)));
            assert_eq!(fields[1].1, None);
        }
        other => panic!("nu is not a UDT: {other:?}"),
    }
    setup.teardown().await;
}
