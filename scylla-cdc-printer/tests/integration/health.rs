//! `/health` and the counters at 0 on `--metrics-addr`: the printer binary, run as a user
//! runs it, read over HTTP as a load balancer or a Prometheus server would.
//!
//! The health test's cluster is started after the printer, at an address the printer was
//! given: it uses the loopback range 127.0.160.*.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use scylla_cdc_test_utils::metrics_scrape::{
    LogLines, free_local_port, health_until, scrape_until, value_of,
};
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::{EmbeddedCluster, Preload};
use serde_json::Value;

/// Kills the child on every exit path of the test.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the printer binary reading `ks.t` at `hosts`, serving `metrics`, with `extra`
/// arguments; its stderr is collected.
fn printer(hosts: &str, ks: &str, metrics: SocketAddr, extra: &[&str]) -> (Killed, LogLines) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scylla-cdc-printer"))
        .args([
            "--hosts",
            hosts,
            "-k",
            ks,
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
        ])
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the printer starts");
    let log = LogLines::collect(child.stderr.take().expect("piped"));
    (Killed(child), log)
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_says_whether_the_printer_reads() -> anyhow::Result<()> {
    if !embedded_only(
        "health_says_whether_the_printer_reads",
        "starts and shuts down its own cluster",
    ) {
        return Ok(());
    }
    setup_tracing();
    // The cluster's address and a port free on it, given to the printer before the cluster
    // exists.
    let ip = Ipv4Addr::new(127, 0, 160, 1);
    let port = std::net::TcpListener::bind((ip, 0))?.local_addr()?.port();
    let metrics = free_local_port()?;
    let (_printer, log) = printer(
        &format!("{ip}:{port}"),
        "health_ks",
        metrics,
        // Keep trying to reach the cluster while this test starts it.
        &["--connect-timeout", "0"],
    );

    // Before the first contact: 503, not connected.
    let (code, body) = health_until(metrics, Duration::from_secs(30), |code, _| code != 0).await?;
    let health = json(&body);
    assert_eq!(code, 503, "{body}");
    assert_eq!(health["status"], "starting", "{body}");
    assert_eq!(health["connected"], false, "{body}");
    assert!(
        health["reason"]
            .as_str()
            .unwrap_or("")
            .contains("not connected"),
        "{body}"
    );

    // The cluster comes up with its table filled: 200 once the printer reads.
    let cluster = EmbeddedCluster::builder()
        .address(ip)
        .port(port)
        .preload(Preload::new("health_ks", "t", 2, 5))
        .start()
        .await?;
    // A first 200 may come before the first window ended (no low watermark yet): wait for it.
    let (_, body) = health_until(metrics, Duration::from_secs(60), |code, body| {
        code == 200 && json(body)["low_watermark"].is_string()
    })
    .await?;
    let health = json(&body);
    assert_eq!(health["status"], "ok", "{body}");
    assert_eq!(health["connected"], true, "{body}");
    assert!(health["low_watermark"].is_string(), "{body}");
    let since = health["seconds_since_progress"].as_f64().expect(&body);
    let bound = health["progress_bound_seconds"].as_f64().expect(&body);
    // The defaults' bound with --sleep-interval 0.2: a minute plus the sleep interval.
    assert!((bound - 60.2).abs() < 1e-9, "{body}");
    assert!(since < bound, "{body}");
    assert!(health.get("reason").is_none(), "{body}");
    // It keeps reading: the rows are printed and /health stays ok.
    let labels = r#"keyspace="health_ks",table="t""#;
    scrape_until(metrics, Duration::from_secs(30), |text| {
        value_of(text, "scylla_cdc_rows_total", labels) == Some(10.0)
    })
    .await?;
    let (code, body) = scylla_cdc_test_utils::metrics_scrape::get(metrics, "/health").await?;
    assert_eq!((code, json(&body)["status"].clone()), (200, "ok".into()));

    // The cluster goes away: 503, disconnected, while the printer retries.
    cluster.shutdown().await;
    let (_, body) = health_until(metrics, Duration::from_secs(30), |code, _| code == 503).await?;
    let health = json(&body);
    assert_eq!(health["status"], "disconnected", "{body}");
    assert_eq!(health["connected"], false, "{body}");
    assert!(
        health["reason"]
            .as_str()
            .unwrap_or("")
            .contains("connection"),
        "{body}"
    );
    // What it read is still reported.
    assert!(health["low_watermark"].is_string(), "{body}");
    assert!(
        log.all().iter().all(|l| !l.contains("panicked")),
        "{:?}",
        log.all()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_are_exported_at_zero_from_the_start() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = EmbeddedCluster::builder().nodes(1).start().await?;
    let session = cluster.session().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE zero_ks WITH replication = {'class': 'SimpleStrategy', \
             'replication_factor': 1}",
            (),
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE zero_ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true}",
            (),
        )
        .await?;
    let metrics = free_local_port()?;
    let (_printer, _log) = printer(
        &cluster.contact_point().to_string(),
        "zero_ks",
        metrics,
        &[],
    );
    let labels = r#"keyspace="zero_ks",table="t""#;
    // As soon as the reader is built: nothing has happened, and every counter says 0.
    let text = scrape_until(metrics, Duration::from_secs(60), |text| {
        value_of(text, "scylla_cdc_rows_total", labels).is_some()
    })
    .await?;
    for kind in [
        "timeout",
        "overloaded",
        "unavailable",
        "connection",
        "replica_failure",
        "prepare",
        "checkpoint",
        "other",
    ] {
        assert_eq!(
            value_of(
                &text,
                "scylla_cdc_retries_total",
                &format!(r#"{labels},kind="{kind}""#)
            ),
            Some(0.0),
            "retries of kind {kind}:\n{text}"
        );
    }
    for outcome in ["stop", "retry", "skip", "dead_letter"] {
        assert_eq!(
            value_of(
                &text,
                "scylla_cdc_consumer_errors_total",
                &format!(r#"{labels},outcome="{outcome}""#)
            ),
            Some(0.0),
            "consumer errors {outcome}:\n{text}"
        );
    }
    for counter in [
        "scylla_cdc_rows_total",
        "scylla_cdc_changes_total",
        "scylla_cdc_generation_switches_total",
        "scylla_cdc_late_rows_total",
    ] {
        assert_eq!(
            value_of(&text, counter, labels),
            Some(0.0),
            "{counter}:\n{text}"
        );
    }
    assert_eq!(
        value_of(&text, "scylla_cdc_expired_gap_seconds", labels),
        Some(0.0),
        "{text}"
    );
    // Described, so that Prometheus shows what each one is.
    assert!(text.contains("# HELP scylla_cdc_retries_total "), "{text}");
    assert!(
        text.contains("# TYPE scylla_cdc_retries_total counter"),
        "{text}"
    );
    cluster.shutdown().await;
    Ok(())
}
