//! Faults on either side — timeouts, `Overloaded`, a destination node stopped for seconds —
//! do not stop the replicator, and the destination still converges.
//!
//! Both clusters are embedded (faults are injected on both, a destination node is stopped):
//! with `SCYLLA_URI` set, the test reports itself skipped.

use std::time::Duration;

use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultOpcode, FaultRule};

use crate::support::*;

const CONVERGE: Duration = Duration::from_secs(60);

fn writes(ks: &str, from: i32, to: i32) -> Vec<String> {
    (from..to)
        .map(|i| {
            format!(
                "UPDATE {ks}.t SET v = {i}, s = s + {{{i}}} WHERE pk = {} AND ck = {i}",
                i % 11
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_through_faults_on_both_sides() -> anyhow::Result<()> {
    if !embedded_only(
        "converges_through_faults_on_both_sides",
        "injects faults and stops a destination node",
    ) {
        return Ok(());
    }
    setup_tracing();
    let source = EmbeddedCluster::builder().nodes(3).start().await?;
    let destination = EmbeddedCluster::builder().nodes(3).start().await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 3).await?;
    create_keyspace(&d, &ks, 3).await?;
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
        &destination.contact_point().to_string(),
        &ks,
        "t",
    );
    args.extend([
        "--create-destination-table".into(),
        "--start=-1m".into(),
        "--write-consistency".into(),
        "QUORUM".into(),
    ]);
    let (mut replicator, stats) = start_replicator(args).await?;
    exec_all(&s, &writes(&ks, 0, 50)).await?;
    wait_converged(&mut replicator, &s, &d, &ks, &ks, "t", CONVERGE).await?;

    // Destination: overloaded and timing-out writes; source: timing-out log reads.
    destination.add_fault(
        FaultRule::new()
            .on_opcode(FaultOpcode::Execute)
            .on_keyspace(ks.clone())
            .error(FaultError::Overloaded)
            .with_probability(0.3)
            .times(40),
    );
    destination.add_fault(
        FaultRule::new()
            .on_opcode(FaultOpcode::Batch)
            .error(FaultError::WriteTimeout)
            .times(5),
    );
    source.add_fault(
        FaultRule::new()
            .on_statement_containing("_scylla_cdc_log")
            .error(FaultError::ReadTimeout)
            .with_probability(0.3)
            .times(20),
    );
    exec_all(&s, &writes(&ks, 50, 150)).await?;

    // A destination node down for a few seconds while changes keep coming.
    destination.stop_node(2).await?;
    exec_all(&s, &writes(&ks, 150, 250)).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    destination.start_node(2).await?;
    exec_all(&s, &writes(&ks, 250, 300)).await?;

    wait_converged(&mut replicator, &s, &d, &ks, &ks, "t", CONVERGE).await?;
    destination.clear_faults();
    source.clear_faults();
    assert!(
        !replicator.is_finished(),
        "faults must not stop the replicator"
    );
    assert!(stats.retries() > 0, "the faults were retried");
    assert!(
        stats.applied() >= 300,
        "{} changes applied",
        stats.applied()
    );
    assert_eq!(replicator.stop(Duration::from_secs(30)).await?, Ok(()));
    Ok(())
}
