//! The source table's schema changes while the replicator runs: an added column is added on
//! the destination and its values replicated; a dropped column is refused with a clear
//! message and no change lost.
//!
//! Runs against the embedded clusters, or the real Scylla of `SCYLLA_URI` (and `SCYLLA_URI2`)
//! when set.

use std::time::Duration;

use scylla_cdc_test_utils::setup_tracing;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_column_is_replicated() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks, dks) = (&pair.s, &pair.d, &pair.ks, &pair.dest_ks);
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let mut args = pair.replicator_args("t");
    args.push("--create-destination-table".into());
    let (mut running, _) = start_replicator(args).await?;
    exec(
        s,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 10)"),
    )
    .await?;
    wait_converged(&mut running, s, d, ks, dks, "t", Duration::from_secs(60)).await?;
    exec(s, format!("ALTER TABLE {ks}.t ADD w text")).await?;
    exec(
        s,
        format!("INSERT INTO {ks}.t (pk, ck, v, w) VALUES (1, 2, 20, 'two')"),
    )
    .await?;
    exec(
        s,
        format!("UPDATE {ks}.t SET w = 'one' WHERE pk = 1 AND ck = 1"),
    )
    .await?;
    wait_converged(&mut running, s, d, ks, dks, "t", Duration::from_secs(60)).await?;
    // A user type and a static column added later, in one statement each.
    exec(s, format!("CREATE TYPE {ks}.pt (x int, y int)")).await?;
    exec(s, format!("ALTER TABLE {ks}.t ADD p frozen<pt>")).await?;
    exec(s, format!("ALTER TABLE {ks}.t ADD st int STATIC")).await?;
    exec(
        s,
        format!("UPDATE {ks}.t SET p = {{x: 1, y: 2}}, st = 7 WHERE pk = 1 AND ck = 2"),
    )
    .await?;
    wait_converged(&mut running, s, d, ks, dks, "t", Duration::from_secs(60)).await?;
    running.stop(Duration::from_secs(30)).await??;
    pair.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_column_stops_with_the_fix_and_loses_nothing() -> anyhow::Result<()> {
    setup_tracing();
    let pair = Pair::start(1).await?;
    let (s, d, ks, dks) = (&pair.s, &pair.d, &pair.ks, &pair.dest_ks);
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int, w int) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let mut args = pair.replicator_args("t");
    args.push("--create-destination-table".into());
    let (mut running, _) = start_replicator(args.clone()).await?;
    exec(s, format!("INSERT INTO {ks}.t (pk, v, w) VALUES (1, 1, 1)")).await?;
    wait_converged(&mut running, s, d, ks, dks, "t", Duration::from_secs(60)).await?;
    exec(s, format!("ALTER TABLE {ks}.t DROP w")).await?;
    exec(s, format!("INSERT INTO {ks}.t (pk, v) VALUES (2, 2)")).await?;
    let err = running
        .join(Duration::from_secs(60))
        .await?
        .expect_err("a dropped column stops the replicator");
    let line = err.to_string();
    assert!(
        line.contains("column(s) w of") && line.contains("--allow-extra-columns"),
        "{line}"
    );
    // Restarted with the extra column kept, it resumes from its checkpoint: row 2 arrives.
    args.push("--allow-extra-columns".into());
    let (running, _) = start_replicator(args).await?;
    let count = || async {
        let rows = d
            .query_unpaged(format!("SELECT pk, v FROM {dks}.t WHERE pk = 2"), ())
            .await?
            .into_rows_result()?
            .rows_num();
        anyhow::Ok(rows == 1)
    };
    wait_for("row 2 on the destination", Duration::from_secs(60), count).await?;
    running.stop(Duration::from_secs(30)).await??;
    pair.finish().await
}
