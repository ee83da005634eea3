//! The value ↔ JSON conversions of every CQL type, both ways, with ScyllaDB's spellings and
//! errors (`cql3/type_json.cc`, `types/types.cc`), and the `toJson`/`fromJson` error kinds.

use std::net::IpAddr;
use std::sync::Arc;

use num_bigint::BigInt;
use uuid::Uuid;

use super::*;
use crate::types::UserType;
use crate::types::json::parse;

fn list(elem: CqlType) -> CqlType {
    CqlType::List {
        elem: Box::new(elem),
        frozen: false,
    }
}

fn set(elem: CqlType) -> CqlType {
    CqlType::Set {
        elem: Box::new(elem),
        frozen: true,
    }
}

fn map(key: CqlType, value: CqlType) -> CqlType {
    CqlType::Map {
        key: Box::new(key),
        value: Box::new(value),
        frozen: false,
    }
}

fn udt() -> CqlType {
    CqlType::Udt {
        def: Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![
                ("a".into(), CqlType::Int),
                ("B".into(), CqlType::Text),
                ("c".into(), set(CqlType::Int)),
            ],
        }),
        frozen: true,
    }
}

#[track_caller]
fn out(t: &CqlType, v: Value) -> String {
    to_json(t, Some(&v)).expect("renders")
}

#[track_caller]
fn back(t: &CqlType, text: &str) -> Value {
    from_json(t, &parse(text).expect("valid JSON")).expect("converts")
}

#[track_caller]
fn marshal(t: &CqlType, text: &str) -> String {
    match from_json(t, &parse(text).expect("valid JSON")) {
        Err(ConvError::Marshal(m)) => m,
        other => panic!("{text} as {t}: expected a marshal error, got {other:?}"),
    }
}

/// Every native type: ScyllaDB's rendering, and the rendering read back to the same value.
#[test]
fn native_types_render_and_read_back() {
    let u = Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap();
    let tu = Uuid::parse_str("6bddc89a-5644-11e4-97fc-56847afe9799").unwrap();
    let cases: Vec<(CqlType, Value, &str)> = vec![
        (CqlType::Tinyint, Value::Tinyint(-128), "-128"),
        (CqlType::Smallint, Value::Smallint(32767), "32767"),
        (CqlType::Int, Value::Int(-7), "-7"),
        (
            CqlType::Bigint,
            Value::Bigint(9007199254740993),
            "9007199254740993",
        ),
        (CqlType::Counter, Value::Bigint(5), "5"),
        (
            CqlType::Varint,
            Value::varint(&BigInt::from(-1_234_567_890_123_456_789i64)),
            "-1234567890123456789",
        ),
        (
            CqlType::Decimal,
            Value::decimal(&BigInt::from(-12345), 3),
            "-12.345",
        ),
        (CqlType::Float, Value::Float(1.25), "1.25"),
        (
            CqlType::Double,
            Value::Double(123123.123123),
            "123123.123123",
        ),
        (
            CqlType::Text,
            Value::text("zażółć \"q\""),
            "\"zażółć \\\"q\\\"\"",
        ),
        (CqlType::Ascii, Value::text("abc"), "\"abc\""),
        (CqlType::Blob, Value::blob([0xca, 0xfe]), "\"0xcafe\""),
        (CqlType::Boolean, Value::Boolean(true), "true"),
        (
            CqlType::Uuid,
            Value::Uuid(u),
            "\"123e4567-e89b-12d3-a456-426614174000\"",
        ),
        (
            CqlType::Timeuuid,
            Value::Timeuuid(tu),
            "\"6bddc89a-5644-11e4-97fc-56847afe9799\"",
        ),
        (
            CqlType::Inet,
            Value::Inet("10.1.2.3".parse::<IpAddr>().unwrap()),
            "\"10.1.2.3\"",
        ),
        (
            CqlType::Inet,
            Value::Inet("::1".parse::<IpAddr>().unwrap()),
            "\"::1\"",
        ),
        (
            CqlType::Timestamp,
            Value::Timestamp(1_704_164_645_006),
            "\"2024-01-02 03:04:05.006Z\"",
        ),
        (
            CqlType::Timestamp,
            Value::Timestamp(-1),
            "\"1969-12-31 23:59:59.999Z\"",
        ),
        (
            CqlType::Date,
            Value::Date((1 << 31) + 19_782),
            "\"2024-02-29\"",
        ),
        (
            CqlType::Time,
            Value::Time(3_723_000_000_004),
            "\"01:02:03.000000004\"",
        ),
        (CqlType::Time, Value::Time(123), "\"00:00:00.000000123\""),
        (
            CqlType::Duration,
            Value::Duration(Duration {
                months: 14,
                days: 3,
                nanos: 14_706_007_008_009,
            }),
            "\"1y2mo3d4h5m6s7ms8us9ns\"",
        ),
        (
            CqlType::Duration,
            Value::Duration(Duration {
                months: 0,
                days: 0,
                nanos: -12_000,
            }),
            "\"-12us\"",
        ),
    ];
    for (t, v, text) in cases {
        assert_eq!(out(&t, v.clone()), text, "{t}");
        assert_eq!(back(&t, text), v, "{t} reads {text}");
    }
}

#[test]
fn numbers_are_written_as_scylla_writes_them() {
    // A varint beyond 64 bits is written as a number, which reads back only as a string.
    let big: BigInt = "-123456789012345678901234567890".parse().unwrap();
    assert_eq!(
        out(&CqlType::Varint, Value::varint(&big)),
        "-123456789012345678901234567890"
    );
    assert_eq!(
        back(&CqlType::Varint, "\"-123456789012345678901234567890\""),
        Value::varint(&big)
    );
    let dec = |u: i64, scale: i32| out(&CqlType::Decimal, Value::decimal(&BigInt::from(u), scale));
    assert_eq!(dec(150, 2), "1.5");
    assert_eq!(dec(1, -3), "1000");
    assert_eq!(dec(0, 5), "0");
    assert_eq!(dec(-5, 7), "-0.0000005");
    assert_eq!(dec(1000, 3), "1");
    assert_eq!(out(&CqlType::Double, Value::Double(17.0)), "17");
    assert_eq!(out(&CqlType::Double, Value::Double(1e20)), "1e+20");
    assert_eq!(out(&CqlType::Float, Value::Float(1e-5)), "1e-05");
    assert_eq!(out(&CqlType::Float, Value::Float(0.1)), "0.1");
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(out(&CqlType::Double, Value::Double(v)), "null");
        assert_eq!(out(&CqlType::Float, Value::Float(v as f32)), "null");
    }
}

#[test]
fn time_values_outside_the_common_range() {
    assert_eq!(out(&CqlType::Date, Value::Date(0)), "\"-5877641-06-23\"");
    assert_eq!(
        out(&CqlType::Date, Value::Date(u32::MAX)),
        "\"5881580-07-11\""
    );
    assert_eq!(
        out(&CqlType::Date, Value::Date((1 << 31) - 719_528)),
        "\"0000-01-01\""
    );
    assert_eq!(
        out(&CqlType::Date, Value::Date((1 << 31) - 719_529)),
        "\"-0001-12-31\""
    );
    assert_eq!(
        out(&CqlType::Timestamp, Value::Timestamp(253_402_300_800_000)),
        "\"10000-01-01 00:00:00.000Z\""
    );
    assert_eq!(
        out(
            &CqlType::Duration,
            Value::Duration(Duration {
                months: 0,
                days: 0,
                nanos: 0
            })
        ),
        "\"\""
    );
}

#[test]
fn collections_tuples_and_udts_render_and_read_back() {
    let l = list(CqlType::Int);
    let v = Value::list(vec![Value::Int(1), Value::Int(2)]);
    assert_eq!(out(&l, v.clone()), "[1, 2]");
    assert_eq!(back(&l, "[1, 2]"), v);
    let s = set(CqlType::Text);
    let v = Value::set(vec![Value::text("y"), Value::text("x")]);
    assert_eq!(out(&s, v.clone()), "[\"x\", \"y\"]");
    assert_eq!(back(&s, "[\"y\", \"x\", \"x\"]"), v);
    // Map keys are JSON strings: non-string keys are quoted, and read from their text.
    let m = map(CqlType::Int, CqlType::Boolean);
    let v = Value::map(vec![
        (Value::Int(1), Value::Boolean(false)),
        (Value::Int(0), Value::Boolean(true)),
    ]);
    assert_eq!(out(&m, v.clone()), "{\"0\": true, \"1\": false}");
    assert_eq!(back(&m, "{\"1\": false, \"0\": true}"), v);
    assert_eq!(marshal(&m, "{\"x\": true}"), "Invalid number format 'x'");
    // Of two equal keys the first counts.
    assert_eq!(
        back(&m, "{\"1\": true, \"1\": false}"),
        Value::map(vec![(Value::Int(1), Value::Boolean(true))])
    );
    let mt = map(CqlType::Timestamp, CqlType::Int);
    let v = Value::map(vec![(Value::Timestamp(0), Value::Int(3))]);
    assert_eq!(out(&mt, v.clone()), "{\"1970-01-01 00:00:00.000Z\": 3}");
    assert_eq!(back(&mt, "{\"1970-01-01 00:00:00.000Z\": 3}"), v);
    // A key of a collection type is that value's JSON text.
    let ml = map(
        CqlType::List {
            elem: Box::new(CqlType::Int),
            frozen: true,
        },
        CqlType::Int,
    );
    let v = Value::map(vec![(
        Value::list(vec![Value::Int(1), Value::Int(2)]),
        Value::Int(3),
    )]);
    assert_eq!(out(&ml, v.clone()), "{\"[1, 2]\": 3}");
    assert_eq!(back(&ml, "{\"[1, 2]\": 3}"), v);
    assert!(marshal(&ml, "{\"[1,\": 3}").starts_with("Failed parsing map_key \"[1,\": "));
    // A key containing a string is wrapped as it is (scylladb/scylladb#8087).
    let mtu = map(
        CqlType::Tuple(vec![CqlType::Text, CqlType::Int]),
        CqlType::Int,
    );
    let v = Value::map(vec![(
        Value::tuple(vec![Some(Value::text("hello")), Some(Value::Int(3))]),
        Value::Int(7),
    )]);
    assert_eq!(out(&mtu, v), "{\"[\"hello\", 3]\": 7}");
    let t = CqlType::Tuple(vec![CqlType::Int, CqlType::Text]);
    let v = Value::tuple(vec![Some(Value::Int(1)), None]);
    assert_eq!(out(&t, v), "[1, null]");
    assert_eq!(
        back(&t, "[1]"),
        Value::tuple(vec![Some(Value::Int(1))]),
        "a shorter array is a shorter tuple"
    );
    assert_eq!(
        marshal(&t, "[1, \"a\", 2]"),
        "Too many values (3) for tuple with size 2"
    );
    // A null tuple component is an error of its type (scylladb/scylladb#7954).
    assert_eq!(
        marshal(&t, "[null, \"a\"]"),
        "Incorrect JSON value for int64 type: null"
    );
    // UDT field names as they are, not quoted (scylladb/scylladb#8086).
    let u = udt();
    let v = Value::udt(vec![Some(Value::Int(1)), Some(Value::text("x")), None]);
    assert_eq!(out(&u, v.clone()), "{\"a\": 1, \"B\": \"x\", \"c\": null}");
    assert_eq!(back(&u, "{\"B\": \"x\", \"a\": 1}"), v);
    assert_eq!(
        marshal(&u, "{\"a\": 1, \"\\\"B\\\"\": \"x\"}"),
        "Extraneous field definition for user type ut: \"B\""
    );
    assert_eq!(
        marshal(&u, "[1]"),
        "user_type must be represented as JSON Object"
    );
}

#[test]
fn integers_from_numbers_and_strings() {
    assert_eq!(back(&CqlType::Int, "1e6"), Value::Int(1_000_000));
    assert_eq!(back(&CqlType::Int, "12.0"), Value::Int(12));
    assert_eq!(back(&CqlType::Int, "\"-3\""), Value::Int(-3));
    assert_eq!(back(&CqlType::Bigint, "\"+3\""), Value::Bigint(3));
    assert_eq!(
        back(&CqlType::Bigint, "9223372036854775807"),
        Value::Bigint(i64::MAX)
    );
    assert_eq!(
        back(&CqlType::Bigint, "1.23456789E+9"),
        Value::Bigint(1_234_567_890)
    );
    assert_eq!(
        marshal(&CqlType::Int, "2147483648"),
        "Value 2147483648 out of range"
    );
    assert_eq!(
        marshal(&CqlType::Bigint, "9223372036854775808"),
        "Value 9223372036854775808 out of range"
    );
    assert_eq!(
        marshal(&CqlType::Tinyint, "\"128\""),
        "Value out of range for type org.apache.cassandra.db.marshal.ByteType: '128'"
    );
    assert_eq!(
        marshal(&CqlType::Int, "1.2"),
        "Incorrect JSON floating-point value for int64 type: 1.2 (it should not contain fractional part 0.19999999999999996)"
    );
    assert_eq!(marshal(&CqlType::Int, "\"\""), "Invalid number format ''");
    assert_eq!(
        marshal(&CqlType::Int, "\"dog\""),
        "Invalid number format 'dog'"
    );
    assert_eq!(
        marshal(&CqlType::Int, "true"),
        "Incorrect JSON value for int64 type: true"
    );
    assert_eq!(back(&CqlType::Counter, "7"), Value::Bigint(7));
    assert_eq!(
        marshal(&CqlType::Counter, "\"7\""),
        "Counters must be represented as JSON integer"
    );
}

#[test]
fn other_numbers_from_json() {
    // A number goes through its printed text (rjson::print): decimals keep that scale.
    assert_eq!(
        back(&CqlType::Decimal, "1.50"),
        Value::decimal(&BigInt::from(15), 1)
    );
    assert_eq!(
        back(&CqlType::Decimal, "\"1.50\""),
        Value::decimal(&BigInt::from(150), 2)
    );
    assert_eq!(
        back(&CqlType::Decimal, "1e2"),
        Value::decimal(&BigInt::from(1000), 1)
    );
    assert_eq!(
        back(&CqlType::Decimal, "\"-1.5E-3\""),
        Value::decimal(&BigInt::from(-15), 4)
    );
    assert_eq!(
        marshal(&CqlType::Decimal, "true"),
        "true must be represented as numeric or string in JSON"
    );
    assert_eq!(
        marshal(&CqlType::Decimal, "\"1.2.3\""),
        "unable to make BigDecimal from '1.2.3'"
    );
    assert_eq!(
        back(&CqlType::Varint, "123"),
        Value::varint(&BigInt::from(123))
    );
    assert_eq!(
        back(&CqlType::Varint, "\"0x1f\""),
        Value::varint(&BigInt::from(31))
    );
    // A literal beyond 64 bits is a double, whose text is no integer.
    assert_eq!(
        marshal(&CqlType::Varint, "123456789012345678901234567890"),
        "unable to make int from '1.2345678901234568e29'"
    );
    assert_eq!(
        marshal(&CqlType::Varint, "123123.123"),
        "unable to make int from '123123.123'"
    );
    assert_eq!(back(&CqlType::Varint, "\"\""), Value::Empty);
    assert_eq!(
        back(&CqlType::Double, "\"NaN\"").as_f64().map(f64::is_nan),
        Some(true)
    );
    assert_eq!(
        back(&CqlType::Double, "\"-Infinity\""),
        Value::Double(f64::NEG_INFINITY)
    );
    assert_eq!(back(&CqlType::Float, "2"), Value::Float(2.0));
    assert_eq!(back(&CqlType::Float, "\"\""), Value::Empty);
    assert_eq!(
        marshal(&CqlType::Double, "\"1e400\""),
        "Invalid number format '1e400'"
    );
    assert_eq!(
        marshal(&CqlType::Double, "[]"),
        "JSON value must be represented as double or string"
    );
}

#[test]
fn strings_blobs_booleans_and_string_only_types() {
    assert_eq!(back(&CqlType::Boolean, "\" TRUE \""), Value::Boolean(true));
    assert_eq!(back(&CqlType::Boolean, "\"fALSe\""), Value::Boolean(false));
    assert_eq!(marshal(&CqlType::Boolean, "1"), "Invalid JSON object 1");
    assert_eq!(back(&CqlType::Blob, "\"0x\""), Value::blob([]));
    assert_eq!(
        marshal(&CqlType::Blob, "\"cafe\""),
        "Blob JSON strings must start with 0x"
    );
    assert_eq!(
        from_json(&CqlType::Blob, &parse("\"0xabc\"").unwrap()),
        Err(ConvError::Std(
            "An hex string representing bytes must have an even length".into()
        ))
    );
    assert_eq!(
        marshal(&CqlType::Blob, "12"),
        "bytes_type must be represented as string in JSON, instead got '12'"
    );
    assert_eq!(
        marshal(&CqlType::Ascii, "\"שלום\""),
        "Invalid ASCII character in string literal: 'שלום'"
    );
    assert!(matches!(
        from_json(&CqlType::Text, &parse("3").unwrap()),
        Err(ConvError::Rjson(_))
    ));
    assert_eq!(
        marshal(&CqlType::Uuid, "123.456"),
        "uuid_type must be represented as string in JSON, instead got '123.456'"
    );
    assert_eq!(
        marshal(&CqlType::Uuid, "\"xyz\""),
        "Cannot parse uuid from 'xyz'"
    );
    assert_eq!(
        marshal(
            &CqlType::Timeuuid,
            "\"123e4567-e89b-42d3-a456-426614174000\""
        ),
        "Unsupported UUID version (4)"
    );
    assert_eq!(
        marshal(&CqlType::Inet, "\"1.2.3\""),
        "Failed to parse inet_addr from '1.2.3'"
    );
    for t in [
        CqlType::Uuid,
        CqlType::Timeuuid,
        CqlType::Inet,
        CqlType::Date,
        CqlType::Time,
        CqlType::Timestamp,
        CqlType::Duration,
    ] {
        assert_eq!(back(&t, "\"\""), Value::Empty, "{t}");
    }
    assert_eq!(
        back(&CqlType::Duration, "\"P1DT2H\""),
        Value::Duration(Duration {
            months: 0,
            days: 1,
            nanos: 7_200_000_000_000
        })
    );
    assert_eq!(
        back(&CqlType::Duration, "\"-1h\""),
        Value::Duration(Duration {
            months: 0,
            days: 0,
            nanos: -3_600_000_000_000
        })
    );
}

#[test]
fn timestamps_dates_and_times_from_strings() {
    let ts = |s: &str| back(&CqlType::Timestamp, &format!("\"{s}\""));
    let expected = Value::Timestamp(1_388_578_545_000);
    for s in [
        "2014-01-01 12:15:45.000Z",
        "2014-01-01T12:15:45.000Z",
        "2014-01-01 12:15:45.000+0000",
        "2014-01-01 12:15:45+0000",
        "2014-01-01 13:15:45+01:00",
        "2014-01-01 12:15:45 UTC",
        "2014-01-01 12:15:45",
        "1388578545000",
    ] {
        assert_eq!(ts(s), expected, "{s}");
    }
    assert_eq!(
        ts("2014-01-01 12:15:45.5Z"),
        Value::Timestamp(1_388_578_545_500)
    );
    assert_eq!(ts("2014-01-01"), Value::Timestamp(1_388_534_400_000));
    assert_eq!(
        back(&CqlType::Timestamp, "1388578545000"),
        expected,
        "a JSON number is milliseconds"
    );
    let m = marshal(&CqlType::Timestamp, "\"2014-01-01 12:15:45.0000000Z\"");
    assert!(
        m.contains("Milliseconds length exceeds expected (7)"),
        "{m}"
    );
    let m = marshal(&CqlType::Timestamp, "\"2014-01-01 12:15:45 +0000\"");
    assert!(m.contains("Unable to parse timezone ' +0000'"), "{m}");
    let m = marshal(&CqlType::Timestamp, "\"yesterday\"");
    assert!(
        m.contains("Unable to parse timestamp from 'yesterday'"),
        "{m}"
    );
    assert!(marshal(&CqlType::Timestamp, "\"2014-02-30\"").starts_with("unable to parse date"));
    assert_eq!(
        marshal(&CqlType::Timestamp, "true"),
        "timestamp_type must be represented as string or integer"
    );
    let date = |s: &str| back(&CqlType::Date, &format!("\"{s}\""));
    assert_eq!(date("1970-01-01"), Value::Date(1 << 31));
    assert_eq!(date("2011-02-03"), Value::Date((1 << 31) + 15_008));
    assert_eq!(date("2147483648"), Value::Date(1 << 31));
    assert_eq!(date("-0001-12-31"), Value::Date((1 << 31) - 719_529));
    // Not validated: February 30th is March 2nd.
    assert_eq!(date("2011-02-30"), date("2011-03-02"));
    assert_eq!(
        marshal(&CqlType::Date, "\"2011/02/03\""),
        "Unable to coerce '2011/02/03' to a formatted date (long)"
    );
    assert_eq!(
        marshal(&CqlType::Date, "\"-1\""),
        "Unable to make unsigned int (for date) from -1"
    );
    let time = |s: &str| back(&CqlType::Time, &format!("\"{s}\""));
    assert_eq!(time("07:35:07.000111222"), Value::Time(27_307_000_111_222));
    assert_eq!(time("01:02:03.5"), Value::Time(3_723_500_000_000));
    assert_eq!(time("01:02:03"), Value::Time(3_723_000_000_000));
    assert_eq!(
        marshal(&CqlType::Time, "\"24:00:00\""),
        "Hour out of bounds (24)."
    );
    assert_eq!(
        marshal(&CqlType::Time, "\"01:02\""),
        "Timestamp format must be hh:mm:ss[.fffffffff]"
    );
    assert_eq!(
        marshal(&CqlType::Time, "\"01:02:03.0000000001\""),
        "more than 9 nanosecond digits: 01:02:03.0000000001"
    );
    assert_eq!(
        marshal(&CqlType::Time, "5"),
        "time_type must be represented as string in JSON, instead got '5'"
    );
}

/// Empty values: rendered per type as ScyllaDB does, or refused with its exception.
#[test]
fn empty_values_render_per_type() {
    let e = |t: &CqlType| to_json(t, Some(&Value::Empty));
    assert_eq!(e(&CqlType::Uuid).unwrap(), "\"\"");
    assert_eq!(e(&CqlType::Timestamp).unwrap(), "\"\"");
    assert_eq!(e(&CqlType::Boolean).unwrap(), "");
    assert_eq!(e(&CqlType::Tuple(vec![CqlType::Int])).unwrap(), "[]");
    assert_eq!(
        e(&CqlType::Int),
        Err(ConvError::Marshal(
            "Size mismatch for type org.apache.cassandra.db.marshal.Int32Type: got 0 bytes".into()
        ))
    );
    for t in [
        CqlType::Double,
        CqlType::Decimal,
        CqlType::Varint,
        CqlType::Duration,
    ] {
        assert_eq!(
            e(&t),
            Err(ConvError::Invalid(
                "Cannot create JSON string - deserialization error".into()
            )),
            "{t}"
        );
    }
    assert_eq!(to_json(&CqlType::Int, None).unwrap(), "null");
}

#[test]
fn to_json_and_from_json_calls_fail_as_native_functions() {
    assert_eq!(
        to_json_call(&CqlType::Int, None).unwrap(),
        Value::text("null")
    );
    let e = to_json_call(&CqlType::Int, Some(&Value::Empty)).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::FunctionFailure {
            keyspace: "system".into(),
            function: "tojson".into(),
            arg_types: vec!["org.apache.cassandra.db.marshal.Int32Type".into()],
        }
    );
    let e = to_json_call(&CqlType::Double, Some(&Value::Empty)).unwrap_err();
    assert_eq!(e.code(), 0x2200);
    // A parse failure names the receiver type; a conversion failure is the function's.
    let e = from_json_call("ks", &CqlType::Int, Some(&Value::text("dog"))).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::FunctionFailure {
            keyspace: "ks".into(),
            function: "fromJson".into(),
            arg_types: vec!["org.apache.cassandra.db.marshal.Int32Type".into()],
        }
    );
    assert!(
        e.message
            .starts_with("Failed parsing fromJson parameter: Parsing JSON failed")
    );
    let e = from_json_call("ks", &CqlType::Int, Some(&Value::text("\"x\""))).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::FunctionFailure {
            keyspace: "system".into(),
            function: "fromjson".into(),
            arg_types: vec!["org.apache.cassandra.db.marshal.UTF8Type".into()],
        }
    );
    assert_eq!(
        e.message,
        "Failed execution of function system.fromjson: marshaling error: Invalid number format 'x'"
    );
    assert_eq!(
        from_json_call("ks", &CqlType::Int, Some(&Value::text("null"))).unwrap(),
        None
    );
    assert_eq!(from_json_call("ks", &CqlType::Int, None).unwrap(), None);
}

#[test]
fn marshal_names_follow_scylla() {
    assert_eq!(
        marshal_name(&CqlType::Map {
            key: Box::new(CqlType::Text),
            value: Box::new(list(CqlType::Int)),
            frozen: true,
        }),
        "org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.MapType(org.apache.cassandra.db.marshal.UTF8Type,org.apache.cassandra.db.marshal.ListType(org.apache.cassandra.db.marshal.Int32Type)))"
    );
    assert_eq!(
        marshal_name(&CqlType::Tuple(vec![CqlType::Int, CqlType::Date])),
        "org.apache.cassandra.db.marshal.TupleType(org.apache.cassandra.db.marshal.Int32Type, org.apache.cassandra.db.marshal.SimpleDateType)"
    );
    assert!(marshal_name(&udt()).starts_with(
        "org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.UserType(ks,7574,61:org.apache.cassandra.db.marshal.Int32Type,42:"
    ));
}

#[test]
fn select_json_rows_quote_case_sensitive_names() {
    let sel = JsonSelection {
        names: vec!["pk".into(), "Caps".into(), "system.tojson(v)".into()],
        types: vec![CqlType::Int, CqlType::Text, CqlType::Text],
    };
    assert_eq!(
        sel.render(&[Some(Value::Int(1)), None, Some(Value::text("17"))])
            .unwrap(),
        "{\"pk\": 1, \"\\\"Caps\\\"\": null, \"system.tojson(v)\": \"17\"}"
    );
    let e = sel.render(&[Some(Value::Empty), None, None]).unwrap_err();
    assert_eq!(
        e.code(),
        0x0000,
        "a marshal error reaches the client as a server error"
    );
}
