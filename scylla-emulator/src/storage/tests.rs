//! Tests of the storage engine: reconciliation rules, tombstones, TTLs, collections,
//! counters, merging, reads (slices, reversed, paging, token order), and a rate measurement.

use std::sync::Arc;

use bytes::Bytes;

use super::*;
use crate::types::value::Value;
use crate::types::{CqlType, UserType, timeuuid};

const V: ColumnId = ColumnId(1);
const W: ColumnId = ColumnId(2);
const S: ColumnId = ColumnId(3);
const C: ColumnId = ColumnId(4);
const NOW: Now = Now(1_000_000);

fn pk(n: i32) -> PartitionKey {
    // Token = n * 1000 so that token order is numeric order in tests.
    PartitionKey::new(
        i64::from(n) * 1000,
        Bytes::from(n.to_be_bytes().to_vec()),
        vec![Value::Int(n)],
    )
}

fn ck(xs: &[i32]) -> ClusteringKey {
    ClusteringKey::new(xs.iter().map(|&x| Value::Int(x)).collect())
}

fn ints(xs: &[i32]) -> Vec<Value> {
    xs.iter().map(|&x| Value::Int(x)).collect()
}

fn set(ts: Timestamp, v: Option<i32>) -> CellUpdate {
    CellUpdate::Atomic {
        ts,
        ttl: None,
        value: v.map(Value::Int),
    }
}

fn set_ttl(ts: Timestamp, v: i32, ttl: u32) -> CellUpdate {
    CellUpdate::Atomic {
        ts,
        ttl: Some(ttl),
        value: Some(Value::Int(v)),
    }
}

/// A mutation writing cells into one clustering row.
fn write(p: i32, key: &[i32], cells: Vec<(ColumnId, CellUpdate)>) -> PartitionMutation {
    let mut m = PartitionMutation::new(pk(p));
    let row = m.row_mut(&ck(key));
    for (c, u) in cells {
        row.set_cell(c, u);
    }
    m
}

/// An INSERT: marker plus cells.
fn insert(
    p: i32,
    key: &[i32],
    ts: Timestamp,
    cells: Vec<(ColumnId, Option<i32>)>,
) -> PartitionMutation {
    let mut m = write(
        p,
        key,
        cells.into_iter().map(|(c, v)| (c, set(ts, v))).collect(),
    );
    m.row_mut(&ck(key)).marker = Some(Liveness { ts, ttl: None });
    m
}

fn table(desc: &[bool]) -> TableData {
    TableData::new(desc).expect("table")
}

fn get(t: &TableData, p: i32, key: &[i32], col: ColumnId, now: Now) -> Option<Value> {
    let part = t.partition(pk(p).token, &pk(p).bytes, now)?;
    let row = part.row(&ints(key))?;
    row.cell(col).and_then(|c| c.to_value(&CqlType::Int))
}

fn keys(
    t: &TableData,
    p: i32,
    slices: &[ClusteringRange],
    reversed: bool,
    after: Option<&[i32]>,
) -> Vec<Vec<Value>> {
    let part = t
        .partition(pk(p).token, &pk(p).bytes, NOW)
        .expect("partition");
    let after = after.map(ints);
    part.rows(slices, reversed, after.as_deref())
        .map(|r| r.key().to_vec())
        .collect()
}

fn range(start: ClusteringBound, end: ClusteringBound) -> ClusteringRange {
    ClusteringRange::new(start, end)
}

#[test]
fn higher_timestamp_wins_in_any_order() {
    let mut t = table(&[false]);
    t.apply(&write(1, &[1], vec![(V, set(20, Some(2)))]), NOW);
    t.apply(&write(1, &[1], vec![(V, set(10, Some(1)))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), Some(Value::Int(2)));
    t.apply(&write(1, &[1], vec![(V, set(30, Some(3)))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), Some(Value::Int(3)));
}

#[test]
fn equal_timestamps_tombstone_then_larger_value_then_expiry() {
    let mut t = table(&[false]);
    t.apply(&write(1, &[1], vec![(V, set(10, Some(5)))]), NOW);
    t.apply(&write(1, &[1], vec![(V, set(10, None))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), None, "tombstone wins at equal ts");
    t.apply(&write(1, &[1], vec![(V, set(10, Some(9)))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), None, "and keeps winning");

    // Larger serialized value wins: 0x00000002 > 0x00000001, and -1 (0xffffffff) > 2.
    t.apply(&write(1, &[2], vec![(V, set(10, Some(2)))]), NOW);
    t.apply(&write(1, &[2], vec![(V, set(10, Some(1)))]), NOW);
    assert_eq!(get(&t, 1, &[2], V, NOW), Some(Value::Int(2)));
    t.apply(&write(1, &[2], vec![(V, set(10, Some(-1)))]), NOW);
    assert_eq!(
        get(&t, 1, &[2], V, NOW),
        Some(Value::Int(-1)),
        "bytes, not numbers"
    );

    // Same value: an expiring cell beats a non-expiring one, then the later expiry wins.
    t.apply(&write(1, &[3], vec![(V, set(10, Some(7)))]), NOW);
    t.apply(&write(1, &[3], vec![(V, set_ttl(10, 7, 100))]), NOW);
    let ttl_of = |t: &TableData| {
        let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
        match part.row(&ints(&[3])).unwrap().cell(V).unwrap() {
            CellView::Atomic { ttl, .. } => ttl,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(ttl_of(&t), Some(100));
    t.apply(&write(1, &[3], vec![(V, set_ttl(10, 7, 50))]), NOW);
    assert_eq!(ttl_of(&t), Some(100));
    t.apply(&write(1, &[3], vec![(V, set_ttl(10, 7, 200))]), NOW);
    assert_eq!(ttl_of(&t), Some(200));
}

#[test]
fn ttl_expiry_is_checked_on_read_and_expired_cells_still_shadow() {
    let mut t = table(&[false]);
    t.apply(&write(1, &[1], vec![(V, set_ttl(10, 1, 5))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, Now(NOW.0 + 4)), Some(Value::Int(1)));
    let part = t
        .partition(pk(1).token, &pk(1).bytes, Now(NOW.0 + 2))
        .unwrap();
    let cell = part.row(&ints(&[1])).unwrap().cell(V).unwrap();
    assert!(matches!(
        cell,
        CellView::Atomic {
            ts: 10,
            ttl: Some(3),
            ..
        }
    ));
    // Dead at expiry: no cell, and the row (no marker) is gone.
    let later = Now(NOW.0 + 5);
    assert!(
        t.partition(pk(1).token, &pk(1).bytes, later)
            .unwrap()
            .row(&ints(&[1]))
            .is_none()
    );
    assert_eq!(t.partitions(PartitionStart::First, later).count(), 0);
    // An older write does not resurrect under the expired cell.
    t.apply(&write(1, &[1], vec![(V, set(9, Some(2)))]), later);
    assert_eq!(get(&t, 1, &[1], V, later), None);
    // TTL 0 means no TTL.
    t.apply(&write(1, &[2], vec![(V, set_ttl(10, 1, 0))]), NOW);
    assert_eq!(
        get(&t, 1, &[2], V, Now(i64::from(u32::MAX))),
        Some(Value::Int(1))
    );
}

#[test]
fn zero_and_negative_timestamps_are_ordinary() {
    let mut t = table(&[false]);
    t.apply(&insert(1, &[1], -5, vec![(V, Some(1))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), Some(Value::Int(1)));
    t.apply(&write(1, &[1], vec![(V, set(0, Some(2)))]), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), Some(Value::Int(2)));
    let mut del = PartitionMutation::new(pk(1));
    del.row_mut(&ck(&[1])).deletion = Some(-1);
    t.apply(&del, NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    let row = part
        .row(&ints(&[1]))
        .expect("cell at 0 survives a tombstone at -1");
    assert_eq!(row.marker(), None, "marker at -5 is shadowed");
    assert_eq!(row.deletion(), Some(-1));
}

#[test]
fn keys_longer_than_the_comparator_do_not_panic() {
    let mut t = table(&[true]);
    let long: Vec<i32> = (0..40).collect();
    t.apply(&insert(1, &long, 1, vec![]), NOW);
    t.apply(&insert(1, &long[..39], 1, vec![]), NOW);
    assert_eq!(
        keys(&t, 1, &[ClusteringRange::full()], false, None).len(),
        2
    );
}

#[test]
fn row_marker_keeps_an_all_null_row_alive() {
    let mut t = table(&[false]);
    t.apply(&insert(1, &[1], 10, vec![(V, None)]), NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    let row = part.row(&ints(&[1])).expect("row alive through its marker");
    assert_eq!(row.marker(), Some(MarkerView { ts: 10, ttl: None }));
    assert_eq!(row.cells().count(), 0);
    assert_eq!(part.all_rows().count(), 1);
    // An expiring marker (INSERT ... USING TTL) dies with its TTL.
    let mut m = PartitionMutation::new(pk(2));
    m.row_mut(&ck(&[1])).marker = Some(Liveness {
        ts: 10,
        ttl: Some(5),
    });
    t.apply(&m, NOW);
    assert!(
        t.partition(pk(2).token, &pk(2).bytes, Now(NOW.0 + 4))
            .unwrap()
            .row(&ints(&[1]))
            .is_some()
    );
    assert!(
        t.partition(pk(2).token, &pk(2).bytes, Now(NOW.0 + 5))
            .unwrap()
            .row(&ints(&[1]))
            .is_none()
    );
}

#[test]
fn update_only_row_disappears_when_its_cells_are_deleted() {
    let mut t = table(&[false]);
    t.apply(
        &write(1, &[1], vec![(V, set(10, Some(1))), (W, set(10, Some(2)))]),
        NOW,
    );
    t.apply(&write(1, &[1], vec![(V, set(11, None))]), NOW);
    assert!(
        t.partition(pk(1).token, &pk(1).bytes, NOW)
            .unwrap()
            .row(&ints(&[1]))
            .is_some()
    );
    t.apply(&write(1, &[1], vec![(W, set(11, None))]), NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    assert!(part.row(&ints(&[1])).is_none());
    assert!(!part.has_live_data());
    // Whereas an inserted row survives the deletion of its cells.
    t.apply(&insert(1, &[2], 10, vec![(V, Some(1))]), NOW);
    t.apply(&write(1, &[2], vec![(V, set(11, None))]), NOW);
    assert!(
        t.partition(pk(1).token, &pk(1).bytes, NOW)
            .unwrap()
            .row(&ints(&[2]))
            .is_some()
    );
}

#[test]
fn row_tombstone_shadows_older_and_equal_data_only() {
    let mut t = table(&[false]);
    t.apply(&insert(1, &[1], 10, vec![(V, Some(1))]), NOW);
    let mut del = PartitionMutation::new(pk(1));
    del.row_mut(&ck(&[1])).deletion = Some(10);
    t.apply(&del, NOW);
    assert!(
        t.partition(pk(1).token, &pk(1).bytes, NOW)
            .unwrap()
            .row(&ints(&[1]))
            .is_none()
    );
    // Late, older write: shadowed.
    t.apply(&write(1, &[1], vec![(W, set(5, Some(5)))]), NOW);
    assert_eq!(get(&t, 1, &[1], W, NOW), None);
    // Newer write: visible, the old cells are not.
    t.apply(&write(1, &[1], vec![(W, set(11, Some(6)))]), NOW);
    assert_eq!(get(&t, 1, &[1], W, NOW), Some(Value::Int(6)));
    assert_eq!(get(&t, 1, &[1], V, NOW), None);
}

#[test]
fn partition_tombstone_then_newer_insert() {
    let mut t = table(&[false]);
    for k in 0..3 {
        t.apply(&insert(1, &[k], 10, vec![(V, Some(k))]), NOW);
    }
    let mut s = PartitionMutation::new(pk(1));
    s.static_row_mut().set_cell(S, set(10, Some(99)));
    t.apply(&s, NOW);
    let mut del = PartitionMutation::new(pk(1));
    del.delete_partition(20);
    t.apply(&del, NOW);
    assert_eq!(t.partitions(PartitionStart::First, NOW).count(), 0);
    assert_eq!(t.row_count(), 0, "shadowed rows are purged");
    t.apply(&insert(1, &[5], 15, vec![(V, Some(5))]), NOW);
    assert_eq!(
        t.partitions(PartitionStart::First, NOW).count(),
        0,
        "older insert stays deleted"
    );
    t.apply(&insert(1, &[5], 21, vec![(V, Some(5))]), NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    assert_eq!(part.all_rows().count(), 1);
    assert!(part.static_row().is_none());
    assert_eq!(part.tombstone(), Some(20));
}

#[test]
fn static_row_is_live_with_any_live_static_cell() {
    let mut t = table(&[false]);
    let mut m = PartitionMutation::new(pk(1));
    m.static_row_mut().set_cell(S, set(10, Some(7)));
    t.apply(&m, NOW);
    let part = t
        .partitions(PartitionStart::First, NOW)
        .next()
        .expect("live through static");
    let s = part.static_row().unwrap();
    assert_eq!(s.key(), &[] as &[Value]);
    assert!(matches!(
        s.cell(S),
        Some(CellView::Atomic {
            value: Value::Int(7),
            ts: 10,
            ..
        })
    ));
    assert_eq!(part.all_rows().count(), 0);
    let mut m = PartitionMutation::new(pk(1));
    m.static_row_mut().set_cell(S, set(11, None));
    t.apply(&m, NOW);
    assert_eq!(t.partitions(PartitionStart::First, NOW).count(), 0);
}

fn fill(t: &mut TableData, p: i32, rows: &[[i32; 2]], ts: Timestamp) {
    for r in rows {
        t.apply(&insert(p, r, ts, vec![(V, Some(r[0] * 10 + r[1]))]), NOW);
    }
}

fn delete_range(
    p: i32,
    start: ClusteringBound,
    end: ClusteringBound,
    ts: Timestamp,
) -> PartitionMutation {
    let mut m = PartitionMutation::new(pk(p));
    m.range_tombstones.push(RangeTombstone { start, end, ts });
    m
}

const GRID: [[i32; 2]; 9] = [
    [1, 1],
    [1, 2],
    [1, 3],
    [2, 1],
    [2, 2],
    [2, 3],
    [3, 1],
    [3, 2],
    [3, 3],
];

#[test]
fn range_tombstones_with_open_closed_and_prefix_bounds() {
    use ClusteringBound as B;
    let all = [ClusteringRange::full()];
    // ck1 > 1 AND ck1 <= 2 (prefix bounds).
    let mut t = table(&[false, false]);
    fill(&mut t, 1, &GRID, 10);
    t.apply(
        &delete_range(1, B::exclusive(ints(&[1])), B::inclusive(ints(&[2])), 10),
        NOW,
    );
    assert_eq!(
        keys(&t, 1, &all, false, None),
        vec![
            ints(&[1, 1]),
            ints(&[1, 2]),
            ints(&[1, 3]),
            ints(&[3, 1]),
            ints(&[3, 2]),
            ints(&[3, 3])
        ]
    );
    // ck1 = 3 AND ck2 >= 2 (unbounded end within the prefix).
    t.apply(
        &delete_range(1, B::inclusive(ints(&[3, 2])), B::inclusive(ints(&[3])), 10),
        NOW,
    );
    assert_eq!(
        keys(&t, 1, &all, false, None),
        vec![ints(&[1, 1]), ints(&[1, 2]), ints(&[1, 3]), ints(&[3, 1])]
    );
    // ck1 = 1 AND ck2 < 3 AND ck2 > 1 (both exclusive).
    t.apply(
        &delete_range(
            1,
            B::exclusive(ints(&[1, 1])),
            B::exclusive(ints(&[1, 3])),
            10,
        ),
        NOW,
    );
    assert_eq!(
        keys(&t, 1, &all, false, None),
        vec![ints(&[1, 1]), ints(&[1, 3]), ints(&[3, 1])]
    );
    // Unbounded start: everything up to (1, 3) inclusive, but at an older timestamp than a
    // newer row.
    t.apply(&insert(1, &[1, 1], 12, vec![]), NOW);
    t.apply(
        &delete_range(1, B::unbounded(), B::inclusive(ints(&[1, 3])), 11),
        NOW,
    );
    assert_eq!(
        keys(&t, 1, &all, false, None),
        vec![ints(&[1, 1]), ints(&[3, 1])]
    );
    // Writes arriving later inside a deleted range are shadowed when older.
    t.apply(&insert(1, &[2, 2], 9, vec![]), NOW);
    t.apply(&insert(1, &[2, 3], 11, vec![]), NOW);
    assert_eq!(
        keys(&t, 1, &all, false, None),
        vec![ints(&[1, 1]), ints(&[2, 3]), ints(&[3, 1])]
    );
    // Degenerate range (start after end) deletes nothing.
    t.apply(
        &delete_range(1, B::exclusive(ints(&[3])), B::exclusive(ints(&[1])), 100),
        NOW,
    );
    assert_eq!(keys(&t, 1, &all, false, None).len(), 3);
}

#[test]
fn range_tombstones_and_slices_respect_desc_columns() {
    use ClusteringBound as B;
    let all = [ClusteringRange::full()];
    let mut t = table(&[false, true]);
    fill(&mut t, 1, &GRID, 10);
    // Clustering order is ck1 ASC, ck2 DESC.
    assert_eq!(
        keys(&t, 1, &all, false, None)[..3].to_vec(),
        vec![ints(&[1, 3]), ints(&[1, 2]), ints(&[1, 1])]
    );
    // ck1 = 2 AND ck2 > 1: in clustering order that is from the start of (2, _) to (2, 1)
    // exclusive; the executor swaps the bounds of a DESC column.
    t.apply(
        &delete_range(1, B::inclusive(ints(&[2])), B::exclusive(ints(&[2, 1])), 10),
        NOW,
    );
    let left = keys(&t, 1, &all, false, None);
    assert!(left.contains(&ints(&[2, 1])));
    assert!(!left.contains(&ints(&[2, 2])));
    assert!(!left.contains(&ints(&[2, 3])));
    // Slice ck1 = 3 AND ck2 >= 2, reversed: (3,2), (3,3) ascending by ck2.
    let slice = [range(B::inclusive(ints(&[3])), B::inclusive(ints(&[3, 2])))];
    assert_eq!(
        keys(&t, 1, &slice, false, None),
        vec![ints(&[3, 3]), ints(&[3, 2])]
    );
    assert_eq!(
        keys(&t, 1, &slice, true, None),
        vec![ints(&[3, 2]), ints(&[3, 3])]
    );
}

#[test]
fn reads_with_slices_reversed_and_paging() {
    use ClusteringBound as B;
    for rows in [9usize, 40] {
        // 40 rows take the B-tree path.
        let mut t = table(&[false]);
        for k in 0..rows as i32 {
            t.apply(&insert(1, &[k], 10, vec![(V, Some(k))]), NOW);
        }
        let all = [ClusteringRange::full()];
        let fwd: Vec<_> = (0..rows as i32).map(|k| ints(&[k])).collect();
        let mut rev = fwd.clone();
        rev.reverse();
        assert_eq!(keys(&t, 1, &all, false, None), fwd);
        assert_eq!(keys(&t, 1, &all, true, None), rev);
        // Paging: strictly after a key, in either direction.
        assert_eq!(keys(&t, 1, &all, false, Some(&[3])), fwd[4..].to_vec());
        assert_eq!(
            keys(&t, 1, &all, true, Some(&[3])),
            vec![ints(&[2]), ints(&[1]), ints(&[0])]
        );
        assert!(keys(&t, 1, &all, false, Some(&[rows as i32 - 1])).is_empty());
        // IN (7, 2, 5) plus an overlapping range [4, 6): sorted, merged, no duplicates.
        let slices = [
            ClusteringRange::prefix(ints(&[7])),
            ClusteringRange::prefix(ints(&[2])),
            ClusteringRange::prefix(ints(&[5])),
            range(B::inclusive(ints(&[4])), B::exclusive(ints(&[6]))),
        ];
        let want = vec![ints(&[2]), ints(&[4]), ints(&[5]), ints(&[7])];
        assert_eq!(keys(&t, 1, &slices, false, None), want);
        let mut want_rev = want.clone();
        want_rev.reverse();
        assert_eq!(keys(&t, 1, &slices, true, None), want_rev);
        assert_eq!(
            keys(&t, 1, &slices, false, Some(&[4])),
            vec![ints(&[5]), ints(&[7])]
        );
        assert_eq!(
            keys(&t, 1, &slices, true, Some(&[5])),
            vec![ints(&[4]), ints(&[2])]
        );
        assert!(keys(&t, 1, &[], false, None).is_empty());
        // Point reads and row state.
        let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
        let row = part.row(&ints(&[6])).unwrap();
        assert_eq!(row.key(), &ints(&[6])[..]);
        assert_eq!(row.clustering_key(), ck(&[6]));
        assert!(part.row(&ints(&[1000])).is_none());
    }
}

#[test]
fn partitions_iterate_in_token_order_from_a_start() {
    let mut t = table(&[]);
    for p in [5, -3, 0, 9, 2] {
        t.apply(&insert(p, &[], 10, vec![(V, Some(p))]), NOW);
    }
    let tokens = |start| {
        t.partitions(start, NOW)
            .map(|p| p.token())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        tokens(PartitionStart::First),
        vec![-3000, 0, 2000, 5000, 9000]
    );
    assert_eq!(
        tokens(PartitionStart::TokenAtLeast(2000)),
        vec![2000, 5000, 9000]
    );
    assert_eq!(tokens(PartitionStart::TokenAbove(2000)), vec![5000, 9000]);
    assert_eq!(
        tokens(PartitionStart::TokenAbove(i64::MAX)),
        Vec::<i64>::new()
    );
    assert_eq!(
        tokens(PartitionStart::AfterKey(0, pk(0).bytes)),
        vec![2000, 5000, 9000]
    );
    assert_eq!(
        tokens(PartitionStart::AtKey(0, pk(0).bytes)),
        vec![0, 2000, 5000, 9000]
    );
    let first = t.partitions(PartitionStart::First, NOW).next().unwrap();
    assert_eq!(first.key_values(), &[Value::Int(-3)]);
    assert_eq!(first.key_bytes(), &pk(-3).bytes);
    assert_eq!(t.partition_count(), 5);
    assert_eq!(t.row_count(), 5);
    // Same token, different keys: ordered by key bytes.
    let mut t2 = table(&[]);
    for b in [&b"b"[..], b"a", b"c"] {
        let key = PartitionKey::new(7, Bytes::copy_from_slice(b), vec![Value::blob(b)]);
        let mut m = PartitionMutation::new(key);
        m.row_mut(&ClusteringKey::empty()).marker = Some(Liveness { ts: 1, ttl: None });
        t2.apply(&m, NOW);
    }
    let order: Vec<_> = t2
        .partitions(PartitionStart::First, NOW)
        .map(|p| p.key_bytes().clone())
        .collect();
    assert_eq!(
        order,
        vec![
            Bytes::from_static(b"a"),
            Bytes::from_static(b"b"),
            Bytes::from_static(b"c")
        ]
    );
}

fn list_type() -> CqlType {
    CqlType::List {
        elem: Box::new(CqlType::Int),
        frozen: false,
    }
}

fn element(key: Value, ts: Timestamp, value: Option<Value>) -> ElementUpdate {
    ElementUpdate {
        key,
        ts,
        ttl: None,
        value,
    }
}

fn collection(tombstone: Option<Timestamp>, elements: Vec<ElementUpdate>) -> CellUpdate {
    CellUpdate::Collection {
        tombstone,
        elements,
    }
}

fn coll_value(t: &TableData, typ: &CqlType) -> Option<Value> {
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW)?;
    let row = part.row(&ints(&[1]))?;
    row.cell(C).and_then(|c| c.to_value(typ))
}

#[test]
fn collection_tombstone_and_newer_elements() {
    let map_t = CqlType::Map {
        key: Box::new(CqlType::Int),
        value: Box::new(CqlType::Text),
        frozen: false,
    };
    let mut t = table(&[false]);
    let e = |k: i32, ts, v: Option<&str>| element(Value::Int(k), ts, v.map(Value::text));
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(None, vec![e(1, 10, Some("a")), e(2, 10, Some("b"))]),
            )],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &map_t),
        Some(Value::map(vec![
            (Value::Int(1), Value::text("a")),
            (Value::Int(2), Value::text("b"))
        ]))
    );
    // SET m = {3: 'c'} at ts 20: tombstone at 19, element at 20.
    t.apply(
        &write(
            1,
            &[1],
            vec![(C, collection(Some(19), vec![e(3, 20, Some("c"))]))],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &map_t),
        Some(Value::map(vec![(Value::Int(3), Value::text("c"))]))
    );
    // An element older than the tombstone arriving late is shadowed; a newer one is added.
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(None, vec![e(4, 15, Some("old")), e(5, 21, Some("new"))]),
            )],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &map_t),
        Some(Value::map(vec![
            (Value::Int(3), Value::text("c")),
            (Value::Int(5), Value::text("new"))
        ]))
    );
    // Element deletion.
    t.apply(
        &write(1, &[1], vec![(C, collection(None, vec![e(3, 22, None)]))]),
        NOW,
    );
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    let Some(CellView::Collection(view)) = part.row(&ints(&[1])).unwrap().cell(C) else {
        panic!("collection");
    };
    let elems: Vec<_> = view
        .iter()
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    assert_eq!(elems, vec![(Value::Int(5), Value::text("new"))]);
    // DELETE m: no live element left, the column reads as null and the row (no marker) goes.
    t.apply(
        &write(1, &[1], vec![(C, collection(Some(30), vec![]))]),
        NOW,
    );
    assert_eq!(coll_value(&t, &map_t), None);
    assert!(t.partitions(PartitionStart::First, NOW).next().is_none());
}

#[test]
fn list_elements_read_in_timeuuid_order_and_sets_and_udts_assemble() {
    let mut t = table(&[false]);
    // Keys whose byte order differs from their time order (time_low is the first field).
    let k_early = timeuuid::from_raw(0x0000_0001_ffff_ffff, 0x8000_0000_0000_0000);
    let k_late = timeuuid::from_raw(0x0000_0002_0000_0000, 0x8000_0000_0000_0000);
    assert!(k_early.as_bytes() > k_late.as_bytes());
    let prepend = timeuuid::from_raw(1, 0x8000_0000_0000_0001);
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(
                    None,
                    vec![
                        element(Value::Timeuuid(k_late), 10, Some(Value::Int(2))),
                        element(Value::Timeuuid(k_early), 10, Some(Value::Int(1))),
                    ],
                ),
            )],
        ),
        NOW,
    );
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(
                    None,
                    vec![element(Value::Timeuuid(prepend), 11, Some(Value::Int(0)))],
                ),
            )],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &list_type()),
        Some(Value::list(vec![
            Value::Int(0),
            Value::Int(1),
            Value::Int(2)
        ]))
    );

    // Sets: keys with empty values.
    let set_t = CqlType::Set {
        elem: Box::new(CqlType::Int),
        frozen: false,
    };
    let mut t = table(&[false]);
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(
                    None,
                    vec![
                        element(Value::Int(3), 10, Some(Value::Empty)),
                        element(Value::Int(-1), 10, Some(Value::Empty)),
                    ],
                ),
            )],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &set_t),
        Some(Value::set(vec![Value::Int(3), Value::Int(-1)]))
    );

    // UDT: fields by index, missing ones null.
    let udt_t = CqlType::Udt {
        def: Arc::new(UserType {
            keyspace: "ks".into(),
            name: "ut".into(),
            fields: vec![
                ("a".into(), CqlType::Int),
                ("b".into(), CqlType::Int),
                ("c".into(), CqlType::Int),
            ],
        }),
        frozen: false,
    };
    let mut t = table(&[false]);
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(
                    None,
                    vec![
                        element(Value::Smallint(2), 10, Some(Value::Int(7))),
                        element(Value::Smallint(0), 10, Some(Value::Int(5))),
                    ],
                ),
            )],
        ),
        NOW,
    );
    assert_eq!(
        coll_value(&t, &udt_t),
        Some(Value::udt(vec![
            Some(Value::Int(5)),
            None,
            Some(Value::Int(7))
        ]))
    );
}

#[test]
fn collection_elements_expire_individually() {
    let mut t = table(&[false]);
    t.apply(
        &write(
            1,
            &[1],
            vec![(
                C,
                collection(
                    None,
                    vec![
                        ElementUpdate {
                            key: Value::Int(1),
                            ts: 10,
                            ttl: Some(5),
                            value: Some(Value::Int(1)),
                        },
                        element(Value::Int(2), 10, Some(Value::Int(2))),
                    ],
                ),
            )],
        ),
        NOW,
    );
    let later = Now(NOW.0 + 5);
    let part = t.partition(pk(1).token, &pk(1).bytes, later).unwrap();
    let v = part
        .row(&ints(&[1]))
        .unwrap()
        .cell(C)
        .unwrap()
        .to_value(&list_type());
    assert_eq!(v, Some(Value::list(vec![Value::Int(2)])));
}

#[test]
fn counters_add_up_and_deletion_is_final() {
    let mut t = table(&[false]);
    let inc = |ts, d| {
        write(
            1,
            &[1],
            vec![(V, CellUpdate::CounterDelta { ts, delta: d })],
        )
    };
    t.apply(&inc(10, 5), NOW);
    t.apply(&inc(9, -2), NOW);
    t.apply(&inc(12, 10), NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    let cell = part.row(&ints(&[1])).unwrap().cell(V).unwrap();
    assert!(matches!(cell, CellView::Counter { value: 13, ts: 12 }));
    assert_eq!(cell.to_value(&CqlType::Counter), Some(Value::Bigint(13)));
    // A counter deletion wins over every increment, older or newer.
    t.apply(&write(1, &[1], vec![(V, set(1, None))]), NOW);
    t.apply(&inc(20, 1), NOW);
    assert_eq!(get(&t, 1, &[1], V, NOW), None);
    // A row tombstone shadows counters by timestamp.
    t.apply(&inc(10, 1).clone(), NOW);
    let mut t = table(&[false]);
    t.apply(
        &write(
            1,
            &[1],
            vec![(W, CellUpdate::CounterDelta { ts: 10, delta: 1 })],
        ),
        NOW,
    );
    let mut del = PartitionMutation::new(pk(1));
    del.row_mut(&ck(&[1])).deletion = Some(10);
    t.apply(&del, NOW);
    t.apply(
        &write(
            1,
            &[1],
            vec![(W, CellUpdate::CounterDelta { ts: 11, delta: 4 })],
        ),
        NOW,
    );
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    assert!(matches!(
        part.row(&ints(&[1])).unwrap().cell(W),
        Some(CellView::Counter { value: 4, .. })
    ));
}

#[test]
fn merge_reconciles_statements_of_a_batch() {
    let mut a = insert(1, &[1], 10, vec![(V, Some(1))]);
    a.row_mut(&ck(&[2])).set_cell(V, set(10, Some(5)));
    let mut b = write(1, &[1], vec![(W, set(10, Some(2))), (V, set(9, Some(0)))]);
    b.row_mut(&ck(&[2])).set_cell(V, set(10, None));
    b.row_mut(&ck(&[3])).deletion = Some(10);
    b.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::inclusive(ints(&[7])),
        end: ClusteringBound::unbounded(),
        ts: 8,
    });
    let mut c = PartitionMutation::new(pk(1));
    c.range_tombstones.push(RangeTombstone {
        start: ClusteringBound::inclusive(ints(&[7])),
        end: ClusteringBound::unbounded(),
        ts: 9,
    });
    c.delete_partition(3);
    c.row_mut(&ck(&[1])).set_cell(
        C,
        collection(
            Some(9),
            vec![element(Value::Int(1), 10, Some(Value::Int(1)))],
        ),
    );
    let mut d = PartitionMutation::new(pk(1));
    d.row_mut(&ck(&[1])).set_cell(
        C,
        collection(
            Some(5),
            vec![element(Value::Int(0), 10, Some(Value::Int(0)))],
        ),
    );
    d.row_mut(&ck(&[1])).marker = Some(Liveness {
        ts: 10,
        ttl: Some(60),
    });
    a.merge(b);
    a.merge(c);
    a.merge(d);
    assert_eq!(a.partition_tombstone, Some(3));
    assert_eq!(a.rows.len(), 3);
    let r1 = &a.rows[0].1;
    assert_eq!(r1.cell(V), Some(&set(10, Some(1))), "older write lost");
    assert_eq!(r1.cell(W), Some(&set(10, Some(2))));
    assert_eq!(
        r1.marker,
        Some(Liveness {
            ts: 10,
            ttl: Some(60)
        }),
        "expiring marker wins a tie"
    );
    match r1.cell(C) {
        Some(CellUpdate::Collection {
            tombstone,
            elements,
        }) => {
            assert_eq!(*tombstone, Some(9));
            assert_eq!(
                elements.iter().map(|e| e.key.clone()).collect::<Vec<_>>(),
                ints(&[0, 1])
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        a.rows[1].1.cell(V),
        Some(&set(10, None)),
        "tombstone wins a tie"
    );
    assert_eq!(a.rows[2].1.deletion, Some(10));
    assert_eq!(a.range_tombstones.len(), 1);
    assert_eq!(a.range_tombstones[0].ts, 9);
    // Counter deltas add up.
    let mut x = write(
        1,
        &[1],
        vec![(V, CellUpdate::CounterDelta { ts: 5, delta: 2 })],
    );
    x.merge(write(
        1,
        &[1],
        vec![(V, CellUpdate::CounterDelta { ts: 6, delta: 3 })],
    ));
    assert_eq!(
        x.rows[0].1.cell(V),
        Some(&CellUpdate::CounterDelta { ts: 6, delta: 5 })
    );
    // Applying the merged batch: row 2's tombstone won.
    let mut t = table(&[false]);
    t.apply(&a, NOW);
    assert_eq!(
        keys(&t, 1, &[ClusteringRange::full()], false, None),
        vec![ints(&[1])]
    );
}

#[test]
fn drop_column_and_truncate() {
    let mut t = table(&[false]);
    t.apply(&write(1, &[1], vec![(V, set(10, Some(1)))]), NOW);
    t.apply(
        &write(1, &[2], vec![(V, set(10, Some(1))), (W, set(10, Some(2)))]),
        NOW,
    );
    t.drop_column(V);
    assert_eq!(t.row_count(), 1);
    assert_eq!(get(&t, 1, &[2], W, NOW), Some(Value::Int(2)));
    assert_eq!(get(&t, 1, &[2], V, NOW), None);
    t.truncate();
    assert_eq!(t.partition_count(), 0);
}

#[test]
fn empty_mutations_store_nothing() {
    let mut t = table(&[false]);
    t.apply(&PartitionMutation::new(pk(1)), NOW);
    let mut m = PartitionMutation::new(pk(1));
    m.row_mut(&ck(&[1]));
    t.apply(&m, NOW);
    assert_eq!(t.partition_count(), 0);
    assert!(TableData::new(&[false; 40]).is_err());
}

#[test]
fn storage_structures_stay_small() {
    use std::mem::size_of;
    assert!(size_of::<Value>() <= 24);
    assert!(size_of::<ClusteringKey>() <= 16);
}

/// Applies one million single-row mutations (pk, ck, one int cell) and prints the rate.
/// Run with `cargo test --release -p scylla-emulator --lib storage::tests::apply_rate -- --ignored --nocapture`.
#[test]
#[ignore = "measurement: run in release mode with --ignored --nocapture"]
fn apply_rate() {
    let n = 1_000_000i32;
    let mutations: Vec<PartitionMutation> = (0..n)
        .map(|i| {
            let p = i / 100;
            let key = PartitionKey::new(
                i64::from(p).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64),
                Bytes::from(p.to_be_bytes().to_vec()),
                vec![Value::Int(p)],
            );
            let mut m = PartitionMutation::new(key);
            let row = m.row_mut(&ck(&[i % 100]));
            row.marker = Some(Liveness { ts: 1, ttl: None });
            row.set_cell(V, set(1, Some(i)));
            m
        })
        .collect();
    let mut t = table(&[false]);
    let rss_before = resident_bytes();
    let start = std::time::Instant::now();
    for m in &mutations {
        t.apply(m, NOW);
    }
    let elapsed = start.elapsed();
    assert_eq!(t.row_count(), n as usize);
    if let (Some(a), Some(b)) = (rss_before, resident_bytes()) {
        println!(
            "resident memory grew by {} bytes per row",
            b.saturating_sub(a) / n as u64
        );
    }
    println!(
        "applied {n} single-row mutations in {elapsed:?}: {:.0} mutations/s",
        f64::from(n) / elapsed.as_secs_f64()
    );
    let start = std::time::Instant::now();
    let rows: usize = t
        .partitions(PartitionStart::First, NOW)
        .map(|p| p.all_rows().count())
        .sum();
    println!("scanned {rows} rows in {:?}", start.elapsed());
}

/// Resident set size of this process (Linux), if known.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// One operation of the chunked-rows property test.
#[derive(Debug, Clone)]
enum RowsOp {
    /// INSERT of row `ck` with value `v`.
    Insert(i32, i32),
    /// Row delete of `ck`.
    Delete(i32),
    /// Range delete of `[lo, hi)`.
    DeleteRange(i32, i32),
}

fn rows_op() -> impl proptest::strategy::Strategy<Value = RowsOp> {
    use proptest::prelude::*;
    prop_oneof![
        6 => (0..400i32, any::<i32>()).prop_map(|(k, v)| RowsOp::Insert(k, v)),
        2 => (0..400i32).prop_map(RowsOp::Delete),
        1 => (0..400i32, 0..60i32).prop_map(|(lo, len)| RowsOp::DeleteRange(lo, lo + len)),
    ]
}

/// The keys `lo <= k < hi` as bounds in clustering order (reversed for a DESC column).
fn key_range(lo: i32, hi: i32, desc: bool) -> (ClusteringBound, ClusteringBound) {
    if desc {
        (
            ClusteringBound::exclusive(ints(&[hi])),
            ClusteringBound::inclusive(ints(&[lo])),
        )
    } else {
        (
            ClusteringBound::inclusive(ints(&[lo])),
            ClusteringBound::exclusive(ints(&[hi])),
        )
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Large partitions (many chunks: inserts in the middle, appends, deletes emptying
    /// chunks, range deletes across chunks) read back exactly like a sorted-map model,
    /// forwards and backwards, whole and by slices, in ASC and DESC tables.
    #[test]
    fn large_partitions_match_a_sorted_map_model(
        ops in proptest::collection::vec(rows_op(), 1..600),
        append_first in 0..300i32,
        desc in proptest::prelude::any::<bool>(),
        lo in 0..400i32,
        hi in 0..400i32,
    ) {
        use std::collections::BTreeMap;
        let mut t = table(&[desc]);
        let mut model: BTreeMap<i32, i32> = BTreeMap::new();
        let mut ts: Timestamp = 1;
        // Ascending appends first (fills chunks completely), then random operations.
        for k in 0..append_first {
            t.apply(&insert(1, &[k], ts, vec![(V, Some(k))]), NOW);
            model.insert(k, k);
            ts += 1;
        }
        for op in &ops {
            match op {
                RowsOp::Insert(k, v) => {
                    t.apply(&insert(1, &[*k], ts, vec![(V, Some(*v))]), NOW);
                    model.insert(*k, *v);
                }
                RowsOp::Delete(k) => {
                    let mut m = PartitionMutation::new(pk(1));
                    m.row_mut(&ck(&[*k])).deletion = Some(ts);
                    t.apply(&m, NOW);
                    model.remove(k);
                }
                RowsOp::DeleteRange(a, b) => {
                    let mut m = PartitionMutation::new(pk(1));
                    let (start, end) = key_range(*a, *b, desc);
                    m.range_tombstones.push(RangeTombstone { start, end, ts });
                    t.apply(&m, NOW);
                    model.retain(|k, _| k < a || k >= b);
                }
            }
            ts += 1;
        }
        let in_order: Vec<(i32, i32)> = if desc {
            model.iter().rev().map(|(k, v)| (*k, *v)).collect()
        } else {
            model.iter().map(|(k, v)| (*k, *v)).collect()
        };
        let Some(part) = t.partition(pk(1).token, &pk(1).bytes, NOW) else {
            proptest::prop_assert!(model.is_empty());
            return Ok(());
        };
        let read = |rows: Vec<RowView<'_>>| -> Vec<(i32, i32)> {
            rows.iter()
                .map(|r| {
                    let k = r.key()[0].as_int().expect("int key");
                    let v = r.cell(V).and_then(|c| c.to_value(&CqlType::Int)).and_then(|v| v.as_int()).expect("value");
                    (k, v)
                })
                .collect()
        };
        proptest::prop_assert_eq!(read(part.all_rows().collect()), in_order.clone());
        let mut reversed = in_order.clone();
        reversed.reverse();
        proptest::prop_assert_eq!(
            read(part.rows(&[ClusteringRange::full()], true, None).collect()),
            reversed
        );
        let (lo, hi) = (lo.min(hi), lo.max(hi));
        let (start, end) = key_range(lo, hi, desc);
        let slice = [range(start, end)];
        let expected: Vec<(i32, i32)> = in_order.iter().copied().filter(|(k, _)| *k >= lo && *k < hi).collect();
        proptest::prop_assert_eq!(read(part.rows(&slice, false, None).collect()), expected);
    }
}

#[test]
fn scan_rows_shows_the_dead_rows_a_read_carries_as_tombstones() {
    let mut t = table(&[false]);
    // ck 0: live; ck 1: deleted row; ck 2: only cell deleted (no marker); ck 3: expired
    // (TTL 10 written at NOW - 100); ck 4: expired, written at NOW - 20; ck 5: live.
    t.apply(&insert(1, &[0], 10, vec![(V, Some(0))]), NOW);
    let mut del = PartitionMutation::new(pk(1));
    del.row_mut(&ck(&[1])).deletion = Some(10);
    t.apply(&del, NOW);
    t.apply(&write(1, &[2], vec![(V, set(10, None))]), NOW);
    let mut expired = write(1, &[3], vec![(V, set_ttl(10, 3, 10))]);
    expired.row_mut(&ck(&[3])).marker = Some(Liveness {
        ts: 10,
        ttl: Some(10),
    });
    t.apply(&expired, Now(NOW.0 - 100));
    t.apply(
        &write(1, &[4], vec![(V, set_ttl(10, 4, 10))]),
        Now(NOW.0 - 20),
    );
    t.apply(&insert(1, &[5], 10, vec![(V, Some(5))]), NOW);
    let part = t.partition(pk(1).token, &pk(1).bytes, NOW).unwrap();
    let scan = |gc_before: i64, after: Option<&[Value]>, reversed: bool| -> Vec<String> {
        part.scan_rows(&[ClusteringRange::full()], reversed, after, gc_before)
            .map(|r| match r {
                ScanRow::Live(row) => format!("live {:?}", row.key()),
                ScanRow::Dead(key) => format!("dead {key:?}"),
            })
            .collect()
    };
    let k = |n: i32| format!("{:?}", ints(&[n]));
    // gc_grace_seconds of 10 days: every expired row is still a tombstone.
    assert_eq!(
        scan(NOW.0 - 864_000, None, false),
        vec![
            format!("live {}", k(0)),
            format!("dead {}", k(1)),
            format!("dead {}", k(2)),
            format!("dead {}", k(3)),
            format!("dead {}", k(4)),
            format!("live {}", k(5)),
        ]
    );
    // gc_grace_seconds of 50: the row written 100 s ago is purged, the one of 20 s ago is
    // not; deletions count whatever their age.
    let got = scan(NOW.0 - 50, None, false);
    assert!(!got.contains(&format!("dead {}", k(3))) && got.contains(&format!("dead {}", k(4))));
    // gc_grace_seconds of 0 (a CDC log): no expired row is left, deletions are.
    assert_eq!(
        scan(NOW.0, Some(&ints(&[0])), true),
        Vec::<String>::new(),
        "reversed, strictly before ck 0"
    );
    assert_eq!(
        scan(NOW.0, Some(&ints(&[0])), false),
        vec![
            format!("dead {}", k(1)),
            format!("dead {}", k(2)),
            format!("live {}", k(5)),
        ]
    );
    // The live rows are those of `rows`.
    assert_eq!(part.all_rows().count(), 2);
}

#[test]
fn cells_found_from_a_cursor_match_the_lookup_in_any_order() {
    let mut t = table(&[false]);
    let cols: Vec<ColumnId> = (10..20).map(ColumnId).collect();
    // Every other column set, one of them deleted, one expired.
    let mut cells: Vec<(ColumnId, CellUpdate)> = cols
        .iter()
        .step_by(2)
        .map(|&c| (c, set(10, Some(c.0 as i32))))
        .collect();
    cells.push((ColumnId(13), set(10, None)));
    cells.push((ColumnId(15), set_ttl(1, 15, 1)));
    t.apply(&write(1, &[1], cells), Now(0));
    let part = t
        .partition(pk(1).token, &pk(1).bytes, NOW)
        .expect("partition");
    let row = part.row(&ints(&[1])).expect("row");
    let want = |c: ColumnId| row.cell(c).and_then(|v| v.to_value(&CqlType::Int));
    let asked: [Vec<ColumnId>; 4] = [
        (5..25).map(ColumnId).collect(),
        (5..25).rev().map(ColumnId).collect(),
        [12, 12, 18, 10, 11, 19, 14, 30, 2, 16]
            .map(ColumnId)
            .to_vec(),
        vec![ColumnId(19), ColumnId(100), ColumnId(10)],
    ];
    for order in asked {
        let mut cursor = 0;
        for c in order.iter().copied() {
            let got = row
                .cell_from(c, &mut cursor)
                .and_then(|v| v.to_value(&CqlType::Int));
            assert_eq!(got, want(c), "column {c:?} asked in the order {order:?}");
        }
    }
    assert_eq!(want(ColumnId(12)), Some(Value::Int(12)));
    assert_eq!(want(ColumnId(13)), None);
    assert_eq!(want(ColumnId(15)), None);
}
