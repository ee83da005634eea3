//! Building blocks of RESULT bodies, shared by the streaming Rows writer and the response
//! encoder above it: result kinds, metadata flags, column specs ([`ColumnSpec`],
//! [`ResultMetadata`], [`PreparedMetadata`]) and the writers of CQL types and `<metadata>`.

use bytes::BytesMut;

use crate::types::CqlType;

use super::wire::{put_bytes, put_int, put_short, put_string};

/// RESULT kinds (spec §4.2.5).
pub(crate) mod result_kind {
    /// Void
    pub(crate) const VOID: i32 = 0x0001;
    /// Rows
    pub(crate) const ROWS: i32 = 0x0002;
    /// Set_keyspace
    pub(crate) const SET_KEYSPACE: i32 = 0x0003;
    /// Prepared
    pub(crate) const PREPARED: i32 = 0x0004;
    /// Schema_change
    pub(crate) const SCHEMA_CHANGE: i32 = 0x0005;
}

/// Metadata flag: one keyspace/table pair for all columns.
pub(crate) const META_GLOBAL_TABLE_SPEC: i32 = 0x0001;
/// Rows metadata flag: more pages follow, a paging state is present.
pub(crate) const META_HAS_MORE_PAGES: i32 = 0x0002;
/// Rows metadata flag: no column specs (asked for with skip-metadata, or PREPARED of a
/// non-SELECT).
pub(crate) const META_NO_METADATA: i32 = 0x0004;

/// A column of a result, or a bind variable of a prepared statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColumnSpec {
    /// Keyspace of the table the column (or variable) belongs to.
    pub keyspace: String,
    /// Table name.
    pub table: String,
    /// Column name, alias, or bind-marker name.
    pub name: String,
    /// CQL type (sent as an `[option]`; `text` is id 0x000D "varchar", as Scylla sends it).
    pub typ: CqlType,
}

impl ColumnSpec {
    /// A column spec.
    pub(crate) fn new(
        keyspace: impl Into<String>,
        table: impl Into<String>,
        name: impl Into<String>,
        typ: CqlType,
    ) -> Self {
        ColumnSpec {
            keyspace: keyspace.into(),
            table: table.into(),
            name: name.into(),
            typ,
        }
    }
}

/// Column specs of a ROWS result (and of the result part of PREPARED).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResultMetadata {
    /// Columns in result order.
    pub columns: Vec<ColumnSpec>,
}

/// Bind-variable metadata of a PREPARED result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PreparedMetadata {
    /// Whether the statement is conditional (LWT); flagged only if the client negotiated
    /// the LWT mark.
    pub lwt: bool,
    /// For each partition-key column in key order, the index of the bind variable holding
    /// it; empty unless every partition-key column is bound by `=`.
    pub pk_indexes: Vec<u16>,
    /// Bind variables in marker order.
    pub variables: Vec<ColumnSpec>,
}

/// Writes a CQL type as an `[option]` (spec §4.2.5.2).
pub(crate) fn put_type(out: &mut BytesMut, typ: &CqlType) {
    let native = |out: &mut BytesMut, id: u16| put_short(out, id);
    match typ {
        CqlType::Ascii => native(out, 0x0001),
        CqlType::Bigint => native(out, 0x0002),
        CqlType::Blob => native(out, 0x0003),
        CqlType::Boolean => native(out, 0x0004),
        CqlType::Counter => native(out, 0x0005),
        CqlType::Decimal => native(out, 0x0006),
        CqlType::Double => native(out, 0x0007),
        CqlType::Float => native(out, 0x0008),
        CqlType::Int => native(out, 0x0009),
        CqlType::Timestamp => native(out, 0x000B),
        CqlType::Uuid => native(out, 0x000C),
        CqlType::Text => native(out, 0x000D),
        CqlType::Varint => native(out, 0x000E),
        CqlType::Timeuuid => native(out, 0x000F),
        CqlType::Inet => native(out, 0x0010),
        CqlType::Date => native(out, 0x0011),
        CqlType::Time => native(out, 0x0012),
        CqlType::Smallint => native(out, 0x0013),
        CqlType::Tinyint => native(out, 0x0014),
        CqlType::Duration => native(out, 0x0015),
        CqlType::List { elem, .. } => {
            put_short(out, 0x0020);
            put_type(out, elem);
        }
        CqlType::Map { key, value, .. } => {
            put_short(out, 0x0021);
            put_type(out, key);
            put_type(out, value);
        }
        CqlType::Set { elem, .. } => {
            put_short(out, 0x0022);
            put_type(out, elem);
        }
        CqlType::Udt { def, .. } => {
            put_short(out, 0x0030);
            put_string(out, &def.keyspace);
            put_string(out, &def.name);
            let n = u16::try_from(def.fields.len()).unwrap_or(u16::MAX);
            put_short(out, n);
            for (name, t) in def.fields.iter().take(usize::from(n)) {
                put_string(out, name);
                put_type(out, t);
            }
        }
        CqlType::Tuple(elems) => {
            put_short(out, 0x0031);
            let n = u16::try_from(elems.len()).unwrap_or(u16::MAX);
            put_short(out, n);
            for t in elems.iter().take(usize::from(n)) {
                put_type(out, t);
            }
        }
    }
}

/// The keyspace/table shared by every column, if there is at least one column and they
/// all share it (then the global-table-spec flag is used, as Cassandra and Scylla do).
pub(super) fn global_table_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

/// A count as an `[int]`, saturated (counts never come near `i32::MAX` in practice).
pub(super) fn count_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Writes the column specs (after the flags, counts and paging state): the global table
/// spec or a keyspace/table per column, then each name and type.
pub(super) fn put_col_specs(
    out: &mut BytesMut,
    columns: &[ColumnSpec],
    global: Option<(&str, &str)>,
) {
    if let Some((ks, table)) = global {
        put_string(out, ks);
        put_string(out, table);
    }
    for c in columns {
        if global.is_none() {
            put_string(out, &c.keyspace);
            put_string(out, &c.table);
        }
        put_string(out, &c.name);
        put_type(out, &c.typ);
    }
}

/// Writes ROWS-style `<metadata>` (flags, column count, paging state, specs).
pub(crate) fn put_result_metadata(
    out: &mut BytesMut,
    meta: &ResultMetadata,
    paging_state: Option<&[u8]>,
    skip_metadata: bool,
) {
    let global = global_table_spec(&meta.columns);
    let mut flags = 0;
    if skip_metadata {
        flags |= META_NO_METADATA;
    } else if global.is_some() {
        flags |= META_GLOBAL_TABLE_SPEC;
    }
    if paging_state.is_some() {
        flags |= META_HAS_MORE_PAGES;
    }
    put_int(out, flags);
    put_int(out, count_i32(meta.columns.len()));
    if let Some(ps) = paging_state {
        put_bytes(out, Some(ps));
    }
    if !skip_metadata {
        put_col_specs(out, &meta.columns, global);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_spec_only_when_all_columns_share_a_table() {
        let a = ColumnSpec::new("ks", "t", "a", CqlType::Int);
        let b = ColumnSpec::new("ks", "u", "b", CqlType::Int);
        assert_eq!(
            global_table_spec(&[a.clone(), a.clone()]),
            Some(("ks", "t"))
        );
        assert_eq!(global_table_spec(&[a, b]), None);
        assert_eq!(global_table_spec(&[]), None);
    }

    #[test]
    fn text_is_sent_as_varchar() {
        let mut out = BytesMut::new();
        put_type(&mut out, &CqlType::Text);
        put_type(&mut out, &CqlType::Ascii);
        assert_eq!(&out[..], &[0, 0x0D, 0, 0x01]);
    }
}
