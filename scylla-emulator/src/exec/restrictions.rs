//! WHERE analysis: relations become partition restrictions (`=`/`IN` on every partition-key
//! column, or `token()` bounds, or none for a full scan), clustering restrictions (an `=`/`IN`
//! prefix then at most one slice, single- or multi-column, also over columns of mixed
//! clustering order) and filters on anything else. Bind markers get the receivers ScyllaDB
//! 2025.x gives them (`IN(c)`, `value(IN(c))`, `(a,b)[0]`, `value(s)`, `arg0(system.token)`).

use std::cmp::Ordering;

use crate::cql::{CompareOp, InValues, Relation, Term};
use crate::frame::CqlError;
use crate::schema::{ClusteringOrder, ColumnKind, TableDef};
use crate::storage::{ClusteringBound, ClusteringRange, PartitionKey, PartitionStart};
use crate::types::CqlType;
use crate::types::value::Value;

use super::binder::{Binder, column_index};
use super::values::{Bound, EvalCtx, Expr, eval_required, marker, plan_term};

/// The values an `=` or `IN` gives one column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KeyValues {
    /// `col = x`
    Eq(Expr),
    /// `col IN (x, y)`
    In(Vec<Expr>),
    /// `col IN ?` (a list value).
    InMarker(Expr),
}

impl KeyValues {
    /// The values, in the written order (duplicates kept).
    pub(crate) fn eval(&self, ctx: &EvalCtx<'_>, what: &str) -> Result<Vec<Value>, CqlError> {
        match self {
            KeyValues::Eq(e) => Ok(vec![eval_required(e, ctx, what)?]),
            KeyValues::In(es) => es.iter().map(|e| eval_required(e, ctx, what)).collect(),
            KeyValues::InMarker(e) => match e.eval(ctx)? {
                Bound::Value(v) => Ok(v.as_elements().map(<[Value]>::to_vec).unwrap_or_default()),
                Bound::Null => Err(CqlError::invalid(format!("Invalid null value for {what}"))),
                Bound::Unset => Err(CqlError::invalid(format!("Invalid unset value for {what}"))),
            },
        }
    }

    /// The single marker of `col = ?`.
    fn eq_marker(&self) -> Option<usize> {
        match self {
            KeyValues::Eq(e) => e.marker_index(),
            _ => None,
        }
    }
}

/// Values of several columns at once: `(a, b) = (x, y)`, `(a, b) IN ((..), (..))`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TupleValues {
    /// One expression per column.
    Cols(Vec<Expr>),
    /// One tuple-valued expression (a marker).
    Whole(Expr),
}

impl TupleValues {
    /// The column values.
    fn eval(&self, ctx: &EvalCtx<'_>, n: usize) -> Result<Vec<Value>, CqlError> {
        match self {
            TupleValues::Cols(es) => es
                .iter()
                .map(|e| eval_required(e, ctx, "a clustering column"))
                .collect(),
            TupleValues::Whole(e) => {
                let v = eval_required(e, ctx, "a tuple of clustering columns")?;
                tuple_fields(&v, n)
            }
        }
    }
}

/// The `n` non-null fields of a tuple value.
fn tuple_fields(v: &Value, n: usize) -> Result<Vec<Value>, CqlError> {
    let fields = v.as_fields().unwrap_or(&[]);
    if fields.len() != n {
        return Err(CqlError::invalid(format!(
            "Expected {n} elements in value tuple, but got {}",
            fields.len()
        )));
    }
    fields
        .iter()
        .map(|f| {
            f.clone()
                .ok_or_else(|| CqlError::invalid("Invalid null value in a clustering tuple"))
        })
        .collect()
}

/// The restriction of one or more leading clustering columns by `=` / `IN`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PrefixPart {
    /// One column.
    Single(KeyValues),
    /// Several columns (`n` of them): the accepted tuples.
    Multi {
        /// Number of columns.
        n: usize,
        /// Accepted tuples.
        tuples: Vec<TupleValues>,
        /// `(a, b) IN ?`: a list of tuples.
        list_marker: Option<Expr>,
    },
}

/// One side of a clustering slice, in natural (ascending) value order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SliceBound {
    /// The bound's values (one per column of the slice).
    pub(crate) values: TupleValues,
    /// Whether equal values are included.
    pub(crate) inclusive: bool,
}

/// A slice of clustering columns `first..first + n` (n > 1 for multi-column slices).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slice {
    /// First clustering column of the slice.
    pub(crate) first: usize,
    /// Number of columns.
    pub(crate) n: usize,
    /// Lower bound (`>`, `>=`).
    pub(crate) lower: Option<SliceBound>,
    /// Upper bound (`<`, `<=`).
    pub(crate) upper: Option<SliceBound>,
}

/// How the partitions of a query are chosen.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PartitionRestriction {
    /// Every partition.
    Scan,
    /// `=`/`IN` on every partition-key column, in key order.
    Keys(Vec<KeyValues>),
    /// `token(pk) > x AND token(pk) <= y`: bounds with inclusiveness.
    Token {
        /// Lower bound.
        lower: Option<(Expr, bool)>,
        /// Upper bound.
        upper: Option<(Expr, bool)>,
    },
}

/// A filter on a row (ALLOW FILTERING, CONTAINS, partial keys).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Filter {
    /// `col op x`
    Compare {
        /// Column index in the table.
        col: usize,
        /// Operator.
        op: CompareOp,
        /// Value.
        value: Expr,
    },
    /// `col IN (...)`
    In {
        /// Column index.
        col: usize,
        /// Values.
        values: KeyValues,
    },
    /// `col CONTAINS x` / `col CONTAINS KEY x`
    Contains {
        /// Column index.
        col: usize,
        /// `CONTAINS KEY`.
        key: bool,
        /// Searched element.
        value: Expr,
    },
    /// `col[k] op x`
    Element {
        /// Column index.
        col: usize,
        /// Map key.
        key: Expr,
        /// Operator.
        op: CompareOp,
        /// Value.
        value: Expr,
    },
    /// `(a, b) op (x, y)` compared as tuples in natural order.
    Tuple {
        /// Column indexes.
        cols: Vec<usize>,
        /// Operator.
        op: CompareOp,
        /// Values.
        values: TupleValues,
    },
}

/// A filter with its values evaluated for one request.
#[derive(Debug, Clone)]
pub(crate) enum ReadyFilter {
    /// `col op v`
    Compare(usize, CompareOp, Value),
    /// `col IN vs`
    In(usize, Vec<Value>),
    /// `col CONTAINS [KEY] v`
    Contains(usize, bool, Value),
    /// `col[k] op v`
    Element(usize, Value, CompareOp, Value),
    /// `(cols) op (vs)`
    Tuple(Vec<usize>, CompareOp, Vec<Value>),
}

impl ReadyFilter {
    /// Whether a row passes, given its column values by table column index.
    pub(crate) fn matches(&self, get: &dyn Fn(usize) -> Option<Value>) -> bool {
        match self {
            ReadyFilter::Compare(c, op, v) => get(*c).is_some_and(|x| compare(&x, *op, v)),
            ReadyFilter::In(c, vs) => get(*c).is_some_and(|x| vs.contains(&x)),
            ReadyFilter::Contains(c, key, v) => get(*c).is_some_and(|x| match &x {
                Value::Map(m) => m
                    .iter()
                    .any(|(k, val)| if *key { k == v } else { val == v }),
                Value::List(items) | Value::Set(items) => !*key && items.contains(v),
                _ => false,
            }),
            ReadyFilter::Element(c, k, op, v) => get(*c).is_some_and(|x| {
                x.as_map()
                    .and_then(|m| m.iter().find(|(mk, _)| mk == k))
                    .is_some_and(|(_, val)| compare(val, *op, v))
            }),
            ReadyFilter::Tuple(cols, op, vs) => {
                let mut ord = Ordering::Equal;
                for (c, v) in cols.iter().zip(vs) {
                    let Some(x) = get(*c) else { return false };
                    ord = x.cmp(v);
                    if ord != Ordering::Equal {
                        break;
                    }
                }
                op_holds(ord, *op)
            }
        }
    }
}

/// `a op b` with the type's order.
pub(crate) fn compare(a: &Value, op: CompareOp, b: &Value) -> bool {
    op_holds(a.cmp(b), op)
}

/// Whether an ordering satisfies an operator.
fn op_holds(ord: Ordering, op: CompareOp) -> bool {
    match op {
        CompareOp::Eq => ord == Ordering::Equal,
        CompareOp::Ne => ord != Ordering::Equal,
        CompareOp::Lt => ord == Ordering::Less,
        CompareOp::Le => ord != Ordering::Greater,
        CompareOp::Gt => ord == Ordering::Greater,
        CompareOp::Ge => ord != Ordering::Less,
    }
}

/// The analysed WHERE clause.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WherePlan {
    /// Partition selection.
    pub(crate) partition: PartitionRestriction,
    /// `=`/`IN` restrictions of the leading clustering columns.
    pub(crate) prefix: Vec<PrefixPart>,
    /// Number of clustering columns the prefix covers.
    pub(crate) prefix_len: usize,
    /// The slice after the prefix.
    pub(crate) slice: Option<Slice>,
    /// Row filters.
    pub(crate) filters: Vec<Filter>,
    /// Whether any relation names a non-primary-key column (DML refuses it).
    pub(crate) non_key_columns: Vec<String>,
}

/// What kind of statement the WHERE clause belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhereMode {
    /// SELECT, with or without ALLOW FILTERING.
    Select {
        /// `ALLOW FILTERING`
        allow_filtering: bool,
    },
    /// UPDATE / DELETE.
    Modify,
}

/// Cassandra's refusal of a query that needs ALLOW FILTERING.
const FILTERING_MESSAGE: &str = "Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING";

/// Analyses the relations of a WHERE clause: each relation is sorted by what it restricts
/// ([`WhereParts::add`]), then the partition restriction, the clustering prefix and slice,
/// and the leftover filters are derived, with Scylla's errors in its order.
pub(crate) fn plan_where(
    table: &TableDef,
    relations: &[Relation],
    mode: WhereMode,
    binder: &mut Binder,
) -> Result<WherePlan, CqlError> {
    let allow_filtering = matches!(
        mode,
        WhereMode::Select {
            allow_filtering: true
        }
    );
    let mut parts = WhereParts::new(table);
    for r in relations {
        parts.add(table, r, binder)?;
    }
    let partition = parts.partition(table, mode, allow_filtering, binder)?;
    let (prefix, prefix_len) = parts.clustering_prefix(table)?;
    let slice = parts.take_slice(prefix_len);
    parts.leftover_clustering(table, allow_filtering, prefix_len, slice.is_some())?;
    let restricts_clustering = prefix_len > 0 || slice.is_some();
    if let WhereMode::Select { allow_filtering } = mode {
        if !allow_filtering
            && !matches!(partition, PartitionRestriction::Keys(_))
            && restricts_clustering
        {
            return Err(CqlError::invalid(FILTERING_MESSAGE));
        }
        if !allow_filtering && !parts.filters.is_empty() {
            return Err(CqlError::invalid(FILTERING_MESSAGE));
        }
    }
    Ok(WherePlan {
        partition,
        prefix,
        prefix_len,
        slice,
        filters: parts.filters,
        non_key_columns: parts.non_key,
    })
}

/// A clustering slice being collected: first column (index among the clustering columns),
/// number of columns, lower and upper bound.
type CkSlice = (usize, usize, Option<SliceBound>, Option<SliceBound>);

/// The relations of a WHERE clause sorted by what they restrict, while [`plan_where`]
/// collects them.
struct WhereParts {
    /// Indexes of the partition-key columns in the table.
    pk_cols: Vec<usize>,
    /// Indexes of the clustering columns in the table.
    ck_cols: Vec<usize>,
    /// Per partition-key column, its `=` / `IN`.
    pk_values: Vec<Option<KeyValues>>,
    /// Other relations on partition-key columns (filters under ALLOW FILTERING).
    pk_other: Vec<Filter>,
    /// `token(pk) >`/`>=` (value, inclusive).
    token_lower: Option<(Expr, bool)>,
    /// `token(pk) <`/`<=` (value, inclusive).
    token_upper: Option<(Expr, bool)>,
    /// Whether any relation is on `token(...)`.
    has_token: bool,
    /// Per clustering column, its `=` / `IN`.
    ck_eq: Vec<Option<KeyValues>>,
    /// The multi-column `=` / `IN` (first column, number of columns, prefix part).
    ck_multi_eq: Option<(usize, usize, PrefixPart)>,
    /// Clustering slices.
    ck_slices: Vec<CkSlice>,
    /// Row filters, in the order found.
    filters: Vec<Filter>,
    /// Non-primary-key columns named.
    non_key: Vec<String>,
}

impl WhereParts {
    /// Nothing collected yet for `table`.
    fn new(table: &TableDef) -> WhereParts {
        let pk_cols: Vec<usize> = (0..table.columns.len())
            .filter(|&i| table.columns[i].kind == ColumnKind::PartitionKey)
            .collect();
        let ck_cols: Vec<usize> = (0..table.columns.len())
            .filter(|&i| table.columns[i].kind == ColumnKind::Clustering)
            .collect();
        WhereParts {
            pk_values: vec![None; pk_cols.len()],
            ck_eq: vec![None; ck_cols.len()],
            pk_cols,
            ck_cols,
            pk_other: Vec::new(),
            token_lower: None,
            token_upper: None,
            has_token: false,
            ck_multi_eq: None,
            ck_slices: Vec::new(),
            filters: Vec::new(),
            non_key: Vec::new(),
        }
    }

    /// The position of table column `col` among the clustering columns.
    fn ck_pos(&self, col: usize) -> Option<usize> {
        self.ck_cols.iter().position(|&c| c == col)
    }

    /// The position of table column `col` among the partition-key columns.
    fn pk_pos(&self, col: usize) -> usize {
        self.pk_cols.iter().position(|&c| c == col).unwrap_or(0)
    }

    /// Collects one relation.
    fn add(&mut self, table: &TableDef, r: &Relation, binder: &mut Binder) -> Result<(), CqlError> {
        match r {
            Relation::Compare { column, op, value } => {
                self.add_compare(table, column, *op, value, binder)
            }
            Relation::In { column, values } => self.add_in(table, column, values, binder),
            Relation::Contains { column, key, value } => {
                self.add_contains(table, column, *key, value, binder)
            }
            Relation::Element {
                column,
                key,
                op,
                value,
            } => self.add_element(table, column, key, *op, value, binder),
            Relation::Like { column, .. } => Err(CqlError::invalid(format!(
                "LIKE restriction on column {column} is not supported"
            ))),
            Relation::IsNotNull { column } => Err(CqlError::invalid(format!(
                "Unsupported restriction: {column} IS NOT NULL"
            ))),
            Relation::MultiCompare { columns, op, value } => {
                self.add_multi_compare(table, columns, *op, value, binder)
            }
            Relation::MultiIn { columns, values } => {
                self.add_multi_in(table, columns, values, binder)
            }
            Relation::Token { columns, op, value } => {
                self.add_token(table, columns, *op, value, binder)
            }
        }
    }

    /// `column op value`.
    fn add_compare(
        &mut self,
        table: &TableDef,
        column: &str,
        op: CompareOp,
        value: &Term,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let ci = column_index(table, column)?;
        let def = &table.columns[ci];
        if op == CompareOp::Ne {
            return Err(CqlError::invalid(format!(
                "Unsupported \"!=\" relation: {column} != ..."
            )));
        }
        match def.kind {
            ColumnKind::PartitionKey => {
                let i = self.pk_pos(ci);
                let e = plan_term(value, &def.typ, &def.name, binder)?;
                if op == CompareOp::Eq {
                    set_once(&mut self.pk_values[i], KeyValues::Eq(e), column)?;
                } else {
                    self.pk_other.push(Filter::Compare {
                        col: ci,
                        op,
                        value: e,
                    });
                }
            }
            ColumnKind::Clustering => {
                let i = self.ck_pos(ci).unwrap_or(0);
                let e = plan_term(value, &def.typ, &def.name, binder)?;
                if op == CompareOp::Eq {
                    set_once(&mut self.ck_eq[i], KeyValues::Eq(e), column)?;
                } else {
                    let bound = SliceBound {
                        values: TupleValues::Cols(vec![e]),
                        inclusive: matches!(op, CompareOp::Le | CompareOp::Ge),
                    };
                    add_slice(&mut self.ck_slices, i, 1, op, bound, column)?;
                }
            }
            _ => {
                self.non_key.push(column.to_string());
                let e = plan_term(value, &def.typ, &def.name, binder)?;
                self.filters.push(Filter::Compare {
                    col: ci,
                    op,
                    value: e,
                });
            }
        }
        Ok(())
    }

    /// `column IN (...)` or `column IN ?`.
    fn add_in(
        &mut self,
        table: &TableDef,
        column: &str,
        values: &InValues,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let ci = column_index(table, column)?;
        let def = &table.columns[ci];
        let kv = plan_in(values, &def.typ, &def.name, binder)?;
        match def.kind {
            ColumnKind::PartitionKey => {
                let i = self.pk_pos(ci);
                set_once(&mut self.pk_values[i], kv, column)?;
            }
            ColumnKind::Clustering => {
                let i = self.ck_pos(ci).unwrap_or(0);
                set_once(&mut self.ck_eq[i], kv, column)?;
            }
            _ => {
                self.non_key.push(column.to_string());
                self.filters.push(Filter::In {
                    col: ci,
                    values: kv,
                });
            }
        }
        Ok(())
    }

    /// `column CONTAINS value` / `column CONTAINS KEY key`.
    fn add_contains(
        &mut self,
        table: &TableDef,
        column: &str,
        key: bool,
        value: &Term,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let ci = column_index(table, column)?;
        let def = &table.columns[ci];
        let et = match (&def.typ, key) {
            (CqlType::Map { key: k, .. }, true) => (**k).clone(),
            (CqlType::Map { value: v, .. }, false) => (**v).clone(),
            (CqlType::List { elem, .. } | CqlType::Set { elem, .. }, false) => (**elem).clone(),
            _ => {
                return Err(CqlError::invalid(format!(
                    "Cannot use CONTAINS{} on non-collection column {column}",
                    if key { " KEY" } else { "" }
                )));
            }
        };
        self.non_key.push(column.to_string());
        // `get_rhs_receiver`: value(c) for CONTAINS, key(m) for CONTAINS KEY.
        let receiver = if key {
            format!("key({})", def.name)
        } else {
            format!("value({})", def.name)
        };
        let e = plan_term(value, &et, &receiver, binder)?;
        self.filters.push(Filter::Contains {
            col: ci,
            key,
            value: e,
        });
        Ok(())
    }

    /// `column[key] op value` on a map.
    fn add_element(
        &mut self,
        table: &TableDef,
        column: &str,
        key: &Term,
        op: CompareOp,
        value: &Term,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let ci = column_index(table, column)?;
        let def = &table.columns[ci];
        let CqlType::Map {
            key: kt, value: vt, ..
        } = &def.typ
        else {
            return Err(CqlError::invalid(format!(
                "Column {column} cannot be used as a map"
            )));
        };
        self.non_key.push(column.to_string());
        let k = plan_term(key, kt, &format!("key({column})"), binder)?;
        let v = plan_term(value, vt, &format!("value({column})"), binder)?;
        self.filters.push(Filter::Element {
            col: ci,
            key: k,
            op,
            value: v,
        });
        Ok(())
    }

    /// `(c1, c2) op (v1, v2)` on clustering columns.
    fn add_multi_compare(
        &mut self,
        table: &TableDef,
        columns: &[String],
        op: CompareOp,
        value: &Term,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let (first, idxs, types) = multi_columns(table, columns, &self.ck_cols)?;
        let n = columns.len();
        let tv = plan_tuple(value, &types, &tuple_receiver(table, &idxs), binder)?;
        if op == CompareOp::Eq {
            if self.ck_multi_eq.is_some() {
                return Err(CqlError::invalid(
                    "Only one multi-column restriction is supported",
                ));
            }
            self.ck_multi_eq = Some((
                first,
                n,
                PrefixPart::Multi {
                    n,
                    tuples: vec![tv],
                    list_marker: None,
                },
            ));
        } else if op == CompareOp::Ne {
            return Err(CqlError::invalid("Unsupported \"!=\" relation"));
        } else {
            // A slice in CQL (natural) order, also over columns of mixed clustering
            // order: `clustering_ranges` turns it into storage ranges.
            let bound = SliceBound {
                values: tv,
                inclusive: matches!(op, CompareOp::Le | CompareOp::Ge),
            };
            add_slice(&mut self.ck_slices, first, n, op, bound, &columns.join(","))?;
        }
        Ok(())
    }

    /// `(c1, c2) IN ((v1, v2), ...)` or `(c1, c2) IN ?` on clustering columns.
    fn add_multi_in(
        &mut self,
        table: &TableDef,
        columns: &[String],
        values: &InValues,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let (first, idxs, types) = multi_columns(table, columns, &self.ck_cols)?;
        let n = columns.len();
        let tuple_type = CqlType::Tuple(types.clone());
        let in_name = format!("IN({})", tuple_receiver(table, &idxs));
        let part = match values {
            InValues::Marker(m) => PrefixPart::Multi {
                n,
                tuples: Vec::new(),
                list_marker: Some(marker(
                    m,
                    &CqlType::List {
                        elem: Box::new(tuple_type),
                        frozen: false,
                    },
                    &in_name,
                    binder,
                )),
            },
            InValues::List(items) => {
                let element = format!("value({in_name})");
                PrefixPart::Multi {
                    n,
                    tuples: items
                        .iter()
                        .map(|t| plan_tuple(t, &types, &element, binder))
                        .collect::<Result<_, _>>()?,
                    list_marker: None,
                }
            }
        };
        if self.ck_multi_eq.is_some() {
            return Err(CqlError::invalid(
                "Only one multi-column restriction is supported",
            ));
        }
        self.ck_multi_eq = Some((first, n, part));
        Ok(())
    }

    /// `token(pk...) op value`.
    fn add_token(
        &mut self,
        table: &TableDef,
        columns: &[String],
        op: CompareOp,
        value: &Term,
        binder: &mut Binder,
    ) -> Result<(), CqlError> {
        let names: Vec<&str> = self
            .pk_cols
            .iter()
            .map(|&c| table.columns[c].name.as_str())
            .collect();
        if columns.iter().map(String::as_str).ne(names.iter().copied()) {
            return Err(CqlError::invalid(format!(
                "The token function arguments must be in the partition key order: {}",
                names.join(", ")
            )));
        }
        self.has_token = true;
        let e = plan_token_value(value, table, &self.pk_cols, binder)?;
        match op {
            CompareOp::Gt | CompareOp::Ge => {
                set_token_bound(&mut self.token_lower, e, op == CompareOp::Ge, "start")
            }
            CompareOp::Lt | CompareOp::Le => {
                set_token_bound(&mut self.token_upper, e, op == CompareOp::Le, "end")
            }
            CompareOp::Eq => {
                set_token_bound(&mut self.token_lower, e.clone(), true, "start")?;
                set_token_bound(&mut self.token_upper, e, true, "end")
            }
            CompareOp::Ne => Err(CqlError::invalid("Unsupported \"!=\" relation on token")),
        }
    }

    /// The partition restriction: token bounds, every partition-key column by `=`/`IN`, or
    /// a scan (partition-key relations then become filters, under ALLOW FILTERING).
    fn partition(
        &mut self,
        table: &TableDef,
        mode: WhereMode,
        allow_filtering: bool,
        binder: &mut Binder,
    ) -> Result<PartitionRestriction, CqlError> {
        let any_pk = self.pk_values.iter().any(Option::is_some) || !self.pk_other.is_empty();
        let all_pk_eq = self.pk_values.iter().all(Option::is_some) && self.pk_other.is_empty();
        if self.has_token {
            if any_pk {
                return Err(CqlError::invalid(format!(
                    "Columns \"{}\" cannot be restricted by both a normal relation and a token relation",
                    self.pk_names(table, |_| true).join(", ")
                )));
            }
            return Ok(PartitionRestriction::Token {
                lower: self.token_lower.take(),
                upper: self.token_upper.take(),
            });
        }
        if all_pk_eq && !self.pk_cols.is_empty() {
            let vals: Vec<KeyValues> = std::mem::take(&mut self.pk_values)
                .into_iter()
                .flatten()
                .collect();
            binder.set_pk_markers(vals.iter().map(KeyValues::eq_marker).collect());
            return Ok(PartitionRestriction::Keys(vals));
        }
        if any_pk {
            self.partition_filters(table, mode, allow_filtering)?;
        }
        Ok(PartitionRestriction::Scan)
    }

    /// The names of the partition-key columns whose `=`/`IN` satisfies `pick`.
    fn pk_names<'t>(
        &self,
        table: &'t TableDef,
        pick: impl Fn(&Option<KeyValues>) -> bool,
    ) -> Vec<&'t str> {
        self.pk_cols
            .iter()
            .zip(&self.pk_values)
            .filter(|(_, v)| pick(v))
            .map(|(&c, _)| table.columns[c].name.as_str())
            .collect()
    }

    /// Partition-key relations that do not select partitions: refused (with the error of
    /// the statement's kind) unless ALLOW FILTERING makes them filters.
    fn partition_filters(
        &mut self,
        table: &TableDef,
        mode: WhereMode,
        allow_filtering: bool,
    ) -> Result<(), CqlError> {
        if mode == WhereMode::Modify {
            let missing = self.pk_names(table, Option::is_none);
            return Err(CqlError::invalid(format!(
                "Some partition key parts are missing: {}",
                missing.join(", ")
            )));
        }
        if !allow_filtering {
            if !self.pk_other.is_empty() {
                return Err(CqlError::invalid(
                    "Only EQ and IN relation are supported on the partition key (unless you use the token() function or allow filtering)",
                ));
            }
            let missing = self.pk_names(table, Option::is_none);
            return Err(CqlError::invalid(format!(
                "Partition key parts: {} must be restricted as other parts are",
                missing.join(", ")
            )));
        }
        let pk_values = std::mem::take(&mut self.pk_values);
        for (&c, v) in self.pk_cols.iter().zip(pk_values) {
            if let Some(v) = v {
                self.filters.push(key_filter(c, v));
            }
        }
        self.filters.append(&mut self.pk_other);
        Ok(())
    }

    /// The `=`/`IN` prefix of the clustering columns (single- and multi-column parts) and
    /// the number of columns it covers.
    fn clustering_prefix(
        &mut self,
        table: &TableDef,
    ) -> Result<(Vec<PrefixPart>, usize), CqlError> {
        let mut prefix = Vec::new();
        let mut pos = 0;
        loop {
            if let Some((first, n, _)) = &self.ck_multi_eq
                && *first == pos
            {
                let n = *n;
                if let Some((_, _, part)) = self.ck_multi_eq.take() {
                    prefix.push(part);
                }
                pos += n;
                continue;
            }
            match self.ck_eq.get_mut(pos).and_then(Option::take) {
                Some(kv) => {
                    if self.ck_slices.iter().any(|s| s.0 == pos) {
                        return Err(CqlError::invalid(format!(
                            "{} cannot be restricted by both an equality and an inequality relation",
                            table.columns[self.ck_cols[pos]].name
                        )));
                    }
                    prefix.push(PrefixPart::Single(kv));
                    pos += 1;
                }
                None => break,
            }
        }
        Ok((prefix, pos))
    }

    /// The slice right after a prefix of `prefix_len` columns, if any.
    fn take_slice(&mut self, prefix_len: usize) -> Option<Slice> {
        let i = self.ck_slices.iter().position(|s| s.0 == prefix_len)?;
        let (first, n, lower, upper) = self.ck_slices.remove(i);
        Some(Slice {
            first,
            n,
            lower,
            upper,
        })
    }

    /// Clustering restrictions neither in the prefix nor its slice: refused unless ALLOW
    /// FILTERING makes them filters.
    fn leftover_clustering(
        &mut self,
        table: &TableDef,
        allow_filtering: bool,
        prefix_len: usize,
        has_slice: bool,
    ) -> Result<(), CqlError> {
        let leftover_eq: Vec<usize> = (0..self.ck_cols.len())
            .filter(|&i| self.ck_eq[i].is_some())
            .collect();
        if leftover_eq.is_empty() && self.ck_slices.is_empty() && self.ck_multi_eq.is_none() {
            return Ok(());
        }
        if !allow_filtering {
            let first_bad = leftover_eq
                .first()
                .copied()
                .or_else(|| self.ck_slices.first().map(|s| s.0))
                .or_else(|| self.ck_multi_eq.as_ref().map(|m| m.0))
                .unwrap_or(0);
            return Err(self.out_of_order(table, first_bad, prefix_len, has_slice));
        }
        for i in leftover_eq {
            if let Some(v) = self.ck_eq[i].take() {
                self.filters.push(key_filter(self.ck_cols[i], v));
            }
        }
        for (first, n, lower, upper) in std::mem::take(&mut self.ck_slices) {
            let cols: Vec<usize> = self.ck_cols[first..first + n].to_vec();
            for (b, lower_side) in [(lower, true), (upper, false)] {
                if let Some(b) = b {
                    let op = match (lower_side, b.inclusive) {
                        (true, true) => CompareOp::Ge,
                        (true, false) => CompareOp::Gt,
                        (false, true) => CompareOp::Le,
                        (false, false) => CompareOp::Lt,
                    };
                    self.filters.push(Filter::Tuple {
                        cols: cols.clone(),
                        op,
                        values: b.values,
                    });
                }
            }
        }
        if self.ck_multi_eq.is_some() {
            return Err(CqlError::invalid(
                "Multi-column relations must restrict the clustering columns in order",
            ));
        }
        Ok(())
    }

    /// Scylla's error for the clustering column `first_bad` restricted out of order.
    fn out_of_order(
        &self,
        table: &TableDef,
        first_bad: usize,
        prefix_len: usize,
        has_slice: bool,
    ) -> CqlError {
        let bad = &table.columns[self.ck_cols[first_bad]].name;
        let prev = first_bad
            .checked_sub(1)
            .map(|p| table.columns[self.ck_cols[p]].name.clone())
            .unwrap_or_default();
        CqlError::invalid(if has_slice && first_bad > prefix_len {
            format!(
                "Clustering column \"{bad}\" cannot be restricted (preceding column \"{prev}\" is restricted by a non-EQ relation)"
            )
        } else {
            format!(
                "PRIMARY KEY column \"{bad}\" cannot be restricted as preceding column \"{prev}\" is not restricted"
            )
        })
    }
}

/// The filter of a key column's `=`/`IN` that does not select rows.
fn key_filter(col: usize, v: KeyValues) -> Filter {
    match v {
        KeyValues::Eq(e) => Filter::Compare {
            col,
            op: CompareOp::Eq,
            value: e,
        },
        other => Filter::In { col, values: other },
    }
}

/// Records the `=`/`IN` of a key column, refusing a second one.
fn set_once(slot: &mut Option<KeyValues>, v: KeyValues, column: &str) -> Result<(), CqlError> {
    if slot.is_some() {
        return Err(CqlError::invalid(format!(
            "{column} cannot be restricted by more than one relation if it includes an Equal"
        )));
    }
    *slot = Some(v);
    Ok(())
}

/// Records one bound of a token range, refusing a second one on the same side.
fn set_token_bound(
    slot: &mut Option<(Expr, bool)>,
    e: Expr,
    inclusive: bool,
    side: &str,
) -> Result<(), CqlError> {
    if slot.is_some() {
        return Err(CqlError::invalid(format!(
            "More than one restriction was found for the {side} bound on the partition key token"
        )));
    }
    *slot = Some((e, inclusive));
    Ok(())
}

/// Adds a bound to the slice starting at clustering column `first`.
fn add_slice(
    slices: &mut Vec<(usize, usize, Option<SliceBound>, Option<SliceBound>)>,
    first: usize,
    n: usize,
    op: CompareOp,
    bound: SliceBound,
    column: &str,
) -> Result<(), CqlError> {
    let i = match slices.iter().position(|s| s.0 == first) {
        Some(i) => i,
        None => {
            slices.push((first, n, None, None));
            slices.len() - 1
        }
    };
    let entry = &mut slices[i];
    let lower = matches!(op, CompareOp::Gt | CompareOp::Ge);
    let slot = if lower { &mut entry.2 } else { &mut entry.3 };
    if slot.is_some() {
        return Err(CqlError::invalid(format!(
            "More than one restriction was found for the {} bound on {column}",
            if lower { "start" } else { "end" }
        )));
    }
    *slot = Some(bound);
    Ok(())
}

/// The `IN` values of one column. The receiver of the list is named `IN(col)` in ScyllaDB
/// 2025.x (`get_rhs_receiver`: the operator as `oper_t` prints it; Cassandra and ScyllaDB
/// 2026.1.12+ spell it `in(col)`), and the receiver of each element of `IN (x, y)` is that
/// list's element, `value(IN(col))` (`list_value_spec_of`).
fn plan_in(
    values: &InValues,
    typ: &CqlType,
    name: &str,
    binder: &mut Binder,
) -> Result<KeyValues, CqlError> {
    let in_name = format!("IN({name})");
    Ok(match values {
        // Scylla names the marker `IN(c)`, the operator in uppercase, where Cassandra writes
        // `in(c)` (get_rhs_receiver, scylladb cql3/expr/prepare_expr.cc; the spelling is the
        // default of its `cql_in_bind_variable_name_uses_uppercase_operator`).
        InValues::Marker(m) => KeyValues::InMarker(marker(
            m,
            &CqlType::List {
                elem: Box::new(typ.frozen()),
                frozen: false,
            },
            &in_name,
            binder,
        )),
        InValues::List(items) => {
            let element = format!("value({in_name})");
            KeyValues::In(
                items
                    .iter()
                    .map(|t| plan_term(t, typ, &element, binder))
                    .collect::<Result<_, _>>()?,
            )
        }
    })
}

/// The receiver name ScyllaDB gives the left side of a multi-column relation: `(c1,c2)`.
fn tuple_receiver(table: &TableDef, cols: &[usize]) -> String {
    let names: Vec<&str> = cols
        .iter()
        .map(|&c| table.columns[c].name.as_str())
        .collect();
    format!("({})", names.join(","))
}

/// A tuple of values of types `types` for the receiver `receiver` (a whole-tuple marker is
/// named `receiver`, a component of a tuple literal `receiver[i]`: `component_spec_of`).
fn plan_tuple(
    t: &Term,
    types: &[CqlType],
    receiver: &str,
    binder: &mut Binder,
) -> Result<TupleValues, CqlError> {
    match t {
        Term::Tuple(items) => {
            if items.len() != types.len() {
                return Err(CqlError::invalid(format!(
                    "Expected {} elements in value tuple, but got {}: {receiver}",
                    types.len(),
                    items.len(),
                )));
            }
            Ok(TupleValues::Cols(
                items
                    .iter()
                    .zip(types)
                    .enumerate()
                    .map(|(i, (t, ty))| plan_term(t, ty, &format!("{receiver}[{i}]"), binder))
                    .collect::<Result<_, _>>()?,
            ))
        }
        other => Ok(TupleValues::Whole(plan_term(
            other,
            &CqlType::Tuple(types.to_vec()),
            receiver,
            binder,
        )?)),
    }
}

/// Checks that a multi-column relation names consecutive clustering columns; returns the
/// first one's clustering position, the table indexes and the types.
fn multi_columns(
    table: &TableDef,
    columns: &[String],
    ck_cols: &[usize],
) -> Result<(usize, Vec<usize>, Vec<CqlType>), CqlError> {
    let mut idxs = Vec::new();
    let mut positions = Vec::new();
    for c in columns {
        let ci = column_index(table, c)?;
        let pos = ck_cols.iter().position(|&x| x == ci).ok_or_else(|| {
            CqlError::invalid(format!(
                "Multi-column relations can only be applied to clustering columns but was applied to: {c}"
            ))
        })?;
        idxs.push(ci);
        positions.push(pos);
    }
    let first = positions.first().copied().unwrap_or(0);
    if positions.iter().enumerate().any(|(i, &p)| p != first + i) {
        return Err(CqlError::invalid(format!(
            "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: ({})",
            columns.join(", ")
        )));
    }
    let types = idxs.iter().map(|&i| table.columns[i].typ.clone()).collect();
    Ok((first, idxs, types))
}

/// The right side of `token(pk) op x`: `token(?, ...)`, a bigint constant or a marker.
fn plan_token_value(
    value: &Term,
    table: &TableDef,
    pk_cols: &[usize],
    binder: &mut Binder,
) -> Result<Expr, CqlError> {
    match value {
        Term::FunctionCall { name, args } if name.name == "token" => {
            if args.len() != pk_cols.len() {
                return Err(CqlError::invalid(
                    "Invalid number of arguments in call to function token",
                ));
            }
            // `functions::make_arg_spec`: the arguments of system.token are arg<i>.
            let exprs = args
                .iter()
                .zip(pk_cols)
                .enumerate()
                .map(|(i, (a, &c))| {
                    plan_term(
                        a,
                        &table.columns[c].typ,
                        &format!("arg{i}(system.token)"),
                        binder,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Expr::Call(super::values::Func::Token, exprs))
        }
        Term::Marker(m) => Ok(marker(m, &CqlType::Bigint, "partition key token", binder)),
        other => plan_term(other, &CqlType::Bigint, "partition key token", binder),
    }
}

impl WherePlan {
    /// Whether clustering columns are restricted (a static-only row is then not returned).
    pub(crate) fn restricts_clustering(&self) -> bool {
        self.prefix_len > 0 || self.slice.is_some()
    }

    /// The partition keys of a `Keys` restriction, in the order ScyllaDB reads them
    /// (`partition_ranges_from_singles` with `get_IN_values`): each column's values sorted by
    /// its type's order and deduplicated (equal bytes), then their cartesian product, first
    /// column outermost. Not token order: `pk IN (3, 1, 2)` reads partitions 1, 2, 3.
    pub(crate) fn partition_keys(
        &self,
        table: &TableDef,
        ctx: &EvalCtx<'_>,
    ) -> Result<Option<Vec<PartitionKey>>, CqlError> {
        let PartitionRestriction::Keys(parts) = &self.partition else {
            return Ok(None);
        };
        let pk_defs: Vec<_> = table.partition_key().collect();
        let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
        for (kv, def) in parts.iter().zip(&pk_defs) {
            let mut vals = kv.eval(ctx, &format!("partition key part {}", def.name))?;
            vals.sort();
            vals.dedup_by(|a, b| a.to_bytes() == b.to_bytes());
            let mut next = Vec::with_capacity(combos.len() * vals.len());
            for c in &combos {
                for v in &vals {
                    let mut c2 = c.clone();
                    c2.push(v.clone());
                    next.push(c2);
                }
            }
            combos = next;
            if combos.len() > 100_000 {
                return Err(CqlError::invalid(
                    "IN restrictions on the partition key produce too many partitions",
                ));
            }
        }
        let keys = combos
            .into_iter()
            .map(|vals| make_partition_key(table, vals))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(keys))
    }

    /// The token bounds of a `Token` restriction: where to start, and the last token
    /// included (`None`: to the end). `None` when the range is empty.
    pub(crate) fn token_range(
        &self,
        ctx: &EvalCtx<'_>,
    ) -> Result<Option<(PartitionStart, Option<i64>)>, CqlError> {
        let PartitionRestriction::Token { lower, upper } = &self.partition else {
            return Ok(Some((PartitionStart::First, None)));
        };
        let get = |e: &Expr| -> Result<i64, CqlError> {
            match eval_required(e, ctx, "partition key token")? {
                Value::Bigint(t) => Ok(t),
                other => other
                    .as_i64()
                    .ok_or_else(|| CqlError::invalid("Invalid token value")),
            }
        };
        let start = match lower {
            None => PartitionStart::First,
            Some((e, true)) => PartitionStart::TokenAtLeast(get(e)?),
            Some((e, false)) => PartitionStart::TokenAbove(get(e)?),
        };
        let end = match upper {
            None => None,
            Some((e, true)) => Some(get(e)?),
            Some((e, false)) => match get(e)?.checked_sub(1) {
                Some(t) => Some(t),
                None => return Ok(None),
            },
        };
        // Cassandra wraps `token > x AND token <= y` with y < x around the ring only for
        // `y = min`; an inverted range selects nothing.
        if let (Some(end), start) = (end, &start) {
            let lo = match start {
                PartitionStart::TokenAtLeast(t) => Some(*t),
                PartitionStart::TokenAbove(t) => t.checked_add(1),
                _ => Some(i64::MIN),
            };
            if lo.is_none_or(|lo| lo > end) {
                return Ok(None);
            }
        }
        Ok(Some((start, end)))
    }

    /// The clustering prefixes of the `=`/`IN` restrictions (each of `prefix_len` values),
    /// sorted in natural order and deduplicated.
    pub(crate) fn prefixes(&self, ctx: &EvalCtx<'_>) -> Result<Vec<Vec<Value>>, CqlError> {
        let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
        for part in &self.prefix {
            let options: Vec<Vec<Value>> = match part {
                PrefixPart::Single(kv) => kv
                    .eval(ctx, "a clustering column")?
                    .into_iter()
                    .map(|v| vec![v])
                    .collect(),
                PrefixPart::Multi {
                    n,
                    tuples,
                    list_marker,
                } => match list_marker {
                    Some(m) => {
                        let list = eval_required(m, ctx, "a clustering column tuple list")?;
                        list.as_elements()
                            .unwrap_or(&[])
                            .iter()
                            .map(|t| tuple_fields(t, *n))
                            .collect::<Result<_, _>>()?
                    }
                    None => tuples
                        .iter()
                        .map(|t| t.eval(ctx, *n))
                        .collect::<Result<_, _>>()?,
                },
            };
            let mut next = Vec::with_capacity(combos.len() * options.len());
            for c in &combos {
                for o in &options {
                    let mut c2 = c.clone();
                    c2.extend(o.iter().cloned());
                    next.push(c2);
                }
            }
            combos = next;
            if combos.len() > 100_000 {
                return Err(CqlError::invalid(
                    "IN restrictions on clustering columns produce too many rows",
                ));
            }
        }
        combos.sort();
        combos.dedup();
        Ok(combos)
    }

    /// The clustering ranges selected (in clustering-order bounds); none restricted = the
    /// whole partition.
    pub(crate) fn clustering_ranges(
        &self,
        table: &TableDef,
        ctx: &EvalCtx<'_>,
    ) -> Result<Vec<ClusteringRange>, CqlError> {
        let prefixes = self.prefixes(ctx)?;
        let ck_desc: Vec<bool> = table
            .clustering_key()
            .map(|c| c.order == ClusteringOrder::Desc)
            .collect();
        let Some(slice) = &self.slice else {
            return Ok(prefixes.into_iter().map(ClusteringRange::prefix).collect());
        };
        let lower = match &slice.lower {
            Some(b) => Some((b.values.eval(ctx, slice.n)?, b.inclusive)),
            None => None,
        };
        let upper = match &slice.upper {
            Some(b) => Some((b.values.eval(ctx, slice.n)?, b.inclusive)),
            None => None,
        };
        let desc = ck_desc.get(slice.first).copied().unwrap_or(false);
        let slice_orders = ck_desc
            .get(slice.first..slice.first + slice.n)
            .unwrap_or(&[]);
        if slice_orders.iter().any(|&d| d != desc) {
            // Mixed clustering order: the CQL-order range is a union of storage ranges.
            let mut out = Vec::new();
            for p in prefixes {
                let side = |b: &Option<(Vec<Value>, bool)>| -> (Vec<Value>, bool) {
                    match b {
                        Some((vals, inclusive)) => {
                            let mut v = p.clone();
                            v.extend(vals.iter().cloned());
                            (v, *inclusive)
                        }
                        None => (p.clone(), true),
                    }
                };
                out.extend(equivalent_ranges(&side(&lower), &side(&upper), &ck_desc));
            }
            return Ok(out);
        }
        let mut out = Vec::with_capacity(prefixes.len());
        for p in prefixes {
            let bound = |side: &Option<(Vec<Value>, bool)>| -> ClusteringBound {
                match side {
                    Some((vals, inclusive)) => {
                        let mut v = p.clone();
                        v.extend(vals.iter().cloned());
                        if *inclusive {
                            ClusteringBound::inclusive(v)
                        } else {
                            ClusteringBound::exclusive(v)
                        }
                    }
                    None => ClusteringBound::inclusive(p.clone()),
                }
            };
            let (start, end) = if desc {
                (bound(&upper), bound(&lower))
            } else {
                (bound(&lower), bound(&upper))
            };
            out.push(ClusteringRange::new(start, end));
        }
        Ok(out)
    }

    /// The filters with their values evaluated.
    pub(crate) fn ready_filters(&self, ctx: &EvalCtx<'_>) -> Result<Vec<ReadyFilter>, CqlError> {
        self.filters
            .iter()
            .map(|f| {
                Ok(match f {
                    Filter::Compare { col, op, value } => {
                        ReadyFilter::Compare(*col, *op, eval_required(value, ctx, "a filter")?)
                    }
                    Filter::In { col, values } => {
                        ReadyFilter::In(*col, values.eval(ctx, "a filter")?)
                    }
                    Filter::Contains { col, key, value } => {
                        ReadyFilter::Contains(*col, *key, eval_required(value, ctx, "CONTAINS")?)
                    }
                    Filter::Element {
                        col,
                        key,
                        op,
                        value,
                    } => ReadyFilter::Element(
                        *col,
                        eval_required(key, ctx, "a map key")?,
                        *op,
                        eval_required(value, ctx, "a filter")?,
                    ),
                    Filter::Tuple { cols, op, values } => {
                        ReadyFilter::Tuple(cols.clone(), *op, values.eval(ctx, cols.len())?)
                    }
                })
            })
            .collect()
    }
}

/// ScyllaDB's `get_equivalent_ranges`: a clustering range in CQL order (bounds as key
/// prefixes with inclusiveness; an empty prefix is no bound) as storage ranges when the
/// columns it spans have different clustering orders. `(a, b) < (5, 5)` with `b DESC` is
/// `a < 5` plus `a = 5 AND b < 5`, each continuous in storage.
fn equivalent_ranges(
    lower: &(Vec<Value>, bool),
    upper: &(Vec<Value>, bool),
    desc: &[bool],
) -> Vec<ClusteringRange> {
    let (lb, lb_inclusive) = (&lower.0, lower.1);
    let (ub, ub_inclusive) = (&upper.0, upper.1);
    if lb == ub && (lb.is_empty() || (lb_inclusive && ub_inclusive)) {
        return vec![ClusteringRange::new(
            ClusteringBound::inclusive(lb.clone()),
            ClusteringBound::inclusive(ub.clone()),
        )];
    }
    // `make_prefix_bound`: the first `len` values; inclusive only when that is the whole bound.
    let bound = |len: usize, whole: &[Value], inclusive: bool| -> ClusteringBound {
        if whole.is_empty() {
            return ClusteringBound::unbounded();
        }
        let prefix = whole[..len.min(whole.len())].to_vec();
        if len >= whole.len() && inclusive {
            ClusteringBound::inclusive(prefix)
        } else {
            ClusteringBound::exclusive(prefix)
        }
    };
    let range = |column: usize, lo: ClusteringBound, hi: ClusteringBound| {
        if desc.get(column).copied().unwrap_or(false) {
            ClusteringRange::new(hi, lo)
        } else {
            ClusteringRange::new(lo, hi)
        }
    };
    let common = lb.iter().zip(ub.iter()).take_while(|(a, b)| a == b).count();
    if common >= desc.len() {
        // Equal full keys, one side exclusive: nothing.
        return Vec::new();
    }
    let mut ranges = vec![range(
        common,
        bound(common + 1, lb, lb_inclusive),
        bound(common + 1, ub, ub_inclusive),
    )];
    for p in common + 2..=lb.len() {
        let hi = ClusteringBound::inclusive(lb[..p - 1].to_vec());
        ranges.push(range(p - 1, bound(p, lb, lb_inclusive), hi));
    }
    for p in common + 2..=ub.len() {
        let lo = ClusteringBound::inclusive(ub[..p - 1].to_vec());
        ranges.push(range(p - 1, lo, bound(p, ub, ub_inclusive)));
    }
    ranges
}

/// Builds the partition key of `values` (one per partition-key column): serialized form and
/// the table's partitioner token.
pub(crate) fn make_partition_key(
    table: &TableDef,
    values: Vec<Value>,
) -> Result<PartitionKey, CqlError> {
    let parts: Vec<bytes::Bytes> = values.iter().map(Value::to_bytes).collect();
    if parts.len() == 1 && parts[0].is_empty() {
        return Err(CqlError::invalid("Key may not be empty"));
    }
    let key = crate::cluster::partitioner::serialize_partition_key(parts.iter().map(|b| &b[..]))
        .ok_or_else(|| CqlError::invalid("Key length is too long"))?;
    let token = if table.partitioner().is_some() {
        crate::cluster::partitioner::cdc_token(&key)
    } else {
        crate::cluster::partitioner::murmur3_token(&key)
    };
    Ok(PartitionKey::new(token, bytes::Bytes::from(key), values))
}
