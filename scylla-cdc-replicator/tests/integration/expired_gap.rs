//! A `--start` older than the source table's CDC `ttl` makes the replicator say, on a WARN
//! line, that changes were lost to the log's TTL (the library's expired-gap report).

use std::process::Stdio;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use scylla_cdc_test_utils::unique_keyspace_name;
use scylla_emulator::EmbeddedCluster;
use tokio::io::{AsyncBufReadExt, BufReader};

/// `text` without its ANSI color sequences (`ESC [ ... m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_older_than_the_ttl_prints_a_warning() {
    let source = EmbeddedCluster::builder().start().await.expect("source");
    let destination = EmbeddedCluster::builder()
        .start()
        .await
        .expect("destination");
    let (s, d) = (
        source.session().await.expect("source session"),
        destination.session().await.expect("destination session"),
    );
    let ks = unique_keyspace_name();
    let keyspace = format!(
        "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
    );
    s.query_unpaged(keyspace.clone(), ()).await.expect("ks");
    d.query_unpaged(keyspace, ()).await.expect("ks");
    let created = Utc::now();
    s.query_unpaged(
        format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true, 'ttl': 1}}"
        ),
        (),
    )
    .await
    .expect("table");
    // Until `now - ttl - safety interval` (1 s + 1 s) passes the table's creation (and the
    // cluster's generation), a start before it loses nothing.
    let past = created + TimeDelta::milliseconds(2_500);
    while Utc::now() < past {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-replicator"))
        .args(["--source", &source.contact_point().to_string()])
        .args(["--destination", &destination.contact_point().to_string()])
        .args([
            "--keyspace",
            &ks,
            "--table",
            "t",
            "--create-destination-table",
        ])
        .args(["--start", "-10m", "--no-checkpoints", "--window-size", "1"])
        .args(["--safety-interval", "1", "--sleep-interval", "0.1"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the replicator");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut seen = Vec::new();
    let warning = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("stderr") {
            let line = strip_ansi(&line);
            if line.contains("changes were lost to the CDC log's TTL") {
                return Some(line);
            }
            seen.push(line);
        }
        None
    })
    .await;
    // A clean stop, as an operator's SIGTERM.
    let pid = child.id().expect("pid").to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("stops in 30 s")
        .expect("status");
    let warning = warning
        .unwrap_or_else(|_| panic!("no warning in 60 s:\n{}", seen.join("\n")))
        .unwrap_or_else(|| panic!("no warning before the end:\n{}", seen.join("\n")));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains(&format!("{ks}.t")), "{warning}");
    assert!(warning.contains("ttl_seconds=1"), "{warning}");
    // The default log filter shows the replicator's own INFO lines too (`scylla=off` for the
    // driver must not hide targets that merely start with "scylla").
    assert!(
        seen.iter()
            .any(|l| l.contains("INFO") && l.contains("creating the destination schema")),
        "no INFO line of the replicator before the warning:\n{}",
        seen.join("\n")
    );
    assert_eq!(status.code(), Some(0));
}
