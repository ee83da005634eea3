//! Scanning a table by token range, shared by `verify` ([`crate::verify`]) and `--snapshot`
//! ([`crate::snapshot`]).
//!
//! The Murmur3 ring is split into [`token_ranges`]; a [`ScanPlan`] is the statement that
//! reads one range of a table (the token, the key columns, and every other column with, for
//! the atomic ones, `WRITETIME` and `TTL`) and the layout of its rows; a [`Side`] is one
//! paged scan of a range with one row of look-ahead, so that a scan holds one page in memory
//! whatever the table's size. [`ScanError`] says whether a failed scan may be retried.

use std::fmt;

use futures::TryStreamExt;
use scylla::client::pager::{NextPageError, NextRowError, TypedRowStream};
use scylla::client::session::Session;
use scylla::errors::PagerExecutionError;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use scylla_cdc::cli::error_chain;

use crate::schema::{CqlType, TableSchema, ValueKind, quote};

/// The Murmur3 ring (`(i64::MIN, i64::MAX]`; Murmur3 never gives `i64::MIN`) split into `n`
/// ranges `(start, end]` of nearly equal width, in token order.
pub fn token_ranges(n: u32) -> Vec<(i64, i64)> {
    let n = i128::from(n.max(1));
    let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    let bound = |k: i128| -> i64 { i64::try_from(min + (max - min) * k / n).unwrap_or(i64::MAX) };
    (0..n).map(|k| (bound(k), bound(k + 1))).collect()
}

/// One non-key column as scanned: its value and, for atomic columns, `WRITETIME` and `TTL`.
#[derive(Debug, Clone)]
pub(crate) struct ScannedColumn {
    /// The column's name.
    pub(crate) name: String,
    /// Scanned with `WRITETIME` and `TTL`.
    pub(crate) timed: bool,
}

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
        let pk: Vec<String> = self.key_names[..pk_len].iter().map(|n| quote(n)).collect();
        let token = format!("token({})", pk.join(", "));
        let mut selectors = vec![token.clone()];
        selectors.extend(self.key_names.iter().map(|n| quote(n)));
        for c in &self.columns {
            let q = quote(&c.name);
            if c.timed {
                selectors.push(format!("WRITETIME({q})"));
                selectors.push(format!("TTL({q})"));
            }
            selectors.push(q);
        }
        format!(
            "SELECT {} FROM {}.{} WHERE {token} > ? AND {token} <= ?",
            selectors.join(", "),
            quote(keyspace),
            quote(table)
        )
    }

    /// The token of a scanned row.
    pub(crate) fn token(row: &Row) -> Option<i64> {
        match row.columns.first() {
            Some(Some(CqlValue::BigInt(t))) => Some(*t),
            _ => None,
        }
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

/// A failed scan: its message and whether retrying may help.
#[derive(Debug)]
pub(crate) struct ScanError {
    /// What failed.
    pub(crate) message: String,
    /// Whether retrying may help.
    pub(crate) transient: bool,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl ScanError {
    /// Whether a failed page fetch may succeed when retried.
    fn page_is_transient(e: &NextPageError) -> bool {
        match e {
            NextPageError::RequestFailure(r) => {
                scylla_cdc::is_transient(&r.clone().into_execution_error())
            }
            _ => false,
        }
    }

    pub(crate) fn execution(side: &str, e: PagerExecutionError) -> ScanError {
        let transient = match &e {
            PagerExecutionError::NextPageError(p) => Self::page_is_transient(p),
            PagerExecutionError::PrepareError(p) => scylla_cdc::is_transient_prepare(p),
            _ => false,
        };
        ScanError {
            transient,
            message: format!("{side}: {}", error_chain(&e)),
        }
    }

    pub(crate) fn next_row(side: &str, e: NextRowError) -> ScanError {
        let transient = match &e {
            NextRowError::NextPageError(p) => Self::page_is_transient(p),
            _ => false,
        };
        ScanError {
            transient,
            message: format!("{side}: {}", error_chain(&e)),
        }
    }
}

/// One side of a range scan: a row stream with one row of look-ahead.
pub(crate) struct Side {
    name: &'static str,
    rows: TypedRowStream<Row>,
    peeked: Option<Row>,
}

impl Side {
    pub(crate) async fn open(
        name: &'static str,
        session: &Session,
        statement: &PreparedStatement,
        range: (i64, i64),
    ) -> Result<Side, ScanError> {
        let pager = session
            .execute_iter(statement.clone(), range)
            .await
            .map_err(|e| ScanError::execution(name, e))?;
        let rows = pager.rows_stream::<Row>().map_err(|e| ScanError {
            message: format!("{name}: {}", error_chain(&e)),
            transient: false,
        })?;
        let mut side = Side {
            name,
            rows,
            peeked: None,
        };
        side.advance().await?;
        Ok(side)
    }

    /// Reads the next row into the look-ahead.
    pub(crate) async fn advance(&mut self) -> Result<(), ScanError> {
        self.peeked = self
            .rows
            .try_next()
            .await
            .map_err(|e| ScanError::next_row(self.name, e))?;
        Ok(())
    }

    /// The token of the next row.
    pub(crate) fn token(&self) -> Result<Option<i64>, ScanError> {
        match &self.peeked {
            None => Ok(None),
            Some(r) => ScanPlan::token(r).map(Some).ok_or_else(|| ScanError {
                message: format!("{}: a row without a token", self.name),
                transient: false,
            }),
        }
    }

    /// The next row, if any.
    pub(crate) async fn next(&mut self) -> Result<Option<Row>, ScanError> {
        let row = self.peeked.take();
        if row.is_some() {
            self.advance().await?;
        }
        Ok(row)
    }

    /// The rows of the next token.
    pub(crate) async fn take_token(&mut self, token: i64) -> Result<Vec<Row>, ScanError> {
        let mut rows = Vec::new();
        while self.token()? == Some(token) {
            rows.extend(self.peeked.take());
            self.advance().await?;
        }
        Ok(rows)
    }
}
