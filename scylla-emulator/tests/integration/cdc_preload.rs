//! Preloaded CDC tables: `ClusterBuilder::preload` fills a table before `start()` returns,
//! with base rows and log rows identical to those of the same INSERTs sent through the
//! driver; `scylla-emulator --preload` does the same before printing `ready` and rejects
//! malformed specifications with a clear message.
//!
//! Preloading is the embedded cluster's: with `SCYLLA_URI` set, the test comparing preloaded
//! rows with driver inserts says it is skipped. The others check the builder's validation and
//! the `scylla-emulator` program itself, with no cluster of `SCYLLA_URI` involved, and run
//! either way.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use futures::TryStreamExt;
use parking_lot::Mutex;
use scylla::client::session::Session;
use scylla::value::{CqlTimeuuid, CqlValue, Row};
use scylla_cdc_test_utils::{embedded_only, setup_tracing};
use scylla_emulator::{ClusterError, EmbeddedCluster, Preload};

/// Every row of a query, as `(column name → value)` maps, in the order returned.
async fn rows(session: &Session, cql: &str) -> Vec<HashMap<String, Option<CqlValue>>> {
    let pages = session
        .query_iter(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"));
    let names: Vec<String> = pages
        .column_specs()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let rows: Vec<Row> = pages
        .rows_stream::<Row>()
        .expect("rows")
        .try_collect()
        .await
        .expect("decode");
    rows.into_iter()
        .map(|r| names.iter().cloned().zip(r.columns).collect())
        .collect()
}

/// µs since the epoch of a timeuuid.
fn micros(u: &CqlTimeuuid) -> i64 {
    let uuid: &uuid::Uuid = u.as_ref();
    let raw = uuid.get_timestamp().expect("version 1").to_gregorian().0;
    (raw as i64 - 0x01B2_1DD2_1381_4000) / 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preloaded_rows_and_log_rows_equal_those_of_driver_inserts() {
    if !embedded_only(
        "preloaded_rows_and_log_rows_equal_those_of_driver_inserts",
        "preloads tables through the cluster builder",
    ) {
        return;
    }
    setup_tracing();
    const P: i64 = 5;
    const R: i64 = 7;
    let progress = Arc::new(Mutex::new(Vec::new()));
    let seen = progress.clone();
    let cluster = EmbeddedCluster::builder()
        .preload(
            Preload::new("pre", "t", P as u64, R as u64)
                .postimage(true)
                .on_progress(move |p| seen.lock().push((p.rows_done, p.rows_total))),
        )
        .preload(Preload::new("pre", "u", 2, 3))
        .start()
        .await
        .expect("cluster");
    assert_eq!(
        progress.lock().last(),
        Some(&((P * R) as u64, (P * R) as u64))
    );
    let session = cluster.session().await.expect("session");
    // The same rows inserted through the driver into a table of the same shape.
    session
        .query_unpaged(
            "CREATE TABLE pre.d (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck)) \
             WITH cdc = {'enabled': true, 'postimage': true}",
            (),
        )
        .await
        .expect("create");
    let insert = session
        .prepare("INSERT INTO pre.d (pk, ck, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");
    for pk in 0..P {
        for ck in 0..R {
            let v = ((pk * R + ck) as u64).to_be_bytes().to_vec();
            session
                .execute_unpaged(&insert, (pk, ck, v))
                .await
                .expect("insert");
        }
    }
    // Base rows: same content, `v` = the row number.
    let base = rows(&session, "SELECT pk, ck, v, writetime(v) FROM pre.t").await;
    let driver = rows(&session, "SELECT pk, ck, v FROM pre.d").await;
    assert_eq!(base.len(), (P * R) as usize);
    for (b, d) in base.iter().zip(&driver) {
        for c in ["pk", "ck", "v"] {
            assert_eq!(b[c], d[c], "{c}");
        }
    }
    // Log rows: identical but for `cdc$time` (the same stream, since streams depend on the
    // partition key only, and the same columns); times follow the row order.
    let strip = |mut r: HashMap<String, Option<CqlValue>>| {
        r.remove("cdc$time");
        let mut v: Vec<(String, Option<CqlValue>)> = r.into_iter().collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let log = rows(&session, "SELECT * FROM pre.t_scylla_cdc_log").await;
    let driver_log = rows(&session, "SELECT * FROM pre.d_scylla_cdc_log").await;
    assert_eq!(
        log.len(),
        2 * (P * R) as usize,
        "a delta and a post-image per row"
    );
    assert_eq!(log.len(), driver_log.len());
    // Write times: each row its own, equal to the log time of its rows.
    let mut write_time: HashMap<(i64, i64), i64> = HashMap::new();
    for b in &base {
        let (Some(CqlValue::BigInt(pk)), Some(CqlValue::BigInt(ck)), Some(CqlValue::BigInt(wt))) =
            (&b["pk"], &b["ck"], &b["writetime(v)"])
        else {
            panic!("unexpected base row {b:?}");
        };
        write_time.insert((*pk, *ck), *wt);
    }
    // Partitions are written by several threads at once: every row has its own server
    // timestamp, increasing with the clustering key within a partition.
    let mut ordered: Vec<(&(i64, i64), &i64)> = write_time.iter().collect();
    ordered.sort();
    assert!(
        ordered
            .windows(2)
            .all(|w| w[0].0.0 != w[1].0.0 || w[0].1 < w[1].1),
        "increasing within a partition"
    );
    let mut times: Vec<i64> = write_time.values().copied().collect();
    times.sort_unstable();
    times.dedup();
    assert_eq!(times.len(), write_time.len(), "one timestamp per row");
    for r in &log {
        let (Some(CqlValue::BigInt(pk)), Some(CqlValue::BigInt(ck)), Some(CqlValue::Timeuuid(t))) =
            (&r["pk"], &r["ck"], &r["cdc$time"])
        else {
            panic!("unexpected log row {r:?}");
        };
        assert_eq!(micros(t), write_time[&(*pk, *ck)]);
    }
    let mut a: Vec<_> = log.into_iter().map(strip).collect();
    let mut b: Vec<_> = driver_log.into_iter().map(strip).collect();
    let key = |r: &Vec<(String, Option<CqlValue>)>| format!("{r:?}");
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert_eq!(a, b);
    // The second preloaded table, without images.
    assert_eq!(
        rows(&session, "SELECT * FROM pre.u_scylla_cdc_log")
            .await
            .len(),
        6
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_preloads_are_configuration_errors() {
    let twice = EmbeddedCluster::builder()
        .preload(Preload::new("ks", "t", 1, 1))
        .preload(Preload::new("KS", "T", 2, 2))
        .start()
        .await;
    assert!(
        matches!(&twice, Err(ClusterError::Config(m)) if m.contains("preloaded twice")),
        "{twice:?}"
    );
    let empty = EmbeddedCluster::builder()
        .preload(Preload::new("ks", "t", 0, 1))
        .start()
        .await;
    assert!(
        matches!(&empty, Err(ClusterError::Config(m)) if m.contains("at least 1")),
        "{empty:?}"
    );
}

/// `scylla-emulator` with `args`, its stdout lines and stderr.
fn emulator(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_scylla-emulator"))
        .args(["--port", "0", "--address", "127.77.3.1"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scylla-emulator starts")
}

#[test]
fn the_emulator_rejects_a_malformed_preload_flag() {
    let out = emulator(&["--preload", "ks.t:partitions=10"])
        .wait_with_output()
        .expect("exits");
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--preload") && stderr.contains("missing rows"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_emulator_preloads_before_it_is_ready() {
    let mut child = emulator(&[
        "--preload",
        "flag.t:partitions=3,rows=4",
        "--preload",
        "flag.u:partitions=2,rows=2,preimage,postimage",
    ]);
    let stdout = child.stdout.take().expect("stdout");
    let mut stdout = BufReader::new(stdout);
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ready line");
    let addr = line
        .trim()
        .strip_prefix("ready ")
        .expect("ready <addr>")
        .to_string();
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(addr)
        .build()
        .await
        .expect("session");
    let count = |cql: &'static str| {
        let session = &session;
        async move {
            session
                .query_unpaged(cql, ())
                .await
                .expect(cql)
                .into_rows_result()
                .expect("rows")
                .rows_num()
        }
    };
    assert_eq!(count("SELECT * FROM flag.t").await, 12);
    assert_eq!(count("SELECT * FROM flag.t_scylla_cdc_log").await, 12);
    assert_eq!(count("SELECT * FROM flag.u_scylla_cdc_log").await, 8);
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "shutdown").expect("shutdown");
    line.clear();
    stdout.read_line(&mut line).expect("answer");
    assert_eq!(line.trim(), "ok");
    let out = child.wait_with_output().expect("exits");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("preload flag.t: 12/12 rows (100%)"),
        "{stderr}"
    );
}
