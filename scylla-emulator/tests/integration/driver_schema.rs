//! The real `scylla` driver against a cluster: the topology and schema metadata it builds
//! from `system.local`, `system.peers` and `system_schema` (driver contract §2–§3), before
//! and after DDL, including the CDC log table and its partitioner.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set. The topology facts a real cluster does not share with the embedded one
//! (node count, addresses, shards, vnodes) are then read from each node's `system.local`.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use scylla::client::session::Session;
use scylla::cluster::Node;
use scylla::cluster::metadata::{CollectionType, ColumnKind, ColumnType, NativeType, Strategy};
use scylla::routing::partitioner::PartitionerName;
use scylla_cdc_test_utils::{TestCluster, statement_on_node};
use scylla_emulator::EmbeddedCluster;

use crate::support::{cluster_and_keyspace, run, vnode_keyspace};

/// What a node says about itself in `system.local`: host id, rpc address, datacenter, rack
/// and tokens. The query is sent to that node only (`system.local` is node-local).
async fn local_row(
    session: &Session,
    node: &Arc<Node>,
) -> (uuid::Uuid, IpAddr, String, String, Vec<String>) {
    let q = statement_on_node(
        "SELECT host_id, rpc_address, data_center, rack, tokens FROM system.local WHERE key = 'local'",
        node,
    );
    session
        .query_unpaged(q, ())
        .await
        .expect("system.local")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_state_shows_every_node_with_its_tokens_and_shards() {
    let cluster = TestCluster::start(
        EmbeddedCluster::builder()
            .nodes(3)
            .shards_per_node(2)
            .vnodes_per_node(8),
    )
    .await
    .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let state = session.get_cluster_state();
    let nodes = state.get_nodes_info();
    // The driver's view (built from the control connection's system.local and system.peers)
    // matches what every node says about itself.
    let mut tokens = 0;
    for n in nodes {
        let (host_id, rpc_address, dc, rack, own_tokens) = local_row(&session, n).await;
        assert_eq!(host_id, n.host_id, "{n:?}");
        assert_eq!(rpc_address, n.address.ip(), "{n:?}");
        assert_eq!(n.datacenter.as_deref(), Some(dc.as_str()));
        assert_eq!(n.rack.as_deref(), Some(rack.as_str()));
        assert!(!own_tokens.is_empty(), "a token owner: {n:?}");
        tokens += own_tokens.len();
    }
    let host_ids: HashSet<_> = nodes.iter().map(|n| n.host_id).collect();
    assert_eq!(host_ids.len(), nodes.len(), "host ids are unique");
    assert_eq!(state.replica_locator().ring().iter().count(), tokens);
    if let Some(embedded) = cluster.embedded() {
        assert_eq!(nodes.len(), 3);
        let expected: HashSet<_> = embedded.node_addresses().iter().map(|a| a.ip()).collect();
        let got: HashSet<_> = nodes.iter().map(|n| n.address.ip()).collect();
        assert_eq!(got, expected);
        for n in nodes {
            assert_eq!(n.datacenter.as_deref(), Some("datacenter1"));
            assert_eq!(n.rack.as_deref(), Some("rack1"));
        }
        assert_eq!(tokens, 24, "8 vnodes per node");
    }
    // Shard counts are learned from each node's connections.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let sharders: Vec<_> = session
            .get_cluster_state()
            .get_nodes_info()
            .iter()
            .map(|n| n.sharder())
            .collect();
        let expected_shards = cluster.embedded().map(|_| 2);
        if sharders.iter().all(|s| {
            s.as_ref()
                .is_some_and(|s| expected_shards.is_none_or(|n| s.nr_shards.get() == n))
        }) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "sharders not known: {sharders:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_metadata_follows_ddl_including_the_cdc_log() {
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(2))
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    // System keyspaces are visible, system_distributed as SimpleStrategy RF 3.
    let state = session.get_cluster_state();
    let sd = state
        .get_keyspace("system_distributed")
        .expect("system_distributed");
    assert_eq!(
        sd.strategy,
        Strategy::SimpleStrategy {
            replication_factor: 3
        }
    );
    assert!(sd.tables.contains_key("cdc_streams_descriptions_v2"));
    assert!(sd.tables.contains_key("cdc_generation_timestamps"));
    if cluster.embedded().is_some() {
        // Only a cluster upgraded from Scylla 4.3 also has the v1 table (semantics §5.2).
        assert!(!sd.tables.contains_key("cdc_streams_descriptions"));
    }
    assert!(state.get_keyspace("system_schema").is_some());

    let ks = vnode_keyspace(&session).await;
    run(&session, &format!("CREATE TYPE {ks}.ut (a int, b text)")).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck text, v frozen<ut>, l list<int>, \
             PRIMARY KEY (pk, ck)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    session
        .await_schema_agreement()
        .await
        .expect("schema agreement");

    // The new table is visible right after CREATE TABLE (the driver refreshes its metadata
    // after a SchemaChange result).
    let state = session.get_cluster_state();
    let meta = state.get_keyspace(&ks).expect("ks");
    assert!(!meta.tablet_based);
    match &meta.strategy {
        // `'replication_factor': 1` expands to every datacenter of the cluster.
        Strategy::NetworkTopologyStrategy {
            datacenter_repfactors,
        } => {
            let datacenters: HashSet<&str> = state
                .get_nodes_info()
                .iter()
                .filter_map(|n| n.datacenter.as_deref())
                .collect();
            assert!(!datacenters.is_empty());
            for dc in datacenters {
                assert_eq!(datacenter_repfactors.get(dc), Some(&1), "{dc}");
            }
        }
        other => panic!("unexpected strategy {other:?}"),
    }
    assert!(meta.user_defined_types.contains_key("ut"));
    let t = meta.tables.get("t").expect("t");
    assert_eq!(t.partition_key, ["pk"]);
    assert_eq!(t.clustering_key, ["ck"]);
    assert_eq!(t.partitioner, None);
    assert_eq!(
        t.columns.get("pk").map(|c| (&c.typ, &c.kind)),
        Some((
            &ColumnType::Native(NativeType::Int),
            &ColumnKind::PartitionKey
        ))
    );
    assert_eq!(
        t.columns.get("l").map(|c| &c.typ),
        Some(&ColumnType::Collection {
            frozen: false,
            typ: CollectionType::List(Box::new(ColumnType::Native(NativeType::Int))),
        })
    );
    match t.columns.get("v").map(|c| &c.typ) {
        Some(ColumnType::UserDefinedType { frozen, definition }) => {
            assert!(*frozen);
            assert_eq!(definition.name, "ut");
            assert_eq!(definition.field_types.len(), 2);
        }
        other => panic!("unexpected type of v: {other:?}"),
    }

    let log = meta.tables.get("t_scylla_cdc_log").expect("log table");
    assert_eq!(
        log.partitioner.as_deref(),
        Some("com.scylladb.dht.CDCPartitioner")
    );
    assert_eq!(log.partition_key, ["cdc$stream_id"]);
    assert_eq!(log.clustering_key, ["cdc$time", "cdc$batch_seq_no"]);
    assert_eq!(
        log.columns.get("cdc$operation").map(|c| &c.typ),
        Some(&ColumnType::Native(NativeType::TinyInt))
    );
    assert_eq!(
        log.columns.get("pk").map(|c| &c.kind),
        Some(&ColumnKind::Regular)
    );
    assert_eq!(log.columns.len(), 13);

    // Prepared statements on the log use the CDC partitioner.
    let prepared = session
        .prepare(format!(
            "SELECT * FROM {ks}.t_scylla_cdc_log WHERE \"cdc$stream_id\" = ?"
        ))
        .await
        .expect("prepare");
    assert_eq!(prepared.get_partitioner_name(), &PartitionerName::CDC);

    // ALTER reaches the log; DROP removes both.
    run(&session, &format!("ALTER TABLE {ks}.t ADD x int")).await;
    let state = session.get_cluster_state();
    let meta = state.get_keyspace(&ks).expect("ks");
    assert!(
        meta.tables
            .get("t")
            .is_some_and(|t| t.columns.contains_key("x"))
    );
    let log = meta.tables.get("t_scylla_cdc_log").expect("log table");
    assert!(log.columns.contains_key("x"));
    assert!(log.columns.contains_key("cdc$deleted_x"));
    run(&session, &format!("DROP TABLE {ks}.t")).await;
    let state = session.get_cluster_state();
    let meta = state.get_keyspace(&ks).expect("ks");
    assert!(meta.tables.is_empty());
    session
        .await_schema_agreement()
        .await
        .expect("schema agreement");
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// Every type string of `system_schema.columns` and `system_schema.types` parses with the
/// driver's own type parser: a string it cannot parse would make it drop the keyspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_parses_every_column_type() {
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await;
    run(
        &session,
        &format!("CREATE TYPE {ks}.inner (a int, l list<text>)"),
    )
    .await;
    run(
        &session,
        &format!("CREATE TYPE {ks}.outer (i frozen<inner>, t tuple<int, frozen<inner>>)"),
    )
    .await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.all_types (pk frozen<tuple<int, text>>, c1 timeuuid, \
         c2 frozen<outer>, a ascii, b bigint, bl blob, bo boolean, d date, de decimal, \
         do double, du duration, f float, i inet, n int, sm smallint, t text, ti time, \
         ts timestamp, ty tinyint, u uuid, vi varint, l list<frozen<set<int>>>, \
         s set<frozen<tuple<int, text>>>, m map<text, frozen<list<frozen<inner>>>>, \
         fm frozen<map<int, frozen<set<blob>>>>, tu tuple<int, list<int>>, ou outer, \
         PRIMARY KEY (pk, c1, c2)) WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    let state = session.get_cluster_state();
    let meta = state
        .get_keyspace(&ks)
        .expect("the driver kept the keyspace: every type string parsed");
    assert_eq!(meta.user_defined_types.len(), 2);
    let t = meta.tables.get("all_types").expect("table");
    assert_eq!(t.columns.len(), 27);
    assert_eq!(t.clustering_key, ["c1", "c2"]);
    assert_eq!(
        t.columns.get("du").map(|c| &c.typ),
        Some(&ColumnType::Native(NativeType::Duration))
    );
    match t.columns.get("ou").map(|c| &c.typ) {
        Some(ColumnType::UserDefinedType { frozen, definition }) => {
            assert!(!*frozen);
            assert_eq!(definition.name, "outer");
        }
        other => panic!("unexpected type of ou: {other:?}"),
    }
    let log = meta.tables.get("all_types_scylla_cdc_log").expect("log");
    // 6 log columns, 3 key columns, 24 value columns each with cdc$deleted_, and
    // cdc$deleted_elements_ for the 4 non-frozen ones (l, s, m, ou).
    assert_eq!(log.columns.len(), 6 + 3 + 24 * 2 + 4);
    match log.columns.get("l").map(|c| &c.typ) {
        Some(ColumnType::Collection {
            frozen: true,
            typ: CollectionType::Map(k, _),
        }) => assert_eq!(**k, ColumnType::Native(NativeType::Timeuuid)),
        other => panic!("unexpected type of the logged list: {other:?}"),
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}
