//! What the user implements ([`Consumer`], [`ConsumerFactory`]) and what it receives
//! ([`CDCRow`], [`OperationType`]).
//!
//! A [`CDCRow`] is a view into one row of a page of the CDC log: its `cdc$` metadata is
//! decoded into public fields, while the base table's columns stay raw bytes of the page until
//! asked for. Column names are resolved through a [`ColumnIndex`] built once per log schema and
//! shared by every row, so reading a row costs no allocation and no per-row map.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::deserialize::FrameSlice;
use scylla::deserialize::value::DeserializeValue;
use scylla::frame::response::result::{ColumnSpec, ColumnType, NativeType};
use scylla::value::CqlValue;
use uuid::Uuid;

use crate::base::cdc_types::StreamID;
use crate::base::error::ColumnError;
use crate::decode::DecodeError;

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

/// What a log row describes (`cdc$operation`).
///
/// Codes outside those Scylla documents become [`OperationType::Unknown`] rather than an
/// error, so a newer Scylla does not stop the reader; consumers decide what to do with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationType {
    /// 0: the row's state before the change (pre-image).
    PreImage,
    /// 1: an update of a row (also column deletions and all static-row changes).
    RowUpdate,
    /// 2: an insert (the change sets the row marker).
    RowInsert,
    /// 3: a row deletion (-3: a row expired by Scylla, with `is_expiration`).
    RowDelete,
    /// 4: a partition deletion (-4: expired by Scylla, with `is_expiration`).
    PartitionDelete,
    /// 5: start bound of a range deletion, inclusive.
    RowRangeDelInclLeft,
    /// 6: start bound of a range deletion, exclusive.
    RowRangeDelExclLeft,
    /// 7: end bound of a range deletion, inclusive.
    RowRangeDelInclRight,
    /// 8: end bound of a range deletion, exclusive.
    RowRangeDelExclRight,
    /// 9: the row's state after the change (post-image).
    PostImage,
    /// A code this version of the library does not know.
    Unknown(i8),
}

impl OperationType {
    /// The operation of a `cdc$operation` code and whether it is a Scylla-initiated
    /// expiration (codes -3 and -4).
    pub fn from_code(code: i8) -> (Self, bool) {
        match code {
            0 => (Self::PreImage, false),
            1 => (Self::RowUpdate, false),
            2 => (Self::RowInsert, false),
            3 => (Self::RowDelete, false),
            4 => (Self::PartitionDelete, false),
            5 => (Self::RowRangeDelInclLeft, false),
            6 => (Self::RowRangeDelExclLeft, false),
            7 => (Self::RowRangeDelInclRight, false),
            8 => (Self::RowRangeDelExclRight, false),
            9 => (Self::PostImage, false),
            -3 => (Self::RowDelete, true),
            -4 => (Self::PartitionDelete, true),
            other => (Self::Unknown(other), false),
        }
    }
}

impl OperationType {
    /// The `cdc$operation` code of the operation ([`OperationType::from_code`] reversed).
    pub(crate) fn code(self, is_expiration: bool) -> i8 {
        let code = match self {
            Self::PreImage => 0,
            Self::RowUpdate => 1,
            Self::RowInsert => 2,
            Self::RowDelete => 3,
            Self::PartitionDelete => 4,
            Self::RowRangeDelInclLeft => 5,
            Self::RowRangeDelExclLeft => 6,
            Self::RowRangeDelInclRight => 7,
            Self::RowRangeDelExclRight => 8,
            Self::PostImage => 9,
            Self::Unknown(code) => return code,
        };
        if is_expiration { -code } else { code }
    }
}

impl fmt::Display for OperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PreImage => f.write_str("PreImage"),
            Self::RowUpdate => f.write_str("RowUpdate"),
            Self::RowInsert => f.write_str("RowInsert"),
            Self::RowDelete => f.write_str("RowDelete"),
            Self::PartitionDelete => f.write_str("PartitionDelete"),
            Self::RowRangeDelInclLeft => f.write_str("RowRangeDelInclLeft"),
            Self::RowRangeDelExclLeft => f.write_str("RowRangeDelExclLeft"),
            Self::RowRangeDelInclRight => f.write_str("RowRangeDelInclRight"),
            Self::RowRangeDelExclRight => f.write_str("RowRangeDelExclRight"),
            Self::PostImage => f.write_str("PostImage"),
            Self::Unknown(code) => write!(f, "Unknown({code})"),
        }
    }
}

const STREAM_ID: &str = "cdc$stream_id";
const TIME: &str = "cdc$time";
const BATCH_SEQ_NO: &str = "cdc$batch_seq_no";
const OPERATION: &str = "cdc$operation";
const TTL: &str = "cdc$ttl";
const END_OF_BATCH: &str = "cdc$end_of_batch";
const DELETED_PREFIX: &str = "cdc$deleted_";
const DELETED_ELEMENTS_PREFIX: &str = "cdc$deleted_elements_";

/// FNV-1a, the hash of [`ColumnIndex`]'s map of names: a consumer looks a column up by name
/// on every row, and the standard SipHash of a short name cost ~5% of a row's CPU. Column
/// names come from the table's schema, so the flooding SipHash protects against is not a
/// concern here.
#[derive(Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl Default for NameHasher {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by column names, hashed with [`NameHasher`].
pub(crate) type NameMap<V> = HashMap<String, V, std::hash::BuildHasherDefault<NameHasher>>;

/// Where each column of the log lives in a row, computed once per log schema.
#[derive(Debug)]
pub(crate) struct ColumnIndex {
    /// Column names in result order.
    names: Vec<String>,
    /// Every column by name.
    by_name: NameMap<usize>,
    /// Per column: the position of its `cdc$deleted_` companion.
    deleted: Vec<Option<usize>>,
    /// Per column: the position of its `cdc$deleted_elements_` companion.
    deleted_elements: Vec<Option<usize>>,
    /// Positions of the base table's columns (not starting with `cdc$`).
    non_cdc: Vec<usize>,
    stream_id: usize,
    time: usize,
    batch_seq_no: usize,
    operation: usize,
    ttl: Option<usize>,
    end_of_batch: Option<usize>,
    /// The column specs, owned, made the first time a change is assembled from this schema.
    owned_specs: OnceLock<Arc<[ColumnSpec<'static>]>>,
}

/// The `cdc$` metadata of one row, decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RowHeader {
    pub(crate) stream_id: StreamID,
    pub(crate) time: Uuid,
    pub(crate) batch_seq_no: i32,
    pub(crate) operation: OperationType,
    pub(crate) is_expiration: bool,
    pub(crate) ttl: Option<i64>,
    pub(crate) end_of_batch: bool,
}

fn is_native(typ: &ColumnType<'_>, accepted: &[NativeType]) -> bool {
    matches!(typ, ColumnType::Native(n) if accepted.contains(n))
}

impl ColumnIndex {
    /// Builds the index of a log page's columns, checking that the `cdc$` key and metadata
    /// columns are present with the types Scylla gives them.
    pub(crate) fn new(specs: &[ColumnSpec<'_>]) -> Result<Self, String> {
        let names: Vec<String> = specs.iter().map(|s| s.name().to_owned()).collect();
        let by_name: NameMap<usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        let find = |name: &str, accepted: &[NativeType]| -> Result<Option<usize>, String> {
            match by_name.get(name) {
                None => Ok(None),
                Some(&i) => {
                    let typ = specs.get(i).map(|s| s.typ());
                    match typ {
                        Some(t) if is_native(t, accepted) => Ok(Some(i)),
                        other => Err(format!("column {name} has unexpected type {other:?}")),
                    }
                }
            }
        };
        let required = |name: &str, accepted: &[NativeType]| -> Result<usize, String> {
            find(name, accepted)?.ok_or_else(|| format!("the log has no column {name}"))
        };
        let stream_id = required(STREAM_ID, &[NativeType::Blob])?;
        let time = required(TIME, &[NativeType::Timeuuid, NativeType::Uuid])?;
        let batch_seq_no = required(BATCH_SEQ_NO, &[NativeType::Int])?;
        let operation = required(
            OPERATION,
            &[NativeType::TinyInt, NativeType::SmallInt, NativeType::Int],
        )?;
        let ttl = find(TTL, &[NativeType::BigInt])?;
        let end_of_batch = find(END_OF_BATCH, &[NativeType::Boolean])?;

        let mut deleted = vec![None; names.len()];
        let mut deleted_elements = vec![None; names.len()];
        let mut non_cdc = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if name.starts_with("cdc$") {
                continue;
            }
            non_cdc.push(i);
            deleted[i] = by_name.get(&format!("{DELETED_PREFIX}{name}")).copied();
            deleted_elements[i] = by_name
                .get(&format!("{DELETED_ELEMENTS_PREFIX}{name}"))
                .copied();
        }
        Ok(Self {
            names,
            by_name,
            deleted,
            deleted_elements,
            non_cdc,
            stream_id,
            time,
            batch_seq_no,
            operation,
            ttl,
            end_of_batch,
            owned_specs: OnceLock::new(),
        })
    }

    /// The column specs of this schema, owned (copied from `specs` on the first call).
    pub(crate) fn owned_specs(&self, specs: &[ColumnSpec<'_>]) -> Arc<[ColumnSpec<'static>]> {
        self.owned_specs
            .get_or_init(|| specs.iter().map(|s| s.clone().into_owned()).collect())
            .clone()
    }

    /// Whether the column at `pos` is a base column that cannot be deleted (a key column).
    pub(crate) fn is_key_column(&self, pos: usize) -> bool {
        self.non_cdc.contains(&pos) && self.deleted.get(pos).copied().flatten().is_none()
    }

    /// Whether this index describes a page with these columns.
    pub(crate) fn matches(&self, specs: &[ColumnSpec<'_>]) -> bool {
        self.names.len() == specs.len()
            && self
                .names
                .iter()
                .zip(specs)
                .all(|(n, s)| n.as_str() == s.name())
    }

    /// Number of columns of a row.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The base table's columns (positions), in the log's column order.
    pub(crate) fn non_cdc(&self) -> &[usize] {
        &self.non_cdc
    }

    /// The name of the column at `pos`.
    pub(crate) fn name(&self, pos: usize) -> Option<&str> {
        self.names.get(pos).map(String::as_str)
    }

    /// The position of a column by name.
    pub(crate) fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// Decodes the `cdc$` metadata of a row, or says why the row is unusable.
    pub(crate) fn header(&self, cells: &[Option<&[u8]>]) -> Result<RowHeader, String> {
        let cell = |i: usize| cells.get(i).copied().flatten();
        let stream_bytes = cell(self.stream_id).ok_or("cdc$stream_id is null")?;
        let stream_id = StreamID::from_slice(stream_bytes).map_err(|e| e.to_string())?;
        let time_bytes: [u8; 16] = cell(self.time)
            .ok_or("cdc$time is null")?
            .try_into()
            .map_err(|_| "cdc$time is not 16 bytes")?;
        let time = Uuid::from_bytes(time_bytes);
        let seq_bytes: [u8; 4] = cell(self.batch_seq_no)
            .ok_or("cdc$batch_seq_no is null")?
            .try_into()
            .map_err(|_| "cdc$batch_seq_no is not 4 bytes")?;
        let batch_seq_no = i32::from_be_bytes(seq_bytes);
        let op_code = match cell(self.operation).ok_or("cdc$operation is null")? {
            [b] => *b as i8,
            [a, b] => i16::from_be_bytes([*a, *b]).clamp(i8::MIN as i16, i8::MAX as i16) as i8,
            [a, b, c, d] => {
                i32::from_be_bytes([*a, *b, *c, *d]).clamp(i8::MIN as i32, i8::MAX as i32) as i8
            }
            other => return Err(format!("cdc$operation has {} bytes", other.len())),
        };
        let (operation, is_expiration) = OperationType::from_code(op_code);
        let ttl = match self.ttl.and_then(cell) {
            None | Some([]) => None,
            Some(b) => Some(i64::from_be_bytes(
                b.try_into().map_err(|_| "cdc$ttl is not 8 bytes")?,
            )),
        };
        let end_of_batch = matches!(self.end_of_batch.and_then(cell), Some([b]) if *b != 0);
        Ok(RowHeader {
            stream_id,
            time,
            batch_seq_no,
            operation,
            is_expiration,
            ttl,
            end_of_batch,
        })
    }
}

/// Where the cells of a row are: slices of a page, or a row record of a change's buffer.
#[derive(Clone, Copy)]
pub(crate) enum CellSource<'a> {
    /// One slice per column, borrowed from a page.
    Slices(&'a [Option<&'a [u8]>]),
    /// A row record: `count` cell ranges `(start, end)` (two little-endian `u32`s each,
    /// relative to the record; `start == u32::MAX` for null) from `offsets` on, then the
    /// cells' bytes.
    Packed {
        /// The row's record.
        record: &'a [u8],
        /// Where the cell ranges start in `record`.
        offsets: usize,
        /// The number of cells.
        count: usize,
    },
    /// A row as a page holds it: `count` cells back to back, each after its big-endian
    /// `int` length (negative: null).
    Span {
        /// The row's bytes.
        cells: &'a [u8],
        /// The number of cells.
        count: usize,
    },
}

/// A big-endian `i32` at `at` in `bytes`, if it is there.
fn read_i32_be(bytes: &[u8], at: usize) -> Option<i32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(i32::from_be_bytes(b))
}

/// The bytes of a row as `page` holds them (see [`CellSource::Span`]), found from its
/// cells, which were sliced out of `page`: from the length before the first cell to the end
/// of the last one (a null cell is its length alone). `None` when the first cell is null or
/// the cells are not in `page`. (The stream reader knows a row's bytes as it splits the
/// page; tests make rows from cells.)
#[cfg(test)]
pub(crate) fn row_span<'p>(page: &'p [u8], cells: &[Option<&[u8]>]) -> Option<&'p [u8]> {
    let base = page.as_ptr() as usize;
    let first = (*cells.first()?)?;
    let start = (first.as_ptr() as usize)
        .checked_sub(base)?
        .checked_sub(4)?;
    let (last_at, last) = cells
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, c)| c.map(|c| (i, c)))?;
    let trailing_nulls = cells.len() - 1 - last_at;
    let end = (last.as_ptr() as usize)
        .checked_sub(base)?
        .checked_add(last.len())?
        .checked_add(4 * trailing_nulls)?;
    let span = page.get(start..end)?;
    // The first cell's length is where the layout says; the rest was parsed by the driver.
    (read_i32_be(span, 0)? as usize == first.len()).then_some(span)
}

/// A little-endian `u32` at `at` in `bytes`, if it is there.
pub(crate) fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

/// The logic shared by [`CDCRow`] and [`crate::ChangeRow`]: reading the columns of one row
/// through the log's [`ColumnIndex`].
#[derive(Clone, Copy)]
pub(crate) struct RowRef<'a> {
    pub(crate) index: &'a Arc<ColumnIndex>,
    pub(crate) specs: &'a [ColumnSpec<'a>],
    pub(crate) cells: CellSource<'a>,
}

impl<'a> RowRef<'a> {
    /// The cell at `pos`: `None` past the end, `Some(None)` when null.
    pub(crate) fn cell(&self, pos: usize) -> Option<Option<&'a [u8]>> {
        match self.cells {
            CellSource::Slices(cells) => cells.get(pos).copied(),
            CellSource::Packed {
                record,
                offsets,
                count,
            } => {
                if pos >= count {
                    return None;
                }
                let at = offsets + pos * 8;
                let start = read_u32(record, at)?;
                if start == u32::MAX {
                    return Some(None);
                }
                let end = read_u32(record, at + 4)?;
                Some(record.get(start as usize..end as usize))
            }
            CellSource::Span { cells, count } => {
                if pos >= count {
                    return None;
                }
                let mut at = 0usize;
                for _ in 0..pos {
                    let n = read_i32_be(cells, at)?;
                    at = at.checked_add(4 + usize::try_from(n).unwrap_or(0))?;
                }
                match usize::try_from(read_i32_be(cells, at)?) {
                    Err(_) => Some(None),
                    Ok(n) => Some(Some(cells.get(at + 4..(at + 4).checked_add(n)?)?)),
                }
            }
        }
    }

    /// The number of cells of the row.
    pub(crate) fn len(&self) -> usize {
        match self.cells {
            CellSource::Slices(cells) => cells.len(),
            CellSource::Packed { count, .. } | CellSource::Span { count, .. } => count,
        }
    }

    fn lookup(&self, name: &str) -> Result<usize, ColumnError> {
        self.index
            .position(name)
            .ok_or_else(|| ColumnError::NoSuchColumn(name.to_owned()))
    }

    fn decode_at<T: DeserializeValue<'a, 'a>>(&self, pos: usize) -> Result<Option<T>, ColumnError> {
        let name = || self.index.names.get(pos).cloned().unwrap_or_default();
        let (Some(spec), Some(cell)) = (self.specs.get(pos), self.cell(pos)) else {
            return Err(ColumnError::NoSuchColumn(name()));
        };
        let Some(bytes) = cell else {
            return Ok(None);
        };
        let typ: &'a ColumnType<'a> = spec.typ();
        T::type_check(typ).map_err(|source| ColumnError::Type {
            column: name(),
            source,
        })?;
        T::deserialize(typ, Some(FrameSlice::new_borrowed(bytes)))
            .map(Some)
            .map_err(|source| ColumnError::Decode {
                column: name(),
                source,
            })
    }

    pub(crate) fn get_value_as<T: DeserializeValue<'a, 'a>>(
        &self,
        name: &str,
    ) -> Result<Option<T>, ColumnError> {
        self.decode_at(self.lookup(name)?)
    }

    pub(crate) fn is_value_deleted(&self, name: &str) -> bool {
        self.index
            .position(name)
            .and_then(|p| self.index.deleted.get(p).copied().flatten())
            .and_then(|p| self.cell(p).flatten())
            .is_some_and(|b| matches!(b, [v] if *v != 0))
    }

    fn deleted_elements_position(&self, name: &str) -> Result<usize, ColumnError> {
        self.index
            .position(name)
            .and_then(|p| self.index.deleted_elements.get(p).copied().flatten())
            .ok_or_else(|| ColumnError::NoSuchColumn(format!("{DELETED_ELEMENTS_PREFIX}{name}")))
    }

    pub(crate) fn get_deleted_elements(&self, name: &str) -> Result<Option<CqlValue>, ColumnError> {
        self.decode_at(self.deleted_elements_position(name)?)
    }

    pub(crate) fn column_exists(&self, name: &str) -> bool {
        !name.starts_with("cdc$") && self.index.position(name).is_some()
    }

    pub(crate) fn column_deletable(&self, name: &str) -> bool {
        self.index
            .position(name)
            .and_then(|p| self.index.deleted.get(p).copied().flatten())
            .is_some()
    }

    pub(crate) fn collection_exists(&self, name: &str) -> bool {
        self.deleted_elements_position(name).is_ok()
    }

    pub(crate) fn non_cdc_column_names(&self) -> impl Iterator<Item = &'a str> + 'a {
        let index: &'a ColumnIndex = self.index;
        index
            .non_cdc
            .iter()
            .filter_map(move |&p| index.names.get(p).map(String::as_str))
    }

    pub(crate) fn column_type(&self, name: &str) -> Option<&'a ColumnType<'a>> {
        self.index
            .position(name)
            .and_then(|p| self.specs.get(p))
            .map(|s| s.typ())
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
    /// them, see [`row_span`]).
    #[cfg(test)]
    pub(crate) fn with_page(mut self, page: &'a [u8]) -> Self {
        if let CellSource::Slices(cells) = self.row.cells {
            self.span = row_span(page, cells);
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
pub(crate) mod tests {
    use super::*;
    use scylla::frame::response::result::{CollectionType, TableSpec};

    /// A column spec of the test log table.
    pub(crate) fn spec(name: &str, typ: ColumnType<'static>) -> ColumnSpec<'static> {
        ColumnSpec::owned(
            name.to_owned(),
            typ,
            TableSpec::owned("ks".into(), "t_scylla_cdc_log".into()),
        )
    }

    /// The log of `t (pk int, ck int, v int, s set<int>)`, in Scylla's column order.
    pub(crate) fn log_specs() -> Vec<ColumnSpec<'static>> {
        let set_int = ColumnType::Collection {
            frozen: true,
            typ: CollectionType::Set(Box::new(ColumnType::Native(NativeType::Int))),
        };
        vec![
            spec(STREAM_ID, ColumnType::Native(NativeType::Blob)),
            spec(TIME, ColumnType::Native(NativeType::Timeuuid)),
            spec(BATCH_SEQ_NO, ColumnType::Native(NativeType::Int)),
            spec("cdc$deleted_elements_s", set_int.clone()),
            spec("cdc$deleted_s", ColumnType::Native(NativeType::Boolean)),
            spec("cdc$deleted_v", ColumnType::Native(NativeType::Boolean)),
            spec(END_OF_BATCH, ColumnType::Native(NativeType::Boolean)),
            spec(OPERATION, ColumnType::Native(NativeType::TinyInt)),
            spec(TTL, ColumnType::Native(NativeType::BigInt)),
            spec("ck", ColumnType::Native(NativeType::Int)),
            spec("pk", ColumnType::Native(NativeType::Int)),
            spec("s", set_int),
            spec("v", ColumnType::Native(NativeType::Int)),
        ]
    }

    /// Cells of one row of [`log_specs`], as raw bytes.
    #[derive(Clone)]
    pub(crate) struct TestRow {
        pub(crate) stream: [u8; 16],
        pub(crate) time: Uuid,
        pub(crate) seq: i32,
        pub(crate) op: i8,
        pub(crate) ttl: Option<i64>,
        pub(crate) eob: bool,
        pub(crate) pk: i32,
        pub(crate) ck: Option<i32>,
        pub(crate) v: Option<i32>,
        pub(crate) del_v: bool,
        pub(crate) s: Option<Vec<i32>>,
        pub(crate) dele_s: Option<Vec<i32>>,
    }

    fn set_bytes(items: &[i32]) -> Vec<u8> {
        let mut out = (items.len() as i32).to_be_bytes().to_vec();
        for i in items {
            out.extend_from_slice(&4i32.to_be_bytes());
            out.extend_from_slice(&i.to_be_bytes());
        }
        out
    }

    impl TestRow {
        /// A delta row of stream `stream` with the given time and sequence number.
        pub(crate) fn new(stream: [u8; 16], time: Uuid, seq: i32) -> Self {
            Self {
                stream,
                time,
                seq,
                op: 1,
                ttl: None,
                eob: true,
                pk: 0,
                ck: Some(0),
                v: None,
                del_v: false,
                s: None,
                dele_s: None,
            }
        }

        /// The row's cells in [`log_specs`] order.
        pub(crate) fn cells(&self) -> Vec<Option<Vec<u8>>> {
            vec![
                Some(self.stream.to_vec()),
                Some(self.time.as_bytes().to_vec()),
                Some(self.seq.to_be_bytes().to_vec()),
                self.dele_s.as_deref().map(set_bytes),
                None,
                self.del_v.then(|| vec![1]),
                self.eob.then(|| vec![1]),
                Some(vec![self.op as u8]),
                self.ttl.map(|t| t.to_be_bytes().to_vec()),
                self.ck.map(|c| c.to_be_bytes().to_vec()),
                Some(self.pk.to_be_bytes().to_vec()),
                self.s.as_deref().map(set_bytes),
                self.v.map(|v| v.to_be_bytes().to_vec()),
            ]
        }

        /// The row serialized as a CQL row (each cell as `[int length][bytes]`).
        pub(crate) fn serialize(&self) -> Vec<u8> {
            serialize_cells(&self.cells())
        }
    }

    /// Serializes cells as a CQL row.
    pub(crate) fn serialize_cells(cells: &[Option<Vec<u8>>]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in cells {
            match c {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    out.extend_from_slice(b);
                }
            }
        }
        out
    }

    fn as_refs(cells: &[Option<Vec<u8>>]) -> Vec<Option<&[u8]>> {
        cells.iter().map(|c| c.as_deref()).collect()
    }

    /// Where each of a row's four cells is in its page (`None`: null).
    type CellRanges = [Option<(usize, usize)>; 4];

    /// A page of two rows (cells after their big-endian lengths, -1: null) and the cells
    /// of each as slices of it.
    fn two_row_page() -> (Vec<u8>, [CellRanges; 2]) {
        let mut page = Vec::new();
        let mut put = |cell: Option<&[u8]>| match cell {
            None => {
                page.extend_from_slice(&(-1i32).to_be_bytes());
                None
            }
            Some(c) => {
                page.extend_from_slice(&(c.len() as i32).to_be_bytes());
                let at = page.len();
                page.extend_from_slice(c);
                Some((at, at + c.len()))
            }
        };
        let first = [put(Some(b"ab")), put(None), put(Some(b"")), put(None)];
        let second = [
            put(Some(b"xyz")),
            put(Some(b"q")),
            put(None),
            put(Some(b"k")),
        ];
        (page, [first, second])
    }

    #[test]
    fn a_row_span_covers_its_cells_and_trailing_nulls_and_reads_back() {
        let (page, rows) = two_row_page();
        let slices = |r: &CellRanges| -> Vec<Option<&[u8]>> {
            r.iter().map(|c| c.map(|(a, b)| &page[a..b])).collect()
        };
        let first = slices(&rows[0]);
        let second = slices(&rows[1]);
        // Row one: 4+2, 4 (null), 4+0 (empty), 4 (trailing null) bytes.
        let span = row_span(&page, &first).expect("a span");
        assert_eq!(span, &page[..18]);
        let span2 = row_span(&page, &second).expect("a span");
        assert_eq!(span2, &page[18..]);
        for (span, cells) in [(span, &first), (span2, &second)] {
            let row = CellSource::Span {
                cells: span,
                count: 4,
            };
            let index = Arc::new(ColumnIndex::new(&log_specs()).unwrap());
            let specs = log_specs();
            let r = RowRef {
                index: &index,
                specs: &specs,
                cells: row,
            };
            let read: Vec<_> = (0..4).map(|p| r.cell(p).unwrap()).collect();
            assert_eq!(&read, cells);
            assert_eq!(r.cell(4), None);
        }
        // A row whose first cell is null, or whose cells are not in the page, has none.
        let mut null_first = first.clone();
        null_first[0] = None;
        assert_eq!(row_span(&page, &null_first), None);
        let elsewhere = b"ab".to_vec();
        assert_eq!(row_span(&page, &[Some(&elsewhere[..])]), None);
        assert_eq!(row_span(&[], &first), None);
        // A span cut short reads as missing cells, not a panic.
        let cut = CellSource::Span {
            cells: &page[..5],
            count: 4,
        };
        let index = Arc::new(ColumnIndex::new(&log_specs()).unwrap());
        let specs = log_specs();
        let r = RowRef {
            index: &index,
            specs: &specs,
            cells: cut,
        };
        assert_eq!(r.cell(0), None);
        assert_eq!(r.cell(3), None);
    }

    #[test]
    fn operation_codes() {
        assert_eq!(
            OperationType::from_code(0),
            (OperationType::PreImage, false)
        );
        assert_eq!(
            OperationType::from_code(2),
            (OperationType::RowInsert, false)
        );
        assert_eq!(
            OperationType::from_code(8),
            (OperationType::RowRangeDelExclRight, false)
        );
        assert_eq!(
            OperationType::from_code(9),
            (OperationType::PostImage, false)
        );
        assert_eq!(
            OperationType::from_code(-3),
            (OperationType::RowDelete, true)
        );
        assert_eq!(
            OperationType::from_code(-4),
            (OperationType::PartitionDelete, true)
        );
        assert_eq!(
            OperationType::from_code(42),
            (OperationType::Unknown(42), false)
        );
        assert_eq!(OperationType::Unknown(-7).to_string(), "Unknown(-7)");
        for code in -128i8..=127 {
            let (op, expiration) = OperationType::from_code(code);
            assert_eq!(op.code(expiration), code, "{op}");
        }
    }

    #[test]
    fn index_finds_columns_and_companions() {
        let specs = log_specs();
        let idx = ColumnIndex::new(&specs).unwrap();
        assert!(idx.matches(&specs));
        assert_eq!(idx.len(), 13);
        assert_eq!(idx.deleted[12], Some(5));
        assert_eq!(idx.deleted_elements[11], Some(3));
        assert_eq!(idx.deleted[10], None);
        let mut other = specs.clone();
        other.pop();
        assert!(!idx.matches(&other));
    }

    #[test]
    fn index_rejects_missing_or_mistyped_metadata() {
        let mut specs = log_specs();
        specs.remove(1);
        assert!(ColumnIndex::new(&specs).unwrap_err().contains("cdc$time"));
        let mut specs = log_specs();
        specs[7] = spec(OPERATION, ColumnType::Native(NativeType::Text));
        assert!(
            ColumnIndex::new(&specs)
                .unwrap_err()
                .contains("cdc$operation")
        );
    }

    #[test]
    fn header_decodes_metadata() {
        let specs = log_specs();
        let idx = ColumnIndex::new(&specs).unwrap();
        let t = crate::base::time::tests::timeuuid(5, 7);
        let mut r = TestRow::new([3; 16], t, 2);
        r.op = -4;
        r.ttl = Some(100);
        let cells = r.cells();
        let h = idx.header(&as_refs(&cells)).unwrap();
        assert_eq!(h.stream_id, StreamID::new([3; 16]));
        assert_eq!(h.time, t);
        assert_eq!(h.batch_seq_no, 2);
        assert_eq!(h.operation, OperationType::PartitionDelete);
        assert!(h.is_expiration);
        assert_eq!(h.ttl, Some(100));
        assert!(h.end_of_batch);
    }

    #[test]
    fn header_rejects_bad_rows_without_panicking() {
        let specs = log_specs();
        let idx = ColumnIndex::new(&specs).unwrap();
        let good = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0).cells();
        for (pos, bad) in [
            (0, None),
            (0, Some(vec![1; 15])),
            (1, None),
            (1, Some(vec![0; 3])),
            (2, Some(vec![0; 2])),
            (7, None),
            (7, Some(vec![0; 3])),
            (8, Some(vec![0; 3])),
        ] {
            let mut cells = good.clone();
            cells[pos] = bad;
            assert!(idx.header(&as_refs(&cells)).is_err(), "column {pos}");
        }
        // Too few cells: every lookup is checked.
        assert!(idx.header(&[]).is_err());
    }

    #[test]
    fn row_accessors() {
        let specs = log_specs();
        let idx = Arc::new(ColumnIndex::new(&specs).unwrap());
        let mut r = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0);
        r.v = Some(42);
        r.del_v = true;
        r.dele_s = Some(vec![3, 1]);
        r.pk = 9;
        let cells = r.cells();
        let refs = as_refs(&cells);
        let h = idx.header(&refs).unwrap();
        let mut row = CDCRow::new(h, &idx, &specs, &refs);

        assert_eq!(row.get_value("v").unwrap(), Some(CqlValue::Int(42)));
        assert_eq!(row.get_value_as::<i32>("pk").unwrap(), Some(9));
        assert_eq!(row.get_value("s").unwrap(), None);
        assert!(matches!(
            row.get_value("nope"),
            Err(ColumnError::NoSuchColumn(n)) if n == "nope"
        ));
        assert!(matches!(
            row.get_value_as::<String>("v"),
            Err(ColumnError::Type { .. })
        ));
        assert!(row.is_value_deleted("v"));
        assert!(!row.is_value_deleted("s"));
        assert!(!row.is_value_deleted("pk"));
        assert!(!row.is_value_deleted("nope"));
        assert_eq!(
            row.get_deleted_elements("s").unwrap(),
            Some(CqlValue::Set(vec![CqlValue::Int(3), CqlValue::Int(1)]))
        );
        assert!(row.get_deleted_elements("v").is_err());
        assert!(row.column_exists("pk") && row.column_exists("v"));
        assert!(!row.column_exists("cdc$ttl") && !row.column_exists("x"));
        assert!(row.column_deletable("v") && !row.column_deletable("ck"));
        assert!(row.collection_exists("s") && !row.collection_exists("v"));
        assert_eq!(
            row.get_non_cdc_column_names().collect::<Vec<_>>(),
            vec!["ck", "pk", "s", "v"]
        );
        assert!(matches!(
            row.column_type("v"),
            Some(ColumnType::Native(NativeType::Int))
        ));

        assert_eq!(row.take_value("v").unwrap(), Some(CqlValue::Int(42)));
        assert_eq!(row.take_value("v").unwrap(), None);
        assert_eq!(row.get_value("v").unwrap(), None);
        assert!(row.take_deleted_elements("s").unwrap().is_some());
        assert_eq!(row.take_deleted_elements("s").unwrap(), None);
        assert!(format!("{row:?}").contains("RowUpdate"));
        assert_eq!(row.timestamp_micros(), 1);
        assert_eq!(row.timestamp().timestamp_micros(), 1);
    }

    #[test]
    fn malformed_value_is_an_error() {
        let specs = log_specs();
        let idx = Arc::new(ColumnIndex::new(&specs).unwrap());
        let r = TestRow::new([1; 16], crate::base::time::tests::timeuuid(1, 1), 0);
        let mut cells = r.cells();
        cells[12] = Some(vec![1, 2, 3]); // an int of 3 bytes
        cells[11] = Some(vec![0, 0, 0, 5]); // a set claiming 5 elements, with none
        let refs = as_refs(&cells);
        let h = idx.header(&refs).unwrap();
        let row = CDCRow::new(h, &idx, &specs, &refs);
        assert!(matches!(
            row.get_value("v"),
            Err(ColumnError::Decode { .. })
        ));
        assert!(matches!(
            row.get_value("s"),
            Err(ColumnError::Decode { .. })
        ));
    }
}
