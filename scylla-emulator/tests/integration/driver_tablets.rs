//! Tablet-aware routing with the real `scylla` driver (the TABLETS_ROUTING_V1 extension): a
//! prepared statement for a tablet table that reaches a node or shard without a replica of
//! its tablet gets the tablet's range and replicas in the `tablets-routing-v1` custom
//! payload; once the driver has learned a tablet, it sends every request for it to a
//! replica's node and shard. A CDC log shares its base table's tablets, and a split keeps
//! every replica where it was, so the driver's routing stays right.
//!
//! The tests count the requests each node and shard receives and read the embedded cluster's
//! tablet map, so they need the embedded cluster and say they are skipped otherwise.

use std::net::IpAddr;
use std::time::Duration;

use scylla::client::session::Session;
use scylla::routing::Token;
use scylla::statement::prepared::PreparedStatement;
use scylla_cdc_test_utils::{embedded_only, unique_keyspace_name};
use scylla_emulator::{EmbeddedCluster, FaultOpcode};

use crate::support::{run, wait_for_every_shard_connected, wait_until};

const NODES: usize = 3;
const SHARDS: u32 = 3;
const TABLETS: u64 = 8;

/// The tablet of `token` when a table has `TABLETS` tablets (a power of two: Scylla splits
/// the ring into equal ranges).
fn tablet_of(token: i64) -> u64 {
    (token as u64 ^ (1 << 63)) >> (64 - TABLETS.trailing_zeros())
}

/// The token of `pk` (`statement` binds the partition key only).
fn token_of(statement: &PreparedStatement, pk: i64) -> i64 {
    statement
        .calculate_token(&(pk,))
        .expect("token")
        .expect("a partition key")
        .value()
}

/// The (node, shard) the only EXECUTE since the last reset went to.
fn only_execute(cluster: &EmbeddedCluster) -> (usize, u32) {
    let counts = cluster.request_counts_of(FaultOpcode::Execute);
    assert_eq!(counts.values().sum::<u64>(), 1, "{counts:?}");
    *counts.keys().next().expect("one entry")
}

/// The replicas the driver holds for `token` of `ks.t`, as (node index, shard).
fn driver_replicas(
    session: &Session,
    cluster: &EmbeddedCluster,
    ks: &str,
    token: i64,
) -> Vec<(usize, u32)> {
    let addresses: Vec<IpAddr> = cluster.node_addresses().iter().map(|a| a.ip()).collect();
    session
        .get_cluster_state()
        .get_token_endpoints(ks, "t", Token::new(token))
        .iter()
        .map(|(node, shard)| {
            let ip = node.address.ip();
            let index = addresses
                .iter()
                .position(|a| *a == ip)
                .expect("a known node");
            (index + 1, *shard)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_learns_tablets_and_routes_to_their_replicas() {
    if !embedded_only(
        "the_driver_learns_tablets_and_routes_to_their_replicas",
        "counts the requests each node and shard receives",
    ) {
        return;
    }
    for rf in [1, 3] {
        learn_and_route(rf).await;
    }
}

async fn learn_and_route(rf: usize) {
    let cluster = EmbeddedCluster::builder()
        .nodes(NODES)
        .shards_per_node(SHARDS)
        .start()
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = unique_keyspace_name();
    run(
        &session,
        &format!(
            "CREATE KEYSPACE {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': {rf}}} \
             AND tablets = {{'initial': {TABLETS}}}"
        ),
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk bigint PRIMARY KEY, v int)"),
    )
    .await;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, v) VALUES (?, ?)"))
        .await
        .expect("prepare");
    let select = session
        .prepare(format!("SELECT v FROM {ks}.t WHERE pk = ?"))
        .await
        .expect("prepare");
    // Every shard connection open, so that the driver can reach any replica.
    wait_for_every_shard_connected(&cluster, SHARDS).await;
    let cluster_ref = &cluster;

    // One key per tablet.
    let mut keys = vec![None; TABLETS as usize];
    for pk in 0i64.. {
        let tablet = tablet_of(token_of(&select, pk)) as usize;
        keys[tablet].get_or_insert(pk);
        if keys.iter().all(Option::is_some) {
            break;
        }
    }
    let keys: Vec<i64> = keys.into_iter().map(|k| k.expect("a key")).collect();

    // Learning: the driver knows no tablet; a request that misses its tablet's replicas
    // teaches it that tablet. A request the driver happened to send to a replica teaches
    // nothing (none is needed), so the tablet gets another request.
    let mut requests = 0;
    for (tablet, &pk) in keys.iter().enumerate() {
        let token = token_of(&select, pk);
        let replicas = cluster
            .tablet_replicas(&ks, "t", token)
            .expect("a tablet table");
        assert_eq!(replicas.len(), rf);
        assert!(driver_replicas(&session, &cluster, &ks, token).is_empty());
        let mut learned = false;
        for _ in 0..30 {
            requests += 1;
            cluster.reset_request_counts();
            session
                .execute_unpaged(&insert, (pk, tablet as i32))
                .await
                .expect("insert");
            if replicas.contains(&only_execute(&cluster)) {
                continue;
            }
            let (session_ref, ks_ref) = (&session, &ks);
            wait_until(
                Duration::from_secs(5),
                &format!("rf {rf}: the driver learns tablet {tablet} from the response"),
                || async move { !driver_replicas(session_ref, cluster_ref, ks_ref, token).is_empty() },
            )
            .await;
            learned = true;
            break;
        }
        assert!(
            learned,
            "rf {rf}: tablet {tablet} never missed its replicas"
        );
        // What the driver learned is the cluster's tablet map.
        assert_eq!(
            driver_replicas(&session, &cluster, &ks, token),
            replicas,
            "rf {rf}: tablet {tablet}"
        );
    }

    println!("rf {rf}: the driver learned {TABLETS} tablets from {requests} requests");

    // Routing: every prepared statement goes to a replica of its tablet.
    for pk in 0..300i64 {
        let token = token_of(&select, pk);
        let replicas = cluster
            .tablet_replicas(&ks, "t", token)
            .expect("a tablet table");
        cluster.reset_request_counts();
        session
            .execute_unpaged(&insert, (pk, pk as i32))
            .await
            .expect("insert");
        let target = only_execute(&cluster);
        assert!(
            replicas.contains(&target),
            "rf {rf}: pk {pk} went to {target:?}, replicas {replicas:?}"
        );
        cluster.reset_request_counts();
        let (v,): (i32,) = session
            .execute_unpaged(&select, (pk,))
            .await
            .expect("select")
            .into_rows_result()
            .expect("rows")
            .single_row()
            .expect("one row");
        assert_eq!(v, pk as i32);
        let target = only_execute(&cluster);
        assert!(replicas.contains(&target), "rf {rf}: select of pk {pk}");
    }

    // The CDC log is co-located with its table; a split halves every tablet in place.
    run(
        &session,
        &format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': true}}"),
    )
    .await;
    let before: Vec<_> = (0..100i64)
        .map(|pk| {
            let token = token_of(&select, pk);
            let replicas = cluster.tablet_replicas(&ks, "t", token).expect("tablets");
            let log = cluster.tablet_replicas(&ks, "t_scylla_cdc_log", token);
            assert_eq!(log.as_ref(), Some(&replicas), "the log's tablet of pk {pk}");
            replicas
        })
        .collect();
    cluster.split_tablets(&ks, "t").await.expect("split");
    for (pk, replicas) in before.iter().enumerate() {
        let pk = pk as i64;
        let token = token_of(&select, pk);
        assert_eq!(
            cluster.tablet_replicas(&ks, "t", token).as_ref(),
            Some(replicas)
        );
        cluster.reset_request_counts();
        session
            .execute_unpaged(&insert, (pk, 0))
            .await
            .expect("insert");
        let target = only_execute(&cluster);
        assert!(
            replicas.contains(&target),
            "rf {rf}: pk {pk} after the split"
        );
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
