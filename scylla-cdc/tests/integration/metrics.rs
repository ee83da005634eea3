//! The reader's metrics (`metrics` facade) and `CDCLogReader::progress()` after a known
//! workload: rows, changes, windows, streams, and a generation switch when a node is added.
//!
//! Runs against the embedded cluster only (it adds a node): with `SCYLLA_URI` set, the test
//! reports itself skipped. The cluster uses the loopback range 127.0.81.*.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla_cdc::Progress;
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Collected, VNODES_RF3, create_simple_table, metric, metric_values, metrics_recorder,
    new_keyspace, reader_of, wait_for,
};

/// Checks that the metrics of `ks.t` say what `progress` says.
fn assert_metrics_agree(ks: &str, p: &Progress) {
    let values = metric_values();
    let m = |name| metric(&values, ks, name, None).unwrap_or(0.0);
    assert_eq!(m("scylla_cdc_rows_total"), p.rows as f64, "{p:?}");
    assert_eq!(m("scylla_cdc_changes_total"), p.changes as f64, "{p:?}");
    assert_eq!(m("scylla_cdc_windows_total"), p.windows as f64, "{p:?}");
    assert_eq!(m("scylla_cdc_streams"), p.streams as f64, "{p:?}");
    assert_eq!(
        m("scylla_cdc_generation_switches_total"),
        p.generation_switches as f64,
        "{p:?}"
    );
    assert_eq!(
        metric(
            &values,
            ks,
            "scylla_cdc_consumer_errors_total",
            Some(("outcome", "stop"))
        )
        .unwrap_or(0.0),
        p.consumer_errors as f64
    );
    let w = p.low_watermark.expect("a watermark");
    let gauge = m("scylla_cdc_low_watermark_seconds");
    assert!(
        (gauge - w.timestamp_micros() as f64 / 1e6).abs() < 1e-3,
        "gauge {gauge}, watermark {w}"
    );
    assert!(metric(&values, ks, "scylla_cdc_lag_seconds", None).is_some());
}

/// The number of streams of the vnode generation starting at `generation`.
async fn streams_of(session: &Session, generation: DateTime<Utc>) -> anyhow::Result<u64> {
    let rows = session
        .query_unpaged(
            "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
            (generation,),
        )
        .await?
        .into_rows_result()?;
    let mut n = 0;
    for row in rows.rows::<(Option<Vec<Vec<u8>>>,)>()? {
        n += row?.0.map_or(0, |s| s.len() as u64);
    }
    Ok(n)
}

/// The latest generation's timestamp.
async fn latest_generation(session: &Session) -> anyhow::Result<DateTime<Utc>> {
    let rows = session
        .query_unpaged(
            "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
            (),
        )
        .await?
        .into_rows_result()?;
    let mut latest = None;
    for row in rows.rows::<(DateTime<Utc>,)>()? {
        latest = latest.max(Some(row?.0));
    }
    latest.ok_or_else(|| anyhow::anyhow!("no generation"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_progress_count_a_known_workload() -> anyhow::Result<()> {
    if !embedded_only("metrics_and_progress_count_a_known_workload", "adds a node") {
        return Ok(());
    }
    setup_tracing();
    metrics_recorder();
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .vnodes_per_node(4)
        .address(Ipv4Addr::new(127, 0, 81, 1))
        .generation_delay(Duration::from_secs(2))
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = new_keyspace(&session, VNODES_RF3).await?;
    create_simple_table(&session, &ks, "t").await?;
    let generation = latest_generation(&session).await?;
    let start = Utc::now() - TimeDelta::seconds(1);

    // 20 batches of 3 rows of one partition (one change each: one `cdc$time`, batch
    // sequence numbers 0..3) and 10 single writes: 70 rows in 30 changes.
    for pk in 0..20 {
        session
            .query_unpaged(
                format!(
                    "BEGIN UNLOGGED BATCH \
                     INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, 0, 0); \
                     INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, 1, 1); \
                     INSERT INTO {ks}.t (pk, ck, v) VALUES ({pk}, 2, 2); \
                     APPLY BATCH"
                ),
                (),
            )
            .await?;
    }
    for pk in 100..110 {
        session
            .query_unpaged(
                format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, 0, 0)"),
                (pk,),
            )
            .await?;
    }
    let written_until = Utc::now();

    let collected = Collected::default();
    let (mut reader, handle) = reader_of(&session, &ks, "t", collected.clone())
        .start_timestamp(start)
        .build()
        .await?;
    let handle = tokio::spawn(handle);

    // Everything written is read once the watermark passes the last write.
    let mut watermark = reader.low_watermark();
    tokio::time::timeout(
        Duration::from_secs(60),
        watermark.wait_for(|w| w.is_some_and(|w| w >= written_until)),
    )
    .await??;
    let p = reader.progress();
    let changes = collected.snapshot();
    let distinct: BTreeSet<_> = changes.iter().map(|c| (c.stream, c.time)).collect();
    assert_eq!((changes.len(), distinct.len()), (70, 30), "the workload");
    assert_eq!((p.rows, p.changes), (70, 30), "{p:?}");
    assert!(p.windows > 0, "{p:?}");
    assert_eq!(p.streams, streams_of(&session, generation).await?, "{p:?}");
    assert_eq!((p.generation_switches, p.consumer_errors), (0, 0), "{p:?}");
    assert!(p.lag.is_some_and(|l| l < Duration::from_secs(60)), "{p:?}");
    assert_metrics_agree(&ks, &p);

    // A node joins: a new generation, read after the old one.
    let new_generation = cluster.add_node().await?;
    session
        .query_unpaged(
            format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, 0, 0)"),
            (200,),
        )
        .await?;
    wait_for(Duration::from_secs(60), "the generation switch", || async {
        reader.progress().generation_switches == 1
    })
    .await;
    tokio::time::timeout(
        Duration::from_secs(60),
        watermark.wait_for(|w| w.is_some_and(|w| w >= new_generation)),
    )
    .await??;
    reader.stop_at(Utc::now());
    tokio::time::timeout(Duration::from_secs(60), handle).await???;

    let p = reader.progress();
    assert_eq!(p.generation_switches, 1, "{p:?}");
    assert_eq!(
        p.streams,
        streams_of(&session, new_generation).await?,
        "{p:?}"
    );
    assert_ne!(p.streams, streams_of(&session, generation).await?);
    assert_eq!((p.rows, p.changes), (71, 31), "{p:?}");
    assert_eq!(collected.len(), 71);
    assert_metrics_agree(&ks, &p);
    cluster.shutdown().await;
    Ok(())
}
