//! Lightweight transactions as ScyllaDB runs them (`cql3/statements/cas_request.cc`,
//! `cql3/update_parameters.cc`): one conditional statement, or a conditional BATCH on one
//! partition, is a CAS request that
//!
//! 0. finds its one partition ([`cas_partition`]): statements whose partition-key
//!    restriction selects nothing take no part;
//! 1. reads the partition once ([`Prefetch`]): the clustering ranges of the statements
//!    that have a condition or read a list first (a statement whose conditions only name
//!    static columns adds no range; with no range at all, the first live row is read), the
//!    static row always, and the union of the columns those statements read. A partition
//!    with static columns that has any live data yields one more "row" with an empty
//!    clustering key holding the static cells;
//! 2. finds each statement's old row (`find_old_row`): the row at the start of its first
//!    clustering range if it was read, else (unless the statement is `IF [NOT] EXISTS` on a
//!    clustering row) that static row, so `UPDATE ... WHERE pk = 1 AND ck = 1 IF s = 1`
//!    applies when only the static row exists;
//! 3. applies when every condition holds on its old row (a statement whose conditions only
//!    name static columns sees no row when no selected static cell is set), and then writes
//!    every statement's mutations with one timestamp, the transaction's (a statement's own
//!    `USING TIMESTAMP` in a conditional batch is accepted and not used);
//! 4. answers `[applied]` plus one row per statement of the request (unconditional ones
//!    too), each filled from that statement's old row or all null: for one statement over the
//!    columns its condition reads (every column for `IF [NOT] EXISTS`), for a batch over the
//!    primary key and the union of those columns (`batch_statement::build_cas_result_set_metadata`)
//!    ([`answer`]).

use std::sync::Arc;

use crate::frame::{ColumnSpec, CqlError, Response, ResultMetadata, RowsResult};
use crate::schema::{ColumnKind, TableDef};
use crate::storage::Now;
use crate::storage::{ClusteringRange, PartitionKey, PartitionView, RowView, TableData};
use crate::types::CqlType;
use crate::types::value::Value;

use super::modify::{CondPlan, ModifyKind, ModifyPlan, check_condition, condition_columns};
use super::select::RowRef;
use super::values::EvalCtx;

/// One statement of a CAS request with its bound values.
pub(crate) type CasItem<'p, 'c> = (&'p ModifyPlan, EvalCtx<'c>);

/// Where a statement looks for its old row: the start of its first clustering range.
enum Lookup {
    /// A full clustering key (the empty key of a table without clustering columns).
    Row(Vec<Value>),
    /// A clustering prefix or a slice: never a row, so the static row.
    Prefix,
    /// No clustering restriction: the static row.
    Partition,
}

/// What the CAS request read of its partition.
pub(crate) struct Prefetch<'a> {
    /// The partition, if stored.
    part: Option<PartitionView<'a>>,
    /// The clustering rows read.
    rows: Vec<RowView<'a>>,
    /// Whether the static "row" (empty clustering key) is part of the read.
    static_row: bool,
    /// The columns read, by table column index.
    selected: Vec<bool>,
}

impl<'a> Prefetch<'a> {
    /// Reads the partition `key` for the statements of a CAS request.
    pub(crate) fn read(
        data: &'a TableData,
        key: &PartitionKey,
        items: &[CasItem<'_, '_>],
        now: Now,
    ) -> Result<Prefetch<'a>, CqlError> {
        let Some((first, _)) = items.first() else {
            return Ok(Prefetch {
                part: None,
                rows: Vec::new(),
                static_row: false,
                selected: Vec::new(),
            });
        };
        let table = &first.table;
        let mut selected = vec![false; table.columns.len()];
        let mut ranges: Vec<ClusteringRange> = Vec::new();
        for (p, ctx) in items {
            let reads = p.requires_read();
            if !p.is_conditional() && !reads {
                continue;
            }
            if let Some(cond) = &p.condition {
                for c in condition_columns(p, cond) {
                    selected[c] = true;
                }
            }
            for c in p.read_columns() {
                selected[c] = true;
            }
            if p.has_only_static_conditions() && !reads {
                continue;
            }
            ranges.extend(p.keys.clustering_ranges(&p.table, ctx)?);
        }
        let part = data.partition(key.token, &key.bytes, now);
        let rows: Vec<RowView<'a>> = match &part {
            None => Vec::new(),
            // Only statements with static conditions: the first live row tells a partition
            // with live rows from one without.
            Some(pv) if ranges.is_empty() => pv
                .rows(&[ClusteringRange::full()], false, None)
                .take(1)
                .collect(),
            Some(pv) => pv.rows(&ranges, false, None).collect(),
        };
        let has_static_columns = table.columns.iter().any(|c| c.kind == ColumnKind::Static);
        let static_row = part.is_some_and(|pv| {
            has_static_columns
                && table.clustering_key().count() > 0
                && (!rows.is_empty() || pv.static_row().is_some())
        });
        Ok(Prefetch {
            part,
            rows,
            static_row,
            selected,
        })
    }

    /// A statement's old row (`cas_request::find_old_row`).
    fn old_row(&self, p: &ModifyPlan, ctx: &EvalCtx<'_>) -> Result<Option<RowRef<'a>>, CqlError> {
        let Some(part) = self.part else {
            return Ok(None);
        };
        let lookup = lookup(p, ctx)?;
        let static_ref = RowRef {
            part,
            static_row: part.static_row(),
            row: None,
        };
        let exists_condition = matches!(p.condition, Some(CondPlan::Exists | CondPlan::NotExists));
        match lookup {
            Lookup::Row(ck) => {
                if let Some(r) = self.rows.iter().find(|r| r.key() == ck.as_slice()) {
                    return Ok(Some(RowRef {
                        part,
                        static_row: part.static_row(),
                        row: Some(*r),
                    }));
                }
                Ok((self.static_row && !ck.is_empty() && !exists_condition).then_some(static_ref))
            }
            Lookup::Prefix => Ok((self.static_row && !exists_condition).then_some(static_ref)),
            Lookup::Partition => Ok(self.static_row.then_some(static_ref)),
        }
    }

    /// Whether a selected static column of the row is set (`prefetch_data::row::has_static`).
    fn has_static(&self, p: &ModifyPlan, row: &RowRef<'_>) -> bool {
        p.table.columns.iter().enumerate().any(|(i, c)| {
            c.kind == ColumnKind::Static
                && self.selected.get(i).copied().unwrap_or(false)
                && row.value(&p.cols[i]).is_some()
        })
    }

    /// Whether every condition of the request holds (`cas_request::applies_to`).
    pub(crate) fn applies(&self, items: &[CasItem<'_, '_>]) -> Result<bool, CqlError> {
        for (p, ctx) in items {
            let Some(cond) = &p.condition else { continue };
            let mut row = self.old_row(p, ctx)?;
            // `modification_statement::applies_to`: a statement interested only in static
            // columns sees no row when the row found has no static cell.
            if p.has_only_static_conditions()
                && row.as_ref().is_some_and(|r| !self.has_static(p, r))
            {
                row = None;
            }
            if !check_condition(p, cond, row.as_ref(), ctx)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The result rows (`cas_request::build_cas_result_set`): `[applied]`, then `columns`
    /// of each statement's old row.
    pub(crate) fn result_rows(
        &self,
        items: &[CasItem<'_, '_>],
        columns: &[usize],
        applied: bool,
    ) -> Result<Vec<Vec<Option<Value>>>, CqlError> {
        let mut out = Vec::with_capacity(items.len());
        for (p, ctx) in items {
            let old = self.old_row(p, ctx)?;
            let mut row = Vec::with_capacity(columns.len() + 1);
            row.push(Some(Value::Boolean(applied)));
            for &c in columns {
                row.push(old.as_ref().and_then(|r| r.value(&p.cols[c])));
            }
            out.push(row);
        }
        Ok(out)
    }
}

/// The columns of a CAS result besides `[applied]`, by table column index: a single
/// statement's condition columns, or for a batch the primary key and every statement's.
pub(crate) fn result_columns(items: &[CasItem<'_, '_>], batch: bool) -> Vec<usize> {
    let Some((first, _)) = items.first() else {
        return Vec::new();
    };
    let mut set = vec![false; first.table.columns.len()];
    if batch {
        for (i, c) in first.table.columns.iter().enumerate() {
            if c.kind.is_primary_key() {
                set[i] = true;
            }
        }
    }
    for (p, _) in items {
        if let Some(cond) = &p.condition {
            for c in condition_columns(p, cond) {
                set[c] = true;
            }
        }
    }
    set.iter()
        .enumerate()
        .filter(|(_, s)| **s)
        .map(|(i, _)| i)
        .collect()
}

/// Where a statement looks for its old row.
fn lookup(p: &ModifyPlan, ctx: &EvalCtx<'_>) -> Result<Lookup, CqlError> {
    if p.keys.slice.is_some() {
        return Ok(Lookup::Prefix);
    }
    let nck = p.table.clustering_key().count();
    let mut prefixes = p.keys.prefixes(ctx)?;
    // The first range in clustering order.
    if p.table
        .clustering_descending()
        .first()
        .copied()
        .unwrap_or(false)
    {
        prefixes.reverse();
    }
    let Some(first) = prefixes.into_iter().next() else {
        return Err(CqlError::invalid("Empty clustering range"));
    };
    Ok(if first.len() == nck {
        Lookup::Row(first)
    } else if first.is_empty() {
        Lookup::Partition
    } else {
        Lookup::Prefix
    })
}

/// The one partition of a CAS request (`batch_statement::execute_with_conditions`) and the
/// statements that take part: those whose partition-key restriction selects nothing do not.
pub(crate) fn cas_partition<'p, 'c>(
    items: &[CasItem<'p, 'c>],
    batch: bool,
) -> Result<(PartitionKey, Vec<CasItem<'p, 'c>>), CqlError> {
    let mut key = None;
    let mut request: Vec<CasItem<'p, 'c>> = Vec::with_capacity(items.len());
    for (p, ctx) in items {
        let keys = p.keys.partition_keys(&p.table, ctx)?.unwrap_or_default();
        if keys.is_empty() {
            continue;
        }
        match &key {
            None if keys.len() == 1 => key = keys.into_iter().next(),
            Some(k) if keys.len() == 1 && keys[0].bytes == k.bytes => {}
            _ => {
                return Err(CqlError::invalid(
                    "BATCH with conditions cannot span multiple partitions",
                ));
            }
        }
        request.push((p, *ctx));
    }
    let Some(key) = key else {
        let what = match (batch, items.first().map(|(p, _)| p.kind)) {
            (true, _) => "BATCH",
            (false, Some(ModifyKind::Delete)) => "deletion",
            (false, _) => "update",
        };
        return Err(CqlError::invalid(format!(
            "Unrestricted partition key in a conditional {what}"
        )));
    };
    Ok((key, request))
}

/// The answer to a CAS request: `[applied]` and the table's `columns`, then `rows`.
pub(crate) fn answer(
    table: &TableDef,
    columns: &[usize],
    rows: Vec<Vec<Option<Value>>>,
) -> Response {
    let mut specs = vec![ColumnSpec::new(
        table.keyspace.clone(),
        table.name.clone(),
        "[applied]",
        CqlType::Boolean,
    )];
    for &c in columns {
        let def = &table.columns[c];
        specs.push(ColumnSpec::new(
            table.keyspace.clone(),
            table.name.clone(),
            def.name.clone(),
            def.typ.clone(),
        ));
    }
    let rows = rows
        .into_iter()
        .map(|r| r.into_iter().map(|v| v.map(|v| v.to_bytes())).collect())
        .collect();
    Response::Rows(RowsResult {
        metadata: Arc::new(ResultMetadata { columns: specs }),
        paging_state: None,
        skip_metadata: false,
        rows,
    })
}
