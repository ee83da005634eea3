//! Following the source table's schema while replicating.
//!
//! Scylla alters the CDC log table with its base table (semantics §1.4): after
//! `ALTER TABLE ... ADD c`, log rows have `c` (and its `cdc$deleted_` companions); after
//! `DROP c` they no longer do, old rows included. A consumer notices a log row whose columns
//! are not exactly its schema's ([`Layout`]) and asks [`TableContext::follow`], which re-reads
//! the source table's schema once for all stream groups of the table and:
//!
//! - columns were added: adds them to the destination table (their user types first), checks
//!   the destination again, and publishes a new [`TableState`] that every consumer switches
//!   to before its next row — so no value of a new column is dropped;
//! - columns were dropped: stops with an error that names the column and what to do. The
//!   replicator never drops destination data on its own; the checkpoint does not pass the
//!   row, so a restart after the fix replays from there;
//! - nothing changed: the row comes from a page read before a column was added (its missing
//!   columns are null), and this layout is accepted without asking again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail};
use scylla::client::session::Session;
use scylla_cdc::CDCRow;
use tracing::info;

use crate::destination::{Destination, WriteBudget};
use crate::schema::{
    ColumnKind, SchemaError, TableSchema, check_compatible, create_statements, list_columns,
    postimage_enabled, quote, read_table_schema,
};
use crate::translate::ListWrites;

/// The part of one table's replication that follows the source table's columns: replaced
/// as a whole when columns are added to it ([`crate::evolve`]).
pub struct TableState {
    /// The source table's schema.
    pub schema: Arc<TableSchema>,
    /// Where its changes go.
    pub destination: Arc<Destination>,
    /// How list changes are written (by the destination's kind).
    pub lists: ListWrites,
}

/// What the consumers of one table share.
pub struct TableContext {
    /// The current state (never held across an `.await`).
    state: Mutex<Arc<TableState>>,
    /// How many times the state was replaced: consumers compare it (one relaxed load per
    /// row) and take the lock only when it moved.
    version: AtomicU64,
    /// Most writes a stream group has in flight.
    pub max_in_flight: usize,
    /// The replicator's bound on the bytes of queued and in-flight writes (shared by every
    /// table).
    pub budget: Arc<WriteBudget>,
    /// Follows the source table's schema changes.
    pub(crate) follower: SchemaFollower,
    /// Write each change before taking the next (`--on-error skip|dead-letter`), so that a
    /// failed write is the error of its own change, not of a later one.
    pub write_each_change: bool,
}

impl TableContext {
    /// The shared context of one table's consumers.
    pub fn new(
        state: TableState,
        max_in_flight: usize,
        budget: Arc<WriteBudget>,
        follower: SchemaFollower,
    ) -> Self {
        Self {
            state: Mutex::new(Arc::new(state)),
            version: AtomicU64::new(0),
            max_in_flight,
            budget,
            follower,
            write_each_change: false,
        }
    }

    /// With `on`, each change is written before the next is taken (see
    /// [`TableContext::write_each_change`]).
    pub fn writing_each_change(mut self, on: bool) -> Self {
        self.write_each_change = on;
        self
    }

    /// The current state.
    pub fn state(&self) -> Arc<TableState> {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Makes `state` the current one.
    pub(crate) fn set_state(&self, state: Arc<TableState>) {
        match self.state.lock() {
            Ok(mut s) => *s = state,
            Err(poisoned) => *poisoned.into_inner() = state,
        }
        self.version.fetch_add(1, Ordering::Release);
    }

    /// How many times the state was replaced (see [`TableContext::state`]).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

/// Which columns of a schema a log row lacks, and which columns it has beyond them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Schema columns the row lacks.
    missing: Vec<String>,
    /// Row columns the schema lacks.
    extra: Vec<String>,
}

impl Layout {
    /// The layout of `row` against `schema`.
    pub fn of(schema: &TableSchema, row: &CDCRow<'_>) -> Layout {
        Layout {
            missing: schema
                .columns
                .iter()
                .filter(|c| !row.column_exists(&c.name))
                .map(|c| c.name.clone())
                .collect(),
            extra: row
                .get_non_cdc_column_names()
                .filter(|n| schema.column(n).is_none())
                .map(str::to_owned)
                .collect(),
        }
    }

    /// Whether the row has exactly the schema's columns.
    pub fn is_exact(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty()
    }
}

/// What [`TableContext::follow`] found.
pub enum Followed {
    /// The source table has the schema the consumer uses.
    Unchanged,
    /// The state to continue with.
    Changed(Arc<TableState>),
}

/// What following one table's schema needs besides its state.
pub struct SchemaFollower {
    /// The source cluster.
    source: Arc<Session>,
    /// Whether the destination is ScyllaDB (how lists are written).
    destination_is_scylla: bool,
    /// `--allow-extra-columns`.
    allow_extra_columns: bool,
    /// One follow at a time per table.
    lock: tokio::sync::Mutex<()>,
}

impl SchemaFollower {
    /// A follower reading the source schema through `source`.
    pub fn new(
        source: Arc<Session>,
        destination_is_scylla: bool,
        allow_extra_columns: bool,
    ) -> Self {
        Self {
            source,
            destination_is_scylla,
            allow_extra_columns,
            lock: tokio::sync::Mutex::new(()),
        }
    }
}

/// Runs `f` until it succeeds or fails for good: a transient failure (timeout, overload, an
/// unreachable node) is retried with the reader's backoff, as the reader retries its reads.
async fn retrying<T, F, Fut>(what: &str, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SchemaError>>,
{
    let mut backoff = scylla_cdc::Backoff::new(None);
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(SchemaError::Transient(m)) => {
                if !backoff.wait(what, &m).await {
                    bail!("{what}: {m}");
                }
            }
            Err(e) => bail!("{what}: {e}"),
        }
    }
}

impl TableContext {
    /// Follows the source table's schema for a consumer that uses `seen` and met a log row
    /// of layout `layout` (see the module docs).
    pub async fn follow(
        &self,
        seen: &Arc<TableState>,
        layout: &Layout,
    ) -> anyhow::Result<Followed> {
        let follower = &self.follower;
        let _one_at_a_time = follower.lock.lock().await;
        let current = self.state();
        if !Arc::ptr_eq(&current, seen) {
            // Another stream group followed the change already.
            return Ok(Followed::Changed(current));
        }
        let old = &current.schema;
        let (ks, table) = (&old.keyspace, &old.table);
        let fresh = retrying("reading the source table's schema", || {
            read_table_schema(&follower.source, ks, table)
        })
        .await?;
        let dropped: Vec<&str> = old
            .columns
            .iter()
            .filter(|c| fresh.column(&c.name).is_none())
            .map(|c| c.name.as_str())
            .collect();
        let destination = &current.destination;
        let dks = destination.keyspace();
        if !dropped.is_empty() {
            bail!(
                "column(s) {} of `{ks}.{table}` were dropped from the source table; the \
                 replicator does not drop destination data by itself: drop them on the \
                 destination too (ALTER TABLE {}.{} DROP ...), or restart with \
                 --allow-extra-columns to keep them there; replication resumes from this change",
                dropped.join(", "),
                quote(dks),
                quote(table),
            );
        }
        let added: Vec<_> = fresh
            .columns
            .iter()
            .filter(|c| old.column(&c.name).is_none())
            .collect();
        if added.is_empty() {
            tracing::debug!(
                ?layout,
                "log rows without the newest columns (an older page)"
            );
            return Ok(Followed::Unchanged);
        }
        let session = destination.session();
        // The added columns' types first (`CREATE TYPE IF NOT EXISTS`), then the columns.
        for statement in create_statements(&fresh, dks, table)
            .into_iter()
            .filter(|s| s.starts_with("CREATE TYPE"))
        {
            run(session, &statement).await?;
        }
        let present = retrying("reading the destination table's schema", || {
            read_table_schema(session, dks, table)
        })
        .await?;
        let mut failures = Vec::new();
        for c in added.iter().filter(|c| present.column(&c.name).is_none()) {
            let statement = format!(
                "ALTER TABLE {}.{} ADD {} {}{}",
                quote(dks),
                quote(table),
                quote(&c.name),
                c.typ.cql(),
                if c.kind == ColumnKind::Static {
                    " STATIC"
                } else {
                    ""
                }
            );
            // A retried ADD that had been applied fails ("conflicts with an existing
            // column"): what counts is whether the column is there afterwards.
            if let Err(e) = run(session, &statement).await {
                failures.push(format!("{e:#}"));
            }
        }
        let dest = retrying("reading the destination table's schema", || {
            read_table_schema(session, dks, table)
        })
        .await?;
        if added.iter().any(|c| dest.column(&c.name).is_none()) {
            bail!(
                "cannot add the source table's new column(s) to the destination: {}",
                failures.join("; ")
            );
        }
        check_compatible(&fresh, &dest, follower.allow_extra_columns)
            .map_err(|e| anyhow!("after the source table changed: destination: {e}"))?;
        let lists = retrying("reading the source table's CDC options", || {
            list_writes_for(&follower.source, &fresh, follower.destination_is_scylla)
        })
        .await?
        .map_err(|refusal| anyhow!("after the source table changed: {refusal}"))?;
        let names: Vec<&str> = added.iter().map(|c| c.name.as_str()).collect();
        info!(
            table = %format!("{ks}.{table}"),
            columns = ?names,
            "the source table gained column(s) {}: added to the destination table",
            names.join(", ")
        );
        let fresh = Arc::new(fresh);
        let state = Arc::new(TableState {
            destination: Arc::new(destination.with_schema(fresh.clone())),
            schema: fresh,
            lists,
        });
        self.set_state(state.clone());
        Ok(Followed::Changed(state))
    }
}

/// How the changes of `schema`'s lists can be written on the destination: element by
/// element on ScyllaDB, else as whole lists from the post-image, which the source table must
/// log. `Ok(Err(refusal))` says why a table cannot be replicated, naming the columns and the
/// option that fixes it.
pub async fn list_writes_for(
    source: &Session,
    schema: &TableSchema,
    destination_is_scylla: bool,
) -> Result<Result<ListWrites, String>, SchemaError> {
    let lists = list_columns(schema);
    if destination_is_scylla || lists.is_empty() {
        return Ok(Ok(ListWrites::TimeuuidIndex));
    }
    let (ks, t) = (&schema.keyspace, &schema.table);
    if postimage_enabled(source, ks, t).await? {
        return Ok(Ok(ListWrites::PostImage));
    }
    Ok(Err(format!(
        "the destination is not ScyllaDB (it has no SCYLLA_TIMEUUID_LIST_INDEX to write list \
         elements by their keys), and the list column(s) {} of `{ks}.{t}` can only be \
         replicated to it as whole lists from the CDC post-image, which this table does not \
         log: enable it with `ALTER TABLE {}.{} WITH cdc = {{'enabled': true, 'postimage': \
         true}}` (keeping the table's other cdc options), or make the columns frozen",
        lists.join(", "),
        quote(ks),
        quote(t),
    )))
}

/// Runs one schema statement on the destination, retrying transient failures (every
/// statement here is idempotent: `IF NOT EXISTS`, or an `ADD` of a column checked absent).
async fn run(session: &Session, statement: &str) -> anyhow::Result<()> {
    retrying(&format!("`{statement}` on the destination"), || async {
        session
            .query_unpaged(statement.to_owned(), ())
            .await
            .map(|_| ())
            .map_err(|e| {
                let m = scylla_cdc::cli::error_chain(&e);
                if scylla_cdc::is_transient(&e) {
                    SchemaError::Transient(m)
                } else {
                    SchemaError::Other(m)
                }
            })
    })
    .await?;
    info!(statement, "destination schema changed");
    Ok(())
}
