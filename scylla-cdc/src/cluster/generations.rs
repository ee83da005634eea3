//! Where the streams of a table come from: CDC generations (vnode keyspaces) and stream sets
//! (tablet keyspaces), behind one [`GenerationFetcher`] trait.
//!
//! A generation is identified by its [`GenerationTimestamp`] and operates until the next
//! one; its streams are split into *stream groups*, each read by one stream reader: one
//! group per vnode (a row of `cdc_streams_descriptions_v2`), or one per stream with tablets.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::client::session::Session;
use scylla::deserialize::row::DeserializeRow;
use scylla::frame::types::Consistency;
use scylla::response::PagingState;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;

use crate::base::cdc_types::{GenerationTimestamp, StreamID};
use crate::base::error::CDCError;

/// Lists generations and their stream groups.
#[async_trait]
pub(crate) trait GenerationFetcher: Send + Sync {
    /// Every published generation, oldest first.
    async fn fetch_all_generations(&self) -> Result<Vec<GenerationTimestamp>, CDCError>;

    /// The stream groups of a generation; each group is read by one stream reader.
    async fn fetch_stream_groups(
        &self,
        generation: &GenerationTimestamp,
    ) -> Result<Vec<Vec<StreamID>>, CDCError>;
}

/// A fetcher shared by the tables of a vnode keyspace (their generations and streams are the
/// same): the streams of a generation never change, so the tables of one reader read them
/// once. Keeps the last few generations; a failed read is not kept.
pub(crate) struct SharedStreams {
    inner: Arc<dyn GenerationFetcher>,
    /// Stream groups by generation, newest last. A tokio mutex, held across the read so
    /// that tables entering a generation together read its streams once.
    cache: tokio::sync::Mutex<Vec<(GenerationTimestamp, Vec<Vec<StreamID>>)>>,
}

impl SharedStreams {
    /// How many generations are kept (tables of one reader may be a generation apart).
    const KEPT: usize = 3;

    pub(crate) fn new(inner: Arc<dyn GenerationFetcher>) -> Self {
        Self {
            inner,
            cache: tokio::sync::Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl GenerationFetcher for SharedStreams {
    async fn fetch_all_generations(&self) -> Result<Vec<GenerationTimestamp>, CDCError> {
        self.inner.fetch_all_generations().await
    }

    async fn fetch_stream_groups(
        &self,
        generation: &GenerationTimestamp,
    ) -> Result<Vec<Vec<StreamID>>, CDCError> {
        let mut cache = self.cache.lock().await;
        if let Some((_, groups)) = cache.iter().find(|(g, _)| g == generation) {
            return Ok(groups.clone());
        }
        let groups = self.inner.fetch_stream_groups(generation).await?;
        if cache.len() >= Self::KEPT {
            cache.remove(0);
        }
        cache.push((*generation, groups.clone()));
        Ok(groups)
    }
}

/// The generation to start in: the last one starting at or before `start`, or the first one
/// when `start` precedes them all. `generations` is sorted.
pub(crate) fn generation_covering(
    generations: &[GenerationTimestamp],
    start: DateTime<Utc>,
) -> Option<GenerationTimestamp> {
    generations
        .iter()
        .rev()
        .find(|g| g.timestamp <= start)
        .or_else(|| generations.first())
        .copied()
}

/// The generation following `current`, if published. `generations` is sorted.
pub(crate) fn next_generation(
    generations: &[GenerationTimestamp],
    current: &GenerationTimestamp,
) -> Option<GenerationTimestamp> {
    generations.iter().find(|g| *g > current).copied()
}

/// Runs a prepared statement through every page and deserializes every row.
async fn fetch_all_rows<R, V>(
    session: &Session,
    statement: &PreparedStatement,
    values: V,
    what: &str,
) -> Result<Vec<R>, CDCError>
where
    R: for<'f, 'm> DeserializeRow<'f, 'm>,
    V: SerializeRow,
{
    let query_err = |source| CDCError::Query {
        what: what.to_owned(),
        source: Box::new(source),
    };
    let bad = |detail: String| CDCError::BadMetadata {
        what: what.to_owned(),
        detail,
    };
    let mut out = Vec::new();
    let mut paging = PagingState::start();
    loop {
        let (result, next) = session
            .execute_single_page(statement, &values, paging)
            .await
            .map_err(query_err)?;
        let rows = result.into_rows_result().map_err(|e| bad(e.to_string()))?;
        for row in rows.rows::<R>().map_err(|e| bad(e.to_string()))? {
            out.push(row.map_err(|e| bad(e.to_string()))?);
        }
        match next.into_paging_control_flow() {
            std::ops::ControlFlow::Break(()) => return Ok(out),
            std::ops::ControlFlow::Continue(state) => paging = state,
        }
    }
}

/// Prepares a statement for the generation fetchers.
async fn prepare(session: &Session, text: &str) -> Result<PreparedStatement, CDCError> {
    crate::base::error::prepare_idempotent(session, text).await
}

/// Converts blobs to stream ids, failing on a blob that is not 16 bytes.
fn to_stream_ids(blobs: Vec<Vec<u8>>, what: &str) -> Result<Vec<StreamID>, CDCError> {
    blobs
        .iter()
        .map(|b| {
            StreamID::from_slice(b).map_err(|e| CDCError::BadMetadata {
                what: what.to_owned(),
                detail: e.to_string(),
            })
        })
        .collect()
}

/// Generations of a vnode keyspace, from `system_distributed` (Scylla 4.4+ "v2" tables).
pub(crate) struct VnodeGenerationFetcher {
    session: Arc<Session>,
    timestamps: PreparedStatement,
    streams: PreparedStatement,
}

impl VnodeGenerationFetcher {
    /// Prepares the fetcher's statements.
    pub(crate) async fn new(session: Arc<Session>) -> Result<Self, CDCError> {
        let timestamps = prepare(
            &session,
            "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
        )
        .await?;
        let streams = prepare(
            &session,
            "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
        )
        .await?;
        Ok(Self {
            session,
            timestamps,
            streams,
        })
    }

    /// `system_distributed` has RF 3 whatever the cluster size: QUORUM is what Scylla
    /// recommends, but cannot be reached on a one-node cluster, where ONE is used.
    fn with_consistency(&self, statement: &PreparedStatement) -> PreparedStatement {
        let nodes = self.session.get_cluster_state().get_nodes_info().len();
        let mut s = statement.clone();
        s.set_consistency(if nodes <= 1 {
            Consistency::One
        } else {
            Consistency::Quorum
        });
        s
    }
}

#[async_trait]
impl GenerationFetcher for VnodeGenerationFetcher {
    async fn fetch_all_generations(&self) -> Result<Vec<GenerationTimestamp>, CDCError> {
        let rows: Vec<(Option<DateTime<Utc>>,)> = fetch_all_rows(
            &self.session,
            &self.with_consistency(&self.timestamps),
            (),
            "reading system_distributed.cdc_generation_timestamps",
        )
        .await?;
        let mut gens: Vec<GenerationTimestamp> = rows
            .into_iter()
            .filter_map(|(t,)| t.map(GenerationTimestamp::new))
            .collect();
        gens.sort();
        gens.dedup();
        Ok(gens)
    }

    async fn fetch_stream_groups(
        &self,
        generation: &GenerationTimestamp,
    ) -> Result<Vec<Vec<StreamID>>, CDCError> {
        let what = "reading system_distributed.cdc_streams_descriptions_v2";
        let rows: Vec<(Option<Vec<Vec<u8>>>,)> = fetch_all_rows(
            &self.session,
            &self.with_consistency(&self.streams),
            (generation.timestamp,),
            what,
        )
        .await?;
        let mut groups = Vec::with_capacity(rows.len());
        for (streams,) in rows {
            let ids = to_stream_ids(streams.unwrap_or_default(), what)?;
            if !ids.is_empty() {
                groups.push(ids);
            }
        }
        Ok(groups)
    }
}

/// Stream sets of a table in a tablet keyspace (Scylla 2025.4+), from `system.cdc_timestamps`
/// and `system.cdc_streams` (node-local virtual tables: any consistency level works).
pub(crate) struct TabletGenerationFetcher {
    session: Arc<Session>,
    keyspace: String,
    table: String,
    timestamps: PreparedStatement,
    streams: PreparedStatement,
}

impl TabletGenerationFetcher {
    /// Prepares the fetcher's statements for `keyspace.table` (the base table).
    pub(crate) async fn new(
        session: Arc<Session>,
        keyspace: &str,
        table: &str,
    ) -> Result<Self, CDCError> {
        let timestamps = prepare(
            &session,
            "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = ? AND table_name = ?",
        )
        .await?;
        let streams = prepare(
            &session,
            "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name = ? AND table_name = ? \
             AND timestamp = ? AND stream_state = 0",
        )
        .await?;
        Ok(Self {
            session,
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
            timestamps,
            streams,
        })
    }
}

#[async_trait]
impl GenerationFetcher for TabletGenerationFetcher {
    async fn fetch_all_generations(&self) -> Result<Vec<GenerationTimestamp>, CDCError> {
        let rows: Vec<(Option<DateTime<Utc>>,)> = fetch_all_rows(
            &self.session,
            &self.timestamps,
            (&self.keyspace, &self.table),
            "reading system.cdc_timestamps",
        )
        .await?;
        let mut gens: Vec<GenerationTimestamp> = rows
            .into_iter()
            .filter_map(|(t,)| t.map(GenerationTimestamp::new))
            .collect();
        gens.sort();
        gens.dedup();
        Ok(gens)
    }

    async fn fetch_stream_groups(
        &self,
        generation: &GenerationTimestamp,
    ) -> Result<Vec<Vec<StreamID>>, CDCError> {
        let what = "reading system.cdc_streams";
        let rows: Vec<(Option<Vec<u8>>,)> = fetch_all_rows(
            &self.session,
            &self.streams,
            (&self.keyspace, &self.table, generation.timestamp),
            what,
        )
        .await?;
        let blobs = rows.into_iter().filter_map(|(b,)| b).collect();
        let mut ids = to_stream_ids(blobs, what)?;
        ids.sort();
        ids.dedup();
        Ok(ids.into_iter().map(|s| vec![s]).collect())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Generations with fixed stream groups, for reader tests; `std` mutexes never held
    /// across `.await`.
    #[derive(Default)]
    pub(crate) struct FakeFetcher {
        pub(crate) generations: std::sync::Mutex<BTreeMap<GenerationTimestamp, Vec<Vec<StreamID>>>>,
        /// Errors returned by the next `fetch_stream_groups` calls.
        pub(crate) group_errors: std::sync::Mutex<Vec<CDCError>>,
        /// Calls of `fetch_all_generations`.
        pub(crate) polls: std::sync::atomic::AtomicUsize,
    }

    impl FakeFetcher {
        /// Publishes a generation.
        pub(crate) fn add(&self, g: GenerationTimestamp, groups: Vec<Vec<StreamID>>) {
            self.generations.lock().unwrap().insert(g, groups);
        }
    }

    #[async_trait]
    impl GenerationFetcher for FakeFetcher {
        async fn fetch_all_generations(&self) -> Result<Vec<GenerationTimestamp>, CDCError> {
            self.polls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(self.generations.lock().unwrap().keys().copied().collect())
        }

        async fn fetch_stream_groups(
            &self,
            generation: &GenerationTimestamp,
        ) -> Result<Vec<Vec<StreamID>>, CDCError> {
            if let Some(e) = self.group_errors.lock().unwrap().pop() {
                return Err(e);
            }
            Ok(self
                .generations
                .lock()
                .unwrap()
                .get(generation)
                .cloned()
                .unwrap_or_default())
        }
    }

    fn g(ms: i64) -> GenerationTimestamp {
        GenerationTimestamp::new(DateTime::from_timestamp_millis(ms).unwrap())
    }

    fn t(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[tokio::test]
    async fn tables_sharing_a_fetcher_read_a_generations_streams_once() {
        let inner = Arc::new(FakeFetcher::default());
        let s1 = StreamID::new([1; 16]);
        inner.add(g(10), vec![vec![s1]]);
        inner.add(g(20), vec![vec![s1], vec![s1]]);
        let shared = SharedStreams::new(inner.clone());
        // A failed read is not kept.
        inner
            .group_errors
            .lock()
            .unwrap()
            .push(CDCError::InvalidConfig("x".into()));
        assert!(shared.fetch_stream_groups(&g(10)).await.is_err());
        assert_eq!(shared.fetch_stream_groups(&g(10)).await.unwrap().len(), 1);
        // Served from the cache: the inner fetcher would fail now.
        inner
            .group_errors
            .lock()
            .unwrap()
            .push(CDCError::InvalidConfig("x".into()));
        assert_eq!(shared.fetch_stream_groups(&g(10)).await.unwrap().len(), 1);
        inner.group_errors.lock().unwrap().clear();
        assert_eq!(shared.fetch_stream_groups(&g(20)).await.unwrap().len(), 2);
        assert_eq!(
            shared.fetch_all_generations().await.unwrap(),
            vec![g(10), g(20)]
        );
    }

    #[test]
    fn covering_generation() {
        let gens = [g(10), g(20), g(30)];
        assert_eq!(generation_covering(&gens, t(5)), Some(g(10)));
        assert_eq!(generation_covering(&gens, t(10)), Some(g(10)));
        assert_eq!(generation_covering(&gens, t(25)), Some(g(20)));
        assert_eq!(generation_covering(&gens, t(99)), Some(g(30)));
        assert_eq!(generation_covering(&[], t(99)), None);
    }

    #[test]
    fn following_generation() {
        let gens = [g(10), g(20), g(30)];
        assert_eq!(next_generation(&gens, &g(10)), Some(g(20)));
        assert_eq!(next_generation(&gens, &g(15)), Some(g(20)));
        assert_eq!(next_generation(&gens, &g(30)), None);
    }

    #[test]
    fn stream_ids_must_have_16_bytes() {
        assert_eq!(to_stream_ids(vec![vec![1; 16]], "x").unwrap().len(), 1);
        assert!(matches!(
            to_stream_ids(vec![vec![1; 16], vec![2; 3]], "x"),
            Err(CDCError::BadMetadata { .. })
        ));
    }
}
