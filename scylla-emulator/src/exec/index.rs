//! Reads through secondary indexes: whether a SELECT is answered by an index, and whether it
//! still needs `ALLOW FILTERING`, decided as ScyllaDB 2025.x decides it
//! (`cql3/restrictions/statement_restrictions.cc`: `index_supports_some_column`,
//! `process_partition_key_restrictions`, `process_clustering_columns_restrictions`,
//! `need_filtering`; `select_statement.cc` `check_needs_filtering`).
//!
//! Scylla reads an index's view to find the base rows whose indexed value matches, then
//! reads those rows, in the view's order. For the restrictions an index serves (`=` on a
//! value, `CONTAINS`, `CONTAINS KEY`, `m[k] =`) every matching view row has the same
//! partition key (the one indexed value), so the rows come in the order of the view's
//! clustering key: the base token, then the base partition key, then the base clustering
//! key for a global index (`idx_token` leads the view's clustering key precisely to keep
//! token order: `create_view_for_index`), the base clustering key within the one base
//! partition of a local index. That is the order of a scan of the base table, so the
//! embedded cluster answers an indexed query with the base-table scan and filters it would
//! run under `ALLOW FILTERING` (and pages, limits and resumes it the same way): the
//! index's contents are always those of the base table, through inserts, updates,
//! deletions of rows, ranges and partitions, and TTL expiry alike.

use crate::cql::{CompareOp, Relation};
use crate::frame::CqlError;
use crate::schema::index::IndexTarget;
use crate::schema::{ColumnKind, IndexDef, TableDef};
use crate::types::CqlType;

use super::binder::Binder;
use super::restrictions::{WhereMode, plan_where};

/// Scylla's refusal of a query that needs ALLOW FILTERING.
const FILTERING_MESSAGE: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

/// One single-column restriction, as the index check sees it (`expr::oper_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    In,
    Slice,
    Contains,
    ContainsKey,
    /// `m[k] = v`
    SubscriptEq,
    /// Anything no index serves (`m[k] > v`, `LIKE`, `IS NOT NULL`).
    Other,
}

/// Whether `index` serves `op` on its column (`index::supports_expression`,
/// `supports_subscript_expression`, index/secondary_index_manager.cc).
fn supports(index: &IndexDef, typ: &CqlType, op: Op) -> bool {
    match op {
        Op::Eq => index.target == IndexTarget::Values,
        Op::Contains => match typ {
            CqlType::Set { .. } => index.target == IndexTarget::Keys,
            CqlType::List { .. } | CqlType::Map { .. } => {
                index.target == IndexTarget::CollectionValues
            }
            _ => false,
        },
        Op::ContainsKey => matches!(typ, CqlType::Map { .. }) && index.target == IndexTarget::Keys,
        Op::SubscriptEq => index.target == IndexTarget::Entries,
        _ => false,
    }
}

/// The restrictions of one column.
struct ColumnPreds<'t> {
    column: usize,
    kind: ColumnKind,
    typ: &'t CqlType,
    ops: Vec<Op>,
}

/// What planning a SELECT's WHERE clause should do about indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexDecision {
    /// No index serves the query: plan it as written.
    NotUsed,
    /// The query is answered through the named index and needs no ALLOW FILTERING: plan
    /// it as a filtered scan of the base table (the same rows, in the same order).
    Used(String),
}

/// Decides whether a SELECT on `table` with `relations` reads through one of its indexes.
/// Refuses what Scylla refuses when an index is involved: a query that would still need
/// filtering without `ALLOW FILTERING`, or an index read with `IN` on the partition key.
pub(crate) fn decide(
    table: &TableDef,
    relations: &[Relation],
    allow_filtering: bool,
) -> Result<IndexDecision, CqlError> {
    if table.indexes.is_empty() {
        return Ok(IndexDecision::NotUsed);
    }
    let q = QueryShape::of(table, relations);
    if !q.uses_index(allow_filtering)? {
        return Ok(IndexDecision::NotUsed);
    }
    if !allow_filtering && q.pk_has_in {
        return Err(CqlError::invalid(
            "Index cannot be used if the partition key is restricted with IN clause. This query would require filtering instead.",
        ));
    }
    if q.needs_filtering() && !allow_filtering {
        return Err(CqlError::invalid(FILTERING_MESSAGE));
    }
    Ok(match q.best_index(true) {
        Some(i) => IndexDecision::Used(i.name.clone()),
        None => IndexDecision::NotUsed,
    })
}

/// What a WHERE clause restricts, as Scylla's `statement_restrictions` sees it when it
/// decides on an index.
struct QueryShape<'t> {
    /// The table.
    table: &'t TableDef,
    /// The restricted columns with their operators, in WHERE-clause order.
    preds: Vec<ColumnPreds<'t>>,
    /// Whether a relation is on `token(...)`.
    has_token: bool,
    /// Whether a relation is multi-column.
    has_multi_column: bool,
    /// Partition-key columns of the table.
    pk_size: usize,
    /// Restricted partition-key columns.
    npart: usize,
    /// Whether every partition-key relation is `=`.
    pk_all_eq: bool,
    /// Whether a partition-key relation is `IN`.
    pk_has_in: bool,
    /// Whether some partition-key column is not restricted.
    pk_unrestricted_components: bool,
    /// A local index serves only a query that gives its whole partition key by `=`.
    allow_local: bool,
    /// Whether an index serves a partition-key column's relations.
    pk_index: bool,
    /// Whether an index serves a clustering column's relations.
    ck_index: bool,
    /// Whether an index serves a regular column's relations.
    regular_index: bool,
    /// Restricted clustering columns.
    ck_restricted: usize,
    /// Restricted non-primary-key columns.
    nonpk: usize,
    /// Whether the clustering restrictions are more than a base-table read serves.
    ck_needs_filtering: bool,
    /// Whether the partition-key restrictions need filtering.
    pk_needs_filtering: bool,
}

impl<'t> QueryShape<'t> {
    /// The shape of `relations` on `table`.
    fn of(table: &'t TableDef, relations: &[Relation]) -> QueryShape<'t> {
        let (preds, has_token, has_multi_column) = column_preds(table, relations);
        let pk_size = table.partition_key().count();
        let pk = || preds.iter().filter(|p| p.kind == ColumnKind::PartitionKey);
        let npart = pk().count();
        let pk_all_eq = pk().all(|p| p.ops.iter().all(|o| *o == Op::Eq));
        let pk_has_in = pk().any(|p| p.ops.contains(&Op::In));
        let pk_has_slice = pk().any(|p| p.ops.iter().any(|o| !matches!(o, Op::Eq | Op::In)));
        let pk_unrestricted_components = npart < pk_size;
        let mut q = QueryShape {
            table,
            has_token,
            has_multi_column,
            pk_size,
            npart,
            pk_all_eq,
            pk_has_in,
            pk_unrestricted_components,
            allow_local: !pk_unrestricted_components && pk_all_eq,
            pk_index: false,
            ck_index: false,
            regular_index: false,
            ck_restricted: 0,
            nonpk: 0,
            ck_needs_filtering: false,
            pk_needs_filtering: npart > 0
                && !has_token
                && (pk_unrestricted_components || pk_has_slice),
            preds,
        };
        let served_in = |kind| q.group(kind).any(|p| q.served(p).is_some());
        let (pk_index, ck_index, regular_index) = (
            !has_token && served_in(ColumnKind::PartitionKey),
            served_in(ColumnKind::Clustering),
            served_in(ColumnKind::Regular),
        );
        q.pk_index = pk_index;
        q.ck_index = ck_index;
        q.regular_index = regular_index;
        q.ck_restricted = q.group(ColumnKind::Clustering).count();
        q.nonpk = q.group(ColumnKind::Regular).count();
        q.ck_needs_filtering = !has_multi_column && q.clustering_prefix() < q.ck_restricted;
        q
    }

    /// The restricted columns of one group: partition key, clustering, or (for `Regular`)
    /// every non-primary-key column.
    fn group(&self, kind: ColumnKind) -> impl Iterator<Item = &ColumnPreds<'t>> {
        self.preds.iter().filter(move |p| match kind {
            ColumnKind::PartitionKey | ColumnKind::Clustering => p.kind == kind,
            _ => !p.kind.is_primary_key(),
        })
    }

    /// The index that serves a column's relations, if any.
    fn served(&self, p: &ColumnPreds<'_>) -> Option<&'t IndexDef> {
        let name = &self.table.columns[p.column].name;
        self.table.indexes.iter().find(|i| {
            i.column == *name
                && (self.allow_local || !i.local)
                && p.ops.iter().all(|op| supports(i, p.typ, *op))
        })
    }

    /// The clustering prefix a base-table read serves: `=`/`IN` columns in key order, then
    /// at most one slice (none with a multi-column relation).
    fn clustering_prefix(&self) -> usize {
        let mut prefix = 0;
        if self.has_multi_column {
            return prefix;
        }
        for c in self.table.clustering_key() {
            let Some(p) = self
                .group(ColumnKind::Clustering)
                .find(|p| self.table.columns[p.column].name == c.name)
            else {
                break;
            };
            prefix += 1;
            if p.ops.iter().any(|o| *o != Op::Eq && *o != Op::In) {
                break;
            }
        }
        prefix
    }

    /// Whether the query reads through an index (`process_partition_key_restrictions`,
    /// `process_clustering_columns_restrictions`, then the regular columns), or Scylla's
    /// refusal of a query that needs filtering.
    fn uses_index(&self, allow_filtering: bool) -> Result<bool, CqlError> {
        let mut uses = false;
        // A token range or no partition key at all: a range of partitions.
        let mut key_range = self.has_token || self.npart == 0;
        if self.pk_needs_filtering {
            if !allow_filtering && !self.pk_index {
                return Err(CqlError::invalid(FILTERING_MESSAGE));
            }
            key_range = true;
            uses = self.pk_index;
        }
        if self.ck_restricted > 0 && self.ck_needs_filtering && self.ck_index {
            uses = true;
        }
        if key_range && self.ck_index && !self.has_multi_column {
            uses = true;
        }
        if self.nonpk > 0 {
            if self.regular_index && !self.pk_has_in {
                uses = true;
            } else if !allow_filtering {
                return Err(CqlError::invalid(FILTERING_MESSAGE));
            }
        }
        Ok(uses)
    }

    /// Whether an index read still needs filtering (`need_filtering`).
    fn needs_filtering(&self) -> bool {
        let (npart, pk_size) = (self.npart, self.pk_size);
        let ck_empty = self.ck_restricted == 0;
        if self.has_token {
            self.ck_restricted + self.nonpk > 1
        } else if npart > 0 && npart < pk_size {
            !(npart == 1 && self.pk_index && ck_empty && self.nonpk == 0)
        } else if self.pk_needs_filtering {
            true
        } else {
            let nreg = self.nonpk;
            if nreg > 1 || (nreg == 1 && !self.regular_index) {
                true
            } else if nreg == 1 {
                if npart == 0 && ck_empty {
                    false
                } else {
                    let token_known = !self.pk_unrestricted_components && self.pk_all_eq;
                    !token_known || self.ck_needs_filtering || self.has_multi_column
                }
            } else if self.has_multi_column {
                false
            } else if self.ck_index {
                self.ck_restricted > 1
            } else {
                self.ck_needs_filtering
            }
        }
    }

    /// `do_find_idx`: the best-scored index (local with its whole partition key 2, global
    /// 1), the first in WHERE-clause order on ties, among the groups it searches (the
    /// partition key's only when `uses`).
    fn best_index(&self, uses: bool) -> Option<&'t IndexDef> {
        let mut chosen: Option<(&IndexDef, u8)> = None;
        let search_pk = self.pk_needs_filtering || uses;
        for kind in [
            ColumnKind::PartitionKey,
            ColumnKind::Clustering,
            ColumnKind::Regular,
        ] {
            for p in self.group(kind) {
                if p.kind == ColumnKind::PartitionKey && !search_pk {
                    continue;
                }
                let name = &self.table.columns[p.column].name;
                for i in &self.table.indexes {
                    let score = if i.local {
                        u8::from(self.allow_local) * 2
                    } else {
                        1
                    };
                    if i.column == *name
                        && p.ops.iter().all(|op| supports(i, p.typ, *op))
                        && score > chosen.map_or(0, |c| c.1)
                    {
                        chosen = Some((i, score));
                    }
                }
            }
        }
        chosen.map(|(i, _)| i)
    }
}

/// The restricted columns of `relations` with their operators, in WHERE-clause order, and
/// whether a relation is on `token(...)` or multi-column.
fn column_preds<'t>(
    table: &'t TableDef,
    relations: &[Relation],
) -> (Vec<ColumnPreds<'t>>, bool, bool) {
    let mut preds: Vec<ColumnPreds<'_>> = Vec::new();
    let mut has_token = false;
    let mut has_multi_column = false;
    let mut add = |column: &str, op: Op| {
        let Some(i) = table.column_index(column) else {
            return;
        };
        let def = &table.columns[i];
        match preds.iter_mut().find(|p| p.column == i) {
            Some(p) => p.ops.push(op),
            None => preds.push(ColumnPreds {
                column: i,
                kind: def.kind,
                typ: &def.typ,
                ops: vec![op],
            }),
        }
    };
    for r in relations {
        match r {
            Relation::Compare { column, op, .. } => add(
                column,
                match op {
                    CompareOp::Eq => Op::Eq,
                    CompareOp::Ne => Op::Other,
                    _ => Op::Slice,
                },
            ),
            Relation::In { column, .. } => add(column, Op::In),
            Relation::Contains { column, key, .. } => {
                add(column, if *key { Op::ContainsKey } else { Op::Contains })
            }
            Relation::Element { column, op, .. } => add(
                column,
                if *op == CompareOp::Eq {
                    Op::SubscriptEq
                } else {
                    Op::Other
                },
            ),
            Relation::Like { column, .. } | Relation::IsNotNull { column } => {
                add(column, Op::Other)
            }
            Relation::MultiCompare { columns, op, .. } => {
                has_multi_column = true;
                // `multi_column_predicates_have_supporting_index`: `=` on any column.
                let op = if *op == CompareOp::Eq {
                    Op::Eq
                } else {
                    Op::Slice
                };
                for c in columns {
                    add(c, op);
                }
            }
            Relation::MultiIn { columns, .. } => {
                has_multi_column = true;
                for c in columns {
                    add(c, Op::In);
                }
            }
            Relation::Token { .. } => has_token = true,
        }
    }
    (preds, has_token, has_multi_column)
}

/// Whether a SELECT reads through an index (so its WHERE clause is planned as under ALLOW
/// FILTERING). A refusal is reported after the errors planning the WHERE clause would give
/// anyway (an unknown column, a bad relation), as Scylla checks those first.
pub(crate) fn uses_index(
    table: &TableDef,
    relations: &[Relation],
    allow_filtering: bool,
    binder: &mut Binder,
) -> Result<bool, CqlError> {
    match decide(table, relations, allow_filtering) {
        Ok(d) => Ok(d != IndexDecision::NotUsed),
        Err(e) => {
            // Planned on a copy: the real planning binds the markers.
            let mut scratch = binder.clone();
            plan_where(
                table,
                relations,
                WhereMode::Select {
                    allow_filtering: true,
                },
                &mut scratch,
            )?;
            Err(e)
        }
    }
}
