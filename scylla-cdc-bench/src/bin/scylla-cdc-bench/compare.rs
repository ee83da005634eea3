//! `scylla-cdc-bench compare`: this workspace's log reader and scylla-cdc-rust 0.7.0 (from
//! crates.io) reading the same backlog, side by side, in one run.
//!
//! The program starts one embedded cluster in its own process and preloads a CDC table
//! (`bench.t`, `--partitions` × `--rows` single-row inserts, see
//! `scylla_emulator::Preload`), then runs each reader `--reps` times, each run in a
//! child process (this binary re-executed with a hidden `child` subcommand), alternating
//! the two systems (ours first in odd repetitions, upstream first in even ones). Both read
//! exactly the backlog (from before the cluster started to just after the last preloaded
//! write) with the same window size, safety interval and sleep interval, and the same
//! consumer: count the row, decode `v`, add it to a checksum.
//!
//! Per run: rows/s (the child's time from `build()` until its handle resolved), the child's
//! CPU time per row (`getrusage(RUSAGE_CHILDREN)` around the run: the whole child, connecting
//! included), the child's peak RSS (its `VmHWM`), the cluster's CPU time per row served (this
//! process's CPU time during the run: it only serves the cluster meanwhile), the cores the
//! cluster kept busy (that CPU time over the read time: near the machine's free cores, or
//! near one per shard, the cluster would be what limits rows/s), and whether the row count
//! and checksum are those written. Then the medians per system and one closing line
//! `ours/upstream: rows_per_s=X cpu_per_row=Y peak_rss=Z` (ratios of the medians). The exit
//! status is 1 when a run delivered a wrong count or checksum, or failed.
//!
//! ```text
//! cargo run --release -p scylla-cdc-bench -- compare
//! cargo run --release -p scylla-cdc-bench -- compare --nodes 3
//! ```
//!
//! `--replicator` would compare the replicators, but scylla-cdc-rust's replicator is not
//! published on crates.io (only its `scylla-cdc` library is): the flag says so and exits
//! with status 2.

mod child;

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use scylla_cdc_bench::{Backlog, BacklogShape, children_cpu_time, median, mib, own_usage};

use child::{ChildArgs, ChildResult, System};

/// Our CDC log reader vs scylla-cdc-rust 0.7.0 on the same preloaded backlog, alternating
/// runs in child processes.
#[derive(Debug, Parser)]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Hidden>,
    /// The cluster and its preloaded backlog.
    #[command(flatten)]
    shape: BacklogShape,
    /// Runs of each system.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Window size of both readers, seconds.
    #[arg(long, default_value_t = 60.0)]
    window_size: f64,
    /// Safety interval of both readers, milliseconds.
    #[arg(long, default_value_t = 1)]
    safety_interval_ms: u64,
    /// Sleep interval of both readers, milliseconds.
    #[arg(long, default_value_t = 100)]
    sleep_interval_ms: u64,
    /// Tokio worker threads of the children (default: tokio's, one per core).
    #[arg(long)]
    child_workers: Option<usize>,
    /// Tokio worker threads of this process's runtime, which serves the embedded cluster.
    /// With one per core (2 here) the cluster served both shards' connections mostly from
    /// one thread, at about 95% of it, and capped our reader at ~3.0 M rows/s on one node
    /// while using under one of the 2 cores; idle workers to take waiting connections over
    /// keep the cluster from being what limits a reader.
    #[arg(long, default_value_t = 4)]
    cluster_workers: usize,
    /// Compare the replicators instead (not available: upstream's is not published).
    #[arg(long)]
    replicator: bool,
    /// Makes this system's consumer leave one row out (tests of the correctness verdict).
    #[arg(long, hide = true, value_enum)]
    drop_one_row: Option<System>,
}

#[derive(Debug, Subcommand)]
enum Hidden {
    /// One run of one system (started by the parent).
    #[command(hide = true)]
    Child(ChildArgs),
}

const KEYSPACE: &str = "bench";
const TABLE: &str = "t";

/// The message of `--replicator`.
const NO_UPSTREAM_REPLICATOR: &str = "compare-bench --replicator: scylla-cdc-rust's replicator \
(scylla-cdc-replicator in scylladb/scylla-cdc-rust) is not published on crates.io, only its \
scylla-cdc library is, so there is no upstream replicator to build here and compare with; \
`scylla-cdc-bench replicator` measures this workspace's replicator on its own.";

pub(crate) fn main() -> ExitCode {
    let args = Args::parse_from(crate::program_args());
    if let Some(Hidden::Child(child)) = args.command {
        return match child::run(child) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("compare-bench child: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    if args.replicator {
        eprintln!("{NO_UPSTREAM_REPLICATOR}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.cluster_workers.max(1))
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("compare-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(compare(&args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("compare-bench: a run delivered a wrong row count or checksum, or failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("compare-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One child run as the parent measured it.
#[derive(Debug, Clone)]
struct Run {
    system: System,
    rep: usize,
    /// What the child reported, or why it failed.
    result: Result<ChildResult, String>,
    /// The child's CPU time (user + system).
    cpu: Duration,
    /// The cluster's (this process's) CPU time during the run.
    cluster_cpu: Duration,
    /// Whether count and checksum are those written.
    correct: bool,
}

impl Run {
    fn rows_per_s(&self) -> Option<f64> {
        let r = self.result.as_ref().ok()?;
        Some(r.rows as f64 / r.read_time.as_secs_f64().max(1e-9))
    }

    fn cpu_per_row_us(&self, rows: u64) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / rows.max(1) as f64
    }

    /// The cores the cluster kept busy while the child read: its CPU time over the read
    /// time (the machine's cores, shared with the child, bound it; so does one core per
    /// shard, as a shard's connections are served one request at a time).
    fn cluster_cores(&self) -> Option<f64> {
        let r = self.result.as_ref().ok()?;
        Some(self.cluster_cpu.as_secs_f64() / r.read_time.as_secs_f64().max(1e-9))
    }
}

/// Medians of one system's correct runs: rows/s, client CPU µs/row, peak RSS (bytes),
/// cluster CPU µs/row, cores the cluster kept busy.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Medians {
    rows_per_s: f64,
    cpu_per_row_us: f64,
    peak_rss: f64,
    cluster_cpu_per_row_us: f64,
    cluster_cores: f64,
}

fn medians(runs: &[Run], system: System, rows: u64) -> Option<Medians> {
    let good: Vec<&Run> = runs
        .iter()
        .filter(|r| r.system == system && r.correct)
        .collect();
    Some(Medians {
        rows_per_s: median(good.iter().filter_map(|r| r.rows_per_s()).collect())?,
        cpu_per_row_us: median(good.iter().map(|r| r.cpu_per_row_us(rows)).collect())?,
        peak_rss: median(
            good.iter()
                .filter_map(|r| r.result.as_ref().ok().map(|c| c.peak_rss as f64))
                .collect(),
        )?,
        cluster_cpu_per_row_us: median(
            good.iter()
                .map(|r| r.cluster_cpu.as_secs_f64() * 1e6 / rows.max(1) as f64)
                .collect(),
        )?,
        cluster_cores: median(good.iter().filter_map(|r| r.cluster_cores()).collect())?,
    })
}

/// The closing line: ratios of the medians, ours over upstream.
fn ratio_line(ours: &Medians, upstream: &Medians) -> String {
    format!(
        "ours/upstream: rows_per_s={:.3} cpu_per_row={:.3} peak_rss={:.3}",
        ours.rows_per_s / upstream.rows_per_s,
        ours.cpu_per_row_us / upstream.cpu_per_row_us,
        ours.peak_rss / upstream.peak_rss
    )
}

/// Which system runs first in repetition `rep` (from 0): they take turns.
fn order(rep: usize) -> [System; 2] {
    if rep.is_multiple_of(2) {
        [System::Ours, System::Upstream]
    } else {
        [System::Upstream, System::Ours]
    }
}

/// Preloads, runs every child, prints the table; `Ok(false)` if a run was wrong or failed.
async fn compare(args: &Args) -> anyhow::Result<bool> {
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    if !(args.window_size > 0.0 && args.window_size.is_finite()) {
        bail!("--window-size must be a positive number of seconds");
    }
    let total = args.shape.total_rows()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "compare-bench: {total} rows ({}), {} cluster workers; {} reps; window {} s, safety {} \
         ms, sleep {} ms; {cores} cores",
        args.shape.describe(),
        args.cluster_workers,
        args.reps,
        args.window_size,
        args.safety_interval_ms,
        args.sleep_interval_ms,
    );
    let shape = args.shape;
    let Backlog {
        cluster,
        start_ms,
        end_ms,
    } = Backlog::start(KEYSPACE, TABLE, shape, args.safety_interval_ms).await?;
    let (want_rows, want_checksum) = child::expected(total);

    println!(
        "\n{:>3}  {:<8}  {:>10}  {:<7}  {:>10}  {:>13}  {:>10}  {:>14}  {:>13}",
        "rep",
        "system",
        "rows",
        "correct",
        "rows/s",
        "client µs/row",
        "peak RSS",
        "cluster µs/row",
        "cluster cores"
    );
    let mut runs = Vec::new();
    for rep in 0..args.reps {
        for system in order(rep) {
            let child = ChildArgs {
                system,
                contact: cluster.contact_point(),
                keyspace: KEYSPACE.into(),
                table: TABLE.into(),
                start_ms,
                end_ms,
                window_ms: (args.window_size * 1000.0).round().max(1.0) as u64,
                safety_ms: args.safety_interval_ms,
                sleep_ms: args.sleep_interval_ms,
                workers: args.child_workers,
                drop_one_row: args.drop_one_row == Some(system),
            };
            let mut run = run_child(&child, rep).await?;
            run.correct = run
                .result
                .as_ref()
                .is_ok_and(|r| (r.rows, r.checksum) == (want_rows, want_checksum));
            print_run(&run, want_rows);
            runs.push(run);
        }
    }
    cluster.shutdown().await;

    println!();
    let ours = medians(&runs, System::Ours, want_rows);
    let upstream = medians(&runs, System::Upstream, want_rows);
    for (system, m) in [(System::Ours, &ours), (System::Upstream, &upstream)] {
        match m {
            Some(m) => println!(
                "median {:<8}  {:>10.0} rows/s  {:.3} client µs/row  {}  {:.3} cluster µs/row  \
                 {:.2} cluster cores",
                system.name(),
                m.rows_per_s,
                m.cpu_per_row_us,
                mib(m.peak_rss as u64),
                m.cluster_cpu_per_row_us,
                m.cluster_cores
            ),
            None => println!("median {:<8}  no correct run", system.name()),
        }
    }
    if let (Some(o), Some(u)) = (&ours, &upstream) {
        println!("{}", ratio_line(o, u));
    }
    Ok(runs.iter().all(|r| r.correct))
}

/// Runs one child and measures it.
async fn run_child(child: &ChildArgs, rep: usize) -> anyhow::Result<Run> {
    let exe = std::env::current_exe().context("finding this program")?;
    let mut command = tokio::process::Command::new(exe);
    command
        .args([
            "compare",
            "child",
            "--system",
            child.system.name(),
            "--contact",
            &child.contact.to_string(),
            "--keyspace",
            &child.keyspace,
            "--table",
            &child.table,
            "--start-ms",
            &child.start_ms.to_string(),
            "--end-ms",
            &child.end_ms.to_string(),
            "--window-ms",
            &child.window_ms.to_string(),
            "--safety-ms",
            &child.safety_ms.to_string(),
            "--sleep-ms",
            &child.sleep_ms.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(w) = child.workers {
        command.args(["--workers", &w.to_string()]);
    }
    if child.drop_one_row {
        command.arg("--drop-one-row");
    }
    let (own_before, _) = own_usage();
    let children_before = children_cpu_time();
    let output = command.output().await.context("running a child")?;
    let cluster_cpu = own_usage().0.saturating_sub(own_before);
    let cpu = children_cpu_time().saturating_sub(children_before);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = if output.status.success() {
        ChildResult::parse(&stdout).map_err(|e| format!("{e:#}"))
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!("{}: {}", output.status, stderr.trim()))
    };
    Ok(Run {
        system: child.system,
        rep: rep + 1,
        result,
        cpu,
        cluster_cpu,
        correct: false,
    })
}

fn print_run(run: &Run, want_rows: u64) {
    match &run.result {
        Ok(r) => println!(
            "{:>3}  {:<8}  {:>10}  {:<7}  {:>10.0}  {:>13.3}  {:>10}  {:>14.3}  {:>13.2}",
            run.rep,
            run.system.name(),
            r.rows,
            if run.correct { "yes" } else { "WRONG" },
            run.rows_per_s().unwrap_or(0.0),
            run.cpu_per_row_us(want_rows),
            mib(r.peak_rss),
            run.cluster_cpu.as_secs_f64() * 1e6 / want_rows.max(1) as f64,
            run.cluster_cores().unwrap_or(0.0),
        ),
        Err(e) => println!("{:>3}  {:<8}  FAILED: {e}", run.rep, run.system.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systems_take_turns_going_first() {
        assert_eq!(order(0), [System::Ours, System::Upstream]);
        assert_eq!(order(1), [System::Upstream, System::Ours]);
    }

    fn run(system: System, rows_per_s: u64, cpu_ms: u64, rss: u64, correct: bool) -> Run {
        Run {
            system,
            rep: 1,
            result: Ok(ChildResult {
                rows: rows_per_s,
                checksum: 0,
                read_time: Duration::from_secs(1),
                peak_rss: rss,
            }),
            cpu: Duration::from_millis(cpu_ms),
            cluster_cpu: Duration::from_millis(cpu_ms * 2),
            correct,
        }
    }

    #[test]
    fn the_closing_line_divides_the_medians_of_correct_runs() {
        let runs = vec![
            run(System::Ours, 300, 1, 10, true),
            run(System::Upstream, 200, 4, 20, true),
            run(System::Ours, 100, 3, 30, true),
            run(System::Upstream, 100, 2, 20, true),
            run(System::Ours, 200, 2, 20, true),
            // A wrong run does not count.
            run(System::Upstream, 1, 1000, 1000, false),
        ];
        let ours = medians(&runs, System::Ours, 1000).unwrap();
        let upstream = medians(&runs, System::Upstream, 1000).unwrap();
        assert_eq!(ours.rows_per_s, 200.0);
        assert_eq!(upstream.rows_per_s, 150.0);
        assert_eq!(ours.cpu_per_row_us, 2.0);
        assert_eq!(upstream.cpu_per_row_us, 3.0);
        assert_eq!(ours.cluster_cpu_per_row_us, 4.0);
        // 4 ms of the cluster's CPU during a read of 1 s.
        assert_eq!(ours.cluster_cores, 0.004);
        assert_eq!(
            ratio_line(&ours, &upstream),
            "ours/upstream: rows_per_s=1.333 cpu_per_row=0.667 peak_rss=1.000"
        );
        assert_eq!(medians(&runs[..1], System::Upstream, 1000), None);
    }
}
