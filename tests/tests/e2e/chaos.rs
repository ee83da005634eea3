//! Chaos: two consumer groups on one table of a 3-node, 256-vnode cluster (768 units), run as
//! real processes (the `e2e-printer` and `e2e-replicator` binaries), under a seeded schedule
//! of mixed faults, while a workload writes for the whole run.
//!
//! - Group `p`: 3 printers (`--format change`); group `r`: 3 replicators into a second
//!   cluster. Killed and stopped members are replaced by new processes (new member ids), so
//!   that about 3 of each run at most times; a member that joins makes 4 for a while.
//! - Faults, one after another (each in its own slot of the run): `kill -9` of a member;
//!   SIGSTOP of a member for 1.5-2 lease durations, then SIGCONT; a graceful stop (SIGTERM,
//!   which must exit 0); a member joining; the lease table's requests failing with a write
//!   timeout, applied then answered with a timeout, or hanging (delayed past the lease) for
//!   a few seconds, on every node or one, for one group or both; a source node stopped and
//!   restarted a few seconds later; a generation switch (a node added: 256 more units).
//! - The checker: every change in the source's CDC log is printed (the union of the
//!   printers' outputs); per partition, the deliveries sorted by the printers' `ts_ms` bring
//!   each change for the first time in write order; every delivery was made by the member
//!   that last started the change's unit (the programs log `unit started` / `unit stopped`
//!   lines with their streams), except at most one change per stream that a paused member
//!   already had in hand and printed just after its SIGCONT (counted as `in_flight`); every
//!   change printed again was printed before by a member that was then killed or paused, or
//!   whose reading of the unit then stopped without a checkpoint (`lease_lost`, or `left` /
//!   `failed`) while a lease-table fault of its group was on, or stopped in any way while a
//!   node was down (a checkpoint save may fail then); or, counted as `stall`, whose reading
//!   stopped without a checkpoint after the member logged that its leases ran out between
//!   two renewals or during a slow renewal, with no fault injected (the machine, 2 cores
//!   shared with the clusters, the programs and other builds, stalled it past a lease).
//!   Graceful stops, joins, regroupings and generation switches repeat nothing. The
//!   replicators' destination ends equal to the source; every member still running exits 0
//!   on SIGTERM.
//!
//! Settings (environment): `CHAOS_SEED` (default: from the clock; printed), `CHAOS_FAULTS`
//! (default 14), `CHAOS_SECONDS` (the length of the fault schedule; default 60 s, or 4.2 s
//! per fault when only `CHAOS_FAULTS` is given). The long run of the issue's acceptance:
//! `CHAOS_FAULTS=100 cargo test -p scylla-cdc-e2e-tests --test e2e chaos -- --nocapture`.
//! A summary line `chaos: seed=... faults=... repeats=... by_cause={...} in_flight=...` goes
//! to stderr past the test harness's capture. `CHAOS_KEEP=1` keeps the programs' outputs
//! (their directory is named on failure either way); `CHAOS_PROGRAM_LOG` is the programs'
//! `RUST_LOG` (it must keep `scylla_cdc::cli::units=info`, which the checker reads).
//!
//! Embedded clusters only (faults and node control): reported as skipped with `SCYLLA_URI`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Seek, SeekFrom, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::support::*;
use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use scylla::client::session::Session;
use scylla::value::CqlTimeuuid;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultError, FaultReaction, FaultRule};
use serde_json::Value;

/// The lease duration of both groups (seconds) and their renew interval.
const LEASE_SECS: f64 = 2.0;
const LEASE_MS: i64 = 2000;
const LEASE: &str = "2";
const RENEW: &str = "0.4";
/// Partitions the workload writes to.
const PARTITIONS: i32 = 24;
/// Vnodes per node: 768 units on 3 nodes.
const VNODES: usize = 256;
/// Members per group, most of the time.
const MEMBERS: usize = 3;
/// How long after its SIGCONT a paused member may still print a change it had in hand.
const IN_FLIGHT_MS: i64 = 100;

/// A small seeded generator (SplitMix64): the same seed gives the same schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }

    fn chance(&mut self, p: f64) -> bool {
        self.between(0.0, 1.0) < p
    }
}

/// The kinds of faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Kill,
    Pause,
    Stop,
    Join,
    Lease,
    Node,
    Generation,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Pause => "pause",
            Kind::Stop => "stop",
            Kind::Join => "join",
            Kind::Lease => "lease",
            Kind::Node => "node",
            Kind::Generation => "generation",
        }
    }
}

/// The run's settings.
#[derive(Debug, Clone)]
struct Settings {
    seed: u64,
    faults: usize,
    seconds: f64,
}

impl Settings {
    fn from_env() -> anyhow::Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let seed = match var("CHAOS_SEED") {
            Some(s) => s.trim().parse().context("CHAOS_SEED")?,
            None => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)?
                    .as_nanos() as u64;
                nanos % 1_000_000
            }
        };
        let faults = match var("CHAOS_FAULTS") {
            Some(s) => s.trim().parse().context("CHAOS_FAULTS")?,
            None => 14,
        };
        let seconds = match (var("CHAOS_SECONDS"), var("CHAOS_FAULTS")) {
            (Some(s), _) => s.trim().parse().context("CHAOS_SECONDS")?,
            (None, Some(_)) => faults as f64 * 4.2,
            (None, None) => 60.0,
        };
        anyhow::ensure!(
            faults > 0 && seconds > 0.0,
            "CHAOS_FAULTS and CHAOS_SECONDS > 0"
        );
        Ok(Self {
            seed,
            faults,
            seconds,
        })
    }
}

/// The kinds of the `n` faults, in order: one of each kind first (when there is room), the
/// rest drawn by weight, shuffled; at most one generation switch (two in runs of 60 faults
/// or more), none in the last quarter of the run (so that the group reads the new
/// generation for a while).
fn schedule(rng: &mut Rng, n: usize) -> Vec<Kind> {
    let weights = [
        (Kind::Kill, 5),
        (Kind::Pause, 5),
        (Kind::Stop, 2),
        (Kind::Join, 2),
        (Kind::Lease, 4),
        (Kind::Node, 3),
    ];
    let mut kinds: Vec<Kind> = Vec::new();
    let generations = if n >= 60 { 2 } else { 1 };
    if n >= 7 {
        kinds.extend(weights.iter().map(|(k, _)| *k));
        kinds.extend(std::iter::repeat_n(Kind::Generation, generations));
    }
    let total: usize = weights.iter().map(|(_, w)| w).sum();
    while kinds.len() < n {
        let mut x = rng.below(total);
        for (k, w) in weights {
            if x < w {
                kinds.push(k);
                break;
            }
            x -= w;
        }
    }
    for i in (1..kinds.len()).rev() {
        let j = rng.below(i + 1);
        kinds.swap(i, j);
    }
    // Generation switches within the first three quarters.
    let last = (n * 3 / 4).max(1);
    for i in last..kinds.len() {
        if kinds[i] == Kind::Generation {
            let j = loop {
                let j = rng.below(last);
                if kinds[j] != Kind::Generation {
                    break j;
                }
            };
            kinds.swap(i, j);
        }
    }
    kinds
}

/// One fault as it happened (wall-clock times, ms since the epoch).
#[derive(Debug, Clone)]
struct Fault {
    kind: Kind,
    /// When it began (a signal sent, a rule added, a node stopped).
    at: i64,
    /// When it ended (SIGCONT sent, rule removed, node started; `at` for instant ones; for a
    /// graceful stop, when the process exited).
    until: i64,
    /// Its effects may last this long after `until` (a delayed request still runs).
    tail: i64,
    /// The member (`p3`, `r5`), the node (`node 2`) or the groups (`p`, `r`, `p+r`).
    target: String,
    detail: String,
}

impl Fault {
    fn affects_group(&self, group: &str) -> bool {
        self.target.split('+').any(|g| g == group)
    }

    fn line(&self, t0: i64) -> String {
        format!(
            "{:>7.2}s {:<10} {:<8} {:.2}s {}",
            (self.at - t0) as f64 / 1000.0,
            self.kind.name(),
            self.target,
            (self.until - self.at) as f64 / 1000.0,
            self.detail
        )
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// A writer of rounds over [`PARTITIONS`] partitions until stopped: round `r` inserts
/// `(pk, r)` in every partition, in order. A failed write (a node down) is retried until it
/// succeeds; a retried write may have been applied before it failed, so a `(pk, seq)` can
/// have two changes in the log.
struct Workload {
    rounds: Arc<AtomicI32>,
    retries: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Workload {
    fn start(session: Arc<Session>, ks: &str) -> Self {
        let rounds = Arc::new(AtomicI32::new(0));
        let retries = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, n, s) = (rounds.clone(), retries.clone(), stop.clone());
        let text = format!("INSERT INTO {ks}.t (pk, seq, v) VALUES (?, ?, ?)");
        let task = tokio::spawn(async move {
            let insert = session.prepare(text).await?;
            while !s.load(Ordering::Relaxed) {
                let seq = r.load(Ordering::Relaxed);
                for pk in 0..PARTITIONS {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    loop {
                        match session
                            .execute_unpaged(&insert, (pk, seq, format!("v{pk}.{seq}")))
                            .await
                        {
                            Ok(_) => break,
                            Err(_) if Instant::now() < deadline => {
                                n.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                            Err(e) => {
                                return Err(anyhow::anyhow!(
                                    "write ({pk}, {seq}) failed for 60 s: {e}"
                                ));
                            }
                        }
                    }
                }
                r.store(seq + 1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            Ok(())
        });
        Self {
            rounds,
            retries,
            stop,
            task,
        }
    }

    /// Stops writing; the number of rounds written.
    async fn finish(self) -> anyhow::Result<(i32, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await??;
        Ok((
            self.rounds.load(Ordering::Relaxed),
            self.retries.load(Ordering::Relaxed),
        ))
    }
}

/// One change printed by a printer.
#[derive(Debug, Clone)]
struct Delivery {
    member: Arc<str>,
    /// `0x…`
    stream: Arc<str>,
    /// `cdc$time`, as a uuid.
    time: Arc<str>,
    ts_us: i64,
    ts_ms: i64,
    pk: i32,
    seq: i32,
}

impl Delivery {
    fn change(&self) -> (Arc<str>, Arc<str>) {
        (self.stream.clone(), self.time.clone())
    }
}

/// The deliveries of one printer's stdout, read incrementally (whole lines only).
#[derive(Default)]
struct Tail {
    offset: u64,
    deliveries: Vec<Delivery>,
}

impl Tail {
    /// Reads what the printer wrote since the last call. A line cut by a `kill -9` has no
    /// newline and is never read.
    fn refresh(&mut self, name: &str, stdout: &std::path::Path) -> anyhow::Result<()> {
        let mut file = std::fs::File::open(stdout)?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let Some(end) = text.rfind('\n') else {
            return Ok(());
        };
        let member: Arc<str> = Arc::from(name);
        for line in text[..end].lines() {
            self.deliveries.push(
                parse_change(&member, line)
                    .with_context(|| format!("{name}: not a change: {line}"))?,
            );
        }
        self.offset += end as u64 + 1;
        Ok(())
    }
}

/// A `--format change` line.
fn parse_change(member: &Arc<str>, line: &str) -> anyhow::Result<Delivery> {
    let v: Value = serde_json::from_str(line)?;
    let int = |v: &Value| v.as_i64().context("not a number");
    let source = &v["source"];
    Ok(Delivery {
        member: member.clone(),
        stream: Arc::from(source["stream_id"].as_str().context("stream_id")?),
        time: Arc::from(source["time"].as_str().context("time")?),
        ts_us: int(&source["ts_us"])?,
        ts_ms: int(&v["ts_ms"]).context("ts_ms")?,
        pk: int(&v["key"]["pk"])? as i32,
        seq: int(&v["key"]["seq"])? as i32,
    })
}

/// A `unit started` / `unit stopped` line of a member's log.
#[derive(Debug, Clone)]
struct UnitLine {
    /// When it was logged, µs since the epoch.
    at_us: i64,
    started: bool,
    member: String,
    unit: String,
    reason: Option<String>,
    streams: Vec<String>,
}

/// The unit lines of a program's stderr.
fn unit_lines(stderr: &str) -> anyhow::Result<Vec<UnitLine>> {
    let mut out = Vec::new();
    for line in stderr.lines() {
        let (pos, started) = match (line.find(" unit started "), line.find(" unit stopped ")) {
            (Some(p), _) => (p, true),
            (None, Some(p)) => (p, false),
            _ => continue,
        };
        let stamp = line.split_whitespace().next().unwrap_or_default();
        let at_us = DateTime::parse_from_rfc3339(stamp)
            .with_context(|| format!("no time at the start of {line}"))?
            .timestamp_micros();
        let mut fields: HashMap<&str, &str> = HashMap::new();
        for word in line[pos + " unit started ".len()..].split_whitespace() {
            if let Some((k, v)) = word.split_once('=') {
                fields.insert(k, v);
            }
        }
        let field = |k: &str| -> anyhow::Result<String> {
            Ok(fields
                .get(k)
                .with_context(|| format!("no {k}= in {line}"))?
                .to_string())
        };
        out.push(UnitLine {
            at_us,
            started,
            member: field("member")?,
            unit: field("unit")?,
            reason: fields.get("reason").map(|r| r.to_string()),
            streams: field("streams")?
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        });
    }
    Ok(out)
}

/// When a member logged that its leases ran out without a fault of its own doing: a round or
/// the process stalled between two renewals, or a renewal outlasted a lease (ms).
fn stall_lines(stderr: &str) -> Vec<i64> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("the leases ran out between two renewals")
                || l.contains("a renewal took longer than a lease")
        })
        .filter_map(|l| DateTime::parse_from_rfc3339(l.split_whitespace().next()?).ok())
        .map(|t| t.timestamp_millis())
        .collect()
}

/// A change of the source's CDC log: stream, `cdc$time`, pk, seq.
type LogChange = (String, String, i32, i32);

/// Every change in the source's CDC log.
async fn log_changes(s: &Session, ks: &str) -> anyhow::Result<Vec<LogChange>> {
    let mut rows = s
        .query_iter(
            format!("SELECT \"cdc$stream_id\", \"cdc$time\", pk, seq FROM {ks}.t_scylla_cdc_log"),
            (),
        )
        .await?
        .rows_stream::<(Vec<u8>, CqlTimeuuid, Option<i32>, Option<i32>)>()?;
    let mut out = Vec::new();
    while let Some((stream, time, pk, seq)) = rows.try_next().await? {
        let hex: String = stream.iter().map(|b| format!("{b:02x}")).collect();
        out.push((
            format!("0x{hex}"),
            uuid::Uuid::from(time).to_string(),
            pk.context("a log row without pk")?,
            seq.context("a log row without seq")?,
        ));
    }
    Ok(out)
}

/// What the checker found.
#[derive(Debug, Default)]
struct Summary {
    changes: usize,
    deliveries: usize,
    repeats: usize,
    by_cause: BTreeMap<&'static str, usize>,
    by_member: BTreeMap<String, usize>,
    in_flight: usize,
    in_flight_by_member: BTreeMap<String, usize>,
}

/// Pauses of each member: (SIGSTOP sent, SIGCONT sent), ms.
type Pauses = HashMap<String, Vec<(i64, i64)>>;

/// Checks the printers' deliveries against the log, the units' starts and the faults.
/// Returns the summary, or every problem found (the first 20 of each kind).
fn check(
    deliveries: &[Delivery],
    units: &[UnitLine],
    stalls: &HashMap<String, Vec<i64>>,
    log: &[LogChange],
    rounds: i32,
    faults: &[Fault],
) -> Result<Summary, Vec<String>> {
    let mut problems: Vec<String> = Vec::new();
    let mut summary = Summary {
        changes: log.len(),
        deliveries: deliveries.len(),
        ..Summary::default()
    };

    // The log holds every write of the workload (`rounds` rounds over every partition).
    let logged: BTreeSet<(i32, i32)> = log.iter().map(|(_, _, pk, seq)| (*pk, *seq)).collect();
    let unlogged: Vec<(i32, i32)> = (0..PARTITIONS)
        .flat_map(|pk| (0..rounds).map(move |seq| (pk, seq)))
        .filter(|k| !logged.contains(k))
        .collect();
    if !unlogged.is_empty() {
        problems.push(format!(
            "{} writes of the workload are not in the CDC log, e.g. {:?}",
            unlogged.len(),
            &unlogged[..unlogged.len().min(10)]
        ));
    }

    // 0 lost, nothing unknown.
    let written: HashMap<(&str, &str), (i32, i32)> = log
        .iter()
        .map(|(s, t, pk, seq)| ((s.as_str(), t.as_str()), (*pk, *seq)))
        .collect();
    let printed: BTreeSet<(&str, &str)> =
        deliveries.iter().map(|d| (&*d.stream, &*d.time)).collect();
    let lost: Vec<_> = written.keys().filter(|k| !printed.contains(*k)).collect();
    if !lost.is_empty() {
        problems.push(format!(
            "{} of {} changes never printed, e.g. {:?}",
            lost.len(),
            log.len(),
            lost.iter()
                .take(10)
                .map(|k| (k, written[*k]))
                .collect::<Vec<_>>()
        ));
    }
    for d in deliveries {
        if !written.contains_key(&(&*d.stream, &*d.time)) {
            problems.push(format!(
                "{} printed a change not in the log: {d:?}",
                d.member
            ));
            break;
        }
    }

    // Per partition: first deliveries in write order.
    let mut by_pk: BTreeMap<i32, Vec<&Delivery>> = BTreeMap::new();
    for d in deliveries {
        by_pk.entry(d.pk).or_default().push(d);
    }
    let mut order_problems = 0;
    for (pk, list) in &mut by_pk {
        list.sort_by_key(|d| (d.ts_ms, d.ts_us));
        let mut changes: Vec<(i64, &str, i32)> = list
            .iter()
            .map(|d| (d.ts_us, &*d.time, d.seq))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        changes.sort();
        let index: HashMap<&str, usize> = changes
            .iter()
            .enumerate()
            .map(|(i, (_, t, _))| (*t, i))
            .collect();
        if changes.windows(2).any(|w| w[0].2 > w[1].2) {
            problems.push(format!("partition {pk}: seqs not in cdc$time order"));
        }
        let mut next = 0;
        for d in list.iter() {
            let i = index[&*d.time];
            if i == next {
                next += 1;
            } else if i > next {
                order_problems += 1;
                if order_problems <= 20 {
                    problems.push(format!(
                        "partition {pk}: {} printed seq {} (ts_ms {}) before anyone printed \
                         seq {} (the change before it)",
                        d.member, d.seq, d.ts_ms, changes[next].2
                    ));
                }
                next = i + 1;
            }
        }
    }

    // Every delivery by the member that last started its unit (or in flight after SIGCONT).
    let mut unit_of: HashMap<&str, &str> = HashMap::new();
    let mut starts: HashMap<&str, Vec<(i64, &str)>> = HashMap::new();
    // Every stop of a unit by a member: (ms, reason), in order.
    let mut stops: HashMap<(&str, &str), Vec<(i64, &str)>> = HashMap::new();
    for u in units {
        if u.started {
            for s in &u.streams {
                unit_of.insert(s, &u.unit);
            }
            // A start logged at µs t is before any delivery whose ms clock reads t / 1000.
            starts
                .entry(&u.unit)
                .or_default()
                .push((u.at_us.div_euclid(1000), &u.member));
        } else {
            stops
                .entry((&u.member, &u.unit))
                .or_default()
                .push((u.at_us.div_euclid(1000), u.reason.as_deref().unwrap_or("")));
        }
    }
    for list in stops.values_mut() {
        list.sort();
    }
    for list in starts.values_mut() {
        list.sort();
    }
    let mut pauses: Pauses = HashMap::new();
    for f in faults.iter().filter(|f| f.kind == Kind::Pause) {
        pauses
            .entry(f.target.clone())
            .or_default()
            .push((f.at, f.until));
    }
    let mut in_flight: BTreeSet<(&str, usize, &str)> = BTreeSet::new();
    let mut in_flight_changes: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
    let mut lease_problems = 0;
    for d in deliveries {
        let Some(unit) = unit_of.get(&*d.stream) else {
            lease_problems += 1;
            if lease_problems <= 20 {
                problems.push(format!(
                    "{} printed a change of stream {}, of no unit started",
                    d.member, d.stream
                ));
            }
            continue;
        };
        let last = starts
            .get(unit)
            .and_then(|s| s.iter().rev().find(|(t, _)| *t <= d.ts_ms));
        if last.is_some_and(|(_, m)| *m == &*d.member) {
            continue;
        }
        // A change the member had in hand when it was paused, printed right after SIGCONT.
        let pause = pauses.get(&*d.member).and_then(|list| {
            list.iter()
                .position(|(_, cont)| d.ts_ms >= *cont && d.ts_ms <= cont + IN_FLIGHT_MS)
        });
        if let Some(p) = pause
            && in_flight.insert((&d.member, p, &d.stream))
        {
            in_flight_changes.insert((&d.member, &d.stream, &d.time));
            summary.in_flight += 1;
            *summary
                .in_flight_by_member
                .entry(d.member.to_string())
                .or_default() += 1;
            continue;
        }
        lease_problems += 1;
        if lease_problems <= 20 {
            problems.push(format!(
                "{} printed (pk {}, seq {}) of {unit} at ts_ms {} while {} held it (started \
                 {} ms before)",
                d.member,
                d.pk,
                d.seq,
                d.ts_ms,
                last.map_or("no member", |(_, m)| m),
                last.map_or(0, |(t, _)| d.ts_ms - t),
            ));
        }
    }
    if lease_problems > 20 {
        problems.push(format!(
            "{lease_problems} deliveries by a member not holding the unit in all"
        ));
    }

    // Repeats, attributed to the member that printed the change before and what happened
    // to it in between.
    let mut by_change: HashMap<(Arc<str>, Arc<str>), Vec<&Delivery>> = HashMap::new();
    for d in deliveries {
        by_change.entry(d.change()).or_default().push(d);
    }
    let killed: HashMap<&str, i64> = faults
        .iter()
        .filter(|f| f.kind == Kind::Kill)
        .map(|f| (f.target.as_str(), f.at))
        .collect();
    let overlaps = |f: &Fault, from: i64, to: i64| f.at <= to && f.until + f.tail >= from;
    let mut unexplained = 0;
    for list in by_change.values_mut() {
        list.sort_by_key(|d| (d.ts_ms, d.ts_us));
        for pair in list.windows(2) {
            let (prev, again) = (pair[0], pair[1]);
            let (tp, tr) = (prev.ts_ms, again.ts_ms);
            let unit = unit_of.get(&*prev.stream).copied().unwrap_or_default();
            // The stop of the reading that made the first delivery: the member's first stop
            // of the unit after it (a killed member logs none).
            let stop = stops
                .get(&(&*prev.member, unit))
                .and_then(|l| l.iter().find(|(t, _)| *t >= tp))
                .copied();
            let (cause, member) =
                if in_flight_changes.contains(&(&*again.member, &*again.stream, &*again.time)) {
                    ("pause", again.member.to_string())
                } else if killed.get(&*prev.member).is_some_and(|k| *k <= tr) {
                    ("kill", prev.member.to_string())
                } else if pauses
                    .get(&*prev.member)
                    .is_some_and(|l| l.iter().any(|(a, b)| *a <= tr && tp <= b + 200))
                {
                    ("pause", prev.member.to_string())
                } else {
                    // Otherwise the reading must have stopped without a checkpoint (its lease
                    // run out: `lease_lost`, or `left`/`failed` on the way) while a lease-table
                    // fault of this group or a node fault was on: a stop that saves a
                    // checkpoint (hand-over, regrouping, leaving in time, the end) repeats
                    // nothing.
                    let cause = stop.and_then(|(at, reason)| {
                        let aborted = matches!(reason, "lease_lost" | "left" | "failed");
                        let during = |f: &&Fault| overlaps(f, tp, at);
                        if aborted
                            && faults
                                .iter()
                                .filter(|f| f.kind == Kind::Lease && f.affects_group("p"))
                                .any(|f| during(&f))
                        {
                            Some("lease")
                        } else if faults
                            .iter()
                            .filter(|f| f.kind == Kind::Node)
                            .any(|f| during(&f))
                        {
                            // Whatever the stop: with a node down, a checkpoint save can fail too.
                            Some("node")
                        } else if aborted
                            && stalls.get(&*prev.member).is_some_and(|l| {
                                l.iter().any(|t| *t >= tp - LEASE_MS && *t <= at + LEASE_MS)
                            })
                        {
                            // The member said its leases ran out with no fault injected: the
                            // machine (2 cores shared with the programs, the clusters and other
                            // builds) stalled it or the lease table past a lease.
                            Some("stall")
                        } else {
                            None
                        }
                    });
                    match cause {
                        Some(cause) => (cause, prev.member.to_string()),
                        None => {
                            unexplained += 1;
                            if unexplained <= 20 {
                                problems.push(format!(
                                    "(pk {}, seq {}) printed by {} at {tp} and again by {} at {tr} \
                                 with no kill or pause of {} in between, and its reading of \
                                 {unit} stopped {}",
                                    prev.pk,
                                    prev.seq,
                                    prev.member,
                                    again.member,
                                    prev.member,
                                    match stop {
                                        Some((at, reason)) => format!(
                                            "at {at} ({reason}) with no lease-table or node fault \
                                         since the first delivery"
                                        ),
                                        None => "never".to_owned(),
                                    }
                                ));
                            }
                            ("unexplained", prev.member.to_string())
                        }
                    }
                };
            summary.repeats += 1;
            *summary.by_cause.entry(cause).or_default() += 1;
            *summary
                .by_member
                .entry(format!("{member}:{cause}"))
                .or_default() += 1;
        }
    }
    if unexplained > 20 {
        problems.push(format!("{unexplained} unexplained repeats in all"));
    }
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(problems)
    }
}

/// A group of members: `p` (printers) or `r` (replicators).
struct Group {
    name: &'static str,
    binary: &'static str,
    members: Vec<Process>,
    next: usize,
}

/// A member stopping with SIGTERM: the program, its exit code, when it ended (ms).
type Exit = tokio::task::JoinHandle<(Process, anyhow::Result<Option<i32>>, i64)>;

/// The state of a run.
struct Chaos {
    source: EmbeddedCluster,
    destination: EmbeddedCluster,
    ks: String,
    start: String,
    dir: TempDir,
    groups: [Group; 2],
    /// Members that ended (killed, stopped).
    ended: Vec<Process>,
    /// Every member started: name, stdout, stderr.
    outputs: Vec<(String, PathBuf, PathBuf)>,
    /// `RUST_LOG` of the programs (`CHAOS_PROGRAM_LOG`; `None`: their default).
    program_log: Option<String>,
    /// Graceful stops under way: the member's exit.
    stopping: Vec<Exit>,
    faults: Vec<Fault>,
    rng: Rng,
    nodes: usize,
    t0: i64,
}

impl Chaos {
    fn args(&self, group: usize, member: &str) -> Vec<String> {
        let ks = &self.ks;
        let hosts: Vec<String> = self
            .source
            .node_addresses()
            .iter()
            .map(|a| a.to_string())
            .collect();
        let hosts = hosts.join(",");
        let mut args: Vec<String> = if group == 0 {
            [
                "--hosts",
                &hosts,
                "-k",
                ks,
                "-t",
                "t",
                "--format",
                "change",
                "--window-size",
                "1",
                "--safety-interval",
                "1",
                "--sleep-interval",
                "0.1",
                "--checkpoint-interval",
                "2",
                "--progress-interval",
                "0.5",
                "--checkpoint-table",
                &format!("{ks}.cp_p"),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        } else {
            let mut a = replicator_args(
                &hosts,
                &self.destination.contact_point().to_string(),
                ks,
                "t",
            );
            a.extend(["--checkpoint-table".to_owned(), format!("{ks}.cp_r")]);
            a
        };
        args.extend(
            [
                "--start",
                &self.start,
                "--group",
                self.groups[group].name,
                "--member-id",
                member,
                "--lease-duration",
                LEASE,
                "--renew-interval",
                RENEW,
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        args
    }

    /// Starts a new member of `group`.
    fn spawn(&mut self, group: usize) -> anyhow::Result<String> {
        self.groups[group].next += 1;
        let name = format!("{}{}", self.groups[group].name, self.groups[group].next);
        let args = self.args(group, &name);
        let program = Process::spawn_logging(
            self.groups[group].binary,
            &name,
            &args,
            &self.dir,
            self.program_log.as_deref(),
        )?;
        self.outputs
            .push((name.clone(), program.stdout.clone(), program.stderr.clone()));
        self.groups[group].members.push(program);
        Ok(name)
    }

    fn record(&mut self, kind: Kind, at: i64, until: i64, tail: i64, target: &str, detail: String) {
        let f = Fault {
            kind,
            at,
            until,
            tail,
            target: target.to_owned(),
            detail,
        };
        eprintln!("chaos fault: {}", f.line(self.t0));
        self.faults.push(f);
    }

    /// A random member: (group, index).
    fn pick_member(&mut self) -> (usize, usize) {
        let group = self.rng.below(2);
        let index = self.rng.below(self.groups[group].members.len());
        (group, index)
    }

    /// Keeps [`MEMBERS`] members in each group: replaces one that ended.
    fn replace(&mut self, group: usize) -> anyhow::Result<Option<String>> {
        if self.groups[group].members.len() < MEMBERS {
            return self.spawn(group).map(Some);
        }
        Ok(None)
    }

    /// Fails if a member ended unexpectedly.
    fn check_running(&mut self) -> anyhow::Result<()> {
        for g in &mut self.groups {
            for m in &mut g.members {
                m.check_running()?;
            }
        }
        Ok(())
    }

    async fn fault(&mut self, kind: Kind, slot: Duration) -> anyhow::Result<()> {
        let lease = Duration::from_secs_f64(LEASE_SECS);
        match kind {
            Kind::Kill => {
                let (g, i) = self.pick_member();
                let mut m = self.groups[g].members.remove(i);
                let at = now_ms();
                m.kill9().await?;
                let replaced = self.replace(g)?;
                self.record(
                    kind,
                    at,
                    at,
                    0,
                    &m.name.clone(),
                    format!("replaced by {replaced:?}"),
                );
                self.ended.push(m);
            }
            Kind::Pause => {
                let (g, i) = self.pick_member();
                let d = lease.mul_f64(self.rng.between(1.5, 2.0));
                let at = now_ms();
                self.groups[g].members[i].signal("STOP")?;
                tokio::time::sleep(d).await;
                let until = now_ms();
                self.groups[g].members[i].signal("CONT")?;
                let name = self.groups[g].members[i].name.clone();
                self.record(kind, at, until, 0, &name, String::new());
            }
            Kind::Stop => {
                let (g, i) = self.pick_member();
                let mut m = self.groups[g].members.remove(i);
                let at = now_ms();
                m.signal("TERM")?;
                let name = m.name.clone();
                self.stopping.push(tokio::spawn(async move {
                    let code = m.exit_code(Duration::from_secs(90)).await;
                    (m, code, now_ms())
                }));
                let replaced = self.replace(g)?;
                self.record(kind, at, at, 0, &name, format!("replaced by {replaced:?}"));
            }
            Kind::Join => {
                let open: Vec<usize> = (0..2)
                    .filter(|g| self.groups[*g].members.len() <= MEMBERS)
                    .collect();
                if open.is_empty() {
                    // Both groups have a 4th member: a graceful stop instead.
                    return Box::pin(self.fault(Kind::Stop, slot)).await;
                }
                let g = open[self.rng.below(open.len())];
                let at = now_ms();
                let name = self.spawn(g)?;
                let n = self.groups[g].members.len();
                self.record(kind, at, at, 0, &name, format!("{n} members"));
            }
            Kind::Lease => {
                let (target, fragment) = match self.rng.below(3) {
                    0 => ("p", "cp_p_leases"),
                    1 => ("r", "cp_r_leases"),
                    _ => ("p+r", "_leases"),
                };
                let mut rule = FaultRule::new().on_statement_containing(fragment);
                let mut tail = 0;
                let what = match self.rng.below(3) {
                    0 => {
                        rule = rule.error(FaultError::WriteTimeout);
                        "write_timeout".to_owned()
                    }
                    1 => {
                        rule = rule
                            .respond(FaultReaction::ErrorAfterExecuting(FaultError::WriteTimeout));
                        "applied, then write_timeout".to_owned()
                    }
                    _ => {
                        // Hanging past the lease; in long runs now and then past the
                        // driver's 30 s request timeout.
                        let delay = if self.faults.len() >= 30 && self.rng.chance(0.15) {
                            Duration::from_secs(32)
                        } else {
                            lease.mul_f64(self.rng.between(1.5, 3.0))
                        };
                        tail = delay.as_millis() as i64;
                        rule = rule.respond(FaultReaction::Delay(delay));
                        format!("delay {:.1}s", delay.as_secs_f64())
                    }
                };
                let scope = if self.rng.chance(0.5) {
                    let node = 1 + self.rng.below(self.nodes);
                    rule = rule.on_node(node);
                    format!("node {node}")
                } else {
                    "all nodes".to_owned()
                };
                let d = Duration::from_secs_f64(self.rng.between(2.0, 4.0)).min(slot);
                let at = now_ms();
                let hits = self.source.add_fault(rule);
                tokio::time::sleep(d).await;
                self.source.clear_faults();
                let until = now_ms();
                self.record(
                    kind,
                    at,
                    until,
                    tail + 1000 * LEASE_SECS as i64,
                    target,
                    format!("{what} on {scope}, {} requests hit", hits.get()),
                );
            }
            Kind::Node => {
                let node = 1 + self.rng.below(self.nodes);
                let d = Duration::from_secs_f64(self.rng.between(2.0, 4.0)).min(slot);
                let at = now_ms();
                self.source.stop_node(node).await?;
                tokio::time::sleep(d).await;
                self.source.start_node(node).await?;
                let until = now_ms();
                self.record(
                    kind,
                    at,
                    until,
                    2000 * LEASE_SECS as i64,
                    &format!("node{node}"),
                    "stopped and restarted".to_owned(),
                );
            }
            Kind::Generation => {
                let at = now_ms();
                let generation = self.source.add_node().await?;
                self.nodes += 1;
                let nodes = self.nodes;
                self.record(
                    kind,
                    at,
                    at,
                    0,
                    &format!("node{nodes}"),
                    format!("added; generation {generation}, {} units", nodes * VNODES),
                );
            }
        }
        Ok(())
    }

    /// The name and stdout of every printer started.
    fn printers(&self) -> impl Iterator<Item = (&str, &std::path::Path)> {
        self.outputs
            .iter()
            .filter(|(name, ..)| name.starts_with('p'))
            .map(|(name, out, _)| (name.as_str(), out.as_path()))
    }

    fn fault_log(&self) -> String {
        self.faults
            .iter()
            .map(|f| f.line(self.t0))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Writes a line to the process's stderr, past the test harness's capture.
fn report(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_groups_survive_a_hundred_mixed_faults() -> anyhow::Result<()> {
    // Six programs and a 6-node cluster: the heaviest test; no timing-sensitive one beside it.
    let _alone = timing_sensitive().await;
    setup_tracing();
    if !embedded_only(
        "two_groups_survive_a_hundred_mixed_faults",
        "kills nodes and injects faults",
    ) {
        return Ok(());
    }
    let wall = Instant::now();
    let settings = Settings::from_env()?;
    report(&format!(
        "chaos: seed={} faults={} seconds={:.0} (CHAOS_SEED, CHAOS_FAULTS, CHAOS_SECONDS)",
        settings.seed, settings.faults, settings.seconds
    ));
    let mut rng = Rng(settings.seed);
    let kinds = schedule(&mut rng, settings.faults);
    let source = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .vnodes_per_node(VNODES)
        .generation_delay(Duration::from_secs(2))
        .seed(settings.seed)
        .start()
        .await?;
    let destination = EmbeddedCluster::builder().nodes(1).start().await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 3).await?;
    create_keyspace(&d, &ks, 1).await?;
    let schema = "(pk int, seq int, v text, PRIMARY KEY (pk, seq))";
    exec(
        &s,
        format!("CREATE TABLE {ks}.t {schema} WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    exec(&d, format!("CREATE TABLE {ks}.t {schema}")).await?;
    let start = (Utc::now() - chrono::TimeDelta::seconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let workload = Workload::start(s.clone(), &ks);
    let mut chaos = Chaos {
        source,
        destination,
        ks: ks.clone(),
        start,
        dir: TempDir::new(),
        groups: [
            Group {
                name: "p",
                binary: env!("CARGO_BIN_EXE_e2e-printer"),
                members: Vec::new(),
                next: 0,
            },
            Group {
                name: "r",
                binary: env!("CARGO_BIN_EXE_e2e-replicator"),
                members: Vec::new(),
                next: 0,
            },
        ],
        ended: Vec::new(),
        outputs: Vec::new(),
        program_log: std::env::var("CHAOS_PROGRAM_LOG").ok(),
        stopping: Vec::new(),
        faults: Vec::new(),
        rng,
        nodes: 3,
        t0: now_ms(),
    };
    let result = run(&mut chaos, &settings, &kinds, &s, &d, workload, wall).await;
    if let Err(e) = &result {
        let dir = chaos.dir.path().display().to_string();
        report(&format!(
            "chaos: FAILED seed={}; outputs kept in {dir}; faults:\n{}",
            settings.seed,
            chaos.fault_log()
        ));
        // The outputs stay for a look.
        std::mem::forget(std::mem::replace(&mut chaos.dir, TempDir::new()));
        return Err(anyhow::anyhow!(
            "chaos run with CHAOS_SEED={} failed (outputs in {dir}): {e:#}",
            settings.seed
        ));
    }
    if std::env::var_os("CHAOS_KEEP").is_some() {
        report(&format!(
            "chaos: outputs kept in {}",
            chaos.dir.path().display()
        ));
        std::mem::forget(std::mem::replace(&mut chaos.dir, TempDir::new()));
    }
    drop_keyspace(&s, &ks).await?;
    // The sessions go first: they would log every node's shutdown.
    drop((s, d));
    chaos.source.shutdown().await;
    chaos.destination.shutdown().await;
    Ok(())
}

async fn run(
    chaos: &mut Chaos,
    settings: &Settings,
    kinds: &[Kind],
    s: &Arc<Session>,
    d: &Arc<Session>,
    workload: Workload,
    wall: Instant,
) -> anyhow::Result<()> {
    let ks = chaos.ks.clone();
    for g in 0..2 {
        for _ in 0..MEMBERS {
            chaos.spawn(g)?;
        }
    }
    let units = 3 * VNODES;
    for g in 0..2 {
        let what = format!(
            "group {} balanced over {MEMBERS} members",
            chaos.groups[g].name
        );
        wait_balanced(&what, &mut chaos.groups[g].members, Some(units)).await?;
    }
    let balanced_after = wall.elapsed();
    chaos.t0 = now_ms();
    let run_start = Instant::now();
    let slot = Duration::from_secs_f64(settings.seconds / kinds.len() as f64);
    for (i, kind) in kinds.iter().enumerate() {
        let due = run_start + slot.mul_f64(i as f64) + slot.mul_f64(chaos.rng.between(0.0, 0.2));
        tokio::time::sleep_until(due.into()).await;
        chaos.check_running()?;
        chaos
            .fault(*kind, slot.mul_f64(0.9))
            .await
            .with_context(|| format!("fault {i} ({})", kind.name()))?;
    }
    tokio::time::sleep_until((run_start + slot.mul_f64(kinds.len() as f64)).into()).await;
    chaos.source.clear_faults();
    chaos.check_running()?;
    let chaos_time = run_start.elapsed();

    // The workload stops; every change of the log must be printed, and replicated.
    let (rounds, retries) = workload.finish().await?;
    anyhow::ensure!(rounds > 10, "only {rounds} rounds written");
    let log = log_changes(s, &ks).await?;
    let mut tails: HashMap<String, Tail> = HashMap::new();
    let truth: BTreeSet<(String, String)> = log
        .iter()
        .map(|(st, t, ..)| (st.clone(), t.clone()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(180);
    let missing = loop {
        chaos.check_running()?;
        let mut printed: BTreeSet<(String, String)> = BTreeSet::new();
        for (name, out) in chaos.printers() {
            let tail = tails.entry(name.to_owned()).or_default();
            tail.refresh(name, out)?;
            printed.extend(
                tail.deliveries
                    .iter()
                    .map(|d| (d.stream.to_string(), d.time.to_string())),
            );
        }
        let missing = truth.difference(&printed).count();
        if missing == 0 || Instant::now() > deadline {
            break missing;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let printed_after = wall.elapsed();
    let deadline = Instant::now() + Duration::from_secs(180);
    let diff = loop {
        chaos.check_running()?;
        let diff = differences(&snapshot(s, &ks, "t").await?, &snapshot(d, &ks, "t").await?);
        if diff.is_empty() || Instant::now() > deadline {
            break diff;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let converged_after = wall.elapsed();

    // Every member still running stops gracefully, with exit code 0.
    let mut stops = Vec::new();
    for g in &mut chaos.groups {
        for mut m in g.members.drain(..) {
            m.signal("TERM")?;
            stops.push(tokio::spawn(async move {
                let code = m.exit_code(Duration::from_secs(90)).await;
                (m, code, now_ms())
            }));
        }
    }
    let mut exits = Vec::new();
    for h in std::mem::take(&mut chaos.stopping).into_iter().chain(stops) {
        let (m, code, at) = h.await?;
        exits.push((m.name.clone(), code.map_err(|e| format!("{e:#}")), m.err()));
        // A graceful stop during the run: when it ended.
        if let Some(f) = chaos
            .faults
            .iter_mut()
            .find(|f| f.kind == Kind::Stop && f.target == m.name)
        {
            f.until = at;
        }
        chaos.ended.push(m);
    }
    let mut failures: Vec<String> = Vec::new();
    if missing > 0 {
        failures.push(format!(
            "{missing} of {} changes of the log were never printed in 180 s",
            truth.len()
        ));
    }
    if !diff.is_empty() {
        failures.push(format!(
            "the destination differs from the source after 180 s: {} differences, e.g. {:?}",
            diff.len(),
            &diff[..diff.len().min(10)]
        ));
    }
    for (name, code, err) in &exits {
        if !matches!(code, Ok(Some(0))) {
            let tail: Vec<&str> = err.lines().rev().take(15).collect();
            failures.push(format!(
                "{name} did not exit 0 on SIGTERM ({code:?}); its last log lines: {:?}",
                tail
            ));
        }
    }

    // The checker.
    let mut deliveries = Vec::new();
    let mut units = Vec::new();
    let mut stalls: HashMap<String, Vec<i64>> = HashMap::new();
    for (name, out, err) in &chaos.outputs {
        if !name.starts_with('p') {
            continue;
        }
        let tail = tails.entry(name.clone()).or_default();
        tail.refresh(name, out)?;
        deliveries.extend(tail.deliveries.iter().cloned());
        let err = std::fs::read_to_string(err)?;
        units.extend(unit_lines(&err).with_context(|| name.clone())?);
        stalls.insert(name.clone(), stall_lines(&err));
    }
    let summary = match check(&deliveries, &units, &stalls, &log, rounds, &chaos.faults) {
        Ok(s) => Some(s),
        Err(problems) => {
            failures.extend(problems);
            None
        }
    };
    let mut kinds_done: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &chaos.faults {
        *kinds_done.entry(f.kind.name()).or_default() += 1;
    }
    let fmt_map = |m: &BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    eprintln!(
        "chaos: faults (seed {}):\n{}",
        settings.seed,
        chaos.fault_log()
    );
    if let Some(sm) = &summary {
        report(&format!(
            "chaos: seed={} faults={} kinds={{{}}} rounds={rounds} changes={} deliveries={} \
             repeats={} by_cause={{{}}} in_flight={} members={} write_retries={retries} \
             wall={:.0}s (balanced {:.0}s, faults {:.0}s, all printed {:.0}s, converged {:.0}s)",
            settings.seed,
            chaos.faults.len(),
            fmt_map(&kinds_done),
            sm.changes,
            sm.deliveries,
            sm.repeats,
            fmt_map(&sm.by_cause),
            sm.in_flight,
            chaos.ended.len(),
            wall.elapsed().as_secs_f64(),
            balanced_after.as_secs_f64(),
            chaos_time.as_secs_f64(),
            printed_after.as_secs_f64(),
            converged_after.as_secs_f64(),
        ));
        report(&format!(
            "chaos: repeats by member and cause: {:?}; in flight after SIGCONT: {:?}",
            sm.by_member, sm.in_flight_by_member
        ));
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("\n"));
    }
    Ok(())
}
