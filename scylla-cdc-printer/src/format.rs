//! The two output formats of the printer, as pure functions of a [`RowView`].
//!
//! A [`RowView`] is one log row taken out of a [`CDCRow`]: its metadata and, per base column
//! (key columns first, in key order), the value, the deletion flag and the removed elements.
//! [`pretty`] renders a readable block, [`json`] one JSON object on one line.
//!
//! JSON keys (stable; absent keys mean null / false / empty):
//! `table`, `time` (RFC 3339, µs), `stream_id` (hex), `batch_seq_no`, `operation`
//! (`RowInsert`, `RowUpdate`, … as [`OperationType`] prints), `end_of_batch`, `columns`
//! (non-null values by column name), and when present `ttl` (seconds), `expiration` (true for
//! Scylla-initiated expirations), `deleted` (names of deleted columns) and `deleted_elements`
//! (removed keys / list element ids / UDT field indexes by column name).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use scylla::value::CqlValue;
use scylla_cdc::{CDCRow, OperationType};
use serde_json::{Map, Value as Json};

use crate::render::{cql_literal, json_value};
use scylla_cdc::cli::rfc3339_micros;

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
}

impl RowView {
    /// Takes a row out of the log. `key_columns` are the base table's partition-key then
    /// clustering-key columns (listed first); the other columns follow in the log's order.
    pub fn from_cdc_row(
        table: &str,
        row: &CDCRow<'_>,
        key_columns: &[String],
    ) -> Result<RowView, scylla_cdc::ColumnError> {
        let mut names: Vec<&str> = key_columns
            .iter()
            .map(String::as_str)
            .filter(|n| row.column_exists(n))
            .collect();
        for n in row.get_non_cdc_column_names() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut columns = Vec::with_capacity(names.len());
        for name in names {
            let deleted_elements = if row.collection_exists(name) {
                row.get_deleted_elements(name)?
            } else {
                None
            };
            columns.push(ColumnView {
                name: name.to_owned(),
                value: row.get_value(name)?,
                deleted: row.is_value_deleted(name),
                deleted_elements,
            });
        }
        Ok(RowView {
            table: table.to_owned(),
            time: row.timestamp(),
            stream_id: row.stream_id.to_string(),
            batch_seq_no: row.batch_seq_no,
            end_of_batch: row.end_of_batch,
            operation: row.operation,
            is_expiration: row.is_expiration,
            ttl: row.ttl,
            columns,
        })
    }
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
    let mut obj = Map::new();
    obj.insert("table".into(), Json::String(row.table.clone()));
    obj.insert("time".into(), Json::String(rfc3339_micros(row.time)));
    obj.insert("stream_id".into(), Json::String(row.stream_id.clone()));
    obj.insert("batch_seq_no".into(), Json::from(row.batch_seq_no));
    obj.insert("operation".into(), Json::String(row.operation.to_string()));
    obj.insert("end_of_batch".into(), Json::Bool(row.end_of_batch));
    if let Some(ttl) = row.ttl {
        obj.insert("ttl".into(), Json::from(ttl));
    }
    if row.is_expiration {
        obj.insert("expiration".into(), Json::Bool(true));
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
}
