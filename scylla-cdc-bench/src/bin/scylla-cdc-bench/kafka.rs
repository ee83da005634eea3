//! `scylla-cdc-bench kafka`: how fast `scylla-cdc-kafka` publishes a backlog to a real Kafka
//! broker, and how soon a write becomes visible to a `read_committed` consumer.
//!
//! The bench starts a one-node Apache Kafka 4.4 broker with `conformance/kafka/start-kafka`
//! on a loopback address of its own (`--kafka-address`, default 127.0.96.1; stopped with
//! `stop-kafka` at the end, its directory removed), and one `scylla-emulator` process (1 node,
//! 2 shards). The program under test, the release build of `scylla-cdc-kafka` next to this
//! binary (`--program`), runs as a child process; its CPU time (user + system, all threads)
//! comes from `wait4` when it exits, its peak RSS from its `VmHWM`, sampled every 20 ms while
//! it runs (`wait4`'s `ru_maxrss` would include this bench's own memory: Linux carries the
//! peak across the `execve` of a child that shared its parent's memory until then).
//!
//! **Throughput.** The emulator preloads `bench.t (pk bigint, ck bigint, v blob)` with
//! `--changes` single-row inserts (`--partitions` partitions), so the backlog is that many
//! changes of one row, one event each. The bench waits until the backlog's end is
//! `--backlog-age` seconds old (past the program's default 30 s safety interval: nothing is
//! read early, and the program never waits for the clock), runs each variant `--warm-ups`
//! times unmeasured (default once: a fresh broker creates its transaction state on the first
//! transactional client, and warms up its JIT), then, `--runs` times, runs each
//! `--variant` in turn (interleaved, so that a change in the machine's load hits every variant
//! alike): `scylla-cdc-kafka --start <before the preload> --end <after it>` with the variant's
//! flags and otherwise the program's defaults, on a topic prefix of its own, until it exits by
//! itself with everything published. Per run: wall time from launch to exit, changes/s over
//! it, the steady rate (from the program's progress lines, `--progress-interval 0.1`: changes
//! handed to the producer per second between the first and the last line that show some but
//! not all of them; start-up and the last commit excluded), the program's peak RSS and CPU
//! seconds, the broker's and the emulator's CPU seconds over the run, and the check: a
//! `read_committed` consumer in this process reads the event topic from its start to its end
//! and must find exactly `--changes` records, all of distinct changes (by their
//! `scylla.stream` and `scylla.time` headers). Then the run's topics are deleted (a run
//! writes about a gigabyte). The default variants are `transactions` (the program's defaults)
//! and `no-transactions` (`--no-transactions`); `--variant 'LABEL=FLAGS'` (repeatable)
//! replaces them, e.g. `--variant 'commit 1 s=--commit-interval 1'`.
//!
//! **Delay.** For each `--delay-variant` (default: `early reads`, the program's defaults, and
//! `no early reads`, `--no-early-reads`), the program publishes the empty CDC table
//! `bench.live` from its launch; once it runs (its first progress line), a writer inserts
//! `--rate` rows per second for `--write-secs` seconds, and a `read_committed` consumer in this
//! process (rdkafka's `BaseConsumer`, `fetch.wait.max.ms=100`) records, for each event, when it
//! received it minus the change's write time (its `scylla.time` header: the `cdc$time`
//! timeuuid, whose time is the write's timestamp, taken by the emulator on this machine's
//! clock). The bench waits until every acknowledged write has been seen (at most
//! `--delay-wait` seconds after the last write), then stops the program with SIGTERM. p50,
//! p99 and max of the delays, writes seen and seen twice, the program's peak RSS and CPU.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-kafka -p scylla-cdc-bench
//! target/release/scylla-cdc-bench kafka
//! target/release/scylla-cdc-bench kafka --quick
//! target/release/scylla-cdc-bench kafka --no-delay --runs 1 --variant 'lz4=-X compression.type=lz4'
//! ```
//!
//! Needs Java 17+ and Maven (the broker's jars come from Maven Central once, into
//! `conformance/.cache`). If the bench is killed, stop its broker with `conformance/kafka/
//! stop-kafka DIR` (the directory is printed at the start).

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, bail, ensure};
use chrono::{DateTime, SecondsFormat, Utc};
use clap::Parser;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use scylla::client::session::Session;
use scylla_cdc_bench::latency::markdown;
use scylla_cdc_bench::live::p50_p99_max;
use scylla_cdc_bench::{
    Emulator, emulator_binary, end_of_backlog_in, median, now_ms, process_cpu_time,
    process_peak_rss, random_loopback, terminate, try_wait_with_cpu,
};

/// scylla-cdc-kafka against a real Kafka broker: catch-up throughput (with and without
/// transactions) and write-to-visibility delay (with and without early reads).
#[derive(Debug, Parser)]
struct Args {
    /// Changes in the preloaded backlog (a multiple of --partitions: rounded up).
    #[arg(long, default_value_t = 1_000_000)]
    changes: u64,
    /// Partitions of the preloaded table.
    #[arg(long, default_value_t = 1000)]
    partitions: u64,
    /// Unmeasured rounds of every variant before the throughput runs: a fresh broker's first
    /// transactional client waits about a second for the broker to create its transaction
    /// state topic, and the broker's JIT compiler warms up, once per broker, not per run.
    #[arg(long, default_value_t = 1)]
    warm_ups: usize,
    /// Throughput runs of each variant.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// A variant of the throughput runs: `LABEL=FLAGS` (the program's flags after the bench's
    /// own, split at whitespace; repeatable). Default: `transactions=` and
    /// `no-transactions=--no-transactions`.
    #[arg(long = "variant", value_name = "LABEL=FLAGS", value_parser = parse_variant)]
    variants: Vec<Variant>,
    /// A variant of the delay runs, as --variant. Default: `early reads=` and
    /// `no early reads=--no-early-reads`.
    #[arg(long = "delay-variant", value_name = "LABEL=FLAGS", value_parser = parse_variant)]
    delay_variants: Vec<Variant>,
    /// Writes per second of the delay runs.
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// Seconds of writes of each delay run.
    #[arg(long, default_value_t = 30)]
    write_secs: u64,
    /// Longest wait after a delay run's last write for every write to be seen, in seconds
    /// (without early reads a change waits for the 30 s safety interval and up to a 10 s
    /// sleep).
    #[arg(long, default_value_t = 90)]
    delay_wait: u64,
    /// How old the backlog's end is before the first throughput run, in seconds (past the
    /// program's safety interval, 30 s by default: nothing is read early).
    #[arg(long, default_value_t = 31)]
    backlog_age: u64,
    /// No throughput runs.
    #[arg(long)]
    no_throughput: bool,
    /// No delay runs.
    #[arg(long)]
    no_delay: bool,
    /// A smoke run: 100 000 changes, 1 run, 10 s of writes (flags given explicitly still
    /// apply).
    #[arg(long)]
    quick: bool,
    /// The broker's address (a 127.x.y.z address; ports 9092 and 9093).
    #[arg(long, default_value = "127.0.96.1")]
    kafka_address: String,
    /// The emulator's address (default: a random loopback address).
    #[arg(long)]
    address: Option<String>,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
    /// The `scylla-cdc-kafka` binary (default: next to this one).
    #[arg(long)]
    program: Option<PathBuf>,
    /// The directory of `start-kafka` and `stop-kafka` (default: the repository's
    /// `conformance/kafka`).
    #[arg(long)]
    kafka_scripts: Option<PathBuf>,
    /// Give up on a run after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Keep each run's topics (by default they are deleted after the run's check).
    #[arg(long)]
    keep_topics: bool,
}

/// A variant of the program: a label and its flags.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Variant {
    label: String,
    flags: Vec<String>,
}

/// `LABEL=FLAGS`: the flags split at whitespace (none after the `=` is the defaults).
fn parse_variant(text: &str) -> Result<Variant, String> {
    let (label, flags) = text
        .split_once('=')
        .ok_or_else(|| format!("expected LABEL=FLAGS, got {text:?}"))?;
    let label = label.trim();
    if label.is_empty() {
        return Err(format!("{text:?} has no label"));
    }
    Ok(Variant {
        label: label.to_owned(),
        flags: flags.split_whitespace().map(str::to_owned).collect(),
    })
}

fn default_variants(given: &[Variant], defaults: &[&str]) -> Vec<Variant> {
    if given.is_empty() {
        defaults
            .iter()
            .map(|d| parse_variant(d).expect("a valid default"))
            .collect()
    } else {
        given.to_vec()
    }
}

/// The changes published so far on one of the program's progress lines (`progress: N changes
/// published (...`, after the log line's time, level and target).
fn progress_changes(line: &str) -> Option<u64> {
    line.split_once("progress: ")?
        .1
        .split_once(" changes published")?
        .0
        .parse()
        .ok()
}

/// The steady rate of a run from its progress samples (time since launch, changes): changes
/// per second between the first and the last sample that show some but not all of `total`
/// (start-up and the last commit excluded); `None` with fewer than two such samples.
fn steady_rate(samples: &[(Duration, u64)], total: u64) -> Option<f64> {
    let mid: Vec<&(Duration, u64)> = samples
        .iter()
        .filter(|(_, n)| *n > 0 && *n < total)
        .collect();
    let (first, last) = (mid.first()?, mid.last()?);
    let secs = last.0.checked_sub(first.0)?.as_secs_f64();
    (secs > 0.0 && last.1 > first.1).then(|| (last.1 - first.1) as f64 / secs)
}

/// Microseconds since the epoch of a timeuuid's time (a `scylla.time` header's value).
fn timeuuid_micros(text: &[u8]) -> Option<i64> {
    let uuid = uuid::Uuid::try_parse_ascii(text).ok()?;
    let (secs, nanos) = uuid.get_timestamp()?.to_unix();
    i64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(i64::from(nanos / 1000))
}

/// `KEY=VALUE` lines of start-kafka's output (values as printed; `printf %q` leaves a plain
/// path as it is).
fn env_value<'a>(output: &'a str, key: &str) -> Option<&'a str> {
    output.lines().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|rest| rest.strip_prefix('='))
            .map(str::trim)
    })
}

/// min, median, max of `values`.
fn spread(values: &[f64]) -> Option<[f64; 3]> {
    let min = values.iter().copied().min_by(f64::total_cmp)?;
    let max = values.iter().copied().max_by(f64::total_cmp)?;
    Some([min, median(values.to_vec())?, max])
}

/// `12 345` (thousands separated by a space, as the README's tables write them).
fn grouped(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A broker started by `start-kafka`, stopped (its directory removed) when dropped.
struct Broker {
    scripts: PathBuf,
    dir: PathBuf,
    bootstrap: String,
    pid: u32,
}

impl Broker {
    fn start(scripts: &Path, address: &str) -> anyhow::Result<Broker> {
        let dir =
            std::env::temp_dir().join(format!("scylla-cdc-bench-kafka-{}", std::process::id()));
        let started = Instant::now();
        let output = Command::new(scripts.join("start-kafka"))
            .arg("--dir")
            .arg(&dir)
            .arg(address)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {}", scripts.join("start-kafka").display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() {
            bail!(
                "start-kafka failed ({}):\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let bootstrap = env_value(&stdout, "KAFKA_BOOTSTRAP")
            .context("start-kafka printed no KAFKA_BOOTSTRAP")?
            .to_owned();
        let pid = env_value(&stdout, "KAFKA_PID")
            .and_then(|p| p.parse().ok())
            .context("start-kafka printed no KAFKA_PID")?;
        println!(
            "Kafka 4.4 broker at {bootstrap} (pid {pid}, directory {}; ready in {:.1} s)",
            dir.display(),
            started.elapsed().as_secs_f64()
        );
        Ok(Broker {
            scripts: scripts.to_owned(),
            dir,
            bootstrap,
            pid,
        })
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let stopped = Command::new(self.scripts.join("stop-kafka"))
            .arg(&self.dir)
            .stdin(Stdio::null())
            .status();
        if !stopped.is_ok_and(|s| s.success()) {
            eprintln!(
                "could not stop the broker: run {} {}",
                self.scripts.join("stop-kafka").display(),
                self.dir.display()
            );
        }
    }
}

/// `scylla-cdc-kafka` running as a child process, its stderr read by a thread: progress lines
/// kept with their time, the other lines kept for an error message; its peak RSS (`VmHWM`)
/// sampled every 20 ms by another. Killed if dropped before it was reaped.
struct Program {
    child: Option<Child>,
    pid: u32,
    launched: Instant,
    progress: Arc<Mutex<Vec<(Duration, u64)>>>,
    other_lines: Arc<Mutex<Vec<String>>>,
    peak_rss: Arc<AtomicU64>,
    /// Set once the process is reaped (its pid may then be another process's).
    reaped: Arc<AtomicBool>,
}

/// How a program's run ended.
struct Ended {
    wall: Duration,
    /// CPU time, user + system, all threads.
    cpu: Duration,
    /// The last `VmHWM` sampled before the exit.
    peak_rss: u64,
    success: bool,
    status: String,
}

impl Program {
    fn start(binary: &Path, args: &[String]) -> anyhow::Result<Program> {
        let launched = Instant::now();
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let stderr = child.stderr.take().context("no stderr")?;
        let progress = Arc::new(Mutex::new(Vec::new()));
        let other_lines = Arc::new(Mutex::new(Vec::new()));
        {
            let (progress, other_lines) = (progress.clone(), other_lines.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(n) = progress_changes(&line) {
                        progress.lock().unwrap().push((launched.elapsed(), n));
                    } else {
                        let mut lines = other_lines.lock().unwrap();
                        if lines.len() >= 40 {
                            lines.remove(0);
                        }
                        lines.push(line);
                    }
                }
            });
        }
        let pid = child.id();
        let peak_rss = Arc::new(AtomicU64::new(0));
        let reaped = Arc::new(AtomicBool::new(false));
        {
            let (peak_rss, reaped) = (peak_rss.clone(), reaped.clone());
            std::thread::spawn(move || {
                while !reaped.load(Ordering::Relaxed) {
                    // A zombie has no VmHWM any more: its last sample stays.
                    if let Ok(rss) = process_peak_rss(pid) {
                        peak_rss.fetch_max(rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
        }
        Ok(Program {
            pid,
            child: Some(child),
            launched,
            progress,
            other_lines,
            peak_rss,
            reaped,
        })
    }

    /// Reaps the process if it has ended: its status and CPU time.
    fn try_reap(&mut self) -> anyhow::Result<Option<(std::process::ExitStatus, Duration)>> {
        let ended = try_wait_with_cpu(self.pid)?;
        if ended.is_some() {
            self.reaped.store(true, Ordering::Relaxed);
            // Reaped: the `Child` must not be killed or waited for any more.
            drop(self.child.take());
        }
        Ok(ended)
    }

    fn progress(&self) -> Vec<(Duration, u64)> {
        self.progress.lock().unwrap().clone()
    }

    fn stderr_tail(&self) -> String {
        self.other_lines.lock().unwrap().join("\n")
    }

    /// Waits (polling every 2 ms) until the program exits or `deadline` passes (then it is
    /// killed and this fails).
    fn wait(&mut self, deadline: Instant) -> anyhow::Result<Ended> {
        loop {
            if let Some((status, cpu)) = self.try_reap()? {
                return Ok(Ended {
                    wall: self.launched.elapsed(),
                    cpu,
                    peak_rss: self.peak_rss.load(Ordering::Relaxed),
                    success: status.success(),
                    status: status.to_string(),
                });
            }
            if Instant::now() >= deadline {
                self.reaped.store(true, Ordering::Relaxed);
                if let Some(mut child) = self.child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
                bail!(
                    "the program did not exit in time; its last lines:\n{}",
                    self.stderr_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        self.reaped.store(true, Ordering::Relaxed);
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the bench and its runs share.
struct Bench {
    program: PathBuf,
    broker: Broker,
    emulator: Emulator,
    session: Arc<Session>,
    keep_topics: bool,
    timeout: Duration,
}

impl Bench {
    /// The program's arguments for `table` on topic prefix `prefix`, then `extra`.
    fn program_args(&self, table: &str, prefix: &str, extra: &[String]) -> Vec<String> {
        let mut args: Vec<String> = [
            "--hosts",
            &self.emulator.contact_point.to_string(),
            "--keyspace",
            "bench",
            "--table",
            table,
            "--bootstrap-servers",
            &self.broker.bootstrap,
            "--topic-prefix",
            prefix,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend_from_slice(extra);
        args
    }

    /// Deletes a run's event and checkpoint topics (unless `--keep-topics`).
    async fn delete_topics(&self, prefix: &str, table: &str) -> anyhow::Result<()> {
        if self.keep_topics {
            return Ok(());
        }
        let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
            .set("bootstrap.servers", &self.broker.bootstrap)
            .create()?;
        let topics = [
            format!("{prefix}.bench.{table}"),
            format!("{prefix}.scylla-cdc-checkpoints"),
        ];
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        for result in admin.delete_topics(&names, &options).await? {
            if let Err((topic, code)) = result
                && code != RDKafkaErrorCode::UnknownTopicOrPartition
            {
                bail!("deleting {topic}: {code}");
            }
        }
        Ok(())
    }
}

/// A `read_committed` consumer of this bench (no group membership: partitions are assigned).
fn consumer(bootstrap: &str, eof: bool) -> anyhow::Result<BaseConsumer> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "scylla-cdc-bench")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", if eof { "true" } else { "false" })
        // A fetch with nothing to return waits at most this long (a fetch returns as soon as
        // there is data): what this consumer adds to a change's delay is at most about this.
        .set("fetch.wait.max.ms", "100")
        .create()
        .context("creating the consumer")?;
    Ok(consumer)
}

/// Assigns every partition of `topic` from its beginning, once the topic exists; returns the
/// number of partitions.
fn assign_all(consumer: &BaseConsumer, topic: &str, deadline: Instant) -> anyhow::Result<usize> {
    loop {
        if let Ok(metadata) = consumer.fetch_metadata(Some(topic), Duration::from_secs(5))
            && let Some(t) = metadata.topics().first()
            && t.error().is_none()
            && !t.partitions().is_empty()
        {
            let mut list = TopicPartitionList::new();
            for p in t.partitions() {
                list.add_partition_offset(topic, p.id(), Offset::Beginning)?;
            }
            consumer.assign(&list)?;
            return Ok(t.partitions().len());
        }
        if Instant::now() >= deadline {
            bail!("topic {topic} does not exist");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A change's identity (stream, cdc$time) and write time (µs) from its event's headers.
fn change_of(message: &BorrowedMessage<'_>) -> Option<((u128, u128), i64)> {
    let headers = message.headers()?;
    let (mut stream, mut time) = (None, None);
    for h in headers.iter() {
        match h.key {
            "scylla.stream" => stream = h.value,
            "scylla.time" => time = h.value,
            _ => {}
        }
    }
    let stream = u128::from_str_radix(std::str::from_utf8(stream?).ok()?, 16).ok()?;
    let time = time?;
    let id = uuid::Uuid::try_parse_ascii(time).ok()?.as_u128();
    Some(((stream, id), timeuuid_micros(time)?))
}

/// Records and distinct changes of a topic, read from its start to its end.
#[derive(Debug, Default, Clone, Copy)]
struct TopicCount {
    records: u64,
    changes: u64,
    without_headers: u64,
    secs: f64,
}

/// Reads `topic` to its end (`read_committed`), counting records and distinct changes.
fn count_topic(bootstrap: &str, topic: &str, timeout: Duration) -> anyhow::Result<TopicCount> {
    let started = Instant::now();
    let deadline = started + timeout;
    let consumer = consumer(bootstrap, true)?;
    let partitions = assign_all(&consumer, topic, deadline)?;
    let mut at_end = HashSet::new();
    let mut seen = HashSet::new();
    let mut count = TopicCount::default();
    while at_end.len() < partitions {
        ensure!(
            Instant::now() < deadline,
            "reading {topic}: not at its end after {timeout:?} ({} records)",
            count.records
        );
        match consumer.poll(Duration::from_millis(200)) {
            None => {}
            Some(Ok(message)) => {
                count.records += 1;
                at_end.remove(&message.partition());
                match change_of(&message) {
                    Some((id, _)) => {
                        seen.insert(id);
                    }
                    None => count.without_headers += 1,
                }
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                at_end.insert(p);
            }
            Some(Err(e)) => bail!("reading {topic}: {e}"),
        }
    }
    count.changes = seen.len() as u64;
    count.secs = started.elapsed().as_secs_f64();
    Ok(count)
}

/// One throughput run.
#[derive(Debug, Clone)]
struct ThroughputRun {
    wall: f64,
    steady: Option<f64>,
    rate: f64,
    peak_rss: u64,
    cpu: f64,
    broker_cpu: f64,
    emulator_cpu: f64,
    /// The machine's 1-minute load average at the run's end.
    load: f64,
    count: TopicCount,
}

impl ThroughputRun {
    /// The rate the run's CPU time allows on 2 cores: 2 × changes over the CPU seconds of the
    /// program, the broker and the emulator together (what the run would reach if those
    /// three had the machine's 2 cores to themselves and kept them busy).
    fn two_core_bound(&self, total: u64) -> f64 {
        2.0 * total as f64 / (self.cpu + self.broker_cpu + self.emulator_cpu).max(1e-9)
    }
}

/// The 1-minute load average (0 if unknown).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

async fn throughput_run(
    bench: &Bench,
    prefix: &str,
    variant: &Variant,
    total: u64,
    start: &str,
    end: &str,
) -> anyhow::Result<ThroughputRun> {
    let mut extra: Vec<String> = ["--start", start, "--end", end, "--progress-interval", "0.1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    extra.extend(variant.flags.iter().cloned());
    let args = bench.program_args("t", prefix, &extra);
    let broker_cpu0 = process_cpu_time(bench.broker.pid)?;
    let emulator_cpu0 = process_cpu_time(bench.emulator.pid())?;
    let mut program = Program::start(&bench.program, &args)?;
    let deadline = Instant::now() + bench.timeout;
    let ended = tokio::task::block_in_place(|| program.wait(deadline))?;
    let broker_cpu = process_cpu_time(bench.broker.pid)?.saturating_sub(broker_cpu0);
    let emulator_cpu = process_cpu_time(bench.emulator.pid())?.saturating_sub(emulator_cpu0);
    if !ended.success {
        bail!(
            "{} exited with {}; its last lines:\n{}",
            bench.program.display(),
            ended.status,
            program.stderr_tail()
        );
    }
    let progress = program.progress();
    let topic = format!("{prefix}.bench.t");
    let count = {
        let (bootstrap, topic) = (bench.broker.bootstrap.clone(), topic.clone());
        let timeout = bench.timeout;
        tokio::task::spawn_blocking(move || count_topic(&bootstrap, &topic, timeout)).await??
    };
    bench.delete_topics(prefix, "t").await?;
    let wall = ended.wall.as_secs_f64();
    Ok(ThroughputRun {
        wall,
        steady: steady_rate(&progress, total),
        rate: total as f64 / wall,
        peak_rss: ended.peak_rss,
        cpu: ended.cpu.as_secs_f64(),
        broker_cpu: broker_cpu.as_secs_f64(),
        emulator_cpu: emulator_cpu.as_secs_f64(),
        load: load_average(),
        count,
    })
}

/// One delay run.
#[derive(Debug, Clone)]
struct DelayRun {
    written: u64,
    failed_writes: u64,
    seen: u64,
    twice: u64,
    /// Seconds from each change's write to its first receipt.
    delays: Vec<f64>,
    write_rate: f64,
    peak_rss: u64,
    cpu: f64,
}

/// What the delay run's consumer thread collects.
#[derive(Default)]
struct Received {
    seen: HashSet<(u128, u128)>,
    twice: u64,
    delays: Vec<f64>,
    error: Option<String>,
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Receives the events of `topic` until `stop`, recording each change's delay.
fn receive(bootstrap: &str, topic: &str, received: &Mutex<Received>, stop: &AtomicBool) {
    let fail = |e: String| received.lock().unwrap().error = Some(e);
    let consumer = match consumer(bootstrap, false) {
        Ok(c) => c,
        Err(e) => return fail(format!("{e:#}")),
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    if let Err(e) = assign_all(&consumer, topic, deadline) {
        return fail(format!("{e:#}"));
    }
    while !stop.load(Ordering::Relaxed) {
        match consumer.poll(Duration::from_millis(100)) {
            None => {}
            Some(Ok(message)) => {
                let now = now_micros();
                let Some((id, written)) = change_of(&message) else {
                    continue;
                };
                let mut r = received.lock().unwrap();
                if r.seen.insert(id) {
                    r.delays.push((now - written) as f64 / 1e6);
                } else {
                    r.twice += 1;
                }
            }
            Some(Err(e)) => return fail(format!("reading {topic}: {e}")),
        }
    }
}

async fn delay_run(
    bench: &Bench,
    prefix: &str,
    variant: &Variant,
    index: u64,
    rate: u64,
    write_secs: u64,
    delay_wait: Duration,
) -> anyhow::Result<DelayRun> {
    let mut extra: Vec<String> = vec!["--progress-interval".into(), "1".into()];
    extra.extend(variant.flags.iter().cloned());
    let args = bench.program_args("live", prefix, &extra);
    let mut program = Program::start(&bench.program, &args)?;
    // Running once it prints its first progress line (printed once the reader started).
    let ready_deadline = Instant::now() + Duration::from_secs(120);
    while program.progress().is_empty() {
        if let Ok(Some((status, _))) = program.try_reap() {
            bail!(
                "the program exited ({status}) before it ran; its last lines:\n{}",
                program.stderr_tail()
            );
        }
        ensure!(
            Instant::now() < ready_deadline,
            "the program printed no progress line within 120 s; its last lines:\n{}",
            program.stderr_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let topic = format!("{prefix}.bench.live");
    let received = Arc::new(Mutex::new(Received::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let consumer_thread = {
        let (bootstrap, topic) = (bench.broker.bootstrap.clone(), topic.clone());
        let (received, stop) = (received.clone(), stop.clone());
        std::thread::spawn(move || receive(&bootstrap, &topic, &received, &stop))
    };

    // The writer: one insert every 1/rate s, each in a task of its own (a slow one does not
    // hold the next back).
    let insert = bench
        .session
        .prepare("INSERT INTO bench.live (pk, ck, v) VALUES (?, ?, ?)")
        .await?;
    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let writes = rate * write_secs;
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let writing = Instant::now();
    let mut tasks = Vec::with_capacity(writes as usize);
    for i in 0..writes {
        tick.tick().await;
        let (session, insert) = (bench.session.clone(), insert.clone());
        let (acked, failed) = (acked.clone(), failed.clone());
        tasks.push(tokio::spawn(async move {
            let key = (i as i64, index as i64, vec![0xABu8; 16]);
            match session.execute_unpaged(&insert, key).await {
                Ok(_) => acked.fetch_add(1, Ordering::Relaxed),
                Err(_) => failed.fetch_add(1, Ordering::Relaxed),
            };
        }));
    }
    for t in tasks {
        t.await?;
    }
    let write_rate = writes as f64 / writing.elapsed().as_secs_f64();
    let (acked, failed) = (
        acked.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    );

    // Until every acknowledged write is seen, or the wait is over.
    let waiting_until = Instant::now() + delay_wait;
    loop {
        let (seen, error) = {
            let r = received.lock().unwrap();
            (r.seen.len() as u64, r.error.clone())
        };
        if let Some(e) = error {
            bail!("the consumer failed: {e}");
        }
        if seen >= acked || Instant::now() >= waiting_until {
            break;
        }
        if let Ok(Some((status, _))) = program.try_reap() {
            bail!(
                "the program exited ({status}) while running; its last lines:\n{}",
                program.stderr_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    consumer_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the consumer thread panicked"))?;
    terminate(program.pid);
    let ended =
        tokio::task::block_in_place(|| program.wait(Instant::now() + Duration::from_secs(60)))?;
    if !ended.success {
        bail!(
            "the program exited with {} after SIGTERM; its last lines:\n{}",
            ended.status,
            program.stderr_tail()
        );
    }
    bench.delete_topics(prefix, "live").await?;
    let r = std::mem::take(&mut *received.lock().unwrap());
    Ok(DelayRun {
        written: acked,
        failed_writes: failed,
        seen: r.seen.len() as u64,
        twice: r.twice,
        delays: r.delays,
        write_rate,
        peak_rss: ended.peak_rss,
        cpu: ended.cpu.as_secs_f64(),
    })
}

/// A program of the workspace next to this binary, unless given.
fn sibling(explicit: Option<PathBuf>, name: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    let exe = std::env::current_exe()?;
    let path = exe
        .parent()
        .context("this binary has no directory")?
        .join(name);
    ensure!(
        path.exists(),
        "{} not found: build it with `cargo build --release -p {name}` or pass --program",
        path.display()
    );
    Ok(path)
}

fn rfc3339_ms(ms: u64) -> anyhow::Result<String> {
    let t = DateTime::<Utc>::from_timestamp_millis(i64::try_from(ms)?).context("a time")?;
    Ok(t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

fn f2(x: f64) -> String {
    format!("{x:.2}")
}

/// The throughput table: one line per variant (min / median / max over its runs).
fn throughput_table(results: &[(Variant, Vec<ThroughputRun>)]) -> String {
    let header: Vec<String> = [
        "variant",
        "runs",
        "changes/s, launch to exit: each run",
        "min / median / max",
        "steady changes/s (median)",
        "wall s (median)",
        "peak RSS MiB (max)",
        "CPU s (median)",
        "CPU µs/change",
        "broker CPU s (median)",
        "emulator CPU s (median)",
        "2-core bound changes/s (median)",
        "load average",
        "records / distinct changes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = Vec::new();
    for (variant, runs) in results {
        if runs.is_empty() {
            continue;
        }
        let rates: Vec<f64> = runs.iter().map(|r| r.rate).collect();
        let [min, med, max] = spread(&rates).unwrap_or_default();
        let total = runs[0].count.records.max(1);
        let med_of = |f: &dyn Fn(&ThroughputRun) -> f64| {
            median(runs.iter().map(f).collect()).unwrap_or(f64::NAN)
        };
        let cpu = med_of(&|r| r.cpu);
        let steady: Vec<f64> = runs.iter().filter_map(|r| r.steady).collect();
        let counts: Vec<String> = runs
            .iter()
            .map(|r| format!("{}/{}", r.count.records, r.count.changes))
            .collect();
        rows.push(vec![
            variant.label.clone(),
            runs.len().to_string(),
            rates
                .iter()
                .map(|r| grouped(*r))
                .collect::<Vec<_>>()
                .join(", "),
            format!("{} / {} / {}", grouped(min), grouped(med), grouped(max)),
            median(steady).map_or("-".into(), grouped),
            f2(med_of(&|r| r.wall)),
            format!(
                "{:.1}",
                runs.iter().map(|r| mib(r.peak_rss)).fold(0.0, f64::max)
            ),
            f2(cpu),
            f2(cpu * 1e6 / total as f64),
            f2(med_of(&|r| r.broker_cpu)),
            f2(med_of(&|r| r.emulator_cpu)),
            grouped(med_of(&|r| r.two_core_bound(total))),
            runs.iter()
                .map(|r| format!("{:.1}", r.load))
                .collect::<Vec<_>>()
                .join(", "),
            counts.join(", "),
        ]);
    }
    markdown(&header, &rows)
}

/// The delay table: one line per variant.
fn delay_table(results: &[(Variant, DelayRun)]) -> String {
    let header: Vec<String> = [
        "variant",
        "writes (rate/s)",
        "seen / twice",
        "delay p50 / p99 / max (s)",
        "peak RSS MiB",
        "CPU s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = results
        .iter()
        .map(|(variant, r)| {
            let delays = p50_p99_max(r.delays.clone())
                .map_or("-".into(), |[a, b, c]| format!("{a:.2} / {b:.2} / {c:.2}"));
            let failed = if r.failed_writes > 0 {
                format!(", {} failed", r.failed_writes)
            } else {
                String::new()
            };
            vec![
                variant.label.clone(),
                format!("{} ({:.0}{failed})", r.written, r.write_rate),
                format!("{} / {}", r.seen, r.twice),
                delays,
                format!("{:.1}", mib(r.peak_rss)),
                f2(r.cpu),
            ]
        })
        .collect::<Vec<_>>();
    markdown(&header, &rows)
}

/// Runs the throughput and delay measurements and prints their tables.
#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let mut args = Args::parse_from(crate::program_args());
    if args.quick {
        let given =
            |flag: &str| std::env::args().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        if !given("--changes") {
            args.changes = 100_000;
        }
        if !given("--runs") {
            args.runs = 1;
        }
        if !given("--write-secs") {
            args.write_secs = 10;
        }
    }
    ensure!(
        args.partitions > 0 && args.changes > 0 && args.runs > 0 && args.rate > 0,
        "--changes, --partitions, --runs and --rate must be at least 1"
    );
    let rows = args.changes.div_ceil(args.partitions);
    let total = rows * args.partitions;
    let program = sibling(args.program.clone(), "scylla-cdc-kafka")?;
    let emulator_path = emulator_binary(args.emulator.clone())?;
    let scripts = args
        .kafka_scripts
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/kafka"));
    let variants = default_variants(
        &args.variants,
        &["transactions=", "no-transactions=--no-transactions"],
    );
    let delay_variants = default_variants(
        &args.delay_variants,
        &["early reads=", "no early reads=--no-early-reads"],
    );
    println!(
        "scylla-cdc-kafka {} against Kafka 4.4 on {} cores (load average {})",
        program.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );

    let broker = Broker::start(&scripts, &args.kafka_address)?;
    // The bench's own stop (Ctrl-C, SIGTERM) stops the broker too: it runs in a process group
    // of its own and would outlive the bench.
    {
        let (scripts, dir) = (broker.scripts.clone(), broker.dir.clone());
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    .expect("a SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            eprintln!("stopping the broker");
            let _ = Command::new(scripts.join("stop-kafka")).arg(&dir).status();
            std::process::exit(130);
        });
    }

    let address = args.address.clone().unwrap_or_else(random_loopback);
    let before_preload = now_ms().saturating_sub(1000);
    let mut emulator_args: Vec<String> = [
        "--nodes",
        "1",
        "--shards",
        "2",
        "--port",
        "0",
        "--address",
        &address,
        "--generation-delay",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if !args.no_throughput {
        emulator_args.extend([
            "--preload".into(),
            format!("bench.t:partitions={},rows={rows}", args.partitions),
        ]);
    }
    let loading = Instant::now();
    let emulator = Emulator::start(&emulator_path, &emulator_args)?;
    let session = emulator.session().await?;
    let bench = Bench {
        program,
        broker,
        emulator,
        session,
        keep_topics: args.keep_topics,
        timeout: Duration::from_secs(args.timeout),
    };

    let mut throughput: Vec<(Variant, Vec<ThroughputRun>)> =
        variants.iter().map(|v| (v.clone(), Vec::new())).collect();
    if !args.no_throughput {
        let end_ms = end_of_backlog_in(&bench.session, "bench").await?;
        println!(
            "emulator at {}: {total} changes preloaded in {:.1} s ({} partitions × {rows} rows)",
            bench.emulator.contact_point,
            loading.elapsed().as_secs_f64(),
            args.partitions
        );
        let (start, end) = (rfc3339_ms(before_preload)?, rfc3339_ms(end_ms)?);
        let ready_at = end_ms + args.backlog_age * 1000;
        let now = now_ms();
        if ready_at > now {
            println!(
                "waiting {:.1} s until the backlog is {} s old",
                (ready_at - now) as f64 / 1000.0,
                args.backlog_age
            );
            tokio::time::sleep(Duration::from_millis(ready_at - now)).await;
        }
        for round in 1..=args.warm_ups {
            for (i, (variant, _)) in throughput.iter().enumerate() {
                let prefix = format!("warm{round}v{i}");
                let r = throughput_run(&bench, &prefix, variant, total, &start, &end)
                    .await
                    .with_context(|| format!("warm-up {round} of {}", variant.label))?;
                println!(
                    "warm-up {round} {:<18} {:>6.2} s (not counted)",
                    variant.label, r.wall
                );
            }
        }
        println!(
            "throughput: --start {start} --end {end}, {} run(s) of each variant",
            args.runs
        );
        for run in 1..=args.runs {
            for (i, (variant, results)) in throughput.iter_mut().enumerate() {
                let prefix = format!("tput{run}v{i}");
                let r = throughput_run(&bench, &prefix, variant, total, &start, &end)
                    .await
                    .with_context(|| format!("run {run} of {}", variant.label))?;
                println!(
                    "run {run} {:<18} {:>6.2} s  {:>9} changes/s (steady {:>9})  peak RSS {:.1} MiB  \
                     CPU {:.2} s  broker CPU {:.2} s  emulator CPU {:.2} s  (2-core bound {}/s)  \
                     load {:.1}  read back {} records, {} changes in {:.1} s",
                    variant.label,
                    r.wall,
                    grouped(r.rate),
                    r.steady.map_or("-".into(), grouped),
                    mib(r.peak_rss),
                    r.cpu,
                    r.broker_cpu,
                    r.emulator_cpu,
                    grouped(r.two_core_bound(total)),
                    r.load,
                    r.count.records,
                    r.count.changes,
                    r.count.secs,
                );
                ensure!(
                    r.count.records == total
                        && r.count.changes == total
                        && r.count.without_headers == 0,
                    "run {run} of {}: the topic has {} records of {} distinct changes ({} without \
                     headers), not {total}",
                    variant.label,
                    r.count.records,
                    r.count.changes,
                    r.count.without_headers
                );
                results.push(r);
            }
        }
    }

    let mut delays = Vec::new();
    if !args.no_delay {
        bench
            .session
            .query_unpaged(
                "CREATE KEYSPACE IF NOT EXISTS bench WITH replication = \
                 {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
                &[],
            )
            .await?;
        bench
            .session
            .query_unpaged(
                "CREATE TABLE IF NOT EXISTS bench.live (pk bigint, ck bigint, v blob, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
                &[],
            )
            .await?;
        println!(
            "delay: {} writes/s for {} s into bench.live per variant",
            args.rate, args.write_secs
        );
        for (i, variant) in delay_variants.iter().enumerate() {
            let r = delay_run(
                &bench,
                &format!("delay{i}"),
                variant,
                i as u64,
                args.rate,
                args.write_secs,
                Duration::from_secs(args.delay_wait),
            )
            .await
            .with_context(|| format!("the delay run of {}", variant.label))?;
            println!(
                "delay {:<18} {} writes ({:.0}/s), {} seen, {} twice: p50 / p99 / max {}  peak RSS \
                 {:.1} MiB  CPU {:.2} s",
                variant.label,
                r.written,
                r.write_rate,
                r.seen,
                r.twice,
                p50_p99_max(r.delays.clone()).map_or("-".into(), |[a, b, c]| format!(
                    "{a:.2} / {b:.2} / {c:.2} s"
                )),
                mib(r.peak_rss),
                r.cpu
            );
            delays.push((variant.clone(), r));
        }
    }

    println!();
    if !args.no_throughput {
        println!(
            "Throughput: {total} changes ({} partitions × {rows} rows, one event each), {} run(s); \
             targets: >= 200 000 changes/s with transactions, peak RSS <= 64 MiB",
            args.partitions, args.runs
        );
        print!("{}", throughput_table(&throughput));
        println!();
    }
    if !delays.is_empty() {
        println!(
            "Delay from a write to its visibility to a read_committed consumer ({} writes/s for \
             {} s); target: p99 <= 2 s",
            args.rate, args.write_secs
        );
        print!("{}", delay_table(&delays));
        for (variant, r) in &delays {
            if r.seen < r.written {
                println!(
                    "{}: {} of {} writes not seen within {} s of the last write",
                    variant.label,
                    r.written - r.seen,
                    r.written,
                    args.delay_wait
                );
            }
        }
    }
    drop(bench);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse_as_label_and_flags() {
        assert_eq!(
            parse_variant("commit 1 s=--commit-interval 1  -X linger.ms=20").unwrap(),
            Variant {
                label: "commit 1 s".into(),
                flags: vec![
                    "--commit-interval".into(),
                    "1".into(),
                    "-X".into(),
                    "linger.ms=20".into()
                ],
            }
        );
        assert_eq!(
            parse_variant("defaults=").unwrap().flags,
            Vec::<String>::new()
        );
        assert!(parse_variant("--no-transactions").is_err());
        assert!(parse_variant("=--no-transactions").is_err());
        let defaults = default_variants(&[], &["a=", "b=--x"]);
        assert_eq!(defaults.len(), 2);
        assert_eq!(defaults[1].flags, vec!["--x".to_string()]);
    }

    #[test]
    fn progress_lines_and_the_steady_rate() {
        let line = "progress: 12345 changes published (12345 messages), 0 skipped as already \
                    published; confirmed up to 2025-01-01T00:00:00Z";
        assert_eq!(progress_changes(line), Some(12345));
        let logged = format!("2026-01-02T03:04:05.123456Z  INFO scylla_cdc_kafka: {line}");
        assert_eq!(progress_changes(&logged), Some(12345));
        assert_eq!(progress_changes("read the progress"), None);
        assert_eq!(progress_changes("progress: many changes published"), None);
        let s = |ms: u64, n: u64| (Duration::from_millis(ms), n);
        // Start-up (0) and the end (all 1000) are left out: 600 changes in 3 s.
        let samples = [
            s(500, 0),
            s(1000, 100),
            s(2500, 400),
            s(4000, 700),
            s(4200, 1000),
        ];
        assert_eq!(steady_rate(&samples, 1000), Some(200.0));
        assert_eq!(steady_rate(&samples[..2], 1000), None);
        assert_eq!(steady_rate(&[], 1000), None);
    }

    #[test]
    fn a_timeuuid_header_gives_its_write_time() {
        // A version-1 uuid made from a known time: 2024-05-01T12:00:00.123456Z.
        let micros: i64 = 1_714_564_800_123_456;
        let ts = uuid::Timestamp::from_unix(
            uuid::NoContext,
            (micros / 1_000_000) as u64,
            ((micros % 1_000_000) * 1000) as u32,
        );
        let id = uuid::Uuid::new_v1(ts, &[1, 2, 3, 4, 5, 6]);
        assert_eq!(timeuuid_micros(id.to_string().as_bytes()), Some(micros));
        assert_eq!(timeuuid_micros(b"not a uuid"), None);
        // A random (version 4) uuid has no time.
        assert_eq!(
            timeuuid_micros(b"6ba7b810-9dad-41d1-80b4-00c04fd430c8"),
            None
        );
    }

    #[test]
    fn start_kafka_output_statistics_and_numbers() {
        let out = "KAFKA_ADDRESS=127.0.96.1\nKAFKA_BOOTSTRAP=127.0.96.1:9092\nKAFKA_PID=4242\n";
        assert_eq!(env_value(out, "KAFKA_BOOTSTRAP"), Some("127.0.96.1:9092"));
        assert_eq!(env_value(out, "KAFKA_PID"), Some("4242"));
        assert_eq!(env_value(out, "KAFKA_DIR"), None);
        assert_eq!(env_value(out, "KAFKA"), None);
        assert_eq!(spread(&[3.0, 1.0, 2.0]), Some([1.0, 2.0, 3.0]));
        assert_eq!(spread(&[]), None);
        assert_eq!(grouped(1_234_567.4), "1 234 567");
        assert_eq!(grouped(999.0), "999");
        assert_eq!(grouped(1000.0), "1 000");
        assert_eq!(
            rfc3339_ms(1_714_564_800_123).unwrap(),
            "2024-05-01T12:00:00.123Z"
        );
    }
}
