//! The replicator binary reads each side's credentials from its own environment variables
//! (`SCYLLA_SOURCE_USER` / `SCYLLA_SOURCE_PASSWORD`, `SCYLLA_DESTINATION_*`) or its own
//! `--*-password-file`, replicates over TLS on both sides, and the passwords appear in no
//! line it writes with every log level on (`RUST_LOG=trace`), progress lines included.

use std::process::Stdio;
use std::time::{Duration, Instant};

use scylla_cdc_test_utils::unique_keyspace_name;
use scylla_emulator::{EmbeddedCluster, TestCa};
use tokio::io::AsyncReadExt;

const SOURCE_USER: &str = "source_user";
const SOURCE_PASSWORD: &str = "S0urce-secret-81ab";
const DESTINATION_USER: &str = "destination_user";
const DESTINATION_PASSWORD: &str = "Dest1nation-secret-2f9c";

async fn tls_cluster(ca: &TestCa, user: &str, password: &str) -> EmbeddedCluster {
    EmbeddedCluster::builder()
        .credentials(user, password)
        .tls_signed_by(ca, &[])
        .start()
        .await
        .expect("cluster")
}

async fn count(session: &scylla::client::session::Session, table: &str) -> i64 {
    session
        .query_unpaged(format!("SELECT count(*) FROM {table}"), ())
        .await
        .ok()
        .and_then(|r| r.into_rows_result().ok())
        .and_then(|r| r.single_row::<(i64,)>().ok())
        .map_or(-1, |(n,)| n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sides_credentials_from_env_or_file_never_printed() {
    let ca = TestCa::new("replicator credentials CA").expect("CA");
    let source = tls_cluster(&ca, SOURCE_USER, SOURCE_PASSWORD).await;
    let destination = tls_cluster(&ca, DESTINATION_USER, DESTINATION_PASSWORD).await;
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
    s.query_unpaged(
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v text) WITH cdc = {{'enabled': true}}"),
        (),
    )
    .await
    .expect("table");

    let dir = std::env::temp_dir().join(format!("replicator-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).expect("ca");
    let password_file = dir.join("destination-password");
    std::fs::write(&password_file, format!("{DESTINATION_PASSWORD}\n")).expect("file");

    // The source's credentials from the environment, the destination's from a file (the
    // destination user from its environment variable).
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_scylla-cdc-replicator"))
        .args([
            "--source",
            &source.tls_contact_point().expect("tls").to_string(),
        ])
        .args([
            "--destination",
            &destination.tls_contact_point().expect("tls").to_string(),
        ])
        .args([
            "--keyspace",
            &ks,
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
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
        s.query_unpaged(format!("INSERT INTO {ks}.t (pk, v) VALUES ({pk}, 'v')"), ())
            .await
            .expect("write");
    }
    let table = format!("{ks}.t");
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(&d, &table).await != 10 {
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
    source.shutdown().await;
    destination.shutdown().await;
}
