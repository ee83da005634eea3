//! The buffers the rows of changes are copied into ([`Chunk`]): the assembler writes rows at
//! the end of one while the changes before them are read, from any thread, by their
//! consumers. A change is a reference to its chunk and its range in it (16 bytes, moved in
//! registers): one reference count per change for its bytes and its schemas, and its stream,
//! time and row count are in its bytes. The writer takes references in batches, so that
//! handing a change over costs no atomic operation; only dropping one does.
//!
//! A chunk knows nothing of what it holds: the bytes are the change format of the module
//! above (`change`), and the schemas (`S`) are what that format's records name by their slot.

// The only unsafe code of the crate: a buffer written at its end while its beginning is
// shared, with a reference count that the writer takes in batches. Neither `Arc` nor
// `bytes` can express either without a second reference count or an atomic operation
// per change.
#![allow(unsafe_code)]

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// The least size of the buffers the rows of changes are copied into: one allocation serves
/// the changes of many rows (a change kept by a consumer keeps its buffer alive).
const CHUNK: usize = 16 * 1024;
/// The largest chunk: offsets in it are `u32`s.
const MAX: usize = u32::MAX as usize;
/// References the writer takes at once (and holds until it hands them out as changes
/// or leaves the chunk).
pub(super) const PREPAID: usize = 256;
/// The largest chunk emptied and written again (see [`ChunkWriter::reuse`]).
const REUSE_MAX: usize = 4 * CHUNK;
/// Above this many references a count could overflow (as `Arc` does, the process aborts
/// rather than risk a use after free).
const MAX_REFS: usize = isize::MAX as usize;

/// A buffer of `cap` bytes and the schemas (`S`) of the rows written into it (a row record
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
pub(super) struct Chunk<S> {
    refs: AtomicUsize,
    schemas: Vec<Arc<S>>,
    ptr: NonNull<u8>,
    cap: usize,
}

impl<S> Drop for Chunk<S> {
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
unsafe fn release<S>(chunk: NonNull<Chunk<S>>, count: usize) {
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
unsafe fn free<S>(chunk: NonNull<Chunk<S>>) {
    // SAFETY: as the caller promised.
    drop(unsafe { Box::from_raw(chunk.as_ptr()) });
}

/// Bytes of a chunk that were written: a range before its writer's position.
///
/// Two fields, so that it is passed in two registers (a third field made it passed
/// through memory, and read back before the stores had completed, at every call).
pub(super) struct Written<S> {
    chunk: NonNull<Chunk<S>>,
    /// Where the range starts (the low 32 bits) and its length (the high 32 bits).
    range: u64,
}

// SAFETY: a `Written` is a counted reference to a chunk (like an `Arc<Chunk>`); what it
// reads is not written while it exists (see `Chunk`), the count is atomic, and the
// schemas are `Arc`s of `Send + Sync` data.
unsafe impl<S: Send + Sync> Send for Written<S> {}
unsafe impl<S: Send + Sync> Sync for Written<S> {}

impl<S> Clone for Written<S> {
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

impl<S> Drop for Written<S> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this `Written` owns one reference and is gone after this.
        unsafe { release(self.chunk, 1) }
    }
}

impl<S> Written<S> {
    /// A reference (owned by the caller) to `len` bytes at `at` of `chunk`. Chunks have
    /// at most [`MAX`] bytes: the offsets fit.
    #[inline]
    fn new(chunk: NonNull<Chunk<S>>, at: usize, len: usize) -> Self {
        Self {
            chunk,
            range: at as u64 | (len as u64) << 32,
        }
    }

    /// The chunk, kept alive by this reference.
    #[inline]
    fn chunk(&self) -> &Chunk<S> {
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
    pub(super) fn schema(&self, slot: usize) -> Option<&Arc<S>> {
        self.chunk().schemas.get(slot)
    }
}

/// The writer's hold on its chunk: its own reference and `prepaid` more, handed out as
/// [`Written`]s without touching the count.
struct Held<S> {
    chunk: NonNull<Chunk<S>>,
    prepaid: usize,
    /// The chunk's size and first schema (read at every change without going to the
    /// chunk).
    cap: usize,
    first_schema: *const S,
}

impl<S> Held<S> {
    #[inline]
    fn chunk(&self) -> &Chunk<S> {
        // SAFETY: the writer's own reference keeps the chunk alive.
        unsafe { self.chunk.as_ref() }
    }

    /// One of the writer's references, for a new `Written`.
    #[inline]
    fn reference(&mut self) -> NonNull<Chunk<S>> {
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

impl<S> Drop for Held<S> {
    fn drop(&mut self) {
        // SAFETY: the writer owns its own reference and the prepaid ones, and gives
        // them up with this.
        unsafe { release(self.chunk, self.prepaid + 1) }
    }
}

/// The one writer of the current chunk: appends the bytes of the pending change and
/// takes them out as [`Written`] when it is complete.
pub(super) struct ChunkWriter<S> {
    held: Option<Held<S>>,
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
unsafe impl<S: Send + Sync> Send for ChunkWriter<S> {}
unsafe impl<S: Send + Sync> Sync for ChunkWriter<S> {}

impl<S> Default for ChunkWriter<S> {
    fn default() -> Self {
        Self {
            held: None,
            len: 0,
            start: 0,
            #[cfg(test)]
            made: 0,
        }
    }
}

impl<S> ChunkWriter<S> {
    fn chunk(&self) -> Option<&Chunk<S>> {
        self.held.as_ref().map(Held::chunk)
    }

    /// The slot of `schema` in the current chunk, if there.
    fn slot(&self, schema: &Arc<S>) -> Option<usize> {
        self.chunk()?
            .schemas
            .iter()
            .position(|s| Arc::ptr_eq(s, schema))
    }

    /// Makes a new chunk of at least `cap` bytes (at most [`MAX`]) with `schemas` the
    /// current one, leaving the previous one to the changes in it.
    fn fresh(&mut self, schemas: Vec<Arc<S>>, cap: usize) -> anyhow::Result<&Chunk<S>> {
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
    fn reuse(&mut self, schema: &Arc<S>, room: usize) -> bool {
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
    pub(super) fn start(&mut self, schema: &Arc<S>, room: usize) -> anyhow::Result<u8> {
        self.start = self.len;
        if let (Some(chunk), Some(slot)) = (self.chunk(), self.slot(schema))
            && chunk.cap - self.len >= room
            && let Ok(slot) = u8::try_from(slot)
        {
            return Ok(slot);
        }
        if !self.reuse(schema, room) {
            self.fresh(vec![schema.clone()], room.max(CHUNK))?;
            (self.start, self.len) = (0, 0);
        }
        Ok(0)
    }

    /// Makes room for `room` more bytes of the pending change, of rows of `schema`, and
    /// returns the schema's slot. If the chunk is full, or lacks the schema (the log's
    /// schema changed within the change), the change so far moves to a new chunk (of
    /// twice what it then needs, so that a long change is copied a few times only).
    pub(super) fn reserve(&mut self, schema: &Arc<S>, room: usize) -> anyhow::Result<u8> {
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
            let cap = needed.saturating_mul(2).clamp(CHUNK, MAX);
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
        schema: &Arc<S>,
        n: usize,
        fill: impl FnOnce(&mut [u8]),
    ) -> anyhow::Result<Written<S>> {
        let fits = self.held.as_ref().is_some_and(|h| {
            h.cap - self.len >= n && std::ptr::eq(h.first_schema, Arc::as_ptr(schema))
        });
        if !fits && !self.reuse(schema, n) {
            self.fresh(vec![schema.clone()], n.max(CHUNK))?;
            self.len = 0;
        }
        let Some(held) = &mut self.held else {
            anyhow::bail!("change assembler: no chunk for a change");
        };
        // SAFETY: `len..len + n` is within the allocation (checked or made above) and
        // initialized (chunks are zeroed when made); it is past what is read (see
        // `Chunk`), and `&mut self` makes this the only reference to it.
        let space =
            unsafe { std::slice::from_raw_parts_mut(held.chunk().ptr.as_ptr().add(self.len), n) };
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
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), chunk.ptr.as_ptr().add(at), bytes.len());
        }
        true
    }

    /// The pending change's bytes, which are written: the next change starts after them.
    pub(super) fn take(&mut self) -> Option<Written<S>> {
        let held = self.held.as_mut()?;
        let written = Written::new(held.reference(), self.start, self.len - self.start);
        self.start = self.len;
        Some(written)
    }
}

fn too_many() -> anyhow::Error {
    anyhow::anyhow!("more than 255 log schemas within one change")
}
