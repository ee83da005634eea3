//! Tests of the log rows: every worked example of the semantics document ([`super::cases`]),
//! the invariants every log mutation satisfies, behaviours the examples leave out, and a
//! property test comparing images with the stored data.

use std::collections::HashMap;

use proptest::prelude::*;

use super::cases::{
    A, Builder, CASES, Case, LIST_KEY_LSB, STEP, Schema, T0, f, i, list_key, log_table, set_elems,
};
use super::*;
use crate::storage::TableData;
use crate::types::timeuuid::GREGORIAN_OFFSET;

/// Server time of every write (seconds): TTLs of a few seconds stay live throughout.
const NOW: Now = Now(T0 / 1_000_000);

const STREAM: StreamId = StreamId([
    0x7f, 0xfe, 0x0c, 0x68, 0x7f, 0xcc, 0xe8, 0x6e, 0x07, 0x83, 0x34, 0x37, 0x30, 0x00, 0x00, 0x01,
]);

/// Parses a `cdc` option map written as CQL (`{'enabled': true, 'preimage': 'full'}`).
fn parse_cdc(text: &str) -> CdcOptions {
    let unquote = |s: &str| s.trim().trim_matches('\'').to_string();
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let entries: Vec<(String, String)> = inner
        .split(',')
        .filter(|kv| !kv.trim().is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once(':').expect("key: value");
            (unquote(k), unquote(v))
        })
        .collect();
    CdcOptions::parse(&entries).expect("valid cdc options")
}

/// A base table with its data and its log table.
struct Harness {
    base: TableDef,
    log: TableDef,
    options: CdcOptions,
    data: TableData,
    log_data: TableData,
}

impl Harness {
    fn new(schema: Schema, cdc: &str) -> Self {
        Self::with_options(schema, parse_cdc(cdc))
    }

    fn with_options(schema: Schema, options: CdcOptions) -> Self {
        let base = schema.table();
        let log = log_table(&base);
        let desc: Vec<bool> = base
            .clustering_key()
            .map(|c| c.order == crate::schema::ClusteringOrder::Desc)
            .collect();
        Harness {
            data: TableData::new(&desc).expect("table"),
            log_data: TableData::new(&[false, false]).expect("log table"),
            base,
            log,
            options,
        }
    }

    /// Logs and applies each mutation, as the executor does; returns the log mutations.
    fn run(&mut self, mutations: Vec<PartitionMutation>) -> Vec<PartitionMutation> {
        let mut out = Vec::new();
        for m in mutations {
            let ctx = LogContext {
                base: &self.base,
                log: &self.log,
                options: &self.options,
                stream: STREAM,
            };
            let before = self.data.partition(m.key.token, &m.key.bytes, NOW);
            let logged = log_mutation(&ctx, before, &m, NOW);
            self.data.apply(&m, NOW);
            if let Some(l) = logged {
                check_invariants(&self.log, &self.options, &l);
                self.log_data.apply(&l, NOW);
                out.push(l);
            }
        }
        out
    }

    /// Runs one step with base timestamp `base`; returns its rendered log rows.
    fn step(&mut self, base: Timestamp, build: impl FnOnce(&mut Builder<'_>)) -> Vec<String> {
        let mut b = Builder::new(&self.base, base);
        build(&mut b);
        let mutations = b.finish();
        let logged = self.run(mutations);
        logged
            .iter()
            .flat_map(|l| render(&self.log, l, base))
            .collect()
    }
}

/// A log cell's value.
fn cell_value<'m>(row: &'m RowUpdate, log: &TableDef, name: &str) -> Option<&'m Value> {
    let id = ColumnId(log.column(name)?.id);
    match row.cell(id) {
        Some(CellUpdate::Atomic { value, .. }) => value.as_ref(),
        _ => None,
    }
}

/// The rows of a log mutation in the format of [`super::cases`].
fn render(log: &TableDef, m: &PartitionMutation, base: Timestamp) -> Vec<String> {
    let mut out = Vec::new();
    for (key, row) in &m.rows {
        let [Value::Timeuuid(time), Value::Int(seq)] = key.values() else {
            panic!("bad log clustering key {key:?}");
        };
        let mut s = format!("@{} #{seq}", timeuuid::to_micros(time) - base);
        if let Some(Value::Tinyint(op)) = cell_value(row, log, OPERATION) {
            s.push_str(&format!(" op={op}"));
        }
        if let Some(Value::Bigint(ttl)) = cell_value(row, log, TTL) {
            s.push_str(&format!(" ttl={ttl}"));
        }
        match cell_value(row, log, END_OF_BATCH) {
            Some(Value::Boolean(true)) => s.push_str(" eob"),
            Some(other) => s.push_str(&format!(" eob={other}")),
            None => {}
        }
        for c in &log.columns {
            if c.kind.is_primary_key() || [OPERATION, TTL, END_OF_BATCH].contains(&c.name.as_str())
            {
                continue;
            }
            let Some(v) = cell_value(row, log, &c.name) else {
                continue;
            };
            let name = if let Some(n) = c.name.strip_prefix(DELETED_ELEMENTS_PREFIX) {
                format!("dele_{n}")
            } else if let Some(n) = c.name.strip_prefix(DELETED_PREFIX) {
                format!("del_{n}")
            } else {
                c.name.clone()
            };
            s.push_str(&format!(" {name}={}", relabel(v).cql_literal_typed(&c.typ)));
        }
        out.push(s);
    }
    out
}

/// Replaces the builder's list keys by their labels (`'k<µs>.<n>'`).
fn relabel(v: &Value) -> Value {
    match v {
        Value::Timeuuid(u) if u.as_u64_pair().1 == LIST_KEY_LSB => {
            let raw = timeuuid::raw_timestamp(u) - GREGORIAN_OFFSET;
            let micros = i64::try_from(raw / 10).expect("time") - T0;
            Value::text(&format!("k{micros}.{}", raw % 10))
        }
        Value::Map(es) => Value::Map(es.iter().map(|(k, x)| (relabel(k), relabel(x))).collect()),
        Value::Set(es) => Value::Set(es.iter().map(relabel).collect()),
        Value::List(es) => Value::List(es.iter().map(relabel).collect()),
        Value::Udt(fs) => Value::Udt(fs.iter().map(|f| f.as_ref().map(relabel)).collect()),
        other => other.clone(),
    }
}

/// What every log mutation satisfies, whatever the write: the stream's partition, one
/// version-1 timeuuid per group in increasing order, `cdc$batch_seq_no` from 0,
/// `cdc$end_of_batch` true on the last row of a group and absent elsewhere, an operation on
/// every row, no row marker or tombstone, every cell written at the group's timestamp with
/// the CDC TTL and a value of its column's type.
fn check_invariants(log: &TableDef, options: &CdcOptions, m: &PartitionMutation) {
    assert_eq!(&m.key.bytes[..], &STREAM.0[..]);
    assert_eq!(m.key.token, cdc_token(&STREAM.0));
    assert_eq!(&m.key.values[..], &[Value::blob(STREAM.0)][..]);
    assert!(m.partition_tombstone.is_none() && m.static_row.is_none());
    assert!(m.range_tombstones.is_empty());
    assert!(!m.rows.is_empty());
    let ttl = (options.ttl > 0).then_some(options.ttl);
    let mut prev: Option<(uuid::Uuid, i32)> = None;
    for (n, (key, row)) in m.rows.iter().enumerate() {
        let [Value::Timeuuid(time), Value::Int(seq)] = key.values() else {
            panic!("bad log clustering key {key:?}");
        };
        assert_eq!(time.get_version_num(), 1);
        assert_eq!(time.get_variant(), uuid::Variant::RFC4122);
        let micros = timeuuid::to_micros(time);
        assert_eq!(timeuuid::raw_timestamp(time) % 10, GREGORIAN_OFFSET % 10);
        match prev {
            Some((t, s)) if t == *time => assert_eq!(*seq, s + 1, "sequence numbers"),
            Some((t, _)) => {
                assert!(
                    timeuuid::to_micros(&t) < micros,
                    "groups in timestamp order"
                );
                assert_eq!(*seq, 0);
            }
            None => assert_eq!(*seq, 0),
        }
        prev = Some((*time, *seq));
        let last_of_group = match m.rows.get(n + 1) {
            Some((next, _)) => next.values().first() != Some(&Value::Timeuuid(*time)),
            None => true,
        };
        let eob = cell_value(row, log, END_OF_BATCH);
        if last_of_group {
            assert_eq!(eob, Some(&Value::Boolean(true)));
        } else {
            assert_eq!(eob, None, "end_of_batch is null before the last row");
        }
        assert!(matches!(
            cell_value(row, log, OPERATION),
            Some(Value::Tinyint(0..=9))
        ));
        assert!(row.marker.is_none() && row.deletion.is_none());
        for (id, cell) in &row.cells {
            let def = log
                .columns
                .iter()
                .find(|c| ColumnId(c.id) == *id)
                .expect("a log column");
            assert!(!def.kind.is_primary_key());
            let CellUpdate::Atomic {
                ts,
                ttl: cell_ttl,
                value: Some(v),
            } = cell
            else {
                panic!("log cells are live atomic cells: {cell:?}");
            };
            assert_eq!(*ts, micros, "log cells carry the group timestamp");
            assert_eq!(*cell_ttl, ttl, "log cells carry the cdc ttl");
            assert!(v.fits(&def.typ), "{v:?} is not a {}", def.typ);
        }
    }
}

fn show(rows: &[String]) -> String {
    rows.iter().map(|r| format!("    {r}\n")).collect()
}

/// Runs a case; returns the differences.
fn run_case(case: &Case) -> Vec<String> {
    let mut h = Harness::new(case.schema, case.cdc);
    let mut failures = Vec::new();
    for (n, step) in case.steps.iter().enumerate() {
        let base = T0 + STEP * n as i64;
        let rows = h.step(base, step.build);
        if let Some(expect) = step.expect
            && rows != expect
        {
            failures.push(format!(
                "case {} step {n}: {}\n  expected:\n{}  got:\n{}",
                case.id,
                step.cql.join("; "),
                show(&expect.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
                show(&rows)
            ));
        }
    }
    failures
}

#[test]
fn worked_examples_of_the_semantics_document() {
    let failures: Vec<String> = CASES.iter().flat_map(run_case).collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    // The table covers every example of §2.3 and §2.4.
    for id in [
        "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R",
        "S", "U", "V", "W", "X", "Y", "B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10",
    ] {
        assert!(CASES.iter().any(|c| c.id == id), "missing example {id}");
    }
}

#[test]
fn cases_have_unique_ids_and_cql_for_every_step() {
    let mut ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n);
    for c in CASES {
        assert!(c.schema.cql().contains("{cdc}"));
        assert!(c.steps.iter().all(|s| !s.cql.is_empty()), "{}", c.id);
    }
}

/// Rows of the first (only) step of a one-off test.
fn rows_of(schema: Schema, cdc: &str, steps: &[fn(&mut Builder<'_>)]) -> Vec<Vec<String>> {
    let mut h = Harness::new(schema, cdc);
    steps
        .iter()
        .enumerate()
        .map(|(n, build)| h.step(T0 + STEP * n as i64, build))
        .collect()
}

#[test]
fn one_statement_on_two_partitions_gets_two_fresh_times_with_equal_micros() {
    let mut h = Harness::new(Schema::T, "{'enabled': true}");
    let mut b = Builder::new(&h.base, T0);
    b.pk(0).update(&[0], &[("v1", A::V(i(1)))]);
    b.pk(1).update(&[0], &[("v1", A::V(i(1)))]);
    let muts = b.finish();
    let logged = h.run(muts);
    assert_eq!(logged.len(), 2);
    let time = |m: &PartitionMutation| m.rows[0].0.values()[0].clone();
    let (a, b) = (time(&logged[0]), time(&logged[1]));
    assert_ne!(a, b);
    let micros = |v: &Value| match v {
        Value::Timeuuid(u) => timeuuid::to_micros(u),
        _ => panic!("not a timeuuid"),
    };
    assert_eq!(micros(&a), T0);
    assert_eq!(micros(&b), T0);
}

#[test]
fn an_empty_change_logs_nothing() {
    let h = Harness::new(Schema::Tc, "{'enabled': true, 'preimage': true}");
    let ctx = LogContext {
        base: &h.base,
        log: &h.log,
        options: &h.options,
        stream: STREAM,
    };
    // `SET m = m + {}` and a mutation with nothing in it.
    let mut b = Builder::new(&h.base, T0);
    b.update(&[0], &[("m", A::Add(vec![]))]);
    let m = b.finish().remove(0);
    assert!(log_mutation(&ctx, None, &m, NOW).is_none());
    let empty = PartitionMutation::new(m.key.clone());
    assert!(log_mutation(&ctx, None, &empty, NOW).is_none());
}

#[test]
fn nothing_is_logged_when_cdc_is_disabled() {
    let h = Harness::new(Schema::T, "{'enabled': false}");
    let ctx = LogContext {
        base: &h.base,
        log: &h.log,
        options: &h.options,
        stream: STREAM,
    };
    let mut b = Builder::new(&h.base, T0);
    b.insert(&[0], &[("v1", A::V(i(1)))]);
    let m = b.finish().remove(0);
    assert!(log_mutation(&ctx, None, &m, NOW).is_none());
    let enabled = CdcOptions {
        enabled: true,
        ..h.options.clone()
    };
    let ctx = LogContext {
        options: &enabled,
        ..ctx
    };
    assert!(log_mutation(&ctx, None, &m, NOW).is_some());
}

#[test]
fn a_degenerate_range_delete_logs_nothing() {
    let rows = rows_of(
        Schema::T,
        "{'enabled': true}",
        &[|b| {
            // ck > 2 AND ck < 1
            b.delete_range((&[2], false), (&[1], false));
        }],
    );
    assert_eq!(rows, vec![Vec::<String>::new()]);
}

#[test]
fn log_cells_have_no_ttl_when_the_cdc_ttl_is_zero() {
    let mut h = Harness::new(Schema::T, "{'enabled': true, 'ttl': 0}");
    let mut b = Builder::new(&h.base, T0);
    b.ttl(5).insert(&[0], &[("v1", A::V(i(1)))]);
    let muts = b.finish();
    let logged = h.run(muts);
    for (_, row) in &logged[0].rows {
        for (_, c) in &row.cells {
            assert!(matches!(c, CellUpdate::Atomic { ttl: None, .. }));
        }
    }
    // The delta still shows the TTL of the write.
    assert_eq!(
        render(&h.log, &logged[0], T0),
        ["@0 #0 op=2 ttl=5 eob ck=0 pk=0 v1=1"]
    );
}

#[test]
fn an_unsplit_batch_keeps_clustering_order_across_inserts_and_updates() {
    // One timestamp, one TTL, upserts only: Scylla does not split, rows stay in clustering
    // order whatever their operation.
    let rows = rows_of(
        Schema::T,
        "{'enabled': true}",
        &[|b| {
            b.insert(&[1], &[("v1", A::V(i(1)))])
                .update(&[0], &[("v1", A::V(i(0)))]);
        }],
    );
    assert_eq!(
        rows[0],
        ["@0 #0 op=1 ck=0 pk=0 v1=0", "@0 #1 op=2 eob ck=1 pk=0 v1=1"]
    );
    // A row delete before an upsert (in clustering order) is not split either.
    let rows = rows_of(
        Schema::T,
        "{'enabled': true}",
        &[|b| {
            b.update(&[1], &[("v1", A::V(i(1)))]).delete_row(&[0]);
        }],
    );
    assert_eq!(
        rows[0],
        ["@0 #0 op=3 ck=0 pk=0", "@0 #1 op=1 eob ck=1 pk=0 v1=1"]
    );
}

#[test]
fn a_split_group_puts_inserts_before_updates() {
    // Two TTLs: the mutation is split, and inserts come before updates.
    let rows = rows_of(
        Schema::T,
        "{'enabled': true}",
        &[|b| {
            b.insert(&[1], &[("v1", A::V(i(1)))]);
            b.ttl(5).update(&[0], &[("v1", A::V(i(0)))]);
        }],
    );
    assert_eq!(
        rows[0],
        [
            "@0 #0 op=2 ck=1 pk=0 v1=1",
            "@0 #1 op=1 ttl=5 eob ck=0 pk=0 v1=0"
        ]
    );
    // Upserts before a row delete of a later row: split, updates before deletes.
    let rows = rows_of(
        Schema::T,
        "{'enabled': true}",
        &[|b| {
            b.delete_row(&[1])
                .update(&[2], &[("v1", A::V(i(2)))])
                .update(&[0], &[("v1", A::V(i(0)))]);
        }],
    );
    assert_eq!(
        rows[0],
        [
            "@0 #0 op=1 ck=0 pk=0 v1=0",
            "@0 #1 op=1 ck=2 pk=0 v1=2",
            "@0 #2 op=3 eob ck=1 pk=0"
        ]
    );
    // Element additions after a row marker (in walk order) force a split too.
    let rows = rows_of(
        Schema::Tm,
        "{'enabled': true}",
        &[|b| {
            b.insert(&[0], &[("v1", A::V(i(0)))])
                .update(&[1], &[("m", A::Add(vec![(i(1), i(1))]))]);
        }],
    );
    assert_eq!(
        rows[0],
        [
            "@0 #0 op=2 ck=0 pk=0 v1=0",
            "@0 #1 op=1 eob ck=1 m={1: 1} pk=0"
        ]
    );
}

#[test]
fn pre_images_see_earlier_groups_of_the_same_mutation() {
    // (Writes of one cell at two timestamps of a batch are reconciled before CDC sees them,
    // so the groups below change different cells.)
    let rows = rows_of(
        Schema::T,
        "{'enabled': true, 'preimage': 'full'}",
        &[
            |b| {
                b.insert(&[0], &[("v1", A::V(i(1)))]);
            },
            |b| {
                b.update(&[0], &[("v1", A::V(i(2)))]);
                b.at(1).update(&[0], &[("v2", A::V(i(3)))]);
                // A row the batch creates has a pre-image in its later groups.
                b.at(1).insert(&[5], &[("v1", A::V(i(5)))]);
                b.at(2).update(&[5], &[("v2", A::V(i(6)))]);
            },
        ],
    );
    assert_eq!(
        rows[1],
        [
            "@0 #0 op=0 del_v2=true ck=0 pk=0 v1=1",
            "@0 #1 op=1 eob ck=0 pk=0 v1=2",
            "@1 #0 op=0 del_v2=true ck=0 pk=0 v1=2",
            "@1 #1 op=2 ck=5 pk=0 v1=5",
            "@1 #2 op=1 eob ck=0 pk=0 v2=3",
            "@2 #0 op=0 del_v2=true ck=5 pk=0 v1=5",
            "@2 #1 op=1 eob ck=5 pk=0 v2=6",
        ]
    );
}

#[test]
fn pre_images_only_for_rows_that_existed() {
    let rows = rows_of(
        Schema::T,
        "{'enabled': true, 'preimage': 'full'}",
        &[
            |b| {
                b.delete_row(&[0]);
            },
            |b| {
                b.update(&[1], &[("v1", A::V(i(1)))]);
            },
            |b| {
                // An INSERT of only the key of an existing row: a key-only image with
                // `preimage: true`, all columns with 'full'.
                b.insert(&[1], &[]);
            },
        ],
    );
    assert_eq!(rows[0], ["@0 #0 op=3 eob ck=0 pk=0"]);
    assert_eq!(rows[1], ["@0 #0 op=1 eob ck=1 pk=0 v1=1"]);
    assert_eq!(
        rows[2],
        [
            "@0 #0 op=0 del_v2=true ck=1 pk=0 v1=1",
            "@0 #1 op=2 eob ck=1 pk=0"
        ]
    );
    let rows = rows_of(
        Schema::T,
        "{'enabled': true, 'preimage': true}",
        &[
            |b| {
                b.update(&[1], &[("v1", A::V(i(1)))]);
            },
            |b| {
                b.insert(&[1], &[]);
            },
        ],
    );
    assert_eq!(
        rows[1],
        ["@0 #0 op=0 ck=1 pk=0", "@0 #1 op=2 eob ck=1 pk=0"]
    );
}

#[test]
fn a_static_pre_image_needs_a_non_null_read_static_column() {
    // `preimage: true` reads only the static columns the write touches: s2 is null, so there
    // is no image even though s1 is set. 'full' reads them all.
    let steps: &[fn(&mut Builder<'_>)] = &[
        |b| {
            b.update(&[], &[("s1", A::V(i(1)))]);
        },
        |b| {
            b.update(&[], &[("s2", A::V(i(2)))]);
        },
    ];
    let rows = rows_of(Schema::Tss, "{'enabled': true, 'preimage': true}", steps);
    assert_eq!(rows[1], ["@0 #0 op=1 eob pk=0 s2=2"]);
    let rows = rows_of(Schema::Tss, "{'enabled': true, 'preimage': 'full'}", steps);
    assert_eq!(
        rows[1],
        [
            "@0 #0 op=0 del_s2=true pk=0 s1=1",
            "@0 #1 op=1 eob pk=0 s2=2"
        ]
    );
    // With post-images every static column is read: the touched one is shown, null.
    let rows = rows_of(
        Schema::Tss,
        "{'enabled': true, 'preimage': true, 'postimage': true}",
        steps,
    );
    assert_eq!(
        rows[1],
        [
            "@0 #0 op=0 del_s2=true pk=0",
            "@0 #1 op=1 pk=0 s2=2",
            "@0 #2 op=9 eob pk=0 s1=1 s2=2"
        ]
    );
}

#[test]
fn post_images_follow_deletes_in_descending_clustering_order() {
    let cdc = "{'enabled': true, 'preimage': true, 'postimage': true}";
    // ck DESC: `ck > 0 AND ck <= 2` runs from (2, inclusive) to (0, exclusive).
    let rows = rows_of(
        Schema::Td,
        cdc,
        &[|b| {
            b.insert(&[1], &[("v", A::V(i(1)))])
                .insert(&[3], &[("v", A::V(i(3)))])
                .delete_range((&[2], true), (&[0], false));
        }],
    );
    assert_eq!(
        rows[0],
        [
            "@0 #0 op=2 ck=3 pk=0 v=3",
            "@0 #1 op=2 ck=1 pk=0 v=1",
            "@0 #2 op=5 ck=2 pk=0",
            "@0 #3 op=8 ck=0 pk=0",
            "@0 #4 op=9 eob ck=3 pk=0 v=3"
        ]
    );
}

#[test]
fn delta_keys_drops_values_and_deleted_flags() {
    let rows = rows_of(
        Schema::Tm,
        "{'enabled': true, 'delta': 'keys'}",
        &[|b| {
            b.ttl(3).update(
                &[0],
                &[("v1", A::Null), ("m", A::Assign(vec![(i(1), i(1))]))],
            );
        }],
    );
    assert_eq!(
        rows[0],
        ["@0 #0 op=1 ck=0 pk=0", "@0 #1 op=1 ttl=3 eob ck=0 pk=0"]
    );
}

#[test]
fn images_of_collections_are_frozen_snapshots() {
    let cdc = "{'enabled': true, 'preimage': true, 'postimage': true}";
    let rows = rows_of(
        Schema::Tc,
        cdc,
        &[
            |b| {
                b.update(
                    &[0],
                    &[
                        ("l", A::Append(vec![cases::t("x"), cases::t("y")])),
                        ("st", A::Add(set_elems(&[1, 2]))),
                        ("nu", A::Add(vec![(f(0), i(7))])),
                    ],
                );
            },
            |b| {
                b.update(
                    &[0],
                    &[
                        ("l", A::Remove(vec![list_key(T0, 0)])),
                        ("st", A::Remove(vec![i(1), i(2)])),
                        ("nu", A::Add(vec![(f(2), i(9))])),
                    ],
                );
            },
        ],
    );
    assert_eq!(
        rows[1],
        [
            "@0 #0 op=0 ck=0 l={'k0.0': 'x', 'k0.1': 'y'} nu={a: 7, b: null, c: null} pk=0 st={1, 2}",
            "@0 #1 op=1 dele_l={'k0.0'} dele_st={1, 2} ck=0 nu={a: null, b: null, c: 9} pk=0",
            // An emptied set stays an empty (non-null) value in the post-image, as in Scylla.
            "@0 #2 op=9 eob ck=0 l={'k0.1': 'y'} nu={a: 7, b: null, c: 9} pk=0 st={}",
        ]
    );
}

#[test]
fn a_partition_delete_in_a_batch_clears_row_images_but_not_the_static_one() {
    // As Scylla's transformer does: the partition tombstone clears the clustering rows of
    // the image state, the static row keeps what the batch wrote.
    let rows = rows_of(
        Schema::T,
        "{'enabled': true, 'postimage': true}",
        &[|b| {
            b.update(&[0], &[("s", A::V(i(1))), ("v1", A::V(i(1)))])
                .delete_partition();
        }],
    );
    assert_eq!(
        rows[0],
        [
            "@0 #0 op=1 pk=0 s=1",
            "@0 #1 op=1 ck=0 pk=0 v1=1",
            "@0 #2 op=4 pk=0",
            "@0 #3 op=9 eob pk=0 s=1"
        ]
    );
}

#[test]
fn missing_log_columns_are_skipped_without_panicking() {
    // A log table lacking columns (e.g. during a schema change) loses those cells only.
    let h = Harness::new(Schema::T, "{'enabled': true}");
    let mut log = h.log.clone();
    log.columns
        .retain(|c| c.name != "v1" && c.name != END_OF_BATCH);
    let ctx = LogContext {
        base: &h.base,
        log: &log,
        options: &h.options,
        stream: STREAM,
    };
    let mut b = Builder::new(&h.base, T0);
    b.update(&[0], &[("v1", A::V(i(1))), ("v2", A::V(i(2)))]);
    let m = b.finish().remove(0);
    let l = log_mutation(&ctx, None, &m, NOW).expect("logged");
    assert_eq!(render(&log, &l, T0), ["@0 #0 op=1 ck=0 pk=0 v2=2"]);
}

// ---------------------------------------------------------------------------------------------
// Property: images agree with the stored data
// ---------------------------------------------------------------------------------------------

/// One random statement on [`Schema::Tx`]: `(kind, ck, ck2, dt, ttl, value, elements)`.
type RandomStatement = (u8, i32, i32, i64, Option<u32>, i32, Vec<i32>);

fn random_statement() -> impl Strategy<Value = RandomStatement> {
    (
        0u8..14,
        0i32..4,
        0i32..4,
        0i64..4,
        proptest::option::of(1u32..4),
        -3i32..3,
        // Collection changes of at least one element (an empty `m = m + {}` batched with
        // other writes makes Scylla's post-image show the column as null).
        proptest::collection::vec(0i32..4, 1..3),
    )
}

fn apply_random(b: &mut Builder<'_>, (kind, ck, ck2, dt, ttl, value, elems): &RandomStatement) {
    let b = b.at(*dt);
    if let Some(t) = ttl {
        b.ttl(*t);
    }
    let v = || if *value < 0 { A::Null } else { A::V(i(*value)) };
    let entries = || elems.iter().map(|&e| (i(e), i(*value))).collect::<Vec<_>>();
    let keys = || elems.iter().map(|&e| i(e)).collect::<Vec<_>>();
    let fields = || {
        elems
            .iter()
            .map(|&e| (f((e % 3) as i16), i(*value)))
            .collect::<Vec<_>>()
    };
    match kind {
        0 => b.insert(&[*ck], &[("v", v())]),
        1 => b.insert(&[*ck], &[("m", A::Assign(entries())), ("s", v())]),
        2 => b.update(&[*ck], &[("v", v())]),
        3 => b.update(&[], &[("s", v())]),
        4 => b.update(&[*ck], &[("m", A::Add(entries()))]),
        5 => b.update(&[*ck], &[("m", A::Remove(keys()))]),
        6 => b.update(&[*ck], &[("m", A::Assign(entries()))]),
        7 => b.update(&[*ck], &[("l", A::Append(keys()))]),
        8 => b.update(&[*ck], &[("nu", A::Add(fields()))]),
        9 => b.update(
            &[*ck],
            &[(
                "nu",
                A::Remove(fields().into_iter().map(|(k, _)| k).collect()),
            )],
        ),
        10 => b.delete(&[*ck], &["m", "v", "nu"]),
        11 => b.delete_row(&[*ck]),
        12 => b.delete_range(
            (&[*ck.min(ck2)], *value >= 0),
            (&[*ck.max(ck2)], elems.is_empty()),
        ),
        _ => b.delete_partition(),
    };
}

/// A value as Scylla's images show it once stored: empty collections and all-null UDTs
/// are no value.
fn normalized(v: Option<&Value>) -> Option<Value> {
    match v {
        Some(Value::Map(e)) if e.is_empty() => None,
        Some(Value::Set(e)) if e.is_empty() => None,
        Some(Value::Udt(fs)) if fs.iter().all(Option::is_none) => None,
        other => other.cloned(),
    }
}

/// The stored values of a row, by log column name.
fn stored_row(h: &Harness, key: Option<&[Value]>) -> Option<HashMap<String, Value>> {
    let pk = Bytes::copy_from_slice(&0i32.to_be_bytes());
    let token = crate::cluster::partitioner::murmur3_token(&pk);
    let p = h.data.partition(token, &pk, NOW)?;
    let (row, kind) = match key {
        Some(k) => (p.row(k)?, ColumnKind::Regular),
        None => (p.static_row()?, ColumnKind::Static),
    };
    let mut out = HashMap::new();
    for def in h.base.value_columns().filter(|c| c.kind == kind) {
        if let Some(v) = row.cell(ColumnId(def.id)).and_then(|c| image_value(def, c)) {
            out.insert(def.name.clone(), v);
        }
    }
    Some(out)
}

/// Checks the last group's post-images against the stored rows (and, in the first group,
/// pre-images against the rows before): they must show the same values.
fn check_images(
    h: &Harness,
    log: &PartitionMutation,
    before: &HashMap<Option<Vec<Value>>, HashMap<String, Value>>,
    had_partition_delete: bool,
) {
    let Some((last_key, _)) = log.rows.last() else {
        return;
    };
    let first_time = log.rows[0].0.values()[0].clone();
    let last_time = last_key.values()[0].clone();
    for (key, row) in &log.rows {
        let op = cell_value(row, &h.log, OPERATION);
        let in_last = key.values()[0] == last_time;
        let in_first = key.values()[0] == first_time;
        let ck = cell_value(row, &h.log, "ck").cloned();
        let is_static = ck.is_none();
        let expected = match op {
            Some(Value::Tinyint(9)) if in_last && !(is_static && had_partition_delete) => {
                let key = ck.clone().map(|c| vec![c]);
                stored_row(h, key.as_deref()).unwrap_or_default()
            }
            Some(Value::Tinyint(0)) if in_first => before
                .get(&ck.clone().map(|c| vec![c]))
                .cloned()
                .expect("a pre-image of an existing row"),
            _ => continue,
        };
        let kind = if is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        };
        for def in h.base.value_columns().filter(|c| c.kind == kind) {
            let shown = normalized(cell_value(row, &h.log, &def.name));
            assert_eq!(
                shown,
                expected.get(&def.name).cloned(),
                "column {} of {row:?}",
                def.name
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Random batches never break the invariants, and full pre-images and post-images show
    /// exactly what the table held before and holds after the write.
    #[test]
    fn images_match_the_stored_rows(
        batches in proptest::collection::vec(proptest::collection::vec(random_statement(), 1..5), 1..6),
    ) {
        let mut h = Harness::new(Schema::Tx, "{'enabled': true, 'preimage': 'full', 'postimage': true}");
        for (n, batch) in batches.iter().enumerate() {
            let base = T0 + STEP * (n as i64 + 1);
            let mut before = HashMap::new();
            if let Some(s) = stored_row(&h, None) {
                before.insert(None, s);
            }
            for ck in 0..4 {
                if let Some(r) = stored_row(&h, Some(&[i(ck)])) {
                    before.insert(Some(vec![i(ck)]), r);
                }
            }
            let mut b = Builder::new(&h.base, base);
            for statement in batch {
                apply_random(&mut b, statement);
            }
            let muts = b.finish();
            let had_partition_delete = muts.iter().any(|m| m.partition_tombstone.is_some());
            let logged = h.run(muts);
            for l in &logged {
                check_images(&h, l, &before, had_partition_delete);
            }
        }
    }
}
