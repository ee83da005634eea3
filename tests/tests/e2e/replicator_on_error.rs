//! `--on-error`: a change the replicator cannot write goes to the dead-letter table next to
//! the checkpoint table and replication goes on; with the default `stop` the replicator exits
//! naming the write that failed.
//!
//! Runs against the embedded clusters, or the real Scylla of `SCYLLA_URI` (and `SCYLLA_URI2`)
//! when set.

use std::time::Duration;

use scylla_cdc_test_utils::setup_tracing;

use crate::support::*;

/// Starts a replicator of `t (pk int PRIMARY KEY, v int)` with `on_error`, replicates one
/// row, then drops the destination table so that the writes of rows 2 and 3 fail.
async fn replicate_into_a_dropped_table(pair: &Pair, on_error: &str) -> anyhow::Result<Running> {
    let (s, d, ks, dks) = (&pair.s, &pair.d, &pair.ks, &pair.dest_ks);
    exec(
        s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let mut args = pair.replicator_args("t");
    args.extend(
        ["--create-destination-table", "--on-error", on_error]
            .iter()
            .map(|s| s.to_string()),
    );
    let (mut running, _) = start_replicator(args).await?;
    exec(s, format!("INSERT INTO {ks}.t (pk, v) VALUES (1, 10)")).await?;
    wait_converged(&mut running, s, d, ks, dks, "t", Duration::from_secs(60)).await?;
    exec(d, format!("DROP TABLE {dks}.t")).await?;
    exec(s, format!("INSERT INTO {ks}.t (pk, v) VALUES (2, 20)")).await?;
    exec(s, format!("INSERT INTO {ks}.t (pk, v) VALUES (3, 30)")).await?;
    Ok(running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letter_keeps_failed_changes_and_goes_on() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let mut running = replicate_into_a_dropped_table(&pair, "dead-letter").await?;
    let (s, ks) = (&pair.s, &pair.ks);
    let letters = || async {
        let rows = s
            .query_unpaged(
                format!(
                    "SELECT columns, error, attempts FROM {ks}.cdc_replicator_checkpoints_dead_letters \
                     WHERE keyspace_name = ? AND table_name = 't'"
                ),
                (ks,),
            )
            .await?
            .into_rows_result()?;
        let rows: Vec<(std::collections::HashMap<String, String>, String, i32)> =
            rows.rows()?.collect::<Result<_, _>>()?;
        anyhow::Ok(rows)
    };
    wait_for("two dead letters", Duration::from_secs(90), || async {
        Ok(letters().await?.len() == 2)
    })
    .await?;
    let mut pks: Vec<String> = letters()
        .await?
        .iter()
        .map(|(columns, error, attempts)| {
            assert_eq!(*attempts, 4, "the first attempt and 3 retries");
            assert!(!error.is_empty());
            columns.get("pk").cloned().unwrap_or_default()
        })
        .collect();
    pks.sort();
    assert_eq!(pks, vec!["2", "3"]);
    running.check_running().await?;
    running.stop(Duration::from_secs(30)).await??;
    pair.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_exits_naming_the_change() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let running = replicate_into_a_dropped_table(&pair, "stop").await?;
    let err = running
        .join(Duration::from_secs(90))
        .await?
        .expect_err("a change that cannot be written stops the replicator");
    // With `stop`, writes are pipelined: the failure is reported by the write that failed
    // (here at the flush before a checkpoint), and no checkpoint passes it.
    let line = err.to_string();
    assert!(
        line.contains("unconfigured table t") && line.contains(&format!("{}.t", pair.ks)),
        "{line}"
    );
    pair.finish().await
}
