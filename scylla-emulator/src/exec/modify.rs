//! INSERT / UPDATE / DELETE: planning (column operations, keys, `USING`, `IF`) and the
//! building of [`PartitionMutation`]s, with Cassandra's semantics: a row marker on INSERT
//! only, tombstones for nulls, collection overwrites as a tombstone at `ts - 1` plus the new
//! elements, list elements keyed by timeuuids, counters as deltas, row / range / partition
//! deletions. Also the lightweight-transaction conditions.

use std::borrow::Cow;
use std::sync::Arc;

use crate::cql::{
    Assignment, ColumnTarget, CompareOp, Condition, Conditional, InValues, InsertValues,
    JsonDefault, Relation, Statement, Term, Using,
};
use crate::frame::{BoundValue, ColumnSpec, CqlError};
use crate::schema::{ColumnKind, Schema, TableDef};
use crate::storage::{
    CellUpdate, ClusteringKey, ClusteringRange, ColumnId, ElementUpdate, Liveness,
    PartitionMutation, RangeTombstone, RowUpdate, Timestamp,
};
use crate::types::CqlType;
use crate::types::value::Value;

use super::binder::{Binder, column_index, resolve_table};
use super::json_insert::{JsonColumn, JsonInsert};
use super::restrictions::{
    KeyValues, PartitionRestriction, PrefixPart, WhereMode, WherePlan, compare, plan_where,
};
use super::select::{ColInfo, ColSource, RowRef, col_infos};
use super::values::{Bound, EvalCtx, Expr, eval_required, marker, plan_term};

/// Which statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModifyKind {
    /// INSERT
    Insert,
    /// UPDATE
    Update,
    /// DELETE
    Delete,
}

/// One column operation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// `c = x` (INSERT values too).
    Set(usize, Expr),
    /// `c = c + x`: set/map add, list append, counter increment.
    Add(usize, Expr),
    /// `c = x + c`: list prepend.
    Prepend(usize, Expr),
    /// `c = c - x`: set/map/list removal, counter decrement.
    Remove(usize, Expr),
    /// `m[k] = x` / `l[i] = x`
    SetElement(usize, Expr, Expr),
    /// `u.f = x`
    SetField(usize, usize, Expr),
    /// `DELETE c`
    DeleteColumn(usize),
    /// `DELETE m[k]` / `DELETE s[e]` / `DELETE l[i]`
    DeleteElement(usize, Expr),
    /// `DELETE u.f`
    DeleteField(usize, usize),
}

impl Op {
    fn column(&self) -> usize {
        match self {
            Op::Set(c, _)
            | Op::Add(c, _)
            | Op::Prepend(c, _)
            | Op::Remove(c, _)
            | Op::SetElement(c, _, _)
            | Op::SetField(c, _, _)
            | Op::DeleteColumn(c)
            | Op::DeleteElement(c, _)
            | Op::DeleteField(c, _) => *c,
        }
    }

    /// Whether the operation reads the current list first.
    fn reads(&self, cols: &[ColInfo]) -> bool {
        let is_list =
            |c: &usize| matches!(cols.get(*c).map(|i| &i.typ), Some(CqlType::List { .. }));
        match self {
            Op::Remove(c, _) | Op::SetElement(c, _, _) | Op::DeleteElement(c, _) => is_list(c),
            _ => false,
        }
    }
}

/// What a condition tests.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CondTest {
    /// `c op x`
    Compare(CompareOp, Expr),
    /// `c IN (...)`
    In(KeyValues),
    /// `m[k] op x`
    Element(Expr, CompareOp, Expr),
    /// `u.f op x`
    Field(usize, CompareOp, Expr),
    /// `c CONTAINS [KEY] x`
    Contains(bool, Expr),
}

/// The IF clause.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CondPlan {
    /// `IF NOT EXISTS`
    NotExists,
    /// `IF EXISTS`
    Exists,
    /// `IF c op x AND ...` (column index, test).
    Conditions(Vec<(usize, CondTest)>),
}

/// A planned INSERT / UPDATE / DELETE.
#[derive(Debug)]
pub(crate) struct ModifyPlan {
    /// The table written.
    pub(crate) table: Arc<TableDef>,
    /// Read layout of its columns.
    pub(crate) cols: Vec<ColInfo>,
    /// Which statement.
    pub(crate) kind: ModifyKind,
    /// Keys: partition `Keys`, clustering prefix / slice.
    pub(crate) keys: WherePlan,
    /// Column operations.
    pub(crate) ops: Vec<Op>,
    /// `USING TTL`
    pub(crate) ttl: Option<Expr>,
    /// `USING TIMESTAMP`
    pub(crate) timestamp: Option<Expr>,
    /// `IF ...`
    pub(crate) condition: Option<CondPlan>,
    /// Whether every written column is static (the clustering key may be absent).
    pub(crate) static_only: bool,
    /// For `INSERT JSON`: the document whose values the key and column expressions take
    /// (see [`bind_values`]).
    pub(crate) json: Option<Arc<JsonInsert>>,
}

impl ModifyPlan {
    /// Whether the statement is a lightweight transaction.
    pub(crate) fn is_conditional(&self) -> bool {
        self.condition.is_some()
    }

    /// Whether the statement writes counters.
    pub(crate) fn is_counter(&self) -> bool {
        self.table.is_counter()
    }

    /// Whether it has `USING TIMESTAMP`.
    pub(crate) fn has_timestamp(&self) -> bool {
        self.timestamp.is_some()
    }

    /// Whether an operation reads the current value first (list element writes and
    /// removals: Scylla's `operation::requires_read`).
    pub(crate) fn requires_read(&self) -> bool {
        self.ops.iter().any(|o| o.reads(&self.cols))
    }

    /// The columns (table indexes) operations read first.
    pub(crate) fn read_columns(&self) -> Vec<usize> {
        self.ops
            .iter()
            .filter(|o| o.reads(&self.cols))
            .map(Op::column)
            .collect()
    }

    /// Whether the IF clause looks at static columns only (Scylla's
    /// `has_only_static_column_conditions`): conditions naming only static columns, or
    /// `IF [NOT] EXISTS` on a table with static columns without a clustering restriction
    /// (`modification_statement::process_where_clause`).
    pub(crate) fn has_only_static_conditions(&self) -> bool {
        match &self.condition {
            None => false,
            Some(CondPlan::Exists | CondPlan::NotExists) => {
                self.table
                    .columns
                    .iter()
                    .any(|c| c.kind == ColumnKind::Static)
                    && !self.keys.restricts_clustering()
            }
            Some(CondPlan::Conditions(list)) => list
                .iter()
                .all(|(c, _)| self.table.columns[*c].kind == ColumnKind::Static),
        }
    }

    /// Whether the IF clause looks at regular columns (Scylla's
    /// `_has_regular_column_conditions`).
    fn has_regular_conditions(&self) -> bool {
        match &self.condition {
            None => false,
            Some(CondPlan::Exists | CondPlan::NotExists) => !self.has_only_static_conditions(),
            Some(CondPlan::Conditions(list)) => list
                .iter()
                .any(|(c, _)| self.table.columns[*c].kind != ColumnKind::Static),
        }
    }

    /// The checks ScyllaDB makes when a statement is executed (alone or in a batch)
    /// rather than prepared (`modification_statement::validate`).
    pub(crate) fn validate(&self) -> Result<(), CqlError> {
        if self.is_counter() && self.has_timestamp() {
            return Err(CqlError::invalid(
                "Cannot provide custom timestamp for counter updates",
            ));
        }
        if self.is_counter() && self.ttl.is_some() {
            return Err(CqlError::invalid(
                "Cannot provide custom TTL for counter updates",
            ));
        }
        Ok(())
    }
}

/// Plans an INSERT, UPDATE or DELETE.
pub(crate) fn plan_modify(
    schema: &Arc<Schema>,
    keyspace: Option<&str>,
    stmt: &Statement,
    binder: &mut Binder,
) -> Result<ModifyPlan, CqlError> {
    let plan = match stmt {
        Statement::Insert(s) => {
            let table = resolve_table(schema, keyspace, &s.table)?;
            binder.set_table(&table);
            match &s.values {
                InsertValues::Columns(pairs) => {
                    plan_insert(table, pairs, s.if_not_exists, &s.using, binder)
                }
                InsertValues::Json { json, default } => {
                    plan_insert_json(table, json, *default, s.if_not_exists, &s.using, binder)
                }
            }
        }
        Statement::Update(s) => {
            let table = resolve_table(schema, keyspace, &s.table)?;
            binder.set_table(&table);
            plan_update(table, s, binder)
        }
        Statement::Delete(s) => {
            let table = resolve_table(schema, keyspace, &s.table)?;
            binder.set_table(&table);
            // Checks its conditions itself (before range deletions).
            return plan_delete(table, s, binder);
        }
        _ => Err(CqlError::invalid("not a modification statement")),
    }?;
    check_conditional(&plan)?;
    Ok(plan)
}

/// The checks ScyllaDB makes when it prepares a conditional statement
/// (`raw::modification_statement::prepare_conditions` and
/// `modification_statement::validate_where_clause_for_conditions`).
fn check_conditional(p: &ModifyPlan) -> Result<(), CqlError> {
    if p.condition.is_none() {
        return Ok(());
    }
    if p.timestamp.is_some() {
        return Err(CqlError::invalid(
            "Cannot provide custom timestamp for conditional updates",
        ));
    }
    let what = if p.kind == ModifyKind::Update {
        "updates"
    } else {
        "deletions"
    };
    let is_in = |kv: &KeyValues| matches!(kv, KeyValues::In(_) | KeyValues::InMarker(_));
    if let PartitionRestriction::Keys(parts) = &p.keys.partition
        && parts.iter().any(is_in)
    {
        return Err(CqlError::invalid(format!(
            "IN on the partition key is not supported with conditional {what}"
        )));
    }
    let ck_in = p.keys.prefix.iter().any(|part| match part {
        PrefixPart::Single(kv) => is_in(kv),
        PrefixPart::Multi {
            tuples,
            list_marker,
            ..
        } => list_marker.is_some() || tuples.len() != 1,
    });
    if ck_in {
        return Err(CqlError::invalid(format!(
            "IN on the clustering key columns is not supported with conditional {what}"
        )));
    }
    let nck = p.table.clustering_key().count();
    if p.kind == ModifyKind::Delete
        && nck > 0
        && (p.keys.prefix_len != nck || p.keys.slice.is_some())
    {
        let deletes_regular = p.ops.is_empty()
            || p.ops
                .iter()
                .any(|o| p.table.columns[o.column()].kind != ColumnKind::Static);
        if deletes_regular {
            return Err(CqlError::invalid(
                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns",
            ));
        }
        if p.has_regular_conditions() {
            return Err(CqlError::invalid(
                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF condition on non static columns",
            ));
        }
    }
    Ok(())
}

/// Refuses writes to virtual tables and to `system_schema`.
pub(crate) fn check_writable(table: &TableDef) -> Result<(), CqlError> {
    match table.kind {
        crate::schema::TableKind::Virtual => Err(CqlError::invalid(format!(
            "Cannot modify virtual table {}.{}",
            table.keyspace, table.name
        ))),
        // modification_statement.cc (`validate`).
        crate::schema::TableKind::View(_) => Err(CqlError::invalid(
            "Cannot directly modify a materialized view",
        )),
        _ if table.keyspace == crate::schema::system::SYSTEM_SCHEMA => Err(CqlError::new(
            crate::frame::ErrorKind::Unauthorized,
            format!("{} keyspace is not user-modifiable.", table.keyspace),
        )),
        _ => Ok(()),
    }
}

/// Plans `USING TTL` / `TIMESTAMP` / `TIMEOUT` (TTL only where `allow_ttl`).
pub(crate) fn plan_using(
    using: &Using,
    binder: &mut Binder,
    allow_ttl: bool,
) -> Result<(Option<Expr>, Option<Expr>), CqlError> {
    let ttl = match &using.ttl {
        Some(_) if !allow_ttl => {
            return Err(CqlError::invalid("TTL is not allowed here"));
        }
        Some(t) => Some(plan_term(t, &CqlType::Int, "[ttl]", binder)?),
        None => None,
    };
    let ts = match &using.timestamp {
        Some(t) => Some(plan_term(t, &CqlType::Bigint, "[timestamp]", binder)?),
        None => None,
    };
    if let Some(t) = &using.timeout {
        plan_term(t, &CqlType::Duration, "timeout", binder)?;
    }
    Ok((ttl, ts))
}

/// Plans `INSERT INTO t (cols) VALUES (...)`.
fn plan_insert(
    table: Arc<TableDef>,
    pairs: &[(String, Term)],
    if_not_exists: bool,
    using: &Using,
    binder: &mut Binder,
) -> Result<ModifyPlan, CqlError> {
    check_writable(&table)?;
    if table.is_counter() {
        return Err(CqlError::invalid(
            "INSERT statements are not allowed on counter tables, use UPDATE instead",
        ));
    }
    let npk = table.partition_key().count();
    let nck = table.clustering_key().count();
    let mut pk: Vec<Option<Expr>> = vec![None; npk];
    let mut ck: Vec<Option<Expr>> = vec![None; nck];
    let mut ops = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, term) in pairs {
        let ci = column_index(&table, name)?;
        if !seen.insert(ci) {
            return Err(CqlError::invalid(format!(
                "Multiple definitions found for column {name}"
            )));
        }
        let def = &table.columns[ci];
        let e = plan_term(term, &def.typ, &def.name, binder)?;
        let pos = def.position.max(0) as usize;
        match def.kind {
            ColumnKind::PartitionKey => pk[pos] = Some(e),
            ColumnKind::Clustering => ck[pos] = Some(e),
            _ => ops.push(Op::Set(ci, e)),
        }
    }
    let missing_pk: Vec<&str> = table
        .partition_key()
        .zip(&pk)
        .filter(|(_, e)| e.is_none())
        .map(|(c, _)| c.name.as_str())
        .collect();
    if !missing_pk.is_empty() {
        return Err(CqlError::invalid(format!(
            "Some partition key parts are missing: {}",
            missing_pk.join(", ")
        )));
    }
    let static_only = !ops.is_empty()
        && ops
            .iter()
            .all(|o| table.columns[o.column()].kind == ColumnKind::Static);
    let given_ck = ck.iter().filter(|e| e.is_some()).count();
    if given_ck != nck && !(static_only && given_ck == 0) {
        let missing: Vec<&str> = table
            .clustering_key()
            .zip(&ck)
            .filter(|(_, e)| e.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        return Err(CqlError::invalid(format!(
            "Some clustering keys are missing: {}",
            missing.join(", ")
        )));
    }
    let pk_exprs: Vec<Expr> = pk.into_iter().flatten().collect();
    binder.set_pk_markers(pk_exprs.iter().map(Expr::marker_index).collect());
    let prefix: Vec<PrefixPart> = ck
        .into_iter()
        .flatten()
        .map(|e| PrefixPart::Single(KeyValues::Eq(e)))
        .collect();
    let prefix_len = prefix.len();
    let (ttl, timestamp) = plan_using(using, binder, true)?;
    Ok(ModifyPlan {
        cols: col_infos(&table),
        table,
        kind: ModifyKind::Insert,
        keys: WherePlan {
            partition: PartitionRestriction::Keys(
                pk_exprs.into_iter().map(KeyValues::Eq).collect(),
            ),
            prefix,
            prefix_len,
            slice: None,
            filters: Vec::new(),
            non_key_columns: Vec::new(),
        },
        ops,
        ttl,
        timestamp,
        condition: if_not_exists.then_some(CondPlan::NotExists),
        static_only,
        json: None,
    })
}

/// Plans `INSERT INTO t JSON <json> [DEFAULT NULL|UNSET] [IF NOT EXISTS] [USING ...]`.
///
/// The marker of `JSON ?` is received by a placeholder with empty keyspace, table and name
/// and type `text` (`insert_json_statement::prepare_internal`); a named marker keeps its name.
fn plan_insert_json(
    table: Arc<TableDef>,
    json: &Term,
    default: JsonDefault,
    if_not_exists: bool,
    using: &Using,
    binder: &mut Binder,
) -> Result<ModifyPlan, CqlError> {
    check_writable(&table)?;
    let source = match json {
        Term::Literal(crate::cql::Literal::String(s)) => Expr::Const(Some(Value::text(s))),
        Term::Marker(m) => {
            let name = m.name.clone().unwrap_or_default();
            binder.bind_spec(m, ColumnSpec::new("", "", name.clone(), CqlType::Text));
            Expr::Marker {
                index: m.index,
                typ: CqlType::Text,
                name: Arc::from(name.as_str()),
            }
        }
        _ => {
            return Err(CqlError::syntax(
                "INSERT JSON takes a string constant or a bind marker",
            ));
        }
    };
    let (ttl, timestamp) = plan_using(using, binder, true)?;
    let base = binder.count();
    let marker = |slot: usize, c: &crate::schema::ColumnDef| Expr::Marker {
        index: base + slot,
        typ: c.typ.clone(),
        name: Arc::from(c.name.as_str()),
    };
    let mut columns = Vec::with_capacity(table.columns.len());
    let mut pk: Vec<(i32, Expr)> = Vec::new();
    let mut ck: Vec<(i32, Expr)> = Vec::new();
    let mut ops = Vec::new();
    let mut slots = 0;
    for (ci, c) in table.columns.iter().enumerate() {
        let slot = match c.kind {
            ColumnKind::Static => None,
            _ => {
                slots += 1;
                Some(slots - 1)
            }
        };
        if let Some(s) = slot {
            let e = marker(s, c);
            match c.kind {
                ColumnKind::PartitionKey => pk.push((c.position, e)),
                ColumnKind::Clustering => ck.push((c.position, e)),
                _ => ops.push(Op::Set(ci, e)),
            }
        }
        columns.push(JsonColumn {
            name: c.name.clone(),
            typ: c.typ.clone(),
            kind: c.kind,
            position: c.position,
            slot,
        });
    }
    pk.sort_by_key(|(p, _)| *p);
    ck.sort_by_key(|(p, _)| *p);
    // No partition-key marker of the statement's own.
    binder.set_pk_markers(vec![None; pk.len()]);
    let prefix: Vec<PrefixPart> = ck
        .into_iter()
        .map(|(_, e)| PrefixPart::Single(KeyValues::Eq(e)))
        .collect();
    let prefix_len = prefix.len();
    Ok(ModifyPlan {
        cols: col_infos(&table),
        table,
        kind: ModifyKind::Insert,
        keys: WherePlan {
            partition: PartitionRestriction::Keys(
                pk.into_iter().map(|(_, e)| KeyValues::Eq(e)).collect(),
            ),
            prefix,
            prefix_len,
            slice: None,
            filters: Vec::new(),
            non_key_columns: Vec::new(),
        },
        ops,
        ttl,
        timestamp,
        condition: if_not_exists.then_some(CondPlan::NotExists),
        static_only: false,
        json: Some(Arc::new(JsonInsert {
            source,
            columns,
            base,
            slots,
            default_unset: default == JsonDefault::Unset,
        })),
    })
}

/// The WHERE clause of an UPDATE or DELETE: a full partition key, primary-key columns only.
fn plan_keys(
    table: &TableDef,
    where_clause: &[Relation],
    binder: &mut Binder,
) -> Result<WherePlan, CqlError> {
    let keys = plan_where(table, where_clause, WhereMode::Modify, binder)?;
    if !keys.non_key_columns.is_empty() {
        return Err(CqlError::invalid(format!(
            "Non PRIMARY KEY columns found in where clause: {}",
            keys.non_key_columns.join(", ")
        )));
    }
    match keys.partition {
        PartitionRestriction::Keys(_) => {}
        PartitionRestriction::Token { .. } => {
            return Err(CqlError::invalid(
                "The token function cannot be used in WHERE clauses for UPDATE and DELETE statements",
            ));
        }
        PartitionRestriction::Scan => {
            let missing: Vec<&str> = table.partition_key().map(|c| c.name.as_str()).collect();
            return Err(CqlError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
    }
    if !keys.filters.is_empty() {
        return Err(CqlError::invalid(
            "Invalid restrictions on clustering columns for a modification statement",
        ));
    }
    Ok(keys)
}

/// Plans an UPDATE.
fn plan_update(
    table: Arc<TableDef>,
    s: &crate::cql::Update,
    binder: &mut Binder,
) -> Result<ModifyPlan, CqlError> {
    check_writable(&table)?;
    let (ttl, timestamp) = plan_using(&s.using, binder, true)?;
    let ops = s
        .assignments
        .iter()
        .map(|a| plan_assignment(&table, a, binder))
        .collect::<Result<Vec<_>, _>>()?;
    let keys = plan_keys(&table, &s.where_clause, binder)?;
    let static_only = ops
        .iter()
        .all(|o| table.columns[o.column()].kind == ColumnKind::Static);
    check_update_keys(&table, &keys, static_only)?;
    let condition = plan_condition(&table, s.condition.as_ref(), binder)?;
    Ok(ModifyPlan {
        cols: col_infos(&table),
        table,
        kind: ModifyKind::Update,
        keys,
        ops,
        ttl,
        timestamp,
        condition,
        static_only,
        json: None,
    })
}

/// One assignment of an UPDATE's SET clause, checked against its column's type.
fn plan_assignment(table: &TableDef, a: &Assignment, binder: &mut Binder) -> Result<Op, CqlError> {
    let name = a.column();
    let ci = column_index(table, name)?;
    let def = &table.columns[ci];
    if def.kind.is_primary_key() {
        return Err(CqlError::invalid(format!(
            "PRIMARY KEY part {name} found in SET part"
        )));
    }
    let t = &def.typ;
    Ok(match a {
        Assignment::Set { value, .. } => {
            if t.is_counter() {
                return Err(CqlError::invalid(format!(
                    "Cannot set the value of counter column {name} (counters can only be incremented/decremented, not set)"
                )));
            }
            Op::Set(ci, plan_term(value, t, name, binder)?)
        }
        Assignment::Add { value, .. } => {
            if !(t.is_counter() || t.is_collection() && t.is_multi_cell()) {
                return Err(CqlError::invalid(format!(
                    "Invalid operation ({name} = {name} + ?) for non counter column {name}"
                )));
            }
            Op::Add(ci, plan_term(value, t, name, binder)?)
        }
        Assignment::Prepend { value, .. } => {
            if !matches!(t, CqlType::List { frozen: false, .. }) {
                return Err(CqlError::invalid(format!(
                    "Invalid operation ({name} = ? + {name}) for non list column {name}"
                )));
            }
            Op::Prepend(ci, plan_term(value, t, name, binder)?)
        }
        Assignment::Remove { value, .. } => {
            let rt = removal_type(t, name)?;
            Op::Remove(ci, plan_term(value, &rt, name, binder)?)
        }
        Assignment::SetElement { key, value, .. } => {
            plan_set_element(ci, t, name, key, value, binder)?
        }
        Assignment::SetField { field, value, .. } => {
            plan_set_field(ci, t, name, field, value, binder)?
        }
    })
}

/// The type of what `c = c - ?` takes away from a column of type `t`: a counter's amount,
/// a map's keys, or elements of a set or list.
fn removal_type(t: &CqlType, name: &str) -> Result<CqlType, CqlError> {
    match t {
        CqlType::Counter => Ok(CqlType::Counter),
        CqlType::Map {
            key, frozen: false, ..
        } => Ok(CqlType::Set {
            elem: key.clone(),
            frozen: false,
        }),
        CqlType::Set { frozen: false, .. } | CqlType::List { frozen: false, .. } => Ok(t.clone()),
        _ => Err(CqlError::invalid(format!(
            "Invalid operation ({name} = {name} - ?) for non counter column {name}"
        ))),
    }
}

/// `c[k] = v`: an entry of a map, or an element of a list by index (or by timeuuid key).
fn plan_set_element(
    ci: usize,
    t: &CqlType,
    name: &str,
    key: &Term,
    value: &Term,
    binder: &mut Binder,
) -> Result<Op, CqlError> {
    match t {
        CqlType::Map {
            key: kt,
            value: vt,
            frozen: false,
        } => Ok(Op::SetElement(
            ci,
            plan_term(key, kt, &format!("key({name})"), binder)?,
            plan_term(value, vt, &format!("value({name})"), binder)?,
        )),
        CqlType::List {
            elem,
            frozen: false,
        } => {
            // Scylla receives the argument of SCYLLA_TIMEUUID_LIST_INDEX as
            // `uuid_idx(l)` of type uuid (`lists::uuid_index_spec_of`, cql3/lists.cc)
            // and uses its bytes as the element's key unchecked
            // (`lists::setter_by_uuid`); a plain index is `idx(l)` of type int
            // (`lists::index_spec_of`). The executor turns the uuid into the key.
            let k = match key {
                Term::FunctionCall { name: f, args }
                    if f.name == "scylla_timeuuid_list_index" && args.len() == 1 =>
                {
                    plan_term(
                        &args[0],
                        &CqlType::Uuid,
                        &format!("uuid_idx({name})"),
                        binder,
                    )?
                }
                _ => plan_term(key, &CqlType::Int, &format!("idx({name})"), binder)?,
            };
            Ok(Op::SetElement(
                ci,
                k,
                plan_term(value, elem, &format!("value({name})"), binder)?,
            ))
        }
        _ => Err(CqlError::invalid(format!(
            "Invalid operation ({name}[?] = ?) for non collection column {name}"
        ))),
    }
}

/// `c.f = v`: a field of a non-frozen user-type column.
fn plan_set_field(
    ci: usize,
    t: &CqlType,
    name: &str,
    field: &str,
    value: &Term,
    binder: &mut Binder,
) -> Result<Op, CqlError> {
    let CqlType::Udt { def: ut, frozen } = t else {
        return Err(CqlError::invalid(format!(
            "Invalid operation ({name}.{field} = ?) for non-UDT column {name}"
        )));
    };
    if *frozen {
        return Err(CqlError::invalid(format!(
            "Invalid operation ({name}.{field} = ?) for frozen UDT column {name}"
        )));
    }
    let fi = ut
        .fields
        .iter()
        .position(|(f, _)| f == field)
        .ok_or_else(|| {
            CqlError::invalid(format!(
                "UDT column {name} does not have a field named {field}"
            ))
        })?;
    let ft = ut.fields[fi].1.clone();
    Ok(Op::SetField(
        ci,
        fi,
        plan_term(value, &ft, &format!("{name}.{field}"), binder)?,
    ))
}

/// The clustering restrictions an UPDATE needs: no slice, and a full clustering key unless
/// it writes static columns only (then none).
fn check_update_keys(
    table: &TableDef,
    keys: &WherePlan,
    static_only: bool,
) -> Result<(), CqlError> {
    let nck = table.clustering_key().count();
    if keys.slice.is_some() {
        return Err(CqlError::invalid(
            "Slice restrictions are not supported on the clustering columns in UPDATE statements",
        ));
    }
    if static_only && keys.prefix_len > 0 {
        return Err(CqlError::invalid(
            "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
        ));
    }
    if !static_only && keys.prefix_len != nck {
        let missing: Vec<&str> = table
            .clustering_key()
            .skip(keys.prefix_len)
            .map(|c| c.name.as_str())
            .collect();
        return Err(CqlError::invalid(format!(
            "Missing mandatory PRIMARY KEY part {}",
            missing.first().copied().unwrap_or("")
        )));
    }
    Ok(())
}

/// Plans a DELETE.
fn plan_delete(
    table: Arc<TableDef>,
    s: &crate::cql::Delete,
    binder: &mut Binder,
) -> Result<ModifyPlan, CqlError> {
    check_writable(&table)?;
    let mut ops = Vec::new();
    for target in &s.columns {
        let op = match target {
            ColumnTarget::Column(name) => {
                let ci = column_index(&table, name)?;
                if table.columns[ci].kind.is_primary_key() {
                    return Err(CqlError::invalid(format!(
                        "Invalid identifier {name} for deletion (should not be a PRIMARY KEY part)"
                    )));
                }
                Op::DeleteColumn(ci)
            }
            ColumnTarget::Element { column, key } => {
                let ci = column_index(&table, column)?;
                let t = &table.columns[ci].typ;
                let (kt, kname) = match t {
                    CqlType::Map {
                        key, frozen: false, ..
                    } => ((**key).clone(), format!("key({column})")),
                    // `sets::value_spec_of` (cql3/operation.cc, element_deletion::prepare)
                    CqlType::Set {
                        elem,
                        frozen: false,
                    } => ((**elem).clone(), format!("value({column})")),
                    CqlType::List { frozen: false, .. } => (CqlType::Int, format!("idx({column})")),
                    _ => {
                        return Err(CqlError::invalid(format!(
                            "Invalid deletion operation for non collection column {column}"
                        )));
                    }
                };
                Op::DeleteElement(ci, plan_term(key, &kt, &kname, binder)?)
            }
            ColumnTarget::Field { column, field } => {
                let ci = column_index(&table, column)?;
                let CqlType::Udt {
                    def: ut,
                    frozen: false,
                } = &table.columns[ci].typ
                else {
                    return Err(CqlError::invalid(format!(
                        "Invalid deletion operation for frozen or non-UDT column {column}"
                    )));
                };
                let fi = ut
                    .fields
                    .iter()
                    .position(|(f, _)| f == field)
                    .ok_or_else(|| {
                        CqlError::invalid(format!(
                            "UDT column {column} does not have a field named {field}"
                        ))
                    })?;
                Op::DeleteField(ci, fi)
            }
        };
        ops.push(op);
    }
    let (_, timestamp) = plan_using(&s.using, binder, false)?;
    let keys = plan_keys(&table, &s.where_clause, binder)?;
    let nck = table.clustering_key().count();
    let static_only = !ops.is_empty()
        && ops
            .iter()
            .all(|o| table.columns[o.column()].kind == ColumnKind::Static);
    let condition = plan_condition(&table, s.condition.as_ref(), binder)?;
    // ScyllaDB's order (`delete_statement::prepare_internal`): the conditions, the WHERE
    // clause (`process_where_clause`, then `validate_where_clause_for_conditions`), then
    // range deletions.
    if let Some(op) = ops
        .iter()
        .find(|o| table.columns[o.column()].kind != ColumnKind::Static)
        && keys.prefix_len != nck
        && keys.slice.is_none()
    {
        let missing = table
            .clustering_key()
            .nth(keys.prefix_len)
            .map(|c| c.name.clone())
            .unwrap_or_default();
        return Err(CqlError::invalid(format!(
            "Primary key column '{missing}' must be specified in order to modify column '{}'",
            table.columns[op.column()].name
        )));
    }
    let plan = ModifyPlan {
        cols: col_infos(&table),
        table,
        kind: ModifyKind::Delete,
        keys,
        ops,
        ttl: None,
        timestamp,
        condition,
        static_only,
        json: None,
    };
    check_conditional(&plan)?;
    if plan.keys.slice.is_some() && !plan.ops.is_empty() {
        return Err(CqlError::invalid(
            "Range deletions are not supported for specific columns",
        ));
    }
    Ok(plan)
}

/// Plans the IF clause of an UPDATE or DELETE.
fn plan_condition(
    table: &TableDef,
    cond: Option<&Conditional>,
    binder: &mut Binder,
) -> Result<Option<CondPlan>, CqlError> {
    let Some(cond) = cond else { return Ok(None) };
    if table.is_counter() {
        return Err(CqlError::invalid(
            "Conditional updates are not supported on counter tables",
        ));
    }
    Ok(Some(match cond {
        Conditional::Exists => CondPlan::Exists,
        Conditional::Conditions(list) => CondPlan::Conditions(
            list.iter()
                .map(|c| plan_column_condition(table, c, binder))
                .collect::<Result<_, _>>()?,
        ),
    }))
}

/// One condition of an `IF` clause: the index of its column and its test.
fn plan_column_condition(
    table: &TableDef,
    c: &Condition,
    binder: &mut Binder,
) -> Result<(usize, CondTest), CqlError> {
    let (target, test) = match c {
        Condition::Compare { target, op, value } => (target, Some((*op, value))),
        Condition::In { target, .. } | Condition::Contains { target, .. } => (target, None),
        Condition::Like { .. } => {
            return Err(CqlError::invalid("LIKE conditions are not supported"));
        }
    };
    let (col_name, elem, field) = match target {
        ColumnTarget::Column(c) => (c, None, None),
        ColumnTarget::Element { column, key } => (column, Some(key), None),
        ColumnTarget::Field { column, field } => (column, None, Some(field)),
    };
    let ci = column_index(table, col_name)?;
    let def = &table.columns[ci];
    if def.kind.is_primary_key() {
        return Err(CqlError::invalid(format!(
            "PRIMARY KEY column '{col_name}' cannot have IF conditions"
        )));
    }
    let t = &def.typ;
    let compared = || test.ok_or_else(|| CqlError::invalid("Unsupported condition"));
    let ct = match (c, elem, field) {
        (Condition::In { values, .. }, None, None) => {
            CondTest::In(plan_in_condition(values, t, col_name, binder)?)
        }
        (Condition::Contains { key, value, .. }, None, None) => {
            plan_contains_condition(*key, value, t, col_name, binder)?
        }
        (_, Some(key), None) => {
            let (op, value) = compared()?;
            plan_element_condition(key, op, value, t, col_name, binder)?
        }
        (_, None, Some(field)) => {
            let (op, value) = compared()?;
            plan_field_condition(field, op, value, t, col_name, binder)?
        }
        _ => {
            let (op, value) = compared()?;
            CondTest::Compare(op, plan_term(value, t, col_name, binder)?)
        }
    };
    Ok((ci, ct))
}

/// The values of `IF c IN (...)` / `IF c IN ?` for column `c` of type `t`.
fn plan_in_condition(
    values: &InValues,
    t: &CqlType,
    col_name: &str,
    binder: &mut Binder,
) -> Result<KeyValues, CqlError> {
    Ok(match values {
        InValues::Marker(m) => KeyValues::InMarker(marker(
            m,
            &CqlType::List {
                elem: Box::new(t.frozen()),
                frozen: false,
            },
            &format!("IN({col_name})"),
            binder,
        )),
        // `IF c IN (...)` is a list literal received by `IN(c)` (Scylla
        // spells the operator in uppercase, unlike Cassandra): its elements
        // are `value(IN(c))` (get_rhs_receiver and list_value_spec_of,
        // cql3/expr/prepare_expr.cc).
        InValues::List(items) => {
            let element_name = format!("value(IN({col_name}))");
            KeyValues::In(
                items
                    .iter()
                    .map(|i| plan_term(i, t, &element_name, binder))
                    .collect::<Result<_, _>>()?,
            )
        }
    })
}

/// `IF c CONTAINS x` / `IF m CONTAINS KEY k` on a collection column of type `t`.
fn plan_contains_condition(
    key: bool,
    value: &Term,
    t: &CqlType,
    col_name: &str,
    binder: &mut Binder,
) -> Result<CondTest, CqlError> {
    let et = match (t, key) {
        (CqlType::Map { key: k, .. }, true) => (**k).clone(),
        (CqlType::Map { value: v, .. }, false) => (**v).clone(),
        (CqlType::List { elem, .. } | CqlType::Set { elem, .. }, false) => (**elem).clone(),
        _ => {
            return Err(CqlError::invalid(format!(
                "Invalid CONTAINS condition on {col_name}"
            )));
        }
    };
    // CONTAINS is received by `value(c)`, CONTAINS KEY by `key(m)`
    // (get_rhs_receiver, cql3/expr/prepare_expr.cc).
    let receiver = if key {
        format!("key({col_name})")
    } else {
        format!("value({col_name})")
    };
    Ok(CondTest::Contains(
        key,
        plan_term(value, &et, &receiver, binder)?,
    ))
}

/// `IF m[k] op v` / `IF l[i] op v` on a map or list column of type `t`.
fn plan_element_condition(
    key: &Term,
    op: CompareOp,
    value: &Term,
    t: &CqlType,
    col_name: &str,
    binder: &mut Binder,
) -> Result<CondTest, CqlError> {
    // The subscript of `IF m[k] = v` is `key(m)`, of `IF l[i] = v`
    // `index(l)` (map_key_spec_of / list_key_spec_of); `v` is
    // `value(m)` / `value(l)` (get_lhs_receiver, prepare_expr.cc).
    let (kt, vt, key_name) = match t {
        CqlType::Map { key, value, .. } => (
            (**key).clone(),
            (**value).clone(),
            format!("key({col_name})"),
        ),
        CqlType::List { elem, .. } => {
            (CqlType::Int, (**elem).clone(), format!("index({col_name})"))
        }
        _ => {
            return Err(CqlError::invalid(format!(
                "Invalid element condition on non-collection column {col_name}"
            )));
        }
    };
    Ok(CondTest::Element(
        plan_term(key, &kt, &key_name, binder)?,
        op,
        plan_term(value, &vt, &format!("value({col_name})"), binder)?,
    ))
}

/// `IF u.f op v` on a user-type column of type `t`.
fn plan_field_condition(
    field: &str,
    op: CompareOp,
    value: &Term,
    t: &CqlType,
    col_name: &str,
    binder: &mut Binder,
) -> Result<CondTest, CqlError> {
    let CqlType::Udt { def: ut, .. } = t else {
        return Err(CqlError::invalid(format!(
            "Invalid field condition on non-UDT column {col_name}"
        )));
    };
    let fi = ut
        .fields
        .iter()
        .position(|(f, _)| f == field)
        .ok_or_else(|| {
            CqlError::invalid(format!(
                "UDT column {col_name} does not have a field named {field}"
            ))
        })?;
    let ft = ut.fields[fi].1.clone();
    // `IF u.f = v`: `v` is received by the field's name alone
    // (get_lhs_receiver of a field_selection, prepare_expr.cc).
    Ok(CondTest::Field(
        fi,
        op,
        plan_term(value, &ft, field, binder)?,
    ))
}

/// The values a modification statement evaluates: the request's, extended with an `INSERT
/// JSON`'s document values.
pub(crate) fn bind_values<'a>(
    plan: &ModifyPlan,
    values: &'a [BoundValue],
) -> Result<Cow<'a, [BoundValue]>, CqlError> {
    match &plan.json {
        Some(j) => Ok(Cow::Owned(j.bind(values)?)),
        None => Ok(Cow::Borrowed(values)),
    }
}

/// The timestamp and TTL of one execution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteParams {
    /// Write timestamp (µs).
    pub(crate) ts: Timestamp,
    /// TTL in seconds.
    pub(crate) ttl: Option<u32>,
}

/// Maximum TTL (20 years), as Cassandra.
const MAX_TTL: i64 = 630_720_000;

/// Resolves `USING TIMESTAMP` / `USING TTL` (with the table default) for one execution.
pub(crate) fn write_params(
    plan: &ModifyPlan,
    ctx: &EvalCtx<'_>,
    default_ts: Timestamp,
) -> Result<WriteParams, CqlError> {
    let ts = match &plan.timestamp {
        Some(e) => match e.eval(ctx)? {
            Bound::Value(v) => {
                let t = v.as_i64().unwrap_or(0);
                if t == i64::MIN {
                    return Err(CqlError::invalid(
                        "Out of bound timestamp, must be in [-9223372036854775807, 9223372036854775807]",
                    ));
                }
                t
            }
            Bound::Unset => default_ts,
            Bound::Null => return Err(CqlError::invalid("Invalid null value of timestamp")),
        },
        None => default_ts,
    };
    let default_ttl = plan.table.options.default_time_to_live;
    let ttl = match &plan.ttl {
        Some(e) => match e.eval(ctx)? {
            Bound::Value(v) => {
                let t = v.as_i64().unwrap_or(0);
                if t < 0 {
                    return Err(CqlError::invalid(format!(
                        "A TTL must be greater or equal to 0, but was {t}"
                    )));
                }
                if t > MAX_TTL {
                    return Err(CqlError::invalid(format!(
                        "ttl is too large. requested ({t}) maximum ({MAX_TTL})"
                    )));
                }
                (t > 0).then_some(t as u32)
            }
            Bound::Unset => (default_ttl > 0).then_some(default_ttl as u32),
            Bound::Null => return Err(CqlError::invalid("Invalid null value of TTL")),
        },
        None => (default_ttl > 0).then_some(default_ttl as u32),
    };
    Ok(WriteParams { ts, ttl })
}

/// Reads the live elements (key, value) of a list cell of a row (`ck` `None`: the static row).
pub(crate) type ListReader<'r> =
    dyn Fn(&crate::storage::PartitionKey, Option<&[Value]>, ColumnId) -> Vec<(Value, Value)> + 'r;

/// Offset between the Unix epoch and the start of the Gregorian calendar, in 100 ns.
const GREGORIAN_OFFSET: i128 = 0x01B2_1DD2_1381_4000;

/// `2010-01-01` in µs since the epoch: the pivot of prepended list keys.
const PREPEND_PIVOT: i64 = 1_262_304_000_000_000;

/// List element keys for `n` elements written at `ts`: timeuuids with that time and
/// increasing sub-microsecond steps (append), or the mirrored time (prepend).
fn list_keys(ts: Timestamp, n: usize, prepend: bool) -> Vec<Value> {
    let lsb = crate::types::timeuuid::random_lsb();
    let base = if prepend {
        (2 * PREPEND_PIVOT).saturating_sub(ts)
    } else {
        ts
    };
    let raw0 = i128::from(base) * 10 + GREGORIAN_OFFSET;
    (0..n)
        .map(|i| {
            let raw = if prepend {
                raw0 - (n - i) as i128
            } else {
                raw0 + i as i128
            };
            let raw = raw.clamp(0, (1 << 60) - 1) as u64;
            Value::Timeuuid(crate::types::timeuuid::from_raw(raw, lsb))
        })
        .collect()
}

/// The elements a whole collection / UDT value writes.
fn collection_elements(v: &Value, typ: &CqlType, p: WriteParams) -> Vec<ElementUpdate> {
    let el = |key: Value, value: Value| ElementUpdate {
        key,
        ts: p.ts,
        ttl: p.ttl,
        value: Some(value),
    };
    match (typ, v) {
        (CqlType::List { .. }, Value::List(items)) => list_keys(p.ts, items.len(), false)
            .into_iter()
            .zip(items.iter())
            .map(|(k, x)| el(k, x.clone()))
            .collect(),
        (CqlType::Set { .. }, Value::Set(items)) => {
            items.iter().map(|x| el(x.clone(), Value::Empty)).collect()
        }
        (CqlType::Map { .. }, Value::Map(entries)) => entries
            .iter()
            .map(|(k, x)| el(k.clone(), x.clone()))
            .collect(),
        (CqlType::Udt { .. }, Value::Udt(fields)) => fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().map(|f| el(Value::Smallint(i as i16), f.clone())))
            .collect(),
        _ => Vec::new(),
    }
}

/// Sorts element writes by key and keeps the first of equal keys.
fn sort_elements(mut e: Vec<ElementUpdate>) -> Vec<ElementUpdate> {
    e.sort_by(|a, b| a.key.cmp(&b.key));
    e.dedup_by(|later, earlier| later.key == earlier.key);
    e
}

/// Builds the mutations of one execution.
pub(crate) fn build_mutations(
    plan: &ModifyPlan,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    read_list: &ListReader<'_>,
) -> Result<Vec<PartitionMutation>, CqlError> {
    let keys = plan
        .keys
        .partition_keys(&plan.table, ctx)?
        .unwrap_or_default();
    let mut out = Vec::with_capacity(keys.len());
    // Clustering rows (full keys) or ranges.
    let prefixes = plan.keys.prefixes(ctx)?;
    for key in keys {
        let mut m = PartitionMutation::new(key);
        match plan.kind {
            ModifyKind::Insert | ModifyKind::Update => {
                write_rows(plan, ctx, p, read_list, &prefixes, &mut m)?;
            }
            ModifyKind::Delete if plan.ops.is_empty() => {
                delete_rows(plan, ctx, p, &prefixes, &mut m)?;
            }
            ModifyKind::Delete => delete_columns(plan, ctx, p, read_list, &prefixes, &mut m)?,
        }
        out.push(m);
    }
    Ok(out)
}

/// An INSERT's or UPDATE's writes to partition `m`: its static columns, then a row for each
/// clustering key (with a row marker for an INSERT).
fn write_rows(
    plan: &ModifyPlan,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    read_list: &ListReader<'_>,
    prefixes: &[Vec<Value>],
    m: &mut PartitionMutation,
) -> Result<(), CqlError> {
    let nck = plan.table.clustering_key().count();
    let static_ops: Vec<&Op> = plan
        .ops
        .iter()
        .filter(|o| plan.table.columns[o.column()].kind == ColumnKind::Static)
        .collect();
    let regular_ops: Vec<&Op> = plan
        .ops
        .iter()
        .filter(|o| plan.table.columns[o.column()].kind != ColumnKind::Static)
        .collect();
    if !static_ops.is_empty() {
        let mut row = RowUpdate::default();
        apply_ops(plan, &static_ops, &mut row, ctx, p, &m.key, None, read_list)?;
        if !row.is_empty() {
            m.static_row = Some(row);
        }
    }
    let write_row =
        plan.kind == ModifyKind::Insert && plan.keys.prefix_len == nck || !regular_ops.is_empty();
    if write_row && (plan.keys.prefix_len == nck) {
        for ck in prefixes {
            let mut row = RowUpdate::default();
            if plan.kind == ModifyKind::Insert {
                row.marker = Some(Liveness {
                    ts: p.ts,
                    ttl: p.ttl,
                });
            }
            apply_ops(
                plan,
                &regular_ops,
                &mut row,
                ctx,
                p,
                &m.key,
                Some(ck),
                read_list,
            )?;
            if !row.is_empty() {
                m.rows.push((ClusteringKey::new(ck.clone()), row));
            }
        }
    }
    Ok(())
}

/// A DELETE of whole rows from partition `m`: the partition, the rows of full clustering
/// keys, or range tombstones over clustering ranges (the empty ones left out).
fn delete_rows(
    plan: &ModifyPlan,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    prefixes: &[Vec<Value>],
    m: &mut PartitionMutation,
) -> Result<(), CqlError> {
    let nck = plan.table.clustering_key().count();
    if !plan.keys.restricts_clustering() {
        m.delete_partition(p.ts);
    } else if plan.keys.slice.is_none() && plan.keys.prefix_len == nck {
        for ck in prefixes {
            m.row_mut(&ClusteringKey::new(ck.clone())).deletion = Some(p.ts);
        }
    } else {
        let cmp = crate::storage::ClusteringComparator::new(
            &plan
                .table
                .clustering_key()
                .map(|c| c.order == crate::schema::ClusteringOrder::Desc)
                .collect::<Vec<_>>(),
        );
        for r in plan.keys.clustering_ranges(&plan.table, ctx)? {
            let empty = cmp.is_some_and(|c| c.normalize(std::slice::from_ref(&r)).is_empty());
            if empty {
                continue;
            }
            let ClusteringRange { start, end } = r;
            m.range_tombstones.push(RangeTombstone {
                start,
                end,
                ts: p.ts,
            });
        }
    }
    Ok(())
}

/// A DELETE of columns (or their elements) from partition `m`: its static ones, then those
/// of each clustering row.
fn delete_columns(
    plan: &ModifyPlan,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    read_list: &ListReader<'_>,
    prefixes: &[Vec<Value>],
    m: &mut PartitionMutation,
) -> Result<(), CqlError> {
    let ops: Vec<&Op> = plan.ops.iter().collect();
    if plan.static_only {
        let mut row = RowUpdate::default();
        apply_ops(plan, &ops, &mut row, ctx, p, &m.key, None, read_list)?;
        if !row.is_empty() {
            m.static_row = Some(row);
        }
        return Ok(());
    }
    let (st, reg): (Vec<&Op>, Vec<&Op>) = ops
        .into_iter()
        .partition(|o| plan.table.columns[o.column()].kind == ColumnKind::Static);
    if !st.is_empty() {
        let mut row = RowUpdate::default();
        apply_ops(plan, &st, &mut row, ctx, p, &m.key, None, read_list)?;
        m.static_row = Some(row);
    }
    for ck in prefixes {
        let mut row = RowUpdate::default();
        apply_ops(plan, &reg, &mut row, ctx, p, &m.key, Some(ck), read_list)?;
        if !row.is_empty() {
            m.rows.push((ClusteringKey::new(ck.clone()), row));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn apply_ops(
    plan: &ModifyPlan,
    ops: &[&Op],
    row: &mut RowUpdate,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    pk: &crate::storage::PartitionKey,
    ck: Option<&Vec<Value>>,
    read_list: &ListReader<'_>,
) -> Result<(), CqlError> {
    for op in ops {
        let ci = op.column();
        let info = &plan.cols[ci];
        let id = match info.source {
            ColSource::Static(id) | ColSource::Regular(id) => id,
            _ => continue,
        };
        let current_list = || {
            if op.reads(&plan.cols) {
                read_list(pk, ck.map(|v| v.as_slice()), id)
            } else {
                Vec::new()
            }
        };
        if let Some(cell) = op_cell(op, &info.typ, ctx, p, current_list)? {
            row.set_cell(id, cell);
        }
    }
    Ok(())
}

/// A list's current elements (key, value), as an operation that needs them reads them.
type CurrentList = Vec<(Value, Value)>;

/// The cell update of one operation on a column of type `typ`; `None` when it writes
/// nothing (an unset or null value where nothing is to be written).
fn op_cell(
    op: &Op,
    typ: &CqlType,
    ctx: &EvalCtx<'_>,
    p: WriteParams,
    current_list: impl Fn() -> CurrentList,
) -> Result<Option<CellUpdate>, CqlError> {
    let ts = p.ts;
    let element = |key: Value, ttl: Option<u32>, value: Option<Value>| CellUpdate::Collection {
        tombstone: None,
        elements: vec![ElementUpdate {
            key,
            ts,
            ttl,
            value,
        }],
    };
    Ok(match op {
        Op::Set(_, e) => set_cell(e.eval(ctx)?, typ, p),
        Op::Add(_, e) => match e.eval(ctx)? {
            Bound::Value(v) => Some(add_cell(&v, typ, p)),
            Bound::Null | Bound::Unset => None,
        },
        Op::Prepend(_, e) => match e.eval(ctx)? {
            Bound::Value(Value::List(items)) => Some(prepend_cell(&items, p)),
            _ => None,
        },
        Op::Remove(_, e) => match e.eval(ctx)? {
            Bound::Value(v) => remove_cell(&v, typ, ts, current_list),
            Bound::Null | Bound::Unset => None,
        },
        Op::SetElement(_, k, e) => {
            let key = eval_required(k, ctx, "a collection key")?;
            let b = e.eval(ctx)?;
            if b == Bound::Unset {
                return Ok(None);
            }
            let key = match typ {
                CqlType::List { .. } => match key {
                    // SCYLLA_TIMEUUID_LIST_INDEX: the uuid is the element's key.
                    Value::Uuid(u) | Value::Timeuuid(u) => Value::Timeuuid(u),
                    other => list_element_key(&other, current_list)?,
                },
                _ => key,
            };
            Some(element(key, p.ttl, b.into_option()))
        }
        Op::SetField(_, fi, e) => {
            let b = e.eval(ctx)?;
            if b == Bound::Unset {
                return Ok(None);
            }
            Some(element(Value::Smallint(*fi as i16), p.ttl, b.into_option()))
        }
        Op::DeleteColumn(_) => Some(if typ.is_multi_cell() {
            CellUpdate::Collection {
                tombstone: Some(ts),
                elements: Vec::new(),
            }
        } else {
            CellUpdate::Atomic {
                ts,
                ttl: None,
                value: None,
            }
        }),
        Op::DeleteElement(_, k) => {
            let key = eval_required(k, ctx, "a collection key")?;
            let key = match typ {
                CqlType::List { .. } => list_element_key(&key, current_list)?,
                _ => key,
            };
            Some(element(key, None, None))
        }
        Op::DeleteField(_, fi) => Some(element(Value::Smallint(*fi as i16), None, None)),
    })
}

/// `c = v`: an atomic cell, or a whole collection (its tombstone at `ts - 1` and the new
/// elements); nothing for an unset value.
fn set_cell(b: Bound, typ: &CqlType, p: WriteParams) -> Option<CellUpdate> {
    if b == Bound::Unset {
        return None;
    }
    let v = b.into_option();
    Some(if typ.is_multi_cell() {
        let elements = match &v {
            Some(v) => sort_elements(collection_elements(v, typ, p)),
            None => Vec::new(),
        };
        CellUpdate::Collection {
            tombstone: Some(p.ts - 1),
            elements,
        }
    } else {
        CellUpdate::Atomic {
            ts: p.ts,
            ttl: p.ttl,
            value: v,
        }
    })
}

/// `c = c + v`: a counter delta, or elements added to a collection.
fn add_cell(v: &Value, typ: &CqlType, p: WriteParams) -> CellUpdate {
    if typ.is_counter() {
        CellUpdate::CounterDelta {
            ts: p.ts,
            delta: v.as_i64().unwrap_or(0),
        }
    } else {
        CellUpdate::Collection {
            tombstone: None,
            elements: sort_elements(collection_elements(v, typ, p)),
        }
    }
}

/// `l = v + l`: elements prepended to a list (keys before every existing one).
fn prepend_cell(items: &[Value], p: WriteParams) -> CellUpdate {
    let elements = list_keys(p.ts, items.len(), true)
        .into_iter()
        .zip(items.iter())
        .map(|(k, x)| ElementUpdate {
            key: k,
            ts: p.ts,
            ttl: p.ttl,
            value: Some(x.clone()),
        })
        .collect();
    CellUpdate::Collection {
        tombstone: None,
        elements: sort_elements(elements),
    }
}

/// `c = c - v`: a negative counter delta, or tombstones of the list elements equal to one
/// of `v` or of the set elements of `v`; nothing when no element is removed.
fn remove_cell(
    v: &Value,
    typ: &CqlType,
    ts: Timestamp,
    current_list: impl Fn() -> CurrentList,
) -> Option<CellUpdate> {
    if typ.is_counter() {
        let d = v.as_i64().unwrap_or(0);
        return Some(CellUpdate::CounterDelta {
            ts,
            delta: d.wrapping_neg(),
        });
    }
    let tomb = |key: Value| ElementUpdate {
        key,
        ts,
        ttl: None,
        value: None,
    };
    let elements: Vec<ElementUpdate> = match (typ, v) {
        (CqlType::List { .. }, Value::List(items)) => current_list()
            .into_iter()
            .filter(|(_, x)| items.contains(x))
            .map(|(k, _)| tomb(k))
            .collect(),
        (_, Value::Set(items)) => items.iter().cloned().map(tomb).collect(),
        _ => Vec::new(),
    };
    (!elements.is_empty()).then(|| CellUpdate::Collection {
        tombstone: None,
        elements: sort_elements(elements),
    })
}

/// The key of the list element at index `index` (an integer), or Scylla's error.
fn list_element_key(
    index: &Value,
    current_list: impl Fn() -> CurrentList,
) -> Result<Value, CqlError> {
    let idx = index.as_i64().unwrap_or(-1);
    let list = current_list();
    match usize::try_from(idx).ok().and_then(|i| list.get(i).cloned()) {
        Some((k, _)) => Ok(k),
        None => Err(CqlError::invalid(format!(
            "List index {idx} out of bound, list has size {}",
            list.len()
        ))),
    }
}

/// Evaluates an IF clause against the current row; `row` is `None` when it does not
/// exist. Returns whether it holds.
pub(crate) fn check_condition(
    plan: &ModifyPlan,
    cond: &CondPlan,
    row: Option<&RowRef<'_>>,
    ctx: &EvalCtx<'_>,
) -> Result<bool, CqlError> {
    match cond {
        CondPlan::NotExists => Ok(row.is_none()),
        CondPlan::Exists => Ok(row.is_some()),
        CondPlan::Conditions(list) => {
            for (ci, test) in list {
                let current = row.and_then(|r| r.value(&plan.cols[*ci]));
                if !condition_holds(test, current, ctx)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// Whether one condition holds for the current value of its column.
fn condition_holds(
    test: &CondTest,
    current: Option<Value>,
    ctx: &EvalCtx<'_>,
) -> Result<bool, CqlError> {
    let cmp_opt =
        |cur: Option<&Value>, op: CompareOp, want: Option<Value>| -> Result<bool, CqlError> {
            match (cur, want) {
                (None, None) => Ok(matches!(op, CompareOp::Eq)),
                (Some(_), None) => match op {
                    CompareOp::Eq => Ok(false),
                    CompareOp::Ne => Ok(true),
                    _ => Err(CqlError::invalid(format!(
                        "Invalid comparison with null for operator \"{op}\""
                    ))),
                },
                (None, Some(_)) => Ok(matches!(op, CompareOp::Ne)),
                (Some(c), Some(w)) => Ok(compare(c, op, &w)),
            }
        };
    match test {
        CondTest::Compare(op, e) => {
            let want = e.eval(ctx)?.into_option();
            cmp_opt(current.as_ref(), *op, want)
        }
        CondTest::In(kv) => {
            let vals = match kv {
                KeyValues::In(es) => {
                    let mut v = Vec::new();
                    for e in es {
                        v.push(e.eval(ctx)?.into_option());
                    }
                    v
                }
                other => other
                    .eval(ctx, "IN condition")?
                    .into_iter()
                    .map(Some)
                    .collect(),
            };
            Ok(vals.iter().any(|w| w.as_ref() == current.as_ref()))
        }
        CondTest::Element(k, op, e) => {
            let key = eval_required(k, ctx, "a collection key")?;
            let elem = match (&current, &key) {
                (Some(Value::Map(m)), _) => {
                    m.iter().find(|(mk, _)| *mk == key).map(|(_, v)| v.clone())
                }
                (Some(Value::List(l)), Value::Int(i)) => {
                    usize::try_from(*i).ok().and_then(|i| l.get(i).cloned())
                }
                _ => None,
            };
            cmp_opt(elem.as_ref(), *op, e.eval(ctx)?.into_option())
        }
        CondTest::Field(fi, op, e) => {
            let f = current
                .as_ref()
                .and_then(|v| v.as_fields())
                .and_then(|f| f.get(*fi).cloned().flatten());
            cmp_opt(f.as_ref(), *op, e.eval(ctx)?.into_option())
        }
        CondTest::Contains(key, e) => {
            let want = eval_required(e, ctx, "CONTAINS")?;
            Ok(match &current {
                Some(Value::Map(m)) => m
                    .iter()
                    .any(|(k, v)| if *key { *k == want } else { *v == want }),
                Some(Value::List(l)) | Some(Value::Set(l)) => l.contains(&want),
                _ => false,
            })
        }
    }
}

/// The columns an LWT result reports besides `[applied]`: every column for `IF [NOT]
/// EXISTS`, else the conditioned columns (table order, no duplicates).
pub(crate) fn condition_columns(plan: &ModifyPlan, cond: &CondPlan) -> Vec<usize> {
    match cond {
        CondPlan::NotExists | CondPlan::Exists => (0..plan.table.columns.len()).collect(),
        CondPlan::Conditions(list) => {
            let mut v: Vec<usize> = list.iter().map(|(c, _)| *c).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    }
}
