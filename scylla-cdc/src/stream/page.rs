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

    /// The same source with its queries sent to `replica` first (`None`: this source cannot
    /// route, use it as it is).
    fn routed(&self, _replica: Replica) -> Option<Arc<dyn LogSource>> {
        None
    }
}

/// Rows per page of the log query. A stream reader holds the page its consumer is handed
/// and the next one, fetched meanwhile: 2 500 rows each keep that at the 5 000 rows of one
/// page of the driver's default size (what a reader that does not prefetch holds), times the
/// number of stream groups (256 per node on ScyllaDB's default vnodes).
const LOG_PAGE_ROWS: i32 = 2500;

/// Reads the log through the driver with one prepared statement.
pub(crate) struct DriverLogSource {
    session: Arc<Session>,
    statement: PreparedStatement,
}

impl DriverLogSource {
    /// Prepares the window query on `keyspace`'s log table `log_table` (both unquoted).
    pub(crate) async fn new(
        session: Arc<Session>,
        keyspace: &str,
        log_table: &str,
    ) -> Result<Self, CDCError> {
        let text = format!(
            "SELECT * FROM {}.{} WHERE \"cdc$stream_id\" IN ? AND \"cdc$time\" >= minTimeuuid(?) \
             AND \"cdc$time\" < minTimeuuid(?) BYPASS CACHE",
            crate::base::cdc_types::quote_identifier(keyspace),
            crate::base::cdc_types::quote_identifier(log_table),
        );
        let mut statement = crate::base::error::prepare_idempotent(&session, &text).await?;
        statement.set_page_size(LOG_PAGE_ROWS);
        Ok(Self { session, statement })
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
        let rows = result.into_rows_result().map_err(|e| {
            ExecutionError::LastAttemptError(scylla::errors::RequestAttemptError::DbError(
                scylla::errors::DbError::ProtocolError,
                format!("the CDC log query did not return rows: {e}"),
            ))
        })?;
        Ok((LogPage::Driver(rows), next))
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
        let mut statement = self.statement.clone();
        statement.set_execution_profile_handle(Some(profile));
        Some(Arc::new(Self {
            session: self.session.clone(),
            statement,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log query asks for pages of `LOG_PAGE_ROWS` rows (a reader holds two pages per
    /// stream group: the driver's default of 5 000 rows doubled its memory).
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
}
