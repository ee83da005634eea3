//! `SELECT JSON`, `INSERT JSON`, `toJson()` and `fromJson()` through CQL text, as ScyllaDB
//! answers them (names and quoting of the `[json]` object, defaults, errors and their
//! kinds, prepared metadata, batches and LWT).

use super::*;

/// The single `[json]` text of every row.
#[track_caller]
fn json_rows(t: &mut TestDb, cql: &str) -> Vec<String> {
    match t.ok(cql) {
        Res::Rows { cols, rows, .. } => {
            assert_eq!(cols, vec![("[json]".to_string(), CqlType::Text)], "{cql}");
            rows.into_iter()
                .map(|r| match &r[..] {
                    [Some(Value::Text(s))] => s.to_string(),
                    other => panic!("{cql}: not one text: {other:?}"),
                })
                .collect()
        }
        other => panic!("{cql}: not rows: {other:?}"),
    }
}

fn fixture() -> TestDb {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (pk int, ck text, v int, \"Caps\" int, l list<int>, s int static, \
          PRIMARY KEY (pk, ck))",
    );
    t
}

#[test]
fn select_json_names_every_selector_as_scylla_does() {
    let mut t = fixture();
    t.ok("INSERT INTO t (pk, ck, v, \"Caps\", l, s) VALUES (1, 'a', 17, 99, [1, 2], 5) USING TIMESTAMP 1234");
    // The wildcard: every column, in SELECT *'s order.
    let Res::Rows { cols, .. } = t.ok("SELECT * FROM t") else {
        panic!("rows")
    };
    let value_of = |n: &str| match n {
        "pk" => "1",
        "ck" => "\"a\"",
        "s" => "5",
        "Caps" => "99",
        "l" => "[1, 2]",
        "v" => "17",
        other => panic!("unexpected column {other}"),
    };
    let parts: Vec<String> = cols
        .iter()
        .map(|(n, _)| {
            let key = if n == "Caps" {
                "\\\"Caps\\\"".to_string()
            } else {
                n.clone()
            };
            format!("\"{key}\": {}", value_of(n))
        })
        .collect();
    assert_eq!(
        json_rows(&mut t, "SELECT JSON * FROM t"),
        vec![format!("{{{}}}", parts.join(", "))]
    );
    for (selection, expected) in [
        ("v", "{\"v\": 17}"),
        ("v AS hello", "{\"hello\": 17}"),
        ("v AS Hello", "{\"hello\": 17}"),
        ("v AS \"Hello\"", "{\"\\\"Hello\\\"\": 17}"),
        ("v AS \"Hello World!\"", "{\"\\\"Hello World!\\\"\": 17}"),
        ("\"Caps\"", "{\"\\\"Caps\\\"\": 99}"),
        ("\"Caps\" AS cs", "{\"cs\": 99}"),
        ("count(*)", "{\"count\": 1}"),
        ("count(*) AS n", "{\"n\": 1}"),
        ("ttl(v)", "{\"ttl(v)\": null}"),
        ("writetime(v)", "{\"writetime(v)\": 1234}"),
        ("intAsBlob(v)", "{\"system.intasblob(v)\": \"0x00000011\"}"),
        (
            "blobAsInt(intAsBlob(v))",
            "{\"system.blobasint(system.intasblob(v))\": 17}",
        ),
        ("toJson(v)", "{\"system.tojson(v)\": \"17\"}"),
        ("toJson(l)", "{\"system.tojson(l)\": \"[1, 2]\"}"),
        ("CAST(v AS float)", "{\"cast(v as float)\": 17}"),
        ("v AS q, pk AS q", "{\"q\": 17, \"q\": 1}"),
    ] {
        assert_eq!(
            json_rows(
                &mut t,
                &format!("SELECT JSON {selection} FROM t WHERE pk = 1")
            ),
            vec![expected.to_string()],
            "{selection}"
        );
    }
    // toJson(null) is the text "null".
    t.ok("INSERT INTO t (pk, ck) VALUES (2, 'b')");
    assert_eq!(
        t.rows("SELECT toJson(v), toJson(l) FROM t WHERE pk = 2"),
        vec![vec![text("null"), text("null")]]
    );
    assert!(json_rows(&mut t, "SELECT JSON * FROM t WHERE pk = 3").is_empty());
}

#[test]
fn select_json_with_grouping_distinct_ordering_and_paging() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE g (k int, c int, v int, PRIMARY KEY (k, c))");
    for (k, c, v) in [(0, 0, 0), (0, 1, 1), (1, 0, 1)] {
        t.ok(&format!("INSERT INTO g (k, c, v) VALUES ({k}, {c}, {v})"));
    }
    let mut grouped = json_rows(&mut t, "SELECT JSON k, count(*) FROM g GROUP BY k");
    grouped.sort();
    assert_eq!(
        grouped,
        ["{\"k\": 0, \"count\": 2}", "{\"k\": 1, \"count\": 1}"]
    );
    let mut distinct = json_rows(&mut t, "SELECT JSON DISTINCT k FROM g");
    distinct.sort();
    assert_eq!(distinct, ["{\"k\": 0}", "{\"k\": 1}"]);
    assert_eq!(
        json_rows(
            &mut t,
            "SELECT JSON c AS x FROM g WHERE k = 0 ORDER BY c DESC"
        ),
        ["{\"x\": 1}", "{\"x\": 0}"]
    );
    // Paged: every row exactly once.
    let id = t.prepare("SELECT JSON k, c FROM g").unwrap();
    let mut seen = Vec::new();
    let mut paging = None;
    loop {
        let Ok(Res::Rows {
            rows,
            paging: next,
            cols,
        }) = t.execute(&id, vec![], Some(1), paging)
        else {
            panic!("rows")
        };
        assert_eq!(cols, vec![("[json]".to_string(), CqlType::Text)]);
        seen.extend(rows);
        match next {
            Some(p) => paging = Some(p),
            None => break,
        }
    }
    assert_eq!(seen.len(), 3);
}

#[test]
fn select_json_and_functions_refuse_what_scylla_refuses() {
    let mut t = fixture();
    // A literal is no selector in Scylla 2025.x's grammar (`unaliasedSelector` in Cql.g): a
    // syntax error before any function is looked up.
    let e = t.err("SELECT toJson(1) FROM t");
    assert_eq!(e.code, 0x2000, "{}", e.message);
    for (cql, message) in [
        (
            "SELECT toJson(v, v) FROM t",
            "toJson() accepts 1 argument only",
        ),
        (
            "SELECT fromJson(ck) FROM t",
            "fromJson() can only be called if receiver type is known",
        ),
        (
            "INSERT INTO t (pk, ck, v) VALUES (1, 'a', toJson(1))",
            "toJson() is only valid when its argument type is known",
        ),
    ] {
        let e = t.err(cql);
        assert_eq!((e.code, e.message.as_str()), (0x2200, message), "{cql}");
    }
    // toJson of a typed argument assigned to a text receiver.
    t.ok("CREATE TABLE j (pk int PRIMARY KEY, txt text)");
    t.ok("INSERT INTO j (pk, txt) VALUES (1, toJson((bigint)3))");
    t.ok("INSERT INTO j (pk, txt) VALUES (2, toJson(blobAsInt(0x00000003)))");
    assert_eq!(
        t.rows("SELECT txt FROM j WHERE pk IN (1, 2)"),
        vec![vec![text("3")], vec![text("3")]]
    );
}

#[test]
fn from_json_converts_for_its_receiver() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE f (pk int PRIMARY KEY, v int, b boolean, m map<ascii, int>, s set<text>, \
          ts timestamp, big bigint)",
    );
    t.ok(
        "INSERT INTO f (pk, v, b, m, ts, big) VALUES (1, fromJson('1e6'), fromJson('\"fALSe\"'), \
          fromJson('{\"a\": 1, \"b\": 2}'), fromJson('\"2014-01-01 12:15:45+0000\"'), \
          fromJson('9223372036854775807'))",
    );
    assert_eq!(
        t.rows("SELECT v, b, m, ts, big FROM f WHERE pk = 1"),
        vec![vec![
            int(1_000_000),
            Some(Value::Boolean(false)),
            Some(Value::map(vec![
                (Value::text("a"), Value::Int(1)),
                (Value::text("b"), Value::Int(2)),
            ])),
            Some(Value::Timestamp(1_388_578_545_000)),
            Some(Value::Bigint(i64::MAX)),
        ]]
    );
    t.ok("UPDATE f SET s = fromJson('[\"p\"]'), v = fromJson(null) WHERE pk = fromJson('1')");
    assert_eq!(
        t.rows("SELECT s, v FROM f WHERE pk = 1"),
        vec![vec![Some(Value::set(vec![Value::text("p")])), None]]
    );
    // A constant argument is converted when the statement is prepared.
    for (cql, code) in [
        ("INSERT INTO f (pk, v) VALUES (2, fromJson('dog'))", 0x1400),
        (
            "INSERT INTO f (pk, v) VALUES (2, fromJson('\"dog\"'))",
            0x1400,
        ),
        ("INSERT INTO f (pk, v) VALUES (2, fromJson('1.2'))", 0x1400),
        (
            "INSERT INTO f (pk, v) VALUES (2, fromJson('2147483648'))",
            0x1400,
        ),
        ("INSERT INTO f (pk, v) VALUES (2, fromJson('\"\"'))", 0x1400),
        (
            "INSERT INTO f (pk, m) VALUES (2, fromJson('{\"שלום\": 1}'))",
            0x1400,
        ),
        ("INSERT INTO f (pk, v) VALUES (2, fromJson(3))", 0x2200),
    ] {
        assert_eq!(t.err(cql).code, code, "{cql}");
        assert_eq!(t.prepare(cql).unwrap_err().code, code, "prepare {cql}");
    }
    // A bound argument: the marker is text, named after the function's argument.
    let (vars, ..) = t.bind_meta("INSERT INTO f (pk, v) VALUES (?, fromJson(?))");
    assert_eq!(
        vars,
        vec![
            ("pk".to_string(), "int".to_string()),
            ("arg0(system.fromjson)".to_string(), "text".to_string())
        ]
    );
    let id = t
        .prepare("INSERT INTO f (pk, v) VALUES (?, fromJson(?))")
        .unwrap();
    let run = |t: &mut TestDb, json: Option<&str>| {
        t.execute(
            &id,
            vec![
                bv(&Value::Int(3)),
                json.map_or(BoundValue::Null, |j| bv(&Value::text(j))),
            ],
            None,
            None,
        )
    };
    assert_eq!(run(&mut t, Some("42")), Ok(Res::Void));
    assert_eq!(t.rows("SELECT v FROM f WHERE pk = 3"), vec![vec![int(42)]]);
    assert_eq!(run(&mut t, None), Ok(Res::Void));
    assert_eq!(t.rows("SELECT v FROM f WHERE pk = 3"), vec![vec![None]]);
    let e = run(&mut t, Some("\"x\"")).unwrap_err();
    assert_eq!(e.code, 0x1400);
    assert_eq!(
        e.message,
        "Failed execution of function system.fromjson: marshaling error: Invalid number format 'x'"
    );
}

#[test]
fn insert_json_writes_like_the_equivalent_insert() {
    let mut t = fixture();
    t.ok("INSERT INTO t JSON '{\"pk\": 1, \"ck\": \"a\", \"v\": 5, \"\\\"Caps\\\"\": 6, \"l\": [3, 4]}'");
    assert_eq!(
        t.rows("SELECT pk, ck, v, \"Caps\", l FROM t"),
        vec![vec![
            int(1),
            text("a"),
            int(5),
            int(6),
            Some(Value::list(vec![Value::Int(3), Value::Int(4)])),
        ]]
    );
    // Names: unquoted ones are case-insensitive, quoted ones exact; strings for numbers.
    t.ok("INSERT INTO t JSON '{\"PK\": \"2\", \"\\\"ck\\\"\": \"b\", \"V\": \"7\"}'");
    assert_eq!(
        t.rows("SELECT pk, ck, v FROM t WHERE pk = 2"),
        vec![vec![int(2), text("b"), int(7)]]
    );
    // The mutation is the INSERT's with the same values, omitted columns set to null.
    let before = t.db.applied.lock().len();
    t.ok(
        "INSERT INTO t JSON '{\"pk\": 3, \"ck\": \"c\", \"v\": 1}' USING TIMESTAMP 1000 AND TTL 60",
    );
    t.ok("INSERT INTO t (pk, ck, v, \"Caps\", l) VALUES (3, 'c', 1, null, null) USING TIMESTAMP 1000 AND TTL 60");
    let applied = t.db.applied.lock()[before..].to_vec();
    assert_eq!(applied.len(), 2);
    assert_eq!(applied[0], applied[1]);
    // DEFAULT UNSET: like an INSERT of the given columns only.
    let before = t.db.applied.lock().len();
    t.ok("INSERT INTO t JSON '{\"pk\": 3, \"ck\": \"c\", \"v\": 2}' DEFAULT UNSET USING TIMESTAMP 2000");
    t.ok("INSERT INTO t (pk, ck, v) VALUES (3, 'c', 2) USING TIMESTAMP 2000");
    let applied = t.db.applied.lock()[before..].to_vec();
    assert_eq!(applied[0], applied[1]);
    assert_eq!(applied[0].rows[0].1.cells.len(), 1, "only v is written");
    // DEFAULT UNSET keeps what the document omits; an explicit null still deletes.
    t.ok("INSERT INTO t (pk, ck, v, \"Caps\") VALUES (4, 'd', 1, 1)");
    t.ok("INSERT INTO t JSON '{\"pk\": 4, \"ck\": \"d\", \"v\": null}' DEFAULT UNSET");
    assert_eq!(
        t.rows("SELECT v, \"Caps\" FROM t WHERE pk = 4"),
        vec![vec![None, int(1)]]
    );
    t.ok("INSERT INTO t JSON '{\"pk\": 4, \"ck\": \"d\"}' DEFAULT NULL");
    assert_eq!(
        t.rows("SELECT v, \"Caps\" FROM t WHERE pk = 4"),
        vec![vec![None, None]]
    );
    // A static column's value is checked but never written (regular_columns() only).
    t.ok("INSERT INTO t (pk, s) VALUES (5, 1)");
    t.ok("INSERT INTO t JSON '{\"pk\": 5, \"ck\": \"e\", \"s\": 9}'");
    assert_eq!(
        t.rows("SELECT ck, s FROM t WHERE pk = 5"),
        vec![vec![text("e"), int(1)]]
    );
    assert_eq!(
        t.err("INSERT INTO t JSON '{\"pk\": 5, \"ck\": \"e\", \"s\": \"x\"}'")
            .code,
        0
    );
}

#[test]
fn insert_json_errors_have_scylla_kinds() {
    let mut t = fixture();
    for (json, code, message) in [
        (
            "{\"pk\": 1}",
            0x2200,
            "Missing mandatory PRIMARY KEY part ck",
        ),
        (
            "{\"ck\": \"a\"}",
            0x2200,
            "Missing mandatory PRIMARY KEY part pk",
        ),
        (
            "{\"pk\": null, \"ck\": \"a\"}",
            0x2200,
            "Missing mandatory PRIMARY KEY part pk",
        ),
        (
            "{\"pk\": 1, \"ck\": \"a\", \"nosuch\": 1}",
            0x2200,
            "JSON values map contains unrecognized column: nosuch",
        ),
        (
            "{\"pk\": 1, \"ck\": \"a\", \"caps\": 1}",
            0x2200,
            "JSON values map contains unrecognized column: caps",
        ),
        (
            "not json",
            0x0000,
            "Parsing JSON failed: Invalid value. at 0",
        ),
        (
            "[1]",
            0x0000,
            "JSON assert failed on condition 'IsObject()'",
        ),
        (
            "{\"pk\": \"x\", \"ck\": \"a\"}",
            0x0000,
            "marshaling error: Invalid number format 'x'",
        ),
        (
            "{\"pk\": 1, \"ck\": \"a\", \"l\": [1, null]}",
            0x0000,
            "marshaling error: Incorrect JSON value for int64 type: null",
        ),
    ] {
        let e = t.err(&format!("INSERT INTO t JSON '{json}'"));
        assert_eq!((e.code, e.message.as_str()), (code, message), "{json}");
    }
    // The document is read before the key: a bad value wins over a missing key.
    assert_eq!(t.err("INSERT INTO t JSON '{\"v\": \"x\"}'").code, 0x0000);
    // Counters: refused at execution, whatever the document holds.
    t.ok("CREATE TABLE c (pk int PRIMARY KEY, n counter)");
    let e = t.err("INSERT INTO c JSON '{\"pk\": 1}'");
    assert_eq!(
        (e.code, e.message.as_str()),
        (0x2200, "Cannot set the value of counter column n in JSON")
    );
    // A null or unset document: ScyllaDB reads the missing value's bytes (a server error).
    let id = t.prepare("INSERT INTO t JSON ?").unwrap();
    for v in [BoundValue::Null, BoundValue::Unset] {
        assert_eq!(t.execute(&id, vec![v], None, None).unwrap_err().code, 0);
    }
    assert!(t.rows("SELECT * FROM t").is_empty(), "nothing was written");
}

#[test]
fn insert_json_prepared_batched_and_conditional() {
    let mut t = fixture();
    let (vars, pk, lwt) = t.bind_meta("INSERT INTO t JSON ? DEFAULT UNSET USING TTL ?");
    assert_eq!(
        vars,
        vec![
            (String::new(), "text".to_string()),
            ("[ttl]".to_string(), "int".to_string())
        ]
    );
    assert!(pk.is_empty() && !lwt);
    let c =
        t.db.prepare(
            t.conn.keyspace.as_deref(),
            "INSERT INTO t JSON ? DEFAULT UNSET USING TTL ?",
        )
        .unwrap();
    let planned = t.db.planned(&c).unwrap();
    let spec = &planned.metadata.variables[0];
    assert_eq!((spec.keyspace.as_str(), spec.table.as_str()), ("", ""));
    let (vars, ..) = t.bind_meta("INSERT INTO t JSON :doc");
    assert_eq!(vars, vec![("doc".to_string(), "text".to_string())]);
    let id = t
        .prepare("INSERT INTO t JSON ? DEFAULT UNSET USING TTL ?")
        .unwrap();
    let r = t.execute(
        &id,
        vec![
            bv(&Value::text("{\"pk\": 1, \"ck\": \"a\", \"v\": 1}")),
            bv(&Value::Int(100)),
        ],
        None,
        None,
    );
    assert_eq!(r, Ok(Res::Void));
    assert_eq!(
        t.rows("SELECT v, ttl(v) FROM t WHERE pk = 1"),
        vec![vec![int(1), int(100)]]
    );
    // Batches: text and prepared entries, each with its own document.
    t.ok(
        "BEGIN BATCH INSERT INTO t JSON '{\"pk\": 2, \"ck\": \"a\", \"v\": 2}'; \
          INSERT INTO t JSON '{\"pk\": 2, \"ck\": \"b\", \"v\": 3}'; APPLY BATCH",
    );
    let b = BatchRequest {
        kind: frame::BatchKind::Logged,
        statements: vec![
            BatchStatement {
                query: BatchQuery::Prepared(id.clone()),
                values: vec![
                    bv(&Value::text("{\"pk\": 3, \"ck\": \"a\", \"v\": 4}")),
                    BoundValue::Unset,
                ],
            },
            BatchStatement {
                query: BatchQuery::Text("INSERT INTO t JSON '{\"pk\": 3, \"ck\": \"b\"}'".into()),
                values: vec![],
            },
        ],
        consistency: Consistency::One,
        serial_consistency: None,
        timestamp: None,
    };
    assert_eq!(t.request(Request::Batch(b)), Ok(Res::Void));
    assert_eq!(
        t.rows("SELECT pk, ck, v FROM t WHERE pk IN (2, 3)"),
        vec![
            vec![int(2), text("a"), int(2)],
            vec![int(2), text("b"), int(3)],
            vec![int(3), text("a"), int(4)],
            vec![int(3), text("b"), None],
        ]
    );
    // IF NOT EXISTS.
    let r = t.rows("INSERT INTO t JSON '{\"pk\": 9, \"ck\": \"a\", \"v\": 1}' IF NOT EXISTS");
    assert_eq!(r[0][0], Some(Value::Boolean(true)));
    let Res::Rows { cols, rows, .. } =
        t.ok("INSERT INTO t JSON '{\"pk\": 9, \"ck\": \"a\", \"v\": 2}' IF NOT EXISTS")
    else {
        panic!("rows")
    };
    assert_eq!(rows[0][0], Some(Value::Boolean(false)));
    let v = cols.iter().position(|c| c.0 == "v").unwrap();
    assert_eq!(rows[0][v], int(1));
    assert_eq!(t.rows("SELECT v FROM t WHERE pk = 9"), vec![vec![int(1)]]);
}

#[test]
fn select_json_result_metadata_when_prepared() {
    let t = fixture();
    let c =
        t.db.prepare(
            t.conn.keyspace.as_deref(),
            "SELECT JSON pk, v FROM t WHERE pk = ?",
        )
        .unwrap();
    let planned = t.db.planned(&c).unwrap();
    let result = planned.result.as_ref().expect("result metadata");
    assert_eq!(result.columns.len(), 1);
    let col = &result.columns[0];
    assert_eq!(
        (
            col.keyspace.as_str(),
            col.table.as_str(),
            col.name.as_str(),
            &col.typ
        ),
        ("ks", "t", "[json]", &CqlType::Text)
    );
    assert_eq!(planned.metadata.pk_indexes, vec![0]);
}
