//! `scylla-cdc-bench reader`: how fast the `scylla-cdc` log reader catches up a backlog.
//!
//! For each backlog size, starts `scylla-emulator --preload ks.t:partitions=P,rows=R` as a
//! separate process, then reads the whole log with a `CDCLogReader` (from before the first
//! generation to the end of the preload) with a consumer that only counts rows, and prints
//! rows/s, the reader's CPU time per row (getrusage) and its peak RSS. Sizes run one after
//! the other in this process, with the peak RSS reset in between, so "memory flat as the
//! backlog grows" is read off one run.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench reader --partitions 1000 --sizes 1000,10000
//! target/release/scylla-cdc-bench reader --partitions 1000 --sizes 1000 --api change
//! ```
//!
//! `--api change` reads through the change API (`change_consumer_factory`: every row is
//! copied out of its page into an owned `Change`) with a consumer that counts the rows of
//! each change, to compare its CPU per row with the row API's. `--api both --reps N` reads the
//! same backlog N times with each API, alternating which goes first, and ends with the
//! medians and their ratio (`change/row: cpu_per_row=...`): both APIs are measured against
//! one cluster in the same minutes, so the ratio holds on a shared, noisy machine.
//!
//! ```text
//! target/release/scylla-cdc-bench reader --partitions 1000 --sizes 2000 --api both --reps 5
//! ```

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
use scylla_cdc_bench::{
    Emulator, emulator_binary, median, mib, own_rusage, own_usage, random_loopback,
};

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
    /// The consumer API the reader delivers through (`both`: each in turn, on one backlog).
    #[arg(long, value_enum, default_value_t = ApiChoice::Row)]
    api: ApiChoice,
    /// Turn on the table's `postimage` option: every change is two log rows (the delta and
    /// the post-image), so the change API assembles changes of two rows.
    #[arg(long)]
    postimage: bool,
    /// Reads of each backlog per API (with `--api both`, the APIs alternate going first).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
}

/// The `--api` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ApiChoice {
    /// `consumer_factory`: a `CDCRow` per log row.
    Row,
    /// `change_consumer_factory`: an owned `Change` per `(stream, cdc$time)`.
    Change,
    /// Both, alternating, with the ratio of their medians at the end.
    Both,
}

impl ApiChoice {
    /// The APIs of repetition `rep` in the order they read: with both, the one that goes
    /// first alternates (a cluster warmed by the first read favours neither).
    fn order(self, rep: u32) -> Vec<Api> {
        match self {
            Self::Row => vec![Api::Row],
            Self::Change => vec![Api::Change],
            Self::Both if rep.is_multiple_of(2) => vec![Api::Row, Api::Change],
            Self::Both => vec![Api::Change, Api::Row],
        }
    }
}

/// Which consumer API one read goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Row,
    Change,
}

/// What one read measured.
#[derive(Debug, Clone, Copy)]
struct Read {
    api: Api,
    rows_per_s: f64,
    /// µs of CPU per row: user, system.
    user_us: f64,
    system_us: f64,
}

impl Read {
    fn cpu_us(&self) -> f64 {
        self.user_us + self.system_us
    }
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

/// Preloads a backlog of `rows_per_partition` rows per partition, reads it once per API and
/// repetition, and returns what each read measured.
async fn run_size(
    args: &Args,
    binary: &std::path::Path,
    rows_per_partition: u64,
) -> anyhow::Result<Vec<Read>> {
    let base_rows = args.partitions * rows_per_partition;
    // Log rows: a delta per insert, and its post-image with `--postimage`.
    let total = base_rows * if args.postimage { 2 } else { 1 };
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
                "bench.t:partitions={},rows={rows_per_partition}{}",
                args.partitions,
                if args.postimage { ",postimage" } else { "" }
            ),
        ],
    )?;
    println!(
        "{base_rows:>10} base rows ({total} log rows): preloaded in {:.1} s",
        loading.elapsed().as_secs_f64()
    );
    let session = emulator.session().await?;
    // Everything preloaded is older than now; end the read there.
    let end = chrono::Utc::now();
    let mut reads = Vec::new();
    for rep in 0..args.reps {
        for api in args.api.order(rep) {
            reads.push(read_backlog(args, &session, api, total, end).await?);
        }
    }
    drop(emulator);
    Ok(reads)
}

/// Reads the whole backlog (`total` rows, up to `end`) through `api` and prints one line.
async fn read_backlog(
    args: &Args,
    session: &Arc<scylla::client::session::Session>,
    api: Api,
    total: u64,
    end: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Read> {
    let count = Arc::new(AtomicU64::new(0));
    reset_peak_rss();
    let before = own_rusage();
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
    let builder = match api {
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
    let after = own_rusage();
    let samples = tokio::time::timeout(Duration::from_secs(1), sampler)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let rows = count.load(Ordering::Relaxed);
    let per_row = |d: Duration| d.as_secs_f64() * 1e6 / rows.max(1) as f64;
    let read = Read {
        api,
        rows_per_s: rows as f64 / elapsed.as_secs_f64(),
        user_us: per_row(after.user.saturating_sub(before.user)),
        system_us: per_row(after.system.saturating_sub(before.system)),
    };
    println!(
        "{:>10} {api:?} API: read {rows} log rows in {:.2} s = {:.0} rows/s; reader CPU {:.3} \
         µs/row (user {:.3}, system {:.3}); reader peak RSS {}",
        "",
        elapsed.as_secs_f64(),
        read.rows_per_s,
        read.cpu_us(),
        read.user_us,
        read.system_us,
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
        "the reader delivered {rows} rows, the log has {total}"
    );
    Ok(read)
}

/// The medians of one API's reads: rows/s, CPU µs/row, user µs/row, system µs/row.
fn medians(reads: &[Read], api: Api) -> Option<[f64; 4]> {
    let of = |f: fn(&Read) -> f64| median(reads.iter().filter(|r| r.api == api).map(f).collect());
    Some([
        of(|r| r.rows_per_s)?,
        of(Read::cpu_us)?,
        of(|r| r.user_us)?,
        of(|r| r.system_us)?,
    ])
}

/// The closing lines of `--api both`: each API's medians and the change API's CPU per row
/// over the row API's.
fn summary(reads: &[Read]) -> Option<String> {
    let row = medians(reads, Api::Row)?;
    let change = medians(reads, Api::Change)?;
    let line = |name: &str, m: [f64; 4]| {
        format!(
            "{name:>6} API medians: {:.0} rows/s; CPU {:.3} µs/row (user {:.3}, system {:.3})\n",
            m[0], m[1], m[2], m[3]
        )
    };
    Some(format!(
        "{}{}change/row: cpu_per_row={:.3} user_per_row={:.3} rows_per_s={:.3}",
        line("row", row),
        line("change", change),
        change[1] / row[1],
        change[2] / row[2],
        change[0] / row[0],
    ))
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
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
        let reads = run_size(&args, &binary, size).await?;
        if let Some(summary) = summary(&reads) {
            println!("{summary}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(api: Api, rows_per_s: f64, user_us: f64, system_us: f64) -> Read {
        Read {
            api,
            rows_per_s,
            user_us,
            system_us,
        }
    }

    #[test]
    fn both_apis_take_turns_going_first() {
        assert_eq!(ApiChoice::Both.order(0), [Api::Row, Api::Change]);
        assert_eq!(ApiChoice::Both.order(1), [Api::Change, Api::Row]);
        assert_eq!(ApiChoice::Change.order(1), [Api::Change]);
    }

    #[test]
    fn the_summary_is_the_ratio_of_the_medians() {
        let reads = [
            read(Api::Row, 3e6, 0.10, 0.02),
            read(Api::Change, 2e6, 0.14, 0.04),
            read(Api::Change, 2.5e6, 0.12, 0.03),
            read(Api::Row, 2e6, 0.30, 0.10),
            read(Api::Row, 2.5e6, 0.11, 0.02),
            read(Api::Change, 1e6, 0.50, 0.10),
        ];
        let text = summary(&reads).expect("both APIs were read");
        // Medians: row 0.13 µs/row (user 0.11), change 0.18 (user 0.14).
        assert!(
            text.ends_with("change/row: cpu_per_row=1.385 user_per_row=1.273 rows_per_s=0.800"),
            "{text}"
        );
        assert_eq!(summary(&reads[..1]), None, "one API only: no ratio");
    }
}
