//! The replicator binary reads each side's credentials from its own environment variables
//! (`SCYLLA_SOURCE_USER` / `SCYLLA_SOURCE_PASSWORD`, `SCYLLA_DESTINATION_*`) or its own
//! `--*-password-file`, replicates over TLS on both sides, and the passwords appear in no
//! line it writes with every log level on (`RUST_LOG=trace`), progress lines included.

use std::process::Stdio;
use std::time::{Duration, Instant};

use scylla_emulator::{ClusterBuilder, EmbeddedCluster, TestCa};
use tokio::io::AsyncReadExt;

use crate::support::{Pair, replicator, terminate};

const SOURCE_USER: &str = "source_user";
const SOURCE_PASSWORD: &str = "S0urce-secret-81ab";
const DESTINATION_USER: &str = "destination_user";
const DESTINATION_PASSWORD: &str = "Dest1nation-secret-2f9c";

/// A cluster with TLS certificates of `ca`, requiring `user`'s password.
fn tls_cluster(ca: &TestCa, user: &str, password: &str) -> ClusterBuilder {
    EmbeddedCluster::builder()
        .credentials(user, password)
        .tls_signed_by(ca, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sides_credentials_from_env_or_file_never_printed() {
    let ca = TestCa::new("replicator credentials CA").expect("CA");
    let p = Pair::of(
        tls_cluster(&ca, SOURCE_USER, SOURCE_PASSWORD),
        tls_cluster(&ca, DESTINATION_USER, DESTINATION_PASSWORD),
    )
    .await;
    p.on(
        &p.s,
        "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v text) WITH cdc = {'enabled': true}",
    )
    .await;

    let dir = std::env::temp_dir().join(format!("replicator-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).expect("ca");
    let password_file = dir.join("destination-password");
    std::fs::write(&password_file, format!("{DESTINATION_PASSWORD}\n")).expect("file");

    // The source's credentials from the environment, the destination's from a file (the
    // destination user from its environment variable).
    let mut child = replicator(&[
        "--source",
        &p.source.tls_contact_point().expect("tls").to_string(),
    ])
    .args([
        "--destination",
        &p.destination.tls_contact_point().expect("tls").to_string(),
    ])
    .args([
        "--keyspace",
        &p.ks,
        "--table",
        "t",
        "--create-destination-table",
    ])
    .args([
        "--window-size",
        "1",
        "--safety-interval",
        "1",
        "--sleep-interval",
        "0.1",
    ])
    .args(["--checkpoint-interval", "0", "--progress-interval", "0.5"])
    .arg("--source-tls-ca-file")
    .arg(&ca_file)
    .arg("--destination-tls-ca-file")
    .arg(&ca_file)
    .arg("--destination-password-file")
    .arg(&password_file)
    .env("SCYLLA_SOURCE_USER", SOURCE_USER)
    .env("SCYLLA_SOURCE_PASSWORD", SOURCE_PASSWORD)
    .env("SCYLLA_DESTINATION_USER", DESTINATION_USER)
    .env_remove("SCYLLA_DESTINATION_PASSWORD")
    .env("RUST_LOG", "trace")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start the replicator");
    // Drain the pipes while it runs (a full pipe would block its logging).
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text).await;
        text
    });
    let err_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });

    for pk in 0..10 {
        p.on(
            &p.s,
            &format!("INSERT INTO {{ks}}.t (pk, v) VALUES ({pk}, 'v')"),
        )
        .await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.count_on_destination("t").await != 10 {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!(
                "the replicator ended ({status}): {}",
                err_task.await.expect("stderr")
            );
        }
        assert!(Instant::now() < deadline, "not replicated in 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A clean stop, as an operator's SIGTERM.
    let status = terminate(&mut child).await;
    let (out, err) = (
        out_task.await.expect("stdout"),
        err_task.await.expect("stderr"),
    );
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.lines().count() > 5, "TRACE logging on: {err}");
    assert!(err.contains("progress: "), "progress lines: {err}");
    for line in out.lines().chain(err.lines()) {
        assert!(
            !line.contains(SOURCE_PASSWORD) && !line.contains(DESTINATION_PASSWORD),
            "a password in {line:?}"
        );
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
    p.source.shutdown().await;
    p.destination.shutdown().await;
}
