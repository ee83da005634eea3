//! SELECT: the selection (columns, functions, aggregates, `writetime`/`ttl`, `token`), the
//! row scan over a table's data (partition keys, token ranges or full scans, clustering
//! slices, filters, static-only rows, DISTINCT, ORDER BY, LIMIT, PER PARTITION LIMIT, GROUP
//! BY) and paging. Rows stream straight into the response frame through
//! [`crate::frame::RowsWriter`]. `SELECT JSON` plans the same selection and writes each
//! row as one `[json]` text ([`super::json::JsonSelection`]).

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::cql::{Order, Select, Selection, Selector, Term};
use crate::frame::{ColumnSpec, CqlError, ResultMetadata, RowsWriter};
use crate::schema::{ClusteringOrder, ColumnKind, Schema, TableDef};
use crate::storage::{
    CellView, ClusteringRange, ColumnId, Now, PartitionStart, PartitionView, RowView, TableData,
};
use crate::types::CqlType;
use crate::types::value::Value;

use super::paging::PagingState;
use super::plan::{Binder, column_index, resolve_table};
use super::restrictions::{PartitionRestriction, ReadyFilter, WhereMode, WherePlan, plan_where};
use super::values::{Bound, EvalCtx, Expr, Func, plan_term};

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

    /// A column's value, borrowed from the storage when possible.
    fn value_ref(&self, info: &ColInfo) -> Option<Cow<'a, Value>> {
        match info.source {
            ColSource::Pk(i) => self.part.key_values().get(i).map(Cow::Borrowed),
            ColSource::Ck(i) => self.row.and_then(|r| r.key().get(i)).map(Cow::Borrowed),
            _ => match self.cell(info)? {
                CellView::Atomic { value, .. } => Some(Cow::Borrowed(value)),
                CellView::Counter { value, .. } => Some(Cow::Owned(Value::Bigint(value))),
                c => c.to_value(&info.typ).map(Cow::Owned),
            },
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
    /// A constant or marker.
    Term(Expr),
    /// A UDT field (by index).
    Field(Box<SelExpr>, usize),
    /// A map value by key / list element by index.
    Element(Box<SelExpr>, Expr),
    /// An aggregate over the rows (`None`: `count(*)`).
    Agg(AggKind, Option<Box<SelExpr>>, CqlType),
}

impl SelExpr {
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
            SelExpr::Term(e) => e.eval(ctx)?.into_option(),
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

/// The accumulated state of one selector of an aggregate query.
#[derive(Debug, Clone)]
enum AggState {
    /// A non-aggregate selector: its value in the first row.
    First(Option<Option<Value>>),
    /// Rows or non-null values counted.
    Count(i64),
    /// The smallest / largest value so far.
    MinMax(Option<Value>),
    /// Integer sum and count.
    IntSum(i128, i64),
    /// Float sum and count.
    FloatSum(f64, i64),
}

impl AggState {
    fn new(e: &SelExpr) -> AggState {
        match e {
            SelExpr::Agg(AggKind::Count, ..) => AggState::Count(0),
            SelExpr::Agg(AggKind::Min | AggKind::Max, ..) => AggState::MinMax(None),
            SelExpr::Agg(AggKind::Sum | AggKind::Avg, _, t) => {
                if matches!(t, CqlType::Float | CqlType::Double | CqlType::Decimal) {
                    AggState::FloatSum(0.0, 0)
                } else {
                    AggState::IntSum(0, 0)
                }
            }
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
            (AggState::IntSum(s, n), SelExpr::Agg(_, Some(a), _)) => {
                if let Some(v) = a.eval(r, cols, ctx)? {
                    *s += i128::from(v.as_i64().unwrap_or(0));
                    *n += 1;
                }
            }
            (AggState::FloatSum(s, n), SelExpr::Agg(_, Some(a), _)) => {
                if let Some(v) = a.eval(r, cols, ctx)? {
                    *s += match &v {
                        Value::Decimal(d) => d.to_string().parse().unwrap_or(0.0),
                        other => other.as_f64().unwrap_or(0.0),
                    };
                    *n += 1;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn result(&self, e: &SelExpr) -> Option<Value> {
        let (kind, typ) = match e {
            SelExpr::Agg(k, _, t) => (*k, t),
            _ => {
                return match self {
                    AggState::First(v) => v.clone().flatten(),
                    _ => None,
                };
            }
        };
        match self {
            AggState::Count(n) => Some(Value::Bigint(*n)),
            AggState::MinMax(v) => v.clone(),
            AggState::IntSum(s, n) => {
                let x = if kind == AggKind::Avg {
                    if *n == 0 { 0 } else { s / i128::from(*n) }
                } else {
                    *s
                };
                Some(match typ {
                    CqlType::Tinyint => Value::Tinyint(x as i8),
                    CqlType::Smallint => Value::Smallint(x as i16),
                    CqlType::Int => Value::Int(x as i32),
                    CqlType::Varint => Value::varint(&num_bigint::BigInt::from(x)),
                    _ => Value::Bigint(x as i64),
                })
            }
            AggState::FloatSum(s, n) => {
                let x = if kind == AggKind::Avg {
                    if *n == 0 { 0.0 } else { s / *n as f64 }
                } else {
                    *s
                };
                Some(match typ {
                    CqlType::Float => Value::Float(x as f32),
                    CqlType::Decimal => {
                        super::values::parse_decimal(&format!("{x}")).unwrap_or(Value::Double(x))
                    }
                    _ => Value::Double(x),
                })
            }
            AggState::First(v) => v.clone().flatten(),
        }
    }
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
    let spec = |name: String, typ: CqlType| {
        ColumnSpec::new(table.keyspace.clone(), table.name.clone(), name, typ)
    };
    let (selection, columns) = match &s.selection {
        Selection::Wildcard => (
            SelectionPlan::Columns((0..table.columns.len()).collect()),
            table
                .columns
                .iter()
                .map(|c| spec(c.name.clone(), c.typ.clone()))
                .collect::<Vec<_>>(),
        ),
        Selection::Items(items) => {
            let mut exprs = Vec::new();
            let mut specs = Vec::new();
            for item in items {
                let (e, t, name) = plan_selector(&item.selector, &table, binder)?;
                specs.push(spec(item.alias.clone().unwrap_or(name), t));
                exprs.push(e);
            }
            if exprs.iter().all(|e| matches!(e, SelExpr::Col(_))) {
                let idx = exprs
                    .iter()
                    .filter_map(|e| match e {
                        SelExpr::Col(i) => Some(*i),
                        _ => None,
                    })
                    .collect();
                (SelectionPlan::Columns(idx), specs)
            } else {
                let aggregate = exprs.iter().any(SelExpr::is_aggregate);
                (
                    SelectionPlan::Exprs {
                        items: exprs,
                        aggregate,
                    },
                    specs,
                )
            }
        }
    };
    let where_ = plan_where(
        &table,
        &s.where_clause,
        WhereMode::Select {
            allow_filtering: s.allow_filtering,
        },
        binder,
    )?;
    if s.distinct {
        let used: Vec<usize> = match &selection {
            SelectionPlan::Columns(c) => c.clone(),
            SelectionPlan::Exprs { items, .. } => items
                .iter()
                .filter_map(|e| match e {
                    SelExpr::Col(i) => Some(*i),
                    _ => None,
                })
                .collect(),
        };
        for &i in &used {
            let c = &table.columns[i];
            if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
                return Err(CqlError::invalid(format!(
                    "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                    c.name
                )));
            }
        }
        if let Some(c) = table
            .partition_key()
            .find(|c| !used.iter().any(|&i| table.columns[i].name == c.name))
            && !matches!(
                &selection,
                SelectionPlan::Exprs {
                    aggregate: true,
                    ..
                }
            )
        {
            return Err(CqlError::invalid(format!(
                "SELECT DISTINCT queries must request all the partition key columns (missing {})",
                c.name
            )));
        }
    }
    // ORDER BY
    let mut reversed = false;
    if !s.order_by.is_empty() {
        if !matches!(where_.partition, PartitionRestriction::Keys(_)) {
            return Err(CqlError::invalid(
                "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
            ));
        }
        let ck: Vec<_> = table.clustering_key().collect();
        for (i, (name, order)) in s.order_by.iter().enumerate() {
            let ci = column_index(&table, name)?;
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
    }
    // GROUP BY: a primary-key prefix.
    let mut group_by = 0;
    for (i, name) in s.group_by.iter().enumerate() {
        let ci = column_index(&table, name)?;
        if ci != i || !table.columns[ci].kind.is_primary_key() {
            return Err(CqlError::invalid(
                "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
            ));
        }
        group_by = i + 1;
    }
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

/// Plans one selector: expression, result type, default column name.
fn plan_selector(
    sel: &Selector,
    table: &TableDef,
    binder: &mut Binder,
) -> Result<(SelExpr, CqlType, String), CqlError> {
    Ok(match sel {
        Selector::Column(name) => {
            let i = column_index(table, name)?;
            (SelExpr::Col(i), table.columns[i].typ.clone(), name.clone())
        }
        Selector::CountAll => (
            SelExpr::Agg(AggKind::Count, None, CqlType::Bigint),
            CqlType::Bigint,
            "count".into(),
        ),
        Selector::WriteTime(name) | Selector::Ttl(name) => {
            let wt = matches!(sel, Selector::WriteTime(_));
            let fname = if wt { "writetime" } else { "ttl" };
            let i = column_index(table, name)?;
            let c = &table.columns[i];
            if c.kind.is_primary_key() {
                return Err(CqlError::invalid(format!(
                    "Cannot use selection function {fname} on PRIMARY KEY part {name}"
                )));
            }
            if c.typ.is_multi_cell() {
                return Err(CqlError::invalid(format!(
                    "Cannot use selection function {fname} on non-frozen {} {name}",
                    if c.typ.is_collection() {
                        "collection"
                    } else {
                        "UDT"
                    }
                )));
            }
            if c.typ.is_counter() {
                return Err(CqlError::invalid(format!(
                    "Cannot use selection function {fname} on counter column {name}"
                )));
            }
            if wt {
                (
                    SelExpr::WriteTime(i),
                    CqlType::Bigint,
                    format!("writetime({name})"),
                )
            } else {
                (SelExpr::Ttl(i), CqlType::Int, format!("ttl({name})"))
            }
        }
        Selector::Function { name, args } => {
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
                if kind == AggKind::Count && matches!(args[0], Selector::Term(_)) {
                    return Ok((
                        SelExpr::Agg(AggKind::Count, None, CqlType::Bigint),
                        CqlType::Bigint,
                        "count".into(),
                    ));
                }
                let (e, t, n) = plan_selector(&args[0], table, binder)?;
                if e.is_aggregate() {
                    return Err(CqlError::invalid("Aggregate functions cannot be nested"));
                }
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
                        "Invalid call to function {fname}: argument of type {t}"
                    )));
                }
                let rt = match kind {
                    AggKind::Count => CqlType::Bigint,
                    _ if t == CqlType::Counter => CqlType::Bigint,
                    _ => t.clone(),
                };
                return Ok((
                    SelExpr::Agg(kind, Some(Box::new(e)), rt.clone()),
                    rt,
                    format!("system.{fname}({n})"),
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
                return Ok((
                    SelExpr::Token,
                    CqlType::Bigint,
                    format!("system.token({})", pk.join(", ")),
                ));
            }
            if fname == "tojson" || fname == "fromjson" {
                return plan_json_selector(fname, args, table, binder);
            }
            let f = Func::by_name(fname)
                .ok_or_else(|| CqlError::invalid(format!("Unknown function '{name}'")))?;
            let mut exprs = Vec::new();
            let mut types = Vec::new();
            let mut names = Vec::new();
            for (i, a) in args.iter().enumerate() {
                let (e, t, n) = match a {
                    Selector::Term(term) => {
                        let t = match term {
                            Term::Literal(crate::cql::Literal::Integer(_))
                                if matches!(f, Func::MinTimeuuid | Func::MaxTimeuuid) =>
                            {
                                CqlType::Timestamp
                            }
                            _ => function_arg_type(&f),
                        };
                        let e = plan_term(term, &t, &format!("arg{i}(system.{fname})"), binder)?;
                        (SelExpr::Term(e), t, term_display(term))
                    }
                    other => plan_selector(other, table, binder)?,
                };
                exprs.push(e);
                types.push(t);
                names.push(n);
            }
            f.check_args(fname, &types)?;
            let rt = f.return_type(&types);
            (
                SelExpr::Call(f, exprs),
                rt,
                format!("system.{fname}({})", names.join(", ")),
            )
        }
        Selector::Cast { selector, ty } => {
            let (e, _t, n) = plan_selector(selector, table, binder)?;
            let target = super::ddl::resolve_type(&binder.schema, &table.keyspace, ty)?;
            (
                SelExpr::Call(Func::Cast(target.clone()), vec![e]),
                target.clone(),
                format!("cast({n} as {target})"),
            )
        }
        Selector::Field { selector, field } => {
            let (e, t, n) = plan_selector(selector, table, binder)?;
            let CqlType::Udt { def, .. } = &t else {
                return Err(CqlError::invalid(format!(
                    "Invalid field selection: {n} of type {t} is not a user type"
                )));
            };
            let i = def
                .fields
                .iter()
                .position(|(f, _)| f == field)
                .ok_or_else(|| {
                    CqlError::invalid(format!("{} of type {} has no field {field}", n, def.name))
                })?;
            let ft = def.fields[i].1.clone();
            (SelExpr::Field(Box::new(e), i), ft, format!("{n}.{field}"))
        }
        Selector::Element { selector, key } => {
            let (e, t, n) = plan_selector(selector, table, binder)?;
            let (kt, vt) = match &t {
                CqlType::Map { key, value, .. } => ((**key).clone(), (**value).clone()),
                CqlType::List { elem, .. } => (CqlType::Int, (**elem).clone()),
                CqlType::Set { elem, .. } => ((**elem).clone(), (**elem).clone()),
                _ => {
                    return Err(CqlError::invalid(format!(
                        "Invalid element selection: {n} is of type {t} is not a collection"
                    )));
                }
            };
            let k = plan_term(key, &kt, &format!("key({n})"), binder)?;
            (
                SelExpr::Element(Box::new(e), k),
                vt,
                format!("{n}[{}]", term_display(key)),
            )
        }
        Selector::Term(t) => {
            let typ = match t {
                Term::Literal(crate::cql::Literal::Integer(_)) => CqlType::Int,
                Term::Literal(crate::cql::Literal::Float(_)) => CqlType::Double,
                Term::Literal(crate::cql::Literal::Boolean(_)) => CqlType::Boolean,
                Term::Literal(crate::cql::Literal::Uuid(_)) => CqlType::Uuid,
                Term::Literal(crate::cql::Literal::Blob(_)) => CqlType::Blob,
                _ => CqlType::Text,
            };
            let e = plan_term(t, &typ, "selector", binder)?;
            (SelExpr::Term(e), typ, term_display(t))
        }
    })
}

/// `toJson(x)` in a selection (`fromJson` has no receiver there, so no type): the argument
/// must be a selector of known type, not a bare literal or marker (`functions::get`).
fn plan_json_selector(
    fname: &str,
    args: &[Selector],
    table: &TableDef,
    binder: &mut Binder,
) -> Result<(SelExpr, CqlType, String), CqlError> {
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
    if matches!(arg, Selector::Term(_)) {
        return Err(CqlError::invalid(
            "toJson() is only valid when its argument type is known",
        ));
    }
    let (e, t, n) = plan_selector(arg, table, binder)?;
    Ok((
        SelExpr::Call(Func::ToJson(t), vec![e]),
        CqlType::Text,
        format!("system.tojson({n})"),
    ))
}

/// The type a constant argument of a function selector is read as.
fn function_arg_type(f: &Func) -> CqlType {
    match f {
        Func::MinTimeuuid | Func::MaxTimeuuid => CqlType::Timestamp,
        Func::BlobAs(_) => CqlType::Blob,
        Func::AsBlob(t) => t.clone(),
        _ => CqlType::Timeuuid,
    }
}

/// A term as it appears in a result column name.
fn term_display(t: &Term) -> String {
    match t {
        Term::Literal(l) => l.to_option_text(),
        Term::Marker(m) => m.name.as_ref().map_or("?".into(), |n| format!(":{n}")),
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

    fn visit_inner(&mut self, r: RowRef<'_>) -> Result<Flow, CqlError> {
        let key = (r.part.token(), r.part.key_bytes());
        if self
            .current
            .as_ref()
            .is_none_or(|(t, k)| *t != key.0 || k != key.1)
        {
            self.current = Some((key.0, key.1.clone()));
            self.in_partition = 0;
        }
        if self.in_partition >= self.ppl {
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
        self.write_row(&r)?;
        self.page_rows += 1;
        self.total += 1;
        self.in_partition += 1;
        self.last = Some(PagingState {
            token: key.0,
            key: key.1.clone(),
            clustering: r.row.map(|row| row.key().to_vec()),
            total: self.total,
            in_partition: self.in_partition,
        });
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
                for &i in idx {
                    match self.plan.cols.get(i) {
                        Some(info) => match r.value_ref(info) {
                            Some(v) => w.cell_with(|buf| v.encode(buf)),
                            None => w.null_cell(),
                        },
                        None => w.null_cell(),
                    }
                }
            }
            SelectionPlan::Exprs { items, .. } => {
                for e in items {
                    let v = e.eval(r, &self.plan.cols, self.ctx)?;
                    match v {
                        Some(v) => w.cell_with(|buf| v.encode(buf)),
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
                    if self.groups >= self.limit {
                        return Ok(Flow::Stop);
                    }
                }
                self.group_key = Some(key);
                self.agg = Some(items.iter().map(AggState::new).collect());
            }
        }
        if let Some(states) = self.agg.as_mut() {
            for (s, e) in states.iter_mut().zip(items) {
                s.add(e, &r, &self.plan.cols, self.ctx)?;
            }
        }
        self.in_partition += 1;
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
            let values: Vec<Option<Value>> =
                states.iter().zip(items).map(|(s, e)| s.result(e)).collect();
            let text = json.render(&values)?;
            w.cell_with(|buf| Value::text(&text).encode(buf));
        } else {
            for (s, e) in states.iter().zip(items) {
                match s.result(e) {
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

/// Runs a SELECT over `data`, writing one RESULT Rows frame to `out` on `stream`.
pub(crate) fn execute_select(
    plan: &SelectPlan,
    data: &TableData,
    ctx: &EvalCtx<'_>,
    req: PageRequest<'_>,
    now: Now,
    out: &mut BytesMut,
    stream: i16,
) -> Result<(), CqlError> {
    let limit = positive_limit(plan.limit.as_ref(), ctx, "LIMIT")?;
    let ppl = positive_limit(
        plan.per_partition_limit.as_ref(),
        ctx,
        "PER PARTITION LIMIT",
    )?;
    let filters = plan.where_.ready_filters(ctx)?;
    let aggregate = matches!(
        plan.selection,
        SelectionPlan::Exprs {
            aggregate: true,
            ..
        }
    );
    let ck_types: Vec<CqlType> = plan.table.clustering_key().map(|c| c.typ.clone()).collect();
    let resume = match req.paging_state {
        Some(b) if !aggregate => Some(PagingState::decode(b, &ck_types)?),
        _ => None,
    };
    let page_size = match req.page_size {
        Some(n) if n > 0 && !aggregate && plan.group_by == 0 => n as u64,
        _ => u64::MAX,
    };
    let keys = plan.where_.partition_keys(&plan.table, ctx)?;
    if plan.ordered && keys.as_ref().is_some_and(|k| k.len() > 1) && page_size != u64::MAX {
        return Err(CqlError::invalid(
            "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query",
        ));
    }
    let token_range = plan.where_.token_range(ctx)?;
    let slices: Vec<ClusteringRange> = if plan.where_.restricts_clustering() {
        plan.where_.clustering_ranges(&plan.table, ctx)?
    } else {
        vec![ClusteringRange::full()]
    };
    let mut sink = Sink {
        plan,
        ctx,
        filters,
        writer: None,
        page_size,
        page_rows: 0,
        total: resume.as_ref().map_or(0, |r| r.total),
        limit,
        ppl,
        in_partition: 0,
        current: resume.as_ref().map(|r| (r.token, r.key.clone())),
        last: None,
        more: false,
        agg: aggregate.then(|| match &plan.selection {
            SelectionPlan::Exprs { items, .. } => items.iter().map(AggState::new).collect(),
            SelectionPlan::Columns(_) => Vec::new(),
        }),
        group_key: None,
        groups: 0,
        error: None,
    };
    if let Some(r) = &resume {
        sink.in_partition = r.in_partition;
        if sink.total >= limit {
            // Nothing left: an empty final page.
            let w = RowsWriter::begin_with(out, stream, &plan.result, None, req.skip_metadata, &[]);
            w.finish().map_err(|e| CqlError::server(e.to_string()))?;
            return Ok(());
        }
    }
    sink.writer = Some(RowsWriter::begin_with(
        out,
        stream,
        &plan.result,
        None,
        req.skip_metadata,
        &[],
    ));
    // The partition-level work: which rows of a partition to visit.
    let restricted = plan.where_.restricts_clustering();
    let visit_partition =
        |sink: &mut Sink<'_, '_, '_>, pv: PartitionView<'_>, after: Option<&[Value]>| -> Flow {
            let static_row = pv.static_row();
            if plan.distinct {
                if after.is_some() {
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
            for row in pv.rows(&slices, plan.reversed, after) {
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
            if !any && after.is_none() && !restricted && static_row.is_some() {
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
        };
    let resume_pos = resume
        .as_ref()
        .map(|r| (r.token, r.key.clone(), r.clustering.clone()));
    match keys {
        Some(keys) if plan.ordered && keys.len() > 1 => {
            // Rows of several partitions merged in clustering order.
            let cmp = data.comparator();
            let mut rows: Vec<RowRef<'_>> = Vec::new();
            for k in &keys {
                if let Some(pv) = data.partition(k.token, &k.bytes, now) {
                    let static_row = pv.static_row();
                    for row in pv.rows(&slices, plan.reversed, None) {
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
        Some(keys) => {
            for k in &keys {
                let mut after = None;
                if let Some((t, kb, ck)) = &resume_pos {
                    if (k.token, &k.bytes) < (*t, kb) {
                        continue;
                    }
                    if (k.token, &k.bytes) == (*t, kb) {
                        match ck {
                            None => continue,
                            Some(ck) => after = Some(ck.as_slice()),
                        }
                    }
                }
                let Some(pv) = data.partition(k.token, &k.bytes, now) else {
                    continue;
                };
                if !pv.has_live_data() {
                    continue;
                }
                if visit_partition(&mut sink, pv, after) == Flow::Stop {
                    break;
                }
            }
        }
        None => {
            if let Some((start, end)) = token_range {
                let start = match &resume_pos {
                    Some((t, kb, Some(_))) => PartitionStart::AtKey(*t, kb.clone()),
                    Some((t, kb, None)) => PartitionStart::AfterKey(*t, kb.clone()),
                    None => start,
                };
                for pv in data.partitions(start, now) {
                    if end.is_some_and(|e| pv.token() > e) {
                        break;
                    }
                    let after = match &resume_pos {
                        Some((t, kb, Some(ck))) if pv.token() == *t && pv.key_bytes() == kb => {
                            Some(ck.as_slice())
                        }
                        _ => None,
                    };
                    if visit_partition(&mut sink, pv, after) == Flow::Stop {
                        break;
                    }
                }
            }
        }
    }
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    if aggregate && (plan.group_by == 0 || sink.group_key.is_some()) {
        sink.flush_group()?;
    }
    let paging = if sink.more {
        sink.last.as_ref().map(PagingState::encode)
    } else {
        None
    };
    let Some(w) = sink.writer.take() else {
        return Ok(());
    };
    w.finish_with_paging_state(paging.as_deref())
        .map_err(|e| CqlError::server(e.to_string()))?;
    Ok(())
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
