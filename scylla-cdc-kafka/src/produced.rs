//! What a restart must not publish again.
//!
//! A restart reads each stream again from its checkpoint, so it meets again the changes that
//! an earlier run published after that checkpoint. Which ones those were cannot be told from
//! the log alone: with early reads a change that arrived late (after the early read passed
//! its time) may not have been published although later ones were. So the restart reads
//! them back from Kafka: every event carries its change's stream and `cdc$time` in headers,
//! and the replay records of the checkpoint topic (written in each transaction) say from
//! which offset of each event partition on the events of changes at or after the earliest
//! checkpoint lie. Reading those partitions from there to their end (committed events only)
//! gives the set of changes already published; the consumers skip exactly those.

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use rdkafka::message::{Headers, Message};
use scylla_cdc::StreamID;
use uuid::Uuid;

use crate::checkpoint::{
    ReadBack, ReplayStart, STREAM_HEADER, TIME_HEADER, parse_stream_hex, read_partitions,
};

/// The changes already published, per topic.
#[derive(Debug, Default)]
pub struct Produced {
    by_topic: HashMap<String, HashSet<(StreamID, Uuid)>>,
    /// Per partition read back: where reading started and the latest change time (ms) of
    /// its events. A new run keeps these in its replay ledger until its checkpoints pass
    /// them, so that its own replay records still cover what the earlier run published.
    pub partitions: HashMap<(String, i32), (i64, i64)>,
    /// Events read back.
    pub events: u64,
}

impl Produced {
    /// Reads the event partitions back from their replay starts (committed events only).
    /// Blocking.
    pub fn load(
        readback: &ReadBack,
        starts: &[ReplayStart],
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut produced = Produced::default();
        read_partitions(
            readback,
            starts
                .iter()
                .map(|s| (s.topic.clone(), s.partition, s.offset)),
            timeout,
            |message| {
                produced.events += 1;
                let Some(headers) = message.headers() else {
                    return Ok(());
                };
                let mut stream = None;
                let mut time = None;
                for h in headers.iter() {
                    let value = h.value.and_then(|v| std::str::from_utf8(v).ok());
                    match h.key {
                        STREAM_HEADER => stream = value.and_then(parse_stream_hex),
                        TIME_HEADER => time = value.and_then(|v| Uuid::parse_str(v).ok()),
                        _ => {}
                    }
                }
                // Events without both headers were not published by this program; snapshot
                // events are no change (`crate::snapshot`).
                if let (Some(stream), Some(time)) = (stream, time)
                    && !crate::checkpoint::is_snapshot_stream(&stream)
                {
                    let time_ms = time
                        .get_timestamp()
                        .map(|t| {
                            let (secs, nanos) = t.to_unix();
                            secs as i64 * 1000 + i64::from(nanos / 1_000_000)
                        })
                        .unwrap_or(i64::MAX);
                    let entry = produced
                        .partitions
                        .entry((message.topic().to_owned(), message.partition()))
                        .or_insert((message.offset(), time_ms));
                    entry.0 = entry.0.min(message.offset());
                    entry.1 = entry.1.max(time_ms);
                    produced
                        .by_topic
                        .entry(message.topic().to_owned())
                        .or_default()
                        .insert((stream, time));
                }
                Ok(())
            },
        )
        .context("reading back the events published since the checkpoints")?;
        Ok(produced)
    }

    /// The published changes of one topic (empty if none).
    pub fn take_topic(&mut self, topic: &str) -> HashSet<(StreamID, Uuid)> {
        self.by_topic.remove(topic).unwrap_or_default()
    }

    /// Keeps only the changes of `streams` (a group member reads back what concerns the
    /// units it takes).
    pub fn retain_streams(&mut self, streams: &HashSet<StreamID>) {
        for changes in self.by_topic.values_mut() {
            changes.retain(|(s, _)| streams.contains(s));
        }
    }

    /// How many distinct changes were read back.
    pub fn changes(&self) -> usize {
        self.by_topic.values().map(HashSet::len).sum()
    }
}

/// The changes of one table that were published already and must be skipped: read back at
/// start, and (in a consumer group) when units are taken, while consumers check it.
#[derive(Debug, Default)]
pub struct PublishedSet {
    changes: RwLock<HashSet<(StreamID, Uuid)>>,
    /// Whether `changes` has any: the common case (none) needs no lock.
    any: AtomicBool,
}

impl PublishedSet {
    /// A set holding `changes`.
    pub fn new(changes: HashSet<(StreamID, Uuid)>) -> Self {
        let any = AtomicBool::new(!changes.is_empty());
        Self {
            changes: RwLock::new(changes),
            any,
        }
    }

    /// Whether the change of `stream` at `time` was published.
    pub fn contains(&self, stream: StreamID, time: Uuid) -> bool {
        self.any.load(Ordering::Acquire)
            && self
                .changes
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(&(stream, time))
    }

    /// Adds changes read back.
    pub fn extend(&self, changes: HashSet<(StreamID, Uuid)>) {
        if changes.is_empty() {
            return;
        }
        self.changes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(changes);
        self.any.store(true, Ordering::Release);
    }
}
