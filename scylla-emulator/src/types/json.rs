//! JSON text as ScyllaDB reads and writes it for CQL: the document model, the parser, and
//! the number and string spellings of its output.
//!
//! ScyllaDB parses JSON with RapidJSON (through `utils/rjson.cc`), so [`parse`] follows
//! RapidJSON's default reader: RFC 8259 syntax only (no comments, trailing commas, `NaN` or
//! single quotes), control characters refused inside strings, any value at the root, objects
//! keeping every member in order (duplicates included), and numbers classified the way
//! RapidJSON does — an integer literal that fits `int64` or `uint64` stays an integer, every
//! other number is a `double` — with at most [`MAX_NESTING`] nested objects and arrays
//! (`rjson::default_max_nested_level`). Errors carry RapidJSON's English messages.
//!
//! Output goes two ways, as in ScyllaDB: [`Json`]'s `Display` and [`print_number`] write what
//! `rjson::print` writes (RapidJSON's `Writer`: compact, doubles by its `dtoa`), used in error
//! messages and when a JSON number is re-read as a `varint` or `decimal`; [`quote`] and
//! [`format_float`] are the spellings of `to_json_string` (`types/json_utils.cc`): strings
//! quoted with `\uXXXX` escapes for control characters, floating-point numbers as `fmt`'s
//! shortest `{}`.

use std::fmt::{self, Write as _};

/// How deeply objects and arrays may nest (`rjson::default_max_nested_level`).
pub(crate) const MAX_NESTING: usize = 78;

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// An integer literal that fits `int64`.
    Int(i64),
    /// An integer literal above `int64` that fits `uint64`.
    Uint(u64),
    /// Any other number (a fraction, an exponent, or an integer beyond 64 bits).
    Double(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object: members in document order, duplicates kept.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Whether the value is a number of any kind.
    pub(crate) fn is_number(&self) -> bool {
        matches!(self, Json::Int(_) | Json::Uint(_) | Json::Double(_))
    }

    /// The number as a `double` (RapidJSON's `GetDouble`), `None` for other values.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Int(i) => Some(*i as f64),
            Json::Uint(u) => Some(*u as f64),
            Json::Double(d) => Some(*d),
            _ => None,
        }
    }

    /// The first member called `name` of an object (`rjson::find`).
    pub(crate) fn member(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A JSON text that does not parse: RapidJSON's message (or the nesting limit's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct JsonParseError {
    message: String,
}

impl JsonParseError {
    /// The message, as `rjson::parse` words it (`Parsing JSON failed: ... at <offset>`).
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

/// RapidJSON's parse error codes that this parser can produce, with their English texts
/// (`rapidjson/error/en.h`).
#[derive(Debug, Clone, Copy)]
enum ParseCode {
    DocumentEmpty,
    RootNotSingular,
    ValueInvalid,
    ObjectMissName,
    ObjectMissColon,
    ObjectMissCommaOrCurlyBracket,
    ArrayMissCommaOrSquareBracket,
    UnicodeEscapeInvalidHex,
    UnicodeSurrogateInvalid,
    EscapeInvalid,
    MissQuotationMark,
    InvalidEncoding,
    NumberTooBig,
    NumberMissFraction,
    NumberMissExponent,
}

impl ParseCode {
    fn text(self) -> &'static str {
        match self {
            ParseCode::DocumentEmpty => "The document is empty.",
            ParseCode::RootNotSingular => "The document root must not be followed by other values.",
            ParseCode::ValueInvalid => "Invalid value.",
            ParseCode::ObjectMissName => "Missing a name for object member.",
            ParseCode::ObjectMissColon => "Missing a colon after a name of object member.",
            ParseCode::ObjectMissCommaOrCurlyBracket => {
                "Missing a comma or '}' after an object member."
            }
            ParseCode::ArrayMissCommaOrSquareBracket => {
                "Missing a comma or ']' after an array element."
            }
            ParseCode::UnicodeEscapeInvalidHex => "Incorrect hex digit after \\u escape in string.",
            ParseCode::UnicodeSurrogateInvalid => "The surrogate pair in string is invalid.",
            ParseCode::EscapeInvalid => "Invalid escape character in string.",
            ParseCode::MissQuotationMark => "Missing a closing quotation mark in string.",
            ParseCode::InvalidEncoding => "Invalid encoding in string.",
            ParseCode::NumberTooBig => "Number too big to be stored in double.",
            ParseCode::NumberMissFraction => "Miss fraction part in number.",
            ParseCode::NumberMissExponent => "Miss exponent in number.",
        }
    }
}

/// Parses a JSON text as `rjson::parse` does.
pub(crate) fn parse(text: &str) -> Result<Json, JsonParseError> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.skip_ws();
    if p.pos == p.s.len() {
        return Err(p.error(ParseCode::DocumentEmpty, p.pos));
    }
    let v = p.value()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(p.error(ParseCode::RootNotSingular, p.pos));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn error(&self, code: ParseCode, at: usize) -> JsonParseError {
        JsonParseError {
            message: format!("Parsing JSON failed: {} at {at}", code.text()),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &[u8], v: Json) -> Result<Json, JsonParseError> {
        if self.s[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.error(ParseCode::ValueInvalid, self.pos))
        }
    }

    fn enter(&mut self) -> Result<(), JsonParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(JsonParseError {
                message: format!("Max nested level reached: {MAX_NESTING}"),
            });
        }
        Ok(())
    }

    fn value(&mut self) -> Result<Json, JsonParseError> {
        match self.peek() {
            Some(b'n') => self.literal(b"null", Json::Null),
            Some(b't') => self.literal(b"true", Json::Bool(true)),
            Some(b'f') => self.literal(b"false", Json::Bool(false)),
            Some(b'"') => self.string().map(Json::String),
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            _ => self.number(),
        }
    }

    fn object(&mut self) -> Result<Json, JsonParseError> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        let mut members = Vec::new();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Json::Object(members));
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.error(ParseCode::ObjectMissName, self.pos));
            }
            let name = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error(ParseCode::ObjectMissColon, self.pos));
            }
            self.pos += 1;
            self.skip_ws();
            let v = self.value()?;
            members.push((name, v));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Json::Object(members));
                }
                _ => {
                    return Err(self.error(ParseCode::ObjectMissCommaOrCurlyBracket, self.pos));
                }
            }
        }
    }

    fn array(&mut self) -> Result<Json, JsonParseError> {
        self.enter()?;
        self.pos += 1;
        self.skip_ws();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    self.depth -= 1;
                    return Ok(Json::Array(items));
                }
                _ => {
                    return Err(self.error(ParseCode::ArrayMissCommaOrSquareBracket, self.pos));
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = self
                .peek()
                .and_then(|c| (c as char).to_digit(16))
                .ok_or_else(|| self.error(ParseCode::UnicodeEscapeInvalidHex, self.pos))?;
            v = v * 16 + d;
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, JsonParseError> {
        let start = self.pos;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error(ParseCode::MissQuotationMark, self.pos));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    // The input is UTF-8 text and escapes produce valid code points; a lone
                    // surrogate escape is refused below, so this cannot fail.
                    return String::from_utf8(out)
                        .map_err(|_| self.error(ParseCode::InvalidEncoding, start));
                }
                b'\\' => {
                    let at = self.pos;
                    self.pos += 1;
                    let e = self
                        .peek()
                        .ok_or_else(|| self.error(ParseCode::EscapeInvalid, at))?;
                    self.pos += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp =
                                if (0xD800..=0xDBFF).contains(&hi) {
                                    if self.peek() != Some(b'\\') {
                                        return Err(self
                                            .error(ParseCode::UnicodeSurrogateInvalid, self.pos));
                                    }
                                    self.pos += 1;
                                    if self.peek() != Some(b'u') {
                                        return Err(self
                                            .error(ParseCode::UnicodeSurrogateInvalid, self.pos));
                                    }
                                    self.pos += 1;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return Err(self
                                            .error(ParseCode::UnicodeSurrogateInvalid, self.pos));
                                    }
                                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                } else {
                                    hi
                                };
                            // A lone low surrogate is not a character.
                            char::from_u32(cp).ok_or_else(|| {
                                self.error(ParseCode::UnicodeSurrogateInvalid, self.pos)
                            })?
                        }
                        _ => return Err(self.error(ParseCode::EscapeInvalid, at)),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                0 => return Err(self.error(ParseCode::MissQuotationMark, self.pos)),
                c if c < 0x20 => return Err(self.error(ParseCode::InvalidEncoding, self.pos)),
                c => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn number(&mut self) -> Result<Json, JsonParseError> {
        let start = self.pos;
        let minus = self.peek() == Some(b'-');
        if minus {
            self.pos += 1;
        }
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                while matches!(self.peek(), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
            }
            _ => return Err(self.error(ParseCode::ValueInvalid, start)),
        }
        let int_end = self.pos;
        let mut is_double = false;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error(ParseCode::NumberMissFraction, self.pos));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            is_double = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error(ParseCode::NumberMissExponent, self.pos));
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            is_double = true;
        }
        // The slice holds ASCII digits, signs, '.', 'e' only.
        let text = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
        if !is_double {
            let digits = std::str::from_utf8(&self.s[int_start..int_end]).unwrap_or("");
            if let Ok(u) = digits.parse::<u64>() {
                // RapidJSON: a negative literal down to -2^63 is an Int64, a positive one up
                // to 2^64-1 a Uint64 (also an Int64 below 2^63); beyond that a double.
                if minus {
                    if u <= 1u64 << 63 {
                        return Ok(Json::Int(0i64.wrapping_sub_unsigned(u)));
                    }
                } else if let Ok(i) = i64::try_from(u) {
                    return Ok(Json::Int(i));
                } else {
                    return Ok(Json::Uint(u));
                }
            }
        }
        let d: f64 = text
            .parse()
            .map_err(|_| self.error(ParseCode::ValueInvalid, start))?;
        if d.is_infinite() {
            return Err(self.error(ParseCode::NumberTooBig, start));
        }
        Ok(Json::Double(d))
    }
}

/// Writes a string the way RapidJSON's `Writer` escapes it (`"`, `\`, and control
/// characters; `\u00XX` in upper-case hex for those without a short escape).
fn write_rapidjson_string(s: &str, out: &mut impl fmt::Write) -> fmt::Result {
    out.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\u{8}' => out.write_str("\\b")?,
            '\u{c}' => out.write_str("\\f")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04X}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

/// `rjson::print` of a JSON value: RapidJSON's compact `Writer` output.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Json::Int(_) | Json::Uint(_) | Json::Double(_) => {
                f.write_str(&print_number(self).unwrap_or_default())
            }
            Json::String(s) => write_rapidjson_string(s, f),
            Json::Array(items) => {
                f.write_char('[')?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_char(']')
            }
            Json::Object(members) => {
                f.write_char('{')?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_char(',')?;
                    }
                    write_rapidjson_string(k, f)?;
                    write!(f, ":{v}")?;
                }
                f.write_char('}')
            }
        }
    }
}

/// The shortest decimal digits of a finite, non-zero `v` and the exponent of the first one
/// (`v = 0.d1d2d3... × 10^(exp+1)`), from Rust's shortest round-trip formatting.
fn shortest_digits(sci: &str) -> (String, i32) {
    // `sci` is `{:e}` output of a positive value: `d[.ddd]e[-]x`.
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

/// RapidJSON's `dtoa` (`internal/dtoa.h`, `Prettify`) of a finite double: `100.0`, `1.5`,
/// `0.001`, `1e30`, `1.234e-7`.
fn rapidjson_dtoa(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.to_string();
    }
    let mut out = String::new();
    if v < 0.0 {
        out.push('-');
    }
    let (digits, exp) = shortest_digits(&format!("{:e}", v.abs()));
    let length = digits.len() as i32;
    // kk: the position of the decimal point relative to the digits (10^(kk-1) <= v < 10^kk).
    let kk = exp + 1;
    let k = kk - length;
    if (0..=21).contains(&kk) && k >= 0 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', k as usize));
        out.push_str(".0");
    } else if 0 < kk && kk <= 21 {
        let (int, frac) = digits.split_at(kk as usize);
        let _ = write!(out, "{int}.{frac}");
    } else if -6 < kk && kk <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-kk) as usize));
        out.push_str(&digits);
    } else if length == 1 {
        let _ = write!(out, "{digits}e{}", kk - 1);
    } else {
        let (first, rest) = digits.split_at(1);
        let _ = write!(out, "{first}.{rest}e{}", kk - 1);
    }
    out
}

/// A number as `rjson::print` writes it (integers exactly, doubles by RapidJSON's `dtoa`);
/// `None` for a value that is not a number.
pub(crate) fn print_number(v: &Json) -> Option<String> {
    Some(match v {
        Json::Int(i) => i.to_string(),
        Json::Uint(u) => u.to_string(),
        Json::Double(d) => rapidjson_dtoa(*d),
        _ => return None,
    })
}

/// `fmt::format("{}", v)` of a finite floating-point number: the shortest round-trip
/// digits, fixed notation for decimal exponents in `[-4, 16)` (`17`, `0.1`, `0.0001`),
/// otherwise `1e+16`, `1.5e-05` (at least two exponent digits). `sci` is Rust's `{:e}`
/// rendering of the value at its own precision (`f32` or `f64`).
fn fmt_shortest(negative: bool, zero: bool, sci: &str) -> String {
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if zero {
        out.push('0');
        return out;
    }
    let (digits, exp) = shortest_digits(sci);
    let n = digits.len() as i32;
    if (-4..16).contains(&exp) {
        if exp >= n - 1 {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', (exp - (n - 1)) as usize));
        } else if exp >= 0 {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            let _ = write!(out, "{int}.{frac}");
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            let _ = write!(out, ".{rest}");
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    }
    out
}

/// A `double` as ScyllaDB's `to_json_string` writes it (`fmt`'s `{}`; see [`fmt_shortest`]).
/// NaN and the infinities have no JSON spelling: the caller writes `null` for them.
pub(crate) fn format_double(v: f64) -> String {
    fmt_shortest(v.is_sign_negative(), v == 0.0, &format!("{:e}", v.abs()))
}

/// A `float` as ScyllaDB's `to_json_string` writes it (its own shortest digits, so `0.1f`
/// is `0.1`, not the widened double's digits).
pub(crate) fn format_float(v: f32) -> String {
    fmt_shortest(v.is_sign_negative(), v == 0.0, &format!("{:e}", v.abs()))
}

/// A string quoted as `to_json_string` quotes it (`quote_json_string`, `types/json_utils.cc`):
/// `"` and `\` escaped, `\b \f \n \r \t` by name, other control characters as `\u00XX` (upper-
/// case hex); every other character as is.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_value() {
        let v = parse(r#" {"a": [1, -2, 1.5, true, false, null], "b": {"c": "x\ty"}} "#).unwrap();
        assert_eq!(
            v,
            Json::Object(vec![
                (
                    "a".into(),
                    Json::Array(vec![
                        Json::Int(1),
                        Json::Int(-2),
                        Json::Double(1.5),
                        Json::Bool(true),
                        Json::Bool(false),
                        Json::Null
                    ])
                ),
                (
                    "b".into(),
                    Json::Object(vec![("c".into(), Json::String("x\ty".into()))])
                ),
            ])
        );
        assert_eq!(
            parse("\"\\u00e9\\ud83d\\ude00\"").unwrap(),
            Json::String("é😀".into())
        );
        assert_eq!(parse("7").unwrap(), Json::Int(7));
    }

    #[test]
    fn classifies_numbers_like_rapidjson() {
        assert_eq!(parse("9223372036854775807").unwrap(), Json::Int(i64::MAX));
        assert_eq!(parse("-9223372036854775808").unwrap(), Json::Int(i64::MIN));
        assert_eq!(
            parse("9223372036854775808").unwrap(),
            Json::Uint(9_223_372_036_854_775_808)
        );
        assert_eq!(
            parse("18446744073709551616").unwrap(),
            Json::Double(18_446_744_073_709_551_616.0)
        );
        assert_eq!(
            parse("-9223372036854775809").unwrap(),
            Json::Double(-9_223_372_036_854_775_809.0)
        );
        assert_eq!(parse("1e6").unwrap(), Json::Double(1e6));
        assert_eq!(parse("-0").unwrap(), Json::Int(0));
    }

    #[test]
    fn keeps_duplicate_members_in_order() {
        let v = parse(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(v.member("a"), Some(&Json::Int(1)));
        let Json::Object(m) = v else { panic!() };
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn refuses_what_rapidjson_refuses_with_its_messages() {
        let cases = [
            ("", "The document is empty."),
            ("   ", "The document is empty."),
            ("dog", "Invalid value."),
            ("{17: 3}", "Missing a name for object member."),
            (
                "{\"a\" 1}",
                "Missing a colon after a name of object member.",
            ),
            (
                "{\"a\": 1",
                "Missing a comma or '}' after an object member.",
            ),
            ("[1 2]", "Missing a comma or ']' after an array element."),
            ("[1,]", "Invalid value."),
            ("\"abc", "Missing a closing quotation mark in string."),
            ("\"a\tb\"", "Invalid encoding in string."),
            ("\"\\x\"", "Invalid escape character in string."),
            (
                "\"\\u12g4\"",
                "Incorrect hex digit after \\u escape in string.",
            ),
            ("\"\\ud800\"", "The surrogate pair in string is invalid."),
            ("1.", "Miss fraction part in number."),
            ("1e", "Miss exponent in number."),
            ("1e400", "Number too big to be stored in double."),
            (
                "01",
                "The document root must not be followed by other values.",
            ),
            (
                "{} x",
                "The document root must not be followed by other values.",
            ),
            ("NaN", "Invalid value."),
            ("'a'", "Invalid value."),
        ];
        for (text, msg) in cases {
            let e = parse(text).unwrap_err();
            assert!(
                e.message().starts_with("Parsing JSON failed: ") && e.message().contains(msg),
                "{text:?}: {}",
                e.message()
            );
        }
    }

    #[test]
    fn limits_nesting() {
        let ok = format!("{}{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert!(parse(&ok).is_ok());
        let deep = format!(
            "{}{}",
            "[".repeat(MAX_NESTING + 1),
            "]".repeat(MAX_NESTING + 1)
        );
        assert_eq!(
            parse(&deep).unwrap_err().message(),
            "Max nested level reached: 78"
        );
    }

    #[test]
    fn prints_like_rapidjson_writer() {
        let v = parse(r#"{ "a" : [1, 2.5, "x\"\u0001"], "b": null }"#).unwrap();
        assert_eq!(v.to_string(), r#"{"a":[1,2.5,"x\"\u0001"],"b":null}"#);
        let num = |t: &str| print_number(&parse(t).unwrap()).unwrap();
        assert_eq!(num("1.50"), "1.5");
        assert_eq!(num("12.0"), "12.0");
        assert_eq!(num("1e2"), "100.0");
        assert_eq!(num("1e22"), "1e22");
        assert_eq!(num("1.5e30"), "1.5e30");
        assert_eq!(num("0.001234"), "0.001234");
        assert_eq!(num("1e-7"), "1e-7");
        assert_eq!(num("-0.0"), "-0.0");
        let big = num("123456789012345678901234");
        assert!(
            big.starts_with("1.23456789012345") && big.ends_with("e23"),
            "{big}"
        );
        assert_eq!(num("-17"), "-17");
    }

    #[test]
    fn formats_floats_like_fmt() {
        assert_eq!(format_double(0.1), "0.1");
        assert_eq!(format_double(17.0), "17");
        assert_eq!(format_double(123123.123123), "123123.123123");
        assert_eq!(format_double(1e15), "1000000000000000");
        assert_eq!(format_double(1e16), "1e+16");
        assert_eq!(format_double(1.5e-5), "1.5e-05");
        assert_eq!(format_double(0.0001), "0.0001");
        assert_eq!(format_double(1e100), "1e+100");
        assert_eq!(format_double(-2.5), "-2.5");
        assert_eq!(format_double(-0.0), "-0");
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(123.123), "123.123");
        assert_eq!(format_float(123123.0), "123123");
        assert_eq!(format_float(3.4e38), "3.4e+38");
    }

    #[test]
    fn quotes_strings_like_to_json_string() {
        assert_eq!(quote("abc"), "\"abc\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("\n\t\u{0}\u{1f}"), "\"\\n\\t\\u0000\\u001F\"");
        assert_eq!(quote("é/"), "\"é/\"");
    }
}
