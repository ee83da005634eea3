//! The child process: one system reads the backlog once with the common consumer, then prints
//! one result line on stdout for the parent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::ValueEnum;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc_bench::tally::{ResultFields, TallyFactory, Totals, UpstreamTallyFactory};

/// The prefix of the result line a child prints.
pub(crate) const RESULT_PREFIX: &str = "compare-bench-result";

/// Which reader a child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum System {
    /// This workspace's `scylla-cdc`.
    Ours,
    /// scylla-cdc-rust 0.7.0 from crates.io.
    Upstream,
}

impl System {
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Ours => "ours",
            System::Upstream => "upstream",
        }
    }
}

/// The settings of one child run (the parent passes them; not for users).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ChildArgs {
    /// The reader to run.
    #[arg(long, value_enum)]
    pub(crate) system: System,
    /// A node of the cluster.
    #[arg(long)]
    pub(crate) contact: SocketAddr,
    /// Keyspace of the preloaded table.
    #[arg(long)]
    pub(crate) keyspace: String,
    /// The preloaded table.
    #[arg(long)]
    pub(crate) table: String,
    /// Start of reading, milliseconds since the epoch.
    #[arg(long)]
    pub(crate) start_ms: u64,
    /// End of reading (exclusive), milliseconds since the epoch.
    #[arg(long)]
    pub(crate) end_ms: u64,
    /// Window size, milliseconds.
    #[arg(long)]
    pub(crate) window_ms: u64,
    /// Safety interval, milliseconds.
    #[arg(long)]
    pub(crate) safety_ms: u64,
    /// Sleep interval, milliseconds.
    #[arg(long)]
    pub(crate) sleep_ms: u64,
    /// Tokio worker threads (default: tokio's, one per core).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Leaves one delivered row out of the tally (the tests' wrong delivery).
    #[arg(long)]
    pub(crate) drop_one_row: bool,
}

/// What a child reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChildResult {
    /// Rows the consumers saw.
    pub(crate) rows: u64,
    /// Wrapping sum of [`mix`](scylla_cdc_bench::mix) of every row's `v`.
    pub(crate) checksum: u64,
    /// From `build()` to the reader's handle resolving.
    pub(crate) read_time: Duration,
    /// The child's peak RSS (VmHWM), bytes.
    pub(crate) peak_rss: u64,
}

impl ChildResult {
    pub(crate) fn line(&self) -> String {
        format!(
            "{RESULT_PREFIX} rows={} checksum={} read_us={} peak_rss={}",
            self.rows,
            self.checksum,
            self.read_time.as_micros(),
            self.peak_rss
        )
    }

    /// The result line among a child's output lines.
    pub(crate) fn parse(output: &str) -> anyhow::Result<ChildResult> {
        let fields = ResultFields::parse(output, RESULT_PREFIX)?;
        Ok(ChildResult {
            rows: fields.get("rows")?,
            checksum: fields.get("checksum")?,
            read_time: Duration::from_micros(fields.get("read_us")?),
            peak_rss: fields.get("peak_rss")?,
        })
    }
}

pub(crate) use scylla_cdc_bench::backlog_checksum as expected;

/// Runs one child: reads, then prints the result line.
pub(crate) fn run(args: ChildArgs) -> anyhow::Result<()> {
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        runtime.worker_threads(workers.max(1));
    }
    let runtime = runtime.enable_all().build()?;
    let result = runtime.block_on(read(&args))?;
    println!("{}", result.line());
    Ok(())
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

async fn read(args: &ChildArgs) -> anyhow::Result<ChildResult> {
    let session = Arc::new(
        SessionBuilder::new()
            .known_node(args.contact.to_string())
            .build()
            .await
            .with_context(|| format!("connecting to {}", args.contact))?,
    );
    let shared = Totals::new(args.drop_one_row);
    let started = Instant::now();
    match args.system {
        System::Ours => {
            let at = |t| std::time::UNIX_EPOCH + ms(t);
            let (reader, handle) = scylla_cdc::CDCLogReaderBuilder::new()
                .session(session.clone())
                .keyspace(args.keyspace.as_str())
                .table_name(args.table.as_str())
                .consumer_factory(TallyFactory::new(shared.clone(), false))
                .start_timestamp(at(args.start_ms))
                .end_timestamp(at(args.end_ms))
                .window_size(ms(args.window_ms))
                .safety_interval(ms(args.safety_ms))
                .sleep_interval(ms(args.sleep_ms))
                .build()
                .await?;
            handle.await?;
            drop(reader);
        }
        System::Upstream => {
            // Upstream's timestamps are durations since the epoch.
            let (reader, handle) = upstream::log_reader::CDCLogReaderBuilder::new()
                .session(session.clone())
                .keyspace(&args.keyspace)
                .table_name(&args.table)
                .consumer_factory(UpstreamTallyFactory::new(shared.clone()))
                .start_timestamp(ms(args.start_ms))
                .end_timestamp(ms(args.end_ms))
                .window_size(ms(args.window_ms))
                .safety_interval(ms(args.safety_ms))
                .sleep_interval(ms(args.sleep_ms))
                .build()
                .await?;
            handle.await?;
            // Kept until the end: dropping upstream's reader early closes the channel its
            // worker selects on.
            drop(reader);
        }
    }
    let read_time = started.elapsed();
    Ok(ChildResult {
        rows: shared.rows(),
        checksum: shared.checksum(),
        read_time,
        peak_rss: scylla_cdc_bench::process_peak_rss(std::process::id())
            .unwrap_or_else(|_| scylla_cdc_bench::own_usage().1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_round_trip() {
        let r = ChildResult {
            rows: 12,
            checksum: u64::MAX - 3,
            read_time: Duration::from_micros(1_234_567),
            peak_rss: 25 << 20,
        };
        let output = format!("something else\n{}\n", r.line());
        assert_eq!(ChildResult::parse(&output).unwrap(), r);
        assert!(ChildResult::parse("nothing").is_err());
        assert!(ChildResult::parse(&format!("{RESULT_PREFIX} rows=1")).is_err());
    }
}
