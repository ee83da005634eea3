//! The printer and the replicator read every CDC log row through the short and empty pages
//! ScyllaDB answers with: pages cut by `query_page_size_in_bytes` after a few large rows,
//! and pages left empty by `query_tombstone_page_limit` where the log holds expired rows.
//!
//! Embedded source cluster only: its page limits are lowered (5,000 bytes, 5 tombstones).

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use scylla::client::session::Session;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::unprepared::Statement;
use scylla_cdc_test_utils::{TestCluster, embedded_only, setup_tracing};
use scylla_emulator::EmbeddedCluster;
use serde_json::Value;

use crate::support::*;

/// Bytes of each live row's blob: two log rows take a page past 5,000 bytes.
const BLOB: usize = 3000;

/// A source cluster whose pages are cut at 5,000 bytes and 5 tombstones.
async fn small_pages_cluster() -> anyhow::Result<TestCluster> {
    Ok(TestCluster::start(
        EmbeddedCluster::builder()
            .query_page_size_in_bytes(5000)
            .query_tombstone_page_limit(5)
            .generation_delay(Duration::from_millis(500)),
    )
    .await?)
}

/// Writes to `ks.t` (one partition, one stream): rounds of 12 writes that expire at once,
/// with their log rows (TTL 1 s, cdc ttl 1 s), and 6 live writes of `BLOB` bytes. Returns
/// the live `ck`s in write order once the expired rows are gone; the log keeps those as
/// tombstones (its `gc_grace_seconds` is raised), 12 between every 6 live rows.
async fn log_with_expired_and_large_rows(s: &Session, ks: &str) -> anyhow::Result<Vec<i32>> {
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v blob, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'ttl': 1}}"
        ),
    )
    .await?;
    let mut live = Vec::new();
    for round in 0..3 {
        exec(
            s,
            format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'ttl': 1}}"),
        )
        .await?;
        for i in 0..12 {
            exec(
                s,
                format!(
                    "INSERT INTO {ks}.t (pk, ck, v) VALUES (0, {}, 0x00) USING TTL 1",
                    1000 + round * 100 + i
                ),
            )
            .await?;
        }
        exec(
            s,
            format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'ttl': 0}}"),
        )
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
    // After the last schema change of the base table, which rewrites the log's options.
    exec(
        s,
        format!("ALTER TABLE {ks}.t_scylla_cdc_log WITH gc_grace_seconds = 864000"),
    )
    .await?;
    let count = format!("SELECT ck FROM {ks}.t_scylla_cdc_log");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let n = s
            .query_unpaged(count.as_str(), ())
            .await?
            .into_rows_result()?
            .rows_num();
        if n == live.len() {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the log rows did not expire"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A paged read of the log (the driver's default page size, 5,000 rows) does meet empty
    // pages and pages of at most two rows.
    let mut statement = Statement::new(format!("SELECT * FROM {ks}.t_scylla_cdc_log"));
    statement.set_page_size(5000);
    let mut state = PagingState::start();
    let mut sizes = Vec::new();
    loop {
        let (result, next) = s.query_single_page(statement.clone(), (), state).await?;
        sizes.push(result.into_rows_result()?.rows_num());
        match next {
            PagingStateResponse::HasMorePages { state: st } => state = st,
            PagingStateResponse::NoMorePages => break,
        }
    }
    anyhow::ensure!(
        sizes.contains(&0) && sizes.iter().all(|n| *n <= 2),
        "pages of {sizes:?} rows: not the short and empty ones expected"
    );
    Ok(live)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_prints_every_row_through_short_and_empty_pages() -> anyhow::Result<()> {
    setup_tracing();
    if !embedded_only(
        "printer_prints_every_row_through_short_and_empty_pages",
        "lowers the page limits",
    ) {
        return Ok(());
    }
    let c = small_pages_cluster().await?;
    let s = c.session().await?;
    let ks = scylla_cdc_test_utils::unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let live = log_with_expired_and_large_rows(&s, &ks).await?;
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let time = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Micros, true);
    let args: Vec<String> = [
        "--hosts",
        &hosts(&c),
        "--keyspace",
        &ks,
        "--table",
        "t",
        "--start",
        &time(start),
        "--end",
        &time(end),
        // One window over the whole log: it is read through the short and empty pages.
        "--window-size",
        "600",
        "--safety-interval",
        "1",
        "--sleep-interval",
        "0.1",
        "--format",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (printer, out) = spawn_printer(args);
    assert_eq!(printer.join(Duration::from_secs(60)).await?, Ok(()));
    let printed: Vec<i32> = out
        .contents()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            v["columns"]["ck"].as_i64().expect("ck") as i32
        })
        .collect();
    assert_eq!(printed, live, "every live row once, in order");
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicator_replicates_every_row_through_short_and_empty_pages() -> anyhow::Result<()> {
    setup_tracing();
    if !embedded_only(
        "replicator_replicates_every_row_through_short_and_empty_pages",
        "lowers the page limits",
    ) {
        return Ok(());
    }
    let source = small_pages_cluster().await?;
    let destination = second_cluster(1).await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = scylla_cdc_test_utils::unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    create_keyspace(&d, &ks, 1).await?;
    let live = log_with_expired_and_large_rows(&s, &ks).await?;
    let mut args = replicator_args(&hosts(&source), &hosts(&destination), &ks, "t");
    // One window over the whole log: it is read through the short and empty pages.
    let at = args
        .iter()
        .position(|a| a == "--window-size")
        .expect("a window size");
    args[at + 1] = "600".into();
    args.extend(
        ["--create-destination-table", "--start=-1m"]
            .iter()
            .map(|a| a.to_string()),
    );
    let mut replicator = spawn_replicator(args);
    wait_converged(
        &mut replicator,
        &s,
        &d,
        &ks,
        &ks,
        "t",
        Duration::from_secs(60),
    )
    .await?;
    let rows = d
        .query_unpaged(format!("SELECT ck, v FROM {ks}.t WHERE pk = 0"), ())
        .await?
        .into_rows_result()?;
    let got: Vec<(i32, usize)> = rows
        .rows::<(i32, Vec<u8>)>()?
        .map(|r| r.map(|(ck, v)| (ck, v.len())))
        .collect::<Result<_, _>>()?;
    let mut expected: Vec<(i32, usize)> = live.iter().map(|ck| (*ck, BLOB)).collect();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    drop_keyspace(&s, &ks).await?;
    drop_keyspace(&d, &ks).await?;
    source.shutdown().await;
    destination.shutdown().await;
    Ok(())
}
