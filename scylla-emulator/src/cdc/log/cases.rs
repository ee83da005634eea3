//! The worked examples of the CDC semantics document (§2.3 A–Y, §2.4 B1–B10, §2.5, §2.6,
//! §3.3, §3.5) as data: schema, `cdc` options, CQL statements and the exact log rows each
//! step must produce. The unit tests of [`super`] run them on mutations built the way the
//! executor builds them ([`Step::build`]); tests through the driver can replay the CQL and
//! compare with the same expected rows.
//!
//! # Conventions
//!
//! - Each case runs on a fresh table. Step *i* has the base timestamp `T = T0 + 1000·i` µs
//!   ([`T0`]); every statement runs `USING TIMESTAMP T` (or the client timestamp `T`) unless
//!   its text says `{T+n}` / `{T-n}`, which stand for `T + n` / `T − n`.
//! - Steps whose `expect` is `None` set the table up; their log rows are not checked.
//! - An expected row reads `@<dt> #<seq> op=<op> [ttl=<n>] [eob] <column>=<value>...`:
//!   `dt` = micros of `cdc$time` − `T`, `seq` = `cdc$batch_seq_no`, `op` = `cdc$operation`,
//!   `ttl` = `cdc$ttl` when not null, `eob` = `cdc$end_of_batch` is true (it is null on the
//!   other rows). Then every other non-null column in the log table's column order, values as
//!   CQL literals; `del_X` is `"cdc$deleted_X"` and `dele_X` `"cdc$deleted_elements_X"`.
//! - List element keys (timeuuids) are shown as `'k<µs>.<n>'`: the key of the *n*-th
//!   element appended by the statement with timestamp `T0 + µs` (in CQL text, `<k<µs>.<n>>`
//!   stands for that timeuuid).
//! - The rows of a step that writes several partitions follow each other, one partition
//!   after the other (example W).

use std::sync::Arc;

use bytes::Bytes;

use crate::cluster::partitioner::murmur3_token;
use crate::schema::{ClusteringOrder, ColumnDef, ColumnKind, TableDef, TableKind, TableOptions};
use crate::storage::{
    CellUpdate, ClusteringBound, ClusteringKey, ColumnId, ElementUpdate, Liveness, PartitionKey,
    PartitionMutation, RangeTombstone, RowUpdate, Timestamp,
};
use crate::types::value::Value;
use crate::types::{CqlType, UserType, timeuuid};

/// The base timestamp of step 0 (µs).
pub(crate) const T0: Timestamp = 1_700_000_000_000_000;

/// Microseconds between the base timestamps of two steps.
pub(crate) const STEP: Timestamp = 1000;

/// The low 64 bits of the list element keys the builder generates (labelled `'k…'`).
pub(crate) const LIST_KEY_LSB: u64 = 0x8000_0000_0000_4c4b;

/// A test table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schema {
    /// `t (pk, ck, s static, v1, v2)`: §2.3, §2.4.
    T,
    /// `t2 (pk PRIMARY KEY, v)`: no clustering key (X).
    T2,
    /// `t3 (pk, ck1, ck2, ck3, v)`: multi-column clustering key (O, P).
    T3,
    /// `tv (pk, ck, v)`: B7–B9, LWT.
    Tv,
    /// `tm (pk, ck, v1, v2, m map<int, int>)`: B5, B10.
    Tm,
    /// `tc (pk, ck, a, fu frozen<ut>, l list<text>, m map<int, text>, nu ut, st set<int>)`:
    /// §2.5.
    Tc,
    /// `ts (pk, ck, vs static, vc)`: §3.5 static/clustering order.
    Ts,
    /// `tp (pk, ck, v1, v2)`: §3.5 images.
    Tp,
    /// `tmv (pk, ck, v map<int, int>)`: §3.5 map images.
    Tmv,
    /// `tk (pk, ck, i1)`: §3.3 `delta: 'keys'`.
    Tk,
    /// `tcs (pk, ck, v) WITH COMPACT STORAGE`: Y.
    Tcs,
    /// `td (pk, ck DESC, v)`: a descending clustering column.
    Td,
    /// `tss (pk, ck, s1 static, s2 static, v)`: two static columns.
    Tss,
    /// `tkeys (pk, ck)`: no regular column.
    Tkeys,
    /// `tx (pk, ck, s static, v, l list<int>, m map<int, int>, nu ut)`: random writes.
    Tx,
}

/// The user type of [`Schema::Tc`]: `CREATE TYPE ks.ut (a int, b int, c int)`.
pub(crate) const UT_CQL: &str = "CREATE TYPE ks.ut (a int, b int, c int)";

impl Schema {
    /// The `CREATE TABLE` statement (`{cdc}` stands for the case's option map).
    pub(crate) fn cql(self) -> &'static str {
        match self {
            Schema::T => {
                "CREATE TABLE ks.t (pk int, ck int, s int static, v1 int, v2 int, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::T2 => "CREATE TABLE ks.t2 (pk int PRIMARY KEY, v int) WITH cdc = {cdc}",
            Schema::T3 => {
                "CREATE TABLE ks.t3 (pk int, ck1 int, ck2 int, ck3 int, v int, \
                 PRIMARY KEY (pk, ck1, ck2, ck3)) WITH cdc = {cdc}"
            }
            Schema::Tv => {
                "CREATE TABLE ks.tv (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {cdc}"
            }
            Schema::Tm => {
                "CREATE TABLE ks.tm (pk int, ck int, v1 int, v2 int, m map<int, int>, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::Tc => {
                "CREATE TABLE ks.tc (pk int, ck int, a int, fu frozen<ut>, l list<text>, \
                 m map<int, text>, nu ut, st set<int>, PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::Ts => {
                "CREATE TABLE ks.ts (pk int, ck int, vs int static, vc int, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::Tp => {
                "CREATE TABLE ks.tp (pk int, ck int, v1 int, v2 int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {cdc}"
            }
            Schema::Tmv => {
                "CREATE TABLE ks.tmv (pk int, ck int, v map<int, int>, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {cdc}"
            }
            Schema::Tk => {
                "CREATE TABLE ks.tk (pk int, ck int, i1 int, PRIMARY KEY (pk, ck)) \
                 WITH cdc = {cdc}"
            }
            Schema::Tcs => {
                "CREATE TABLE ks.tcs (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                 WITH COMPACT STORAGE AND cdc = {cdc}"
            }
            Schema::Td => {
                "CREATE TABLE ks.td (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
                 WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {cdc}"
            }
            Schema::Tss => {
                "CREATE TABLE ks.tss (pk int, ck int, s1 int static, s2 int static, v int, \
                 PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::Tkeys => {
                "CREATE TABLE ks.tkeys (pk int, ck int, PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
            Schema::Tx => {
                "CREATE TABLE ks.tx (pk int, ck int, s int static, v int, l list<int>, \
                 m map<int, int>, nu ut, PRIMARY KEY (pk, ck)) WITH cdc = {cdc}"
            }
        }
    }

    /// The base table's definition.
    pub(crate) fn table(self) -> TableDef {
        use ColumnKind::{Clustering as Ck, PartitionKey as Pk, Regular as R, Static as S};
        use CqlType as C;
        let int = || C::Int;
        let (name, cols): (&str, Vec<ColumnDef>) = match self {
            Schema::T => (
                "t",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("s", int(), S, -1),
                    col("v1", int(), R, -1),
                    col("v2", int(), R, -1),
                ],
            ),
            Schema::T2 => ("t2", vec![col("pk", int(), Pk, 0), col("v", int(), R, -1)]),
            Schema::T3 => (
                "t3",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck1", int(), Ck, 0),
                    col("ck2", int(), Ck, 1),
                    col("ck3", int(), Ck, 2),
                    col("v", int(), R, -1),
                ],
            ),
            Schema::Tv | Schema::Tcs | Schema::Td => (
                match self {
                    Schema::Tv => "tv",
                    Schema::Tcs => "tcs",
                    _ => "td",
                },
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("v", int(), R, -1),
                ],
            ),
            Schema::Tm => (
                "tm",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("v1", int(), R, -1),
                    col("v2", int(), R, -1),
                    col("m", map(C::Int, C::Int), R, -1),
                ],
            ),
            Schema::Tc => (
                "tc",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("a", int(), R, -1),
                    col(
                        "fu",
                        C::Udt {
                            def: ut(),
                            frozen: true,
                        },
                        R,
                        -1,
                    ),
                    col(
                        "l",
                        C::List {
                            elem: Box::new(C::Text),
                            frozen: false,
                        },
                        R,
                        -1,
                    ),
                    col("m", map(C::Int, C::Text), R, -1),
                    col(
                        "nu",
                        C::Udt {
                            def: ut(),
                            frozen: false,
                        },
                        R,
                        -1,
                    ),
                    col(
                        "st",
                        C::Set {
                            elem: Box::new(C::Int),
                            frozen: false,
                        },
                        R,
                        -1,
                    ),
                ],
            ),
            Schema::Ts => (
                "ts",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("vs", int(), S, -1),
                    col("vc", int(), R, -1),
                ],
            ),
            Schema::Tp => (
                "tp",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("v1", int(), R, -1),
                    col("v2", int(), R, -1),
                ],
            ),
            Schema::Tmv => (
                "tmv",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("v", map(C::Int, C::Int), R, -1),
                ],
            ),
            Schema::Tk => (
                "tk",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("i1", int(), R, -1),
                ],
            ),
            Schema::Tss => (
                "tss",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("s1", int(), S, -1),
                    col("s2", int(), S, -1),
                    col("v", int(), R, -1),
                ],
            ),
            Schema::Tkeys => (
                "tkeys",
                vec![col("pk", int(), Pk, 0), col("ck", int(), Ck, 0)],
            ),
            Schema::Tx => (
                "tx",
                vec![
                    col("pk", int(), Pk, 0),
                    col("ck", int(), Ck, 0),
                    col("s", int(), S, -1),
                    col("v", int(), R, -1),
                    col(
                        "l",
                        C::List {
                            elem: Box::new(C::Int),
                            frozen: false,
                        },
                        R,
                        -1,
                    ),
                    col("m", map(C::Int, C::Int), R, -1),
                    col(
                        "nu",
                        C::Udt {
                            def: ut(),
                            frozen: false,
                        },
                        R,
                        -1,
                    ),
                ],
            ),
        };
        let mut cols = cols;
        if self == Schema::Td {
            for c in &mut cols {
                if c.kind == Ck {
                    c.order = ClusteringOrder::Desc;
                }
            }
        }
        let mut t = TableDef::new("ks", name, cols, TableOptions::default(), TableKind::User);
        t.compact_storage = self == Schema::Tcs;
        t
    }
}

fn col(name: &str, typ: CqlType, kind: ColumnKind, position: i32) -> ColumnDef {
    ColumnDef {
        name: name.into(),
        typ,
        kind,
        position,
        order: ClusteringOrder::Asc,
        id: 0,
    }
}

fn map(key: CqlType, value: CqlType) -> CqlType {
    CqlType::Map {
        key: Box::new(key),
        value: Box::new(value),
        frozen: false,
    }
}

/// `ut (a int, b int, c int)`.
pub(crate) fn ut() -> Arc<UserType> {
    Arc::new(UserType {
        keyspace: "ks".into(),
        name: "ut".into(),
        fields: vec![
            ("a".into(), CqlType::Int),
            ("b".into(), CqlType::Int),
            ("c".into(), CqlType::Int),
        ],
    })
}

/// The CDC log table of `base`, as the DDL derives it (semantics §1.2).
pub(crate) fn log_table(base: &TableDef) -> TableDef {
    crate::cdc::log_schema::new_log_table(base, &crate::schema::CdcOptions::default())
}

// ---------------------------------------------------------------------------------------------
// Building mutations the way the executor does
// ---------------------------------------------------------------------------------------------

/// The right-hand side of one column in a statement.
#[derive(Clone, Debug)]
pub(crate) enum A {
    /// `c = v` (atomic or frozen column).
    V(Value),
    /// `c = null`: a cell tombstone (atomic), a collection tombstone at ts − 1 (non-frozen).
    Null,
    /// `c = {k: v, ...}` on a non-frozen map, set (values `Empty`) or UDT (keys = field
    /// indexes): a collection tombstone at ts − 1 and the elements at ts.
    Assign(Vec<(Value, Value)>),
    /// `l = [...]` on a list: a collection tombstone at ts − 1 and appended elements.
    AssignList(Vec<Value>),
    /// `l = l + [...]`: elements keyed by new timeuuids of the statement's timestamp.
    Append(Vec<Value>),
    /// `c = c + {...}`, `c[k] = v`, `nu.f = v`: element writes.
    Add(Vec<(Value, Value)>),
    /// `c = c - {...}`, `DELETE c[k]`, `c[k] = null`, `nu.f = null`: element tombstones.
    Remove(Vec<Value>),
}

/// `int` value.
pub(crate) fn i(n: i32) -> Value {
    Value::Int(n)
}

/// `text` value.
pub(crate) fn t(s: &str) -> Value {
    Value::text(s)
}

/// A UDT field index as an element key.
pub(crate) fn f(index: i16) -> Value {
    Value::Smallint(index)
}

/// Set elements as `(element, Empty)` pairs.
pub(crate) fn set_elems(xs: &[i32]) -> Vec<(Value, Value)> {
    xs.iter().map(|&x| (i(x), Value::Empty)).collect()
}

/// The key of the `n`-th element a statement with timestamp `ts` appends to a list.
pub(crate) fn list_key(ts: Timestamp, n: u8) -> Value {
    Value::Timeuuid(timeuuid::from_micros_with_counter(ts, n, LIST_KEY_LSB))
}

/// One side of a range delete: a clustering prefix (empty = unbounded) and inclusiveness.
pub(crate) type Side<'a> = (&'a [i32], bool);

/// Builds the mutations of one step: each statement makes a mutation of its partition, and
/// the statements of one step are merged per partition, as a batch is.
pub(crate) struct Builder<'t> {
    table: &'t TableDef,
    base: Timestamp,
    ts: Timestamp,
    ttl: Option<u32>,
    pk: i32,
    out: Vec<PartitionMutation>,
}

impl<'t> Builder<'t> {
    /// A builder for a step whose base timestamp is `base`.
    pub(crate) fn new(table: &'t TableDef, base: Timestamp) -> Self {
        Builder {
            table,
            base,
            ts: base,
            ttl: None,
            pk: 0,
            out: Vec::new(),
        }
    }

    /// The next statement runs at `T + dt`.
    pub(crate) fn at(&mut self, dt: i64) -> &mut Self {
        self.ts = self.base + dt;
        self
    }

    /// The next statement has `USING TTL ttl`.
    pub(crate) fn ttl(&mut self, ttl: u32) -> &mut Self {
        self.ttl = Some(ttl);
        self
    }

    /// Statements from now on write partition `pk` (0 by default).
    pub(crate) fn pk(&mut self, pk: i32) -> &mut Self {
        self.pk = pk;
        self
    }

    /// The mutations, one per partition, in the order the partitions were first written.
    pub(crate) fn finish(self) -> Vec<PartitionMutation> {
        self.out
    }

    /// `INSERT INTO t (pk, ck..., cols...) VALUES (...)`: a row marker (none when no
    /// clustering key is given in a table that has one) and the cells.
    pub(crate) fn insert(&mut self, ck: &[i32], cols: &[(&str, A)]) -> &mut Self {
        let mut m = self.fresh();
        let has_ck = self.table.clustering_key().next().is_some();
        if !has_ck || !ck.is_empty() {
            let marker = Liveness {
                ts: self.ts,
                ttl: self.ttl,
            };
            m.row_mut(&ckey(ck)).marker = Some(marker);
        }
        self.cells(&mut m, ck, cols);
        self.push(m)
    }

    /// `UPDATE t SET cols... WHERE pk = .. [AND ck = ..]`.
    pub(crate) fn update(&mut self, ck: &[i32], cols: &[(&str, A)]) -> &mut Self {
        let mut m = self.fresh();
        self.cells(&mut m, ck, cols);
        self.push(m)
    }

    /// `DELETE cols... FROM t WHERE ...`: cell tombstones, collection tombstones at ts.
    pub(crate) fn delete(&mut self, ck: &[i32], cols: &[&str]) -> &mut Self {
        let mut m = self.fresh();
        for name in cols {
            let (id, def_kind, multi) = self.column(name);
            let update = if multi {
                CellUpdate::Collection {
                    tombstone: Some(self.ts),
                    elements: Vec::new(),
                }
            } else {
                CellUpdate::Atomic {
                    ts: self.ts,
                    ttl: None,
                    value: None,
                }
            };
            row_of(&mut m, def_kind, ck).set_cell(id, update);
        }
        self.push(m)
    }

    /// `DELETE FROM t WHERE pk = .. AND ck = ..` (full clustering key).
    pub(crate) fn delete_row(&mut self, ck: &[i32]) -> &mut Self {
        let mut m = self.fresh();
        m.row_mut(&ckey(ck)).deletion = Some(self.ts);
        self.push(m)
    }

    /// `DELETE FROM t WHERE pk = ..`.
    pub(crate) fn delete_partition(&mut self) -> &mut Self {
        let mut m = self.fresh();
        m.delete_partition(self.ts);
        self.push(m)
    }

    /// `DELETE FROM t WHERE pk = .. AND <clustering range>`, bounds in clustering order.
    pub(crate) fn delete_range(&mut self, start: Side<'_>, end: Side<'_>) -> &mut Self {
        let bound = |(prefix, inclusive): Side<'_>| {
            let values: Vec<Value> = prefix.iter().map(|&x| i(x)).collect();
            if values.is_empty() {
                ClusteringBound::unbounded()
            } else if inclusive {
                ClusteringBound::inclusive(values)
            } else {
                ClusteringBound::exclusive(values)
            }
        };
        let mut m = self.fresh();
        m.range_tombstones.push(RangeTombstone {
            start: bound(start),
            end: bound(end),
            ts: self.ts,
        });
        self.push(m)
    }

    fn fresh(&self) -> PartitionMutation {
        let bytes = Bytes::copy_from_slice(&self.pk.to_be_bytes());
        PartitionMutation::new(PartitionKey::new(
            murmur3_token(&bytes),
            bytes,
            vec![i(self.pk)],
        ))
    }

    fn push(&mut self, m: PartitionMutation) -> &mut Self {
        match self.out.iter_mut().find(|x| x.key == m.key) {
            Some(existing) => existing.merge(m),
            None => self.out.push(m),
        }
        self.ts = self.base;
        self.ttl = None;
        self
    }

    fn column(&self, name: &str) -> (ColumnId, ColumnKind, bool) {
        let def = self
            .table
            .column(name)
            .unwrap_or_else(|| panic!("no column {name}"));
        (ColumnId(def.id), def.kind, def.typ.is_multi_cell())
    }

    fn cells(&self, m: &mut PartitionMutation, ck: &[i32], cols: &[(&str, A)]) {
        let (ts, ttl) = (self.ts, self.ttl);
        let element = |key: Value, value: Option<Value>| ElementUpdate {
            key,
            ts,
            ttl,
            value,
        };
        for (name, a) in cols {
            let (id, kind, multi) = self.column(name);
            let update = match (a, multi) {
                (A::V(v), false) => CellUpdate::Atomic {
                    ts,
                    ttl,
                    value: Some(v.clone()),
                },
                (A::Null, false) => CellUpdate::Atomic {
                    ts,
                    ttl: None,
                    value: None,
                },
                (A::Null, true) => CellUpdate::Collection {
                    tombstone: Some(ts - 1),
                    elements: Vec::new(),
                },
                (A::Assign(entries), true) => CellUpdate::Collection {
                    tombstone: Some(ts - 1),
                    elements: sorted(
                        entries
                            .iter()
                            .map(|(k, v)| element(k.clone(), Some(v.clone())))
                            .collect(),
                    ),
                },
                (A::AssignList(values), true) => CellUpdate::Collection {
                    tombstone: Some(ts - 1),
                    elements: appended(ts, values, &element),
                },
                (A::Append(values), true) => CellUpdate::Collection {
                    tombstone: None,
                    elements: appended(ts, values, &element),
                },
                (A::Add(entries), true) => CellUpdate::Collection {
                    tombstone: None,
                    elements: sorted(
                        entries
                            .iter()
                            .map(|(k, v)| element(k.clone(), Some(v.clone())))
                            .collect(),
                    ),
                },
                (A::Remove(keys), true) => CellUpdate::Collection {
                    tombstone: None,
                    elements: sorted(keys.iter().map(|k| element(k.clone(), None)).collect()),
                },
                (a, _) => panic!("{a:?} does not fit column {name}"),
            };
            row_of(m, kind, ck).set_cell(id, update);
        }
    }
}

/// Elements sorted by key, keys unique (the last of equal keys is kept, as a literal with a
/// repeated key is read).
fn sorted(mut elements: Vec<ElementUpdate>) -> Vec<ElementUpdate> {
    elements.reverse();
    elements.sort_by(|a, b| a.key.cmp(&b.key));
    elements.dedup_by(|later, earlier| later.key == earlier.key);
    elements
}

fn appended(
    ts: Timestamp,
    values: &[Value],
    element: &impl Fn(Value, Option<Value>) -> ElementUpdate,
) -> Vec<ElementUpdate> {
    values
        .iter()
        .enumerate()
        .map(|(n, v)| element(list_key(ts, n as u8), Some(v.clone())))
        .collect()
}

fn ckey(ck: &[i32]) -> ClusteringKey {
    ClusteringKey::new(ck.iter().map(|&x| i(x)).collect())
}

fn row_of<'m>(m: &'m mut PartitionMutation, kind: ColumnKind, ck: &[i32]) -> &'m mut RowUpdate {
    if kind == ColumnKind::Static {
        m.static_row_mut()
    } else {
        m.row_mut(&ckey(ck))
    }
}

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

/// One statement (or batch) and the log rows it must produce.
pub(crate) struct Step {
    /// The statements; several make one batch. See the module doc for `{T}`.
    pub(crate) cql: &'static [&'static str],
    /// The expected log rows (module doc), `None` for a set-up step.
    pub(crate) expect: Option<&'static [&'static str]>,
    /// Builds the mutations the executor makes of `cql`.
    pub(crate) build: fn(&mut Builder<'_>),
}

/// One worked example.
pub(crate) struct Case {
    /// The example's id in the semantics document.
    pub(crate) id: &'static str,
    /// The table.
    pub(crate) schema: Schema,
    /// The table's `cdc` option map, as CQL.
    pub(crate) cdc: &'static str,
    /// The statements, in order.
    pub(crate) steps: &'static [Step],
}

const CDC: &str = "{'enabled': true}";
const PRE: &str = "{'enabled': true, 'preimage': true}";
const PRE_POST: &str = "{'enabled': true, 'preimage': true, 'postimage': true}";

/// Every worked example.
pub(crate) const CASES: &[Case] = &[
    // ---- §2.3 atomic columns ----
    Case {
        id: "A",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.t (pk, ck, v1) VALUES (0, 0, 1)"],
            expect: Some(&["@0 #0 op=2 eob ck=0 pk=0 v1=1"]),
            build: |b| {
                b.insert(&[0], &[("v1", A::V(i(1)))]);
            },
        }],
    },
    Case {
        id: "B",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.t (pk, ck, v1, v2) VALUES (0, 0, 1, null)"],
            expect: Some(&["@0 #0 op=2 eob del_v2=true ck=0 pk=0 v1=1"]),
            build: |b| {
                b.insert(&[0], &[("v1", A::V(i(1))), ("v2", A::Null)]);
            },
        }],
    },
    Case {
        id: "C",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.t (pk, ck) VALUES (0, 0)"],
            expect: Some(&["@0 #0 op=2 eob ck=0 pk=0"]),
            build: |b| {
                b.insert(&[0], &[]);
            },
        }],
    },
    Case {
        id: "D",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t SET v1 = 2 WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob ck=0 pk=0 v1=2"]),
            build: |b| {
                b.update(&[0], &[("v1", A::V(i(2)))]);
            },
        }],
    },
    Case {
        id: "E",
        schema: Schema::T,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.t SET v1 = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_v1=true ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("v1", A::Null)]);
                },
            },
            Step {
                cql: &["DELETE v1 FROM ks.t WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_v1=true ck=0 pk=0"]),
                build: |b| {
                    b.delete(&[0], &["v1"]);
                },
            },
        ],
    },
    Case {
        id: "F",
        schema: Schema::T,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.t SET s = 5 WHERE pk = 0"],
                expect: Some(&["@0 #0 op=1 eob pk=0 s=5"]),
                build: |b| {
                    b.update(&[], &[("s", A::V(i(5)))]);
                },
            },
            Step {
                cql: &["INSERT INTO ks.t (pk, s) VALUES (0, 5)"],
                expect: Some(&["@0 #0 op=1 eob pk=0 s=5"]),
                build: |b| {
                    b.insert(&[], &[("s", A::V(i(5)))]);
                },
            },
        ],
    },
    Case {
        id: "G",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t SET s = 5, v1 = 3 WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 pk=0 s=5", "@0 #1 op=1 eob ck=0 pk=0 v1=3"]),
            build: |b| {
                b.update(&[0], &[("s", A::V(i(5))), ("v1", A::V(i(3)))]);
            },
        }],
    },
    Case {
        id: "H",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.t (pk, ck, s, v1) VALUES (0, 0, 5, 3)"],
            expect: Some(&["@0 #0 op=1 pk=0 s=5", "@0 #1 op=2 eob ck=0 pk=0 v1=3"]),
            build: |b| {
                b.insert(&[0], &[("s", A::V(i(5))), ("v1", A::V(i(3)))]);
            },
        }],
    },
    Case {
        id: "I",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE s FROM ks.t WHERE pk = 0"],
            expect: Some(&["@0 #0 op=1 eob del_s=true pk=0"]),
            build: |b| {
                b.delete(&[], &["s"]);
            },
        }],
    },
    Case {
        id: "J",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=3 eob ck=0 pk=0"]),
            build: |b| {
                b.delete_row(&[0]);
            },
        }],
    },
    Case {
        id: "K",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0"],
            expect: Some(&["@0 #0 op=4 eob pk=0"]),
            build: |b| {
                b.delete_partition();
            },
        }],
    },
    Case {
        id: "L",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0 AND ck > 0 AND ck <= 2"],
            expect: Some(&["@0 #0 op=6 ck=0 pk=0", "@0 #1 op=7 eob ck=2 pk=0"]),
            build: |b| {
                b.delete_range((&[0], false), (&[2], true));
            },
        }],
    },
    Case {
        id: "M",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0 AND ck < 3"],
            expect: Some(&["@0 #0 op=5 pk=0", "@0 #1 op=8 eob ck=3 pk=0"]),
            build: |b| {
                b.delete_range((&[], true), (&[3], false));
            },
        }],
    },
    Case {
        id: "N",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0 AND ck >= 1"],
            expect: Some(&["@0 #0 op=5 ck=1 pk=0", "@0 #1 op=7 eob pk=0"]),
            build: |b| {
                b.delete_range((&[1], true), (&[], true));
            },
        }],
    },
    Case {
        id: "O",
        schema: Schema::T3,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t3 WHERE pk = 0 AND ck1 = 0 AND ck2 > 0 AND ck2 < 3"],
            expect: Some(&[
                "@0 #0 op=6 ck1=0 ck2=0 pk=0",
                "@0 #1 op=8 eob ck1=0 ck2=3 pk=0",
            ]),
            build: |b| {
                b.delete_range((&[0, 0], false), (&[0, 3], false));
            },
        }],
    },
    Case {
        id: "P",
        schema: Schema::T3,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t3 WHERE pk = 0 AND ck1 = 0"],
            expect: Some(&["@0 #0 op=5 ck1=0 pk=0", "@0 #1 op=7 eob ck1=0 pk=0"]),
            build: |b| {
                b.delete_range((&[0], true), (&[0], true));
            },
        }],
    },
    Case {
        id: "Q",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t USING TTL 5 SET v1 = 0, v2 = null WHERE pk = 0 AND ck = 0"],
            expect: Some(&[
                "@0 #0 op=1 del_v2=true ck=0 pk=0",
                "@0 #1 op=1 ttl=5 eob ck=0 pk=0 v1=0",
            ]),
            build: |b| {
                b.ttl(5)
                    .update(&[0], &[("v1", A::V(i(0))), ("v2", A::Null)]);
            },
        }],
    },
    Case {
        id: "R",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.t (pk, ck, v1, v2) VALUES (0, 0, 1, null) USING TTL 5"],
            expect: Some(&[
                "@0 #0 op=2 ttl=5 ck=0 pk=0 v1=1",
                "@0 #1 op=1 eob del_v2=true ck=0 pk=0",
            ]),
            build: |b| {
                b.ttl(5)
                    .insert(&[0], &[("v1", A::V(i(1))), ("v2", A::Null)]);
            },
        }],
    },
    Case {
        id: "S",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t USING TTL 5 SET v1 = null WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob del_v1=true ck=0 pk=0"]),
            build: |b| {
                b.ttl(5).update(&[0], &[("v1", A::Null)]);
            },
        }],
    },
    Case {
        id: "U",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t SET v1 = 1 WHERE pk = 0 AND ck IN (1, 2)"],
            expect: Some(&["@0 #0 op=1 ck=1 pk=0 v1=1", "@0 #1 op=1 eob ck=2 pk=0 v1=1"]),
            build: |b| {
                b.update(&[1], &[("v1", A::V(i(1)))])
                    .update(&[2], &[("v1", A::V(i(1)))]);
            },
        }],
    },
    Case {
        id: "V",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE FROM ks.t WHERE pk = 0 AND ck IN (1, 2)"],
            expect: Some(&["@0 #0 op=3 ck=1 pk=0", "@0 #1 op=3 eob ck=2 pk=0"]),
            build: |b| {
                b.delete_row(&[1]).delete_row(&[2]);
            },
        }],
    },
    Case {
        id: "W",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.t SET v1 = 1 WHERE pk IN (0, 1) AND ck = 0"],
            expect: Some(&[
                "@0 #0 op=1 eob ck=0 pk=0 v1=1",
                "@0 #0 op=1 eob ck=0 pk=1 v1=1",
            ]),
            build: |b| {
                b.pk(0).update(&[0], &[("v1", A::V(i(1)))]);
                b.pk(1).update(&[0], &[("v1", A::V(i(1)))]);
            },
        }],
    },
    Case {
        id: "X",
        schema: Schema::T2,
        cdc: PRE,
        steps: &[
            Step {
                cql: &["INSERT INTO ks.t2 (pk, v) VALUES (0, 5)"],
                expect: Some(&["@0 #0 op=2 eob pk=0 v=5"]),
                build: |b| {
                    b.insert(&[], &[("v", A::V(i(5)))]);
                },
            },
            Step {
                cql: &["DELETE FROM ks.t2 WHERE pk = 0"],
                expect: Some(&["@0 #0 op=0 pk=0 v=5", "@0 #1 op=4 eob pk=0"]),
                build: |b| {
                    b.delete_partition();
                },
            },
            Step {
                cql: &["DELETE FROM ks.t2 WHERE pk = 0"],
                expect: Some(&["@0 #0 op=4 eob pk=0"]),
                build: |b| {
                    b.delete_partition();
                },
            },
        ],
    },
    Case {
        id: "Y",
        schema: Schema::Tcs,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.tcs (pk, ck, v) VALUES (0, 0, 1)"],
            expect: Some(&["@0 #0 op=1 eob ck=0 pk=0 v=1"]),
            build: |b| {
                b.insert(&[0], &[("v", A::V(i(1)))]);
            },
        }],
    },
    // ---- §2.4 batches ----
    Case {
        id: "B1",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.t SET v1 = 0 WHERE pk = 0 AND ck = 0",
                "UPDATE ks.t SET v1 = 0 WHERE pk = 0 AND ck = 1",
            ],
            expect: Some(&["@0 #0 op=1 ck=0 pk=0 v1=0", "@0 #1 op=1 eob ck=1 pk=0 v1=0"]),
            build: |b| {
                b.update(&[0], &[("v1", A::V(i(0)))])
                    .update(&[1], &[("v1", A::V(i(0)))]);
            },
        }],
    },
    Case {
        id: "B2",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.t USING TIMESTAMP {T} SET v1 = 0 WHERE pk = 0 AND ck = 0",
                "UPDATE ks.t USING TIMESTAMP {T+1} SET v1 = 0 WHERE pk = 0 AND ck = 1",
            ],
            expect: Some(&[
                "@0 #0 op=1 eob ck=0 pk=0 v1=0",
                "@1 #0 op=1 eob ck=1 pk=0 v1=0",
            ]),
            build: |b| {
                b.update(&[0], &[("v1", A::V(i(0)))]);
                b.at(1).update(&[1], &[("v1", A::V(i(0)))]);
            },
        }],
    },
    Case {
        id: "B3",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.t SET v1 = 1 WHERE pk = 0 AND ck = 0",
                "UPDATE ks.t SET v2 = 2 WHERE pk = 0 AND ck = 0",
            ],
            expect: Some(&["@0 #0 op=1 eob ck=0 pk=0 v1=1 v2=2"]),
            build: |b| {
                b.update(&[0], &[("v1", A::V(i(1)))])
                    .update(&[0], &[("v2", A::V(i(2)))]);
            },
        }],
    },
    Case {
        id: "B4",
        schema: Schema::T,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.t USING TIMESTAMP {T} SET s = -1 WHERE pk = 0",
                "UPDATE ks.t USING TIMESTAMP {T+1} SET v1 = 1 WHERE pk = 0 AND ck = 0",
                "UPDATE ks.t USING TIMESTAMP {T+2} SET v2 = 2 WHERE pk = 0 AND ck = 0",
            ],
            expect: Some(&[
                "@0 #0 op=1 eob pk=0 s=-1",
                "@1 #0 op=1 eob ck=0 pk=0 v1=1",
                "@2 #0 op=1 eob ck=0 pk=0 v2=2",
            ]),
            build: |b| {
                b.update(&[], &[("s", A::V(i(-1)))]);
                b.at(1).update(&[0], &[("v1", A::V(i(1)))]);
                b.at(2).update(&[0], &[("v2", A::V(i(2)))]);
            },
        }],
    },
    Case {
        id: "B5",
        schema: Schema::Tm,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.tm USING TTL 5 SET v1 = 5, v2 = null WHERE pk = 0 AND ck = 1",
                "UPDATE ks.tm USING TTL 6 SET m = m + {0: 6, 1: 6} WHERE pk = 0 AND ck = 1",
                "UPDATE ks.tm USING TTL 7 SET m[2] = 7, m[3] = null WHERE pk = 0 AND ck = 1",
                "UPDATE ks.tm SET m[4] = 0 WHERE pk = 0 AND ck = 1",
            ],
            expect: Some(&[
                "@0 #0 op=1 dele_m={3} del_v2=true ck=1 m={4: 0} pk=0",
                "@0 #1 op=1 ttl=5 ck=1 pk=0 v1=5",
                "@0 #2 op=1 ttl=6 ck=1 m={0: 6, 1: 6} pk=0",
                "@0 #3 op=1 ttl=7 eob ck=1 m={2: 7} pk=0",
            ]),
            build: |b| {
                b.ttl(5)
                    .update(&[1], &[("v1", A::V(i(5))), ("v2", A::Null)]);
                b.ttl(6)
                    .update(&[1], &[("m", A::Add(vec![(i(0), i(6)), (i(1), i(6))]))]);
                b.ttl(7).update(
                    &[1],
                    &[
                        ("m", A::Add(vec![(i(2), i(7))])),
                        ("m", A::Remove(vec![i(3)])),
                    ],
                );
                b.update(&[1], &[("m", A::Add(vec![(i(4), i(0))]))]);
            },
        }],
    },
    Case {
        id: "B6",
        schema: Schema::T,
        cdc: PRE,
        steps: &[
            Step {
                cql: &["INSERT INTO ks.t (pk, ck, v1) VALUES (0, 0, 1)"],
                expect: None,
                build: |b| {
                    b.insert(&[0], &[("v1", A::V(i(1)))]);
                },
            },
            Step {
                cql: &[
                    "UPDATE ks.t SET v1 = 666 WHERE pk = 0 AND ck = 0",
                    "DELETE FROM ks.t WHERE pk = 0 AND ck = 0",
                ],
                expect: Some(&[
                    "@0 #0 op=0 del_v2=true ck=0 pk=0 v1=1",
                    "@0 #1 op=1 ck=0 pk=0 v1=666",
                    "@0 #2 op=3 eob ck=0 pk=0",
                ]),
                build: |b| {
                    b.update(&[0], &[("v1", A::V(i(666)))]).delete_row(&[0]);
                },
            },
        ],
    },
    Case {
        id: "B7",
        schema: Schema::Tv,
        cdc: PRE_POST,
        steps: &[Step {
            cql: &[
                "INSERT INTO ks.tv (pk, ck, v) VALUES (1, 1, 100)",
                "DELETE FROM ks.tv WHERE pk = 1 AND ck >= 1 AND ck <= 2",
            ],
            expect: Some(&[
                "@0 #0 op=2 ck=1 pk=1 v=100",
                "@0 #1 op=5 ck=1 pk=1",
                "@0 #2 op=7 eob ck=2 pk=1",
            ]),
            build: |b| {
                b.pk(1)
                    .insert(&[1], &[("v", A::V(i(100)))])
                    .delete_range((&[1], true), (&[2], true));
            },
        }],
    },
    Case {
        id: "B8",
        schema: Schema::Tv,
        cdc: PRE_POST,
        steps: &[Step {
            cql: &[
                "INSERT INTO ks.tv (pk, ck, v) VALUES (1, 1, 100)",
                "DELETE FROM ks.tv WHERE pk = 1 AND ck >= 2 AND ck <= 3",
            ],
            expect: Some(&[
                "@0 #0 op=2 ck=1 pk=1 v=100",
                "@0 #1 op=5 ck=2 pk=1",
                "@0 #2 op=7 ck=3 pk=1",
                "@0 #3 op=9 eob ck=1 pk=1 v=100",
            ]),
            build: |b| {
                b.pk(1)
                    .insert(&[1], &[("v", A::V(i(100)))])
                    .delete_range((&[2], true), (&[3], true));
            },
        }],
    },
    Case {
        id: "B9",
        schema: Schema::Tv,
        cdc: PRE_POST,
        steps: &[Step {
            cql: &[
                "INSERT INTO ks.tv (pk, ck, v) VALUES (1, 1, 100)",
                "DELETE FROM ks.tv WHERE pk = 1",
            ],
            expect: Some(&["@0 #0 op=2 ck=1 pk=1 v=100", "@0 #1 op=4 eob pk=1"]),
            build: |b| {
                b.pk(1)
                    .insert(&[1], &[("v", A::V(i(100)))])
                    .delete_partition();
            },
        }],
    },
    Case {
        id: "B10",
        schema: Schema::Tm,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "DELETE FROM ks.tm USING TIMESTAMP {T} WHERE pk = 1",
                "DELETE FROM ks.tm USING TIMESTAMP {T+1} WHERE pk = 1 AND ck >= 0 AND ck < 3",
                "DELETE FROM ks.tm USING TIMESTAMP {T+2} WHERE pk = 1 AND ck = 0",
                "INSERT INTO ks.tm (pk, ck, v1) VALUES (1, 0, 1) USING TIMESTAMP {T+3}",
                "UPDATE ks.tm USING TIMESTAMP {T+3} SET v2 = 2 WHERE pk = 1 AND ck = 0",
                "INSERT INTO ks.tm (pk, ck, m) VALUES (1, 0, {3: 3}) USING TIMESTAMP {T+4}",
                "INSERT INTO ks.tm (pk, ck, m) VALUES (1, 1, {4: 4}) USING TIMESTAMP {T+5} AND TTL 5",
            ],
            expect: Some(&[
                "@0 #0 op=4 eob pk=1",
                "@1 #0 op=5 ck=0 pk=1",
                "@1 #1 op=8 eob ck=3 pk=1",
                "@2 #0 op=3 eob ck=0 pk=1",
                "@3 #0 op=1 eob ck=0 pk=1 v1=1 v2=2",
                "@4 #0 op=2 eob del_m=true ck=0 m={3: 3} pk=1",
                "@5 #0 op=2 ttl=5 ck=1 pk=1",
                "@5 #1 op=1 del_m=true ck=1 pk=1",
                "@5 #2 op=1 ttl=5 eob ck=1 m={4: 4} pk=1",
            ]),
            build: |b| {
                b.pk(1).delete_partition();
                b.at(1).delete_range((&[0], true), (&[3], false));
                b.at(2).delete_row(&[0]);
                b.at(3).insert(&[0], &[("v1", A::V(i(1)))]);
                b.at(3).update(&[0], &[("v2", A::V(i(2)))]);
                b.at(4)
                    .insert(&[0], &[("m", A::Assign(vec![(i(3), i(3))]))]);
                b.at(5)
                    .ttl(5)
                    .insert(&[1], &[("m", A::Assign(vec![(i(4), i(4))]))]);
            },
        }],
    },
    // ---- §2.5 non-frozen collections and UDTs ----
    Case {
        id: "2.5 map add",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.tc SET m = m + {1: 'a', 2: 'b'} WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob ck=0 m={1: 'a', 2: 'b'} pk=0"]),
            build: |b| {
                b.update(&[0], &[("m", A::Add(vec![(i(1), t("a")), (i(2), t("b"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 map remove",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET m = m - {1, 2, 3} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_m={1, 2, 3} ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("m", A::Remove(vec![i(1), i(2), i(3)]))]);
                },
            },
            Step {
                cql: &["DELETE m[1] FROM ks.tc WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_m={1} ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("m", A::Remove(vec![i(1)]))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET m[1] = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_m={1} ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("m", A::Remove(vec![i(1)]))]);
                },
            },
        ],
    },
    Case {
        id: "2.5 map clear",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET m = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_m=true ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("m", A::Null)]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET m = {} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_m=true ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("m", A::Assign(vec![]))]);
                },
            },
            // The tombstone of a column delete is at T, logged at T + 1.
            Step {
                cql: &["DELETE m FROM ks.tc WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@1 #0 op=1 eob del_m=true ck=0 pk=0"]),
                build: |b| {
                    b.delete(&[0], &["m"]);
                },
            },
        ],
    },
    Case {
        id: "2.5 map overwrite",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.tc SET m = {1: 'a'} WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob del_m=true ck=0 m={1: 'a'} pk=0"]),
            build: |b| {
                b.update(&[0], &[("m", A::Assign(vec![(i(1), t("a"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 map insert",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.tc (pk, ck, m) VALUES (0, 0, {1: 'a'})"],
            expect: Some(&["@0 #0 op=2 eob del_m=true ck=0 m={1: 'a'} pk=0"]),
            build: |b| {
                b.insert(&[0], &[("m", A::Assign(vec![(i(1), t("a"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 map insert ttl",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["INSERT INTO ks.tc (pk, ck, m) VALUES (0, 0, {1: 'a'}) USING TTL 5"],
            expect: Some(&[
                "@0 #0 op=2 ttl=5 ck=0 pk=0",
                "@0 #1 op=1 del_m=true ck=0 pk=0",
                "@0 #2 op=1 ttl=5 eob ck=0 m={1: 'a'} pk=0",
            ]),
            build: |b| {
                b.ttl(5)
                    .insert(&[0], &[("m", A::Assign(vec![(i(1), t("a"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 map update ttl",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.tc USING TTL 5 SET m = {1: 'a'} WHERE pk = 0 AND ck = 0"],
            expect: Some(&[
                "@0 #0 op=1 del_m=true ck=0 pk=0",
                "@0 #1 op=1 ttl=5 eob ck=0 m={1: 'a'} pk=0",
            ]),
            build: |b| {
                b.ttl(5)
                    .update(&[0], &[("m", A::Assign(vec![(i(1), t("a"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 set",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET st = st + {1, 2} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob ck=0 pk=0 st={1, 2}"]),
                build: |b| {
                    b.update(&[0], &[("st", A::Add(set_elems(&[1, 2])))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET st = st - {3} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_st={3} ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("st", A::Remove(vec![i(3)]))]);
                },
            },
        ],
    },
    Case {
        id: "2.5 list append",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.tc SET l = l + ['x', 'y'] WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob ck=0 l={'k0.0': 'x', 'k0.1': 'y'} pk=0"]),
            build: |b| {
                b.update(&[0], &[("l", A::Append(vec![t("x"), t("y")]))]);
            },
        }],
    },
    Case {
        id: "2.5 list overwrite",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["UPDATE ks.tc SET l = ['x'] WHERE pk = 0 AND ck = 0"],
            expect: Some(&["@0 #0 op=1 eob del_l=true ck=0 l={'k0.0': 'x'} pk=0"]),
            build: |b| {
                b.update(&[0], &[("l", A::AssignList(vec![t("x")]))]);
            },
        }],
    },
    Case {
        id: "2.5 list remove by value",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET l = l + ['x', 'y', 'x'] WHERE pk = 0 AND ck = 0"],
                expect: None,
                build: |b| {
                    b.update(&[0], &[("l", A::Append(vec![t("x"), t("y"), t("x")]))]);
                },
            },
            // The executor reads the list and deletes the keys holding 'x'.
            Step {
                cql: &["UPDATE ks.tc SET l = l - ['x'] WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_l={'k0.0', 'k0.2'} ck=0 pk=0"]),
                build: |b| {
                    b.update(
                        &[0],
                        &[("l", A::Remove(vec![list_key(T0, 0), list_key(T0, 2)]))],
                    );
                },
            },
        ],
    },
    Case {
        id: "2.5 list by index",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET l = l + ['x', 'y'] WHERE pk = 0 AND ck = 0"],
                expect: None,
                build: |b| {
                    b.update(&[0], &[("l", A::Append(vec![t("x"), t("y")]))]);
                },
            },
            Step {
                cql: &["DELETE l[0] FROM ks.tc WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob dele_l={'k0.0'} ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("l", A::Remove(vec![list_key(T0, 0)]))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET l[0] = 'z' WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob ck=0 l={'k0.1': 'z'} pk=0"]),
                build: |b| {
                    b.update(&[0], &[("l", A::Add(vec![(list_key(T0, 1), t("z"))]))]);
                },
            },
        ],
    },
    Case {
        id: "2.5 list by timeuuid",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "UPDATE ks.tc SET l[SCYLLA_TIMEUUID_LIST_INDEX(<k7.0>)] = 'w' \
                 WHERE pk = 0 AND ck = 0",
            ],
            expect: Some(&["@0 #0 op=1 eob ck=0 l={'k7.0': 'w'} pk=0"]),
            build: |b| {
                b.update(&[0], &[("l", A::Add(vec![(list_key(T0 + 7, 0), t("w"))]))]);
            },
        }],
    },
    Case {
        id: "2.5 udt fields",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET nu.a = 0, nu.b = 1 WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob ck=0 nu={a: 0, b: 1, c: null} pk=0"]),
                build: |b| {
                    b.update(&[0], &[("nu", A::Add(vec![(f(0), i(0)), (f(1), i(1))]))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET nu.a = null, nu.b = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=1 eob dele_nu={0, 1} ck=0 nu={a: null, b: null, c: null} pk=0",
                ]),
                build: |b| {
                    b.update(&[0], &[("nu", A::Remove(vec![f(0), f(1)]))]);
                },
            },
        ],
    },
    Case {
        id: "2.5 udt assign",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET nu = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=1 eob del_nu=true ck=0 nu={a: null, b: null, c: null} pk=0",
                ]),
                build: |b| {
                    b.update(&[0], &[("nu", A::Null)]);
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET nu = {a: 1, b: 2} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_nu=true ck=0 nu={a: 1, b: 2, c: null} pk=0"]),
                build: |b| {
                    b.update(&[0], &[("nu", A::Assign(vec![(f(0), i(1)), (f(1), i(2))]))]);
                },
            },
        ],
    },
    Case {
        id: "2.5 frozen",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[
            Step {
                cql: &["UPDATE ks.tc SET fu = {a: 1} WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob ck=0 fu={a: 1, b: null, c: null} pk=0"]),
                build: |b| {
                    b.update(
                        &[0],
                        &[("fu", A::V(Value::udt(vec![Some(i(1)), None, None])))],
                    );
                },
            },
            Step {
                cql: &["UPDATE ks.tc SET fu = null WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 eob del_fu=true ck=0 pk=0"]),
                build: |b| {
                    b.update(&[0], &[("fu", A::Null)]);
                },
            },
        ],
    },
    Case {
        id: "2.5 column delete of a collection and an atomic column",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &["DELETE m, a FROM ks.tc USING TIMESTAMP {T} WHERE pk = 0 AND ck = 0"],
            expect: Some(&[
                "@0 #0 op=1 eob del_a=true ck=0 pk=0",
                "@1 #0 op=1 eob del_m=true ck=0 pk=0",
            ]),
            build: |b| {
                b.delete(&[0], &["m", "a"]);
            },
        }],
    },
    Case {
        id: "2.5 delete then add in one batch",
        schema: Schema::Tc,
        cdc: CDC,
        steps: &[Step {
            cql: &[
                "DELETE m FROM ks.tc USING TIMESTAMP {T-1} WHERE pk = 0 AND ck = 0",
                "UPDATE ks.tc USING TIMESTAMP {T} SET m = m + {1: 'a'} WHERE pk = 0 AND ck = 0",
            ],
            expect: Some(&["@0 #0 op=1 eob del_m=true ck=0 m={1: 'a'} pk=0"]),
            build: |b| {
                b.at(-1).delete(&[0], &["m"]);
                b.update(&[0], &[("m", A::Add(vec![(i(1), t("a"))]))]);
            },
        }],
    },
    // ---- §2.6 LWT: only applied conditional statements reach CDC ----
    Case {
        id: "2.6 LWT",
        schema: Schema::Tv,
        cdc: PRE,
        steps: &[
            Step {
                cql: &["INSERT INTO ks.tv (pk, ck, v) VALUES (1, 1, 111) IF NOT EXISTS"],
                expect: Some(&["@0 #0 op=2 eob ck=1 pk=1 v=111"]),
                build: |b| {
                    b.pk(1).insert(&[1], &[("v", A::V(i(111)))]);
                },
            },
            Step {
                cql: &["INSERT INTO ks.tv (pk, ck, v) VALUES (1, 1, 222) IF NOT EXISTS"],
                expect: Some(&[]),
                build: |_| {},
            },
            Step {
                cql: &["UPDATE ks.tv SET v = 333 WHERE pk = 1 AND ck = 1 IF EXISTS"],
                expect: Some(&[
                    "@0 #0 op=0 ck=1 pk=1 v=111",
                    "@0 #1 op=1 eob ck=1 pk=1 v=333",
                ]),
                build: |b| {
                    b.pk(1).update(&[1], &[("v", A::V(i(333)))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tv SET v = 444 WHERE pk = 1 AND ck = 2 IF EXISTS"],
                expect: Some(&[]),
                build: |_| {},
            },
            Step {
                cql: &["DELETE FROM ks.tv WHERE pk = 1 AND ck = 1 IF EXISTS"],
                expect: Some(&["@0 #0 op=0 ck=1 pk=1 v=333", "@0 #1 op=3 eob ck=1 pk=1"]),
                build: |b| {
                    b.pk(1).delete_row(&[1]);
                },
            },
        ],
    },
    // ---- §3.3 delta: 'keys' ----
    Case {
        id: "3.3 delta keys",
        schema: Schema::Tk,
        cdc: "{'enabled': true, 'preimage': true, 'postimage': true, 'delta': 'keys'}",
        steps: &[Step {
            cql: &["INSERT INTO ks.tk (pk, ck, i1) VALUES (2, 22, 222) USING TTL 2222"],
            expect: Some(&[
                "@0 #0 op=2 ttl=2222 ck=22 pk=2",
                "@0 #1 op=9 eob ck=22 i1=222 pk=2",
            ]),
            build: |b| {
                b.pk(2).ttl(2222).insert(&[22], &[("i1", A::V(i(222)))]);
            },
        }],
    },
    // ---- §3.5 order with images ----
    Case {
        id: "3.5 static and clustering pre-images",
        schema: Schema::Ts,
        cdc: PRE,
        steps: &[
            Step {
                cql: &["UPDATE ks.ts SET vs = 0 WHERE pk = 0"],
                expect: Some(&["@0 #0 op=1 eob pk=0 vs=0"]),
                build: |b| {
                    b.update(&[], &[("vs", A::V(i(0)))]);
                },
            },
            Step {
                cql: &["UPDATE ks.ts SET vs = 1 WHERE pk = 0"],
                expect: Some(&["@0 #0 op=0 pk=0 vs=0", "@0 #1 op=1 eob pk=0 vs=1"]),
                build: |b| {
                    b.update(&[], &[("vs", A::V(i(1)))]);
                },
            },
            Step {
                cql: &["UPDATE ks.ts SET vs = 2, vc = 2 WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=0 pk=0 vs=1",
                    "@0 #1 op=1 pk=0 vs=2",
                    "@0 #2 op=1 eob ck=0 pk=0 vc=2",
                ]),
                build: |b| {
                    b.update(&[0], &[("vs", A::V(i(2))), ("vc", A::V(i(2)))]);
                },
            },
            Step {
                cql: &["UPDATE ks.ts SET vs = 3, vc = 3 WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=0 pk=0 vs=2",
                    "@0 #1 op=0 ck=0 pk=0 vc=2",
                    "@0 #2 op=1 pk=0 vs=3",
                    "@0 #3 op=1 eob ck=0 pk=0 vc=3",
                ]),
                build: |b| {
                    b.update(&[0], &[("vs", A::V(i(3))), ("vc", A::V(i(3)))]);
                },
            },
        ],
    },
    Case {
        id: "3.5 full pre-image and post-image",
        schema: Schema::Tp,
        cdc: "{'enabled': true, 'preimage': 'full', 'postimage': true}",
        steps: &[
            Step {
                cql: &["UPDATE ks.tp SET v1 = 0 WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=1 ck=0 pk=0 v1=0", "@0 #1 op=9 eob ck=0 pk=0 v1=0"]),
                build: |b| {
                    b.update(&[0], &[("v1", A::V(i(0)))]);
                },
            },
            Step {
                cql: &["INSERT INTO ks.tp (pk, ck, v2) VALUES (0, 0, 0)"],
                expect: Some(&[
                    "@0 #0 op=0 del_v2=true ck=0 pk=0 v1=0",
                    "@0 #1 op=2 ck=0 pk=0 v2=0",
                    "@0 #2 op=9 eob ck=0 pk=0 v1=0 v2=0",
                ]),
                build: |b| {
                    b.insert(&[0], &[("v2", A::V(i(0)))]);
                },
            },
            Step {
                cql: &["DELETE FROM ks.tp WHERE pk = 0 AND ck = 0"],
                expect: Some(&["@0 #0 op=0 ck=0 pk=0 v1=0 v2=0", "@0 #1 op=3 eob ck=0 pk=0"]),
                build: |b| {
                    b.delete_row(&[0]);
                },
            },
            Step {
                cql: &["DELETE FROM ks.tp WHERE pk = 0 AND ck >= 1 AND ck < 2"],
                expect: Some(&["@0 #0 op=5 ck=1 pk=0", "@0 #1 op=8 eob ck=2 pk=0"]),
                build: |b| {
                    b.delete_range((&[1], true), (&[2], false));
                },
            },
            Step {
                cql: &["DELETE FROM ks.tp WHERE pk = 0"],
                expect: Some(&["@0 #0 op=4 eob pk=0"]),
                build: |b| {
                    b.delete_partition();
                },
            },
        ],
    },
    Case {
        id: "3.2 post-image of a row without regular columns",
        schema: Schema::Tkeys,
        cdc: PRE_POST,
        steps: &[Step {
            cql: &["INSERT INTO ks.tkeys (pk, ck) VALUES (0, 0)"],
            expect: Some(&["@0 #0 op=2 ck=0 pk=0", "@0 #1 op=9 eob ck=0 pk=0"]),
            build: |b| {
                b.insert(&[0], &[]);
            },
        }],
    },
    Case {
        id: "3.5 map images",
        schema: Schema::Tmv,
        cdc: PRE_POST,
        steps: &[
            Step {
                cql: &["UPDATE ks.tmv SET v = {1: 1, 2: 2} WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=1 del_v=true ck=0 pk=0 v={1: 1, 2: 2}",
                    "@0 #1 op=9 eob ck=0 pk=0 v={1: 1, 2: 2}",
                ]),
                build: |b| {
                    b.update(&[0], &[("v", A::Assign(vec![(i(1), i(1)), (i(2), i(2))]))]);
                },
            },
            Step {
                cql: &["UPDATE ks.tmv SET v = v + {3: 3}, v = v - {2} WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=0 ck=0 pk=0 v={1: 1, 2: 2}",
                    "@0 #1 op=1 dele_v={2} ck=0 pk=0 v={3: 3}",
                    "@0 #2 op=9 eob ck=0 pk=0 v={1: 1, 3: 3}",
                ]),
                build: |b| {
                    b.update(
                        &[0],
                        &[
                            ("v", A::Add(vec![(i(3), i(3))])),
                            ("v", A::Remove(vec![i(2)])),
                        ],
                    );
                },
            },
            Step {
                cql: &["UPDATE ks.tmv SET v = {4: 4} WHERE pk = 0 AND ck = 0"],
                expect: Some(&[
                    "@0 #0 op=0 ck=0 pk=0 v={1: 1, 3: 3}",
                    "@0 #1 op=1 del_v=true ck=0 pk=0 v={4: 4}",
                    "@0 #2 op=9 eob ck=0 pk=0 v={4: 4}",
                ]),
                build: |b| {
                    b.update(&[0], &[("v", A::Assign(vec![(i(4), i(4))]))]);
                },
            },
        ],
    },
];
