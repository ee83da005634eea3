//! SELECT behaviour that ScyllaDB 2025.x defines and the differential suite checks against a
//! real server: result column order and names, bind-marker receivers, the order of `IN`
//! partitions (also across pages), DISTINCT and GROUP BY rules, casts, function overloads,
//! aggregates, counters in selections and mixed-order multi-column slices. Each test says
//! which ScyllaDB source decides it.

use super::*;

/// The result column names and types of a query.
#[track_caller]
fn columns(t: &mut TestDb, cql: &str) -> Vec<(String, CqlType)> {
    match t.ok(cql) {
        Res::Rows { cols, .. } => cols,
        other => panic!("{cql}: not rows: {other:?}"),
    }
}

/// The result column names of a query.
#[track_caller]
fn names(t: &mut TestDb, cql: &str) -> Vec<String> {
    columns(t, cql).into_iter().map(|(n, _)| n).collect()
}

/// The bind-marker names of a prepared statement.
#[track_caller]
fn marker_names(t: &mut TestDb, cql: &str) -> Vec<String> {
    t.bind_meta(cql).0.into_iter().map(|(n, _)| n).collect()
}

fn big(i: i64) -> Option<Value> {
    Some(Value::Bigint(i))
}

fn dec(s: &str) -> Option<Value> {
    Some(super::super::literal::parse_decimal(s).expect("decimal"))
}

/// `schema::all_columns()`: partition key, clustering key, static columns, then regular
/// columns, for `SELECT *`, its prepared result metadata and DESCRIBE.
#[test]
fn select_star_puts_static_columns_before_regular_ones() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, a int, z int static, b int, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO t (pk, ck, a, z, b) VALUES (1, 2, 3, 4, 5)");
    assert_eq!(
        names(&mut t, "SELECT * FROM t"),
        ["pk", "ck", "z", "a", "b"]
    );
    assert_eq!(
        t.rows("SELECT * FROM t"),
        vec![vec![int(1), int(2), int(4), int(3), int(5)]]
    );
    let c =
        t.db.prepare(Some("ks"), "SELECT * FROM t")
            .expect("prepared");
    let p = t.db.planned(&c).expect("planned");
    let result: Vec<&str> = p
        .result
        .as_ref()
        .map(|r| r.columns.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(result, ["pk", "ck", "z", "a", "b"]);
    let describe = t.rows("DESCRIBE TABLE t");
    let Some(Some(Value::Text(create))) = describe[0].get(3) else {
        panic!("no create statement: {describe:?}")
    };
    let z = create.find("z int STATIC").expect("z declared");
    let a = create.find("a int,").expect("a declared");
    assert!(z < a, "{create}");
}

/// `expression::printer` with `for_metadata`: constants as `to_parsable_string` renders them,
/// markers as `?`, casts as `cast(x as type)` (the argument itself for a cast to its own
/// type), `writetime`/`ttl` in lower case.
#[test]
fn result_column_names_render_like_scylla() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (pk int PRIMARY KEY, m map<text, int>, l list<int>, s set<text>, \
          mb map<blob, int>, mt map<timestamp, int>, md map<date, int>, i int, v text)",
    );
    t.ok(
        "INSERT INTO t (pk, m, l, s, mb, mt, md, i, v) VALUES (1, {'k': 1}, [7], {'a'}, \
          {0x01: 2}, {'2024-01-01 00:00:00+0000': 3}, {'2024-01-01': 4}, 5, 'x')",
    );
    assert_eq!(
        names(&mut t, "SELECT m['k'], l[0], s['a'] FROM t WHERE pk = 1"),
        ["m['k']", "l[0]", "s['a']"]
    );
    assert_eq!(
        names(
            &mut t,
            "SELECT mb[0x01], mt['2024-01-01 00:00:00+0000'], md['2024-01-01'] FROM t WHERE pk = 1"
        ),
        ["mb[01]", "mt['2024-01-01T00:00:00.000Z']", "md[2024-01-01]"]
    );
    assert_eq!(
        t.rows("SELECT m['k'], l[0], s['a'], mb[0x01] FROM t WHERE pk = 1"),
        vec![vec![int(1), int(7), text("a"), int(2)]]
    );
    assert_eq!(
        names(
            &mut t,
            "SELECT CAST(i AS text), CAST(i AS int), CAST(v AS varchar), WRITETIME(i), TTL(v), \
             TOKEN(pk), COUNT(1) FROM t WHERE pk = 1"
        )[..6],
        [
            "cast(i as text)",
            "i",
            "v",
            "writetime(i)",
            "ttl(v)",
            "system.token(pk)"
        ]
    );
    let c =
        t.db.prepare(Some("ks"), "SELECT m[?], l[:idx], s[?] FROM t WHERE pk = ?")
            .expect("prepared");
    let p = t.db.planned(&c).expect("planned");
    let result: Vec<&str> = p
        .result
        .as_ref()
        .map(|r| r.columns.iter().map(|c| c.name.as_str()).collect())
        .unwrap_or_default();
    assert_eq!(result, ["m[?]", "l[?]", "s[?]"]);
    assert_eq!(
        t.bind_meta("SELECT m[?], l[?], s[?] FROM t WHERE pk = ?").0,
        vec![
            ("key(m)".into(), "text".into()),
            ("index(l)".into(), "int".into()),
            ("value(s)".into(), "text".into()),
            ("pk".into(), "int".into())
        ]
    );
    // ScyllaDB 2025.x's selector grammar has no constants: a syntax error (0x2000).
    assert_eq!(t.err("SELECT minTimeuuid(0) FROM t").code, 0x2000);
    assert_eq!(t.err("SELECT 1 FROM t").code, 0x2000);
}

/// `get_rhs_receiver` and `list_value_spec_of` / `component_spec_of` in `prepare_expr.cc`,
/// `functions::make_arg_spec` and `prepare_context::get_partition_key_bind_indexes`.
#[test]
fn where_clause_markers_are_named_like_scylla() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (pk int, c1 int, c2 text, v int, s set<int>, l list<int>, \
          m map<text, int>, PRIMARY KEY (pk, c1, c2))",
    );
    let (vars, pk, _) = t.bind_meta("SELECT * FROM t WHERE pk IN ?");
    assert_eq!(vars, vec![("IN(pk)".into(), "list<int>".into())]);
    assert!(pk.is_empty());
    let (vars, pk, _) = t.bind_meta("SELECT * FROM t WHERE pk IN (?, ?) AND c1 IN ?");
    assert_eq!(
        vars.iter().map(|v| v.0.as_str()).collect::<Vec<_>>(),
        ["value(IN(pk))", "value(IN(pk))", "IN(c1)"]
    );
    assert!(pk.is_empty(), "no marker is named after the partition key");
    assert_eq!(
        marker_names(
            &mut t,
            "SELECT * FROM t WHERE pk = ? AND (c1, c2) >= (?, ?)"
        ),
        ["pk", "(c1,c2)[0]", "(c1,c2)[1]"]
    );
    assert_eq!(
        t.bind_meta("SELECT * FROM t WHERE pk = ? AND (c1, c2) IN ?")
            .0[1],
        (
            "IN((c1,c2))".into(),
            "list<frozen<tuple<int, text>>>".into()
        )
    );
    assert_eq!(
        marker_names(
            &mut t,
            "SELECT * FROM t WHERE pk = ? AND (c1, c2) IN ((?, ?), ?)"
        ),
        [
            "pk",
            "value(IN((c1,c2)))[0]",
            "value(IN((c1,c2)))[1]",
            "value(IN((c1,c2)))"
        ]
    );
    assert_eq!(
        marker_names(
            &mut t,
            "SELECT * FROM t WHERE s CONTAINS ? AND l CONTAINS ? AND m CONTAINS KEY ? \
             AND m CONTAINS ? ALLOW FILTERING"
        ),
        ["value(s)", "value(l)", "key(m)", "value(m)"]
    );
    assert_eq!(
        marker_names(
            &mut t,
            "SELECT * FROM t WHERE token(pk) > token(?) AND token(pk) < ?"
        ),
        ["arg0(system.token)", "partition key token"]
    );
    let (vars, pk, _) = t.bind_meta("SELECT * FROM t WHERE pk = :key LIMIT ?");
    assert_eq!(
        vars,
        vec![
            ("key".into(), "int".into()),
            ("[limit]".into(), "int".into())
        ]
    );
    assert_eq!(pk, vec![0]);
}

/// `get_IN_values` sorts (and deduplicates) the values of each partition-key column by its
/// type; `partition_ranges_from_singles` reads their cartesian product in that order, and the
/// pager resumes at the partition of the paging state in that same order.
#[test]
fn in_partitions_come_in_value_order_across_pages() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, PRIMARY KEY (pk, ck))");
    t.ok("CREATE TABLE c (a int, b text, v int, PRIMARY KEY ((a, b)))");
    for pk in 0..6 {
        for ck in 0..2 {
            t.ok(&format!("INSERT INTO t (pk, ck) VALUES ({pk}, {ck})"));
        }
    }
    for (a, b) in [(1, "x"), (1, "y"), (2, "x"), (2, "y")] {
        t.ok(&format!("INSERT INTO c (a, b, v) VALUES ({a}, '{b}', {a})"));
    }
    let pks = |rows: &[Vec<Option<Value>>]| -> Vec<Option<Value>> {
        rows.iter().map(|r| r[0].clone()).collect()
    };
    // Token order would be 5, 1, 0, 2, 4, 3.
    let all = t.rows("SELECT pk, ck FROM t WHERE pk IN (4, 1, 5, 1, 0)");
    assert_eq!(pks(&all), [0, 0, 1, 1, 4, 4, 5, 5].map(int).to_vec());
    assert_eq!(
        t.rows("SELECT a, b FROM c WHERE a IN (2, 1, 2) AND b IN ('y', 'x')"),
        vec![
            vec![int(1), text("x")],
            vec![int(1), text("y")],
            vec![int(2), text("x")],
            vec![int(2), text("y")]
        ]
    );
    let cql = "SELECT pk, ck FROM t WHERE pk IN (5, 0, 4, 1)";
    let mut paging = None;
    let mut got = Vec::new();
    loop {
        let Res::Rows {
            rows, paging: next, ..
        } = t
            .query_with(cql, params(Vec::new(), Some(3), paging.clone()))
            .expect("page")
        else {
            panic!("not rows")
        };
        assert!(rows.len() <= 3);
        got.extend(rows);
        match next {
            Some(p) => paging = Some(p),
            None => break,
        }
    }
    assert_eq!(got, t.rows(cql));
    assert_eq!(pks(&got), [0, 0, 1, 1, 4, 4, 5, 5].map(int).to_vec());
}

/// `select_statement::validate_distinct_selection`.
#[test]
fn distinct_rules_follow_scylla() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))");
    t.ok("INSERT INTO t (pk, ck, s, v) VALUES (1, 1, 10, 100)");
    t.ok("INSERT INTO t (pk, ck, s, v) VALUES (2, 1, 20, 200)");
    for cql in [
        "SELECT DISTINCT pk FROM t PER PARTITION LIMIT 1",
        "SELECT DISTINCT pk FROM t WHERE ck = 1 ALLOW FILTERING",
        "SELECT DISTINCT pk FROM t WHERE v = 100 ALLOW FILTERING",
        "SELECT DISTINCT s FROM t",
        "SELECT DISTINCT count(*) FROM t",
        "SELECT DISTINCT pk, v FROM t",
        "SELECT DISTINCT pk FROM t GROUP BY pk, ck",
    ] {
        assert_eq!(t.err(cql).code, 0x2200, "{cql}");
    }
    assert_eq!(
        t.err("SELECT DISTINCT pk FROM t PER PARTITION LIMIT 1")
            .message,
        "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries"
    );
    // Keys given by `=` / `IN` need not be selected; token() reads the partition key.
    assert_eq!(
        t.rows("SELECT DISTINCT s FROM t WHERE pk = 2"),
        vec![vec![int(20)]]
    );
    assert_eq!(t.rows("SELECT DISTINCT token(pk) FROM t").len(), 2);
    assert_eq!(
        t.rows("SELECT DISTINCT count(*) FROM t WHERE pk IN (1, 2)"),
        vec![vec![big(2)]]
    );
}

/// `select_statement::prepare_group_by` and `result_set_builder` (`selection.cc`): groups
/// may skip `=`-restricted key columns, a plain selector is its group's first value, and
/// PER PARTITION LIMIT / LIMIT count groups.
#[test]
fn group_by_counts_groups_against_the_limits() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, c1 int, c2 int, v int, PRIMARY KEY (pk, c1, c2))");
    for pk in 1..=2 {
        for c1 in 1..=3 {
            for c2 in 1..=2 {
                t.ok(&format!(
                    "INSERT INTO t (pk, c1, c2, v) VALUES ({pk}, {c1}, {c2}, {})",
                    pk * 100 + c1 * 10 + c2
                ));
            }
        }
    }
    assert_eq!(
        t.rows("SELECT pk, c1, count(*) FROM t GROUP BY pk, c1 PER PARTITION LIMIT 2"),
        vec![
            vec![int(1), int(1), big(2)],
            vec![int(1), int(2), big(2)],
            vec![int(2), int(1), big(2)],
            vec![int(2), int(2), big(2)]
        ]
    );
    assert_eq!(
        t.rows("SELECT pk, c1, count(*) FROM t GROUP BY pk, c1 PER PARTITION LIMIT 2 LIMIT 3")
            .len(),
        3
    );
    assert_eq!(
        t.rows("SELECT pk, c1, v FROM t GROUP BY pk, c1 PER PARTITION LIMIT 1"),
        vec![
            vec![int(1), int(1), int(111)],
            vec![int(2), int(1), int(211)]
        ]
    );
    assert_eq!(
        t.rows("SELECT c2, max(v) FROM t WHERE pk = 2 AND c1 = 3 GROUP BY c2"),
        vec![vec![int(1), int(231)], vec![int(2), int(232)]]
    );
    assert_eq!(
        t.rows("SELECT pk, count(*) FROM t GROUP BY pk"),
        vec![vec![int(1), big(6)], vec![int(2), big(6)]]
    );
    // Grouped queries are answered whole: no paging state even for a small page.
    let Res::Rows { rows, paging, .. } = t
        .query_with(
            "SELECT pk, count(*) FROM t GROUP BY pk",
            params(Vec::new(), Some(1), None),
        )
        .expect("rows")
    else {
        panic!("not rows")
    };
    assert_eq!((rows.len(), paging), (2, None));
    for (cql, message) in [
        (
            "SELECT count(*) FROM t PER PARTITION LIMIT 1",
            "PER PARTITION LIMIT is not allowed with aggregate queries.",
        ),
        (
            "SELECT c1, count(*) FROM t GROUP BY c1",
            "Group by column c1 is out of order",
        ),
        (
            "SELECT v, count(*) FROM t GROUP BY v",
            "Group by non-primary-key column v",
        ),
    ] {
        assert_eq!(t.err(cql).message, message, "{cql}");
    }
}

/// `castas_fcts.cc`: the conversions ScyllaDB has and how it computes them.
#[test]
fn casts_follow_scyllas_matrix_and_renderings() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (pk int PRIMARY KEY, i int, db double, f float, dc decimal, \
          vi varint, bo boolean, tm time, d date, ts timestamp, tu timeuuid, bl blob, tx text)",
    );
    t.ok(
        "INSERT INTO t (pk, i, db, f, dc, vi, bo, tm, d, ts, tu, bl, tx) VALUES (1, 42, 1.0, \
          2.5, 1.10, 7, true, '07:08:09.010', '2024-05-06', '2024-05-06 07:08:09.010Z', \
          50554d6e-29bb-11e5-b345-feff819cdc9f, 0x0102, 'x')",
    );
    assert_eq!(
        t.rows(
            "SELECT CAST(db AS text), CAST(f AS text), CAST(dc AS text), CAST(bo AS text), \
             CAST(tm AS text), CAST(d AS text), CAST(ts AS text) FROM t WHERE pk = 1"
        ),
        vec![vec![
            text("1"),
            text("2.5"),
            text("1.1"),
            text("true"),
            text("07:08:09.010000000"),
            text("2024-05-06"),
            text("2024-05-06T07:08:09.010Z")
        ]]
    );
    // Integers become decimals of scale 1; floats the decimal of their shortest text.
    assert_eq!(
        t.rows(
            "SELECT CAST(i AS decimal), CAST(vi AS decimal), CAST(f AS decimal) FROM t WHERE pk = 1"
        ),
        vec![vec![dec("42.0"), dec("7.0"), dec("2.5")]]
    );
    assert_eq!(
        t.rows("SELECT CAST(dc AS int), CAST(i AS tinyint), CAST(tu AS timestamp), CAST(ts AS date) FROM t WHERE pk = 1"),
        vec![vec![
            int(1),
            Some(Value::Tinyint(42)),
            Some(Value::Timestamp(1_436_832_018_805)),
            Some(Value::Date((1u32 << 31) + 19_849))
        ]]
    );
    for cql in [
        "SELECT CAST(bl AS text) FROM t",
        "SELECT CAST(tu AS uuid) FROM t",
        "SELECT CAST(tx AS ascii) FROM t",
        "SELECT CAST(ts AS bigint) FROM t",
        "SELECT CAST(i AS counter) FROM t",
        "SELECT CAST(bo AS int) FROM t",
    ] {
        let e = t.err(cql);
        assert_eq!(e.code, 0x2200, "{cql}");
        assert!(
            e.message.contains("cannot be cast to"),
            "{cql}: {}",
            e.message
        );
    }
}

/// `functions::get`: an exact match wins, one assignable overload is chosen, several are
/// an ambiguous call (a bind marker fits every overload).
#[test]
fn time_function_overloads_resolve_like_scylla() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int PRIMARY KEY, ts timestamp, b bigint, d date, tu timeuuid)");
    t.ok("INSERT INTO t (pk, ts, d) VALUES (1, toTimestamp('2024-01-02'), toDate(0))");
    assert_eq!(
        t.rows("SELECT ts, d FROM t WHERE pk = 1"),
        vec![vec![
            Some(Value::Timestamp(1_704_153_600_000)),
            Some(Value::Date(1u32 << 31))
        ]]
    );
    for cql in [
        "INSERT INTO t (pk, b) VALUES (2, toUnixTimestamp('2024-01-02'))",
        "INSERT INTO t (pk, b) VALUES (2, toUnixTimestamp(?))",
        "INSERT INTO t (pk, d) VALUES (2, toDate(?))",
        "INSERT INTO t (pk, ts) VALUES (2, toTimestamp(?))",
    ] {
        let e = match t.prepare(cql) {
            Err(e) => e,
            Ok(_) => panic!("{cql}: prepared"),
        };
        assert!(
            e.message.starts_with("Ambiguous call to function"),
            "{cql}: {}",
            e.message
        );
    }
    assert_eq!(
        t.bind_meta("INSERT INTO t (pk, ts) VALUES (?, toTimestamp((date) ?))")
            .0[1],
        ("arg0(system.totimestamp)".into(), "date".into())
    );
    assert_eq!(
        t.bind_meta("SELECT * FROM t WHERE pk = ? AND tu > maxTimeuuid(?) ALLOW FILTERING")
            .0,
        vec![
            ("pk".into(), "int".into()),
            ("arg0(system.maxtimeuuid)".into(), "timestamp".into())
        ]
    );
}

/// `aggregate_fcts.cc`: integer sums are exact and refuse a total that overflows the type,
/// decimal sums are exact and their average rounds half to even at the sum's scale.
#[test]
fn aggregates_compute_like_scylla() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, i int, vi varint, dc decimal, f float, PRIMARY KEY (pk, ck))");
    for (ck, i, vi, dc, f) in [
        (1, 2147483647, "5", "1.10", "0.1"),
        (2, 1, "-9", "2.205", "0.2"),
        (3, 0, "100000000000000000000", "0", "0.3"),
        (4, 0, "1", "-1.5", "0.4"),
    ] {
        t.ok(&format!(
            "INSERT INTO t (pk, ck, i, vi, dc, f) VALUES (1, {ck}, {i}, {vi}, {dc}, {f})"
        ));
    }
    assert_eq!(
        t.rows("SELECT sum(vi), avg(vi), sum(dc), avg(dc), avg(i) FROM t"),
        vec![vec![
            Some(Value::varint(&"99999999999999999997".parse().expect("int"))),
            Some(Value::varint(&"24999999999999999999".parse().expect("int"))),
            dec("1.805"),
            dec("0.451"),
            int(536870912)
        ]]
    );
    // A float sum accumulates in float.
    assert_eq!(
        t.rows("SELECT sum(f) FROM t"),
        vec![vec![Some(Value::Float(0.1f32 + 0.2 + 0.3 + 0.4))]]
    );
    let e = t.err("SELECT sum(i) FROM t");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            0x2200,
            "Sum overflow. Values should be casted to a wider type."
        )
    );
}

/// Counters in selections: WRITETIME is the cell's write time and TTL null
/// (`prepare_column_mutation_attribute` accepts any atomic column); min/max keep the counter
/// type while sum/avg are the bigint overloads (`get_dynamic_aggregate`).
#[test]
fn counters_in_selections() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE c (pk int, ck int, a counter, PRIMARY KEY (pk, ck))");
    t.ok("UPDATE c SET a = a + 5 WHERE pk = 1 AND ck = 1");
    t.ok("UPDATE c SET a = a + 1 WHERE pk = 1 AND ck = 2");
    let r = t.rows("SELECT writetime(a), ttl(a) FROM c WHERE pk = 1 AND ck = 1");
    assert!(matches!(r[0][0], Some(Value::Bigint(ts)) if ts > 1_600_000_000_000_000));
    assert_eq!(r[0][1], None);
    assert_eq!(
        columns(&mut t, "SELECT min(a), max(a), sum(a), avg(a) FROM c")
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>(),
        [
            CqlType::Counter,
            CqlType::Counter,
            CqlType::Bigint,
            CqlType::Bigint
        ]
    );
    assert_eq!(
        t.rows("SELECT min(a), max(a), sum(a), avg(a) FROM c"),
        vec![vec![big(1), big(5), big(6), big(3)]]
    );
}

/// `get_equivalent_ranges` (`statement_restrictions.cc`): a multi-column slice over columns
/// of mixed clustering order is a clustering restriction (no filtering), read as storage
/// ranges in clustering order.
#[test]
fn mixed_order_multi_column_slices() {
    let mut t = TestDb::with_ks();
    t.ok(
        "CREATE TABLE t (pk int, c1 int, c2 text, PRIMARY KEY (pk, c1, c2)) \
          WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
    );
    for c1 in 1..=3 {
        for c2 in ["a", "b", "c"] {
            t.ok(&format!(
                "INSERT INTO t (pk, c1, c2) VALUES (0, {c1}, '{c2}')"
            ));
        }
    }
    let keys = |rows: Vec<Vec<Option<Value>>>| -> Vec<(Option<Value>, Option<Value>)> {
        rows.into_iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect()
    };
    let k = |c1: i32, c2: &str| (int(c1), text(c2));
    assert_eq!(
        keys(t.rows("SELECT c1, c2 FROM t WHERE pk = 0 AND (c1, c2) > (2, 'a')")),
        vec![k(3, "a"), k(3, "b"), k(3, "c"), k(2, "b"), k(2, "c")]
    );
    assert_eq!(
        keys(t.rows(
            "SELECT c1, c2 FROM t WHERE pk = 0 AND (c1, c2) >= (1, 'b') AND (c1, c2) < (3, 'a')"
        )),
        vec![k(2, "a"), k(2, "b"), k(2, "c"), k(1, "b"), k(1, "c")]
    );
    assert_eq!(
        // ORDER BY c1 ASC reverses the whole clustering order (c2 then descends).
        keys(t.rows("SELECT c1, c2 FROM t WHERE pk = 0 AND (c1, c2) < (2, 'c') ORDER BY c1 ASC")),
        vec![k(1, "c"), k(1, "b"), k(1, "a"), k(2, "b"), k(2, "a")]
    );
    assert_eq!(
        keys(t.rows(
            "SELECT c1, c2 FROM t WHERE pk = 0 AND (c1, c2) > (2, 'a') AND (c1, c2) < (2, 'c')"
        )),
        vec![k(2, "b")]
    );
    assert!(
        t.rows("SELECT c1 FROM t WHERE pk = 0 AND (c1, c2) > (2, 'b') AND (c1, c2) < (2, 'b')")
            .is_empty()
    );
}

/// `max_partition_key_restrictions_per_query` (100 by default) caps the cartesian product of
/// the deduplicated partition-key IN values (`partition_ranges_from_singles` in
/// cql3/restrictions/statement_restrictions.cc): 100 keys are fine, 101 are a Server error.
#[test]
fn more_than_100_partition_keys_in_one_select_are_refused() {
    let mut t = TestDb::with_ks();
    t.ok("CREATE TABLE t (pk int, ck int, PRIMARY KEY (pk, ck))");
    t.ok("CREATE TABLE c (a int, b int, PRIMARY KEY ((a, b)))");
    let list = |n: i32| (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    t.rows(&format!("SELECT * FROM t WHERE pk IN ({})", list(100)));
    // Duplicates count once.
    t.rows(&format!(
        "SELECT * FROM t WHERE pk IN ({}, 0, 1)",
        list(100)
    ));
    let e = t.err(&format!("SELECT * FROM t WHERE pk IN ({})", list(101)));
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            0x0000,
            "partition-key cartesian product size 101 is greater than maximum 100"
        )
    );
    let e = t.err(&format!(
        "SELECT * FROM c WHERE a IN ({}) AND b IN (1, 2, 3)",
        list(34)
    ));
    assert_eq!(
        e.message,
        "partition-key cartesian product size 102 is greater than maximum 100"
    );
}
