//! `scylla-emulator`: runs an embedded ScyllaDB-compatible cluster as its own process.
//!
//! With `--preload <ks>.<table>:partitions=<P>,rows=<R>[,preimage][,postimage]` (repeatable)
//! it first creates and fills CDC tables (see `Preload`), reporting progress on stderr.
//!
//! Prints exactly one line `ready <node1-address>:<port>` on stdout once every node accepts
//! connections, then reads commands from stdin, one per line, answering each with `ok` or
//! `error: <reason>`:
//!
//! - `stop-node <i>` / `start-node <i>`: stop or restart node *i* (1-based);
//! - `add-node`: add a node (answers `ok <generation timestamp ms>`);
//! - `split-tablets <ks>.<table>`: double a tablet table's tablets (answers `ok <timestamp ms>`);
//! - `fault <rule>` / `clear-faults`: add a fault-injection rule (see `FaultRule::parse`) or
//!   remove them all;
//! - `stats`: print request counts per node and shard;
//! - `connections [lz4|snappy]`: print the client connections open per node and shard
//!   (`ok 1/0=2 1/1=1 ...`), or only those that negotiated that frame compression (to check
//!   that a driver asked for lz4 or snappy compresses on every connection);
//! - `cql <statement>`: run one CQL statement through the driver, as a client would (a quick
//!   way to create tables and write changes without `cqlsh`), at the console's consistency
//!   level; rows of a result are printed first, one line each (`column = value, ...`, values
//!   as CQL literals), then `ok <n> rows`;
//! - `consistency [<level>]`: as cqlsh's `CONSISTENCY`, print the consistency level of `cql`
//!   statements (`Current consistency level is ONE.`, then `ok`) or set it, in any case
//!   (`Consistency level set to QUORUM.`, then `ok`). It is ONE at start, as in cqlsh, so
//!   that one node answers reads of `system_distributed` and other RF 1 data;
//! - `shutdown`: answer `ok` and stop.
//!
//! With `--tls-cert-file` and `--tls-key-file` every node also listens on a TLS port and a
//! shard-aware TLS port (`--tls-port`, `--shard-aware-tls-port`; 9142 and 19142 by default,
//! as Scylla's); `--tls-require-client-cert --tls-ca-file` asks clients for certificates.
//! `--tls-test-ca DIR` makes the certificates itself and writes the CA (`ca.pem`) and a client
//! certificate (`client.pem`, `client.key`) to DIR, for conformance suites.
//! Both ports are announced on stderr before the `ready` line. With `--tls-only` the CQL port
//! and the shard-aware port themselves speak TLS and nothing speaks plaintext, as Scylla with
//! `client_encryption_options` enabled and no `native_transport_port_ssl`: the `ready` line
//! then names a TLS endpoint, and the console's `cql` connects over TLS.
//!
//! Runs until SIGINT or SIGTERM (whatever stdin is: a terminal, a pipe held open, closed),
//! or until a `shutdown` command; both stop the cluster and exit with status 0.

use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

use clap::FromArgMatches;
use num_bigint::BigInt;
use scylla::client::session::Session;
use scylla::errors::RequestAttemptError;
use scylla::policies::retry::{
    DefaultRetryPolicy, RequestInfo, RetryDecision, RetryPolicy, RetrySession,
};
use scylla::statement::Consistency;
use scylla::statement::unprepared::Statement;
use scylla::value::CqlValue;
use scylla_emulator::cli::{Args, LogFormat, command, exit_code};
use scylla_emulator::{ClusterBuilder, EmbeddedCluster, FaultRule, PreloadProgress, TestCa};
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The emulator allocates many small, short-lived values (cells, keys, mutations, frames):
/// mimalloc serves them with less CPU than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Lets mimalloc back the heap with (transparent) huge pages. A preloaded emulator grows to
/// gigabytes; with 4 KiB pages the kernel's page-fault handling alone took a third of the
/// preload's CPU time (10 M rows: 26 s of system time), with huge pages it is a fraction.
/// Set before the heap grows: the option applies to memory mimalloc reserves afterwards.
// The only unsafe call of the crate: mimalloc's option setter has no safe wrapper.
#[allow(unsafe_code)]
fn use_large_pages() {
    // SAFETY: `mi_option_set_enabled` only stores the option's value; it takes no pointers
    // and is safe to call at any time.
    unsafe {
        libmimalloc_sys::mi_option_set_enabled(libmimalloc_sys::mi_option_large_os_pages, true);
    }
}

/// `--log-format`, once the arguments are parsed (text until then).
static LOG_FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// Writes a line of the emulator's own on stderr (preload progress, announcements, errors):
/// as text (`error: ` before an error), or as one JSON object like the log's with
/// `--log-format json`. `level` is INFO or ERROR.
fn note(level: &str, message: &str) {
    match LOG_FORMAT.get() {
        Some(LogFormat::Json) => eprintln!(
            "{}",
            serde_json::json!({
                "timestamp": chrono::Utc::now()
                    .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                "level": level,
                "message": message,
                "target": "scylla_emulator",
            })
        ),
        _ if level == "ERROR" => eprintln!("error: {message}"),
        _ => eprintln!("{message}"),
    }
}

/// Prints preload progress on stderr.
fn print_progress(p: &PreloadProgress) {
    let secs = p.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        p.rows_done as f64 / secs
    } else {
        0.0
    };
    note(
        "INFO",
        &format!(
            "preload {}: {}/{} rows ({:.0}%) in {secs:.1} s, {rate:.0} rows/s",
            p.table,
            p.rows_done,
            p.rows_total,
            100.0 * p.rows_done as f64 / p.rows_total.max(1) as f64
        ),
    );
}

#[tokio::main]
async fn main() -> ExitCode {
    use_large_pages();
    let args = match Args::from_arg_matches(&command().get_matches()) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    init_logging(args.log_format);
    let _ = LOG_FORMAT.set(args.log_format);
    let builder = match cluster_builder(args) {
        Ok(b) => b,
        Err(e) => {
            note("ERROR", &e);
            return ExitCode::from(exit_code::USAGE);
        }
    };
    // Listen for the signals before anything else: from here on SIGTERM and SIGINT stop the
    // emulator cleanly (exit status 0) instead of killing it, whatever stdin is.
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            note("ERROR", &format!("cannot listen for signals: {e}"));
            return ExitCode::from(exit_code::FAILURE);
        }
    };
    let cluster = match builder.start().await {
        Ok(c) => c,
        Err(e) => {
            note("ERROR", &e.to_string());
            return ExitCode::from(exit_code::FAILURE);
        }
    };
    if let (Some(tls), Some(shard_aware)) =
        (cluster.tls_contact_point(), cluster.shard_aware_tls_port())
    {
        // Scylla's controller logs each listener it opens, the encrypted ones too.
        if cluster.is_tls_only() {
            note(
                "INFO",
                &format!(
                    "listening for TLS CQL clients only on {tls} (shard-aware TLS port \
                     {shard_aware}); no port speaks plaintext"
                ),
            );
        } else {
            note(
                "INFO",
                &format!(
                    "listening for TLS CQL clients on {tls} (shard-aware TLS port {shard_aware})"
                ),
            );
        }
    }
    println!("ready {}", cluster.contact_point());
    serve_console(&cluster, &mut signals).await;
    cluster.shutdown().await;
    // The stdin thread may still be blocked in a read (a terminal or a pipe held open):
    // returning from `main` ends the process without waiting for it.
    ExitCode::from(exit_code::OK)
}

/// Logs to stderr, filtered by `RUST_LOG`, as text or JSON (`--log-format`). Colour codes
/// only in text on a terminal, and never with NO_COLOR set (<https://no-color.org>): a log
/// file or a pipe gets plain text. JSON is one object per line, its fields at the top level,
/// as the other programs write it.
fn init_logging(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            builder.with_ansi(colour).init();
        }
        LogFormat::Json => builder.json().flatten_event(true).with_ansi(false).init(),
    }
}

/// The cluster the arguments describe, or why they describe none (exit status 2).
fn cluster_builder(args: Args) -> Result<ClusterBuilder, String> {
    if args.tls_require_client_cert
        && args.tls_test_ca.is_none()
        && (args.tls_ca_file.is_none() || args.tls_cert_file.is_none())
    {
        return Err(
            "--tls-require-client-cert needs --tls-cert-file and --tls-ca-file, or --tls-test-ca"
                .into(),
        );
    }
    if args.tls_only && args.tls_cert_file.is_none() && args.tls_test_ca.is_none() {
        return Err("--tls-only needs --tls-cert-file and --tls-key-file, or --tls-test-ca".into());
    }
    if !(args.generation_delay.is_finite() && args.generation_delay >= 0.0) {
        return Err("--generation-delay must be a non-negative number of seconds".into());
    }
    let shard_aware_port = args.shard_aware_port.unwrap_or(if args.port == 0 {
        0
    } else {
        args.port.saturating_add(10000)
    });
    let mut builder = EmbeddedCluster::builder()
        .nodes(usize::from(args.nodes))
        .shards_per_node(args.shards)
        .vnodes_per_node(usize::from(args.vnodes))
        .port(args.port)
        .shard_aware_port(shard_aware_port)
        .address(args.address)
        .generation_delay(Duration::from_secs_f64(args.generation_delay))
        .default_cdc_ttl(args.cdc_ttl)
        .query_page_size_in_bytes(args.query_page_size_in_bytes)
        .query_tombstone_page_limit(args.query_tombstone_page_limit);
    if let (Some(user), Some(password)) = (args.username, args.password) {
        builder = builder.credentials(user, password);
    }
    let plus_100 = |p: u16| if p == 0 { 0 } else { p.saturating_add(100) };
    let tls_ports = (
        args.tls_port.unwrap_or(plus_100(args.port)),
        args.shard_aware_tls_port
            .unwrap_or(plus_100(shard_aware_port)),
    );
    if args.tls_only {
        builder = builder.tls_only();
    }
    // TLS ports besides the plaintext ones, unless the plaintext ones become TLS.
    let with_tls_ports = |builder: ClusterBuilder| {
        if args.tls_only {
            builder
        } else {
            builder.tls_ports(tls_ports.0, tls_ports.1)
        }
    };
    if let Some(dir) = &args.tls_test_ca {
        let ca = make_test_ca(dir).map_err(|e| format!("--tls-test-ca: {e}"))?;
        builder = with_tls_ports(builder.tls_signed_by(&ca, &["localhost"]));
        if args.tls_require_client_cert {
            builder = builder.tls_require_client_cert(ca.cert_pem());
        }
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) {
        let read = |path: &std::path::Path| {
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
        };
        let ca = args.tls_ca_file.as_deref().map(read).transpose()?;
        let (cert, key) = (read(cert)?, read(key)?);
        builder = with_tls_ports(builder.tls(cert, key));
        if let Some(ca) = ca {
            builder = builder.tls_require_client_cert(ca);
        }
    }
    for preload in args.preload {
        builder = builder.preload(preload.on_progress(print_progress));
    }
    Ok(builder)
}

/// `--tls-test-ca DIR`: a test CA and a client certificate of it, written to `dir` (`ca.pem`,
/// `client.pem`, `client.key`).
fn make_test_ca(dir: &std::path::Path) -> Result<TestCa, String> {
    let ca = TestCa::new("scylla-emulator test CA").map_err(|e| e.to_string())?;
    let client = ca
        .client_cert("scylla-emulator client")
        .map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (name, text) in [
        ("ca.pem", ca.cert_pem()),
        ("client.pem", client.cert_pem.as_str()),
        ("client.key", client.key_pem.as_str()),
    ] {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("cannot write {}: {e}", dir.join(name).display()))?;
    }
    Ok(ca)
}

/// Answers the console's commands from stdin, one per line, until `shutdown` or a signal
/// (when stdin closes, e.g. started in the background, it keeps serving until a signal).
async fn serve_console(cluster: &EmbeddedCluster, signals: &mut Signals) {
    let mut console = Console {
        cluster,
        session: None,
        consistency: Consistency::One,
    };
    let mut lines = stdin_lines();
    let mut stdin_open = true;
    loop {
        tokio::select! {
            signal = signals.next() => {
                note("INFO", &format!("{signal}: shutting down"));
                break;
            }
            line = lines.recv(), if stdin_open => match line {
                Some(line) => {
                    let line = line.trim();
                    if line.is_empty() {
                        continue;
                    }
                    if line == "shutdown" {
                        println!("ok");
                        break;
                    }
                    match console.run(line).await {
                        Ok(reply) if reply.is_empty() => println!("ok"),
                        Ok(reply) => println!("ok {reply}"),
                        Err(reason) => println!("error: {reason}"),
                    }
                }
                // stdin closed (e.g. started in the background): keep serving until a signal.
                None => stdin_open = false,
            },
        }
    }
}

/// SIGTERM and SIGINT, listened for from creation on.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    /// The name of the next signal received.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}

/// The lines of stdin, read on a thread of their own; the channel closes at end of input
/// or on a read error.
///
/// Not `tokio::io::stdin()`: tokio reads stdin with a blocking read on its blocking pool,
/// which cannot be cancelled, and dropping the runtime waits for it, so the emulator hung
/// on exit (after SIGTERM, SIGINT or `shutdown`) until stdin delivered a line or closed. A
/// detached thread does not hold the process when `main` returns.
fn stdin_lines() -> tokio::sync::mpsc::Receiver<String> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        // The channel's sender is gone with the closure: the console reads no input.
        note("ERROR", &format!("cannot read stdin: {e}"));
    }
    rx
}

/// The stdin console: runs one command line against the cluster.
struct Console<'a> {
    cluster: &'a EmbeddedCluster,
    /// The driver session of `cql` commands, connected on first use.
    session: Option<std::sync::Arc<Session>>,
    /// The consistency level of `cql` statements: ONE until `consistency <level>`, as in
    /// cqlsh.
    consistency: Consistency,
}

/// The levels `consistency` accepts, by their cqlsh names (cqlsh's `CONSISTENCY` command
/// takes any of them, in any case).
const CONSISTENCY_LEVELS: [(&str, Consistency); 11] = [
    ("ANY", Consistency::Any),
    ("ONE", Consistency::One),
    ("TWO", Consistency::Two),
    ("THREE", Consistency::Three),
    ("QUORUM", Consistency::Quorum),
    ("ALL", Consistency::All),
    ("LOCAL_QUORUM", Consistency::LocalQuorum),
    ("EACH_QUORUM", Consistency::EachQuorum),
    ("SERIAL", Consistency::Serial),
    ("LOCAL_SERIAL", Consistency::LocalSerial),
    ("LOCAL_ONE", Consistency::LocalOne),
];

/// The cqlsh name of a consistency level.
fn consistency_name(level: Consistency) -> &'static str {
    CONSISTENCY_LEVELS
        .iter()
        .find(|(_, l)| *l == level)
        .map_or("UNKNOWN", |(name, _)| name)
}

impl Console<'_> {
    /// Runs one command; `Ok` holds what follows `ok` on the reply line.
    async fn run(&mut self, line: &str) -> Result<String, String> {
        let (command, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let node_index = || -> Result<usize, String> {
            rest.parse::<usize>()
                .map_err(|_| format!("`{command}` needs a node number, not `{rest}`"))
        };
        match command {
            "stop-node" => self
                .cluster
                .stop_node(node_index()?)
                .await
                .map(|()| String::new())
                .map_err(|e| e.to_string()),
            "start-node" => self
                .cluster
                .start_node(node_index()?)
                .await
                .map(|()| String::new())
                .map_err(|e| e.to_string()),
            "add-node" => self
                .cluster
                .add_node()
                .await
                .map(|ts| ts.timestamp_millis().to_string())
                .map_err(|e| e.to_string()),
            "split-tablets" => {
                let (ks, table) = rest.split_once('.').ok_or_else(|| {
                    format!("`split-tablets` needs <keyspace>.<table>, not `{rest}`")
                })?;
                self.cluster
                    .split_tablets(ks, table)
                    .await
                    .map(|ts| ts.timestamp_millis().to_string())
                    .map_err(|e| e.to_string())
            }
            "fault" => {
                let rule = FaultRule::parse(rest)?;
                self.cluster.add_fault(rule);
                Ok(String::new())
            }
            "clear-faults" => {
                self.cluster.clear_faults();
                Ok(String::new())
            }
            "stats" => Ok(self
                .cluster
                .request_counts()
                .iter()
                .map(|((node, shard), n)| format!("{node}/{shard}={n}"))
                .collect::<Vec<_>>()
                .join(" ")),
            "connections" => {
                let counts = match rest {
                    "" => self.cluster.connection_counts(),
                    "lz4" | "snappy" => self.cluster.compressed_connection_counts(rest),
                    other => {
                        return Err(format!(
                            "`connections` takes lz4, snappy or nothing, not `{other}`"
                        ));
                    }
                };
                Ok(counts
                    .iter()
                    .map(|((node, shard), n)| format!("{node}/{shard}={n}"))
                    .collect::<Vec<_>>()
                    .join(" "))
            }
            "cql" => self.cql(rest).await,
            "consistency" => self.consistency(rest),
            _ => Err(format!("unknown command `{command}`")),
        }
    }

    /// `consistency`: prints the level of `cql` statements; `consistency <level>` sets it.
    /// Both print what cqlsh's `CONSISTENCY` prints.
    fn consistency(&mut self, level: &str) -> Result<String, String> {
        if level.is_empty() {
            println!(
                "Current consistency level is {}.",
                consistency_name(self.consistency)
            );
            return Ok(String::new());
        }
        let upper = level.to_ascii_uppercase();
        let Some((name, chosen)) = CONSISTENCY_LEVELS.iter().find(|(n, _)| *n == upper) else {
            let names: Vec<&str> = CONSISTENCY_LEVELS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "Improper consistency command: unknown level `{level}` (levels: {})",
                names.join(", ")
            ));
        };
        self.consistency = *chosen;
        println!("Consistency level set to {name}.");
        Ok(String::new())
    }

    /// Runs a CQL statement through the driver, printing result rows before the reply line.
    async fn cql(&mut self, statement: &str) -> Result<String, String> {
        if statement.is_empty() {
            return Err("`cql` needs a statement".into());
        }
        let session = match &self.session {
            Some(session) => session.clone(),
            None => {
                let session = self
                    .cluster
                    .session()
                    .await
                    .map_err(|e| format!("cannot connect: {e}"))?;
                self.session.insert(session).clone()
            }
        };
        let mut statement = Statement::new(statement);
        statement.set_consistency(self.consistency);
        statement.set_retry_policy(Some(std::sync::Arc::new(ConsoleRetryPolicy)));
        let result = session
            .query_unpaged(statement, ())
            .await
            .map_err(|e| e.to_string())?;
        if !result.is_rows() {
            return Ok(String::new());
        }
        let rows = result.into_rows_result().map_err(|e| e.to_string())?;
        let names: Vec<String> = rows
            .column_specs()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let mut count = 0usize;
        for row in rows
            .rows::<scylla::value::Row>()
            .map_err(|e| e.to_string())?
        {
            let row = row.map_err(|e| e.to_string())?;
            let cells: Vec<String> = names
                .iter()
                .zip(&row.columns)
                .map(|(name, value)| match value {
                    Some(v) => format!("{name} = {}", literal(v)),
                    None => format!("{name} = null"),
                })
                .collect();
            println!("{}", cells.join(", "));
            count += 1;
        }
        Ok(format!("{count} row{}", if count == 1 { "" } else { "s" }))
    }
}

/// The retry policy of `cql` statements: the driver's default, plus one retry on the next
/// node when the connection broke. Right after `stop-node` the session may still send a
/// statement on its connection to the stopped node, which the node had already closed: the
/// statement never ran there, so sending it to another node is safe even when it is not
/// idempotent (console commands run one at a time, so no statement is in flight during a
/// stop; a `drop-connection` fault also drops the request before it runs).
#[derive(Debug)]
struct ConsoleRetryPolicy;

impl RetryPolicy for ConsoleRetryPolicy {
    fn new_session(&self) -> Box<dyn RetrySession> {
        Box::new(ConsoleRetrySession {
            default: DefaultRetryPolicy::new().new_session(),
            retried_broken_connection: false,
        })
    }
}

/// One statement's retries under [`ConsoleRetryPolicy`].
struct ConsoleRetrySession {
    default: Box<dyn RetrySession>,
    retried_broken_connection: bool,
}

impl RetrySession for ConsoleRetrySession {
    fn decide_should_retry(&mut self, request_info: RequestInfo<'_>) -> RetryDecision {
        if matches!(
            request_info.error,
            RequestAttemptError::BrokenConnectionError(_)
        ) && !self.retried_broken_connection
        {
            self.retried_broken_connection = true;
            return RetryDecision::RetryNextTarget(None);
        }
        self.default.decide_should_retry(request_info)
    }

    fn reset(&mut self) {
        self.default.reset();
        self.retried_broken_connection = false;
    }
}

/// A value as a CQL literal: the driver's rendering, except that decimals and varints are
/// written as numbers (the driver writes `blobAsDecimal(0x...)`), also inside collections.
fn literal(value: &CqlValue) -> String {
    let join = |items: Vec<String>| items.join(", ");
    match value {
        CqlValue::Varint(v) => {
            BigInt::from_signed_bytes_be(v.as_signed_bytes_be_slice()).to_string()
        }
        CqlValue::Decimal(d) => {
            let (bytes, scale) = d.as_signed_be_bytes_slice_and_exponent();
            decimal_string(&BigInt::from_signed_bytes_be(bytes), scale)
        }
        CqlValue::List(items) => format!("[{}]", join(items.iter().map(literal).collect())),
        CqlValue::Set(items) => format!("{{{}}}", join(items.iter().map(literal).collect())),
        CqlValue::Map(entries) => format!(
            "{{{}}}",
            join(
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", literal(k), literal(v)))
                    .collect()
            )
        ),
        CqlValue::Tuple(fields) => format!(
            "({})",
            join(
                fields
                    .iter()
                    .map(|f| f.as_ref().map_or("null".into(), literal))
                    .collect()
            )
        ),
        CqlValue::UserDefinedType { fields, .. } => format!(
            "{{{}}}",
            join(
                fields
                    .iter()
                    .map(|(name, f)| format!(
                        "{name}: {}",
                        f.as_ref().map_or("null".into(), literal)
                    ))
                    .collect()
            )
        ),
        other => other.to_string(),
    }
}

/// `unscaled × 10^-scale` in decimal notation (`1250`, scale 2 → `12.50`; scale -2 → `125000`).
fn decimal_string(unscaled: &BigInt, scale: i32) -> String {
    let digits = unscaled.magnitude().to_string();
    let sign = if unscaled.sign() == num_bigint::Sign::Minus {
        "-"
    } else {
        ""
    };
    let Ok(scale) = usize::try_from(scale) else {
        return format!(
            "{sign}{digits}{}",
            "0".repeat(scale.unsigned_abs() as usize)
        );
    };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let digits = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = digits.split_at(digits.len() - scale);
    format!("{sign}{int}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_written_as_numbers() {
        let d = |n: i64, scale| decimal_string(&BigInt::from(n), scale);
        assert_eq!(d(1250, 2), "12.50");
        assert_eq!(d(-5, 3), "-0.005");
        assert_eq!(d(0, 1), "0.0");
        assert_eq!(d(42, 0), "42");
        assert_eq!(d(-125, -2), "-12500");
    }

    #[test]
    fn compound_values_nest_literals() {
        let v = CqlValue::Map(vec![(
            CqlValue::Text("tea".into()),
            CqlValue::List(vec![CqlValue::Int(1), CqlValue::Int(2)]),
        )]);
        assert_eq!(literal(&v), "{'tea': [1, 2]}");
        let t = CqlValue::Tuple(vec![Some(CqlValue::Boolean(true)), None]);
        assert_eq!(literal(&t), "(true, null)");
    }
}
