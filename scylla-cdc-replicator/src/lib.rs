//! `scylla-cdc-replicator`: replicate ScyllaDB tables into another cluster through their CDC
//! log.
//!
//! The binary (`src/main.rs`) is a thin wrapper around [`run`], which tests call directly.
//! [`Replicator::start`] connects to both clusters, reads each source table's schema
//! ([`schema`]), checks (or creates) the destination table, and starts one
//! [`scylla_cdc::CDCLogReader`] for all the tables, whose consumers
//! ([`apply::ReplicatorConsumer`], one per table and stream group) translate every change into CQL ([`translate`]) and write it to the
//! destination with the change's own timestamp. [`Replicator::run`] then supervises the
//! readers, logs progress every few seconds, and stops on a failure or a
//! [`Shutdown`] (flushing the writes in flight and saving a checkpoint first).
//!
//! # Guarantees
//!
//! * Convergence: every write carries `USING TIMESTAMP` of the source write (the time of
//!   `cdc$time`), and TTLs are the remaining source TTLs, so the destination's reconciliation
//!   gives the source's state whatever the order writes land in, and replaying a change (after
//!   a restart from a checkpoint) changes nothing — except for lists on a destination other
//!   than ScyllaDB (see below and [`translate::ListWrites::PostImage`]).
//! * Order: within a stream group, writes are issued in log order; up to `--max-in-flight`
//!   run concurrently, and stream groups run concurrently with each other.
//! * Progress: a checkpoint (in the source cluster) is only saved once every write before it
//!   has completed (the consumer's `flush`), so a restart never skips a change.
//! * List order: on a ScyllaDB destination, list elements are written with their source
//!   timeuuid keys (`SCYLLA_TIMEUUID_LIST_INDEX`), so destination lists have the source's
//!   order.
//!
//! # Destinations other than ScyllaDB
//!
//! At start the replicator checks whether the destination is ScyllaDB
//! ([`schema::is_scylla`]: `system_schema.scylla_tables` exists). Apache Cassandra and
//! Cassandra-compatible services lack `SCYLLA_TIMEUUID_LIST_INDEX`; every other statement the
//! replicator sends is plain CQL they accept (no `USING TIMEOUT`, `BYPASS CACHE` or `cdc`
//! option; destination tables are created without options). Changes of non-frozen lists are
//! then written as whole lists from the change's post-image ([`translate::ListWrites`]), so a
//! table with such lists needs the `postimage` CDC option on the source; without it the
//! replicator refuses to start, naming the columns ([`list_writes`]).
//!
//! # Schema changes while replicating
//!
//! A column added to a replicated table while the replicator runs is added to the destination
//! table (with its user type), and its values replicated from the first change that has it
//! ([`evolve`]). A dropped column stops the replicator with an error naming it: the
//! replicator never drops destination data by itself; drop it there too (or restart with
//! `--allow-extra-columns`) and restart, and replication resumes from that change.
//!
//! # Snapshot
//!
//! With `--snapshot` ([`snapshot`]), [`Replicator::start`] first copies every row of each
//! table as of the launch time T (each cell with its write time and TTL, by token range,
//! resumable), then starts its log reader from T minus the safety interval, so writes made
//! during the copy are replayed after it and win by their newer timestamps.
//!
//! # Replicas
//!
//! With `--group` ([`scylla_cdc::cli::GroupFlags`]) several replicators share the tables'
//! streams as members of a consumer group ([`scylla_cdc::CDCLogReaderBuilder::group`]): each
//! change is replicated by one of them, a replica that dies has its streams taken over after
//! the lease duration (the changes after its last checkpoint are written again, which changes
//! nothing, see Guarantees), and the replicas rebalance when one joins or stops. See
//! `docs/run-a-consumer-group.md` in the repository.
//!
//! # Verification
//!
//! `scylla-cdc-replicator verify` ([`verify`], a command of its own) compares a table with
//! its replica by token range and reports the rows missing, extra or different on the
//! destination, exiting with [`args::EXIT_DIFFERENT`] when they differ; a replication run with
//! `--end` and `--verify-after` runs it once the end is reached.

pub mod apply;
pub mod args;
pub mod destination;
pub mod evolve;
pub(crate) mod scan;
pub mod schema;
pub mod snapshot;
pub mod translate;
pub mod verify;

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
pub use scylla_cdc::cli::Output;
pub use scylla_cdc::cli::{CliError, Shutdown, ShutdownTrigger, exit_code};
use scylla_cdc::cli::{OnError, checkpoint_table_error};
use scylla_cdc::cli::{
    ReadersProgress, RunningReader, clap_failure, error_chain, retry_startup, supervise,
};
use scylla_cdc::{CDCLogReaderBuilder, TableBackedCheckpointSaver};
use tracing::info;

use crate::apply::ReplicatorFactory;
use crate::args::VerifyConfig;
use crate::args::{Config, Invocation};
use crate::destination::{Destination, Stats, WriteBudget};
use crate::evolve::{SchemaFollower, TableContext, TableState, list_writes_for};
use crate::schema::{
    TableSchema, check_compatible, create_statements, is_scylla, keyspace_exists,
    read_table_schema, schema_error, table_exists,
};
use crate::snapshot::{CopyReport, CopySettings, ProgressTable, SavedProgress};
use crate::translate::ListWrites;

/// Reads the source table's schema and checks that CDC is enabled on it.
async fn source_table(
    session: &Session,
    keyspace: &str,
    table: &str,
    snapshot: bool,
) -> Result<TableSchema, CliError> {
    let schema = read_table_schema(session, keyspace, table)
        .await
        .map_err(|e| schema_error("source", e))?;
    if snapshot {
        snapshot::check_copyable(&schema).map_err(CliError::schema)?;
    }
    let log = format!("{table}_scylla_cdc_log");
    if !table_exists(session, keyspace, &log)
        .await
        .map_err(|e| schema_error("source", e))?
    {
        return Err(CliError::schema(format!(
            "source: CDC is not enabled on table `{keyspace}.{table}` (enable it with \
             `ALTER TABLE ... WITH cdc = {{'enabled': true}}`)"
        )));
    }
    Ok(schema)
}

/// Checks the destination table against the source schema ([`check_compatible`]),
/// creating it first if it is missing and `create` is set.
pub async fn prepare_destination(
    session: &Session,
    source: &TableSchema,
    keyspace: &str,
    table: &str,
    create: bool,
    allow_extra_columns: bool,
) -> Result<(), CliError> {
    let side = "destination";
    if !keyspace_exists(session, keyspace)
        .await
        .map_err(|e| schema_error(side, e))?
    {
        return Err(CliError::schema(format!(
            "destination: keyspace `{keyspace}` does not exist (create it first)"
        )));
    }
    if !table_exists(session, keyspace, table)
        .await
        .map_err(|e| schema_error(side, e))?
    {
        if !create {
            return Err(CliError::schema(format!(
                "destination: table `{keyspace}.{table}` does not exist (create it, or pass \
                 --create-destination-table)"
            )));
        }
        for statement in create_statements(source, keyspace, table) {
            info!(statement = %statement, "creating the destination schema");
            // Every statement is `CREATE ... IF NOT EXISTS`: repeating it after a transient
            // failure is safe.
            session
                .query_unpaged(statement.clone(), ())
                .await
                .map_err(|e| {
                    let message = format!("destination: `{statement}` failed: {}", error_chain(&e));
                    if scylla_cdc::is_transient(&e) {
                        CliError::transient(message)
                    } else {
                        CliError::runtime(message)
                    }
                })?;
        }
    }
    let dest = read_table_schema(session, keyspace, table)
        .await
        .map_err(|e| schema_error(side, e))?;
    check_compatible(source, &dest, allow_extra_columns)
        .map_err(|e| CliError::schema(format!("destination: {e}")))
}

/// How the changes of `schema`'s lists can be written on the destination
/// ([`list_writes_for`]). A table whose lists cannot be replicated is refused here, before
/// anything is read (never by a failed write mid-run).
pub async fn list_writes(
    source: &Session,
    schema: &TableSchema,
    destination_is_scylla: bool,
) -> Result<ListWrites, CliError> {
    list_writes_for(source, schema, destination_is_scylla)
        .await
        .map_err(|e| schema_error("source", e))?
        .map_err(CliError::schema)
}

/// A running replicator.
pub struct Replicator {
    readers: Vec<RunningReader>,
    stats: Arc<Stats>,
    progress_interval: Duration,
    snapshots: Vec<CopyReport>,
}

impl Replicator {
    /// Connects, checks (or creates) every table, and starts replicating. Nothing is read
    /// before every table has been checked; on a failure the readers already started are
    /// stopped. With `--snapshot`, the tables are copied first ([`snapshot`]); see
    /// [`Replicator::start_with`] to stop that copy.
    pub async fn start(config: &Config) -> Result<Replicator, CliError> {
        // The trigger is dropped: no stop can be requested.
        Self::start_with(config, Shutdown::new().1).await
    }

    /// Like [`Replicator::start`], stopping a `--snapshot` copy when `shutdown` is requested
    /// (an error with exit code 0; the ranges copied are saved, and a restart resumes).
    pub async fn start_with(config: &Config, shutdown: Shutdown) -> Result<Replicator, CliError> {
        info!(
            keyspace = %config.keyspace,
            tables = ?config.tables,
            "reading from {} (a saved checkpoint takes precedence)",
            config.start
        );
        // Every step retries transient failures for --give-up-after (see `retry_startup`).
        let give_up = config.give_up_after;
        let (source, destination) = config.clusters.connect(give_up).await?;
        let destination_is_scylla =
            retry_startup("reading the destination's schema", give_up, || async {
                is_scylla(&destination)
                    .await
                    .map_err(|e| schema_error("destination", e))
            })
            .await?;
        info!(
            scylla = destination_is_scylla,
            "destination kind: {}",
            if destination_is_scylla {
                "ScyllaDB"
            } else {
                "not ScyllaDB (no system_schema.scylla_tables): lists are written whole, from \
                 the post-image"
            }
        );
        let stats = Arc::new(Stats::default());
        let mut contexts = Vec::new();
        let budget = Arc::new(WriteBudget::new(config.max_bytes_in_flight));
        for table in &config.tables {
            let schema = Arc::new(
                retry_startup("reading the source table's schema", give_up, || {
                    source_table(&source, &config.keyspace, table, config.snapshot)
                })
                .await?,
            );
            let lists = retry_startup("reading the source table's CDC options", give_up, || {
                list_writes(&source, &schema, destination_is_scylla)
            })
            .await?;
            retry_startup("checking the destination table", give_up, || {
                prepare_destination(
                    &destination,
                    &schema,
                    &config.destination_keyspace,
                    table,
                    config.create_destination_table,
                    config.allow_extra_columns,
                )
            })
            .await?;
            let dest = Destination::new(
                destination.clone(),
                &config.destination_keyspace,
                table,
                schema.clone(),
                config.write_consistency,
                stats.clone(),
            );
            contexts.push(Arc::new(
                TableContext::new(
                    TableState {
                        schema,
                        destination: Arc::new(dest),
                        lists,
                    },
                    config.max_in_flight,
                    budget.clone(),
                    SchemaFollower::new(
                        source.clone(),
                        destination_is_scylla,
                        config.allow_extra_columns,
                    ),
                )
                .writing_each_change(config.on_error != OnError::Stop),
            ));
        }
        let mut starts = Vec::new();
        let mut snapshots = Vec::new();
        for context in &contexts {
            if !config.snapshot {
                starts.push(config.start.time());
                continue;
            }
            let report = copy_snapshot(config, &source, context, shutdown.clone()).await?;
            // The log is read from T minus the safety interval (unless a checkpoint is
            // saved): a write in flight around T that the scan missed is replayed.
            let safety = chrono::TimeDelta::from_std(config.safety_interval).unwrap_or_default();
            let t = chrono::DateTime::from_timestamp_micros(report.snapshot_micros)
                .unwrap_or(config.start.time());
            starts.push(t - safety);
            snapshots.push(report);
        }
        // One reader for every table. With --snapshot each table's log is due from its own
        // snapshot time (minus the safety interval); the reader starts at the earliest, so
        // a table whose copy ended later replays a little more, which changes nothing (every
        // write carries its source timestamp). A saved checkpoint still takes precedence.
        let start = starts.into_iter().min().unwrap_or(config.start.time());
        let name = config
            .tables
            .iter()
            .map(|t| format!("{}.{t}", config.keyspace))
            .collect::<Vec<_>>()
            .join(", ");
        let readers = match start_reader(config, &source, contexts, start, &name).await {
            Ok(r) => vec![r],
            Err(StartError::Reader(e)) => return Err(CliError::from_reader(&name, &e)),
            Err(StartError::Cli(e)) => return Err(e),
        };
        scylla_cdc::cli::health::reading(
            &source,
            &readers,
            scylla_cdc::cli::health::stall_bound(
                config.sleep_interval,
                config.safety_interval,
                config.max_idle_latency,
            ),
        );
        info!(
            tables = ?config.tables,
            destination_keyspace = %config.destination_keyspace,
            "replicating"
        );
        Ok(Replicator {
            readers,
            stats,
            progress_interval: config.progress_interval,
            snapshots,
        })
    }

    /// What the `--snapshot` copies of this run did, one per table (empty without
    /// `--snapshot`).
    pub fn snapshots(&self) -> &[CopyReport] {
        &self.snapshots
    }

    /// The counters of this replicator (changes applied, newest change, retries).
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Runs until a reader fails or `shutdown` is requested (first request: finish the
    /// current windows, flush the writes in flight, save checkpoints; second: stop at once).
    pub async fn run(self, shutdown: Shutdown) -> Result<(), CliError> {
        let progress = ReadersProgress::of(&self.readers);
        let started = (self.stats.applied(), Instant::now());
        let logger = tokio::spawn(log_progress(
            self.stats.clone(),
            progress.clone(),
            self.progress_interval,
        ));
        let result = supervise(self.readers, shutdown).await;
        logger.abort();
        // A last line with the final figures (also when the run was shorter than one
        // progress interval); its rate is over the whole run.
        progress_line(&self.stats, &progress, started);
        info!(
            applied = self.stats.applied(),
            retries = self.stats.retries(),
            "replicator stopped"
        );
        result
    }
}

/// Why a reader could not start.
enum StartError {
    Reader(scylla_cdc::CDCError),
    Cli(CliError),
}

/// The `--snapshot` copy of one table (see [`snapshot`]): opens its progress table, takes the
/// saved snapshot time or saves the launch time as it, and copies the ranges not done yet.
async fn copy_snapshot(
    config: &Config,
    source: &Arc<Session>,
    context: &TableContext,
    shutdown: Shutdown,
) -> Result<CopyReport, CliError> {
    let state = context.state();
    let (keyspace, table) = (&state.schema.keyspace, &state.schema.table);
    let give_up = config.give_up_after;
    let progress = match &config.checkpoint_table {
        Some(cp) => Some(
            retry_startup("opening the snapshot progress table", give_up, || {
                ProgressTable::open(
                    source.clone(),
                    cp,
                    keyspace,
                    table,
                    &config.destination_keyspace,
                )
            })
            .await?,
        ),
        None => None,
    };
    let saved = match &progress {
        Some(p) => retry_startup("reading the snapshot progress", give_up, || p.load()).await?,
        None => SavedProgress::default(),
    };
    let launched = config.start.time().timestamp_micros();
    let t = snapshot::snapshot_time(progress.as_ref(), &saved, launched, give_up).await?;
    let settings = CopySettings {
        consistency: config.snapshot_consistency,
        parallelism: config.snapshot_parallelism,
        give_up_after: give_up,
        progress_interval: config.progress_interval,
        run_micros: chrono::Utc::now().timestamp_micros(),
    };
    snapshot::copy_table(
        source.clone(),
        state.destination.clone(),
        state.schema.clone(),
        progress.as_ref(),
        &saved,
        t,
        &settings,
        shutdown,
    )
    .await
}

/// Starts the log reader of the tables of `contexts` from `start` (unless a checkpoint is
/// saved), with its checkpoint saver unless checkpoints are off; `name` names the tables in
/// messages.
async fn start_reader(
    config: &Config,
    source: &Arc<Session>,
    contexts: Vec<Arc<TableContext>>,
    start: chrono::DateTime<chrono::Utc>,
    name: &str,
) -> Result<RunningReader, StartError> {
    let tables: Vec<String> = contexts
        .iter()
        .map(|c| c.state().schema.table.clone())
        .collect();
    let mut builder = CDCLogReaderBuilder::new()
        .session(source.clone())
        .keyspace(&config.keyspace)
        .tables(tables.iter().cloned())
        .consumer_factory(Arc::new(ReplicatorFactory::for_tables(contexts)))
        .window_size(config.window_size)
        .safety_interval(config.safety_interval)
        .sleep_interval(config.sleep_interval)
        .early_reads(config.early_reads.clone())
        .pause_between_saves(config.checkpoint_interval)
        .start_timestamp(start);
    if let Some(latency) = config.max_idle_latency {
        builder = builder.max_idle_latency(latency);
    }
    if let Some(n) = config.max_rows_per_second {
        // One reader for all tables: the cap is shared by them.
        builder = builder.max_rows_per_second(n);
    }
    if let Some(end) = config.end {
        builder = builder.end_timestamp(end);
    }
    if let Some(g) = config.give_up_after {
        builder = builder.give_up_after(g);
    }
    let on_error = config
        .on_error
        .policy(
            source,
            config.checkpoint_table.as_ref(),
            config.give_up_after,
        )
        .await
        .map_err(StartError::Cli)?;
    builder = builder.on_consumer_error(on_error);
    if let Some(group) = &config.group {
        builder = group.configure(builder);
    }
    if let (Some(cp), Some(first)) = (&config.checkpoint_table, tables.first()) {
        // A saver of the first table; the reader asks it for the others' (`for_table`), so
        // each table keeps the progress a reader of it alone would.
        let saver = retry_startup(
            "opening the checkpoint table",
            config.give_up_after,
            || async {
                TableBackedCheckpointSaver::new(
                    source.clone(),
                    &cp.keyspace,
                    &cp.table,
                    &config.keyspace,
                    first,
                )
                .await
                .map_err(|e| checkpoint_table_error(cp, &e))
            },
        )
        .await
        .map_err(StartError::Cli)?
        // Replications of one table into different keyspaces keep separate progress.
        .with_reader_name(format!(
            "scylla-cdc-replicator:{}",
            config.destination_keyspace
        ));
        builder = builder.checkpoint_saver(Arc::new(saver));
    }
    let (reader, handle) = builder.build().await.map_err(StartError::Reader)?;
    Ok(RunningReader {
        table: name.to_owned(),
        reader,
        handle,
    })
}

/// Logs a line every `interval`: changes applied, changes per second, how far behind now
/// the newest applied change is, and the readers' low watermark with the lag behind it
/// (everything up to the watermark is replicated).
async fn log_progress(stats: Arc<Stats>, readers: ReadersProgress, interval: Duration) {
    let mut since = (stats.applied(), Instant::now());
    loop {
        tokio::time::sleep(interval).await;
        since = progress_line(&stats, &readers, since);
    }
}

/// Logs one progress line: changes applied, changes per second since `(applied, at)`, how far
/// behind now the newest applied change is, and the readers' low watermark; returns the new
/// `(applied, at)`.
fn progress_line(
    stats: &Stats,
    readers: &ReadersProgress,
    (last, last_at): (u64, Instant),
) -> (u64, Instant) {
    let applied = stats.applied();
    let elapsed = last_at.elapsed().as_secs_f64().max(1e-9);
    let rate = (applied - last) as f64 / elapsed;
    let now = chrono::Utc::now();
    let watermark = readers.describe_watermark(now);
    let watermark = match readers.describe_group() {
        Some(g) => format!("{watermark}, {g}"),
        None => watermark,
    };
    let behind = stats.newest_applied_micros().map(|t| {
        let lag = now.timestamp_micros().saturating_sub(t);
        Duration::from_micros(u64::try_from(lag).unwrap_or(0))
    });
    match behind {
        Some(b) => info!(
            applied,
            per_second = format!("{rate:.0}"),
            behind_now = format!("{:.1}s", b.as_secs_f64()),
            retries = stats.retries(),
            "progress: {applied} changes applied, {rate:.0}/s, newest applied change {:.1}s \
             behind now, {watermark}",
            b.as_secs_f64()
        ),
        None => info!(applied, "progress: no change applied yet, {watermark}"),
    }
    (applied, Instant::now())
}

/// The replicator's process: runs it with the process arguments, stdout and signals (Ctrl-C,
/// SIGTERM), prints an error as one line on stderr, and returns the exit code. The binary's
/// `main` is this call alone (the end-to-end tests build the same program from it).
pub fn process_main() -> std::process::ExitCode {
    // The default start, as the system recorded the process's start: every change written
    // after the launch is replicated.
    let launched = scylla_cdc::cli::launch_time();
    // Parsed before the log is set up, which --log-format configures.
    let parsed = args::parse(std::env::args_os());
    let log_format = parsed
        .as_ref()
        .map(Invocation::log_format)
        .unwrap_or_default();
    // A target directive matches every target that starts with it: `scylla=off` (the driver)
    // would also silence `scylla_cdc*`, so the library and this program are named after it.
    // A consumer group's unit events (`scylla_cdc::cli::units`) are logged at INFO.
    scylla_cdc::cli::install_tracing(
        "info,scylla=off,scylla_cdc=warn,scylla_cdc_replicator=info,scylla_cdc_printer=info,\
         scylla_cdc::cli::units=info",
        log_format,
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(exit_code::RUNTIME);
        }
    };
    let code = runtime.block_on(async {
        let shutdown = Shutdown::on_signals();
        let out = Output::new(std::io::stdout());
        let result = match parsed {
            Ok(invocation) => run_invocation(launched, invocation, out, shutdown).await,
            Err(e) => help_or_usage_error(&e, &out),
        };
        match result {
            Ok(()) => exit_code::OK,
            Err(e) => {
                scylla_cdc::cli::args::report_failure(&e, log_format, "scylla_cdc_replicator");
                e.exit_code()
            }
        }
    });
    runtime.shutdown_background();
    std::process::ExitCode::from(code)
}

/// Runs the replicator with these command-line arguments (the first is the program name)
/// until a failure or `shutdown`; the launch instant (the default start) is the moment of
/// this call. See [`run_launched`].
pub async fn run<I, T>(args: I, shutdown: Shutdown) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_launched(chrono::Utc::now(), args, shutdown).await
}

/// Runs the replicator like [`run`], for a program launched at `launched`: without
/// `--start` and without a checkpoint, every change written from `launched` on is
/// replicated, however long connecting and checking the schemas take.
///
/// `--help` and `--version` are printed on stdout. Errors are returned, not printed: the
/// binary prints them as one line on stderr and exits with [`CliError::exit_code`].
pub async fn run_launched<I, T>(
    launched: chrono::DateTime<chrono::Utc>,
    args: I,
    shutdown: Shutdown,
) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_to(launched, args, Output::new(std::io::stdout()), shutdown).await
}

/// Runs the replicator like [`run_launched`], writing on `out` what goes to stdout: `--help`,
/// `--version`, and the reports of the command `verify` ([`verify::run_verify`]) and of
/// `--verify-after`. The arguments are parsed with [`args::parse`] (flags not on the command
/// line come from the environment variables of [`args::ENV_PREFIX`]).
pub async fn run_to<I, T>(
    launched: chrono::DateTime<chrono::Utc>,
    args: I,
    out: Output,
    shutdown: Shutdown,
) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match args::parse(args) {
        Ok(invocation) => run_invocation(launched, invocation, out, shutdown).await,
        Err(e) => help_or_usage_error(&e, &out),
    }
}

/// `--help` or `--version` written to `out`, or the usage error of a failed parse.
fn help_or_usage_error(err: &clap::Error, out: &Output) -> Result<(), CliError> {
    let text = clap_failure(err)?;
    out.write(&text)
        .map_err(|e| CliError::runtime(format!("cannot write on stdout: {e}")))
}

/// Runs a parsed command line, like [`run_to`].
pub async fn run_invocation(
    launched: chrono::DateTime<chrono::Utc>,
    invocation: Invocation,
    out: Output,
    shutdown: Shutdown,
) -> Result<(), CliError> {
    let args = match invocation {
        Invocation::Verify(verify) => {
            let config = verify.into_config()?;
            return verify::run_verify(&config, &out, shutdown).await;
        }
        Invocation::Replicate(args) => args,
    };
    let metrics_addr = args.metrics_addr;
    let config = args.into_config(launched)?;
    if let Some(addr) = metrics_addr {
        scylla_cdc::cli::metrics_http::serve_metrics(addr)?;
    }
    let stop = shutdown.clone();
    let replicator = match Replicator::start_with(&config, shutdown.clone()).await {
        Ok(r) => r,
        Err(e) if e.exit_code() == exit_code::OK => {
            info!("{}", e.message());
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    replicator.run(shutdown).await?;
    if !config.verify_after {
        return Ok(());
    }
    if stop.is_requested() {
        info!("stopped before --end: not verifying");
        return Ok(());
    }
    info!("--end reached and every change applied: verifying");
    verify::run_verify(&VerifyConfig::after_replication(&config), &out, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unreachable_source_is_a_connect_error() {
        let (_t, shutdown) = Shutdown::new();
        let err = run(
            [
                "scylla-cdc-replicator",
                "--source",
                "127.0.0.1:1",
                "--destination",
                "127.0.0.1:2",
                "-k",
                "ks",
                "-t",
                "t",
                // Unreachable is retried (it may be a node restarting) until --give-up-after.
                "--give-up-after",
                "0.5",
            ],
            shutdown,
        )
        .await
        .unwrap_err();
        assert_eq!(err.exit_code(), exit_code::CONNECT, "{err}");
        assert!(err.message().contains("source cluster"), "{err}");
    }

    #[tokio::test]
    async fn bad_arguments_fail_before_connecting() {
        let (_t, shutdown) = Shutdown::new();
        let err = run(
            ["scylla-cdc-replicator", "--source", "127.0.0.1:1"],
            shutdown,
        )
        .await
        .unwrap_err();
        assert_eq!(err.exit_code(), exit_code::USAGE, "{err}");
    }
}
