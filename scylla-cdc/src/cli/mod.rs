//! What the printer and the replicator share on the command line: parsing hosts, points in
//! time and intervals, connecting, exit codes with one-line errors, shutdown on Ctrl-C /
//! SIGTERM, and supervising running log readers.
//!
//! Both programs validate every argument with these parsers before connecting anywhere, and
//! turn every failure into a [`CliError`]: one line on stderr and an exit code from
//! [`exit_code`]. A [`Shutdown`] is what a program watches to stop: the first request stops
//! the readers gracefully (their consumers are flushed and a checkpoint is saved), a second
//! one stops them at once. [`supervise`] runs a set of readers under such a shutdown.
//! [`scan`] reads a table by token range (the programs' snapshots and the replicator's
//! `verify`).

use std::fmt;
use std::net::Ipv6Addr;
use std::sync::Arc;
use std::time::Duration;

use crate::{Backoff, CDCError, CDCLogReader, CDCReaderHandle};
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{
    ConnectionError, ConnectionPoolError, ConnectionSetupRequestErrorKind, DbError, MetadataError,
    NewSessionError,
};
use tokio::sync::watch;
use tracing::info;

pub mod args;
pub mod health;
pub mod metrics_http;
mod output;
pub mod scan;
pub mod secure;

pub use args::{
    Connection, ConnectionArgs, LogArgs, LogFormat, ReadingArgs, TimeRangeArgs, env_prefixed,
    heading,
};
pub use output::{Output, SharedBuffer};

use self::secure::{Credentials, SettingError, TlsOptions};

/// Exit codes of both programs.
pub mod exit_code {
    /// Success (including a clean stop on Ctrl-C / SIGTERM).
    pub const OK: u8 = 0;
    /// A failure while running: reading the log, applying changes, writing the output.
    pub const RUNTIME: u8 = 1;
    /// A bad argument (including a bad point in time); nothing was contacted.
    pub const USAGE: u8 = 2;
    /// A cluster could not be reached (or refused the credentials), or kept failing
    /// transiently (timeouts, `Overloaded`, broken connections) past `--give-up-after`.
    pub const CONNECT: u8 = 3;
    /// A keyspace or table is missing, CDC is not enabled on it, or schemas do not match.
    pub const SCHEMA: u8 = 4;
}

/// The cluster port used when a host is given without one.
pub const DEFAULT_PORT: u16 = 9042;

/// A failure of a program, reported as one line on stderr with an exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    code: u8,
    message: String,
    /// Whether the failure is transient (worth retrying at start-up).
    transient: bool,
}

/// A credentials or TLS setting that cannot be used is a usage error.
impl From<SettingError> for CliError {
    fn from(e: SettingError) -> Self {
        CliError::usage(e.to_string())
    }
}

impl CliError {
    /// A failure with this exit code; newlines in the message are folded into `; ` so the
    /// report stays on one line.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: one_line(&message.into()),
            transient: false,
        }
    }

    /// A transient failure (a timeout, `Overloaded`, a cluster that cannot be reached or a
    /// broken connection): start-up retries it, and once it gives up the exit code is
    /// [`exit_code::CONNECT`].
    pub fn transient(message: impl Into<String>) -> Self {
        Self {
            transient: true,
            ..Self::new(exit_code::CONNECT, message)
        }
    }

    /// Whether start-up retries this failure.
    pub fn is_transient(&self) -> bool {
        self.transient
    }

    /// A bad argument ([`exit_code::USAGE`]).
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(exit_code::USAGE, message)
    }

    /// A cluster that cannot be reached ([`exit_code::CONNECT`]).
    pub fn connect(message: impl Into<String>) -> Self {
        Self::new(exit_code::CONNECT, message)
    }

    /// A missing or unsuitable keyspace or table ([`exit_code::SCHEMA`]).
    pub fn schema(message: impl Into<String>) -> Self {
        Self::new(exit_code::SCHEMA, message)
    }

    /// A failure while running ([`exit_code::RUNTIME`]).
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(exit_code::RUNTIME, message)
    }

    /// The failure of a reader of `table` (`ks.t`), with the exit code its kind deserves.
    pub fn from_reader(table: &str, err: &CDCError) -> Self {
        if err.is_transient() {
            return Self::transient(format!("{table}: {}", error_chain(err)));
        }
        if let CDCError::LeaseTableShape {
            table: lease_table,
            problems,
            expected,
        } = err
        {
            // The library's message names its builder method; a program's user needs the flag.
            return Self::schema(format!(
                "{table}: the lease table {lease_table} exists with another shape ({}); drop it \
                 or name another table with --lease-table; the programs expect: {expected}",
                problems.join("; ")
            ));
        }
        let code = match err {
            CDCError::KeyspaceNotFound(_)
            | CDCError::TableNotFound { .. }
            | CDCError::CdcNotEnabled { .. }
            | CDCError::CdcDisabled { .. }
            | CDCError::NoGeneration { .. } => exit_code::SCHEMA,
            CDCError::InvalidConfig(_) | CDCError::MissingOption(_) => exit_code::USAGE,
            _ => exit_code::RUNTIME,
        };
        Self::new(code, format!("{table}: {}", error_chain(err)))
    }

    /// The exit code.
    pub fn exit_code(&self) -> u8 {
        self.code
    }

    /// The one-line message (without the `error: ` prefix).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)
    }
}

impl std::error::Error for CliError {}

/// `text` with its lines joined by `; ` (blank lines dropped).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// An error and its causes as `outer: cause: root`, skipping causes that the outer message
/// already contains.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
        source = cause.source();
    }
    text
}

/// Turns a clap parse failure into the program's reaction: `Ok(text)` for `--help` and
/// `--version` (print `text` on stdout, exit 0), otherwise the one-line usage error.
pub fn clap_failure(err: &clap::Error) -> Result<String, CliError> {
    use clap::error::ErrorKind;
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Ok(err.render().to_string()),
        _ => {
            // The message is everything before clap's usage and hint lines, on one line.
            let rendered = err.render().to_string();
            let message = rendered
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            let message = if message.is_empty() {
                "invalid arguments"
            } else {
                message
            };
            Err(CliError::usage(format!("{message} (see --help)")))
        }
    }
}

/// Parses `h[:p],h[:p],...` (IPv6 as `[addr]:port`) into `host:port` strings the driver
/// accepts; a missing port is [`DEFAULT_PORT`].
pub fn parse_hosts(text: &str) -> Result<Vec<String>, String> {
    let mut hosts = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!(
                "`{text}` has an empty host (expected host:port,host:port,...)"
            ));
        }
        hosts.push(parse_host(part)?);
    }
    Ok(hosts)
}

/// One `host[:port]`.
fn parse_host(text: &str) -> Result<String, String> {
    let port = |p: &str| -> Result<u16, String> {
        match p.parse::<u16>() {
            Ok(0) | Err(_) => Err(format!("`{text}` has an invalid port `{p}` (1-65535)")),
            Ok(p) => Ok(p),
        }
    };
    if let Some(rest) = text.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{text}` has no closing `]`"))?;
        addr.parse::<Ipv6Addr>()
            .map_err(|_| format!("`{addr}` is not an IPv6 address"))?;
        let p = match after {
            "" => DEFAULT_PORT,
            _ => port(
                after
                    .strip_prefix(':')
                    .ok_or_else(|| format!("`{text}`: expected `:port` after `]`"))?,
            )?,
        };
        return Ok(format!("[{addr}]:{p}"));
    }
    if text.matches(':').count() > 1 {
        // A bare IPv6 address cannot carry a port.
        text.parse::<Ipv6Addr>()
            .map_err(|_| format!("`{text}` is not host:port (write IPv6 as [addr]:port)"))?;
        return Ok(format!("[{text}]:{DEFAULT_PORT}"));
    }
    let (host, p) = match text.split_once(':') {
        Some((h, p)) => (h, port(p)?),
        None => (text, DEFAULT_PORT),
    };
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !valid {
        return Err(format!("`{host}` is not a valid host name or address"));
    }
    Ok(format!("{host}:{p}"))
}

/// A point in time as given on the command line, resolved against "now" once every
/// argument has been read, so that `--start -10m --end now` share one "now".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeSpec {
    /// `now`
    Now,
    /// `-10m`, `+1h30m`, `now-90s`: now plus this many microseconds.
    Relative(i64),
    /// An RFC 3339 time, e.g. `2024-05-01T12:00:00Z`.
    Absolute(DateTime<Utc>),
}

impl TimeSpec {
    /// The point in time, relative to `now`; `None` if it is out of range.
    pub fn resolve(self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            TimeSpec::Now => Some(now),
            TimeSpec::Relative(us) => now.checked_add_signed(TimeDelta::microseconds(us)),
            TimeSpec::Absolute(t) => Some(t),
        }
    }
}

/// The instant this process was launched: its start time as Linux records it (from
/// `/proc/self/stat` and `/proc/uptime`, both in 10 ms steps, so up to 20 ms early), else now.
///
/// The operating system's record is taken at fork, before the program's own code runs (loading
/// and runtime set-up take milliseconds), so a change written by a script right after starting
/// the program is after this instant.
pub fn launch_time() -> DateTime<Utc> {
    let now = Utc::now();
    match process_age() {
        Some(age) => TimeDelta::from_std(age)
            .ok()
            .and_then(|age| now.checked_sub_signed(age))
            .unwrap_or(now),
        None => now,
    }
}

/// How long ago this process was started, per `/proc`; `None` where `/proc` does not say or
/// the answer is implausible.
fn process_age() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    process_age_from(&stat, &uptime)
}

/// The age of the process whose `/proc/<pid>/stat` is `stat`, given `/proc/uptime`.
fn process_age_from(stat: &str, uptime: &str) -> Option<Duration> {
    // Fields after the command name (which may contain spaces and parentheses) start after the
    // last ')': the first of them is field 3, so `starttime` (field 22) is the 20th.
    let start_ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let uptime: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    // `starttime` is in USER_HZ ticks, 100 per second in Linux's ABI on every architecture
    // the programs are built for. Both readings are rounded down to 10 ms: err on the early
    // side. An age of more than a few seconds means the ticks are not what we assumed (the
    // programs ask right after they start).
    let age = uptime - start_ticks as f64 / 100.0 + 0.02;
    (0.0..10.0)
        .contains(&age)
        .then(|| Duration::from_secs_f64(age))
}

/// Where reading starts when there is no checkpoint: the instant the program was launched
/// (the default) or the `--start` the user gave, resolved once at launch, before any network
/// work, so that every change written after the launch is delivered however long start-up
/// takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// No `--start`: the launch instant.
    Launch(DateTime<Utc>),
    /// `--start`, resolved against the launch instant.
    Given(DateTime<Utc>),
}

impl StartAt {
    /// `--start` resolved against `launched`, or `launched` itself.
    pub fn resolve(spec: Option<TimeSpec>, launched: DateTime<Utc>) -> Result<StartAt, CliError> {
        match spec {
            None => Ok(StartAt::Launch(launched)),
            Some(s) => s
                .resolve(launched)
                .map(StartAt::Given)
                .ok_or_else(|| CliError::usage("--start is out of range")),
        }
    }

    /// The point in time.
    pub fn time(self) -> DateTime<Utc> {
        match self {
            StartAt::Launch(t) | StartAt::Given(t) => t,
        }
    }
}

impl fmt::Display for StartAt {
    /// `2026-01-02T03:04:05.123456Z (launch time)` or `... (--start)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartAt::Launch(t) => write!(f, "{} (launch time)", rfc3339_micros(*t)),
            StartAt::Given(t) => write!(f, "{} (--start)", rfc3339_micros(*t)),
        }
    }
}

/// Parses `now`, a relative time (`-10m`, `+2h`, `-1h30m`, `now-45s`; units `us`, `ms`, `s`,
/// `m`, `h`, `d`, `w`) or an RFC 3339 time.
pub fn parse_time(text: &str) -> Result<TimeSpec, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("now") {
        return Ok(TimeSpec::Now);
    }
    let rel = if t.len() > 3 && t.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("now")) {
        t.get(3..)
    } else if t.starts_with(['-', '+']) {
        Some(t)
    } else {
        None
    };
    if let Some(rel) = rel {
        return parse_relative(rel)
            .map(TimeSpec::Relative)
            .map_err(|e| format!("`{text}`: {e}"));
    }
    DateTime::parse_from_rfc3339(t)
        .map(|d| TimeSpec::Absolute(d.with_timezone(&Utc)))
        .map_err(|e| {
            format!(
                "`{text}` is not a time ({e}); use RFC 3339 (2024-05-01T12:00:00Z), `now`, or a relative time like -10m"
            )
        })
}

/// `[+-]<n><unit>...` in microseconds.
fn parse_relative(text: &str) -> Result<i64, String> {
    let (sign, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (-1i64, &text[1..]),
        Some(b'+') => (1i64, &text[1..]),
        _ => return Err("a relative time starts with + or -".into()),
    };
    if rest.is_empty() {
        return Err("a relative time needs an amount and a unit, like -10m".into());
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!("expected a number at `{rest}`"));
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| format!("`{}` is too large", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let micros_per: i64 = match unit {
            "us" => 1,
            "ms" => 1_000,
            "s" => 1_000_000,
            "m" => 60_000_000,
            "h" => 3_600_000_000,
            "d" => 86_400_000_000,
            "w" => 604_800_000_000,
            "" => return Err(format!("`{n}` has no unit (us, ms, s, m, h, d, w)")),
            other => return Err(format!("unknown unit `{other}` (us, ms, s, m, h, d, w)")),
        };
        total = n
            .checked_mul(micros_per)
            .and_then(|v| total.checked_add(v))
            .ok_or("the relative time is too large")?;
    }
    Ok(sign * total)
}

/// Parses a number of seconds (fractions allowed, e.g. `0.5`), at least zero.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("`{text}` must be a non-negative number of seconds"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("`{text}` seconds is too long"))
}

/// Like [`parse_seconds`], but zero is refused.
pub fn parse_positive_seconds(text: &str) -> Result<Duration, String> {
    let d = parse_seconds(text)?;
    if d.is_zero() {
        return Err(format!("`{text}` must be more than zero seconds"));
    }
    Ok(d)
}

const MILLISECOND: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

/// A number of seconds (fractions allowed) within `[min, max]`: a value a program cannot work
/// with (a window of a nanosecond never ends a catch-up; a safety interval of years never
/// reads) is refused, and every refusal (not a number, negative, NaN, infinite, too large for
/// a duration, or outside the range) names the range.
fn seconds_within(text: &str, min: Duration, max: Duration) -> Result<Duration, String> {
    let range = format!("{} to {} seconds", min.as_secs_f64(), max.as_secs_f64());
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds ({range})"))?;
    let out_of_range = || format!("`{text}` is out of range: {range}");
    if !secs.is_finite() || secs < 0.0 {
        return Err(out_of_range());
    }
    let d = Duration::try_from_secs_f64(secs).map_err(|_| out_of_range())?;
    if d < min || d > max {
        return Err(out_of_range());
    }
    Ok(d)
}

/// clap parser of `--window-size`: 1 ms to 7 days.
pub fn window_size_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, MILLISECOND, 7 * DAY)
}

/// clap parser of `--safety-interval`: 0 to 1 day.
pub fn safety_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::ZERO, DAY)
}

/// clap parser of `--sleep-interval`: 0 (read the next window as soon as one is done, see
/// [`crate::CDCLogReaderBuilder::sleep_interval`]) to 1 hour.
pub fn sleep_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::ZERO, HOUR)
}

/// clap parser of `--checkpoint-interval`: 0 (after every window) to 1 day.
pub fn checkpoint_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::ZERO, DAY)
}

/// clap parser of `--progress-interval`: 0.1 s to 1 day.
pub fn progress_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::from_millis(100), DAY)
}

/// clap parser of `--max-rows-per-second`: a whole number from 1 to 10^9.
pub fn rows_per_second_arg(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of rows from 1 to 1000000000"
        )),
    }
}

/// clap parser of `--give-up-after` and `--demo-seconds`: 1 ms to 365 days.
pub fn long_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, MILLISECOND, 365 * DAY)
}

/// clap parser of the printer's `--connect-timeout`: 0 (retry forever) to 365 days.
pub fn connect_timeout_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::ZERO, 365 * DAY)
}

/// Whether `name` is a valid unquoted-or-quoted CQL name as stored (non-empty, at most 48
/// characters, no control characters).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().count() <= 48 && !name.chars().any(char::is_control)
}

/// Parses `keyspace.table` (names as stored, case-sensitive).
pub fn parse_qualified_table(text: &str) -> Result<(String, String), String> {
    let (ks, t) = text
        .split_once('.')
        .ok_or_else(|| format!("`{text}` is not keyspace.table"))?;
    if !valid_name(ks) || !valid_name(t) || t.contains('.') {
        return Err(format!("`{text}` is not keyspace.table"));
    }
    Ok((ks.to_owned(), t.to_owned()))
}

/// Parses a keyspace name.
pub fn parse_name(text: &str) -> Result<String, String> {
    if !valid_name(text) || text.contains('.') {
        return Err(format!("`{text}` is not a valid name"));
    }
    Ok(text.to_owned())
}

/// Parses `t1,t2,...` (at least one, no duplicates).
pub fn parse_table_list(text: &str) -> Result<Vec<String>, String> {
    let mut tables: Vec<String> = Vec::new();
    for part in text.split(',') {
        let t = part.trim();
        let t = parse_name(t).map_err(|_| format!("`{text}` has an invalid table name `{t}`"))?;
        if tables.contains(&t) {
            return Err(format!("table `{t}` is listed twice"));
        }
        tables.push(t);
    }
    Ok(tables)
}

/// Hosts of a cluster (`host:port` each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts(pub Vec<String>);

/// Table names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tables(pub Vec<String>);

/// `keyspace.table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QualifiedTable {
    /// The keyspace.
    pub keyspace: String,
    /// The table.
    pub table: String,
}

/// clap parser of host lists (`--hosts`, `--source`, `--destination`).
pub fn hosts_arg(text: &str) -> Result<Hosts, String> {
    parse_hosts(text).map(Hosts)
}

/// clap parser of a single host (`--hostname`).
pub fn one_host_arg(text: &str) -> Result<Hosts, String> {
    let h = parse_hosts(text)?;
    if h.len() != 1 {
        return Err(format!("`{text}` is more than one host (use --hosts)"));
    }
    Ok(Hosts(h))
}

/// clap parser of `--table` lists.
pub fn tables_arg(text: &str) -> Result<Tables, String> {
    parse_table_list(text).map(Tables)
}

/// clap parser of `keyspace.table` (`--checkpoint-table`).
pub fn qualified_arg(text: &str) -> Result<QualifiedTable, String> {
    parse_qualified_table(text).map(|(keyspace, table)| QualifiedTable { keyspace, table })
}

/// The consumer-group flags both programs take: `--group`, `--member-id`,
/// `--lease-duration`, `--renew-interval` and `--lease-table` (see
/// [`crate::CDCLogReaderBuilder::group`]). clap refuses the others without `--group`;
/// [`GroupFlags::resolve`] checks what it cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct GroupFlags {
    /// Read as a member of this consumer group: the processes started with the same group on
    /// the same tables share their streams (each change is read by one of them), take over
    /// the streams of a member that dies after --lease-duration, and rebalance when one joins
    /// or stops. Needs a checkpoint table; the group's leases are kept next to it (the
    /// checkpoint table's name with _leases appended, created if missing).
    #[arg(long, value_name = "NAME", value_parser = group_name_arg,
          help_heading = heading::OPERATION)]
    pub group: Option<String>,
    /// This process's id in the group (default: the host name, the process id and 8 random
    /// hex digits); ids must differ between the members running at one time.
    #[arg(long, value_name = "ID", requires = "group", value_parser = group_name_arg,
          help_heading = heading::OPERATION)]
    pub member_id: Option<String>,
    /// How long a member's lease on its streams lasts without renewal, in seconds: the
    /// streams of a member that died wait this long before another member takes them over
    /// (0.1 to 86400; default 10; longer than --renew-interval).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, requires = "group",
          value_parser = lease_duration_arg, help_heading = heading::OPERATION)]
    pub lease_duration: Option<Duration>,
    /// How often a member renews its leases and looks at the group, in seconds (0.01 to 43200;
    /// shorter than --lease-duration; default: a third of the lease duration).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, requires = "group",
          value_parser = renew_interval_arg, help_heading = heading::OPERATION)]
    pub renew_interval: Option<Duration>,
    /// The group's lease table (created if missing; default: the checkpoint table's name
    /// with _leases appended, in its keyspace).
    #[arg(long, value_name = "KEYSPACE.TABLE", requires = "group", value_parser = qualified_arg,
          help_heading = heading::OPERATION)]
    pub lease_table: Option<QualifiedTable>,
}

/// The early-read flags both programs take: `--early-read-lag`,
/// `--early-read-poll-interval`, `--max-unconfirmed-rows` and `--no-early-reads` (see
/// [`crate::CDCLogReaderBuilder::early_reads`]). The programs read early by default;
/// [`EarlyReadFlags::resolve`] checks the flags against the safety interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct EarlyReadFlags {
    /// Early reads: how far behind now each stream group reads, in seconds, so that a change
    /// arrives within about lag + poll interval of its write; rows that become visible later
    /// (past client timestamps, clock skew) are delivered by a confirmation a safety interval
    /// behind now, flagged late (0 to 3600, shorter than --safety-interval; default 0.1).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true,
          value_parser = early_read_lag_arg, help_heading = heading::OPERATION)]
    pub early_read_lag: Option<Duration>,
    /// Early reads: how often a caught-up stream group asks for new rows, in seconds; each
    /// poll is one query per group of at most 100 streams (0.001 to 3600; default 0.6).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true,
          value_parser = early_read_poll_interval_arg, help_heading = heading::OPERATION)]
    pub early_read_poll_interval: Option<Duration>,
    /// Early reads: the most rows delivered early and not yet confirmed that are remembered
    /// (24 bytes each); past it, early reads pause until confirmation catches up (1 to
    /// 1000000000; default 1000000).
    #[arg(long, value_name = "ROWS", allow_negative_numbers = true,
          value_parser = unconfirmed_rows_arg, help_heading = heading::OPERATION)]
    pub max_unconfirmed_rows: Option<usize>,
    /// Read only a safety interval behind now, as before early reads: every change arrives
    /// in the order of its partition's writes, --safety-interval after its write.
    #[arg(long, conflicts_with_all = ["early_read_lag", "early_read_poll_interval", "max_unconfirmed_rows"],
          help_heading = heading::OPERATION)]
    pub no_early_reads: bool,
}

impl EarlyReadFlags {
    /// The early reads these flags ask for, given the run's safety interval (`None`: off).
    /// They are off with `--no-early-reads`, and when the safety interval is no longer than
    /// the default lag (reading is then already that close to now); a lag given explicitly
    /// must be shorter than the safety interval.
    pub fn resolve(
        &self,
        safety_interval: Duration,
    ) -> Result<Option<crate::EarlyReads>, CliError> {
        if self.no_early_reads {
            return Ok(None);
        }
        let mut early = crate::EarlyReads::default();
        match self.early_read_lag {
            Some(lag) if lag >= safety_interval => {
                return Err(CliError::usage(format!(
                    "--early-read-lag ({} s) must be shorter than --safety-interval ({} s): \
                     early reads read closer to now than the safety interval (or pass \
                     --no-early-reads)",
                    lag.as_secs_f64(),
                    safety_interval.as_secs_f64()
                )));
            }
            Some(lag) => early.lag = lag,
            None if early.lag >= safety_interval => return Ok(None),
            None => {}
        }
        if let Some(poll) = self.early_read_poll_interval {
            early.poll_interval = poll;
        }
        if let Some(rows) = self.max_unconfirmed_rows {
            early.max_unconfirmed_rows = rows;
        }
        Ok(Some(early))
    }
}

/// clap parser of `--early-read-lag`: 0 to 1 hour (a lag of more is no early read).
pub fn early_read_lag_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::ZERO, HOUR)
}

/// clap parser of `--early-read-poll-interval`: 1 ms to 1 hour.
pub fn early_read_poll_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, crate::MIN_EARLY_POLL_INTERVAL.max(MILLISECOND), HOUR)
}

/// clap parser of `--max-unconfirmed-rows`: a whole number from 1 to 10^9.
pub fn unconfirmed_rows_arg(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}` is not a number of rows from 1 to 1000000000"
        )),
    }
}

/// The member id a group member gets without `--member-id`: the host's name, the process id
/// and 32 random bits (`<host>-<pid>-<8 hex digits>`), as the library chooses it. For a
/// program that must know its id before the reader starts (to derive names from it).
pub fn default_member_id() -> String {
    crate::group::lease::default_member_id()
}

/// A consumer group, checked ([`GroupFlags::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSettings {
    /// `--group`.
    pub name: String,
    /// `--member-id` (`None`: the library's default, host name and pid).
    pub member_id: Option<String>,
    /// `--lease-duration`.
    pub lease_duration: Duration,
    /// `--renew-interval` (`None`: a third of the lease duration).
    pub renew_interval: Option<Duration>,
    /// `--lease-table` (`None`: next to the checkpoint table).
    pub lease_table: Option<QualifiedTable>,
}

impl GroupFlags {
    /// The group, if `--group` was given: refused without a checkpoint table
    /// (`has_checkpoint_table` false; `fix` says how to get one, e.g. "pass
    /// --checkpoint-table KEYSPACE.TABLE"), or with a lease duration not longer than the renew
    /// interval.
    pub fn resolve(
        self,
        has_checkpoint_table: bool,
        fix: &str,
    ) -> Result<Option<GroupSettings>, CliError> {
        let Some(name) = self.group else {
            return Ok(None);
        };
        if !has_checkpoint_table {
            return Err(CliError::usage(format!(
                "--group needs a checkpoint table (members resume each other's streams from \
                 their checkpoints): {fix}"
            )));
        }
        let lease_duration = self.lease_duration.unwrap_or(crate::DEFAULT_LEASE_DURATION);
        if let Some(renew) = self.renew_interval
            && renew >= lease_duration
        {
            return Err(CliError::usage(format!(
                "--lease-duration ({} s{}) must be longer than --renew-interval ({} s)",
                lease_duration.as_secs_f64(),
                if self.lease_duration.is_none() {
                    ", the default"
                } else {
                    ""
                },
                renew.as_secs_f64()
            )));
        }
        Ok(Some(GroupSettings {
            name,
            member_id: self.member_id,
            lease_duration,
            renew_interval: self.renew_interval,
            lease_table: self.lease_table,
        }))
    }
}

impl GroupSettings {
    /// `builder` as a member of this group, logging every unit it starts or stops reading
    /// ([`log_unit_event`]; besides a listener the program set, set before or after).
    pub fn configure(&self, builder: crate::CDCLogReaderBuilder) -> crate::CDCLogReaderBuilder {
        let mut builder = builder
            .group(self.name.clone())
            .lease_duration(self.lease_duration)
            .also_on_event(log_unit_event);
        if let Some(id) = &self.member_id {
            builder = builder.member_id(id.clone());
        }
        if let Some(renew) = self.renew_interval {
            builder = builder.renew_interval(renew);
        }
        if let Some(t) = &self.lease_table {
            builder = builder.lease_table(t.keyspace.clone(), t.table.clone());
        }
        builder
    }
}

/// The target of the unit events [`log_unit_event`] logs (the programs show them by
/// default: `scylla_cdc::cli::units=info` in their default filters).
pub const UNIT_LOG_TARGET: &str = "scylla_cdc::cli::units";

/// Logs a consumer group's [`crate::ReaderEvent::UnitStarted`] and [`crate::ReaderEvent::UnitStopped`] at
/// INFO, target [`UNIT_LOG_TARGET`], one line each, when the member started or stopped
/// reading the unit (before its first delivery, after its last):
///
/// ```text
/// 2026-01-02T03:04:05.123456Z  INFO scylla_cdc::cli::units: unit started member=m1 table=ks.t unit=unit:00000001767323045000:0x12… streams=0x12…,0x34…
/// 2026-01-02T03:04:09.654321Z  INFO scylla_cdc::cli::units: unit stopped member=m1 table=ks.t unit=unit:… reason=handed_over streams=…
/// ```
///
/// Reasons ([`crate::UnitStopReason`]): `handed_over`, `left`, `finished`, `end_reached`,
/// `lease_lost`, `failed`, `regrouped`. Other events are not logged here.
pub fn log_unit_event(event: &crate::ReaderEvent) {
    use crate::{ReaderEvent, UnitStopReason};
    let (e, started) = match event {
        ReaderEvent::UnitStarted(e) => (e, true),
        ReaderEvent::UnitStopped(e) => (e, false),
        _ => return,
    };
    let table = format!("{}.{}", e.keyspace, e.table);
    let streams = e
        .streams
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if started {
        info!(target: UNIT_LOG_TARGET, member = %e.member, table = %table, unit = %e.unit, streams = %streams, "unit started");
    } else {
        let reason = match e.reason {
            Some(UnitStopReason::HandedOver) => "handed_over",
            Some(UnitStopReason::Left) => "left",
            Some(UnitStopReason::Finished) => "finished",
            Some(UnitStopReason::EndReached) => "end_reached",
            Some(UnitStopReason::LeaseLost) => "lease_lost",
            Some(UnitStopReason::Failed) => "failed",
            Some(UnitStopReason::Regrouped) => "regrouped",
            None => "unknown",
        };
        info!(target: UNIT_LOG_TARGET, member = %e.member, table = %table, unit = %e.unit, reason = %reason, streams = %streams, "unit stopped");
    }
}

/// clap parser of `--group` and `--member-id`: 1 to 200 characters, no control characters,
/// not only spaces.
pub fn group_name_arg(text: &str) -> Result<String, String> {
    if text.trim().is_empty() || text.chars().count() > 200 || text.chars().any(char::is_control) {
        return Err(format!(
            "`{text}` is not a valid name (1 to 200 characters, no control characters)"
        ));
    }
    Ok(text.to_owned())
}

/// clap parser of `--lease-duration`: 0.1 s to 1 day (the library's
/// [`crate::MAX_LEASE_DURATION`]).
pub fn lease_duration_arg(text: &str) -> Result<Duration, String> {
    seconds_within(text, Duration::from_millis(100), crate::MAX_LEASE_DURATION)
}

/// clap parser of `--renew-interval`: 10 ms to half a day, so that the longest renew interval
/// is shorter than the longest lease duration (it must be shorter than the lease duration).
pub fn renew_interval_arg(text: &str) -> Result<Duration, String> {
    seconds_within(
        text,
        Duration::from_millis(10),
        crate::MAX_LEASE_DURATION / 2,
    )
}

/// A point in time as RFC 3339 with microseconds and `Z` (`2024-05-01T12:00:00.123456Z`).
pub fn rfc3339_micros(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Connects a session to `hosts` (`what` names the cluster in errors, e.g. "the source
/// cluster"), over TLS when `tls` is given. A TLS file that cannot be read is a usage error;
/// a cluster that cannot be reached, refuses the TLS handshake or the credentials is a
/// connect error. Neither names the password.
///
/// A cluster that cannot be reached (refused or timed-out connections, a node that drops the
/// connection or answers `Overloaded`) is retried with [`Backoff`] for `give_up_after`
/// (forever if `None`), with a WARN line per retry; refused credentials or TLS are not.
pub async fn connect(
    what: &str,
    hosts: &[String],
    credentials: Option<&Credentials>,
    tls: Option<&TlsOptions>,
    give_up_after: Option<Duration>,
) -> Result<Arc<Session>, CliError> {
    let session = retry_startup(&format!("connecting to {what}"), give_up_after, || {
        connect_once(what, hosts, credentials, tls)
    })
    .await?;
    health::connected();
    Ok(session)
}

/// One attempt of [`connect`].
async fn connect_once(
    what: &str,
    hosts: &[String],
    credentials: Option<&Credentials>,
    tls: Option<&TlsOptions>,
) -> Result<Arc<Session>, CliError> {
    let mut builder = SessionBuilder::new()
        .known_nodes(hosts)
        .connection_timeout(Duration::from_secs(5));
    if let Some((user, password)) = credentials {
        builder = builder.user(user, password.expose());
    }
    if let Some(tls) = tls {
        builder = builder.tls_context(Some(tls.client_config(what)?));
    }
    builder.build().await.map(Arc::new).map_err(|e| {
        let mut message = format!(
            "cannot connect to {what} at {}: {}",
            hosts.join(","),
            error_chain(&e)
        );
        if tls.is_none() && closed_at_first_request(&e) {
            // What a plaintext client sees of a port that speaks TLS only (Scylla's
            // client_encryption_options without native_transport_port_ssl).
            message.push_str(
                " (the node closed the connection at the first request: if it accepts only \
                 TLS connections, connect with TLS)",
            );
        }
        if session_error_is_transient(&e) {
            CliError::transient(message)
        } else {
            CliError::connect(message)
        }
    })
}

/// Whether a failure to open a session may go away by itself: no node reachable (refused,
/// reset or timed-out connections), a connection dropped or answered with a transient error
/// during the handshake, or a failed read of the cluster's metadata. Refused credentials, a
/// TLS handshake that fails, or a host name that does not resolve are definite.
fn session_error_is_transient(err: &NewSessionError) -> bool {
    match err {
        NewSessionError::MetadataError(MetadataError::ConnectionPoolError(e)) => match e {
            ConnectionPoolError::Broken {
                last_connection_error,
            } => connection_error_is_transient(last_connection_error),
            ConnectionPoolError::Initializing => true,
            _ => false,
        },
        NewSessionError::MetadataError(MetadataError::FetchError(_)) => true,
        _ => false,
    }
}

/// Whether the connections failed because the node closed them at the first request (as a
/// TLS-only port does with a plaintext client).
fn closed_at_first_request(err: &NewSessionError) -> bool {
    matches!(
        err,
        NewSessionError::MetadataError(MetadataError::ConnectionPoolError(
            ConnectionPoolError::Broken {
                last_connection_error: ConnectionError::ConnectionSetupRequestError(e),
            }
        )) if matches!(e.error, ConnectionSetupRequestErrorKind::BrokenConnection(_))
    )
}

/// Whether a failed connection attempt is worth retrying (see [`session_error_is_transient`]).
fn connection_error_is_transient(err: &ConnectionError) -> bool {
    use std::io::ErrorKind;
    match err {
        ConnectionError::ConnectTimeout | ConnectionError::BrokenConnection(_) => true,
        ConnectionError::IoError(e) => matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::NotConnected
                | ErrorKind::TimedOut
                | ErrorKind::BrokenPipe
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::AddrNotAvailable
        ),
        ConnectionError::ConnectionSetupRequestError(e) => match &e.error {
            ConnectionSetupRequestErrorKind::BrokenConnection(_)
            | ConnectionSetupRequestErrorKind::UnableToAllocStreamId => true,
            ConnectionSetupRequestErrorKind::DbError(db, _) => matches!(
                db,
                DbError::Overloaded
                    | DbError::IsBootstrapping
                    | DbError::Unavailable { .. }
                    | DbError::ReadTimeout { .. }
                    | DbError::WriteTimeout { .. }
                    | DbError::RateLimitReached { .. }
            ),
            _ => false,
        },
        _ => false,
    }
}

/// Runs one start-up step until it succeeds or fails definitely: a transient failure
/// ([`CliError::is_transient`]) is retried with the library's [`Backoff`] (a WARN line with
/// the cause per retry) for `give_up_after` from the first failure (forever if `None`);
/// then the last failure is returned.
pub async fn retry_startup<T, F, Fut>(
    what: &str,
    give_up_after: Option<Duration>,
    mut attempt: F,
) -> Result<T, CliError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CliError>>,
{
    let mut backoff = Backoff::new(give_up_after);
    loop {
        match attempt().await {
            Err(e) if e.is_transient() => {
                if !backoff.wait(what, &e.message).await {
                    return Err(e);
                }
            }
            other => return other,
        }
    }
}

/// Installs the `tracing` subscriber of a program: filtered by `RUST_LOG` (default
/// `default_filter`), written to stderr as text or JSON (`--log-format`). Does nothing if one
/// is already installed.
///
/// The programs' defaults leave out the driver's own log (`scylla=off`): its connection
/// errors would precede the program's one-line error, and the programs log what matters
/// (retries with the driver's error); `RUST_LOG=scylla=warn` brings it back.
///
/// Text lines are coloured only when stderr is a terminal and `NO_COLOR` is unset or empty
/// (<https://no-color.org>): a log file or a pipe gets plain text. Each line starts with the
/// wall-clock time it was logged at, UTC, RFC 3339 with microseconds
/// (`2026-01-02T03:04:05.123456Z`), so that lines of several processes (the members of a
/// consumer group) can be put in one order.
///
/// [`LogFormat::Json`] writes one JSON object per line, never coloured: `timestamp` (as
/// above), `level`, `target`, `message` and the event's fields at the top level, and the
/// spans it happened in, if any.
pub fn install_tracing(default_filter: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::SystemTime);
    let _ = match format {
        LogFormat::Text => {
            let colour = use_colour(
                std::io::IsTerminal::is_terminal(&std::io::stderr()),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            builder.with_ansi(colour).try_init()
        }
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_ansi(false)
            .try_init(),
    };
}

/// Whether log lines carry colour codes: on a terminal, unless `NO_COLOR` is set non-empty.
fn use_colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// What a running program watches to stop: the number of stop requests so far.
#[derive(Debug, Clone)]
pub struct Shutdown {
    requests: watch::Receiver<u32>,
}

/// Requests a stop of the programs watching the paired [`Shutdown`].
#[derive(Debug, Clone)]
pub struct ShutdownTrigger {
    requests: Arc<watch::Sender<u32>>,
}

impl ShutdownTrigger {
    /// The first call asks for a graceful stop, the second for an immediate one.
    pub fn trigger(&self) {
        self.requests.send_modify(|n| *n = n.saturating_add(1));
    }
}

impl Shutdown {
    /// A shutdown and the trigger that requests it.
    pub fn new() -> (ShutdownTrigger, Shutdown) {
        let (tx, rx) = watch::channel(0);
        (
            ShutdownTrigger {
                requests: Arc::new(tx),
            },
            Shutdown { requests: rx },
        )
    }

    /// A shutdown requested by Ctrl-C (SIGINT) and SIGTERM. Must be called inside a Tokio
    /// runtime.
    pub fn on_signals() -> Shutdown {
        let (trigger, shutdown) = Shutdown::new();
        tokio::spawn(async move {
            loop {
                if !next_signal().await {
                    return;
                }
                info!("stop requested (a second Ctrl-C stops at once)");
                trigger.trigger();
            }
        });
        shutdown
    }

    /// Resolves once `n` stop requests were made (never, if the trigger is gone).
    async fn wait_for(&mut self, n: u32) {
        if self.requests.wait_for(|r| *r >= n).await.is_err() {
            // The trigger is gone: no request can come any more.
            std::future::pending::<()>().await;
        }
    }

    /// Resolves once a stop was requested.
    pub async fn requested(&mut self) {
        self.wait_for(1).await;
    }

    /// Resolves once a second stop was requested (stop at once).
    pub async fn forced(&mut self) {
        self.wait_for(2).await;
    }

    /// Whether a stop was requested.
    pub fn is_requested(&self) -> bool {
        *self.requests.borrow() >= 1
    }
}

/// Waits for SIGINT or SIGTERM; false if signals cannot be received.
async fn next_signal() -> bool {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return tokio::signal::ctrl_c().await.is_ok();
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.is_ok(),
            r = term.recv() => r.is_some(),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.is_ok()
    }
}

/// One running log reader and the tables it reads (for messages).
pub struct RunningReader {
    /// `keyspace.table`, or `ks.a, ks.b` for a reader of several tables
    /// ([`crate::CDCLogReaderBuilder::tables`]).
    pub table: String,
    /// Controls the reader.
    pub reader: CDCLogReader,
    /// Resolves to its result.
    pub handle: CDCReaderHandle,
}

/// The progress of running readers, read from a task of its own (the programs' progress
/// lines) while [`supervise`] owns the readers. A reader of several tables counts as one:
/// its rows are the sum of its tables' and its watermark the least of theirs.
#[derive(Debug, Clone)]
pub struct ReadersProgress(Vec<crate::ProgressHandle>);

impl ReadersProgress {
    /// The progress of `readers`.
    pub fn of(readers: &[RunningReader]) -> Self {
        Self(readers.iter().map(|r| r.reader.progress_handle()).collect())
    }

    /// Rows delivered by all the readers.
    pub fn rows(&self) -> u64 {
        self.0.iter().map(|p| p.progress().rows).sum()
    }

    /// The least low watermark of the readers (every change at or before it, of every
    /// table, has been delivered); `None` until each reader has one.
    pub fn low_watermark(&self) -> Option<DateTime<Utc>> {
        self.0
            .iter()
            .map(|p| p.progress().low_watermark)
            .try_fold(None::<DateTime<Utc>>, |least, w| {
                let w = w?;
                Some(Some(least.map_or(w, |l| l.min(w))))
            })
            .flatten()
    }

    /// What the readers hold as members of a consumer group, for a progress line:
    /// `member m owns 3 of 8 units (3 members)`; `None` outside a group.
    pub fn describe_group(&self) -> Option<String> {
        let groups: Vec<crate::GroupProgress> =
            self.0.iter().filter_map(|p| p.progress().group).collect();
        let first = groups.first()?;
        let owned: usize = groups.iter().map(|g| g.owned.len()).sum();
        let units: usize = groups.iter().map(|g| g.units).sum();
        let members = groups.iter().map(|g| g.members).max().unwrap_or(0);
        Some(format!(
            "member {} owns {owned} of {units} units ({members} member{})",
            first.member,
            if members == 1 { "" } else { "s" }
        ))
    }

    /// `low watermark <time> (lag <seconds> s)`, or that there is none yet, for a log line.
    pub fn describe_watermark(&self, now: DateTime<Utc>) -> String {
        match self.low_watermark() {
            Some(w) => format!(
                "low watermark {} (lag {:.1} s)",
                rfc3339_micros(w),
                (now - w).num_milliseconds().max(0) as f64 / 1000.0
            ),
            None => "no low watermark yet".into(),
        }
    }
}

/// Runs readers until they all end (end timestamp reached), one fails, or a stop is
/// requested.
///
/// On the first stop request every reader is told to end at once ([`CDCLogReader::stop_at`]
/// with a time in the past): each stream reader finishes the window it is reading, flushes
/// its consumer and saves a checkpoint at the point it reached, then ends — a reader with a
/// backlog does not read the rest of it first. A second request stops them at once. When a
/// reader fails the others are stopped at once and its error is returned.
pub async fn supervise(
    readers: Vec<RunningReader>,
    mut shutdown: Shutdown,
) -> Result<(), CliError> {
    let mut controls: Vec<CDCLogReader> = Vec::with_capacity(readers.len());
    let mut pending = FuturesUnordered::new();
    for r in readers {
        controls.push(r.reader);
        let table = r.table;
        let handle = r.handle;
        pending.push(async move { (table, handle.await) });
    }
    let mut second = shutdown.clone();
    let mut stopping = false;
    let mut forced = false;
    loop {
        tokio::select! {
            next = pending.next() => match next {
                None => {
                    health::stopped(if stopping {
                        "stopped on request".into()
                    } else {
                        "the reader reached its end time".into()
                    });
                    return Ok(());
                }
                Some((_, Ok(()))) => {}
                Some((table, Err(e))) => {
                    for c in &mut controls {
                        c.stop();
                    }
                    let e = CliError::from_reader(&table, &e);
                    health::stopped(format!("the reader failed: {}", e.message()));
                    return Err(e);
                }
            },
            _ = shutdown.requested(), if !stopping => {
                stopping = true;
                health::stopping();
                info!("stopping: finishing the current windows and saving progress");
                for c in &mut controls {
                    // Every stream reader is past this point: each stops after its current
                    // window, with a checkpoint where it got to.
                    c.stop_at(DateTime::<Utc>::UNIX_EPOCH);
                }
            },
            _ = second.forced(), if stopping && !forced => {
                forced = true;
                info!("stopping at once");
                for c in &mut controls {
                    c.stop();
                }
            },
        }
    }
}

/// A resolved `--start` and `--end`.
pub type TimeRange = (StartAt, Option<DateTime<Utc>>);

/// Resolves `--start` / `--end` against the launch instant and checks that the end is after
/// the start (which defaults to the launch).
pub fn resolve_range(
    start: Option<TimeSpec>,
    end: Option<TimeSpec>,
    launched: DateTime<Utc>,
) -> Result<TimeRange, CliError> {
    let start = StartAt::resolve(start, launched)?;
    let end = end
        .map(|s| {
            s.resolve(launched)
                .ok_or_else(|| CliError::usage("--end is out of range"))
        })
        .transpose()?;
    if let Some(e) = end
        && e <= start.time()
    {
        return Err(CliError::usage(format!(
            "--end ({}) must be after --start ({}{})",
            rfc3339_micros(e),
            rfc3339_micros(start.time()),
            if matches!(start, StartAt::Launch(_)) {
                ", the default"
            } else {
                ""
            }
        )));
    }
    Ok((start, end))
}

/// The error of a checkpoint table that cannot be used: transient failures (a timeout or
/// `Overloaded` while creating it or preparing its statements) are retried by start-up, a
/// missing keyspace or a refused permission is a schema error.
pub fn checkpoint_table_error(cp: &QualifiedTable, e: &CDCError) -> CliError {
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

/// `--on-error`: what a program does with a change its consumer cannot take (after the
/// library's default retries, see [`crate::ConsumerErrorPolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The program stops with an error naming the row; a restart delivers it again.
    #[default]
    Stop,
    /// The row is logged and skipped.
    Skip,
    /// The row is written to `<checkpoint table>_dead_letters` (needs a checkpoint table).
    DeadLetter,
}

/// clap parser of `--on-error`: `stop`, `skip` or `dead-letter`.
pub fn on_error_arg(text: &str) -> Result<OnError, String> {
    match text.trim() {
        "stop" => Ok(OnError::Stop),
        "skip" => Ok(OnError::Skip),
        "dead-letter" => Ok(OnError::DeadLetter),
        other => Err(format!("`{other}` is not one of: stop, skip, dead-letter")),
    }
}

impl OnError {
    /// The reader's policy: the library's default retries, then this outcome. For
    /// `dead-letter`, opens (creating it if missing) the dead-letter table next to
    /// `checkpoint_table` ([`crate::dead_letter_table_name`]), retrying transient failures
    /// for `give_up_after`; without a checkpoint table that is a usage error.
    pub async fn policy(
        self,
        session: &Arc<Session>,
        checkpoint_table: Option<&QualifiedTable>,
        give_up_after: Option<Duration>,
    ) -> Result<crate::ConsumerErrorPolicy, CliError> {
        let then = match self {
            OnError::Stop => crate::AfterRetries::Stop,
            OnError::Skip => crate::AfterRetries::Skip,
            OnError::DeadLetter => {
                let cp = checkpoint_table.ok_or_else(|| {
                    CliError::usage("--on-error dead-letter needs a checkpoint table")
                })?;
                let name = crate::dead_letter_table_name(&cp.table);
                let table = retry_startup("opening the dead-letter table", give_up_after, || {
                    let name = name.clone();
                    async move {
                        crate::DeadLetterTable::new(session.clone(), &cp.keyspace, &name)
                            .await
                            .map_err(|e| {
                                let message = format!(
                                    "dead-letter table {}.{name}: {}",
                                    cp.keyspace,
                                    error_chain(&e)
                                );
                                if e.is_transient() {
                                    CliError::transient(message)
                                } else {
                                    CliError::schema(message)
                                }
                            })
                    }
                })
                .await?;
                crate::AfterRetries::DeadLetter(Arc::new(table))
            }
        };
        let default = crate::ConsumerErrorPolicy::default().retry();
        Ok(crate::ConsumerErrorPolicy::then(then).with_retry(default.attempts, default.backoff))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn early_reads_are_on_unless_refused_or_pointless() {
        use super::{EarlyReadFlags, early_read_poll_interval_arg, unconfirmed_rows_arg};
        let secs = Duration::from_secs;
        let ms = Duration::from_millis;
        let none = EarlyReadFlags::default();
        assert_eq!(
            none.resolve(secs(30)).unwrap(),
            Some(crate::EarlyReads::default())
        );
        // A safety interval no longer than the default lag: reading is already that close.
        assert_eq!(none.resolve(ms(100)).unwrap(), None);
        assert_eq!(none.resolve(Duration::ZERO).unwrap(), None);
        let off = EarlyReadFlags {
            no_early_reads: true,
            ..EarlyReadFlags::default()
        };
        assert_eq!(off.resolve(secs(30)).unwrap(), None);
        let set = EarlyReadFlags {
            early_read_lag: Some(ms(250)),
            early_read_poll_interval: Some(secs(2)),
            max_unconfirmed_rows: Some(7),
            no_early_reads: false,
        };
        let early = set.resolve(secs(1)).unwrap().unwrap();
        assert_eq!(
            (early.lag, early.poll_interval, early.max_unconfirmed_rows),
            (ms(250), secs(2), 7)
        );
        // A lag given explicitly and not shorter than the safety interval is refused.
        let err = set.resolve(ms(250)).unwrap_err();
        assert_eq!(err.code, super::exit_code::USAGE);
        assert!(err.message.contains("--early-read-lag (0.25 s)"), "{err}");
        assert!(early_read_poll_interval_arg("0").is_err());
        assert!(early_read_poll_interval_arg("3601").is_err());
        assert_eq!(early_read_poll_interval_arg("0.001").unwrap(), ms(1));
        assert!(unconfirmed_rows_arg("0").is_err());
        assert!(unconfirmed_rows_arg("-1").is_err());
        assert_eq!(unconfirmed_rows_arg("1000000000").unwrap(), 1_000_000_000);
    }

    #[test]
    fn process_age_from_proc() {
        // A command name with spaces and a parenthesis; starttime (field 22) = 12345 ticks.
        let stat = "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    12345 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let age = super::process_age_from(stat, "125.00 200.00").unwrap();
        assert_eq!(age.as_millis(), 1_570);
        // Implausible or malformed readings are not used.
        assert_eq!(super::process_age_from(stat, "100.00 1.00"), None);
        assert_eq!(super::process_age_from(stat, "9999.00 1.00"), None);
        assert_eq!(super::process_age_from("garbage", "125.00 1.00"), None);
        let launched = super::launch_time();
        assert!(launched <= Utc::now());
    }

    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(
            parse_hosts("127.0.0.1:9042, node2,db.example.com:19042").unwrap(),
            vec!["127.0.0.1:9042", "node2:9042", "db.example.com:19042"]
        );
        assert_eq!(
            parse_hosts("[::1]:9043,[fe80::1]").unwrap(),
            vec!["[::1]:9043", "[fe80::1]:9042"]
        );
        assert_eq!(parse_hosts("::1").unwrap(), vec!["[::1]:9042"]);
        for bad in [
            "",
            "a,,b",
            "host:0",
            "host:99999",
            "host:x",
            "ho st:1",
            ":9042",
            "[::1",
            "[zz]:1",
            "[::1]9042",
            "1:2:3",
        ] {
            assert!(parse_hosts(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn times() {
        let now = DateTime::parse_from_rfc3339("2024-05-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = |s: &str| parse_time(s).unwrap().resolve(now).unwrap();
        assert_eq!(at("now"), now);
        assert_eq!(at("NOW"), now);
        assert_eq!(at("-10m"), now - TimeDelta::minutes(10));
        assert_eq!(at("+1h30m"), now + TimeDelta::minutes(90));
        assert_eq!(at("now-45s"), now - TimeDelta::seconds(45));
        assert_eq!(at("-1d2h"), now - TimeDelta::hours(26));
        assert_eq!(at("-1w"), now - TimeDelta::days(7));
        assert_eq!(at("-250ms"), now - TimeDelta::milliseconds(250));
        assert_eq!(at("-7us"), now - TimeDelta::microseconds(7));
        assert_eq!(
            at("2024-05-01T10:00:00.5+02:00"),
            now - TimeDelta::hours(4) + TimeDelta::milliseconds(500)
        );
        for bad in [
            "",
            "-",
            "-10",
            "-m",
            "10m",
            "-10x",
            "-1.5h",
            "yesterday",
            "2024-05-01",
            "now+",
            "-99999999999999999999s",
            "né-1s",
        ] {
            assert!(parse_time(bad).is_err(), "{bad:?} should be rejected");
        }
        // Out of range once resolved.
        assert_eq!(
            parse_time("+9223372036854s").unwrap().resolve(now),
            None,
            "beyond chrono's range"
        );
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_seconds("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_seconds("0").unwrap(), Duration::ZERO);
        assert!(parse_positive_seconds("0").is_err());
        assert_eq!(
            parse_positive_seconds(" 2.5 ").unwrap(),
            Duration::from_millis(2500)
        );
        for bad in ["", "-1", "x", "NaN", "inf", "1e300"] {
            assert!(parse_seconds(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(OsStr::new(""))));
        assert!(!use_colour(true, Some(OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }

    #[test]
    fn rows_per_second() {
        assert_eq!(rows_per_second_arg("1000"), Ok(1000));
        for bad in ["0", "-1", "1.5", "x", "1000000001"] {
            assert!(rows_per_second_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals_have_workable_ranges() {
        assert_eq!(window_size_arg("0.001").unwrap(), Duration::from_millis(1));
        assert_eq!(window_size_arg("604800").unwrap(), 7 * DAY);
        let err = window_size_arg("1e-9").unwrap_err();
        assert_eq!(err, "`1e-9` is out of range: 0.001 to 604800 seconds");
        assert!(window_size_arg("604801").is_err());
        assert!(window_size_arg("0").is_err());
        assert_eq!(safety_interval_arg("0").unwrap(), Duration::ZERO);
        assert!(safety_interval_arg("86401").is_err());
        assert_eq!(sleep_interval_arg("0").unwrap(), Duration::ZERO);
        assert_eq!(on_error_arg("dead-letter"), Ok(OnError::DeadLetter));
        assert_eq!(on_error_arg("skip"), Ok(OnError::Skip));
        assert_eq!(
            on_error_arg("ignore").unwrap_err(),
            "`ignore` is not one of: stop, skip, dead-letter"
        );
        assert!(sleep_interval_arg("-1").is_err());
        assert!(sleep_interval_arg("3601").is_err());
        assert_eq!(checkpoint_interval_arg("0").unwrap(), Duration::ZERO);
        assert!(checkpoint_interval_arg("1e9").is_err());
        assert!(progress_interval_arg("0.01").is_err());
        assert!(long_interval_arg("1e10").is_err());
        assert_eq!(
            long_interval_arg("0.5").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(lease_duration_arg("86400").unwrap(), DAY);
        assert_eq!(renew_interval_arg("43200").unwrap(), DAY / 2);
        assert!(renew_interval_arg("43200.001").is_err());
    }

    /// Every refusal of a number of seconds names the range: below it, above it, negative,
    /// not a number, NaN, infinite, or too large for a duration.
    #[test]
    fn every_refused_interval_names_its_range() {
        for bad in [
            "-0.001", "-1", "3600.001", "1e300", "NaN", "inf", "-inf", "x", "",
        ] {
            let err = sleep_interval_arg(bad).unwrap_err();
            assert!(err.contains("0 to 3600 seconds"), "{bad:?}: {err}");
        }
        for bad in ["0", "0.0009", "604800.001", "-5"] {
            let err = window_size_arg(bad).unwrap_err();
            assert_eq!(
                err,
                format!("`{bad}` is out of range: 0.001 to 604800 seconds")
            );
        }
        assert_eq!(sleep_interval_arg("-0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn names() {
        assert_eq!(
            parse_qualified_table("ks.cp").unwrap(),
            ("ks".to_owned(), "cp".to_owned())
        );
        for bad in ["ks", ".t", "ks.", "a.b.c"] {
            assert!(parse_qualified_table(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_table_list("a, b,c").unwrap(), vec!["a", "b", "c"]);
        assert!(parse_table_list("a,,b").is_err());
        assert!(parse_table_list("a,a").is_err());
        assert!(parse_table_list(&"x".repeat(49)).is_err());
        assert!(parse_name("ks.x").is_err());
    }

    #[test]
    fn errors_are_one_line() {
        let e = CliError::schema("first\n\n  second  \nthird");
        assert_eq!(e.to_string(), "error: first; second; third");
        assert_eq!(e.exit_code(), exit_code::SCHEMA);
        let e = CliError::from_reader(
            "ks.t",
            &CDCError::CdcNotEnabled {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        );
        assert_eq!(e.exit_code(), exit_code::SCHEMA);
        assert!(e.message().starts_with("ks.t: CDC is not enabled"), "{e}");
        let e = CliError::from_reader("ks.t", &CDCError::InvalidConfig("bad".into()));
        assert_eq!(e.exit_code(), exit_code::USAGE);
        let e = CliError::from_reader("ks.t", &CDCError::Task("boom".into()));
        assert_eq!(e.exit_code(), exit_code::RUNTIME);
        // A lease table of another shape: a schema error that names the programs' flag.
        let e = CliError::from_reader(
            "ks.t",
            &CDCError::LeaseTableShape {
                table: "ks.cp_leases".into(),
                problems: vec!["column `owner` is missing".into()],
                expected: "CREATE TABLE ...".into(),
            },
        );
        assert_eq!(e.exit_code(), exit_code::SCHEMA);
        assert!(
            e.message()
                .contains("ks.cp_leases exists with another shape")
                && e.message().contains("column `owner` is missing")
                && e.message().contains("--lease-table"),
            "{e}"
        );
    }

    #[test]
    fn rfc3339_has_micros() {
        let t = DateTime::from_timestamp_micros(1_714_564_800_123_456).unwrap();
        assert_eq!(rfc3339_micros(t), "2024-05-01T12:00:00.123456Z");
    }

    #[test]
    fn unit_events_are_logged_one_line_each_with_a_wall_clock_time() {
        use crate::{ReaderEvent, StreamID, UnitEvent, UnitStopReason};
        use std::sync::Mutex;
        #[derive(Clone, Default)]
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        // The programs' subscriber (`install_tracing`), writing to a buffer.
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "warn,scylla_cdc::cli::units=info",
            ))
            .with_writer(move || writer.clone())
            .with_timer(tracing_subscriber::fmt::time::SystemTime)
            .with_ansi(false)
            .finish();
        let stream = |b: u8| StreamID::new([b; 16]);
        let event = |reason| UnitEvent {
            keyspace: "ks".into(),
            table: "t".into(),
            member: "m1".into(),
            unit: "unit:00000000000000001000:0x01".into(),
            streams: vec![stream(1), stream(2)],
            reason,
        };
        let before = Utc::now();
        tracing::subscriber::with_default(subscriber, || {
            log_unit_event(&ReaderEvent::UnitStarted(event(None)));
            log_unit_event(&ReaderEvent::UnitStopped(event(Some(
                UnitStopReason::LeaseLost,
            ))));
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let streams = format!("streams={},{}", stream(1), stream(2));
        assert!(
            lines[0].ends_with(&format!(
                "INFO scylla_cdc::cli::units: unit started member=m1 table=ks.t \
                 unit=unit:00000000000000001000:0x01 {streams}"
            )),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains("unit stopped member=m1 table=ks.t")
                && lines[1].contains(" reason=lease_lost ")
                && lines[1].ends_with(&streams),
            "{}",
            lines[1]
        );
        // Each line starts with the UTC wall-clock time, in microseconds.
        for line in lines {
            let stamp = line.split_whitespace().next().unwrap();
            assert_eq!(stamp.len(), "2026-01-02T03:04:05.123456Z".len(), "{line}");
            let at = DateTime::parse_from_rfc3339(stamp).unwrap();
            assert!(
                at >= before - TimeDelta::seconds(1) && at <= Utc::now(),
                "{line}"
            );
        }
    }

    #[tokio::test]
    async fn shutdown_counts_requests() {
        let (trigger, mut shutdown) = Shutdown::new();
        assert!(!shutdown.is_requested());
        trigger.trigger();
        shutdown.requested().await;
        assert!(shutdown.is_requested());
        let forced = tokio::time::timeout(Duration::from_millis(20), shutdown.forced()).await;
        assert!(forced.is_err(), "one request is not a forced stop");
        trigger.trigger();
        shutdown.forced().await;
    }
}
