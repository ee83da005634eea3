//! CDC-TTL-aware start: the log keeps a change for the table's CDC `ttl`; a start or a saved
//! checkpoint older than that reports the gap ([`ReaderEvent::ExpiredGap`]) and reading starts
//! at the oldest time still in the log, delivering every row still there.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set. Each test waits (for a condition, not a fixed time) until its first rows have expired.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla_cdc::{CDCLogReaderBuilder, ExpiredGap, ReaderEvent, TableBackedCheckpointSaver};
use scylla_cdc_test_utils::{TestCluster, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Collected, cluster_and_keyspace, drop_keyspace, exec, metric, metric_values, metrics_recorder,
    reader_of, wait_for,
};

/// The CDC `ttl` of the tables, in seconds: small, yet long enough for a reader to read the
/// rows written after the wait before they expire too.
const TTL: i64 = 6;
/// The safety interval of `fast()`.
const SAFETY: i64 = 1;

async fn create_table(session: &Session, ks: &str, ttl: i64) -> anyhow::Result<()> {
    exec(
        session,
        format!(
            "CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) \
                 WITH cdc = {{'enabled': true, 'ttl': {ttl}}}"
        ),
    )
    .await?;
    Ok(())
}

async fn write(session: &Session, ks: &str, pks: std::ops::Range<i32>) -> anyhow::Result<()> {
    for pk in pks {
        session
            .query_unpaged(
                format!("INSERT INTO {ks}.t (pk, v) VALUES (?, ?)"),
                (pk, pk),
            )
            .await?;
    }
    Ok(())
}

/// Number of rows of the log table with `pk` in `pks`.
async fn logged(session: &Session, ks: &str, pks: std::ops::Range<i32>) -> usize {
    let rows = session
        .query_unpaged(format!("SELECT pk FROM {ks}.t_scylla_cdc_log"), ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    rows.rows::<(Option<i32>,)>()
        .unwrap()
        .filter(|r| matches!(r, Ok((Some(pk),)) if pks.contains(pk)))
        .count()
}

/// Waits until the rows of `pks` have left the log and `now - TTL - SAFETY` has passed
/// `after`, so that a reader started now finds `after` older than what the log holds.
async fn wait_for_expiry(
    session: &Session,
    ks: &str,
    pks: std::ops::Range<i32>,
    after: DateTime<Utc>,
) {
    wait_for(
        Duration::from_secs(60),
        "the first rows to expire",
        || async { logged(session, ks, pks.clone()).await == 0 },
    )
    .await;
    let past = after + TimeDelta::seconds(TTL + SAFETY) + TimeDelta::milliseconds(100);
    wait_for(
        Duration::from_secs(60),
        "the TTL to pass the start",
        || async { Utc::now() > past },
    )
    .await;
}

/// A test's cluster, a session and a new keyspace with table `t` of CDC `ttl`, the metrics
/// recorder installed first.
async fn table_with_ttl(ttl: i64) -> anyhow::Result<(TestCluster, Arc<Session>, String)> {
    setup_tracing();
    metrics_recorder();
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await?;
    create_table(&session, &ks, ttl).await?;
    Ok((cluster, session, ks))
}

/// Writes `pk`s 0..10, waits until they have expired, then writes 100..110; returns a time
/// before the first writes and one after the last.
async fn expired_then_live(
    session: &Session,
    ks: &str,
) -> anyhow::Result<(DateTime<Utc>, DateTime<Utc>)> {
    let start = Utc::now();
    write(session, ks, 0..10).await?;
    wait_for_expiry(session, ks, 0..10, start).await;
    write(session, ks, 100..110).await?;
    Ok((start, Utc::now() + TimeDelta::milliseconds(1)))
}

/// The `pk`s delivered, sorted.
fn pks(collected: &Collected) -> Vec<i32> {
    let mut pks: Vec<i32> = collected
        .snapshot()
        .iter()
        .filter_map(|c| c.int("pk"))
        .collect();
    pks.sort();
    pks
}

/// The gauge `scylla_cdc_expired_gap_seconds` of `ks.t`, if recorded.
fn gap_gauge(ks: &str) -> Option<f64> {
    metric(&metric_values(), ks, "scylla_cdc_expired_gap_seconds", None)
}

type Events = Arc<Mutex<Vec<ReaderEvent>>>;

fn with_events(b: CDCLogReaderBuilder) -> (CDCLogReaderBuilder, Events) {
    let events: Events = Arc::default();
    let sink = events.clone();
    (
        b.on_event(move |e| sink.lock().unwrap().push(e.clone())),
        events,
    )
}

/// The one expired gap reported.
fn one_gap(events: &Events) -> ExpiredGap {
    let events = events.lock().unwrap().clone();
    let gaps: Vec<ExpiredGap> = events
        .into_iter()
        .map(|e| match e {
            ReaderEvent::ExpiredGap(g) => g,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    gaps.into_iter().next().unwrap()
}

/// Checks `first_readable` is `now - ttl - safety interval` for a `now` while the reader ran
/// (the worker computes it when it starts reading the generation).
fn check_first_readable(gap: &ExpiredGap, before: DateTime<Utc>, after: DateTime<Utc>) {
    let margin = TimeDelta::seconds(TTL + SAFETY);
    assert!(
        gap.first_readable >= before - margin - TimeDelta::milliseconds(1)
            && gap.first_readable <= after - margin,
        "first readable {} not within [{}, {}] - {margin}",
        gap.first_readable,
        before,
        after
    );
    assert_eq!(gap.ttl, Duration::from_secs(TTL as u64));
    assert_eq!(gap.table, "t");
    assert!(!gap.streams.is_empty());
}

#[tokio::test]
async fn a_start_older_than_the_ttl_reports_the_gap_and_delivers_what_is_left() -> anyhow::Result<()>
{
    let (_cluster, session, ks) = table_with_ttl(TTL).await?;

    let (start, end) = expired_then_live(&session, &ks).await?;

    let collected = Collected::default();
    let (b, events) = with_events(
        reader_of(&session, &ks, "t", collected.clone())
            .start_timestamp(start)
            .end_timestamp(end),
    );
    let before = Utc::now();
    let (_reader, handle) = b.build().await?;
    handle.await?;
    let after = Utc::now();

    let gap = one_gap(&events);
    assert_eq!(gap.requested, start);
    assert_eq!(gap.keyspace, ks);
    check_first_readable(&gap, before, after);
    // The metric holds the seconds of history lost.
    let gauge = gap_gauge(&ks).expect("scylla_cdc_expired_gap_seconds");
    assert!(
        (gauge - gap.width().as_secs_f64()).abs() < 1e-6,
        "{gauge} for {gap:?}"
    );
    // Every row still in the log was delivered.
    assert_eq!(pks(&collected), (100..110).collect::<Vec<_>>());
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

#[tokio::test]
async fn a_checkpoint_older_than_the_ttl_reports_the_gap() -> anyhow::Result<()> {
    let (_cluster, session, ks) = table_with_ttl(TTL).await?;
    let saver = || async {
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t").await
    };

    // Run 1 reads the first rows and saves its checkpoints at its end.
    let start = Utc::now();
    write(&session, &ks, 0..10).await?;
    let end1 = Utc::now() + TimeDelta::milliseconds(1);
    let run1 = Collected::default();
    let (_r1, h1) = reader_of(&session, &ks, "t", run1.clone())
        .checkpoint_saver(Arc::new(saver().await?))
        .start_timestamp(start)
        .end_timestamp(end1)
        .build()
        .await?;
    h1.await?;
    assert_eq!(pks(&run1), (0..10).collect::<Vec<_>>());

    // The reader is down longer than the TTL.
    wait_for_expiry(&session, &ks, 0..10, end1).await;
    write(&session, &ks, 100..110).await?;
    let end2 = Utc::now() + TimeDelta::milliseconds(1);

    // Run 2 resumes from the checkpoints (its own start, the default, is later than the
    // rows written while it was down).
    let run2 = Collected::default();
    let (b, events) = with_events(
        reader_of(&session, &ks, "t", run2.clone())
            .checkpoint_saver(Arc::new(saver().await?))
            .end_timestamp(end2),
    );
    let before = Utc::now();
    let (_r2, h2) = b.build().await?;
    h2.await?;
    let after = Utc::now();

    let gap = one_gap(&events);
    // Checkpoints are whole milliseconds, the end rounded up.
    let end1_ms = DateTime::from_timestamp_millis(end1.timestamp_millis() + 1).unwrap();
    assert!(
        gap.requested == end1_ms || gap.requested.timestamp_millis() == end1.timestamp_millis(),
        "requested {} for a checkpoint at {end1}",
        gap.requested
    );
    check_first_readable(&gap, before, after);
    assert_eq!(pks(&run2), (100..110).collect::<Vec<_>>());
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

#[tokio::test]
async fn with_ttl_0_nothing_expires_and_no_gap_is_reported() -> anyhow::Result<()> {
    let (_cluster, session, ks) = table_with_ttl(0).await?;
    let start = Utc::now();
    write(&session, &ks, 0..10).await?;
    // With the default TTL of a day this start would be fine too; with `ttl: 0` even a
    // start long ago is: nothing is taken as expired.
    let end = Utc::now() + TimeDelta::milliseconds(1);
    let collected = Collected::default();
    let (b, events) = with_events(
        reader_of(&session, &ks, "t", collected.clone())
            .start_timestamp(start - TimeDelta::days(30))
            .end_timestamp(end),
    );
    let (_reader, handle) = b.build().await?;
    handle.await?;
    assert!(events.lock().unwrap().is_empty());
    // Exported from the start, at 0: no history was lost.
    assert_eq!(gap_gauge(&ks), Some(0.0));
    assert_eq!(pks(&collected), (0..10).collect::<Vec<_>>());
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

/// Issue 30, item 8: a member of a consumer group moves its units' starts past expired rows
/// as a reader outside a group does, and reports the gap the same way (before, the group
/// path moved the start without a word).
#[tokio::test]
async fn a_group_member_reports_the_gap_too() -> anyhow::Result<()> {
    let (_cluster, session, ks) = table_with_ttl(TTL).await?;

    let (start, end) = expired_then_live(&session, &ks).await?;

    let collected = Collected::default();
    let saver =
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t").await?;
    let (b, events) = with_events(
        reader_of(&session, &ks, "t", collected.clone())
            .checkpoint_saver(Arc::new(saver))
            .start_timestamp(start)
            .end_timestamp(end)
            .group("g")
            .member_id("a")
            .lease_duration(Duration::from_secs(2)),
    );
    let before = Utc::now();
    let (_reader, handle) = b.build().await?;
    handle.await?;
    let after = Utc::now();

    // The member also reports its units starting and stopping.
    let gaps: Vec<ExpiredGap> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ReaderEvent::ExpiredGap(g) => Some(g.clone()),
            _ => None,
        })
        .collect();
    let [gap] = gaps.as_slice() else {
        panic!("one gap expected: {gaps:?}");
    };
    // A unit's start is kept in the lease table, in whole milliseconds.
    assert_eq!(gap.requested.timestamp_millis(), start.timestamp_millis());
    check_first_readable(gap, before, after);
    assert!(gap_gauge(&ks).is_some_and(|g| g > 0.0));
    assert_eq!(pks(&collected), (100..110).collect::<Vec<_>>());
    drop_keyspace(&session, &ks).await?;
    Ok(())
}
