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
        let Some(target) = base.column(&self.column) else {
            return Vec::new();
        };
        let mut view = ViewLayout {
            base,
            columns: Vec::new(),
        };
        if self.local {
            view.local_partition_key(target);
        } else {
            view.global_partition_key(self.target, target);
        }
        if target.kind != ColumnKind::Static {
            view.base_clustering_key(target);
        }
        if !self.local && self.target == IndexTarget::CollectionValues {
            view.keys_for_values(target);
        }
        if target.kind.is_primary_key() {
            view.virtual_columns();
        }
        view.columns
    }
}

/// The columns of an index's backing view as they are laid out, in order.
struct ViewLayout<'a> {
    /// The indexed table.
    base: &'a TableDef,
    /// The columns so far, with how each gets its value.
    columns: Vec<(ColumnDef, Computed)>,
}

impl ViewLayout<'_> {
    /// Appends a column; a key column takes the next position of its key.
    fn push(&mut self, name: String, typ: CqlType, kind: ColumnKind, computed: Computed) {
        let position = match kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => {
                self.columns.iter().filter(|(c, _)| c.kind == kind).count() as i32
            }
            _ => -1,
        };
        self.columns.push((
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
    }

    /// Appends a base column as it is, in the view's role `kind`.
    fn push_base(&mut self, column: &ColumnDef, kind: ColumnKind, computed: Computed) {
        self.push(column.name.clone(), column.typ.clone(), kind, computed);
    }

    /// A name for a computed column that no base column has (`get_available_column_name`:
    /// root, root_1, root_2, ...).
    fn free_name(&self, root: &str) -> String {
        let mut name = root.to_string();
        let mut i = 0;
        while self.base.column(&name).is_some() {
            i += 1;
            name = format!("{root}_{i}");
        }
        name
    }

    /// A local index's key: the base partition key, then the indexed column.
    fn local_partition_key(&mut self, target: &ColumnDef) {
        let base = self.base;
        for c in base.partition_key() {
            self.push_base(c, ColumnKind::PartitionKey, Computed::No);
        }
        self.push_base(target, ColumnKind::Clustering, Computed::No);
    }

    /// A global index's key: the indexed value (or the computed collection element
    /// `coll_value`), then the base token `idx_token` and the rest of the base partition key.
    fn global_partition_key(&mut self, what: IndexTarget, target: &ColumnDef) {
        match what {
            IndexTarget::Values => self.push_base(target, ColumnKind::PartitionKey, Computed::No),
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
                self.push(
                    self.free_name("coll_value"),
                    typ,
                    ColumnKind::PartitionKey,
                    Computed::Collection(t, target.name.clone()),
                );
            }
        }
        self.push(
            self.free_name("idx_token"),
            CqlType::Bigint,
            ColumnKind::Clustering,
            Computed::Token,
        );
        let base = self.base;
        for c in base.partition_key() {
            if c.name != target.name {
                self.push_base(c, ColumnKind::Clustering, Computed::No);
            }
        }
    }

    /// The base clustering key (but the indexed column), as clustering columns.
    fn base_clustering_key(&mut self, target: &ColumnDef) {
        let base = self.base;
        for c in base.clustering_key() {
            if c.name != target.name {
                self.push_base(c, ColumnKind::Clustering, Computed::No);
            }
        }
    }

    /// A values index's `keys_for_values_idx`: the key of the indexed element.
    fn keys_for_values(&mut self, target: &ColumnDef) {
        let key_type = match &target.typ {
            CqlType::Map { key, .. } => (**key).clone(),
            _ => CqlType::Timeuuid,
        };
        self.push(
            self.free_name("keys_for_values_idx"),
            key_type,
            ColumnKind::Clustering,
            Computed::Collection(IndexTarget::Keys, target.name.clone()),
        );
    }

    /// `create_virtual_column`: every regular column, so that the view row lives as long as
    /// the base row (db/view/view.cc); shown as a regular column.
    fn virtual_columns(&mut self) {
        let base = self.base;
        for c in base
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Regular)
        {
            self.push_base(c, ColumnKind::Regular, Computed::Virtual);
        }
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
