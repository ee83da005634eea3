//! CQL values as the connector's JSON: `ScyllaChangeRecordEmitter.translateFieldToKafka`
//! (and the legacy `translateCellToKafka`) followed by `JsonConverter`'s conversion of the
//! Connect value.
//!
//! | CQL | JSON |
//! |---|---|
//! | `ascii`, `text`, `varchar` | string |
//! | `tinyint`, `smallint`, `int`, `bigint`, `counter` | number |
//! | `float`, `double` | number as Java prints it (`2.0`, `1.0E7`); NaN and infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | `boolean` | `true` / `false` |
//! | `blob` | base64 string |
//! | `decimal` | string, Java's `BigDecimal.toString` (`"12345.67"`, `"1.2E+3"`) |
//! | `varint` | string of its decimal digits |
//! | `uuid`, `timeuuid` | string, lower-case canonical form |
//! | `inet` | string, Java's `getHostAddress` (`"127.0.0.1"`, `"0:0:0:0:0:0:0:1"`) |
//! | `date` | number: days since 1970-01-01 (Connect `Date`) |
//! | `time` | number: nanoseconds since midnight |
//! | `timestamp` | number: milliseconds since the epoch (Connect `Timestamp`) |
//! | `duration` | string as scylla-cdc-java writes it (`"1d12h30m"`; zero is `""`) |
//! | `list`, `set` | array (a non-frozen list in its order, from the log's `map<timeuuid, V>`) |
//! | `map` | array of `{"key": k, "value": v}` |
//! | `tuple` | object `{"field_0": …, "field_1": …}` |
//! | UDT | object of its fields; `null` when every field is null or an empty collection |
//! | `vector` (not in the connector) | array |
//!
//! An "empty" value (zero bytes in a non-string column) is `null`, as the Java driver reads it.

use scylla::frame::response::result::{CollectionType, ColumnType};
use scylla::value::CqlValue;

use super::json;

/// How to render a value of one column: the structure its CQL type gives it. Scalars are
/// rendered by their [`CqlValue`] variant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// A native type.
    Scalar,
    /// A list, set or vector: an array. A map value (a non-frozen list as the CDC log holds
    /// it, `map<timeuuid, V>`) gives its values, in order.
    List(Box<Plan>),
    /// A map: an array of `{"key": …, "value": …}`.
    Map(Box<Plan>, Box<Plan>),
    /// A tuple: `{"field_0": …}`.
    Tuple(Vec<Plan>),
    /// A UDT: its fields (name and `"name":` as JSON), in the type's order.
    Udt(Vec<UdtField>),
}

/// A field of a UDT [`Plan`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UdtField {
    pub(crate) name: String,
    /// `"name":`, escaped.
    pub(crate) json_key: Vec<u8>,
    pub(crate) plan: Plan,
}

/// `"name":` as JSON.
pub(crate) fn json_key(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 3);
    json::string(&mut out, name);
    out.push(b':');
    out
}

impl Plan {
    /// The plan of a CQL type (the base table's type).
    pub(crate) fn of(typ: &ColumnType<'_>) -> Plan {
        match typ {
            ColumnType::Collection { typ, .. } => match typ {
                CollectionType::List(e) | CollectionType::Set(e) => {
                    Plan::List(Box::new(Plan::of(e)))
                }
                CollectionType::Map(k, v) => {
                    Plan::Map(Box::new(Plan::of(k)), Box::new(Plan::of(v)))
                }
                _ => Plan::Scalar,
            },
            ColumnType::Vector { typ, .. } => Plan::List(Box::new(Plan::of(typ))),
            ColumnType::Tuple(items) => Plan::Tuple(items.iter().map(Plan::of).collect()),
            ColumnType::UserDefinedType { definition, .. } => Plan::Udt(
                definition
                    .field_types
                    .iter()
                    .map(|(name, t)| UdtField {
                        name: name.to_string(),
                        json_key: json_key(name),
                        plan: Plan::of(t),
                    })
                    .collect(),
            ),
            _ => Plan::Scalar,
        }
    }
}

static SCALAR: Plan = Plan::Scalar;

/// Whether the connector turns the value into `null`: an empty value, or a UDT whose
/// fields all are (or are empty collections: `translateFieldToKafka`'s `allNullOrEmpty`).
pub(crate) fn is_null_like(v: &CqlValue, plan: &Plan) -> bool {
    match v {
        CqlValue::Empty => true,
        CqlValue::UserDefinedType { fields, .. } => {
            let plans: &[UdtField] = match plan {
                Plan::Udt(f) => f,
                _ => &[],
            };
            fields.iter().enumerate().all(|(i, (name, value))| {
                let field_plan = udt_field_plan(plans, i, name);
                match value {
                    None => true,
                    Some(v) => is_null_like(v, field_plan) || is_empty_collection(v),
                }
            })
        }
        _ => false,
    }
}

fn is_empty_collection(v: &CqlValue) -> bool {
    match v {
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => items.is_empty(),
        CqlValue::Map(entries) => entries.is_empty(),
        _ => false,
    }
}

fn udt_field_plan<'p>(plans: &'p [UdtField], i: usize, name: &str) -> &'p Plan {
    match plans.get(i) {
        Some(f) if f.name == name => &f.plan,
        _ => plans
            .iter()
            .find(|f| f.name == name)
            .map_or(&SCALAR, |f| &f.plan),
    }
}

/// Appends the JSON of an optional value (`null` when absent).
pub(crate) fn write_opt(out: &mut Vec<u8>, v: Option<&CqlValue>, plan: &Plan) {
    match v {
        Some(v) => write(out, v, plan),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends the JSON of a value.
pub(crate) fn write(out: &mut Vec<u8>, v: &CqlValue, plan: &Plan) {
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => json::string(out, s),
        CqlValue::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        CqlValue::Blob(b) => {
            out.push(b'"');
            json::base64(out, b);
            out.push(b'"');
        }
        CqlValue::Counter(c) => json::int(out, c.0),
        CqlValue::Decimal(d) => {
            out.push(b'"');
            json::decimal(out, d);
            out.push(b'"');
        }
        CqlValue::Date(d) => json::int(out, i64::from(d.0) - (1i64 << 31)),
        CqlValue::Double(f) => json::double(out, *f),
        CqlValue::Float(f) => json::float(out, *f),
        CqlValue::Duration(d) => {
            out.push(b'"');
            json::duration(out, d);
            out.push(b'"');
        }
        CqlValue::Empty => out.extend_from_slice(b"null"),
        CqlValue::Int(i) => json::int(out, i64::from(*i)),
        CqlValue::BigInt(i) => json::int(out, *i),
        CqlValue::SmallInt(i) => json::int(out, i64::from(*i)),
        CqlValue::TinyInt(i) => json::int(out, i64::from(*i)),
        CqlValue::Timestamp(t) => json::int(out, t.0),
        CqlValue::Time(t) => json::int(out, t.0),
        CqlValue::Inet(ip) => {
            out.push(b'"');
            json::inet(out, ip);
            out.push(b'"');
        }
        CqlValue::Uuid(u) => {
            out.push(b'"');
            json::uuid(out, u.as_bytes());
            out.push(b'"');
        }
        CqlValue::Timeuuid(u) => {
            out.push(b'"');
            json::uuid(out, u.as_bytes());
            out.push(b'"');
        }
        CqlValue::Varint(v) => {
            out.push(b'"');
            json::varint(out, v);
            out.push(b'"');
        }
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            let inner = match plan {
                Plan::List(p) => p,
                _ => &SCALAR,
            };
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item, inner);
            }
            out.push(b']');
        }
        CqlValue::Map(entries) => match plan {
            // A non-frozen list in the log: its element ids (timeuuids, in list order) to
            // its elements.
            Plan::List(inner) => {
                out.push(b'[');
                for (i, (_, item)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(out, item, inner);
                }
                out.push(b']');
            }
            _ => {
                let (kp, vp) = match plan {
                    Plan::Map(k, v) => (&**k, &**v),
                    _ => (&SCALAR, &SCALAR),
                };
                out.push(b'[');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(b"{\"key\":");
                    write(out, k, kp);
                    out.extend_from_slice(b",\"value\":");
                    write(out, v, vp);
                    out.push(b'}');
                }
                out.push(b']');
            }
        },
        CqlValue::Tuple(items) => {
            let plans: &[Plan] = match plan {
                Plan::Tuple(p) => p,
                _ => &[],
            };
            out.push(b'{');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"\"field_");
                json::int(out, i as i64);
                out.extend_from_slice(b"\":");
                write_opt(out, item.as_ref(), plans.get(i).unwrap_or(&SCALAR));
            }
            out.push(b'}');
        }
        CqlValue::UserDefinedType { fields, .. } => {
            if is_null_like(v, plan) {
                out.extend_from_slice(b"null");
                return;
            }
            match plan {
                // The struct's fields, in the type's order (a value's missing field is null).
                Plan::Udt(plans) => {
                    out.push(b'{');
                    for (i, f) in plans.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend_from_slice(&f.json_key);
                        let value = match fields.get(i) {
                            Some((name, value)) if *name == f.name => value.as_ref(),
                            _ => fields
                                .iter()
                                .find(|(name, _)| *name == f.name)
                                .and_then(|(_, v)| v.as_ref()),
                        };
                        write_field(out, value, &f.plan);
                    }
                    out.push(b'}');
                }
                _ => {
                    out.push(b'{');
                    for (i, (name, value)) in fields.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        json::string(out, name);
                        out.push(b':');
                        write_field(out, value.as_ref(), &SCALAR);
                    }
                    out.push(b'}');
                }
            }
        }
        _ => out.extend_from_slice(b"null"),
    }
}

/// A struct field's value: `null` when absent or null-like.
fn write_field(out: &mut Vec<u8>, v: Option<&CqlValue>, plan: &Plan) {
    match v {
        Some(v) if !is_null_like(v, plan) => write(out, v, plan),
        _ => out.extend_from_slice(b"null"),
    }
}

/// Whether a value is rendered as `null` at the top of a column (absent, or null-like).
pub(crate) fn renders_null(v: Option<&CqlValue>, plan: &Plan) -> bool {
    v.is_none_or(|v| is_null_like(v, plan))
}

/// Appends a column value (`null` when absent or null-like).
pub(crate) fn write_column(out: &mut Vec<u8>, v: Option<&CqlValue>, plan: &Plan) {
    write_field(out, v, plan);
}

/// The text of a key column for a `pk.<column>` / `ck.<column>` header: Java's
/// `String.valueOf` of the connector's Connect value (numbers and strings as they are,
/// `Double.toString`, a `timestamp` or `date` as `java.util.Date.toString` in UTC:
/// `Mon Jun 10 12:34:56 UTC 2024`). A blob, which Java shows as a buffer's address, is
/// base64 here, and a frozen collection, tuple or UDT its JSON.
pub(crate) fn header_text(v: &CqlValue, plan: &Plan) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => out.extend_from_slice(s.as_bytes()),
        CqlValue::Blob(b) => json::base64(&mut out, b),
        CqlValue::Decimal(d) => json::decimal(&mut out, d),
        CqlValue::Duration(d) => json::duration(&mut out, d),
        CqlValue::Inet(ip) => json::inet(&mut out, ip),
        CqlValue::Uuid(u) => json::uuid(&mut out, u.as_bytes()),
        CqlValue::Timeuuid(u) => json::uuid(&mut out, u.as_bytes()),
        CqlValue::Varint(v) => json::varint(&mut out, v),
        CqlValue::Double(f) if !f.is_finite() => {
            out.extend_from_slice(non_finite_text(f.is_nan(), *f > 0.0))
        }
        CqlValue::Float(f) if !f.is_finite() => {
            out.extend_from_slice(non_finite_text(f.is_nan(), *f > 0.0))
        }
        CqlValue::Timestamp(t) => java_date_text(&mut out, t.0),
        CqlValue::Date(d) => java_date_text(&mut out, (i64::from(d.0) - (1i64 << 31)) * 86_400_000),
        other => write(&mut out, other, plan),
    }
    out
}

fn non_finite_text(nan: bool, positive: bool) -> &'static [u8] {
    match (nan, positive) {
        (true, _) => b"NaN",
        (false, true) => b"Infinity",
        (false, false) => b"-Infinity",
    }
}

/// `java.util.Date.toString()` of a time in milliseconds, in UTC.
fn java_date_text(out: &mut Vec<u8>, ms: i64) {
    use std::io::Write;
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => {
            let _ = write!(out, "{}", t.format("%a %b %d %H:%M:%S UTC %Y"));
        }
        None => json::int(out, ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::frame::response::result::NativeType;
    use scylla::value::{
        Counter, CqlDate, CqlDecimal, CqlDuration, CqlTime, CqlTimestamp, CqlTimeuuid, CqlVarint,
    };
    use std::sync::Arc;
    use uuid::Uuid;

    fn json_of(v: &CqlValue, plan: &Plan) -> String {
        let mut out = Vec::new();
        write_column(&mut out, Some(v), plan);
        String::from_utf8(out).unwrap()
    }

    fn udt_type(fields: Vec<(&str, ColumnType<'static>)>) -> ColumnType<'static> {
        ColumnType::UserDefinedType {
            frozen: true,
            definition: Arc::new(scylla::frame::response::result::UserDefinedType {
                name: "simple_udt".into(),
                keyspace: "ks".into(),
                field_types: fields
                    .into_iter()
                    .map(|(n, t)| (n.to_owned().into(), t))
                    .collect(),
            }),
        }
    }

    fn udt(fields: Vec<(&str, Option<CqlValue>)>) -> CqlValue {
        CqlValue::UserDefinedType {
            keyspace: "ks".into(),
            name: "simple_udt".into(),
            fields: fields.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(),
        }
    }

    /// The values of the connector's `ScyllaTypesAllPlainConnectorIT` /
    /// `CdcIncludeBeforeAfterBase` expectations (e.g. `JSON_DATE_SET1 = 19884`,
    /// `JSON_TIME_SET1 = 45296789000000L`, `JSON_TIMESTAMP_SET1 = 1718022896789L`).
    #[test]
    // The connector tests' values, not approximations of constants.
    #[allow(clippy::approx_constant)]
    fn scalars_as_the_connector_tests_expect() {
        let s = Plan::Scalar;
        let tu = |u: &str| Uuid::parse_str(u).unwrap();
        let cases: Vec<(CqlValue, &str)> = vec![
            (CqlValue::Ascii("ascii".into()), r#""ascii""#),
            (CqlValue::BigInt(1234567890123), "1234567890123"),
            (
                CqlValue::Blob(vec![0xca, 0xfe, 0xba, 0xbe]),
                r#""yv66vg==""#,
            ),
            (CqlValue::Boolean(true), "true"),
            (CqlValue::Date(CqlDate((1 << 31) + 19884)), "19884"),
            (CqlValue::Date(CqlDate((1 << 31) - 1)), "-1"),
            (
                CqlValue::Decimal(CqlDecimal::from_signed_be_bytes_slice_and_exponent(
                    &[0x12, 0xd6, 0x87],
                    2,
                )),
                r#""12345.67""#,
            ),
            (CqlValue::Double(3.14159), "3.14159"),
            (
                CqlValue::Duration(CqlDuration {
                    months: 0,
                    days: 1,
                    nanoseconds: 45_000_000_000_000,
                }),
                r#""1d12h30m""#,
            ),
            (CqlValue::Float(2.71828), "2.71828"),
            (
                CqlValue::Inet("127.0.0.1".parse().unwrap()),
                r#""127.0.0.1""#,
            ),
            (CqlValue::Int(42), "42"),
            (CqlValue::SmallInt(7), "7"),
            (CqlValue::Text("some text".into()), r#""some text""#),
            (
                CqlValue::Time(CqlTime(45_296_789_000_000)),
                "45296789000000",
            ),
            (
                CqlValue::Timestamp(CqlTimestamp(1_718_022_896_789)),
                "1718022896789",
            ),
            (
                CqlValue::Timeuuid(CqlTimeuuid::from(tu(
                    "81d4a030-4632-11f0-9484-409dd8f36eba",
                ))),
                r#""81d4a030-4632-11f0-9484-409dd8f36eba""#,
            ),
            (CqlValue::TinyInt(5), "5"),
            (
                CqlValue::Uuid(tu("453662fa-db4b-4938-9033-d8523c0a371c")),
                r#""453662fa-db4b-4938-9033-d8523c0a371c""#,
            ),
            (
                CqlValue::Varint(CqlVarint::from_signed_bytes_be(vec![
                    0x3b, 0x9a, 0xc9, 0xff,
                ])),
                r#""999999999""#,
            ),
            (CqlValue::Counter(Counter(-5)), "-5"),
            (CqlValue::Empty, "null"),
        ];
        for (v, expected) in cases {
            assert_eq!(json_of(&v, &s), expected, "{v:?}");
        }
    }

    /// `jsonFrozenCollectionsSet1` / `jsonUdtsSet1` of `CdcIncludeBeforeAfterBase`.
    #[test]
    fn collections_tuples_and_udts() {
        let int = ColumnType::Native(NativeType::Int);
        let text = ColumnType::Native(NativeType::Text);
        let list = Plan::of(&ColumnType::Collection {
            frozen: true,
            typ: CollectionType::List(Box::new(int.clone())),
        });
        assert_eq!(
            json_of(
                &CqlValue::List(vec![CqlValue::Int(100), CqlValue::Int(200)]),
                &list
            ),
            "[100,200]"
        );
        // A non-frozen list as the log holds it: element ids to elements.
        let ids = |n: u8| CqlValue::Timeuuid(CqlTimeuuid::from_bytes([n; 16]));
        assert_eq!(
            json_of(
                &CqlValue::Map(vec![
                    (ids(1), CqlValue::Int(10)),
                    (ids(2), CqlValue::Int(20))
                ]),
                &list
            ),
            "[10,20]"
        );
        let map = Plan::of(&ColumnType::Collection {
            frozen: true,
            typ: CollectionType::Map(Box::new(int.clone()), Box::new(text.clone())),
        });
        assert_eq!(
            json_of(
                &CqlValue::Map(vec![(CqlValue::Int(10), CqlValue::Text("ten".into()))]),
                &map
            ),
            r#"[{"key":10,"value":"ten"}]"#
        );
        let tuple = Plan::of(&ColumnType::Tuple(vec![int.clone(), text.clone()]));
        assert_eq!(
            json_of(
                &CqlValue::Tuple(vec![
                    Some(CqlValue::Int(1)),
                    Some(CqlValue::Text("tuple1".into()))
                ]),
                &tuple
            ),
            r#"{"field_0":1,"field_1":"tuple1"}"#
        );
        assert_eq!(
            json_of(&CqlValue::Tuple(vec![None, None]), &tuple),
            r#"{"field_0":null,"field_1":null}"#
        );
        let simple = Plan::of(&udt_type(vec![("a", int.clone()), ("b", text.clone())]));
        assert_eq!(
            json_of(
                &udt(vec![
                    ("a", Some(CqlValue::Int(42))),
                    ("b", Some(CqlValue::Text("foo".into())))
                ]),
                &simple
            ),
            r#"{"a":42,"b":"foo"}"#
        );
        assert_eq!(
            json_of(
                &udt(vec![("a", Some(CqlValue::Int(42))), ("b", None)]),
                &simple
            ),
            r#"{"a":42,"b":null}"#
        );
        // All fields null: the connector's `allNullOrEmpty` makes the UDT null.
        assert_eq!(
            json_of(&udt(vec![("a", None), ("b", None)]), &simple),
            "null"
        );
        // Fields missing from the value (the type gained a field) are null.
        assert_eq!(
            json_of(&udt(vec![("b", Some(CqlValue::Text("x".into())))]), &simple),
            r#"{"a":null,"b":"x"}"#
        );
        let with_list = Plan::of(&udt_type(vec![(
            "l",
            ColumnType::Collection {
                frozen: true,
                typ: CollectionType::List(Box::new(int.clone())),
            },
        )]));
        assert_eq!(
            json_of(&udt(vec![("l", Some(CqlValue::List(vec![])))]), &with_list),
            "null"
        );
        assert_eq!(
            json_of(
                &udt(vec![("l", Some(CqlValue::List(vec![CqlValue::Int(1)])))]),
                &with_list
            ),
            r#"{"l":[1]}"#
        );
    }

    #[test]
    fn header_texts() {
        let s = Plan::Scalar;
        let text = |v: CqlValue| String::from_utf8(header_text(&v, &s)).unwrap();
        assert_eq!(text(CqlValue::Int(5)), "5");
        assert_eq!(text(CqlValue::Text("a\"b".into())), "a\"b");
        assert_eq!(text(CqlValue::Double(2.0)), "2.0");
        assert_eq!(text(CqlValue::Double(f64::NAN)), "NaN");
        assert_eq!(
            text(CqlValue::Timestamp(CqlTimestamp(1_718_022_896_789))),
            "Mon Jun 10 12:34:56 UTC 2024"
        );
        assert_eq!(
            text(CqlValue::Date(CqlDate((1 << 31) + 19884))),
            "Mon Jun 10 00:00:00 UTC 2024"
        );
    }
}
