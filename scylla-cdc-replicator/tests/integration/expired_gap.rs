//! A `--start` older than the source table's CDC `ttl` makes the replicator say, on a WARN
//! line, that changes were lost to the log's TTL (the library's expired-gap report).

use std::process::Stdio;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use scylla_cdc_test_utils::strip_ansi;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{Pair, replicator, terminate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_older_than_the_ttl_prints_a_warning() {
    let p = Pair::start(1).await;
    let created = Utc::now();
    p.on(
        &p.s,
        "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'ttl': 1}",
    )
    .await;
    // Until `now - ttl - safety interval` (1 s + 1 s) passes the table's creation (and the
    // cluster's generation), a start before it loses nothing.
    let past = created + TimeDelta::milliseconds(2_500);
    while Utc::now() < past {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut child = replicator(&p.args("t"))
        .args(["--create-destination-table"])
        .args(["--start", "-10m", "--no-checkpoints", "--window-size", "1"])
        .args(["--safety-interval", "1", "--sleep-interval", "0.1"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
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
    let status = terminate(&mut child).await;
    let warning = warning
        .unwrap_or_else(|_| panic!("no warning in 60 s:\n{}", seen.join("\n")))
        .unwrap_or_else(|| panic!("no warning before the end:\n{}", seen.join("\n")));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains(&format!("{}.t", p.ks)), "{warning}");
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
