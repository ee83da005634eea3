//! Nothing written after a program is launched is skipped: without `--start` and without a
//! checkpoint, the printer and the replicator read from the instant they were launched, not
//! from the end of their start-up, however long start-up takes.
//!
//! Each test slows the program's start-up down with an injected delay on one of its own
//! schema queries and writes from the first millisecond after the launch (list appends among
//! them, which a replay or a skip would both show), then checks that every write arrived.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultReaction, FaultRule};
use serde_json::Value;

use crate::support::*;

/// How long the injected delay holds the program's start-up.
const SLOW_START: Duration = Duration::from_secs(3);
/// How long the workload writes: the slow start-up and some time after it.
const WRITING: Duration = Duration::from_secs(5);

/// The table of both tests: a list column, so that list appends are among the writes.
fn create_table(ks: &str) -> String {
    format!(
        "CREATE TABLE {ks}.t (pk int, ck int, v int, l list<int>, PRIMARY KEY (pk, ck)) \
         WITH cdc = {{'enabled': true}}"
    )
}

/// The `i`-th write: inserts, list appends to a few long-lived rows, and deletes of rows
/// inserted before.
fn write(ks: &str, i: i32) -> String {
    let pk = i % 5;
    match i % 4 {
        0 | 2 => format!("INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, {i}, {i})"),
        1 => format!("UPDATE {ks}.t SET l = l + [{i}] WHERE pk = {pk} AND ck = -1"),
        _ => format!(
            "DELETE FROM {ks}.t WHERE pk = {} AND ck = {}",
            (i - 3) % 5,
            i - 3
        ),
    }
}

/// Writes `write(ks, 0)`, `write(ks, 1)`, ... one after another for [`WRITING`]; returns how
/// many were written.
async fn write_for(session: Arc<Session>, ks: String) -> anyhow::Result<i32> {
    let until = Instant::now() + WRITING;
    let mut i = 0;
    while Instant::now() < until {
        exec(&session, write(&ks, i)).await?;
        i += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(i)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicator_replicates_writes_made_during_a_slow_start_up() -> anyhow::Result<()> {
    if !embedded_only(
        "replicator_replicates_writes_made_during_a_slow_start_up",
        "injects a delay into the destination's schema reads",
    ) {
        return Ok(());
    }
    setup_tracing();
    let source = EmbeddedCluster::builder().nodes(3).start().await?;
    let destination = EmbeddedCluster::builder().nodes(1).start().await?;
    let (s, d) = (source.session().await?, destination.session().await?);
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 3).await?;
    create_keyspace(&d, &ks, 1).await?;
    exec(&s, create_table(&ks)).await?;
    // The replicator's own read of the destination table's columns waits SLOW_START.
    destination.add_fault(
        FaultRule::new()
            .on_statement_containing("clustering_order, type FROM system_schema.columns")
            .respond(FaultReaction::Delay(SLOW_START))
            .times(1),
    );
    let mut args = replicator_args(
        &source.contact_point().to_string(),
        &destination.contact_point().to_string(),
        &ks,
        "t",
    );
    args.push("--create-destination-table".into());
    // No --start: the default is the launch.
    let replicator = spawn_replicator(args);
    let written = write_for(s.clone(), ks.clone()).await?;
    assert!(written > 100, "only {written} writes were made");
    converge_then_stop(replicator, &s, &d, &ks, "t", Duration::from_secs(30)).await?;
    source.shutdown().await;
    destination.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printer_prints_writes_made_during_a_slow_start_up() -> anyhow::Result<()> {
    if !embedded_only(
        "printer_prints_writes_made_during_a_slow_start_up",
        "injects a delay into the printer's schema reads",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder().nodes(3).start().await?;
    let s = cluster.session().await?;
    let ks = unique_keyspace_name();
    create_keyspace(&s, &ks, 3).await?;
    exec(&s, create_table(&ks)).await?;
    // The log reader's check that the table exists waits SLOW_START.
    cluster.add_fault(
        FaultRule::new()
            .on_statement_containing("SELECT table_name FROM system_schema.tables")
            .respond(FaultReaction::Delay(SLOW_START))
            .times(1),
    );
    let mut args = printer_args(&cluster.contact_point().to_string(), &ks, "t");
    args.extend(strings(&["--format", "json"]));
    // No --start: the default is the launch.
    let (mut printer, out) = spawn_printer(args);
    let written = write_for(s.clone(), ks.clone()).await?;
    assert!(written > 100, "only {written} writes were made");

    // Every write is one log row; identify each by (operation, pk, ck, list element).
    let expected: BTreeSet<String> = (0..written).map(identity_of_write).collect();
    let printed = || -> anyhow::Result<Vec<String>> {
        out.contents()
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line)?;
                identity_of_line(&v)
            })
            .collect()
    };
    wait_for("every write to be printed", Duration::from_secs(30), || {
        let printed = printed();
        let expected = &expected;
        async move {
            let printed: BTreeSet<String> = printed?.into_iter().collect();
            let missing: Vec<&String> = expected.difference(&printed).collect();
            let extra: Vec<&String> = printed.difference(expected).collect();
            if missing.is_empty() && extra.is_empty() {
                return Ok(true);
            }
            anyhow::bail!(
                "{} of {} writes not printed (first: {:?}); {} unexpected lines (first: {:?})",
                missing.len(),
                expected.len(),
                missing.first(),
                extra.len(),
                extra.first()
            )
        }
    })
    .await?;
    printer.check_running().await?;
    let printed = printed()?;
    assert_eq!(printed.len(), expected.len(), "a write was printed twice");
    assert_eq!(printer.stop(Duration::from_secs(20)).await?, Ok(()));
    cluster.shutdown().await;
    Ok(())
}

/// What [`write`] `i` logs, as [`identity_of_line`] renders it.
fn identity_of_write(i: i32) -> String {
    match i % 4 {
        0 | 2 => format!("RowInsert {} {i} v={i}", i % 5),
        1 => format!("RowUpdate {} -1 l={i}", i % 5),
        _ => format!("RowDelete {} {}", (i - 3) % 5, i - 3),
    }
}

/// A printed JSON line as `<operation> <pk> <ck>` plus its value or list element.
fn identity_of_line(line: &Value) -> anyhow::Result<String> {
    let op = line["operation"].as_str().unwrap_or("?");
    let columns = &line["columns"];
    let mut id = format!("{op} {} {}", columns["pk"], columns["ck"]);
    if let Some(v) = columns.get("v") {
        id.push_str(&format!(" v={v}"));
    }
    if let Some(l) = columns.get("l") {
        // A list append logs the element under its timeuuid key: the values are the elements.
        let elements: Vec<String> = match l {
            Value::Array(items) => items.iter().map(Value::to_string).collect(),
            Value::Object(map) => map.values().map(Value::to_string).collect(),
            other => vec![other.to_string()],
        };
        id.push_str(&format!(" l={}", elements.join(",")));
    }
    Ok(id)
}
