//! Rendering a [`CqlValue`] as JSON (the `json` and `change` formats; the `pretty` format
//! writes CQL literals with [`scylla_cdc::cql_text`]). JSON keeps numbers as numbers where JSON can hold
//! them exactly (`varint` and `decimal` become strings), blobs are hex strings, uuids strings,
//! lists/sets/tuples/vectors arrays, maps and UDTs objects (null UDT fields omitted),
//! timestamps RFC 3339.

use scylla::value::CqlValue;
use scylla_cdc::cql_text::{
    blob_hex, date_string, decimal_string, duration_string, time_string, timestamp_string,
    timeuuid, varint_string,
};
use serde_json::{Map, Number, Value as Json};

/// A value as JSON.
pub fn json_value(value: &CqlValue) -> Json {
    match value {
        CqlValue::Ascii(s) | CqlValue::Text(s) => Json::String(s.clone()),
        CqlValue::Boolean(b) => Json::Bool(*b),
        CqlValue::Blob(b) => Json::String(blob_hex(b)),
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
    use scylla::value::{
        CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlVarint,
    };
    use scylla_cdc::cql_text::cql_literal;
    use std::net::{IpAddr, Ipv4Addr};
    use uuid::Uuid;

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
}
