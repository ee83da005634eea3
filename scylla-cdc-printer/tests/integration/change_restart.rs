//! `--format change` survives `kill -9`: the printer binary, reading with a checkpoint table
//! through pages of one row (so every change of several rows straddles a page boundary),
//! is killed with SIGKILL while a writer keeps writing multi-row changes, then restarted
//! from its checkpoints. Every change either run printed is whole (its deltas are exactly
//! the delta rows the log holds for its `(stream, cdc$time)`), the second run prints no
//! change twice, and together the runs print every change. Each change's `ts_ms` (when the
//! printer processed it) is after its write and within the run that printed it.
//!
//! Embedded cluster only (the page limit is lowered on it). Loopback range 127.0.95.*.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use chrono::Utc;
use scylla::client::session::Session;
use scylla::value::CqlTimeuuid;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{printer, rfc3339};

/// `"0x<stream> <time>"` → the `cdc$batch_seq_no`s of the group's delta rows.
async fn log_deltas(s: &Session, ks: &str) -> anyhow::Result<BTreeMap<String, Vec<i64>>> {
    let rows = s
        .query_unpaged(
            format!(
                "SELECT \"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\", \"cdc$operation\" \
                 FROM {ks}.t_scylla_cdc_log"
            ),
            (),
        )
        .await?
        .into_rows_result()?;
    let mut groups: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for row in rows.rows::<(Vec<u8>, CqlTimeuuid, i32, i8)>()? {
        let (stream, time, seq, op) = row?;
        let hex: String = stream.iter().map(|b| format!("{b:02x}")).collect();
        let entry = groups
            .entry(format!("0x{hex} {}", uuid::Uuid::from(time)))
            .or_default();
        if op != 0 && op != 9 {
            entry.push(i64::from(seq));
        }
    }
    for seqs in groups.values_mut() {
        seqs.sort();
    }
    Ok(groups)
}

/// The group key and delta `batch_seq_no`s of a printed change.
fn printed(line: &str) -> anyhow::Result<(String, Vec<i64>)> {
    let v: Value = serde_json::from_str(line)?;
    let source = &v["source"];
    let key = format!(
        "{} {}",
        source["stream_id"].as_str().unwrap_or_default(),
        source["time"].as_str().unwrap_or_default()
    );
    let seqs = v["delta"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(|r| r["batch_seq_no"].as_i64())
                .collect()
        })
        .unwrap_or_default();
    Ok((key, seqs))
}

/// The printer with `args`, its changes piped, its log dropped.
fn quiet_printer(args: &[String]) -> tokio::process::Command {
    let mut command = printer(args);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    command
}

/// Writes a batch of three rows of one partition, and a static-and-clustering update, per
/// tick, until `stop`, counting rounds in `written`; returns how many rounds it wrote.
async fn write_until(
    s: Arc<Session>,
    ks: String,
    stop: Arc<AtomicBool>,
    written: Arc<AtomicI32>,
) -> anyhow::Result<i32> {
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let pk = i % 4;
        s.query_unpaged(
            format!(
                "BEGIN UNLOGGED BATCH \
                 UPDATE {ks}.t SET v = {i} WHERE pk = {pk} AND ck = 1; \
                 UPDATE {ks}.t SET v = {i} WHERE pk = {pk} AND ck = 2; \
                 INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, 3, {i}); \
                 APPLY BATCH"
            ),
            (),
        )
        .await?;
        s.query_unpaged(
            format!("UPDATE {ks}.t SET s = {i}, v = {i} WHERE pk = {pk} AND ck = 4"),
            (),
        )
        .await?;
        i += 1;
        written.store(i, Ordering::Relaxed);
    }
    Ok(i)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_restarted_printer_prints_only_whole_changes() -> anyhow::Result<()> {
    setup_tracing();
    if !embedded_only(
        "killed_and_restarted_printer_prints_only_whole_changes",
        "lowers the page size of the cluster",
    ) {
        return Ok(());
    }
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .address(Ipv4Addr::new(127, 0, 95, 1))
        .query_page_size_in_bytes(1)
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1}} AND tablets = {{'enabled': false}}"
            ),
            (),
        )
        .await?;
    session
        .query_unpaged(
            format!(
                "CREATE TABLE {ks}.t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {{'enabled': true, 'preimage': true, 'postimage': true}}"
            ),
            (),
        )
        .await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let run1_launched = Utc::now().timestamp_millis();
    let mut args: Vec<String> = [
        "--hosts",
        &cluster.contact_point().to_string(),
        "--keyspace",
        &ks,
        "--table",
        "t",
        "--start",
        &rfc3339(start),
        "--window-size",
        "0.3",
        "--safety-interval",
        "0.5",
        "--sleep-interval",
        "0.1",
        "--checkpoint-table",
        &format!("{ks}.progress"),
        "--checkpoint-interval",
        "0",
        "--format",
        "change",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicI32::new(0));
    let writer = tokio::spawn(write_until(
        session.clone(),
        ks.clone(),
        stop.clone(),
        written.clone(),
    ));

    // Run 1: killed with SIGKILL once it has printed 40 changes and saved a checkpoint,
    // while the writer goes on.
    let mut child = quiet_printer(&args).spawn()?;
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut first: Vec<String> = Vec::new();
    let checkpoint = format!("SELECT * FROM {ks}.progress");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "run 1 printed {} changes in 60 s",
            first.len()
        );
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await??
            .expect("run 1 ended by itself");
        first.push(line);
        if first.len() >= 40
            && session
                .query_unpaged(checkpoint.clone(), ())
                .await
                .ok()
                .and_then(|r| r.into_rows_result().ok())
                .is_some_and(|r| r.rows_num() > 0)
        {
            break;
        }
    }
    child.start_kill()?; // SIGKILL: no flush, no final checkpoint.
    child.wait().await?;
    // Lines already in the pipe were printed before the kill: read them too (a last line
    // cut by the kill has no newline and is dropped by `lines()` only if empty).
    while let Some(line) = lines.next_line().await? {
        first.push(line);
    }

    // Ten more rounds while no printer runs, then run 2 to an end after the last write.
    let target = written.load(Ordering::Relaxed) + 10;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while written.load(Ordering::Relaxed) < target {
        assert!(tokio::time::Instant::now() < deadline, "the writer stalled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = writer.await??;
    let end = Utc::now() + chrono::TimeDelta::milliseconds(100);
    args.extend(["--end".into(), rfc3339(end)]);
    let run2_launched = Utc::now().timestamp_millis();
    let output =
        tokio::time::timeout(Duration::from_secs(120), quiet_printer(&args).output()).await??;
    let run2_ended = Utc::now().timestamp_millis();
    assert!(output.status.success(), "run 2: {:?}", output.status);
    let second: Vec<String> = String::from_utf8(output.stdout)?
        .lines()
        .map(str::to_owned)
        .collect();

    let log = log_deltas(&session, &ks).await?;
    assert_eq!(log.len(), 2 * rounds as usize, "two changes per round");
    assert!(log.values().any(|d| d.len() == 3));
    let check = |lines: &[String],
                 run: &str,
                 last_may_be_cut: bool,
                 (launched, ended): (i64, i64)|
     -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        for (i, line) in lines.iter().enumerate() {
            let Ok((key, seqs)) = printed(line) else {
                assert!(
                    last_may_be_cut && i + 1 == lines.len(),
                    "{run}: not JSON: {line}"
                );
                continue;
            };
            let expected = log
                .get(&key)
                .unwrap_or_else(|| panic!("{run}: unknown change {key}"));
            assert_eq!(&seqs, expected, "{run}: change {key} is not whole");
            // `ts_ms`: processed by this run, after the write (same machine, same clock).
            let v: Value = serde_json::from_str(line).expect("JSON");
            let processed = v["ts_ms"].as_i64().expect("ts_ms");
            let written_ms = v["source"]["ts_us"]
                .as_i64()
                .expect("ts_us")
                .div_euclid(1000);
            assert!(
                processed >= written_ms && (launched..=ended).contains(&processed),
                "{run}: {key} processed at {processed} ms, written at {written_ms} ms, run \
                 from {launched} to {ended} ms"
            );
            assert!(seen.insert(key.clone()), "{run}: {key} printed twice");
        }
        seen
    };
    let a = check(&first, "run 1", true, (run1_launched, run2_launched));
    let b = check(&second, "run 2", false, (run2_launched, run2_ended));
    let all: BTreeSet<String> = a.union(&b).cloned().collect();
    let missing: Vec<&String> = log.keys().filter(|k| !all.contains(*k)).collect();
    assert!(missing.is_empty(), "never printed: {missing:?}");
    // Run 2 resumed from a checkpoint: it did not print everything again.
    assert!(
        b.len() < log.len(),
        "run 2 printed all {} changes",
        log.len()
    );
    cluster.shutdown().await;
    Ok(())
}
