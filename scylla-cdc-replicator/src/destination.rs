//! One destination table ([`Destination`]): its session, a cache of prepared statements per
//! [`Shape`], and the retry loop that executes one change's writes (one statement, or an
//! unlogged batch of the change's statements — they all hit one partition); [`Stats`] counts
//! what was applied, for the progress log.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::anyhow;
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use scylla::statement::Consistency;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use scylla_cdc::cli::error_chain;
use tracing::{debug, warn};

use crate::schema::{TableSchema, quote};
use crate::translate::{Shape, Write, statement_text};

/// First pause after a transient write error; doubled on each further failure.
const RETRY_START: Duration = Duration::from_millis(50);
/// Longest pause between retries.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// Counters shared by every consumer of a replicator.
#[derive(Debug, Default)]
pub struct Stats {
    applied: AtomicU64,
    newest_micros: AtomicI64,
    retries: AtomicU64,
}

impl Stats {
    /// Changes (delta rows) applied so far.
    pub fn applied(&self) -> u64 {
        self.applied.load(Ordering::Relaxed)
    }

    /// The newest write time (µs) among the applied changes, if any.
    pub fn newest_applied_micros(&self) -> Option<i64> {
        match self.newest_micros.load(Ordering::Relaxed) {
            0 => None,
            t => Some(t),
        }
    }

    /// Writes retried after a transient error so far.
    pub fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }

    /// Counts one applied change written at `time_micros`.
    pub(crate) fn record(&self, time_micros: i64) {
        self.applied.fetch_add(1, Ordering::Relaxed);
        self.newest_micros.fetch_max(time_micros, Ordering::Relaxed);
    }
}

/// Whether a driver error is worth retrying: the library's classification (timeouts,
/// overload, unavailable replicas, broken connections, nodes down or starting). Every write
/// of the replicator is idempotent (it carries its timestamp), so retrying is always safe.
pub use scylla_cdc::is_transient;

/// Rewrites the keyspace of every UDT value inside `value` (the driver checks that a UDT
/// value names the keyspace of the column it is bound to).
pub fn retarget_udts(value: &mut CqlValue, keyspace: &str) {
    match value {
        CqlValue::UserDefinedType {
            keyspace: ks,
            fields,
            ..
        } => {
            if ks != keyspace {
                *ks = keyspace.to_owned();
            }
            for v in fields.iter_mut().filter_map(|(_, v)| v.as_mut()) {
                retarget_udts(v, keyspace);
            }
        }
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            items.iter_mut().for_each(|v| retarget_udts(v, keyspace));
        }
        CqlValue::Map(entries) => {
            for (k, v) in entries {
                retarget_udts(k, keyspace);
                retarget_udts(v, keyspace);
            }
        }
        CqlValue::Tuple(items) => {
            items
                .iter_mut()
                .flatten()
                .for_each(|v| retarget_udts(v, keyspace));
        }
        _ => {}
    }
}

/// One destination table: where and how changes are written.
pub struct Destination {
    /// The destination cluster.
    session: Arc<Session>,
    /// The destination keyspace.
    keyspace: String,
    /// `"ks"."t"`.
    target: String,
    /// The source table's schema (the destination has at least its columns).
    schema: Arc<TableSchema>,
    /// Consistency of the writes.
    consistency: Consistency,
    /// The table uses UDTs: their values must name the destination keyspace.
    retarget: bool,
    /// Prepared statements by shape (never held across an `.await`).
    cache: Mutex<HashMap<Shape, PreparedStatement>>,
    /// Counters of the replicator.
    pub(crate) stats: Arc<Stats>,
}

impl Destination {
    /// Writes of `schema`'s changes into `keyspace.table` through `session`.
    pub fn new(
        session: Arc<Session>,
        keyspace: &str,
        table: &str,
        schema: Arc<TableSchema>,
        consistency: Consistency,
        stats: Arc<Stats>,
    ) -> Self {
        Self {
            session,
            keyspace: keyspace.to_owned(),
            target: format!("{}.{}", quote(keyspace), quote(table)),
            retarget: !schema.udts.is_empty(),
            schema,
            consistency,
            cache: Mutex::new(HashMap::new()),
            stats,
        }
    }

    /// `"ks"."t"`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The destination cluster.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The destination keyspace.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The same table, for `schema` (the source table after columns were added), with its
    /// own statement cache.
    pub fn with_schema(&self, schema: Arc<TableSchema>) -> Self {
        Self {
            session: self.session.clone(),
            keyspace: self.keyspace.clone(),
            target: self.target.clone(),
            retarget: !schema.udts.is_empty(),
            schema,
            consistency: self.consistency,
            cache: Mutex::new(HashMap::new()),
            stats: self.stats.clone(),
        }
    }

    /// The prepared statement of a shape, prepared on first use.
    async fn prepared(&self, shape: &Shape) -> Result<PreparedStatement, ExecutionError> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(shape).cloned()) {
            return Ok(p);
        }
        let text = statement_text(&self.schema, &self.target, shape);
        debug!(statement = %text, "preparing");
        let mut prepared = self.session.prepare(text).await?;
        prepared.set_consistency(self.consistency);
        prepared.set_is_idempotent(true);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(shape.clone(), prepared.clone());
        }
        Ok(prepared)
    }

    /// Executes the writes of one change once.
    async fn execute(&self, writes: &[Write]) -> Result<(), ExecutionError> {
        match writes {
            [] => Ok(()),
            [w] => {
                let p = self.prepared(&w.shape).await?;
                self.session
                    .execute_unpaged(&p, &w.values)
                    .await
                    .map(|_| ())
            }
            many => {
                let mut batch = Batch::new(BatchType::Unlogged);
                batch.set_consistency(self.consistency);
                batch.set_is_idempotent(true);
                let mut values = Vec::with_capacity(many.len());
                for w in many {
                    batch.append_statement(self.prepared(&w.shape).await?);
                    values.push(&w.values);
                }
                self.session.batch(&batch, values).await.map(|_| ())
            }
        }
    }

    /// Applies the writes of one or more changes in one request, retrying transient errors
    /// with capped exponential backoff until they succeed; other errors are returned.
    pub async fn apply(&self, mut writes: Vec<Write>) -> anyhow::Result<()> {
        if self.retarget {
            for v in writes
                .iter_mut()
                .flat_map(|w| w.values.iter_mut())
                .flatten()
            {
                retarget_udts(v, &self.keyspace);
            }
        }
        let mut backoff = RETRY_START;
        loop {
            match self.execute(&writes).await {
                Ok(()) => return Ok(()),
                Err(e) if is_transient(&e) => {
                    self.stats.retries.fetch_add(1, Ordering::Relaxed);
                    warn!(error = %e, table = %self.target, retry_in = ?backoff, "transient error writing to the destination; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(RETRY_MAX);
                }
                Err(e) => {
                    let text = writes
                        .first()
                        .map(|w| statement_text(&self.schema, &self.target, &w.shape))
                        .unwrap_or_default();
                    return Err(anyhow!("writing `{text}` failed: {}", error_chain(&e)));
                }
            }
        }
    }
}

/// A replicator-wide bound on the bytes of writes queued or in flight, over every stream
/// group of every table: a consumer takes its change's share before queueing it and gives it
/// back when the write completes, so a destination slower than the source slows the log
/// reader (which then fetches no further pages) instead of growing memory. Sizes are the
/// memory the writes hold until they complete ([`writes_footprint`]).
pub struct WriteBudget {
    permits: Arc<tokio::sync::Semaphore>,
    bytes: u32,
}

/// What one queued change holds of the [`WriteBudget`]; returned when dropped.
pub type BudgetShare = tokio::sync::OwnedSemaphorePermit;

impl WriteBudget {
    /// A budget of `bytes` (1 byte to 4 GiB).
    pub fn new(bytes: u64) -> Self {
        let bytes = u32::try_from(bytes).unwrap_or(u32::MAX).max(1);
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(bytes as usize)),
            bytes,
        }
    }

    /// Waits until `bytes` fit in the budget and takes them (a change larger than the whole
    /// budget takes all of it, so it still goes out, alone).
    pub async fn take(&self, bytes: usize) -> BudgetShare {
        let want = u32::try_from(bytes)
            .unwrap_or(u32::MAX)
            .clamp(1, self.bytes);
        self.permits
            .clone()
            .acquire_many_owned(want)
            .await
            .expect("the write budget's semaphore is never closed")
    }

    /// Bytes not taken now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }
}

/// A rough size of a value on the wire.
fn approx_size(v: &CqlValue) -> usize {
    4 + match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.len(),
        CqlValue::Blob(b) => b.len(),
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            items.iter().map(approx_size).sum()
        }
        CqlValue::Map(entries) => entries
            .iter()
            .map(|(k, v)| approx_size(k) + approx_size(v))
            .sum(),
        CqlValue::Tuple(items) => items.iter().flatten().map(approx_size).sum(),
        CqlValue::UserDefinedType { fields, .. } => fields
            .iter()
            .map(|(_, v)| v.as_ref().map_or(4, approx_size))
            .sum(),
        _ => 16,
    }
}

/// A rough size of a change's writes on the wire.
pub fn writes_size(writes: &[Write]) -> usize {
    writes
        .iter()
        .flat_map(|w| w.values.iter())
        .map(|v| v.as_ref().map_or(4, approx_size))
        .sum()
}

/// Heap bytes a value holds outside its own `CqlValue` slot (its text, bytes or elements).
fn heap_size(v: &CqlValue) -> usize {
    let slot = std::mem::size_of::<CqlValue>();
    match v {
        CqlValue::Ascii(s) | CqlValue::Text(s) => s.capacity(),
        CqlValue::Blob(b) => b.capacity(),
        CqlValue::List(items) | CqlValue::Set(items) | CqlValue::Vector(items) => {
            items.capacity() * slot + items.iter().map(heap_size).sum::<usize>()
        }
        CqlValue::Map(entries) => {
            entries.capacity() * 2 * slot
                + entries
                    .iter()
                    .map(|(k, v)| heap_size(k) + heap_size(v))
                    .sum::<usize>()
        }
        CqlValue::Tuple(items) => {
            items.capacity() * std::mem::size_of::<Option<CqlValue>>()
                + items.iter().flatten().map(heap_size).sum::<usize>()
        }
        CqlValue::UserDefinedType {
            keyspace,
            name,
            fields,
        } => {
            keyspace.capacity()
                + name.capacity()
                + fields.capacity() * std::mem::size_of::<(String, Option<CqlValue>)>()
                + fields
                    .iter()
                    .map(|(f, v)| f.capacity() + v.as_ref().map_or(0, heap_size))
                    .sum::<usize>()
        }
        CqlValue::Varint(_) | CqlValue::Decimal(_) => 32,
        _ => 0,
    }
}

/// Heap bytes of a statement's shape (its column lists).
fn shape_heap_size(shape: &Shape) -> usize {
    match shape {
        Shape::Insert { columns } => columns.capacity() * std::mem::size_of::<u16>(),
        Shape::Update { assigns, .. } => {
            assigns.capacity() * std::mem::size_of::<crate::translate::Assign>()
        }
        Shape::Delete { .. } => 0,
    }
}

/// What the driver holds per statement of a request besides the serialized values (its
/// entry in the batch, the values' length headers, the request's share of the frame and
/// of the request's future), and the allocator's rounding of each allocation of a write.
/// Measured: replicating small changes (`scylla-cdc-bench replicator`, 3 columns), the
/// replicator's RSS grew by about 1.2 KiB per change in flight while their [`Write`]s hold
/// about 0.7 KiB.
const STATEMENT_OVERHEAD: usize = 256;

/// The memory a change's writes hold from the moment they are queued until their request
/// completes: the [`Write`]s themselves (their value slots, whose `CqlValue`s are several
/// times larger than a small value on the wire, and the values' heap bytes), the copy of the
/// values the driver serializes into the request ([`writes_size`]), and a fixed overhead per
/// statement. This is what the replicator's [`WriteBudget`] counts, so that `--max-mib-in-flight`
/// bounds memory for small changes too (counting wire sizes alone let a backlog of small
/// changes queue about twelve times the budget).
pub fn writes_footprint(writes: &[Write]) -> usize {
    let slot = std::mem::size_of::<Option<CqlValue>>();
    writes.len() * (std::mem::size_of::<Write>() + STATEMENT_OVERHEAD)
        + writes
            .iter()
            .map(|w| {
                w.values.capacity() * slot
                    + shape_heap_size(&w.shape)
                    + w.values.iter().flatten().map(heap_size).sum::<usize>()
            })
            .sum::<usize>()
        + writes_size(writes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::errors::{DbError, RequestAttemptError};
    use scylla::frame::types::Consistency as Cl;

    fn db(e: DbError) -> ExecutionError {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, "x".into()))
    }

    #[test]
    fn transient_errors() {
        assert!(is_transient(&db(DbError::Overloaded)));
        assert!(is_transient(&db(DbError::WriteTimeout {
            consistency: Cl::Quorum,
            received: 1,
            required: 2,
            write_type: scylla::errors::WriteType::Simple,
        })));
        assert!(is_transient(&db(DbError::Unavailable {
            consistency: Cl::Quorum,
            required: 2,
            alive: 1
        })));
        assert!(is_transient(&ExecutionError::RequestTimeout(
            Duration::from_secs(1)
        )));
        assert!(is_transient(&ExecutionError::EmptyPlan));
        assert!(!is_transient(&db(DbError::Invalid)));
        assert!(!is_transient(&db(DbError::SyntaxError)));
        assert!(!is_transient(&db(DbError::ServerError)));
    }

    #[test]
    fn udt_keyspaces_are_rewritten_everywhere() {
        let udt = |ks: &str| CqlValue::UserDefinedType {
            keyspace: ks.into(),
            name: "u".into(),
            fields: vec![(
                "inner".into(),
                Some(CqlValue::UserDefinedType {
                    keyspace: ks.into(),
                    name: "p".into(),
                    fields: vec![],
                }),
            )],
        };
        let wrap = |ks: &str| {
            CqlValue::List(vec![CqlValue::Map(vec![(
                CqlValue::Tuple(vec![Some(udt(ks)), None]),
                CqlValue::Set(vec![udt(ks)]),
            )])])
        };
        let mut v = wrap("src");
        retarget_udts(&mut v, "dst");
        assert_eq!(v, wrap("dst"));
        let mut plain = CqlValue::Int(1);
        retarget_udts(&mut plain, "dst");
        assert_eq!(plain, CqlValue::Int(1));
    }

    #[tokio::test]
    async fn the_write_budget_bounds_what_is_taken_and_gets_it_back() {
        let budget = WriteBudget::new(1000);
        let a = budget.take(600).await;
        assert_eq!(budget.available(), 400);
        // 600 more do not fit until the first share is back.
        let waiting = tokio::time::timeout(Duration::from_millis(50), budget.take(600)).await;
        assert!(waiting.is_err());
        drop(a);
        let b = budget.take(600).await;
        assert_eq!(budget.available(), 400);
        drop(b);
        // A change larger than the whole budget takes all of it and still goes out.
        let big = budget.take(5000).await;
        assert_eq!(budget.available(), 0);
        drop(big);
        assert_eq!(budget.available(), 1000);
    }

    #[test]
    fn stats_count_and_keep_the_newest_time() {
        let s = Stats::default();
        assert_eq!(s.newest_applied_micros(), None);
        s.record(5);
        s.record(3);
        assert_eq!(s.applied(), 2);
        assert_eq!(s.newest_applied_micros(), Some(5));
    }
}
