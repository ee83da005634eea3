//! The printer's command line: [`Args`] as clap parses it, checked and resolved into a
//! [`PrintConfig`] by [`Args::into_config`] before anything is contacted.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use scylla_cdc::cli::args::{env_help, get_matches};
use scylla_cdc::cli::metrics_http::metrics_addr_arg;
use scylla_cdc::cli::secure::{Credentials, TlsOptions};
use scylla_cdc::cli::{
    CliError, ConnectionArgs, GroupFlags, GroupSettings, LogArgs, OnError, ReadingArgs, StartAt,
    TimeRangeArgs, checkpoint_interval_arg, env_prefixed, heading, long_interval_arg, on_error_arg,
    parse_name, progress_interval_arg, qualified_arg, resolve_range, tables_arg,
};
pub use scylla_cdc::cli::{Hosts, QualifiedTable, Tables};

/// The prefix of the environment variables that set the printer's flags
/// (`SCYLLA_CDC_PRINTER_HOSTS` sets `--hosts`).
pub const ENV_PREFIX: &str = "SCYLLA_CDC_PRINTER_";

/// How rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A readable block per row.
    Pretty,
    /// One JSON object per row (newline-delimited).
    Json,
    /// One Debezium-like JSON object per whole change: every row of one stream with one
    /// cdc$time (newline-delimited).
    Change,
}

/// The usage lines: a print run needs contact points, a keyspace and tables; the demo needs
/// none of them (clap cannot show "required unless --demo" itself).
const USAGE: &str = "scylla-cdc-printer <--hosts <HOST:PORT,...>|--hostname <HOST[:PORT]>> \
--keyspace <KEYSPACE> --table <TABLE,...> [OPTIONS]
       scylla-cdc-printer --demo [--demo-seconds <SECONDS>] [--format <FORMAT>]";

/// What `--help` shows after the flags: examples, exit codes, environment variables.
fn after_help() -> String {
    format!(
        "Examples:
  scylla-cdc-printer --hosts 127.0.0.1:9042 -k shop -t orders
  scylla-cdc-printer --hosts 10.0.0.1,10.0.0.2 -k shop -t orders,items --start -1h --end now \
--format json
  scylla-cdc-printer --hosts 10.0.0.1 -k shop -t orders --checkpoint-table shop.printer_progress
  scylla-cdc-printer --demo --demo-seconds 30

Exit codes: 0 done or stopped, 1 failure while running, 2 bad argument, 3 cannot connect, 4 \
keyspace or table missing or without CDC (or a lease table of another shape).

{}",
        env_help(ENV_PREFIX, ("hosts", "10.0.0.1:9042"))
    )
}

/// Print the CDC log of ScyllaDB tables as changes arrive.
///
/// Times are RFC 3339 (2024-05-01T12:00:00Z), now, or relative to now (-10m, -1h30m);
/// intervals are seconds, fractions allowed. Credentials: the user from --user or
/// SCYLLA_USER, the password from SCYLLA_PASSWORD or --password-file (--password works but
/// shows it to every user of the machine).
#[derive(Debug, Clone, Parser)]
#[command(name = "scylla-cdc-printer", version, override_usage = USAGE, after_help = after_help())]
pub struct Args {
    /// Contact points, credentials, TLS.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// How long a start-up step (connecting, reading the schema, loading the checkpoint) or a
    /// read keeps being retried while it fails transiently (timeouts, Overloaded, a cluster
    /// that cannot be reached), in seconds; then the program exits with code 3. Each retry
    /// logs a WARN line with its cause (0.001 to 31536000, a year; default: retry forever).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg,
          help_heading = heading::CONNECTION)]
    pub give_up_after: Option<Duration>,
    /// How long the first contact with the cluster is retried while nothing answers (a typo
    /// in --hosts, a cluster not started), in seconds; then the printer exits with code 3
    /// (0 to 31536000; 0: retry forever; --give-up-after, if shorter, applies instead).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "30", value_parser = scylla_cdc::cli::connect_timeout_arg,
          help_heading = heading::CONNECTION)]
    pub connect_timeout: Duration,
    /// Keyspace of the tables.
    #[arg(long, short = 'k', value_name = "KEYSPACE", value_parser = parse_name,
          required_unless_present = "demo", help_heading = heading::WHAT_TO_READ)]
    pub keyspace: Option<String>,
    /// Tables to print, comma-separated.
    #[arg(long, short = 't', value_name = "TABLE,...", value_parser = tables_arg,
          required_unless_present = "demo", help_heading = heading::WHAT_TO_READ)]
    pub table: Option<Tables>,
    /// --start and --end.
    #[command(flatten)]
    pub range: TimeRangeArgs,
    /// Save progress in this table (created if missing) and resume from it.
    #[arg(long, value_name = "KEYSPACE.TABLE", value_parser = qualified_arg,
          help_heading = heading::WHERE_TO_START)]
    pub checkpoint_table: Option<QualifiedTable>,
    /// Least time between two checkpoints of a stream group, in seconds (0 to 86400; 0: after
    /// every window). A group also saves when it finishes a generation and on stop.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10",
          requires = "checkpoint_table", value_parser = checkpoint_interval_arg,
          help_heading = heading::WHERE_TO_START)]
    pub checkpoint_interval: Duration,
    /// Output format.
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = Format::Pretty,
          help_heading = heading::OUTPUT)]
    pub format: Format,
    /// What to do with a change that cannot be printed, after 3 retries: stop (exit 1; a
    /// restart prints it again), skip (log it), or dead-letter (write it to the table named
    /// after the checkpoint table with _dead_letters appended; needs --checkpoint-table).
    #[arg(long, value_name = "stop|skip|dead-letter", default_value = "stop",
          value_parser = on_error_arg, help_heading = heading::OUTPUT)]
    pub on_error: OnError,
    /// Start an embedded 3-node cluster with a demo table and a writer, and print its changes.
    #[arg(long, conflicts_with_all = ["hosts", "hostname", "keyspace", "table", "checkpoint_table", "start", "end"],
          help_heading = "Demo")]
    pub demo: bool,
    /// Stop the demo after this many seconds (0.001 to 31536000; default: run until Ctrl-C).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg,
          help_heading = "Demo")]
    pub demo_seconds: Option<Duration>,
    /// Window, safety and sleep intervals, early reads, rate limit.
    #[command(flatten)]
    pub reading: ReadingArgs,
    /// Adaptive polling: the longest a change written while the log is idle may wait before
    /// it is read, in seconds; idle stream groups poll less often, up to this bound (0.001 to
    /// 31536000, though no pause exceeds a day; default: safety interval + sleep interval,
    /// i.e. no back-off).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg,
          help_heading = heading::OPERATION)]
    pub max_idle_latency: Option<Duration>,
    /// Seconds between two progress lines on stderr (rows printed, low watermark and lag):
    /// 0.1 to 86400 (default: none).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = progress_interval_arg,
          help_heading = heading::OPERATION)]
    pub progress_interval: Option<Duration>,
    /// Serve the reader's metrics as Prometheus text on http://HOST:PORT/metrics.
    #[arg(long, value_name = "HOST:PORT", value_parser = metrics_addr_arg,
          help_heading = heading::OPERATION)]
    pub metrics_addr: Option<SocketAddr>,
    /// Consumer group: --group, --member-id, --lease-duration, --renew-interval,
    /// --lease-table.
    #[command(flatten)]
    pub consumer_group: GroupFlags,
    /// --log-format.
    #[command(flatten)]
    pub log: LogArgs,
}

/// The printer's command line as it parses it: [`Args`], every flag also settable from a
/// variable of [`ENV_PREFIX`], `--hosts` or `--hostname` required unless `--demo`.
pub fn command() -> clap::Command {
    env_prefixed(Args::command(), ENV_PREFIX)
        // Usage lines name the program, whatever its file is called.
        .bin_name("scylla-cdc-printer")
        .mut_arg("hosts", |a| {
            a.required_unless_present_any(["hostname", "demo"])
        })
}

/// Parses the printer's arguments (the first is the program name) with [`command`]: the
/// command line, then the environment.
pub fn parse<I, T>(args: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = get_matches(command(), args)?;
    Args::from_arg_matches(&matches)
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
        let keyspace = self
            .keyspace
            .ok_or_else(|| CliError::usage("--keyspace is required"))?;
        let tables = self
            .table
            .ok_or_else(|| CliError::usage("--table is required"))?
            .0;
        let connection = self.connection.resolve(|name| std::env::var(name).ok())?;
        let (start, end) = resolve_range(self.range.start, self.range.end, launched)?;
        if self.on_error == OnError::DeadLetter && self.checkpoint_table.is_none() {
            return Err(CliError::usage(
                "--on-error dead-letter needs --checkpoint-table (dead letters are kept next to it)",
            ));
        }
        let early_reads = self.reading.early_reads()?;
        let group = self.consumer_group.resolve(
            self.checkpoint_table.is_some(),
            "pass --checkpoint-table KEYSPACE.TABLE",
        )?;
        Ok(Mode::Print(Box::new(PrintConfig {
            hosts: connection.hosts,
            credentials: connection.credentials,
            tls: connection.tls,
            keyspace,
            tables,
            start,
            end,
            window_size: self.reading.window_size,
            safety_interval: self.reading.safety_interval,
            sleep_interval: self.reading.sleep_interval,
            early_reads,
            max_idle_latency: self.max_idle_latency,
            give_up_after: self.give_up_after,
            checkpoint_table: self.checkpoint_table,
            checkpoint_interval: self.checkpoint_interval,
            group,
            format: self.format,
            on_error: self.on_error,
            max_rows_per_second: self.reading.max_rows_per_second,
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
        match super::parse(full) {
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
        let err = super::parse(["scylla-cdc-printer", "--help"]).unwrap_err();
        let text = scylla_cdc::cli::clap_failure(&err).unwrap();
        assert!(text.contains("--checkpoint-table"), "{text}");
    }
}
