//! Pages of the log: where a stream reader gets them ([`LogSource`]; [`DriverLogSource`]
//! queries the log table through the driver, routed to the replica that owns the streams)
//! and their rows as the page's bytes hold them ([`LogPage::raw_rows`], [`next_cell`]),
//! parsed by the stream reader itself.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::client::session::Session;
use scylla::deserialize::row::ColumnIterator;
use scylla::errors::ExecutionError;
use scylla::frame::response::result::ColumnSpec;
use scylla::response::query_result::QueryRowsResult;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::prepared::PreparedStatement;

use uuid::Uuid;

use crate::base::cdc_types::StreamID;
use crate::base::error::CDCError;
use crate::cluster::replicas::{PreferReplica, Replica};

/// One page of log rows.
// The test-only variant is the small one; production builds have only `Driver`.
#[allow(clippy::large_enum_variant)]
pub(crate) enum LogPage {
    /// A page returned by the driver.
    Driver(QueryRowsResult),
    /// Rows serialized by a test, with their column specs.
    #[cfg(test)]
    Raw {
        /// The columns of every row.
        specs: Arc<Vec<ColumnSpec<'static>>>,
        /// Each row serialized as CQL cells.
        rows: Vec<Vec<u8>>,
    },
}

/// The rows of a [`LogPage`] as the page holds them: `count` rows back to back, each its
/// cells in column order, each cell after its big-endian `int` length (negative: null), as
/// in a `RESULT Rows` message (the native protocol's spec, section 4.2.5.2).
pub(crate) struct RawRows<'p> {
    /// The columns of every row.
    pub(crate) specs: &'p [ColumnSpec<'p>],
    /// The number of rows.
    pub(crate) count: usize,
    /// The rows' bytes.
    pub(crate) bytes: std::borrow::Cow<'p, [u8]>,
}

/// The first cell of `rest` and what follows it; `None` when `rest` is cut short.
#[inline]
pub(crate) fn next_cell(rest: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let (len, rest) = rest.split_first_chunk::<4>()?;
    match usize::try_from(i32::from_be_bytes(*len)) {
        Err(_) => Some((None, rest)),
        Ok(len) => {
            let (cell, rest) = rest.split_at_checked(len)?;
            Some((Some(cell), rest))
        }
    }
}

impl LogPage {
    /// The number of rows of the page.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Driver(result) => result.rows_num(),
            #[cfg(test)]
            Self::Raw { rows, .. } => rows.len(),
        }
    }

    /// The page's rows as its bytes hold them, parsed by the stream reader itself: the
    /// driver's row iterator reads every cell's length twice (once to skip the row, once in
    /// its column iterator) and was a third of the reader's CPU per row.
    pub(crate) fn raw_rows(&self) -> Result<RawRows<'_>, String> {
        match self {
            Self::Driver(result) => {
                let specs = result.column_specs().as_slice();
                let count = result.rows_num();
                // The driver keeps the rows' bytes to itself; any cell it slices out of them
                // knows them whole (`as_original_frame_bytes`). The cells before the first
                // non-null one are nulls, 4 bytes each: where it must start is checked.
                let rows = result.rows::<ColumnIterator>().map_err(|e| e.to_string())?;
                for (r, row) in rows.enumerate() {
                    let row = row.map_err(|e| e.to_string())?;
                    for (c, column) in row.enumerate() {
                        let column = column.map_err(|e| e.to_string())?;
                        let Some(slice) = column.slice else { continue };
                        let bytes: &[u8] = slice.as_original_frame_bytes();
                        let at = (slice.as_slice().as_ptr() as usize)
                            .checked_sub(bytes.as_ptr() as usize);
                        let expected = (r * specs.len() + c + 1) * 4;
                        if at != Some(expected) {
                            // Not the layout this expects (another driver version): rebuild
                            // the rows' bytes from the driver's cells, slower but the same.
                            return Self::copied_rows(result);
                        }
                        return Ok(RawRows {
                            specs,
                            count,
                            bytes: std::borrow::Cow::Borrowed(bytes),
                        });
                    }
                }
                // No cell at all is set: every row is nulls (and unusable).
                let nulls = (-1i32).to_be_bytes().repeat(count * specs.len());
                Ok(RawRows {
                    specs,
                    count,
                    bytes: std::borrow::Cow::Owned(nulls),
                })
            }
            #[cfg(test)]
            Self::Raw { specs, rows } => Ok(RawRows {
                specs: specs.as_slice(),
                count: rows.len(),
                bytes: std::borrow::Cow::Owned(rows.concat()),
            }),
        }
    }
}

impl LogPage {
    /// The rows' bytes as a RESULT Rows message holds them, copied cell by cell through the
    /// driver's iterator (`[int length][bytes]`, length -1 for null).
    fn copied_rows(result: &QueryRowsResult) -> Result<RawRows<'_>, String> {
        let specs = result.column_specs().as_slice();
        let mut bytes = Vec::new();
        for row in result.rows::<ColumnIterator>().map_err(|e| e.to_string())? {
            for column in row.map_err(|e| e.to_string())? {
                match column.map_err(|e| e.to_string())?.slice {
                    None => bytes.extend_from_slice(&(-1i32).to_be_bytes()),
                    Some(slice) => {
                        let cell = slice.as_slice();
                        let len = i32::try_from(cell.len()).map_err(|e| e.to_string())?;
                        bytes.extend_from_slice(&len.to_be_bytes());
                        bytes.extend_from_slice(cell);
                    }
                }
            }
        }
        Ok(RawRows {
            specs,
            count: result.rows_num(),
            bytes: std::borrow::Cow::Owned(bytes),
        })
    }
}

/// The key of a log row: its stream, `cdc$time` and `cdc$batch_seq_no`.
pub(crate) type RowKey = (StreamID, Uuid, i32);

impl LogPage {
    /// The keys of the page's rows, in its order: the page holds at least the columns
    /// `cdc$stream_id`, `cdc$time` and `cdc$batch_seq_no` (a page of [`LogSource::fetch_keys`],
    /// or of whole rows). A row whose key cannot be read is an error.
    pub(crate) fn keys(&self) -> Result<Vec<RowKey>, String> {
        let raw = self.raw_rows()?;
        let at = |name: &str| {
            raw.specs
                .iter()
                .position(|s| s.name() == name)
                .ok_or_else(|| format!("the page has no column {name}"))
        };
        let (stream_at, time_at, seq_at) = (
            at("cdc$stream_id")?,
            at("cdc$time")?,
            at("cdc$batch_seq_no")?,
        );
        let mut keys = Vec::with_capacity(raw.count);
        let mut rest: &[u8] = &raw.bytes;
        let mut cells: Vec<Option<&[u8]>> = Vec::with_capacity(raw.specs.len());
        for position in 0..raw.count {
            cells.clear();
            for _ in raw.specs {
                let (cell, after) = next_cell(rest)
                    .ok_or_else(|| format!("row {position} of a key page is cut short"))?;
                cells.push(cell);
                rest = after;
            }
            let cell = |i: usize, what: &str| {
                cells
                    .get(i)
                    .copied()
                    .flatten()
                    .ok_or_else(|| format!("row {position} of a key page has a null {what}"))
            };
            let stream = StreamID::from_slice(cell(stream_at, "cdc$stream_id")?)
                .map_err(|e| e.to_string())?;
            let time: [u8; 16] = cell(time_at, "cdc$time")?
                .try_into()
                .map_err(|_| "cdc$time is not 16 bytes".to_owned())?;
            let seq: [u8; 4] = cell(seq_at, "cdc$batch_seq_no")?
                .try_into()
                .map_err(|_| "cdc$batch_seq_no is not 4 bytes".to_owned())?;
            keys.push((stream, Uuid::from_bytes(time), i32::from_be_bytes(seq)));
        }
        Ok(keys)
    }
}

/// Where stream readers get pages of the log from.
#[async_trait]
pub(crate) trait LogSource: Send + Sync {
    /// One page of the rows of `streams` with `start <= cdc$time < end`.
    async fn fetch_page(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError>;

    /// One page of the keys ([`LogPage::keys`]) of the same rows: what the confirmation of
    /// an early read compares with what it delivered. By default, the whole rows.
    async fn fetch_keys(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
        self.fetch_page(streams, start, end, paging).await
    }

    /// Every row of `stream` with `cdc$time = time` (one change: a late one the confirmation
    /// found), in one page, possibly with other rows (the reader keeps only the change's).
    /// By default, the rows of the stream in the change's millisecond.
    async fn fetch_change(&self, stream: StreamID, time: Uuid) -> Result<LogPage, ExecutionError> {
        let micros = crate::base::time::timeuuid_micros(&time);
        let start = DateTime::from_timestamp_millis(micros.div_euclid(1000)).unwrap_or_default();
        let end = start + chrono::TimeDelta::milliseconds(1);
        let (page, _) = self
            .fetch_page(&[stream], start, end, PagingState::start())
            .await?;
        Ok(page)
    }

    /// The same source with its queries sent to `replica` first (`None`: this source cannot
    /// route, use it as it is).
    fn routed(&self, _replica: Replica) -> Option<Arc<dyn LogSource>> {
        None
    }
}

/// The rows of a log query's result (an error if it has none). The error is the driver's own
/// type, as every request of a [`LogSource`] returns it.
#[allow(clippy::result_large_err)]
fn rows_of(
    result: scylla::response::query_result::QueryResult,
) -> Result<QueryRowsResult, ExecutionError> {
    result.into_rows_result().map_err(|e| {
        ExecutionError::LastAttemptError(scylla::errors::RequestAttemptError::DbError(
            scylla::errors::DbError::ProtocolError,
            format!("the CDC log query did not return rows: {e}"),
        ))
    })
}

/// Rows per page of the log query. A stream reader holds the page its consumer is handed
/// and, when it has one of the reader's prefetch permits (`PREFETCH_PAGES`), the next one,
/// fetched meanwhile: 2 500 rows each keep a prefetching group at the 5 000 rows of one page
/// of the driver's default size (what a reader that does not prefetch holds).
const LOG_PAGE_ROWS: i32 = 2500;

/// Reads the log through the driver with prepared statements: the window query, the key
/// query of a window (the confirmation of early reads) and the query of one change.
pub(crate) struct DriverLogSource {
    session: Arc<Session>,
    statement: PreparedStatement,
    keys: PreparedStatement,
    change: PreparedStatement,
}

impl DriverLogSource {
    /// Prepares the window query on `keyspace`'s log table `log_table` (both unquoted).
    pub(crate) async fn new(
        session: Arc<Session>,
        keyspace: &str,
        log_table: &str,
    ) -> Result<Self, CDCError> {
        let table = format!(
            "{}.{}",
            crate::base::cdc_types::quote_identifier(keyspace),
            crate::base::cdc_types::quote_identifier(log_table),
        );
        let window = "\"cdc$stream_id\" IN ? AND \"cdc$time\" >= minTimeuuid(?) \
                      AND \"cdc$time\" < minTimeuuid(?) BYPASS CACHE";
        let prepare = |text: String| {
            let session = session.clone();
            async move { crate::base::error::prepare_idempotent(&session, &text).await }
        };
        let mut statement = prepare(format!("SELECT * FROM {table} WHERE {window}")).await?;
        statement.set_page_size(LOG_PAGE_ROWS);
        let mut keys = prepare(format!(
            "SELECT \"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\" FROM {table} \
             WHERE {window}"
        ))
        .await?;
        // Keys are small: a page of them costs what a page of rows of the window query does
        // at 10 times the rows.
        keys.set_page_size(LOG_PAGE_ROWS * 10);
        let change = prepare(format!(
            "SELECT * FROM {table} WHERE \"cdc$stream_id\" = ? AND \"cdc$time\" = ? BYPASS CACHE"
        ))
        .await?;
        Ok(Self {
            session,
            statement,
            keys,
            change,
        })
    }
}

#[async_trait]
impl LogSource for DriverLogSource {
    async fn fetch_page(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
        let ids: Vec<&[u8]> = streams.iter().map(|s| &s.as_bytes()[..]).collect();
        let (result, next) = self
            .session
            .execute_single_page(&self.statement, (ids, start, end), paging)
            .await?;
        Ok((LogPage::Driver(rows_of(result)?), next))
    }

    async fn fetch_keys(
        &self,
        streams: &[StreamID],
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        paging: PagingState,
    ) -> Result<(LogPage, PagingStateResponse), ExecutionError> {
        let ids: Vec<&[u8]> = streams.iter().map(|s| &s.as_bytes()[..]).collect();
        let (result, next) = self
            .session
            .execute_single_page(&self.keys, (ids, start, end), paging)
            .await?;
        Ok((LogPage::Driver(rows_of(result)?), next))
    }

    async fn fetch_change(&self, stream: StreamID, time: Uuid) -> Result<LogPage, ExecutionError> {
        // `cdc$time` is a timeuuid: the driver refuses to bind a plain `Uuid` to it.
        let time = scylla::value::CqlTimeuuid::from(time);
        let result = self
            .session
            .execute_unpaged(&self.change, (&stream.as_bytes()[..], time))
            .await?;
        Ok(LogPage::Driver(rows_of(result)?))
    }

    fn routed(&self, replica: Replica) -> Option<Arc<dyn LogSource>> {
        let base = self
            .statement
            .get_execution_profile_handle()
            .unwrap_or_else(|| self.session.get_default_execution_profile_handle());
        let policy = base.to_profile().get_load_balancing_policy().clone();
        let profile = base
            .pointee_to_builder()
            .load_balancing_policy(Arc::new(PreferReplica::new(replica, policy)))
            .build()
            .into_handle();
        let routed = |statement: &PreparedStatement| {
            let mut statement = statement.clone();
            statement.set_execution_profile_handle(Some(profile.clone()));
            statement
        };
        Some(Arc::new(Self {
            session: self.session.clone(),
            statement: routed(&self.statement),
            keys: routed(&self.keys),
            change: routed(&self.change),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log query asks for pages of `LOG_PAGE_ROWS` rows, not the driver's default of
    /// 5 000 (a prefetching stream group holds two pages).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn log_pages_are_of_log_page_rows() -> anyhow::Result<()> {
        let cluster = scylla_emulator::EmbeddedCluster::builder().start().await?;
        let session = cluster.session().await?;
        session
            .query_unpaged(
                "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
                 'replication_factor': 1} AND tablets = {'enabled': false}",
                (),
            )
            .await?;
        session
            .query_unpaged(
                "CREATE TABLE ks.t (pk int, ck int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {'enabled': true}",
                (),
            )
            .await?;
        let insert = session
            .prepare("INSERT INTO ks.t (pk, ck) VALUES (0, ?)")
            .await?;
        let rows = LOG_PAGE_ROWS + 100;
        for ck in 0..rows {
            session.execute_unpaged(&insert, (ck,)).await?;
        }
        let (stream,): (Vec<u8>,) = session
            .query_unpaged(
                "SELECT \"cdc$stream_id\" FROM ks.t_scylla_cdc_log LIMIT 1",
                (),
            )
            .await?
            .into_rows_result()?
            .single_row()?;
        let streams = [StreamID::new(
            stream.try_into().expect("a 16-byte stream id"),
        )];
        let source = DriverLogSource::new(session, "ks", "t_scylla_cdc_log").await?;
        let (start, end) = (
            Utc::now() - chrono::TimeDelta::hours(1),
            Utc::now() + chrono::TimeDelta::hours(1),
        );
        let (page, next) = source
            .fetch_page(&streams, start, end, PagingState::start())
            .await?;
        assert_eq!(page.len(), LOG_PAGE_ROWS as usize);
        let PagingStateResponse::HasMorePages { state } = next else {
            panic!("one page of {rows} rows");
        };
        let (page, _) = source.fetch_page(&streams, start, end, state).await?;
        assert_eq!(page.len(), 100);
        // The rows' bytes taken from the driver's buffer are what copying them cell by cell
        // (the fallback for a driver that lays them out otherwise) gives.
        let LogPage::Driver(result) = &page else {
            panic!("a page of the driver");
        };
        let taken = page.raw_rows().map_err(anyhow::Error::msg)?;
        let copied = LogPage::copied_rows(result).map_err(anyhow::Error::msg)?;
        assert!(matches!(taken.bytes, std::borrow::Cow::Borrowed(_)));
        assert_eq!(taken.bytes, copied.bytes);
        assert_eq!(taken.count, copied.count);
        Ok(())
    }

    /// The query of one change (the confirmation of early reads reads each late change with
    /// it) binds its `cdc$time` as a timeuuid, and returns every row of the change and no
    /// other: here the three rows of a batch, not the write before or after it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fetch_change_reads_one_whole_change() -> anyhow::Result<()> {
        let cluster = scylla_emulator::EmbeddedCluster::builder().start().await?;
        let session = cluster.session().await?;
        for statement in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1} AND tablets = {'enabled': false}",
            "CREATE TABLE ks.t (pk int, ck int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true}",
            "INSERT INTO ks.t (pk, ck) VALUES (0, 0)",
            "BEGIN UNLOGGED BATCH INSERT INTO ks.t (pk, ck) VALUES (0, 1); \
             INSERT INTO ks.t (pk, ck) VALUES (0, 2); INSERT INTO ks.t (pk, ck) VALUES (0, 3); \
             APPLY BATCH",
            "INSERT INTO ks.t (pk, ck) VALUES (0, 4)",
        ] {
            session.query_unpaged(statement, ()).await?;
        }
        // The batch's change: the log row of ck = 2 (the log orders rows by `cdc$time`).
        let log = session
            .query_unpaged(
                "SELECT \"cdc$stream_id\", \"cdc$time\", ck FROM ks.t_scylla_cdc_log",
                (),
            )
            .await?
            .into_rows_result()?;
        let (stream, time, _) = log
            .rows::<(Vec<u8>, scylla::value::CqlTimeuuid, Option<i32>)>()?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .find(|(_, _, ck)| *ck == Some(2))
            .expect("the log row of ck = 2");
        let stream = StreamID::new(stream.try_into().expect("a 16-byte stream id"));
        let source = DriverLogSource::new(session, "ks", "t_scylla_cdc_log").await?;
        let page = source
            .fetch_change(stream, Uuid::from_bytes(*time.as_bytes()))
            .await?;
        assert_eq!(page.len(), 3);
        cluster.shutdown().await;
        Ok(())
    }
}
