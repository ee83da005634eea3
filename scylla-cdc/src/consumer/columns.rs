//! Reading one log row, for [`CDCRow`](super::CDCRow) and
//! [`ChangeRow`](crate::change::ChangeRow) alike: the [`ColumnIndex`] of a log schema (where
//! each column and its `cdc$deleted_` companions are, built once per schema), a row's decoded
//! `cdc$` metadata ([`RowHeader`]), its cells ([`CellSource`]: sliced from a page, or packed
//! in a change's record) and the accessors over them ([`RowRef`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use scylla::deserialize::FrameSlice;
use scylla::deserialize::value::DeserializeValue;
use scylla::frame::response::result::{ColumnSpec, ColumnType, NativeType};
use scylla::value::CqlValue;
use uuid::Uuid;

use super::operation::OperationType;
use crate::base::cdc_types::StreamID;
use crate::base::error::ColumnError;

pub(super) const STREAM_ID: &str = "cdc$stream_id";
pub(super) const TIME: &str = "cdc$time";
pub(super) const BATCH_SEQ_NO: &str = "cdc$batch_seq_no";
pub(super) const OPERATION: &str = "cdc$operation";
pub(super) const TTL: &str = "cdc$ttl";
pub(super) const END_OF_BATCH: &str = "cdc$end_of_batch";
pub(super) const DELETED_PREFIX: &str = "cdc$deleted_";
pub(super) const DELETED_ELEMENTS_PREFIX: &str = "cdc$deleted_elements_";

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
    pub(super) deleted: Vec<Option<usize>>,
    /// Per column: the position of its `cdc$deleted_elements_` companion.
    pub(super) deleted_elements: Vec<Option<usize>>,
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
    /// Delivered by the confirmation of an early read: visible only after the early read
    /// passed its `cdc$time` (see [`crate::CDCRow::is_late`]).
    pub(crate) late: bool,
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
            late: false,
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

/// The logic shared by [`CDCRow`](super::CDCRow) and [`crate::ChangeRow`]: reading the
/// columns of one row through the log's [`ColumnIndex`].
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

    /// Every cell of the row, located in one pass (`cell` walks a [`CellSource::Span`]
    /// from its first cell at each call).
    pub(crate) fn all_cells(&self) -> Vec<Option<&'a [u8]>> {
        match self.cells {
            CellSource::Span { cells, count } => {
                let mut out = Vec::with_capacity(count);
                let mut at = 0usize;
                for _ in 0..count {
                    let Some(n) = read_i32_be(cells, at) else {
                        break;
                    };
                    match usize::try_from(n) {
                        Err(_) => {
                            out.push(None);
                            at += 4;
                        }
                        Ok(n) => {
                            let start = at + 4;
                            let Some(cell) =
                                start.checked_add(n).and_then(|end| cells.get(start..end))
                            else {
                                break;
                            };
                            out.push(Some(cell));
                            at = start + n;
                        }
                    }
                }
                out
            }
            _ => (0..self.len()).map_while(|p| self.cell(p)).collect(),
        }
    }

    /// The number of cells of the row.
    pub(crate) fn len(&self) -> usize {
        match self.cells {
            CellSource::Slices(cells) => cells.len(),
            CellSource::Packed { count, .. } | CellSource::Span { count, .. } => count,
        }
    }

    pub(super) fn lookup(&self, name: &str) -> Result<usize, ColumnError> {
        self.index
            .position(name)
            .ok_or_else(|| ColumnError::NoSuchColumn(name.to_owned()))
    }

    pub(super) fn decode_at<T: DeserializeValue<'a, 'a>>(
        &self,
        pos: usize,
    ) -> Result<Option<T>, ColumnError> {
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

    pub(super) fn deleted_elements_position(&self, name: &str) -> Result<usize, ColumnError> {
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
