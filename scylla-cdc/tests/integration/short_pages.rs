//! The log reader reads every row through the short and empty pages ScyllaDB answers with:
//! pages cut by `query_page_size_in_bytes` after a few large rows, and pages left empty by
//! `query_tombstone_page_limit` where the log holds expired rows.
//!
//! Embedded cluster only: the page limits are lowered on the cluster.

use std::time::Duration;

use chrono::Utc;
use scylla::client::session::Session;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::unprepared::Statement;
use scylla_cdc_test_utils::setup_tracing;
use scylla_emulator::EmbeddedCluster;

use crate::support::{Collected, new_cdc_keyspace, reader_of, wait_for};

/// Bytes of each live row's blob: two rows take a page past the cluster's 5,000 bytes.
const BLOB: usize = 3000;

/// Writes to `ks.t` (one partition, so one stream): rounds of 12 writes whose log rows expire
/// at once (cdc ttl 1 s) and 6 live writes of `BLOB` bytes; returns the live `ck`s in write
/// order once the expired rows are gone. The log keeps expired rows as tombstones (its
/// `gc_grace_seconds` raised from 0), so a read of the log meets 12 tombstones between
/// every 6 live rows.
async fn log_with_expired_and_large_rows(s: &Session, ks: &str) -> anyhow::Result<Vec<i32>> {
    let q = |cql: String| async move { s.query_unpaged(cql, ()).await.map(|_| ()) };
    q(format!(
        "CREATE TABLE {ks}.t (pk int, ck int, v blob, PRIMARY KEY (pk, ck)) \
         WITH cdc = {{'enabled': true, 'ttl': 1}}"
    ))
    .await?;
    let mut live = Vec::new();
    for round in 0..3 {
        q(format!(
            "ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'ttl': 1}}"
        ))
        .await?;
        for i in 0..12 {
            q(format!(
                "INSERT INTO {ks}.t (pk, ck, v) VALUES (0, {}, 0x00)",
                1000 + round * 100 + i
            ))
            .await?;
        }
        q(format!(
            "ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'ttl': 0}}"
        ))
        .await?;
        let insert = s
            .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (0, ?, ?)"))
            .await?;
        for i in 0..6 {
            let ck = round * 100 + i;
            s.execute_unpaged(&insert, (ck, vec![7u8; BLOB])).await?;
            live.push(ck);
        }
    }
    // After the last schema change of the base table: rewriting the log resets it to 0.
    q(format!(
        "ALTER TABLE {ks}.t_scylla_cdc_log WITH gc_grace_seconds = 864000"
    ))
    .await?;
    let count = format!("SELECT ck FROM {ks}.t_scylla_cdc_log");
    wait_for(
        Duration::from_secs(10),
        "the log rows to expire",
        || async {
            s.query_unpaged(count.clone(), ())
                .await
                .ok()
                .and_then(|r| r.into_rows_result().ok())
                .is_some_and(|r| r.rows_num() == live.len())
        },
    )
    .await;
    Ok(live)
}

/// The number of rows of each page of a paged read of the whole log.
async fn log_page_sizes(s: &Session, ks: &str) -> anyhow::Result<Vec<usize>> {
    let mut statement = Statement::new(format!("SELECT * FROM {ks}.t_scylla_cdc_log"));
    statement.set_page_size(5000);
    let mut state = PagingState::start();
    let mut sizes = Vec::new();
    loop {
        let (result, next) = s.query_single_page(statement.clone(), (), state).await?;
        sizes.push(result.into_rows_result()?.rows_num());
        match next {
            PagingStateResponse::HasMorePages { state: st } => state = st,
            PagingStateResponse::NoMorePages => return Ok(sizes),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_arrives_through_short_and_empty_pages() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .query_page_size_in_bytes(5000)
        .query_tombstone_page_limit(5)
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = new_cdc_keyspace(&session, 1).await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let live = log_with_expired_and_large_rows(&session, &ks).await?;

    // The log does answer with short and empty pages.
    let sizes = log_page_sizes(&session, &ks).await?;
    assert!(sizes.contains(&0), "no empty page: {sizes:?}");
    assert!(
        sizes.iter().all(|n| *n <= 2),
        "a page past the limit: {sizes:?}"
    );
    assert_eq!(sizes.iter().sum::<usize>(), live.len());

    let collected = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        // One window over the whole log: its pages are the short and empty ones above.
        .window_size(Duration::from_secs(600))
        .build()
        .await?;
    wait_for(Duration::from_secs(30), "every live log row", || async {
        collected.len() >= live.len()
    })
    .await;
    reader.stop();
    handle.await?;
    let got: Vec<i32> = collected
        .snapshot()
        .iter()
        .map(|c| c.int("ck").expect("ck"))
        .collect();
    assert_eq!(got, live, "every row once, in order");
    cluster.shutdown().await;
    Ok(())
}
