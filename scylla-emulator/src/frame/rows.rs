//! [`RowsWriter`]: streams a RESULT Rows frame straight into the output buffer, cell by
//! cell, with no per-cell allocation; the row count and frame length are patched at the end.

use bytes::{BufMut, BytesMut};

use super::header::{PROTOCOL_VERSION, finish_frame, opcode, start_frame};
use super::result::{ResultMetadata, put_result_metadata, result_kind};
use crate::types::value::Value;

/// Why a [`RowsWriter`] refused to finish (the partial frame has been removed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RowsWriterError {
    /// A row did not have one cell per column.
    #[error("row {row} has {cells} cells, the metadata has {columns} columns")]
    CellCount {
        /// Zero-based row index.
        row: usize,
        /// Cells written in that row (counted up to one past the column count).
        cells: usize,
        /// Columns in the metadata.
        columns: usize,
    },
    /// `finish` was called in the middle of a row.
    #[error("the last row was not ended")]
    UnfinishedRow,
    /// A cell or the row count does not fit the protocol's `[int]` lengths.
    #[error("a cell or the row count is too large for the protocol")]
    TooLarge,
    /// A cell closure shrank the buffer below the cell's start.
    #[error("a cell writer removed bytes it did not write")]
    Truncated,
}

/// Writes one ROWS response frame directly into `out`:
///
/// ```text
/// let mut w = RowsWriter::begin_with(&mut out, stream, &meta, paging_state, false, &[]);
/// for row in page {
///     w.cell(Some(&row.pk));            // a value
///     w.null_cell();                    // null
///     w.cell_with(|buf| buf.put_i32(7)); // encoded in place, length patched after
///     w.end_row();
/// }
/// w.finish()?; // patches rows_count and the frame length
/// ```
///
/// Dropping the writer without [`RowsWriter::finish`] (or a failed `finish`) removes the
/// partial frame from `out`, so an error can be sent instead.
#[derive(Debug)]
pub(crate) struct RowsWriter<'a> {
    /// The connection's output buffer.
    out: &'a mut BytesMut,
    /// Offset of this frame's header in `out`.
    frame_start: usize,
    /// Offset of the `rows_count` placeholder.
    rows_count_at: usize,
    /// Offset of the metadata flags.
    meta_at: usize,
    /// Cells per row.
    columns: usize,
    /// Cells written in the current row.
    cells_in_row: usize,
    /// Rows ended.
    rows: usize,
    /// The first misuse seen; `finish` reports it.
    error: Option<RowsWriterError>,
    /// Set by `finish`: the drop must not remove the frame.
    done: bool,
}

impl<'a> RowsWriter<'a> {
    /// [`RowsWriter::begin_with`] with full metadata and no warnings.
    #[cfg(test)]
    pub(crate) fn begin(
        out: &'a mut BytesMut,
        stream: i16,
        meta: &ResultMetadata,
        paging_state: Option<&[u8]>,
    ) -> Self {
        Self::begin_with(out, stream, meta, paging_state, false, &[])
    }

    /// Starts a ROWS frame on `stream`; `paging_state` set means more pages follow
    /// (has-more-pages flag and the state are sent), `skip_metadata` sends NO_METADATA (when
    /// the request set skip-metadata), and `warnings` go in the header's warning list.
    pub(crate) fn begin_with(
        out: &'a mut BytesMut,
        stream: i16,
        meta: &ResultMetadata,
        paging_state: Option<&[u8]>,
        skip_metadata: bool,
        warnings: &[String],
    ) -> Self {
        let frame_start = start_frame(out, stream, opcode::RESULT, warnings);
        out.put_i32(result_kind::ROWS);
        let meta_at = out.len();
        put_result_metadata(out, meta, paging_state, skip_metadata);
        let rows_count_at = out.len();
        out.put_i32(0);
        RowsWriter {
            out,
            frame_start,
            rows_count_at,
            meta_at,
            columns: meta.columns.len(),
            cells_in_row: 0,
            rows: 0,
            error: None,
            done: false,
        }
    }

    /// Records the first error.
    fn fail(&mut self, e: RowsWriterError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// Counts a cell of the current row and flags a row with too many.
    fn count_cell(&mut self) {
        self.cells_in_row += 1;
        if self.cells_in_row > self.columns {
            self.fail(RowsWriterError::CellCount {
                row: self.rows,
                cells: self.cells_in_row,
                columns: self.columns,
            });
        }
    }

    /// Appends a cell: `Some(bytes)` a value (possibly empty), `None` null.
    #[inline]
    pub(crate) fn cell(&mut self, value: Option<&[u8]>) {
        match value {
            None => self.out.put_i32(-1),
            Some(v) => match i32::try_from(v.len()) {
                Ok(n) => {
                    self.out.put_i32(n);
                    self.out.extend_from_slice(v);
                }
                Err(_) => self.fail(RowsWriterError::TooLarge),
            },
        }
        self.count_cell();
    }

    /// Appends a cell holding `value`'s encoding: its length first when
    /// [`Value::encode_sized`] knows it (one pass, no length patched afterwards).
    #[inline]
    pub(crate) fn value_cell(&mut self, value: &Value) {
        if value.encode_sized(self.out) {
            self.count_cell();
        } else {
            self.cell_with(|buf| value.encode(buf));
        }
    }

    /// Appends a cell holding `value`, or a null cell for `None`.
    #[inline]
    pub(crate) fn option_cell(&mut self, value: Option<&Value>) {
        match value {
            Some(v) => self.value_cell(v),
            None => self.null_cell(),
        }
    }

    /// Appends a null cell.
    #[inline]
    pub(crate) fn null_cell(&mut self) {
        self.out.put_i32(-1);
        self.count_cell();
    }

    /// Appends a cell whose value `f` encodes in place (append only); its length is
    /// patched afterwards.
    #[inline]
    pub(crate) fn cell_with(&mut self, f: impl FnOnce(&mut BytesMut)) {
        let r: Result<(), std::convert::Infallible> = self.try_cell_with(|b| {
            f(b);
            Ok(())
        });
        let Ok(()) = r;
    }

    /// Like [`RowsWriter::cell_with`] for a fallible encoder: on `Err` the bytes written
    /// for this cell are removed, no cell is counted, and the error is returned (the caller
    /// then usually drops the writer and answers with an error).
    pub(crate) fn try_cell_with<E>(
        &mut self,
        f: impl FnOnce(&mut BytesMut) -> Result<(), E>,
    ) -> Result<(), E> {
        let len_at = self.out.len();
        self.out.put_i32(0);
        if let Err(e) = f(self.out) {
            self.out.truncate(len_at);
            return Err(e);
        }
        let written = self.out.len().checked_sub(len_at + 4);
        match written.map(i32::try_from) {
            Some(Ok(n)) => {
                if let Some(slot) = self.out.get_mut(len_at..len_at + 4) {
                    slot.copy_from_slice(&n.to_be_bytes());
                }
            }
            Some(Err(_)) => self.fail(RowsWriterError::TooLarge),
            None => self.fail(RowsWriterError::Truncated),
        }
        self.count_cell();
        Ok(())
    }

    /// Ends the current row (it must have one cell per column).
    #[inline]
    pub(crate) fn end_row(&mut self) {
        if self.cells_in_row != self.columns {
            self.fail(RowsWriterError::CellCount {
                row: self.rows,
                cells: self.cells_in_row,
                columns: self.columns,
            });
        }
        self.cells_in_row = 0;
        self.rows += 1;
    }

    /// Bytes of the frame so far.
    pub(crate) fn frame_len(&self) -> usize {
        self.out.len().saturating_sub(self.frame_start)
    }

    /// Like [`RowsWriter::finish`], and when `state` is set, also marks the result as having
    /// more pages and inserts `state` as its paging state (for a writer begun without one:
    /// a pager only knows whether more rows follow once the page is written).
    pub(crate) fn finish_with_paging_state(
        self,
        state: Option<&[u8]>,
    ) -> Result<usize, RowsWriterError> {
        let mut this = self;
        if let Some(state) = state {
            let Ok(len) = i32::try_from(state.len()) else {
                this.fail(RowsWriterError::TooLarge);
                return this.finish();
            };
            let flags_at = this.meta_at;
            let insert_at = flags_at + 8;
            let old_len = this.out.len();
            if insert_at <= old_len {
                let n = 4 + state.len();
                this.out.resize(old_len + n, 0);
                this.out.copy_within(insert_at..old_len, insert_at + n);
                this.out[insert_at..insert_at + 4].copy_from_slice(&len.to_be_bytes());
                this.out[insert_at + 4..insert_at + n].copy_from_slice(state);
                let mut flags = [0u8; 4];
                flags.copy_from_slice(&this.out[flags_at..flags_at + 4]);
                let flags = i32::from_be_bytes(flags) | super::result::META_HAS_MORE_PAGES;
                this.out[flags_at..flags_at + 4].copy_from_slice(&flags.to_be_bytes());
                this.rows_count_at += n;
            }
        }
        this.finish()
    }

    /// Patches the row count and the frame length. On error the partial frame is removed
    /// from the buffer.
    pub(crate) fn finish(mut self) -> Result<usize, RowsWriterError> {
        self.done = true;
        if self.cells_in_row != 0 {
            self.fail(RowsWriterError::UnfinishedRow);
        }
        let rows = i32::try_from(self.rows);
        if rows.is_err() {
            self.fail(RowsWriterError::TooLarge);
        }
        if let Some(e) = self.error.take() {
            self.out.truncate(self.frame_start);
            return Err(e);
        }
        let rows = rows.unwrap_or(i32::MAX);
        let at = self.rows_count_at;
        if let Some(slot) = self.out.get_mut(at..at + 4) {
            slot.copy_from_slice(&rows.to_be_bytes());
        }
        finish_frame(self.out, self.frame_start, PROTOCOL_VERSION);
        Ok(self.rows)
    }
}

impl Drop for RowsWriter<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.out.truncate(self.frame_start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::result::ColumnSpec;
    use crate::types::CqlType;

    fn meta(n: usize) -> ResultMetadata {
        ResultMetadata {
            columns: (0..n)
                .map(|i| ColumnSpec::new("ks", "t", format!("c{i}"), CqlType::Int))
                .collect(),
        }
    }

    #[test]
    fn patches_row_count_and_length() {
        let mut out = BytesMut::from(&b"prefix"[..]);
        let mut w = RowsWriter::begin(&mut out, 5, &meta(2), None);
        w.cell(Some(&[1, 2]));
        w.null_cell();
        w.end_row();
        w.cell_with(|b| b.put_i32(9));
        w.cell(Some(&[]));
        w.end_row();
        assert_eq!(w.finish(), Ok(2));
        assert_eq!(&out[..6], b"prefix");
        let frame = &out[6..];
        let len = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]) as usize;
        assert_eq!(frame.len(), 9 + len);
        // The body ends with rows_count then the cells.
        let cells: &[u8] = &[
            0, 0, 0, 2, // rows_count
            0, 0, 0, 2, 1, 2, 0xff, 0xff, 0xff, 0xff, // row 0
            0, 0, 0, 4, 0, 0, 0, 9, 0, 0, 0, 0, // row 1
        ];
        assert!(frame.ends_with(cells));
    }

    #[test]
    fn wrong_cell_counts_remove_the_frame() {
        let mut out = BytesMut::from(&b"keep"[..]);
        let mut w = RowsWriter::begin(&mut out, 1, &meta(2), None);
        w.cell(Some(&[1]));
        w.end_row();
        assert!(matches!(
            w.finish(),
            Err(RowsWriterError::CellCount {
                row: 0,
                cells: 1,
                columns: 2
            })
        ));
        assert_eq!(&out[..], b"keep");

        let mut w = RowsWriter::begin(&mut out, 1, &meta(1), None);
        w.cell(Some(&[1]));
        w.cell(Some(&[1]));
        w.end_row();
        assert!(w.finish().is_err());

        let mut w = RowsWriter::begin(&mut out, 1, &meta(1), None);
        w.cell(Some(&[1]));
        assert_eq!(w.finish(), Err(RowsWriterError::UnfinishedRow));
        assert_eq!(&out[..], b"keep");
    }

    #[test]
    fn dropping_without_finish_removes_the_frame() {
        let mut out = BytesMut::from(&b"keep"[..]);
        {
            let mut w = RowsWriter::begin(&mut out, 1, &meta(1), None);
            w.cell(Some(&[1]));
        }
        assert_eq!(&out[..], b"keep");
    }

    #[test]
    fn failed_cell_encoders_leave_no_bytes() {
        let mut out = BytesMut::new();
        let mut w = RowsWriter::begin(&mut out, 1, &meta(1), None);
        let before = w.frame_len();
        let r: Result<(), &str> = w.try_cell_with(|b| {
            b.put_u8(1);
            Err("no")
        });
        assert_eq!(r, Err("no"));
        assert_eq!(w.frame_len(), before);
        w.cell(None);
        w.end_row();
        assert_eq!(w.finish(), Ok(1));
    }

    #[test]
    fn a_cell_writer_that_truncates_is_caught() {
        let mut out = BytesMut::new();
        let mut w = RowsWriter::begin(&mut out, 1, &meta(1), None);
        w.cell_with(|b| b.truncate(0));
        w.end_row();
        assert_eq!(w.finish(), Err(RowsWriterError::Truncated));
    }

    /// Encodes a page of 5000 rows of (int, text, bigint) and returns the best time of a
    /// few runs, plus the frame.
    fn time_page() -> (std::time::Duration, BytesMut) {
        let meta = ResultMetadata {
            columns: vec![
                ColumnSpec::new("ks", "t", "pk", CqlType::Int),
                ColumnSpec::new("ks", "t", "name", CqlType::Text),
                ColumnSpec::new("ks", "t", "ts", CqlType::Bigint),
            ],
        };
        let names: Vec<String> = (0..5000).map(|i| format!("name-{i}")).collect();
        let mut best = std::time::Duration::MAX;
        let mut out = BytesMut::with_capacity(256 * 1024);
        for _ in 0..7 {
            out.clear();
            let t0 = std::time::Instant::now();
            let mut w = RowsWriter::begin(&mut out, 1, &meta, Some(b"state"));
            for (i, name) in names.iter().enumerate() {
                w.cell(Some(&(i as i32).to_be_bytes()));
                w.cell(Some(name.as_bytes()));
                w.cell_with(|b| b.put_i64(i as i64 * 1000));
                w.end_row();
            }
            assert_eq!(w.finish(), Ok(5000));
            best = best.min(t0.elapsed());
        }
        (best, out)
    }

    #[test]
    fn a_5000_row_page_encodes_fast() {
        let (best, out) = time_page();
        // 5000 rows x (4+4 + 4+6..9 + 4+8) bytes of cells plus the header and metadata.
        assert!(out.len() > 5000 * 30, "{}", out.len());
        // Release builds take about a tenth of the debug bound; the debug bound still
        // catches an allocation or a copy per cell.
        let limit_ms = if cfg!(debug_assertions) { 10 } else { 1 };
        assert!(
            best < std::time::Duration::from_millis(limit_ms),
            "encoding 5000 rows took {best:?}"
        );
    }

    #[test]
    fn value_cells_are_the_bytes_cell_with_writes() {
        use crate::types::value::Value;
        use std::sync::Arc;
        let values = [
            Value::Int(7),
            Value::text("abc"),
            Value::Blob(Arc::from(&[1u8, 2][..])),
            Value::Empty,
            Value::List(Arc::from(vec![Value::Int(1), Value::Int(2)])),
        ];
        let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
        let mut wa = RowsWriter::begin(&mut a, 1, &meta(values.len()), None);
        let mut wb = RowsWriter::begin(&mut b, 1, &meta(values.len()), None);
        for v in &values {
            wa.value_cell(v);
            wb.cell_with(|buf| v.encode(buf));
        }
        wa.end_row();
        wb.end_row();
        wa.finish().expect("finish");
        wb.finish().expect("finish");
        assert_eq!(a, b);
    }
}
