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
                if *op == CompareOp::Eq {
                    // `multi_column_predicates_have_supporting_index`: `=` on any column.
                    for c in columns {
                        add(c, Op::Eq);
                    }
                } else {
                    for c in columns {
                        add(c, Op::Slice);
                    }
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
    let pk_size = table.partition_key().count();
    let pk: Vec<&ColumnPreds<'_>> = preds
        .iter()
        .filter(|p| p.kind == ColumnKind::PartitionKey)
        .collect();
    let ck: Vec<&ColumnPreds<'_>> = preds
        .iter()
        .filter(|p| p.kind == ColumnKind::Clustering)
        .collect();
    let nonpk: Vec<&ColumnPreds<'_>> = preds.iter().filter(|p| !p.kind.is_primary_key()).collect();
    let npart = pk.len();
    let pk_all_eq = pk.iter().all(|p| p.ops.iter().all(|o| *o == Op::Eq));
    let pk_has_in = pk.iter().any(|p| p.ops.contains(&Op::In));
    let pk_has_slice = pk
        .iter()
        .any(|p| p.ops.iter().any(|o| !matches!(o, Op::Eq | Op::In)));
    let pk_unrestricted_components = npart < pk_size;
    // A local index serves only a query that gives its whole partition key by `=`.
    let allow_local = !pk_unrestricted_components && pk_all_eq;
    let served = |p: &ColumnPreds<'_>| -> Option<&IndexDef> {
        let name = &table.columns[p.column].name;
        table.indexes.iter().find(|i| {
            i.column == *name
                && (allow_local || !i.local)
                && p.ops.iter().all(|op| supports(i, p.typ, *op))
        })
    };
    let pk_index = !has_token && pk.iter().any(|p| served(p).is_some());
    let ck_index = ck.iter().any(|p| served(p).is_some());
    let regular_index = nonpk.iter().any(|p| served(p).is_some());

    // The clustering prefix a base-table read serves: `=`/`IN` columns in key order, then
    // at most one slice.
    let ck_restricted = ck.len();
    let mut prefix = 0;
    if !has_multi_column {
        for c in table.clustering_key() {
            let Some(p) = ck.iter().find(|p| table.columns[p.column].name == c.name) else {
                break;
            };
            prefix += 1;
            if p.ops.iter().any(|o| *o != Op::Eq && *o != Op::In) {
                break;
            }
        }
    }
    let ck_needs_filtering = !has_multi_column && prefix < ck_restricted;
    let pk_needs_filtering =
        npart > 0 && !has_token && (pk_unrestricted_components || pk_has_slice);

    // process_partition_key_restrictions
    let mut uses = false;
    // A token range or no partition key at all: a range of partitions.
    let mut key_range = has_token || npart == 0;
    if pk_needs_filtering {
        if !allow_filtering && !pk_index {
            return Err(CqlError::invalid(FILTERING_MESSAGE));
        }
        key_range = true;
        uses = pk_index;
    }
    // process_clustering_columns_restrictions
    if ck_restricted > 0 && ck_needs_filtering && ck_index {
        uses = true;
    }
    if key_range && ck_index && !has_multi_column {
        uses = true;
    }
    if !nonpk.is_empty() {
        if regular_index && !pk_has_in {
            uses = true;
        } else if !allow_filtering {
            return Err(CqlError::invalid(FILTERING_MESSAGE));
        }
    }
    if !uses {
        return Ok(IndexDecision::NotUsed);
    }
    if !allow_filtering && pk_has_in {
        return Err(CqlError::invalid(
            "Index cannot be used if the partition key is restricted with IN clause. This query would require filtering instead.",
        ));
    }
    // need_filtering
    let need_filtering = if has_token {
        ck_restricted + nonpk.len() > 1
    } else if npart > 0 && npart < pk_size {
        !(npart == 1 && pk_index && ck.is_empty() && nonpk.is_empty())
    } else if pk_needs_filtering {
        true
    } else {
        let nreg = nonpk.len();
        if nreg > 1 || (nreg == 1 && !regular_index) {
            true
        } else if nreg == 1 {
            if npart == 0 && ck.is_empty() {
                false
            } else {
                let token_known = !pk_unrestricted_components && pk_all_eq;
                !token_known || ck_needs_filtering || has_multi_column
            }
        } else if has_multi_column {
            false
        } else if ck_index {
            ck_restricted > 1
        } else {
            ck_needs_filtering
        }
    };
    if need_filtering && !allow_filtering {
        return Err(CqlError::invalid(FILTERING_MESSAGE));
    }
    // do_find_idx: the best-scored index (local with its whole partition key 2, global 1),
    // the first in WHERE-clause order on ties, among the groups it searches.
    let mut chosen: Option<(&IndexDef, u8)> = None;
    let search_pk = pk_needs_filtering || uses;
    for group in [&pk, &ck, &nonpk] {
        for p in group.iter() {
            if p.kind == ColumnKind::PartitionKey && !search_pk {
                continue;
            }
            let name = &table.columns[p.column].name;
            for i in &table.indexes {
                let score = if i.local {
                    u8::from(allow_local) * 2
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
    Ok(match chosen {
        Some((i, _)) => IndexDecision::Used(i.name.clone()),
        None => IndexDecision::NotUsed,
    })
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
