//! Early reads in the programs (on by default): rows arrive within a second of their write,
//! and a *late* write — one that becomes visible after the early read passed its time, here
//! a write `USING TIMESTAMP` 1 or 2 s in the past — is delivered by the confirmation of its
//! window, a safety interval (3 s here) behind now, flagged late.
//!
//! - A printer (the `e2e-printer` process) killed with SIGKILL while on-time and late writes
//!   go on, then restarted from its checkpoints: every write is printed by one of the two runs,
//!   none twice by one run, only late writes are flagged late, and the second run resumes from
//!   the checkpoints (it prints nothing before them).
//! - A replicator (the `e2e-replicator` process) killed with SIGKILL while on-time and late
//!   updates and deletes of the same rows go on, then restarted: the destination ends equal
//!   to the source, and a late write that lost to a newer one on the source lost on the
//!   destination too, though the replicator applied it after the newer one.
//! - The printer's flag: ` (late)` in the pretty format, `"late": true` in `--format change`
//!   (`false` for an on-time write).
//!
//! The two kill tests hold [`timing_sensitive`]: each late write must become visible within
//! the safety interval of its timestamp (within 1 or 2 s of being sent), or no reader can be
//! held to deliver it; each checks that it did.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla::value::CqlValue;
use scylla_cdc_test_utils::metrics_scrape::{free_local_port, scrape, value_of};
use scylla_cdc_test_utils::{setup_tracing, unique_keyspace_name};
use serde_json::Value;

use crate::support::*;

/// The programs' `--safety-interval` here: the confirmation of a window runs once it is this
/// much behind now, so a write 1 or 2 s in the past is still delivered.
const SAFETY: &str = "3";
const SAFETY_US: i64 = 3_000_000;
/// The programs' default `--early-read-lag`: the early reads read up to this much behind now.
const LAG_US: i64 = 100_000;
/// The furthest in the past a late write's timestamp is.
const MOST_PAST_MS: i64 = 2_000;

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Microseconds since the epoch, now.
fn now_us() -> i64 {
    Utc::now().timestamp_micros()
}

/// Waits until a write [`MOST_PAST_MS`] in the past falls within the cluster's first CDC
/// generation, which operates from the cluster's start (`up` is after it): Scylla refuses a
/// write older than the generation of its time.
async fn generation_old_enough(up: DateTime<Utc>) -> anyhow::Result<()> {
    let old_enough = up + TimeDelta::milliseconds(MOST_PAST_MS + 100);
    wait_for(
        "the first CDC generation to be old enough",
        Duration::from_secs(10),
        || async move { Ok(Utc::now() > old_enough) },
    )
    .await
}

/// One acknowledged write of a [`Writer`].
#[derive(Debug, Clone)]
struct Write {
    /// Its number (the writer's statements are numbered from 0).
    n: i32,
    /// How far in the past its `USING TIMESTAMP` was, in ms (0: none, an on-time write).
    past_ms: i64,
    /// Its `USING TIMESTAMP` (µs), if any.
    timestamp: Option<i64>,
    /// When it was sent (µs, this machine's clock, which the clusters and programs share).
    sent: i64,
    /// When it was acknowledged (µs): its log row was visible by then.
    acked: i64,
}

/// Fails unless `what`, a late write of timestamp `timestamp` (µs), was acknowledged at
/// `acked` within the safety interval of its timestamp: only then was it visible before the
/// confirmation of its window, and can a reader be held to deliver it (the premise of the
/// tests here, not a check of the programs).
fn visible_in_time(what: &str, timestamp: i64, acked: i64) -> anyhow::Result<()> {
    anyhow::ensure!(
        acked - timestamp < SAFETY_US,
        "{what} was acknowledged {} ms after its timestamp, past the safety interval: the \
         machine is too loaded for this test",
        (acked - timestamp) / 1000
    );
    Ok(())
}

impl Write {
    /// [`visible_in_time`], for a late write.
    fn check_in_time(&self) -> anyhow::Result<()> {
        match self.timestamp {
            Some(ts) => visible_in_time(&format!("write {}", self.n), ts, self.acked),
            None => Ok(()),
        }
    }
}

/// Writes statements `0, 1, 2, ...` one after the other, 20 ms apart, until stopped:
/// statement `n` is `statement(n, using)`, where `using` is ` USING TIMESTAMP <now - past>`
/// when `past_ms(n)` is not 0 (a late write), else empty (an on-time write).
struct Writer {
    written: Arc<AtomicI32>,
    stop: Arc<AtomicBool>,
    /// The error the writer stopped on, if it failed.
    failed: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<anyhow::Result<Vec<Write>>>,
}

impl Writer {
    fn start(
        session: Arc<Session>,
        past_ms: fn(i32) -> i64,
        statement: impl Fn(i32, &str) -> String + Send + 'static,
    ) -> Self {
        let written = Arc::new(AtomicI32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let failed = Arc::new(Mutex::new(None));
        let (count, stopped, error) = (written.clone(), stop.clone(), failed.clone());
        let task = tokio::spawn(async move {
            let mut writes = Vec::new();
            let mut n = 0;
            while !stopped.load(Ordering::Relaxed) {
                let past = past_ms(n);
                let sent = now_us();
                let timestamp = (past > 0).then(|| sent - past * 1000);
                let using = timestamp
                    .map(|t| format!(" USING TIMESTAMP {t}"))
                    .unwrap_or_default();
                if let Err(e) = exec(&session, statement(n, &using)).await {
                    *error.lock().expect("the writer's error") = Some(format!("{e:#}"));
                    return Err(e);
                }
                writes.push(Write {
                    n,
                    past_ms: past,
                    timestamp,
                    sent,
                    acked: now_us(),
                });
                n += 1;
                count.store(n, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(writes)
        });
        Self {
            written,
            stop,
            failed,
            task,
        }
    }

    /// How many statements were written so far.
    fn written(&self) -> i32 {
        self.written.load(Ordering::Relaxed)
    }

    /// Fails with the writer's error if it failed.
    fn check(&self) -> anyhow::Result<()> {
        match &*self.failed.lock().expect("the writer's error") {
            Some(e) => anyhow::bail!("the writer failed: {e}"),
            None => Ok(()),
        }
    }

    /// Waits until `n` statements were written.
    async fn wait_written(&self, n: i32) -> anyhow::Result<()> {
        wait_for("the writer", Duration::from_secs(30), || async move {
            self.check()?;
            Ok(self.written() >= n)
        })
        .await
    }

    /// Stops writing; every write, in order.
    async fn finish(self) -> anyhow::Result<Vec<Write>> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await?
    }
}

/// A row a `--format json` printer printed (the table `(pk, ck, past_ms)`).
#[derive(Debug, Clone)]
struct Printed {
    /// `ck`: the number of the write.
    ck: i32,
    /// `cdc$time`, in µs.
    time: i64,
    stream: String,
    late: bool,
}

/// The rows of a `--format json` output. A killed printer's last line may be cut: text after
/// the last newline is left out when `killed`.
fn printed(out: &str, killed: bool) -> anyhow::Result<Vec<Printed>> {
    let complete = match (killed, out.rfind('\n')) {
        (true, Some(i)) => &out[..=i],
        (true, None) => "",
        (false, _) => out,
    };
    complete
        .lines()
        .map(|line| {
            let v: Value =
                serde_json::from_str(line).with_context(|| format!("not a JSON line: {line}"))?;
            let time = v["time"].as_str().context("no time")?;
            Ok(Printed {
                ck: v["columns"]["ck"]
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .with_context(|| format!("no ck: {line}"))?,
                time: DateTime::parse_from_rfc3339(time)?.timestamp_micros(),
                stream: v["stream_id"].as_str().context("no stream_id")?.to_owned(),
                late: match v.get("late") {
                    None => false,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => anyhow::bail!("\"late\": {other} in {line}"),
                },
            })
        })
        .collect()
}

/// The writes one run printed, each once; fails naming the writes it printed twice.
fn once_each(run: &str, rows: &[Printed]) -> BTreeSet<i32> {
    let mut seen = BTreeSet::new();
    let twice: Vec<i32> = rows
        .iter()
        .filter(|r| !seen.insert(r.ck))
        .map(|r| r.ck)
        .collect();
    assert!(twice.is_empty(), "{run} printed writes twice: {twice:?}");
    seen
}

/// Per stream (`0x…`), the checkpoint the printer saved in `ks.progress` (µs).
async fn stream_checkpoints(s: &Session, ks: &str) -> anyhow::Result<BTreeMap<String, i64>> {
    let rows = s
        .query_unpaged(
            format!("SELECT kind, stream_id, time FROM {ks}.progress"),
            (),
        )
        .await?
        .into_rows_result()?;
    let mut checkpoints = BTreeMap::new();
    for row in rows.rows::<(String, Vec<u8>, Option<DateTime<Utc>>)>()? {
        let (kind, stream, time) = row?;
        if let (true, Some(time)) = (kind == "stream", time) {
            let hex: String = stream.iter().map(|b| format!("{b:02x}")).collect();
            checkpoints.insert(format!("0x{hex}"), time.timestamp_micros());
        }
    }
    Ok(checkpoints)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_printer_loses_no_late_write() -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    setup_tracing();
    let c = cluster(1).await?;
    let up = Utc::now();
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, past_ms int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    // Early reads are on by default; checkpoints after every window (of 1 s).
    let mut args = printer_args(&hosts(&c), &ks, "t");
    set_option(&mut args, "--safety-interval", SAFETY);
    args.extend(strings(&[
        "--start",
        &rfc3339(up),
        "--format",
        "json",
        "--checkpoint-table",
        &format!("{ks}.progress"),
        "--checkpoint-interval",
        "0",
    ]));
    let dir = TempDir::new();
    let bin = env!("CARGO_BIN_EXE_e2e-printer");
    let mut run1 = Process::spawn(bin, "run1", &args, &dir)?;

    // Write `n` is row (n % 5, n): on time, or 1 s or 2 s in the past (column past_ms).
    generation_old_enough(up).await?;
    let past_ms = |n: i32| [0, 1_000, 0, MOST_PAST_MS][n as usize % 4];
    let table = format!("{ks}.t");
    let writer = Writer::start(s.clone(), past_ms, move |n, using| {
        format!(
            "INSERT INTO {table} (pk, ck, past_ms) VALUES ({}, {n}, {}){using}",
            n % 5,
            past_ms(n)
        )
    });

    // Run 1 reads early, and its confirmations deliver late writes (20 of them: a few
    // seconds of writes confirmed and checkpointed): then kill -9, the writes going on.
    wait_for("run 1 to print late rows", Duration::from_secs(30), || {
        let mut check = || -> anyhow::Result<bool> {
            run1.check_running()?;
            writer.check()?;
            let late = printed(&run1.out(), true)?
                .iter()
                .filter(|r| r.late)
                .count();
            Ok(late >= 20)
        };
        std::future::ready(check())
    })
    .await?;
    run1.kill9().await?;
    writer.wait_written(writer.written() + 40).await?;
    let writes = writer.finish().await?;
    for w in &writes {
        w.check_in_time()?;
    }
    let checkpoints = stream_checkpoints(&s, &ks).await?;

    // Run 2 resumes from the checkpoints, and ends by itself after the last write.
    let last = writes.iter().map(|w| w.acked).max().context("no writes")?;
    let end = DateTime::<Utc>::from_timestamp_micros(last + 100_000).context("end")?;
    args.extend(["--end".to_owned(), rfc3339(end)]);
    let mut run2 = Process::spawn(bin, "run2", &args, &dir)?;
    assert_eq!(
        run2.exit_code(Duration::from_secs(60)).await?,
        Some(0),
        "{}",
        run2.err()
    );

    let first = printed(&run1.out(), true)?;
    let second = printed(&run2.out(), false)?;
    let (a, b) = (once_each("run 1", &first), once_each("run 2", &second));
    let written: BTreeSet<i32> = writes.iter().map(|w| w.n).collect();
    let all: BTreeSet<i32> = a.union(&b).copied().collect();
    let missing: Vec<&i32> = written.difference(&all).collect();
    let unknown: Vec<&i32> = all.difference(&written).collect();
    assert!(missing.is_empty(), "writes never printed: {missing:?}");
    assert!(unknown.is_empty(), "printed, never written: {unknown:?}");

    // Only late writes are flagged late, or an on-time write whose log row may have become
    // visible after the early read passed its time: one acknowledged more than the lag after
    // its timestamp.
    let mut slow_on_time = Vec::new();
    for row in first.iter().filter(|r| r.late) {
        let w = &writes[row.ck as usize];
        if w.past_ms == 0 {
            assert!(
                w.acked - row.time > LAG_US,
                "run 1 flagged on-time write {} late, though it was acknowledged {} µs after \
                 its timestamp: {row:?}",
                w.n,
                w.acked - row.time
            );
            slow_on_time.push(w.n);
        }
    }
    let late_flags = first.iter().filter(|r| r.late).count();
    // Everything run 2 prints was visible when it started: nothing is late.
    let late_in_run2: Vec<&Printed> = second.iter().filter(|r| r.late).collect();
    assert!(
        late_in_run2.is_empty(),
        "run 2 flagged rows late that were written before it started: {late_in_run2:?}"
    );

    // Run 2 resumed from the checkpoints run 1 saved: it printed no row before the
    // checkpoint of its stream, and there were such rows.
    let behind = |r: &&Printed| checkpoints.get(&r.stream).is_some_and(|&cp| r.time < cp);
    let again: Vec<&Printed> = second.iter().filter(behind).collect();
    assert!(
        again.is_empty(),
        "run 2 printed rows before its stream's checkpoint ({checkpoints:?}): {again:?}"
    );
    let checkpointed = first.iter().filter(behind).count();
    assert!(
        checkpointed > 0 && b.len() < written.len(),
        "run 1 saved no checkpoint past a row ({checkpoints:?}); run 2 printed {} of {}",
        b.len(),
        written.len()
    );
    eprintln!(
        "{} writes ({} late); run 1 printed {} ({late_flags} flagged late, of which on-time \
         writes acknowledged after the lag: {slow_on_time:?}), run 2 printed {} ({} of them \
         printed by run 1 too)",
        writes.len(),
        writes.iter().filter(|w| w.past_ms > 0).count(),
        a.len(),
        b.len(),
        a.intersection(&b).count()
    );
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}

/// Rows of the replicator test's table `(pk, ck, v, w, x)`.
const KEYS: i32 = 12;

/// Waits until the replicator `program` (serving its metrics on `metrics`) has delivered
/// late rows, while `writer` writes: the confirmation found changes its early reads missed,
/// and applied them after newer ones.
async fn wait_late_rows(
    program: &mut Process,
    metrics: std::net::SocketAddr,
    writer: &Writer,
) -> anyhow::Result<()> {
    let what = format!("{} to apply late rows", program.name);
    wait_for(&what, Duration::from_secs(30), || {
        let running = program.check_running().and_then(|()| writer.check());
        async move {
            running?;
            // Not answering yet: still starting.
            let Ok(text) = scrape(metrics).await else {
                return Ok(false);
            };
            Ok(value_of(&text, "scylla_cdc_late_rows_total", "").is_some_and(|n| n > 0.0))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicator_loses_no_late_write() -> anyhow::Result<()> {
    let _alone = timing_sensitive().await;
    setup_tracing();
    let pair = Pair::start(1).await?;
    let up = Utc::now();
    let (s, d, ks, dest_ks) = (&pair.s, &pair.d, pair.ks.as_str(), pair.dest_ks.as_str());
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, w text, x int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let dir = TempDir::new();
    let bin = env!("CARGO_BIN_EXE_e2e-replicator");
    // Early reads are on by default; checkpoints (the default table) after every window.
    let args = |metrics: std::net::SocketAddr| {
        let mut a = pair.replicator_args("t");
        set_option(&mut a, "--safety-interval", SAFETY);
        a.extend(strings(&[
            "--create-destination-table",
            "--start",
            &rfc3339(up),
            "--metrics-addr",
            &metrics.to_string(),
        ]));
        a
    };

    // Rounds of one write to each of KEYS rows (partition ck % 3), in cycles of three:
    // - on time: v = 10c + 2 (and w) in cycle c (the first one inserts the row, with x);
    // - 2 s in the past: v = 10c + 1, older than the on-time v of the round before, so it
    //   loses to it wherever it is applied after it;
    // - 1 s in the past: a row deletion (even rows), the deletion of partition 0 (row 0),
    //   or x = c (odd rows): each wins over what is older than it, loses to what is newer.
    let past_ms = |n: i32| [0, MOST_PAST_MS, 1_000][(n / KEYS % 3) as usize];
    let table = format!("{ks}.t");
    let statement = move |n: i32, using: &str| {
        let (key, cycle) = (n % KEYS, n / (3 * KEYS));
        let (pk, ck) = (key % 3, key);
        let row = format!("pk = {pk} AND ck = {ck}");
        match (n / KEYS % 3, key) {
            (0, _) if cycle == 0 => format!(
                "INSERT INTO {table} (pk, ck, v, w, x) VALUES ({pk}, {ck}, 2, 'c0', 0){using}"
            ),
            (0, _) => format!(
                "UPDATE {table}{using} SET v = {}, w = 'c{cycle}' WHERE {row}",
                10 * cycle + 2
            ),
            (1, _) => format!(
                "UPDATE {table}{using} SET v = {}, w = 'late' WHERE {row}",
                10 * cycle + 1
            ),
            (_, 0) => format!("DELETE FROM {table}{using} WHERE pk = {pk}"),
            (_, k) if k % 2 == 0 => format!("DELETE FROM {table}{using} WHERE {row}"),
            _ => format!("UPDATE {table}{using} SET x = {cycle} WHERE {row}"),
        }
    };

    let metrics = free_local_port()?;
    let mut run1 = Process::spawn(bin, "run1", &args(metrics), &dir)?;
    generation_old_enough(up).await?;
    let writer = Writer::start(s.clone(), past_ms, statement);
    wait_late_rows(&mut run1, metrics, &writer).await?;
    // kill -9 mid-stream; two more cycles are written while no replicator runs.
    run1.kill9().await?;
    writer.wait_written(writer.written() + 6 * KEYS).await?;
    // Run 2 resumes from the checkpoints, and applies late rows of its own before the
    // writes stop.
    let metrics = free_local_port()?;
    let mut run2 = Process::spawn(bin, "run2", &args(metrics), &dir)?;
    wait_late_rows(&mut run2, metrics, &writer).await?;
    let writes = writer.finish().await?;
    for w in &writes {
        w.check_in_time()?;
    }
    // Each write 2 s in the past is older than the on-time write of its row in the round
    // before: it loses to it on the source.
    for w in writes.iter().filter(|w| w.past_ms == MOST_PAST_MS) {
        let newer = &writes[(w.n - KEYS) as usize];
        assert!(
            w.timestamp.is_some_and(|t| t < newer.sent),
            "write {} is not older than write {}: {w:?}, {newer:?}",
            w.n,
            newer.n
        );
    }

    wait_converged(&mut run2, s, d, ks, dest_ks, "t", Duration::from_secs(60)).await?;
    // What a user sees on the destination: the on-time values (v = 10c + 2), never the late
    // ones that lost to them (v = 10c + 1).
    let rows = d
        .query_unpaged(format!("SELECT ck, v FROM {dest_ks}.t"), ())
        .await?
        .into_rows_result()?;
    let mut values = BTreeMap::new();
    for row in rows.rows::<(i32, Option<CqlValue>)>()? {
        let (ck, v) = row?;
        values.insert(ck, v);
    }
    let lost: Vec<(&i32, &Option<CqlValue>)> = values
        .iter()
        .filter(|(_, v)| matches!(v, Some(CqlValue::Int(v)) if v % 10 == 1))
        .collect();
    assert!(
        lost.is_empty(),
        "late writes overwrote newer ones on the destination: {lost:?}"
    );
    assert!(
        values
            .values()
            .any(|v| matches!(v, Some(CqlValue::Int(v)) if v % 10 == 2)),
        "{values:?}"
    );
    assert_eq!(
        run2.terminate(Duration::from_secs(30)).await?,
        Some(0),
        "{}",
        run2.err()
    );
    eprintln!(
        "{} writes ({} late); the destination equals the source ({} rows)",
        writes.len(),
        writes.iter().filter(|w| w.past_ms > 0).count(),
        values.len()
    );
    pair.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_printer_says_which_rows_are_late() -> anyhow::Result<()> {
    setup_tracing();
    let c = cluster(1).await?;
    let up = Utc::now();
    let s = c.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 1).await?;
    exec(
        &s,
        format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await?;
    let args = |format: &str| {
        let mut a = printer_args(&hosts(&c), &ks, "t");
        set_option(&mut a, "--safety-interval", SAFETY);
        a.extend(strings(&["--format", format]));
        a
    };
    let (pretty, pretty_out) = spawn_printer(args("pretty"));
    let (change, change_out) = spawn_printer(args("change"));
    let changes = |v: &str| -> anyhow::Result<Vec<Value>> {
        let all: Vec<Value> = change_out
            .contents()
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        Ok(all.into_iter().filter(|c| c["after"]["v"] == v).collect())
    };
    let block = |v: &str| -> Option<String> {
        let text = pretty_out.contents();
        let found = text
            .split("\n\n")
            .find(|b| b.contains(&format!("v = '{v}'")));
        found.map(str::to_owned)
    };

    // Both printers print an on-time write early: their early reads have passed its time.
    generation_old_enough(up).await?;
    exec(
        &s,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 'on time')"),
    )
    .await?;
    wait_for(
        "the on-time write to be printed",
        Duration::from_secs(20),
        || {
            let printed =
                block("on time").is_some() && changes("on time").is_ok_and(|c| !c.is_empty());
            async move { Ok(printed) }
        },
    )
    .await?;
    let on_time = changes("on time")?
        .first()
        .and_then(|c| c["source"]["ts_us"].as_i64())
        .context("no ts_us")?;

    // A write 2 s in the past (and no later than the on-time one, which both have printed):
    // late for both, delivered by their confirmations.
    let timestamp = (now_us() - MOST_PAST_MS * 1000).min(on_time);
    exec(
        &s,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (2, 1, 'late') USING TIMESTAMP {timestamp}"),
    )
    .await?;
    visible_in_time("the late write", timestamp, now_us())?;
    wait_for(
        "the late write to be printed",
        Duration::from_secs(20),
        || {
            let printed = block("late").is_some() && changes("late").is_ok_and(|c| !c.is_empty());
            async move { Ok(printed) }
        },
    )
    .await?;

    let header = |v: &str| {
        let b = block(v).unwrap_or_default();
        b.lines().next().unwrap_or_default().to_owned()
    };
    assert!(
        header("on time").contains(&format!("{ks}.t RowInsert ttl=none")),
        "{}",
        pretty_out.contents()
    );
    assert!(
        header("late").contains(&format!("{ks}.t RowInsert (late) ttl=none")),
        "{}",
        pretty_out.contents()
    );
    let (on_time, late) = (changes("on time")?, changes("late")?);
    assert_eq!(on_time.len(), 1, "{on_time:?}");
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(on_time[0]["late"], Value::Bool(false), "{}", on_time[0]);
    assert_eq!(late[0]["late"], Value::Bool(true), "{}", late[0]);
    assert_eq!(
        late[0]["source"]["ts_us"].as_i64(),
        Some(timestamp),
        "{}",
        late[0]
    );
    // A stop confirms up to the early point first: both at once.
    let (pretty, change) = tokio::join!(
        pretty.stop(Duration::from_secs(30)),
        change.stop(Duration::from_secs(30))
    );
    assert_eq!(pretty?, Ok(()));
    assert_eq!(change?, Ok(()));
    drop_keyspace(&s, &ks).await?;
    c.shutdown().await;
    Ok(())
}
