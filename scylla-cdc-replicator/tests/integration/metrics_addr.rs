//! `--metrics-addr` and the progress lines: the replicator binary, run as a user runs it,
//! serves the reader's metrics as Prometheus text and its health (read here over HTTP as
//! `curl` would) and logs its lag and low watermark.

use std::process::{Command, Stdio};
use std::time::Duration;

use scylla_cdc_test_utils::metrics_scrape::{
    LogLines, free_local_port, health_until, scrape_until, value_of,
};

use crate::support::Pair;

#[tokio::test]
async fn replicator_serves_its_metrics_and_logs_its_watermark() -> anyhow::Result<()> {
    let p = Pair::start(1).await;
    p.on(
        &p.s,
        "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}",
    )
    .await;
    for pk in 0..25 {
        p.on(
            &p.s,
            &format!("INSERT INTO {{ks}}.t (pk, v) VALUES ({pk}, {pk})"),
        )
        .await;
    }
    let metrics = free_local_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-replicator"))
        .args(p.args("t"))
        .args([
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
    let labels = format!(r#"keyspace="{}",table="t""#, p.ks);
    let labels = labels.as_str();
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
    // Replicating: healthy, connected to the source.
    let health = health_until(metrics, Duration::from_secs(30), |code, body| {
        code == 200 && body.contains(r#""status":"ok""#)
    })
    .await;
    let _ = child.kill();
    let _ = child.wait();
    let text = scraped?;
    let progress = progress?;
    let (_, health) = health?;
    assert!(health.contains(r#""connected":true"#), "{health}");
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
    assert_eq!(p.count_on_destination("t").await, 25);
    p.source.shutdown().await;
    p.destination.shutdown().await;
    Ok(())
}
