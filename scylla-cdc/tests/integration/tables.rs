//! Several tables in one reader ([`CDCLogReaderBuilder::tables`]): each table keeps its own
//! checkpoints in one saver, rows say which table they are from, and a vnode and a tablet
//! keyspace both work.
//!
//! Runs against the embedded cluster (loopback range 127.0.84.*), or against the real Scylla
//! of `SCYLLA_URI` when it is set (the tablet case then reports itself skipped).

use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla_cdc::{
    CDCCheckpointSaver, CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory,
    TableBackedCheckpointSaver,
};
use scylla_cdc_test_utils::{embedded_only, setup_tracing, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;

use crate::support::{cluster_and_keyspace, drop_keyspace, exec, fast, wait_for};

/// A delivered row: the table its consumer was made for, the row's `table()`, and `v`.
type Seen = (String, String, i32);

/// Records every row of every table; one consumer per (table, stream group).
#[derive(Clone, Default)]
struct Rows(Arc<Mutex<Vec<Seen>>>);

impl Rows {
    fn of(&self, table: &str) -> Vec<i32> {
        let mut vs: Vec<i32> = self
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, t, _)| t == table)
            .map(|(_, _, v)| *v)
            .collect();
        vs.sort();
        vs
    }

    fn all(&self) -> Vec<Seen> {
        self.0.lock().unwrap().clone()
    }
}

struct Recorder {
    table: String,
    rows: Rows,
}

#[async_trait]
impl Consumer for Recorder {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let v = row
            .get_value_as::<i32>("v")?
            .ok_or_else(|| anyhow::anyhow!("a row without v"))?;
        self.rows
            .0
            .lock()
            .unwrap()
            .push((self.table.clone(), row.table().to_owned(), v));
        Ok(())
    }
}

#[async_trait]
impl ConsumerFactory for Rows {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        // Only a reader of one table may ask without saying which.
        Box::new(Recorder {
            table: "t1".into(),
            rows: self.clone(),
        })
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        Box::new(Recorder {
            table: table.to_owned(),
            rows: self.clone(),
        })
    }
}

async fn create_tables(session: &Session, ks: &str) -> anyhow::Result<()> {
    for t in ["t1", "t2"] {
        exec(
            session,
            format!(
                "CREATE TABLE {ks}.{t} (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                     WITH cdc = {{'enabled': true}}"
            ),
        )
        .await?;
    }
    Ok(())
}

/// Writes `v` for each value of `vs` into `table` (a partition per value).
async fn write(
    session: &Session,
    ks: &str,
    table: &str,
    vs: impl IntoIterator<Item = i32>,
) -> anyhow::Result<()> {
    let insert = session
        .prepare(format!(
            "INSERT INTO {ks}.{table} (pk, ck, v) VALUES (?, 0, ?)"
        ))
        .await?;
    for v in vs {
        session.execute_unpaged(&insert, (v, v)).await?;
    }
    Ok(())
}

/// Every delivered row was delivered by a consumer of its own table.
fn assert_rows_of_their_tables(rows: &Rows) {
    for (consumer_table, row_table, v) in rows.all() {
        assert_eq!(consumer_table, row_table, "v={v}");
    }
}

async fn stop_now(
    mut reader: scylla_cdc::CDCLogReader,
    handle: scylla_cdc::CDCReaderHandle,
) -> anyhow::Result<()> {
    reader.stop_at(Utc::now());
    tokio::time::timeout(Duration::from_secs(30), handle).await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_added_to_a_reader_starts_at_the_start_and_the_other_resumes() -> anyhow::Result<()>
{
    let (cluster, session, ks) = cluster_and_keyspace(
        EmbeddedCluster::builder()
            .nodes(1)
            .address(Ipv4Addr::new(127, 0, 84, 1)),
    )
    .await?;
    create_tables(&session, &ks).await?;
    let saver: Arc<dyn CDCCheckpointSaver> = Arc::new(
        TableBackedCheckpointSaver::new(session.clone(), &ks, "cdc_checkpoints", &ks, "t1").await?,
    );
    let reader = |rows: &Rows, start: DateTime<Utc>| {
        fast(CDCLogReaderBuilder::new())
            .session(session.clone())
            .keyspace(&ks)
            .consumer_factory(Arc::new(rows.clone()))
            .checkpoint_saver(saver.clone())
            .pause_between_saves(Duration::from_millis(200))
            .start_timestamp(start)
    };
    let start = Utc::now() - TimeDelta::seconds(1);
    write(&session, &ks, "t1", 1..=5).await?;
    write(&session, &ks, "t2", 101..=105).await?;

    // Run 1: t1 alone, up to its checkpoint.
    let run1 = Rows::default();
    let (r1, h1) = reader(&run1, start).table_name("t1").build().await?;
    wait_for(Duration::from_secs(30), "t1's first rows", || async {
        run1.of("t1").len() >= 5
    })
    .await;
    stop_now(r1, h1).await?;
    assert_eq!(run1.of("t1"), (1..=5).collect::<Vec<_>>());
    assert!(run1.of("t2").is_empty());

    // Run 2: t1 and t2 together, with the same saver and the same start: t1 resumes from its
    // checkpoint (its first rows are not delivered again), t2 starts at the start.
    write(&session, &ks, "t1", 6..=10).await?;
    write(&session, &ks, "t2", 106..=110).await?;
    let run2 = Rows::default();
    let (r2, h2) = reader(&run2, start).tables(["t1", "t2"]).build().await?;
    wait_for(Duration::from_secs(30), "both tables' rows", || async {
        run2.of("t1").len() >= 5 && run2.of("t2").len() >= 10
    })
    .await;
    let progress = r2.progress_handle();
    stop_now(r2, h2).await?;
    assert_eq!(run2.of("t1"), (6..=10).collect::<Vec<_>>());
    assert_eq!(run2.of("t2"), (101..=110).collect::<Vec<_>>());
    assert_rows_of_their_tables(&run2);

    let p = progress.progress();
    let per_table: Vec<(&str, u64)> = p
        .tables
        .iter()
        .map(|t| (t.table.as_str(), t.progress.rows))
        .collect();
    assert_eq!(per_table, vec![("t1", 5), ("t2", 10)]);
    assert_eq!(p.rows, 15);
    let least = p.tables.iter().map(|t| t.progress.low_watermark).min();
    assert_eq!(Some(p.low_watermark), least);

    // t2 now has progress of its own, in its own partition of the checkpoint table.
    let t2 = saver.for_table("t2")?;
    assert!(t2.load_last_generation().await?.is_some());
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tables_of_a_tablet_keyspace_in_one_reader() -> anyhow::Result<()> {
    if !embedded_only(
        "two_tables_of_a_tablet_keyspace_in_one_reader",
        "uses tablets",
    ) {
        return Ok(());
    }
    setup_tracing();
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .address(Ipv4Addr::new(127, 0, 84, 11))
        .start()
        .await?;
    let session = cluster.session().await?;
    let ks = unique_keyspace_name();
    exec(
        &session,
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1}} AND tablets = {{'initial': 4}}"
        ),
    )
    .await?;
    create_tables(&session, &ks).await?;
    let rows = Rows::default();
    let (r, h) = fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace(&ks)
        .tables(["t1", "t2"])
        .consumer_factory(Arc::new(rows.clone()))
        .start_timestamp(Utc::now() - TimeDelta::seconds(1))
        .build()
        .await?;
    write(&session, &ks, "t1", 1..=20).await?;
    write(&session, &ks, "t2", 101..=120).await?;
    wait_for(Duration::from_secs(30), "both tables' rows", || async {
        rows.of("t1").len() >= 20 && rows.of("t2").len() >= 20
    })
    .await;
    let progress = r.progress();
    stop_now(r, h).await?;
    assert_eq!(rows.of("t1"), (1..=20).collect::<Vec<_>>());
    assert_eq!(rows.of("t2"), (101..=120).collect::<Vec<_>>());
    assert_rows_of_their_tables(&rows);
    // Each table reads its own streams (4 tablets each).
    let streams: Vec<u64> = progress.tables.iter().map(|t| t.progress.streams).collect();
    assert_eq!(streams, vec![4, 4]);
    cluster.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_or_one_without_cdc_is_named() -> anyhow::Result<()> {
    let (cluster, session, ks) = cluster_and_keyspace(
        EmbeddedCluster::builder()
            .nodes(1)
            .address(Ipv4Addr::new(127, 0, 84, 21)),
    )
    .await?;
    create_tables(&session, &ks).await?;
    exec(
        &session,
        format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY, v int)"),
    )
    .await?;
    let build = |tables: &[&str]| {
        CDCLogReaderBuilder::new()
            .session(session.clone())
            .keyspace(&ks)
            .tables(tables.iter().copied())
            .consumer_factory(Arc::new(Rows::default()))
            .build()
    };
    let missing = build(&["t1", "nope", "t2"]).await.err().unwrap();
    assert!(
        matches!(&missing, scylla_cdc::CDCError::TableNotFound { table, .. } if table == "nope"),
        "{missing}"
    );
    let plain = build(&["t1", "plain"]).await.err().unwrap();
    assert!(
        matches!(&plain, scylla_cdc::CDCError::CdcNotEnabled { table, .. } if table == "plain"),
        "{plain}"
    );
    let twice = build(&["t1", "t1"]).await.err().unwrap();
    assert!(twice.to_string().contains("`t1`"), "{twice}");
    drop_keyspace(&session, &ks).await?;
    cluster.shutdown().await;
    Ok(())
}
