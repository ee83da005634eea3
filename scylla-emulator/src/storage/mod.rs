//! The storage engine: in-memory tables with Scylla's write and read semantics.
//!
//! A [`TableData`] (behind its own lock in a [`TableStore`]) holds one table's partitions,
//! ordered by `(token, serialized key)`; a partition holds a partition tombstone, a static
//! row, clustering rows ordered by the table's [`ClusteringComparator`] (ASC/DESC per
//! column), and range tombstones. A row holds a row
//! marker, a row tombstone and cells by [`ColumnId`]: atomic cells, non-frozen collections
//! (a collection tombstone plus per-element cells) and counters.
//!
//! Writes arrive as [`PartitionMutation`]s (built by the executor, read by CDC, merged per
//! partition for batches with [`PartitionMutation::merge`]) and are applied with
//! [`TableData::apply`] under last-write-wins reconciliation. Reads go through
//! [`PartitionView`] / [`RowView`] / [`CellView`], which show only data live at the `now`
//! given to the read, with write timestamps and remaining TTLs.

mod clustering;
mod mutation;
mod table;

// The facade the executor and CDC modules use.
pub(crate) use clustering::{
    ClusteringBound, ClusteringComparator, ClusteringKey, ClusteringRange, MAX_CLUSTERING_COLUMNS,
};
pub(crate) use mutation::{
    CellUpdate, ColumnId, ElementUpdate, Liveness, Now, PartitionKey, PartitionMutation,
    RangeTombstone, RowUpdate, Timestamp,
};
pub(crate) use table::{
    CellView, PartitionStart, PartitionView, RowView, ScanRow, TableData, TableStore,
};

// Named by tests only.
#[cfg(test)]
pub(crate) use table::MarkerView;

#[cfg(test)]
mod tests;
