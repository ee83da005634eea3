//! Exactly once under kill -9: the program is killed again and again while a stream of changes
//! is written (some of them late: with a timestamp in the past, delivered by the early reads'
//! confirmation); Kafka's own Java consumer, `read_committed`, must then see every change
//! exactly once, each key's changes in write order. Without transactions: every change at
//! least once.
//!
//! Sizes: `KAFKA_CHANGES` (default 100000) changes and `KAFKA_KILLS` (default 50) kills.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla_cdc_test_utils::{TestCluster, setup_tracing};
use scylla_emulator::EmbeddedCluster;
use serde_json::Value;
use uuid::Uuid;

use crate::support::*;

pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Every `LATE_EVERY`-th change is written 1.5 s in the past, to a key only late changes use.
const LATE_EVERY: usize = 97;
/// Keys of the on-time changes.
const KEYS: usize = 200;

pub(crate) struct Written {
    /// (pk, v) of every change written.
    pub(crate) changes: Vec<(i32, i32)>,
}

/// Writes `n` changes over about `span`: rounds of [`KEYS`] concurrent inserts (one per key,
/// so each key's writes are sequential), `v` numbering the changes; every [`LATE_EVERY`]-th
/// goes to its own key `100000 + v` with a timestamp 1.5 s in the past.
pub(crate) async fn write_changes(
    session: Arc<Session>,
    ks: String,
    n: usize,
    span: Duration,
    start_micros: i64,
) -> anyhow::Result<Written> {
    // Client-side timestamps: now for on-time changes, 1.5 s ago for late ones.
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, ck, v) VALUES (?, 0, ?) USING TIMESTAMP ?"
        ))
        .await?;
    // A late write cannot go before the first stream generation (there is no stream then).
    let generations = session
        .query_unpaged(
            {
                let mut q = scylla::statement::unprepared::Statement::new(
                    "SELECT time FROM system_distributed.cdc_generation_timestamps \
                     WHERE key = 'timestamps'",
                );
                q.set_consistency(scylla::statement::Consistency::One);
                q
            },
            (),
        )
        .await?
        .into_rows_result()?;
    let first_generation = generations
        .rows::<(chrono::DateTime<chrono::Utc>,)>()?
        .filter_map(Result::ok)
        .map(|(t,)| t.timestamp_micros())
        .min()
        .context("no CDC generation")?;
    let started = Instant::now();
    let mut written = Vec::with_capacity(n);
    let mut v = 0usize;
    while v < n {
        let round_end = (v + KEYS).min(n);
        let mut futures = Vec::with_capacity(KEYS);
        for i in v..round_end {
            let value = i32::try_from(i)?;
            if i % LATE_EVERY == LATE_EVERY - 1 {
                let pk = 100_000 + value;
                let ts = (chrono::Utc::now().timestamp_micros() - 1_500_000)
                    .max(first_generation.max(start_micros) + 1000);
                written.push((pk, value));
                futures.push(session.execute_unpaged(&insert, (pk, value, ts)));
            } else {
                let pk = i32::try_from(i % KEYS)?;
                written.push((pk, value));
                let ts = chrono::Utc::now().timestamp_micros();
                futures.push(session.execute_unpaged(&insert, (pk, value, ts)));
            }
        }
        for r in futures::future::join_all(futures).await {
            r.context("writing a change")?;
        }
        v = round_end;
        // Pace the writes over the span (the kills happen meanwhile).
        let due = span.mul_f64(v as f64 / n as f64);
        let elapsed = started.elapsed();
        if due > elapsed {
            tokio::time::sleep(due - elapsed).await;
        }
    }
    Ok(Written { changes: written })
}

/// The write time (µs) of a timeuuid.
fn uuid_micros(u: &Uuid) -> Option<i64> {
    let (secs, nanos) = u.get_timestamp()?.to_unix();
    Some(secs as i64 * 1_000_000 + i64::from(nanos / 1000))
}

struct Run {
    test: &'static str,
    transactions: bool,
    changes: usize,
    kills: usize,
}

async fn run(spec: Run) -> anyhow::Result<()> {
    setup_tracing();
    let Some(broker) = Broker::start(spec.test, &[])? else {
        return Ok(());
    };
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = keyspace_with_table(&session, "pk int, ck int, v int, PRIMARY KEY (pk, ck)").await?;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("program.log");
    // A fixed start: a first run killed before it saved its start must not move it. (Late
    // writes are never dated before it: reading starts there.)
    let started_at = chrono::Utc::now();
    let start = started_at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let mut extra = vec!["--topic-partitions", "4", "--start", &start];
    if !spec.transactions {
        extra.push("--no-transactions");
    }
    let args = program_args(&hosts, &ks, "t", &broker, "eo", &extra);
    let mut program = Program::spawn(&args, &log)?;

    let span = Duration::from_secs_f64((spec.kills as f64 * 1.4).max(5.0));
    let writer = tokio::spawn(write_changes(
        session.clone(),
        ks.clone(),
        spec.changes,
        span,
        started_at.timestamp_micros(),
    ));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut kills = 0;
    while kills < spec.kills {
        // Between kills the program runs 0.4 to 2.4 s: sometimes killed while starting, while
        // reading back, mid-transaction, or just after a commit.
        let run_for = Duration::from_millis(rng.gen_range(400..2400));
        tokio::time::sleep(run_for).await;
        program.check_running()?;
        program.kill9().await?;
        kills += 1;
        program = Program::spawn(&args, &log)?;
    }
    let written = writer.await??;
    let topic = format!("eo.{ks}.t");
    // Every change is published: the consumer waits for them all (a duplicate makes it see
    // more than it expects, and fail).
    let expected = written.changes.len();
    let check = match consume_all(&broker.bootstrap, &topic, expected).await {
        Ok(c) => c,
        Err(e) => anyhow::bail!("{e:#}\nthe program's log:\n{}", program.log()),
    };
    let code = program.stop(Duration::from_secs(60)).await?;
    ensure!(
        code == Some(0),
        "the program exited with {code:?}: {}",
        program.log()
    );
    check_published(
        spec.test,
        &written,
        kills,
        &check,
        spec.transactions,
        &program.log(),
    )
}

/// Checks what the consumer read (`check`) against what was written: each change once (at
/// least once without transactions), with its value, each key's changes in one partition
/// and (with transactions) in write order. `log` is shown when something is missing.
pub(crate) fn check_published(
    test: &str,
    written: &Written,
    kills: usize,
    check: &[Value],
    transactions: bool,
    log: &str,
) -> anyhow::Result<()> {
    let expected = written.changes.len();
    // Exactly once (or at least once): each change by its stream and cdc$time.
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    // Per key, the write times in the order the consumer saw them (one partition per key),
    // and whether the program flagged the change late (`scylla.late`: the early reads had
    // passed its time when it became visible, so it comes after later changes of its key).
    let mut per_key: BTreeMap<String, Vec<(i64, i64, bool)>> = BTreeMap::new();
    let mut late = 0usize;
    for r in check {
        let stream = header(r, "scylla.stream")
            .context("no stream header")?
            .to_owned();
        let time = header(r, "scylla.time")
            .context("no time header")?
            .to_owned();
        let t = Uuid::parse_str(&time)?;
        let micros = uuid_micros(&t).context("not a timeuuid")?;
        *seen.entry((stream, time)).or_default() += 1;
        let is_late = header(r, "scylla.late") == Some("true");
        late += usize::from(is_late);
        let key = r["key"].to_string();
        per_key.entry(key).or_default().push((
            r["partition"].as_i64().unwrap_or(-1),
            micros,
            is_late,
        ));
    }
    let distinct = seen.len();
    let repeated: usize = seen.values().filter(|n| **n > 1).count();
    eprintln!(
        "{}: {} changes written, {} kills, {} records read, {} distinct changes, {} repeated, \
         {} flagged late",
        test,
        expected,
        kills,
        check.len(),
        distinct,
        repeated,
        late
    );
    if distinct != expected {
        let published: HashSet<i64> = check.iter().filter_map(value_number).collect();
        let missing: Vec<(i32, i32)> = written
            .changes
            .iter()
            .filter(|(_, v)| !published.contains(&i64::from(*v)))
            .take(50)
            .copied()
            .collect();
        anyhow::bail!(
            "{distinct} distinct changes published, {expected} written; missing (pk, v), \
             pk >= 100000 written late: {missing:?}\nthe program's log:\n{log}"
        );
    }
    if transactions {
        ensure!(
            repeated == 0,
            "{repeated} changes were published more than once"
        );
        ensure!(check.len() == expected);
    }
    // The events carry the changes' values: every number written, each once (at least once
    // without transactions).
    let mut numbers: HashMap<i64, usize> = HashMap::new();
    for r in check {
        let n = value_number(r).with_context(|| format!("an event without after.v: {r}"))?;
        *numbers.entry(n).or_default() += 1;
    }
    for (_, v) in &written.changes {
        let count = numbers.get(&i64::from(*v)).copied().unwrap_or(0);
        ensure!(
            count == 1 || (!transactions && count > 1),
            "change v={v} was published {count} times"
        );
    }
    ensure!(
        numbers.len() == expected,
        "events of {} numbers, {expected} written",
        numbers.len()
    );
    // Each key's changes in one partition, its on-time changes in write order (the
    // documented promise: a change flagged late comes after later ones; the writer's late
    // changes have keys of their own, but an on-time write that reached the cluster after
    // the early reads passed its client-side timestamp, on a loaded machine, is late too).
    for (key, times) in &per_key {
        let partitions: HashSet<i64> = times.iter().map(|(p, _, _)| *p).collect();
        ensure!(
            partitions.len() == 1,
            "key {key} is in partitions {partitions:?}"
        );
        if transactions {
            let on_time: Vec<i64> = times
                .iter()
                .filter(|(_, _, late)| !late)
                .map(|(_, t, _)| *t)
                .collect();
            ensure!(
                on_time.windows(2).all(|w| w[0] < w[1]),
                "key {key}: on-time changes out of write order (partition, time, late): \
                 {times:?}"
            );
        }
    }
    Ok(())
}

/// Reads the topic with Kafka's Java consumer (read_committed) until every change is there
/// (distinct stream and time) and no more arrive for 5 s, or 180 s have passed.
pub(crate) async fn consume_all(
    bootstrap: &str,
    topic: &str,
    expected: usize,
) -> anyhow::Result<Vec<Value>> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let (bootstrap, topic) = (bootstrap.to_owned(), topic.to_owned());
        let records = tokio::task::spawn_blocking(move || {
            kafka_check(
                "consume",
                &bootstrap,
                &[&topic],
                Until::Idle(Duration::from_secs(5)),
                &[],
            )
        })
        .await??;
        let distinct: HashSet<(Option<&str>, Option<&str>)> = records
            .iter()
            .map(|r| (header(r, "scylla.stream"), header(r, "scylla.time")))
            .collect();
        if distinct.len() >= expected || Instant::now() >= deadline {
            return Ok(records);
        }
    }
}

/// The `v` of a published event (the number of the change), if its value names it.
fn value_number(record: &Value) -> Option<i64> {
    let text = record["value"].as_str()?;
    let v: Value = serde_json::from_str(text).ok()?;
    let payload = if v.get("payload").is_some() {
        &v["payload"]
    } else {
        &v
    };
    let after = &payload["after"]["v"];
    after.as_i64().or_else(|| after["value"].as_i64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_a_stream_publishes_every_change_exactly_once() -> anyhow::Result<()> {
    run(Run {
        test: "exactly_once::kill_9_during_a_stream_publishes_every_change_exactly_once",
        transactions: true,
        changes: env_usize("KAFKA_CHANGES", 100_000),
        kills: env_usize("KAFKA_KILLS", 50),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn without_transactions_kill_9_loses_nothing() -> anyhow::Result<()> {
    run(Run {
        test: "exactly_once::without_transactions_kill_9_loses_nothing",
        transactions: false,
        changes: env_usize("KAFKA_CHANGES", 100_000) / 5,
        kills: env_usize("KAFKA_KILLS", 50) / 5,
    })
    .await
}
