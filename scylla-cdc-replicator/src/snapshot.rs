//! `--snapshot`: copy every row of a source table as of the snapshot time T, then replicate
//! its CDC log from T.
//!
//! # The snapshot time
//!
//! T is the launch time of the first run of a snapshot (saved in the progress table, so a
//! resumed copy keeps it). The copy scans the table after T, so it sees every write
//! acknowledged before T; the log is then read from T minus `--safety-interval` (unless a
//! CDC checkpoint of an earlier run exists), so a write still in flight around T is replayed
//! as well. Changes written during the copy are in the log and replayed after it.
//!
//! # Why the overlap is safe
//!
//! Every cell is copied with its source write time (`WRITETIME`) and remaining TTL (`TTL`):
//! the copied value of a cell is exactly the source cell, so whether the copy or the log's
//! replay of a change lands first, the destination's last-write-wins reconciliation keeps the
//! newer one, as the source did. A row deleted after the scan read it is copied with its old
//! timestamps and then deleted by the log's newer tombstone; a row overwritten after the
//! scan is copied with the old value and old timestamp, which the log's newer write beats.
//!
//! # How a row is written
//!
//! The cells of a row can have different write times and TTLs: they are grouped by (write
//! time, TTL) and each group is one statement with `USING TIMESTAMP <writetime> AND TTL
//! <remaining>`, all of a row in one unlogged batch (one partition). The oldest group of a
//! row is an `INSERT` (which also writes the row marker, so a row inserted with `INSERT`
//! lives on when its cells are nulled), the others `UPDATE`s. Static cells are written once
//! per partition (`UPDATE ... WHERE <partition key>`). A row without any non-key cell (only
//! its row marker, whose timestamp a scan cannot read) is inserted `USING TIMESTAMP T`: a
//! delete after the scan has a newer timestamp and still wins.
//!
//! # What is refused
//!
//! Non-frozen collections (lists, sets, maps) and non-frozen UDTs: each element or field has
//! its own write time and TTL, which `WRITETIME`/`TTL` cannot return for the column, so
//! writing the column with one timestamp (the newest element's, say) could resurrect an
//! element the log deletes with an older timestamp than that, or lose one it adds. Counters:
//! a counter cell has no write time to copy, and an increment made during the copy would be
//! counted twice (once in the scanned total, once replayed from the log). Tables with such
//! columns are refused at start, naming the columns ([`check_copyable`]). Frozen collections
//! and UDTs, tuples and vectors are one cell each and are copied exactly.
//!
//! # Progress
//!
//! The ring is split into [`SNAPSHOT_RANGES`] token ranges, copied `--snapshot-parallelism`
//! at a time; a range holds at most one page of the scan and a bounded number of writes in
//! flight in memory. A range is saved done in the progress table (`<checkpoint table>_snapshot`
//! in the source cluster, see [`ProgressTable`]) once every write of it has completed; a run
//! restarted with the same arguments skips the ranges saved done, and once every range is
//! done goes straight to replicating the log.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use scylla::client::session::Session;
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use scylla_cdc::Backoff;
use scylla_cdc::cli::{CliError, QualifiedTable, Shutdown, error_chain, retry_startup};
use tokio::task::JoinSet;
use tracing::info;

use crate::destination::Destination;
use crate::scan::{ScanError, ScanPlan, Side, token_ranges};
use crate::schema::{ColumnKind, CqlType, TableSchema, ValueKind, quote};
use crate::translate::{Assign, Shape, Write};

/// Number of token ranges the ring is split into for the copy (and the unit of its
/// progress).
pub const SNAPSHOT_RANGES: u32 = 256;

/// Rows per page of the copy's scans.
const PAGE_SIZE: i32 = 1000;

/// Most rows of one range being written at once.
const ROWS_IN_FLIGHT: usize = 64;

/// Checks that every column of `schema` can be copied exactly (see the module docs): the
/// error is one line naming each column that cannot, and why.
pub fn check_copyable(schema: &TableSchema) -> Result<(), String> {
    let mut refused = Vec::new();
    for c in &schema.columns {
        let why = if c.typ == CqlType::Native("counter".into()) {
            "a counter (it has no write time to copy, and increments made during the copy \
             would be counted twice)"
        } else {
            match c.value_kind {
                ValueKind::Atomic => continue,
                ValueKind::List | ValueKind::Set | ValueKind::Map => {
                    "a non-frozen collection (its elements have their own write times, which \
                     WRITETIME cannot return: freeze it, or copy the table another way)"
                }
                ValueKind::Udt(_) => {
                    "a non-frozen UDT (its fields have their own write times, which WRITETIME \
                     cannot return: freeze it, or copy the table another way)"
                }
            }
        };
        refused.push(format!("column `{}` ({}) is {why}", c.name, c.typ.cql()));
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "--snapshot cannot copy `{}.{}` exactly: {}",
            schema.keyspace,
            schema.table,
            refused.join("; ")
        ))
    }
}

/// The table saving which token ranges of a snapshot are copied, in the source cluster:
/// `<checkpoint table>_snapshot`, one partition per (source keyspace, source table,
/// destination keyspace), one row per range done (`rows_copied`, and `run_micros`: the launch
/// time of the run that copied it), and the row `(range_start, range_end) = (MIN, MIN)`
/// holding the snapshot time (`snapshot_micros`).
pub struct ProgressTable {
    session: Arc<Session>,
    select: PreparedStatement,
    insert: PreparedStatement,
    key: (String, String, String),
}

/// The clustering key of the row holding the snapshot time (no range is empty).
const START_ROW: (i64, i64) = (i64::MIN, i64::MIN);

/// What a progress table says about a snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedProgress {
    /// The snapshot time (µs since the epoch), if a copy was started.
    pub snapshot_micros: Option<i64>,
    /// The ranges `(start, end]` copied.
    pub done: HashSet<(i64, i64)>,
}

/// A query error as a program error (transient ones retried at start-up).
fn query_error(what: &str, e: &(dyn std::error::Error + 'static), transient: bool) -> CliError {
    let message = format!("{what}: {}", error_chain(e));
    if transient {
        CliError::transient(message)
    } else {
        CliError::runtime(message)
    }
}

impl ProgressTable {
    /// The name of the progress table of checkpoint table `cp`.
    pub fn name(cp: &QualifiedTable) -> QualifiedTable {
        QualifiedTable {
            keyspace: cp.keyspace.clone(),
            table: format!("{}_snapshot", cp.table),
        }
    }

    /// Opens (creating it if missing) the progress table of checkpoint table `cp`, for the
    /// snapshot of `keyspace.table` into `destination_keyspace`.
    pub async fn open(
        session: Arc<Session>,
        cp: &QualifiedTable,
        keyspace: &str,
        table: &str,
        destination_keyspace: &str,
    ) -> Result<ProgressTable, CliError> {
        let name = Self::name(cp);
        let target = format!("{}.{}", quote(&name.keyspace), quote(&name.table));
        let create = format!(
            "CREATE TABLE IF NOT EXISTS {target} (source_keyspace text, source_table text, \
             destination_keyspace text, range_start bigint, range_end bigint, \
             snapshot_micros bigint, rows_copied bigint, run_micros bigint, \
             PRIMARY KEY ((source_keyspace, source_table, destination_keyspace), range_start, \
             range_end))"
        );
        let what = format!("creating the snapshot progress table {target}");
        session
            .query_unpaged(create, ())
            .await
            .map_err(|e| query_error(&what, &e, scylla_cdc::is_transient(&e)))?;
        let prepare = |text: String| {
            let session = session.clone();
            async move {
                session.prepare(text.clone()).await.map_err(|e| {
                    query_error(
                        &format!("preparing `{text}`"),
                        &e,
                        scylla_cdc::is_transient_prepare(&e),
                    )
                })
            }
        };
        let mut select = prepare(format!(
            "SELECT range_start, range_end, snapshot_micros FROM {target} WHERE \
             source_keyspace = ? AND source_table = ? AND destination_keyspace = ?"
        ))
        .await?;
        select.set_consistency(Consistency::Quorum);
        let mut insert = prepare(format!(
            "INSERT INTO {target} (source_keyspace, source_table, destination_keyspace, \
             range_start, range_end, snapshot_micros, rows_copied, run_micros) VALUES \
             (?, ?, ?, ?, ?, ?, ?, ?)"
        ))
        .await?;
        insert.set_consistency(Consistency::Quorum);
        insert.set_is_idempotent(true);
        Ok(ProgressTable {
            session,
            select,
            insert,
            key: (
                keyspace.to_owned(),
                table.to_owned(),
                destination_keyspace.to_owned(),
            ),
        })
    }

    /// Reads the saved progress.
    pub async fn load(&self) -> Result<SavedProgress, CliError> {
        let what = "reading the snapshot progress";
        let pager = self
            .session
            .execute_iter(self.select.clone(), &self.key)
            .await
            .map_err(|e| query_error(what, &e, true))?;
        let rows = pager
            .rows_stream::<(i64, i64, Option<i64>)>()
            .map_err(|e| query_error(what, &e, false))?;
        let rows: Vec<_> = rows
            .try_collect()
            .await
            .map_err(|e| query_error(what, &e, true))?;
        let mut saved = SavedProgress::default();
        for (start, end, snapshot) in rows {
            if (start, end) == START_ROW {
                saved.snapshot_micros = snapshot;
            } else {
                saved.done.insert((start, end));
            }
        }
        Ok(saved)
    }

    /// Saves a row, retrying transient failures.
    async fn save(
        &self,
        range: (i64, i64),
        snapshot: Option<i64>,
        rows: Option<i64>,
        run: Option<i64>,
        give_up_after: Option<Duration>,
    ) -> Result<(), CliError> {
        let (ks, t, dks) = &self.key;
        let values = (ks, t, dks, range.0, range.1, snapshot, rows, run);
        let mut backoff = Backoff::new(give_up_after);
        loop {
            match self.session.execute_unpaged(&self.insert, &values).await {
                Ok(_) => return Ok(()),
                Err(e) if scylla_cdc::is_transient(&e) => {
                    if !backoff.wait("saving the snapshot progress", &e).await {
                        return Err(query_error("saving the snapshot progress", &e, true));
                    }
                }
                Err(e) => return Err(query_error("saving the snapshot progress", &e, false)),
            }
        }
    }
}

/// How a snapshot copy runs.
#[derive(Debug, Clone)]
pub struct CopySettings {
    /// Consistency of the scans.
    pub consistency: Consistency,
    /// Ranges copied at once.
    pub parallelism: usize,
    /// How long a failing scan is retried while it fails transiently (`None`: forever).
    pub give_up_after: Option<Duration>,
    /// Time between progress lines.
    pub progress_interval: Duration,
    /// The launch time of this run (µs), saved with each range it copies.
    pub run_micros: i64,
}

/// What a snapshot copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CopyReport {
    /// The snapshot time (µs since the epoch).
    pub snapshot_micros: i64,
    /// Rows copied by this run.
    pub rows_copied: u64,
    /// Ranges copied by this run.
    pub ranges_copied: u64,
    /// Ranges skipped, saved done by an earlier run.
    pub ranges_skipped: u64,
    /// How long the copy took.
    pub elapsed: Duration,
}

/// What the range copies share.
struct CopyContext {
    source: Arc<Session>,
    statement: PreparedStatement,
    plan: ScanPlan,
    schema: Arc<TableSchema>,
    destination: Arc<Destination>,
    snapshot_micros: i64,
    rows: AtomicU64,
    ranges_done: AtomicU64,
}

/// Why copying a range failed.
enum CopyError {
    /// The scan failed.
    Scan(ScanError),
    /// A write failed (after its own retries of transient errors).
    Write(String),
}

impl From<ScanError> for CopyError {
    fn from(e: ScanError) -> Self {
        CopyError::Scan(e)
    }
}

/// The `CqlValue::Int` / `BigInt` of a scanned cell.
fn int_cell(row: &Row, i: usize) -> Option<i64> {
    match row.columns.get(i) {
        Some(Some(CqlValue::BigInt(v))) => Some(*v),
        Some(Some(CqlValue::Int(v))) => Some(i64::from(*v)),
        _ => None,
    }
}

/// The cells written by one statement: (static, write time, TTL in seconds or 0).
type CellGroup = (bool, i64, i64);

/// The writes that copy one scanned row (see the module docs); `with_static`: also its
/// partition's static cells (on the first row of each partition).
fn row_writes(
    plan: &ScanPlan,
    schema: &TableSchema,
    row: &Row,
    with_static: bool,
    snapshot_micros: i64,
) -> Result<Vec<Write>, String> {
    let keys = plan.key_names.len();
    let pk_len = schema.partition_key_len;
    let key_values: Vec<Option<CqlValue>> =
        row.columns.iter().skip(1).take(keys).cloned().collect();
    let has_row = key_values.iter().all(Option::is_some);
    let mut groups: Vec<(CellGroup, Vec<(u16, CqlValue)>)> = Vec::new();
    let mut at = 1 + keys;
    for (i, c) in plan.columns.iter().enumerate() {
        let index = keys + i;
        let column = schema
            .columns
            .get(index)
            .ok_or_else(|| format!("no column {index} in the schema"))?;
        let is_static = column.kind == ColumnKind::Static;
        let (writetime, ttl) = if c.timed {
            at += 2;
            (int_cell(row, at - 2), int_cell(row, at - 1).unwrap_or(0))
        } else {
            return Err(format!("column `{}` cannot be copied", c.name));
        };
        let value = row.columns.get(at).cloned().flatten();
        at += 1;
        let (Some(value), Some(writetime)) = (value, writetime) else {
            continue;
        };
        if (is_static && !with_static) || (!is_static && !has_row) {
            continue;
        }
        let id = (is_static, writetime, ttl);
        let index = u16::try_from(index).map_err(|_| "too many columns".to_owned())?;
        match groups.iter_mut().find(|(k, _)| *k == id) {
            Some((_, cells)) => cells.push((index, value)),
            None => groups.push((id, vec![(index, value)])),
        }
    }
    groups.sort_by_key(|((st, wt, _), _)| (*st, *wt));
    let mut writes = Vec::with_capacity(groups.len() + 1);
    let mut inserted = false;
    for ((is_static, writetime, ttl), cells) in groups {
        let ttl = Some(CqlValue::Int(i32::try_from(ttl).unwrap_or(i32::MAX)));
        let timestamp = Some(CqlValue::BigInt(writetime));
        if !is_static && !inserted {
            inserted = true;
            let mut values = key_values.clone();
            let columns = cells.iter().map(|(c, _)| *c).collect();
            values.extend(cells.into_iter().map(|(_, v)| Some(v)));
            values.extend([ttl, timestamp]);
            writes.push(Write {
                shape: Shape::Insert { columns },
                values,
            });
        } else {
            let assigns = cells.iter().map(|(c, _)| Assign::Set(*c)).collect();
            let mut values = vec![ttl, timestamp];
            values.extend(cells.into_iter().map(|(_, v)| Some(v)));
            let key_len = if is_static { pk_len } else { keys };
            values.extend(key_values.iter().take(key_len).cloned());
            writes.push(Write {
                shape: Shape::Update {
                    static_row: is_static,
                    assigns,
                },
                values,
            });
        }
    }
    if has_row && !inserted {
        // Only the row marker: its timestamp cannot be read, T is used (module docs).
        let mut values = key_values;
        values.extend([
            Some(CqlValue::Int(0)),
            Some(CqlValue::BigInt(snapshot_micros)),
        ]);
        writes.push(Write {
            shape: Shape::Insert {
                columns: Vec::new(),
            },
            values,
        });
    }
    Ok(writes)
}

/// Waits for one write task, counting its row.
async fn join_one(tasks: &mut JoinSet<anyhow::Result<()>>) -> Result<(), CopyError> {
    match tasks.join_next().await {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(CopyError::Write(format!("{e:#}"))),
        Some(Err(e)) => Err(CopyError::Write(format!("a write task failed: {e}"))),
    }
}

/// Copies one token range once; returns its rows.
async fn copy_range(ctx: &CopyContext, range: (i64, i64)) -> Result<u64, CopyError> {
    let mut side = Side::open("source", &ctx.source, &ctx.statement, range).await?;
    let mut tasks = JoinSet::new();
    let mut rows = 0u64;
    let pk_len = ctx.schema.partition_key_len;
    let mut last_partition: Option<Vec<Option<CqlValue>>> = None;
    while let Some(row) = side.next().await? {
        let partition: Vec<Option<CqlValue>> =
            row.columns.iter().skip(1).take(pk_len).cloned().collect();
        let first_of_partition = last_partition.as_ref() != Some(&partition);
        let writes = row_writes(
            &ctx.plan,
            &ctx.schema,
            &row,
            first_of_partition,
            ctx.snapshot_micros,
        )
        .map_err(CopyError::Write)?;
        last_partition = Some(partition);
        rows += 1;
        ctx.rows.fetch_add(1, Ordering::Relaxed);
        if writes.is_empty() {
            continue;
        }
        let destination = ctx.destination.clone();
        tasks.spawn(async move { destination.apply(writes).await });
        while tasks.len() >= ROWS_IN_FLIGHT {
            join_one(&mut tasks).await?;
        }
    }
    while !tasks.is_empty() {
        join_one(&mut tasks).await?;
    }
    Ok(rows)
}

/// Copies a range, retrying it whole after a transient scan failure, and saves it done.
async fn copy_range_retrying(
    ctx: &CopyContext,
    progress: Option<&ProgressTable>,
    settings: &CopySettings,
    range: (i64, i64),
) -> Result<u64, CliError> {
    let mut backoff = Backoff::new(settings.give_up_after);
    let what = format!("copying token range ({}, {}]", range.0, range.1);
    let rows = loop {
        match copy_range(ctx, range).await {
            Ok(rows) => break rows,
            Err(CopyError::Scan(e)) if e.transient => {
                if !backoff.wait(&what, &e).await {
                    return Err(CliError::transient(format!("{what}: {e}")));
                }
            }
            Err(CopyError::Scan(e)) => return Err(CliError::runtime(format!("{what}: {e}"))),
            Err(CopyError::Write(e)) => return Err(CliError::runtime(format!("{what}: {e}"))),
        }
    };
    if let Some(p) = progress {
        let count = i64::try_from(rows).unwrap_or(i64::MAX);
        p.save(
            range,
            None,
            Some(count),
            Some(settings.run_micros),
            settings.give_up_after,
        )
        .await?;
    }
    ctx.ranges_done.fetch_add(1, Ordering::Relaxed);
    Ok(rows)
}

/// The snapshot time of a copy: the saved one, else `launched` (saved first).
pub async fn snapshot_time(
    progress: Option<&ProgressTable>,
    saved: &SavedProgress,
    launched_micros: i64,
    give_up_after: Option<Duration>,
) -> Result<i64, CliError> {
    if let Some(t) = saved.snapshot_micros {
        return Ok(t);
    }
    if let Some(p) = progress {
        p.save(START_ROW, Some(launched_micros), None, None, give_up_after)
            .await?;
    }
    Ok(launched_micros)
}

/// Copies `schema`'s table from `source` to `destination` as of `snapshot_micros`, skipping
/// the ranges of `saved` and saving each range done in `progress`. Stops with an error of
/// exit code 0 when `shutdown` is requested (the ranges done are kept).
#[allow(clippy::too_many_arguments)]
pub async fn copy_table(
    source: Arc<Session>,
    destination: Arc<Destination>,
    schema: Arc<TableSchema>,
    progress: Option<&ProgressTable>,
    saved: &SavedProgress,
    snapshot_micros: i64,
    settings: &CopySettings,
    mut shutdown: Shutdown,
) -> Result<CopyReport, CliError> {
    check_copyable(&schema).map_err(CliError::schema)?;
    let name = format!("{}.{}", schema.keyspace, schema.table);
    let plan = ScanPlan::new(&schema);
    let text = plan.statement(&schema.keyspace, &schema.table, schema.partition_key_len);
    let statement = retry_startup(
        "preparing the snapshot scan",
        settings.give_up_after,
        || {
            let source = source.clone();
            let text = text.clone();
            async move {
                let mut p = source.prepare(text.clone()).await.map_err(|e| {
                    query_error(
                        &format!("preparing `{text}`"),
                        &e,
                        scylla_cdc::is_transient_prepare(&e),
                    )
                })?;
                p.set_page_size(PAGE_SIZE);
                p.set_consistency(settings.consistency);
                p.set_is_idempotent(true);
                Ok(p)
            }
        },
    )
    .await?;
    let ranges: Vec<(i64, i64)> = token_ranges(SNAPSHOT_RANGES)
        .into_iter()
        .filter(|r| !saved.done.contains(r))
        .collect();
    let total = u64::from(SNAPSHOT_RANGES);
    let skipped = total - ranges.len() as u64;
    let ctx = CopyContext {
        source,
        statement,
        plan,
        schema,
        destination,
        snapshot_micros,
        rows: AtomicU64::new(0),
        ranges_done: AtomicU64::new(skipped),
    };
    info!(
        table = %name,
        snapshot_micros,
        ranges = total,
        ranges_skipped = skipped,
        parallelism = settings.parallelism,
        "snapshot: copying {name} ({} of {total} ranges left)",
        ranges.len()
    );
    let started = Instant::now();
    let copies = stream::iter(ranges)
        .map(|r| copy_range_retrying(&ctx, progress, settings, r))
        .buffer_unordered(settings.parallelism.max(1))
        .try_for_each(|_| async { Ok(()) });
    tokio::pin!(copies);
    let mut ticks = tokio::time::interval(settings.progress_interval);
    ticks.tick().await; // the first tick is immediate
    let (mut last, mut last_at) = (0, Instant::now());
    loop {
        tokio::select! {
            r = &mut copies => { r?; break; }
            () = shutdown.requested() => {
                return Err(CliError::new(
                    scylla_cdc::cli::exit_code::OK,
                    format!(
                        "stopped during the snapshot copy of {name} ({} of {total} ranges \
                         done): restart with the same arguments to resume it",
                        ctx.ranges_done.load(Ordering::Relaxed)
                    ),
                ));
            }
            _ = ticks.tick() => {
                let rows = ctx.rows.load(Ordering::Relaxed);
                let rate = (rows - last) as f64 / last_at.elapsed().as_secs_f64().max(1e-9);
                let done = ctx.ranges_done.load(Ordering::Relaxed);
                info!(
                    table = %name,
                    ranges_done = done,
                    ranges_left = total - done,
                    rows_copied = rows,
                    "snapshot progress: {done}/{total} ranges copied, {} left, {rows} rows \
                     copied, {rate:.0} rows/s",
                    total - done
                );
                (last, last_at) = (rows, Instant::now());
            }
        }
    }
    let elapsed = started.elapsed();
    let rows = ctx.rows.load(Ordering::Relaxed);
    info!(
        table = %name,
        rows_copied = rows,
        "snapshot: copied {name} in {:.1}s, {rows} rows, {:.0} rows/s; replicating its log next",
        elapsed.as_secs_f64(),
        rows as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    Ok(CopyReport {
        snapshot_micros,
        rows_copied: rows,
        ranges_copied: total - skipped,
        ranges_skipped: skipped,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Column;

    fn schema(columns: &[(&str, ColumnKind, &str)]) -> TableSchema {
        let cols: Vec<Column> = columns
            .iter()
            .map(|(n, k, t)| {
                let typ = CqlType::parse(t).unwrap();
                let value_kind = match &typ {
                    CqlType::List(_) => ValueKind::List,
                    CqlType::Set(_) => ValueKind::Set,
                    CqlType::Map(..) => ValueKind::Map,
                    CqlType::Udt(_) => ValueKind::Udt(vec!["a".into()]),
                    _ => ValueKind::Atomic,
                };
                Column {
                    name: n.to_string(),
                    kind: *k,
                    typ,
                    desc: false,
                    value_kind,
                }
            })
            .collect();
        let pk = cols
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
            .count();
        let ck = cols
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .count();
        TableSchema {
            keyspace: "ks".into(),
            table: "t".into(),
            columns: cols,
            partition_key_len: pk,
            clustering_len: ck,
            udts: Vec::new(),
        }
    }

    #[test]
    fn refused_columns_are_named() {
        use ColumnKind::*;
        let ok = schema(&[
            ("pk", PartitionKey, "int"),
            ("v", Regular, "text"),
            ("f", Regular, "frozen<list<int>>"),
        ]);
        assert_eq!(check_copyable(&ok), Ok(()));
        let bad = schema(&[
            ("pk", PartitionKey, "int"),
            ("l", Regular, "list<int>"),
            ("n", Regular, "counter"),
        ]);
        let e = check_copyable(&bad).unwrap_err();
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("`ks.t`") && e.contains("column `l`") && e.contains("column `n`"));
    }

    #[test]
    fn cells_are_grouped_by_write_time_and_ttl() {
        use ColumnKind::*;
        let s = schema(&[
            ("pk", PartitionKey, "int"),
            ("ck", Clustering, "int"),
            ("st", Static, "int"),
            ("a", Regular, "int"),
            ("b", Regular, "int"),
            ("c", Regular, "int"),
        ]);
        let plan = ScanPlan::new(&s);
        let i = |v| Some(CqlValue::Int(v));
        let w = |v| Some(CqlValue::BigInt(v));
        // token, pk, ck, [wt, ttl, value] for st, a, b, c
        let row = Row {
            columns: vec![
                w(7),
                i(1),
                i(2),
                w(5),
                None,
                i(50),
                w(20),
                None,
                i(1),
                w(10),
                i(30),
                i(2),
                w(20),
                None,
                i(3),
            ],
        };
        let writes = row_writes(&plan, &s, &row, true, 99).unwrap();
        assert_eq!(writes.len(), 3, "{writes:?}");
        // The oldest regular group is the INSERT (row marker), then the newer one, then the
        // static cells of the partition.
        assert_eq!(writes[0].shape, Shape::Insert { columns: vec![4] });
        assert_eq!(writes[0].values, vec![i(1), i(2), i(2), i(30), w(10)]);
        assert_eq!(
            writes[1].shape,
            Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(3), Assign::Set(5)]
            }
        );
        assert_eq!(writes[1].values, vec![i(0), w(20), i(1), i(3), i(1), i(2)]);
        assert_eq!(
            writes[2].shape,
            Shape::Update {
                static_row: true,
                assigns: vec![Assign::Set(2)]
            }
        );
        assert_eq!(writes[2].values, vec![i(0), w(5), i(50), i(1)]);
        // Not the first row of its partition: no static cells.
        assert_eq!(row_writes(&plan, &s, &row, false, 99).unwrap().len(), 2);
        // A row without cells: its marker at the snapshot time.
        let mut bare = Row {
            columns: row.columns.clone(),
        };
        for c in bare.columns.iter_mut().skip(3) {
            *c = None;
        }
        let writes = row_writes(&plan, &s, &bare, true, 99).unwrap();
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].values, vec![i(1), i(2), i(0), w(99)]);
        // A partition with only its static row: no clustering row.
        let mut only_static = Row {
            columns: row.columns.clone(),
        };
        only_static.columns[2] = None;
        let writes = row_writes(&plan, &s, &only_static, true, 99).unwrap();
        assert_eq!(writes.len(), 1);
        assert!(matches!(
            writes[0].shape,
            Shape::Update {
                static_row: true,
                ..
            }
        ));
    }
}
