//! Kafka Connect schemas as the connector builds them, and their JSON form as
//! `JsonConverter` writes it with `schemas.enable=true`.
//!
//! The schema of a column follows `ScyllaSchema.computeColumnSchema` (advanced format) and
//! `ScyllaSchemaLegacy.computeColumnSchema` (legacy format); the envelope follows
//! `ScyllaSchema.computeDataCollectionSchema` / `ScyllaSchemaLegacy`, Debezium's `Envelope`
//! and `AbstractSourceInfoStructMaker` (Debezium 2.7.4, the connector's version) with
//! `ScyllaSourceInfoStructMaker`'s two fields. A schema's JSON lists its keys in the order
//! of `JsonConverter.asJsonSchema`: `type`, `items`/`fields`, `optional`, `name`,
//! `version`, `parameters`, `default`, then `field` for a struct's field.

use scylla::frame::response::result::{CollectionType, ColumnType, NativeType};

use super::json;

/// A Kafka Connect schema (the subset the connector uses).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Connect {
    /// A primitive type, possibly a logical type (`name` with version 1).
    Primitive {
        typ: &'static str,
        optional: bool,
        logical: Option<&'static str>,
    },
    /// Debezium's `io.debezium.data.Enum` string (optional, with a default).
    Enum {
        allowed: &'static str,
        default: &'static str,
    },
    /// An array.
    Array { items: Box<Connect>, optional: bool },
    /// A struct.
    Struct {
        name: Option<String>,
        version: Option<u32>,
        fields: Vec<(String, Connect)>,
        optional: bool,
    },
}

impl Connect {
    pub(crate) fn optional(typ: &'static str) -> Connect {
        Connect::Primitive {
            typ,
            optional: true,
            logical: None,
        }
    }

    pub(crate) fn required(typ: &'static str) -> Connect {
        Connect::Primitive {
            typ,
            optional: false,
            logical: None,
        }
    }

    /// Appends the schema's JSON; `field` is its name when it is a struct's field.
    pub(crate) fn write(&self, out: &mut Vec<u8>, field: Option<&str>) {
        out.extend_from_slice(b"{\"type\":");
        let (optional, name, version) = match self {
            Connect::Primitive {
                typ,
                optional,
                logical,
            } => {
                json::string(out, typ);
                (*optional, logical.map(str::to_owned), logical.map(|_| 1))
            }
            Connect::Enum { .. } => {
                out.extend_from_slice(b"\"string\"");
                (true, Some("io.debezium.data.Enum".to_owned()), Some(1))
            }
            Connect::Array { items, optional } => {
                out.extend_from_slice(b"\"array\",\"items\":");
                items.write(out, None);
                (*optional, None, None)
            }
            Connect::Struct {
                name,
                version,
                fields,
                optional,
            } => {
                out.extend_from_slice(b"\"struct\",\"fields\":[");
                for (i, (field_name, schema)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    schema.write(out, Some(field_name));
                }
                out.push(b']');
                (*optional, name.clone(), *version)
            }
        };
        out.extend_from_slice(if optional {
            b",\"optional\":true"
        } else {
            b",\"optional\":false"
        });
        if let Some(name) = name {
            out.extend_from_slice(b",\"name\":");
            json::string(out, &name);
        }
        if let Some(version) = version {
            out.extend_from_slice(b",\"version\":");
            json::int(out, i64::from(version));
        }
        if let Connect::Enum { allowed, default } = self {
            out.extend_from_slice(b",\"parameters\":{\"allowed\":");
            json::string(out, allowed);
            out.extend_from_slice(b"},\"default\":");
            json::string(out, default);
        }
        if let Some(field) = field {
            out.extend_from_slice(b",\"field\":");
            json::string(out, field);
        }
        out.push(b'}');
    }

    /// The schema's JSON, as a string.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out, None);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Debezium's `SchemaNameAdjuster.create()`: a valid Avro full name, each invalid character
/// (UTF-16 unit) replaced by `_`; a leading digit is kept after the `_` it is replaced by.
pub(crate) fn adjust_name(name: &str) -> String {
    let first_ok = |c: char| c.is_ascii_alphabetic() || c == '_';
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.chars().enumerate() {
        let ok = if i == 0 {
            first_ok(c)
        } else {
            first_ok(c) || c == '.' || c.is_ascii_digit()
        };
        if ok {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('_');
            }
            if i == 0 && c.is_ascii_digit() {
                out.push(c);
            }
        }
    }
    out
}

/// The schema of a value of a CQL type, as `ScyllaSchema.computeColumnSchema` builds it from
/// the type in the CDC log: every schema optional; a list or set (frozen or not: a
/// non-frozen list, `map<timeuuid, V>` in the log, is an array of `V`) an array; a map an
/// array of `{key, value}` structs named `<prefix>MapEntry_<K>_<V>`; a tuple a struct
/// `<prefix>Tuple_<T1>_<T2>…` of fields `field_0`, `field_1`, …; a UDT a struct
/// `<prefix>UDT_<name>` of its fields. `prefix` is `<logical>.<keyspace>.<table>.` for
/// value columns and empty for key columns (`computeColumnSchema(type)`).
///
/// Beyond the connector (which fails on them): a vector is an array of its element.
pub(crate) fn column_schema(typ: &ColumnType<'_>, prefix: &str) -> Connect {
    match typ {
        ColumnType::Native(n) => native_schema(n),
        ColumnType::Collection { typ, .. } => match typ {
            CollectionType::List(e) | CollectionType::Set(e) => Connect::Array {
                items: Box::new(column_schema(e, prefix)),
                optional: true,
            },
            CollectionType::Map(k, v) => Connect::Array {
                items: Box::new(Connect::Struct {
                    name: Some(format!(
                        "{prefix}MapEntry_{}_{}",
                        type_name(k),
                        type_name(v)
                    )),
                    version: None,
                    fields: vec![
                        ("key".to_owned(), column_schema(k, prefix)),
                        ("value".to_owned(), column_schema(v, prefix)),
                    ],
                    optional: false,
                }),
                optional: true,
            },
            _ => Connect::optional("string"),
        },
        ColumnType::Vector { typ, .. } => Connect::Array {
            items: Box::new(column_schema(typ, prefix)),
            optional: true,
        },
        ColumnType::Tuple(items) => Connect::Struct {
            name: Some(format!("{prefix}{}", type_name(typ))),
            version: None,
            fields: items
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("field_{i}"), column_schema(t, prefix)))
                .collect(),
            optional: true,
        },
        ColumnType::UserDefinedType { definition, .. } => Connect::Struct {
            name: Some(format!("{prefix}{}", type_name(typ))),
            version: None,
            fields: definition
                .field_types
                .iter()
                .map(|(name, t)| (name.to_string(), column_schema(t, prefix)))
                .collect(),
            optional: true,
        },
        _ => Connect::optional("string"),
    }
}

/// The schema of a native type (the same in both formats).
pub(crate) fn native_schema(n: &NativeType) -> Connect {
    let typ = match n {
        NativeType::Date => {
            return Connect::Primitive {
                typ: "int32",
                optional: true,
                logical: Some("org.apache.kafka.connect.data.Date"),
            };
        }
        NativeType::Timestamp => {
            return Connect::Primitive {
                typ: "int64",
                optional: true,
                logical: Some("org.apache.kafka.connect.data.Timestamp"),
            };
        }
        // The connector's comment: Connect's Time is in milliseconds, CQL's in nanoseconds.
        NativeType::Time | NativeType::BigInt | NativeType::Counter => "int64",
        NativeType::SmallInt => "int16",
        NativeType::TinyInt => "int8",
        NativeType::Blob => "bytes",
        NativeType::Boolean => "boolean",
        NativeType::Double => "double",
        NativeType::Float => "float",
        NativeType::Int => "int32",
        _ => "string",
    };
    Connect::optional(typ)
}

/// Whether the legacy format has the column (`ScyllaSchemaLegacy.isSupportedColumnSchema`:
/// not a collection, UDT or tuple; vectors, which the connector does not know, neither).
pub(crate) fn legacy_supported(typ: &ColumnType<'_>) -> bool {
    matches!(typ, ColumnType::Native(_))
}

/// `ScyllaSchema.generateTypeName`: the name of a nested type in struct names. Native
/// types are named as scylla-cdc-java's `CqlType` names the CDC log's types: `text` and
/// `varchar` both arrive as `VARCHAR` (the protocol has one code for both).
pub(crate) fn type_name(typ: &ColumnType<'_>) -> String {
    match typ {
        ColumnType::Native(n) => native_type_name(n).to_owned(),
        ColumnType::Collection { typ, .. } => match typ {
            CollectionType::List(e) => format!("List_{}", type_name(e)),
            CollectionType::Set(e) => format!("Set_{}", type_name(e)),
            CollectionType::Map(k, v) => format!("Map_{}_{}", type_name(k), type_name(v)),
            _ => "Unknown".to_owned(),
        },
        ColumnType::Vector { typ, .. } => format!("Vector_{}", type_name(typ)),
        ColumnType::Tuple(items) => {
            let mut s = "Tuple".to_owned();
            for t in items {
                s.push('_');
                s.push_str(&type_name(t));
            }
            s
        }
        ColumnType::UserDefinedType { definition, .. } => {
            format!("UDT_{}", definition.name.replace(['.', '-'], "_"))
        }
        _ => "Unknown".to_owned(),
    }
}

fn native_type_name(n: &NativeType) -> &'static str {
    match n {
        NativeType::Ascii => "ASCII",
        NativeType::Boolean => "BOOLEAN",
        NativeType::Blob => "BLOB",
        NativeType::Counter => "COUNTER",
        NativeType::Date => "DATE",
        NativeType::Decimal => "DECIMAL",
        NativeType::Double => "DOUBLE",
        NativeType::Duration => "DURATION",
        NativeType::Float => "FLOAT",
        NativeType::Int => "INT",
        NativeType::BigInt => "BIGINT",
        NativeType::Text => "VARCHAR",
        NativeType::Timestamp => "TIMESTAMP",
        NativeType::Inet => "INET",
        NativeType::SmallInt => "SMALLINT",
        NativeType::TinyInt => "TINYINT",
        NativeType::Time => "TIME",
        NativeType::Timeuuid => "TIMEUUID",
        NativeType::Uuid => "UUID",
        NativeType::Varint => "VARINT",
        _ => "Unknown",
    }
}

/// The `source` block's schema: `AbstractSourceInfoStructMaker.commonSchemaBuilder` of
/// Debezium 2.7.4 and `ScyllaSourceInfoStructMaker`'s `keyspace_name`, `table_name`.
pub(crate) fn source_schema() -> Connect {
    Connect::Struct {
        name: Some("com.scylladb.cdc.debezium.connector".to_owned()),
        version: None,
        fields: vec![
            ("version".to_owned(), Connect::required("string")),
            ("connector".to_owned(), Connect::required("string")),
            ("name".to_owned(), Connect::required("string")),
            ("ts_ms".to_owned(), Connect::required("int64")),
            (
                "snapshot".to_owned(),
                Connect::Enum {
                    allowed: "true,last,false,incremental",
                    default: "false",
                },
            ),
            ("db".to_owned(), Connect::required("string")),
            ("sequence".to_owned(), Connect::optional("string")),
            ("ts_us".to_owned(), Connect::optional("int64")),
            ("ts_ns".to_owned(), Connect::optional("int64")),
            ("keyspace_name".to_owned(), Connect::required("string")),
            ("table_name".to_owned(), Connect::required("string")),
        ],
        optional: false,
    }
}

/// Debezium's `TransactionMonitor.TRANSACTION_BLOCK_SCHEMA` (always null in the events).
pub(crate) fn transaction_schema() -> Connect {
    Connect::Struct {
        name: Some("event.block".to_owned()),
        version: Some(1),
        fields: vec![
            ("id".to_owned(), Connect::required("string")),
            ("total_order".to_owned(), Connect::required("int64")),
            (
                "data_collection_order".to_owned(),
                Connect::required("int64"),
            ),
        ],
        optional: true,
    }
}

/// The envelope: `source`, `before`, `after`, the payload key (advanced format with
/// `payload-key`), `op`, `ts_ms`, `transaction`, `ts_us`, `ts_ns`, named
/// `<logical>.<keyspace>.<table>.Envelope` (adjusted).
pub(crate) fn envelope_schema(
    name: String,
    before: Connect,
    after: Connect,
    payload_key: Option<(&str, Connect)>,
) -> Connect {
    let mut fields = vec![
        ("source".to_owned(), source_schema()),
        ("before".to_owned(), before),
        ("after".to_owned(), after),
    ];
    if let Some((key_name, key)) = payload_key {
        fields.push((key_name.to_owned(), key));
    }
    fields.extend([
        ("op".to_owned(), Connect::optional("string")),
        ("ts_ms".to_owned(), Connect::optional("int64")),
        ("transaction".to_owned(), transaction_schema()),
        ("ts_us".to_owned(), Connect::optional("int64")),
        ("ts_ns".to_owned(), Connect::optional("int64")),
    ]);
    Connect::Struct {
        name: Some(name),
        version: None,
        fields,
        optional: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_adjusted_as_debezium_does() {
        assert_eq!(adjust_name("MyCluster.ks.t"), "MyCluster.ks.t");
        assert_eq!(adjust_name("my-cluster.ks.t"), "my_cluster.ks.t");
        assert_eq!(adjust_name("1cluster.ks.t"), "_1cluster.ks.t");
        assert_eq!(adjust_name("a b.é"), "a_b._");
        assert_eq!(adjust_name(".x"), "_x");
        assert_eq!(adjust_name("a😀"), "a__");
    }

    /// The `snapshot` field as the connector README's `INSERT` example shows it (Debezium
    /// 2.7 added `incremental` to the allowed values), and the transaction block.
    #[test]
    fn source_and_transaction_schemas() {
        let source = source_schema().to_json();
        assert!(source.contains(
            r#"{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"true,last,false,incremental"},"default":"false","field":"snapshot"}"#
        ));
        assert!(source.starts_with(
            r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"version"},"#
        ));
        assert!(source.ends_with(
            r#"{"type":"string","optional":false,"field":"table_name"}],"optional":false,"name":"com.scylladb.cdc.debezium.connector"}"#
        ));
        assert_eq!(
            transaction_schema().to_json(),
            r#"{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":false,"field":"total_order"},{"type":"int64","optional":false,"field":"data_collection_order"}],"optional":true,"name":"event.block","version":1}"#
        );
    }
}
