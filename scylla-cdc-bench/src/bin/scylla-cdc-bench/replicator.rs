//! `scylla-cdc-bench replicator`: how fast the replicator applies a backlog.
//!
//! Starts two `scylla-emulator` processes: the source with a preloaded CDC table
//! (`--preload ks.t:partitions=P,rows=R`: `(pk bigint, ck bigint, v blob, PRIMARY KEY (pk,
//! ck))` with CDC and P×R rows, hence P×R log rows) and an empty destination. Then runs the
//! replicator in this process (its library, exactly what the binary runs) from before the
//! preload until every change is applied, and prints changes/s, the replicator's CPU time per
//! change, its peak RSS, and the CPU time of both emulators.
//!
//! An emulator without `--preload` is loaded through the driver instead (same table, same
//! rows; slower to set up, same backlog).
//!
//! With `--snapshot` the replicator copies the table instead (`scylla-cdc-replicator
//! --snapshot`: a token-range scan of the source with per-cell write times and TTLs, written
//! to the destination), and the bench prints the copy's rows/s and the peak RSS of this
//! process (the replicator; the emulators are other processes).
//!
//! With `--command PROGRAM ARGS...` another replicator program runs instead, as a child
//! process (`{source}`, `{destination}` and `{start}` in its arguments are filled in): the
//! bench creates the destination table, waits until it has every row, and prints the
//! program's changes/s, CPU time and peak RSS. For example scylla-cdc-rust's replicator:
//! `--command .../scylla-cdc-replicator -k bench -t t -s {source} -d {destination}
//! --start-datetime {start} --safety-interval 1 --sleep-interval 0.2`.
//!
//! With `--tls` both sides are replicated over TLS (the emulators' TLS ports, certificates of
//! `--tls-test-ca`), to compare with a run without.
//!
//! ```text
//! cargo build --release -p scylla-emulator -p scylla-cdc-bench
//! target/release/scylla-cdc-bench replicator --partitions 1000 --rows 1000 [--tls] [--snapshot]
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Parser;
use futures::StreamExt;
use scylla::client::session::Session;
use scylla_cdc_bench::{
    Emulator, emulator_binary, mib, own_usage, process_cpu_time, process_peak_rss, random_loopback,
};
use scylla_cdc_replicator::Replicator;
use scylla_cdc_replicator::args::Args as ReplicatorArgs;
use scylla_cdc_replicator::{Shutdown, exit_code};

/// Replication throughput between two emulator processes.
#[derive(Debug, Parser)]
struct Args {
    /// Partitions of the preloaded table.
    #[arg(long, default_value_t = 1000)]
    partitions: u64,
    /// Rows per partition.
    #[arg(long, default_value_t = 1000)]
    rows: u64,
    /// Shards per emulated node.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Writes in flight per stream group.
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// MiB of writes queued or in flight in all (the replicator's `--max-mib-in-flight`).
    #[arg(long, default_value_t = 8)]
    max_mib_in_flight: u64,
    /// Window size of the log reader, in seconds.
    #[arg(long, default_value = "60")]
    window_size: String,
    /// Save checkpoints (in the source) as the replicator would by default.
    #[arg(long)]
    checkpoints: bool,
    /// Replicate without early reads (the replicator's `--no-early-reads`). With them (its
    /// default), the part of the backlog written less than the safety interval (1 s) before
    /// reading starts is read early and confirmed by a second, key-only read.
    #[arg(long)]
    no_early_reads: bool,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
    /// Replicate over TLS on both sides (the emulators' TLS ports, certificates of
    /// `--tls-test-ca`), to measure what TLS costs.
    #[arg(long)]
    tls: bool,
    /// Measure the `--snapshot` copy of the table instead of the replication of its log.
    #[arg(long)]
    snapshot: bool,
    /// Ranges the `--snapshot` copy scans at once.
    #[arg(long, default_value_t = 8)]
    snapshot_parallelism: usize,
    /// Address of the source emulator (default: a random loopback address); the destination
    /// is at the same /24's `.101`.
    #[arg(long)]
    address: Option<String>,
    /// Run this replicator program instead of the in-process one (for a side-by-side with
    /// another replicator, or ours as a separate process): the program and its arguments, in
    /// which `{source}` and `{destination}` stand for the emulators' `host:port` and `{start}`
    /// for a start time before the backlog (RFC 3339). The bench creates the destination
    /// table, waits until it has every row (`SELECT COUNT(*)` every half second), and prints
    /// the program's peak RSS (`VmHWM`) and CPU time; then kills it.
    #[arg(long, num_args = 1.., allow_hyphen_values = true, value_name = "PROGRAM ARGS")]
    command: Option<Vec<String>>,
}

/// The TLS port of the emulators of `--tls` (each has its own address).
const TLS_PORT: u16 = 9142;

/// Arguments of a one-node emulator on `address` with `shards` shards, plus `extra`.
fn emulator_args(address: &str, shards: u32, extra: &[String]) -> Vec<String> {
    let mut v: Vec<String> = [
        "--nodes",
        "1",
        "--shards",
        &shards.to_string(),
        "--port",
        "0",
        "--address",
        address,
        "--generation-delay",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend_from_slice(extra);
    v
}

/// Creates what `--preload bench.t:partitions=P,rows=R` creates, through the driver.
async fn load_through_driver(source: &Emulator, partitions: u64, rows: u64) -> anyhow::Result<()> {
    let session: Arc<Session> = source.session().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
            &[],
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE bench.t (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true}",
            &[],
        )
        .await?;
    let insert = session
        .prepare("INSERT INTO bench.t (pk, ck, v) VALUES (?, ?, ?)")
        .await?;
    let value = vec![0xABu8; 16];
    let mut writes = futures::stream::iter(0..partitions * rows)
        .map(|i| {
            let (session, insert, value) = (session.clone(), insert.clone(), value.clone());
            async move {
                let (pk, ck) = ((i / rows) as i64, (i % rows) as i64);
                session.execute_unpaged(&insert, (pk, ck, value)).await
            }
        })
        .buffer_unordered(256);
    while let Some(result) = writes.next().await {
        result?;
    }
    Ok(())
}

/// Loads the source, replicates its backlog, prints the measurements.
#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    let binary = emulator_binary(args.emulator.clone())?;
    let total = args.partitions * args.rows;
    let source_addr = args.address.clone().unwrap_or_else(random_loopback);
    let tls_dir = std::env::temp_dir().join(format!("replicator-bench-tls-{}", std::process::id()));
    // Each emulator makes its own CA, in its own directory.
    let tls_args = |side: &str| -> Vec<String> {
        if !args.tls {
            return Vec::new();
        }
        vec![
            "--tls-test-ca".into(),
            tls_dir.join(side).display().to_string(),
            "--tls-port".into(),
            TLS_PORT.to_string(),
            "--shard-aware-tls-port".into(),
            (TLS_PORT + 10000).to_string(),
        ]
    };
    let dest_addr = source_addr
        .rsplit_once('.')
        .map(|(prefix, _)| format!("{prefix}.101"))
        .context("loopback address")?;

    let preload_start = Instant::now();
    let preloaded = Emulator::start(
        &binary,
        &emulator_args(
            &source_addr,
            args.shards,
            &[
                &[
                    "--preload".into(),
                    format!("bench.t:partitions={},rows={}", args.partitions, args.rows),
                ],
                &tls_args("source")[..],
            ]
            .concat(),
        ),
    );
    let source = match preloaded {
        Ok(source) => source,
        Err(e) => {
            println!("the emulator cannot preload ({e:#}); loading through the driver");
            let source = Emulator::start(
                &binary,
                &emulator_args(&source_addr, args.shards, &tls_args("source")),
            )?;
            load_through_driver(&source, args.partitions, args.rows).await?;
            source
        }
    };
    println!(
        "source emulator at {} has {total} changes in its log (loaded in {:.1} s)",
        source.contact_point,
        preload_start.elapsed().as_secs_f64()
    );
    let destination = Emulator::start(
        &binary,
        &emulator_args(&dest_addr, args.shards, &tls_args("destination")),
    )?;
    let dest_session = destination.session().await?;
    dest_session
        .query_unpaged(
            "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
            &[],
        )
        .await?;

    if let Some(command) = &args.command {
        return run_command(command, &source, &destination, &dest_session, total, &args).await;
    }
    let endpoint = |e: &Emulator| {
        if args.tls {
            std::net::SocketAddr::new(e.contact_point.ip(), TLS_PORT).to_string()
        } else {
            e.contact_point.to_string()
        }
    };
    let mut replicator_args: Vec<String> = [
        "replicator-bench",
        "--source",
        &endpoint(&source),
        "--destination",
        &endpoint(&destination),
        "--keyspace",
        "bench",
        "--table",
        "t",
        "--create-destination-table",
        "--start=-1d",
        "--window-size",
        &args.window_size,
        "--safety-interval",
        "1",
        "--sleep-interval",
        "0.2",
        "--write-consistency",
        "ONE",
        "--max-in-flight",
        &args.max_in_flight.to_string(),
        "--max-mib-in-flight",
        &args.max_mib_in_flight.to_string(),
        "--progress-interval",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if args.snapshot {
        // The snapshot time is the launch: the preloaded log is older and not replayed.
        replicator_args.retain(|a| a != "--start=-1d");
        replicator_args.extend([
            "--snapshot".into(),
            "--snapshot-parallelism".into(),
            args.snapshot_parallelism.to_string(),
        ]);
    } else if !args.checkpoints {
        replicator_args.push("--no-checkpoints".into());
    }
    if args.no_early_reads {
        replicator_args.push("--no-early-reads".into());
    }
    if args.tls {
        let ca = |side: &str| tls_dir.join(side).join("ca.pem").display().to_string();
        replicator_args.extend(["--source-tls-ca-file".into(), ca("source")]);
        replicator_args.extend(["--destination-tls-ca-file".into(), ca("destination")]);
    }
    let config = ReplicatorArgs::try_parse_from(replicator_args)?
        .into_config(chrono::Utc::now())
        .map_err(|e| anyhow::anyhow!("{e}"))?;

    let (cpu0, _) = own_usage();
    let source_cpu0 = process_cpu_time(source.pid())?;
    let dest_cpu0 = process_cpu_time(destination.pid())?;
    let started = Instant::now();
    let replicator = Replicator::start(&config)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.snapshot {
        let copied = replicator.snapshots().first().copied().unwrap_or_default();
        let (cpu1, peak_rss) = own_usage();
        let cpu = cpu1.saturating_sub(cpu0);
        let secs = copied.elapsed.as_secs_f64().max(1e-9);
        let (trigger, shutdown) = Shutdown::new();
        trigger.trigger();
        trigger.trigger();
        if let Err(e) = replicator.run(shutdown).await
            && e.exit_code() != exit_code::OK
        {
            eprintln!("replicator: {e}");
        }
        println!(
            "snapshot copied {} rows in {secs:.2} s: {:.0} rows/s ({} ranges)",
            copied.rows_copied,
            copied.rows_copied as f64 / secs,
            copied.ranges_copied
        );
        println!(
            "replicator CPU {:.2} s; peak RSS {} (this process: the replicator)",
            cpu.as_secs_f64(),
            mib(peak_rss)
        );
        let (rows,): (i64,) = dest_session
            .query_unpaged("SELECT COUNT(*) FROM bench.t", &[])
            .await?
            .into_rows_result()?
            .single_row()?;
        println!("destination rows: {rows}");
        if u64::try_from(rows).ok() != Some(total) || copied.rows_copied != total {
            bail!(
                "copied {} rows, the destination has {rows}, not {total}",
                copied.rows_copied
            );
        }
        return Ok(());
    }
    let stats = replicator.stats();
    let (trigger, shutdown) = Shutdown::new();
    let running = tokio::spawn(replicator.run(shutdown));
    let deadline = started + Duration::from_secs(args.timeout);
    while stats.applied() < total {
        if running.is_finished() {
            bail!("the replicator stopped after {} changes", stats.applied());
        }
        if Instant::now() > deadline {
            bail!(
                "timed out with {} of {total} changes applied",
                stats.applied()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = started.elapsed();
    let (cpu1, peak_rss) = own_usage();
    let source_cpu = process_cpu_time(source.pid())?.saturating_sub(source_cpu0);
    let dest_cpu = process_cpu_time(destination.pid())?.saturating_sub(dest_cpu0);
    trigger.trigger();
    trigger.trigger();
    match running.await? {
        Ok(()) => {}
        Err(e) if e.exit_code() == exit_code::OK => {}
        Err(e) => eprintln!("replicator: {e}"),
    }

    let cpu = cpu1.saturating_sub(cpu0);
    let n = total.max(1) as f64;
    println!(
        "replicated {total} changes in {:.2} s: {:.0} changes/s",
        wall.as_secs_f64(),
        n / wall.as_secs_f64()
    );
    println!(
        "replicator CPU {:.2} s = {:.2} µs/change; peak RSS {}",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n,
        mib(peak_rss)
    );
    println!(
        "source emulator CPU {:.2} s = {:.2} µs/change; destination emulator CPU {:.2} s = {:.2} µs/change",
        source_cpu.as_secs_f64(),
        source_cpu.as_secs_f64() * 1e6 / n,
        dest_cpu.as_secs_f64(),
        dest_cpu.as_secs_f64() * 1e6 / n
    );
    println!("retries: {}", stats.retries());
    let (rows,): (i64,) = dest_session
        .query_unpaged("SELECT COUNT(*) FROM bench.t", &[])
        .await?
        .into_rows_result()?
        .single_row()?;
    println!("destination rows: {rows}");
    if args.tls {
        let _ = std::fs::remove_dir_all(&tls_dir);
    }
    if u64::try_from(rows).ok() != Some(total) {
        bail!("the destination has {rows} rows, not {total}");
    }
    Ok(())
}

/// `--command`: runs an external replicator until the destination has `total` rows, then
/// prints its rows/s, peak RSS and CPU time (see [`Args::command`]).
async fn run_command(
    command: &[String],
    source: &Emulator,
    destination: &Emulator,
    dest_session: &Session,
    total: u64,
    args: &Args,
) -> anyhow::Result<()> {
    dest_session
        .query_unpaged(
            "CREATE TABLE bench.t (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck))",
            &[],
        )
        .await?;
    let start = (chrono::Utc::now() - chrono::TimeDelta::days(1)).to_rfc3339();
    let fill = |a: &String| {
        a.replace("{source}", &source.contact_point.to_string())
            .replace("{destination}", &destination.contact_point.to_string())
            .replace("{start}", &start)
    };
    let (program, rest) = command.split_first().context("--command is empty")?;
    let mut child = std::process::Command::new(fill(program))
        .args(rest.iter().map(fill))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let pid = child.id();
    let source_cpu0 = process_cpu_time(source.pid())?;
    let dest_cpu0 = process_cpu_time(destination.pid())?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.timeout);
    let count = || async {
        let (rows,): (i64,) = dest_session
            .query_unpaged("SELECT COUNT(*) FROM bench.t", &[])
            .await?
            .into_rows_result()?
            .single_row()?;
        anyhow::Ok(u64::try_from(rows).unwrap_or(0))
    };
    let outcome = loop {
        if let Some(status) = child.try_wait()? {
            break Err(anyhow::anyhow!("{program} exited ({status})"));
        }
        let rows = count().await?;
        if rows >= total {
            break Ok(());
        }
        if Instant::now() > deadline {
            break Err(anyhow::anyhow!("timed out with {rows} of {total} rows"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let wall = started.elapsed();
    let usage = (process_cpu_time(pid), process_peak_rss(pid));
    let source_cpu = process_cpu_time(source.pid())?.saturating_sub(source_cpu0);
    let dest_cpu = process_cpu_time(destination.pid())?.saturating_sub(dest_cpu0);
    let _ = child.kill();
    let _ = child.wait();
    outcome?;
    let (cpu, peak_rss) = (usage.0?, usage.1?);
    let n = total.max(1) as f64;
    println!(
        "{program}: the destination has {total} rows after {:.2} s: {:.0} changes/s (polled \
         every 0.5 s)",
        wall.as_secs_f64(),
        n / wall.as_secs_f64()
    );
    println!(
        "{program}: CPU {:.2} s = {:.2} µs/change; peak RSS {}",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n,
        mib(peak_rss)
    );
    println!(
        "source emulator CPU {:.2} s; destination emulator CPU {:.2} s",
        source_cpu.as_secs_f64(),
        dest_cpu.as_secs_f64()
    );
    Ok(())
}
