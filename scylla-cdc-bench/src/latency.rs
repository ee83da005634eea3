//! What `scylla-cdc-bench latency` records and prints: when each write was acknowledged
//! ([`Acks`]), when and how often each reader delivered it and whether it was flagged late
//! ([`Deliveries`]), the delays and counts of one phase ([`Delays`], [`LateCount`]), and the
//! markdown tables.
//!
//! Writes are told apart by their `pk` (an `int`, from 0 up): each phase writes its own
//! range of keys, once each. Times are nanoseconds since one [`Instant`] (the run's start),
//! kept in atomics indexed by `pk`, so that the readers' consumers record a delivery without
//! a lock.

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::live::{Delivery, p50_p99_max};

/// Nanoseconds from `base` to now, plus one (zero means "not yet").
fn stamp(base: Instant) -> u64 {
    u64::try_from(base.elapsed().as_nanos())
        .unwrap_or(u64::MAX - 1)
        .saturating_add(1)
}

/// The index of `pk` in tables of `len` entries, if it has one.
fn index(pk: i32, len: usize) -> Option<usize> {
    usize::try_from(pk).ok().filter(|&i| i < len)
}

/// When each write (by `pk`) was acknowledged to the writer.
#[derive(Debug)]
pub struct Acks {
    base: Instant,
    at: Vec<AtomicU64>,
}

impl Acks {
    /// Room for the keys `0..capacity`, times counted from `base`.
    pub fn new(base: Instant, capacity: usize) -> Self {
        Self {
            base,
            at: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The instant times are counted from.
    pub fn base(&self) -> Instant {
        self.base
    }

    /// The write of `pk` was acknowledged now (keys out of range are ignored).
    pub fn ack(&self, pk: i32) {
        if let Some(i) = index(pk, self.at.len()) {
            self.at[i].store(stamp(self.base), Ordering::Relaxed);
        }
    }

    /// When the write of `pk` was acknowledged (from the base); `None` if it was not.
    pub fn at(&self, pk: i32) -> Option<Duration> {
        let t = self
            .at
            .get(index(pk, self.at.len())?)?
            .load(Ordering::Relaxed);
        (t > 0).then(|| Duration::from_nanos(t - 1))
    }

    /// The keys of `pks` whose write was acknowledged.
    pub fn acked(&self, pks: Range<i32>) -> impl Iterator<Item = i32> + '_ {
        pks.filter(|&pk| self.at(pk).is_some())
    }
}

/// What one reader delivered, by `pk`: when first, how many times, how many flagged late.
#[derive(Debug)]
pub struct Deliveries {
    base: Instant,
    first: Vec<AtomicU64>,
    count: Vec<AtomicU32>,
    late: Vec<AtomicU32>,
    /// Rows without a `pk` in range (none are written).
    foreign: AtomicU64,
}

impl Deliveries {
    /// Room for the keys `0..capacity`, times counted from `base` (the same as the
    /// [`Acks`]'s).
    pub fn new(base: Instant, capacity: usize) -> Self {
        let zeros = |_| AtomicU32::new(0);
        Self {
            base,
            first: (0..capacity).map(|_| AtomicU64::new(0)).collect(),
            count: (0..capacity).map(zeros).collect(),
            late: (0..capacity).map(zeros).collect(),
            foreign: AtomicU64::new(0),
        }
    }

    /// When `pk` was first delivered (from the base).
    pub fn first(&self, pk: i32) -> Option<Duration> {
        let t = self
            .first
            .get(index(pk, self.first.len())?)?
            .load(Ordering::Relaxed);
        (t > 0).then(|| Duration::from_nanos(t - 1))
    }

    /// How many times `pk` was delivered.
    pub fn count(&self, pk: i32) -> u32 {
        index(pk, self.count.len()).map_or(0, |i| self.count[i].load(Ordering::Relaxed))
    }

    /// How many of its deliveries were flagged late.
    pub fn late(&self, pk: i32) -> u32 {
        index(pk, self.late.len()).map_or(0, |i| self.late[i].load(Ordering::Relaxed))
    }

    /// Rows delivered whose `pk` was missing or out of range.
    pub fn foreign(&self) -> u64 {
        self.foreign.load(Ordering::Relaxed)
    }

    /// Whether every acknowledged write of `pks` was delivered.
    pub fn has_all(&self, acks: &Acks, pks: Range<i32>) -> bool {
        acks.acked(pks).all(|pk| self.count(pk) > 0)
    }
}

impl Delivery for Deliveries {
    fn row(&self, pk: Option<i32>, late: bool) {
        let Some(i) = pk.and_then(|pk| index(pk, self.first.len())) else {
            self.foreign.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let _ = self.first[i].compare_exchange(
            0,
            stamp(self.base),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        self.count[i].fetch_add(1, Ordering::Relaxed);
        if late {
            self.late[i].fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Delays from acknowledgement to first delivery of one phase's writes, at one reader.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delays {
    /// Writes acknowledged.
    pub written: u64,
    /// Of them, delivered.
    pub delivered: u64,
    /// Of them, delivered more than once.
    pub twice: u64,
    /// p50, p99 and max of the delays, seconds (negative: delivered before the writer saw
    /// the acknowledgement); `None` if none was delivered.
    pub p50_p99_max: Option<[f64; 3]>,
}

impl Delays {
    /// The delays of the writes of `pks` at `reader`.
    pub fn of(acks: &Acks, reader: &Deliveries, pks: Range<i32>) -> Self {
        let (mut written, mut twice) = (0, 0);
        let mut delays = Vec::new();
        for pk in pks {
            let Some(acked) = acks.at(pk) else { continue };
            written += 1;
            if let Some(first) = reader.first(pk) {
                delays.push(first.as_secs_f64() - acked.as_secs_f64());
            }
            if reader.count(pk) > 1 {
                twice += 1;
            }
        }
        Self {
            written,
            delivered: delays.len() as u64,
            twice,
            p50_p99_max: p50_p99_max(delays),
        }
    }

    /// `p50 / p99 / max` in seconds, then what was lost or repeated, if anything.
    pub fn cell(&self) -> String {
        let mut cell = match self.p50_p99_max {
            Some([p50, p99, max]) => format!("{p50:.2} / {p99:.2} / {max:.2}"),
            None => format!("none of {} delivered", self.written),
        };
        if self.delivered < self.written && self.delivered > 0 {
            cell += &format!(
                "; {} of {} lost",
                self.written - self.delivered,
                self.written
            );
        }
        if self.twice > 0 {
            cell += &format!("; {} twice", self.twice);
        }
        cell
    }
}

/// Late rows (written with a timestamp in the past) at one reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LateCount {
    /// Written (acknowledged).
    pub written: u64,
    /// Of them, delivered at least once.
    pub delivered: u64,
    /// Of them, delivered more than once.
    pub twice: u64,
    /// Of them, delivered flagged late (`None`: the reader has no such flag).
    pub flagged: Option<u64>,
}

impl LateCount {
    /// The late rows of `pks` at `reader`; `flags` says whether it flags late rows.
    pub fn of(acks: &Acks, reader: &Deliveries, pks: Range<i32>, flags: bool) -> Self {
        let mut count = LateCount {
            flagged: flags.then_some(0),
            ..LateCount::default()
        };
        for pk in acks.acked(pks) {
            count.written += 1;
            let n = reader.count(pk);
            count.delivered += u64::from(n > 0);
            count.twice += u64::from(n > 1);
            if let Some(flagged) = &mut count.flagged {
                *flagged += u64::from(reader.late(pk) > 0);
            }
        }
        count
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: LateCount) {
        self.written += other.written;
        self.delivered += other.delivered;
        self.twice += other.twice;
        self.flagged = match (self.flagged, other.flagged) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// `delivered/written, N twice` and, for a reader that flags them, `, N flagged late`.
    pub fn cell(&self) -> String {
        let mut cell = format!("{}/{}, {} twice", self.delivered, self.written, self.twice);
        if let Some(flagged) = self.flagged {
            cell += &format!(", {flagged} flagged late");
        }
        cell
    }

    /// Parses a [`LateCount::cell`] back into `(delivered, written, twice)`.
    pub fn parse_cell(cell: &str) -> Option<(u64, u64, u64)> {
        let (counts, rest) = cell.trim().split_once(", ")?;
        let (delivered, written) = counts.split_once('/')?;
        let twice = rest.split_once(" twice")?.0;
        Some((
            delivered.parse().ok()?,
            written.parse().ok()?,
            twice.parse().ok()?,
        ))
    }
}

/// One reader's line of the main table.
#[derive(Debug, Clone)]
pub struct ReaderLine {
    /// The reader.
    pub name: String,
    /// Requests per second its session sent while idle.
    pub idle_rps: f64,
    /// Delays of the single writes while idle, then of each write rate.
    pub delays: Vec<Delays>,
    /// The late rows, every lateness together.
    pub late: LateCount,
    /// CPU time per row catching up a backlog, microseconds (`None`: not measured).
    pub cpu_us_per_row: Option<f64>,
}

/// The header cell of the late rows' column (the tests find the column by it).
pub const LATE_HEADER: &str = "late rows delivered/written, twice";

/// The main table: one line per reader; `rate_headers` names the columns of the write
/// rates (after the idle delays).
pub fn main_table(rate_headers: &[String], lines: &[ReaderLine]) -> String {
    let mut header = vec![
        "reader".to_owned(),
        "idle requests/s".to_owned(),
        "idle: p50 / p99 / max (s)".to_owned(),
    ];
    header.extend(
        rate_headers
            .iter()
            .map(|h| format!("{h}: p50 / p99 / max (s)")),
    );
    header.push(LATE_HEADER.to_owned());
    header.push("catch-up CPU µs/row".to_owned());
    let mut rows = Vec::new();
    for line in lines {
        let mut row = vec![line.name.clone(), format!("{:.1}", line.idle_rps)];
        row.extend(line.delays.iter().map(Delays::cell));
        // A column the reader has no measurement of (fewer delays than headers).
        row.extend((line.delays.len()..=rate_headers.len()).map(|_| "-".to_owned()));
        row.push(line.late.cell());
        row.push(
            line.cpu_us_per_row
                .map_or("-".into(), |c| format!("{c:.2}")),
        );
        rows.push(row);
    }
    markdown(&header, &rows)
}

/// A markdown table of `header` and `rows` (cells as given, `|` in them escaped).
pub fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = line(header);
    out += &format!("|{}\n", "---|".repeat(header.len()));
    for row in rows {
        out += &line(row);
    }
    out
}

/// The cells of the markdown table line of `table` whose first cell is `first`.
pub fn table_line<'t>(table: &'t str, first: &str) -> Option<Vec<&'t str>> {
    table.lines().find_map(|l| {
        let cells: Vec<&str> = l
            .trim()
            .strip_prefix('|')?
            .strip_suffix('|')?
            .split(" | ")
            .map(str::trim)
            .collect();
        (cells.first() == Some(&first)).then_some(cells)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_run_from_acknowledgement_to_first_delivery() {
        let base = Instant::now() - Duration::from_secs(10);
        let acks = Acks::new(base, 8);
        let reader = Deliveries::new(base, 8);
        for pk in 0..4 {
            acks.ack(pk);
        }
        acks.ack(100); // Out of range: ignored.
        reader.row(Some(0), false);
        reader.row(Some(1), true);
        reader.row(Some(1), false);
        reader.row(None, false);
        reader.row(Some(-1), false);
        assert_eq!(reader.foreign(), 2);
        assert!(!reader.has_all(&acks, 0..4));
        assert!(reader.has_all(&acks, 0..2));
        assert!(reader.has_all(&acks, 4..8), "nothing acknowledged there");
        let d = Delays::of(&acks, &reader, 0..8);
        assert_eq!((d.written, d.delivered, d.twice), (4, 2, 1));
        let [p50, p99, max] = d.p50_p99_max.unwrap();
        assert!(p50 >= 0.0 && p50 <= p99 && p99 <= max && max < 1.0, "{d:?}");
        assert!(d.cell().ends_with("; 2 of 4 lost; 1 twice"), "{}", d.cell());
        let none = Delays::of(&acks, &Deliveries::new(base, 8), 0..8);
        assert_eq!(none.cell(), "none of 4 delivered");
    }

    #[test]
    fn late_counts_add_up_and_their_cells_parse_back() {
        let base = Instant::now();
        let acks = Acks::new(base, 4);
        let reader = Deliveries::new(base, 4);
        for pk in 0..3 {
            acks.ack(pk);
        }
        reader.row(Some(0), true);
        reader.row(Some(1), false);
        reader.row(Some(1), false);
        let mut c = LateCount::of(&acks, &reader, 0..2, true);
        c.add(LateCount::of(&acks, &reader, 2..4, true));
        assert_eq!(
            c,
            LateCount {
                written: 3,
                delivered: 2,
                twice: 1,
                flagged: Some(1)
            }
        );
        assert_eq!(c.cell(), "2/3, 1 twice, 1 flagged late");
        assert_eq!(LateCount::parse_cell(&c.cell()), Some((2, 3, 1)));
        let unflagged = LateCount::of(&acks, &reader, 0..4, false);
        assert_eq!(unflagged.cell(), "2/3, 1 twice");
        assert_eq!(LateCount::parse_cell("2/3, 1 twice"), Some((2, 3, 1)));
        assert_eq!(LateCount::parse_cell("-"), None);
    }

    #[test]
    fn the_main_table_has_a_line_per_reader_and_a_column_per_rate() {
        let delays = Delays {
            written: 10,
            delivered: 10,
            twice: 0,
            p50_p99_max: Some([0.4, 0.7, 0.75]),
        };
        let lines = vec![
            ReaderLine {
                name: "ours, early reads".into(),
                idle_rps: 31.04,
                delays: vec![delays, delays],
                late: LateCount {
                    written: 3,
                    delivered: 3,
                    twice: 0,
                    flagged: Some(2),
                },
                cpu_us_per_row: Some(1.234),
            },
            ReaderLine {
                name: "scylla-cdc 0.7".into(),
                idle_rps: 77.0,
                delays: vec![delays],
                late: LateCount::default(),
                cpu_us_per_row: None,
            },
        ];
        let table = main_table(&["1000/s".into()], &lines);
        let header = table_line(&table, "reader").unwrap();
        assert_eq!(header.len(), 6);
        assert_eq!(header[3], "1000/s: p50 / p99 / max (s)");
        assert_eq!(header[4], LATE_HEADER);
        let ours = table_line(&table, "ours, early reads").unwrap();
        assert_eq!(
            ours,
            [
                "ours, early reads",
                "31.0",
                "0.40 / 0.70 / 0.75",
                "0.40 / 0.70 / 0.75",
                "3/3, 0 twice, 2 flagged late",
                "1.23"
            ]
        );
        let theirs = table_line(&table, "scylla-cdc 0.7").unwrap();
        assert_eq!(theirs[3..], ["-", "0/0, 0 twice", "-"]);
        assert_eq!(table.lines().nth(1), Some("|---|---|---|---|---|---|"));
        assert!(table_line(&table, "nobody").is_none());
    }
}
