//! `scylla-cdc-bench group`: 1, 2, 3 members of one consumer group sharing the catch-up of a
//! backlog, each member a process of its own, and the lease traffic the group costs.
//!
//! The program starts one embedded cluster in its own process and preloads a CDC table
//! (`bench.t`, `--partitions` × `--rows` single-row inserts, see
//! `scylla_emulator::Preload`) in a vnode keyspace. Then, for each N of `--members`:
//!
//! 1. **Catch-up**, `--reps` times. N member processes (this binary re-executed with a hidden `member`
//!    subcommand) with one group name, fresh for this N, and a fresh checkpoint table (so each
//!    N reads the whole backlog) connect, then start at once and read from before the
//!    cluster started to the end of the backlog (`end_timestamp`), each with a counting
//!    consumer (count the row, decode `v`, add it to a checksum). The run ends when every
//!    member's handle resolved. Measured: the time from the start to the last row any member
//!    delivered (rows/s = backlog / that time; speedup = rows/s over that of one member), the
//!    time until every member finished, each member's rows and CPU time, the members' CPU
//!    time per row (`getrusage(RUSAGE_CHILDREN)`), the cluster's (this process's) CPU time
//!    per row, and the requests to the group's lease table per second (reads, LWTs, other
//!    writes, counted by the cluster: `EmbeddedCluster::count_table_requests`). The union's
//!    row count and checksum must be exactly those written: with no failure a group delivers
//!    each change once.
//! 2. **Idle.** N members of another fresh group start at the end of the backlog, with no
//!    end: after a lease duration (the members have joined and divided the units), the lease
//!    table's requests are counted for `--idle-secs`, then the members stop. They must
//!    deliver nothing.
//!
//! Per N: a line per member and catch-up, a line per catch-up, then, at the end, one summary
//! line per N with the medians of its catch-ups and the idle figures:
//! `members=N rows_per_s=... speedup=... cpu_us_per_row=... lease_requests_per_s=... ...`.
//! Lease requests per member are the total over N: every member runs the same rounds (one
//! read of the group's partition and one conditional renewal batch per renew interval). The
//! exit status is 1 when a run's union has a wrong count or checksum, or a member failed.
//!
//! ```text
//! cargo run --release -p scylla-cdc-bench -- group
//! cargo run --release -p scylla-cdc-bench -- group --nodes 3
//! ```

mod member;

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use scylla_cdc_bench::{
    Backlog, BacklogShape, backlog_checksum, children_cpu_time, median, mib, own_usage,
};
use scylla_emulator::{EmbeddedCluster, TableRequestCounts};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use member::{MemberArgs, MemberResult, READY};

/// Members of one consumer group sharing the catch-up of a preloaded backlog, each in a
/// process of its own, for 1, 2, 3 members; and the lease traffic of the group.
#[derive(Debug, Parser)]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Hidden>,
    /// The cluster and its preloaded backlog.
    #[command(flatten)]
    shape: BacklogShape,
    /// Group sizes to run, in order.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    members: Vec<usize>,
    /// Catch-ups per group size (each by a fresh group; the summary has the medians).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Window size of the readers, seconds (a unit handed over is read to the end of its
    /// window first).
    #[arg(long, default_value_t = 1.0)]
    window_size: f64,
    /// Safety interval of the readers, milliseconds.
    #[arg(long, default_value_t = 1)]
    safety_interval_ms: u64,
    /// Sleep interval of the readers, milliseconds.
    #[arg(long, default_value_t = 100)]
    sleep_interval_ms: u64,
    /// Lease duration, milliseconds (the library's default: 10 s).
    #[arg(long, default_value_t = 10_000)]
    lease_ms: u64,
    /// Renew interval, milliseconds (default: the library's, a third of the lease).
    #[arg(long)]
    renew_ms: Option<u64>,
    /// Least time between two checkpoints of a unit, milliseconds (default: the library's).
    #[arg(long)]
    pause_between_saves_ms: Option<u64>,
    /// Seconds the idle group's lease traffic is counted.
    #[arg(long, default_value_t = 10.0)]
    idle_secs: f64,
    /// Tokio worker threads of each member (default: tokio's, one per core).
    #[arg(long)]
    member_workers: Option<usize>,
    /// Tokio worker threads of this process's runtime, which serves the embedded cluster
    /// (as in `scylla-cdc-bench compare`: with one per core, the cluster served both shards'
    /// connections mostly from one thread).
    #[arg(long, default_value_t = 4)]
    cluster_workers: usize,
    /// Writes each member's output (its reader's log at `RUST_LOG`'s level, e.g.
    /// `RUST_LOG=scylla_cdc=info`) and error output to `DIR/<group>-<member>.log`.
    #[arg(long, value_name = "DIR")]
    member_logs: Option<std::path::PathBuf>,
    /// Makes every member leave its first row out (tests of the correctness verdict).
    #[arg(long, hide = true)]
    drop_one_row: bool,
}

#[derive(Debug, Subcommand)]
enum Hidden {
    /// One member (started by the parent).
    #[command(hide = true)]
    Member(MemberArgs),
}

const KEYSPACE: &str = "bench";
const TABLE: &str = "t";
/// How long a member may take to connect and make its checkpoint table.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn main() -> ExitCode {
    let args = Args::parse_from(crate::program_args());
    if let Some(Hidden::Member(member)) = args.command {
        return match member::run(member) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("group-bench member: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.cluster_workers.max(1))
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("group-bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(&args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("group-bench: a group delivered a wrong row count or checksum, or failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("group-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A member process the parent talks to.
struct Member {
    id: String,
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

impl Member {
    fn spawn(args: &MemberArgs, drop_one_row: bool) -> anyhow::Result<Member> {
        let exe = std::env::current_exe().context("finding this program")?;
        let mut command = tokio::process::Command::new(exe);
        command.args([
            "group",
            "member",
            "--contact",
            &args.contact.to_string(),
            "--keyspace",
            &args.keyspace,
            "--table",
            &args.table,
            "--checkpoint-table",
            &args.checkpoint_table,
            "--group",
            &args.group,
            "--member-id",
            &args.member_id,
            "--start-ms",
            &args.start_ms.to_string(),
            "--window-ms",
            &args.window_ms.to_string(),
            "--safety-ms",
            &args.safety_ms.to_string(),
            "--sleep-ms",
            &args.sleep_ms.to_string(),
            "--lease-ms",
            &args.lease_ms.to_string(),
        ]);
        let optional = [
            ("--end-ms", args.end_ms),
            ("--renew-ms", args.renew_ms),
            ("--pause-between-saves-ms", args.pause_between_saves_ms),
            ("--workers", args.workers.map(|w| w as u64)),
        ];
        for (flag, value) in optional {
            if let Some(v) = value {
                command.args([flag, &v.to_string()]);
            }
        }
        if drop_one_row {
            command.arg("--drop-one-row");
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().context("starting a member")?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            bail!("a member without its pipes");
        };
        // Read all along, so that a chatty member never blocks on a full pipe.
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        Ok(Member {
            id: args.member_id.clone(),
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stderr,
        })
    }

    /// Waits until the member is connected and waits for the start.
    async fn ready(&mut self) -> anyhow::Result<()> {
        let wait = async {
            while let Some(line) = self.stdout.next_line().await? {
                if line == READY {
                    return Ok(true);
                }
            }
            anyhow::Ok(false)
        };
        match tokio::time::timeout(READY_TIMEOUT, wait).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => {
                let _ = self.child.wait().await;
                let stderr = (&mut self.stderr).await.unwrap_or_default();
                bail!(
                    "member {} ended before it was ready: {}",
                    self.id,
                    stderr.trim()
                )
            }
            Ok(Err(e)) => Err(e).context("reading a member's output"),
            Err(_) => bail!("member {} not ready after {READY_TIMEOUT:?}", self.id),
        }
    }

    /// Sends a line (the start, or the stop of an idle member).
    async fn tell(&mut self, line: &str) -> anyhow::Result<()> {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Waits for the member's end: its result, or why it failed.
    async fn finish(mut self, log: Option<std::path::PathBuf>) -> Result<MemberResult, String> {
        let mut output = String::new();
        while let Ok(Some(line)) = self.stdout.next_line().await {
            output.push_str(&line);
            output.push('\n');
        }
        let status = self.child.wait().await.map_err(|e| e.to_string())?;
        let stderr = self.stderr.await.unwrap_or_default();
        if let Some(path) = log
            && let Err(e) = std::fs::write(&path, format!("{output}{stderr}"))
        {
            eprintln!("group-bench: cannot write {}: {e}", path.display());
        }
        if status.success() {
            MemberResult::parse(&output).map_err(|e| format!("{e:#}"))
        } else {
            Err(format!("{status}: {}", stderr.trim()))
        }
    }
}

/// One phase (catch-up or idle) of one group size, as measured.
struct Phase {
    /// Each member's result, in member order.
    members: Vec<(String, Result<MemberResult, String>)>,
    /// From the start until every member ended.
    finished: Duration,
    /// From the start until the last row delivered (none: no row).
    delivered: Option<Duration>,
    /// The members' CPU time, all together.
    client_cpu: Duration,
    /// This process's (the cluster's) CPU time during the phase.
    cluster_cpu: Duration,
    /// Requests to the lease table in the measured span, and that span.
    lease: TableRequestCounts,
    lease_span: Duration,
}

impl Phase {
    /// The union's rows and checksum; `None` if a member failed.
    fn union(&self) -> Option<(u64, u64)> {
        let mut rows = 0u64;
        let mut checksum = 0u64;
        for (_, r) in &self.members {
            let r = r.as_ref().ok()?;
            rows += r.rows;
            checksum = checksum.wrapping_add(r.checksum);
        }
        Some((rows, checksum))
    }
}

/// Requests per second of `counts` over `span`: (LWTs, reads, other writes, all).
fn rates(counts: &TableRequestCounts, span: Duration) -> (f64, f64, f64, f64) {
    let s = span.as_secs_f64().max(1e-9);
    let (l, r, w) = (
        counts.lwts as f64 / s,
        counts.reads as f64 / s,
        counts.writes as f64 / s,
    );
    (l, r, w, l + r + w)
}

fn delta(after: TableRequestCounts, before: TableRequestCounts) -> TableRequestCounts {
    let mut d = TableRequestCounts::default();
    d.reads = after.reads.saturating_sub(before.reads);
    d.writes = after.writes.saturating_sub(before.writes);
    d.lwts = after.lwts.saturating_sub(before.lwts);
    d
}

/// What is common to every member of one phase.
struct PhaseSpec<'a> {
    args: &'a Args,
    cluster: &'a EmbeddedCluster,
    members: usize,
    /// Names the group and its checkpoint table.
    tag: String,
    start_ms: u64,
    end_ms: Option<u64>,
}

/// Runs one phase: starts the members, starts them at once, and measures until they end
/// (catch-up: on their own; idle: told to stop after a lease duration and `--idle-secs`).
async fn run_phase(spec: PhaseSpec<'_>) -> anyhow::Result<Phase> {
    let args = spec.args;
    let checkpoint_table = format!("checkpoints_{}", spec.tag);
    let lease_table = format!("{checkpoint_table}_leases");
    spec.cluster.count_table_requests(KEYSPACE, &lease_table);
    let mut members = Vec::new();
    for i in 1..=spec.members {
        let member = MemberArgs {
            contact: spec.cluster.contact_point(),
            keyspace: KEYSPACE.into(),
            table: TABLE.into(),
            checkpoint_table: checkpoint_table.clone(),
            group: format!("group_{}", spec.tag),
            member_id: format!("member-{i}"),
            start_ms: spec.start_ms,
            end_ms: spec.end_ms,
            window_ms: (args.window_size * 1000.0).round().max(1.0) as u64,
            safety_ms: args.safety_interval_ms,
            sleep_ms: args.sleep_interval_ms,
            lease_ms: args.lease_ms,
            renew_ms: args.renew_ms,
            pause_between_saves_ms: args.pause_between_saves_ms,
            workers: args.member_workers,
            drop_one_row: false,
        };
        members.push(Member::spawn(&member, args.drop_one_row)?);
    }
    for m in &mut members {
        m.ready().await?;
    }
    let lease_before = spec.cluster.table_request_counts(KEYSPACE, &lease_table);
    let (own_before, _) = own_usage();
    let children_before = children_cpu_time();
    let started = Instant::now();
    let started_us = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_micros(),
    )?;
    for m in &mut members {
        m.tell("start").await?;
    }
    let mut idle_counts = None;
    if spec.end_ms.is_none() {
        // Idle: count once the members have joined and divided the units, then stop them.
        tokio::time::sleep(Duration::from_millis(args.lease_ms)).await;
        let from = spec.cluster.table_request_counts(KEYSPACE, &lease_table);
        let span = Duration::from_secs_f64(args.idle_secs);
        tokio::time::sleep(span).await;
        let to = spec.cluster.table_request_counts(KEYSPACE, &lease_table);
        idle_counts = Some((delta(to, from), span));
        for m in &mut members {
            // A member that already failed is seen in its result.
            let _ = m.tell("stop").await;
        }
    }
    // All at once: a member's output is read while it runs, so that none blocks on a full
    // pipe while another is waited for.
    let results = futures::future::join_all(members.into_iter().map(|m| async {
        let id = m.id.clone();
        let log = args
            .member_logs
            .as_ref()
            .map(|dir| dir.join(format!("group_{}-{id}.log", spec.tag)));
        (id, m.finish(log).await)
    }))
    .await;
    let finished = started.elapsed();
    let client_cpu = children_cpu_time().saturating_sub(children_before);
    let cluster_cpu = own_usage().0.saturating_sub(own_before);
    let last_row_us = results
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().map(|r| r.last_row_us))
        .max()
        .unwrap_or(0);
    let delivered =
        (last_row_us > 0).then(|| Duration::from_micros(last_row_us.saturating_sub(started_us)));
    let (lease, lease_span) = match idle_counts {
        Some(idle) => idle,
        None => (
            delta(
                spec.cluster.table_request_counts(KEYSPACE, &lease_table),
                lease_before,
            ),
            finished,
        ),
    };
    Ok(Phase {
        members: results,
        finished,
        delivered,
        client_cpu,
        cluster_cpu,
        lease,
        lease_span,
    })
}

/// The summary of one group size.
struct Summary {
    members: usize,
    rows_per_s: f64,
    cpu_us_per_row: f64,
    cluster_cpu_us_per_row: f64,
    catch_up: (f64, f64, f64, f64),
    idle: (f64, f64, f64, f64),
    correct: bool,
}

impl Summary {
    fn line(&self, base_rows_per_s: f64) -> String {
        let (lwt, reads, _, all) = self.catch_up;
        let (idle_lwt, idle_reads, _, idle_all) = self.idle;
        format!(
            "members={} rows_per_s={:.0} speedup={:.2} cpu_us_per_row={:.3} \
             cluster_cpu_us_per_row={:.3} lease_requests_per_s={:.2} lease_lwts_per_s={:.2} \
             lease_reads_per_s={:.2} idle_lease_requests_per_s={:.2} \
             idle_lease_lwts_per_s={:.2} idle_lease_reads_per_s={:.2} correct={}",
            self.members,
            self.rows_per_s,
            self.rows_per_s / base_rows_per_s.max(1e-9),
            self.cpu_us_per_row,
            self.cluster_cpu_us_per_row,
            all,
            lwt,
            reads,
            idle_all,
            idle_lwt,
            idle_reads,
            if self.correct { "yes" } else { "WRONG" }
        )
    }
}

/// Preloads, runs every group size, prints the tables and summaries; `Ok(false)` if a
/// group delivered a wrong union or a member failed.
async fn bench(args: &Args) -> anyhow::Result<bool> {
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    if args.members.is_empty() || args.members.contains(&0) {
        bail!("--members must list group sizes of at least 1");
    }
    if !(args.window_size > 0.0 && args.window_size.is_finite()) {
        bail!("--window-size must be a positive number of seconds");
    }
    if !(args.idle_secs > 0.0 && args.idle_secs.is_finite()) {
        bail!("--idle-secs must be a positive number of seconds");
    }
    let total = args.shape.total_rows()?;
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "group-bench: {total} rows ({}); members {:?}, {} reps; window {} s, safety {} ms, sleep \
         {} ms; lease {} ms, renew {}; idle {} s; {cores} cores",
        args.shape.describe(),
        args.members,
        args.reps,
        args.window_size,
        args.safety_interval_ms,
        args.sleep_interval_ms,
        args.lease_ms,
        args.renew_ms
            .map_or("a third of it".to_owned(), |r| format!("{r} ms")),
        args.idle_secs,
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
    let shape = args.shape;
    let Backlog {
        cluster,
        start_ms,
        end_ms,
    } = Backlog::start(KEYSPACE, TABLE, shape, args.safety_interval_ms).await?;
    let (want_rows, want_checksum) = backlog_checksum(total);

    let mut summaries: Vec<Summary> = Vec::new();
    for &n in &args.members {
        println!("\n{n} member(s)");
        println!(
            "  {:>3}  {:<10}  {:>10}  {:>6}  {:>8}  {:>10}  {:>10}",
            "rep", "member", "rows", "share", "CPU s", "µs/row", "peak RSS"
        );
        let mut runs = Vec::new();
        for rep in 1..=args.reps {
            let catch_up = run_phase(PhaseSpec {
                args,
                cluster: &cluster,
                members: n,
                tag: format!("m{n}_r{rep}"),
                start_ms,
                end_ms: Some(end_ms),
            })
            .await?;
            let run = CatchUp::of(&catch_up, want_rows, want_checksum);
            print_catch_up(rep, &catch_up, &run, want_rows);
            runs.push(run);
        }
        let idle = run_phase(PhaseSpec {
            args,
            cluster: &cluster,
            members: n,
            tag: format!("m{n}_idle"),
            start_ms: end_ms,
            end_ms: None,
        })
        .await?;
        summaries.push(summarize(n, &runs, &idle));
    }
    cluster.shutdown().await;

    println!();
    let base = summaries
        .iter()
        .find(|s| s.members == 1)
        .or(summaries.first())
        .map_or(0.0, |s| s.rows_per_s);
    for s in &summaries {
        println!("{}", s.line(base));
    }
    Ok(summaries.iter().all(|s| s.correct))
}

/// One catch-up of one group, in figures.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CatchUp {
    rows_per_s: f64,
    cpu_us_per_row: f64,
    cluster_cpu_us_per_row: f64,
    /// Lease table: (LWTs, reads, other writes, all) per second.
    lease: (f64, f64, f64, f64),
    correct: bool,
}

impl CatchUp {
    fn of(phase: &Phase, want_rows: u64, want_checksum: u64) -> CatchUp {
        let delivered = phase.delivered.unwrap_or(phase.finished);
        let per_row = |d: Duration| d.as_secs_f64() * 1e6 / want_rows.max(1) as f64;
        CatchUp {
            rows_per_s: want_rows as f64 / delivered.as_secs_f64().max(1e-9),
            cpu_us_per_row: per_row(phase.client_cpu),
            cluster_cpu_us_per_row: per_row(phase.cluster_cpu),
            lease: rates(&phase.lease, phase.lease_span),
            correct: phase.union() == Some((want_rows, want_checksum)),
        }
    }
}

/// Prints one catch-up: a line per member, then the union, CPU and lease traffic.
fn print_catch_up(rep: usize, phase: &Phase, run: &CatchUp, want_rows: u64) {
    for (id, r) in &phase.members {
        match r {
            Ok(r) => println!(
                "  {:>3}  {:<10}  {:>10}  {:>5.1}%  {:>8.2}  {:>10.3}  {:>10}",
                rep,
                id,
                r.rows,
                r.rows as f64 * 100.0 / want_rows.max(1) as f64,
                r.cpu.as_secs_f64(),
                r.cpu.as_secs_f64() * 1e6 / r.rows.max(1) as f64,
                mib(r.peak_rss)
            ),
            Err(e) => println!("  {rep:>3}  {id:<10}  FAILED: {e}"),
        }
    }
    let (rows, _) = phase.union().unwrap_or((0, 0));
    let (lwt, reads, writes, all) = run.lease;
    println!(
        "  {rep:>3}  union {rows} rows of {want_rows} ({}); last row after {:.2} s, all members \
         done after {:.2} s: {:.0} rows/s; CPU: members {:.3} µs/row, cluster {:.3} µs/row; \
         lease table {all:.2} requests/s = {lwt:.2} LWTs/s + {reads:.2} reads/s + {writes:.2} \
         writes/s",
        if run.correct {
            "count and checksum right"
        } else {
            "WRONG"
        },
        phase.delivered.unwrap_or(phase.finished).as_secs_f64(),
        phase.finished.as_secs_f64(),
        run.rows_per_s,
        run.cpu_us_per_row,
        run.cluster_cpu_us_per_row,
    );
}

/// Prints the idle phase and the medians of the catch-ups; returns the summary.
fn summarize(n: usize, runs: &[CatchUp], idle: &Phase) -> Summary {
    for (id, r) in &idle.members {
        match r {
            Ok(r) if r.rows > 0 => println!("  idle {id:<10}  delivered {} rows: WRONG", r.rows),
            Ok(_) => {}
            Err(e) => println!("  idle {id:<10}  FAILED: {e}"),
        }
    }
    let idle_ok = idle.union().is_some_and(|(rows, _)| rows == 0);
    let idle_rates = rates(&idle.lease, idle.lease_span);
    let catch_up = |f: fn(&CatchUp) -> f64| median(runs.iter().map(f).collect()).unwrap_or(0.0);
    let lease = (
        catch_up(|r| r.lease.0),
        catch_up(|r| r.lease.1),
        catch_up(|r| r.lease.2),
        catch_up(|r| r.lease.3),
    );
    for (what, span, (lwt, reads, writes, all)) in [
        ("catching up (median)", None, lease),
        ("idle", Some(idle.lease_span), idle_rates),
    ] {
        println!(
            "  lease table {what}{}: {all:.2} requests/s = {lwt:.2} LWTs/s + {reads:.2} reads/s \
             + {writes:.2} writes/s; per member {:.2} LWTs/s, {:.2} reads/s",
            span.map_or(String::new(), |s| format!(" over {:.1} s", s.as_secs_f64())),
            lwt / n as f64,
            reads / n as f64,
        );
    }
    Summary {
        members: n,
        rows_per_s: catch_up(|r| r.rows_per_s),
        cpu_us_per_row: catch_up(|r| r.cpu_us_per_row),
        cluster_cpu_us_per_row: catch_up(|r| r.cluster_cpu_us_per_row),
        catch_up: lease,
        idle: idle_rates,
        correct: idle_ok && runs.iter().all(|r| r.correct),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_carry_the_speedup_and_the_rates() {
        let s = Summary {
            members: 2,
            rows_per_s: 300.0,
            cpu_us_per_row: 1.5,
            cluster_cpu_us_per_row: 2.25,
            catch_up: (1.0, 2.0, 0.0, 3.0),
            idle: (0.5, 0.5, 0.0, 1.0),
            correct: true,
        };
        assert_eq!(
            s.line(200.0),
            "members=2 rows_per_s=300 speedup=1.50 cpu_us_per_row=1.500 \
             cluster_cpu_us_per_row=2.250 lease_requests_per_s=3.00 lease_lwts_per_s=1.00 \
             lease_reads_per_s=2.00 idle_lease_requests_per_s=1.00 idle_lease_lwts_per_s=0.50 \
             idle_lease_reads_per_s=0.50 correct=yes"
        );
    }

    #[test]
    fn rates_divide_by_the_span() {
        let mut c = TableRequestCounts::default();
        c.lwts = 10;
        c.reads = 4;
        c.writes = 2;
        assert_eq!(rates(&c, Duration::from_secs(2)), (5.0, 2.0, 1.0, 8.0));
        let later = {
            let mut l = c;
            l.lwts = 15;
            l
        };
        assert_eq!(delta(later, c).lwts, 5);
        assert_eq!(delta(later, c).reads, 0);
    }
}
