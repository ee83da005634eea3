//! `--snapshot`: publish every existing row of the tables as a snapshot read (`op: "r"`),
//! then stream their changes from the snapshot's boundary on, without a gap and without a
//! duplicate.
//!
//! # The snapshot time and the boundary
//!
//! T is the launch time of the first run of a snapshot; the **boundary** B is T minus the
//! safety interval (whole milliseconds). Both are saved in the checkpoint topic (record
//! `snap/<keyspace>.<table>`) before anything is published, so a restarted snapshot keeps
//! them. Every atomic cell has a write time (`WRITETIME`, the write's timestamp, which is also
//! its change's `cdc$time`): the cells written before B belong to the snapshot, the changes
//! written at or after B to the stream, and each goes to Kafka once:
//!
//! * the scans run after T, so by the log reader's own assumption (a write becomes visible
//!   within the safety interval of its timestamp, the reason the reader stays that far
//!   behind now) every write dated before B = T − safety is visible to them;
//! * the log is then read from B (the table's start record `s/` is B): every change dated at
//!   or after B is published by the stream, exactly once as without `--snapshot`;
//! * so an `r` event leaves out the cells written at or after B (the stream carries their
//!   writes), and a row none of whose cells was written before B (inserted, or wholly
//!   overwritten, after B) has no `r` event at all.
//!
//! The replicator's `--snapshot` also reads the log from T minus the safety interval, but
//! copies every cell whatever its write time: its writes are idempotent (each cell keeps its
//! source timestamp), while a Kafka event is not, so here the boundary splits the cells
//! instead of overlapping them.
//!
//! What the scan cannot date: a cell without a write time (a non-frozen collection or UDT,
//! whose elements each have their own, or a counter) is given as scanned, and a row without
//! any non-null cell (only its key and row marker, whose write time CQL does not return) is
//! published as `r`: such a row or cell written after B (before the scan reached it) is in
//! its `r` event and in the stream's event. A null cell is given as null (a cell deleted
//! after B: the stream has the deletion). A row deleted after B before the scan reached it
//! has no `r` event (only the stream's `d`). `docs/kafka-events.md` states the guarantee.
//!
//! # Rows and events
//!
//! Each clustering row is one `r` event ([`EventRenderer::render_snapshot_row`]: its key and
//! its regular columns), and each partition with static cells one more, first, for its static
//! row (the key with null clustering columns, header `scylla.target: static-row`, as the
//! stream's static-row events). A table without clustering key has one event per partition.
//! Events are published with the row's key (Kafka's partitioner puts them in the partition of
//! the row's later changes, before them).
//!
//! Snapshot events are not changes: their [`ChangeEvents`] carry the stream id of all zeros
//! ([`snapshot_stream`]: a real stream id's version, its low four bits, is 1) and the nil
//! UUID as time ([`SNAPSHOT_TIME`]: `cdc$time` is a version-1 UUID), so their `scylla.stream`
//! and `scylla.time` headers are `000…0` and `00000000-0000-0000-0000-000000000000`, which no
//! change has; the read-back of what a restart must not publish again ([`crate::produced`])
//! ignores them, and their time for the replay ledger is 0, before every watermark, so the
//! ledger never keeps them for a restart to read back (only when they share a block with
//! changes).
//!
//! # Progress, exactly once
//!
//! The tables are published one after the other. The ring is split into [`SNAPSHOT_RANGES`]
//! token ranges (the number is saved with T), scanned `--snapshot-parallelism` at a time
//! (`LOCAL_QUORUM`), each with pages of [`PAGE_SIZE`] rows (the library's [`RangeScan`]). A range's rows are handed to the publisher in batches of whole
//! tokens (every partition of a token together), about [`BATCH_ROWS`] rows each, each batch
//! with a progress record `snap/<keyspace>.<table>/<range>` ("every row of the range up to
//! token X is published") in one [`Command::PublishThen`]: the publisher writes the events
//! and then the record into the same transaction, so a committed transaction holds a batch
//! and its record or neither. A restart (kill -9 included) resumes each range after its
//! last committed token, with the range `(X, end]`: each row is published once. A range
//! holds at most two batches (one handed over, one being read), so memory stays at a few
//! pages per range whatever the table's size (a partition is read whole: a partition much
//! larger than a batch is held whole).
//!
//! `--max-rows-per-second` caps the rows the scans read per second, as it caps the log's.
//!
//! Once every range is done, the `snap/` record is written again marked done, and the log is
//! read. A run whose table has a finished snapshot, or CDC progress saved without one, goes
//! straight to streaming (saved progress takes precedence; `--snapshot` is then ignored, with
//! a warning in the second case); a run whose table has an unfinished snapshot finishes it
//! first, with or without `--snapshot` (streaming first would publish the `r` events of the
//! rows left after their changes). Without transactions (`--no-transactions`) a progress
//! record is written once its events are stored: at least once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use futures::{StreamExt, TryStreamExt, stream};
use scylla::client::session::Session;
use scylla::frame::response::result::{ColumnType, NativeType};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use scylla_cdc::Backoff;
use scylla_cdc::cli::scan::{
    RangeScan, ScanError, ScannedCell, ScannedColumn, range_scan_statement, scanned_cells,
    token_ranges,
};
use scylla_cdc::cli::{CliError, Shutdown, retry_startup};
use serde_json::json;
use tokio::sync::oneshot;
use tracing::{info, warn};
use uuid::Uuid;

use crate::args::Config;
use crate::checkpoint::{CheckpointRecord, SavedProgress};
use crate::checkpoint::{RangeProgress, snapshot_stream};
use crate::event::{Event, EventOptions, EventRenderer, TableInfo};
use crate::publish::{ChangeEvents, Command, Outgoing, PublishError, PublisherHandle};

/// Token ranges a new snapshot splits the ring into (the unit of its progress).
pub const SNAPSHOT_RANGES: u32 = 256;

/// Rows per page of the snapshot's scans.
pub const PAGE_SIZE: i32 = 1000;

/// Rows of whole tokens handed to the publisher at once, with one progress record (the
/// default of the hidden `--snapshot-batch-rows`, which tests make small).
pub const BATCH_ROWS: usize = 1000;

/// The time of snapshot events ([`ChangeEvents::time`], header `scylla.time`): the nil UUID,
/// never a change's `cdc$time` (a version-1 UUID).
pub const SNAPSHOT_TIME: Uuid = Uuid::nil();

/// The record of a table's snapshot: T (ms), B (µs), the number of ranges, whether done.
pub fn snapshot_record(
    table: &str,
    time_ms: i64,
    boundary_us: i64,
    ranges: u32,
    done: bool,
) -> CheckpointRecord {
    CheckpointRecord {
        key: format!("snap/{table}"),
        value: json!({
            "table": table,
            "time": time_ms,
            "boundary": boundary_us,
            "ranges": ranges,
            "done": done,
        })
        .to_string(),
    }
}

/// The progress record of range `index` (`range`: its tokens `(start, end]`).
pub fn range_record(
    table: &str,
    index: u32,
    range: (i64, i64),
    progress: &RangeProgress,
) -> CheckpointRecord {
    CheckpointRecord {
        key: format!("snap/{table}/{index}"),
        value: json!({
            "table": table,
            "range": index,
            "start": range.0,
            "end": range.1,
            "after": progress.after,
            "done": progress.done,
            "events": progress.events,
        })
        .to_string(),
    }
}

/// One table's snapshot to publish (new or resumed).
#[derive(Debug, Clone)]
struct TableSnapshot {
    /// `keyspace.table`.
    name: String,
    /// Its index in the configuration's tables (and the publisher's topics).
    index: usize,
    time_ms: i64,
    boundary_us: i64,
    ranges: u32,
    progress: HashMap<u32, RangeProgress>,
    /// Whether its `snap/` record is still to be written.
    new: bool,
}

/// The snapshots of a run: which tables publish their rows first, from where.
#[derive(Debug, Default)]
pub struct Plan {
    tables: Vec<TableSnapshot>,
    /// Per `keyspace.table`: the boundary (ms) of its snapshot, done or not.
    boundaries: HashMap<String, i64>,
    parallelism: usize,
}

/// How the snapshots of a run ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every table's rows are published (or there was nothing to do).
    Done,
    /// A stop was requested: the message to end with (exit 0).
    Stopped(CliError),
}

impl Plan {
    /// Decides, from the saved progress, which tables publish a snapshot (see the module
    /// docs): `--snapshot` starts one for a table without saved progress; an unfinished one
    /// is resumed, with or without `--snapshot`.
    pub fn new(config: &Config, saved: &SavedProgress) -> Plan {
        let mut plan = Plan {
            parallelism: config.snapshot_parallelism.max(1),
            ..Plan::default()
        };
        let safety_ms = i64::try_from(config.safety_interval.as_micros().div_ceil(1000))
            .unwrap_or(i64::MAX / 2);
        for (index, table) in config.tables.iter().enumerate() {
            let name = format!("{}.{table}", config.keyspace);
            match saved.snapshots.tables.get(&name) {
                Some(s) if s.time_ms.is_some() => {
                    plan.boundaries
                        .insert(name.clone(), s.boundary_us.div_euclid(1000));
                    if s.done {
                        continue;
                    }
                    // An unfinished snapshot is saved progress too: finished first, with or
                    // without --snapshot (streaming before it would publish its rows' `r`
                    // events after their changes).
                    if !config.snapshot {
                        info!(
                            table = %name,
                            "the snapshot of {name} is not finished: finishing it first"
                        );
                    }
                    plan.tables.push(TableSnapshot {
                        name,
                        index,
                        time_ms: s.time_ms.unwrap_or_default(),
                        boundary_us: s.boundary_us,
                        ranges: s.ranges,
                        progress: s.progress.clone(),
                        new: false,
                    });
                }
                _ if !config.snapshot => {}
                _ if saved.starts.contains_key(&name) => {
                    warn!(
                        table = %name,
                        "--snapshot ignored for {name}: an earlier run without it saved its \
                         progress, which takes precedence"
                    );
                }
                _ => {
                    let time_ms = config.start.time().timestamp_millis();
                    let boundary_ms = time_ms.saturating_sub(safety_ms);
                    plan.boundaries.insert(name.clone(), boundary_ms);
                    plan.tables.push(TableSnapshot {
                        name,
                        index,
                        time_ms,
                        boundary_us: boundary_ms.saturating_mul(1000),
                        ranges: SNAPSHOT_RANGES,
                        progress: HashMap::new(),
                        new: true,
                    });
                }
            }
        }
        plan
    }

    /// Where the log of `table` (`keyspace.table`) is read from when no start is saved: its
    /// snapshot's boundary, if it has a snapshot.
    pub fn start_of(&self, table: &str) -> Option<chrono::DateTime<chrono::Utc>> {
        self.boundaries
            .get(table)
            .and_then(|ms| chrono::DateTime::from_timestamp_millis(*ms))
    }

    /// The `snap/` records of the new snapshots, to write with the start records before
    /// anything is published.
    pub fn records(&self) -> Vec<CheckpointRecord> {
        self.tables
            .iter()
            .filter(|t| t.new)
            .map(|t| snapshot_record(&t.name, t.time_ms, t.boundary_us, t.ranges, false))
            .collect()
    }

    /// Publishes the rows of every table of the plan (`infos` and the publisher's topics by
    /// the configuration's table index), a table after the other, until done or `shutdown`.
    pub async fn publish(
        &self,
        session: &Session,
        config: &Config,
        infos: &[TableInfo],
        publisher: &PublisherHandle,
        shutdown: Shutdown,
    ) -> Result<Outcome, CliError> {
        for table in &self.tables {
            let info = infos
                .get(table.index)
                .ok_or_else(|| CliError::runtime("a snapshot of an unknown table"))?;
            let ctx = TableContext::prepare(session, config, info, table, publisher).await?;
            if let Outcome::Stopped(e) = ctx
                .publish(config, table, self.parallelism, shutdown.clone())
                .await?
            {
                return Ok(Outcome::Stopped(e));
            }
            publisher
                .send(Command::Record(snapshot_record(
                    &table.name,
                    table.time_ms,
                    table.boundary_us,
                    table.ranges,
                    true,
                )))
                .await
                .map_err(|_| crate::kafka_error(publisher.failure()))?;
        }
        if !self.tables.is_empty() {
            publisher.commit().await.map_err(crate::kafka_error)?;
        }
        Ok(Outcome::Done)
    }
}

/// Ends a run stopped during a snapshot: commits what was handed over, waits for the
/// publisher thread, and returns the stop's message (exit 0).
pub async fn stop(
    publisher: PublisherHandle,
    thread: std::thread::JoinHandle<Result<(), PublishError>>,
    stopped: CliError,
) -> Result<(), CliError> {
    let committed = publisher.commit().await;
    drop(publisher);
    let joined = crate::blocking(move || thread.join()).await?;
    committed.map_err(crate::kafka_error)?;
    joined
        .unwrap_or(Err(PublishError::Stopped))
        .map_err(crate::kafka_error)?;
    Err(stopped)
}

/// `--max-rows-per-second` for a snapshot's scans: a token bucket shared by the ranges of
/// a table (a burst of a tenth of a second's worth). Rows are paid for once read, before
/// they are published: reading runs ahead of the cap by at most a page per range.
struct RowRate {
    rows_per_second: f64,
    /// When the next payment's rows may go.
    next: std::sync::Mutex<tokio::time::Instant>,
}

impl RowRate {
    fn new(rows_per_second: u64) -> RowRate {
        RowRate {
            rows_per_second: rows_per_second.max(1) as f64,
            next: std::sync::Mutex::new(tokio::time::Instant::now()),
        }
    }

    /// Waits until `rows` may go.
    async fn pay(&self, rows: usize) {
        let at = {
            let mut next = self
                .next
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = tokio::time::Instant::now();
            let earliest = now.checked_sub(Duration::from_millis(100)).unwrap_or(now);
            let at = (*next).max(earliest);
            *next = at + Duration::from_secs_f64(rows as f64 / self.rows_per_second);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

/// Whether a cell can be dated: an atomic column (not a non-frozen collection or UDT, not a
/// counter).
fn is_timed(typ: &ColumnType<'_>) -> bool {
    !matches!(
        typ,
        ColumnType::Collection { frozen: false, .. }
            | ColumnType::UserDefinedType { frozen: false, .. }
            | ColumnType::Native(NativeType::Counter)
    )
}

/// The layout of a table's scan rows.
struct Layout {
    key_names: Vec<String>,
    partition_key_len: usize,
    clustering_len: usize,
    /// The static columns then the regular ones.
    columns: Vec<ScannedColumn>,
    static_len: usize,
}

impl Layout {
    fn of(info: &TableInfo) -> Layout {
        let key_names = info
            .partition_key
            .iter()
            .chain(&info.clustering_key)
            .map(|c| c.name.clone())
            .collect();
        let columns = info
            .static_columns
            .iter()
            .chain(&info.regular_columns)
            .map(|c| ScannedColumn {
                name: c.name.clone(),
                timed: is_timed(&c.typ),
            })
            .collect();
        Layout {
            key_names,
            partition_key_len: info.partition_key.len(),
            clustering_len: info.clustering_key.len(),
            columns,
            static_len: info.static_columns.len(),
        }
    }

    fn key_len(&self) -> usize {
        self.partition_key_len + self.clustering_len
    }
}

/// What the cells of a row (or a static row) say about it, against the boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dated {
    /// A cell written before the boundary, or one that cannot be dated: an `r` event.
    Before,
    /// Every non-null cell was written at or after the boundary: the stream has the row.
    After,
    /// No non-null cell.
    Empty,
}

/// Adds the cells of an `r` event to `out` (see the module docs): a cell written before
/// `boundary_us`, or without a write time, with its value; a null cell as null; a cell
/// written at or after the boundary left out. Says how the row is dated.
fn select_cells<'r>(
    cells: impl Iterator<Item = ScannedCell<'r>>,
    boundary_us: i64,
    out: &mut Vec<(&'r str, Option<&'r CqlValue>)>,
) -> Dated {
    let (mut valued, mut kept) = (0usize, 0usize);
    for cell in cells {
        let name = cell.column.name.as_str();
        match (cell.value, cell.writetime) {
            (None, _) => out.push((name, None)),
            (Some(_), Some(w)) if cell.column.timed && w >= boundary_us => valued += 1,
            (Some(v), _) => {
                valued += 1;
                kept += 1;
                out.push((name, Some(v)));
            }
        }
    }
    match (valued, kept) {
        (0, _) => Dated::Empty,
        (_, 0) => Dated::After,
        _ => Dated::Before,
    }
}

/// Renders the `r` events of the rows of one token (one or more partitions, in order).
/// Returns the rows left out (written at or after the boundary).
fn render_rows(
    layout: &Layout,
    renderer: &mut EventRenderer,
    rows: &[Row],
    boundary_us: i64,
    snapshot_ms: i64,
    out: &mut Vec<Event>,
) -> anyhow::Result<u64> {
    let (pk_len, key_len) = (layout.partition_key_len, layout.key_len());
    let mut left_out = 0;
    let mut previous: Option<&[Option<CqlValue>]> = None;
    let mut cells = Vec::with_capacity(key_len + layout.columns.len());
    for row in rows {
        let keys = row
            .columns
            .get(1..1 + key_len)
            .ok_or_else(|| anyhow!("a scanned row without its key columns"))?;
        let partition = &keys[..pk_len];
        if layout.static_len > 0 && previous != Some(partition) {
            cells.clear();
            for (name, value) in layout.key_names[..pk_len].iter().zip(partition) {
                cells.push((name.as_str(), value.as_ref()));
            }
            let statics = scanned_cells(row, key_len, &layout.columns).take(layout.static_len);
            match select_cells(statics, boundary_us, &mut cells) {
                Dated::Before => renderer.render_snapshot_row(&cells, snapshot_ms, out)?,
                Dated::After => left_out += 1,
                Dated::Empty => {}
            }
        }
        previous = Some(partition);
        // A partition with only static cells has one row with null clustering columns.
        if layout.clustering_len > 0 && keys[pk_len..].iter().all(Option::is_none) {
            continue;
        }
        cells.clear();
        for (name, value) in layout.key_names.iter().zip(keys) {
            cells.push((name.as_str(), value.as_ref()));
        }
        let regular = scanned_cells(row, key_len, &layout.columns).skip(layout.static_len);
        match select_cells(regular, boundary_us, &mut cells) {
            Dated::Before | Dated::Empty => {
                renderer.render_snapshot_row(&cells, snapshot_ms, out)?
            }
            Dated::After => left_out += 1,
        }
    }
    Ok(left_out)
}

/// Why publishing a range stopped.
enum RangeError {
    Scan(ScanError),
    /// The publisher stopped.
    Publisher,
    Other(String),
}

impl From<ScanError> for RangeError {
    fn from(e: ScanError) -> Self {
        RangeError::Scan(e)
    }
}

/// What the ranges of one table share.
struct TableContext<'a> {
    session: &'a Session,
    name: String,
    topic: usize,
    statement: PreparedStatement,
    layout: Layout,
    info: TableInfo,
    options: EventOptions,
    publisher: &'a PublisherHandle,
    boundary_us: i64,
    batch_rows: usize,
    rate: Option<RowRate>,
    give_up_after: Option<Duration>,
    ranges_done: AtomicU64,
    rows: AtomicU64,
    events: AtomicU64,
    left_out: AtomicU64,
}

impl<'a> TableContext<'a> {
    async fn prepare(
        session: &'a Session,
        config: &Config,
        info: &TableInfo,
        table: &TableSnapshot,
        publisher: &'a PublisherHandle,
    ) -> Result<TableContext<'a>, CliError> {
        let layout = Layout::of(info);
        let text = range_scan_statement(
            &info.keyspace,
            &info.table,
            &layout.key_names,
            layout.partition_key_len,
            &layout.columns,
        );
        let statement = retry_startup("preparing the snapshot scan", config.give_up_after, || {
            let text = text.clone();
            async move {
                let mut p = session.prepare(text.clone()).await.map_err(|e| {
                    let message =
                        format!("preparing `{text}`: {}", scylla_cdc::cli::error_chain(&e));
                    if scylla_cdc::is_transient_prepare(&e) {
                        CliError::transient(message)
                    } else {
                        CliError::schema(message)
                    }
                })?;
                p.set_page_size(PAGE_SIZE);
                p.set_consistency(Consistency::LocalQuorum);
                p.set_is_idempotent(true);
                Ok(p)
            }
        })
        .await?;
        Ok(TableContext {
            session,
            name: table.name.clone(),
            topic: table.index,
            statement,
            layout,
            info: info.clone(),
            options: config.events.clone(),
            publisher,
            boundary_us: table.boundary_us,
            batch_rows: config.snapshot_batch_rows.max(1),
            rate: config.max_rows_per_second.map(RowRate::new),
            give_up_after: config.give_up_after,
            ranges_done: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            events: AtomicU64::new(0),
            left_out: AtomicU64::new(0),
        })
    }

    /// Hands one batch and its progress record to the publisher; the receiver answers once
    /// the publisher has passed both to the producer.
    async fn hand_over(
        &self,
        messages: Vec<Outgoing>,
        record: CheckpointRecord,
    ) -> Result<oneshot::Receiver<()>, RangeError> {
        let (handed, receiver) = oneshot::channel();
        self.publisher
            .send(Command::PublishThen {
                events: ChangeEvents {
                    topic: self.topic,
                    stream: snapshot_stream(),
                    time: SNAPSHOT_TIME,
                    time_ms: 0,
                    messages,
                },
                record,
                handed,
            })
            .await
            .map_err(|_| RangeError::Publisher)?;
        Ok(receiver)
    }

    /// Publishes range `index` from `progress` on (updated as batches are handed over).
    async fn publish_range(
        &self,
        index: u32,
        range: (i64, i64),
        progress: &mut RangeProgress,
    ) -> Result<(), RangeError> {
        let from = progress.after.unwrap_or(range.0);
        let mut scan = RangeScan::open(
            "snapshot scan",
            self.session,
            &self.statement,
            (from, range.1),
        )
        .await?;
        let mut renderer = EventRenderer::new(self.info.clone(), self.options.clone());
        let mut events: Vec<Event> = Vec::new();
        let mut batch_rows = 0usize;
        let mut last = progress.after;
        let mut pending: Option<oneshot::Receiver<()>> = None;
        loop {
            let token = scan.token()?;
            if token.is_none() || batch_rows >= self.batch_rows {
                // The batch so far (whole tokens) with its progress record, once the previous
                // one is with the producer (at most two batches of a range in memory).
                if let Some(p) = pending.take() {
                    p.await.map_err(|_| RangeError::Publisher)?;
                }
                let messages: Vec<Outgoing> = events
                    .drain(..)
                    .map(|e| Outgoing {
                        key: e.key,
                        value: e.value,
                        headers: e.headers,
                    })
                    .collect();
                let mut next = RangeProgress {
                    after: last,
                    done: token.is_none(),
                    events: progress.events + messages.len() as u64,
                };
                let count = messages.len() as u64;
                let record = range_record(&self.name, index, range, &next);
                pending = Some(self.hand_over(messages, record).await?);
                std::mem::swap(progress, &mut next);
                self.events.fetch_add(count, Ordering::Relaxed);
                self.rows.fetch_add(batch_rows as u64, Ordering::Relaxed);
                batch_rows = 0;
            }
            let Some(token) = token else { break };
            // Resuming after a token relies on rows coming in token order, inside the range.
            if token <= last.unwrap_or(range.0) || token > range.1 {
                return Err(RangeError::Other(format!(
                    "token {token} out of order after {} in range ({}, {}]",
                    last.unwrap_or(range.0),
                    range.0,
                    range.1
                )));
            }
            let rows = scan.take_token(token).await?;
            if let Some(rate) = &self.rate {
                rate.pay(rows.len()).await;
            }
            let snapshot_ms = chrono::Utc::now().timestamp_millis();
            let left_out = render_rows(
                &self.layout,
                &mut renderer,
                &rows,
                self.boundary_us,
                snapshot_ms,
                &mut events,
            )
            .map_err(|e| RangeError::Other(format!("{e:#}")))?;
            self.left_out.fetch_add(left_out, Ordering::Relaxed);
            batch_rows += rows.len();
            last = Some(token);
        }
        if let Some(p) = pending {
            p.await.map_err(|_| RangeError::Publisher)?;
        }
        Ok(())
    }

    /// Publishes a range, resuming it after its last batch when a scan fails transiently.
    async fn publish_range_retrying(
        &self,
        index: u32,
        range: (i64, i64),
        mut progress: RangeProgress,
    ) -> Result<(), CliError> {
        let mut backoff = Backoff::new(self.give_up_after);
        let what = format!(
            "the snapshot of {}, token range ({}, {}]",
            self.name, range.0, range.1
        );
        loop {
            match self.publish_range(index, range, &mut progress).await {
                Ok(()) => break,
                Err(RangeError::Scan(e)) if e.transient => {
                    if !backoff.wait(&what, &e).await {
                        return Err(CliError::transient(format!("{what}: {e}")));
                    }
                }
                Err(RangeError::Scan(e)) => {
                    return Err(CliError::runtime(format!("{what}: {e}")));
                }
                Err(RangeError::Other(e)) => return Err(CliError::runtime(format!("{what}: {e}"))),
                Err(RangeError::Publisher) => {
                    return Err(crate::kafka_error(self.publisher.failure()));
                }
            }
        }
        self.ranges_done.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Publishes the ranges not done yet, `parallelism` at a time.
    async fn publish(
        &self,
        config: &Config,
        table: &TableSnapshot,
        parallelism: usize,
        mut shutdown: Shutdown,
    ) -> Result<Outcome, CliError> {
        let name = &self.name;
        let total = u64::from(table.ranges);
        let ranges: Vec<(u32, (i64, i64), RangeProgress)> = token_ranges(table.ranges)
            .into_iter()
            .zip(0u32..)
            .map(|(r, i)| (i, r, table.progress.get(&i).cloned().unwrap_or_default()))
            .filter(|(_, _, p)| !p.done)
            .collect();
        let skipped = total - ranges.len() as u64;
        let resumed = ranges.iter().filter(|(_, _, p)| p.after.is_some()).count();
        self.ranges_done.store(skipped, Ordering::Relaxed);
        info!(
            table = %name,
            snapshot_ms = table.time_ms,
            boundary_us = table.boundary_us,
            ranges = total,
            ranges_skipped = skipped,
            ranges_resumed = resumed,
            parallelism,
            "snapshot: publishing the rows of {name} written before {} ({} of {total} ranges \
             left, {resumed} of them resumed after their last batch)",
            chrono::DateTime::from_timestamp_micros(table.boundary_us)
                .map(scylla_cdc::cli::rfc3339_micros)
                .unwrap_or_default(),
            ranges.len()
        );
        let started = Instant::now();
        let work = stream::iter(ranges)
            .map(|(i, r, p)| self.publish_range_retrying(i, r, p))
            .buffer_unordered(parallelism)
            .try_for_each(|()| async { Ok(()) });
        tokio::pin!(work);
        let every = config.progress_interval.unwrap_or(Duration::from_secs(10));
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await; // the first tick is immediate
        loop {
            tokio::select! {
                r = &mut work => { r?; break; }
                () = shutdown.requested() => {
                    return Ok(Outcome::Stopped(CliError::new(
                        scylla_cdc::cli::exit_code::OK,
                        format!(
                            "stopped during the snapshot of {name} ({} of {total} ranges \
                             done): restart with the same arguments to resume it",
                            self.ranges_done.load(Ordering::Relaxed)
                        ),
                    )));
                }
                _ = ticks.tick() => {
                    let done = self.ranges_done.load(Ordering::Relaxed);
                    info!(
                        table = %name,
                        ranges_done = done,
                        rows = self.rows.load(Ordering::Relaxed),
                        events = self.events.load(Ordering::Relaxed),
                        "snapshot progress: {done}/{total} ranges of {name} published"
                    );
                }
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        let rows = self.rows.load(Ordering::Relaxed);
        info!(
            table = %name,
            rows,
            events = self.events.load(Ordering::Relaxed),
            rows_left_to_the_stream = self.left_out.load(Ordering::Relaxed),
            "snapshot: published {name} in {elapsed:.1}s ({rows} rows read, {:.0} rows/s); \
             streaming its log next",
            rows as f64 / elapsed.max(1e-9)
        );
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{SavedSnapshots, is_snapshot_stream};
    use crate::event::{ColumnInfo, OutputFormat};
    use scylla::frame::response::result::CollectionType;
    use scylla_cdc::StreamID;
    use serde_json::Value;

    fn table() -> TableInfo {
        let int = || ColumnType::Native(NativeType::Int);
        TableInfo {
            keyspace: "ks".into(),
            table: "t".into(),
            partition_key: vec![ColumnInfo::new("pk", int())],
            clustering_key: vec![ColumnInfo::new("ck", int())],
            static_columns: vec![ColumnInfo::new("s", int())],
            regular_columns: vec![
                ColumnInfo::new("a", int()),
                ColumnInfo::new(
                    "l",
                    ColumnType::Collection {
                        frozen: false,
                        typ: CollectionType::List(Box::new(int())),
                    },
                ),
                ColumnInfo::new("v", int()),
            ],
        }
    }

    fn renderer() -> EventRenderer {
        let mut options = EventOptions::new("p");
        options.format = OutputFormat::Legacy;
        options.schemas = false;
        EventRenderer::new(table(), options)
    }

    /// A scanned row: token, pk, ck, s [wt, ttl, v], a [wt, ttl, v], l [v], v [wt, ttl, v].
    fn row(pk: i32, ck: Option<i32>, s: (Option<i64>, i32), a: (Option<i64>, i32), l: bool) -> Row {
        let i = |v| Some(CqlValue::Int(v));
        let w = |t: Option<i64>| t.map(CqlValue::BigInt);
        let value = |t: Option<i64>, v| t.map(|_| CqlValue::Int(v));
        Row {
            columns: vec![
                Some(CqlValue::BigInt(7)),
                i(pk),
                ck.map(CqlValue::Int),
                w(s.0),
                None,
                value(s.0, s.1),
                w(a.0),
                None,
                value(a.0, a.1),
                l.then(|| CqlValue::List(vec![CqlValue::Int(1)])),
                None,
                None,
                None,
            ],
        }
    }

    fn after(e: &Event) -> Value {
        let v: Value = serde_json::from_slice(e.value.as_ref().unwrap()).unwrap();
        assert_eq!(v["op"], "r");
        v["after"].clone()
    }

    #[test]
    fn cells_written_at_or_after_the_boundary_are_left_to_the_stream() {
        let layout = Layout::of(&table());
        assert_eq!(
            layout
                .columns
                .iter()
                .map(|c| (c.name.as_str(), c.timed))
                .collect::<Vec<_>>(),
            [("s", true), ("a", true), ("l", false), ("v", true)]
        );
        let mut r = renderer();
        let mut out = Vec::new();
        const B: i64 = 1_000;
        let rows = vec![
            // The static cell before B, `a` after it: the static row and the row without `a`.
            row(1, Some(1), (Some(10), 5), (Some(B), 6), true),
            // Same partition: no second static event; `a` before B.
            row(1, Some(2), (Some(10), 5), (Some(B - 1), 8), false),
        ];
        let left = render_rows(&layout, &mut r, &rows, B, 42, &mut out).unwrap();
        assert_eq!(left, 0);
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(after(&out[0])["s"]["value"], 5);
        assert_eq!(out[0].header("scylla.target"), Some(&b"static-row"[..]));
        let first = after(&out[1]);
        assert_eq!(first["ck"], 1);
        assert_eq!(first["a"], Value::Null, "written at B: left out");
        assert_eq!(first["v"]["value"], Value::Null, "a null cell: known null");
        assert_eq!(after(&out[2])["a"]["value"], 8);

        // Every non-null cell at or after B: no event (the stream has the row); a row without
        // any non-null cell (only its marker) cannot be dated: an event; a partition with only
        // its static row: the static event alone.
        out.clear();
        let rows = vec![
            row(2, Some(1), (Some(B + 5), 5), (Some(B), 6), false),
            row(2, Some(2), (None, 0), (None, 0), false),
        ];
        let left = render_rows(&layout, &mut r, &rows, B, 42, &mut out).unwrap();
        assert_eq!(left, 2, "the static row and the first row");
        assert_eq!(out.len(), 1);
        assert_eq!(after(&out[0])["ck"], 2);
        out.clear();
        let rows = vec![row(3, None, (Some(1), 9), (None, 0), false)];
        render_rows(&layout, &mut r, &rows, B, 42, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(after(&out[0])["ck"], Value::Null);
        assert_eq!(after(&out[0])["s"]["value"], 9);
        // A cell that cannot be dated (a non-frozen list) keeps its row.
        out.clear();
        let rows = vec![row(4, Some(1), (None, 0), (Some(B + 1), 1), true)];
        render_rows(&layout, &mut r, &rows, B, 42, &mut out).unwrap();
        assert_eq!(out.len(), 1);
    }

    #[tokio::test]
    async fn the_row_rate_spaces_payments() {
        let rate = RowRate::new(1000);
        let start = tokio::time::Instant::now();
        rate.pay(100).await; // at once
        rate.pay(200).await; // after the first 100 rows' 100 ms
        rate.pay(1).await; // after 300 ms
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(295) && elapsed < Duration::from_secs(2),
            "{elapsed:?}"
        );
        // Idle time is no debt, and gives at most a tenth of a second's burst.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let later = tokio::time::Instant::now();
        rate.pay(100).await;
        rate.pay(50).await;
        assert!(later.elapsed() < Duration::from_millis(40));
        rate.pay(1).await;
        assert!(later.elapsed() >= Duration::from_millis(45));
    }

    fn config(extra: &[&str]) -> Config {
        use clap::Parser;
        let base = [
            "scylla-cdc-kafka",
            "--hosts",
            "127.0.0.1",
            "-k",
            "ks",
            "-t",
            "a,b",
            "--bootstrap-servers",
            "127.0.0.2:9092",
            "--topic-prefix",
            "p",
            "--safety-interval",
            "2.5",
        ];
        let launched = chrono::DateTime::from_timestamp_millis(1_000_000).unwrap();
        crate::args::Args::try_parse_from(base.iter().chain(extra))
            .unwrap()
            .into_config(launched, |_| None)
            .unwrap()
    }

    #[test]
    fn the_plan_follows_the_saved_progress() {
        let ms = chrono::DateTime::from_timestamp_millis;
        // Nothing saved: both tables, from T minus the safety interval.
        let saved = SavedProgress::default();
        let plan = Plan::new(&config(&["--snapshot"]), &saved);
        assert_eq!(plan.tables.len(), 2);
        assert_eq!(plan.start_of("ks.a"), ms(997_500));
        let records = plan.records();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].key, "snap/ks.a");
        assert!(
            records[0].value.contains(r#""boundary":997500000"#),
            "{}",
            records[0].value
        );
        // Without --snapshot: nothing.
        let plan = Plan::new(&config(&[]), &saved);
        assert!(plan.tables.is_empty() && plan.start_of("ks.a").is_none());

        // `a` streamed before (its start saved), `b` has an unfinished snapshot (resumed with
        // its saved boundary and progress, even without --snapshot) ...
        let mut saved = SavedProgress::default();
        saved.starts.insert("ks.a".into(), 5);
        let apply = |saved: &mut SavedProgress, r: CheckpointRecord| {
            saved.apply(&r.key, Some(r.value.as_bytes())).unwrap()
        };
        apply(&mut saved, snapshot_record("ks.b", 600, 400_000, 16, false));
        let done_range = RangeProgress {
            after: Some(3),
            done: true,
            events: 1,
        };
        apply(&mut saved, range_record("ks.b", 2, (0, 5), &done_range));
        for flags in [&["--snapshot"][..], &[]] {
            let plan = Plan::new(&config(flags), &saved);
            assert_eq!(plan.tables.len(), 1, "{flags:?}");
            let b = &plan.tables[0];
            assert_eq!((b.name.as_str(), b.index, b.time_ms), ("ks.b", 1, 600));
            assert_eq!((b.boundary_us, b.ranges, b.new), (400_000, 16, false));
            assert_eq!(b.progress[&2], done_range);
            assert!(plan.records().is_empty());
            assert_eq!(plan.start_of("ks.b"), ms(400));
            assert_eq!(plan.start_of("ks.a"), None);
        }
        // ... and once it is done, straight to streaming.
        apply(&mut saved, snapshot_record("ks.b", 600, 400_000, 16, true));
        let plan = Plan::new(&config(&["--snapshot"]), &saved);
        assert!(plan.tables.is_empty());
        assert_eq!(plan.start_of("ks.b"), ms(400));
    }

    #[test]
    fn records_read_back_to_the_saved_snapshot() {
        let mut saved = SavedSnapshots::default();
        let apply = |saved: &mut SavedSnapshots, r: CheckpointRecord| {
            let v: Value = serde_json::from_str(&r.value).unwrap();
            saved.apply(&r.key, &v)
        };
        // A range record may come before the table's record (compaction keeps the latest).
        let p = RangeProgress {
            after: Some(-5),
            done: false,
            events: 12,
        };
        let r = range_record("ks.t", 3, (-10, 0), &p);
        assert_eq!(r.key, "snap/ks.t/3");
        apply(&mut saved, r).unwrap();
        apply(
            &mut saved,
            snapshot_record("ks.t", 2_000, 1_500_000, 256, false),
        )
        .unwrap();
        let s = &saved.tables["ks.t"];
        assert_eq!(
            (s.time_ms, s.boundary_us, s.ranges, s.done),
            (Some(2_000), 1_500_000, 256, false)
        );
        assert_eq!(s.progress[&3], p);
        let done = RangeProgress {
            after: None,
            done: true,
            events: 0,
        };
        apply(&mut saved, range_record("ks.t", 3, (-10, 0), &done)).unwrap();
        assert_eq!(saved.tables["ks.t"].progress[&3], done);
        // Malformed: an error, not a panic.
        assert!(saved.apply("snap/ks.t", &json!({"table": "ks.t"})).is_err());
        assert!(
            saved
                .apply(
                    "snap/ks.t/1",
                    &json!({"table": "ks.t", "range": 1, "after": "x"})
                )
                .is_err()
        );
    }

    #[test]
    fn snapshot_events_have_a_stream_and_a_time_no_change_has() {
        assert!(is_snapshot_stream(&snapshot_stream()));
        let real = StreamID::from([0x7f, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0x01]);
        assert_eq!(real.version(), 1);
        assert!(!is_snapshot_stream(&real));
        assert_eq!(snapshot_stream().version(), 0);
        assert_eq!(SNAPSHOT_TIME.get_version_num(), 0);
    }
}
