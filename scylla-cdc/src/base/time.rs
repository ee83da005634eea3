//! Time arithmetic of the reader: the clock, window bounds and the order of `cdc$time`.
//!
//! A [`Clock`] says what "now" is (the system clock in production, tokio's clock in tests so
//! that paused time drives it); [`next_window_end`] computes where the next window
//! `[T, U)` stops; [`ChangeKey`] orders log rows of one stream the way Scylla clusters them.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use uuid::Uuid;

/// The source of "now" for window computations.
pub(crate) trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that starts at a given wall-clock time and advances with tokio's clock, so tests
/// with `start_paused = true` control it with `tokio::time::advance` or auto-advance.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokioClock {
    /// Wall-clock time at `base_instant`.
    base: DateTime<Utc>,
    /// Tokio instant that corresponds to `base`.
    base_instant: tokio::time::Instant,
}

#[cfg(test)]
impl TokioClock {
    /// A clock that reads `base` now.
    pub(crate) fn starting_at(base: DateTime<Utc>) -> Self {
        Self {
            base,
            base_instant: tokio::time::Instant::now(),
        }
    }
}

#[cfg(test)]
impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        self.base + to_delta(self.base_instant.elapsed())
    }
}

/// A `std` duration as a chrono delta, saturating at chrono's maximum.
pub(crate) fn to_delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

/// `t + d`, saturating at the end of time (chrono's `+` panics past it).
pub(crate) fn plus(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_add_signed(to_delta(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `t - d`, saturating at the beginning of time (chrono's `-` panics past it).
pub(crate) fn minus(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_sub_signed(to_delta(d))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Truncates a point in time to whole milliseconds (the precision of CQL timestamps, and
/// so of window bounds and checkpoints).
pub(crate) fn truncate_to_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}

/// Rounds a point in time up to whole milliseconds, so that a limit in between two
/// milliseconds still lets every earlier row through.
pub(crate) fn ceil_to_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = truncate_to_millis(t);
    if floor == t {
        t
    } else {
        // Within the last millisecond chrono can represent: `t` itself.
        floor
            .checked_add_signed(TimeDelta::milliseconds(1))
            .unwrap_or(t)
    }
}

/// End `U` of the window that starts at `start`:
/// `U = max(T, min(T + window, now - safety, limit))`, in whole milliseconds.
pub(crate) fn next_window_end(
    start: DateTime<Utc>,
    window: Duration,
    now: DateTime<Utc>,
    safety: Duration,
    limit: Option<DateTime<Utc>>,
) -> DateTime<Utc> {
    let by_size = plus(start, window);
    let by_safety = minus(now, safety);
    let mut end = by_size.min(by_safety);
    if let Some(limit) = limit {
        end = end.min(limit);
    }
    truncate_to_millis(end.max(start))
}

/// Number of 100 ns intervals between the Gregorian epoch (1582-10-15) and the Unix epoch.
const GREGORIAN_TO_UNIX_100NS: u64 = 0x01B2_1DD2_1381_4000;

/// The 60-bit timestamp of a version 1 UUID, in 100 ns units since 1582-10-15.
fn uuid_ticks(u: &Uuid) -> u64 {
    let v = u.as_u128();
    let msb = (v >> 64) as u64;
    let time_low = msb >> 32;
    let time_mid = (msb >> 16) & 0xFFFF;
    let time_hi = msb & 0x0FFF;
    (time_hi << 48) | (time_mid << 32) | time_low
}

/// The write time of a `cdc$time` timeuuid as microseconds since the Unix epoch.
pub(crate) fn timeuuid_micros(u: &Uuid) -> i64 {
    let ticks = uuid_ticks(u) as i128 - GREGORIAN_TO_UNIX_100NS as i128;
    (ticks.div_euclid(10)) as i64
}

/// The write time of a `cdc$time` timeuuid as a point in time.
pub(crate) fn timeuuid_to_datetime(u: &Uuid) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(timeuuid_micros(u)).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The position of a log row within its stream: `(cdc$time, cdc$batch_seq_no)` in Scylla's
/// clustering order (timeuuids compare by time, then by their low 8 bytes as signed bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ChangeKey {
    ticks: u64,
    low: u64,
    seq: i32,
}

impl ChangeKey {
    /// The least key of the rows with `cdc$time >= minTimeuuid(t)` (`t` in whole
    /// milliseconds, as window bounds are): every row of a window `[.., t)` is before it.
    pub(crate) fn first_at(t: DateTime<Utc>) -> Self {
        let micros = i128::from(t.timestamp_micros());
        let ticks = (micros * 10 + i128::from(GREGORIAN_TO_UNIX_100NS)).clamp(0, (1 << 60) - 1);
        Self {
            ticks: ticks as u64,
            // minTimeuuid's low bytes are 0x80 each: 0 once flipped as `new` flips them.
            low: 0,
            seq: i32::MIN,
        }
    }

    /// Whether both rows have the same `cdc$time` (are rows of one change, in one stream).
    pub(crate) fn same_time(&self, other: &Self) -> bool {
        self.ticks == other.ticks && self.low == other.low
    }

    /// The key of the row with this `cdc$time` and `cdc$batch_seq_no`.
    pub(crate) fn new(time: &Uuid, batch_seq_no: i32) -> Self {
        let low = (time.as_u128() as u64) ^ 0x8080_8080_8080_8080;
        Self {
            ticks: uuid_ticks(time),
            low,
            seq: batch_seq_no,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn ms(v: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(v).unwrap()
    }

    #[test]
    fn the_first_key_at_a_time_is_after_every_earlier_row_and_before_every_later_one() {
        let t = ms(1_700_000_000_123);
        let at = |micros: i64, low: u64, seq: i32| ChangeKey::new(&timeuuid(micros, low), seq);
        let first = ChangeKey::first_at(t);
        let micros = t.timestamp_micros();
        for low in [0, 0x7f7f_7f7f_7f7f_7f7f, 0x8080_8080_8080_8080, u64::MAX] {
            assert!(at(micros - 1, low, i32::MAX) < first);
            assert!(at(micros, low, i32::MIN) >= first);
            assert!(at(micros, low, 0) > first);
        }
    }

    #[test]
    fn window_is_capped_by_size_safety_and_limit() {
        let w = Duration::from_secs(60);
        let s = Duration::from_secs(30);
        // Far behind: full window.
        assert_eq!(
            next_window_end(ms(0), w, ms(1_000_000), s, None),
            ms(60_000)
        );
        // Close to now: capped by now - safety.
        assert_eq!(next_window_end(ms(0), w, ms(40_000), s, None), ms(10_000));
        // now - safety before start: empty window.
        assert_eq!(
            next_window_end(ms(50_000), w, ms(40_000), s, None),
            ms(50_000)
        );
        // Limit (next generation or end) caps it.
        assert_eq!(
            next_window_end(ms(0), w, ms(1_000_000), s, Some(ms(5_000))),
            ms(5_000)
        );
        // Limit before start: empty.
        assert_eq!(
            next_window_end(ms(10_000), w, ms(1_000_000), s, Some(ms(5_000))),
            ms(10_000)
        );
    }

    #[test]
    fn window_end_is_whole_millis_and_never_overflows() {
        let start = DateTime::from_timestamp_micros(1_500).unwrap();
        let end = next_window_end(
            start,
            Duration::from_micros(10_700),
            ms(1_000_000),
            Duration::ZERO,
            None,
        );
        assert_eq!(end, ms(12));
        let huge = next_window_end(ms(0), Duration::MAX, ms(5), Duration::MAX, None);
        assert_eq!(huge, ms(0));
    }

    /// A v1 timeuuid with the given microsecond time and low 8 bytes.
    pub(crate) fn timeuuid(micros: i64, low: u64) -> Uuid {
        let ticks = (micros as u64) * 10 + GREGORIAN_TO_UNIX_100NS;
        let time_low = ticks & 0xFFFF_FFFF;
        let time_mid = (ticks >> 32) & 0xFFFF;
        let time_hi = ((ticks >> 48) & 0x0FFF) | 0x1000;
        let msb = (time_low << 32) | (time_mid << 16) | time_hi;
        Uuid::from_u128(((msb as u128) << 64) | low as u128)
    }

    #[test]
    fn timeuuid_time_roundtrip() {
        let u = timeuuid(1_700_000_000_123_456, 0x1234);
        assert_eq!(u.get_version_num(), 1);
        assert_eq!(timeuuid_micros(&u), 1_700_000_000_123_456);
        assert_eq!(
            timeuuid_to_datetime(&u).timestamp_micros(),
            1_700_000_000_123_456
        );
    }

    #[test]
    fn change_key_orders_like_scylla() {
        let a = ChangeKey::new(&timeuuid(10, 0xFF00_0000_0000_0000), 5);
        let b = ChangeKey::new(&timeuuid(10, 0x0100_0000_0000_0000), 0);
        // 0xFF is -1 as a signed byte, so it sorts before 0x01.
        assert!(a < b);
        let c = ChangeKey::new(&timeuuid(11, 0xFF00_0000_0000_0000), 0);
        assert!(b < c);
        let d = ChangeKey::new(&timeuuid(10, 0x0100_0000_0000_0000), 1);
        assert!(b < d && d < c);
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let clock = TokioClock::starting_at(ms(1_000));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(clock.now(), ms(6_000));
    }

    #[test]
    fn ceil_millis_at_the_end_of_time() {
        let max = DateTime::<Utc>::MAX_UTC;
        assert!(ceil_to_millis(max) >= truncate_to_millis(max));
    }

    #[test]
    fn ceil_millis() {
        let t = DateTime::from_timestamp_micros(1_500).unwrap();
        assert_eq!(ceil_to_millis(t), ms(2));
        assert_eq!(ceil_to_millis(ms(7)), ms(7));
    }
}
