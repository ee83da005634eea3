//! SELECT: the selection (columns, functions, aggregates, `writetime`/`ttl`, `token`), the
//! row scan over a table's data (partition keys, token ranges or full scans, clustering
//! slices, filters, static-only rows, DISTINCT, ORDER BY, LIMIT, PER PARTITION LIMIT, GROUP
//! BY) and paging. Rows stream straight into the response frame through
//! [`crate::frame::RowsWriter`].
//!
//! The behaviour is ScyllaDB 2025.x's: result columns are named as its
//! `{:result_set_metadata}` expression printer names them (`m['k']`, `cast(x as text)`,
//! `system.max(v)`), `IN` partitions are read in the order of their sorted values (also
//! across pages), every GROUP BY query aggregates (a plain selector gives its group's first
//! value) and is answered in one page, PER PARTITION LIMIT then counting groups, and sums and
//! averages are computed as `aggregate_fcts.cc` computes them. Its tests are in
//! `select_tests.rs`.
//! `SELECT JSON` plans the same selection and writes each row as one `[json]` text
//! ([`super::json::JsonSelection`]).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use num_bigint::BigInt;

use crate::cql::{Order, Select, Selection, Selector, Term};
use crate::frame::{ColumnSpec, CqlError, ResultMetadata, RowsWriter};
use crate::schema::{ClusteringOrder, ColumnKind, Schema, TableDef};
use crate::storage::{
    CellView, ClusteringRange, ColumnId, Now, PartitionKey, PartitionStart, PartitionView, RowView,
    ScanRow, TableData,
};
use crate::types::CqlType;
use crate::types::value::Value;

use super::binder::{Binder, column_index, resolve_table};
use super::paging::{PageBudget, PageLimits, PagingState};
use super::restrictions::{PartitionRestriction, ReadyFilter, WhereMode, WherePlan, plan_where};
use super::values::{Bound, EvalCtx, Expr, Func, plan_term};

/// The most partition keys one SELECT may name through `IN` restrictions: ScyllaDB's
/// `max_partition_key_restrictions_per_query` at its default (db/config.cc).
pub(crate) const MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY: usize = 100;

/// Where a table column's value comes from in a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ColSource {
    /// Partition-key component `i`.
    Pk(usize),
    /// Clustering component `i`.
    Ck(usize),
    /// A static cell.
    Static(ColumnId),
    /// A regular cell.
    Regular(ColumnId),
}

/// A column as the executor reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColInfo {
    /// Where it comes from.
    pub(crate) source: ColSource,
    /// Its type.
    pub(crate) typ: CqlType,
}

/// The read layout of every column of a table, by table column index.
pub(crate) fn col_infos(table: &TableDef) -> Vec<ColInfo> {
    table
        .columns
        .iter()
        .map(|c| ColInfo {
            source: match c.kind {
                ColumnKind::PartitionKey => ColSource::Pk(c.position.max(0) as usize),
                ColumnKind::Clustering => ColSource::Ck(c.position.max(0) as usize),
                ColumnKind::Static => ColSource::Static(ColumnId(c.id)),
                ColumnKind::Regular => ColSource::Regular(ColumnId(c.id)),
            },
            typ: c.typ.clone(),
        })
        .collect()
}

/// One row as the scan presents it.
#[derive(Clone, Copy)]
pub(crate) struct RowRef<'a> {
    /// The partition.
    pub(crate) part: PartitionView<'a>,
    /// The static row, if live.
    pub(crate) static_row: Option<RowView<'a>>,
    /// The clustering row; `None` for a static-only or DISTINCT row.
    pub(crate) row: Option<RowView<'a>>,
}

impl<'a> RowRef<'a> {
    /// The cell of a column, if any.
    pub(crate) fn cell(&self, info: &ColInfo) -> Option<CellView<'a>> {
        match info.source {
            ColSource::Static(id) => self.static_row?.cell(id),
            ColSource::Regular(id) => self.row?.cell(id),
            _ => None,
        }
    }

    /// The value of a column.
    pub(crate) fn value(&self, info: &ColInfo) -> Option<Value> {
        match info.source {
            ColSource::Pk(i) => self.part.key_values().get(i).cloned(),
            ColSource::Ck(i) => self.row.and_then(|r| r.key().get(i).cloned()),
            _ => self.cell(info).and_then(|c| c.to_value(&info.typ)),
        }
    }

    /// Writes a column's value as the row's next cell. For the columns of a row written in
    /// turn: `cursors` (zeroed for the row's first column) make columns written in ascending
    /// id order one pass over the static and the row's cells (see [`RowView::cell_from`]).
    fn write_value(&self, info: &ColInfo, cursors: &mut [usize; 2], w: &mut RowsWriter<'_>) {
        let cell = match info.source {
            ColSource::Pk(i) => return w.option_cell(self.part.key_values().get(i)),
            ColSource::Ck(i) => return w.option_cell(self.row.and_then(|r| r.key().get(i))),
            ColSource::Static(id) => self
                .static_row
                .and_then(|r| r.cell_from(id, &mut cursors[0])),
            ColSource::Regular(id) => self.row.and_then(|r| r.cell_from(id, &mut cursors[1])),
        };
        match cell {
            Some(CellView::Atomic { value, .. }) => w.value_cell(value),
            Some(CellView::Counter { value, .. }) => w.value_cell(&Value::Bigint(value)),
            Some(c) => w.option_cell(c.to_value(&info.typ).as_ref()),
            None => w.null_cell(),
        }
    }
}

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggKind {
    /// `count(*)` / `count(x)`
    Count,
    /// `min(x)`
    Min,
    /// `max(x)`
    Max,
    /// `sum(x)`
    Sum,
    /// `avg(x)`
    Avg,
}

/// A planned selector.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SelExpr {
    /// A column (table index).
    Col(usize),
    /// `writetime(c)`
    WriteTime(usize),
    /// `ttl(c)`
    Ttl(usize),
    /// `token(pk...)`
    Token,
    /// A scalar function.
    Call(Func, Vec<SelExpr>),
    /// A UDT field (by index).
    Field(Box<SelExpr>, usize),
    /// A map value by key / list element by index.
    Element(Box<SelExpr>, Expr),
    /// An aggregate over the rows (`None`: `count(*)`).
    Agg(AggKind, Option<Box<SelExpr>>, CqlType),
}

impl SelExpr {
    /// Appends the table columns the selector reads (`token()` reads the partition key).
    fn columns(&self, table: &TableDef, out: &mut Vec<usize>) {
        match self {
            SelExpr::Col(i) | SelExpr::WriteTime(i) | SelExpr::Ttl(i) => out.push(*i),
            SelExpr::Token => out.extend(
                (0..table.columns.len())
                    .filter(|&i| table.columns[i].kind == ColumnKind::PartitionKey),
            ),
            SelExpr::Call(_, args) => {
                for a in args {
                    a.columns(table, out);
                }
            }
            SelExpr::Field(e, _) | SelExpr::Element(e, _) => e.columns(table, out),
            SelExpr::Agg(_, arg, _) => {
                if let Some(a) = arg {
                    a.columns(table, out);
                }
            }
        }
    }

    fn is_aggregate(&self) -> bool {
        match self {
            SelExpr::Agg(..) => true,
            SelExpr::Call(_, args) => args.iter().any(SelExpr::is_aggregate),
            SelExpr::Field(e, _) | SelExpr::Element(e, _) => e.is_aggregate(),
            _ => false,
        }
    }

    /// Evaluates a non-aggregate selector on a row.
    fn eval(
        &self,
        r: &RowRef<'_>,
        cols: &[ColInfo],
        ctx: &EvalCtx<'_>,
    ) -> Result<Option<Value>, CqlError> {
        Ok(match self {
            SelExpr::Col(i) => cols.get(*i).and_then(|c| r.value(c)),
            SelExpr::WriteTime(i) => cols
                .get(*i)
                .and_then(|c| r.cell(c))
                .and_then(|c| c.write_time())
                .map(Value::Bigint),
            SelExpr::Ttl(i) => cols.get(*i).and_then(|c| r.cell(c)).and_then(|c| match c {
                CellView::Atomic { ttl, .. } => ttl.map(|t| Value::Int(t as i32)),
                _ => None,
            }),
            SelExpr::Token => Some(Value::Bigint(r.part.token())),
            SelExpr::Call(f, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(a.eval(r, cols, ctx)?);
                }
                f.apply(&vals)?
            }
            SelExpr::Field(e, i) => e
                .eval(r, cols, ctx)?
                .and_then(|v| v.as_fields().and_then(|f| f.get(*i).cloned().flatten())),
            SelExpr::Element(e, key) => {
                let Some(v) = e.eval(r, cols, ctx)? else {
                    return Ok(None);
                };
                let k = key.eval(ctx)?.into_option();
                match (&v, k) {
                    (Value::Map(m), Some(k)) => {
                        m.iter().find(|(mk, _)| *mk == k).map(|(_, v)| v.clone())
                    }
                    (Value::List(l), Some(Value::Int(i))) => {
                        usize::try_from(i).ok().and_then(|i| l.get(i).cloned())
                    }
                    (Value::Set(s), Some(k)) => s.contains(&k).then_some(k),
                    _ => None,
                }
            }
            SelExpr::Agg(..) => None,
        })
    }
}

/// The accumulated state of one selector of an aggregate query, as ScyllaDB's
/// `aggregate_fcts.cc` keeps it: integer sums in an unbounded integer (narrowed to the
/// argument's type at the end, an overflow being an error), float sums in the float type
/// itself, decimal sums exactly.
#[derive(Debug, Clone)]
enum AggState {
    /// A non-aggregate selector: its value in the first row.
    First(Option<Option<Value>>),
    /// Rows or non-null values counted.
    Count(i64),
    /// The smallest / largest value so far.
    MinMax(Option<Value>),
    /// Integer (tinyint .. bigint, counter, varint) sum and count.
    IntSum(BigInt, i64),
    /// `float` sum and count.
    FloatSum(f32, i64),
    /// `double` sum and count.
    DoubleSum(f64, i64),
    /// `decimal` sum (unscaled value, scale) and count.
    DecimalSum(BigInt, i32, i64),
}

impl AggState {
    fn new(e: &SelExpr) -> AggState {
        match e {
            SelExpr::Agg(AggKind::Count, ..) => AggState::Count(0),
            SelExpr::Agg(AggKind::Min | AggKind::Max, ..) => AggState::MinMax(None),
            SelExpr::Agg(AggKind::Sum | AggKind::Avg, _, t) => match t {
                CqlType::Float => AggState::FloatSum(0.0, 0),
                CqlType::Double => AggState::DoubleSum(0.0, 0),
                CqlType::Decimal => AggState::DecimalSum(BigInt::from(0), 0, 0),
                _ => AggState::IntSum(BigInt::from(0), 0),
            },
            _ => AggState::First(None),
        }
    }

    fn add(
        &mut self,
        e: &SelExpr,
        r: &RowRef<'_>,
        cols: &[ColInfo],
        ctx: &EvalCtx<'_>,
    ) -> Result<(), CqlError> {
        match (self, e) {
            (AggState::First(slot), e) if slot.is_none() => {
                *slot = Some(e.eval(r, cols, ctx)?);
            }
            (AggState::Count(n), SelExpr::Agg(_, arg, _)) => match arg {
                None => *n += 1,
                Some(a) => {
                    if a.eval(r, cols, ctx)?.is_some() {
                        *n += 1;
                    }
                }
            },
            (AggState::MinMax(best), SelExpr::Agg(kind, Some(a), _)) => {
                if let Some(v) = a.eval(r, cols, ctx)? {
                    let replace = match best {
                        None => true,
                        Some(b) => {
                            if *kind == AggKind::Min {
                                v < *b
                            } else {
                                v > *b
                            }
                        }
                    };
                    if replace {
                        *best = Some(v);
                    }
                }
            }
            (state, SelExpr::Agg(_, Some(a), _)) => {
                let Some(v) = a.eval(r, cols, ctx)? else {
                    return Ok(());
                };
                match (state, &v) {
                    (AggState::IntSum(sum, n), Value::Varint(x)) => {
                        *sum += x.to_bigint();
                        *n += 1;
                    }
                    (AggState::IntSum(sum, n), other) => {
                        *sum += BigInt::from(other.as_i64().unwrap_or(0));
                        *n += 1;
                    }
                    (AggState::FloatSum(sum, n), Value::Float(x)) => {
                        *sum += *x;
                        *n += 1;
                    }
                    (AggState::DoubleSum(sum, n), Value::Double(x)) => {
                        *sum += *x;
                        *n += 1;
                    }
                    (AggState::DecimalSum(sum, scale, n), Value::Decimal(d)) => {
                        // `big_decimal::operator+=`: rescale both to the larger scale.
                        let (mut a, mut b) = (std::mem::take(sum), d.unscaled.to_bigint());
                        let ten = BigInt::from(10);
                        if d.scale > *scale {
                            a *= ten.pow((d.scale - *scale).unsigned_abs());
                            *scale = d.scale;
                        } else {
                            b *= ten.pow((*scale - d.scale).unsigned_abs());
                        }
                        *sum = a + b;
                        *n += 1;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn result(&self, e: &SelExpr) -> Result<Option<Value>, CqlError> {
        let (kind, typ) = match e {
            SelExpr::Agg(k, _, t) => (*k, t),
            _ => {
                return Ok(match self {
                    AggState::First(v) => v.clone().flatten(),
                    _ => None,
                });
            }
        };
        let avg = kind == AggKind::Avg;
        Ok(match self {
            AggState::Count(n) => Some(Value::Bigint(*n)),
            AggState::MinMax(v) => v.clone(),
            AggState::IntSum(sum, n) => {
                // avg: `Type(sum / count)` (truncating); sum: `narrow`, which refuses a
                // total that does not fit the type.
                let x = if avg {
                    if *n == 0 {
                        BigInt::from(0)
                    } else {
                        sum / BigInt::from(*n)
                    }
                } else {
                    sum.clone()
                };
                let overflow =
                    || CqlError::invalid("Sum overflow. Values should be casted to a wider type.");
                Some(match typ {
                    CqlType::Varint => Value::varint(&x),
                    CqlType::Tinyint => Value::Tinyint(i8::try_from(&x).map_err(|_| overflow())?),
                    CqlType::Smallint => {
                        Value::Smallint(i16::try_from(&x).map_err(|_| overflow())?)
                    }
                    CqlType::Int => Value::Int(i32::try_from(&x).map_err(|_| overflow())?),
                    _ => Value::Bigint(i64::try_from(&x).map_err(|_| overflow())?),
                })
            }
            AggState::FloatSum(sum, n) => Some(Value::Float(if avg {
                if *n == 0 { 0.0 } else { *sum / *n as f32 }
            } else {
                *sum
            })),
            AggState::DoubleSum(sum, n) => Some(Value::Double(if avg {
                if *n == 0 { 0.0 } else { *sum / *n as f64 }
            } else {
                *sum
            })),
            AggState::DecimalSum(sum, scale, n) => {
                if avg && *n == 0 {
                    Some(Value::decimal(&BigInt::from(0), 0))
                } else if avg {
                    Some(Value::decimal(&div_half_even(sum, *n), *scale))
                } else {
                    Some(Value::decimal(sum, *scale))
                }
            }
            AggState::First(v) => v.clone().flatten(),
        })
    }
}

/// `big_decimal::div` of an unscaled value by a count: the quotient rounded half to even.
fn div_half_even(a: &BigInt, n: i64) -> BigInt {
    let (sign, magnitude) = if a.sign() == num_bigint::Sign::Minus {
        (-1, -a)
    } else {
        (1, a.clone())
    };
    let y = BigInt::from(n);
    let mut q = &magnitude / &y;
    let twice_r = (&magnitude % &y) * 2;
    if twice_r > y || (twice_r == y && &q % 2 == BigInt::from(1)) {
        q += 1;
    }
    q * sign
}

/// What the SELECT returns.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SelectionPlan {
    /// Plain columns (the fast path).
    Columns(Vec<usize>),
    /// Computed selectors; `aggregate` when any is an aggregate.
    Exprs {
        /// Selectors in result order.
        items: Vec<SelExpr>,
        /// Whether the query aggregates.
        aggregate: bool,
    },
}

/// A planned SELECT.
#[derive(Debug)]
pub(crate) struct SelectPlan {
    /// The table read.
    pub(crate) table: Arc<TableDef>,
    /// Read layout of its columns.
    pub(crate) cols: Vec<ColInfo>,
    /// WHERE analysis.
    pub(crate) where_: WherePlan,
    /// What is returned.
    pub(crate) selection: SelectionPlan,
    /// Result columns.
    pub(crate) result: Arc<ResultMetadata>,
    /// `DISTINCT`
    pub(crate) distinct: bool,
    /// Iterate clustering rows backwards (ORDER BY against the clustering order).
    pub(crate) reversed: bool,
    /// ORDER BY given (rows of several partitions are merged by clustering key).
    pub(crate) ordered: bool,
    /// `LIMIT`
    pub(crate) limit: Option<Expr>,
    /// `PER PARTITION LIMIT`
    pub(crate) per_partition_limit: Option<Expr>,
    /// Number of primary-key columns of GROUP BY.
    pub(crate) group_by: usize,
    /// `SELECT JSON`: each result row is one JSON object of the selection.
    pub(crate) json: Option<super::json::JsonSelection>,
}

impl SelectPlan {
    /// Whether this reads a virtual system table.
    pub(crate) fn is_virtual(&self) -> bool {
        self.table.kind == crate::schema::TableKind::Virtual
    }
}

/// Plans a SELECT.
pub(crate) fn plan_select(
    schema: &Arc<Schema>,
    keyspace: Option<&str>,
    s: &Select,
    binder: &mut Binder,
) -> Result<SelectPlan, CqlError> {
    let table = resolve_table(schema, keyspace, &s.table)?;
    binder.set_table(&table);
    let cols = col_infos(&table);
    let (selection, columns) = plan_selection(&s.selection, &table, binder)?;
    // Cassandra 5.0.2 and ScyllaDB refuse a per-partition limit on an ungrouped aggregate.
    if s.per_partition_limit.is_some()
        && s.group_by.is_empty()
        && matches!(
            selection,
            SelectionPlan::Exprs {
                aggregate: true,
                ..
            }
        )
    {
        return Err(CqlError::invalid(
            "PER PARTITION LIMIT is not allowed with aggregate queries.",
        ));
    }
    // A query an index serves is planned as the filtered scan that gives its rows
    // (`super::index`).
    let allow_filtering = s.allow_filtering
        || super::index::uses_index(&table, &s.where_clause, s.allow_filtering, binder)?;
    let where_ = plan_where(
        &table,
        &s.where_clause,
        WhereMode::Select { allow_filtering },
        binder,
    )?;
    if s.distinct {
        validate_distinct(s, &table, &selection, &where_)?;
    }
    let reversed = plan_order_by(s, &table, &where_)?;
    let group_by = plan_group_by(s, &table)?;
    if s.distinct && group_by > table.partition_key().count() {
        return Err(CqlError::invalid(
            "Grouping on clustering columns is not allowed for SELECT DISTINCT queries",
        ));
    }
    let selection = grouped(selection, group_by);
    let (limit, per_partition_limit) = plan_limits(s, binder)?;
    // SELECT JSON: the selection's columns become one `[json]` column (as_json).
    let (json, columns) = if s.json {
        (
            Some(super::json::JsonSelection::new(&columns)),
            vec![super::json::JsonSelection::column(&table)],
        )
    } else {
        (None, columns)
    };
    Ok(SelectPlan {
        table: table.clone(),
        cols,
        where_,
        selection,
        result: Arc::new(ResultMetadata { columns }),
        json,
        distinct: s.distinct,
        reversed,
        ordered: !s.order_by.is_empty(),
        limit,
        per_partition_limit,
        group_by,
    })
}

/// The selection of a SELECT and the result columns it gives: plain columns when every
/// selector is one, else expressions (aggregating when one of them is an aggregate).
fn plan_selection(
    selection: &Selection,
    table: &TableDef,
    binder: &mut Binder,
) -> Result<(SelectionPlan, Vec<ColumnSpec>), CqlError> {
    let spec = |name: String, typ: CqlType| {
        ColumnSpec::new(table.keyspace.clone(), table.name.clone(), name, typ)
    };
    let items = match selection {
        Selection::Wildcard => {
            return Ok((
                SelectionPlan::Columns((0..table.columns.len()).collect()),
                table
                    .columns
                    .iter()
                    .map(|c| spec(c.name.clone(), c.typ.clone()))
                    .collect::<Vec<_>>(),
            ));
        }
        Selection::Items(items) => items,
    };
    let mut exprs = Vec::new();
    let mut specs = Vec::new();
    for item in items {
        let p = plan_selector(&item.selector, table, binder)?;
        specs.push(spec(item.alias.clone().unwrap_or(p.name), p.typ));
        exprs.push(p.expr);
    }
    if exprs.iter().all(|e| matches!(e, SelExpr::Col(_))) {
        let idx = exprs
            .iter()
            .filter_map(|e| match e {
                SelExpr::Col(i) => Some(*i),
                _ => None,
            })
            .collect();
        Ok((SelectionPlan::Columns(idx), specs))
    } else {
        let aggregate = exprs.iter().any(SelExpr::is_aggregate);
        Ok((
            SelectionPlan::Exprs {
                items: exprs,
                aggregate,
            },
            specs,
        ))
    }
}

/// ORDER BY: whether the rows are read in the reverse of the clustering order. It needs the
/// partition key restricted by `=` or `IN`, and clustering columns in their declared order,
/// all in the same direction relative to it.
fn plan_order_by(s: &Select, table: &TableDef, where_: &WherePlan) -> Result<bool, CqlError> {
    let mut reversed = false;
    if s.order_by.is_empty() {
        return Ok(reversed);
    }
    if !matches!(where_.partition, PartitionRestriction::Keys(_)) {
        return Err(CqlError::invalid(
            "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
        ));
    }
    let ck: Vec<_> = table.clustering_key().collect();
    for (i, (name, order)) in s.order_by.iter().enumerate() {
        let ci = column_index(table, name)?;
        let def = &table.columns[ci];
        if def.kind != ColumnKind::Clustering {
            return Err(CqlError::invalid(format!(
                "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {name}"
            )));
        }
        if ck.get(i).map(|c| &c.name) != Some(&def.name) {
            return Err(CqlError::invalid(
                "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY",
            ));
        }
        let natural = def.order == ClusteringOrder::Asc;
        let rev = (*order == Order::Asc) != natural;
        if i == 0 {
            reversed = rev;
        } else if rev != reversed {
            return Err(CqlError::invalid("Unsupported order by relation"));
        }
    }
    Ok(reversed)
}

/// The selection of a query grouped by `group_by` columns: every GROUP BY query aggregates,
/// and a plain selector gives its group's first value.
fn grouped(selection: SelectionPlan, group_by: usize) -> SelectionPlan {
    match selection {
        _ if group_by == 0 => selection,
        SelectionPlan::Columns(idx) => SelectionPlan::Exprs {
            items: idx.into_iter().map(SelExpr::Col).collect(),
            aggregate: true,
        },
        SelectionPlan::Exprs { items, .. } => SelectionPlan::Exprs {
            items,
            aggregate: true,
        },
    }
}

/// The LIMIT and PER PARTITION LIMIT of a SELECT (and its USING TIMEOUT's marker, if any).
fn plan_limits(s: &Select, binder: &mut Binder) -> Result<(Option<Expr>, Option<Expr>), CqlError> {
    let limit = match &s.limit {
        Some(t) => Some(plan_term(t, &CqlType::Int, "[limit]", binder)?),
        None => None,
    };
    let per_partition_limit = match &s.per_partition_limit {
        Some(t) => Some(plan_term(
            t,
            &CqlType::Int,
            "[per_partition_limit]",
            binder,
        )?),
        None => None,
    };
    if let Some(t) = &s.timeout {
        plan_term(t, &CqlType::Duration, "timeout", binder)?;
    }
    Ok((limit, per_partition_limit))
}

/// `select_statement::validate_distinct_selection`: no per-partition limit, no restriction
/// but on the partition key, only partition-key and static columns in the selection, and
/// every partition-key column when the partitions are a range (not keys given by `=`/`IN`).
fn validate_distinct(
    s: &Select,
    table: &TableDef,
    selection: &SelectionPlan,
    where_: &WherePlan,
) -> Result<(), CqlError> {
    if s.per_partition_limit.is_some() {
        return Err(CqlError::invalid(
            "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries",
        ));
    }
    let beyond_partition_key = s.where_clause.iter().any(|r| {
        use crate::cql::Relation as R;
        match r {
            R::Compare { column, .. }
            | R::In { column, .. }
            | R::Contains { column, .. }
            | R::Element { column, .. }
            | R::Like { column, .. }
            | R::IsNotNull { column } => table
                .column(column)
                .is_none_or(|c| c.kind != ColumnKind::PartitionKey),
            R::MultiCompare { .. } | R::MultiIn { .. } => true,
            R::Token { .. } => false,
        }
    });
    if beyond_partition_key {
        return Err(CqlError::invalid(
            "SELECT DISTINCT with WHERE clause only supports restriction by partition key.",
        ));
    }
    let mut used = Vec::new();
    match selection {
        SelectionPlan::Columns(c) => used.extend(c.iter().copied()),
        SelectionPlan::Exprs { items, .. } => {
            for e in items {
                e.columns(table, &mut used);
            }
        }
    }
    for &i in &used {
        let c = &table.columns[i];
        if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
            return Err(CqlError::invalid(format!(
                "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                c.name
            )));
        }
    }
    if !matches!(where_.partition, PartitionRestriction::Keys(_))
        && let Some(c) = table
            .partition_key()
            .find(|c| !used.iter().any(|&i| table.columns[i].name == c.name))
    {
        return Err(CqlError::invalid(format!(
            "SELECT DISTINCT queries must request all the partition key columns (missing {})",
            c.name
        )));
    }
    Ok(())
}

/// `select_statement::prepare_group_by`: the GROUP BY columns follow the primary key in
/// order, where a column restricted by `=` may be left out, and cover the partition key.
/// Returns how many leading primary-key columns form the group (0: no GROUP BY).
fn plan_group_by(s: &Select, table: &TableDef) -> Result<usize, CqlError> {
    if s.group_by.is_empty() {
        return Ok(0);
    }
    let key_size = table.partition_key().count() + table.clustering_key().count();
    let eq_restricted = |name: &str| {
        s.where_clause.iter().any(|r| {
            matches!(r, crate::cql::Relation::Compare { column, op: crate::cql::CompareOp::Eq, .. } if column == name)
        })
    };
    let out_of_order =
        |name: &str| CqlError::invalid(format!("Group by column {name} is out of order"));
    let mut expected = 0;
    for name in &s.group_by {
        let ci = table
            .column_index(name)
            .ok_or_else(|| CqlError::invalid(format!("Group by unknown column {name}")))?;
        if !table.columns[ci].kind.is_primary_key() {
            return Err(CqlError::invalid(format!(
                "Group by non-primary-key column {name}"
            )));
        }
        if expected >= key_size {
            return Err(out_of_order(name));
        }
        while ci != expected && eq_restricted(&table.columns[expected].name) {
            expected += 1;
            if expected >= key_size {
                return Err(out_of_order(name));
            }
        }
        if ci != expected {
            return Err(out_of_order(name));
        }
        expected += 1;
    }
    if expected < table.partition_key().count() {
        return Err(CqlError::invalid(
            "GROUP BY must include the entire partition key",
        ));
    }
    Ok(expected)
}

/// A planned selector: its expression, result type and result column name (ScyllaDB's
/// `{:result_set_metadata}` rendering of the prepared expression, `expr::expression::printer`).
struct PlannedSelector {
    /// The expression.
    expr: SelExpr,
    /// The result type.
    typ: CqlType,
    /// The result column name.
    name: String,
    /// The value is a clustering column of DESC order (Scylla's reversed type, which no
    /// `CAST` target equals).
    reversed: bool,
}

impl PlannedSelector {
    fn new(expr: SelExpr, typ: CqlType, name: String) -> PlannedSelector {
        PlannedSelector {
            expr,
            typ,
            name,
            reversed: false,
        }
    }
}

/// Plans one selector.
fn plan_selector(
    sel: &Selector,
    table: &TableDef,
    binder: &mut Binder,
) -> Result<PlannedSelector, CqlError> {
    Ok(match sel {
        Selector::Column(name) => {
            let i = column_index(table, name)?;
            let c = &table.columns[i];
            PlannedSelector {
                expr: SelExpr::Col(i),
                typ: c.typ.clone(),
                name: c.name.clone(),
                reversed: c.kind == ColumnKind::Clustering && c.order == ClusteringOrder::Desc,
            }
        }
        Selector::CountAll => PlannedSelector::new(
            SelExpr::Agg(AggKind::Count, None, CqlType::Bigint),
            CqlType::Bigint,
            "count".into(),
        ),
        Selector::WriteTime(name) | Selector::Ttl(name) => {
            plan_cell_attribute(matches!(sel, Selector::WriteTime(_)), name, table)?
        }
        Selector::Function { name, args } => plan_function_selector(name, args, table, binder)?,
        Selector::Cast { selector, ty } => {
            let inner = plan_selector(selector, table, binder)?;
            let target = super::ddl::resolve_type(&binder.schema, &table.keyspace, ty)?;
            // `sql_cast_prepare_expression`: a cast to the argument's own type is the argument.
            if target == inner.typ && !inner.reversed {
                return Ok(inner);
            }
            super::values::check_cast(&inner.typ, &target)?;
            PlannedSelector::new(
                SelExpr::Call(Func::Cast(target.clone()), vec![inner.expr]),
                target.clone(),
                format!("cast({} as {target})", inner.name),
            )
        }
        Selector::Field { selector, field } => {
            field_selector(plan_selector(selector, table, binder)?, field)?
        }
        Selector::Element { selector, key } => {
            let inner = plan_selector(selector, table, binder)?;
            element_selector(inner, key, binder)?
        }
    })
}

/// `writetime(c)` (`writetime` true) or `ttl(c)`.
fn plan_cell_attribute(
    writetime: bool,
    name: &str,
    table: &TableDef,
) -> Result<PlannedSelector, CqlError> {
    let fname = if writetime { "writetime" } else { "ttl" };
    let i = column_index(table, name)?;
    let c = &table.columns[i];
    // `prepare_column_mutation_attribute`: an atomic, non-key column (a counter is
    // atomic: its write time is its cell's, its TTL null).
    if c.typ.is_multi_cell() {
        return Err(CqlError::invalid(format!(
            "{} expects an atomic column, but {name} is a non-frozen collection",
            fname.to_ascii_uppercase()
        )));
    }
    if c.kind.is_primary_key() {
        return Err(CqlError::invalid(format!(
            "{} is not legal on partition key component {name}",
            fname.to_ascii_uppercase()
        )));
    }
    Ok(if writetime {
        PlannedSelector::new(
            SelExpr::WriteTime(i),
            CqlType::Bigint,
            format!("writetime({})", c.name),
        )
    } else {
        PlannedSelector::new(SelExpr::Ttl(i), CqlType::Int, format!("ttl({})", c.name))
    })
}

/// `u.f`: a field of the user-type value `inner`.
fn field_selector(inner: PlannedSelector, field: &str) -> Result<PlannedSelector, CqlError> {
    let CqlType::Udt { def, .. } = &inner.typ else {
        return Err(CqlError::invalid(format!(
            "Invalid field selection: {} of type {} is not a user type",
            inner.name, inner.typ
        )));
    };
    let i = def
        .fields
        .iter()
        .position(|(f, _)| f == field)
        .ok_or_else(|| {
            CqlError::invalid(format!(
                "{} of type {} has no field {field}",
                inner.name, def.name
            ))
        })?;
    let ft = def.fields[i].1.clone();
    Ok(PlannedSelector::new(
        SelExpr::Field(Box::new(inner.expr), i),
        ft,
        format!("{}.{field}", inner.name),
    ))
}

/// `c[k]`: an element of the collection value `inner`.
fn element_selector(
    inner: PlannedSelector,
    key: &Term,
    binder: &mut Binder,
) -> Result<PlannedSelector, CqlError> {
    let n = &inner.name;
    // The receiver of the subscript (`prepare_expression` of a subscript):
    // key(m) for a map, index(l) for a list, value(s) for a set.
    let (receiver, kt, vt) = match &inner.typ {
        CqlType::Map { key, value, .. } => {
            (format!("key({n})"), (**key).clone(), (**value).clone())
        }
        CqlType::List { elem, .. } => (format!("index({n})"), CqlType::Int, (**elem).clone()),
        CqlType::Set { elem, .. } => (format!("value({n})"), (**elem).clone(), (**elem).clone()),
        _ => {
            return Err(CqlError::invalid(format!(
                "Column {n} is not a map/set/list, cannot be subscripted"
            )));
        }
    };
    let k = plan_term(key, &kt, &receiver, binder)?;
    let key_name = expr_name(&k, &kt);
    Ok(PlannedSelector::new(
        SelExpr::Element(Box::new(inner.expr), k),
        vt,
        format!("{n}[{key_name}]"),
    ))
}

/// A function call in a selection: an aggregate, `token`, or a scalar function.
fn plan_function_selector(
    name: &crate::cql::QualifiedName,
    args: &[Selector],
    table: &TableDef,
    binder: &mut Binder,
) -> Result<PlannedSelector, CqlError> {
    let fname = name.name.as_str();
    let agg = match fname {
        "count" => Some(AggKind::Count),
        "min" => Some(AggKind::Min),
        "max" => Some(AggKind::Max),
        "sum" => Some(AggKind::Sum),
        "avg" => Some(AggKind::Avg),
        _ => None,
    };
    if let Some(kind) = agg {
        if args.len() != 1 {
            return Err(CqlError::invalid(format!(
                "Invalid number of arguments in call to function {fname}: 1 required but {} provided",
                args.len()
            )));
        }
        let arg = plan_selector(&args[0], table, binder)?;
        if arg.expr.is_aggregate() {
            return Err(CqlError::invalid(
                "SELECT clause contains aggeregation of an aggregation",
            ));
        }
        let t = &arg.typ;
        if matches!(kind, AggKind::Sum | AggKind::Avg)
            && !matches!(
                t,
                CqlType::Tinyint
                    | CqlType::Smallint
                    | CqlType::Int
                    | CqlType::Bigint
                    | CqlType::Counter
                    | CqlType::Varint
                    | CqlType::Float
                    | CqlType::Double
                    | CqlType::Decimal
            )
        {
            return Err(CqlError::invalid(format!(
                "Invalid call to function {fname}, none of its type signatures match (argument of type {t})"
            )));
        }
        // `get_dynamic_aggregate`: min and max keep the argument's type (a counter stays a
        // counter); sum and avg of a counter are the bigint overloads (`expression_test_assignment`
        // makes a counter an exact match for bigint).
        let rt = match kind {
            AggKind::Count => CqlType::Bigint,
            AggKind::Sum | AggKind::Avg if *t == CqlType::Counter => CqlType::Bigint,
            _ => t.clone(),
        };
        return Ok(PlannedSelector::new(
            SelExpr::Agg(kind, Some(Box::new(arg.expr)), rt.clone()),
            rt,
            format!("system.{fname}({})", arg.name),
        ));
    }
    if fname == "token" {
        let pk: Vec<&str> = table.partition_key().map(|c| c.name.as_str()).collect();
        let given: Vec<&str> = args
            .iter()
            .map(|a| match a {
                Selector::Column(c) => c.as_str(),
                _ => "",
            })
            .collect();
        if given != pk {
            return Err(CqlError::invalid(format!(
                "Invalid arguments for function token: expected the partition key columns ({})",
                pk.join(", ")
            )));
        }
        return Ok(PlannedSelector::new(
            SelExpr::Token,
            CqlType::Bigint,
            format!("system.token({})", pk.join(", ")),
        ));
    }
    if fname == "tojson" || fname == "fromjson" {
        return plan_json_selector(fname, args, table, binder);
    }
    let f = Func::by_name(fname)
        .ok_or_else(|| CqlError::invalid(format!("Unknown function {name} called")))?;
    let mut exprs = Vec::with_capacity(args.len());
    let mut types = Vec::with_capacity(args.len());
    let mut names = Vec::with_capacity(args.len());
    for a in args {
        let p = plan_selector(a, table, binder)?;
        exprs.push(p.expr);
        types.push(p.typ);
        names.push(p.name);
    }
    f.check_args(fname, &types)?;
    let rt = f.return_type(&types);
    Ok(PlannedSelector::new(
        SelExpr::Call(f, exprs),
        rt,
        format!("system.{fname}({})", names.join(", ")),
    ))
}

/// `toJson(x)` in a selection (`fromJson` has no receiver there, so no type).
fn plan_json_selector(
    fname: &str,
    args: &[Selector],
    table: &TableDef,
    binder: &mut Binder,
) -> Result<PlannedSelector, CqlError> {
    if fname == "fromjson" {
        if args.len() != 1 {
            return Err(CqlError::invalid("fromJson() accepts 1 argument only"));
        }
        return Err(CqlError::invalid(
            "fromJson() can only be called if receiver type is known",
        ));
    }
    let [arg] = args else {
        return Err(CqlError::invalid("toJson() accepts 1 argument only"));
    };
    // A bare literal or marker is no selector in Scylla 2025.x's grammar: the parser refuses
    // `toJson(1)` before this.
    let inner = plan_selector(arg, table, binder)?;
    Ok(PlannedSelector::new(
        SelExpr::Call(Func::ToJson(inner.typ), vec![inner.expr]),
        CqlType::Text,
        format!("system.tojson({})", inner.name),
    ))
}

/// A planned term as it appears in a result column name: a constant as
/// `data_value::to_parsable_string` renders it, a bind marker as `?` (named or not).
fn expr_name(e: &Expr, typ: &CqlType) -> String {
    match e {
        Expr::Const(Some(v)) => super::scylla_text::to_parsable(v, typ),
        Expr::Const(None) => "null".into(),
        _ => "?".into(),
    }
}

/// Request parameters of a SELECT execution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageRequest<'a> {
    /// Page size (`None` or `<= 0`: everything).
    pub(crate) page_size: Option<i32>,
    /// Paging state of the previous page.
    pub(crate) paging_state: Option<&'a Bytes>,
    /// Omit column specs.
    pub(crate) skip_metadata: bool,
    /// The page's byte and tombstone limits (see [`super::paging`]).
    pub(crate) limits: PageLimits,
}

/// What a row visit tells the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Go on.
    Continue,
    /// Skip the rest of this partition.
    NextPartition,
    /// Stop the scan.
    Stop,
}

/// Receives rows; applies filters, limits and the page size; writes them.
struct Sink<'p, 'w, 'a> {
    plan: &'p SelectPlan,
    ctx: &'p EvalCtx<'a>,
    filters: Vec<ReadyFilter>,
    writer: Option<RowsWriter<'w>>,
    page_size: u64,
    page_rows: u64,
    budget: PageBudget,
    total: u64,
    limit: u64,
    ppl: u64,
    in_partition: u64,
    current: Option<(i64, Bytes)>,
    last: Option<PagingState>,
    more: bool,
    agg: Option<Vec<AggState>>,
    group_key: Option<Vec<Value>>,
    groups: u64,
    error: Option<CqlError>,
}

impl<'p, 'w, 'a> Sink<'p, 'w, 'a> {
    /// A sink for `plan` within `limits`, resuming at `resume` (its row counts too); rows are
    /// written once the writer is set.
    fn new(
        plan: &'p SelectPlan,
        ctx: &'p EvalCtx<'a>,
        filters: Vec<ReadyFilter>,
        limits: ReadLimits,
        budget: PageBudget,
        resume: Option<&PagingState>,
        aggregate: bool,
    ) -> Sink<'p, 'w, 'a> {
        Sink {
            plan,
            ctx,
            filters,
            writer: None,
            page_size: limits.page_size,
            page_rows: 0,
            budget,
            total: resume.map_or(0, |r| r.total),
            limit: limits.limit,
            ppl: limits.ppl,
            in_partition: resume.map_or(0, |r| r.in_partition),
            current: resume.map(|r| (r.token, r.key.clone())),
            last: None,
            more: false,
            agg: aggregate.then(|| match &plan.selection {
                SelectionPlan::Exprs { items, .. } => items.iter().map(AggState::new).collect(),
                SelectionPlan::Columns(_) => Vec::new(),
            }),
            group_key: None,
            groups: 0,
            error: None,
        }
    }

    /// Ends the result: the error a row met, the last group of an aggregate, and the frame
    /// with its paging state when more pages follow.
    fn finish(mut self, aggregate: bool) -> Result<(), CqlError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if aggregate && (self.plan.group_by == 0 || self.group_key.is_some()) {
            self.flush_group()?;
        }
        let paging = if self.more {
            self.last.as_ref().map(PagingState::encode)
        } else {
            None
        };
        let Some(w) = self.writer.take() else {
            return Ok(());
        };
        w.finish_with_paging_state(paging.as_deref())
            .map_err(|e| CqlError::server(e.to_string()))?;
        Ok(())
    }
}

impl Sink<'_, '_, '_> {
    fn visit(&mut self, r: RowRef<'_>) -> Flow {
        match self.visit_inner(r) {
            Ok(f) => f,
            Err(e) => {
                self.error = Some(e);
                Flow::Stop
            }
        }
    }

    /// Tracks the partition rows come from (for PER PARTITION LIMIT).
    fn enter_partition(&mut self, token: i64, key: &Bytes) {
        if self
            .current
            .as_ref()
            .is_none_or(|(t, k)| *t != token || k != key)
        {
            self.current = Some((token, key.clone()));
            self.in_partition = 0;
        }
    }

    /// Ends the page early (a short read): more pages follow, the next one resuming after
    /// `clustering` of the partition (after the whole partition for `None`).
    fn cut(&mut self, token: i64, key: &Bytes, clustering: Option<&[Value]>) -> Flow {
        if self.total >= self.limit {
            return Flow::Stop;
        }
        self.more = true;
        self.set_last(token, key, clustering);
        Flow::Stop
    }

    /// Records where the page stands after a row, reusing the last state's buffers: a clone
    /// of the partition key and a new vector for the clustering key at every row were ~10% of
    /// serving a page of the CDC log.
    fn set_last(&mut self, token: i64, key: &Bytes, clustering: Option<&[Value]>) {
        let (total, in_partition) = (self.total, self.in_partition);
        match &mut self.last {
            Some(last) => {
                last.token = token;
                if last.key != *key {
                    last.key = key.clone();
                }
                match (clustering, &mut last.clustering) {
                    (Some(c), Some(v)) => {
                        v.clear();
                        v.extend_from_slice(c);
                    }
                    (c, slot) => *slot = c.map(<[Value]>::to_vec),
                }
                last.total = total;
                last.in_partition = in_partition;
            }
            None => {
                self.last = Some(PagingState {
                    token,
                    key: key.clone(),
                    clustering: clustering.map(<[Value]>::to_vec),
                    total,
                    in_partition,
                });
            }
        }
    }

    /// A partition's tombstone: counted; a page that reaches the tombstone limit here ends
    /// after the partition's next row or at its end (see [`super::paging`]).
    fn partition_tombstone(&mut self, pv: &PartitionView<'_>) {
        if pv.tombstone().is_some() {
            self.enter_partition(pv.token(), pv.key_bytes());
            self.budget.add_tombstone();
        }
    }

    /// A row without live data that the read carries as a tombstone.
    fn dead_row(&mut self, pv: &PartitionView<'_>, clustering: &[Value]) -> Flow {
        self.enter_partition(pv.token(), pv.key_bytes());
        if self.budget.add_tombstone() {
            return self.cut(pv.token(), pv.key_bytes(), Some(clustering));
        }
        Flow::Continue
    }

    /// The end of a partition: where a page that reached its tombstone limit ends.
    fn end_partition(&mut self, pv: &PartitionView<'_>) -> Flow {
        if self.budget.tombstones_reached() {
            self.enter_partition(pv.token(), pv.key_bytes());
            return self.cut(pv.token(), pv.key_bytes(), None);
        }
        Flow::Continue
    }

    fn visit_inner(&mut self, r: RowRef<'_>) -> Result<Flow, CqlError> {
        let key = (r.part.token(), r.part.key_bytes());
        self.enter_partition(key.0, key.1);
        // An aggregate counts groups against the per-partition limit (in `aggregate`).
        if self.agg.is_none() && self.in_partition >= self.ppl {
            return Ok(Flow::NextPartition);
        }
        if !self.filters.is_empty() {
            let cols = &self.plan.cols;
            let get = |i: usize| cols.get(i).and_then(|c| r.value(c));
            if !self.filters.iter().all(|f| f.matches(&get)) {
                return Ok(Flow::Continue);
            }
        }
        if self.agg.is_some() {
            return self.aggregate(r);
        }
        if self.total >= self.limit {
            return Ok(Flow::Stop);
        }
        if self.page_rows >= self.page_size {
            self.more = true;
            return Ok(Flow::Stop);
        }
        let before = self.writer.as_ref().map_or(0, RowsWriter::frame_len);
        self.write_row(&r)?;
        let written = self.writer.as_ref().map_or(0, RowsWriter::frame_len) - before;
        self.page_rows += 1;
        self.total += 1;
        self.in_partition += 1;
        let clustering = r.row.map(|row| row.key());
        self.set_last(key.0, key.1, clustering);
        // A short read: the page's data is past `query_page_size_in_bytes`, or a partition
        // tombstone reached the tombstone limit before this row. A full page ends here too,
        // saying more follow whether or not any does: Scylla's pager concludes it is
        // exhausted only from a page with fewer rows than asked for and not short (or from
        // LIMIT), `service/pager/query_pagers.cc`.
        let short = self.budget.add_row(written) || self.budget.tombstones_reached();
        if short || self.page_rows >= self.page_size {
            return Ok(self.cut(key.0, key.1, clustering));
        }
        Ok(Flow::Continue)
    }

    fn write_row(&mut self, r: &RowRef<'_>) -> Result<(), CqlError> {
        if let Some(json) = &self.plan.json {
            let values: Vec<Option<Value>> = match &self.plan.selection {
                SelectionPlan::Columns(idx) => idx
                    .iter()
                    .map(|&i| self.plan.cols.get(i).and_then(|c| r.value(c)))
                    .collect(),
                SelectionPlan::Exprs { items, .. } => items
                    .iter()
                    .map(|e| e.eval(r, &self.plan.cols, self.ctx))
                    .collect::<Result<_, _>>()?,
            };
            let text = json.render(&values)?;
            if let Some(w) = self.writer.as_mut() {
                w.cell_with(|buf| Value::text(&text).encode(buf));
                w.end_row();
            }
            return Ok(());
        }
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        match &self.plan.selection {
            SelectionPlan::Columns(idx) => {
                let mut cursors = [0; 2];
                for &i in idx {
                    match self.plan.cols.get(i) {
                        Some(info) => r.write_value(info, &mut cursors, w),
                        None => w.null_cell(),
                    }
                }
            }
            SelectionPlan::Exprs { items, .. } => {
                for e in items {
                    match e.eval(r, &self.plan.cols, self.ctx)? {
                        Some(v) => w.value_cell(&v),
                        None => w.null_cell(),
                    }
                }
            }
        }
        w.end_row();
        Ok(())
    }

    fn aggregate(&mut self, r: RowRef<'_>) -> Result<Flow, CqlError> {
        let SelectionPlan::Exprs { items, .. } = &self.plan.selection else {
            return Ok(Flow::Continue);
        };
        if self.plan.group_by > 0 {
            let key: Vec<Value> = (0..self.plan.group_by)
                .map(|i| {
                    self.plan
                        .cols
                        .get(i)
                        .and_then(|c| r.value(c))
                        .unwrap_or(Value::Empty)
                })
                .collect();
            if self.group_key.as_ref() != Some(&key) {
                if self.group_key.is_some() {
                    self.flush_group()?;
                    self.group_key = None;
                    if self.groups >= self.limit {
                        return Ok(Flow::Stop);
                    }
                }
                // PER PARTITION LIMIT counts the groups of a partition (Scylla's
                // `result_set_builder`): the rest of the partition makes no group.
                if self.in_partition >= self.ppl {
                    return Ok(Flow::NextPartition);
                }
                self.in_partition += 1;
                self.group_key = Some(key);
                self.agg = Some(items.iter().map(AggState::new).collect());
            }
        }
        if let Some(states) = self.agg.as_mut() {
            for (s, e) in states.iter_mut().zip(items) {
                s.add(e, &r, &self.plan.cols, self.ctx)?;
            }
        }
        Ok(Flow::Continue)
    }

    fn flush_group(&mut self) -> Result<(), CqlError> {
        let SelectionPlan::Exprs { items, .. } = &self.plan.selection else {
            return Ok(());
        };
        let (Some(states), Some(w)) = (self.agg.as_ref(), self.writer.as_mut()) else {
            return Ok(());
        };
        if let Some(json) = &self.plan.json {
            let values: Vec<Option<Value>> = states
                .iter()
                .zip(items)
                .map(|(s, e)| s.result(e))
                .collect::<Result<_, _>>()?;
            let text = json.render(&values)?;
            w.cell_with(|buf| Value::text(&text).encode(buf));
        } else {
            for (s, e) in states.iter().zip(items) {
                match s.result(e)? {
                    Some(v) => w.cell_with(|buf| v.encode(buf)),
                    None => w.null_cell(),
                }
            }
        }
        w.end_row();
        self.groups += 1;
        Ok(())
    }
}

/// Runs a SELECT over `data`, writing one RESULT Rows frame to `out` on `stream`: the
/// request's limits and resume position, the partitions to read, then a scan that hands
/// every row to a [`Sink`].
pub(crate) fn execute_select(
    plan: &SelectPlan,
    data: &TableData,
    ctx: &EvalCtx<'_>,
    req: PageRequest<'_>,
    now: Now,
    out: &mut BytesMut,
    stream: i16,
) -> Result<(), CqlError> {
    let aggregate = matches!(
        plan.selection,
        SelectionPlan::Exprs {
            aggregate: true,
            ..
        }
    );
    let limits = ReadLimits::of(plan, ctx, &req, aggregate)?;
    let filters = plan.where_.ready_filters(ctx)?;
    let resume = match req.paging_state {
        Some(b) if !aggregate => {
            let ck_types: Vec<CqlType> =
                plan.table.clustering_key().map(|c| c.typ.clone()).collect();
            Some(PagingState::decode(b, &ck_types)?)
        }
        _ => None,
    };
    let keys = plan.where_.partition_keys(&plan.table, ctx)?;
    check_partition_keys(plan, keys.as_deref(), limits.page_size)?;
    let token_range = plan.where_.token_range(ctx)?;
    let restricted = plan.where_.restricts_clustering();
    let slices: Vec<ClusteringRange> = if restricted {
        plan.where_.clustering_ranges(&plan.table, ctx)?
    } else {
        vec![ClusteringRange::full()]
    };
    let budget = PageBudget::new(req.limits, limits.page_size != u64::MAX);
    let mut sink = Sink::new(
        plan,
        ctx,
        filters,
        limits,
        budget,
        resume.as_ref(),
        aggregate,
    );
    if sink.total >= limits.limit && resume.is_some() {
        // Nothing left: an empty final page.
        let w = RowsWriter::begin_with(out, stream, &plan.result, None, req.skip_metadata, &[]);
        w.finish().map_err(|e| CqlError::server(e.to_string()))?;
        return Ok(());
    }
    sink.writer = Some(RowsWriter::begin_with(
        out,
        stream,
        &plan.result,
        None,
        req.skip_metadata,
        &[],
    ));
    let scan = PartitionScan {
        plan,
        slices: &slices,
        restricted,
        // Expired data written before this is purged by the read, not counted as a tombstone.
        gc_before: now
            .0
            .saturating_sub(i64::from(plan.table.options.gc_grace_seconds)),
        now,
    };
    let resume_pos = resume
        .as_ref()
        .map(|r| (r.token, r.key.clone(), r.clustering.clone()));
    match keys {
        Some(keys) if plan.ordered && keys.len() > 1 => scan.merged(&mut sink, data, &keys),
        Some(keys) => scan.keys(&mut sink, data, &keys, resume_pos.as_ref()),
        None => {
            if let Some(range) = token_range {
                scan.token_range(&mut sink, data, range, resume_pos.as_ref());
            }
        }
    }
    sink.finish(aggregate)
}

/// The row limits of one SELECT execution.
#[derive(Debug, Clone, Copy)]
struct ReadLimits {
    /// `LIMIT` (`u64::MAX`: none).
    limit: u64,
    /// `PER PARTITION LIMIT` (`u64::MAX`: none).
    ppl: u64,
    /// Rows per page (`u64::MAX`: the whole result in one page).
    page_size: u64,
}

impl ReadLimits {
    /// The limits of `plan` for request `req`: an aggregate or a `GROUP BY` is not paged.
    fn of(
        plan: &SelectPlan,
        ctx: &EvalCtx<'_>,
        req: &PageRequest<'_>,
        aggregate: bool,
    ) -> Result<ReadLimits, CqlError> {
        let limit = positive_limit(plan.limit.as_ref(), ctx, "LIMIT")?;
        let ppl = positive_limit(
            plan.per_partition_limit.as_ref(),
            ctx,
            "PER PARTITION LIMIT",
        )?;
        let page_size = match req.page_size {
            Some(n) if n > 0 && !aggregate && plan.group_by == 0 => n as u64,
            _ => u64::MAX,
        };
        Ok(ReadLimits {
            limit,
            ppl,
            page_size,
        })
    }
}

/// The limits on the partition keys a SELECT names: ScyllaDB's
/// `max_partition_key_restrictions_per_query`, and no paging of an `ORDER BY` over several.
fn check_partition_keys(
    plan: &SelectPlan,
    keys: Option<&[PartitionKey]>,
    page_size: u64,
) -> Result<(), CqlError> {
    if let Some(keys) = keys
        && keys.len() > MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY
    {
        // ScyllaDB's `max_partition_key_restrictions_per_query` (default 100), checked on the
        // cartesian product of the deduplicated IN values in `partition_ranges_from_singles`
        // (cql3/restrictions/statement_restrictions.cc), a `std::runtime_error`: a Server
        // error.
        return Err(CqlError::server(format!(
            "partition-key cartesian product size {} is greater than maximum {}",
            keys.len(),
            MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY
        )));
    }
    if plan.ordered && keys.is_some_and(|k| k.len() > 1) && page_size != u64::MAX {
        return Err(CqlError::invalid(
            "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query",
        ));
    }
    Ok(())
}

/// A resume position: token and key of the partition, and the clustering key of the last row
/// served in it (`None`: the whole partition was served).
type ResumePos = (i64, Bytes, Option<Vec<Value>>);

/// The partition-level work of a SELECT: which partitions, and which rows of each, a scan
/// visits.
struct PartitionScan<'s> {
    /// The statement.
    plan: &'s SelectPlan,
    /// The clustering ranges read in every partition.
    slices: &'s [ClusteringRange],
    /// Whether the statement restricts clustering columns.
    restricted: bool,
    /// Expired data written before this is purged by the read.
    gc_before: i64,
    /// The time of the read.
    now: Now,
}

impl PartitionScan<'_> {
    /// Rows of several partitions merged in clustering order (`ORDER BY` with `IN`).
    fn merged(&self, sink: &mut Sink<'_, '_, '_>, data: &TableData, keys: &[PartitionKey]) {
        let plan = self.plan;
        let cmp = data.comparator();
        let mut rows: Vec<RowRef<'_>> = Vec::new();
        for k in keys {
            if let Some(pv) = data.partition(k.token, &k.bytes, self.now) {
                let static_row = pv.static_row();
                for row in pv.rows(self.slices, plan.reversed, None) {
                    rows.push(RowRef {
                        part: pv,
                        static_row,
                        row: Some(row),
                    });
                }
            }
        }
        rows.sort_by(|a, b| {
            let ka = a.row.map(|r| r.key()).unwrap_or(&[]);
            let kb = b.row.map(|r| r.key()).unwrap_or(&[]);
            let o = cmp.compare(ka, kb);
            if plan.reversed { o.reverse() } else { o }
        });
        for r in rows {
            if sink.visit(r) == Flow::Stop {
                break;
            }
        }
    }

    /// The partitions of `keys`, read in their list order (IN values sorted by value, not by
    /// token). A resumed read starts at the key of the paging state, as Scylla's pager drops
    /// the ranges before the one holding it (none left if no key matches).
    fn keys(
        &self,
        sink: &mut Sink<'_, '_, '_>,
        data: &TableData,
        keys: &[PartitionKey],
        resume: Option<&ResumePos>,
    ) {
        let skip = match resume {
            Some((t, kb, _)) => keys
                .iter()
                .position(|k| k.token == *t && k.bytes == *kb)
                .unwrap_or(keys.len()),
            None => 0,
        };
        for (i, k) in keys.iter().enumerate().skip(skip) {
            let mut after = None;
            if i == skip
                && let Some((_, _, ck)) = resume
            {
                match ck {
                    None => continue,
                    Some(ck) => after = Some(ck.as_slice()),
                }
            }
            let Some(pv) = data.partition(k.token, &k.bytes, self.now) else {
                continue;
            };
            if self.partition(sink, pv, after) == Flow::Stop {
                break;
            }
        }
    }

    /// The partitions of a token range, in token order, from the resume position if any.
    fn token_range(
        &self,
        sink: &mut Sink<'_, '_, '_>,
        data: &TableData,
        (start, end): (PartitionStart, Option<i64>),
        resume: Option<&ResumePos>,
    ) {
        let start = match resume {
            Some((t, kb, Some(_))) => PartitionStart::AtKey(*t, kb.clone()),
            Some((t, kb, None)) => PartitionStart::AfterKey(*t, kb.clone()),
            None => start,
        };
        for pv in data.all_partitions(start, self.now) {
            if end.is_some_and(|e| pv.token() > e) {
                break;
            }
            let after = match resume {
                Some((t, kb, Some(ck))) if pv.token() == *t && pv.key_bytes() == kb => {
                    Some(ck.as_slice())
                }
                _ => None,
            };
            if self.partition(sink, pv, after) == Flow::Stop {
                break;
            }
        }
    }

    /// One partition: its tombstone (unless resumed inside it), its rows, its end.
    fn partition(
        &self,
        sink: &mut Sink<'_, '_, '_>,
        pv: PartitionView<'_>,
        after: Option<&[Value]>,
    ) -> Flow {
        if after.is_none() {
            sink.partition_tombstone(&pv);
        }
        match self.partition_rows(sink, pv, after) {
            Flow::Stop => Flow::Stop,
            _ => sink.end_partition(&pv),
        }
    }

    /// The rows of one partition (after clustering key `after`, when resumed): `DISTINCT`'s
    /// one row, the live rows of the slices (dead ones count as tombstones), or the static
    /// row alone of a partition without rows.
    fn partition_rows(
        &self,
        sink: &mut Sink<'_, '_, '_>,
        pv: PartitionView<'_>,
        after: Option<&[Value]>,
    ) -> Flow {
        let static_row = pv.static_row();
        if self.plan.distinct {
            if after.is_some() || !pv.has_live_data() {
                return Flow::Continue;
            }
            let r = RowRef {
                part: pv,
                static_row,
                row: None,
            };
            return match sink.visit(r) {
                Flow::Stop => Flow::Stop,
                _ => Flow::Continue,
            };
        }
        let mut any = false;
        for row in pv.scan_rows(self.slices, self.plan.reversed, after, self.gc_before) {
            let row = match row {
                ScanRow::Live(row) => row,
                ScanRow::Dead(key) => match sink.dead_row(&pv, key) {
                    Flow::Stop => return Flow::Stop,
                    _ => continue,
                },
            };
            any = true;
            match sink.visit(RowRef {
                part: pv,
                static_row,
                row: Some(row),
            }) {
                Flow::Continue => {}
                Flow::NextPartition => return Flow::Continue,
                Flow::Stop => return Flow::Stop,
            }
        }
        if !any && after.is_none() && !self.restricted && static_row.is_some() {
            return match sink.visit(RowRef {
                part: pv,
                static_row,
                row: None,
            }) {
                Flow::Stop => Flow::Stop,
                _ => Flow::Continue,
            };
        }
        Flow::Continue
    }
}

/// Evaluates LIMIT / PER PARTITION LIMIT (absent or unset: no limit).
fn positive_limit(e: Option<&Expr>, ctx: &EvalCtx<'_>, what: &str) -> Result<u64, CqlError> {
    let Some(e) = e else { return Ok(u64::MAX) };
    match e.eval(ctx)? {
        Bound::Unset => Ok(u64::MAX),
        Bound::Null => Err(CqlError::invalid(format!("Invalid null value of {what}"))),
        Bound::Value(v) => {
            let n = v.as_i64().unwrap_or(0);
            if n <= 0 {
                return Err(CqlError::invalid(format!(
                    "{what} must be strictly positive"
                )));
            }
            Ok(n as u64)
        }
    }
}
