//! `scylla-cdc-printer`: print the CDC log of ScyllaDB tables as changes arrive.
//!
//! The binary (`src/main.rs`) is a thin wrapper around [`run`], which tests call directly:
//! it parses the arguments ([`args`]), connects, starts one [`scylla_cdc::CDCLogReader`] per
//! table with a [`Printer`] consumer per stream group, and writes every log row to an
//! [`Output`] in the chosen [`mod@format`] until the end time, a failure, or a [`cli::Shutdown`].
//! With `--demo` it first starts an embedded cluster with a demo table and a writer
//! ([`demo`], behind the default `demo` feature).
//!
//! [`cli`] holds what the printer and the replicator share (argument parsers, exit codes,
//! signals, reader supervision), [`secure`] their credentials and TLS, [`metrics_http`] their
//! `--metrics-addr`; [`render`] turns values into CQL literals and JSON.

pub mod args;
pub mod cli;
#[cfg(feature = "demo")]
pub mod demo;
pub mod format;
pub mod metrics_http;
pub mod render;
pub mod secure;

use std::ffi::OsString;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use scylla::client::session::Session;
use scylla_cdc::{
    CDCLogReaderBuilder, CDCRow, Consumer, ConsumerFactory, TableBackedCheckpointSaver,
};
use tracing::info;

use crate::args::{Args, Format, Mode, PrintConfig};
use crate::cli::{
    CliError, RunningReader, Shutdown, connect, error_chain, retry_startup, supervise,
};
use crate::format::RowView;

/// Where printed rows go: a writer shared by every consumer. Each row is written with one
/// `write_all`, so rows of concurrent stream groups never interleave.
#[derive(Clone)]
pub struct Output {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    closed: Arc<AtomicBool>,
}

impl Output {
    /// Output to this writer.
    pub fn new(writer: impl Write + Send + 'static) -> Self {
        Self {
            writer: Arc::new(Mutex::new(Box::new(writer))),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Output to stdout.
    pub fn stdout() -> Self {
        Self::new(std::io::stdout())
    }

    /// Writes `text` and flushes. A closed pipe (`printer | head`) is remembered, so the
    /// program can stop quietly.
    pub fn write(&self, text: &str) -> std::io::Result<()> {
        let mut w = self
            .writer
            .lock()
            .map_err(|_| std::io::Error::other("the output lock is poisoned"))?;
        let result = w.write_all(text.as_bytes()).and_then(|()| w.flush());
        if let Err(e) = &result
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.closed.store(true, Ordering::Relaxed);
        }
        result
    }

    /// Whether a write failed because the reading end of a pipe was closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// A writer into a shared, growing byte buffer (for tests and embedding).
#[derive(Clone, Default)]
pub struct SharedBuffer(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// What was written so far, as text (invalid UTF-8 replaced).
    pub fn contents(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("the buffer lock is poisoned"))?
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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
            Format::Json => format::json(&view, &mut self.buf),
        }
        self.out
            .write(&self.buf)
            .map_err(|e| anyhow::anyhow!("cannot write the output: {e}"))
    }
}

/// Makes a [`Printer`] per stream group of one table.
pub struct PrinterFactory {
    table: Arc<str>,
    key_columns: Arc<Vec<String>>,
    format: Format,
    out: Output,
}

impl PrinterFactory {
    /// Printers of `table` (`ks.t`), listing `key_columns` first.
    pub fn new(table: &str, key_columns: Vec<String>, format: Format, out: Output) -> Self {
        Self {
            table: Arc::from(table),
            key_columns: Arc::new(key_columns),
            format,
            out,
        }
    }
}

#[async_trait]
impl ConsumerFactory for PrinterFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        Box::new(Printer {
            table: self.table.clone(),
            key_columns: self.key_columns.clone(),
            format: self.format,
            out: self.out.clone(),
            buf: String::new(),
        })
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
    /// How long transient failures are retried (`None`: forever).
    pub give_up_after: Option<Duration>,
    /// Least time between checkpoints of a stream group (with a checkpoint table).
    pub checkpoint_interval: Duration,
}

/// Starts one reader per table of `keyspace`, printing to `out`. On a failure the readers
/// already started are stopped.
pub async fn start_readers(
    session: &Arc<Session>,
    keyspace: &str,
    tables: &[String],
    settings: &ReaderSettings,
    checkpoint_table: Option<&args::QualifiedTable>,
    format: Format,
    out: &Output,
) -> Result<Vec<RunningReader>, CliError> {
    let mut readers: Vec<RunningReader> = Vec::new();
    for table in tables {
        let name = format!("{keyspace}.{table}");
        let factory = PrinterFactory::new(
            &name,
            key_columns(session, keyspace, table),
            format,
            out.clone(),
        );
        let mut builder = CDCLogReaderBuilder::new()
            .session(session.clone())
            .keyspace(keyspace)
            .table_name(table)
            .consumer_factory(Arc::new(factory))
            .window_size(settings.window_size)
            .safety_interval(settings.safety_interval)
            .sleep_interval(settings.sleep_interval)
            .start_timestamp(settings.start);
        if let Some(g) = settings.give_up_after {
            builder = builder.give_up_after(g);
        }
        if let Some(end) = settings.end {
            builder = builder.end_timestamp(end);
        }
        if let Some(cp) = checkpoint_table {
            let saver = retry_startup(
                "opening the checkpoint table",
                settings.give_up_after,
                || async {
                    TableBackedCheckpointSaver::new(
                        session.clone(),
                        &cp.keyspace,
                        &cp.table,
                        keyspace,
                        table,
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
        match builder.build().await {
            Ok((reader, handle)) => readers.push(RunningReader {
                table: name,
                reader,
                handle,
            }),
            Err(e) => {
                for r in &mut readers {
                    r.reader.stop();
                }
                return Err(CliError::from_reader(&name, &e));
            }
        }
    }
    Ok(readers)
}

/// The error of a checkpoint table that cannot be used: transient failures (a timeout or
/// `Overloaded` while creating it or preparing its statements) are retried by start-up, a
/// missing keyspace or a refused permission is a schema error.
pub fn checkpoint_table_error(cp: &args::QualifiedTable, e: &scylla_cdc::CDCError) -> CliError {
    let message = format!(
        "checkpoint table {}.{}: {}",
        cp.keyspace,
        cp.table,
        error_chain(e)
    );
    if e.is_transient() {
        CliError::transient(message)
    } else {
        CliError::schema(message)
    }
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
/// `--help` and `--version` are written to `out`. Errors are returned, not printed: the
/// binary prints them as one line on stderr and exits with [`CliError::exit_code`]. A closed
/// output pipe ends the run quietly with `Ok`.
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
    let args = match Args::try_parse_from(args) {
        Ok(a) => a,
        Err(e) => {
            let text = cli::clap_failure(&e)?;
            return out
                .write(&text)
                .map_err(|e| CliError::runtime(format!("cannot write the output: {e}")));
        }
    };
    let metrics_addr = args.metrics_addr;
    let mode = args.into_config(launched)?;
    if let Some(addr) = metrics_addr {
        metrics_http::serve_metrics(addr)?;
    }
    match mode {
        Mode::Print(config) => print(*config, out, shutdown).await,
        #[cfg(feature = "demo")]
        Mode::Demo { seconds, format } => demo::run(seconds, format, out, shutdown).await,
        #[cfg(not(feature = "demo"))]
        Mode::Demo { .. } => Err(CliError::usage(
            "this build has no --demo (built without the `demo` feature)",
        )),
    }
}

/// A print run against a running cluster.
async fn print(config: PrintConfig, out: Output, shutdown: Shutdown) -> Result<(), CliError> {
    info!(
        keyspace = %config.keyspace,
        tables = ?config.tables,
        "reading from {} (a saved checkpoint takes precedence)",
        config.start
    );
    let session = connect(
        "the cluster",
        &config.hosts,
        config.credentials.as_ref(),
        config.tls.as_ref(),
        config.give_up_after,
    )
    .await?;
    let settings = ReaderSettings {
        start: config.start.time(),
        end: config.end,
        window_size: config.window_size,
        safety_interval: config.safety_interval,
        sleep_interval: config.sleep_interval,
        give_up_after: config.give_up_after,
        checkpoint_interval: config.checkpoint_interval,
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
    match supervise(readers, shutdown).await {
        Err(_) if out.is_closed() => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_writes_whole_blocks() {
        let buf = SharedBuffer::default();
        let out = Output::new(buf.clone());
        out.write("a\n").unwrap();
        out.clone().write("b\n").unwrap();
        assert_eq!(buf.contents(), "a\nb\n");
        assert!(!out.is_closed());
    }

    struct ClosedPipe;

    impl Write for ClosedPipe {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn output_remembers_a_closed_pipe() {
        let out = Output::new(ClosedPipe);
        assert!(out.write("x").is_err());
        assert!(out.is_closed());
    }

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
        assert_eq!(err.exit_code(), cli::exit_code::USAGE);
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
        assert_eq!(err.exit_code(), cli::exit_code::CONNECT, "{err}");
        assert!(err.message().contains("127.0.0.1:1"), "{err}");
        assert!(!err.to_string().contains('\n'));
    }
}
