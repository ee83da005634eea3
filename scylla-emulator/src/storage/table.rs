//! The data of one table: partitions in token order, rows in clustering order, cells with
//! last-write-wins reconciliation, and the read views.
//!
//! Tombstones are applied eagerly: data a tombstone shadows is removed when the tombstone
//! arrives, and data arriving under an existing tombstone is never stored, so the stored
//! state holds only data that can still be live (TTL expiry is checked on read: an expired
//! cell stays stored, dead, so that older writes cannot resurrect under it).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;

use crate::types::CqlType;
use crate::types::value::Value;

use super::clustering::{ClusteringComparator, ClusteringRange, Position};
use super::mutation::{
    CellUpdate, CellVersion, ColumnId, ElementUpdate, Now, PartitionMutation, RowUpdate, Timestamp,
    compare_versions,
};

/// "No timestamp": no tombstone, no marker.
const NO_TS: Timestamp = Timestamp::MIN;

/// A partition with more rows than this keeps them in a B-tree instead of a sorted vector.
/// Most rows in one chunk of a partition's [`Rows`].
const CHUNK_ROWS: usize = 64;

/// Errors of the storage layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StorageError {
    /// The table has more clustering columns than the storage supports.
    #[error("too many clustering columns ({0}, at most 32 supported)")]
    TooManyClusteringColumns(usize),
}

/// Where a partition scan starts, in `(token, serialized key)` order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PartitionStart {
    /// The first partition.
    First,
    /// The first partition whose token is `>=` this one.
    TokenAtLeast(i64),
    /// The first partition whose token is `>` this one.
    TokenAbove(i64),
    /// The partition with this key, or the next one.
    AtKey(i64, Bytes),
    /// The partition after the one with this key (paging).
    AfterKey(i64, Bytes),
}

/// The data of one table, behind its own lock (never held across an `.await`: the executor
/// has none).
#[derive(Debug)]
pub(crate) struct TableStore {
    /// The rows.
    pub(crate) data: RwLock<TableData>,
}

/// The stored data of one table. Not synchronised: the executor keeps it behind a lock.
#[derive(Debug)]
pub(crate) struct TableData {
    comparator: ClusteringComparator,
    partitions: BTreeMap<(i64, Bytes), Partition>,
}

#[derive(Debug)]
struct Partition {
    values: Arc<[Value]>,
    tombstone: Timestamp,
    static_row: Option<Box<Row>>,
    rows: Rows,
    range_tombstones: Box<[StoredRangeTombstone]>,
}

#[derive(Debug, Clone)]
struct StoredRangeTombstone {
    start: Position,
    end: Position,
    ts: Timestamp,
}

/// The clustering rows of a partition, sorted: a sorted vector of chunks of at most
/// [`CHUNK_ROWS`] rows. Cheaper in memory than a B-tree (whose nodes ascending inserts leave
/// half full): rows appended after the last one — a CDC log stream, ascending keys — fill
/// chunks completely, and an insert into a full chunk elsewhere splits it in two.
#[derive(Debug, Default)]
struct Rows {
    chunks: Vec<Vec<(Position, Row)>>,
    len: usize,
}

#[derive(Debug)]
struct Row {
    marker: Marker,
    deletion: Timestamp,
    cells: Box<[Cell]>,
}

impl Default for Row {
    fn default() -> Self {
        Row {
            marker: Marker::default(),
            deletion: NO_TS,
            cells: Box::new([]),
        }
    }
}

/// A row marker; `ts == NO_TS` when absent.
#[derive(Debug, Clone, Copy)]
struct Marker {
    ts: Timestamp,
    expiry: u32,
    ttl: u32,
}

impl Default for Marker {
    fn default() -> Self {
        Marker {
            ts: NO_TS,
            expiry: 0,
            ttl: 0,
        }
    }
}

#[derive(Debug)]
struct Cell {
    column: ColumnId,
    state: CellState,
}

#[derive(Debug)]
enum CellState {
    Atomic(Atomic),
    Counter { ts: Timestamp, sum: i64 },
    Collection(Box<Collection>),
}

/// An atomic cell or collection element: value `None` is a tombstone; `expiry` 0 = no TTL.
#[derive(Debug, Clone)]
struct Atomic {
    ts: Timestamp,
    expiry: u32,
    ttl: u32,
    value: Option<Value>,
}

#[derive(Debug)]
struct Collection {
    tombstone: Timestamp,
    elements: Vec<(Value, Atomic)>,
}

fn expiry_of(ttl: Option<u32>, now: Now) -> (u32, u32) {
    match ttl {
        Some(t) if t > 0 => {
            let e = now
                .0
                .saturating_add(i64::from(t))
                .clamp(1, i64::from(u32::MAX));
            (e as u32, t)
        }
        _ => (0, 0),
    }
}

fn is_live_at(expiry: u32, now: Now) -> bool {
    expiry == 0 || now.0 < i64::from(expiry)
}

fn remaining_ttl(expiry: u32, now: Now) -> Option<u32> {
    (expiry != 0).then(|| u32::try_from(i64::from(expiry) - now.0).unwrap_or(0))
}

impl Atomic {
    /// The cell a write at `ts` of `value` (`None` = a tombstone) with `ttl` leaves.
    #[inline]
    fn written(ts: Timestamp, ttl: Option<u32>, value: &Option<Value>, now: Now) -> Atomic {
        let (expiry, ttl) = if value.is_some() {
            expiry_of(ttl, now)
        } else {
            (0, 0)
        };
        Atomic {
            ts,
            expiry,
            ttl,
            value: value.clone(),
        }
    }

    fn version(&self) -> CellVersion<'_> {
        CellVersion {
            ts: self.ts,
            value: self.value.as_ref(),
            expiry: (self.expiry != 0).then_some(u64::from(self.expiry)),
            ttl: (self.expiry != 0).then_some(self.ttl),
        }
    }

    fn live_value(&self, now: Now) -> Option<&Value> {
        self.value.as_ref().filter(|_| is_live_at(self.expiry, now))
    }
}

impl Marker {
    fn is_live(&self, now: Now) -> bool {
        self.ts != NO_TS && is_live_at(self.expiry, now)
    }

    fn wins_over(&self, other: &Marker) -> bool {
        let key = |m: &Marker| (m.ts, m.expiry != 0, m.expiry, std::cmp::Reverse(m.ttl));
        key(self) > key(other)
    }
}

impl Collection {
    /// Merges a collection write: its tombstone (when newer than the shadowing `shadow` and
    /// this collection's), then each element newer than both tombstones that wins over the
    /// element of its key.
    #[inline]
    fn merge(
        &mut self,
        tombstone: Option<Timestamp>,
        elements: &[ElementUpdate],
        shadow: Timestamp,
        now: Now,
    ) {
        if let Some(t) = tombstone
            && t > shadow
            && t > self.tombstone
        {
            self.tombstone = t;
            self.elements.retain(|(_, e)| e.ts > t);
        }
        let eff = shadow.max(self.tombstone);
        for e in elements {
            if e.ts <= eff {
                continue;
            }
            let new = Atomic::written(e.ts, e.ttl, &e.value, now);
            match self.elements.binary_search_by(|(k, _)| k.cmp(&e.key)) {
                Ok(j) => {
                    if compare_versions(&new.version(), &self.elements[j].1.version()).is_gt() {
                        self.elements[j].1 = new;
                    }
                }
                Err(j) => self.elements.insert(j, (e.key.clone(), new)),
            }
        }
    }

    fn purge(&mut self, t: Timestamp) {
        if self.tombstone <= t {
            self.tombstone = NO_TS;
        }
        self.elements.retain(|(_, e)| e.ts > t);
    }

    fn is_empty(&self) -> bool {
        self.tombstone == NO_TS && self.elements.is_empty()
    }
}

impl CellState {
    /// Removes what a tombstone at `t` shadows; `false` when nothing is left.
    fn purge(&mut self, t: Timestamp) -> bool {
        match self {
            CellState::Atomic(a) => a.ts > t,
            CellState::Counter { ts, .. } => *ts > t,
            CellState::Collection(c) => {
                c.purge(t);
                !c.is_empty()
            }
        }
    }

    fn max_ts(&self) -> Timestamp {
        match self {
            CellState::Atomic(a) => a.ts,
            CellState::Counter { ts, .. } => *ts,
            CellState::Collection(c) => c
                .elements
                .iter()
                .map(|(_, e)| e.ts)
                .fold(c.tombstone, Timestamp::max),
        }
    }
}

impl Row {
    fn is_empty(&self) -> bool {
        self.marker.ts == NO_TS && self.deletion == NO_TS && self.cells.is_empty()
    }

    /// Removes what a tombstone at `t` shadows.
    fn purge(&mut self, t: Timestamp) {
        if self.marker.ts <= t {
            self.marker = Marker::default();
        }
        if self.deletion <= t {
            self.deletion = NO_TS;
        }
        if self.cells.iter().all(|c| {
            let ts = c.state.max_ts();
            ts > t && !matches!(&c.state, CellState::Collection(col) if col.tombstone <= t && col.tombstone != NO_TS)
        }) {
            return;
        }
        let mut cells = std::mem::take(&mut self.cells).into_vec();
        cells.retain_mut(|c| c.state.purge(t));
        self.cells = cells.into_boxed_slice();
    }

    fn is_live(&self, now: Now) -> bool {
        self.marker.is_live(now) || self.cells.iter().any(|c| cell_view(c, now).is_some())
    }

    fn apply(&mut self, u: &RowUpdate, shadow: Timestamp, now: Now) {
        if let Some(d) = u.deletion
            && d > shadow
            && d > self.deletion
        {
            self.purge(d);
            self.deletion = d;
        }
        let shadow = shadow.max(self.deletion);
        if let Some(m) = u.marker
            && m.ts > shadow
        {
            let (expiry, ttl) = expiry_of(m.ttl, now);
            let candidate = Marker {
                ts: m.ts,
                expiry,
                ttl,
            };
            if candidate.wins_over(&self.marker) {
                self.marker = candidate;
            }
        }
        if u.cells.is_empty() {
            return;
        }
        let mut cells = std::mem::take(&mut self.cells).into_vec();
        cells.reserve_exact(u.cells.len());
        for (column, update) in &u.cells {
            apply_cell(&mut cells, *column, update, shadow, now);
        }
        self.cells = cells.into_boxed_slice();
    }
}

fn apply_cell(
    cells: &mut Vec<Cell>,
    column: ColumnId,
    update: &CellUpdate,
    shadow: Timestamp,
    now: Now,
) {
    let found = cells.binary_search_by_key(&column, |c| c.column);
    match update {
        CellUpdate::Atomic { ts, ttl, value } => {
            if *ts <= shadow {
                return;
            }
            apply_atomic(cells, found, column, Atomic::written(*ts, *ttl, value, now));
        }
        CellUpdate::CounterDelta { ts, delta } => {
            if *ts <= shadow {
                return;
            }
            apply_counter_delta(cells, found, column, *ts, *delta);
        }
        CellUpdate::Collection {
            tombstone,
            elements,
        } => {
            let i = collection_slot(cells, found, column);
            let CellState::Collection(coll) = &mut cells[i].state else {
                return;
            };
            coll.merge(*tombstone, elements, shadow, now);
            if coll.is_empty() {
                cells.remove(i);
            }
        }
    }
}

/// Writes the atomic cell `new` of `column` (at `found`, its place in `cells`) when it wins
/// over the cell there.
#[inline]
fn apply_atomic(cells: &mut Vec<Cell>, found: Result<usize, usize>, column: ColumnId, new: Atomic) {
    match found {
        Ok(i) => {
            let slot = &mut cells[i].state;
            let replace = match slot {
                CellState::Atomic(old) => compare_versions(&new.version(), &old.version()).is_gt(),
                // A counter deletion wins whatever the timestamps.
                CellState::Counter { ts: old_ts, .. } => new.value.is_none() || new.ts > *old_ts,
                CellState::Collection(c) => new.ts > c.tombstone,
            };
            if replace {
                *slot = CellState::Atomic(new);
            }
        }
        Err(i) => cells.insert(
            i,
            Cell {
                column,
                state: CellState::Atomic(new),
            },
        ),
    }
}

/// Adds `delta` (written at `ts`) to the counter of `column` (at `found`, its place in
/// `cells`); a deleted counter stays deleted.
#[inline]
fn apply_counter_delta(
    cells: &mut Vec<Cell>,
    found: Result<usize, usize>,
    column: ColumnId,
    ts: Timestamp,
    delta: i64,
) {
    match found {
        Ok(i) => match &mut cells[i].state {
            CellState::Counter { ts: old_ts, sum } => {
                *old_ts = (*old_ts).max(ts);
                *sum = sum.wrapping_add(delta);
            }
            CellState::Atomic(a) if a.value.is_none() => {}
            other => *other = CellState::Counter { ts, sum: delta },
        },
        Err(i) => cells.insert(
            i,
            Cell {
                column,
                state: CellState::Counter { ts, sum: delta },
            },
        ),
    }
}

/// The index in `cells` of the collection of `column` (at `found`, its place in `cells`),
/// made empty first when there is none (or the cell there is not a collection).
#[inline]
fn collection_slot(cells: &mut Vec<Cell>, found: Result<usize, usize>, column: ColumnId) -> usize {
    let empty = || {
        CellState::Collection(Box::new(Collection {
            tombstone: NO_TS,
            elements: Vec::new(),
        }))
    };
    match found {
        Ok(i) => {
            if !matches!(cells[i].state, CellState::Collection(_)) {
                cells[i].state = empty();
            }
            i
        }
        Err(i) => {
            cells.insert(
                i,
                Cell {
                    column,
                    state: empty(),
                },
            );
            i
        }
    }
}

impl Rows {
    fn len(&self) -> usize {
        self.len
    }

    /// Index of the chunk where `pos` is or would be: the first chunk whose last key is
    /// `>= pos`, or the last chunk.
    fn chunk_of(&self, pos: &Position) -> usize {
        let i = self
            .chunks
            .partition_point(|c| c.last().is_some_and(|(k, _)| k < pos));
        i.min(self.chunks.len().saturating_sub(1))
    }

    fn get(&self, pos: &Position) -> Option<&Row> {
        let chunk = self.chunks.get(self.chunk_of(pos))?;
        chunk
            .binary_search_by(|(k, _)| k.cmp(pos))
            .ok()
            .map(|i| &chunk[i].1)
    }

    fn get_or_insert(&mut self, pos: Position) -> &mut Row {
        if self.chunks.is_empty() {
            self.chunks.push(Vec::new());
        }
        let mut c = self.chunk_of(&pos);
        let mut i = match self.chunks[c].binary_search_by(|(k, _)| k.cmp(&pos)) {
            Ok(i) => return &mut self.chunks[c][i].1,
            Err(i) => i,
        };
        if self.chunks[c].len() >= CHUNK_ROWS {
            let last_chunk = c + 1 == self.chunks.len();
            if last_chunk && i == self.chunks[c].len() {
                // Appending after every row (time-ordered logs, ascending keys): start a new
                // chunk, leaving this one full.
                self.chunks.push(Vec::with_capacity(CHUNK_ROWS));
                c += 1;
                i = 0;
            } else {
                let upper = self.chunks[c].split_off(CHUNK_ROWS / 2);
                self.chunks.insert(c + 1, upper);
                if i > CHUNK_ROWS / 2 {
                    c += 1;
                    i -= CHUNK_ROWS / 2;
                }
            }
        }
        let chunk = &mut self.chunks[c];
        if chunk.len() == chunk.capacity() && chunk.capacity() < CHUNK_ROWS {
            // Small partitions grow one row at a time: no spare capacity kept per partition.
            chunk.reserve_exact(1);
        }
        chunk.insert(i, (pos, Row::default()));
        self.len += 1;
        &mut chunk[i].1
    }

    fn remove(&mut self, pos: &Position) {
        let c = self.chunk_of(pos);
        let Some(chunk) = self.chunks.get_mut(c) else {
            return;
        };
        if let Ok(i) = chunk.binary_search_by(|(k, _)| k.cmp(pos)) {
            chunk.remove(i);
            self.len -= 1;
            if chunk.is_empty() {
                self.chunks.remove(c);
            }
        }
    }

    /// `(chunk, offset)` of the first row whose key is `>= pos`.
    fn lower_bound(&self, pos: &Position) -> (usize, usize) {
        let c = self
            .chunks
            .partition_point(|ch| ch.last().is_some_and(|(k, _)| k < pos));
        match self.chunks.get(c) {
            Some(chunk) => (c, chunk.partition_point(|(k, _)| k < pos)),
            None => (c, 0),
        }
    }

    /// Rows with `start <= key < end` (positions are never equal to stored keys except `At`
    /// positions, which are treated as inclusive starts / exclusive ends).
    fn range(&self, start: &Position, end: &Position) -> RawRows<'_> {
        if start >= end {
            return RawRows::empty();
        }
        let (sc, so) = self.lower_bound(start);
        let (ec, eo) = self.lower_bound(end);
        let mut slices = Vec::new();
        for c in sc..=ec.min(self.chunks.len().saturating_sub(1)) {
            let Some(chunk) = self.chunks.get(c) else {
                break;
            };
            let from = if c == sc { so } else { 0 };
            let to = if c == ec { eo } else { chunk.len() };
            if from < to {
                slices.push(Ahead(chunk[from..to].iter()));
            }
        }
        RawRows(slices.into_iter().flatten())
    }

    /// Applies a tombstone at `t` to the rows in `[start, end)` and drops rows left empty.
    fn purge_range(&mut self, start: &Position, end: &Position, t: Timestamp) {
        if start >= end {
            return;
        }
        let (sc, so) = self.lower_bound(start);
        let (ec, eo) = self.lower_bound(end);
        for c in sc..=ec.min(self.chunks.len().saturating_sub(1)) {
            let Some(chunk) = self.chunks.get_mut(c) else {
                break;
            };
            let from = if c == sc { so } else { 0 };
            let to = if c == ec { eo } else { chunk.len() };
            for (_, row) in chunk.get_mut(from..to).into_iter().flatten() {
                row.purge(t);
            }
        }
        self.retain_non_empty();
    }

    fn for_each_mut(&mut self, mut f: impl FnMut(&mut Row)) {
        self.chunks.iter_mut().flatten().for_each(|(_, r)| f(r));
    }

    fn retain_non_empty(&mut self) {
        for chunk in &mut self.chunks {
            chunk.retain(|(_, r)| !r.is_empty());
        }
        self.chunks.retain(|c| !c.is_empty());
        self.len = self.chunks.iter().map(Vec::len).sum();
    }

    fn iter(&self) -> RawRows<'_> {
        let slices: Vec<_> = self.chunks.iter().map(|c| Ahead(c.iter())).collect();
        RawRows(slices.into_iter().flatten())
    }
}

/// Stored rows of one range, in either direction.
struct RawRows<'a>(std::iter::Flatten<std::vec::IntoIter<Ahead<'a>>>);

/// The rows of a chunk, read forward with the memory of the rows just ahead requested from
/// the CPU before they are reached.
///
/// A row's clustering key, its cells and their out-of-line values (blobs, text) are separate
/// allocations, scattered over the heap when partitions were written interleaved (the CDC
/// log of many streams): serving a page of the log was dominated by waiting for those cache
/// misses one row after the other. Fetching the rows a few places ahead overlaps them.
struct Ahead<'a>(std::slice::Iter<'a, (Position, Row)>);

/// How many rows ahead a row's key and cells are fetched (its values at half the distance,
/// once its cells have arrived).
const FETCH_AHEAD: usize = 4;

impl<'a> Iterator for Ahead<'a> {
    type Item = &'a (Position, Row);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.0.as_slice();
        if let Some((key, row)) = rest.get(FETCH_AHEAD) {
            prefetch(key.values.as_ptr());
            prefetch(row.cells.as_ptr());
        }
        if let Some((_, row)) = rest.get(FETCH_AHEAD / 2) {
            for cell in row.cells.iter() {
                if let CellState::Atomic(Atomic { value: Some(v), .. }) = &cell.state {
                    match v {
                        Value::Blob(b) => prefetch(b.as_ptr()),
                        Value::Text(t) => prefetch(t.as_ptr()),
                        _ => {}
                    }
                }
            }
        }
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Ahead<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back()
    }
}

/// Asks the CPU to start loading the cache line at `p` into its caches. A hint: it reads
/// nothing the program sees and never faults, whatever `p` is (no-op off x86-64).
#[inline(always)]
#[allow(unsafe_code)] // one instruction that touches no memory the program sees
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 does not access memory in the language's sense: it cannot fault and
    // changes no value, so any pointer, even dangling, is fine (Intel SDM, PREFETCHh).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl RawRows<'_> {
    fn empty() -> Self {
        RawRows(Vec::new().into_iter().flatten())
    }
}

impl<'a> Iterator for RawRows<'a> {
    type Item = (&'a Position, &'a Row);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, r)| (k, r))
    }
}

impl DoubleEndedIterator for RawRows<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, r)| (k, r))
    }
}

impl Partition {
    fn new(values: Arc<[Value]>) -> Partition {
        Partition {
            values,
            tombstone: NO_TS,
            static_row: None,
            rows: Rows::default(),
            range_tombstones: Box::new([]),
        }
    }

    fn is_empty(&self) -> bool {
        self.tombstone == NO_TS
            && self.static_row.is_none()
            && self.rows.len() == 0
            && self.range_tombstones.is_empty()
    }

    /// The highest range tombstone covering a row position.
    fn range_shadow(&self, pos: &Position) -> Timestamp {
        self.range_tombstones
            .iter()
            .filter(|rt| rt.start < *pos && *pos < rt.end)
            .map(|rt| rt.ts)
            .fold(NO_TS, Timestamp::max)
    }

    fn apply(&mut self, cmp: &ClusteringComparator, m: &PartitionMutation, now: Now) {
        if let Some(t) = m.partition_tombstone
            && t > self.tombstone
        {
            self.tombstone = t;
            if let Some(s) = &mut self.static_row {
                s.purge(t);
                if s.is_empty() {
                    self.static_row = None;
                }
            }
            self.rows.for_each_mut(|r| r.purge(t));
            self.rows.retain_non_empty();
            if self.range_tombstones.iter().any(|rt| rt.ts <= t) {
                let kept: Vec<_> = self
                    .range_tombstones
                    .iter()
                    .filter(|rt| rt.ts > t)
                    .cloned()
                    .collect();
                self.range_tombstones = kept.into_boxed_slice();
            }
        }
        for rt in &m.range_tombstones {
            if rt.ts <= self.tombstone {
                continue;
            }
            let (start, end) =
                cmp.range_positions(&ClusteringRange::new(rt.start.clone(), rt.end.clone()));
            if start >= end {
                continue;
            }
            self.rows.purge_range(&start, &end, rt.ts);
            let mut list = std::mem::take(&mut self.range_tombstones).into_vec();
            match list.iter_mut().find(|x| x.start == start && x.end == end) {
                Some(x) => x.ts = x.ts.max(rt.ts),
                None => list.push(StoredRangeTombstone {
                    start,
                    end,
                    ts: rt.ts,
                }),
            }
            self.range_tombstones = list.into_boxed_slice();
        }
        if let Some(u) = &m.static_row {
            let row = self.static_row.get_or_insert_with(Box::default);
            row.apply(u, self.tombstone, now);
            if row.is_empty() {
                self.static_row = None;
            }
        }
        for (key, u) in &m.rows {
            let pos = cmp.key_position(key);
            let shadow = self.tombstone.max(self.range_shadow(&pos));
            let row = self.rows.get_or_insert(pos.clone());
            row.apply(u, shadow, now);
            if row.is_empty() {
                self.rows.remove(&pos);
            }
        }
    }

    fn drop_column(&mut self, column: ColumnId) {
        let strip = |r: &mut Row| {
            if r.cells.iter().any(|c| c.column == column) {
                let mut cells = std::mem::take(&mut r.cells).into_vec();
                cells.retain(|c| c.column != column);
                r.cells = cells.into_boxed_slice();
            }
        };
        if let Some(s) = &mut self.static_row {
            strip(s);
            if s.is_empty() {
                self.static_row = None;
            }
        }
        self.rows.for_each_mut(strip);
        self.rows.retain_non_empty();
    }
}

impl TableData {
    /// An empty table whose clustering columns are descending where `descending` says so
    /// (one entry per clustering column; empty for a table without clustering columns).
    ///
    /// The storage needs no other schema: columns are [`ColumnId`]s, values are typed by the
    /// caller, and static-row changes come separately in each mutation.
    pub(crate) fn new(descending: &[bool]) -> Result<TableData, StorageError> {
        let comparator = ClusteringComparator::new(descending)
            .ok_or(StorageError::TooManyClusteringColumns(descending.len()))?;
        Ok(TableData {
            comparator,
            partitions: BTreeMap::new(),
        })
    }

    /// The table's clustering order.
    pub(crate) fn comparator(&self) -> ClusteringComparator {
        self.comparator
    }

    /// Applies a mutation; TTLs expire `ttl` seconds after `now`.
    pub(crate) fn apply(&mut self, m: &PartitionMutation, now: Now) {
        if m.is_empty() {
            return;
        }
        let cmp = self.comparator;
        let key = (m.key.token, m.key.bytes.clone());
        let p = self
            .partitions
            .entry(key.clone())
            .or_insert_with(|| Partition::new(m.key.values.clone()));
        p.apply(&cmp, m, now);
        if p.is_empty() {
            self.partitions.remove(&key);
        }
    }

    /// A stored partition (live or not), for reads and read-before-write.
    pub(crate) fn partition(&self, token: i64, key: &Bytes, now: Now) -> Option<PartitionView<'_>> {
        let k = (token, key.clone());
        self.partitions
            .get_key_value(&k)
            .map(|((token, bytes), p)| PartitionView {
                token: *token,
                bytes,
                p,
                cmp: self.comparator,
                now,
            })
    }

    /// Partitions with live data (a live static row or a live clustering row), in
    /// `(token, key)` order, from `start` (a materialized view's build reads them).
    pub(crate) fn partitions(
        &self,
        start: PartitionStart,
        now: Now,
    ) -> impl Iterator<Item = PartitionView<'_>> + '_ {
        self.all_partitions(start, now)
            .filter(PartitionView::has_live_data)
    }

    /// Every stored partition from `start`, in `(token, key)` order, also those holding only
    /// tombstones or expired data (a paged read counts their tombstones).
    pub(crate) fn all_partitions(
        &self,
        start: PartitionStart,
        now: Now,
    ) -> impl Iterator<Item = PartitionView<'_>> + '_ {
        let lower = match start {
            PartitionStart::First => Some(Bound::Unbounded),
            PartitionStart::TokenAtLeast(t) => Some(Bound::Included((t, Bytes::new()))),
            PartitionStart::TokenAbove(t) => {
                t.checked_add(1).map(|t| Bound::Included((t, Bytes::new())))
            }
            PartitionStart::AtKey(t, k) => Some(Bound::Included((t, k))),
            PartitionStart::AfterKey(t, k) => Some(Bound::Excluded((t, k))),
        };
        let cmp = self.comparator;
        lower
            .into_iter()
            .flat_map(move |lower| self.partitions.range((lower, Bound::Unbounded)))
            .map(move |((token, bytes), p)| PartitionView {
                token: *token,
                bytes,
                p,
                cmp,
                now,
            })
    }

    /// Removes every cell of a dropped column.
    pub(crate) fn drop_column(&mut self, column: ColumnId) {
        for p in self.partitions.values_mut() {
            p.drop_column(column);
        }
        self.partitions.retain(|_, p| !p.is_empty());
    }

    /// Removes one clustering row outright, with no tombstone left behind (a materialized
    /// view replacing the rows it derives from one base row: `exec::view`).
    pub(crate) fn remove_row(&mut self, token: i64, key: &Bytes, clustering: &[Value]) {
        let k = (token, key.clone());
        let Some(p) = self.partitions.get_mut(&k) else {
            return;
        };
        p.rows.remove(&self.comparator.at(clustering));
        if p.is_empty() {
            self.partitions.remove(&k);
        }
    }

    /// Removes all data.
    pub(crate) fn truncate(&mut self) {
        self.partitions.clear();
    }

    /// Number of stored partitions (including ones holding only tombstones or expired data).
    #[cfg(test)]
    pub(crate) fn partition_count(&self) -> usize {
        self.partitions.len()
    }

    /// Number of stored clustering rows (including rows holding only tombstones or expired
    /// data).
    #[cfg(test)]
    pub(crate) fn row_count(&self) -> usize {
        self.partitions.values().map(|p| p.rows.len()).sum()
    }
}

/// A read view of one partition at a point in time: only live data is visible through it.
#[derive(Clone, Copy)]
pub(crate) struct PartitionView<'a> {
    token: i64,
    bytes: &'a Bytes,
    p: &'a Partition,
    cmp: ClusteringComparator,
    now: Now,
}

impl<'a> PartitionView<'a> {
    /// The partition's token.
    pub(crate) fn token(&self) -> i64 {
        self.token
    }

    /// The serialized partition key.
    pub(crate) fn key_bytes(&self) -> &'a Bytes {
        self.bytes
    }

    /// The partition-key values.
    pub(crate) fn key_values(&self) -> &'a [Value] {
        &self.p.values
    }

    /// The partition tombstone's timestamp, if any.
    pub(crate) fn tombstone(&self) -> Option<Timestamp> {
        (self.p.tombstone != NO_TS).then_some(self.p.tombstone)
    }

    /// The static row, if it has a live cell.
    pub(crate) fn static_row(&self) -> Option<RowView<'a>> {
        let row = self.p.static_row.as_deref()?;
        let view = RowView {
            key: None,
            row,
            now: self.now,
        };
        view.has_live_cell().then_some(view)
    }

    /// The live row with this clustering key.
    pub(crate) fn row(&self, key: &[Value]) -> Option<RowView<'a>> {
        let pos = self.cmp.at(key);
        let row = self.p.rows.get(&pos)?;
        row.is_live(self.now)
            .then_some(RowView {
                key: None,
                row,
                now: self.now,
            })
            .map(|mut v| {
                v.key = self.p.rows_key(&pos);
                v
            })
    }

    /// Whether the partition has a live static row or a live clustering row.
    pub(crate) fn has_live_data(&self) -> bool {
        self.static_row().is_some() || self.p.rows.iter().any(|(_, r)| r.is_live(self.now))
    }

    /// Live rows in the given slices (sorted and merged first; none = no rows), in clustering
    /// order or `reversed`, and only those strictly after `after` in that direction (paging).
    pub(crate) fn rows(
        &self,
        slices: &[ClusteringRange],
        reversed: bool,
        after: Option<&[Value]>,
    ) -> impl Iterator<Item = RowView<'a>> + use<'a> {
        let now = self.now;
        self.raw_rows(slices, reversed, after)
            .filter(move |(_, r)| r.is_live(now))
            .map(move |(k, row)| RowView {
                key: Some(&k.values),
                row,
                now,
            })
    }

    /// The rows of [`PartitionView::rows`] as a paged read meets them: the live ones, and
    /// the dead ones that Scylla's read still carries as tombstones (see [`ScanRow`]); rows
    /// whose dead data a read would purge are skipped. `gc_before` is `now` minus the
    /// table's `gc_grace_seconds`.
    pub(crate) fn scan_rows(
        &self,
        slices: &[ClusteringRange],
        reversed: bool,
        after: Option<&[Value]>,
        gc_before: i64,
    ) -> impl Iterator<Item = ScanRow<'a>> + use<'a> {
        let now = self.now;
        self.raw_rows(slices, reversed, after)
            .filter_map(move |(k, row)| {
                if row.is_live(now) {
                    Some(ScanRow::Live(RowView {
                        key: Some(&k.values),
                        row,
                        now,
                    }))
                } else if row.is_tombstone(gc_before) {
                    Some(ScanRow::Dead(&k.values[..]))
                } else {
                    None
                }
            })
    }

    /// Every stored row in the slices, live or not, in read order, strictly after `after`.
    fn raw_rows(
        &self,
        slices: &[ClusteringRange],
        reversed: bool,
        after: Option<&[Value]>,
    ) -> impl Iterator<Item = (&'a Position, &'a Row)> + use<'a> {
        let mut ranges = self.cmp.normalize(slices);
        if let Some(after) = after {
            let values: Arc<[Value]> = Arc::from(after);
            for r in &mut ranges {
                if reversed {
                    let cut = self.cmp.before(values.clone());
                    if cut < r.1 {
                        r.1 = cut;
                    }
                } else {
                    let cut = self.cmp.after(values.clone());
                    if cut > r.0 {
                        r.0 = cut;
                    }
                }
            }
            ranges.retain(|(s, e)| s < e);
        }
        if reversed {
            ranges.reverse();
        }
        let p = self.p;
        ranges.into_iter().flat_map(move |(s, e)| {
            let raw = p.rows.range(&s, &e);
            let it: Box<dyn Iterator<Item = (&'a Position, &'a Row)> + 'a> = if reversed {
                Box::new(raw.rev())
            } else {
                Box::new(raw)
            };
            it
        })
    }

    /// Every live row, in clustering order.
    #[cfg(test)]
    pub(crate) fn all_rows(&self) -> impl Iterator<Item = RowView<'a>> + use<'a> {
        self.rows(&[ClusteringRange::full()], false, None)
    }
}

impl Partition {
    fn rows_key(&self, pos: &Position) -> Option<&Arc<[Value]>> {
        let chunk = self.rows.chunks.get(self.rows.chunk_of(pos))?;
        chunk
            .binary_search_by(|(k, _)| k.cmp(pos))
            .ok()
            .map(|i| &chunk[i].0.values)
    }
}

/// A clustering row as a paged read meets it ([`PartitionView::scan_rows`]).
#[derive(Clone, Copy)]
pub(crate) enum ScanRow<'a> {
    /// A row with live data.
    Live(RowView<'a>),
    /// A row without live data that a read still carries as a tombstone (its clustering
    /// key): Scylla's `query_result_builder` counts it against `query_tombstone_page_limit`
    /// (`mutation/mutation_partition.cc`).
    Dead(&'a [Value]),
}

/// Whether expired data written `ttl` seconds before `expiry` is still carried by a read as
/// a tombstone: an expired cell or marker becomes a tombstone whose deletion time is its
/// write time, `expiry - ttl`, purged once that is before `gc_before`
/// (`atomic_cell::make_dead` in `compact_and_expire`, `mutation/mutation_partition.cc`).
fn expired_is_tombstone(expiry: u32, ttl: u32, gc_before: i64) -> bool {
    expiry != 0 && i64::from(expiry) - i64::from(ttl) >= gc_before
}

impl Atomic {
    /// Whether this dead (deleted or expired) cell is still a tombstone to a read.
    fn dead_is_tombstone(&self, gc_before: i64) -> bool {
        self.value.is_none() || expired_is_tombstone(self.expiry, self.ttl, gc_before)
    }
}

impl Row {
    /// Whether this row, without live data, is still a tombstone to a read at a time whose
    /// `gc_before` is given: a row tombstone, a cell or collection tombstone, or data that
    /// expired (TTL) but was written no earlier than `gc_before`. Deletions count whatever
    /// their age: the storage keeps no deletion time (as if within `gc_grace_seconds`).
    fn is_tombstone(&self, gc_before: i64) -> bool {
        if self.deletion != NO_TS {
            return true;
        }
        let m = &self.marker;
        if m.ts != NO_TS && expired_is_tombstone(m.expiry, m.ttl, gc_before) {
            return true;
        }
        self.cells.iter().any(|c| match &c.state {
            CellState::Atomic(a) => a.dead_is_tombstone(gc_before),
            CellState::Counter { .. } => false,
            CellState::Collection(coll) => {
                coll.tombstone != NO_TS
                    || coll
                        .elements
                        .iter()
                        .any(|(_, e)| e.dead_is_tombstone(gc_before))
            }
        })
    }
}

/// A read view of one live row (or the static row) at a point in time.
#[derive(Clone, Copy)]
pub(crate) struct RowView<'a> {
    key: Option<&'a Arc<[Value]>>,
    row: &'a Row,
    now: Now,
}

/// The live row marker of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MarkerView {
    /// Write timestamp.
    pub ts: Timestamp,
    /// Remaining TTL in seconds, if the marker expires.
    pub ttl: Option<u32>,
}

impl<'a> RowView<'a> {
    /// The clustering key (empty for the static row and for tables without clustering
    /// columns).
    pub(crate) fn key(&self) -> &'a [Value] {
        self.key.map_or(&[], |k| &k[..])
    }

    /// The clustering key as a shareable [`ClusteringKey`](super::ClusteringKey).
    #[cfg(test)]
    pub(crate) fn clustering_key(&self) -> super::ClusteringKey {
        use super::ClusteringKey;
        self.key
            .map_or_else(ClusteringKey::empty, |k| ClusteringKey(k.clone()))
    }

    /// The live row marker.
    pub(crate) fn marker(&self) -> Option<MarkerView> {
        let m = &self.row.marker;
        m.is_live(self.now).then(|| MarkerView {
            ts: m.ts,
            ttl: remaining_ttl(m.expiry, self.now),
        })
    }

    /// The row tombstone's timestamp, if any.
    #[cfg(test)]
    pub(crate) fn deletion(&self) -> Option<Timestamp> {
        (self.row.deletion != NO_TS).then_some(self.row.deletion)
    }

    /// The live cell of a column (a collection with no live element is no cell).
    pub(crate) fn cell(&self, column: ColumnId) -> Option<CellView<'a>> {
        let i = self
            .row
            .cells
            .binary_search_by_key(&column, |c| c.column)
            .ok()?;
        cell_view(self.row.cells.get(i)?, self.now)
    }

    /// Like [`RowView::cell`], for columns asked for in ascending id order: `cursor` (0 for
    /// a row's first column) remembers where the last one was found, so a row's columns are
    /// found in one pass over its cells instead of a binary search each. Any order is
    /// answered correctly; a column below the cursor falls back to the binary search.
    #[inline]
    pub(crate) fn cell_from(&self, column: ColumnId, cursor: &mut usize) -> Option<CellView<'a>> {
        let cells = &self.row.cells;
        let mut i = *cursor;
        // Every cell before the cursor is below the last column found; a column not above
        // that one is looked up anew.
        if i > 0 && cells.get(i - 1).is_none_or(|c| c.column >= column) {
            return self.cell(column);
        }
        while let Some(c) = cells.get(i) {
            if c.column >= column {
                break;
            }
            i += 1;
        }
        *cursor = i;
        let c = cells.get(i).filter(|c| c.column == column)?;
        *cursor = i + 1;
        cell_view(c, self.now)
    }

    /// Every live cell, by column id.
    pub(crate) fn cells(&self) -> impl Iterator<Item = (ColumnId, CellView<'a>)> + use<'a> {
        let now = self.now;
        self.row
            .cells
            .iter()
            .filter_map(move |c| cell_view(c, now).map(|v| (c.column, v)))
    }

    fn has_live_cell(&self) -> bool {
        self.cells().next().is_some()
    }
}

fn cell_view(c: &Cell, now: Now) -> Option<CellView<'_>> {
    match &c.state {
        CellState::Atomic(a) => a.live_value(now).map(|value| CellView::Atomic {
            value,
            ts: a.ts,
            ttl: remaining_ttl(a.expiry, now),
        }),
        CellState::Counter { ts, sum } => Some(CellView::Counter {
            value: *sum,
            ts: *ts,
        }),
        CellState::Collection(coll) => {
            let view = CollectionView {
                elements: &coll.elements,
                now,
            };
            view.iter()
                .next()
                .is_some()
                .then_some(CellView::Collection(view))
        }
    }
}

/// A live cell.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CellView<'a> {
    /// An atomic cell.
    Atomic {
        /// The value.
        value: &'a Value,
        /// Write timestamp (`writetime()`).
        ts: Timestamp,
        /// Remaining TTL in seconds (`ttl()`), if the cell expires.
        ttl: Option<u32>,
    },
    /// A counter.
    Counter {
        /// The counter's value.
        value: i64,
        /// The latest update's timestamp.
        ts: Timestamp,
    },
    /// A non-frozen collection or UDT with at least one live element.
    Collection(CollectionView<'a>),
}

impl CellView<'_> {
    /// The cell's value as a column of type `typ` reads it: a counter as `bigint`, a
    /// collection assembled from its live elements (see [`CollectionView::to_value`]).
    pub(crate) fn to_value(self, typ: &CqlType) -> Option<Value> {
        match self {
            CellView::Atomic { value, .. } => Some(value.clone()),
            CellView::Counter { value, .. } => Some(Value::Bigint(value)),
            CellView::Collection(c) => c.to_value(typ),
        }
    }

    /// The write timestamp of an atomic cell or counter (`None` for collections: see their
    /// elements).
    pub(crate) fn write_time(&self) -> Option<Timestamp> {
        match self {
            CellView::Atomic { ts, .. } | CellView::Counter { ts, .. } => Some(*ts),
            CellView::Collection(_) => None,
        }
    }
}

/// The live elements of a non-frozen collection or UDT, in key order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CollectionView<'a> {
    elements: &'a [(Value, Atomic)],
    now: Now,
}

/// One live element of a collection.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ElementView<'a> {
    /// The key (list timeuuid, set element, map key, UDT field index as `smallint`).
    pub key: &'a Value,
    /// The value ([`Value::Empty`] for set elements).
    pub value: &'a Value,
    /// Write timestamp.
    pub ts: Timestamp,
    /// Remaining TTL in seconds, if the element expires.
    pub ttl: Option<u32>,
}

impl<'a> CollectionView<'a> {
    /// The live elements, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = ElementView<'a>> + use<'a> {
        let now = self.now;
        self.elements.iter().filter_map(move |(k, a)| {
            a.live_value(now).map(|value| ElementView {
                key: k,
                value,
                ts: a.ts,
                ttl: remaining_ttl(a.expiry, now),
            })
        })
    }

    /// The collection as a value of `typ` (frozen or not): a list of the values, a set of
    /// the keys, a map, or a UDT with the fields at their indexes (others null). `None` when
    /// `typ` is not a collection or UDT, or nothing is live.
    pub(crate) fn to_value(self, typ: &CqlType) -> Option<Value> {
        let mut it = self.iter().peekable();
        it.peek()?;
        match typ {
            CqlType::List { .. } => Some(Value::List(it.map(|e| e.value.clone()).collect())),
            CqlType::Set { .. } => Some(Value::Set(it.map(|e| e.key.clone()).collect())),
            CqlType::Map { .. } => Some(Value::Map(
                it.map(|e| (e.key.clone(), e.value.clone())).collect(),
            )),
            CqlType::Udt { def, .. } => {
                let mut fields = vec![None; def.fields.len()];
                for e in it {
                    let idx = e.key.as_smallint().and_then(|i| usize::try_from(i).ok());
                    if let Some(slot) = idx.and_then(|i| fields.get_mut(i)) {
                        *slot = Some(e.value.clone());
                    }
                }
                Some(Value::Udt(Arc::from(fields)))
            }
            _ => None,
        }
    }
}
