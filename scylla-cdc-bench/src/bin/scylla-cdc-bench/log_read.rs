//! `scylla-cdc-bench log-read`: how fast the driver reads a preloaded CDC log back from a
//! `scylla-emulator` process, and how long the preload takes.
//!
//! Starts `scylla-emulator --preload bench.t:partitions=P,rows=R` as a separate process and
//! times it until it prints `ready` (the preload runs before that), with the emulator's peak
//! and current memory. Then reads the whole log as a CDC reader does: the generation's
//! streams from `system_distributed`, grouped by vnode, each group read window after window
//! with the prepared query
//!
//! ```text
//! SELECT * FROM bench.t_scylla_cdc_log WHERE "cdc$stream_id" IN ?
//!     AND "cdc$time" >= minTimeuuid(?) AND "cdc$time" < minTimeuuid(?)
//! ```
//!
//! (paged, every column deserialized), several groups in parallel, and prints rows/s and the
//! CPU time of both processes.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench log-read --partitions 10000 --rows 1000
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::{Consistency, Statement};
use scylla::value::{CqlTimestamp, Row};
use scylla_cdc_bench::{
    Emulator, emulator_binary, mib, own_usage, process_cpu_time, process_peak_rss, random_loopback,
};

/// Preload a CDC log in an emulator, then read it back with the driver.
#[derive(Debug, Parser)]
struct Args {
    /// Partitions of the preloaded table.
    #[arg(long, default_value_t = 10_000)]
    partitions: u64,
    /// Rows per partition.
    #[arg(long, default_value_t = 1_000)]
    rows: u64,
    /// Turn on the table's `postimage` option (one more log row per insert).
    #[arg(long)]
    postimage: bool,
    /// Stream groups (vnodes) read at once.
    #[arg(long, default_value_t = 8)]
    parallel: usize,
    /// Length of one read window, in seconds (the Rust CDC library uses 60).
    #[arg(long, default_value_t = 60)]
    window_secs: u64,
    /// Page size of the log queries.
    #[arg(long, default_value_t = 5000)]
    page_size: i32,
    /// Shards per node of the emulated cluster.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Vnode tokens per node.
    #[arg(long, default_value_t = 16)]
    vnodes: u16,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
}

/// The log query of one stream group and window.
const LOG_QUERY: &str = "SELECT * FROM bench.t_scylla_cdc_log WHERE \"cdc$stream_id\" IN ? \
     AND \"cdc$time\" >= minTimeuuid(?) AND \"cdc$time\" < minTimeuuid(?)";

/// Current resident memory of a process (`VmRSS`), in bytes.
fn process_rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kb * 1024)
}

/// The newest generation: its timestamp (ms) and its streams, one group per vnode.
async fn generation(session: &Session) -> anyhow::Result<(i64, Vec<Vec<Vec<u8>>>)> {
    let mut q = Statement::new(
        "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
    );
    q.set_consistency(Consistency::One);
    let times: Vec<(CqlTimestamp,)> = session
        .query_iter(q, ())
        .await?
        .rows_stream::<(CqlTimestamp,)>()?
        .try_collect()
        .await?;
    let time = times
        .iter()
        .map(|t| t.0.0)
        .max()
        .context("no CDC generation")?;
    let mut q = Statement::new(
        "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
    );
    q.set_consistency(Consistency::One);
    let groups: Vec<(Vec<Vec<u8>>,)> = session
        .query_iter(q, (CqlTimestamp(time),))
        .await?
        .rows_stream::<(Vec<Vec<u8>>,)>()?
        .try_collect()
        .await?;
    Ok((time, groups.into_iter().map(|g| g.0).collect()))
}

/// Reads one stream group over `[from, to)` (ms) in windows of `window` ms; returns the rows
/// read.
async fn read_group(
    session: &Session,
    query: &PreparedStatement,
    streams: &[Vec<u8>],
    from: i64,
    to: i64,
    window: i64,
) -> anyhow::Result<u64> {
    let mut rows = 0;
    let mut start = from;
    while start < to {
        let end = (start + window).min(to);
        let mut pages = session
            .execute_iter(
                query.clone(),
                (streams, CqlTimestamp(start), CqlTimestamp(end)),
            )
            .await?
            .rows_stream::<Row>()?;
        while let Some(row) = pages.next().await {
            row?;
            rows += 1;
        }
        start = end;
    }
    Ok(rows)
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    if args.partitions == 0 || args.rows == 0 || args.parallel == 0 || args.window_secs == 0 {
        bail!("--partitions, --rows, --parallel and --window-secs must be at least 1");
    }
    let binary = emulator_binary(args.emulator.clone())?;
    let total = args.partitions * args.rows;
    let spec = format!(
        "bench.t:partitions={},rows={}{}",
        args.partitions,
        args.rows,
        if args.postimage { ",postimage" } else { "" }
    );
    let emulator_args: Vec<String> = vec![
        "--port".into(),
        "0".into(),
        "--address".into(),
        random_loopback(),
        "--shards".into(),
        args.shards.to_string(),
        "--vnodes".into(),
        args.vnodes.to_string(),
        "--preload".into(),
        spec.clone(),
    ];
    println!("preloading {spec} ({total} rows) in {}", binary.display());
    let started = Instant::now();
    let binary_for_start = binary.clone();
    let emulator =
        tokio::task::spawn_blocking(move || Emulator::start(&binary_for_start, &emulator_args))
            .await??;
    let preload = started.elapsed();
    let pid = emulator.pid();
    let peak = process_peak_rss(pid)?;
    let rss = process_rss(pid)?;
    let preload_cpu = process_cpu_time(pid)?;
    println!(
        "preload: {total} rows in {:.1} s ({:.0} rows/s, emulator CPU {:.1} s); \
         emulator peak RSS {}, RSS {} = {:.0} bytes per row (base + log)",
        preload.as_secs_f64(),
        total as f64 / preload.as_secs_f64(),
        preload_cpu.as_secs_f64(),
        mib(peak),
        mib(rss),
        rss as f64 / total as f64,
    );

    let session = emulator.session().await?;
    let (generation_time, groups) = generation(&session).await?;
    let mut query = session.prepare(LOG_QUERY).await?;
    query.set_page_size(args.page_size);
    // Every row was written before `ready`: read up to a second from now.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let to = now_ms + 1000;
    let window = args.window_secs as i64 * 1000;
    let streams: usize = groups.iter().map(Vec::len).sum();
    println!(
        "reading {} streams in {} vnode groups, {} at a time, windows of {} s over {:.1} s",
        streams,
        groups.len(),
        args.parallel,
        args.window_secs,
        (to - generation_time) as f64 / 1000.0
    );

    let server_cpu = process_cpu_time(pid)?;
    let client_cpu = own_usage().0;
    let start = Instant::now();
    let read = Arc::new(AtomicU64::new(0));
    let results: Vec<anyhow::Result<u64>> = futures::stream::iter(groups)
        .map(|group| {
            let session = session.clone();
            let query = query.clone();
            let read = read.clone();
            async move {
                let n = read_group(&session, &query, &group, generation_time, to, window).await?;
                read.fetch_add(n, Ordering::Relaxed);
                Ok(n)
            }
        })
        .buffer_unordered(args.parallel)
        .collect()
        .await;
    let wall = start.elapsed();
    for r in results {
        r?;
    }
    let rows = read.load(Ordering::Relaxed);
    let client = own_usage().0.saturating_sub(client_cpu);
    let server = process_cpu_time(pid)?.saturating_sub(server_cpu);
    let per_row = |cpu: Duration| cpu.as_secs_f64() * 1e6 / rows.max(1) as f64;
    println!(
        "log read: {rows} rows in {:.2} s = {:.0} rows/s (CPU: driver {:.2} s = {:.2} µs/row, \
         emulator {:.2} s = {:.2} µs/row)",
        wall.as_secs_f64(),
        rows as f64 / wall.as_secs_f64(),
        client.as_secs_f64(),
        per_row(client),
        server.as_secs_f64(),
        per_row(server),
    );
    let expected = total * if args.postimage { 2 } else { 1 };
    if rows != expected {
        bail!("read {rows} log rows, expected {expected}");
    }
    drop(emulator);
    Ok(())
}
