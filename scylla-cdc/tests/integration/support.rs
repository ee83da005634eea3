//! Helpers shared by the integration tests: a consumer that records owned copies of the
//! rows, waiting for a condition with a timeout, keyspaces that work on the embedded
//! cluster and on a real Scylla (`SCYLLA_URI`) alike, and the process's one metrics recorder.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use scylla::client::session::Session;
use scylla::value::CqlValue;
use scylla_cdc::{
    CDCLogReader, CDCLogReaderBuilder, CDCReaderHandle, CDCRow, Consumer, ConsumerFactory,
    OperationType, StreamID,
};
use scylla_cdc_test_utils::{TestCluster, setup_tracing, unique_keyspace_name};
use scylla_emulator::ClusterBuilder;
use uuid::Uuid;

/// An owned copy of a delivered row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub(crate) stream: StreamID,
    pub(crate) time: Uuid,
    pub(crate) micros: i64,
    pub(crate) seq: i32,
    pub(crate) op: OperationType,
    pub(crate) ttl: Option<i64>,
    pub(crate) end_of_batch: bool,
    pub(crate) is_expiration: bool,
    /// Non-null values of the base table's columns.
    pub(crate) values: BTreeMap<String, CqlValue>,
    /// Columns whose `cdc$deleted_` flag is set.
    pub(crate) deleted: BTreeSet<String>,
    /// Non-null `cdc$deleted_elements_` values.
    pub(crate) deleted_elements: BTreeMap<String, CqlValue>,
    /// Delivered late, by an early reads' confirmation (`CDCRow::is_late`).
    pub(crate) late: bool,
    /// When the consumer got it (µs since the epoch, this machine's clock).
    pub(crate) delivered_micros: i64,
}

impl Change {
    /// Copies a row, decoding every column.
    pub(crate) fn from_row(row: &CDCRow<'_>) -> anyhow::Result<Self> {
        let mut values = BTreeMap::new();
        let mut deleted = BTreeSet::new();
        let mut deleted_elements = BTreeMap::new();
        let names: Vec<String> = row.get_non_cdc_column_names().map(str::to_owned).collect();
        for name in names {
            if let Some(v) = row.get_value(&name)? {
                values.insert(name.clone(), v);
            }
            if row.is_value_deleted(&name) {
                deleted.insert(name.clone());
            }
            if row.collection_exists(&name)
                && let Some(v) = row.get_deleted_elements(&name)?
            {
                deleted_elements.insert(name.clone(), v);
            }
        }
        Ok(Self {
            stream: row.stream_id,
            time: row.time,
            micros: row.timestamp_micros(),
            seq: row.batch_seq_no,
            op: row.operation,
            ttl: row.ttl,
            end_of_batch: row.end_of_batch,
            is_expiration: row.is_expiration,
            values,
            deleted,
            deleted_elements,
            late: row.is_late,
            delivered_micros: chrono::Utc::now().timestamp_micros(),
        })
    }

    /// The value of an `int` column.
    pub(crate) fn int(&self, name: &str) -> Option<i32> {
        match self.values.get(name) {
            Some(CqlValue::Int(v)) => Some(*v),
            _ => None,
        }
    }

    /// The value of a `bigint` column.
    pub(crate) fn bigint(&self, name: &str) -> Option<i64> {
        match self.values.get(name) {
            Some(CqlValue::BigInt(v)) => Some(*v),
            _ => None,
        }
    }
}

/// Every row delivered, in delivery order, across all consumers.
#[derive(Clone, Default)]
pub(crate) struct Collected(pub Arc<Mutex<Vec<Change>>>);

impl Collected {
    pub(crate) fn snapshot(&self) -> Vec<Change> {
        self.0.lock().unwrap().clone()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

struct Collector {
    out: Collected,
}

#[async_trait]
impl Consumer for Collector {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let change = Change::from_row(&row)?;
        self.out.0.lock().unwrap().push(change);
        Ok(())
    }
}

#[async_trait]
impl ConsumerFactory for Collected {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Collector { out: self.clone() })
    }
}

/// Waits until `cond` holds, checking every 50 ms, failing after `timeout`.
pub(crate) async fn wait_for<F, Fut>(timeout: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if cond().await {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A reader of `ks.table` with [`fast`] windows, delivering every row to `consumers`; the
/// test adds its start, end and other settings, then builds it.
pub(crate) fn reader_of(
    session: &Arc<Session>,
    ks: &str,
    table: &str,
    consumers: impl ConsumerFactory + 'static,
) -> CDCLogReaderBuilder {
    fast(CDCLogReaderBuilder::new())
        .session(session.clone())
        .keyspace(ks)
        .table_name(table)
        .consumer_factory(Arc::new(consumers))
}

/// Early reads as the tests use them with [`fast`] windows (a safety interval of 1 s): a
/// 100 ms lag, a poll every 100 ms.
pub(crate) fn fast_early_reads() -> scylla_cdc::EarlyReads {
    scylla_cdc::EarlyReads::default()
        .lag(Duration::from_millis(100))
        .poll_interval(Duration::from_millis(100))
}

/// How many of `changes` were delivered less than `safety` after their write: only early
/// reads can do that (without them a row is read once now - safety has passed its time).
pub(crate) fn delivered_early(changes: &[Change], safety: Duration) -> usize {
    let safety = safety.as_micros() as i64;
    changes
        .iter()
        .filter(|c| c.delivered_micros < c.micros + safety)
        .count()
}

/// Small windows so that tests run in seconds.
pub(crate) fn fast(builder: CDCLogReaderBuilder) -> CDCLogReaderBuilder {
    builder
        .window_size(Duration::from_secs(1))
        .safety_interval(Duration::from_secs(1))
        .sleep_interval(Duration::from_millis(100))
}

/// Checks that no log row was delivered twice and that, per partition `pk`, the delivered
/// writes have `seq` values exactly `0..expected[pk]` in order; returns the sum of `val` over
/// the writes (the checksum). A row flagged late (early reads: it became visible after the
/// early read had passed its time) may come after later writes of its partition, as the
/// crate docs allow; every other row must come in write order.
///
/// A write is identified by `(pk, seq, write timestamp)`: the workload retries a write whose
/// outcome it could not know (a connection broken by a stopped node) with the same timestamp,
/// and when the first attempt had been applied, Scylla logs the write twice, as two log rows
/// with the same time and different random low bits (spec §6.1). Those are two distinct log
/// rows, each rightly delivered once, of one write.
pub(crate) fn check_exactly_once_in_order(
    changes: &[Change],
    expected: &BTreeMap<i32, i32>,
) -> i64 {
    let mut rows = BTreeSet::new();
    let mut per_pk: BTreeMap<i32, Vec<(i32, i64, bool)>> = BTreeMap::new();
    let mut checksum = 0i64;
    for c in changes {
        assert!(
            rows.insert((c.stream, c.time, c.seq)),
            "log row delivered twice: {c:?}"
        );
        let (Some(pk), Some(seq)) = (c.int("pk"), c.int("seq")) else {
            panic!("row without pk/seq: {c:?}");
        };
        let writes = per_pk.entry(pk).or_default();
        if writes.iter().any(|w| (w.0, w.1) == (seq, c.micros)) {
            continue; // the same write, logged again by a retry
        }
        writes.push((seq, c.micros, c.late));
        checksum += c.bigint("val").unwrap_or(0);
    }
    for (pk, n) in expected {
        let writes = per_pk.remove(pk).unwrap_or_default();
        let on_time: Vec<i32> = writes.iter().filter(|w| !w.2).map(|w| w.0).collect();
        assert!(
            on_time.is_sorted(),
            "partition {pk}: changes out of order: {on_time:?}"
        );
        let mut got: Vec<i32> = writes.iter().map(|w| w.0).collect();
        got.sort_unstable();
        assert_eq!(
            got,
            (0..*n).collect::<Vec<_>>(),
            "partition {pk}: changes lost or duplicated"
        );
    }
    assert!(
        per_pk.is_empty(),
        "changes of unexpected partitions: {per_pk:?}"
    );
    checksum
}

/// Per partition: rows written and the sum of their `val`.
pub(crate) type Written = BTreeMap<i32, (i32, i64)>;

/// Concurrent writers: each owns some partitions and writes `(pk, seq, val)` rows with
/// `seq = 0, 1, 2, ...` per partition, in order, until stopped.
pub(crate) struct Workload {
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Rounds completed (every partition got one more row per round).
    pub(crate) rounds: Arc<std::sync::atomic::AtomicI32>,
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<Written>>>,
}

/// Write timestamps: strictly increasing microseconds, so that rows of one partition have
/// distinct, ordered `cdc$time`s whatever the clock's resolution.
fn next_timestamp() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = chrono::Utc::now().timestamp_micros();
    let mut prev = LAST.load(Ordering::SeqCst);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange(prev, next, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

/// The `val` written for `(pk, seq)`.
pub(crate) fn val_of(pk: i32, seq: i32) -> i64 {
    (pk as i64) * 1_000_003 + (seq as i64) * 7 + 1
}

impl Workload {
    /// Starts `writers` writer tasks with `partitions` partitions each on `ks.table`
    /// (`pk int, seq int, val bigint, PRIMARY KEY (pk, seq)`).
    pub(crate) async fn start(
        session: Arc<Session>,
        ks: &str,
        table: &str,
        writers: i32,
        partitions: i32,
    ) -> anyhow::Result<Self> {
        let insert = session
            .prepare(format!(
                "INSERT INTO {ks}.{table} (pk, seq, val) VALUES (?, ?, ?) USING TIMESTAMP ?"
            ))
            .await?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let rounds = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let mut tasks = Vec::new();
        for w in 0..writers {
            let session = session.clone();
            let insert = insert.clone();
            let stop = stop.clone();
            let rounds = rounds.clone();
            tasks.push(tokio::spawn(async move {
                let mut written: BTreeMap<i32, (i32, i64)> = BTreeMap::new();
                let pks: Vec<i32> = (0..partitions).map(|p| w * partitions + p).collect();
                let mut seq = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    for &pk in &pks {
                        let val = val_of(pk, seq);
                        // A transient failure here would make the expected set ambiguous:
                        // retry the same write (idempotent: same timestamp).
                        let ts = next_timestamp();
                        let mut attempts = 0;
                        loop {
                            match session.execute_unpaged(&insert, (pk, seq, val, ts)).await {
                                Ok(_) => break,
                                Err(e) if attempts < 20 => {
                                    attempts += 1;
                                    tracing::warn!(error = %e, "write failed; retrying");
                                    tokio::time::sleep(Duration::from_millis(100)).await;
                                }
                                Err(e) => return Err(e.into()),
                            }
                        }
                        let e = written.entry(pk).or_insert((0, 0));
                        e.0 = seq + 1;
                        e.1 += val;
                    }
                    seq += 1;
                    if w == 0 {
                        rounds.store(seq, std::sync::atomic::Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(written)
            }));
        }
        Ok(Self {
            stop,
            rounds,
            tasks,
        })
    }

    /// Rounds completed by the first writer.
    pub(crate) fn rounds(&self) -> i32 {
        self.rounds.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits (at most 30 s) until the first writer has completed `n` rounds.
    pub(crate) async fn wait_for_rounds(&self, n: i32, what: &str) {
        wait_for(Duration::from_secs(30), what, || async {
            self.rounds() >= n
        })
        .await;
    }

    /// Stops the writers; returns rows written per partition and the checksum of `val`.
    pub(crate) async fn finish(self) -> anyhow::Result<(BTreeMap<i32, i32>, i64)> {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut expected = BTreeMap::new();
        let mut checksum = 0;
        for t in self.tasks {
            for (pk, (n, sum)) in t.await?? {
                expected.insert(pk, n);
                checksum += sum;
            }
        }
        Ok((expected, checksum))
    }
}

/// A reader reading the workload table while [`Workload`] writers write to it.
pub(crate) struct ReadWhileWriting {
    pub(crate) ks: String,
    /// What the reader delivered.
    pub(crate) collected: Collected,
    pub(crate) reader: CDCLogReader,
    pub(crate) handle: CDCReaderHandle,
    pub(crate) workload: Workload,
}

impl ReadWhileWriting {
    /// Creates the workload table `t` in keyspace `ks`, starts a reader of it from a second
    /// ago, then `writers` writers of `partitions` partitions each.
    pub(crate) async fn start(
        session: &Arc<Session>,
        ks: String,
        writers: i32,
        partitions: i32,
    ) -> anyhow::Result<Self> {
        Self::start_with(session, ks, writers, partitions, |b| b).await
    }

    /// As [`ReadWhileWriting::start`], the reader's builder passed through `configure`.
    pub(crate) async fn start_with(
        session: &Arc<Session>,
        ks: String,
        writers: i32,
        partitions: i32,
        configure: impl FnOnce(CDCLogReaderBuilder) -> CDCLogReaderBuilder,
    ) -> anyhow::Result<Self> {
        create_workload_table(session, &ks, "t").await?;
        let collected = Collected::default();
        let builder = reader_of(session, &ks, "t", collected.clone())
            .start_timestamp(chrono::Utc::now() - chrono::TimeDelta::seconds(1));
        let (reader, handle) = configure(builder).build().await?;
        let workload = Workload::start(session.clone(), &ks, "t", writers, partitions).await?;
        Ok(Self {
            ks,
            collected,
            reader,
            handle,
            workload,
        })
    }

    /// Waits (at most 30 s) until the reader has delivered `n` rows more than it has now.
    pub(crate) async fn more_rows(&self, n: usize, what: &str) {
        let seen = self.collected.len();
        wait_for(Duration::from_secs(30), what, || async {
            self.collected.len() > seen + n
        })
        .await;
    }

    /// Stops the writers, lets the reader read up to now, and checks that it delivered
    /// every write once, in order ([`check_exactly_once_in_order`]); returns what it
    /// delivered.
    pub(crate) async fn finish_exactly_once(mut self) -> anyhow::Result<Vec<Change>> {
        let (expected, checksum) = self.workload.finish().await?;
        self.reader.stop_at(chrono::Utc::now());
        tokio::time::timeout(Duration::from_secs(60), self.handle).await??;
        let changes = self.collected.snapshot();
        assert_eq!(check_exactly_once_in_order(&changes, &expected), checksum);
        Ok(changes)
    }
}

/// Creates `ks.table` for the workload, with CDC.
pub(crate) async fn create_workload_table(
    session: &Session,
    ks: &str,
    table: &str,
) -> anyhow::Result<()> {
    session
        .query_unpaged(
            format!(
                "CREATE TABLE {ks}.{table} (pk int, seq int, val bigint, PRIMARY KEY (pk, seq)) \
                 WITH cdc = {{'enabled': true}}"
            ),
            (),
        )
        .await?;
    Ok(())
}

/// Runs a statement, with the statement in the error.
pub(crate) async fn exec(session: &Session, cql: impl AsRef<str>) -> anyhow::Result<()> {
    let cql = cql.as_ref();
    session
        .query_unpaged(cql, ())
        .await
        .map_err(|e| anyhow::anyhow!("`{cql}`: {e}"))?;
    Ok(())
}

/// The number of nodes of the cluster `session` is connected to.
pub(crate) fn node_count(session: &Session) -> usize {
    session.get_cluster_state().get_nodes_info().len()
}

/// Creates keyspace `ks` for CDC tables: replication factor `rf`, lowered to the cluster's
/// node count (a real cluster may have fewer nodes than the test would like), and vnodes
/// (`tablets = {'enabled': false}`): the tests read vnode generations, and Scylla before
/// 2025.4 refuses CDC on tablet keyspaces, which are the default on recent versions.
pub(crate) async fn create_cdc_keyspace(
    session: &Session,
    ks: &str,
    rf: usize,
) -> anyhow::Result<()> {
    let rf = rf.min(node_count(session)).max(1);
    session
        .query_unpaged(
            format!(
                "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
                 'replication_factor': {rf}}} AND tablets = {{'enabled': false}}"
            ),
            (),
        )
        .await?;
    Ok(())
}

/// Creates `ks.table (pk int, ck int, v int, PRIMARY KEY (pk, ck))` with CDC.
pub(crate) async fn create_simple_table(
    session: &Session,
    ks: &str,
    table: &str,
) -> anyhow::Result<()> {
    exec(
        session,
        format!(
            "CREATE TABLE {ks}.{table} (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await
}

/// The start of a test that runs on any cluster: its cluster (the embedded one of
/// `builder`, or the real Scylla of `SCYLLA_URI`: [`TestCluster`]), a session, and a new
/// keyspace for CDC tables with one replica; tracing set up.
pub(crate) async fn cluster_and_keyspace(
    builder: ClusterBuilder,
) -> anyhow::Result<(TestCluster, Arc<Session>, String)> {
    setup_tracing();
    let cluster = TestCluster::start(builder).await?;
    let session = cluster.session().await?;
    let ks = new_cdc_keyspace(&session, 1).await?;
    Ok((cluster, session, ks))
}

/// A new keyspace for CDC tables ([`create_cdc_keyspace`]); returns its name.
pub(crate) async fn new_cdc_keyspace(session: &Session, rf: usize) -> anyhow::Result<String> {
    let ks = unique_keyspace_name();
    create_cdc_keyspace(session, &ks, rf).await?;
    Ok(ks)
}

/// A new keyspace with `replication` (the map, and any `AND ...` options after it), for a
/// test of the embedded cluster that needs these exact settings; returns its name.
pub(crate) async fn new_keyspace(session: &Session, replication: &str) -> anyhow::Result<String> {
    let ks = unique_keyspace_name();
    session
        .query_unpaged(
            format!("CREATE KEYSPACE {ks} WITH replication = {replication}"),
            (),
        )
        .await?;
    Ok(ks)
}

/// Three replicas of every vnode.
pub(crate) const VNODES_RF3: &str = "{'class': 'NetworkTopologyStrategy', \
    'replication_factor': 3} AND tablets = {'enabled': false}";

/// Drops keyspace `ks` (a real cluster is shared and persistent: tests clean up after
/// themselves).
pub(crate) async fn drop_keyspace(session: &Session, ks: &str) -> anyhow::Result<()> {
    session
        .query_unpaged(format!("DROP KEYSPACE IF EXISTS {ks}"), ())
        .await?;
    Ok(())
}

/// The metrics recorded by every reader of this test binary: a process has one global
/// recorder, installed here on first use. A test that reads metrics calls this before it
/// starts its readers (metrics recorded before the installation are lost).
pub(crate) fn metrics_recorder() -> &'static Snapshotter {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only metrics recorder");
        snapshotter
    })
}

/// Metric values by name and labels.
pub(crate) type MetricValues = HashMap<(String, Vec<(String, String)>), f64>;

/// Every metric recorded so far in this process, accumulated over snapshots: the debugging
/// recorder's snapshot resets counters and gauges to 0, and tests running at the same time
/// each take snapshots, so every snapshot is added to one accumulator: counters are summed,
/// and a gauge keeps its last non-zero value (0 reads as "not set since the last
/// snapshot"). Each test reads the metrics of its own keyspace.
pub(crate) fn metric_values() -> MetricValues {
    static ACC: OnceLock<Mutex<MetricValues>> = OnceLock::new();
    let mut acc = ACC
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (key, _, _, value) in metrics_recorder().snapshot().into_vec() {
        let key = key.key();
        let mut labels: Vec<(String, String)> = key
            .labels()
            .map(|l| (l.key().to_owned(), l.value().to_owned()))
            .collect();
        labels.sort();
        let entry = acc.entry((key.name().to_owned(), labels)).or_insert(0.0);
        match value {
            DebugValue::Counter(v) => *entry += v as f64,
            DebugValue::Gauge(v) if v.into_inner() != 0.0 => *entry = v.into_inner(),
            _ => {}
        }
    }
    acc.clone()
}

/// The value of metric `name` of table `ks.t` with the extra label, if recorded.
pub(crate) fn metric(
    values: &MetricValues,
    ks: &str,
    name: &str,
    extra: Option<(&str, &str)>,
) -> Option<f64> {
    values.iter().find_map(|((n, labels), v)| {
        let has = |k: &str, val: &str| labels.iter().any(|(a, b)| a == k && b == val);
        (n == name
            && has("keyspace", ks)
            && has("table", "t")
            && extra.is_none_or(|(k, val)| has(k, val)))
        .then_some(*v)
    })
}

/// Held by the tests whose assertions measure time (a rate, a deadline, a latency):
/// no two of them run at once, so that each shares the process (where the harness runs two
/// tests at a time, from every module) only with tests that do not measure time. A test takes
/// it first thing (`let _alone = timing_sensitive().await;`).
pub(crate) async fn timing_sensitive() -> tokio::sync::MutexGuard<'static, ()> {
    static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TIMING.lock().await
}
