//! Version-1 time-based UUIDs (`timeuuid`) as Scylla builds, bounds and orders them.
//!
//! A timeuuid carries a 60-bit time in 100-ns units since 1582-10-15 (the Gregorian
//! reform); Scylla writes write timestamps (µs since the Unix epoch) into it as
//! `micros × 10 + 0x01B21DD213814000`, so the 100-ns digit is 0 unless a sub-microsecond
//! counter is added (list element keys). The low 64 bits are random with the IETF variant
//! bits `10`. [`compare`] is the `timeuuid` comparator: time first, then the low 8 bytes as
//! signed bytes.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::Rng;
use uuid::Uuid;

/// 100-ns intervals between 1582-10-15 and 1970-01-01.
pub const GREGORIAN_OFFSET: u64 = 0x01B2_1DD2_1381_4000;

/// The low 64 bits of the smallest timeuuid of a millisecond (each byte is the smallest
/// signed byte).
pub const MIN_LSB: u64 = 0x8080_8080_8080_8080;

/// The low 64 bits of the largest timeuuid of a millisecond (each byte is the largest signed
/// byte).
pub const MAX_LSB: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// Builds a version-1 UUID from its 60-bit time (100-ns units since 1582-10-15) and its low
/// 64 bits (taken as they are).
pub fn from_raw(time_100ns: u64, lsb: u64) -> Uuid {
    let t = time_100ns & 0x0fff_ffff_ffff_ffff;
    let time_low = t & 0xffff_ffff;
    let time_mid = (t >> 32) & 0xffff;
    let time_hi = (t >> 48) & 0x0fff;
    let msb = (time_low << 32) | (time_mid << 16) | 0x1000 | time_hi;
    Uuid::from_u64_pair(msb, lsb)
}

/// The 60-bit time of a UUID (100-ns units since 1582-10-15), whatever its version nibble.
pub fn raw_timestamp(u: &Uuid) -> u64 {
    let (msb, _) = u.as_u64_pair();
    let time_low = msb >> 32;
    let time_mid = (msb >> 16) & 0xffff;
    let time_hi = msb & 0x0fff;
    (time_hi << 48) | (time_mid << 32) | time_low
}

/// Random low 64 bits with the IETF variant (`10` in the two top bits), as Scylla ≥ 2026.1
/// writes into `cdc$time`.
pub fn random_lsb() -> u64 {
    let r: u64 = rand::thread_rng().r#gen();
    (r & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000
}

/// The timeuuid Scylla writes for a write timestamp: time `micros × 10 + offset` (100-ns digit
/// 0) and random low bits with the IETF variant.
pub fn from_micros(micros: i64) -> Uuid {
    from_raw(micros_to_raw(micros, 0), random_lsb())
}

/// Like [`from_micros`] with a sub-microsecond counter (0..=9) in the 100-ns digit, for list
/// element keys generated within one statement; `lsb` lets the caller keep one node part.
pub fn from_micros_with_counter(micros: i64, counter: u8, lsb: u64) -> Uuid {
    from_raw(micros_to_raw(micros, counter.min(9)), lsb)
}

fn micros_to_raw(micros: i64, sub: u8) -> u64 {
    (micros as i128 * 10 + i128::from(sub) + GREGORIAN_OFFSET as i128).clamp(0, (1 << 60) - 1)
        as u64
}

/// `minTimeuuid(ms)`: the smallest timeuuid of that millisecond.
pub fn min_timeuuid(ms: i64) -> Uuid {
    from_raw(micros_to_raw(ms.saturating_mul(1000), 0), MIN_LSB)
}

/// `maxTimeuuid(ms)`: the largest timeuuid of that millisecond.
pub fn max_timeuuid(ms: i64) -> Uuid {
    let raw = (i128::from(ms) + 1) * 10_000 + GREGORIAN_OFFSET as i128 - 1;
    from_raw(raw.clamp(0, (1 << 60) - 1) as u64, MAX_LSB)
}

/// Microseconds since the Unix epoch of a timeuuid (the 100-ns digit is dropped).
pub fn to_micros(u: &Uuid) -> i64 {
    let raw = i128::from(raw_timestamp(u)) - GREGORIAN_OFFSET as i128;
    raw.div_euclid(10) as i64
}

/// Milliseconds since the Unix epoch of a timeuuid (`toUnixTimestamp`), rounded down.
pub fn to_millis(u: &Uuid) -> i64 {
    to_micros(u).div_euclid(1000)
}

/// The `timeuuid` comparator: the 60-bit time (version nibble masked), then the low 8 bytes
/// compared as signed bytes (unsigned compare of `lsb ^ 0x8080808080808080`).
pub fn compare(a: &Uuid, b: &Uuid) -> Ordering {
    raw_timestamp(a)
        .cmp(&raw_timestamp(b))
        .then_with(|| (a.as_u64_pair().1 ^ MIN_LSB).cmp(&(b.as_u64_pair().1 ^ MIN_LSB)))
}

/// The last time (100-ns units) handed out by [`now`], so that it never repeats.
static LAST_NOW: AtomicU64 = AtomicU64::new(0);

/// Current wall-clock time in microseconds since the Unix epoch.
pub fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// `now()` / `currentTimeUUID()`: a timeuuid of the current time, strictly increasing within
/// the process (ties within one 100-ns tick move to the next tick).
pub fn now() -> Uuid {
    let wall = micros_to_raw(now_micros(), 0);
    let mut prev = LAST_NOW.load(AtomicOrdering::Relaxed);
    loop {
        let next = wall.max(prev + 1);
        match LAST_NOW.compare_exchange_weak(
            prev,
            next,
            AtomicOrdering::Relaxed,
            AtomicOrdering::Relaxed,
        ) {
            Ok(_) => return from_raw(next, random_lsb()),
            Err(actual) => prev = actual,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_round_trip_and_layout() {
        let micros = 1_700_000_000_123_456;
        let u = from_micros(micros);
        assert_eq!(u.get_version_num(), 1);
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(to_micros(&u), micros);
        assert_eq!(to_millis(&u), micros / 1000);
        assert_eq!(raw_timestamp(&u), micros as u64 * 10 + GREGORIAN_OFFSET);
        // Same time as the uuid crate computes for a v1 UUID.
        let (secs, nanos) = u.get_timestamp().expect("v1").to_unix();
        assert_eq!(secs as i64 * 1_000_000 + i64::from(nanos / 1000), micros);
    }

    #[test]
    fn counter_goes_into_the_100ns_digit() {
        let a = from_micros_with_counter(5_000_000, 0, 0);
        let b = from_micros_with_counter(5_000_000, 3, 0);
        assert_eq!(raw_timestamp(&b) - raw_timestamp(&a), 3);
        assert_eq!(to_micros(&b), 5_000_000);
        assert_eq!(compare(&a, &b), Ordering::Less);
    }

    #[test]
    fn min_and_max_bound_every_timeuuid_of_the_millisecond() {
        let ms = 1_650_000_000_000;
        let (lo, hi) = (min_timeuuid(ms), max_timeuuid(ms));
        assert_eq!(lo.as_u64_pair().1, MIN_LSB);
        assert_eq!(hi.as_u64_pair().1, MAX_LSB);
        for micros in [ms * 1000, ms * 1000 + 999] {
            for lsb in [0, MIN_LSB, MAX_LSB, u64::MAX, random_lsb()] {
                let u = from_raw(micros_to_raw(micros, 0), lsb);
                assert_ne!(compare(&lo, &u), Ordering::Greater);
                assert_ne!(compare(&u, &hi), Ordering::Greater);
            }
        }
        assert_eq!(compare(&hi, &min_timeuuid(ms + 1)), Ordering::Less);
        assert_eq!(to_millis(&hi), ms);
    }

    #[test]
    fn lsb_compares_as_signed_bytes() {
        let t = micros_to_raw(1, 0);
        let a = from_raw(t, 0x7f00_0000_0000_0000);
        let b = from_raw(t, 0x8000_0000_0000_0000);
        // 0x80 is -128 as a signed byte: smaller than 0x7f.
        assert_eq!(compare(&b, &a), Ordering::Less);
        let c = from_raw(t, 0x0000_0000_0000_00ff);
        let d = from_raw(t, 0x0000_0000_0000_0001);
        assert_eq!(compare(&c, &d), Ordering::Less);
        // Time dominates.
        let e = from_raw(t + 1, MIN_LSB);
        assert_eq!(compare(&a, &e), Ordering::Less);
    }

    #[test]
    fn now_is_strictly_increasing() {
        let mut prev = now();
        for _ in 0..10_000 {
            let next = now();
            assert!(raw_timestamp(&next) > raw_timestamp(&prev));
            prev = next;
        }
    }

    #[test]
    fn pre_epoch_times_round_trip() {
        let u = from_micros(-1_000_001);
        assert_eq!(to_micros(&u), -1_000_001);
        assert_eq!(to_millis(&u), -1001);
    }
}
