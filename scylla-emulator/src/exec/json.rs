//! JSON in CQL, as ScyllaDB 2025.x implements it: `SELECT JSON`, `INSERT JSON` (with
//! `DEFAULT NULL` / `DEFAULT UNSET`), `toJson()` and `fromJson()`.
//!
//! The two conversions are ScyllaDB's (`cql3/type_json.cc` in 2025.x, `types/json_utils.cc`
//! later): [`to_json`] renders a value of a CQL type (`to_json_string`) and [`from_json`]
//! reads one from a parsed [`Json`] value (`from_json_object`), each with the exception
//! ScyllaDB throws on failure ([`ConvError`]), which becomes a different CQL error depending on
//! where it happens:
//!
//! - `SELECT JSON` wraps the selectors in `as_json` ([`JsonSelection`]): one `text` column
//!   named `[json]`, an object keyed by the selectors' result names (a name with an upper-case
//!   letter is written `"\"Name\""`). Its failures reach the client as they are: a
//!   `marshal_exception` as a server error.
//! - `toJson(x)` / `fromJson(s)` are native scalar functions: their failures become
//!   `FunctionFailure` (a JSON parse error of `fromJson` with its own message), except
//!   invalid-request errors, which pass through.
//! - `INSERT JSON` (`json_insert::JsonInsert`) parses its document at execution, before
//!   anything else; ScyllaDB lets every conversion or parse failure reach the client as a
//!   server error (scylladb/scylladb#8085), while unknown columns and missing key columns are
//!   invalid requests. It writes the partition key, the clustering key and the regular columns
//!   only (`insert_prepared_json_statement::execute_operations_for_key` walks
//!   `regular_columns()`: a static column's value is read and checked but never written), sets
//!   the columns the document omits to null, or leaves them untouched with `DEFAULT UNSET`.
//!   The statement is planned as an INSERT whose values are extra bind markers after the
//!   statement's own (`modify::bind_values` fills them from the document), so the write path,
//!   LWT, batches and the CDC log treat it exactly like the equivalent INSERT with bound values:
//!   an omitted column is an unset value, which writes nothing.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;

use num_bigint::BigInt;
use uuid::Uuid;

use crate::frame::{ColumnSpec, CqlError, ErrorKind};
use crate::schema::TableDef;
use crate::types::json::{self as jt, Json};
use crate::types::value::{Decimal, Duration, Value, Varint};
use crate::types::{CqlType, UserType};

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A failed conversion, as the C++ exception ScyllaDB throws for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConvError {
    /// `marshal_exception`; the text after its `marshaling error: ` prefix.
    Marshal(String),
    /// `rjson::error`: a parse failure, or a RapidJSON type assertion (a JSON value of the
    /// wrong kind read as a string).
    Rjson(String),
    /// Another exception of the standard library (`std::invalid_argument` from `from_hex`
    /// and `std::stol`, an out-of-range calendar date).
    Std(String),
    /// `invalid_request_exception` (a value that cannot be rendered).
    Invalid(String),
}

impl ConvError {
    /// The exception's `what()`.
    fn what(&self) -> String {
        match self {
            ConvError::Marshal(m) => format!("marshaling error: {m}"),
            ConvError::Rjson(m) | ConvError::Std(m) | ConvError::Invalid(m) => m.clone(),
        }
    }

    /// The error the client gets when the exception leaves the statement unwrapped (a server
    /// error, except invalid requests).
    pub(crate) fn into_statement_error(self) -> CqlError {
        match self {
            ConvError::Invalid(m) => CqlError::invalid(m),
            other => CqlError::server(other.what()),
        }
    }
}

/// The RapidJSON assertion `GetString()` fails with when the value is not a string.
fn not_a_string() -> ConvError {
    ConvError::Rjson("JSON assert failed on condition 'IsString()'".into())
}

/// `FunctionFailure` of a native function (`native_scalar_function`'s wrapper): the function
/// `system.<name>` with its argument types.
fn function_failure(name: &str, arg: &CqlType, e: &ConvError) -> CqlError {
    CqlError::new(
        ErrorKind::FunctionFailure {
            keyspace: "system".into(),
            function: name.into(),
            arg_types: vec![marshal_name(arg)],
        },
        format!("Failed execution of function system.{name}: {}", e.what()),
    )
}

// ---------------------------------------------------------------------------------------------
// Type names
// ---------------------------------------------------------------------------------------------

/// The type's Cassandra marshal class name, as ScyllaDB's `abstract_type::name()` spells it
/// (`org.apache.cassandra.db.marshal.Int32Type`, `...FrozenType(...ListType(...))`): it appears
/// in conversion errors and in `FunctionFailure`'s argument types.
pub(crate) fn marshal_name(t: &CqlType) -> String {
    const P: &str = "org.apache.cassandra.db.marshal.";
    let frozen = |inner: String, frozen: bool| {
        if frozen {
            format!("{P}FrozenType({inner})")
        } else {
            inner
        }
    };
    match t {
        CqlType::Ascii => format!("{P}AsciiType"),
        CqlType::Bigint => format!("{P}LongType"),
        CqlType::Blob => format!("{P}BytesType"),
        CqlType::Boolean => format!("{P}BooleanType"),
        CqlType::Counter => format!("{P}CounterColumnType"),
        CqlType::Date => format!("{P}SimpleDateType"),
        CqlType::Decimal => format!("{P}DecimalType"),
        CqlType::Double => format!("{P}DoubleType"),
        CqlType::Duration => format!("{P}DurationType"),
        CqlType::Float => format!("{P}FloatType"),
        CqlType::Inet => format!("{P}InetAddressType"),
        CqlType::Int => format!("{P}Int32Type"),
        CqlType::Smallint => format!("{P}ShortType"),
        CqlType::Text => format!("{P}UTF8Type"),
        CqlType::Time => format!("{P}TimeType"),
        CqlType::Timestamp => format!("{P}TimestampType"),
        CqlType::Timeuuid => format!("{P}TimeUUIDType"),
        CqlType::Tinyint => format!("{P}ByteType"),
        CqlType::Uuid => format!("{P}UUIDType"),
        CqlType::Varint => format!("{P}IntegerType"),
        CqlType::List { elem, frozen: f } => {
            frozen(format!("{P}ListType({})", marshal_name(elem)), *f)
        }
        CqlType::Set { elem, frozen: f } => {
            frozen(format!("{P}SetType({})", marshal_name(elem)), *f)
        }
        CqlType::Map {
            key,
            value,
            frozen: f,
        } => frozen(
            format!("{P}MapType({},{})", marshal_name(key), marshal_name(value)),
            *f,
        ),
        // Never wrapped in FrozenType (tuple_type_impl::make_name).
        CqlType::Tuple(types) => format!(
            "{P}TupleType({})",
            types
                .iter()
                .map(marshal_name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        CqlType::Udt { def, frozen: f } => {
            let mut s = format!("{P}UserType({},{}", def.keyspace, hex(def.name.as_bytes()));
            for (name, ft) in &def.fields {
                let _ = write!(s, ",{}:{}", hex(name.as_bytes()), marshal_name(ft));
            }
            s.push(')');
            frozen(s, *f)
        }
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Calendar arithmetic
// ---------------------------------------------------------------------------------------------

/// (year, month, day) of a day count since 1970-01-01 (`year_month_day::from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The day count since 1970-01-01 of a (year, month, day), without validation
/// (`year_month_day::to_days`: a month or day out of range shifts the date).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = y - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A year as `date.h` prints it: at least four digits, zero-filled after the sign.
fn year_text(y: i64) -> String {
    if y < 0 {
        format!("-{:04}", y.unsigned_abs())
    } else {
        format!("{y:04}")
    }
}

/// `time_point_to_string(tp, false)`: `2024-01-02 03:04:05.006Z`.
fn timestamp_text(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{}-{m:02}-{d:02} {:02}:{:02}:{:02}.{millis:03}Z",
        year_text(y),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// `simple_date_to_string`: `2024-01-02`, `-0001-12-31`, `12345-01-01`.
fn date_text(raw: u32) -> String {
    let (y, m, d) = civil_from_days(i64::from(raw) - (1i64 << 31));
    format!("{}-{m:02}-{d:02}", year_text(y))
}

/// `time_to_string` (`{:%H:%M:%S}` of nanoseconds): `01:02:03.000000004`.
fn time_text(nanos: i64) -> String {
    let secs = nanos.div_euclid(1_000_000_000);
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60,
        nanos.rem_euclid(1_000_000_000)
    )
}

/// `operator<<(ostream, cql_duration)`: `1y2mo3d4h5m6s7ms8us9ns`, a leading `-` when
/// negative, and the empty string for a zero duration.
fn duration_text(d: &Duration) -> String {
    let mut out = String::new();
    if d.months < 0 || d.days < 0 || d.nanos < 0 {
        out.push('-');
    }
    let mut append = |count: u64, unit: u64, name: &str| -> u64 {
        if count == 0 || count < unit {
            return count;
        }
        let _ = write!(out, "{}{name}", count / unit);
        count % unit
    };
    let months = append(u64::from(d.months.unsigned_abs()), 12, "y");
    append(months, 1, "mo");
    append(u64::from(d.days.unsigned_abs()), 1, "d");
    let mut n = d.nanos.unsigned_abs();
    for (unit, name) in [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        n = append(n, unit, name);
    }
    out
}

/// `big_decimal::to_string`: plain notation, trailing fraction zeros dropped (`1.50` is `1.5`,
/// `1E+3` is `1000`, any zero is `0`).
fn decimal_text(d: &Decimal) -> String {
    let n = d.unscaled.to_bigint();
    let mut digits = n.magnitude().to_str_radix(10);
    if digits == "0" {
        return digits;
    }
    let scale = i64::from(d.scale);
    if scale < 0 {
        digits.extend(std::iter::repeat_n('0', scale.unsigned_abs() as usize));
    } else if scale > 0 {
        let scale = scale as usize;
        if digits.len() > scale {
            digits.insert(digits.len() - scale, '.');
        } else {
            digits = format!("0.{}{digits}", "0".repeat(scale - digits.len()));
        }
        while digits.ends_with('0') {
            digits.pop();
        }
        if digits.ends_with('.') {
            digits.pop();
        }
    }
    if n.sign() == num_bigint::Sign::Minus {
        digits.insert(0, '-');
    }
    digits
}

// ---------------------------------------------------------------------------------------------
// Value -> JSON
// ---------------------------------------------------------------------------------------------

/// `to_json_string` of a value of type `typ` (`None`: null, written `null`).
pub(crate) fn to_json(typ: &CqlType, v: Option<&Value>) -> Result<String, ConvError> {
    let Some(v) = v else {
        return Ok("null".into());
    };
    if let Value::Empty = v {
        return empty_to_json(typ);
    }
    let mismatch = || ConvError::Marshal(format!("Cannot render a value of type {typ}"));
    Ok(match (typ, v) {
        (
            CqlType::Tinyint
            | CqlType::Smallint
            | CqlType::Int
            | CqlType::Bigint
            | CqlType::Counter,
            v,
        ) => v.as_i64().ok_or_else(mismatch)?.to_string(),
        (CqlType::Varint, Value::Varint(x)) => x.to_string(),
        (CqlType::Decimal, Value::Decimal(d)) => decimal_text(d),
        (CqlType::Float, Value::Float(f)) => {
            if f.is_finite() {
                jt::format_float(*f)
            } else {
                "null".into()
            }
        }
        (CqlType::Double, Value::Double(f)) => {
            if f.is_finite() {
                jt::format_double(*f)
            } else {
                "null".into()
            }
        }
        (CqlType::Text | CqlType::Ascii, Value::Text(s)) => jt::quote(s),
        (CqlType::Blob, Value::Blob(b)) => jt::quote(&format!("0x{}", hex(b))),
        (CqlType::Boolean, Value::Boolean(b)) => b.to_string(),
        (CqlType::Uuid | CqlType::Timeuuid, Value::Uuid(u) | Value::Timeuuid(u)) => {
            jt::quote(&u.hyphenated().to_string())
        }
        (CqlType::Inet, Value::Inet(a)) => jt::quote(&a.to_string()),
        (CqlType::Timestamp, Value::Timestamp(ms)) => jt::quote(&timestamp_text(*ms)),
        (CqlType::Date, Value::Date(d)) => jt::quote(&date_text(*d)),
        (CqlType::Time, Value::Time(n)) => jt::quote(&time_text(*n)),
        (CqlType::Duration, Value::Duration(d)) => jt::quote(&duration_text(d)),
        (CqlType::List { elem, .. }, Value::List(items))
        | (CqlType::Set { elem, .. }, Value::Set(items)) => {
            let mut out = String::from("[");
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&to_json(elem, Some(x))?);
            }
            out.push(']');
            out
        }
        (CqlType::Map { key, value, .. }, Value::Map(entries)) => {
            let mut out = String::from("{");
            for (i, (k, x)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                // JSON keys are strings: a key that does not render as one is wrapped in
                // quotes as it is (its own quotes, in a tuple say, are not escaped).
                let k = to_json(key, Some(k))?;
                if k.starts_with('"') {
                    out.push_str(&k);
                } else {
                    let _ = write!(out, "\"{k}\"");
                }
                out.push_str(": ");
                out.push_str(&to_json(value, Some(x))?);
            }
            out.push('}');
            out
        }
        (CqlType::Tuple(types), Value::Tuple(fields)) => {
            let mut out = String::from("[");
            for (i, (t, f)) in types.iter().zip(fields.iter()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&to_json(t, f.as_ref())?);
            }
            out.push(']');
            out
        }
        (CqlType::Udt { def, .. }, Value::Udt(fields)) => {
            // Field names as they are: ScyllaDB does not quote case-sensitive ones.
            let mut out = String::from("{");
            for (i, ((name, t), f)) in def.fields.iter().zip(fields.iter()).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}: {}", jt::quote(name), to_json(t, f.as_ref())?);
            }
            out.push('}');
            out
        }
        _ => return Err(mismatch()),
    })
}

/// `to_json_string` of an empty (zero-byte) value, which each type treats its own way.
fn empty_to_json(typ: &CqlType) -> Result<String, ConvError> {
    Ok(match typ {
        CqlType::Tinyint | CqlType::Smallint | CqlType::Int | CqlType::Bigint => {
            return Err(ConvError::Marshal(format!(
                "Size mismatch for type {}: got 0 bytes",
                marshal_name(typ)
            )));
        }
        CqlType::Counter => {
            return Err(ConvError::Marshal(format!(
                "Size mismatch for type {}: got 0 bytes",
                marshal_name(&CqlType::Bigint)
            )));
        }
        CqlType::Float
        | CqlType::Double
        | CqlType::Decimal
        | CqlType::Varint
        | CqlType::Duration => {
            return Err(ConvError::Invalid(
                "Cannot create JSON string - deserialization error".into(),
            ));
        }
        // `boolean_type_impl::to_string` of an empty value is empty, and is written as is.
        CqlType::Boolean => String::new(),
        CqlType::Blob => "\"0x\"".into(),
        CqlType::Tuple(_) => "[]".into(),
        CqlType::Udt { .. } => "{}".into(),
        CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. } => {
            return Err(ConvError::Marshal(
                "read_simple - not enough bytes (expected 4, got 0)".into(),
            ));
        }
        _ => "\"\"".into(),
    })
}

// ---------------------------------------------------------------------------------------------
// JSON -> value
// ---------------------------------------------------------------------------------------------

/// `from_json_object`: a value of type `typ` from a JSON value (never null: a JSON `null` for
/// a whole column is handled by the caller; inside a collection it is an error of the element
/// type). Empty strings give [`Value::Empty`] for the types whose `from_string("")` is empty.
pub(crate) fn from_json(typ: &CqlType, j: &Json) -> Result<Value, ConvError> {
    match typ {
        CqlType::Tinyint => int_from_json(typ, j, i64::from(i8::MIN), i64::from(i8::MAX))
            .map(|v| Value::Tinyint(v as i8)),
        CqlType::Smallint => int_from_json(typ, j, i64::from(i16::MIN), i64::from(i16::MAX))
            .map(|v| Value::Smallint(v as i16)),
        CqlType::Int => int_from_json(typ, j, i64::from(i32::MIN), i64::from(i32::MAX))
            .map(|v| Value::Int(v as i32)),
        CqlType::Bigint => int_from_json(typ, j, i64::MIN, i64::MAX).map(Value::Bigint),
        CqlType::Counter => {
            if !j.is_number() {
                return Err(ConvError::Marshal(
                    "Counters must be represented as JSON integer".into(),
                ));
            }
            json_to_int(j, i64::MIN, i64::MAX).map(Value::Bigint)
        }
        CqlType::Text => match j {
            Json::String(s) => Ok(Value::text(s)),
            _ => Err(not_a_string()),
        },
        CqlType::Ascii => match j {
            Json::String(s) if s.is_ascii() => Ok(Value::text(s)),
            Json::String(s) => Err(ConvError::Marshal(format!(
                "Invalid ASCII character in string literal: '{s}'"
            ))),
            _ => Err(not_a_string()),
        },
        CqlType::Blob => blob_from_json(j),
        CqlType::Boolean => boolean_from_json(j),
        CqlType::Timestamp => timestamp_from_json(j),
        CqlType::Timeuuid
        | CqlType::Uuid
        | CqlType::Date
        | CqlType::Time
        | CqlType::Inet
        | CqlType::Duration => text_form_from_json(typ, j),
        CqlType::Float | CqlType::Double => float_from_json(typ, j),
        CqlType::Varint => varint_from_json(j),
        CqlType::Decimal => decimal_from_json(j),
        CqlType::List { elem, .. } => elements_from_json(elem, j, "list_type").map(Value::list),
        CqlType::Set { elem, .. } => elements_from_json(elem, j, "set_type").map(Value::set),
        CqlType::Map { key, value, .. } => map_from_json(key, value, j),
        CqlType::Tuple(types) => tuple_from_json(types, j),
        CqlType::Udt { def, .. } => udt_from_json(def, j),
    }
}

/// A `blob` from its `0x...` hex string.
fn blob_from_json(j: &Json) -> Result<Value, ConvError> {
    let s = string_of(j, "bytes_type")?;
    let Some(hex) = s.strip_prefix("0x") else {
        return Err(ConvError::Marshal(
            "Blob JSON strings must start with 0x".into(),
        ));
    };
    from_hex(hex).map(Value::blob)
}

/// A `boolean` from a JSON boolean or the strings `true` / `false` (any case, blanks
/// trimmed).
fn boolean_from_json(j: &Json) -> Result<Value, ConvError> {
    match j {
        Json::Bool(b) => Ok(Value::Boolean(*b)),
        Json::String(s) => {
            // boost::trim_all then to_lower.
            let t = s.split_whitespace().collect::<Vec<_>>().join(" ");
            match t.to_ascii_lowercase().as_str() {
                "true" => Ok(Value::Boolean(true)),
                "false" => Ok(Value::Boolean(false)),
                _ => Err(ConvError::Marshal(format!("Invalid JSON object {j}"))),
            }
        }
        _ => Err(ConvError::Marshal(format!("Invalid JSON object {j}"))),
    }
}

/// A `timestamp` from its text or from milliseconds since the epoch.
fn timestamp_from_json(j: &Json) -> Result<Value, ConvError> {
    match j {
        Json::String(s) if s.is_empty() => Ok(Value::Empty),
        Json::String(s) => timestamp_from_string(s).map(Value::Timestamp),
        j if j.is_number() => json_to_int(j, i64::MIN, i64::MAX).map(Value::Timestamp),
        _ => Err(ConvError::Marshal(
            "timestamp_type must be represented as string or integer".into(),
        )),
    }
}

/// A value of a type read from its text only (`timeuuid`, `uuid`, `date`, `time`, `inet`,
/// `duration`); the empty string is [`Value::Empty`].
fn text_form_from_json(typ: &CqlType, j: &Json) -> Result<Value, ConvError> {
    let type_name = match typ {
        CqlType::Timeuuid => "timeuuid_type",
        CqlType::Uuid => "uuid_type",
        CqlType::Date => "simple_date_type",
        CqlType::Time => "time_type",
        CqlType::Inet => "inet_addr_type",
        _ => "duration_type",
    };
    let s = string_of(j, type_name)?;
    if s.is_empty() {
        return Ok(Value::Empty);
    }
    match typ {
        CqlType::Timeuuid => {
            let u = uuid_from_string(s)
                .ok_or_else(|| ConvError::Marshal(format!("Invalid UUID format ({s})")))?;
            if u.get_version_num() != 1 {
                return Err(ConvError::Marshal(format!(
                    "Unsupported UUID version ({})",
                    u.get_version_num()
                )));
            }
            Ok(Value::Timeuuid(u))
        }
        CqlType::Uuid => uuid_from_string(s)
            .map(Value::Uuid)
            .ok_or_else(|| ConvError::Marshal(format!("Cannot parse uuid from '{s}'"))),
        CqlType::Date => date_from_string(s).map(Value::Date),
        CqlType::Time => time_from_string(s).map(Value::Time),
        CqlType::Inet => IpAddr::from_str(s)
            .map(Value::Inet)
            .map_err(|_| ConvError::Marshal(format!("Failed to parse inet_addr from '{s}'"))),
        _ => duration_from_string(s).map(Value::Duration),
    }
}

/// A `float` or `double` from a JSON number or its text.
fn float_from_json(typ: &CqlType, j: &Json) -> Result<Value, ConvError> {
    let f = match j {
        Json::String(s) => {
            if s.is_empty() {
                return Ok(Value::Empty);
            }
            float_from_string(s)?
        }
        j => j.as_f64().ok_or_else(|| {
            ConvError::Marshal("JSON value must be represented as double or string".into())
        })?,
    };
    Ok(if *typ == CqlType::Float {
        Value::Float(f as f32)
    } else {
        Value::Double(f)
    })
}

/// A `varint` from its text or the printed text of any other JSON value.
fn varint_from_json(j: &Json) -> Result<Value, ConvError> {
    let text = match j {
        Json::String(s) => Cow::Borrowed(s.as_str()),
        other => Cow::Owned(other.to_string()),
    };
    if text.is_empty() {
        return Ok(Value::Empty);
    }
    varint_from_string(&text).map(|n| Value::varint(&n))
}

/// A `decimal` from its text or the printed text of a JSON number.
fn decimal_from_json(j: &Json) -> Result<Value, ConvError> {
    let text = match j {
        Json::String(s) => s.clone(),
        j if j.is_number() => j.to_string(),
        other => {
            return Err(ConvError::Marshal(format!(
                "{other} must be represented as numeric or string in JSON"
            )));
        }
    };
    if text.is_empty() {
        return Ok(Value::Empty);
    }
    decimal_from_string(&text).map(|d| Value::Decimal(Arc::new(d)))
}

/// The elements of a list or set (`type_name`) from a JSON array.
fn elements_from_json(elem: &CqlType, j: &Json, type_name: &str) -> Result<Vec<Value>, ConvError> {
    let Json::Array(items) = j else {
        return Err(ConvError::Marshal(format!(
            "{type_name} must be represented as JSON Array"
        )));
    };
    items.iter().map(|x| from_json(elem, x)).collect()
}

/// A map from a JSON object: a key of a native type is read from the member's name, any
/// other key from the JSON text that the name holds.
fn map_from_json(key: &CqlType, value: &CqlType, j: &Json) -> Result<Value, ConvError> {
    let Json::Object(members) = j else {
        return Err(ConvError::Marshal(
            "map_type must be represented as JSON Object".into(),
        ));
    };
    let native_key = key.native_name().is_some();
    let mut entries = Vec::with_capacity(members.len());
    for (name, x) in members {
        // The value first, as ScyllaDB converts it first.
        let v = from_json(value, x)?;
        let k = if native_key {
            from_json(key, &Json::String(name.clone()))?
        } else {
            // A key of a collection, tuple or UDT type is that value's JSON text.
            let key_json = Json::String(name.clone());
            jt::parse(name)
                .map_err(|e| ConvError::Rjson(e.message().to_string()))
                .and_then(|parsed| from_json(key, &parsed))
                .map_err(|e| match e {
                    ConvError::Rjson(m) => {
                        ConvError::Marshal(format!("Failed parsing map_key {key_json}: {m}"))
                    }
                    other => other,
                })?
        };
        entries.push((k, v));
    }
    Ok(Value::map(entries))
}

/// A tuple from a JSON array (a shorter array is a shorter tuple value: its missing
/// components read as null).
fn tuple_from_json(types: &[CqlType], j: &Json) -> Result<Value, ConvError> {
    let Json::Array(items) = j else {
        return Err(ConvError::Marshal(
            "tuple_type must be represented as JSON Array".into(),
        ));
    };
    if items.len() > types.len() {
        return Err(ConvError::Marshal(format!(
            "Too many values ({}) for tuple with size {}",
            items.len(),
            types.len()
        )));
    }
    let fields = items
        .iter()
        .zip(types)
        .map(|(x, t)| from_json(t, x).map(Some))
        .collect::<Result<_, _>>()?;
    Ok(Value::tuple(fields))
}

/// A user-defined type's value from a JSON object. Fields are looked up by their name as it
/// is: no quoting for case-sensitive names, unlike Cassandra (scylladb/scylladb#8086).
fn udt_from_json(def: &UserType, j: &Json) -> Result<Value, ConvError> {
    let Json::Object(members) = j else {
        return Err(ConvError::Marshal(
            "user_type must be represented as JSON Object".into(),
        ));
    };
    let mut fields = Vec::with_capacity(def.fields.len());
    for (name, t) in &def.fields {
        fields.push(match j.member(name) {
            None | Some(Json::Null) => None,
            Some(x) => Some(from_json(t, x)?),
        });
    }
    if let Some((extra, _)) = members
        .iter()
        .find(|(k, _)| !def.fields.iter().any(|(f, _)| f == k))
    {
        return Err(ConvError::Marshal(format!(
            "Extraneous field definition for user type {}: {extra}",
            def.name
        )));
    }
    Ok(Value::udt(fields))
}

/// The string of a JSON value that must be one (`validated_to_string_view`).
fn string_of<'a>(j: &'a Json, type_name: &str) -> Result<&'a str, ConvError> {
    match j {
        Json::String(s) => Ok(s),
        other => Err(ConvError::Marshal(format!(
            "{type_name} must be represented as string in JSON, instead got '{other}'"
        ))),
    }
}

/// An integer column's value: a JSON string is parsed as the type's text form, a number must
/// be a whole number within the type's range.
fn int_from_json(typ: &CqlType, j: &Json, min: i64, max: i64) -> Result<i64, ConvError> {
    match j {
        Json::String(s) => {
            let v = parse_int64(s)
                .ok_or_else(|| ConvError::Marshal(format!("Invalid number format '{s}'")))?;
            if v < min || v > max {
                return Err(ConvError::Marshal(format!(
                    "Value out of range for type {}: '{s}'",
                    marshal_name(typ)
                )));
            }
            Ok(v)
        }
        j => json_to_int(j, min, max),
    }
}

/// `to_int<T>`: a JSON number as an integer in `[min, max]`; a double is accepted when it has
/// no fractional part (`1e6`, `12.0`).
fn json_to_int(j: &Json, min: i64, max: i64) -> Result<i64, ConvError> {
    match j {
        Json::Int(i) => {
            if *i < min || *i > max {
                return Err(ConvError::Marshal(format!("Value {i} out of range")));
            }
            Ok(*i)
        }
        Json::Uint(u) => Err(ConvError::Marshal(format!("Value {u} out of range"))),
        Json::Double(d) => {
            let frac = d.fract();
            if frac != 0.0 {
                return Err(ConvError::Marshal(format!(
                    "Incorrect JSON floating-point value for int64 type: {j} (it should not contain fractional part {})",
                    jt::format_double(frac)
                )));
            }
            // `max + 1` is a power of two, exactly representable.
            let max_limit = 2.0 * ((max / 2 + 1) as f64);
            if (min as f64) > *d || *d >= max_limit {
                return Err(ConvError::Marshal(format!(
                    "Value {} out of range",
                    jt::format_double(*d)
                )));
            }
            Ok(*d as i64)
        }
        other => Err(ConvError::Marshal(format!(
            "Incorrect JSON value for int64 type: {other}"
        ))),
    }
}

/// `boost::lexical_cast<int64_t>`: an optional sign and decimal digits, nothing else.
fn parse_int64(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude: u64 = digits.parse().ok()?;
    if s.starts_with('-') {
        if magnitude <= 1u64 << 63 {
            Some(0i64.wrapping_sub_unsigned(magnitude))
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `from_hex`: an even number of hex digits.
fn from_hex(s: &str) -> Result<Vec<u8>, ConvError> {
    if s.len() % 2 == 1 {
        return Err(ConvError::Std(
            "An hex string representing bytes must have an even length".into(),
        ));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    for pair in b.chunks(2) {
        let hi = (pair[0] as char).to_digit(16);
        let lo = (pair[1] as char).to_digit(16);
        match (hi, lo) {
            (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
            _ => return Err(ConvError::Std(format!("Non-hex characters in {s}"))),
        }
    }
    Ok(out)
}

/// A uuid in its canonical 8-4-4-4-12 hex form only.
fn uuid_from_string(s: &str) -> Option<Uuid> {
    let b = s.as_bytes();
    let shape_ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if shape_ok {
        Uuid::parse_str(s).ok()
    } else {
        None
    }
}

/// `boost::lexical_cast<double>`: decimal and exponent forms, `inf`/`infinity`/`nan`.
fn float_from_string(s: &str) -> Result<f64, ConvError> {
    let bad = || ConvError::Marshal(format!("Invalid number format '{s}'"));
    let v: f64 = s.parse().map_err(|_| bad())?;
    let spelled_infinite = s
        .trim_start_matches(['+', '-'])
        .to_ascii_lowercase()
        .starts_with("inf");
    if v.is_infinite() && !spelled_infinite {
        // An overflowing literal is a range error, not infinity.
        return Err(bad());
    }
    Ok(v)
}

/// `boost::multiprecision::cpp_int` from a string: decimal, `0x` hex, or octal with a
/// leading `0`, after an optional `-`.
fn varint_from_string(s: &str) -> Result<BigInt, ConvError> {
    let bad = || ConvError::Marshal(format!("unable to make int from '{s}'"));
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (radix, digits) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, h)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(bad());
    }
    let n = BigInt::parse_bytes(digits.as_bytes(), radix).ok_or_else(bad)?;
    Ok(if negative { -n } else { n })
}

/// `big_decimal(string_view)`: `[+-]digits[.digits][(e|E)[+-]digits]`.
fn decimal_from_string(text: &str) -> Result<Decimal, ConvError> {
    let bad = || ConvError::Marshal(format!("unable to make BigDecimal from '{text}'"));
    let (base, exponent) = match text.find(['e', 'E']) {
        Some(i) => {
            let e = &text[i + 1..];
            if e.is_empty() {
                return Err(bad());
            }
            (&text[..i], Some(e))
        }
        None => (text, None),
    };
    let (int, fraction) = match base.find('.') {
        Some(i) => (&base[..i], &base[i + 1..]),
        None => (base, ""),
    };
    let joined = format!("{int}{fraction}");
    let negative = joined.starts_with('-');
    let digits = joined.strip_prefix(['-', '+']).unwrap_or(&joined);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let mut unscaled = BigInt::from_str(digits).map_err(|_| bad())?;
    if negative {
        unscaled = -unscaled;
    }
    let exp = match exponent {
        Some(e) => parse_int64(e).ok_or_else(bad)?,
        None => 0,
    };
    let scale = i64::try_from(fraction.len())
        .ok()
        .and_then(|f| f.checked_sub(exp))
        .and_then(|s| i32::try_from(s).ok())
        .ok_or_else(bad)?;
    Ok(Decimal::new(scale, Varint::from_bigint(&unscaled)))
}

/// `cql_duration(string_view)`: an optional `-`, then the compact or ISO 8601 form.
fn duration_from_string(s: &str) -> Result<Duration, ConvError> {
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let d = crate::cql::parse_duration_text(body).map_err(ConvError::Marshal)?;
    let sign = if negative { -1 } else { 1 };
    Ok(Duration {
        months: d.months * sign,
        days: d.days * sign,
        nanos: d.nanoseconds * i64::from(sign),
    })
}

/// `std::stol` of a string: leading white space, a sign and the longest run of digits; an
/// error when there are no digits or the number does not fit.
fn stol(s: &str) -> Result<i64, ConvError> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'-') => (-1i128, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let end = rest
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    if end == 0 {
        return Err(ConvError::Std("stol".into()));
    }
    let v: i128 = rest[..end]
        .parse()
        .map_err(|_| ConvError::Std("stol".into()))?;
    i64::try_from(sign * v).map_err(|_| ConvError::Std("stol".into()))
}

/// `time_type_impl::from_string_view`: `hh:mm:ss[.fffffffff]` (each part read by `std::stol`).
fn time_from_string(s: &str) -> Result<i64, ConvError> {
    let format = || ConvError::Marshal("Timestamp format must be hh:mm:ss[.fffffffff]".into());
    let hours_end = s.find(':').ok_or_else(format)?;
    let hours = stol(&s[..hours_end])?;
    if !(0..24).contains(&hours) {
        return Err(ConvError::Marshal(format!("Hour out of bounds ({hours}).")));
    }
    let minutes_end = s[hours_end + 1..]
        .find(':')
        .map(|i| i + hours_end + 1)
        .ok_or_else(format)?;
    let minutes = stol(&s[hours_end + 1..])?;
    if !(0..60).contains(&minutes) {
        return Err(ConvError::Marshal(format!(
            "Minute out of bounds ({minutes})."
        )));
    }
    let seconds_end = s[minutes_end + 1..]
        .find('.')
        .map_or(s.len(), |i| i + minutes_end + 1);
    let seconds = stol(&s[minutes_end + 1..])?;
    if !(0..60).contains(&seconds) {
        return Err(ConvError::Marshal(format!(
            "Second out of bounds ({seconds})."
        )));
    }
    let mut nanos = 0i64;
    if seconds_end < s.len() {
        let frac = &s[seconds_end + 1..];
        nanos = stol(frac)?;
        if frac.len() > 9 {
            return Err(ConvError::Marshal(format!(
                "more than 9 nanosecond digits: {s}"
            )));
        }
        nanos = nanos.saturating_mul(10i64.pow(9 - frac.len() as u32));
        if !(0..1_000_000_000).contains(&nanos) {
            return Err(ConvError::Marshal(format!(
                "Nanosecond out of bounds ({nanos})."
            )));
        }
    }
    Ok(((hours * 60 + minutes) * 60 + seconds) * 1_000_000_000 + nanos)
}

/// `std::strtoll(s, &end, 10)` consuming the whole string: leading white space, a sign and
/// digits (saturating on overflow, as `strtoll` does).
fn strtoll_whole(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = digits.parse().unwrap_or(i128::MAX);
    let v = if negative { -v } else { v };
    Some(v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)
}

/// `simple_date_type_impl::from_string_view`: a raw day number (epoch at 2^31), or
/// `[-]y-m-d` (not validated: `2011-02-30` is March 2nd).
fn date_from_string(s: &str) -> Result<u32, ConvError> {
    if let Some(v) = strtoll_whole(s) {
        return u32::try_from(v).map_err(|_| {
            ConvError::Marshal(format!("Unable to make unsigned int (for date) from {v}"))
        });
    }
    let coerce =
        || ConvError::Marshal(format!("Unable to coerce '{s}' to a formatted date (long)"));
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let mut parts = body.splitn(3, '-');
    let mut next = || -> Result<&str, ConvError> {
        let p = parts.next().ok_or_else(coerce)?;
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(coerce());
        }
        Ok(p)
    };
    let (y, m, d) = (next()?, next()?, next()?);
    let cast = |p: &str| ConvError::Std(format!("bad lexical cast: {p}"));
    let y: i64 = y.parse().map_err(|_| cast(y))?;
    let y = if negative { -y } else { y };
    let m: u32 = m.parse().map_err(|_| cast(m))?;
    let d: u32 = d.parse().map_err(|_| cast(d))?;
    // date::month and date::day hold an unsigned char.
    let days = days_from_civil(y, m & 0xff, d & 0xff);
    if days < i64::from(i32::MIN) {
        return Err(ConvError::Marshal(format!(
            "Input date {s} is less than min supported date -5877641-06-23"
        )));
    }
    if days > i64::from(i32::MAX) {
        return Err(ConvError::Marshal(format!(
            "Input date {s} is greater than max supported date 5881580-07-11"
        )));
    }
    Ok((days + (1i64 << 31)) as u32)
}

/// The leading run of ASCII digits of `s` and the rest.
fn digits_prefix(s: &str) -> (&str, &str) {
    let end = s
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    s.split_at(end)
}

/// `timestamp_from_string`: `now`, a number of milliseconds, or
/// `yyyy-m-d[( |t)h:m[:s[.fff]]]` followed by an optional zone (`z`, `utc`, `gmt`, `+hh:mm`,
/// `+hhmm`); the fraction has at most three digits. Without a zone the server's local time
/// zone applies; the embedded cluster's is UTC.
fn timestamp_from_string(s: &str) -> Result<i64, ConvError> {
    let wrap = |e: ConvError| match e {
        ConvError::Marshal(m) => {
            ConvError::Marshal(format!("unable to parse date '{s}': marshaling error: {m}"))
        }
        other => ConvError::Marshal(format!("unable to parse date '{s}': {}", other.what())),
    };
    let lower = s.to_ascii_lowercase();
    if lower == "now" {
        return Ok(crate::types::timeuuid::now_micros().div_euclid(1000));
    }
    if let Some(v) = strtoll_whole(s) {
        return Ok(v);
    }
    parse_date_time(&lower).map_err(wrap)
}

/// The date-time form of [`timestamp_from_string`], on the lower-cased text.
fn parse_date_time(str: &str) -> Result<i64, ConvError> {
    let no_match = || ConvError::Marshal(format!("Unable to parse timestamp from '{str}'"));
    // ^(\d{4})-(\d+)-(\d+)
    let b = str.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return Err(no_match());
    }
    let year: i64 = str[..4].parse().map_err(|_| no_match())?;
    let (month, rest) = digits_prefix(&str[5..]);
    let rest = rest.strip_prefix('-').filter(|_| !month.is_empty());
    let Some(rest) = rest else {
        return Err(no_match());
    };
    let (day, mut rest) = digits_prefix(rest);
    if day.is_empty() {
        return Err(no_match());
    }
    let big = |p: &str| ConvError::Std(format!("bad lexical cast: {p}"));
    let month: i64 = month.parse().map_err(|_| big(month))?;
    let day: i64 = day.parse().map_err(|_| big(day))?;
    // ([ t](\d+):(\d+)(:(\d+)(\.(\d+))?)?)? — taken only when it matches as a whole.
    let (mut hour, mut minute, mut second, mut millis) = (0i64, 0i64, 0i64, 0i64);
    if let Some(t) = rest.strip_prefix([' ', 't']) {
        let (h, after_h) = digits_prefix(t);
        if let Some(after_colon) = after_h.strip_prefix(':').filter(|_| !h.is_empty()) {
            let (m, after_m) = digits_prefix(after_colon);
            if !m.is_empty() {
                hour = h.parse().map_err(|_| big(h))?;
                minute = m.parse().map_err(|_| big(m))?;
                rest = after_m;
                if let Some(after_colon) = rest.strip_prefix(':') {
                    let (sec, after_s) = digits_prefix(after_colon);
                    if !sec.is_empty() {
                        second = sec.parse().map_err(|_| big(sec))?;
                        rest = after_s;
                        if let Some(after_dot) = rest.strip_prefix('.') {
                            let (frac, after_f) = digits_prefix(after_dot);
                            if !frac.is_empty() {
                                if frac.len() > 3 {
                                    return Err(ConvError::Marshal(format!(
                                        "Milliseconds length exceeds expected ({})",
                                        frac.len()
                                    )));
                                }
                                millis = frac.parse::<i64>().map_err(|_| big(frac))?
                                    * 10i64.pow(3 - frac.len() as u32);
                                rest = after_f;
                            }
                        }
                    }
                }
            }
        }
    }
    // boost::gregorian::date validates the calendar date.
    if !(1400..=9999).contains(&year) {
        return Err(ConvError::Std(
            "Year is out of valid range: 1400..9999".into(),
        ));
    }
    if !(1..=12).contains(&month) {
        return Err(ConvError::Std("Month number is out of range 1..12".into()));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=month_days).contains(&day) {
        return Err(ConvError::Std("Day of month is not valid for year".into()));
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let mut ms = days * 86_400_000 + ((hour * 60 + minute) * 60 + second) * 1000 + millis;
    // The zone: the rest of the text.
    let tz = rest;
    let trimmed = tz.trim_matches(' ');
    if let Some(offset) = utc_offset(tz) {
        ms -= offset?;
    } else if trimmed.is_empty() {
        // Local time: UTC here.
    } else if !matches!(trimmed, "z" | "utc" | "gmt") {
        return Err(ConvError::Marshal(format!(
            "Unable to parse timezone '{tz}'"
        )));
    }
    Ok(ms)
}

/// The offset of a zone written `[+-]\d{2}:?(\d{2})?` (the whole text), in milliseconds:
/// `None` when the text is not of that form, an error when it is but is not `±hh:mm` or
/// `±hhmm` (`get_utc_offset`).
fn utc_offset(tz: &str) -> Option<Result<i64, ConvError>> {
    let b = tz.as_bytes();
    let sign = match b.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let body = &tz[1..];
    let d = body.as_bytes();
    let shape = match d.len() {
        2 => d.iter().all(u8::is_ascii_digit),
        3 => d[..2].iter().all(u8::is_ascii_digit) && d[2] == b':',
        4 => d.iter().all(u8::is_ascii_digit),
        5 => {
            d[..2].iter().all(u8::is_ascii_digit)
                && d[2] == b':'
                && d[3..].iter().all(u8::is_ascii_digit)
        }
        _ => false,
    };
    if !shape {
        return None;
    }
    let (hh, mm) = match d.len() {
        4 => (&body[..2], &body[2..]),
        5 => (&body[..2], &body[3..]),
        _ => {
            return Some(Err(ConvError::Marshal(
                "Cannot get UTC offset for a timestamp".into(),
            )));
        }
    };
    let (h, m): (i64, i64) = (hh.parse().unwrap_or(0), mm.parse().unwrap_or(0));
    Some(Ok(sign * (h * 60 + m) * 60_000))
}

// ---------------------------------------------------------------------------------------------
// toJson() / fromJson()
// ---------------------------------------------------------------------------------------------

/// `toJson(x)` for an argument of type `typ`: the JSON text (`"null"` for null).
pub(crate) fn to_json_call(typ: &CqlType, arg: Option<&Value>) -> Result<Value, CqlError> {
    match to_json(typ, arg) {
        Ok(s) => Ok(Value::text(&s)),
        Err(ConvError::Invalid(m)) => Err(CqlError::invalid(m)),
        Err(e) => Err(function_failure("tojson", typ, &e)),
    }
}

/// `fromJson(s)` for a receiver of type `typ`, in the statement's `keyspace`: null for a null
/// argument or the JSON `null`.
pub(crate) fn from_json_call(
    keyspace: &str,
    typ: &CqlType,
    arg: Option<&Value>,
) -> Result<Option<Value>, CqlError> {
    let Some(arg) = arg else { return Ok(None) };
    let text = arg.as_str().unwrap_or("");
    let parsing_failed = |m: &str| {
        CqlError::new(
            ErrorKind::FunctionFailure {
                keyspace: keyspace.to_string(),
                function: "fromJson".into(),
                arg_types: vec![marshal_name(typ)],
            },
            format!("Failed parsing fromJson parameter: {m}"),
        )
    };
    let json = jt::parse(text).map_err(|e| parsing_failed(e.message()))?;
    if json == Json::Null {
        return Ok(None);
    }
    match from_json(typ, &json) {
        Ok(v) => Ok(Some(v)),
        Err(ConvError::Rjson(m)) => Err(parsing_failed(&m)),
        Err(ConvError::Invalid(m)) => Err(CqlError::invalid(m)),
        Err(e) => Err(function_failure("fromjson", &CqlType::Text, &e)),
    }
}

// ---------------------------------------------------------------------------------------------
// SELECT JSON
// ---------------------------------------------------------------------------------------------

/// The `as_json` wrapper of a `SELECT JSON`: the selectors' result names and types.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonSelection {
    /// The names, as the result columns of the plain SELECT would be named (alias or
    /// default name).
    names: Vec<String>,
    /// The selectors' types.
    types: Vec<CqlType>,
}

impl JsonSelection {
    /// The wrapper of a selection whose plain result columns are `columns`.
    pub(crate) fn new(columns: &[ColumnSpec]) -> JsonSelection {
        JsonSelection {
            names: columns.iter().map(|c| c.name.clone()).collect(),
            types: columns.iter().map(|c| c.typ.clone()).collect(),
        }
    }

    /// The single result column: `[json]` of type `text`, in the table's keyspace and table.
    pub(crate) fn column(table: &TableDef) -> ColumnSpec {
        ColumnSpec::new(
            table.keyspace.clone(),
            table.name.clone(),
            "[json]",
            CqlType::Text,
        )
    }

    /// One row's JSON object (`as_json_function::execute`). A name with an upper-case ASCII
    /// letter is quoted as a case-sensitive identifier (`"\"Caps\""`); names are otherwise
    /// written as they are.
    pub(crate) fn render(&self, values: &[Option<Value>]) -> Result<String, CqlError> {
        let mut out = String::from("{");
        for (i, (name, typ)) in self.names.iter().zip(&self.types).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let upper = name.bytes().any(|b| b.is_ascii_uppercase());
            out.push('"');
            if upper {
                out.push_str("\\\"");
            }
            out.push_str(name);
            if upper {
                out.push_str("\\\"");
            }
            out.push_str("\": ");
            let v = values.get(i).and_then(Option::as_ref);
            out.push_str(&to_json(typ, v).map_err(ConvError::into_statement_error)?);
        }
        out.push('}');
        Ok(out)
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
