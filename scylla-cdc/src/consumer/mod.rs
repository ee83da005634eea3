//! What the user implements ([`Consumer`], [`ConsumerFactory`]) and what it receives
//! ([`CDCRow`], [`OperationType`]).
//!
//! A [`CDCRow`] is a view into one row of a page of the CDC log: its `cdc$` metadata is
//! decoded into public fields, while the base table's columns stay raw bytes of the page until
//! asked for. Column names are resolved through a [`ColumnIndex`] built once per log schema and
//! shared by every row, so reading a row costs no allocation and no per-row map.
//!
//! Two files below this one: [`operation`] (the public [`OperationType`] of
//! `cdc$operation`) and [`columns`] (the crate-internal reading of a log row: the
//! [`ColumnIndex`] of a log schema, a row's decoded `cdc$` header, its cells in a page or in a
//! change's record, and the column accessors [`CDCRow`] and
//! [`ChangeRow`](crate::change::ChangeRow) share).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::deserialize::value::DeserializeValue;
use scylla::frame::response::result::{ColumnSpec, ColumnType};
use scylla::value::CqlValue;
use uuid::Uuid;

use crate::base::cdc_types::StreamID;
use crate::base::error::ColumnError;
use crate::decode::DecodeError;

pub(crate) mod columns;
pub(crate) mod operation;

use columns::{CellSource, ColumnIndex, RowHeader, RowRef};
use operation::OperationType;

/// Receives the rows of one stream group, in order (see the crate docs for guarantees).
#[async_trait]
pub trait Consumer: Send {
    /// Handles one log row. Returning an error stops the whole reader; the error is returned
    /// by the reader's handle, with the stream and window it happened in.
    async fn consume_cdc(&mut self, data: CDCRow<'_>) -> anyhow::Result<()>;

    /// Finishes the work `consume_cdc` has accepted so far.
    ///
    /// Called before the reader saves a checkpoint (a checkpoint at `T` claims every row
    /// before `T` was handled) and when the consumer's stream group is done. A consumer that
    /// works in the background — e.g. one that pipelines writes to another database — must
    /// complete (or fail) all of it before returning. An error stops the reader like an
    /// error of `consume_cdc`. The default does nothing.
    async fn flush(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Makes one [`Consumer`] per stream group (one per vnode, or per tablet stream) of each
/// table the reader reads.
///
/// A reader of several tables ([`crate::CDCLogReaderBuilder::tables`]) asks its one factory
/// for a consumer per (table, stream group) through
/// [`ConsumerFactory::new_consumer_for_table`]; a consumer only ever receives rows of the
/// table it was made for. A factory whose consumers do not care which table they serve (they
/// can still read [`CDCRow::table`]) implements only [`ConsumerFactory::new_consumer`].
#[async_trait]
pub trait ConsumerFactory: Send + Sync {
    /// A new consumer, called when a stream group starts being read.
    async fn new_consumer(&self) -> Box<dyn Consumer>;

    /// A new consumer for a stream group of the base table `table` (as stored, without its
    /// keyspace, which is the reader's). The reader always calls this one; the default
    /// calls [`ConsumerFactory::new_consumer`].
    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        let _ = table;
        self.new_consumer().await
    }
}

/// One row of the CDC log.
///
/// The `cdc$` metadata is in public fields; the base table's columns (including its key
/// columns, which are regular columns of the log) are read by name with the accessors, which
/// decode the value only when called. No accessor panics: an unknown column is
/// [`ColumnError::NoSuchColumn`] (or `false` for the boolean ones).
pub struct CDCRow<'a> {
    /// The stream (log partition) the row belongs to.
    pub stream_id: StreamID,
    /// `cdc$time`: a timeuuid whose time is the base write's timestamp (microseconds).
    pub time: Uuid,
    /// `cdc$batch_seq_no`: the row's position among the rows of one change.
    pub batch_seq_no: i32,
    /// `cdc$end_of_batch`: true on the last row of one change.
    pub end_of_batch: bool,
    /// `cdc$operation`.
    pub operation: OperationType,
    /// `cdc$ttl`: the TTL (seconds) the change set, if any.
    pub ttl: Option<i64>,
    /// True for Scylla-initiated expirations (`cdc$operation` -3 and -4).
    pub is_expiration: bool,
    /// True for a *late* row: it became visible only after the reader's early read had
    /// passed its `cdc$time` (a write with a timestamp in the past, clock skew, a slow
    /// replica), so the confirmation of that window delivered it, after rows of its stream
    /// written later. Only readers with early reads
    /// ([`crate::CDCLogReaderBuilder::early_reads`]) deliver late rows; see the crate docs'
    /// "Early reads" for the order they keep.
    pub is_late: bool,
    /// The base table the row was logged for (see [`CDCRow::table`]).
    table: &'a str,
    row: RowRef<'a>,
    /// The row's bytes as its page held them (see [`CellSource::Span`]), if known: the
    /// change assembler copies a row out of its page in one piece.
    span: Option<&'a [u8]>,
    /// Positions whose values were taken (rarely non-empty, so a list beats a bitmap).
    taken: Vec<usize>,
}

impl<'a> CDCRow<'a> {
    /// A row from its decoded header and the raw cells of the page.
    pub(crate) fn new(
        header: RowHeader,
        index: &'a Arc<ColumnIndex>,
        specs: &'a [ColumnSpec<'a>],
        cells: &'a [Option<&'a [u8]>],
    ) -> Self {
        Self {
            stream_id: header.stream_id,
            time: header.time,
            batch_seq_no: header.batch_seq_no,
            end_of_batch: header.end_of_batch,
            operation: header.operation,
            ttl: header.ttl,
            is_expiration: header.is_expiration,
            is_late: header.late,
            table: "",
            row: RowRef {
                index,
                specs,
                cells: CellSource::Slices(cells),
            },
            span: None,
            taken: Vec::new(),
        }
    }

    /// The row, with its bytes as its page held them: its cells, back to back, each after
    /// its length (see [`CellSource::Span`]).
    pub(crate) fn with_span(mut self, span: &'a [u8]) -> Self {
        self.span = Some(span);
        self
    }

    /// The row, with the bytes of the page its cells are slices of (its span is found from
    /// them, see [`columns::row_span`]).
    #[cfg(test)]
    pub(crate) fn with_page(mut self, page: &'a [u8]) -> Self {
        if let CellSource::Slices(cells) = self.row.cells {
            self.span = columns::row_span(page, cells);
        }
        self
    }

    /// The row's bytes as its page held them, if known (see [`CellSource::Span`]).
    pub(crate) fn span(&self) -> Option<&'a [u8]> {
        self.span
    }

    /// The row, as logged for the base table `table` (see [`CDCRow::table`]).
    pub(crate) fn with_table(mut self, table: &'a str) -> Self {
        self.table = table;
        self
    }

    /// The base table (not its `_scylla_cdc_log`) this row was logged for, as stored
    /// (case-sensitive, unquoted): one of the tables the reader was built with
    /// ([`crate::CDCLogReaderBuilder::tables`]). The keyspace is the reader's.
    pub fn table(&self) -> &'a str {
        self.table
    }

    /// The decoded `cdc$` metadata (as [`CDCRow::new`] got it, whatever the public fields
    /// were changed to).
    pub(crate) fn header(&self) -> RowHeader {
        RowHeader {
            stream_id: self.stream_id,
            time: self.time,
            batch_seq_no: self.batch_seq_no,
            operation: self.operation,
            is_expiration: self.is_expiration,
            ttl: self.ttl,
            end_of_batch: self.end_of_batch,
            late: self.is_late,
        }
    }

    /// The raw row, for copying it out of the page.
    pub(crate) fn raw(&self) -> RowRef<'a> {
        self.row
    }

    fn decode_at<T: DeserializeValue<'a, 'a>>(&self, pos: usize) -> Result<Option<T>, ColumnError> {
        if self.taken.contains(&pos) {
            return Ok(None);
        }
        self.row.decode_at(pos)
    }

    /// The value of a column, decoded as a [`CqlValue`]; `Ok(None)` when the column is null
    /// in this row (not changed) or its value was taken.
    pub fn get_value(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        self.decode_at(self.row.lookup(name)?)
    }

    /// The value of a column decoded straight into a Rust type (no intermediate
    /// [`CqlValue`]), e.g. `row.get_value_as::<i32>("v")`.
    pub fn get_value_as<T: DeserializeValue<'a, 'a>>(
        &self,
        name: &str,
    ) -> Result<Option<T>, ColumnError> {
        self.decode_at(self.row.lookup(name)?)
    }

    /// Decodes the base table's columns of this row (every column not starting with `cdc$`)
    /// into `T`, a `#[derive(Deserialize)]` struct whose fields are named after the columns.
    ///
    /// A column that is null in this row (the change did not set it) decodes into `None` for
    /// an `Option` field; a field that is not an `Option` gets [`DecodeError::Null`] then, or
    /// [`DecodeError::MissingColumn`] when the table has no such column. Columns without a
    /// field are ignored, and not even decoded: only the columns a struct names (its fields'
    /// names and aliases) are read, so a struct of a few columns is cheap on a wide table
    /// (a map, or a struct with a `#[serde(flatten)]` field, reads them all). Deletions are
    /// beside the value: [`CDCRow::is_value_deleted`], [`CDCRow::get_deleted_elements`], or
    /// all at once with [`CDCRow::deletions`]. Taken values decode as null. See
    /// [`crate::decode`] for the Rust types each CQL type decodes into.
    ///
    /// ```no_run
    /// use chrono::{DateTime, Utc};
    /// use serde::Deserialize;
    /// use scylla_cdc::{CDCRow, decode::ListValues};
    ///
    /// // CREATE TABLE ks.orders (id uuid, line int, qty int, at timestamp, tags set<text>,
    /// //                         notes list<text>, PRIMARY KEY (id, line))
    /// #[derive(Deserialize, Debug)]
    /// struct Order {
    ///     id: uuid::Uuid,
    ///     line: i32,
    ///     qty: Option<u16>,
    ///     at: Option<DateTime<Utc>>,
    ///     tags: Option<Vec<String>>,
    ///     notes: Option<ListValues<String>>,
    /// }
    ///
    /// fn consume(row: &CDCRow<'_>) -> anyhow::Result<()> {
    ///     let order: Order = row.decode()?;
    ///     if row.is_value_deleted("qty") {
    ///         println!("{}/{}: qty deleted", order.id, order.line);
    ///     }
    ///     println!("{order:?}, tags removed: {:?}", row.get_deleted_elements("tags")?);
    ///     Ok(())
    /// }
    /// ```
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, DecodeError> {
        // Only the columns a struct has fields for are decoded (all for a map).
        let wanted = crate::decode::requested_columns::<T>();
        let index = self.row.index;
        let mut columns = Vec::with_capacity(index.non_cdc().len());
        for &pos in index.non_cdc() {
            let (Some(name), Some(spec)) = (index.name(pos), self.row.specs.get(pos)) else {
                continue;
            };
            if wanted.is_some_and(|fields| !fields.contains(&name)) {
                continue;
            }
            columns.push((name, spec.typ(), self.decode_at::<CqlValue>(pos)?));
        }
        crate::decode::from_columns(
            columns
                .iter()
                .map(|(name, typ, value)| (*name, *typ, value.as_ref())),
        )
    }

    /// What the row deleted: the columns whose `cdc$deleted_` flag is set and the elements
    /// removed from non-frozen collections and UDTs (see [`crate::decode::Deletions`]).
    pub fn deletions(&self) -> Result<crate::decode::Deletions, ColumnError> {
        let mut out = crate::decode::Deletions::default();
        for name in self.get_non_cdc_column_names() {
            if self.is_value_deleted(name) {
                out.columns.push(name.to_owned());
            }
            if self.collection_exists(name)
                && let Some(v) = self.get_deleted_elements(name)?
            {
                out.elements.insert(name.to_owned(), v);
            }
        }
        Ok(out)
    }

    /// Like [`CDCRow::get_value`], and later calls for this column return `Ok(None)`.
    pub fn take_value(&mut self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        let pos = self.row.lookup(name)?;
        let v = self.decode_at(pos)?;
        self.taken.push(pos);
        Ok(v)
    }

    /// Whether the change deleted the column (`cdc$deleted_<name>` is true). False for columns
    /// that cannot be deleted (key columns) and for unknown columns.
    pub fn is_value_deleted(&self, name: &str) -> bool {
        self.row.is_value_deleted(name)
    }

    /// The elements the change removed from a non-frozen collection or UDT
    /// (`cdc$deleted_elements_<name>`: a set of keys, of list timeuuids or of UDT field
    /// indexes); `Ok(None)` when none were removed.
    pub fn get_deleted_elements(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        self.decode_at(self.row.deleted_elements_position(name)?)
    }

    /// Like [`CDCRow::get_deleted_elements`], and later calls return `Ok(None)`.
    pub fn take_deleted_elements(&mut self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        let pos = self.row.deleted_elements_position(name)?;
        let v = self.decode_at(pos)?;
        self.taken.push(pos);
        Ok(v)
    }

    /// Whether the base table has a column of this name (key or value column).
    pub fn column_exists(&self, name: &str) -> bool {
        self.row.column_exists(name)
    }

    /// Whether the column can be deleted, i.e. has a `cdc$deleted_<name>` companion (every
    /// non-key column).
    pub fn column_deletable(&self, name: &str) -> bool {
        self.row.column_deletable(name)
    }

    /// Whether the column is a non-frozen collection or UDT, i.e. has a
    /// `cdc$deleted_elements_<name>` companion.
    pub fn collection_exists(&self, name: &str) -> bool {
        self.row.collection_exists(name)
    }

    /// The names of the base table's columns, in the log's column order.
    pub fn get_non_cdc_column_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.row.non_cdc_column_names()
    }

    /// The write time of the change: the time part of `cdc$time` (microsecond precision).
    pub fn timestamp(&self) -> DateTime<Utc> {
        crate::base::time::timeuuid_to_datetime(&self.time)
    }

    /// The write time of the change in microseconds since the Unix epoch (the base write's
    /// `USING TIMESTAMP`).
    pub fn timestamp_micros(&self) -> i64 {
        crate::base::time::timeuuid_micros(&self.time)
    }

    /// The CQL type of a column of the log (for collections, the log's frozen type).
    pub fn column_type(&self, name: &str) -> Option<&ColumnType<'a>> {
        self.row.column_type(name)
    }
}

impl fmt::Debug for CDCRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CDCRow")
            .field("table", &self.table)
            .field("stream_id", &self.stream_id)
            .field("time", &self.time)
            .field("batch_seq_no", &self.batch_seq_no)
            .field("end_of_batch", &self.end_of_batch)
            .field("operation", &self.operation)
            .field("ttl", &self.ttl)
            .field("is_expiration", &self.is_expiration)
            .field(
                "columns",
                &self.get_non_cdc_column_names().collect::<Vec<_>>(),
            )
            .finish()
    }
}

#[cfg(test)]
pub(crate) mod tests;
