//! Secondary indexes through the real `scylla` driver, as ScyllaDB 2025.x has them: CREATE
//! and DROP INDEX (global, local, on collections, static, clustering and partition-key
//! columns) with Scylla's errors and default names, queries by the indexed column without
//! ALLOW FILTERING (and what still needs it), result order, paging with resumed paging
//! states, LIMIT and PER PARTITION LIMIT, the index following every kind of write and TTL
//! expiry, `system_schema.indexes` / `views`, DESCRIBE, and the CDC log left unchanged.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set (each in a keyspace of its own, dropped at the end).

use std::time::Duration;

use scylla::client::session::Session;
use scylla::errors::DbError;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::value::CqlValue;

use crate::support::{Setup, db_error, invalid, rows, rows_result, run, wait_until};

const FILTERING: &str = "Cannot execute this query as it might involve data filtering";

/// The int columns of every row (null as `i32::MIN`).
async fn ints(session: &Session, cql: &str) -> Vec<Vec<i32>> {
    crate::support::ints(session, cql)
        .await
        .into_iter()
        .map(|r| r.into_iter().map(|c| c.unwrap_or(i32::MIN)).collect())
        .collect()
}

/// The `(pk, ck)` rows of `cql` ordered as a full scan of the table returns them (token
/// order, then clustering order), to compare an index query's order against.
async fn scan_order(session: &Session, table: &str, keep: &[Vec<i32>]) -> Vec<Vec<i32>> {
    ints(session, &format!("SELECT pk, ck FROM {table}"))
        .await
        .into_iter()
        .filter(|r| keep.contains(r))
        .collect()
}

/// Every page of a prepared statement run with `page_size`, each resumed from the previous
/// page's paging state.
async fn pages(session: &Session, cql: &str, page_size: i32) -> Vec<Vec<Vec<i32>>> {
    let mut prepared = session.prepare(cql).await.expect("prepare");
    prepared.set_page_size(page_size);
    let mut state = PagingState::start();
    let mut out = Vec::new();
    loop {
        let (result, next) = session
            .execute_single_page(&prepared, (), state)
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
        let page: Vec<Vec<i32>> = result
            .into_rows_result()
            .expect("rows")
            .rows::<(i32, i32)>()
            .expect("typed")
            .map(|r| {
                let (a, b) = r.expect("decode");
                vec![a, b]
            })
            .collect();
        out.push(page);
        match next {
            PagingStateResponse::HasMorePages { state: s } => state = s,
            PagingStateResponse::NoMorePages => break,
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_global_index_answers_queries_by_its_column_without_filtering() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    let ks = &setup.ks;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))",
    )
    .await;
    for pk in 0..20 {
        for ck in 0..3 {
            run(
                s,
                &format!(
                    "INSERT INTO t (pk, ck, v, w) VALUES ({pk}, {ck}, {}, {ck})",
                    pk % 3
                ),
            )
            .await;
        }
    }
    invalid(s, "SELECT pk, ck FROM t WHERE v = 1", FILTERING).await;
    run(s, "CREATE INDEX ON t (v)").await;
    // Scylla's default name, kind and target.
    let idx = rows(
        s,
        &format!(
            "SELECT index_name, kind, options FROM system_schema.indexes \
             WHERE keyspace_name = '{ks}' AND table_name = 't'"
        ),
    )
    .await;
    assert_eq!(idx.len(), 1);
    assert_eq!(idx[0].columns[0], Some(CqlValue::Text("t_v_idx".into())));
    assert_eq!(idx[0].columns[1], Some(CqlValue::Text("COMPOSITES".into())));
    assert_eq!(
        idx[0].columns[2],
        Some(CqlValue::Map(vec![(
            CqlValue::Text("target".into()),
            CqlValue::Text("v".into())
        )]))
    );
    // No ALLOW FILTERING needed; rows come in the base table's token order.
    let by_v = ints(s, "SELECT pk, ck FROM t WHERE v = 1").await;
    assert_eq!(by_v.len(), 7 * 3);
    assert!(by_v.iter().all(|r| r[0] % 3 == 1));
    assert_eq!(by_v, scan_order(s, "t", &by_v).await);
    assert_eq!(
        rows(s, "SELECT count(*) FROM t WHERE v = 2").await[0].columns[0],
        Some(CqlValue::BigInt(18))
    );
    assert_eq!(ints(s, "SELECT pk, ck FROM t WHERE v = 99").await.len(), 0);
    // With the whole partition key: that partition's rows.
    assert_eq!(
        ints(s, "SELECT pk, ck FROM t WHERE pk = 4 AND v = 1").await,
        vec![vec![4, 0], vec![4, 1], vec![4, 2]]
    );
    // Prepared, with a bound value.
    let p = s
        .prepare("SELECT pk, ck FROM t WHERE v = ?")
        .await
        .expect("prepare");
    let n = s
        .execute_unpaged(&p, (0,))
        .await
        .expect("execute")
        .into_rows_result()
        .expect("rows")
        .rows_num();
    assert_eq!(n, 7 * 3);
    // What still needs filtering: another non-key column, a clustering column without the
    // partition key, IN on the partition key.
    invalid(s, "SELECT pk FROM t WHERE v = 1 AND w = 1", FILTERING).await;
    invalid(s, "SELECT pk FROM t WHERE v = 1 AND ck = 1", FILTERING).await;
    invalid(s, "SELECT pk FROM t WHERE v > 1", FILTERING).await;
    invalid(
        s,
        "SELECT pk FROM t WHERE pk IN (1, 2) AND v = 1",
        FILTERING,
    )
    .await;
    assert_eq!(
        ints(
            s,
            "SELECT pk, ck FROM t WHERE v = 1 AND ck = 1 ALLOW FILTERING"
        )
        .await
        .len(),
        7
    );
    // Dropped: back to needing ALLOW FILTERING.
    run(s, &format!("DROP INDEX {ks}.t_v_idx")).await;
    invalid(s, "SELECT pk, ck FROM t WHERE v = 1", FILTERING).await;
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_follows_every_write_and_ttl_expiry() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(s, "CREATE INDEX ON t (v)").await;
    for pk in 0..3 {
        for ck in 0..4 {
            run(
                s,
                &format!("INSERT INTO t (pk, ck, v) VALUES ({pk}, {ck}, 7)"),
            )
            .await;
        }
    }
    let count = |cql: &'static str| async move { ints(s, cql).await.len() };
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 7").await, 12);
    // An update moves a row to another value.
    run(s, "UPDATE t SET v = 8 WHERE pk = 0 AND ck = 0").await;
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 7").await, 11);
    assert_eq!(
        ints(s, "SELECT pk, ck FROM t WHERE v = 8").await,
        vec![vec![0, 0]]
    );
    // Deleting the cell, the row, a range and a partition.
    run(s, "DELETE v FROM t WHERE pk = 0 AND ck = 0").await;
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 8").await, 0);
    run(s, "DELETE FROM t WHERE pk = 0 AND ck = 1").await;
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 7").await, 10);
    run(s, "DELETE FROM t WHERE pk = 1 AND ck >= 2").await;
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 7").await, 8);
    run(s, "DELETE FROM t WHERE pk = 2").await;
    assert_eq!(count("SELECT pk, ck FROM t WHERE v = 7").await, 4);
    // TTL expiry of the indexed cell.
    run(s, "INSERT INTO t (pk, ck, v) VALUES (9, 0, 5) USING TTL 1").await;
    assert_eq!(
        ints(s, "SELECT pk, ck FROM t WHERE v = 5").await,
        vec![vec![9, 0]]
    );
    wait_until(Duration::from_secs(10), "the TTL expires", || async {
        count("SELECT pk, ck FROM t WHERE v = 5").await == 0
    })
    .await;
    // Rows written before the index existed are indexed too.
    run(s, "CREATE TABLE u (pk int PRIMARY KEY, v text)").await;
    run(s, "INSERT INTO u (pk, v) VALUES (1, 'a')").await;
    run(s, "CREATE INDEX ON u (v)").await;
    wait_until(Duration::from_secs(10), "the index is built", || async {
        rows(s, "SELECT pk FROM u WHERE v = 'a'").await.len() == 1
    })
    .await;
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_queries_page_limit_and_resume() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(s, "CREATE INDEX ON t (v)").await;
    for pk in 0..10 {
        for ck in 0..5 {
            run(
                s,
                &format!("INSERT INTO t (pk, ck, v) VALUES ({pk}, {ck}, {})", ck % 2),
            )
            .await;
        }
    }
    let all = ints(s, "SELECT pk, ck FROM t WHERE v = 0").await;
    assert_eq!(all.len(), 30);
    assert_eq!(all, scan_order(s, "t", &all).await);
    // Pages of 4, each resumed from the previous paging state, give the same rows.
    let paged = pages(s, "SELECT pk, ck FROM t WHERE v = 0", 4).await;
    assert!(paged.len() >= 8, "{paged:?}");
    assert_eq!(paged.concat(), all);
    // LIMIT, also across pages.
    assert_eq!(
        ints(s, "SELECT pk, ck FROM t WHERE v = 0 LIMIT 7").await,
        all[..7].to_vec()
    );
    assert_eq!(
        pages(s, "SELECT pk, ck FROM t WHERE v = 0 LIMIT 7", 3)
            .await
            .concat(),
        all[..7].to_vec()
    );
    // PER PARTITION LIMIT counts the matching rows of each partition.
    let ppl = ints(s, "SELECT pk, ck FROM t WHERE v = 0 PER PARTITION LIMIT 2").await;
    let expected: Vec<Vec<i32>> = all.iter().filter(|r| r[1] < 4).cloned().collect();
    assert_eq!(ppl, expected);
    assert_eq!(
        pages(
            s,
            "SELECT pk, ck FROM t WHERE v = 0 PER PARTITION LIMIT 2",
            3
        )
        .await
        .concat(),
        expected
    );
    // A map holding the searched value under many keys matches once, on every page size
    // (test_index_map_values_paging, test/cqlpy/test_secondary_index.py).
    run(
        s,
        "CREATE TABLE m (pk int, ck int, m map<int, int>, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(s, "CREATE INDEX ON m (m)").await;
    run(
        s,
        "INSERT INTO m (pk, ck, m) VALUES (1, 2, {0: 4, 1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3, \
         7: 3, 8: 3, 9: 3, 10: 3, 11: 7})",
    )
    .await;
    for page_size in [1, 2, 3, 7] {
        assert_eq!(
            pages(s, "SELECT pk, ck FROM m WHERE m CONTAINS 3", page_size)
                .await
                .concat(),
            vec![vec![1, 2]]
        );
    }
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_and_drop_index_errors_are_scyllas() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    let ks = &setup.ks;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, d duration, l list<int>, fl frozen<list<int>>, \
         PRIMARY KEY (pk, ck))",
    )
    .await;
    run(s, "CREATE INDEX idx ON t (v)").await;
    invalid(
        s,
        "CREATE INDEX ON t (v)",
        "Index t_v_idx is a duplicate of existing index idx",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX other ON t (v)",
        "Index other is a duplicate of existing index idx",
    )
    .await;
    run(s, "CREATE INDEX IF NOT EXISTS idx ON t (v)").await;
    run(s, "CREATE INDEX IF NOT EXISTS other ON t (v)").await;
    invalid(s, "CREATE INDEX idx ON t (ck)", "Index already exists").await;
    invalid(
        s,
        "CREATE INDEX ON t (nosuch)",
        "No column definition found for column nosuch",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t (pk)",
        "Cannot create secondary index on partition key column pk",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t (d)",
        "Secondary indexes are not supported on duration columns",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t (keys(l))",
        "Cannot create secondary index on keys of column l with non-map type",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t (fl)",
        "Cannot create index on value of frozen collection column fl",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t (full(v))",
        "full() indexes can only be created on frozen collections",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t ((pk), l)",
        "Local secondary index on collection column l is not implemented yet.",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t ((ck), v)",
        "Local index definition must contain full partition key only. Redundant column: ck",
    )
    .await;
    invalid(
        s,
        "CREATE INDEX ON t ((pk))",
        "Local index definition must provide an indexed column, not just partition key",
    )
    .await;
    invalid(s, "CREATE INDEX ON nosuch (v)", "unconfigured table nosuch").await;
    invalid(
        s,
        "CREATE CUSTOM INDEX ON t (v) USING 'org.apache.cassandra.index.sasi.SASIIndex'",
        "Non-supported custom class 'org.apache.cassandra.index.sasi.SASIIndex' provided",
    )
    .await;
    run(s, "CREATE TABLE c (pk int PRIMARY KEY, n counter)").await;
    invalid(
        s,
        "CREATE INDEX ON c (n)",
        "Secondary indexes are not supported on counter tables",
    )
    .await;
    invalid(
        s,
        &format!("DROP INDEX {ks}.nosuch"),
        &format!("Index 'nosuch' could not be found in any of the tables of keyspace '{ks}'"),
    )
    .await;
    run(s, &format!("DROP INDEX IF EXISTS {ks}.nosuch")).await;
    // The indexed column cannot be dropped; another one can.
    invalid(
        s,
        "ALTER TABLE t DROP v",
        &format!("Cannot drop column v from base table {ks}.t: materialized view idx_index needs this column"),
    )
    .await;
    run(s, "ALTER TABLE t DROP d").await;
    // DROP INDEX by the connection's keyspace; the name is free again.
    run(s, "DROP INDEX idx").await;
    run(s, "ALTER TABLE t DROP v").await;
    // A second default name gets a suffix when the first is a table's name.
    run(s, "CREATE TABLE t_ck_idx_index (a int PRIMARY KEY)").await;
    run(s, "CREATE INDEX ON t (ck)").await;
    let names = rows(
        s,
        &format!("SELECT index_name FROM system_schema.indexes WHERE keyspace_name = '{ks}'"),
    )
    .await;
    assert_eq!(
        names[0].columns[0],
        Some(CqlValue::Text("t_ck_idx_1".into()))
    );
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_collection_static_clustering_and_key_component_indexes() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    let ks = &setup.ks;
    run(
        s,
        "CREATE TABLE t (p1 int, p2 int, ck int, st int STATIC, v int, s set<int>, \
         m map<text, int>, l list<int>, PRIMARY KEY ((p1, p2), ck))",
    )
    .await;
    for p1 in 0..3 {
        for ck in 0..3 {
            run(
                s,
                &format!(
                    "INSERT INTO t (p1, p2, ck, st, v, s, m, l) VALUES ({p1}, {p1}, {ck}, {p1}, \
                     {ck}, {{{ck}, 10}}, {{'k{ck}': {p1}}}, [{ck}, {ck}])"
                ),
            )
            .await;
        }
    }
    // Local index: the whole partition key and the column.
    run(s, "CREATE INDEX loc ON t ((p1, p2), v)").await;
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE p1 = 1 AND p2 = 1 AND v = 2").await,
        vec![vec![1, 2]]
    );
    invalid(s, "SELECT p1 FROM t WHERE v = 2", FILTERING).await;
    let target = rows(
        s,
        &format!(
            "SELECT options FROM system_schema.indexes WHERE keyspace_name = '{ks}' \
             AND table_name = 't' AND index_name = 'loc'"
        ),
    )
    .await;
    assert_eq!(
        target[0].columns[0],
        Some(CqlValue::Map(vec![(
            CqlValue::Text("target".into()),
            CqlValue::Text(r#"{"pk":["p1","p2"],"ck":["v"]}"#.into())
        )]))
    );
    // A global index next to it serves the query without the partition key.
    run(s, "CREATE INDEX ON t (v)").await;
    assert_eq!(ints(s, "SELECT p1, ck FROM t WHERE v = 2").await.len(), 3);
    // Static column: every row of the matching partitions.
    run(s, "CREATE INDEX ON t (st)").await;
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE st = 2").await,
        vec![vec![2, 0], vec![2, 1], vec![2, 2]]
    );
    // Clustering column and a partition-key component.
    run(s, "CREATE INDEX ON t (ck)").await;
    assert_eq!(ints(s, "SELECT p1, ck FROM t WHERE ck = 1").await.len(), 3);
    run(s, "CREATE INDEX ON t (p2)").await;
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE p2 = 1").await,
        vec![vec![1, 0], vec![1, 1], vec![1, 2]]
    );
    // Collections: set elements, map keys, map values, map entries, list values.
    invalid(s, "SELECT p1 FROM t WHERE s CONTAINS 1", FILTERING).await;
    run(s, "CREATE INDEX ON t (s)").await;
    run(s, "CREATE INDEX ON t (keys(m))").await;
    run(s, "CREATE INDEX mv ON t (values(m))").await;
    run(s, "CREATE INDEX ON t (entries(m))").await;
    run(s, "CREATE INDEX ON t (l)").await;
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE s CONTAINS 1")
            .await
            .len(),
        3
    );
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE s CONTAINS 10")
            .await
            .len(),
        9
    );
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE m CONTAINS KEY 'k0'")
            .await
            .len(),
        3
    );
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE m CONTAINS 2").await,
        vec![vec![2, 0], vec![2, 1], vec![2, 2]]
    );
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE m['k1'] = 2").await,
        vec![vec![2, 1]]
    );
    assert_eq!(
        ints(s, "SELECT p1, ck FROM t WHERE l CONTAINS 2")
            .await
            .len(),
        3
    );
    let options: Vec<String> = rows(
        s,
        &format!(
            "SELECT index_name, options FROM system_schema.indexes WHERE keyspace_name = '{ks}'"
        ),
    )
    .await
    .into_iter()
    .map(|r| format!("{:?}", r.columns))
    .collect();
    let all = options.join("\n");
    for target in ["keys(s)", "keys(m)", "values(m)", "entries(m)", "values(l)"] {
        assert!(all.contains(&format!("Text(\"{target}\")")), "{all}");
    }
    setup.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_are_described_and_listed_with_their_views() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    let ks = &setup.ks;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, s set<int>, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(s, "CREATE INDEX vi ON t (v)").await;
    run(s, "CREATE INDEX ON t (s)").await;
    // The backing views, their base and their columns.
    let views = rows(
        s,
        &format!(
            "SELECT view_name, base_table_name, where_clause, include_all_columns \
             FROM system_schema.views WHERE keyspace_name = '{ks}'"
        ),
    )
    .await;
    let views: Vec<String> = views.iter().map(|r| format!("{:?}", r.columns)).collect();
    assert_eq!(views.len(), 2, "{views:?}");
    assert!(
        views[0].contains("\"t_s_idx_index\"") && views[0].contains("\"\""),
        "{views:?}"
    );
    assert!(
        views[1].contains("\"vi_index\"") && views[1].contains("\"v IS NOT NULL\""),
        "{views:?}"
    );
    let columns = ints_text(
        s,
        &format!(
            "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = '{ks}' \
             AND table_name = 'vi_index'"
        ),
    )
    .await;
    assert_eq!(
        columns,
        vec![
            ("ck".to_string(), "clustering".to_string()),
            ("idx_token".to_string(), "clustering".to_string()),
            ("pk".to_string(), "clustering".to_string()),
            ("v".to_string(), "partition_key".to_string()),
        ]
    );
    // The computed columns: the base token, and the set's elements.
    let computed: Vec<String> = rows(
        s,
        &format!(
            "SELECT table_name, column_name, computation FROM system_schema.computed_columns \
             WHERE keyspace_name = '{ks}'"
        ),
    )
    .await
    .into_iter()
    .map(|r| match &r.columns[..] {
        [
            Some(CqlValue::Text(t)),
            Some(CqlValue::Text(c)),
            Some(CqlValue::Blob(b)),
        ] => {
            format!("{t}.{c} {}", String::from_utf8_lossy(b))
        }
        other => panic!("{other:?}"),
    })
    .collect();
    assert_eq!(
        computed,
        vec![
            r#"t_s_idx_index.coll_value {"type":"collection_keys","collection_name":"s"}"#,
            r#"t_s_idx_index.idx_token {"type":"token_v2"}"#,
            r#"vi_index.idx_token {"type":"token_v2"}"#,
        ]
    );
    // The driver's metadata has the views; a table cannot take a view's name.
    s.refresh_metadata().await.expect("metadata");
    let state = s.get_cluster_state();
    let mut views: Vec<&String> = state
        .get_keyspace(ks)
        .expect("keyspace metadata")
        .views
        .keys()
        .collect();
    views.sort();
    assert_eq!(views, ["t_s_idx_index", "vi_index"]);
    let (e, msg) = db_error(s, "CREATE TABLE vi_index (a int PRIMARY KEY)").await;
    assert!(matches!(e, DbError::AlreadyExists { .. }), "{e:?}: {msg}");
    // DESCRIBE TABLE: the table, then its indexes by name.
    let desc = rows(s, "DESCRIBE TABLE t").await;
    let statements: Vec<String> = desc
        .iter()
        .map(|r| match &r.columns[3] {
            Some(CqlValue::Text(t)) => t.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(statements.len(), 3, "{statements:?}");
    assert!(statements[0].starts_with(&format!("CREATE TABLE {ks}.t (")));
    assert!(
        statements[1].starts_with(&format!(
            "CREATE INDEX t_s_idx ON {ks}.t(values(s)) WITH bloom_filter_fp_chance = 0.01"
        )),
        "{}",
        statements[1]
    );
    assert!(
        statements[2].starts_with(&format!("CREATE INDEX vi ON {ks}.t(v) WITH ")),
        "{}",
        statements[2]
    );
    assert!(statements[2].ends_with(";\n"), "{:?}", statements[2]);
    // The view, commented out (the index recreates it).
    let view = rows(s, "DESCRIBE MATERIALIZED VIEW vi_index").await;
    let Some(CqlValue::Text(view)) = &view[0].columns[3] else {
        panic!("{view:?}");
    };
    assert!(
        view.starts_with("/* Do NOT execute this statement!")
            && view.contains(&format!(
                "CREATE MATERIALIZED VIEW {ks}.vi_index AS\n    SELECT v, idx_token, pk, ck\n    \
                 FROM {ks}.t\n    WHERE v IS NOT NULL\n    PRIMARY KEY (v, idx_token, pk, ck)\n    \
                 WITH CLUSTERING ORDER BY (idx_token ASC, pk ASC, ck ASC)\n    AND \
                 bloom_filter_fp_chance = 0.01"
            ))
            && view.ends_with(";\n\n*/"),
        "{view}"
    );
    let one = rows(s, "DESCRIBE INDEX vi").await;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].columns[1], Some(CqlValue::Text("index".into())));
    setup.teardown().await;
}

/// Two text columns of every row.
async fn ints_text(session: &Session, cql: &str) -> Vec<(String, String)> {
    rows_result(session, cql)
        .await
        .rows::<(String, String)>()
        .expect("typed")
        .collect::<Result<Vec<_>, _>>()
        .expect("decode")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cdc_log_of_an_indexed_table_is_unchanged() {
    let setup = Setup::start(1).await;
    let s = &*setup.session;
    let ks = &setup.ks;
    run(
        s,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
         WITH cdc = {'enabled': true}",
    )
    .await;
    run(s, "CREATE INDEX ON t (v)").await;
    run(s, "INSERT INTO t (pk, ck, v) VALUES (1, 1, 10)").await;
    run(s, "UPDATE t SET v = 11 WHERE pk = 1 AND ck = 1").await;
    run(s, "DELETE FROM t WHERE pk = 1 AND ck = 1").await;
    // One log row per write (in write order: one stream), none for the index's view.
    assert_eq!(
        ints(s, "SELECT v FROM t_scylla_cdc_log").await,
        vec![vec![10], vec![11], vec![i32::MIN]]
    );
    let tables = ints_text(
        s,
        &format!(
            "SELECT table_name, table_name FROM system_schema.tables WHERE keyspace_name = '{ks}'"
        ),
    )
    .await;
    assert_eq!(
        tables.iter().map(|t| t.0.as_str()).collect::<Vec<_>>(),
        vec!["t", "t_scylla_cdc_log"]
    );
    setup.teardown().await;
}
