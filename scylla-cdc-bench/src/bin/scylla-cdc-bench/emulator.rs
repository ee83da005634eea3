//! `scylla-cdc-bench emulator`: how fast the official driver can use a `scylla-emulator` process.
//!
//! Starts `scylla-emulator` as a separate process, then with the driver at a fixed
//! concurrency measures prepared single-row INSERTs, prepared single-partition SELECTs and a
//! full paged scan, and prints ops/s (or rows/s) with the CPU time each process used.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench emulator --rows 500000
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla_cdc_bench::{Emulator, emulator_binary, own_usage, process_cpu_time, random_loopback};

/// Driver → embedded cluster throughput.
#[derive(Debug, Parser)]
struct Args {
    /// Rows to insert (and then scan).
    #[arg(long, default_value_t = 500_000)]
    rows: u64,
    /// Rows per partition.
    #[arg(long, default_value_t = 100)]
    rows_per_partition: u64,
    /// Single-partition SELECTs to run.
    #[arg(long, default_value_t = 200_000)]
    selects: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Bytes of the blob column.
    #[arg(long, default_value_t = 16)]
    value_size: usize,
    /// Page size of the full scan.
    #[arg(long, default_value_t = 5000)]
    page_size: i32,
    /// Nodes of the emulated cluster.
    #[arg(long, default_value_t = 1)]
    nodes: u16,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
}

/// CPU time of both processes over one phase.
struct Phase {
    start: Instant,
    client_cpu: Duration,
    server_cpu: Duration,
    server_pid: u32,
}

impl Phase {
    fn begin(server_pid: u32) -> anyhow::Result<Phase> {
        Ok(Phase {
            start: Instant::now(),
            client_cpu: own_usage().0,
            server_cpu: process_cpu_time(server_pid)?,
            server_pid,
        })
    }

    fn end(self, what: &str, count: u64, unit: &str) -> anyhow::Result<()> {
        let wall = self.start.elapsed();
        let client = own_usage().0.saturating_sub(self.client_cpu);
        let server = process_cpu_time(self.server_pid)?.saturating_sub(self.server_cpu);
        println!(
            "{what:<34} {:>10.0} {unit}/s   ({count} in {:.2} s; CPU: driver {:.2} s = {:.2} µs/op, emulator {:.2} s = {:.2} µs/op)",
            count as f64 / wall.as_secs_f64(),
            wall.as_secs_f64(),
            client.as_secs_f64(),
            client.as_secs_f64() * 1e6 / count.max(1) as f64,
            server.as_secs_f64(),
            server.as_secs_f64() * 1e6 / count.max(1) as f64,
        );
        Ok(())
    }
}

/// Runs `total` executions of `op(i)` with `concurrency` in flight.
async fn run_concurrently<F, Fut>(total: u64, concurrency: usize, op: F) -> anyhow::Result<()>
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(AtomicU64::new(0));
    let op = Arc::new(op);
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let next = next.clone();
        let op = op.clone();
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return Ok::<(), anyhow::Error>(());
                }
                op(i).await?;
            }
        }));
    }
    for w in workers {
        w.await??;
    }
    Ok(())
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    let binary = emulator_binary(args.emulator.clone())?;
    let emulator = Emulator::start(
        &binary,
        &[
            "--nodes".into(),
            args.nodes.to_string(),
            "--shards".into(),
            args.shards.to_string(),
            "--port".into(),
            "0".into(),
            "--address".into(),
            random_loopback(),
        ],
    )?;
    println!(
        "emulator {} at {} ({} nodes x {} shards); driver concurrency {}",
        binary.display(),
        emulator.contact_point,
        args.nodes,
        args.shards,
        args.concurrency
    );
    let session: Arc<Session> = emulator.session().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
            &[],
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE bench.kv (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck))",
            &[],
        )
        .await?;

    let insert: PreparedStatement = session
        .prepare("INSERT INTO bench.kv (pk, ck, v) VALUES (?, ?, ?)")
        .await?;
    let value = vec![0xABu8; args.value_size];
    let per_partition = args.rows_per_partition.max(1);
    let phase = Phase::begin(emulator.pid())?;
    {
        let session = session.clone();
        let insert = insert.clone();
        run_concurrently(args.rows, args.concurrency, move |i| {
            let session = session.clone();
            let insert = insert.clone();
            let value = value.clone();
            async move {
                let pk = (i / per_partition) as i64;
                let ck = (i % per_partition) as i64;
                session.execute_unpaged(&insert, (pk, ck, value)).await?;
                Ok(())
            }
        })
        .await?;
    }
    phase.end("prepared single-row INSERT", args.rows, "ops")?;

    let select: PreparedStatement = session
        .prepare("SELECT pk, ck, v FROM bench.kv WHERE pk = ? AND ck = ?")
        .await?;
    let partitions = args.rows.div_ceil(per_partition).max(1);
    let phase = Phase::begin(emulator.pid())?;
    {
        let session = session.clone();
        run_concurrently(args.selects, args.concurrency, move |i| {
            let session = session.clone();
            let select = select.clone();
            async move {
                // A spread of keys over the loaded partitions and rows.
                let pk = (i.wrapping_mul(2_654_435_761) % partitions) as i64;
                let ck = (i % per_partition) as i64;
                let result = session.execute_unpaged(&select, (pk, ck)).await?;
                let rows = result.into_rows_result()?;
                anyhow::ensure!(rows.rows_num() <= 1, "more than one row for one key");
                Ok(())
            }
        })
        .await?;
    }
    phase.end("prepared single-partition SELECT", args.selects, "ops")?;

    let mut scan: PreparedStatement = session.prepare("SELECT pk, ck, v FROM bench.kv").await?;
    scan.set_page_size(args.page_size);
    let phase = Phase::begin(emulator.pid())?;
    let mut stream = session
        .execute_iter(scan, ())
        .await?
        .rows_stream::<(i64, i64, Vec<u8>)>()?;
    let mut scanned = 0u64;
    while let Some(row) = stream.next().await {
        row?;
        scanned += 1;
    }
    anyhow::ensure!(
        scanned == args.rows,
        "the scan returned {scanned} rows, {} were inserted",
        args.rows
    );
    phase.end("full scan (paged)", scanned, "rows")?;
    Ok(())
}
