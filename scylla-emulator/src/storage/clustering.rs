//! Clustering keys, bounds on clustering prefixes, slices, and the table's clustering order.
//!
//! A [`ClusteringKey`] is the full list of clustering values of a row (empty for tables
//! without clustering columns). A [`ClusteringBound`] is a prefix of such a key plus
//! inclusive/exclusive; a [`ClusteringRange`] is two bounds. The table's
//! [`ClusteringComparator`] (ASC/DESC per column) orders all of them. Internally, keys and
//! bounds become [`Position`]s, which the storage keeps in ordered maps.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::types::value::Value;

/// The clustering key of a row: one value per clustering column (empty when the table has
/// none). Cheap to clone; shared between mutations, stored rows and CDC.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClusteringKey(pub Arc<[Value]>);

impl ClusteringKey {
    /// A key from its values.
    pub(crate) fn new(values: Vec<Value>) -> ClusteringKey {
        ClusteringKey(Arc::from(values))
    }

    /// The key of the only row of a table without clustering columns.
    pub(crate) fn empty() -> ClusteringKey {
        ClusteringKey(Arc::from(Vec::new()))
    }

    /// The values.
    pub(crate) fn values(&self) -> &[Value] {
        &self.0
    }
}

/// One side of a clustering range: a key prefix (empty = unbounded) and whether keys with
/// exactly that prefix are included.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClusteringBound {
    /// The prefix (the first clustering columns); empty means unbounded.
    pub prefix: Arc<[Value]>,
    /// Whether keys starting with `prefix` are inside the range.
    pub inclusive: bool,
}

impl ClusteringBound {
    /// No bound on this side.
    pub(crate) fn unbounded() -> ClusteringBound {
        ClusteringBound {
            prefix: Arc::from(Vec::new()),
            inclusive: true,
        }
    }

    /// `>= prefix` as a start, `<= prefix` as an end.
    pub(crate) fn inclusive(prefix: Vec<Value>) -> ClusteringBound {
        ClusteringBound {
            prefix: Arc::from(prefix),
            inclusive: true,
        }
    }

    /// `> prefix` as a start, `< prefix` as an end.
    pub(crate) fn exclusive(prefix: Vec<Value>) -> ClusteringBound {
        ClusteringBound {
            prefix: Arc::from(prefix),
            inclusive: false,
        }
    }

    /// Whether this side is unbounded (empty prefix).
    pub(crate) fn is_unbounded(&self) -> bool {
        self.prefix.is_empty()
    }
}

/// A range of clustering keys: `start` to `end`, both with prefix semantics.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClusteringRange {
    /// Lower bound.
    pub start: ClusteringBound,
    /// Upper bound.
    pub end: ClusteringBound,
}

impl ClusteringRange {
    /// Every row.
    pub(crate) fn full() -> ClusteringRange {
        ClusteringRange {
            start: ClusteringBound::unbounded(),
            end: ClusteringBound::unbounded(),
        }
    }

    /// Rows whose key starts with `prefix` (the whole key: one row).
    pub(crate) fn prefix(prefix: Vec<Value>) -> ClusteringRange {
        let b = ClusteringBound::inclusive(prefix);
        ClusteringRange {
            start: b.clone(),
            end: b,
        }
    }

    /// A range from two bounds.
    pub(crate) fn new(start: ClusteringBound, end: ClusteringBound) -> ClusteringRange {
        ClusteringRange { start, end }
    }
}

/// Where a [`Position`] lies relative to the keys that start with its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Side {
    /// Before every key starting with the values.
    Before,
    /// Exactly at the key (full keys only).
    At,
    /// After every key starting with the values.
    After,
}

/// A point of the clustering order: a stored row's key (`At`), or the position just before or
/// after all keys with a prefix. Carries the table's DESC mask so that it can be an ordered
/// map key.
#[derive(Clone, Debug)]
pub(crate) struct Position {
    pub(crate) values: Arc<[Value]>,
    desc: u32,
    pub(crate) side: Side,
}

impl Ord for Position {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&*self.values, &*other.values);
        for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            let c = x.cmp(y);
            if c != Ordering::Equal {
                let descending = i < MAX_CLUSTERING_COLUMNS && self.desc & (1u32 << i) != 0;
                return if descending { c.reverse() } else { c };
            }
        }
        match a.len().cmp(&b.len()) {
            Ordering::Equal => self.side.cmp(&other.side),
            // `self` is a proper prefix of `other`.
            Ordering::Less => match self.side {
                Side::After => Ordering::Greater,
                Side::Before | Side::At => Ordering::Less,
            },
            Ordering::Greater => match other.side {
                Side::After => Ordering::Less,
                Side::Before | Side::At => Ordering::Greater,
            },
        }
    }
}

impl PartialOrd for Position {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Position {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Position {}

/// The clustering order of a table: ascending or descending per clustering column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ClusteringComparator {
    desc: u32,
}

/// The most clustering columns a table may have in the embedded cluster.
pub(crate) const MAX_CLUSTERING_COLUMNS: usize = 32;

impl ClusteringComparator {
    /// The comparator of a table whose clustering columns are descending where `descending`
    /// says so; `None` with more than [`MAX_CLUSTERING_COLUMNS`] columns.
    pub(crate) fn new(descending: &[bool]) -> Option<ClusteringComparator> {
        if descending.len() > MAX_CLUSTERING_COLUMNS {
            return None;
        }
        let desc = descending
            .iter()
            .enumerate()
            .fold(0u32, |m, (i, &d)| if d { m | (1 << i) } else { m });
        Some(ClusteringComparator { desc })
    }

    /// Compares two clustering keys (or two prefixes of equal length) in clustering order.
    pub(crate) fn compare(&self, a: &[Value], b: &[Value]) -> Ordering {
        self.at(a).cmp(&self.at(b))
    }

    /// Whether `key` lies within `range`.
    #[cfg(test)]
    pub(crate) fn contains(&self, range: &ClusteringRange, key: &[Value]) -> bool {
        let (s, e) = self.range_positions(range);
        let k = self.at(key);
        s < k && k < e
    }

    pub(crate) fn at(&self, key: &[Value]) -> Position {
        Position {
            values: Arc::from(key),
            desc: self.desc,
            side: Side::At,
        }
    }

    pub(crate) fn key_position(&self, key: &ClusteringKey) -> Position {
        Position {
            values: key.0.clone(),
            desc: self.desc,
            side: Side::At,
        }
    }

    pub(crate) fn before(&self, prefix: Arc<[Value]>) -> Position {
        Position {
            values: prefix,
            desc: self.desc,
            side: Side::Before,
        }
    }

    pub(crate) fn after(&self, prefix: Arc<[Value]>) -> Position {
        Position {
            values: prefix,
            desc: self.desc,
            side: Side::After,
        }
    }

    /// The positions just before the first and just after the last key of a range.
    pub(crate) fn range_positions(&self, r: &ClusteringRange) -> (Position, Position) {
        let start = if r.start.is_unbounded() || r.start.inclusive {
            self.before(r.start.prefix.clone())
        } else {
            self.after(r.start.prefix.clone())
        };
        let end = if r.end.is_unbounded() || r.end.inclusive {
            self.after(r.end.prefix.clone())
        } else {
            self.before(r.end.prefix.clone())
        };
        (start, end)
    }

    /// Turns slices into sorted, disjoint, non-empty position ranges.
    pub(crate) fn normalize(&self, slices: &[ClusteringRange]) -> Vec<(Position, Position)> {
        let mut ranges: Vec<(Position, Position)> = slices
            .iter()
            .map(|r| self.range_positions(r))
            .filter(|(s, e)| s < e)
            .collect();
        ranges.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Position, Position)> = Vec::with_capacity(ranges.len());
        for (s, e) in ranges {
            match out.last_mut() {
                Some(last) if s <= last.1 => {
                    if e > last.1 {
                        last.1 = e;
                    }
                }
                _ => out.push((s, e)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[i32]) -> Vec<Value> {
        xs.iter().map(|&x| Value::Int(x)).collect()
    }

    #[test]
    fn prefix_bounds_surround_their_keys() {
        let c = ClusteringComparator::new(&[false, true]).unwrap();
        // (1, 9) < (1, 5) under DESC second column.
        assert_eq!(c.compare(&v(&[1, 9]), &v(&[1, 5])), Ordering::Less);
        let r = ClusteringRange::prefix(v(&[1]));
        assert!(c.contains(&r, &v(&[1, 5])));
        assert!(c.contains(&r, &v(&[1, i32::MIN])));
        assert!(!c.contains(&r, &v(&[2, 0])));
        let r = ClusteringRange::new(
            ClusteringBound::exclusive(v(&[1])),
            ClusteringBound::unbounded(),
        );
        assert!(!c.contains(&r, &v(&[1, 5])));
        assert!(c.contains(&r, &v(&[2, 5])));
        // DESC column: (1, 7) < (1, 3) in clustering order, so ck2 <= 3 on prefix (1) is
        // "from (1, 3) to the end of (1, _)".
        let r = ClusteringRange::new(
            ClusteringBound::inclusive(v(&[1, 7])),
            ClusteringBound::inclusive(v(&[1, 3])),
        );
        assert!(c.contains(&r, &v(&[1, 5])));
        assert!(!c.contains(&r, &v(&[1, 8])));
        assert!(!c.contains(&r, &v(&[1, 2])));
    }

    #[test]
    fn normalize_merges_overlaps_and_drops_empty_ranges() {
        let c = ClusteringComparator::new(&[false]).unwrap();
        let rs = c.normalize(&[
            ClusteringRange::prefix(v(&[5])),
            ClusteringRange::new(
                ClusteringBound::inclusive(v(&[1])),
                ClusteringBound::inclusive(v(&[3])),
            ),
            ClusteringRange::new(
                ClusteringBound::exclusive(v(&[3])),
                ClusteringBound::exclusive(v(&[3])),
            ),
            ClusteringRange::new(
                ClusteringBound::inclusive(v(&[2])),
                ClusteringBound::exclusive(v(&[4])),
            ),
        ]);
        assert_eq!(rs.len(), 2);
        assert_eq!(&rs[0].0.values[..], &v(&[1])[..]);
        assert_eq!(&rs[0].1.values[..], &v(&[4])[..]);
        assert_eq!(&rs[1].0.values[..], &v(&[5])[..]);
    }

    #[test]
    fn too_many_columns_is_refused() {
        assert!(ClusteringComparator::new(&[false; 33]).is_none());
        assert!(ClusteringComparator::new(&[true; 32]).is_some());
    }
}
