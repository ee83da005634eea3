//! Text forms of `date`, `timestamp` and `time` values, parsed as ScyllaDB parses them
//! (`types/types.cc`: `simple_date_type_impl::from_string_view`, `timestamp_from_string`,
//! `time_type_impl::from_string_view`), quirks included:
//!
//! - a date is `[-]y-m-d` with any digit counts, computed arithmetically without
//!   validation (`utils/date.h`, `year_month_day::to_days`): `2023-02-29` is 2023-03-01,
//!   months and days are truncated to a byte; or digits, the raw value (epoch at 2^31);
//! - a timestamp is digits (ms), or `yyyy-m-d[( |t)h:m[:s[.fff]]]` whose date boost's
//!   gregorian calendar validates (years 1400 to 9999, real days), whose time of day is not
//!   bounded, followed by nothing (the server's zone: UTC here), `±hh[[:]mm]`, or
//!   `z`/`utc`/`gmt` after spaces;
//! - a time is `h:m:s[.n]`, each part read by `std::stol` (leading spaces and a sign
//!   allowed, trailing characters ignored), bounded, with at most 9 fraction digits. A part
//!   without digits makes `std::stol` throw, which ScyllaDB answers as a server error.

/// Why a text is not a value of the type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// ScyllaDB's `marshal_exception`: answered as InvalidRequest.
    Invalid(String),
    /// A C++ library exception ScyllaDB does not catch (`std::stol`'s
    /// `invalid_argument` / `out_of_range`): answered as a ServerError.
    Server(String),
}

impl ParseError {
    fn invalid(message: impl Into<String>) -> ParseError {
        ParseError::Invalid(message.into())
    }
}

/// `std::from_chars` of a whole string as a base-10 `i64`: `Some(Ok)` when every character
/// was read, `Some(Err)` when a number was read but characters follow, `None` when no
/// number could be read (or it overflows).
fn from_chars_i64(s: &str) -> Option<Result<i64, ()>> {
    let b = s.as_bytes();
    let start = usize::from(b.first() == Some(&b'-'));
    let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let end = start + digits;
    let v: i64 = s[..end].parse().ok()?;
    Some(if end == s.len() { Ok(v) } else { Err(()) })
}

/// Whether a string is one or more ASCII digits.
fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// Days since 1970-01-01 of a civil date, with Howard Hinnant's algorithm and no
/// validation (what `utils/date.h` computes for any month and day).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses a `date` text into its wire value (days since the epoch plus 2^31).
pub(crate) fn parse_date(s: &str) -> Result<u32, ParseError> {
    match from_chars_i64(s) {
        Some(Err(())) => {
            // `^(-?\d+)-(\d+)-(\d+)`, matched against the whole text.
            let coerce = || {
                ParseError::invalid(format!("Unable to coerce '{s}' to a formatted date (long)"))
            };
            let (neg, rest) = match s.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, s),
            };
            let mut parts = rest.split('-');
            let (Some(y), Some(m), Some(d), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Err(coerce());
            };
            if !(all_digits(y) && all_digits(m) && all_digits(d)) {
                return Err(coerce());
            }
            let y: i64 = y.parse().map_err(|_| coerce())?;
            let y = if neg { -y } else { y };
            // `date::month` and `date::day` hold an unsigned char.
            let m: u32 = m.parse().map_err(|_| coerce())?;
            let d: u32 = d.parse().map_err(|_| coerce())?;
            let days = days_from_civil(y, m & 0xFF, d & 0xFF);
            if days < i64::from(i32::MIN) {
                return Err(ParseError::invalid(format!(
                    "Input date {s} is less than min supported date -5877641-06-23"
                )));
            }
            if days > i64::from(i32::MAX) {
                return Err(ParseError::invalid(format!(
                    "Input date {s} is greater than max supported date 5881580-07-11"
                )));
            }
            Ok((days + (1i64 << 31)) as u32)
        }
        Some(Ok(v)) => u32::try_from(v).map_err(|_| {
            ParseError::invalid(format!("Unable to make unsigned int (for date) from {v}"))
        }),
        None => Err(ParseError::invalid(format!(
            "Unable to make unsigned int (for date) from {s}"
        ))),
    }
}

/// Whether a year is a leap year of the Gregorian calendar.
fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// Reads ASCII digits at the start of `s`: (value text, rest).
fn take_digits(s: &str) -> (&str, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    s.split_at(n)
}

/// A timestamp text split into its parts (digits still as text), as Scylla's
/// `^(\d{4})-(\d+)-(\d+)([ tT](\d+):(\d+)(:(\d+)(\.(\d+))?)?)?` matches it at the start;
/// the rest of the text is the zone.
struct TimestampText<'a> {
    year: &'a str,
    month: &'a str,
    day: &'a str,
    time: Option<TimeText<'a>>,
    zone: &'a str,
}

/// The time-of-day digits of a timestamp text: hours, minutes, and the seconds with
/// their optional fraction.
struct TimeText<'a> {
    hours: &'a str,
    minutes: &'a str,
    seconds: Option<(&'a str, Option<&'a str>)>,
}

/// Parses a `timestamp` text into milliseconds since the epoch.
pub(crate) fn parse_timestamp(s: &str) -> Result<i64, ParseError> {
    let wrap = |inner: String| ParseError::invalid(format!("unable to parse date '{s}': {inner}"));
    if let Some(Ok(v)) = from_chars_i64(s) {
        return Ok(v);
    }
    let lower = s.to_ascii_lowercase();
    let Some(text) = TimestampText::split(&lower) else {
        return Err(wrap(format!("Unable to parse timestamp from '{lower}'")));
    };
    // `lexical_cast<int>` of each part, then `boost::gregorian::date` (validated).
    let (y, m, d) = (
        lexical_int(text.year).map_err(wrap)?,
        lexical_int(text.month).map_err(wrap)?,
        lexical_int(text.day).map_err(wrap)?,
    );
    let mut ms = date_ms(y, m, d).map_err(wrap)?;
    if let Some(time) = &text.time {
        ms += time.millis().map_err(wrap)?;
    }
    in_zone(ms, text.zone).map_err(wrap)
}

impl<'a> TimestampText<'a> {
    /// Splits a lowercased timestamp text; `None` when its start does not match.
    fn split(lower: &'a str) -> Option<TimestampText<'a>> {
        let b = lower.as_bytes();
        if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
            return None;
        }
        let year = &lower[..4];
        let (month, rest) = take_digits(&lower[5..]);
        let rest = rest.strip_prefix('-').filter(|_| !month.is_empty())?;
        let (day, rest) = take_digits(rest);
        if day.is_empty() {
            return None;
        }
        let (time, zone) = TimeText::split(rest);
        Some(TimestampText {
            year,
            month,
            day,
            time,
            zone,
        })
    }
}

impl<'a> TimeText<'a> {
    /// The optional time at the start of `rest`: all of `[ t]h:m` or nothing; and what
    /// follows it.
    fn split(rest: &'a str) -> (Option<TimeText<'a>>, &'a str) {
        let Some(after) = rest.strip_prefix([' ', 't']) else {
            return (None, rest);
        };
        let (h, r) = take_digits(after);
        let Some(r) = r.strip_prefix(':').filter(|_| !h.is_empty()) else {
            return (None, rest);
        };
        let (mi, r) = take_digits(r);
        if mi.is_empty() {
            return (None, rest);
        }
        let mut r = r;
        let mut sec = None;
        if let Some(r2) = r.strip_prefix(':') {
            let (sc, r3) = take_digits(r2);
            if !sc.is_empty() {
                r = r3;
                let mut frac = None;
                if let Some(r4) = r3.strip_prefix('.') {
                    let (f, r5) = take_digits(r4);
                    if !f.is_empty() {
                        frac = Some(f);
                        r = r5;
                    }
                }
                sec = Some((sc, frac));
            }
        }
        let time = TimeText {
            hours: h,
            minutes: mi,
            seconds: sec,
        };
        (Some(time), r)
    }

    /// The milliseconds since midnight; a fraction of more than 3 digits is refused.
    fn millis(&self) -> Result<i64, String> {
        let (h, mi) = (lexical_int(self.hours)?, lexical_int(self.minutes)?);
        let (sc, frac) = match self.seconds {
            Some((sc, frac)) => (lexical_int(sc)?, frac),
            None => (0, None),
        };
        let mut ms = ((h * 60 + mi) * 60 + sc) * 1000;
        if let Some(f) = frac {
            if f.len() > 3 {
                return Err(format!(
                    "Milliseconds length exceeds expected ({})",
                    f.len()
                ));
            }
            let mut v = lexical_int(f)?;
            for _ in f.len()..3 {
                v *= 10;
            }
            ms += v;
        }
        Ok(ms)
    }
}

/// `lexical_cast<int>` of a part of a timestamp text.
fn lexical_int(t: &str) -> Result<i64, String> {
    t.parse::<i32>().map(i64::from).map_err(|_| {
        "bad lexical cast: source type value could not be interpreted as target".into()
    })
}

/// The milliseconds since the epoch of midnight (UTC) of a date, validated as
/// `boost::gregorian::date` validates it.
fn date_ms(y: i64, m: i64, d: i64) -> Result<i64, String> {
    if !(1400..=9999).contains(&y) {
        return Err("Year is out of valid range: 1400..9999".into());
    }
    if !(1..=12).contains(&m) {
        return Err("Month number is out of range 1..12".into());
    }
    if !(1..=31).contains(&d) {
        return Err("Day of month value is out of range 1..31".into());
    }
    let month_days = match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if d > month_days {
        return Err("Day of month is not valid for year".into());
    }
    Ok(days_from_civil(y, m as u32, d as u32) * 86_400_000)
}

/// A local time `ms` in the zone `tz` (the rest of the lowercased text) as UTC.
fn in_zone(ms: i64, tz: &str) -> Result<i64, String> {
    if let Some(offset) = utc_offset(tz) {
        let minutes = offset.ok_or_else(|| "Cannot get UTC offset for a timestamp".to_string())?;
        return Ok(ms - minutes * 60_000);
    }
    let trimmed = tz.trim_matches(' ');
    if trimmed.is_empty() || matches!(trimmed, "z" | "utc" | "gmt") {
        // No zone: the server's local time, UTC for the embedded cluster.
        return Ok(ms);
    }
    Err(format!("Unable to parse timezone '{tz}'"))
}

/// A zone offset `[+-]\d{2}:?(\d{2})?` (the whole text): `None` when the text is not of
/// that form, `Some(None)` when it is but boost cannot read it as a time of day, else the
/// offset in minutes (east positive).
fn utc_offset(tz: &str) -> Option<Option<i64>> {
    let sign = match tz.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => return None,
    };
    let body = &tz[1..];
    let (hh, rest) = body.split_at(body.len().min(2));
    if hh.len() != 2 || !all_digits(hh) {
        return None;
    }
    let (colon, mm) = match rest.strip_prefix(':') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    if !(mm.is_empty() || mm.len() == 2 && all_digits(mm)) {
        return None;
    }
    if colon && mm.is_empty() {
        return Some(None);
    }
    let h: i64 = hh.parse().ok()?;
    let m: i64 = if mm.is_empty() { 0 } else { mm.parse().ok()? };
    if h > 23 || m > 59 {
        return Some(None);
    }
    Some(Some(sign * (h * 60 + m)))
}

/// `std::stol` of a string: leading whitespace, an optional sign, then digits up to the
/// first other character.
fn stol(s: &str) -> Result<i64, ParseError> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (digits, _) = take_digits(body);
    if digits.is_empty() {
        return Err(ParseError::Server("stol".into()));
    }
    let text = if neg {
        format!("-{digits}")
    } else {
        digits.to_string()
    };
    text.parse().map_err(|_| ParseError::Server("stol".into()))
}

/// Nanoseconds in a day.
const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// Parses a `time` text into nanoseconds since midnight.
pub(crate) fn parse_time(s: &str) -> Result<i64, ParseError> {
    let format_error = || ParseError::invalid("Timestamp format must be hh:mm:ss[.fffffffff]");
    let hours_end = s.find(':').ok_or_else(format_error)?;
    let hours = stol(&s[..hours_end])?;
    if !(0..24).contains(&hours) {
        return Err(ParseError::invalid(format!(
            "Hour out of bounds ({hours})."
        )));
    }
    let minutes_end = s[hours_end + 1..]
        .find(':')
        .map(|i| i + hours_end + 1)
        .ok_or_else(format_error)?;
    // ScyllaDB's substring lengths wrap around: each part is read to the end of the text.
    let minutes = stol(&s[hours_end + 1..])?;
    if !(0..60).contains(&minutes) {
        return Err(ParseError::invalid(format!(
            "Minute out of bounds ({minutes})."
        )));
    }
    let seconds_end = s[minutes_end + 1..]
        .find('.')
        .map_or(s.len(), |i| i + minutes_end + 1);
    let seconds = stol(&s[minutes_end + 1..])?;
    if !(0..60).contains(&seconds) {
        return Err(ParseError::invalid(format!(
            "Second out of bounds ({seconds})."
        )));
    }
    let mut nanos = 0i64;
    if seconds_end < s.len() {
        nanos = stol(&s[seconds_end + 1..])?;
        let nano_digits = s.len() - (seconds_end + 1);
        if nano_digits > 9 {
            return Err(ParseError::invalid(format!(
                "more than 9 nanosecond digits: {s}"
            )));
        }
        nanos = nanos.saturating_mul(10i64.pow(9 - nano_digits as u32));
        if !(0..1_000_000_000).contains(&nanos) {
            return Err(ParseError::invalid(format!(
                "Nanosecond out of bounds ({nanos})."
            )));
        }
    }
    let total = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000_000 + nanos;
    debug_assert!(total < NANOS_PER_DAY);
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> Result<i64, ParseError> {
        parse_date(s).map(|v| i64::from(v) - (1i64 << 31))
    }

    #[test]
    fn dates_are_computed_without_validation_as_scylla_does() {
        assert_eq!(date("1970-01-01"), Ok(0));
        assert_eq!(date("2024-02-29"), Ok(days_from_civil(2024, 2, 29)));
        // Not a day of 2023: the arithmetic runs on to March 1st.
        assert_eq!(date("2023-02-29"), date("2023-03-01"));
        assert_eq!(date("2023-02-29").unwrap(), 19417);
        assert_eq!(date("2023-04-31"), date("2023-05-01"));
        // Months and days are bytes.
        assert_eq!(date("2023-257-01"), date("2023-01-01"));
        assert_eq!(date("-5877641-06-23"), Ok(i64::from(i32::MIN)));
        assert_eq!(date("5881580-07-11"), Ok(i64::from(i32::MAX)));
        assert_eq!(parse_date("2147483648"), Ok(1 << 31));
        assert_eq!(parse_date("0"), Ok(0));
        for bad in [
            "-5877641-06-22",
            "5881580-07-12",
            "something",
            " 2023-01-01",
            "2023-01-01 ",
            "+2023-01-01",
            "2023-01",
            "2023-01-01-01",
            "2023-a-01",
            "-5",
            "4294967296",
        ] {
            assert!(
                matches!(parse_date(bad), Err(ParseError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn timestamps_follow_scylla_formats_and_boost_calendar() {
        let day = 1_435_881_600_000; // 2015-07-03
        for (text, ms) in [
            ("2015-07-03+0000", day),
            ("2015-07-03-00", day),
            ("2015-07-03 00:00+0000", day),
            ("2015-07-03 01:00:00+0000", day + 3_600_000),
            ("2015-7-3 1:2:3.123+0000", day + 3_723_123),
            ("2015-007-003 001:002:003.1+0000", day + 3_723_100),
            ("2015-07-03 12:30:00+1230", day),
            ("2015-07-03 12:00:00+12", day),
            ("2015-07-03 12:30:00+12:30", day),
            ("2015-07-02 23:00-0100", day),
            ("2015-07-03t00:00:00z", day),
            ("2015-07-03T00:00:00Z", day),
            ("2015-07-03 00:00:00 UTC", day),
            ("2015-07-03 00:00:00 gmt", day),
            ("2015-07-03", day),
            ("2015-07-02 24:00", day),
            ("1435881600000", day),
            ("-1000", -1000),
        ] {
            assert_eq!(parse_timestamp(text), Ok(ms), "{text}");
        }
        for bad in [
            "2023-02-29",
            "2015-13-01",
            "2015-00-01",
            "2015-04-31",
            "1399-12-31",
            "12015-01-01",
            "15-01-01",
            "2015-07-03 00:00:00.1234",
            "2015-07-03 00:00:00 +0000",
            "2015-07-03 00:00:00+02:",
            "2015-07-03 00:00:00+2500",
            "2015-07-03 00",
            "2015-07-03x",
            "+1000",
            "not a time",
            "",
        ] {
            assert!(
                matches!(parse_timestamp(bad), Err(ParseError::Invalid(_))),
                "{bad}: {:?}",
                parse_timestamp(bad)
            );
        }
    }

    #[test]
    fn times_are_read_with_stol() {
        assert_eq!(parse_time("08:12:54"), Ok(29_574_000_000_000));
        assert_eq!(parse_time("08:12:54.123456789"), Ok(29_574_123_456_789));
        assert_eq!(parse_time("08:12:54.1"), Ok(29_574_100_000_000));
        assert_eq!(
            parse_time("8:1:2"),
            Ok(((8 * 60 + 1) * 60 + 2) * 1_000_000_000)
        );
        assert_eq!(parse_time(" 8: 1:+2"), parse_time("8:1:2"));
        assert_eq!(parse_time("00:00:00"), Ok(0));
        for bad in [
            "24:00:00",
            "-1:00:00",
            "08:60:00",
            "08:00:60",
            "08:00",
            "1000",
            "08:00:00.1234567890",
            "08:00:00.-5",
        ] {
            assert!(
                matches!(parse_time(bad), Err(ParseError::Invalid(_))),
                "{bad}"
            );
        }
        // `std::stol` throws on a part without digits: ScyllaDB answers a server error.
        for bad in ["x:00:00", "08::00", "08:00:00.", ":00:00"] {
            assert!(
                matches!(parse_time(bad), Err(ParseError::Server(_))),
                "{bad}"
            );
        }
    }
}
