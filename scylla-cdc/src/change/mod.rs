//! Whole changes: every log row of one write, delivered together ([`Change`],
//! [`ChangeConsumer`], [`ChangeConsumerFactory`]).
//!
//! A *change* is every log row of one stream with one `cdc$time`: the pre-images (operation
//! 0), the deltas in `cdc$batch_seq_no` order (a batch or a multi-row statement gives
//! several) and the post-images (operation 9). This module is the public face of changes and
//! their byte format; two files below it do the work:
//!
//! - [`assembler`]: the crate-internal `ChangeAssembler`, which the stream reader hands the
//!   rows of a change consumer's stream group to. It copies the rows of the current
//!   `(stream, cdc$time)` out of their page into a chunk of owned memory shared by
//!   consecutive changes and hands the [`Change`] to the user's [`ChangeConsumer`] once it is
//!   complete: at the row with `cdc$end_of_batch = true`, when a row of another
//!   `(stream, cdc$time)` arrives, or when the stream reader finishes a window;
//! - `chunk`: those chunks, a buffer written at its end while the changes before are read,
//!   with the crate's only `unsafe` code. A [`Change`] is a counted reference into one.
//!
//! A change never crosses a window: windows are `cdc$time` ranges and every row of a change
//! has the same `cdc$time`. Checkpoints are saved only at window ends, after the window's
//! last change was delivered and flushed, so a restart resumes between two changes and
//! never delivers part of one.
//!
//! A change the consumer cannot take is handed over again and given up on whole, as a step
//! of its own wherever it ends (see [`ChangeConsumer`]): the stream reader delivers a change
//! completed by a row not of it (`ChangeAssembler::take_completed_by`, or at a window's end
//! `ChangeAssembler::take_completed`) before it hands that row over, and gives up a change
//! that failed at its own last row with that row (`ChangeAssembler::give_up`).
//!
//! [`RowChange`] groups the rows of a change by the base row they touch and merges pre-image,
//! deltas and post-image into the [`RowImage`]s a user expects ([`RowChange::before`],
//! [`RowChange::after`]); nothing is decoded until those are called.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::deserialize::value::DeserializeValue;
use scylla::frame::response::result::{ColumnSpec, ColumnType, NativeType};
use scylla::value::CqlValue;
use uuid::Uuid;

use crate::base::cdc_types::StreamID;
use crate::base::error::ColumnError;
use crate::consumer::columns::{CellSource, ColumnIndex, RowHeader, RowRef, read_u32};
use crate::consumer::operation::OperationType;

/// Receives the whole changes of one stream group, in order: the changes of one stream in
/// `cdc$time` order, each exactly once per run (see the crate docs for guarantees).
///
/// # A change the consumer cannot take
///
/// The reader's [`crate::ConsumerErrorPolicy`] applies to whole changes, wherever a change
/// ends. A change whose [`ChangeConsumer::consume_change`] fails (or panics) is handed over
/// again, whole, then given up on whole, alone:
///
/// * [`crate::AfterRetries::Stop`]: [`crate::CDCError::Consumer`] names the change's stream,
///   `cdc$time` and the `cdc$batch_seq_no` of its last row; a restart delivers the change
///   again;
/// * [`crate::AfterRetries::Skip`]: a WARN line; the change counts once in
///   [`crate::Progress::rows_skipped`];
/// * [`crate::AfterRetries::DeadLetter`]: one [`crate::DeadLetter`] per row of the change, in
///   `cdc$batch_seq_no` order (the change's whole content, each letter with the consumer's
///   last error); the change counts once in [`crate::Progress::rows_dead_lettered`].
///
/// A change without `cdc$end_of_batch` (Scylla may omit it) is complete when the next
/// change's first row arrives, or at the end of its window: it is then delivered, retried and
/// given up on as a step of its own, before that row is taken, so its failure is never
/// charged to the next change, which is delivered whole.
#[async_trait]
pub trait ChangeConsumer: Send {
    /// Handles one change. An error (or a panic) is handled by the reader's
    /// [`crate::ConsumerErrorPolicy`], applied to the whole change: by default it is handed
    /// over again, whole, a few times, then the reader stops (see above).
    async fn consume_change(&mut self, change: Change) -> anyhow::Result<()>;

    /// Finishes the work `consume_change` has accepted so far; called before a checkpoint
    /// is saved and when the stream group is done (see [`Consumer::flush`]). The default
    /// does nothing.
    ///
    /// [`Consumer::flush`]: crate::consumer::Consumer::flush
    async fn flush(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Makes one [`ChangeConsumer`] per stream group; given to
/// [`crate::CDCLogReaderBuilder::change_consumer_factory`].
#[async_trait]
pub trait ChangeConsumerFactory: Send + Sync {
    /// A new consumer, called when a stream group starts being read.
    async fn new_consumer(&self) -> Box<dyn ChangeConsumer>;

    /// A new consumer for a stream group of `table` (the base table's name, as stored). The
    /// reader always calls this one; the default calls [`Self::new_consumer`]. Override it
    /// when the consumers of a reader of several tables
    /// ([`crate::CDCLogReaderBuilder::tables`]) differ by table.
    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn ChangeConsumer> {
        let _ = table;
        self.new_consumer().await
    }
}

/// The columns of one log schema, owned, and the base table's name: shared by every change
/// read with that schema.
struct Schema {
    index: Arc<ColumnIndex>,
    specs: Arc<[ColumnSpec<'static>]>,
    table: Arc<str>,
}

/// A row record in a change's buffer: its length (`u32`), the schema it was read with (`u8`:
/// 0 the change's schema, `i > 0` the `i`-th of its other schemas), the operation code
/// (`i8`), flags (`u8`), padding, `cdc$batch_seq_no` (`i32`), `cdc$ttl` (`i64`), the number
/// of cells (`u32`), the cells' ranges, then the cells' bytes. Integers are little-endian.
const RECORD_HEADER: usize = 24;
const FLAG_END_OF_BATCH: u8 = 1;
const FLAG_TTL: u8 = 2;
/// The record's cells follow its header as the page held them (see [`CellSource::Span`]):
/// the row was copied in one piece. Without the flag, cell ranges and then the cells follow.
const FLAG_SPAN: u8 = 4;

/// The header of a change in its chunk, before its row records: the stream id (16 bytes),
/// `cdc$time` (16), the number of rows (`u32`, little-endian), flags (`u8`:
/// [`CHANGE_LATE`]) and padding.
const CHANGE_HEADER: usize = 40;
/// The change's offset of its flags.
const CHANGE_FLAGS: usize = 36;
/// A change flag: delivered by the confirmation of an early read ([`Change::is_late`]).
const CHANGE_LATE: u8 = 1;

mod chunk;

/// Every log row of one write to one base partition: one stream, one `cdc$time`.
///
/// Owned and cheap to clone (its rows are in a shared, reference-counted buffer), so it can
/// be kept, sent to another task or handed again after a failure. Rows are read with
/// [`ChangeRow`]'s accessors (the same as [`CDCRow`]'s); [`Change::row_changes`] groups them
/// by base row and merges them into [`RowImage`]s.
///
/// [`CDCRow`]: crate::consumer::CDCRow
#[derive(Clone)]
pub struct Change {
    /// The change's header ([`CHANGE_HEADER`]) and its row records, back to back, in a
    /// chunk carrying their schemas.
    data: chunk::Written<Schema>,
}

/// The rows of a [`Change`], in order.
struct Records<'c> {
    change: &'c Change,
    rest: &'c [u8],
    left: usize,
}

impl<'c> Iterator for Records<'c> {
    type Item = ChangeRow<'c>;

    fn next(&mut self) -> Option<ChangeRow<'c>> {
        if self.left == 0 {
            return None;
        }
        // Records are written by the assembler: a malformed one ends the rows.
        let len = read_u32(self.rest, 0)? as usize;
        let record = self.rest.get(..len)?;
        self.rest = self.rest.get(len..)?;
        self.left -= 1;
        self.change.row(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Records<'_> {}

impl Change {
    /// 16 bytes of the change's header, at `at`.
    fn id_at(&self, at: usize) -> [u8; 16] {
        // The header is written by the assembler: it is always there.
        self.data
            .bytes()
            .get(at..at + 16)
            .and_then(|b| b.try_into().ok())
            .unwrap_or_default()
    }

    /// The number of rows.
    #[inline]
    fn row_count(&self) -> usize {
        read_u32(self.data.bytes(), 32).unwrap_or(0) as usize
    }

    /// Whether the change is *late*: it became visible only after the reader's early read
    /// had passed its `cdc$time` (a write with a timestamp in the past, clock skew, a slow
    /// replica), so the confirmation of that window delivered it, after changes of its
    /// stream written later. Only readers with early reads
    /// ([`crate::CDCLogReaderBuilder::early_reads`]) deliver late changes; see the crate
    /// docs' "Early reads" for the order they keep.
    pub fn is_late(&self) -> bool {
        self.data
            .bytes()
            .get(CHANGE_FLAGS)
            .is_some_and(|f| f & CHANGE_LATE != 0)
    }

    /// The stream (log partition) of the change.
    pub fn stream_id(&self) -> StreamID {
        StreamID::new(self.id_at(0))
    }

    /// `cdc$time`: a timeuuid whose time is the base write's timestamp (microseconds).
    pub fn time(&self) -> Uuid {
        Uuid::from_bytes(self.id_at(16))
    }

    /// The write time of the change: the time part of `cdc$time` (microsecond precision).
    pub fn timestamp(&self) -> DateTime<Utc> {
        crate::base::time::timeuuid_to_datetime(&self.time())
    }

    /// The write time of the change in microseconds since the Unix epoch (the base write's
    /// `USING TIMESTAMP`).
    pub fn timestamp_micros(&self) -> i64 {
        crate::base::time::timeuuid_micros(&self.time())
    }

    /// The base table's name (without keyspace), as given to the reader.
    pub fn table(&self) -> &str {
        // Every schema of a chunk is of the assembler's table.
        self.data.schema(0).map_or("", |s| &s.table)
    }

    fn row<'c>(&'c self, record: &'c [u8]) -> Option<ChangeRow<'c>> {
        let schema = self.data.schema(usize::from(*record.get(4)?))?;
        let (operation, is_expiration) = OperationType::from_code(*record.get(5)? as i8);
        let flags = *record.get(6)?;
        let seq = read_u32(record, 8)? as i32;
        let ttl = u64::from(read_u32(record, 12)?) | (u64::from(read_u32(record, 16)?) << 32);
        let count = read_u32(record, 20)? as usize;
        Some(ChangeRow {
            header: RowHeader {
                stream_id: self.stream_id(),
                time: self.time(),
                batch_seq_no: seq,
                operation,
                is_expiration,
                ttl: (flags & FLAG_TTL != 0).then_some(ttl as i64),
                end_of_batch: flags & FLAG_END_OF_BATCH != 0,
                late: self.is_late(),
            },
            row: RowRef {
                index: &schema.index,
                specs: &schema.specs,
                cells: if flags & FLAG_SPAN != 0 {
                    CellSource::Span {
                        cells: record.get(RECORD_HEADER..)?,
                        count,
                    }
                } else {
                    CellSource::Packed {
                        record,
                        offsets: RECORD_HEADER,
                        count,
                    }
                },
            },
        })
    }

    /// Every row of the change in `cdc$batch_seq_no` order (pre-images, deltas, post-images).
    #[inline]
    pub fn rows(&self) -> impl ExactSizeIterator<Item = ChangeRow<'_>> + '_ {
        Records {
            change: self,
            rest: self.data.bytes().get(CHANGE_HEADER..).unwrap_or_default(),
            left: self.row_count(),
        }
    }

    fn rows_where(
        &self,
        keep: impl Fn(OperationType) -> bool + 'static,
    ) -> impl Iterator<Item = ChangeRow<'_>> + '_ {
        self.rows().filter(move |r| keep(r.operation()))
    }

    /// The pre-image rows (operation 0), if the table logs pre-images and the rows existed.
    pub fn pre_images(&self) -> impl Iterator<Item = ChangeRow<'_>> + '_ {
        self.rows_where(|op| op == OperationType::PreImage)
    }

    /// The delta rows: every row that is neither a pre-image nor a post-image.
    pub fn deltas(&self) -> impl Iterator<Item = ChangeRow<'_>> + '_ {
        self.rows_where(|op| !matches!(op, OperationType::PreImage | OperationType::PostImage))
    }

    /// The post-image rows (operation 9), if the table logs post-images.
    pub fn post_images(&self) -> impl Iterator<Item = ChangeRow<'_>> + '_ {
        self.rows_where(|op| op == OperationType::PostImage)
    }

    /// The operation of the first delta row (`None` for a change without deltas, which
    /// Scylla does not write).
    pub fn operation(&self) -> Option<OperationType> {
        self.deltas().next().map(|r| r.operation())
    }

    /// The TTL (seconds) the change set: the first `cdc$ttl` of its deltas, if any.
    pub fn ttl(&self) -> Option<i64> {
        self.deltas().find_map(|r| r.ttl())
    }

    /// The base rows the change touches, in the order of their first delta row: one
    /// [`RowChange`] per clustering row (and one for the static row), per range deletion and
    /// per partition deletion.
    pub fn row_changes(&self) -> Vec<RowChange<'_>> {
        let partition_deleted = self
            .deltas()
            .any(|r| r.operation() == OperationType::PartitionDelete);
        let mut out: Vec<RowChange<'_>> = Vec::new();
        // Deltas first, so that the groups are in the order of their deltas; then the images
        // join the group of their row.
        let is_image = |r: &ChangeRow<'_>| {
            matches!(
                r.operation(),
                OperationType::PreImage | OperationType::PostImage
            )
        };
        let ordered = self
            .rows()
            .filter(|r| !is_image(r))
            .chain(self.rows().filter(is_image));
        for row in ordered {
            let target = match row.operation() {
                OperationType::PartitionDelete => Target::Partition,
                OperationType::RowRangeDelInclLeft | OperationType::RowRangeDelExclLeft => {
                    Target::Range
                }
                OperationType::RowRangeDelInclRight | OperationType::RowRangeDelExclRight => {
                    // The end bound closes the last open range.
                    if let Some(open) = out
                        .iter_mut()
                        .rev()
                        .find(|c| c.target == Target::Range && c.deltas.len() == 1)
                    {
                        open.deltas.push(row);
                        continue;
                    }
                    Target::Range
                }
                _ => Target::Row,
            };
            if target == Target::Row
                && let Some(existing) = out
                    .iter_mut()
                    .find(|c| c.target == Target::Row && c.key_row().same_key(&row))
            {
                existing.add(row);
                continue;
            }
            let mut change = RowChange {
                target,
                first: row,
                pre_image: None,
                deltas: Vec::new(),
                post_image: None,
                partition_deleted,
            };
            change.add(row);
            out.push(change);
        }
        out
    }

    /// The state before the change of the first row it touches (the first of
    /// [`Change::row_changes`]; see [`RowChange::before`]);
    /// for changes that touch several rows use [`Change::row_changes`].
    pub fn before(&self) -> Result<Option<RowImage>, ColumnError> {
        match self.row_changes().first() {
            Some(c) => c.before(),
            None => Ok(None),
        }
    }

    /// The state after the change of the first row it touches (see [`RowChange::after`]);
    /// for changes that touch several rows use [`Change::row_changes`].
    pub fn after(&self) -> Result<Option<RowImage>, ColumnError> {
        match self.row_changes().first() {
            Some(c) => c.after(),
            None => Ok(None),
        }
    }
}

impl fmt::Debug for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Change")
            .field("table", &self.table())
            .field("stream_id", &self.stream_id())
            .field("time", &self.time())
            .field("rows", &self.rows().collect::<Vec<_>>())
            .finish()
    }
}

/// One row of a [`Change`], with the accessors of [`CDCRow`](crate::consumer::CDCRow).
#[derive(Clone, Copy)]
pub struct ChangeRow<'c> {
    header: RowHeader,
    row: RowRef<'c>,
}

impl<'c> ChangeRow<'c> {
    /// `cdc$batch_seq_no`: the row's position in the change.
    pub fn batch_seq_no(&self) -> i32 {
        self.header.batch_seq_no
    }

    /// `cdc$operation`.
    pub fn operation(&self) -> OperationType {
        self.header.operation
    }

    /// True for Scylla-initiated expirations (`cdc$operation` -3 and -4).
    pub fn is_expiration(&self) -> bool {
        self.header.is_expiration
    }

    /// `cdc$ttl`: the TTL (seconds) the row's cells were written with, if any.
    pub fn ttl(&self) -> Option<i64> {
        self.header.ttl
    }

    /// `cdc$end_of_batch`: true on the last row of the change.
    pub fn end_of_batch(&self) -> bool {
        self.header.end_of_batch
    }

    /// The value of a column, decoded as a [`CqlValue`]; `Ok(None)` when null.
    pub fn get_value(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        self.row.get_value_as(name)
    }

    /// The value of a column decoded straight into a Rust type, e.g.
    /// `row.get_value_as::<i32>("v")`.
    pub fn get_value_as<T: DeserializeValue<'c, 'c>>(
        &self,
        name: &str,
    ) -> Result<Option<T>, ColumnError> {
        self.row.get_value_as(name)
    }

    /// Whether `cdc$deleted_<name>` is true (see [`CDCRow::is_value_deleted`]).
    ///
    /// [`CDCRow::is_value_deleted`]: crate::consumer::CDCRow::is_value_deleted
    pub fn is_value_deleted(&self, name: &str) -> bool {
        self.row.is_value_deleted(name)
    }

    /// `cdc$deleted_elements_<name>` (see [`CDCRow::get_deleted_elements`]).
    ///
    /// [`CDCRow::get_deleted_elements`]: crate::consumer::CDCRow::get_deleted_elements
    pub fn get_deleted_elements(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        self.row.get_deleted_elements(name)
    }

    /// Whether the base table has a column of this name (key or value column).
    pub fn column_exists(&self, name: &str) -> bool {
        self.row.column_exists(name)
    }

    /// Whether the column has a `cdc$deleted_<name>` companion (every non-key column).
    pub fn column_deletable(&self, name: &str) -> bool {
        self.row.column_deletable(name)
    }

    /// Whether the column is a non-frozen collection or UDT.
    pub fn collection_exists(&self, name: &str) -> bool {
        self.row.collection_exists(name)
    }

    /// The names of the base table's columns, in the log's column order.
    pub fn get_non_cdc_column_names(&self) -> impl Iterator<Item = &'c str> + 'c {
        self.row.non_cdc_column_names()
    }

    /// Calls `f` with this row, its cells located beforehand in one pass, so that each
    /// accessor finds its column in constant time. Worth it to read many columns of a row
    /// of a wide table: a row kept as the page held it is otherwise walked from its first
    /// cell at each access.
    pub fn with_cells_located<R>(&self, f: impl FnOnce(&ChangeRow<'_>) -> R) -> R {
        let cells = self.row.all_cells();
        let located = ChangeRow {
            header: self.header,
            row: RowRef {
                index: self.row.index,
                specs: self.row.specs,
                cells: CellSource::Slices(&cells),
            },
        };
        f(&located)
    }

    /// The CQL type of a column of the log (for collections, the log's frozen type).
    pub fn column_type(&self, name: &str) -> Option<&'c ColumnType<'c>> {
        self.row.column_type(name)
    }

    /// The key columns (base columns without a `cdc$deleted_` companion), with the cells.
    fn key_cells(&self) -> impl Iterator<Item = (usize, Option<&'c [u8]>)> + '_ {
        let index: &'c ColumnIndex = self.row.index;
        index
            .non_cdc()
            .iter()
            .filter(move |&&p| index.is_key_column(p))
            .map(move |&p| (p, self.row.cell(p).flatten()))
    }

    /// Whether both rows have the same values in their key columns (one base row).
    fn same_key(&self, other: &ChangeRow<'_>) -> bool {
        let index = self.row.index;
        let mut mine = self.key_cells();
        for (p, theirs) in other.key_cells() {
            let name = other.row.index.name(p);
            let Some((q, cell)) = mine.next() else {
                return false;
            };
            if index.name(q) != name || cell != theirs {
                return false;
            }
        }
        mine.next().is_none()
    }

    /// The non-null key columns, decoded.
    fn key_image(&self, image: &mut RowImage) -> Result<(), ColumnError> {
        for (p, cell) in self.key_cells() {
            if cell.is_some()
                && let Some(name) = self.row.index.name(p)
            {
                image.set(name, self.column_type(name), self.get_value(name)?);
            }
        }
        Ok(())
    }

    /// The value columns (base columns with a `cdc$deleted_` companion), by name.
    fn value_columns(&self) -> impl Iterator<Item = &'c str> + '_ {
        let index: &'c ColumnIndex = self.row.index;
        index
            .non_cdc()
            .iter()
            .filter(move |&&p| !index.is_key_column(p))
            .filter_map(move |&p| index.name(p))
    }
}

impl fmt::Debug for ChangeRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChangeRow")
            .field("batch_seq_no", &self.batch_seq_no())
            .field("operation", &self.operation())
            .field("ttl", &self.ttl())
            .field("end_of_batch", &self.end_of_batch())
            .finish()
    }
}

/// What a [`RowChange`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// One clustering row, or the static row (its key has no clustering columns), or the
    /// only row of a table without clustering key.
    Row,
    /// A range of clustering rows (a range deletion: a start and an end bound row).
    Range,
    /// The whole partition (a partition deletion).
    Partition,
}

/// The rows of a [`Change`] about one base row (or range, or partition).
#[derive(Clone, Debug)]
pub struct RowChange<'c> {
    target: Target,
    /// The group's first row.
    first: ChangeRow<'c>,
    pre_image: Option<ChangeRow<'c>>,
    deltas: Vec<ChangeRow<'c>>,
    post_image: Option<ChangeRow<'c>>,
    /// The change also deletes the whole partition (which wins over its writes).
    partition_deleted: bool,
}

impl<'c> RowChange<'c> {
    fn add(&mut self, row: ChangeRow<'c>) {
        match row.operation() {
            OperationType::PreImage if self.pre_image.is_none() => self.pre_image = Some(row),
            OperationType::PostImage if self.post_image.is_none() => self.post_image = Some(row),
            _ => self.deltas.push(row),
        }
    }

    /// A row of this group (they share their key).
    fn key_row(&self) -> ChangeRow<'c> {
        self.first
    }

    /// What the rows are about.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The operation of the first delta row (`None` if there is none, e.g. a lone image).
    pub fn operation(&self) -> Option<OperationType> {
        self.deltas.first().map(|r| r.operation())
    }

    /// Whether this is a deletion: of the row, of a range or of the partition.
    pub fn is_delete(&self) -> bool {
        self.deltas.iter().any(|r| {
            matches!(
                r.operation(),
                OperationType::RowDelete
                    | OperationType::PartitionDelete
                    | OperationType::RowRangeDelInclLeft
                    | OperationType::RowRangeDelExclLeft
                    | OperationType::RowRangeDelInclRight
                    | OperationType::RowRangeDelExclRight
            )
        })
    }

    /// Whether this is the static row: a [`Target::Row`] whose key has a null column.
    pub fn is_static(&self) -> bool {
        self.target == Target::Row && self.key_row().key_cells().any(|(_, c)| c.is_none())
    }

    /// The pre-image row, if the table logs pre-images and the row existed.
    pub fn pre_image(&self) -> Option<ChangeRow<'c>> {
        self.pre_image
    }

    /// The delta rows, in log order (for a range: its start and end bound rows).
    pub fn deltas(&self) -> &[ChangeRow<'c>] {
        &self.deltas
    }

    /// The post-image row, if the table logs post-images and the row lives on.
    pub fn post_image(&self) -> Option<ChangeRow<'c>> {
        self.post_image
    }

    /// The non-null key columns of the row (for a range: of its start bound; for a
    /// partition: the partition key).
    pub fn key(&self) -> Result<RowImage, ColumnError> {
        let mut image = RowImage::default();
        self.key_row().key_image(&mut image)?;
        Ok(image)
    }

    /// The row before the change: its key columns and the columns of the pre-image.
    ///
    /// `None` without a pre-image: the table does not log pre-images (`preimage` off), the
    /// row did not exist, or this is a range or partition deletion (Scylla writes no
    /// pre-image for those). With `preimage: true` the image holds only the columns the
    /// write touched; with `'full'`, every column of the row. A column in the image whose
    /// value was null is present with [`None`].
    pub fn before(&self) -> Result<Option<RowImage>, ColumnError> {
        let Some(pre) = self.pre_image else {
            return Ok(None);
        };
        let mut image = RowImage::default();
        pre.key_image(&mut image)?;
        for name in pre.value_columns() {
            let value = pre.get_value(name)?;
            if value.is_some() || pre.is_value_deleted(name) {
                image.set(name, pre.column_type(name), value);
            }
        }
        Ok(Some(image))
    }

    /// The row after the change.
    ///
    /// `None` when the change deletes the row: a row deletion, a range or partition
    /// deletion, or a change that also deletes the partition. Otherwise the post-image when
    /// the table logs post-images (every column of the row); else [`RowChange::before`] (or
    /// only the key columns without a pre-image) merged with the deltas in order: a
    /// non-null delta value replaces the column, `cdc$deleted_X` makes `X` null; for a
    /// non-frozen collection `cdc$deleted_X` empties it, then the delta's elements are
    /// added (map keys and list element ids replace) and `cdc$deleted_elements_X` removed
    /// (a UDT: non-null fields replace, deleted field indexes become null). Without a
    /// pre-image holding `X`, a collection the delta only added to holds just the added
    /// elements, and columns the change did not touch are absent.
    pub fn after(&self) -> Result<Option<RowImage>, ColumnError> {
        if self.partition_deleted || self.is_delete() {
            return Ok(None);
        }
        if let Some(post) = self.post_image {
            let mut image = RowImage::default();
            post.key_image(&mut image)?;
            for name in post.value_columns() {
                image.set(name, post.column_type(name), post.get_value(name)?);
            }
            return Ok(Some(image));
        }
        let mut image = match self.before()? {
            Some(image) => image,
            None => self.key()?,
        };
        for delta in &self.deltas {
            for name in delta.value_columns() {
                let deleted = delta.is_value_deleted(name);
                let value = delta.get_value(name)?;
                if !delta.collection_exists(name) {
                    if value.is_some() {
                        image.set(name, delta.column_type(name), value);
                    } else if deleted {
                        image.set(name, delta.column_type(name), None);
                    }
                    continue;
                }
                let removed = delta.get_deleted_elements(name)?;
                if !deleted && value.is_none() && removed.is_none() {
                    continue;
                }
                let old = if deleted {
                    None
                } else {
                    image.get(name).cloned()
                };
                image.set(
                    name,
                    delta.column_type(name),
                    merge_collection(old, value, removed),
                );
            }
        }
        Ok(Some(image))
    }
}

/// `old` with `added` elements added and the `removed` keys (or UDT field indexes) removed.
fn merge_collection(
    old: Option<CqlValue>,
    added: Option<CqlValue>,
    removed: Option<CqlValue>,
) -> Option<CqlValue> {
    let removed: Vec<CqlValue> = match removed {
        Some(CqlValue::Set(v)) | Some(CqlValue::List(v)) => v,
        _ => Vec::new(),
    };
    let merged = match (old, added) {
        (None, None) => return None,
        (Some(v), None) | (None, Some(v)) => v,
        (Some(CqlValue::Map(mut old)), Some(CqlValue::Map(new))) => {
            for (k, v) in new {
                match old.iter_mut().find(|(ok, _)| *ok == k) {
                    Some(entry) => entry.1 = v,
                    None => old.push((k, v)),
                }
            }
            CqlValue::Map(old)
        }
        (Some(CqlValue::Set(mut old)), Some(CqlValue::Set(new))) => {
            for v in new {
                if !old.contains(&v) {
                    old.push(v);
                }
            }
            CqlValue::Set(old)
        }
        (
            Some(CqlValue::UserDefinedType {
                fields: mut old, ..
            }),
            Some(CqlValue::UserDefinedType {
                keyspace,
                name,
                fields: new,
            }),
        ) => {
            for (field, value) in new {
                if value.is_none() {
                    continue;
                }
                match old.iter_mut().find(|(f, _)| *f == field) {
                    Some(entry) => entry.1 = value,
                    None => old.push((field, value)),
                }
            }
            CqlValue::UserDefinedType {
                keyspace,
                name,
                fields: old,
            }
        }
        // Types that do not match: the delta wins.
        (Some(_), Some(new)) => new,
    };
    Some(match merged {
        CqlValue::Map(mut m) => {
            m.retain(|(k, _)| !removed.contains(k));
            CqlValue::Map(m)
        }
        CqlValue::Set(mut s) => {
            s.retain(|v| !removed.contains(v));
            CqlValue::Set(s)
        }
        CqlValue::UserDefinedType {
            keyspace,
            name,
            mut fields,
        } => {
            for r in &removed {
                let i = match r {
                    CqlValue::SmallInt(i) => usize::try_from(*i).ok(),
                    CqlValue::Int(i) => usize::try_from(*i).ok(),
                    _ => None,
                };
                if let Some(field) = i.and_then(|i| fields.get_mut(i)) {
                    field.1 = None;
                }
            }
            CqlValue::UserDefinedType {
                keyspace,
                name,
                fields,
            }
        }
        other => other,
    })
}

/// Column values of one base row, by column name: a column present with `None` is known to
/// be null; an absent column is not known (not in the image).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowImage {
    columns: Vec<ImageColumn>,
}

/// One column of a [`RowImage`].
#[derive(Debug, Clone, PartialEq)]
struct ImageColumn {
    name: String,
    /// The column's CQL type in the log (for [`RowImage::decode`]).
    typ: Option<ColumnType<'static>>,
    value: Option<CqlValue>,
}

impl RowImage {
    fn set(&mut self, name: &str, typ: Option<&ColumnType<'_>>, value: Option<CqlValue>) {
        match self.columns.iter_mut().find(|c| c.name == name) {
            Some(entry) => entry.value = value,
            None => self.columns.push(ImageColumn {
                name: name.to_owned(),
                typ: typ.map(|t| t.clone().into_owned()),
                value,
            }),
        }
    }

    /// The image decoded into a user's `#[derive(serde::Deserialize)]` struct (or a map), as
    /// [`CDCRow::decode`][crate::consumer::CDCRow::decode] decodes a row: a column null in
    /// the image, or not in it, goes to an
    /// `Option` field as `None`; see [`crate::decode`] for the Rust types each CQL type
    /// decodes into. Note that `after()` of a change without post-images holds only what the
    /// pre-image and the deltas say (with `preimage: true`, only the columns the write
    /// touched): decode it into `Option` fields.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::decode::DecodeError> {
        static UNKNOWN: ColumnType<'static> = ColumnType::Native(NativeType::Blob);
        crate::decode::from_columns(self.columns.iter().map(|c| {
            (
                c.name.as_str(),
                c.typ.as_ref().unwrap_or(&UNKNOWN),
                c.value.as_ref(),
            )
        }))
    }

    /// The column's value: `None` when it is null or not in the image.
    pub fn get(&self, name: &str) -> Option<&CqlValue> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.value.as_ref())
    }

    /// Whether the image holds the column (possibly as null).
    pub fn contains(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c.name == name)
    }

    /// The columns, key columns first then in the log's column order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&CqlValue>)> + '_ {
        self.columns
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_ref()))
    }

    /// The number of columns in the image.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the image holds no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }
}

pub(crate) mod assembler;

#[cfg(test)]
mod tests;
