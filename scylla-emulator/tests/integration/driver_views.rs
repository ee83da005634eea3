//! Materialized views through the real `scylla` driver: CREATE (built from the rows the base
//! already has), maintenance on every kind of base write, reads with paging and
//! restrictions, Scylla's errors, ALTER / DROP, `system_schema.views` and `columns`, the
//! driver's metadata, DESCRIBE, and CDC on a base with views.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set (each in a keyspace of its own, dropped at the end).

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use scylla::errors::DbError;
use scylla::statement::unprepared::Statement;
use scylla::value::CqlValue;

use crate::support::{Setup, db_error, ints, invalid, rows, run};

/// Some(int) of each value.
fn some(values: &[i32]) -> Vec<Option<i32>> {
    values.iter().map(|v| Some(*v)).collect()
}

#[tokio::test]
async fn a_view_is_built_from_existing_rows_and_follows_every_base_write() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(
        session,
        "INSERT INTO t (pk, ck, v, w) VALUES (1, 1, 10, 100)",
    )
    .await;
    run(
        session,
        "INSERT INTO t (pk, ck, v, w) VALUES (1, 2, 20, 200)",
    )
    .await;
    // No view key value: no view row.
    run(session, "INSERT INTO t (pk, ck, w) VALUES (1, 3, 300)").await;
    run(
        session,
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND pk IS NOT NULL \
         AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)",
    )
    .await;
    // Built from the existing rows (the view's columns: key, then the others).
    let mut got = ints(session, "SELECT v, pk, ck, w FROM mv").await;
    got.sort();
    assert_eq!(got, vec![some(&[10, 1, 1, 100]), some(&[20, 1, 2, 200])]);
    // An insert, with the base's write timestamp.
    run(
        session,
        "INSERT INTO t (pk, ck, v, w) VALUES (2, 1, 30, 5) USING TIMESTAMP 1234",
    )
    .await;
    assert_eq!(
        ints(session, "SELECT pk, ck, w FROM mv WHERE v = 30").await,
        vec![some(&[2, 1, 5])]
    );
    let wt = rows(session, "SELECT writetime(w) FROM mv WHERE v = 30").await;
    assert_eq!(wt[0].columns[0], Some(CqlValue::BigInt(1234)));
    // Setting the view key column on a row that had none creates its view row.
    run(session, "UPDATE t SET v = 40 WHERE pk = 1 AND ck = 3").await;
    assert_eq!(
        ints(session, "SELECT pk, ck, w FROM mv WHERE v = 40").await,
        vec![some(&[1, 3, 300])]
    );
    // Changing the view key column moves the view row.
    run(session, "UPDATE t SET v = 11 WHERE pk = 1 AND ck = 1").await;
    assert!(
        ints(session, "SELECT * FROM mv WHERE v = 10")
            .await
            .is_empty()
    );
    assert_eq!(
        ints(session, "SELECT pk, ck, w FROM mv WHERE v = 11").await,
        vec![some(&[1, 1, 100])]
    );
    // Updating another column updates the view row in place.
    run(session, "UPDATE t SET w = 101 WHERE pk = 1 AND ck = 1").await;
    assert_eq!(
        ints(session, "SELECT w FROM mv WHERE v = 11").await,
        vec![some(&[101])]
    );
    // Deleting the view key column removes the view row; deleting another keeps it.
    run(session, "DELETE v FROM t WHERE pk = 1 AND ck = 3").await;
    assert!(
        ints(session, "SELECT * FROM mv WHERE v = 40")
            .await
            .is_empty()
    );
    run(session, "DELETE w FROM t WHERE pk = 1 AND ck = 1").await;
    assert_eq!(
        ints(session, "SELECT pk, ck, w FROM mv WHERE v = 11").await,
        vec![vec![Some(1), Some(1), None]]
    );
    // A row delete, a range delete and a partition delete.
    run(session, "DELETE FROM t WHERE pk = 1 AND ck = 1").await;
    assert!(
        ints(session, "SELECT * FROM mv WHERE v = 11")
            .await
            .is_empty()
    );
    run(session, "INSERT INTO t (pk, ck, v) VALUES (3, 1, 50)").await;
    run(session, "INSERT INTO t (pk, ck, v) VALUES (3, 2, 51)").await;
    run(session, "INSERT INTO t (pk, ck, v) VALUES (3, 3, 52)").await;
    run(session, "DELETE FROM t WHERE pk = 3 AND ck >= 2").await;
    let mut got = ints(session, "SELECT v FROM mv").await;
    got.sort();
    assert_eq!(got, vec![some(&[20]), some(&[30]), some(&[50])]);
    run(session, "DELETE FROM t WHERE pk = 3").await;
    run(session, "DELETE FROM t WHERE pk = 2").await;
    assert_eq!(ints(session, "SELECT v FROM mv").await, vec![some(&[20])]);
    // A batch reaches the view too.
    run(
        session,
        "BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (4, 1, 60); \
         UPDATE t SET v = 21 WHERE pk = 1 AND ck = 2; APPLY BATCH",
    )
    .await;
    let mut got = ints(session, "SELECT v, pk, ck FROM mv").await;
    got.sort();
    assert_eq!(got, vec![some(&[21, 1, 2]), some(&[60, 4, 1])]);
    // A conditional write too.
    run(
        session,
        "UPDATE t SET v = 61 WHERE pk = 4 AND ck = 1 IF v = 60",
    )
    .await;
    assert_eq!(
        ints(session, "SELECT pk FROM mv WHERE v = 61").await,
        vec![some(&[4])]
    );
    // A column added to the base is added to a `SELECT *` view, and maintained.
    run(session, "ALTER TABLE t ADD x int").await;
    run(session, "UPDATE t SET x = 7 WHERE pk = 4 AND ck = 1").await;
    assert_eq!(
        ints(session, "SELECT x FROM mv WHERE v = 61").await,
        vec![some(&[7])]
    );
    // TRUNCATE of the base empties its views.
    run(session, "TRUNCATE t").await;
    assert!(ints(session, "SELECT * FROM mv").await.is_empty());
    s.teardown().await;
}

#[tokio::test]
async fn view_rows_expire_with_their_base_cells() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(
        session,
        "CREATE MATERIALIZED VIEW by_v AS SELECT * FROM t WHERE v IS NOT NULL AND ck IS NOT \
         NULL PRIMARY KEY (v, pk, ck)",
    )
    .await;
    run(
        session,
        "CREATE MATERIALIZED VIEW by_ck AS SELECT pk, ck FROM t WHERE ck IS NOT NULL \
         PRIMARY KEY (ck, pk)",
    )
    .await;
    // The view key column expires: the view row goes with it.
    run(
        session,
        "INSERT INTO t (pk, ck, v) VALUES (1, 1, 10) USING TTL 1",
    )
    .await;
    // Only an unselected column keeps the base row alive, and does so for the view row of
    // by_ck too (Scylla's virtual columns).
    run(session, "INSERT INTO t (pk, ck) VALUES (2, 2) USING TTL 1").await;
    run(session, "UPDATE t SET w = 7 WHERE pk = 2 AND ck = 2").await;
    let ttl = rows(session, "SELECT ttl(w) FROM by_v WHERE v = 10").await;
    assert!(ttl.len() == 1, "the TTL row is in the view");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ints(session, "SELECT * FROM by_v WHERE v = 10")
        .await
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the view row did not expire");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The base row with TTL 1 is gone from by_ck, the one kept alive by `w` is not.
    assert_eq!(
        ints(session, "SELECT ck, pk FROM by_ck").await,
        vec![some(&[2, 2])]
    );
    assert!(
        ints(session, "SELECT * FROM t WHERE pk = 1")
            .await
            .is_empty()
    );
    s.teardown().await;
}

#[tokio::test]
async fn views_of_a_table_without_clustering_columns_and_with_a_where_filter() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE k (id int PRIMARY KEY, n int, t text)",
    )
    .await;
    // The single partition key column needs no IS NOT NULL.
    run(
        session,
        "CREATE MATERIALIZED VIEW k_by_n AS SELECT * FROM k WHERE n IS NOT NULL \
         PRIMARY KEY (n, id)",
    )
    .await;
    // Only the rows whose base key column matches the WHERE clause's value.
    run(
        session,
        "CREATE MATERIALIZED VIEW k_one AS SELECT id, t FROM k WHERE id = 1 \
         PRIMARY KEY (id)",
    )
    .await;
    run(session, "INSERT INTO k (id, n, t) VALUES (1, 10, 'a')").await;
    run(session, "INSERT INTO k (id, n, t) VALUES (2, 20, 'b')").await;
    run(session, "UPDATE k SET n = 11 WHERE id = 1").await;
    let mut got = ints(session, "SELECT n, id FROM k_by_n").await;
    got.sort();
    assert_eq!(got, vec![some(&[11, 1]), some(&[20, 2])]);
    let one = rows(session, "SELECT id, t FROM k_one").await;
    assert_eq!(one.len(), 1);
    assert_eq!(
        one[0].columns,
        vec![Some(CqlValue::Int(1)), Some(CqlValue::Text("a".into()))]
    );
    run(session, "DELETE FROM k WHERE id = 1").await;
    assert_eq!(
        ints(session, "SELECT n, id FROM k_by_n").await,
        vec![some(&[20, 2])]
    );
    assert!(rows(session, "SELECT * FROM k_one").await.is_empty());
    s.teardown().await;
}

#[tokio::test]
async fn a_view_is_read_like_a_table_with_paging_and_restrictions() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    for pk in 0..5 {
        for ck in 0..4 {
            run(
                session,
                &format!(
                    "INSERT INTO t (pk, ck, v) VALUES ({pk}, {ck}, {})",
                    (pk + ck) % 3
                ),
            )
            .await;
        }
    }
    run(
        session,
        "CREATE MATERIALIZED VIEW mv AS SELECT pk, ck, v FROM t WHERE v IS NOT NULL AND pk IS \
         NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, ck, pk) WITH CLUSTERING ORDER BY (ck DESC)",
    )
    .await;
    // Paging through every view row.
    let mut query = Statement::new("SELECT v, ck, pk FROM mv");
    query.set_page_size(3);
    let all: Vec<(i32, i32, i32)> = session
        .query_iter(query, ())
        .await
        .expect("query_iter")
        .rows_stream::<(i32, i32, i32)>()
        .expect("typed")
        .try_collect()
        .await
        .expect("pages");
    assert_eq!(all.len(), 20);
    // Within a view partition, clustering order ck DESC, then pk ASC.
    let v0: Vec<(i32, i32)> = all
        .iter()
        .filter(|r| r.0 == 0)
        .map(|r| (r.1, r.2))
        .collect();
    let mut expected: Vec<(i32, i32)> = (0..5)
        .flat_map(|pk| (0..4).map(move |ck| (ck, pk)))
        .filter(|(ck, pk)| (pk + ck) % 3 == 0)
        .collect();
    expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(v0, expected);
    // Restrictions on the view's key.
    assert_eq!(
        ints(session, "SELECT pk FROM mv WHERE v = 1 AND ck = 0").await,
        vec![some(&[1]), some(&[4])]
    );
    assert_eq!(
        ints(session, "SELECT ck, pk FROM mv WHERE v = 2 AND ck > 2").await,
        vec![some(&[3, 2])]
    );
    s.teardown().await;
}

#[tokio::test]
async fn views_are_refused_as_scylla_refuses_them() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, w int, s int STATIC, l list<int>, \
         PRIMARY KEY (pk, ck))",
    )
    .await;
    run(session, "CREATE TABLE c (pk int PRIMARY KEY, n counter)").await;
    let key = "WHERE pk IS NOT NULL AND ck IS NOT NULL AND v IS NOT NULL";
    for (cql, expected) in [
        (
            format!("CREATE MATERIALIZED VIEW e AS SELECT pk, ck FROM t {key} PRIMARY KEY (v, pk)"),
            "without primary key columns from base t (ck)",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk, ck FROM t {key} AND w IS NOT NULL \
                 PRIMARY KEY ((v, w), pk, ck)"
            ),
            "Cannot include more than one non-primary key column 'w' in materialized view \
             primary key",
        ),
        (
            "CREATE MATERIALIZED VIEW e AS SELECT pk, ck FROM t WHERE pk IS NOT NULL \
             PRIMARY KEY (pk, ck)"
                .to_string(),
            "Primary key column 'ck' is required to be filtered by 'IS NOT NULL'",
        ),
        (
            format!("CREATE MATERIALIZED VIEW e AS SELECT * FROM t {key} PRIMARY KEY (v, pk, ck)"),
            "Unable to include static column 's'",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk, ck, l FROM t {key} AND l IS NOT NULL \
                 PRIMARY KEY (l, pk, ck)"
            ),
            "Cannot use MultiCell column 'l' in PRIMARY KEY of materialized view",
        ),
        (
            "CREATE MATERIALIZED VIEW e AS SELECT * FROM c WHERE n IS NOT NULL PRIMARY KEY \
             (pk)"
                .to_string(),
            "Materialized views are not supported on counter tables",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk, ck, v FROM t {key} PRIMARY KEY \
                 (v, pk, ck) WITH cdc = {{'enabled': true}}"
            ),
            "Cannot enable CDC for a materialized view",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk, ck, v FROM t {key} PRIMARY KEY \
                 (v, pk, ck) WITH default_time_to_live = 10"
            ),
            "Cannot set or alter default_time_to_live for a materialized view",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk AS p, ck FROM t {key} PRIMARY KEY \
                 (v, pk, ck)"
            ),
            "Cannot use alias when defining a materialized view",
        ),
        (
            format!(
                "CREATE MATERIALIZED VIEW e AS SELECT pk, ck FROM t {key} AND w = 1 \
                 PRIMARY KEY (v, pk, ck)"
            ),
            "Non-primary key columns cannot be restricted in the SELECT statement used for \
             materialized view e creation (got restrictions on: w)",
        ),
    ] {
        invalid(session, &cql, expected).await;
    }
    run(
        session,
        &format!(
            "CREATE MATERIALIZED VIEW mv AS SELECT pk, ck, v FROM t {key} PRIMARY KEY (v, pk, ck)"
        ),
    )
    .await;
    // IS NOT NULL on a column outside the view key: accepted with Scylla's warning
    // (`strict_is_not_null_in_views` defaults to `warn`).
    let created = session
        .query_unpaged(
            format!(
                "CREATE MATERIALIZED VIEW mvw AS SELECT pk, ck, v FROM t {key} AND w IS NOT \
                 NULL PRIMARY KEY (v, pk, ck)"
            ),
            (),
        )
        .await
        .expect("created with a warning");
    let warnings: Vec<&str> = created.warnings().collect();
    assert!(
        warnings.iter().any(|w| w.contains(
            "The IS NOT NULL restriction is allowed only columns which are part of the view's \
             primary key, found columns: w."
        )),
        "{warnings:?}"
    );
    run(session, "DROP MATERIALIZED VIEW mvw").await;
    invalid(
        session,
        "CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM mv WHERE v IS NOT NULL AND pk IS NOT \
         NULL AND ck IS NOT NULL PRIMARY KEY (pk, v, ck)",
        "Materialized views cannot be created against other materialized views",
    )
    .await;
    let (e, msg) = db_error(
        session,
        &format!(
            "CREATE MATERIALIZED VIEW mv AS SELECT pk, ck, v FROM t {key} PRIMARY KEY (v, pk, ck)"
        ),
    )
    .await;
    assert_eq!(
        e,
        DbError::AlreadyExists {
            keyspace: s.ks.clone(),
            table: "mv".into()
        },
        "{msg}"
    );
    run(
        session,
        &format!(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT pk, ck, v FROM t {key} \
             PRIMARY KEY (v, pk, ck)"
        ),
    )
    .await;
    // Writes to a view, and table statements on a view, are refused.
    invalid(
        session,
        "INSERT INTO mv (v, pk, ck) VALUES (1, 1, 1)",
        "Cannot directly modify a materialized view",
    )
    .await;
    invalid(
        session,
        "DELETE FROM mv WHERE v = 1",
        "Cannot directly modify a materialized view",
    )
    .await;
    invalid(
        session,
        "TRUNCATE mv",
        "Cannot TRUNCATE materialized view directly; must truncate base table instead",
    )
    .await;
    invalid(
        session,
        "ALTER TABLE mv WITH comment = 'x'",
        "Cannot use ALTER TABLE on Materialized View. (Did you mean ALTER MATERIALIZED VIEW)?",
    )
    .await;
    invalid(
        session,
        "DROP TABLE mv",
        "Cannot use DROP TABLE on Materialized View. (Did you mean DROP MATERIALIZED VIEW)?",
    )
    .await;
    invalid(
        session,
        "ALTER MATERIALIZED VIEW t WITH comment = 'x'",
        "Cannot use ALTER MATERIALIZED VIEW on Table. (Did you mean ALTER TABLE)?",
    )
    .await;
    invalid(
        session,
        "DROP MATERIALIZED VIEW t",
        "Cannot use DROP MATERIALIZED VIEW on Table. (Did you mean DROP TABLE)?",
    )
    .await;
    // The base cannot be dropped, nor lose a column a view needs, while the view exists.
    invalid(
        session,
        "DROP TABLE t",
        &format!(
            "Cannot drop table when materialized views still depend on it ({}.{{mv}})",
            s.ks
        ),
    )
    .await;
    invalid(
        session,
        "ALTER TABLE t DROP v",
        "Cannot drop column v from base table",
    )
    .await;
    // A column the view does not need can go: the view's key has a base regular column
    // (v), whose liveness is the view row's, so unselected columns do not keep it alive.
    run(session, "ALTER TABLE t DROP w").await;
    // A view missing: DROP answers a configuration error, IF EXISTS nothing.
    let (e, msg) = db_error(session, "DROP MATERIALIZED VIEW nope").await;
    assert_eq!(e, DbError::ConfigError, "{msg}");
    run(session, "DROP MATERIALIZED VIEW IF EXISTS nope").await;
    run(session, "DROP MATERIALIZED VIEW mv").await;
    run(session, "DROP TABLE t").await;
    s.teardown().await;
}

#[tokio::test]
async fn views_are_in_the_schema_tables_driver_metadata_and_describe() {
    let s = Setup::start(1).await;
    let session = &s.session;
    let ks = &s.ks;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v text, w int, PRIMARY KEY (pk, ck))",
    )
    .await;
    run(
        session,
        "CREATE MATERIALIZED VIEW mv AS SELECT pk, ck, v FROM t WHERE v IS NOT NULL AND pk IS \
         NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, pk, ck) WITH comment = 'by v'",
    )
    .await;
    let base_id = rows(
        session,
        &format!(
            "SELECT id FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = 't'"
        ),
    )
    .await;
    let views = rows(
        session,
        &format!(
            "SELECT view_name, base_table_id, base_table_name, include_all_columns, \
             where_clause, comment FROM system_schema.views WHERE keyspace_name = '{ks}'"
        ),
    )
    .await;
    assert_eq!(views.len(), 1);
    let v = &views[0].columns;
    assert_eq!(v[0], Some(CqlValue::Text("mv".into())));
    assert_eq!(v[1], base_id[0].columns[0]);
    assert_eq!(v[2], Some(CqlValue::Text("t".into())));
    assert_eq!(v[3], Some(CqlValue::Boolean(false)));
    assert_eq!(
        v[4],
        Some(CqlValue::Text(
            "v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL".into()
        ))
    );
    assert_eq!(v[5], Some(CqlValue::Text("by v".into())));
    // The view is not a table of system_schema.tables; its columns are in columns.
    let tables = rows(
        session,
        &format!("SELECT table_name FROM system_schema.tables WHERE keyspace_name = '{ks}'"),
    )
    .await;
    assert_eq!(tables.len(), 1);
    let columns = rows(
        session,
        &format!(
            "SELECT column_name, kind, position, type FROM system_schema.columns WHERE \
             keyspace_name = '{ks}' AND table_name = 'mv'"
        ),
    )
    .await;
    let columns: Vec<String> = columns
        .into_iter()
        .map(|r| {
            r.columns
                .into_iter()
                .map(|c| match c {
                    Some(CqlValue::Text(t)) => t,
                    Some(CqlValue::Int(i)) => i.to_string(),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        columns,
        vec![
            "ck clustering 1 int",
            "pk clustering 0 int",
            "v partition_key 0 text"
        ]
    );
    // ALTER MATERIALIZED VIEW changes its options.
    run(
        session,
        "ALTER MATERIALIZED VIEW mv WITH comment = 'by value' AND gc_grace_seconds = 100",
    )
    .await;
    let altered = rows(
        session,
        &format!(
            "SELECT comment, gc_grace_seconds FROM system_schema.views WHERE keyspace_name = \
             '{ks}' AND view_name = 'mv'"
        ),
    )
    .await;
    assert_eq!(
        altered[0].columns[0],
        Some(CqlValue::Text("by value".into()))
    );
    assert_eq!(altered[0].columns[1], Some(CqlValue::Int(100)));
    // The driver's metadata.
    session.refresh_metadata().await.expect("metadata");
    let state = session.get_cluster_state();
    let keyspace = state.get_keyspace(ks).expect("keyspace metadata");
    let view = keyspace.views.get("mv").expect("the view in the metadata");
    assert_eq!(view.base_table_name, "t");
    assert_eq!(view.view_metadata.partition_key, vec!["v".to_string()]);
    assert_eq!(
        view.view_metadata.clustering_key,
        vec!["pk".to_string(), "ck".to_string()]
    );
    assert!(!keyspace.tables.contains_key("mv"));
    // DESCRIBE: the view on its own, after its base, and in the keyspace.
    let describe = |cql: String| async move {
        rows(session, &cql)
            .await
            .into_iter()
            .map(|r| match (&r.columns[1], &r.columns[2], r.columns.get(3)) {
                (Some(CqlValue::Text(kind)), Some(CqlValue::Text(name)), statement) => (
                    kind.clone(),
                    name.clone(),
                    match statement {
                        Some(Some(CqlValue::Text(s))) => s.clone(),
                        _ => String::new(),
                    },
                ),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    let view_desc = describe(format!("DESC MATERIALIZED VIEW {ks}.mv")).await;
    assert_eq!(view_desc.len(), 1);
    assert_eq!(
        (view_desc[0].0.as_str(), view_desc[0].1.as_str()),
        ("view", "mv")
    );
    assert!(
        view_desc[0].2.starts_with(&format!(
            "CREATE MATERIALIZED VIEW {ks}.mv AS\n    SELECT v, pk, ck\n    FROM {ks}.t\n    \
             WHERE v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL\n    PRIMARY KEY (v, pk, \
             ck)\n    WITH CLUSTERING ORDER BY (pk ASC, ck ASC)\n    AND bloom_filter_fp_chance"
        )),
        "{}",
        view_desc[0].2
    );
    assert!(view_desc[0].2.contains("comment = 'by value'"));
    assert_eq!(describe(format!("DESC {ks}.mv")).await, view_desc);
    let table_desc = describe(format!("DESC TABLE {ks}.t")).await;
    let kinds: Vec<(&str, &str)> = table_desc
        .iter()
        .map(|d| (d.0.as_str(), d.1.as_str()))
        .collect();
    assert_eq!(kinds, vec![("table", "t"), ("view", "mv")]);
    let ks_desc = describe(format!("DESC KEYSPACE {ks}")).await;
    let kinds: Vec<&str> = ks_desc.iter().map(|d| d.1.as_str()).collect();
    assert_eq!(kinds, vec![ks.as_str(), "t", "mv"]);
    let listed = describe("DESC TABLES".to_string()).await;
    assert_eq!(
        listed.iter().map(|d| d.1.as_str()).collect::<Vec<_>>(),
        vec!["t"]
    );
    invalid(
        session,
        &format!("DESC TABLE {ks}.mv"),
        "Cannot use DESC TABLE on materialized View",
    )
    .await;
    // Dropping the view removes it everywhere.
    run(session, "DROP MATERIALIZED VIEW mv").await;
    assert!(
        rows(
            session,
            &format!("SELECT view_name FROM system_schema.views WHERE keyspace_name = '{ks}'"),
        )
        .await
        .is_empty()
    );
    invalid(session, "SELECT * FROM mv", "unconfigured table mv").await;
    s.teardown().await;
}

#[tokio::test]
async fn a_base_with_a_view_keeps_its_cdc_log_unchanged() {
    let s = Setup::start(1).await;
    let session = &s.session;
    run(
        session,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
    )
    .await;
    run(
        session,
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND pk IS NOT NULL \
         AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)",
    )
    .await;
    run(session, "INSERT INTO t (pk, ck, v) VALUES (1, 1, 10)").await;
    run(session, "UPDATE t SET v = 11 WHERE pk = 1 AND ck = 1").await;
    // One log row per base write (no preimage/postimage), none for the view.
    let log = ints(session, "SELECT pk, ck, v FROM t_scylla_cdc_log").await;
    assert_eq!(log, vec![some(&[1, 1, 10]), some(&[1, 1, 11])]);
    assert_eq!(ints(session, "SELECT v FROM mv").await, vec![some(&[11])]);
    invalid(
        session,
        "ALTER MATERIALIZED VIEW mv WITH cdc = {'enabled': true}",
        "Cannot enable CDC for a materialized view",
    )
    .await;
    invalid(
        session,
        "CREATE MATERIALIZED VIEW lv AS SELECT * FROM t_scylla_cdc_log WHERE \"cdc$stream_id\" \
         IS NOT NULL AND \"cdc$time\" IS NOT NULL AND \"cdc$batch_seq_no\" IS NOT NULL PRIMARY \
         KEY (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\")",
        "Materialized views cannot be created on CDC Log tables",
    )
    .await;
    s.teardown().await;
}
