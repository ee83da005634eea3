//! `--metrics-addr`: the printer binary, run as a user runs it, serves the reader's metrics
//! as Prometheus text, read here over HTTP as `curl` would.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use scylla_cdc_test_utils::metrics_scrape::{LogLines, free_local_port, scrape_until, value_of};
use scylla_emulator::EmbeddedCluster;

/// Kills the child on every exit path of the test.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn printer_serves_its_metrics() -> anyhow::Result<()> {
    let cluster = EmbeddedCluster::builder().nodes(1).start().await?;
    let session = cluster.session().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            (),
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
            (),
        )
        .await?;
    // 20 rows in 10 changes: each batch writes two rows of one partition at one cdc$time.
    for pk in 0..10 {
        session
            .query_unpaged(
                format!(
                    "BEGIN UNLOGGED BATCH INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, 1, 1); \
                     INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, 2, 2); APPLY BATCH"
                ),
                (),
            )
            .await?;
    }
    let metrics = free_local_port()?;
    let child = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-printer"))
        .args([
            "--hosts",
            &cluster.contact_point().to_string(),
            "-k",
            "ks",
            "-t",
            "t",
            "--start",
            "-1h",
            "--safety-interval",
            "0",
            "--sleep-interval",
            "0.2",
            "--metrics-addr",
            &metrics.to_string(),
            "--format",
            "json",
            "--progress-interval",
            "0.2",
            "--max-rows-per-second",
            "100000",
        ])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut child = Killed(child);
    let log = LogLines::collect(child.0.stderr.take().expect("piped"));
    let labels = r#"keyspace="ks",table="t""#;
    let text = scrape_until(metrics, Duration::from_secs(60), |text| {
        value_of(text, "scylla_cdc_rows_total", labels) == Some(20.0)
    })
    .await?;
    assert_eq!(
        value_of(&text, "scylla_cdc_changes_total", labels),
        Some(10.0),
        "{text}"
    );
    assert!(
        value_of(&text, "scylla_cdc_windows_total", labels).is_some_and(|w| w >= 1.0),
        "{text}"
    );
    assert!(
        value_of(&text, "scylla_cdc_low_watermark_seconds", labels).is_some_and(|w| w > 1.7e9),
        "{text}"
    );
    assert!(
        text.contains("# TYPE scylla_cdc_rows_total counter"),
        "{text}"
    );
    // Its progress lines name the rows, the low watermark and the lag.
    let line = log
        .wait_for(Duration::from_secs(30), |l| {
            l.contains("progress: 20 rows printed") && l.contains("low watermark 20")
        })
        .await?;
    assert!(line.contains("(lag "), "{line}");
    cluster.shutdown().await;
    Ok(())
}
