//! Applying translated changes to the destination.
//!
//! A [`Destination`] is one destination table: its session, a cache of prepared statements
//! per [`Shape`], and the retry loop that executes one change's writes (one statement, or an
//! unlogged batch of the change's statements — they all hit one partition). A
//! [`ReplicatorConsumer`] (one per stream group, made by a [`ReplicatorFactory`]) translates
//! each log row and hands the writes to its own writer task, which issues them in the
//! stream's order and keeps up to `max_in_flight` requests running (changes that queue up
//! meanwhile go out together in one batch); `flush` waits for all of them, so a checkpoint
//! never covers a write that has not completed. [`Stats`] counts what
//! was applied, for the progress log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, anyhow};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use scylla::statement::Consistency;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use scylla_cdc::cli::error_chain;
use scylla_cdc::{CDCRow, Consumer, ConsumerFactory, OperationType};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use crate::evolve::{Followed, Layout, SchemaFollower};
use crate::schema::{TableSchema, quote};
use crate::translate::{ListWrites, LogRow, Shape, Translator, Write, statement_text};

/// First pause after a transient write error; doubled on each further failure.
const RETRY_START: Duration = Duration::from_millis(50);
/// Longest pause between retries.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Counters shared by every consumer of a replicator.
#[derive(Debug, Default)]
pub struct Stats {
    applied: AtomicU64,
    newest_micros: AtomicI64,
    retries: AtomicU64,
}

impl Stats {
    /// Changes (delta rows) applied so far.
    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::Relaxed)
    }

    /// The newest write time (µs) among the applied changes, if any.
    pub fn newest_applied_micros(&self) -> Option<i64> {
        match self.newest_micros.load(Ordering::Relaxed) {
            0 => None,
            t => Some(t),
        }
    }

    /// Writes retried after a transient error so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Counts one applied change written at `time_micros`.
    fn record(&self, time_micros: i64) {
        self.applied.fetch_add(1, Ordering::Relaxed);
        self.newest_micros.fetch_max(time_micros, Ordering::Relaxed);
    }
}

/// Whether a driver error is worth retrying: the library's classification (timeouts,
/// overload, unavailable replicas, broken connections, nodes down or starting). Every write
/// of the replicator is idempotent (it carries its timestamp), so retrying is always safe.
pub use scylla_cdc::is_transient;

/// Rewrites the keyspace of every UDT value inside `value` (the driver checks that a UDT
/// value names the keyspace of the column it is bound to).
pub fn retarget_udts(value: &mut CqlValue, keyspace: &str) {
    match value {
        CqlValue::UserDefinedType {
            keyspace: ks,
            fields,
            ..
        } => {
            if ks != keyspace {
                *ks = keyspace.to_owned();
            }
            for v in fields.iter_mut().filter_map(|(_, v)| v.as_mut()) {
                retarget_udts(v, keyspace);
            }
        }
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            items.iter_mut().for_each(|v| retarget_udts(v, keyspace));
        }
        CqlValue::Map(entries) => {
            for (k, v) in entries {
                retarget_udts(k, keyspace);
                retarget_udts(v, keyspace);
            }
        }
        CqlValue::Tuple(items) => {
            items
                .iter_mut()
                .flatten()
                .for_each(|v| retarget_udts(v, keyspace));
        }
        _ => {}
    }
}

/// One destination table: where and how changes are written.
pub struct Destination {
    /// The destination cluster.
    session: Arc<Session>,
    /// The destination keyspace.
    keyspace: String,
    /// `"ks"."t"`.
    target: String,
    /// The source table's schema (the destination has at least its columns).
    schema: Arc<TableSchema>,
    /// Consistency of the writes.
    consistency: Consistency,
    /// The table uses UDTs: their values must name the destination keyspace.
    retarget: bool,
    /// Prepared statements by shape (never held across an `.await`).
    cache: Mutex<HashMap<Shape, PreparedStatement>>,
    /// Counters of the replicator.
    stats: Arc<Stats>,
}

impl Destination {
    /// Writes of `schema`'s changes into `keyspace.table` through `session`.
    pub fn new(
        session: Arc<Session>,
        keyspace: &str,
        table: &str,
        schema: Arc<TableSchema>,
        consistency: Consistency,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            session,
            keyspace: keyspace.to_owned(),
            target: format!("{}.{}", quote(keyspace), quote(table)),
            retarget: !schema.udts.is_empty(),
            schema,
            consistency,
            cache: Mutex::new(HashMap::new()),
            stats,
        }
    }

    /// `"ks"."t"`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The destination cluster.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The destination keyspace.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The same table, for `schema` (the source table after columns were added), with its
    /// own statement cache.
    pub fn with_schema(&self, schema: Arc<TableSchema>) -> Self {
        Self {
            session: self.session.clone(),
            keyspace: self.keyspace.clone(),
            target: self.target.clone(),
            retarget: !schema.udts.is_empty(),
            schema,
            consistency: self.consistency,
            cache: Mutex::new(HashMap::new()),
            stats: self.stats.clone(),
        }
    }

    /// The prepared statement of a shape, prepared on first use.
    async fn prepared(&self, shape: &Shape) -> Result<PreparedStatement, ExecutionError> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(shape).cloned()) {
            return Ok(p);
        }
        let text = statement_text(&self.schema, &self.target, shape);
        debug!(statement = %text, "preparing");
        let mut prepared = self.session.prepare(text).await?;
        prepared.set_consistency(self.consistency);
        prepared.set_is_idempotent(true);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(shape.clone(), prepared.clone());
        }
        Ok(prepared)
    }

    /// Executes the writes of one change once.
    async fn execute(&self, writes: &[Write]) -> Result<(), ExecutionError> {
        match writes {
            [] => Ok(()),
            [w] => {
                let p = self.prepared(&w.shape).await?;
                self.session
                    .execute_unpaged(&p, &w.values)
                    .await
                    .map(|_| ())
            }
            many => {
                let mut batch = Batch::new(BatchType::Unlogged);
                batch.set_consistency(self.consistency);
                batch.set_is_idempotent(true);
                let mut values = Vec::with_capacity(many.len());
                for w in many {
                    batch.append_statement(self.prepared(&w.shape).await?);
                    values.push(&w.values);
                }
                self.session.batch(&batch, values).await.map(|_| ())
            }
        }
    }

    /// Applies the writes of one or more changes in one request, retrying transient errors
    /// with capped exponential backoff until they succeed; other errors are returned.
    pub async fn apply(&self, mut writes: Vec<Write>) -> anyhow::Result<()> {
        if self.retarget {
            for v in writes
                .iter_mut()
                .flat_map(|w| w.values.iter_mut())
                .flatten()
            {
                retarget_udts(v, &self.keyspace);
            }
        }
        let mut backoff = RETRY_START;
        loop {
            match self.execute(&writes).await {
                Ok(()) => return Ok(()),
                Err(e) if is_transient(&e) => {
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    warn!(error = %e, table = %self.target, retry_in = ?backoff, "transient error writing to the destination; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(RETRY_MAX);
                }
                Err(e) => {
                    let text = writes
                        .first()
                        .map(|w| statement_text(&self.schema, &self.target, &w.shape))
                        .unwrap_or_default();
                    return Err(anyhow!("writing `{text}` failed: {}", error_chain(&e)));
                }
            }
        }
    }
}

/// Work for a consumer's writer task.
enum Job {
    /// The writes of one change written at `time_micros` (`None`: writes that complete a
    /// change already counted, such as lists from its post-image).
    Apply {
        writes: Vec<Write>,
        time_micros: Option<i64>,
    },
    /// Answer once every earlier job is done.
    Flush(oneshot::Sender<Result<(), String>>),
}

/// The first failure of a writer task, shared with its consumer.
#[derive(Default)]
struct Failure(Mutex<Option<String>>);

impl Failure {
    /// The first failure, if any.
    fn get(&self) -> Option<String> {
        self.0.lock().ok().and_then(|f| f.clone())
    }

    /// Records a failure unless one is recorded already.
    fn set(&self, message: String) {
        if let Ok(mut f) = self.0.lock()
            && f.is_none()
        {
            *f = Some(message);
        }
    }
}

/// Most changes one request carries.
const MAX_BATCH_CHANGES: usize = 32;
/// Most bytes (roughly) of values one request carries; Scylla warns about batches over
/// 128 KiB and refuses them over 1 MiB.
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// A rough size of a value on the wire.
fn approx_size(v: &CqlValue) -> usize {
    4 + match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.len(),
        CqlValue::Blob(b) => b.len(),
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            items.iter().map(approx_size).sum()
        }
        CqlValue::Map(entries) => entries
            .iter()
            .map(|(k, v)| approx_size(k) + approx_size(v))
            .sum(),
        CqlValue::Tuple(items) => items.iter().flatten().map(approx_size).sum(),
        CqlValue::UserDefinedType { fields, .. } => fields
            .iter()
            .map(|(_, v)| v.as_ref().map_or(4, approx_size))
            .sum(),
        _ => 16,
    }
}

/// A rough size of a change's writes on the wire.
fn writes_size(writes: &[Write]) -> usize {
    writes
        .iter()
        .flat_map(|w| w.values.iter())
        .map(|v| v.as_ref().map_or(4, approx_size))
        .sum()
}

/// Applies consecutive changes of a stream in one request; returns their write times
/// (`None` for writes that complete a change counted already).
async fn apply_group(
    dest: Arc<Destination>,
    writes: Vec<Write>,
    times: Vec<Option<i64>>,
) -> (anyhow::Result<()>, Vec<Option<i64>>) {
    (dest.apply(writes).await, times)
}

/// Issues jobs in order, up to `max_in_flight` requests at once, until the consumer is
/// dropped. When changes queue up (the destination is the bottleneck), consecutive changes
/// go out together in one unlogged batch: a stream group's partitions share their replicas
/// (they are one vnode's), and every write carries its own timestamp, so grouping changes
/// does not change the result.
async fn writer_loop(
    dest: Arc<Destination>,
    mut jobs: mpsc::Receiver<Job>,
    max_in_flight: usize,
    failure: Arc<Failure>,
) {
    let mut in_flight = FuturesUnordered::new();
    let mut waiting: Vec<oneshot::Sender<Result<(), String>>> = Vec::new();
    let mut open = true;
    loop {
        if in_flight.is_empty() {
            for w in waiting.drain(..) {
                let _ = w.send(failure.get().map_or(Ok(()), Err));
            }
            if !open {
                return;
            }
        }
        tokio::select! {
            biased;
            Some((result, times)) = in_flight.next(), if !in_flight.is_empty() => match result {
                Ok(()) => {
                    let times: Vec<Option<i64>> = times;
                    times.into_iter().flatten().for_each(|t| dest.stats.record(t));
                }
                Err(e) => failure.set(format!("{e:#}")),
            },
            job = jobs.recv(), if open && waiting.is_empty() && in_flight.len() < max_in_flight => match job {
                None => open = false,
                Some(Job::Apply { mut writes, time_micros }) => {
                    let mut times = vec![time_micros];
                    let mut size = writes_size(&writes);
                    while times.len() < MAX_BATCH_CHANGES && size < MAX_BATCH_BYTES {
                        match jobs.try_recv() {
                            Ok(Job::Apply { writes: more, time_micros }) => {
                                size += writes_size(&more);
                                writes.extend(more);
                                times.push(time_micros);
                            }
                            Ok(Job::Flush(reply)) => {
                                waiting.push(reply);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    if failure.get().is_none() {
                        in_flight.push(apply_group(dest.clone(), writes, times));
                    }
                }
                Some(Job::Flush(reply)) => waiting.push(reply),
            },
        }
    }
}

/// The part of one table's replication that follows the source table's columns: replaced
/// as a whole when columns are added to it ([`crate::evolve`]).
pub struct TableState {
    /// The source table's schema.
    pub schema: Arc<TableSchema>,
    /// Where its changes go.
    pub destination: Arc<Destination>,
    /// How list changes are written (by the destination's kind).
    pub lists: ListWrites,
}

/// What the consumers of one table share.
pub struct TableContext {
    /// The current state (never held across an `.await`).
    state: Mutex<Arc<TableState>>,
    /// Most writes a stream group has in flight.
    pub max_in_flight: usize,
    /// Follows the source table's schema changes.
    pub(crate) follower: SchemaFollower,
}

impl TableContext {
    /// The shared context of one table's consumers.
    pub fn new(state: TableState, max_in_flight: usize, follower: SchemaFollower) -> Self {
        Self {
            state: Mutex::new(Arc::new(state)),
            max_in_flight,
            follower,
        }
    }

    /// The current state.
    pub fn state(&self) -> Arc<TableState> {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Makes `state` the current one.
    pub(crate) fn set_state(&self, state: Arc<TableState>) {
        match self.state.lock() {
            Ok(mut s) => *s = state,
            Err(poisoned) => *poisoned.into_inner() = state,
        }
    }
}

/// The writes of one stream group: a writer task that issues submitted changes in order,
/// keeps up to `max_in_flight` requests running, and reports the first failure.
pub struct StreamWriter {
    jobs: mpsc::Sender<Job>,
    failure: Arc<Failure>,
}

impl StreamWriter {
    /// Starts the writer task (must be called inside a Tokio runtime); it ends when the
    /// writer is dropped, after finishing the requests in flight.
    pub fn new(destination: Arc<Destination>, max_in_flight: usize) -> Self {
        let max = max_in_flight.max(1);
        let (jobs, rx) = mpsc::channel(max);
        let failure = Arc::new(Failure::default());
        tokio::spawn(writer_loop(destination, rx, max, failure.clone()));
        Self { jobs, failure }
    }

    /// The first write failure, if any (later changes are not written once one failed).
    pub fn failure(&self) -> Option<String> {
        self.failure.get()
    }

    /// Queues the writes of one change written at `time_micros`; waits while the writer is
    /// full.
    pub async fn submit(&self, writes: Vec<Write>, time_micros: i64) -> anyhow::Result<()> {
        self.send(writes, Some(time_micros)).await
    }

    /// Queues writes that complete a change already submitted (the whole lists of its
    /// post-image): written in order like the others, not counted as a change.
    pub async fn submit_completion(&self, writes: Vec<Write>) -> anyhow::Result<()> {
        self.send(writes, None).await
    }

    /// Queues writes; waits while the writer is full.
    async fn send(&self, writes: Vec<Write>, time_micros: Option<i64>) -> anyhow::Result<()> {
        if let Some(e) = self.failure() {
            return Err(anyhow!("{e}"));
        }
        self.jobs
            .send(Job::Apply {
                writes,
                time_micros,
            })
            .await
            .map_err(|_| anyhow!("the writer task of this stream group is gone"))
    }

    /// Waits until every change submitted so far is written; fails if any write failed.
    pub async fn flush(&self) -> anyhow::Result<()> {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Job::Flush(tx))
            .await
            .map_err(|_| anyhow!("the writer task of this stream group is gone"))?;
        rx.await
            .map_err(|_| anyhow!("the writer task of this stream group is gone"))?
            .map_err(|e| anyhow!("{e}"))
    }
}

/// Replays the changes of one stream group (see the module docs).
pub struct ReplicatorConsumer {
    context: Arc<TableContext>,
    /// The table state this consumer's translator and writer use.
    state: Arc<TableState>,
    translator: Translator,
    row: LogRow,
    writes: Vec<Write>,
    writer: StreamWriter,
    /// Column layouts of log rows already judged consistent with `state` (pages read
    /// before a column was added lack it).
    accepted: Vec<Layout>,
}

impl ReplicatorConsumer {
    /// A consumer with its writer task (must be called inside a Tokio runtime).
    pub fn new(context: Arc<TableContext>) -> Self {
        let state = context.state();
        Self {
            translator: Translator::with_list_writes(state.schema.clone(), state.lists),
            row: LogRow::new(OperationType::RowUpdate, 0, state.schema.columns.len()),
            writes: Vec::new(),
            writer: StreamWriter::new(state.destination.clone(), context.max_in_flight),
            accepted: Vec::new(),
            state,
            context,
        }
    }

    /// Continues with `state` (the table after columns were added): the writes submitted so
    /// far are completed first, then a new writer and the translator use the new schema.
    async fn switch(&mut self, state: Arc<TableState>) -> anyhow::Result<()> {
        self.writer.flush().await?;
        self.writer = StreamWriter::new(state.destination.clone(), self.context.max_in_flight);
        self.translator.rebase(state.schema.clone(), state.lists);
        self.accepted.clear();
        self.state = state;
        Ok(())
    }

    /// A log row whose columns are not exactly the schema's, `row` filled for it: follows
    /// the source table's schema (once per layout) and re-indexes `row` if it changed.
    async fn follow_schema(&mut self, data: &mut CDCRow<'_>) -> anyhow::Result<()> {
        for _ in 0..3 {
            let layout = Layout::of(&self.state.schema, data);
            if layout.is_exact() || self.accepted.contains(&layout) {
                return Ok(());
            }
            match self.context.follow(&self.state, &layout).await? {
                Followed::Unchanged => {
                    self.accepted.push(layout);
                    return Ok(());
                }
                Followed::Changed(state) => {
                    let old = self.state.schema.clone();
                    self.switch(state).await?;
                    self.row
                        .refill(&old, &self.state.schema, data)
                        .context("reading a CDC log row")?;
                }
            }
        }
        Err(anyhow!(
            "the source table's columns keep changing while its log is read; restart the \
             replicator once the schema is stable"
        ))
    }
}

#[async_trait]
impl Consumer for ReplicatorConsumer {
    async fn consume_cdc(&mut self, mut data: CDCRow<'_>) -> anyhow::Result<()> {
        if let Some(e) = self.writer.failure() {
            return Err(anyhow!("{e}"));
        }
        match data.operation {
            OperationType::PreImage => return Ok(()),
            OperationType::PostImage if !self.translator.needs_post_images() => return Ok(()),
            OperationType::Unknown(code) => {
                warn!(code, stream = %data.stream_id, "skipping a log row with an unknown operation");
                return Ok(());
            }
            _ => {}
        }
        let current = self.context.state();
        if !Arc::ptr_eq(&current, &self.state) {
            self.switch(current).await?;
        }
        let missing = self
            .row
            .fill(&self.state.schema, &mut data)
            .context("reading a CDC log row")?;
        // Columns of the log row that the schema lacks, counted without a lookup per column.
        if missing > 0 || data.get_non_cdc_column_names().count() != self.state.schema.columns.len()
        {
            self.follow_schema(&mut data).await?;
        }
        let now = chrono::Utc::now().timestamp_micros();
        self.translator
            .translate(&mut self.row, now, &mut self.writes)
            .with_context(|| {
                format!(
                    "replaying the change at {} of stream {}",
                    data.time, data.stream_id
                )
            })?;
        let time_micros = self.row.time_micros;
        if self.writes.is_empty() {
            if !self.translator.has_pending_range() && data.operation != OperationType::PostImage {
                self.state.destination.stats.record(time_micros);
            }
            return Ok(());
        }
        let writes = std::mem::take(&mut self.writes);
        if data.operation == OperationType::PostImage {
            self.writer.submit_completion(writes).await
        } else {
            self.writer.submit(writes, time_micros).await
        }
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        // A window ends after every row of its writes: no list may still wait for its
        // post-image (nothing would write it before the checkpoint).
        self.translator
            .check_post_images()
            .context("replaying a change of a list column")?;
        self.writer.flush().await
    }
}

/// Makes a [`ReplicatorConsumer`] per stream group of one table.
pub struct ReplicatorFactory {
    context: Arc<TableContext>,
}

impl ReplicatorFactory {
    /// Consumers replaying into `context`'s destination.
    pub fn new(context: Arc<TableContext>) -> Self {
        Self { context }
    }
}

#[async_trait]
impl ConsumerFactory for ReplicatorFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(ReplicatorConsumer::new(self.context.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::errors::{DbError, RequestAttemptError};
    use scylla::frame::types::Consistency as Cl;

    fn db(e: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "x".into()))
    }

    #[test]
    fn transient_errors() {
        assert!(is_transient(&db(DbError::Overloaded)));
        assert!(is_transient(&db(DbError::WriteTimeout {
            consistency: Cl::Quorum,
            received: 1,
            required: 2,
            write_type: scylla::errors::WriteType::Simple,
        })));
        assert!(is_transient(&db(DbError::Unavailable {
            consistency: Cl::Quorum,
            required: 2,
            alive: 1
        })));
        assert!(is_transient(&ExecutionError::RequestTimeout(
            Duration::from_secs(1)
        )));
        assert!(is_transient(&ExecutionError::EmptyPlan));
        assert!(!is_transient(&db(DbError::Invalid)));
        assert!(!is_transient(&db(DbError::SyntaxError)));
        assert!(!is_transient(&db(DbError::ServerError)));
    }

    #[test]
    fn udt_keyspaces_are_rewritten_everywhere() {
        let udt = |ks: &str| CqlValue::UserDefinedType {
            keyspace: ks.into(),
            name: "u".into(),
            fields: vec![(
                "inner".into(),
                Some(CqlValue::UserDefinedType {
                    keyspace: ks.into(),
                    name: "p".into(),
                    fields: vec![],
                }),
            )],
        };
        let wrap = |ks: &str| {
            CqlValue::List(vec![CqlValue::Map(vec![(
                CqlValue::Tuple(vec![Some(udt(ks)), None]),
                CqlValue::Set(vec![udt(ks)]),
            )])])
        };
        let mut v = wrap("src");
        retarget_udts(&mut v, "dst");
        assert_eq!(v, wrap("dst"));
        let mut plain = CqlValue::Int(1);
        retarget_udts(&mut plain, "dst");
        assert_eq!(plain, CqlValue::Int(1));
    }

    #[test]
    fn sizes_grow_with_the_values() {
        let small = Write {
            shape: Shape::Delete { eq: 0, slice: None },
            values: vec![Some(CqlValue::Int(1)), None],
        };
        let big = Write {
            shape: Shape::Delete { eq: 0, slice: None },
            values: vec![Some(CqlValue::Map(vec![(
                CqlValue::Text("k".repeat(100)),
                CqlValue::Blob(vec![0; 1000]),
            )]))],
        };
        assert!(writes_size(std::slice::from_ref(&small)) < 64);
        assert!(writes_size(std::slice::from_ref(&big)) > 1100);
        assert!(writes_size(&[small.clone(), big]) > writes_size(&[small]));
    }

    #[test]
    fn stats_count_and_keep_the_newest_time() {
        let s = Stats::default();
        assert_eq!(s.newest_applied_micros(), None);
        s.record(5);
        s.record(3);
        assert_eq!(s.applied(), 2);
        assert_eq!(s.newest_applied_micros(), Some(5));
    }
}
