//! Decoding of literal token text: quoted strings and identifiers, hex blobs and durations.
//!
//! The lexer only finds where a literal ends; these functions turn its text into a value and
//! report malformed or out-of-range literals as plain messages (the parser adds the position).

use super::ast::DurationLiteral;

/// Resolves the doubled `quote` escapes of the text between a literal's quotes
/// (`it''s` -> `it's`). Borrows nothing: the AST owns its strings.
pub(crate) fn unescape_quoted(inner: &str, quote: char) -> String {
    let mut doubled = [0u8; 4];
    let doubled_quote = quote.encode_utf8(&mut doubled);
    let mut pattern = String::with_capacity(2);
    pattern.push_str(doubled_quote);
    pattern.push_str(doubled_quote);
    if inner.contains(pattern.as_str()) {
        inner.replace(pattern.as_str(), doubled_quote)
    } else {
        inner.to_owned()
    }
}

/// Decodes the hex digits of a blob constant (the text after `0x`, any case).
pub(crate) fn decode_hex(digits: &str) -> Result<Vec<u8>, String> {
    if !digits.len().is_multiple_of(2) {
        return Err(format!(
            "invalid blob constant 0x{digits}: a hex string must have an even number of digits"
        ));
    }
    let bytes = digits.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 2);
    for pair in bytes.chunks_exact(2) {
        let (Some(hi), Some(lo)) = (
            pair.first().and_then(|b| hex_value(*b)),
            pair.get(1).and_then(|b| hex_value(*b)),
        ) else {
            return Err(format!("invalid blob constant 0x{digits}"));
        };
        out.push(hi << 4 | lo);
    }
    Ok(out)
}

/// The value of one hex digit.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Units of the compact duration form, in the only order they may appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    /// `y`
    Years,
    /// `mo`
    Months,
    /// `w`
    Weeks,
    /// `d`
    Days,
    /// `h`
    Hours,
    /// `m`
    Minutes,
    /// `s`
    Seconds,
    /// `ms`
    Millis,
    /// `us` / `µs`
    Micros,
    /// `ns`
    Nanos,
}

impl Unit {
    /// Parses a unit suffix (case-insensitive).
    fn parse(s: &str) -> Option<Unit> {
        Some(match s.to_ascii_lowercase().as_str() {
            "y" => Unit::Years,
            "mo" => Unit::Months,
            "w" => Unit::Weeks,
            "d" => Unit::Days,
            "h" => Unit::Hours,
            "m" => Unit::Minutes,
            "s" => Unit::Seconds,
            "ms" => Unit::Millis,
            "us" | "µs" => Unit::Micros,
            "ns" => Unit::Nanos,
            _ => return None,
        })
    }

    /// The unit's name in error messages.
    fn name(self) -> &'static str {
        match self {
            Unit::Years => "years",
            Unit::Months => "months",
            Unit::Weeks => "weeks",
            Unit::Days => "days",
            Unit::Hours => "hours",
            Unit::Minutes => "minutes",
            Unit::Seconds => "seconds",
            Unit::Millis => "milliseconds",
            Unit::Micros => "microseconds",
            Unit::Nanos => "nanoseconds",
        }
    }
}

/// Accumulates duration components with overflow checks.
#[derive(Default)]
struct DurationBuilder {
    /// Months so far.
    months: i32,
    /// Days so far.
    days: i32,
    /// Nanoseconds so far.
    nanos: i64,
}

impl DurationBuilder {
    /// Adds `n` of `unit`.
    fn add(&mut self, n: u64, unit: Unit, text: &str) -> Result<(), String> {
        let overflow = |what: &str, max: String| {
            format!("invalid duration {text}: the total number of {what} must be at most {max}")
        };
        let add_months = |b: &mut Self, per: u64| {
            n.checked_mul(per)
                .and_then(|v| i32::try_from(v).ok())
                .and_then(|v| b.months.checked_add(v))
                .map(|v| b.months = v)
                .ok_or_else(|| overflow("months", i32::MAX.to_string()))
        };
        let add_days = |b: &mut Self, per: u64| {
            n.checked_mul(per)
                .and_then(|v| i32::try_from(v).ok())
                .and_then(|v| b.days.checked_add(v))
                .map(|v| b.days = v)
                .ok_or_else(|| overflow("days", i32::MAX.to_string()))
        };
        let add_nanos = |b: &mut Self, per: u64| {
            n.checked_mul(per)
                .and_then(|v| i64::try_from(v).ok())
                .and_then(|v| b.nanos.checked_add(v))
                .map(|v| b.nanos = v)
                .ok_or_else(|| overflow("nanoseconds", i64::MAX.to_string()))
        };
        match unit {
            Unit::Years => add_months(self, 12),
            Unit::Months => add_months(self, 1),
            Unit::Weeks => add_days(self, 7),
            Unit::Days => add_days(self, 1),
            Unit::Hours => add_nanos(self, 3_600_000_000_000),
            Unit::Minutes => add_nanos(self, 60_000_000_000),
            Unit::Seconds => add_nanos(self, 1_000_000_000),
            Unit::Millis => add_nanos(self, 1_000_000),
            Unit::Micros => add_nanos(self, 1_000),
            Unit::Nanos => add_nanos(self, 1),
        }
    }

    /// The accumulated duration.
    fn build(self) -> DurationLiteral {
        DurationLiteral {
            months: self.months,
            days: self.days,
            nanoseconds: self.nanos,
        }
    }
}

/// Parses a decimal number of a duration component.
fn component(digits: &str, text: &str) -> Result<u64, String> {
    digits
        .parse::<u64>()
        .map_err(|_| format!("invalid duration {text}: component {digits} is too large"))
}

/// Parses a duration constant without sign: the compact form (`1h30m`, `12mo3d`, `2µs`) or
/// one of the ISO 8601 forms (`P1Y2M3DT4H5M6S`, `P2W`, `P0001-02-03T04:05:06`).
pub(crate) fn parse_duration(text: &str) -> Result<DurationLiteral, String> {
    match text.as_bytes().first() {
        Some(b'p' | b'P') => parse_iso_duration(text),
        Some(b'0'..=b'9') => parse_compact_duration(text),
        _ => Err(format!("invalid duration {text}")),
    }
}

/// Parses the compact form: one or more `<digits><unit>`, units in decreasing size, each at
/// most once.
fn parse_compact_duration(text: &str) -> Result<DurationLiteral, String> {
    let mut builder = DurationBuilder::default();
    let mut last: Option<Unit> = None;
    let mut rest = text;
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (digits, after) = rest.split_at(digits_end);
        if digits.is_empty() {
            return Err(format!("invalid duration {text}"));
        }
        let unit_end = after
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(after.len());
        let (unit_text, next) = after.split_at(unit_end);
        let Some(unit) = Unit::parse(unit_text) else {
            return Err(if unit_text.is_empty() {
                format!("invalid duration {text}: the last number has no unit")
            } else {
                format!("invalid duration {text}: unknown unit '{unit_text}'")
            });
        };
        if let Some(prev) = last {
            if prev == unit {
                return Err(format!(
                    "invalid duration {text}: the {} are specified more than once",
                    unit.name()
                ));
            }
            if prev > unit {
                return Err(format!(
                    "invalid duration {text}: the {} are specified in an invalid order",
                    unit.name()
                ));
            }
        }
        last = Some(unit);
        builder.add(component(digits, text)?, unit, text)?;
        rest = next;
    }
    Ok(builder.build())
}

/// Parses the ISO 8601 forms (after checking the leading `P`).
fn parse_iso_duration(text: &str) -> Result<DurationLiteral, String> {
    let body = text.get(1..).unwrap_or("");
    if let Some(d) = parse_iso_alternative(body, text)? {
        return Ok(d);
    }
    let invalid = || format!("invalid duration {text}");
    let mut builder = DurationBuilder::default();
    let upper = body.to_ascii_uppercase();
    // `PnW` stands alone.
    if let Some(weeks) = upper.strip_suffix('W') {
        if !weeks.is_empty() && weeks.bytes().all(|b| b.is_ascii_digit()) {
            builder.add(component(weeks, text)?, Unit::Weeks, text)?;
            return Ok(builder.build());
        }
        return Err(invalid());
    }
    let (date, time) = match upper.split_once('T') {
        Some((d, t)) => {
            if t.is_empty() {
                return Err(invalid());
            }
            (d, Some(t))
        }
        None => (upper.as_str(), None),
    };
    let mut any = false;
    let mut read = |part: &str, units: &[(char, Unit)]| -> Result<(), String> {
        let mut rest = part;
        let mut next_unit = 0;
        while !rest.is_empty() {
            let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
            let (digits, after) = rest.split_at(digits_end);
            let mut chars = after.chars();
            let (Some(designator), false) = (chars.next(), digits.is_empty()) else {
                return Err(invalid());
            };
            let Some(pos) = units
                .iter()
                .skip(next_unit)
                .position(|(c, _)| *c == designator)
            else {
                return Err(invalid());
            };
            let (_, unit) = units.get(next_unit + pos).copied().ok_or_else(invalid)?;
            builder.add(component(digits, text)?, unit, text)?;
            any = true;
            next_unit += pos + 1;
            rest = chars.as_str();
        }
        Ok(())
    };
    read(
        date,
        &[('Y', Unit::Years), ('M', Unit::Months), ('D', Unit::Days)],
    )?;
    if let Some(time) = time {
        read(
            time,
            &[
                ('H', Unit::Hours),
                ('M', Unit::Minutes),
                ('S', Unit::Seconds),
            ],
        )?;
    }
    if !any {
        return Err(invalid());
    }
    Ok(builder.build())
}

/// Parses the alternative ISO form `YYYY-MM-DDThh:mm:ss` (the text after `P`); `Ok(None)`
/// when `body` does not have that shape.
fn parse_iso_alternative(body: &str, text: &str) -> Result<Option<DurationLiteral>, String> {
    if !is_iso_alternative_body(body.as_bytes()) {
        return Ok(None);
    }
    let field = |range: std::ops::Range<usize>| component(body.get(range).unwrap_or(""), text);
    let mut builder = DurationBuilder::default();
    builder.add(field(0..4)?, Unit::Years, text)?;
    builder.add(field(5..7)?, Unit::Months, text)?;
    builder.add(field(8..10)?, Unit::Days, text)?;
    builder.add(field(11..13)?, Unit::Hours, text)?;
    builder.add(field(14..16)?, Unit::Minutes, text)?;
    builder.add(field(17..19)?, Unit::Seconds, text)?;
    Ok(Some(builder.build()))
}

/// Whether `body` is exactly `dddd-dd-ddTdd:dd:dd` (`T` in any case).
pub(crate) fn is_iso_alternative_body(body: &[u8]) -> bool {
    const SHAPE: &[u8; 19] = b"0000-00-00T00:00:00";
    body.len() == SHAPE.len()
        && body.iter().zip(SHAPE.iter()).all(|(b, s)| match s {
            b'0' => b.is_ascii_digit(),
            b'T' => b.eq_ignore_ascii_case(&b'T'),
            other => b == other,
        })
}

/// Whether an identifier-shaped word is an ISO 8601 duration (`P1D`, `pt2h`, `P3W`): such
/// words are duration constants where a value is expected.
pub(crate) fn is_iso_duration_word(word: &str) -> bool {
    matches!(word.as_bytes().first(), Some(b'p' | b'P'))
        && word.len() > 1
        && parse_iso_duration(word).is_ok()
}

/// Negates every component of a duration (for `-1h`).
pub(crate) fn negate_duration(d: DurationLiteral) -> DurationLiteral {
    // Components are parsed non-negative and bounded by the type's maximum, so negation
    // cannot overflow; saturate anyway rather than trust that.
    DurationLiteral {
        months: d.months.saturating_neg(),
        days: d.days.saturating_neg(),
        nanoseconds: d.nanoseconds.saturating_neg(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duration from its three components.
    fn dur(months: i32, days: i32, nanoseconds: i64) -> DurationLiteral {
        DurationLiteral {
            months,
            days,
            nanoseconds,
        }
    }

    const HOUR: i64 = 3_600_000_000_000;
    const MINUTE: i64 = 60_000_000_000;
    const SECOND: i64 = 1_000_000_000;

    #[test]
    fn unescapes_doubled_quotes() {
        assert_eq!(unescape_quoted("it''s", '\''), "it's");
        assert_eq!(unescape_quoted("''''", '\''), "''");
        assert_eq!(unescape_quoted("a\"\"b", '"'), "a\"b");
        assert_eq!(unescape_quoted("plain", '"'), "plain");
    }

    #[test]
    fn decodes_hex_in_any_case() {
        assert_eq!(decode_hex("CAFE").unwrap(), vec![0xca, 0xfe]);
        assert_eq!(decode_hex("cAfE01").unwrap(), vec![0xca, 0xfe, 0x01]);
        assert_eq!(decode_hex("").unwrap(), Vec::<u8>::new());
        assert!(decode_hex("abc").unwrap_err().contains("even"));
        assert!(decode_hex("zz").is_err());
    }

    #[test]
    fn parses_compact_durations() {
        assert_eq!(
            parse_duration("1h30m").unwrap(),
            dur(0, 0, HOUR + 30 * MINUTE)
        );
        assert_eq!(parse_duration("12mo3d").unwrap(), dur(12, 3, 0));
        assert_eq!(parse_duration("1y2mo").unwrap(), dur(14, 0, 0));
        assert_eq!(parse_duration("2w1d").unwrap(), dur(0, 15, 0));
        assert_eq!(parse_duration("2us").unwrap(), dur(0, 0, 2_000));
        assert_eq!(parse_duration("2µs").unwrap(), dur(0, 0, 2_000));
        assert_eq!(parse_duration("5ns").unwrap(), dur(0, 0, 5));
        assert_eq!(parse_duration("30000ms").unwrap(), dur(0, 0, 30 * SECOND));
        assert_eq!(
            parse_duration("1H30M").unwrap(),
            dur(0, 0, HOUR + 30 * MINUTE)
        );
        assert_eq!(parse_duration("1MO").unwrap(), dur(1, 0, 0));
    }

    #[test]
    fn rejects_bad_compact_durations() {
        assert!(parse_duration("1m1h").unwrap_err().contains("order"));
        assert!(
            parse_duration("1h1h")
                .unwrap_err()
                .contains("more than once")
        );
        assert!(parse_duration("1x").unwrap_err().contains("unit"));
        assert!(parse_duration("1h3").unwrap_err().contains("no unit"));
        assert!(
            parse_duration("99999999999y")
                .unwrap_err()
                .contains("months")
        );
        assert!(
            parse_duration("99999999999999999999h")
                .unwrap_err()
                .contains("too large")
        );
        assert!(
            parse_duration("9999999999h")
                .unwrap_err()
                .contains("nanoseconds")
        );
    }

    #[test]
    fn parses_iso_durations() {
        assert_eq!(parse_duration("P1DT2H").unwrap(), dur(0, 1, 2 * HOUR));
        assert_eq!(parse_duration("P2W").unwrap(), dur(0, 14, 0));
        assert_eq!(
            parse_duration("P1Y2M3DT4H5M6S").unwrap(),
            dur(14, 3, 4 * HOUR + 5 * MINUTE + 6 * SECOND)
        );
        assert_eq!(parse_duration("pt5m").unwrap(), dur(0, 0, 5 * MINUTE));
        assert_eq!(parse_duration("P3M").unwrap(), dur(3, 0, 0));
        assert_eq!(
            parse_duration("P0001-02-03T04:05:06").unwrap(),
            dur(14, 3, 4 * HOUR + 5 * MINUTE + 6 * SECOND)
        );
    }

    #[test]
    fn rejects_bad_iso_durations() {
        for bad in [
            "P", "PT", "P1", "P1DT", "PW", "P1D2Y", "P1H", "PT1D", "P1W2D", "Px",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
        assert!(is_iso_duration_word("P1D"));
        assert!(is_iso_duration_word("pt2h"));
        assert!(!is_iso_duration_word("pk"));
        assert!(!is_iso_duration_word("p"));
        assert!(!is_iso_duration_word("position"));
    }

    #[test]
    fn displays_durations_compactly() {
        assert_eq!(
            dur(14, 3, HOUR + 30 * MINUTE + 5).to_string(),
            "1y2mo3d1h30m5ns"
        );
        assert_eq!(negate_duration(dur(0, 0, HOUR)).to_string(), "-1h");
        assert_eq!(dur(0, 0, 0).to_string(), "0s");
        assert_eq!(dur(0, 0, 30 * SECOND).to_string(), "30s");
    }
}
