//! The programs' command lines as an operator meets them, through their binaries
//! (`e2e-printer`, `e2e-replicator`): flags set by environment variables
//! (`SCYLLA_CDC_PRINTER_HOSTS`, ...) with the command line taking precedence, `--log-format
//! json` (one JSON object per line on stderr, the final error included), `--help` grouped
//! under the same headings in plain text, and the exit codes of `scylla-cdc-replicator
//! verify`: 0 equal, 5 different, and others when the comparison itself fails.
//!
//! (`scylla-cdc-kafka` and `scylla-emulator` are checked the same way by their own packages'
//! tests, the only ones that can run their binaries.)

use std::time::Duration;

use anyhow::{Context, ensure};
use chrono::{SecondsFormat, Utc};
use scylla_cdc_test_utils::help_text::help_problems;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{FaultError, FaultOpcode, FaultReaction, FaultRule};
use serde_json::Value;

use crate::support::*;

fn printer() -> &'static str {
    env!("CARGO_BIN_EXE_e2e-printer")
}

fn replicator() -> &'static str {
    env!("CARGO_BIN_EXE_e2e-replicator")
}

/// The values `v` of the rows written to `ks.t`.
const VALUES: [i32; 3] = [4_420_001, 4_420_002, 4_420_003];

/// A cluster with the CDC table `ks.t (pk int PRIMARY KEY, v int)`, [`VALUES`] written to it
/// between `start` and `end` (RFC 3339).
struct Written {
    cluster: scylla_cdc_test_utils::TestCluster,
    ks: String,
    start: String,
    end: String,
}

fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

async fn written_table() -> anyhow::Result<Written> {
    let cluster = cluster(1).await?;
    let s = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let start = rfc3339(Utc::now() - chrono::TimeDelta::milliseconds(10));
    for (pk, v) in VALUES.iter().enumerate() {
        exec(&s, format!("INSERT INTO {ks}.t (pk, v) VALUES ({pk}, {v})")).await?;
    }
    let end = rfc3339(Utc::now() + chrono::TimeDelta::milliseconds(10));
    Ok(Written {
        cluster,
        ks,
        start,
        end,
    })
}

/// The values `v` of the rows a printer printed with `--format json`, sorted (rows of
/// different streams come in any order); fails on a line that is not such a row.
fn printed_values(out: &str) -> anyhow::Result<Vec<i64>> {
    let mut values = out
        .lines()
        .map(|line| {
            let row: Value =
                serde_json::from_str(line).with_context(|| format!("not JSON: {line}"))?;
            row["columns"]["v"]
                .as_i64()
                .with_context(|| format!("no columns.v: {line}"))
        })
        .collect::<anyhow::Result<Vec<i64>>>()?;
    values.sort_unstable();
    Ok(values)
}

/// Waits for a program's exit code (not a signal).
async fn code(p: &mut Process, timeout: Duration) -> anyhow::Result<i32> {
    p.exit_code(timeout)
        .await?
        .with_context(|| format!("{} ended by a signal: {}", p.name, p.err()))
}

/// Sets `name` to `value` in `env`, replacing its value if it has one.
fn set_env<'a>(env: &mut Vec<(&'a str, &'a str)>, name: &'a str, value: &'a str) {
    env.retain(|(n, _)| *n != name);
    env.push((name, value));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_flags_come_from_the_environment_unless_given() -> anyhow::Result<()> {
    setup_tracing();
    let w = written_table().await?;
    let hosts = hosts(&w.cluster);
    let dir = TempDir::new();
    let mut env = vec![
        ("SCYLLA_CDC_PRINTER_HOSTS", hosts.as_str()),
        ("SCYLLA_CDC_PRINTER_KEYSPACE", w.ks.as_str()),
        ("SCYLLA_CDC_PRINTER_TABLE", "t"),
        ("SCYLLA_CDC_PRINTER_START", w.start.as_str()),
        ("SCYLLA_CDC_PRINTER_END", w.end.as_str()),
        ("SCYLLA_CDC_PRINTER_FORMAT", "json"),
        ("SCYLLA_CDC_PRINTER_WINDOW_SIZE", "1"),
        ("SCYLLA_CDC_PRINTER_SAFETY_INTERVAL", "1"),
        ("SCYLLA_CDC_PRINTER_SLEEP_INTERVAL", "0.1"),
        // A flag without a value.
        ("SCYLLA_CDC_PRINTER_NO_EARLY_READS", "true"),
    ];

    // Every flag from the environment, none on the command line.
    let mut only_env = Process::spawn_with_env(printer(), "only-env", &[], &dir, &env)?;
    ensure!(
        code(&mut only_env, Duration::from_secs(60)).await? == 0,
        "stderr: {}",
        only_env.err()
    );
    let values = printed_values(&only_env.out())?;
    assert_eq!(values, VALUES.map(i64::from), "{}", only_env.out());

    // The command line wins: the variables name a host where nothing listens, a table that
    // does not exist and another format.
    set_env(&mut env, "SCYLLA_CDC_PRINTER_HOSTS", "127.0.0.1:1");
    set_env(&mut env, "SCYLLA_CDC_PRINTER_TABLE", "no_such_table");
    set_env(&mut env, "SCYLLA_CDC_PRINTER_FORMAT", "pretty");
    let args = strings(&["--hosts", &hosts, "--table", "t", "--format", "json"]);
    let mut both = Process::spawn_with_env(printer(), "both", &args, &dir, &env)?;
    ensure!(
        code(&mut both, Duration::from_secs(60)).await? == 0,
        "stderr: {}",
        both.err()
    );
    assert_eq!(printed_values(&both.out())?, VALUES.map(i64::from));

    // A bad value from a variable: a usage error that names the variable.
    set_env(&mut env, "SCYLLA_CDC_PRINTER_WINDOW_SIZE", "0");
    let mut bad = Process::spawn_with_env(printer(), "bad", &args, &dir, &env)?;
    assert_eq!(code(&mut bad, Duration::from_secs(20)).await?, 2);
    let err = bad.err();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ")
            && err.contains("--window-size")
            && err.contains("SCYLLA_CDC_PRINTER_WINDOW_SIZE"),
        "{err}"
    );
    w.cluster.shutdown().await;
    Ok(())
}

/// The lines of `stderr`, each parsed as a JSON object with a timestamp, a level and a
/// target; fails naming the first line that is not one.
fn json_lines(stderr: &str) -> anyhow::Result<Vec<serde_json::Map<String, Value>>> {
    ensure!(!stderr.trim().is_empty(), "nothing on stderr");
    stderr
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .with_context(|| format!("a stderr line is not JSON: {line:?}"))?;
            let obj = v
                .as_object()
                .with_context(|| format!("not a JSON object: {line}"))?
                .clone();
            for key in ["timestamp", "level", "target", "message"] {
                ensure!(
                    obj.get(key).is_some_and(Value::is_string),
                    "no {key}: {line}"
                );
            }
            chrono::DateTime::parse_from_rfc3339(obj["timestamp"].as_str().unwrap_or(""))
                .with_context(|| format!("timestamp: {line}"))?;
            Ok(obj)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line() -> anyhow::Result<()> {
    setup_tracing();
    let w = written_table().await?;
    let dir = TempDir::new();
    let mut args = printer_args(&hosts(&w.cluster), &w.ks, "t");
    args.extend(strings(&[
        "--start",
        &w.start,
        "--end",
        &w.end,
        "--format",
        "json",
        "--progress-interval",
        "0.1",
        "--log-format",
        "json",
    ]));
    let mut run = Process::spawn(printer(), "run", &args, &dir)?;
    ensure!(
        code(&mut run, Duration::from_secs(60)).await? == 0,
        "stderr: {}",
        run.err()
    );
    assert_eq!(printed_values(&run.out())?, VALUES.map(i64::from));
    let lines = json_lines(&run.err())?;
    assert!(
        lines.iter().any(|l| l["level"] == "INFO"
            && l["message"].as_str().unwrap_or("").starts_with("progress:")),
        "no progress line: {}",
        run.err()
    );

    // A failure: the final error is a JSON object too, with the exit code.
    let failing = strings(&[
        "--hosts",
        "127.0.0.1:1",
        "-k",
        &w.ks,
        "-t",
        "t",
        "--give-up-after",
        "0.2",
        "--log-format",
        "json",
    ]);
    let mut failed = Process::spawn(printer(), "failed", &failing, &dir)?;
    assert_eq!(code(&mut failed, Duration::from_secs(30)).await?, 3);
    let lines = json_lines(&failed.err())?;
    let last = lines.last().context("no line")?;
    assert_eq!(last["level"], "ERROR", "{last:?}");
    assert_eq!(last["exit_code"], 3, "{last:?}");
    assert!(
        last["message"]
            .as_str()
            .unwrap_or("")
            .contains("cannot connect"),
        "{last:?}"
    );
    assert!(
        lines.iter().any(|l| l["level"] == "WARN"),
        "no retry logged: {}",
        failed.err()
    );
    w.cluster.shutdown().await;
    Ok(())
}

/// `--help` of `binary` with `args`, and its short form (`-h`).
async fn help(binary: &str, args: &[&str], dir: &TempDir) -> anyhow::Result<(String, String)> {
    let mut texts = Vec::new();
    for flag in ["--help", "-h"] {
        let name = format!("help{}", texts.len());
        let mut all = strings(args);
        all.push(flag.to_owned());
        let mut p = Process::spawn(binary, &name, &all, dir)?;
        ensure!(
            code(&mut p, Duration::from_secs(20)).await? == 0,
            "{binary} {all:?}: {}",
            p.err()
        );
        texts.push(p.out());
    }
    let short = texts.pop().unwrap_or_default();
    Ok((texts.pop().unwrap_or_default(), short))
}

/// What the help of a program (or command) must show.
struct HelpCase {
    binary: &'static str,
    /// Before `--help`: the command, if any.
    args: &'static [&'static str],
    /// Its headings, in order.
    headings: &'static [&'static str],
    /// The prefix of its variables.
    prefix: &'static str,
    /// The flags without a variable of the prefix.
    no_env: &'static [&'static str],
    /// Texts it contains.
    contains: &'static [&'static str],
}

#[tokio::test]
async fn help_is_grouped_under_headings_in_plain_text() -> anyhow::Result<()> {
    let dir = TempDir::new();
    let cases = [
        HelpCase {
            binary: printer(),
            args: &[],
            headings: &[
                "Connection",
                "TLS and credentials",
                "What to read",
                "Where to start",
                "Output",
                "Operation",
                "Examples",
            ],
            prefix: "SCYLLA_CDC_PRINTER_",
            no_env: &["password"],
            contains: &[
                "Usage: scylla-cdc-printer <--hosts <HOST:PORT,...>|--hostname <HOST[:PORT]>> \
                 --keyspace <KEYSPACE> --table <TABLE,...>",
                "scylla-cdc-printer --demo",
            ],
        },
        HelpCase {
            binary: replicator(),
            args: &[],
            headings: &[
                "Commands",
                "Connection",
                "TLS and credentials",
                "What to read",
                "Where to start",
                "Destination",
                "Operation",
                "Examples",
            ],
            prefix: "SCYLLA_CDC_REPLICATOR_",
            no_env: &["source-password", "destination-password"],
            contains: &[
                "--source <HOST:PORT,...> --destination <HOST:PORT,...> --keyspace <KEYSPACE> \
                 --table <TABLE,...>",
                "5 the tables differ",
            ],
        },
        HelpCase {
            binary: replicator(),
            args: &["verify"],
            headings: &[
                "Connection",
                "TLS and credentials",
                "What to read",
                "Operation",
                "Examples",
            ],
            prefix: "SCYLLA_CDC_REPLICATOR_",
            no_env: &["source-password", "destination-password"],
            contains: &[
                "Usage: scylla-cdc-replicator verify [OPTIONS] --source <HOST:PORT,...> \
                 --destination <HOST:PORT,...> --keyspace <KEYSPACE> --table <TABLE,...>",
                "0 the tables are equal, 5 they differ, 1 failure while scanning",
            ],
        },
    ];
    let mut problems = Vec::new();
    for HelpCase {
        binary,
        args,
        headings,
        prefix,
        no_env,
        contains,
    } in cases
    {
        let (long, short) = help(binary, args, &dir).await?;
        for (form, text) in [("--help", &long), ("-h", &short)] {
            for p in help_problems(text, headings, prefix, no_env) {
                problems.push(format!("{args:?} {form}: {p}"));
            }
            for c in contains {
                if !text.contains(c) {
                    problems.push(format!("{args:?} {form}: no {c:?}"));
                }
            }
        }
        if !long.contains(&format!(
            "Environment: every flag can also be set by the variable {prefix}"
        )) && args.is_empty()
        {
            problems.push(format!("{binary}: --help does not document {prefix}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_exits_0_when_equal_5_when_different_and_otherwise_when_it_fails()
-> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    let copy = format!("{ks}_copy");
    for k in [&ks, &copy] {
        create_keyspace(&s, k, 1).await?;
        exec(
            &s,
            format!("CREATE TABLE {k}.t (pk int PRIMARY KEY, v int)"),
        )
        .await?;
        for (pk, v) in VALUES.iter().enumerate() {
            exec(
                &s,
                format!(
                    "INSERT INTO {k}.t (pk, v) VALUES ({pk}, {v}) USING TIMESTAMP {}",
                    1_700_000_000_000_000i64 + pk as i64
                ),
            )
            .await?;
        }
    }
    let host = hosts(&c);
    let dir = TempDir::new();
    let verify = |table: &str, extra: &[&str]| {
        let mut a = strings(&[
            "verify",
            "--source",
            &host,
            "--destination",
            &host,
            "-k",
            &ks,
            "--destination-keyspace",
            &copy,
            "-t",
            table,
        ]);
        a.extend(strings(extra));
        a
    };

    let mut equal = Process::spawn(replicator(), "equal", &verify("t", &[]), &dir)?;
    assert_eq!(
        code(&mut equal, Duration::from_secs(60)).await?,
        0,
        "{}",
        equal.err()
    );
    assert!(
        equal
            .out()
            .contains("rows compared 3, missing 0, extra 0, different 0"),
        "{}",
        equal.out()
    );

    // A row the replica lacks: the tables differ (and the JSON log ends with the exit code).
    exec(&s, format!("INSERT INTO {ks}.t (pk, v) VALUES (9, 9)")).await?;
    let mut differ = Process::spawn(
        replicator(),
        "differ",
        &verify("t", &["--log-format", "json"]),
        &dir,
    )?;
    assert_eq!(
        code(&mut differ, Duration::from_secs(60)).await?,
        5,
        "{}",
        differ.err()
    );
    assert!(
        differ
            .out()
            .contains("rows compared 4, missing 1, extra 0, different 0"),
        "{}",
        differ.out()
    );
    let lines = json_lines(&differ.err())?;
    let last = lines.last().context("no line")?;
    assert_eq!(
        (&last["level"], &last["exit_code"]),
        (&Value::from("ERROR"), &Value::from(5))
    );

    // Failures to compare: each has its own code, none is 5.
    let mut missing = Process::spawn(replicator(), "missing", &verify("no_such_table", &[]), &dir)?;
    assert_eq!(
        code(&mut missing, Duration::from_secs(60)).await?,
        4,
        "{}",
        missing.err()
    );
    let mut unreachable_args = verify("t", &["--give-up-after", "0.5"]);
    set_option(&mut unreachable_args, "--source", "127.0.0.1:1");
    let mut unreachable = Process::spawn(replicator(), "unreachable", &unreachable_args, &dir)?;
    assert_eq!(
        code(&mut unreachable, Duration::from_secs(60)).await?,
        3,
        "{}",
        unreachable.err()
    );
    if embedded_only(
        "verify_exits_0_when_equal_5_when_different_and_otherwise_when_it_fails",
        "fails the scan of the source table",
    ) {
        let cluster = c.embedded().context("an embedded cluster")?;
        cluster.add_fault(
            FaultRule::new()
                .on_opcode(FaultOpcode::Execute)
                .on_statement_containing(format!("FROM \"{ks}\".\"t\" WHERE"))
                .respond(FaultReaction::Error(FaultError::Invalid)),
        );
        let mut failed = Process::spawn(replicator(), "failed", &verify("t", &[]), &dir)?;
        assert_eq!(
            code(&mut failed, Duration::from_secs(60)).await?,
            1,
            "{}",
            failed.err()
        );
        assert!(failed.err().contains("scanning"), "{}", failed.err());
        cluster.clear_faults();
    }
    drop_keyspace(&s, &ks).await?;
    drop_keyspace(&s, &copy).await?;
    c.shutdown().await;
    Ok(())
}
