//! Materialized view maintenance: every base write updates the base's views synchronously,
//! and `CREATE MATERIALIZED VIEW` builds a view from the rows its base already has.
//!
//! Scylla computes view updates from the base row before and after a write
//! (`db/view/view.cc`, `view_updates::generate_update`): a view row exists exactly while
//! its base row is live, passes the view's `WHERE` clause and has every view key column
//! set; its cells are the base cells with their write timestamps and TTLs; a change of a
//! view key column moves the view row (the old one deleted, the new one created). Its row
//! liveness is that of the base column in the view key when the view has one
//! (`compute_row_marker`), otherwise that of the whole base row, which Scylla keeps with
//! "virtual columns" for the unselected base columns (`create_virtual_column`).
//!
//! The embedded cluster does the same with the base table's lock held: the view rows that
//! the touched base rows derived before the write are removed outright, and the rows they
//! derive after it are written. The view's data is therefore always exactly what its base
//! derives (there are no view tombstones to outlive), and expiring base cells expire the
//! view's copies at the same second because the copies carry the same expiry.

use std::sync::Arc;

use crate::schema::view::ViewInfo;
use crate::schema::{ColumnKind, TableDef};
use crate::storage::{
    CellUpdate, CellView, ClusteringKey, ColumnId, ElementUpdate, Liveness, Now, PartitionKey,
    PartitionMutation, PartitionStart, PartitionView, RowUpdate, RowView, TableData,
};
use crate::types::value::Value;

use super::Database;
use super::restrictions::make_partition_key;

/// One view row derived from one base row.
struct Derived {
    /// The view partition.
    key: PartitionKey,
    /// The view clustering key.
    clustering: Vec<Value>,
    /// The whole row: marker and cells.
    row: RowUpdate,
}

/// A view with its base, ready to derive rows.
struct ViewOf<'a> {
    view: &'a TableDef,
    info: &'a ViewInfo,
    base: &'a TableDef,
}

impl ViewOf<'_> {
    /// The value of base column `name` in a base row.
    fn base_value(&self, pv: &PartitionView<'_>, row: &RowView<'_>, name: &str) -> Option<Value> {
        let c = self.base.column(name)?;
        let position = usize::try_from(c.position).unwrap_or(0);
        match c.kind {
            ColumnKind::PartitionKey => pv.key_values().get(position).cloned(),
            ColumnKind::Clustering => row.key().get(position).cloned(),
            ColumnKind::Static => None,
            ColumnKind::Regular => row.cell(ColumnId(c.id))?.to_value(&c.typ),
        }
    }

    /// The view row a live base row derives, if it derives one.
    fn derive(&self, pv: &PartitionView<'_>, row: &RowView<'_>) -> Option<Derived> {
        for (column, expected) in &self.info.filters {
            let value = self.base_value(pv, row, column)?;
            if value.to_bytes()[..] != expected[..] {
                return None;
            }
        }
        let mut pk = Vec::new();
        for c in self.view.partition_key() {
            pk.push(self.base_value(pv, row, &c.name)?);
        }
        let mut clustering = Vec::new();
        for c in self.view.clustering_key() {
            clustering.push(self.base_value(pv, row, &c.name)?);
        }
        // A view partition key that is one empty value cannot be stored (Scylla skips it).
        let key = make_partition_key(self.view, pk).ok()?;
        let mut out = RowUpdate {
            marker: Some(self.liveness(row)?),
            ..RowUpdate::default()
        };
        for vc in self.view.value_columns() {
            let Some(bc) = self.base.column(&vc.name) else {
                continue;
            };
            let Some(cell) = row.cell(ColumnId(bc.id)) else {
                continue;
            };
            let update = match cell {
                CellView::Atomic { value, ts, ttl } => CellUpdate::Atomic {
                    ts,
                    ttl,
                    value: Some(value.clone()),
                },
                CellView::Collection(c) => CellUpdate::Collection {
                    tombstone: None,
                    elements: c
                        .iter()
                        .map(|e| ElementUpdate {
                            key: e.key.clone(),
                            ts: e.ts,
                            ttl: e.ttl,
                            value: Some(e.value.clone()),
                        })
                        .collect(),
                },
                // Views of counter tables are refused at CREATE.
                CellView::Counter { .. } => continue,
            };
            out.set_cell(ColumnId(vc.id), update);
        }
        Some(Derived {
            key,
            clustering,
            row: out,
        })
    }

    /// The view row's marker: the liveness of the base column in the view key, if the view
    /// has one, else one that lives exactly as long as the base row (its latest timestamp,
    /// and no TTL unless everything live in the base row expires, then the last expiry).
    fn liveness(&self, row: &RowView<'_>) -> Option<Liveness> {
        let key_regular = self
            .view
            .columns
            .iter()
            .filter(|c| c.kind.is_primary_key())
            .filter_map(|c| self.base.column(&c.name))
            .find(|c| c.kind == ColumnKind::Regular);
        if let Some(c) = key_regular {
            return match row.cell(ColumnId(c.id))? {
                CellView::Atomic { ts, ttl, .. } => Some(Liveness { ts, ttl }),
                _ => None,
            };
        }
        let mut lives: Vec<(i64, Option<u32>)> = Vec::new();
        if let Some(m) = row.marker() {
            lives.push((m.ts, m.ttl));
        }
        for (_, cell) in row.cells() {
            match cell {
                CellView::Atomic { ts, ttl, .. } => lives.push((ts, ttl)),
                CellView::Counter { ts, .. } => lives.push((ts, None)),
                CellView::Collection(c) => lives.extend(c.iter().map(|e| (e.ts, e.ttl))),
            }
        }
        let ts = lives.iter().map(|(ts, _)| *ts).max()?;
        let ttl = if lives.iter().any(|(_, ttl)| ttl.is_none()) {
            None
        } else {
            lives.iter().filter_map(|(_, ttl)| *ttl).max()
        };
        Some(Liveness { ts, ttl })
    }

    /// The view rows derived from the base rows of `m`'s partition that `m` can touch
    /// (every row when it deletes ranges or the partition).
    fn derive_touched(&self, data: &TableData, m: &PartitionMutation, now: Now) -> Vec<Derived> {
        let Some(pv) = data.partition(m.key.token, &m.key.bytes, now) else {
            return Vec::new();
        };
        if m.partition_tombstone.is_some() || !m.range_tombstones.is_empty() {
            return pv
                .rows(&[crate::storage::ClusteringRange::full()], false, None)
                .filter_map(|r| self.derive(&pv, &r))
                .collect();
        }
        m.rows
            .iter()
            .filter_map(|(ck, _)| pv.row(ck.values()))
            .filter_map(|r| self.derive(&pv, &r))
            .collect()
    }
}

/// Replaces view rows: removes those derived before, writes those derived after.
fn replace(view: &mut TableData, before: &[Derived], after: &[Derived], now: Now) {
    for d in before {
        view.remove_row(d.key.token, &d.key.bytes, &d.clustering);
    }
    for d in after {
        let mut m = PartitionMutation::new(d.key.clone());
        *m.row_mut(&ClusteringKey::new(d.clustering.clone())) = d.row.clone();
        view.apply(&m, now);
    }
}

impl Database {
    /// The views of `base` in the current schema, with their definitions.
    fn views_of(&self, base: &TableDef) -> Vec<Arc<TableDef>> {
        let schema = self.schema();
        let Some(ks) = schema.keyspace(&base.keyspace) else {
            return Vec::new();
        };
        ks.views_of(&base.name)
            .filter(|v| v.view_info().is_some_and(|i| i.base_id == base.id))
            .cloned()
            .collect()
    }

    /// Applies one base mutation with the base table's lock held, and updates the base's
    /// views (lock order: base, then view).
    pub(super) fn apply_base(
        &self,
        base: &TableDef,
        data: &mut TableData,
        m: &PartitionMutation,
        now: Now,
    ) {
        let views = self.views_of(base);
        if views.is_empty() {
            data.apply(m, now);
            return;
        }
        // The base's current definition (the write may have been planned against an older
        // one); its columns are what the views name.
        let schema = self.schema();
        let current = schema.table_by_id(base.id).cloned();
        let base = current.as_deref().unwrap_or(base);
        let plans: Vec<ViewOf<'_>> = views
            .iter()
            .filter_map(|v| {
                Some(ViewOf {
                    view: v,
                    info: v.view_info()?,
                    base,
                })
            })
            .collect();
        let before: Vec<Vec<Derived>> = plans
            .iter()
            .map(|p| p.derive_touched(data, m, now))
            .collect();
        data.apply(m, now);
        for (p, before) in plans.iter().zip(&before) {
            let after = p.derive_touched(data, m, now);
            if let Some(store) = self.table_store(p.view.id) {
                replace(&mut store.data.write(), before, &after, now);
            }
        }
    }

    /// Builds a new view from the rows its base has (Scylla's view builder), with the base
    /// table's lock held so that no write slips between the scan and the view.
    pub(super) fn build_view(&self, view: &TableDef) {
        let schema = self.schema();
        let Some(info) = view.view_info() else {
            return;
        };
        let (Some(base), Some(view_store)) =
            (schema.table_by_id(info.base_id), self.table_store(view.id))
        else {
            return;
        };
        let Some(base_store) = self.table_store(base.id) else {
            return;
        };
        let plan = ViewOf { view, info, base };
        let now = self.now();
        let data = base_store.data.write();
        let mut rows = Vec::new();
        for pv in data.partitions(PartitionStart::First, now) {
            rows.extend(
                pv.rows(&[crate::storage::ClusteringRange::full()], false, None)
                    .filter_map(|r| plan.derive(&pv, &r)),
            );
        }
        replace(&mut view_store.data.write(), &[], &rows, now);
    }
}
