//! The materialized view that backs a secondary index (`<index>_index`), laid out from the
//! index's base table as `create_index_statement::create_view_for_index` builds it: its
//! columns, which of them are computed ([`Computed`]), and the view as a table definition.

use crate::types::CqlType;

use super::index::{IndexDef, IndexTarget};
use super::table::{ClusteringOrder, ColumnDef, ColumnKind, TableDef, TableKind};

impl IndexDef {
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
                    order: ClusteringOrder::Asc,
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
