//! The library's typed errors.
//!
//! [`CDCError`] is what [`crate::CDCLogReaderBuilder::build`] and the reader's handle return;
//! [`ColumnError`] is what the column accessors of [`crate::CDCRow`] return. User callbacks
//! (the [`crate::Consumer`] and a custom [`crate::CDCCheckpointSaver`]) return
//! `anyhow::Result`, and their errors are wrapped here with the context they happened in.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use scylla::errors::{DbError, ExecutionError, PrepareError, RequestAttemptError};

use tracing::warn;

use crate::base::cdc_types::StreamID;

/// An error of the CDC log reader.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CDCError {
    /// A required builder option was not set.
    #[error("the CDC log reader needs `{0}`: set it on the builder")]
    MissingOption(&'static str),

    /// A builder option has a value that cannot work.
    #[error("invalid CDC log reader configuration: {0}")]
    InvalidConfig(String),

    /// The keyspace does not exist.
    #[error("keyspace `{0}` does not exist")]
    KeyspaceNotFound(String),

    /// The table does not exist.
    #[error("table `{keyspace}.{table}` does not exist")]
    TableNotFound {
        /// The keyspace of the table.
        keyspace: String,
        /// The base table.
        table: String,
    },

    /// The table exists but has no CDC log table, so CDC was never enabled on it.
    #[error(
        "CDC is not enabled on table `{keyspace}.{table}` (there is no `{table}_scylla_cdc_log` table); \
         enable it with `ALTER TABLE ... WITH cdc = {{'enabled': true}}`"
    )]
    CdcNotEnabled {
        /// The keyspace of the table.
        keyspace: String,
        /// The base table.
        table: String,
    },

    /// CDC was disabled on the table while it was being read (`ALTER TABLE ... WITH cdc =
    /// {'enabled': false}`). Every change logged before `until` was delivered first; Scylla
    /// logs none after the change.
    #[error(
        "CDC was disabled on table `{keyspace}.{table}` while it was read: every change logged \
         before {until} was delivered; enable it again (`ALTER TABLE ... WITH cdc = \
         {{'enabled': true}}`) and start a reader to follow it"
    )]
    CdcDisabled {
        /// The keyspace of the table.
        keyspace: String,
        /// The base table.
        table: String,
        /// Everything logged before this time was delivered.
        until: chrono::DateTime<chrono::Utc>,
    },

    /// No CDC generation (vnodes) or stream set (tablets) has been published for the table.
    #[error("no CDC generation is published for `{keyspace}.{table}`")]
    NoGeneration {
        /// The keyspace of the table.
        keyspace: String,
        /// The base table.
        table: String,
    },

    /// A statement could not be prepared.
    #[error("could not prepare `{statement}`: {source}")]
    Prepare {
        /// The statement text.
        statement: String,
        /// The driver's error.
        #[source]
        source: Box<PrepareError>,
    },

    /// A query for metadata (schema, generations, streams) failed.
    #[error("{what} failed: {source}")]
    Query {
        /// What the query was for.
        what: String,
        /// The driver's error.
        #[source]
        source: Box<ExecutionError>,
    },

    /// A metadata table returned data the library cannot use.
    #[error("unexpected data in {what}: {detail}")]
    BadMetadata {
        /// Which table or query.
        what: String,
        /// What was wrong with it.
        detail: String,
    },

    /// Reading a window of the CDC log failed with a non-transient error.
    #[error(
        "reading the CDC log of streams {streams} in window [{window_start}, {window_end}) failed: {source}"
    )]
    LogRead {
        /// The stream group being read.
        streams: StreamList,
        /// Start of the window (inclusive).
        window_start: DateTime<Utc>,
        /// End of the window (exclusive).
        window_end: DateTime<Utc>,
        /// The driver's error.
        #[source]
        source: Box<ExecutionError>,
    },

    /// A page of the CDC log could not be decoded (wrong column types, malformed rows).
    #[error(
        "the CDC log of streams {streams} in window [{window_start}, {window_end}) has unreadable data: {detail}"
    )]
    BadLogData {
        /// The stream group being read.
        streams: StreamList,
        /// Start of the window (inclusive).
        window_start: DateTime<Utc>,
        /// End of the window (exclusive).
        window_end: DateTime<Utc>,
        /// What was wrong.
        detail: String,
    },

    /// The user's consumer failed on a row (returned an error or panicked) and every retry
    /// of the [`crate::ConsumerErrorPolicy`] failed too; the reader stopped. The stream
    /// group's checkpoint does not pass the row, so a restarted reader delivers it again.
    /// For a [`crate::ChangeConsumer`], the row named is the last row of the change it failed
    /// on (its stream and `cdc$time` are the change's).
    #[error(
        "the consumer failed on a row of {keyspace}.{table} (stream {stream}, cdc$time {time}, batch_seq_no {batch_seq_no}) after {attempts} attempt(s), in window [{window_start}, {window_end}): {source:#}"
    )]
    Consumer {
        /// The base table's keyspace.
        keyspace: String,
        /// The base table of the row.
        table: String,
        /// The stream of the row the consumer failed on.
        stream: StreamID,
        /// The row's `cdc$time`.
        time: uuid::Uuid,
        /// The row's `cdc$batch_seq_no`.
        batch_seq_no: i32,
        /// How many times the row was handed to the consumer.
        attempts: u32,
        /// Start of the window (inclusive).
        window_start: DateTime<Utc>,
        /// End of the window (exclusive).
        window_end: DateTime<Utc>,
        /// The consumer's last error.
        #[source]
        source: anyhow::Error,
    },

    /// A row given up on could not be written to the dead-letter sink
    /// ([`crate::AfterRetries::DeadLetter`]); the reader stopped without passing the row.
    #[error(
        "could not write a dead letter for a row of {keyspace}.{table} (stream {stream}, cdc$time {time}, batch_seq_no {batch_seq_no}): {source:#}; the consumer's error was: {consumer_error}"
    )]
    DeadLetter {
        /// The base table's keyspace.
        keyspace: String,
        /// The base table of the row.
        table: String,
        /// The stream of the row.
        stream: StreamID,
        /// The row's `cdc$time`.
        time: uuid::Uuid,
        /// The row's `cdc$batch_seq_no`.
        batch_seq_no: i32,
        /// The consumer's last error, as text.
        consumer_error: String,
        /// The sink's error.
        #[source]
        source: anyhow::Error,
    },

    /// The user's consumer failed to finish its work before a checkpoint or the end of its
    /// stream group ([`crate::Consumer::flush`]); the reader stopped.
    #[error("the consumer of streams {streams} failed to flush its work up to {until}: {source}")]
    ConsumerFlush {
        /// The streams of the consumer's group.
        streams: StreamList,
        /// The time every row before which had been handed to the consumer.
        until: DateTime<Utc>,
        /// The consumer's error.
        #[source]
        source: anyhow::Error,
    },

    /// The checkpoint saver failed while loading progress (saving failures are only logged).
    #[error("checkpoint saver failed to {action}: {source}")]
    Checkpoint {
        /// What the saver was asked to do.
        action: &'static str,
        /// The saver's error.
        #[source]
        source: anyhow::Error,
    },

    /// A background task of the reader panicked or was cancelled unexpectedly.
    #[error("a task of the CDC log reader ended abnormally: {0}")]
    Task(String),

    /// The lease table of a consumer group ([`crate::CDCLogReaderBuilder::group`]) gave an
    /// answer the reader cannot use.
    #[error("consumer group: {0}")]
    Lease(String),

    /// A member of a consumer group stopped reading some of its units because their leases
    /// ran out before it could renew them: it delivers nothing of them after that point.
    /// The member reads them again once it renews their leases, or another member takes them
    /// over; a reader does not end with this error.
    #[error("the leases of a consumer group member's units ran out before they were renewed")]
    LeaseExpired,

    /// The lease table of a consumer group exists with another shape than the reader's.
    #[error(
        "the lease table {table} exists with another shape ({}); drop it or name another \
         table with `lease_table`; the reader expects: {expected}",
        problems.join("; ")
    )]
    LeaseTableShape {
        /// The lease table.
        table: String,
        /// What differs.
        problems: Vec<String>,
        /// The `CREATE TABLE` statement of the table the reader expects.
        expected: String,
    },
}

impl CDCError {
    /// Whether the error is a transient failure worth retrying: a metadata query or a
    /// prepare that failed with a transient driver error (see [`is_transient`]), or a
    /// checkpoint load whose cause is one.
    ///
    /// A definite answer (missing keyspace or table, CDC off, a refused permission, a syntax
    /// error, bad data) is not transient.
    pub fn is_transient(&self) -> bool {
        match self {
            CDCError::Query { source, .. } => is_transient(source),
            CDCError::Prepare { source, .. } => is_transient_prepare(source),
            CDCError::Checkpoint { source, .. } => anyhow_is_transient(source),
            _ => false,
        }
    }
}

/// Whether an `anyhow` error (a checkpoint saver's) has a transient driver error among its
/// causes.
fn anyhow_is_transient(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        if let Some(e) = cause.downcast_ref::<ExecutionError>() {
            is_transient(e)
        } else if let Some(e) = cause.downcast_ref::<PrepareError>() {
            is_transient_prepare(e)
        } else if let Some(e) = cause.downcast_ref::<CDCError>() {
            e.is_transient()
        } else {
            false
        }
    })
}

/// Where retrying starts: the first pause after a transient failure.
pub(crate) const RETRY_BACKOFF_START: Duration = Duration::from_millis(50);
/// The longest pause between two attempts.
pub(crate) const RETRY_BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Capped exponential backoff between attempts of a request that failed transiently: the
/// one policy of the reader, for log reads, generation reads and every start-up step, public
/// so that programs retry their own start-up steps (connecting, reading another cluster's
/// schema) the same way.
///
/// The first pause is 50 ms, doubled after each failure up to 5 s. Each pause logs a WARN
/// line with its cause.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    /// How long to keep retrying after the first failure (`None`: forever).
    give_up_after: Option<Duration>,
    /// When to stop retrying, set at the first failure.
    give_up_at: Option<tokio::time::Instant>,
}

impl Backoff {
    /// A backoff that retries for `give_up_after` from the first failure (forever if `None`,
    /// or if the deadline would be past the end of the clock, e.g. `Duration::MAX`; zero gives
    /// up at the first failure).
    pub fn new(give_up_after: Option<Duration>) -> Self {
        Self {
            next: RETRY_BACKOFF_START,
            give_up_after,
            give_up_at: None,
        }
    }

    /// After a transient failure of `what`: logs a WARN line with the cause and waits the
    /// next step. Returns `false`, without waiting, once `give_up_after` has passed since the
    /// first failure (the caller returns its error then).
    pub async fn wait(&mut self, what: &str, cause: &(dyn fmt::Display + Sync)) -> bool {
        let mut pause = self.next;
        if let Some(after) = self.give_up_after {
            let now = tokio::time::Instant::now();
            // `None`: a deadline past the end of the clock, i.e. retry forever.
            self.give_up_at = self.give_up_at.or_else(|| now.checked_add(after));
            if self.give_up_at.is_none() {
                self.give_up_after = None;
            }
        }
        if let (Some(after), Some(at)) = (self.give_up_after, self.give_up_at) {
            let now = tokio::time::Instant::now();
            if now >= at {
                warn!(error = %cause, "{what} failed; giving up after {after:?} of retries");
                return false;
            }
            pause = pause.min(at - now);
        }
        warn!(error = %cause, retry_in = ?pause, "{what} failed; retrying");
        tokio::time::sleep(pause).await;
        self.next = (self.next * 2).min(RETRY_BACKOFF_MAX);
        true
    }
}

/// Runs `attempt` until it succeeds or fails with a non-transient error, waiting with
/// [`Backoff`] (and a WARN line) after each transient failure of `what`.
pub(crate) async fn retry_transient<T, F, Fut>(
    what: &str,
    backoff: &mut Backoff,
    mut attempt: F,
) -> Result<T, CDCError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CDCError>>,
{
    loop {
        match attempt().await {
            Err(e) if e.is_transient() => {
                if !backoff.wait(what, &e).await {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}

/// A list of stream ids, displayed compactly in error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamList(pub Vec<StreamID>);

impl fmt::Display for StreamList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{s}")?;
        }
        f.write_str("]")
    }
}

/// An error of a [`crate::CDCRow`] column accessor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnError {
    /// The log table has no column of that name.
    #[error("the CDC log has no column `{0}`")]
    NoSuchColumn(String),

    /// The column's bytes could not be decoded as its declared type (or the requested type).
    #[error("column `{column}` could not be decoded: {source}")]
    Decode {
        /// The column.
        column: String,
        /// The driver's deserialization error.
        #[source]
        source: scylla::deserialize::DeserializationError,
    },

    /// The column's declared type does not match the requested Rust type.
    #[error("column `{column}` has an incompatible type: {source}")]
    Type {
        /// The column.
        column: String,
        /// The driver's type-check error.
        #[source]
        source: scylla::deserialize::TypeCheckError,
    },
}

/// Whether a driver error is worth retrying: timeouts, overload, unavailable replicas,
/// failed replica reads or writes, broken connections and nodes that are down or starting.
///
/// The reader retries exactly these (with capped exponential backoff); it is public so that
/// consumers writing elsewhere through the driver (a replicator, say) classify errors the
/// same way. Retrying is only safe for idempotent requests.
pub fn is_transient(err: &ExecutionError) -> bool {
    match err {
        ExecutionError::EmptyPlan
        | ExecutionError::ConnectionPoolError(_)
        | ExecutionError::RequestTimeout(_) => true,
        ExecutionError::PrepareError(e) => is_transient_prepare(e),
        ExecutionError::LastAttemptError(attempt) => is_transient_attempt(attempt),
        _ => false,
    }
}

/// Whether a failed prepare is worth retrying: no connection, or a transient answer of the
/// node (the driver prepares on every node and reports the first failure).
pub fn is_transient_prepare(err: &PrepareError) -> bool {
    match err {
        PrepareError::ConnectionPoolError(_) => true,
        PrepareError::AllAttemptsFailed { first_attempt } => is_transient_attempt(first_attempt),
        _ => false,
    }
}

/// Whether one failed attempt of a request is worth retrying.
fn is_transient_attempt(err: &RequestAttemptError) -> bool {
    match err {
        RequestAttemptError::UnableToAllocStreamId
        | RequestAttemptError::BrokenConnectionError(_) => true,
        RequestAttemptError::DbError(db, _) => matches!(
            db,
            DbError::Overloaded
                | DbError::Unavailable { .. }
                | DbError::ReadTimeout { .. }
                | DbError::WriteTimeout { .. }
                | DbError::ReadFailure { .. }
                | DbError::WriteFailure { .. }
                | DbError::IsBootstrapping
                | DbError::RateLimitReached { .. }
                | DbError::Unprepared { .. }
                | DbError::TruncateError
        ),
        _ => false,
    }
}

/// Prepares `text`; a failure is [`CDCError::Prepare`].
pub(crate) async fn prepare(
    session: &scylla::client::session::Session,
    text: &str,
) -> Result<scylla::statement::prepared::PreparedStatement, CDCError> {
    session
        .prepare(text)
        .await
        .map_err(|source| CDCError::Prepare {
            statement: text.to_owned(),
            source: Box::new(source),
        })
}

/// Prepares `text` as an idempotent statement (the library only prepares reads and
/// upserts that are safe to retry); a failure is [`CDCError::Prepare`].
pub(crate) async fn prepare_idempotent(
    session: &scylla::client::session::Session,
    text: &str,
) -> Result<scylla::statement::prepared::PreparedStatement, CDCError> {
    let mut statement = prepare(session, text).await?;
    statement.set_is_idempotent(true);
    Ok(statement)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use scylla::frame::types::Consistency;

    fn db(e: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "x".into()))
    }

    #[test]
    fn classifies_transient_errors() {
        assert!(is_transient(&ExecutionError::RequestTimeout(
            Duration::from_secs(1)
        )));
        assert!(is_transient(&db(DbError::Overloaded)));
        assert!(is_transient(&db(DbError::Unavailable {
            consistency: Consistency::Quorum,
            required: 2,
            alive: 1
        })));
        assert!(is_transient(&ExecutionError::EmptyPlan));
    }

    #[test]
    fn classifies_permanent_errors() {
        assert!(!is_transient(&db(DbError::Invalid)));
        assert!(!is_transient(&db(DbError::SyntaxError)));
        assert!(!is_transient(&db(DbError::Unauthorized)));
    }

    #[test]
    fn classifies_start_up_errors() {
        let query = |e| CDCError::Query {
            what: "x".into(),
            source: Box::new(e),
        };
        assert!(query(db(DbError::Overloaded)).is_transient());
        assert!(!query(db(DbError::Invalid)).is_transient());
        let prepare = |e| CDCError::Prepare {
            statement: "x".into(),
            source: Box::new(PrepareError::AllAttemptsFailed {
                first_attempt: RequestAttemptError::DbError(e, "x".into()),
            }),
        };
        assert!(prepare(DbError::IsBootstrapping).is_transient());
        assert!(!prepare(DbError::Invalid).is_transient());
        // A checkpoint saver's `anyhow` error whose cause is a transient driver error.
        let checkpoint = |e: ExecutionError| CDCError::Checkpoint {
            action: "load",
            source: anyhow::Error::new(e).context("loading"),
        };
        assert!(
            checkpoint(db(DbError::ReadTimeout {
                consistency: Consistency::One,
                received: 0,
                required: 1,
                data_present: false
            }))
            .is_transient()
        );
        assert!(!checkpoint(db(DbError::Unauthorized)).is_transient());
        assert!(
            !CDCError::TableNotFound {
                keyspace: "k".into(),
                table: "t".into()
            }
            .is_transient()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_errors_until_it_gives_up() {
        let started = tokio::time::Instant::now();
        let mut attempts = 0;
        let r: Result<(), CDCError> = retry_transient(
            "x",
            &mut Backoff::new(Some(Duration::from_secs(10))),
            || {
                attempts += 1;
                async {
                    Err(CDCError::Query {
                        what: "x".into(),
                        source: Box::new(db(DbError::Overloaded)),
                    })
                }
            },
        )
        .await;
        assert!(r.unwrap_err().is_transient());
        // 50 ms doubling to 5 s: 0.05+0.1+0.2+0.4+0.8+1.6+3.2 = 6.35 s, then 3.65 s more.
        assert_eq!(attempts, 9);
        assert_eq!(started.elapsed(), Duration::from_secs(10));

        let mut attempts = 0;
        let r = retry_transient("x", &mut Backoff::new(None), || {
            attempts += 1;
            let n = attempts;
            async move {
                if n < 3 {
                    Err(CDCError::Query {
                        what: "x".into(),
                        source: Box::new(db(DbError::Overloaded)),
                    })
                } else {
                    Ok(n)
                }
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        // A definite error is returned at once.
        let mut attempts = 0;
        let r: Result<(), CDCError> = retry_transient("x", &mut Backoff::new(None), || {
            attempts += 1;
            async { Err(CDCError::KeyspaceNotFound("k".into())) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(attempts, 1);
    }

    /// `give_up_after` at its bounds: zero gives up at the first transient failure, without
    /// waiting; the longest duration (far past any clock) retries, as `None` does, instead of
    /// overflowing the deadline.
    #[tokio::test(start_paused = true)]
    async fn give_up_after_at_its_bounds() {
        let mut zero = Backoff::new(Some(Duration::ZERO));
        let before = tokio::time::Instant::now();
        assert!(!zero.wait("x", &"cause").await);
        assert_eq!(before.elapsed(), Duration::ZERO);
        let mut longest = Backoff::new(Some(Duration::MAX));
        for _ in 0..3 {
            assert!(longest.wait("x", &"cause").await);
        }
        assert_eq!(before.elapsed(), Duration::from_millis(50 + 100 + 200));
    }

    #[test]
    fn stream_list_display() {
        let a = StreamID::new([1; 16]);
        let b = StreamID::new([2; 16]);
        let s = StreamList(vec![a, b]).to_string();
        assert_eq!(
            s,
            "[0x01010101010101010101010101010101, 0x02020202020202020202020202020202]"
        );
    }
}
