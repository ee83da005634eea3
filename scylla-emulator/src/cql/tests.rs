//! Tests of the parser against the statements drivers, CDC libraries and users send.

use proptest::prelude::*;
use uuid::Uuid;

use super::*;
use crate::types::CqlType;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Parses `text`, panicking with the error.
fn parse(text: &str) -> Statement {
    parse_statement(text).unwrap_or_else(|e| panic!("{text:?} failed: {e}"))
}

/// The parse error of `text`, panicking if it parses.
fn err(text: &str) -> ParseError {
    match parse_statement(text) {
        Ok(s) => panic!("{text:?} parsed unexpectedly: {s:?}"),
        Err(e) => e,
    }
}

/// Parses a SELECT.
fn select(text: &str) -> Select {
    match parse(text) {
        Statement::Select(s) => *s,
        other => panic!("not a SELECT: {other:?}"),
    }
}

/// Parses an INSERT.
fn insert(text: &str) -> Insert {
    match parse(text) {
        Statement::Insert(s) => *s,
        other => panic!("not an INSERT: {other:?}"),
    }
}

/// Parses an UPDATE.
fn update(text: &str) -> Update {
    match parse(text) {
        Statement::Update(s) => *s,
        other => panic!("not an UPDATE: {other:?}"),
    }
}

/// Parses a DELETE.
fn delete(text: &str) -> Delete {
    match parse(text) {
        Statement::Delete(s) => *s,
        other => panic!("not a DELETE: {other:?}"),
    }
}

/// Parses a BATCH.
fn batch(text: &str) -> Batch {
    match parse(text) {
        Statement::Batch(s) => *s,
        other => panic!("not a BATCH: {other:?}"),
    }
}

/// Parses a CREATE TABLE.
fn create_table(text: &str) -> CreateTable {
    match parse(text) {
        Statement::CreateTable(s) => *s,
        other => panic!("not a CREATE TABLE: {other:?}"),
    }
}

/// Parses an ALTER TABLE and returns its action.
fn alter_table(text: &str) -> AlterTableAction {
    match parse(text) {
        Statement::AlterTable(s) => s.action,
        other => panic!("not an ALTER TABLE: {other:?}"),
    }
}

/// The value term of `INSERT INTO t (v) VALUES (<term>)`.
fn term(text: &str) -> Term {
    match insert(&format!("INSERT INTO t (v) VALUES ({text})")).values {
        InsertValues::Columns(mut pairs) if pairs.len() == 1 => pairs.remove(0).1,
        other => panic!("unexpected values {other:?}"),
    }
}

/// The literal of `INSERT INTO t (v) VALUES (<literal>)`.
fn literal(text: &str) -> Literal {
    match term(text) {
        Term::Literal(l) => l,
        other => panic!("{text} is not a literal: {other:?}"),
    }
}

/// An integer literal term.
fn int(text: &str) -> Term {
    Term::Literal(Literal::Integer(text.to_owned()))
}

/// A string literal term.
fn string(text: &str) -> Term {
    Term::Literal(Literal::String(text.to_owned()))
}

/// An anonymous marker term.
fn marker(index: usize) -> Term {
    Term::Marker(BindMarker { index, name: None })
}

/// A column selector item without alias.
fn col(name: &str) -> SelectItem {
    SelectItem {
        selector: Selector::Column(name.to_owned()),
        alias: None,
    }
}

/// A compare relation.
fn rel(column: &str, op: CompareOp, value: Term) -> Relation {
    Relation::Compare {
        column: column.to_owned(),
        op,
        value,
    }
}

/// An unqualified name.
fn name(n: &str) -> QualifiedName {
    QualifiedName::unqualified(n)
}

/// A keyspace-qualified name.
fn qname(ks: &str, n: &str) -> QualifiedName {
    QualifiedName::qualified(ks, n)
}

/// The indexes of the statement's markers.
fn marker_indexes(stmt: &Statement) -> Vec<usize> {
    stmt.bind_markers().iter().map(|m| m.index).collect()
}

/// A native type expression.
fn native(t: CqlType) -> TypeExpr {
    TypeExpr::Native(t)
}

// ---------------------------------------------------------------------------------------
// Golden statements
// ---------------------------------------------------------------------------------------

/// Every statement the brief and the design documents list, verbatim.
const GOLDEN: &[&str] = &[
    "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.peers USING TIMEOUT 30000ms",
    "SELECT host_id, rpc_address, data_center, rack, tokens, cluster_name FROM system.local WHERE key='local' USING TIMEOUT 30000ms",
    "SELECT keyspace_name, replication, durable_writes FROM system_schema.keyspaces USING TIMEOUT 30000ms",
    "SELECT keyspace_name, type_name, field_names, field_types FROM system_schema.types where keyspace_name in ? USING TIMEOUT 30000ms",
    "SELECT keyspace_name, table_name, column_name, kind, position, type FROM system_schema.columns USING TIMEOUT 30000ms",
    "SELECT keyspace_name, table_name, partitioner FROM system_schema.scylla_tables USING TIMEOUT 30000ms",
    "SELECT keyspace_name, view_name, base_table_name FROM system_schema.views USING TIMEOUT 30000ms",
    "SELECT keyspace_name, initial_tablets FROM system_schema.scylla_keyspaces where keyspace_name in ? USING TIMEOUT 30000ms",
    "SELECT keyspace_name, table_name FROM system_schema.tables USING TIMEOUT 30000ms",
    "SELECT keyspace_name, initial_tablets, consistency FROM system_schema.scylla_keyspaces USING TIMEOUT 30000ms",
    "SELECT schema_version FROM system.local WHERE key='local'",
    "USE \"MyKs\"",
    "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps' AND time <= ? ORDER BY time DESC LIMIT 1",
    "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps' AND time > ? ORDER BY time ASC LIMIT 1",
    "SELECT min(time) FROM system_distributed.cdc_generation_timestamps WHERE key='timestamps' AND time > ?",
    "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
    "SELECT COUNT(*) FROM system.peers",
    "SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name=? AND table_name=?",
    "SELECT stream_id FROM system.cdc_streams WHERE keyspace_name=? AND table_name=? AND timestamp=? AND stream_state=0",
    "SELECT * FROM ks.t_scylla_cdc_log WHERE \"cdc$stream_id\" in ? AND \"cdc$time\" >= minTimeuuid(?) AND \"cdc$time\" < minTimeuuid(?) BYPASS CACHE",
    "SELECT * FROM \"ks\".\"t_scylla_cdc_log\" WHERE \"cdc$stream_id\" = ? AND \"cdc$time\" > ? AND \"cdc$time\" <= ?",
    "SELECT * FROM ks.t_scylla_cdc_log WHERE \"cdc$stream_id\" IN (?, ?) AND \"cdc$time\" > ? AND \"cdc$time\" <= ? BYPASS CACHE",
    "SELECT writetime(tup), ttl(v), token(pk), pk FROM ks.t WHERE token(pk) > ? AND token(pk) <= ? PER PARTITION LIMIT 1",
    "SELECT extensions FROM system_schema.tables WHERE keyspace_name=? AND table_name=?",
    "SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
    "SELECT * FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
    "SELECT client, command, coordinator, duration, parameters, request, started_at FROM system_traces.sessions WHERE session_id = ?",
    "SELECT event_id, activity, source, source_elapsed, thread FROM system_traces.events WHERE session_id = ?",
    "CREATE TABLE ks.t (pk int, ck int, s int static, v int, m map<int,text>, l list<text>, st set<int>, u frozen<ut>, nu ut, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true, 'ttl': 3600}",
    "CREATE TYPE ks.ut (a int, b int, c int);",
    "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3} AND tablets = {'enabled': false}",
    "CREATE TABLE system_distributed.cdc_generation_timestamps (key text, time timestamp, expired timestamp, PRIMARY KEY (key, time)) WITH CLUSTERING ORDER BY (time DESC)",
    "CREATE TABLE system.cdc_streams (keyspace_name text, table_name text, timestamp timestamp, stream_state tinyint, stream_id blob, PRIMARY KEY ((keyspace_name, table_name), timestamp, stream_state, stream_id))",
    "INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?",
    "UPDATE ks.t SET m = m + {1: 'a'}, l = ['x'] + l, nu.a = 0, m[2] = null WHERE pk = 0 AND ck IN (1, 2) IF EXISTS",
    "DELETE m[1], nu.b, v FROM ks.t USING TIMESTAMP 1000 WHERE pk = 0 AND (ck1, ck2) >= (1, 2) AND (ck1, ck2) < (3, 4)",
    "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 INSERT INTO t (a) VALUES (1); DELETE FROM t WHERE a = 2; APPLY BATCH",
    "ALTER TABLE ks.t WITH cdc = {'enabled': false}",
    "DELETE FROM t WHERE pk=0 AND ck>0 AND ck<=2",
    "UPDATE t USING TTL 5 SET v1=0, v2=null WHERE pk=0 AND ck=0",
    "UPDATE t SET v1=1 WHERE pk IN (0,1) AND ck=0",
];

#[test]
fn every_golden_statement_parses_with_contiguous_markers() {
    for text in GOLDEN {
        let stmt = parse(text);
        let indexes = marker_indexes(&stmt);
        let expected: Vec<usize> = (0..indexes.len()).collect();
        assert_eq!(indexes, expected, "{text}");
        assert_eq!(stmt.bind_count(), text.matches('?').count(), "{text}");
    }
}

#[test]
fn golden_peers_query() {
    let s = select(GOLDEN[0]);
    assert_eq!(s.table, qname("system", "peers"));
    assert_eq!(
        s.selection,
        Selection::Items(
            ["host_id", "rpc_address", "data_center", "rack", "tokens"]
                .into_iter()
                .map(col)
                .collect()
        )
    );
    assert!(s.where_clause.is_empty());
    assert_eq!(
        s.timeout,
        Some(Term::Literal(Literal::Duration(DurationLiteral {
            months: 0,
            days: 0,
            nanoseconds: 30_000_000_000,
        })))
    );
}

#[test]
fn golden_local_query() {
    let s = select(GOLDEN[1]);
    assert_eq!(s.table, qname("system", "local"));
    assert_eq!(
        s.where_clause,
        vec![rel("key", CompareOp::Eq, string("local"))]
    );
    assert!(s.timeout.is_some());
}

#[test]
fn golden_partial_schema_query_with_lower_case_in() {
    let s = select(GOLDEN[3]);
    assert_eq!(s.table, qname("system_schema", "types"));
    assert_eq!(
        s.where_clause,
        vec![Relation::In {
            column: "keyspace_name".into(),
            values: InValues::Marker(BindMarker {
                index: 0,
                name: None
            }),
        }]
    );
    assert!(s.timeout.is_some());
    // `kind`, `position` and `type` are ordinary column names.
    let s = select(GOLDEN[4]);
    assert_eq!(
        s.selection,
        Selection::Items(
            [
                "keyspace_name",
                "table_name",
                "column_name",
                "kind",
                "position",
                "type"
            ]
            .into_iter()
            .map(col)
            .collect()
        )
    );
}

#[test]
fn golden_use_quoted() {
    assert_eq!(
        parse("USE \"MyKs\""),
        Statement::Use {
            keyspace: "MyKs".into()
        }
    );
    assert_eq!(
        parse("use MyKs;"),
        Statement::Use {
            keyspace: "myks".into()
        }
    );
}

#[test]
fn golden_generation_queries() {
    let s = select(GOLDEN[12]);
    assert_eq!(s.selection, Selection::Items(vec![col("time")]));
    assert_eq!(
        s.where_clause,
        vec![
            rel("key", CompareOp::Eq, string("timestamps")),
            rel("time", CompareOp::Le, marker(0)),
        ]
    );
    assert_eq!(s.order_by, vec![("time".to_owned(), Order::Desc)]);
    assert_eq!(s.limit, Some(int("1")));
    assert_eq!(
        select(GOLDEN[13]).order_by,
        vec![("time".into(), Order::Asc)]
    );

    let s = select(GOLDEN[14]);
    assert_eq!(
        s.selection,
        Selection::Items(vec![SelectItem {
            selector: Selector::Function {
                name: name("min"),
                args: vec![Selector::Column("time".into())],
            },
            alias: None,
        }])
    );
    assert_eq!(s.where_clause[1], rel("time", CompareOp::Gt, marker(0)));
}

#[test]
fn golden_count_and_tablet_streams() {
    let s = select(GOLDEN[16]);
    assert_eq!(
        s.selection,
        Selection::Items(vec![SelectItem {
            selector: Selector::CountAll,
            alias: None
        }])
    );
    let s = select(GOLDEN[18]);
    assert_eq!(
        s.where_clause,
        vec![
            rel("keyspace_name", CompareOp::Eq, marker(0)),
            rel("table_name", CompareOp::Eq, marker(1)),
            rel("timestamp", CompareOp::Eq, marker(2)),
            rel("stream_state", CompareOp::Eq, int("0")),
        ]
    );
}

#[test]
fn golden_cdc_log_window_queries() {
    let s = select(GOLDEN[19]);
    assert_eq!(s.selection, Selection::Wildcard);
    assert_eq!(s.table, qname("ks", "t_scylla_cdc_log"));
    assert!(s.bypass_cache);
    assert_eq!(
        s.where_clause,
        vec![
            Relation::In {
                column: "cdc$stream_id".into(),
                values: InValues::Marker(BindMarker {
                    index: 0,
                    name: None
                }),
            },
            rel(
                "cdc$time",
                CompareOp::Ge,
                Term::FunctionCall {
                    name: name("mintimeuuid"),
                    args: vec![marker(1)]
                }
            ),
            rel(
                "cdc$time",
                CompareOp::Lt,
                Term::FunctionCall {
                    name: name("mintimeuuid"),
                    args: vec![marker(2)]
                }
            ),
        ]
    );

    let s = select(GOLDEN[20]);
    assert_eq!(s.table, qname("ks", "t_scylla_cdc_log"));
    assert!(!s.bypass_cache);
    assert_eq!(s.where_clause.len(), 3);

    let s = select(GOLDEN[21]);
    assert_eq!(
        s.where_clause[0],
        Relation::In {
            column: "cdc$stream_id".into(),
            values: InValues::List(vec![marker(0), marker(1)]),
        }
    );
    assert!(s.bypass_cache);
}

#[test]
fn golden_writetime_ttl_token_and_per_partition_limit() {
    let s = select(GOLDEN[22]);
    let Selection::Items(items) = &s.selection else {
        panic!("expected items");
    };
    let selectors: Vec<&Selector> = items.iter().map(|i| &i.selector).collect();
    assert_eq!(
        selectors,
        vec![
            &Selector::WriteTime("tup".into()),
            &Selector::Ttl("v".into()),
            &Selector::Function {
                name: name("token"),
                args: vec![Selector::Column("pk".into())]
            },
            &Selector::Column("pk".into()),
        ]
    );
    assert_eq!(
        s.where_clause,
        vec![
            Relation::Token {
                columns: vec!["pk".into()],
                op: CompareOp::Gt,
                value: marker(0)
            },
            Relation::Token {
                columns: vec!["pk".into()],
                op: CompareOp::Le,
                value: marker(1)
            },
        ]
    );
    assert_eq!(s.per_partition_limit, Some(int("1")));
    assert_eq!(s.limit, None);
}

#[test]
fn golden_create_table_with_cdc() {
    let t = create_table(GOLDEN[28]);
    assert_eq!(t.name, qname("ks", "t"));
    let cols: Vec<(&str, &TypeExpr, bool)> = t
        .columns
        .iter()
        .map(|c| (c.name.as_str(), &c.ty, c.is_static))
        .collect();
    let ut = TypeExpr::UserDefined(name("ut"));
    assert_eq!(
        cols,
        vec![
            ("pk", &native(CqlType::Int), false),
            ("ck", &native(CqlType::Int), false),
            ("s", &native(CqlType::Int), true),
            ("v", &native(CqlType::Int), false),
            (
                "m",
                &TypeExpr::Map(
                    Box::new(native(CqlType::Int)),
                    Box::new(native(CqlType::Text))
                ),
                false
            ),
            ("l", &TypeExpr::List(Box::new(native(CqlType::Text))), false),
            ("st", &TypeExpr::Set(Box::new(native(CqlType::Int))), false),
            ("u", &TypeExpr::Frozen(Box::new(ut.clone())), false),
            ("nu", &ut, false),
        ]
    );
    assert_eq!(
        t.primary_key,
        PrimaryKey {
            partition_key: vec!["pk".into()],
            clustering: vec!["ck".into()],
        }
    );
    assert_eq!(t.options.properties.len(), 1);
    let cdc = &t.options.properties[0];
    assert_eq!(cdc.name, "cdc");
    assert_eq!(
        cdc.value.as_text_map().unwrap(),
        vec![
            ("enabled".to_owned(), "true".to_owned()),
            ("preimage".to_owned(), "full".to_owned()),
            ("postimage".to_owned(), "true".to_owned()),
            ("ttl".to_owned(), "3600".to_owned()),
        ]
    );
}

#[test]
fn golden_create_keyspace_with_tablets() {
    let Statement::CreateKeyspace(ks) = parse(GOLDEN[30]) else {
        panic!("not a CREATE KEYSPACE");
    };
    assert_eq!(ks.name, "ks");
    assert!(!ks.if_not_exists);
    assert_eq!(ks.properties.len(), 2);
    assert_eq!(ks.properties[0].name, "replication");
    assert_eq!(
        ks.properties[0].value,
        OptionValue::Map(vec![
            (
                Literal::String("class".into()),
                Literal::String("NetworkTopologyStrategy".into())
            ),
            (
                Literal::String("replication_factor".into()),
                Literal::Integer("3".into())
            ),
        ])
    );
    assert_eq!(ks.properties[1].name, "tablets");
    assert_eq!(
        ks.properties[1].value,
        OptionValue::Map(vec![(
            Literal::String("enabled".into()),
            Literal::Boolean(false)
        )])
    );
}

#[test]
fn golden_composite_partition_key_and_clustering_order() {
    let t = create_table(GOLDEN[31]);
    assert_eq!(
        t.options.clustering_order,
        vec![("time".to_owned(), Order::Desc)]
    );
    let t = create_table(GOLDEN[32]);
    assert_eq!(
        t.primary_key,
        PrimaryKey {
            partition_key: vec!["keyspace_name".into(), "table_name".into()],
            clustering: vec![
                "timestamp".into(),
                "stream_state".into(),
                "stream_id".into()
            ],
        }
    );
    assert_eq!(t.columns[3].ty, native(CqlType::Tinyint));
}

#[test]
fn golden_insert_with_ttl_and_timestamp_markers() {
    let i = insert(GOLDEN[33]);
    assert_eq!(i.table, qname("ks", "t"));
    assert_eq!(
        i.values,
        InsertValues::Columns(vec![
            ("pk".into(), marker(0)),
            ("ck".into(), marker(1)),
            ("v".into(), marker(2)),
        ])
    );
    assert_eq!(i.using.ttl, Some(marker(3)));
    assert_eq!(i.using.timestamp, Some(marker(4)));
    assert_eq!(i.using.timeout, None);
    assert!(!i.if_not_exists);
}

#[test]
fn golden_update_with_collection_and_udt_assignments() {
    let u = update(GOLDEN[34]);
    assert_eq!(
        u.assignments,
        vec![
            Assignment::Add {
                column: "m".into(),
                value: Term::Map(vec![(int("1"), string("a"))]),
            },
            Assignment::Prepend {
                column: "l".into(),
                value: Term::List(vec![string("x")]),
            },
            Assignment::SetField {
                column: "nu".into(),
                field: "a".into(),
                value: int("0"),
            },
            Assignment::SetElement {
                column: "m".into(),
                key: int("2"),
                value: Term::Literal(Literal::Null),
            },
        ]
    );
    assert_eq!(
        u.where_clause,
        vec![
            rel("pk", CompareOp::Eq, int("0")),
            Relation::In {
                column: "ck".into(),
                values: InValues::List(vec![int("1"), int("2")]),
            },
        ]
    );
    assert_eq!(u.condition, Some(Conditional::Exists));
}

#[test]
fn golden_delete_with_elements_fields_and_multi_column_ranges() {
    let d = delete(GOLDEN[35]);
    assert_eq!(
        d.columns,
        vec![
            ColumnTarget::Element {
                column: "m".into(),
                key: int("1")
            },
            ColumnTarget::Field {
                column: "nu".into(),
                field: "b".into()
            },
            ColumnTarget::Column("v".into()),
        ]
    );
    assert_eq!(d.using.timestamp, Some(int("1000")));
    assert_eq!(
        d.where_clause,
        vec![
            rel("pk", CompareOp::Eq, int("0")),
            Relation::MultiCompare {
                columns: vec!["ck1".into(), "ck2".into()],
                op: CompareOp::Ge,
                value: Term::Tuple(vec![int("1"), int("2")]),
            },
            Relation::MultiCompare {
                columns: vec!["ck1".into(), "ck2".into()],
                op: CompareOp::Lt,
                value: Term::Tuple(vec![int("3"), int("4")]),
            },
        ]
    );
    assert_eq!(d.condition, None);
}

#[test]
fn golden_unlogged_batch() {
    let b = batch(GOLDEN[36]);
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.using.timestamp, Some(int("5")));
    assert_eq!(b.statements.len(), 2);
    assert_eq!(
        b.statements[0],
        BatchStatement::Insert(Insert {
            table: name("t"),
            values: InsertValues::Columns(vec![("a".into(), int("1"))]),
            if_not_exists: false,
            using: Using::default(),
        })
    );
    assert_eq!(
        b.statements[1],
        BatchStatement::Delete(Delete {
            columns: vec![],
            table: name("t"),
            using: Using::default(),
            where_clause: vec![rel("a", CompareOp::Eq, int("2"))],
            condition: None,
        })
    );
}

// ---------------------------------------------------------------------------------------
// SELECT forms
// ---------------------------------------------------------------------------------------

#[test]
fn select_modifiers_and_aliases() {
    let s = select("SELECT JSON DISTINCT pk AS p, count(1) AS n FROM t");
    assert!(s.json && s.distinct);
    assert_eq!(
        s.selection,
        Selection::Items(vec![
            SelectItem {
                selector: Selector::Column("pk".into()),
                alias: Some("p".into())
            },
            SelectItem {
                selector: Selector::CountAll,
                alias: Some("n".into())
            },
        ])
    );
    let s = select("select json * from t");
    assert!(s.json && !s.distinct);
    assert_eq!(s.selection, Selection::Wildcard);
    // `json` and `distinct` as column names.
    let s = select("SELECT json FROM t");
    assert!(!s.json);
    assert_eq!(s.selection, Selection::Items(vec![col("json")]));
    let s = select("SELECT distinct, json FROM t");
    assert!(!s.distinct && !s.json);
    let s = select("SELECT json AS j FROM t");
    assert!(!s.json);
    let s = select("SELECT DISTINCT distinct FROM t");
    assert!(s.distinct);
    assert_eq!(s.selection, Selection::Items(vec![col("distinct")]));
}

#[test]
fn select_functions_casts_fields_and_elements() {
    let s = select(
        "SELECT CAST(v AS text), toTimestamp(t), blobAsText(b), u.f, m['k'], uuid(), now(), \
         ks.myfn(a, count(b)), \"MyFn\"(x), dateOf(t) FROM t",
    );
    let Selection::Items(items) = s.selection else {
        panic!()
    };
    let sels: Vec<Selector> = items.into_iter().map(|i| i.selector).collect();
    assert_eq!(
        sels,
        vec![
            Selector::Cast {
                selector: Box::new(Selector::Column("v".into())),
                ty: native(CqlType::Text)
            },
            Selector::Function {
                name: name("totimestamp"),
                args: vec![Selector::Column("t".into())]
            },
            Selector::Function {
                name: name("blobastext"),
                args: vec![Selector::Column("b".into())]
            },
            Selector::Field {
                selector: Box::new(Selector::Column("u".into())),
                field: "f".into()
            },
            Selector::Element {
                selector: Box::new(Selector::Column("m".into())),
                key: string("k")
            },
            Selector::Function {
                name: name("uuid"),
                args: vec![]
            },
            Selector::Function {
                name: name("now"),
                args: vec![]
            },
            Selector::Function {
                name: qname("ks", "myfn"),
                args: vec![
                    Selector::Column("a".into()),
                    Selector::Function {
                        name: name("count"),
                        args: vec![Selector::Column("b".into())]
                    }
                ]
            },
            Selector::Function {
                name: name("MyFn"),
                args: vec![Selector::Column("x".into())]
            },
            Selector::Function {
                name: name("dateof"),
                args: vec![Selector::Column("t".into())]
            },
        ]
    );
}

/// ScyllaDB 2025.x's selector grammar (`unaliasedSelector`, `selectionFunctionArgs` and
/// `countArgument` in `cql3/Cql.g`) has no constants, bind markers, arithmetic or type hints,
/// takes only native types in CAST and only `*` or `1` in COUNT: each is a syntax error.
#[test]
fn selectors_take_no_terms() {
    for text in [
        "SELECT 1 FROM t",
        "SELECT 'text' FROM t",
        "SELECT ? FROM t",
        "SELECT :x FROM t",
        "SELECT (int) 5 FROM t",
        "SELECT i + 1 FROM t",
        "SELECT -i FROM t",
        "SELECT minTimeuuid('2013-01-01 00:00+0000') FROM t",
        "SELECT maxTimeuuid(1000) FROM t",
        "SELECT intAsBlob(?) FROM t",
        "SELECT blobAsText(textAsBlob('x')) FROM t",
        "SELECT count(2) FROM t",
        "SELECT count('a') FROM t",
        "SELECT CAST(v AS frozen<list<int>>) FROM t",
        "SELECT CAST(v AS my_type) FROM t",
        "SELECT writetime(m['k']) FROM t",
    ] {
        assert_eq!(err(text).kind, ParseErrorKind::Syntax, "{text}");
    }
    // COUNT(1) is COUNT(*); subscripts keep their terms.
    let s = select("SELECT COUNT(1), m[?], l[0] FROM t");
    let Selection::Items(items) = s.selection else {
        panic!()
    };
    assert_eq!(items[0].selector, Selector::CountAll);
    assert_eq!(
        items[1].selector,
        Selector::Element {
            selector: Box::new(Selector::Column("m".into())),
            key: marker(0)
        }
    );
    assert_eq!(
        items[2].selector,
        Selector::Element {
            selector: Box::new(Selector::Column("l".into())),
            key: int("0")
        }
    );
}

#[test]
fn select_all_clauses() {
    let s = select(
        "SELECT a FROM ks.t WHERE pk = 1 AND c > 2 GROUP BY pk, c ORDER BY c DESC, d \
         PER PARTITION LIMIT ? LIMIT :lim ALLOW FILTERING BYPASS CACHE USING TIMEOUT 5s",
    );
    assert_eq!(s.group_by, vec!["pk".to_owned(), "c".to_owned()]);
    assert_eq!(
        s.order_by,
        vec![("c".to_owned(), Order::Desc), ("d".to_owned(), Order::Asc)]
    );
    assert_eq!(s.per_partition_limit, Some(marker(0)));
    assert_eq!(
        s.limit,
        Some(Term::Marker(BindMarker {
            index: 1,
            name: Some("lim".into())
        }))
    );
    assert!(s.allow_filtering && s.bypass_cache);
    assert!(s.timeout.is_some());
}

#[test]
fn select_trailing_clauses_in_any_order() {
    for text in [
        "SELECT * FROM t ALLOW FILTERING BYPASS CACHE USING TIMEOUT 1s",
        "SELECT * FROM t USING TIMEOUT 1s BYPASS CACHE ALLOW FILTERING",
        "SELECT * FROM t BYPASS CACHE USING TIMEOUT 1s ALLOW FILTERING",
        "select * from t using timeout 1s allow filtering bypass cache;",
    ] {
        let s = select(text);
        assert!(
            s.allow_filtering && s.bypass_cache && s.timeout.is_some(),
            "{text}"
        );
    }
    assert!(
        err("SELECT * FROM t ALLOW FILTERING ALLOW FILTERING")
            .message
            .contains("twice")
    );
    let e = err("SELECT * FROM t USING TTL 5");
    assert!(e.message.contains("expecting TIMEOUT"), "{e}");
    let e = err("SELECT * FROM t USING TIMEOUT 5");
    assert!(e.message.contains("duration"), "{e}");
}

#[test]
fn select_relations() {
    let s = select(
        "SELECT * FROM t WHERE a != 1 AND b CONTAINS 2 AND c CONTAINS KEY 'k' AND d LIKE 'x%' \
         AND m['k'] = 3 AND e IS NOT NULL AND (c1, c2) IN ((1, 2), (3, 4)) AND (c1, c2) IN ? \
         AND (c1, c2) = ? AND (c1) IN (?, ?) AND token(a, b) >= token(?, ?) AND token(a) < -5 \
         AND f IN ()",
    );
    assert_eq!(
        s.where_clause,
        vec![
            rel("a", CompareOp::Ne, int("1")),
            Relation::Contains {
                column: "b".into(),
                key: false,
                value: int("2")
            },
            Relation::Contains {
                column: "c".into(),
                key: true,
                value: string("k")
            },
            Relation::Like {
                column: "d".into(),
                pattern: string("x%")
            },
            Relation::Element {
                column: "m".into(),
                key: string("k"),
                op: CompareOp::Eq,
                value: int("3")
            },
            Relation::IsNotNull { column: "e".into() },
            Relation::MultiIn {
                columns: vec!["c1".into(), "c2".into()],
                values: InValues::List(vec![
                    Term::Tuple(vec![int("1"), int("2")]),
                    Term::Tuple(vec![int("3"), int("4")]),
                ])
            },
            Relation::MultiIn {
                columns: vec!["c1".into(), "c2".into()],
                values: InValues::Marker(BindMarker {
                    index: 0,
                    name: None
                })
            },
            Relation::MultiCompare {
                columns: vec!["c1".into(), "c2".into()],
                op: CompareOp::Eq,
                value: marker(1)
            },
            Relation::MultiIn {
                columns: vec!["c1".into()],
                values: InValues::List(vec![marker(2), marker(3)])
            },
            Relation::Token {
                columns: vec!["a".into(), "b".into()],
                op: CompareOp::Ge,
                value: Term::FunctionCall {
                    name: name("token"),
                    args: vec![marker(4), marker(5)]
                }
            },
            Relation::Token {
                columns: vec!["a".into()],
                op: CompareOp::Lt,
                value: int("-5")
            },
            Relation::In {
                column: "f".into(),
                values: InValues::List(vec![])
            },
        ]
    );
}

// ---------------------------------------------------------------------------------------
// INSERT / UPDATE / DELETE / BATCH forms
// ---------------------------------------------------------------------------------------

#[test]
fn insert_forms() {
    let i = insert(
        "INSERT INTO t (a, \"B\") VALUES (1, 'x') IF NOT EXISTS USING TTL 10 AND TIMESTAMP 20 AND TIMEOUT 5s",
    );
    assert!(i.if_not_exists);
    assert_eq!(i.using.ttl, Some(int("10")));
    assert_eq!(i.using.timestamp, Some(int("20")));
    assert!(matches!(
        i.using.timeout,
        Some(Term::Literal(Literal::Duration(_)))
    ));
    assert_eq!(
        i.values,
        InsertValues::Columns(vec![("a".into(), int("1")), ("B".into(), string("x"))])
    );

    let i = insert("INSERT INTO ks.t JSON '{\"a\": 1}' DEFAULT UNSET IF NOT EXISTS");
    assert_eq!(
        i.values,
        InsertValues::Json {
            json: string("{\"a\": 1}"),
            default: JsonDefault::Unset
        }
    );
    assert!(i.if_not_exists);
    let i = insert("INSERT INTO t JSON ? DEFAULT NULL USING TTL 3");
    assert_eq!(
        i.values,
        InsertValues::Json {
            json: marker(0),
            default: JsonDefault::Null
        }
    );
    assert_eq!(i.using.ttl, Some(int("3")));
    let i = insert("INSERT INTO t JSON $${\"a\": \"it's\"}$$");
    assert_eq!(
        i.values,
        InsertValues::Json {
            json: string("{\"a\": \"it's\"}"),
            default: JsonDefault::Null
        }
    );
    // A json column still works with the column-list form.
    let i = insert("INSERT INTO t (json) VALUES ('x')");
    assert_eq!(
        i.values,
        InsertValues::Columns(vec![("json".into(), string("x"))])
    );
}

#[test]
fn insert_with_unmatched_columns_is_invalid() {
    let e = err("INSERT INTO t (a, b) VALUES (1)");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert_eq!(e.to_string(), "Unmatched column names/values");
}

#[test]
fn update_assignment_forms() {
    let u = update(
        "UPDATE t USING TIMEOUT 10ms AND TTL 3 SET c = c + 1, d = d - 2, e += 3, f -= {1}, g = g -1, \
         h = [1] + h, i = (int) 5, j = ks.fn(1) WHERE k = 0 IF a = 1 AND b.f > 2 AND m['x'] IN (1, ?) \
         AND s CONTAINS 3 AND s CONTAINS KEY 4 AND n LIKE 'a%' AND exists != 0",
    );
    assert_eq!(u.using.ttl, Some(int("3")));
    assert!(u.using.timeout.is_some());
    assert_eq!(
        u.assignments,
        vec![
            Assignment::Add {
                column: "c".into(),
                value: int("1")
            },
            Assignment::Remove {
                column: "d".into(),
                value: int("2")
            },
            Assignment::Add {
                column: "e".into(),
                value: int("3")
            },
            Assignment::Remove {
                column: "f".into(),
                value: Term::Set(vec![int("1")])
            },
            Assignment::Remove {
                column: "g".into(),
                value: int("1")
            },
            Assignment::Prepend {
                column: "h".into(),
                value: Term::List(vec![int("1")])
            },
            Assignment::Set {
                column: "i".into(),
                value: Term::Cast {
                    ty: native(CqlType::Int),
                    term: Box::new(int("5"))
                }
            },
            Assignment::Set {
                column: "j".into(),
                value: Term::FunctionCall {
                    name: qname("ks", "fn"),
                    args: vec![int("1")]
                }
            },
        ]
    );
    let Some(Conditional::Conditions(conds)) = u.condition else {
        panic!("expected conditions")
    };
    assert_eq!(
        conds,
        vec![
            Condition::Compare {
                target: ColumnTarget::Column("a".into()),
                op: CompareOp::Eq,
                value: int("1")
            },
            Condition::Compare {
                target: ColumnTarget::Field {
                    column: "b".into(),
                    field: "f".into()
                },
                op: CompareOp::Gt,
                value: int("2")
            },
            Condition::In {
                target: ColumnTarget::Element {
                    column: "m".into(),
                    key: string("x")
                },
                values: InValues::List(vec![int("1"), marker(0)])
            },
            Condition::Contains {
                target: ColumnTarget::Column("s".into()),
                key: false,
                value: int("3")
            },
            Condition::Contains {
                target: ColumnTarget::Column("s".into()),
                key: true,
                value: int("4")
            },
            Condition::Like {
                target: ColumnTarget::Column("n".into()),
                pattern: string("a%")
            },
            Condition::Compare {
                target: ColumnTarget::Column("exists".into()),
                op: CompareOp::Ne,
                value: int("0")
            },
        ]
    );
}

#[test]
fn update_only_allows_self_referencing_arithmetic() {
    let e = err("UPDATE t SET c = d + 1 WHERE k = 0");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    assert!(e.message.contains("X = X + <value>"), "{e}");
    let e = err("UPDATE t SET l = [1] + m WHERE k = 0");
    assert!(e.message.contains("X = <value> + X"), "{e}");
    let e = err("UPDATE t SET c = c WHERE k = 0");
    assert!(e.message.contains("expecting '+' or '-'"), "{e}");
    assert!(
        err("UPDATE t SET c = 1")
            .message
            .contains("expecting WHERE")
    );
    assert!(
        err("UPDATE t SET c = 1 WHERE k = 0 IF NOT EXISTS")
            .message
            .contains("mismatched input 'NOT'")
    );
}

#[test]
fn delete_forms() {
    let d = delete("DELETE FROM ks.t USING TIMESTAMP ? AND TIMEOUT ? WHERE k = ? IF EXISTS");
    assert!(d.columns.is_empty());
    assert_eq!(d.using.timestamp, Some(marker(0)));
    assert_eq!(d.using.timeout, Some(marker(1)));
    assert_eq!(d.where_clause, vec![rel("k", CompareOp::Eq, marker(2))]);
    assert_eq!(d.condition, Some(Conditional::Exists));
    let d = delete("DELETE l[?] FROM t WHERE k = 0 IF v = 3");
    assert_eq!(
        d.columns,
        vec![ColumnTarget::Element {
            column: "l".into(),
            key: marker(0)
        }]
    );
    assert!(matches!(d.condition, Some(Conditional::Conditions(ref c)) if c.len() == 1));
    // TTL is not allowed on DELETE.
    let e = err("DELETE FROM t USING TTL 5 WHERE k = 0");
    assert!(e.message.contains("expecting TIMESTAMP or TIMEOUT"), "{e}");
    assert!(err("DELETE FROM t").message.contains("expecting WHERE"));
}

#[test]
fn batch_forms_and_marker_numbering_across_statements() {
    let text = "BEGIN BATCH USING TIMESTAMP ? \
                INSERT INTO t (a, b) VALUES (?, :named) \
                UPDATE t SET c = ? WHERE a = ?; \
                DELETE v FROM t WHERE a IN ? IF EXISTS; \
                APPLY BATCH;";
    let stmt = parse(text);
    assert_eq!(marker_indexes(&stmt), (0..6).collect::<Vec<_>>());
    let Statement::Batch(b) = stmt else { panic!() };
    assert_eq!(b.kind, BatchKind::Logged);
    assert_eq!(b.using.timestamp, Some(marker(0)));
    let per_statement: Vec<Vec<(usize, Option<String>)>> = b
        .statements
        .iter()
        .map(|s| {
            s.bind_markers()
                .into_iter()
                .map(|m| (m.index, m.name.clone()))
                .collect()
        })
        .collect();
    assert_eq!(
        per_statement,
        vec![
            vec![(1, None), (2, Some("named".into()))],
            vec![(3, None), (4, None)],
            vec![(5, None)],
        ]
    );
    assert_eq!(b.statements[1].table(), &name("t"));

    assert_eq!(
        batch("BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 0 APPLY BATCH").kind,
        BatchKind::Counter
    );
    assert!(batch("BEGIN BATCH APPLY BATCH").statements.is_empty());
    let e = err("BEGIN BATCH SELECT * FROM t APPLY BATCH");
    assert!(
        e.message
            .contains("expecting INSERT, UPDATE, DELETE or APPLY BATCH"),
        "{e}"
    );
    assert!(
        err("BEGIN BATCH INSERT INTO t (a) VALUES (1)")
            .message
            .contains("<EOF>")
    );
}

#[test]
fn markers_are_numbered_in_order_of_appearance() {
    // INSERT: values before USING.
    let stmt = parse("INSERT INTO t (a, b) VALUES (:x, ?) USING TTL :ttl AND TIMESTAMP ?");
    let markers: Vec<(usize, Option<String>)> = stmt
        .bind_markers()
        .into_iter()
        .map(|m| (m.index, m.name.clone()))
        .collect();
    assert_eq!(
        markers,
        vec![
            (0, Some("x".into())),
            (1, None),
            (2, Some("ttl".into())),
            (3, None)
        ]
    );
    // UPDATE: USING before SET, before WHERE, before IF.
    let u = update("UPDATE t USING TTL ? SET m[?] = ?, l = l + [?] WHERE k = ? IF c = ?");
    assert_eq!(u.using.ttl, Some(marker(0)));
    assert_eq!(
        u.assignments[0],
        Assignment::SetElement {
            column: "m".into(),
            key: marker(1),
            value: marker(2)
        }
    );
    assert_eq!(
        u.assignments[1],
        Assignment::Add {
            column: "l".into(),
            value: Term::List(vec![marker(3)])
        }
    );
    assert_eq!(u.where_clause, vec![rel("k", CompareOp::Eq, marker(4))]);
    // Named markers keep their (case-folded or quoted) name.
    let s = select("SELECT * FROM t WHERE a = :Foo AND b = :\"Bar\" AND c = : baz");
    let names: Vec<Option<String>> = Statement::Select(Box::new(s))
        .bind_markers()
        .into_iter()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(
        names,
        vec![Some("foo".into()), Some("Bar".into()), Some("baz".into())]
    );
    // DDL has none.
    assert_eq!(parse("DROP TABLE t").bind_count(), 0);
}

// ---------------------------------------------------------------------------------------
// Terms and literals
// ---------------------------------------------------------------------------------------

#[test]
fn string_literals() {
    assert_eq!(literal("'it''s'"), Literal::String("it's".into()));
    assert_eq!(literal("''"), Literal::String(String::new()));
    assert_eq!(literal("''''"), Literal::String("'".into()));
    assert_eq!(
        literal("$$raw 'x' \"y\"$$"),
        Literal::String("raw 'x' \"y\"".into())
    );
    assert_eq!(literal("$$$$"), Literal::String(String::new()));
    assert_eq!(
        literal("'héllo\nworld'"),
        Literal::String("héllo\nworld".into())
    );
}

#[test]
fn numeric_literals_keep_their_text() {
    assert_eq!(literal("42"), Literal::Integer("42".into()));
    assert_eq!(literal("-42"), Literal::Integer("-42".into()));
    assert_eq!(literal("- 42"), Literal::Integer("-42".into()));
    let huge = "123456789012345678901234567890123456789012345678901234567890";
    assert_eq!(literal(huge), Literal::Integer(huge.into()));
    assert_eq!(
        literal(&format!("-{huge}")),
        Literal::Integer(format!("-{huge}"))
    );
    assert_eq!(literal("1.5"), Literal::Float("1.5".into()));
    assert_eq!(literal("-1e10"), Literal::Float("-1e10".into()));
    assert_eq!(
        literal("0.10000000000000000000000001"),
        Literal::Float("0.10000000000000000000000001".into())
    );
    assert_eq!(literal("NaN"), Literal::Float("NaN".into()));
    assert_eq!(literal("nan"), Literal::Float("NaN".into()));
    assert_eq!(literal("Infinity"), Literal::Float("Infinity".into()));
    assert_eq!(literal("-Infinity"), Literal::Float("-Infinity".into()));
    assert_eq!(literal("-infinity"), Literal::Float("-Infinity".into()));
}

#[test]
fn boolean_null_uuid_and_blob_literals() {
    assert_eq!(literal("true"), Literal::Boolean(true));
    assert_eq!(literal("FALSE"), Literal::Boolean(false));
    assert_eq!(literal("null"), Literal::Null);
    assert_eq!(literal("NULL"), Literal::Null);
    assert_eq!(
        literal("123e4567-e89b-12d3-a456-426614174000"),
        Literal::Uuid(Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap())
    );
    assert_eq!(
        literal("DEADBEEF-DEAD-BEEF-DEAD-BEEFDEADBEEF"),
        Literal::Uuid(Uuid::parse_str("deadbeef-dead-beef-dead-beefdeadbeef").unwrap())
    );
    assert_eq!(literal("0xCAFE"), Literal::Blob(vec![0xca, 0xfe]));
    assert_eq!(literal("0xcafe"), Literal::Blob(vec![0xca, 0xfe]));
    assert_eq!(literal("0x"), Literal::Blob(vec![]));
    let e = err("INSERT INTO t (v) VALUES (-0x)");
    assert!(e.message.contains("cannot be negative"), "{e}");
    let e = err("INSERT INTO t (v) VALUES (0xABC)");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert!(e.message.contains("even"), "{e}");
}

#[test]
fn uuid_versus_arithmetic() {
    // A full uuid shape is one constant ...
    assert!(matches!(
        literal("123e4567-e89b-12d3-a456-426614174000"),
        Literal::Uuid(_)
    ));
    // ... while `c = c - 123e4567` is a decrement by a float.
    assert_eq!(
        update("UPDATE t SET c = c - 123e4567 WHERE k = 0").assignments,
        vec![Assignment::Remove {
            column: "c".into(),
            value: Term::Literal(Literal::Float("123e4567".into()))
        }]
    );
    // A partial uuid is not a value.
    assert!(parse_statement("INSERT INTO t (v) VALUES (123e4567-e89b)").is_err());
}

#[test]
fn duration_literals() {
    let d = |months, days, nanoseconds| {
        Literal::Duration(DurationLiteral {
            months,
            days,
            nanoseconds,
        })
    };
    assert_eq!(literal("1h30m"), d(0, 0, 5_400_000_000_000));
    assert_eq!(literal("12mo3d"), d(12, 3, 0));
    assert_eq!(literal("2us"), d(0, 0, 2_000));
    assert_eq!(literal("5ns"), d(0, 0, 5));
    assert_eq!(literal("P1DT2H"), d(0, 1, 7_200_000_000_000));
    assert_eq!(literal("P2W"), d(0, 14, 0));
    assert_eq!(literal("-1h"), d(0, 0, -3_600_000_000_000));
    assert_eq!(literal("-P1D"), d(0, -1, 0));
    assert_eq!(literal("P0001-00-00T00:00:00"), d(12, 0, 0));
    let e = err("INSERT INTO t (v) VALUES (1h2d)");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert!(e.message.contains("order"), "{e}");
    assert!(parse_statement("INSERT INTO t (v) VALUES (3x)").is_err());
}

#[test]
fn collection_udt_tuple_and_function_terms() {
    assert_eq!(
        term("[1, [2], []]"),
        Term::List(vec![
            int("1"),
            Term::List(vec![int("2")]),
            Term::List(vec![])
        ])
    );
    assert_eq!(term("{1, 2}"), Term::Set(vec![int("1"), int("2")]));
    assert_eq!(term("{?}"), Term::Set(vec![marker(0)]));
    assert_eq!(
        term("{'a': 1, 'b': {2}}"),
        Term::Map(vec![
            (string("a"), int("1")),
            (string("b"), Term::Set(vec![int("2")]))
        ])
    );
    assert_eq!(
        term("{? : :v}"),
        Term::Map(vec![(
            marker(0),
            Term::Marker(BindMarker {
                index: 1,
                name: Some("v".into())
            })
        )])
    );
    assert_eq!(
        term("{true: 1}"),
        Term::Map(vec![(Term::Literal(Literal::Boolean(true)), int("1"))])
    );
    assert_eq!(term("{}"), Term::EmptyCollection);
    assert_eq!(
        term("{a: 1, \"B\": 'x', c: {d: null}}"),
        Term::Udt(vec![
            ("a".into(), int("1")),
            ("B".into(), string("x")),
            (
                "c".into(),
                Term::Udt(vec![("d".into(), Term::Literal(Literal::Null))])
            ),
        ])
    );
    assert_eq!(term("(1, 'a')"), Term::Tuple(vec![int("1"), string("a")]));
    assert_eq!(term("(1)"), Term::Tuple(vec![int("1")]));
    assert_eq!(
        term("(now(), ?)"),
        Term::Tuple(vec![
            Term::FunctionCall {
                name: name("now"),
                args: vec![]
            },
            marker(0)
        ])
    );
    assert_eq!(
        term("(frozen<list<int>>) [1]"),
        Term::Cast {
            ty: TypeExpr::Frozen(Box::new(TypeExpr::List(Box::new(native(CqlType::Int))))),
            term: Box::new(Term::List(vec![int("1")]))
        }
    );
    assert_eq!(
        term("(set<int>) {}"),
        Term::Cast {
            ty: TypeExpr::Set(Box::new(native(CqlType::Int))),
            term: Box::new(Term::EmptyCollection)
        }
    );
    assert_eq!(
        term("(ut) {a: 1}"),
        Term::Cast {
            ty: TypeExpr::UserDefined(name("ut")),
            term: Box::new(Term::Udt(vec![("a".into(), int("1"))]))
        }
    );
    for f in [
        "now()",
        "uuid()",
        "currentTimestamp()",
        "currentDate()",
        "currentTime()",
        "currentTimeUUID()",
        "minTimeuuid('2020-01-01')",
        "maxTimeuuid(?)",
        "toTimestamp(now())",
        "token(1, 2)",
        "TOKEN(1)",
        "system.token(1)",
        "system.now()",
    ] {
        assert!(matches!(term(f), Term::FunctionCall { .. }), "{f}");
    }
    // SCYLLA_TIMEUUID_LIST_INDEX is a reserved word of Cql.g's list subscript only.
    assert_eq!(
        update("UPDATE t SET l[SCYLLA_TIMEUUID_LIST_INDEX(?)] = 1 WHERE pk = 0").assignments,
        vec![Assignment::SetElement {
            column: "l".into(),
            key: Term::FunctionCall {
                name: name("scylla_timeuuid_list_index"),
                args: vec![marker(0)]
            },
            value: int("1")
        }]
    );
    assert!(parse_statement("INSERT INTO t (v) VALUES (SCYLLA_TIMEUUID_LIST_INDEX(?))").is_err());
    // A bare column name is not a value.
    let e = err("INSERT INTO t (v) VALUES (x)");
    assert!(e.message.contains("expecting a value"), "{e}");
}

// ---------------------------------------------------------------------------------------
// Identifiers and keywords
// ---------------------------------------------------------------------------------------

#[test]
fn non_reserved_keywords_are_identifiers() {
    let words = [
        "key",
        "time",
        "type",
        "ttl",
        "timestamp",
        "kind",
        "position",
        "value",
        "keys",
        "count",
        "filtering",
        "json",
        "list",
        "map",
        "static",
        "frozen",
        "duration",
        "date",
        "text",
        "int",
        "timeout",
        "cache",
        "bypass",
        "tablets",
        "replication",
        "options",
        "exists",
        "users",
        "role",
        "clustering",
        "partition",
        "per",
        "distinct",
        "contains",
        "writetime",
        "uuid",
        "as",
        "like",
        "group",
        "storage",
        "compact",
        "counter",
        "custom",
        "apply2",
        // Unreserved in ScyllaDB's Cql.g (basic_unreserved_keyword), unlike Cassandra.
        "values",
        "desc",
        "describe",
        "execute",
        "empty",
        "only",
        "effective",
        "varchar",
        "tuple",
        "vector",
        "login",
    ];
    for w in words {
        let text = format!("CREATE TABLE {w} ({w} int PRIMARY KEY, other {w}) WITH {w} = 1");
        // `other <word>` uses the word as a type: a native type or a UDT name.
        let t = create_table(&text);
        assert_eq!(t.name, name(w), "{text}");
        assert_eq!(t.columns[0].name, w, "{text}");
        assert_eq!(t.options.properties[0].name, w, "{text}");

        let text = format!("SELECT {w} FROM {w}.{w} WHERE {w} = 1 AND {w} IN (1) ORDER BY {w}");
        let s = select(&text);
        assert_eq!(s.selection, Selection::Items(vec![col(w)]), "{text}");
        assert_eq!(s.where_clause[0], rel(w, CompareOp::Eq, int("1")), "{text}");

        let text = format!("UPDATE {w} SET {w} = {w} + 1 WHERE {w} = 0");
        assert_eq!(
            update(&text).assignments,
            vec![Assignment::Add {
                column: w.into(),
                value: int("1")
            }],
            "{text}"
        );
        let text = format!("DELETE {w} FROM {w} WHERE {w} = 0");
        assert_eq!(
            delete(&text).columns,
            vec![ColumnTarget::Column(w.into())],
            "{text}"
        );
        let text = format!("INSERT INTO {w} ({w}) VALUES (1)");
        assert!(parse_statement(&text).is_ok(), "{text}");
    }
}

#[test]
fn reserved_keywords_are_refused_as_identifiers() {
    for w in [
        "select",
        "from",
        "where",
        "and",
        "set",
        "table",
        "keyspace",
        "primary",
        "order",
        "limit",
        "using",
        "with",
        "in",
        "null",
        "true",
        "if",
        "not",
        "to",
        "batch",
        "apply",
        "begin",
        "use",
        "into",
        "by",
        "asc",
        "infinity",
        "nan",
        // Reserved in ScyllaDB's Cql.g, not in Cassandra's.
        "cast",
        "default",
        "is",
        "token",
        "unset",
        "replace",
        "materialized",
        "ann",
        "schema",
        "columnfamily",
        "scylla_timeuuid_list_index",
        "vector_search_indexing",
    ] {
        assert!(is_reserved(w), "{w}");
        let text = format!("CREATE TABLE t ({w} int PRIMARY KEY)");
        assert!(parse_statement(&text).is_err(), "{text}");
        // Quoting makes any word a name.
        let text = format!("CREATE TABLE t (\"{w}\" int PRIMARY KEY)");
        assert_eq!(create_table(&text).columns[0].name, w, "{text}");
    }
    let e = err("SELECT a FROM t WHERE select = 1");
    assert!(e.message.contains("reserved keyword"), "{e}");
    assert!(e.message.contains("\"select\""), "{e}");
    assert!(!is_reserved("key") && !is_reserved("json") && !is_reserved("values"));
    // Exactly ScyllaDB's reserved set (every K_ token outside unreserved_keyword) and the
    // BOOLEAN words.
    assert_eq!(super::parser::RESERVED.len(), 65);
}

#[test]
fn keywords_are_case_insensitive_and_names_are_case_folded() {
    let s = select("SeLeCt MyCol, \"MyCol\", \"with \"\"quote\"\"\" FrOm Ks.Tab WhErE A = 1");
    assert_eq!(
        s.selection,
        Selection::Items(vec![col("mycol"), col("MyCol"), col("with \"quote\"")])
    );
    assert_eq!(s.table, qname("ks", "tab"));
    assert_eq!(s.where_clause, vec![rel("a", CompareOp::Eq, int("1"))]);
    assert_eq!(
        select("SELECT * FROM \"Ks\".\"Tab\"").table,
        qname("Ks", "Tab")
    );
}

#[test]
fn comments_whitespace_and_semicolons() {
    let s =
        select("  -- leading comment\n  SELECT /* inline */ a // trailing\n FROM t ; -- after\n");
    assert_eq!(s.selection, Selection::Items(vec![col("a")]));
    assert!(parse_statement("SELECT a FROM t;").is_ok());
    let e = err("SELECT a FROM t; SELECT b FROM t");
    assert_eq!(
        e.to_string(),
        "line 1:17 mismatched input 'SELECT' expecting <EOF>"
    );
    // Cql.g `query: cqlStatement (';')* EOF`.
    assert!(parse_statement("SELECT a FROM t;;").is_ok());
    assert!(parse_statement("SELECT a FROM t ; ; ;").is_ok());
    assert!(parse_statement(";").is_err());
    // A line comment must end with an end of line (Cql.g COMMENT), even the last one.
    assert!(parse_statement("SELECT a FROM t // trailing").is_err());
    assert!(parse_statement("SELECT a FROM t -- trailing").is_err());
    assert!(parse_statement("SELECT a FROM t -- trailing\r").is_ok());
}

// ---------------------------------------------------------------------------------------
// DDL forms
// ---------------------------------------------------------------------------------------

#[test]
fn keyspace_statements() {
    let Statement::CreateKeyspace(ks) = parse(
        "CREATE KEYSPACE IF NOT EXISTS \"Ks\" WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1} AND durable_writes = false AND tablets = {'enabled': true, 'initial': 8}",
    ) else {
        panic!()
    };
    assert!(ks.if_not_exists);
    assert_eq!(ks.name, "Ks");
    assert_eq!(
        ks.properties
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        vec!["replication", "durable_writes", "tablets"]
    );
    assert_eq!(ks.properties[1].value.as_text().as_deref(), Some("false"));
    assert_eq!(
        ks.properties[2].value.as_text_map().unwrap(),
        vec![
            ("enabled".to_owned(), "true".to_owned()),
            ("initial".to_owned(), "8".to_owned())
        ]
    );
    assert_eq!(
        parse("ALTER KEYSPACE ks WITH durable_writes = true"),
        Statement::AlterKeyspace(AlterKeyspace {
            name: "ks".into(),
            properties: vec![Property {
                name: "durable_writes".into(),
                value: OptionValue::Constant(Literal::Boolean(true))
            }]
        })
    );
    assert_eq!(
        parse("DROP KEYSPACE IF EXISTS ks"),
        Statement::DropKeyspace(DropKeyspace {
            name: "ks".into(),
            if_exists: true
        })
    );
    assert_eq!(
        parse("DROP SCHEMA ks"),
        Statement::DropKeyspace(DropKeyspace {
            name: "ks".into(),
            if_exists: false
        })
    );
    let e = err("CREATE KEYSPACE ks WITH durable_writes = true AND durable_writes = false");
    assert!(
        e.message
            .contains("Multiple definition for property durable_writes"),
        "{e}"
    );
    assert!(err("CREATE KEYSPACE ks").message.contains("expecting WITH"));
}

#[test]
fn create_table_forms() {
    let t = create_table(
        "CREATE COLUMNFAMILY IF NOT EXISTS t (a int, b text, c int, d int, e int static, \
         PRIMARY KEY ((a, b), c, d),) WITH CLUSTERING ORDER BY (c DESC, d ASC) AND COMPACT STORAGE \
         AND comment = 'it''s' AND default_time_to_live = 10 AND gc_grace_seconds = 0 \
         AND compaction = {'class': 'SizeTieredCompactionStrategy'} \
         AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'} \
         AND tombstone_gc = {'mode': 'repair'} AND bloom_filter_fp_chance = 0.01 AND speculative_retry = '99.0PERCENTILE'",
    );
    assert!(t.if_not_exists);
    assert_eq!(
        t.primary_key,
        PrimaryKey {
            partition_key: vec!["a".into(), "b".into()],
            clustering: vec!["c".into(), "d".into()],
        }
    );
    assert!(t.columns[4].is_static);
    assert_eq!(
        t.options.clustering_order,
        vec![("c".to_owned(), Order::Desc), ("d".to_owned(), Order::Asc)]
    );
    assert!(t.options.compact_storage);
    let names: Vec<&str> = t
        .options
        .properties
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(
        names,
        vec![
            "comment",
            "default_time_to_live",
            "gc_grace_seconds",
            "compaction",
            "caching",
            "tombstone_gc",
            "bloom_filter_fp_chance",
            "speculative_retry"
        ]
    );
    assert_eq!(
        t.options.properties[0].value,
        OptionValue::Constant(Literal::String("it's".into()))
    );
    assert_eq!(
        t.options.properties[6].value,
        OptionValue::Constant(Literal::Float("0.01".into()))
    );

    let t = create_table("CREATE TABLE t (a int, c int, PRIMARY KEY (a, c))");
    assert_eq!(t.primary_key.partition_key, vec!["a".to_owned()]);
    assert_eq!(t.primary_key.clustering, vec!["c".to_owned()]);
    let t = create_table("CREATE TABLE t (a int, PRIMARY KEY (a))");
    assert!(t.primary_key.clustering.is_empty());
    let t = create_table("CREATE TABLE t (a int PRIMARY KEY, exp timestamp TTL)");
    assert_eq!(t.primary_key.partition_key, vec!["a".to_owned()]);
    assert!(t.columns[1].is_ttl);
    assert_eq!(t.options, TableOptions::default());
}

#[test]
fn create_table_primary_key_rules_are_invalid_requests() {
    let e = err("CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert!(e.message.contains("Multiple PRIMARY KEYs"), "{e}");
    let e = err("CREATE TABLE t (a int PRIMARY KEY, b int PRIMARY KEY)");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    let e = err("CREATE TABLE t (a int, b int)");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert!(e.message.contains("No PRIMARY KEY"), "{e}");
    let e = err("CREATE TABLE t (a int PRIMARY KEY) WITH comment = 'a' AND comment = 'b'");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    assert!(
        e.message
            .contains("Multiple definition for property comment")
    );
}

#[test]
fn alter_table_forms() {
    assert_eq!(
        alter_table("ALTER TABLE ks.t ADD c list<int>"),
        AlterTableAction::Add(vec![NewColumn {
            name: "c".into(),
            ty: TypeExpr::List(Box::new(native(CqlType::Int))),
            is_static: false
        }])
    );
    assert_eq!(
        alter_table("ALTER TABLE t ADD (c1 int, c2 text static)"),
        AlterTableAction::Add(vec![
            NewColumn {
                name: "c1".into(),
                ty: native(CqlType::Int),
                is_static: false
            },
            NewColumn {
                name: "c2".into(),
                ty: native(CqlType::Text),
                is_static: true
            },
        ])
    );
    assert_eq!(
        alter_table("ALTER TABLE t ADD s int STATIC"),
        AlterTableAction::Add(vec![NewColumn {
            name: "s".into(),
            ty: native(CqlType::Int),
            is_static: true
        }])
    );
    assert_eq!(
        alter_table("ALTER TABLE t DROP c"),
        AlterTableAction::Drop {
            columns: vec!["c".into()],
            timestamp: None
        }
    );
    assert_eq!(
        alter_table("ALTER TABLE t DROP (c1, c2) USING TIMESTAMP 12345"),
        AlterTableAction::Drop {
            columns: vec!["c1".into(), "c2".into()],
            timestamp: Some(12345)
        }
    );
    assert_eq!(
        alter_table("ALTER TABLE t RENAME a TO b AND c TO \"D\""),
        AlterTableAction::Rename(vec![("a".into(), "b".into()), ("c".into(), "D".into())])
    );
    assert_eq!(
        alter_table("ALTER TABLE t ALTER c TYPE blob"),
        AlterTableAction::AlterColumnType {
            column: "c".into(),
            ty: native(CqlType::Blob)
        }
    );
    let AlterTableAction::With(props) = alter_table(
        "ALTER TABLE t WITH cdc = {'enabled': true, 'delta': 'keys'} AND comment = 'x'",
    ) else {
        panic!()
    };
    assert_eq!(props.len(), 2);
    let e = err("ALTER TABLE t DROP c USING TIMESTAMP 99999999999999999999");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert!(
        err("ALTER TABLE t FOO")
            .message
            .contains("expecting ADD, DROP, RENAME, ALTER or WITH")
    );
}

#[test]
fn drop_truncate_and_type_statements() {
    assert_eq!(
        parse("DROP TABLE IF EXISTS ks.t"),
        Statement::DropTable(DropTable {
            table: qname("ks", "t"),
            if_exists: true
        })
    );
    assert_eq!(
        parse("DROP COLUMNFAMILY t"),
        Statement::DropTable(DropTable {
            table: name("t"),
            if_exists: false
        })
    );
    for text in [
        "TRUNCATE ks.t",
        "TRUNCATE TABLE ks.t",
        "TRUNCATE COLUMNFAMILY ks.t",
    ] {
        assert_eq!(
            parse(text),
            Statement::Truncate(Truncate {
                table: qname("ks", "t")
            }),
            "{text}"
        );
    }
    assert_eq!(
        parse("CREATE TYPE IF NOT EXISTS ks.\"MyType\" (a int, b frozen<list<text>>,)"),
        Statement::CreateType(CreateType {
            name: qname("ks", "MyType"),
            if_not_exists: true,
            fields: vec![
                ("a".into(), native(CqlType::Int)),
                (
                    "b".into(),
                    TypeExpr::Frozen(Box::new(TypeExpr::List(Box::new(native(CqlType::Text)))))
                ),
            ]
        })
    );
    assert_eq!(
        parse("ALTER TYPE ut ADD f timeuuid"),
        Statement::AlterType(AlterType {
            name: name("ut"),
            action: AlterTypeAction::Add {
                field: "f".into(),
                ty: native(CqlType::Timeuuid)
            }
        })
    );
    assert_eq!(
        parse("ALTER TYPE ks.ut RENAME a TO b AND c TO d"),
        Statement::AlterType(AlterType {
            name: qname("ks", "ut"),
            action: AlterTypeAction::Rename(vec![
                ("a".into(), "b".into()),
                ("c".into(), "d".into())
            ])
        })
    );
    assert_eq!(
        parse("DROP TYPE IF EXISTS ks.ut"),
        Statement::DropType(DropType {
            name: qname("ks", "ut"),
            if_exists: true
        })
    );
}

#[test]
fn create_and_drop_index() {
    let col = |f: Option<&str>, c: &str| IndexTargetExpr::Column {
        function: f.map(str::to_string),
        column: c.into(),
    };
    assert_eq!(
        parse("CREATE INDEX ON t (v)"),
        Statement::CreateIndex(Box::new(CreateIndex {
            name: None,
            table: QualifiedName::unqualified("t"),
            if_not_exists: false,
            custom: false,
            targets: vec![col(None, "v")],
            using: None,
            properties: Vec::new(),
        }))
    );
    let Statement::CreateIndex(c) =
        parse("create index if not exists \"Idx\" on ks.t ((p1, p2), KEYS(m))")
    else {
        panic!("not CREATE INDEX");
    };
    assert_eq!(c.name.as_deref(), Some("Idx"));
    assert!(c.if_not_exists);
    assert_eq!(c.table, qname("ks", "t"));
    assert_eq!(
        c.targets,
        vec![
            IndexTargetExpr::Columns(vec!["p1".into(), "p2".into()]),
            col(Some("keys"), "m")
        ]
    );
    // `keys` without a parenthesis is a column name.
    let Statement::CreateIndex(c) = parse("CREATE CUSTOM INDEX i ON t (keys) USING 'x'") else {
        panic!("not CREATE INDEX");
    };
    assert!(c.custom);
    assert_eq!(c.targets, vec![col(None, "keys")]);
    assert_eq!(c.using.as_deref(), Some("x"));
    assert_eq!(
        parse("DROP INDEX IF EXISTS ks.i"),
        Statement::DropIndex(DropIndex {
            name: qname("ks", "i"),
            if_exists: true
        })
    );
}

#[test]
fn unsupported_statements_are_recognised() {
    for (text, what) in [
        ("create function f() returns int", "CREATE FUNCTION"),
        ("CREATE OR REPLACE FUNCTION f", "CREATE OR REPLACE FUNCTION"),
        ("CREATE ROLE r WITH PASSWORD = 'p'", "CREATE ROLE"),
        ("GRANT SELECT ON ALL KEYSPACES TO r", "GRANT"),
        ("REVOKE ALL ON ks.t FROM r", "REVOKE"),
        ("LIST ROLES", "LIST"),
    ] {
        assert_eq!(
            parse(text),
            Statement::Unsupported { what: what.into() },
            "{text}"
        );
    }
    // Lexical errors are still reported.
    assert!(parse_statement("GRANT 'open").is_err());
}

#[test]
fn materialized_view_statements() {
    let Statement::CreateView(v) = parse(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS ks.mv AS SELECT a, \"B\" FROM t \
         WHERE a IS NOT NULL AND  \"B\"   IS NOT NULL AND c = 1 \
         PRIMARY KEY ((a, \"B\"), c) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'x'",
    ) else {
        panic!("not a CREATE MATERIALIZED VIEW");
    };
    assert_eq!(v.name, qname("ks", "mv"));
    assert!(v.if_not_exists);
    assert_eq!(v.base, QualifiedName::unqualified("t"));
    assert_eq!(v.columns.as_ref().map(Vec::len), Some(2));
    assert_eq!(v.where_clause.len(), 3);
    // As Scylla stores it in system_schema.views.where_clause.
    assert_eq!(
        v.where_text,
        vec!["a IS NOT NULL", "\"B\" IS NOT NULL", "c = 1"]
    );
    assert_eq!(v.primary_key.partition_key, vec!["a", "B"]);
    assert_eq!(v.primary_key.clustering, vec!["c"]);
    assert_eq!(
        v.options.clustering_order,
        vec![("c".to_string(), Order::Desc)]
    );
    assert_eq!(v.options.properties.len(), 1);
    let Statement::CreateView(star) =
        parse("CREATE MATERIALIZED VIEW mv AS SELECT * FROM ks.t PRIMARY KEY (a)")
    else {
        panic!("not a CREATE MATERIALIZED VIEW");
    };
    assert_eq!(star.columns, None);
    assert!(star.where_clause.is_empty());
    assert!(matches!(
        parse("ALTER MATERIALIZED VIEW mv WITH comment = 'y'"),
        Statement::AlterView(AlterView { properties, .. }) if properties.len() == 1
    ));
    assert_eq!(
        parse("DROP MATERIALIZED VIEW IF EXISTS ks.mv"),
        Statement::DropView(DropTable {
            table: qname("ks", "mv"),
            if_exists: true
        })
    );
    // A view needs its PRIMARY KEY, and ALTER its WITH.
    assert!(parse_statement("CREATE MATERIALIZED VIEW mv AS SELECT * FROM t").is_err());
    assert!(parse_statement("ALTER MATERIALIZED VIEW mv").is_err());
}

// ---------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------

#[test]
fn type_expressions() {
    assert_eq!(parse_type("int").unwrap(), native(CqlType::Int));
    assert_eq!(parse_type(" VARCHAR ").unwrap(), native(CqlType::Text));
    assert_eq!(parse_type("TimeUUID").unwrap(), native(CqlType::Timeuuid));
    let t = parse_type("list<frozen<map<int, frozen<ut>>>>").unwrap();
    assert_eq!(
        t,
        TypeExpr::List(Box::new(TypeExpr::Frozen(Box::new(TypeExpr::Map(
            Box::new(native(CqlType::Int)),
            Box::new(TypeExpr::Frozen(Box::new(TypeExpr::UserDefined(name(
                "ut"
            )))))
        )))))
    );
    assert_eq!(t.to_string(), "list<frozen<map<int, frozen<ut>>>>");
    assert_eq!(
        parse_type("tuple<int, text, frozen<set<blob>>>")
            .unwrap()
            .to_string(),
        "tuple<int, text, frozen<set<blob>>>"
    );
    assert_eq!(
        parse_type("vector<float, 3>").unwrap(),
        TypeExpr::Vector {
            elem: Box::new(native(CqlType::Float)),
            dimension: 3
        }
    );
    assert_eq!(
        parse_type("ks.ut").unwrap(),
        TypeExpr::UserDefined(qname("ks", "ut"))
    );
    assert_eq!(
        parse_type("\"MyType\"").unwrap(),
        TypeExpr::UserDefined(name("MyType"))
    );
    assert_eq!(
        parse_type("\"int\"").unwrap(),
        TypeExpr::UserDefined(name("int"))
    );
    assert_eq!(
        parse_type("'org.example.Custom'").unwrap(),
        TypeExpr::Custom("org.example.Custom".into())
    );
    for bad in [
        "",
        "map<int>",
        "list<int",
        "list<int>>",
        "set",
        "vector<int, x>",
        "int int",
    ] {
        assert!(parse_type(bad).is_err(), "{bad:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

#[test]
fn error_messages_point_at_the_offending_token() {
    let e = err("SELECT a b FROM t");
    assert_eq!(
        e.to_string(),
        "line 1:9 mismatched input 'b' expecting FROM"
    );
    let e = err("SELECT a FROM t WHERE");
    assert_eq!(
        e.to_string(),
        "line 1:21 mismatched input '<EOF>' expecting column name"
    );
    let e = err("SELECT a\nFROM t\nWHERE a == 1");
    assert_eq!((e.line, e.column), (3, 9));
    assert!(e.message.starts_with("mismatched input '='"), "{e}");
    let e = err("INSERT INTO t (a) VALUES (1");
    assert_eq!(
        e.to_string(),
        "line 1:27 mismatched input '<EOF>' expecting ')'"
    );
    let e = err("");
    assert!(e.message.contains("expecting a statement"), "{e}");
    assert_eq!((e.line, e.column), (1, 0));
    let e = err("FOO BAR");
    assert_eq!(e.column, 0);
    let e = err("SELECT * FROM t WHERE a = 'x");
    assert_eq!(e.to_string(), "line 1:26 unterminated string literal");
    let e = err("SELECT * FROM t WHERE a ~ 1");
    assert_eq!(e.to_string(), "line 1:24 unexpected character '~'");
    assert_eq!(err("SELECT * FROM").kind, ParseErrorKind::Syntax);
}

// ---------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------

/// Runs `f` on a thread with 768 KiB of stack: the parser must fit in it even unoptimised
/// and at the depth limit (tokio workers have 2 MiB, and the server's own frames come first).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(768 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    on_small_stack(|| {
        let n = 100_000;
        for (open, close) in [
            ("[", "]"),
            ("{", "}"),
            ("(", ")"),
            ("{a:", "}"),
            ("{1:", "}"),
        ] {
            let text = format!(
                "INSERT INTO t (v) VALUES ({}1{})",
                open.repeat(n),
                close.repeat(n)
            );
            let e = parse_statement(&text).unwrap_err();
            assert!(e.message.contains("nested too deeply"), "{open}: {e}");
        }
        let ty = format!("{}int{}", "list<".repeat(n), ">".repeat(n));
        let e = parse_type(&ty).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{e}");
        let sel = format!("SELECT {}a{} FROM t", "f(".repeat(n), ")".repeat(n));
        let e = parse_statement(&sel).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{e}");
        let casts = format!("INSERT INTO t (v) VALUES ({}1)", "(int) ".repeat(n));
        let e = parse_statement(&casts).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{e}");
    });
}

#[test]
fn nesting_up_to_the_limit_parses() {
    on_small_stack(|| {
        let depth = MAX_DEPTH - 1;
        let text = format!(
            "INSERT INTO t (v) VALUES ({}1{})",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        assert!(parse_statement(&text).is_ok());
        let ty = format!(
            "{}int{}",
            "list<".repeat(MAX_DEPTH - 1),
            ">".repeat(MAX_DEPTH - 1)
        );
        assert!(parse_type(&ty).is_ok());
    });
}

/// An edit applied to a golden statement.
#[derive(Debug, Clone)]
enum Mutation {
    /// Delete the character at this position (modulo the length).
    Delete(usize),
    /// Insert the character at this position (modulo the length + 1).
    Insert(usize, char),
    /// Keep only this many characters (modulo the length + 1).
    Truncate(usize),
}

/// Applies `mutation` to `text` (positions are character indexes).
fn mutate(text: &str, mutation: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    match *mutation {
        Mutation::Delete(i) => {
            if !chars.is_empty() {
                chars.remove(i % chars.len());
            }
        }
        Mutation::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
        Mutation::Truncate(n) => chars.truncate(n % (chars.len() + 1)),
    }
    chars.into_iter().collect()
}

/// Characters that matter to the lexer, to make mutations interesting.
fn cql_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            '(', ')', '[', ']', '{', '}', ',', ';', '.', ':', '?', '=', '!', '<', '>', '+', '-',
            '*', '/', '\'', '"', '$', ' ', '\n', '0', '1', 'x', 'e', 'P', 'T', 'h', 'µ', 'é',
        ]),
        any::<char>(),
    ]
}

/// A random edit.
fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), cql_char()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

/// Checks the invariants every parse result must satisfy.
fn check_result(text: &str) {
    match parse_statement(text) {
        Ok(stmt) => {
            let indexes = marker_indexes(&stmt);
            assert!(
                indexes.iter().enumerate().all(|(i, m)| i == *m),
                "markers of {text:?} are not 0..n: {indexes:?}"
            );
        }
        Err(e) => {
            let lines = text.split('\n').count();
            assert!(e.line >= 1 && e.line <= lines, "{text:?}: {e}");
            let line_len = text
                .split('\n')
                .nth(e.line - 1)
                .map_or(0, |l| l.chars().count());
            assert!(e.column <= line_len, "{text:?}: {e}");
            assert!(!e.message.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        check_result(&text);
    }

    #[test]
    fn cql_like_text_never_panics(chars in prop::collection::vec(cql_char(), 0..120)) {
        let text: String = chars.into_iter().collect();
        check_result(&text);
    }

    #[test]
    fn mutated_golden_statements_never_panic(
        index in 0..GOLDEN.len(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut text = GOLDEN[index].to_owned();
        for m in &mutations {
            text = mutate(&text, m);
        }
        check_result(&text);
        let _ = parse_type(&text);
    }
}

#[test]
fn describe_statements_parse_into_their_forms() {
    let d = |text: &str| match parse(text) {
        Statement::Describe(d) => d,
        other => panic!("{text}: {other:?}"),
    };
    let target = |text: &str| d(text).target;
    let q = |ks: &str, n: &str| QualifiedName::qualified(ks, n);
    let u = QualifiedName::unqualified;
    assert_eq!(target("DESCRIBE CLUSTER"), DescribeTarget::Cluster);
    assert_eq!(
        target("desc schema"),
        DescribeTarget::Schema { full: false }
    );
    assert_eq!(
        target("DESC FULL SCHEMA;"),
        DescribeTarget::Schema { full: true }
    );
    assert_eq!(target("DESC KEYSPACES"), DescribeTarget::Keyspaces);
    assert_eq!(
        target("DESC KEYSPACE"),
        DescribeTarget::Keyspace {
            name: None,
            only: false
        }
    );
    assert_eq!(
        target("DESC ONLY KEYSPACE \"My_Ks\""),
        DescribeTarget::Keyspace {
            name: Some("My_Ks".into()),
            only: true
        }
    );
    assert_eq!(
        target("DESCRIBE KEYSPACE System_Distributed"),
        DescribeTarget::Keyspace {
            name: Some("system_distributed".into()),
            only: false
        }
    );
    assert_eq!(target("DESC TABLES"), DescribeTarget::Tables);
    assert_eq!(target("DESC COLUMNFAMILIES"), DescribeTarget::Tables);
    assert_eq!(
        target("DESC TABLE Ks.T"),
        DescribeTarget::Table(q("ks", "t"))
    );
    assert_eq!(target("DESC COLUMNFAMILY t"), DescribeTarget::Table(u("t")));
    assert_eq!(
        target("DESC INDEX ks.i"),
        DescribeTarget::Index(q("ks", "i"))
    );
    assert_eq!(
        target("DESC MATERIALIZED VIEW ks.v"),
        DescribeTarget::MaterializedView(q("ks", "v"))
    );
    assert_eq!(target("DESC TYPES"), DescribeTarget::Types);
    assert_eq!(
        target("DESC TYPE ks.\"UT\""),
        DescribeTarget::Type(q("ks", "UT"))
    );
    assert_eq!(target("DESC FUNCTIONS"), DescribeTarget::Functions);
    assert_eq!(
        target("DESC FUNCTION ks.f"),
        DescribeTarget::Function(q("ks", "f"))
    );
    assert_eq!(target("DESC AGGREGATES"), DescribeTarget::Aggregates);
    assert_eq!(
        target("DESC AGGREGATE a"),
        DescribeTarget::Aggregate(u("a"))
    );
    // The generic form keeps an unquoted word as written, as Scylla's grammar does.
    assert_eq!(target("DESC MyKs"), DescribeTarget::Generic(u("MyKs")));
    assert_eq!(
        target("DESC ks.\"T\"\"x\""),
        DescribeTarget::Generic(q("ks", "T\"x"))
    );
    let with = d("DESCRIBE KEYSPACE system_distributed WITH INTERNALS");
    assert!(with.with_internals && !with.with_passwords);
    let with = d("DESC SCHEMA WITH INTERNALS AND PASSWORDS");
    assert!(with.with_internals && with.with_passwords);
    assert!(!d("DESC TABLE t").with_internals);
}

#[test]
fn describe_errors_are_scylla_s() {
    let e = parse_statement("DESC TABLE t WITH INTERNALS AND PASSWORDS").expect_err("passwords");
    assert_eq!(e.kind, ParseErrorKind::Invalid);
    assert_eq!(
        e.to_string(),
        "Option WITH PASSWORDS is only allowed with DESC SCHEMA"
    );
    let e = parse_statement("DESC TABLE t WITH PASSWORDS").expect_err("no internals");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    let e = parse_statement("DESC").expect_err("nothing");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    let e = parse_statement("DESC TABLE ks.").expect_err("no name");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
    let e = parse_statement("DESC KEYSPACE ks extra").expect_err("trailing");
    assert_eq!(e.kind, ParseErrorKind::Syntax);
}
