//! `scylla-cdc-bench large-rows`: the printer's (or the replicator's) peak memory when it reads
//! a CDC log of large rows.
//!
//! Starts `scylla-emulator` as a separate process, writes `--rows` rows of `--row-bytes`
//! bytes into one partition of a CDC table (one stream: every log row in one window), then
//! runs the `scylla-cdc-printer` binary over that log (JSON output, read and counted here,
//! not kept) and samples its peak resident set size (`VmHWM` of `/proc/<pid>/status`)
//! until it exits. With ScyllaDB's page byte limit (`query_page_size_in_bytes`, 1 MiB) a
//! page holds about 1 MiB of rows whatever the driver's page size (5,000 rows), so the
//! printer's memory stays flat; a server that pages by row count only answers with one page
//! of every row.
//!
//! With `--replicator` the `scylla-cdc-replicator` binary replicates that log into a second
//! emulator (`--end` reached, then it exits) instead, with `--replicator-arg`s of its own
//! (e.g. `--max-mib-in-flight`), and the destination's row count is checked.
//!
//! ```text
//! cargo build -p scylla-emulator -p scylla-cdc-printer -p scylla-cdc-replicator -p scylla-cdc-bench
//! target/debug/scylla-cdc-bench large-rows --rows 300 --row-bytes 1048576 --address 127.0.60.1
//! target/debug/scylla-cdc-bench large-rows --rows 300 --replicator --replicator-arg=--max-mib-in-flight=8
//! ```
//!
//! Measured (debug builds, 300 rows of 1 MiB): the printer peaks at 26.6 MiB; with the
//! emulator's byte limit lifted (`--emulator-arg=--query-page-size-in-bytes=18446744073709551615`,
//! paging by row count only, as before the limit existed) at 310.5 MiB (the emulator itself: 390.6 MiB against 1,025 MiB).

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{SecondsFormat, Utc};
use clap::Parser;
use scylla_cdc_bench::{Emulator, emulator_binary, mib, process_peak_rss, random_loopback};

/// The printer's peak memory over a log of large rows.
#[derive(Debug, Parser)]
struct Args {
    /// Rows written (and log rows printed).
    #[arg(long, default_value_t = 300)]
    rows: u32,
    /// Bytes of each row's blob.
    #[arg(long, default_value_t = 1 << 20)]
    row_bytes: usize,
    /// Address of the emulator's node (default: a random loopback address).
    #[arg(long)]
    address: Option<String>,
    /// The `scylla-emulator` binary (default: next to this one).
    #[arg(long)]
    emulator: Option<PathBuf>,
    /// The `scylla-cdc-printer` binary (default: next to this one).
    #[arg(long)]
    printer: Option<PathBuf>,
    /// Measure the replicator (into a second emulator) instead of the printer.
    #[arg(long)]
    replicator: bool,
    /// A further argument of the replicator (repeatable), e.g. `--replicator-arg=--max-mib-in-flight=8`.
    #[arg(long, allow_hyphen_values = true)]
    replicator_arg: Vec<String>,
    /// A further argument of the emulator (repeatable), e.g.
    /// `--emulator-arg=--query-page-size-in-bytes=18446744073709551615` to see the printer
    /// without the page byte limit.
    #[arg(long, allow_hyphen_values = true)]
    emulator_arg: Vec<String>,
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    let emulator_bin = emulator_binary(args.emulator.clone())?;
    let next_to_this = |name: &str| -> anyhow::Result<PathBuf> {
        Ok(std::env::current_exe()?
            .parent()
            .context("the benchmark binary has no directory")?
            .join(name))
    };
    let printer_bin = match &args.printer {
        Some(p) => p.clone(),
        None => next_to_this(if args.replicator {
            "scylla-cdc-replicator"
        } else {
            "scylla-cdc-printer"
        })?,
    };
    let mut emulator_args = vec![
        "--port".to_string(),
        "0".into(),
        "--address".into(),
        args.address.clone().unwrap_or_else(random_loopback),
    ];
    emulator_args.extend(args.emulator_arg.iter().cloned());
    let emulator = Emulator::start(&emulator_bin, &emulator_args)?;
    let session = emulator.session().await?;
    session
        .query_unpaged(
            "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1} AND tablets = {'enabled': false}",
            (),
        )
        .await?;
    session
        .query_unpaged(
            "CREATE TABLE bench.t (pk int, ck int, v blob, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true}",
            (),
        )
        .await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let insert = session
        .prepare("INSERT INTO bench.t (pk, ck, v) VALUES (0, ?, ?)")
        .await?;
    let blob = vec![0x5au8; args.row_bytes];
    let writing = Instant::now();
    for ck in 0..args.rows {
        session
            .execute_unpaged(&insert, (ck as i32, blob.as_slice()))
            .await?;
    }
    println!(
        "wrote {} rows of {} in {:.1} s",
        args.rows,
        mib(args.row_bytes as u64),
        writing.elapsed().as_secs_f64()
    );
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    let time = |t: chrono::DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Micros, true);
    let common = [
        "--keyspace".to_string(),
        "bench".into(),
        "--table".into(),
        "t".into(),
        "--start".into(),
        time(start),
        "--end".into(),
        time(end),
        "--window-size".into(),
        "3600".into(),
        "--safety-interval".into(),
        "0.1".into(),
        "--sleep-interval".into(),
        "0.1".into(),
    ];
    let mut program_args: Vec<String> = common.to_vec();
    let mut destination = None;
    if args.replicator {
        let dest = Emulator::start(
            &emulator_bin,
            &[
                "--port".to_string(),
                "0".into(),
                "--address".into(),
                random_loopback(),
            ],
        )?;
        dest.session()
            .await?
            .query_unpaged(
                "CREATE KEYSPACE bench WITH replication = {'class': 'SimpleStrategy', \
                 'replication_factor': 1}",
                (),
            )
            .await?;
        program_args.extend([
            "--source".to_string(),
            emulator.contact_point.to_string(),
            "--destination".into(),
            dest.contact_point.to_string(),
            "--create-destination-table".into(),
            "--no-checkpoints".into(),
        ]);
        program_args.extend(args.replicator_arg.iter().cloned());
        destination = Some(dest);
    } else {
        program_args.extend([
            "--hosts".to_string(),
            emulator.contact_point.to_string(),
            "--format".into(),
            "json".into(),
        ]);
    }
    let mut printer = Command::new(&printer_bin)
        .args(&program_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {}", printer_bin.display()))?;
    let pid = printer.id();
    let mut stdout = printer.stdout.take().context("no stdout")?;
    // Count the printed lines without keeping them.
    let counter = std::thread::spawn(move || -> std::io::Result<u64> {
        let mut buf = vec![0u8; 1 << 16];
        let mut lines = 0u64;
        loop {
            let n = stdout.read(&mut buf)?;
            if n == 0 {
                return Ok(lines);
            }
            lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
        }
    });
    let reading = Instant::now();
    let mut peak = 0u64;
    let status = loop {
        // VmHWM only grows: the last value read before the exit is the peak, give or take
        // the last 10 ms.
        if let Ok(hwm) = process_peak_rss(pid) {
            peak = peak.max(hwm);
        }
        if let Some(status) = printer.try_wait()? {
            break status;
        }
        if reading.elapsed() > Duration::from_secs(600) {
            let _ = printer.kill();
            let _ = printer.wait();
            bail!("the printer did not finish in 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let lines = counter
        .join()
        .map_err(|_| anyhow::anyhow!("the line counter panicked"))??;
    if let Some(dest) = &destination {
        let rows = dest
            .session()
            .await?
            .query_unpaged("SELECT count(*) FROM bench.t", ())
            .await?
            .into_rows_result()?
            .single_row::<(i64,)>()?
            .0;
        println!(
            "replicator: {rows} rows replicated in {:.1} s, exit {status}; peak RSS (VmHWM) {}",
            reading.elapsed().as_secs_f64(),
            mib(peak)
        );
        if !status.success() || rows != i64::from(args.rows) {
            bail!(
                "the replicator replicated {rows} of {} rows (exit {status})",
                args.rows
            );
        }
        return Ok(());
    }
    println!(
        "printer: {lines} rows printed in {:.1} s, exit {status}; peak RSS (VmHWM) {}",
        reading.elapsed().as_secs_f64(),
        mib(peak)
    );
    println!(
        "emulator peak RSS (VmHWM) {}",
        mib(process_peak_rss(emulator.pid()).unwrap_or(0))
    );
    if !status.success() || lines != u64::from(args.rows) {
        bail!(
            "the printer printed {lines} of {} rows (exit {status})",
            args.rows
        );
    }
    Ok(())
}
