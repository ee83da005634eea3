//! Helpers shared by the end-to-end tests: clusters, statements, waiting for conditions,
//! running the programs in-process, and snapshots of a table (values, `writetime()` and
//! `ttl()` of every cell) to compare a source with its replica.
//!
//! Clusters are [`TestCluster`]s: embedded by default, or the real Scylla of `SCYLLA_URI`
//! (the source, or the only cluster) and `SCYLLA_URI2` (a replicator's destination). Such a
//! cluster is shared and persistent, and may have one node or several: keyspaces have unique
//! names, replication factors no larger than the node count, and are dropped at the end.
//!
//! The programs run in-process through their library entry points
//! (`scylla_cdc_printer::run`, `scylla_cdc_replicator::run`), which the binaries wrap
//! one-to-one: the same argument parsing, exit codes (`CliError::exit_code`) and one-line
//! errors (`CliError`'s `Display`), with stdout replaced by a buffer.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use scylla::client::session::Session;
use scylla::value::{CqlValue, Row};
use scylla_cdc::cli::{CliError, Shutdown, ShutdownTrigger};
use scylla_cdc_printer::{Output, SharedBuffer};
use scylla_cdc_replicator::apply::retarget_udts;
use scylla_cdc_replicator::schema::{ValueKind, read_table_schema};
use scylla_cdc_test_utils::{TestCluster, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use tokio::task::JoinHandle;

/// The cluster of a test with one cluster, or the source of a replicator test: the real one
/// of `SCYLLA_URI`, else an embedded cluster of `nodes` nodes (fast generation switches).
pub(crate) async fn cluster(nodes: usize) -> anyhow::Result<TestCluster> {
    Ok(TestCluster::start(EmbeddedCluster::builder().nodes(nodes)).await?)
}

/// The destination of a replicator test: the real cluster of `SCYLLA_URI2`, else an embedded
/// cluster of `nodes` nodes.
pub(crate) async fn second_cluster(nodes: usize) -> anyhow::Result<TestCluster> {
    Ok(TestCluster::start_second(EmbeddedCluster::builder().nodes(nodes)).await?)
}

/// The contact points of `cluster` as the programs take them (`host:port,host:port`).
pub(crate) fn hosts(cluster: &TestCluster) -> String {
    cluster.contact_points().join(",")
}

/// The number of nodes of the cluster `session` is connected to.
pub(crate) fn node_count(session: &Session) -> usize {
    session.get_cluster_state().get_nodes_info().len()
}

/// Whether two sessions are connected to the same cluster: they know a node with the same
/// host id (contact points can differ, e.g. two nodes of one cluster).
pub(crate) fn same_cluster(a: &Session, b: &Session) -> bool {
    let ids = |s: &Session| -> std::collections::BTreeSet<uuid::Uuid> {
        s.get_cluster_state()
            .get_nodes_info()
            .iter()
            .map(|n| n.host_id)
            .collect()
    };
    !ids(a).is_disjoint(&ids(b))
}

/// Runs a statement, with the statement in the error.
pub(crate) async fn exec(session: &Session, statement: impl AsRef<str>) -> anyhow::Result<()> {
    let s = statement.as_ref();
    session
        .query_unpaged(s, ())
        .await
        .with_context(|| format!("`{s}` failed"))?;
    Ok(())
}

/// Runs statements in order.
pub(crate) async fn exec_all(session: &Session, statements: &[String]) -> anyhow::Result<()> {
    for s in statements {
        exec(session, s).await?;
    }
    Ok(())
}

/// Creates keyspace `ks` with replication factor `rf`, lowered to the cluster's node count
/// (a real cluster may have fewer nodes than the test would like), and vnodes
/// (`tablets = {'enabled': false}`): Scylla before 2025.4 refuses CDC on tablet keyspaces,
/// which recent versions create by default.
pub(crate) async fn create_keyspace(session: &Session, ks: &str, rf: usize) -> anyhow::Result<()> {
    let rf = rf.min(node_count(session)).max(1);
    exec(
        session,
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': {rf}}} AND tablets = {{'enabled': false}}"
        ),
    )
    .await
}

/// Drops keyspace `ks`, if it exists.
pub(crate) async fn drop_keyspace(session: &Session, ks: &str) -> anyhow::Result<()> {
    exec(session, format!("DROP KEYSPACE IF EXISTS {ks}")).await
}

/// The two clusters of a replicator test, each with a fresh keyspace: `ks` on the source
/// and `dest_ks` on the destination.
///
/// When `SCYLLA_URI` and `SCYLLA_URI2` name the same cluster, `dest_ks` is another keyspace
/// (`<ks>_dst`, passed as `--destination-keyspace`), so that no table is replicated onto
/// itself; otherwise it is `ks`, the replicator's default.
pub(crate) struct Pair {
    /// The source cluster.
    pub(crate) source: TestCluster,
    /// The destination cluster.
    pub(crate) destination: TestCluster,
    /// A session on the source.
    pub(crate) s: Arc<Session>,
    /// A session on the destination.
    pub(crate) d: Arc<Session>,
    /// The source keyspace.
    pub(crate) ks: String,
    /// The destination keyspace.
    pub(crate) dest_ks: String,
}

impl Pair {
    /// Starts (or connects to) both clusters (embedded ones have `nodes` nodes) and creates
    /// the keyspaces, replication factor 1.
    pub(crate) async fn start(nodes: usize) -> anyhow::Result<Self> {
        Self::of(cluster(nodes).await?, second_cluster(nodes).await?, 1).await
    }

    /// These clusters, with the keyspaces: replication factor `source_rf` on the source
    /// (lowered to its node count), 1 on the destination.
    pub(crate) async fn of(
        source: TestCluster,
        destination: TestCluster,
        source_rf: usize,
    ) -> anyhow::Result<Self> {
        let (s, d) = (source.session().await?, destination.session().await?);
        let ks = unique_keyspace_name();
        let dest_ks = if same_cluster(&s, &d) {
            format!("{ks}_dst")
        } else {
            ks.clone()
        };
        create_keyspace(&s, &ks, source_rf).await?;
        create_keyspace(&d, &dest_ks, 1).await?;
        Ok(Self {
            source,
            destination,
            s,
            d,
            ks,
            dest_ks,
        })
    }

    /// [`replicator_args`] from the source to the destination, with `--destination-keyspace`
    /// when it is not the source keyspace.
    pub(crate) fn replicator_args(&self, tables: &str) -> Vec<String> {
        let mut args = replicator_args(
            &hosts(&self.source),
            &hosts(&self.destination),
            &self.ks,
            tables,
        );
        if self.dest_ks != self.ks {
            args.push(format!("--destination-keyspace={}", self.dest_ks));
        }
        args
    }

    /// Drops both keyspaces and stops embedded clusters.
    pub(crate) async fn finish(self) -> anyhow::Result<()> {
        drop_keyspace(&self.s, &self.ks).await?;
        drop_keyspace(&self.d, &self.dest_ks).await?;
        self.source.shutdown().await;
        self.destination.shutdown().await;
        Ok(())
    }
}

/// Polls `check` every 200 ms until it returns true, failing after `timeout` with the last
/// check's error (if any).
pub(crate) async fn wait_for<F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => None,
            Err(e) => Some(e),
        };
        if Instant::now() >= deadline {
            match last {
                Some(e) => bail!("timed out after {timeout:?} waiting for {what}: {e:#}"),
                None => bail!("timed out after {timeout:?} waiting for {what}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A program running in a task, with the trigger that stops it.
pub(crate) struct Running {
    trigger: ShutdownTrigger,
    handle: Option<JoinHandle<Result<(), CliError>>>,
}

impl Running {
    /// A running program and its trigger.
    fn new(trigger: ShutdownTrigger, handle: JoinHandle<Result<(), CliError>>) -> Self {
        Self {
            trigger,
            handle: Some(handle),
        }
    }

    /// Waits (at most `timeout`) for the program's result.
    async fn result(&mut self, timeout: Duration) -> anyhow::Result<Result<(), CliError>> {
        let handle = self
            .handle
            .take()
            .context("the program's result was taken")?;
        Ok(tokio::time::timeout(timeout, handle)
            .await
            .context("the program did not end in time")??)
    }

    /// Asks for a graceful stop and waits (at most `timeout`) for the program's result.
    pub(crate) async fn stop(mut self, timeout: Duration) -> anyhow::Result<Result<(), CliError>> {
        self.trigger.trigger();
        self.result(timeout).await
    }

    /// Waits (at most `timeout`) for the program to end by itself.
    pub(crate) async fn join(mut self, timeout: Duration) -> anyhow::Result<Result<(), CliError>> {
        self.result(timeout).await
    }

    /// Kills the program at once, like `kill -9`: no flush, no final checkpoint.
    pub(crate) fn kill(mut self) {
        if let Some(h) = self.handle.take() {
            h.abort();
        }
    }

    /// Whether it has ended.
    pub(crate) fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Fails with the program's result if it has ended (it should still be running).
    pub(crate) async fn check_running(&mut self) -> anyhow::Result<()> {
        if self.is_finished() {
            let result = self.result(Duration::from_secs(1)).await?;
            bail!("the program ended early: {result:?}");
        }
        Ok(())
    }
}

/// Starts the replicator with these arguments (without the program name), launched now: a
/// write made after this call is after its launch.
pub(crate) fn spawn_replicator(args: Vec<String>) -> Running {
    let launched = chrono::Utc::now();
    let (trigger, shutdown) = Shutdown::new();
    let full: Vec<String> = std::iter::once("scylla-cdc-replicator".to_owned())
        .chain(args)
        .collect();
    let handle = tokio::spawn(scylla_cdc_replicator::run_launched(
        launched, full, shutdown,
    ));
    Running::new(trigger, handle)
}

/// Starts the replicator with these arguments (without the program name) and returns it
/// with its counters; fails if it cannot start.
pub(crate) async fn start_replicator(
    args: Vec<String>,
) -> anyhow::Result<(Running, Arc<scylla_cdc_replicator::apply::Stats>)> {
    use clap::Parser;
    let full = std::iter::once("scylla-cdc-replicator".to_owned()).chain(args);
    let config = scylla_cdc_replicator::args::Args::try_parse_from(full)?
        .into_config(chrono::Utc::now())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let replicator = scylla_cdc_replicator::Replicator::start(&config)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let stats = replicator.stats();
    let (trigger, shutdown) = Shutdown::new();
    let handle = tokio::spawn(replicator.run(shutdown));
    Ok((Running::new(trigger, handle), stats))
}

/// Starts the printer with these arguments (without the program name), printing into the
/// returned buffer; launched now: a write made after this call is after its launch.
pub(crate) fn spawn_printer(args: Vec<String>) -> (Running, SharedBuffer) {
    let launched = chrono::Utc::now();
    let (trigger, shutdown) = Shutdown::new();
    let buffer = SharedBuffer::default();
    let out = Output::new(buffer.clone());
    let full: Vec<String> = std::iter::once("scylla-cdc-printer".to_owned())
        .chain(args)
        .collect();
    let handle = tokio::spawn(scylla_cdc_printer::run_launched(
        launched, full, out, shutdown,
    ));
    (Running::new(trigger, handle), buffer)
}

/// The usual replicator arguments for tests (`source` and `destination` are contact points,
/// `host:port,...`): short windows, checkpoints every window.
pub(crate) fn replicator_args(
    source: &str,
    destination: &str,
    ks: &str,
    tables: &str,
) -> Vec<String> {
    let mut args = strings(&[
        "--source",
        source,
        "--destination",
        destination,
        "--keyspace",
        ks,
        "--table",
        tables,
        "--checkpoint-interval",
        "0",
        "--progress-interval",
        "1",
    ]);
    args.extend(strings(&FAST_READING));
    args
}

/// The usual printer arguments for tests (`hosts` are contact points, `host:port,...`):
/// `ks.table`, short windows. A test adds its start, end, format and others.
pub(crate) fn printer_args(hosts: &str, ks: &str, table: &str) -> Vec<String> {
    let mut args = strings(&["--hosts", hosts, "--keyspace", ks, "--table", table]);
    args.extend(strings(&FAST_READING));
    args
}

/// Short windows, read as soon as they are safe: a test's changes are read within seconds.
pub(crate) const FAST_READING: [&str; 6] = [
    "--window-size",
    "1",
    "--safety-interval",
    "1",
    "--sleep-interval",
    "0.1",
];

/// Owned arguments.
pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Sets `option` (`--name`) to `value` in `args`: its value where it is given (`--name value`
/// or `--name=value`), else appended. The programs refuse an option given twice, so a test
/// that needs another value than [`FAST_READING`]'s sets it here.
pub(crate) fn set_option(args: &mut Vec<String>, option: &str, value: &str) {
    let joined = format!("{option}=");
    if let Some(i) = args.iter().position(|a| a == option) {
        match args.get_mut(i + 1) {
            Some(v) => *v = value.to_owned(),
            None => args.push(value.to_owned()),
        }
    } else if let Some(a) = args.iter_mut().find(|a| a.starts_with(&joined)) {
        *a = format!("{joined}{value}");
    } else {
        args.extend([option.to_owned(), value.to_owned()]);
    }
}

/// A cell of a snapshot: its value, and for atomic columns its `writetime()` and `ttl()`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    /// The value (UDT keyspaces blanked), as debug text.
    pub(crate) value: String,
    /// `writetime(col)`.
    pub(crate) writetime: Option<i64>,
    /// `ttl(col)`.
    pub(crate) ttl: Option<i32>,
}

/// A table's contents: per primary key (debug text), per column, the cell.
pub(crate) type Snapshot = BTreeMap<String, BTreeMap<String, Cell>>;

/// A value as comparable text (UDT keyspaces blanked).
fn value_text(v: &Option<CqlValue>) -> String {
    match v {
        None => "null".to_owned(),
        Some(v) => {
            let mut v = v.clone();
            retarget_udts(&mut v, "");
            format!("{v:?}")
        }
    }
}

/// Runs a SELECT; returns column names and rows.
async fn select_rows(session: &Session, text: &str) -> anyhow::Result<(Vec<String>, Vec<Row>)> {
    let result = session
        .query_unpaged(text, ())
        .await
        .with_context(|| format!("`{text}` failed"))?
        .into_rows_result()?;
    let names = result
        .column_specs()
        .iter()
        .map(|s| s.name().to_owned())
        .collect();
    let rows = result.rows::<Row>()?.collect::<Result<Vec<_>, _>>()?;
    Ok((names, rows))
}

/// Reads every row of `ks.table` with `writetime()` and `ttl()` of its atomic non-key
/// columns.
pub(crate) async fn snapshot(session: &Session, ks: &str, table: &str) -> anyhow::Result<Snapshot> {
    let schema = read_table_schema(session, ks, table)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let q = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let keys: Vec<String> = schema.key_columns().iter().map(|c| q(&c.name)).collect();
    let key_count = keys.len();
    let target = format!("{}.{}", q(ks), q(table));
    let (names, rows) = select_rows(session, &format!("SELECT * FROM {target}")).await?;
    let key_of = |row: &Row, names: &[String]| -> String {
        schema
            .key_columns()
            .iter()
            .map(|c| {
                let pos = names.iter().position(|n| *n == c.name);
                value_text(&pos.and_then(|p| row.columns.get(p).cloned()).flatten())
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut snap = Snapshot::new();
    for row in &rows {
        let key = key_of(row, &names);
        let cells = snap.entry(key).or_default();
        for (name, v) in names.iter().zip(&row.columns) {
            if schema.key_columns().iter().any(|c| &c.name == name) {
                continue;
            }
            cells.insert(
                name.clone(),
                Cell {
                    value: value_text(v),
                    writetime: None,
                    ttl: None,
                },
            );
        }
    }
    for c in schema.columns.iter().skip(key_count) {
        if c.value_kind != ValueKind::Atomic {
            continue;
        }
        let text = format!(
            "SELECT {}, writetime({col}), ttl({col}) FROM {target}",
            keys.join(", "),
            col = q(&c.name)
        );
        let (names, rows) = select_rows(session, &text).await?;
        for row in &rows {
            let key = key_of(row, &names);
            let wt = match row.columns.get(key_count) {
                Some(Some(CqlValue::BigInt(t))) => Some(*t),
                _ => None,
            };
            let ttl = match row.columns.get(key_count + 1) {
                Some(Some(CqlValue::Int(t))) => Some(*t),
                _ => None,
            };
            if let Some(cell) = snap.get_mut(&key).and_then(|cells| cells.get_mut(&c.name)) {
                cell.writetime = wt;
                cell.ttl = ttl;
            }
        }
    }
    Ok(snap)
}

/// The differences between two snapshots (TTLs may differ by 2 s), empty when they match.
pub(crate) fn differences(source: &Snapshot, destination: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (key, cells) in source {
        let Some(other) = destination.get(key) else {
            out.push(format!("row ({key}) is missing"));
            continue;
        };
        for (col, cell) in cells {
            match other.get(col) {
                None => out.push(format!("({key}).{col} is missing")),
                Some(o) => {
                    let ttl_ok = match (cell.ttl, o.ttl) {
                        (None, None) => true,
                        (Some(a), Some(b)) => (a - b).abs() <= 2,
                        _ => false,
                    };
                    if o.value != cell.value || o.writetime != cell.writetime || !ttl_ok {
                        out.push(format!("({key}).{col}: source {cell:?}, destination {o:?}"));
                    }
                }
            }
        }
    }
    for key in destination.keys() {
        if !source.contains_key(key) {
            out.push(format!("row ({key}) is extra on the destination"));
        }
    }
    out
}

/// A program under test that should be running: in this process ([`Running`]) or a child
/// process ([`Process`]).
pub(crate) trait StillRunning {
    /// Fails, with what the program left (its result, its stderr), if it has ended.
    async fn still_running(&mut self) -> anyhow::Result<()>;
}

impl StillRunning for Running {
    async fn still_running(&mut self) -> anyhow::Result<()> {
        self.check_running().await
    }
}

impl StillRunning for Process {
    async fn still_running(&mut self) -> anyhow::Result<()> {
        self.check_running()
    }
}

/// Waits until `ks.table` has the same contents on both sessions (`dest_ks` on the
/// destination), failing early if `program` ends.
pub(crate) async fn wait_converged(
    program: &mut impl StillRunning,
    source: &Arc<Session>,
    destination: &Arc<Session>,
    ks: &str,
    dest_ks: &str,
    table: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        program.still_running().await?;
        let last = match (
            snapshot(source, ks, table).await,
            snapshot(destination, dest_ks, table).await,
        ) {
            (Ok(a), Ok(b)) => {
                let diff = differences(&a, &b);
                if diff.is_empty() {
                    return Ok(());
                }
                format!("{diff:#?}")
            }
            (Err(e), _) | (_, Err(e)) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{table} did not converge in {timeout:?}: {last}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Waits (at most `timeout`) until `ks.table` is the same on the source `s` and the
/// destination `d` ([`wait_converged`]), then stops the replicator, which must end well.
pub(crate) async fn converge_then_stop(
    mut replicator: Running,
    s: &Arc<Session>,
    d: &Arc<Session>,
    ks: &str,
    table: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    wait_converged(&mut replicator, s, d, ks, ks, table, timeout).await?;
    assert_eq!(replicator.stop(Duration::from_secs(30)).await?, Ok(()));
    Ok(())
}

/// The prefixes of the variables the programs read their flags from.
pub(crate) const PROGRAM_ENV_PREFIXES: [&str; 4] = [
    "SCYLLA_CDC_PRINTER_",
    "SCYLLA_CDC_REPLICATOR_",
    "SCYLLA_CDC_KAFKA_",
    "SCYLLA_EMULATOR_",
];

/// A program running as a child process (a `CARGO_BIN_EXE_*` binary), its stdout and stderr
/// in files of a test's directory; killed if the test drops it.
pub(crate) struct Process {
    /// The name of its output files (`<name>.out`, `<name>.err`) and of it in messages.
    pub(crate) name: String,
    pub(crate) child: tokio::process::Child,
    pub(crate) stdout: PathBuf,
    pub(crate) stderr: PathBuf,
}

impl Process {
    /// Starts `binary` with `args`, its output in `dir`.
    pub(crate) fn spawn(
        binary: &str,
        name: &str,
        args: &[String],
        dir: &TempDir,
    ) -> anyhow::Result<Self> {
        Self::spawn_logging(binary, name, args, dir, None)
    }

    /// As [`Process::spawn`], with `RUST_LOG` set to `log` (`None`: the program's default).
    pub(crate) fn spawn_logging(
        binary: &str,
        name: &str,
        args: &[String],
        dir: &TempDir,
        log: Option<&str>,
    ) -> anyhow::Result<Self> {
        Self::start(binary, name, args, dir, log, &[])
    }

    /// As [`Process::spawn`], with the environment variables `env` set (flags of the
    /// program: `SCYLLA_CDC_PRINTER_HOSTS`, ...).
    pub(crate) fn spawn_with_env(
        binary: &str,
        name: &str,
        args: &[String],
        dir: &TempDir,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        Self::start(binary, name, args, dir, None, env)
    }

    fn start(
        binary: &str,
        name: &str,
        args: &[String],
        dir: &TempDir,
        log: Option<&str>,
        env: &[(&str, &str)],
    ) -> anyhow::Result<Self> {
        let stdout = PathBuf::from(dir.write(&format!("{name}.out"), ""));
        let stderr = PathBuf::from(dir.write(&format!("{name}.err"), ""));
        let mut command = tokio::process::Command::new(binary);
        match log {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        // The programs take any flag from their variables: none of the test's environment.
        for (key, _) in std::env::vars_os() {
            if key
                .to_str()
                .is_some_and(|k| PROGRAM_ENV_PREFIXES.iter().any(|p| k.starts_with(p)))
            {
                command.env_remove(key);
            }
        }
        command.envs(env.iter().copied());
        let child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout)?)
            .stderr(std::fs::File::create(&stderr)?)
            // A failing test leaves no process behind.
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {binary}"))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            stdout,
            stderr,
        })
    }

    /// What it has written to stdout so far.
    pub(crate) fn out(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What it has written to stderr so far.
    pub(crate) fn err(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Fails if the program has ended (it should be running), with its stderr.
    pub(crate) fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!("{} ended early ({status}): {}", self.name, self.err());
        }
        Ok(())
    }

    /// SIGTERM, as an operator or a service manager stops the program.
    pub(crate) fn sigterm(&self) -> anyhow::Result<()> {
        let pid = self.child.id().context("no pid: the program has ended")?;
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -TERM {pid} failed");
        Ok(())
    }

    /// Waits (at most `timeout`) for the program to end; its exit code (`None`: ended by a
    /// signal).
    pub(crate) async fn exit_code(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        let status = tokio::time::timeout(timeout, self.child.wait())
            .await
            .with_context(|| {
                format!("{} did not end in {timeout:?}: {}", self.name, self.err())
            })??;
        Ok(status.code())
    }
}

/// A temporary directory removed on drop.
pub(crate) struct TempDir(std::path::PathBuf);

impl TempDir {
    /// A new, empty directory under the system's temporary directory.
    pub(crate) fn new() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "scylla-cdc-test-{}-{}",
            std::process::id(),
            scylla_cdc_test_utils::unique_keyspace_name()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    /// The directory.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Writes `text` to the file `name` in it; returns the file's path.
    pub(crate) fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Rows of `{ks}.mck` (`pk int, c1 int, c2 text, c3 int, v int`, clustering `(c1, c2, c3)`)
/// in partition 1, a grid for [`mck_range_deletes`]: one batch per `c1` in 0..16, of every
/// `c2` in `a`..`e` and `c3` in 1..=4. Shared by the replication matrices.
pub(crate) fn mck_grid(ks: &str) -> Vec<String> {
    (0..16)
        .map(|c1| {
            let mut batch = String::from("BEGIN UNLOGGED BATCH ");
            for c2 in ["a", "b", "c", "d", "e"] {
                for c3 in 1..=4 {
                    batch.push_str(&format!(
                        "INSERT INTO {ks}.mck (pk, c1, c2, c3, v) VALUES (1, {c1}, '{c2}', {c3}, {}); ",
                        c1 * 100 + c3
                    ));
                }
            }
            batch.push_str("APPLY BATCH");
            batch
        })
        .collect()
}

/// Range deletes of every shape on `{ks}.mck` (`pk int, c1 int, c2 text, c3 int, v int`,
/// clustering `(c1, c2, c3)`) in partition 1: slices on each clustering prefix, a single row,
/// and a batch that inserts a row and deletes its range. Shared by the replication matrices.
pub(crate) fn mck_range_deletes(ks: &str) -> Vec<String> {
    let m = format!("{ks}.mck");
    let mut s: Vec<String> = [
        "c1 > 1 AND c1 <= 3",
        "c1 >= 14",
        "c1 < 1",
        "c1 = 5",
        "c1 = 6 AND c2 > 'b' AND c2 <= 'd'",
        "c1 = 7 AND c2 = 'c' AND c3 >= 2 AND c3 < 4",
        "c1 = 8 AND c2 >= 'c'",
        "c1 = 9 AND c2 < 'b'",
        "c1 = 10 AND c2 >= 'c' AND c2 < 'e'",
        "c1 > 10 AND c1 < 12",
        "c1 = 13 AND c2 = 'a' AND c3 > 3",
    ]
    .iter()
    .map(|range| format!("DELETE FROM {m} WHERE pk = 1 AND {range}"))
    .collect();
    s.extend([
        format!("DELETE FROM {m} WHERE pk = 1 AND c1 = 4 AND c2 = 'a' AND c3 = 1"),
        format!(
            "BEGIN BATCH INSERT INTO {m} (pk, c1, c2, c3, v) VALUES (1, 20, 'a', 1, 1); \
             DELETE FROM {m} WHERE pk = 1 AND c1 >= 20 AND c1 <= 21; APPLY BATCH"
        ),
    ]);
    s
}

/// Held by the tests whose assertions measure time (a rate, a deadline, a latency), and the
/// one that loads the machine most (`option_bounds`: six programs at once):
/// no two of them run at once, so that each shares the process (where the harness runs two
/// tests at a time, from every module) only with tests that do not measure time. A test takes
/// it first thing (`let _alone = timing_sensitive().await;`).
pub(crate) async fn timing_sensitive() -> tokio::sync::MutexGuard<'static, ()> {
    static TIMING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TIMING.lock().await
}

impl Process {
    /// SIGKILL, and waits for the process to be gone.
    pub(crate) async fn kill9(&mut self) -> anyhow::Result<()> {
        // tokio's `kill` sends SIGKILL on Unix.
        self.child.kill().await?;
        Ok(())
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`, ...) with `kill`.
    pub(crate) fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let pid = self.child.id().context("no pid: the program has ended")?;
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -{signal} {pid} failed");
        Ok(())
    }

    /// SIGTERM (a graceful stop: hand the units back, save checkpoints) and the exit code.
    pub(crate) async fn terminate(&mut self, timeout: Duration) -> anyhow::Result<Option<i32>> {
        self.signal("TERM")?;
        self.exit_code(timeout).await
    }

    /// The units this member held at its last progress line (`owns K of N units (M
    /// members)`): `(K, N, M)`.
    pub(crate) fn last_share(&self) -> Option<(usize, usize, usize)> {
        let err = self.err();
        let line = err.lines().rev().find(|l| l.contains(" owns "))?;
        let rest = line.split(" owns ").nth(1)?;
        let mut words = rest.split_whitespace();
        let owned = words.next()?.parse().ok()?;
        let _of = words.next()?;
        let units = words.next()?.parse().ok()?;
        let _units = words.next()?;
        let members = words.next()?.trim_start_matches('(').parse().ok()?;
        Some((owned, units, members))
    }
}

/// Waits until the members' last progress lines show the units divided evenly among them (±
/// 1), each counting all of them as members and units; `units`, when known (an embedded
/// cluster), is how many there are.
pub(crate) async fn wait_balanced(
    what: &str,
    members: &mut [Process],
    units: Option<usize>,
) -> anyhow::Result<()> {
    let n = members.len();
    wait_for(what, Duration::from_secs(60), || {
        let mut check = || -> anyhow::Result<bool> {
            let mut shares = Vec::new();
            for m in members.iter_mut() {
                m.check_running()?;
                shares.push(m.last_share());
            }
            let Some(shares) = shares.into_iter().collect::<Option<Vec<_>>>() else {
                return Ok(false);
            };
            let total = shares[0].1;
            Ok(units.is_none_or(|u| u == total)
                && shares.iter().all(|&(owned, u, m)| {
                    u == total && m == n && (owned == total / n || owned == total.div_ceil(n))
                })
                && shares.iter().map(|s| s.0).sum::<usize>() == total)
        };
        std::future::ready(check())
    })
    .await
}
