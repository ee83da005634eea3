//! SCHEMA_CHANGE events of statements that change more than their own object, as a
//! connection that REGISTERed for them (raw frames, no driver) and the driver's metadata see
//! them: a table created, altered or dropped with CDC announces its log table too.
//!
//! The tests also run against the real cluster of `SCYLLA_URI`: there the order of the
//! events of one statement is not checked (Scylla 2025.x notifies the tables of one schema
//! change concurrently), only which events each statement sends.

use std::time::Duration;

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla_cdc_test_utils::{TestCluster, unique_keyspace_name};
use scylla_emulator::EmbeddedCluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::run;

const STARTUP: u8 = 0x01;
const READY: u8 = 0x02;
const REGISTER: u8 = 0x0B;
const EVENT: u8 = 0x0C;

/// A `[string]` of the protocol.
fn string(s: &str) -> Vec<u8> {
    let mut b = u16::try_from(s.len())
        .expect("short string")
        .to_be_bytes()
        .to_vec();
    b.extend_from_slice(s.as_bytes());
    b
}

/// Reads a `[string]` from the front of `body`.
fn take_string(body: &mut &[u8]) -> String {
    let (len, rest) = body.split_at(2);
    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
    let (s, rest) = rest.split_at(len);
    *body = rest;
    String::from_utf8(s.to_vec()).expect("UTF-8")
}

/// A raw connection REGISTERed for SCHEMA_CHANGE events.
struct Listener {
    socket: TcpStream,
}

impl Listener {
    async fn register(addr: &str) -> Listener {
        let mut listener = Listener {
            socket: TcpStream::connect(addr).await.expect("connect"),
        };
        let mut startup = 1u16.to_be_bytes().to_vec();
        startup.extend(string("CQL_VERSION"));
        startup.extend(string("3.0.0"));
        listener.send(1, STARTUP, &startup).await;
        assert_eq!(listener.frame().await.0, READY);
        let mut register = 1u16.to_be_bytes().to_vec();
        register.extend(string("SCHEMA_CHANGE"));
        listener.send(2, REGISTER, &register).await;
        assert_eq!(listener.frame().await.0, READY);
        listener
    }

    async fn send(&mut self, stream: i16, opcode: u8, body: &[u8]) {
        let mut frame = vec![0x04, 0];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.push(opcode);
        frame.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(body);
        self.socket.write_all(&frame).await.expect("write");
    }

    /// The next frame's opcode and body (waiting at most 10 s).
    async fn frame(&mut self) -> (u8, Vec<u8>) {
        let mut header = [0u8; 9];
        tokio::time::timeout(Duration::from_secs(10), self.socket.read_exact(&mut header))
            .await
            .expect("a frame within 10 s")
            .expect("read");
        let len = u32::from_be_bytes(header[5..9].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len];
        self.socket.read_exact(&mut body).await.expect("read body");
        (header[4], body)
    }

    /// The next schema change event of keyspace `ks`, as `"CREATED TABLE t"`,
    /// `"DROPPED KEYSPACE"`, ... (events of other keyspaces are skipped).
    async fn event(&mut self, ks: &str) -> String {
        loop {
            let (opcode, body) = self.frame().await;
            assert_eq!(opcode, EVENT, "only events are sent to this connection");
            let mut b = &body[..];
            assert_eq!(take_string(&mut b), "SCHEMA_CHANGE");
            let change = take_string(&mut b);
            let target = take_string(&mut b);
            let keyspace = take_string(&mut b);
            let name = match target.as_str() {
                "KEYSPACE" => String::new(),
                _ => format!(" {}", take_string(&mut b)),
            };
            if keyspace == ks {
                return format!("{change} {target}{name}");
            }
        }
    }

    /// The next `n` events of `ks`; sorted unless `ordered` (see the module docs).
    async fn events(&mut self, ks: &str, n: usize, ordered: bool) -> Vec<String> {
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            events.push(self.event(ks).await);
        }
        if !ordered {
            events.sort();
        }
        events
    }
}

/// Runs `cql` and checks the events it sends to `listener`.
async fn expect_events(
    session: &Session,
    listener: &mut Listener,
    ks: &str,
    ordered: bool,
    cql: &str,
    expected: &[&str],
) {
    run(session, cql).await;
    let mut expected: Vec<String> = expected.iter().map(|e| e.to_string()).collect();
    if !ordered {
        expected.sort();
    }
    assert_eq!(
        listener.events(ks, expected.len(), ordered).await,
        expected,
        "{cql}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdc_log_tables_are_announced_with_their_base() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let ordered = cluster.embedded().is_some();
    let session = cluster.session().await.expect("session");
    let contact_point = cluster.contact_points().swap_remove(0);
    let mut listener = Listener::register(&contact_point).await;
    let ks = unique_keyspace_name();
    let l = &mut listener;
    let s = &*session;
    let k = ks.as_str();
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}} AND tablets = {{'enabled': false}}"
        ),
        &["CREATED KEYSPACE"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
        &["CREATED TABLE t", "CREATED TABLE t_scylla_cdc_log"],
    )
    .await;
    // No event for a CREATE ... IF NOT EXISTS that changes nothing: the next event seen is
    // the ALTER's.
    run(
        s,
        &format!("CREATE TABLE IF NOT EXISTS {ks}.t (pk int PRIMARY KEY, v int)"),
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("ALTER TABLE {ks}.t ADD w text"),
        &["UPDATED TABLE t", "UPDATED TABLE t_scylla_cdc_log"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("ALTER TABLE {ks}.t WITH comment = 'only options'"),
        &["UPDATED TABLE t", "UPDATED TABLE t_scylla_cdc_log"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': false}}"),
        &["UPDATED TABLE t"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': true}}"),
        &["UPDATED TABLE t", "UPDATED TABLE t_scylla_cdc_log"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("DROP TABLE {ks}.t"),
        &["DROPPED TABLE t", "DROPPED TABLE t_scylla_cdc_log"],
    )
    .await;
    run(
        s,
        &format!("CREATE TABLE {ks}.u (pk int PRIMARY KEY, v int)"),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED TABLE u");
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("ALTER TABLE {ks}.u WITH cdc = {{'enabled': true}}"),
        &["CREATED TABLE u_scylla_cdc_log", "UPDATED TABLE u"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("DROP KEYSPACE {ks}"),
        &[
            "DROPPED KEYSPACE",
            "DROPPED TABLE u",
            "DROPPED TABLE u_scylla_cdc_log",
        ],
    )
    .await;
    cluster.shutdown().await;
}

/// Whether the driver's metadata of `ks` has table `table` with column `column`.
fn has_column(session: &Session, ks: &str, table: &str, column: &str) -> bool {
    session
        .get_cluster_state()
        .get_keyspace(ks)
        .and_then(|k| k.tables.get(table))
        .is_some_and(|t| t.columns.contains_key(column))
}

/// Waits (at most 10 s) until `condition` holds for the observing session's metadata.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the driver's metadata never showed: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn driver_metadata_follows_the_log_table_through_events() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    // One session changes the schema; the other one learns of it only through events: the
    // driver re-reads, on its periodic tick (made short here), only the keyspaces that
    // SCHEMA_CHANGE events named since the last one.
    let writer = cluster.session().await.expect("session");
    let observer = SessionBuilder::new()
        .known_nodes(cluster.contact_points())
        .cluster_metadata_refresh_interval(Duration::from_millis(100))
        .build()
        .await
        .expect("session");
    let ks = unique_keyspace_name();
    run(
        &writer,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}} AND tablets = {{'enabled': false}}"
        ),
    )
    .await;
    run(
        &writer,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await;
    until("the log table", || {
        has_column(&observer, &ks, "t_scylla_cdc_log", "v")
    })
    .await;
    run(&writer, &format!("ALTER TABLE {ks}.t ADD w text")).await;
    until("the log table's new column", || {
        has_column(&observer, &ks, "t_scylla_cdc_log", "w")
            && has_column(&observer, &ks, "t_scylla_cdc_log", "cdc$deleted_w")
    })
    .await;
    run(&writer, &format!("DROP TABLE {ks}.t")).await;
    until("the log table dropped", || {
        observer
            .get_cluster_state()
            .get_keyspace(&ks)
            .is_some_and(|k| k.tables.is_empty())
    })
    .await;
    run(&writer, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// CREATE INDEX announces the index's backing view (a table to the protocol) and its base;
/// DROP INDEX and DROP TABLE drop the view first (`notify_tables_and_views`,
/// db/schema_applier.cc: views created before tables altered, dropped before tables).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexes_announce_their_views() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let ordered = cluster.embedded().is_some();
    let session = cluster.session().await.expect("session");
    let contact_point = cluster.contact_points().swap_remove(0);
    let mut listener = Listener::register(&contact_point).await;
    let ks = unique_keyspace_name();
    let (s, l, k) = (&*session, &mut listener, ks.as_str());
    run(
        s,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}} AND tablets = {{'enabled': false}}"
        ),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED KEYSPACE");
    run(
        s,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)"),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED TABLE t");
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("CREATE INDEX vi ON {ks}.t (v)"),
        &["CREATED TABLE vi_index", "UPDATED TABLE t"],
    )
    .await;
    // An IF NOT EXISTS that changes nothing announces nothing: the next event is the DROP's.
    run(s, &format!("CREATE INDEX IF NOT EXISTS vi ON {ks}.t (v)")).await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("DROP INDEX {ks}.vi"),
        &["DROPPED TABLE vi_index", "UPDATED TABLE t"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("CREATE INDEX ON {ks}.t (v)"),
        &["CREATED TABLE t_v_idx_index", "UPDATED TABLE t"],
    )
    .await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("DROP TABLE {ks}.t"),
        &["DROPPED TABLE t_v_idx_index", "DROPPED TABLE t"],
    )
    .await;
    run(
        s,
        &format!("CREATE TABLE {ks}.u (pk int PRIMARY KEY, v int)"),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED TABLE u");
    run(s, &format!("CREATE INDEX ON {ks}.u (v)")).await;
    l.events(k, 2, false).await;
    expect_events(
        s,
        l,
        k,
        ordered,
        &format!("DROP KEYSPACE {ks}"),
        &[
            "DROPPED KEYSPACE",
            "DROPPED TABLE u_v_idx_index",
            "DROPPED TABLE u",
        ],
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn materialized_views_are_announced_as_tables() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let contact_point = cluster.contact_points().swap_remove(0);
    let mut listener = Listener::register(&contact_point).await;
    let ks = unique_keyspace_name();
    let (l, s, k) = (&mut listener, &*session, ks.as_str());
    run(
        s,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1}} AND tablets = {{'enabled': false}}"
        ),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED KEYSPACE");
    run(
        s,
        &format!("CREATE TABLE {ks}.t (pk int, v int, PRIMARY KEY (pk))"),
    )
    .await;
    assert_eq!(l.event(k).await, "CREATED TABLE t");
    // Protocol v4 has no view target: a view is announced as a TABLE.
    let statements: [(String, &[&str]); 4] = [
        (
            format!(
                "CREATE MATERIALIZED VIEW {ks}.mv AS SELECT * FROM {ks}.t WHERE v IS NOT NULL \
                 PRIMARY KEY (v, pk)"
            ),
            &["CREATED TABLE mv"],
        ),
        (
            format!("ALTER MATERIALIZED VIEW {ks}.mv WITH comment = 'x'"),
            &["UPDATED TABLE mv"],
        ),
        // Adding a base column rewrites every view of the base.
        (
            format!("ALTER TABLE {ks}.t ADD w int"),
            &["UPDATED TABLE mv", "UPDATED TABLE t"],
        ),
        (
            format!("DROP MATERIALIZED VIEW {ks}.mv"),
            &["DROPPED TABLE mv"],
        ),
    ];
    for (cql, expected) in statements {
        expect_events(s, l, k, false, &cql, expected).await;
    }
    run(s, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
