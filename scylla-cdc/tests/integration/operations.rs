//! Every operation kind and column type reaches the consumer with the right values and flags.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set.

use std::time::Duration;

use chrono::Utc;
use scylla::value::{CqlTimestamp, CqlValue};
use scylla_cdc::OperationType;
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Change, Collected, cluster_and_keyspace, drop_keyspace, exec, reader_of, wait_for,
};

/// The rows of partition `pk`, in delivery order.
fn of_pk(changes: &[Change], pk: i32) -> Vec<Change> {
    changes
        .iter()
        .filter(|c| c.int("pk") == Some(pk))
        .cloned()
        .collect()
}

fn ops(changes: &[Change]) -> Vec<OperationType> {
    changes.iter().map(|c| c.op).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_and_type_arrives_intact() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await?;
    session
        .query_unpaged(format!("CREATE TYPE {ks}.ut (a int, b text)"), ())
        .await?;
    exec(
        &session,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, s int static, v int, \
                 l list<text>, st set<int>, m map<int, text>, u frozen<ut>, nu ut, \
                 tup tuple<int, text>, a ascii, b bigint, bl blob, bo boolean, d date, \
                 dc decimal, db double, du duration, f float, i inet, si smallint, \
                 ti tinyint, tm time, ts timestamp, tu timeuuid, uu uuid, vi varint, tx text, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    exec(
        &session,
        format!(
            "CREATE TABLE {ks}.img (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
        ),
    )
    .await?;

    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let statements = [
        // pk 1: the life of one partition.
        "INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 10)",
        "UPDATE {ks}.t SET v = null WHERE pk = 1 AND ck = 1",
        "UPDATE {ks}.t SET s = 5 WHERE pk = 1",
        "DELETE FROM {ks}.t WHERE pk = 1 AND ck = 1",
        "DELETE FROM {ks}.t WHERE pk = 1 AND ck > 0 AND ck <= 2",
        "DELETE FROM {ks}.t WHERE pk = 1 AND ck >= 1 AND ck < 2",
        "DELETE FROM {ks}.t WHERE pk = 1",
        // pk 2: TTL.
        "UPDATE {ks}.t USING TTL 1000 SET v = 3 WHERE pk = 2 AND ck = 2",
        // pk 3..5: collections and UDTs.
        "UPDATE {ks}.t SET m = m + {1: 'a'}, st = st - {3} WHERE pk = 3 AND ck = 3",
        "UPDATE {ks}.t SET l = ['x'] WHERE pk = 4 AND ck = 4",
        "UPDATE {ks}.t SET nu.a = 1 WHERE pk = 5 AND ck = 5",
        // pk 6: every scalar type, a frozen UDT and a tuple.
        "INSERT INTO {ks}.t (pk, ck, a, b, bl, bo, d, dc, db, du, f, i, si, ti, tm, ts, tu, uu, vi, tx, u, tup) \
         VALUES (6, 6, 'asc', 9000000000, 0xcafe, true, '2024-02-29', 12.345, 2.5, 1h2m, 1.5, '10.1.2.3', \
         7, 8, '01:02:03', 1700000000000, 8e7f4c0a-0000-1000-8000-000000000001, \
         11111111-2222-3333-4444-555555555555, 123456789012345678901234567890, 'text', \
         {a: 1, b: 'x'}, (4, 'y'))",
    ];
    for s in statements {
        session.query_unpaged(s.replace("{ks}", &ks), ()).await?;
    }
    exec(
        &session,
        format!("INSERT INTO {ks}.img (pk, ck, v) VALUES (1, 1, 1)"),
    )
    .await?;
    exec(
        &session,
        format!("UPDATE {ks}.img SET v = 2 WHERE pk = 1 AND ck = 1"),
    )
    .await?;

    let collected = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        .build()
        .await?;
    let images = Collected::default();
    let (mut img_reader, img_handle) = reader_of(&session, &ks, "img", images.clone())
        .start_timestamp(start)
        .build()
        .await?;
    // 1 + 1 + 1 + 1 + 2 + 2 + 1 (pk 1), 1, 1, 1, 1, 1 = 14 rows; 5 in img.
    wait_for(Duration::from_secs(30), "all log rows", || async {
        collected.len() >= 14 && images.len() >= 5
    })
    .await;
    reader.stop();
    img_reader.stop();
    handle.await?;
    img_handle.await?;
    let all = collected.snapshot();
    assert_eq!(all.len(), 14, "{all:#?}");

    let p1 = of_pk(&all, 1);
    use OperationType::*;
    assert_eq!(
        ops(&p1),
        vec![
            RowInsert,
            RowUpdate,
            RowUpdate,
            RowDelete,
            RowRangeDelExclLeft,
            RowRangeDelInclRight,
            RowRangeDelInclLeft,
            RowRangeDelExclRight,
            PartitionDelete
        ]
    );
    assert_eq!(p1[0].int("v"), Some(10));
    assert!(p1[0].end_of_batch && p1[0].ttl.is_none() && !p1[0].is_expiration);
    assert!(p1[1].deleted.contains("v") && p1[1].int("v").is_none());
    assert_eq!(p1[2].int("s"), Some(5));
    assert_eq!(p1[2].int("ck"), None);
    assert_eq!(p1[4].int("ck"), Some(0));
    assert_eq!(p1[5].int("ck"), Some(2));
    assert!(!p1[4].end_of_batch && p1[5].end_of_batch);
    assert_eq!((p1[4].seq, p1[5].seq), (0, 1));
    assert_eq!(p1[4].time, p1[5].time);
    // Per stream, (time, seq) only grows.
    for w in p1.windows(2) {
        assert!((w[0].micros, w[0].seq) <= (w[1].micros, w[1].seq));
    }

    let p2 = of_pk(&all, 2);
    assert_eq!(p2[0].ttl, Some(1000));
    assert_eq!(p2[0].int("v"), Some(3));

    let p3 = of_pk(&all, 3);
    assert_eq!(
        p3[0].values.get("m"),
        Some(&CqlValue::Map(vec![(
            CqlValue::Int(1),
            CqlValue::Text("a".into())
        )]))
    );
    assert_eq!(
        p3[0].deleted_elements.get("st"),
        Some(&CqlValue::Set(vec![CqlValue::Int(3)]))
    );

    let p4 = of_pk(&all, 4);
    assert!(p4[0].deleted.contains("l"));
    match p4[0].values.get("l") {
        Some(CqlValue::Map(entries)) => {
            assert_eq!(entries.len(), 1);
            assert_eq!(entries[0].1, CqlValue::Text("x".into()));
        }
        other => panic!("list as map<timeuuid, text> expected, got {other:?}"),
    }

    let p5 = of_pk(&all, 5);
    match p5[0].values.get("nu") {
        Some(CqlValue::UserDefinedType { fields, .. }) => {
            assert_eq!(fields[0], ("a".into(), Some(CqlValue::Int(1))));
            assert_eq!(fields[1], ("b".into(), None));
        }
        other => panic!("UDT expected, got {other:?}"),
    }

    let p6 = &of_pk(&all, 6)[0];
    assert_eq!(p6.op, RowInsert);
    assert_eq!(p6.values.get("a"), Some(&CqlValue::Ascii("asc".into())));
    assert_eq!(p6.values.get("b"), Some(&CqlValue::BigInt(9_000_000_000)));
    assert_eq!(p6.values.get("bl"), Some(&CqlValue::Blob(vec![0xca, 0xfe])));
    assert_eq!(p6.values.get("bo"), Some(&CqlValue::Boolean(true)));
    assert_eq!(p6.values.get("db"), Some(&CqlValue::Double(2.5)));
    assert_eq!(p6.values.get("f"), Some(&CqlValue::Float(1.5)));
    assert_eq!(p6.values.get("si"), Some(&CqlValue::SmallInt(7)));
    assert_eq!(p6.values.get("ti"), Some(&CqlValue::TinyInt(8)));
    assert_eq!(
        p6.values.get("ts"),
        Some(&CqlValue::Timestamp(CqlTimestamp(1_700_000_000_000)))
    );
    assert_eq!(p6.values.get("tx"), Some(&CqlValue::Text("text".into())));
    for name in ["d", "dc", "du", "i", "tm", "tu", "uu", "vi", "u", "tup"] {
        assert!(p6.values.contains_key(name), "{name} missing: {p6:?}");
    }
    assert_eq!(
        p6.values.get("tup"),
        Some(&CqlValue::Tuple(vec![
            Some(CqlValue::Int(4)),
            Some(CqlValue::Text("y".into()))
        ]))
    );

    let img = images.snapshot();
    assert_eq!(
        ops(&img),
        vec![RowInsert, PostImage, PreImage, RowUpdate, PostImage]
    );
    assert_eq!(
        img.iter().map(|c| c.int("v")).collect::<Vec<_>>(),
        vec![Some(1), Some(1), Some(1), Some(2), Some(2)]
    );
    assert_eq!(
        img.iter().map(|c| c.end_of_batch).collect::<Vec<_>>(),
        vec![false, true, false, false, true]
    );
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
