//! The reader's progress, kept in a compacted Kafka topic and written in the same transactions
//! as the events it covers.
//!
//! Three kinds of records, each keyed so that compaction keeps the latest of its kind:
//!
//! * `g/<keyspace>.<table>/<group>`: a stream group's checkpoint, as the library saves it
//!   ([`scylla_cdc::Checkpoint`]: every change of these streams before `time` was published);
//! * `n/<keyspace>.<table>`: the generation the table's reader is in;
//! * `s/<keyspace>.<table>`: where the table's reading started (written before anything is
//!   published, so that a restart before the first checkpoint starts there too);
//! * `r/<instance>`: where, in each partition of the event topics, the events that a restart
//!   reads again begin (see [`crate::produced`]);
//! * `snap/<keyspace>.<table>` and `snap/<keyspace>.<table>/<range>`: a `--snapshot`'s time
//!   and the progress of each of its token ranges ([`crate::snapshot`]).
//!
//! Values are small JSON objects (times in milliseconds since the epoch, stream ids in hex).
//! [`SavedProgress::load`] reads the topic to its end at start; [`crate::saver`] is the
//! library's checkpoint saver on top of it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use chrono::{DateTime, TimeZone, Utc};
use rdkafka::Message;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use scylla_cdc::{Checkpoint, GenerationTimestamp, StreamID};
use serde_json::{Value, json};

/// Header with the change's stream id (32 hex digits) on every event.
pub const STREAM_HEADER: &str = "scylla.stream";
/// Header with the change's `cdc$time` (a timeuuid, text) on every event.
pub const TIME_HEADER: &str = "scylla.time";

/// One checkpoint record to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The record's key (see the module docs).
    pub key: String,
    /// Its JSON value.
    pub value: String,
}

/// A stream group's progress, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupProgressRecord {
    /// `keyspace.table`.
    pub table: String,
    /// The generation (ms).
    pub generation: i64,
    /// Every change before this time (ms) was published.
    pub time: i64,
    /// The group's streams.
    pub streams: Vec<StreamID>,
}

/// Where a restart starts reading one event partition again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReplayStart {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The first offset to read again.
    pub offset: i64,
}

pub(crate) fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_millis(ms: i64) -> anyhow::Result<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .ok_or_else(|| anyhow!("time {ms} ms is out of range"))
}

/// FNV-1a of the group's streams: a short, stable name for the group in its record's key.
fn group_name(streams: &[StreamID]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for s in streams {
        for b in s.as_bytes() {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

fn stream_hex(s: &StreamID) -> String {
    let mut out = String::with_capacity(32);
    for b in s.as_bytes() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Parses 32 hex digits into a stream id.
pub fn parse_stream_hex(text: &str) -> Option<StreamID> {
    if text.len() != 32 || !text.is_ascii() {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(StreamID::from(bytes))
}

impl CheckpointRecord {
    /// The record of a group's checkpoint.
    pub fn group(table: &str, checkpoint: &Checkpoint) -> Self {
        let streams: Vec<String> = checkpoint.stream_ids.iter().map(stream_hex).collect();
        Self {
            key: format!("g/{table}/{}", group_name(&checkpoint.stream_ids)),
            value: json!({
                "table": table,
                "generation": millis(checkpoint.generation.timestamp),
                "time": millis(checkpoint.timestamp),
                "streams": streams,
            })
            .to_string(),
        }
    }

    /// The record of the generation a table's reader entered.
    pub fn generation(table: &str, generation: &GenerationTimestamp) -> Self {
        Self {
            key: format!("n/{table}"),
            value: json!({"table": table, "generation": millis(generation.timestamp)}).to_string(),
        }
    }

    /// The record of where a table's reading started.
    pub fn start(table: &str, start: DateTime<Utc>) -> Self {
        Self {
            key: format!("s/{table}"),
            value: json!({"table": table, "start": millis(start)}).to_string(),
        }
    }

    /// This (group checkpoint) record with `replay`: where, in each event partition, the
    /// events of changes at or after its time begin (written by members of a consumer group,
    /// for the member that takes the streams over).
    pub fn with_replay(mut self, starts: &[ReplayStart]) -> Self {
        if let Ok(mut v) = serde_json::from_str::<Value>(&self.value) {
            v["replay"] = Value::Array(starts_json(starts));
            self.value = v.to_string();
        }
        self
    }

    /// The record of where a restart of `instance` reads the event partitions again.
    pub fn replay(instance: &str, watermark_ms: i64, starts: &[ReplayStart]) -> Self {
        let partitions = starts_json(starts);
        Self {
            key: format!("r/{instance}"),
            value: json!({"watermark": watermark_ms, "partitions": partitions}).to_string(),
        }
    }
}

/// The replay starts of one checkpoint record, shared by its streams.
pub type SharedStarts = Arc<Vec<ReplayStart>>;

/// Replay starts as JSON: `[[topic, partition, offset], ...]`.
fn starts_json(starts: &[ReplayStart]) -> Vec<Value> {
    starts
        .iter()
        .map(|s| json!([s.topic, s.partition, s.offset]))
        .collect()
}

/// Replay starts from their JSON (`None` if malformed).
fn parse_starts(v: &Value) -> Option<Vec<ReplayStart>> {
    let mut starts = Vec::new();
    for p in v.as_array()? {
        starts.push(ReplayStart {
            topic: p[0].as_str()?.to_owned(),
            partition: i32::try_from(p[1].as_i64()?).ok()?,
            offset: p[2].as_i64()?,
        });
    }
    Some(starts)
}

/// Everything read back from the checkpoint topic at start.
#[derive(Debug, Default, Clone)]
pub struct SavedProgress {
    /// Per `keyspace.table`: each stream's checkpoint (ms), the latest of the groups that
    /// saved it.
    pub streams: HashMap<String, HashMap<StreamID, i64>>,
    /// Per `keyspace.table`: the generation its reader last entered (ms).
    pub generations: HashMap<String, i64>,
    /// Per `keyspace.table`: where its reading started (ms).
    pub starts: HashMap<String, i64>,
    /// Per `keyspace.table`, by record key: each group's generation (ms), checkpoint (ms)
    /// and number of streams.
    pub groups: HashMap<String, (String, i64, i64, usize)>,
    /// Per instance: where its restart reads the event partitions again.
    pub replay: HashMap<String, Vec<ReplayStart>>,
    /// How many records were read.
    pub records: u64,
    /// The `--snapshot`s' records (`snap/…`, [`crate::snapshot`]).
    pub snapshots: SavedSnapshots,
    /// Per `keyspace.table`, per stream: the replay starts of the record that holds its
    /// checkpoint (`None`: that record has none, it was not written by a group member).
    pub stream_replay: HashMap<String, HashMap<StreamID, Option<SharedStarts>>>,
    /// Per partition of the checkpoint topic: where the next read continues.
    pub next_offsets: HashMap<i32, i64>,
}

impl SavedProgress {
    /// Applies one record (a later record of a key replaces an earlier one; a tombstone
    /// removes it).
    pub fn apply(&mut self, key: &str, value: Option<&[u8]>) -> anyhow::Result<()> {
        self.records += 1;
        let Some(value) = value else {
            if let Some(instance) = key.strip_prefix("r/") {
                self.replay.remove(instance);
            }
            return Ok(());
        };
        let v: Value = serde_json::from_slice(value)
            .with_context(|| format!("checkpoint record {key:?} is not JSON"))?;
        let bad = || anyhow!("checkpoint record {key:?} has an unexpected shape: {v}");
        if key.starts_with("g/") {
            let table = v["table"].as_str().ok_or_else(bad)?.to_owned();
            let time = v["time"].as_i64().ok_or_else(bad)?;
            let generation = v["generation"].as_i64().ok_or_else(bad)?;
            let ids = v["streams"].as_array().ok_or_else(bad)?;
            let replay = match v.get("replay") {
                None => None,
                Some(r) => Some(Arc::new(parse_starts(r).ok_or_else(bad)?)),
            };
            self.groups
                .insert(key.to_owned(), (table.clone(), generation, time, ids.len()));
            let replays = self.stream_replay.entry(table.clone()).or_default();
            let streams = self.streams.entry(table).or_default();
            for s in ids {
                let id = s.as_str().and_then(parse_stream_hex).ok_or_else(bad)?;
                let at = streams.entry(id).or_insert(time);
                if time >= *at {
                    *at = time;
                    replays.insert(id, replay.clone());
                }
            }
        } else if key.starts_with("n/") {
            let table = v["table"].as_str().ok_or_else(bad)?.to_owned();
            let generation = v["generation"].as_i64().ok_or_else(bad)?;
            let at = self.generations.entry(table).or_insert(generation);
            *at = (*at).max(generation);
        } else if key.starts_with("s/") {
            let table = v["table"].as_str().ok_or_else(bad)?.to_owned();
            let start = v["start"].as_i64().ok_or_else(bad)?;
            self.starts.insert(table, start);
        } else if let Some(instance) = key.strip_prefix("r/") {
            let starts = parse_starts(&v["partitions"]).ok_or_else(bad)?;
            self.replay.insert(instance.to_owned(), starts);
        } else if key.starts_with("snap/") {
            self.snapshots.apply(key, &v)?;
        }
        // Other keys: written by a later version; ignored.
        Ok(())
    }

    /// Reads the checkpoint topic from its beginning to its end, committed records only.
    ///
    /// Blocking; call it from a blocking thread. The end is the topic's high watermark when
    /// the read begins ([`ReadBack`]), so an open transaction of another producer is waited
    /// for (at most `timeout`): what it holds, and what others committed after it, is read
    /// once it is committed or aborted.
    pub fn load(readback: &ReadBack, topic: &str, timeout: Duration) -> anyhow::Result<Self> {
        let mut progress = SavedProgress::default();
        progress.refresh(readback, topic, timeout)?;
        Ok(progress)
    }

    /// Reads the records written since the last read (or load) to the topic's end, committed
    /// records only (as [`SavedProgress::load`]).
    pub fn refresh(
        &mut self,
        readback: &ReadBack,
        topic: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        let partitions: Vec<i32> = loop {
            let metadata = readback
                .committed
                .fetch_metadata(Some(topic), timeout)
                .with_context(|| format!("reading the metadata of checkpoint topic {topic}"))?;
            let listed = metadata.topics().iter().find(|t| t.name() == topic);
            let error = listed.and_then(|t| t.error());
            match listed {
                Some(t) if error.is_none() && !t.partitions().is_empty() => {
                    break t.partitions().iter().map(|p| p.id()).collect();
                }
                _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
                _ => anyhow::bail!("checkpoint topic {topic} is not available ({error:?})"),
            }
        };
        let from: Vec<(String, i32, i64)> = partitions
            .iter()
            .map(|p| {
                let at = self.next_offsets.get(p).copied().unwrap_or(0);
                (topic.to_owned(), *p, at)
            })
            .collect();
        read_partitions(readback, from, timeout, |message| {
            let key = message
                .key()
                .map(String::from_utf8_lossy)
                .unwrap_or_default()
                .into_owned();
            self.apply(&key, message.payload())?;
            let next = self.next_offsets.entry(message.partition()).or_insert(0);
            *next = (*next).max(message.offset() + 1);
            Ok(())
        })?;
        Ok(())
    }

    /// Where `table` (`keyspace.table`) started reading, if saved.
    pub fn start_of(&self, table: &str) -> anyhow::Result<Option<DateTime<Utc>>> {
        self.starts
            .get(table)
            .map(|ms| from_millis(*ms))
            .transpose()
    }

    /// The earliest replay start of each event partition, over every instance.
    pub fn replay_starts(&self) -> Vec<ReplayStart> {
        let mut earliest: HashMap<(String, i32), i64> = HashMap::new();
        for start in self.replay.values().flatten() {
            let at = earliest
                .entry((start.topic.clone(), start.partition))
                .or_insert(start.offset);
            *at = (*at).min(start.offset);
        }
        let mut starts: Vec<ReplayStart> = earliest
            .into_iter()
            .map(|((topic, partition), offset)| ReplayStart {
                topic,
                partition,
                offset,
            })
            .collect();
        starts.sort();
        starts
    }
}

/// The two consumers a read back needs: one that reads (`read_committed`: records of open or
/// aborted transactions are never handed over) and one that says where a partition ends.
///
/// The end is the high watermark, records of open transactions included: under
/// `read_committed` librdkafka's watermark query answers the last stable offset instead,
/// which an open transaction holds back, so that everything committed after it would
/// silently be left out (a member killed with an open transaction, and never fenced, hid
/// every later checkpoint from the members that started after it). Reading to the high
/// watermark waits for every transaction begun before the read to be committed or aborted.
pub struct ReadBack {
    committed: BaseConsumer,
    ends: BaseConsumer,
}

impl ReadBack {
    /// The read-back consumers of a client configuration (`group.id` and the like set; the
    /// isolation levels are set here).
    pub fn create(config: &ClientConfig) -> rdkafka::error::KafkaResult<Self> {
        let mut committed = config.clone();
        committed.set("isolation.level", "read_committed");
        let mut ends = config.clone();
        ends.set("isolation.level", "read_uncommitted");
        Ok(Self {
            committed: committed.create()?,
            ends: ends.create()?,
        })
    }
}

/// Reads each `(topic, partition, from offset)` to its high watermark as it is when the read
/// begins, committed records only ([`ReadBack`]), handing every message to `each`.
pub fn read_partitions(
    readback: &ReadBack,
    partitions: impl IntoIterator<Item = (String, i32, i64)>,
    timeout: Duration,
    mut each: impl FnMut(&rdkafka::message::BorrowedMessage<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let consumer = &readback.committed;
    let mut assignment = TopicPartitionList::new();
    // (topic, partition) -> the offset reading must reach.
    let mut ends: HashMap<(String, i32), i64> = HashMap::new();
    let deadline = Instant::now() + timeout;
    for (topic, partition, from) in partitions {
        // A topic created a moment ago may have no leader yet: retried until the deadline.
        let (low, high) = loop {
            match readback
                .ends
                .fetch_watermarks(&topic, partition, Duration::from_secs(5))
            {
                Ok(w) => break w,
                Err(e) if Instant::now() < deadline && is_transient(&e) => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => {
                    return Err(anyhow!(e))
                        .with_context(|| format!("reading the offsets of {topic}/{partition}"));
                }
            }
        };
        let from = from.max(low);
        if from >= high {
            continue;
        }
        assignment
            .add_partition_offset(&topic, partition, Offset::Offset(from))
            .with_context(|| format!("assigning {topic}/{partition}"))?;
        ends.insert((topic, partition), high);
    }
    if ends.is_empty() {
        return Ok(());
    }
    consumer
        .assign(&assignment)
        .context("assigning the partitions to read back")?;
    while !ends.is_empty() {
        let now = Instant::now();
        if now >= deadline {
            let left: Vec<String> = ends.keys().map(|(t, p)| format!("{t}/{p}")).collect();
            anyhow::bail!(
                "reading back {} did not reach its end within {:?} (an open transaction of \
                 another producer holds it?)",
                left.join(", "),
                timeout
            );
        }
        match consumer.poll(Duration::from_millis(200).min(deadline - now)) {
            None => {
                // The end may lie past the last record handed over: control records
                // (transaction markers) and aborted records occupy offsets too. Ask where
                // reading is.
                retire_reached(consumer, &mut ends)?;
            }
            Some(Err(e)) => return Err(anyhow!(e).context("reading back a partition")),
            Some(Ok(message)) => {
                let key = (message.topic().to_owned(), message.partition());
                each(&message)?;
                if let Some(end) = ends.get(&key)
                    && message.offset() + 1 >= *end
                {
                    ends.remove(&key);
                }
            }
        }
    }
    consumer
        .unassign()
        .context("unassigning the partitions read back")?;
    Ok(())
}

/// Errors of a cluster that is settling (a new topic without a leader yet, a broker that is
/// starting or moving a partition, a request that timed out): worth retrying.
pub fn is_transient(e: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::error::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::NotLeaderForPartition
                | C::LeaderNotAvailable
                | C::UnknownTopicOrPartition
                | C::UnknownPartition
                | C::UnknownTopic
                | C::RequestTimedOut
                | C::OperationTimedOut
                | C::BrokerTransportFailure
                | C::AllBrokersDown
                | C::BrokerNotAvailable
                | C::NetworkException
                | C::CoordinatorLoadInProgress
                | C::CoordinatorNotAvailable
                | C::NotCoordinator
                | C::MessageTimedOut
        )
    )
}

/// Drops from `ends` the partitions whose position reached their end (only control records
/// were left).
fn retire_reached(
    consumer: &BaseConsumer,
    ends: &mut HashMap<(String, i32), i64>,
) -> anyhow::Result<()> {
    let positions = consumer.position().context("asking the read position")?;
    for element in positions.elements() {
        let key = (element.topic().to_owned(), element.partition());
        if let (Some(end), Offset::Offset(at)) = (ends.get(&key), element.offset())
            && at >= *end
        {
            ends.remove(&key);
        }
    }
    Ok(())
}

/// The stream of snapshot events (a snapshot's `ChangeEvents::stream`, header `scylla.stream`):
/// all zeros, never a real stream (whose version, the low four bits, is 1).
pub fn snapshot_stream() -> StreamID {
    StreamID::from([0u8; 16])
}

/// Whether `stream` is the [`snapshot_stream`] (an event of a snapshot, not of a change).
pub fn is_snapshot_stream(stream: &StreamID) -> bool {
    stream.as_bytes().iter().all(|b| *b == 0)
}

/// One range's saved progress.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeProgress {
    /// Every row of the range with a token up to this one is published (`None`: none yet).
    pub after: Option<i64>,
    /// Every row of the range is published.
    pub done: bool,
    /// Snapshot events published for the range so far.
    pub events: u64,
}

/// One table's saved snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedSnapshot {
    /// T (ms since the epoch), if the `snap/` record was read.
    pub time_ms: Option<i64>,
    /// The boundary B (µs since the epoch).
    pub boundary_us: i64,
    /// How many token ranges the ring is split into.
    pub ranges: u32,
    /// Every range is published.
    pub done: bool,
    /// By range index.
    pub progress: HashMap<u32, RangeProgress>,
}

/// What the checkpoint topic says about snapshots (records `snap/…`), per `keyspace.table`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SavedSnapshots {
    /// By `keyspace.table`.
    pub tables: HashMap<String, SavedSnapshot>,
}

impl SavedSnapshots {
    /// Applies one `snap/…` record (a later record of a key replaces an earlier one).
    pub fn apply(&mut self, key: &str, v: &Value) -> anyhow::Result<()> {
        let bad = || anyhow!("checkpoint record {key:?} has an unexpected shape: {v}");
        let table = v["table"].as_str().ok_or_else(bad)?.to_owned();
        let saved = self.tables.entry(table).or_default();
        let rest = key.strip_prefix("snap/").ok_or_else(bad)?;
        if rest.contains('/') {
            let index = u32::try_from(v["range"].as_u64().ok_or_else(bad)?).map_err(|_| bad())?;
            let after = match &v["after"] {
                Value::Null => None,
                a => Some(a.as_i64().ok_or_else(bad)?),
            };
            saved.progress.insert(
                index,
                RangeProgress {
                    after,
                    done: v["done"].as_bool().ok_or_else(bad)?,
                    events: v["events"].as_u64().unwrap_or(0),
                },
            );
        } else {
            saved.time_ms = Some(v["time"].as_i64().ok_or_else(bad)?);
            saved.boundary_us = v["boundary"].as_i64().ok_or_else(bad)?;
            saved.ranges = u32::try_from(v["ranges"].as_u64().ok_or_else(bad)?)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(bad)?;
            saved.done = v["done"].as_bool().ok_or_else(bad)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(n: u8) -> StreamID {
        StreamID::from([n; 16])
    }

    #[test]
    fn records_read_back_to_the_latest_progress_of_each_stream() {
        let generation = GenerationTimestamp::new(from_millis(1_000).unwrap());
        let first = Checkpoint::new(
            from_millis(5_000).unwrap(),
            vec![stream(1), stream(2)],
            generation,
        );
        let later = Checkpoint::new(
            from_millis(7_000).unwrap(),
            vec![stream(1), stream(2)],
            generation,
        );
        let other = Checkpoint::new(from_millis(6_000).unwrap(), vec![stream(3)], generation);
        let mut saved = SavedProgress::default();
        for cp in [&first, &later, &other] {
            let r = CheckpointRecord::group("ks.t", cp);
            saved.apply(&r.key, Some(r.value.as_bytes())).unwrap();
        }
        let g = CheckpointRecord::generation("ks.t", &generation);
        saved.apply(&g.key, Some(g.value.as_bytes())).unwrap();
        let s = CheckpointRecord::start("ks.t", from_millis(900).unwrap());
        saved.apply(&s.key, Some(s.value.as_bytes())).unwrap();
        assert_eq!(
            saved.start_of("ks.t").unwrap(),
            Some(from_millis(900).unwrap())
        );
        assert_eq!(saved.start_of("ks.other").unwrap(), None);
        assert_eq!(saved.groups.len(), 2);
        let streams = &saved.streams["ks.t"];
        assert_eq!(streams[&stream(1)], 7_000);
        assert_eq!(streams[&stream(2)], 7_000);
        assert_eq!(streams[&stream(3)], 6_000);
        assert_eq!(saved.generations["ks.t"], 1_000);
        // The same group's records share a key: compaction keeps only the latest.
        assert_eq!(
            CheckpointRecord::group("ks.t", &first).key,
            CheckpointRecord::group("ks.t", &later).key
        );
        assert_ne!(
            CheckpointRecord::group("ks.t", &first).key,
            CheckpointRecord::group("ks.t", &other).key
        );
    }

    #[test]
    fn replay_starts_take_the_earliest_offset_of_every_instance() {
        let a = CheckpointRecord::replay(
            "a",
            10,
            &[
                ReplayStart {
                    topic: "p.ks.t".into(),
                    partition: 0,
                    offset: 40,
                },
                ReplayStart {
                    topic: "p.ks.t".into(),
                    partition: 1,
                    offset: 7,
                },
            ],
        );
        let b = CheckpointRecord::replay(
            "b",
            10,
            &[ReplayStart {
                topic: "p.ks.t".into(),
                partition: 0,
                offset: 30,
            }],
        );
        let mut saved = SavedProgress::default();
        for r in [&a, &b] {
            saved.apply(&r.key, Some(r.value.as_bytes())).unwrap();
        }
        assert_eq!(
            saved.replay_starts(),
            vec![
                ReplayStart {
                    topic: "p.ks.t".into(),
                    partition: 0,
                    offset: 30
                },
                ReplayStart {
                    topic: "p.ks.t".into(),
                    partition: 1,
                    offset: 7
                },
            ]
        );
        saved.apply("r/b", None).unwrap();
        assert_eq!(saved.replay_starts()[0].offset, 40);
    }

    #[test]
    fn a_malformed_record_is_an_error_not_a_panic() {
        let mut saved = SavedProgress::default();
        assert!(saved.apply("g/ks.t/x", Some(b"not json")).is_err());
        assert!(
            saved
                .apply("g/ks.t/x", Some(br#"{"table":"ks.t"}"#))
                .is_err()
        );
        assert!(
            saved
                .apply(
                    "g/ks.t/x",
                    Some(br#"{"table":"ks.t","time":1,"generation":1,"streams":["zz"]}"#)
                )
                .is_err()
        );
        assert!(
            saved
                .apply("r/a", Some(br#"{"partitions":[[1,2,3]]}"#))
                .is_err()
        );
        // A key of a later version is ignored.
        saved.apply("x/other", Some(b"{}")).unwrap();
    }

    #[test]
    fn stream_ids_round_trip_through_hex() {
        let s = StreamID::from([0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff]);
        assert_eq!(parse_stream_hex(&stream_hex(&s)), Some(s));
        assert_eq!(parse_stream_hex("zz"), None);
        assert_eq!(parse_stream_hex(&"é".repeat(16)), None);
    }
}
