//! Stop and restart with checkpoints: nothing is lost, and only rows after the last
//! checkpoint are delivered twice — also when the reader's handle is dropped without `stop()`.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use scylla_cdc::{CDCCheckpointSaver, TableBackedCheckpointSaver};
use scylla_emulator::EmbeddedCluster;

use crate::support::{
    Collected, Workload, cluster_and_keyspace, create_workload_table, drop_keyspace, reader_of,
    wait_for,
};

async fn restart_loses_nothing(abrupt: bool) -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await?;
    create_workload_table(&session, &ks, "t").await?;
    let saver = || async {
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t").await
    };
    let reader = |collected: Collected, saver: Arc<dyn CDCCheckpointSaver>| {
        reader_of(&session, &ks, "t", collected)
            .checkpoint_saver(saver)
            .pause_between_saves(Duration::from_millis(200))
    };

    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let workload = Workload::start(session.clone(), &ks, "t", 2, 4).await?;
    let run1 = Collected::default();
    let (mut r1, h1) = reader(run1.clone(), Arc::new(saver().await?))
        .start_timestamp(start)
        .build()
        .await?;
    wait_for(Duration::from_secs(30), "rows in the first run", || async {
        run1.len() >= 100
    })
    .await;
    if abrupt {
        // Dropping the handle stops the reader (no `stop()` call, no final checkpoint). It
        // has wound down once it released the factory and every consumer, which hold the
        // only other references to what `run1` collects.
        drop(h1);
        drop(r1);
        wait_for(
            Duration::from_secs(10),
            "the dropped reader to end",
            || async { Arc::strong_count(&run1.0) == 1 },
        )
        .await;
    } else {
        r1.stop();
        tokio::time::timeout(Duration::from_secs(10), h1).await??;
    }
    let first = run1.snapshot();
    let check_saver = saver().await?;
    let mut checkpoints = BTreeMap::new();
    for c in &first {
        if let std::collections::btree_map::Entry::Vacant(e) = checkpoints.entry(c.stream) {
            e.insert(check_saver.load_last_checkpoint(&[c.stream]).await?);
        }
    }

    // Changes keep coming while the reader is down; the restart uses the default start
    // ("now"), which saved checkpoints override.
    let before = workload.rounds();
    workload
        .wait_for_rounds(before + 20, "writes while down")
        .await;
    let run2 = Collected::default();
    let (mut r2, h2) = reader(run2.clone(), Arc::new(saver().await?))
        .build()
        .await?;
    workload
        .wait_for_rounds(before + 40, "writes after restart")
        .await;
    let (expected, checksum) = workload.finish().await?;
    r2.stop_at(Utc::now());
    tokio::time::timeout(Duration::from_secs(60), h2).await??;
    let second = run2.snapshot();

    // Nothing lost: the union covers every write.
    let mut union: BTreeMap<i32, std::collections::BTreeSet<i32>> = BTreeMap::new();
    let mut sum = 0;
    for c in first.iter().chain(&second) {
        let (pk, seq) = (c.int("pk").unwrap(), c.int("seq").unwrap());
        if union.entry(pk).or_default().insert(seq) {
            sum += c.bigint("val").unwrap();
        }
    }
    for (pk, n) in &expected {
        assert_eq!(
            union.get(pk).map(|s| s.iter().copied().collect::<Vec<_>>()),
            Some((0..*n).collect()),
            "partition {pk}"
        );
    }
    assert_eq!(sum, checksum);

    // Duplicates only after the last checkpoint of their stream.
    let key = |c: &crate::support::Change| (c.stream, c.time, c.seq);
    let first_keys: std::collections::BTreeSet<_> = first.iter().map(key).collect();
    for c in second.iter().filter(|c| first_keys.contains(&key(c))) {
        let cp = checkpoints.get(&c.stream).copied().flatten();
        let cp = cp.expect("a duplicate in a stream without checkpoint");
        assert!(
            c.micros >= cp.timestamp_micros(),
            "{c:?} was delivered again although before the checkpoint {cp}"
        );
    }
    // The second run is in order per partition and has no duplicates of its own.
    let mut last: BTreeMap<i32, i32> = BTreeMap::new();
    for c in &second {
        let (pk, seq) = (c.int("pk").unwrap(), c.int("seq").unwrap());
        if let Some(prev) = last.insert(pk, seq) {
            assert!(seq > prev, "partition {pk}: {seq} after {prev}");
        }
    }
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_restart() -> anyhow::Result<()> {
    restart_loses_nothing(false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_without_stop_and_restart() -> anyhow::Result<()> {
    restart_loses_nothing(true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_table_is_shared_by_readers() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await?;
    let a = TableBackedCheckpointSaver::new(session.clone(), &ks, "cp", &ks, "a").await?;
    let b = TableBackedCheckpointSaver::new(session.clone(), &ks, "cp", &ks, "b").await?;
    let a2 = TableBackedCheckpointSaver::new(session.clone(), &ks, "cp", &ks, "a")
        .await?
        .with_reader_name("other")
        .with_ttl(Duration::from_secs(3600));
    let s = scylla_cdc::StreamID::new([7; 16]);
    let g = scylla_cdc::GenerationTimestamp::new(Utc::now());
    let t = chrono::DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap();
    a.save_checkpoint(&scylla_cdc::Checkpoint::new(t, vec![s], g))
        .await?;
    a.save_new_generation(&g).await?;
    assert_eq!(a.load_last_checkpoint(&[s]).await?, Some(t));
    assert_eq!(b.load_last_checkpoint(&[s]).await?, None);
    assert_eq!(a2.load_last_checkpoint(&[s]).await?, None);
    assert!(b.load_last_generation().await?.is_none());
    assert_eq!(
        a.load_last_generation()
            .await?
            .map(|g| g.timestamp.timestamp_millis()),
        Some(g.timestamp.timestamp_millis())
    );
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}

/// A reader without CREATE permission uses a checkpoint table made beforehand from
/// `create_table_cql`; pointing it at a missing table is an error naming the table.
#[tokio::test]
async fn an_existing_checkpoint_table_needs_no_create() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder().nodes(1)).await?;

    let missing = TableBackedCheckpointSaver::existing(session.clone(), &ks, "progress", &ks, "t")
        .await
        .err()
        .expect("no checkpoint table yet");
    assert!(missing.to_string().contains("progress"), "{missing}");

    session
        .query_unpaged(
            TableBackedCheckpointSaver::create_table_cql(&ks, "progress"),
            (),
        )
        .await?;
    let saver =
        TableBackedCheckpointSaver::existing(session.clone(), &ks, "progress", &ks, "t").await?;
    // A CQL timestamp holds milliseconds.
    let now = chrono::DateTime::from_timestamp_millis(Utc::now().timestamp_millis())
        .expect("now is in range");
    let generation = scylla_cdc::GenerationTimestamp::from(now);
    saver.save_new_generation(&generation).await?;
    assert_eq!(saver.load_last_generation().await?, Some(generation));

    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
