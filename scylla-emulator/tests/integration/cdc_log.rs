//! The CDC log table through the `scylla` driver: its schema as the driver sees it (result
//! metadata, cluster metadata, `system_schema` rows and the `cdc` extension blob), the log
//! cells' write time and TTL, stream ids mapping every write to its vnode and shard on a
//! multi-node, multi-shard cluster (and the driver routing log reads to the stream's owner),
//! write-timestamp admission, and the single-node QUORUM trap on `system_distributed`.
//!
//! The tests run against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set: the generation, ring and shard facts are then read from the cluster (its
//! current generation, the driver's token ring and sharders) instead of being those of the
//! embedded configuration. Checks that count requests per shard, or need a cluster of a size
//! the real one does not have, say that they are skipped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::cluster::Node;
use scylla::cluster::metadata::{CollectionType, ColumnKind, ColumnType, NativeType};
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::routing::partitioner::{Murmur3Partitioner, Partitioner};
use scylla::routing::{Sharder, Token};
use scylla::statement::{Consistency, Statement};
use scylla::value::CqlTimeuuid;
use scylla_cdc_test_utils::{TestCluster, embedded_only, setup_tracing, skip};
use scylla_emulator::EmbeddedCluster;

use crate::support::{cluster_and_keyspace, run, vnode_keyspace, wait_for_every_shard_connected};

/// A statement the driver sends once, to any node, and reports failures of as they are.
fn no_retry(cql: impl Into<String>) -> Statement {
    let mut s = Statement::new(cql.into());
    let profile = ExecutionProfile::builder()
        .retry_policy(Arc::new(FallthroughRetryPolicy))
        .build();
    s.set_execution_profile_handle(Some(profile.into_handle()));
    s
}

/// The server error of a failed request.
fn db_error(e: ExecutionError) -> (DbError, String) {
    match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(e, msg)) => (e, msg),
        other => panic!("expected a server error, got {other}"),
    }
}

/// A CQL type as `system_schema.columns` writes it.
fn type_name(t: &ColumnType<'_>) -> String {
    let frozen = |frozen: bool, inner: String| {
        if frozen {
            format!("frozen<{inner}>")
        } else {
            inner
        }
    };
    match t {
        ColumnType::Native(n) => match n {
            NativeType::Blob => "blob",
            NativeType::Boolean => "boolean",
            NativeType::TinyInt => "tinyint",
            NativeType::SmallInt => "smallint",
            NativeType::Int => "int",
            NativeType::BigInt => "bigint",
            NativeType::Text => "text",
            NativeType::Timeuuid => "timeuuid",
            other => panic!("no {other:?} column in these tests"),
        }
        .to_string(),
        ColumnType::Collection { frozen: f, typ } => frozen(
            *f,
            match typ {
                CollectionType::List(e) => format!("list<{}>", type_name(e)),
                CollectionType::Set(e) => format!("set<{}>", type_name(e)),
                CollectionType::Map(k, v) => format!("map<{}, {}>", type_name(k), type_name(v)),
                other => panic!("unexpected collection {other:?}"),
            },
        ),
        ColumnType::UserDefinedType {
            frozen: f,
            definition,
        } => frozen(*f, definition.name.to_string()),
        other => panic!("no {other:?} column in these tests"),
    }
}

/// Decodes the `cdc` schema extension: a little-endian u32 count, then per entry a u32 LE
/// length and the key, a u32 LE length and the value.
fn decode_cdc_extension(blob: &[u8]) -> BTreeMap<String, String> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> &'a [u8] {
        assert!(b.len() >= n, "truncated extension blob");
        let (head, tail) = b.split_at(n);
        *b = tail;
        head
    }
    fn u32_le(b: &mut &[u8]) -> usize {
        u32::from_le_bytes(take(b, 4).try_into().expect("4 bytes")) as usize
    }
    let mut b = blob;
    let count = u32_le(&mut b);
    let mut out = BTreeMap::new();
    let mut keys = Vec::new();
    for _ in 0..count {
        let n = u32_le(&mut b);
        let key = String::from_utf8(take(&mut b, n).to_vec()).expect("utf-8 key");
        let n = u32_le(&mut b);
        let value = String::from_utf8(take(&mut b, n).to_vec()).expect("utf-8 value");
        keys.push(key.clone());
        out.insert(key, value);
    }
    assert!(b.is_empty(), "trailing bytes in the extension blob");
    assert!(keys.is_sorted(), "keys in sorted order: {keys:?}");
    out
}

/// The `cdc` extension of a table in `system_schema.tables`.
async fn cdc_extension(
    session: &Session,
    ks: &str,
    table: &str,
) -> Option<BTreeMap<String, String>> {
    let (ext,): (Option<HashMap<String, Vec<u8>>>,) = session
        .query_unpaged(
            "SELECT extensions FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
            (ks, table),
        )
        .await
        .expect("system_schema.tables")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    ext.and_then(|e| e.get("cdc").map(|b| decode_cdc_extension(b)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_table_schema_and_extensions_as_the_driver_sees_them() {
    setup_tracing();
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await;
    run(
        &session,
        &format!("CREATE TYPE {ks}.ut (a int, b int, c int)"),
    )
    .await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck int, s int static, v int, m map<int, text>, \
             l list<text>, st set<int>, u frozen<ut>, nu ut, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    // Semantics §1.2: keys, then regular columns sorted by name as bytes.
    let expected: &[(&str, &str, &str, i32)] = &[
        ("cdc$stream_id", "blob", "partition_key", 0),
        ("cdc$time", "timeuuid", "clustering", 0),
        ("cdc$batch_seq_no", "int", "clustering", 1),
        (
            "cdc$deleted_elements_l",
            "frozen<set<timeuuid>>",
            "regular",
            -1,
        ),
        ("cdc$deleted_elements_m", "frozen<set<int>>", "regular", -1),
        (
            "cdc$deleted_elements_nu",
            "frozen<set<smallint>>",
            "regular",
            -1,
        ),
        ("cdc$deleted_elements_st", "frozen<set<int>>", "regular", -1),
        ("cdc$deleted_l", "boolean", "regular", -1),
        ("cdc$deleted_m", "boolean", "regular", -1),
        ("cdc$deleted_nu", "boolean", "regular", -1),
        ("cdc$deleted_s", "boolean", "regular", -1),
        ("cdc$deleted_st", "boolean", "regular", -1),
        ("cdc$deleted_u", "boolean", "regular", -1),
        ("cdc$deleted_v", "boolean", "regular", -1),
        ("cdc$end_of_batch", "boolean", "regular", -1),
        ("cdc$operation", "tinyint", "regular", -1),
        ("cdc$ttl", "bigint", "regular", -1),
        ("ck", "int", "regular", -1),
        ("l", "frozen<map<timeuuid, text>>", "regular", -1),
        ("m", "frozen<map<int, text>>", "regular", -1),
        ("nu", "frozen<ut>", "regular", -1),
        ("pk", "int", "regular", -1),
        ("s", "int", "regular", -1),
        ("st", "frozen<set<int>>", "regular", -1),
        ("u", "frozen<ut>", "regular", -1),
        ("v", "int", "regular", -1),
    ];

    // SELECT * result metadata: names and types in this order (the protocol carries no
    // frozenness).
    let result = session
        .query_unpaged(format!("SELECT * FROM {ks}.t_scylla_cdc_log"), ())
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows");
    let got: Vec<(String, String)> = result
        .column_specs()
        .iter()
        .map(|c| (c.name().to_string(), type_name(c.typ())))
        .collect();
    let want: Vec<(String, String)> = expected
        .iter()
        .map(|(n, t, _, _)| (n.to_string(), unfrozen(t)))
        .collect();
    assert_eq!(got, want);

    // system_schema.columns: kinds, positions, clustering order, type strings.
    let rows: Vec<(String, String, i32, String, String)> = session
        .query_unpaged(
            "SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns \
             WHERE keyspace_name = ? AND table_name = ?",
            (&ks, "t_scylla_cdc_log"),
        )
        .await
        .expect("system_schema.columns")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("typed rows")
        .collect::<Result<_, _>>()
        .expect("decode");
    let by_name: HashMap<&str, &(String, String, i32, String, String)> =
        rows.iter().map(|r| (r.0.as_str(), r)).collect();
    assert_eq!(rows.len(), expected.len());
    for (name, typ, kind, position) in expected {
        let row = by_name
            .get(name)
            .unwrap_or_else(|| panic!("no column {name}"));
        assert_eq!(
            (row.1.as_str(), row.2, row.4.as_str()),
            (*kind, *position, *typ),
            "{name}"
        );
        // Scylla writes the clustering order upper-case (scylladb/scylladb#8477).
        let order = if *kind == "clustering" { "ASC" } else { "NONE" };
        assert_eq!(row.3, order, "clustering order of {name}");
    }

    // The driver's cluster metadata.
    let state = session.get_cluster_state();
    let meta = state.get_keyspace(&ks).expect("keyspace metadata");
    let log = meta.tables.get("t_scylla_cdc_log").expect("log metadata");
    assert_eq!(log.partition_key, ["cdc$stream_id"]);
    assert_eq!(log.clustering_key, ["cdc$time", "cdc$batch_seq_no"]);
    assert_eq!(
        log.partitioner.as_deref(),
        Some("com.scylladb.dht.CDCPartitioner")
    );
    assert_eq!(log.columns.len(), expected.len());
    for (name, typ, kind, _) in expected {
        let c = log
            .columns
            .get(*name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(type_name(&c.typ), *typ, "{name}");
        let k = match c.kind {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Regular => "regular",
            ColumnKind::Static => "static",
            _ => "other",
        };
        assert_eq!(k, *kind, "{name}");
    }
    assert_eq!(
        meta.tables.get("t").and_then(|t| t.partitioner.clone()),
        None
    );

    // system_schema.scylla_tables: the CDC partitioner for the log only.
    let partitioner = |table: &'static str| {
        let session = session.clone();
        let ks = ks.clone();
        async move {
            let rows: Vec<(Option<String>,)> = session
                .query_unpaged(
                    "SELECT partitioner FROM system_schema.scylla_tables \
                     WHERE keyspace_name = ? AND table_name = ?",
                    (&ks, table),
                )
                .await
                .expect("scylla_tables")
                .into_rows_result()
                .expect("rows")
                .rows()
                .expect("typed")
                .collect::<Result<_, _>>()
                .expect("decode");
            rows.into_iter().next().and_then(|r| r.0)
        }
    };
    assert_eq!(
        partitioner("t_scylla_cdc_log").await.as_deref(),
        Some("com.scylladb.dht.CDCPartitioner")
    );
    assert_eq!(partitioner("t").await, None);

    // Log table properties (§1.3).
    let (comment, gc, ttl, caching, compaction): (
        String,
        i32,
        i32,
        BTreeMap<String, String>,
        BTreeMap<String, String>,
    ) = session
        .query_unpaged(
            "SELECT comment, gc_grace_seconds, default_time_to_live, caching, compaction \
             FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
            (&ks, "t_scylla_cdc_log"),
        )
        .await
        .expect("system_schema.tables")
        .into_rows_result()
        .expect("rows")
        .single_row()
        .expect("one row");
    assert_eq!(comment, format!("CDC log for {ks}.t"));
    assert_eq!((gc, ttl), (0, 0));
    assert_eq!(caching.get("keys").map(String::as_str), Some("NONE"));
    assert_eq!(
        caching.get("rows_per_partition").map(String::as_str),
        Some("NONE")
    );
    assert_eq!(
        compaction.get("class").map(String::as_str),
        Some("TimeWindowCompactionStrategy")
    );
    assert_eq!(
        compaction.get("compaction_window_unit").map(String::as_str),
        Some("MINUTES")
    );
    assert_eq!(
        compaction.get("compaction_window_size").map(String::as_str),
        Some("60")
    );

    // The `cdc` extension: all five options, on the base table only.
    let all = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(
        cdc_extension(&session, &ks, "t").await,
        Some(all(&[
            ("delta", "full"),
            ("enabled", "true"),
            ("postimage", "false"),
            ("preimage", "false"),
            ("ttl", "86400"),
        ]))
    );
    assert_eq!(cdc_extension(&session, &ks, "t_scylla_cdc_log").await, None);
    run(
        &session,
        &format!(
            "ALTER TABLE {ks}.t WITH cdc = {{'enabled': true, 'preimage': 'full', \
             'postimage': true, 'delta': 'keys', 'ttl': 600}}"
        ),
    )
    .await;
    assert_eq!(
        cdc_extension(&session, &ks, "t").await,
        Some(all(&[
            ("delta", "keys"),
            ("enabled", "true"),
            ("postimage", "true"),
            ("preimage", "full"),
            ("ttl", "600"),
        ]))
    );
    // Disabling keeps the extension (and the log), with enabled false and defaults elsewhere.
    run(
        &session,
        &format!("ALTER TABLE {ks}.t WITH cdc = {{'enabled': false}}"),
    )
    .await;
    assert_eq!(
        cdc_extension(&session, &ks, "t").await,
        Some(all(&[
            ("delta", "full"),
            ("enabled", "false"),
            ("postimage", "false"),
            ("preimage", "false"),
            ("ttl", "86400"),
        ]))
    );
    // A table that never had the option has no extension.
    run(
        &session,
        &format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY)"),
    )
    .await;
    assert_eq!(cdc_extension(&session, &ks, "plain").await, None);
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// A type string without its `frozen<...>` wrappers (`frozen<map<int, frozen<ut>>>` →
/// `map<int, ut>`), as result metadata shows types.
fn unfrozen(t: &str) -> String {
    let mut out = String::new();
    // For each open `<`, whether it opened a `frozen<` (whose `>` is dropped).
    let mut opened: Vec<bool> = Vec::new();
    let mut rest = t;
    while let Some(c) = rest.chars().next() {
        if let Some(r) = rest.strip_prefix("frozen<") {
            opened.push(true);
            rest = r;
            continue;
        }
        match c {
            '<' => opened.push(false),
            '>' if opened.pop() == Some(true) => {
                rest = &rest[1..];
                continue;
            }
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[test]
fn frozen_wrappers_are_removed() {
    assert_eq!(unfrozen("frozen<map<int, frozen<ut>>>"), "map<int, ut>");
    assert_eq!(unfrozen("frozen<set<int>>"), "set<int>");
    assert_eq!(unfrozen("int"), "int");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_cells_carry_the_write_timestamp_and_the_cdc_ttl() {
    setup_tracing();
    let (cluster, session, ks) = cluster_and_keyspace(EmbeddedCluster::builder()).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, m map<int, int>, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'ttl': 3600}}"
        ),
    )
    .await;
    let ts = chrono::Utc::now().timestamp_micros();
    run(
        &session,
        &format!("UPDATE {ks}.t USING TIMESTAMP {ts} SET v = 1 WHERE pk = 0 AND ck = 0"),
    )
    .await;
    // A column delete of a collection is logged at ts + 1 (semantics §2.5).
    run(
        &session,
        &format!(
            "DELETE m FROM {ks}.t USING TIMESTAMP {} WHERE pk = 0 AND ck = 1",
            ts + 10
        ),
    )
    .await;
    let rows: Vec<(CqlTimeuuid, i64, Option<i32>, i32)> = session
        .query_unpaged(
            format!(
                "SELECT \"cdc$time\", writetime(\"cdc$operation\"), ttl(\"cdc$operation\"), ck \
                 FROM {ks}.t_scylla_cdc_log"
            ),
            (),
        )
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .rows()
        .expect("typed")
        .collect::<Result<_, _>>()
        .expect("decode");
    assert_eq!(rows.len(), 2);
    for (time, writetime, ttl, ck) in rows {
        let micros = timeuuid_micros(&time);
        let expected = if ck == 0 { ts } else { ts + 11 };
        assert_eq!((micros, writetime), (expected, expected), "ck {ck}");
        assert!(
            ttl.is_some_and(|t| (3590..=3600).contains(&t)),
            "remaining cdc ttl {ttl:?}"
        );
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// µs since the epoch of a timeuuid (`cdc$time`).
fn timeuuid_micros(u: &CqlTimeuuid) -> i64 {
    let uuid: &uuid::Uuid = u.as_ref();
    let raw = uuid
        .get_timestamp()
        .expect("a version-1 uuid")
        .to_gregorian()
        .0;
    (raw as i64 - 0x01B2_1DD2_1381_4000) / 10
}

/// The consistency of reads of `system_distributed`: QUORUM when the cluster has more than
/// one node, else ONE — what Scylla and the CDC libraries do (semantics §6.3).
fn quorum_if_many(session: &Session) -> Consistency {
    if session.get_cluster_state().get_nodes_info().len() > 1 {
        Consistency::Quorum
    } else {
        Consistency::One
    }
}

/// Every generation timestamp, newest first.
async fn generation_times(
    session: &Session,
    consistency: Consistency,
) -> Vec<chrono::DateTime<chrono::Utc>> {
    let mut q = Statement::new(
        "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
    );
    q.set_consistency(consistency);
    session
        .query_unpaged(q, ())
        .await
        .expect("generation timestamps")
        .into_rows_result()
        .expect("rows")
        .rows::<(chrono::DateTime<chrono::Utc>,)>()
        .expect("typed")
        .map(|r| r.map(|(t,)| t))
        .collect::<Result<_, _>>()
        .expect("decode")
}

/// The generation operating now: the newest one whose timestamp has passed.
async fn current_generation_time(
    session: &Session,
    consistency: Consistency,
) -> chrono::DateTime<chrono::Utc> {
    let now = chrono::Utc::now();
    generation_times(session, consistency)
        .await
        .into_iter()
        .find(|t| *t <= now)
        .expect("a generation operating now")
}

/// A generation's `cdc_streams_descriptions_v2` rows: `(range_end, streams)` by range end.
async fn descriptions(
    session: &Session,
    consistency: Consistency,
    time: chrono::DateTime<chrono::Utc>,
) -> Vec<(i64, Vec<Vec<u8>>)> {
    let mut q = Statement::new(
        "SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2 \
         WHERE time = ?",
    );
    q.set_consistency(consistency);
    q.set_page_size(7);
    session
        .query_iter(q, (time,))
        .await
        .expect("descriptions")
        .rows_stream()
        .expect("typed")
        .try_collect()
        .await
        .expect("decode")
}

/// The token of an `int` partition key.
fn token_of(pk: i32) -> i64 {
    Murmur3Partitioner.hash_one(&pk.to_be_bytes()).value()
}

/// The token of a stream id (its first 8 bytes, big-endian).
fn stream_token(stream: &[u8]) -> i64 {
    i64::from_be_bytes(stream[..8].try_into().expect("16-byte stream id"))
}

/// The vnode index of a stream id (bits 4..25 of its low 8 bytes).
fn stream_vnode_index(stream: &[u8]) -> u64 {
    let low = u64::from_be_bytes(stream[8..16].try_into().expect("16-byte stream id"));
    assert_eq!(low & 0xf, 1, "stream id version 1");
    (low >> 4) & 0x3f_ffff
}

/// Waits until the driver knows the shard count of every node (it learns them from each
/// node's first connection) and returns the nodes.
async fn nodes_with_sharders(session: &Session) -> Vec<Arc<Node>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let nodes = session.get_cluster_state().get_nodes_info().to_vec();
        if nodes.iter().all(|n| n.sharder().is_some()) {
            return nodes;
        }
        assert!(
            Instant::now() < deadline,
            "shard counts not known: {nodes:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_ids_map_each_write_to_its_vnode_and_shard() {
    const TEST: &str = "stream_ids_map_each_write_to_its_vnode_and_shard";
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(3).shards_per_node(3))
        .await
        .expect("cluster");
    let embedded = cluster.embedded().is_some();
    let session = cluster.session().await.expect("session");
    nodes_with_sharders(&session).await;
    let consistency = quorum_if_many(&session);
    if embedded {
        assert_eq!(consistency, Consistency::Quorum);
        assert_eq!(
            generation_times(&session, consistency).await.len(),
            1,
            "one generation on a fresh cluster"
        );
    }
    let vnodes = descriptions(
        &session,
        consistency,
        current_generation_time(&session, consistency).await,
    )
    .await;
    let state = session.get_cluster_state();
    // One description per vnode of the ring, ending at the vnode's token, with one stream per
    // shard of the node owning the vnode.
    let ring: BTreeMap<i64, Arc<Node>> = state
        .replica_locator()
        .ring()
        .iter()
        .map(|(token, node)| (token.value(), node.clone()))
        .collect();
    assert_eq!(
        vnodes.iter().map(|(end, _)| *end).collect::<Vec<_>>(),
        ring.keys().copied().collect::<Vec<_>>(),
        "the ring's tokens, in order"
    );
    if embedded {
        assert_eq!(vnodes.len(), 3 * 16, "16 vnodes per node");
    }
    for (end, streams) in &vnodes {
        let sharder = ring[end].sharder().expect("a shard-aware node");
        assert_eq!(
            streams.len(),
            usize::from(sharder.nr_shards.get()),
            "vnode ending at {end}: one stream per shard"
        );
        if embedded {
            assert_eq!(sharder.nr_shards.get(), 3);
        }
    }

    let ks = vnode_keyspace(&session).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    let insert = session
        .prepare(format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (?, 0, 0)"))
        .await
        .expect("prepare");
    const PARTITIONS: i32 = 300;
    for pk in 0..PARTITIONS {
        session
            .execute_unpaged(&insert, (pk,))
            .await
            .expect("insert");
    }
    let rows: Vec<(Vec<u8>, i32)> = session
        .query_iter(
            format!("SELECT \"cdc$stream_id\", pk FROM {ks}.t_scylla_cdc_log"),
            (),
        )
        .await
        .expect("select")
        .rows_stream()
        .expect("typed")
        .try_collect()
        .await
        .expect("decode");
    assert_eq!(rows.len(), PARTITIONS as usize);

    let replicas = |table: &str, token: i64| {
        let r = state.get_token_endpoints(&ks, table, Token::new(token));
        assert_eq!(r.len(), 1, "replication factor 1");
        (r[0].0.host_id, r[0].1)
    };
    // The shards each node's partitions landed on.
    let mut shards_seen: HashMap<uuid::Uuid, (Sharder, usize, HashSet<u32>)> = HashMap::new();
    for (stream, pk) in &rows {
        let token = token_of(*pk);
        // The vnode: the first range end at or after the token, wrapping to the first.
        let index = vnodes
            .iter()
            .position(|(end, _)| *end >= token)
            .unwrap_or(0);
        let (end, streams) = &vnodes[index];
        let start = if index == 0 {
            vnodes.last().map(|v| v.0).expect("vnodes")
        } else {
            vnodes[index - 1].0
        };
        let owner = &ring[end];
        assert_eq!(replicas("t", token).0, owner.host_id, "pk {pk}: the owner");
        let sharder: Sharder = owner.sharder().expect("a shard-aware node");
        let shard = sharder.shard_of(Token::new(token));
        let seen = shards_seen
            .entry(owner.host_id)
            .or_insert_with(|| (sharder.clone(), 0, HashSet::new()));
        seen.1 += 1;
        seen.2.insert(shard);
        // Stream number `shard` of the vnode's (byte-sorted) set.
        assert_eq!(
            Some(stream),
            streams.get(shard as usize),
            "pk {pk} token {token}"
        );
        assert_eq!(stream_vnode_index(stream), index as u64, "pk {pk}");
        // Each stream of the vnode starts at the first token of one shard in the vnode (or at
        // the vnode's end when that shard owns none of it), one per shard. (Scylla indexes the
        // byte-sorted set by shard number, so the chosen stream's token need not be on the
        // write's shard.)
        let inside: Vec<u32> = streams
            .iter()
            .filter(|s| stream_token(s) != *end)
            .map(|s| sharder.shard_of(Token::new(stream_token(s))))
            .collect();
        let distinct: HashSet<u32> = inside.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            inside.len(),
            "pk {pk}: one stream per shard"
        );
        if inside.len() == streams.len() {
            assert_eq!(
                distinct,
                (0..u32::from(sharder.nr_shards.get())).collect(),
                "pk {pk}"
            );
        }
        // The stream's token lies in the same vnode: the log partition has the same replica
        // as the base partition.
        let st = stream_token(stream);
        let in_vnode = if start < *end {
            st > start && st <= *end
        } else {
            st > start || st <= *end
        };
        assert!(in_vnode, "stream token {st} outside ({start}, {end}]");
        assert_eq!(
            replicas("t_scylla_cdc_log", st).0,
            replicas("t", token).0,
            "pk {pk}: base and log partitions on the same node"
        );
    }
    // Every shard of every node received some of the partitions — asserted when missing one
    // is improbable (below one in a million), as it always is on the embedded cluster.
    let miss_probability: f64 = shards_seen
        .values()
        .map(|(sharder, n, _)| {
            let shards = f64::from(sharder.nr_shards.get());
            shards * (1.0 - 1.0 / shards).powi(*n as i32)
        })
        .sum();
    if embedded || miss_probability < 1e-6 {
        for (host, (sharder, n, seen)) in &shards_seen {
            assert_eq!(
                seen.len(),
                usize::from(sharder.nr_shards.get()),
                "{n} partitions on node {host} hit every shard"
            );
        }
    }

    // The driver routes a log read to the node and shard owning the stream.
    if embedded_only(
        &format!("{TEST} (log reads go to the stream's node and shard)"),
        "counts the requests each node and shard receives",
    ) {
        let embedded = cluster.embedded().expect("the embedded cluster");
        wait_for_every_shard_connected(embedded, 3).await;
        let select = session
            .prepare(format!(
                "SELECT * FROM {ks}.t_scylla_cdc_log WHERE \"cdc$stream_id\" = ?"
            ))
            .await
            .expect("prepare");
        let addresses = embedded.node_addresses();
        for (stream, pk) in rows.iter().take(5) {
            let (host, shard) = replicas("t_scylla_cdc_log", stream_token(stream));
            let node = state
                .get_nodes_info()
                .iter()
                .find(|n| n.host_id == host)
                .expect("node");
            let index = addresses
                .iter()
                .position(|a| a.ip() == node.address.ip())
                .expect("node address")
                + 1;
            let in_stream = rows.iter().filter(|(s, _)| s == stream).count();
            embedded.reset_request_counts();
            const READS: u64 = 20;
            for _ in 0..READS {
                let n = session
                    .execute_unpaged(&select, (stream,))
                    .await
                    .expect("read")
                    .into_rows_result()
                    .expect("rows")
                    .rows_num();
                assert_eq!(n, in_stream, "pk {pk}");
            }
            let counts = embedded.request_counts();
            let at_owner = counts.get(&(index, shard)).copied().unwrap_or(0);
            assert!(
                at_owner >= READS,
                "pk {pk}: {counts:?}, owner ({index}, {shard})"
            );
            let elsewhere: u64 = counts
                .iter()
                .filter(|(k, _)| **k != (index, shard))
                .map(|(_, n)| n)
                .sum();
            assert!(
                elsewhere < READS,
                "pk {pk}: reads went elsewhere: {counts:?}"
            );
        }
    }
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// Write-timestamp admission on a CDC table (semantics §5.6). On a real cluster the client's
/// clock must agree with the servers' within a second or so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_from_the_future_or_the_past_are_rejected() {
    const TEST: &str = "writes_from_the_future_or_the_past_are_rejected";
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster");
    let embedded = cluster.embedded().is_some();
    let session = cluster.session().await.expect("session");
    let generation_ms = current_generation_time(&session, quorum_if_many(&session))
        .await
        .timestamp_millis();
    let ks = vnode_keyspace(&session).await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int) WITH cdc = {{'enabled': true}}"),
    )
    .await;
    run(
        &session,
        &format!("CREATE TABLE {ks}.plain (pk int PRIMARY KEY, v int)"),
    )
    .await;
    let write = |table: &'static str, ts: i64| {
        let session = session.clone();
        let ks = ks.clone();
        async move {
            session
                .query_unpaged(
                    no_retry(format!(
                        "INSERT INTO {ks}.{table} (pk, v) VALUES (1, 1) USING TIMESTAMP {ts}"
                    )),
                    (),
                )
                .await
                .map(|_| ())
        }
    };
    let now = chrono::Utc::now().timestamp_micros();
    // Within the leeway: admitted.
    write("t", now + 3_000_000).await.expect("3 s ahead");
    write("t", now).await.expect("now");
    // Far in the future.
    let (e, msg) = db_error(write("t", now + 60_000_000).await.expect_err("60 s ahead"));
    assert_eq!(e, DbError::Invalid, "{msg}");
    if embedded {
        assert!(
            msg.starts_with("cdc: attempted to get a stream \"from the future\""),
            "{msg}"
        );
    }
    // Over 5 s in the past and before the current generation (the classic
    // `USING TIMESTAMP 123`, too).
    let generation_us = generation_ms * 1000;
    let past = (now - 60_000_000).min(generation_us - 1000);
    for ts in [past, 123] {
        let (e, msg) = db_error(write("t", ts).await.expect_err("in the past"));
        assert_eq!(e, DbError::Invalid, "{msg}");
        if embedded {
            assert!(
                msg.starts_with("cdc: attempted to get a stream \"from the past\""),
                "{msg}"
            );
        }
    }
    // 60 s in the past is admitted if the current generation was already operating then
    // (a cluster up for over a minute), and rejected otherwise.
    let mut written = 2;
    let minute_ago = now - 60_000_000;
    if generation_us < minute_ago - 1_000_000 {
        write("t", minute_ago)
            .await
            .expect("60 s ago, in the current generation");
        written += 1;
    } else if generation_us > minute_ago + 1_000_000 {
        let (e, msg) = db_error(
            write("t", minute_ago)
                .await
                .expect_err("60 s ago, before the current generation"),
        );
        assert_eq!(e, DbError::Invalid, "{msg}");
    }
    // Before the current generation (but within the leeway, so not "from the past"): only
    // possible within a few seconds of that generation's start, that is, on a fresh cluster.
    let before = generation_us - 1000;
    if chrono::Utc::now().timestamp_micros() - before < 4_500_000 {
        let (e, msg) = db_error(write("t", before).await.expect_err("before the generation"));
        assert_eq!(e, DbError::ServerError, "{msg}");
        if embedded {
            assert!(
                msg.contains("could not find any CDC stream for timestamp"),
                "{msg}"
            );
        }
    } else {
        skip(
            &format!("{TEST} (a write dated just before the current generation)"),
            "the current generation started over 4.5 s ago (a long-running cluster, or a slow machine)",
        );
    }
    // A table without CDC takes any timestamp.
    write("plain", 123)
        .await
        .expect("no CDC, no admission rule");
    write("plain", now + 600_000_000)
        .await
        .expect("no CDC, no admission rule");
    // The rejected writes changed nothing.
    let rows = session
        .query_unpaged(format!("SELECT * FROM {ks}.t_scylla_cdc_log"), ())
        .await
        .expect("select")
        .into_rows_result()
        .expect("rows")
        .rows_num();
    assert_eq!(rows, written);
    run(&session, &format!("DROP KEYSPACE {ks}")).await;
    cluster.shutdown().await;
}

/// A read of `cdc_generation_timestamps` at `consistency`, sent once.
async fn read_generation_timestamps(
    session: &Session,
    consistency: Consistency,
) -> Result<usize, ExecutionError> {
    let mut q = no_retry(
        "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
    );
    q.set_consistency(consistency);
    session
        .query_unpaged(q, ())
        .await
        .map(|r| r.into_rows_result().expect("rows").rows_num())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_reads_of_system_distributed_fail_on_a_single_node() {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let nodes = session.get_cluster_state().get_nodes_info().len();
    if nodes != 1 {
        skip(
            "quorum_reads_of_system_distributed_fail_on_a_single_node",
            &format!("it needs a 1-node cluster, SCYLLA_URI's has {nodes} nodes"),
        );
        return;
    }
    let generations = read_generation_timestamps(&session, Consistency::One)
        .await
        .expect("ONE works");
    if cluster.embedded().is_some() {
        assert_eq!(generations, 1);
    } else {
        assert!(generations >= 1);
    }
    // system_distributed has replication factor 3 whatever the cluster's size.
    for (consistency, required) in [(Consistency::Quorum, 2), (Consistency::All, 3)] {
        let (e, msg) = db_error(
            read_generation_timestamps(&session, consistency)
                .await
                .expect_err("needs more replicas"),
        );
        assert_eq!(
            e,
            DbError::Unavailable {
                consistency,
                required,
                alive: 1
            },
            "{msg}"
        );
        if cluster.embedded().is_some() {
            let name = if required == 2 { "QUORUM" } else { "ALL" };
            assert!(
                msg.starts_with(&format!(
                    "Cannot achieve consistency level for cl {name}. Requires {required}, alive 1"
                )),
                "{msg}"
            );
        }
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_reads_of_system_distributed_work_on_several_nodes() {
    setup_tracing();
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(3))
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    let nodes = session.get_cluster_state().get_nodes_info().len();
    if nodes < 2 {
        skip(
            "quorum_reads_of_system_distributed_work_on_several_nodes",
            "it needs a cluster of at least 2 nodes, SCYLLA_URI's has 1",
        );
        return;
    }
    let generations = read_generation_timestamps(&session, Consistency::Quorum)
        .await
        .expect("QUORUM with several nodes");
    if cluster.embedded().is_some() {
        assert_eq!(generations, 1);
    } else {
        assert!(generations >= 1);
    }
    cluster.shutdown().await;
}

/// One change of the log by its stream and exact `cdc$time` (what a CDC reader asks for a
/// change it found late): answered with the change's rows, prepared and bound as a reader
/// binds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_change_is_read_by_its_stream_and_time() {
    let (_cluster, session, ks) =
        cluster_and_keyspace(EmbeddedCluster::builder().nodes(3).shards_per_node(2)).await;
    run(
        &session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true}}"
        ),
    )
    .await;
    run(
        &session,
        &format!(
            "BEGIN UNLOGGED BATCH INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 1, 1); \
             INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 2, 2); APPLY BATCH"
        ),
    )
    .await;
    run(
        &session,
        &format!("INSERT INTO {ks}.t (pk, ck, v) VALUES (1, 3, 3)"),
    )
    .await;
    let rows: Vec<(Vec<u8>, CqlTimeuuid, i32)> = session
        .query_unpaged(
            format!(
                "SELECT \"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\" FROM {ks}.t_scylla_cdc_log"
            ),
            (),
        )
        .await
        .unwrap()
        .into_rows_result()
        .unwrap()
        .rows()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 3);
    let (stream, time, _) = rows[0].clone();
    let prepared = session
        .prepare(format!(
            "SELECT * FROM {ks}.t_scylla_cdc_log WHERE \"cdc$stream_id\" = ? AND \"cdc$time\" = ? \
             BYPASS CACHE"
        ))
        .await
        .unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        session.execute_unpaged(&prepared, (&stream[..], time)),
    )
    .await
    .expect("the query of one change is answered")
    .unwrap()
    .into_rows_result()
    .unwrap();
    let seqs: Vec<i32> = result
        .rows::<scylla::value::Row>()
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let i = result
                .column_specs()
                .iter()
                .position(|c| c.name() == "cdc$batch_seq_no")
                .unwrap();
            r.columns[i].as_ref().unwrap().as_int().unwrap()
        })
        .collect();
    assert_eq!(
        seqs,
        vec![0, 1],
        "the batch's two rows, and not the next change"
    );
}
