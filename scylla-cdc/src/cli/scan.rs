//! Scanning a table by token range: what the replicator's `verify` and `--snapshot` and
//! `scylla-cdc-kafka --snapshot` share.
//!
//! The Murmur3 ring is split into [`token_ranges`]; [`range_scan_statement`] is the statement
//! that reads one range of a table (`token(pk)`, the key columns, and every other column with,
//! for the atomic ones, `WRITETIME` and `TTL` first); [`scanned_cells`] walks the non-key
//! cells of one of its rows. A [`RangeScan`] is one paged scan of a range with one row of
//! look-ahead, so that a scan holds one page in memory whatever the table's size;
//! [`RangeScan::take_token`] takes the rows of one token (every partition of it) at once.
//! [`ScanError`] says whether a failed scan may be retried.
//!
//! The rows of a range come in token order (the Murmur3 partitioner's order), and within a
//! token by partition key then clustering key: a scan that stops after a token can resume
//! with the range `(that token, end]` and sees each later row once.

use std::fmt;

use futures::TryStreamExt;
use scylla::client::pager::{NextPageError, NextRowError, TypedRowStream};
use scylla::client::session::Session;
use scylla::errors::PagerExecutionError;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};

use super::error_chain;

/// The Murmur3 ring (`(i64::MIN, i64::MAX]`; Murmur3 never gives `i64::MIN`) split into `n`
/// ranges `(start, end]` of nearly equal width, in token order (`n` of 0 is taken as 1).
pub fn token_ranges(n: u32) -> Vec<(i64, i64)> {
    let n = i128::from(n.max(1));
    let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    let bound = |k: i128| -> i64 { i64::try_from(min + (max - min) * k / n).unwrap_or(i64::MAX) };
    (0..n).map(|k| (bound(k), bound(k + 1))).collect()
}

/// One non-key column of a range scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedColumn {
    /// The column's name, as stored.
    pub name: String,
    /// Scanned with `WRITETIME` and `TTL` (an atomic column: not a non-frozen collection or
    /// UDT, whose elements have times of their own, nor a counter, which has none).
    pub timed: bool,
}

/// Quotes a CQL identifier (always, so any stored name is safe).
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The scan of one token range of `keyspace.table`: `SELECT token(pk...), keys...,
/// [WRITETIME(c), TTL(c),] c, ... FROM ks.t WHERE token(pk...) > ? AND token(pk...) <= ?`,
/// bound with the range `(start, end]` as two `bigint`s. `key_names` are the partition key columns (the
/// first `partition_key_len`) then the clustering columns, each in key order; `columns` the
/// other columns, in the order the rows give them.
pub fn range_scan_statement(
    keyspace: &str,
    table: &str,
    key_names: &[String],
    partition_key_len: usize,
    columns: &[ScannedColumn],
) -> String {
    let pk: Vec<String> = key_names[..partition_key_len.min(key_names.len())]
        .iter()
        .map(|n| quote(n))
        .collect();
    let token = format!("token({})", pk.join(", "));
    let mut selectors = vec![token.clone()];
    selectors.extend(key_names.iter().map(|n| quote(n)));
    for c in columns {
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

/// The token of a row of a [`range_scan_statement`] (its first column).
pub fn row_token(row: &Row) -> Option<i64> {
    match row.columns.first() {
        Some(Some(CqlValue::BigInt(t))) => Some(*t),
        _ => None,
    }
}

/// One non-key cell of a scanned row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScannedCell<'r> {
    /// Its column.
    pub column: &'r ScannedColumn,
    /// `WRITETIME` (µs since the epoch): `None` for a column not [`ScannedColumn::timed`], or
    /// a null cell.
    pub writetime: Option<i64>,
    /// `TTL` (seconds left): `None` without one.
    pub ttl: Option<i32>,
    /// The value (`None`: null).
    pub value: Option<&'r CqlValue>,
}

/// The non-key cells of a row of a [`range_scan_statement`] with `key_len` key columns and
/// these `columns`, in order.
pub fn scanned_cells<'r>(
    row: &'r Row,
    key_len: usize,
    columns: &'r [ScannedColumn],
) -> impl Iterator<Item = ScannedCell<'r>> + 'r {
    let mut at = 1 + key_len;
    let cell = move |i: usize| row.columns.get(i).and_then(Option::as_ref);
    columns.iter().map(move |column| {
        let (writetime, ttl) = if column.timed {
            let w = match cell(at) {
                Some(CqlValue::BigInt(w)) => Some(*w),
                _ => None,
            };
            let t = match cell(at + 1) {
                Some(CqlValue::Int(t)) => Some(*t),
                _ => None,
            };
            at += 2;
            (w, t)
        } else {
            (None, None)
        };
        let value = cell(at);
        at += 1;
        ScannedCell {
            column,
            writetime,
            ttl,
            value,
        }
    })
}

/// A failed scan: its message and whether retrying may help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// What failed.
    pub message: String,
    /// Whether retrying may help (a timeout, `Overloaded`, a broken connection).
    pub transient: bool,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScanError {}

impl ScanError {
    /// Whether a failed page fetch may succeed when retried.
    fn page_is_transient(e: &NextPageError) -> bool {
        match e {
            NextPageError::RequestFailure(r) => {
                crate::is_transient(&r.clone().into_execution_error())
            }
            _ => false,
        }
    }

    /// A scan that could not start (`side` names the cluster or table scanned).
    pub fn execution(side: &str, e: PagerExecutionError) -> ScanError {
        let transient = match &e {
            PagerExecutionError::NextPageError(p) => Self::page_is_transient(p),
            PagerExecutionError::PrepareError(p) => crate::is_transient_prepare(p),
            _ => false,
        };
        ScanError {
            transient,
            message: format!("{side}: {}", error_chain(&e)),
        }
    }

    /// A scan that failed while reading its rows.
    pub fn next_row(side: &str, e: NextRowError) -> ScanError {
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

/// One paged scan of a token range (a prepared [`range_scan_statement`]), with one row of
/// look-ahead: it holds one page of rows (the statement's page size) at a time.
pub struct RangeScan {
    name: &'static str,
    rows: TypedRowStream<Row>,
    peeked: Option<Row>,
}

impl RangeScan {
    /// Starts scanning `range` (`(start, end]`) with `statement`; `name` prefixes its errors.
    pub async fn open(
        name: &'static str,
        session: &Session,
        statement: &PreparedStatement,
        range: (i64, i64),
    ) -> Result<RangeScan, ScanError> {
        let pager = session
            .execute_iter(statement.clone(), range)
            .await
            .map_err(|e| ScanError::execution(name, e))?;
        let rows = pager.rows_stream::<Row>().map_err(|e| ScanError {
            message: format!("{name}: {}", error_chain(&e)),
            transient: false,
        })?;
        let mut scan = RangeScan {
            name,
            rows,
            peeked: None,
        };
        scan.advance().await?;
        Ok(scan)
    }

    /// Reads the next row into the look-ahead.
    async fn advance(&mut self) -> Result<(), ScanError> {
        self.peeked = self
            .rows
            .try_next()
            .await
            .map_err(|e| ScanError::next_row(self.name, e))?;
        Ok(())
    }

    /// The token of the next row (`None`: the scan is over).
    pub fn token(&self) -> Result<Option<i64>, ScanError> {
        match &self.peeked {
            None => Ok(None),
            Some(r) => row_token(r).map(Some).ok_or_else(|| ScanError {
                message: format!("{}: a row without a token", self.name),
                transient: false,
            }),
        }
    }

    /// The next row, if any.
    pub async fn next(&mut self) -> Result<Option<Row>, ScanError> {
        let row = self.peeked.take();
        if row.is_some() {
            self.advance().await?;
        }
        Ok(row)
    }

    /// The rows of `token`, if it is the next row's (every partition of that token).
    pub async fn take_token(&mut self, token: i64) -> Result<Vec<Row>, ScanError> {
        let mut rows = Vec::new();
        while self.token()? == Some(token) {
            rows.extend(self.peeked.take());
            self.advance().await?;
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_ring() {
        for n in [0, 1, 2, 3, 256, 1000] {
            let r = token_ranges(n);
            assert_eq!(r.len(), n.max(1) as usize);
            assert_eq!(r[0].0, i64::MIN);
            assert_eq!(r[r.len() - 1].1, i64::MAX);
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert!(w[0].0 < w[0].1);
            }
        }
        // Nearly equal widths.
        let r = token_ranges(4);
        assert_eq!(r[1], (-4_611_686_018_427_387_905, -1));
    }

    fn columns() -> Vec<ScannedColumn> {
        vec![
            ScannedColumn {
                name: "v".into(),
                timed: true,
            },
            ScannedColumn {
                name: "Tags".into(),
                timed: false,
            },
        ]
    }

    #[test]
    fn the_statement_reads_the_token_the_keys_and_the_timed_cells() {
        let keys = vec!["pk".to_owned(), "p\"2".to_owned(), "ck".to_owned()];
        assert_eq!(
            range_scan_statement("ks", "t", &keys, 2, &columns()),
            "SELECT token(\"pk\", \"p\"\"2\"), \"pk\", \"p\"\"2\", \"ck\", WRITETIME(\"v\"), \
             TTL(\"v\"), \"v\", \"Tags\" FROM \"ks\".\"t\" WHERE token(\"pk\", \"p\"\"2\") > ? \
             AND token(\"pk\", \"p\"\"2\") <= ?"
        );
    }

    #[test]
    fn cells_follow_the_layout() {
        let cols = columns();
        let row = Row {
            columns: vec![
                Some(CqlValue::BigInt(-7)),
                Some(CqlValue::Int(1)),
                Some(CqlValue::BigInt(1_000)),
                Some(CqlValue::Int(60)),
                Some(CqlValue::Int(5)),
                None,
            ],
        };
        assert_eq!(row_token(&row), Some(-7));
        let cells: Vec<ScannedCell<'_>> = scanned_cells(&row, 1, &cols).collect();
        assert_eq!(cells.len(), 2);
        assert_eq!(
            (
                cells[0].column.name.as_str(),
                cells[0].writetime,
                cells[0].ttl
            ),
            ("v", Some(1_000), Some(60))
        );
        assert_eq!(cells[0].value, Some(&CqlValue::Int(5)));
        assert_eq!((cells[1].writetime, cells[1].value), (None, None));
        assert_eq!(
            row_token(&Row {
                columns: vec![None]
            }),
            None
        );
    }

    /// A scan of the whole ring in a few ranges, with pages of two rows: every row once, in
    /// token order, each token's rows together; resuming after a token sees the rest.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_range_scan_reads_each_row_once_in_token_order() -> anyhow::Result<()> {
        let cluster = scylla_emulator::EmbeddedCluster::builder().start().await?;
        let session = cluster.session().await?;
        for statement in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1} AND tablets = {'enabled': false}",
            "CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
        ] {
            session.query_unpaged(statement, ()).await?;
        }
        for pk in 0..20 {
            for ck in 0..3 {
                session
                    .query_unpaged(
                        "INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP 42",
                        (pk, ck, pk * 10 + ck),
                    )
                    .await?;
            }
        }
        let keys = vec!["pk".to_owned(), "ck".to_owned()];
        let cols = vec![ScannedColumn {
            name: "v".into(),
            timed: true,
        }];
        let mut statement = session
            .prepare(range_scan_statement("ks", "t", &keys, 1, &cols))
            .await?;
        statement.set_page_size(2);
        let mut seen = Vec::new();
        let mut last_token = i64::MIN;
        for range in token_ranges(3) {
            let mut scan = RangeScan::open("ks.t", &session, &statement, range).await?;
            while let Some(token) = scan.token()? {
                assert!(token > last_token && token > range.0 && token <= range.1);
                last_token = token;
                let rows = scan.take_token(token).await?;
                assert_eq!(rows.len(), 3, "a partition's rows together");
                for row in &rows {
                    let cell = scanned_cells(row, 2, &cols).next().unwrap();
                    assert_eq!(cell.writetime, Some(42));
                    seen.push((row.columns[1].clone(), row.columns[2].clone()));
                }
            }
            assert!(scan.next().await?.is_none());
        }
        assert_eq!(seen.len(), 60);
        seen.sort_by_key(|k| format!("{k:?}"));
        seen.dedup();
        assert_eq!(seen.len(), 60, "each row once");

        // Resuming after the first token of the ring: every other row, once.
        let mut scan = RangeScan::open("ks.t", &session, &statement, (i64::MIN, i64::MAX)).await?;
        let first = scan.token()?.unwrap();
        let mut resumed = RangeScan::open("ks.t", &session, &statement, (first, i64::MAX)).await?;
        let mut rest = 0;
        while let Some(row) = resumed.next().await? {
            assert!(row_token(&row).unwrap() > first);
            rest += 1;
        }
        assert_eq!(rest, 57);
        assert_eq!(scan.take_token(first).await?.len(), 3);
        Ok(())
    }
}
