//! The low watermark never passes an undelivered change: with writers running, through a
//! node addition (a new generation) and a restart from checkpoints, at every update of the
//! watermark every log row with `cdc$time <= watermark` has been delivered.
//!
//! Runs against the embedded cluster only (it adds a node): with `SCYLLA_URI` set, the test
//! reports itself skipped. The cluster uses the loopback range 127.0.82.*.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla_cdc::{CDCLogReader, TableBackedCheckpointSaver};
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::EmbeddedCluster;
use uuid::Uuid;

use crate::support::{
    Collected, VNODES_RF3, Workload, create_workload_table, new_keyspace, reader_of,
};

/// A watermark update as observed: the watermark and how many rows had been delivered.
type Observation = (DateTime<Utc>, usize);

/// Records every update of the reader's watermark with the number of rows delivered then.
fn observe(reader: &CDCLogReader, collected: &Collected) -> Arc<Mutex<Vec<Observation>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut rx = reader.low_watermark();
    let (out, collected) = (seen.clone(), collected.clone());
    tokio::spawn(async move {
        loop {
            // Read before the count: rows counted are at least those delivered when the
            // watermark was published.
            if let Some(w) = *rx.borrow_and_update() {
                let n = collected.len();
                out.lock().unwrap().push((w, n));
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    });
    seen
}

/// Every log row: `(stream, time)` with its time in microseconds.
async fn log_rows(session: &Session, ks: &str) -> anyhow::Result<Vec<(Vec<u8>, Uuid)>> {
    let rows = session
        .query_unpaged(
            format!("SELECT \"cdc$stream_id\", \"cdc$time\" FROM {ks}.t_scylla_cdc_log"),
            (),
        )
        .await?
        .into_rows_result()?;
    let mut out = Vec::new();
    for row in rows.rows::<(Vec<u8>, scylla::value::CqlTimeuuid)>()? {
        let (stream, time) = row?;
        out.push((stream, Uuid::from(time)));
    }
    Ok(out)
}

fn micros(time: &Uuid) -> i64 {
    let (secs, nanos) = time.get_timestamp().expect("a timeuuid").to_unix();
    secs as i64 * 1_000_000 + nanos as i64 / 1000
}

/// Checks every observation: each log row at or before the watermark is among the first
/// `n` rows delivered (`delivered_at`: a row's delivery position, across runs).
fn check(
    observations: &[Observation],
    log: &[(Vec<u8>, Uuid)],
    delivered_at: &HashMap<(Vec<u8>, Uuid), usize>,
) {
    assert!(!observations.is_empty(), "no watermark was published");
    for &(w, n) in observations {
        let w_us = w.timestamp_micros();
        for row in log.iter().filter(|r| micros(&r.1) <= w_us) {
            match delivered_at.get(row) {
                Some(&i) if i < n => {}
                other => panic!(
                    "watermark {w} passed the undelivered row {row:?} (delivered at {other:?}, \
                     {n} rows delivered then)"
                ),
            }
        }
    }
}

async fn start_reader(
    session: &Arc<Session>,
    ks: &str,
    saver: Arc<TableBackedCheckpointSaver>,
    collected: &Collected,
    start: DateTime<Utc>,
) -> anyhow::Result<(CDCLogReader, scylla_cdc::CDCReaderHandle)> {
    Ok(reader_of(session, ks, "t", collected.clone())
        .start_timestamp(start)
        .checkpoint_saver(saver)
        .pause_between_saves(Duration::from_millis(200))
        .build()
        .await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watermark_never_passes_an_undelivered_change() -> anyhow::Result<()> {
    if !embedded_only(
        "the_watermark_never_passes_an_undelivered_change",
        "adds a node",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .vnodes_per_node(4)
        .address(Ipv4Addr::new(127, 0, 82, 1))
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = new_keyspace(&session, VNODES_RF3).await?;
    create_workload_table(&session, &ks, "t").await?;
    let saver = Arc::new(
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t").await?,
    );
    let start = Utc::now() - TimeDelta::seconds(1);

    // Run 1: writers, a node joins mid-run.
    let run1 = Collected::default();
    let (mut reader, handle) = start_reader(&session, &ks, saver.clone(), &run1, start).await?;
    let handle = tokio::spawn(handle);
    let observed1 = observe(&reader, &run1);
    let workload = Workload::start(session.clone(), &ks, "t", 2, 4).await?;
    workload.wait_for_rounds(10, "10 rounds of writes").await;
    let new_generation = cluster.add_node().await?;
    let mut watermark = reader.low_watermark();
    tokio::time::timeout(
        Duration::from_secs(60),
        watermark.wait_for(|w| w.is_some_and(|w| w > new_generation + TimeDelta::seconds(1))),
    )
    .await??;
    assert_eq!(reader.progress().generation_switches, 1);
    // Stop mid-stream, with writes still coming: some rows are left for run 2.
    reader.stop();
    tokio::time::timeout(Duration::from_secs(30), handle).await???;
    drop(reader);
    let delivered1 = run1.len();

    // Run 2: resumes from the checkpoints while the writers go on.
    let run2 = Collected::default();
    let (mut reader, handle) = start_reader(&session, &ks, saver.clone(), &run2, start).await?;
    let handle = tokio::spawn(handle);
    let observed2 = observe(&reader, &run2);
    let restarted = Utc::now();
    let before = workload.rounds();
    workload
        .wait_for_rounds(before + 10, "10 more rounds")
        .await;
    workload.finish().await?;
    let written_until = Utc::now();
    let mut watermark = reader.low_watermark();
    tokio::time::timeout(
        Duration::from_secs(60),
        watermark.wait_for(|w| w.is_some_and(|w| w >= written_until)),
    )
    .await??;
    reader.stop();
    tokio::time::timeout(Duration::from_secs(30), handle).await???;

    let log = log_rows(&session, &ks).await?;
    let key = |c: &crate::support::Change| (c.stream.as_bytes().to_vec(), c.time);
    // Run 1's watermarks against run 1's deliveries.
    let mut delivered_at: HashMap<_, usize> = HashMap::new();
    for (i, c) in run1.snapshot().iter().enumerate() {
        delivered_at.entry(key(c)).or_insert(i);
    }
    assert_eq!(
        delivered_at.len(),
        delivered1,
        "run 1 delivered a row twice"
    );
    let observed1 = observed1.lock().unwrap().clone();
    check(&observed1, &log, &delivered_at);
    let last1 = observed1.last().unwrap().0;
    assert!(last1 > new_generation, "run 1 got past the new generation");

    // Run 2 starts at or before the first row run 1 had not delivered, and from then on
    // passes nothing that neither run delivered.
    let first_undelivered = log
        .iter()
        .filter(|r| !delivered_at.contains_key(*r))
        .map(|r| micros(&r.1))
        .min()
        .expect("rows were left for run 2");
    let observed2 = observed2.lock().unwrap().clone();
    let first2 = observed2.first().expect("run 2 published a watermark").0;
    assert!(
        first2.timestamp_micros() < first_undelivered,
        "run 2 started at {first2}, after the first undelivered row ({first_undelivered} µs)"
    );
    // A row run 1 delivered counts as delivered before run 2's first row (position 0; run
    // 2's rows and counts shift by one).
    let mut both: HashMap<_, usize> = delivered_at.keys().map(|k| (k.clone(), 0)).collect();
    for (i, c) in run2.snapshot().iter().enumerate() {
        both.entry(key(c)).or_insert(i + 1);
    }
    let shifted: Vec<Observation> = observed2.iter().map(|&(w, n)| (w, n + 1)).collect();
    check(&shifted, &log, &both);
    assert!(observed2.last().unwrap().0 >= written_until);
    assert!(observed2.len() > 1 && restarted < written_until);
    cluster.shutdown().await;
    Ok(())
}
