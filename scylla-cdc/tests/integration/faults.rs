//! Injected faults (overloaded replicas, a node going down and up) lose and duplicate
//! nothing.
//!
//! Runs against the embedded cluster only (it injects faults and stops a node): with
//! `SCYLLA_URI` set, it reports itself skipped.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc::CDCLogReaderBuilder;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultRule};

use crate::support::{
    Collected, Workload, check_exactly_once_in_order, create_cdc_keyspace, create_workload_table,
    fast, wait_for,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_lose_and_duplicate_nothing() -> anyhow::Result<()> {
    if !embedded_only(
        "faults_lose_and_duplicate_nothing",
        "injects faults and stops a node",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_cdc_keyspace(&session, &ks, 3).await?;
    create_workload_table(&session, &ks, "t").await?;
    let collected = Collected::default();
    let (mut reader, handle) = fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace(&ks)
        .table_name("t")
        .consumer_factory(Arc::new(collected.clone()))
        .start_timestamp(Utc::now() - chrono::TimeDelta::seconds(1))
        .build()
        .await?;
    let workload = Workload::start(session.clone(), &ks, "t", 3, 4).await?;
    wait_for(Duration::from_secs(30), "first reads", || async {
        collected.len() > 20
    })
    .await;

    cluster.add_fault(
        FaultRule::new()
            .on_statement_containing("_scylla_cdc_log")
            .error(FaultError::Overloaded)
            .times(5),
    );
    let seen = collected.len();
    wait_for(Duration::from_secs(30), "reads after overload", || async {
        collected.len() > seen + 20
    })
    .await;
    cluster.clear_faults();

    cluster.stop_node(2).await?;
    let seen = collected.len();
    wait_for(
        Duration::from_secs(30),
        "reads with a node down",
        || async { collected.len() > seen + 20 },
    )
    .await;
    cluster.start_node(2).await?;
    let seen = collected.len();
    wait_for(
        Duration::from_secs(30),
        "reads after the node is back",
        || async { collected.len() > seen + 20 },
    )
    .await;

    let (expected, checksum) = workload.finish().await?;
    reader.stop_at(Utc::now());
    tokio::time::timeout(Duration::from_secs(60), handle).await??;
    let got = check_exactly_once_in_order(&collected.snapshot(), &expected);
    assert_eq!(got, checksum);
    cluster.shutdown().await;
    Ok(())
}
