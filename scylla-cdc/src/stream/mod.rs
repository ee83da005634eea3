//! Reading the log of one stream group, window after window.
//!
//! A [`StreamReader`] owns one group of streams of one generation and one [`Sink`] (a
//! consumer, or the change assembler in front of a change consumer: `sink.rs`). It reads
//! windows `[T, U)` (see [`crate::base::time::next_window_end`]) from a [`LogSource`] page by
//! page (`page.rs`), prefetching the next page while the consumer handles the current one
//! (a few groups at a time), retries transient errors from the page that failed, never hands
//! a stream's row over twice, applies the consumer error policy to what the consumer cannot
//! take (`error_policy.rs`: retries, then stop, skip or dead letters), and saves a
//! [`Checkpoint`] after its windows.

pub(crate) mod early;
pub(crate) mod error_policy;
pub(crate) mod page;
pub(crate) mod sink;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use scylla::frame::response::result::ColumnSpec;
use scylla::response::{PagingState, PagingStateResponse};
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
use crate::consumer::CDCRow;
use crate::consumer::columns::{CellSource, ColumnIndex, RowHeader, RowRef};
use crate::report::progress::{ErrorOutcome, RateLimiter, Slot, Stats, retry_kind};
use crate::stream::early::{EarlySettings, Ledger, Seen};
use crate::stream::error_policy::{AfterRetries, ConsumerErrorPolicy, DeadLetter, panic_message};
use crate::stream::page::{LogPage, LogSource, next_cell};
use crate::stream::sink::Sink;

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
    /// Early reads, when on (see [`early`]).
    pub(crate) early: Option<EarlySettings>,
}

/// How many stream groups of one reader may fetch their next page while their consumer
/// handles the current one, at once. Prefetching hides a group's round trip behind its
/// consumer, which matters when few groups are read (one group: every round trip would
/// stall it); with many groups, as on a vnode cluster (one group per vnode), the other
/// groups' queries keep the cluster and the consumers busy anyway, and a prefetched page per
/// group only adds memory: measured with `scylla-cdc-bench compare` (2 M log rows, 16 and 48
/// groups), a prefetch for every group held 26–40 MiB at peak against 18–24 MiB for
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
    /// What the rows being delivered are (see [`Reading`]).
    reading: Reading,
    /// With early reads: what was delivered early and is not confirmed yet.
    ledger: Option<Ledger>,
}

/// What the rows a stream reader delivers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Rows of a window older than the safety interval, read once.
    Settled,
    /// Rows of an early read: each is recorded in the ledger once delivered.
    Early,
    /// The rows of one late change the confirmation found (stream, `cdc$time`): only those
    /// rows of the page are delivered, flagged as late, whatever was delivered before.
    Late(StreamID, uuid::Uuid),
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
                reading: Reading::Settled,
                ledger: None,
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
    pub(crate) async fn run(self) -> Result<(), CDCError> {
        match self.plan.settings.early.clone() {
            Some(early) => self.run_early(early).await,
            None => self.run_settled().await,
        }
    }

    /// The window loop without early reads: windows end `safety_interval` behind now.
    async fn run_settled(mut self) -> Result<(), CDCError> {
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

impl StreamReader {
    /// The window loop with early reads (see [`early`]): the confirmed point `c` (every row
    /// before it was delivered, and the checkpoint) and the early point `e >= c` (every row
    /// before it that was visible when it was read was delivered). Each turn:
    /// 1. windows before `now - safety_interval` are read once when nothing was delivered
    ///    early there (catching up), or else confirmed (a window's keys are compared with
    ///    what its early read delivered, and the rows it missed are delivered, late), every
    ///    sleep interval's worth, or at once when the reader stops or its ledger is full;
    /// 2. the early read delivers what is visible in `[e, now - lag)`;
    /// 3. the group waits a poll interval.
    ///
    /// A limit below the early point (a member stopping this group to hand one of its units
    /// over, `stop_at`) ends the early reads at once and the confirmation goes on to the early
    /// point, so that the checkpoint covers everything delivered.
    async fn run_early(mut self, early: EarlySettings) -> Result<(), CDCError> {
        let mut c = self.start;
        let mut e = self.start;
        self.progress.ledger = Some(Ledger::new(self.plan.streams.len(), early.budget.clone()));
        let mut limits = (
            self.plan.settings.end.clone(),
            self.plan.generation_end.clone(),
        );
        loop {
            limits.0.borrow_and_update();
            limits.1.borrow_and_update();
            let limit = self.plan.limit();
            let end = limit.map(|l| l.max(e));
            let s = &self.plan.settings;
            let (window, safety, batch) = (s.window_size, s.safety_interval, s.sleep_interval);
            let now = s.clock.now();
            // Told to stop where it is (a graceful stop) with rows delivered early after the
            // confirmed point: their confirmation is waited for only if it comes within
            // MAX_STOP_CONFIRMATION; else the group stops at the confirmed point, and a
            // restart delivers them again (none is lost).
            let gives_up = limit.is_some_and(|l| l <= c)
                && e > c
                && crate::base::time::plus(e, safety)
                    > crate::base::time::plus(now, early::MAX_STOP_CONFIRMATION);
            if gives_up || end.is_some_and(|l| c >= l) {
                self.plan.flush(&mut self.progress, c).await?;
                self.plan.save(&mut self.progress, c, true).await?;
                self.plan.settings.stats.advance(&self.plan.slot, c);
                return Ok(());
            }
            let settled = truncate_to_millis(crate::base::time::minus(now, safety));
            if c < settled {
                if e <= c {
                    // Nothing was delivered early here: read the window once.
                    let u = next_window_end(c, window, now, safety, end);
                    let full =
                        u >= crate::base::time::plus(c, window) || end.is_some_and(|l| u >= l);
                    self.settled_window(c, u).await?;
                    (c, e) = (u, u);
                    if full {
                        continue;
                    }
                } else {
                    let stopping = limit.is_some_and(|l| l <= e);
                    let full = !early.budget.has_room();
                    if stopping || full || settled >= crate::base::time::plus(c, batch) {
                        let mut u = settled.min(e).min(crate::base::time::plus(c, window));
                        if let Some(l) = end {
                            u = u.min(l);
                        }
                        self.confirm_window(c, u).await?;
                        c = u;
                        continue;
                    }
                }
            }
            // Early reads stop at the limit, and while the ledgers are full.
            let mut early_end = truncate_to_millis(crate::base::time::minus(now, early.lag));
            if let Some(l) = limit {
                early_end = early_end.min(l);
            }
            if e < early_end && early.budget.has_room() {
                let u = early_end.min(crate::base::time::plus(e, early.span(window)));
                self.early_window(c, e, u).await?;
                e = u;
                if u < early_end {
                    continue;
                }
            }
            let wait = if limit.is_some_and(|l| l <= e) {
                // Stopping: only the confirmation is left, due once `e` is settled.
                let due = crate::base::time::plus(e, safety) - now;
                due.to_std()
                    .unwrap_or_default()
                    .clamp(Duration::from_millis(1), early.poll_interval)
            } else {
                early.poll_interval
            };
            pause(wait, &mut limits).await;
        }
    }

    /// Reads the window `[start, end)`, older than the safety interval and delivered by no
    /// early read, once: the window, its end, the low watermark and the checkpoint at `end`.
    async fn settled_window(
        &mut self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        tracing::Span::current().record("window_start", tracing::field::display(start));
        self.progress.reading = Reading::Settled;
        self.plan
            .read_window(&mut self.progress, start, end)
            .await?;
        self.plan.end_window(&mut self.progress, start, end).await?;
        self.window_done(end);
        self.plan.save(&mut self.progress, end, false).await
    }

    /// The early read of `[start, end)`: delivers its rows, recording each in the ledger; the
    /// low watermark stays at the confirmed point `confirmed`.
    async fn early_window(
        &mut self,
        confirmed: DateTime<Utc>,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        self.progress.reading = Reading::Early;
        let read = self.plan.read_window(&mut self.progress, start, end).await;
        self.progress.reading = Reading::Settled;
        read?;
        self.plan.end_window(&mut self.progress, start, end).await?;
        self.window_done(confirmed);
        self.plan.settings.stats.early_read(end);
        Ok(())
    }

    /// The confirmation of `[start, end)`, older than the safety interval, which the early
    /// read delivered: reads the window's keys, and delivers whole, flagged as late, every
    /// change the early read did not deliver; then the checkpoint at `end`.
    async fn confirm_window(
        &mut self,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<(), CDCError> {
        tracing::Span::current().record("window_start", tracing::field::display(start));
        let late = self
            .plan
            .late_changes(&mut self.progress, start, end)
            .await?;
        let rows_before = self.progress.window_rows;
        for (stream, time) in late {
            let page = self.plan.fetch_change(stream, time, (start, end)).await?;
            self.progress.reading = Reading::Late(stream, time);
            let delivered = self
                .plan
                .consume_page(&mut self.progress, &page, start, end, None)
                .await;
            self.progress.reading = Reading::Settled;
            delivered?;
        }
        let late_rows = self.progress.window_rows - rows_before;
        if late_rows > 0 {
            self.plan.settings.stats.late_rows(late_rows);
        }
        self.plan.end_window(&mut self.progress, start, end).await?;
        if let Some(ledger) = &mut self.progress.ledger {
            ledger.forget_before(ChangeKey::first_at(end));
        }
        self.window_done(end);
        self.plan.save(&mut self.progress, end, false).await
    }

    /// Counts the window's rows and changes, and moves the group's low watermark to `to`.
    fn window_done(&mut self, to: DateTime<Utc>) {
        let p = &mut self.progress;
        self.plan
            .settings
            .stats
            .window_done(&self.plan.slot, to, p.window_rows, p.window_changes);
        (p.window_rows, p.window_changes) = (0, 0);
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
        let source = &self.settings.source;
        self.retrying((start, end), || {
            source.fetch_page(&self.streams, start, end, paging.clone())
        })
        .await
    }

    /// The late changes of `[start, end)`: reads the window's keys and compares them with
    /// what the early read delivered (the ledger), in log order; returns the changes (stream,
    /// `cdc$time`) it did not deliver, each once.
    async fn late_changes(
        &self,
        progress: &mut Progress,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Vec<(StreamID, uuid::Uuid)>, CDCError> {
        let source = &self.settings.source;
        let mut late: Vec<(StreamID, uuid::Uuid)> = Vec::new();
        let mut paging = PagingState::start();
        loop {
            let state = paging.clone();
            let (page, next) = self
                .retrying((start, end), || {
                    source.fetch_keys(&self.streams, start, end, state.clone())
                })
                .await?;
            let keys = page.keys().map_err(|detail| CDCError::BadLogData {
                streams: StreamList(self.streams.clone()),
                window_start: start,
                window_end: end,
                detail,
            })?;
            for (stream, time, seq) in keys {
                let Some(slot) = self.streams.iter().position(|s| *s == stream) else {
                    continue;
                };
                if let Some(starts) = &self.stream_starts
                    && starts
                        .get(slot)
                        .is_some_and(|from| timeuuid_to_datetime(&time) < *from)
                {
                    // Delivered before the resume (its stream's checkpoint is later).
                    continue;
                }
                let key = ChangeKey::new(&time, seq);
                let seen = match &mut progress.ledger {
                    Some(ledger) => ledger.confirm(slot, key),
                    None => Seen::Late,
                };
                if seen == Seen::Late && late.last() != Some(&(stream, time)) {
                    late.push((stream, time));
                }
            }
            match next.into_paging_control_flow() {
                std::ops::ControlFlow::Break(()) => return Ok(late),
                std::ops::ControlFlow::Continue(state) => paging = state,
            }
        }
    }

    /// The rows of one late change, read whole (retrying transient errors).
    async fn fetch_change(
        &self,
        stream: StreamID,
        time: uuid::Uuid,
        window: (DateTime<Utc>, DateTime<Utc>),
    ) -> Result<LogPage, CDCError> {
        let source = &self.settings.source;
        self.retrying(window, || source.fetch_change(stream, time))
            .await
    }

    /// Runs a request of the window `[start, end)` until it succeeds, retrying transient
    /// errors with capped exponential backoff.
    async fn retrying<T, F, Fut>(
        &self,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
        mut request: F,
    ) -> Result<T, CDCError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, scylla::errors::ExecutionError>>,
    {
        let mut backoff = Backoff::new(self.settings.give_up_after);
        loop {
            match request().await {
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
            let mut header = header;
            match progress.reading {
                // A late change is older than what its stream delivered: it is delivered
                // whatever `last` says, and leaves `last` as it is.
                Reading::Late(stream, time) => {
                    if header.stream_id != stream || header.time != time {
                        continue;
                    }
                    header.late = true;
                }
                _ if last.is_some_and(|l| key <= l) => continue,
                _ => {}
            }
            let span = &row_start[..row_start.len() - rest.len()];
            let row = (header, &index, specs, &cells[..], span);
            self.check_deadline()?;
            self.hand_over(progress, row, (start, end)).await?;
            counts.rows += 1;
            progress.last_stream = Some(header.stream_id);
            match progress.reading {
                Reading::Late(..) => {
                    if last.is_none_or(|l| !l.same_time(&key)) {
                        counts.changes += 1;
                    }
                    continue;
                }
                Reading::Early => {
                    if let Some(ledger) = &mut progress.ledger {
                        ledger.record(slot, key);
                    }
                }
                Reading::Settled => {}
            }
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
pub(crate) mod tests;
