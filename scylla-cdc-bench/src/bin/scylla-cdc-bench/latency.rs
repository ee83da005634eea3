//! `scylla-cdc-bench latency`: how soon a change reaches its consumer, and at what price, for this
//! workspace's reader with and without early reads and for scylla-cdc-rust 0.7 (crates.io),
//! side by side on one in-process embedded cluster.
//!
//! One cluster (3 nodes × 256 vnodes × 2 shards by default) holds a preloaded backlog
//! (`bench.backlog`) and an empty CDC table `lat.t (pk int PRIMARY KEY, v int)`. Four
//! readers of `lat.t` run at once, each with its own driver session:
//!
//! 1. `ours, early reads`: [`scylla_cdc::EarlyReads`] defaults (100 ms lag, 600 ms poll);
//! 2. `ours, no early reads`: the library's defaults (30 s safety, 10 s sleep interval);
//! 3. `scylla-cdc 0.7`: its defaults (the same intervals);
//! 4. `scylla-cdc 0.7, 100 ms safety`: what a user who wants fresh changes tries first with
//!    0.7 (its sleep interval stays the default 10 s unless `--fast-sleep-ms` says
//!    otherwise).
//!
//! Phases, in this order:
//!
//! - **catch-up CPU**: before the readers start, each of ours (with and without early reads)
//!   and 0.7 (defaults) reads the backlog from its start to its end in a child process (this
//!   binary re-executed with a hidden `catch-up` subcommand), `--catch-up-reps` times, taking
//!   turns; the child's CPU time (`getrusage`, all its threads) from building the reader to
//!   its end, per row; the median per reader. Each run's row count and checksum are checked.
//! - **idle**: after a warm-up (every reader past its first safety interval and, with early
//!   reads, its first confirmation), the requests each session sent per second while nothing
//!   is written. The cluster counts requests per node and shard, not per client, so each
//!   session counts its own ([`scylla_cdc_bench::live::counted_session`]: the driver's
//!   load-balancing policy is told of every attempt); the cluster's total over the same
//!   period is printed beside their sum as a check.
//! - **latency at idle**: single writes, one every `--idle-every-ms`; the delay from each
//!   write's acknowledgement (taken right after the INSERT returns) to its first delivery at
//!   each reader: p50, p99, max.
//! - **latency under load**: writes at each of `--rates` per second for `--rate-s` seconds
//!   (at most `--in-flight` at once); the same percentiles, and the rate achieved.
//! - **late rows**: `--late-rows` writes for each of `--late-by-ms`, each `USING TIMESTAMP`
//!   that far in the past; how many each reader delivered, how many twice and (ours) how
//!   many flagged late.
//! - **trade-off**: readers with early reads at each of `--trade-off-polls-ms` run beside
//!   the four through the idle and idle-latency phases: their idle requests/s and delays.
//!
//! After each phase's writes the program waits until every reader is done with them: it
//! delivered them all, or (ours) its low watermark passed the phase's end, or (0.7, which
//! has no watermark) its safety interval, sleep interval and `--margin-s` have passed since;
//! at most `--max-wait-s`. Delays and counts are taken at the end of the run, so a row
//! delivered after its phase still counts, with its true delay.
//!
//! ```text
//! cargo run --release -p scylla-cdc-bench -- latency
//! cargo run --release -p scylla-cdc-bench -- latency --quick
//! ```
//!
//! `--quick` is a smoke run of under a minute: 1 node × 16 vnodes × 2 shards, a 3 s safety
//! interval and 1 s sleep interval for every reader that otherwise runs with the libraries'
//! defaults, late rows 0.3 s to 2 s in the past, phases of a few seconds. Flags given
//! explicitly still apply.

use std::net::SocketAddr;
use std::ops::Range;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use chrono::{DateTime, TimeDelta, Utc};
use clap::{Parser, Subcommand, ValueEnum};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla_cdc::EarlyReads;
use scylla_cdc_bench::latency::{
    Acks, Delays, Deliveries, LateCount, ReaderLine, main_table, markdown,
};
use scylla_cdc_bench::live::{
    ReaderKind, ReaderSettings, RequestCounter, Running, counted_session, requests, start_reader,
};
use scylla_cdc_bench::tally::{ResultFields, TallyFactory, Totals, UpstreamTallyFactory};
use scylla_cdc_bench::{Backlog, BacklogShape, backlog_checksum, median, own_rusage};
use tokio::sync::Semaphore;

/// Delivery delays, late rows, idle requests and catch-up CPU of this reader with and
/// without early reads and of scylla-cdc 0.7, four readers of one table at once.
#[derive(Debug, Parser)]
#[command(args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Hidden>,
    /// A smoke run of under a minute (see the program's docs); explicit flags still apply.
    #[arg(long)]
    quick: bool,
    /// Nodes of the cluster [default: 3; --quick: 1].
    #[arg(long)]
    nodes: Option<usize>,
    /// Vnodes per node [default: 256; --quick: 16].
    #[arg(long)]
    vnodes: Option<usize>,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    shards: u32,
    /// Replication factor of the keyspace `lat` (reads go to a stream's first replica, so
    /// it changes what writes cost the cluster, not what the readers send).
    #[arg(long, default_value_t = 1)]
    replication_factor: usize,
    /// Tokio worker threads of this process (the cluster, the readers, the writer): idle
    /// workers to take waiting connections over keep one busy thread from delaying the rest.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Safety interval, ms, of every reader that otherwise has the libraries' default
    /// (30 s), the catch-up children's included [--quick: 3000].
    #[arg(long)]
    safety_ms: Option<u64>,
    /// Sleep interval, ms, of the same readers (default: the libraries', 10 s) [--quick:
    /// 1000].
    #[arg(long)]
    sleep_ms: Option<u64>,
    /// Safety interval of the fourth reader (scylla-cdc 0.7), ms.
    #[arg(long, default_value_t = 100)]
    fast_safety_ms: u64,
    /// Sleep interval of the fourth reader, ms [default: 0.7's, 10 s; --quick: --sleep-ms].
    #[arg(long)]
    fast_sleep_ms: Option<u64>,
    /// Early reads' lag, ms [default: `EarlyReads`' 100].
    #[arg(long)]
    lag_ms: Option<u64>,
    /// Early reads' poll interval of the first reader, ms [default: `EarlyReads`' 600].
    #[arg(long)]
    poll_ms: Option<u64>,
    /// Seconds from the readers' start before idle requests are counted [default: safety
    /// interval + sleep interval + 5 s].
    #[arg(long)]
    warmup_s: Option<f64>,
    /// Seconds over which idle requests are counted [default: 60; --quick: 3].
    #[arg(long)]
    idle_s: Option<f64>,
    /// Milliseconds between the single writes of the idle-latency phase [default: 500;
    /// --quick: 200].
    #[arg(long)]
    idle_every_ms: Option<u64>,
    /// Seconds of single writes [default: 30; --quick: 2].
    #[arg(long)]
    idle_writes_s: Option<f64>,
    /// Write rates, writes per second, one phase each [default: 1000,20000; --quick: 200].
    #[arg(long, value_delimiter = ',')]
    rates: Option<Vec<u64>>,
    /// Seconds of each write rate [default: 20; --quick: 2].
    #[arg(long)]
    rate_s: Option<f64>,
    /// The most writes in flight at once.
    #[arg(long, default_value_t = 256)]
    in_flight: usize,
    /// How far in the past the late rows' timestamps are, ms, one class each [default:
    /// 1000,5000,20000; --quick: 300,1000,2000].
    #[arg(long, value_delimiter = ',')]
    late_by_ms: Option<Vec<u64>>,
    /// Late rows of each class [default: 20; --quick: 5].
    #[arg(long)]
    late_rows: Option<usize>,
    /// Milliseconds between two late rows [default: 100; --quick: 30].
    #[arg(long)]
    late_every_ms: Option<u64>,
    /// Partitions of the catch-up backlog [default: 1000; --quick: 50].
    #[arg(long)]
    backlog_partitions: Option<u64>,
    /// Rows per partition of the catch-up backlog [default: 1000; --quick: 100].
    #[arg(long)]
    backlog_rows: Option<u64>,
    /// Catch-up runs of each reader [default: 5; --quick: 1].
    #[arg(long)]
    catch_up_reps: Option<usize>,
    /// Leaves scylla-cdc 0.7 out of the catch-up runs.
    #[arg(long)]
    no_catch_up_upstream: bool,
    /// Poll intervals of the trade-off readers, ms [default: 200,600,1000,2000; --quick:
    /// 200,1000].
    #[arg(long, value_delimiter = ',')]
    trade_off_polls_ms: Option<Vec<u64>>,
    /// The longest wait for the readers after a phase's writes, seconds [default: 120;
    /// --quick: 30].
    #[arg(long)]
    max_wait_s: Option<f64>,
    /// What scylla-cdc 0.7 is given beyond its safety and sleep intervals to deliver a
    /// phase's writes before it counts as done with them, seconds [default: 15; --quick: 2].
    #[arg(long)]
    margin_s: Option<f64>,
}

#[derive(Debug, Subcommand)]
enum Hidden {
    /// One catch-up run (started by the parent).
    #[command(hide = true)]
    CatchUp(CatchUpArgs),
}

/// The settings of the run, `--quick` and the defaults applied.
#[derive(Debug, Clone)]
struct Plan {
    nodes: usize,
    vnodes: usize,
    shards: u32,
    replication_factor: usize,
    safety: Option<Duration>,
    sleep: Option<Duration>,
    fast_safety: Duration,
    fast_sleep: Option<Duration>,
    early: EarlyReads,
    warmup: Duration,
    idle: Duration,
    idle_every: Duration,
    idle_writes: Duration,
    rates: Vec<u64>,
    rate_for: Duration,
    in_flight: usize,
    late_by: Vec<Duration>,
    late_rows: usize,
    late_every: Duration,
    backlog_partitions: u64,
    backlog_rows: u64,
    catch_up_reps: usize,
    catch_up_upstream: bool,
    trade_off_polls: Vec<Duration>,
    max_wait: Duration,
    margin: Duration,
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

fn secs(s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).with_context(|| format!("{s} is not a number of seconds"))
}

impl Plan {
    fn of(a: &Args) -> anyhow::Result<Plan> {
        let q = a.quick;
        let pick = |given: Option<u64>, full: u64, quick: u64| {
            given.unwrap_or(if q { quick } else { full })
        };
        let pick_s = |given: Option<f64>, full: f64, quick: f64| {
            secs(given.unwrap_or(if q { quick } else { full }))
        };
        let list = |given: &Option<Vec<u64>>, full: &[u64], quick: &[u64]| {
            given
                .clone()
                .unwrap_or_else(|| if q { quick } else { full }.to_vec())
        };
        let safety = a.safety_ms.or(q.then_some(3000)).map(ms);
        let sleep = a.sleep_ms.or(q.then_some(1000)).map(ms);
        let defaults = EarlyReads::default();
        let early = EarlyReads::new()
            .lag(a.lag_ms.map_or(defaults.lag, ms))
            .poll_interval(a.poll_ms.map_or(defaults.poll_interval, ms));
        let settled = safety.unwrap_or(scylla_cdc::DEFAULT_SAFETY_INTERVAL)
            + sleep.unwrap_or(scylla_cdc::DEFAULT_SLEEP_INTERVAL);
        let warmup = match a.warmup_s {
            Some(s) => secs(s)?,
            None => {
                settled
                    + if q {
                        Duration::from_secs(1)
                    } else {
                        Duration::from_secs(5)
                    }
            }
        };
        let plan = Plan {
            nodes: pick(a.nodes.map(|n| n as u64), 3, 1) as usize,
            vnodes: pick(a.vnodes.map(|n| n as u64), 256, 16) as usize,
            shards: a.shards,
            replication_factor: a.replication_factor,
            safety,
            sleep,
            fast_safety: ms(a.fast_safety_ms),
            fast_sleep: a.fast_sleep_ms.map(ms).or(if q { sleep } else { None }),
            early,
            warmup,
            idle: pick_s(a.idle_s, 60.0, 3.0)?,
            idle_every: ms(pick(a.idle_every_ms, 500, 200)),
            idle_writes: pick_s(a.idle_writes_s, 30.0, 2.0)?,
            rates: list(&a.rates, &[1000, 20_000], &[200]),
            rate_for: pick_s(a.rate_s, 20.0, 2.0)?,
            in_flight: a.in_flight,
            late_by: list(&a.late_by_ms, &[1000, 5000, 20_000], &[300, 1000, 2000])
                .into_iter()
                .map(ms)
                .collect(),
            late_rows: pick(a.late_rows.map(|n| n as u64), 20, 5) as usize,
            late_every: ms(pick(a.late_every_ms, 100, 30)),
            backlog_partitions: pick(a.backlog_partitions, 1000, 50),
            backlog_rows: pick(a.backlog_rows, 1000, 100),
            catch_up_reps: pick(a.catch_up_reps.map(|n| n as u64), 5, 1) as usize,
            catch_up_upstream: !a.no_catch_up_upstream,
            trade_off_polls: list(&a.trade_off_polls_ms, &[200, 600, 1000, 2000], &[200, 1000])
                .into_iter()
                .map(ms)
                .collect(),
            max_wait: pick_s(a.max_wait_s, 120.0, 30.0)?,
            margin: pick_s(a.margin_s, 15.0, 2.0)?,
        };
        ensure!(
            plan.nodes > 0 && plan.vnodes > 0 && plan.shards > 0,
            "an empty cluster"
        );
        ensure!(
            (1..=plan.nodes).contains(&plan.replication_factor),
            "--replication-factor must be between 1 and the nodes"
        );
        ensure!(plan.in_flight > 0, "--in-flight must be at least 1");
        ensure!(
            !plan.idle_every.is_zero(),
            "--idle-every-ms must be at least 1"
        );
        ensure!(plan.rates.iter().all(|&r| r > 0), "a write rate of 0");
        ensure!(plan.catch_up_reps > 0, "--catch-up-reps must be at least 1");
        ensure!(
            plan.backlog_partitions > 0 && plan.backlog_rows > 0,
            "an empty backlog"
        );
        Ok(plan)
    }

    /// The reader settings of the intervals that default to the libraries'.
    fn intervals(&self, settings: ReaderSettings) -> ReaderSettings {
        ReaderSettings {
            safety_interval: self.safety,
            sleep_interval: self.sleep,
            ..settings
        }
    }

    /// The four readers compared: name and settings.
    fn readers(&self) -> Vec<(String, ReaderSettings)> {
        vec![
            (OURS_EARLY.to_owned(), self.early_reader(self.early.clone())),
            (OURS.to_owned(), self.intervals(ReaderSettings::ours())),
            (
                UPSTREAM.to_owned(),
                self.intervals(ReaderSettings::upstream()),
            ),
            (
                format!("scylla-cdc 0.7, {} ms safety", self.fast_safety.as_millis()),
                ReaderSettings {
                    safety_interval: Some(self.fast_safety),
                    sleep_interval: self.fast_sleep,
                    ..ReaderSettings::upstream()
                },
            ),
        ]
    }

    /// Ours with `early` reads and the plan's intervals.
    fn early_reader(&self, early: EarlyReads) -> ReaderSettings {
        self.intervals(ReaderSettings {
            kind: ReaderKind::Ours {
                early: Some(early),
                cap: None,
            },
            ..ReaderSettings::ours()
        })
    }

    /// Keys of the writes: the idle-latency phase's, each rate's, each late class's.
    fn layout(&self) -> Layout {
        let mut next = 0usize;
        let mut take = |n: usize| {
            let r = next as i32..(next + n) as i32;
            next += n;
            r
        };
        let idle_writes =
            (self.idle_writes.as_secs_f64() / self.idle_every.as_secs_f64()).ceil() as usize;
        let idle = take(idle_writes.max(1));
        let rates = self
            .rates
            .iter()
            .map(|&r| take((r as f64 * self.rate_for.as_secs_f64()).ceil() as usize))
            .collect();
        let late = self.late_by.iter().map(|_| take(self.late_rows)).collect();
        Layout {
            idle,
            rates,
            late,
            capacity: next,
        }
    }

    fn describe(&self) -> String {
        let interval = |d: Option<Duration>, default: &str| {
            d.map_or(default.to_owned(), |d| format!("{} ms", d.as_millis()))
        };
        format!(
            "{} node(s) × {} vnodes × {} shards, RF {}; safety {}, sleep {} (readers 1-3); \
             early reads: lag {} ms, poll {} ms; 0.7 fast: safety {} ms, sleep {}",
            self.nodes,
            self.vnodes,
            self.shards,
            self.replication_factor,
            interval(self.safety, "30 s (default)"),
            interval(self.sleep, "10 s (default)"),
            self.early.lag.as_millis(),
            self.early.poll_interval.as_millis(),
            self.fast_safety.as_millis(),
            interval(self.fast_sleep, "10 s (default)"),
        )
    }
}

/// The readers' names in the table.
const OURS_EARLY: &str = "ours, early reads";
const OURS: &str = "ours, no early reads";
const UPSTREAM: &str = "scylla-cdc 0.7";

const BACKLOG_KEYSPACE: &str = "bench";
const BACKLOG_TABLE: &str = "backlog";
const KEYSPACE: &str = "lat";
const TABLE: &str = "t";

/// Which keys each phase writes.
#[derive(Debug, Clone)]
struct Layout {
    idle: Range<i32>,
    rates: Vec<Range<i32>>,
    late: Vec<Range<i32>>,
    capacity: usize,
}

pub(crate) fn main() -> ExitCode {
    let args = Args::parse_from(crate::program_args());
    if let Some(Hidden::CatchUp(child)) = &args.command {
        return match catch_up_child(child) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("latency-bench catch-up: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let run = || -> anyhow::Result<()> {
        let plan = Plan::of(&args)?;
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.workers.max(1))
            .enable_all()
            .build()?
            .block_on(bench(&plan))
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("latency-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// One of the readers of `lat.t`, and what it delivered and sent.
struct Reader {
    name: String,
    settings: ReaderSettings,
    running: Running,
    seen: Arc<Deliveries>,
    sent: RequestCounter,
}

impl Reader {
    async fn start(
        name: String,
        settings: ReaderSettings,
        contact: SocketAddr,
        from: DateTime<Utc>,
        base: Instant,
        capacity: usize,
    ) -> anyhow::Result<Reader> {
        let (session, sent) = counted_session(contact).await?;
        let seen = Arc::new(Deliveries::new(base, capacity));
        let running = start_reader(
            &settings,
            session,
            KEYSPACE,
            TABLE,
            from,
            seen.clone(),
            &name,
        )
        .await?;
        Ok(Reader {
            name,
            settings,
            running,
            seen,
            sent,
        })
    }

    fn is_ours(&self) -> bool {
        matches!(self.settings.kind, ReaderKind::Ours { .. })
    }

    /// Whether it flags late rows (ours with early reads).
    fn flags_late(&self) -> bool {
        matches!(self.settings.kind, ReaderKind::Ours { early: Some(_), .. })
    }

    /// Whether the reader is done with the writes of `pks`, all written before `until`:
    /// it delivered all of them, or its low watermark passed `until` (ours), or its safety
    /// interval, its sleep interval and `margin` have passed since `until` (0.7: a window
    /// ends a safety interval behind the clock, and the next starts a sleep interval after),
    /// or it failed.
    fn is_done(
        &self,
        acks: &Acks,
        pks: Range<i32>,
        until: DateTime<Utc>,
        margin: Duration,
    ) -> bool {
        if self.seen.has_all(acks, pks) || self.running.failure().is_some() {
            return true;
        }
        if self.is_ours() {
            return self.running.low_watermark().is_some_and(|w| w >= until);
        }
        let wait = self.settings.safety() + self.settings.sleep() + margin;
        Utc::now() >= until + TimeDelta::from_std(wait).unwrap_or(TimeDelta::MAX)
    }
}

/// Waits until every reader is done with the writes of `pks` ([`Reader::is_done`]), at most
/// `plan.max_wait`; says which were not.
async fn settle(
    readers: &[&Reader],
    acks: &Acks,
    pks: Range<i32>,
    until: DateTime<Utc>,
    plan: &Plan,
    phase: &str,
) {
    let began = Instant::now();
    loop {
        let pending: Vec<&str> = readers
            .iter()
            .filter(|r| !r.is_done(acks, pks.clone(), until, plan.margin))
            .map(|r| r.name.as_str())
            .collect();
        if pending.is_empty() {
            eprintln!(
                "{phase}: every reader done after {:.1} s",
                began.elapsed().as_secs_f64()
            );
            return;
        }
        if began.elapsed() >= plan.max_wait {
            eprintln!(
                "{phase}: stopped waiting after {:.0} s for {}",
                plan.max_wait.as_secs_f64(),
                pending.join(", ")
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes to `lat.t`, noting when each was acknowledged.
struct Writer {
    session: Arc<Session>,
    insert: PreparedStatement,
    insert_at: PreparedStatement,
    acks: Arc<Acks>,
}

/// What a write-rate phase achieved.
struct RateRun {
    acked: u64,
    failed: u64,
    elapsed: Duration,
    first_error: Option<String>,
}

impl Writer {
    /// One write, acknowledged.
    async fn one(&self, pk: i32) -> anyhow::Result<()> {
        self.session
            .execute_unpaged(&self.insert, (pk, pk))
            .await
            .with_context(|| format!("writing pk {pk}"))?;
        self.acks.ack(pk);
        Ok(())
    }

    /// The keys of `pks`, one every `every`; returns the time after the last.
    async fn spaced(&self, pks: Range<i32>, every: Duration) -> anyhow::Result<DateTime<Utc>> {
        let start = tokio::time::Instant::now();
        for (i, pk) in pks.enumerate() {
            tokio::time::sleep_until(start + every * i as u32).await;
            self.one(pk).await?;
        }
        Ok(Utc::now())
    }

    /// Writes the keys of `pks` at `rate` per second for `period` (the keys left then are
    /// not written), at most `in_flight` at once.
    async fn at_rate(
        &self,
        pks: Range<i32>,
        rate: u64,
        period: Duration,
        in_flight: usize,
    ) -> anyhow::Result<RateRun> {
        let slots = Arc::new(Semaphore::new(in_flight));
        let failed = Arc::new(AtomicU64::new(0));
        let first_error = Arc::new(Mutex::new(None));
        let start = tokio::time::Instant::now();
        let mut sent = 0u64;
        for (i, pk) in pks.enumerate() {
            let due = Duration::from_secs_f64(i as f64 / rate as f64);
            if due >= period {
                break;
            }
            tokio::time::sleep_until(start + due).await;
            let slot = slots.clone().acquire_owned().await?;
            let (session, insert, acks) =
                (self.session.clone(), self.insert.clone(), self.acks.clone());
            let (failed, first_error) = (failed.clone(), first_error.clone());
            tokio::spawn(async move {
                match session.execute_unpaged(&insert, (pk, pk)).await {
                    Ok(_) => acks.ack(pk),
                    Err(e) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        first_error
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert_with(|| format!("pk {pk}: {e}"));
                    }
                }
                drop(slot);
            });
            sent += 1;
        }
        // Every write is done once every slot is free again.
        let _all = slots
            .acquire_many(u32::try_from(in_flight).unwrap_or(u32::MAX))
            .await?;
        let failed = failed.load(Ordering::Relaxed);
        let first_error = first_error.lock().unwrap_or_else(|e| e.into_inner()).take();
        Ok(RateRun {
            acked: sent - failed,
            failed,
            elapsed: start.elapsed(),
            first_error,
        })
    }

    /// The late rows: for each class `(lateness, keys)`, its keys written `USING TIMESTAMP`
    /// `lateness` before now, the classes taking turns, one write every `every`. Returns the
    /// time after the last.
    async fn late(
        &self,
        classes: &[(Duration, Range<i32>)],
        every: Duration,
    ) -> anyhow::Result<DateTime<Utc>> {
        let rows = classes.iter().map(|(_, pks)| pks.len()).max().unwrap_or(0);
        for k in 0..rows {
            for (lateness, pks) in classes {
                let Some(pk) = pks.clone().nth(k) else {
                    continue;
                };
                let lateness = TimeDelta::from_std(*lateness)?;
                let ts = (Utc::now() - lateness).timestamp_micros();
                self.session
                    .execute_unpaged(&self.insert_at, (pk, pk, ts))
                    .await
                    .with_context(|| format!("writing late pk {pk}"))?;
                self.acks.ack(pk);
                tokio::time::sleep(every).await;
            }
        }
        Ok(Utc::now())
    }
}

/// The whole run: prints the tables at the end.
async fn bench(plan: &Plan) -> anyhow::Result<()> {
    let layout = plan.layout();
    println!("latency-bench: {}", plan.describe());

    // The cluster, with the catch-up backlog, readable once older than the safety interval.
    let shape = BacklogShape {
        nodes: plan.nodes,
        shards: plan.shards,
        vnodes: plan.vnodes,
        partitions: plan.backlog_partitions,
        rows: plan.backlog_rows,
    };
    let settled_after = plan.safety.unwrap_or(scylla_cdc::DEFAULT_SAFETY_INTERVAL);
    let backlog = Backlog::start(
        BACKLOG_KEYSPACE,
        BACKLOG_TABLE,
        shape,
        u64::try_from(settled_after.as_millis())?,
    )
    .await?;

    // 1. Catch-up CPU, in child processes, before anything else runs.
    let cpu = catch_up_phase(plan, &backlog, shape.total_rows()?).await?;

    let (writer, acks) = create_table(plan, &backlog, &layout).await?;
    let base = acks.base();
    let from = Utc::now();
    let started = Instant::now();
    let contact = backlog.cluster.contact_point();
    let mut readers = Vec::new();
    for (name, settings) in plan.readers() {
        readers.push(Reader::start(name, settings, contact, from, base, layout.capacity).await?);
    }
    let mut trade_off = Vec::new();
    for &poll in &plan.trade_off_polls {
        let settings = plan.early_reader(plan.early.clone().poll_interval(poll));
        let name = format!("poll {} ms", poll.as_millis());
        trade_off.push(Reader::start(name, settings, contact, from, base, layout.capacity).await?);
    }
    let idle_readers: Vec<&Reader> = readers.iter().chain(&trade_off).collect();
    eprintln!(
        "{} readers started; warming up for {:.0} s",
        idle_readers.len(),
        plan.warmup.as_secs_f64()
    );

    // 2. Idle: requests per second of each session.
    tokio::time::sleep(plan.warmup.saturating_sub(started.elapsed())).await;
    let (idle_rps, idle_note) = idle_phase(plan, &backlog, &idle_readers).await;
    eprintln!("{idle_note}");

    // 3. Latency at idle: single writes.
    let until = writer.spaced(layout.idle.clone(), plan.idle_every).await?;
    settle(
        &idle_readers,
        &acks,
        layout.idle.clone(),
        until,
        plan,
        "idle latency",
    )
    .await;
    let trade_off_rows: Vec<Vec<String>> = trade_off
        .iter()
        .zip(&idle_rps[readers.len()..])
        .map(|(r, rps)| {
            vec![
                r.name.clone(),
                format!("{rps:.1}"),
                Delays::of(&acks, &r.seen, layout.idle.clone()).cell(),
            ]
        })
        .collect();
    drop(idle_readers);
    stop_all(trade_off).await;
    let readers_only: Vec<&Reader> = readers.iter().collect();

    // 4. Latency under load.
    let mut rate_headers = Vec::new();
    for (rate, pks) in plan.rates.iter().zip(&layout.rates) {
        eprintln!("writing {rate}/s for {:.0} s", plan.rate_for.as_secs_f64());
        let run = writer
            .at_rate(pks.clone(), *rate, plan.rate_for, plan.in_flight)
            .await?;
        let until = Utc::now();
        let achieved = run.acked as f64 / run.elapsed.as_secs_f64().max(1e-9);
        eprintln!(
            "{rate}/s: {} acknowledged, {} failed, in {:.1} s = {achieved:.0}/s",
            run.acked,
            run.failed,
            run.elapsed.as_secs_f64()
        );
        if let Some(e) = &run.first_error {
            eprintln!("{rate}/s: first failed write: {e}");
        }
        rate_headers.push(format!("{rate}/s (achieved {achieved:.0}/s)"));
        let phase = format!("{rate}/s");
        settle(&readers_only, &acks, pks.clone(), until, plan, &phase).await;
    }

    // 5. Late rows.
    let classes: Vec<(Duration, Range<i32>)> = plan
        .late_by
        .iter()
        .copied()
        .zip(layout.late.iter().cloned())
        .collect();
    let late_keys =
        layout.late.first().map_or(0, |r| r.start)..layout.late.last().map_or(0, |r| r.end);
    let until = writer.late(&classes, plan.late_every).await?;
    settle(&readers_only, &acks, late_keys, until, plan, "late rows").await;

    // The tables, then the readers and the cluster stop.
    let lines: Vec<ReaderLine> = readers
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut delays = vec![Delays::of(&acks, &r.seen, layout.idle.clone())];
            delays.extend(
                layout
                    .rates
                    .iter()
                    .map(|pks| Delays::of(&acks, &r.seen, pks.clone())),
            );
            let mut late = LateCount::default();
            for pks in &layout.late {
                late.add(LateCount::of(&acks, &r.seen, pks.clone(), r.flags_late()));
            }
            ReaderLine {
                name: r.name.clone(),
                idle_rps: idle_rps[i],
                delays,
                late,
                cpu_us_per_row: cpu.get(i).copied().flatten(),
            }
        })
        .collect();
    let late_table = late_table(&readers_only, &acks, &classes);
    let failures: Vec<String> = readers
        .iter()
        .filter_map(|r| Some(format!("{}: {}", r.name, r.running.failure()?)))
        .collect();
    for r in &readers {
        if r.seen.foreign() > 0 {
            eprintln!("{}: {} rows with an unknown pk", r.name, r.seen.foreign());
        }
    }
    drop(readers_only);
    stop_all(readers).await;
    backlog.cluster.shutdown().await;

    println!();
    println!("{}", main_table(&rate_headers, &lines));
    println!("Late rows, by how far in the past their timestamps were:\n");
    println!("{late_table}");
    println!(
        "Early reads' poll interval (these readers ran beside the four above through the idle \
         and idle-latency phases):\n"
    );
    let header = [
        "early reads' poll interval",
        "idle requests/s",
        "idle: p50 / p99 / max (s)",
    ]
    .map(String::from);
    println!("{}", markdown(&header, &trade_off_rows));
    println!("{idle_note}");
    if let (Some(early), Some(theirs)) = (lines.first(), lines.get(2)) {
        println!(
            "idle requests/s, {} / {}: {:.2}",
            early.name,
            theirs.name,
            early.idle_rps / theirs.idle_rps.max(f64::MIN_POSITIVE)
        );
    }
    if let (Some(Some(early)), Some(Some(plain))) = (cpu.first(), cpu.get(1)) {
        println!(
            "catch-up CPU per row, early reads / no early reads: {:.2}",
            early / plain
        );
    }
    ensure!(
        failures.is_empty(),
        "readers failed (their numbers above stop where they did):\n{}",
        failures.join("\n")
    );
    Ok(())
}

/// Creates `lat.t`; the writer of its rows and the acknowledgements it notes.
async fn create_table(
    plan: &Plan,
    backlog: &Backlog,
    layout: &Layout,
) -> anyhow::Result<(Writer, Arc<Acks>)> {
    let admin = backlog.cluster.session().await?;
    admin
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': \
                 'NetworkTopologyStrategy', 'replication_factor': {}}}",
                plan.replication_factor
            ),
            (),
        )
        .await
        .context("creating the keyspace")?;
    admin
        .query_unpaged(
            format!(
                "CREATE TABLE {KEYSPACE}.{TABLE} (pk int PRIMARY KEY, v int) \
                 WITH cdc = {{'enabled': true}}"
            ),
            (),
        )
        .await
        .context("creating the table")?;
    let acks = Arc::new(Acks::new(Instant::now(), layout.capacity));
    let writer = Writer {
        insert: admin
            .prepare(format!(
                "INSERT INTO {KEYSPACE}.{TABLE} (pk, v) VALUES (?, ?)"
            ))
            .await
            .context("preparing the INSERT")?,
        insert_at: admin
            .prepare(format!(
                "INSERT INTO {KEYSPACE}.{TABLE} (pk, v) VALUES (?, ?) USING TIMESTAMP ?"
            ))
            .await
            .context("preparing the INSERT with a timestamp")?,
        session: admin,
        acks: acks.clone(),
    };
    Ok((writer, acks))
}

/// Counts the requests each reader's session sends over `plan.idle` with nothing written:
/// requests/s per reader (in `readers`' order), and a line comparing their sum with what the
/// cluster received meanwhile.
async fn idle_phase(plan: &Plan, backlog: &Backlog, readers: &[&Reader]) -> (Vec<f64>, String) {
    let cluster = &backlog.cluster;
    let before: Vec<u64> = readers.iter().map(|r| r.sent.get()).collect();
    let (cluster_before, t0) = (requests(cluster), Instant::now());
    tokio::time::sleep(plan.idle).await;
    let elapsed = t0.elapsed().as_secs_f64();
    let cluster_sent = requests(cluster) - cluster_before;
    let sent: Vec<u64> = readers
        .iter()
        .zip(&before)
        .map(|(r, b)| r.sent.get() - b)
        .collect();
    let note = format!(
        "Idle check: over {elapsed:.1} s the cluster received {cluster_sent} QUERY/EXECUTE \
         requests and the readers' sessions counted {} (a difference would be the \
         drivers' own metadata queries, which no load-balancing policy sees).",
        sent.iter().sum::<u64>()
    );
    let rps = sent.iter().map(|&n| n as f64 / elapsed).collect();
    (rps, note)
}

/// The late rows' table: a line per reader, a column per lateness.
fn late_table(readers: &[&Reader], acks: &Acks, classes: &[(Duration, Range<i32>)]) -> String {
    let mut header = vec!["reader".to_owned()];
    header.extend(
        classes
            .iter()
            .map(|(late, _)| format!("{} ms in the past", late.as_millis())),
    );
    let rows: Vec<Vec<String>> =
        readers
            .iter()
            .map(|r| {
                let mut row = vec![r.name.clone()];
                row.extend(classes.iter().map(|(_, pks)| {
                    LateCount::of(acks, &r.seen, pks.clone(), r.flags_late()).cell()
                }));
                row
            })
            .collect();
    markdown(&header, &rows)
}

/// Stops every reader, all at once.
async fn stop_all(readers: Vec<Reader>) {
    futures::future::join_all(readers.into_iter().map(|r| r.running.stop())).await;
}

/// Which reader a catch-up child runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum CatchUpKind {
    /// Ours with early reads.
    Early,
    /// Ours without.
    Plain,
    /// scylla-cdc 0.7, its defaults.
    Upstream,
}

/// The settings of one catch-up child (the parent passes them; not for users).
#[derive(Debug, Clone, clap::Args)]
struct CatchUpArgs {
    /// The reader.
    #[arg(long, value_enum)]
    kind: CatchUpKind,
    /// A node of the cluster.
    #[arg(long)]
    contact: SocketAddr,
    /// Start of reading, milliseconds since the epoch.
    #[arg(long)]
    start_ms: u64,
    /// End of reading (exclusive), milliseconds since the epoch.
    #[arg(long)]
    end_ms: u64,
    /// Safety interval, ms (default: the library's).
    #[arg(long)]
    safety_ms: Option<u64>,
    /// Sleep interval, ms (default: the library's).
    #[arg(long)]
    sleep_ms: Option<u64>,
    /// Early reads' lag, ms.
    #[arg(long)]
    lag_ms: u64,
    /// Early reads' poll interval, ms.
    #[arg(long)]
    poll_ms: u64,
}

/// The prefix of a catch-up child's result line.
const CATCH_UP_PREFIX: &str = "latency-bench-catch-up";

/// Reads the backlog once with each reader, `plan.catch_up_reps` times, taking turns, each
/// run in a child process; the median CPU µs per row of each of the four readers (`None`
/// where not measured). Fails if a run did not deliver exactly the backlog.
async fn catch_up_phase(
    plan: &Plan,
    backlog: &Backlog,
    total: u64,
) -> anyhow::Result<Vec<Option<f64>>> {
    let mut kinds = vec![CatchUpKind::Early, CatchUpKind::Plain];
    if plan.catch_up_upstream {
        kinds.push(CatchUpKind::Upstream);
    }
    let want = backlog_checksum(total);
    let exe = std::env::current_exe().context("finding this program")?;
    let mut per_row: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for rep in 0..plan.catch_up_reps {
        for turn in 0..kinds.len() {
            let k = (rep + turn) % kinds.len();
            let kind = kinds[k];
            let mut child = tokio::process::Command::new(&exe);
            child
                .args(["latency", "catch-up"])
                .args(["--kind", kind_name(kind)])
                .args(["--contact", &backlog.cluster.contact_point().to_string()])
                .args(["--start-ms", &backlog.start_ms.to_string()])
                .args(["--end-ms", &backlog.end_ms.to_string()])
                .args(["--lag-ms", &plan.early.lag.as_millis().to_string()])
                .args([
                    "--poll-ms",
                    &plan.early.poll_interval.as_millis().to_string(),
                ]);
            if let Some(safety) = plan.safety {
                child.args(["--safety-ms", &safety.as_millis().to_string()]);
            }
            if let Some(sleep) = plan.sleep {
                child.args(["--sleep-ms", &sleep.as_millis().to_string()]);
            }
            let out = child
                .output()
                .await
                .with_context(|| format!("running the {} catch-up", kind_name(kind)))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() {
                bail!(
                    "the {} catch-up failed ({}): {}",
                    kind_name(kind),
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let fields = ResultFields::parse(&stdout, CATCH_UP_PREFIX)?;
            let got = (fields.get("rows")?, fields.get("checksum")?);
            ensure!(
                got == want,
                "the {} catch-up delivered {} rows (checksum {}), not the backlog's {} ({})",
                kind_name(kind),
                got.0,
                got.1,
                want.0,
                want.1
            );
            let cpu_us = fields.get("cpu_us")? as f64;
            per_row[k].push(cpu_us / total as f64);
            eprintln!(
                "catch-up {} of {}: {}: {total} rows, {:.3} s CPU, {:.2} µs/row",
                rep + 1,
                plan.catch_up_reps,
                kind_name(kind),
                cpu_us / 1e6,
                cpu_us / total as f64
            );
        }
    }
    let mut medians: Vec<Option<f64>> = per_row.into_iter().map(median).collect();
    medians.resize(4, None);
    Ok(medians)
}

fn kind_name(kind: CatchUpKind) -> &'static str {
    match kind {
        CatchUpKind::Early => "early",
        CatchUpKind::Plain => "plain",
        CatchUpKind::Upstream => "upstream",
    }
}

/// A catch-up child: reads the backlog once, then prints its result line (rows, checksum,
/// CPU time from building the reader to its end).
fn catch_up_child(args: &CatchUpArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (rows, checksum, cpu) = runtime.block_on(catch_up(args))?;
    println!(
        "{CATCH_UP_PREFIX} rows={rows} checksum={checksum} cpu_us={}",
        cpu.as_micros()
    );
    Ok(())
}

async fn catch_up(args: &CatchUpArgs) -> anyhow::Result<(u64, u64, Duration)> {
    let session = Arc::new(
        scylla::client::session_builder::SessionBuilder::new()
            .known_node(args.contact.to_string())
            .build()
            .await
            .with_context(|| format!("connecting to {}", args.contact))?,
    );
    let totals = Totals::new(false);
    let before = own_rusage();
    if args.kind == CatchUpKind::Upstream {
        let mut builder = upstream::log_reader::CDCLogReaderBuilder::new()
            .session(session)
            .keyspace(BACKLOG_KEYSPACE)
            .table_name(BACKLOG_TABLE)
            .consumer_factory(UpstreamTallyFactory::new(totals.clone()))
            .start_timestamp(ms(args.start_ms))
            .end_timestamp(ms(args.end_ms));
        if let Some(safety) = args.safety_ms {
            builder = builder.safety_interval(ms(safety));
        }
        if let Some(sleep) = args.sleep_ms {
            builder = builder.sleep_interval(ms(sleep));
        }
        let (reader, handle) = builder.build().await.context("starting scylla-cdc 0.7")?;
        handle.await.context("scylla-cdc 0.7")?;
        // Kept until the end: dropping 0.7's reader closes the channel its worker selects on.
        drop(reader);
    } else {
        let at = |t| std::time::UNIX_EPOCH + ms(t);
        let early = (args.kind == CatchUpKind::Early).then(|| {
            EarlyReads::new()
                .lag(ms(args.lag_ms))
                .poll_interval(ms(args.poll_ms))
        });
        let mut builder = scylla_cdc::CDCLogReaderBuilder::new()
            .session(session)
            .keyspace(BACKLOG_KEYSPACE)
            .table_name(BACKLOG_TABLE)
            .consumer_factory(TallyFactory::new(totals.clone(), false))
            .start_timestamp(at(args.start_ms))
            .end_timestamp(at(args.end_ms))
            .early_reads(early);
        if let Some(safety) = args.safety_ms {
            builder = builder.safety_interval(ms(safety));
        }
        if let Some(sleep) = args.sleep_ms {
            builder = builder.sleep_interval(ms(sleep));
        }
        let (reader, handle) = builder.build().await.context("starting the reader")?;
        handle.await.context("the reader")?;
        drop(reader);
    }
    let after = own_rusage();
    let cpu = (after.user + after.system).saturating_sub(before.user + before.system);
    Ok((totals.rows(), totals.checksum(), cpu))
}
