//! Whole changes: every log row of one write, delivered together ([`Change`],
//! [`ChangeConsumer`], [`ChangeConsumerFactory`]).
//!
//! A *change* is every log row of one stream with one `cdc$time`: the pre-images (operation
//! 0), the deltas in `cdc$batch_seq_no` order (a batch or a multi-row statement gives
//! several) and the post-images (operation 9). The crate-internal [`ChangeAssembler`] is a
//! [`Consumer`] that copies the rows of the current `(stream, cdc$time)` out of their page
//! into a chunk of owned memory shared by consecutive changes and hands the [`Change`] to the user's [`ChangeConsumer`] once it is
//! complete: at the row with `cdc$end_of_batch = true`, when a row of another
//! `(stream, cdc$time)` arrives, or when the stream reader finishes a window.
//!
//! A change never crosses a window: windows are `cdc$time` ranges and every row of a change
//! has the same `cdc$time`. Checkpoints are saved only at window ends, after the window's
//! last change was delivered and flushed, so a restart resumes between two changes and
//! never delivers part of one.
//!
//! A change the consumer cannot take is handed over again and given up on whole, as a step
//! of its own wherever it ends (see [`ChangeConsumer`]): the stream reader delivers a change
//! completed by a row not of it ([`ChangeAssembler::take_completed_by`], or at a window's end
//! [`ChangeAssembler::take_completed`]) before it hands that row over, and gives up a change
//! that failed at its own last row with that row ([`ChangeAssembler::give_up`]).
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
use crate::consumer::{
    CDCRow, CellSource, ColumnIndex, Consumer, OperationType, RowHeader, RowRef, read_u32,
};

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
/// The least size of the buffers the rows of changes are copied into: one allocation serves
/// the changes of many rows (a change kept by a consumer keeps its buffer alive).
const CHUNK: usize = 16 * 1024;

/// The header of a change in its chunk, before its row records: the stream id (16 bytes),
/// `cdc$time` (16), the number of rows (`u32`, little-endian) and padding.
const CHANGE_HEADER: usize = 40;

/// The buffers the rows of changes are copied into ([`chunk::Chunk`]): the assembler writes
/// rows at the end of one while the changes before them are read, from any thread, by their
/// consumers. A change is a reference to its chunk and its range in it (16 bytes, moved in
/// registers): one reference count per change for its bytes and its schemas, and its stream,
/// time and row count are in its bytes. The writer takes references in batches, so that
/// handing a change over costs no atomic operation; only dropping one does.
mod chunk {
    // The only unsafe code of the crate: a buffer written at its end while its beginning is
    // shared, with a reference count that the writer takes in batches. Neither `Arc` nor
    // `bytes` can express either without a second reference count or an atomic operation
    // per change.
    #![allow(unsafe_code)]

    use std::ptr::NonNull;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering, fence};

    use super::Schema;

    /// The largest chunk: offsets in it are `u32`s.
    const MAX: usize = u32::MAX as usize;
    /// References the writer takes at once (and holds until it hands them out as changes
    /// or leaves the chunk).
    pub(super) const PREPAID: usize = 256;
    /// The largest chunk emptied and written again (see [`ChunkWriter::reuse`]).
    const REUSE_MAX: usize = 4 * super::CHUNK;
    /// Above this many references a count could overflow (as `Arc` does, the process aborts
    /// rather than risk a use after free).
    const MAX_REFS: usize = isize::MAX as usize;

    /// A buffer of `cap` bytes and the schemas of the rows written into it (a row record
    /// names its schema by its position here), shared by the changes in it and its writer.
    ///
    /// Invariants:
    /// - the bytes before its [`ChunkWriter`]'s position are written, and only they are read
    ///   (through [`Written`]); only the writer writes, and only at or past the start of the
    ///   pending change, which goes back only when the writer empties the chunk while it holds
    ///   every reference to it (no `Written` is left: see [`ChunkWriter::reuse`]). So bytes
    ///   are never written while a `Written` can read them;
    /// - `refs` counts the [`Written`]s of the chunk plus, while a writer has it, the
    ///   writer's own reference and the references it holds prepaid; the chunk is freed by
    ///   whoever takes the count to zero.
    pub(super) struct Chunk {
        refs: AtomicUsize,
        schemas: Vec<Arc<Schema>>,
        ptr: NonNull<u8>,
        cap: usize,
    }

    impl Drop for Chunk {
        fn drop(&mut self) {
            // SAFETY: `ptr` and `cap` are those of the `Box<[u8]>` made in
            // `ChunkWriter::fresh`, whose ownership the chunk took.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.cap,
                ))
            });
        }
    }

    /// Drops `count` references to `chunk`, freeing it if they were the last.
    ///
    /// # Safety
    /// The caller owns `count` references to `chunk` (counted in its `refs`) and gives them
    /// up: it uses none of them afterwards.
    #[inline]
    unsafe fn release(chunk: NonNull<Chunk>, count: usize) {
        // SAFETY: the caller's references keep the chunk alive until this decrement.
        let refs = unsafe { &chunk.as_ref().refs };
        // As in `Arc`'s drop: the release orders this owner's reads of the bytes before the
        // decrement; the last owner's acquire fence orders every other owner's reads before
        // the free.
        if refs.fetch_sub(count, Ordering::Release) != count {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: the count reached zero: no reference is left, and the chunk was made by
        // `Box::leak` in `ChunkWriter::fresh`.
        unsafe { free(chunk) }
    }

    /// Frees a chunk (out of line: rare, and kept out of every change's drop).
    ///
    /// # Safety
    /// No reference to `chunk` is left, and it was made by `Box::leak`.
    #[cold]
    #[inline(never)]
    unsafe fn free(chunk: NonNull<Chunk>) {
        // SAFETY: as the caller promised.
        drop(unsafe { Box::from_raw(chunk.as_ptr()) });
    }

    /// Bytes of a chunk that were written: a range before its writer's position.
    ///
    /// Two fields, so that it is passed in two registers (a third field made it passed
    /// through memory, and read back before the stores had completed, at every call).
    pub(super) struct Written {
        chunk: NonNull<Chunk>,
        /// Where the range starts (the low 32 bits) and its length (the high 32 bits).
        range: u64,
    }

    // SAFETY: a `Written` is a counted reference to a chunk (like an `Arc<Chunk>`); what it
    // reads is not written while it exists (see `Chunk`), the count is atomic, and the
    // schemas are `Arc`s of `Send + Sync` data.
    unsafe impl Send for Written {}
    unsafe impl Sync for Written {}

    impl Clone for Written {
        fn clone(&self) -> Self {
            // SAFETY: this reference keeps the chunk alive.
            let refs = unsafe { &self.chunk.as_ref().refs };
            // As in `Arc::clone`: a new reference needs no ordering with other accesses.
            if refs.fetch_add(1, Ordering::Relaxed) > MAX_REFS {
                std::process::abort();
            }
            Self {
                chunk: self.chunk,
                range: self.range,
            }
        }
    }

    impl Drop for Written {
        #[inline]
        fn drop(&mut self) {
            // SAFETY: this `Written` owns one reference and is gone after this.
            unsafe { release(self.chunk, 1) }
        }
    }

    impl Written {
        /// A reference (owned by the caller) to `len` bytes at `at` of `chunk`. Chunks have
        /// at most [`MAX`] bytes: the offsets fit.
        #[inline]
        fn new(chunk: NonNull<Chunk>, at: usize, len: usize) -> Self {
            Self {
                chunk,
                range: at as u64 | (len as u64) << 32,
            }
        }

        /// The chunk, kept alive by this reference.
        #[inline]
        fn chunk(&self) -> &Chunk {
            // SAFETY: this reference keeps the chunk alive.
            unsafe { self.chunk.as_ref() }
        }

        #[inline]
        pub(super) fn bytes(&self) -> &[u8] {
            let (at, len) = (self.range as u32 as usize, (self.range >> 32) as usize);
            // SAFETY: `at..at + len` is within the allocation and was written before this
            // was made (`ChunkWriter::take`, `ChunkWriter::whole`); it is not written again
            // while this reference exists (see `Chunk`).
            unsafe { std::slice::from_raw_parts(self.chunk().ptr.as_ptr().add(at), len) }
        }

        /// The schema at `slot` of the chunk.
        pub(super) fn schema(&self, slot: usize) -> Option<&Arc<Schema>> {
            self.chunk().schemas.get(slot)
        }
    }

    /// The writer's hold on its chunk: its own reference and `prepaid` more, handed out as
    /// [`Written`]s without touching the count.
    struct Held {
        chunk: NonNull<Chunk>,
        prepaid: usize,
        /// The chunk's size and first schema (read at every change without going to the
        /// chunk).
        cap: usize,
        first_schema: *const Schema,
    }

    impl Held {
        #[inline]
        fn chunk(&self) -> &Chunk {
            // SAFETY: the writer's own reference keeps the chunk alive.
            unsafe { self.chunk.as_ref() }
        }

        /// One of the writer's references, for a new `Written`.
        #[inline]
        fn reference(&mut self) -> NonNull<Chunk> {
            if self.prepaid == 0 {
                let refs = &self.chunk().refs;
                if refs.fetch_add(PREPAID, Ordering::Relaxed) > MAX_REFS - PREPAID {
                    std::process::abort();
                }
                self.prepaid = PREPAID;
            }
            self.prepaid -= 1;
            self.chunk
        }
    }

    impl Drop for Held {
        fn drop(&mut self) {
            // SAFETY: the writer owns its own reference and the prepaid ones, and gives
            // them up with this.
            unsafe { release(self.chunk, self.prepaid + 1) }
        }
    }

    /// The one writer of the current chunk: appends the bytes of the pending change and
    /// takes them out as [`Written`] when it is complete.
    #[derive(Default)]
    pub(super) struct ChunkWriter {
        held: Option<Held>,
        /// Bytes written.
        len: usize,
        /// Where the pending change starts.
        start: usize,
        /// Chunks made so far.
        #[cfg(test)]
        pub(super) made: usize,
    }

    // SAFETY: the writer owns its references to its chunk (see `Written`'s `Send`); it is the
    // only one that writes, and it is not shared (`&mut self` to write).
    unsafe impl Send for ChunkWriter {}
    unsafe impl Sync for ChunkWriter {}

    impl ChunkWriter {
        fn chunk(&self) -> Option<&Chunk> {
            self.held.as_ref().map(Held::chunk)
        }

        /// The slot of `schema` in the current chunk, if there.
        fn slot(&self, schema: &Arc<Schema>) -> Option<usize> {
            self.chunk()?
                .schemas
                .iter()
                .position(|s| Arc::ptr_eq(s, schema))
        }

        /// Makes a new chunk of at least `cap` bytes (at most [`MAX`]) with `schemas` the
        /// current one, leaving the previous one to the changes in it.
        fn fresh(&mut self, schemas: Vec<Arc<Schema>>, cap: usize) -> anyhow::Result<&Chunk> {
            if cap > MAX {
                anyhow::bail!("a change of more than {cap} bytes is too large to keep");
            }
            #[cfg(test)]
            {
                self.made += 1;
            }
            // Zeroed, so that what is not written yet can be handed out as a `&mut [u8]`
            // (see `whole`); a chunk is made rarely (see `reuse`).
            let bytes: Box<[u8]> = vec![0u8; cap].into_boxed_slice();
            let first_schema = schemas.first().map_or(std::ptr::null(), Arc::as_ptr);
            let chunk = Box::new(Chunk {
                refs: AtomicUsize::new(1 + PREPAID),
                schemas,
                cap: bytes.len(),
                ptr: NonNull::from(Box::leak(bytes)).cast::<u8>(),
            });
            let held = self.held.insert(Held {
                cap: chunk.cap,
                first_schema,
                chunk: NonNull::from(Box::leak(chunk)),
                prepaid: PREPAID,
            });
            Ok(held.chunk())
        }

        /// Empties the current chunk, for changes of `schema` of up to `room` bytes, if no
        /// change is in it any more (nothing but the writer holds it), it has the room, and
        /// `schema` is its only one: its memory, still in cache, is written again instead of
        /// being freed and another allocated (and faulted in). Nothing may be pending.
        fn reuse(&mut self, schema: &Arc<Schema>, room: usize) -> bool {
            let Some(held) = &self.held else {
                return false;
            };
            let chunk = held.chunk();
            // A chunk made for one large change is not kept for good: it goes with its
            // change.
            if chunk.cap < room
                || chunk.cap > REUSE_MAX
                || chunk.schemas.len() != 1
                || !Arc::ptr_eq(&chunk.schemas[0], schema)
            {
                return false;
            }
            // Only the writer makes new references, and a `Written` is cloned from another
            // one: when the writer's are all that are left, they stay so. The acquire pairs
            // with the release of each `Written`'s drop: their reads of the bytes happen
            // before the writes that follow.
            if chunk.refs.load(Ordering::Acquire) != 1 + held.prepaid {
                return false;
            }
            (self.start, self.len) = (0, 0);
            true
        }

        /// Starts a change (none is pending) with room for `room` bytes of rows of `schema`:
        /// in the current chunk if it has the schema and the room (or is empty again, see
        /// [`Self::reuse`]), else in a new one. Returns the schema's slot.
        pub(super) fn start(&mut self, schema: &Arc<Schema>, room: usize) -> anyhow::Result<u8> {
            self.start = self.len;
            if let (Some(chunk), Some(slot)) = (self.chunk(), self.slot(schema))
                && chunk.cap - self.len >= room
                && let Ok(slot) = u8::try_from(slot)
            {
                return Ok(slot);
            }
            if !self.reuse(schema, room) {
                self.fresh(vec![schema.clone()], room.max(super::CHUNK))?;
                (self.start, self.len) = (0, 0);
            }
            Ok(0)
        }

        /// Makes room for `room` more bytes of the pending change, of rows of `schema`, and
        /// returns the schema's slot. If the chunk is full, or lacks the schema (the log's
        /// schema changed within the change), the change so far moves to a new chunk (of
        /// twice what it then needs, so that a long change is copied a few times only).
        pub(super) fn reserve(&mut self, schema: &Arc<Schema>, room: usize) -> anyhow::Result<u8> {
            let Some(held) = self.held.take() else {
                anyhow::bail!("change assembler: no chunk for a pending change");
            };
            let slot = {
                let chunk = held.chunk();
                let slot = chunk.schemas.iter().position(|s| Arc::ptr_eq(s, schema));
                if let Some(slot) = slot
                    && chunk.cap - self.len >= room
                {
                    self.held = Some(held);
                    return u8::try_from(slot).map_err(|_| too_many());
                }
                slot
            };
            let mut schemas = held.chunk().schemas.clone();
            let slot = match slot {
                Some(slot) => slot,
                None => {
                    schemas.push(schema.clone());
                    schemas.len() - 1
                }
            };
            let slot = u8::try_from(slot).map_err(|_| too_many());
            let pending = self.len - self.start;
            let needed = pending.saturating_add(room);
            // On an error below, the pending change stays where it is (`held` goes back).
            let (slot, next) = match slot.and_then(|slot| {
                let cap = needed.saturating_mul(2).clamp(super::CHUNK, MAX);
                let next = self.fresh(schemas, cap)?;
                anyhow::ensure!(
                    next.cap >= needed,
                    "a change of more than {needed} bytes is too large to keep"
                );
                Ok((slot, next.ptr))
            }) {
                Ok(found) => found,
                Err(e) => {
                    self.held = Some(held);
                    return Err(e);
                }
            };
            // SAFETY: the pending change's bytes are written (before `len`) in the old chunk,
            // which `held` keeps alive; `next` is new: nothing reads it, and it has room.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    held.chunk().ptr.as_ptr().add(self.start),
                    next.as_ptr(),
                    pending,
                );
            }
            drop(held);
            (self.start, self.len) = (0, pending);
            Ok(slot)
        }

        /// Space for the next `n` bytes, zeroed, to be written; `None` without room.
        pub(super) fn extend_zeroed(&mut self, n: usize) -> Option<&mut [u8]> {
            let chunk = self.chunk()?;
            if chunk.cap - self.len < n {
                return None;
            }
            // SAFETY: `len..len + n` is within the allocation, at or past the writer's
            // position: nothing reads it (see `Chunk`), and `&mut self` makes this the only
            // reference to it. It is zeroed before the slice is made.
            let space = unsafe {
                let at = chunk.ptr.as_ptr().add(self.len);
                std::ptr::write_bytes(at, 0, n);
                std::slice::from_raw_parts_mut(at, n)
            };
            self.len += n;
            Some(space)
        }

        /// Appends `parts`, one after the other; `false` (nothing written) without room.
        pub(super) fn push(&mut self, parts: &[&[u8]]) -> bool {
            let Some(chunk) = self.chunk() else {
                return false;
            };
            let ptr = chunk.ptr;
            let n: usize = parts.iter().map(|p| p.len()).sum();
            if chunk.cap - self.len < n {
                return false;
            }
            for part in parts {
                // SAFETY: as in `extend_zeroed`: within the allocation, past what is read.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        part.as_ptr(),
                        ptr.as_ptr().add(self.len),
                        part.len(),
                    );
                }
                self.len += part.len();
            }
            true
        }

        /// Writes a whole change of `n` bytes with `fill` (given them, zeroed or as an
        /// earlier change left them) and takes it out, in one step: in the current chunk if
        /// its first schema is `schema` and it has the room, else in a new chunk (or the
        /// current one, empty again). Nothing may be pending. What `fill` writes must name
        /// its schema as slot 0.
        #[inline]
        pub(super) fn whole(
            &mut self,
            schema: &Arc<Schema>,
            n: usize,
            fill: impl FnOnce(&mut [u8]),
        ) -> anyhow::Result<Written> {
            let fits = self.held.as_ref().is_some_and(|h| {
                h.cap - self.len >= n && std::ptr::eq(h.first_schema, Arc::as_ptr(schema))
            });
            if !fits && !self.reuse(schema, n) {
                self.fresh(vec![schema.clone()], n.max(super::CHUNK))?;
                self.len = 0;
            }
            let Some(held) = &mut self.held else {
                anyhow::bail!("change assembler: no chunk for a change");
            };
            // SAFETY: `len..len + n` is within the allocation (checked or made above) and
            // initialized (chunks are zeroed when made); it is past what is read (see
            // `Chunk`), and `&mut self` makes this the only reference to it.
            let space = unsafe {
                std::slice::from_raw_parts_mut(held.chunk().ptr.as_ptr().add(self.len), n)
            };
            fill(space);
            let written = Written::new(held.reference(), self.len, n);
            self.len += n;
            self.start = self.len;
            Ok(written)
        }

        /// Overwrites bytes of the pending change, `at` bytes from its start; `false` (nothing
        /// written) unless they were written before.
        pub(super) fn patch(&mut self, at: usize, bytes: &[u8]) -> bool {
            let Some(chunk) = self.chunk() else {
                return false;
            };
            let at = self.start.saturating_add(at);
            if at.saturating_add(bytes.len()) > self.len {
                return false;
            }
            // SAFETY: within the pending change (written, at or past its start): nothing
            // reads it yet (see `Chunk`), and `&mut self` makes this the only writer.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    chunk.ptr.as_ptr().add(at),
                    bytes.len(),
                );
            }
            true
        }

        /// The pending change's bytes, which are written: the next change starts after them.
        pub(super) fn take(&mut self) -> Option<Written> {
            let held = self.held.as_mut()?;
            let written = Written::new(held.reference(), self.start, self.len - self.start);
            self.start = self.len;
            Some(written)
        }
    }

    fn too_many() -> anyhow::Error {
        anyhow::anyhow!("more than 255 log schemas within one change")
    }
}

/// Every log row of one write to one base partition: one stream, one `cdc$time`.
///
/// Owned and cheap to clone (its rows are in a shared, reference-counted buffer), so it can
/// be kept, sent to another task or handed again after a failure. Rows are read with
/// [`ChangeRow`]'s accessors (the same as [`CDCRow`]'s); [`Change::row_changes`] groups them
/// by base row and merges them into [`RowImage`]s.
#[derive(Clone)]
pub struct Change {
    /// The change's header ([`CHANGE_HEADER`]) and its row records, back to back, in a
    /// chunk carrying their schemas.
    data: chunk::Written,
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

/// One row of a [`Change`], with the accessors of [`CDCRow`].
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
    pub fn is_value_deleted(&self, name: &str) -> bool {
        self.row.is_value_deleted(name)
    }

    /// `cdc$deleted_elements_<name>` (see [`CDCRow::get_deleted_elements`]).
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
    /// [`CDCRow::decode`] decodes a row: a column null in the image, or not in it, goes to an
    /// `Option` field as `None`; see [`crate::decode`] for the Rust types each CQL type
    /// decodes into. Note that `after()` of a change without post-images holds only what the
    /// pre-image and the deltas say (with `preimage: true`, only the columns the write
    /// touched): decode it into `Option` fields.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, crate::DecodeError> {
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

/// The change being assembled (its rows are in the assembler's chunk, which has its
/// schema).
struct Pending {
    stream_id: StreamID,
    time: Uuid,
    rows: u32,
}

/// The [`Consumer`] behind [`crate::CDCLogReaderBuilder::change_consumer_factory`]: it
/// copies the rows of the current `(stream, cdc$time)` into its buffer and hands the
/// [`Change`] to the user's [`ChangeConsumer`] once complete.
pub(crate) struct ChangeAssembler {
    consumer: Box<dyn ChangeConsumer>,
    table: Arc<str>,
    /// The schema of the last row.
    schema: Option<Arc<Schema>>,
    /// The rows of the pending change (taken out into the change when it is delivered).
    chunk: chunk::ChunkWriter,
    pending: Option<Pending>,
    /// The last change whose delivery failed (or panicked), until it is delivered or given
    /// up: see [`Retrigger`].
    failed: Option<(Change, Retrigger)>,
    /// Whether a change is kept until the consumer has taken it (the reader's error policy
    /// hands failed rows over again, or writes dead letters); otherwise a failed change is
    /// given up at once.
    keep_failed: bool,
}

/// The row whose `consume_cdc` tried to deliver a change, and whether that row belongs to
/// the change (its last row) or came after it (a change without `cdc$end_of_batch`).
///
/// The reader's consumer error policy either hands the same row over again — the change is
/// then delivered again, whole — or gives up on it ([`ChangeAssembler::give_up`]): the
/// change is given up with it. The stream reader never leaves a change to be completed by
/// a row not of it (`in_change: false`): it delivers such a change first, as its own step
/// ([`ChangeAssembler::take_completed_by`]); only a caller of `consume_cdc` without an
/// error policy of its own does.
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
            chunk: chunk::ChunkWriter::default(),
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
        // The row count, then padding.
        out[32..40].copy_from_slice(&u64::from(rows).to_le_bytes());
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

/// A consumer that takes nothing: what [`ChangeAssembler::take`] leaves behind.
struct Detached;

#[async_trait]
impl ChangeConsumer for Detached {
    async fn consume_change(&mut self, _change: Change) -> anyhow::Result<()> {
        Ok(())
    }
}

impl ChangeAssembler {
    /// Moves this assembler out (the stream reader keeps it typed instead of behind
    /// `dyn Consumer`), leaving one with a consumer that takes nothing.
    pub(crate) fn take(&mut self) -> Self {
        let mut detached = Self::new(Box::new(Detached), self.table.clone());
        std::mem::swap(self, &mut detached);
        detached
    }

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

    /// Takes one log row ([`Consumer::consume_cdc`]). The stream reader calls it only to
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
}

#[async_trait]
impl Consumer for ChangeAssembler {
    async fn consume_cdc(&mut self, row: CDCRow<'_>) -> anyhow::Result<()> {
        self.consume_row(row).await
    }

    fn change_assembler(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    async fn flush(&mut self) -> anyhow::Result<()> {
        self.deliver_pending().await?;
        self.consumer.flush().await
    }

    async fn end_of_window(&mut self) -> anyhow::Result<()> {
        self.deliver_pending().await
    }
}

/// Makes a [`ChangeAssembler`] around each consumer of a [`ChangeConsumerFactory`].
pub(crate) struct AssemblerFactory {
    factory: Arc<dyn ChangeConsumerFactory>,
}

impl AssemblerFactory {
    /// Assemblers around the consumers of `factory`.
    pub(crate) fn new(factory: Arc<dyn ChangeConsumerFactory>) -> Self {
        Self { factory }
    }
}

#[async_trait]
impl crate::consumer::ConsumerFactory for AssemblerFactory {
    async fn new_consumer(&self) -> Box<dyn Consumer> {
        self.new_consumer_for_table("").await
    }

    async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
        Box::new(ChangeAssembler::new(
            self.factory.new_consumer_for_table(table).await,
            Arc::from(table),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cdc_types::GenerationTimestamp;
    use crate::base::time::tests::timeuuid;
    use crate::checkpoints::tests::MemorySaver;
    use crate::consumer::tests::{TestRow, log_specs};
    use crate::stream::StreamReader;
    use crate::stream::tests::{BASE, FakeLog, ms, settings, slot, stream};
    use std::sync::Mutex;
    use std::time::Duration;
    use tokio::sync::watch;

    /// Keeps every change it gets; counts flushes.
    #[derive(Clone, Default)]
    struct Keep {
        changes: Arc<Mutex<Vec<Change>>>,
        flushes: Arc<Mutex<usize>>,
    }

    #[async_trait]
    impl ChangeConsumer for Keep {
        async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
            self.changes.lock().unwrap().push(change);
            Ok(())
        }

        async fn flush(&mut self) -> anyhow::Result<()> {
            *self.flushes.lock().unwrap() += 1;
            Ok(())
        }
    }

    fn keeper() -> (Keep, ChangeAssembler) {
        let keep = Keep::default();
        let assembler = ChangeAssembler::new(Box::new(keep.clone()), Arc::from("t"));
        (keep, assembler)
    }

    /// How a test hands rows to an assembler.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Feed {
        /// Through `consume_cdc`, cells not in a page: copied cell by cell.
        Copied,
        /// Through `consume_cdc`, cells sliced from a page: copied in one piece.
        Spanned,
        /// As the stream reader hands them over: `push_row` when `can_push` takes the row
        /// (a change of one row written whole), else `consume_cdc`; in one piece.
        Pushed,
    }

    /// Feeds rows to an assembler in each way of [`Feed`], checks all give the same
    /// changes, and returns them.
    async fn assemble(rows: &[TestRow]) -> Vec<Change> {
        let copied = assemble_in(rows, Feed::Copied).await;
        let expected: Vec<Vec<Option<Vec<u8>>>> = rows.iter().map(TestRow::cells).collect();
        assert_eq!(
            cells_of(&copied).concat(),
            expected,
            "rows copied cell by cell"
        );
        let flagged = |c: &Change| {
            c.rows()
                .all(|r| matches!(r.row.cells, CellSource::Span { .. }))
        };
        assert!(!copied.iter().any(flagged));
        for feed in [Feed::Spanned, Feed::Pushed] {
            let spanned = assemble_in(rows, feed).await;
            assert_eq!(cells_of(&spanned).concat(), expected, "{feed:?}");
            assert_eq!(format!("{spanned:?}"), format!("{copied:?}"), "{feed:?}");
            assert!(
                spanned.iter().all(flagged),
                "{feed:?}: a row of a page is copied in one piece"
            );
        }
        copied
    }

    /// Feeds rows to an assembler one by one, then flushes. Unless `Feed::Copied`, the rows
    /// are serialized back to back as a driver page holds them, and their cells are slices
    /// of it.
    async fn assemble_in(rows: &[TestRow], feed: Feed) -> Vec<Change> {
        let (keep, mut assembler) = keeper();
        let specs = log_specs();
        let index = Arc::new(ColumnIndex::new(&specs).unwrap());
        let (page, ranges) = page_of(rows);
        for (r, ranges) in rows.iter().zip(&ranges) {
            let cells = r.cells();
            let refs: Vec<Option<&[u8]>> = if feed == Feed::Copied {
                cells.iter().map(|c| c.as_deref()).collect()
            } else {
                ranges.iter().map(|r| r.map(|(a, b)| &page[a..b])).collect()
            };
            let header = index.header(&refs).unwrap();
            let row = CDCRow::new(header, &index, &specs, &refs);
            let row = if feed == Feed::Copied {
                row
            } else {
                row.with_page(&page)
            };
            if feed == Feed::Pushed && assembler.can_push(&header) {
                let delivery = assembler.push_row(&header, row.raw(), row.span());
                match delivery.unwrap() {
                    Some(delivery) => delivery.await.unwrap(),
                    None => continue,
                }
                assembler.delivered();
            } else {
                assembler.consume_cdc(row).await.unwrap();
            }
        }
        assembler.flush().await.unwrap();
        assert_eq!(*keep.flushes.lock().unwrap(), 1);
        keep.changes.lock().unwrap().clone()
    }

    /// A log schema of the test table, as the assembler keeps it.
    fn test_schema() -> Arc<Schema> {
        let specs = log_specs();
        let index = Arc::new(ColumnIndex::new(&specs).unwrap());
        Arc::new(Schema {
            specs: index.owned_specs(&specs),
            index,
            table: Arc::from("t"),
        })
    }

    /// Writes a change of `head` then `tail` whole.
    fn whole(
        writer: &mut chunk::ChunkWriter,
        schema: &Arc<Schema>,
        head: &[u8],
        tail: &[u8],
    ) -> chunk::Written {
        writer
            .whole(schema, head.len() + tail.len(), |out| {
                let (h, t) = out.split_at_mut(head.len());
                h.copy_from_slice(head);
                t.copy_from_slice(tail);
            })
            .unwrap()
    }

    /// A full chunk whose changes are all gone is written again; one with a change still
    /// held is left to it, and that change's bytes never change.
    #[test]
    fn a_chunk_is_written_again_only_once_its_changes_are_gone() {
        let schema = test_schema();
        let chunks = || Arc::strong_count(&schema) - 1;
        let mut writer = chunk::ChunkWriter::default();
        // About 16 changes of 1004 bytes fill a chunk: this goes round it several times.
        for i in 0..64u8 {
            let w = whole(&mut writer, &schema, &[i; 4], &[i; 1000]);
            assert!(w.bytes().iter().all(|&b| b == i));
            assert_eq!(chunks(), 1, "change {i}");
        }
        assert_eq!(writer.made, 1, "one chunk, written again");
        let kept = whole(&mut writer, &schema, &[0xaa; 4], &[0xaa; 1000]);
        for i in 0..64u8 {
            drop(whole(&mut writer, &schema, &[i; 4], &[i; 1000]));
        }
        assert!(
            kept.bytes().iter().all(|&b| b == 0xaa),
            "a kept change is intact"
        );
        assert_eq!(chunks(), 2, "the kept change's chunk and the writer's");
        assert_eq!(writer.made, 2, "the kept change's chunk is left to it");
        drop(kept);
        assert_eq!(chunks(), 1);
    }

    /// A chunk is freed once its writer and every change in it are gone, however many
    /// changes it served (its writer takes references in batches of [`chunk::PREPAID`]).
    #[test]
    fn chunks_are_freed_after_their_writer_and_every_change() {
        let schema = test_schema();
        // Every live chunk holds the schema once: its count is 1 + the chunks alive.
        let chunks = || Arc::strong_count(&schema) - 1;
        let mut writer = chunk::ChunkWriter::default();
        // A change larger than a chunk gets a chunk of its own; the small ones after it
        // share chunks, many more of them than a batch of references.
        let large = whole(&mut writer, &schema, &[9u8; 4], &[7u8; 40_000]);
        let n = 3 * chunk::PREPAID as u32;
        let mut small: Vec<chunk::Written> = (0..n)
            .map(|i| whole(&mut writer, &schema, &i.to_le_bytes(), &[]))
            .collect();
        let clones: Vec<chunk::Written> = small.iter().step_by(7).cloned().collect();
        assert_eq!(chunks(), 2, "the large change's chunk and the small ones'");
        drop(writer);
        assert_eq!(chunks(), 2, "the changes keep their chunks");
        assert_eq!(large.bytes().len(), 40_004);
        assert!(large.bytes()[4..].iter().all(|&b| b == 7));
        drop(large);
        assert_eq!(chunks(), 1);
        for (i, w) in small.iter().enumerate() {
            assert_eq!(w.bytes(), (i as u32).to_le_bytes());
        }
        small.clear();
        assert_eq!(chunks(), 1, "clones keep their chunk");
        for (i, w) in clones.iter().enumerate() {
            assert_eq!(w.bytes(), (7 * i as u32).to_le_bytes());
        }
        drop(clones);
        assert_eq!(chunks(), 0);
    }

    /// The range of each cell of a row in its page (`None`: null).
    type CellRanges = Vec<Option<(usize, usize)>>;

    /// Serializes rows as a driver page holds them: each cell after its big-endian length
    /// (-1: null). Returns the page and, per row, each cell's range in it.
    fn page_of(rows: &[TestRow]) -> (Vec<u8>, Vec<CellRanges>) {
        let mut page = Vec::new();
        let mut ranges = Vec::new();
        for r in rows {
            let mut row = Vec::new();
            for cell in r.cells() {
                match cell {
                    None => {
                        page.extend_from_slice(&(-1i32).to_be_bytes());
                        row.push(None);
                    }
                    Some(c) => {
                        page.extend_from_slice(&(c.len() as i32).to_be_bytes());
                        row.push(Some((page.len(), page.len() + c.len())));
                        page.extend_from_slice(&c);
                    }
                }
            }
            ranges.push(row);
        }
        (page, ranges)
    }

    /// The cells of every row of every change.
    fn cells_of(changes: &[Change]) -> Vec<Vec<Vec<Option<Vec<u8>>>>> {
        changes
            .iter()
            .map(|c| {
                c.rows()
                    .map(|r| {
                        (0..r.row.len())
                            .map(|p| r.row.cell(p).unwrap().map(<[u8]>::to_vec))
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    /// A row of stream `[s; 16]` at `micros` with seq, operation and `eob` as given.
    fn at(s: u8, micros: i64, seq: i32, op: i8, eob: bool) -> TestRow {
        let mut r = TestRow::new([s; 16], timeuuid(micros, 0x1111 * s as u64), seq);
        r.op = op;
        r.eob = eob;
        r
    }

    #[tokio::test]
    async fn rows_of_one_time_make_one_change_and_accessors_read_owned_cells() {
        let mut pre = at(1, 10, 0, 0, false);
        pre.v = Some(1);
        let mut delta = at(1, 10, 1, 1, false);
        delta.v = Some(2);
        delta.ttl = Some(30);
        let mut post = at(1, 10, 2, 9, true);
        post.v = Some(2);
        let mut other = at(1, 11, 0, 3, true);
        other.ck = Some(5);
        let changes = assemble(&[pre, delta, post, other]).await;
        assert_eq!(changes.len(), 2);
        let c = &changes[0];
        assert_eq!(c.table(), "t");
        assert_eq!(c.stream_id(), stream(1));
        assert_eq!(c.timestamp_micros(), 10);
        assert_eq!(c.rows().len(), 3);
        assert_eq!(c.operation(), Some(OperationType::RowUpdate));
        assert_eq!(c.ttl(), Some(30));
        assert_eq!(c.pre_images().count(), 1);
        assert_eq!(c.post_images().count(), 1);
        let d: Vec<_> = c.deltas().collect();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].batch_seq_no(), 1);
        assert_eq!(d[0].get_value_as::<i32>("v").unwrap(), Some(2));
        assert_eq!(d[0].get_value("pk").unwrap(), Some(CqlValue::Int(0)));
        assert!(d[0].get_value("nope").is_err());
        assert!(d[0].column_deletable("v") && !d[0].column_deletable("pk"));
        assert!(d[0].collection_exists("s"));
        assert_eq!(
            d[0].get_non_cdc_column_names().collect::<Vec<_>>(),
            vec!["ck", "pk", "s", "v"]
        );
        // A change is a reference to its chunk and its range in it: moved in registers.
        assert_eq!(std::mem::size_of::<Change>(), 16);
        // A clone shares the rows.
        let copy = c.clone();
        drop(changes);
        assert_eq!(copy.rows().last().map(|r| r.end_of_batch()), Some(true));
        assert!(format!("{copy:?}").contains("PostImage"));
    }

    /// Rows larger than a chunk, and changes whose rows overflow the chunk they started in,
    /// are kept whole; changes kept while later ones are written keep their bytes.
    #[tokio::test]
    async fn changes_larger_than_a_chunk_or_across_chunks_are_kept_whole() {
        let mut rows = Vec::new();
        for c in 0..40i64 {
            let n = 1 + c as usize % 3;
            for seq in 0..n {
                let mut r = at(1 + (c % 2) as u8, 10 + c, seq as i32, 1, seq + 1 == n);
                r.v = Some(c as i32);
                // Sets of 0.1 to 5 KiB (a change of three rows does not fit in the rest of
                // a chunk); every seventh change has a row of 20 KiB, more than a chunk.
                let items = if c % 7 == 3 && seq == 0 {
                    2500
                } else {
                    10 + 60 * ((c as usize * 5 + seq) % 11)
                };
                r.s = Some((0..items as i32).collect());
                rows.push(r);
            }
        }
        // `assemble` compares every kept change's cells with the rows once all are read.
        let changes = assemble(&rows).await;
        let shape: Vec<(i64, usize, bool)> = changes
            .iter()
            .map(|c| {
                let v = c.rows().all(|r| {
                    r.get_value_as::<i32>("v").unwrap() == Some(c.timestamp_micros() as i32 - 10)
                });
                (c.timestamp_micros(), c.rows().len(), v)
            })
            .collect();
        let expected: Vec<(i64, usize, bool)> = (0..40i64)
            .map(|c| (10 + c, 1 + c as usize % 3, true))
            .collect();
        assert_eq!(shape, expected);
    }

    /// A change whose rows were read with two log schemas (the schema changed between its
    /// pages) keeps each row's schema; the next change starts in a chunk of its own schema.
    #[tokio::test]
    async fn a_schema_change_within_a_change_keeps_each_rows_schema() {
        let (keep, mut assembler) = keeper();
        let specs = log_specs();
        // Two indexes of the same columns are two schemas to the assembler.
        let first = Arc::new(ColumnIndex::new(&specs).unwrap());
        let second = Arc::new(ColumnIndex::new(&specs).unwrap());
        let mut rows = Vec::new();
        for (seq, eob) in [(0, false), (1, false), (2, true)] {
            let mut r = at(1, 10, seq, 1, eob);
            r.v = Some(seq);
            rows.push(r);
        }
        let mut next = at(1, 11, 0, 1, true);
        next.v = Some(7);
        rows.push(next);
        let indexes = [&first, &second, &first, &second];
        for (r, index) in rows.iter().zip(indexes) {
            let cells = r.cells();
            let refs: Vec<Option<&[u8]>> = cells.iter().map(|c| c.as_deref()).collect();
            let header = index.header(&refs).unwrap();
            assembler
                .consume_cdc(CDCRow::new(header, index, &specs, &refs))
                .await
                .unwrap();
        }
        assembler.flush().await.unwrap();
        let changes = keep.changes.lock().unwrap().clone();
        let read: Vec<Vec<(Option<i32>, bool)>> = changes
            .iter()
            .map(|c| {
                c.rows()
                    .map(|r| {
                        let v = r.get_value_as::<i32>("v").unwrap();
                        (v, Arc::ptr_eq(r.row.index, &second))
                    })
                    .collect()
            })
            .collect();
        assert_eq!(
            read,
            vec![
                vec![(Some(0), false), (Some(1), true), (Some(2), false)],
                vec![(Some(7), true)],
            ]
        );
        assert!(changes.iter().all(|c| c.table() == "t"));
    }

    /// Sends every change to another thread.
    struct SendAway(std::sync::mpsc::Sender<Change>);

    #[async_trait]
    impl ChangeConsumer for SendAway {
        async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
            self.0.send(change)?;
            Ok(())
        }
    }

    /// Changes are read on another thread while the assembler writes the next rows into the
    /// chunk they are in (and into new chunks once it is full).
    #[tokio::test]
    async fn changes_are_read_on_another_thread_while_later_rows_are_written() {
        // Changes of one row (written whole) and of two (assembled row by row) alternate;
        // chunks fill up, and are written again once the other thread dropped their changes.
        // (Fewer under Miri, which checks the accesses of both threads but runs slowly.)
        let changes: i64 = if cfg!(miri) { 200 } else { 3000 };
        let (tx, rx) = std::sync::mpsc::channel::<Change>();
        let reader = std::thread::spawn(move || {
            let mut seen = 0i64;
            for change in rx {
                let c = change.timestamp_micros() - 10;
                assert_eq!(c, seen);
                let items = (c % 50) as i32;
                for row in change.rows() {
                    assert_eq!(row.get_value_as::<i32>("v").unwrap(), Some(c as i32));
                    let s = row.get_value("s").unwrap();
                    let expected =
                        (items > 0).then(|| CqlValue::Set((0..items).map(CqlValue::Int).collect()));
                    assert_eq!(s, expected, "change {c}");
                }
                seen += 1;
            }
            seen
        });
        let mut assembler = ChangeAssembler::new(Box::new(SendAway(tx)), Arc::from("t"));
        let specs = log_specs();
        let index = Arc::new(ColumnIndex::new(&specs).unwrap());
        for c in 0..changes {
            let rows = 1 + c % 2;
            for seq in 0..rows as i32 {
                let mut r = at(1, 10 + c, seq, 1, seq + 1 == rows as i32);
                r.v = Some(c as i32);
                r.s = (c % 50 > 0).then(|| (0..(c % 50) as i32).collect());
                let (page, ranges) = page_of(std::slice::from_ref(&r));
                let refs: Vec<Option<&[u8]>> = ranges[0]
                    .iter()
                    .map(|r| r.map(|(a, b)| &page[a..b]))
                    .collect();
                let header = index.header(&refs).unwrap();
                let row = CDCRow::new(header, &index, &specs, &refs).with_page(&page);
                // As the stream reader hands rows over.
                assert!(assembler.can_push(&header));
                match assembler.push_row(&header, row.raw(), row.span()).unwrap() {
                    Some(delivery) => delivery.await.unwrap(),
                    None => continue,
                }
                assembler.delivered();
            }
        }
        assembler.flush().await.unwrap();
        drop(assembler);
        assert_eq!(reader.join().unwrap(), changes);
    }

    #[tokio::test]
    async fn a_new_time_or_stream_completes_a_change_without_end_of_batch() {
        // No `cdc$end_of_batch` anywhere: the next (stream, time) and the flush complete them.
        let rows = [
            at(1, 10, 0, 1, false),
            at(1, 10, 1, 1, false),
            at(2, 10, 0, 1, false),
            at(2, 12, 0, 2, false),
        ];
        let changes = assemble(&rows).await;
        let shape: Vec<(u8, i64, usize)> = changes
            .iter()
            .map(|c| {
                (
                    c.stream_id().as_bytes()[0],
                    c.timestamp_micros(),
                    c.rows().len(),
                )
            })
            .collect();
        assert_eq!(shape, vec![(1, 10, 2), (2, 10, 1), (2, 12, 1)]);
    }

    #[tokio::test]
    async fn before_and_after_merge_images_and_deltas() {
        // Pre-image v=1 s={1,2}; delta: s + {3} - {1}; no post-image.
        let mut pre = at(1, 10, 0, 0, false);
        pre.v = Some(1);
        pre.s = Some(vec![1, 2]);
        let mut delta = at(1, 10, 1, 1, true);
        delta.s = Some(vec![3]);
        delta.dele_s = Some(vec![1]);
        let c = &assemble(&[pre, delta]).await[0];
        let rows = c.row_changes();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].target(), Target::Row);
        assert!(!rows[0].is_static() && !rows[0].is_delete());
        let before = c.before().unwrap().unwrap();
        assert_eq!(before.get("v"), Some(&CqlValue::Int(1)));
        assert_eq!(before.get("ck"), Some(&CqlValue::Int(0)));
        let after = c.after().unwrap().unwrap();
        assert_eq!(after.get("v"), Some(&CqlValue::Int(1)));
        assert_eq!(
            after.get("s"),
            Some(&CqlValue::Set(vec![CqlValue::Int(2), CqlValue::Int(3)]))
        );
        // The merged image decodes into a user's struct.
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Row {
            pk: i32,
            ck: i32,
            v: Option<i64>,
            s: Option<std::collections::BTreeSet<u8>>,
        }
        assert_eq!(
            after.decode::<Row>().unwrap(),
            Row {
                pk: 0,
                ck: 0,
                v: Some(1),
                s: Some([2, 3].into()),
            }
        );
        let err = after.decode::<(i32,)>().unwrap_err();
        assert!(!err.to_string().is_empty());

        // No pre-image; a deleted column is known null; the overwritten set is exact.
        let mut delta = at(1, 20, 0, 1, true);
        delta.del_v = true;
        delta.s = Some(vec![7]);
        let c = &assemble(&[delta]).await[0];
        assert_eq!(c.before().unwrap(), None);
        let after = c.after().unwrap().unwrap();
        assert!(after.contains("v") && after.get("v").is_none());
        assert_eq!(after.get("s"), Some(&CqlValue::Set(vec![CqlValue::Int(7)])));

        // A post-image wins over the merge.
        let mut delta = at(1, 30, 0, 2, false);
        delta.v = Some(5);
        let mut post = at(1, 30, 1, 9, true);
        post.v = Some(5);
        post.s = Some(vec![9]);
        let after = assemble(&[delta, post]).await[0].after().unwrap().unwrap();
        assert_eq!(after.get("s"), Some(&CqlValue::Set(vec![CqlValue::Int(9)])));
        assert_eq!(after.len(), 4);
    }

    #[tokio::test]
    async fn deletes_have_no_after_and_rows_are_grouped_by_key() {
        // A static-row update, two clustering rows, a range and a partition deletion.
        let mut st = at(1, 10, 0, 1, false);
        st.ck = None;
        st.v = Some(1);
        let mut r1 = at(1, 10, 1, 1, false);
        r1.ck = Some(1);
        let mut r2 = at(1, 10, 2, 3, false);
        r2.ck = Some(2);
        let mut lo = at(1, 10, 3, 5, false);
        lo.ck = Some(3);
        let mut hi = at(1, 10, 4, 8, false);
        hi.ck = Some(6);
        let mut post = at(1, 10, 5, 9, true);
        post.ck = Some(1);
        let c = &assemble(&[st, r1, r2, lo, hi, post]).await[0];
        let rows = c.row_changes();
        let shape: Vec<(Target, bool, bool, usize, bool)> = rows
            .iter()
            .map(|r| {
                (
                    r.target(),
                    r.is_static(),
                    r.is_delete(),
                    r.deltas().len(),
                    r.post_image().is_some(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Target::Row, true, false, 1, false),
                (Target::Row, false, false, 1, true),
                (Target::Row, false, true, 1, false),
                (Target::Range, false, true, 2, false),
            ]
        );
        assert!(rows[0].after().unwrap().is_some());
        assert_eq!(rows[0].key().unwrap().get("ck"), None);
        assert!(rows[2].after().unwrap().is_none());
        assert!(rows[3].after().unwrap().is_none());
        assert_eq!(
            rows[3].deltas()[1].get_value("ck").unwrap(),
            Some(CqlValue::Int(6))
        );

        let mut pd = at(1, 20, 1, 4, true);
        pd.ck = None;
        let mut ins = at(1, 20, 0, 2, false);
        ins.v = Some(3);
        let c = &assemble(&[ins, pd]).await[0];
        let rows = c.row_changes();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].target(), Target::Partition);
        // The partition deletion (same timestamp) wins over the insert.
        assert!(rows.iter().all(|r| r.after().unwrap().is_none()));
    }

    #[test]
    fn collections_and_udts_merge() {
        let m = |kv: &[(i32, i32)]| {
            CqlValue::Map(
                kv.iter()
                    .map(|(k, v)| (CqlValue::Int(*k), CqlValue::Int(*v)))
                    .collect(),
            )
        };
        let set = |v: &[i32]| CqlValue::Set(v.iter().map(|i| CqlValue::Int(*i)).collect());
        assert_eq!(
            merge_collection(Some(m(&[(1, 1), (2, 2)])), Some(m(&[(2, 5), (3, 3)])), None),
            Some(m(&[(1, 1), (2, 5), (3, 3)]))
        );
        assert_eq!(
            merge_collection(Some(m(&[(1, 1), (2, 2)])), None, Some(set(&[1]))),
            Some(m(&[(2, 2)]))
        );
        assert_eq!(merge_collection(None, None, Some(set(&[1]))), None);
        let udt = |a: Option<i32>, b: Option<i32>| CqlValue::UserDefinedType {
            keyspace: "ks".into(),
            name: "u".into(),
            fields: vec![
                ("a".into(), a.map(CqlValue::Int)),
                ("b".into(), b.map(CqlValue::Int)),
            ],
        };
        assert_eq!(
            merge_collection(
                Some(udt(Some(1), Some(2))),
                Some(udt(Some(7), None)),
                Some(CqlValue::Set(vec![CqlValue::SmallInt(1)]))
            ),
            Some(udt(Some(7), None))
        );
    }

    /// Changes of several rows, in two streams, read with pages of 1 to 3 rows and
    /// windows of one second, are delivered whole and once, with or without
    /// `cdc$end_of_batch` (then the next change or the window's end completes them).
    #[tokio::test(start_paused = true)]
    async fn changes_straddling_pages_are_delivered_whole_and_once() {
        for (page_size, eob) in [(1, true), (2, true), (3, true), (1, false), (2, false)] {
            let log = Arc::new(FakeLog::new(page_size));
            let start_us = (BASE - 3_600_000) * 1000;
            let mut expected = Vec::new();
            for i in 0..12i64 {
                for s in [1u8, 2] {
                    let n = 1 + ((i as usize + s as usize) % 4);
                    let t = start_us + i * 700_000 + s as i64;
                    for seq in 0..n {
                        let mut r = at(s, t, seq as i32, 1, eob && seq + 1 == n);
                        r.v = Some(seq as i32);
                        log.push(r);
                    }
                    expected.push((s, t, n));
                }
            }
            let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
            let (_gen_tx, gen_rx) = watch::channel(None);
            let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
            settings.window_size = Duration::from_secs(1);
            let start = ms(BASE - 3_600_000);
            let slot = slot(&settings, start);
            let keep = Keep::default();
            let reader = StreamReader::new(
                settings,
                vec![stream(1), stream(2)],
                GenerationTimestamp::new(ms(0)),
                gen_rx,
                start,
                Box::new(ChangeAssembler::new(Box::new(keep.clone()), Arc::from("t"))),
                slot,
            );
            reader.run().await.unwrap();
            let changes = keep.changes.lock().unwrap().clone();
            let mut got: Vec<(u8, i64, usize)> = Vec::new();
            for c in &changes {
                let seqs: Vec<i32> = c.rows().map(|r| r.batch_seq_no()).collect();
                let values: Vec<Option<i32>> = c
                    .rows()
                    .map(|r| r.get_value_as::<i32>("v").unwrap())
                    .collect();
                assert_eq!(seqs, (0..seqs.len() as i32).collect::<Vec<_>>());
                assert_eq!(values, seqs.iter().map(|s| Some(*s)).collect::<Vec<_>>());
                assert_eq!(c.rows().last().map(|r| r.end_of_batch()), Some(eob));
                got.push((
                    c.stream_id().as_bytes()[0],
                    c.timestamp_micros(),
                    c.rows().len(),
                ));
            }
            got.sort();
            expected.sort();
            assert_eq!(got, expected, "page size {page_size}");
        }
    }

    /// A change consumer that fails (or panics) on the changes whose first `v` is in
    /// `fail`, `times` times each (u32::MAX: always), and keeps the others.
    #[derive(Clone, Default)]
    struct Fussy {
        fail: Vec<i32>,
        times: u32,
        panics: bool,
        failures: Arc<Mutex<std::collections::HashMap<i32, u32>>>,
        changes: Arc<Mutex<Vec<Change>>>,
    }

    #[async_trait]
    impl ChangeConsumer for Fussy {
        async fn consume_change(&mut self, change: Change) -> anyhow::Result<()> {
            let first = change
                .rows()
                .next()
                .and_then(|r| r.get_value_as::<i32>("v").ok().flatten())
                .unwrap_or_default();
            if self.fail.contains(&first) {
                let mut failures = self.failures.lock().unwrap();
                let n = failures.entry(first).or_default();
                if *n < self.times {
                    *n += 1;
                    drop(failures);
                    if self.panics {
                        panic!("change consumer bug at v={first}");
                    }
                    anyhow::bail!("cannot take the change of v={first}");
                }
            }
            self.changes.lock().unwrap().push(change);
            Ok(())
        }
    }

    /// Runs a reader of three changes of `rows` rows each (v = 10c + seq), in pages of two
    /// rows, with `consumer` and `policy`; returns the result and each delivered change's
    /// values.
    async fn run_changes(
        consumer: Fussy,
        policy: crate::ConsumerErrorPolicy,
        rows: i32,
    ) -> (Result<(), crate::CDCError>, Vec<Vec<i32>>) {
        let log = Arc::new(FakeLog::new(2));
        let start_us = (BASE - 3_600_000) * 1000;
        for c in 0..3i64 {
            for seq in 0..rows {
                let mut r = at(1, start_us + c * 1000, seq, 1, seq == rows - 1);
                r.v = Some(10 * c as i32 + seq);
                log.push(r);
            }
        }
        let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
        settings.on_error = policy;
        let start = ms(BASE - 3_600_000);
        let slot = slot(&settings, start);
        let reader = StreamReader::new(
            settings,
            vec![stream(1)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Box::new(ChangeAssembler::new(
                Box::new(consumer.clone()),
                Arc::from("t"),
            )),
            slot,
        );
        let result = reader.run().await;
        let values = consumer
            .changes
            .lock()
            .unwrap()
            .iter()
            .map(|c| {
                c.rows()
                    .map(|r| r.get_value_as::<i32>("v").unwrap().unwrap_or_default())
                    .collect()
            })
            .collect();
        (result, values)
    }

    /// The consumer error policy applies to whole changes: a retried change is delivered
    /// again whole (not re-assembled from its last row), a skipped one is dropped whole, and
    /// the changes around it arrive intact.
    #[tokio::test(start_paused = true)]
    async fn the_error_policy_retries_or_skips_whole_changes() {
        // Changes of one row are delivered again without a copy kept (see `hand_over`).
        for rows in [3, 1] {
            let whole = |c: i32| (10 * c..10 * c + rows).collect::<Vec<_>>();
            let flaky = Fussy {
                fail: vec![10],
                times: 2,
                ..Fussy::default()
            };
            let (result, got) =
                run_changes(flaky, crate::ConsumerErrorPolicy::default(), rows).await;
            result.unwrap();
            assert_eq!(got, vec![whole(0), whole(1), whole(2)], "rows: {rows}");

            for panics in [false, true] {
                let broken = || Fussy {
                    fail: vec![10],
                    times: u32::MAX,
                    panics,
                    ..Fussy::default()
                };
                let (result, got) = run_changes(
                    broken(),
                    crate::ConsumerErrorPolicy::skip().with_retry(1, Duration::from_millis(5)),
                    rows,
                )
                .await;
                result.unwrap();
                assert_eq!(
                    got,
                    vec![whole(0), whole(2)],
                    "panics: {panics}, rows: {rows}"
                );
                let (result, got) =
                    run_changes(broken(), crate::ConsumerErrorPolicy::stop(), rows).await;
                let err = result.unwrap_err();
                assert!(
                    matches!(
                        &err,
                        crate::CDCError::Consumer { batch_seq_no, .. } if *batch_seq_no == rows - 1
                    ),
                    "{err}"
                );
                assert_eq!(got, vec![whole(0)]);
            }
        }
    }

    /// Where the changes of [`run_layout`] end.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Ends {
        /// At their `cdc$end_of_batch` row.
        EndOfBatch,
        /// Without `cdc$end_of_batch`: at the first row of the next change (same stream, next
        /// `cdc$time`).
        NextTime,
        /// Without `cdc$end_of_batch`: changes 0 and 1 are stream 1's, 2 and 3 stream 2's;
        /// change 1 ends at the first row of stream 2.
        NextStream,
        /// Without `cdc$end_of_batch`, one change per window: at the window's end.
        WindowEnd,
    }

    const ENDS: [Ends; 4] = [
        Ends::EndOfBatch,
        Ends::NextTime,
        Ends::NextStream,
        Ends::WindowEnd,
    ];

    /// The stream and the `cdc$time` (micros) of change `c` of [`run_layout`].
    fn layout_change(ends: Ends, c: i64) -> (u8, i64) {
        let start_us = (BASE - 3_600_000) * 1000;
        match ends {
            Ends::NextStream => (if c < 2 { 1 } else { 2 }, start_us + c * 1000),
            Ends::WindowEnd => (1, start_us + c * 1_000_000 + 500),
            Ends::EndOfBatch | Ends::NextTime => (1, start_us + c * 1000),
        }
    }

    /// What [`run_layout`] returns.
    struct LayoutRun {
        result: Result<(), crate::CDCError>,
        /// Each delivered change's values.
        got: Vec<Vec<i32>>,
        stats: crate::Progress,
    }

    /// Runs a reader of streams 1 and 2 over four changes c = 0..4 of `rows` rows each
    /// (v = 10c + seq) that end as `ends` says, in pages of two rows, with `consumer` and
    /// `policy`.
    async fn run_layout(
        ends: Ends,
        consumer: Fussy,
        policy: crate::ConsumerErrorPolicy,
        rows: i32,
    ) -> LayoutRun {
        let log = Arc::new(FakeLog::new(2));
        for c in 0..4i64 {
            let (s, t) = layout_change(ends, c);
            for seq in 0..rows {
                let mut r = at(s, t, seq, 1, ends == Ends::EndOfBatch && seq == rows - 1);
                r.v = Some(10 * c as i32 + seq);
                log.push(r);
            }
        }
        let (_end_tx, end_rx) = watch::channel(Some(ms(BASE - 3_000_000)));
        let (_gen_tx, gen_rx) = watch::channel(None);
        let mut settings = settings(log, Arc::new(MemorySaver::default()), end_rx);
        settings.on_error = policy;
        if ends == Ends::WindowEnd {
            settings.window_size = Duration::from_secs(1);
        }
        let stats = settings.stats.clone();
        let start = ms(BASE - 3_600_000);
        let slot = slot(&settings, start);
        let reader = StreamReader::new(
            settings,
            vec![stream(1), stream(2)],
            GenerationTimestamp::new(ms(0)),
            gen_rx,
            start,
            Box::new(ChangeAssembler::new(
                Box::new(consumer.clone()),
                Arc::from("t"),
            )),
            slot,
        );
        let result = reader.run().await;
        let got = consumer
            .changes
            .lock()
            .unwrap()
            .iter()
            .map(|c| {
                c.rows()
                    .map(|r| r.get_value_as::<i32>("v").unwrap().unwrap_or_default())
                    .collect()
            })
            .collect();
        LayoutRun {
            result,
            got,
            stats: stats.snapshot(),
        }
    }

    /// A change consumer that always fails (or panics) on change 1 of [`run_layout`].
    fn failing_on_change_1(panics: bool) -> Fussy {
        Fussy {
            fail: vec![10],
            times: u32::MAX,
            panics,
            ..Fussy::default()
        }
    }

    /// The values of change `c` of `rows` rows of [`run_layout`].
    fn whole_change(c: i32, rows: i32) -> Vec<i32> {
        (10 * c..10 * c + rows).collect()
    }

    /// With `skip`, a failed change is given up whole and alone, wherever it ends: the change
    /// after it is delivered with all its rows (a change without `cdc$end_of_batch` is
    /// completed by the next change's first row, which is not charged with its failure), and
    /// one at a window's end does not stop the reader.
    #[tokio::test(start_paused = true)]
    async fn skip_gives_up_the_failed_change_and_delivers_the_next_whole() {
        for ends in ENDS {
            for rows in [1, 3] {
                for panics in [false, true] {
                    let run = run_layout(
                        ends,
                        failing_on_change_1(panics),
                        crate::ConsumerErrorPolicy::skip().with_retry(1, Duration::from_millis(5)),
                        rows,
                    )
                    .await;
                    let case = format!("{ends:?}, rows: {rows}, panics: {panics}");
                    run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(
                        run.got,
                        vec![
                            whole_change(0, rows),
                            whole_change(2, rows),
                            whole_change(3, rows)
                        ],
                        "{case}"
                    );
                    assert_eq!(
                        (run.stats.rows_skipped, run.stats.consumer_retries),
                        (1, 1),
                        "{case}"
                    );
                }
            }
        }
    }

    /// With a dead-letter sink, the letters of a failed change hold its rows, in order (one
    /// letter per row), wherever it ends; nothing else is lost.
    #[tokio::test(start_paused = true)]
    async fn dead_letters_of_a_failed_change_hold_its_rows() {
        for ends in ENDS {
            for rows in [1, 3] {
                for retries in [0, 1] {
                    let sink = Arc::new(crate::stream::tests::MemorySink::default());
                    let run = run_layout(
                        ends,
                        failing_on_change_1(false),
                        crate::ConsumerErrorPolicy::dead_letter(sink.clone())
                            .with_retry(retries, Duration::from_millis(5)),
                        rows,
                    )
                    .await;
                    let case = format!("{ends:?}, rows: {rows}, retries: {retries}");
                    run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                    assert_eq!(
                        run.got,
                        vec![
                            whole_change(0, rows),
                            whole_change(2, rows),
                            whole_change(3, rows)
                        ],
                        "{case}"
                    );
                    let (s, t) = layout_change(ends, 1);
                    let letters: Vec<(StreamID, i64, i32, Option<String>)> = sink
                        .letters
                        .lock()
                        .unwrap()
                        .iter()
                        .map(|l| {
                            assert!(l.error.contains("change of v=10"), "{case}: {}", l.error);
                            assert_eq!(l.attempts, retries + 1, "{case}");
                            let v = l.columns.iter().find(|(n, _)| n == "v");
                            (
                                l.stream_id,
                                crate::base::time::timeuuid_micros(&l.time),
                                l.batch_seq_no,
                                v.map(|(_, v)| v.clone()),
                            )
                        })
                        .collect();
                    let expected: Vec<_> = (0..rows)
                        .map(|seq| (stream(s), t, seq, Some((10 + seq).to_string())))
                        .collect();
                    assert_eq!(letters, expected, "{case}");
                    assert_eq!(run.stats.rows_dead_lettered, 1, "{case}");
                }
            }
        }
    }

    /// A change that fails, then is taken, is delivered once, whole, and the next change
    /// whole, wherever it ends.
    #[tokio::test(start_paused = true)]
    async fn a_retried_change_is_delivered_once_and_the_next_whole() {
        for ends in ENDS {
            for rows in [1, 3] {
                let flaky = Fussy {
                    fail: vec![10],
                    times: 2,
                    ..Fussy::default()
                };
                let run = run_layout(
                    ends,
                    flaky.clone(),
                    crate::ConsumerErrorPolicy::skip().with_retry(3, Duration::from_millis(5)),
                    rows,
                )
                .await;
                let case = format!("{ends:?}, rows: {rows}");
                run.result.unwrap_or_else(|e| panic!("{case}: {e}"));
                assert_eq!(
                    run.got,
                    (0..4).map(|c| whole_change(c, rows)).collect::<Vec<_>>(),
                    "{case}"
                );
                assert_eq!(flaky.failures.lock().unwrap().get(&10), Some(&2), "{case}");
                assert_eq!(
                    (run.stats.consumer_retries, run.stats.rows_skipped),
                    (2, 0),
                    "{case}"
                );
            }
        }
    }

    /// With `stop`, the reader ends with a [`crate::CDCError::Consumer`] naming the failed
    /// change (its stream, `cdc$time` and last row), wherever it ends.
    #[tokio::test(start_paused = true)]
    async fn stop_names_the_failed_change() {
        for ends in ENDS {
            for rows in [1, 3] {
                let run = run_layout(
                    ends,
                    failing_on_change_1(false),
                    crate::ConsumerErrorPolicy::stop(),
                    rows,
                )
                .await;
                let case = format!("{ends:?}, rows: {rows}");
                let err = run.result.unwrap_err();
                let (s, t) = layout_change(ends, 1);
                match &err {
                    crate::CDCError::Consumer {
                        stream: named,
                        time,
                        batch_seq_no,
                        attempts,
                        ..
                    } => assert_eq!(
                        (
                            *named,
                            crate::base::time::timeuuid_micros(time),
                            *batch_seq_no,
                            *attempts
                        ),
                        (stream(s), t, rows - 1, 1),
                        "{case}"
                    ),
                    other => panic!("{case}: unexpected error {other}"),
                }
                assert!(err.to_string().contains("change of v=10"), "{case}: {err}");
                assert_eq!(run.got, vec![whole_change(0, rows)], "{case}");
            }
        }
    }
}
