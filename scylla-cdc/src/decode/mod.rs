//! Typed decoding: a row's columns into your own `#[derive(Deserialize)]` struct.
//!
//! [`crate::CDCRow::decode`] fills a struct from the base table's columns of a log row;
//! [`from_columns`] does the same from any named set of CQL values (a merged row image, a row
//! of an ordinary query), given each column's name, CQL type and value. A struct is decoded as
//! a map from column name to value: a field takes the column of its name (`#[serde(rename)]`
//! for other spellings), and columns without a field are ignored (by [`from_columns`] too,
//! unless the struct says `#[serde(deny_unknown_fields)]`).
//!
//! ```
//! use serde::Deserialize;
//! use scylla::frame::response::result::{ColumnType, NativeType};
//! use scylla::value::CqlValue;
//!
//! #[derive(Deserialize, Debug, PartialEq)]
//! struct Row {
//!     pk: i32,
//!     v: Option<String>,
//!     missing: Option<i64>,
//! }
//!
//! let int = ColumnType::Native(NativeType::Int);
//! let text = ColumnType::Native(NativeType::Text);
//! let pk = CqlValue::Int(7);
//! let row: Row = scylla_cdc::decode::from_columns([
//!     ("pk", &int, Some(&pk)),
//!     ("v", &text, None),
//! ])?;
//! assert_eq!(row, Row { pk: 7, v: None, missing: None });
//! # Ok::<(), scylla_cdc::decode::DecodeError>(())
//! ```
//!
//! # Why serde
//!
//! The driver has its own derive, `DeserializeRow`, but it checks the row's columns against
//! the struct's fields, and a log row carries `cdc$` metadata columns and
//! `cdc$deleted_`/`cdc$deleted_elements_` companions that the user's struct does not have;
//! it also only reads rows of a driver result, not a row image merged from several log rows.
//! serde's `Deserialize` is the derive Rust users already know, works on any source of named
//! values, and the same struct serializes (to JSON, say) with `#[derive(Serialize)]`.
//!
//! # Nulls, absent columns, deletions
//!
//! A column that is null in the row (the change did not touch it), or that the row does not
//! have at all, decodes into `None` for an `Option` field. A field that is not an `Option`
//! gets an error naming the column ([`DecodeError::Null`], [`DecodeError::MissingColumn`]);
//! `#[serde(default)]` gives it its default when the column is absent, not when it is null
//! (an empty collection is null in CQL: decode it into an `Option`). A log row's key
//! columns are never null.
//!
//! Whether the change *deleted* a column, or removed elements from a collection, is not part
//! of the value: read it beside the decoded struct, from the same row, one column at a time
//! or all at once with [`crate::CDCRow::deletions`].
//!
//! ```
//! # use serde::Deserialize;
//! # use scylla_cdc::CDCRow;
//! #[derive(Deserialize)]
//! struct Change {
//!     pk: i32,
//!     v: Option<i32>,
//!     tags: Option<Vec<String>>, // a non-frozen `set<text>`: the elements the change added
//! }
//!
//! fn handle(row: &CDCRow<'_>) -> anyhow::Result<()> {
//!     let change: Change = row.decode()?;
//!     let v_deleted = row.is_value_deleted("v"); // `v = null` or `DELETE v`
//!     let tags_removed = row.get_deleted_elements("tags")?; // `tags = tags - {...}`
//!     println!("{} {:?} {v_deleted} {:?} {tags_removed:?}", change.pk, change.v, change.tags);
//!     Ok(())
//! }
//! ```
//!
//! # CQL type → Rust types accepted
//!
//! Each CQL type decodes into the Rust types below; anything else is a
//! [`DecodeError::Type`] naming the column, its CQL type and what the Rust type expected.
//! `Option<T>` of each and newtypes (`struct Id(Uuid)`) are accepted too. Types that take
//! whatever comes (`serde_json::Value`, `#[serde(untagged)]` enums) see integers, floats and
//! booleans as such, `blob` as bytes, `varint`, `decimal`, the UUIDs, `inet`, `timestamp`,
//! `date` and `time` as the strings below (a date or time outside chrono's range as its
//! number), collections and tuples as sequences, maps, UDTs and `duration` as maps.
//!
//! | CQL type | Rust types |
//! |---|---|
//! | `tinyint`, `smallint`, `int`, `bigint`, `counter` | any integer (`i8`…`i128`, `u8`…`u128`) that holds the value: [`DecodeError::OutOfRange`] otherwise |
//! | `varint` | any integer that holds the value (up to 128 bits); `String` (decimal digits); `f64`/`f32` (nearest) |
//! | `decimal` | `String` (e.g. `"12.345"`, `"-0.001"`; `"1E-5000"` beyond 64 padding zeros; parse it with your decimal crate); `f64`/`f32` (nearest) |
//! | `float` | `f32`, `f64` |
//! | `double` | `f64` |
//! | `boolean` | `bool` |
//! | `ascii`, `text`/`varchar` | `String`, `&str` (with [`from_columns`]), `char` (one character), `Box<str>`; a unit-variant enum by variant name |
//! | `blob` | `Vec<u8>`, `serde_bytes::ByteBuf`, `&[u8]` (with [`from_columns`]), `String` (`"0xcafe"`) |
//! | `uuid`, `timeuuid` | `uuid::Uuid` (its `serde` feature), `String` (hyphenated), `serde_bytes::ByteBuf` (the 16 bytes) |
//! | `timestamp` | `chrono::DateTime<Utc>` (chrono's `serde` feature; or with `#[serde(with = "chrono::serde::ts_milliseconds")]`), `DateTime<FixedOffset>`, `String` (RFC 3339, `"2023-11-14T22:13:20.000Z"`), `i64` (milliseconds since the epoch) |
//! | `date` | `chrono::NaiveDate`, `String` (`"2024-02-29"`), `i32`/`i64` (days since 1970-01-01) |
//! | `time` | `chrono::NaiveTime`, `String` (`"01:02:03.000000000"`), `i64` (nanoseconds since midnight) |
//! | `duration` | a struct with fields `months`, `days`, `nanoseconds` (integers), a tuple `(i32, i32, i64)`, `String` (`"1h2m"`) |
//! | `inet` | `std::net::IpAddr` (`Ipv4Addr`/`Ipv6Addr` for one family), `String` |
//! | `list<V>`, `set<V>`, `vector<V, N>` | `Vec<V>`, `HashSet`, `BTreeSet`, `VecDeque`, arrays, … |
//! | `map<K, V>` | `HashMap<K, V>`, `BTreeMap<K, V>`, `Vec<(K, V)>`; a struct when the keys are text |
//! | `tuple<…>` | a Rust tuple of the same length, `Vec<Option<V>>` when all elements have one type; null elements into `Option` |
//! | a UDT | a struct, field by field name (unset fields are null: `Option`); `HashMap<String, Option<V>>`, `BTreeMap` |
//!
//! Frozen and non-frozen collections and UDTs decode alike. In the **log** a non-frozen
//! collection holds what the change *added* (Scylla logs the column as the frozen type
//! below), and a non-frozen `list<V>` appears as `map<timeuuid, V>`: the elements keyed by
//! their list cell keys, in list order. Decode such a column into `Vec<(Uuid, V)>` to keep
//! the keys (which [`crate::CDCRow::get_deleted_elements`] refers to) in list order, or into
//! [`ListValues<V>`] for the values alone. (A `BTreeMap<Uuid, V>` keeps the keys too, but
//! sorts them by `Uuid`'s byte order, which is not the timeuuid order of the list.) A non-frozen UDT is logged as a frozen
//! UDT whose fields the change did not set are null.
//!
//! | base column | log column, as decoded |
//! |---|---|
//! | `list<V>` | `frozen<map<timeuuid, V>>` |
//! | `set<V>` | `frozen<set<V>>` |
//! | `map<K, V>` | `frozen<map<K, V>>` |
//! | UDT `ut` | `frozen<ut>` |
//!
//! Decoding never panics: malformed values are errors of the row's accessors
//! ([`DecodeError::Column`]), and values a Rust type cannot hold (a timestamp outside chrono's
//! range, say) are [`DecodeError::Invalid`].

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use num_bigint::BigInt;
use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};
use scylla::value::{CqlDuration, CqlValue};
use serde::de::value::{BorrowedStrDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, Expected, Visitor};

use crate::base::error::ColumnError;

/// Why a row could not be decoded into a Rust type.
///
/// `column` is the column's name, followed by the path to the value inside it when the error
/// is in an element of a collection, tuple or UDT (`m[3]`, `l[0]`, `u.street`); `cql_type` is
/// the CQL type of that value; `expected` is what the Rust type asked for, in serde's words
/// (`i32`, `a string`, `struct Address`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The value's CQL type cannot become the Rust type (see the module's type table).
    #[error("column `{column}`: CQL type {cql_type} cannot be decoded into {expected}")]
    Type {
        /// The column (and path inside it).
        column: String,
        /// The value's CQL type.
        cql_type: String,
        /// What the Rust type expected.
        expected: String,
    },

    /// An integer does not fit the Rust integer type.
    #[error("column `{column}`: the {cql_type} value {value} does not fit in {rust_type}")]
    OutOfRange {
        /// The column (and path inside it).
        column: String,
        /// The value's CQL type.
        cql_type: String,
        /// The value, in decimal.
        value: String,
        /// The Rust integer type.
        rust_type: &'static str,
    },

    /// The value is null (or empty) and the Rust type is not an `Option`.
    #[error(
        "column `{column}` of CQL type {cql_type} is null, and {expected} cannot hold null \
         (make the field an `Option`)"
    )]
    Null {
        /// The column (and path inside it).
        column: String,
        /// The value's CQL type.
        cql_type: String,
        /// What the Rust type expected.
        expected: String,
    },

    /// A field that is not an `Option` has no column (or UDT field) of its name.
    #[error("there is no column `{column}` for a field that is not an `Option`")]
    MissingColumn {
        /// The column (for a UDT field: the column, a dot and the field).
        column: String,
    },

    /// The Rust type refused the value: a timestamp or date chrono cannot represent, a tuple
    /// of another length, an unknown enum variant, a column given twice, a field's own
    /// validation.
    #[error("{}", invalid_message(column, cql_type, message))]
    Invalid {
        /// The column (and path inside it); empty when the error is about the whole row.
        column: String,
        /// The value's CQL type; empty when not known.
        cql_type: String,
        /// What was wrong.
        message: String,
    },

    /// A row decodes into a struct or a map of its columns; the Rust type is something else.
    #[error("a row decodes into a struct or a map of its columns, not into {expected}")]
    NotAStruct {
        /// What the Rust type expected.
        expected: String,
    },

    /// A column of the row could not be read (malformed bytes).
    #[error(transparent)]
    Column(#[from] ColumnError),
}

fn invalid_message(column: &str, cql_type: &str, message: &str) -> String {
    match (column.is_empty(), cql_type.is_empty()) {
        (true, _) => message.to_owned(),
        (false, true) => format!("column `{column}`: {message}"),
        (false, false) => format!("column `{column}` of CQL type {cql_type}: {message}"),
    }
}

/// Joins a path step and the path below it: `m` + `[3]` = `m[3]`, `u` + `a` = `u.a`.
fn join(step: &str, rest: &str) -> String {
    if rest.is_empty() {
        step.to_owned()
    } else if rest.starts_with('[') {
        format!("{step}{rest}")
    } else {
        format!("{step}.{rest}")
    }
}

impl DecodeError {
    /// The error, seen from one level up: inside `step` (a column, a UDT field, `[i]`).
    fn within(mut self, step: &str) -> Self {
        match &mut self {
            Self::Type { column, .. }
            | Self::OutOfRange { column, .. }
            | Self::Null { column, .. }
            | Self::MissingColumn { column }
            | Self::Invalid { column, .. } => *column = join(step, column),
            Self::NotAStruct { .. } | Self::Column(_) => {}
        }
        self
    }

    /// Fills in the CQL type of an error raised by a Rust type's visitor.
    fn of_type(mut self, typ: &dyn Fn() -> String) -> Self {
        if let Self::Invalid { cql_type, .. } = &mut self
            && cql_type.is_empty()
        {
            *cql_type = typ();
        }
        self
    }

    fn invalid(message: impl fmt::Display) -> Self {
        Self::Invalid {
            column: String::new(),
            cql_type: String::new(),
            message: message.to_string(),
        }
    }
}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::invalid(msg)
    }

    fn missing_field(field: &'static str) -> Self {
        Self::MissingColumn {
            column: field.to_owned(),
        }
    }

    fn duplicate_field(field: &'static str) -> Self {
        Self::Invalid {
            column: field.to_owned(),
            cql_type: String::new(),
            message: "given twice".to_owned(),
        }
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> Self {
        Self::Invalid {
            column: field.to_owned(),
            cql_type: String::new(),
            message: "the Rust type has no field for it (`deny_unknown_fields`)".to_owned(),
        }
    }
}

/// The CQL name of a type, as in a schema: `int`, `frozen<map<int, text>>`, `tuple<int, text>`.
pub(crate) fn cql_type_name(typ: &ColumnType<'_>) -> String {
    fn frozen(f: bool, inner: String) -> String {
        if f { format!("frozen<{inner}>") } else { inner }
    }
    match typ {
        ColumnType::Native(n) => native_name(n).to_owned(),
        ColumnType::Collection { frozen: f, typ } => frozen(
            *f,
            match typ {
                CollectionType::List(e) => format!("list<{}>", cql_type_name(e)),
                CollectionType::Set(e) => format!("set<{}>", cql_type_name(e)),
                CollectionType::Map(k, v) => {
                    format!("map<{}, {}>", cql_type_name(k), cql_type_name(v))
                }
                _ => "collection".to_owned(),
            },
        ),
        ColumnType::Vector { typ, dimensions } => {
            format!("vector<{}, {dimensions}>", cql_type_name(typ))
        }
        ColumnType::UserDefinedType {
            frozen: f,
            definition,
        } => frozen(*f, definition.name.to_string()),
        ColumnType::Tuple(elems) => format!(
            "tuple<{}>",
            elems
                .iter()
                .map(cql_type_name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "unknown type".to_owned(),
    }
}

fn native_name(n: &NativeType) -> &'static str {
    match n {
        NativeType::Ascii => "ascii",
        NativeType::Boolean => "boolean",
        NativeType::Blob => "blob",
        NativeType::Counter => "counter",
        NativeType::Date => "date",
        NativeType::Decimal => "decimal",
        NativeType::Double => "double",
        NativeType::Duration => "duration",
        NativeType::Float => "float",
        NativeType::Int => "int",
        NativeType::BigInt => "bigint",
        NativeType::Text => "text",
        NativeType::Timestamp => "timestamp",
        NativeType::Inet => "inet",
        NativeType::SmallInt => "smallint",
        NativeType::TinyInt => "tinyint",
        NativeType::Time => "time",
        NativeType::Timeuuid => "timeuuid",
        NativeType::Uuid => "uuid",
        NativeType::Varint => "varint",
        _ => "unknown type",
    }
}

/// The CQL type name of a value whose declared type is not known.
fn value_type_name(v: &CqlValue) -> &'static str {
    match v {
        CqlValue::Ascii(_) => "ascii",
        CqlValue::Boolean(_) => "boolean",
        CqlValue::Blob(_) => "blob",
        CqlValue::Counter(_) => "counter",
        CqlValue::Decimal(_) => "decimal",
        CqlValue::Date(_) => "date",
        CqlValue::Double(_) => "double",
        CqlValue::Duration(_) => "duration",
        CqlValue::Empty => "empty value",
        CqlValue::Float(_) => "float",
        CqlValue::Int(_) => "int",
        CqlValue::BigInt(_) => "bigint",
        CqlValue::Text(_) => "text",
        CqlValue::Timestamp(_) => "timestamp",
        CqlValue::Inet(_) => "inet",
        CqlValue::List(_) => "list",
        CqlValue::Map(_) => "map",
        CqlValue::Set(_) => "set",
        CqlValue::UserDefinedType { .. } => "user-defined type",
        CqlValue::SmallInt(_) => "smallint",
        CqlValue::TinyInt(_) => "tinyint",
        CqlValue::Time(_) => "time",
        CqlValue::Timeuuid(_) => "timeuuid",
        CqlValue::Tuple(_) => "tuple",
        CqlValue::Uuid(_) => "uuid",
        CqlValue::Varint(_) => "varint",
        CqlValue::Vector(_) => "vector",
        _ => "unknown type",
    }
}

/// Decodes named CQL values into `T`, a struct (or a map) whose fields are named after the
/// columns.
///
/// Each item is a column's name, its CQL type (as the driver describes it, e.g. from a
/// result's column specs) and its value, `None` for null. Columns without a field are
/// ignored; fields without a column decode as `None` (`Option` fields) or fail with
/// [`DecodeError::MissingColumn`]. Text and blob fields may borrow from the values
/// (`&'a str`, `&'a [u8]`). See the module docs for the Rust types each CQL type decodes
/// into.
pub fn from_columns<'a, T, I>(columns: I) -> Result<T, DecodeError>
where
    T: de::Deserialize<'a>,
    I: IntoIterator<Item = (&'a str, &'a ColumnType<'a>, Option<&'a CqlValue>)>,
{
    T::deserialize(RowDeserializer {
        columns: columns.into_iter(),
    })
}

/// Decodes one value into `T`; errors name `column`.
///
/// For a value outside a row: a column read with [`crate::CDCRow::get_value`], an element of
/// a value, a value of an image.
pub fn from_value<'a, T: de::Deserialize<'a>>(
    column: &str,
    typ: &'a ColumnType<'a>,
    value: Option<&'a CqlValue>,
) -> Result<T, DecodeError> {
    T::deserialize(ValueDeserializer {
        typ: Some(typ),
        value,
    })
    .map_err(|e| e.within(column))
}

/// What a log row deleted ([`crate::CDCRow::deletions`]), beside the value
/// [`crate::CDCRow::decode`] gives: the columns
/// whose `cdc$deleted_` flag is set and the elements removed from non-frozen collections and
/// UDTs (`cdc$deleted_elements_`).
///
/// ```
/// # use serde::Deserialize;
/// use scylla_cdc::CDCRow;
/// use scylla_cdc::decode::Deletions;
///
/// #[derive(Deserialize)]
/// struct Row {
///     pk: i32,
///     v: Option<i32>,
/// }
///
/// fn handle(row: &CDCRow<'_>) -> anyhow::Result<()> {
///     let value: Row = row.decode()?;
///     let deleted: Deletions = row.deletions()?;
///     if deleted.is_deleted("v") {
///         println!("pk {}: v deleted", value.pk);
///     }
///     // The keys removed from a non-frozen `set<int>` `s`.
///     let removed: Option<Vec<i32>> = deleted.elements_as("s")?;
///     println!("{removed:?}");
///     Ok(())
/// }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Deletions {
    /// The columns the change deleted (set to null, `DELETE c`, or overwrote, for a
    /// non-frozen collection or UDT), in the log's column order.
    pub columns: Vec<String>,
    /// Per non-frozen collection or UDT column, the elements the change removed: set
    /// elements, map keys, list cell keys (timeuuids) or UDT field indexes (`smallint`), as a
    /// `set` value. Columns with none removed are absent.
    pub elements: BTreeMap<String, CqlValue>,
}

impl Deletions {
    /// Whether the change deleted `column`.
    pub fn is_deleted(&self, column: &str) -> bool {
        self.columns.iter().any(|c| c == column)
    }

    /// Whether the change deleted nothing.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.elements.is_empty()
    }

    /// The elements removed from `column`, decoded into `T` (`Vec<K>`, `BTreeSet<K>`,
    /// `Vec<Uuid>` for a list, `Vec<i16>` for a UDT's field indexes); `None` when none were.
    pub fn elements_as<T: de::DeserializeOwned>(
        &self,
        column: &str,
    ) -> Result<Option<T>, DecodeError> {
        self.elements
            .get(column)
            .map(|v| {
                T::deserialize(ValueDeserializer {
                    typ: None,
                    value: Some(v),
                })
                .map_err(|e| e.within(&format!("cdc$deleted_elements_{column}")))
            })
            .transpose()
    }
}

/// The columns `T` asks for, when it is a struct (derived or not, through newtypes and
/// `Option`): the names (and aliases) it passes to `deserialize_struct`. `None` for a map, a
/// struct with a flattened field, or anything else, which need every column.
///
/// [`crate::CDCRow::decode`] decodes only these columns of a row.
pub(crate) fn requested_columns<T: de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    struct Probe<'p>(&'p mut Option<&'static [&'static str]>);

    /// Ends the probe (never shown to anyone: no message is kept).
    #[derive(Debug)]
    struct Stop;

    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("probe")
        }
    }

    impl std::error::Error for Stop {}

    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_msg: M) -> Self {
            Stop
        }
    }

    impl<'de> Deserializer<'de> for Probe<'_> {
        type Error = Stop;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = Some(fields);
            Err(Stop)
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Stop> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
            visitor.visit_some(self)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    let mut fields = None;
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// The elements of a list as a `Vec`, whether the value is a list (a frozen `list<V>`, a
/// list in a row image) or the log's form of a non-frozen list, a `map<timeuuid, V>` whose
/// values are the elements in list order (the keys are dropped).
///
/// ```
/// # use serde::Deserialize;
/// use scylla_cdc::decode::ListValues;
///
/// #[derive(Deserialize)]
/// struct Row {
///     /// A non-frozen `list<text>` column: the elements the change appended or set.
///     l: Option<ListValues<String>>,
/// }
/// ```
///
/// It serializes as a sequence.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ListValues<V>(pub Vec<V>);

impl<V> ListValues<V> {
    /// The elements.
    pub fn into_inner(self) -> Vec<V> {
        self.0
    }
}

impl<V> std::ops::Deref for ListValues<V> {
    type Target = Vec<V>;

    fn deref(&self) -> &Vec<V> {
        &self.0
    }
}

impl<'de, V: de::Deserialize<'de>> de::Deserialize<'de> for ListValues<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<V>(std::marker::PhantomData<V>);

        impl<'de, V: de::Deserialize<'de>> Visitor<'de> for ListVisitor<V> {
            type Value = ListValues<V>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list, or a map of list keys to elements")
            }

            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(ListValues(out))
            }

            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
                while map.next_key::<de::IgnoredAny>()?.is_some() {
                    out.push(map.next_value()?);
                }
                Ok(ListValues(out))
            }
        }

        deserializer.deserialize_any(ListVisitor(std::marker::PhantomData))
    }
}

impl<V: serde::Serialize> serde::Serialize for ListValues<V> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// What a visitor expects, as text.
fn expected(exp: &dyn Expected) -> String {
    exp.to_string()
}

/// A whole row: a map from column name to value.
struct RowDeserializer<I> {
    columns: I,
}

macro_rules! not_a_struct {
    ($($method:ident $(($($arg:ident : $ty:ty),*))?),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($($arg: $ty,)*)? visitor: V) -> Result<V::Value, DecodeError> {
                $($(let _ = $arg;)*)?
                Err(DecodeError::NotAStruct { expected: expected(&visitor) })
            }
        )*
    };
}

impl<'de, I> Deserializer<'de> for RowDeserializer<I>
where
    I: Iterator<Item = (&'de str, &'de ColumnType<'de>, Option<&'de CqlValue>)>,
{
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let entries = self.columns.map(|(name, typ, value)| {
            (
                Key::Name(name),
                ValueDeserializer {
                    typ: Some(typ),
                    value,
                },
            )
        });
        let mut access = Entries {
            iter: entries,
            pending: None,
        };
        visitor.visit_map(&mut access)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    not_a_struct!(
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_unit_struct(name: &'static str),
        deserialize_seq,
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier,
    );
}

/// A key of a map being decoded: a column or field name, or a CQL map's key.
#[derive(Clone, Copy)]
enum Key<'de> {
    Name(&'de str),
    Value(ValueDeserializer<'de>, usize),
}

impl Key<'_> {
    /// The path step of this key's value.
    fn step(&self) -> String {
        match self {
            Key::Name(n) => (*n).to_owned(),
            Key::Value(k, i) => match k.value {
                Some(CqlValue::Int(v)) => format!("[{v}]"),
                Some(CqlValue::BigInt(v)) => format!("[{v}]"),
                Some(CqlValue::SmallInt(v)) => format!("[{v}]"),
                Some(CqlValue::TinyInt(v)) => format!("[{v}]"),
                Some(CqlValue::Text(v) | CqlValue::Ascii(v)) if v.len() <= 64 => format!("[{v:?}]"),
                Some(CqlValue::Uuid(v)) => format!("[{v}]"),
                Some(CqlValue::Timeuuid(v)) => format!("[{v}]"),
                _ => format!("[#{i}]"),
            },
        }
    }
}

/// The entries of a row, a UDT or a CQL map.
struct Entries<'de, I> {
    iter: I,
    /// The value of the last key, and the key (for the path of an error).
    pending: Option<(Key<'de>, ValueDeserializer<'de>)>,
}

impl<'de, I> de::MapAccess<'de> for Entries<'de, I>
where
    I: Iterator<Item = (Key<'de>, ValueDeserializer<'de>)>,
{
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        let k = match key {
            Key::Name(n) => seed.deserialize(BorrowedStrDeserializer::<DecodeError>::new(n))?,
            Key::Value(k, _) => seed
                .deserialize(k)
                .map_err(|e| e.within(&format!("{} (the key)", key.step())))?,
        };
        self.pending = Some((key, value));
        Ok(Some(k))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| DecodeError::invalid("a map value was asked for before its key"))?;
        seed.deserialize(value).map_err(|e| e.within(&key.step()))
    }

    fn size_hint(&self) -> Option<usize> {
        match self.iter.size_hint() {
            (lo, Some(hi)) if lo == hi => Some(lo),
            _ => None,
        }
    }
}

/// The elements of a list, set, vector or tuple, or the two halves of a map entry.
struct Elements<I> {
    iter: I,
    index: usize,
}

impl<'de, I> de::SeqAccess<'de> for Elements<I>
where
    I: Iterator<Item = ElementDeserializer<'de>>,
{
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        let Some(element) = self.iter.next() else {
            return Ok(None);
        };
        let i = self.index;
        self.index += 1;
        seed.deserialize(element)
            .map(Some)
            .map_err(|e| e.within(&format!("[{i}]")))
    }

    fn size_hint(&self) -> Option<usize> {
        match self.iter.size_hint() {
            (lo, Some(hi)) if lo == hi => Some(lo),
            _ => None,
        }
    }
}

macro_rules! element_forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
                match self {
                    Self::Value(v) => v.$method(visitor),
                    Self::Entry(..) => Err(entry_error(&visitor)),
                }
            }
        )*
    };
}

/// An element of a sequence: a value, or a map entry (decoded as a `(key, value)` pair).
enum ElementDeserializer<'de> {
    Value(ValueDeserializer<'de>),
    Entry(ValueDeserializer<'de>, ValueDeserializer<'de>),
}

impl<'de> Deserializer<'de> for ElementDeserializer<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_any(visitor),
            Self::Entry(k, v) => {
                let mut access = Elements {
                    iter: [Self::Value(k), Self::Value(v)].into_iter(),
                    index: 0,
                };
                visitor.visit_seq(&mut access)
            }
        }
    }

    serde::forward_to_deserialize_any! { seq tuple tuple_struct }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_option(visitor),
            entry => visitor.visit_some(entry),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_newtype_struct(name, visitor),
            entry => visitor.visit_newtype_struct(entry),
        }
    }

    // Everything else: a plain value's own method; a map entry is a pair only.
    element_forward! {
        deserialize_bool, deserialize_i8, deserialize_i16, deserialize_i32, deserialize_i64,
        deserialize_i128, deserialize_u8, deserialize_u16, deserialize_u32, deserialize_u64,
        deserialize_u128, deserialize_f32, deserialize_f64, deserialize_char, deserialize_str,
        deserialize_string, deserialize_bytes, deserialize_byte_buf, deserialize_unit,
        deserialize_map, deserialize_identifier
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_unit_struct(name, visitor),
            Self::Entry(..) => Err(entry_error(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_struct(name, fields, visitor),
            Self::Entry(..) => Err(entry_error(&visitor)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self {
            Self::Value(v) => v.deserialize_enum(name, variants, visitor),
            Self::Entry(..) => Err(entry_error(&visitor)),
        }
    }
}

fn entry_error(exp: &dyn Expected) -> DecodeError {
    DecodeError::Type {
        column: String::new(),
        cql_type: "map entry (a (key, value) pair)".to_owned(),
        expected: expected(exp),
    }
}

/// One CQL value (or null) and its declared type, when known.
#[derive(Clone, Copy)]
struct ValueDeserializer<'de> {
    typ: Option<&'de ColumnType<'de>>,
    value: Option<&'de CqlValue>,
}

/// An integer CQL value, widened.
enum Integer {
    Fits(i128),
    Big(BigInt),
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Integer::Fits(v) => write!(f, "{v}"),
            Integer::Big(v) => write!(f, "{v}"),
        }
    }
}

macro_rules! integer_method {
    ($method:ident, $visit:ident, $t:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            let value = self.present(&visitor)?;
            let n = match self.integer(value) {
                Some(n) => n,
                None => return Err(self.type_error(&visitor)),
            };
            let fits = match &n {
                Integer::Fits(v) => <$t>::try_from(*v).ok(),
                Integer::Big(_) => None,
            };
            match fits {
                Some(v) => visitor.$visit(v).map_err(|e| self.typed(e)),
                None => Err(DecodeError::OutOfRange {
                    column: String::new(),
                    cql_type: self.type_name(),
                    value: n.to_string(),
                    rust_type: stringify!($t),
                }),
            }
        }
    };
}

impl<'de> ValueDeserializer<'de> {
    fn type_name(&self) -> String {
        match (self.typ, self.value) {
            (Some(t), _) => cql_type_name(t),
            (None, Some(v)) => value_type_name(v).to_owned(),
            (None, None) => "unknown type".to_owned(),
        }
    }

    /// The value, or the error of a null (or empty) value for a Rust type that is not an
    /// `Option`.
    fn present(&self, exp: &dyn Expected) -> Result<&'de CqlValue, DecodeError> {
        match self.value {
            Some(CqlValue::Empty) | None => Err(DecodeError::Null {
                column: String::new(),
                cql_type: self.type_name(),
                expected: expected(exp),
            }),
            Some(v) => Ok(v),
        }
    }

    fn type_error(&self, exp: &dyn Expected) -> DecodeError {
        DecodeError::Type {
            column: String::new(),
            cql_type: self.type_name(),
            expected: expected(exp),
        }
    }

    /// An error of a visitor, with this value's type filled in.
    fn typed(&self, e: DecodeError) -> DecodeError {
        e.of_type(&|| self.type_name())
    }

    fn integer(&self, value: &CqlValue) -> Option<Integer> {
        Some(match value {
            CqlValue::TinyInt(v) => Integer::Fits((*v).into()),
            CqlValue::SmallInt(v) => Integer::Fits((*v).into()),
            CqlValue::Int(v) => Integer::Fits((*v).into()),
            CqlValue::BigInt(v) => Integer::Fits((*v).into()),
            CqlValue::Counter(v) => Integer::Fits(v.0.into()),
            CqlValue::Varint(v) => {
                let big = BigInt::from_signed_bytes_be(v.as_signed_bytes_be_slice());
                match i128::try_from(&big) {
                    Ok(v) => Integer::Fits(v),
                    Err(_) => Integer::Big(big),
                }
            }
            _ => return None,
        })
    }

    /// The element type of a collection, the element types of a tuple.
    fn element_type(&self) -> Option<&'de ColumnType<'de>> {
        match self.typ {
            Some(ColumnType::Collection {
                typ: CollectionType::List(e) | CollectionType::Set(e),
                ..
            }) => Some(e),
            Some(ColumnType::Vector { typ, .. }) => Some(typ),
            _ => None,
        }
    }

    fn map_types(&self) -> (Option<&'de ColumnType<'de>>, Option<&'de ColumnType<'de>>) {
        match self.typ {
            Some(ColumnType::Collection {
                typ: CollectionType::Map(k, v),
                ..
            }) => (Some(k), Some(v)),
            _ => (None, None),
        }
    }

    /// The value as a string, for the types that have a natural text form.
    fn text(&self, value: &'de CqlValue) -> Option<Result<Text<'de>, DecodeError>> {
        Some(Ok(match value {
            CqlValue::Ascii(s) | CqlValue::Text(s) => Text::Borrowed(s),
            CqlValue::Uuid(u) => Text::Owned(u.to_string()),
            CqlValue::Timeuuid(u) => Text::Owned(u.to_string()),
            CqlValue::Inet(a) => Text::Owned(a.to_string()),
            CqlValue::Varint(v) => {
                Text::Owned(BigInt::from_signed_bytes_be(v.as_signed_bytes_be_slice()).to_string())
            }
            CqlValue::Decimal(d) => {
                let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
                Text::Owned(decimal_string(bytes, scale))
            }
            CqlValue::Blob(b) => Text::Owned(hex(b)),
            CqlValue::Duration(d) => Text::Owned(duration_string(d)),
            CqlValue::Timestamp(t) => match DateTime::<Utc>::from_timestamp_millis(t.0) {
                Some(dt) => Text::Owned(dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()),
                None => {
                    return Some(Err(self.unrepresentable(format!(
                        "{} ms since the epoch is outside the range of a date-time",
                        t.0
                    ))));
                }
            },
            CqlValue::Date(d) => match date(d.0) {
                Some(nd) => Text::Owned(nd.format("%Y-%m-%d").to_string()),
                None => {
                    return Some(Err(self.unrepresentable(format!(
                        "{} days from 1970-01-01 is outside the range of a calendar date",
                        i64::from(d.0) - (1 << 31)
                    ))));
                }
            },
            CqlValue::Time(t) => match time(t.0) {
                Some(nt) => Text::Owned(nt.format("%H:%M:%S%.9f").to_string()),
                None => {
                    return Some(Err(
                        self.unrepresentable(format!("{} ns is not a time of day", t.0))
                    ));
                }
            },
            _ => return None,
        }))
    }

    fn unrepresentable(&self, message: String) -> DecodeError {
        DecodeError::Invalid {
            column: String::new(),
            cql_type: self.type_name(),
            message,
        }
    }

    fn elements(
        &self,
        items: &'de [CqlValue],
    ) -> Elements<impl Iterator<Item = ElementDeserializer<'de>>> {
        let typ = self.element_type();
        Elements {
            iter: items.iter().map(move |v| {
                ElementDeserializer::Value(ValueDeserializer {
                    typ,
                    value: Some(v),
                })
            }),
            index: 0,
        }
    }

    fn tuple_elements(
        &self,
        items: &'de [Option<CqlValue>],
    ) -> Elements<impl Iterator<Item = ElementDeserializer<'de>>> {
        let types: &'de [ColumnType<'de>] = match self.typ {
            Some(ColumnType::Tuple(t)) => t,
            _ => &[],
        };
        Elements {
            iter: items.iter().enumerate().map(move |(i, v)| {
                ElementDeserializer::Value(ValueDeserializer {
                    typ: types.get(i),
                    value: v.as_ref(),
                })
            }),
            index: 0,
        }
    }

    fn map_entries(
        &self,
        pairs: &'de [(CqlValue, CqlValue)],
    ) -> Entries<'de, impl Iterator<Item = (Key<'de>, ValueDeserializer<'de>)>> {
        let (kt, vt) = self.map_types();
        Entries {
            iter: pairs.iter().enumerate().map(move |(i, (k, v))| {
                (
                    Key::Value(
                        ValueDeserializer {
                            typ: kt,
                            value: Some(k),
                        },
                        i,
                    ),
                    ValueDeserializer {
                        typ: vt,
                        value: Some(v),
                    },
                )
            }),
            pending: None,
        }
    }

    fn udt_entries(
        &self,
        fields: &'de [(String, Option<CqlValue>)],
    ) -> Entries<'de, impl Iterator<Item = (Key<'de>, ValueDeserializer<'de>)>> {
        let types: &'de [(std::borrow::Cow<'de, str>, ColumnType<'de>)] = match self.typ {
            Some(ColumnType::UserDefinedType { definition, .. }) => &definition.field_types,
            _ => &[],
        };
        Entries {
            iter: fields.iter().enumerate().map(move |(i, (name, v))| {
                let typ = match types.get(i) {
                    Some((n, t)) if n == name => Some(t),
                    _ => types.iter().find(|(n, _)| n == name).map(|(_, t)| t),
                };
                (
                    Key::Name(name),
                    ValueDeserializer {
                        typ,
                        value: v.as_ref(),
                    },
                )
            }),
            pending: None,
        }
    }

    /// Visits the value as a map, for the types that are maps of names or keys.
    fn visit_as_map<V: Visitor<'de>>(
        &self,
        value: &'de CqlValue,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match value {
            CqlValue::Map(pairs) => visitor.visit_map(&mut self.map_entries(pairs)),
            CqlValue::UserDefinedType { fields, .. } => {
                visitor.visit_map(&mut self.udt_entries(fields))
            }
            CqlValue::Duration(d) => {
                let mut map = MapDeserializer::<_, DecodeError>::new(duration_parts(d).into_iter());
                let v = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(v)
            }
            _ => Err(self.type_error(&visitor)),
        }
    }

    /// Visits the value as a sequence, for the types that are sequences.
    fn visit_as_seq<V: Visitor<'de>>(
        &self,
        value: &'de CqlValue,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match value {
            CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
                visitor.visit_seq(&mut self.elements(items))
            }
            CqlValue::Tuple(items) => visitor.visit_seq(&mut self.tuple_elements(items)),
            CqlValue::Map(pairs) => {
                let (kt, vt) = self.map_types();
                let mut access = Elements {
                    iter: pairs.iter().map(move |(k, v)| {
                        ElementDeserializer::Entry(
                            ValueDeserializer {
                                typ: kt,
                                value: Some(k),
                            },
                            ValueDeserializer {
                                typ: vt,
                                value: Some(v),
                            },
                        )
                    }),
                    index: 0,
                };
                visitor.visit_seq(&mut access)
            }
            CqlValue::Blob(bytes) => {
                let mut seq = SeqDeserializer::<_, DecodeError>::new(bytes.iter().copied());
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            CqlValue::Duration(d) => {
                let mut seq = SeqDeserializer::<_, DecodeError>::new(
                    duration_parts(d).into_iter().map(|(_, v)| v),
                );
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            _ => Err(self.type_error(&visitor)),
        }
    }
}

/// A string value, borrowed from the value or rendered.
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Deserializer<'de> for ValueDeserializer<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = match self.value {
            None | Some(CqlValue::Empty) => {
                return visitor.visit_none().map_err(|e| self.typed(e));
            }
            Some(v) => v,
        };
        let r = match value {
            CqlValue::Boolean(b) => visitor.visit_bool(*b),
            CqlValue::TinyInt(v) => visitor.visit_i8(*v),
            CqlValue::SmallInt(v) => visitor.visit_i16(*v),
            CqlValue::Int(v) => visitor.visit_i32(*v),
            CqlValue::BigInt(v) => visitor.visit_i64(*v),
            CqlValue::Counter(v) => visitor.visit_i64(v.0),
            CqlValue::Float(v) => visitor.visit_f32(*v),
            CqlValue::Double(v) => visitor.visit_f64(*v),
            CqlValue::Blob(b) => visitor.visit_borrowed_bytes(b),
            CqlValue::List(_) | CqlValue::Set(_) | CqlValue::Vector(_) | CqlValue::Tuple(_) => {
                return self.visit_as_seq(value, visitor);
            }
            CqlValue::Map(_) | CqlValue::UserDefinedType { .. } | CqlValue::Duration(_) => {
                return self.visit_as_map(value, visitor);
            }
            // Outside chrono's range: the number, rather than an error for every such row.
            CqlValue::Timestamp(t) if DateTime::<Utc>::from_timestamp_millis(t.0).is_none() => {
                visitor.visit_i64(t.0)
            }
            CqlValue::Date(d) if date(d.0).is_none() => {
                visitor.visit_i64(i64::from(d.0) - (1 << 31))
            }
            CqlValue::Time(t) if time(t.0).is_none() => visitor.visit_i64(t.0),
            _ => match self.text(value) {
                Some(Ok(Text::Borrowed(s))) => visitor.visit_borrowed_str(s),
                Some(Ok(Text::Owned(s))) => visitor.visit_string(s),
                Some(Err(e)) => return Err(e),
                None => {
                    return Err(self.unrepresentable(format!(
                        "values of CQL type {} are not supported",
                        value_type_name(value)
                    )));
                }
            },
        };
        r.map_err(|e| self.typed(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.present(&visitor)? {
            CqlValue::Boolean(b) => visitor.visit_bool(*b).map_err(|e| self.typed(e)),
            _ => Err(self.type_error(&visitor)),
        }
    }

    integer_method!(deserialize_i8, visit_i8, i8);
    integer_method!(deserialize_i16, visit_i16, i16);
    integer_method!(deserialize_i128, visit_i128, i128);
    integer_method!(deserialize_u8, visit_u8, u8);
    integer_method!(deserialize_u16, visit_u16, u16);
    integer_method!(deserialize_u32, visit_u32, u32);
    integer_method!(deserialize_u64, visit_u64, u64);
    integer_method!(deserialize_u128, visit_u128, u128);

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.present(&visitor)? {
            // Days since the epoch.
            CqlValue::Date(d) => match i32::try_from(i64::from(d.0) - (1 << 31)) {
                Ok(days) => visitor.visit_i32(days).map_err(|e| self.typed(e)),
                Err(_) => Err(self.type_error(&visitor)),
            },
            _ => self.deserialize_i32_integer(visitor),
        }
    }

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let r = match self.present(&visitor)? {
            CqlValue::Timestamp(t) => visitor.visit_i64(t.0),
            CqlValue::Time(t) => visitor.visit_i64(t.0),
            CqlValue::Date(d) => visitor.visit_i64(i64::from(d.0) - (1 << 31)),
            _ => return self.deserialize_i64_integer(visitor),
        };
        r.map_err(|e| self.typed(e))
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.present(&visitor)? {
            CqlValue::Float(v) => visitor.visit_f32(*v).map_err(|e| self.typed(e)),
            CqlValue::Decimal(_) | CqlValue::Varint(_) => self.deserialize_f64(visitor),
            _ => Err(self.type_error(&visitor)),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = self.present(&visitor)?;
        let r = match value {
            CqlValue::Float(v) => visitor.visit_f64(f64::from(*v)),
            CqlValue::Double(v) => visitor.visit_f64(*v),
            CqlValue::Decimal(_) | CqlValue::Varint(_) => {
                let parsed = match self.text(value) {
                    Some(Ok(Text::Owned(s))) => s.parse::<f64>().ok(),
                    _ => None,
                };
                match parsed {
                    Some(f) => visitor.visit_f64(f),
                    None => return Err(self.type_error(&visitor)),
                }
            }
            _ => return Err(self.type_error(&visitor)),
        };
        r.map_err(|e| self.typed(e))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.present(&visitor)? {
            CqlValue::Ascii(s) | CqlValue::Text(s) => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => visitor.visit_char(c).map_err(|e| self.typed(e)),
                    _ => Err(self.unrepresentable(format!(
                        "{s:?} is not one character, as {} expects",
                        expected(&visitor)
                    ))),
                }
            }
            _ => Err(self.type_error(&visitor)),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = self.present(&visitor)?;
        let r = match self.text(value) {
            Some(Ok(Text::Borrowed(s))) => visitor.visit_borrowed_str(s),
            Some(Ok(Text::Owned(s))) => visitor.visit_string(s),
            Some(Err(e)) => return Err(e),
            None => return Err(self.type_error(&visitor)),
        };
        r.map_err(|e| self.typed(e))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let r = match self.present(&visitor)? {
            CqlValue::Blob(b) => visitor.visit_borrowed_bytes(b),
            CqlValue::Uuid(u) => visitor.visit_bytes(u.as_bytes()),
            CqlValue::Timeuuid(u) => visitor.visit_bytes(u.as_bytes()),
            _ => return Err(self.type_error(&visitor)),
        };
        r.map_err(|e| self.typed(e))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            None | Some(CqlValue::Empty) => visitor.visit_none().map_err(|e| self.typed(e)),
            Some(_) => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.value {
            None | Some(CqlValue::Empty) => visitor.visit_unit().map_err(|e| self.typed(e)),
            Some(_) => Err(self.type_error(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = self.present(&visitor)?;
        self.visit_as_seq(value, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let value = self.present(&visitor)?;
        let actual = match value {
            CqlValue::Tuple(items) => Some(items.len()),
            CqlValue::Duration(_) => Some(3),
            _ => None,
        };
        if let Some(actual) = actual
            && actual != len
        {
            return Err(self.unrepresentable(format!(
                "{actual} elements cannot be decoded into {} (of {len})",
                expected(&visitor)
            )));
        }
        self.visit_as_seq(value, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let value = self.present(&visitor)?;
        self.visit_as_map(value, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.present(&visitor)? {
            CqlValue::Ascii(s) | CqlValue::Text(s) => {
                let access: BorrowedStrDeserializer<'de, DecodeError> =
                    BorrowedStrDeserializer::new(s);
                visitor.visit_enum(access).map_err(|e| self.typed(e))
            }
            _ => Err(self.type_error(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }
}

impl<'de> ValueDeserializer<'de> {
    integer_method!(deserialize_i32_integer, visit_i32, i32);
    integer_method!(deserialize_i64_integer, visit_i64, i64);
}

/// `date`: days with 1970-01-01 at 2^31.
fn date(raw: u32) -> Option<NaiveDate> {
    let days = i64::from(raw) - (1 << 31);
    // 719_163: days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
    NaiveDate::from_num_days_from_ce_opt(i32::try_from(days + 719_163).ok()?)
}

/// `time`: nanoseconds since midnight.
fn time(nanos: i64) -> Option<NaiveTime> {
    if !(0..86_400_000_000_000).contains(&nanos) {
        return None;
    }
    let secs = u32::try_from(nanos / 1_000_000_000).ok()?;
    let frac = u32::try_from(nanos % 1_000_000_000).ok()?;
    NaiveTime::from_num_seconds_from_midnight_opt(secs, frac)
}

fn duration_parts(d: &CqlDuration) -> [(&'static str, i64); 3] {
    [
        ("months", i64::from(d.months)),
        ("days", i64::from(d.days)),
        ("nanoseconds", d.nanoseconds),
    ]
}

/// A duration in CQL's literal form: `1y2mo3d4h5m6s7ms8us9ns`, `-1h`, `0s`.
fn duration_string(d: &CqlDuration) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    if d.months < 0 || d.days < 0 || d.nanoseconds < 0 {
        out.push('-');
    }
    let months = i64::from(d.months).unsigned_abs();
    let days = i64::from(d.days).unsigned_abs();
    let mut nanos = d.nanoseconds.unsigned_abs();
    let mut part = |n: u64, unit: &str| {
        if n != 0 {
            let _ = write!(out, "{n}{unit}");
        }
    };
    part(months / 12, "y");
    part(months % 12, "mo");
    part(days, "d");
    for (size, unit) in [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        part(nanos / size, unit);
        nanos %= size;
    }
    if out.is_empty() || out == "-" {
        return "0s".to_owned();
    }
    out
}

/// A blob as CQL writes it: `0x` and lower-case hex digits.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(2 + 2 * bytes.len());
    out.push_str("0x");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Zeros written out before switching to `E` notation.
const MAX_PADDING: i64 = 64;

/// A decimal (`unscaled × 10^-scale`) in plain notation, or as `<unscaled>E<exponent>` when
/// that would need more than [`MAX_PADDING`] zeros.
fn decimal_string(unscaled: &[u8], scale: i32) -> String {
    let n = BigInt::from_signed_bytes_be(unscaled);
    let scale = i64::from(scale);
    if scale == 0 {
        return n.to_string();
    }
    let negative = n.sign() == num_bigint::Sign::Minus;
    let digits = n.magnitude().to_string();
    let sign = if negative { "-" } else { "" };
    let len = digits.len() as i64;
    if scale < 0 {
        if -scale > MAX_PADDING {
            return format!("{n}E{}", -scale);
        }
        if n.sign() == num_bigint::Sign::NoSign {
            return "0".to_owned();
        }
        return format!("{sign}{digits}{}", "0".repeat((-scale) as usize));
    }
    if scale < len {
        let (int, frac) = digits.split_at((len - scale) as usize);
        format!("{sign}{int}.{frac}")
    } else if scale - len <= MAX_PADDING {
        format!("{sign}0.{}{digits}", "0".repeat((scale - len) as usize))
    } else {
        format!("{n}E{}", -scale)
    }
}

#[cfg(test)]
mod tests;
