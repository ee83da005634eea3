//! The printer's command line: [`Args`] as clap parses it, checked and resolved into a
//! [`PrintConfig`] by [`Args::into_config`] before anything is contacted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{Parser, ValueEnum};

use scylla_cdc::cli::metrics_http::metrics_addr_arg;
use scylla_cdc::cli::secure::{
    CredentialFlags, Credentials, TlsFlags, TlsOptions, resolve_credentials,
};
use scylla_cdc::cli::{
    CliError, EarlyReadFlags, GroupFlags, GroupSettings, OnError, StartAt, TimeSpec,
    checkpoint_interval_arg, hosts_arg, long_interval_arg, on_error_arg, one_host_arg, parse_name,
    parse_time, progress_interval_arg, qualified_arg, resolve_range, rows_per_second_arg,
    safety_interval_arg, sleep_interval_arg, tables_arg, window_size_arg,
};
pub use scylla_cdc::cli::{Hosts, QualifiedTable, Tables};

/// How rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A readable block per row.
    Pretty,
    /// One JSON object per row (newline-delimited).
    Json,
    /// One Debezium-like JSON object per whole change: every row of one stream with one
    /// `cdc$time` (newline-delimited; see [`crate::format`]).
    Change,
}

/// Print the CDC log of ScyllaDB tables as changes arrive.
///
/// Times are RFC 3339 (2024-05-01T12:00:00Z), `now`, or relative to now (-10m, -1h30m, +5m;
/// units us, ms, s, m, h, d, w). Intervals are seconds, fractions allowed. Credentials: the
/// user from --user or SCYLLA_USER, the password from SCYLLA_PASSWORD or --password-file
/// (--password works but shows it to every user of the machine). Exit codes: 0 done or
/// stopped, 1 failure while running, 2 bad argument, 3 cannot connect, 4 keyspace or table
/// missing or without CDC (or a lease table of another shape).
#[derive(Debug, Clone, Parser)]
#[command(name = "scylla-cdc-printer", version)]
pub struct Args {
    /// Contact points of the cluster, comma-separated (host:port; default port 9042).
    #[arg(long, value_name = "HOST:PORT,...", value_parser = hosts_arg, conflicts_with = "hostname",
          required_unless_present_any = ["hostname", "demo"])]
    pub hosts: Option<Hosts>,
    /// One contact point (host or host:port).
    #[arg(long, value_name = "HOST[:PORT]", value_parser = one_host_arg)]
    pub hostname: Option<Hosts>,
    /// Keyspace of the tables.
    #[arg(long, short = 'k', value_parser = parse_name, required_unless_present = "demo")]
    pub keyspace: Option<String>,
    /// Tables to print, comma-separated.
    #[arg(long, short = 't', value_name = "TABLE,...", value_parser = tables_arg,
          required_unless_present = "demo")]
    pub table: Option<Tables>,
    /// Where to start reading (default: the moment the printer is launched, so every change
    /// written after the launch is printed). A saved checkpoint takes precedence.
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = parse_time)]
    pub start: Option<TimeSpec>,
    /// Where to stop: the printer exits once every change before it is printed (default:
    /// run until stopped).
    #[arg(long, value_name = "TIME", allow_hyphen_values = true, value_parser = parse_time)]
    pub end: Option<TimeSpec>,
    /// Longest time window one query reads, in seconds (0.001 to 604800).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "60", value_parser = window_size_arg)]
    pub window_size: Duration,
    /// How far behind now reading stays, in seconds, so that writes in flight are not missed
    /// (0 to 86400).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "30", value_parser = safety_interval_arg)]
    pub safety_interval: Duration,
    /// Pause between reads once caught up, in seconds (0 to 3600; 0: read the next window as
    /// soon as one is done).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10", value_parser = sleep_interval_arg)]
    pub sleep_interval: Duration,
    /// Early reads: --early-read-lag, --early-read-poll-interval, --max-unconfirmed-rows,
    /// --no-early-reads.
    #[command(flatten)]
    pub early_reads: EarlyReadFlags,
    /// Adaptive polling: the longest a change written while the log is idle may wait before
    /// it is read, in seconds; idle stream groups poll less often, up to this bound (0.001 to
    /// 31536000, though no pause exceeds a day; default: safety interval + sleep interval,
    /// i.e. no back-off).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg)]
    pub max_idle_latency: Option<Duration>,
    /// How long a start-up step (connecting, reading the schema, loading the checkpoint) or a
    /// read keeps being retried while it fails transiently (timeouts, Overloaded, a cluster
    /// that cannot be reached), in seconds; then the program exits with code 3. Each retry
    /// logs a WARN line with its cause (0.001 to 31536000, a year; default: retry forever).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg)]
    pub give_up_after: Option<Duration>,
    /// How long the first contact with the cluster is retried while nothing answers (a typo
    /// in --hosts, a cluster not started), in seconds; then the printer exits with code 3
    /// (0 to 31536000; 0: retry forever; --give-up-after, if shorter, applies instead).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "30", value_parser = scylla_cdc::cli::connect_timeout_arg)]
    pub connect_timeout: Duration,
    /// User name (PasswordAuthenticator; default: $SCYLLA_USER).
    #[arg(long, short = 'u')]
    pub user: Option<String>,
    /// Password, visible to every user of the machine: prefer $SCYLLA_PASSWORD or
    /// --password-file.
    #[arg(long, short = 'p', conflicts_with = "password_file")]
    pub password: Option<String>,
    /// File whose first line is the password.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Connect over TLS (implied by the other --tls-* flags; the server's certificate is
    /// verified against the system's trusted CAs unless --tls-ca-file names others).
    #[arg(long)]
    pub tls: bool,
    /// CA certificates (PEM) that sign the cluster's certificates.
    #[arg(long, value_name = "PEM")]
    pub tls_ca_file: Option<PathBuf>,
    /// Client certificate chain (PEM), for clusters that require one (with --tls-key-file).
    #[arg(long, value_name = "PEM")]
    pub tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "PEM")]
    pub tls_key_file: Option<PathBuf>,
    /// Name the cluster's certificates must carry (default: each node's IP address).
    #[arg(long, value_name = "NAME")]
    pub tls_server_name: Option<String>,
    /// Do not verify the cluster's certificate at all (INSECURE: anyone on the network path
    /// can read and change the traffic; logs a warning).
    #[arg(long)]
    pub tls_insecure_skip_verify: bool,
    /// Save progress in this table (created if missing) and resume from it.
    #[arg(long, value_name = "KEYSPACE.TABLE", value_parser = qualified_arg)]
    pub checkpoint_table: Option<QualifiedTable>,
    /// Least time between two checkpoints of a stream group, in seconds (0 to 86400; 0: after
    /// every window). A group also saves when it finishes a generation and on stop.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10",
          requires = "checkpoint_table", value_parser = checkpoint_interval_arg)]
    pub checkpoint_interval: Duration,
    /// Consumer group: --group, --member-id, --lease-duration, --renew-interval,
    /// --lease-table.
    #[command(flatten)]
    pub consumer_group: GroupFlags,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Pretty)]
    pub format: Format,
    /// What to do with a change that cannot be printed, after 3 retries: stop (exit 1; a
    /// restart prints it again), skip (log it), or dead-letter (write it to
    /// `<checkpoint table>_dead_letters`; needs --checkpoint-table).
    #[arg(long, value_name = "stop|skip|dead-letter", default_value = "stop", value_parser = on_error_arg)]
    pub on_error: OnError,
    /// Most log rows read per second, all tables together (1 to 1000000000; default:
    /// unlimited), so that catching up a backlog cannot overload the cluster.
    #[arg(long, value_name = "ROWS", allow_negative_numbers = true, value_parser = rows_per_second_arg)]
    pub max_rows_per_second: Option<u64>,
    /// Seconds between two progress lines on stderr (rows printed, low watermark and lag):
    /// 0.1 to 86400 (default: none).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = progress_interval_arg)]
    pub progress_interval: Option<Duration>,
    /// Serve the reader's metrics as Prometheus text on http://HOST:PORT/metrics.
    #[arg(long, value_name = "HOST:PORT", value_parser = metrics_addr_arg)]
    pub metrics_addr: Option<SocketAddr>,
    /// Start an embedded 3-node cluster with a demo table and a writer, and print its changes.
    #[arg(long, conflicts_with_all = ["hosts", "hostname", "keyspace", "table", "checkpoint_table", "start", "end"])]
    pub demo: bool,
    /// Stop the demo after this many seconds (0.001 to 31536000; default: run until Ctrl-C).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg)]
    pub demo_seconds: Option<Duration>,
}

/// What to do, checked and resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Print tables of a running cluster.
    Print(Box<PrintConfig>),
    /// Run the demo for this long (or until stopped).
    Demo {
        /// `--demo-seconds`.
        seconds: Option<Duration>,
        /// `--format`.
        format: Format,
    },
}

/// The settings of a print run.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintConfig {
    /// Contact points.
    pub hosts: Vec<String>,
    /// User and password.
    pub credentials: Option<Credentials>,
    /// TLS, if on.
    pub tls: Option<TlsOptions>,
    /// The keyspace.
    pub keyspace: String,
    /// The tables.
    pub tables: Vec<String>,
    /// Where reading starts when there is no checkpoint.
    pub start: StartAt,
    /// End, if any.
    pub end: Option<DateTime<Utc>>,
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
    /// Checkpoint table.
    pub checkpoint_table: Option<QualifiedTable>,
    /// Least time between checkpoints of a stream group.
    pub checkpoint_interval: Duration,
    /// The consumer group this printer is a member of (`--group`).
    pub group: Option<GroupSettings>,
    /// Output format.
    pub format: Format,
    /// `--on-error`.
    pub on_error: OnError,
    /// Most rows read per second (`None`: unlimited).
    pub max_rows_per_second: Option<u64>,
    /// Time between progress lines (`None`: none).
    pub progress_interval: Option<Duration>,
}

impl Args {
    /// Checks what clap cannot and resolves times against `launched`, the instant the
    /// program was launched.
    pub fn into_config(self, launched: DateTime<Utc>) -> Result<Mode, CliError> {
        // clap counts `--demo` (a flag, false by default) as present for `requires`.
        if self.demo_seconds.is_some() && !self.demo {
            return Err(CliError::usage("--demo-seconds is only valid with --demo"));
        }
        if self.demo {
            if self.consumer_group.group.is_some() {
                return Err(CliError::usage("--group cannot be used with --demo"));
            }
            return Ok(Mode::Demo {
                seconds: self.demo_seconds,
                format: self.format,
            });
        }
        let hosts = self
            .hosts
            .or(self.hostname)
            .ok_or_else(|| CliError::usage("--hosts or --hostname is required"))?
            .0;
        let keyspace = self
            .keyspace
            .ok_or_else(|| CliError::usage("--keyspace is required"))?;
        let tables = self
            .table
            .ok_or_else(|| CliError::usage("--table is required"))?
            .0;
        let (start, end) = resolve_range(self.start, self.end, launched)?;
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
            |name| std::env::var(name).ok(),
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
        if self.on_error == OnError::DeadLetter && self.checkpoint_table.is_none() {
            return Err(CliError::usage(
                "--on-error dead-letter needs --checkpoint-table (dead letters are kept next to it)",
            ));
        }
        let early_reads = self.early_reads.resolve(self.safety_interval)?;
        let group = self.consumer_group.resolve(
            self.checkpoint_table.is_some(),
            "pass --checkpoint-table KEYSPACE.TABLE",
        )?;
        Ok(Mode::Print(Box::new(PrintConfig {
            hosts,
            credentials,
            tls,
            keyspace,
            tables,
            start,
            end,
            window_size: self.window_size,
            safety_interval: self.safety_interval,
            sleep_interval: self.sleep_interval,
            early_reads,
            max_idle_latency: self.max_idle_latency,
            give_up_after: self.give_up_after,
            checkpoint_table: self.checkpoint_table,
            checkpoint_interval: self.checkpoint_interval,
            group,
            format: self.format,
            on_error: self.on_error,
            max_rows_per_second: self.max_rows_per_second,
            progress_interval: self.progress_interval,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use scylla_cdc::cli::exit_code;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_714_564_800, 0).unwrap()
    }

    fn parse(args: &[&str]) -> Result<Mode, CliError> {
        let full = std::iter::once("scylla-cdc-printer").chain(args.iter().copied());
        match Args::try_parse_from(full) {
            Ok(a) => a.into_config(now()),
            Err(e) => Err(scylla_cdc::cli::clap_failure(&e).unwrap_err()),
        }
    }

    #[test]
    fn full_command_line() {
        let Mode::Print(c) = parse(&[
            "--hosts",
            "10.0.0.1:9042,10.0.0.2",
            "-k",
            "ks",
            "--table",
            "a,b",
            "--start",
            "-10m",
            "--end=now",
            "--window-size",
            "0.5",
            "--safety-interval",
            "0",
            "--sleep-interval",
            "0.1",
            "--user",
            "u",
            "--password",
            "p",
            "--checkpoint-table",
            "ks.progress",
            "--format",
            "json",
            "--max-idle-latency",
            "120",
        ])
        .unwrap() else {
            panic!("not a print run")
        };
        assert_eq!(c.hosts, vec!["10.0.0.1:9042", "10.0.0.2:9042"]);
        assert_eq!(c.keyspace, "ks");
        assert_eq!(c.tables, vec!["a", "b"]);
        assert_eq!(c.start, StartAt::Given(now() - TimeDelta::minutes(10)));
        assert_eq!(c.end, Some(now()));
        assert_eq!(c.window_size, Duration::from_millis(500));
        assert_eq!(c.safety_interval, Duration::ZERO);
        assert_eq!(c.sleep_interval, Duration::from_millis(100));
        assert_eq!(c.max_idle_latency, Some(Duration::from_secs(120)));
        assert_eq!(c.credentials, Some(("u".into(), "p".into())));
        assert_eq!(
            c.checkpoint_table,
            Some(QualifiedTable {
                keyspace: "ks".into(),
                table: "progress".into()
            })
        );
        assert_eq!(c.format, Format::Json);
    }

    #[test]
    fn defaults() {
        let Mode::Print(c) = parse(&["--hostname", "db", "-k", "ks", "-t", "t"]).unwrap() else {
            panic!("not a print run")
        };
        assert_eq!(c.hosts, vec!["db:9042"]);
        // No --start: the launch instant, resolved before anything is contacted.
        assert_eq!(c.start, StartAt::Launch(now()));
        assert_eq!(c.end, None);
        assert_eq!(c.window_size, Duration::from_secs(60));
        assert_eq!(c.safety_interval, Duration::from_secs(30));
        assert_eq!(c.sleep_interval, Duration::from_secs(10));
        assert_eq!(c.format, Format::Pretty);
        assert_eq!(c.credentials, None);
        // The printer reads early by default.
        assert_eq!(c.early_reads, Some(scylla_cdc::EarlyReads::default()));
        let Mode::Print(c) = parse(&[
            "--hostname",
            "db",
            "-k",
            "ks",
            "-t",
            "t",
            "--no-early-reads",
        ])
        .unwrap() else {
            panic!("not a print run")
        };
        assert_eq!(c.early_reads, None);
    }

    #[test]
    fn demo() {
        assert_eq!(
            parse(&["--demo", "--demo-seconds", "3", "--format", "json"]).unwrap(),
            Mode::Demo {
                seconds: Some(Duration::from_secs(3)),
                format: Format::Json
            }
        );
        assert!(parse(&["--demo", "--keyspace", "ks"]).is_err());
        assert!(parse(&["--demo-seconds", "3"]).is_err());
    }

    #[test]
    fn bad_arguments_are_one_line_usage_errors() {
        let base = ["--hostname", "db", "-k", "ks", "-t", "t"];
        let cases: Vec<(Vec<&str>, &str)> = vec![
            (vec!["-k", "ks", "-t", "t"], "--hosts"),
            (vec!["--hostname", "db", "-t", "t"], "--keyspace"),
            (vec!["--hostname", "db", "-k", "ks"], "--table"),
            (
                vec!["--hosts", "a:1", "--hostname", "b", "-k", "ks", "-t", "t"],
                "cannot be used with",
            ),
            (
                vec!["--hostname", "a:1,b:2", "-k", "ks", "-t", "t"],
                "more than one host",
            ),
            (
                vec!["--hosts", "a:99999", "-k", "ks", "-t", "t"],
                "invalid port",
            ),
            (
                [&base[..], &["--start", "yesterday"]].concat(),
                "not a time",
            ),
            ([&base[..], &["--start", "-10x"]].concat(), "unknown unit"),
            (
                [&base[..], &["--end", "-1m"]].concat(),
                "must be after --start",
            ),
            (
                [&base[..], &["--start", "now", "--end", "-1h"]].concat(),
                "must be after --start",
            ),
            (
                [&base[..], &["--window-size", "0"]].concat(),
                "out of range: 0.001 to 604800 seconds",
            ),
            (
                [&base[..], &["--window-size", "1e-9"]].concat(),
                "out of range",
            ),
            (
                [&base[..], &["--sleep-interval", "1e9"]].concat(),
                "out of range: 0 to 3600 seconds",
            ),
            (
                [&base[..], &["--give-up-after", "-3"]].concat(),
                "out of range: 0.001 to 31536000 seconds",
            ),
            (
                [&base[..], &["--checkpoint-interval", "5"]].concat(),
                "--checkpoint-table",
            ),
            ([&base[..], &["--demo-seconds", "5"]].concat(), "--demo"),
            (
                [&base[..], &["--metrics-addr", "9180"]].concat(),
                "HOST:PORT",
            ),
            (
                [&base[..], &["--max-rows-per-second", "0"]].concat(),
                "from 1 to 1000000000",
            ),
            (
                [
                    &base[..],
                    &["--safety-interval", "1", "--early-read-lag", "1"],
                ]
                .concat(),
                "--early-read-lag (1 s) must be shorter than --safety-interval (1 s)",
            ),
            (
                [
                    &base[..],
                    &["--no-early-reads", "--early-read-poll-interval", "1"],
                ]
                .concat(),
                "cannot be used with",
            ),
            (
                [&base[..], &["--early-read-poll-interval", "0"]].concat(),
                "out of range: 0.001 to 3600 seconds",
            ),
            (
                [&base[..], &["--max-unconfirmed-rows", "0"]].concat(),
                "from 1 to 1000000000",
            ),
            (
                [&base[..], &["--progress-interval", "0"]].concat(),
                "out of range: 0.1 to 86400",
            ),
            (
                [&base[..], &["--safety-interval", "-1"]].concat(),
                "out of range: 0 to 86400 seconds",
            ),
            (
                [&base[..], &["--sleep-interval", "x"]].concat(),
                "not a number",
            ),
            ([&base[..], &["--user", "u"]].concat(), "--password"),
            (
                [&base[..], &["--checkpoint-table", "nodot"]].concat(),
                "keyspace.table",
            ),
            ([&base[..], &["--format", "xml"]].concat(), "xml"),
            (
                [&base[..], &["--on-error", "ignore"]].concat(),
                "stop, skip, dead-letter",
            ),
            (
                [&base[..], &["--on-error", "dead-letter"]].concat(),
                "needs --checkpoint-table",
            ),
            ([&base[..], &["--bogus"]].concat(), "--bogus"),
            (
                vec!["--hostname", "db", "-k", "ks", "-t", "a,,b"],
                "invalid table name",
            ),
        ];
        for (args, needle) in cases {
            let err = parse(&args).expect_err(&format!("{args:?}"));
            assert_eq!(err.exit_code(), exit_code::USAGE, "{args:?}: {err}");
            let text = err.to_string();
            assert!(!text.contains('\n'), "{args:?}: {text}");
            assert!(text.starts_with("error: "), "{text}");
            assert!(text.contains(needle), "{args:?}: {text:?} lacks {needle:?}");
        }
    }

    #[test]
    fn consumer_group() {
        let base = ["--hostname", "db", "-k", "ks", "-t", "a,b"];
        let Mode::Print(c) = parse(&base).unwrap() else {
            panic!("not a print run")
        };
        assert_eq!(c.group, None);
        let Mode::Print(c) = parse(
            &[
                &base[..],
                &[
                    "--checkpoint-table",
                    "ks.cp",
                    "--group",
                    "g",
                    "--member-id",
                    "host-1",
                    "--lease-duration",
                    "6",
                    "--renew-interval",
                    "0.5",
                    "--lease-table",
                    "meta.leases",
                ],
            ]
            .concat(),
        )
        .unwrap() else {
            panic!("not a print run")
        };
        assert_eq!(
            c.group,
            Some(GroupSettings {
                name: "g".into(),
                member_id: Some("host-1".into()),
                lease_duration: Duration::from_secs(6),
                renew_interval: Some(Duration::from_millis(500)),
                lease_table: Some(QualifiedTable {
                    keyspace: "meta".into(),
                    table: "leases".into()
                }),
            })
        );
        // Defaults: the library's lease duration, its renew interval and lease table.
        let Mode::Print(c) =
            parse(&[&base[..], &["--checkpoint-table", "ks.cp", "--group", "g"]].concat()).unwrap()
        else {
            panic!("not a print run")
        };
        let g = c.group.unwrap();
        assert_eq!(g.lease_duration, scylla_cdc::DEFAULT_LEASE_DURATION);
        assert_eq!(
            (g.member_id, g.renew_interval, g.lease_table),
            (None, None, None)
        );
        let cp = ["--checkpoint-table", "ks.cp"];
        let cases: Vec<(Vec<&str>, &[&str])> = vec![
            (
                [&base[..], &["--group", "g"]].concat(),
                &["--group", "--checkpoint-table"],
            ),
            (
                [&base[..], &cp, &["--member-id", "m"]].concat(),
                &["--group"],
            ),
            (
                [&base[..], &cp, &["--lease-duration", "5"]].concat(),
                &["--group"],
            ),
            (
                [&base[..], &cp, &["--renew-interval", "1"]].concat(),
                &["--group"],
            ),
            (
                [&base[..], &cp, &["--lease-table", "ks.l"]].concat(),
                &["--group"],
            ),
            (
                [
                    &base[..],
                    &cp,
                    &[
                        "--group",
                        "g",
                        "--lease-duration",
                        "3",
                        "--renew-interval",
                        "3",
                    ],
                ]
                .concat(),
                &["--lease-duration (3 s) must be longer than --renew-interval (3 s)"],
            ),
            (
                [&base[..], &cp, &["--group", "g", "--renew-interval", "12"]].concat(),
                &["--lease-duration (10 s, the default) must be longer than --renew-interval"],
            ),
            (
                [&base[..], &cp, &["--group", "g", "--lease-duration", "0"]].concat(),
                &["out of range: 0.1 to 86400"],
            ),
            (
                [&base[..], &cp, &["--group", " "]].concat(),
                &["not a valid name"],
            ),
            (vec!["--demo", "--group", "g"], &["--demo"]),
        ];
        for (args, needles) in cases {
            let err = parse(&args).expect_err(&format!("{args:?}"));
            assert_eq!(err.exit_code(), exit_code::USAGE, "{args:?}: {err}");
            let text = err.to_string();
            assert!(!text.contains('\n'), "{args:?}: {text}");
            for needle in needles {
                assert!(text.contains(needle), "{args:?}: {text:?} lacks {needle:?}");
            }
        }
    }

    #[test]
    fn help_is_not_an_error() {
        let err = Args::try_parse_from(["scylla-cdc-printer", "--help"]).unwrap_err();
        let text = scylla_cdc::cli::clap_failure(&err).unwrap();
        assert!(text.contains("--checkpoint-table"), "{text}");
    }
}
