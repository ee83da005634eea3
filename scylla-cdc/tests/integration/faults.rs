//! Injected faults (overloaded replicas, a node going down and up) lose and duplicate
//! nothing.
//!
//! Runs against the embedded cluster only (it injects faults and stops a node): with
//! `SCYLLA_URI` set, it reports itself skipped.

use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultRule};

use crate::support::{ReadWhileWriting, new_cdc_keyspace};

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
    let run = ReadWhileWriting::start(&session, new_cdc_keyspace(&session, 3).await?, 3, 4).await?;
    run.more_rows(20, "first reads").await;

    cluster.add_fault(
        FaultRule::new()
            .on_statement_containing("_scylla_cdc_log")
            .error(FaultError::Overloaded)
            .times(5),
    );
    run.more_rows(20, "reads after overload").await;
    cluster.clear_faults();

    cluster.stop_node(2).await?;
    run.more_rows(20, "reads with a node down").await;
    cluster.start_node(2).await?;
    run.more_rows(20, "reads after the node is back").await;
    run.finish_exactly_once().await?;
    cluster.shutdown().await;
    Ok(())
}
