//! `reader-bench`: how fast the `scylla-cdc` log reader catches up a backlog.
//!
//! For each backlog size, starts `scylla-emulator --preload ks.t:partitions=P,rows=R` as a
//! separate process, then reads the whole log with a `CDCLogReader` (from before the first
//! generation to the end of the preload) with a consumer that only counts rows, and prints
//! rows/s, the reader's CPU time per row (getrusage) and its peak RSS. Sizes run one after
//! the other in this process, with the peak RSS reset in between, so "memory flat as the
//! backlog grows" is read off one run.
//!
//! ```text
//! cargo build --release -p scylla-cdc-test-utils -p scylla-cdc-bench
//! target/release/reader-bench --partitions 1000 --sizes 1000,10000
//! target/release/reader-bench --partitions 1000 --sizes 1000 --api change
//! ```
//!
//! `--api change` reads through the change API (`change_consumer_factory`: every row is
//! copied out of its page into an owned `Change`) with a consumer that counts the rows of
//! each change, to compare its CPU per row with the row API's.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use clap::{Parser, ValueEnum};
use scylla_cdc::{
    CDCLogReaderBuilder, CDCRow, Change, ChangeConsumer, ChangeConsumerFactory, Consumer,
    ConsumerFactory,
};
use scylla_cdc_bench::{Emulator, emulator_binary, mib, own_usage, random_loopback};

/// Log reader throughput, CPU per row and memory over a preloaded backlog.
#[derive(Debug, Parser)]
struct Args {
    /// Partitions of the preloaded table.
    #[arg(long, default_value_t = 1000)]
    partitions: u64,
    /// Rows per partition, one run per value (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    sizes: Vec<u64>,
    /// Nodes of the emulated cluster.
    #[arg(long, default_value_t = 1)]
    nodes: u16,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Vnodes per node (one stream reader per vnode).
    #[arg(long, default_value_t = 16)]
    vnodes: u16,
    /// The reader's window size in seconds.
    #[arg(long, default_value_t = 60.0)]
    window_size: f64,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
    /// The consumer API the reader delivers through.
    #[arg(long, value_enum, default_value_t = Api::Row)]
    api: Api,
}

/// Which consumer API is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Api {
    /// `consumer_factory`: a `CDCRow` per log row.
    Row,
    /// `change_consumer_factory`: an owned `Change` per `(stream, cdc$time)`.
    Change,
}

/// Counts rows; does nothing else.
struct Counter(Arc<AtomicU64>);

#[async_trait]
impl Consumer for Counter {
    async fn consume_cdc(&mut self, _row: CDCRow<'_>) -> anyhow::Result<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

struct CounterFactory(Arc<AtomicU64>);

#[async_trait]
impl ConsumerFactory for CounterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Counter(self.0.clone()))
    }
}

/// Counts the rows of each change; does nothing else.
#[async_trait]
impl ChangeConsumer for Counter {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        self.0
            .fetch_add(change.rows().len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

#[async_trait]
impl ChangeConsumerFactory for CounterFactory {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(Counter(self.0.clone()))
    }
}

/// Resets this process's peak RSS (VmHWM), so the next size is measured on its own.
fn reset_peak_rss() {
    // "5" resets the peak resident set size (Linux ≥ 4.0); best effort.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Resident memory of this process now (`VmRSS`), in bytes.
fn current_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn peak_rss() -> u64 {
    scylla_cdc_bench::process_peak_rss(std::process::id()).unwrap_or(own_usage().1)
}

async fn run_one(
    args: &Args,
    binary: &std::path::Path,
    rows_per_partition: u64,
) -> anyhow::Result<()> {
    let total = args.partitions * rows_per_partition;
    let loading = Instant::now();
    let emulator = Emulator::start(
        binary,
        &[
            "--nodes".into(),
            args.nodes.to_string(),
            "--shards".into(),
            args.shards.to_string(),
            "--vnodes".into(),
            args.vnodes.to_string(),
            "--port".into(),
            "0".into(),
            "--address".into(),
            random_loopback(),
            "--preload".into(),
            format!(
                "bench.t:partitions={},rows={rows_per_partition}",
                args.partitions
            ),
        ],
    )?;
    let load_time = loading.elapsed();
    let session = emulator.session().await?;
    // Everything preloaded is older than now; end the read there.
    let end = chrono::Utc::now();
    let count = Arc::new(AtomicU64::new(0));
    reset_peak_rss();
    let (cpu_before, _) = own_usage();
    let started = Instant::now();
    // Resident memory when 10%, 20%, ... 100% of the backlog has been read: a reader whose
    // memory grows with what it has read shows it here.
    let sampler = {
        let count = count.clone();
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut next = 1u64;
            while next <= 10 {
                if count.load(Ordering::Relaxed) * 10 >= total * next {
                    samples.push(current_rss());
                    next += 1;
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            samples
        })
    };
    let factory = Arc::new(CounterFactory(count.clone()));
    let builder = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace("bench")
        .table_name("t");
    let builder = match args.api {
        Api::Row => builder.consumer_factory(factory),
        Api::Change => builder.change_consumer_factory(factory),
    };
    let (_reader, handle) = builder
        .start_timestamp(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH)
        .end_timestamp(end)
        .window_size(Duration::from_secs_f64(args.window_size))
        .safety_interval(Duration::from_millis(1))
        .sleep_interval(Duration::from_millis(100))
        .build()
        .await?;
    handle.await?;
    let elapsed = started.elapsed();
    let (cpu_after, _) = own_usage();
    let samples = tokio::time::timeout(Duration::from_secs(1), sampler)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let rows = count.load(Ordering::Relaxed);
    let cpu = cpu_after.saturating_sub(cpu_before);
    println!(
        "{total:>10} base rows: preload {:.1} s; read {rows} log rows in {:.2} s = {:.0} rows/s; \
         reader CPU {:.3} µs/row; reader peak RSS {}",
        load_time.as_secs_f64(),
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / rows.max(1) as f64,
        mib(peak_rss()),
    );
    println!(
        "{:>10} reader RSS at 10%, 20%, ... 100% of the backlog: {}",
        "",
        samples
            .iter()
            .map(|b| format!("{:.1}", *b as f64 / (1024.0 * 1024.0)))
            .collect::<Vec<_>>()
            .join(" ")
            + " MiB"
    );
    anyhow::ensure!(
        rows == total,
        "the reader delivered {rows} rows, {total} were preloaded"
    );
    drop(emulator);
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let binary = emulator_binary(args.emulator.clone())?;
    println!(
        "emulator {} ({} nodes x {} shards, {} vnodes each); {} partitions; {:?} API",
        binary.display(),
        args.nodes,
        args.shards,
        args.vnodes,
        args.partitions,
        args.api
    );
    for &size in &args.sizes {
        run_one(&args, &binary, size).await?;
    }
    Ok(())
}
