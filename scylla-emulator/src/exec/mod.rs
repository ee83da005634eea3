//! Statement execution: the database behind every node.
//!
//! [`Database`] holds the schema snapshot (swapped whole by DDL), each table's
//! [`TableData`] behind its own lock, the prepared-statement cache (shared by all nodes, so
//! ids are identical everywhere; id = MD5 of the connection's keyspace and the text), a small
//! cache of parsed unprepared statements, and the server clock that stamps writes. A node's
//! connection hands it each decoded statement request with the connection's [`ConnState`];
//! the database appends exactly one response frame to the connection's output buffer and
//! reports side effects in an [`Outcome`].
//!
//! A statement's life: `cql::parse_statement` → [`plan::plan_statement`] against the
//! current schema (the dispatcher: it hands the statement to its planner with a fresh
//! [`binder::Binder`], which records bind-variable metadata; cached per schema version) →
//! execution: [`select`] streams rows into the frame, [`modify`] and [`batch`] build
//! `storage::PartitionMutation`s that go through the one write path ([`Database::write`],
//! where the CDC module hooks in: [`cdc_write`], with the state of [`cdc_state`]), DDL goes
//! to `ddl::execute_ddl`, and [`describe`] answers DESCRIBE from the schema snapshot, as
//! Scylla does on the server. [`restrictions`] analyses WHERE clauses, [`values`] turns terms
//! into values ([`literal`] converts constants, [`scylla_text`] renders values as Scylla
//! does in casts and result column names), [`paging`] encodes the resume position of paged
//! reads, and [`consistency`] answers Unavailable when too few replicas are up. [`preload`]
//! fills benchmark tables through the same write path without a client. [`routing`] finds the
//! tablet a request targets (tablets routing). [`index`] decides which SELECTs read through a
//! secondary index (DDL: `ddl::index`). [`json`] is JSON in CQL: the conversions of
//! `SELECT JSON`, `toJson()` and `fromJson()`, and of `INSERT JSON`, whose document
//! [`json_insert`] binds. [`view`] keeps materialized views up to date: every base mutation
//! applied through the write path updates the base's views under the base table's lock,
//! and a new view is built from its base's rows once the schema that has it is in place.
//!
//! The modules form floors, each importing only from those below it: at the bottom the
//! helpers of values and names ([`binder`], [`literal`], [`json`], [`scylla_text`],
//! [`paging`], [`consistency`], [`describe`], [`system_tables`], [`cdc_state`]), then `ddl`,
//! [`values`], [`restrictions`] and [`json_insert`], [`index`], the planners ([`select`],
//! [`modify`], then [`batch`] and [`lwt`]), the dispatcher [`plan`], this module's
//! [`Database`], and on top the parts of the database kept in files of their own
//! ([`cdc_write`], [`view`], [`routing`], [`preload`]).

mod batch;
mod binder;
mod cdc_state;
mod cdc_write;
mod consistency;
mod describe;
mod index;
mod json;
mod json_insert;
mod literal;
mod lwt;
mod modify;
mod paging;
mod plan;
mod preload;
mod restrictions;
mod routing;
mod scylla_text;
mod select;
mod values;
mod view;

mod ddl;
mod system_tables;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::{Bytes, BytesMut};
use md5::{Digest, Md5};
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::cluster::{ClusterConfig, TableAccess, Topology};
use crate::cql::{self, BatchKind, Statement};
use crate::frame::{
    self, BatchQuery, BatchRequest, BoundValue, Consistency, CqlError, Extensions, Prepared,
    QueryParams, Request, Response, RowsResult, SchemaChange,
};
use crate::schema::{Schema, TableDef, TableKind};
use crate::storage::{Now, PartitionMutation, TableData, TableStore, Timestamp};
use crate::types::value::Value;

use cdc_state::{CdcCell, CdcWrite};
use modify::{ModifyPlan, WriteParams};
use plan::{Plan, Planned};
use values::EvalCtx;

/// Per-connection state the executor reads and updates.
#[derive(Debug, Clone)]
pub(crate) struct ConnState {
    /// Node (1-based) the connection is to: the coordinator of its requests.
    pub(crate) node: usize,
    /// Shard of the connection.
    pub(crate) shard: u32,
    /// Keyspace set by `USE`.
    pub(crate) keyspace: Option<String>,
    /// Extensions negotiated in STARTUP.
    pub(crate) ext: Extensions,
}

impl ConnState {
    /// State of a fresh connection.
    pub(crate) fn new(node: usize, shard: u32) -> ConnState {
        ConnState {
            node,
            shard,
            keyspace: None,
            ext: Extensions::default(),
        }
    }
}

/// Side effects of a request the connection must act on.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The schema changes to announce to registered connections, in order (a DDL
    /// statement can announce several: a table and its CDC log).
    pub(crate) schema_changes: Vec<SchemaChange>,
    /// Warnings to send with a successful answer.
    pub(crate) warnings: Vec<String>,
}

/// A statement text with its plan, cached for PREPARE/EXECUTE and for repeated QUERYs.
#[derive(Debug)]
struct CachedStatement {
    /// Prepared id.
    id: Bytes,
    /// The statement text.
    text: String,
    /// The connection keyspace it was prepared under.
    keyspace: Option<String>,
    /// The parsed statement.
    stmt: Statement,
    /// The plan for the latest schema version it was used with.
    planned: RwLock<Arc<Planned>>,
}

/// The monotonic server clock: write timestamps in µs, strictly increasing across calls.
#[derive(Debug, Default)]
struct Clock {
    /// Last timestamp handed out.
    last: AtomicI64,
    /// Added to the wall clock (tests move time forward with it).
    offset_micros: AtomicI64,
}

impl Clock {
    fn now_micros(&self) -> i64 {
        crate::types::timeuuid::now_micros() + self.offset_micros.load(Ordering::Relaxed)
    }

    fn next_timestamp(&self) -> i64 {
        let wall = self.now_micros();
        let mut prev = self.last.load(Ordering::Relaxed);
        loop {
            let next = wall.max(prev + 1);
            match self
                .last
                .compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(p) => prev = p,
            }
        }
    }

    fn now(&self) -> Now {
        Now(self.now_micros().div_euclid(1_000_000))
    }
}

/// Key of the unprepared-statement cache: connection keyspace and text.
type UnpreparedKey = (Option<String>, String);

/// The `tracing` target of the statement log: every statement request (its text, the
/// prepared statement's text for EXECUTE) and every error answered, at DEBUG level
/// (`RUST_LOG=scylla_emulator::statements=debug`), to see what a client sends.
const STATEMENT_LOG: &str = "scylla_emulator::statements";

/// Most unprepared statements kept parsed.
const UNPREPARED_CACHE: usize = 512;

/// The database shared by all nodes.
pub(crate) struct Database {
    config: ClusterConfig,
    schema: RwLock<Arc<Schema>>,
    tables: RwLock<HashMap<Uuid, Arc<TableStore>>>,
    prepared: RwLock<HashMap<Bytes, Arc<CachedStatement>>>,
    unprepared: Mutex<HashMap<UnpreparedKey, Arc<CachedStatement>>>,
    ddl_lock: Mutex<()>,
    clock: Clock,
    /// CDC generations, tablet stream sets, and the randomness of stream ids.
    cdc: CdcCell,
    /// Every mutation applied, for tests of batch merging.
    #[cfg(test)]
    applied: Mutex<Vec<PartitionMutation>>,
}

/// What a request's execution answers: a response to encode, or nothing when the rows were
/// streamed into the output already.
type Answer = Result<Option<Response>, CqlError>;

/// Where a statement's values come from.
struct Exec<'a> {
    topology: &'a Topology,
    conn: &'a mut ConnState,
    params: &'a QueryParams,
    values: &'a [BoundValue],
}

impl Database {
    /// An empty database with the system keyspaces.
    pub(crate) fn new(config: &ClusterConfig) -> Database {
        let schema = Schema::with_system_keyspaces();
        let mut tables = HashMap::new();
        for t in schema.tables() {
            if t.kind != TableKind::Virtual
                && let Some(store) = new_store(t)
            {
                tables.insert(t.id, Arc::new(store));
            }
        }
        Database {
            config: config.clone(),
            schema: RwLock::new(Arc::new(schema)),
            tables: RwLock::new(tables),
            prepared: RwLock::new(HashMap::new()),
            unprepared: Mutex::new(HashMap::new()),
            ddl_lock: Mutex::new(()),
            clock: Clock::default(),
            cdc: CdcCell::new(config.seed),
            #[cfg(test)]
            applied: Mutex::new(Vec::new()),
        }
    }

    /// The current schema snapshot.
    pub(crate) fn schema(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    /// A table's data.
    pub(crate) fn table_store(&self, id: Uuid) -> Option<Arc<TableStore>> {
        self.tables.read().get(&id).cloned()
    }

    /// The next write timestamp of the server clock (µs, strictly increasing).
    pub(crate) fn next_timestamp(&self) -> Timestamp {
        self.clock.next_timestamp()
    }

    /// Server time for TTLs.
    pub(crate) fn now(&self) -> Now {
        self.clock.now()
    }

    /// Moves the server clock forward (tests of TTL expiry).
    #[cfg(test)]
    pub(crate) fn advance_clock(&self, micros: i64) {
        self.clock
            .offset_micros
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// The Unprepared error for `id` if no statement is prepared under it.
    pub(crate) fn check_prepared(&self, id: &Bytes) -> Result<(), CqlError> {
        if self.prepared.read().contains_key(id) {
            Ok(())
        } else {
            Err(unprepared(id))
        }
    }

    /// The tables a statement request reads or writes and how (for the per-table request
    /// counters: `RequestStats::record_table`), each table once: a `SELECT` reads its table,
    /// a modification or batch writes each of its tables, as a lightweight transaction if it
    /// (or any statement of the batch) has a condition. A prepared statement is looked up in
    /// the cache, a text is parsed; a request that does not parse touches nothing.
    pub(crate) fn table_accesses(
        &self,
        conn: &ConnState,
        request: &Request,
    ) -> Vec<(String, String, TableAccess)> {
        let mut out: Vec<(String, String, TableAccess)> = Vec::new();
        let mut add = |name: &cql::QualifiedName, keyspace: Option<&str>, access: TableAccess| {
            let Some(ks) = name.keyspace.as_deref().or(keyspace) else {
                return;
            };
            match out.iter_mut().find(|(k, t, _)| k == ks && *t == name.name) {
                // A batch with a condition is one LWT, whichever statement has it.
                Some(entry) if access == TableAccess::Lwt => entry.2 = TableAccess::Lwt,
                Some(_) => {}
                None => out.push((ks.to_owned(), name.name.clone(), access)),
            }
        };
        let mut visit = |stmt: &Statement, keyspace: Option<&str>, in_batch: bool| {
            let write = |conditional: bool| {
                if conditional {
                    TableAccess::Lwt
                } else {
                    TableAccess::Write
                }
            };
            match stmt {
                Statement::Select(s) if !in_batch => add(&s.table, keyspace, TableAccess::Read),
                Statement::Insert(s) => add(&s.table, keyspace, write(s.if_not_exists)),
                Statement::Update(s) => add(&s.table, keyspace, write(s.condition.is_some())),
                Statement::Delete(s) => add(&s.table, keyspace, write(s.condition.is_some())),
                Statement::Batch(b) => {
                    let lwt = b.statements.iter().any(|s| match s {
                        cql::BatchStatement::Insert(i) => i.if_not_exists,
                        cql::BatchStatement::Update(u) => u.condition.is_some(),
                        cql::BatchStatement::Delete(d) => d.condition.is_some(),
                    });
                    for s in &b.statements {
                        add(s.table(), keyspace, write(lwt));
                    }
                }
                _ => {}
            }
        };
        let conn_ks = conn.keyspace.as_deref();
        match request {
            Request::Query { query, .. } => {
                if let Ok(stmt) = cql::parse_statement(query) {
                    visit(&stmt, conn_ks, false);
                }
            }
            Request::Execute { id, .. } => {
                if let Some(c) = self.prepared.read().get(id).cloned() {
                    visit(&c.stmt, c.keyspace.as_deref(), false);
                }
            }
            Request::Batch(b) => {
                // A protocol BATCH: its statements' tables, all LWTs if one has a condition.
                let stmts: Vec<(Statement, Option<String>)> = b
                    .statements
                    .iter()
                    .filter_map(|s| match &s.query {
                        BatchQuery::Text(t) => cql::parse_statement(t)
                            .ok()
                            .map(|stmt| (stmt, conn.keyspace.clone())),
                        BatchQuery::Prepared(id) => self
                            .prepared
                            .read()
                            .get(id)
                            .map(|c| (c.stmt.clone(), c.keyspace.clone())),
                    })
                    .collect();
                let lwt = stmts.iter().any(|(stmt, _)| match stmt {
                    Statement::Insert(i) => i.if_not_exists,
                    Statement::Update(u) => u.condition.is_some(),
                    Statement::Delete(d) => d.condition.is_some(),
                    _ => false,
                });
                for (stmt, ks) in &stmts {
                    let name = match stmt {
                        Statement::Insert(i) => &i.table,
                        Statement::Update(u) => &u.table,
                        Statement::Delete(d) => &d.table,
                        _ => continue,
                    };
                    let access = if lwt {
                        TableAccess::Lwt
                    } else {
                        TableAccess::Write
                    };
                    add(name, ks.as_deref(), access);
                }
            }
            _ => {}
        }
        out
    }

    /// The statement text and target table of a request, for fault matching.
    pub(crate) fn describe_request(
        &self,
        conn: &ConnState,
        request: &Request,
    ) -> (Option<String>, Option<(String, String)>) {
        let text = match request {
            Request::Query { query, .. } | Request::Prepare { query } => Some(query.clone()),
            Request::Execute { id, .. } => self.prepared.read().get(id).map(|c| c.text.clone()),
            Request::Batch(b) => b.statements.first().and_then(|s| match &s.query {
                BatchQuery::Text(t) => Some(t.clone()),
                BatchQuery::Prepared(id) => self.prepared.read().get(id).map(|c| c.text.clone()),
            }),
            _ => None,
        };
        let table = text.as_deref().and_then(|t| {
            let stmt = cql::parse_statement(t).ok()?;
            let name = match &stmt {
                Statement::Select(s) => s.table.clone(),
                Statement::Insert(s) => s.table.clone(),
                Statement::Update(s) => s.table.clone(),
                Statement::Delete(s) => s.table.clone(),
                Statement::Batch(b) => b.statements.first()?.table().clone(),
                _ => return None,
            };
            let ks = name.keyspace.or_else(|| conn.keyspace.clone())?;
            Some((ks, name.name))
        });
        (text, table)
    }

    /// Executes a statement request and appends its response on `stream` to `out`.
    pub(crate) fn handle(
        &self,
        topology: &Topology,
        conn: &mut ConnState,
        stream: i16,
        request: Request,
        out: &mut BytesMut,
    ) -> Outcome {
        self.handle_request(topology, conn, stream, request, out)
    }

    /// [`Database::handle`] without the cluster (which the executor does not need).
    pub(crate) fn handle_request(
        &self,
        topology: &Topology,
        conn: &mut ConnState,
        stream: i16,
        request: Request,
        out: &mut BytesMut,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        let start = out.len();
        let ext = conn.ext;
        if tracing::enabled!(target: STATEMENT_LOG, tracing::Level::DEBUG) {
            let (text, _) = self.describe_request(conn, &request);
            tracing::debug!(target: STATEMENT_LOG, node = conn.node, op = request.name(), statement = text.as_deref().unwrap_or(""), "request");
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.dispatch(topology, conn, stream, request, out, &mut outcome)
        }));
        let response = match result {
            Ok(Ok(Some(r))) => r,
            Ok(Ok(None)) => return outcome,
            Ok(Err(e)) => {
                tracing::debug!(target: STATEMENT_LOG, node = conn.node, code = e.code(), message = %e.message, "error");
                Response::Error(e)
            }
            Err(_) => {
                out.truncate(start);
                Response::Error(CqlError::server(
                    "Internal error while executing the request",
                ))
            }
        };
        out.truncate(start);
        let warnings = match response {
            Response::Error(_) => Vec::new(),
            _ => std::mem::take(&mut outcome.warnings),
        };
        frame::encode_response(out, stream, &ext, &warnings, &response);
        outcome
    }

    fn dispatch(
        &self,
        topology: &Topology,
        conn: &mut ConnState,
        stream: i16,
        request: Request,
        out: &mut BytesMut,
        outcome: &mut Outcome,
    ) -> Answer {
        match request {
            Request::Query { query, params } => {
                let cached = self.cached_unprepared(conn.keyspace.as_deref(), &query)?;
                let planned = self.planned(&cached)?;
                let values = named_values(&planned, &params)?;
                let mut ex = Exec {
                    topology,
                    conn,
                    params: &params,
                    values: &values,
                };
                self.execute(&planned, &mut ex, stream, out, outcome)
            }
            Request::Prepare { query } => {
                let cached = self.prepare(conn.keyspace.as_deref(), &query)?;
                let planned = self.planned(&cached)?;
                Ok(Some(Response::Prepared(Arc::new(Prepared {
                    id: cached.id.clone(),
                    metadata: planned.metadata.clone(),
                    result_metadata: planned.result.as_deref().cloned(),
                }))))
            }
            Request::Execute { id, params } => {
                let cached = self
                    .prepared
                    .read()
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| unprepared(&id))?;
                let planned = self.planned(&cached)?;
                let values = named_values(&planned, &params)?;
                let mut ex = Exec {
                    topology,
                    conn,
                    params: &params,
                    values: &values,
                };
                self.execute(&planned, &mut ex, stream, out, outcome)
            }
            Request::Batch(b) => self.batch_request(topology, conn, &b),
            other => Err(CqlError::protocol(format!(
                "Unexpected message {} for statement execution",
                other.name()
            ))),
        }
    }

    /// Parses (or finds) an unprepared statement.
    fn cached_unprepared(
        &self,
        keyspace: Option<&str>,
        text: &str,
    ) -> Result<Arc<CachedStatement>, CqlError> {
        let key = (keyspace.map(str::to_string), text.to_string());
        if let Some(c) = self.unprepared.lock().get(&key) {
            return Ok(c.clone());
        }
        let c = Arc::new(self.parse_and_plan(keyspace, text)?);
        let mut cache = self.unprepared.lock();
        if cache.len() >= UNPREPARED_CACHE {
            cache.clear();
        }
        cache.insert(key, c.clone());
        Ok(c)
    }

    /// PREPARE: parses, plans and stores a statement under its id.
    fn prepare(
        &self,
        keyspace: Option<&str>,
        text: &str,
    ) -> Result<Arc<CachedStatement>, CqlError> {
        let id = statement_id(keyspace, text);
        if let Some(c) = self.prepared.read().get(&id) {
            return Ok(c.clone());
        }
        let c = Arc::new(self.parse_and_plan(keyspace, text)?);
        self.prepared.write().insert(id, c.clone());
        Ok(c)
    }

    fn parse_and_plan(
        &self,
        keyspace: Option<&str>,
        text: &str,
    ) -> Result<CachedStatement, CqlError> {
        let stmt = cql::parse_statement(text).map_err(|e| match e.kind {
            cql::ParseErrorKind::Syntax => CqlError::syntax(e.to_string()),
            cql::ParseErrorKind::Invalid => CqlError::invalid(e.to_string()),
        })?;
        let schema = self.schema();
        let planned = plan::plan_statement(&schema, keyspace, &stmt)?;
        Ok(CachedStatement {
            id: statement_id(keyspace, text),
            text: text.to_string(),
            keyspace: keyspace.map(str::to_string),
            stmt,
            planned: RwLock::new(Arc::new(planned)),
        })
    }

    /// The statement's plan for the current schema (re-planned after DDL).
    fn planned(&self, c: &CachedStatement) -> Result<Arc<Planned>, CqlError> {
        let schema = self.schema();
        {
            let p = c.planned.read();
            if p.schema_version == schema.version {
                return Ok(p.clone());
            }
        }
        let p = Arc::new(plan::plan_statement(
            &schema,
            c.keyspace.as_deref(),
            &c.stmt,
        )?);
        *c.planned.write() = p.clone();
        Ok(p)
    }

    fn execute(
        &self,
        planned: &Planned,
        ex: &mut Exec<'_>,
        stream: i16,
        out: &mut BytesMut,
        outcome: &mut Outcome,
    ) -> Answer {
        let expected = planned.metadata.variables.len();
        if ex.values.len() != expected {
            return Err(CqlError::invalid(format!(
                "There were {expected} markers(?) in CQL but {} bound variables",
                ex.values.len()
            )));
        }
        let ctx = EvalCtx { values: ex.values };
        match &planned.plan {
            Plan::Select(p) => self.run_select(p, &ctx, ex, stream, out),
            Plan::Modify(p) => {
                p.validate()?;
                let values = modify::bind_values(p, ex.values)?;
                let ctx = EvalCtx { values: &values };
                if p.is_conditional() {
                    self.run_conditional(&[(p, ctx)], false, ex)
                } else {
                    let default_ts = ex.params.timestamp.unwrap_or_else(|| self.next_timestamp());
                    let wp = modify::write_params(p, &ctx, default_ts)?;
                    let muts = self.build(p, &ctx, wp)?;
                    self.check_write_consistency(ex, &p.table, &muts)?;
                    self.write(&p.table, muts)?;
                    Ok(Some(Response::Void))
                }
            }
            Plan::Batch(b) => {
                let batch_ts = match &b.timestamp {
                    Some(e) => Some(
                        values::eval_required(e, &ctx, "timestamp")?
                            .as_i64()
                            .unwrap_or(0),
                    ),
                    None => None,
                };
                let values = b
                    .statements
                    .iter()
                    .map(|s| modify::bind_values(s, ex.values))
                    .collect::<Result<Vec<_>, _>>()?;
                let items: Vec<(&ModifyPlan, EvalCtx<'_>)> = b
                    .statements
                    .iter()
                    .zip(&values)
                    .map(|(s, v)| (s, EvalCtx { values: v }))
                    .collect();
                self.run_batch(&items, batch_ts, ex)
            }
            Plan::Use(ks) => {
                ex.conn.keyspace = Some(ks.clone());
                Ok(Some(Response::SetKeyspace(ks.clone())))
            }
            Plan::Ddl(stmt) => self.run_ddl(stmt, ex.conn, outcome),
            Plan::Describe(d) => {
                let schema = self.schema();
                let ctx = describe::DescribeContext {
                    schema: &schema,
                    topology: ex.topology,
                    keyspace: ex.conn.keyspace.as_deref(),
                    superuser: self.config.credentials.is_some(),
                };
                let (metadata, rows) = describe::execute(d, &ctx)?;
                Ok(Some(Response::Rows(RowsResult {
                    metadata: Arc::new(metadata),
                    paging_state: None,
                    skip_metadata: ex.params.skip_metadata,
                    rows,
                })))
            }
        }
    }

    fn run_select(
        &self,
        p: &select::SelectPlan,
        ctx: &EvalCtx<'_>,
        ex: &mut Exec<'_>,
        stream: i16,
        out: &mut BytesMut,
    ) -> Answer {
        let schema = self.schema();
        let req = select::PageRequest {
            page_size: ex.params.page_size,
            paging_state: ex.params.paging_state.as_ref(),
            skip_metadata: ex.params.skip_metadata,
            limits: paging::PageLimits {
                bytes: self.config.query_page_size_in_bytes,
                tombstones: self.config.query_tombstone_page_limit,
            },
        };
        let now = self.now();
        if p.is_virtual() {
            let cdc = self.cdc_state();
            let view = system_tables::SystemView {
                schema: &schema,
                topology: ex.topology,
                coordinator: ex.conn.node,
                cdc: &cdc,
            };
            let mut data = new_data(&p.table)?;
            for m in system_tables::virtual_table_rows(&p.table, &view) {
                data.apply(&m, now);
            }
            select::execute_select(p, &data, ctx, req, now, out, stream)?;
            return Ok(None);
        }
        let tokens = match p.where_.partition_keys(&p.table, ctx)? {
            Some(keys) => consistency::Tokens::Some(keys.iter().map(|k| k.token).collect()),
            None => consistency::Tokens::All,
        };
        consistency::check(
            &schema,
            &p.table.keyspace,
            ex.topology,
            ex.params.consistency,
            &tokens,
            false,
        )?;
        let store = self.store_of(&p.table)?;
        let data = store.data.read();
        select::execute_select(p, &data, ctx, req, now, out, stream)?;
        Ok(None)
    }

    fn store_of(&self, table: &TableDef) -> Result<Arc<TableStore>, CqlError> {
        self.table_store(table.id)
            .ok_or_else(|| CqlError::invalid(format!("unconfigured table {}", table.name)))
    }

    /// Builds a statement's mutations, reading current lists where an operation needs them.
    fn build(
        &self,
        p: &ModifyPlan,
        ctx: &EvalCtx<'_>,
        wp: WriteParams,
    ) -> Result<Vec<PartitionMutation>, CqlError> {
        let needs_read = p.ops.iter().any(|o| {
            matches!(
                o,
                modify::Op::Remove(..) | modify::Op::SetElement(..) | modify::Op::DeleteElement(..)
            )
        });
        if !needs_read {
            return modify::build_mutations(p, ctx, wp, &|_, _, _| Vec::new());
        }
        let store = self.store_of(&p.table)?;
        let data = store.data.read();
        let now = self.now();
        modify::build_mutations(p, ctx, wp, &|pk, ck, col| {
            read_list(&data, pk, ck, col, now)
        })
    }

    fn check_write_consistency(
        &self,
        ex: &Exec<'_>,
        table: &TableDef,
        muts: &[PartitionMutation],
    ) -> Result<(), CqlError> {
        let schema = self.schema();
        consistency::check(
            &schema,
            &table.keyspace,
            ex.topology,
            ex.params.consistency,
            &consistency::Tokens::Some(muts.iter().map(|m| m.key.token).collect()),
            true,
        )
    }

    /// The write path: applies mutations of one table under its lock, with their CDC log
    /// rows when the table logs. Every INSERT, UPDATE, DELETE, BATCH and LWT goes through here
    /// (or through [`Database::write_planned`] / [`Database::apply_locked`] once its CDC side
    /// is planned).
    pub(crate) fn write(
        &self,
        table: &TableDef,
        mutations: Vec<PartitionMutation>,
    ) -> Result<(), CqlError> {
        let schema = self.schema();
        let cdc = self.cdc_write(&schema, table, &mutations)?;
        self.write_planned(table, &mutations, cdc.as_ref())
    }

    /// Applies mutations of one table whose CDC side is already planned (and admitted).
    fn write_planned(
        &self,
        table: &TableDef,
        mutations: &[PartitionMutation],
        cdc: Option<&CdcWrite>,
    ) -> Result<(), CqlError> {
        let store = self.store_of(table)?;
        let now = self.now();
        let Some(cdc) = cdc else {
            let mut data = store.data.write();
            for m in mutations {
                self.apply_locked(table, &mut data, m, None, now);
            }
            return Ok(());
        };
        // The log rows are applied after the base table's lock is released (log rows of
        // different writes never share a key, so the order they land in does not matter).
        let columns = cdc.resolve_columns(table);
        let mut log_rows = Vec::with_capacity(mutations.len());
        {
            let mut data = store.data.write();
            for (i, m) in mutations.iter().enumerate() {
                #[cfg(test)]
                self.applied.lock().push(m.clone());
                log_rows.extend(self.apply_base_logged(
                    table,
                    &mut data,
                    m,
                    (cdc, i, &columns),
                    now,
                ));
            }
        }
        cdc.apply_log(&log_rows, now);
        Ok(())
    }

    /// Applies one base mutation with the table's lock held, and its CDC log rows (the log
    /// table's lock is taken after the base table's: lock order base → log).
    fn apply_locked(
        &self,
        table: &TableDef,
        data: &mut TableData,
        m: &PartitionMutation,
        cdc: Option<(&CdcWrite, usize)>,
        now: Now,
    ) {
        #[cfg(test)]
        self.applied.lock().push(m.clone());
        self.apply_with_log(table, data, m, cdc, now);
    }

    /// Runs a CAS request (one conditional statement, or a conditional batch on one
    /// partition) atomically under the table's lock, as [`lwt`] describes.
    fn run_conditional(
        &self,
        items: &[(&ModifyPlan, EvalCtx<'_>)],
        batch: bool,
        ex: &mut Exec<'_>,
    ) -> Answer {
        let Some((first, _)) = items.first() else {
            return Ok(Some(Response::Void));
        };
        let table = first.table.clone();
        let schema = self.schema();
        let (key, request) = lwt::cas_partition(items, batch)?;
        check_cas_consistency(&schema, &table.keyspace, key.token, ex)?;
        let store = self.store_of(&table)?;
        let now = self.now();
        let ts = self.next_timestamp();
        let mut data = store.data.write();
        let (applied, rows) = {
            let prefetch = lwt::Prefetch::read(&data, &key, &request, now)?;
            let applied = prefetch.applies(&request)?;
            let cols = lwt::result_columns(&request, batch);
            let rows = prefetch.result_rows(&request, &cols, applied)?;
            (applied, (cols, rows))
        };
        if applied {
            self.apply_cas(&schema, &table, &mut data, &request, ts, now)?;
        }
        drop(data);
        let (cols, rows) = rows;
        Ok(Some(lwt::answer(&table, &cols, rows)))
    }

    /// Writes the statements of an applied CAS request into the locked `data`, merged
    /// into one mutation of its partition, each at the transaction's timestamp `ts`.
    fn apply_cas(
        &self,
        schema: &Schema,
        table: &Arc<TableDef>,
        data: &mut TableData,
        request: &[lwt::CasItem<'_, '_>],
        ts: Timestamp,
        now: Now,
    ) -> Result<(), CqlError> {
        let mut merged: Vec<PartitionMutation> = Vec::new();
        for (p, ctx) in request {
            // Every statement is written at the transaction's timestamp
            // (`cas_request::apply_updates`), whatever its own USING TIMESTAMP.
            let wp = WriteParams {
                ts,
                ttl: modify::write_params(p, ctx, ts)?.ttl,
            };
            let muts = modify::build_mutations(p, ctx, wp, &|pk, ck, col| {
                read_list(data, pk, ck, col, now)
            })?;
            for m in muts {
                match merged.first_mut() {
                    Some(acc) => acc.merge(m),
                    None => merged.push(m),
                }
            }
        }
        let cdc = self.cdc_write(schema, table, &merged)?;
        for (i, m) in merged.iter().enumerate() {
            self.apply_locked(table, data, m, cdc.as_ref().map(|c| (c, i)), now);
        }
        Ok(())
    }

    /// Runs a batch: every statement's mutations merged per (table, partition), then
    /// applied.
    fn run_batch(
        &self,
        items: &[(&ModifyPlan, EvalCtx<'_>)],
        batch_ts: Option<i64>,
        ex: &mut Exec<'_>,
    ) -> Answer {
        for (p, _) in items {
            p.validate()?;
        }
        if items.iter().any(|(p, _)| p.is_conditional()) {
            return self.run_conditional(items, true, ex);
        }
        let default_ts = batch_ts
            .or(ex.params.timestamp)
            .unwrap_or_else(|| self.next_timestamp());
        // (table, token, key) -> index in `merged`, in order of first appearance.
        let mut index: HashMap<(Uuid, i64, Bytes), usize> = HashMap::new();
        let mut merged: Vec<(Arc<TableDef>, PartitionMutation)> = Vec::new();
        for (p, ctx) in items {
            let wp = modify::write_params(p, ctx, default_ts)?;
            for m in self.build(p, ctx, wp)? {
                let k = (p.table.id, m.key.token, m.key.bytes.clone());
                match index.get(&k) {
                    Some(&i) => merged[i].1.merge(m),
                    None => {
                        index.insert(k, merged.len());
                        merged.push((p.table.clone(), m));
                    }
                }
            }
        }
        for (t, m) in &merged {
            self.check_write_consistency(ex, t, std::slice::from_ref(m))?;
        }
        // Every partition's CDC stream is chosen (and its timestamp admitted) before anything
        // of the batch is applied.
        let schema = self.schema();
        let mut planned = Vec::with_capacity(merged.len());
        for (t, m) in merged {
            let cdc = self.cdc_write(&schema, &t, std::slice::from_ref(&m))?;
            planned.push((t, m, cdc));
        }
        for (t, m, cdc) in &planned {
            self.write_planned(t, std::slice::from_ref(m), cdc.as_ref())?;
        }
        Ok(Some(Response::Void))
    }

    /// The BATCH opcode: text and prepared entries with their own values.
    fn batch_request(&self, topology: &Topology, conn: &mut ConnState, b: &BatchRequest) -> Answer {
        let kind = match b.kind {
            frame::BatchKind::Logged => BatchKind::Logged,
            frame::BatchKind::Unlogged => BatchKind::Unlogged,
            frame::BatchKind::Counter => BatchKind::Counter,
        };
        let mut planned = Vec::with_capacity(b.statements.len());
        for s in &b.statements {
            let cached = match &s.query {
                BatchQuery::Text(t) => self.cached_unprepared(conn.keyspace.as_deref(), t)?,
                BatchQuery::Prepared(id) => self
                    .prepared
                    .read()
                    .get(id)
                    .cloned()
                    .ok_or_else(|| unprepared(id))?,
            };
            planned.push(self.planned(&cached)?);
        }
        let mut items = Vec::with_capacity(planned.len());
        for (p, s) in planned.iter().zip(&b.statements) {
            let Plan::Modify(m) = &p.plan else {
                return Err(CqlError::invalid(
                    "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.",
                ));
            };
            let expected = p.metadata.variables.len();
            if s.values.len() != expected {
                return Err(CqlError::invalid(format!(
                    "There were {expected} markers(?) in CQL but {} bound variables",
                    s.values.len()
                )));
            }
            items.push((&**m, &s.values));
        }
        let refs: Vec<&ModifyPlan> = items.iter().map(|(m, _)| *m).collect();
        batch::validate_batch(kind, &refs, false)?;
        let values = items
            .iter()
            .map(|(m, v)| modify::bind_values(m, v))
            .collect::<Result<Vec<_>, _>>()?;
        let items: Vec<(&ModifyPlan, EvalCtx<'_>)> = items
            .iter()
            .zip(&values)
            .map(|((m, _), v)| (*m, EvalCtx { values: v }))
            .collect();
        let params = QueryParams {
            consistency: b.consistency,
            values: Vec::new(),
            names: None,
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: b.serial_consistency,
            timestamp: b.timestamp,
        };
        let mut ex = Exec {
            topology,
            conn,
            params: &params,
            values: &[],
        };
        self.run_batch(&items, None, &mut ex)
    }

    /// Runs a DDL statement: the new schema is swapped in after the storage changes.
    fn run_ddl(&self, stmt: &Statement, conn: &ConnState, outcome: &mut Outcome) -> Answer {
        let _guard = self.ddl_lock.lock();
        let schema = self.schema();
        let ctx = ddl::DdlContext {
            keyspace: conn.keyspace.as_deref(),
            now_micros: self.clock.now_micros(),
            default_cdc_ttl: self.config.default_cdc_ttl,
        };
        let result = ddl::execute_ddl(&schema, stmt, &ctx)?;
        let mut builds = Vec::new();
        for change in result.storage {
            match change {
                ddl::StorageChange::CreateTable(t) => {
                    // A CDC log in a tablet keyspace gets its base table's first stream set.
                    if let TableKind::CdcLog { base } = &t.kind {
                        let new = result.schema.as_ref().unwrap_or(&schema);
                        if let (Some(ks), Some(base)) =
                            (new.keyspace(&t.keyspace), new.table(&t.keyspace, base))
                            && let Some(tablets) = ks.initial_tablets
                        {
                            self.create_tablet_streams(base, ddl::tablet_count(tablets));
                        }
                    }
                    if t.kind != TableKind::Virtual {
                        let mut tables = self.tables.write();
                        if let std::collections::hash_map::Entry::Vacant(e) = tables.entry(t.id) {
                            e.insert(Arc::new(TableStore {
                                data: RwLock::new(new_data(&t)?),
                            }));
                        }
                    }
                }
                ddl::StorageChange::DropTable(id) => {
                    self.tables.write().remove(&id);
                    self.drop_tablet_streams(id);
                }
                ddl::StorageChange::DropColumns { table, columns } => {
                    if let Some(store) = self.table_store(table) {
                        let mut data = store.data.write();
                        for c in columns {
                            data.drop_column(c);
                        }
                    }
                }
                ddl::StorageChange::Truncate(id) => {
                    if let Some(store) = self.table_store(id) {
                        store.data.write().truncate();
                    }
                }
                ddl::StorageChange::BuildView(v) => builds.push(v),
            }
        }
        if let Some(new) = result.schema {
            *self.schema.write() = Arc::new(new);
        }
        // Views are built once writes see them, so no write to the base is missed.
        for v in builds {
            self.build_view(&v);
        }
        outcome.schema_changes = result.events;
        outcome.warnings = result.warnings;
        match result.change {
            Some(change) => Ok(Some(Response::SchemaChange(change))),
            None => Ok(Some(Response::Void)),
        }
    }
}

/// A fresh store for a table (`None` for a table the storage cannot hold).
fn new_store(t: &TableDef) -> Option<TableStore> {
    new_data(t).ok().map(|d| TableStore {
        data: RwLock::new(d),
    })
}

/// Empty data with the table's clustering order.
fn new_data(t: &TableDef) -> Result<TableData, CqlError> {
    TableData::new(&t.clustering_descending()).map_err(|e| CqlError::invalid(e.to_string()))
}

/// The consistency checks of a CAS request on the partition of `token`: its serial
/// consistency for the Paxos round, then its consistency for the commit.
fn check_cas_consistency(
    schema: &Schema,
    keyspace: &str,
    token: i64,
    ex: &Exec<'_>,
) -> Result<(), CqlError> {
    let serial = ex.params.serial_consistency.unwrap_or(Consistency::Serial);
    let tokens = consistency::Tokens::Some(vec![token]);
    consistency::check(schema, keyspace, ex.topology, serial, &tokens, false)?;
    consistency::check(
        schema,
        keyspace,
        ex.topology,
        ex.params.consistency,
        &tokens,
        true,
    )
}

/// The live (key, value) elements of a list cell.
fn read_list(
    data: &TableData,
    pk: &crate::storage::PartitionKey,
    ck: Option<&[Value]>,
    col: crate::storage::ColumnId,
    now: Now,
) -> Vec<(Value, Value)> {
    let Some(pv) = data.partition(pk.token, &pk.bytes, now) else {
        return Vec::new();
    };
    let row = match ck {
        None => pv.static_row(),
        Some(ck) => pv.row(ck),
    };
    match row.and_then(|r| r.cell(col)) {
        Some(crate::storage::CellView::Collection(c)) => {
            c.iter().map(|e| (e.key.clone(), e.value.clone())).collect()
        }
        _ => Vec::new(),
    }
}

/// The id of a prepared statement: MD5 of the keyspace (when set) and the text.
fn statement_id(keyspace: Option<&str>, text: &str) -> Bytes {
    let mut h = Md5::new();
    if let Some(ks) = keyspace {
        h.update(ks.as_bytes());
    }
    h.update(text.as_bytes());
    Bytes::copy_from_slice(&h.finalize())
}

/// The Unprepared error (0x2500) for an unknown statement id, with Cassandra's message.
fn unprepared(id: &Bytes) -> CqlError {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    CqlError::unprepared(
        id.clone(),
        format!(
            "Prepared query with ID {hex} not found (either the query was not prepared on this host (maybe the host has been restarted?) or you have prepared too many queries and it has been evicted from the internal cache)"
        ),
    )
}

/// The values in marker order, resolving names when the client sent them (flag 0x40).
fn named_values(planned: &Planned, params: &QueryParams) -> Result<Vec<BoundValue>, CqlError> {
    let Some(names) = &params.names else {
        return Ok(params.values.clone());
    };
    let vars = &planned.metadata.variables;
    let mut out = vec![BoundValue::Unset; vars.len()];
    for (name, v) in names.iter().zip(&params.values) {
        let lname = name.to_lowercase();
        let mut found = false;
        for (i, var) in vars.iter().enumerate() {
            if var.name == *name || var.name == lname {
                out[i] = v.clone();
                found = true;
            }
        }
        if !found {
            return Err(CqlError::invalid(format!("Invalid named value: {name}")));
        }
    }
    if names.len() != params.values.len() {
        return Err(CqlError::invalid("Names and values do not match"));
    }
    Ok(out)
}
