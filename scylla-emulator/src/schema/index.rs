//! Secondary indexes of a table, as ScyllaDB 2025.x keeps them in its schema
//! (`index_metadata`, schema/schema.hh; `index/secondary_index.cc`).
//!
//! An [`IndexDef`] belongs to its base [`super::TableDef`] (Scylla's `schema::indices()`):
//! its name, the indexed column and what of it is indexed ([`IndexTarget`]), whether it is
//! *local* (`CREATE INDEX ON t ((pk), v)`: its view is partitioned like the base) and the
//! `target` option exactly as `system_schema.indexes.options` shows it. Scylla backs every
//! such index with a materialized view named `<index>_index` (`index_table_name`,
//! index/secondary_index_manager.cc); [`IndexDef::view_columns`] lays that view out as
//! `create_index_statement::create_view_for_index` builds it.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::types::CqlType;

use super::{ColumnDef, ColumnKind, TableDef, TableKind, TableOptions};

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

    /// The backing view as a table definition: its non-virtual columns
    /// (`system_schema.columns`) and properties.
    pub(crate) fn view_table(&self, base: &TableDef) -> TableDef {
        let columns = self
            .view_columns(base)
            .into_iter()
            .filter(|(_, c)| *c != Computed::Virtual)
            .map(|(c, _)| c)
            .collect();
        let mut t = TableDef::new(
            base.keyspace.clone(),
            self.view_name(),
            columns,
            self.view_options.clone(),
            TableKind::User,
        );
        t.id = self.view_id;
        t
    }

    /// Whether the index depends on a base column (`index::depends_on`).
    pub(crate) fn depends_on(&self, column: &str) -> bool {
        self.column == column
    }

    /// The columns of the backing view, in its key order then by name
    /// (`create_view_for_index`): for a global index the indexed value (or the computed
    /// collection element `coll_value`) as partition key, then the base token `idx_token`,
    /// the rest of the base partition key and the base clustering key (not for a static
    /// column), then `keys_for_values_idx` for a values index; a local index has the base
    /// partition key, then the indexed column and the base clustering key. An index on a
    /// key column also carries every regular base column as a virtual column. Each
    /// column comes with whether it is computed (`system_schema.computed_columns`).
    pub(crate) fn view_columns(&self, base: &TableDef) -> Vec<(ColumnDef, Computed)> {
        let mut out: Vec<(ColumnDef, Computed)> = Vec::new();
        let Some(target) = base.column(&self.column) else {
            return out;
        };
        let mut push = |name: String, typ: CqlType, kind: ColumnKind, computed: Computed| {
            let position = match kind {
                ColumnKind::PartitionKey | ColumnKind::Clustering => {
                    out.iter().filter(|(c, _)| c.kind == kind).count() as i32
                }
                _ => -1,
            };
            out.push((
                ColumnDef {
                    name,
                    typ,
                    kind,
                    position,
                    order: super::ClusteringOrder::Asc,
                    id: 0,
                },
                computed,
            ));
        };
        let free_name = |root: &str| {
            // `get_available_column_name`: root, root_1, root_2, ...
            let mut name = root.to_string();
            let mut i = 0;
            while base.column(&name).is_some() {
                i += 1;
                name = format!("{root}_{i}");
            }
            name
        };
        if self.local {
            for c in base.partition_key() {
                push(
                    c.name.clone(),
                    c.typ.clone(),
                    ColumnKind::PartitionKey,
                    Computed::No,
                );
            }
            push(
                target.name.clone(),
                target.typ.clone(),
                ColumnKind::Clustering,
                Computed::No,
            );
        } else {
            match self.target {
                IndexTarget::Values => push(
                    target.name.clone(),
                    target.typ.clone(),
                    ColumnKind::PartitionKey,
                    Computed::No,
                ),
                t => {
                    let typ = match (&target.typ, t) {
                        (CqlType::Map { key, .. }, IndexTarget::Keys) => (**key).clone(),
                        (CqlType::Set { elem, .. }, _) => (**elem).clone(),
                        (CqlType::Map { value, .. }, IndexTarget::CollectionValues) => {
                            (**value).clone()
                        }
                        (CqlType::List { elem, .. }, _) => (**elem).clone(),
                        (CqlType::Map { key, value, .. }, _) => {
                            CqlType::Tuple(vec![(**key).clone(), (**value).clone()])
                        }
                        (other, _) => other.clone(),
                    };
                    push(
                        free_name("coll_value"),
                        typ,
                        ColumnKind::PartitionKey,
                        Computed::Collection(t, target.name.clone()),
                    );
                }
            }
            push(
                free_name("idx_token"),
                CqlType::Bigint,
                ColumnKind::Clustering,
                Computed::Token,
            );
            for c in base.partition_key() {
                if c.name != target.name {
                    push(
                        c.name.clone(),
                        c.typ.clone(),
                        ColumnKind::Clustering,
                        Computed::No,
                    );
                }
            }
        }
        if target.kind != ColumnKind::Static {
            for c in base.clustering_key() {
                if c.name != target.name {
                    push(
                        c.name.clone(),
                        c.typ.clone(),
                        ColumnKind::Clustering,
                        Computed::No,
                    );
                }
            }
        }
        if !self.local && self.target == IndexTarget::CollectionValues {
            let key_type = match &target.typ {
                CqlType::Map { key, .. } => (**key).clone(),
                _ => CqlType::Timeuuid,
            };
            push(
                free_name("keys_for_values_idx"),
                key_type,
                ColumnKind::Clustering,
                Computed::Collection(IndexTarget::Keys, target.name.clone()),
            );
        }
        if target.kind.is_primary_key() {
            // `create_virtual_column`: every regular column, so that the view row lives
            // as long as the base row (db/view/view.cc); shown as a regular column.
            for c in base
                .columns
                .iter()
                .filter(|c| c.kind == ColumnKind::Regular)
            {
                push(
                    c.name.clone(),
                    c.typ.clone(),
                    ColumnKind::Regular,
                    Computed::Virtual,
                );
            }
        }
        out
    }
}

/// How a column of an index's view gets its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Computed {
    /// An ordinary column, copied from the base.
    No,
    /// The token of the base partition key (`token_column_computation`).
    Token,
    /// An element of the named collection (`collection_column_computation`).
    Collection(IndexTarget, String),
    /// A virtual column (`view_virtual_columns`): only its liveness is kept.
    Virtual,
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
