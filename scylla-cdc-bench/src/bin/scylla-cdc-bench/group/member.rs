//! A member process: one member of the consumer group reads its share of the backlog with a
//! counting consumer, then prints one result line on stdout for the parent.
//!
//! The member connects and makes its checkpoint saver, prints [`READY`], and waits for a line
//! on stdin before building its reader, so that the parent starts every member of a run at
//! once. With `--end-ms` it reads until its reader's handle resolves (the group has read
//! everything before the end); without, until the next line on stdin (or its end), when it
//! stops its reader (handing its units back) and waits for the handle.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc::TableBackedCheckpointSaver;
use tokio::io::{AsyncBufReadExt, BufReader};

use scylla_cdc_bench::tally::{ResultFields, TallyFactory, Totals};

/// The line a member prints once it is connected and waits for the start.
pub(crate) const READY: &str = "group-bench-ready";
/// The prefix of the result line a member prints.
pub(crate) const RESULT_PREFIX: &str = "group-bench-member";

/// The settings of one member (the parent passes them; not for users).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct MemberArgs {
    /// A node of the cluster.
    #[arg(long)]
    pub(crate) contact: SocketAddr,
    /// Keyspace of the preloaded table (and of the checkpoint and lease tables).
    #[arg(long)]
    pub(crate) keyspace: String,
    /// The preloaded table.
    #[arg(long)]
    pub(crate) table: String,
    /// The checkpoint table (the lease table is `<it>_leases`).
    #[arg(long)]
    pub(crate) checkpoint_table: String,
    /// The group's name.
    #[arg(long)]
    pub(crate) group: String,
    /// This member's id.
    #[arg(long)]
    pub(crate) member_id: String,
    /// Start of reading, milliseconds since the epoch.
    #[arg(long)]
    pub(crate) start_ms: u64,
    /// End of reading (exclusive), milliseconds since the epoch; without it, read until told
    /// to stop on stdin.
    #[arg(long)]
    pub(crate) end_ms: Option<u64>,
    /// Window size, milliseconds.
    #[arg(long)]
    pub(crate) window_ms: u64,
    /// Safety interval, milliseconds.
    #[arg(long)]
    pub(crate) safety_ms: u64,
    /// Sleep interval, milliseconds.
    #[arg(long)]
    pub(crate) sleep_ms: u64,
    /// Lease duration, milliseconds.
    #[arg(long)]
    pub(crate) lease_ms: u64,
    /// Renew interval, milliseconds (default: the library's, a third of the lease).
    #[arg(long)]
    pub(crate) renew_ms: Option<u64>,
    /// Least time between two checkpoints of a unit, milliseconds (default: the library's).
    #[arg(long)]
    pub(crate) pause_between_saves_ms: Option<u64>,
    /// Tokio worker threads (default: tokio's, one per core).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Leaves the first delivered row out of the tally (the tests' wrong delivery).
    #[arg(long)]
    pub(crate) drop_one_row: bool,
}

/// What a member reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberResult {
    /// Rows its consumers saw.
    pub(crate) rows: u64,
    /// Wrapping sum of [`mix`](scylla_cdc_bench::mix) of every row's `v`.
    pub(crate) checksum: u64,
    /// When its last row was delivered, microseconds since the epoch (0: no row).
    pub(crate) last_row_us: u64,
    /// Its CPU time (user + system), the whole process.
    pub(crate) cpu: Duration,
    /// Its peak RSS (VmHWM), bytes.
    pub(crate) peak_rss: u64,
}

impl MemberResult {
    pub(crate) fn line(&self) -> String {
        format!(
            "{RESULT_PREFIX} rows={} checksum={} last_row_us={} cpu_us={} peak_rss={}",
            self.rows,
            self.checksum,
            self.last_row_us,
            self.cpu.as_micros(),
            self.peak_rss
        )
    }

    /// The result line among a member's output lines.
    pub(crate) fn parse(output: &str) -> anyhow::Result<MemberResult> {
        let fields = ResultFields::parse(output, RESULT_PREFIX)?;
        Ok(MemberResult {
            rows: fields.get("rows")?,
            checksum: fields.get("checksum")?,
            last_row_us: fields.get("last_row_us")?,
            cpu: Duration::from_micros(fields.get("cpu_us")?),
            peak_rss: fields.get("peak_rss")?,
        })
    }
}

/// Runs one member: waits for the start, reads, then prints the result line.
pub(crate) fn run(args: MemberArgs) -> anyhow::Result<()> {
    if std::env::var_os("RUST_LOG").is_some() {
        // The reader's log on stdout, for `--member-logs` (the parent keeps it).
        scylla_cdc_test_utils::setup_tracing();
    }
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

async fn read(args: &MemberArgs) -> anyhow::Result<MemberResult> {
    let session = Arc::new(
        SessionBuilder::new()
            .known_node(args.contact.to_string())
            .build()
            .await
            .with_context(|| format!("connecting to {}", args.contact))?,
    );
    let saver = TableBackedCheckpointSaver::new(
        session.clone(),
        &args.keyspace,
        &args.checkpoint_table,
        &args.keyspace,
        &args.table,
    )
    .await?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    println!("{READY}");
    stdin
        .next_line()
        .await
        .context("reading the start from stdin")?
        .context("stdin ended before the start")?;

    let shared = Totals::new(args.drop_one_row);
    let at = |t| std::time::UNIX_EPOCH + ms(t);
    let mut builder = scylla_cdc::CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace(args.keyspace.as_str())
        .table_name(args.table.as_str())
        .consumer_factory(TallyFactory::new(shared.clone(), true))
        .checkpoint_saver(Arc::new(saver))
        .start_timestamp(at(args.start_ms))
        .window_size(ms(args.window_ms))
        .safety_interval(ms(args.safety_ms))
        .sleep_interval(ms(args.sleep_ms))
        .group(args.group.as_str())
        .member_id(args.member_id.as_str())
        .lease_duration(ms(args.lease_ms));
    if let Some(end) = args.end_ms {
        builder = builder.end_timestamp(at(end));
    }
    if let Some(renew) = args.renew_ms {
        builder = builder.renew_interval(ms(renew));
    }
    if let Some(pause) = args.pause_between_saves_ms {
        builder = builder.pause_between_saves(ms(pause));
    }
    let (mut reader, handle) = builder.build().await?;
    if args.end_ms.is_none() {
        // Any line, or the end of stdin: leave the group.
        let _ = stdin.next_line().await;
        reader.stop();
    }
    handle.await?;
    drop(reader);
    Ok(MemberResult {
        rows: shared.rows(),
        checksum: shared.checksum(),
        last_row_us: shared.last_row_us(),
        cpu: scylla_cdc_bench::own_usage().0,
        peak_rss: scylla_cdc_bench::process_peak_rss(std::process::id())
            .unwrap_or_else(|_| scylla_cdc_bench::own_usage().1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_round_trip() {
        let r = MemberResult {
            rows: 12,
            checksum: u64::MAX - 3,
            last_row_us: 1_700_000_000_123_456,
            cpu: Duration::from_micros(1_234_567),
            peak_rss: 25 << 20,
        };
        let output = format!("something else\n{}\n", r.line());
        assert_eq!(MemberResult::parse(&output).unwrap(), r);
        assert!(MemberResult::parse("nothing").is_err());
        assert!(MemberResult::parse(&format!("{RESULT_PREFIX} rows=1")).is_err());
    }
}
