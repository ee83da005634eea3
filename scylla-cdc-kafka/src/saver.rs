//! The library's [`CDCCheckpointSaver`] for the program: loads answer from the progress read
//! back at start ([`SavedProgress`]), saves go to the publisher, which writes them into the
//! transaction after the events they cover.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla_cdc::{CDCCheckpointSaver, Checkpoint, GenerationTimestamp, StreamID};

use crate::checkpoint::{CheckpointRecord, SavedProgress, from_millis, millis};
use crate::publish::{Command, PublisherHandle};

/// The library's [`CDCCheckpointSaver`] of one table: loads answer from the progress read at
/// start, saves go to the publisher (into the transaction after the events they cover).
pub struct KafkaCheckpoints {
    /// `keyspace.table`.
    table: String,
    keyspace: String,
    saved: Arc<SavedProgress>,
    publisher: PublisherHandle,
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
        }
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
        Ok(Arc::new(KafkaCheckpoints::new(
            &self.keyspace,
            table,
            self.saved.clone(),
            self.publisher.clone(),
        )))
    }

    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        self.publisher
            .send(Command::Checkpoint {
                table: self.table.clone(),
                generation: millis(checkpoint.generation.timestamp),
                time: millis(checkpoint.timestamp),
                record: CheckpointRecord::group(&self.table, checkpoint),
            })
            .await
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
        stream_ids.iter().map(|s| self.stream_time(s)).collect()
    }
}
