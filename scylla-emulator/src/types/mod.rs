//! The CQL type model of the embedded cluster.
//!
//! [`CqlType`] is the type of a column, a bind variable or a collection element; user-defined
//! types are shared through [`UserType`] (`Arc`). Values of these types are [`value::Value`],
//! encoded and decoded by [`value`]'s wire codec exactly as the CQL v4 protocol specifies.
//! [`timeuuid`] builds, bounds and orders the version-1 UUIDs of `timeuuid` values;
//! `datetime` parses the text forms of dates, times and timestamps as ScyllaDB does;
//! `json` (crate-internal) is JSON text as ScyllaDB's RapidJSON-based reader and writer see
//! it: the document model of `INSERT JSON` and `fromJson()`, the spellings of `SELECT JSON`.

use std::fmt;
use std::sync::Arc;

pub(crate) mod json;
pub mod timeuuid;
pub mod value;

pub(crate) mod datetime;

/// A CQL type, as a column or bind variable has it.
///
/// Collections and user-defined types carry a `frozen` flag: a non-frozen collection or UDT
/// is stored cell by cell (elements / fields have their own timestamps), a frozen one is a
/// single atomic value. Elements nested inside a collection are always frozen in CQL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CqlType {
    /// `ascii`
    Ascii,
    /// `bigint`
    Bigint,
    /// `blob`
    Blob,
    /// `boolean`
    Boolean,
    /// `counter`
    Counter,
    /// `date`
    Date,
    /// `decimal`
    Decimal,
    /// `double`
    Double,
    /// `duration`
    Duration,
    /// `float`
    Float,
    /// `inet`
    Inet,
    /// `int`
    Int,
    /// `smallint`
    Smallint,
    /// `text` (`varchar` is an alias and is always reported as `text`)
    Text,
    /// `time`
    Time,
    /// `timestamp`
    Timestamp,
    /// `timeuuid`
    Timeuuid,
    /// `tinyint`
    Tinyint,
    /// `uuid`
    Uuid,
    /// `varint`
    Varint,
    /// `list<elem>`
    List {
        /// Element type.
        elem: Box<CqlType>,
        /// Whether the list is one atomic value.
        frozen: bool,
    },
    /// `set<elem>`
    Set {
        /// Element type.
        elem: Box<CqlType>,
        /// Whether the set is one atomic value.
        frozen: bool,
    },
    /// `map<key, value>`
    Map {
        /// Key type.
        key: Box<CqlType>,
        /// Value type.
        value: Box<CqlType>,
        /// Whether the map is one atomic value.
        frozen: bool,
    },
    /// `tuple<...>` (always frozen in CQL).
    Tuple(Vec<CqlType>),
    /// A user-defined type.
    Udt {
        /// The type's definition.
        def: Arc<UserType>,
        /// Whether the value is one atomic value.
        frozen: bool,
    },
}

/// A user-defined type: `CREATE TYPE ks.name (field type, ...)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserType {
    /// Keyspace the type lives in.
    pub keyspace: String,
    /// Type name (case preserved, as created).
    pub name: String,
    /// Fields in declaration order; a field's index is its position here.
    pub fields: Vec<(String, CqlType)>,
}

impl CqlType {
    /// Whether values of this type are stored cell by cell (non-frozen collections and UDTs).
    pub fn is_multi_cell(&self) -> bool {
        match self {
            CqlType::List { frozen, .. }
            | CqlType::Set { frozen, .. }
            | CqlType::Map { frozen, .. }
            | CqlType::Udt { frozen, .. } => !frozen,
            _ => false,
        }
    }

    /// Whether this is a list, set or map (frozen or not).
    pub fn is_collection(&self) -> bool {
        matches!(
            self,
            CqlType::List { .. } | CqlType::Set { .. } | CqlType::Map { .. }
        )
    }

    /// Whether this type or a type nested in it is `counter`.
    pub fn is_counter(&self) -> bool {
        matches!(self, CqlType::Counter)
    }

    /// The same type with its outermost level frozen (no-op for atomic types).
    pub fn frozen(&self) -> CqlType {
        match self {
            CqlType::List { elem, .. } => CqlType::List {
                elem: elem.clone(),
                frozen: true,
            },
            CqlType::Set { elem, .. } => CqlType::Set {
                elem: elem.clone(),
                frozen: true,
            },
            CqlType::Map { key, value, .. } => CqlType::Map {
                key: key.clone(),
                value: value.clone(),
                frozen: true,
            },
            CqlType::Udt { def, .. } => CqlType::Udt {
                def: def.clone(),
                frozen: true,
            },
            other => other.clone(),
        }
    }

    /// The native type's CQL name (`int`, `text`, ...), or `None` for collections, tuples and UDTs.
    pub fn native_name(&self) -> Option<&'static str> {
        Some(match self {
            CqlType::Ascii => "ascii",
            CqlType::Bigint => "bigint",
            CqlType::Blob => "blob",
            CqlType::Boolean => "boolean",
            CqlType::Counter => "counter",
            CqlType::Date => "date",
            CqlType::Decimal => "decimal",
            CqlType::Double => "double",
            CqlType::Duration => "duration",
            CqlType::Float => "float",
            CqlType::Inet => "inet",
            CqlType::Int => "int",
            CqlType::Smallint => "smallint",
            CqlType::Text => "text",
            CqlType::Time => "time",
            CqlType::Timestamp => "timestamp",
            CqlType::Timeuuid => "timeuuid",
            CqlType::Tinyint => "tinyint",
            CqlType::Uuid => "uuid",
            CqlType::Varint => "varint",
            _ => return None,
        })
    }

    /// Parses a native type name (case-insensitive; `varchar` is `text`).
    pub fn from_native_name(name: &str) -> Option<CqlType> {
        Some(match name.to_ascii_lowercase().as_str() {
            "ascii" => CqlType::Ascii,
            "bigint" => CqlType::Bigint,
            "blob" => CqlType::Blob,
            "boolean" => CqlType::Boolean,
            "counter" => CqlType::Counter,
            "date" => CqlType::Date,
            "decimal" => CqlType::Decimal,
            "double" => CqlType::Double,
            "duration" => CqlType::Duration,
            "float" => CqlType::Float,
            "inet" => CqlType::Inet,
            "int" => CqlType::Int,
            "smallint" => CqlType::Smallint,
            "text" | "varchar" => CqlType::Text,
            "time" => CqlType::Time,
            "timestamp" => CqlType::Timestamp,
            "timeuuid" => CqlType::Timeuuid,
            "tinyint" => CqlType::Tinyint,
            "uuid" => CqlType::Uuid,
            "varint" => CqlType::Varint,
            _ => return None,
        })
    }
}

/// Renders the type as `system_schema.columns.type` shows it and the driver's type parser
/// reads it: lower-case native names, `frozen<...>` around every frozen collection or UDT and
/// around every tuple (nested ones included, as Scylla spells them), and bare UDT names
/// without the keyspace.
impl fmt::Display for CqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.native_name() {
            return f.write_str(name);
        }
        // Scylla's `cql3_type_name`: `frozen<...>` around every value that is not multi-cell,
        // tuples included (a tuple is never multi-cell).
        let frozen = match self {
            CqlType::List { frozen, .. }
            | CqlType::Set { frozen, .. }
            | CqlType::Map { frozen, .. }
            | CqlType::Udt { frozen, .. } => *frozen,
            CqlType::Tuple(_) => true,
            _ => false,
        };
        if frozen {
            f.write_str("frozen<")?;
        }
        match self {
            CqlType::List { elem, .. } => write!(f, "list<{elem}>")?,
            CqlType::Set { elem, .. } => write!(f, "set<{elem}>")?,
            CqlType::Map { key, value, .. } => write!(f, "map<{key}, {value}>")?,
            CqlType::Tuple(elems) => {
                f.write_str("tuple<")?;
                for (i, e) in elems.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{e}")?;
                }
                f.write_str(">")?;
            }
            CqlType::Udt { def, .. } => write_identifier(f, &def.name)?,
            _ => unreachable!("native types are handled above"),
        }
        if frozen {
            f.write_str(">")?;
        }
        Ok(())
    }
}

impl CqlType {
    /// The type with every user type replaced by the tuple of its field types (nested ones
    /// too), as ScyllaDB records a dropped column's type (`expand_user_type`,
    /// db/schema_tables.cc: "we never store actual UDT names in dropped column types").
    pub fn expand_user_types(&self) -> CqlType {
        match self {
            CqlType::Udt { def, .. } => CqlType::Tuple(
                def.fields
                    .iter()
                    .map(|(_, t)| t.expand_user_types())
                    .collect(),
            ),
            CqlType::Tuple(elems) => {
                CqlType::Tuple(elems.iter().map(CqlType::expand_user_types).collect())
            }
            CqlType::List { elem, frozen } => CqlType::List {
                elem: Box::new(elem.expand_user_types()),
                frozen: *frozen,
            },
            CqlType::Set { elem, frozen } => CqlType::Set {
                elem: Box::new(elem.expand_user_types()),
                frozen: *frozen,
            },
            CqlType::Map { key, value, frozen } => CqlType::Map {
                key: Box::new(key.expand_user_types()),
                value: Box::new(value.expand_user_types()),
                frozen: *frozen,
            },
            other => other.clone(),
        }
    }
}

/// Writes an identifier the way CQL prints it: bare when it is a lower-case word, otherwise
/// double-quoted with inner quotes doubled.
pub fn write_identifier(f: &mut impl fmt::Write, name: &str) -> fmt::Result {
    if is_plain_identifier(name) {
        f.write_str(name)
    } else {
        f.write_char('"')?;
        for c in name.chars() {
            if c == '"' {
                f.write_str("\"\"")?;
            } else {
                f.write_char(c)?;
            }
        }
        f.write_char('"')
    }
}

/// Whether `name` can be written without quotes (lower-case letters, digits, `_`, not
/// starting with a digit).
pub fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Quotes an identifier for use in CQL text when needed (`"MyCol"`, `"cdc$time"`).
pub fn quote_identifier(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 2);
    write_identifier(&mut s, name).expect("writing to a String cannot fail");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_types_as_system_schema_does() {
        let ut = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![("a".into(), CqlType::Int)],
        });
        let t = CqlType::Map {
            key: Box::new(CqlType::Int),
            value: Box::new(CqlType::Udt {
                def: ut.clone(),
                frozen: true,
            }),
            frozen: true,
        };
        assert_eq!(t.to_string(), "frozen<map<int, frozen<ut>>>");
        let l = CqlType::List {
            elem: Box::new(CqlType::Text),
            frozen: false,
        };
        assert_eq!(l.to_string(), "list<text>");
        // A tuple is never multi-cell: always frozen (Scylla's cql3_type_name).
        assert_eq!(
            CqlType::Tuple(vec![CqlType::Int, CqlType::Text]).to_string(),
            "frozen<tuple<int, text>>"
        );
        assert_eq!(
            CqlType::List {
                elem: Box::new(CqlType::Tuple(vec![CqlType::Int])),
                frozen: false
            }
            .to_string(),
            "list<frozen<tuple<int>>>"
        );
        assert_eq!(
            CqlType::Udt {
                def: ut,
                frozen: false
            }
            .to_string(),
            "ut"
        );
    }

    #[test]
    fn user_types_expand_to_tuples_of_their_fields() {
        let inner = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "inner".into(),
            fields: vec![("x".into(), CqlType::Int)],
        });
        let outer = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "outer".into(),
            fields: vec![
                ("a".into(), CqlType::Text),
                (
                    "b".into(),
                    CqlType::Udt {
                        def: inner,
                        frozen: true,
                    },
                ),
            ],
        });
        let t = CqlType::Map {
            key: Box::new(CqlType::Int),
            value: Box::new(CqlType::Udt {
                def: outer.clone(),
                frozen: true,
            }),
            frozen: false,
        };
        assert_eq!(
            t.expand_user_types().to_string(),
            "map<int, frozen<tuple<text, frozen<tuple<int>>>>>"
        );
        // A non-frozen user type becomes a (frozen) tuple too.
        let u = CqlType::Udt {
            def: outer,
            frozen: false,
        };
        assert_eq!(
            u.expand_user_types().to_string(),
            "frozen<tuple<text, frozen<tuple<int>>>>"
        );
    }

    #[test]
    fn quotes_identifiers_only_when_needed() {
        assert_eq!(quote_identifier("pk"), "pk");
        assert_eq!(quote_identifier("cdc$time"), "\"cdc$time\"");
        assert_eq!(quote_identifier("MyCol"), "\"MyCol\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_identifier("1a"), "\"1a\"");
    }
}
