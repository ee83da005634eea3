//! The programs over TLS against the embedded cluster's TLS ports, with password
//! authentication on: the printer prints and the replicator replicates with a CA file, with
//! mutual TLS (client certificates), with the password from a file; each way of not getting
//! in (wrong CA, wrong server name, plaintext to a TLS port, wrong password) is one line and
//! exit code 3. (Credentials from the environment, and passwords kept out of every log line,
//! are tested on the binaries themselves: `scylla-cdc-printer/tests/integration/credentials.rs`
//! and `scylla-cdc-replicator/tests/integration/credentials.rs`.)
//!
//! Embedded clusters only: TLS ports and test certificates are made here.

use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use scylla::client::session::Session;
use scylla_cdc::cli::exit_code;
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, TestCa};

use crate::support::*;

const USER: &str = "tls_user";
const PASSWORD: &str = "pw-over-tls-7f3a";

/// The files a client needs: the CA, a client certificate and key, the password file.
struct ClientFiles {
    ca: String,
    cert: String,
    key: String,
    password_file: String,
    _dir: TempDir,
}

fn client_files(ca: &TestCa) -> ClientFiles {
    let dir = TempDir::new();
    let client = ca.client_cert("cdc-client").expect("client cert");
    ClientFiles {
        ca: dir.write("ca.pem", ca.cert_pem()),
        cert: dir.write("client.pem", &client.cert_pem),
        key: dir.write("client.key", &client.key_pem),
        password_file: dir.write("password", &format!("{PASSWORD}\n")),
        _dir: dir,
    }
}

/// A cluster with TLS ports signed by `ca` (and the name `scylla.test`), the password
/// authenticator, and with `mutual` client certificates of `ca` required.
async fn tls_cluster(ca: &TestCa, nodes: usize, mutual: bool) -> EmbeddedCluster {
    let mut builder = EmbeddedCluster::builder()
        .nodes(nodes)
        .credentials(USER, PASSWORD)
        .tls_signed_by(ca, &["scylla.test"]);
    if mutual {
        builder = builder.tls_require_client_cert(ca.cert_pem());
    }
    builder.start().await.expect("TLS cluster")
}

fn tls_host(cluster: &EmbeddedCluster) -> String {
    cluster.tls_contact_point().expect("TLS port").to_string()
}

fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A CDC table `ks.t` with three rows written (over the plaintext port).
async fn written_table(session: &Session) -> anyhow::Result<String> {
    let ks = unique_keyspace_name();
    create_keyspace(session, &ks, 1).await?;
    exec(
        session,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    for i in 0..3 {
        exec(
            session,
            format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, {i}, 'tls-row-{i}')"),
        )
        .await?;
    }
    Ok(ks)
}

/// Runs the printer over `ks.t` from a minute ago to now with `extra` arguments and returns
/// its output.
async fn print_once(
    host: &str,
    ks: &str,
    extra: &[&str],
) -> anyhow::Result<Result<String, scylla_cdc::cli::CliError>> {
    let start = Utc::now() - chrono::TimeDelta::seconds(60);
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let mut args = printer_args(host, ks, "t");
    args.extend(strings(&[
        "--start",
        &rfc3339(start),
        "--end",
        &rfc3339(end),
        "--format",
        "json",
    ]));
    args.extend(strings(extra));
    let (printer, out) = spawn_printer(args);
    Ok(printer
        .join(Duration::from_secs(60))
        .await?
        .map(|()| out.contents()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_prints_over_tls_with_a_ca_file_and_with_mutual_tls() -> anyhow::Result<()> {
    setup_tracing();
    let ca = TestCa::new("printer CA")?;
    let files = client_files(&ca);
    for mutual in [false, true] {
        let cluster = tls_cluster(&ca, 1, mutual).await;
        let ks = written_table(&*cluster.session().await?).await?;
        let mut extra = vec![
            "--tls-ca-file",
            &files.ca,
            "--user",
            USER,
            "--password-file",
            &files.password_file,
        ];
        if mutual {
            extra.extend(["--tls-cert-file", &files.cert, "--tls-key-file", &files.key]);
        }
        let out = print_once(&tls_host(&cluster), &ks, &extra)
            .await?
            .map_err(|e| anyhow::anyhow!("mutual={mutual}: {e}"))?;
        for i in 0..3 {
            assert!(
                out.contains(&format!("tls-row-{i}")),
                "mutual={mutual}: row {i} not printed: {out}"
            );
        }
        assert!(!out.contains(PASSWORD));
        cluster.shutdown().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_checks_the_server_name_when_told_one() -> anyhow::Result<()> {
    setup_tracing();
    let ca = TestCa::new("name CA")?;
    let files = client_files(&ca);
    let cluster = tls_cluster(&ca, 1, false).await;
    let ks = written_table(&*cluster.session().await?).await?;
    let base = [
        "--tls-ca-file",
        files.ca.as_str(),
        "--user",
        USER,
        "--password-file",
        &files.password_file,
    ];
    // The certificate names scylla.test: that name passes, another fails.
    let good = [&base[..], &["--tls-server-name", "scylla.test"]].concat();
    let out = print_once(&tls_host(&cluster), &ks, &good)
        .await?
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    assert!(out.contains("tls-row-2"), "{out}");
    let bad = [&base[..], &["--tls-server-name", "other.test"]].concat();
    let err = print_once(&tls_host(&cluster), &ks, &bad)
        .await?
        .expect_err("a wrong server name was accepted");
    assert_refused(&err, "certificate");
    cluster.shutdown().await;
    Ok(())
}

/// One line, exit code 3, naming the cluster, without the password.
fn assert_refused(err: &scylla_cdc::cli::CliError, needle: &str) {
    let line = err.to_string();
    assert_eq!(err.exit_code(), exit_code::CONNECT, "{line}");
    assert!(
        line.starts_with("error: cannot connect to ") && !line.contains('\n'),
        "{line}"
    );
    assert!(
        line.to_lowercase().contains(needle),
        "{line:?} lacks {needle:?}"
    );
    assert!(!line.contains(PASSWORD), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_one_line_and_exit_code_3() -> anyhow::Result<()> {
    setup_tracing();
    let ca = TestCa::new("refusal CA")?;
    let files = client_files(&ca);
    let other = client_files(&TestCa::new("another CA")?);
    let cluster = tls_cluster(&ca, 1, false).await;
    let ks = written_table(&*cluster.session().await?).await?;
    let host = tls_host(&cluster);
    let wrong_password_file = files._dir.write("wrong", "not-the-password\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // A CA that did not sign the server's certificate.
        (
            vec![
                "--tls-ca-file",
                &other.ca,
                "--user",
                USER,
                "--password-file",
                &files.password_file,
            ],
            "certificate",
        ),
        // Plaintext to the TLS port: the server drops the connection, which a client cannot
        // tell from a connection lost at start-up, so it is retried until --give-up-after.
        (
            vec![
                "--user",
                USER,
                "--password-file",
                &files.password_file,
                "--give-up-after",
                "1",
            ],
            "cannot connect",
        ),
        // TLS is fine, the password is not.
        (
            vec![
                "--tls-ca-file",
                &files.ca,
                "--user",
                USER,
                "--password-file",
                &wrong_password_file,
            ],
            "password",
        ),
    ];
    for (extra, needle) in cases {
        let err = print_once(&host, &ks, &extra)
            .await?
            .expect_err("the printer got in");
        assert_refused(&err, needle);
    }
    // The replicator: each side separately.
    let plain = cluster.contact_point().to_string();
    let refusals: Vec<(Vec<String>, &str)> = vec![
        (
            strings(&[
                "--source",
                &host,
                "--source-tls-ca-file",
                &other.ca,
                "--destination",
                &plain,
            ]),
            "the source cluster",
        ),
        (
            strings(&[
                "--source",
                &plain,
                "--destination",
                &host,
                "--destination-tls-ca-file",
                &files.ca,
                "--destination-tls-server-name",
                "wrong.test",
            ]),
            "the destination cluster",
        ),
    ];
    for (sides, needle) in refusals {
        let mut args = sides;
        args.extend(strings(&[
            "--keyspace",
            &ks,
            "--destination-keyspace",
            "elsewhere",
            "--table",
            "t",
            "--source-user",
            USER,
            "--source-password-file",
            &files.password_file,
            "--destination-user",
            USER,
            "--destination-password-file",
            &files.password_file,
        ]));
        let err = spawn_replicator(args)
            .join(Duration::from_secs(60))
            .await?
            .expect_err("the replicator got in");
        assert_refused(&err, needle);
        assert!(err.to_string().contains("certificate"), "{err}");
    }
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicator_replicates_over_tls_on_both_sides() -> anyhow::Result<()> {
    setup_tracing();
    let ca = TestCa::new("replicator CA")?;
    let files = client_files(&ca);
    // The source wants client certificates; the destination only a CA and a password.
    let source = tls_cluster(&ca, 2, true).await;
    let destination = tls_cluster(&ca, 1, false).await;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    create_keyspace(&d, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let mut args = replicator_args(&tls_host(&source), &tls_host(&destination), &ks, "t");
    args.extend(strings(&[
        "--create-destination-table",
        "--source-tls-ca-file",
        &files.ca,
        "--source-tls-cert-file",
        &files.cert,
        "--source-tls-key-file",
        &files.key,
        "--source-user",
        USER,
        "--source-password-file",
        &files.password_file,
        "--destination-tls-ca-file",
        &files.ca,
        "--destination-user",
        USER,
        "--destination-password-file",
        &files.password_file,
    ]));
    let replicator = spawn_replicator(args);
    for i in 0..20 {
        exec(
            &s,
            format!(
                "INSERT INTO {ks}.t (pk, ck, v) VALUES ({}, {i}, 'v{i}')",
                i % 4
            ),
        )
        .await?;
    }
    exec(&s, format!("DELETE FROM {ks}.t WHERE pk = 0 AND ck = 4")).await?;
    converge_then_stop(replicator, &s, &d, &ks, "t", Duration::from_secs(60)).await?;
    source.shutdown().await;
    destination.shutdown().await;
    Ok(())
}

/// The other TLS configuration: a cluster whose CQL port itself speaks TLS, with no plaintext
/// port (Scylla's `client_encryption_options` without `native_transport_port_ssl`). The
/// printer's binary reads it with the CA and the password; without TLS it is refused with
/// one line that says what to try, exit code 3, within `--connect-timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_reads_a_tls_only_cluster() -> anyhow::Result<()> {
    setup_tracing();
    let ca = TestCa::new("TLS-only CA")?;
    let files = client_files(&ca);
    let cluster = EmbeddedCluster::builder()
        .nodes(2)
        .credentials(USER, PASSWORD)
        .tls_signed_by(&ca, &["scylla.test"])
        .tls_only()
        .start()
        .await?;
    // The cluster's own session speaks TLS too.
    let ks = written_table(&*cluster.session().await?).await?;
    let host = cluster.contact_point().to_string();
    let dir = TempDir::new();
    let start = Utc::now() - chrono::TimeDelta::seconds(60);
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let mut args = printer_args(&host, &ks, "t");
    args.extend(strings(&[
        "--start",
        &rfc3339(start),
        "--end",
        &rfc3339(end),
        "--format",
        "json",
        "--tls-ca-file",
        &files.ca,
        "--user",
        USER,
        "--password-file",
        &files.password_file,
    ]));
    let mut printer = Process::spawn(env!("CARGO_BIN_EXE_e2e-printer"), "printer", &args, &dir)?;
    let code = printer.exit_code(Duration::from_secs(60)).await?;
    assert_eq!(code, Some(0), "{}", printer.err());
    let out = printer.out();
    for i in 0..3 {
        assert!(out.contains(&format!("tls-row-{i}")), "row {i}: {out}");
    }

    // Plaintext to the TLS-only port.
    let mut plain = printer_args(&host, &ks, "t");
    plain.extend(strings(&[
        "--user",
        USER,
        "--password-file",
        &files.password_file,
        "--connect-timeout",
        "1",
    ]));
    let started = std::time::Instant::now();
    let mut printer = Process::spawn(env!("CARGO_BIN_EXE_e2e-printer"), "plain", &plain, &dir)?;
    let code = printer.exit_code(Duration::from_secs(30)).await?;
    let err = printer.err();
    assert_eq!(code, Some(i32::from(exit_code::CONNECT)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: cannot connect to the cluster")
            && last.contains("closed the connection")
            && last.contains("connect with TLS"),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
    cluster.shutdown().await;
    Ok(())
}
