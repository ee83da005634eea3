//! The table's schema changes while a reader runs: columns added and dropped, CDC options
//! changed. Every change is delivered once, in order, each row with the columns of its own
//! log row.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set.

use std::time::Duration;

use chrono::Utc;
use scylla::value::CqlValue;
use scylla_cdc::OperationType;
use scylla_emulator::EmbeddedCluster;

use crate::support::{Collected, cluster_and_keyspace, drop_keyspace, exec, reader_of, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn columns_added_and_dropped_while_reading() -> anyhow::Result<()> {
    let (_cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await?;
    exec(
        &session,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
         WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let collected = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        .build()
        .await?;
    exec(
        &session,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 10)"),
    )
    .await?;
    wait_for(Duration::from_secs(30), "the first row", || async {
        collected.len() >= 1
    })
    .await;
    exec(&session, format!("ALTER TABLE {ks}.t ADD w text")).await?;
    exec(
        &session,
        format!("INSERT INTO {ks}.t (pk, ck, v, w) VALUES (1, 2, 20, 'two')"),
    )
    .await?;
    wait_for(Duration::from_secs(30), "the row with w", || async {
        collected.len() >= 2
    })
    .await;
    exec(&session, format!("ALTER TABLE {ks}.t DROP v")).await?;
    exec(
        &session,
        format!("INSERT INTO {ks}.t (pk, ck, w) VALUES (1, 3, 'three')"),
    )
    .await?;
    exec(
        &session,
        format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'preimage': true}}"),
    )
    .await?;
    exec(
        &session,
        format!("UPDATE {ks}.t SET w = 'four' WHERE pk = 1 AND ck = 3"),
    )
    .await?;
    // 1 + 1 + 1 + (pre-image + update) = 5 rows.
    wait_for(Duration::from_secs(30), "every row", || async {
        collected.len() >= 5
    })
    .await;
    reader.stop();
    handle.await?;
    let all = collected.snapshot();
    assert_eq!(all.len(), 5, "{all:#?}");
    let text = |s: &str| CqlValue::Text(s.into());
    assert_eq!(all[0].int("v"), Some(10));
    assert!(!all[0].values.contains_key("w"), "{:?}", all[0]);
    assert_eq!(
        (all[1].int("v"), all[1].values.get("w")),
        (Some(20), Some(&text("two")))
    );
    assert_eq!(all[2].values.get("w"), Some(&text("three")));
    assert!(!all[2].values.contains_key("v"), "{:?}", all[2]);
    assert_eq!(all[3].op, OperationType::PreImage);
    assert_eq!(all[3].values.get("w"), Some(&text("three")));
    assert_eq!(all[4].op, OperationType::RowUpdate);
    assert_eq!(all[4].values.get("w"), Some(&text("four")));
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_cdc_ends_the_reader_after_everything_logged() -> anyhow::Result<()> {
    let (_cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await?;
    exec(
        &session,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let collected = Collected::default();
    let (_reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(Utc::now() - chrono::TimeDelta::seconds(1))
        .build()
        .await?;
    for pk in 0..3 {
        exec(
            &session,
            format!("INSERT INTO {ks}.t (pk, v) VALUES ({pk}, {pk})"),
        )
        .await?;
    }
    // Disabled right after the writes, before the reader can have read them all (they are
    // inside its safety interval): they must still be delivered.
    exec(
        &session,
        format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': false}}"),
    )
    .await?;
    exec(
        &session,
        format!("INSERT INTO {ks}.t (pk, v) VALUES (9, 9)"),
    )
    .await?;
    let result = tokio::time::timeout(Duration::from_secs(60), handle).await?;
    match result {
        Err(scylla_cdc::CDCError::CdcDisabled {
            keyspace, table, ..
        }) => assert_eq!((keyspace.as_str(), table.as_str()), (ks.as_str(), "t")),
        other => panic!("expected CdcDisabled, got {other:?}"),
    }
    let mut pks: Vec<i32> = collected
        .snapshot()
        .iter()
        .filter_map(|c| c.int("pk"))
        .collect();
    pks.sort_unstable();
    assert_eq!(
        pks,
        [0, 1, 2],
        "every change logged before the disable, once"
    );
    drop_keyspace(&session, &ks).await?;
    Ok(())
}
