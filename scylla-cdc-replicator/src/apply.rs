//! Applying translated changes to the destination.
//!
//! A [`Destination`] ([`crate::destination`]) executes one change's writes. A
//! [`ReplicatorConsumer`] (one per stream group, made by a [`ReplicatorFactory`]) translates
//! each log row and hands the writes to its own writer task, which issues them in the
//! stream's order and keeps up to `max_in_flight` requests running (changes that queue up
//! meanwhile go out together in one batch); `flush` waits for all of them, so a checkpoint
//! never covers a write that has not completed. [`Stats`] counts what
//! was applied, for the progress log.

use std::sync::{Arc, Mutex};

use anyhow::{Context, anyhow};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use scylla_cdc::{CDCRow, Consumer, ConsumerFactory, OperationType};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

use crate::destination::{BudgetShare, WriteBudget, writes_footprint, writes_size};
pub use crate::destination::{Destination, Stats, is_transient, retarget_udts};
use crate::evolve::{Followed, Layout, TableContext, TableState};
#[cfg(test)]
use crate::translate::Shape;
use crate::translate::{LogRow, Translator, Write};

/// Work for a consumer's writer task.
enum Job {
    /// The writes of one change written at `time_micros` (`None`: writes that complete a
    /// change already counted, such as lists from its post-image).
    Apply {
        writes: Vec<Write>,
        time_micros: Option<i64>,
        /// Its share of the replicator's write budget, given back once it is written.
        share: BudgetShare,
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

/// Applies consecutive changes of a stream in one request; returns their write times
/// (`None` for writes that complete a change counted already).
async fn apply_group(
    dest: Arc<Destination>,
    writes: Vec<Write>,
    times: Vec<Option<i64>>,
    shares: Vec<BudgetShare>,
) -> (anyhow::Result<()>, Vec<Option<i64>>) {
    let result = dest.apply(writes).await;
    drop(shares);
    (result, times)
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
                Some(Job::Apply { mut writes, time_micros, share }) => {
                    let mut times = vec![time_micros];
                    let mut shares = vec![share];
                    let mut size = writes_size(&writes);
                    while times.len() < MAX_BATCH_CHANGES && size < MAX_BATCH_BYTES {
                        match jobs.try_recv() {
                            Ok(Job::Apply { writes: more, time_micros, share }) => {
                                size += writes_size(&more);
                                writes.extend(more);
                                times.push(time_micros);
                                shares.push(share);
                            }
                            Ok(Job::Flush(reply)) => {
                                waiting.push(reply);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    if failure.get().is_none() {
                        in_flight.push(apply_group(dest.clone(), writes, times, shares));
                    }
                }
                Some(Job::Flush(reply)) => waiting.push(reply),
            },
        }
    }
}

/// The writes of one stream group: a writer task that issues submitted changes in order,
/// keeps up to `max_in_flight` requests running, and reports the first failure.
pub struct StreamWriter {
    jobs: mpsc::Sender<Job>,
    failure: Arc<Failure>,
    budget: Arc<WriteBudget>,
}

impl StreamWriter {
    /// Starts the writer task (must be called inside a Tokio runtime); it ends when the
    /// writer is dropped, after finishing the requests in flight.
    /// Queued and in-flight writes take their share of `budget` (shared by every stream
    /// group of the replicator) until they are written.
    pub fn new(
        destination: Arc<Destination>,
        max_in_flight: usize,
        budget: Arc<WriteBudget>,
    ) -> Self {
        let max = max_in_flight.max(1);
        let (jobs, rx) = mpsc::channel(max);
        let failure = Arc::new(Failure::default());
        tokio::spawn(writer_loop(destination, rx, max, failure.clone()));
        Self {
            jobs,
            failure,
            budget,
        }
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

    /// Queues writes; waits while the writer or the write budget is full.
    async fn send(&self, writes: Vec<Write>, time_micros: Option<i64>) -> anyhow::Result<()> {
        if let Some(e) = self.failure() {
            return Err(anyhow!("{e}"));
        }
        let share = self.budget.take(writes_footprint(&writes)).await;
        self.jobs
            .send(Job::Apply {
                writes,
                time_micros,
                share,
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
    /// The context's state version `state` was checked against.
    version: u64,
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
        let version = context.version();
        let state = context.state();
        Self {
            translator: Translator::with_list_writes(state.schema.clone(), state.lists),
            row: LogRow::new(OperationType::RowUpdate, 0, state.schema.columns.len()),
            writes: Vec::new(),
            writer: StreamWriter::new(
                state.destination.clone(),
                context.max_in_flight,
                context.budget.clone(),
            ),
            accepted: Vec::new(),
            state,
            version,
            context,
        }
    }

    /// Continues with `state` (the table after columns were added): the writes submitted so
    /// far are completed first, then a new writer and the translator use the new schema.
    async fn switch(&mut self, state: Arc<TableState>) -> anyhow::Result<()> {
        self.writer.flush().await?;
        self.writer = StreamWriter::new(
            state.destination.clone(),
            self.context.max_in_flight,
            self.context.budget.clone(),
        );
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
        // Another stream group followed a schema change: switch before this row.
        if self.context.version() != self.version {
            self.version = self.context.version();
            let current = self.context.state();
            if !Arc::ptr_eq(&current, &self.state) {
                self.switch(current).await?;
            }
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
            self.writer.submit_completion(writes).await?;
        } else {
            self.writer.submit(writes, time_micros).await?;
        }
        if self.context.write_each_change
            && let Err(e) = self.writer.flush().await
        {
            // Everything before this change was written: the failure is this change's. A
            // new writer lets the next attempt, or the next change, start clean.
            self.writer = StreamWriter::new(
                self.state.destination.clone(),
                self.context.max_in_flight,
                self.context.budget.clone(),
            );
            return Err(e);
        }
        Ok(())
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

/// Makes a [`ReplicatorConsumer`] per table and stream group of the tables of one reader.
pub struct ReplicatorFactory {
    /// Per source table (its base table name): where its changes go.
    contexts: Vec<(String, Arc<TableContext>)>,
}

impl ReplicatorFactory {
    /// Consumers replaying into `context`'s destination.
    pub fn new(context: Arc<TableContext>) -> Self {
        Self::for_tables(vec![context])
    }

    /// Consumers replaying each table into its context's destination.
    pub fn for_tables(contexts: Vec<Arc<TableContext>>) -> Self {
        Self {
            contexts: contexts
                .into_iter()
                .map(|c| (c.state().schema.table.clone(), c))
                .collect(),
        }
    }

    /// The context of `table`, or the first one (a reader asks per table, so only a
    /// factory of one table is asked without one).
    fn context(&self, table: Option<&str>) -> Option<&Arc<TableContext>> {
        let known = table.and_then(|t| self.contexts.iter().find(|(name, _)| name == t));
        known.or(self.contexts.first()).map(|(_, c)| c)
    }
}

#[async_trait]
impl ConsumerFactory for ReplicatorFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        self.consumer(None)
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        self.consumer(Some(table))
    }
}

impl ReplicatorFactory {
    fn consumer(&self, table: Option<&str>) -> Box<dyn Consumer> {
        match self.context(table) {
            Some(context) => Box::new(ReplicatorConsumer::new(context.clone())),
            None => Box::new(Refuse),
        }
    }
}

/// The consumer of a factory without tables: fails on its first row.
struct Refuse;

#[async_trait]
impl Consumer for Refuse {
    async fn consume_cdc(&mut self, data: CDCRow<'_>) -> anyhow::Result<()> {
        anyhow::bail!("no destination for table {}", data.table())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::value::CqlValue;

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
}
