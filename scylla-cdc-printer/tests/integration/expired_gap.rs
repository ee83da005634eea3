//! A `--start` older than the table's CDC `ttl` makes the printer say, on a WARN line, that
//! changes were lost to the log's TTL (the library's expired-gap report).

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use scylla_cdc_test_utils::{strip_ansi, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;

use crate::support::{printer, rfc3339};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_older_than_the_ttl_prints_a_warning() {
    let cluster = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = cluster.session().await.expect("session");
    let ks = unique_keyspace_name();
    let created = Utc::now();
    for statement in [
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ),
        format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true, 'ttl': 1}}"
        ),
    ] {
        session.query_unpaged(statement, ()).await.expect("setup");
    }
    // Until `now - ttl - safety interval` (1 s + 1 s) passes the table's creation (and the
    // cluster's generation), a start before it loses nothing.
    let past = created + TimeDelta::milliseconds(2_500);
    while Utc::now() < past {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let start = rfc3339(Utc::now() - TimeDelta::seconds(600));
    let end = rfc3339(Utc::now() + TimeDelta::milliseconds(100));
    let host = cluster.contact_point().to_string();
    let output = printer(&["--hosts", &host, "-k", &ks, "-t", "t", "--format", "json"])
        .args(["--start", &start, "--end", &end, "--window-size", "1"])
        .args(["--safety-interval", "1", "--sleep-interval", "0.1"])
        .env_remove("RUST_LOG")
        .env_remove("SCYLLA_USER")
        .env_remove("SCYLLA_PASSWORD")
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("the printer did not finish in 60 s")
        .expect("run the printer");
    let stderr = strip_ansi(&String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let warning = stderr
        .lines()
        .find(|l| l.contains("changes were lost to the CDC log's TTL"))
        .unwrap_or_else(|| panic!("no expired-gap warning in:\n{stderr}"));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains(&format!("{ks}.t")), "{warning}");
    assert!(warning.contains("ttl_seconds=1"), "{warning}");
}
