//! `scylla-cdc-kafka`: publish the changes of ScyllaDB tables to Kafka, one topic per table,
//! in the event format of ScyllaDB's scylla-cdc-source-connector (Debezium's envelope), exactly
//! once for `read_committed` consumers, without a Kafka Connect cluster.
//!
//! The binary (`src/main.rs`) calls [`process_main`]; tests call [`run`]. A run:
//!
//! 1. parses and checks the arguments ([`args`]) before contacting anything;
//! 2. connects to Scylla, then to Kafka: creates the event topics
//!    (`<prefix>.<keyspace>.<table>`) and the compacted checkpoint topic if missing, and
//!    (with transactions) fences any earlier instance with the same `transactional.id`, which
//!    aborts its open transaction;
//! 3. reads the checkpoint topic ([`checkpoint`]) and, with transactions, the events
//!    published since the checkpoints ([`produced`]);
//! 4. starts one [`scylla_cdc::CDCLogReader`] for the tables, with a [`KafkaChangeConsumer`]
//!    per stream group rendering each whole change into its events ([`event`]) and handing
//!    them to the [`publish`]er thread, which commits a transaction every commit interval
//!    with the checkpoints that cover its events;
//! 5. runs until the end time, a failure, or SIGTERM/Ctrl-C (a graceful stop commits what
//!    was published).
//!
//! # Exactly once
//!
//! With transactions, a committed transaction holds events and the checkpoints that cover
//! them; an aborted or unfinished one holds neither. A restart resumes from the committed
//! checkpoints and skips the changes whose events it reads back from Kafka, so a
//! `read_committed` consumer sees each change once, in order per key. Without transactions
//! (`--no-transactions`) checkpoints are written once their events are stored: at least once.
//!
//! # Consumer groups
//!
//! With `--group`, several instances share the tables' streams through the library's leases
//! ([`scylla_cdc::CDCLogReaderBuilder::group`]); each has its own `transactional.id`, a
//! member taking over streams whose lease ran out fences their previous owner first, a save
//! returns once its transaction committed (so a stream is handed over only with its
//! checkpoint committed), and a member reads the checkpoints and the events published after
//! them again whenever it starts reading streams ([`saver`]).
//!
//! # Snapshot
//!
//! With `--snapshot` ([`snapshot`]), a table without saved progress first has its existing
//! rows published as snapshot reads (`op: "r"`), scanned by token range, with their progress
//! in the checkpoint topic (a restart resumes the snapshot and publishes each row once); its
//! log is then read from the snapshot's boundary B (the first run's launch time minus the
//! safety interval): the `r` events hold the cells written before B, the stream every change
//! from B on.

pub mod args;
pub mod checkpoint;
pub mod event;
pub mod produced;
pub mod publish;
pub mod saver;
pub mod snapshot;

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::error::RDKafkaErrorCode;
use scylla::client::session::Session;
use scylla_cdc::cli::{CliError, RunningReader, Shutdown, connect, supervise};
use scylla_cdc::{CDCLogReaderBuilder, Change, ChangeConsumer, ChangeConsumerFactory};
use tracing::{debug, info, warn};

use crate::args::{Args, Config};
use crate::checkpoint::{CheckpointRecord, ReadBack, SavedProgress};
use crate::event::{Event, EventOptions, EventRenderer, TableInfo};
use crate::produced::{Produced, PublishedSet};
use crate::publish::{
    ChangeEvents, Command, Outgoing, PublishError, Publisher, PublisherConfig, PublisherHandle,
};
use crate::saver::{GroupLoads, KafkaCheckpoints};

/// Exit code: Kafka refused (authorization, a message over the size limit, a fenced
/// producer).
pub const EXIT_KAFKA_REFUSED: u8 = 5;

/// Counters of one run, shared by its consumers.
#[derive(Debug, Default)]
pub struct Counters {
    /// Changes published.
    pub changes: AtomicU64,
    /// Messages handed to the publisher (events and tombstones).
    pub messages: AtomicU64,
    /// Changes skipped because an earlier run had published them.
    pub already_published: AtomicU64,
}

/// Publishes the changes of one stream group of one table.
pub struct KafkaChangeConsumer {
    renderer: EventRenderer,
    topic: usize,
    publisher: PublisherHandle,
    /// Changes an earlier run (or, in a group, another member) published: read back at
    /// start or when units are taken; empty without transactions.
    published: Arc<PublishedSet>,
    counters: Arc<Counters>,
    events: Vec<Event>,
}

#[async_trait]
impl ChangeConsumer for KafkaChangeConsumer {
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
        let stream = change.stream_id();
        let time = change.time();
        if self.published.contains(stream, time) {
            self.counters
                .already_published
                .fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        let processed = chrono::Utc::now().timestamp_millis();
        self.events.clear();
        self.renderer
            .render_change(&change, processed, &mut self.events)?;
        let messages: Vec<Outgoing> = self
            .events
            .drain(..)
            .map(|e| Outgoing {
                key: e.key,
                value: e.value,
                headers: e.headers,
            })
            .collect();
        self.counters
            .messages
            .fetch_add(messages.len() as u64, Ordering::Relaxed);
        self.counters.changes.fetch_add(1, Ordering::Relaxed);
        self.publisher
            .send(Command::Publish(ChangeEvents {
                topic: self.topic,
                stream,
                time,
                time_ms: change.timestamp_micros().div_euclid(1000),
                messages,
            }))
            .await
    }
}

/// One table's rendering set-up.
struct TableSetup {
    info: TableInfo,
    topic: usize,
    published: Arc<PublishedSet>,
}

/// Makes a [`KafkaChangeConsumer`] per table and stream group.
pub struct KafkaConsumerFactory {
    tables: HashMap<String, TableSetup>,
    options: EventOptions,
    publisher: PublisherHandle,
    counters: Arc<Counters>,
}

impl KafkaConsumerFactory {
    fn consumer(&self, table: &str) -> KafkaChangeConsumer {
        let setup = self
            .tables
            .get(table)
            .or_else(|| self.tables.values().next())
            .expect("the reader reads only the tables it was given");
        KafkaChangeConsumer {
            renderer: EventRenderer::new(setup.info.clone(), self.options.clone()),
            topic: setup.topic,
            publisher: self.publisher.clone(),
            published: setup.published.clone(),
            counters: self.counters.clone(),
            events: Vec::with_capacity(2),
        }
    }
}

#[async_trait]
impl ChangeConsumerFactory for KafkaConsumerFactory {
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer> {
        let first = self.tables.keys().next().cloned().unwrap_or_default();
        Box::new(self.consumer(&first))
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn ChangeConsumer> {
        Box::new(self.consumer(table))
    }
}

/// The program's process: runs it with the process arguments and signals, prints an error
/// as one line on stderr, and returns the exit code.
pub fn process_main() -> std::process::ExitCode {
    use scylla_cdc::cli::exit_code;
    let launched = scylla_cdc::cli::launch_time();
    // Parsed before the log is set up, which --log-format configures.
    let parsed = args::parse(std::env::args_os());
    let log_format = parsed
        .as_ref()
        .map(|a| a.log.log_format)
        .unwrap_or_default();
    scylla_cdc::cli::install_tracing(
        "warn,scylla_cdc_kafka=info,scylla=off,scylla_cdc=warn,scylla_cdc::cli::units=info",
        log_format,
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(exit_code::RUNTIME);
        }
    };
    let code = runtime.block_on(async {
        let shutdown = Shutdown::on_signals();
        let result = match parsed {
            Ok(args) => run_parsed(launched, args, shutdown).await,
            Err(e) => help_or_usage_error(&e),
        };
        match result {
            Ok(()) => exit_code::OK,
            Err(e) => {
                scylla_cdc::cli::args::report_failure(&e, log_format, "scylla_cdc_kafka");
                e.exit_code()
            }
        }
    });
    runtime.shutdown_background();
    std::process::ExitCode::from(code)
}

/// Runs the program with these arguments (the first is the program name) until the end
/// time, a failure, or `shutdown`.
pub async fn run<I, T>(args: I, shutdown: Shutdown) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_launched(chrono::Utc::now(), args, shutdown).await
}

/// Runs the program like [`run`], for a process launched at `launched` (the default start).
/// The arguments are parsed with [`args::parse`] (flags not on the command line come from the
/// environment variables of [`args::ENV_PREFIX`]).
pub async fn run_launched<I, T>(
    launched: chrono::DateTime<chrono::Utc>,
    args: I,
    shutdown: Shutdown,
) -> Result<(), CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match args::parse(args) {
        Ok(args) => run_parsed(launched, args, shutdown).await,
        Err(e) => help_or_usage_error(&e),
    }
}

/// `--help` or `--version` printed on stdout, or the usage error of a failed parse.
fn help_or_usage_error(err: &clap::Error) -> Result<(), CliError> {
    let text = scylla_cdc::cli::clap_failure(err)?;
    print!("{text}");
    Ok(())
}

/// Runs the program with parsed arguments, like [`run_launched`].
pub async fn run_parsed(
    launched: chrono::DateTime<chrono::Utc>,
    args: Args,
    shutdown: Shutdown,
) -> Result<(), CliError> {
    let metrics_addr = args.metrics_addr;
    let config = args.into_config(launched, |name| std::env::var(name).ok())?;
    if let Some(addr) = metrics_addr {
        scylla_cdc::cli::metrics_http::serve_metrics(addr)?;
    }
    publish_tables(config, shutdown).await
}

fn kafka_error(e: PublishError) -> CliError {
    match e {
        PublishError::Refused(m) => CliError::new(EXIT_KAFKA_REFUSED, m),
        PublishError::Unavailable(m) => CliError::connect(m),
        PublishError::Stopped => CliError::runtime("the Kafka publisher stopped"),
    }
}

/// The client configuration every Kafka client of the run shares (the `-X` options last).
fn client_config(config: &Config) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &config.bootstrap_servers);
    c.set("client.id", "scylla-cdc-kafka");
    set_options(&mut c, config);
    c
}

/// The producers' configuration: the shared one with the producer's own settings (which the
/// `-X` options still override).
fn producer_config(config: &Config) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", &config.bootstrap_servers);
    c.set("client.id", "scylla-cdc-kafka");
    // A broker that stays away longer than the Kafka timeout stops the program.
    let timeout_ms = transaction_timeout(config).as_millis().to_string();
    c.set("message.timeout.ms", &timeout_ms);
    c.set("transaction.timeout.ms", &timeout_ms);
    // The producer's queue: bounded so that memory stays small at any rate (8 MiB: 16 MiB
    // gave the same throughput with ~10 MiB more peak RSS, `scylla-cdc-bench kafka`).
    c.set("queue.buffering.max.kbytes", "8192");
    // Messages wait up to a fifth of the commit interval, at most 20 ms, to fill batches.
    // Not longer: a commit first waits until every message is stored, and messages held back
    // until then made each commit a stall (0.3-0.4 s every second with a linger of a commit
    // interval of 1 s: 106 000 changes/s against 166 000 with 20 ms, `scylla-cdc-bench
    // kafka`). Not much shorter: librdkafka's threads then wake for tiny batches.
    let linger_ms = (config.commit_interval.as_millis() / 5)
        .clamp(1, 20)
        .to_string();
    c.set("linger.ms", &linger_ms);
    c.set("batch.size", "1000000");
    set_options(&mut c, config);
    c
}

/// How long a transaction may stay open before the broker aborts it: the Kafka timeout, and
/// in a consumer group at most twice the lease duration (at least 10 s).
///
/// Each member has a transactional id of its own, so a member that dies with a transaction
/// open is fenced only by one that takes its units over; one that dies before it holds any
/// (just started) is fenced by nobody, and its transaction would hold back every partition
/// it wrote to (the checkpoint topic among them) until the broker times it out: reads that
/// wait for open transactions ([`checkpoint::ReadBack`]), members starting or taking units
/// over among them, would wait that long. A member whose transaction stays open for two
/// leases has lost its units anyway (and is fenced by whoever took them).
fn transaction_timeout(config: &Config) -> std::time::Duration {
    use std::time::Duration;
    match &config.group {
        Some(group) => (group.lease_duration * 2)
            .max(Duration::from_secs(10))
            .min(config.kafka_timeout),
        None => config.kafka_timeout,
    }
}

/// The `-X` options (secrets included: `ClientConfig::config_map` would hide them).
fn set_options(c: &mut ClientConfig, config: &Config) {
    for (k, v) in &config.kafka_options {
        c.set(k, v);
    }
}

/// The context of the clients that set up the run (the admin client, and a probe that
/// watches the connection meanwhile): logs like the default one and reports an
/// authentication failure (bad SASL credentials, a TLS handshake the broker refuses), which
/// librdkafka otherwise retries until the request times out.
#[derive(Clone)]
struct AdminContext {
    refused: tokio::sync::watch::Sender<Option<String>>,
}

/// The probe is a producer that sends nothing: librdkafka's admin client hands connection
/// errors only to a queue nobody polls, a threaded producer's thread polls them (and calls
/// [`AdminContext`]'s `error`).
impl rdkafka::producer::ProducerContext for AdminContext {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::producer::DeliveryResult<'_>, _: ()) {}
}

impl rdkafka::ClientContext for AdminContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        use rdkafka::error::RDKafkaErrorCode as C;
        if matches!(
            error.rdkafka_error_code(),
            Some(C::Authentication | C::SaslAuthenticationFailed | C::SSL)
        ) {
            self.refused.send_if_modified(|r| {
                if r.is_none() {
                    *r = Some(format!("{error}: {reason}"));
                    true
                } else {
                    false
                }
            });
        }
        tracing::error!(target: "librdkafka", "librdkafka: {error}: {reason}");
    }
}

/// Creates the topics that are missing: the event topics, and the checkpoint topic
/// compacted. An authorization failure is exit 5; Kafka not answering, exit 3.
async fn ensure_topics(
    config: &Config,
    admin: &AdminClient<AdminContext>,
    refused: tokio::sync::watch::Receiver<Option<String>>,
    event_topics: &[String],
) -> Result<(), CliError> {
    let partitions = config.topic_partitions.unwrap_or(-1);
    let replication = || TopicReplication::Fixed(config.topic_replication_factor.unwrap_or(-1));
    let mut topics: Vec<NewTopic<'_>> = event_topics
        .iter()
        .map(|t| NewTopic::new(t, partitions, replication()))
        .collect();
    topics.push(
        NewTopic::new(&config.checkpoint_topic, 1, replication()).set("cleanup.policy", "compact"),
    );
    let options = AdminOptions::new()
        .operation_timeout(Some(config.kafka_timeout))
        .request_timeout(Some(config.kafka_timeout));
    let mut refused = refused;
    let results = tokio::select! {
        r = admin.create_topics(topics.iter(), &options) => {
            r.map_err(|e| kafka_error(PublishError::from_kafka("creating the topics", &e)))?
        }
        Ok(why) = refused.wait_for(Option::is_some) => {
            let why = why.clone().unwrap_or_default();
            return Err(CliError::new(
                EXIT_KAFKA_REFUSED,
                format!("Kafka refused the connection: {why}"),
            ));
        }
    };
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((topic, code)) => {
                let message = format!("cannot create topic {topic}: {code}");
                return Err(match code {
                    RDKafkaErrorCode::TopicAuthorizationFailed
                    | RDKafkaErrorCode::ClusterAuthorizationFailed
                    | RDKafkaErrorCode::PolicyViolation
                    | RDKafkaErrorCode::InvalidReplicationFactor
                    | RDKafkaErrorCode::InvalidPartitions
                    | RDKafkaErrorCode::InvalidConfig
                    | RDKafkaErrorCode::InvalidTopic => CliError::new(EXIT_KAFKA_REFUSED, message),
                    _ => CliError::connect(message),
                });
            }
        }
    }
    Ok(())
}

/// Runs blocking Kafka client work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, CliError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CliError::runtime(format!("a Kafka client task failed: {e}")))
}

async fn publish_tables(config: Config, shutdown: Shutdown) -> Result<(), CliError> {
    info!(
        keyspace = %config.keyspace,
        tables = ?config.tables,
        bootstrap = %config.bootstrap_servers,
        transactions = config.transactional_id.is_some(),
        "publishing"
    );
    let session = connect(
        "the cluster",
        &config.hosts,
        config.credentials.as_ref(),
        config.tls.as_ref(),
        config.give_up_after,
    )
    .await?;
    let session = Arc::new(session);
    let mut infos = Vec::with_capacity(config.tables.len());
    for table in &config.tables {
        let info = TableInfo::from_session(&session, &config.keyspace, table)
            .map_err(|e| CliError::schema(format!("{}.{table}: {e:#}", config.keyspace)))?;
        infos.push(info);
    }
    let event_topics: Vec<String> = config
        .tables
        .iter()
        .map(|t| format!("{}.{}.{t}", config.topic_prefix, config.keyspace))
        .collect();

    // Kafka: topics, the producer (fencing an earlier instance), the progress.
    let client = client_config(&config);
    let (refused_tx, refused) = tokio::sync::watch::channel(None);
    let context = AdminContext {
        refused: refused_tx,
    };
    let admin: AdminClient<AdminContext> = client
        .create_with_context(context.clone())
        .map_err(|e| kafka_error(PublishError::from_kafka("creating the admin client", &e)))?;
    let probe: rdkafka::producer::ThreadedProducer<AdminContext> = client
        .create_with_context(context)
        .map_err(|e| kafka_error(PublishError::from_kafka("creating a Kafka client", &e)))?;
    // Start-up phases at debug level, with the time since publishing began (where a slow
    // start goes: the cluster, the topics, the transaction coordinator, the progress).
    let began = std::time::Instant::now();
    ensure_topics(&config, &admin, refused, &event_topics).await?;
    drop(probe);
    debug!(elapsed = ?began.elapsed(), "the topics exist");
    let instance = config
        .transactional_id
        .clone()
        .unwrap_or_else(|| format!("{}.{}", config.topic_prefix, config.keyspace));
    let publisher_config = PublisherConfig {
        producer: producer_config(&config),
        transactional_id: config.transactional_id.clone(),
        instance,
        checkpoint_topic: config.checkpoint_topic.clone(),
        topics: event_topics.clone(),
        commit_interval: config.commit_interval,
        kafka_timeout: config.kafka_timeout,
        channel_capacity: 4096,
        group: config.group.is_some(),
    };
    let reader_consumer = {
        let mut c = client.clone();
        c.set("group.id", "scylla-cdc-kafka-readback")
            .set("enable.auto.commit", "false")
            .set("enable.partition.eof", "false");
        c
    };
    // Fencing first: the earlier instance's open transaction is aborted, so that reading the
    // checkpoint topic to its end does not wait for it.
    let (saved, publisher_parts) = {
        let timeout = config.kafka_timeout;
        let checkpoint_topic = config.checkpoint_topic.clone();
        let pc = publisher_config.clone();
        let rc = reader_consumer.clone();
        blocking(move || -> Result<_, CliError> {
            // The publisher is created (and fences) before the progress is read.
            let connected = Publisher::connect(&pc).map_err(kafka_error)?;
            debug!(elapsed = ?began.elapsed(), "the producer is ready (an earlier instance fenced)");
            let consumer = ReadBack::create(&rc).map_err(|e| {
                kafka_error(PublishError::from_kafka(
                    "creating the read-back consumer",
                    &e,
                ))
            })?;
            let saved = SavedProgress::load(&consumer, &checkpoint_topic, timeout)
                .map_err(|e| CliError::connect(format!("{e:#}")))?;
            Ok((saved, (connected, consumer)))
        })
        .await??
    };
    let (connected, consumer) = publisher_parts;
    info!(
        records = saved.records,
        "read the progress in {}", config.checkpoint_topic
    );

    // --snapshot (src/snapshot.rs): which tables publish their rows first, and from where
    // their log is read then.
    let snapshots = snapshot::Plan::new(&config, &saved);
    // Where each table starts: its saved start, else the configured one (saved now).
    let mut starts = HashMap::new();
    let mut start_records = Vec::new();
    for table in &config.tables {
        let name = format!("{}.{table}", config.keyspace);
        let saved_start = saved
            .start_of(&name)
            .map_err(|e| CliError::runtime(format!("{e:#}")))?;
        let start = match saved_start {
            Some(s) => s,
            None => {
                let s = snapshots
                    .start_of(&name)
                    .unwrap_or_else(|| config.start.time());
                start_records.push(CheckpointRecord::start(&name, s));
                s
            }
        };
        starts.insert(name, start);
    }
    start_records.extend(snapshots.records());

    // Changes published since the checkpoints (exactly once only). A group member reads
    // them back for the units it takes, when it takes them (`saver::GroupLoads`).
    let mut produced = if config.transactional_id.is_some() && config.group.is_none() {
        let replay = saved.replay_starts();
        let timeout = config.kafka_timeout;
        let produced = blocking(move || Produced::load(&consumer, &replay, timeout))
            .await?
            .map_err(|e| CliError::connect(format!("{e:#}")))?;
        if produced.events > 0 {
            info!(
                events = produced.events,
                changes = produced.changes(),
                "read back the events published since the checkpoints"
            );
        }
        produced
    } else {
        Produced::default()
    };

    let group_progress = config.group.is_some().then(|| saved.clone());
    let saved = Arc::new(saved);
    let tables_state: HashMap<String, (i64, i64)> = starts
        .iter()
        .map(|(name, start)| {
            let generation = saved.generations.get(name).copied().unwrap_or(i64::MIN);
            (name.clone(), (start.timestamp_millis(), generation))
        })
        .collect();
    let groups = saved
        .groups
        .iter()
        .map(|(key, (table, generation, time, streams))| {
            (key.clone(), table.clone(), *generation, *time, *streams)
        })
        .collect();
    // How many streams each table's reader reads (from the reader's progress, once started).
    let progress_cell: Arc<std::sync::OnceLock<scylla_cdc::ProgressHandle>> =
        Arc::new(std::sync::OnceLock::new());
    let streams_read = {
        let cell = progress_cell.clone();
        let keyspace = config.keyspace.clone();
        Box::new(move |table: &str| -> Option<u64> {
            let progress = cell.get()?.progress();
            if progress.tables.is_empty() {
                return Some(progress.streams);
            }
            progress
                .tables
                .iter()
                .find(|t| format!("{keyspace}.{}", t.table) == table)
                .map(|t| t.progress.streams)
        }) as publish::StreamsRead
    };
    let earlier = produced
        .partitions
        .iter()
        .filter_map(|((topic, partition), span)| {
            let index = event_topics.iter().position(|t| t == topic)?;
            Some(((index, *partition), *span))
        })
        .collect();
    let publisher = Publisher::create(
        publisher_config,
        connected,
        earlier,
        tables_state,
        groups,
        streams_read,
    );
    let (handle, thread) = publisher.spawn();
    for record in start_records {
        handle
            .send(Command::Record(record))
            .await
            .map_err(|_| kafka_error(handle.failure()))?;
    }
    handle.commit().await.map_err(kafka_error)?;
    debug!(elapsed = ?began.elapsed(), "the start records are committed");
    // --snapshot: the existing rows before the log; a stop during it ends the run here.
    if let snapshot::Outcome::Stopped(stopped) = snapshots
        .publish(&session, &config, &infos, &handle, shutdown.clone())
        .await?
    {
        return snapshot::stop(handle, thread, stopped).await;
    }

    let counters = Arc::new(Counters::default());
    let mut tables = HashMap::new();
    for (i, info) in infos.into_iter().enumerate() {
        let table = config.tables[i].clone();
        let published = Arc::new(PublishedSet::new(produced.take_topic(&event_topics[i])));
        tables.insert(
            table,
            TableSetup {
                info,
                topic: i,
                published,
            },
        );
    }
    let mut saver = KafkaCheckpoints::new(
        &config.keyspace,
        &config.tables[0],
        saved.clone(),
        handle.clone(),
    );
    if let Some(progress) = group_progress {
        let consumer = ReadBack::create(&reader_consumer).map_err(|e| {
            kafka_error(PublishError::from_kafka(
                "creating the read-back consumer",
                &e,
            ))
        })?;
        let published = tables
            .iter()
            .map(|(table, setup)| {
                (
                    format!("{}.{table}", config.keyspace),
                    (event_topics[setup.topic].clone(), setup.published.clone()),
                )
            })
            .collect();
        saver = saver.in_group(Arc::new(GroupLoads {
            checkpoint_topic: config.checkpoint_topic.clone(),
            topics: event_topics.clone(),
            client: producer_config(&config),
            transactional_base: config.transactional_base.clone(),
            timeout: config.kafka_timeout,
            published,
            state: std::sync::Mutex::new((consumer, progress)),
        }));
    }
    let factory = KafkaConsumerFactory {
        tables,
        options: config.events.clone(),
        publisher: handle.clone(),
        counters: counters.clone(),
    };
    let earliest_start = starts
        .values()
        .min()
        .copied()
        .unwrap_or_else(chrono::Utc::now);
    let readers = start_reader(&session, &config, earliest_start, Arc::new(factory), saver).await?;
    debug!(elapsed = ?began.elapsed(), "the reader started");
    let _ = progress_cell.set(readers[0].reader.progress_handle());
    scylla_cdc::cli::health::reading(
        &session,
        &readers,
        scylla_cdc::cli::health::stall_bound(config.sleep_interval, config.safety_interval, None),
    );
    let progress = scylla_cdc::cli::ReadersProgress::of(&readers);
    if let Some(every) = config.progress_interval {
        let counters = counters.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                info!(
                    "progress: {} changes published ({} messages), {} skipped as already \
                     published; {}",
                    counters.changes.load(Ordering::Relaxed),
                    counters.messages.load(Ordering::Relaxed),
                    counters.already_published.load(Ordering::Relaxed),
                    progress.describe_watermark(chrono::Utc::now()),
                );
            }
        });
    }
    // The readers stop on a signal, or at once when the publisher fails (its error is the
    // program's).
    let (trigger, readers_shutdown) = Shutdown::new();
    let relay = {
        let handle = handle.clone();
        let mut shutdown = shutdown;
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.requested() => {
                    trigger.trigger();
                    tokio::select! {
                        _ = shutdown.forced() => trigger.trigger(),
                        _ = handle.failed() => trigger.trigger(),
                    }
                }
                _ = handle.failed() => {
                    trigger.trigger();
                    trigger.trigger();
                }
            }
            // Keep the trigger (a dropped one would never stop anything) until the end.
            std::future::pending::<()>().await;
        })
    };
    // A failed publisher ends the run at once: readers blocked on it (a consumer retrying
    // its hand-over, a group member's save waiting for its commit) are not waited for, and a
    // group member leaves no unit behind with a checkpoint that was not committed: its
    // leases run out, and the member taking its units over fences it.
    let outcome = tokio::select! {
        outcome = supervise(readers, readers_shutdown) => outcome,
        _ = handle.failed() => {
            relay.abort();
            return Err(kafka_error(handle.failure()));
        }
    };
    relay.abort();
    if handle.has_failed() {
        return Err(kafka_error(handle.failure()));
    }
    // The readers are done: a last commit of what they handed over, then the thread ends.
    let committed = handle.commit().await;
    drop(handle);
    let joined = blocking(move || thread.join()).await?;
    let thread_result = joined.unwrap_or(Err(PublishError::Stopped));
    outcome?;
    committed.map_err(kafka_error)?;
    thread_result.map_err(kafka_error)?;
    info!(
        changes = counters.changes.load(Ordering::Relaxed),
        skipped = counters.already_published.load(Ordering::Relaxed),
        "stopped"
    );
    Ok(())
}

async fn start_reader(
    session: &Arc<Session>,
    config: &Config,
    start: chrono::DateTime<chrono::Utc>,
    factory: Arc<KafkaConsumerFactory>,
    saver: KafkaCheckpoints,
) -> Result<Vec<RunningReader>, CliError> {
    let name = config
        .tables
        .iter()
        .map(|t| format!("{}.{t}", config.keyspace))
        .collect::<Vec<_>>()
        .join(", ");
    let mut builder = CDCLogReaderBuilder::new()
        .session(session.clone())
        .keyspace(&config.keyspace)
        .tables(config.tables.iter().cloned())
        .window_size(config.window_size)
        .safety_interval(config.safety_interval)
        .sleep_interval(config.sleep_interval)
        .early_reads(config.early_reads.clone())
        .start_timestamp(start)
        .change_consumer_factory(factory)
        .checkpoint_saver(Arc::new(saver))
        .pause_between_saves(config.checkpoint_interval);
    if let Some(g) = config.give_up_after {
        builder = builder.give_up_after(g);
    }
    if let Some(n) = config.max_rows_per_second {
        builder = builder.max_rows_per_second(n);
    }
    if let Some(end) = config.end {
        builder = builder.end_timestamp(end);
    }
    if let Some(group) = &config.group {
        builder = group.configure(builder);
    }
    match builder.build().await {
        Ok((reader, handle)) => Ok(vec![RunningReader {
            table: name,
            reader,
            handle,
        }]),
        Err(e) => {
            warn!("the reader did not start: {e}");
            Err(CliError::from_reader(&name, &e))
        }
    }
}
