//! The change assembler: the crate-internal [`ChangeAssembler`] copies the rows of the
//! current `(stream, cdc$time)` out of their page into a chunk ([`super::chunk`]) shared by
//! consecutive changes, in the format [`Change`] reads, and hands each [`Change`] to the
//! user's [`ChangeConsumer`] once it is complete: at the row with `cdc$end_of_batch = true`,
//! when a row of another `(stream, cdc$time)` arrives, or when the stream reader finishes a
//! window.

use std::sync::Arc;

use uuid::Uuid;

use super::chunk::ChunkWriter;
use super::{
    CHANGE_HEADER, CHANGE_LATE, Change, ChangeConsumer, FLAG_END_OF_BATCH, FLAG_SPAN, FLAG_TTL,
    RECORD_HEADER, Schema,
};
use crate::base::cdc_types::StreamID;
use crate::consumer::CDCRow;
use crate::consumer::columns::{CellSource, RowHeader, RowRef};

/// The change being assembled (its rows are in the assembler's chunk, which has its
/// schema).
struct Pending {
    stream_id: StreamID,
    time: Uuid,
    rows: u32,
}

/// What the stream reader hands the rows of a change consumer's stream group to
/// ([`crate::CDCLogReaderBuilder::change_consumer_factory`]): it
/// copies the rows of the current `(stream, cdc$time)` into its buffer and hands the
/// [`Change`] to the user's [`ChangeConsumer`] once complete.
pub(crate) struct ChangeAssembler {
    consumer: Box<dyn ChangeConsumer>,
    table: Arc<str>,
    /// The schema of the last row.
    schema: Option<Arc<Schema>>,
    /// The rows of the pending change (taken out into the change when it is delivered).
    chunk: ChunkWriter<Schema>,
    pending: Option<Pending>,
    /// The last change whose delivery failed (or panicked), until it is delivered or given
    /// up: see [`Retrigger`].
    failed: Option<(Change, Retrigger)>,
    /// Whether a change is kept until the consumer has taken it (the reader's error policy
    /// hands failed rows over again, or writes dead letters); otherwise a failed change is
    /// given up at once.
    keep_failed: bool,
}

/// The row whose [`ChangeAssembler::consume_row`] tried to deliver a change, and whether that
/// row belongs to the change (its last row) or came after it (a change without
/// `cdc$end_of_batch`).
///
/// The reader's consumer error policy either hands the same row over again — the change is
/// then delivered again, whole — or gives up on it ([`ChangeAssembler::give_up`]): the
/// change is given up with it. The stream reader never leaves a change to be completed by
/// a row not of it (`in_change: false`): it delivers such a change first, as its own step
/// ([`ChangeAssembler::take_completed_by`]); only a caller of `consume_row` without an
/// error policy of its own (a test) does.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Retrigger {
    stream_id: StreamID,
    time: Uuid,
    batch_seq_no: i32,
    in_change: bool,
}

impl Retrigger {
    fn of(header: &RowHeader, in_change: bool) -> Self {
        Self {
            stream_id: header.stream_id,
            time: header.time,
            batch_seq_no: header.batch_seq_no,
            in_change,
        }
    }

    fn is_row(&self, header: &RowHeader) -> bool {
        self.stream_id == header.stream_id
            && self.time == header.time
            && self.batch_seq_no == header.batch_seq_no
    }
}

impl ChangeAssembler {
    /// An assembler feeding `consumer` with the changes of table `table`.
    pub(crate) fn new(consumer: Box<dyn ChangeConsumer>, table: Arc<str>) -> Self {
        Self {
            consumer,
            table,
            schema: None,
            chunk: ChunkWriter::default(),
            pending: None,
            failed: None,
            keep_failed: true,
        }
    }

    /// Whether the reader hands a failed row over again (its error policy retries) or
    /// writes what it gives up on as dead letters: only then is a change of several rows
    /// kept (cloned) until the consumer has taken it, to be delivered again or written as
    /// the change's dead letters.
    pub(crate) fn keep_failed_changes(&mut self, keep: bool) {
        self.keep_failed = keep;
    }

    /// Hands `change` to the consumer; keeps it (with the row that triggered it) until the
    /// consumer has taken it, so that a retry of that row delivers it again: the caller
    /// clears [`Self::failed`] once the returned future succeeded. Not an `async fn`: the
    /// consumer's boxed future is awaited by the caller, without a state machine per layer.
    fn hand_over(
        &mut self,
        change: Change,
        trigger: Option<Retrigger>,
    ) -> futures::future::BoxFuture<'_, anyhow::Result<()>> {
        // A change of one row ending at the row that triggers it needs no copy: handing that
        // row over again assembles the same change again (no other row of it is lost).
        if self.keep_failed
            && let Some(trigger) = trigger
            && !(trigger.in_change && change.row_count() == 1)
        {
            self.failed = Some((change.clone(), trigger));
        }
        self.consumer.consume_change(change)
    }

    /// The pending change, complete, if any.
    fn take_pending(&mut self) -> Option<Change> {
        let p = self.pending.take()?;
        // The row count goes into the change's header (written with 0 when it started).
        self.chunk.patch(32, &p.rows.to_le_bytes());
        Some(Change {
            data: self.chunk.take()?,
        })
    }

    /// Writes the header of a change ([`CHANGE_HEADER`]) of `rows` rows into `out`.
    #[inline]
    fn put_change_header(out: &mut [u8; CHANGE_HEADER], header: &RowHeader, rows: u32) {
        out[0..16].copy_from_slice(header.stream_id.as_bytes());
        out[16..32].copy_from_slice(header.time.as_bytes());
        // The row count, the flags, then padding.
        out[32..36].copy_from_slice(&rows.to_le_bytes());
        out[36..40].copy_from_slice(&[if header.late { CHANGE_LATE } else { 0 }, 0, 0, 0]);
    }

    /// Hands the pending change, if any, to the consumer (at a window's end or a flush).
    async fn deliver_pending(&mut self) -> anyhow::Result<()> {
        if let Some(change) = self.take_pending() {
            self.hand_over(change, None).await?;
            self.failed = None;
        }
        Ok(())
    }

    /// The shared schema of a row's index (the last row's, nearly always).
    fn schema_of(&mut self, raw: &RowRef<'_>) -> Arc<Schema> {
        match &self.schema {
            Some(s) if Arc::ptr_eq(&s.index, raw.index) => s.clone(),
            _ => {
                let s = Arc::new(Schema {
                    index: raw.index.clone(),
                    specs: raw.index.owned_specs(raw.specs),
                    table: self.table.clone(),
                });
                self.schema = Some(s.clone());
                s
            }
        }
    }

    /// The length of a row's record, and where its cells' bytes start in it when it is
    /// copied cell by cell (without `span`).
    fn record_len(raw: &RowRef<'_>, span: Option<&[u8]>) -> anyhow::Result<(usize, usize)> {
        let (len, cells_at) = match span {
            Some(span) => (RECORD_HEADER + span.len(), 0),
            None => {
                let count = raw.len();
                let cells_at = RECORD_HEADER + 8 * count;
                let data_len: usize = match raw.cells {
                    CellSource::Slices(cells) => cells.iter().flatten().map(|c| c.len()).sum(),
                    CellSource::Packed { .. } | CellSource::Span { .. } => (0..count)
                        .filter_map(|p| raw.cell(p).flatten())
                        .map(<[u8]>::len)
                        .sum(),
                };
                (cells_at + data_len, cells_at)
            }
        };
        Self::record_length(len).map(|_| (len, cells_at))
    }

    /// A row record's length as its header holds it; an error for a record too large for
    /// the `u32` offsets of a chunk.
    #[inline]
    fn record_length(len: usize) -> anyhow::Result<u32> {
        u32::try_from(len)
            .ok()
            .filter(|&l| l != u32::MAX)
            .ok_or_else(|| anyhow::anyhow!("a log row of {len} bytes is too large to keep"))
    }

    /// Copies a row into the pending change (started if needed): in one piece when its bytes
    /// as the page held them (`span`) are known, else cell by cell.
    fn append(
        &mut self,
        header: &RowHeader,
        raw: RowRef<'_>,
        span: Option<&[u8]>,
    ) -> anyhow::Result<()> {
        let layout = Self::record_len(&raw, span)?;
        if !self
            .schema
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(&s.index, raw.index))
        {
            self.schema_of(&raw);
        }
        let schema = self
            .schema
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("change assembler: no schema"))?;
        let schema_slot = match &mut self.pending {
            None => {
                // A change starts, in a chunk of its schema with room for it and the row.
                let slot = self.chunk.start(schema, CHANGE_HEADER + layout.0)?;
                let mut change_header = [0u8; CHANGE_HEADER];
                Self::put_change_header(&mut change_header, header, 0);
                if !self.chunk.push(&[&change_header]) {
                    anyhow::bail!("change assembler: no room for a change in its chunk");
                }
                self.pending = Some(Pending {
                    stream_id: header.stream_id,
                    time: header.time,
                    rows: 0,
                });
                slot
            }
            Some(_) => self.chunk.reserve(schema, layout.0)?,
        };
        self.write_record(header, raw, span, schema_slot, layout)?;
        if let Some(pending) = &mut self.pending {
            pending.rows += 1;
        }
        Ok(())
    }

    /// Writes the header of a row's record ([`RECORD_HEADER`]) of `len` bytes, of `count`
    /// cells, read with the chunk's schema at `schema_slot`, into `out`; `flags` besides
    /// those of the header's fields.
    #[inline]
    fn put_record_header(
        out: &mut [u8; RECORD_HEADER],
        header: &RowHeader,
        (len, count): (u32, u32),
        schema_slot: u8,
        mut flags: u8,
    ) {
        if header.end_of_batch {
            flags |= FLAG_END_OF_BATCH;
        }
        if header.ttl.is_some() {
            flags |= FLAG_TTL;
        }
        out[0..4].copy_from_slice(&len.to_le_bytes());
        out[4] = schema_slot;
        out[5] = header.operation.code(header.is_expiration) as u8;
        out[6] = flags;
        out[7] = 0;
        out[8..12].copy_from_slice(&header.batch_seq_no.to_le_bytes());
        out[12..20].copy_from_slice(&header.ttl.unwrap_or(0).to_le_bytes());
        out[20..24].copy_from_slice(&count.to_le_bytes());
    }

    /// Writes a row's record (of the length and layout [`Self::record_len`] gave) into the
    /// chunk, which has room for it.
    fn write_record(
        &mut self,
        header: &RowHeader,
        raw: RowRef<'_>,
        span: Option<&[u8]>,
        schema_slot: u8,
        (len, cells_at): (usize, usize),
    ) -> anyhow::Result<()> {
        let count = raw.len();
        let mut header_bytes = [0u8; RECORD_HEADER];
        Self::put_record_header(
            &mut header_bytes,
            header,
            // `record_len` checked that the length fits in a u32; a row has fewer cells
            // than a frame has bytes.
            (len as u32, count as u32),
            schema_slot,
            if span.is_some() { FLAG_SPAN } else { 0 },
        );
        let no_room = || anyhow::anyhow!("change assembler: no room for a row in its chunk");

        if let Some(span) = span {
            if !self.chunk.push(&[&header_bytes, span]) {
                return Err(no_room());
            }
            return Ok(());
        }
        // The record is written into its zeroed space in one pass, without a capacity check
        // per field.
        let record = self.chunk.extend_zeroed(len).ok_or_else(no_room)?;
        let mut writer = RecordWriter {
            record,
            range_at: RECORD_HEADER,
            data_at: cells_at,
        };
        writer.put(0, &header_bytes)?;
        match raw.cells {
            CellSource::Slices(cells) => {
                for &cell in cells {
                    writer.cell(cell)?;
                }
            }
            CellSource::Packed { .. } | CellSource::Span { .. } => {
                for p in 0..count {
                    writer.cell(raw.cell(p).flatten())?;
                }
            }
        }
        Ok(())
    }
}

/// Whether two stream ids or timeuuids are equal; compared as integers (a call to `memcmp`
/// per row otherwise).
#[inline]
fn same_id(a: &[u8; 16], b: &[u8; 16]) -> bool {
    u128::from_ne_bytes(*a) == u128::from_ne_bytes(*b)
}

/// Writes the cells of a row record into its space.
struct RecordWriter<'b> {
    record: &'b mut [u8],
    /// Where the next cell range goes.
    range_at: usize,
    /// Where the next cell's bytes go.
    data_at: usize,
}

impl RecordWriter<'_> {
    fn put(&mut self, at: usize, bytes: &[u8]) -> anyhow::Result<()> {
        self.record
            .get_mut(at..at + bytes.len())
            .ok_or_else(|| anyhow::anyhow!("change assembler: a row record overflows"))?
            .copy_from_slice(bytes);
        Ok(())
    }

    fn cell(&mut self, cell: Option<&[u8]>) -> anyhow::Result<()> {
        let mut range = [0xffu8; 8];
        if let Some(bytes) = cell {
            // The record's length fits in a u32: so do the offsets within it.
            let end = self.data_at + bytes.len();
            range[0..4].copy_from_slice(&(self.data_at as u32).to_le_bytes());
            range[4..8].copy_from_slice(&(end as u32).to_le_bytes());
            self.put(self.data_at, bytes)?;
            self.data_at = end;
        }
        self.put(self.range_at, &range)?;
        self.range_at += 8;
        Ok(())
    }
}

impl ChangeAssembler {
    /// Whether [`Self::push_row`] takes this row (the common case): no change failed
    /// before, and the row continues the pending change or starts one. Otherwise a change
    /// is delivered first: the pending one, which the row is not of
    /// ([`Self::take_completed_by`]), or again the one that failed at this row
    /// ([`Self::consume_row`]).
    #[inline]
    pub(crate) fn can_push(&self, header: &RowHeader) -> bool {
        self.failed.is_none()
            && self.pending.as_ref().is_none_or(|p| {
                same_id(p.stream_id.as_bytes(), header.stream_id.as_bytes())
                    && same_id(p.time.as_bytes(), header.time.as_bytes())
            })
    }

    /// Takes one log row that [`Self::can_push`] accepts, without awaiting anything: the
    /// row is copied into the pending change; when it ends it (`cdc$end_of_batch`), the
    /// change is handed to the consumer, and the consumer's future is returned for the caller
    /// to await (and to call [`Self::delivered`] once it succeeded). Not an `async fn`: the
    /// stream reader awaits only the consumer's boxed future, so no state machine holding
    /// the row is built (and moved) per row; nor is a `Change` returned (and moved): the
    /// change is made where it is handed to the consumer.
    #[inline]
    pub(crate) fn push_row(
        &mut self,
        header: &RowHeader,
        raw: RowRef<'_>,
        span: Option<&[u8]>,
    ) -> anyhow::Result<Option<futures::future::BoxFuture<'_, anyhow::Result<()>>>> {
        debug_assert!(self.can_push(header));
        if header.end_of_batch
            && self.pending.is_none()
            && let Some(span) = span
            && let Some(schema) = &self.schema
            && Arc::ptr_eq(&schema.index, raw.index)
        {
            // The common change, of one row, copied as the page held it and handed over in
            // one step. It needs no copy kept for a second delivery: handing its row over
            // again assembles the same change again.
            let len = RECORD_HEADER + span.len();
            let record = (
                Self::record_length(len)?,
                // A row has fewer cells than a frame has bytes.
                raw.len() as u32,
            );
            let data = self.chunk.whole(schema, CHANGE_HEADER + len, |out| {
                // Written in place (a header built aside and copied was read back before its
                // stores completed): `out` is exactly the change's size.
                let Some((change, rest)) = out.split_first_chunk_mut::<CHANGE_HEADER>() else {
                    return;
                };
                Self::put_change_header(change, header, 1);
                let Some((head, cells)) = rest.split_first_chunk_mut::<RECORD_HEADER>() else {
                    return;
                };
                Self::put_record_header(head, header, record, 0, FLAG_SPAN);
                if let Some(cells) = cells.get_mut(..span.len()) {
                    cells.copy_from_slice(span);
                }
            })?;
            return Ok(Some(self.consumer.consume_change(Change { data })));
        }
        self.append(header, raw, span)?;
        if !header.end_of_batch {
            return Ok(None);
        }
        Ok(Some(self.deliver(header)))
    }

    /// Hands the change [`Self::push_row`] completed at the row of `header` to the
    /// consumer.
    fn deliver(
        &mut self,
        header: &RowHeader,
    ) -> futures::future::BoxFuture<'_, anyhow::Result<()>> {
        // Pending: a change of several rows (else of one row, written whole).
        let rows = match self.pending.take() {
            Some(p) => {
                self.chunk.patch(32, &p.rows.to_le_bytes());
                p.rows
            }
            None => 1,
        };
        let Some(data) = self.chunk.take() else {
            return Box::pin(std::future::ready(Err(anyhow::anyhow!(
                "change assembler: a change was lost"
            ))));
        };
        let change = Change { data };
        // As in `hand_over`: a change of one row needs no copy to be delivered again.
        if self.keep_failed && rows != 1 {
            self.failed = Some((change.clone(), Retrigger::of(header, true)));
        }
        self.consumer.consume_change(change)
    }

    /// The future of [`Self::deliver`] succeeded: the change is no longer kept for a second
    /// delivery.
    #[inline]
    pub(crate) fn delivered(&mut self) {
        self.failed = None;
    }

    /// The pending change, complete, if the row of `header` is not of it (a change without
    /// `cdc$end_of_batch`, completed by the next change's first row): the stream reader
    /// delivers it with [`Self::consume_change`] — retried, or given up on, as a change of
    /// its own — before it hands that row over.
    pub(crate) fn take_completed_by(&mut self, header: &RowHeader) -> Option<Change> {
        let p = self.pending.as_ref()?;
        if same_id(p.stream_id.as_bytes(), header.stream_id.as_bytes())
            && same_id(p.time.as_bytes(), header.time.as_bytes())
        {
            return None;
        }
        self.take_pending()
    }

    /// The pending change, complete (at a window's end), if any: see
    /// [`Self::take_completed_by`].
    pub(crate) fn take_completed(&mut self) -> Option<Change> {
        self.take_pending()
    }

    /// Hands a change taken with [`Self::take_completed_by`] or [`Self::take_completed`] to
    /// the consumer (the caller keeps a copy to hand over again).
    pub(crate) fn consume_change(
        &mut self,
        change: Change,
    ) -> futures::future::BoxFuture<'_, anyhow::Result<()>> {
        self.consumer.consume_change(change)
    }

    /// The reader gave up on the row of `header` (every attempt failed): the change it
    /// completed and that was kept to be delivered again, if any, is given up with it, and
    /// returned (for its dead letters). `None` when no change was kept: the row completed a
    /// change of that row alone (delivered again by assembling it again), or no change, or
    /// changes are not kept (see [`Self::keep_failed_changes`]).
    pub(crate) fn give_up(&mut self, header: &RowHeader) -> Option<Change> {
        let (change, trigger) = self.failed.take()?;
        trigger.is_row(header).then_some(change)
    }

    /// Takes one log row, as a row consumer would. The stream reader calls it only to
    /// hand over again a row whose change failed ([`Self::can_push`] refuses it): it delivers
    /// a change completed by a row not of it itself, first ([`Self::take_completed_by`]).
    pub(crate) async fn consume_row(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        let header = row.header();
        if let Some((change, trigger)) = self.failed.take()
            && trigger.is_row(&header)
        {
            // The reader hands over again the row whose change could not be delivered.
            self.hand_over(change, Some(trigger)).await?;
            self.failed = None;
            if trigger.in_change {
                return Ok(());
            }
        }
        if let Some(p) = &self.pending
            && !(same_id(p.stream_id.as_bytes(), header.stream_id.as_bytes())
                && same_id(p.time.as_bytes(), header.time.as_bytes()))
            && let Some(change) = self.take_pending()
        {
            self.hand_over(change, Some(Retrigger::of(&header, false)))
                .await?;
            self.failed = None;
        }
        self.append(&header, row.raw(), row.span())?;
        if header.end_of_batch
            && let Some(change) = self.take_pending()
        {
            self.hand_over(change, Some(Retrigger::of(&header, true)))
                .await?;
            self.failed = None;
        }
        Ok(())
    }

    /// Lets the consumer finish the work it accepted, after delivering a pending change
    /// (see [`ChangeConsumer::flush`]).
    pub(crate) async fn flush(&mut self) -> anyhow::Result<()> {
        self.deliver_pending().await?;
        self.consumer.flush().await
    }

    /// The window the stream reader read is over: a pending change is complete, and is
    /// delivered.
    pub(crate) async fn end_of_window(&mut self) -> anyhow::Result<()> {
        self.deliver_pending().await
    }
}
