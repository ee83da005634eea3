//! What a reader has done so far: counters, the low watermark and the rate limiter.
//!
//! [`Stats`] is shared by the worker and every stream reader of one [`crate::CDCLogReader`].
//! Its counters are relaxed atomics, added to once per page by the stream readers (never per
//! row), and recorded to the `metrics` facade once per window. The low watermark tracks one
//! position per stream group of the current generation (a [`Slot`]) in a multiset, so that
//! its minimum costs `O(log groups)` per window. [`Progress`] is the public snapshot of it
//! all. A reader of several tables has one [`Stats`] per table (its metrics labelled with
//! that table) and one [`ReaderStats`] over them: the totals, and the reader's low watermark,
//! which is the least of the tables' ([`Overall`], updated by a table's [`Stats`] whenever
//! its own watermark moves). [`RateLimiter`] is the shared token bucket of
//! [`crate::CDCLogReaderBuilder::max_rows_per_second`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use metrics::{Counter, Gauge};
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use tokio::sync::watch;

use crate::base::error::CDCError;
use crate::base::time::Clock;

/// A snapshot of a reader's progress: the same figures as its metrics, for programs that do
/// not use the `metrics` facade. See [`crate::CDCLogReader::progress`].
///
/// Counters start at zero when the reader is built (they are not saved with checkpoints).
/// Rows and changes are counted once per page (a page cut short by
/// [`crate::CDCLogReader::stop`] is not counted) and reach the `metrics` facade once per
/// window, so after a `stop()` the facade may be a window behind this snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Log rows delivered to the consumers (`scylla_cdc_rows_total`).
    pub rows: u64,
    /// Changes delivered: the rows of one stream with one `cdc$time` (a pre-image, its
    /// deltas and its post-image are one change) (`scylla_cdc_changes_total`).
    pub changes: u64,
    /// Windows read, over all stream groups (`scylla_cdc_windows_total`).
    pub windows: u64,
    /// Requests retried after a transient error while reading (log pages, the streams of a
    /// generation) (`scylla_cdc_retries_total`, labelled by `kind`).
    pub retries: u64,
    /// Errors of a consumer (returned or panics) that stopped the reader: at most one per
    /// reader in practice (`scylla_cdc_consumer_errors_total{outcome="stop"}`).
    pub consumer_errors: u64,
    /// Rows handed to a consumer again after it failed on them
    /// (`scylla_cdc_consumer_errors_total{outcome="retry"}`); with a change consumer,
    /// changes handed over again.
    pub consumer_retries: u64,
    /// Rows skipped after the consumer failed on them ([`crate::AfterRetries::Skip`])
    /// (`scylla_cdc_consumer_errors_total{outcome="skip"}`); with a change consumer,
    /// changes skipped (a change counts once, whatever its number of rows).
    pub rows_skipped: u64,
    /// Rows written to the dead letters after the consumer failed on them
    /// ([`crate::AfterRetries::DeadLetter`])
    /// (`scylla_cdc_consumer_errors_total{outcome="dead_letter"}`); with a change consumer,
    /// changes given up (a change counts once; its dead letters are one per row).
    pub rows_dead_lettered: u64,
    /// Streams of the generation being read (`scylla_cdc_streams`); over several tables,
    /// the sum of each table's (the tables of a vnode keyspace read the same streams, each
    /// its own log of them).
    pub streams: u64,
    /// Moves from one generation to the next (`scylla_cdc_generation_switches_total`).
    pub generation_switches: u64,
    /// Late rows delivered: rows the confirmation of an early read found, which became
    /// visible only after the early read had passed their time ([`crate::CDCRow::is_late`])
    /// (`scylla_cdc_late_rows_total`). Always 0 without early reads.
    pub late_rows: u64,
    /// With early reads: how far behind now the last early read of any stream group read
    /// (now minus the end of its window, at its end): a change written on time is delivered
    /// about this long after its write (`scylla_cdc_early_lag_seconds`). `None` without
    /// early reads, or before the first one.
    pub early_lag: Option<Duration>,
    /// The low watermark (see [`crate::CDCLogReader::low_watermark`]); `None` until the
    /// first generation's stream groups are set up (`scylla_cdc_low_watermark_seconds`).
    pub low_watermark: Option<DateTime<Utc>>,
    /// Now minus the low watermark (zero if the watermark is ahead of this clock)
    /// (`scylla_cdc_lag_seconds`).
    pub lag: Option<Duration>,
    /// When the reader last moved forward: the time (of its clock) a stream group last
    /// finished a window (an early read or a confirmation included) or delivered a page of
    /// rows; `None` before the first. A reader that is caught up still finishes a window
    /// every sleep interval (or, with adaptive polling, at most every
    /// [`crate::CDCLogReaderBuilder::max_idle_latency`]); one that stops moving is blocked:
    /// its reads keep failing or its consumer does not return. Over several tables, the
    /// latest of theirs. (The programs' `/health` endpoint is built on it.)
    pub last_progress: Option<DateTime<Utc>>,
    /// Per table of the reader, in the order it was given to the builder: the same figures
    /// for that table alone (each with an empty `tables`). The figures above are their sums,
    /// and the low watermark is the least of theirs (`None` while any table has none).
    pub tables: Vec<TableProgress>,
    /// In a consumer group ([`crate::CDCLogReaderBuilder::group`]): this member and the units
    /// it reads; `None` for a reader outside any group. Over several tables: the units of
    /// every table, the members of the table with most, and every table's units counted.
    pub group: Option<GroupProgress>,
}

/// What a member of a consumer group holds (see [`Progress::group`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GroupProgress {
    /// This member's id.
    pub member: String,
    /// Members of the group it sees alive (itself included).
    pub members: usize,
    /// Units of work of the generation being read.
    pub units: usize,
    /// The units this member reads now (their keys in the lease table), sorted
    /// (`scylla_cdc_group_units_owned` counts them).
    pub owned: Vec<String>,
    /// The log readers reading them: the units started together are read by replica (node
    /// and shard), at most `max_partition_key_restrictions_per_query` streams per reader, one
    /// query per reader and window.
    pub readers: usize,
}

/// The progress of one table of a reader (see [`Progress::tables`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableProgress {
    /// The base table, as stored.
    pub table: String,
    /// Its figures (with an empty [`Progress::tables`]).
    pub progress: Progress,
}

/// What came of a consumer's error (the `outcome` label of
/// `scylla_cdc_consumer_errors_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorOutcome {
    /// The reader stopped.
    Stop = 0,
    /// The row was handed over again.
    Retry = 1,
    /// The row was skipped.
    Skip = 2,
    /// The row was written to the dead letters.
    DeadLetter = 3,
}

impl ErrorOutcome {
    const ALL: [Self; 4] = [Self::Stop, Self::Retry, Self::Skip, Self::DeadLetter];

    fn label(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Retry => "retry",
            Self::Skip => "skip",
            Self::DeadLetter => "dead_letter",
        }
    }
}

/// The position of one stream group in the low watermark.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The generation (counted from the reader's first) the group belongs to.
    epoch: u64,
    index: usize,
}

/// The confirmed positions of the current generation's stream groups.
#[derive(Default)]
struct Positions {
    epoch: u64,
    by_group: Vec<DateTime<Utc>>,
    /// How many groups are at each position: the minimum is the first key.
    counts: BTreeMap<DateTime<Utc>, usize>,
}

impl Positions {
    fn remove(&mut self, at: DateTime<Utc>) {
        if let Some(n) = self.counts.get_mut(&at) {
            *n -= 1;
            if *n == 0 {
                self.counts.remove(&at);
            }
        }
    }

    fn min(&self) -> Option<DateTime<Utc>> {
        self.counts.keys().next().copied()
    }
}

/// The metric handles of one reader, labelled with its keyspace and table.
struct Handles {
    keyspace: String,
    table: String,
    rows: Counter,
    changes: Counter,
    windows: Counter,
    consumer_errors: [Counter; 4],
    /// By [`RETRY_KINDS`].
    retries: [Counter; RETRY_KINDS.len()],
    streams: Gauge,
    generation_switches: Counter,
    low_watermark: Gauge,
    lag: Gauge,
    late_rows: Counter,
    early_lag: Gauge,
}

/// Counters and the low watermark of one reader, shared by its tasks.
pub(crate) struct Stats {
    rows: AtomicU64,
    changes: AtomicU64,
    windows: AtomicU64,
    retries: AtomicU64,
    /// By [`ErrorOutcome`].
    consumer_errors: [AtomicU64; 4],
    streams: AtomicU64,
    generation_switches: AtomicU64,
    late_rows: AtomicU64,
    /// The last early read's lag, in microseconds (`u64::MAX`: none yet).
    early_lag: AtomicU64,
    /// [`Progress::last_progress`] in microseconds since the epoch (`i64::MIN`: none yet).
    last_progress: AtomicI64,
    /// A std mutex: held for a few map operations once per window, never across `.await`.
    positions: Mutex<Positions>,
    /// Set by a consumer group's member. A std mutex, never held across `.await`.
    group: Mutex<Option<GroupProgress>>,
    watermark: watch::Sender<Option<DateTime<Utc>>>,
    clock: Arc<dyn Clock>,
    safety_interval: Duration,
    metrics: Handles,
    /// The reader's watermark over all its tables, and this table's place in it.
    overall: Option<(Arc<Overall>, usize)>,
}

impl Stats {
    pub(crate) fn new(
        keyspace: &str,
        table: &str,
        clock: Arc<dyn Clock>,
        safety_interval: Duration,
    ) -> Self {
        describe_metrics();
        let labels = [
            ("keyspace", keyspace.to_owned()),
            ("table", table.to_owned()),
        ];
        // Every counter is registered here with each of its label values, so that an exporter
        // shows it at 0 from the start rather than only after its first increment (Prometheus'
        // `rate()` and `increase()` need the zero).
        let metrics = Handles {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
            rows: metrics::counter!("scylla_cdc_rows_total", &labels),
            changes: metrics::counter!("scylla_cdc_changes_total", &labels),
            windows: metrics::counter!("scylla_cdc_windows_total", &labels),
            consumer_errors: ErrorOutcome::ALL.map(|outcome| {
                metrics::counter!(
                    "scylla_cdc_consumer_errors_total",
                    "keyspace" => keyspace.to_owned(),
                    "table" => table.to_owned(),
                    "outcome" => outcome.label()
                )
            }),
            retries: RETRY_KINDS.map(|kind| {
                metrics::counter!(
                    "scylla_cdc_retries_total",
                    "keyspace" => keyspace.to_owned(),
                    "table" => table.to_owned(),
                    "kind" => kind
                )
            }),
            streams: metrics::gauge!("scylla_cdc_streams", &labels),
            generation_switches: metrics::counter!("scylla_cdc_generation_switches_total", &labels),
            low_watermark: metrics::gauge!("scylla_cdc_low_watermark_seconds", &labels),
            lag: metrics::gauge!("scylla_cdc_lag_seconds", &labels),
            late_rows: metrics::counter!("scylla_cdc_late_rows_total", &labels),
            early_lag: metrics::gauge!("scylla_cdc_early_lag_seconds", &labels),
        };
        // A gauge that only grows (the width of the changes lost to the log's TTL): at 0 from
        // the start too, like the counters.
        metrics::gauge!("scylla_cdc_expired_gap_seconds", &labels).increment(0.0);
        Self {
            rows: AtomicU64::new(0),
            changes: AtomicU64::new(0),
            windows: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            consumer_errors: Default::default(),
            streams: AtomicU64::new(0),
            generation_switches: AtomicU64::new(0),
            late_rows: AtomicU64::new(0),
            early_lag: AtomicU64::new(u64::MAX),
            last_progress: AtomicI64::new(i64::MIN),
            positions: Mutex::new(Positions::default()),
            group: Mutex::new(None),
            watermark: watch::channel(None).0,
            clock,
            safety_interval,
            metrics,
            overall: None,
        }
    }

    /// These stats as table `index` of a reader whose watermark over all tables is `overall`.
    pub(crate) fn in_reader(mut self, overall: Arc<Overall>, index: usize) -> Self {
        self.overall = Some((overall, index));
        self
    }

    /// Counts the rows and changes of one page (progress() sees them at once).
    pub(crate) fn add_page(&self, rows: u64, changes: u64) {
        if rows > 0 {
            self.rows.fetch_add(rows, Ordering::Relaxed);
            self.moved();
        }
        if changes > 0 {
            self.changes.fetch_add(changes, Ordering::Relaxed);
        }
    }

    /// Records a finished window of a group to the metrics facade, with its rows and changes
    /// (already counted by [`Self::add_page`]), and moves the group's position to `until`.
    pub(crate) fn window_done(&self, slot: &Slot, until: DateTime<Utc>, rows: u64, changes: u64) {
        self.windows.fetch_add(1, Ordering::Relaxed);
        self.moved();
        self.metrics.windows.increment(1);
        self.metrics.rows.increment(rows);
        self.metrics.changes.increment(changes);
        self.advance(slot, until);
    }

    /// Counts late rows delivered by a confirmation.
    pub(crate) fn late_rows(&self, rows: u64) {
        self.late_rows.fetch_add(rows, Ordering::Relaxed);
        self.metrics.late_rows.increment(rows);
    }

    /// Records how far behind now an early read read: now minus its window's end.
    pub(crate) fn early_read(&self, end: DateTime<Utc>) {
        let now = self.clock.now();
        self.last_progress
            .fetch_max(now.timestamp_micros(), Ordering::Relaxed);
        let lag = lag(now, end);
        let micros = u64::try_from(lag.as_micros()).unwrap_or(u64::MAX - 1);
        self.early_lag.store(micros, Ordering::Relaxed);
        self.metrics.early_lag.set(lag.as_secs_f64());
    }

    /// Records that the reader moved forward now ([`Progress::last_progress`]).
    fn moved(&self) {
        self.last_progress
            .fetch_max(self.clock.now().timestamp_micros(), Ordering::Relaxed);
    }

    /// Counts a retry of a transient error of `kind` (one of [`RETRY_KINDS`], see
    /// [`retry_kind`]; another counts as `other`).
    pub(crate) fn retry(&self, kind: &'static str) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        let i = RETRY_KINDS
            .iter()
            .position(|k| *k == kind)
            .unwrap_or(RETRY_KINDS.len() - 1);
        self.metrics.retries[i].increment(1);
    }

    /// Counts an error of a consumer by what came of it.
    pub(crate) fn consumer_error(&self, outcome: ErrorOutcome) {
        let i = outcome as usize;
        self.consumer_errors[i].fetch_add(1, Ordering::Relaxed);
        self.metrics.consumer_errors[i].increment(1);
    }

    /// Starts a generation of `streams` streams whose groups start at `starts`: returns one
    /// slot per group. The previous generation's groups no longer count; `switch` counts a
    /// generation switch.
    pub(crate) fn begin_generation(
        &self,
        streams: usize,
        starts: &[DateTime<Utc>],
        switch: bool,
    ) -> Vec<Slot> {
        self.streams.store(streams as u64, Ordering::Relaxed);
        self.metrics.streams.set(streams as f64);
        if switch {
            self.generation_switches.fetch_add(1, Ordering::Relaxed);
            self.metrics.generation_switches.increment(1);
        }
        let slots = {
            let mut p = self.positions.lock().unwrap_or_else(|e| e.into_inner());
            p.epoch += 1;
            p.by_group = starts.to_vec();
            p.counts.clear();
            for s in starts {
                *p.counts.entry(*s).or_default() += 1;
            }
            let epoch = p.epoch;
            (0..starts.len())
                .map(|index| Slot { epoch, index })
                .collect()
        };
        self.publish();
        slots
    }

    /// Adds a stream group starting at `start` to the current generation (a unit a member of
    /// a consumer group took), with `streams` more streams.
    pub(crate) fn add_slot(&self, start: DateTime<Utc>, streams: usize) -> Slot {
        let total = self.streams.fetch_add(streams as u64, Ordering::Relaxed) + streams as u64;
        self.metrics.streams.set(total as f64);
        let slot = {
            let mut p = self.positions.lock().unwrap_or_else(|e| e.into_inner());
            p.by_group.push(start);
            *p.counts.entry(start).or_default() += 1;
            Slot {
                epoch: p.epoch,
                index: p.by_group.len() - 1,
            }
        };
        self.publish();
        slot
    }

    /// Removes a stream group of `streams` streams from the watermark (a unit a member no
    /// longer reads): its position no longer holds the watermark back.
    pub(crate) fn remove_slot(&self, slot: &Slot, streams: usize) {
        let total = self
            .streams
            .fetch_sub(streams as u64, Ordering::Relaxed)
            .saturating_sub(streams as u64);
        self.metrics.streams.set(total as f64);
        {
            let mut p = self.positions.lock().unwrap_or_else(|e| e.into_inner());
            if p.epoch != slot.epoch {
                return;
            }
            let Some(&old) = p.by_group.get(slot.index) else {
                return;
            };
            p.remove(old);
            // Never advanced again (`advance` only moves forward).
            p.by_group[slot.index] = DateTime::<Utc>::MAX_UTC;
        }
        self.publish();
    }

    /// Records what this member of a consumer group holds.
    pub(crate) fn set_group(&self, group: GroupProgress) {
        metrics::gauge!(
            "scylla_cdc_group_units_owned",
            "keyspace" => self.metrics.keyspace.clone(),
            "table" => self.metrics.table.clone()
        )
        .set(group.owned.len() as f64);
        *self.group.lock().unwrap_or_else(|e| e.into_inner()) = Some(group);
    }

    /// Moves a group's position to `to`: every row of its streams before `to` was delivered.
    pub(crate) fn advance(&self, slot: &Slot, to: DateTime<Utc>) {
        {
            let mut p = self.positions.lock().unwrap_or_else(|e| e.into_inner());
            if p.epoch != slot.epoch {
                return;
            }
            let Some(&old) = p.by_group.get(slot.index) else {
                return;
            };
            if to <= old {
                return;
            }
            p.remove(old);
            p.by_group[slot.index] = to;
            *p.counts.entry(to).or_default() += 1;
        }
        self.publish();
    }

    /// Recomputes the watermark (never backwards) and records it and the lag.
    fn publish(&self) {
        // Held until the gauges are set, so that concurrent publishes (of different groups)
        // cannot leave an older watermark in the gauges or in the reader's [`Overall`] after
        // a newer one. Lock order: a table's positions, then the reader's `Overall`.
        let positions = self.positions.lock().unwrap_or_else(|e| e.into_inner());
        let min = positions.min();
        let now = self.clock.now();
        let current = *self.watermark.borrow();
        let moved = min.and_then(|min| {
            // Saturating: a safety interval may reach past the beginning of time.
            let horizon = crate::base::time::minus(now, self.safety_interval);
            // Positions are exclusive (every row *before* them was delivered); the watermark
            // is inclusive, and log times are whole microseconds.
            let candidate = crate::base::time::minus(min.min(horizon), Duration::from_micros(1));
            current.is_none_or(|w| candidate > w).then_some(candidate)
        });
        // The gauges first: whoever sees the watermark move (a `watch` receiver) then reads
        // gauges that agree with it.
        if let Some(w) = moved.or(current) {
            self.metrics
                .low_watermark
                .set(w.timestamp_micros() as f64 / 1e6);
            self.metrics.lag.set(lag(now, w).as_secs_f64());
        }
        if let Some(w) = moved {
            self.watermark.send_replace(Some(w));
            if let Some((overall, index)) = &self.overall {
                overall.update(*index, Some(w));
            }
        }
        drop(positions);
    }

    /// The current figures.
    pub(crate) fn snapshot(&self) -> Progress {
        let low_watermark = *self.watermark.borrow();
        Progress {
            rows: self.rows.load(Ordering::Relaxed),
            changes: self.changes.load(Ordering::Relaxed),
            windows: self.windows.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            consumer_errors: self.consumer_errors[ErrorOutcome::Stop as usize]
                .load(Ordering::Relaxed),
            consumer_retries: self.consumer_errors[ErrorOutcome::Retry as usize]
                .load(Ordering::Relaxed),
            rows_skipped: self.consumer_errors[ErrorOutcome::Skip as usize].load(Ordering::Relaxed),
            rows_dead_lettered: self.consumer_errors[ErrorOutcome::DeadLetter as usize]
                .load(Ordering::Relaxed),
            streams: self.streams.load(Ordering::Relaxed),
            generation_switches: self.generation_switches.load(Ordering::Relaxed),
            late_rows: self.late_rows.load(Ordering::Relaxed),
            early_lag: match self.early_lag.load(Ordering::Relaxed) {
                u64::MAX => None,
                micros => Some(Duration::from_micros(micros)),
            },
            low_watermark,
            lag: low_watermark.map(|w| lag(self.clock.now(), w)),
            last_progress: match self.last_progress.load(Ordering::Relaxed) {
                i64::MIN => None,
                micros => DateTime::from_timestamp_micros(micros),
            },
            tables: Vec::new(),
            group: self.group.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

/// The low watermark of a reader over all its tables: the least of the tables' watermarks,
/// once every table has one.
pub(crate) struct Overall {
    /// Each table's watermark. A std mutex: held for a scan of the tables once per move of a
    /// table's watermark, never across `.await`.
    tables: Mutex<Vec<Option<DateTime<Utc>>>>,
    watermark: watch::Sender<Option<DateTime<Utc>>>,
}

impl Overall {
    /// The watermark of a reader of `tables` tables, none of which has one yet.
    pub(crate) fn new(tables: usize) -> Self {
        Self {
            tables: Mutex::new(vec![None; tables]),
            watermark: watch::channel(None).0,
        }
    }

    /// Table `index`'s watermark moved to `w`.
    fn update(&self, index: usize, w: Option<DateTime<Utc>>) {
        let least = {
            let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = tables.get_mut(index) {
                *slot = w;
            }
            tables
                .iter()
                .try_fold(None::<DateTime<Utc>>, |least, w| {
                    let w = (*w)?;
                    Some(Some(least.map_or(w, |l| l.min(w))))
                })
                .flatten()
        };
        if let Some(least) = least {
            self.watermark.send_if_modified(|w| {
                if w.is_none_or(|w| least > w) {
                    *w = Some(least);
                    true
                } else {
                    false
                }
            });
        }
    }
}

/// The statistics of a whole reader: one [`Stats`] per table and the watermark over them.
#[derive(Clone)]
pub(crate) struct ReaderStats {
    tables: Arc<[(String, Arc<Stats>)]>,
    overall: Arc<Overall>,
    clock: Arc<dyn Clock>,
}

impl ReaderStats {
    /// The statistics of a reader of `tables` (each with its stats made
    /// [`Stats::in_reader`] of `overall`).
    pub(crate) fn new(
        tables: Vec<(String, Arc<Stats>)>,
        overall: Arc<Overall>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            tables: tables.into(),
            overall,
            clock,
        }
    }

    /// A receiver of the reader's low watermark.
    pub(crate) fn watch_watermark(&self) -> watch::Receiver<Option<DateTime<Utc>>> {
        self.overall.watermark.subscribe()
    }

    /// The totals and the figures of each table.
    pub(crate) fn snapshot(&self) -> Progress {
        let tables: Vec<TableProgress> = self
            .tables
            .iter()
            .map(|(table, stats)| TableProgress {
                table: table.clone(),
                progress: stats.snapshot(),
            })
            .collect();
        let sum = |f: fn(&Progress) -> u64| tables.iter().map(|t| f(&t.progress)).sum::<u64>();
        let low_watermark = *self.overall.watermark.borrow();
        let group = tables
            .iter()
            .filter_map(|t| t.progress.group.as_ref())
            .fold(None::<GroupProgress>, |acc, g| {
                let mut acc = acc.unwrap_or_else(|| GroupProgress {
                    member: g.member.clone(),
                    ..GroupProgress::default()
                });
                acc.members = acc.members.max(g.members);
                acc.units += g.units;
                acc.owned.extend(g.owned.iter().cloned());
                acc.readers += g.readers;
                Some(acc)
            });
        Progress {
            rows: sum(|p| p.rows),
            changes: sum(|p| p.changes),
            windows: sum(|p| p.windows),
            retries: sum(|p| p.retries),
            consumer_errors: sum(|p| p.consumer_errors),
            consumer_retries: sum(|p| p.consumer_retries),
            rows_skipped: sum(|p| p.rows_skipped),
            rows_dead_lettered: sum(|p| p.rows_dead_lettered),
            streams: sum(|p| p.streams),
            generation_switches: sum(|p| p.generation_switches),
            late_rows: sum(|p| p.late_rows),
            early_lag: tables.iter().filter_map(|t| t.progress.early_lag).max(),
            low_watermark,
            lag: low_watermark.map(|w| lag(self.clock.now(), w)),
            last_progress: tables.iter().filter_map(|t| t.progress.last_progress).max(),
            tables,
            group,
        }
    }
}

/// `now - w`, zero when `w` is ahead.
fn lag(now: DateTime<Utc>, w: DateTime<Utc>) -> Duration {
    (now - w).to_std().unwrap_or(Duration::ZERO)
}

/// Every value of the `kind` label of `scylla_cdc_retries_total`, the values of
/// [`retry_kind`] and [`retry_kind_of`]; `other` last (a kind not listed counts as it).
pub(crate) const RETRY_KINDS: [&str; 8] = [
    "timeout",
    "overloaded",
    "unavailable",
    "connection",
    "replica_failure",
    "prepare",
    "checkpoint",
    "other",
];

/// Describes the reader's metrics to the installed recorder (an exporter's `# HELP` lines).
/// Called for every reader built: a recorder installed after the first one still gets them.
fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge};
    describe_counter!(
        "scylla_cdc_rows_total",
        "Log rows delivered to the consumers"
    );
    describe_counter!(
        "scylla_cdc_changes_total",
        "Changes delivered (the rows of one stream with one cdc$time)"
    );
    describe_counter!(
        "scylla_cdc_windows_total",
        "Time windows read, over all stream groups"
    );
    describe_counter!(
        "scylla_cdc_retries_total",
        "Requests retried after a transient error, by kind"
    );
    describe_counter!(
        "scylla_cdc_consumer_errors_total",
        "Errors of a consumer, by what came of them"
    );
    describe_counter!(
        "scylla_cdc_generation_switches_total",
        "Moves from one CDC generation to the next"
    );
    describe_counter!(
        "scylla_cdc_late_rows_total",
        "Rows found by the confirmation of an early read (written late)"
    );
    describe_gauge!(
        "scylla_cdc_streams",
        "Streams of the CDC generation being read"
    );
    describe_gauge!(
        "scylla_cdc_low_watermark_seconds",
        Unit::Seconds,
        "Every change up to this unix time has been delivered"
    );
    describe_gauge!(
        "scylla_cdc_lag_seconds",
        Unit::Seconds,
        "Now minus the low watermark"
    );
    describe_gauge!(
        "scylla_cdc_early_lag_seconds",
        Unit::Seconds,
        "How far behind now the last early read read"
    );
    describe_gauge!(
        "scylla_cdc_expired_gap_seconds",
        Unit::Seconds,
        "Width of the changes lost to the CDC log's TTL before they were read"
    );
    describe_gauge!(
        "scylla_cdc_group_units_owned",
        "Units of a consumer group this member reads"
    );
}

/// The `kind` label of a retried driver error: `timeout`, `overloaded`, `unavailable`,
/// `connection`, `replica_failure` or `other`.
pub(crate) fn retry_kind(err: &ExecutionError) -> &'static str {
    match err {
        ExecutionError::RequestTimeout(_) => "timeout",
        ExecutionError::EmptyPlan => "unavailable",
        ExecutionError::ConnectionPoolError(_) => "connection",
        ExecutionError::LastAttemptError(attempt) => match attempt {
            RequestAttemptError::UnableToAllocStreamId
            | RequestAttemptError::BrokenConnectionError(_) => "connection",
            RequestAttemptError::DbError(db, _) => match db {
                DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. } => "timeout",
                DbError::Overloaded | DbError::RateLimitReached { .. } => "overloaded",
                DbError::Unavailable { .. } | DbError::IsBootstrapping => "unavailable",
                DbError::ReadFailure { .. } | DbError::WriteFailure { .. } => "replica_failure",
                _ => "other",
            },
            _ => "other",
        },
        _ => "other",
    }
}

/// The `kind` label of a retried reader error (see [`retry_kind`]).
pub(crate) fn retry_kind_of(err: &CDCError) -> &'static str {
    match err {
        CDCError::Query { source, .. } => retry_kind(source),
        CDCError::Prepare { .. } => "prepare",
        CDCError::Checkpoint { .. } => "checkpoint",
        _ => "other",
    }
}

/// A token bucket shared by every stream reader of a reader: at most `rate` rows per second,
/// with a burst of a tenth of a second's worth.
///
/// A caller reserves its rows at once (the bucket may go into debt) and sleeps until the
/// debt is paid: waiting is a timer, never a busy loop, and callers are served in the order
/// they reserved.
pub(crate) struct RateLimiter {
    rate: f64,
    burst: f64,
    /// The rows a stream reader pays for at a time while it delivers a page.
    chunk: u64,
    /// Tokens (negative: debt) as of an instant. A std mutex: never held across `.await`.
    state: Mutex<(f64, tokio::time::Instant)>,
}

impl RateLimiter {
    pub(crate) fn new(rows_per_second: u64) -> Self {
        let rate = rows_per_second as f64;
        let chunk = (rows_per_second / 50).clamp(1, 1000);
        let burst = (rate / 10.0).max(chunk as f64);
        Self {
            rate,
            burst,
            chunk,
            state: Mutex::new((burst, tokio::time::Instant::now())),
        }
    }

    /// How many rows to pay for at a time.
    pub(crate) fn chunk(&self) -> u64 {
        self.chunk
    }

    /// Waits until `rows` more rows may be read.
    pub(crate) async fn acquire(&self, rows: u64) {
        let until = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let now = tokio::time::Instant::now();
            let (tokens, at) = *state;
            let refilled = (tokens + now.saturating_duration_since(at).as_secs_f64() * self.rate)
                .min(self.burst);
            let left = refilled - rows as f64;
            *state = (left, now);
            if left >= 0.0 {
                return;
            }
            now + Duration::from_secs_f64(-left / self.rate)
        };
        tokio::time::sleep_until(until).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::TokioClock;
    use chrono::TimeDelta;

    fn ms(m: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(m).unwrap()
    }

    const BASE: i64 = 1_700_000_000_000;

    fn stats() -> Stats {
        Stats::new(
            "ks",
            "t",
            Arc::new(TokioClock::starting_at(ms(BASE))),
            Duration::from_secs(30),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_watermark_is_the_least_group_position() {
        let s = stats();
        assert_eq!(s.snapshot().low_watermark, None);
        let slots = s.begin_generation(3, &[ms(BASE - 90_000), ms(BASE - 80_000)], false);
        let us = TimeDelta::microseconds(1);
        assert_eq!(s.snapshot().low_watermark, Some(ms(BASE - 90_000) - us));
        s.advance(&slots[0], ms(BASE - 70_000));
        assert_eq!(s.snapshot().low_watermark, Some(ms(BASE - 80_000) - us));
        s.advance(&slots[1], ms(BASE - 60_000));
        assert_eq!(s.snapshot().low_watermark, Some(ms(BASE - 70_000) - us));
        // Never ahead of now - safety_interval.
        s.advance(&slots[0], ms(BASE));
        s.advance(&slots[1], ms(BASE));
        assert_eq!(s.snapshot().low_watermark, Some(ms(BASE - 30_000) - us));
        assert_eq!(s.snapshot().lag, Some(Duration::from_micros(30_000_001)));
        // A new generation: the old groups no longer count, stale slots are ignored.
        let new = s.begin_generation(1, &[ms(BASE - 10_000)], true);
        s.advance(&slots[0], ms(BASE - 50_000));
        tokio::time::advance(Duration::from_secs(100)).await;
        s.advance(&new[0], ms(BASE + 20_000));
        let p = s.snapshot();
        assert_eq!(p.low_watermark, Some(ms(BASE + 20_000) - us));
        assert_eq!((p.streams, p.generation_switches), (1, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn last_progress_is_the_last_window_or_page() {
        let s = stats();
        assert_eq!(s.snapshot().last_progress, None);
        let slots = s.begin_generation(1, &[ms(BASE - 90_000)], false);
        // Setting up a generation is not progress; an empty page is not either.
        s.add_page(0, 0);
        assert_eq!(s.snapshot().last_progress, None);
        tokio::time::advance(Duration::from_secs(5)).await;
        s.window_done(&slots[0], ms(BASE - 80_000), 0, 0);
        assert_eq!(s.snapshot().last_progress, Some(ms(BASE + 5_000)));
        tokio::time::advance(Duration::from_secs(7)).await;
        s.add_page(3, 1);
        assert_eq!(s.snapshot().last_progress, Some(ms(BASE + 12_000)));
        // Retries are counted, but are no progress.
        tokio::time::advance(Duration::from_secs(1)).await;
        s.retry("timeout");
        s.retry("not a kind");
        let p = s.snapshot();
        assert_eq!((p.retries, p.last_progress), (2, Some(ms(BASE + 12_000))));
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_of_two_tables_sums_them_and_has_the_least_watermark() {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::starting_at(ms(BASE)));
        let overall = Arc::new(Overall::new(2));
        let table = |name: &str, index| {
            Arc::new(
                Stats::new("ks", name, clock.clone(), Duration::from_secs(30))
                    .in_reader(overall.clone(), index),
            )
        };
        let (a, b) = (table("a", 0), table("b", 1));
        let reader = ReaderStats::new(
            vec![("a".into(), a.clone()), ("b".into(), b.clone())],
            overall,
            clock,
        );
        let watermark = reader.watch_watermark();
        let us = TimeDelta::microseconds(1);
        let sa = a.begin_generation(2, &[ms(BASE - 90_000)], false);
        // Only one table has a watermark: the reader has none yet.
        assert_eq!(reader.snapshot().low_watermark, None);
        let sb = b.begin_generation(3, &[ms(BASE - 80_000)], false);
        assert_eq!(*watermark.borrow(), Some(ms(BASE - 90_000) - us));
        a.add_page(5, 2);
        b.add_page(7, 3);
        a.advance(&sa[0], ms(BASE - 60_000));
        // b is behind now.
        assert_eq!(*watermark.borrow(), Some(ms(BASE - 80_000) - us));
        b.advance(&sb[0], ms(BASE - 70_000));
        let p = reader.snapshot();
        assert_eq!(p.low_watermark, Some(ms(BASE - 70_000) - us));
        assert_eq!((p.rows, p.changes, p.streams), (12, 5, 5));
        let tables: Vec<_> = p
            .tables
            .iter()
            .map(|t| (t.table.as_str(), t.progress.rows, t.progress.low_watermark))
            .collect();
        assert_eq!(
            tables,
            vec![
                ("a", 5, Some(ms(BASE - 60_000) - us)),
                ("b", 7, Some(ms(BASE - 70_000) - us)),
            ]
        );
    }

    #[test]
    fn retry_kinds() {
        use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
        let db = |e| ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "x".into()));
        assert_eq!(
            retry_kind(&ExecutionError::RequestTimeout(Duration::ZERO)),
            "timeout"
        );
        assert_eq!(retry_kind(&db(DbError::Overloaded)), "overloaded");
        assert_eq!(retry_kind(&db(DbError::IsBootstrapping)), "unavailable");
        assert_eq!(retry_kind(&db(DbError::Invalid)), "other");
    }

    #[tokio::test(start_paused = true)]
    async fn the_rate_limiter_spaces_rows() {
        let l = RateLimiter::new(1000);
        let start = tokio::time::Instant::now();
        // The burst (100 rows) goes at once, then 1000 rows per second.
        l.acquire(100).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        for _ in 0..100 {
            l.acquire(20).await;
        }
        let took = start.elapsed().as_secs_f64();
        assert!((1.99..=2.01).contains(&took), "{took}");
    }
}
