//! A multi-node cluster with concurrent writers and a topology change mid-run: every change
//! is delivered exactly once, in write order per partition (vnodes with a new node, tablets
//! with a split).
//!
//! Runs against the embedded cluster only (it adds a node and splits tablets): with
//! `SCYLLA_URI` set, the tests report themselves skipped.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use crate::support::{ReadWhileWriting, new_keyspace, wait_for};

/// Runs the workload, applies `change` (which returns the new generation's timestamp)
/// mid-run, and checks what the reader delivered.
async fn run_with_topology_change<F, Fut>(
    cluster: &EmbeddedCluster,
    replication: &str,
    change: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<chrono::DateTime<Utc>>>,
{
    let session = cluster.session().await?;
    let run =
        ReadWhileWriting::start(&session, new_keyspace(&session, replication).await?, 4, 8).await?;
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
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vnodes_with_a_node_added_mid_run() -> anyhow::Result<()> {
    if !embedded_only("vnodes_with_a_node_added_mid_run", "adds a node") {
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
        |_| async { Ok(cluster.add_node().await?) },
    )
    .await?;
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tablets_with_a_split_mid_run() -> anyhow::Result<()> {
    if !embedded_only("tablets_with_a_split_mid_run", "splits tablets") {
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
        |ks| async move { Ok(c.split_tablets(&ks, "t").await?) },
    )
    .await?;
    cluster.shutdown().await;
    Ok(())
}
