//! `scylla-cdc-bench idle`: what a CDC reader costs the cluster while there is little or nothing to
//! read, this reader beside scylla-cdc-rust 0.7 (crates.io), both with library defaults.
//!
//! For each cluster size, one embedded cluster (in this process) with 256 vnodes and 2
//! shards per node, a preloaded CDC table `bench.t` (the backlog) and an empty CDC table
//! `bench.idle`; the cluster counts the QUERY and EXECUTE requests it receives. Each reader
//! runs as its own task with its own driver session:
//!
//! 1. idle: each reader alone reads `bench.idle` from the cluster's start; after a warm-up,
//!    requests per second over the measured period;
//! 2. catch-up: each reader alone reads `bench.t` from the cluster's start until every
//!    backlog row was delivered: requests sent and rows delivered;
//! 3. latency: both readers read `bench.idle` at once; rows written one at a time, each
//!    after a random pause, and the delay from the write to each reader's delivery.
//!
//! ```text
//! cargo build --release -p scylla-cdc-bench
//! target/release/scylla-cdc-bench idle --nodes 1,3,20
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use scylla::client::session::Session;
use scylla_cdc_bench::live::{self, Delivery, ReaderKind, ReaderSettings, Running, requests};
use scylla_emulator::{EmbeddedCluster, Preload};

/// Idle cost and delivery delay of this reader and of scylla-cdc 0.7.
#[derive(Debug, Parser)]
struct Args {
    /// Cluster sizes, one run each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,3,20")]
    nodes: Vec<usize>,
    /// Vnodes per node.
    #[arg(long, default_value_t = 256)]
    vnodes: usize,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Seconds a reader runs before its idle requests are counted (at least until 45 s after
    /// the cluster's start, when its first windows are readable).
    #[arg(long, default_value_t = 15)]
    warmup: u64,
    /// Seconds over which idle requests are counted.
    #[arg(long, default_value_t = 40)]
    idle: u64,
    /// Backlog: partitions × rows per partition of `bench.t`.
    #[arg(long, default_value_t = 100)]
    partitions: u64,
    #[arg(long, default_value_t = 20)]
    rows: u64,
    /// Rows written one at a time to measure delivery delays.
    #[arg(long, default_value_t = 3)]
    samples: usize,
    /// Also read the backlog with this reader capped at this many rows per second
    /// (`max_rows_per_second`), and report the rows/s and requests/s it held.
    #[arg(long)]
    cap: Option<u64>,
}

/// When each marker row (by `pk`) was delivered to a reader.
#[derive(Clone, Default)]
struct Seen {
    rows: Arc<Mutex<u64>>,
    at: Arc<Mutex<BTreeMap<i32, Instant>>>,
}

impl Delivery for Seen {
    fn row(&self, pk: Option<i32>, _late: bool) {
        *self.rows.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        if let Some(pk) = pk {
            self.at
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(pk)
                .or_insert_with(Instant::now);
        }
    }
}

impl Seen {
    fn rows(&self) -> u64 {
        *self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn at(&self, pk: i32) -> Option<Instant> {
        self.at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&pk)
            .copied()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Upstream,
    Ours,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Upstream => "scylla-cdc 0.7",
            Which::Ours => "this reader",
        }
    }
}

/// A running reader and what it delivered.
struct Reading {
    running: Running,
    seen: Seen,
}

impl Reading {
    async fn stop(self) {
        self.running.stop().await;
    }
}

/// Starts a reader of `bench.<table>` from `start`, with library defaults otherwise.
async fn start_reader(
    which: Which,
    session: Arc<Session>,
    table: &str,
    start: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Reading> {
    start_capped(which, session, table, start, None).await
}

/// [`start_reader`], this reader with `max_rows_per_second(cap)` when `cap` is given.
async fn start_capped(
    which: Which,
    session: Arc<Session>,
    table: &str,
    start: chrono::DateTime<chrono::Utc>,
    cap: Option<u64>,
) -> anyhow::Result<Reading> {
    let seen = Seen::default();
    let settings = match which {
        Which::Ours => ReaderSettings {
            kind: ReaderKind::Ours { early: None, cap },
            ..ReaderSettings::ours()
        },
        Which::Upstream => ReaderSettings::upstream(),
    };
    let running = live::start_reader(
        &settings,
        session,
        "bench",
        table,
        start,
        Arc::new(seen.clone()),
        which.name(),
    )
    .await?;
    Ok(Reading { running, seen })
}

/// Per reader: idle requests/s, catch-up requests and rows, delivery delays (s).
#[derive(Default, Debug)]
struct Row {
    idle_rps: f64,
    catchup_requests: u64,
    catchup_rows: u64,
    catchup_secs: f64,
    delays: Vec<f64>,
}

async fn run_size(args: &Args, nodes: usize) -> anyhow::Result<BTreeMap<&'static str, Row>> {
    let preload: Preload = format!("bench.t:partitions={},rows={}", args.partitions, args.rows)
        .parse()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let backlog = args.partitions * args.rows;
    let began = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
    let cluster = EmbeddedCluster::builder()
        .nodes(nodes)
        .shards_per_node(args.shards)
        .vnodes_per_node(args.vnodes)
        .preload(preload)
        .start()
        .await?;
    let admin = cluster.session().await?;
    admin
        .query_unpaged(
            "CREATE TABLE bench.idle (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true}",
            (),
        )
        .await?;
    let insert = admin
        .prepare("INSERT INTO bench.idle (pk, ck, v) VALUES (?, 0, 0)")
        .await?;
    let mut out: BTreeMap<&'static str, Row> = BTreeMap::new();
    let both = [Which::Upstream, Which::Ours];

    // 1. Idle, each alone.
    for which in both {
        let reader = start_reader(which, cluster.session().await?, "idle", began).await?;
        // Both read from the generation's start: windows are readable once the 30 s safety
        // interval has passed it; count from then on, after the warm-up.
        let readable = (began + chrono::TimeDelta::seconds(45) - chrono::Utc::now())
            .to_std()
            .unwrap_or_default();
        tokio::time::sleep(readable.max(Duration::from_secs(args.warmup))).await;
        let (r0, t0) = (requests(&cluster), Instant::now());
        tokio::time::sleep(Duration::from_secs(args.idle)).await;
        let rps = (requests(&cluster) - r0) as f64 / t0.elapsed().as_secs_f64();
        reader.stop().await;
        out.entry(which.name()).or_default().idle_rps = rps;
        eprintln!("{nodes} nodes, {}: {rps:.2} requests/s idle", which.name());
    }

    // 2. Catch-up of the backlog (written at the cluster's start, readable by now), alone.
    for which in both {
        let session = cluster.session().await?;
        let r0 = requests(&cluster);
        let t0 = Instant::now();
        let reader = start_reader(which, session, "t", began).await?;
        while reader.seen.rows() < backlog {
            if t0.elapsed() > Duration::from_secs(600) {
                anyhow::bail!("{}: backlog not read in 10 minutes", which.name());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let row = out.entry(which.name()).or_default();
        row.catchup_secs = t0.elapsed().as_secs_f64();
        row.catchup_requests = requests(&cluster) - r0;
        row.catchup_rows = reader.seen.rows();
        reader.stop().await;
        eprintln!(
            "{nodes} nodes, {}: backlog of {backlog} rows read with {} requests in {:.1} s",
            which.name(),
            row.catchup_requests,
            row.catchup_secs
        );
    }

    // 2b. Catch-up under a rate cap (this reader only).
    if let Some(cap) = args.cap {
        let r0 = requests(&cluster);
        let t0 = Instant::now();
        let reader =
            start_capped(Which::Ours, cluster.session().await?, "t", began, Some(cap)).await?;
        while reader.seen.rows() < backlog {
            if t0.elapsed() > Duration::from_secs(600) {
                anyhow::bail!("capped reader: backlog not read in 10 minutes");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let secs = t0.elapsed().as_secs_f64();
        let sent = requests(&cluster) - r0;
        reader.stop().await;
        println!(
            "{nodes} nodes, capped at {cap} rows/s: {backlog} rows in {secs:.1} s = {:.0} rows/s, \
             {sent} requests = {:.1} requests/s",
            backlog as f64 / secs,
            sent as f64 / secs
        );
    }

    // 3. Write-to-delivery delay while idle, both at once.
    let start = chrono::Utc::now();
    let readers = [
        start_reader(Which::Upstream, cluster.session().await?, "idle", start).await?,
        start_reader(Which::Ours, cluster.session().await?, "idle", start).await?,
    ];
    for sample in 0..args.samples {
        // A pause of 0..10 s, so that writes fall anywhere in the readers' polling cycles.
        let pause = Duration::from_millis(
            (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)?
                .subsec_nanos()
                % 10_000) as u64,
        );
        tokio::time::sleep(pause).await;
        let pk = 1_000_000 + sample as i32;
        let written = Instant::now();
        admin.execute_unpaged(&insert, (pk,)).await?;
        loop {
            if readers.iter().all(|r| r.seen.at(pk).is_some()) {
                break;
            }
            if written.elapsed() > Duration::from_secs(300) {
                anyhow::bail!("a marker row was not delivered in 5 minutes");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for (which, reader) in both.iter().zip(&readers) {
            let at = reader.seen.at(pk).expect("seen");
            let delay = at.duration_since(written).as_secs_f64();
            out.entry(which.name()).or_default().delays.push(delay);
            eprintln!(
                "{nodes} nodes, {}: delivered after {delay:.1} s",
                which.name()
            );
        }
    }
    for reader in readers {
        reader.stop().await;
    }
    cluster.shutdown().await;
    Ok(out)
}

fn stats(v: &[f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    format!("{mean:.1} / {max:.1}")
}

#[tokio::main]
pub(crate) async fn main() -> anyhow::Result<()> {
    let args = Args::parse_from(crate::program_args());
    println!(
        "| nodes × vnodes × shards | reader | idle requests/s | catch-up requests | catch-up rows | catch-up s | delivery delay mean / max (s) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &nodes in &args.nodes {
        let rows = run_size(&args, nodes).await?;
        for (name, r) in &rows {
            println!(
                "| {nodes} × {} × {} | {name} | {:.2} | {} | {} | {:.1} | {} |",
                args.vnodes,
                args.shards,
                r.idle_rps,
                r.catchup_requests,
                r.catchup_rows,
                r.catchup_secs,
                stats(&r.delays)
            );
        }
        if let (Some(ours), Some(theirs)) = (rows.get("this reader"), rows.get("scylla-cdc 0.7")) {
            println!(
                "| {nodes} × {} × {} | ratio (0.7 / this) | {:.1}× | {:.1}× | | | |",
                args.vnodes,
                args.shards,
                theirs.idle_rps / ours.idle_rps.max(f64::MIN_POSITIVE),
                theirs.catchup_requests as f64 / ours.catchup_requests.max(1) as f64,
            );
        }
    }
    Ok(())
}
