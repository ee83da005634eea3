//! CQL values as text: [`cql_literal`] writes any [`CqlValue`] the way `cqlsh` would accept
//! it back (strings quoted with `''` escapes, blobs as `0x…`, timestamps as quoted RFC 3339,
//! durations as `1h30m`, collections with `[]`, `{}`, UDTs as `{field: value}`, tuples as
//! `(…)`), [`cql_identifier`] a column or table name, and the helpers below render single
//! kinds (decimals, varints, dates, times, timestamps, durations, blobs).
//!
//! Used for dead letters ([`crate::DeadLetterTable`]) and by the programs' output formats.

use std::fmt::Write as _;

use chrono::{DateTime, NaiveTime, SecondsFormat, TimeDelta, Utc};
use num_bigint::BigInt;
use scylla::value::{
    CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
};
use uuid::Uuid;

/// Whether `name` can be written without quotes: a lower-case letter or `_` first, then
/// lower-case letters, digits and `_`.
fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A CQL identifier as `cqlsh` writes it: bare when plain, otherwise double-quoted.
pub fn cql_identifier(name: &str) -> String {
    if is_plain_identifier(name) {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A value as a CQL literal.
pub fn cql_literal(value: &CqlValue) -> String {
    let mut out = String::new();
    write_cql(&mut out, value);
    out
}

/// Writes `s` as a CQL string literal (`'…'`, inner quotes doubled).
fn write_quoted(out: &mut String, s: &str) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}

/// Bytes as a CQL blob literal: `0x` and two lower-case hex digits per byte.
pub fn blob_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 + 2 * bytes.len());
    write_hex(&mut out, bytes);
    out
}

/// Writes bytes as a CQL blob literal (`0x…`).
fn write_hex(out: &mut String, bytes: &[u8]) {
    out.push_str("0x");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// Writes a float: `NaN`, `Infinity`, `-Infinity`, or its shortest round-trip form `debug`.
fn write_float(out: &mut String, v: f64, debug: String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        out.push_str(&debug);
    }
}

/// Writes items between `open` and `close`, comma-separated, `null` for missing ones.
fn write_seq<'a>(
    out: &mut String,
    open: char,
    close: char,
    items: impl Iterator<Item = Option<&'a CqlValue>>,
) {
    out.push(open);
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match item {
            Some(v) => write_cql(out, v),
            None => out.push_str("null"),
        }
    }
    out.push(close);
}

/// Writes a value as a CQL literal (see [`cql_literal`]).
fn write_cql(out: &mut String, value: &CqlValue) {
    match value {
        CqlValue::Ascii(s) | CqlValue::Text(s) => write_quoted(out, s),
        CqlValue::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        CqlValue::Blob(b) => write_hex(out, b),
        CqlValue::Counter(c) => {
            let _ = write!(out, "{}", c.0);
        }
        CqlValue::Decimal(d) => out.push_str(&decimal_string(d)),
        CqlValue::Date(d) => match date_string(*d) {
            Some(s) => write_quoted(out, &s),
            None => {
                let _ = write!(out, "{}", d.0);
            }
        },
        CqlValue::Double(v) => write_float(out, *v, format!("{v:?}")),
        CqlValue::Float(v) => write_float(out, f64::from(*v), format!("{v:?}")),
        CqlValue::Duration(d) => out.push_str(&duration_string(d)),
        CqlValue::Empty => out.push_str("<empty>"),
        CqlValue::Int(v) => {
            let _ = write!(out, "{v}");
        }
        CqlValue::BigInt(v) => {
            let _ = write!(out, "{v}");
        }
        CqlValue::SmallInt(v) => {
            let _ = write!(out, "{v}");
        }
        CqlValue::TinyInt(v) => {
            let _ = write!(out, "{v}");
        }
        CqlValue::Varint(v) => out.push_str(&varint_string(v)),
        CqlValue::Timestamp(t) => match timestamp_string(*t) {
            Some(s) => write_quoted(out, &s),
            None => {
                let _ = write!(out, "{}", t.0);
            }
        },
        CqlValue::Time(t) => match time_string(*t) {
            Some(s) => write_quoted(out, &s),
            None => {
                let _ = write!(out, "{}", t.0);
            }
        },
        CqlValue::Inet(ip) => write_quoted(out, &ip.to_string()),
        CqlValue::Uuid(u) => {
            let _ = write!(out, "{u}");
        }
        CqlValue::Timeuuid(u) => {
            let _ = write!(out, "{}", timeuuid(u));
        }
        CqlValue::List(items) | CqlValue::Vector(items) => {
            write_seq(out, '[', ']', items.iter().map(Some));
        }
        CqlValue::Set(items) => write_seq(out, '{', '}', items.iter().map(Some)),
        CqlValue::Tuple(items) => write_seq(out, '(', ')', items.iter().map(Option::as_ref)),
        CqlValue::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_cql(out, k);
                out.push_str(": ");
                write_cql(out, v);
            }
            out.push('}');
        }
        CqlValue::UserDefinedType { fields, .. } => {
            out.push('{');
            for (i, (name, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&cql_identifier(name));
                out.push_str(": ");
                match v {
                    Some(v) => write_cql(out, v),
                    None => out.push_str("null"),
                }
            }
            out.push('}');
        }
        // `CqlValue` is non-exhaustive: a kind added by a newer driver prints as its debug form.
        #[allow(unreachable_patterns)]
        other => {
            let _ = write!(out, "{other:?}");
        }
    }
}

/// The uuid of a timeuuid value.
pub fn timeuuid(t: &CqlTimeuuid) -> Uuid {
    Uuid::from_bytes(*t.as_bytes())
}

/// A varint in decimal.
pub fn varint_string(v: &CqlVarint) -> String {
    BigInt::from_signed_bytes_be(v.as_signed_bytes_be_slice()).to_string()
}

/// A decimal in plain notation (`-12.5`, `0.001`, `1200`), or with an exponent when the
/// scale is extreme (`5E-300`).
pub fn decimal_string(d: &CqlDecimal) -> String {
    let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
    let unscaled = BigInt::from_signed_bytes_be(bytes).to_string();
    let (sign, digits) = match unscaled.strip_prefix('-') {
        Some(rest) => ("-", rest.to_owned()),
        None => ("", unscaled),
    };
    if scale <= 0 {
        if scale < -32 {
            return format!("{sign}{digits}E{}", -i64::from(scale));
        }
        if digits == "0" {
            return "0".to_owned();
        }
        let zeros = usize::try_from(-i64::from(scale)).unwrap_or(0);
        return format!("{sign}{digits}{}", "0".repeat(zeros));
    }
    if scale > 64 {
        return format!("{sign}{digits}E-{scale}");
    }
    let scale = usize::try_from(scale).unwrap_or(0);
    let padded = if digits.len() <= scale {
        format!("{}{digits}", "0".repeat(scale + 1 - digits.len()))
    } else {
        digits
    };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{sign}{int}.{frac}")
}

/// A date as `YYYY-MM-DD`, if chrono can represent it.
pub fn date_string(d: CqlDate) -> Option<String> {
    let days = i64::from(d.0) - (1i64 << 31);
    DateTime::UNIX_EPOCH
        .date_naive()
        .checked_add_signed(TimeDelta::try_days(days)?)
        .map(|n| n.format("%Y-%m-%d").to_string())
}

/// A time of day as `HH:MM:SS.nnnnnnnnn`, if it is within a day.
pub fn time_string(t: CqlTime) -> Option<String> {
    let nanos = u64::try_from(t.0).ok()?;
    let secs = u32::try_from(nanos / 1_000_000_000).ok()?;
    let frac = u32::try_from(nanos % 1_000_000_000).ok()?;
    NaiveTime::from_num_seconds_from_midnight_opt(secs, frac)
        .map(|n| n.format("%H:%M:%S%.9f").to_string())
}

/// A timestamp as RFC 3339 with milliseconds, if chrono can represent it.
pub fn timestamp_string(t: CqlTimestamp) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(t.0)
        .map(|d| d.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// A duration as a CQL duration literal: `1y2mo3d4h5m6s7ms8us9ns` (zero units left out;
/// `0s` when all are zero; a leading `-` when negative).
pub fn duration_string(d: &CqlDuration) -> String {
    let negative = d.months < 0 || d.days < 0 || d.nanoseconds < 0;
    let months = i64::from(d.months).unsigned_abs();
    let days = i64::from(d.days).unsigned_abs();
    let mut nanos = d.nanoseconds.unsigned_abs();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut unit = |n: u64, name: &str| {
        if n > 0 {
            let _ = write!(out, "{n}{name}");
        }
    };
    unit(months / 12, "y");
    unit(months % 12, "mo");
    unit(days, "d");
    for (size, name) in [
        (3_600_000_000_000u64, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        unit(nanos / size, name);
        nanos %= size;
    }
    if out.is_empty() || out == "-" {
        return "0s".to_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::value::Counter;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn cql_literals_of_every_kind() {
        let timeuuid = "d2177dd0-eaa2-11de-a572-001b779c76e3";
        let cases = [
            (CqlValue::Ascii("a'b".into()), "'a''b'"),
            (CqlValue::Text("héllo".into()), "'héllo'"),
            (CqlValue::Boolean(false), "false"),
            (CqlValue::Blob(vec![0, 0xab, 0x10]), "0x00ab10"),
            (CqlValue::Counter(Counter(-5)), "-5"),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(
                    vec![0xff, 0x83],
                    1,
                )),
                "-12.5",
            ),
            (CqlValue::Date(CqlDate((1 << 31) + 1)), "'1970-01-02'"),
            (CqlValue::Double(f64::NAN), "NaN"),
            (CqlValue::Float(-1.5), "-1.5"),
            (
                CqlValue::Duration(CqlDuration {
                    months: 14,
                    days: 3,
                    nanoseconds: 3_600_000_000_001,
                }),
                "1y2mo3d1h1ns",
            ),
            (CqlValue::Int(-7), "-7"),
            (CqlValue::BigInt(1 << 40), "1099511627776"),
            (CqlValue::SmallInt(3), "3"),
            (CqlValue::TinyInt(-1), "-1"),
            (
                CqlValue::Varint(CqlVarint::from_signed_bytes_be(vec![0xff, 0x00])),
                "-256",
            ),
            (
                CqlValue::Timestamp(CqlTimestamp(1_500)),
                "'1970-01-01T00:00:01.500Z'",
            ),
            (
                CqlValue::Time(CqlTime(1_000_000_001)),
                "'00:00:01.000000001'",
            ),
            (
                CqlValue::Inet(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
                "'10.0.0.1'",
            ),
            (
                CqlValue::Timeuuid(CqlTimeuuid::from(Uuid::parse_str(timeuuid).unwrap())),
                timeuuid,
            ),
            (
                CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]),
                "[1, 2]",
            ),
            (CqlValue::Set(vec![CqlValue::Text("x".into())]), "{'x'}"),
            (
                CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]),
                "(1, null)",
            ),
            (
                CqlValue::Map(vec![(CqlValue::Text("k".into()), CqlValue::Int(1))]),
                "{'k': 1}",
            ),
            (
                CqlValue::UserDefinedType {
                    keyspace: "ks".into(),
                    name: "addr".into(),
                    fields: vec![
                        ("street".into(), Some(CqlValue::Text("Main".into()))),
                        ("Zip".into(), None),
                    ],
                },
                "{street: 'Main', \"Zip\": null}",
            ),
        ];
        for (value, literal) in cases {
            assert_eq!(cql_literal(&value), literal, "{value:?}");
        }
        assert_eq!(blob_hex(&[]), "0x");
    }

    #[test]
    fn identifiers() {
        assert_eq!(cql_identifier("abc_1"), "abc_1");
        assert_eq!(cql_identifier("Abc"), "\"Abc\"");
        assert_eq!(cql_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(cql_identifier("1a"), "\"1a\"");
        assert_eq!(cql_identifier(""), "\"\"");
    }

    #[test]
    fn decimals() {
        let d = |bytes: Vec<u8>, scale| {
            decimal_string(&CqlDecimal::from_signed_be_bytes_and_exponent(bytes, scale))
        };
        assert_eq!(d(vec![0], 2), "0.00");
        assert_eq!(d(vec![0], -3), "0");
        assert_eq!(d(vec![0x7b], 1), "12.3");
        assert_eq!(d(vec![0x85], 2), "-1.23");
        assert_eq!(d(vec![1], -40), "1E40");
        assert_eq!(d(vec![], 0), "0");
    }
}
