//! Rows a consumer cannot take, against the embedded cluster: a row given up on is written to
//! a dead-letter table in Scylla and reading goes on; with `Stop` the reader ends naming the
//! row and a restart from the checkpoints delivers it again; a panicking consumer is an error
//! of its row, not a crash; a change a change consumer cannot take is written as its rows.
//!
//! Runs against the embedded cluster, or against the real Scylla of `SCYLLA_URI` when it is
//! set.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use scylla::client::session::Session;
use scylla_cdc::{
    CDCError, CDCLogReaderBuilder, CDCRow, Change, ChangeConsumer, ChangeConsumerFactory, Consumer,
    ConsumerErrorPolicy, ConsumerFactory, DeadLetterTable, TableBackedCheckpointSaver,
};
use scylla_cdc_test_utils::{TestCluster, setup_tracing};
use scylla_emulator::EmbeddedCluster;

use crate::support::{create_simple_table, drop_keyspace, exec, fast, new_cdc_keyspace, wait_for};

/// What a [`Picky`] consumer does with the row whose `v` is `bad`.
#[derive(Clone, Copy)]
enum Refusal {
    Error,
    Panic,
}

/// Records every `v` it takes; refuses (or panics on) the row with `v == bad`.
#[derive(Clone)]
struct Picky {
    bad: Option<i32>,
    refusal: Refusal,
    taken: Arc<Mutex<Vec<i32>>>,
}

#[async_trait]
impl Consumer for Picky {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let v = row.get_value_as::<i32>("v")?.unwrap_or_default();
        if Some(v) == self.bad {
            match self.refusal {
                Refusal::Error => anyhow::bail!("the consumer cannot take v={v}"),
                Refusal::Panic => panic!("consumer bug at v={v}"),
            }
        }
        self.taken.lock().unwrap().push(v);
        Ok(())
    }
}

#[async_trait]
impl ConsumerFactory for Picky {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(self.clone())
    }
}

impl Picky {
    fn new(bad: Option<i32>, refusal: Refusal) -> Self {
        Self {
            bad,
            refusal,
            taken: Arc::default(),
        }
    }

    fn taken(&self) -> Vec<i32> {
        let mut v = self.taken.lock().unwrap().clone();
        v.sort_unstable();
        v
    }
}

/// A keyspace with `t (pk int, ck int, v int)` with CDC, and rows v = 0..n in one partition.
async fn table_with_rows(session: &Session, n: i32) -> anyhow::Result<String> {
    let ks = new_cdc_keyspace(session, 1).await?;
    create_simple_table(session, &ks, "t").await?;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, ?, ?)"))
        .await?;
    for v in 0..n {
        session.execute_unpaged(&insert, (v, v)).await?;
    }
    Ok(ks)
}

#[tokio::test]
async fn a_row_given_up_on_goes_to_the_dead_letter_table() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let ks = table_with_rows(&session, 6).await?;
    let dead_letters = Arc::new(DeadLetterTable::new(session.clone(), &ks, "dead").await?);
    let consumer = Picky::new(Some(3), Refusal::Error);
    let (mut reader, handle) = fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace(&ks)
        .table_name("t")
        .start_timestamp(start)
        .consumer_factory(Arc::new(consumer.clone()))
        .on_consumer_error(
            ConsumerErrorPolicy::dead_letter(dead_letters).with_retry(2, Duration::from_millis(10)),
        )
        .build()
        .await?;
    wait_for(
        Duration::from_secs(30),
        "rows after the bad one",
        || async { consumer.taken().len() == 5 },
    )
    .await;
    assert_eq!(consumer.taken(), vec![0, 1, 2, 4, 5]);
    assert_eq!(reader.progress().rows_dead_lettered, 1);
    assert_eq!(reader.progress().consumer_retries, 2);

    let rows = session
        .query_unpaged(
            format!(
                "SELECT table_name, stream_id, time, batch_seq_no, operation, error, attempts, \
                 columns FROM {ks}.dead WHERE keyspace_name = ? AND table_name = 't'"
            ),
            (&ks,),
        )
        .await?
        .into_rows_result()?;
    type Letter = (
        String,
        Vec<u8>,
        scylla::value::CqlTimeuuid,
        i32,
        String,
        String,
        i32,
        std::collections::HashMap<String, String>,
    );
    let letters: Vec<Letter> = rows.rows::<Letter>()?.collect::<Result<_, _>>()?;
    assert_eq!(letters.len(), 1, "{letters:?}");
    let (table, stream, time, seq, op, error, attempts, columns) = &letters[0];
    assert_eq!((table.as_str(), *seq, *attempts), ("t", 0, 3));
    assert_eq!(stream.len(), 16);
    assert_eq!(uuid::Uuid::from(*time).get_version_num(), 1, "a timeuuid");
    assert_eq!(op, "RowInsert");
    assert!(error.contains("cannot take v=3"), "{error}");
    assert_eq!(columns.get("v").map(String::as_str), Some("3"));
    assert_eq!(columns.get("ck").map(String::as_str), Some("3"));

    reader.stop();
    handle.await?;
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

#[tokio::test]
async fn stop_names_the_row_and_a_restart_delivers_it_again() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let ks = table_with_rows(&session, 5).await?;
    let saver = || async {
        TableBackedCheckpointSaver::new(session.clone(), &ks, "checkpoints", &ks, "t").await
    };
    let reader = |consumer: Picky, policy: ConsumerErrorPolicy| {
        let session = session.clone();
        let ks = ks.clone();
        async move {
            fast(CDCLogReaderBuilder::new())
                .session(session)
                .keyspace(&ks)
                .table_name("t")
                .start_timestamp(start)
                .consumer_factory(Arc::new(consumer))
                .checkpoint_saver(Arc::new(saver().await?))
                .pause_between_saves(Duration::ZERO)
                .on_consumer_error(policy)
                .build()
                .await
        }
    };

    // A consumer that always fails on v=2 stops the reader after its retries.
    let first = Picky::new(Some(2), Refusal::Error);
    let (_r1, h1) = reader(
        first.clone(),
        ConsumerErrorPolicy::stop().with_retry(1, Duration::from_millis(10)),
    )
    .await?;
    let err = tokio::time::timeout(Duration::from_secs(30), h1)
        .await?
        .expect_err("the reader stops on the row");
    let text = err.to_string();
    match &err {
        CDCError::Consumer {
            keyspace,
            table,
            batch_seq_no,
            attempts,
            ..
        } => {
            assert_eq!((keyspace, table.as_str()), (&ks, "t"));
            assert_eq!((*batch_seq_no, *attempts), (0, 2));
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(text.contains("cannot take v=2"), "{text}");
    assert_eq!(first.taken(), vec![0, 1]);

    // Restarted with a consumer that takes everything: the failed row (and what follows)
    // is delivered, since the checkpoint never passed it.
    let second = Picky::new(None, Refusal::Error);
    let (mut r2, h2) = reader(second.clone(), ConsumerErrorPolicy::default()).await?;
    wait_for(Duration::from_secs(30), "the rows again", || async {
        second.taken().contains(&4)
    })
    .await;
    let taken = second.taken();
    assert!((2..5).all(|v| taken.contains(&v)), "{taken:?}");
    r2.stop();
    h2.await?;
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

#[tokio::test]
async fn a_panicking_consumer_is_an_error_of_its_row() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let ks = table_with_rows(&session, 4).await?;
    let build = |consumer: Picky, policy: ConsumerErrorPolicy| {
        fast(CDCLogReaderBuilder::new())
            .session(session.clone())
            .keyspace(&ks)
            .table_name("t")
            .start_timestamp(start)
            .consumer_factory(Arc::new(consumer))
            .on_consumer_error(policy)
            .build()
    };

    let stopping = Picky::new(Some(1), Refusal::Panic);
    let (_r, h) = build(stopping.clone(), ConsumerErrorPolicy::stop()).await?;
    let err = tokio::time::timeout(Duration::from_secs(30), h)
        .await?
        .expect_err("a panic stops the reader with the stop policy");
    assert!(matches!(err, CDCError::Consumer { .. }), "{err}");
    assert!(
        err.to_string().contains("panicked: consumer bug at v=1"),
        "{err}"
    );

    let skipping = Picky::new(Some(1), Refusal::Panic);
    let (mut r, h) = build(skipping.clone(), ConsumerErrorPolicy::skip()).await?;
    wait_for(
        Duration::from_secs(30),
        "the rows after the panic",
        || async { skipping.taken().len() == 3 },
    )
    .await;
    assert_eq!(skipping.taken(), vec![0, 2, 3]);
    assert_eq!(r.progress().rows_skipped, 1);
    r.stop();
    h.await?;
    drop_keyspace(&session, &ks).await?;
    Ok(())
}

/// Keeps the `v` of every change it takes; refuses the changes whose first row has
/// `v == bad`.
#[derive(Clone)]
struct PickyChanges {
    bad: i32,
    taken: Arc<Mutex<Vec<Vec<i32>>>>,
}

#[async_trait]
impl ChangeConsumer for PickyChanges {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        let vs: Vec<i32> = change
            .rows()
            .map(|r| r.get_value_as::<i32>("v").map(Option::unwrap_or_default))
            .collect::<Result<_, _>>()?;
        if vs.first() == Some(&self.bad) {
            anyhow::bail!("the consumer cannot take the change of v={}", self.bad);
        }
        self.taken.lock().unwrap().push(vs);
        Ok(())
    }
}

#[async_trait]
impl ChangeConsumerFactory for PickyChanges {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(self.clone())
    }
}

/// A change of three rows (a batch) that the change consumer cannot take is written to the
/// dead-letter table as its three rows, in order; the changes around it are taken.
#[tokio::test]
async fn a_change_given_up_on_goes_to_the_dead_letter_table_as_its_rows() -> anyhow::Result<()> {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(1)).await?;
    let session = cluster.session().await?;
    let start = Utc::now() - chrono::TimeDelta::seconds(1);
    let ks = table_with_rows(&session, 1).await?;
    session
        .query_unpaged(
            format!(
                "BEGIN UNLOGGED BATCH \
                 INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 11); \
                 INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 2, 12); \
                 INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 3, 13); \
                 APPLY BATCH"
            ),
            (),
        )
        .await?;
    exec(
        &session,
        format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 4, 4)"),
    )
    .await?;
    let dead_letters = Arc::new(DeadLetterTable::new(session.clone(), &ks, "dead").await?);
    let consumer = PickyChanges {
        bad: 11,
        taken: Arc::default(),
    };
    let (mut reader, handle) = fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace(&ks)
        .table_name("t")
        .start_timestamp(start)
        .change_consumer_factory(Arc::new(consumer.clone()))
        .on_consumer_error(
            ConsumerErrorPolicy::dead_letter(dead_letters).with_retry(1, Duration::from_millis(10)),
        )
        .build()
        .await?;
    let taken = || consumer.taken.lock().unwrap().clone();
    wait_for(
        Duration::from_secs(30),
        "the changes around the bad one",
        || async { taken().len() == 2 },
    )
    .await;
    assert_eq!(taken(), vec![vec![0], vec![4]]);
    assert_eq!(reader.progress().rows_dead_lettered, 1);
    assert_eq!(reader.progress().consumer_retries, 1);

    type Letter = (
        Vec<u8>,
        scylla::value::CqlTimeuuid,
        i32,
        String,
        i32,
        std::collections::HashMap<String, String>,
    );
    let letters: Vec<Letter> = session
        .query_unpaged(
            format!(
                "SELECT stream_id, time, batch_seq_no, error, attempts, columns FROM {ks}.dead \
                 WHERE keyspace_name = ? AND table_name = 't'"
            ),
            (&ks,),
        )
        .await?
        .into_rows_result()?
        .rows::<Letter>()?
        .collect::<Result<_, _>>()?;
    // One letter per row of the change: one stream and `cdc$time`, its rows in order.
    let rows: Vec<(i32, Option<&str>)> = letters
        .iter()
        .map(|(_, _, seq, _, _, columns)| (*seq, columns.get("v").map(String::as_str)))
        .collect();
    assert_eq!(
        rows,
        vec![(0, Some("11")), (1, Some("12")), (2, Some("13"))],
        "{letters:?}"
    );
    for (stream, time, _, error, attempts, _) in &letters {
        assert_eq!((stream, time), (&letters[0].0, &letters[0].1));
        assert!(error.contains("cannot take the change of v=11"), "{error}");
        assert_eq!(*attempts, 2);
    }

    reader.stop();
    handle.await?;
    drop_keyspace(&session, &ks).await?;
    Ok(())
}
