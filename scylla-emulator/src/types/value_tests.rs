//! Tests of [`super`]: the codec against the `scylla` driver's own encoder and decoder, the
//! comparators, literals.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use bytes::BytesMut;
use num_bigint::BigInt;
use scylla::deserialize::FrameSlice;
use scylla::deserialize::value::DeserializeValue;
use scylla::frame::response::result::{CollectionType, ColumnType, NativeType, UserDefinedType};
use scylla::serialize::value::SerializeValue;
use scylla::serialize::writers::CellWriter;
use scylla::value::{
    CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlValue, CqlVarint,
};
use uuid::Uuid;

use super::*;
use crate::types::{CqlType, UserType, timeuuid};

fn column_type(t: &CqlType) -> ColumnType<'static> {
    use CqlType as T;
    let native = |n| ColumnType::Native(n);
    match t {
        T::Ascii => native(NativeType::Ascii),
        T::Bigint => native(NativeType::BigInt),
        T::Blob => native(NativeType::Blob),
        T::Boolean => native(NativeType::Boolean),
        T::Counter => native(NativeType::Counter),
        T::Date => native(NativeType::Date),
        T::Decimal => native(NativeType::Decimal),
        T::Double => native(NativeType::Double),
        T::Duration => native(NativeType::Duration),
        T::Float => native(NativeType::Float),
        T::Inet => native(NativeType::Inet),
        T::Int => native(NativeType::Int),
        T::Smallint => native(NativeType::SmallInt),
        T::Text => native(NativeType::Text),
        T::Time => native(NativeType::Time),
        T::Timestamp => native(NativeType::Timestamp),
        T::Timeuuid => native(NativeType::Timeuuid),
        T::Tinyint => native(NativeType::TinyInt),
        T::Uuid => native(NativeType::Uuid),
        T::Varint => native(NativeType::Varint),
        T::List { elem, frozen } => ColumnType::Collection {
            frozen: *frozen,
            typ: CollectionType::List(Box::new(column_type(elem))),
        },
        T::Set { elem, frozen } => ColumnType::Collection {
            frozen: *frozen,
            typ: CollectionType::Set(Box::new(column_type(elem))),
        },
        T::Map { key, value, frozen } => ColumnType::Collection {
            frozen: *frozen,
            typ: CollectionType::Map(Box::new(column_type(key)), Box::new(column_type(value))),
        },
        T::Tuple(ts) => ColumnType::Tuple(ts.iter().map(column_type).collect()),
        T::Udt { def, frozen } => ColumnType::UserDefinedType {
            frozen: *frozen,
            definition: Arc::new(UserDefinedType {
                name: Cow::Owned(def.name.clone()),
                keyspace: Cow::Owned(def.keyspace.clone()),
                field_types: def
                    .fields
                    .iter()
                    .map(|(n, t)| (Cow::Owned(n.clone()), column_type(t)))
                    .collect(),
            }),
        },
    }
}

/// The driver's value for one of ours (the test oracle).
fn cql_value(t: &CqlType, v: &Value) -> CqlValue {
    use CqlType as T;
    match (t, v) {
        (_, Value::Empty) => CqlValue::Empty,
        (T::Ascii, Value::Text(s)) => CqlValue::Ascii(s.to_string()),
        (T::Text, Value::Text(s)) => CqlValue::Text(s.to_string()),
        (T::Counter, Value::Bigint(n)) => CqlValue::Counter(scylla::value::Counter(*n)),
        (_, Value::Bigint(n)) => CqlValue::BigInt(*n),
        (_, Value::Blob(b)) => CqlValue::Blob(b.to_vec()),
        (_, Value::Boolean(b)) => CqlValue::Boolean(*b),
        (_, Value::Date(d)) => CqlValue::Date(CqlDate(*d)),
        (_, Value::Decimal(d)) => CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_and_exponent(
            d.unscaled.as_bytes().to_vec(),
            d.scale,
        )),
        (_, Value::Double(x)) => CqlValue::Double(*x),
        (_, Value::Float(x)) => CqlValue::Float(*x),
        (_, Value::Duration(d)) => CqlValue::Duration(CqlDuration {
            months: d.months,
            days: d.days,
            nanoseconds: d.nanos,
        }),
        (_, Value::Inet(a)) => CqlValue::Inet(*a),
        (_, Value::Int(n)) => CqlValue::Int(*n),
        (_, Value::Smallint(n)) => CqlValue::SmallInt(*n),
        (_, Value::Tinyint(n)) => CqlValue::TinyInt(*n),
        (_, Value::Time(n)) => CqlValue::Time(CqlTime(*n)),
        (_, Value::Timestamp(n)) => CqlValue::Timestamp(CqlTimestamp(*n)),
        (_, Value::Uuid(u)) => CqlValue::Uuid(*u),
        (_, Value::Timeuuid(u)) => CqlValue::Timeuuid(CqlTimeuuid::from(*u)),
        (_, Value::Varint(n)) => {
            CqlValue::Varint(CqlVarint::from_signed_bytes_be(n.as_bytes().to_vec()))
        }
        (T::List { elem, .. }, Value::List(xs)) => {
            CqlValue::List(xs.iter().map(|x| cql_value(elem, x)).collect())
        }
        (T::Set { elem, .. }, Value::Set(xs)) => {
            CqlValue::Set(xs.iter().map(|x| cql_value(elem, x)).collect())
        }
        (T::Map { key, value, .. }, Value::Map(xs)) => CqlValue::Map(
            xs.iter()
                .map(|(k, x)| (cql_value(key, k), cql_value(value, x)))
                .collect(),
        ),
        (T::Tuple(ts), Value::Tuple(xs)) => CqlValue::Tuple(
            ts.iter()
                .enumerate()
                .map(|(i, t)| xs.get(i).cloned().flatten().map(|x| cql_value(t, &x)))
                .collect(),
        ),
        (T::Udt { def, .. }, Value::Udt(xs)) => CqlValue::UserDefinedType {
            keyspace: def.keyspace.clone(),
            name: def.name.clone(),
            fields: def
                .fields
                .iter()
                .enumerate()
                .map(|(i, (n, t))| {
                    (
                        n.clone(),
                        xs.get(i).cloned().flatten().map(|x| cql_value(t, &x)),
                    )
                })
                .collect(),
        },
        (t, v) => panic!("test bug: {v:?} is not a {t}"),
    }
}

fn driver_encode(t: &CqlType, v: &CqlValue) -> Vec<u8> {
    let mut buf = Vec::new();
    v.serialize(&column_type(t), CellWriter::new_without_size(&mut buf))
        .expect("driver serializes");
    buf
}

fn driver_decode(t: &CqlType, bytes: &[u8]) -> CqlValue {
    let ct = column_type(t);
    CqlValue::deserialize(&ct, Some(FrameSlice::new_borrowed(bytes))).expect("driver decodes")
}

fn ours(v: &Value) -> Vec<u8> {
    let mut out = BytesMut::new();
    v.encode(&mut out);
    out.to_vec()
}

/// Both directions against the driver, plus our own round trip.
fn check(t: &CqlType, v: Value) {
    let expected = cql_value(t, &v);
    let driver_bytes = driver_encode(t, &expected);
    let decoded = decode(t, &driver_bytes).unwrap_or_else(|e| panic!("{t}: {e}"));
    assert_eq!(decoded, v, "decode of driver bytes for {t}");
    // Bit-exact (NaN payloads, -0.0) where the order calls them equal.
    assert_eq!(ours(&decoded), ours(&v), "{t}");
    let our_bytes = ours(&v);
    let back = driver_decode(t, &our_bytes);
    match (&back, &expected) {
        (CqlValue::Float(a), CqlValue::Float(b)) => assert_eq!(a.to_bits(), b.to_bits()),
        (CqlValue::Double(a), CqlValue::Double(b)) => assert_eq!(a.to_bits(), b.to_bits()),
        _ => assert_eq!(back, expected, "driver decode of our bytes for {t}"),
    }
    let mut with_len = BytesMut::new();
    v.encode_with_len(&mut with_len);
    assert_eq!(&with_len[..4], &(our_bytes.len() as i32).to_be_bytes());
    assert_eq!(&with_len[4..], &our_bytes[..]);
}

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

fn udt_type() -> CqlType {
    CqlType::Udt {
        def: Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![
                ("a".into(), CqlType::Int),
                ("b".into(), CqlType::Text),
                ("c".into(), list(CqlType::Int).frozen()),
            ],
        }),
        frozen: true,
    }
}

#[test]
fn value_is_small() {
    assert!(std::mem::size_of::<Value>() <= 24);
    assert_eq!(
        std::mem::size_of::<Option<Value>>(),
        std::mem::size_of::<Value>()
    );
}

#[test]
fn native_types_match_the_driver() {
    use CqlType as T;
    check(&T::Int, Value::Int(i32::MIN));
    check(&T::Int, Value::Int(42));
    check(&T::Bigint, Value::Bigint(i64::MIN));
    check(&T::Bigint, Value::Bigint(i64::MAX));
    check(&T::Counter, Value::Bigint(-7));
    check(&T::Smallint, Value::Smallint(i16::MIN));
    check(&T::Tinyint, Value::Tinyint(-128));
    check(&T::Boolean, Value::Boolean(true));
    check(&T::Boolean, Value::Boolean(false));
    check(&T::Float, Value::Float(f32::NAN));
    check(&T::Float, Value::Float(-0.0));
    check(&T::Float, Value::Float(f32::INFINITY));
    check(&T::Double, Value::Double(f64::NAN));
    check(&T::Double, Value::Double(-0.0));
    check(&T::Double, Value::Double(f64::MIN_POSITIVE));
    check(&T::Text, Value::text(""));
    check(&T::Text, Value::text("zażółć 🦀"));
    check(&T::Ascii, Value::text("plain"));
    check(&T::Ascii, Value::text(""));
    check(&T::Blob, Value::blob(Vec::new()));
    check(&T::Blob, Value::blob(vec![0, 1, 255]));
    check(&T::Date, Value::Date(0));
    check(&T::Date, Value::Date(1 << 31));
    check(&T::Date, Value::Date(u32::MAX));
    check(&T::Time, Value::Time(NANOS_PER_DAY - 1));
    check(&T::Timestamp, Value::Timestamp(-1));
    check(&T::Timestamp, Value::Timestamp(i64::MIN));
    check(
        &T::Inet,
        Value::Inet(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))),
    );
    check(&T::Inet, Value::Inet(IpAddr::V6(Ipv6Addr::LOCALHOST)));
    check(&T::Uuid, Value::Uuid(Uuid::new_v4()));
    check(&T::Uuid, Value::Uuid(Uuid::nil()));
    check(&T::Timeuuid, Value::Timeuuid(timeuuid::now()));
    check(&T::Timeuuid, Value::Timeuuid(timeuuid::min_timeuuid(0)));
    check(
        &T::Duration,
        Value::Duration(Duration {
            months: 1,
            days: 2,
            nanos: 3,
        }),
    );
    check(
        &T::Duration,
        Value::Duration(Duration {
            months: i32::MIN,
            days: i32::MIN,
            nanos: i64::MIN,
        }),
    );
    check(
        &T::Duration,
        Value::Duration(Duration {
            months: i32::MAX,
            days: 0,
            nanos: i64::MAX,
        }),
    );
    for n in [
        BigInt::from(0),
        BigInt::from(-1),
        BigInt::from(127),
        BigInt::from(128),
        BigInt::from(-128),
        BigInt::from(-129),
        BigInt::from(i64::MIN) * BigInt::from(i64::MAX) * BigInt::from(i64::MAX),
    ] {
        check(&T::Varint, Value::varint(&n));
        check(&T::Decimal, Value::decimal(&n, 3));
        check(&T::Decimal, Value::decimal(&n, -5));
        check(&T::Decimal, Value::decimal(&n, i32::MIN));
    }
}

#[test]
fn empty_values_match_the_driver() {
    use CqlType as T;
    for t in [
        T::Int,
        T::Bigint,
        T::Boolean,
        T::Uuid,
        T::Timeuuid,
        T::Double,
        T::Decimal,
        T::Varint,
        T::Inet,
        T::Date,
        T::Tuple(vec![T::Int]),
    ] {
        assert_eq!(decode(&t, &[]), Ok(Value::Empty), "{t}");
        check(&t, Value::Empty);
    }
    // The driver never sends these empty, but reads them as empty; so does Scylla.
    for t in [T::Duration, udt_type()] {
        assert_eq!(decode(&t, &[]), Ok(Value::Empty), "{t}");
        assert_eq!(driver_decode(&t, &[]), CqlValue::Empty);
    }
    assert!(decode(&T::Counter, &[]).is_err());
    // Zero-length strings and blobs are ordinary values.
    assert_eq!(decode(&T::Text, &[]), Ok(Value::text("")));
    assert_eq!(decode(&T::Blob, &[]), Ok(Value::blob(Vec::new())));
    // A collection always has its element count.
    assert!(decode(&list(T::Int), &[]).is_err());
}

#[test]
fn collections_tuples_and_udts_match_the_driver() {
    use CqlType as T;
    check(&list(T::Int), Value::list(vec![]));
    check(
        &list(T::Text),
        Value::list(vec![Value::text("b"), Value::text("a"), Value::text("b")]),
    );
    check(
        &set(T::Int),
        Value::set(vec![Value::Int(3), Value::Int(-1), Value::Int(3)]),
    );
    check(
        &map(T::Text, list(T::Int).frozen()),
        Value::map(vec![
            (Value::text("z"), Value::list(vec![Value::Int(1)])),
            (Value::text("a"), Value::list(vec![])),
        ]),
    );
    let nested = map(T::Int, set(map(T::Timeuuid, T::Blob).frozen()));
    check(
        &nested,
        Value::map(vec![(
            Value::Int(1),
            Value::set(vec![Value::map(vec![(
                Value::Timeuuid(timeuuid::from_micros(5)),
                Value::blob(vec![1]),
            )])]),
        )]),
    );
    let tt = T::Tuple(vec![T::Int, T::Text, T::Double]);
    check(
        &tt,
        Value::tuple(vec![Some(Value::Int(1)), None, Some(Value::Double(0.5))]),
    );
    check(&tt, Value::tuple(vec![None, None, None]));
    let ut = udt_type();
    check(
        &ut,
        Value::udt(vec![
            Some(Value::Int(1)),
            None,
            Some(Value::list(vec![Value::Int(2)])),
        ]),
    );
    check(&ut, Value::udt(vec![None, Some(Value::text("x")), None]));
    check(
        &list(ut.clone()),
        Value::list(vec![Value::udt(vec![Some(Value::Int(1)), None, None])]),
    );
}

#[test]
fn sets_and_maps_from_the_wire_are_sorted_and_deduplicated() {
    let t = set(CqlType::Int);
    let bytes = driver_encode(
        &t,
        &CqlValue::Set(vec![CqlValue::Int(5), CqlValue::Int(-5), CqlValue::Int(5)]),
    );
    assert_eq!(
        decode(&t, &bytes).unwrap(),
        Value::Set(Arc::from(vec![Value::Int(-5), Value::Int(5)]))
    );
    let t = map(CqlType::Int, CqlType::Text);
    let bytes = driver_encode(
        &t,
        &CqlValue::Map(vec![
            (CqlValue::Int(2), CqlValue::Text("first".into())),
            (CqlValue::Int(1), CqlValue::Text("x".into())),
            (CqlValue::Int(2), CqlValue::Text("second".into())),
        ]),
    );
    assert_eq!(
        decode(&t, &bytes).unwrap(),
        Value::Map(Arc::from(vec![
            (Value::Int(1), Value::text("x")),
            (Value::Int(2), Value::text("first")),
        ]))
    );
}

#[test]
fn udt_with_fewer_fields_gets_nulls_and_more_fields_is_an_error() {
    let ut = udt_type();
    // One field only.
    let mut b = BytesMut::new();
    Value::Int(7).encode_with_len(&mut b);
    assert_eq!(
        decode(&ut, &b).unwrap(),
        Value::udt(vec![Some(Value::Int(7)), None, None])
    );
    assert_eq!(
        decode(&ut, &b).unwrap(),
        Value::udt(vec![Some(Value::Int(7))])
    );
    // Four fields.
    for _ in 0..3 {
        encode_option(None, &mut b);
    }
    let err = decode(&ut, &b).unwrap_err();
    assert!(err.message().contains("more fields"), "{err}");
}

#[test]
fn strict_decoding_names_type_and_problem() {
    use CqlType as T;
    let e = decode(&T::Int, &[0, 0, 1]).unwrap_err();
    assert_eq!(e.message(), "Expected 4 or 0 byte int (3)");
    assert!(decode(&T::Bigint, &[0; 9]).is_err());
    assert!(decode(&T::Smallint, &[0; 3]).is_err());
    assert!(decode(&T::Tinyint, &[0; 2]).is_err());
    assert!(decode(&T::Boolean, &[0; 2]).is_err());
    assert!(decode(&T::Uuid, &[0; 15]).is_err());
    assert!(decode(&T::Inet, &[0; 5]).is_err());
    assert!(decode(&T::Decimal, &[0; 3]).is_err());
    assert!(decode(&T::Decimal, &[0; 4]).is_err());
    assert!(decode(&T::Time, &(-1i64).to_be_bytes()).is_err());
    assert!(decode(&T::Time, &NANOS_PER_DAY.to_be_bytes()).is_err());
    // A v4 UUID is not a timeuuid.
    assert!(decode(&T::Timeuuid, Uuid::new_v4().as_bytes()).is_err());
    assert_eq!(
        decode(&T::Ascii, b"caf\xc3\xa9").unwrap_err().message(),
        "Invalid byte for ascii: 195"
    );
    assert!(decode(&T::Text, &[0xff, 0xfe]).is_err());
    // Durations: mixed signs, truncated vint, trailing byte, months out of i32.
    let mut d = BytesMut::new();
    write_vint(1, &mut d);
    write_vint(-1, &mut d);
    write_vint(0, &mut d);
    assert!(decode(&T::Duration, &d).is_err());
    assert!(decode(&T::Duration, &[0x02, 0x02, 0xc0]).is_err());
    assert!(decode(&T::Duration, &[0, 0, 0, 0]).is_err());
    let mut d = BytesMut::new();
    write_vint(i64::from(i32::MAX) + 1, &mut d);
    write_vint(0, &mut d);
    write_vint(0, &mut d);
    assert!(decode(&T::Duration, &d).is_err());
    // Collections: null element, negative count, truncated element, trailing bytes.
    let l = list(T::Int);
    let mut b = BytesMut::new();
    b.put_i32(1);
    b.put_i32(-1);
    assert!(
        decode(&l, &b)
            .unwrap_err()
            .message()
            .contains("null is not supported")
    );
    assert!(decode(&l, &(-1i32).to_be_bytes()).is_err());
    let mut b = BytesMut::new();
    b.put_i32(1);
    b.put_i32(8);
    b.put_i32(0);
    assert!(decode(&l, &b).is_err());
    let mut b = BytesMut::new();
    Value::list(vec![Value::Int(1)]).encode(&mut b);
    b.put_u8(0);
    assert!(decode(&l, &b).is_err());
    // Element errors propagate.
    let mut b = BytesMut::new();
    b.put_i32(1);
    b.put_i32(3);
    b.put_slice(&[0, 0, 0]);
    assert!(decode(&l, &b).is_err());
    // Huge counts do not allocate.
    assert!(decode(&l, &i32::MAX.to_be_bytes()).is_err());
}

#[test]
fn varints_are_normalised() {
    assert_eq!(
        decode(&CqlType::Varint, &[0, 0, 1]).unwrap(),
        Value::varint(&BigInt::from(1))
    );
    assert_eq!(
        decode(&CqlType::Varint, &[0xff, 0xff, 0x80]).unwrap(),
        Value::varint(&BigInt::from(-128))
    );
    assert_eq!(Varint::from_i64(-129).as_bytes(), &[0xff, 0x7f]);
    assert_eq!(Varint::from_i64(-129).to_i64(), Some(-129));
    assert_eq!(Varint::from_i64(i64::MIN).to_i64(), Some(i64::MIN));
}

#[test]
fn vint_encoding_matches_the_spec() {
    for (v, expect) in [
        (0u64, vec![0u8]),
        (127, vec![127]),
        (128, vec![0x80, 0x80]),
        (16383, vec![0xbf, 0xff]),
        (16384, vec![0xc0, 0x40, 0x00]),
        (u64::MAX, vec![0xff; 9]),
    ] {
        let mut out = BytesMut::new();
        write_unsigned_vint(v, &mut out);
        assert_eq!(&out[..], &expect[..], "{v}");
        let mut r = &expect[..];
        assert_eq!(read_unsigned_vint(&mut r), Some(v));
        assert!(r.is_empty());
    }
}

fn sorted(mut v: Vec<Value>) -> Vec<Value> {
    v.sort();
    v
}

#[test]
fn orderings_follow_scylla_comparators() {
    // Floats: -0.0 < 0.0, NaN greatest and equal to itself.
    let f = sorted(vec![
        Value::Double(f64::NAN),
        Value::Double(0.0),
        Value::Double(-0.0),
        Value::Double(f64::NEG_INFINITY),
        Value::Double(1.0),
    ]);
    assert_eq!(
        ours(&f[0]),
        ours(&Value::Double(f64::NEG_INFINITY)),
        "{f:?}"
    );
    assert_eq!(ours(&f[1]), ours(&Value::Double(-0.0)));
    assert_eq!(ours(&f[2]), ours(&Value::Double(0.0)));
    assert!(matches!(f[4], Value::Double(x) if x.is_nan()));
    assert_eq!(Value::Float(f32::NAN), Value::Float(-f32::NAN));
    assert_ne!(Value::Float(0.0), Value::Float(-0.0));
    // Varint and decimal numerically: decimals differing only in scale are equal (ScyllaDB's
    // big_decimal comparison) and hash alike.
    let big = BigInt::from(10).pow(40);
    assert!(Value::varint(&-big.clone()) < Value::varint(&BigInt::from(-1)));
    assert!(Value::varint(&BigInt::from(-1)) < Value::varint(&BigInt::from(0)));
    assert!(Value::varint(&BigInt::from(255)) < Value::varint(&big));
    let one = Value::decimal(&BigInt::from(10), 1);
    let one_00 = Value::decimal(&BigInt::from(100), 2);
    assert_eq!(one, one_00);
    assert_eq!(one.cmp(&one_00), Ordering::Equal);
    let hash = |v: &Value| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    };
    assert_eq!(hash(&one), hash(&one_00));
    assert_eq!(
        hash(&Value::decimal(&BigInt::from(0), 3)),
        hash(&Value::decimal(&BigInt::from(0), -2))
    );
    assert_ne!(hash(&one), hash(&Value::decimal(&BigInt::from(11), 1)));
    assert!(Value::decimal(&BigInt::from(-5), -3) < Value::decimal(&BigInt::from(-4), 0));
    assert!(Value::decimal(&BigInt::from(1), i32::MAX) < Value::decimal(&BigInt::from(1), 0));
    assert!(Value::decimal(&BigInt::from(1), i32::MIN) > Value::decimal(&big, 0));
    assert!(Value::decimal(&BigInt::from(12), 1) < Value::decimal(&BigInt::from(13), 1));
    assert!(Value::decimal(&BigInt::from(-2), 0) < Value::decimal(&BigInt::from(0), 0));
    // Text by unsigned bytes; Empty first.
    assert!(Value::text("Z") < Value::text("a"));
    assert!(Value::text("a") < Value::text("é"));
    assert!(Value::Empty < Value::Int(i32::MIN));
    // Date unsigned, timestamp signed.
    assert!(Value::Date(1) < Value::Date(u32::MAX));
    assert!(Value::Timestamp(-1) < Value::Timestamp(0));
    // Inet: unsigned bytes, shorter first on a common prefix.
    let v4 = Value::Inet(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    let v6 = Value::Inet(IpAddr::V6(Ipv6Addr::LOCALHOST));
    assert!(v6 < v4);
    // Tuples: null before value, trailing nulls ignored.
    assert!(Value::tuple(vec![None]) < Value::tuple(vec![Some(Value::Int(i32::MIN))]));
    assert_eq!(
        Value::udt(vec![Some(Value::Int(1))]),
        Value::udt(vec![Some(Value::Int(1)), None])
    );
    let mut h = HashSet::new();
    h.insert(Value::udt(vec![Some(Value::Int(1))]));
    assert!(h.contains(&Value::udt(vec![Some(Value::Int(1)), None])));
    // Lists lexicographically.
    assert!(Value::list(vec![Value::Int(1)]) < Value::list(vec![Value::Int(1), Value::Int(0)]));
    assert!(Value::list(vec![Value::Int(2)]) > Value::list(vec![Value::Int(1), Value::Int(9)]));
}

#[test]
fn uuid_and_timeuuid_orders_differ() {
    let t = 1_000_000 * 10 + timeuuid::GREGORIAN_OFFSET;
    let a = timeuuid::from_raw(t, 0x7f00_0000_0000_0000);
    let b = timeuuid::from_raw(t, 0x8000_0000_0000_0000);
    // timeuuid: low bytes as signed bytes, so b (0x80 = -128) first.
    assert!(Value::Timeuuid(b) < Value::Timeuuid(a));
    // uuid: low bytes unsigned, so a first.
    assert!(Value::Uuid(a) < Value::Uuid(b));
    // Both order v1 by time, not by raw bytes: time_low is the first field on the wire.
    let early = timeuuid::from_raw(0x0000_0001_ffff_ffff, 0);
    let late = timeuuid::from_raw(0x0000_0002_0000_0000, 0);
    assert!(early.as_bytes() > late.as_bytes());
    assert!(Value::Uuid(early) < Value::Uuid(late));
    assert!(Value::Timeuuid(early) < Value::Timeuuid(late));
    // uuid: version nibble first.
    let v4 = Uuid::from_u64_pair(0x0000_0000_0000_4000, 0);
    assert!(Value::Uuid(late) < Value::Uuid(v4));
}

#[test]
fn literals() {
    assert_eq!(Value::text("it's").cql_literal(), "'it''s'");
    assert_eq!(Value::blob(vec![0xca, 0xfe]).cql_literal(), "0xcafe");
    assert_eq!(Value::Date(1 << 31).cql_literal(), "'1970-01-01'");
    assert_eq!(
        Value::Date((1 << 31) + 19_723).cql_literal(),
        "'2024-01-01'"
    );
    assert_eq!(
        Value::Timestamp(1_704_067_200_123).cql_literal(),
        "'2024-01-01 00:00:00.123+0000'"
    );
    assert_eq!(
        Value::Time(3_723_000_000_004).cql_literal(),
        "'01:02:03.000000004'"
    );
    assert_eq!(
        Value::Duration(Duration {
            months: 14,
            days: 3,
            nanos: 3_600_000_000_001
        })
        .cql_literal(),
        "1y2mo3d1h1ns"
    );
    assert_eq!(
        Value::Duration(Duration {
            months: 0,
            days: -2,
            nanos: 0
        })
        .cql_literal(),
        "-2d"
    );
    assert_eq!(Value::decimal(&BigInt::from(150), 2).cql_literal(), "1.50");
    assert_eq!(
        Value::decimal(&BigInt::from(-15), 3).cql_literal(),
        "-0.015"
    );
    assert_eq!(
        Value::decimal(&BigInt::from(15), -2).cql_literal(),
        "1.5E+3"
    );
    assert_eq!(Value::decimal(&BigInt::from(1), 7).cql_literal(), "1E-7");
    assert_eq!(Value::Double(1.0).cql_literal(), "1.0");
    assert_eq!(Value::Double(f64::NEG_INFINITY).cql_literal(), "-Infinity");
    let m = Value::map(vec![(Value::Int(1), Value::list(vec![Value::text("a")]))]);
    assert_eq!(m.cql_literal(), "{1: ['a']}");
    let u = Value::udt(vec![Some(Value::Int(1)), None]);
    assert_eq!(u.cql_literal(), "(1, null)");
    assert_eq!(u.cql_literal_typed(&udt_type()), "{a: 1, b: null, c: null}");
    let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    assert_eq!(
        Value::Uuid(id).cql_literal(),
        "01234567-89ab-cdef-0123-456789abcdef"
    );
    assert_eq!(
        Value::Inet(IpAddr::V4(Ipv4Addr::LOCALHOST)).cql_literal(),
        "'127.0.0.1'"
    );
}

#[test]
fn fits_checks_shapes() {
    assert!(Value::Int(1).fits(&CqlType::Int));
    assert!(!Value::Int(1).fits(&CqlType::Bigint));
    assert!(Value::Bigint(1).fits(&CqlType::Counter));
    assert!(!Value::text("é").fits(&CqlType::Ascii));
    assert!(Value::Empty.fits(&CqlType::Int));
    assert!(!Value::Empty.fits(&CqlType::Text));
    assert!(Value::udt(vec![Some(Value::Int(1))]).fits(&udt_type()));
    assert!(!Value::udt(vec![Some(Value::text("x"))]).fits(&udt_type()));
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn types() -> Vec<CqlType> {
        use CqlType as T;
        vec![
            T::Int,
            T::Text,
            T::Ascii,
            T::Decimal,
            T::Duration,
            T::Inet,
            T::Timeuuid,
            list(T::Int),
            set(T::Text),
            map(T::Int, list(T::Varint).frozen()),
            T::Tuple(vec![T::Int, T::Blob, set(T::Int)]),
            udt_type(),
        ]
    }

    proptest! {
        /// Arbitrary bytes never panic the decoder, and whatever decodes re-encodes to bytes
        /// that decode to the same value.
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), which in 0usize..12) {
            let types = types();
            let t = &types[which % types.len()];
            if let Ok(v) = decode(t, &bytes) {
                let again = decode(t, &ours(&v)).expect("re-encoded value decodes");
                prop_assert_eq!(again, v);
            }
        }

        /// Integers, strings and doubles round-trip and order like the driver's bytes say.
        #[test]
        fn scalars_round_trip(i in any::<i64>(), s in ".*", d in any::<f64>(), n in any::<i128>()) {
            check(&CqlType::Bigint, Value::Bigint(i));
            check(&CqlType::Text, Value::text(&s));
            check(&CqlType::Double, Value::Double(d));
            check(&CqlType::Varint, Value::varint(&BigInt::from(n)));
            check(&CqlType::Decimal, Value::decimal(&BigInt::from(n), (i % 50) as i32));
        }

        /// The varint order is the numeric order.
        #[test]
        fn varint_order_is_numeric(a in any::<i128>(), b in any::<i128>()) {
            prop_assert_eq!(
                Value::varint(&BigInt::from(a)).cmp(&Value::varint(&BigInt::from(b))),
                a.cmp(&b)
            );
        }

        /// Decimals order numerically (equal values with different scales are equal).
        #[test]
        fn decimal_order_is_numeric(a in -100_000i64..100_000, sa in -3i32..6, b in -100_000i64..100_000, sb in -3i32..6) {
            // a * 10^-sa vs b * 10^-sb, compared exactly in i128 scaled to 10^-9.
            let scaled = |x: i64, s: i32| i128::from(x) * 10i128.pow((9 - s) as u32);
            let (x, y) = (scaled(a, sa), scaled(b, sb));
            let ours = Value::decimal(&BigInt::from(a), sa).cmp(&Value::decimal(&BigInt::from(b), sb));
            prop_assert_eq!(ours, x.cmp(&y));
        }
    }
}

#[test]
fn sized_encodings_are_the_length_then_what_encode_writes() {
    let values = [
        Value::Empty,
        Value::Boolean(true),
        Value::Tinyint(-3),
        Value::Smallint(300),
        Value::Int(-70_000),
        Value::Bigint(1 << 40),
        Value::Varint(Varint::from_i64(-129)),
        Value::Decimal(Arc::new(Decimal::new(2, Varint::from_i64(12_345)))),
        Value::Float(1.5),
        Value::Double(-2.25),
        Value::text("zażółć"),
        Value::Blob(Arc::from(&b"\x00\x01\x02"[..])),
        Value::Date(1 << 31),
        Value::Time(86_399_999_999_999),
        Value::Timestamp(-1),
        Value::Inet(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        Value::Inet(IpAddr::V6(Ipv6Addr::LOCALHOST)),
        Value::Uuid(Uuid::from_u128(7)),
        Value::Timeuuid(Uuid::from_u128(8)),
    ];
    for v in values {
        let (mut sized, mut patched) = (BytesMut::new(), BytesMut::new());
        assert!(v.encode_sized(&mut sized), "{v:?}");
        v.encode_with_len(&mut patched);
        assert_eq!(sized, patched, "{v:?}");
    }
    let variable = [
        Value::Duration(Duration {
            months: 1,
            days: 2,
            nanos: 3,
        }),
        Value::List(Arc::from(vec![Value::Int(1)])),
        Value::Set(Arc::from(vec![Value::Int(1)])),
        Value::Map(Arc::from(vec![(Value::Int(1), Value::Int(2))])),
        Value::Tuple(Arc::from(vec![Some(Value::Int(1)), None])),
        Value::Udt(Arc::from(vec![None])),
    ];
    for v in variable {
        let mut out = BytesMut::new();
        assert!(!v.encode_sized(&mut out), "{v:?}");
        assert!(out.is_empty());
    }
}
