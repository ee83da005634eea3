//! The publisher: one Kafka producer on a thread of its own, its transactions, and the
//! checkpoint records that go into them.
//!
//! Consumers (one per stream group) render their changes' events and hand them over as
//! [`Command`]s through one bounded channel; the library's checkpoint saves arrive through the
//! same channel, after the events they cover. The publisher thread sends everything in that
//! order and, every commit interval:
//!
//! * with transactions: waits for every message of the open transaction to be acknowledged,
//!   adds a replay record (where a restart reads the event partitions again, see
//!   [`crate::produced`]), and commits: the events and the checkpoints that cover them become
//!   visible to `read_committed` consumers together, or not at all;
//! * without: waits for every message sent so far to be acknowledged, then sends the
//!   checkpoints that arrived before them (a checkpoint is written only once the events it
//!   covers are stored: at least once).
//!
//! A message Kafka refuses for good, a failed commit or a fenced producer stops the publisher:
//! its error is kept, the channel closes, and the program stops with it (nothing after the
//! last commit is considered published; a restart publishes it again).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use scylla_cdc::StreamID;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::checkpoint::{CheckpointRecord, ReplayStart, STREAM_HEADER, TIME_HEADER};

/// How many messages one block of the replay ledger covers.
const LEDGER_BLOCK: u32 = 1024;
/// The topic index of records that are not events (the checkpoint topic).
const NOT_AN_EVENT: usize = 0xFFFF;

/// One message to publish.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The message key (`None`: no key).
    pub key: Option<Vec<u8>>,
    /// The message value (`None`: a tombstone).
    pub value: Option<Vec<u8>>,
    /// Headers of the event (the program adds the change's stream and time).
    pub headers: Vec<(String, Vec<u8>)>,
}

/// The events of one change, for one topic.
#[derive(Debug)]
pub struct ChangeEvents {
    /// Index of the topic in the publisher's topic list.
    pub topic: usize,
    /// The change's stream.
    pub stream: StreamID,
    /// The change's `cdc$time`.
    pub time: Uuid,
    /// The change's write time, ms since the epoch (what the replay ledger orders by).
    pub time_ms: i64,
    /// Its messages, in order.
    pub messages: Vec<Outgoing>,
}

/// What the publisher thread is asked to do.
#[derive(Debug)]
pub enum Command {
    /// Publish the events of one change.
    Publish(ChangeEvents),
    /// A stream group's checkpoint (written after the events before it).
    Checkpoint {
        /// `keyspace.table`.
        table: String,
        /// The group's generation (ms).
        generation: i64,
        /// The checkpoint's time (ms).
        time: i64,
        /// The record.
        record: CheckpointRecord,
        /// A consumer group member's save (see [`PublisherConfig::group`]): answered once the
        /// transaction (or flush) holding the record succeeded; dropped if it failed.
        committed: Option<oneshot::Sender<()>>,
    },
    /// The generation a table's reader entered.
    Generation {
        /// `keyspace.table`.
        table: String,
        /// Its start (ms).
        generation: i64,
        /// The record.
        record: CheckpointRecord,
    },
    /// A record of the checkpoint topic to write at once (the start record).
    Record(CheckpointRecord),
    /// `--snapshot` ([`crate::snapshot`]): the events of a batch of rows, then the record of
    /// the progress they make, with no commit between them (one transaction holds both or
    /// neither); `handed` is answered once both are with the producer.
    PublishThen {
        /// The batch's events.
        events: ChangeEvents,
        /// The progress record.
        record: CheckpointRecord,
        /// Answered once both are handed to the producer.
        handed: oneshot::Sender<()>,
    },
    /// Commit (or flush) what was sent, then answer.
    Commit(oneshot::Sender<Result<(), PublishError>>),
    /// Events other producers published after checkpoints this program now continues from
    /// (read back by a group member taking units over, [`crate::saver`]): per event
    /// partition (topic index, partition), the first offset and latest change time (ms).
    /// Kept in the replay ledger, so that this program's own checkpoints still point back to
    /// them until they pass them.
    Earlier(Vec<((usize, i32), (i64, i64))>),
}

/// Why publishing stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PublishError {
    /// Kafka refused for good: authorization, a message over the size limit, a fenced
    /// producer, an invalid configuration.
    #[error("Kafka refused: {0}")]
    Refused(String),
    /// Kafka could not be reached or did not answer in time.
    #[error("Kafka unavailable: {0}")]
    Unavailable(String),
    /// The publisher is gone (it stopped after an error reported elsewhere).
    #[error("the publisher stopped")]
    Stopped,
}

impl PublishError {
    /// Classifies a client error.
    pub fn from_kafka(what: &str, e: &KafkaError) -> Self {
        let code = e.rdkafka_error_code();
        let text = format!("{what}: {e}");
        match code {
            Some(
                RDKafkaErrorCode::TopicAuthorizationFailed
                | RDKafkaErrorCode::ClusterAuthorizationFailed
                | RDKafkaErrorCode::TransactionalIdAuthorizationFailed
                | RDKafkaErrorCode::GroupAuthorizationFailed
                | RDKafkaErrorCode::SaslAuthenticationFailed
                | RDKafkaErrorCode::Authentication
                | RDKafkaErrorCode::MessageSizeTooLarge
                | RDKafkaErrorCode::MessageBatchTooLarge
                | RDKafkaErrorCode::InvalidRecord
                | RDKafkaErrorCode::ProducerFenced
                | RDKafkaErrorCode::Fenced
                | RDKafkaErrorCode::InvalidProducerEpoch
                | RDKafkaErrorCode::InvalidTransactionTimeout
                | RDKafkaErrorCode::UnknownTopicOrPartition
                | RDKafkaErrorCode::UnknownTopic
                | RDKafkaErrorCode::InvalidArgument
                | RDKafkaErrorCode::UnsupportedVersion,
            ) => PublishError::Refused(text),
            _ => match e {
                KafkaError::ClientConfig(..) | KafkaError::ClientCreation(..) => {
                    PublishError::Refused(text)
                }
                KafkaError::Transaction(t) if t.is_fatal() => PublishError::Refused(text),
                _ => PublishError::Unavailable(text),
            },
        }
    }
}

/// Settings of the publisher.
#[derive(Debug, Clone)]
pub struct PublisherConfig {
    /// The producer's configuration (bootstrap servers, `-X` options, TLS, SASL).
    pub producer: ClientConfig,
    /// `Some(id)`: transactions with this `transactional.id`; `None`: at least once.
    pub transactional_id: Option<String>,
    /// The name this instance's replay record is kept under.
    pub instance: String,
    /// The compacted topic of checkpoints.
    pub checkpoint_topic: String,
    /// The event topics, by index.
    pub topics: Vec<String>,
    /// Least time between two commits (or flushes).
    pub commit_interval: Duration,
    /// Longest a commit, a flush or `init_transactions` may take before publishing stops.
    pub kafka_timeout: Duration,
    /// Commands the channel holds before consumers wait.
    pub channel_capacity: usize,
    /// A member of a consumer group: each stream group's checkpoint record is written at
    /// commit time with where, in each event partition, the events at or after its time
    /// begin (the member that takes the streams over reads back from there), and a save is
    /// answered once its transaction committed.
    pub group: bool,
}

/// What the publisher thread and the delivery callbacks share.
#[derive(Default)]
struct Deliveries {
    /// The first message Kafka refused since the last commit.
    failure: Option<PublishError>,
    /// Per (topic index, partition): the acknowledged events, in blocks.
    ledger: HashMap<(usize, i32), PartitionLedger>,
    /// Messages acknowledged (events and records).
    acknowledged: u64,
}

/// The acknowledged events of one partition, in blocks of up to [`LEDGER_BLOCK`]: enough to
/// say from which offset on every event at or after a point in time lies.
#[derive(Default)]
struct PartitionLedger {
    blocks: VecDeque<Block>,
    /// One past the last acknowledged offset.
    next_offset: i64,
}

struct Block {
    first_offset: i64,
    /// The latest change time (ms) of the block's events.
    max_time: i64,
    count: u32,
}

impl PartitionLedger {
    fn record(&mut self, offset: i64, time_ms: i64) {
        self.next_offset = self.next_offset.max(offset + 1);
        match self.blocks.back_mut() {
            Some(b) if b.count < LEDGER_BLOCK => {
                b.max_time = b.max_time.max(time_ms);
                b.count += 1;
            }
            _ => self.blocks.push_back(Block {
                first_offset: offset,
                max_time: time_ms,
                count: 1,
            }),
        }
    }

    /// The first offset of the events at or after `time_ms` (one past the last acknowledged
    /// one if there is none), without forgetting anything.
    fn first_at_or_after(&self, time_ms: i64) -> i64 {
        self.blocks
            .iter()
            .filter(|b| b.max_time >= time_ms)
            .map(|b| b.first_offset)
            .min()
            .unwrap_or(self.next_offset)
    }

    /// Forgets the blocks whose events all lie before `watermark`; the offset from which a
    /// restart must read again.
    fn replay_from(&mut self, watermark: i64) -> i64 {
        // Blocks read back (`add_earlier`) go in front of later deliveries' blocks: the
        // deque is not in offset order then, so every block is looked at.
        self.blocks.retain(|b| b.max_time >= watermark);
        self.first_at_or_after(i64::MIN)
    }
}

/// The producer's context: delivery callbacks fill the ledger and keep the first failure.
struct Context {
    deliveries: Arc<Mutex<Deliveries>>,
}

impl ClientContext for Context {}

impl ProducerContext for Context {
    /// `(time_ms << 16) | topic index`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: usize) {
        let mut d = self
            .deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match result {
            Ok(message) => {
                d.acknowledged += 1;
                let topic = opaque & 0xFFFF;
                if topic != NOT_AN_EVENT {
                    let time_ms = (opaque >> 16) as i64;
                    d.ledger
                        .entry((topic, message.partition()))
                        .or_default()
                        .record(message.offset(), time_ms);
                }
            }
            Err((e, message)) => {
                if d.failure.is_none() {
                    let what = format!(
                        "publishing to {} ({} bytes)",
                        message.topic(),
                        message.payload_len()
                    );
                    d.failure = Some(PublishError::from_kafka(&what, e));
                }
            }
        }
    }
}

/// Makes `e` the failure the handles see (the first one stays).
fn record_failure(cell: &FailureCell, e: &PublishError) {
    let mut failure = cell
        .0
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if failure.is_none() {
        *failure = Some(e.clone());
    }
    let _ = cell.1.send(true);
}

/// Adds what other runs or members published (read back) to the ledger, each span as one
/// closed block: new deliveries start blocks of their own.
fn add_earlier(deliveries: &Mutex<Deliveries>, spans: Vec<((usize, i32), (i64, i64))>) {
    let mut d = deliveries
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (key, (first_offset, max_time)) in spans {
        let ledger = d.ledger.entry(key).or_default();
        ledger.blocks.push_front(Block {
            first_offset,
            max_time,
            count: LEDGER_BLOCK,
        });
        ledger.next_offset = ledger.next_offset.max(first_offset);
    }
}

fn opaque(topic: usize, time_ms: i64) -> usize {
    ((time_ms.max(0) as usize) << 16) | (topic & 0xFFFF)
}

/// A stream group's last checkpoint, as far as the replay ledger is concerned.
struct GroupMark {
    table: String,
    generation: i64,
    time: i64,
    streams: usize,
}

/// Where each table's restart would start reading again.
#[derive(Default)]
struct Restarts {
    /// Per table: its start record's time (streams without a checkpoint restart there) and
    /// generation.
    tables: HashMap<String, (i64, i64)>,
    /// By record key.
    groups: HashMap<String, GroupMark>,
}

impl Restarts {
    /// The earliest point any stream would be read again from on a restart: the earliest
    /// checkpoint of the current generations' groups, or a table's start while some of its
    /// streams have none (`streams_read` says how many streams each table's reader reads).
    fn watermark(&self, streams_read: &dyn Fn(&str) -> Option<u64>) -> i64 {
        let mut watermark = i64::MAX;
        for (table, (start, generation)) in &self.tables {
            let mut covered = 0usize;
            let mut earliest = i64::MAX;
            for g in self.groups.values() {
                if &g.table == table && g.generation >= *generation {
                    covered += g.streams;
                    earliest = earliest.min(g.time);
                }
            }
            let all_saved = streams_read(table).is_some_and(|n| n > 0 && covered as u64 >= n);
            let table_mark = if all_saved {
                earliest
            } else {
                earliest.min((*start).max(*generation))
            };
            watermark = watermark.min(table_mark);
        }
        if watermark == i64::MAX {
            i64::MIN
        } else {
            watermark
        }
    }
}

/// Sends commands to the publisher thread.
#[derive(Clone)]
pub struct PublisherHandle {
    tx: mpsc::Sender<Command>,
    failure: Arc<Mutex<Option<PublishError>>>,
    failed: tokio::sync::watch::Receiver<bool>,
}

impl PublisherHandle {
    /// Hands a command over, waiting while the channel is full.
    pub async fn send(&self, command: Command) -> anyhow::Result<()> {
        if self.tx.send(command).await.is_err() {
            return Err(anyhow::Error::new(self.failure()));
        }
        Ok(())
    }

    /// Commits (or flushes) everything handed over so far.
    pub async fn commit(&self) -> Result<(), PublishError> {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Command::Commit(tx)).await.is_err() {
            return Err(self.failure());
        }
        rx.await.unwrap_or_else(|_| Err(self.failure()))
    }

    /// Resolves once the publisher has stopped after an error (never, otherwise).
    pub async fn failed(&self) {
        let mut failed = self.failed.clone();
        if failed.wait_for(|f| *f).await.is_err() {
            // The thread ended without an error.
            std::future::pending::<()>().await;
        }
    }

    /// Whether the publisher stopped after an error.
    pub fn has_failed(&self) -> bool {
        *self.failed.borrow()
    }

    /// Why the publisher stopped ([`PublishError::Stopped`] if it has not).
    pub fn failure(&self) -> PublishError {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or(PublishError::Stopped)
    }
}

/// A producer that is connected (and, with transactions, has fenced earlier instances).
pub struct Connected {
    producer: ThreadedProducer<Context>,
    deliveries: Arc<Mutex<Deliveries>>,
}

/// How many streams a table's reader reads now (`None`: not known yet).
pub type StreamsRead = Box<dyn Fn(&str) -> Option<u64> + Send>;

/// The publisher thread's side.
pub struct Publisher {
    config: PublisherConfig,
    producer: ThreadedProducer<Context>,
    deliveries: Arc<Mutex<Deliveries>>,
    restarts: Restarts,
    streams_read: StreamsRead,
    /// Checkpoint records waiting for the events before them (at least once).
    waiting: Vec<CheckpointRecord>,
    /// Messages sent in the open transaction (or since the last flush).
    sent: u64,
    /// The last replay record written.
    last_replay: Option<Vec<ReplayStart>>,
    /// A group member's checkpoint records, written at the next commit with their replay
    /// starts ([`PublisherConfig::group`]), with their times (ms).
    deferred: Vec<(CheckpointRecord, i64)>,
    /// Saves answered once the next commit (or flush) succeeded.
    acks: Vec<oneshot::Sender<()>>,
    /// Where the handles see a failure (set by `spawn`).
    failure: Option<FailureCell>,
    /// The event topics' names (shared, so that a change's events borrow its topic's name
    /// while the producer is used).
    topic_names: Arc<Vec<String>>,
}

/// The failure the handles see, and the signal that there is one.
type FailureCell = (
    Arc<Mutex<Option<PublishError>>>,
    tokio::sync::watch::Sender<bool>,
);

impl Publisher {
    /// Creates the producer and, with transactions, fences every earlier producer of the same
    /// `transactional.id` (their open transactions are aborted) and opens a transaction.
    /// Blocking.
    pub fn connect(config: &PublisherConfig) -> Result<Connected, PublishError> {
        let deliveries = Arc::new(Mutex::new(Deliveries::default()));
        let mut producer_config = config.producer.clone();
        producer_config.set("enable.idempotence", "true");
        if let Some(id) = &config.transactional_id {
            producer_config.set("transactional.id", id);
        }
        let producer: ThreadedProducer<Context> = producer_config
            .create_with_context(Context {
                deliveries: deliveries.clone(),
            })
            .map_err(|e| PublishError::from_kafka("creating the producer", &e))?;
        if config.transactional_id.is_some() {
            producer
                .init_transactions(config.kafka_timeout)
                .map_err(|e| PublishError::from_kafka("initializing transactions", &e))?;
            producer
                .begin_transaction()
                .map_err(|e| PublishError::from_kafka("beginning a transaction", &e))?;
        }
        Ok(Connected {
            producer,
            deliveries,
        })
    }

    /// The publisher of a connected producer.
    ///
    /// `earlier` gives, per event partition (topic index, partition), the first offset and
    /// the latest change time (ms) of what earlier runs published after the checkpoints (read
    /// back at start): kept in the replay ledger until the checkpoints pass it. `tables` gives each table's start (ms) and generation (ms) as loaded, `groups` the
    /// loaded group checkpoints (record key, table, generation, time, streams), and
    /// `streams_read(table)` how many streams the table's reader reads now.
    pub fn create(
        config: PublisherConfig,
        connected: Connected,
        earlier: Vec<((usize, i32), (i64, i64))>,
        tables: HashMap<String, (i64, i64)>,
        groups: Vec<(String, String, i64, i64, usize)>,
        streams_read: StreamsRead,
    ) -> Self {
        let mut restarts = Restarts {
            tables,
            groups: HashMap::new(),
        };
        for (key, table, generation, time, streams) in groups {
            restarts.groups.insert(
                key,
                GroupMark {
                    table,
                    generation,
                    time,
                    streams,
                },
            );
        }
        add_earlier(&connected.deliveries, earlier);
        let topic_names = Arc::new(config.topics.clone());
        Self {
            config,
            producer: connected.producer,
            deliveries: connected.deliveries,
            restarts,
            streams_read,
            waiting: Vec::new(),
            sent: 0,
            last_replay: None,
            deferred: Vec::new(),
            acks: Vec::new(),
            failure: None,
            topic_names,
        }
    }

    /// Runs the publisher on a thread of its own until every handle is dropped (after a
    /// final commit) or an error stops it.
    pub fn spawn(
        mut self,
    ) -> (
        PublisherHandle,
        std::thread::JoinHandle<Result<(), PublishError>>,
    ) {
        let (tx, rx) = mpsc::channel(self.config.channel_capacity);
        let failure = Arc::new(Mutex::new(None));
        let (failed_tx, failed) = tokio::sync::watch::channel(false);
        let handle = PublisherHandle {
            tx,
            failure: failure.clone(),
            failed,
        };
        self.failure = Some((failure, failed_tx));
        let thread = std::thread::Builder::new()
            .name("kafka-publisher".into())
            .spawn(move || {
                let failure = self.failure.clone();
                let result = self.run(rx);
                if let (Err(e), Some(cell)) = (&result, &failure) {
                    record_failure(cell, e);
                }
                result
            })
            .expect("spawning the publisher thread");
        (handle, thread)
    }

    fn run(mut self, mut rx: mpsc::Receiver<Command>) -> Result<(), PublishError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| PublishError::Refused(format!("starting the publisher: {e}")))?;
        let mut next_commit = Instant::now() + self.config.commit_interval;
        loop {
            // A command already queued is taken at once, without entering the runtime and
            // arming a timer (while catching up the channel is seldom empty: that was a tenth
            // of this thread's time); only an empty channel is waited on.
            let command = match rx.try_recv() {
                Ok(command) => Ok(Some(command)),
                Err(mpsc::error::TryRecvError::Disconnected) => Ok(None),
                Err(mpsc::error::TryRecvError::Empty) => {
                    let wait = next_commit.saturating_duration_since(Instant::now());
                    runtime.block_on(async { tokio::time::timeout(wait, rx.recv()).await })
                }
            };
            match command {
                Ok(Some(command)) => {
                    if let Err(e) = self.handle(command) {
                        rx.close();
                        return Err(self.refine(e));
                    }
                }
                Ok(None) => {
                    // Every handle is gone: the program is stopping.
                    return self.commit().map_err(|e| self.refine(e));
                }
                Err(_) => {}
            }
            if Instant::now() >= next_commit {
                let pending = self.sent > 0
                    || !self.waiting.is_empty()
                    || !self.deferred.is_empty()
                    || !self.acks.is_empty();
                if pending && let Err(e) = self.commit() {
                    rx.close();
                    return Err(self.refine(e));
                }
                next_commit = Instant::now() + self.config.commit_interval;
            }
        }
    }

    fn handle(&mut self, command: Command) -> Result<(), PublishError> {
        match command {
            Command::Publish(events) => {
                // The headers' text without allocating, per change.
                let mut stream_buf = [0u8; 32];
                let stream = hex_into(events.stream.as_bytes(), &mut stream_buf);
                let mut time_buf = Uuid::encode_buffer();
                let time: &str = events.time.hyphenated().encode_lower(&mut time_buf);
                let topics = self.topic_names.clone();
                let topic = topics
                    .get(events.topic)
                    .ok_or_else(|| PublishError::Refused("unknown topic index".into()))?;
                for m in &events.messages {
                    let mut headers = OwnedHeaders::new_with_capacity(2 + m.headers.len());
                    for (key, value) in &m.headers {
                        headers = headers.insert(Header {
                            key: key.as_str(),
                            value: Some(value.as_slice()),
                        });
                    }
                    let headers = headers
                        .insert(Header {
                            key: STREAM_HEADER,
                            value: Some(stream),
                        })
                        .insert(Header {
                            key: TIME_HEADER,
                            value: Some(time),
                        });
                    let mut record =
                        BaseRecord::with_opaque_to(topic, opaque(events.topic, events.time_ms))
                            .headers(headers);
                    if let Some(k) = &m.key {
                        record = record.key(k.as_slice());
                    }
                    if let Some(v) = &m.value {
                        record = record.payload(v.as_slice());
                    }
                    self.send(record)?;
                }
                Ok(())
            }
            Command::Checkpoint {
                table,
                generation,
                time,
                record,
                committed,
            } => {
                let streams = serde_json::from_str::<serde_json::Value>(&record.value)
                    .ok()
                    .and_then(|v| v["streams"].as_array().map(Vec::len))
                    .unwrap_or(0);
                self.restarts.groups.insert(
                    record.key.clone(),
                    GroupMark {
                        table,
                        generation,
                        time,
                        streams,
                    },
                );
                self.acks.extend(committed);
                if self.config.group && self.config.transactional_id.is_some() {
                    self.deferred.push((record, time));
                    Ok(())
                } else {
                    self.checkpoint(record)
                }
            }
            Command::Earlier(spans) => {
                add_earlier(&self.deliveries, spans);
                Ok(())
            }
            Command::Generation {
                table,
                generation,
                record,
            } => {
                let entry = self
                    .restarts
                    .tables
                    .entry(table.clone())
                    .or_insert((generation, generation));
                entry.1 = entry.1.max(generation);
                self.restarts
                    .groups
                    .retain(|_, g| g.table != table || g.generation >= generation);
                self.checkpoint(record)
            }
            Command::Record(record) => self.checkpoint(record),
            Command::PublishThen {
                events,
                record,
                handed,
            } => {
                self.handle(Command::Publish(events))?;
                self.checkpoint(record)?;
                let _ = handed.send(());
                Ok(())
            }
            Command::Commit(reply) => {
                let result = self.commit().map_err(|e| self.refine(e));
                // The handles see the failure before the one who asked hears of it (so that
                // the program reports Kafka's error, not the error of what asked).
                if let (Err(e), Some(cell)) = (&result, &self.failure) {
                    record_failure(cell, e);
                }
                let _ = reply.send(result.clone());
                result
            }
        }
    }

    /// A checkpoint-topic record: into the transaction, or held until the events before it
    /// are acknowledged.
    fn checkpoint(&mut self, record: CheckpointRecord) -> Result<(), PublishError> {
        if self.config.transactional_id.is_some() {
            self.send_record(&record)
        } else {
            self.waiting.push(record);
            Ok(())
        }
    }

    fn send_record(&mut self, record: &CheckpointRecord) -> Result<(), PublishError> {
        let topic = self.config.checkpoint_topic.clone();
        let r = BaseRecord::with_opaque_to(&topic, opaque(NOT_AN_EVENT, 0))
            .key(record.key.as_bytes())
            .payload(record.value.as_bytes());
        self.send(r)
    }

    /// Sends one message, waiting while the producer's queue is full.
    fn send(&mut self, mut record: BaseRecord<'_, [u8], [u8], usize>) -> Result<(), PublishError> {
        let deadline = Instant::now() + self.config.kafka_timeout;
        loop {
            match self.producer.send(record) {
                Ok(()) => {
                    self.sent += 1;
                    return Ok(());
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    if Instant::now() >= deadline {
                        return Err(PublishError::Unavailable(format!(
                            "the producer's queue stayed full for {:?} (is Kafka reachable?)",
                            self.config.kafka_timeout
                        )));
                    }
                    self.check_failure()?;
                    self.producer.poll(Duration::from_millis(5));
                    record = r;
                }
                Err((e, r)) => {
                    return Err(PublishError::from_kafka(
                        &format!("publishing to {}", r.topic),
                        &e,
                    ));
                }
            }
        }
    }

    /// The producer's fatal error, if it has one, rather than `e` (which may be one of its
    /// consequences: messages purged from the queue, a failed flush): a fenced producer
    /// reports the fencing. A fatal error is for good.
    fn refine(&self, e: PublishError) -> PublishError {
        match self.producer.client().fatal_error() {
            Some((code, reason)) => PublishError::Refused(format!(
                "the Kafka producer failed for good ({code}): {reason}"
            )),
            None => e,
        }
    }

    fn check_failure(&self) -> Result<(), PublishError> {
        let d = self
            .deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &d.failure {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Waits for every message sent to be acknowledged, then commits the transaction with
    /// its replay record (transactions) or sends the checkpoints held (at least once).
    fn commit(&mut self) -> Result<(), PublishError> {
        self.producer
            .flush(self.config.kafka_timeout)
            .map_err(|e| PublishError::from_kafka("waiting for Kafka to store the events", &e))?;
        self.check_failure()?;
        if self.config.transactional_id.is_some() {
            for (record, time) in std::mem::take(&mut self.deferred) {
                let record = self.with_replay(record, time);
                self.send_record(&record)?;
            }
            let starts = self.replay_starts();
            if self.last_replay.as_ref() != Some(&starts) {
                let record =
                    CheckpointRecord::replay(&self.config.instance, self.watermark(), &starts);
                self.send_record(&record)?;
                self.last_replay = Some(starts);
            }
            self.commit_transaction()?;
            self.producer
                .begin_transaction()
                .map_err(|e| PublishError::from_kafka("beginning a transaction", &e))?;
        } else {
            for record in std::mem::take(&mut self.waiting) {
                self.send_record(&record)?;
            }
            self.producer
                .flush(self.config.kafka_timeout)
                .map_err(|e| PublishError::from_kafka("writing the checkpoints", &e))?;
            self.check_failure()?;
        }
        self.sent = 0;
        for ack in self.acks.drain(..) {
            let _ = ack.send(());
        }
        Ok(())
    }

    /// A group member's checkpoint record with, per event partition, the offset from which
    /// on every event of a change at or after `time_ms` lies (as far as this program's
    /// deliveries and the events it read back tell; every message sent is acknowledged).
    fn with_replay(&self, record: CheckpointRecord, time_ms: i64) -> CheckpointRecord {
        let d = self
            .deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut starts: Vec<ReplayStart> = d
            .ledger
            .iter()
            .filter_map(|((topic, partition), ledger)| {
                Some(ReplayStart {
                    topic: self.config.topics.get(*topic)?.clone(),
                    partition: *partition,
                    offset: ledger.first_at_or_after(time_ms),
                })
            })
            .collect();
        starts.sort();
        record.with_replay(&starts)
    }

    fn commit_transaction(&mut self) -> Result<(), PublishError> {
        let deadline = Instant::now() + self.config.kafka_timeout;
        loop {
            match self.producer.commit_transaction(self.config.kafka_timeout) {
                Ok(()) => return Ok(()),
                Err(KafkaError::Transaction(e))
                    if e.is_retriable() && Instant::now() < deadline =>
                {
                    continue;
                }
                Err(e) => {
                    if let KafkaError::Transaction(t) = &e
                        && t.txn_requires_abort()
                    {
                        // Nothing of this transaction is visible; the program stops and a
                        // restart publishes it again.
                        let _ = self.producer.abort_transaction(self.config.kafka_timeout);
                    }
                    return Err(PublishError::from_kafka("committing a transaction", &e));
                }
            }
        }
    }

    fn watermark(&self) -> i64 {
        self.restarts.watermark(&*self.streams_read)
    }

    /// Where a restart reads each event partition again.
    fn replay_starts(&mut self) -> Vec<ReplayStart> {
        let watermark = self.watermark();
        let mut d = self
            .deliveries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut starts: Vec<ReplayStart> = d
            .ledger
            .iter_mut()
            .filter_map(|((topic, partition), ledger)| {
                let offset = ledger.replay_from(watermark);
                let name = self.config.topics.get(*topic)?;
                Some(ReplayStart {
                    topic: name.clone(),
                    partition: *partition,
                    offset,
                })
            })
            .collect();
        starts.sort();
        starts
    }
}

/// `bytes` (at most 16) in lower-case hex, in `buf`.
fn hex_into<'b>(bytes: &[u8], buf: &'b mut [u8; 32]) -> &'b str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = bytes.len().min(16);
    for (i, b) in bytes[..n].iter().enumerate() {
        buf[2 * i] = DIGITS[usize::from(b >> 4)];
        buf[2 * i + 1] = DIGITS[usize::from(b & 15)];
    }
    // Only ASCII hex digits were written.
    std::str::from_utf8(&buf[..2 * n]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_keeps_every_event_at_or_after_the_watermark() {
        let mut ledger = PartitionLedger::default();
        // Four full blocks; times go up, with a late change (time 5) inside the last one.
        let mut offset = 100;
        for block in 0..4i64 {
            for i in 0..i64::from(LEDGER_BLOCK) {
                let time = if block == 3 && i == 10 {
                    5
                } else {
                    block * 10_000 + i
                };
                ledger.record(offset, time);
                offset += 1;
            }
        }
        let block = i64::from(LEDGER_BLOCK);
        assert_eq!(ledger.replay_from(i64::MIN), 100);
        // Block 0's latest time is 1023: a watermark past it drops it.
        assert_eq!(ledger.replay_from(2_000), 100 + block);
        // The last block's latest time (31023) is at or after the watermark: it is kept
        // whole, the late change in it too.
        assert_eq!(ledger.replay_from(31_000), 100 + 3 * block);
        // Past everything: read again from the next offset (nothing).
        assert_eq!(ledger.replay_from(i64::MAX), offset);
    }

    #[test]
    fn what_an_earlier_run_published_stays_in_the_ledger_until_the_watermark_passes_it() {
        let mut ledger = PartitionLedger::default();
        ledger.blocks.push_front(Block {
            first_offset: 40,
            max_time: 9_000,
            count: LEDGER_BLOCK,
        });
        ledger.next_offset = 40;
        ledger.record(120, 10_000);
        assert_eq!(ledger.replay_from(8_000), 40);
        assert_eq!(ledger.replay_from(9_500), 120);
    }

    #[test]
    fn the_watermark_waits_for_every_stream_of_a_table_to_have_a_checkpoint() {
        let mut r = Restarts::default();
        r.tables.insert("ks.t".into(), (1_000, 500));
        let two_streams = |_: &str| Some(2u64);
        // No checkpoint: the start.
        assert_eq!(r.watermark(&two_streams), 1_000);
        r.groups.insert(
            "g/ks.t/a".into(),
            GroupMark {
                table: "ks.t".into(),
                generation: 500,
                time: 5_000,
                streams: 1,
            },
        );
        // One of two streams saved: still the start.
        assert_eq!(r.watermark(&two_streams), 1_000);
        r.groups.insert(
            "g/ks.t/b".into(),
            GroupMark {
                table: "ks.t".into(),
                generation: 500,
                time: 4_000,
                streams: 1,
            },
        );
        assert_eq!(r.watermark(&two_streams), 4_000);
        // A new generation: its streams start at the generation's start until saved.
        r.tables.insert("ks.t".into(), (1_000, 9_000));
        assert_eq!(r.watermark(&two_streams), 9_000);
        // Unknown stream count: never past the start.
        let unknown = |_: &str| None;
        r.tables.insert("ks.t".into(), (1_000, 500));
        assert_eq!(r.watermark(&unknown), 1_000);
    }

    #[test]
    fn opaque_packs_the_time_and_the_topic() {
        let o = opaque(3, 1_764_000_000_000);
        assert_eq!(o & 0xFFFF, 3);
        assert_eq!((o >> 16) as i64, 1_764_000_000_000);
        let mut buf = [0u8; 32];
        assert_eq!(hex_into(&[0, 0xab, 0xff], &mut buf), "00abff");
        assert_eq!(hex_into(&[0x12; 16], &mut buf), "12".repeat(16));
    }
}
