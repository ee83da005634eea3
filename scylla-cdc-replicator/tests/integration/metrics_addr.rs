//! `--metrics-addr` and the progress lines: the replicator binary, run as a user runs it,
//! serves the reader's metrics as Prometheus text (read here over HTTP as `curl` would) and
//! logs its lag and low watermark.

use std::process::{Command, Stdio};
use std::time::Duration;

use scylla_cdc_test_utils::metrics_scrape::{LogLines, free_local_port, scrape_until, value_of};
use scylla_emulator::EmbeddedCluster;

const KEYSPACE: &str = "CREATE KEYSPACE ks WITH replication = \
    {'class': 'SimpleStrategy', 'replication_factor': 1}";

#[tokio::test]
async fn replicator_serves_its_metrics_and_logs_its_watermark() -> anyhow::Result<()> {
    let source = EmbeddedCluster::builder().nodes(1).start().await?;
    let destination = EmbeddedCluster::builder().nodes(1).start().await?;
    let (src, dst) = (source.session().await?, destination.session().await?);
    src.query_unpaged(KEYSPACE, ()).await?;
    dst.query_unpaged(KEYSPACE, ()).await?;
    src.query_unpaged(
        "CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}",
        (),
    )
    .await?;
    for pk in 0..25 {
        src.query_unpaged(format!("INSERT INTO ks.t (pk, v) VALUES ({pk}, {pk})"), ())
            .await?;
    }
    let metrics = free_local_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-replicator"))
        .args([
            "--source",
            &source.contact_point().to_string(),
            "--destination",
            &destination.contact_point().to_string(),
            "-k",
            "ks",
            "-t",
            "t",
            "--start",
            "-1h",
            "--create-destination-table",
            "--safety-interval",
            "0",
            "--sleep-interval",
            "0.2",
            "--progress-interval",
            "0.2",
            "--metrics-addr",
            &metrics.to_string(),
        ])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let log = LogLines::collect(child.stderr.take().expect("piped"));
    let labels = r#"keyspace="ks",table="t""#;
    let scraped = scrape_until(metrics, Duration::from_secs(60), |text| {
        value_of(text, "scylla_cdc_rows_total", labels) == Some(25.0)
            && value_of(text, "scylla_cdc_lag_seconds", labels).is_some()
    })
    .await;
    // A progress line after everything was applied names the lag and the watermark.
    let progress = match &scraped {
        Ok(_) => {
            log.wait_for(Duration::from_secs(30), |l| {
                l.contains("progress: 25 changes applied") && l.contains("low watermark 20")
            })
            .await
        }
        Err(_) => Ok(String::new()),
    };
    let _ = child.kill();
    let _ = child.wait();
    let text = scraped?;
    let progress = progress?;
    assert!(progress.contains("lag"), "{progress}");
    assert!(progress.contains("watermark"), "{progress}");
    assert_eq!(
        value_of(&text, "scylla_cdc_changes_total", labels),
        Some(25.0),
        "{text}"
    );
    assert!(
        value_of(&text, "scylla_cdc_streams", labels).is_some_and(|s| s >= 1.0),
        "{text}"
    );
    let rows = dst
        .query_unpaged("SELECT count(*) FROM ks.t", ())
        .await?
        .into_rows_result()?
        .single_row::<(i64,)>()?
        .0;
    assert_eq!(rows, 25);
    source.shutdown().await;
    destination.shutdown().await;
    Ok(())
}
