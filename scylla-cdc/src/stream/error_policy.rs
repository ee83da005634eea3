//! What happens to a row a consumer cannot take
//! ([`crate::CDCLogReaderBuilder::on_consumer_error`]).
//!
//! The policy itself is documented on [`ConsumerErrorPolicy`].

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use uuid::Uuid;

use crate::base::cdc_types::{StreamID, quote_identifier};
use crate::base::error::{CDCError, ColumnError};
use crate::change::Change;
use crate::consumer::CDCRow;
use crate::consumer::operation::OperationType;

/// The longest pause between two attempts of one row.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(60);

/// How often, and how far apart, a failed row is handed to the consumer again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts after the first failure (0: none).
    pub attempts: u32,
    /// The pause before the first retry; each later pause doubles, up to 60 s.
    pub backoff: Duration,
}

impl Retry {
    /// The pause before retry number `n` (counted from 1).
    pub(crate) fn pause(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1));
        self.backoff.saturating_mul(factor).min(MAX_RETRY_PAUSE)
    }
}

/// What happens to a row once every attempt to consume it failed.
#[derive(Clone)]
#[non_exhaustive]
pub enum AfterRetries {
    /// The reader ends with [`CDCError::Consumer`]; the row is delivered again after a
    /// restart.
    Stop,
    /// The row is logged (WARN) and counted, and reading goes on.
    Skip,
    /// The row is written to the sink, and reading goes on. A change of a
    /// [`crate::ChangeConsumer`] is written as one [`DeadLetter`] per row.
    DeadLetter(Arc<dyn DeadLetterSink>),
}

impl fmt::Debug for AfterRetries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stop => f.write_str("Stop"),
            Self::Skip => f.write_str("Skip"),
            Self::DeadLetter(_) => f.write_str("DeadLetter"),
        }
    }
}

/// What happens to a row a consumer cannot take: retries, then [`AfterRetries`].
///
/// When [`crate::Consumer::consume_cdc`] returns an error — or panics: a panic is caught
/// and treated as an error of that row — the reader first retries the same row
/// ([`ConsumerErrorPolicy::with_retry`]: a fresh [`crate::CDCRow`] of it, after a pause that
/// doubles each time). If every attempt fails, the policy's [`AfterRetries`] decides:
///
/// * [`AfterRetries::Stop`]: the reader ends with [`crate::CDCError::Consumer`], naming the
///   table, stream, `cdc$time` and `cdc$batch_seq_no` of the row. The stream group's
///   checkpoint never passes that row, so a restarted reader delivers it again.
/// * [`AfterRetries::Skip`]: a WARN line with the same detail, counted in
///   [`crate::Progress::rows_skipped`] (`scylla_cdc_consumer_errors_total{outcome="skip"}`),
///   and reading goes on.
/// * [`AfterRetries::DeadLetter`]: the row is written to a [`DeadLetterSink`] — usually a
///   [`DeadLetterTable`] in Scylla next to the checkpoint table — and reading goes on.
///   Writing the dead letter is retried while it fails with a transient error (within the
///   reader's `give_up_after`); if it cannot be written the reader stops as with `Stop`, so
///   a row is never dropped without a trace.
///
/// The default is three retries, 500 ms apart at first, then `Stop`.
///
/// With a [`crate::ChangeConsumer`] the policy applies to whole changes: a failed change is
/// handed over again whole, and given up on whole — never one row of it, nor a row of the
/// next change, even when a change without `cdc$end_of_batch` is completed by the next
/// change's first row or by the end of its window. [`crate::CDCError::Consumer`] then names
/// the change's stream, `cdc$time` and the `cdc$batch_seq_no` of its last row; a skipped
/// change counts once; a change given up is written as one [`DeadLetter`] per row, in
/// `cdc$batch_seq_no` order, and counts once in [`crate::Progress::rows_dead_lettered`]
/// (see [`crate::ChangeConsumer`]).
///
/// Errors of [`crate::Consumer::flush`] (and [`crate::ChangeConsumer::flush`]) belong to no
/// single row: they always stop the reader (a panic in `flush` too).
#[derive(Debug, Clone)]
pub struct ConsumerErrorPolicy {
    retry: Retry,
    then: AfterRetries,
}

impl Default for ConsumerErrorPolicy {
    /// Three retries, 500 ms apart at first, then [`AfterRetries::Stop`].
    fn default() -> Self {
        Self::stop().with_retry(3, Duration::from_millis(500))
    }
}

impl ConsumerErrorPolicy {
    /// Stop at the first failure (no retries).
    pub fn stop() -> Self {
        Self::then(AfterRetries::Stop)
    }

    /// Skip a row at its first failure (no retries).
    pub fn skip() -> Self {
        Self::then(AfterRetries::Skip)
    }

    /// Write a row to `sink` at its first failure (no retries).
    pub fn dead_letter(sink: Arc<dyn DeadLetterSink>) -> Self {
        Self::then(AfterRetries::DeadLetter(sink))
    }

    /// No retries, then `then`.
    pub fn then(then: AfterRetries) -> Self {
        Self {
            retry: Retry {
                attempts: 0,
                backoff: Duration::ZERO,
            },
            then,
        }
    }

    /// Retries a failed row `attempts` times, `backoff` apart at first (doubling, up to
    /// 60 s), before the policy's outcome applies.
    pub fn with_retry(mut self, attempts: u32, backoff: Duration) -> Self {
        self.retry = Retry { attempts, backoff };
        self
    }

    /// The retries.
    pub fn retry(&self) -> Retry {
        self.retry
    }

    /// What happens after the retries.
    pub fn after_retries(&self) -> &AfterRetries {
        &self.then
    }
}

/// A row the consumer could not take, as written to a [`DeadLetterSink`].
///
/// A change a [`crate::ChangeConsumer`] could not take is written as one letter per row of
/// the change, in `cdc$batch_seq_no` order: together they hold the change's whole content.
/// The letters of one change share their stream and `cdc$time` (and error, attempts and
/// `failed_at`); each has its row's `batch_seq_no`, operation and columns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeadLetter {
    /// The base table's keyspace.
    pub keyspace: String,
    /// The base table.
    pub table: String,
    /// The row's stream.
    pub stream_id: StreamID,
    /// The row's `cdc$time`.
    pub time: Uuid,
    /// The row's `cdc$batch_seq_no`.
    pub batch_seq_no: i32,
    /// The row's `cdc$operation`.
    pub operation: OperationType,
    /// The last error of the consumer (with its causes).
    pub error: String,
    /// How many times the consumer was given the row (or its change).
    pub attempts: u32,
    /// When the row was given up on.
    pub failed_at: DateTime<Utc>,
    /// The row's non-null base-table columns, each as a CQL literal
    /// ([`crate::cql_text::cql_literal`]: what `cqlsh` accepts back, for a human or a replay
    /// tool); a value that could not be decoded is rendered as the error.
    pub columns: Vec<(String, String)>,
}

impl DeadLetter {
    /// The dead letter of `row` of `keyspace.table`.
    pub(crate) fn of_row(
        keyspace: &str,
        table: &str,
        row: &CDCRow<'_>,
        error: &anyhow::Error,
        attempts: u32,
    ) -> Self {
        Self {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
            stream_id: row.stream_id,
            time: row.time,
            batch_seq_no: row.batch_seq_no,
            operation: row.operation,
            error: format!("{error:#}"),
            attempts,
            failed_at: Utc::now(),
            columns: Self::columns(row.get_non_cdc_column_names(), |name| row.get_value(name)),
        }
    }

    /// The dead letters of `change` of `keyspace.table`: one per row of the change, in
    /// order.
    pub(crate) fn of_change(
        keyspace: &str,
        table: &str,
        change: &Change,
        error: &anyhow::Error,
        attempts: u32,
    ) -> Vec<Self> {
        let (stream_id, time) = (change.stream_id(), change.time());
        let (error, failed_at) = (format!("{error:#}"), Utc::now());
        change
            .rows()
            .map(|row| Self {
                keyspace: keyspace.to_owned(),
                table: table.to_owned(),
                stream_id,
                time,
                batch_seq_no: row.batch_seq_no(),
                operation: row.operation(),
                error: error.clone(),
                attempts,
                failed_at,
                columns: Self::columns(row.get_non_cdc_column_names(), |name| row.get_value(name)),
            })
            .collect()
    }

    /// The non-null columns of a row (`names`, read with `value`), as CQL literals.
    fn columns<'n>(
        names: impl Iterator<Item = &'n str>,
        value: impl Fn(&str) -> Result<Option<scylla::value::CqlValue>, ColumnError>,
    ) -> Vec<(String, String)> {
        names
            .filter_map(|name| {
                let text = match value(name) {
                    Ok(None) => return None,
                    Ok(Some(v)) => crate::cql_text::cql_literal(&v),
                    Err(e) => format!("<{e}>"),
                };
                Some((name.to_owned(), text))
            })
            .collect()
    }
}

/// Where [`AfterRetries::DeadLetter`] puts rows. [`DeadLetterTable`] is the one in Scylla;
/// implement it to send dead letters elsewhere.
#[async_trait]
pub trait DeadLetterSink: Send + Sync {
    /// Stores one dead letter. An error that [`DeadLetterSink::is_transient`] accepts is
    /// retried; any other stops the reader.
    async fn write(&self, letter: &DeadLetter) -> anyhow::Result<()>;

    /// Whether an error of [`DeadLetterSink::write`] is worth retrying. The default accepts
    /// the driver's transient errors (timeouts, overload, unavailable, broken connections).
    fn is_transient(&self, error: &anyhow::Error) -> bool {
        error
            .downcast_ref::<scylla::errors::ExecutionError>()
            .is_some_and(crate::base::error::is_transient)
    }
}

/// Dead letters in a CQL table, created if missing by [`DeadLetterTable::new`]:
///
/// ```text
/// CREATE TABLE <ks>.<table> (
///     keyspace_name text, table_name text,
///     time timeuuid, stream_id blob, batch_seq_no int,
///     operation text, error text, attempts int, failed_at timestamp,
///     columns map<text, text>,
///     PRIMARY KEY ((keyspace_name, table_name), time, stream_id, batch_seq_no))
/// ```
///
/// One partition per base table, rows in `cdc$time` order: `SELECT * FROM <table> WHERE
/// keyspace_name = ? AND table_name = ?` lists what was given up on. Rows have no TTL.
/// [`dead_letter_table_name`] gives the name the programs use next to a checkpoint table.
pub struct DeadLetterTable {
    session: Arc<Session>,
    insert: PreparedStatement,
}

impl DeadLetterTable {
    /// The dead-letter table `keyspace.table` (the keyspace must exist; the table is created
    /// if missing). A table of that name with another shape is an error.
    pub async fn new(session: Arc<Session>, keyspace: &str, table: &str) -> Result<Self, CDCError> {
        session
            .query_unpaged(Self::create_table_cql(keyspace, table), ())
            .await
            .map_err(|source| CDCError::Query {
                what: format!(
                    "creating the dead-letter table {}.{}",
                    quote_identifier(keyspace),
                    quote_identifier(table)
                ),
                source: Box::new(source),
            })?;
        Self::existing(session, keyspace, table).await
    }

    /// The existing dead-letter table `keyspace.table` (not created).
    pub async fn existing(
        session: Arc<Session>,
        keyspace: &str,
        table: &str,
    ) -> Result<Self, CDCError> {
        let text = format!(
            "INSERT INTO {}.{} (keyspace_name, table_name, time, stream_id, batch_seq_no, \
             operation, error, attempts, failed_at, columns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            quote_identifier(keyspace),
            quote_identifier(table)
        );
        let insert = crate::base::error::prepare_idempotent(&session, &text).await?;
        Ok(Self { session, insert })
    }

    /// The `CREATE TABLE IF NOT EXISTS` statement of a dead-letter table.
    pub fn create_table_cql(keyspace: &str, table: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {}.{} (keyspace_name text, table_name text, \
             time timeuuid, stream_id blob, batch_seq_no int, operation text, error text, \
             attempts int, failed_at timestamp, columns map<text, text>, \
             PRIMARY KEY ((keyspace_name, table_name), time, stream_id, batch_seq_no))",
            quote_identifier(keyspace),
            quote_identifier(table)
        )
    }
}

#[async_trait]
impl DeadLetterSink for DeadLetterTable {
    async fn write(&self, letter: &DeadLetter) -> anyhow::Result<()> {
        let columns: std::collections::HashMap<&str, &str> = letter
            .columns
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.session
            .execute_unpaged(
                &self.insert,
                (
                    letter.keyspace.as_str(),
                    letter.table.as_str(),
                    scylla::value::CqlTimeuuid::from(letter.time),
                    &letter.stream_id.as_bytes()[..],
                    letter.batch_seq_no,
                    letter.operation.to_string(),
                    letter.error.as_str(),
                    i32::try_from(letter.attempts).unwrap_or(i32::MAX),
                    letter.failed_at,
                    columns,
                ),
            )
            .await?;
        Ok(())
    }
}

/// The dead-letter table the programs keep next to the checkpoint table `checkpoint_table`:
/// `<checkpoint_table>_dead_letters`.
pub fn dead_letter_table_name(checkpoint_table: &str) -> String {
    format!("{checkpoint_table}_dead_letters")
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_a_minute() {
        let r = Retry {
            attempts: 40,
            backoff: Duration::from_millis(500),
        };
        assert_eq!(r.pause(1), Duration::from_millis(500));
        assert_eq!(r.pause(2), Duration::from_secs(1));
        assert_eq!(r.pause(3), Duration::from_secs(2));
        assert_eq!(r.pause(30), MAX_RETRY_PAUSE);
        assert_eq!(r.pause(40), MAX_RETRY_PAUSE);
    }

    #[test]
    fn default_policy_retries_then_stops() {
        let p = ConsumerErrorPolicy::default();
        assert_eq!(p.retry().attempts, 3);
        assert!(matches!(p.after_retries(), AfterRetries::Stop));
        let p = ConsumerErrorPolicy::skip();
        assert_eq!(p.retry().attempts, 0);
        assert!(matches!(p.after_retries(), AfterRetries::Skip));
    }

    #[test]
    fn panic_payloads_become_text() {
        let p: Box<dyn Any + Send> = Box::new("boom");
        assert_eq!(panic_message(p.as_ref()), "boom");
        let p: Box<dyn Any + Send> = Box::new(String::from("bang 7"));
        assert_eq!(panic_message(p.as_ref()), "bang 7");
        let p: Box<dyn Any + Send> = Box::new(7u8);
        assert!(panic_message(p.as_ref()).contains("non-text"));
    }
}
