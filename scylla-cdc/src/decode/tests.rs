//! Unit tests of typed decoding: every CQL type into each Rust type it accepts, and every
//! error.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use scylla::frame::response::result::{CollectionType, ColumnType, NativeType, UserDefinedType};
use scylla::value::{
    Counter, CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue,
    CqlVarint,
};
use serde::Deserialize;
use uuid::Uuid;

use super::*;

/// One column `c`, decoded into a field of type `T`.
#[derive(Deserialize, Debug)]
struct One<T> {
    c: T,
}

fn native(n: NativeType) -> ColumnType<'static> {
    ColumnType::Native(n)
}

fn list(e: ColumnType<'static>, frozen: bool) -> ColumnType<'static> {
    ColumnType::Collection {
        frozen,
        typ: CollectionType::List(Box::new(e)),
    }
}

fn set(e: ColumnType<'static>, frozen: bool) -> ColumnType<'static> {
    ColumnType::Collection {
        frozen,
        typ: CollectionType::Set(Box::new(e)),
    }
}

fn map(k: ColumnType<'static>, v: ColumnType<'static>, frozen: bool) -> ColumnType<'static> {
    ColumnType::Collection {
        frozen,
        typ: CollectionType::Map(Box::new(k), Box::new(v)),
    }
}

/// `ut (a int, b text)`.
fn udt_type(frozen: bool) -> ColumnType<'static> {
    ColumnType::UserDefinedType {
        frozen,
        definition: Arc::new(UserDefinedType {
            name: "ut".into(),
            keyspace: "ks".into(),
            field_types: vec![
                ("a".into(), native(NativeType::Int)),
                ("b".into(), native(NativeType::Text)),
            ],
        }),
    }
}

fn udt(a: Option<i32>, b: Option<&str>) -> CqlValue {
    CqlValue::UserDefinedType {
        keyspace: "ks".into(),
        name: "ut".into(),
        fields: vec![
            ("a".into(), a.map(CqlValue::Int)),
            ("b".into(), b.map(|s| CqlValue::Text(s.into()))),
        ],
    }
}

/// Decodes `value` of type `typ` as column `c` into `T`.
fn one<T: serde::de::DeserializeOwned>(
    typ: &ColumnType<'_>,
    value: Option<&CqlValue>,
) -> Result<T, DecodeError> {
    from_columns::<One<T>, _>([("c", typ, value)]).map(|o| o.c)
}

fn ok<T: serde::de::DeserializeOwned>(typ: &ColumnType<'_>, value: CqlValue) -> T {
    match one(typ, Some(&value)) {
        Ok(v) => v,
        Err(e) => panic!("{value:?} as {}: {e}", std::any::type_name::<T>()),
    }
}

fn err<T: serde::de::DeserializeOwned + std::fmt::Debug>(
    typ: &ColumnType<'_>,
    value: CqlValue,
) -> DecodeError {
    match one::<T>(typ, Some(&value)) {
        Ok(v) => panic!("{value:?} decoded into {v:?}"),
        Err(e) => e,
    }
}

fn varint(digits: &[u8]) -> CqlValue {
    CqlValue::Varint(CqlVarint::from_signed_bytes_be_slice(digits))
}

fn decimal(unscaled: i64, scale: i32) -> CqlValue {
    let bytes = num_bigint::BigInt::from(unscaled).to_signed_bytes_be();
    CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(bytes, scale))
}

#[test]
fn integers_into_any_integer_that_holds_them() {
    let int = native(NativeType::Int);
    assert_eq!(ok::<i32>(&int, CqlValue::Int(-5)), -5);
    assert_eq!(ok::<i64>(&int, CqlValue::Int(-5)), -5);
    assert_eq!(ok::<u8>(&int, CqlValue::Int(200)), 200);
    assert_eq!(ok::<i128>(&int, CqlValue::Int(7)), 7);
    assert_eq!(ok::<u128>(&int, CqlValue::Int(7)), 7);
    assert_eq!(ok::<u64>(&int, CqlValue::Int(i32::MAX)), i32::MAX as u64);
    let tiny = native(NativeType::TinyInt);
    assert_eq!(ok::<i8>(&tiny, CqlValue::TinyInt(-128)), -128);
    assert_eq!(ok::<i16>(&tiny, CqlValue::TinyInt(8)), 8);
    let small = native(NativeType::SmallInt);
    assert_eq!(ok::<i16>(&small, CqlValue::SmallInt(-300)), -300);
    assert_eq!(ok::<u16>(&small, CqlValue::SmallInt(300)), 300);
    let big = native(NativeType::BigInt);
    assert_eq!(ok::<i64>(&big, CqlValue::BigInt(i64::MIN)), i64::MIN);
    assert_eq!(
        ok::<u32>(&big, CqlValue::BigInt(4_000_000_000)),
        4_000_000_000
    );
    let counter = native(NativeType::Counter);
    assert_eq!(ok::<i64>(&counter, CqlValue::Counter(Counter(42))), 42);
    assert_eq!(ok::<u8>(&counter, CqlValue::Counter(Counter(42))), 42);
}

#[test]
fn out_of_range_integers_are_errors_naming_column_type_and_rust_type() {
    let int = native(NativeType::Int);
    let e = err::<u8>(&int, CqlValue::Int(300));
    assert!(
        matches!(&e, DecodeError::OutOfRange { column, cql_type, value, rust_type }
            if column == "c" && cql_type == "int" && value == "300" && *rust_type == "u8"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "column `c`: the int value 300 does not fit in u8"
    );
    assert!(matches!(
        err::<u32>(&int, CqlValue::Int(-1)),
        DecodeError::OutOfRange { .. }
    ));
    assert!(matches!(
        err::<i8>(&native(NativeType::SmallInt), CqlValue::SmallInt(128)),
        DecodeError::OutOfRange { .. }
    ));
    assert!(matches!(
        err::<i32>(&native(NativeType::BigInt), CqlValue::BigInt(1 << 40)),
        DecodeError::OutOfRange { .. }
    ));
}

#[test]
fn varint_into_integers_strings_and_floats() {
    let vi = native(NativeType::Varint);
    // 123456789012345678901234567890 does not fit in 64 bits, does in 128.
    let big: i128 = 123_456_789_012_345_678_901_234_567_890;
    let v = varint(&big.to_be_bytes());
    assert_eq!(ok::<i128>(&vi, v.clone()), big);
    assert_eq!(ok::<String>(&vi, v.clone()), big.to_string());
    assert_eq!(ok::<f64>(&vi, v.clone()), big as f64);
    let e = err::<i64>(&vi, v);
    assert!(
        matches!(&e, DecodeError::OutOfRange { value, rust_type: "i64", cql_type, .. }
            if *value == big.to_string() && cql_type == "varint"),
        "{e:?}"
    );
    assert_eq!(ok::<i32>(&vi, varint(&[0xff])), -1);
    assert_eq!(ok::<u8>(&vi, varint(&[0x00, 0xff])), 255);
    assert_eq!(ok::<i64>(&vi, varint(&[])), 0);
    // 2^135: beyond 128 bits, still a string and an error naming the value.
    let mut huge = vec![0u8; 18];
    huge[0] = 0x00;
    huge[1] = 0x80;
    let e = err::<u128>(&vi, varint(&huge));
    assert!(
        matches!(&e, DecodeError::OutOfRange { value, .. } if value == "43556142965880123323311949751266331066368"),
        "{e}"
    );
    assert_eq!(
        ok::<String>(&vi, varint(&huge)),
        "43556142965880123323311949751266331066368"
    );
}

#[test]
fn decimal_into_strings_and_floats() {
    let dc = native(NativeType::Decimal);
    assert_eq!(ok::<String>(&dc, decimal(12345, 3)), "12.345");
    assert_eq!(ok::<String>(&dc, decimal(-12345, 3)), "-12.345");
    assert_eq!(ok::<String>(&dc, decimal(-1, 3)), "-0.001");
    assert_eq!(ok::<String>(&dc, decimal(5, 1)), "0.5");
    assert_eq!(ok::<String>(&dc, decimal(42, 0)), "42");
    assert_eq!(ok::<String>(&dc, decimal(42, -3)), "42000");
    assert_eq!(ok::<String>(&dc, decimal(0, -3)), "0");
    assert_eq!(ok::<String>(&dc, decimal(1, 5000)), "1E-5000");
    assert_eq!(ok::<String>(&dc, decimal(-7, i32::MIN)), "-7E2147483648");
    assert_eq!(ok::<f64>(&dc, decimal(12345, 3)), 12.345);
    assert_eq!(ok::<f32>(&dc, decimal(5, 1)), 0.5);
    assert!(matches!(
        err::<i64>(&dc, decimal(5, 1)),
        DecodeError::Type { .. }
    ));
}

#[test]
fn floats_and_booleans() {
    let f = native(NativeType::Float);
    let d = native(NativeType::Double);
    assert_eq!(ok::<f32>(&f, CqlValue::Float(1.5)), 1.5);
    assert_eq!(ok::<f64>(&f, CqlValue::Float(1.5)), 1.5);
    assert_eq!(ok::<f64>(&d, CqlValue::Double(2.25)), 2.25);
    let e = err::<f32>(&d, CqlValue::Double(2.25));
    assert_eq!(
        e.to_string(),
        "column `c`: CQL type double cannot be decoded into f32"
    );
    assert!(matches!(
        err::<i32>(&f, CqlValue::Float(1.0)),
        DecodeError::Type { .. }
    ));
    let b = native(NativeType::Boolean);
    assert!(ok::<bool>(&b, CqlValue::Boolean(true)));
    assert!(matches!(
        err::<bool>(&native(NativeType::Int), CqlValue::Int(1)),
        DecodeError::Type { .. }
    ));
}

#[derive(Deserialize, Debug, PartialEq)]
enum Color {
    Red,
    #[serde(rename = "green")]
    Green,
}

#[test]
fn text_into_strings_chars_and_enums() {
    let t = native(NativeType::Text);
    let a = native(NativeType::Ascii);
    assert_eq!(ok::<String>(&t, CqlValue::Text("héllo".into())), "héllo");
    assert_eq!(ok::<String>(&a, CqlValue::Ascii("abc".into())), "abc");
    assert_eq!(&*ok::<Box<str>>(&t, CqlValue::Text("x".into())), "x");
    assert_eq!(ok::<char>(&t, CqlValue::Text("é".into())), 'é');
    assert!(matches!(
        err::<char>(&t, CqlValue::Text("ab".into())),
        DecodeError::Invalid { .. }
    ));
    assert_eq!(ok::<Color>(&t, CqlValue::Text("Red".into())), Color::Red);
    assert_eq!(
        ok::<Color>(&t, CqlValue::Text("green".into())),
        Color::Green
    );
    let e = err::<Color>(&t, CqlValue::Text("blue".into()));
    assert!(
        matches!(&e, DecodeError::Invalid { column, cql_type, message }
            if column == "c" && cql_type == "text" && message.contains("blue")),
        "{e:?}"
    );
    let e = err::<i32>(&t, CqlValue::Text("1".into()));
    assert_eq!(
        e.to_string(),
        "column `c`: CQL type text cannot be decoded into i32"
    );
    // Numbers are not strings.
    assert!(matches!(
        err::<String>(&native(NativeType::Int), CqlValue::Int(1)),
        DecodeError::Type { .. }
    ));
}

#[test]
fn borrowed_text_and_bytes_with_from_columns() {
    #[derive(Deserialize)]
    struct Borrowed<'a> {
        t: &'a str,
        #[serde(borrow)]
        b: &'a [u8],
    }
    let t = native(NativeType::Text);
    let b = native(NativeType::Blob);
    let tv = CqlValue::Text("abc".into());
    let bv = CqlValue::Blob(vec![1, 2]);
    let row: Borrowed<'_> = from_columns([("t", &t, Some(&tv)), ("b", &b, Some(&bv))]).unwrap();
    assert_eq!(row.t, "abc");
    assert_eq!(row.b, &[1, 2]);
}

#[test]
fn blobs_into_byte_vectors_buffers_and_hex() {
    #[derive(Deserialize)]
    struct Bytes {
        #[serde(with = "serde_bytes")]
        c: Vec<u8>,
    }
    let b = native(NativeType::Blob);
    let v = CqlValue::Blob(vec![0xca, 0xfe]);
    assert_eq!(ok::<Vec<u8>>(&b, v.clone()), vec![0xca, 0xfe]);
    assert_eq!(
        ok::<serde_bytes::ByteBuf>(&b, v.clone()).into_vec(),
        vec![0xca, 0xfe]
    );
    let bytes: Bytes = from_columns([("c", &b, Some(&v))]).unwrap();
    assert_eq!(bytes.c, vec![0xca, 0xfe]);
    assert_eq!(ok::<String>(&b, v.clone()), "0xcafe");
    assert_eq!(ok::<Vec<u8>>(&b, CqlValue::Blob(vec![])), Vec::<u8>::new());
    assert!(matches!(
        err::<Vec<u8>>(&native(NativeType::Int), CqlValue::Int(1)),
        DecodeError::Type { .. }
    ));
}

#[test]
fn uuids_into_uuid_and_strings() {
    let u = Uuid::parse_str("11111111-2222-3333-4444-555555555555").unwrap();
    let tu = Uuid::parse_str("8e7f4c0a-0000-1000-8000-000000000001").unwrap();
    let ut = native(NativeType::Uuid);
    let tut = native(NativeType::Timeuuid);
    assert_eq!(ok::<Uuid>(&ut, CqlValue::Uuid(u)), u);
    assert_eq!(
        ok::<String>(&ut, CqlValue::Uuid(u)),
        "11111111-2222-3333-4444-555555555555"
    );
    let tv = CqlValue::Timeuuid(CqlTimeuuid::from_bytes(*tu.as_bytes()));
    assert_eq!(ok::<Uuid>(&tut, tv.clone()), tu);
    assert_eq!(ok::<String>(&tut, tv.clone()), tu.to_string());
    assert_eq!(
        ok::<serde_bytes::ByteBuf>(&tut, tv).into_vec(),
        tu.as_bytes().to_vec()
    );
    assert!(matches!(
        err::<Uuid>(&native(NativeType::Int), CqlValue::Int(1)),
        DecodeError::Type { .. }
    ));
}

#[test]
fn timestamps_dates_and_times() {
    let ts = native(NativeType::Timestamp);
    let v = CqlValue::Timestamp(CqlTimestamp(1_700_000_000_123));
    let dt: DateTime<Utc> = ok(&ts, v.clone());
    assert_eq!(dt.timestamp_millis(), 1_700_000_000_123);
    assert_eq!(ok::<i64>(&ts, v.clone()), 1_700_000_000_123);
    assert_eq!(ok::<String>(&ts, v.clone()), "2023-11-14T22:13:20.123Z");
    #[derive(Deserialize)]
    struct Millis {
        #[serde(with = "chrono::serde::ts_milliseconds")]
        c: DateTime<Utc>,
    }
    let m: Millis = from_columns([("c", &ts, Some(&v))]).unwrap();
    assert_eq!(m.c.timestamp_millis(), 1_700_000_000_123);
    let fixed: DateTime<chrono::FixedOffset> = ok(&ts, v.clone());
    assert_eq!(fixed.timestamp_millis(), 1_700_000_000_123);
    let before_epoch: DateTime<Utc> = ok(&ts, CqlValue::Timestamp(CqlTimestamp(-1)));
    assert_eq!(before_epoch.timestamp_millis(), -1);
    let e = err::<DateTime<Utc>>(&ts, CqlValue::Timestamp(CqlTimestamp(i64::MAX)));
    assert!(
        matches!(&e, DecodeError::Invalid { column, cql_type, .. } if column == "c" && cql_type == "timestamp"),
        "{e:?}"
    );
    assert!(matches!(
        err::<i32>(&ts, CqlValue::Timestamp(CqlTimestamp(1))),
        DecodeError::Type { .. }
    ));

    let date = native(NativeType::Date);
    // 2024-02-29 is day 19782 after 1970-01-01.
    let v = CqlValue::Date(CqlDate((1 << 31) + 19782));
    assert_eq!(
        ok::<NaiveDate>(&date, v.clone()),
        NaiveDate::from_ymd_opt(2024, 2, 29).unwrap()
    );
    assert_eq!(ok::<String>(&date, v.clone()), "2024-02-29");
    assert_eq!(ok::<i32>(&date, v.clone()), 19782);
    assert_eq!(ok::<i64>(&date, v), 19782);
    assert_eq!(ok::<i32>(&date, CqlValue::Date(CqlDate(0))), i32::MIN);
    assert!(matches!(
        err::<NaiveDate>(&date, CqlValue::Date(CqlDate(0))),
        DecodeError::Invalid { .. }
    ));

    let time = native(NativeType::Time);
    let v = CqlValue::Time(CqlTime(3_723_000_000_005));
    assert_eq!(
        ok::<NaiveTime>(&time, v.clone()),
        NaiveTime::from_hms_nano_opt(1, 2, 3, 5).unwrap()
    );
    assert_eq!(ok::<String>(&time, v.clone()), "01:02:03.000000005");
    assert_eq!(ok::<i64>(&time, v), 3_723_000_000_005);
    assert!(matches!(
        err::<NaiveTime>(&time, CqlValue::Time(CqlTime(-1))),
        DecodeError::Invalid { .. }
    ));
}

#[test]
fn durations_into_structs_tuples_and_strings() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Duration {
        months: i32,
        days: i32,
        nanoseconds: i64,
    }
    let du = native(NativeType::Duration);
    let v = CqlValue::Duration(CqlDuration {
        months: 14,
        days: 3,
        nanoseconds: 3_723_000_000_000,
    });
    assert_eq!(
        ok::<Duration>(&du, v.clone()),
        Duration {
            months: 14,
            days: 3,
            nanoseconds: 3_723_000_000_000
        }
    );
    assert_eq!(
        ok::<(i32, i32, i64)>(&du, v.clone()),
        (14, 3, 3_723_000_000_000)
    );
    assert_eq!(ok::<String>(&du, v.clone()), "1y2mo3d1h2m3s");
    let neg = CqlValue::Duration(CqlDuration {
        months: 0,
        days: 0,
        nanoseconds: -1_500_000,
    });
    assert_eq!(ok::<String>(&du, neg), "-1ms500us");
    let zero = CqlValue::Duration(CqlDuration {
        months: 0,
        days: 0,
        nanoseconds: 0,
    });
    assert_eq!(ok::<String>(&du, zero), "0s");
    assert!(matches!(
        err::<(i32, i32)>(&du, v),
        DecodeError::Invalid { .. }
    ));
}

#[test]
fn inet_into_addresses_and_strings() {
    let inet = native(NativeType::Inet);
    let v4 = CqlValue::Inet(IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)));
    let v6 = CqlValue::Inet(IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert_eq!(
        ok::<IpAddr>(&inet, v4.clone()),
        IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3))
    );
    assert_eq!(
        ok::<Ipv4Addr>(&inet, v4.clone()),
        Ipv4Addr::new(10, 1, 2, 3)
    );
    assert_eq!(ok::<Ipv6Addr>(&inet, v6.clone()), Ipv6Addr::LOCALHOST);
    assert_eq!(ok::<String>(&inet, v4.clone()), "10.1.2.3");
    assert!(matches!(
        err::<Ipv6Addr>(&inet, v4),
        DecodeError::Invalid { .. }
    ));
}

#[test]
fn lists_sets_and_vectors() {
    for frozen in [true, false] {
        let l = list(native(NativeType::Text), frozen);
        let v = CqlValue::List(vec![CqlValue::Text("a".into()), CqlValue::Text("b".into())]);
        assert_eq!(ok::<Vec<String>>(&l, v.clone()), vec!["a", "b"]);
        assert_eq!(ok::<[String; 2]>(&l, v.clone()), ["a", "b"]);
        assert_eq!(ok::<ListValues<String>>(&l, v.clone()).0, vec!["a", "b"]);
        let e = err::<Vec<i32>>(&l, v);
        assert_eq!(
            e.to_string(),
            "column `c[0]`: CQL type text cannot be decoded into i32"
        );
        let s = set(native(NativeType::Int), frozen);
        let v = CqlValue::Set(vec![CqlValue::Int(3), CqlValue::Int(1)]);
        assert_eq!(ok::<Vec<i64>>(&s, v.clone()), vec![3, 1]);
        assert_eq!(ok::<HashSet<i32>>(&s, v.clone()), HashSet::from([1, 3]));
        assert_eq!(ok::<BTreeSet<u8>>(&s, v.clone()), BTreeSet::from([1, 3]));
        let e = err::<Vec<u8>>(&s, CqlValue::Set(vec![CqlValue::Int(1), CqlValue::Int(-1)]));
        assert!(
            matches!(&e, DecodeError::OutOfRange { column, .. } if column == "c[1]"),
            "{e:?}"
        );
    }
    let vt = ColumnType::Vector {
        typ: Box::new(native(NativeType::Float)),
        dimensions: 2,
    };
    let v = CqlValue::Vector(vec![CqlValue::Float(1.0), CqlValue::Float(2.0)]);
    assert_eq!(ok::<Vec<f32>>(&vt, v), vec![1.0, 2.0]);
}

#[test]
fn maps_into_maps_pairs_and_structs() {
    for frozen in [true, false] {
        let m = map(native(NativeType::Int), native(NativeType::Text), frozen);
        let v = CqlValue::Map(vec![
            (CqlValue::Int(2), CqlValue::Text("b".into())),
            (CqlValue::Int(1), CqlValue::Text("a".into())),
        ]);
        assert_eq!(
            ok::<HashMap<i32, String>>(&m, v.clone()),
            HashMap::from([(1, "a".to_owned()), (2, "b".to_owned())])
        );
        assert_eq!(
            ok::<BTreeMap<i64, String>>(&m, v.clone()),
            BTreeMap::from([(1, "a".to_owned()), (2, "b".to_owned())])
        );
        assert_eq!(
            ok::<Vec<(i32, String)>>(&m, v.clone()),
            vec![(2, "b".to_owned()), (1, "a".to_owned())]
        );
        let e = err::<HashMap<i32, i32>>(&m, v.clone());
        assert_eq!(
            e.to_string(),
            "column `c[2]`: CQL type text cannot be decoded into i32"
        );
        let e = err::<HashMap<String, String>>(&m, v.clone());
        assert!(
            matches!(&e, DecodeError::Type { column, cql_type, .. } if column == "c[2] (the key)" && cql_type == "int"),
            "{e:?}"
        );
        assert!(matches!(
            err::<Vec<String>>(&m, v),
            DecodeError::Type { .. }
        ));
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Point {
        x: i32,
        y: Option<i32>,
    }
    let m = map(native(NativeType::Text), native(NativeType::Int), true);
    let v = CqlValue::Map(vec![(CqlValue::Text("x".into()), CqlValue::Int(1))]);
    assert_eq!(ok::<Point>(&m, v), Point { x: 1, y: None });
}

#[test]
fn the_log_form_of_a_list_keeps_or_drops_its_keys() {
    // A non-frozen `list<text>` in the log: `frozen<map<timeuuid, text>>`.
    let l = map(native(NativeType::Timeuuid), native(NativeType::Text), true);
    let k1 = Uuid::from_u128(1);
    let k2 = Uuid::from_u128(2);
    let key = |u: Uuid| CqlValue::Timeuuid(CqlTimeuuid::from_bytes(*u.as_bytes()));
    let v = CqlValue::Map(vec![
        (key(k1), CqlValue::Text("x".into())),
        (key(k2), CqlValue::Text("y".into())),
    ]);
    assert_eq!(
        ok::<BTreeMap<Uuid, String>>(&l, v.clone()),
        BTreeMap::from([(k1, "x".to_owned()), (k2, "y".to_owned())])
    );
    assert_eq!(
        ok::<Vec<(Uuid, String)>>(&l, v.clone()),
        vec![(k1, "x".to_owned()), (k2, "y".to_owned())]
    );
    assert_eq!(
        ok::<ListValues<String>>(&l, v.clone()).into_inner(),
        vec!["x", "y"]
    );
    assert_eq!(
        ok::<Option<ListValues<String>>>(&l, v.clone()).map(|l| l.len()),
        Some(2)
    );
    let e = err::<ListValues<i32>>(&l, v);
    assert!(
        matches!(&e, DecodeError::Type { column, .. } if column.starts_with("c[")),
        "{e:?}"
    );
    assert_eq!(
        serde_json::to_string(&ListValues(vec![1, 2])).unwrap(),
        "[1,2]"
    );
}

#[test]
fn tuples() {
    let t = ColumnType::Tuple(vec![native(NativeType::Int), native(NativeType::Text)]);
    let v = CqlValue::Tuple(vec![
        Some(CqlValue::Int(4)),
        Some(CqlValue::Text("y".into())),
    ]);
    assert_eq!(ok::<(i32, String)>(&t, v.clone()), (4, "y".to_owned()));
    assert_eq!(
        ok::<(i64, Option<String>)>(&t, CqlValue::Tuple(vec![Some(CqlValue::Int(4)), None])),
        (4, None)
    );
    let e = err::<(i32, String)>(&t, CqlValue::Tuple(vec![Some(CqlValue::Int(4)), None]));
    assert!(
        matches!(&e, DecodeError::Null { column, cql_type, .. } if column == "c[1]" && cql_type == "text"),
        "{e:?}"
    );
    assert!(matches!(
        err::<(i32, String, i32)>(&t, v.clone()),
        DecodeError::Invalid { .. }
    ));
    assert!(matches!(
        err::<(String, String)>(&t, v),
        DecodeError::Type { .. }
    ));
    let same = ColumnType::Tuple(vec![native(NativeType::Int), native(NativeType::Int)]);
    assert_eq!(
        ok::<Vec<Option<i32>>>(&same, CqlValue::Tuple(vec![None, Some(CqlValue::Int(1))])),
        vec![None, Some(1)]
    );
}

#[test]
fn udts_into_structs_and_maps() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Ut {
        a: Option<i32>,
        b: Option<String>,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Strict {
        a: i32,
    }
    for frozen in [true, false] {
        let t = udt_type(frozen);
        assert_eq!(
            ok::<Ut>(&t, udt(Some(1), Some("x"))),
            Ut {
                a: Some(1),
                b: Some("x".into())
            }
        );
        // A non-frozen UDT in the log: the fields the change did not set are null.
        assert_eq!(
            ok::<Ut>(&t, udt(None, Some("x"))),
            Ut {
                a: None,
                b: Some("x".into())
            }
        );
        assert_eq!(ok::<Strict>(&t, udt(Some(2), None)), Strict { a: 2 });
        let e = err::<Strict>(&t, udt(None, None));
        assert!(
            matches!(&e, DecodeError::Null { column, cql_type, expected }
                if column == "c.a" && cql_type == "int" && expected == "i32"),
            "{e:?}"
        );
        let m: HashMap<String, Option<i32>> = match one(&t, Some(&udt(Some(1), None))) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            m,
            HashMap::from([("a".into(), Some(1)), ("b".into(), None)])
        );
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct NeedsC {
        c: i32,
    }
    let e = err::<NeedsC>(&udt_type(true), udt(Some(1), None));
    assert!(
        matches!(&e, DecodeError::MissingColumn { column } if column == "c.c"),
        "{e:?}"
    );
    let e = err::<Ut>(&udt_type(true), CqlValue::Int(1));
    assert!(
        matches!(&e, DecodeError::Type { cql_type, expected, .. } if cql_type == "frozen<ut>" && expected == "struct Ut"),
        "{e:?}"
    );
}

#[test]
fn null_and_absent_columns() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Row {
        pk: i32,
        v: Option<i32>,
        w: Option<String>,
        #[serde(default)]
        d: i32,
    }
    let int = native(NativeType::Int);
    let pk = CqlValue::Int(1);
    let row: Row = from_columns([("pk", &int, Some(&pk)), ("v", &int, None)]).unwrap();
    assert_eq!((row.pk, row.v, row.w, row.d), (1, None, None, 0));
    // The empty value (zero bytes of a non-text type) is null too.
    let row: Row =
        from_columns([("pk", &int, Some(&pk)), ("v", &int, Some(&CqlValue::Empty))]).unwrap();
    assert_eq!(row.v, None);

    let e = from_columns::<Row, _>([("pk", &int, None)]).unwrap_err();
    assert!(
        matches!(&e, DecodeError::Null { column, cql_type, expected }
            if column == "pk" && cql_type == "int" && expected == "i32"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "column `pk` of CQL type int is null, and i32 cannot hold null (make the field an `Option`)"
    );
    let e = from_columns::<Row, _>([("v", &int, Some(&pk))]).unwrap_err();
    assert!(
        matches!(&e, DecodeError::MissingColumn { column } if column == "pk"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "there is no column `pk` for a field that is not an `Option`"
    );
}

#[test]
fn a_row_is_a_struct_or_a_map() {
    let int = native(NativeType::Int);
    let v = CqlValue::Int(1);
    let e = from_columns::<i32, _>([("pk", &int, Some(&v))]).unwrap_err();
    assert!(matches!(&e, DecodeError::NotAStruct { expected } if expected == "i32"));
    let m: BTreeMap<String, Option<i64>> =
        from_columns([("a", &int, Some(&v)), ("b", &int, None)]).unwrap();
    assert_eq!(
        m,
        BTreeMap::from([("a".into(), Some(1)), ("b".into(), None)])
    );

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Strict {
        a: i32,
    }
    let e = from_columns::<Strict, _>([("a", &int, Some(&v)), ("x", &int, Some(&v))]).unwrap_err();
    assert!(
        matches!(&e, DecodeError::Invalid { column, .. } if column == "x"),
        "{e:?}"
    );
    let e = from_columns::<Strict, _>([("a", &int, Some(&v)), ("a", &int, Some(&v))]).unwrap_err();
    assert!(matches!(&e, DecodeError::Invalid { column, .. } if column == "a"));

    #[derive(Deserialize, Debug, PartialEq)]
    struct Id(i32);
    #[derive(Deserialize, Debug, PartialEq)]
    struct Renamed {
        #[serde(rename = "user id")]
        id: Id,
    }
    let r: Renamed = from_columns([("user id", &int, Some(&v))]).unwrap();
    assert_eq!(r, Renamed { id: Id(1) });
}

#[test]
fn json_values_and_a_decoded_struct_as_json() {
    let int = native(NativeType::Int);
    let text = native(NativeType::Text);
    let ts = native(NativeType::Timestamp);
    let l = list(native(NativeType::Int), true);
    let ut = udt_type(true);
    let values = [
        CqlValue::Int(1),
        CqlValue::Text("x".into()),
        CqlValue::Timestamp(CqlTimestamp(0)),
        CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]),
        udt(Some(3), None),
    ];
    let row: serde_json::Value = from_columns([
        ("i", &int, Some(&values[0])),
        ("t", &text, Some(&values[1])),
        ("ts", &ts, Some(&values[2])),
        ("l", &l, Some(&values[3])),
        ("u", &ut, Some(&values[4])),
        ("n", &int, None),
    ])
    .unwrap();
    assert_eq!(
        row,
        serde_json::json!({
            "i": 1, "t": "x", "ts": "1970-01-01T00:00:00.000Z", "l": [1, 2],
            "u": {"a": 3, "b": null}, "n": null
        })
    );

    // Dates and times chrono cannot represent are their numbers.
    let date = native(NativeType::Date);
    let far = CqlValue::Date(CqlDate(0));
    let v: serde_json::Value = one(&date, Some(&far)).unwrap();
    assert_eq!(v, serde_json::json!(i32::MIN));
    let v: serde_json::Value =
        one(&ts, Some(&CqlValue::Timestamp(CqlTimestamp(i64::MAX)))).unwrap();
    assert_eq!(v, serde_json::json!(i64::MAX));
    let v: serde_json::Value =
        one(&native(NativeType::Varint), Some(&varint(&[0x01, 0x00]))).unwrap();
    assert_eq!(v, serde_json::json!("256"));

    #[derive(Deserialize, serde::Serialize)]
    struct Row {
        i: i32,
        ts: DateTime<Utc>,
    }
    let r: Row =
        from_columns([("i", &int, Some(&values[0])), ("ts", &ts, Some(&values[2]))]).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"i":1,"ts":"1970-01-01T00:00:00Z"}"#
    );
}

/// Every sample value into every target type: errors, never panics.
#[test]
fn no_input_panics() {
    let ut = udt_type(true);
    let samples: Vec<(ColumnType<'static>, CqlValue)> = vec![
        (native(NativeType::Int), CqlValue::Int(-1)),
        (native(NativeType::BigInt), CqlValue::BigInt(i64::MIN)),
        (native(NativeType::Varint), varint(&[0x80; 40])),
        (native(NativeType::Decimal), decimal(-1, i32::MAX)),
        (native(NativeType::Double), CqlValue::Double(f64::NAN)),
        (native(NativeType::Text), CqlValue::Text(String::new())),
        (native(NativeType::Blob), CqlValue::Blob(vec![0; 3])),
        (
            native(NativeType::Timestamp),
            CqlValue::Timestamp(CqlTimestamp(i64::MIN)),
        ),
        (native(NativeType::Date), CqlValue::Date(CqlDate(u32::MAX))),
        (native(NativeType::Time), CqlValue::Time(CqlTime(i64::MAX))),
        (
            native(NativeType::Duration),
            CqlValue::Duration(CqlDuration {
                months: i32::MIN,
                days: i32::MIN,
                nanoseconds: i64::MIN,
            }),
        ),
        (native(NativeType::Int), CqlValue::Empty),
        (native(NativeType::Int), CqlValue::Text("mismatched".into())),
        (ut.clone(), udt(None, None)),
        (ut, CqlValue::Tuple(vec![None])),
        (
            map(native(NativeType::Int), native(NativeType::Int), true),
            CqlValue::Map(vec![(CqlValue::Empty, CqlValue::Empty)]),
        ),
        (
            ColumnType::Tuple(vec![]),
            CqlValue::Tuple(vec![Some(CqlValue::Int(1)), None]),
        ),
        (
            list(native(NativeType::Int), false),
            CqlValue::List(vec![CqlValue::Empty]),
        ),
    ];
    macro_rules! try_all {
        ($typ:expr, $value:expr, $($t:ty),*) => {
            $( let _ = one::<$t>($typ, Some($value)); let _ = one::<$t>($typ, None); )*
        };
    }
    for (typ, value) in &samples {
        try_all!(
            typ, value, i8, u16, i32, u64, i128, u128, f32, f64, bool, char, String, Vec<u8>,
            serde_bytes::ByteBuf, Uuid, DateTime<Utc>, NaiveDate, NaiveTime, IpAddr,
            HashMap<String, i32>, HashMap<i32, Option<i32>>, Vec<(i32, i32)>, (i32, i32),
            Vec<Option<i32>>, ListValues<i32>, serde_json::Value, Color, (), Option<String>
        );
    }
}

#[test]
fn a_log_row_decodes_its_base_columns() {
    use crate::consumer::CDCRow;
    use crate::consumer::columns::ColumnIndex;
    use crate::consumer::tests::{TestRow, log_specs};

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Row {
        pk: i32,
        ck: Option<i32>,
        v: Option<i32>,
        s: Option<BTreeSet<i32>>,
    }
    let specs = log_specs();
    let idx = std::sync::Arc::new(ColumnIndex::new(&specs).unwrap());
    let mut r = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0);
    r.pk = 9;
    r.v = None;
    r.del_v = true;
    r.s = Some(vec![3, 1]);
    r.dele_s = Some(vec![7]);
    let cells = r.cells();
    let refs: Vec<Option<&[u8]>> = cells.iter().map(|c| c.as_deref()).collect();
    let h = idx.header(&refs).unwrap();
    let mut row = CDCRow::new(h, &idx, &specs, &refs);
    // Only the base columns: `cdc$` columns would be unknown fields of `Row`.
    let decoded: Row = row.decode().unwrap();
    assert_eq!(
        decoded,
        Row {
            pk: 9,
            ck: Some(0),
            v: None,
            s: Some(BTreeSet::from([1, 3]))
        }
    );
    // Deletions beside the value.
    assert!(row.is_value_deleted("v"));
    assert_eq!(
        row.get_deleted_elements("s").unwrap(),
        Some(CqlValue::Set(vec![CqlValue::Int(7)]))
    );
    // The same, gathered.
    let deletions = row.deletions().unwrap();
    assert_eq!(deletions.columns, vec!["v"]);
    assert!(deletions.is_deleted("v") && !deletions.is_deleted("s") && !deletions.is_empty());
    assert_eq!(
        deletions.elements_as::<Vec<i64>>("s").unwrap(),
        Some(vec![7])
    );
    assert_eq!(deletions.elements_as::<Vec<i64>>("v").unwrap(), None);
    let e = deletions.elements_as::<Vec<String>>("s").unwrap_err();
    assert!(
        matches!(&e, DecodeError::Type { column, cql_type, .. }
            if column == "cdc$deleted_elements_s[0]" && cql_type == "int"),
        "{e:?}"
    );
    // A map has every base column, and no `cdc$` one.
    let all: BTreeMap<String, serde_json::Value> = row.decode().unwrap();
    assert_eq!(
        all.keys().map(String::as_str).collect::<Vec<_>>(),
        vec!["ck", "pk", "s", "v"]
    );
    assert_eq!(all["v"], serde_json::Value::Null);
    // A struct: only its columns are decoded (a malformed column it does not name is not read).
    #[derive(Deserialize, Debug)]
    struct JustPk {
        pk: i32,
    }
    // A taken value decodes as null.
    row.take_value("s").unwrap();
    assert_eq!(row.decode::<Row>().unwrap().s, None);

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Wrong {
        v: i32,
    }
    let e = row.decode::<Wrong>().unwrap_err();
    assert!(
        matches!(&e, DecodeError::Null { column, .. } if column == "v"),
        "{e:?}"
    );

    // A malformed cell is the accessor's error.
    let mut cells = r.cells();
    cells[12] = Some(vec![1, 2, 3]); // `v`: an int of 3 bytes
    let refs: Vec<Option<&[u8]>> = cells.iter().map(|c| c.as_deref()).collect();
    let row = CDCRow::new(h, &idx, &specs, &refs);
    let e = row.decode::<Row>().unwrap_err();
    assert!(
        matches!(&e, DecodeError::Column(ColumnError::Decode { column, .. }) if column == "v"),
        "{e:?}"
    );
    assert_eq!(row.decode::<JustPk>().unwrap().pk, 9);
}

#[test]
fn the_columns_a_type_asks_for() {
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Row {
        pk: i32,
        #[serde(rename = "Value", alias = "v2")]
        v: Option<i32>,
    }
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Wrapper(Row);
    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        pk: i32,
        #[serde(flatten)]
        rest: BTreeMap<String, i32>,
    }
    assert_eq!(requested_columns::<Row>(), Some(&["pk", "Value", "v2"][..]));
    assert_eq!(
        requested_columns::<Option<Wrapper>>(),
        Some(&["pk", "Value", "v2"][..])
    );
    assert_eq!(requested_columns::<Flat>(), None);
    assert_eq!(requested_columns::<HashMap<String, i32>>(), None);
    assert_eq!(requested_columns::<serde_json::Value>(), None);
    assert_eq!(requested_columns::<i32>(), None);
}

#[test]
fn one_value() {
    let l = list(native(NativeType::Int), true);
    let v = CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(300)]);
    assert_eq!(
        from_value::<Vec<i32>>("l", &l, Some(&v)).unwrap(),
        vec![1, 300]
    );
    assert_eq!(from_value::<Option<Vec<i32>>>("l", &l, None).unwrap(), None);
    let e = from_value::<Vec<u8>>("l", &l, Some(&v)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "column `l[1]`: the int value 300 does not fit in u8"
    );
    let e = from_value::<Vec<u8>>("l", &l, None).unwrap_err();
    assert!(
        matches!(&e, DecodeError::Null { column, cql_type, .. } if column == "l" && cql_type == "frozen<list<int>>"),
        "{e:?}"
    );
}
