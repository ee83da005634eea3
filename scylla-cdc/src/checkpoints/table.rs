//! [`TableBackedCheckpointSaver`]: the checkpoints of readers in a CQL table, one partition
//! per reader and base table, each row with a TTL.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;

use super::{CDCCheckpointSaver, Checkpoint, earliest_of_all};
use crate::base::cdc_types::{GenerationTimestamp, StreamID, quote_identifier};
use crate::base::error::CDCError;

/// Default time checkpoint rows live: 7 days.
pub const DEFAULT_CHECKPOINT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// The longest TTL CQL accepts (ScyllaDB and Cassandra refuse `USING TTL` above it): 20 years.
pub const MAX_CQL_TTL: Duration = Duration::from_secs(630_720_000);

/// A checkpoint TTL as `USING TTL` takes it: 0 (no expiry) for zero, else whole seconds
/// rounded up (a sub-second TTL is 1 s, not "forever") and at most [`MAX_CQL_TTL`] (a longer
/// one would make every save fail).
pub(crate) fn cql_ttl_secs(ttl: Duration) -> i32 {
    if ttl.is_zero() {
        return 0;
    }
    let secs = ttl
        .as_secs()
        .saturating_add(u64::from(ttl.subsec_nanos() > 0));
    i32::try_from(secs.min(MAX_CQL_TTL.as_secs())).unwrap_or(i32::MAX)
}

/// The stream id column's value of the generation row.
const GENERATION_ROW: &[u8] = &[0];

/// A [`CDCCheckpointSaver`] backed by a CQL table, created if missing by
/// [`TableBackedCheckpointSaver::new`] (use [`TableBackedCheckpointSaver::existing`] where the
/// reader may not create tables):
///
/// ```text
/// CREATE TABLE <ks>.<table> (
///     reader_name text, keyspace_name text, table_name text,
///     kind text,          -- 'generation' or 'stream'
///     stream_id blob,     -- 0x00 on the generation row
///     time timestamp,     -- progress of the stream (stream rows)
///     generation timestamp,
///     PRIMARY KEY ((reader_name, keyspace_name, table_name), kind, stream_id))
/// ```
///
/// Each reader owns the partition `(reader_name, keyspace_name, table_name)`, so readers of
/// different tables, or several independent readers of one table (give them different
/// [`TableBackedCheckpointSaver::with_reader_name`]s), can share one table. Rows are written
/// with a TTL ([`DEFAULT_CHECKPOINT_TTL`] unless changed), which must exceed the longest time
/// the reader may be down.
///
/// A reader of several tables uses [`CDCCheckpointSaver::for_table`], which gives a saver of
/// the same checkpoint table and reader name in the partition of the other base table: the
/// progress of each table is exactly what a reader of that table alone would keep, so a
/// table can move between a reader of its own and a reader of several tables and resume.
#[derive(Clone)]
pub struct TableBackedCheckpointSaver {
    session: Arc<Session>,
    reader_name: String,
    keyspace: String,
    table: String,
    /// Where checkpoints are stored.
    checkpoint_keyspace: String,
    checkpoint_table: String,
    ttl: Duration,
    insert: PreparedStatement,
    select_generation: PreparedStatement,
    select_stream: PreparedStatement,
}

impl TableBackedCheckpointSaver {
    /// A saver for the reader of `base_keyspace.base_table`, storing its progress in
    /// `checkpoint_keyspace.checkpoint_table` (the keyspace must exist; the table is created
    /// if missing).
    pub async fn new(
        session: Arc<Session>,
        checkpoint_keyspace: &str,
        checkpoint_table: &str,
        base_keyspace: &str,
        base_table: &str,
    ) -> Result<Self, CDCError> {
        let create = Self::create_table_cql(checkpoint_keyspace, checkpoint_table);
        session
            .query_unpaged(create, ())
            .await
            .map_err(|source| CDCError::Query {
                what: format!(
                    "creating the checkpoint table {}.{}",
                    quote_identifier(checkpoint_keyspace),
                    quote_identifier(checkpoint_table)
                ),
                source: Box::new(source),
            })?;
        Self::existing(
            session,
            checkpoint_keyspace,
            checkpoint_table,
            base_keyspace,
            base_table,
        )
        .await
    }

    /// Like [`TableBackedCheckpointSaver::new`], for a checkpoint table that already exists
    /// (created with [`TableBackedCheckpointSaver::create_table_cql`], e.g. by an
    /// administrator): needs no CREATE permission. A missing table is an error.
    pub async fn existing(
        session: Arc<Session>,
        checkpoint_keyspace: &str,
        checkpoint_table: &str,
        base_keyspace: &str,
        base_table: &str,
    ) -> Result<Self, CDCError> {
        let name = format!(
            "{}.{}",
            quote_identifier(checkpoint_keyspace),
            quote_identifier(checkpoint_table)
        );
        let prepare = |text: String| {
            let session = session.clone();
            async move { crate::base::error::prepare(&session, &text).await }
        };
        let key = "reader_name = ? AND keyspace_name = ? AND table_name = ?";
        let insert = prepare(format!(
            "INSERT INTO {name} (reader_name, keyspace_name, table_name, kind, stream_id, time, \
             generation) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?"
        ))
        .await?;
        let select_generation = prepare(format!(
            "SELECT generation FROM {name} WHERE {key} AND kind = 'generation' AND stream_id = ?"
        ))
        .await?;
        let select_stream = prepare(format!(
            "SELECT time FROM {name} WHERE {key} AND kind = 'stream' AND stream_id = ?"
        ))
        .await?;
        Ok(Self {
            session,
            reader_name: "default".to_owned(),
            keyspace: base_keyspace.to_owned(),
            table: base_table.to_owned(),
            checkpoint_keyspace: checkpoint_keyspace.to_owned(),
            checkpoint_table: checkpoint_table.to_owned(),
            ttl: DEFAULT_CHECKPOINT_TTL,
            insert,
            select_generation,
            select_stream,
        })
    }

    /// Sets how long saved rows live (default [`DEFAULT_CHECKPOINT_TTL`]): whole seconds,
    /// rounded up; zero means forever; at most [`MAX_CQL_TTL`] (20 years, CQL's limit: a longer
    /// TTL is saved as that).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Names this reader, so that several readers of one table keep separate progress
    /// (default `"default"`).
    pub fn with_reader_name(mut self, name: impl Into<String>) -> Self {
        self.reader_name = name.into();
        self
    }

    /// The `CREATE TABLE IF NOT EXISTS` statement of a checkpoint table named
    /// `keyspace.table` (identifiers quoted as needed).
    pub fn create_table_cql(keyspace: &str, table: &str) -> String {
        format!(
            "CREATE TABLE IF NOT EXISTS {}.{} (reader_name text, keyspace_name text, \
             table_name text, kind text, stream_id blob, time timestamp, generation timestamp, \
             PRIMARY KEY ((reader_name, keyspace_name, table_name), kind, stream_id))",
            quote_identifier(keyspace),
            quote_identifier(table)
        )
    }

    /// The saved progress of one stream.
    async fn load_stream(&self, stream: &StreamID) -> anyhow::Result<Option<DateTime<Utc>>> {
        let rows = self
            .session
            .execute_unpaged(
                &self.select_stream,
                (
                    &self.reader_name,
                    &self.keyspace,
                    &self.table,
                    &stream.as_bytes()[..],
                ),
            )
            .await?
            .into_rows_result()?;
        let row = rows.maybe_first_row::<(Option<DateTime<Utc>>,)>()?;
        Ok(row.and_then(|(t,)| t))
    }

    fn ttl_secs(&self) -> i32 {
        cql_ttl_secs(self.ttl)
    }

    async fn insert_row(
        &self,
        kind: &str,
        stream_id: &[u8],
        time: Option<DateTime<Utc>>,
        generation: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        self.session
            .execute_unpaged(
                &self.insert,
                (
                    &self.reader_name,
                    &self.keyspace,
                    &self.table,
                    kind,
                    stream_id,
                    time,
                    generation,
                    self.ttl_secs(),
                ),
            )
            .await?;
        Ok(())
    }
}

#[async_trait]
impl CDCCheckpointSaver for TableBackedCheckpointSaver {
    fn for_table(&self, table: &str) -> anyhow::Result<Arc<dyn CDCCheckpointSaver>> {
        let mut view = self.clone();
        view.table = table.to_owned();
        Ok(Arc::new(view))
    }

    fn checkpoint_table(&self) -> Option<(String, String)> {
        Some((
            self.checkpoint_keyspace.clone(),
            self.checkpoint_table.clone(),
        ))
    }

    async fn save_checkpoint(&self, checkpoint: &Checkpoint) -> anyhow::Result<()> {
        try_join_all(checkpoint.stream_ids.iter().map(|s| {
            self.insert_row(
                "stream",
                s.as_bytes(),
                Some(checkpoint.timestamp),
                checkpoint.generation.timestamp,
            )
        }))
        .await?;
        Ok(())
    }

    async fn save_new_generation(&self, generation: &GenerationTimestamp) -> anyhow::Result<()> {
        self.insert_row("generation", GENERATION_ROW, None, generation.timestamp)
            .await
    }

    async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
        let rows = self
            .session
            .execute_unpaged(
                &self.select_generation,
                (
                    &self.reader_name,
                    &self.keyspace,
                    &self.table,
                    GENERATION_ROW,
                ),
            )
            .await?
            .into_rows_result()?;
        let row = rows.maybe_first_row::<(Option<DateTime<Utc>>,)>()?;
        Ok(row.and_then(|(g,)| g).map(GenerationTimestamp::new))
    }

    async fn load_last_checkpoint(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Option<DateTime<Utc>>> {
        Ok(earliest_of_all(
            self.load_stream_checkpoints(stream_ids).await?,
        ))
    }

    async fn load_stream_checkpoints(
        &self,
        stream_ids: &[StreamID],
    ) -> anyhow::Result<Vec<Option<DateTime<Utc>>>> {
        // One read per stream, a bounded number at a time (a generation of a large cluster
        // has thousands of streams).
        let mut times = Vec::with_capacity(stream_ids.len());
        for chunk in stream_ids.chunks(LOAD_CONCURRENCY) {
            times.extend(try_join_all(chunk.iter().map(|s| self.load_stream(s))).await?);
        }
        Ok(times)
    }
}

/// How many stream checkpoints [`TableBackedCheckpointSaver`] reads at once.
const LOAD_CONCURRENCY: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    /// TTLs as `USING TTL` takes them: zero is "no expiry", anything else at least a second
    /// (rounded up) and at most CQL's 20 years.
    #[test]
    fn checkpoint_ttls_are_whole_seconds_within_cqls_range() {
        assert_eq!(cql_ttl_secs(Duration::ZERO), 0);
        assert_eq!(cql_ttl_secs(Duration::from_nanos(1)), 1);
        assert_eq!(cql_ttl_secs(Duration::from_millis(500)), 1);
        assert_eq!(cql_ttl_secs(Duration::from_millis(1500)), 2);
        assert_eq!(cql_ttl_secs(DEFAULT_CHECKPOINT_TTL), 604_800);
        assert_eq!(cql_ttl_secs(MAX_CQL_TTL), 630_720_000);
        assert_eq!(
            cql_ttl_secs(MAX_CQL_TTL + Duration::from_secs(1)),
            630_720_000
        );
        assert_eq!(cql_ttl_secs(Duration::MAX), 630_720_000);
    }
}
