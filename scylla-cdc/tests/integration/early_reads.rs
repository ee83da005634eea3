//! Early reads against a cluster: rows written with timestamps in the past while a reader
//! reads early are delivered once, flagged late (row and change consumers alike), the low
//! watermark stays at the confirmed point, and a burst past the cap on unconfirmed rows
//! pauses the early reads without losing or repeating a row.
//!
//! (Generation switches and consumer-group hand-overs while reading early are in
//! `topology` and `groups`.)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{TimeDelta, Utc};
use scylla::client::session::Session;
use scylla_cdc::{Change, ChangeConsumer, ChangeConsumerFactory, EarlyReads};
use scylla_cdc_test_utils::TestCluster;
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Change as Row, Collected, cluster_and_keyspace, create_simple_table, delivered_early, exec,
    reader_of, timing_sensitive, wait_for,
};

/// The safety interval of these tests: late writes are written this far in the past, less.
const SAFETY: Duration = Duration::from_secs(3);

/// Every whole change delivered: `(pk, ck, late)` of its first row.
#[derive(Clone, Default)]
struct Changes(Arc<Mutex<Vec<(i32, i32, bool)>>>);

struct ChangeRecorder(Changes);

#[async_trait]
impl ChangeConsumer for ChangeRecorder {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        let row = change.deltas().next().expect("a change has a row");
        let pk = row.get_value_as::<i32>("pk")?.unwrap_or(-1);
        let ck = row.get_value_as::<i32>("ck")?.unwrap_or(-1);
        self.0.0.lock().unwrap().push((pk, ck, change.is_late()));
        Ok(())
    }
}

#[async_trait]
impl ChangeConsumerFactory for Changes {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(ChangeRecorder(self.clone()))
    }
}

/// `(pk, ck)` of a delivered row, and how many times each was delivered.
fn counts(rows: &[Row]) -> BTreeMap<(i32, i32), usize> {
    let mut n = BTreeMap::new();
    for r in rows {
        *n.entry((r.int("pk").unwrap_or(-1), r.int("ck").unwrap_or(-1)))
            .or_default() += 1;
    }
    n
}

fn early_reads() -> EarlyReads {
    EarlyReads::default()
        .lag(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(100))
}

async fn three_node_cluster() -> anyhow::Result<(TestCluster, Arc<Session>, String)> {
    cluster_and_keyspace(
        EmbeddedCluster::builder()
            .nodes(3)
            .shards_per_node(2)
            .vnodes_per_node(4),
    )
    .await
}

/// Waits until the newest CDC generation is more than `age` old: a write with a timestamp
/// before the generation is refused (Scylla: "could not find any CDC stream").
async fn wait_for_generation_older_than(session: &Session, age: Duration) -> anyhow::Result<()> {
    let rows = session
        .query_unpaged(
            "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
            (),
        )
        .await?
        .into_rows_result()?;
    let mut newest = None;
    for row in rows.rows::<(scylla::value::CqlTimestamp,)>()? {
        newest = newest.max(Some(row?.0.0));
    }
    let newest = newest.ok_or_else(|| anyhow::anyhow!("no CDC generation"))?;
    let ready = newest + age.as_millis() as i64;
    wait_for(
        Duration::from_secs(30),
        "a generation old enough",
        || async { Utc::now().timestamp_millis() > ready },
    )
    .await;
    Ok(())
}

/// Writes rows of partition 1 on time, and rows of partitions 2 and 3 with timestamps 1 s and
/// 2 s in the past (within the safety interval): a reader reading early delivers every one
/// once, the past ones flagged late, and whole changes say the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_rows_are_delivered_once_flagged() -> anyhow::Result<()> {
    let (_cluster, session, ks) = three_node_cluster().await?;
    create_simple_table(&session, &ks, "t").await?;
    wait_for_generation_older_than(&session, Duration::from_millis(2500)).await?;
    // Before the earliest timestamp written (2 s in the past).
    let start = Utc::now() - TimeDelta::seconds(3);
    let rows = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", rows.clone())
        .safety_interval(SAFETY)
        .early_reads(early_reads())
        .start_timestamp(start)
        .build()
        .await?;
    let changes = Changes::default();
    let (mut change_reader, change_handle) = reader_of(&session, &ks, "t", Collected::default())
        .change_consumer_factory(Arc::new(changes.clone()))
        .safety_interval(SAFETY)
        .early_reads(early_reads())
        .start_timestamp(start)
        .build()
        .await?;
    // Both read early already: a write 1 s in the past is behind their early reads.
    wait_for(Duration::from_secs(30), "the first early reads", || async {
        reader.progress().early_lag.is_some() && change_reader.progress().early_lag.is_some()
    })
    .await;
    const N: i32 = 20;
    for ck in 0..N {
        exec(
            &session,
            format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, {ck}, {ck})"),
        )
        .await?;
        for (pk, past) in [(2, 1), (3, 2)] {
            let ts = (Utc::now() - TimeDelta::seconds(past)).timestamp_micros();
            exec(
                &session,
                format!(
                    "INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, {ck}, {ck}) USING TIMESTAMP {ts}"
                ),
            )
            .await?;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let last_write = Utc::now();
    // Every window up to the last write confirmed: nothing more can come for these rows.
    let confirmed = || {
        [&reader, &change_reader].iter().all(|r| {
            r.progress()
                .low_watermark
                .is_some_and(|w| w > last_write + TimeDelta::milliseconds(100))
        })
    };
    wait_for(
        Duration::from_secs(60),
        "the confirmation past the writes",
        || async { confirmed() },
    )
    .await;
    let delivered = rows.snapshot();
    let n = counts(&delivered);
    for pk in 1..=3 {
        for ck in 0..N {
            assert_eq!(
                n.get(&(pk, ck)),
                Some(&1),
                "row ({pk}, {ck}) delivered {n:?}"
            );
        }
    }
    assert_eq!(n.len(), 3 * N as usize, "unexpected rows: {n:?}");
    for r in &delivered {
        let pk = r.int("pk").unwrap_or(-1);
        if pk != 1 {
            assert!(r.late, "a write 1-2 s in the past not flagged late: {r:?}");
        }
    }
    // The on-time rows were read early (within the safety interval), the late ones after.
    let on_time: Vec<Row> = delivered
        .iter()
        .filter(|r| r.int("pk") == Some(1))
        .cloned()
        .collect();
    assert!(
        delivered_early(&on_time, SAFETY) > on_time.len() / 2,
        "{} of {} on-time rows delivered early",
        delivered_early(&on_time, SAFETY),
        on_time.len()
    );
    assert_eq!(reader.progress().late_rows, 2 * N as u64);
    assert!(reader.progress().early_lag.is_some());
    // Whole changes: the same rows, once each, with the same flags.
    let mut got = changes.0.lock().unwrap().clone();
    got.sort_unstable();
    let mut want: Vec<(i32, i32, bool)> = delivered
        .iter()
        .map(|r| (r.int("pk").unwrap(), r.int("ck").unwrap(), r.late))
        .collect();
    want.sort_unstable();
    // An on-time row is late only if it became visible after the lag: compare keys and the
    // flags of the past writes, which must agree.
    let keys = |v: &[(i32, i32, bool)]| {
        v.iter()
            .map(|&(pk, ck, late)| (pk, ck, pk != 1 && late))
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&got), keys(&want));
    assert!(got.iter().filter(|c| c.0 != 1).all(|c| c.2));
    reader.stop();
    change_reader.stop();
    handle.await?;
    change_handle.await?;
    Ok(())
}

/// A burst of on-time rows past `max_unconfirmed_rows` (20) for longer than the safety
/// interval: the capped reader pauses its early reads (most rows arrive more than half a
/// safety interval after their write) and delivers each row once; an uncapped reader beside
/// it delivers nearly all of them within that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_past_the_cap_pauses_early_reads_and_loses_nothing() -> anyhow::Result<()> {
    // Asserts how long after their writes rows arrived.
    let _alone = timing_sensitive().await;
    let (_cluster, session, ks) = three_node_cluster().await?;
    create_simple_table(&session, &ks, "t").await?;
    let start = Utc::now();
    let reader = |cap: usize, out: Collected| {
        reader_of(&session, &ks, "t", out)
            .safety_interval(SAFETY)
            .early_reads(early_reads().max_unconfirmed_rows(cap))
            .start_timestamp(start)
            .build()
    };
    let (capped_rows, free_rows) = (Collected::default(), Collected::default());
    let (mut capped, capped_handle) = reader(20, capped_rows.clone()).await?;
    let (mut free, free_handle) = reader(1_000_000, free_rows.clone()).await?;
    // 500 rows over about 5 s, longer than the safety interval (3 s).
    const N: i32 = 500;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, ?, ?)"))
        .await?;
    for ck in 0..N {
        session.execute_unpaged(&insert, (ck % 16, ck, ck)).await?;
        if ck % 10 == 9 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let last_write = Utc::now();
    wait_for(
        Duration::from_secs(60),
        "both readers confirmed past the burst",
        || async {
            [&capped, &free].iter().all(|r| {
                r.progress()
                    .low_watermark
                    .is_some_and(|w| w > last_write + TimeDelta::milliseconds(100))
            })
        },
    )
    .await;
    for (name, rows) in [("capped", &capped_rows), ("uncapped", &free_rows)] {
        let n = counts(&rows.snapshot());
        assert_eq!(n.len(), N as usize, "{name}: rows missing");
        assert!(n.values().all(|&k| k == 1), "{name}: a row delivered twice");
    }
    let half_safety = SAFETY / 2;
    let prompt = |rows: &Collected| delivered_early(&rows.snapshot(), half_safety);
    let (capped_prompt, free_prompt) = (prompt(&capped_rows), prompt(&free_rows));
    assert!(
        capped_prompt > 0 && capped_prompt < N as usize / 2,
        "capped: {capped_prompt} of {N} rows delivered within {half_safety:?}"
    );
    assert!(
        free_prompt > N as usize * 9 / 10,
        "uncapped: {free_prompt} of {N} rows delivered within {half_safety:?}"
    );
    // Rows read while early reads paused are not late: they were visible on time.
    assert_eq!(capped.progress().late_rows, 0);
    capped.stop();
    free.stop();
    capped_handle.await?;
    free_handle.await?;
    Ok(())
}
