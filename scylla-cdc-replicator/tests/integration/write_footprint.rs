//! The write budget (`--max-mib-in-flight`) counts what a queued change really holds: for
//! every kind of value, `writes_footprint` is at least the heap bytes its `Write`s allocate
//! plus the serialized copy the driver makes of its values. (Counting the values' wire sizes
//! alone let a backlog of small changes hold about twelve times the budget.)
//!
//! Allocations are counted by a global allocator, per thread: the test binary runs other
//! tests on other threads meanwhile, and only what the measuring thread allocates counts.

// A counting allocator needs `unsafe impl GlobalAlloc`; it only forwards to the system's.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use scylla::value::CqlValue;
use scylla_cdc_replicator::destination::{writes_footprint, writes_size};
use scylla_cdc_replicator::translate::{Assign, Shape, Write};

thread_local! {
    /// Bytes allocated minus bytes freed by this thread through the global allocator (what
    /// one thread frees of another's allocations makes it negative). A `const` cell without
    /// a destructor: the allocator may use it at any point of a thread's life, even while
    /// thread-local storage is torn down.
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Adds `delta` bytes to this thread's count.
fn count(delta: isize) {
    let _ = LIVE.try_with(|live| live.set(live.get() + delta));
}

/// This thread's count.
fn live() -> isize {
    LIVE.with(Cell::get)
}

struct Counting;

// SAFETY: every call forwards to `System` with the same arguments; the counter is only
// arithmetic on the sizes (and allocates nothing).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The allocator of the whole test binary (one per binary): the other tests only pay a
/// thread-local addition per allocation.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The heap bytes `make` leaves allocated in the writes it returns, and the writes.
fn allocated(make: impl FnOnce() -> Vec<Write>) -> (usize, Vec<Write>) {
    let before = live();
    let writes = make();
    let heap = usize::try_from(live() - before).expect("the writes hold a heap");
    (heap, writes)
}

/// `INSERT (pk, ck, v) ... USING TTL ? AND TIMESTAMP ?` as the translator builds it.
fn insert(values: Vec<Option<CqlValue>>) -> Write {
    let mut all = Vec::with_capacity(values.len() + 4);
    all.extend([Some(CqlValue::BigInt(1)), Some(CqlValue::BigInt(2))]);
    all.extend(values);
    all.extend([None, Some(CqlValue::BigInt(1_700_000_000_000_000))]);
    Write {
        shape: Shape::Insert {
            columns: (2..2 + all.len() as u16 - 4).collect(),
        },
        values: all,
    }
}

/// A text value of `n` characters.
fn text(n: usize) -> CqlValue {
    CqlValue::Text("x".repeat(n))
}

/// A UDT value with a text field and a null one.
fn udt() -> CqlValue {
    CqlValue::UserDefinedType {
        keyspace: "ks".into(),
        name: "address".into(),
        fields: vec![("street".into(), Some(text(40))), ("zip".into(), None)],
    }
}

#[test]
fn the_budget_counts_at_least_what_a_queued_change_holds() {
    type Case = (&'static str, Box<dyn Fn() -> Vec<Write>>);
    let cases: Vec<Case> = vec![
        (
            "a small insert (the `scylla-cdc-bench replicator` backlog)",
            Box::new(|| vec![insert(vec![Some(CqlValue::Blob(vec![0xAB; 16]))])]),
        ),
        (
            "an insert of several columns",
            Box::new(|| {
                vec![insert(vec![
                    Some(CqlValue::Int(7)),
                    Some(text(10)),
                    None,
                    Some(CqlValue::Double(1.5)),
                ])]
            }),
        ),
        (
            "a large blob",
            Box::new(|| vec![insert(vec![Some(CqlValue::Blob(vec![1; 100_000]))])]),
        ),
        (
            "collections and a UDT",
            Box::new(|| {
                vec![insert(vec![
                    Some(CqlValue::List((0..50).map(CqlValue::Int).collect())),
                    Some(CqlValue::Map(
                        (0..20).map(|i| (text(8), CqlValue::BigInt(i))).collect(),
                    )),
                    Some(CqlValue::Set(vec![udt(), udt()])),
                    Some(CqlValue::Tuple(vec![Some(text(5)), None])),
                ])]
            }),
        ),
        (
            "an update and a delete of one change",
            Box::new(|| {
                vec![
                    Write {
                        shape: Shape::Update {
                            static_row: false,
                            assigns: vec![Assign::Set(2), Assign::Add(3)],
                        },
                        values: vec![
                            None,
                            Some(CqlValue::BigInt(5)),
                            Some(text(3)),
                            Some(CqlValue::Set(vec![text(4)])),
                            Some(CqlValue::BigInt(1)),
                            Some(CqlValue::BigInt(2)),
                        ],
                    },
                    Write {
                        shape: Shape::Delete { eq: 1, slice: None },
                        values: vec![Some(CqlValue::BigInt(5)), Some(CqlValue::BigInt(1))],
                    },
                ]
            }),
        ),
    ];
    for (what, make) in &cases {
        // The vector the change's writes travel in counts too.
        let (heap, writes) = allocated(make);
        let serialized = writes_size(&writes);
        let counted = writes_footprint(&writes);
        assert!(
            counted >= heap + serialized,
            "{what}: the budget counts {counted} bytes, the writes hold {heap} and their \
             serialized values {serialized}"
        );
        // Not wildly more either: the budget would then slow replication for nothing.
        assert!(
            counted <= 2 * (heap + serialized) + 1024,
            "{what}: the budget counts {counted} bytes for {heap} + {serialized}"
        );
    }
}
