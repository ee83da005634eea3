//! The CDC log rows of one write: delta rows, pre-images and post-images (semantics §2, §3).
//!
//! [`log_mutation`] turns the [`PartitionMutation`] of one base partition (one statement, or
//! the statements of a batch on that partition, already merged) into the mutation of one log
//! partition: the stream of the [`LogContext`]. It follows the shape of Scylla's
//! `cdc/split.cc` and `cdc/log.cc`:
//!
//! - The mutation is cut into **groups**, one per timestamp (a collection tombstone counts at
//!   its timestamp + 1). Each group gets a fresh `cdc$time`, `cdc$batch_seq_no` from 0 and
//!   `cdc$end_of_batch = true` on its last row. A mutation with a single timestamp, a single
//!   TTL and a single kind of change is not split: it makes one group whose rows follow the
//!   mutation's own order (static row, then each clustering row in clustering order, range
//!   tombstones, partition tombstone). Otherwise each group lists, in this order, static
//!   updates, clustering-row inserts, clustering-row updates (each split further by TTL), row
//!   deletes, range deletes and the partition delete.
//! - Each change of a row becomes a [`RowDelta`] (one delta row, `cdc$operation` 1 or 2);
//!   deletions become rows with operation 3 to 8.
//! - Pre- and post-images come from an [`ImageState`]: the rows the write reads before it
//!   applies (the `before` view), updated by every delta in order, so that the images of a
//!   later group see the earlier groups of the same mutation.
//! - A `LogWriter` builds the log rows: the base partition key in every row, the log cells
//!   written at the group's timestamp with the table's CDC TTL, no row marker.
//!
//! The log table's columns are looked up by name (semantics §1.2), so the log [`TableDef`]
//! must have been derived from the base table's current schema.
//!
//! Details taken from Scylla's code rather than from the document's summary:
//!
//! - An unsplit batch (one timestamp, one TTL, only upserts) keeps clustering order even
//!   when it mixes inserts and updates; only split groups put inserts before updates.
//! - Images replay Scylla's state updates: a collection emptied by element deletions stays
//!   an empty (non-null) value, a touched non-frozen UDT is a UDT of null fields rather than
//!   null, a partition delete does not reset the static row's image, and an empty
//!   collection change (`m = m + {}`) in a batch with other changes nulls the column.
//! - The static row has a pre-image only when a static column the write read is non-null;
//!   the write reads every static column with post-images or `preimage: 'full'`, else only
//!   the ones it changes. (For clustering rows Scylla reads the columns the *first* row
//!   changes; the union over all rows is read here.)
//! - UNCONFIRMED: overlapping range deletes of one batch are logged as written (Scylla
//!   may first cut them into non-overlapping ranges).
//!
//! `cases` (tests only) holds the semantics document's worked examples as data (schema, CQL, expected
//! rows); `tests` runs them and property-tests images against the stored data.

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;

use crate::cdc::streams::StreamId;
use crate::cluster::partitioner::cdc_token;
use crate::schema::{CdcOptions, ColumnDef, ColumnKind, PreimageMode, TableDef};
use crate::storage::{
    CellUpdate, CellView, ClusteringComparator, ClusteringKey, ClusteringRange, ColumnId,
    ElementUpdate, Liveness, MAX_CLUSTERING_COLUMNS, Now, PartitionKey, PartitionMutation,
    PartitionView, RangeTombstone, RowUpdate, Timestamp,
};
use crate::types::value::Value;
use crate::types::{CqlType, UserType, timeuuid};

#[cfg(test)]
pub(crate) mod cases;
#[cfg(test)]
mod tests;

// The log table's column names, shared with its schema derivation.
pub(crate) use super::log_schema::{
    DELETED_ELEMENTS_PREFIX, DELETED_PREFIX, END_OF_BATCH, OPERATION, TTL,
};

/// The `cdc$operation` values the embedded cluster writes (semantics §2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    /// A pre-image row.
    PreImage = 0,
    /// An update of a row (also column deletes and every static-row change).
    Update = 1,
    /// An insert: a clustering-row change that includes a live row marker.
    Insert = 2,
    /// A row delete.
    RowDelete = 3,
    /// A partition delete.
    PartitionDelete = 4,
    /// Start of a range delete, bound included.
    RangeDeleteStartInclusive = 5,
    /// Start of a range delete, bound excluded.
    RangeDeleteStartExclusive = 6,
    /// End of a range delete, bound included.
    RangeDeleteEndInclusive = 7,
    /// End of a range delete, bound excluded.
    RangeDeleteEndExclusive = 8,
    /// A post-image row.
    PostImage = 9,
}

impl Operation {
    /// The `tinyint` value stored in `cdc$operation`.
    pub(crate) fn code(self) -> i8 {
        self as i8
    }
}

/// What [`log_mutation`] needs besides the write itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LogContext<'a> {
    /// The base table.
    pub(crate) base: &'a TableDef,
    /// Its log table (columns named as semantics §1.2).
    pub(crate) log: &'a TableDef,
    /// The base table's `cdc` options (pre/post-image, delta mode, TTL of log cells).
    pub(crate) options: &'a CdcOptions,
    /// The log partition: chosen by the caller from the base token and the write timestamp.
    pub(crate) stream: StreamId,
}

/// The log rows of one base-partition mutation (a batch's statements on that partition are
/// already merged into `mutation`), given the partition's current state (`before`, `None`
/// when the partition does not exist), read at `now` as the write sees it. Returns the
/// mutation of the log partition `ctx.stream`, or `None` when the change is empty and logs
/// nothing.
///
/// The caller applies the base mutation and the returned log mutation together, under the
/// base table's lock, so that `before` is exactly the state the write replaces. Nothing is
/// logged when `ctx.options.enabled` is false.
pub(crate) fn log_mutation(
    ctx: &LogContext<'_>,
    before: Option<PartitionView<'_>>,
    mutation: &PartitionMutation,
    now: Now,
) -> Option<PartitionMutation> {
    if !ctx.options.enabled {
        return None;
    }
    let columns = ResolvedColumns::new(ctx.base, ctx.log);
    log_mutation_resolved(ctx, &columns, before, mutation, now)
}

/// The log columns of a base table's columns, looked up once for many
/// [`log_mutation_resolved`] calls (one write of many mutations).
pub(crate) struct ResolvedColumns<'t>(LogColumns<'t>);

impl<'t> ResolvedColumns<'t> {
    /// Looks `base`'s log columns up in `log` (which must be derived from `base`'s current
    /// schema).
    pub(crate) fn new(base: &'t TableDef, log: &TableDef) -> Self {
        ResolvedColumns(LogColumns::resolve(base, log))
    }
}

/// [`log_mutation`] with the log columns resolved beforehand, from `ctx.base` and `ctx.log`.
pub(crate) fn log_mutation_resolved(
    ctx: &LogContext<'_>,
    columns: &ResolvedColumns<'_>,
    before: Option<PartitionView<'_>>,
    mutation: &PartitionMutation,
    now: Now,
) -> Option<PartitionMutation> {
    // `before` was read at `now`: nothing else here depends on the time of the write.
    let _ = now;
    if !ctx.options.enabled {
        return None;
    }
    let columns = &columns.0;
    let cmp = comparator(ctx.base)?;
    let view = MutationView::new(ctx.base, mutation, &cmp);
    let groups = match single_timestamp(&view) {
        Some(ts) => vec![unsplit_group(ctx.base, &view, ts)],
        None => split_groups(ctx.base, &view),
    };
    if groups.is_empty() {
        return None;
    }
    let images = ctx.options.preimage != PreimageMode::Off || ctx.options.postimage;
    let state = if images {
        ImageState::load(ctx, before, &view)
    } else {
        ImageState::default()
    };
    let mut processor = Processor {
        ctx,
        cmp,
        columns,
        state,
        out: LogWriter::new(ctx, columns, &mutation.key),
    };
    for group in &groups {
        processor.group(group);
    }
    processor.out.finish()
}

// ---------------------------------------------------------------------------------------------
// The mutation as CDC walks it
// ---------------------------------------------------------------------------------------------

/// The clustering order of the base table (always `Some`: columns beyond what the storage
/// supports are left out and compare ascending; such a table cannot hold data anyway).
fn comparator(base: &TableDef) -> Option<ClusteringComparator> {
    let mut desc: Vec<bool> = base
        .clustering_key()
        .map(|c| c.order == crate::schema::ClusteringOrder::Desc)
        .collect();
    desc.truncate(MAX_CLUSTERING_COLUMNS);
    ClusteringComparator::new(&desc)
}

/// One clustering row of the mutation.
struct RowRef<'m> {
    /// The clustering key.
    key: &'m ClusteringKey,
    /// The row marker; always `None` for compact-storage tables, which have none (example Y).
    marker: Option<Liveness>,
    /// The row tombstone's timestamp.
    deletion: Option<Timestamp>,
    /// The cell changes, by column id.
    cells: &'m [(ColumnId, CellUpdate)],
}

/// The parts of a mutation in the order Scylla's change visitor walks them.
struct MutationView<'m> {
    /// Static-row cells (empty when the static row is untouched).
    statics: &'m [(ColumnId, CellUpdate)],
    /// Non-empty clustering rows, in clustering order.
    rows: Vec<RowRef<'m>>,
    /// Range tombstones, by start bound in clustering order.
    ranges: Vec<&'m RangeTombstone>,
    /// The partition tombstone.
    partition: Option<Timestamp>,
}

impl<'m> MutationView<'m> {
    fn new(base: &TableDef, m: &'m PartitionMutation, cmp: &ClusteringComparator) -> Self {
        let statics = m.static_row.as_ref().map_or(&[][..], |r| &r.cells[..]);
        let mut rows: Vec<RowRef<'m>> = m
            .rows
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(key, r)| RowRef {
                key,
                marker: if base.compact_storage { None } else { r.marker },
                deletion: r.deletion,
                cells: &r.cells,
            })
            .filter(|r| r.marker.is_some() || r.deletion.is_some() || !r.cells.is_empty())
            .collect();
        rows.sort_by_cached_key(|r| cmp.key_position(r.key));
        // Scylla keeps range tombstones sorted by start bound. Overlapping range tombstones
        // of one batch are further split by Scylla's range_tombstone_list; here they stay as
        // written (UNCONFIRMED how Scylla logs overlapping deletes of one batch).
        let mut ranges: Vec<&'m RangeTombstone> = m.range_tombstones.iter().collect();
        ranges.sort_by_cached_key(|rt| cmp.range_positions(&range_of(rt)));
        MutationView {
            statics,
            rows,
            ranges,
            partition: m.partition_tombstone,
        }
    }
}

/// The clustering range a range tombstone covers.
fn range_of(rt: &RangeTombstone) -> ClusteringRange {
    ClusteringRange::new(rt.start.clone(), rt.end.clone())
}

/// The TTL of a live cell or marker as CDC sees it: 0 when it has none (dead cells too).
fn ttl_of(live: bool, ttl: Option<u32>) -> u32 {
    if live { ttl.unwrap_or(0) } else { 0 }
}

/// Scylla's `should_split`: `Some(ts)` when the mutation has a single timestamp, a single
/// TTL (dead cells count as TTL 0) and a single kind of change, so that it makes one group
/// in its own order; `None` when it must be split (or has no timestamp at all).
fn single_timestamp(m: &MutationView<'_>) -> Option<Timestamp> {
    let mut check = SplitCheck::default();
    if !m.statics.is_empty() {
        check.had_static = true;
        check.cells(m.statics);
    }
    for row in &m.rows {
        if row.marker.is_some() || !row.cells.is_empty() {
            if check.had_static {
                return None;
            }
            check.had_clustered = true;
            check.had_upsert = true;
            if let Some(marker) = row.marker {
                check.had_marker = true;
                check.visit(marker.ts, ttl_of(true, marker.ttl));
            }
            check.cells(row.cells);
        }
        if let Some(ts) = row.deletion {
            if check.had_static || check.had_upsert {
                return None;
            }
            check.had_clustered = true;
            check.visit(ts, 0);
        }
    }
    for rt in &m.ranges {
        if check.had_static || check.had_clustered {
            return None;
        }
        check.had_range = true;
        check.visit(rt.ts, 0);
    }
    // A partition tombstone is never logged unsplit: alone it has "no timestamp" for the
    // check, with anything else it is a second kind of change.
    if m.partition.is_some() && (check.had_range || check.had_static || check.had_clustered) {
        return None;
    }
    if check.split { None } else { check.ts }
}

/// State of [`single_timestamp`]'s walk.
#[derive(Default)]
struct SplitCheck {
    /// The timestamp seen so far.
    ts: Option<Timestamp>,
    /// The TTL seen so far (0: none).
    ttl: Option<u32>,
    /// A second timestamp, TTL or kind was seen.
    split: bool,
    /// The static row has cells.
    had_static: bool,
    /// A clustering row was upserted or deleted.
    had_clustered: bool,
    /// A clustering row was upserted.
    had_upsert: bool,
    /// A row marker was seen.
    had_marker: bool,
    /// A range tombstone was seen.
    had_range: bool,
}

impl SplitCheck {
    /// Records a change at `ts` with `ttl`.
    fn visit(&mut self, ts: Timestamp, ttl: u32) {
        if self.ts.is_some_and(|t| t != ts) || self.ttl.is_some_and(|t| t != ttl) {
            self.split = true;
        }
        self.ts = Some(ts);
        self.ttl = Some(ttl);
    }

    /// Records the changes of a row's cells, in column order.
    fn cells(&mut self, cells: &[(ColumnId, CellUpdate)]) {
        for (_, cell) in cells {
            match cell {
                CellUpdate::Atomic { ts, ttl, value } => {
                    self.visit(*ts, ttl_of(value.is_some(), *ttl));
                }
                CellUpdate::Collection {
                    tombstone,
                    elements,
                } => {
                    if let Some(t) = tombstone {
                        self.visit(t.saturating_add(1), 0);
                    }
                    for e in elements {
                        // An INSERT cannot add collection elements without clearing the
                        // collection first, so live elements after a row marker are split
                        // away from it (Scylla checks "a marker was seen before", in walk
                        // order, across rows).
                        if e.value.is_some() && self.had_marker {
                            self.split = true;
                        }
                        self.visit(e.ts, ttl_of(e.value.is_some(), e.ttl));
                    }
                }
                CellUpdate::CounterDelta { .. } => {}
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Groups: what one `cdc$time` logs
// ---------------------------------------------------------------------------------------------

/// The changes of one row that make one delta row.
struct RowDelta<'m> {
    /// The clustering row; `None` for the static row.
    key: Option<&'m ClusteringKey>,
    /// The row marker, when the change is an insert (operation 2).
    marker: Option<Liveness>,
    /// The cell changes.
    cells: Vec<CellDelta<'m>>,
}

/// The change of one cell within a [`RowDelta`].
enum CellDelta<'m> {
    /// An atomic cell: a value, or `None` for a tombstone.
    Atomic {
        /// The base column.
        column: ColumnId,
        /// The new value.
        value: Option<&'m Value>,
        /// The cell's TTL, if any.
        ttl: Option<u32>,
    },
    /// A non-frozen collection or UDT: a collection tombstone and/or element writes.
    Collection {
        /// The base column.
        column: ColumnId,
        /// Whether the collection was cleared first.
        tombstone: bool,
        /// Element writes and element tombstones.
        elements: Vec<&'m ElementUpdate>,
    },
}

impl CellDelta<'_> {
    /// The base column changed.
    fn column(&self) -> ColumnId {
        match self {
            CellDelta::Atomic { column, .. } | CellDelta::Collection { column, .. } => *column,
        }
    }
}

/// One delta operation of a group, in log order.
enum Op<'m> {
    /// An insert or update of a row (operation 1 or 2).
    Upsert(RowDelta<'m>),
    /// A row delete (operation 3).
    RowDelete(&'m ClusteringKey),
    /// A range delete (operations 5–8).
    RangeDelete(&'m RangeTombstone),
    /// A partition delete (operation 4).
    PartitionDelete,
}

/// The columns an image covers.
#[derive(Clone, Debug, PartialEq)]
enum Cols {
    /// Every column of the row's kind.
    All,
    /// These columns.
    Only(BTreeSet<ColumnId>),
}

impl Cols {
    /// Adds a column (nothing to do for [`Cols::All`]).
    fn add(&mut self, column: ColumnId) {
        if let Cols::Only(set) = self {
            set.insert(column);
        }
    }

    /// Whether the image shows `column`.
    fn contains(&self, column: ColumnId) -> bool {
        match self {
            Cols::All => true,
            Cols::Only(set) => set.contains(&column),
        }
    }
}

/// Everything logged under one `cdc$time`.
struct Group<'m> {
    /// The timestamp: the time of `cdc$time` and of every log cell.
    ts: Timestamp,
    /// Delta operations, in log order.
    ops: Vec<Op<'m>>,
    /// Static columns the group changes (`None`: the static row is untouched).
    static_cols: Option<Cols>,
    /// Clustering rows the group changes or deletes, in clustering order, with the columns
    /// a `preimage: true` image shows.
    rows: Vec<(ClusteringKey, Cols)>,
}

impl<'m> Group<'m> {
    /// An empty group.
    fn new(ts: Timestamp) -> Self {
        Group {
            ts,
            ops: Vec::new(),
            static_cols: None,
            rows: Vec::new(),
        }
    }

    /// Records that the group changes these static cells.
    fn touch_static(&mut self, cells: &[CellDelta<'_>]) {
        let cols = self
            .static_cols
            .get_or_insert_with(|| Cols::Only(BTreeSet::new()));
        for c in cells {
            cols.add(c.column());
        }
    }

    /// Records that the group changes `key` (rows arrive in clustering order).
    fn touch_row(&mut self, key: &ClusteringKey, cols: Cols) {
        match self.rows.last_mut() {
            Some((k, existing)) if k == key => match cols {
                Cols::All => *existing = Cols::All,
                Cols::Only(set) => set.into_iter().for_each(|c| existing.add(c)),
            },
            _ => self.rows.push((key.clone(), cols)),
        }
    }

    /// A partition delete of a table without clustering columns deletes its only row, which
    /// gets a pre-image like a row delete (Scylla ≥ 2026.1).
    fn touch_clusterless_partition_delete(&mut self, base: &TableDef) {
        if base.clustering_key().next().is_none() {
            self.touch_row(&ClusteringKey::empty(), Cols::All);
        }
    }
}

/// The single group of a mutation that is not split: its parts in walk order, images of
/// every row it contains.
fn unsplit_group<'m>(base: &TableDef, m: &MutationView<'m>, ts: Timestamp) -> Group<'m> {
    let mut g = Group::new(ts);
    if !m.statics.is_empty() {
        let cells = m
            .statics
            .iter()
            .filter_map(cell_delta_whole)
            .collect::<Vec<_>>();
        g.touch_static(&cells);
        g.ops.push(Op::Upsert(RowDelta {
            key: None,
            marker: None,
            cells,
        }));
    }
    for row in &m.rows {
        let mut cols = if row.deletion.is_some() {
            Cols::All
        } else {
            Cols::Only(BTreeSet::new())
        };
        if row.marker.is_some() || !row.cells.is_empty() {
            let cells = row
                .cells
                .iter()
                .filter_map(cell_delta_whole)
                .collect::<Vec<_>>();
            cells.iter().for_each(|c| cols.add(c.column()));
            g.ops.push(Op::Upsert(RowDelta {
                key: Some(row.key),
                marker: row.marker,
                cells,
            }));
        }
        if row.deletion.is_some() {
            g.ops.push(Op::RowDelete(row.key));
        }
        g.touch_row(row.key, cols);
    }
    for rt in &m.ranges {
        g.ops.push(Op::RangeDelete(rt));
    }
    if m.partition.is_some() {
        g.ops.push(Op::PartitionDelete);
        g.touch_clusterless_partition_delete(base);
    }
    g
}

/// A whole cell as one change (the unsplit path).
fn cell_delta_whole<'m>((column, cell): &'m (ColumnId, CellUpdate)) -> Option<CellDelta<'m>> {
    match cell {
        CellUpdate::Atomic { ttl, value, .. } => Some(CellDelta::Atomic {
            column: *column,
            value: value.as_ref(),
            ttl: *ttl,
        }),
        CellUpdate::Collection {
            tombstone,
            elements,
        } => Some(CellDelta::Collection {
            column: *column,
            tombstone: tombstone.is_some(),
            elements: elements.iter().collect(),
        }),
        CellUpdate::CounterDelta { .. } => None,
    }
}

/// The changes of one row at one `(timestamp, TTL)`.
#[derive(Default)]
struct Slice<'m> {
    /// Atomic cell changes.
    atomic: Vec<CellDelta<'m>>,
    /// Collection changes, one per column; the flag says whether it has a tombstone.
    collections: Vec<(ColumnId, bool, Vec<&'m ElementUpdate>)>,
}

impl<'m> Slice<'m> {
    /// The collection change of `column`, created empty.
    fn collection(&mut self, column: ColumnId) -> &mut (ColumnId, bool, Vec<&'m ElementUpdate>) {
        let i = match self.collections.iter().position(|(c, _, _)| *c == column) {
            Some(i) => i,
            None => {
                self.collections.push((column, false, Vec::new()));
                self.collections.len() - 1
            }
        };
        &mut self.collections[i]
    }

    /// The changes as cell deltas, in column order.
    fn into_cells(
        atomic: Vec<CellDelta<'m>>,
        collections: Vec<(ColumnId, bool, Vec<&'m ElementUpdate>)>,
    ) -> Vec<CellDelta<'m>> {
        let mut cells = atomic;
        cells.extend(
            collections
                .into_iter()
                .map(|(column, tombstone, elements)| CellDelta::Collection {
                    column,
                    tombstone,
                    elements,
                }),
        );
        cells.sort_by_key(CellDelta::column);
        cells
    }
}

/// Cuts a row's cells by `(timestamp, TTL)`, ascending.
fn slice_cells(cells: &[(ColumnId, CellUpdate)]) -> Vec<((Timestamp, u32), Slice<'_>)> {
    let mut slices: Vec<((Timestamp, u32), Slice<'_>)> = Vec::new();
    fn slot<'s, 'm>(
        slices: &'s mut Vec<((Timestamp, u32), Slice<'m>)>,
        key: (Timestamp, u32),
    ) -> &'s mut Slice<'m> {
        let i = match slices.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => i,
            Err(i) => {
                slices.insert(i, (key, Slice::default()));
                i
            }
        };
        &mut slices[i].1
    }
    for (column, cell) in cells {
        match cell {
            CellUpdate::Atomic { ts, ttl, value } => {
                slot(&mut slices, (*ts, ttl_of(value.is_some(), *ttl)))
                    .atomic
                    .push(CellDelta::Atomic {
                        column: *column,
                        value: value.as_ref(),
                        ttl: *ttl,
                    });
            }
            CellUpdate::Collection {
                tombstone,
                elements,
            } => {
                // `SET c = [...]` writes the tombstone at ts − 1: logging it at ts + 1 puts
                // an overwrite in the same group as its new elements (semantics §2.5).
                if let Some(t) = tombstone {
                    slot(&mut slices, (t.saturating_add(1), 0))
                        .collection(*column)
                        .1 = true;
                }
                for e in elements {
                    slot(&mut slices, (e.ts, ttl_of(e.value.is_some(), e.ttl)))
                        .collection(*column)
                        .2
                        .push(e);
                }
            }
            CellUpdate::CounterDelta { .. } => {}
        }
    }
    slices
}

/// Groups of a split mutation, by timestamp (Scylla's `extract_changes`).
fn split_groups<'m>(base: &TableDef, m: &MutationView<'m>) -> Vec<Group<'m>> {
    let mut groups: Vec<Group<'m>> = Vec::new();
    fn group<'g, 'm>(groups: &'g mut Vec<Group<'m>>, ts: Timestamp) -> &'g mut Group<'m> {
        let i = match groups.binary_search_by_key(&ts, |g| g.ts) {
            Ok(i) => i,
            Err(i) => {
                groups.insert(i, Group::new(ts));
                i
            }
        };
        &mut groups[i]
    }
    // Per group: inserts and updates are collected apart and put in order at the end.
    let mut inserts: HashMap<Timestamp, Vec<RowDelta<'m>>> = HashMap::new();
    let mut updates: HashMap<Timestamp, Vec<RowDelta<'m>>> = HashMap::new();
    let mut deletes: HashMap<Timestamp, Vec<&'m ClusteringKey>> = HashMap::new();

    for ((ts, _), slice) in slice_cells(m.statics) {
        let cells = Slice::into_cells(slice.atomic, slice.collections);
        let g = group(&mut groups, ts);
        g.touch_static(&cells);
        g.ops.push(Op::Upsert(RowDelta {
            key: None,
            marker: None,
            cells,
        }));
    }

    for row in &m.rows {
        let mut slices = slice_cells(row.cells);
        let marker_key = row.marker.map(|mk| (mk.ts, ttl_of(true, mk.ttl)));
        if let Some(key) = marker_key
            && let Err(i) = slices.binary_search_by_key(&key, |(k, _)| *k)
        {
            slices.insert(i, (key, Slice::default()));
        }
        for ((ts, ttl), slice) in slices {
            let mut touched = Cols::Only(BTreeSet::new());
            if marker_key == Some((ts, ttl)) {
                // An INSERT always clears the collections it sets: collection changes with a
                // tombstone belong to the insert, element additions alone become an update.
                let (with_tombstone, additions): (Vec<_>, Vec<_>) =
                    slice.collections.into_iter().partition(|(_, t, _)| *t);
                let insert = RowDelta {
                    key: Some(row.key),
                    marker: row.marker,
                    cells: Slice::into_cells(slice.atomic, with_tombstone),
                };
                insert.cells.iter().for_each(|c| touched.add(c.column()));
                inserts.entry(ts).or_default().push(insert);
                if !additions.is_empty() {
                    let update = RowDelta {
                        key: Some(row.key),
                        marker: None,
                        cells: Slice::into_cells(Vec::new(), additions),
                    };
                    update.cells.iter().for_each(|c| touched.add(c.column()));
                    updates.entry(ts).or_default().push(update);
                }
            } else {
                let update = RowDelta {
                    key: Some(row.key),
                    marker: None,
                    cells: Slice::into_cells(slice.atomic, slice.collections),
                };
                update.cells.iter().for_each(|c| touched.add(c.column()));
                updates.entry(ts).or_default().push(update);
            }
            group(&mut groups, ts).touch_row(row.key, touched);
        }
        if let Some(ts) = row.deletion {
            deletes.entry(ts).or_default().push(row.key);
            group(&mut groups, ts).touch_row(row.key, Cols::All);
        }
    }

    for g in &mut groups {
        for d in inserts.remove(&g.ts).unwrap_or_default() {
            g.ops.push(Op::Upsert(d));
        }
        for d in updates.remove(&g.ts).unwrap_or_default() {
            g.ops.push(Op::Upsert(d));
        }
        for key in deletes.remove(&g.ts).unwrap_or_default() {
            g.ops.push(Op::RowDelete(key));
        }
    }
    for rt in &m.ranges {
        group(&mut groups, rt.ts).ops.push(Op::RangeDelete(rt));
    }
    if let Some(ts) = m.partition {
        let g = group(&mut groups, ts);
        g.ops.push(Op::PartitionDelete);
        g.touch_clusterless_partition_delete(base);
    }
    groups
}

// ---------------------------------------------------------------------------------------------
// Log columns
// ---------------------------------------------------------------------------------------------

/// The log columns of one base static or regular column.
struct ValueColumns<'t> {
    /// The base column.
    def: &'t ColumnDef,
    /// Its value column in the log.
    value: Option<ColumnId>,
    /// `cdc$deleted_<name>`.
    deleted: Option<ColumnId>,
    /// `cdc$deleted_elements_<name>` (non-frozen collections and UDTs only).
    deleted_elements: Option<ColumnId>,
}

/// The log table's columns, resolved by name for the base table's columns.
struct LogColumns<'t> {
    /// `cdc$operation`.
    operation: Option<ColumnId>,
    /// `cdc$ttl`.
    ttl: Option<ColumnId>,
    /// `cdc$end_of_batch`.
    end_of_batch: Option<ColumnId>,
    /// Per base partition-key column, in key order.
    partition_key: Vec<Option<ColumnId>>,
    /// Per base clustering column, in key order.
    clustering_key: Vec<Option<ColumnId>>,
    /// Per base static or regular column, by its id.
    values: HashMap<ColumnId, ValueColumns<'t>>,
    /// Base static columns, in name order.
    statics: Vec<&'t ColumnDef>,
    /// Base regular columns, in name order.
    regulars: Vec<&'t ColumnDef>,
}

impl<'t> LogColumns<'t> {
    /// Looks the log columns of `base`'s columns up in `log` (a missing one is `None`: its
    /// cells are not written).
    fn resolve(base: &'t TableDef, log: &TableDef) -> Self {
        let by_name: HashMap<&str, ColumnId> = log
            .columns
            .iter()
            .map(|c| (c.name.as_str(), ColumnId(c.id)))
            .collect();
        let find = |name: &str| by_name.get(name).copied();
        let mut values = HashMap::new();
        let mut statics = Vec::new();
        let mut regulars = Vec::new();
        for def in base.value_columns() {
            match def.kind {
                ColumnKind::Static => statics.push(def),
                _ => regulars.push(def),
            }
            let deleted_elements = if def.typ.is_multi_cell() {
                find(&format!("{DELETED_ELEMENTS_PREFIX}{}", def.name))
            } else {
                None
            };
            values.insert(
                ColumnId(def.id),
                ValueColumns {
                    def,
                    value: find(&def.name),
                    deleted: find(&format!("{DELETED_PREFIX}{}", def.name)),
                    deleted_elements,
                },
            );
        }
        LogColumns {
            operation: find(OPERATION),
            ttl: find(TTL),
            end_of_batch: find(END_OF_BATCH),
            partition_key: base.partition_key().map(|c| find(&c.name)).collect(),
            clustering_key: base.clustering_key().map(|c| find(&c.name)).collect(),
            values,
            statics,
            regulars,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Collections: delta values, image values, merging
// ---------------------------------------------------------------------------------------------

/// How a non-frozen column's elements show in the log.
enum Shape<'t> {
    /// `list<V>`: a `map<timeuuid, V>` keyed by the element timeuuids.
    List,
    /// `set<K>`: a set of the elements.
    Set,
    /// `map<K, V>`.
    Map,
    /// A UDT: fields by index.
    Udt(&'t UserType),
    /// Not a collection (a schema mismatch): elements are ignored.
    Other,
}

/// The shape of a column's type.
fn shape(typ: &CqlType) -> Shape<'_> {
    match typ {
        CqlType::List { .. } => Shape::List,
        CqlType::Set { .. } => Shape::Set,
        CqlType::Map { .. } => Shape::Map,
        CqlType::Udt { def, .. } => Shape::Udt(def),
        _ => Shape::Other,
    }
}

impl Shape<'_> {
    /// The log value of `(key, value)` pairs in key order (`None` when empty, except for a
    /// UDT: its value is a UDT of the given fields, never null — semantics §2.5).
    fn build<'v>(&self, pairs: impl Iterator<Item = (&'v Value, &'v Value)>) -> Option<Value> {
        match self {
            Shape::List | Shape::Map => {
                let entries: Vec<(Value, Value)> =
                    pairs.map(|(k, v)| (k.clone(), v.clone())).collect();
                (!entries.is_empty()).then(|| Value::map(entries))
            }
            Shape::Set => {
                let keys: Vec<Value> = pairs.map(|(k, _)| k.clone()).collect();
                (!keys.is_empty()).then(|| Value::set(keys))
            }
            Shape::Udt(def) => {
                let mut fields: Vec<Option<Value>> = vec![None; def.fields.len()];
                for (k, v) in pairs {
                    if let Some(slot) = field_index(k).and_then(|i| fields.get_mut(i)) {
                        *slot = Some(v.clone());
                    }
                }
                (!fields.is_empty()).then(|| Value::udt(fields))
            }
            Shape::Other => None,
        }
    }

    /// The image of a column after a change (Scylla's `merge`): the previous value, with the
    /// added elements (taking precedence), without the deleted keys. An emptied map or set
    /// stays an empty, non-null value, as in Scylla.
    fn merge(&self, prev: Option<&Value>, added: Option<&Value>, deleted: Option<&Value>) -> Value {
        let deleted: &[Value] = deleted.and_then(Value::as_elements).unwrap_or(&[]);
        let is_deleted = |k: &Value| deleted.binary_search(k).is_ok();
        match self {
            Shape::List | Shape::Map => {
                let entries: Vec<(Value, Value)> = added
                    .and_then(Value::as_map)
                    .into_iter()
                    .chain(prev.and_then(Value::as_map))
                    .flatten()
                    .filter(|(k, _)| !is_deleted(k))
                    .cloned()
                    .collect();
                // `Value::map` keeps the first of equal keys: the added one.
                Value::map(entries)
            }
            Shape::Set => {
                let keys: Vec<Value> = added
                    .and_then(Value::as_elements)
                    .into_iter()
                    .chain(prev.and_then(Value::as_elements))
                    .flatten()
                    .filter(|k| !is_deleted(k))
                    .cloned()
                    .collect();
                Value::set(keys)
            }
            Shape::Udt(def) => {
                let mut fields: Vec<Option<Value>> = vec![None; def.fields.len()];
                for (slot, f) in fields
                    .iter_mut()
                    .zip(prev.and_then(Value::as_fields).unwrap_or(&[]))
                {
                    slot.clone_from(f);
                }
                for (slot, f) in fields
                    .iter_mut()
                    .zip(added.and_then(Value::as_fields).unwrap_or(&[]))
                {
                    if f.is_some() {
                        slot.clone_from(f);
                    }
                }
                for k in deleted {
                    if let Some(slot) = field_index(k).and_then(|i| fields.get_mut(i)) {
                        *slot = None;
                    }
                }
                Value::udt(fields)
            }
            Shape::Other => added.or(prev).cloned().unwrap_or(Value::Empty),
        }
    }
}

/// The field index a UDT element key (`smallint`) holds.
fn field_index(key: &Value) -> Option<usize> {
    key.as_smallint().and_then(|i| usize::try_from(i).ok())
}

/// The value an image shows for a live cell of `def`: atomic values as they are, non-frozen
/// collections and UDTs frozen (lists as `map<timeuuid, V>`, semantics §3.1).
fn image_value(def: &ColumnDef, cell: CellView<'_>) -> Option<Value> {
    match cell {
        CellView::Atomic { value, .. } => Some(value.clone()),
        CellView::Counter { value, .. } => Some(Value::Bigint(value)),
        CellView::Collection(view) => shape(&def.typ).build(view.iter().map(|e| (e.key, e.value))),
    }
}

// ---------------------------------------------------------------------------------------------
// Image state
// ---------------------------------------------------------------------------------------------

/// The rows images are made of: what the write read before applying, then each delta of the
/// mutation applied in log order (Scylla's `_clustering_row_states` / `_static_row_state`).
#[derive(Default)]
struct ImageState {
    /// Non-null static values.
    static_row: HashMap<ColumnId, Value>,
    /// Whether a delta of this mutation changed the static row.
    static_touched: bool,
    /// Rows that exist (read, or written by an earlier delta), with their non-null values.
    rows: HashMap<ClusteringKey, HashMap<ColumnId, Value>>,
}

impl ImageState {
    /// The pre-read of the write (Scylla's `pre_image_select`): the static columns and the
    /// clustering rows the mutation touches. Only the columns the images may need are read:
    /// all of them with post-images, `preimage: 'full'` or a row delete, else the touched
    /// ones — which matters for the static row, whose image is only made when a read static
    /// column is non-null.
    fn load(ctx: &LogContext<'_>, before: Option<PartitionView<'_>>, m: &MutationView<'_>) -> Self {
        let mut state = ImageState::default();
        let Some(before) = before else {
            return state;
        };
        let all = ctx.options.postimage || ctx.options.preimage == PreimageMode::Full;
        if !m.statics.is_empty()
            && let Some(row) = before.static_row()
        {
            for def in ctx
                .base
                .value_columns()
                .filter(|c| c.kind == ColumnKind::Static)
            {
                let id = ColumnId(def.id);
                if !all && !m.statics.iter().any(|(c, _)| *c == id) {
                    continue;
                }
                if let Some(v) = row.cell(id).and_then(|cell| image_value(def, cell)) {
                    state.static_row.insert(id, v);
                }
            }
        }
        let clusterless_delete =
            m.partition.is_some() && ctx.base.clustering_key().next().is_none();
        let mut keys: Vec<&ClusteringKey> = m.rows.iter().map(|r| r.key).collect();
        let empty = ClusteringKey::empty();
        if clusterless_delete && keys.is_empty() {
            keys.push(&empty);
        }
        // Scylla reads the columns of the first row only when it reads "the touched
        // columns"; the union of every row's columns is read here instead.
        let all_regular = all || clusterless_delete || m.rows.iter().any(|r| r.deletion.is_some());
        let touched: BTreeSet<ColumnId> = m
            .rows
            .iter()
            .flat_map(|r| r.cells.iter().map(|(c, _)| *c))
            .collect();
        for key in keys {
            let Some(row) = before.row(key.values()) else {
                continue;
            };
            let mut values = HashMap::new();
            for def in ctx
                .base
                .value_columns()
                .filter(|c| c.kind == ColumnKind::Regular)
            {
                let id = ColumnId(def.id);
                if !all_regular && !touched.contains(&id) {
                    continue;
                }
                if let Some(v) = row.cell(id).and_then(|cell| image_value(def, cell)) {
                    values.insert(id, v);
                }
            }
            state.rows.insert(key.clone(), values);
        }
        state
    }

    /// The values of the static row (`None`) or of a clustering row, created if absent.
    fn row_mut(&mut self, key: Option<&ClusteringKey>) -> &mut HashMap<ColumnId, Value> {
        match key {
            None => &mut self.static_row,
            Some(k) => self.rows.entry(k.clone()).or_default(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Producing the rows
// ---------------------------------------------------------------------------------------------

/// Turns groups into log rows, keeping the image state.
struct Processor<'a, 'c> {
    /// The tables and options.
    ctx: &'a LogContext<'a>,
    /// The base table's clustering order.
    cmp: ClusteringComparator,
    /// The log columns.
    columns: &'c LogColumns<'a>,
    /// The rows images are made of.
    state: ImageState,
    /// The log rows so far.
    out: LogWriter,
}

impl Processor<'_, '_> {
    /// Logs a group: pre-images, deltas, post-images, end of batch.
    fn group(&mut self, g: &Group<'_>) {
        self.out.begin(g.ts);
        let options = self.ctx.options;
        if options.preimage != PreimageMode::Off {
            let full = options.preimage == PreimageMode::Full;
            if let Some(cols) = &g.static_cols {
                self.image(
                    Operation::PreImage,
                    None,
                    if full { &Cols::All } else { cols },
                );
            }
            for (key, cols) in &g.rows {
                self.image(
                    Operation::PreImage,
                    Some(key),
                    if full { &Cols::All } else { cols },
                );
            }
        }
        for op in &g.ops {
            match op {
                Op::Upsert(d) => self.upsert(d),
                Op::RowDelete(key) => {
                    let row = self.out.new_row(Operation::RowDelete);
                    self.out.set_clustering(row, key.values());
                    self.state.rows.remove(*key);
                }
                Op::RangeDelete(rt) => self.range_delete(rt),
                Op::PartitionDelete => {
                    self.out.new_row(Operation::PartitionDelete);
                    // As in Scylla, the static row's state is kept (UNCONFIRMED whether a
                    // later static image ignores the partition tombstone in real Scylla).
                    self.state.rows.clear();
                }
            }
        }
        if options.postimage {
            if g.static_cols.is_some() {
                self.image(Operation::PostImage, None, &Cols::All);
            }
            for (key, _) in &g.rows {
                self.image(Operation::PostImage, Some(key), &Cols::All);
            }
        }
        self.out.end();
    }

    /// A pre- or post-image row of the static row (`key: None`) or a clustering row: nothing
    /// when the row does not exist in the state.
    fn image(&mut self, op: Operation, key: Option<&ClusteringKey>, cols: &Cols) {
        let (state, defs) = match key {
            Some(k) => match self.state.rows.get(k) {
                Some(s) => (s, &self.columns.regulars),
                None => return,
            },
            None => {
                if self.state.static_row.is_empty() && !self.state.static_touched {
                    return;
                }
                (&self.state.static_row, &self.columns.statics)
            }
        };
        let row = self.out.new_row(op);
        if let Some(k) = key {
            self.out.set_clustering(row, k.values());
        }
        for def in defs.iter().filter(|d| cols.contains(ColumnId(d.id))) {
            let Some(lc) = self.columns.values.get(&ColumnId(def.id)) else {
                continue;
            };
            match state.get(&ColumnId(def.id)) {
                Some(v) => self.out.set(row, lc.value, v.clone()),
                // A pre-image tells "was null" from "not included" with the deleted flag.
                None if op == Operation::PreImage => {
                    self.out.set(row, lc.deleted, Value::Boolean(true));
                }
                None => {}
            }
        }
    }

    /// The delta row of an insert or update, and its effect on the image state.
    fn upsert(&mut self, d: &RowDelta<'_>) {
        let op = if d.marker.is_some() {
            Operation::Insert
        } else {
            Operation::Update
        };
        let full = self.ctx.options.delta_full;
        let row = self.out.new_row(op);
        if let Some(k) = d.key {
            self.out.set_clustering(row, k.values());
        }
        // `cdc$ttl`: the TTL of the marker and live cells (all equal within one delta).
        let positive = |t: Option<u32>| t.filter(|t| *t > 0);
        let mut ttl = d.marker.and_then(|m| positive(m.ttl));
        for cell in &d.cells {
            let Some(lc) = self.columns.values.get(&cell.column()) else {
                continue;
            };
            let column = cell.column();
            match cell {
                CellDelta::Atomic { value, ttl: t, .. } => match value {
                    Some(v) => {
                        ttl = positive(*t);
                        if full {
                            self.out.set(row, lc.value, (*v).clone());
                        }
                        self.state.row_mut(d.key).insert(column, (*v).clone());
                    }
                    None => {
                        if full {
                            self.out.set(row, lc.deleted, Value::Boolean(true));
                        }
                        self.state.row_mut(d.key).remove(&column);
                    }
                },
                CellDelta::Collection {
                    tombstone,
                    elements,
                    ..
                } => {
                    let kind = shape(&lc.def.typ);
                    let mut live = Vec::new();
                    let mut dead = Vec::new();
                    for e in elements {
                        match &e.value {
                            Some(v) => {
                                ttl = positive(e.ttl);
                                live.push((&e.key, v));
                            }
                            None => dead.push(e.key.clone()),
                        }
                    }
                    let added = kind.build(live.into_iter());
                    let deleted = (!dead.is_empty()).then(|| Value::set(dead));
                    if full {
                        if *tombstone {
                            self.out.set(row, lc.deleted, Value::Boolean(true));
                        }
                        if let Some(v) = &deleted {
                            self.out.set(row, lc.deleted_elements, v.clone());
                        }
                        if let Some(v) = &added {
                            self.out.set(row, lc.value, v.clone());
                        }
                    }
                    let state = self.state.row_mut(d.key);
                    // A collection tombstone replaces whatever the state had.
                    let prev = if *tombstone { None } else { state.get(&column) };
                    let next = if added.is_some() || (deleted.is_some() && prev.is_some()) {
                        Some(kind.merge(prev, added.as_ref(), deleted.as_ref()))
                    } else {
                        None
                    };
                    match next {
                        Some(v) => state.insert(column, v),
                        None => state.remove(&column),
                    };
                }
            }
        }
        self.out.set_ttl(row, ttl);
        match d.key {
            // A changed row exists from now on, even with no regular column (Scylla #7716).
            Some(k) => {
                self.state.rows.entry(k.clone()).or_default();
            }
            None => self.state.static_touched = true,
        }
    }

    /// The two rows of a range delete; rows of the state inside the range are gone. An empty
    /// range (`ck < 1 AND ck > 2`) logs nothing.
    fn range_delete(&mut self, rt: &RangeTombstone) {
        let range = range_of(rt);
        let (start, end) = self.cmp.range_positions(&range);
        if start >= end {
            return;
        }
        // An unbounded side is an inclusive empty prefix (examples M, N).
        let start_op = if rt.start.inclusive || rt.start.is_unbounded() {
            Operation::RangeDeleteStartInclusive
        } else {
            Operation::RangeDeleteStartExclusive
        };
        let end_op = if rt.end.inclusive || rt.end.is_unbounded() {
            Operation::RangeDeleteEndInclusive
        } else {
            Operation::RangeDeleteEndExclusive
        };
        let row = self.out.new_row(start_op);
        self.out.set_clustering(row, &rt.start.prefix);
        let row = self.out.new_row(end_op);
        self.out.set_clustering(row, &rt.end.prefix);
        let cmp = self.cmp;
        self.state.rows.retain(|key, _| {
            let at = cmp.key_position(key);
            !(start < at && at < end)
        });
    }
}

/// Builds the log partition's rows: `cdc$time` groups, sequence numbers, key columns,
/// `cdc$end_of_batch`.
struct LogWriter {
    /// The log partition (the stream).
    key: PartitionKey,
    /// The rows written so far, in log order.
    rows: Vec<(ClusteringKey, RowUpdate)>,
    /// TTL of every log cell (the table's `cdc` `ttl` option; none when 0).
    cell_ttl: Option<u32>,
    /// `cdc$operation`.
    operation: Option<ColumnId>,
    /// `cdc$ttl`.
    ttl: Option<ColumnId>,
    /// `cdc$end_of_batch`.
    end_of_batch: Option<ColumnId>,
    /// The log columns of the base clustering columns.
    clustering_key: Vec<Option<ColumnId>>,
    /// The base partition key's log cells, copied into every row.
    partition_cells: Vec<(ColumnId, Value)>,
    /// The current group's timestamp.
    ts: Timestamp,
    /// The current group's `cdc$time`.
    time: Value,
    /// The next `cdc$batch_seq_no`.
    next_seq: i32,
    /// Index of the current group's first row.
    group_start: usize,
}

impl LogWriter {
    /// A writer of the log partition `ctx.stream` for a write to `base_key`.
    fn new(ctx: &LogContext<'_>, columns: &LogColumns<'_>, base_key: &PartitionKey) -> Self {
        let stream = ctx.stream.0;
        let partition_cells = columns
            .partition_key
            .iter()
            .zip(base_key.values.iter())
            .filter_map(|(id, v)| id.map(|id| (id, v.clone())))
            .collect();
        LogWriter {
            key: PartitionKey::new(
                cdc_token(&stream),
                Bytes::copy_from_slice(&stream),
                vec![Value::blob(Bytes::copy_from_slice(&stream))],
            ),
            rows: Vec::new(),
            cell_ttl: (ctx.options.ttl > 0).then_some(ctx.options.ttl),
            operation: columns.operation,
            ttl: columns.ttl,
            end_of_batch: columns.end_of_batch,
            clustering_key: columns.clustering_key.clone(),
            partition_cells,
            ts: 0,
            time: Value::Empty,
            next_seq: 0,
            group_start: 0,
        }
    }

    /// Starts a group: a fresh `cdc$time` for `ts`.
    fn begin(&mut self, ts: Timestamp) {
        self.ts = ts;
        self.time = Value::Timeuuid(timeuuid::from_micros(ts));
        self.next_seq = 0;
        self.group_start = self.rows.len();
    }

    /// A new row of the group with its operation and the base partition key; its index.
    fn new_row(&mut self, op: Operation) -> usize {
        let key = ClusteringKey::new(vec![self.time.clone(), Value::Int(self.next_seq)]);
        self.next_seq = self.next_seq.saturating_add(1);
        let mut row = RowUpdate::default();
        for (id, v) in &self.partition_cells {
            row.set_cell(*id, self.cell(v.clone()));
        }
        if let Some(id) = self.operation {
            row.set_cell(id, self.cell(Value::Tinyint(op.code())));
        }
        self.rows.push((key, row));
        self.rows.len() - 1
    }

    /// A log cell: written at the group's timestamp, with the CDC TTL.
    fn cell(&self, value: Value) -> CellUpdate {
        CellUpdate::Atomic {
            ts: self.ts,
            ttl: self.cell_ttl,
            value: Some(value),
        }
    }

    /// Sets a cell of a row (nothing when the log has no such column).
    fn set(&mut self, row: usize, column: Option<ColumnId>, value: Value) {
        let cell = self.cell(value);
        if let (Some(column), Some((_, r))) = (column, self.rows.get_mut(row)) {
            r.set_cell(column, cell);
        }
    }

    /// Sets the base clustering columns from a key or a prefix (the rest stay null).
    fn set_clustering(&mut self, row: usize, values: &[Value]) {
        for (i, v) in values.iter().enumerate() {
            let column = self.clustering_key.get(i).copied().flatten();
            self.set(row, column, v.clone());
        }
    }

    /// Sets `cdc$ttl` (left null for `None`).
    fn set_ttl(&mut self, row: usize, ttl: Option<u32>) {
        if let Some(t) = ttl {
            self.set(row, self.ttl, Value::Bigint(i64::from(t)));
        }
    }

    /// Ends the group: `cdc$end_of_batch = true` on its last row (others stay null).
    fn end(&mut self) {
        if self.rows.len() > self.group_start {
            let last = self.rows.len() - 1;
            self.set(last, self.end_of_batch, Value::Boolean(true));
        }
    }

    /// The log mutation, `None` when nothing was logged.
    fn finish(self) -> Option<PartitionMutation> {
        if self.rows.is_empty() {
            return None;
        }
        let mut m = PartitionMutation::new(self.key);
        m.rows = self.rows;
        Some(m)
    }
}
