//! Mutations: what one write (or one merged batch) does to one partition.
//!
//! The executor builds a [`PartitionMutation`] per (table, partition key); the CDC module
//! reads every timestamp, TTL, cell, element and tombstone in it; [`super::TableData::apply`]
//! applies it. [`PartitionMutation::merge`] reconciles two mutations of the same partition
//! (the statements of a batch) the way Scylla does before it applies and logs them.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use crate::types::value::Value;

use super::clustering::{ClusteringBound, ClusteringKey};

/// A write timestamp: microseconds since the Unix epoch (`USING TIMESTAMP`, `writetime()`).
pub(crate) type Timestamp = i64;

/// Server time in whole seconds since the Unix epoch (Scylla's `gc_clock`): TTL expiry is
/// computed from it when a mutation is applied, and checked against it when data is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Now(pub i64);

/// Stable id of a column within one table. Never reused: dropping a column and adding one
/// with the same name gives a new id, so old data cannot resurrect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ColumnId(pub u32);

/// The partition key of a mutation or a stored partition: its token, its serialized form
/// (what the token was computed from; partitions are ordered by `(token, bytes)`), and its
/// decoded column values, for output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PartitionKey {
    /// The partitioner's token of `bytes`.
    pub token: i64,
    /// The serialized partition key.
    pub bytes: Bytes,
    /// The partition-key column values, in key order.
    pub values: Arc<[Value]>,
}

impl PartitionKey {
    /// A partition key from its parts.
    pub(crate) fn new(token: i64, bytes: Bytes, values: Vec<Value>) -> PartitionKey {
        PartitionKey {
            token,
            bytes,
            values: Arc::from(values),
        }
    }
}

/// The liveness of a row marker (what `INSERT` writes besides the cells): its timestamp and
/// its TTL in seconds, as written (`None`: no TTL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Liveness {
    /// Write timestamp.
    pub ts: Timestamp,
    /// TTL in seconds, if any.
    pub ttl: Option<u32>,
}

/// One element of a non-frozen collection or UDT written by a mutation.
///
/// Keys: a list element's timeuuid ([`Value::Timeuuid`]), a set element, a map key, or a UDT
/// field index ([`Value::Smallint`]). Values: the list element, [`Value::Empty`] for a set
/// element, the map value, the UDT field value; `None` deletes the element.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ElementUpdate {
    /// The element's key.
    pub key: Value,
    /// Write timestamp.
    pub ts: Timestamp,
    /// TTL in seconds, if any (ignored for deletions).
    pub ttl: Option<u32>,
    /// The new value; `None` is an element tombstone.
    pub value: Option<Value>,
}

/// What a mutation writes into one cell.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum CellUpdate {
    /// An atomic cell (any column that is not a non-frozen collection/UDT or a counter; or a
    /// counter deletion): `value: None` is a cell tombstone.
    Atomic {
        /// Write timestamp.
        ts: Timestamp,
        /// TTL in seconds, if any (ignored for tombstones).
        ttl: Option<u32>,
        /// The new value, or `None` to delete.
        value: Option<Value>,
    },
    /// A non-frozen collection or UDT: an optional collection tombstone (which deletes every
    /// element with a timestamp not above it) and element writes, sorted by key.
    Collection {
        /// Collection tombstone timestamp (`SET c = ...` writes it at `ts - 1`, `DELETE c`
        /// at `ts`).
        tombstone: Option<Timestamp>,
        /// Element writes and deletions, sorted by key, keys unique.
        elements: Vec<ElementUpdate>,
    },
    /// A counter increment (negative: decrement).
    CounterDelta {
        /// Write timestamp.
        ts: Timestamp,
        /// The amount added.
        delta: i64,
    },
}

/// What a mutation does to one row (a clustering row or the static row).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct RowUpdate {
    /// A row marker (written by `INSERT`; keeps the row alive with all columns null).
    pub marker: Option<Liveness>,
    /// A row tombstone (`DELETE FROM t WHERE <full primary key>`), its timestamp.
    pub deletion: Option<Timestamp>,
    /// Cell writes, sorted by column id, ids unique.
    pub cells: Vec<(ColumnId, CellUpdate)>,
}

/// A range tombstone: deletes every row whose clustering key lies between the bounds (prefix
/// semantics) and has data with a timestamp not above `ts`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RangeTombstone {
    /// Lower bound (an empty prefix is unbounded).
    pub start: ClusteringBound,
    /// Upper bound (an empty prefix is unbounded).
    pub end: ClusteringBound,
    /// Deletion timestamp.
    pub ts: Timestamp,
}

/// Everything one write (or one merged batch) does to one partition.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PartitionMutation {
    /// The partition.
    pub key: PartitionKey,
    /// A partition tombstone (`DELETE FROM t WHERE <partition key>`).
    pub partition_tombstone: Option<Timestamp>,
    /// Changes of the static row.
    pub static_row: Option<RowUpdate>,
    /// Changes of clustering rows, one entry per clustering key (keys unique, in order of
    /// insertion).
    pub rows: Vec<(ClusteringKey, RowUpdate)>,
    /// Range tombstones, in the order written.
    pub range_tombstones: Vec<RangeTombstone>,
}

impl PartitionMutation {
    /// An empty mutation of a partition.
    pub(crate) fn new(key: PartitionKey) -> PartitionMutation {
        PartitionMutation {
            key,
            partition_tombstone: None,
            static_row: None,
            rows: Vec::new(),
            range_tombstones: Vec::new(),
        }
    }

    /// Whether the mutation changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.partition_tombstone.is_none()
            && self.static_row.as_ref().is_none_or(RowUpdate::is_empty)
            && self.rows.iter().all(|(_, r)| r.is_empty())
            && self.range_tombstones.is_empty()
    }

    /// The static row's update, created empty if absent.
    #[cfg(test)]
    pub(crate) fn static_row_mut(&mut self) -> &mut RowUpdate {
        self.static_row.get_or_insert_with(RowUpdate::default)
    }

    /// The update of the row with this clustering key, created empty if absent.
    pub(crate) fn row_mut(&mut self, key: &ClusteringKey) -> &mut RowUpdate {
        let i = match self.rows.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.rows.push((key.clone(), RowUpdate::default()));
                self.rows.len() - 1
            }
        };
        &mut self.rows[i].1
    }

    /// Sets the partition tombstone (keeping the larger of two).
    pub(crate) fn delete_partition(&mut self, ts: Timestamp) {
        self.partition_tombstone = Some(self.partition_tombstone.map_or(ts, |t| t.max(ts)));
    }

    /// Merges another mutation of the same partition into this one with Scylla's
    /// reconciliation: the larger tombstones, the winning cell of two writes of one cell
    /// (the loser is gone), the union of collection elements, the sum of counter deltas.
    /// Nothing is dropped for being shadowed by a tombstone: both stay visible to CDC and
    /// [`super::TableData::apply`] resolves them.
    pub(crate) fn merge(&mut self, other: PartitionMutation) {
        if let Some(t) = other.partition_tombstone {
            self.delete_partition(t);
        }
        if let Some(s) = other.static_row {
            match &mut self.static_row {
                Some(mine) => mine.merge(s),
                None => self.static_row = Some(s),
            }
        }
        for (key, update) in other.rows {
            match self.rows.iter_mut().find(|(k, _)| *k == key) {
                Some((_, mine)) => mine.merge(update),
                None => self.rows.push((key, update)),
            }
        }
        for rt in other.range_tombstones {
            match self
                .range_tombstones
                .iter_mut()
                .find(|r| r.start == rt.start && r.end == rt.end)
            {
                Some(mine) => mine.ts = mine.ts.max(rt.ts),
                None => self.range_tombstones.push(rt),
            }
        }
    }
}

impl RowUpdate {
    /// Whether the update changes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.marker.is_none() && self.deletion.is_none() && self.cells.is_empty()
    }

    /// Sets (or reconciles) the cell of a column.
    pub(crate) fn set_cell(&mut self, column: ColumnId, update: CellUpdate) {
        match self.cells.binary_search_by_key(&column, |(c, _)| *c) {
            Ok(i) => merge_cell(&mut self.cells[i].1, update),
            Err(i) => self.cells.insert(i, (column, update)),
        }
    }

    /// The update of a column, if any.
    #[cfg(test)]
    pub(crate) fn cell(&self, column: ColumnId) -> Option<&CellUpdate> {
        self.cells
            .binary_search_by_key(&column, |(c, _)| *c)
            .ok()
            .map(|i| &self.cells[i].1)
    }

    /// Merges another update of the same row into this one.
    pub(crate) fn merge(&mut self, other: RowUpdate) {
        if let Some(m) = other.marker {
            match self.marker {
                Some(mine) if compare_marker(&mine, &m) != Ordering::Less => {}
                _ => self.marker = Some(m),
            }
        }
        if let Some(d) = other.deletion {
            self.deletion = Some(self.deletion.map_or(d, |x| x.max(d)));
        }
        for (c, u) in other.cells {
            self.set_cell(c, u);
        }
    }
}

/// Reconciles `new` into `slot`.
fn merge_cell(slot: &mut CellUpdate, new: CellUpdate) {
    use CellUpdate as C;
    match (&mut *slot, new) {
        (
            C::Atomic { ts, ttl, value },
            C::Atomic {
                ts: nts,
                ttl: nttl,
                value: nvalue,
            },
        ) => {
            let old = CellVersion {
                ts: *ts,
                value: value.as_ref(),
                expiry: ttl.map(u64::from),
                ttl: *ttl,
            };
            let candidate = CellVersion {
                ts: nts,
                value: nvalue.as_ref(),
                expiry: nttl.map(u64::from),
                ttl: nttl,
            };
            if compare_versions(&candidate, &old) == Ordering::Greater {
                *slot = C::Atomic {
                    ts: nts,
                    ttl: nttl,
                    value: nvalue,
                };
            }
        }
        (
            C::Collection {
                tombstone,
                elements,
            },
            C::Collection {
                tombstone: nt,
                elements: nel,
            },
        ) => {
            if let Some(t) = nt {
                *tombstone = Some(tombstone.map_or(t, |x| x.max(t)));
            }
            for e in nel {
                match elements.binary_search_by(|x| x.key.cmp(&e.key)) {
                    Ok(i) => {
                        let old = &elements[i];
                        let cand = CellVersion {
                            ts: e.ts,
                            value: e.value.as_ref(),
                            expiry: e.ttl.map(u64::from),
                            ttl: e.ttl,
                        };
                        let mine = CellVersion {
                            ts: old.ts,
                            value: old.value.as_ref(),
                            expiry: old.ttl.map(u64::from),
                            ttl: old.ttl,
                        };
                        if compare_versions(&cand, &mine) == Ordering::Greater {
                            elements[i] = e;
                        }
                    }
                    Err(i) => elements.insert(i, e),
                }
            }
        }
        (C::CounterDelta { ts, delta }, C::CounterDelta { ts: nts, delta: nd }) => {
            *ts = (*ts).max(nts);
            *delta = delta.wrapping_add(nd);
        }
        // A counter deletion wins over any increment, whatever the timestamps.
        (C::CounterDelta { .. }, dead @ C::Atomic { value: None, .. }) => *slot = dead,
        (C::Atomic { value: None, .. }, C::CounterDelta { .. }) => {}
        // Different kinds for one column (a schema change in between): the later write wins.
        (old, new) => {
            if update_ts(&new) >= update_ts(old) {
                *slot = new;
            }
        }
    }
}

fn update_ts(u: &CellUpdate) -> Timestamp {
    match u {
        CellUpdate::Atomic { ts, .. } | CellUpdate::CounterDelta { ts, .. } => *ts,
        CellUpdate::Collection {
            tombstone,
            elements,
        } => elements
            .iter()
            .map(|e| e.ts)
            .chain(*tombstone)
            .max()
            .unwrap_or(Timestamp::MIN),
    }
}

/// One version of a cell (or collection element, or row marker) for reconciliation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellVersion<'a> {
    /// Write timestamp.
    pub ts: Timestamp,
    /// The value; `None` for a tombstone.
    pub value: Option<&'a Value>,
    /// Expiry (any monotonic measure: absolute seconds in storage, TTL within a mutation).
    pub expiry: Option<u64>,
    /// TTL as written.
    pub ttl: Option<u32>,
}

/// Scylla's last-write-wins order of two versions of one cell (`Greater`: `a` wins):
/// the higher timestamp; on equal timestamps a tombstone beats a live value, then the larger
/// serialized value (unsigned bytes), then an expiring cell beats a non-expiring one, then the
/// later expiry, then the smaller TTL (written later).
pub(crate) fn compare_versions(a: &CellVersion<'_>, b: &CellVersion<'_>) -> Ordering {
    a.ts.cmp(&b.ts).then_with(|| match (a.value, b.value) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => compare_serialized(x, y)
            .then_with(|| a.expiry.is_some().cmp(&b.expiry.is_some()))
            .then_with(|| a.expiry.cmp(&b.expiry))
            .then_with(|| b.ttl.cmp(&a.ttl)),
    })
}

/// Compares the serialized forms of two values (unsigned bytes), as Scylla breaks timestamp
/// ties.
fn compare_serialized(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Blob(x), Value::Blob(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => a.to_bytes().cmp(&b.to_bytes()),
    }
}

/// Order of two row markers of a mutation (`Greater`: `a` wins).
fn compare_marker(a: &Liveness, b: &Liveness) -> Ordering {
    a.ts.cmp(&b.ts)
        .then_with(|| a.ttl.is_some().cmp(&b.ttl.is_some()))
        .then_with(|| a.ttl.cmp(&b.ttl))
}
