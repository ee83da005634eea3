//! Rendering a [`CqlValue`] as a CQL literal (the `pretty` format) or as JSON (the `json`
//! format).
//!
//! CQL literals are what `cqlsh` would accept back: strings quoted with `''` escapes, blobs as
//! `0x…`, timestamps as quoted RFC 3339, durations as `1h30m`, collections with `[]`, `{}`,
//! UDTs as `{field: value}`, tuples as `(…)`. JSON keeps numbers as numbers where JSON can hold
//! them exactly (`varint` and `decimal` become strings), blobs are hex strings, uuids strings,
//! lists/sets/tuples/vectors arrays, maps and UDTs objects (null UDT fields omitted),
//! timestamps RFC 3339.

use std::fmt::Write as _;

use chrono::{DateTime, NaiveTime, SecondsFormat, TimeDelta, Utc};
use num_bigint::BigInt;
use scylla::value::{
    CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
};
use serde_json::{Map, Number, Value as Json};
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
fn timeuuid(t: &CqlTimeuuid) -> Uuid {
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

/// A value as JSON.
pub fn json_value(value: &CqlValue) -> Json {
    match value {
        CqlValue::Ascii(s) | CqlValue::Text(s) => Json::String(s.clone()),
        CqlValue::Boolean(b) => Json::Bool(*b),
        CqlValue::Blob(b) => {
            let mut s = String::with_capacity(2 + 2 * b.len());
            write_hex(&mut s, b);
            Json::String(s)
        }
        CqlValue::Counter(c) => Json::from(c.0),
        CqlValue::Int(v) => Json::from(*v),
        CqlValue::BigInt(v) => Json::from(*v),
        CqlValue::SmallInt(v) => Json::from(*v),
        CqlValue::TinyInt(v) => Json::from(*v),
        CqlValue::Varint(v) => Json::String(varint_string(v)),
        CqlValue::Decimal(d) => Json::String(decimal_string(d)),
        CqlValue::Double(v) => json_float(*v),
        CqlValue::Float(v) => json_float(f64::from(*v)),
        CqlValue::Date(d) => Json::String(date_string(*d).unwrap_or_else(|| d.0.to_string())),
        CqlValue::Time(t) => Json::String(time_string(*t).unwrap_or_else(|| t.0.to_string())),
        CqlValue::Timestamp(t) => {
            Json::String(timestamp_string(*t).unwrap_or_else(|| t.0.to_string()))
        }
        CqlValue::Duration(d) => Json::String(duration_string(d)),
        CqlValue::Empty => Json::String(String::new()),
        CqlValue::Inet(ip) => Json::String(ip.to_string()),
        CqlValue::Uuid(u) => Json::String(u.to_string()),
        CqlValue::Timeuuid(u) => Json::String(timeuuid(u).to_string()),
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            Json::Array(items.iter().map(json_value).collect())
        }
        CqlValue::Tuple(items) => Json::Array(
            items
                .iter()
                .map(|i| i.as_ref().map_or(Json::Null, json_value))
                .collect(),
        ),
        CqlValue::Map(entries) => {
            let mut obj = Map::new();
            for (k, v) in entries {
                obj.insert(json_key(k), json_value(v));
            }
            Json::Object(obj)
        }
        CqlValue::UserDefinedType { fields, .. } => {
            let mut obj = Map::new();
            for (name, v) in fields {
                if let Some(v) = v {
                    obj.insert(name.clone(), json_value(v));
                }
            }
            Json::Object(obj)
        }
        #[allow(unreachable_patterns)]
        other => Json::String(format!("{other:?}")),
    }
}

/// A float as a JSON number, or `"NaN"` / `"Infinity"` / `"-Infinity"`.
fn json_float(v: f64) -> Json {
    match Number::from_f64(v) {
        Some(n) => Json::Number(n),
        None if v.is_nan() => Json::String("NaN".into()),
        None if v > 0.0 => Json::String("Infinity".into()),
        None => Json::String("-Infinity".into()),
    }
}

/// A map key as a JSON object key: strings as they are, other scalars as their JSON text
/// without quotes, collections and tuples as their JSON text.
pub fn json_key(key: &CqlValue) -> String {
    match json_value(key) {
        Json::String(s) => s,
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::value::Counter;
    use std::net::{IpAddr, Ipv4Addr};

    fn udt() -> CqlValue {
        CqlValue::UserDefinedType {
            keyspace: "ks".into(),
            name: "addr".into(),
            fields: vec![
                ("street".into(), Some(CqlValue::Text("Main".into()))),
                ("Zip".into(), None),
            ],
        }
    }

    fn tu(s: &str) -> Uuid {
        Uuid::parse_str(s).unwrap()
    }

    /// Every kind of value with its CQL literal and its JSON.
    fn cases() -> Vec<(CqlValue, &'static str, Json)> {
        use serde_json::json;
        let timeuuid = "d2177dd0-eaa2-11de-a572-001b779c76e3";
        vec![
            (CqlValue::Ascii("a'b".into()), "'a''b'", json!("a'b")),
            (CqlValue::Text("héllo".into()), "'héllo'", json!("héllo")),
            (CqlValue::Boolean(true), "true", json!(true)),
            (
                CqlValue::Blob(vec![0, 0xab, 0x10]),
                "0x00ab10",
                json!("0x00ab10"),
            ),
            (CqlValue::Blob(vec![]), "0x", json!("0x")),
            (CqlValue::Counter(Counter(-5)), "-5", json!(-5)),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(
                    vec![0xff, 0x83],
                    1,
                )),
                "-12.5",
                json!("-12.5"),
            ),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(vec![1], 3)),
                "0.001",
                json!("0.001"),
            ),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(vec![12], -2)),
                "1200",
                json!("1200"),
            ),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(vec![5], 300)),
                "5E-300",
                json!("5E-300"),
            ),
            (
                CqlValue::Date(CqlDate((1u32 << 31) + 19844)),
                "'2024-05-01'",
                json!("2024-05-01"),
            ),
            (CqlValue::Date(CqlDate(0)), "0", json!("0")),
            (CqlValue::Double(1.5), "1.5", json!(1.5)),
            (CqlValue::Double(2.0), "2.0", json!(2.0)),
            (CqlValue::Double(f64::NAN), "NaN", json!("NaN")),
            (
                CqlValue::Double(f64::NEG_INFINITY),
                "-Infinity",
                json!("-Infinity"),
            ),
            (CqlValue::Float(0.25), "0.25", json!(0.25)),
            (
                CqlValue::Float(f32::INFINITY),
                "Infinity",
                json!("Infinity"),
            ),
            (
                CqlValue::Duration(CqlDuration {
                    months: 14,
                    days: 3,
                    nanoseconds: 3_723_004_005_006,
                }),
                "1y2mo3d1h2m3s4ms5us6ns",
                json!("1y2mo3d1h2m3s4ms5us6ns"),
            ),
            (
                CqlValue::Duration(CqlDuration {
                    months: 0,
                    days: -1,
                    nanoseconds: -1_000_000_000,
                }),
                "-1d1s",
                json!("-1d1s"),
            ),
            (
                CqlValue::Duration(CqlDuration {
                    months: 0,
                    days: 0,
                    nanoseconds: 0,
                }),
                "0s",
                json!("0s"),
            ),
            (CqlValue::Empty, "<empty>", json!("")),
            (CqlValue::Int(-42), "-42", json!(-42)),
            (
                CqlValue::BigInt(i64::MAX),
                "9223372036854775807",
                json!(i64::MAX),
            ),
            (CqlValue::SmallInt(7), "7", json!(7)),
            (CqlValue::TinyInt(-8), "-8", json!(-8)),
            (
                CqlValue::Varint(CqlVarint::from_signed_bytes_be(vec![
                    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                ])),
                "18446744073709551616",
                json!("18446744073709551616"),
            ),
            (
                CqlValue::Timestamp(CqlTimestamp(1_714_564_800_123)),
                "'2024-05-01T12:00:00.123Z'",
                json!("2024-05-01T12:00:00.123Z"),
            ),
            (
                CqlValue::Time(CqlTime(3_723_000_000_001)),
                "'01:02:03.000000001'",
                json!("01:02:03.000000001"),
            ),
            (CqlValue::Time(CqlTime(-1)), "-1", json!("-1")),
            (
                CqlValue::Inet(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1))),
                "'10.0.0.1'",
                json!("10.0.0.1"),
            ),
            (
                CqlValue::Uuid(tu("123e4567-e89b-42d3-a456-426614174000")),
                "123e4567-e89b-42d3-a456-426614174000",
                json!("123e4567-e89b-42d3-a456-426614174000"),
            ),
            (
                CqlValue::Timeuuid(CqlTimeuuid::from_bytes(*tu(timeuuid).as_bytes())),
                "d2177dd0-eaa2-11de-a572-001b779c76e3",
                json!(timeuuid),
            ),
            (
                CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]),
                "[1, 2]",
                json!([1, 2]),
            ),
            (
                CqlValue::Set(vec![CqlValue::Text("a".into())]),
                "{'a'}",
                json!(["a"]),
            ),
            (CqlValue::Set(vec![]), "{}", json!([])),
            (
                CqlValue::Vector(vec![CqlValue::Float(1.0), CqlValue::Float(0.5)]),
                "[1.0, 0.5]",
                json!([1.0, 0.5]),
            ),
            (
                CqlValue::Map(vec![
                    (CqlValue::Int(1), CqlValue::Text("x".into())),
                    (CqlValue::Int(20), CqlValue::Text("y".into())),
                ]),
                "{1: 'x', 20: 'y'}",
                json!({"1": "x", "20": "y"}),
            ),
            (
                CqlValue::Map(vec![(
                    CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]),
                    CqlValue::Boolean(false),
                )]),
                "{(1, null): false}",
                json!({"[1,null]": false}),
            ),
            (
                CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None, Some(udt())]),
                "(1, null, {street: 'Main', \"Zip\": null})",
                json!([1, null, {"street": "Main"}]),
            ),
            (
                udt(),
                "{street: 'Main', \"Zip\": null}",
                json!({"street": "Main"}),
            ),
            (
                CqlValue::List(vec![CqlValue::Map(vec![(
                    CqlValue::Text("k".into()),
                    CqlValue::Set(vec![CqlValue::BigInt(3)]),
                )])]),
                "[{'k': {3}}]",
                json!([{"k": [3]}]),
            ),
        ]
    }

    #[test]
    fn cql_literals_of_every_kind() {
        for (value, literal, _) in cases() {
            assert_eq!(cql_literal(&value), literal, "{value:?}");
        }
    }

    #[test]
    fn json_of_every_kind() {
        for (value, _, json) in cases() {
            assert_eq!(json_value(&value), json, "{value:?}");
        }
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
