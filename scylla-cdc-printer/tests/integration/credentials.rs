//! The printer binary reads its credentials from the environment (`SCYLLA_USER` /
//! `SCYLLA_PASSWORD`), from `--password-file` or from `--password`, connects over TLS, and
//! the password appears in no line it writes, with every log level on (`RUST_LOG=trace`):
//! neither when it works, nor when the password is wrong, nor in `--help`.

use std::time::Duration;

use chrono::Utc;
use scylla_cdc_test_utils::unique_keyspace_name;
use scylla_emulator::{EmbeddedCluster, TestCa};

use crate::support::{self, rfc3339};

const USER: &str = "printer_user";
const PASSWORD: &str = "Pr1nter-secret-9c4e";
const WRONG: &str = "Wr0ng-secret-5d1b";

/// The printer, with no credentials in its environment and every log level on.
fn printer() -> tokio::process::Command {
    let mut command = support::printer::<&str>(&[]);
    command
        .env_remove("SCYLLA_USER")
        .env_remove("SCYLLA_PASSWORD")
        .env("RUST_LOG", "trace");
    command
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn run(mut command: tokio::process::Command) -> Run {
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the printer did not finish in 60 s")
        .expect("run the printer");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// No line of stdout or stderr holds `secret`.
fn assert_never_printed(run: &Run, secret: &str, what: &str) {
    for line in run.stdout.lines().chain(run.stderr.lines()) {
        assert!(!line.contains(secret), "{what}: the password in {line:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_from_env_file_or_flag_never_printed() {
    let ca = TestCa::new("printer credentials CA").expect("CA");
    let cluster = EmbeddedCluster::builder()
        .credentials(USER, PASSWORD)
        .tls_signed_by(&ca, &[])
        .start()
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let ks = unique_keyspace_name();
    for statement in [
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ),
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v text) WITH cdc = {{'enabled': true}}"),
        format!("INSERT INTO {ks}.t (pk, v) VALUES (1, 'printed-over-tls')"),
    ] {
        session.query_unpaged(statement, ()).await.expect("setup");
    }
    let dir = std::env::temp_dir().join(format!("printer-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert_pem()).expect("ca");
    let password_file = dir.join("password");
    std::fs::write(&password_file, format!("{PASSWORD}\n")).expect("password file");
    let wrong_file = dir.join("wrong");
    std::fs::write(&wrong_file, format!("{WRONG}\n")).expect("wrong file");

    let host = cluster.tls_contact_point().expect("TLS port").to_string();
    let start = rfc3339(Utc::now() - chrono::TimeDelta::seconds(60));
    let end = rfc3339(Utc::now() + chrono::TimeDelta::milliseconds(100));
    let base = |command: &mut tokio::process::Command| {
        command.args(["--hosts", &host, "-k", &ks, "-t", "t", "--format", "json"]);
        command.args(["--start", &start, "--end", &end, "--window-size", "1"]);
        command.args(["--safety-interval", "1", "--sleep-interval", "0.1"]);
        command.arg("--tls-ca-file").arg(&ca_file);
    };

    // From the environment.
    let mut from_env = printer();
    base(&mut from_env);
    from_env
        .env("SCYLLA_USER", USER)
        .env("SCYLLA_PASSWORD", PASSWORD);
    // From a file.
    let mut from_file = printer();
    base(&mut from_file);
    from_file
        .args(["--user", USER, "--password-file"])
        .arg(&password_file);
    // From the command line (still accepted, with a warning).
    let mut from_flag = printer();
    base(&mut from_flag);
    from_flag.args(["--user", USER, "--password", PASSWORD]);

    for (what, command) in [
        ("environment", from_env),
        ("file", from_file),
        ("flag", from_flag),
    ] {
        let run = run(command).await;
        assert_eq!(run.code, Some(0), "{what}: {}", run.stderr);
        assert!(
            run.stdout.contains("printed-over-tls"),
            "{what}: {}",
            run.stdout
        );
        // TRACE logging is on: the log is not empty, and holds no password.
        assert!(run.stderr.lines().count() > 5, "{what}: {}", run.stderr);
        if what == "flag" {
            // A flag whose password is only asserted absent below, the warning is asserted
            // present here.
            assert!(
                run.stderr
                    .contains("--password puts the password on the command line")
            );
        }
        assert_never_printed(&run, PASSWORD, what);
    }

    // A wrong password, from the environment and from a file: one line, exit code 3.
    let mut wrong_env = printer();
    base(&mut wrong_env);
    wrong_env
        .env("SCYLLA_USER", USER)
        .env("SCYLLA_PASSWORD", WRONG);
    let mut wrong_from_file = printer();
    base(&mut wrong_from_file);
    wrong_from_file
        .args(["--user", USER, "--password-file"])
        .arg(&wrong_file);
    for (what, command) in [("environment", wrong_env), ("file", wrong_from_file)] {
        let run = run(command).await;
        assert_eq!(run.code, Some(3), "{what}: {}", run.stderr);
        let errors: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(errors.len(), 1, "{what}: {}", run.stderr);
        assert!(errors[0].contains("password"), "{}", errors[0]);
        assert_never_printed(&run, WRONG, what);
        assert_never_printed(&run, PASSWORD, what);
    }

    // --help with the password in the environment.
    let mut help = printer();
    help.arg("--help").env("SCYLLA_PASSWORD", PASSWORD);
    let run = run(help).await;
    assert_eq!(run.code, Some(0));
    assert!(run.stdout.contains("--password-file"), "{}", run.stdout);
    assert_never_printed(&run, PASSWORD, "--help");

    std::fs::remove_dir_all(&dir).expect("cleanup");
    cluster.shutdown().await;
}
