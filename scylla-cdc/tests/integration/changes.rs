//! Whole changes (`change_consumer_factory`): single statements, batches, multi-row deletes,
//! range and partition deletes, with no images, `'preimage': true`, `'preimage': 'full'` and
//! `'postimage': true`, read with 1 s windows and pages of one row (the cluster cuts every
//! page after its first row), so every change of more than one row straddles a page boundary.
//! Each change must arrive once and whole: the same rows as the log holds for its
//! `(stream, cdc$time)`, in `cdc$batch_seq_no` order.
//!
//! A second test reads a backlog of 10,000 changes while its consumer keeps a few of them and
//! drops the rest: the buffers of dropped changes are written again, and every kept change
//! must stay as it was delivered.
//!
//! Embedded cluster only (the page limit is lowered on the cluster; the backlog is preloaded
//! into it): with `SCYLLA_URI` set the tests report themselves skipped. The first cluster
//! uses the loopback range 127.0.94.*, the second a free random one.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use scylla::client::session::Session;
use scylla::value::CqlValue;
use scylla_cdc::{
    CDCLogReaderBuilder, Change, ChangeConsumer, ChangeConsumerFactory, OperationType, Target,
};
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::{EmbeddedCluster, Preload};

use crate::support::{exec, fast, new_cdc_keyspace, wait_for};

/// Keeps every change of every stream group.
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

impl Kept {
    fn snapshot(&self) -> Vec<Change> {
        self.0.lock().unwrap().clone()
    }
}

/// `(stream, cdc$time)` → the `cdc$batch_seq_no`s the log holds, read directly.
async fn log_groups(
    s: &Session,
    ks: &str,
    table: &str,
) -> anyhow::Result<BTreeMap<String, Vec<i32>>> {
    let rows = s
        .query_unpaged(
            format!(
                "SELECT \"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\" FROM {ks}.{table}_scylla_cdc_log"
            ),
            (),
        )
        .await?
        .into_rows_result()?;
    let mut groups: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for row in rows.rows::<(Vec<u8>, scylla::value::CqlTimeuuid, i32)>()? {
        let (stream, time, seq) = row?;
        groups
            .entry(format!("{stream:02x?} {}", uuid::Uuid::from(time)))
            .or_default()
            .push(seq);
    }
    for seqs in groups.values_mut() {
        seqs.sort();
    }
    Ok(groups)
}

fn key(c: &Change) -> String {
    format!("{:02x?} {}", c.stream_id().as_bytes(), c.time())
}

fn int(v: Option<&CqlValue>) -> Option<i32> {
    match v {
        Some(CqlValue::Int(i)) => Some(*i),
        _ => None,
    }
}

/// The statements written to every table (`{t}` is the table).
const STATEMENTS: &[&str] = &[
    // pk 1: one row, then its static row and a clustering row in one statement.
    "INSERT INTO {t} (pk, ck, v, w) VALUES (1, 1, 10, 100)",
    "UPDATE {t} SET s = 5, v = 11 WHERE pk = 1 AND ck = 1",
    // pk 2: a batch of three rows of one partition.
    "BEGIN UNLOGGED BATCH \
     INSERT INTO {t} (pk, ck, v) VALUES (2, 1, 21); \
     INSERT INTO {t} (pk, ck, v) VALUES (2, 2, 22); \
     UPDATE {t} SET v = 23 WHERE pk = 2 AND ck = 3; \
     APPLY BATCH",
    // pk 2: a multi-row delete, then a range delete.
    "DELETE FROM {t} WHERE pk = 2 AND ck IN (1, 2)",
    "DELETE FROM {t} WHERE pk = 2 AND ck > 2 AND ck <= 5",
    // pk 3: a map written then changed, then the partition deleted.
    "UPDATE {t} SET m = {1: 1, 2: 2} WHERE pk = 3 AND ck = 0",
    "UPDATE {t} SET m = m + {3: 3}, m = m - {1} WHERE pk = 3 AND ck = 0",
    "DELETE FROM {t} WHERE pk = 3",
    // pk 1 again: an update of one column of an existing row.
    "UPDATE {t} SET w = 101 WHERE pk = 1 AND ck = 1",
];

/// The tables and their `cdc` options.
const TABLES: &[(&str, &str)] = &[
    ("plain", "{'enabled': true}"),
    ("pre", "{'enabled': true, 'preimage': true}"),
    ("fullpre", "{'enabled': true, 'preimage': 'full'}"),
    (
        "post",
        "{'enabled': true, 'preimage': true, 'postimage': true}",
    ),
];

/// The `nth` change (in write order) of partition `pk`.
fn change_at(changes: &[Change], pk: i32, nth: usize) -> &Change {
    let of_pk: Vec<&Change> = changes
        .iter()
        .filter(|c| {
            c.rows()
                .next()
                .and_then(|r| r.get_value_as::<i32>("pk").ok().flatten())
                == Some(pk)
        })
        .collect();
    let mut sorted = of_pk;
    sorted.sort_by_key(|c| c.timestamp_micros());
    sorted[nth]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_arrive_whole_through_one_row_pages() -> anyhow::Result<()> {
    setup_tracing();
    if !embedded_only(
        "changes_arrive_whole_through_one_row_pages",
        "lowers the page size of the cluster",
    ) {
        return Ok(());
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .address(Ipv4Addr::new(127, 0, 94, 1))
        .query_page_size_in_bytes(1)
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = new_cdc_keyspace(&session, 1).await?;
    for (t, cdc) in TABLES {
        exec(
            &session,
            format!(
                "CREATE TABLE {ks}.{t} (pk int, ck int, s int static, v int, w int, \
                     m map<int, int>, PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            ),
        )
        .await?;
    }
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    for (t, _) in TABLES {
        for s in STATEMENTS {
            session
                .query_unpaged(s.replace("{t}", &format!("{ks}.{t}")), ())
                .await?;
        }
    }

    let mut results = BTreeMap::new();
    for (t, _) in TABLES {
        let expected = log_groups(&session, &ks, t).await?;
        assert!(
            expected.values().any(|seqs| seqs.len() >= 3),
            "{t}: no change of three rows or more: {expected:?}"
        );
        let kept = Kept::default();
        let (mut reader, handle) = fast(CDCLogReaderBuilder::new())
            .session(session.clone())
            .keyspace(&ks)
            .table_name(*t)
            .change_consumer_factory(Arc::new(kept.clone()))
            .start_timestamp(start)
            .build()
            .await?;
        wait_for(Duration::from_secs(60), "every change", || async {
            kept.snapshot().len() >= expected.len()
        })
        .await;
        // Nothing more (no change split in two, none twice) after another window or two.
        let settle = Utc::now();
        wait_for(Duration::from_secs(30), "the low watermark", || async {
            reader.low_watermark().borrow().is_some_and(|w| w > settle)
        })
        .await;
        reader.stop();
        handle.await?;
        let changes = kept.snapshot();
        let mut got: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for c in &changes {
            assert_eq!(c.table(), *t);
            let seqs: Vec<i32> = c.rows().map(|r| r.batch_seq_no()).collect();
            assert_eq!(
                c.rows().last().map(|r| r.end_of_batch()),
                Some(true),
                "{t}: a change without its last row: {c:?}"
            );
            assert!(
                got.insert(key(c), seqs).is_none(),
                "{t}: delivered twice: {c:?}"
            );
        }
        assert_eq!(got, expected, "{t}: changes differ from the log's groups");
        results.insert(*t, changes);
    }

    // What a user sees, per table option.
    for (t, _) in TABLES {
        let changes = &results[t];
        // pk 2's batch: one change, three deltas, three rows touched.
        let batch = change_at(changes, 2, 0);
        assert_eq!(batch.deltas().count(), 3, "{t}: {batch:?}");
        let rows = batch.row_changes();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows.iter()
                .map(|r| int(r.after().unwrap().unwrap().get("v")))
                .collect::<Vec<_>>(),
            vec![Some(21), Some(22), Some(23)]
        );
        // The multi-row delete: two row deletions, nothing after.
        let del = change_at(changes, 2, 1);
        let rows = del.row_changes();
        assert_eq!(rows.len(), 2, "{t}: {del:?}");
        assert!(
            rows.iter()
                .all(|r| r.operation() == Some(OperationType::RowDelete))
        );
        assert!(rows.iter().all(|r| r.after().unwrap().is_none()));
        // The range delete: one range of two bound rows.
        let range = change_at(changes, 2, 2).row_changes();
        assert_eq!(range.len(), 1);
        assert_eq!(range[0].target(), Target::Range);
        assert_eq!(range[0].deltas().len(), 2);
        // The partition delete.
        let pd = change_at(changes, 3, 2);
        assert_eq!(pd.operation(), Some(OperationType::PartitionDelete));
        assert_eq!(pd.row_changes()[0].target(), Target::Partition);
        assert!(pd.after().unwrap().is_none());
        // Static and clustering row in one statement: two row changes, the static first.
        let both_change = change_at(changes, 1, 1);
        let both = both_change.row_changes();
        assert_eq!(both.len(), 2, "{t}");
        assert!(
            both[0].is_static() && !both[1].is_static(),
            "{t}: {both_change:?} {:?} {:?}",
            both[0].key(),
            both[1].key()
        );
        assert_eq!(int(both[0].after().unwrap().unwrap().get("s")), Some(5));
        assert_eq!(int(both[1].after().unwrap().unwrap().get("v")), Some(11));

        // `UPDATE SET w = 101` on (1, 1), which held v = 11, w = 100.
        let upd = change_at(changes, 1, 2);
        let before = upd.before().unwrap();
        let after = upd.after().unwrap().unwrap();
        assert_eq!(int(after.get("w")), Some(101), "{t}");
        match *t {
            "plain" => {
                assert_eq!(before, None);
                assert!(!after.contains("v"), "{t}: {after:?}");
            }
            "pre" => {
                let before = before.expect("a pre-image");
                assert_eq!(int(before.get("w")), Some(100));
                assert!(
                    !before.contains("v"),
                    "{t}: only touched columns: {before:?}"
                );
            }
            "fullpre" => {
                let before = before.expect("a pre-image");
                assert_eq!(int(before.get("w")), Some(100));
                assert_eq!(int(before.get("v")), Some(11));
                assert_eq!(int(after.get("v")), Some(11), "full before + delta");
            }
            "post" => {
                assert_eq!(
                    int(after.get("v")),
                    Some(11),
                    "the post-image: every column"
                );
                assert_eq!(upd.post_images().count(), 1);
            }
            _ => unreachable!(),
        }

        // The map: overwritten, then + {3: 3} - {1}.
        let m = change_at(changes, 3, 1).after().unwrap().unwrap();
        let expected = CqlValue::Map(vec![
            (CqlValue::Int(2), CqlValue::Int(2)),
            (CqlValue::Int(3), CqlValue::Int(3)),
        ]);
        if *t == "plain" {
            // Without a pre-image only the delta is known: the added element.
            assert_eq!(
                m.get("m"),
                Some(&CqlValue::Map(vec![(CqlValue::Int(3), CqlValue::Int(3))]))
            );
        } else {
            assert_eq!(m.get("m"), Some(&expected), "{t}");
        }
    }
    cluster.shutdown().await;
    Ok(())
}

/// The preloaded backlog of the kept-changes test: partitions × rows, one change each.
const KEEP_PARTITIONS: i64 = 40;
const KEEP_ROWS: i64 = 250;

/// A change's `(pk, ck, v)`, where the preload wrote `v = pk * KEEP_ROWS + ck` as 8 bytes.
fn preloaded_row(c: &Change) -> (i64, i64, Vec<u8>) {
    assert_eq!(c.rows().len(), 1, "{c:?}");
    let row = c.rows().next().expect("a row");
    let get = |name: &str| row.get_value_as::<i64>(name).unwrap().expect(name);
    let v = row.get_value_as::<Vec<u8>>("v").unwrap().expect("v");
    (get("pk"), get("ck"), v)
}

/// Checks every change it gets, keeps one in 173 and drops the others.
#[derive(Clone, Default)]
struct KeepSome {
    seen: Arc<Mutex<usize>>,
    kept: Arc<Mutex<Vec<(Change, String)>>>,
}

#[async_trait]
impl ChangeConsumer for KeepSome {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        let (pk, ck, v) = preloaded_row(&change);
        let n = pk * KEEP_ROWS + ck;
        anyhow::ensure!(v == n.to_be_bytes(), "row {n} delivered with v = {v:02x?}");
        *self.seen.lock().unwrap() += 1;
        if n % 173 == 0 {
            let seen_as = format!("{change:?}");
            self.kept.lock().unwrap().push((change, seen_as));
        }
        Ok(())
    }
}

#[async_trait]
impl ChangeConsumerFactory for KeepSome {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(self.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_changes_stay_as_delivered_while_the_reader_goes_on() -> anyhow::Result<()> {
    setup_tracing();
    if !embedded_only(
        "kept_changes_stay_as_delivered_while_the_reader_goes_on",
        "preloads a backlog into the cluster",
    ) {
        return Ok(());
    }
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .preload(Preload::new(
            "keep",
            "t",
            KEEP_PARTITIONS as u64,
            KEEP_ROWS as u64,
        ))
        .start()
        .await?;
    let session = cluster.session().await?;
    let end = Utc::now();
    let consumer = KeepSome::default();
    let (_reader, handle) = fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace("keep")
        .table_name("t")
        .change_consumer_factory(Arc::new(consumer.clone()))
        .start_timestamp(start)
        .end_timestamp(end)
        .build()
        .await?;
    handle.await?;
    let total = (KEEP_PARTITIONS * KEEP_ROWS) as usize;
    assert_eq!(*consumer.seen.lock().unwrap(), total);
    let kept = consumer.kept.lock().unwrap();
    assert_eq!(kept.len(), total.div_ceil(173), "one change in 173 kept");
    for (change, seen_as) in kept.iter() {
        let (pk, ck, v) = preloaded_row(change);
        assert_eq!(v, (pk * KEEP_ROWS + ck).to_be_bytes(), "{change:?}");
        assert_eq!(&format!("{change:?}"), seen_as, "a kept change changed");
    }
    Ok(())
}
