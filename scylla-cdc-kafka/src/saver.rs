//! The library's [`CDCCheckpointSaver`] for the program: loads answer from the progress read
//! back at start ([`SavedProgress`]), saves go to the publisher, which writes them into the
//! transaction after the events they cover.
//!
//! # In a consumer group
//!
//! A member ([`GroupLoads`]) starts and stops reading units while it runs, and other members
//! publish too, so its loads read the checkpoint topic again, to its end, each time; each
//! member has its own `transactional.id` (`<id>.<member>`). Exactly once across hand-overs:
//!
//! * a member hands a unit over only after its last checkpoint is saved, and a save returns
//!   once the transaction holding it committed (a save whose commit failed never returns:
//!   the publisher has failed, the program stops, and its readers are aborted, so the unit's
//!   lease runs out instead);
//! * a member that takes over units whose lease ran out first fences their previous owner
//!   ([`CDCCheckpointSaver::taking_over`]: `init_transactions` with its `transactional.id`
//!   aborts its open transaction, and makes any later commit of it fail), so nothing of it
//!   becomes visible after the taker read the checkpoints;
//! * before loading, the member commits its own open transaction; it then reads the
//!   checkpoint topic to its end (every transaction begun before is finished or aborted by
//!   then), and reads the event partitions back from where the streams' checkpoint records
//!   say the events after them begin; the consumers skip the changes found.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseProducer, Producer};
use scylla_cdc::{CDCCheckpointSaver, Checkpoint, GenerationTimestamp, StreamID};
use tokio::sync::oneshot;

use crate::args::member_transactional_id;
use crate::checkpoint::{
    CheckpointRecord, ReadBack, ReplayStart, SavedProgress, from_millis, millis,
};
use crate::produced::{Produced, PublishedSet};
use crate::publish::{Command, PublisherHandle};

/// What a consumer-group member's saver needs to load units while it runs.
pub struct GroupLoads {
    /// The checkpoint topic.
    pub checkpoint_topic: String,
    /// The event topics, by index.
    pub topics: Vec<String>,
    /// The client configuration (bootstrap servers, `-X` options), to fence with.
    pub client: ClientConfig,
    /// The `transactional.id` a member's is made of (`<id>.<member>`); `None`: no
    /// transactions (at least once: nothing to fence or read back).
    pub transactional_base: Option<String>,
    /// Longest a read or a fence may take.
    pub timeout: Duration,
    /// Per `keyspace.table`: its event topic and the changes its consumers skip.
    pub published: std::collections::HashMap<String, (String, Arc<PublishedSet>)>,
    /// The read-back consumers and the progress read so far.
    pub state: Mutex<(ReadBack, SavedProgress)>,
}

impl GroupLoads {
    /// Fences `member`'s producer: its open transaction is aborted, its later commits fail.
    /// Blocking.
    fn fence(&self, member: &str) -> anyhow::Result<()> {
        let Some(base) = &self.transactional_base else {
            return Ok(());
        };
        let id = member_transactional_id(base, member);
        let mut config = self.client.clone();
        config
            .set("transactional.id", &id)
            .set("enable.idempotence", "true");
        let producer: BaseProducer = config.create()?;
        producer
            .init_transactions(self.timeout)
            .map_err(|e| anyhow::anyhow!("fencing {id}: {e}"))?;
        tracing::info!(member = %member, transactional_id = %id, "fenced a member whose units this one takes over");
        Ok(())
    }

    /// The checkpoints of `streams` of `table` as the topic holds them now, and the changes
    /// of those streams published after them. Blocking.
    fn load(
        &self,
        table: &str,
        streams: &[StreamID],
    ) -> anyhow::Result<(Vec<Option<i64>>, Produced)> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (consumer, progress) = &mut *state;
        progress.refresh(consumer, &self.checkpoint_topic, self.timeout)?;
        let times: Vec<Option<i64>> = streams
            .iter()
            .map(|s| progress.streams.get(table).and_then(|m| m.get(s)).copied())
            .collect();
        if self.transactional_base.is_none() {
            return Ok((times, Produced::default()));
        }
        // Where the events after each stream's checkpoint begin: its record's replay starts;
        // a stream without (no checkpoint yet, or one written outside a group) falls back to
        // every instance's replay record, which covers everything after its checkpoints.
        let mut earliest: std::collections::HashMap<(String, i32), i64> = Default::default();
        let mut add = |starts: &[ReplayStart]| {
            for s in starts {
                let at = earliest
                    .entry((s.topic.clone(), s.partition))
                    .or_insert(s.offset);
                *at = (*at).min(s.offset);
            }
        };
        let mut fallback = false;
        for s in streams {
            match progress.stream_replay.get(table).and_then(|m| m.get(s)) {
                Some(Some(starts)) => add(starts),
                _ => fallback = true,
            }
        }
        if fallback {
            add(&progress.replay_starts());
        }
        let starts: Vec<ReplayStart> = earliest
            .into_iter()
            .map(|((topic, partition), offset)| ReplayStart {
                topic,
                partition,
                offset,
            })
            .collect();
        let mut produced = Produced::load(consumer, &starts, self.timeout)?;
        let wanted: HashSet<StreamID> = streams.iter().copied().collect();
        produced.retain_streams(&wanted);
        Ok((times, produced))
    }
}

/// The library's [`CDCCheckpointSaver`] of one table: loads answer from the progress read at
/// start, saves go to the publisher (into the transaction after the events they cover).
pub struct KafkaCheckpoints {
    /// `keyspace.table`.
    table: String,
    keyspace: String,
    saved: Arc<SavedProgress>,
    publisher: PublisherHandle,
    /// A consumer group member's loads (`None`: not in a group).
    group: Option<Arc<GroupLoads>>,
}

impl KafkaCheckpoints {
    /// The saver of `keyspace.table`.
    pub fn new(
        keyspace: &str,
        table: &str,
        saved: Arc<SavedProgress>,
        publisher: PublisherHandle,
    ) -> Self {
        Self {
            table: format!("{keyspace}.{table}"),
            keyspace: keyspace.to_owned(),
            saved,
            publisher,
            group: None,
        }
    }

    /// The saver of a consumer group member.
    pub fn in_group(mut self, group: Arc<GroupLoads>) -> Self {
        self.group = Some(group);
        self
    }

    /// A group member's load: commits its own open transaction, then reads the checkpoints
    /// and the events published after them ([`GroupLoads::load`]).
    async fn load_in_group(
        &self,
        group: &Arc<GroupLoads>,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Vec<Option<DateTime<Utc>>>> {
        // Changes this member published of these streams (a unit it read before) are then
        // committed, and read back like anyone's.
        self.publisher.commit().await?;
        let (g, table, streams) = (group.clone(), self.table.clone(), stream_ids.to_vec());
        let (times, mut produced) =
            tokio::task::spawn_blocking(move || g.load(&table, &streams)).await??;
        let topic_index = |name: &str| group.topics.iter().position(|t| t == name);
        let spans: Vec<((usize, i32), (i64, i64))> = produced
            .partitions
            .iter()
            .filter_map(|((topic, partition), span)| {
                Some(((topic_index(topic)?, *partition), *span))
            })
            .collect();
        if !spans.is_empty() {
            self.publisher.send(Command::Earlier(spans)).await?;
        }
        if let Some((topic, published)) = group.published.get(&self.table) {
            published.extend(produced.take_topic(topic));
        }
        times
            .into_iter()
            .map(|t| t.map(from_millis).transpose())
            .collect()
    }

    fn stream_time(&self, stream: &StreamID) -> anyhow::Result<Option<DateTime<Utc>>> {
        self.saved
            .streams
            .get(&self.table)
            .and_then(|m| m.get(stream))
            .map(|ms| from_millis(*ms))
            .transpose()
    }
}

#[async_trait]
impl CDCCheckpointSaver for KafkaCheckpoints {
    fn for_table(&self, table: &str) -> anyhow::Result<Arc<dyn CDCCheckpointSaver>> {
        let saver = KafkaCheckpoints::new(
            &self.keyspace,
            table,
            self.saved.clone(),
            self.publisher.clone(),
        );
        Ok(Arc::new(match &self.group {
            Some(g) => saver.in_group(g.clone()),
            None => saver,
        }))
    }

    async fn taking_over(&self, previous_owner: &str, _: &[StreamID]) -> anyhow::Result<()> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        let (g, member) = (group.clone(), previous_owner.to_owned());
        tokio::task::spawn_blocking(move || g.fence(&member)).await?
    }

    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        let (committed, answer) = match self.group {
            Some(_) => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        self.publisher
            .send(Command::Checkpoint {
                table: self.table.clone(),
                generation: millis(checkpoint.generation.timestamp),
                time: millis(checkpoint.timestamp),
                record: CheckpointRecord::group(&self.table, checkpoint),
                committed,
            })
            .await?;
        if let Some(answer) = answer
            && answer.await.is_err()
        {
            // The commit failed: the publisher stopped, and with it the program, whose
            // readers are aborted. The save never returns, so that the unit is not handed
            // over with a checkpoint that was not committed (its lease runs out instead).
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    async fn save_new_generation(&self, generation: &GenerationTimestamp) -> anyhow::Result<()> {
        self.publisher
            .send(Command::Generation {
                table: self.table.clone(),
                generation: millis(generation.timestamp),
                record: CheckpointRecord::generation(&self.table, generation),
            })
            .await
    }

    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
        self.saved
            .generations
            .get(&self.table)
            .map(|ms| from_millis(*ms).map(GenerationTimestamp::new))
            .transpose()
    }

    async fn load_last_checkpoint(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Option<DateTime<Utc>>> {
        if self.group.is_some() {
            let times = self.load_stream_checkpoints(stream_ids).await?;
            return Ok(earliest_of(times));
        }
        let mut earliest: Option<DateTime<Utc>> = None;
        for s in stream_ids {
            let Some(t) = self.stream_time(s)? else {
                return Ok(None);
            };
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
        Ok(earliest)
    }

    async fn load_stream_checkpoints(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Vec<Option<DateTime<Utc>>>> {
        if let Some(group) = &self.group {
            return self.load_in_group(group, stream_ids).await;
        }
        stream_ids.iter().map(|s| self.stream_time(s)).collect()
    }
}

/// The earliest of the times, `None` if any is missing (or there is none).
fn earliest_of(times: Vec<Option<DateTime<Utc>>>) -> Option<DateTime<Utc>> {
    let mut earliest: Option<DateTime<Utc>> = None;
    for t in times {
        let t = t?;
        earliest = Some(earliest.map_or(t, |e| e.min(t)));
    }
    earliest
}
