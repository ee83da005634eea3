//! The replicator's command line: [`Args`] as clap parses it, checked and resolved into a
//! [`Config`] by [`Args::into_config`] before anything is contacted.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{CommandFactory, FromArgMatches, Parser};
use scylla::client::session::Session;
use scylla::statement::Consistency;

use scylla_cdc::cli::args::{env_help, get_matches};
use scylla_cdc::cli::metrics_http::metrics_addr_arg;
use scylla_cdc::cli::resolve_range;
use scylla_cdc::cli::secure::{
    CredentialFlags, Credentials, TlsFlags, TlsOptions, resolve_credentials,
};
use scylla_cdc::cli::{
    CliError, GroupFlags, GroupSettings, LogArgs, LogFormat, OnError, ReadingArgs, TimeRangeArgs,
    TimeSpec, checkpoint_interval_arg, connect, env_prefixed, heading, hosts_arg,
    long_interval_arg, on_error_arg, parse_name, parse_time, progress_interval_arg, qualified_arg,
    tables_arg,
};

pub use scylla_cdc::cli::{Hosts, QualifiedTable, StartAt, Tables};

/// Parses a consistency level name (`LOCAL_QUORUM`, `quorum`, `one`, ...).
pub fn parse_consistency(text: &str) -> Result<Consistency, String> {
    Ok(
        match text.trim().to_ascii_uppercase().replace('-', "_").as_str() {
            "ANY" => Consistency::Any,
            "ONE" => Consistency::One,
            "TWO" => Consistency::Two,
            "THREE" => Consistency::Three,
            "QUORUM" => Consistency::Quorum,
            "ALL" => Consistency::All,
            "LOCAL_QUORUM" => Consistency::LocalQuorum,
            "EACH_QUORUM" => Consistency::EachQuorum,
            "LOCAL_ONE" => Consistency::LocalOne,
            _ => {
                return Err(format!(
                    "`{text}` is not a write consistency level (ANY, ONE, TWO, THREE, QUORUM, ALL, \
                     LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE)"
                ));
            }
        },
    )
}

/// clap parser of a count from 1 to 65536 (`--max-in-flight`, `verify --ranges`, ...).
pub(crate) fn count_arg(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a number from 1 to 65536")),
    }
}

/// clap parser of `--max-mib-in-flight`: 1 to 4095.
fn mib_arg(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=4095).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a number of MiB from 1 to 4095")),
    }
}

/// clap parser of `--max-in-flight`: 1 to 65536.
fn max_in_flight(text: &str) -> Result<usize, String> {
    count_arg(text).map(|n| n as usize)
}

/// The prefix of the environment variables that set the replicator's flags, `verify`'s
/// included (`SCYLLA_CDC_REPLICATOR_SOURCE` sets `--source`).
pub const ENV_PREFIX: &str = "SCYLLA_CDC_REPLICATOR_";

/// The exit code of `verify` (and of `--verify-after`) when the tables differ: distinct from
/// a failure to compare them ([`scylla_cdc::cli::exit_code`]'s `RUNTIME`, `CONNECT`,
/// `SCHEMA`).
pub const EXIT_DIFFERENT: u8 = 5;

/// The exit codes, as `--help` states them.
const EXIT_CODES: &str = "Exit codes: 0 stopped (or, with --verify-after, the tables are \
equal), 1 failure while running, 2 bad argument, 3 cannot connect, 4 keyspace or table \
missing, without CDC, or not matching (or a lease table of another shape), 5 the tables differ \
(--verify-after).";

/// What `--help` shows after the flags: examples, exit codes, environment variables.
fn after_help() -> String {
    format!(
        "Examples:
  scylla-cdc-replicator --source 10.0.0.1 --destination 10.1.0.1 -k shop -t orders,items
  scylla-cdc-replicator --source 10.0.0.1 --destination 10.1.0.1 -k shop -t orders \
--create-destination-table --snapshot
  scylla-cdc-replicator --source 10.0.0.1 --destination 10.1.0.1 -k shop -t orders \
--start -1h --end now --verify-after
  scylla-cdc-replicator verify --source 10.0.0.1 --destination 10.1.0.1 -k shop -t orders

{EXIT_CODES}

{}",
        env_help(ENV_PREFIX, ("source", "10.0.0.1:9042"))
    )
}

/// Replicate ScyllaDB tables into another cluster through their CDC log.
///
/// Every change is written with its original write timestamp (and remaining TTL), so the
/// destination converges to the source and replaying changes is harmless. Progress is
/// checkpointed in the source cluster. Times are RFC 3339, now, or relative (-10m, -1h30m);
/// intervals are seconds, fractions allowed. The command verify compares a table with its
/// replica row by row instead (see scylla-cdc-replicator verify --help).
#[derive(Debug, Clone, Parser)]
#[command(name = "scylla-cdc-replicator", version, after_help = after_help())]
pub struct Args {
    /// The two clusters: contact points, credentials, TLS.
    #[command(flatten)]
    pub clusters: ClusterArgs,
    /// How long a start-up step (connecting, reading the schema, loading the checkpoint) or a
    /// read keeps being retried while it fails transiently (timeouts, Overloaded, a cluster
    /// that cannot be reached), in seconds; then the program exits with code 3. Each retry
    /// logs a WARN line with its cause (0.001 to 31536000, a year; default: retry forever).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg,
          help_heading = heading::CONNECTION)]
    pub give_up_after: Option<Duration>,
    /// Keyspace of the source tables.
    #[arg(long, short = 'k', value_name = "KEYSPACE", value_parser = parse_name,
          help_heading = heading::WHAT_TO_READ)]
    pub keyspace: String,
    /// Tables to replicate, comma-separated.
    #[arg(long, short = 't', value_name = "TABLE,...", value_parser = tables_arg,
          help_heading = heading::WHAT_TO_READ)]
    pub table: Tables,
    /// --start and --end.
    #[command(flatten)]
    pub range: TimeRangeArgs,
    /// Where progress is saved in the source cluster (default: cdc_replicator_checkpoints in
    /// the --keyspace keyspace; created if missing).
    #[arg(long, value_name = "KEYSPACE.TABLE", value_parser = qualified_arg, conflicts_with = "no_checkpoints",
          help_heading = heading::WHERE_TO_START)]
    pub checkpoint_table: Option<QualifiedTable>,
    /// Neither save nor load progress.
    #[arg(long, help_heading = heading::WHERE_TO_START)]
    pub no_checkpoints: bool,
    /// Least time between two checkpoints of a stream group, in seconds (0 to 86400; 0: after
    /// every window).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10",
          value_parser = checkpoint_interval_arg, help_heading = heading::WHERE_TO_START)]
    pub checkpoint_interval: Duration,
    /// First copy every row of the tables as of the launch time T (each cell with its write
    /// time and TTL), then replicate the log from T: for tables that already hold data. The
    /// token ranges copied are saved next to the checkpoints (the checkpoint table's name
    /// with _snapshot appended), so a restart with the same arguments resumes the copy.
    /// Refuses tables with non-frozen collections or UDTs, or counters.
    #[arg(long, conflicts_with_all = ["start", "no_checkpoints"], help_heading = heading::WHERE_TO_START)]
    pub snapshot: bool,
    /// Consistency level of the snapshot's reads of the source.
    #[arg(long, value_name = "LEVEL", default_value = "LOCAL_QUORUM", value_parser = parse_consistency,
          help_heading = heading::WHERE_TO_START)]
    pub snapshot_consistency: Consistency,
    /// Token ranges the snapshot copies at once (1 to 65536).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value = "8",
          value_parser = max_in_flight, help_heading = heading::WHERE_TO_START)]
    pub snapshot_parallelism: usize,
    /// Keyspace of the destination tables (default: the source keyspace).
    #[arg(long, value_name = "KEYSPACE", value_parser = parse_name,
          help_heading = heading::DESTINATION)]
    pub destination_keyspace: Option<String>,
    /// Consistency level of the writes to the destination.
    #[arg(long, value_name = "LEVEL", default_value = "LOCAL_QUORUM", value_parser = parse_consistency,
          help_heading = heading::DESTINATION)]
    pub write_consistency: Consistency,
    /// Create missing destination tables (and their types) with the source's schema.
    #[arg(long, help_heading = heading::DESTINATION)]
    pub create_destination_table: bool,
    /// Accept destination tables with regular columns the source lacks (left null).
    #[arg(long, help_heading = heading::DESTINATION)]
    pub allow_extra_columns: bool,
    /// Most writes in flight per stream group (1 to 65536).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value = "64",
          value_parser = max_in_flight, help_heading = heading::DESTINATION)]
    pub max_in_flight: usize,
    /// Most MiB of writes queued or in flight, all stream groups and tables together (the
    /// memory they hold until written, not only their values' bytes): a slow destination
    /// then slows reading instead of growing memory (1 to 4095).
    #[arg(long, value_name = "MIB", allow_negative_numbers = true, default_value = "8",
          value_parser = mib_arg, help_heading = heading::DESTINATION)]
    pub max_mib_in_flight: u64,
    /// What to do with a change that cannot be written to the destination, after the
    /// writes' own retries and 3 more attempts: stop (exit 1; a restart replicates it again),
    /// skip (log it; the destination misses it), or dead-letter (write it to the table named
    /// after the checkpoint table with _dead_letters appended, in the source cluster, and go
    /// on; the destination misses it until you replay it). Needs checkpoints for dead-letter.
    /// With skip and dead-letter each change is written before the next is taken (so a
    /// failure is pinned to its change): slower than stop, which pipelines writes.
    #[arg(long, value_name = "stop|skip|dead-letter", default_value = "stop", value_parser = on_error_arg,
          help_heading = heading::DESTINATION)]
    pub on_error: OnError,
    /// With --end: once the end is reached and every change applied, compare the source and
    /// destination tables as the command verify does, and exit with its code (0 equal, 5
    /// different).
    #[arg(long, requires = "end", help_heading = heading::DESTINATION)]
    pub verify_after: bool,
    /// Window, safety and sleep intervals, early reads, rate limit.
    #[command(flatten)]
    pub reading: ReadingArgs,
    /// Adaptive polling: the longest a change written while the log is idle may wait before
    /// it is read, in seconds; idle stream groups poll less often, up to this bound (0.001 to
    /// 31536000, though no pause exceeds a day; default: safety interval + sleep interval,
    /// i.e. no back-off).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true,
          value_parser = long_interval_arg, help_heading = heading::OPERATION)]
    pub max_idle_latency: Option<Duration>,
    /// Seconds between two progress lines in the log (0.1 to 86400).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "5",
          value_parser = progress_interval_arg, help_heading = heading::OPERATION)]
    pub progress_interval: Duration,
    /// Serve the reader's metrics as Prometheus text on http://HOST:PORT/metrics.
    #[arg(long, value_name = "HOST:PORT", value_parser = metrics_addr_arg,
          help_heading = heading::OPERATION)]
    pub metrics_addr: Option<SocketAddr>,
    /// Consumer group: run several replicators with the same --group as replicas of one
    /// daemon (--group, --member-id, --lease-duration, --renew-interval, --lease-table).
    #[command(flatten)]
    pub consumer_group: GroupFlags,
    /// --log-format.
    #[command(flatten)]
    pub log: LogArgs,
}

/// What the command line asks for: replication, or `verify`.
#[derive(Debug, Clone)]
pub enum Invocation {
    /// Replicate (no command).
    Replicate(Box<Args>),
    /// `scylla-cdc-replicator verify ...`.
    Verify(Box<VerifyArgs>),
}

impl Invocation {
    /// `--log-format`.
    pub fn log_format(&self) -> LogFormat {
        match self {
            Invocation::Replicate(a) => a.log.log_format,
            Invocation::Verify(v) => v.log.log_format,
        }
    }
}

/// The replicator's command line as it parses it: [`Args`] and the command `verify`
/// ([`VerifyArgs`]), every flag of either also settable from a variable of [`ENV_PREFIX`].
pub fn command() -> clap::Command {
    let verify = VerifyArgs::command().name("verify");
    let cmd = Args::command()
        // Usage lines name the program, whatever its file is called.
        .bin_name("scylla-cdc-replicator")
        .subcommand(verify)
        .subcommand_negates_reqs(true)
        .args_conflicts_with_subcommands(true);
    env_prefixed(cmd, ENV_PREFIX)
}

/// Parses the replicator's arguments (the first is the program name) with [`command`]: the
/// command line, then the environment.
pub fn parse<I, T>(args: I) -> Result<Invocation, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut matches = get_matches(command(), args)?;
    match matches.remove_subcommand() {
        None => Ok(Invocation::Replicate(Box::new(Args::from_arg_matches(
            &matches,
        )?))),
        Some((name, sub)) if name == "verify" => Ok(Invocation::Verify(Box::new(
            VerifyArgs::from_arg_matches(&sub)?,
        ))),
        Some((name, _)) => Err(clap::Error::raw(
            clap::error::ErrorKind::InvalidSubcommand,
            format!("unknown command {name}"),
        )),
    }
}

/// The flags that say how to reach the source and destination clusters (contact points,
/// credentials, TLS), shared by replication and `verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Contact points of the source cluster, comma-separated (host:port; default port 9042).
    #[arg(long, value_name = "HOST:PORT,...", value_parser = hosts_arg, help_heading = heading::CONNECTION)]
    pub source: Hosts,
    /// Contact points of the destination cluster.
    #[arg(long, value_name = "HOST:PORT,...", value_parser = hosts_arg, help_heading = heading::CONNECTION)]
    pub destination: Hosts,
    /// User name on the source cluster (default: the environment variable
    /// SCYLLA_SOURCE_USER).
    #[arg(long, value_name = "USER", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_user: Option<String>,
    /// Password on the source cluster, visible to every user of the machine: prefer the
    /// environment variable SCYLLA_SOURCE_PASSWORD or --source-password-file.
    #[arg(long, value_name = "PASSWORD", conflicts_with = "source_password_file",
          help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_password: Option<String>,
    /// File whose first line is the password on the source cluster.
    #[arg(long, value_name = "FILE", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_password_file: Option<PathBuf>,
    /// Connect to the source cluster over TLS (implied by the other --source-tls-* flags;
    /// certificates are verified against the system's trusted CAs unless
    /// --source-tls-ca-file names others).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls: bool,
    /// CA certificates (PEM) that sign the source cluster's certificates.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls_ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM) for the source cluster (with --source-tls-key-file).
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --source-tls-cert-file.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls_key_file: Option<PathBuf>,
    /// Name the source cluster's certificates must carry (default: each node's IP address).
    #[arg(long, value_name = "NAME", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls_server_name: Option<String>,
    /// Do not verify the source cluster's certificate at all (INSECURE; logs a warning).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub source_tls_insecure_skip_verify: bool,
    /// User name on the destination cluster (default: the environment variable
    /// SCYLLA_DESTINATION_USER).
    #[arg(long, value_name = "USER", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_user: Option<String>,
    /// Password on the destination cluster, visible to every user of the machine: prefer the
    /// environment variable SCYLLA_DESTINATION_PASSWORD or --destination-password-file.
    #[arg(long, value_name = "PASSWORD", conflicts_with = "destination_password_file",
          help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_password: Option<String>,
    /// File whose first line is the password on the destination cluster.
    #[arg(long, value_name = "FILE", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_password_file: Option<PathBuf>,
    /// Connect to the destination cluster over TLS (implied by the other
    /// --destination-tls-* flags; certificates are verified against the system's trusted CAs
    /// unless --destination-tls-ca-file names others).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls: bool,
    /// CA certificates (PEM) that sign the destination cluster's certificates.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls_ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM) for the destination cluster (with
    /// --destination-tls-key-file).
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --destination-tls-cert-file.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls_key_file: Option<PathBuf>,
    /// Name the destination cluster's certificates must carry (default: each node's IP
    /// address).
    #[arg(long, value_name = "NAME", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls_server_name: Option<String>,
    /// Do not verify the destination cluster's certificate at all (INSECURE; logs a warning).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub destination_tls_insecure_skip_verify: bool,
}

/// How to reach both clusters, checked and resolved ([`ClusterArgs::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Clusters {
    /// Source contact points.
    pub source: Vec<String>,
    /// Source credentials.
    pub source_credentials: Option<Credentials>,
    /// TLS to the source, if on.
    pub source_tls: Option<TlsOptions>,
    /// Destination contact points.
    pub destination: Vec<String>,
    /// Destination credentials.
    pub destination_credentials: Option<Credentials>,
    /// TLS to the destination, if on.
    pub destination_tls: Option<TlsOptions>,
}

impl Clusters {
    /// Connects to the source and the destination cluster, retrying transient failures for
    /// `give_up_after` (see [`connect`]).
    pub async fn connect(
        &self,
        give_up_after: Option<Duration>,
    ) -> Result<(Arc<Session>, Arc<Session>), CliError> {
        let source = connect(
            "the source cluster",
            &self.source,
            self.source_credentials.as_ref(),
            self.source_tls.as_ref(),
            give_up_after,
        )
        .await?;
        let destination = connect(
            "the destination cluster",
            &self.destination,
            self.destination_credentials.as_ref(),
            self.destination_tls.as_ref(),
            give_up_after,
        )
        .await?;
        Ok((source, destination))
    }
}

impl ClusterArgs {
    /// Resolves credentials (flags, files, environment) and TLS options.
    pub fn resolve(self) -> Result<Clusters, CliError> {
        let env = |name: &str| std::env::var(name).ok();
        let source_credentials = resolve_credentials(
            CredentialFlags {
                user_flag: "--source-user",
                password_flag: "--source-password",
                password_file_flag: "--source-password-file",
                user_env: "SCYLLA_SOURCE_USER",
                password_env: "SCYLLA_SOURCE_PASSWORD",
            },
            self.source_user,
            self.source_password,
            self.source_password_file.as_deref(),
            env,
        )?;
        let destination_credentials = resolve_credentials(
            CredentialFlags {
                user_flag: "--destination-user",
                password_flag: "--destination-password",
                password_file_flag: "--destination-password-file",
                user_env: "SCYLLA_DESTINATION_USER",
                password_env: "SCYLLA_DESTINATION_PASSWORD",
            },
            self.destination_user,
            self.destination_password,
            self.destination_password_file.as_deref(),
            env,
        )?;
        let source_tls = TlsFlags {
            tls: self.source_tls,
            ca_file: self.source_tls_ca_file,
            cert_file: self.source_tls_cert_file,
            key_file: self.source_tls_key_file,
            server_name: self.source_tls_server_name,
            insecure_skip_verify: self.source_tls_insecure_skip_verify,
        }
        .into_options("--source-tls")?;
        let destination_tls = TlsFlags {
            tls: self.destination_tls,
            ca_file: self.destination_tls_ca_file,
            cert_file: self.destination_tls_cert_file,
            key_file: self.destination_tls_key_file,
            server_name: self.destination_tls_server_name,
            insecure_skip_verify: self.destination_tls_insecure_skip_verify,
        }
        .into_options("--destination-tls")?;
        Ok(Clusters {
            source: self.source.0,
            source_credentials,
            source_tls,
            destination: self.destination.0,
            destination_credentials,
            destination_tls,
        })
    }
}

/// The settings of a replication run, checked and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// How to reach both clusters.
    pub clusters: Clusters,
    /// Source keyspace.
    pub keyspace: String,
    /// Tables.
    pub tables: Vec<String>,
    /// Destination keyspace.
    pub destination_keyspace: String,
    /// Where reading starts when there is no checkpoint.
    pub start: StartAt,
    /// Where reading ends (`None`: never).
    pub end: Option<DateTime<Utc>>,
    /// Verify the tables once the end is reached.
    pub verify_after: bool,
    /// Window size.
    pub window_size: Duration,
    /// Safety interval.
    pub safety_interval: Duration,
    /// Sleep interval.
    pub sleep_interval: Duration,
    /// Early reads (`None`: off, `--no-early-reads` or a safety interval too short for them).
    pub early_reads: Option<scylla_cdc::EarlyReads>,
    /// Bound of adaptive polling (`None`: the library's default).
    pub max_idle_latency: Option<Duration>,
    /// How long transient failures are retried (`None`: forever).
    pub give_up_after: Option<Duration>,
    /// The checkpoint table in the source cluster, unless checkpoints are off.
    pub checkpoint_table: Option<QualifiedTable>,
    /// Least time between checkpoints of a stream group.
    pub checkpoint_interval: Duration,
    /// The consumer group this replicator is a member of (`--group`).
    pub group: Option<GroupSettings>,
    /// Write consistency.
    pub write_consistency: Consistency,
    /// Create missing destination tables.
    pub create_destination_table: bool,
    /// Accept extra regular columns on the destination.
    pub allow_extra_columns: bool,
    /// Writes in flight per stream group.
    pub max_in_flight: usize,
    /// Bytes of writes queued or in flight, in all.
    pub max_bytes_in_flight: u64,
    /// Most rows read per second (`None`: unlimited).
    pub max_rows_per_second: Option<u64>,
    /// `--on-error`.
    pub on_error: OnError,
    /// Time between progress lines.
    pub progress_interval: Duration,
    /// Copy the tables first (`--snapshot`).
    pub snapshot: bool,
    /// Consistency of the snapshot's reads.
    pub snapshot_consistency: Consistency,
    /// Ranges the snapshot copies at once.
    pub snapshot_parallelism: usize,
}

impl Args {
    /// Checks what clap cannot and resolves `--start` against `launched`, the instant the
    /// program was launched (the default start).
    pub fn into_config(self, launched: DateTime<Utc>) -> Result<Config, CliError> {
        let (start, end) = resolve_range(self.range.start, self.range.end, launched)?;
        let destination_keyspace = self
            .destination_keyspace
            .unwrap_or_else(|| self.keyspace.clone());
        let checkpoint_table = if self.no_checkpoints {
            None
        } else {
            Some(self.checkpoint_table.unwrap_or_else(|| QualifiedTable {
                keyspace: self.keyspace.clone(),
                table: "cdc_replicator_checkpoints".into(),
            }))
        };
        if self.clusters.source == self.clusters.destination
            && destination_keyspace == self.keyspace
        {
            return Err(CliError::usage(
                "the source and destination are the same tables (give another --destination or \
                 --destination-keyspace)",
            ));
        }
        if self.on_error == OnError::DeadLetter && checkpoint_table.is_none() {
            return Err(CliError::usage(
                "--on-error dead-letter needs checkpoints (dead letters are kept next to the \
                 checkpoint table): drop --no-checkpoints",
            ));
        }
        let early_reads = self.reading.early_reads()?;
        let group = self.consumer_group.resolve(
            checkpoint_table.is_some(),
            "drop --no-checkpoints (the default checkpoint table is \
             <keyspace>.cdc_replicator_checkpoints)",
        )?;
        if group.is_some() && self.snapshot {
            // Every replica would copy every row; the copy is not divided among members.
            return Err(CliError::usage(
                "--snapshot cannot be used with --group: copy the tables with one replicator \
                 first (--snapshot, stopped once it replicates), then start the group with the \
                 same checkpoint table: its members resume from that replicator's checkpoints",
            ));
        }
        let clusters = self.clusters.resolve()?;
        Ok(Config {
            clusters,
            keyspace: self.keyspace,
            tables: self.table.0,
            destination_keyspace,
            start,
            end,
            verify_after: self.verify_after,
            window_size: self.reading.window_size,
            safety_interval: self.reading.safety_interval,
            sleep_interval: self.reading.sleep_interval,
            early_reads,
            max_idle_latency: self.max_idle_latency,
            give_up_after: self.give_up_after,
            checkpoint_table,
            checkpoint_interval: self.checkpoint_interval,
            group,
            write_consistency: self.write_consistency,
            create_destination_table: self.create_destination_table,
            allow_extra_columns: self.allow_extra_columns,
            max_in_flight: self.max_in_flight,
            max_bytes_in_flight: self.max_mib_in_flight * 1024 * 1024,
            max_rows_per_second: self.reading.max_rows_per_second,
            on_error: self.on_error,
            progress_interval: self.progress_interval,
            snapshot: self.snapshot,
            snapshot_consistency: self.snapshot_consistency,
            snapshot_parallelism: self.snapshot_parallelism,
        })
    }
}

/// What `verify --help` shows after the flags: examples, exit codes.
fn verify_after_help() -> String {
    format!(
        "Examples:
  scylla-cdc-replicator verify --source 10.0.0.1 --destination 10.1.0.1 -k shop -t orders
  scylla-cdc-replicator verify --source 10.0.0.1 --destination 10.0.0.1 -k shop \
--destination-keyspace shop_copy -t orders,items --at -1m

Exit codes: 0 the tables are equal, {EXIT_DIFFERENT} they differ, 1 failure while scanning, 2 bad \
argument, 3 cannot connect, 4 keyspace or table missing or not matching.

Environment: the flags can also be set by the replicator's variables \
({}SOURCE=10.0.0.1:9042, ...; see scylla-cdc-replicator --help).",
        ENV_PREFIX
    )
}

/// Compare tables with their replicas, row by row.
///
/// Scans both tables by token range and compares every row: the value of every column, and
/// the write time and TTL (within 5 s) of every column that has one. Prints "rows compared
/// N, missing M, extra E, different D" per table, then up to 10 differing rows.
#[derive(Debug, Clone, Parser)]
#[command(name = "scylla-cdc-replicator verify", version, after_help = verify_after_help())]
pub struct VerifyArgs {
    /// The two clusters: contact points, credentials, TLS.
    #[command(flatten)]
    pub clusters: ClusterArgs,
    /// How long a failing request is retried while it fails transiently, in seconds (0.001 to
    /// 31536000).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "60",
          value_parser = long_interval_arg, help_heading = heading::CONNECTION)]
    pub give_up_after: Duration,
    /// Keyspace of the source tables.
    #[arg(long, short = 'k', value_name = "KEYSPACE", value_parser = parse_name,
          help_heading = heading::WHAT_TO_READ)]
    pub keyspace: String,
    /// Tables to compare, comma-separated.
    #[arg(long, short = 't', value_name = "TABLE,...", value_parser = tables_arg,
          help_heading = heading::WHAT_TO_READ)]
    pub table: Tables,
    /// Keyspace of the destination tables (default: the source keyspace).
    #[arg(long, value_name = "KEYSPACE", value_parser = parse_name,
          help_heading = heading::WHAT_TO_READ)]
    pub destination_keyspace: Option<String>,
    /// Compare the tables as of TIME: a cell written after TIME (on either side) is not
    /// compared, nor is a row whose every cell was written after TIME, so writes still in
    /// flight while the source keeps being written do not show as differences. A scan cannot
    /// see deletions: a row deleted after TIME and not yet deleted on the other side still
    /// shows. Same forms as the replicator's --end (RFC 3339, now, -10m).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = parse_time,
          help_heading = heading::WHAT_TO_READ)]
    pub at: Option<TimeSpec>,
    /// Number of token ranges the ring is split into (1 to 65536).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value = "256",
          value_parser = count_arg, help_heading = heading::OPERATION)]
    pub ranges: u32,
    /// Token ranges scanned at once (1 to 65536).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value = "8",
          value_parser = count_arg, help_heading = heading::OPERATION)]
    pub parallelism: u32,
    /// Rows per page of the scans (1 to 65536).
    #[arg(long, value_name = "N", allow_negative_numbers = true, default_value = "1000",
          value_parser = count_arg, help_heading = heading::OPERATION)]
    pub page_size: u32,
    /// Seconds between two progress lines in the log (0.1 to 86400).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "5",
          value_parser = progress_interval_arg, help_heading = heading::OPERATION)]
    pub progress_interval: Duration,
    /// --log-format.
    #[command(flatten)]
    pub log: LogArgs,
}

/// The settings of a verification, checked and resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyConfig {
    /// How to reach both clusters.
    pub clusters: Clusters,
    /// Source keyspace.
    pub keyspace: String,
    /// Tables.
    pub tables: Vec<String>,
    /// Destination keyspace.
    pub destination_keyspace: String,
    /// Token ranges.
    pub ranges: u32,
    /// Ranges scanned at once.
    pub parallelism: u32,
    /// Rows per page.
    pub page_size: u32,
    /// How long transient failures are retried (`None`: forever).
    pub give_up_after: Option<Duration>,
    /// Time between progress lines.
    pub progress_interval: Duration,
    /// `--at`: cells and rows written after this time are not compared.
    pub at: Option<DateTime<Utc>>,
}

impl VerifyArgs {
    /// Checks what clap cannot and resolves credentials and TLS.
    pub fn into_config(self) -> Result<VerifyConfig, CliError> {
        let destination_keyspace = self
            .destination_keyspace
            .unwrap_or_else(|| self.keyspace.clone());
        if self.clusters.source == self.clusters.destination
            && destination_keyspace == self.keyspace
        {
            return Err(CliError::usage(
                "the source and destination are the same tables (give another --destination or \
                 --destination-keyspace)",
            ));
        }
        Ok(VerifyConfig {
            clusters: self.clusters.resolve()?,
            keyspace: self.keyspace,
            tables: self.table.0,
            destination_keyspace,
            ranges: self.ranges,
            parallelism: self.parallelism,
            page_size: self.page_size,
            give_up_after: Some(self.give_up_after),
            progress_interval: self.progress_interval,
            at: match self.at {
                None => None,
                Some(spec) => Some(spec.resolve(Utc::now()).ok_or_else(|| {
                    CliError::usage("--at is out of the range of representable times")
                })?),
            },
        })
    }
}

impl VerifyConfig {
    /// The verification `--verify-after` runs at the end of replication `config`: the same
    /// clusters and tables, default scan settings.
    pub fn after_replication(config: &Config) -> VerifyConfig {
        VerifyConfig {
            clusters: config.clusters.clone(),
            keyspace: config.keyspace.clone(),
            tables: config.tables.clone(),
            destination_keyspace: config.destination_keyspace.clone(),
            ranges: 256,
            parallelism: 8,
            page_size: 1000,
            give_up_after: config.give_up_after,
            progress_interval: config.progress_interval,
            at: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla_cdc::cli::{clap_failure, exit_code};

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_714_564_800, 0).unwrap()
    }

    fn parse(args: &[&str]) -> Result<Config, CliError> {
        let full = std::iter::once("scylla-cdc-replicator").chain(args.iter().copied());
        match super::parse(full) {
            Ok(Invocation::Replicate(a)) => a.into_config(now()),
            Ok(Invocation::Verify(_)) => panic!("not a replication"),
            Err(e) => Err(clap_failure(&e).unwrap_err()),
        }
    }

    const BASE: [&str; 8] = [
        "--source",
        "10.0.0.1",
        "--destination",
        "10.0.1.1:19042,10.0.1.2",
        "-k",
        "ks",
        "-t",
        "a,b",
    ];

    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        BASE.iter().chain(extra).copied().collect()
    }

    #[test]
    fn defaults() {
        let c = parse(&BASE).unwrap();
        assert_eq!(c.clusters.source, vec!["10.0.0.1:9042"]);
        assert_eq!(
            c.clusters.destination,
            vec!["10.0.1.1:19042", "10.0.1.2:9042"]
        );
        assert_eq!(c.tables, vec!["a", "b"]);
        assert_eq!(c.destination_keyspace, "ks");
        // No --start: the launch instant, resolved before anything is contacted.
        assert_eq!(c.start, StartAt::Launch(now()));
        assert_eq!(
            c.checkpoint_table,
            Some(QualifiedTable {
                keyspace: "ks".into(),
                table: "cdc_replicator_checkpoints".into()
            })
        );
        assert_eq!(c.write_consistency, Consistency::LocalQuorum);
        assert_eq!(c.window_size, Duration::from_secs(60));
        assert_eq!(c.safety_interval, Duration::from_secs(30));
        assert_eq!(c.sleep_interval, Duration::from_secs(10));
        assert_eq!(c.max_idle_latency, None);
        // The replicator reads early by default.
        assert_eq!(c.early_reads, Some(scylla_cdc::EarlyReads::default()));
        assert_eq!(
            parse(&with(&["--no-early-reads"])).unwrap().early_reads,
            None
        );
        assert_eq!(c.checkpoint_interval, Duration::from_secs(10));
        assert_eq!(c.max_in_flight, 64);
        assert!(!c.create_destination_table);
        assert_eq!(c.clusters.source_credentials, None);
        assert!(!c.snapshot);
        assert_eq!(c.snapshot_consistency, Consistency::LocalQuorum);
        assert_eq!(c.snapshot_parallelism, 8);
        let c = parse(&with(&[
            "--snapshot",
            "--snapshot-consistency",
            "one",
            "--snapshot-parallelism",
            "2",
        ]))
        .unwrap();
        assert!(c.snapshot);
        assert_eq!(c.snapshot_consistency, Consistency::One);
        assert_eq!(c.snapshot_parallelism, 2);
    }

    #[test]
    fn every_option() {
        let c = parse(&with(&[
            "--destination-keyspace",
            "copy",
            "--start",
            "-1h",
            "--window-size",
            "1",
            "--safety-interval",
            "0.5",
            "--sleep-interval",
            "0.1",
            "--checkpoint-table",
            "meta.progress",
            "--checkpoint-interval",
            "0",
            "--write-consistency",
            "quorum",
            "--source-user",
            "su",
            "--source-password",
            "sp",
            "--destination-user",
            "du",
            "--destination-password",
            "dp",
            "--create-destination-table",
            "--max-in-flight",
            "8",
            "--progress-interval",
            "1",
        ]))
        .unwrap();
        assert_eq!(c.destination_keyspace, "copy");
        assert_eq!(c.start, StartAt::Given(now() - chrono::TimeDelta::hours(1)));
        assert_eq!(c.safety_interval, Duration::from_millis(500));
        assert_eq!(
            c.checkpoint_table,
            Some(QualifiedTable {
                keyspace: "meta".into(),
                table: "progress".into()
            })
        );
        assert_eq!(c.checkpoint_interval, Duration::ZERO);
        assert_eq!(c.write_consistency, Consistency::Quorum);
        assert_eq!(
            c.clusters.source_credentials,
            Some(("su".into(), "sp".into()))
        );
        assert_eq!(
            c.clusters.destination_credentials,
            Some(("du".into(), "dp".into()))
        );
        assert!(c.create_destination_table);
        assert_eq!(c.max_in_flight, 8);
        let c = parse(&with(&["--no-checkpoints"])).unwrap();
        assert_eq!(c.checkpoint_table, None);
        assert_eq!((c.end, c.verify_after), (None, false));
        let c = parse(&with(&[
            "--start",
            "-1h",
            "--end",
            "-10m",
            "--verify-after",
        ]))
        .unwrap();
        assert_eq!(c.end, Some(now() - chrono::TimeDelta::minutes(10)));
        assert!(c.verify_after);
    }

    #[test]
    fn consumer_group() {
        assert_eq!(parse(&BASE).unwrap().group, None);
        let c = parse(&with(&[
            "--group",
            "replicas",
            "--member-id",
            "r1",
            "--lease-duration",
            "4",
        ]))
        .unwrap();
        let g = c.group.unwrap();
        assert_eq!(g.name, "replicas");
        assert_eq!(g.member_id.as_deref(), Some("r1"));
        assert_eq!(g.lease_duration, Duration::from_secs(4));
        assert_eq!(g.renew_interval, None);
        let cases: Vec<(Vec<&str>, &[&str])> = vec![
            (
                with(&["--group", "g", "--no-checkpoints"]),
                &["--group", "--no-checkpoints"],
            ),
            (with(&["--member-id", "m"]), &["--group"]),
            (with(&["--renew-interval", "1"]), &["--group"]),
            (
                with(&[
                    "--group",
                    "g",
                    "--lease-duration",
                    "1",
                    "--renew-interval",
                    "2",
                ]),
                &["--lease-duration (1 s) must be longer than --renew-interval (2 s)"],
            ),
            (
                with(&["--group", "g", "--snapshot"]),
                &["--snapshot cannot be used with --group"],
            ),
        ];
        for (args, needles) in cases {
            let err = parse(&args).unwrap_err();
            assert_eq!(err.exit_code(), exit_code::USAGE, "{args:?}: {err}");
            let text = err.to_string();
            assert!(!text.contains('\n'), "{text}");
            for needle in needles {
                assert!(text.contains(needle), "{args:?}: {text:?} lacks {needle:?}");
            }
        }
    }

    #[test]
    fn consistency_levels() {
        assert_eq!(
            parse_consistency("local-one").unwrap(),
            Consistency::LocalOne
        );
        assert_eq!(
            parse_consistency("EACH_QUORUM").unwrap(),
            Consistency::EachQuorum
        );
        assert!(parse_consistency("SERIAL").is_err());
    }

    #[test]
    fn bad_arguments_are_one_line_usage_errors() {
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (BASE[2..].to_vec(), "--source"),
            (
                vec!["--source", "a", "-k", "ks", "-t", "t"],
                "--destination",
            ),
            (
                vec!["--source", "a", "--destination", "b", "-t", "t"],
                "--keyspace",
            ),
            (
                vec!["--source", "a", "--destination", "b", "-k", "ks"],
                "--table",
            ),
            (
                vec![
                    "--source",
                    "a:0",
                    "--destination",
                    "b",
                    "-k",
                    "ks",
                    "-t",
                    "t",
                ],
                "invalid port",
            ),
            (with(&["--start", "soon"]), "not a time"),
            (
                with(&["--window-size", "0"]),
                "out of range: 0.001 to 604800",
            ),
            (with(&["--window-size", "1e-9"]), "out of range"),
            (
                with(&["--safety-interval", "1e6"]),
                "out of range: 0 to 86400",
            ),
            (
                with(&["--progress-interval", "0.001"]),
                "out of range: 0.1 to 86400",
            ),
            (
                with(&["--checkpoint-interval", "-1"]),
                "out of range: 0 to 86400",
            ),
            (with(&["--metrics-addr", "localhost"]), "HOST:PORT"),
            (
                with(&["--max-rows-per-second", "x"]),
                "from 1 to 1000000000",
            ),
            (
                with(&["--safety-interval", "-2"]),
                "out of range: 0 to 86400",
            ),
            (with(&["--write-consistency", "most"]), "consistency level"),
            (
                with(&["--no-checkpoints", "--checkpoint-table", "a.b"]),
                "cannot be used with",
            ),
            (with(&["--checkpoint-table", "ab"]), "keyspace.table"),
            (with(&["--source-user", "u"]), "--source-password"),
            (with(&["--destination-password", "p"]), "--destination-user"),
            (with(&["--max-in-flight", "0"]), "1 to 65536"),
            (with(&["--verify-after"]), "--end"),
            (
                with(&["--snapshot", "--start", "-1h"]),
                "cannot be used with",
            ),
            (
                with(&["--snapshot", "--no-checkpoints"]),
                "cannot be used with",
            ),
            (with(&["--snapshot-parallelism", "0"]), "1 to 65536"),
            (with(&["--on-error", "retry"]), "stop, skip, dead-letter"),
            (
                with(&["--on-error", "dead-letter", "--no-checkpoints"]),
                "needs checkpoints",
            ),
            (with(&["--end", "-1m"]), "must be after --start"),
            (
                vec![
                    "--source",
                    "a",
                    "--destination",
                    "a:9042",
                    "-k",
                    "ks",
                    "-t",
                    "t",
                ],
                "same tables",
            ),
        ];
        for (args, needle) in cases {
            let err = parse(&args).unwrap_err();
            assert_eq!(err.exit_code(), exit_code::USAGE, "{args:?}: {err}");
            let text = err.to_string();
            assert!(!text.contains('\n'), "{text}");
            assert!(text.contains(needle), "{args:?}: {text:?} lacks {needle:?}");
        }
        // The same cluster into another keyspace is fine.
        assert!(
            parse(&[
                "--source",
                "a",
                "--destination",
                "a",
                "-k",
                "ks",
                "-t",
                "t",
                "--destination-keyspace",
                "other"
            ])
            .is_ok()
        );
    }
}
