//! Reading the log of one stream group, window after window.
//!
//! A [`StreamReader`] owns one group of streams of one generation and one [`Sink`] (a
//! consumer, or the change assembler in front of a change consumer). It
//! reads windows `[T, U)` (see [`crate::base::time::next_window_end`]) from a [`LogSource`] page by
//! page, prefetching the next page while the consumer handles the current one (a few groups
//! at a time), retries transient errors from the page that failed, never hands a stream's
//! row over twice, and saves a [`Checkpoint`] after its windows.

pub(crate) mod error_policy;
pub(crate) mod sink;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::FutureExt;
use scylla::client::session::Session;
use scylla::deserialize::row::ColumnIterator;
use scylla::errors::ExecutionError;
use scylla::frame::response::result::ColumnSpec;
use scylla::response::query_result::QueryRowsResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::prepared::PreparedStatement;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::base::cdc_types::{GenerationTimestamp, StreamID};
use crate::base::error::{Backoff, CDCError, StreamList, is_transient};
use crate::base::time::{
    ChangeKey, Clock, next_window_end, timeuuid_to_datetime, truncate_to_millis,
};
use crate::change::Change;
use crate::change::assembler::ChangeAssembler;
use crate::checkpoints::{CDCCheckpointSaver, Checkpoint};
use crate::cluster::replicas::{PreferReplica, Replica};
use crate::consumer::{CDCRow, CellSource, ColumnIndex, RowHeader, RowRef};
use crate::report::progress::{ErrorOutcome, RateLimiter, Slot, Stats, retry_kind};
use crate::stream::error_policy::{AfterRetries, ConsumerErrorPolicy, DeadLetter, panic_message};
use crate::stream::sink::Sink;

/// One page of log rows.
// The test-only variant is the small one; production builds have only `Driver`.
#[allow(clippy::large_enum_variant)]
pub(crate) enum LogPage {
    /// A page returned by the driver.
    Driver(QueryRowsResult),
    /// Rows serialized by a test, with their column specs.
    #[cfg(test)]
    Raw {
        /// The columns of every row.
        specs: Arc<Vec<ColumnSpec<'static>>>,
        /// Each row serialized as CQL cells.
        rows: Vec<Vec<u8>>,
    },
}

/// The rows of a [`LogPage`] as the page holds them: `count` rows back to back, each its
/// cells in column order, each cell after its big-endian `int` length (negative: null), as
/// in a `RESULT Rows` message (the native protocol's spec, section 4.2.5.2).
pub(crate) struct RawRows<'p> {
    /// The columns of every row.
    pub(crate) specs: &'p [ColumnSpec<'p>],
    /// The number of rows.
    pub(crate) count: usize,
    /// The rows' bytes.
    pub(crate) bytes: std::borrow::Cow<'p, [u8]>,
}

/// The first cell of `rest` and what follows it; `None` when `rest` is cut short.
#[inline]
pub(crate) fn next_cell(rest: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let (len, rest) = rest.split_first_chunk::<4>()?;
    match usize::try_from(i32::from_be_bytes(*len)) {
        Err(_) => Some((None, rest)),
        Ok(len) => {
            let (cell, rest) = rest.split_at_checked(len)?;
            Some((Some(cell), rest))
        }
    }
}

impl LogPage {
    /// The number of rows of the page.
    fn len(&self) -> usize {
        match self {
            Self::Driver(result) => result.rows_num(),
            #[cfg(test)]
            Self::Raw { rows, .. } => rows.len(),
        }
    }

    /// The page's rows as its bytes hold them, parsed by the stream reader itself: the
    /// driver's row iterator reads every cell's length twice (once to skip the row, once in
    /// its column iterator) and was a third of the reader's CPU per row.
    fn raw_rows(&self) -> Result<RawRows<'_>, String> {
        match self {
            Self::Driver(result) => {
                let specs = result.column_specs().as_slice();
                let count = result.rows_num();
                // The driver keeps the rows' bytes to itself; any cell it slices out of them
                // knows them whole (`as_original_frame_bytes`). The cells before the first
                // non-null one are nulls, 4 bytes each: where it must start is checked.
                let rows = result.rows::<ColumnIterator>().map_err(|e| e.to_string())?;
                for (r, row) in rows.enumerate() {
                    let row = row.map_err(|e| e.to_string())?;
                    for (c, column) in row.enumerate() {
                        let column = column.map_err(|e| e.to_string())?;
                        let Some(slice) = column.slice else { continue };
                        let bytes: &[u8] = slice.as_original_frame_bytes();
                        let at = (slice.as_slice().as_ptr() as usize)
                            .checked_sub(bytes.as_ptr() as usize);
                        let expected = (r * specs.len() + c + 1) * 4;
                        if at != Some(expected) {
                            // Not the layout this expects (another driver version): rebuild
                            // the rows' bytes from the driver's cells, slower but the same.
                            return Self::copied_rows(result);
                        }
                        return Ok(RawRows {
                            specs,
                            count,
                            bytes: std::borrow::Cow::Borrowed(bytes),
                        });
                    }
                }
                // No cell at all is set: every row is nulls (and unusable).
                let nulls = (-1i32).to_be_bytes().repeat(count * specs.len());
                Ok(RawRows {
                    specs,
                    count,
                    bytes: std::borrow::Cow::Owned(nulls),
                })
            }
            #[cfg(test)]
            Self::Raw { specs, rows } => Ok(RawRows {
                specs: specs.as_slice(),
                count: rows.len(),
                bytes: std::borrow::Cow::Owned(rows.concat()),
            }),
        }
    }
}

impl LogPage {
    /// The rows' bytes as a RESULT Rows message holds them, copied cell by cell through the
    /// driver's iterator (`[int length][bytes]`, length -1 for null).
    fn copied_rows(result: &QueryRowsResult) -> Result<RawRows<'_>, String> {
        let specs = result.column_specs().as_slice();
        let mut bytes = Vec::new();
        for row in result.rows::<ColumnIterator>().map_err(|e| e.to_string())? {
            for column in row.map_err(|e| e.to_string())? {
                match column.map_err(|e| e.to_string())?.slice {
                    None => bytes.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(slice) => {
                        let cell = slice.as_slice();
                        let len = i32::try_from(cell.len()).map_err(|e| e.to_string())?;
                        bytes.extend_from_slice(&len.to_be_bytes());
                        bytes.extend_from_slice(cell);
                    }
                }
            }
        }
        Ok(RawRows {
            specs,
            count: result.rows_num(),
            bytes: std::borrow::Cow::Owned(bytes),
        })
    }
}

/// Where stream readers get pages of the log from.
#[async_trait]
pub(crate) trait LogSource: Send + Sync {
    /// One page of the rows of `streams` with `start <= cdc$time < end`.
    async fn fetch_page(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError>;

    /// The same source with its queries sent to `replica` first (`None`: this source cannot
    /// route, use it as it is).
    fn routed(&self, _replica: Replica) -> Option<Arc<dyn LogSource>> {
        None
    }
}

/// Rows per page of the log query. A stream reader holds the page its consumer is handed
/// and the next one, fetched meanwhile: 2 500 rows each keep that at the 5 000 rows of one
/// page of the driver's default size (what a reader that does not prefetch holds), times the
/// number of stream groups (256 per node on ScyllaDB's default vnodes).
const LOG_PAGE_ROWS: i32 = 2500;

/// Reads the log through the driver with one prepared statement.
pub(crate) struct DriverLogSource {
    session: Arc<Session>,
    statement: PreparedStatement,
}

impl DriverLogSource {
    /// Prepares the window query on `keyspace`'s log table `log_table` (both unquoted).
    pub(crate) async fn new(
        session: Arc<Session>,
        keyspace: &str,
        log_table: &str,
    ) -> Result<Self, CDCError> {
        let text = format!(
            "SELECT * FROM {}.{} WHERE \"cdc$stream_id\" IN ? AND \"cdc$time\" >= minTimeuuid(?) \
             AND \"cdc$time\" < minTimeuuid(?) BYPASS CACHE",
            crate::base::cdc_types::quote_identifier(keyspace),
            crate::base::cdc_types::quote_identifier(log_table),
        );
        let mut statement = crate::base::error::prepare_idempotent(&session, &text).await?;
        statement.set_page_size(LOG_PAGE_ROWS);
        Ok(Self { session, statement })
    }
}

#[async_trait]
impl LogSource for DriverLogSource {
    async fn fetch_page(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
        let ids: Vec<&[u8]> = streams.iter().map(|s| &s.as_bytes()[..]).collect();
        let (result, next) = self
            .session
            .execute_single_page(&self.statement, (ids, start, end), paging)
            .await?;
        let rows = result.into_rows_result().map_err(|e| {
            ExecutionError::LastAttemptError(scylla::errors::RequestAttemptError::DbError(
                scylla::errors::DbError::ProtocolError,
                format!("the CDC log query did not return rows: {e}"),
            ))
        })?;
        Ok((LogPage::Driver(rows), next))
    }

    fn routed(&self, replica: Replica) -> Option<Arc<dyn LogSource>> {
        let base = self
            .statement
            .get_execution_profile_handle()
            .unwrap_or_else(|| self.session.get_default_execution_profile_handle());
        let policy = base.to_profile().get_load_balancing_policy().clone();
        let profile = base
            .pointee_to_builder()
            .load_balancing_policy(Arc::new(PreferReplica::new(replica, policy)))
            .build()
            .into_handle();
        let mut statement = self.statement.clone();
        statement.set_execution_profile_handle(Some(profile));
        Some(Arc::new(Self {
            session: self.session.clone(),
            statement,
        }))
    }
}

/// Settings shared by every stream reader of a log reader.
#[derive(Clone)]
pub(crate) struct ReaderSettings {
    /// The base table being read (what [`CDCRow::table`] says).
    pub(crate) table: Arc<str>,
    /// Longest window.
    pub(crate) window_size: Duration,
    /// How far behind "now" windows stop.
    pub(crate) safety_interval: Duration,
    /// Pause once caught up.
    pub(crate) sleep_interval: Duration,
    /// The longest pause of a caught-up group whose last windows were empty (at least
    /// `sleep_interval`): see [`backoff_pause`].
    pub(crate) max_idle_pause: Duration,
    /// Least time between two checkpoints of one group.
    pub(crate) pause_between_saves: Duration,
    /// Where checkpoints go, when saving is on.
    pub(crate) saver: Option<Arc<dyn CDCCheckpointSaver>>,
    /// The source of "now".
    pub(crate) clock: Arc<dyn Clock>,
    /// Where pages come from.
    pub(crate) source: Arc<dyn LogSource>,
    /// The end of reading (end timestamp or `stop_at`), changed while running.
    pub(crate) end: watch::Receiver<Option<DateTime<Utc>>>,
    /// How long a request keeps being retried after its first transient failure
    /// (`None`: forever).
    pub(crate) give_up_after: Option<Duration>,
    /// The reader's counters and low watermark.
    pub(crate) stats: Arc<Stats>,
    /// The shared cap on rows per second, if any.
    pub(crate) limiter: Option<Arc<RateLimiter>>,
    /// What happens to a row the consumer cannot take.
    pub(crate) on_error: ConsumerErrorPolicy,
    /// The base table's keyspace (for errors and dead letters).
    pub(crate) keyspace: Arc<str>,
    /// Permits to fetch a page ahead, shared by every group of a reader (see
    /// [`PREFETCH_PAGES`]).
    pub(crate) prefetch: Arc<tokio::sync::Semaphore>,
}

/// How many stream groups of one reader may fetch their next page while their consumer
/// handles the current one, at once. Prefetching hides a group's round trip behind its
/// consumer, which matters when few groups are read (one group: every round trip would
/// stall it); with many groups, as on a vnode cluster (one group per vnode), the other
/// groups' queries keep the cluster and the consumers busy anyway, and a prefetched page per
/// group only adds memory: measured with `compare-bench` (2 M log rows, 16 and 48 groups),
/// a prefetch for every group held 26–40 MiB at peak against 18–24 MiB for
/// scylla-cdc-rust (which never prefetches), for no gain in rows/s.
pub(crate) const PREFETCH_PAGES: usize = 2;

/// The point after which a stream reader of a consumer group's member must not deliver
/// anything: the validity of the leases of the units it reads. The member moves it later
/// after each renewal; the reader checks it before every row (and before a window's end, a
/// flush and a checkpoint), at the cost of one clock read, so that no hang of the member's
/// own work (a lease read, a renewal, a checkpoint load that waits on the cluster) and no
/// pause of the process (SIGSTOP, a long stall) lets it deliver past its lease: after a
/// pause, the first thing it does is to find the deadline passed.
pub(crate) struct Deadline {
    base: Instant,
    /// Nanoseconds after `base`.
    until: AtomicU64,
}

impl Deadline {
    /// A deadline at `until`.
    pub(crate) fn new(until: Instant) -> Self {
        let base = Instant::now();
        Self {
            base,
            until: AtomicU64::new(Self::nanos(base, until)),
        }
    }

    fn nanos(base: Instant, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(base).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Moves the deadline to `until` if that is later.
    pub(crate) fn extend(&self, until: Instant) {
        self.until
            .fetch_max(Self::nanos(self.base, until), Ordering::Release);
    }

    /// When it passes.
    pub(crate) fn at(&self) -> Instant {
        self.base + Duration::from_nanos(self.until.load(Ordering::Acquire))
    }

    /// Whether it has passed.
    #[inline]
    pub(crate) fn passed(&self) -> bool {
        Instant::now() >= self.at()
    }
}

/// The immutable part of a stream reader: what it reads and how.
struct Plan {
    settings: ReaderSettings,
    streams: Vec<StreamID>,
    generation: GenerationTimestamp,
    /// The next generation's start, once known.
    generation_end: watch::Receiver<Option<DateTime<Utc>>>,
    /// The group's position in the low watermark.
    slot: Slot,
    /// Per stream (same positions as `streams`), when its streams start differently (after
    /// a resume from checkpoints saved by another grouping): the time its rows are delivered
    /// from. Its earlier rows were delivered before, and are skipped.
    stream_starts: Option<Vec<DateTime<Utc>>>,
    /// In a consumer group: the validity of the leases of the units read (see [`Deadline`]).
    deadline: Option<Arc<Deadline>>,
}

/// The mutable part: the consumer and what was delivered.
struct Progress {
    sink: Sink,
    /// The column index of the current log schema.
    index: Option<Arc<ColumnIndex>>,
    /// Per stream (same positions as `Plan::streams`): the last delivered row.
    last: Vec<Option<ChangeKey>>,
    /// When the last checkpoint was saved.
    last_save: Option<Instant>,
    /// The time of the last saved checkpoint.
    saved_until: Option<DateTime<Utc>>,
    /// Rows read in the current window (recorded to the metrics facade per window).
    window_rows: u64,
    /// Changes delivered in the current window.
    window_changes: u64,
    /// The stream of the last delivered row.
    last_stream: Option<StreamID>,
}

/// Reads one stream group of one generation from `start` until the generation ends or the
/// reader's end is reached.
pub(crate) struct StreamReader {
    plan: Plan,
    progress: Progress,
    start: DateTime<Utc>,
}

impl StreamReader {
    /// A reader of `streams` (one group of `generation`) from `start`.
    pub(crate) fn new(
        settings: ReaderSettings,
        streams: Vec<StreamID>,
        generation: GenerationTimestamp,
        generation_end: watch::Receiver<Option<DateTime<Utc>>>,
        start: DateTime<Utc>,
        mut sink: Sink,
        slot: Slot,
    ) -> Self {
        let last = vec![None; streams.len()];
        if let Sink::Changes(assembler) = &mut sink {
            // A change is kept for a second delivery only if a failed row is handed over
            // again, or for its dead letters.
            assembler.keep_failed_changes(
                settings.on_error.retry().attempts > 0
                    || matches!(
                        settings.on_error.after_retries(),
                        AfterRetries::DeadLetter(_)
                    ),
            );
        }
        Self {
            plan: Plan {
                settings,
                streams,
                generation,
                generation_end,
                slot,
                stream_starts: None,
                deadline: None,
            },
            progress: Progress {
                sink,
                index: None,
                last,
                last_save: None,
                saved_until: None,
                window_rows: 0,
                window_changes: 0,
                last_stream: None,
            },
            start: truncate_to_millis(start),
        }
    }

    /// Gives each stream its own start (same positions as the streams): rows of a stream
    /// before its start are not delivered, nor is its checkpoint saved before it. The group
    /// itself reads from its `start`, which should be the earliest of them.
    pub(crate) fn with_stream_starts(mut self, starts: Vec<DateTime<Utc>>) -> Self {
        if starts.len() == self.plan.streams.len() && starts.iter().any(|s| *s > self.start) {
            self.plan.stream_starts = Some(starts.into_iter().map(truncate_to_millis).collect());
        }
        self
    }

    /// Stops the reader (with [`CDCError::LeaseExpired`]) before it delivers anything, ends a
    /// window or saves a checkpoint once `deadline` has passed.
    pub(crate) fn with_deadline(mut self, deadline: Arc<Deadline>) -> Self {
        self.plan.deadline = Some(deadline);
        self
    }

    /// Runs the window loop until the limit (generation end or reader end) is reached.
    pub(crate) async fn run(mut self) -> Result<(), CDCError> {
        let mut t = self.start;
        // Pauses in a row before which no row was read (the pause grows with them), and
        // the rows read since the last pause.
        let mut empty_windows = 0u32;
        let mut rows_since_pause = 0u64;
        // Copies of the two limits' receivers, marked seen before each look at the limit: a
        // pause ends as soon as either changes (a stop, `stop_at`, a new generation).
        let mut limits = (
            self.plan.settings.end.clone(),
            self.plan.generation_end.clone(),
        );
        loop {
            limits.0.borrow_and_update();
            limits.1.borrow_and_update();
            let limit = self.plan.limit();
            if limit.is_some_and(|l| t >= l) {
                self.plan.flush(&mut self.progress, t).await?;
                self.plan.save(&mut self.progress, t, true).await?;
                self.plan.settings.stats.advance(&self.plan.slot, t);
                return Ok(());
            }
            let s = &self.plan.settings;
            let now = s.clock.now();
            let u = next_window_end(t, s.window_size, now, s.safety_interval, limit);
            if u <= t {
                pause(
                    idle_pause(s.sleep_interval, t, now, s.safety_interval),
                    &mut limits,
                )
                .await;
                continue;
            }
            tracing::Span::current().record("window_start", tracing::field::display(t));
            self.plan.read_window(&mut self.progress, t, u).await?;
            self.plan.end_window(&mut self.progress, t, u).await?;
            let p = &mut self.progress;
            rows_since_pause += p.window_rows;
            self.plan.settings.stats.window_done(
                &self.plan.slot,
                u,
                p.window_rows,
                p.window_changes,
            );
            (p.window_rows, p.window_changes) = (0, 0);
            // The window was cut short by "now - safety_interval" (not by its size or the
            // limit): the reader has caught up and waits before the next window.
            let caught_up =
                u < crate::base::time::plus(t, s.window_size) && limit.is_none_or(|l| u < l);
            t = u;
            self.plan.save(&mut self.progress, t, false).await?;
            if caught_up {
                empty_windows = if rows_since_pause == 0 {
                    empty_windows.saturating_add(1)
                } else {
                    0
                };
                rows_since_pause = 0;
                let s = &self.plan.settings;
                let idle = backoff_pause(s.sleep_interval, s.max_idle_pause, empty_windows);
                pause(idle, &mut limits).await;
            }
        }
    }
}

/// One row of a page: its header, the page's columns, its cells and its bytes as the page
/// holds them (see [`CellSource::Span`]).
type PageRow<'r, 'p> = (
    RowHeader,
    &'r Arc<ColumnIndex>,
    &'r [ColumnSpec<'p>],
    &'r [Option<&'p [u8]>],
    &'p [u8],
);

/// Rows and changes of one page.
#[derive(Default)]
struct PageCounts {
    rows: u64,
    changes: u64,
}

/// What the consumer failed on, as errors and WARN lines name it: a row, or a whole change
/// (named by its last row).
struct Failed {
    stream_id: StreamID,
    time: uuid::Uuid,
    /// The row's `cdc$batch_seq_no`; for a change, its last row's.
    batch_seq_no: i32,
    /// For a change: its number of rows.
    change_rows: Option<usize>,
}

impl Failed {
    fn row(header: &RowHeader) -> Self {
        Self {
            stream_id: header.stream_id,
            time: header.time,
            batch_seq_no: header.batch_seq_no,
            change_rows: None,
        }
    }

    fn change(change: &Change) -> Self {
        Self {
            stream_id: change.stream_id(),
            time: change.time(),
            batch_seq_no: change.rows().last().map_or(0, |r| r.batch_seq_no()),
            change_rows: Some(change.rows().len()),
        }
    }

    /// `row` or `change`, as what failed is.
    fn what<'a>(&self, row: &'a str, change: &'a str) -> &'a str {
        if self.change_rows.is_some() {
            change
        } else {
            row
        }
    }
}

/// Where reading stops: the reader's end or a generation's end (`None`: not known yet).
type Limit = watch::Receiver<Option<DateTime<Utc>>>;

/// Waits `duration`, or less if the reader's end or the generation's end changes meanwhile
/// (`limits`, marked seen when the loop last looked at the limit): a graceful stop or a new
/// generation is acted on at once, however long the sleep interval or the idle back-off.
async fn pause(duration: Duration, limits: &mut (Limit, Limit)) {
    // A closed channel (its sender gone) cannot change any more: that branch is disabled.
    tokio::select! {
        () = tokio::time::sleep(duration) => {}
        Ok(()) = limits.0.changed() => {}
        Ok(()) = limits.1.changed() => {}
    }
}

/// How long a group waits when nothing can be read yet (`now - safety_interval <= t`): the
/// sleep interval; with a zero sleep interval, until the window from `t` can be read (at
/// least 1 ms, at most a second, so that a changed end is still seen promptly).
fn idle_pause(
    sleep_interval: Duration,
    t: DateTime<Utc>,
    now: DateTime<Utc>,
    safety_interval: Duration,
) -> Duration {
    if !sleep_interval.is_zero() {
        return sleep_interval;
    }
    let readable_at = crate::base::time::plus(t, safety_interval);
    (readable_at - now)
        .to_std()
        .unwrap_or_default()
        .clamp(Duration::from_millis(1), Duration::from_secs(1))
}

/// The pause of a caught-up group after `empty` catch-ups in a row without a row: the sleep
/// interval after one with rows, doubled for every empty one since (adaptive
/// polling), at most `max` (and never less than the sleep interval). A row written while
/// the group pauses is read at most `safety interval + max` after it was written.
pub(crate) fn backoff_pause(sleep: Duration, max: Duration, empty: u32) -> Duration {
    let factor = 1u32.checked_shl(empty.min(31)).unwrap_or(u32::MAX);
    sleep.saturating_mul(factor).min(max).max(sleep)
}

impl Plan {
    /// Fails with [`CDCError::LeaseExpired`] once the leases of the units read have run out.
    #[inline]
    fn check_deadline(&self) -> Result<(), CDCError> {
        match &self.deadline {
            Some(deadline) if deadline.passed() => Err(CDCError::LeaseExpired),
            _ => Ok(()),
        }
    }

    /// The earlier of the generation's end and the reader's end.
    fn limit(&self) -> Option<DateTime<Utc>> {
        let g = *self.generation_end.borrow();
        let e = *self.settings.end.borrow();
        match (g, e) {
            (Some(g), Some(e)) => Some(g.min(e)),
            (g, e) => g.or(e),
        }
    }

    /// Tells the consumer the window `[start, end)` is over. A pending change is complete:
    /// it is delivered first, as a step of its own under the consumer error policy (see
    /// [`Self::deliver_change`]), so that its failure is its own, not the window's.
    async fn end_window(
        &self,
        progress: &mut Progress,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        self.check_deadline()?;
        if let Sink::Changes(assembler) = &mut progress.sink
            && let Some(change) = assembler.take_completed()
        {
            self.deliver_change(assembler, change, (start, end)).await?;
        }
        let ended = progress.sink.end_of_window();
        self.unrowed(ended, "at the end of a window", end).await
    }

    /// Lets the consumer finish what it accepted: every row before `t` was handed to it.
    /// A change consumer has no change pending here: each window ends with
    /// [`Self::end_window`], which delivers it.
    async fn flush(&self, progress: &mut Progress, t: DateTime<Utc>) -> Result<(), CDCError> {
        self.check_deadline()?;
        let flushed = progress.sink.flush();
        self.unrowed(flushed, "in flush", t).await
    }

    /// Awaits a consumer call that belongs to no single row (`flush`, the end of a window,
    /// `what`): its error, or a panic, stops the reader with [`CDCError::ConsumerFlush`].
    async fn unrowed(
        &self,
        call: impl std::future::Future<Output = anyhow::Result<()>>,
        what: &str,
        until: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        let result = AssertUnwindSafe(call)
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                Err(anyhow::anyhow!(
                    "the consumer panicked {what}: {}",
                    panic_message(panic.as_ref())
                ))
            });
        result.map_err(|source| {
            self.settings.stats.consumer_error(ErrorOutcome::Stop);
            CDCError::ConsumerFlush {
                streams: StreamList(self.streams.clone()),
                until,
                source,
            }
        })
    }

    /// Saves a checkpoint at `t` if saving is on and the last one is older than
    /// `pause_between_saves` (or `force`), after flushing the consumer. A failed save is only
    /// logged (the next window saves again); a failed flush stops the reader.
    async fn save(
        &self,
        progress: &mut Progress,
        t: DateTime<Utc>,
        force: bool,
    ) -> Result<(), CDCError> {
        let Some(saver) = &self.settings.saver else {
            return Ok(());
        };
        if progress.saved_until.is_some_and(|s| s >= t) {
            return Ok(());
        }
        if !force
            && progress
                .last_save
                .is_some_and(|i| i.elapsed() < self.settings.pause_between_saves)
        {
            return Ok(());
        }
        // A stream that starts after `t` keeps its own, later checkpoint.
        let streams = match &self.stream_starts {
            None => self.streams.clone(),
            Some(starts) => self
                .streams
                .iter()
                .zip(starts)
                .filter(|(_, start)| **start <= t)
                .map(|(s, _)| *s)
                .collect(),
        };
        if streams.is_empty() {
            return Ok(());
        }
        self.flush(progress, t).await?;
        // A member whose lease ran out saves nothing: another member may read the unit now.
        self.check_deadline()?;
        let cp = Checkpoint::new(t, streams, self.generation);
        match saver.save_checkpoint(&cp).await {
            Ok(()) => {
                progress.last_save = Some(Instant::now());
                progress.saved_until = Some(t);
                debug!(checkpoint = %t, "saved checkpoint");
            }
            Err(e) => warn!(error = %e, checkpoint = %t, "could not save a CDC checkpoint"),
        }
        Ok(())
    }

    /// Fetches a page, retrying transient errors with capped exponential backoff.
    async fn fetch(
        &self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), CDCError> {
        let mut backoff = Backoff::new(self.settings.give_up_after);
        loop {
            match self
                .settings
                .source
                .fetch_page(&self.streams, start, end, paging.clone())
                .await
            {
                Ok(page) => return Ok(page),
                Err(e) if is_transient(&e) => {
                    let kind = retry_kind(&e);
                    if backoff.wait("reading the CDC log", &e).await {
                        self.settings.stats.retry(kind);
                    } else {
                        return Err(CDCError::LogRead {
                            streams: StreamList(self.streams.clone()),
                            window_start: start,
                            window_end: end,
                            source: Box::new(e),
                        });
                    }
                }
                Err(source) => {
                    return Err(CDCError::LogRead {
                        streams: StreamList(self.streams.clone()),
                        window_start: start,
                        window_end: end,
                        source: Box::new(source),
                    });
                }
            }
        }
    }

    /// Reads the window `[start, end)` page by page, prefetching the next page while the
    /// consumer handles the current one when a prefetch permit is free (see
    /// [`PREFETCH_PAGES`]), else fetching it once the current page is handled and dropped.
    ///
    /// With a rate limit, the rows of a page are paid for in chunks as they are delivered,
    /// and the next page is requested only once the current one is paid for entirely: what
    /// is read from the cluster is capped too, running ahead of the limit by at most one page
    /// per stream group.
    async fn read_window(
        &self,
        progress: &mut Progress,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        let mut page = self.fetch(start, end, PagingState::start()).await?;
        loop {
            let (rows, next) = page;
            match next.into_paging_control_flow() {
                std::ops::ControlFlow::Break(()) => {
                    return self.consume_page(progress, &rows, start, end, None).await;
                }
                std::ops::ControlFlow::Continue(state) => {
                    let (paid_tx, paid_rx) = tokio::sync::oneshot::channel();
                    let limited = self.settings.limiter.is_some();
                    let fetch_next = async {
                        if limited {
                            // An error (the consumer failed first) ends the join anyway.
                            let _ = paid_rx.await;
                        }
                        self.fetch(start, end, state).await
                    };
                    page = match self.settings.prefetch.try_acquire() {
                        Ok(_permit) => {
                            // Either error ends the window (and the reader) at once.
                            let ((), fetched) = tokio::try_join!(
                                self.consume_page(progress, &rows, start, end, Some(paid_tx)),
                                fetch_next
                            )?;
                            fetched
                        }
                        Err(_) => {
                            self.consume_page(progress, &rows, start, end, Some(paid_tx))
                                .await?;
                            drop(rows);
                            fetch_next.await?
                        }
                    };
                }
            }
        }
    }

    /// Hands the rows of a page to the consumer, skipping rows already delivered; with a
    /// rate limit, pays for them in chunks first and tells `paid` once all are paid for.
    async fn consume_page(
        &self,
        progress: &mut Progress,
        page: &LogPage,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paid: Option<tokio::sync::oneshot::Sender<()>>,
    ) -> Result<(), CDCError> {
        let mut counts = PageCounts::default();
        let result = self
            .deliver_page(progress, page, start, end, paid, &mut counts)
            .await;
        // Counted per page, whether or not the page ended with an error.
        self.settings.stats.add_page(counts.rows, counts.changes);
        progress.window_rows += counts.rows;
        progress.window_changes += counts.changes;
        result
    }

    /// Hands one row to the consumer, applying the consumer error policy: retries (a fresh
    /// [`CDCRow`] each time, panics caught as errors), then stop, skip or dead-letter.
    ///
    /// With a change consumer, a pending change the row is not of (a change without
    /// `cdc$end_of_batch`) is first delivered as a step of its own ([`Self::deliver_change`]),
    /// so that its failure is charged to it, not to this row. A row that completes its own
    /// change (at `cdc$end_of_batch`) delivers it: a failure is the change's, handed over
    /// again whole, and given up on whole (its dead letters hold the change's rows).
    async fn hand_over(
        &self,
        progress: &mut Progress,
        (header, index, specs, cells, span): PageRow<'_, '_>,
        window: (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), CDCError> {
        let mut attempts = 0u32;
        let error = loop {
            let row = || {
                CDCRow::new(header, index, specs, cells)
                    .with_table(&self.settings.table)
                    .with_span(span)
            };
            let result = match &mut progress.sink {
                // The change assembler is called directly, and synchronously unless the
                // row completes a change: only the consumer's future is awaited.
                Sink::Changes(assembler) if assembler.can_push(&header) => {
                    let raw = RowRef {
                        index,
                        specs,
                        cells: CellSource::Slices(cells),
                    };
                    let result = match assembler.push_row(&header, raw, Some(span)) {
                        Ok(None) => Ok(Ok(())),
                        Ok(Some(delivery)) => AssertUnwindSafe(delivery).catch_unwind().await,
                        Err(e) => Ok(Err(e)),
                    };
                    // No change was kept for a second delivery before this row
                    // (`can_push`): once it went through, none is.
                    if matches!(result, Ok(Ok(()))) {
                        assembler.delivered();
                    }
                    result
                }
                Sink::Changes(assembler) => {
                    if let Some(change) = assembler.take_completed_by(&header) {
                        // The pending change ends before this row, which is not of it: it is
                        // delivered on its own, then the row is handed over (nothing pending
                        // is left: the row goes to `push_row`).
                        self.deliver_change(assembler, change, window).await?;
                        continue;
                    }
                    // The row's change failed: it is delivered again.
                    AssertUnwindSafe(assembler.consume_row(row()))
                        .catch_unwind()
                        .await
                }
                Sink::Rows(consumer) => {
                    AssertUnwindSafe(consumer.consume_cdc(row()))
                        .catch_unwind()
                        .await
                }
            };
            attempts += 1;
            let error = match result {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => e,
                Err(panic) => {
                    anyhow::anyhow!("the consumer panicked: {}", panic_message(panic.as_ref()))
                }
            };
            if let Err(error) = self
                .wait_to_retry(&Failed::row(&header), attempts, error)
                .await
            {
                break error;
            }
            // A retry after the pause is a delivery too.
            self.check_deadline()?;
        };
        // The change the row completed, if it was kept to be delivered again, is given up
        // with it (and is what its dead letters hold).
        let change = match &mut progress.sink {
            Sink::Changes(assembler) => assembler.give_up(&header),
            Sink::Rows(_) => None,
        };
        let failed = change.as_ref().map_or(Failed::row(&header), Failed::change);
        let (keyspace, table) = (&self.settings.keyspace, &self.settings.table);
        self.give_up(&failed, error, attempts, window, |error| match &change {
            Some(change) => DeadLetter::of_change(keyspace, table, change, error, attempts),
            None => {
                let row = CDCRow::new(header, index, specs, cells).with_table(table);
                vec![DeadLetter::of_row(keyspace, table, &row, error, attempts)]
            }
        })
        .await
    }

    /// Hands a complete change to the change consumer as a step of its own, applying the
    /// consumer error policy to it: retries (the same change again, panics caught as
    /// errors), then stop, skip or dead-letter — of the change, whole. For a change that
    /// no row of its own completed (no `cdc$end_of_batch`): the next change's first row, or
    /// the window's end.
    async fn deliver_change(
        &self,
        assembler: &mut ChangeAssembler,
        change: Change,
        window: (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<(), CDCError> {
        let failed = Failed::change(&change);
        let mut attempts = 0u32;
        let error = loop {
            self.check_deadline()?;
            attempts += 1;
            let delivery = assembler.consume_change(change.clone());
            let error = match AssertUnwindSafe(delivery).catch_unwind().await {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(e)) => e,
                Err(panic) => {
                    anyhow::anyhow!("the consumer panicked: {}", panic_message(panic.as_ref()))
                }
            };
            if let Err(error) = self.wait_to_retry(&failed, attempts, error).await {
                break error;
            }
        };
        let (keyspace, table) = (&self.settings.keyspace, &self.settings.table);
        self.give_up(&failed, error, attempts, window, |error| {
            DeadLetter::of_change(keyspace, table, &change, error, attempts)
        })
        .await
    }

    /// After the consumer's `attempts`-th failure on `failed`: `Ok` once the pause before
    /// the next attempt is over (the retry counted and logged), or the error when no
    /// attempt is left.
    async fn wait_to_retry(
        &self,
        failed: &Failed,
        attempts: u32,
        error: anyhow::Error,
    ) -> Result<(), anyhow::Error> {
        let retry = self.settings.on_error.retry();
        if attempts > retry.attempts {
            return Err(error);
        }
        let pause = retry.pause(attempts);
        self.settings.stats.consumer_error(ErrorOutcome::Retry);
        self.warn_failed(
            failed,
            attempts,
            &format!("{error:#}; handing it over again in {pause:?}"),
            failed.what(
                "the consumer failed on a CDC log row",
                "the consumer failed on a change",
            ),
        );
        tokio::time::sleep(pause).await;
        Ok(())
    }

    /// Applies the policy's outcome to `failed`, given up after `attempts` attempts that
    /// ended with `error`: stop, skip, or write the dead letters `letters` makes.
    async fn give_up(
        &self,
        failed: &Failed,
        error: anyhow::Error,
        attempts: u32,
        (window_start, window_end): (DateTime<Utc>, DateTime<Utc>),
        letters: impl FnOnce(&anyhow::Error) -> Vec<DeadLetter>,
    ) -> Result<(), CDCError> {
        match self.settings.on_error.after_retries() {
            AfterRetries::Stop => {
                self.settings.stats.consumer_error(ErrorOutcome::Stop);
                Err(CDCError::Consumer {
                    keyspace: self.settings.keyspace.to_string(),
                    table: self.settings.table.to_string(),
                    stream: failed.stream_id,
                    time: failed.time,
                    batch_seq_no: failed.batch_seq_no,
                    attempts,
                    window_start,
                    window_end,
                    source: error,
                })
            }
            AfterRetries::Skip => {
                self.settings.stats.consumer_error(ErrorOutcome::Skip);
                self.warn_failed(
                    failed,
                    attempts,
                    &format!("{error:#}"),
                    failed.what(
                        "skipping a CDC log row the consumer could not take",
                        "skipping a change the consumer could not take",
                    ),
                );
                Ok(())
            }
            AfterRetries::DeadLetter(sink) => {
                let letters = letters(&error);
                for letter in &letters {
                    let mut backoff = Backoff::new(self.settings.give_up_after);
                    loop {
                        match sink.write(letter).await {
                            Ok(()) => break,
                            Err(e) if sink.is_transient(&e) => {
                                if !backoff
                                    .wait("writing a dead letter", &format!("{e:#}"))
                                    .await
                                {
                                    return Err(self.dead_letter_failed(letter, e));
                                }
                            }
                            Err(e) => return Err(self.dead_letter_failed(letter, e)),
                        }
                    }
                }
                self.settings.stats.consumer_error(ErrorOutcome::DeadLetter);
                self.warn_failed(
                    failed,
                    attempts,
                    &format!("{error:#}"),
                    failed.what(
                        "wrote a CDC log row the consumer could not take to the dead letters",
                        "wrote the rows of a change the consumer could not take to the dead \
                         letters",
                    ),
                );
                Ok(())
            }
        }
    }

    /// A WARN line about what the consumer failed on: the row (or change), the attempts and
    /// the error.
    fn warn_failed(&self, failed: &Failed, attempts: u32, error: &str, what: &str) {
        warn!(
            keyspace = %self.settings.keyspace,
            table = %self.settings.table,
            stream = %failed.stream_id,
            time = %failed.time,
            batch_seq_no = failed.batch_seq_no,
            change_rows = failed.change_rows,
            attempts,
            error,
            "{what}"
        );
    }

    /// The error of a dead letter that could not be written (the reader stops).
    fn dead_letter_failed(&self, letter: &DeadLetter, source: anyhow::Error) -> CDCError {
        self.settings.stats.consumer_error(ErrorOutcome::Stop);
        CDCError::DeadLetter {
            keyspace: letter.keyspace.clone(),
            table: letter.table.clone(),
            stream: letter.stream_id,
            time: letter.time,
            batch_seq_no: letter.batch_seq_no,
            consumer_error: letter.error.clone(),
            source,
        }
    }

    /// The body of [`Self::consume_page`], counting rows and changes into `counts`.
    async fn deliver_page(
        &self,
        progress: &mut Progress,
        page: &LogPage,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        mut paid: Option<tokio::sync::oneshot::Sender<()>>,
        counts: &mut PageCounts,
    ) -> Result<(), CDCError> {
        let limiter = self.settings.limiter.as_deref();
        let total = page.len() as u64;
        // Rows of the page paid for so far (all of them without a limit).
        let mut paid_upto = if limiter.is_some() { 0 } else { total };
        if paid_upto == total
            && let Some(tx) = paid.take()
        {
            let _ = tx.send(());
        }
        let bad = |detail: String| CDCError::BadLogData {
            streams: StreamList(self.streams.clone()),
            window_start: start,
            window_end: end,
            detail,
        };
        let raw = page.raw_rows().map_err(bad)?;
        let specs = raw.specs;
        let index = match &progress.index {
            Some(index) if index.matches(specs) => index.clone(),
            _ => {
                let index = Arc::new(ColumnIndex::new(specs).map_err(bad)?);
                progress.index = Some(index.clone());
                index
            }
        };
        let mut cells: Vec<Option<&[u8]>> = Vec::with_capacity(index.len());
        let mut rest: &[u8] = &raw.bytes;
        // The slot of the last row's stream: a page holds its streams' rows one stream after
        // the other, so the search over the group's streams is rarely needed.
        let mut slot_hint = 0usize;
        for position in 0..raw.count as u64 {
            if position == paid_upto
                && let Some(limiter) = limiter
            {
                let chunk = limiter.chunk().min(total.saturating_sub(position)).max(1);
                limiter.acquire(chunk).await;
                paid_upto += chunk;
                if paid_upto >= total
                    && let Some(tx) = paid.take()
                {
                    let _ = tx.send(());
                }
            }
            cells.clear();
            // The row's bytes, found as its cells are split off: the change assembler copies
            // a row in one piece.
            let row_start = rest;
            for spec in specs {
                let (cell, after) = next_cell(rest).ok_or_else(|| {
                    bad(format!(
                        "row {position} of the page ends before its column {}",
                        spec.name()
                    ))
                })?;
                cells.push(cell);
                rest = after;
            }
            let header = match index.header(&cells) {
                Ok(h) => h,
                Err(why) => {
                    warn!(reason = %why, "skipping an unusable CDC log row");
                    continue;
                }
            };
            let same = |s: &StreamID| {
                // Compared as integers: a call to `memcmp` per stream otherwise.
                u128::from_ne_bytes(*s.as_bytes())
                    == u128::from_ne_bytes(*header.stream_id.as_bytes())
            };
            let slot = if self.streams.get(slot_hint).is_some_and(same) {
                slot_hint
            } else if let Some(slot) = self.streams.iter().position(same) {
                slot_hint = slot;
                slot
            } else {
                warn!(stream = %header.stream_id, "skipping a CDC log row of a stream that was not asked for");
                continue;
            };
            if let Some(starts) = &self.stream_starts
                && starts
                    .get(slot)
                    .is_some_and(|from| timeuuid_to_datetime(&header.time) < *from)
            {
                // Delivered before the resume (its stream's checkpoint is later).
                continue;
            }
            let key = ChangeKey::new(&header.time, header.batch_seq_no);
            let last = progress.last.get(slot).copied().flatten();
            if last.is_some_and(|l| key <= l) {
                continue;
            }
            let span = &row_start[..row_start.len() - rest.len()];
            let row = (header, &index, specs, &cells[..], span);
            self.check_deadline()?;
            self.hand_over(progress, row, (start, end)).await?;
            counts.rows += 1;
            progress.last_stream = Some(header.stream_id);
            if last.is_none_or(|l| !l.same_time(&key)) {
                counts.changes += 1;
            }
            if let Some(last) = progress.last.get_mut(slot) {
                *last = Some(key);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::base::time::TokioClock;
    use crate::base::time::tests::timeuuid;
    use crate::checkpoints::tests::MemorySaver;
    use crate::consumer::Consumer;
    use crate::consumer::tests::{TestRow, log_specs};
    use std::collections::VecDeque;
    use std::sync::Mutex;

    /// What a fake source does for one request.
    pub(crate) enum Scripted {
        /// Fail with this error.
        Fail(ExecutionError),
    }

    /// A request the fake log got: streams, window, and whether it continued a paging state.
    pub(crate) type Request = (Vec<StreamID>, DateTime<Utc>, DateTime<Utc>, bool);

    /// An in-memory log: rows by stream, split in pages of `page_size`; errors can be
    /// scripted for the next requests. `std` mutexes, never held across `.await`.
    pub(crate) struct FakeLog {
        pub(crate) rows: Mutex<Vec<TestRow>>,
        pub(crate) page_size: usize,
        pub(crate) script: Mutex<VecDeque<Scripted>>,
        pub(crate) requests: Mutex<Vec<Request>>,
        specs: Arc<Vec<ColumnSpec<'static>>>,
    }

    impl FakeLog {
        pub(crate) fn new(page_size: usize) -> Self {
            Self {
                rows: Mutex::new(Vec::new()),
                page_size,
                script: Mutex::new(VecDeque::new()),
                requests: Mutex::new(Vec::new()),
                specs: Arc::new(log_specs()),
            }
        }

        pub(crate) fn push(&self, row: TestRow) {
            self.rows.lock().unwrap().push(row);
        }
    }

    #[async_trait]
    impl LogSource for FakeLog {
        async fn fetch_page(
            &self,
            streams: &[StreamID],
            start: DateTime<Utc>,
            end: DateTime<Utc>,
            paging: PagingState,
        ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
            let offset = paging
                .as_bytes_slice()
                .map(|b| u32::from_be_bytes(b[..4].try_into().unwrap()) as usize)
                .unwrap_or(0);
            self.requests
                .lock()
                .unwrap()
                .push((streams.to_vec(), start, end, offset > 0));
            if let Some(Scripted::Fail(e)) = self.script.lock().unwrap().pop_front() {
                return Err(e);
            }
            let smin = start.timestamp_millis() * 1000;
            let emin = end.timestamp_millis() * 1000;
            let mut matching: Vec<TestRow> = self
                .rows
                .lock()
                .unwrap()
                .iter()
                .filter(|r| streams.contains(&StreamID::new(r.stream)))
                .filter(|r| {
                    let m = crate::base::time::timeuuid_micros(&r.time);
                    m >= smin && m < emin
                })
                .cloned()
                .collect();
            matching.sort_by_key(|r| (r.stream, ChangeKey::new(&r.time, r.seq)));
            let page: Vec<Vec<u8>> = matching
                .iter()
                .skip(offset)
                .take(self.page_size)
                .map(|r| r.serialize())
                .collect();
            let next_offset = offset + page.len();
            let next = if next_offset < matching.len() {
                PagingStateResponse::HasMorePages {
                    state: PagingState::new_from_raw_bytes(
                        (next_offset as u32).to_be_bytes().to_vec(),
                    ),
                }
            } else {
                PagingStateResponse::NoMorePages
            };
            Ok((
                LogPage::Raw {
                    specs: self.specs.clone(),
                    rows: page,
                },
                next,
            ))
        }
    }

    /// A delivered row: stream byte, time micros, seq, value of `v`.
    pub(crate) type Seen = (u8, i64, i32, Option<i32>);

    /// Records rows; fails on the row whose `v` equals `fail_on`.
    pub(crate) struct Recorder {
        pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
        pub(crate) fail_on: Option<i32>,
    }

    #[async_trait]
    impl Consumer for Recorder {
        async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
            let v = row.get_value_as::<i32>("v")?;
            if v.is_some() && v == self.fail_on {
                anyhow::bail!("consumer refused v={v:?}");
            }
            self.seen.lock().unwrap().push((
                row.stream_id.as_bytes()[0],
                crate::base::time::timeuuid_micros(&row.time),
                row.batch_seq_no,
                v,
            ));
            Ok(())
        }
    }

    pub(crate) fn ms(v: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(v).unwrap()
    }

    pub(crate) fn stream(b: u8) -> StreamID {
        StreamID::new([b; 16])
    }

    /// A row of stream `[s; 16]` at `micros`, seq `seq`, with `v`.
    pub(crate) fn row(s: u8, micros: i64, seq: i32, v: i32) -> TestRow {
        let mut r = TestRow::new([s; 16], timeuuid(micros, 0x1111 * s as u64), seq);
        r.v = Some(v);
        r
    }

    pub(crate) const BASE: i64 = 1_700_000_000_000;

    struct Setup {
        log: Arc<FakeLog>,
        saver: Arc<MemorySaver>,
        end_tx: watch::Sender<Option<DateTime<Utc>>>,
        gen_end_tx: watch::Sender<Option<DateTime<Utc>>>,
        seen: Arc<Mutex<Vec<Seen>>>,
        stats: Arc<Stats>,
    }

    pub(crate) fn settings(
        log: Arc<FakeLog>,
        saver: Arc<MemorySaver>,
        end: watch::Receiver<Option<DateTime<Utc>>>,
    ) -> ReaderSettings {
        let clock: Arc<TokioClock> = Arc::new(TokioClock::starting_at(ms(BASE)));
        ReaderSettings {
            table: Arc::from("t"),
            window_size: Duration::from_secs(60),
            safety_interval: Duration::from_secs(30),
            sleep_interval: Duration::from_secs(10),
            max_idle_pause: Duration::from_secs(10),
            pause_between_saves: Duration::from_secs(10),
            saver: Some(saver),
            clock: clock.clone(),
            source: log,
            end,
            give_up_after: None,
            stats: Arc::new(Stats::new("ks", "t", clock, Duration::from_secs(30))),
            limiter: None,
            on_error: ConsumerErrorPolicy::default(),
            keyspace: Arc::from("ks"),
            prefetch: Arc::new(tokio::sync::Semaphore::new(PREFETCH_PAGES)),
        }
    }

    /// The slot of the only stream group of a test reader.
    pub(crate) fn slot(settings: &ReaderSettings, start: DateTime<Utc>) -> Slot {
        settings
            .stats
            .begin_generation(1, &[start], false)
            .remove(0)
    }

    fn reader(
        page_size: usize,
        streams: Vec<StreamID>,
        start: DateTime<Utc>,
        fail_on: Option<i32>,
    ) -> (Setup, StreamReader) {
        let log = Arc::new(FakeLog::new(page_size));
        let saver = Arc::new(MemorySaver::default());
        let (end_tx, end_rx) = watch::channel(None);
        let (gen_end_tx, gen_end_rx) = watch::channel(None);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let settings = settings(log.clone(), saver.clone(), end_rx);
        let slot = slot(&settings, start);
        let stats = settings.stats.clone();
        let r = StreamReader::new(
            settings,
            streams,
            GenerationTimestamp::new(ms(0)),
            gen_end_rx,
            start,
            Sink::Rows(Box::new(Recorder {
                seen: seen.clone(),
                fail_on,
            })),
            slot,
        );
        (
            Setup {
                log,
                saver,
                end_tx,
                gen_end_tx,
                seen,
                stats,
            },
            r,
        )
    }

    /// A consumer that only "applies" rows when flushed, like a pipelining writer.
    struct Buffering {
        pending: Vec<i64>,
        applied: Arc<Mutex<Vec<i64>>>,
        fail_flush: bool,
    }

    #[async_trait]
    impl Consumer for Buffering {
        async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
            self.pending
                .push(crate::base::time::timeuuid_micros(&row.time));
            Ok(())
        }

        async fn flush(&mut self) -> anyhow::Result<()> {
            if self.fail_flush {
                anyhow::bail!("destination unreachable");
            }
            self.applied.lock().unwrap().append(&mut self.pending);
            Ok(())
        }
    }

    /// Checks, at every save, that the consumer applied every row before the checkpoint.
    struct CheckingSaver {
        applied: Arc<Mutex<Vec<i64>>>,
        rows: Vec<i64>,
        saves: Mutex<Vec<DateTime<Utc>>>,
    }

    #[async_trait]
    impl CDCCheckpointSaver for CheckingSaver {
        async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
            let applied = self.applied.lock().unwrap();
            let until = checkpoint.timestamp.timestamp_millis() * 1000;
            for r in self.rows.iter().filter(|r| **r < until) {
                assert!(
                    applied.contains(r),
                    "checkpoint {until} saved before row {r} was applied"
                );
            }
            self.saves.lock().unwrap().push(checkpoint.timestamp);
            Ok(())
        }
        async fn save_new_generation(&self, _: &GenerationTimestamp) -> anyhow::Result<()> {
            Ok(())
        }
        async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
            Ok(None)
        }
        async fn load_last_checkpoint(
            &self,
            _: &[StreamID],
        ) -> anyhow::Result<Option<DateTime<Utc>>> {
            Ok(None)
        }
    }

    /// What `flushing_reader` returns: applied rows, the saver, all row times, the reader
    /// and the sender of its end.
    type FlushingSetup = (
        Arc<Mutex<Vec<i64>>>,
        Arc<CheckingSaver>,
        Vec<i64>,
        StreamReader,
        watch::Sender<Option<DateTime<Utc>>>,
    );

    fn flushing_reader(fail_flush: bool) -> FlushingSetup {
        let log = Arc::new(FakeLog::new(3));
        let start_us = (BASE - 600_000) * 1000;
        let rows: Vec<i64> = (0..20).map(|i| start_us + i * 25_000_000).collect();
        for (i, t) in rows.iter().enumerate() {
            log.push(row(1, *t, 0, i as i32));
        }
        let applied = Arc::new(Mutex::new(Vec::new()));
        let saver = Arc::new(CheckingSaver {
            applied: applied.clone(),
            rows: rows.clone(),
            saves: Mutex::new(Vec::new()),
        });
        let (end_tx, end_rx) = watch::channel(None);
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
        settings.saver = Some(saver.clone());
        settings.pause_between_saves = Duration::ZERO;
        let slot = slot(&settings, ms(BASE - 600_000));
        let r = StreamReader::new(
            settings,
            vec![stream(1)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            ms(BASE - 600_000),
            Sink::Rows(Box::new(Buffering {
                pending: Vec::new(),
                applied: applied.clone(),
                fail_flush,
            })),
            slot,
        );
        (applied, saver, rows, r, end_tx)
    }

    #[tokio::test(start_paused = true)]
    async fn consumer_is_flushed_before_every_checkpoint_and_at_the_end() {
        let (applied, saver, rows, r, end_tx) = flushing_reader(false);
        end_tx.send(Some(ms(BASE - 60_000))).unwrap();
        r.run().await.unwrap();
        assert!(saver.saves.lock().unwrap().len() >= 5);
        assert_eq!(*applied.lock().unwrap(), rows);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_flush_stops_the_reader_without_a_checkpoint() {
        let (_applied, saver, _rows, r, end_tx) = flushing_reader(true);
        end_tx.send(Some(ms(BASE - 60_000))).unwrap();
        let err = r.run().await.unwrap_err();
        assert!(matches!(err, CDCError::ConsumerFlush { .. }), "{err}");
        assert!(err.to_string().contains("destination unreachable"));
        assert!(saver.saves.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn delivers_every_row_in_order_across_pages() {
        let (s, r) = reader(2, vec![stream(1), stream(2)], ms(BASE - 3_600_000), None);
        let start_us = (BASE - 3_600_000) * 1000;
        for i in 0..7 {
            s.log.push(row(2, start_us + i * 1_000_000, 0, i as i32));
            s.log
                .push(row(1, start_us + i * 1_000_000, 1, 100 + i as i32));
            s.log
                .push(row(1, start_us + i * 1_000_000, 0, 200 + i as i32));
        }
        s.end_tx.send(Some(ms(BASE - 3_000_000))).unwrap();
        r.run().await.unwrap();
        let seen = s.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 21);
        for st in [1u8, 2] {
            let keys: Vec<(i64, i32)> = seen
                .iter()
                .filter(|x| x.0 == st)
                .map(|x| (x.1, x.2))
                .collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "stream {st} out of order");
        }
        // Prefetching asked for later pages.
        assert!(s.log.requests.lock().unwrap().iter().any(|r| r.3));
        // Stream 1 has two rows per `cdc$time`: 14 changes in 21 rows.
        let p = s.stats.snapshot();
        assert_eq!((p.rows, p.changes), (21, 14));
        assert_eq!(p.windows, 10);
        assert_eq!(
            p.low_watermark,
            Some(ms(BASE - 3_000_000) - chrono::TimeDelta::microseconds(1))
        );
    }

    /// Records, at each row, how many page requests the log has had; yields first, so that
    /// a prefetch started beside the consumer gets to send its request.
    struct Watching {
        log: Arc<FakeLog>,
        requests_at_row: Arc<Mutex<Vec<usize>>>,
    }

    #[async_trait]
    impl Consumer for Watching {
        async fn consume_cdc(&mut self, _row: CDCRow<'_>) -> anyhow::Result<()> {
            tokio::task::yield_now().await;
            let n = self.log.requests.lock().unwrap().len();
            self.requests_at_row.lock().unwrap().push(n);
            Ok(())
        }
    }

    /// Reads 4 rows in pages of 2 with `permits` prefetch permits; the requests at each row.
    async fn requests_at_each_row(permits: usize) -> Vec<usize> {
        let log = Arc::new(FakeLog::new(2));
        let start = ms(BASE - 600_000);
        let start_us = (BASE - 600_000) * 1000;
        for i in 0..4 {
            log.push(row(1, start_us + i * 1_000_000, 0, i as i32));
        }
        let (end_tx, end_rx) = watch::channel(None);
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log.clone(), Arc::new(MemorySaver::default()), end_rx);
        settings.prefetch = Arc::new(tokio::sync::Semaphore::new(permits));
        let slot = slot(&settings, start);
        let requests_at_row = Arc::new(Mutex::new(Vec::new()));
        let r = StreamReader::new(
            settings,
            vec![stream(1)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Sink::Rows(Box::new(Watching {
                log,
                requests_at_row: requests_at_row.clone(),
            })),
            slot,
        );
        end_tx.send(Some(ms(BASE - 60_000))).unwrap();
        r.run().await.unwrap();
        requests_at_row.lock().unwrap().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_prefetches_its_next_page_only_with_a_permit() {
        // With a permit, the second page is asked for while the first page is handled.
        assert_eq!(requests_at_each_row(1).await, [2, 2, 2, 2]);
        // Without one (every permit taken by other groups), only once it is handled.
        assert_eq!(requests_at_each_row(0).await, [1, 1, 2, 2]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_limit_caps_delivery_and_page_requests() {
        let log = Arc::new(FakeLog::new(50));
        let start_us = (BASE - 3_600_000) * 1000;
        for i in 0..2000 {
            log.push(row(1, start_us + i * 1000, 0, i as i32));
        }
        let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log.clone(), Arc::new(MemorySaver::default()), end_rx);
        settings.limiter = Some(Arc::new(RateLimiter::new(100)));
        let start = ms(BASE - 3_600_000);
        let slot = slot(&settings, start);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let r = StreamReader::new(
            settings,
            vec![stream(1)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Sink::Rows(Box::new(Recorder {
                seen: seen.clone(),
                fail_on: None,
            })),
            slot,
        );
        let task = tokio::spawn(r.run());
        let t0 = Instant::now();
        for second in 1..=10u64 {
            tokio::time::sleep_until(t0 + Duration::from_secs(second)).await;
            let delivered = seen.lock().unwrap().len() as u64;
            // 100 rows per second after a burst of 10.
            assert!(
                (100 * second - 2..=100 * second + 10).contains(&delivered),
                "{delivered} rows after {second} s"
            );
            // A page is requested only once the previous one is paid for.
            let requested = log.requests.lock().unwrap().len() as u64 * 50;
            assert!(
                requested <= delivered + 10 + 50,
                "{requested} rows requested"
            );
        }
        task.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn catches_up_without_sleeping_between_windows() {
        // 2 hours of backlog, 60 s windows: 120 windows, none of them followed by a sleep.
        let start = ms(BASE - 7_200_000);
        let (s, r) = reader(100, vec![stream(1)], start, None);
        s.log.push(row(1, (BASE - 7_200_000) * 1000, 0, 1));
        s.log.push(row(1, (BASE - 40_000) * 1000, 0, 2));
        s.end_tx.send(Some(ms(BASE - 30_000))).unwrap();
        let before = Instant::now();
        r.run().await.unwrap();
        assert_eq!(s.seen.lock().unwrap().len(), 2);
        // Paused clock: time only advances when the reader sleeps.
        assert!(
            before.elapsed() < Duration::from_secs(1),
            "{:?}",
            before.elapsed()
        );
        let windows = s.log.requests.lock().unwrap().len();
        assert_eq!(windows, 120);
    }

    #[test]
    fn the_idle_pause_doubles_up_to_its_bound() {
        let s = Duration::from_secs;
        let pauses: Vec<_> = (0..6)
            .map(|empty| backoff_pause(s(10), s(60), empty))
            .collect();
        assert_eq!(pauses, [s(10), s(20), s(40), s(60), s(60), s(60)]);
        // A bound below the sleep interval: no back-off.
        assert_eq!(backoff_pause(s(10), s(5), 3), s(10));
        assert_eq!(backoff_pause(Duration::ZERO, s(60), 3), Duration::ZERO);
        assert_eq!(
            backoff_pause(s(10), Duration::MAX, u32::MAX),
            s(10) * (1 << 31)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_group_backs_off_and_is_eager_again_at_its_first_row() {
        let log = Arc::new(FakeLog::new(100));
        let saver = Arc::new(MemorySaver::default());
        let (end_tx, end_rx) = watch::channel(None);
        let (_gen_end_tx, gen_end_rx) = watch::channel(None);
        let mut settings = settings(log.clone(), saver, end_rx);
        settings.max_idle_pause = Duration::from_secs(80);
        let start = ms(BASE - 30_000);
        let slot = slot(&settings, start);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let reader = StreamReader::new(
            settings,
            vec![stream(1)],
            GenerationTimestamp::new(ms(0)),
            gen_end_rx,
            start,
            Sink::Rows(Box::new(Recorder {
                seen: seen.clone(),
                fail_on: None,
            })),
            slot,
        );
        // Idle for 10 minutes, then one row, then idle again.
        let row_at = BASE + 600_000;
        log.push(row(1, row_at * 1000, 0, 1));
        end_tx.send(Some(ms(BASE + 900_000))).unwrap();
        reader.run().await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
        let ends: Vec<i64> = log
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, end, _)| end.timestamp_millis())
            .collect();
        // Without back-off a request every 10 s: about 90. With it: 10, 20, 40, 80, 80, ...
        assert!(ends.len() < 40, "{} requests: {ends:?}", ends.len());
        // The row was read at most the longest pause after it became readable.
        let read = ends.iter().position(|e| *e > row_at).expect("read");
        assert!(
            ends[read] - row_at <= 80_000,
            "read {} ms after readable",
            ends[read] - row_at
        );
        // Eager again right after it: once caught up (the read of the row may be a whole
        // window, then the rest up to now), the next read one sleep interval later.
        let next = (ends[read + 1] - ends[read]).min(ends[read + 2] - ends[read + 1]);
        assert!(next <= 10_000 + 100, "{ends:?}");
        // Windows never passed 80 s apart (an 80 s pause is read as a 60 s window and the
        // rest).
        assert!(
            ends.windows(2).all(|w| w[1] - w[0] <= 80_000 + 100),
            "{ends:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_safety_interval_then_reads() {
        let (s, r) = reader(100, vec![stream(1)], ms(BASE - 1_000), None);
        // A row written 5 s in the future is only read once now - 30 s passes it.
        s.log.push(row(1, (BASE + 5_000) * 1000, 0, 7));
        s.end_tx.send(Some(ms(BASE + 6_000))).unwrap();
        let before = Instant::now();
        r.run().await.unwrap();
        assert_eq!(s.seen.lock().unwrap().len(), 1);
        let waited = before.elapsed();
        assert!(
            waited >= Duration::from_secs(36) && waited <= Duration::from_secs(50),
            "{waited:?}"
        );
        // Every window respected the safety interval.
        for (_, _, end, _) in s.log.requests.lock().unwrap().iter() {
            assert!(*end <= ms(BASE + 6_000));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn stops_at_generation_end_and_saves_final_checkpoint() {
        let (s, r) = reader(100, vec![stream(1)], ms(BASE - 600_000), None);
        s.log.push(row(1, (BASE - 500_000) * 1000, 0, 1));
        s.log.push(row(1, (BASE - 100_000) * 1000, 0, 2)); // next generation's time: not read
        s.gen_end_tx.send(Some(ms(BASE - 200_000))).unwrap();
        r.run().await.unwrap();
        assert_eq!(s.seen.lock().unwrap().len(), 1);
        let saves = s.saver.saves.lock().unwrap().clone();
        assert_eq!(saves.last().unwrap().timestamp, ms(BASE - 200_000));
        // Throttled: 400 s of windows with no sleep saves far fewer than one per window.
        assert!(saves.len() <= 2, "{}", saves.len());
    }

    #[tokio::test(start_paused = true)]
    async fn transient_errors_are_retried_without_loss_or_duplicates() {
        let (s, r) = reader(2, vec![stream(1)], ms(BASE - 100_000), None);
        for i in 0..6 {
            s.log.push(row(1, (BASE - 90_000 + i) * 1000, 0, i as i32));
        }
        {
            let mut script = s.log.script.lock().unwrap();
            script.push_back(Scripted::Fail(ExecutionError::RequestTimeout(
                Duration::from_secs(1),
            )));
            script.push_back(Scripted::Fail(ExecutionError::LastAttemptError(
                scylla::errors::RequestAttemptError::DbError(
                    scylla::errors::DbError::Overloaded,
                    "busy".into(),
                ),
            )));
        }
        s.end_tx.send(Some(ms(BASE - 40_000))).unwrap();
        r.run().await.unwrap();
        let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
        assert_eq!(vs, (0..6).map(Some).collect::<Vec<_>>());
        let p = s.stats.snapshot();
        assert_eq!((p.retries, p.rows, p.changes), (2, 6, 6));
    }

    #[tokio::test(start_paused = true)]
    async fn permanent_error_names_streams_and_window() {
        let (s, r) = reader(2, vec![stream(1)], ms(BASE - 100_000), None);
        s.log
            .script
            .lock()
            .unwrap()
            .push_back(Scripted::Fail(ExecutionError::LastAttemptError(
                scylla::errors::RequestAttemptError::DbError(
                    scylla::errors::DbError::Invalid,
                    "bad".into(),
                ),
            )));
        let err = r.run().await.unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, CDCError::LogRead { .. }), "{msg}");
        assert!(msg.contains("0x0101"), "{msg}");
        let _keep = s;
    }

    #[tokio::test(start_paused = true)]
    async fn consumer_error_stops_the_reader() {
        let (s, r) = reader(10, vec![stream(3)], ms(BASE - 100_000), Some(2));
        for i in 0..5 {
            s.log.push(row(3, (BASE - 90_000 + i) * 1000, 0, i as i32));
        }
        let err = r.run().await.unwrap_err();
        assert!(
            matches!(err, CDCError::Consumer { stream, .. } if stream == super::tests::stream(3))
        );
        assert!(err.to_string().contains("consumer refused"));
        assert_eq!(s.seen.lock().unwrap().len(), 2);
        let p = s.stats.snapshot();
        assert_eq!((p.consumer_errors, p.rows), (1, 2));
    }

    /// A consumer that fails on some values: `failures[v]` times (u32::MAX: always), or
    /// panics on `panic_on`.
    struct Flaky {
        failures: std::collections::HashMap<i32, u32>,
        panic_on: Option<i32>,
        attempts: Arc<Mutex<Vec<i32>>>,
        seen: Arc<Mutex<Vec<i32>>>,
    }

    #[async_trait]
    impl Consumer for Flaky {
        async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
            let v = row.get_value_as::<i32>("v")?.unwrap_or_default();
            self.attempts.lock().unwrap().push(v);
            if self.panic_on == Some(v) {
                panic!("consumer bug on v={v}");
            }
            if let Some(left) = self.failures.get_mut(&v)
                && *left > 0
            {
                *left = left.saturating_sub(1);
                anyhow::bail!("cannot take v={v}");
            }
            self.seen.lock().unwrap().push(v);
            Ok(())
        }
    }

    /// Dead letters kept in memory; fails `fail_first` writes (transiently or not).
    #[derive(Default)]
    pub(crate) struct MemorySink {
        pub(crate) letters: Mutex<Vec<DeadLetter>>,
        pub(crate) fail_first: Mutex<u32>,
        pub(crate) permanent: bool,
    }

    #[async_trait]
    impl crate::DeadLetterSink for MemorySink {
        async fn write(&self, letter: &DeadLetter) -> anyhow::Result<()> {
            {
                let mut left = self.fail_first.lock().unwrap();
                if *left > 0 {
                    *left -= 1;
                    anyhow::bail!("sink down");
                }
            }
            self.letters.lock().unwrap().push(letter.clone());
            Ok(())
        }

        fn is_transient(&self, _: &anyhow::Error) -> bool {
            !self.permanent
        }
    }

    struct PolicyRun {
        result: Result<(), CDCError>,
        attempts: Vec<i32>,
        seen: Vec<i32>,
        stats: Progress2,
        saves: Vec<DateTime<Utc>>,
    }

    type Progress2 = crate::report::progress::Progress;

    /// Runs a reader over rows v = 0..5 (one per second from BASE - 90 s) of one stream with
    /// `consumer` settings and `policy`, until BASE - 60 s.
    async fn run_policy(
        failures: &[(i32, u32)],
        panic_on: Option<i32>,
        policy: ConsumerErrorPolicy,
    ) -> PolicyRun {
        let log = Arc::new(FakeLog::new(2));
        for i in 0..5 {
            log.push(row(4, (BASE - 90_000 + i * 1000) * 1000, 0, i as i32));
        }
        let saver = Arc::new(MemorySaver::default());
        let (end_tx, end_rx) = watch::channel(Some(ms(BASE - 60_000)));
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log, saver.clone(), end_rx);
        settings.on_error = policy;
        settings.pause_between_saves = Duration::ZERO;
        settings.window_size = Duration::from_secs(2);
        let start = ms(BASE - 100_000);
        let slot = slot(&settings, start);
        let stats = settings.stats.clone();
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let r = StreamReader::new(
            settings,
            vec![stream(4)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Sink::Rows(Box::new(Flaky {
                failures: failures.iter().copied().collect(),
                panic_on,
                attempts: attempts.clone(),
                seen: seen.clone(),
            })),
            slot,
        );
        let result = r.run().await;
        drop(end_tx);
        let saves = saver
            .saves
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.timestamp)
            .collect();
        let attempts = attempts.lock().unwrap().clone();
        let seen = seen.lock().unwrap().clone();
        PolicyRun {
            result,
            attempts,
            seen,
            stats: stats.snapshot(),
            saves,
        }
    }

    /// The micros of row v of [`run_policy`].
    fn policy_row_time(v: i64) -> DateTime<Utc> {
        ms(BASE - 90_000 + v * 1000)
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_that_fails_twice_is_retried_and_delivered_once() {
        let run = run_policy(&[(2, 2)], None, ConsumerErrorPolicy::default()).await;
        run.result.unwrap();
        assert_eq!(run.seen, vec![0, 1, 2, 3, 4]);
        assert_eq!(run.attempts, vec![0, 1, 2, 2, 2, 3, 4]);
        assert_eq!(
            (run.stats.consumer_retries, run.stats.consumer_errors),
            (2, 0)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn stop_names_the_row_and_never_checkpoints_past_it() {
        let policy = ConsumerErrorPolicy::stop().with_retry(2, Duration::from_secs(1));
        let started = Instant::now();
        let run = run_policy(&[(3, u32::MAX)], None, policy).await;
        let err = run.result.unwrap_err();
        // Retried after 1 s, then 2 s.
        assert!(started.elapsed() >= Duration::from_secs(3));
        match &err {
            CDCError::Consumer {
                table,
                stream: s,
                time,
                batch_seq_no,
                attempts,
                ..
            } => {
                assert_eq!(table, "t");
                assert_eq!(*s, stream(4));
                assert_eq!(
                    crate::base::time::timeuuid_micros(time),
                    policy_row_time(3).timestamp_micros()
                );
                assert_eq!((*batch_seq_no, *attempts), (0, 3));
            }
            other => panic!("unexpected error {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.contains("ks.t") && text.contains("cannot take v=3"),
            "{text}"
        );
        assert_eq!(run.seen, vec![0, 1, 2]);
        assert_eq!(run.attempts.iter().filter(|v| **v == 3).count(), 3);
        assert!(
            !run.saves.is_empty(),
            "checkpoints before the row are saved"
        );
        assert!(
            run.saves.iter().all(|t| *t <= policy_row_time(3)),
            "a checkpoint passed the failed row: {:?}",
            run.saves
        );
        assert_eq!(
            (run.stats.consumer_errors, run.stats.consumer_retries),
            (1, 2)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn skip_goes_on_and_counts() {
        let run = run_policy(&[(1, u32::MAX)], None, ConsumerErrorPolicy::skip()).await;
        run.result.unwrap();
        assert_eq!(run.seen, vec![0, 2, 3, 4]);
        assert_eq!(run.stats.rows_skipped, 1);
        assert_eq!(run.stats.consumer_errors, 0);
        assert_eq!(run.saves.last(), Some(&ms(BASE - 60_000)));
    }

    #[tokio::test(start_paused = true)]
    async fn dead_letters_hold_the_row_and_the_error() {
        let sink = Arc::new(MemorySink {
            fail_first: Mutex::new(2),
            ..MemorySink::default()
        });
        let policy =
            ConsumerErrorPolicy::dead_letter(sink.clone()).with_retry(1, Duration::from_millis(10));
        let run = run_policy(&[(2, u32::MAX), (4, u32::MAX)], None, policy).await;
        run.result.unwrap();
        assert_eq!(run.seen, vec![0, 1, 3]);
        let letters = sink.letters.lock().unwrap().clone();
        assert_eq!(letters.len(), 2);
        let l = &letters[0];
        assert_eq!((l.keyspace.as_str(), l.table.as_str()), ("ks", "t"));
        assert_eq!(l.stream_id, stream(4));
        assert_eq!(
            crate::base::time::timeuuid_micros(&l.time),
            policy_row_time(2).timestamp_micros()
        );
        assert_eq!((l.batch_seq_no, l.attempts), (0, 2));
        assert_eq!(l.operation, crate::OperationType::RowUpdate);
        assert!(l.error.contains("cannot take v=2"), "{}", l.error);
        assert!(l.columns.contains(&("v".to_owned(), "2".to_owned())));
        assert_eq!(run.stats.rows_dead_lettered, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dead_letter_that_cannot_be_written_stops_the_reader() {
        let sink = Arc::new(MemorySink {
            fail_first: Mutex::new(1),
            permanent: true,
            ..MemorySink::default()
        });
        let run = run_policy(
            &[(2, u32::MAX)],
            None,
            ConsumerErrorPolicy::dead_letter(sink),
        )
        .await;
        let err = run.result.unwrap_err();
        assert!(matches!(err, CDCError::DeadLetter { .. }), "{err}");
        assert!(err.to_string().contains("sink down"), "{err}");
        assert!(run.saves.iter().all(|t| *t <= policy_row_time(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_consumer_is_an_error_of_its_row() {
        let run = run_policy(&[], Some(1), ConsumerErrorPolicy::stop()).await;
        let err = run.result.unwrap_err();
        assert!(matches!(err, CDCError::Consumer { .. }), "{err}");
        assert!(
            err.to_string().contains("panicked: consumer bug on v=1"),
            "{err}"
        );
        let run = run_policy(&[], Some(1), ConsumerErrorPolicy::skip()).await;
        run.result.unwrap();
        assert_eq!(run.seen, vec![0, 2, 3, 4]);
        assert_eq!(run.stats.rows_skipped, 1);
    }

    #[test]
    fn a_zero_sleep_waits_until_the_next_window_is_readable() {
        let (t, safety) = (ms(BASE), Duration::from_secs(30));
        let ten = Duration::from_secs(10);
        assert_eq!(idle_pause(ten, t, ms(BASE), safety), ten);
        let zero = Duration::ZERO;
        assert_eq!(
            idle_pause(zero, t, ms(BASE + 29_700), safety),
            Duration::from_millis(300)
        );
        assert_eq!(
            idle_pause(zero, t, ms(BASE + 30_000), safety),
            Duration::from_millis(1)
        );
        assert_eq!(
            idle_pause(zero, t, ms(BASE), safety),
            Duration::from_secs(1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn unusable_rows_are_skipped_not_fatal() {
        let (s, r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
        s.log.push(row(1, (BASE - 90_000) * 1000, 0, 1));
        let mut unknown = row(1, (BASE - 89_000) * 1000, 0, 2);
        unknown.op = 77;
        s.log.push(unknown);
        // A row of a stream that was not asked for cannot come from a correct server, but if
        // it does it is skipped.
        s.log
            .rows
            .lock()
            .unwrap()
            .push(row(9, (BASE - 88_000) * 1000, 0, 3));
        s.end_tx.send(Some(ms(BASE - 40_000))).unwrap();
        r.run().await.unwrap();
        let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
        // The unknown operation is delivered (as OperationType::Unknown).
        assert_eq!(vs, vec![Some(1), Some(2)]);
    }

    #[test]
    fn cells_are_read_as_a_rows_message_holds_them() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&3i32.to_be_bytes());
        bytes.extend_from_slice(b"abc");
        bytes.extend_from_slice(&(-1i32).to_be_bytes());
        bytes.extend_from_slice(&0i32.to_be_bytes());
        bytes.extend_from_slice(&5i32.to_be_bytes());
        bytes.extend_from_slice(b"xy");
        let (a, rest) = next_cell(&bytes).unwrap();
        assert_eq!(a, Some(&b"abc"[..]));
        let (null, rest) = next_cell(rest).unwrap();
        assert_eq!(null, None);
        let (empty, rest) = next_cell(rest).unwrap();
        assert_eq!(empty, Some(&b""[..]));
        // A length past the end, or a length cut short, is no cell.
        assert!(next_cell(rest).is_none());
        assert!(next_cell(&[0, 0]).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_cut_short_stops_the_reader_after_the_rows_before_it() {
        struct CutShort;
        #[async_trait]
        impl LogSource for CutShort {
            async fn fetch_page(
                &self,
                _: &[StreamID],
                _: DateTime<Utc>,
                _: DateTime<Utc>,
                _: PagingState,
            ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
                let good = row(1, (BASE - 50_000) * 1000, 0, 1).serialize();
                let mut cut = row(1, (BASE - 40_000) * 1000, 0, 2).serialize();
                cut.truncate(cut.len() - 1);
                Ok((
                    LogPage::Raw {
                        specs: Arc::new(log_specs()),
                        rows: vec![good, cut],
                    },
                    PagingStateResponse::NoMorePages,
                ))
            }
        }
        let (s, mut r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
        r.plan.settings.source = Arc::new(CutShort);
        let err = r.run().await.unwrap_err();
        assert!(
            matches!(&err, CDCError::BadLogData { detail, .. } if detail.contains("row 1 ")),
            "{err}"
        );
        let vs: Vec<Option<i32>> = s.seen.lock().unwrap().iter().map(|x| x.3).collect();
        assert_eq!(vs, vec![Some(1)]);
    }

    #[tokio::test(start_paused = true)]
    async fn corrupt_page_is_a_typed_error() {
        struct Corrupt;
        #[async_trait]
        impl LogSource for Corrupt {
            async fn fetch_page(
                &self,
                _: &[StreamID],
                _: DateTime<Utc>,
                _: DateTime<Utc>,
                _: PagingState,
            ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
                Ok((
                    LogPage::Raw {
                        specs: Arc::new(log_specs()),
                        rows: vec![vec![0, 0, 0, 99, 1]],
                    },
                    PagingStateResponse::NoMorePages,
                ))
            }
        }
        let (s, mut r) = reader(10, vec![stream(1)], ms(BASE - 100_000), None);
        r.plan.settings.source = Arc::new(Corrupt);
        let err = r.run().await.unwrap_err();
        assert!(matches!(err, CDCError::BadLogData { .. }), "{err}");
        let _keep = s;
    }

    /// The log query asks for pages of `LOG_PAGE_ROWS` rows (a reader holds two pages per
    /// stream group: the driver's default of 5 000 rows doubled its memory).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn log_pages_are_of_log_page_rows() -> anyhow::Result<()> {
        let cluster = scylla_emulator::EmbeddedCluster::builder().start().await?;
        let session = cluster.session().await?;
        session
            .query_unpaged(
                "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1} AND tablets = {'enabled': false}",
                (),
            )
            .await?;
        session
            .query_unpaged(
                "CREATE TABLE ks.t (pk int, ck int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {'enabled': true}",
                (),
            )
            .await?;
        let insert = session
            .prepare("INSERT INTO ks.t (pk, ck) VALUES (0, ?)")
            .await?;
        let rows = LOG_PAGE_ROWS + 100;
        for ck in 0..rows {
            session.execute_unpaged(&insert, (ck,)).await?;
        }
        let (stream,): (Vec<u8>,) = session
            .query_unpaged(
                "SELECT \"cdc$stream_id\" FROM ks.t_scylla_cdc_log LIMIT 1",
                (),
            )
            .await?
            .into_rows_result()?
            .single_row()?;
        let streams = [StreamID::new(
            stream.try_into().expect("a 16-byte stream id"),
        )];
        let source = DriverLogSource::new(session, "ks", "t_scylla_cdc_log").await?;
        let (start, end) = (
            Utc::now() - chrono::TimeDelta::hours(1),
            Utc::now() + chrono::TimeDelta::hours(1),
        );
        let (page, next) = source
            .fetch_page(&streams, start, end, PagingState::start())
            .await?;
        assert_eq!(page.len(), LOG_PAGE_ROWS as usize);
        let PagingStateResponse::HasMorePages { state } = next else {
            panic!("one page of {rows} rows");
        };
        let (page, _) = source.fetch_page(&streams, start, end, state).await?;
        assert_eq!(page.len(), 100);
        // The rows' bytes taken from the driver's buffer are what copying them cell by cell
        // (the fallback for a driver that lays them out otherwise) gives.
        let LogPage::Driver(result) = &page else {
            panic!("a page of the driver");
        };
        let taken = page.raw_rows().map_err(anyhow::Error::msg)?;
        let copied = LogPage::copied_rows(result).map_err(anyhow::Error::msg)?;
        assert!(matches!(taken.bytes, std::borrow::Cow::Borrowed(_)));
        assert_eq!(taken.bytes, copied.bytes);
        assert_eq!(taken.count, copied.count);
        Ok(())
    }
}
