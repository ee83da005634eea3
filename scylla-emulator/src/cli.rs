//! The command line of the `scylla-emulator` binary: its flags ([`Args`], [`command`]), the
//! help text after them (the `ready` line, the console, the exit codes) and the exit codes
//! ([`exit_code`]). The binary parses its arguments with [`command`]; the workspace's tests
//! read the same definition to check the crate README's option table against it.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use clap::{CommandFactory, Parser};

use crate::Preload;

/// The exit codes of the `scylla-emulator` binary, as its `--help` states them.
pub mod exit_code {
    /// Stopped by SIGINT, SIGTERM or the console's `shutdown`.
    pub const OK: u8 = 0;
    /// The cluster could not start (a port in use, a certificate that cannot be read, ...).
    pub const FAILURE: u8 = 1;
    /// A bad argument; nothing was started.
    pub const USAGE: u8 = 2;
}

// The help headings, in the programs' words (scylla_cdc::cli::heading).
const CLUSTER: &str = "Cluster";
const CONNECTION: &str = "Connection";
const TLS_AND_CREDENTIALS: &str = "TLS and credentials";
const PRELOAD: &str = "Preload";
const OPERATION: &str = "Operation";

/// The prefix of the environment variables that set the emulator's flags
/// (`SCYLLA_EMULATOR_NODES` sets `--nodes`).
pub const ENV_PREFIX: &str = "SCYLLA_EMULATOR_";

/// What `--help` shows after the flags: the `ready` line, the console, examples, the
/// environment.
const AFTER_HELP: &str = "\
Ready line: once every node accepts connections, the emulator prints exactly one line \
ready HOST:PORT on stdout (node 1's CQL address; wait for it before connecting). With TLS, \
the TLS ports are announced on stderr before it.

Console: then it reads commands from stdin, one per line, and answers each with a line ok \
[VALUE] or error: REASON:
  stop-node I, start-node I  stop or restart node I (1-based)
  add-node                   add a node (ok GENERATION_TIMESTAMP_MS)
  split-tablets KS.TABLE     double a tablet table's tablets (ok TIMESTAMP_MS)
  fault RULE, clear-faults   add a fault-injection rule, or remove them all
  stats                      requests per node and shard (ok 1/0=12 1/1=9 ...)
  connections [lz4|snappy]   client connections per node and shard, or only the compressed
  cql STATEMENT              run one CQL statement through the driver: its rows, one line
                             each, then ok N rows
  consistency [LEVEL]        print or set the consistency level of cql (ONE at start, as in
                             cqlsh)
  shutdown                   answer ok and stop
It runs until SIGINT, SIGTERM or shutdown, whatever stdin is (a terminal, a pipe held open, \
closed).

Exit codes: 0 stopped (SIGINT, SIGTERM or shutdown), 1 the cluster could not start, 2 bad \
argument.

Examples:
  scylla-emulator --nodes 3
  scylla-emulator --port 0 --preload ks.t:partitions=100,rows=1000
  scylla-emulator --tls-test-ca /tmp/emulator-ca --user cassandra --password cassandra

Environment: every flag can also be set by the variable SCYLLA_EMULATOR_ followed by the \
flag's long name in upper case, - as _ (e.g. SCYLLA_EMULATOR_NODES=3); a flag without a \
value takes true or false, an empty variable counts as unset. The command line takes \
precedence.";

/// An embedded, in-process ScyllaDB-compatible cluster (CQL native protocol v4).
#[derive(Debug, Parser)]
#[command(name = "scylla-emulator", version, after_help = AFTER_HELP)]
pub struct Args {
    /// Number of nodes.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=250), help_heading = CLUSTER)]
    pub nodes: u16,
    /// Shards per node.
    #[arg(long, value_name = "N", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=256), help_heading = CLUSTER)]
    pub shards: u32,
    /// Vnode tokens per node.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..=4096), help_heading = CLUSTER)]
    pub vnodes: u16,
    /// CQL port of every node (0 = any free port).
    #[arg(long, default_value_t = 9042, help_heading = CONNECTION)]
    pub port: u16,
    /// Shard-aware port of every node (default: port + 10000, or any free port with --port 0).
    #[arg(long, value_name = "PORT", help_heading = CONNECTION)]
    pub shard_aware_port: Option<u16>,
    /// Address of node 1; node i listens on the address i - 1 above it.
    #[arg(long, default_value = "127.0.0.1", help_heading = CONNECTION)]
    pub address: Ipv4Addr,
    /// User name required by the PasswordAuthenticator (with --password; --username is the
    /// same flag).
    #[arg(long = "user", alias = "username", value_name = "USER", requires = "password",
          help_heading = TLS_AND_CREDENTIALS)]
    pub username: Option<String>,
    /// Password required by the PasswordAuthenticator (with --user).
    #[arg(long, value_name = "PASSWORD", requires = "username",
          help_heading = TLS_AND_CREDENTIALS)]
    pub password: Option<String>,
    /// Server certificate chain (PEM, leaf first): opens a TLS port and a shard-aware TLS
    /// port on every node besides the plaintext ones, as Scylla's client_encryption_options
    /// with native_transport_port_ssl (with --tls-key-file).
    #[arg(long, value_name = "PEM", requires = "tls_key_file", help_heading = TLS_AND_CREDENTIALS)]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key of --tls-cert-file (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert_file", help_heading = TLS_AND_CREDENTIALS)]
    pub tls_key_file: Option<PathBuf>,
    /// Mutual TLS: a client must present a certificate signed by --tls-ca-file (or by the
    /// CA of --tls-test-ca).
    #[arg(long, help_heading = TLS_AND_CREDENTIALS)]
    pub tls_require_client_cert: bool,
    /// CA certificates (PEM) that client certificates must chain to.
    #[arg(long, value_name = "PEM", requires = "tls_require_client_cert",
          help_heading = TLS_AND_CREDENTIALS)]
    pub tls_ca_file: Option<PathBuf>,
    /// Make a test CA, write it to DIR/ca.pem with a client certificate it signs
    /// (DIR/client.pem, DIR/client.key), and serve the TLS ports with a server certificate
    /// it signs for every node address (instead of --tls-cert-file; for conformance tests).
    #[arg(long, value_name = "DIR", conflicts_with = "tls_cert_file", help_heading = TLS_AND_CREDENTIALS)]
    pub tls_test_ca: Option<PathBuf>,
    /// The CQL port and the shard-aware port themselves speak TLS, and no port speaks
    /// plaintext: Scylla's client_encryption_options without native_transport_port_ssl
    /// (with --tls-cert-file or --tls-test-ca; no --tls-port).
    #[arg(long, conflicts_with_all = ["tls_port", "shard_aware_tls_port"],
          help_heading = TLS_AND_CREDENTIALS)]
    pub tls_only: bool,
    /// TLS port of every node (default: port + 100, Scylla's 9142 beside 9042; any free port
    /// with --port 0).
    #[arg(long, value_name = "PORT", help_heading = CONNECTION)]
    pub tls_port: Option<u16>,
    /// Shard-aware TLS port of every node (default: shard-aware port + 100, Scylla's 19142;
    /// any free port with --port 0).
    #[arg(long, value_name = "PORT", help_heading = CONNECTION)]
    pub shard_aware_tls_port: Option<u16>,
    /// Seconds between a node joining and the start of its CDC generation.
    #[arg(long, value_name = "SECONDS", default_value_t = 65.0, help_heading = CLUSTER)]
    pub generation_delay: f64,
    /// Default ttl (seconds) of the cdc table option.
    #[arg(long, value_name = "SECONDS", default_value_t = 86400, help_heading = CLUSTER)]
    pub cdc_ttl: u32,
    /// Scylla's query_page_size_in_bytes: a paged SELECT cuts its page after the row that
    /// takes the page's data past this many bytes.
    #[arg(long, alias = "query_page_size_in_bytes", value_name = "BYTES", default_value_t = 1 << 20,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = CLUSTER)]
    pub query_page_size_in_bytes: u64,
    /// Scylla's query_tombstone_page_limit: a paged SELECT cuts its page after this many
    /// tombstones, even when the page is then empty.
    #[arg(long, alias = "query_tombstone_page_limit", value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = CLUSTER)]
    pub query_tombstone_page_limit: u64,
    /// Create and fill a CDC table (pk bigint, ck bigint, v blob) with P x R single-row
    /// inserts before printing ready (repeatable).
    #[arg(
        long,
        value_name = "KS.TABLE:partitions=P,rows=R[,preimage][,postimage]",
        value_parser = parse_preload,
        help_heading = PRELOAD
    )]
    pub preload: Vec<Preload>,
    /// Log lines on stderr as text, or as one JSON object per line (timestamp, level,
    /// target, message and the event's fields); RUST_LOG filters either.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text,
          help_heading = OPERATION)]
    pub log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event.
    Text,
    /// One JSON object per line.
    Json,
}

/// The emulator's command line: every flag with a long name (but --help and --version) can
/// also be set by `SCYLLA_EMULATOR_` and the long name in upper snake case. The same
/// convention as the other programs' (`scylla_cdc::cli::env_prefixed`, which this binary,
/// independent of the CDC library, cannot call): the command line wins, an empty variable
/// is unset, a flag's variable holds true or false.
pub fn command() -> clap::Command {
    Args::command().mut_args(|arg| {
        let id = arg.get_id().as_str();
        let Some(long) = arg.get_long() else {
            return arg;
        };
        if id == "help" || id == "version" || arg.get_env().is_some() {
            return arg;
        }
        let name = format!(
            "{ENV_PREFIX}{}",
            long.to_ascii_uppercase().replace('-', "_")
        );
        let flag = matches!(arg.get_action(), clap::ArgAction::SetTrue);
        if let Some(value) = std::env::var_os(&name) {
            let falsy = value.to_str().is_some_and(|v| {
                ["false", "no", "off", "0", "n", "f"]
                    .contains(&v.trim().to_ascii_lowercase().as_str())
            });
            // clap counts a variable as the flag given, even empty or false.
            if value.is_empty() || (flag && falsy) {
                return arg;
            }
        }
        let arg = if flag {
            arg.value_parser(clap::builder::BoolishValueParser::new())
        } else {
            arg
        };
        arg.env(name).hide_env_values(true)
    })
}

/// Parses a `--preload` value, with the reason when it does not parse.
fn parse_preload(spec: &str) -> Result<Preload, String> {
    spec.parse::<Preload>().map_err(|e| e.reason)
}
