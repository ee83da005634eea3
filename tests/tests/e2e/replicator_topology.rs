//! Replication across topology changes of the source: a node added to a vnode cluster (a new
//! CDC generation) and a tablet split (a new stream set), with writes before, during and
//! after the switch.
//!
//! The source is embedded (a node is added, tablets are split): with `SCYLLA_URI` set, the
//! tests report themselves skipped. The destination is the real cluster of `SCYLLA_URI2` if
//! set.

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;

use crate::support::*;

const CONVERGE: Duration = Duration::from_secs(60);

/// Replicates `ks.t` from `source` (keyspace options `replication`) while `change` changes
/// the topology (returning when the new streams start), writing all along.
async fn replicate_through<F, Fut>(
    source: &EmbeddedCluster,
    replication: &str,
    change: F,
) -> anyhow::Result<()>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = anyhow::Result<chrono::DateTime<Utc>>>,
{
    let destination = second_cluster(1).await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    exec(
        &s,
        format!("CREATE KEYSPACE {ks} WITH replication = {replication}"),
    )
    .await?;
    create_keyspace(&d, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, s set<int>, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let mut args = replicator_args(
        &source.contact_point().to_string(),
        &hosts(&destination),
        &ks,
        "t",
    );
    args.extend(["--create-destination-table".into(), "--start=-1m".into()]);
    let (mut replicator, stats) = start_replicator(args).await?;
    let write = |i: i32| {
        format!(
            "UPDATE {ks}.t SET v = {i}, s = s + {{{i}}} WHERE pk = {} AND ck = {i}",
            i % 13
        )
    };
    let mut i = 0;
    for _ in 0..50 {
        exec(&s, write(i)).await?;
        i += 1;
    }
    let switch = change(ks.clone()).await?;
    // Keep writing until well past the switch, so both stream sets have changes.
    while Utc::now() < switch + chrono::TimeDelta::seconds(2) {
        exec(&s, write(i)).await?;
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for _ in 0..50 {
        exec(&s, write(i)).await?;
        i += 1;
    }
    wait_converged(&mut replicator, &s, &d, &ks, &ks, "t", CONVERGE).await?;
    assert!(stats.applied() >= i as u64, "{} of {i}", stats.applied());
    assert_eq!(replicator.stop(Duration::from_secs(30)).await?, Ok(()));
    drop_keyspace(&d, &ks).await?;
    destination.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_a_new_vnode_generation() -> anyhow::Result<()> {
    if !embedded_only("across_a_new_vnode_generation", "adds a node to the source") {
        return Ok(());
    }
    setup_tracing();
    let source = EmbeddedCluster::builder()
        .nodes(2)
        .vnodes_per_node(8)
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    replicate_through(
        &source,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2} AND tablets = {'enabled': false}",
        |_| async { Ok(source.add_node().await?) },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn across_a_tablet_split() -> anyhow::Result<()> {
    if !embedded_only("across_a_tablet_split", "splits the source's tablets") {
        return Ok(());
    }
    setup_tracing();
    let source = EmbeddedCluster::builder()
        .nodes(1)
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    let c = &source;
    replicate_through(
        &source,
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 4}",
        |ks| async move { Ok(c.split_tablets(&ks, "t").await?) },
    )
    .await
}
