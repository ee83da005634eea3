//! Change → statement translation for every change kind, on the sample table of
//! `schema::tests` (`pk int, pk2 text, c1 int, c2 timestamp DESC, s int static, v text,
//! l list<int>, st set<int>, m map<text, int>, u addr, fu frozen<addr>, tu tuple`).

use super::*;
use crate::schema::tests::sample;
use scylla::value::{CqlTimestamp, CqlTimeuuid};

const T: i64 = 1_714_564_800_000_000; // 2024-05-01T12:00:00Z in µs
const NOW: i64 = T + 10_000_000; // 10 s later

fn schema() -> Arc<TableSchema> {
    Arc::new(sample())
}

fn idx(s: &TableSchema, name: &str) -> u16 {
    s.columns.iter().position(|c| c.name == name).unwrap() as u16
}

/// A row of `op` at `T` with the full key `(1, 'a', 10, 20)`.
fn row(s: &TableSchema, op: OperationType) -> LogRow {
    let mut r = LogRow::new(op, T, s.columns.len());
    set(s, &mut r, "pk", CqlValue::Int(1));
    set(s, &mut r, "pk2", CqlValue::Text("a".into()));
    set(s, &mut r, "c1", CqlValue::Int(10));
    set(s, &mut r, "c2", ts(20));
    r
}

fn ts(ms: i64) -> CqlValue {
    CqlValue::Timestamp(CqlTimestamp(ms))
}

fn set(s: &TableSchema, r: &mut LogRow, name: &str, v: CqlValue) {
    r.values[idx(s, name) as usize] = Some(v);
}

fn unset(s: &TableSchema, r: &mut LogRow, name: &str) {
    r.values[idx(s, name) as usize] = None;
}

fn del(s: &TableSchema, r: &mut LogRow, name: &str) {
    r.deleted[idx(s, name) as usize] = true;
}

fn del_elements(s: &TableSchema, r: &mut LogRow, name: &str, v: CqlValue) {
    r.deleted_elements[idx(s, name) as usize] = Some(v);
}

fn translate(s: &Arc<TableSchema>, rows: Vec<LogRow>) -> Result<Vec<Write>, TranslateError> {
    let mut t = Translator::new(s.clone());
    let mut out = Vec::new();
    for mut r in rows {
        t.translate(&mut r, NOW, &mut out)?;
    }
    Ok(out)
}

fn some(v: CqlValue) -> Option<CqlValue> {
    Some(v)
}

fn keys() -> Vec<Option<CqlValue>> {
    vec![
        some(CqlValue::Int(1)),
        some(CqlValue::Text("a".into())),
        some(CqlValue::Int(10)),
        some(ts(20)),
    ]
}

fn pk() -> Vec<Option<CqlValue>> {
    keys()[..2].to_vec()
}

fn ttl(s: i32) -> Option<CqlValue> {
    some(CqlValue::Int(s))
}

fn at() -> Option<CqlValue> {
    some(CqlValue::BigInt(T))
}

fn tuuid(n: u8) -> CqlValue {
    CqlValue::Timeuuid(CqlTimeuuid::from_bytes([n; 16]))
}

/// The bind value of `SCYLLA_TIMEUUID_LIST_INDEX(?)` for the key `tuuid(n)`: a `uuid`.
fn uuid_index(n: u8) -> CqlValue {
    CqlValue::Uuid(uuid::Uuid::from_bytes([n; 16]))
}

fn addr(street: Option<&str>, zip: Option<i32>) -> CqlValue {
    CqlValue::UserDefinedType {
        keyspace: "ks".into(),
        name: "addr".into(),
        fields: vec![
            ("street".into(), street.map(|s| CqlValue::Text(s.into()))),
            ("zip".into(), zip.map(CqlValue::Int)),
            ("geo".into(), None),
        ],
    }
}

fn update_values(front: Vec<Option<CqlValue>>, static_row: bool) -> Vec<Option<CqlValue>> {
    let mut v = vec![ttl(0), at()];
    v.extend(front);
    v.extend(if static_row { pk() } else { keys() });
    v
}

#[test]
fn insert_writes_the_row_marker_and_atomic_columns() {
    let s = schema();
    let mut r = row(&s, OperationType::RowInsert);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    del(&s, &mut r, "tu");
    let w = translate(&s, vec![r]).unwrap();
    let mut values = keys();
    values.extend([None, some(CqlValue::Text("x".into())), ttl(0), at()]);
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Insert {
                columns: vec![idx(&s, "tu"), idx(&s, "v")]
            },
            values
        }]
    );
    assert_eq!(
        statement_text(&s, "\"d\".\"t\"", &w[0].shape),
        "INSERT INTO \"d\".\"t\" (\"pk\", \"pk2\", \"c1\", \"c2\", \"tu\", \"v\") \
         VALUES (?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"
    );
}

#[test]
fn insert_of_keys_only_is_a_marker() {
    let s = schema();
    let w = translate(&s, vec![row(&s, OperationType::RowInsert)]).unwrap();
    let mut values = keys();
    values.extend([ttl(0), at()]);
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Insert { columns: vec![] },
            values
        }]
    );
}

#[test]
fn insert_with_ttl_uses_the_remaining_ttl() {
    let s = schema();
    let mut r = row(&s, OperationType::RowInsert);
    r.ttl = Some(60);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(w[0].values[w[0].values.len() - 2], ttl(50));
}

#[test]
fn expired_live_values_are_skipped_but_deletions_kept() {
    let s = schema();
    let mut r = row(&s, OperationType::RowInsert);
    r.ttl = Some(5);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    del(&s, &mut r, "m");
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(idx(&s, "m"))]
            },
            values: update_values(vec![None], false),
        }]
    );
    // Nothing left at all: no write.
    let mut r = row(&s, OperationType::RowUpdate);
    r.ttl = Some(1);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    assert_eq!(translate(&s, vec![r]).unwrap(), vec![]);
}

#[test]
fn update_and_column_delete() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    del(&s, &mut r, "fu");
    // A static value in a clustering row's change is not the row's: ignored.
    set(&s, &mut r, "s", CqlValue::Int(3));
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(idx(&s, "fu")), Assign::Set(idx(&s, "v"))]
            },
            values: update_values(vec![None, some(CqlValue::Text("x".into()))], false),
        }]
    );
    assert_eq!(
        statement_text(&s, "\"d\".\"t\"", &w[0].shape),
        "UPDATE \"d\".\"t\" USING TTL ? AND TIMESTAMP ? SET \"fu\" = ?, \"v\" = ? \
         WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?"
    );
}

#[test]
fn static_row_update_and_static_insert() {
    let s = schema();
    for op in [OperationType::RowUpdate, OperationType::RowInsert] {
        let mut r = row(&s, op);
        unset(&s, &mut r, "c1");
        unset(&s, &mut r, "c2");
        set(&s, &mut r, "s", CqlValue::Int(5));
        let w = translate(&s, vec![r]).unwrap();
        assert_eq!(
            w,
            vec![Write {
                shape: Shape::Update {
                    static_row: true,
                    assigns: vec![Assign::Set(idx(&s, "s"))]
                },
                values: update_values(vec![some(CqlValue::Int(5))], true),
            }]
        );
        assert_eq!(
            statement_text(&s, "t", &w[0].shape),
            "UPDATE t USING TTL ? AND TIMESTAMP ? SET \"s\" = ? WHERE \"pk\" = ? AND \"pk2\" = ?"
        );
    }
}

#[test]
fn set_and_map_additions_removals_and_overwrites() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "st", CqlValue::Set(vec![CqlValue::Int(1)]));
    del_elements(&s, &mut r, "st", CqlValue::Set(vec![CqlValue::Int(2)]));
    set(
        &s,
        &mut r,
        "m",
        CqlValue::Map(vec![(CqlValue::Text("k".into()), CqlValue::Int(1))]),
    );
    del(&s, &mut r, "m");
    del_elements(
        &s,
        &mut r,
        "m",
        CqlValue::Set(vec![CqlValue::Text("z".into())]),
    );
    let w = translate(&s, vec![r]).unwrap();
    let (m, st) = (idx(&s, "m"), idx(&s, "st"));
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0].shape,
        Shape::Update {
            static_row: false,
            assigns: vec![Assign::Set(m), Assign::Add(st), Assign::Remove(st)]
        }
    );
    assert_eq!(
        w[0].values,
        update_values(
            vec![
                some(CqlValue::Map(vec![(
                    CqlValue::Text("k".into()),
                    CqlValue::Int(1)
                )])),
                some(CqlValue::Set(vec![CqlValue::Int(1)])),
                some(CqlValue::Set(vec![CqlValue::Int(2)])),
            ],
            false
        )
    );
    // The overwrite and the removal of the same map cannot share a statement.
    assert_eq!(
        w[1].shape,
        Shape::Update {
            static_row: false,
            assigns: vec![Assign::Remove(m)]
        }
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "UPDATE t USING TTL ? AND TIMESTAMP ? SET \"m\" = ?, \"st\" = \"st\" + ?, \"st\" = \"st\" - ? \
         WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?"
    );
}

#[test]
fn collection_delete_is_a_null_overwrite() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    r.time_micros = T + 1; // Scylla logs `DELETE st ... USING TIMESTAMP T` at T + 1.
    del(&s, &mut r, "st");
    let w = translate(&s, vec![r]).unwrap();
    let mut values = vec![ttl(0), some(CqlValue::BigInt(T + 1)), None];
    values.extend(keys());
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(idx(&s, "st"))]
            },
            values
        }]
    );
}

#[test]
fn list_elements_keep_their_keys() {
    let s = schema();
    let l = idx(&s, "l");
    let mut r = row(&s, OperationType::RowUpdate);
    set(
        &s,
        &mut r,
        "l",
        CqlValue::Map(vec![
            (tuuid(1), CqlValue::Int(7)),
            (tuuid(2), CqlValue::Int(8)),
        ]),
    );
    del_elements(&s, &mut r, "l", CqlValue::Set(vec![tuuid(3)]));
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::ListElement(l); 3]
            },
            values: update_values(
                vec![
                    some(uuid_index(1)),
                    some(CqlValue::Int(7)),
                    some(uuid_index(2)),
                    some(CqlValue::Int(8)),
                    some(uuid_index(3)),
                    None
                ],
                false
            ),
        }]
    );
    assert!(statement_text(&s, "t", &w[0].shape).contains(
        "SET \"l\"[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?, \"l\"[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?, "
    ));
}

#[test]
fn list_overwrite_is_a_tombstone_then_elements() {
    let s = schema();
    let l = idx(&s, "l");
    let mut r = row(&s, OperationType::RowUpdate);
    set(
        &s,
        &mut r,
        "l",
        CqlValue::Map(vec![(tuuid(1), CqlValue::Int(7))]),
    );
    del(&s, &mut r, "l");
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0],
        Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(l)]
            },
            values: update_values(vec![None], false)
        }
    );
    assert_eq!(
        w[1].shape,
        Shape::Update {
            static_row: false,
            assigns: vec![Assign::ListElement(l)]
        }
    );
}

#[test]
fn insert_of_a_list_puts_the_elements_in_an_update() {
    let s = schema();
    let mut r = row(&s, OperationType::RowInsert);
    set(
        &s,
        &mut r,
        "l",
        CqlValue::Map(vec![(tuuid(1), CqlValue::Int(7))]),
    );
    del(&s, &mut r, "l");
    set(&s, &mut r, "st", CqlValue::Set(vec![CqlValue::Int(1)]));
    del(&s, &mut r, "st");
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0].shape,
        Shape::Insert {
            columns: vec![idx(&s, "l"), idx(&s, "st")]
        }
    );
    let mut values = keys();
    values.extend([
        None,
        some(CqlValue::Set(vec![CqlValue::Int(1)])),
        ttl(0),
        at(),
    ]);
    assert_eq!(w[0].values, values);
    assert_eq!(
        w[1].shape,
        Shape::Update {
            static_row: false,
            assigns: vec![Assign::ListElement(idx(&s, "l"))]
        }
    );
}

#[test]
fn udt_fields_set_and_removed() {
    let s = schema();
    let u = idx(&s, "u");
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "u", addr(Some("Main"), None));
    del_elements(&s, &mut r, "u", CqlValue::Set(vec![CqlValue::SmallInt(1)]));
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Field(u, 0), Assign::Field(u, 1)]
            },
            values: update_values(vec![some(CqlValue::Text("Main".into())), None], false),
        }]
    );
    assert!(
        statement_text(&s, "t", &w[0].shape)
            .contains("SET \"u\".\"street\" = ?, \"u\".\"zip\" = ?")
    );
    // A field index the type does not have is an error, not a panic.
    let mut r = row(&s, OperationType::RowUpdate);
    del_elements(&s, &mut r, "u", CqlValue::Set(vec![CqlValue::SmallInt(9)]));
    assert!(translate(&s, vec![r]).is_err());
}

#[test]
fn udt_overwrite_writes_the_whole_value() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "u", addr(Some("Main"), Some(5)));
    del(&s, &mut r, "u");
    let w = translate(&s, vec![r]).unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Update {
                static_row: false,
                assigns: vec![Assign::Set(idx(&s, "u"))]
            },
            values: update_values(vec![some(addr(Some("Main"), Some(5)))], false),
        }]
    );
}

#[test]
fn row_and_partition_deletes() {
    let s = schema();
    let w = translate(&s, vec![row(&s, OperationType::RowDelete)]).unwrap();
    let mut values = vec![at()];
    values.extend(keys());
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete { eq: 2, slice: None },
            values
        }]
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "DELETE FROM t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?"
    );
    let mut r = row(&s, OperationType::PartitionDelete);
    unset(&s, &mut r, "c1");
    unset(&s, &mut r, "c2");
    let w = translate(&s, vec![r]).unwrap();
    let mut values = vec![at()];
    values.extend(pk());
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete { eq: 0, slice: None },
            values
        }]
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "DELETE FROM t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ?"
    );
    // A row delete needs the whole clustering key.
    let mut r = row(&s, OperationType::RowDelete);
    unset(&s, &mut r, "c2");
    assert!(translate(&s, vec![r]).is_err());
}

/// The two rows of a range delete with the given clustering prefixes.
fn range(
    s: &TableSchema,
    start_op: OperationType,
    start: (Option<i32>, Option<i64>),
    end_op: OperationType,
    end: (Option<i32>, Option<i64>),
) -> Vec<LogRow> {
    let bound = |op, (c1, c2): (Option<i32>, Option<i64>)| {
        let mut r = row(s, op);
        unset(s, &mut r, "c1");
        unset(s, &mut r, "c2");
        if let Some(c1) = c1 {
            set(s, &mut r, "c1", CqlValue::Int(c1));
        }
        if let Some(c2) = c2 {
            set(s, &mut r, "c2", ts(c2));
        }
        r
    };
    vec![bound(start_op, start), bound(end_op, end)]
}

fn delete_values(front: Vec<CqlValue>) -> Vec<Option<CqlValue>> {
    let mut v = vec![at()];
    v.extend(pk());
    v.extend(front.into_iter().map(Some));
    v
}

#[test]
fn range_delete_on_the_first_clustering_column() {
    use OperationType::*;
    let s = schema();
    // DELETE ... WHERE c1 > 1 AND c1 <= 3
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelExclLeft,
            (Some(1), None),
            RowRangeDelInclRight,
            (Some(3), None),
        ),
    )
    .unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete {
                eq: 0,
                slice: Some(Slice {
                    gt: Some(false),
                    lt: Some(true)
                })
            },
            values: delete_values(vec![CqlValue::Int(1), CqlValue::Int(3)])
        }]
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "DELETE FROM t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" > ? AND \"c1\" <= ?"
    );
}

#[test]
fn range_delete_with_unbounded_sides() {
    use OperationType::*;
    let s = schema();
    // c1 < 3: an unbounded start is an inclusive empty prefix.
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelInclLeft,
            (None, None),
            RowRangeDelExclRight,
            (Some(3), None),
        ),
    )
    .unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete {
                eq: 0,
                slice: Some(Slice {
                    gt: None,
                    lt: Some(false)
                })
            },
            values: delete_values(vec![CqlValue::Int(3)])
        }]
    );
    // c1 >= 1
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelInclLeft,
            (Some(1), None),
            RowRangeDelInclRight,
            (None, None),
        ),
    )
    .unwrap();
    assert_eq!(
        w[0].shape,
        Shape::Delete {
            eq: 0,
            slice: Some(Slice {
                gt: Some(true),
                lt: None
            })
        }
    );
    // Both sides unbounded cannot be written (it is not a partition delete: statics stay).
    assert!(
        translate(
            &s,
            range(
                &s,
                RowRangeDelInclLeft,
                (None, None),
                RowRangeDelInclRight,
                (None, None)
            ),
        )
        .is_err()
    );
}

#[test]
fn range_delete_of_a_prefix() {
    use OperationType::*;
    let s = schema();
    // DELETE ... WHERE c1 = 4 (prefix equality on a two-column clustering key)
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelInclLeft,
            (Some(4), None),
            RowRangeDelInclRight,
            (Some(4), None),
        ),
    )
    .unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete { eq: 1, slice: None },
            values: delete_values(vec![CqlValue::Int(4)])
        }]
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "DELETE FROM t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ?"
    );
}

#[test]
fn range_delete_on_a_descending_column() {
    use OperationType::*;
    let s = schema();
    // c2 is DESC: `c1 = 0 AND c2 > 100 AND c2 <= 500` is, in clustering order, from 500
    // (inclusive) to 100 (exclusive).
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelInclLeft,
            (Some(0), Some(500)),
            RowRangeDelExclRight,
            (Some(0), Some(100)),
        ),
    )
    .unwrap();
    assert_eq!(
        w,
        vec![Write {
            shape: Shape::Delete {
                eq: 1,
                slice: Some(Slice {
                    gt: Some(false),
                    lt: Some(true)
                })
            },
            values: delete_values(vec![CqlValue::Int(0), ts(100), ts(500)])
        }]
    );
    assert_eq!(
        statement_text(&s, "t", &w[0].shape),
        "DELETE FROM t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? \
         AND \"c2\" > ? AND \"c2\" <= ?"
    );
}

#[test]
fn range_delete_with_bounds_of_different_lengths() {
    use OperationType::*;
    let s = schema();
    // From (c1 = 1, c2 = 500) inclusive to c1 = 3 exclusive: the rest of block c1 = 1
    // (c2 <= 500, since c2 is DESC), then 1 < c1 < 3.
    let w = translate(
        &s,
        range(
            &s,
            RowRangeDelInclLeft,
            (Some(1), Some(500)),
            RowRangeDelExclRight,
            (Some(3), None),
        ),
    )
    .unwrap();
    assert_eq!(
        w,
        vec![
            Write {
                shape: Shape::Delete {
                    eq: 1,
                    slice: Some(Slice {
                        gt: None,
                        lt: Some(true)
                    })
                },
                values: delete_values(vec![CqlValue::Int(1), ts(500)])
            },
            Write {
                shape: Shape::Delete {
                    eq: 0,
                    slice: Some(Slice {
                        gt: Some(false),
                        lt: Some(false)
                    })
                },
                values: delete_values(vec![CqlValue::Int(1), CqlValue::Int(3)])
            },
        ]
    );
}

#[test]
fn malformed_range_deletes_are_errors() {
    use OperationType::*;
    let s = schema();
    let rows = range(
        &s,
        RowRangeDelInclLeft,
        (Some(1), None),
        RowRangeDelInclRight,
        (Some(2), None),
    );
    // An end without a start.
    assert!(translate(&s, vec![rows[1].clone()]).is_err());
    // A start followed by something else.
    assert!(translate(&s, vec![rows[0].clone(), row(&s, RowUpdate)]).is_err());
    // A start and an end of different changes.
    let mut other = rows[1].clone();
    other.time_micros += 1;
    assert!(translate(&s, vec![rows[0].clone(), other]).is_err());
    // A start alone is pending, not an error.
    let mut t = Translator::new(s.clone());
    let mut out = Vec::new();
    t.translate(&mut rows[0].clone(), NOW, &mut out).unwrap();
    assert!(t.has_pending_range() && out.is_empty());
}

#[test]
fn images_and_unknown_operations_write_nothing() {
    let s = schema();
    let mut r = row(&s, OperationType::PreImage);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    let mut post = r.clone();
    post.operation = OperationType::PostImage;
    let mut unknown = r.clone();
    unknown.operation = OperationType::Unknown(42);
    assert_eq!(translate(&s, vec![r, post, unknown]).unwrap(), vec![]);
}

#[test]
fn expirations_replay_as_deletes() {
    let s = schema();
    let (op, expiration) = OperationType::from_code(-3);
    assert!(expiration);
    let w = translate(&s, vec![row(&s, op)]).unwrap();
    assert_eq!(w[0].shape, Shape::Delete { eq: 2, slice: None });
}

#[test]
fn null_partition_key_is_an_error() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    unset(&s, &mut r, "pk");
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    assert!(translate(&s, vec![r]).unwrap_err().0.contains("pk"));
}

#[test]
fn wrongly_typed_collection_values_are_errors() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "l", CqlValue::Int(1));
    assert!(translate(&s, vec![r]).is_err());
    let mut r = row(&s, OperationType::RowUpdate);
    set(&s, &mut r, "u", CqlValue::Int(1));
    assert!(translate(&s, vec![r]).is_err());
    let mut r = row(&s, OperationType::RowUpdate);
    del_elements(&s, &mut r, "l", CqlValue::Int(1));
    assert!(translate(&s, vec![r]).is_err());
}

#[test]
fn remaining_ttls() {
    assert_eq!(remaining_ttl(None, T, NOW), Ttl::None);
    assert_eq!(remaining_ttl(Some(0), T, NOW), Ttl::None);
    assert_eq!(remaining_ttl(Some(60), T, NOW), Ttl::Remaining(50));
    assert_eq!(
        remaining_ttl(Some(60), T + 999_999, NOW),
        Ttl::Remaining(50)
    );
    assert_eq!(remaining_ttl(Some(10), T, NOW), Ttl::Expired);
    assert_eq!(remaining_ttl(Some(11), T, NOW), Ttl::Remaining(1));
    assert_eq!(
        remaining_ttl(Some(i64::MAX), T, NOW),
        Ttl::Remaining(i32::MAX)
    );
    // Written "in the future" (clock skew): the full TTL and a bit more.
    assert_eq!(
        remaining_ttl(Some(5), NOW + 2_000_000, NOW),
        Ttl::Remaining(7)
    );
}

/// A piece with int values: equality prefix, lower and upper bounds.
type IntPiece = (Vec<i32>, Option<(i32, bool)>, Option<(i32, bool)>);

fn int_range(start: &[i32], si: bool, end: &[i32], ei: bool) -> Vec<IntPiece> {
    let v = |xs: &[i32]| xs.iter().map(|x| CqlValue::Int(*x)).collect::<Vec<_>>();
    let i = |c: &CqlValue| match c {
        CqlValue::Int(x) => *x,
        _ => panic!("not an int"),
    };
    range_pieces(&v(start), si, &v(end), ei)
        .into_iter()
        .map(|p| {
            (
                p.eq.iter().map(i).collect(),
                p.lower.map(|(c, b)| (i(&c), b)),
                p.upper.map(|(c, b)| (i(&c), b)),
            )
        })
        .collect()
}

#[test]
fn range_pieces_cover_every_shape_of_bounds() {
    // Same column, both bounds.
    assert_eq!(
        int_range(&[1], true, &[5], false),
        vec![(vec![], Some((1, true)), Some((5, false)))]
    );
    // Shared prefix, slice on the second column.
    assert_eq!(
        int_range(&[0, 1], false, &[0, 3], false),
        vec![(vec![0], Some((1, false)), Some((3, false)))]
    );
    // Prefix equality.
    assert_eq!(
        int_range(&[7], true, &[7], true),
        vec![(vec![7], None, None)]
    );
    // A full key on both sides: a single row.
    assert_eq!(
        int_range(&[7, 8], true, &[7, 8], true),
        vec![(vec![7, 8], None, None)]
    );
    // Exclusive on an equal prefix: empty.
    assert_eq!(int_range(&[7], false, &[7], true), vec![]);
    assert_eq!(int_range(&[7], true, &[7], false), vec![]);
    // Unbounded sides.
    assert_eq!(
        int_range(&[], true, &[2], true),
        vec![(vec![], None, Some((2, true)))]
    );
    assert_eq!(
        int_range(&[2], false, &[], true),
        vec![(vec![], Some((2, false)), None)]
    );
    assert_eq!(int_range(&[], true, &[], true), vec![(vec![], None, None)]);
    assert_eq!(int_range(&[], false, &[2], true), vec![]);
    // The start is a prefix of the end: from the start of block 1 up to (1, 5).
    assert_eq!(
        int_range(&[1], true, &[1, 5], false),
        vec![(vec![1], None, Some((5, false)))]
    );
    // Different lengths and values: rest of block 1 after 2, blocks strictly between, block
    // 4 up to 6 (three levels deep on the end side).
    assert_eq!(
        int_range(&[1, 2], false, &[4, 6, 9], true),
        vec![
            (vec![1], Some((2, false)), None),
            (vec![4, 6], None, Some((9, true))),
            (vec![4], None, Some((6, false))),
            (vec![], Some((1, false)), Some((4, false))),
        ]
    );
}

// --- Lists on a destination without SCYLLA_TIMEUUID_LIST_INDEX (ListWrites::PostImage) ---

fn translate_post_image(
    s: &Arc<TableSchema>,
    rows: Vec<LogRow>,
) -> Result<Vec<Write>, TranslateError> {
    let mut t = Translator::with_list_writes(s.clone(), ListWrites::PostImage);
    let mut out = Vec::new();
    for mut r in rows {
        t.translate(&mut r, NOW, &mut out)?;
    }
    t.check_post_images()?;
    Ok(out)
}

/// The post-image of the row of [`row`] with the list `l` as the log keeps it.
fn post_image(s: &TableSchema, l: Option<Vec<(u8, i32)>>) -> LogRow {
    let mut r = row(s, OperationType::PostImage);
    set(s, &mut r, "v", CqlValue::Text("image".into()));
    if let Some(l) = l {
        let entries = l
            .into_iter()
            .map(|(k, v)| (tuuid(k), CqlValue::Int(v)))
            .collect();
        set(s, &mut r, "l", CqlValue::Map(entries));
    }
    r
}

/// `l = ?` with `value`, at `T`, TTL `ttl_s`.
fn whole_list(s: &TableSchema, value: Option<Vec<i32>>, ttl_s: i32) -> Write {
    let mut values = vec![ttl(ttl_s), at()];
    values.push(value.map(|v| CqlValue::List(v.into_iter().map(CqlValue::Int).collect())));
    values.extend(keys());
    Write {
        shape: Shape::Update {
            static_row: false,
            assigns: vec![Assign::Set(idx(s, "l"))],
        },
        values,
    }
}

/// Every kind of list change the log carries, each followed by its post-image: the list is
/// written whole from the image, in the image's key order, and no statement names
/// SCYLLA_TIMEUUID_LIST_INDEX.
#[test]
fn post_image_lists_are_written_whole_for_every_list_change() {
    let s = schema();
    let map = |e: &[(u8, i32)]| {
        CqlValue::Map(
            e.iter()
                .map(|(k, v)| (tuuid(*k), CqlValue::Int(*v)))
                .collect(),
        )
    };
    // (what, the delta's list fields, the post-image list)
    type Delta = Box<dyn Fn(&TableSchema, &mut LogRow)>;
    type Image = Option<Vec<(u8, i32)>>;
    let cases: Vec<(&str, Delta, Image)> = vec![
        (
            "append l = l + [3]",
            Box::new(move |s, r| set(s, r, "l", map(&[(9, 3)]))),
            Some(vec![(5, 1), (6, 2), (9, 3)]),
        ),
        (
            "prepend l = [0] + l",
            Box::new(move |s, r| set(s, r, "l", map(&[(1, 0)]))),
            Some(vec![(1, 0), (5, 1), (6, 2)]),
        ),
        (
            "element set l[1] = 7",
            Box::new(move |s, r| set(s, r, "l", map(&[(6, 7)]))),
            Some(vec![(5, 1), (6, 7)]),
        ),
        (
            "element delete DELETE l[0]",
            Box::new(|s, r| del_elements(s, r, "l", CqlValue::Set(vec![tuuid(5)]))),
            Some(vec![(6, 2)]),
        ),
        (
            "overwrite l = [4, 5]",
            Box::new(move |s, r| {
                set(s, r, "l", map(&[(7, 4), (8, 5)]));
                del(s, r, "l");
            }),
            Some(vec![(7, 4), (8, 5)]),
        ),
        (
            "column delete DELETE l",
            Box::new(|s, r| del(s, r, "l")),
            None,
        ),
    ];
    for (what, delta, image) in cases {
        let mut r = row(&s, OperationType::RowUpdate);
        delta(&s, &mut r);
        let want = image
            .as_ref()
            .map(|e| e.iter().map(|(_, v)| *v).collect::<Vec<i32>>());
        let w = translate_post_image(&s, vec![r, post_image(&s, image)]).unwrap();
        assert_eq!(w, vec![whole_list(&s, want, 0)], "{what}");
        for write in &w {
            assert!(
                !statement_text(&s, "t", &write.shape).contains("SCYLLA_"),
                "{what}"
            );
        }
    }
}

#[test]
fn post_image_lists_keep_the_changes_ttl_and_other_columns_come_from_the_delta() {
    let s = schema();
    let mut r = row(&s, OperationType::RowInsert);
    r.ttl = Some(100);
    set(&s, &mut r, "v", CqlValue::Text("x".into()));
    set(
        &s,
        &mut r,
        "l",
        CqlValue::Map(vec![(tuuid(1), CqlValue::Int(7))]),
    );
    del(&s, &mut r, "l");
    let w = translate_post_image(&s, vec![r, post_image(&s, Some(vec![(1, 7)]))]).unwrap();
    assert_eq!(w.len(), 2, "{w:#?}");
    // The INSERT has the row marker and `v` (not the image's `v`), not the list.
    assert_eq!(
        w[0].shape,
        Shape::Insert {
            columns: vec![idx(&s, "v")]
        }
    );
    assert_eq!(w[0].values[4], some(CqlValue::Text("x".into())));
    // 100 s TTL written 10 s before NOW.
    assert_eq!(w[1], whole_list(&s, Some(vec![7]), 90));
}

#[test]
fn post_image_lists_without_an_image_are_errors_unless_the_row_was_deleted() {
    let s = schema();
    let append = || {
        let mut r = row(&s, OperationType::RowUpdate);
        set(
            &s,
            &mut r,
            "l",
            CqlValue::Map(vec![(tuuid(1), CqlValue::Int(7))]),
        );
        r
    };
    // No post-image before the end of the window, or before a row of a later write.
    let e = translate_post_image(&s, vec![append()]).unwrap_err();
    assert!(e.0.contains("no post-image") && e.0.contains('l'), "{e}");
    let mut later = row(&s, OperationType::RowUpdate);
    later.time_micros = T + 1;
    set(&s, &mut later, "v", CqlValue::Text("x".into()));
    let mut t = Translator::with_list_writes(s.clone(), ListWrites::PostImage);
    let mut out = Vec::new();
    t.translate(&mut append(), NOW, &mut out).unwrap();
    let e = t.translate(&mut later, NOW, &mut out).unwrap_err();
    assert!(e.0.contains("no post-image"), "{e}");
    // The same write deleted the row: it has no post-image, and its deletion is written.
    let w = translate_post_image(&s, vec![append(), row(&s, OperationType::RowDelete)]).unwrap();
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(matches!(w[0].shape, Shape::Delete { .. }));
}

#[test]
fn post_image_lists_of_expired_changes_write_only_deletions() {
    let s = schema();
    let mut r = row(&s, OperationType::RowUpdate);
    r.ttl = Some(5);
    set(
        &s,
        &mut r,
        "l",
        CqlValue::Map(vec![(tuuid(1), CqlValue::Int(7))]),
    );
    del(&s, &mut r, "l");
    let w = translate_post_image(&s, vec![r, post_image(&s, Some(vec![(1, 7)]))]).unwrap();
    assert_eq!(w, vec![whole_list(&s, None, 0)]);
}

/// The sample table with a static list `sl` added.
fn schema_with_static_list() -> Arc<TableSchema> {
    let (mut columns, types) = crate::schema::tests::sample_rows();
    columns.push((
        "sl".to_owned(),
        "static".to_owned(),
        -1,
        "none".to_owned(),
        "list<int>".to_owned(),
    ));
    Arc::new(TableSchema::from_rows("ks", "t", columns, types).unwrap())
}

/// One write changing a static list and the lists of two rows (one of them with two deltas
/// of different TTLs): each post-image completes its own row, matched by key.
#[test]
fn post_image_lists_are_matched_to_their_rows() {
    let s = schema_with_static_list();
    let list = |items: &[(u8, i32)]| {
        CqlValue::Map(
            items
                .iter()
                .map(|(k, v)| (tuuid(*k), CqlValue::Int(*v)))
                .collect(),
        )
    };
    let static_row = |op| {
        let mut r = row(&s, op);
        unset(&s, &mut r, "c1");
        unset(&s, &mut r, "c2");
        r
    };
    let other_row = |op| {
        let mut r = row(&s, op);
        set(&s, &mut r, "c1", CqlValue::Int(11));
        r
    };
    let mut d_static = static_row(OperationType::RowUpdate);
    set(&s, &mut d_static, "sl", list(&[(1, 1)]));
    let mut d_row = row(&s, OperationType::RowUpdate);
    set(&s, &mut d_row, "l", list(&[(2, 2)]));
    let mut d_row_ttl = row(&s, OperationType::RowUpdate);
    d_row_ttl.ttl = Some(100);
    set(&s, &mut d_row_ttl, "l", list(&[(3, 3)]));
    let mut d_other = other_row(OperationType::RowUpdate);
    del_elements(&s, &mut d_other, "l", CqlValue::Set(vec![tuuid(4)]));
    let mut p_static = static_row(OperationType::PostImage);
    set(&s, &mut p_static, "sl", list(&[(0, 0), (1, 1)]));
    let mut p_row = row(&s, OperationType::PostImage);
    set(&s, &mut p_row, "l", list(&[(2, 2), (3, 3)]));
    let mut p_other = other_row(OperationType::PostImage);
    set(&s, &mut p_other, "l", list(&[(5, 5)]));
    // Post-images in another order than the deltas.
    let w = translate_post_image(
        &s,
        vec![
            d_static, d_row, d_row_ttl, d_other, p_other, p_row, p_static,
        ],
    )
    .unwrap();
    let ints = |v: &[i32]| {
        some(CqlValue::List(
            v.iter().map(|i| CqlValue::Int(*i)).collect(),
        ))
    };
    let mut other_keys = keys();
    other_keys[2] = some(CqlValue::Int(11));
    let sl = idx(&s, "sl");
    let l = idx(&s, "l");
    let update = |static_row, column, ttl_s, value, key: Vec<Option<CqlValue>>| {
        let mut values = vec![ttl(ttl_s), at(), value];
        values.extend(key);
        Write {
            shape: Shape::Update {
                static_row,
                assigns: vec![Assign::Set(column)],
            },
            values,
        }
    };
    assert_eq!(
        w,
        vec![
            update(false, l, 0, ints(&[5]), other_keys),
            // The last delta of the row gave its TTL (100 s written 10 s before NOW).
            update(false, l, 90, ints(&[2, 3]), keys()),
            update(true, sl, 0, ints(&[0, 1]), pk()),
        ]
    );
}
