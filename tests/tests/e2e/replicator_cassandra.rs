//! Replication from the embedded cluster (or the real Scylla of `SCYLLA_URI`) into a real
//! Apache Cassandra 5.0 node: every change kind the replicator handles — inserts, updates,
//! row / range / partition deletes, collections (append, prepend, removal, element set and
//! delete, overwrite), non-frozen and frozen UDTs, static columns, TTLs and explicit
//! timestamps — then every row of source and destination compared (values, `writetime()`,
//! `ttl()`): no difference. A table whose non-frozen lists cannot be replicated to Cassandra
//! (no CDC post-image) is refused at start with a message naming the list columns.
//!
//! The node is started once for the whole file by `conformance/cassandra/start-cassandra` (the
//! first use resolves Cassandra's jars with Maven into `conformance/.cache`, ~80 MB) on
//! `127.0.65.1` (`SCYLLA_CDC_CASSANDRA_ADDRESS` overrides it) and stopped, its directory
//! removed, when the test ends — also on failure. Without `java` or `mvn` the test prints
//! `skipped: ...` and passes, unless `SCYLLA_CDC_REQUIRE_CASSANDRA=1` (set on CI) makes it
//! fail.
//!
//! The node also accepts TLS on its CQL port (`client_encryption_options`, optional, with a
//! certificate of a test CA for its address), and the replicator writes the matrix to it over
//! TLS, verifying the node's certificate against that CA: the TLS path checked against a
//! server we did not write.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc_replicator::exit_code;
use scylla_cdc_test_utils::{setup_tracing, skip, unique_keyspace_name};
use scylla_emulator::TestCa;

use crate::support::*;

const TEST: &str = "replicator_cassandra::replicates_into_cassandra_or_refuses_at_start";
const CONVERGE: Duration = Duration::from_secs(60);

/// A Cassandra node started by `start-cassandra`, stopped (and its directory removed) by
/// `stop-cassandra`: by [`CassandraNode::stop`], or when dropped (a failed test).
struct CassandraNode {
    /// `address:port` of its CQL port.
    contact_point: String,
    /// The node directory (config, data, logs, pid file).
    dir: PathBuf,
    /// The JVM's process id.
    pid: Option<u32>,
    /// Whether it has been stopped.
    stopped: bool,
    /// The PEM file of the CA that signed the node's TLS certificate (in `_tls`).
    ca_file: PathBuf,
    /// The TLS files, removed with the node.
    _tls: TempDir,
}

impl CassandraNode {
    /// Stops the node and removes its directory; fails if its process survives.
    fn stop(&mut self) -> anyhow::Result<()> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        let status = Command::new(script("stop-cassandra"))
            .arg(&self.dir)
            .status()
            .context("running stop-cassandra")?;
        if !status.success() {
            bail!("stop-cassandra {} failed: {status}", self.dir.display());
        }
        if let Some(pid) = self.pid
            && Path::new(&format!("/proc/{pid}")).exists()
        {
            bail!("Cassandra (pid {pid}) still runs after stop-cassandra");
        }
        Ok(())
    }
}

impl Drop for CassandraNode {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("{e:#}");
        }
    }
}

/// A script of `conformance/cassandra`.
fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/cassandra")
        .join(name)
}

/// Whether `program args` runs and succeeds.
fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Starts a Cassandra node, or returns `None` (after printing why) when Java or Maven is
/// missing and `SCYLLA_CDC_REQUIRE_CASSANDRA` is not `1`.
fn start_cassandra() -> anyhow::Result<Option<CassandraNode>> {
    let java = std::env::var("JAVA").unwrap_or_else(|_| "java".to_owned());
    let missing: Vec<&str> = [
        (!runs(&java, &["-version"])).then_some("java"),
        (!runs("mvn", &["-v"])).then_some("mvn"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !missing.is_empty() {
        let why = format!(
            "{} not found: it starts an Apache Cassandra node (Java 17, jars via Maven)",
            missing.join(" and ")
        );
        if std::env::var("SCYLLA_CDC_REQUIRE_CASSANDRA").as_deref() == Ok("1") {
            bail!("{why}, and SCYLLA_CDC_REQUIRE_CASSANDRA=1 requires this test to run");
        }
        skip(TEST, &why);
        return Ok(None);
    }
    let address =
        std::env::var("SCYLLA_CDC_CASSANDRA_ADDRESS").unwrap_or_else(|_| "127.0.65.1".to_owned());
    // A certificate for the node's address, signed by a CA of this test.
    let ip: std::net::IpAddr = address.parse().context("SCYLLA_CDC_CASSANDRA_ADDRESS")?;
    let ca = TestCa::new("cassandra test CA")?;
    let cert = ca.server_cert(&[ip], &[])?;
    let tls = TempDir::new();
    let keystore = tls.write(
        "keystore.pem",
        &format!("{}{}", cert.key_pem, cert.cert_pem),
    );
    let ca_file = PathBuf::from(tls.write("ca.pem", ca.cert_pem()));
    let out = Command::new(script("start-cassandra"))
        .args(["--timeout", "240", "--tls-keystore"])
        .arg(&keystore)
        .arg("--tls-truststore")
        .arg(&ca_file)
        .arg(&address)
        .output()
        .context("running start-cassandra")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let var = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(str::to_owned)
    };
    // A node whose directory was printed is stopped even if the rest fails.
    let node = var("CASSANDRA_DIR").map(|dir| CassandraNode {
        contact_point: format!(
            "{}:{}",
            var("CASSANDRA_ADDRESS").unwrap_or_default(),
            var("CASSANDRA_PORT").unwrap_or_default()
        ),
        dir: PathBuf::from(dir),
        pid: var("CASSANDRA_PID").and_then(|p| p.parse().ok()),
        stopped: false,
        ca_file,
        _tls: tls,
    });
    if !out.status.success() {
        bail!(
            "start-cassandra failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let node = node.context("start-cassandra printed no CASSANDRA_DIR")?;
    skip_free_note(&format!(
        "Cassandra 5.0.6 up on {} after {} s (RSS {} KiB)",
        node.contact_point,
        var("CASSANDRA_START_SECONDS").unwrap_or_default(),
        var("CASSANDRA_RSS_KIB").unwrap_or_default()
    ));
    Ok(Some(node))
}

/// Prints a line past the test harness's output capture.
fn skip_free_note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "test {TEST} ... {line}");
}

/// The source schema: every column type (lists need the post-image), a multi-column
/// clustering key for range deletes, a static list, a table without clustering key.
fn schema(ks: &str) -> Vec<String> {
    vec![
        format!("CREATE TYPE {ks}.point (x double, y double)"),
        format!(
            "CREATE TYPE {ks}.addr (street text, zip int, geo frozen<point>, tags frozen<set<text>>)"
        ),
        format!(
            "CREATE TABLE {ks}.all_types (pk int, ck int, st text static, sl list<text> static, \
             c_ascii ascii, c_bigint bigint, c_blob blob, c_boolean boolean, c_date date, \
             c_decimal decimal, c_double double, c_duration duration, c_float float, c_inet inet, \
             c_int int, c_smallint smallint, c_text text, c_time time, c_timestamp timestamp, \
             c_timeuuid timeuuid, c_tinyint tinyint, c_uuid uuid, c_varint varint, \
             c_list list<int>, c_set set<text>, c_map map<int, text>, \
             c_flist frozen<list<int>>, c_fset frozen<set<int>>, c_fmap frozen<map<text, int>>, \
             c_nested map<int, frozen<list<frozen<set<int>>>>>, \
             c_tuple tuple<int, text, frozen<list<int>>>, \
             c_udt addr, c_fudt frozen<addr>, c_list_udt list<frozen<addr>>, \
             PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'postimage': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.mck (pk int, c1 int, c2 text, c3 int, v int, \
             PRIMARY KEY (pk, c1, c2, c3)) \
             WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC, c3 ASC) AND cdc = {{'enabled': true}}"
        ),
        format!(
            "CREATE TABLE {ks}.no_ck (pk text PRIMARY KEY, v int, l list<int>, m map<int, int>) \
             WITH cdc = {{'enabled': true, 'postimage': true}}"
        ),
    ]
}

const TABLES: [&str; 3] = ["all_types", "mck", "no_ck"];

/// Inserts, updates, and every collection and UDT change that adds something.
fn phase_writes(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    let row = "WHERE pk = 1 AND ck = 1";
    let mut s = vec![
        format!(
            "INSERT INTO {t} (pk, ck, st, c_ascii, c_bigint, c_blob, c_boolean, c_date, c_decimal, \
             c_double, c_duration, c_float, c_inet, c_int, c_smallint, c_text, c_time, \
             c_timestamp, c_timeuuid, c_tinyint, c_uuid, c_varint, c_list, c_set, c_map, \
             c_flist, c_fset, c_fmap, c_nested, c_tuple, c_udt, c_fudt, c_list_udt) VALUES \
             (1, 1, 'static one', 'ascii', 9223372036854775807, 0xcafe, true, '2024-05-01', \
             12.345, 1.5, 1h30m, 2.25, '10.0.0.1', -7, 300, 'text ''quoted''', '12:34:56.789', \
             '2024-05-01T12:00:00.123Z', 50554d6e-29bb-11e5-b345-feff819cdc9f, 7, \
             123e4567-e89b-12d3-a456-426614174000, 123456789012345678901234567890, [1, 2, 3], \
             {{'a', 'b'}}, {{1: 'one', 2: 'two'}}, [4, 5], {{6, 7}}, {{'x': 1}}, \
             {{1: [{{1, 2}}, {{3}}]}}, (1, 'tuple', [9]), \
             {{street: 'Main', zip: 12345, geo: {{x: 1.0, y: 2.0}}, tags: {{'home'}}}}, \
             {{street: 'Frozen', zip: 1}}, [{{street: 'L1', zip: 1}}])"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int, c_text) VALUES (1, 2, 2, 'two')"),
        format!("INSERT INTO {t} (pk, ck) VALUES (1, 3)"),
        format!("UPDATE {t} SET c_int = 5 WHERE pk = 1 AND ck = 4"),
        format!("UPDATE {t} SET st = 'static two', sl = ['s1', 's2'] WHERE pk = 2"),
        // Append, prepend, element set: lists.
        format!(
            "UPDATE {t} SET c_list = c_list + [4], c_set = c_set + {{'c'}}, \
             c_map = c_map + {{3: 'three'}} {row}"
        ),
        format!("UPDATE {t} SET c_list = [0] + c_list {row}"),
        format!("UPDATE {t} SET c_list[2] = 20 {row}"),
        format!("UPDATE {t} SET sl = sl + ['s3'] WHERE pk = 2"),
        format!("UPDATE {t} SET sl = ['s0'] + sl WHERE pk = 2"),
        format!("UPDATE {t} SET c_udt.zip = 54321 {row}"),
        format!("UPDATE {t} SET c_list_udt = c_list_udt + [{{street: 'L2', zip: 2}}] {row}"),
        format!(
            "BEGIN BATCH INSERT INTO {t} (pk, ck, c_int, c_list) VALUES (1, 5, 1, [50]); \
             UPDATE {t} SET c_text = 'b', c_list = c_list + [60, 61] WHERE pk = 1 AND ck = 6; \
             APPLY BATCH"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int) VALUES (1, 7, 7) IF NOT EXISTS"),
        format!("UPDATE {t} SET c_map[5] = 'five' {row}"),
        format!("UPDATE {t} SET c_nested = c_nested + {{2: [{{4}}]}} {row}"),
        format!("INSERT INTO {t} (pk, ck, c_int, c_list) VALUES (3, 1, 1, [1, 1])"),
    ];
    s.extend(mck_grid(ks));
    s.extend([
        format!("INSERT INTO {ks}.no_ck (pk, v, l, m) VALUES ('a', 1, [1, 2], {{1: 1}})"),
        format!("UPDATE {ks}.no_ck SET v = 2, l = l + [3] WHERE pk = 'b'"),
        format!("UPDATE {ks}.no_ck SET m = m + {{2: 2}}, l = [0] + l WHERE pk = 'a'"),
    ]);
    s
}

/// Overwrites, element and column deletions, row, range and partition deletes.
fn phase_deletes(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    let row = "WHERE pk = 1 AND ck = 1";
    let mut s = vec![
        format!("DELETE c_text FROM {t} {row}"),
        format!("DELETE c_map FROM {t} {row}"),
        format!("UPDATE {t} SET c_set = c_set - {{'a'}} {row}"),
        format!("UPDATE {t} SET c_map = {{7: 'seven'}} {row}"),
        // Element delete, element set, removal by value, overwrite, column delete: lists.
        format!("DELETE c_list[0] FROM {t} {row}"),
        format!("UPDATE {t} SET c_list[0] = 100 {row}"),
        format!("UPDATE {t} SET c_list = c_list - [3] {row}"),
        format!("UPDATE {t} SET c_list = [7, 8, 9] WHERE pk = 1 AND ck = 2"),
        format!("DELETE c_list FROM {t} WHERE pk = 1 AND ck = 6"),
        format!("DELETE sl[1] FROM {t} WHERE pk = 2"),
        format!("UPDATE {t} SET c_list_udt[0] = {{street: 'L0'}} {row}"),
        format!("UPDATE {t} SET c_udt.street = null {row}"),
        format!("UPDATE {t} SET c_udt = {{street: 'New', zip: 2}} WHERE pk = 1 AND ck = 2"),
        format!("UPDATE {t} SET c_set = {{'z'}} {row}"),
        format!(
            "UPDATE {t} SET c_flist = [8], c_fudt = {{street: 'F2'}}, c_tuple = (2, null, null) {row}"
        ),
        format!("UPDATE {t} SET c_int = null {row}"),
        format!("DELETE st FROM {t} WHERE pk = 2"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck = 3"),
        format!("INSERT INTO {t} (pk, ck, c_list) VALUES (1, 5, [42])"),
        format!("DELETE c_udt FROM {t} WHERE pk = 1 AND ck = 2"),
        format!("DELETE c_map[2], c_nested[1] FROM {t} {row}"),
        format!("DELETE FROM {t} WHERE pk = 3"),
        format!("DELETE FROM {t} WHERE pk = 1 AND ck = 7 IF EXISTS"),
        // A list change and a delete of the same row in one write: no post-image.
        format!(
            "BEGIN BATCH UPDATE {t} SET c_list = c_list + [1] WHERE pk = 1 AND ck = 4; \
             DELETE FROM {t} WHERE pk = 1 AND ck = 4; APPLY BATCH"
        ),
    ];
    s.extend(mck_range_deletes(ks));
    s.extend([
        format!("DELETE FROM {ks}.no_ck WHERE pk = 'b'"),
        format!("DELETE m[1] FROM {ks}.no_ck WHERE pk = 'a'"),
        format!("DELETE l[1] FROM {ks}.no_ck WHERE pk = 'a'"),
    ]);
    s
}

/// Writes with TTLs (short ones expire on both sides alike) and explicit timestamps (a
/// later statement with an older timestamp loses on both sides).
fn phase_ttls_and_timestamps(ks: &str) -> Vec<String> {
    let t = format!("{ks}.all_types");
    // Future timestamps: a write is logged at its timestamp (`cdc$time`), and the reader has
    // already passed the recent past (a CDC reader never sees writes timestamped there).
    let ts = chrono::Utc::now().timestamp_micros() + 4_000_000;
    vec![
        format!("UPDATE {t} USING TTL 3 SET c_int = 1, c_text = 'short' WHERE pk = 1 AND ck = 8"),
        format!(
            "UPDATE {t} USING TTL 3600 SET c_map = c_map + {{1: 'ttl'}}, c_set = {{'ttl'}}, \
             c_bigint = 5, c_list = c_list + [1] WHERE pk = 1 AND ck = 9"
        ),
        format!("INSERT INTO {t} (pk, ck, c_int) VALUES (1, 10, 1) USING TTL 2"),
        format!("UPDATE {t} USING TTL 3600 SET c_udt.zip = 9 WHERE pk = 1 AND ck = 9"),
        format!(
            "INSERT INTO {t} (pk, ck, c_int, c_text, c_list) VALUES (1, 11, 1, 'new', [1]) \
             USING TIMESTAMP {ts}"
        ),
        format!(
            "UPDATE {t} USING TIMESTAMP {} SET c_text = 'old', c_list = c_list + [2] \
             WHERE pk = 1 AND ck = 11",
            ts - 1_000_000
        ),
        // (No TTL with an explicit timestamp: the source counts a TTL from its wall clock,
        // the replicator from the write's timestamp, which the log gives.)
        format!(
            "UPDATE {t} USING TIMESTAMP {} SET c_int = 2 WHERE pk = 1 AND ck = 11",
            ts + 1
        ),
    ]
}

/// The rows of `all_types` written with a TTL of 2 or 3 seconds.
const SHORT_TTL_ROWS: [&str; 2] = ["Int(1), Int(8)", "Int(1), Int(10)"];

/// The matrix replicated into Cassandra, compared row by row.
async fn replicates_every_change(
    s: &Arc<Session>,
    d: &Arc<Session>,
    source_hosts: &str,
    cassandra: &str,
    ca_file: &Path,
) -> anyhow::Result<()> {
    let ks = unique_keyspace_name();
    create_keyspace(s, &ks, 1).await?;
    create_cassandra_keyspace(d, &ks).await?;
    exec_all(s, &schema(&ks)).await?;
    let mut args = replicator_args(source_hosts, cassandra, &ks, &TABLES.join(","));
    args.extend(["--create-destination-table".into(), "--start=-1m".into()]);
    // Over TLS to Cassandra, its certificate verified against the test CA (the checking
    // session `d` uses the same port in plaintext: the node's TLS is optional).
    args.extend([
        "--destination-tls".into(),
        format!("--destination-tls-ca-file={}", ca_file.display()),
    ]);
    let mut replicator = spawn_replicator(args);
    // Each phase is built when it runs: the explicit timestamps are relative to then.
    type Phase = fn(&str) -> Vec<String>;
    let phases: [(&str, Phase); 3] = [
        ("writes", phase_writes),
        ("deletes", phase_deletes),
        ("ttls and timestamps", phase_ttls_and_timestamps),
    ];
    for (name, phase) in phases {
        exec_all(s, &phase(&ks)).await?;
        for table in TABLES {
            wait_converged(&mut replicator, s, d, &ks, &ks, table, CONVERGE)
                .await
                .map_err(|e| e.context(format!("after phase {name}")))?;
        }
    }
    wait_for("the short TTLs to expire", CONVERGE, || async {
        let snap = snapshot(s, &ks, "all_types").await?;
        Ok(SHORT_TTL_ROWS.iter().all(|k| !snap.contains_key(*k)))
    })
    .await?;
    // The final comparison: every row of every table, 0 differing.
    let mut rows = 0;
    for table in TABLES {
        wait_converged(&mut replicator, s, d, &ks, &ks, table, CONVERGE).await?;
        let (a, b) = (
            snapshot(s, &ks, table).await?,
            snapshot(d, &ks, table).await?,
        );
        assert_eq!(differences(&a, &b), Vec::<String>::new(), "{table}");
        rows += a.len();
    }
    skip_free_note(&format!(
        "{rows} rows of {} tables replicated into Cassandra over TLS and compared: 0 differing",
        TABLES.len()
    ));
    let snap = snapshot(d, &ks, "all_types").await?;
    // Spot checks of what the comparison covers: list order, explicit timestamps, TTLs.
    let list = &snap["Int(1), Int(1)"]["c_list"].value;
    assert_eq!(list, "List([Int(100), Int(20), Int(4)])", "{snap:#?}");
    let ts_row = &snap["Int(1), Int(11)"];
    assert_eq!(ts_row["c_text"].value, "Text(\"new\")", "{ts_row:#?}");
    assert_eq!(ts_row["c_list"].value, "List([Int(1)])", "{ts_row:#?}");
    let long = snap["Int(1), Int(9)"]["c_bigint"].ttl.unwrap_or(0);
    assert!(long > 3500, "long TTL kept: {long}");
    for key in SHORT_TTL_ROWS {
        assert!(!snap.contains_key(key), "expired row replicated: {snap:#?}");
    }
    assert_eq!(replicator.stop(Duration::from_secs(20)).await?, Ok(()));
    drop_keyspace(s, &ks).await?;
    drop_keyspace(d, &ks).await?;
    Ok(())
}

/// A table with non-frozen lists and no post-image: the replicator refuses to start, naming
/// exactly those columns and the option.
async fn refuses_lists_without_post_image(
    s: &Arc<Session>,
    d: &Arc<Session>,
    source_hosts: &str,
    cassandra: &str,
) -> anyhow::Result<()> {
    let ks = unique_keyspace_name();
    create_keyspace(s, &ks, 1).await?;
    create_cassandra_keyspace(d, &ks).await?;
    exec(
        s,
        format!(
            "CREATE TABLE {ks}.events (pk int, ck int, tags list<text>, s_list list<int> static, \
             f frozen<list<int>>, st set<int>, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'preimage': true}}"
        ),
    )
    .await?;
    let mut args = replicator_args(source_hosts, cassandra, &ks, "events");
    args.push("--create-destination-table".into());
    let replicator = spawn_replicator(args);
    let err = replicator
        .join(Duration::from_secs(60))
        .await?
        .expect_err("the replicator started on lists it cannot replicate");
    let message = err.to_string();
    assert_eq!(err.exit_code(), exit_code::SCHEMA, "{message}");
    // Exactly the non-frozen lists (not the frozen list `f` nor the set `st`).
    assert!(
        message.contains("list column(s) s_list, tags of") && message.contains("'postimage': true"),
        "{message}"
    );
    skip_free_note(&format!("start-up refusal: {message}"));
    // Nothing was created on the destination.
    let tables = d
        .query_unpaged(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
            (&ks,),
        )
        .await?
        .into_rows_result()?
        .rows_num();
    assert_eq!(tables, 0);
    drop_keyspace(s, &ks).await?;
    drop_keyspace(d, &ks).await?;
    Ok(())
}

/// `CREATE KEYSPACE` as Cassandra takes it (no `tablets` option).
async fn create_cassandra_keyspace(d: &Session, ks: &str) -> anyhow::Result<()> {
    exec(
        d,
        format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', \
             'replication_factor': 1}}"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicates_into_cassandra_or_refuses_at_start() -> anyhow::Result<()> {
    setup_tracing();
    // One node for both cases: starting Cassandra dominates the test's time.
    let Some(mut node) = start_cassandra()? else {
        return Ok(());
    };
    let source = cluster(1).await?;
    let s = source.session().await?;
    let d = Arc::new(
        SessionBuilder::new()
            .known_node(&node.contact_point)
            .build()
            .await
            .context("connecting to Cassandra")?,
    );
    let source_hosts = hosts(&source);
    refuses_lists_without_post_image(&s, &d, &source_hosts, &node.contact_point).await?;
    refuses_an_unknown_ca(&s, &source_hosts, &node.contact_point).await?;
    replicates_every_change(&s, &d, &source_hosts, &node.contact_point, &node.ca_file).await?;
    source.shutdown().await;
    node.stop()
}

/// TLS to Cassandra with a CA that did not sign the node's certificate: the replicator does
/// not start (one line, exit code 3, "cannot connect").
async fn refuses_an_unknown_ca(
    s: &Arc<Session>,
    source_hosts: &str,
    cassandra: &str,
) -> anyhow::Result<()> {
    let ks = unique_keyspace_name();
    create_keyspace(s, &ks, 1).await?;
    exec(
        s,
        format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await?;
    let other = TestCa::new("some other CA")?;
    let dir = TempDir::new();
    let mut args = replicator_args(source_hosts, cassandra, &ks, "t");
    args.push(format!(
        "--destination-tls-ca-file={}",
        dir.write("other-ca.pem", other.cert_pem())
    ));
    let err = spawn_replicator(args)
        .join(Duration::from_secs(120))
        .await?
        .expect_err("the replicator trusted a certificate its CA file does not sign");
    let message = err.to_string();
    assert_eq!(err.exit_code(), exit_code::CONNECT, "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
    skip_free_note(&format!("unknown CA refused: {message}"));
    drop_keyspace(s, &ks).await?;
    Ok(())
}
