//! The real `scylla` driver with frame compression (`SessionBuilder::compression`, lz4 and
//! snappy) against a 3-node cluster: every connection of its pool (regular and shard-aware
//! port) and its control connection negotiate the codec, and the usual workload (DDL,
//! prepared statements, paging, batches, LWT, schema and topology events) runs unchanged.
//! A byte-counting proxy measures what lz4 saves on a paged SELECT.
//!
//! These tests count connections and requests per node and shard, add nodes, or proxy one
//! node, so they need the embedded cluster and say they are skipped when `SCYLLA_URI` is set.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use scylla::client::Compression;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla_cdc_test_utils::{embedded_only, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultOpcode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{new_keyspace, run, wait_until};

fn codec_name(codec: Compression) -> &'static str {
    match codec {
        Compression::Lz4 => "lz4",
        Compression::Snappy => "snappy",
    }
}

/// A session on every node of `cluster` with `codec`, re-reading keyspaces marked by schema
/// events every 100 ms.
async fn session_with(cluster: &EmbeddedCluster, codec: Option<Compression>) -> Session {
    SessionBuilder::new()
        .known_nodes_addr(cluster.node_addresses())
        .compression(codec)
        .cluster_metadata_refresh_interval(Duration::from_millis(100))
        .build()
        .await
        .expect("session")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workload_runs_compressed_on_every_connection() {
    if !embedded_only(
        "the_workload_runs_compressed_on_every_connection",
        "counts connections per node and shard and adds a node",
    ) {
        return;
    }
    for codec in [Compression::Lz4, Compression::Snappy] {
        workload(codec).await;
    }
}

async fn workload(codec: Compression) {
    let name = codec_name(codec);
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .shards_per_node(2)
        .generation_delay(Duration::from_secs(1))
        .start()
        .await
        .expect("cluster starts");
    let session = session_with(&cluster, Some(codec)).await;
    let cluster_ref = &cluster;
    // One pool connection per shard (shard 0 or 1 through the regular port, the other one
    // through the shard-aware port), plus the control connection on one node: all of them
    // compressed with the codec, none with the other one.
    wait_until(
        Duration::from_secs(10),
        "every shard of every node has a compressed connection",
        || async move {
            let open = cluster_ref.connection_counts();
            let compressed = cluster_ref.compressed_connection_counts(name);
            (1..=3).all(|n| (0..2).all(|s| open.contains_key(&(n, s))))
                && open.values().sum::<usize>() == 7
                && compressed == open
        },
    )
    .await;
    let other = if name == "lz4" { "snappy" } else { "lz4" };
    assert!(cluster.compressed_connection_counts(other).is_empty());

    // A second compressed session watches schema events.
    let observer = session_with(&cluster, Some(codec)).await;

    // DDL.
    let ks = new_keyspace(
    &session,
    "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3} AND tablets = {'enabled': false}",
    ).await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))"),
    )
    .await;
    let (observer_ref, ks_ref) = (&observer, &ks);
    wait_until(
        Duration::from_secs(10),
        "the observer sees the table (SCHEMA_CHANGE event)",
        || async move {
            observer_ref
                .get_cluster_state()
                .get_keyspace(ks_ref)
                .is_some_and(|k| k.tables.contains_key("t"))
        },
    )
    .await;

    // Prepared statements, on every node and shard.
    cluster.reset_request_counts();
    let insert: PreparedStatement = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, ?, ?)"))
        .await
        .expect("prepare");
    for i in 0..1500i32 {
        session
            .execute_unpaged(&insert, (i % 150, i / 150, format!("value {i} of {name}")))
            .await
            .expect("insert");
    }
    let executes = cluster.request_counts_of(FaultOpcode::Execute);
    for n in 1..=3 {
        for s in 0..2 {
            assert!(
                executes.get(&(n, s)).is_some_and(|c| *c > 0),
                "{name}: no EXECUTE on node {n} shard {s}: {executes:?}"
            );
        }
    }

    // Paging: 1500 rows in pages of 100.
    let mut select = session
        .prepare(format!("SELECT pk, ck, v FROM {ks}.t"))
        .await
        .expect("prepare");
    select.set_page_size(100);
    let mut rows: Vec<(i32, i32, String)> = session
        .execute_iter(select, ())
        .await
        .expect("select")
        .rows_stream::<(i32, i32, String)>()
        .expect("typed rows")
        .try_collect()
        .await
        .expect("every page");
    rows.sort();
    assert_eq!(rows.len(), 1500, "{name}");
    assert_eq!(rows[0], (0, 0, format!("value 0 of {name}")));
    assert_eq!(rows[1499], (149, 9, format!("value 1499 of {name}")));

    // A batch of a literal statement and a prepared one, then an LWT.
    let mut batch = Batch::new(BatchType::Logged);
    batch
        .append_statement(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1000, 1, 'a')").as_str());
    batch.append_statement(insert.clone());
    session
        .batch(&batch, ((), (1000, 2, "b")))
        .await
        .expect("batch");
    let (count,): (i64,) = session
        .query_unpaged(format!("SELECT count(*) FROM {ks}.t WHERE pk = 1000"), ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(count, 2);
    // Scylla returns the condition's columns with `[applied]`, applied or not.
    let (applied, previous): (bool, Option<String>) = session
        .query_unpaged(
            format!("UPDATE {ks}.t SET v = 'c' WHERE pk = 1000 AND ck = 1 IF v = 'a'"),
            (),
        )
        .await
        .expect("lwt")
        .into_rows_result()
        .expect("rows")
        .first_row::<(bool, Option<String>)>()
        .expect("a row");
    assert!(applied);
    assert_eq!(previous.as_deref(), Some("a"));

    // TOPOLOGY_CHANGE: both sessions see a new node without being asked to refresh.
    cluster.add_node().await.expect("add a node");
    let session_ref = &session;
    wait_until(
        Duration::from_secs(10),
        "the sessions see 4 nodes (TOPOLOGY_CHANGE event)",
        || async move {
            session_ref.get_cluster_state().get_nodes_info().len() == 4
                && observer_ref.get_cluster_state().get_nodes_info().len() == 4
        },
    )
    .await;
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    drop((session, observer));
    cluster.shutdown().await;
}

/// Bytes a proxy forwarded, per direction.
#[derive(Debug, Default)]
struct Traffic {
    to_server: AtomicU64,
    to_client: AtomicU64,
}

/// Copies `from` to `to`, counting bytes into `counter`, until either side closes.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    counter: Arc<Traffic>,
    upstream: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let c = if upstream {
            &counter.to_server
        } else {
            &counter.to_client
        };
        c.fetch_add(n as u64, Ordering::Relaxed);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// A TCP proxy to `target` on `bind` that counts the bytes it forwards.
async fn counting_proxy(bind: SocketAddr, target: SocketAddr) -> (SocketAddr, Arc<Traffic>) {
    let listener = TcpListener::bind(bind).await.expect("proxy binds");
    let addr = listener.local_addr().expect("proxy address");
    let traffic = Arc::new(Traffic::default());
    let counter = traffic.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(target).await else {
                continue;
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pump(cr, sw, counter.clone(), true));
            tokio::spawn(pump(sr, cw, counter.clone(), false));
        }
    });
    (addr, traffic)
}

/// A paged SELECT of 20,000 rows through a byte-counting proxy, with and without lz4 (and
/// snappy): the compressed runs move a fraction of the bytes. Run with `--nocapture` to see
/// the numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lz4_shrinks_a_paged_select() {
    if !embedded_only("lz4_shrinks_a_paged_select", "proxies one embedded node") {
        return;
    }
    // One node and one shard: the driver keeps a single pool connection, and the proxy
    // (reached through an address translator) sees all of its traffic.
    let cluster = EmbeddedCluster::builder()
        .nodes(1)
        .shards_per_node(1)
        .start()
        .await
        .expect("cluster starts");
    let node = cluster.contact_point();
    let SocketAddr::V4(v4) = node else {
        panic!("IPv4 loopback expected")
    };
    let [a, b, c, _] = v4.ip().octets();
    // The proxy listens on an unused address of the cluster's range, on the node's port:
    // the driver combines the node's rpc_address with the contact point's port, which
    // then is the node's own address, translated to the proxy.
    let proxy_ip = std::net::Ipv4Addr::new(a, b, c, 250);
    let (proxy, traffic) = counting_proxy(SocketAddr::from((proxy_ip, node.port())), node).await;

    let setup = cluster.session().await.expect("session");
    let ks = unique_keyspace_name();
    run(
        &setup,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ),
    )
    .await;
    run(
        &setup,
        &format!(
            "CREATE TABLE {ks}.events (pk int, ck int, kind text, payload text, \
             PRIMARY KEY (pk, ck))"
        ),
    )
    .await;
    let insert = setup
        .prepare(format!(
            "INSERT INTO {ks}.events (pk, ck, kind, payload) VALUES (?, ?, ?, ?)"
        ))
        .await
        .expect("prepare");
    const ROWS: i32 = 20_000;
    for i in 0..ROWS {
        let kind = ["created", "updated", "deleted"][(i % 3) as usize];
        let payload = format!(
            "{{\"user\": \"user-{}\", \"item\": {}, \"status\": \"ok\"}}",
            i % 500,
            i
        );
        setup
            .execute_unpaged(&insert, (i / 100, i % 100, kind, payload))
            .await
            .expect("insert");
    }

    let translator: HashMap<SocketAddr, SocketAddr> = HashMap::from([(node, proxy)]);
    let translator = Arc::new(translator);
    let mut results: BTreeMap<&str, (u64, u64, Duration)> = BTreeMap::new();
    for codec in [None, Some(Compression::Lz4), Some(Compression::Snappy)] {
        let label = codec.map_or("none", codec_name);
        let session = SessionBuilder::new()
            .known_node_addr(proxy)
            .address_translator(translator.clone())
            .compression(codec)
            .build()
            .await
            .expect("session through the proxy");
        let mut select = session
            .prepare(format!("SELECT pk, ck, kind, payload FROM {ks}.events"))
            .await
            .expect("prepare");
        select.set_page_size(1000);
        let before = (
            traffic.to_client.load(Ordering::Relaxed),
            traffic.to_server.load(Ordering::Relaxed),
        );
        let start = Instant::now();
        let n = session
            .execute_iter(select, ())
            .await
            .expect("select")
            .rows_stream::<(i32, i32, String, String)>()
            .expect("typed rows")
            .try_fold(0usize, |n, _| async move { Ok(n + 1) })
            .await
            .expect("every page");
        let elapsed = start.elapsed();
        assert_eq!(n, ROWS as usize, "{label}");
        let down = traffic.to_client.load(Ordering::Relaxed) - before.0;
        let up = traffic.to_server.load(Ordering::Relaxed) - before.1;
        results.insert(label, (down, up, elapsed));
        drop(session);
    }
    let (plain, _, plain_time) = results["none"];
    for (label, (down, up, elapsed)) in &results {
        println!(
            "paged SELECT of {ROWS} rows, compression {label}: {down} bytes to the client \
             ({:.3} of uncompressed), {up} bytes to the server, {elapsed:?} \
             ({:.2}x the uncompressed time)",
            *down as f64 / plain as f64,
            elapsed.as_secs_f64() / plain_time.as_secs_f64()
        );
    }
    for label in ["lz4", "snappy"] {
        let (down, _, _) = results[label];
        assert!(
            down * 2 < plain,
            "{label} should at least halve the bytes of this data: {down} vs {plain}"
        );
    }
    run(&setup, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
