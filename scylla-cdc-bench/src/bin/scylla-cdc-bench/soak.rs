//! `scylla-cdc-bench soak`: the printer and the replicator, launched as a new user launches
//! them, under a steady write load from the moment they are launched.
//!
//! Starts a source `scylla-emulator` (3 nodes by default) and a destination (1 node), creates
//! a CDC table with a list column, then launches the `scylla-cdc-replicator` and
//! `scylla-cdc-printer` binaries with no `--start` and default intervals, and writes from the
//! same instant at a fixed rate: inserts, list appends and deletes of earlier rows. While it
//! writes it samples both programs' resident memory. Afterwards it waits until the destination
//! equals the source and the printer has printed every write, then stops both programs with
//! SIGTERM and reports:
//!
//! - rows differing between source and destination (values and write times), and changes
//!   missing from or printed twice by the printer: all must be 0;
//! - each program's resident memory over the run (first sample after warm-up, min, max,
//!   last), to show it stays flat.
//!
//! Exits 1 if anything differs.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-printer -p scylla-cdc-replicator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench soak --rate 1000 --seconds 900
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use scylla::client::session::Session;
use scylla::value::CqlValue;
use scylla_cdc_bench::{Emulator, emulator_binary, mib, random_loopback};

/// Printer and replicator under a steady write load from their launch.
#[derive(Debug, Parser)]
struct Args {
    /// Writes per second.
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// How long to write, in seconds.
    #[arg(long, default_value_t = 900)]
    seconds: u64,
    /// Nodes of the source cluster.
    #[arg(long, default_value_t = 3)]
    source_nodes: usize,
    /// Partitions the writes are spread over.
    #[arg(long, default_value_t = 100)]
    partitions: i64,
    /// How long to wait, after the last write, for the destination and the printer to have
    /// everything, in seconds (the programs' default safety interval is 30 s and their sleep
    /// interval 10 s).
    #[arg(long, default_value_t = 180)]
    settle: u64,
    /// Where the printer's output goes (default: a file in the temporary directory).
    #[arg(long)]
    printer_output: Option<PathBuf>,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
}

/// A program of the workspace next to this binary.
fn sibling(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .context("this binary has no directory")?
        .join(name);
    if !path.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p {name}`",
            path.display()
        );
    }
    Ok(path)
}

/// A child process stopped with SIGTERM (then killed) when dropped.
struct Program {
    name: &'static str,
    child: Child,
}

impl Program {
    fn spawn(
        name: &'static str,
        binary: &Path,
        args: &[String],
        stdout: Stdio,
    ) -> anyhow::Result<Self> {
        let child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        Ok(Program { name, child })
    }

    /// Resident memory now (`VmRSS`), in bytes.
    fn rss(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .context("no VmRSS")?
            .parse()?;
        Ok(kb * 1024)
    }

    /// Fails if the program has exited.
    fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} exited early: {status}", self.name);
        }
        Ok(())
    }

    /// SIGTERM, then waits up to `timeout` for a clean exit.
    fn stop(&mut self, timeout: Duration) -> anyhow::Result<std::process::ExitStatus> {
        terminate(self.child.id());
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                bail!("{} did not stop within {timeout:?} of SIGTERM", self.name);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// Sending a signal needs libc; there is no safe wrapper in our dependencies.
#[allow(unsafe_code)]
fn terminate(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

/// Memory samples of one program.
#[derive(Default)]
struct Samples(Vec<u64>);

impl Samples {
    fn report(&self, name: &str, warm_up: usize) -> String {
        let steady = self.0.get(warm_up..).unwrap_or_default();
        match (
            steady.first(),
            steady.iter().min(),
            steady.iter().max(),
            steady.last(),
        ) {
            (Some(first), Some(min), Some(max), Some(last)) => format!(
                "{name}: RSS after warm-up {}, min {}, max {}, last {} ({} samples)",
                mib(*first),
                mib(*min),
                mib(*max),
                mib(*last),
                steady.len()
            ),
            _ => format!("{name}: no samples"),
        }
    }
}

/// The `i`-th write of the workload: inserts, list appends to one long-lived row per
/// partition, and deletes of rows inserted three writes before.
fn statement(ks: &str, partitions: i64, i: i64) -> String {
    let pk = i % partitions;
    match i % 4 {
        0 | 2 => format!("INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, {i}, {i})"),
        1 => format!("UPDATE {ks}.t SET l = l + [{i}] WHERE pk = {pk} AND ck = -1"),
        _ => format!(
            "DELETE FROM {ks}.t WHERE pk = {} AND ck = {}",
            (i - 3) % partitions,
            i - 3
        ),
    }
}

/// How the printer prints write `i` (`<operation> <pk> <ck>` and its value or element).
fn identity_of_write(partitions: i64, i: i64) -> String {
    match i % 4 {
        0 | 2 => format!("RowInsert {} {i} v={i}", i % partitions),
        1 => format!("RowUpdate {} -1 l={i}", i % partitions),
        _ => format!("RowDelete {} {}", (i - 3) % partitions, i - 3),
    }
}

/// The identity of one line of the printer's JSON output.
fn identity_of_line(line: &str) -> anyhow::Result<String> {
    let v: serde_json::Value = serde_json::from_str(line)?;
    let op = v["operation"].as_str().unwrap_or("?");
    let columns = &v["columns"];
    let mut id = format!("{op} {} {}", columns["pk"], columns["ck"]);
    if let Some(x) = columns.get("v") {
        id.push_str(&format!(" v={x}"));
    }
    if let Some(l) = columns.get("l") {
        let elements: Vec<String> = match l {
            serde_json::Value::Array(items) => items.iter().map(ToString::to_string).collect(),
            serde_json::Value::Object(map) => map.values().map(ToString::to_string).collect(),
            other => vec![other.to_string()],
        };
        id.push_str(&format!(" l={}", elements.join(",")));
    }
    Ok(id)
}

/// Every row of `ks.t` as `(pk, ck) -> (v, writetime(v), l)` in debug text.
async fn table_contents(
    session: &Session,
    ks: &str,
) -> anyhow::Result<BTreeMap<(i32, i32), String>> {
    let mut rows = session
        .query_iter(format!("SELECT pk, ck, v, writetime(v), l FROM {ks}.t"), ())
        .await?
        .rows_stream::<(i32, i32, Option<i32>, Option<i64>, Option<CqlValue>)>()?;
    let mut out = BTreeMap::new();
    while let Some(row) = rows.next().await {
        let (pk, ck, v, wt, l) = row?;
        out.insert((pk, ck), format!("{v:?} {wt:?} {l:?}"));
    }
    Ok(out)
}

/// Keys whose rows differ between two contents (missing, extra or different).
fn differing(
    a: &BTreeMap<(i32, i32), String>,
    b: &BTreeMap<(i32, i32), String>,
) -> Vec<(i32, i32)> {
    let keys: BTreeSet<&(i32, i32)> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(k) != b.get(k))
        .copied()
        .collect()
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    let emulator = emulator_binary(args.emulator.clone())?;
    let printer_bin = sibling("scylla-cdc-printer")?;
    let replicator_bin = sibling("scylla-cdc-replicator")?;

    let base = random_loopback();
    let dest_base = {
        let mut parts: Vec<String> = base.split('.').map(str::to_owned).collect();
        parts[2] = ((parts[2].parse::<u32>()? + 1) % 250).to_string();
        parts.join(".")
    };
    let common = |address: &str, nodes: usize| -> Vec<String> {
        [
            "--nodes",
            &nodes.to_string(),
            "--port",
            "0",
            "--address",
            address,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let source = Emulator::start(&emulator, &common(&base, args.source_nodes))?;
    let destination = Emulator::start(&emulator, &common(&dest_base, 1))?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = "soak";
    let rf = args.source_nodes.min(3);
    s.query_unpaged(
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': {rf}}} AND tablets = {{'enabled': false}}"
        ),
        (),
    )
    .await?;
    d.query_unpaged(
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}} AND tablets = {{'enabled': false}}"
        ),
        (),
    )
    .await?;
    s.query_unpaged(
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, l list<int>, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
        (),
    )
    .await?;

    let output_path = args.printer_output.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("soak-printer-{}.jsonl", std::process::id()))
    });
    let output = File::create(&output_path)
        .with_context(|| format!("cannot create {}", output_path.display()))?;
    let (src, dst) = (
        source.contact_point.to_string(),
        destination.contact_point.to_string(),
    );
    let owned = |v: &[&str]| -> Vec<String> { v.iter().map(|s| s.to_string()).collect() };
    // Launched as a new user would: no --start, default intervals.
    let mut replicator = Program::spawn(
        "replicator",
        &replicator_bin,
        &owned(&[
            "--source",
            &src,
            "--destination",
            &dst,
            "-k",
            ks,
            "-t",
            "t",
            "--create-destination-table",
        ]),
        Stdio::null(),
    )?;
    let mut printer = Program::spawn(
        "printer",
        &printer_bin,
        &owned(&["--hosts", &src, "-k", ks, "-t", "t", "--format", "json"]),
        Stdio::from(output),
    )?;
    let launched = Instant::now();
    eprintln!(
        "soak: writing {} per second for {} s from the programs' launch (printer output: {})",
        args.rate,
        args.seconds,
        output_path.display()
    );

    // The writer: write i is due at launch + i / rate; up to 256 in flight.
    let total = (args.rate * args.seconds) as i64;
    let failed = Arc::new(AtomicU64::new(0));
    let mut in_flight = FuturesUnordered::new();
    let (mut replicator_rss, mut printer_rss) = (Samples::default(), Samples::default());
    let mut next_sample = Instant::now();
    let mut next_report = Instant::now() + Duration::from_secs(60);
    for i in 0..total {
        let due = launched + Duration::from_secs_f64(i as f64 / args.rate as f64);
        let now = Instant::now();
        if due > now {
            tokio::time::sleep(due - now).await;
        }
        while in_flight.len() >= 256 {
            in_flight.next().await;
        }
        let (session, text, failed) =
            (s.clone(), statement(ks, args.partitions, i), failed.clone());
        in_flight.push(async move {
            if let Err(e) = session.query_unpaged(text.clone(), ()).await {
                eprintln!("soak: `{text}` failed: {e}");
                failed.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Drive completed writes without blocking.
        while let Some(Some(())) = futures::FutureExt::now_or_never(in_flight.next()) {}
        if Instant::now() >= next_sample {
            next_sample += Duration::from_secs(5);
            replicator.check_running()?;
            printer.check_running()?;
            replicator_rss.0.push(replicator.rss()?);
            printer_rss.0.push(printer.rss()?);
        }
        if Instant::now() >= next_report {
            next_report += Duration::from_secs(60);
            eprintln!(
                "soak: {i} writes after {:.0} s; replicator {}, printer {}",
                launched.elapsed().as_secs_f64(),
                mib(*replicator_rss.0.last().unwrap_or(&0)),
                mib(*printer_rss.0.last().unwrap_or(&0)),
            );
        }
    }
    while in_flight.next().await.is_some() {}
    let wrote_for = launched.elapsed();
    eprintln!(
        "soak: {total} writes in {:.1} s ({} failed); waiting up to {} s for both programs",
        wrote_for.as_secs_f64(),
        failed.load(Ordering::Relaxed),
        args.settle
    );

    // Settle: the destination equals the source and the printer printed every write.
    let expected: BTreeSet<String> = (0..total)
        .map(|i| identity_of_write(args.partitions, i))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(args.settle);
    let (diff, printed_lines, printed) = loop {
        replicator.check_running()?;
        printer.check_running()?;
        replicator_rss.0.push(replicator.rss()?);
        printer_rss.0.push(printer.rss()?);
        let a = table_contents(&s, ks).await?;
        let b = table_contents(&d, ks).await?;
        let diff = differing(&a, &b);
        let mut lines = 0usize;
        let mut printed = BTreeSet::new();
        for line in BufReader::new(File::open(&output_path)?).lines() {
            let line = line?;
            // The last line may still be being written.
            if let Ok(id) = identity_of_line(&line) {
                lines += 1;
                printed.insert(id);
            }
        }
        if (diff.is_empty() && printed == expected) || Instant::now() >= deadline {
            eprintln!(
                "soak: source has {} rows; settled {:.0} s after the last write",
                a.len(),
                launched.elapsed().saturating_sub(wrote_for).as_secs_f64()
            );
            break (diff, lines, printed);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    };
    let replicator_exit = replicator.stop(Duration::from_secs(60))?;
    let printer_exit = printer.stop(Duration::from_secs(60))?;

    let missing = expected.difference(&printed).count();
    let unexpected = printed.difference(&expected).count();
    let duplicates = printed_lines.saturating_sub(printed.len());
    // Samples every 5 s: skip the first minute as warm-up.
    let warm_up = 12;
    println!(
        "writes: {total} at {} per second, {} failed",
        args.rate,
        failed.load(Ordering::Relaxed)
    );
    println!(
        "replicator: {} rows differing between source and destination{}; exit {replicator_exit}",
        diff.len(),
        diff.first()
            .map(|k| format!(" (first: pk {} ck {})", k.0, k.1))
            .unwrap_or_default()
    );
    println!(
        "printer: {} lines, {missing} writes missing, {duplicates} printed twice, {unexpected} unexpected lines; exit {printer_exit}",
        printed_lines
    );
    println!("{}", replicator_rss.report("replicator", warm_up));
    println!("{}", printer_rss.report("printer", warm_up));
    if !diff.is_empty() || missing > 0 || unexpected > 0 || failed.load(Ordering::Relaxed) > 0 {
        std::process::exit(1);
    }
    Ok(())
}
