//! Early reads: what a stream group delivered before its rows were confirmed.
//!
//! A stream group that reads early delivers the rows of `[early, now - lag)` as soon as they
//! are visible, long before `now - safety_interval`, the point after which the log is taken
//! as final. A row that becomes visible after the early read passed its `cdc$time` (a write
//! with a client timestamp in the past, clock skew, a slow replica) is a *late* row: only a
//! second read of that window, the *confirmation*, once the window is older than the safety
//! interval, finds it. The confirmation reads the window's keys (`cdc$stream_id`,
//! `cdc$time`, `cdc$batch_seq_no`), and every key the early read did not deliver is fetched
//! whole and delivered, flagged as late.
//!
//! A [`Ledger`] is what the early read delivered and the confirmation has not yet passed:
//! per stream, the keys in the order they were delivered, which is the log's order, so the
//! confirmation, reading the same streams in the same order, matches its keys with one
//! comparison each ([`Ledger::confirm`]) and drops each key it passes. It costs
//! [`KEY_BYTES`] per row delivered early and not yet confirmed: at most a safety interval's
//! worth of rows (plus the confirmation's batch). A [`Budget`] shared by every group of a
//! reader caps the rows all ledgers hold together: a group checks it before each early
//! window, and an early window spans at most [`EarlySettings::span`] (the longer of twice
//! the poll interval and [`MAX_EARLY_WINDOW`]), so the ledgers hold at most the cap plus one
//! such window's rows per group. A group that finds the cap reached stops reading early until
//! confirmations free room (its rows then arrive up to a safety interval late, as without
//! early reads): nothing is lost or delivered twice.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::base::time::ChangeKey;

/// Early reads ([`crate::CDCLogReaderBuilder::early_reads`]): each stream group reads the
/// log `lag` behind now every `poll_interval` and delivers what it finds at once; a
/// confirmation read of each window, once it is older than the safety interval, delivers the
/// rows that became visible only after the early read had passed them (late rows, flagged
/// [`crate::CDCRow::is_late`] / [`crate::Change::is_late`]). See the crate docs' "Early
/// reads" for the guarantees, and the defaults ([`EarlyReads::default`]: 100 ms, 600 ms,
/// 1 000 000 rows).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EarlyReads {
    /// How far behind now the early read stays: a row whose `cdc$time` is within `lag` of
    /// the reader's clock waits for the next poll. A larger lag lets writes whose timestamps
    /// are a little behind the reader's clock (client timestamps, clock skew) arrive on
    /// time instead of late, and delays every change by as much.
    pub lag: Duration,
    /// How often a caught-up stream group polls for new rows: a change is delivered within
    /// about `lag + poll_interval` of its write. Each poll is one query per stream group
    /// (at most 100 streams per query): a shorter interval costs the cluster
    /// proportionally more requests while idle.
    pub poll_interval: Duration,
    /// The most rows delivered early and not confirmed yet that the reader remembers, all
    /// its stream groups together ([`UNCONFIRMED_ROW_BYTES`] each). A group checks it before
    /// each early window, which spans at most the longer of twice the poll interval and
    /// [`MAX_EARLY_WINDOW`]: the reader holds at most this many rows plus one such window's
    /// per group. A burst that reaches it pauses early reads until confirmations free room:
    /// changes written meanwhile arrive up to a safety interval after their write, as
    /// without early reads, and none is lost or delivered twice.
    pub max_unconfirmed_rows: usize,
}

/// What remembering one row delivered early costs, in bytes, until its window is
/// confirmed ([`EarlyReads::max_unconfirmed_rows`]).
pub const UNCONFIRMED_ROW_BYTES: usize = KEY_BYTES;

impl Default for EarlyReads {
    /// A lag of 100 ms, a poll every 600 ms (so a change arrives within about 0.7 s of its
    /// write), and at most 1 000 000 unconfirmed rows (24 MB).
    fn default() -> Self {
        Self {
            lag: Duration::from_millis(100),
            poll_interval: Duration::from_millis(600),
            max_unconfirmed_rows: 1_000_000,
        }
    }
}

impl EarlyReads {
    /// The defaults (see [`EarlyReads::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`EarlyReads::lag`].
    pub fn lag(mut self, lag: Duration) -> Self {
        self.lag = lag;
        self
    }

    /// Sets [`EarlyReads::poll_interval`].
    pub fn poll_interval(mut self, poll_interval: Duration) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Sets [`EarlyReads::max_unconfirmed_rows`].
    pub fn max_unconfirmed_rows(mut self, rows: usize) -> Self {
        self.max_unconfirmed_rows = rows;
        self
    }
}

/// What a ledger holds per row: one [`ChangeKey`] in a `VecDeque`.
pub(crate) const KEY_BYTES: usize = std::mem::size_of::<ChangeKey>();

/// The cap on the rows the ledgers of one reader hold together.
#[derive(Debug)]
pub(crate) struct Budget {
    cap: usize,
    used: AtomicUsize,
}

impl Budget {
    /// A budget of `cap` rows.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            used: AtomicUsize::new(0),
        }
    }

    /// Whether an early read may go on: the ledgers hold fewer rows than the cap. An early
    /// page may take them past it by that page's rows.
    pub(crate) fn has_room(&self) -> bool {
        self.used.load(Ordering::Relaxed) < self.cap
    }

    /// The rows the ledgers hold now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn take(&self, n: usize) {
        self.used.fetch_add(n, Ordering::Relaxed);
    }

    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }
}

/// The rows a stream group delivered early and has not confirmed yet (see the module docs).
#[derive(Debug)]
pub(crate) struct Ledger {
    /// Per stream (the group's stream positions): keys delivered early, in log order.
    keys: Vec<VecDeque<ChangeKey>>,
    /// Rows held, in all.
    len: usize,
    budget: Arc<Budget>,
}

/// What the confirmation found of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The early read delivered it.
    Delivered,
    /// The early read did not deliver it: it is late.
    Late,
}

impl Ledger {
    /// An empty ledger of a group of `streams` streams, counting against `budget`.
    pub(crate) fn new(streams: usize, budget: Arc<Budget>) -> Self {
        Self {
            keys: (0..streams).map(|_| VecDeque::new()).collect(),
            len: 0,
            budget,
        }
    }

    /// The rows held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Records that the row `key` of stream `slot` was delivered early. Rows of a stream are
    /// delivered in log order, so each key is the stream's greatest.
    pub(crate) fn record(&mut self, slot: usize, key: ChangeKey) {
        if let Some(keys) = self.keys.get_mut(slot) {
            debug_assert!(keys.back().is_none_or(|last| *last < key));
            keys.push_back(key);
            self.len += 1;
            self.budget.take(1);
        }
    }

    /// The confirmation read the row `key` of stream `slot` (rows of a stream in log order):
    /// whether the early read delivered it. Keys before it that the confirmation did not see
    /// (a row gone since, by its TTL) are dropped.
    pub(crate) fn confirm(&mut self, slot: usize, key: ChangeKey) -> Seen {
        let Some(keys) = self.keys.get_mut(slot) else {
            return Seen::Late;
        };
        let mut dropped = 0;
        let seen = loop {
            match keys.front() {
                Some(front) if *front < key => {
                    keys.pop_front();
                    dropped += 1;
                }
                Some(front) if *front == key => {
                    keys.pop_front();
                    dropped += 1;
                    break Seen::Delivered;
                }
                _ => break Seen::Late,
            }
        };
        self.len -= dropped;
        self.budget.give_back(dropped);
        seen
    }

    /// Drops every key before `until` (the confirmation passed them), in every stream.
    pub(crate) fn forget_before(&mut self, until: ChangeKey) {
        let mut dropped = 0;
        for keys in &mut self.keys {
            while keys.front().is_some_and(|k| *k < until) {
                keys.pop_front();
                dropped += 1;
            }
        }
        self.len -= dropped;
        self.budget.give_back(dropped);
    }

    /// Drops everything (the group stops; what it held is no longer counted).
    pub(crate) fn clear(&mut self) {
        for keys in &mut self.keys {
            keys.clear();
        }
        self.budget.give_back(self.len);
        self.len = 0;
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The longest span of log time one early window covers unless twice the poll interval is longer:
/// what an early window may add to the ledgers past their cap, per stream group, after early
/// reads paused for a burst resume.
pub const MAX_EARLY_WINDOW: Duration = Duration::from_secs(1);

/// The longest a stream group told to stop where it is (a graceful stop: the programs'
/// first SIGTERM, a consumer-group member leaving) waits for the confirmation of the rows it
/// delivered early, which comes once they are older than the safety interval. With a longer
/// safety interval the group stops at its confirmed point at once and a restart delivers
/// those rows again.
pub const MAX_STOP_CONFIRMATION: Duration = Duration::from_secs(30);

/// What every stream reader of a reader with early reads gets: the settings, and the budget
/// of unconfirmed rows all their ledgers share.
#[derive(Debug, Clone)]
pub(crate) struct EarlySettings {
    pub(crate) lag: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) budget: Arc<Budget>,
}

impl EarlySettings {
    /// The settings of `early`, with a budget of its own.
    pub(crate) fn new(early: &EarlyReads) -> Self {
        Self {
            lag: early.lag,
            poll_interval: early.poll_interval,
            budget: Arc::new(Budget::new(early.max_unconfirmed_rows)),
        }
    }

    /// The longest early window of a reader whose windows are `window` long: the longer of
    /// twice the poll interval and [`MAX_EARLY_WINDOW`], and no longer than `window`. Twice:
    /// a poll finds a poll interval and the previous read's duration to read, which one
    /// query must cover (a span of one poll interval took two queries every poll).
    pub(crate) fn span(&self, window: Duration) -> Duration {
        window.min(self.poll_interval.saturating_mul(2).max(MAX_EARLY_WINDOW))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::tests::timeuuid;

    fn key(micros: i64, seq: i32) -> ChangeKey {
        ChangeKey::new(&timeuuid(micros, 0x1234), seq)
    }

    #[test]
    fn the_confirmation_finds_what_the_early_read_delivered_and_what_it_missed() {
        let budget = Arc::new(Budget::new(100));
        let mut ledger = Ledger::new(2, budget.clone());
        for m in [10, 20, 40] {
            ledger.record(0, key(m, 0));
        }
        ledger.record(1, key(15, 0));
        ledger.record(1, key(15, 1));
        assert_eq!((ledger.len(), budget.used()), (5, 5));
        // Stream 0: 30 is late (written in the past, visible after the early read).
        assert_eq!(ledger.confirm(0, key(10, 0)), Seen::Delivered);
        assert_eq!(ledger.confirm(0, key(20, 0)), Seen::Delivered);
        assert_eq!(ledger.confirm(0, key(30, 0)), Seen::Late);
        assert_eq!(ledger.confirm(0, key(40, 0)), Seen::Delivered);
        // Stream 1: a row before any delivered one is late; both rows of 15 were delivered.
        assert_eq!(ledger.confirm(1, key(5, 0)), Seen::Late);
        assert_eq!(ledger.confirm(1, key(15, 0)), Seen::Delivered);
        assert_eq!(ledger.confirm(1, key(15, 1)), Seen::Delivered);
        assert_eq!((ledger.len(), budget.used()), (0, 0));
        // A stream the group does not have: late (never delivered early).
        assert_eq!(ledger.confirm(7, key(1, 0)), Seen::Late);
    }

    #[test]
    fn keys_the_confirmation_passes_are_dropped_and_given_back_to_the_budget() {
        let budget = Arc::new(Budget::new(3));
        let mut a = Ledger::new(1, budget.clone());
        let mut b = Ledger::new(1, budget.clone());
        a.record(0, key(1, 0));
        a.record(0, key(2, 0));
        assert!(budget.has_room());
        b.record(0, key(3, 0));
        assert!(!budget.has_room(), "the groups share one cap");
        // A row delivered early and gone before the confirmation (its TTL): dropped when the
        // confirmation passes it.
        assert_eq!(a.confirm(0, key(2, 0)), Seen::Delivered);
        assert_eq!(a.len(), 0);
        assert!(budget.has_room());
        b.forget_before(key(4, 0));
        assert_eq!((b.len(), budget.used()), (0, 0));
        a.record(0, key(5, 0));
        drop(a);
        assert_eq!(budget.used(), 0, "a ledger dropped gives its rows back");
    }
}
