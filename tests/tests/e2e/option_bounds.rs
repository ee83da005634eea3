//! Every numeric option of the printer, the replicator and `scylla-cdc-replicator verify` at
//! its documented bounds, through the programs' own binaries (`e2e-printer`,
//! `e2e-replicator`): zero, the least and the greatest accepted value, one step past each end,
//! and far past each end. Every value gives either
//!
//! - a usage error: exit code 2 and one line on stderr naming the option and its range, or
//! - a working run: the program starts, reads (the printer prints the prepared changes, the
//!   replicator writes them to a destination of the run's own, `verify` reports the prepared
//!   table equal; where the value makes the changes unreadable for now, a progress line) and
//!   exits 0, on SIGTERM or by itself (`verify`, `--demo-seconds`),
//!
//! and never a panic (no `panicked` on stderr, no exit code 101).
//!
//! The table ([`numeric_options`]) is checked against the programs' clap definitions: an
//! option whose value is a number of seconds or a count (`SECONDS`, `N`, `ROWS`, `MIB`) must be
//! in it, every other option that takes a value must be listed in [`NOT_NUMERIC`], and each
//! option's `--help` must state the range the table tests (`MIN to MAX`).
//!
//! One embedded one-node cluster (in this process, on a loopback address) serves every run;
//! the runs go on concurrently, a few at a time.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use chrono::{SecondsFormat, Utc};
use scylla::client::session::Session;
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use tokio::sync::Semaphore;

use crate::support::{Process, TempDir, create_keyspace, exec, timing_sensitive};

/// A program with a command line of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Program {
    Printer,
    Replicator,
    /// `scylla-cdc-replicator verify`.
    Verify,
}

impl Program {
    fn binary(self) -> &'static str {
        match self {
            Program::Printer => env!("CARGO_BIN_EXE_e2e-printer"),
            Program::Replicator | Program::Verify => env!("CARGO_BIN_EXE_e2e-replicator"),
        }
    }

    /// The program's clap definition, as it parses its command line.
    fn command(self) -> clap::Command {
        match self {
            Program::Printer => scylla_cdc_printer::args::command(),
            Program::Replicator => scylla_cdc_replicator::args::command(),
            Program::Verify => scylla_cdc_replicator::args::command()
                .find_subcommand("verify")
                .expect("the replicator has the command verify")
                .clone(),
        }
    }
}

/// The value names of numeric options (a number of seconds, or a count).
const NUMERIC_VALUE_NAMES: [&str; 4] = ["SECONDS", "N", "ROWS", "MIB"];

/// Options that take a value that is not a number (hosts, names, times, files, levels,
/// formats, addresses).
const NOT_NUMERIC: &[(Program, &[&str])] = &[
    (
        Program::Printer,
        &[
            "--hosts",
            "--hostname",
            "--keyspace",
            "--table",
            "--start",
            "--end",
            "--user",
            "--password",
            "--password-file",
            "--tls-ca-file",
            "--tls-cert-file",
            "--tls-key-file",
            "--tls-server-name",
            "--checkpoint-table",
            "--group",
            "--member-id",
            "--lease-table",
            "--format",
            "--on-error",
            "--metrics-addr",
            "--log-format",
        ],
    ),
    (
        Program::Replicator,
        &[
            "--source",
            "--destination",
            "--source-user",
            "--source-password",
            "--source-password-file",
            "--source-tls-ca-file",
            "--source-tls-cert-file",
            "--source-tls-key-file",
            "--source-tls-server-name",
            "--destination-user",
            "--destination-password",
            "--destination-password-file",
            "--destination-tls-ca-file",
            "--destination-tls-cert-file",
            "--destination-tls-key-file",
            "--destination-tls-server-name",
            "--keyspace",
            "--table",
            "--destination-keyspace",
            "--start",
            "--end",
            "--checkpoint-table",
            "--group",
            "--member-id",
            "--lease-table",
            "--write-consistency",
            "--on-error",
            "--metrics-addr",
            "--snapshot-consistency",
            "--log-format",
        ],
    ),
    (
        Program::Verify,
        &[
            "--source",
            "--destination",
            "--source-user",
            "--source-password",
            "--source-password-file",
            "--source-tls-ca-file",
            "--source-tls-cert-file",
            "--source-tls-key-file",
            "--source-tls-server-name",
            "--destination-user",
            "--destination-password",
            "--destination-password-file",
            "--destination-tls-ca-file",
            "--destination-tls-cert-file",
            "--destination-tls-key-file",
            "--destination-tls-server-name",
            "--keyspace",
            "--table",
            "--destination-keyspace",
            "--at",
            "--log-format",
        ],
    ),
];

/// A numeric option and its documented range.
#[derive(Debug, Clone, Copy)]
struct Numeric {
    program: Program,
    option: &'static str,
    /// The least and greatest accepted values, as `--help` states them (`MIN to MAX`).
    min: &'static str,
    max: &'static str,
    /// One step outside the range below and above it (1 ms or a tenth of the least value for
    /// seconds, 1 for counts).
    below: &'static str,
    above: &'static str,
    /// Arguments the option needs (`{cp}`: a checkpoint table of the run's own, `{group}`: a
    /// consumer group of its own).
    needs: &'static [&'static str],
    /// Accepted values at which the prepared changes cannot be read yet (a progress line is
    /// then the sign that the program runs).
    idle_at: &'static [&'static str],
    /// Accepted values at which the program ends by itself, with exit code 0.
    ends_at: &'static [&'static str],
}

const fn numeric(
    program: Program,
    option: &'static str,
    (min, max): (&'static str, &'static str),
    (below, above): (&'static str, &'static str),
) -> Numeric {
    Numeric {
        program,
        option,
        min,
        max,
        below,
        above,
        needs: &[],
        idle_at: &[],
        ends_at: &[],
    }
}

impl Numeric {
    const fn needs(mut self, needs: &'static [&'static str]) -> Self {
        self.needs = needs;
        self
    }

    const fn idle_at(mut self, values: &'static [&'static str]) -> Self {
        self.idle_at = values;
        self
    }

    const fn ends_at(mut self, values: &'static [&'static str]) -> Self {
        self.ends_at = values;
        self
    }

    /// Whether it is a number of seconds (fractions allowed), as its value name says.
    fn is_seconds(&self) -> bool {
        let long = self.option.trim_start_matches("--");
        self.program
            .command()
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .and_then(|a| a.get_value_names().and_then(|v| v.first().cloned()))
            .is_some_and(|v| v == "SECONDS")
    }

    /// The values tried: zero, the bounds, one step past them, far past them.
    fn values(&self) -> Vec<&'static str> {
        let (far_below, far_above) = if self.is_seconds() {
            ("-1", "1e30")
        } else {
            ("-1", "18446744073709551616")
        };
        let mut values = Vec::new();
        for v in [
            "0", self.min, self.max, self.below, self.above, far_below, far_above,
        ] {
            if !values.contains(&v) {
                values.push(v);
            }
        }
        values
    }

    /// What `value` must give.
    fn expected(&self, value: &str) -> Expected {
        let accepted = value == self.min || value == self.max;
        if !accepted {
            return Expected::Usage;
        }
        if self.program == Program::Verify || self.ends_at.contains(&value) {
            Expected::Ends
        } else if self.idle_at.contains(&value) {
            Expected::RunsIdle
        } else {
            Expected::Runs
        }
    }
}

/// What a value of an option must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    /// Exit code 2 and one line naming the option and its range.
    Usage,
    /// Reads the prepared changes, then exits 0 on SIGTERM.
    Runs,
    /// Runs (a progress line) with nothing readable yet, then exits 0 on SIGTERM.
    RunsIdle,
    /// Ends by itself with exit code 0 (`verify`: reporting the tables equal).
    Ends,
}

const CP: &[&str] = &["--checkpoint-table", "{cp}"];
const SAFETY_DAY: &[&str] = &["--safety-interval", "86400"];
const SAFETY_SECOND: &[&str] = &["--safety-interval", "1"];
const PRINTER_GROUP: &[&str] = &["--group", "{group}", "--checkpoint-table", "{cp}"];
const PRINTER_RENEW: &[&str] = &[
    "--group",
    "{group}",
    "--checkpoint-table",
    "{cp}",
    "--lease-duration",
    "86400",
];
const REPLICATOR_GROUP: &[&str] = &["--group", "{group}"];
const REPLICATOR_RENEW: &[&str] = &["--group", "{group}", "--lease-duration", "86400"];

/// Every numeric option of the programs and its range.
fn numeric_options() -> Vec<Numeric> {
    use Program::*;
    let secs_ms_year = ("0.001", "31536000");
    let past_ms_year = ("0.0009", "31536000.001");
    let mut options = Vec::new();
    for p in [Printer, Replicator] {
        let (group, renew) = if p == Printer {
            (PRINTER_GROUP, PRINTER_RENEW)
        } else {
            (REPLICATOR_GROUP, REPLICATOR_RENEW)
        };
        options.extend([
            numeric(
                p,
                "--window-size",
                ("0.001", "604800"),
                ("0.0009", "604800.001"),
            ),
            numeric(
                p,
                "--safety-interval",
                ("0", "86400"),
                ("-0.001", "86400.001"),
            )
            .idle_at(&["86400"]),
            numeric(p, "--sleep-interval", ("0", "3600"), ("-0.001", "3600.001")),
            numeric(p, "--max-idle-latency", secs_ms_year, past_ms_year),
            numeric(p, "--give-up-after", secs_ms_year, past_ms_year),
            numeric(
                p,
                "--checkpoint-interval",
                ("0", "86400"),
                ("-0.001", "86400.001"),
            )
            .needs(if p == Printer { CP } else { &[] }),
            numeric(
                p,
                "--lease-duration",
                ("0.1", "86400"),
                ("0.099", "86400.001"),
            )
            .needs(group),
            numeric(
                p,
                "--renew-interval",
                ("0.01", "43200"),
                ("0.009", "43200.001"),
            )
            .needs(renew),
            numeric(
                p,
                "--max-rows-per-second",
                ("1", "1000000000"),
                ("0", "1000000001"),
            ),
            numeric(
                p,
                "--progress-interval",
                ("0.1", "86400"),
                ("0.099", "86400.001"),
            ),
            // Early reads need a safety interval longer than their lag: with a day's, a lag
            // of 0 reads the prepared changes early and one of an hour reads none yet.
            numeric(p, "--early-read-lag", ("0", "3600"), ("-0.001", "3600.001"))
                .needs(SAFETY_DAY)
                .idle_at(&["3600"]),
            numeric(
                p,
                "--early-read-poll-interval",
                ("0.001", "3600"),
                ("0.0009", "3600.001"),
            )
            .needs(SAFETY_SECOND),
            numeric(
                p,
                "--max-unconfirmed-rows",
                ("1", "1000000000"),
                ("0", "1000000001"),
            )
            .needs(SAFETY_SECOND),
        ]);
    }
    options.extend([
        // 0 retries the first contact forever; the cluster answers at once either way.
        numeric(
            Printer,
            "--connect-timeout",
            ("0", "31536000"),
            ("-0.001", "31536000.001"),
        ),
        numeric(Printer, "--demo-seconds", secs_ms_year, past_ms_year)
            .needs(&["--demo"])
            .ends_at(&["0.001"]),
        numeric(
            Replicator,
            "--max-in-flight",
            ("1", "65536"),
            ("0", "65537"),
        ),
        numeric(
            Replicator,
            "--max-mib-in-flight",
            ("1", "4095"),
            ("0", "4096"),
        ),
        numeric(
            Replicator,
            "--snapshot-parallelism",
            ("1", "65536"),
            ("0", "65537"),
        )
        .needs(&["--snapshot"]),
        numeric(Verify, "--ranges", ("1", "65536"), ("0", "65537")),
        numeric(Verify, "--parallelism", ("1", "65536"), ("0", "65537")),
        numeric(Verify, "--page-size", ("1", "65536"), ("0", "65537")),
        numeric(Verify, "--give-up-after", secs_ms_year, past_ms_year),
        numeric(
            Verify,
            "--progress-interval",
            ("0.1", "86400"),
            ("0.099", "86400.001"),
        ),
    ]);
    options
}

/// The table covers every numeric option of the programs' clap definitions, every other
/// option that takes a value is known not to be numeric, and each option's `--help` states
/// the range the table tests.
#[test]
fn every_numeric_option_has_its_bounds_in_the_table() {
    let table = numeric_options();
    let mut problems = Vec::new();
    for program in [Program::Printer, Program::Replicator, Program::Verify] {
        let not_numeric: &[&str] = NOT_NUMERIC
            .iter()
            .find(|(p, _)| *p == program)
            .map_or(&[], |(_, o)| o);
        let command = program.command();
        let mut seen = BTreeSet::new();
        for arg in command.get_arguments() {
            if !arg.get_action().takes_values() {
                continue;
            }
            let Some(long) = arg.get_long() else {
                problems.push(format!("{program:?}: {} has no long name", arg.get_id()));
                continue;
            };
            let option = format!("--{long}");
            seen.insert(option.clone());
            let value_name = arg
                .get_value_names()
                .and_then(|v| v.first().cloned())
                .map(|v| v.to_string())
                .unwrap_or_default();
            let entry = table
                .iter()
                .find(|n| n.program == program && n.option == option);
            match entry {
                None if NUMERIC_VALUE_NAMES.contains(&value_name.as_str()) => problems.push(
                    format!("{program:?}: {option} <{value_name}> is numeric but not in the table"),
                ),
                None if !not_numeric.contains(&option.as_str()) => problems.push(format!(
                    "{program:?}: {option} <{value_name}> takes a value but is neither in the \
                     table nor in NOT_NUMERIC"
                )),
                None => {}
                Some(n) => {
                    let help = arg
                        .get_long_help()
                        .or(arg.get_help())
                        .map(|h| h.to_string())
                        .unwrap_or_default();
                    let range = format!("{} to {}", n.min, n.max);
                    if !help.contains(&range) {
                        problems.push(format!(
                            "{program:?}: the help of {option} does not state `{range}`: {help:?}"
                        ));
                    }
                    if not_numeric.contains(&option.as_str()) {
                        problems.push(format!("{program:?}: {option} is in both lists"));
                    }
                }
            }
        }
        for n in table.iter().filter(|n| n.program == program) {
            if !seen.contains(n.option) {
                problems.push(format!(
                    "{program:?}: the table's {} is not an option",
                    n.option
                ));
            }
        }
        for o in not_numeric {
            if !seen.contains(*o) {
                problems.push(format!("{program:?}: NOT_NUMERIC's {o} is not an option"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Rows of the prepared CDC table `t`; the printer's output holds their values.
const ROWS: i32 = 3;
/// The value `v` of the first prepared row (`MARKER + i` for row `i`).
const MARKER: i32 = 7_770_001;
/// Rows of the table `v` that `verify` compares (the same on both sides).
const VERIFY_ROWS: i32 = 5;

/// The shared state of the runs.
struct World {
    session: Arc<Session>,
    host: String,
    ks: String,
    /// The destination keyspace of `verify` (a copy of `v`).
    verify_ks: String,
    /// Before the prepared changes were written: every run reads from here.
    start: String,
    dir: TempDir,
}

/// The arguments of a run of `n` with `value` (`id` makes its checkpoint table, group and
/// destination its own).
fn arguments(world: &World, n: &Numeric, value: &str, id: usize, dest_ks: &str) -> Vec<String> {
    let (host, ks) = (world.host.as_str(), world.ks.as_str());
    let demo = n.needs.contains(&"--demo");
    let snapshot = n.needs.contains(&"--snapshot");
    let mut args: Vec<String> = match n.program {
        Program::Printer if demo => vec![],
        Program::Printer => [
            "--hosts",
            host,
            "-k",
            ks,
            "-t",
            "t",
            "--start",
            &world.start,
            "--safety-interval",
            "0",
            "--sleep-interval",
            "0.1",
            "--progress-interval",
            "0.1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        Program::Replicator => {
            let mut a: Vec<String> = [
                "--source",
                host,
                "--destination",
                host,
                "-k",
                ks,
                "-t",
                "t",
                "--destination-keyspace",
                dest_ks,
                "--safety-interval",
                "0",
                "--sleep-interval",
                "0.1",
                "--progress-interval",
                "0.1",
                "--checkpoint-table",
                "{cp}",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            if !snapshot {
                a.extend(["--start".to_owned(), world.start.clone()]);
            }
            a
        }
        Program::Verify => [
            "verify",
            "--source",
            host,
            "--destination",
            host,
            "-k",
            ks,
            "-t",
            "v",
            "--destination-keyspace",
            &world.verify_ks,
            "--progress-interval",
            "0.1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    // The option under test, and those it needs, replace common ones of the same name.
    for name in n.needs.iter().chain([&n.option]) {
        if name.starts_with("--")
            && let Some(at) = args.iter().position(|a| a == name)
        {
            args.drain(at..at + 2);
        }
    }
    args.extend(n.needs.iter().map(|a| a.to_string()));
    args.push(n.option.to_owned());
    args.push(value.to_owned());
    args.iter()
        .map(|a| {
            a.replace("{cp}", &format!("{}.cp{id}", world.ks))
                .replace("{group}", &format!("g{id}"))
        })
        .collect()
}

/// Waits at most `timeout` for the exit code (not ended by a signal).
async fn exit_code(child: &mut Process, timeout: Duration) -> anyhow::Result<i32> {
    child
        .exit_code(timeout)
        .await?
        .with_context(|| format!("{} ended by a signal", child.name))
}

/// Rows of `ks.t`.
async fn row_count(session: &Session, ks: &str) -> anyhow::Result<i64> {
    let rows = session
        .query_unpaged(format!("SELECT count(*) FROM {ks}.t"), ())
        .await?
        .into_rows_result()?;
    Ok(rows.first_row::<(i64,)>()?.0)
}

/// Runs `n` with `value` and checks that it gives what it must.
async fn run_case(world: &World, n: &Numeric, value: &str, id: usize) -> anyhow::Result<()> {
    let expected = n.expected(value);
    let dest_ks = format!("{}_d{id}", world.ks);
    if n.program == Program::Replicator && expected != Expected::Usage {
        create_keyspace(&world.session, &dest_ks, 1).await?;
        exec(
            &world.session,
            format!("CREATE TABLE {dest_ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck))"),
        )
        .await?;
    }
    let args = arguments(world, n, value, id, &dest_ks);
    let mut child = Process::spawn(n.program.binary(), &id.to_string(), &args, &world.dir)?;
    let result = check_run(world, n, expected, &mut child, &dest_ks).await;
    let err = child.err();
    let code = child.child.try_wait().ok().flatten().and_then(|s| s.code());
    let result = result.and_then(|()| {
        ensure!(!err.contains("panicked"), "stderr has a panic: {err}");
        ensure!(code != Some(101), "exit code 101");
        Ok(())
    });
    result.with_context(|| format!("args {args:?}; stderr ends with: {}", tail(&err)))
}

/// The last lines of a program's output, for a failure's message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(6)..].join("\n")
}

async fn check_run(
    world: &World,
    n: &Numeric,
    expected: Expected,
    child: &mut Process,
    dest_ks: &str,
) -> anyhow::Result<()> {
    match expected {
        Expected::Usage => {
            let code = exit_code(child, Duration::from_secs(20)).await?;
            ensure!(code == 2, "exit code {code}, not 2 (usage)");
            let err = child.err();
            let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
            ensure!(lines.len() == 1, "{} lines on stderr, not one", lines.len());
            let line = lines[0];
            let range = format!("{} to {}", n.min, n.max);
            ensure!(
                line.starts_with("error: ") && line.contains(n.option) && line.contains(&range),
                "the error line does not name {} and `{range}`: {line}",
                n.option
            );
            ensure!(child.out().is_empty(), "stdout: {}", tail(&child.out()));
        }
        Expected::Ends => {
            let code = exit_code(child, Duration::from_secs(120)).await?;
            ensure!(code == 0, "exit code {code}, not 0");
            if n.program == Program::Verify {
                let want = format!("rows compared {VERIFY_ROWS}, missing 0, extra 0, different 0");
                ensure!(
                    child.out().contains(&want),
                    "the report is not `{want}`: {}",
                    tail(&child.out())
                );
            }
        }
        Expected::Runs | Expected::RunsIdle => {
            let began = Instant::now();
            loop {
                if let Some(status) = child.child.try_wait()? {
                    bail!("ended before it was stopped ({status})");
                }
                let done = match (expected, n.program) {
                    (Expected::RunsIdle, _) => child.err().contains("progress:"),
                    (_, Program::Printer) if n.needs.contains(&"--demo") => {
                        child.out().lines().count() >= 3
                    }
                    (_, Program::Printer) => {
                        let out = child.out();
                        (0..ROWS).all(|i| out.contains(&(MARKER + i).to_string()))
                    }
                    _ => row_count(&world.session, dest_ks).await? >= i64::from(ROWS),
                };
                if done {
                    break;
                }
                ensure!(
                    began.elapsed() < Duration::from_secs(60),
                    "{} within 60 s (stdout ends with: {})",
                    if expected == Expected::RunsIdle {
                        "no progress line"
                    } else {
                        "the prepared changes were not read"
                    },
                    tail(&child.out())
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            child.sigterm()?;
            let code = exit_code(child, Duration::from_secs(20))
                .await
                .context("after SIGTERM")?;
            ensure!(code == 0, "exit code {code} after SIGTERM, not 0");
        }
    }
    Ok(())
}

/// Most runs at once: the machine has two cores, shared with the cluster.
const CONCURRENT_RUNS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_numeric_option_at_its_bounds() -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    setup_tracing();
    let began = Instant::now();
    let cluster = EmbeddedCluster::builder().nodes(1).start().await?;
    let contact = cluster.contact_point();
    assert!(contact.ip().is_loopback(), "{contact}");
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    let verify_ks = format!("{ks}_v");
    create_keyspace(&session, &ks, 1).await?;
    create_keyspace(&session, &verify_ks, 1).await?;
    exec(
        &session,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    for k in [&ks, &verify_ks] {
        exec(
            &session,
            format!("CREATE TABLE {k}.v (pk int, ck int, v int, PRIMARY KEY (pk, ck))"),
        )
        .await?;
        for i in 0..VERIFY_ROWS {
            exec(
                &session,
                format!(
                    "INSERT INTO {k}.v (pk, ck, v) VALUES ({i}, {i}, {i}) USING TIMESTAMP {}",
                    1_700_000_000_000_000i64 + i64::from(i)
                ),
            )
            .await?;
        }
    }
    let start = (Utc::now() - chrono::TimeDelta::milliseconds(10))
        .to_rfc3339_opts(SecondsFormat::Micros, true);
    for i in 0..ROWS {
        exec(
            &session,
            format!(
                "INSERT INTO {ks}.t (pk, ck, v) VALUES ({i}, {i}, {})",
                MARKER + i
            ),
        )
        .await?;
    }
    let world = Arc::new(World {
        session,
        host: contact.to_string(),
        ks,
        verify_ks,
        start,
        dir: TempDir::new(),
    });
    let prepared = began.elapsed();

    let limit = Arc::new(Semaphore::new(CONCURRENT_RUNS));
    let mut runs = tokio::task::JoinSet::new();
    let mut id = 0;
    for n in numeric_options() {
        for value in n.values() {
            id += 1;
            let (world, limit) = (world.clone(), limit.clone());
            runs.spawn(async move {
                let _permit = limit.acquire_owned().await;
                let t = Instant::now();
                let result = run_case(&world, &n, value, id).await;
                (n, value, result, t.elapsed())
            });
        }
    }
    let mut outcomes = Vec::new();
    while let Some(joined) = runs.join_next().await {
        outcomes.push(joined?);
    }
    outcomes.sort_by_key(|(n, v, _, _)| (n.program, n.option, *v));
    let mut table = String::new();
    let mut failures = Vec::new();
    for (n, value, result, took) in &outcomes {
        let _ = writeln!(
            table,
            "{:?} {} {value}: {:?} ({:.1} s){}",
            n.program,
            n.option,
            n.expected(value),
            took.as_secs_f64(),
            if result.is_ok() { "" } else { " FAILED" }
        );
        if let Err(e) = result {
            failures.push(format!("{:?} {} {value}: {e:#}", n.program, n.option));
        }
    }
    println!(
        "{} runs in {:.1} s (cluster and data {:.1} s):\n{table}",
        outcomes.len(),
        began.elapsed().as_secs_f64(),
        prepared.as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        outcomes.len(),
        failures.join("\n")
    );
    let world = Arc::into_inner(world).expect("every run has ended");
    drop(world.session);
    cluster.shutdown().await;
    Ok(())
}
