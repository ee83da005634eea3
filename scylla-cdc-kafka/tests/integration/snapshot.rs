//! `--snapshot`: a table with rows (some partitions with a static cell) is published as
//! snapshot reads (`op: r`) while changes are written (updates of the existing rows, inserts
//! of new rows, deletions of those), then its log is streamed. Kafka's own Java consumer,
//! `read_committed`, must see every existing row exactly once as `r` (with the cells written
//! before the snapshot's boundary, and the cell an update overwrote left out or as it was),
//! no `r` of a row written after the boundary, and every change exactly once as `c`/`u`/`d`,
//! after its row's `r`. Once without and once with stops of the program during the snapshot
//! (a SIGTERM, then kill -9 three times; small batches: stopped mid-range too).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::FutureExt;
use rand::{Rng, SeedableRng};
use scylla::client::session::Session;
use scylla_cdc_test_utils::{TestCluster, setup_tracing};
use scylla_emulator::EmbeddedCluster;
use serde_json::Value;

use crate::support::*;

/// Partitions of the table before the snapshot, and rows of each.
const PARTITIONS: i32 = 300;
const ROWS: i32 = 10;

/// The `v` and first `w` of an existing row.
fn original(pk: i32, ck: i32) -> i64 {
    i64::from(pk) * 1000 + i64::from(ck)
}

/// The changes written while the program runs.
#[derive(Default)]
struct Written {
    /// (pk, ck, w) of each update of an existing row's `w`.
    updates: Vec<(i32, i32, i32)>,
    /// (pk, ck, w) of each new row (ck >= 100).
    inserts: Vec<(i32, i32, i32)>,
    /// (pk, ck) of each deleted new row.
    deletes: Vec<(i32, i32)>,
}

impl Written {
    fn len(&self) -> usize {
        self.updates.len() + self.inserts.len() + self.deletes.len()
    }
}

/// Writes `rounds` rounds of 20 changes over about `span`, each round's changes on distinct
/// rows: updates of existing rows' `w`, new rows, deletions of new rows of earlier rounds.
/// Every `w` written is a distinct number from 1000000 on.
async fn write_changes(
    session: Arc<Session>,
    ks: String,
    rounds: usize,
    span: Duration,
) -> anyhow::Result<Written> {
    let update = session
        .prepare(format!("UPDATE {ks}.t SET w = ? WHERE pk = ? AND ck = ?"))
        .await?;
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, ck, v, w) VALUES (?, ?, ?, ?)"
        ))
        .await?;
    let delete = session
        .prepare(format!("DELETE FROM {ks}.t WHERE pk = ? AND ck = ?"))
        .await?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5a4b);
    let mut written = Written::default();
    let mut next_w = 1_000_000;
    let mut next_ck = 100;
    let started = Instant::now();
    for round in 0..rounds {
        let mut futures = Vec::new();
        let mut touched = HashSet::new();
        for i in 0..20 {
            let pk = rng.gen_range(0..PARTITIONS);
            match i % 4 {
                // Updates of existing rows.
                0 | 1 => {
                    let ck = rng.gen_range(0..ROWS);
                    if !touched.insert((pk, ck)) {
                        continue;
                    }
                    next_w += 1;
                    written.updates.push((pk, ck, next_w));
                    futures.push(session.execute_unpaged(&update, (next_w, pk, ck)).boxed());
                }
                // New rows.
                2 => {
                    next_ck += 1;
                    next_w += 1;
                    written.inserts.push((pk, next_ck, next_w));
                    touched.insert((pk, next_ck));
                    futures.push(
                        session
                            .execute_unpaged(&insert, (pk, next_ck, next_w, next_w))
                            .boxed(),
                    );
                }
                // Deletions of new rows of earlier rounds.
                _ => {
                    let candidates = written.inserts.len().saturating_sub(20);
                    if candidates == 0 {
                        continue;
                    }
                    let (pk, ck, _) = written.inserts[rng.gen_range(0..candidates)];
                    if written.deletes.contains(&(pk, ck)) || !touched.insert((pk, ck)) {
                        continue;
                    }
                    written.deletes.push((pk, ck));
                    futures.push(session.execute_unpaged(&delete, (pk, ck)).boxed());
                }
            }
        }
        for r in futures::future::join_all(futures).await {
            r.context("writing a change")?;
        }
        let due = span.mul_f64((round + 1) as f64 / rounds as f64);
        let elapsed = started.elapsed();
        if due > elapsed {
            tokio::time::sleep(due - elapsed).await;
        }
    }
    Ok(written)
}

/// Writes the rows that exist before the snapshot: [`PARTITIONS`] × [`ROWS`], `v` and `w`
/// [`original`], and the static `s` = pk in the even partitions.
async fn write_existing(session: &Session, ks: &str) -> anyhow::Result<()> {
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.t (pk, ck, v, w) VALUES (?, ?, ?, ?)"
        ))
        .await?;
    let static_cell = session
        .prepare(format!("UPDATE {ks}.t SET s = ? WHERE pk = ?"))
        .await?;
    for pk in 0..PARTITIONS {
        let mut futures = Vec::new();
        for ck in 0..ROWS {
            let v = i32::try_from(original(pk, ck))?;
            futures.push(session.execute_unpaged(&insert, (pk, ck, v, v)).boxed());
        }
        if pk % 2 == 0 {
            futures.push(session.execute_unpaged(&static_cell, (pk, pk)).boxed());
        }
        for r in futures::future::join_all(futures).await {
            r.context("writing an existing row")?;
        }
    }
    Ok(())
}

/// A published event, decoded.
struct Published {
    partition: i64,
    offset: i64,
    pk: i64,
    /// `None`: a static row's event.
    ck: Option<i64>,
    op: String,
    after: Value,
    stream: String,
    time: String,
}

fn payload(text: &str) -> anyhow::Result<Value> {
    let v: Value = serde_json::from_str(text).with_context(|| format!("not JSON: {text}"))?;
    Ok(if v.get("payload").is_some() {
        v["payload"].clone()
    } else {
        v
    })
}

fn decode(record: &Value) -> anyhow::Result<Published> {
    let key = payload(record["key"].as_str().context("a record without a key")?)?;
    let value = payload(
        record["value"]
            .as_str()
            .with_context(|| format!("a record without a value (a tombstone?): {record}"))?,
    )?;
    Ok(Published {
        partition: record["partition"].as_i64().context("no partition")?,
        offset: record["offset"].as_i64().context("no offset")?,
        pk: key["pk"].as_i64().with_context(|| format!("key {key}"))?,
        ck: key["ck"].as_i64(),
        op: value["op"].as_str().context("no op")?.to_owned(),
        after: value["after"].clone(),
        stream: header(record, "scylla.stream")
            .context("no stream header")?
            .to_owned(),
        time: header(record, "scylla.time")
            .context("no time header")?
            .to_owned(),
    })
}

/// A legacy cell's value (`{"value": n}`), `None` when the column is left out (`null`).
fn cell(after: &Value, column: &str) -> Option<Option<i64>> {
    match &after[column] {
        Value::Null => None,
        c => Some(c["value"].as_i64()),
    }
}

struct Spec {
    test: &'static str,
    /// Kills of the program during the snapshot.
    kills: usize,
    extra: &'static [&'static str],
}

async fn run(spec: Spec) -> anyhow::Result<()> {
    setup_tracing();
    let Some(broker) = Broker::start(spec.test, &[])? else {
        return Ok(());
    };
    let started = Instant::now();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let ks = keyspace_with_table(
        &session,
        "pk int, ck int, s int static, v int, w int, PRIMARY KEY (pk, ck)",
    )
    .await?;
    write_existing(&session, &ks).await?;
    // The boundary is the launch minus the safety interval (2 s): after every existing row.
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let hosts = cluster.contact_points().join(",");
    let dir = TempDir::new();
    let log = dir.path().join("program.log");
    let mut extra = vec!["--snapshot", "--no-tombstones", "--topic-partitions", "4"];
    extra.extend(spec.extra);
    let args = program_args(&hosts, &ks, "t", &broker, "snap", &extra);
    let mut program = Program::spawn(&args, &log)?;
    let writer = tokio::spawn(write_changes(
        session.clone(),
        ks.clone(),
        60,
        Duration::from_secs(4),
    ));

    // Kills during the snapshot: once a run has started publishing it, after 50 to 500 ms,
    // unless it finished.
    let entered = |log: &str| log.matches("snapshot: publishing the rows").count();
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x0c0ffee);
    let mut kills = 0;
    while kills < spec.kills {
        let before = entered(&read_log());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = read_log();
            if entered(&text) > before || text.contains("snapshot: published") {
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "no run published the snapshot within 60 s: {}",
                program.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.gen_range(50..500))).await;
        if read_log().contains("snapshot: published") {
            break;
        }
        program.check_running()?;
        if kills == 0 {
            // The first stop is graceful: what was handed over is committed, exit 0.
            let code = program.stop(Duration::from_secs(30)).await?;
            ensure!(code == Some(0), "SIGTERM: exit {code:?}: {}", program.log());
        } else {
            program.kill9().await?;
        }
        kills += 1;
        program = Program::spawn(&args, &log)?;
    }
    let written = writer.await??;

    let topic = format!("snap.{ks}.t");
    let rows = usize::try_from(PARTITIONS * ROWS)?;
    let statics = usize::try_from(PARTITIONS / 2)?;
    let expected = rows + statics + written.len();
    let bootstrap = broker.bootstrap.clone();
    let topic_name = topic.clone();
    let records = tokio::task::spawn_blocking(move || {
        kafka_check(
            "consume",
            &bootstrap,
            &[&topic_name],
            Until::Exactly(expected, Duration::from_secs(3)),
            &[],
        )
    })
    .await?;
    let records = match records {
        Ok(r) => r,
        Err(e) => bail!("{e:#}\nthe program's log:\n{}", program.log()),
    };
    let code = program.stop(Duration::from_secs(60)).await?;
    ensure!(
        code == Some(0),
        "the program exited with {code:?}: {}",
        program.log()
    );
    let log_text = read_log();
    ensure!(
        log_text.contains("snapshot: published"),
        "the snapshot did not finish: {}",
        program.log()
    );
    eprintln!(
        "{}: {rows} rows and {statics} static rows, {} changes ({} updates, {} inserts, {} \
         deletions), {kills} kills during the snapshot, {} records, {:.1} s",
        spec.test,
        written.len(),
        written.updates.len(),
        written.inserts.len(),
        written.deletes.len(),
        records.len(),
        started.elapsed().as_secs_f64()
    );
    ensure!(
        kills == spec.kills,
        "only {kills} of {} kills happened during the snapshot (it finished too soon): {}",
        spec.kills,
        log_text
            .lines()
            .filter(|l| l.contains("snapshot"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let events: Vec<Published> = records.iter().map(decode).collect::<anyhow::Result<_>>()?;
    ensure!(
        events.len() == expected,
        "{} records, {expected} expected",
        events.len()
    );

    // Snapshot reads: every existing row and static row once, nothing else.
    let updated: HashSet<(i32, i32)> = written.updates.iter().map(|(p, c, _)| (*p, *c)).collect();
    let mut reads: HashMap<(i64, Option<i64>), &Published> = HashMap::new();
    for e in events.iter().filter(|e| e.op == "r") {
        ensure!(
            e.stream == "0".repeat(32) && e.time == uuid::Uuid::nil().to_string(),
            "a snapshot read with the headers of a change: {} {}",
            e.stream,
            e.time
        );
        if let Some(previous) = reads.insert((e.pk, e.ck), e) {
            bail!(
                "row ({}, {:?}) read twice, at offsets {} and {} of partition {}",
                e.pk,
                e.ck,
                previous.offset,
                e.offset,
                e.partition
            );
        }
        match e.ck {
            None => {
                ensure!(e.pk % 2 == 0, "a static row read of odd partition {}", e.pk);
                ensure!(
                    cell(&e.after, "s") == Some(Some(e.pk)),
                    "static row {}: {}",
                    e.pk,
                    e.after
                );
            }
            Some(ck) => {
                ensure!(
                    ck < 100,
                    "a row written after the snapshot's boundary was read: ({}, {ck})",
                    e.pk
                );
                let (pk, ck32) = (i32::try_from(e.pk)?, i32::try_from(ck)?);
                let v = original(pk, ck32);
                ensure!(
                    cell(&e.after, "v") == Some(Some(v)),
                    "row ({pk}, {ck}): {}",
                    e.after
                );
                match cell(&e.after, "w") {
                    Some(Some(w)) if w == v => {}
                    // Overwritten after the boundary before the scan read it: left out.
                    None if updated.contains(&(pk, ck32)) => {}
                    other => bail!("row ({pk}, {ck}): w {other:?} in {}", e.after),
                }
            }
        }
    }
    let left_out = reads
        .values()
        .filter(|e| e.ck.is_some() && cell(&e.after, "w").is_none())
        .count();
    let published = log_text
        .lines()
        .find_map(|l| l.find("snapshot: published").map(|at| &l[at..]))
        .unwrap_or_default();
    // Runs that resumed ranges after their last batch (kill -9 mid-range).
    let resumed_mid_range = log_text
        .lines()
        .filter(|l| l.contains("ranges_resumed=") && !l.contains("ranges_resumed=0 "))
        .count();
    eprintln!(
        "{}: {left_out} reads without the w overwritten after the boundary, \
         {resumed_mid_range} runs resumed ranges mid-range; {published}",
        spec.test,
    );
    ensure!(
        spec.kills == 0 || resumed_mid_range > 0,
        "no run resumed a range after its last batch: {}",
        program.log()
    );
    ensure!(
        reads.len() == rows + statics,
        "{} snapshot reads, {} existing rows and static rows",
        reads.len(),
        rows + statics
    );

    // Changes: each once, by its stream and time and by its value, after its row's read.
    let changes: Vec<&Published> = events.iter().filter(|e| e.op != "r").collect();
    let distinct: HashSet<(&str, &str)> = changes
        .iter()
        .map(|e| (e.stream.as_str(), e.time.as_str()))
        .collect();
    ensure!(
        distinct.len() == written.len() && changes.len() == written.len(),
        "{} change events ({} distinct), {} changes written",
        changes.len(),
        distinct.len(),
        written.len()
    );
    let mut by_w: HashMap<(String, i64), usize> = HashMap::new();
    let mut deleted: HashMap<(i64, i64), usize> = HashMap::new();
    for e in &changes {
        let ck = e.ck.context("a change of a static row")?;
        if let Some(read) = reads.get(&(e.pk, Some(ck))) {
            ensure!(
                read.partition == e.partition && read.offset < e.offset,
                "row ({}, {ck}): a {} at {}/{} before its read at {}/{}",
                e.pk,
                e.op,
                e.partition,
                e.offset,
                read.partition,
                read.offset
            );
        }
        match e.op.as_str() {
            "d" => *deleted.entry((e.pk, ck)).or_default() += 1,
            op => {
                let w = cell(&e.after, "w")
                    .flatten()
                    .with_context(|| format!("{op}: {}", e.after))?;
                *by_w.entry((op.to_owned(), w)).or_default() += 1;
            }
        }
    }
    for (pk, ck, w) in &written.updates {
        let n = by_w
            .get(&("u".to_owned(), i64::from(*w)))
            .copied()
            .unwrap_or(0);
        ensure!(
            n == 1,
            "the update of ({pk}, {ck}) to w={w} was published {n} times"
        );
    }
    for (pk, ck, w) in &written.inserts {
        let n = by_w
            .get(&("c".to_owned(), i64::from(*w)))
            .copied()
            .unwrap_or(0);
        ensure!(
            n == 1,
            "the insert of ({pk}, {ck}) w={w} was published {n} times"
        );
    }
    for (pk, ck) in &written.deletes {
        let n = deleted
            .get(&(i64::from(*pk), i64::from(*ck)))
            .copied()
            .unwrap_or(0);
        ensure!(
            n == 1,
            "the deletion of ({pk}, {ck}) was published {n} times"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_publishes_every_row_once_then_every_change_once() -> anyhow::Result<()> {
    run(Spec {
        test: "snapshot::a_snapshot_publishes_every_row_once_then_every_change_once",
        kills: 0,
        extra: &[],
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_a_snapshot_still_publishes_every_row_and_change_once() -> anyhow::Result<()>
{
    run(Spec {
        test: "snapshot::kill_9_during_a_snapshot_still_publishes_every_row_and_change_once",
        kills: 4,
        // Small batches, four ranges at a time, 1500 rows a second (the snapshot takes about
        // 2 s): the kills land mid-range.
        extra: &[
            "--snapshot-parallelism",
            "4",
            "--snapshot-batch-rows",
            "2",
            "--max-rows-per-second",
            "1500",
        ],
    })
    .await
}
