//! Values as ScyllaDB writes them as text, where the text reaches a client.
//!
//! Two renderings, both from ScyllaDB's `types/types.cc`:
//! - [`to_text`]: `abstract_type::to_string_impl`, the text of `CAST(x AS text)`
//!   (`castas_fcts.cc`): numbers as `{fmt}` prints them (`1`, not `1.0`; shortest round-trip
//!   digits), decimals without trailing fraction zeros, blobs as bare hex, timestamps as
//!   `2024-05-06T07:08:09.010Z`, times as `07:08:09.010000000`.
//! - [`to_parsable`]: `data_value::to_parsable_string`, the text of a constant inside a
//!   result column name (`m['k']`, `l[0]`): the text of [`to_text`], in single quotes for
//!   text, ascii, inet, time and timestamp values (not escaped), with collection, tuple and
//!   UDT literals built from their elements.

use std::fmt::Write as _;

use crate::types::CqlType;
use crate::types::value::{Decimal, Duration, Value};

/// A value as `abstract_type::to_string_impl` renders it (empty values as the empty string;
/// collections as `vector_to_string` / `map_to_string` of a non-frozen collection).
pub(crate) fn to_text(v: &Value) -> String {
    match v {
        Value::Empty => String::new(),
        Value::Boolean(b) => b.to_string(),
        Value::Tinyint(n) => n.to_string(),
        Value::Smallint(n) => n.to_string(),
        Value::Int(n) => n.to_string(),
        Value::Bigint(n) => n.to_string(),
        Value::Varint(n) => n.to_bigint().to_string(),
        Value::Decimal(d) => decimal_text(d),
        Value::Float(f) => shortest_float(f64::from(*f), true),
        Value::Double(d) => shortest_float(*d, false),
        Value::Text(s) => s.to_string(),
        Value::Blob(b) => b
            .iter()
            .fold(String::with_capacity(b.len() * 2), |mut s, x| {
                let _ = write!(s, "{x:02x}");
                s
            }),
        Value::Timestamp(ms) => timestamp_text(*ms),
        Value::Date(d) => date_text(*d),
        Value::Time(t) => time_text(*t),
        Value::Duration(d) => duration_text(d),
        Value::Inet(a) => a.to_string(),
        Value::Uuid(u) | Value::Timeuuid(u) => u.hyphenated().to_string(),
        Value::List(items) => join(items.iter().map(to_text), ", "),
        Value::Set(items) => join(items.iter().map(to_text), "; "),
        Value::Map(entries) => join(
            entries
                .iter()
                .map(|(k, x)| format!("{{{} : {}}}", to_text(k), to_text(x))),
            ", ",
        ),
        // `tuple_to_string` (its escaping of ':' and '@' inside fields is not reproduced).
        Value::Tuple(fields) | Value::Udt(fields) => join(
            fields
                .iter()
                .map(|f| f.as_ref().map_or_else(|| "@".to_owned(), to_text)),
            ":",
        ),
    }
}

/// A value as `data_value::to_parsable_string` renders it, for a value of type `typ`.
pub(crate) fn to_parsable(v: &Value, typ: &CqlType) -> String {
    match (v, typ) {
        (Value::List(items), CqlType::List { elem, .. }) => {
            format!(
                "[{}]",
                join(items.iter().map(|e| to_parsable(e, elem)), ", ")
            )
        }
        (Value::Set(items), CqlType::Set { elem, .. }) => {
            format!(
                "{{{}}}",
                join(items.iter().map(|e| to_parsable(e, elem)), ", ")
            )
        }
        (Value::Map(entries), CqlType::Map { key, value, .. }) => format!(
            "{{{}}}",
            join(
                entries.iter().map(|(k, x)| format!(
                    "{}:{}",
                    to_parsable(k, key),
                    to_parsable(x, value)
                )),
                ", "
            )
        ),
        (Value::Udt(fields), CqlType::Udt { def, .. }) => format!(
            "{{{}}}",
            join(
                def.fields
                    .iter()
                    .zip(fields.iter())
                    .map(|((name, t), f)| { format!("{name}:{}", parsable_opt(f.as_ref(), t)) }),
                ", "
            )
        ),
        (Value::Tuple(fields), CqlType::Tuple(types)) => format!(
            "({})",
            join(
                types
                    .iter()
                    .zip(fields.iter())
                    .map(|(t, f)| parsable_opt(f.as_ref(), t)),
                ", "
            )
        ),
        (
            _,
            CqlType::Text | CqlType::Ascii | CqlType::Inet | CqlType::Time | CqlType::Timestamp,
        ) => format!("'{}'", to_text(v)),
        _ => to_text(v),
    }
}

/// A possibly null field as [`to_parsable`] renders it.
fn parsable_opt(v: Option<&Value>, typ: &CqlType) -> String {
    v.map_or_else(|| "null".to_owned(), |v| to_parsable(v, typ))
}

fn join(parts: impl Iterator<Item = String>, sep: &str) -> String {
    parts.collect::<Vec<_>>().join(sep)
}

/// A float as `{fmt}` prints it with `{}`: the shortest digits that read back as the same
/// value, in fixed notation when the decimal exponent is in `[-4, upper)` (upper: 7 for
/// `float`, 16 for `double`) and as `d.ddde+XX` otherwise; `inf`, `-inf`, `nan`.
pub(crate) fn shortest_float(x: f64, single: bool) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits of the value's own precision.
    let sci = if single {
        format!("{:e}", x as f32)
    } else {
        format!("{x:e}")
    };
    let (negative, sci) = match sci.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, sci.as_str()),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let upper = if single { 7 } else { 16 };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if digits == "0" {
        out.push('0');
    } else if (-4..upper).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', int_len - digits.len()));
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
    out
}

/// `big_decimal::to_string`: the unscaled digits with the point placed by the scale, zeros
/// appended for a negative scale, and trailing fraction zeros (and a bare point) removed.
fn decimal_text(d: &Decimal) -> String {
    let unscaled = d.unscaled.to_bigint();
    if unscaled == num_bigint::BigInt::from(0) {
        return "0".to_owned();
    }
    let mut digits = unscaled.magnitude().to_string();
    let scale = d.scale;
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
    if unscaled.sign() == num_bigint::Sign::Minus {
        digits.insert(0, '-');
    }
    digits
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `time_point_to_string`: `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, milliseconds always shown).
fn timestamp_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1000;
    let year = if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!(
        "{year}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        in_day % 1000
    )
}

/// `simple_date_to_string`: `YYYY-MM-DD` of a date (days with 2^31 as the epoch).
fn date_text(d: u32) -> String {
    let (y, m, day) = civil_from_days(i64::from(d) - (1i64 << 31));
    if y < 0 {
        format!("-{:04}-{m:02}-{day:02}", -y)
    } else {
        format!("{y:04}-{m:02}-{day:02}")
    }
}

/// `time_to_string`: `HH:MM:SS.nnnnnnnnn`.
fn time_text(nanos: i64) -> String {
    let (secs, frac) = (
        nanos.div_euclid(1_000_000_000),
        nanos.rem_euclid(1_000_000_000),
    );
    format!(
        "{:02}:{:02}:{:02}.{frac:09}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `operator<<(cql_duration)`: each non-zero unit from years to nanoseconds, with one
/// leading `-` for a negative duration (a zero duration is the empty string).
fn duration_text(d: &Duration) -> String {
    let mut out = String::new();
    if d.months < 0 || d.days < 0 || d.nanos < 0 {
        out.push('-');
    }
    let months = i64::from(d.months).unsigned_abs();
    let part = |n: u64, unit: &str, out: &mut String| {
        if n > 0 {
            let _ = write!(out, "{n}{unit}");
        }
    };
    part(months / 12, "y", &mut out);
    part(months % 12, "mo", &mut out);
    part(i64::from(d.days).unsigned_abs(), "d", &mut out);
    let mut nanos = d.nanos.unsigned_abs();
    for (size, unit) in [
        (3_600_000_000_000u64, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        part(nanos / size, unit, &mut out);
        nanos %= size;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_fmt() {
        let d = |x: f64| shortest_float(x, false);
        let f = |x: f32| shortest_float(f64::from(x), true);
        assert_eq!(d(1.0), "1");
        assert_eq!(d(-564.0), "-564");
        assert_eq!(d(2.5), "2.5");
        assert_eq!(d(0.1), "0.1");
        assert_eq!(d(0.0001), "0.0001");
        assert_eq!(d(0.00001), "1e-05");
        assert_eq!(d(1e15), "1000000000000000");
        assert_eq!(d(1e16), "1e+16");
        assert_eq!(d(-std::f64::consts::PI), "-3.141592653589793");
        assert_eq!(d(1.5e300), "1.5e+300");
        assert_eq!(d(0.0), "0");
        assert_eq!(d(-0.0), "-0");
        assert_eq!(d(f64::NAN), "nan");
        assert_eq!(d(f64::NEG_INFINITY), "-inf");
        assert_eq!(f(2.5), "2.5");
        assert_eq!(f(std::f32::consts::PI), "3.1415927");
        assert_eq!(f(1_000_000.0), "1000000");
        assert_eq!(f(10_000_000.0), "1e+07");
        assert_eq!(f(0.1), "0.1");
    }

    #[test]
    fn scalars_render_like_scylla() {
        assert_eq!(
            to_text(&Value::Timestamp(1_714_979_289_010)),
            "2024-05-06T07:08:09.010Z"
        );
        assert_eq!(to_text(&Value::Timestamp(-1)), "1969-12-31T23:59:59.999Z");
        assert_eq!(to_text(&Value::Date((1u32 << 31) + 19_849)), "2024-05-06");
        assert_eq!(
            to_text(&Value::Time(
                ((7 * 60 + 8) * 60 + 9) * 1_000_000_000 + 10_000_000
            )),
            "07:08:09.010000000"
        );
        assert_eq!(to_text(&Value::blob([0x00, 0x2a])), "002a");
        let dec = |s: &str| super::super::literal::parse_decimal(s).expect("decimal");
        assert_eq!(to_text(&dec("1.10")), "1.1");
        assert_eq!(to_text(&dec("1.00")), "1");
        assert_eq!(to_text(&dec("-0.050")), "-0.05");
        assert_eq!(to_text(&dec("0.00")), "0");
        assert_eq!(to_text(&dec("12E+2")), "1200");
        assert_eq!(to_text(&Value::Boolean(true)), "true");
    }

    #[test]
    fn parsable_constants_quote_what_scylla_quotes() {
        assert_eq!(to_parsable(&Value::text("k"), &CqlType::Text), "'k'");
        assert_eq!(to_parsable(&Value::Int(0), &CqlType::Int), "0");
        assert_eq!(
            to_parsable(&Value::Timestamp(0), &CqlType::Timestamp),
            "'1970-01-01T00:00:00.000Z'"
        );
        // CQL `date` is Scylla's simple_date: not quoted.
        assert_eq!(
            to_parsable(&Value::Date(1u32 << 31), &CqlType::Date),
            "1970-01-01"
        );
        assert_eq!(
            to_parsable(&Value::blob([0xca, 0xfe]), &CqlType::Blob),
            "cafe"
        );
        let list = CqlType::List {
            elem: Box::new(CqlType::Text),
            frozen: true,
        };
        assert_eq!(
            to_parsable(
                &Value::list(vec![Value::text("a"), Value::text("b")]),
                &list
            ),
            "['a', 'b']"
        );
        let tuple = CqlType::Tuple(vec![CqlType::Int, CqlType::Text]);
        assert_eq!(
            to_parsable(&Value::tuple(vec![Some(Value::Int(1)), None]), &tuple),
            "(1, null)"
        );
    }
}
