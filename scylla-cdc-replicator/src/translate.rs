//! Turning CDC log rows into the CQL writes that replay them on the destination — pure
//! functions, no cluster involved.
//!
//! A [`LogRow`] is one delta row of the log, with every column of the base table in
//! [`TableSchema`] order. A [`Translator`] (one per stream group, since a range delete spans
//! two consecutive rows) turns it into [`Write`]s: a [`Shape`] (which statement) and its bind
//! values. [`statement_text`] renders a shape as CQL for a destination table; shapes are what
//! the applier prepares once and caches.
//!
//! How each change is replayed (the write timestamp is always `cdc$time`'s, so the
//! destination's reconciliation orders writes and replaying a change changes nothing):
//!
//! * insert (op 2): `INSERT` of the keys and the atomic columns (the row marker), non-frozen
//!   parts that `INSERT` cannot express go to `UPDATE`s of the same row;
//! * update (op 1): `UPDATE`; a row whose clustering key is null updates static columns;
//! * a column with `cdc$deleted_X`: `X = <added elements or null>`, which writes a collection
//!   tombstone at `T − 1` (Scylla logs a column delete at `T + 1` for exactly this reason);
//! * added set/map elements `X = X + ?`, removed ones `X = X - ?`; list elements by their
//!   timeuuid key: `X[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?` (`null` to remove), so the
//!   destination list has the source's keys and therefore its order — on a ScyllaDB
//!   destination ([`ListWrites::TimeuuidIndex`]). A destination without that function
//!   (Apache Cassandra, Cassandra-compatible services) gets [`ListWrites::PostImage`]: a
//!   change that touches a list is written as the whole list `X = ?` taken from the change's
//!   post-image (see [`ListWrites`] for why the delta alone is not enough);
//! * non-frozen UDTs: `X.f = ?` for each non-null field, `X.f = null` for removed fields;
//! * row / partition delete (ops 3, 4, and the expirations −3, −4): `DELETE`;
//! * range delete (start row 5/6 then end row 7/8): one `DELETE` per slice of
//!   [`range_pieces`] — usually one, several only when the bounds have different lengths;
//! * TTL: the remaining TTL (`cdc$ttl − (now − write time)`, in whole seconds); live values
//!   that have already expired are not written, deletions still are.
//!
//! Pre-images (op 0) are not replayed; post-images (op 9) only give the lists of
//! [`ListWrites::PostImage`].

use std::fmt::{self, Write as _};
use std::sync::Arc;

use scylla::value::CqlValue;
use scylla_cdc::{CDCRow, ColumnError, OperationType};

use crate::schema::{ColumnKind, TableSchema, ValueKind, quote};

/// One delta row of the log, detached from its page. Vectors are indexed like
/// [`TableSchema::columns`].
#[derive(Debug, Clone, PartialEq)]
pub struct LogRow {
    /// `cdc$operation`.
    pub operation: OperationType,
    /// The write timestamp (µs), from `cdc$time`.
    pub time_micros: i64,
    /// `cdc$ttl`.
    pub ttl: Option<i64>,
    /// Column values (null: not changed).
    pub values: Vec<Option<CqlValue>>,
    /// `cdc$deleted_X`.
    pub deleted: Vec<bool>,
    /// `cdc$deleted_elements_X`.
    pub deleted_elements: Vec<Option<CqlValue>>,
}

impl LogRow {
    /// An empty row for a table of `columns` columns.
    pub fn new(operation: OperationType, time_micros: i64, columns: usize) -> LogRow {
        LogRow {
            operation,
            time_micros,
            ttl: None,
            values: vec![None; columns],
            deleted: vec![false; columns],
            deleted_elements: vec![None; columns],
        }
    }

    /// Refills this row from a log row (reusing its vectors) and returns how many of
    /// `schema`'s columns the log row lacks: they read as null. A log row whose columns are
    /// not exactly `schema`'s (it lacks some, or has others: the base table was altered) is
    /// for [`crate::evolve`] to judge.
    pub fn fill(
        &mut self,
        schema: &TableSchema,
        row: &mut CDCRow<'_>,
    ) -> Result<usize, ColumnError> {
        let n = schema.columns.len();
        let mut missing = 0;
        self.operation = row.operation;
        self.time_micros = row.timestamp_micros();
        self.ttl = row.ttl;
        self.values.resize(n, None);
        self.deleted.resize(n, false);
        self.deleted_elements.resize(n, None);
        for (i, c) in schema.columns.iter().enumerate() {
            let value = match row.take_value(&c.name) {
                Ok(v) => v,
                Err(ColumnError::NoSuchColumn(_)) => {
                    missing += 1;
                    None
                }
                Err(e) => return Err(e),
            };
            let elements = match c.value_kind {
                ValueKind::Atomic => None,
                _ => match row.take_deleted_elements(&c.name) {
                    Ok(v) => v,
                    Err(ColumnError::NoSuchColumn(_)) => None,
                    Err(e) => return Err(e),
                },
            };
            if let Some(slot) = self.values.get_mut(i) {
                *slot = value;
            }
            if let Some(slot) = self.deleted.get_mut(i) {
                *slot = row.is_value_deleted(&c.name);
            }
            if let Some(slot) = self.deleted_elements.get_mut(i) {
                *slot = elements;
            }
        }
        Ok(missing)
    }

    /// Re-indexes this row, filled for `old`, to `new` (the same table after columns were
    /// added): values move by column name, and the columns `old` lacks are taken from `row`.
    pub fn refill(
        &mut self,
        old: &TableSchema,
        new: &TableSchema,
        row: &mut CDCRow<'_>,
    ) -> Result<(), ColumnError> {
        let mut values = Vec::with_capacity(new.columns.len());
        let mut deleted = Vec::with_capacity(new.columns.len());
        let mut deleted_elements = Vec::with_capacity(new.columns.len());
        for c in &new.columns {
            match old.columns.iter().position(|o| o.name == c.name) {
                Some(j) => {
                    values.push(self.values.get_mut(j).and_then(Option::take));
                    deleted.push(self.deleted.get(j).copied().unwrap_or(false));
                    deleted_elements.push(self.deleted_elements.get_mut(j).and_then(Option::take));
                }
                None => {
                    let or_null = |r: Result<Option<CqlValue>, ColumnError>| match r {
                        Err(ColumnError::NoSuchColumn(_)) => Ok(None),
                        other => other,
                    };
                    values.push(or_null(row.take_value(&c.name))?);
                    deleted.push(row.is_value_deleted(&c.name));
                    deleted_elements.push(match c.value_kind {
                        ValueKind::Atomic => None,
                        _ => or_null(row.take_deleted_elements(&c.name))?,
                    });
                }
            }
        }
        self.values = values;
        self.deleted = deleted;
        self.deleted_elements = deleted_elements;
        Ok(())
    }
}

/// The bind value of `SCYLLA_TIMEUUID_LIST_INDEX(?)` for a list element's key: Scylla
/// types that marker `uuid_idx(X)` of type `uuid`, not `timeuuid` (scylladb
/// `cql3/lists.cc`, `lists::uuid_index_spec_of`), and the driver refuses to bind a
/// `CqlTimeuuid` to a `uuid` marker. The log keys list elements by timeuuid: same bytes.
fn list_index(key: CqlValue) -> CqlValue {
    match key {
        CqlValue::Timeuuid(t) => CqlValue::Uuid(t.into()),
        other => other,
    }
}

/// One assignment of an `UPDATE`, on a column index of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Assign {
    /// `X = ?`
    Set(u16),
    /// `X = X + ?`
    Add(u16),
    /// `X = X - ?`
    Remove(u16),
    /// `X[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?` (two values: the element's key as a `uuid`,
    /// and the element)
    ListElement(u16),
    /// `X.field = ?` (field by index in the UDT)
    Field(u16, u16),
}

impl Assign {
    /// The assigned column.
    fn column(self) -> u16 {
        match self {
            Assign::Set(c)
            | Assign::Add(c)
            | Assign::Remove(c)
            | Assign::ListElement(c)
            | Assign::Field(c, _) => c,
        }
    }
}

/// A slice of a range delete on one clustering column, in value order: `col > ?` /
/// `col >= ?` and `col < ?` / `col <= ?` (`Some(true)` is inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slice {
    /// Lower bound: `Some(inclusive)`.
    pub gt: Option<bool>,
    /// Upper bound: `Some(inclusive)`.
    pub lt: Option<bool>,
}

/// Which statement a write is, independently of its values: the key of the prepared
/// statement cache.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `INSERT INTO t (<keys>, <columns>) VALUES (...) USING TTL ? AND TIMESTAMP ?`;
    /// values: keys, columns, ttl, timestamp.
    Insert {
        /// Non-key columns.
        columns: Vec<u16>,
    },
    /// `UPDATE t USING TTL ? AND TIMESTAMP ? SET <assigns> WHERE <keys>`; values: ttl,
    /// timestamp, the assignments' values, partition key, clustering key (unless static).
    Update {
        /// Only the partition key in `WHERE` (a static-row update).
        static_row: bool,
        /// The assignments.
        assigns: Vec<Assign>,
    },
    /// `DELETE FROM t USING TIMESTAMP ? WHERE <pk> AND <eq clustering columns> [AND
    /// slice]`; values: timestamp, partition key, the `eq` clustering values, the slice's
    /// bounds (lower, then upper).
    Delete {
        /// Number of clustering columns restricted by `=`.
        eq: u16,
        /// A slice on the next clustering column.
        slice: Option<Slice>,
    },
}

/// A statement to execute on the destination: its shape and bind values.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// The statement.
    pub shape: Shape,
    /// Bind values, in the order [`Shape`] documents.
    pub values: Vec<Option<CqlValue>>,
}

/// A log row that cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslateError(pub String);

impl fmt::Display for TranslateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TranslateError {}

/// A [`TranslateError`] with this message.
fn err(msg: impl Into<String>) -> TranslateError {
    TranslateError(msg.into())
}

/// The TTL to write a row's live values with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// No TTL (`USING TTL 0`).
    None,
    /// This many seconds are left.
    Remaining(i32),
    /// The live values have expired on the source already.
    Expired,
}

/// The TTL left of values written at `write_micros` with `ttl` seconds, at `now_micros`.
///
/// Scylla computes expiry in whole seconds as `write second + ttl`; the destination computes
/// `now second + remaining`, so `remaining = write second + ttl − now second` gives both the
/// same expiry (to the second the write reaches the destination in).
pub fn remaining_ttl(ttl: Option<i64>, write_micros: i64, now_micros: i64) -> Ttl {
    match ttl {
        None => Ttl::None,
        Some(t) if t <= 0 => Ttl::None,
        Some(t) => {
            let expiry = write_micros.div_euclid(1_000_000).saturating_add(t);
            let left = expiry.saturating_sub(now_micros.div_euclid(1_000_000));
            if left <= 0 {
                Ttl::Expired
            } else {
                Ttl::Remaining(i32::try_from(left).unwrap_or(i32::MAX))
            }
        }
    }
}

/// One piece of a range delete in clustering order: the clustering prefix `eq` fixed, and
/// bounds on the next clustering column (`(value, inclusive)`), lower then upper in
/// clustering order.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// Values of the first clustering columns.
    pub eq: Vec<CqlValue>,
    /// Start bound on the next column (clustering order).
    pub lower: Option<(CqlValue, bool)>,
    /// End bound on the next column (clustering order).
    pub upper: Option<(CqlValue, bool)>,
}

/// A bound at one level: the remaining prefix values and whether it is inclusive.
type Bound<'a> = Option<(&'a [CqlValue], bool)>;

/// Splits a range tombstone `[start, end]` — clustering prefixes with inclusive flags, an
/// empty prefix meaning unbounded — into pieces that CQL can delete (an equality prefix plus
/// a slice on one column). Bounds of the same length that share all but their last value
/// give a single piece; different lengths give one piece per level.
pub fn range_pieces(
    start: &[CqlValue],
    start_inclusive: bool,
    end: &[CqlValue],
    end_inclusive: bool,
) -> Vec<Piece> {
    let mut out = Vec::new();
    // An exclusive empty bound excludes everything.
    if (start.is_empty() && !start_inclusive) || (end.is_empty() && !end_inclusive) {
        return out;
    }
    let s = (!start.is_empty()).then_some((start, start_inclusive));
    let e = (!end.is_empty()).then_some((end, end_inclusive));
    pieces(Vec::new(), s, e, &mut out);
    out
}

/// The pieces of the range between bounds `s` and `e` (`None`: unbounded) below the
/// clustering prefix `prefix`.
fn pieces(prefix: Vec<CqlValue>, s: Bound<'_>, e: Bound<'_>, out: &mut Vec<Piece>) {
    let with = |v: &CqlValue| {
        let mut p = prefix.clone();
        p.push(v.clone());
        p
    };
    match (s, e) {
        (None, None) => out.push(Piece {
            eq: prefix,
            lower: None,
            upper: None,
        }),
        (Some((sv, si)), Some((ev, ei))) if sv.first() == ev.first() => {
            let Some(first) = sv.first() else { return };
            // Inside the block of `first`: a bound that ends here either covers the whole
            // block from its side (inclusive) or excludes the block entirely (exclusive).
            let s2 = match sv.get(1..) {
                Some(rest) if !rest.is_empty() => Some((rest, si)),
                _ if si => None,
                _ => return,
            };
            let e2 = match ev.get(1..) {
                Some(rest) if !rest.is_empty() => Some((rest, ei)),
                _ if ei => None,
                _ => return,
            };
            pieces(with(first), s2, e2, out);
        }
        (s, e) => {
            let lower = s.and_then(|(sv, si)| {
                let first = sv.first()?;
                match sv.get(1..) {
                    Some(rest) if !rest.is_empty() => {
                        pieces(with(first), Some((rest, si)), None, out);
                        Some((first.clone(), false))
                    }
                    _ => Some((first.clone(), si)),
                }
            });
            let upper = e.and_then(|(ev, ei)| {
                let first = ev.first()?;
                match ev.get(1..) {
                    Some(rest) if !rest.is_empty() => {
                        pieces(with(first), None, Some((rest, ei)), out);
                        Some((first.clone(), false))
                    }
                    _ => Some((first.clone(), ei)),
                }
            });
            out.push(Piece {
                eq: prefix,
                lower,
                upper,
            });
        }
    }
}

/// The start row of a range delete, waiting for its end row.
#[derive(Debug, Clone)]
struct RangeStart {
    /// Its write time: the end row must have the same.
    time: i64,
    /// Its partition: the end row must have the same.
    partition_key: Vec<CqlValue>,
    /// The start bound's clustering prefix (empty: unbounded).
    prefix: Vec<CqlValue>,
    /// Whether the start bound is inclusive (op 5) or exclusive (op 6).
    inclusive: bool,
}

/// How changes to non-frozen lists are written.
///
/// A list's elements are cells keyed by timeuuids, and the log names elements by those keys
/// (an append or prepend logs the new elements under the keys the source generated, `l[i] =
/// v` logs the key of the `i`-th element, `DELETE l[i]` and `l = l - [...]` log the removed
/// keys). Only ScyllaDB can write a cell under a given key (`SCYLLA_TIMEUUID_LIST_INDEX`);
/// elsewhere an append or an overwrite gets keys generated by the destination, so element
/// writes and deletions by key cannot be replayed from the delta, and even a replayed append
/// would not be idempotent. The post-image, however, holds the whole list after the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListWrites {
    /// Elements by their source keys: `X[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?` (ScyllaDB).
    #[default]
    TimeuuidIndex,
    /// The whole list from the change's post-image: `X = ?` at the change's timestamp (which
    /// also writes a tombstone at `T − 1` that clears the list's older elements). Needs the
    /// source table's `postimage` CDC option. Limits: the whole list gets the change's TTL
    /// (elements written earlier with another TTL take this one), and replaying the very
    /// last change of a list (a retried timed-out write, a restart from a checkpoint) adds
    /// its elements once more, under new keys, until the list's next change.
    PostImage,
}

/// The list columns of a changed row waiting for the row's post-image
/// ([`ListWrites::PostImage`]).
#[derive(Debug, Clone)]
struct PendingLists {
    /// The change's write time: the post-image has the same.
    time: i64,
    /// The row's partition key.
    partition_key: Vec<CqlValue>,
    /// The row's clustering key (empty: the static row, or a table without one).
    clustering_key: Vec<CqlValue>,
    /// The list columns the change touched, with the `USING TTL` value to write them with.
    columns: Vec<(u16, Option<CqlValue>)>,
    /// The same write also deleted rows of this partition: the changed row may not exist
    /// after it, and then has no post-image.
    may_vanish: bool,
}

/// Translates the delta rows of one stream group (see the module docs).
#[derive(Debug)]
pub struct Translator {
    schema: Arc<TableSchema>,
    pending: Option<RangeStart>,
    lists: ListWrites,
    pending_lists: Vec<PendingLists>,
}

/// A statement being assembled: its assignments and bind values (ttl and timestamp first).
struct UpdateBuilder {
    /// The `SET` assignments.
    assigns: Vec<Assign>,
    /// TTL, timestamp, then the assignments' values (keys are appended at the end).
    values: Vec<Option<CqlValue>>,
}

/// The writes of one inserted or updated row being assembled: an `INSERT` (when the row
/// has a live row marker) and as many `UPDATE`s as conflicting assignments need.
struct RowWrites {
    /// Whether the row is written with an `INSERT` (a live row marker).
    insert: bool,
    /// Columns of the `INSERT` besides the keys.
    insert_columns: Vec<u16>,
    /// Their values.
    insert_values: Vec<Option<CqlValue>>,
    /// The `UPDATE`s.
    updates: Vec<UpdateBuilder>,
    /// The `USING TTL` value.
    ttl: Option<CqlValue>,
    /// The `USING TIMESTAMP` value.
    timestamp: Option<CqlValue>,
}

impl RowWrites {
    /// Adds an assignment to the first `UPDATE` it does not conflict with (a whole-column
    /// `X = ?` conflicts with any other assignment of `X`).
    fn add(&mut self, assign: Assign, values: impl IntoIterator<Item = Option<CqlValue>>) {
        let conflicts = |b: &UpdateBuilder| {
            b.assigns.iter().any(|a| {
                a.column() == assign.column()
                    && (matches!(a, Assign::Set(_)) || matches!(assign, Assign::Set(_)))
            })
        };
        let builder = match self.updates.iter().position(|b| !conflicts(b)) {
            Some(i) => self.updates.get_mut(i),
            None => {
                self.updates.push(UpdateBuilder {
                    assigns: Vec::new(),
                    values: vec![self.ttl.clone(), self.timestamp.clone()],
                });
                self.updates.last_mut()
            }
        };
        if let Some(b) = builder {
            b.assigns.push(assign);
            b.values.extend(values);
        }
    }

    /// Writes a whole column: in the `INSERT` if there is one, else as `X = ?`.
    fn whole(&mut self, column: u16, value: Option<CqlValue>) {
        if self.insert {
            self.insert_columns.push(column);
            self.insert_values.push(value);
        } else {
            self.add(Assign::Set(column), [value]);
        }
    }

    /// Appends the statements, with their key values, to `out`.
    fn finish(self, pk: &[CqlValue], ck: &[CqlValue], static_row: bool, out: &mut Vec<Write>) {
        if self.insert {
            // Sized once: a `CqlValue` slot is large, and a grown vector's spare slots would
            // stay allocated while the write is queued.
            let mut values: Vec<Option<CqlValue>> =
                Vec::with_capacity(pk.len() + ck.len() + self.insert_values.len() + 2);
            values.extend(pk.iter().chain(ck).cloned().map(Some));
            values.extend(self.insert_values);
            values.push(self.ttl.clone());
            values.push(self.timestamp.clone());
            out.push(Write {
                shape: Shape::Insert {
                    columns: self.insert_columns,
                },
                values,
            });
        }
        for b in self.updates {
            let mut values = b.values;
            values.reserve_exact(pk.len() + if static_row { 0 } else { ck.len() });
            values.extend(pk.iter().cloned().map(Some));
            if !static_row {
                values.extend(ck.iter().cloned().map(Some));
            }
            out.push(Write {
                shape: Shape::Update {
                    static_row,
                    assigns: b.assigns,
                },
                values,
            });
        }
    }
}

impl Translator {
    /// A translator for rows of `schema`'s table, writing list elements by their keys
    /// ([`ListWrites::TimeuuidIndex`]).
    pub fn new(schema: Arc<TableSchema>) -> Self {
        Self::with_list_writes(schema, ListWrites::TimeuuidIndex)
    }

    /// A translator for rows of `schema`'s table writing lists as `lists` says.
    pub fn with_list_writes(schema: Arc<TableSchema>, lists: ListWrites) -> Self {
        Self {
            schema,
            pending: None,
            lists,
            pending_lists: Vec::new(),
        }
    }

    /// Continues with `schema`, the same table after columns were added, writing lists as
    /// `lists` says: a change waiting for its post-image keeps waiting, its list columns
    /// found by name (range-delete bounds are key values, which an added column never moves).
    pub fn rebase(&mut self, schema: Arc<TableSchema>, lists: ListWrites) {
        let old = std::mem::replace(&mut self.schema, schema);
        for p in &mut self.pending_lists {
            p.columns = p
                .columns
                .drain(..)
                .filter_map(|(c, ttl)| {
                    let name = &old.columns.get(usize::from(c))?.name;
                    let i = self.schema.columns.iter().position(|n| &n.name == name)?;
                    Some((u16::try_from(i).ok()?, ttl))
                })
                .collect();
        }
        self.lists = lists;
    }

    /// Whether post-image rows must be passed to [`Translator::translate`].
    pub fn needs_post_images(&self) -> bool {
        self.lists == ListWrites::PostImage
    }

    /// Checks that no change is still waiting for its post-image, at the end of a window or
    /// before a row of another write. A row that the same write may have deleted has no
    /// post-image and is dropped (its deletion is replicated); any other is an error.
    pub fn check_post_images(&mut self) -> Result<(), TranslateError> {
        let missing = self.pending_lists.iter().find(|p| !p.may_vanish).map(|p| {
            let names: Vec<&str> = p
                .columns
                .iter()
                .filter_map(|(c, _)| self.schema.columns.get(usize::from(*c)))
                .map(|c| c.name.as_str())
                .collect();
            err(format!(
                "the change at {} of list column(s) {} has no post-image row (is the \
                 source table's `postimage` CDC option still on?)",
                p.time,
                names.join(", ")
            ))
        });
        self.pending_lists.clear();
        missing.map_or(Ok(()), Err)
    }

    /// Marks the rows waiting for a post-image in partition `pk` at `time` as possibly
    /// deleted by the same write.
    fn deleted_in_partition(&mut self, time: i64, pk: &[CqlValue]) {
        for p in &mut self.pending_lists {
            if p.time == time && p.partition_key == pk {
                p.may_vanish = true;
            }
        }
    }

    /// The whole-list writes of a post-image row for the lists its change touched.
    fn post_image(&mut self, row: &mut LogRow, out: &mut Vec<Write>) -> Result<(), TranslateError> {
        if self.pending_lists.is_empty() {
            return Ok(());
        }
        let pk = self.partition_key(row)?;
        let ck = self.clustering_prefix(row);
        let Some(i) = self.pending_lists.iter().position(|p| {
            p.time == row.time_micros && p.partition_key == pk && p.clustering_key == ck
        }) else {
            return Ok(());
        };
        let p = self.pending_lists.swap_remove(i);
        let static_row = self.schema.clustering_len > 0 && ck.is_empty();
        // One UPDATE per distinct TTL (one, unless a batch gave the lists different TTLs).
        let mut by_ttl: Vec<RowWrites> = Vec::new();
        for (c, ttl) in p.columns {
            let value = row.values.get_mut(usize::from(c)).and_then(Option::take);
            let list = match value {
                None => None,
                // The log keeps a list as `map<timeuuid, T>` in key order: the list's order.
                Some(CqlValue::Map(entries)) => Some(CqlValue::List(
                    entries.into_iter().map(|(_, v)| v).collect(),
                )),
                Some(other) => {
                    let name = self
                        .schema
                        .columns
                        .get(usize::from(c))
                        .map_or("?", |c| c.name.as_str());
                    return Err(err(format!(
                        "list column {name} has a post-image value that is not a map: {other:?}"
                    )));
                }
            };
            let i = match by_ttl.iter().position(|w| w.ttl == ttl) {
                Some(i) => i,
                None => {
                    by_ttl.push(RowWrites {
                        insert: false,
                        insert_columns: Vec::new(),
                        insert_values: Vec::new(),
                        updates: Vec::new(),
                        ttl,
                        timestamp: Some(CqlValue::BigInt(p.time)),
                    });
                    by_ttl.len() - 1
                }
            };
            if let Some(w) = by_ttl.get_mut(i) {
                w.add(Assign::Set(c), [list]);
            }
        }
        for w in by_ttl {
            w.finish(&pk, &ck, static_row, out);
        }
        Ok(())
    }

    /// Appends to `out` the writes that replay `row` (its values are taken). `now_micros` is
    /// used for the remaining TTL.
    pub fn translate(
        &mut self,
        row: &mut LogRow,
        now_micros: i64,
        out: &mut Vec<Write>,
    ) -> Result<(), TranslateError> {
        let op = row.operation;
        let is_range_end = matches!(
            op,
            OperationType::RowRangeDelInclRight | OperationType::RowRangeDelExclRight
        );
        if !is_range_end && let Some(p) = self.pending.take() {
            return Err(err(format!(
                "a range delete's start at {} has no end row",
                p.time
            )));
        }
        // Post-images follow the deltas of their write (same `cdc$time`): a row of another
        // write means that every post-image of the previous one has been seen.
        if self.pending_lists.iter().any(|p| p.time != row.time_micros) {
            self.check_post_images()?;
        }
        match op {
            OperationType::PreImage => Ok(()),
            OperationType::PostImage => self.post_image(row, out),
            OperationType::RowInsert => self.upsert(row, true, now_micros, out),
            OperationType::RowUpdate => self.upsert(row, false, now_micros, out),
            OperationType::RowDelete => {
                let pk = self.partition_key(row)?;
                let ck = self.clustering_prefix(row);
                if ck.len() != self.schema.clustering_len {
                    return Err(err("a row delete without a full clustering key"));
                }
                self.deleted_in_partition(row.time_micros, &pk);
                out.push(delete(row.time_micros, pk, ck, None, None));
                Ok(())
            }
            OperationType::PartitionDelete => {
                let pk = self.partition_key(row)?;
                self.deleted_in_partition(row.time_micros, &pk);
                out.push(delete(row.time_micros, pk, Vec::new(), None, None));
                Ok(())
            }
            OperationType::RowRangeDelInclLeft | OperationType::RowRangeDelExclLeft => {
                let pk = self.partition_key(row)?;
                self.deleted_in_partition(row.time_micros, &pk);
                self.pending = Some(RangeStart {
                    time: row.time_micros,
                    partition_key: pk,
                    prefix: self.clustering_prefix(row),
                    inclusive: op == OperationType::RowRangeDelInclLeft,
                });
                Ok(())
            }
            OperationType::RowRangeDelInclRight | OperationType::RowRangeDelExclRight => {
                let start = self
                    .pending
                    .take()
                    .ok_or_else(|| err("a range delete's end row without its start row"))?;
                let pk = self.partition_key(row)?;
                if start.time != row.time_micros || start.partition_key != pk {
                    return Err(err("a range delete's end row does not match its start row"));
                }
                let end = self.clustering_prefix(row);
                let inclusive = op == OperationType::RowRangeDelInclRight;
                self.range_delete(row.time_micros, pk, &start, &end, inclusive, out)
            }
            // Codes this version does not know: nothing is written (the caller logs them).
            _ => Ok(()),
        }
    }

    /// The partition-key values of a row; all must be present.
    fn partition_key(&self, row: &mut LogRow) -> Result<Vec<CqlValue>, TranslateError> {
        (0..self.schema.partition_key_len)
            .map(|i| {
                row.values.get(i).cloned().flatten().ok_or_else(|| {
                    err(format!(
                        "partition key column {} is null",
                        self.schema.columns.get(i).map_or("?", |c| c.name.as_str())
                    ))
                })
            })
            .collect()
    }

    /// The leading non-null clustering values.
    fn clustering_prefix(&self, row: &LogRow) -> Vec<CqlValue> {
        let start = self.schema.partition_key_len;
        (start..start + self.schema.clustering_len)
            .map_while(|i| row.values.get(i).cloned().flatten())
            .collect()
    }

    /// The `DELETE`s of a range delete from its start row to `end`.
    fn range_delete(
        &self,
        ts: i64,
        pk: Vec<CqlValue>,
        start: &RangeStart,
        end: &[CqlValue],
        end_inclusive: bool,
        out: &mut Vec<Write>,
    ) -> Result<(), TranslateError> {
        for piece in range_pieces(&start.prefix, start.inclusive, end, end_inclusive) {
            let level = piece.eq.len();
            if level == 0 && piece.lower.is_none() && piece.upper.is_none() {
                return Err(err(
                    "a range delete of every clustering row cannot be written in CQL",
                ));
            }
            let desc = self
                .schema
                .columns
                .get(self.schema.partition_key_len + level)
                .is_some_and(|c| c.desc);
            // Clustering order is value order, reversed on a descending column.
            let (gt, lt) = if desc {
                (piece.upper, piece.lower)
            } else {
                (piece.lower, piece.upper)
            };
            out.push(delete(ts, pk.clone(), piece.eq, gt, lt));
        }
        Ok(())
    }

    /// The writes of an insert (op 2) or update (op 1) row.
    fn upsert(
        &mut self,
        row: &mut LogRow,
        insert: bool,
        now_micros: i64,
        out: &mut Vec<Write>,
    ) -> Result<(), TranslateError> {
        let schema = &*self.schema;
        let pk = self.partition_key(row)?;
        let ck = self.clustering_prefix(row);
        let static_row = schema.clustering_len > 0 && ck.is_empty();
        if !static_row && ck.len() != schema.clustering_len {
            return Err(err("a row change without a full clustering key"));
        }
        let ttl = remaining_ttl(row.ttl, row.time_micros, now_micros);
        let expired = ttl == Ttl::Expired;
        let ttl_value = Some(CqlValue::Int(match ttl {
            Ttl::Remaining(s) => s,
            Ttl::None | Ttl::Expired => 0,
        }));
        let ts_value = Some(CqlValue::BigInt(row.time_micros));
        let insert = insert && !static_row && !expired;

        let mut w = RowWrites {
            insert,
            insert_columns: Vec::new(),
            insert_values: Vec::new(),
            updates: Vec::new(),
            ttl: ttl_value,
            timestamp: ts_value,
        };
        let mut lists_from_image: Vec<(u16, Option<CqlValue>)> = Vec::new();

        let key_len = schema.partition_key_len + schema.clustering_len;
        for (i, column) in schema.columns.iter().enumerate().skip(key_len) {
            let wanted = if static_row {
                column.kind == ColumnKind::Static
            } else {
                column.kind == ColumnKind::Regular
            };
            if !wanted {
                continue;
            }
            let c = u16::try_from(i).map_err(|_| err("too many columns"))?;
            let value = row.values.get_mut(i).and_then(Option::take);
            let value = if expired { None } else { value };
            let deleted = row.deleted.get(i).copied().unwrap_or(false);
            let elements = row.deleted_elements.get_mut(i).and_then(Option::take);
            match &column.value_kind {
                ValueKind::Atomic => {
                    if value.is_some() || deleted {
                        w.whole(c, value);
                    }
                }
                ValueKind::Set | ValueKind::Map => {
                    if deleted {
                        w.whole(c, value);
                    } else if let Some(v) = value {
                        w.add(Assign::Add(c), [Some(v)]);
                    }
                    if let Some(e) = elements {
                        w.add(Assign::Remove(c), [Some(e)]);
                    }
                }
                ValueKind::List if self.lists == ListWrites::PostImage => {
                    if expired {
                        // Nothing live to write; a deletion still is (`X = null`: a
                        // tombstone at T − 1, as the source's).
                        if deleted {
                            w.add(Assign::Set(c), [None]);
                        }
                    } else if deleted || value.is_some() || elements.is_some() {
                        lists_from_image.push((c, w.ttl.clone()));
                    }
                }
                ValueKind::List => {
                    if deleted {
                        w.whole(c, None);
                    }
                    match value {
                        Some(CqlValue::Map(entries)) => {
                            for (k, v) in entries {
                                w.add(Assign::ListElement(c), [Some(list_index(k)), Some(v)]);
                            }
                        }
                        Some(other) => {
                            return Err(err(format!(
                                "list column {} has a log value that is not a map: {other:?}",
                                column.name
                            )));
                        }
                        None => {}
                    }
                    match elements {
                        Some(CqlValue::Set(keys)) => {
                            for k in keys {
                                w.add(Assign::ListElement(c), [Some(list_index(k)), None]);
                            }
                        }
                        Some(other) => {
                            return Err(err(format!(
                                "list column {} has removed elements that are not a set: {other:?}",
                                column.name
                            )));
                        }
                        None => {}
                    }
                }
                ValueKind::Udt(fields) => {
                    if deleted {
                        w.whole(c, value);
                    } else {
                        match value {
                            Some(CqlValue::UserDefinedType { fields: values, .. }) => {
                                for (f, (_, v)) in values.into_iter().enumerate() {
                                    if let Some(v) = v {
                                        let f = u16::try_from(f)
                                            .ok()
                                            .filter(|f| usize::from(*f) < fields.len())
                                            .ok_or_else(|| {
                                                err(format!(
                                                    "UDT column {} has too many fields",
                                                    column.name
                                                ))
                                            })?;
                                        w.add(Assign::Field(c, f), [Some(v)]);
                                    }
                                }
                            }
                            Some(other) => {
                                return Err(err(format!(
                                    "UDT column {} has a log value that is not a UDT: {other:?}",
                                    column.name
                                )));
                            }
                            None => {}
                        }
                    }
                    match elements {
                        Some(CqlValue::Set(indexes)) => {
                            for idx in indexes {
                                let f = match idx {
                                    CqlValue::SmallInt(f) => u16::try_from(f).ok(),
                                    _ => None,
                                }
                                .filter(|f| usize::from(*f) < fields.len())
                                .ok_or_else(|| {
                                    err(format!(
                                        "UDT column {} has a removed field that is not a field index: {idx:?}",
                                        column.name
                                    ))
                                })?;
                                w.add(Assign::Field(c, f), [None]);
                            }
                        }
                        Some(other) => {
                            return Err(err(format!(
                                "UDT column {} has removed fields that are not a set: {other:?}",
                                column.name
                            )));
                        }
                        None => {}
                    }
                }
            }
        }

        if !lists_from_image.is_empty() {
            let time = row.time_micros;
            match self
                .pending_lists
                .iter_mut()
                .find(|p| p.time == time && p.partition_key == pk && p.clustering_key == ck)
            {
                // Another delta of the same write and row (a batch, or parts with other
                // TTLs): one post-image covers both.
                Some(p) => {
                    for (c, ttl) in lists_from_image {
                        match p.columns.iter_mut().find(|(pc, _)| *pc == c) {
                            Some(slot) => slot.1 = ttl,
                            None => p.columns.push((c, ttl)),
                        }
                    }
                }
                None => self.pending_lists.push(PendingLists {
                    time,
                    partition_key: pk.clone(),
                    clustering_key: ck.clone(),
                    columns: lists_from_image,
                    may_vanish: false,
                }),
            }
        }
        w.finish(&pk, &ck, static_row, out);
        Ok(())
    }

    /// Whether a range delete's start row is waiting for its end row.
    pub fn has_pending_range(&self) -> bool {
        self.pending.is_some()
    }
}

/// A `DELETE` with an equality prefix and optional bounds (value order) on the next column.
fn delete(
    ts: i64,
    pk: Vec<CqlValue>,
    eq: Vec<CqlValue>,
    gt: Option<(CqlValue, bool)>,
    lt: Option<(CqlValue, bool)>,
) -> Write {
    let slice = (gt.is_some() || lt.is_some()).then_some(Slice {
        gt: gt.as_ref().map(|(_, i)| *i),
        lt: lt.as_ref().map(|(_, i)| *i),
    });
    let eq_len = u16::try_from(eq.len()).unwrap_or(u16::MAX);
    let mut values = Vec::with_capacity(1 + pk.len() + eq.len() + 2);
    values.push(Some(CqlValue::BigInt(ts)));
    values.extend(pk.into_iter().map(Some));
    values.extend(eq.into_iter().map(Some));
    values.extend(gt.map(|(v, _)| Some(v)));
    values.extend(lt.map(|(v, _)| Some(v)));
    Write {
        shape: Shape::Delete { eq: eq_len, slice },
        values,
    }
}

/// The CQL text of `shape` on the destination table `target` (already quoted,
/// `"ks"."t"`), for a table of `schema`.
pub fn statement_text(schema: &TableSchema, target: &str, shape: &Shape) -> String {
    let name = |c: u16| {
        schema
            .columns
            .get(usize::from(c))
            .map_or_else(|| "\"?\"".to_owned(), |c| quote(&c.name))
    };
    let pk_len = schema.partition_key_len;
    let mut text = String::with_capacity(128);
    let where_keys = |text: &mut String, clustering: usize| {
        text.push_str(" WHERE ");
        for (i, c) in schema.columns.iter().take(pk_len + clustering).enumerate() {
            if i > 0 {
                text.push_str(" AND ");
            }
            let _ = write!(text, "{} = ?", quote(&c.name));
        }
    };
    match shape {
        Shape::Insert { columns } => {
            let keys = schema.key_columns().iter().map(|c| quote(&c.name));
            let all: Vec<String> = keys.chain(columns.iter().map(|&c| name(c))).collect();
            let _ = write!(
                text,
                "INSERT INTO {target} ({}) VALUES ({}) USING TTL ? AND TIMESTAMP ?",
                all.join(", "),
                vec!["?"; all.len()].join(", ")
            );
        }
        Shape::Update {
            static_row,
            assigns,
        } => {
            let _ = write!(text, "UPDATE {target} USING TTL ? AND TIMESTAMP ? SET ");
            for (i, a) in assigns.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                let col = name(a.column());
                match a {
                    Assign::Set(_) => {
                        let _ = write!(text, "{col} = ?");
                    }
                    Assign::Add(_) => {
                        let _ = write!(text, "{col} = {col} + ?");
                    }
                    Assign::Remove(_) => {
                        let _ = write!(text, "{col} = {col} - ?");
                    }
                    Assign::ListElement(_) => {
                        let _ = write!(text, "{col}[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?");
                    }
                    Assign::Field(c, f) => {
                        let field = schema
                            .columns
                            .get(usize::from(*c))
                            .and_then(|c| match &c.value_kind {
                                ValueKind::Udt(fields) => fields.get(usize::from(*f)),
                                _ => None,
                            })
                            .map_or_else(|| "\"?\"".to_owned(), |f| quote(f));
                        let _ = write!(text, "{col}.{field} = ?");
                    }
                }
            }
            let clustering = if *static_row {
                0
            } else {
                schema.clustering_len
            };
            where_keys(&mut text, clustering);
        }
        Shape::Delete { eq, slice } => {
            let _ = write!(text, "DELETE FROM {target} USING TIMESTAMP ?");
            let eq = usize::from(*eq);
            where_keys(&mut text, eq);
            if let Some(slice) = slice {
                let col = schema
                    .columns
                    .get(pk_len + eq)
                    .map_or_else(|| "\"?\"".to_owned(), |c| quote(&c.name));
                if let Some(incl) = slice.gt {
                    let _ = write!(text, " AND {col} {} ?", if incl { ">=" } else { ">" });
                }
                if let Some(incl) = slice.lt {
                    let _ = write!(text, " AND {col} {} ?", if incl { "<=" } else { "<" });
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests;
