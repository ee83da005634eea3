//! `max_rows_per_second`: a backlog far larger than 10 s worth is delivered at the cap
//! (within 10 % over 10 s), by all stream groups together; 0 is refused.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set. The embedded cluster uses the loopback range 127.0.83.*.

use std::net::Ipv4Addr;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use scylla_cdc::{CDCError, EarlyReads};
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Collected, cluster_and_keyspace, create_simple_table, drop_keyspace, fast_early_reads,
    reader_of, timing_sensitive, wait_for,
};

/// The cap: low enough for a shared, noisy machine to keep up with easily.
const CAP: u64 = 1000;
/// Partitions written (spread over many streams, so that many groups compete).
const PARTITIONS: i32 = 40;
/// Rows per batch (one partition each).
const BATCH: i32 = 100;
/// Batches per partition: 40 × 10 × 100 = 40 000 rows, 40 s worth at the cap.
const BATCHES: i32 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_holds_over_ten_seconds() -> anyhow::Result<()> {
    the_rate_limit_holds(None).await
}

/// With early reads the cap holds too: a group caught up reads early, one behind reads its
/// windows once, and every read pays for its rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_holds_while_reading_early() -> anyhow::Result<()> {
    the_rate_limit_holds(Some(fast_early_reads())).await
}

async fn the_rate_limit_holds(early: Option<EarlyReads>) -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1).address(
        Ipv4Addr::new(127, 0, 83, if early.is_some() { 51 } else { 1 }),
    ))
    .await?;
    create_simple_table(&session, &ks, "t").await?;
    let start = Utc::now() - TimeDelta::seconds(1);
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, ?, ?)"))
        .await?;
    for b in 0..BATCHES {
        for pk in 0..PARTITIONS {
            let mut batch =
                scylla::statement::batch::Batch::new(scylla::statement::batch::BatchType::Unlogged);
            let mut values = Vec::new();
            for i in 0..BATCH {
                batch.append_statement(insert.clone());
                values.push((pk, b * BATCH + i, i));
            }
            session.batch(&batch, values).await?;
        }
    }
    let total = (PARTITIONS * BATCH * BATCHES) as usize;

    // Zero is refused.
    let zero = reader_of(&session, &ks, "t", Collected::default())
        .max_rows_per_second(0)
        .build()
        .await;
    assert!(
        matches!(&zero, Err(CDCError::InvalidConfig(m)) if m.contains("max_rows_per_second")),
        "{:?}",
        zero.err()
    );

    let collected = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        .max_rows_per_second(CAP)
        .early_reads(early)
        .build()
        .await?;
    let handle = tokio::spawn(handle);
    // The backlog is in the log before reading starts: the count measures the reader only.
    wait_for(Duration::from_secs(30), "the first rows", || async {
        collected.len() > 0
    })
    .await;
    let t0 = tokio::time::Instant::now();
    let n0 = collected.len();
    tokio::time::sleep_until(t0 + Duration::from_secs(10)).await;
    let n1 = collected.len();
    let elapsed = t0.elapsed().as_secs_f64();
    let rate = (n1 - n0) as f64 / elapsed;
    tracing::info!(rows = n1 - n0, elapsed, rate, "measured");
    assert!(n1 < total, "the backlog ran out: {n1} of {total}");
    assert!(
        (0.9 * CAP as f64..=1.1 * CAP as f64).contains(&rate),
        "{} rows in {elapsed:.2} s: {rate:.0} rows/s, cap {CAP}",
        n1 - n0
    );
    // Counted per page: at most the rows delivered so far.
    let counted = reader.progress().rows as usize;
    assert!(counted > n0 && counted <= collected.len(), "{counted}");
    reader.stop();
    tokio::time::timeout(Duration::from_secs(30), handle).await???;
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
