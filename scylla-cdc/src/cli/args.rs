//! The command-line surface the programs share: the flags of a Scylla connection, of the
//! time range read and of the reading cadence as flattened [`clap::Args`] structs, the help
//! headings every program groups its flags under, `--log-format`, and the environment
//! variables every flag can also be set from ([`env_prefixed`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, ArgMatches, Command};

use super::secure::{CredentialFlags, Credentials, TlsFlags, TlsOptions, resolve_credentials};
use super::{
    CliError, EarlyReadFlags, Hosts, TimeSpec, hosts_arg, one_host_arg, parse_time,
    rows_per_second_arg, safety_interval_arg, sleep_interval_arg, window_size_arg,
};

/// The help headings the programs group their flags under, in this order, each where it
/// applies (the printer has an output, the replicator and `scylla-cdc-kafka` a destination).
pub mod heading {
    /// How to reach the cluster: contact points, and how long to keep trying.
    pub const CONNECTION: &str = "Connection";
    /// User, password and TLS.
    pub const TLS_AND_CREDENTIALS: &str = "TLS and credentials";
    /// Keyspace and tables.
    pub const WHAT_TO_READ: &str = "What to read";
    /// Start, end, checkpoints, snapshots.
    pub const WHERE_TO_START: &str = "Where to start";
    /// What the printer prints.
    pub const OUTPUT: &str = "Output";
    /// Where the replicator and `scylla-cdc-kafka` write.
    pub const DESTINATION: &str = "Destination";
    /// Reading cadence, early reads, rate limits, progress, metrics, logs, consumer groups.
    pub const OPERATION: &str = "Operation";
}

/// One contact point list of a cluster and its credentials and TLS: `--hosts` (or
/// `--hostname`), `--user`, `--password`, `--password-file` and the `--tls*` flags, as the
/// printer and `scylla-cdc-kafka` take them (the replicator has a source and a destination,
/// with prefixed flags of its own). [`ConnectionArgs::resolve`] checks them.
///
/// Neither `--hosts` nor `--hostname` is required here: a program makes one of them required
/// ([`require_contact_points`]) or checks it itself.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ConnectionArgs {
    /// Contact points of the cluster, comma-separated (host:port; default port 9042).
    #[arg(long, value_name = "HOST:PORT,...", value_parser = hosts_arg,
          conflicts_with = "hostname", help_heading = heading::CONNECTION)]
    pub hosts: Option<Hosts>,
    /// One contact point (host or host:port), instead of --hosts.
    #[arg(long, value_name = "HOST[:PORT]", value_parser = one_host_arg,
          help_heading = heading::CONNECTION)]
    pub hostname: Option<Hosts>,
    /// User name (PasswordAuthenticator; default: the environment variable SCYLLA_USER).
    #[arg(long, short = 'u', value_name = "USER", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub user: Option<String>,
    /// Password, visible to every user of the machine: prefer the environment variable
    /// SCYLLA_PASSWORD or --password-file.
    #[arg(long, short = 'p', value_name = "PASSWORD", conflicts_with = "password_file",
          help_heading = heading::TLS_AND_CREDENTIALS)]
    pub password: Option<String>,
    /// File whose first line is the password.
    #[arg(long, value_name = "FILE", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub password_file: Option<PathBuf>,
    /// Connect over TLS (implied by the other --tls-* flags; the cluster's certificate is
    /// verified against the system's trusted CAs unless --tls-ca-file names others).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls: bool,
    /// CA certificates (PEM) that sign the cluster's certificates.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls_ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM), for clusters that require one (with --tls-key-file).
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "PEM", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls_key_file: Option<PathBuf>,
    /// Name the cluster's certificates must carry (default: each node's IP address).
    #[arg(long, value_name = "NAME", help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls_server_name: Option<String>,
    /// Do not verify the cluster's certificate at all (INSECURE: anyone on the network path
    /// can read and change the traffic; logs a warning).
    #[arg(long, help_heading = heading::TLS_AND_CREDENTIALS)]
    pub tls_insecure_skip_verify: bool,
}

/// A cluster to connect to, checked ([`ConnectionArgs::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// Contact points, `host:port` each.
    pub hosts: Vec<String>,
    /// User and password.
    pub credentials: Option<Credentials>,
    /// TLS, if on.
    pub tls: Option<TlsOptions>,
}

impl ConnectionArgs {
    /// The contact points, credentials (the flags, else `env`'s SCYLLA_USER and
    /// SCYLLA_PASSWORD) and TLS options; no contact point, a user without a password (or the
    /// other way round) and TLS flags that do not go together are usage errors.
    pub fn resolve(self, env: impl Fn(&str) -> Option<String>) -> Result<Connection, CliError> {
        let hosts = self
            .hosts
            .or(self.hostname)
            .ok_or_else(|| CliError::usage("--hosts or --hostname is required"))?
            .0;
        let credentials = resolve_credentials(
            CredentialFlags {
                user_flag: "--user",
                password_flag: "--password",
                password_file_flag: "--password-file",
                user_env: "SCYLLA_USER",
                password_env: "SCYLLA_PASSWORD",
            },
            self.user,
            self.password,
            self.password_file.as_deref(),
            env,
        )?;
        let tls = TlsFlags {
            tls: self.tls,
            ca_file: self.tls_ca_file,
            cert_file: self.tls_cert_file,
            key_file: self.tls_key_file,
            server_name: self.tls_server_name,
            insecure_skip_verify: self.tls_insecure_skip_verify,
        }
        .into_options("--tls")?;
        Ok(Connection {
            hosts,
            credentials,
            tls,
        })
    }
}

/// The id of the group [`require_contact_points`] adds.
pub const CONTACT_POINTS: &str = "contact_points";

/// `cmd` (with [`ConnectionArgs`] flattened) requiring `--hosts` or `--hostname`: a required
/// group, so that the usage line shows it.
pub fn require_contact_points(cmd: Command) -> Command {
    cmd.group(
        clap::ArgGroup::new(CONTACT_POINTS)
            .args(["hosts", "hostname"])
            .required(true)
            .multiple(false),
    )
}

/// `--start` and `--end`, resolved with [`super::resolve_range`].
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct TimeRangeArgs {
    /// Where to start reading when no progress is saved (a saved checkpoint takes
    /// precedence): RFC 3339 (2024-05-01T12:00:00Z), now, or relative to now (-10m, -1h30m;
    /// units us, ms, s, m, h, d, w). Default: the moment the program is launched, so every
    /// change written after the launch is read.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = parse_time,
          help_heading = heading::WHERE_TO_START)]
    pub start: Option<TimeSpec>,
    /// Where to stop: the program exits once every change written before TIME is handled
    /// (same forms as --start; default: run until stopped).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = parse_time,
          help_heading = heading::WHERE_TO_START)]
    pub end: Option<TimeSpec>,
}

/// How the log is read: the window, safety and sleep intervals, early reads and the rate
/// limit.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct ReadingArgs {
    /// Longest time window one query reads, in seconds (0.001 to 604800).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "60",
          value_parser = window_size_arg, help_heading = heading::OPERATION)]
    pub window_size: Duration,
    /// How far behind now confirmed reading stays, in seconds, so that writes in flight are
    /// not missed (0 to 86400).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "30",
          value_parser = safety_interval_arg, help_heading = heading::OPERATION)]
    pub safety_interval: Duration,
    /// Pause between reads once caught up, in seconds (0 to 3600; 0: read the next window as
    /// soon as one is done).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10",
          value_parser = sleep_interval_arg, help_heading = heading::OPERATION)]
    pub sleep_interval: Duration,
    /// Early reads: --early-read-lag, --early-read-poll-interval, --max-unconfirmed-rows,
    /// --no-early-reads.
    #[command(flatten)]
    pub early_reads: EarlyReadFlags,
    /// Most log rows read per second, all tables together, so that catching up a backlog
    /// cannot overload the cluster (1 to 1000000000; default: unlimited).
    #[arg(long, value_name = "ROWS", allow_negative_numbers = true,
          value_parser = rows_per_second_arg, help_heading = heading::OPERATION)]
    pub max_rows_per_second: Option<u64>,
}

impl ReadingArgs {
    /// The early reads these flags ask for (`None`: off; see [`EarlyReadFlags::resolve`]).
    pub fn early_reads(&self) -> Result<Option<crate::EarlyReads>, CliError> {
        self.early_reads.resolve(self.safety_interval)
    }
}

/// The format of a program's log lines on stderr (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event: time, level, target, message and fields.
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, target, message and fields at the top
    /// level, for log collectors.
    Json,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::Args)]
pub struct LogArgs {
    /// Log lines on stderr as text, or as one JSON object per line (timestamp, level,
    /// target, message and the event's fields); RUST_LOG filters either.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text,
          help_heading = heading::OPERATION)]
    pub log_format: LogFormat,
}

/// Reports a program's failure on stderr as it ends: the one line `error: ...` of
/// [`CliError`], or with [`LogFormat::Json`] one JSON object as the log's (`timestamp`,
/// `level` ERROR, `message`, `exit_code`, `target`), so that stderr stays one JSON object per
/// line.
pub fn report_failure(err: &CliError, format: LogFormat, target: &str) {
    match format {
        LogFormat::Text => eprintln!("{err}"),
        LogFormat::Json => eprintln!(
            "{}",
            serde_json::json!({
                "timestamp": super::rfc3339_micros(chrono::Utc::now()),
                "level": "ERROR",
                "message": err.message(),
                "exit_code": err.exit_code(),
                "target": target,
            })
        ),
    }
}

/// The ids of the flags that do not get a variable from [`env_prefixed`]: passwords have
/// their own (SCYLLA_PASSWORD, SCYLLA_SOURCE_PASSWORD, SCYLLA_DESTINATION_PASSWORD), read by
/// [`resolve_credentials`] as a password that is not on the command line.
const OWN_VARIABLE: [&str; 3] = ["password", "source_password", "destination_password"];

/// The environment variable of the flag `--long` under `prefix`: the prefix and the long
/// name in upper snake case (`SCYLLA_CDC_PRINTER_` and `window-size` give
/// `SCYLLA_CDC_PRINTER_WINDOW_SIZE`).
pub fn env_name(prefix: &str, long: &str) -> String {
    format!("{prefix}{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// `cmd` with every flag also settable from an environment variable: each argument with a
/// long name and no variable yet (of `cmd` and of its subcommands; not `--help`,
/// `--version`, nor the password flags, which have their own variables) gets
/// [`env_name`]`(prefix, long)`. The command line wins over the environment. A flag without
/// a value (`--tls`) is set by a variable holding true, yes, on or 1 (false, no, off, 0: not
/// set); an empty variable counts as unset. Values of variables are not shown by `--help`
/// (they may be secrets).
pub fn env_prefixed(cmd: Command, prefix: &str) -> Command {
    cmd.mut_args(|arg| with_env(arg, prefix))
        .mut_subcommands(|sub| env_prefixed(sub, prefix))
}

fn with_env(arg: Arg, prefix: &str) -> Arg {
    let id = arg.get_id().as_str();
    if arg.get_env().is_some() || OWN_VARIABLE.contains(&id) || id == "help" || id == "version" {
        return arg;
    }
    let Some(long) = arg.get_long() else {
        return arg;
    };
    let name = env_name(prefix, long);
    let flag = matches!(arg.get_action(), ArgAction::SetTrue);
    // clap counts an argument with a variable as given, even an empty one or a flag set to
    // false: it would then refuse a flag that conflicts with it. Such a variable is not used.
    if let Some(value) = std::env::var_os(&name)
        && (value.is_empty() || (flag && is_false(&value)))
    {
        return arg;
    }
    let arg = if flag {
        arg.value_parser(BoolishValueParser::new())
    } else {
        arg
    };
    arg.env(name).hide_env_values(true)
}

/// Whether a flag's variable says false (false, no, off, 0, n, f, in any case).
fn is_false(value: &std::ffi::OsStr) -> bool {
    value.to_str().is_some_and(|v| {
        ["false", "no", "off", "0", "n", "f"].contains(&v.trim().to_ascii_lowercase().as_str())
    })
}

/// Parses `args` (the first is the program name) with `cmd`, as built by [`env_prefixed`]. A
/// bad value that came from an environment variable (its flag is not on the command line)
/// says so in the error.
pub fn get_matches<I, T>(cmd: Command, args: I) -> Result<ArgMatches, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut cmd = cmd;
    cmd.build();
    cmd.clone()
        .try_get_matches_from(&args)
        .map_err(|e| name_the_variable(e, &cmd, &args))
}

/// Adds to a clap error about flags (a bad value, a conflict) which of them were set by an
/// environment variable (one is set and the flag is not among `args`), so that a user who
/// sees a flag they did not type knows where it came from.
fn name_the_variable(mut err: clap::Error, cmd: &Command, args: &[OsString]) -> clap::Error {
    if !matches!(
        err.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::ArgumentConflict
    ) {
        return err;
    }
    // `--window-size <SECONDS>`: the flag is the first word.
    let mut named = Vec::new();
    for kind in [ContextKind::InvalidArg, ContextKind::PriorArg] {
        match err.get(kind) {
            Some(ContextValue::String(s)) => named.push(s.clone()),
            Some(ContextValue::Strings(v)) => named.extend(v.iter().cloned()),
            _ => {}
        }
    }
    let command = args
        .iter()
        .skip(1)
        .find_map(|a| cmd.find_subcommand(a))
        .unwrap_or(cmd);
    let typed = |flag: &str| {
        args.iter().skip(1).any(|a| {
            a.to_str()
                .is_some_and(|a| a == flag || a.starts_with(&format!("{flag}=")))
        })
    };
    let mut tips = Vec::new();
    for text in &named {
        let Some(long) = text
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_prefix("--"))
        else {
            continue;
        };
        let Some(variable) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .and_then(Arg::get_env)
        else {
            continue;
        };
        let flag = format!("--{long}");
        if !typed(&flag) && std::env::var_os(variable).is_some() {
            tips.push(
                format!(
                    "{flag} was set by the environment variable {}",
                    variable.to_string_lossy()
                )
                .into(),
            );
        }
    }
    if !tips.is_empty() {
        err.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    err
}

/// The `after_help` paragraph of a program whose flags can be set from variables with
/// `prefix` ([`env_prefixed`]); `example` is one of its flags and a value.
pub fn env_help(prefix: &str, (flag, value): (&str, &str)) -> String {
    format!(
        "Environment: every flag can also be set by the variable {prefix} followed by the \
         flag's long name in upper case, - as _ (e.g. {}={value}); a flag without a value \
         takes true or false, an empty variable counts as unset. The command line takes \
         precedence. Passwords have their own variables (see the password flags).",
        env_name(prefix, flag),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches, Parser};

    #[derive(Debug, Parser)]
    #[command(name = "t")]
    struct Flags {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(flatten)]
        reading: ReadingArgs,
        #[command(flatten)]
        log: LogArgs,
    }

    #[test]
    fn names_of_variables() {
        assert_eq!(
            env_name("SCYLLA_CDC_PRINTER_", "window-size"),
            "SCYLLA_CDC_PRINTER_WINDOW_SIZE"
        );
        let cmd = env_prefixed(Flags::command(), "T_");
        let env_of = |long: &str| {
            cmd.get_arguments()
                .find(|a| a.get_long() == Some(long))
                .and_then(|a| a.get_env())
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(env_of("hosts").as_deref(), Some("T_HOSTS"));
        assert_eq!(
            env_of("no-early-reads").as_deref(),
            Some("T_NO_EARLY_READS")
        );
        assert_eq!(env_of("log-format").as_deref(), Some("T_LOG_FORMAT"));
        // Passwords keep their own variable (SCYLLA_PASSWORD).
        assert_eq!(env_of("password"), None);
        assert_eq!(env_of("password-file").as_deref(), Some("T_PASSWORD_FILE"));
    }

    #[test]
    fn parsing_without_variables() {
        let m = get_matches(
            env_prefixed(Flags::command(), "SCYLLA_CDC_ARGS_TEST_UNSET_"),
            ["t", "--hosts", "a", "--log-format", "json"],
        )
        .unwrap();
        let f = Flags::from_arg_matches(&m).unwrap();
        assert_eq!(f.log.log_format, LogFormat::Json);
        assert_eq!(f.reading.window_size, Duration::from_secs(60));
        let c = f.connection.resolve(|_| None).unwrap();
        assert_eq!(c.hosts, vec!["a:9042"]);
        assert_eq!((c.credentials, c.tls), (None, None));
    }
}
