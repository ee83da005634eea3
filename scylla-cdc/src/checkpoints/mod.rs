//! Saving and loading the reader's progress.
//!
//! A [`Checkpoint`] says that every row of some streams before a point in time was handed to
//! the consumer. The reader saves one per stream group after its windows (at most once per
//! `pause_between_saves`), and the generation it is in whenever it enters one. A
//! [`CDCCheckpointSaver`] stores them; [`table::TableBackedCheckpointSaver`] (`table.rs`)
//! stores them in a CQL table that many readers of many tables can share.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::base::cdc_types::{GenerationTimestamp, StreamID};

pub(crate) mod table;

/// Progress of one stream group: every row of `stream_ids` with `cdc$time` before
/// `timestamp` was delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checkpoint {
    /// Rows before this time were delivered (millisecond precision).
    pub timestamp: DateTime<Utc>,
    /// The streams of the group.
    pub stream_ids: Vec<StreamID>,
    /// The generation the streams belong to.
    pub generation: GenerationTimestamp,
}

impl Checkpoint {
    /// A checkpoint of `stream_ids` at `timestamp` in `generation`.
    pub fn new(
        timestamp: DateTime<Utc>,
        stream_ids: Vec<StreamID>,
        generation: GenerationTimestamp,
    ) -> Self {
        Self {
            timestamp,
            stream_ids,
            generation,
        }
    }
}

/// Where a reader keeps its progress. A saver serves one base table; a reader of several
/// tables ([`crate::CDCLogReaderBuilder::tables`]) asks its saver for one view per table with
/// [`CDCCheckpointSaver::for_table`].
///
/// Errors are `anyhow` so that implementations can use any storage. The reader treats a
/// failed save as a warning (the next window saves again) and a failed load as fatal.
#[async_trait]
pub trait CDCCheckpointSaver: Send + Sync {
    /// The saver of the base table `table` (of the same keyspace), keeping that table's
    /// progress apart from every other table's: the stream ids of tables in a vnode keyspace
    /// are the same for every table, so checkpoints must be kept per table.
    ///
    /// Called by [`crate::CDCLogReaderBuilder::build`] once per table when the reader reads
    /// several tables; a reader of one table uses the saver as given and never calls it. A
    /// table with no saved progress yet (e.g. one added to the reader later) starts at the
    /// reader's start time. The default is an error saying that the saver serves one table;
    /// [`TableBackedCheckpointSaver`](table::TableBackedCheckpointSaver) implements it.
    fn for_table(&self, table: &str) -> anyhow::Result<Arc<dyn CDCCheckpointSaver>> {
        anyhow::bail!(
            "this checkpoint saver serves one table and cannot keep the progress of table \
             `{table}` apart (implement CDCCheckpointSaver::for_table to read several tables \
             with one reader)"
        )
    }

    /// The CQL table `(keyspace, table)` the progress is stored in, if it is one: a consumer
    /// group ([`crate::CDCLogReaderBuilder::group`]) keeps its lease table next to it
    /// (`<table>_leases`). The default is `None`.
    fn checkpoint_table(&self) -> Option<(String, String)> {
        None
    }

    /// A member of a consumer group ([`crate::CDCLogReaderBuilder::group`]) is about to
    /// read `stream_ids`, which `previous_owner` read until its lease on them ran out (it
    /// died, or it was cut off or paused for longer than its lease). Called before their
    /// checkpoints are loaded; an error is retried while the leases last, then the units are
    /// left for a later round. The member renews its leases while this call (or a load of the
    /// units' checkpoints) runs: it may take longer than a lease, e.g. to wait for another
    /// system.
    ///
    /// The previous owner has stopped reading them (each reader checks its lease before every
    /// delivery), but what it handed to a consumer may still take effect later where the
    /// consumer's writes are asynchronous: a saver that stores its checkpoints together with
    /// the consumer's output (one transaction of another system) fences the previous owner
    /// here, so that nothing of it becomes visible after the checkpoints are read. The
    /// default does nothing.
    async fn taking_over(
        &self,
        previous_owner: &str,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<()> {
        let _ = (previous_owner, stream_ids);
        Ok(())
    }

    /// Records the progress of a stream group.
    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()>;

    /// Records that the reader entered `generation` (every earlier generation is done).
    async fn save_new_generation(&self, generation: &GenerationTimestamp) -> anyhow::Result<()>;

    /// The last generation saved with [`CDCCheckpointSaver::save_new_generation`].
    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>>;

    /// The saved progress of a stream group: the earliest checkpoint of its streams, or
    /// `None` if any of them has none.
    async fn load_last_checkpoint(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Option<DateTime<Utc>>>;

    /// The saved progress of each of `stream_ids` (same order and length): its last
    /// checkpoint, or `None` if it has none.
    ///
    /// The reader loads progress per stream, because the groups it reads streams in (by
    /// replica) need not be the groups that saved them. The default asks
    /// [`CDCCheckpointSaver::load_last_checkpoint`] for each stream alone.
    async fn load_stream_checkpoints(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Vec<Option<DateTime<Utc>>>> {
        let mut times = Vec::with_capacity(stream_ids.len());
        for stream in stream_ids {
            times.push(
                self.load_last_checkpoint(std::slice::from_ref(stream))
                    .await?,
            );
        }
        Ok(times)
    }
}

/// The earliest of the times, or `None` if the list is empty or any is missing.
pub(crate) fn earliest_of_all(
    times: impl IntoIterator<Item = Option<DateTime<Utc>>>,
) -> Option<DateTime<Utc>> {
    let mut earliest: Option<DateTime<Utc>> = None;
    for t in times {
        let t = t?;
        earliest = Some(earliest.map_or(t, |e| e.min(t)));
    }
    earliest
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    // Never held across `.await`.
    use std::sync::Mutex;

    /// An in-memory saver that records every call.
    #[derive(Default)]
    pub(crate) struct MemorySaver {
        pub(crate) streams: Mutex<HashMap<StreamID, DateTime<Utc>>>,
        pub(crate) generation: Mutex<Option<GenerationTimestamp>>,
        pub(crate) saves: Mutex<Vec<Checkpoint>>,
        pub(crate) generations_saved: Mutex<Vec<GenerationTimestamp>>,
    }

    #[async_trait]
    impl CDCCheckpointSaver for MemorySaver {
        async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
            let mut streams = self
                .streams
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?;
            for s in &checkpoint.stream_ids {
                streams.insert(*s, checkpoint.timestamp);
            }
            drop(streams);
            self.saves
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?
                .push(checkpoint.clone());
            Ok(())
        }

        async fn save_new_generation(
            &self,
            generation: &GenerationTimestamp,
        ) -> anyhow::Result<()> {
            *self
                .generation
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))? = Some(*generation);
            self.generations_saved
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?
                .push(*generation);
            Ok(())
        }

        async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
            Ok(*self
                .generation
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?)
        }

        async fn load_last_checkpoint(
            &self,
            stream_ids: &[StreamID],
        ) -> anyhow::Result<Option<DateTime<Utc>>> {
            let streams = self
                .streams
                .lock()
                .map_err(|_| anyhow::anyhow!("poisoned"))?;
            Ok(earliest_of_all(
                stream_ids.iter().map(|s| streams.get(s).copied()),
            ))
        }
    }

    fn ms(v: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(v).unwrap()
    }

    #[test]
    fn earliest_needs_every_stream() {
        assert_eq!(earliest_of_all([Some(ms(5)), Some(ms(3))]), Some(ms(3)));
        assert_eq!(earliest_of_all([Some(ms(5)), None]), None);
        assert_eq!(earliest_of_all([]), None);
    }

    #[tokio::test]
    async fn memory_saver_roundtrip() {
        let saver = MemorySaver::default();
        let a = StreamID::new([1; 16]);
        let b = StreamID::new([2; 16]);
        let g = GenerationTimestamp::new(ms(0));
        assert_eq!(saver.load_last_checkpoint(&[a]).await.unwrap(), None);
        saver
            .save_checkpoint(&Checkpoint::new(ms(10), vec![a, b], g))
            .await
            .unwrap();
        saver
            .save_checkpoint(&Checkpoint::new(ms(20), vec![b], g))
            .await
            .unwrap();
        assert_eq!(
            saver.load_last_checkpoint(&[a, b]).await.unwrap(),
            Some(ms(10))
        );
        saver.save_new_generation(&g).await.unwrap();
        assert_eq!(saver.load_last_generation().await.unwrap(), Some(g));
    }
}
