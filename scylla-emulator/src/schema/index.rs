//! Secondary indexes of a table, as ScyllaDB 2025.x keeps them in its schema
//! (`index_metadata`, schema/schema.hh; `index/secondary_index.cc`).
//!
//! An [`IndexDef`] belongs to its base [`super::TableDef`] (Scylla's `schema::indices()`):
//! its name, the indexed column and what of it is indexed ([`IndexTarget`]), whether it is
//! *local* (`CREATE INDEX ON t ((pk), v)`: its view is partitioned like the base) and the
//! `target` option exactly as `system_schema.indexes.options` shows it. Scylla backs every
//! such index with a materialized view named `<index>_index` (`index_table_name`,
//! index/secondary_index_manager.cc); [`super::index_view`] lays that view out from the base
//! table.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::options::TableOptions;

/// Suffix of the name of an index's backing view (`index_table_name`).
pub(crate) const INDEX_VIEW_SUFFIX: &str = "_index";

/// What of a column an index indexes (`index_target::target_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IndexTarget {
    /// The value of a non-collection (or frozen collection) column.
    Values,
    /// The keys of a map, or the elements of a set (`keys(c)`).
    Keys,
    /// The values of a map or the elements of a list (`values(c)`).
    CollectionValues,
    /// The entries of a map (`entries(c)`).
    Entries,
}

impl IndexTarget {
    /// The function name of the target in CQL and in the `target` option (`keys`,
    /// `values`, `entries`), `None` for plain values.
    pub(crate) fn function(self) -> Option<&'static str> {
        match self {
            IndexTarget::Values => None,
            IndexTarget::Keys => Some("keys"),
            IndexTarget::CollectionValues => Some("values"),
            IndexTarget::Entries => Some("entries"),
        }
    }
}

/// A secondary index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IndexDef {
    /// Index name (unique in its keyspace).
    pub(crate) name: String,
    /// The indexed column.
    pub(crate) column: String,
    /// What of the column is indexed.
    pub(crate) target: IndexTarget,
    /// A local index: its view has the base's partition key.
    pub(crate) local: bool,
    /// The `target` option as Scylla serializes it (`serialize_targets`): the column name
    /// (quoted when CQL needs it), `keys(m)`, or `{"pk":["p"],"ck":["v"]}` for a local index.
    pub(crate) target_option: String,
    /// Id of the backing view (`system_schema.views.id`).
    pub(crate) view_id: Uuid,
    /// Properties of the backing view (the defaults of a table, with the keyspace's
    /// `tombstone_gc`).
    pub(crate) view_options: TableOptions,
}

impl IndexDef {
    /// The name of the backing view.
    pub(crate) fn view_name(&self) -> String {
        format!("{}{INDEX_VIEW_SUFFIX}", self.name)
    }

    /// `system_schema.indexes.kind`: CQL tables are compound, so `COMPOSITES`.
    pub(crate) fn kind(&self) -> &'static str {
        "COMPOSITES"
    }

    /// `system_schema.indexes.options`.
    pub(crate) fn options(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("target".to_string(), self.target_option.clone())])
    }

    /// The backing view's `where_clause`: `<column> IS NOT NULL` for a value index, empty for
    /// a collection index (`create_view_for_index`).
    pub(crate) fn where_clause(&self) -> String {
        if self.target == IndexTarget::Values {
            format!(
                "{} IS NOT NULL",
                crate::types::quote_identifier(&self.column)
            )
        } else {
            String::new()
        }
    }

    /// Whether the backing view is updated synchronously: the view of a local index is
    /// (tagged `synchronous_updates`, scylladb#16371).
    pub(crate) fn synchronous_updates(&self) -> bool {
        self.local
    }

    /// Whether the index depends on a base column (`index::depends_on`).
    pub(crate) fn depends_on(&self, column: &str) -> bool {
        self.column == column
    }
}

/// A JSON string literal (the local index's `target` option is JSON, as rapidjson prints it).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
