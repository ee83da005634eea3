//! `scylla-cdc-printer`: print the CDC log of ScyllaDB tables as changes arrive.
//!
//! The binary (`src/main.rs`) is a thin wrapper around [`run`], which tests call directly:
//! it parses the arguments ([`args`]), connects, starts one [`scylla_cdc::CDCLogReader`] for
//! all the tables of `--table` with a [`Printer`] consumer per table and stream group, and
//! writes every log row to an
//! [`Output`] in the chosen [`mod@format`] until the end time, a failure, or a [`scylla_cdc::cli::Shutdown`].
//! With `--demo` it first starts an embedded cluster with a demo table and a writer
//! ([`demo`], behind the default `demo` feature).
//!
//! What the printer shares with the replicator (argument parsers, exit codes, signals, reader
//! supervision, credentials and TLS, `--metrics-addr`, the [`Output`]) is
//! [`scylla_cdc::cli`], the library's `cli` feature; [`render`] turns values into CQL
//! literals and JSON.

pub mod args;
#[cfg(feature = "demo")]
pub mod demo;
pub mod format;
pub mod render;

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use scylla::client::session::Session;
use scylla_cdc::{
    CDCLogReaderBuilder, CDCRow, Change, ChangeConsumer, ChangeConsumerFactory, Consumer,
    ConsumerErrorPolicy, ConsumerFactory, TableBackedCheckpointSaver,
};
use tracing::info;

use crate::args::{Args, Format, Mode, PrintConfig};
use crate::format::{ChangeView, RowView};
use scylla_cdc::cli::{
    CliError, GroupSettings, ReadersProgress, RunningReader, Shutdown, connect, retry_startup,
    supervise,
};
pub use scylla_cdc::cli::{Output, SharedBuffer, checkpoint_table_error};

/// Prints the rows of one stream group.
pub struct Printer {
    /// `ks.t`.
    table: Arc<str>,
    /// Key columns, printed first.
    key_columns: Arc<Vec<String>>,
    /// Output format.
    format: Format,
    /// Where rows go.
    out: Output,
    /// The text of the current row (reused).
    buf: String,
}

#[async_trait]
impl Consumer for Printer {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let view = RowView::from_cdc_row(&self.table, &row, &self.key_columns)?;
        self.buf.clear();
        match self.format {
            Format::Pretty => format::pretty(&view, &mut self.buf),
            // Change printers print this format; a row printer prints it as JSON.
            Format::Json | Format::Change => format::json(&view, &mut self.buf),
        }
        self.out
            .write(&self.buf)
            .map_err(|e| anyhow::anyhow!("cannot write the output: {e}"))
    }
}

/// Makes a [`Printer`] (or, for `--format change`, a [`ChangePrinter`]) per table and stream
/// group of the tables of one reader.
pub struct PrinterFactory {
    /// The keyspace of the tables.
    keyspace: Arc<str>,
    /// Per base table: its `ks.t` name and key columns, in the order given.
    tables: Vec<(String, Arc<str>, Arc<Vec<String>>)>,
    format: Format,
    out: Output,
}

impl PrinterFactory {
    /// Printers of the tables of `keyspace`, each given with its key columns (listed first).
    pub fn new(
        keyspace: &str,
        tables: Vec<(String, Vec<String>)>,
        format: Format,
        out: Output,
    ) -> Self {
        Self {
            keyspace: Arc::from(keyspace),
            tables: tables
                .into_iter()
                .map(|(table, keys)| {
                    let name = Arc::from(format!("{keyspace}.{table}"));
                    (table, name, Arc::new(keys))
                })
                .collect(),
            format,
            out,
        }
    }

    fn change_printer(&self, table: Option<&str>) -> ChangePrinter {
        let known = table.and_then(|t| self.tables.iter().find(|(name, ..)| name == t));
        let key_columns = match known.or(self.tables.first()) {
            Some((_, _, keys)) => keys.clone(),
            None => Arc::new(Vec::new()),
        };
        ChangePrinter {
            keyspace: self.keyspace.clone(),
            key_columns,
            out: self.out.clone(),
            buf: String::new(),
        }
    }

    fn printer(&self, table: Option<&str>) -> Printer {
        let known = table.and_then(|t| self.tables.iter().find(|(name, ..)| name == t));
        let (name, key_columns) = match known.or(self.tables.first()) {
            Some((_, name, keys)) => (name.clone(), keys.clone()),
            None => (Arc::from(table.unwrap_or_default()), Arc::new(Vec::new())),
        };
        Printer {
            table: name,
            key_columns,
            format: self.format,
            out: self.out.clone(),
            buf: String::new(),
        }
    }
}

#[async_trait]
impl ConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(self.printer(None))
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        Box::new(self.printer(Some(table)))
    }
}

/// Prints the whole changes of one stream group (`--format change`).
pub struct ChangePrinter {
    /// The base table's keyspace.
    keyspace: Arc<str>,
    /// Key columns, printed first.
    key_columns: Arc<Vec<String>>,
    /// Where changes go.
    out: Output,
    /// The text of the current change (reused).
    buf: String,
}

#[async_trait]
impl ChangeConsumer for ChangePrinter {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        // `ts_ms`: the moment the change is handed over, before any rendering.
        let processed = chrono::Utc::now();
        let view = ChangeView::from_change(&self.keyspace, &change, &self.key_columns, processed)?;
        self.buf.clear();
        format::change_json(&view, &mut self.buf);
        self.out
            .write(&self.buf)
            .map_err(|e| anyhow::anyhow!("cannot write the output: {e}"))
    }
}

#[async_trait]
impl ChangeConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        Box::new(self.change_printer(None))
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn ChangeConsumer> {
        Box::new(self.change_printer(Some(table)))
    }
}

/// The partition-key then clustering-key columns of a table, from the driver's metadata
/// (empty if it does not know the table).
pub fn key_columns(session: &Session, keyspace: &str, table: &str) -> Vec<String> {
    let state = session.get_cluster_state();
    state
        .get_keyspace(keyspace)
        .and_then(|k| k.tables.get(table))
        .map(|t| {
            t.partition_key
                .iter()
                .chain(t.clustering_key.iter())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Settings of the readers a print run starts.
#[derive(Debug, Clone)]
pub struct ReaderSettings {
    /// Where reading starts when there is no checkpoint.
    pub start: chrono::DateTime<chrono::Utc>,
    /// End, if any.
    pub end: Option<chrono::DateTime<chrono::Utc>>,
    /// Window size.
    pub window_size: Duration,
    /// Safety interval.
    pub safety_interval: Duration,
    /// Sleep interval.
    pub sleep_interval: Duration,
    /// Early reads (`None`: off).
    pub early_reads: Option<scylla_cdc::EarlyReads>,
    /// Bound of adaptive polling (`None`: the library's default).
    pub max_idle_latency: Option<Duration>,
    /// How long transient failures are retried (`None`: forever).
    pub give_up_after: Option<Duration>,
    /// Least time between checkpoints of a stream group (with a checkpoint table).
    pub checkpoint_interval: Duration,
    /// Most rows read per second by the reader, all tables together (`None`: unlimited).
    pub max_rows_per_second: Option<u64>,
    /// What happens to a change that cannot be printed.
    pub on_error: ConsumerErrorPolicy,
    /// The consumer group the reader is a member of (needs a checkpoint table).
    pub group: Option<GroupSettings>,
}

/// Starts one reader of the tables of `keyspace` ([`CDCLogReaderBuilder::tables`]),
/// printing to `out`. Each table keeps its own checkpoints in the checkpoint table, as a
/// reader of that table alone would.
pub async fn start_readers(
    session: &Arc<Session>,
    keyspace: &str,
    tables: &[String],
    settings: &ReaderSettings,
    checkpoint_table: Option<&args::QualifiedTable>,
    format: Format,
    out: &Output,
) -> Result<Vec<RunningReader>, CliError> {
    let name = tables
        .iter()
        .map(|t| format!("{keyspace}.{t}"))
        .collect::<Vec<_>>()
        .join(", ");
    let factory = PrinterFactory::new(
        keyspace,
        tables
            .iter()
            .map(|t| (t.clone(), key_columns(session, keyspace, t)))
            .collect(),
        format,
        out.clone(),
    );
    let mut builder = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace(keyspace)
        .tables(tables.iter().cloned())
        .window_size(settings.window_size)
        .safety_interval(settings.safety_interval)
        .sleep_interval(settings.sleep_interval)
        .early_reads(settings.early_reads.clone())
        .start_timestamp(settings.start);
    if let Some(latency) = settings.max_idle_latency {
        builder = builder.max_idle_latency(latency);
    }
    let factory = Arc::new(factory);
    builder = match format {
        Format::Change => builder.change_consumer_factory(factory),
        Format::Pretty | Format::Json => builder.consumer_factory(factory),
    };
    if let Some(g) = settings.give_up_after {
        builder = builder.give_up_after(g);
    }
    if let Some(n) = settings.max_rows_per_second {
        builder = builder.max_rows_per_second(n);
    }
    builder = builder.on_consumer_error(settings.on_error.clone());
    if let Some(end) = settings.end {
        builder = builder.end_timestamp(end);
    }
    if let (Some(cp), Some(first)) = (checkpoint_table, tables.first()) {
        // A saver of the first table; the reader asks it for the others' (`for_table`).
        let saver = retry_startup(
            "opening the checkpoint table",
            settings.give_up_after,
            || async {
                TableBackedCheckpointSaver::new(
                    session.clone(),
                    &cp.keyspace,
                    &cp.table,
                    keyspace,
                    first,
                )
                .await
                .map_err(|e| checkpoint_table_error(cp, &e))
            },
        )
        .await?
        .with_reader_name("scylla-cdc-printer");
        builder = builder
            .checkpoint_saver(Arc::new(saver))
            .pause_between_saves(settings.checkpoint_interval);
    }
    if let Some(group) = &settings.group {
        builder = group.configure(builder);
    }
    match builder.build().await {
        Ok((reader, handle)) => Ok(vec![RunningReader {
            table: name,
            reader,
            handle,
        }]),
        Err(e) => Err(CliError::from_reader(&name, &e)),
    }
}

/// The printer's process: runs it with the process arguments, stdout and signals (Ctrl-C,
/// SIGTERM), prints an error as one line on stderr, and returns the exit code. The binary's
/// `main` is this call alone (the end-to-end tests build the same program from it).
pub fn process_main() -> std::process::ExitCode {
    use scylla_cdc::cli::exit_code;
    // The default start, as the system recorded the process's start: every change written
    // after the launch is printed.
    let launched = scylla_cdc::cli::launch_time();
    // Parsed before the log is set up, which --log-format configures.
    let parsed = args::parse(std::env::args_os());
    let log_format = parsed
        .as_ref()
        .map(|a| a.log.log_format)
        .unwrap_or_default();
    // A consumer group's unit events (`scylla_cdc::cli::units`) are logged at INFO.
    scylla_cdc::cli::install_tracing(
        "warn,scylla_cdc_printer=info,scylla=off,scylla_cdc=warn,scylla_cdc::cli::units=info",
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
        let out = Output::stdout();
        let result = match parsed {
            Ok(args) => run_parsed(launched, args, out, shutdown).await,
            Err(e) => help_or_usage_error(&e, &out),
        };
        match result {
            Ok(()) => exit_code::OK,
            Err(e) => {
                scylla_cdc::cli::args::report_failure(&e, log_format, "scylla_cdc_printer");
                e.exit_code()
            }
        }
    });
    // Reader tasks that were stopped may still hold the runtime; do not wait for them.
    runtime.shutdown_background();
    std::process::ExitCode::from(code)
}

/// Runs the printer with these command-line arguments (the first is the program name),
/// printing rows to `out`, until the end time, a failure, or `shutdown`; the launch instant
/// (the default start) is the moment of this call. See [`run_launched`].
pub async fn run<I, T>(args: I, out: Output, shutdown: Shutdown) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_launched(chrono::Utc::now(), args, out, shutdown).await
}

/// Runs the printer like [`run`], for a program launched at `launched`: without `--start`,
/// every change written from `launched` on is printed, however long connecting takes.
///
/// The arguments are parsed with [`args::parse`] (flags not on the command line come from the
/// environment variables of [`args::ENV_PREFIX`]). `--help` and `--version` are written to
/// `out`. Errors are returned, not printed: the binary prints them as one line on stderr and
/// exits with [`CliError::exit_code`]. A closed output pipe ends the run quietly with `Ok`.
pub async fn run_launched<I, T>(
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
        Ok(args) => run_parsed(launched, args, out, shutdown).await,
        Err(e) => help_or_usage_error(&e, &out),
    }
}

/// `--help` or `--version` written to `out`, or the usage error of a failed parse.
fn help_or_usage_error(err: &clap::Error, out: &Output) -> Result<(), CliError> {
    let text = scylla_cdc::cli::clap_failure(err)?;
    out.write(&text)
        .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")))
}

/// Runs the printer with parsed arguments, like [`run_launched`].
pub async fn run_parsed(
    launched: chrono::DateTime<chrono::Utc>,
    args: Args,
    out: Output,
    shutdown: Shutdown,
) -> Result<(), CliError> {
    let metrics_addr = args.metrics_addr;
    let connect_timeout = args.connect_timeout;
    let mode = args.into_config(launched)?;
    if let Some(addr) = metrics_addr {
        scylla_cdc::cli::metrics_http::serve_metrics(addr)?;
    }
    match mode {
        Mode::Print(config) => print(*config, connect_timeout, out, shutdown).await,
        #[cfg(feature = "demo")]
        Mode::Demo { seconds, format } => demo::run(seconds, format, out, shutdown).await,
        #[cfg(not(feature = "demo"))]
        Mode::Demo { .. } => Err(CliError::usage(
            "this build has no --demo (built without the `demo` feature)",
        )),
    }
}

/// A print run against a running cluster; the first contact is given up on after
/// `connect_timeout` (zero: never), or `--give-up-after` if shorter.
async fn print(
    config: PrintConfig,
    connect_timeout: Duration,
    out: Output,
    shutdown: Shutdown,
) -> Result<(), CliError> {
    info!(
        keyspace = %config.keyspace,
        tables = ?config.tables,
        "reading from {} (a saved checkpoint takes precedence)",
        config.start
    );
    let session = first_contact(&config, connect_timeout).await?;
    let on_error = config
        .on_error
        .policy(
            &session,
            config.checkpoint_table.as_ref(),
            config.give_up_after,
        )
        .await?;
    let settings = ReaderSettings {
        on_error,
        start: config.start.time(),
        end: config.end,
        window_size: config.window_size,
        safety_interval: config.safety_interval,
        sleep_interval: config.sleep_interval,
        early_reads: config.early_reads.clone(),
        max_idle_latency: config.max_idle_latency,
        give_up_after: config.give_up_after,
        checkpoint_interval: config.checkpoint_interval,
        // One reader for all tables: the cap is shared by them.
        max_rows_per_second: config.max_rows_per_second,
        group: config.group.clone(),
    };
    let readers = start_readers(
        &session,
        &config.keyspace,
        &config.tables,
        &settings,
        config.checkpoint_table.as_ref(),
        config.format,
        &out,
    )
    .await?;
    scylla_cdc::cli::health::reading(
        &session,
        &readers,
        scylla_cdc::cli::health::stall_bound(
            config.sleep_interval,
            config.safety_interval,
            config.max_idle_latency,
        ),
    );
    let logger = config
        .progress_interval
        .map(|interval| tokio::spawn(log_progress(ReadersProgress::of(&readers), interval)));
    let result = supervise(readers, shutdown).await;
    if let Some(l) = logger {
        l.abort();
    }
    match result {
        Err(_) if out.is_closed() => Ok(()),
        other => other,
    }
}

/// How long one connection attempt may take (the driver's connection timeout of
/// [`connect`]); the first contact's bound is exceeded by at most this.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the cluster. An interactive tool should not wait forever for a cluster that
/// is not there (a typo in `--hosts`, nothing listening): unless `connect_timeout` is zero, a
/// first contact still failing `connect_timeout` after the first failure ends the run with
/// exit code 3 (an attempt in flight then may take up to [`ATTEMPT_TIMEOUT`] more). With a
/// shorter `--give-up-after`, that applies instead.
async fn first_contact(
    config: &PrintConfig,
    connect_timeout: Duration,
) -> Result<Arc<scylla::client::session::Session>, CliError> {
    let by_option =
        !connect_timeout.is_zero() && config.give_up_after.is_none_or(|g| g >= connect_timeout);
    let bound = if by_option {
        Some(connect_timeout)
    } else {
        config.give_up_after
    };
    let connecting = connect(
        "the cluster",
        &config.hosts,
        config.credentials.as_ref(),
        config.tls.as_ref(),
        bound,
    );
    if !by_option {
        return connecting.await;
    }
    let hint = format!(
        "gave up after {} s (--connect-timeout; 0 retries forever)",
        connect_timeout.as_secs_f64()
    );
    match tokio::time::timeout(connect_timeout + ATTEMPT_TIMEOUT, connecting).await {
        Ok(Ok(session)) => Ok(session),
        Ok(Err(e)) if e.is_transient() => {
            Err(CliError::transient(format!("{}; {hint}", e.message())))
        }
        Ok(Err(e)) => Err(e),
        // An attempt that hangs (packets dropped) past the bound.
        Err(_) => Err(CliError::transient(format!(
            "cannot connect to the cluster at {}: no node answered; {hint}",
            config.hosts.join(",")
        ))),
    }
}

/// Logs a line every `interval`: rows printed, rows per second, and the readers' low
/// watermark with the lag behind it (everything up to the watermark is printed).
async fn log_progress(readers: ReadersProgress, interval: Duration) {
    let mut last = readers.rows();
    let mut last_at = std::time::Instant::now();
    loop {
        tokio::time::sleep(interval).await;
        let rows = readers.rows();
        let rate = (rows - last) as f64 / last_at.elapsed().as_secs_f64().max(1e-9);
        let watermark = readers.describe_watermark(chrono::Utc::now());
        let group = readers
            .describe_group()
            .map(|g| format!(", {g}"))
            .unwrap_or_default();
        info!(
            rows,
            "progress: {rows} rows printed, {rate:.0}/s, {watermark}{group}"
        );
        last = rows;
        last_at = std::time::Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn run_reports_usage_errors_and_help() {
        let (_t, shutdown) = Shutdown::new();
        let buf = SharedBuffer::default();
        let err = run(
            ["scylla-cdc-printer", "--hostname", "x", "-k", "ks"],
            Output::new(buf.clone()),
            shutdown.clone(),
        )
        .await
        .unwrap_err();
        assert_eq!(err.exit_code(), scylla_cdc::cli::exit_code::USAGE);
        run(
            ["scylla-cdc-printer", "--help"],
            Output::new(buf.clone()),
            shutdown,
        )
        .await
        .unwrap();
        assert!(buf.contents().contains("Usage"), "{}", buf.contents());
    }

    #[tokio::test]
    async fn run_reports_an_unreachable_cluster() {
        let (_t, shutdown) = Shutdown::new();
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        let err = run(
            [
                "scylla-cdc-printer",
                "--hostname",
                "127.0.0.1:1",
                "-k",
                "ks",
                "-t",
                "t",
                "--give-up-after",
                "0.5",
            ],
            Output::new(SharedBuffer::default()),
            shutdown,
        )
        .await
        .unwrap_err();
        // Refused connections are retried (the cluster may be starting) until --give-up-after.
        assert!(err.is_transient(), "{err}");
        assert_eq!(
            err.exit_code(),
            scylla_cdc::cli::exit_code::CONNECT,
            "{err}"
        );
        assert!(err.message().contains("127.0.0.1:1"), "{err}");
        assert!(!err.to_string().contains('\n'));
    }
}
