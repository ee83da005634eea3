//! CQL values, their total order, their CQL v4 wire codec and their CQL literal text.
//!
//! A [`Value`] is always interpreted together with the [`CqlType`] of the column, bind
//! variable or element it belongs to: `ascii` and `text` share [`Value::Text`], `bigint` and
//! `counter` share [`Value::Bigint`]. Types whose orderings differ keep separate variants
//! (`uuid` / `timeuuid`, `timestamp` / `bigint`, ...), so that [`Ord`] on two values of the
//! same type is exactly the comparator Scylla uses for that type, without the type at hand.
//! Sets and maps are kept sorted by that order, without duplicates, by their constructors
//! ([`Value::set`], [`Value::map`]) and by [`decode`].
//!
//! [`decode`] reads the bytes of a `[bytes]` value (without the length prefix) strictly, as
//! the CQL v4 specification and Scylla define them; [`Value::encode`] writes them back.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use num_bigint::{BigInt, Sign};
use uuid::Uuid;

use super::CqlType;

/// A non-null CQL value (nulls are `Option<Value>::None` wherever they are allowed).
///
/// Clones are cheap: text, blobs, big integers and every composite value are reference
/// counted. The enum is 24 bytes (blobs are `Arc<[u8]>`, not `Bytes`, to keep it so: a table
/// holds millions of values).
#[derive(Clone, Debug)]
pub enum Value {
    /// A zero-length value of a type that is not `text`, `ascii` or `blob` (CQL allows an
    /// "empty" `int`, `uuid`, ...). It sorts before every other value of its type.
    Empty,
    /// `boolean`
    Boolean(bool),
    /// `tinyint`
    Tinyint(i8),
    /// `smallint`
    Smallint(i16),
    /// `int`
    Int(i32),
    /// `bigint` and `counter`
    Bigint(i64),
    /// `varint`
    Varint(Varint),
    /// `decimal`
    Decimal(Arc<Decimal>),
    /// `float`
    Float(f32),
    /// `double`
    Double(f64),
    /// `text` and `ascii` (the column's type says which; an `ascii` value is ASCII-only).
    Text(Arc<str>),
    /// `blob`
    Blob(Arc<[u8]>),
    /// `date`: days, with the Unix epoch at 2^31.
    Date(u32),
    /// `time`: nanoseconds since midnight.
    Time(i64),
    /// `timestamp`: milliseconds since the Unix epoch.
    Timestamp(i64),
    /// `duration`
    Duration(Duration),
    /// `inet`
    Inet(IpAddr),
    /// `uuid`
    Uuid(Uuid),
    /// `timeuuid` (ordered by time, see [`crate::types::timeuuid::compare`]).
    Timeuuid(Uuid),
    /// `list<...>`: elements in list order.
    List(Arc<[Value]>),
    /// `set<...>`: elements sorted, no duplicates.
    Set(Arc<[Value]>),
    /// `map<...>`: entries sorted by key, keys unique.
    Map(Arc<[(Value, Value)]>),
    /// `tuple<...>`: one entry per component, `None` for a null component.
    Tuple(Arc<[Option<Value>]>),
    /// A user-defined type value: fields by index; missing trailing fields are null.
    Udt(Arc<[Option<Value>]>),
}

/// An arbitrary-precision integer (`varint`), kept as its minimal big-endian two's-complement
/// bytes (never empty: zero is `[0x00]`).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Varint(Arc<[u8]>);

/// A `decimal`: `unscaled × 10^(-scale)`.
#[derive(Clone, Debug)]
pub struct Decimal {
    /// Number of digits after the decimal point (may be negative).
    pub scale: i32,
    /// The unscaled integer.
    pub unscaled: Varint,
}

/// A `duration`: months, days and nanoseconds, all of the same sign.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Duration {
    /// Months.
    pub months: i32,
    /// Days.
    pub days: i32,
    /// Nanoseconds.
    pub nanos: i64,
}

/// A value that does not decode as its CQL type; the message names the type and the problem,
/// in the words Scylla and Cassandra use, and is meant for an `Invalid` CQL error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValueError {
    message: String,
}

impl ValueError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ValueError {
            message: message.into(),
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

// ---------------------------------------------------------------------------------------------
// Varint / Decimal
// ---------------------------------------------------------------------------------------------

impl Varint {
    /// Builds a varint from big-endian two's-complement bytes (any length; leading sign bytes
    /// are stripped, empty means zero).
    pub fn from_signed_bytes_be(bytes: &[u8]) -> Varint {
        Varint(Arc::from(minimal_twos_complement(bytes)))
    }

    /// Builds a varint from a [`BigInt`].
    pub fn from_bigint(n: &BigInt) -> Varint {
        Varint::from_signed_bytes_be(&n.to_signed_bytes_be())
    }

    /// Builds a varint from an `i64`.
    pub fn from_i64(n: i64) -> Varint {
        Varint::from_signed_bytes_be(&n.to_be_bytes())
    }

    /// The minimal big-endian two's-complement bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The value as a [`BigInt`].
    pub fn to_bigint(&self) -> BigInt {
        BigInt::from_signed_bytes_be(&self.0)
    }

    /// The value as an `i64`, if it fits.
    pub fn to_i64(&self) -> Option<i64> {
        if self.0.len() > 8 {
            return None;
        }
        let fill = if self.is_negative() { 0xff } else { 0 };
        let mut buf = [fill; 8];
        let start = 8 - self.0.len();
        buf.get_mut(start..)?.copy_from_slice(&self.0);
        Some(i64::from_be_bytes(buf))
    }

    fn is_negative(&self) -> bool {
        self.0.first().is_some_and(|b| b & 0x80 != 0)
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    fn signum(&self) -> i8 {
        if self.is_negative() {
            -1
        } else if self.is_zero() {
            0
        } else {
            1
        }
    }
}

impl fmt::Debug for Varint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Varint({})", self.to_bigint())
    }
}

impl fmt::Display for Varint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_bigint())
    }
}

/// Numeric order, computed on the two's-complement bytes without allocating.
impl Ord for Varint {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.0, &other.0);
        match (self.is_negative(), other.is_negative()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // Minimal encodings: for the same sign, more bytes means a larger magnitude.
            (false, false) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
            (true, true) => b.len().cmp(&a.len()).then_with(|| a.cmp(b)),
        }
    }
}

impl PartialOrd for Varint {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn minimal_twos_complement(bytes: &[u8]) -> Vec<u8> {
    let mut start = 0;
    while start + 1 < bytes.len() {
        let (b0, b1) = (bytes[start], bytes[start + 1]);
        if (b0 == 0x00 && b1 & 0x80 == 0) || (b0 == 0xff && b1 & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    match bytes.get(start..) {
        Some(rest) if !rest.is_empty() => rest.to_vec(),
        _ => vec![0],
    }
}

impl Decimal {
    /// Builds `unscaled × 10^(-scale)`.
    pub fn new(scale: i32, unscaled: Varint) -> Decimal {
        Decimal { scale, unscaled }
    }

    /// Number of decimal digits of the unscaled value's magnitude (1 for zero).
    fn digit_count(&self) -> i64 {
        let s = self.unscaled.to_bigint().magnitude().to_str_radix(10);
        s.len() as i64
    }

    /// The numeric comparison of two decimals (`1.0` equals `1.00`), never scaling by more
    /// digits than the operands have.
    pub fn numeric_cmp(&self, other: &Decimal) -> Ordering {
        let (sa, sb) = (self.unscaled.signum(), other.unscaled.signum());
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        // Same non-zero sign: compare the adjusted exponents (position of the leading digit).
        let ea = self.digit_count() - 1 - i64::from(self.scale);
        let eb = other.digit_count() - 1 - i64::from(other.scale);
        if ea != eb {
            let mag = ea.cmp(&eb);
            return if sa > 0 { mag } else { mag.reverse() };
        }
        // Equal adjusted exponents: the scale difference equals the digit-count difference,
        // so rescaling costs at most as many digits as the operands already have.
        let (mut a, mut b) = (self.unscaled.to_bigint(), other.unscaled.to_bigint());
        let diff = i64::from(self.scale) - i64::from(other.scale);
        let ten = BigInt::from(10);
        if diff > 0 {
            b *= ten.pow(diff.unsigned_abs() as u32);
        } else if diff < 0 {
            a *= ten.pow(diff.unsigned_abs() as u32);
        }
        a.cmp(&b)
    }
}

/// Numeric order: `1.0` equals `1.00`, as ScyllaDB's `big_decimal::operator<=>`
/// (utils/big_decimal.cc), which the decimal type's comparator uses: two clustering keys,
/// set elements or map keys that differ only in scale are the same one (the value keeps the
/// scale it was written with).
impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        self.numeric_cmp(other)
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

/// Hashes the value without trailing zeros of the unscaled value, so that equal decimals
/// (`1.0`, `1.00`) hash alike.
impl Hash for Decimal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut unscaled = self.unscaled.to_bigint();
        let mut scale = i64::from(self.scale);
        if unscaled.sign() == Sign::NoSign {
            0u8.hash(state);
            return;
        }
        let ten = BigInt::from(10);
        while (&unscaled % &ten).sign() == Sign::NoSign {
            unscaled /= &ten;
            scale -= 1;
        }
        1u8.hash(state);
        scale.hash(state);
        unscaled.to_signed_bytes_be().hash(state);
    }
}

impl fmt::Display for Decimal {
    /// Renders like Java's `BigDecimal.toString()` (`1.50`, `1.5E+3`, `1E-7`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.unscaled.to_bigint();
        let negative = n.sign() == Sign::Minus;
        let digits = n.magnitude().to_str_radix(10);
        let scale = i64::from(self.scale);
        let adjusted = digits.len() as i64 - 1 - scale;
        if negative {
            f.write_char('-')?;
        }
        if scale >= 0 && adjusted >= -6 {
            let len = digits.len() as i64;
            if scale == 0 {
                f.write_str(&digits)
            } else if len > scale {
                let split = (len - scale) as usize;
                let (int, frac) = digits.split_at(split);
                write!(f, "{int}.{frac}")
            } else {
                f.write_str("0.")?;
                for _ in 0..(scale - len) {
                    f.write_char('0')?;
                }
                f.write_str(&digits)
            }
        } else {
            let (first, rest) = digits.split_at(1);
            f.write_str(first)?;
            if !rest.is_empty() {
                write!(f, ".{rest}")?;
            }
            if adjusted >= 0 {
                write!(f, "E+{adjusted}")
            } else {
                write!(f, "E{adjusted}")
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Constructors and accessors
// ---------------------------------------------------------------------------------------------

impl Value {
    /// A `text` (or `ascii`) value.
    pub fn text(s: &str) -> Value {
        Value::Text(Arc::from(s))
    }

    /// A `blob` value.
    pub fn blob(b: impl AsRef<[u8]>) -> Value {
        Value::Blob(Arc::from(b.as_ref()))
    }

    /// A `uuid` value.
    pub fn uuid(u: Uuid) -> Value {
        Value::Uuid(u)
    }

    /// A `timeuuid` value.
    pub fn timeuuid(u: Uuid) -> Value {
        Value::Timeuuid(u)
    }

    /// A `varint` value.
    pub fn varint(n: &BigInt) -> Value {
        Value::Varint(Varint::from_bigint(n))
    }

    /// A `decimal` value `unscaled × 10^(-scale)`.
    pub fn decimal(unscaled: &BigInt, scale: i32) -> Value {
        Value::Decimal(Arc::new(Decimal::new(scale, Varint::from_bigint(unscaled))))
    }

    /// A `list` value.
    pub fn list(elements: Vec<Value>) -> Value {
        Value::List(Arc::from(elements))
    }

    /// A `set` value: the elements are sorted and duplicates removed.
    pub fn set(mut elements: Vec<Value>) -> Value {
        elements.sort();
        elements.dedup();
        Value::Set(Arc::from(elements))
    }

    /// A `map` value: entries are sorted by key; of two entries with equal keys the first
    /// one given is kept (as Scylla does when it reads a serialized map).
    pub fn map(mut entries: Vec<(Value, Value)>) -> Value {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        Value::Map(Arc::from(entries))
    }

    /// A `tuple` value.
    pub fn tuple(fields: Vec<Option<Value>>) -> Value {
        Value::Tuple(Arc::from(fields))
    }

    /// A user-defined type value, fields by index.
    pub fn udt(fields: Vec<Option<Value>>) -> Value {
        Value::Udt(Arc::from(fields))
    }

    /// Whether this is [`Value::Empty`].
    pub fn is_empty_value(&self) -> bool {
        matches!(self, Value::Empty)
    }

    /// Any integer type (`tinyint` .. `bigint`, `counter`, `varint` that fits) as an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Tinyint(v) => Some(i64::from(*v)),
            Value::Smallint(v) => Some(i64::from(*v)),
            Value::Int(v) => Some(i64::from(*v)),
            Value::Bigint(v) => Some(*v),
            Value::Varint(v) => v.to_i64(),
            _ => None,
        }
    }

    /// An `int` value.
    pub fn as_int(&self) -> Option<i32> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// A `bigint` / `counter` value.
    pub fn as_bigint(&self) -> Option<i64> {
        match self {
            Value::Bigint(v) => Some(*v),
            _ => None,
        }
    }

    /// A `smallint` value.
    pub fn as_smallint(&self) -> Option<i16> {
        match self {
            Value::Smallint(v) => Some(*v),
            _ => None,
        }
    }

    /// A `tinyint` value.
    pub fn as_tinyint(&self) -> Option<i8> {
        match self {
            Value::Tinyint(v) => Some(*v),
            _ => None,
        }
    }

    /// A `timestamp` value (ms since the epoch).
    pub fn as_timestamp(&self) -> Option<i64> {
        match self {
            Value::Timestamp(v) => Some(*v),
            _ => None,
        }
    }

    /// A `float` or `double` value as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(v) => Some(f64::from(*v)),
            Value::Double(v) => Some(*v),
            _ => None,
        }
    }

    /// A `boolean` value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Boolean(v) => Some(*v),
            _ => None,
        }
    }

    /// A `text` / `ascii` value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// A `blob` value.
    pub fn as_blob(&self) -> Option<&[u8]> {
        match self {
            Value::Blob(b) => Some(b),
            _ => None,
        }
    }

    /// A `uuid` or `timeuuid` value.
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Value::Uuid(u) | Value::Timeuuid(u) => Some(*u),
            _ => None,
        }
    }

    /// The elements of a `list` or `set`.
    pub fn as_elements(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Set(v) => Some(v),
            _ => None,
        }
    }

    /// The entries of a `map`.
    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(v) => Some(v),
            _ => None,
        }
    }

    /// The fields of a tuple or a UDT.
    pub fn as_fields(&self) -> Option<&[Option<Value>]> {
        match self {
            Value::Tuple(v) | Value::Udt(v) => Some(v),
            _ => None,
        }
    }

    /// Whether this value can be a value of `typ` (shape check only; `Empty` fits every
    /// type but `text`/`ascii`/`blob`, whose zero-length values are ordinary values).
    pub fn fits(&self, typ: &CqlType) -> bool {
        use CqlType as T;
        match (self, typ) {
            (Value::Empty, T::Text | T::Ascii | T::Blob) => false,
            (Value::Empty, _) => true,
            (Value::Boolean(_), T::Boolean)
            | (Value::Tinyint(_), T::Tinyint)
            | (Value::Smallint(_), T::Smallint)
            | (Value::Int(_), T::Int)
            | (Value::Bigint(_), T::Bigint | T::Counter)
            | (Value::Varint(_), T::Varint)
            | (Value::Decimal(_), T::Decimal)
            | (Value::Float(_), T::Float)
            | (Value::Double(_), T::Double)
            | (Value::Text(_), T::Text)
            | (Value::Blob(_), T::Blob)
            | (Value::Date(_), T::Date)
            | (Value::Time(_), T::Time)
            | (Value::Timestamp(_), T::Timestamp)
            | (Value::Duration(_), T::Duration)
            | (Value::Inet(_), T::Inet)
            | (Value::Uuid(_), T::Uuid)
            | (Value::Timeuuid(_), T::Timeuuid) => true,
            (Value::Text(s), T::Ascii) => s.is_ascii(),
            (Value::List(v), T::List { elem, .. }) | (Value::Set(v), T::Set { elem, .. }) => {
                v.iter().all(|e| e.fits(elem))
            }
            (Value::Map(v), T::Map { key, value, .. }) => {
                v.iter().all(|(k, x)| k.fits(key) && x.fits(value))
            }
            (Value::Tuple(v), T::Tuple(types)) => {
                v.len() <= types.len()
                    && v.iter()
                        .zip(types)
                        .all(|(f, t)| f.as_ref().is_none_or(|f| f.fits(t)))
            }
            (Value::Udt(v), T::Udt { def, .. }) => {
                v.len() <= def.fields.len()
                    && v.iter()
                        .zip(&def.fields)
                        .all(|(f, (_, t))| f.as_ref().is_none_or(|f| f.fits(t)))
            }
            _ => false,
        }
    }

    /// Rank of the variant, used to order values of different variants (which only happens
    /// when values of different types are compared, or with [`Value::Empty`], ranked first).
    fn rank(&self) -> u8 {
        match self {
            Value::Empty => 0,
            Value::Boolean(_) => 1,
            Value::Tinyint(_) => 2,
            Value::Smallint(_) => 3,
            Value::Int(_) => 4,
            Value::Bigint(_) => 5,
            Value::Varint(_) => 6,
            Value::Decimal(_) => 7,
            Value::Float(_) => 8,
            Value::Double(_) => 9,
            Value::Text(_) => 10,
            Value::Blob(_) => 11,
            Value::Date(_) => 12,
            Value::Time(_) => 13,
            Value::Timestamp(_) => 14,
            Value::Duration(_) => 15,
            Value::Inet(_) => 16,
            Value::Uuid(_) => 17,
            Value::Timeuuid(_) => 18,
            Value::List(_) => 19,
            Value::Set(_) => 20,
            Value::Map(_) => 21,
            Value::Tuple(_) => 22,
            Value::Udt(_) => 23,
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Boolean(v)
    }
}

impl From<i8> for Value {
    fn from(v: i8) -> Value {
        Value::Tinyint(v)
    }
}

impl From<i16> for Value {
    fn from(v: i16) -> Value {
        Value::Smallint(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Bigint(v)
    }
}

impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Double(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::text(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(Arc::from(v))
    }
}

impl From<Bytes> for Value {
    fn from(v: Bytes) -> Value {
        Value::Blob(Arc::from(&v[..]))
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Blob(Arc::from(v))
    }
}

impl From<IpAddr> for Value {
    fn from(v: IpAddr) -> Value {
        Value::Inet(v)
    }
}

impl From<Duration> for Value {
    fn from(v: Duration) -> Value {
        Value::Duration(v)
    }
}

// ---------------------------------------------------------------------------------------------
// Ordering, equality, hashing
// ---------------------------------------------------------------------------------------------

/// Java's `Double.compare`: numeric, `-0.0 < 0.0`, every NaN equal to every NaN and greater
/// than everything else (Scylla's comparator for `float` and `double`).
fn java_cmp_f64(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.total_cmp(&b),
    }
}

fn inet_octets(a: &IpAddr) -> ([u8; 16], usize) {
    let mut buf = [0u8; 16];
    match a {
        IpAddr::V4(v4) => {
            buf[..4].copy_from_slice(&v4.octets());
            (buf, 4)
        }
        IpAddr::V6(v6) => (v6.octets(), 16),
    }
}

/// Scylla's `uuid` comparator: version nibble first; two version-1 UUIDs by their time, then
/// their low 8 bytes unsigned; anything else by its bytes, unsigned.
pub fn compare_uuid(a: &Uuid, b: &Uuid) -> Ordering {
    let (va, vb) = (a.as_bytes()[6] >> 4, b.as_bytes()[6] >> 4);
    if va != vb {
        return va.cmp(&vb);
    }
    if va == 1 {
        let (ta, tb) = (
            super::timeuuid::raw_timestamp(a),
            super::timeuuid::raw_timestamp(b),
        );
        return ta
            .cmp(&tb)
            .then_with(|| a.as_bytes()[8..].cmp(&b.as_bytes()[8..]));
    }
    a.as_bytes().cmp(b.as_bytes())
}

/// Compares tuple / UDT fields: component by component, null before any value, and trailing
/// nulls ignored (a value written before `ALTER TYPE ... ADD` equals the same value with the
/// new fields null, as in Scylla).
fn cmp_fields(a: &[Option<Value>], b: &[Option<Value>]) -> Ordering {
    let n = a.len().max(b.len());
    for i in 0..n {
        let x = a.get(i).and_then(Option::as_ref);
        let y = b.get(i).and_then(Option::as_ref);
        let c = x.cmp(&y);
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        use Value as V;
        match (self, other) {
            (V::Empty, V::Empty) => Ordering::Equal,
            (V::Boolean(a), V::Boolean(b)) => a.cmp(b),
            (V::Tinyint(a), V::Tinyint(b)) => a.cmp(b),
            (V::Smallint(a), V::Smallint(b)) => a.cmp(b),
            (V::Int(a), V::Int(b)) => a.cmp(b),
            (V::Bigint(a), V::Bigint(b)) => a.cmp(b),
            (V::Varint(a), V::Varint(b)) => a.cmp(b),
            (V::Decimal(a), V::Decimal(b)) => a.cmp(b),
            (V::Float(a), V::Float(b)) => java_cmp_f64(f64::from(*a), f64::from(*b)),
            (V::Double(a), V::Double(b)) => java_cmp_f64(*a, *b),
            (V::Text(a), V::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (V::Blob(a), V::Blob(b)) => a.cmp(b),
            (V::Date(a), V::Date(b)) => a.cmp(b),
            (V::Time(a), V::Time(b)) => a.cmp(b),
            (V::Timestamp(a), V::Timestamp(b)) => a.cmp(b),
            (V::Duration(a), V::Duration(b)) => a.cmp(b),
            (V::Inet(a), V::Inet(b)) => {
                let ((ba, la), (bb, lb)) = (inet_octets(a), inet_octets(b));
                ba[..la].cmp(&bb[..lb])
            }
            (V::Uuid(a), V::Uuid(b)) => compare_uuid(a, b),
            (V::Timeuuid(a), V::Timeuuid(b)) => super::timeuuid::compare(a, b),
            (V::List(a), V::List(b)) | (V::Set(a), V::Set(b)) => a.iter().cmp(b.iter()),
            (V::Map(a), V::Map(b)) => a.iter().cmp(b.iter()),
            (V::Tuple(a), V::Tuple(b)) | (V::Udt(a), V::Udt(b)) => cmp_fields(a, b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.rank());
        match self {
            Value::Empty => {}
            Value::Boolean(v) => v.hash(state),
            Value::Tinyint(v) => v.hash(state),
            Value::Smallint(v) => v.hash(state),
            Value::Int(v) => v.hash(state),
            Value::Bigint(v) => v.hash(state),
            Value::Varint(v) => v.hash(state),
            Value::Decimal(v) => v.hash(state),
            Value::Float(v) => {
                let bits = if v.is_nan() { u32::MAX } else { v.to_bits() };
                bits.hash(state)
            }
            Value::Double(v) => {
                let bits = if v.is_nan() { u64::MAX } else { v.to_bits() };
                bits.hash(state)
            }
            Value::Text(v) => v.hash(state),
            Value::Blob(v) => v.hash(state),
            Value::Date(v) => v.hash(state),
            Value::Time(v) | Value::Timestamp(v) => v.hash(state),
            Value::Duration(v) => v.hash(state),
            Value::Inet(v) => v.hash(state),
            Value::Uuid(v) => v.hash(state),
            // The timeuuid comparator ignores the version nibble.
            Value::Timeuuid(v) => {
                super::timeuuid::raw_timestamp(v).hash(state);
                v.as_u64_pair().1.hash(state);
            }
            Value::List(v) | Value::Set(v) => v.hash(state),
            Value::Map(v) => v.hash(state),
            Value::Tuple(v) | Value::Udt(v) => {
                // Trailing nulls do not count (see `cmp_fields`).
                let end = v.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
                for f in v.iter().take(end) {
                    f.hash(state);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Decodes the bytes of one `[bytes]` value (without its length prefix) as a value of `typ`.
///
/// Strict: fixed-size types need their exact size (or zero bytes, giving [`Value::Empty`],
/// except for `counter` and collections, which are never empty),
/// text must be UTF-8 and ascii ASCII, inet 4 or 16 bytes, timeuuids version 1, durations
/// valid vints of one sign; collections have no null elements; a tuple or UDT may have fewer
/// fields than its type (the rest are null) but not more; nothing may follow the value.
pub fn decode(typ: &CqlType, bytes: &[u8]) -> Result<Value, ValueError> {
    if bytes.is_empty() && may_be_empty(typ) {
        return Ok(Value::Empty);
    }
    match typ {
        CqlType::Ascii => decode_ascii(bytes),
        CqlType::Text => decode_text(bytes),
        CqlType::Blob => Ok(Value::Blob(Arc::from(bytes))),
        CqlType::Boolean => match bytes {
            [b] => Ok(Value::Boolean(*b != 0)),
            _ => Err(size_error("1 or 0 byte value for a boolean", bytes)),
        },
        CqlType::Tinyint => {
            fixed(bytes, "1 byte for a tinyint").map(|b| Value::Tinyint(i8::from_be_bytes(b)))
        }
        CqlType::Smallint => {
            fixed(bytes, "2 bytes for a smallint").map(|b| Value::Smallint(i16::from_be_bytes(b)))
        }
        CqlType::Int => fixed(bytes, "4 or 0 byte int").map(|b| Value::Int(i32::from_be_bytes(b))),
        CqlType::Bigint => {
            fixed(bytes, "8 or 0 byte long").map(|b| Value::Bigint(i64::from_be_bytes(b)))
        }
        CqlType::Counter => fixed(bytes, "8 or 0 byte long for a counter")
            .map(|b| Value::Bigint(i64::from_be_bytes(b))),
        CqlType::Float => fixed(bytes, "4 or 0 byte value for a float")
            .map(|b| Value::Float(f32::from_be_bytes(b))),
        CqlType::Double => fixed(bytes, "8 or 0 byte value for a double")
            .map(|b| Value::Double(f64::from_be_bytes(b))),
        CqlType::Timestamp => fixed(bytes, "8 or 0 byte long for date")
            .map(|b| Value::Timestamp(i64::from_be_bytes(b))),
        CqlType::Date => {
            fixed(bytes, "4 byte long for date").map(|b| Value::Date(u32::from_be_bytes(b)))
        }
        CqlType::Time => decode_time(bytes),
        CqlType::Uuid => {
            fixed(bytes, "16 or 0 bytes for a UUID").map(|b| Value::Uuid(Uuid::from_bytes(b)))
        }
        CqlType::Timeuuid => decode_timeuuid(bytes),
        CqlType::Inet => decode_inet(bytes),
        CqlType::Varint => Ok(Value::Varint(Varint::from_signed_bytes_be(bytes))),
        CqlType::Decimal => decode_decimal(bytes),
        CqlType::Duration => decode_duration(bytes).map(Value::Duration),
        CqlType::List { elem, .. } => {
            decode_elements(elem, bytes, "list").map(|v| Value::List(Arc::from(v)))
        }
        CqlType::Set { elem, .. } => decode_elements(elem, bytes, "set").map(Value::set),
        CqlType::Map { key, value, .. } => decode_map(key, value, bytes),
        CqlType::Tuple(types) => {
            let fields = decode_fields(types.iter(), bytes, "tuple")?;
            Ok(Value::Tuple(Arc::from(fields)))
        }
        CqlType::Udt { def, .. } => {
            let what = format!("UDT {}", def.name);
            let fields = decode_fields(def.fields.iter().map(|(_, t)| t), bytes, &what)?;
            Ok(Value::Udt(Arc::from(fields)))
        }
    }
}

/// Whether zero bytes are a value ([`Value::Empty`]) of `typ`: not for the types whose
/// values may be zero bytes long (text, blob), counters and collections.
#[inline]
fn may_be_empty(typ: &CqlType) -> bool {
    !matches!(
        typ,
        CqlType::Text
            | CqlType::Ascii
            | CqlType::Blob
            | CqlType::Counter
            | CqlType::List { .. }
            | CqlType::Set { .. }
            | CqlType::Map { .. }
    )
}

/// An `ascii` value: ASCII bytes only.
#[inline]
fn decode_ascii(bytes: &[u8]) -> Result<Value, ValueError> {
    if let Some(b) = bytes.iter().find(|b| !b.is_ascii()) {
        return Err(ValueError::new(format!("Invalid byte for ascii: {b}")));
    }
    // ASCII is UTF-8.
    let s = std::str::from_utf8(bytes).map_err(|_| ValueError::new("Invalid ascii value"))?;
    Ok(Value::text(s))
}

/// A `text` value: UTF-8.
#[inline]
fn decode_text(bytes: &[u8]) -> Result<Value, ValueError> {
    let s = std::str::from_utf8(bytes)
        .map_err(|_| ValueError::new("String didn't validate: invalid UTF-8 for text"))?;
    Ok(Value::text(s))
}

/// A `time` value: nanoseconds within a day.
#[inline]
fn decode_time(bytes: &[u8]) -> Result<Value, ValueError> {
    let t = i64::from_be_bytes(fixed(bytes, "8 byte long for Time")?);
    if !(0..NANOS_PER_DAY).contains(&t) {
        return Err(ValueError::new(format!(
            "Invalid time value {t}: must be between 0 and 86399999999999 nanoseconds"
        )));
    }
    Ok(Value::Time(t))
}

/// A `timeuuid` value: a version 1 UUID.
#[inline]
fn decode_timeuuid(bytes: &[u8]) -> Result<Value, ValueError> {
    let u = Uuid::from_bytes(fixed(bytes, "16 or 0 bytes for a timeuuid")?);
    let version = u.as_bytes()[6] >> 4;
    if version != 1 {
        return Err(ValueError::new(format!(
            "Unsupported UUID version ({version}) for a timeuuid"
        )));
    }
    Ok(Value::Timeuuid(u))
}

/// An `inet` value: an IPv4 (4 bytes) or IPv6 (16 bytes) address.
#[inline]
fn decode_inet(bytes: &[u8]) -> Result<Value, ValueError> {
    match bytes.len() {
        4 => {
            let o: [u8; 4] = fixed(bytes, "4 or 16 bytes for an inet address")?;
            Ok(Value::Inet(IpAddr::V4(Ipv4Addr::from(o))))
        }
        16 => {
            let o: [u8; 16] = fixed(bytes, "4 or 16 bytes for an inet address")?;
            Ok(Value::Inet(IpAddr::V6(Ipv6Addr::from(o))))
        }
        _ => Err(size_error("4 or 16 bytes for an inet address", bytes)),
    }
}

/// A `decimal` value: a 4-byte scale, then the unscaled value (at least one byte).
#[inline]
fn decode_decimal(bytes: &[u8]) -> Result<Value, ValueError> {
    let (scale, rest) = match bytes.split_first_chunk::<4>() {
        Some((s, rest)) => (i32::from_be_bytes(*s), rest),
        None => return Err(size_error("0 or at least 4 bytes for a decimal", bytes)),
    };
    if rest.is_empty() {
        return Err(ValueError::new(
            "Invalid decimal: no bytes for the unscaled value",
        ));
    }
    Ok(Value::Decimal(Arc::new(Decimal::new(
        scale,
        Varint::from_signed_bytes_be(rest),
    ))))
}

/// The elements of a list or set (`what`), each of type `elem`.
#[inline]
fn decode_elements(elem: &CqlType, bytes: &[u8], what: &str) -> Result<Vec<Value>, ValueError> {
    let mut r = Reader::new(bytes, what);
    let n = r.count()?;
    let mut out = Vec::with_capacity(n.min(bytes.len() / 4));
    for _ in 0..n {
        out.push(decode(elem, r.element()?)?);
    }
    r.finish()?;
    Ok(out)
}

/// A map: its entries, keys of type `key` and values of type `value`.
#[inline]
fn decode_map(key: &CqlType, value: &CqlType, bytes: &[u8]) -> Result<Value, ValueError> {
    let mut r = Reader::new(bytes, "map");
    let n = r.count()?;
    let mut out = Vec::with_capacity(n.min(bytes.len() / 8));
    for _ in 0..n {
        let k = decode(key, r.element()?)?;
        let v = decode(value, r.element()?)?;
        out.push((k, v));
    }
    r.finish()?;
    Ok(Value::map(out))
}

/// Nanoseconds in a day: the exclusive upper bound of a `time` value.
pub const NANOS_PER_DAY: i64 = 86_400_000_000_000;

fn size_error(expected: &str, bytes: &[u8]) -> ValueError {
    ValueError::new(format!("Expected {expected} ({})", bytes.len()))
}

fn fixed<const N: usize>(bytes: &[u8], expected: &str) -> Result<[u8; N], ValueError> {
    <[u8; N]>::try_from(bytes).map_err(|_| size_error(expected, bytes))
}

/// Reads the elements of a serialized collection.
struct Reader<'a> {
    bytes: &'a [u8],
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], what: &'a str) -> Self {
        Reader { bytes, what }
    }

    fn int(&mut self) -> Option<i32> {
        let (head, rest) = self.bytes.split_first_chunk::<4>()?;
        self.bytes = rest;
        Some(i32::from_be_bytes(*head))
    }

    fn count(&mut self) -> Result<usize, ValueError> {
        let n = self
            .int()
            .ok_or_else(|| ValueError::new(format!("Not enough bytes to read a {}", self.what)))?;
        usize::try_from(n).map_err(|_| {
            ValueError::new(format!(
                "Invalid negative element count {n} in a {}",
                self.what
            ))
        })
    }

    /// One `[int] len + bytes` element; `None` for a null (length < 0).
    fn optional(&mut self) -> Result<Option<&'a [u8]>, ValueError> {
        let len = self
            .int()
            .ok_or_else(|| ValueError::new(format!("Not enough bytes to read a {}", self.what)))?;
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        if len > self.bytes.len() {
            return Err(ValueError::new(format!(
                "Not enough bytes to read a {}: element of {len} bytes, {} left",
                self.what,
                self.bytes.len()
            )));
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(Some(head))
    }

    fn element(&mut self) -> Result<&'a [u8], ValueError> {
        self.optional()?
            .ok_or_else(|| ValueError::new(format!("null is not supported inside {}s", self.what)))
    }

    fn finish(&self) -> Result<(), ValueError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(ValueError::new(format!(
                "Unexpected extraneous bytes after {} value ({} bytes)",
                self.what,
                self.bytes.len()
            )))
        }
    }
}

fn decode_fields<'t>(
    types: impl ExactSizeIterator<Item = &'t CqlType>,
    bytes: &[u8],
    what: &str,
) -> Result<Vec<Option<Value>>, ValueError> {
    let count = types.len();
    let mut r = Reader::new(bytes, what);
    let mut out = Vec::with_capacity(count);
    for t in types {
        if r.bytes.is_empty() {
            out.push(None);
            continue;
        }
        out.push(match r.optional()? {
            Some(b) => Some(decode(t, b)?),
            None => None,
        });
    }
    if !r.bytes.is_empty() {
        return Err(ValueError::new(format!(
            "Invalid {what} value: more fields than the {count} of its type"
        )));
    }
    Ok(out)
}

fn read_unsigned_vint(bytes: &mut &[u8]) -> Option<u64> {
    let (&first, rest) = bytes.split_first()?;
    let extra = first.leading_ones() as usize;
    if rest.len() < extra {
        return None;
    }
    let (tail, remaining) = rest.split_at(extra);
    let mut v = if extra >= 8 {
        0
    } else {
        u64::from(first & (0xffu8 >> extra))
    };
    for &b in tail {
        v = (v << 8) | u64::from(b);
    }
    *bytes = remaining;
    Some(v)
}

fn read_vint(bytes: &mut &[u8]) -> Option<i64> {
    let v = read_unsigned_vint(bytes)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

fn write_unsigned_vint(v: u64, out: &mut BytesMut) {
    let size = ((639 - 9 * (v | 1).leading_zeros()) >> 6) as usize;
    if size <= 1 {
        out.put_u8(v as u8);
        return;
    }
    if size == 9 {
        out.put_u8(0xff);
        out.put_u64(v);
        return;
    }
    let extra = size - 1;
    let mask = !(0xffu64 >> extra) << (8 * extra);
    let encoded = v | mask;
    out.put_slice(&encoded.to_be_bytes()[8 - size..]);
}

fn write_vint(v: i64, out: &mut BytesMut) {
    write_unsigned_vint(((v >> 63) ^ (v << 1)) as u64, out);
}

fn decode_duration(bytes: &[u8]) -> Result<Duration, ValueError> {
    let mut r = bytes;
    let bad = || ValueError::new("Invalid duration: truncated vint");
    let months = read_vint(&mut r).ok_or_else(bad)?;
    let days = read_vint(&mut r).ok_or_else(bad)?;
    let nanos = read_vint(&mut r).ok_or_else(bad)?;
    if !r.is_empty() {
        return Err(ValueError::new(format!(
            "Invalid duration: {} extraneous bytes",
            r.len()
        )));
    }
    let months = i32::try_from(months).map_err(|_| {
        ValueError::new(format!(
            "The duration months ({months}) must be a 32 bit integer"
        ))
    })?;
    let days = i32::try_from(days).map_err(|_| {
        ValueError::new(format!(
            "The duration days ({days}) must be a 32 bit integer"
        ))
    })?;
    let all_le = months <= 0 && days <= 0 && nanos <= 0;
    let all_ge = months >= 0 && days >= 0 && nanos >= 0;
    if !all_le && !all_ge {
        return Err(ValueError::new(format!(
            "The duration months, days, and nanoseconds must be all of the same sign ({months}, {days}, {nanos})"
        )));
    }
    Ok(Duration {
        months,
        days,
        nanos,
    })
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

fn put_len(out: &mut BytesMut, len: usize) {
    // Values never exceed a frame (256 MiB), so the length always fits.
    out.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
}

impl Value {
    /// Calls `f` with the bytes of a value whose length is known up front, in two parts
    /// (the second empty but for decimals: scale, then unscaled value); `None` for
    /// durations (variable-length integers), collections, tuples and UDTs, whose length is
    /// only known once encoded. The one table of the scalar types' bytes, for
    /// [`Value::encode`] and [`Value::encode_sized`].
    #[inline(always)]
    fn with_scalar_bytes<R>(&self, f: impl FnOnce(&[u8], &[u8]) -> R) -> Option<R> {
        Some(match self {
            Value::Empty => f(&[], &[]),
            Value::Boolean(v) => f(&[u8::from(*v)], &[]),
            Value::Tinyint(v) => f(&v.to_be_bytes(), &[]),
            Value::Smallint(v) => f(&v.to_be_bytes(), &[]),
            Value::Int(v) => f(&v.to_be_bytes(), &[]),
            Value::Bigint(v) | Value::Time(v) | Value::Timestamp(v) => f(&v.to_be_bytes(), &[]),
            Value::Varint(v) => f(v.as_bytes(), &[]),
            Value::Decimal(d) => f(&d.scale.to_be_bytes(), d.unscaled.as_bytes()),
            Value::Float(v) => f(&v.to_be_bytes(), &[]),
            Value::Double(v) => f(&v.to_be_bytes(), &[]),
            Value::Text(s) => f(s.as_bytes(), &[]),
            Value::Blob(b) => f(b, &[]),
            Value::Date(v) => f(&v.to_be_bytes(), &[]),
            Value::Inet(IpAddr::V4(a)) => f(&a.octets(), &[]),
            Value::Inet(IpAddr::V6(a)) => f(&a.octets(), &[]),
            Value::Uuid(u) | Value::Timeuuid(u) => f(u.as_bytes(), &[]),
            Value::Duration(_)
            | Value::List(_)
            | Value::Set(_)
            | Value::Map(_)
            | Value::Tuple(_)
            | Value::Udt(_) => return None,
        })
    }

    /// Writes this value as a complete `[bytes]` (its length, then [`Value::encode`]'s bytes)
    /// in one step when its length is known up front, and returns `true`; writes nothing and
    /// returns `false` for durations (variable-length integers), collections, tuples and
    /// UDTs, whose length is only known once encoded.
    #[inline]
    pub fn encode_sized(&self, out: &mut BytesMut) -> bool {
        self.with_scalar_bytes(|head, tail| {
            put_len(out, head.len() + tail.len());
            out.extend_from_slice(head);
            out.extend_from_slice(tail);
        })
        .is_some()
    }

    /// Writes the bytes of this value as a `[bytes]` body (without the length prefix).
    pub fn encode(&self, out: &mut BytesMut) {
        match self {
            Value::Empty
            | Value::Boolean(_)
            | Value::Tinyint(_)
            | Value::Smallint(_)
            | Value::Int(_)
            | Value::Bigint(_)
            | Value::Time(_)
            | Value::Timestamp(_)
            | Value::Varint(_)
            | Value::Decimal(_)
            | Value::Float(_)
            | Value::Double(_)
            | Value::Text(_)
            | Value::Blob(_)
            | Value::Date(_)
            | Value::Inet(_)
            | Value::Uuid(_)
            | Value::Timeuuid(_) => {
                self.with_scalar_bytes(|head, tail| {
                    out.extend_from_slice(head);
                    out.extend_from_slice(tail);
                });
            }
            Value::Duration(d) => {
                write_vint(i64::from(d.months), out);
                write_vint(i64::from(d.days), out);
                write_vint(d.nanos, out);
            }
            Value::List(v) | Value::Set(v) => {
                put_len(out, v.len());
                for e in v.iter() {
                    e.encode_with_len(out);
                }
            }
            Value::Map(v) => {
                put_len(out, v.len());
                for (k, x) in v.iter() {
                    k.encode_with_len(out);
                    x.encode_with_len(out);
                }
            }
            Value::Tuple(v) | Value::Udt(v) => {
                for f in v.iter() {
                    encode_option(f.as_ref(), out);
                }
            }
        }
    }

    /// Writes this value as a complete `[bytes]`: `[int] length` then the bytes.
    pub fn encode_with_len(&self, out: &mut BytesMut) {
        let at = out.len();
        out.put_i32(0);
        self.encode(out);
        let len = out.len() - at - 4;
        let len = i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes();
        if let Some(slot) = out.get_mut(at..at + 4) {
            slot.copy_from_slice(&len);
        }
    }

    /// The encoded bytes of this value (without length prefix).
    pub fn to_bytes(&self) -> Bytes {
        if let Value::Blob(b) = self {
            return Bytes::copy_from_slice(b);
        }
        let mut out = BytesMut::new();
        self.encode(&mut out);
        out.freeze()
    }
}

/// Writes an optional value as `[bytes]`: a null is the length `-1`.
pub fn encode_option(v: Option<&Value>, out: &mut BytesMut) {
    match v {
        Some(v) => v.encode_with_len(out),
        None => out.put_i32(-1),
    }
}

// ---------------------------------------------------------------------------------------------
// CQL literals
// ---------------------------------------------------------------------------------------------

const UNIX_EPOCH_DATE: i64 = 1 << 31;

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
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

fn quote_string(s: &str, out: &mut String) {
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
}

fn write_f64_literal(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        let _ = write!(out, "{v:?}");
    }
}

impl Value {
    /// Renders the value as CQL literal text (`'it''s'`, `0xcafe`, `[1, 2]`, `{'a': 1}`,
    /// `'2024-01-02'`, ...), for error messages and `DESCRIBE`. UDT values are rendered as
    /// tuple literals here, as field names need the type: see [`Value::cql_literal_typed`].
    pub fn cql_literal(&self) -> String {
        let mut out = String::new();
        self.write_literal(None, &mut out);
        out
    }

    /// Like [`Value::cql_literal`], with the type at hand: UDTs render as `{name: value}`.
    pub fn cql_literal_typed(&self, typ: &CqlType) -> String {
        let mut out = String::new();
        self.write_literal(Some(typ), &mut out);
        out
    }

    fn write_literal(&self, typ: Option<&CqlType>, out: &mut String) {
        match self {
            Value::Empty => out.push_str("''"),
            Value::Boolean(v) => out.push_str(if *v { "true" } else { "false" }),
            Value::Tinyint(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Smallint(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Int(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Bigint(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Varint(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Decimal(v) => {
                let _ = write!(out, "{v}");
            }
            Value::Float(v) => write_f64_literal(f64::from(*v), out),
            Value::Double(v) => write_f64_literal(*v, out),
            Value::Text(s) => quote_string(s, out),
            Value::Blob(b) => {
                out.push_str("0x");
                for byte in b.iter() {
                    let _ = write!(out, "{byte:02x}");
                }
            }
            Value::Date(d) => write_date_literal(*d, out),
            Value::Time(t) => write_time_literal(*t, out),
            Value::Timestamp(ms) => write_timestamp_literal(*ms, out),
            Value::Duration(d) => write_duration(d, out),
            Value::Inet(a) => {
                let _ = write!(out, "'{a}'");
            }
            Value::Uuid(u) | Value::Timeuuid(u) => {
                let _ = write!(out, "{}", u.hyphenated());
            }
            Value::List(v) => {
                let elem = match typ {
                    Some(CqlType::List { elem, .. }) => Some(&**elem),
                    _ => None,
                };
                write_seq(v.iter(), elem, '[', ']', out);
            }
            Value::Set(v) => {
                let elem = match typ {
                    Some(CqlType::Set { elem, .. }) => Some(&**elem),
                    _ => None,
                };
                write_seq(v.iter(), elem, '{', '}', out);
            }
            Value::Map(v) => write_map_literal(v, typ, out),
            Value::Tuple(v) => write_tuple_literal(v, typ, out),
            Value::Udt(v) => write_udt_literal(v, typ, out),
        }
    }
}

/// A date as `'yyyy-mm-dd'`, or its day number (`'2147483648'` = the epoch) outside years
/// 0–9999.
fn write_date_literal(d: u32, out: &mut String) {
    let days = i64::from(d) - UNIX_EPOCH_DATE;
    let (y, m, day) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        let _ = write!(out, "'{y:04}-{m:02}-{day:02}'");
    } else {
        let _ = write!(out, "'{d}'");
    }
}

/// A time of day (nanoseconds) as `'hh:mm:ss.nnnnnnnnn'`.
fn write_time_literal(t: i64, out: &mut String) {
    let (secs, nanos) = (t.div_euclid(1_000_000_000), t.rem_euclid(1_000_000_000));
    let _ = write!(
        out,
        "'{:02}:{:02}:{:02}.{:09}'",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60,
        nanos
    );
}

/// A timestamp (milliseconds) as `'yyyy-mm-dd hh:mm:ss.mmm+0000'`, or its milliseconds
/// outside years 0–9999.
fn write_timestamp_literal(ms: i64, out: &mut String) {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    if (0..=9999).contains(&y) {
        let secs = in_day / 1000;
        let _ = write!(
            out,
            "'{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}+0000'",
            secs / 3600,
            (secs / 60) % 60,
            secs % 60,
            in_day % 1000
        );
    } else {
        let _ = write!(out, "{ms}");
    }
}

/// A map as `{k: v, ...}`.
fn write_map_literal(v: &[(Value, Value)], typ: Option<&CqlType>, out: &mut String) {
    let (kt, vt) = match typ {
        Some(CqlType::Map { key, value, .. }) => (Some(&**key), Some(&**value)),
        _ => (None, None),
    };
    out.push('{');
    for (i, (k, x)) in v.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        k.write_literal(kt, out);
        out.push_str(": ");
        x.write_literal(vt, out);
    }
    out.push('}');
}

/// A tuple as `(a, b, ...)`.
fn write_tuple_literal(v: &[Option<Value>], typ: Option<&CqlType>, out: &mut String) {
    let types = match typ {
        Some(CqlType::Tuple(t)) => Some(t.as_slice()),
        _ => None,
    };
    out.push('(');
    for (i, f) in v.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_opt(f.as_ref(), types.and_then(|t| t.get(i)), out);
    }
    out.push(')');
}

/// A user-type value as `{field: value, ...}` with its type at hand, else as a tuple.
fn write_udt_literal(v: &[Option<Value>], typ: Option<&CqlType>, out: &mut String) {
    let Some(CqlType::Udt { def, .. }) = typ else {
        return write_tuple_literal(v, None, out);
    };
    out.push('{');
    for (i, (name, t)) in def.fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = super::write_identifier(out, name);
        out.push_str(": ");
        write_opt(v.get(i).and_then(Option::as_ref), Some(t), out);
    }
    out.push('}');
}

fn write_opt(v: Option<&Value>, typ: Option<&CqlType>, out: &mut String) {
    match v {
        Some(v) => v.write_literal(typ, out),
        None => out.push_str("null"),
    }
}

fn write_seq<'a>(
    items: impl Iterator<Item = &'a Value>,
    typ: Option<&CqlType>,
    open: char,
    close: char,
    out: &mut String,
) {
    out.push(open);
    for (i, e) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        e.write_literal(typ, out);
    }
    out.push(close);
}

/// Writes a duration as a CQL duration literal (`1y2mo3d4h5m6s7ms8us9ns`, `-3d`, `0s`).
fn write_duration(d: &Duration, out: &mut String) {
    if d.months == 0 && d.days == 0 && d.nanos == 0 {
        out.push_str("0s");
        return;
    }
    if d.months < 0 || d.days < 0 || d.nanos < 0 {
        out.push('-');
    }
    let months = i64::from(d.months).unsigned_abs();
    let days = i64::from(d.days).unsigned_abs();
    let mut nanos = d.nanos.unsigned_abs();
    let part = |n: u64, unit: &str, out: &mut String| {
        if n > 0 {
            let _ = write!(out, "{n}{unit}");
        }
    };
    part(months / 12, "y", out);
    part(months % 12, "mo", out);
    part(days, "d", out);
    for (size, unit) in [
        (3_600_000_000_000u64, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        part(nanos / size, unit, out);
        nanos %= size;
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.cql_literal())
    }
}

#[cfg(test)]
#[path = "value_tests.rs"]
mod tests;
