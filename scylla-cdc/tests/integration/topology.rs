//! A multi-node cluster with concurrent writers and a topology change mid-run: every change
//! is delivered exactly once, in write order per partition (vnodes with a new node, tablets
//! with a split), with early reads and without.
//!
//! Runs against the embedded cluster only (it adds a node and splits tablets): with
//! `SCYLLA_URI` set, the tests report themselves skipped.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use scylla_cdc::EarlyReads;

use crate::support::{
    ReadWhileWriting, delivered_early, fast_early_reads, new_keyspace, timing_sensitive, wait_for,
};

/// Runs the workload, applies `change` (which returns the new generation's timestamp)
/// mid-run, and checks what the reader delivered.
/// With `early`, the reader reads early: every change is delivered exactly once, in write
/// order per partition but for rows flagged late, and most arrive before their window is
/// older than the safety interval.
async fn run_with_topology_change<F, Fut>(
    cluster: &EmbeddedCluster,
    replication: &str,
    early: Option<EarlyReads>,
    change: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<chrono::DateTime<Utc>>>,
{
    let session = cluster.session().await?;
    let reads_early = early.is_some();
    let ks = new_keyspace(&session, replication).await?;
    let run = ReadWhileWriting::start_with(&session, ks, 4, 8, |b| b.early_reads(early)).await?;
    run.workload
        .wait_for_rounds(20, "20 rounds of writes")
        .await;
    let new_generation = change(run.ks.clone()).await?;
    // Keep writing well into the new generation.
    wait_for(
        Duration::from_secs(60),
        "writes past the new generation",
        || async { Utc::now() > new_generation + chrono::TimeDelta::seconds(2) },
    )
    .await;
    let before = run.workload.rounds();
    run.workload
        .wait_for_rounds(before + 20, "20 more rounds")
        .await;
    let changes = run.finish_exactly_once().await?;
    // Rows of both generations were read, from different streams.
    let cut = new_generation.timestamp_micros();
    let old: BTreeSet<_> = changes
        .iter()
        .filter(|c| c.micros < cut)
        .map(|c| c.stream)
        .collect();
    let new: BTreeSet<_> = changes
        .iter()
        .filter(|c| c.micros >= cut)
        .map(|c| c.stream)
        .collect();
    assert!(!old.is_empty() && !new.is_empty());
    assert!(old.is_disjoint(&new), "the new generation reused streams");
    let early = delivered_early(&changes, Duration::from_secs(1));
    if reads_early {
        // Both generations were read early, not only confirmed.
        let early_in = |new_gen: bool| {
            let part: Vec<_> = changes
                .iter()
                .filter(|c| (c.micros >= cut) == new_gen)
                .cloned()
                .collect();
            delivered_early(&part, Duration::from_secs(1))
        };
        assert!(
            early_in(false) > 0 && early_in(true) > 0,
            "{early} of {} rows delivered early ({} before the switch, {} after)",
            changes.len(),
            early_in(false),
            early_in(true)
        );
    } else {
        assert_eq!(early, 0, "rows delivered before the safety interval");
    }
    Ok(())
}

async fn vnodes_with_a_node_added(name: &str, early: Option<EarlyReads>) -> anyhow::Result<()> {
    if !embedded_only(name, "adds a node") {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .vnodes_per_node(8)
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    run_with_topology_change(
        &cluster,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3} AND tablets = {'enabled': false}",
        early,
        |_| async { Ok(cluster.add_node().await?) },
    )
    .await?;
    cluster.shutdown().await;
    Ok(())
}

async fn tablets_with_a_split(name: &str, early: Option<EarlyReads>) -> anyhow::Result<()> {
    if !embedded_only(name, "splits tablets") {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    let c = &cluster;
    run_with_topology_change(
        &cluster,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 4}",
        early,
        |ks| async move { Ok(c.split_tablets(&ks, "t").await?) },
    )
    .await?;
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vnodes_with_a_node_added_mid_run() -> anyhow::Result<()> {
    vnodes_with_a_node_added("vnodes_with_a_node_added_mid_run", None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablets_with_a_split_mid_run() -> anyhow::Result<()> {
    tablets_with_a_split("tablets_with_a_split_mid_run", None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vnodes_with_a_node_added_while_reading_early() -> anyhow::Result<()> {
    // Asserts that rows were delivered within the safety interval of their write.
    let _alone = timing_sensitive().await;
    let name = "vnodes_with_a_node_added_while_reading_early";
    vnodes_with_a_node_added(name, Some(fast_early_reads())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablets_with_a_split_while_reading_early() -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    let name = "tablets_with_a_split_while_reading_early";
    tablets_with_a_split(name, Some(fast_early_reads())).await
}
