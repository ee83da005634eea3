//! Grouped reads: the streams of a generation are read by replica (node and shard), at most
//! `max_partition_key_restrictions_per_query` streams per query, instead of one query per
//! vnode; nothing is lost, duplicated or reordered, also with a replica stopped and
//! restarted, and a reader resumes exactly from per-stream checkpoints saved by another
//! grouping.
//!
//! Runs against the embedded cluster only (it counts requests per node and shard and stops a
//! node): with `SCYLLA_URI` set, the tests report themselves skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use scylla_cdc::{
    CDCCheckpointSaver, Checkpoint, GenerationTimestamp, StreamID, TableBackedCheckpointSaver,
};
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::{EmbeddedCluster, FaultOpcode};

use crate::support::{
    Collected, ReadWhileWriting, Workload, check_exactly_once_in_order, create_workload_table,
    new_cdc_keyspace, reader_of, wait_for,
};

/// Waits until the log up to `end` can be read (the safety interval of `fast` has passed),
/// so that the reader reads it in whole windows, never catching up and polling.
async fn readable(end: DateTime<Utc>) {
    wait_for(Duration::from_secs(10), "the safety interval", || async {
        Utc::now() > end + TimeDelta::milliseconds(1100)
    })
    .await;
}

/// Sum of the counts.
fn total(counts: &BTreeMap<(usize, u32), u64>) -> u64 {
    counts.values().sum()
}

/// `after - before` per node and shard.
fn delta(
    after: &BTreeMap<(usize, u32), u64>,
    before: &BTreeMap<(usize, u32), u64>,
) -> BTreeMap<(usize, u32), u64> {
    after
        .iter()
        .map(|(k, v)| (*k, v - before.get(k).copied().unwrap_or(0)))
        .collect()
}

/// What [`write_then_read`] saw: the EXECUTE requests each node and shard received while
/// the reader read, and how many windows the writes span.
struct ReadCounts {
    executed: BTreeMap<(usize, u32), u64>,
    windows: u64,
}

/// Writes at least `rounds` rounds of the workload (`writers` writers over `partitions`
/// partitions) to a new CDC table, waits until it is readable, reads it whole with one reader and checks that
/// every change was delivered exactly once and in order.
async fn write_then_read(
    cluster: &EmbeddedCluster,
    writers: i32,
    partitions: i32,
    rounds: i32,
) -> anyhow::Result<ReadCounts> {
    let session = cluster.session().await?;
    let ks = new_cdc_keyspace(&session, 1).await?;
    create_workload_table(&session, &ks, "t").await?;
    let start = Utc::now() - TimeDelta::seconds(1);
    let workload = Workload::start(session.clone(), &ks, "t", writers, partitions).await?;
    workload.wait_for_rounds(rounds, "rounds of writes").await;
    let (expected, checksum) = workload.finish().await?;
    let end = Utc::now();
    let windows = (end - start).num_seconds() as u64 + 1;
    readable(end).await;

    let before = cluster.request_counts_of(FaultOpcode::Execute);
    let collected = Collected::default();
    let (_reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        .end_timestamp(end)
        .build()
        .await?;
    tokio::time::timeout(Duration::from_secs(60), handle).await??;
    let executed = delta(&cluster.request_counts_of(FaultOpcode::Execute), &before);
    assert_eq!(
        check_exactly_once_in_order(&collected.snapshot(), &expected),
        checksum
    );
    Ok(ReadCounts { executed, windows })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generation_is_read_with_one_query_per_replica_and_window() -> anyhow::Result<()> {
    if !embedded_only(
        "a_generation_is_read_with_one_query_per_replica_and_window",
        "counts requests per node and shard",
    ) {
        return Ok(());
    }
    setup_tracing();
    // 3 nodes × 64 vnodes × 2 shards: 384 streams, 64 per node and shard.
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .vnodes_per_node(64)
        .start()
        .await?;
    let ReadCounts { executed, windows } = write_then_read(&cluster, 4, 8, 20).await?;
    // 6 replicas (64 streams each, under the limit of 100): one query per replica and
    // window, plus the few generation reads. One query per vnode would be 192 per window.
    let sent = total(&executed);
    assert!(
        sent <= 6 * (windows + 1) + 10,
        "{sent} EXECUTE requests for {windows} windows: {executed:?}"
    );
    // Each group's queries go to the shard that owns its streams: every shard of every
    // node serves its own group's windows.
    assert_eq!(executed.len(), 6, "{executed:?}");
    for ((node, shard), n) in &executed {
        assert!(
            *n >= windows.saturating_sub(1),
            "node {node} shard {shard} served {n} queries for {windows} windows: {executed:?}"
        );
    }
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_cuts_groups_into_several_queries() -> anyhow::Result<()> {
    if !embedded_only(
        "the_limit_cuts_groups_into_several_queries",
        "counts requests per node and shard",
    ) {
        return Ok(());
    }
    setup_tracing();
    // One node, one shard, 256 vnodes: 256 streams, all on one replica; the embedded
    // cluster refuses a query naming more than 100 of them.
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .shards_per_node(1)
        .vnodes_per_node(256)
        .start()
        .await?;
    let ReadCounts { executed, windows } = write_then_read(&cluster, 4, 16, 10).await?;
    let sent = total(&executed);
    // 256 streams: 3 queries (100, 100, 56) per window.
    assert!(
        sent <= 3 * (windows + 1) + 10,
        "{sent} EXECUTE requests for {windows} windows"
    );
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_and_restarted_loses_and_duplicates_nothing() -> anyhow::Result<()> {
    if !embedded_only(
        "a_replica_stopped_and_restarted_loses_and_duplicates_nothing",
        "stops a node",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .vnodes_per_node(16)
        .start()
        .await?;
    let session = cluster.session().await?;
    let run = ReadWhileWriting::start(&session, new_cdc_keyspace(&session, 3).await?, 3, 8).await?;
    run.more_rows(20, "first reads").await;
    // The groups whose replica is node 1 are sent elsewhere while it is down, and back to
    // it once it is up.
    let before = cluster.request_counts_of(FaultOpcode::Execute);
    cluster.stop_node(1).await?;
    run.more_rows(40, "reads with a node down").await;
    cluster.start_node(1).await?;
    run.more_rows(40, "reads after the node is back").await;
    let node_1_back = || {
        let now = cluster.request_counts_of(FaultOpcode::Execute);
        let served = |node| -> u64 {
            delta(&now, &before)
                .iter()
                .filter(|((n, _), _)| *n == node)
                .map(|(_, v)| *v)
                .sum()
        };
        served(1) > 0
    };
    wait_for(
        Duration::from_secs(30),
        "queries on node 1 again",
        || async { node_1_back() },
    )
    .await;

    run.finish_exactly_once().await?;
    cluster.shutdown().await;
    Ok(())
}

/// One log row: its stream and time (µs).
type LogRow = (StreamID, i64, i32, i32);

/// Every row of the log of `ks.t`: stream, time (µs), `pk`, `seq`.
async fn log_rows(
    session: &scylla::client::session::Session,
    ks: &str,
) -> anyhow::Result<Vec<LogRow>> {
    let rows = session
        .query_unpaged(
            format!("SELECT \"cdc$stream_id\", \"cdc$time\", pk, seq FROM {ks}.t_scylla_cdc_log"),
            (),
        )
        .await?
        .into_rows_result()?;
    let mut out = Vec::new();
    for row in rows.rows::<(Vec<u8>, scylla::value::CqlTimeuuid, i32, i32)>()? {
        let (stream, time, pk, seq) = row?;
        let uuid: uuid::Uuid = time.into();
        let (secs, nanos) = uuid
            .get_timestamp()
            .ok_or_else(|| anyhow::anyhow!("not a timeuuid"))?
            .to_unix();
        out.push((
            StreamID::from_slice(&stream)?,
            secs as i64 * 1_000_000 + i64::from(nanos / 1000),
            pk,
            seq,
        ));
    }
    Ok(out)
}

/// A reader resuming from checkpoints saved per stream at different times (as one reader per
/// vnode group saved them, or a group whose streams were saved apart) delivers, per stream,
/// exactly the rows at or after its own checkpoint: none before it again, none after it lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_from_per_stream_checkpoints_loses_and_repeats_nothing() -> anyhow::Result<()> {
    if !embedded_only(
        "resuming_from_per_stream_checkpoints_loses_and_repeats_nothing",
        "reads many streams on few replicas",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(2)
        .shards_per_node(2)
        .vnodes_per_node(8)
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = new_cdc_keyspace(&session, 1).await?;
    create_workload_table(&session, &ks, "t").await?;
    let start = Utc::now() - TimeDelta::seconds(1);
    let workload = Workload::start(session.clone(), &ks, "t", 4, 8).await?;
    workload.wait_for_rounds(30, "30 rounds of writes").await;
    workload.finish().await?;
    let end = Utc::now();

    // Per stream, a checkpoint at one of its rows: a third of the streams late, a third
    // early, a third with none (those start at the reader's start).
    let rows = log_rows(&session, &ks).await?;
    let mut by_stream: BTreeMap<StreamID, Vec<i64>> = BTreeMap::new();
    for (stream, micros, _, _) in &rows {
        by_stream.entry(*stream).or_default().push(*micros);
    }
    let saver = Arc::new(
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t").await?,
    );
    let generation = GenerationTimestamp::new(start);
    let mut checkpoints: BTreeMap<StreamID, DateTime<Utc>> = BTreeMap::new();
    for (i, (stream, times)) in by_stream.iter_mut().enumerate() {
        times.sort_unstable();
        let at = match i % 3 {
            0 => times[times.len() * 3 / 4],
            1 => times[times.len() / 4],
            _ => continue,
        };
        // Checkpoints have millisecond precision.
        let at = DateTime::from_timestamp_millis(at / 1000).expect("in range");
        checkpoints.insert(*stream, at);
        saver
            .save_checkpoint(&Checkpoint::new(at, vec![*stream], generation))
            .await?;
    }
    assert!(
        checkpoints.len() >= 4,
        "too few streams: {}",
        by_stream.len()
    );
    let expected: BTreeSet<(StreamID, i64, i32, i32)> = rows
        .iter()
        .filter(|(stream, micros, _, _)| {
            checkpoints
                .get(stream)
                .is_none_or(|at| *micros >= at.timestamp_micros())
        })
        .copied()
        .collect();
    assert!(
        expected.len() < rows.len(),
        "some rows were delivered before"
    );

    let collected = Collected::default();
    let (_reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .checkpoint_saver(saver)
        .should_save_progress(false)
        .start_timestamp(start)
        .end_timestamp(end)
        .build()
        .await?;
    tokio::time::timeout(Duration::from_secs(60), handle).await??;
    let delivered: Vec<(StreamID, i64, i32, i32)> = collected
        .snapshot()
        .iter()
        .map(|c| {
            (
                c.stream,
                c.micros,
                c.int("pk").unwrap_or(-1),
                c.int("seq").unwrap_or(-1),
            )
        })
        .collect();
    let unique: BTreeSet<_> = delivered.iter().copied().collect();
    assert_eq!(unique.len(), delivered.len(), "a row was delivered twice");
    let repeated: Vec<_> = unique.difference(&expected).collect();
    let lost: Vec<_> = expected.difference(&unique).collect();
    assert!(
        repeated.is_empty() && lost.is_empty(),
        "delivered again (before its stream's checkpoint): {repeated:?}; lost: {lost:?}"
    );
    // Per partition, in write order.
    let mut per_pk: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (_, _, pk, seq) in &delivered {
        per_pk.entry(*pk).or_default().push(*seq);
    }
    for (pk, seqs) in per_pk {
        assert!(seqs.is_sorted(), "partition {pk} out of order: {seqs:?}");
    }
    cluster.shutdown().await;
    Ok(())
}
