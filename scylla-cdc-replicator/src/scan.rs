//! Scanning a table by token range, shared by `verify` ([`crate::verify`]) and `--snapshot`
//! ([`crate::snapshot`]).
//!
//! The ring's [`token_ranges`], the range scan itself ([`Side`]: one paged scan of a range
//! with one row of look-ahead, so that a scan holds one page in memory whatever the table's
//! size) and [`ScanError`] (whether a failed scan may be retried) are the library's
//! ([`scylla_cdc::cli::scan`], shared with `scylla-cdc-kafka --snapshot`); a [`ScanPlan`] is
//! the statement that reads one range of a table with this crate's schema (the token, the key
//! columns, and every other column with, for the atomic ones, `WRITETIME` and `TTL`) and the
//! layout of its rows.

use scylla::value::{CqlValue, Row};
use scylla_cdc::cli::scan::range_scan_statement;
pub use scylla_cdc::cli::scan::token_ranges;
pub(crate) use scylla_cdc::cli::scan::{RangeScan as Side, ScanError, ScannedColumn};

use crate::schema::{CqlType, TableSchema, ValueKind};

/// The scan statement of a table and the layout of its rows: `token`, the key columns, then
/// each non-key column (`WRITETIME` and `TTL` first if it is atomic, then its value).
#[derive(Debug, Clone)]
pub struct ScanPlan {
    pub(crate) key_names: Vec<String>,
    pub(crate) columns: Vec<ScannedColumn>,
}

impl ScanPlan {
    /// The plan of a table with this schema.
    pub fn new(schema: &TableSchema) -> ScanPlan {
        let keys = schema.partition_key_len + schema.clustering_len;
        ScanPlan {
            key_names: schema
                .key_columns()
                .iter()
                .map(|c| c.name.clone())
                .collect(),
            columns: schema
                .columns
                .iter()
                .skip(keys)
                .map(|c| ScannedColumn {
                    name: c.name.clone(),
                    timed: c.value_kind == ValueKind::Atomic
                        && c.typ != CqlType::Native("counter".into()),
                })
                .collect(),
        }
    }

    /// `SELECT token(pk), keys..., WRITETIME(c), TTL(c), c, ... FROM ks.t WHERE token(pk) > ?
    /// AND token(pk) <= ?` for table `ks.t`, whose partition key has `pk_len` columns.
    pub fn statement(&self, keyspace: &str, table: &str, pk_len: usize) -> String {
        range_scan_statement(keyspace, table, &self.key_names, pk_len, &self.columns)
    }

    /// The primary key of a scanned row, `name=value, ...` (also its identity in a token).
    pub(crate) fn key_text(&self, row: &Row) -> String {
        self.key_names
            .iter()
            .zip(row.columns.iter().skip(1))
            .map(|(n, v)| format!("{n}={}", value_text(v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A cell as text (`null` when absent).
pub(crate) fn value_text(v: &Option<CqlValue>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "null".into(),
    }
}
