//! Stopping and restarting the replicator: it resumes from its checkpoints, so writes made
//! while it was down are replicated and the destination equals the source.
//!
//! The clusters are embedded, or the real ones of `SCYLLA_URI` (source) and `SCYLLA_URI2`
//! (destination) when set; when both name the same cluster, the destination is another
//! keyspace of it.

use std::time::Duration;

use scylla_cdc_test_utils::setup_tracing;

use crate::support::*;

const CONVERGE: Duration = Duration::from_secs(30);

fn writes(ks: &str, from: i32, to: i32) -> Vec<String> {
    (from..to)
        .map(|i| {
            format!(
                "UPDATE {ks}.t SET v = {i}, l = l + [{i}], m = m + {{{i}: 'v{i}'}} \
                 WHERE pk = {} AND ck = {i}",
                i % 7
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_resumes_from_checkpoints() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks, dest_ks) = (&pair.s, &pair.d, pair.ks.as_str(), pair.dest_ks.as_str());
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, l list<int>, m map<int, text>, \
             PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let args = || {
        let mut a = pair.replicator_args("t");
        a.push("--create-destination-table".into());
        a
    };
    // The first run starts at the beginning; later runs have no --start: they can only
    // see the writes made while they were down through their checkpoints.
    let mut first = args();
    first.push("--start=-1m".into());

    // Run 1, stopped gracefully (flush + final checkpoint).
    let mut replicator = spawn_replicator(first);
    exec_all(s, &writes(ks, 0, 100)).await?;
    wait_converged(&mut replicator, s, d, ks, dest_ks, "t", CONVERGE).await?;
    exec_all(s, &writes(ks, 100, 150)).await?;
    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));

    // Written while no replicator runs.
    exec_all(s, &writes(ks, 150, 250)).await?;
    exec(s, format!("DELETE FROM {ks}.t WHERE pk = 3")).await?;

    // Run 2: resumes; killed abruptly (no flush, no final checkpoint) while writes go on.
    let mut replicator = spawn_replicator(args());
    exec_all(s, &writes(ks, 250, 300)).await?;
    wait_converged(&mut replicator, s, d, ks, dest_ks, "t", CONVERGE).await?;
    exec_all(s, &writes(ks, 300, 400)).await?;
    replicator.kill();
    exec_all(s, &writes(ks, 400, 450)).await?;

    // Run 3: resumes from the last checkpoint run 2 saved, replays what came after it.
    let mut replicator = spawn_replicator(args());
    wait_converged(&mut replicator, s, d, ks, dest_ks, "t", CONVERGE).await?;
    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    pair.finish().await
}
