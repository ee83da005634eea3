//! CQL constants as values: [`literal_value`] converts a literal for the type that receives
//! it, with Cassandra's and ScyllaDB's errors, through the text forms of dates, times,
//! timestamps and decimals that casts and functions read too. Shared by the planners of
//! terms (`values`) and of view definitions (`ddl::view`).

use std::net::IpAddr;
use std::str::FromStr;

use num_bigint::BigInt;
use uuid::Uuid;

use crate::cql::Literal;
use crate::frame::CqlError;
use crate::types::CqlType;
use crate::types::value::{Duration, Value};

/// The constant kind Cassandra names in its errors.
fn literal_kind(lit: &Literal) -> &'static str {
    match lit {
        Literal::String(_) => "STRING",
        Literal::Integer(_) => "INTEGER",
        Literal::Float(_) => "FLOAT",
        Literal::Boolean(_) => "BOOLEAN",
        Literal::Uuid(_) => "UUID",
        Literal::Blob(_) => "HEX",
        Literal::Duration(_) => "DURATION",
        Literal::Null => "NULL",
    }
}

/// Converts a literal for a receiver of type `typ` (`None` for `null`).
pub(crate) fn literal_value(
    lit: &Literal,
    typ: &CqlType,
    name: &str,
) -> Result<Option<Value>, CqlError> {
    use CqlType as T;
    let bad = || {
        CqlError::invalid(format!(
            "Invalid {} constant ({}) for \"{name}\" of type {typ}",
            literal_kind(lit),
            lit.to_option_text()
        ))
    };
    let unable = |s: &str| CqlError::invalid(format!("Unable to make {typ} from '{s}'"));
    let v = match (lit, typ) {
        (Literal::Null, _) => return Ok(None),
        (Literal::Integer(s), T::Tinyint) => {
            Value::Tinyint(s.parse::<i8>().map_err(|_| unable(s))?)
        }
        (Literal::Integer(s), T::Smallint) => {
            Value::Smallint(s.parse::<i16>().map_err(|_| unable(s))?)
        }
        (Literal::Integer(s), T::Int) => Value::Int(s.parse::<i32>().map_err(|_| unable(s))?),
        (Literal::Integer(s), T::Bigint | T::Counter) => {
            Value::Bigint(s.parse::<i64>().map_err(|_| unable(s))?)
        }
        // ScyllaDB reads an integer constant for a timestamp or a date as that type's text
        // (`untyped_constant_parsed_value`), and does not take one for a time or a
        // duration (`untyped_constant_test_assignment`, cql3/expr/prepare_expr.cc).
        (Literal::Integer(s), T::Timestamp) => Value::Timestamp(parse_timestamp(s)?),
        (Literal::Integer(s), T::Date) => Value::Date(parse_date(s)?),
        (Literal::Integer(s), T::Varint) => {
            Value::varint(&BigInt::from_str(s).map_err(|_| unable(s))?)
        }
        (Literal::Integer(s) | Literal::Float(s), T::Decimal) => {
            parse_decimal(s).ok_or_else(|| unable(s))?
        }
        (Literal::Integer(s) | Literal::Float(s), T::Float) => {
            Value::Float(parse_float(s).ok_or_else(|| unable(s))? as f32)
        }
        (Literal::Integer(s) | Literal::Float(s), T::Double) => {
            Value::Double(parse_float(s).ok_or_else(|| unable(s))?)
        }
        (Literal::Boolean(b), T::Boolean) => Value::Boolean(*b),
        (Literal::String(s), T::Text) => Value::text(s),
        (Literal::String(s), T::Ascii) => {
            if !s.is_ascii() {
                return Err(CqlError::invalid(format!(
                    "Invalid ASCII character in string literal for \"{name}\""
                )));
            }
            Value::text(s)
        }
        (Literal::String(s), T::Timestamp) => Value::Timestamp(parse_timestamp(s)?),
        (Literal::String(s), T::Date) => Value::Date(parse_date(s)?),
        (Literal::String(s), T::Time) => Value::Time(parse_time(s)?),
        (Literal::String(s), T::Inet) => {
            Value::Inet(IpAddr::from_str(s.trim()).map_err(|_| {
                CqlError::invalid(format!("Unable to make inet address from '{s}'"))
            })?)
        }
        (Literal::String(s), T::Uuid | T::Timeuuid) => {
            let u = Uuid::parse_str(s)
                .map_err(|_| CqlError::invalid(format!("Unable to make UUID from '{s}'")))?;
            uuid_value(u, typ, name)?
        }
        (Literal::Uuid(u), T::Uuid | T::Timeuuid) => uuid_value(*u, typ, name)?,
        (Literal::Blob(b), T::Blob) => Value::blob(b),
        (Literal::Duration(d), T::Duration) => Value::Duration(Duration {
            months: d.months,
            days: d.days,
            nanos: d.nanoseconds,
        }),
        _ => return Err(bad()),
    };
    Ok(Some(v))
}

/// A uuid constant as a `uuid` or (version 1 only) `timeuuid` value.
fn uuid_value(u: Uuid, typ: &CqlType, name: &str) -> Result<Value, CqlError> {
    if *typ == CqlType::Timeuuid {
        if u.get_version_num() != 1 {
            return Err(CqlError::invalid(format!(
                "Invalid UUID constant ({u}) for \"{name}\" of type timeuuid: not a version 1 UUID"
            )));
        }
        Ok(Value::Timeuuid(u))
    } else {
        Ok(Value::Uuid(u))
    }
}

/// A float constant, including `NaN` and the infinities.
fn parse_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// Parses a decimal literal (`-1.25`, `3e-2`).
pub(crate) fn parse_decimal(s: &str) -> Option<Value> {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let digits = format!("{int}{frac}");
    if digits.is_empty() || digits == "-" {
        return None;
    }
    let unscaled = BigInt::from_str(&digits).ok()?;
    let scale = i32::try_from(frac.len()).ok()?.checked_sub(exp)?;
    Some(Value::decimal(&unscaled, scale))
}

/// The `date` value of a day count since the epoch.
pub(crate) fn days_to_date(days: i64) -> u32 {
    (days + (1i64 << 31)).clamp(0, i64::from(u32::MAX)) as u32
}

/// The day count since the epoch of a `date` value.
pub(crate) fn date_to_days(d: u32) -> i64 {
    i64::from(d) - (1i64 << 31)
}

/// A date, time or timestamp text ScyllaDB refuses, with its error class.
fn datetime_error(e: crate::types::datetime::ParseError) -> CqlError {
    match e {
        crate::types::datetime::ParseError::Invalid(m) => CqlError::invalid(m),
        crate::types::datetime::ParseError::Server(m) => CqlError::server(m),
    }
}

/// Parses a timestamp text into milliseconds since the epoch (`types::datetime`).
pub(crate) fn parse_timestamp(s: &str) -> Result<i64, CqlError> {
    crate::types::datetime::parse_timestamp(s).map_err(datetime_error)
}

/// Parses a date text into its value (days since the epoch plus 2^31; `types::datetime`).
pub(crate) fn parse_date(s: &str) -> Result<u32, CqlError> {
    crate::types::datetime::parse_date(s).map_err(datetime_error)
}

/// Parses a time text into nanoseconds since midnight (`types::datetime`).
pub(crate) fn parse_time(s: &str) -> Result<i64, CqlError> {
    crate::types::datetime::parse_time(s).map_err(datetime_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_in_every_common_form() {
        assert_eq!(parse_timestamp("1970-01-01").unwrap(), 0);
        assert_eq!(parse_timestamp("1000").unwrap(), 1000);
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05+0000").unwrap(),
            1_704_164_645_000
        );
        assert_eq!(
            parse_timestamp("2024-01-02T03:04:05.678Z").unwrap(),
            1_704_164_645_678
        );
        assert_eq!(
            parse_timestamp("2024-01-02 04:04:05+01:00").unwrap(),
            1_704_164_645_000
        );
        assert_eq!(
            parse_timestamp("2024-01-02 03:04").unwrap(),
            1_704_164_640_000
        );
        assert!(parse_timestamp("2024-13-02").is_err());
        assert!(parse_timestamp("yesterday").is_err());
    }

    #[test]
    fn dates_and_times_parse() {
        assert_eq!(parse_date("1970-01-01").unwrap(), 1 << 31);
        assert_eq!(parse_date("1970-01-02").unwrap(), (1 << 31) + 1);
        assert_eq!(parse_date("1969-12-31").unwrap(), (1 << 31) - 1);
        assert_eq!(parse_time("01:02:03.5").unwrap(), 3_723_500_000_000);
        assert_eq!(parse_time("00:00:00").unwrap(), 0);
        assert!(parse_time("24:00:00").is_err());
        assert!(parse_time("1:2").is_err());
    }

    #[test]
    fn integer_literals_convert_per_type_and_range() {
        let lit = Literal::Integer("300".into());
        assert!(literal_value(&lit, &CqlType::Tinyint, "v").is_err());
        assert_eq!(
            literal_value(&lit, &CqlType::Smallint, "v").unwrap(),
            Some(Value::Smallint(300))
        );
        assert_eq!(
            literal_value(&lit, &CqlType::Double, "v").unwrap(),
            Some(Value::Double(300.0))
        );
        let big = Literal::Integer("123456789012345678901234567890".into());
        assert!(literal_value(&big, &CqlType::Bigint, "v").is_err());
        assert!(matches!(
            literal_value(&big, &CqlType::Varint, "v").unwrap(),
            Some(Value::Varint(_))
        ));
        let e = literal_value(&Literal::String("x".into()), &CqlType::Int, "v").unwrap_err();
        assert_eq!(
            e.message,
            "Invalid STRING constant (x) for \"v\" of type int"
        );
    }

    #[test]
    fn decimals_keep_their_scale() {
        let Some(Value::Decimal(d)) = parse_decimal("-1.25") else {
            panic!("not a decimal")
        };
        assert_eq!(d.scale, 2);
        assert_eq!(d.unscaled.to_i64(), Some(-125));
        let Some(Value::Decimal(d)) = parse_decimal("3e2") else {
            panic!("not a decimal")
        };
        assert_eq!((d.scale, d.unscaled.to_i64()), (-2, Some(3)));
    }
}
