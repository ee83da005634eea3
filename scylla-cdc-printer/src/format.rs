//! The output formats of the printer, as pure functions of a [`RowView`] or a
//! [`ChangeView`].
//!
//! A [`RowView`] is one log row taken out of a [`CDCRow`]: its metadata and, per base column
//! (key columns first, in key order), the value, the deletion flag and the removed elements.
//! [`pretty`] renders a readable block, [`json`] one JSON object on one line. A
//! [`ChangeView`] is one whole [`Change`] (every row of one stream with one `cdc$time`);
//! [`change_json`] renders it as one Debezium-like JSON object on one line (`--format
//! change`, described below).
//!
//! JSON keys (stable; absent keys mean null / false / empty):
//! `table`, `time` (RFC 3339, µs), `stream_id` (hex), `batch_seq_no`, `operation`
//! (`RowInsert`, `RowUpdate`, … as [`OperationType`] prints), `end_of_batch`, `columns`
//! (non-null values by column name), and when present `ttl` (seconds), `expiration` (true for
//! Scylla-initiated expirations), `deleted` (names of deleted columns), `deleted_elements`
//! (removed keys / list element ids / UDT field indexes by column name) and `late` (true for
//! a row the early reads' confirmation delivered: see [`scylla_cdc::CDCRow::is_late`]).
//!
//! # Late rows
//!
//! With early reads (the printer's default) a row that became visible after the early read
//! had passed its time is delivered by the confirmation a safety interval behind now,
//! after rows of its stream written later. It is shown as such: ` (late)` after the
//! operation in the pretty format, `"late": true` in `--format json`, and `"late": true` at
//! the top level of a `--format change` object (`false` for the others). Every other row
//! comes in the order of its partition's writes.
//!
//! # `--format change`
//!
//! One JSON object per change, on one line, shaped like a Debezium change event:
//!
//! ```text
//! {"op":"u","before":{"pk":1,"ck":2,"v":10},"after":{"pk":1,"ck":2,"v":11},
//!  "delta":[{"batch_seq_no":1,"operation":"RowUpdate","columns":{"pk":1,"ck":2,"v":11}}],
//!  "source":{"keyspace":"ks","table":"t","stream_id":"0x…","time":"<cdc$time uuid>",
//!            "ts_us":1714564800123456},
//!  "ts_ms":1714564801234,"ttl":null,"late":false}
//! ```
//!
//! * `op`: `"c"` for an insert (`cdc$operation` 2), `"u"` for an update (1: also column
//!   deletions and static-row writes), `"d"` for a deletion: then `"delete"` says which,
//!   `"row"` (3), `"partition"` (4) or `"range"` (5–8), and `"key"` holds the key columns
//!   the deletion covers (the whole key for a row, the partition key for a partition, the
//!   key columns both bounds share for a range). A range deletion also has `"range"`:
//!   `{"start": {...}, "start_inclusive": bool, "end": {...}, "end_inclusive": bool}`, each
//!   bound with its non-null key columns (an unbounded side has only the shared ones).
//! * `before` / `after`: the row before and after the change as the library's
//!   `RowChange::before` / `RowChange::after` give them (values as in `--format json`, a
//!   column known to be null as `null`, a column the log does not tell absent), or `null`:
//!   `before` is `null` without a pre-image (the table does not log pre-images, or the row
//!   is new), `after` is `null` for deletions. With `'preimage': true` `before` holds the
//!   columns the write touched, with `'full'` every column; `after` is the post-image when
//!   the table logs them (`'postimage': true`), else `before` merged with the deltas.
//! * `delta`: every delta row of the change in `cdc$batch_seq_no` order, each as in
//!   `--format json` without `table`, `time`, `stream_id` and `end_of_batch`.
//! * `source`: `keyspace`, `table`, `stream_id` (hex), `time` (the `cdc$time` timeuuid)
//!   and `ts_us` (its time: the write timestamp in microseconds).
//! * `ts_ms`: when the printer processed the change, as Debezium's top-level `ts_ms` ("the
//!   time at which the connector processed the event"): the printer's wall clock (UTC,
//!   milliseconds since the epoch) when the reader handed the change to it, taken before
//!   rendering. Compare `source.ts_us`, the write time. Changes delivered again (after a
//!   restart from a checkpoint, or another consumer-group member's takeover) carry the time
//!   of that delivery.
//! * `ttl`: the first `cdc$ttl` of the deltas (seconds), or `null`.
//! * `late`: whether the change is late (see "Late rows" above): delivered after changes of
//!   its stream written later.
//! * **Several rows in one change** (a batch, `ck IN (...)`, a static and a clustering row
//!   in one statement): `op`, `before`, `after`, `delete`, `key` and `range` describe the
//!   first row the change touches (in the order of its delta rows), and `"rows"` lists every row touched,
//!   each as `{"op", "key", "before", "after"}` plus `"delete"`/`"range"` for deletions.
//!   `rows` is absent when the change touches one row.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use scylla::value::CqlValue;
use scylla_cdc::{CDCRow, Change, ChangeRow, ColumnError, OperationType, RowChange, RowImage};
use serde_json::{Map, Value as Json};

use crate::render::json_value;
use scylla_cdc::cli::rfc3339_micros;
use scylla_cdc::cql_text::cql_literal;

/// One base column in a log row.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnView {
    /// The column's name.
    pub name: String,
    /// Its value in the row (null: not changed).
    pub value: Option<CqlValue>,
    /// `cdc$deleted_<name>`.
    pub deleted: bool,
    /// `cdc$deleted_elements_<name>`.
    pub deleted_elements: Option<CqlValue>,
}

/// One log row, detached from the page it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct RowView {
    /// `keyspace.table` of the base table.
    pub table: String,
    /// The write time (`cdc$time`).
    pub time: DateTime<Utc>,
    /// The stream id, as `0x…`.
    pub stream_id: String,
    /// `cdc$batch_seq_no`.
    pub batch_seq_no: i32,
    /// `cdc$end_of_batch`.
    pub end_of_batch: bool,
    /// `cdc$operation`.
    pub operation: OperationType,
    /// A Scylla-initiated expiration (operation -3 / -4).
    pub is_expiration: bool,
    /// `cdc$ttl`.
    pub ttl: Option<i64>,
    /// The base columns, key columns first.
    pub columns: Vec<ColumnView>,
    /// Delivered late, by the early reads' confirmation ([`CDCRow::is_late`]).
    pub late: bool,
}

impl RowView {
    /// Takes a row out of the log. `key_columns` are the base table's partition-key then
    /// clustering-key columns (listed first); the other columns follow in the log's order.
    pub fn from_cdc_row(
        table: &str,
        row: &CDCRow<'_>,
        key_columns: &[String],
    ) -> Result<RowView, scylla_cdc::ColumnError> {
        Ok(RowView {
            table: table.to_owned(),
            time: row.timestamp(),
            stream_id: row.stream_id.to_string(),
            batch_seq_no: row.batch_seq_no,
            end_of_batch: row.end_of_batch,
            operation: row.operation,
            is_expiration: row.is_expiration,
            ttl: row.ttl,
            columns: columns(row, key_columns)?,
            late: row.is_late,
        })
    }

    /// Takes a row out of a change, like [`RowView::from_cdc_row`].
    pub fn from_change_row(
        table: &str,
        change: &Change,
        row: &ChangeRow<'_>,
        key_columns: &[String],
    ) -> Result<RowView, scylla_cdc::ColumnError> {
        Ok(RowView {
            table: table.to_owned(),
            time: change.timestamp(),
            stream_id: change.stream_id().to_string(),
            batch_seq_no: row.batch_seq_no(),
            end_of_batch: row.end_of_batch(),
            operation: row.operation(),
            is_expiration: row.is_expiration(),
            ttl: row.ttl(),
            columns: columns(row, key_columns)?,
            late: change.is_late(),
        })
    }
}

/// What [`columns`] reads from a log row ([`CDCRow`] or [`ChangeRow`]).
trait LogRow {
    fn exists(&self, name: &str) -> bool;
    fn names(&self) -> Vec<&str>;
    fn is_collection(&self, name: &str) -> bool;
    fn value(&self, name: &str) -> Result<Option<CqlValue>, ColumnError>;
    fn deleted(&self, name: &str) -> bool;
    fn removed(&self, name: &str) -> Result<Option<CqlValue>, ColumnError>;
}

macro_rules! log_row {
    ($t:ty) => {
        impl LogRow for $t {
            fn exists(&self, name: &str) -> bool {
                self.column_exists(name)
            }
            fn names(&self) -> Vec<&str> {
                self.get_non_cdc_column_names().collect()
            }
            fn is_collection(&self, name: &str) -> bool {
                self.collection_exists(name)
            }
            fn value(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
                self.get_value(name)
            }
            fn deleted(&self, name: &str) -> bool {
                self.is_value_deleted(name)
            }
            fn removed(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
                self.get_deleted_elements(name)
            }
        }
    };
}
log_row!(CDCRow<'_>);
log_row!(ChangeRow<'_>);

/// The base columns of a row, `key_columns` first.
fn columns(row: &impl LogRow, key_columns: &[String]) -> Result<Vec<ColumnView>, ColumnError> {
    let mut names: Vec<&str> = key_columns
        .iter()
        .map(String::as_str)
        .filter(|n| row.exists(n))
        .collect();
    for n in row.names() {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut columns = Vec::with_capacity(names.len());
    for name in names {
        let deleted_elements = if row.is_collection(name) {
            row.removed(name)?
        } else {
            None
        };
        columns.push(ColumnView {
            name: name.to_owned(),
            value: row.value(name)?,
            deleted: row.deleted(name),
            deleted_elements,
        });
    }
    Ok(columns)
}

/// A readable block: a header line (time, table, operation, TTL), a line with the stream and
/// position, then one line per non-null column, deleted column and removed elements, and a
/// blank line.
///
/// ```text
/// 2024-05-01T12:00:00.123456Z ks.t RowUpdate ttl=60
///   stream 0x7ffe0c687fcce86e0783343730000001, batch_seq_no 0, end of batch
///   pk = 1
///   v = 'abc'
///   w deleted
///   m removed {1, 2}
/// ```
pub fn pretty(row: &RowView, out: &mut String) {
    let _ = write!(
        out,
        "{} {} {}",
        rfc3339_micros(row.time),
        row.table,
        row.operation
    );
    if row.is_expiration {
        out.push_str(" (expiration)");
    }
    if row.late {
        out.push_str(" (late)");
    }
    match row.ttl {
        Some(ttl) => {
            let _ = write!(out, " ttl={ttl}");
        }
        None => out.push_str(" ttl=none"),
    }
    let _ = write!(
        out,
        "\n  stream {}, batch_seq_no {}",
        row.stream_id, row.batch_seq_no
    );
    if row.end_of_batch {
        out.push_str(", end of batch");
    }
    out.push('\n');
    for c in &row.columns {
        if let Some(v) = &c.value {
            let _ = writeln!(out, "  {} = {}", c.name, cql_literal(v));
        }
        if c.deleted {
            let _ = writeln!(out, "  {} deleted", c.name);
        }
        if let Some(e) = &c.deleted_elements {
            let _ = writeln!(out, "  {} removed {}", c.name, cql_literal(e));
        }
    }
    out.push('\n');
}

/// One JSON object and a newline (see the module docs for the keys).
pub fn json(row: &RowView, out: &mut String) {
    out.push_str(&Json::Object(row_json(row, true)).to_string());
    out.push('\n');
}

/// One row (or range, or partition) a change touches, rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct RowChangeView {
    /// `"c"`, `"u"` or `"d"`.
    pub op: &'static str,
    /// For deletions: `"row"`, `"partition"` or `"range"`.
    pub delete: Option<&'static str>,
    /// The key columns of the row (or covered by the deletion).
    pub key: Json,
    /// The row before the change, or `null`.
    pub before: Json,
    /// The row after the change, or `null`.
    pub after: Json,
    /// For a range deletion: its bounds.
    pub range: Option<Json>,
}

/// One whole change, detached from the reader.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeView {
    /// The base table's keyspace.
    pub keyspace: String,
    /// The base table.
    pub table: String,
    /// The stream id, as `0x…`.
    pub stream_id: String,
    /// `cdc$time`, as a uuid string.
    pub time: String,
    /// The write timestamp (µs).
    pub ts_us: i64,
    /// When the printer processed the change (ms since the epoch, UTC): Debezium's `ts_ms`.
    pub ts_ms: i64,
    /// The first `cdc$ttl` of the deltas.
    pub ttl: Option<i64>,
    /// The delta rows, in order.
    pub delta: Vec<RowView>,
    /// The rows touched, in the order of their delta rows.
    pub rows: Vec<RowChangeView>,
    /// Delivered late, by the early reads' confirmation ([`Change::is_late`]).
    pub late: bool,
}

fn image_json(image: &RowImage) -> Json {
    let mut obj = Map::new();
    for (name, value) in image.iter() {
        obj.insert(name.to_owned(), value.map_or(Json::Null, json_value));
    }
    Json::Object(obj)
}

fn op_code(op: Option<OperationType>) -> (&'static str, Option<&'static str>) {
    match op {
        Some(OperationType::RowInsert) => ("c", None),
        Some(OperationType::RowDelete) => ("d", Some("row")),
        Some(OperationType::PartitionDelete) => ("d", Some("partition")),
        Some(
            OperationType::RowRangeDelInclLeft
            | OperationType::RowRangeDelExclLeft
            | OperationType::RowRangeDelInclRight
            | OperationType::RowRangeDelExclRight,
        ) => ("d", Some("range")),
        _ => ("u", None),
    }
}

/// The non-null key columns of a bound row.
fn bound_key(
    row: &ChangeRow<'_>,
    key_columns: &[String],
) -> Result<Map<String, Json>, ColumnError> {
    let mut obj = Map::new();
    for name in key_columns {
        if !row.column_exists(name) || row.column_deletable(name) {
            continue;
        }
        if let Some(v) = row.get_value(name)? {
            obj.insert(name.clone(), json_value(&v));
        }
    }
    Ok(obj)
}

impl RowChangeView {
    /// Renders one row change; `key_columns` are the base table's key columns.
    pub fn from_row_change(
        row: &RowChange<'_>,
        key_columns: &[String],
    ) -> Result<RowChangeView, ColumnError> {
        let (op, delete) = op_code(row.operation());
        let mut key = image_json(&row.key()?);
        let mut range = None;
        if delete == Some("range") {
            let bounds = row.deltas();
            let start = bounds.first();
            let end = bounds.get(1);
            let start_key = match start {
                Some(r) => bound_key(r, key_columns)?,
                None => Map::new(),
            };
            let end_key = match end {
                Some(r) => bound_key(r, key_columns)?,
                None => Map::new(),
            };
            let shared: Map<String, Json> = start_key
                .iter()
                .filter(|(k, v)| end_key.get(*k) == Some(v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            key = Json::Object(shared);
            range = Some(serde_json::json!({
                "start": start_key,
                "start_inclusive": start.is_some_and(|r| r.operation() == OperationType::RowRangeDelInclLeft),
                "end": end_key,
                "end_inclusive": end.is_some_and(|r| r.operation() == OperationType::RowRangeDelInclRight),
            }));
        }
        Ok(RowChangeView {
            op,
            delete,
            key,
            before: row.before()?.map_or(Json::Null, |i| image_json(&i)),
            after: row.after()?.map_or(Json::Null, |i| image_json(&i)),
            range,
        })
    }

    fn insert_into(&self, obj: &mut Map<String, Json>) {
        obj.insert("op".into(), Json::String(self.op.into()));
        obj.insert("before".into(), self.before.clone());
        obj.insert("after".into(), self.after.clone());
        obj.insert("key".into(), self.key.clone());
        if let Some(d) = self.delete {
            obj.insert("delete".into(), Json::String(d.into()));
        }
        if let Some(r) = &self.range {
            obj.insert("range".into(), r.clone());
        }
    }
}

impl ChangeView {
    /// Takes a change out of the reader. `key_columns` are the base table's partition-key
    /// then clustering-key columns; `processed` is when the change was handed to the printer
    /// (its `ts_ms`).
    pub fn from_change(
        keyspace: &str,
        change: &Change,
        key_columns: &[String],
        processed: DateTime<Utc>,
    ) -> Result<ChangeView, ColumnError> {
        let table = format!("{keyspace}.{}", change.table());
        let mut delta = Vec::new();
        for row in change.deltas() {
            delta.push(RowView::from_change_row(&table, change, &row, key_columns)?);
        }
        let rows = change
            .row_changes()
            .iter()
            .map(|r| RowChangeView::from_row_change(r, key_columns))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ChangeView {
            keyspace: keyspace.to_owned(),
            table: change.table().to_owned(),
            stream_id: change.stream_id().to_string(),
            time: change.time().to_string(),
            ts_us: change.timestamp_micros(),
            ts_ms: processed.timestamp_millis(),
            ttl: change.ttl(),
            delta,
            rows,
            late: change.is_late(),
        })
    }
}

/// The JSON object of one log row, with or without its place in the log.
fn row_json(row: &RowView, with_source: bool) -> Map<String, Json> {
    let mut obj = Map::new();
    if with_source {
        obj.insert("table".into(), Json::String(row.table.clone()));
        obj.insert("time".into(), Json::String(rfc3339_micros(row.time)));
        obj.insert("stream_id".into(), Json::String(row.stream_id.clone()));
        obj.insert("end_of_batch".into(), Json::Bool(row.end_of_batch));
    }
    obj.insert("batch_seq_no".into(), Json::from(row.batch_seq_no));
    obj.insert("operation".into(), Json::String(row.operation.to_string()));
    if let Some(ttl) = row.ttl {
        obj.insert("ttl".into(), Json::from(ttl));
    }
    if row.is_expiration {
        obj.insert("expiration".into(), Json::Bool(true));
    }
    if with_source && row.late {
        obj.insert("late".into(), Json::Bool(true));
    }
    let mut columns = Map::new();
    let mut deleted = Vec::new();
    let mut deleted_elements = Map::new();
    for c in &row.columns {
        if let Some(v) = &c.value {
            columns.insert(c.name.clone(), json_value(v));
        }
        if c.deleted {
            deleted.push(Json::String(c.name.clone()));
        }
        if let Some(e) = &c.deleted_elements {
            deleted_elements.insert(c.name.clone(), json_value(e));
        }
    }
    obj.insert("columns".into(), Json::Object(columns));
    if !deleted.is_empty() {
        obj.insert("deleted".into(), Json::Array(deleted));
    }
    if !deleted_elements.is_empty() {
        obj.insert("deleted_elements".into(), Json::Object(deleted_elements));
    }
    obj
}

/// One Debezium-like JSON object and a newline (see the module docs, `--format change`).
pub fn change_json(change: &ChangeView, out: &mut String) {
    let mut obj = Map::new();
    match change.rows.first() {
        Some(first) => first.insert_into(&mut obj),
        None => {
            obj.insert("op".into(), Json::String("u".into()));
            obj.insert("before".into(), Json::Null);
            obj.insert("after".into(), Json::Null);
        }
    }
    if change.rows.len() > 1 {
        let rows = change
            .rows
            .iter()
            .map(|r| {
                let mut o = Map::new();
                r.insert_into(&mut o);
                Json::Object(o)
            })
            .collect();
        obj.insert("rows".into(), Json::Array(rows));
    }
    obj.insert(
        "delta".into(),
        Json::Array(
            change
                .delta
                .iter()
                .map(|r| Json::Object(row_json(r, false)))
                .collect(),
        ),
    );
    obj.insert(
        "source".into(),
        serde_json::json!({
            "keyspace": change.keyspace,
            "table": change.table,
            "stream_id": change.stream_id,
            "time": change.time,
            "ts_us": change.ts_us,
        }),
    );
    obj.insert("ts_ms".into(), Json::from(change.ts_ms));
    obj.insert("ttl".into(), change.ttl.map_or(Json::Null, Json::from));
    obj.insert("late".into(), Json::Bool(change.late));
    out.push_str(&Json::Object(obj).to_string());
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, value: Option<CqlValue>) -> ColumnView {
        ColumnView {
            name: name.into(),
            value,
            deleted: false,
            deleted_elements: None,
        }
    }

    fn row(operation: OperationType, ttl: Option<i64>, columns: Vec<ColumnView>) -> RowView {
        RowView {
            table: "ks.t".into(),
            time: DateTime::from_timestamp_micros(1_714_564_800_123_456).unwrap(),
            stream_id: "0x0102".into(),
            batch_seq_no: 1,
            end_of_batch: true,
            operation,
            is_expiration: false,
            ttl,
            columns,
            late: false,
        }
    }

    #[test]
    fn pretty_update_with_deletions() {
        let mut m = col("m", None);
        m.deleted_elements = Some(CqlValue::Set(vec![CqlValue::Int(1), CqlValue::Int(2)]));
        let mut w = col("w", None);
        w.deleted = true;
        let r = row(
            OperationType::RowUpdate,
            Some(60),
            vec![
                col("pk", Some(CqlValue::Int(1))),
                col("ck", None),
                col("v", Some(CqlValue::Text("it's".into()))),
                w,
                m,
            ],
        );
        let mut out = String::new();
        pretty(&r, &mut out);
        assert_eq!(
            out,
            "2024-05-01T12:00:00.123456Z ks.t RowUpdate ttl=60\n  \
             stream 0x0102, batch_seq_no 1, end of batch\n  \
             pk = 1\n  v = 'it''s'\n  w deleted\n  m removed {1, 2}\n\n"
        );
    }

    #[test]
    fn pretty_partition_delete_and_expiration() {
        let mut r = row(
            OperationType::PartitionDelete,
            None,
            vec![col("pk", Some(CqlValue::BigInt(5)))],
        );
        r.is_expiration = true;
        r.end_of_batch = false;
        let mut out = String::new();
        pretty(&r, &mut out);
        assert_eq!(
            out,
            "2024-05-01T12:00:00.123456Z ks.t PartitionDelete (expiration) ttl=none\n  \
             stream 0x0102, batch_seq_no 1\n  pk = 5\n\n"
        );
    }

    #[test]
    fn json_row() {
        let mut m = col(
            "m",
            Some(CqlValue::Map(vec![(CqlValue::Int(3), CqlValue::Int(4))])),
        );
        m.deleted = true;
        m.deleted_elements = Some(CqlValue::Set(vec![CqlValue::Int(9)]));
        let r = row(
            OperationType::RowInsert,
            Some(5),
            vec![
                col("pk", Some(CqlValue::Int(1))),
                col("b", Some(CqlValue::Blob(vec![0xca, 0xfe]))),
                col("n", None),
                m,
            ],
        );
        let mut out = String::new();
        json(&r, &mut out);
        assert!(out.ends_with('\n') && !out.trim_end().contains('\n'));
        assert_eq!(
            out.trim_end(),
            r#"{"batch_seq_no":1,"columns":{"b":"0xcafe","m":{"3":4},"pk":1},"deleted":["m"],"deleted_elements":{"m":[9]},"end_of_batch":true,"operation":"RowInsert","stream_id":"0x0102","table":"ks.t","time":"2024-05-01T12:00:00.123456Z","ttl":5}"#
        );
    }

    #[test]
    fn a_late_row_says_so_in_every_format() {
        let mut r = row(
            OperationType::RowUpdate,
            None,
            vec![col("pk", Some(CqlValue::Int(1)))],
        );
        let mut on_time = String::new();
        json(&r, &mut on_time);
        assert!(!on_time.contains("late"), "{on_time}");
        r.late = true;
        let mut out = String::new();
        pretty(&r, &mut out);
        assert!(
            out.starts_with("2024-05-01T12:00:00.123456Z ks.t RowUpdate (late) ttl=none\n"),
            "{out}"
        );
        out.clear();
        json(&r, &mut out);
        let v: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(v["late"], true);
        let change = ChangeView {
            keyspace: "ks".into(),
            table: "t".into(),
            stream_id: "0x0102".into(),
            time: "c0ffee00-0000-1000-8000-000000000000".into(),
            ts_us: 7,
            ts_ms: 8,
            ttl: None,
            delta: vec![r],
            rows: Vec::new(),
            late: true,
        };
        out.clear();
        change_json(&change, &mut out);
        let v: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(v["late"], true);
        // The change says it once, at the top level: its deltas do not repeat it.
        assert_eq!(v["delta"][0].get("late"), None);
    }

    #[test]
    fn json_omits_nulls() {
        let mut r = row(OperationType::RowDelete, None, vec![col("pk", None)]);
        r.end_of_batch = false;
        let mut out = String::new();
        json(&r, &mut out);
        let v: Json = serde_json::from_str(&out).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj["columns"], serde_json::json!({}));
        assert_eq!(obj["end_of_batch"], Json::Bool(false));
        for absent in ["ttl", "deleted", "deleted_elements", "expiration"] {
            assert!(!obj.contains_key(absent), "{absent}");
        }
    }

    #[test]
    fn change_json_single_and_multi_row() {
        let delete = RowChangeView {
            op: "d",
            delete: Some("range"),
            key: serde_json::json!({"pk": 1}),
            before: Json::Null,
            after: Json::Null,
            range: Some(
                serde_json::json!({"start": {"pk": 1, "ck": 0}, "start_inclusive": false,
                "end": {"pk": 1, "ck": 2}, "end_inclusive": true}),
            ),
        };
        let update = RowChangeView {
            op: "u",
            delete: None,
            key: serde_json::json!({"pk": 1, "ck": 5}),
            before: serde_json::json!({"pk": 1, "ck": 5, "v": null}),
            after: serde_json::json!({"pk": 1, "ck": 5, "v": 3}),
            range: None,
        };
        let mut change = ChangeView {
            keyspace: "ks".into(),
            table: "t".into(),
            stream_id: "0x0102".into(),
            time: "c0ffee00-0000-1000-8000-000000000000".into(),
            ts_us: 7,
            ts_ms: 1_714_564_801_234,
            ttl: Some(5),
            delta: vec![row(
                OperationType::RowUpdate,
                Some(5),
                vec![col("v", Some(CqlValue::Int(3)))],
            )],
            rows: vec![update.clone()],
            late: false,
        };
        let mut out = String::new();
        change_json(&change, &mut out);
        assert!(out.ends_with('\n') && !out.trim_end().contains('\n'));
        assert_eq!(
            out.trim_end(),
            r#"{"after":{"ck":5,"pk":1,"v":3},"before":{"ck":5,"pk":1,"v":null},"delta":[{"batch_seq_no":1,"columns":{"v":3},"operation":"RowUpdate","ttl":5}],"key":{"ck":5,"pk":1},"late":false,"op":"u","source":{"keyspace":"ks","stream_id":"0x0102","table":"t","time":"c0ffee00-0000-1000-8000-000000000000","ts_us":7},"ts_ms":1714564801234,"ttl":5}"#
        );
        change.rows = vec![delete, update];
        change.ttl = None;
        out.clear();
        change_json(&change, &mut out);
        let v: Json = serde_json::from_str(&out).unwrap();
        assert_eq!(v["op"], "d");
        assert_eq!(v["delete"], "range");
        assert_eq!(v["after"], Json::Null);
        assert_eq!(v["range"]["end_inclusive"], true);
        assert_eq!(v["rows"].as_array().unwrap().len(), 2);
        assert_eq!(v["rows"][1]["op"], "u");
        assert_eq!(v["ttl"], Json::Null);
        // The processing time is top-level (Debezium's place), apart from the write time.
        assert_eq!(v["ts_ms"], 1_714_564_801_234_i64);
        assert_eq!(v["source"]["ts_us"], 7);
    }
}
