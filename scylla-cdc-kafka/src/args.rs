//! The program's command line: [`Args`] as clap parses it, checked and resolved into a
//! [`Config`] by [`Args::into_config`] before anything is contacted.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use scylla_cdc::cli::args::{env_help, get_matches, require_contact_points};
use scylla_cdc::cli::metrics_http::metrics_addr_arg;
use scylla_cdc::cli::secure::{Credentials, TlsOptions};
use scylla_cdc::cli::{
    CliError, ConnectionArgs, GroupFlags, GroupSettings, LogArgs, ReadingArgs, StartAt,
    TimeRangeArgs, checkpoint_interval_arg, env_prefixed, heading, long_interval_arg, parse_name,
    parse_positive_seconds, progress_interval_arg, resolve_range, tables_arg,
};
pub use scylla_cdc::cli::{Hosts, Tables};

use crate::event::{EventOptions, ImageMode, KeyPlacement, OutputFormat};

/// The prefix of the environment variables that set the program's flags
/// (`SCYLLA_CDC_KAFKA_HOSTS` sets `--hosts`).
pub const ENV_PREFIX: &str = "SCYLLA_CDC_KAFKA_";

/// What `--help` shows after the flags: examples, exit codes, environment variables.
fn after_help() -> String {
    format!(
        "Examples:
  scylla-cdc-kafka --hosts 10.0.0.1 -k shop -t orders --bootstrap-servers 10.0.2.1:9092 \
--topic-prefix shop
  scylla-cdc-kafka --hosts 10.0.0.1 -k shop -t orders,items --bootstrap-servers \
10.0.2.1:9092 --topic-prefix shop --snapshot --format advanced --after full
  scylla-cdc-kafka --hosts 10.0.0.1 -k shop -t orders --bootstrap-servers 10.0.2.1:9093 \
--topic-prefix shop -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 \
-X sasl.username=app -X sasl.password=env:KAFKA_PASSWORD

Exit codes: 0 done or stopped, 1 failure while running, 2 bad argument, 3 cannot connect \
(Scylla or Kafka), 4 keyspace or table missing or without CDC, 5 Kafka refused \
(authorization, a message over the size limit, another instance with the same \
transactional id took over).

{}",
        env_help(ENV_PREFIX, ("bootstrap-servers", "10.0.2.1:9092"))
    )
}

/// Publish the changes of ScyllaDB tables to Kafka, one topic per table, in the
/// scylla-cdc-source-connector's event format, exactly once with Kafka transactions.
///
/// Times are RFC 3339 (2024-05-01T12:00:00Z), now, or relative to now (-10m, -1h30m; units
/// us, ms, s, m, h, d, w); the start (given, or the first launch) is saved with the progress,
/// so a restart starts there too. Intervals are seconds, fractions allowed. Scylla
/// credentials: the user from --user or SCYLLA_USER, the password from SCYLLA_PASSWORD or
/// --password-file. Kafka client options: -X key=value (librdkafka's names, e.g.
/// security.protocol=SASL_SSL, sasl.mechanism=SCRAM-SHA-512, sasl.username=app); a value
/// env:NAME is read from the environment variable NAME and file:PATH from the first line of a
/// file, so that secrets stay off the command line.
#[derive(Debug, Clone, Parser)]
#[command(name = "scylla-cdc-kafka", version, after_help = after_help())]
pub struct Args {
    /// Scylla's contact points, credentials, TLS.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// How long a start-up step or a read keeps being retried while Scylla fails
    /// transiently, in seconds; then the program exits with code 3 (0.001 to 31536000;
    /// default: forever).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = long_interval_arg,
          help_heading = heading::CONNECTION)]
    pub give_up_after: Option<Duration>,
    /// Keyspace of the tables.
    #[arg(long, short = 'k', value_name = "KEYSPACE", value_parser = parse_name,
          help_heading = heading::WHAT_TO_READ)]
    pub keyspace: String,
    /// Tables to publish, comma-separated.
    #[arg(long, short = 't', value_name = "TABLE,...", value_parser = tables_arg,
          help_heading = heading::WHAT_TO_READ)]
    pub table: Tables,
    /// --start and --end.
    #[command(flatten)]
    pub range: TimeRangeArgs,
    /// First publish every existing row of the tables as a snapshot read (op r), then
    /// stream their changes from the snapshot's boundary B (the first run's launch time minus
    /// --safety-interval) without a gap or a duplicate: an r event has the row's cells
    /// written before B, the stream every change from B (a row whose cells were all written
    /// after B has no r event). The snapshot's time and the token ranges published are
    /// saved in the checkpoint topic, so a restart (kill -9 included) resumes it and publishes
    /// each row once (an unfinished snapshot is finished by any restart, with or without
    /// --snapshot). Ignored for a table with saved progress (a finished snapshot, or a run
    /// without --snapshot). Its reads count against --max-rows-per-second.
    #[arg(long, conflicts_with = "start", help_heading = heading::WHERE_TO_START)]
    pub snapshot: bool,
    /// Token ranges the snapshot scans at once (1 to 1024).
    #[arg(long, value_name = "N", default_value = "8",
          value_parser = clap::value_parser!(u16).range(1..=1024),
          help_heading = heading::WHERE_TO_START)]
    pub snapshot_parallelism: u16,
    /// Rows handed to Kafka with one snapshot progress record (tests make it small).
    #[arg(long, hide = true, value_name = "ROWS", default_value = "1000",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub snapshot_batch_rows: u32,
    /// Least time between two checkpoints of a stream group, in seconds (0 to 86400): a
    /// restart reads again at most about this much (and, with transactions, skips what it
    /// had published).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, default_value = "10",
          value_parser = checkpoint_interval_arg, help_heading = heading::WHERE_TO_START)]
    pub checkpoint_interval: Duration,
    /// Kafka's bootstrap servers, comma-separated (host:port).
    #[arg(long, value_name = "HOST:PORT,...", help_heading = heading::DESTINATION)]
    pub bootstrap_servers: String,
    /// Topic names: PREFIX.keyspace.table, as the connector names them after its
    /// topic.prefix (also the events' source.name).
    #[arg(long, value_name = "PREFIX", value_parser = parse_name,
          help_heading = heading::DESTINATION)]
    pub topic_prefix: String,
    /// The compacted topic of the program's progress (created if missing; default:
    /// PREFIX.scylla-cdc-checkpoints).
    #[arg(long, value_name = "TOPIC", help_heading = heading::DESTINATION)]
    pub checkpoint_topic: Option<String>,
    /// Partitions of the topics the program creates (1 to 10000; default: the broker's
    /// num.partitions). Existing topics are used as they are.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=10000),
          help_heading = heading::DESTINATION)]
    pub topic_partitions: Option<i32>,
    /// Replication factor of the topics the program creates (1 to 32; default: the broker's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..=32),
          help_heading = heading::DESTINATION)]
    pub topic_replication_factor: Option<i32>,
    /// A Kafka client option, key=value (repeatable; a value env:NAME or file:PATH is read
    /// from that variable or file).
    #[arg(short = 'X', value_name = "KEY=VALUE", value_parser = producer_option_arg,
          help_heading = heading::DESTINATION)]
    pub kafka_option: Vec<(String, String)>,
    /// Publish without transactions: at least once (a restart may publish again the changes
    /// since the last checkpoint), for brokers or users that do not want transactions.
    #[arg(long, help_heading = heading::DESTINATION)]
    pub no_transactions: bool,
    /// The producer's transactional.id (default: scylla-cdc-kafka.PREFIX.KEYSPACE); a second
    /// instance started with the same id fences the first.
    #[arg(long, value_name = "ID", conflicts_with = "no_transactions",
          help_heading = heading::DESTINATION)]
    pub transactional_id: Option<String>,
    /// How often the open transaction is committed (or, without transactions, the events
    /// flushed and the checkpoints written), in seconds: the longest a published event waits
    /// before a read_committed consumer sees it (0.01 to 60).
    #[arg(long, value_name = "SECONDS", default_value = "0.1", value_parser = commit_interval_arg,
          help_heading = heading::DESTINATION)]
    pub commit_interval: Duration,
    /// How long a commit, a flush or any Kafka request may take before the program stops
    /// (exit 3); Kafka being down for less is ridden out (1 to 3600).
    #[arg(long, value_name = "SECONDS", default_value = "120", value_parser = kafka_timeout_arg,
          help_heading = heading::DESTINATION)]
    pub kafka_timeout: Duration,
    /// The event format, as the connector's cdc.output.format: legacy (its default: every
    /// column in a {"value": ...} cell, no after image of updates) or advanced (plain
    /// values, before and after images as --before and --after say).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = FormatArg::Legacy,
          help_heading = heading::DESTINATION)]
    pub format: FormatArg,
    /// The before image of update and delete events (cdc.include.before): none, full (the
    /// row as it was; needs the table's CDC preimage), or only-updated (the columns the change
    /// touched).
    #[arg(long, value_name = "IMAGE", value_enum, default_value_t = ImageArg::None,
          help_heading = heading::DESTINATION)]
    pub before: ImageArg,
    /// The after image of update events (cdc.include.after, advanced format only): none,
    /// full (needs the table's CDC postimage), or only-updated.
    #[arg(long, value_name = "IMAGE", value_enum, default_value_t = ImageArg::None,
          help_heading = heading::DESTINATION)]
    pub after: ImageArg,
    /// Where the primary key goes (cdc.include.primary-key.placement, advanced format only):
    /// a comma-separated list of kafka-key, payload-after, payload-before, payload-key,
    /// kafka-headers (default: kafka-key,payload-after,payload-before).
    #[arg(long, value_name = "PLACES", value_parser = key_placement_arg,
          help_heading = heading::DESTINATION)]
    pub key_placement: Option<KeyPlacement>,
    /// Values without Kafka Connect schemas (JsonConverter with schemas.enable=false).
    #[arg(long, help_heading = heading::DESTINATION)]
    pub no_schemas: bool,
    /// No tombstone (a null value under the row's key) after a delete event.
    #[arg(long, help_heading = heading::DESTINATION)]
    pub no_tombstones: bool,
    /// Window, safety and sleep intervals, early reads, rate limit.
    #[command(flatten)]
    pub reading: ReadingArgs,
    /// Seconds between two progress lines on stderr (0.1 to 86400; default: none).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = progress_interval_arg,
          help_heading = heading::OPERATION)]
    pub progress_interval: Option<Duration>,
    /// Serve the reader's and the publisher's metrics on http://HOST:PORT/metrics.
    #[arg(long, value_name = "HOST:PORT", value_parser = metrics_addr_arg,
          help_heading = heading::OPERATION)]
    pub metrics_addr: Option<SocketAddr>,
    /// Consumer group: --group, --member-id, --lease-duration, --renew-interval,
    /// --lease-table (required with --group: the program keeps its checkpoints in Kafka,
    /// the group's leases in Scylla). Each member publishes with its own transactional id,
    /// TRANSACTIONAL_ID.MEMBER_ID; exactly once holds across hand-overs.
    #[command(flatten)]
    pub consumer_group: GroupFlags,
    /// --log-format.
    #[command(flatten)]
    pub log: LogArgs,
}

/// The program's command line as it parses it: [`Args`], every flag also settable from a
/// variable of [`ENV_PREFIX`], `--hosts` or `--hostname` required.
pub fn command() -> clap::Command {
    // Usage lines name the program, whatever its file is called.
    require_contact_points(env_prefixed(Args::command(), ENV_PREFIX)).bin_name("scylla-cdc-kafka")
}

/// Parses the program's arguments (the first is the program name) with [`command`]: the
/// command line, then the environment.
pub fn parse<I, T>(args: I) -> Result<Args, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = get_matches(command(), args)?;
    Args::from_arg_matches(&matches)
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// The connector's default.
    Legacy,
    /// The connector's advanced format.
    Advanced,
}

fn key_placement_arg(text: &str) -> Result<KeyPlacement, String> {
    text.parse::<KeyPlacement>().map_err(|e| e.to_string())
}

/// `--before` / `--after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImageArg {
    /// No image.
    None,
    /// The whole row.
    Full,
    /// The columns the change touched.
    OnlyUpdated,
}

impl From<ImageArg> for ImageMode {
    fn from(a: ImageArg) -> Self {
        match a {
            ImageArg::None => ImageMode::None,
            ImageArg::Full => ImageMode::Full,
            ImageArg::OnlyUpdated => ImageMode::OnlyUpdated,
        }
    }
}

/// A program run, checked and resolved.
#[derive(Debug, Clone)]
pub struct Config {
    /// Scylla contact points.
    pub hosts: Vec<String>,
    /// Scylla user and password.
    pub credentials: Option<Credentials>,
    /// Scylla TLS, if on.
    pub tls: Option<TlsOptions>,
    /// The keyspace.
    pub keyspace: String,
    /// The tables.
    pub tables: Vec<String>,
    /// Kafka's bootstrap servers.
    pub bootstrap_servers: String,
    /// The topic prefix (and `source.name`).
    pub topic_prefix: String,
    /// The checkpoint topic.
    pub checkpoint_topic: String,
    /// Partitions of created topics (`None`: the broker's default).
    pub topic_partitions: Option<i32>,
    /// Replication factor of created topics (`None`: the broker's default).
    pub topic_replication_factor: Option<i32>,
    /// Kafka client options, with env: and file: values resolved.
    pub kafka_options: Vec<(String, String)>,
    /// `Some(id)`: transactions (in a group, the member's own id).
    pub transactional_id: Option<String>,
    /// `--transactional-id` (or its default), which a group member's id is made of.
    pub transactional_base: Option<String>,
    /// The consumer group, with the member id chosen.
    pub group: Option<GroupSettings>,
    /// Commit interval.
    pub commit_interval: Duration,
    /// Kafka timeout.
    pub kafka_timeout: Duration,
    /// The events' format and contents.
    pub events: EventOptions,
    /// Where reading starts without saved progress.
    pub start: StartAt,
    /// `--snapshot`: publish the existing rows first ([`crate::snapshot`]).
    pub snapshot: bool,
    /// Token ranges the snapshot scans at once.
    pub snapshot_parallelism: usize,
    /// Rows of a snapshot's batch (one progress record each).
    pub snapshot_batch_rows: usize,
    /// End, if any.
    pub end: Option<DateTime<Utc>>,
    /// Window size.
    pub window_size: Duration,
    /// Safety interval.
    pub safety_interval: Duration,
    /// Sleep interval.
    pub sleep_interval: Duration,
    /// Early reads (`None`: off).
    pub early_reads: Option<scylla_cdc::EarlyReads>,
    /// How long transient Scylla failures are retried.
    pub give_up_after: Option<Duration>,
    /// Checkpoint interval.
    pub checkpoint_interval: Duration,
    /// Most rows read per second.
    pub max_rows_per_second: Option<u64>,
    /// Progress lines.
    pub progress_interval: Option<Duration>,
}

fn commit_interval_arg(text: &str) -> Result<Duration, String> {
    bounded_seconds(text, 0.01, 60.0)
}

fn kafka_timeout_arg(text: &str) -> Result<Duration, String> {
    bounded_seconds(text, 1.0, 3600.0)
}

fn bounded_seconds(text: &str, min: f64, max: f64) -> Result<Duration, String> {
    let d = parse_positive_seconds(text)?;
    let s = d.as_secs_f64();
    if s < min || s > max {
        return Err(format!(
            "must be between {min} and {max} seconds, got {text}"
        ));
    }
    Ok(d)
}

/// `-X key=value`: a librdkafka option. The value stays as written here; `env:` and `file:`
/// values are resolved by [`resolve_option`].
pub fn producer_option_arg(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))?;
    let key = key.trim();
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
    {
        return Err(format!("{key:?} is not a Kafka client option name"));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// Options the program sets itself; `-X` may not change them.
const OWN_OPTIONS: &[&str] = &[
    "bootstrap.servers",
    "transactional.id",
    "enable.idempotence",
    "isolation.level",
];

/// Resolves an option's `env:NAME` or `file:PATH` value.
pub fn resolve_option(
    key: &str,
    value: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, CliError> {
    if let Some(name) = value.strip_prefix("env:") {
        return env(name).ok_or_else(|| {
            CliError::usage(format!(
                "-X {key}=env:{name}: the environment variable {name} is not set"
            ))
        });
    }
    if let Some(path) = value.strip_prefix("file:") {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!("-X {key}=file:{path}: cannot read the file: {e}"))
        })?;
        return Ok(text.lines().next().unwrap_or_default().to_owned());
    }
    Ok(value.to_owned())
}

impl Args {
    /// Checks what clap cannot and resolves times against `launched`.
    pub fn into_config(
        self,
        launched: DateTime<Utc>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, CliError> {
        let connection = self.connection.resolve(&env)?;
        let (start, end) = resolve_range(self.range.start, self.range.end, launched)?;
        let early_reads = self.reading.early_reads()?;
        if self.bootstrap_servers.trim().is_empty() {
            return Err(CliError::usage("--bootstrap-servers is empty"));
        }
        let mut kafka_options = Vec::with_capacity(self.kafka_option.len());
        for (key, value) in self.kafka_option {
            if OWN_OPTIONS.contains(&key.as_str()) {
                return Err(CliError::usage(format!(
                    "-X {key}: set by the program (use --bootstrap-servers, --transactional-id \
                     or --no-transactions)"
                )));
            }
            let value = resolve_option(&key, &value, &env)?;
            kafka_options.push((key, value));
        }
        let has_lease_table = self.consumer_group.lease_table.is_some();
        let group = self
            .consumer_group
            .resolve(
                has_lease_table,
                "pass --lease-table KEYSPACE.TABLE (the program keeps its checkpoints in Kafka; \
                 the group's leases are kept in Scylla)",
            )?
            .map(|mut g| {
                g.member_id
                    .get_or_insert_with(scylla_cdc::cli::default_member_id);
                g
            });
        if group.is_some() && self.snapshot {
            return Err(CliError::usage(
                "--snapshot cannot be used with --group (take the snapshot with one instance \
                 first, then start the group)",
            ));
        }
        let transactional_base = if self.no_transactions {
            None
        } else {
            Some(self.transactional_id.unwrap_or_else(|| {
                format!("scylla-cdc-kafka.{}.{}", self.topic_prefix, self.keyspace)
            }))
        };
        let transactional_id = transactional_base.as_ref().map(|base| {
            match group.as_ref().and_then(|g| g.member_id.as_deref()) {
                Some(member) => member_transactional_id(base, member),
                None => base.clone(),
            }
        });
        let events = EventOptions {
            format: match self.format {
                FormatArg::Legacy => OutputFormat::Legacy,
                FormatArg::Advanced => OutputFormat::Advanced,
            },
            before: self.before.into(),
            after: self.after.into(),
            key_placement: self.key_placement.unwrap_or_default(),
            schemas: !self.no_schemas,
            tombstones: !self.no_tombstones,
            ..EventOptions::new(self.topic_prefix.clone())
        };
        events
            .validate()
            .map_err(|e| CliError::usage(format!("{e:#} (see --format)")))?;
        let checkpoint_topic = self
            .checkpoint_topic
            .unwrap_or_else(|| format!("{}.scylla-cdc-checkpoints", self.topic_prefix));
        Ok(Config {
            hosts: connection.hosts,
            credentials: connection.credentials,
            tls: connection.tls,
            keyspace: self.keyspace,
            tables: self.table.0,
            bootstrap_servers: self.bootstrap_servers,
            topic_prefix: self.topic_prefix,
            checkpoint_topic,
            topic_partitions: self.topic_partitions,
            topic_replication_factor: self.topic_replication_factor,
            kafka_options,
            transactional_id,
            transactional_base,
            group,
            commit_interval: self.commit_interval,
            kafka_timeout: self.kafka_timeout,
            events,
            start,
            snapshot: self.snapshot,
            snapshot_parallelism: usize::from(self.snapshot_parallelism),
            snapshot_batch_rows: self.snapshot_batch_rows as usize,
            end,
            window_size: self.reading.window_size,
            safety_interval: self.reading.safety_interval,
            sleep_interval: self.reading.sleep_interval,
            early_reads,
            give_up_after: self.give_up_after,
            checkpoint_interval: self.checkpoint_interval,
            max_rows_per_second: self.reading.max_rows_per_second,
            progress_interval: self.progress_interval,
        })
    }
}

/// The `transactional.id` of `member` in a group whose ids are made of `base`.
pub fn member_transactional_id(base: &str, member: &str) -> String {
    format!("{base}.{member}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla_cdc::cli::exit_code;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_714_564_800, 0).unwrap()
    }

    fn parse_env(args: &[&str], env: &[(&str, &str)]) -> Result<Config, CliError> {
        let full = std::iter::once("scylla-cdc-kafka").chain(args.iter().copied());
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match super::parse(full) {
            Ok(a) => a.into_config(now(), |name| {
                env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
            }),
            Err(e) => Err(scylla_cdc::cli::clap_failure(&e).unwrap_err()),
        }
    }

    fn parse(args: &[&str]) -> Result<Config, CliError> {
        parse_env(args, &[])
    }

    const BASE: &[&str] = &[
        "--hosts",
        "127.0.0.1",
        "-k",
        "ks",
        "-t",
        "a,b",
        "--bootstrap-servers",
        "127.0.0.2:9092",
        "--topic-prefix",
        "shop",
    ];

    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        BASE.iter().copied().chain(extra.iter().copied()).collect()
    }

    #[test]
    fn defaults() {
        let c = parse(BASE).unwrap();
        assert_eq!(c.tables, vec!["a", "b"]);
        assert_eq!(
            c.transactional_id.as_deref(),
            Some("scylla-cdc-kafka.shop.ks")
        );
        assert_eq!(c.checkpoint_topic, "shop.scylla-cdc-checkpoints");
        assert_eq!(c.commit_interval, Duration::from_millis(100));
        assert!(c.events.schemas && c.events.tombstones);
        assert_eq!(c.events.format, OutputFormat::Legacy);
        assert_eq!(c.events.before, ImageMode::None);
        assert_eq!(c.events.after, ImageMode::None);
        assert_eq!(c.events.connector_name, "shop");
        assert_eq!(c.early_reads, Some(scylla_cdc::EarlyReads::default()));
        assert_eq!(c.start, StartAt::Launch(now()));
        assert!(!c.snapshot);
        assert_eq!(c.snapshot_parallelism, 8);
        let c = parse(&with(&["--snapshot", "--snapshot-parallelism", "3"])).unwrap();
        assert!(c.snapshot);
        assert_eq!(c.snapshot_parallelism, 3);
    }

    #[test]
    fn options_and_secrets() {
        let dir = std::env::temp_dir().join(format!("kafka-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secret");
        std::fs::write(&file, "from-file\nsecond line\n").unwrap();
        let file_arg = format!("sasl.password=file:{}", file.display());
        let file_arg: &'static str = Box::leak(file_arg.into_boxed_str());
        let c = parse_env(
            &with(&[
                "-X",
                "security.protocol=SASL_SSL",
                "-X",
                "sasl.username=env:KAFKA_USER",
                "-X",
                file_arg,
                "--no-transactions",
                "--format",
                "advanced",
                "--before",
                "full",
                "--after",
                "only-updated",
                "--key-placement",
                "kafka-key,payload-key",
                "--no-schemas",
            ]),
            &[("KAFKA_USER", "app")],
        )
        .unwrap();
        assert_eq!(
            c.kafka_options,
            vec![
                ("security.protocol".to_string(), "SASL_SSL".to_string()),
                ("sasl.username".to_string(), "app".to_string()),
                ("sasl.password".to_string(), "from-file".to_string()),
            ]
        );
        assert_eq!(c.transactional_id, None);
        assert_eq!(c.events.before, ImageMode::Full);
        assert_eq!(c.events.after, ImageMode::OnlyUpdated);
        assert!(c.events.key_placement.payload_key && !c.events.key_placement.payload_after);
        assert!(!c.events.schemas);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        for bad in [
            with(&["-X", "novalue"]),
            with(&["-X", "bad key=1"]),
            with(&["-X", "transactional.id=x"]),
            with(&["-X", "sasl.password=env:NOT_SET_ANYWHERE"]),
            with(&["-X", "sasl.password=file:/nonexistent/secret"]),
            with(&["--commit-interval", "0"]),
            with(&["--commit-interval", "61"]),
            with(&["--kafka-timeout", "0.5"]),
            with(&["--topic-partitions", "0"]),
            with(&["--no-transactions", "--transactional-id", "x"]),
            with(&["--before", "sometimes"]),
            with(&["--snapshot", "--start", "-1h"]),
            with(&["--snapshot-parallelism", "0"]),
            // The legacy format has no after image and one key placement.
            with(&["--after", "full"]),
            with(&["--key-placement", "payload-key"]),
            with(&["--format", "advanced", "--key-placement", "nowhere"]),
            BASE.iter()
                .copied()
                .filter(|a| *a != "--topic-prefix" && *a != "shop")
                .collect(),
        ] {
            let err = parse(&bad).unwrap_err();
            assert_eq!(err.exit_code(), exit_code::USAGE, "{bad:?}: {err}");
        }
    }
}
