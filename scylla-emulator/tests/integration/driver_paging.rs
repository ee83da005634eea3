//! Short and empty pages, as ScyllaDB cuts them: after the row that takes a page past
//! `query_page_size_in_bytes`, and once a page has met `query_tombstone_page_limit`
//! tombstones (deleted rows and partitions, recently expired rows), even with no row in it.
//! The expected pages of the tombstone cases are those of ScyllaDB's own
//! `test/cqlpy/test_tombstone_limit.py` (with the limit lowered to 10).
//!
//! Embedded clusters only: the limits are set on the cluster.

use std::time::Duration;

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::response::{PagingState, PagingStateResponse};
use scylla::statement::unprepared::Statement;
use scylla::value::{CqlValue, Row};
use scylla_emulator::{ClusterBuilder, EmbeddedCluster};

use crate::support::{run, vnode_keyspace, wait_until};

/// A cluster of `builder`, a session and a new keyspace that the session uses.
async fn setup(builder: ClusterBuilder) -> (EmbeddedCluster, Session, String) {
    let cluster = builder.start().await.expect("cluster starts");
    let session = SessionBuilder::new()
        .known_node(cluster.contact_point().to_string())
        .build()
        .await
        .expect("session builds");
    let ks = vnode_keyspace(&session).await;
    session.use_keyspace(&ks, false).await.expect("USE ks");
    (cluster, session, ks)
}

/// Every page of `cql` read with `page_size`: the first column (an `int`) of each row, and
/// whether the page said that more follow. Fails on more than 1,000 pages.
async fn pages(session: &Session, cql: &str, page_size: i32) -> Vec<(Vec<i32>, bool)> {
    let mut statement = Statement::new(cql);
    statement.set_page_size(page_size);
    let mut state = PagingState::start();
    let mut out = Vec::new();
    loop {
        assert!(out.len() < 1000, "{cql}: too many pages");
        let (result, next) = session
            .query_single_page(statement.clone(), (), state)
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
        let rows: Vec<i32> = result
            .into_rows_result()
            .expect("rows")
            .rows::<Row>()
            .expect("rows")
            .map(|r| match r.expect("a row").columns.first() {
                Some(Some(CqlValue::Int(v))) => *v,
                other => panic!("{cql}: an int first, not {other:?}"),
            })
            .collect();
        match next {
            PagingStateResponse::HasMorePages { state: s } => {
                out.push((rows, true));
                state = s;
            }
            PagingStateResponse::NoMorePages => {
                out.push((rows, false));
                return out;
            }
        }
    }
}

/// The rows of each page, without the more-pages flags.
fn rows_of(pages: &[(Vec<i32>, bool)]) -> Vec<Vec<i32>> {
    pages.iter().map(|(r, _)| r.clone()).collect()
}

/// Checks that only the last page says no more follow.
fn check_flags(pages: &[(Vec<i32>, bool)]) {
    let last = pages.len() - 1;
    for (i, (_, more)) in pages.iter().enumerate() {
        assert_eq!(*more, i != last, "page {i} of {pages:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_end_after_the_row_that_crosses_the_byte_limit() {
    let (cluster, s, _) = setup(EmbeddedCluster::builder().query_page_size_in_bytes(10_000)).await;
    run(
        &s,
        "CREATE TABLE t (pk int, ck int, v blob, PRIMARY KEY (pk, ck))",
    )
    .await;
    let insert = s
        .prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
        .await
        .unwrap();
    // Two partitions of 10 rows of 4,000 bytes: three rows take a page past 10,000 bytes.
    for pk in 0..2 {
        for ck in 0..10 {
            s.execute_unpaged(&insert, (pk, pk * 100 + ck, vec![7u8; 4000]))
                .await
                .unwrap();
        }
    }
    let got = pages(&s, "SELECT ck, v FROM t WHERE pk = 0", 100).await;
    check_flags(&got);
    assert_eq!(
        rows_of(&got),
        vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]
    );
    // Only the selected columns count: without the blobs, one page.
    let got = pages(&s, "SELECT ck FROM t WHERE pk = 0", 100).await;
    assert_eq!(got, vec![((0..10).collect(), false)]);
    // A scan of both partitions: pages of three rows, across the partition boundary too,
    // every row once and in order.
    let got = pages(&s, "SELECT ck, v FROM t", 100).await;
    check_flags(&got);
    assert!(got.iter().all(|(r, _)| r.len() <= 3), "{got:?}");
    assert!(got[..got.len() - 1].iter().all(|(r, _)| r.len() == 3));
    let mut all: Vec<i32> = got.iter().flat_map(|(r, _)| r.clone()).collect();
    assert_eq!(all.len(), 20);
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 20);
    // LIMIT ends the read: the page cut by size before it says more follow, the last does
    // not.
    let got = pages(&s, "SELECT ck, v FROM t WHERE pk = 0 LIMIT 4", 100).await;
    assert_eq!(got, vec![(vec![0, 1, 2], true), (vec![3], false)]);
    let got = pages(&s, "SELECT ck, v FROM t WHERE pk = 0 LIMIT 3", 100).await;
    assert_eq!(got, vec![(vec![0, 1, 2], false)]);
    // The row count still cuts first when it is smaller.
    // A full page says more follow, as Scylla's pager (`query_pagers.cc`) does: after the
    // fifth full page comes an empty last one.
    let got = pages(&s, "SELECT ck, v FROM t WHERE pk = 0", 2).await;
    check_flags(&got);
    assert_eq!(got.len(), 6);
    assert!(got[..5].iter().all(|(r, _)| r.len() == 2) && got[5].0.is_empty());
    // A row larger than the limit makes a page of its own.
    s.execute_unpaged(&insert, (5, 0, vec![1u8; 30_000]))
        .await
        .unwrap();
    s.execute_unpaged(&insert, (5, 1, vec![1u8; 30_000]))
        .await
        .unwrap();
    let got = pages(&s, "SELECT ck, v FROM t WHERE pk = 5", 100).await;
    // A short page says more follow even when nothing does, as Scylla's pager: the last
    // page is then empty.
    assert_eq!(got, vec![(vec![0], true), (vec![1], true), (vec![], false)]);
    // Unpaged reads are not cut.
    let all = s
        .query_unpaged("SELECT ck FROM t WHERE pk = 0", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .rows_num();
    assert_eq!(all, 10);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_end_at_the_tombstone_limit_even_when_empty() {
    let (cluster, s, _) = setup(EmbeddedCluster::builder().query_tombstone_page_limit(10)).await;
    run(
        &s,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    // Deleted rows first (test_row_tombstone_prefix): three empty pages, then the row.
    for ck in 0..30 {
        run(&s, &format!("DELETE FROM t WHERE pk = 1 AND ck = {ck}")).await;
    }
    run(&s, "INSERT INTO t (pk, ck, v) VALUES (1, 31, 0)").await;
    for cql in [
        "SELECT ck FROM t WHERE pk = 1",
        "SELECT ck FROM t WHERE pk = 1 AND v = 0 ALLOW FILTERING",
    ] {
        let got = pages(&s, cql, 10).await;
        check_flags(&got);
        assert_eq!(
            rows_of(&got),
            vec![vec![], vec![], vec![], vec![31]],
            "{cql}"
        );
    }
    // Live rows, then deleted ones (test_row_tombstone_span).
    for ck in 0..11 {
        run(
            &s,
            &format!("INSERT INTO t (pk, ck, v) VALUES (2, {ck}, 0)"),
        )
        .await;
    }
    for ck in 30..50 {
        run(&s, &format!("DELETE FROM t WHERE pk = 2 AND ck = {ck}")).await;
    }
    run(&s, "INSERT INTO t (pk, ck, v) VALUES (2, 51, 0)").await;
    let got = pages(&s, "SELECT ck FROM t WHERE pk = 2", 10).await;
    check_flags(&got);
    assert_eq!(
        rows_of(&got),
        vec![(0..10).collect(), vec![10], vec![], vec![51]]
    );
    // Rows whose only cell was deleted (no row marker; test_empty_row_span).
    for ck in 0..30 {
        run(
            &s,
            &format!("UPDATE t SET v = 0 WHERE pk = 3 AND ck = {ck}"),
        )
        .await;
    }
    for ck in 5..28 {
        run(&s, &format!("DELETE v FROM t WHERE pk = 3 AND ck = {ck}")).await;
    }
    let got = pages(&s, "SELECT ck FROM t WHERE pk = 3", 10).await;
    check_flags(&got);
    assert_eq!(rows_of(&got), vec![(0..5).collect(), vec![], vec![28, 29]]);
    // Unpaged reads are not cut.
    let n = s
        .query_unpaged("SELECT ck FROM t WHERE pk = 1", ())
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .rows_num();
    assert_eq!(n, 1);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_partitions_make_empty_pages_of_a_scan() {
    let (cluster, s, _) = setup(EmbeddedCluster::builder().query_tombstone_page_limit(10)).await;
    run(
        &s,
        "CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))",
    )
    .await;
    for pk in 0..100 {
        run(
            &s,
            &format!("INSERT INTO t (pk, ck, v) VALUES ({pk}, 0, 0)"),
        )
        .await;
    }
    // Keep three partitions, delete the others (test_partition_tombstone_span).
    for pk in 0..100 {
        if pk % 40 != 0 {
            run(&s, &format!("DELETE FROM t WHERE pk = {pk}")).await;
        }
    }
    let got = pages(&s, "SELECT pk FROM t", 10).await;
    check_flags(&got);
    assert!(got.len() >= 97 / 10, "{got:?}");
    assert!(
        got.iter().any(|(r, _)| r.is_empty()),
        "no empty page: {got:?}"
    );
    let mut all: Vec<i32> = got.iter().flat_map(|(r, _)| r.clone()).collect();
    all.sort_unstable();
    assert_eq!(all, vec![0, 40, 80]);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_rows_count_as_tombstones_within_gc_grace_seconds() {
    let (cluster, s, _) = setup(EmbeddedCluster::builder().query_tombstone_page_limit(10)).await;
    // `a` keeps expired data as tombstones for gc_grace_seconds (10 days by default); `b`,
    // with gc_grace_seconds = 0 as a CDC log table, purges it at once.
    for (table, options) in [("a", ""), ("b", " WITH gc_grace_seconds = 0")] {
        run(
            &s,
            &format!("CREATE TABLE {table} (pk int, ck int, v int, PRIMARY KEY (pk, ck)){options}"),
        )
        .await;
        for ck in 0..25 {
            run(
                &s,
                &format!("INSERT INTO {table} (pk, ck, v) VALUES (0, {ck}, 0) USING TTL 1"),
            )
            .await;
        }
        run(
            &s,
            &format!("INSERT INTO {table} (pk, ck, v) VALUES (0, 100, 0)"),
        )
        .await;
    }
    for table in ["a", "b"] {
        let cql = format!("SELECT ck FROM {table} WHERE pk = 0");
        wait_until(Duration::from_secs(10), "the rows expire", || {
            let s = &s;
            let cql = cql.clone();
            async move {
                s.query_unpaged(cql, ())
                    .await
                    .unwrap()
                    .into_rows_result()
                    .unwrap()
                    .rows_num()
                    == 1
            }
        })
        .await;
    }
    let got = pages(&s, "SELECT ck FROM a WHERE pk = 0", 10).await;
    check_flags(&got);
    assert_eq!(rows_of(&got), vec![vec![], vec![], vec![100]]);
    let got = pages(&s, "SELECT ck FROM b WHERE pk = 0", 10).await;
    assert_eq!(got, vec![(vec![100], false)]);
    cluster.shutdown().await;
}
