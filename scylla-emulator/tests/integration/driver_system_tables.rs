//! The system tables as the mainstream drivers query them on connect and on schema refresh
//! (the Python driver, gocql, the Java drivers 4.x and 3.x): every statement they send is
//! answered, with Scylla 2025.x's columns and types (`db/schema_tables.cc`,
//! `db/system_keyspace.cc`) and rows written as Scylla writes them; the tables Scylla does
//! not have get Scylla's error.
//!
//! Every test runs against the embedded cluster, or against the real cluster of `SCYLLA_URI`
//! when it is set.

use scylla::client::session::Session;
use scylla::cluster::metadata::{CollectionType, ColumnType, NativeType};
use scylla::errors::DbError;
use scylla::response::query_result::QueryResult;
use scylla::value::{CqlTimestamp, CqlValue};
use scylla_cdc_test_utils::TestCluster;
use scylla_emulator::EmbeddedCluster;

use crate::support::{db_error, rows, run, vnode_keyspace};

/// A result column's type as CQL spells it (result metadata does not say what is frozen).
fn type_name(t: &ColumnType<'_>) -> String {
    match t {
        ColumnType::Native(n) => match n {
            NativeType::BigInt => "bigint",
            NativeType::Blob => "blob",
            NativeType::Boolean => "boolean",
            NativeType::Double => "double",
            NativeType::Inet => "inet",
            NativeType::Int => "int",
            NativeType::Text => "text",
            NativeType::Timestamp => "timestamp",
            NativeType::Timeuuid => "timeuuid",
            NativeType::Uuid => "uuid",
            other => panic!("no {other:?} column in the system tables"),
        }
        .to_string(),
        ColumnType::Collection { typ, .. } => match typ {
            CollectionType::List(e) => format!("list<{}>", type_name(e)),
            CollectionType::Set(e) => format!("set<{}>", type_name(e)),
            CollectionType::Map(k, v) => format!("map<{}, {}>", type_name(k), type_name(v)),
            other => panic!("unexpected collection {other:?}"),
        },
        other => panic!("no {other:?} column in the system tables"),
    }
}

/// `name type, ...` of a result's columns.
fn columns_of(result: &QueryResult) -> String {
    result
        .clone()
        .into_rows_result()
        .expect("rows")
        .column_specs()
        .iter()
        .map(|c| format!("{} {}", c.name(), type_name(c.typ())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns of `SELECT *` of every table the drivers read, as Scylla 2025.x has them:
/// partition key, clustering key, then the other columns by name.
const SCYLLA_COLUMNS: &[(&str, &str)] = &[
    (
        "system.local",
        "key text, bootstrapped text, broadcast_address inet, cluster_name text, \
         cql_version text, data_center text, gossip_generation int, host_id uuid, \
         listen_address inet, native_protocol_version text, partitioner text, rack text, \
         release_version text, rpc_address inet, schema_version uuid, supported_features text, \
         tokens set<text>, truncated_at map<uuid, blob>",
    ),
    (
        "system.peers",
        "peer inet, data_center text, host_id uuid, preferred_ip inet, rack text, \
         release_version text, rpc_address inet, schema_version uuid, supported_features text, \
         tokens set<text>",
    ),
    (
        "system_traces.sessions",
        "session_id uuid, client inet, command text, coordinator inet, duration int, \
         parameters map<text, text>, request text, request_size int, response_size int, \
         started_at timestamp, username text",
    ),
    (
        "system_traces.events",
        "session_id uuid, event_id timeuuid, activity text, scylla_parent_id bigint, \
         scylla_span_id bigint, source inet, source_elapsed int, thread text",
    ),
    (
        "system_schema.keyspaces",
        "keyspace_name text, durable_writes boolean, replication map<text, text>",
    ),
    (
        "system_schema.scylla_keyspaces",
        "keyspace_name text, initial_tablets int, storage_options map<text, text>, \
         storage_type text",
    ),
    (
        "system_schema.tables",
        "keyspace_name text, table_name text, bloom_filter_fp_chance double, \
         caching map<text, text>, comment text, compaction map<text, text>, \
         compression map<text, text>, crc_check_chance double, \
         dclocal_read_repair_chance double, default_time_to_live int, \
         extensions map<text, blob>, flags set<text>, gc_grace_seconds int, id uuid, \
         max_index_interval int, memtable_flush_period_in_ms int, min_index_interval int, \
         read_repair_chance double, speculative_retry text",
    ),
    (
        "system_schema.scylla_tables",
        "keyspace_name text, table_name text, cdc map<text, text>, committed_by_group0 boolean, \
         in_memory boolean, partitioner text, tablets map<text, text>, version uuid",
    ),
    (
        "system_schema.columns",
        "keyspace_name text, table_name text, column_name text, clustering_order text, \
         column_name_bytes blob, kind text, position int, type text",
    ),
    (
        "system_schema.view_virtual_columns",
        "keyspace_name text, table_name text, column_name text, clustering_order text, \
         column_name_bytes blob, kind text, position int, type text",
    ),
    (
        "system_schema.computed_columns",
        "keyspace_name text, table_name text, column_name text, computation blob",
    ),
    (
        "system_schema.dropped_columns",
        "keyspace_name text, table_name text, column_name text, dropped_time timestamp, \
         type text",
    ),
    (
        "system_schema.triggers",
        "keyspace_name text, table_name text, trigger_name text, options map<text, text>",
    ),
    (
        "system_schema.views",
        "keyspace_name text, view_name text, base_table_id uuid, base_table_name text, \
         bloom_filter_fp_chance double, caching map<text, text>, comment text, \
         compaction map<text, text>, compression map<text, text>, crc_check_chance double, \
         dclocal_read_repair_chance double, default_time_to_live int, \
         extensions map<text, blob>, gc_grace_seconds int, id uuid, include_all_columns boolean, \
         max_index_interval int, memtable_flush_period_in_ms int, min_index_interval int, \
         read_repair_chance double, speculative_retry text, where_clause text",
    ),
    (
        "system_schema.indexes",
        "keyspace_name text, table_name text, index_name text, kind text, \
         options map<text, text>",
    ),
    (
        "system_schema.types",
        "keyspace_name text, type_name text, field_names list<text>, field_types list<text>",
    ),
    (
        "system_schema.functions",
        "keyspace_name text, function_name text, argument_types list<text>, \
         argument_names list<text>, body text, called_on_null_input boolean, language text, \
         return_type text",
    ),
    (
        "system_schema.aggregates",
        "keyspace_name text, aggregate_name text, argument_types list<text>, final_func text, \
         initcond text, return_type text, state_func text, state_type text",
    ),
    (
        "system_schema.scylla_aggregates",
        "keyspace_name text, aggregate_name text, argument_types list<text>, \
         reduce_func text, state_type text",
    ),
];

/// The statements the drivers send on connect and on schema refresh, as they send them
/// (`{ks}`, `{t}` and `{ut}` stand for a keyspace, a table and a type of the test), except
/// the peers_v2 probes, which fail on Scylla (see below). Sources: python-driver
/// `cassandra/cluster.py` (ControlConnection) and `cassandra/metadata.py` (SchemaParserV3);
/// gocql `conn.go`, `host_source.go`, `metadata_scylla.go`; java-driver 4.x
/// `DefaultTopologyMonitor`, `ProtocolInitHandler`, `SchemaAgreementChecker`,
/// `Cassandra3SchemaQueries` (+ `RuleBasedKeyspaceFilter`'s `IN`); java-driver 3.x
/// `ControlConnection` and `SchemaParser.V3SchemaParser` (paged by `LIMIT` and slices).
const DRIVER_QUERIES: &[&str] = &[
    // Python
    "SELECT peer, data_center, host_id, rack, release_version, rpc_address, schema_version, tokens FROM system.peers",
    "SELECT broadcast_address, cluster_name, data_center, host_id, listen_address, partitioner, rack, release_version, rpc_address, schema_version, tokens FROM system.local WHERE key='local'",
    "SELECT peer, host_id, rpc_address, schema_version FROM system.peers",
    "SELECT host_id, peer, data_center, rack, rpc_address, release_version, schema_version FROM system.peers",
    "SELECT schema_version FROM system.local WHERE key='local'",
    "SELECT rpc_address FROM system.local WHERE key='local'",
    "SELECT release_version FROM system.local WHERE key='local'",
    "SELECT * FROM system_schema.keyspaces",
    "SELECT * FROM system_schema.tables",
    "SELECT * FROM system_schema.columns",
    "SELECT * FROM system_schema.types",
    "SELECT * FROM system_schema.functions",
    "SELECT * FROM system_schema.aggregates",
    "SELECT * FROM system_schema.indexes",
    "SELECT * FROM system_schema.views",
    "SELECT * FROM system_schema.triggers",
    "SELECT * FROM system_schema.keyspaces USING TIMEOUT 2000ms",
    "SELECT * FROM system_schema.keyspaces WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT * FROM system_schema.columns WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT * FROM system_schema.indexes WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT * FROM system_schema.triggers WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT * FROM system_schema.views WHERE keyspace_name = '{ks}' AND view_name = '{t}'",
    "SELECT * FROM system_schema.types WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.types WHERE keyspace_name = '{ks}' AND type_name = '{ut}'",
    "SELECT * FROM system_schema.functions WHERE keyspace_name = '{ks}' AND function_name = 'f' AND argument_types = ['int']",
    "SELECT * FROM system_schema.aggregates WHERE keyspace_name = '{ks}' AND aggregate_name = 'a' AND argument_types = ['int']",
    // gocql
    "SELECT peer, data_center, host_id, preferred_ip, rack, release_version, rpc_address, schema_version, tokens FROM system.peers",
    "SELECT host_id, data_center, rack, schema_version, rpc_address FROM system.peers",
    "SELECT durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.scylla_tables WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.scylla_tables WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT table_name, column_name, clustering_order, type, kind, position FROM system_schema.columns WHERE keyspace_name = '{ks}' AND table_name = '{t}'",
    "SELECT table_name, column_name, clustering_order, type, kind, position FROM system_schema.columns WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.views WHERE keyspace_name = '{ks}' AND base_table_name = '{t}' ALLOW FILTERING",
    "SELECT * FROM system_schema.functions WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.aggregates WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.indexes WHERE keyspace_name = '{ks}'",
    "SELECT * FROM system_schema.views WHERE keyspace_name = '{ks}'",
    // Java 4.x
    "SELECT cluster_name FROM system.local",
    "SELECT * FROM system.local",
    "SELECT * FROM system.peers",
    "SELECT * FROM system_schema.keyspaces WHERE keyspace_name IN ('{ks}','system')",
    "SELECT * FROM system_schema.columns WHERE keyspace_name IN ('{ks}')",
    "SELECT * FROM system_schema.functions WHERE keyspace_name IN ('{ks}')",
    "SELECT * FROM system_traces.sessions WHERE session_id = 5bc1f5f0-4a1e-11ee-be56-0242ac120002",
    "SELECT * FROM system_traces.events WHERE session_id = 5bc1f5f0-4a1e-11ee-be56-0242ac120002",
    // Java 3.x
    "select cluster_name from system.local where key = 'local'",
    "SELECT * FROM system.local WHERE key='local'",
    "SELECT peer, rpc_address, schema_version, host_id FROM system.peers",
    "SELECT schema_version, host_id FROM system.local WHERE key='local'",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = '{ks}' LIMIT 1000",
    "SELECT * FROM system_schema.tables WHERE keyspace_name = '{ks}' AND table_name > '{t}' LIMIT 1000",
    "SELECT * FROM system_schema.columns WHERE keyspace_name = '{ks}' AND (table_name, column_name) > ('{t}', 'pk') LIMIT 1000",
    "SELECT * FROM system_schema.types WHERE keyspace_name = '{ks}' AND type_name > '{ut}' LIMIT 1000",
    "SELECT * FROM system_schema.functions WHERE keyspace_name = '{ks}' AND (function_name, argument_types) > ('f', ['int', 'text']) LIMIT 1000",
    "SELECT * FROM system_schema.aggregates WHERE keyspace_name = '{ks}' AND (aggregate_name, argument_types) > ('a', ['int']) LIMIT 1000",
    "SELECT * FROM system_schema.indexes WHERE keyspace_name = '{ks}' AND (table_name, index_name) > ('{t}', 'i') LIMIT 1000",
    "SELECT * FROM system_schema.views WHERE keyspace_name = '{ks}' AND view_name > 'v' LIMIT 1000",
];

/// A keyspace with a type and a CDC table, for the statements' placeholders.
async fn schema(session: &Session) -> String {
    let ks = vnode_keyspace(session).await;
    run(session, &format!("CREATE TYPE {ks}.ut (a int, b text)")).await;
    run(
        session,
        &format!(
            "CREATE TABLE {ks}.t (pk int, ck text, u frozen<ut>, tp tuple<int, text>, \
             PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {{'enabled': true}}"
        ),
    )
    .await;
    ks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_driver_metadata_query_is_answered_with_scyllas_columns() {
    let cluster = TestCluster::start(EmbeddedCluster::builder().nodes(2))
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = schema(&session).await;
    for query in DRIVER_QUERIES {
        let query = query
            .replace("{ks}", &ks)
            .replace("{t}", "t")
            .replace("{ut}", "ut");
        session
            .query_unpaged(query.as_str(), ())
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
    }
    // gocql binds the keyspace and table names: prepared statements with markers, whose
    // first marker is the partition key. (query, whether the test's schema has rows there)
    for (query, has_rows) in [
        (
            "SELECT durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.tables WHERE keyspace_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.scylla_tables WHERE keyspace_name = ?",
            true,
        ),
        (
            "SELECT table_name, column_name, clustering_order, type, kind, position \
             FROM system_schema.columns WHERE keyspace_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.types WHERE keyspace_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.functions WHERE keyspace_name = ?",
            false,
        ),
        (
            "SELECT * FROM system_schema.aggregates WHERE keyspace_name = ?",
            false,
        ),
        (
            "SELECT * FROM system_schema.indexes WHERE keyspace_name = ?",
            false,
        ),
        (
            "SELECT * FROM system_schema.views WHERE keyspace_name = ?",
            false,
        ),
    ] {
        let prepared = session
            .prepare(query)
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        let spec = prepared.get_variable_col_specs();
        assert_eq!(spec.len(), 1, "{query}");
        assert_eq!(
            spec.get_by_index(0).map(|c| c.name()),
            Some("keyspace_name")
        );
        assert_eq!(prepared.get_variable_pk_indexes().len(), 1, "{query}");
        let n = session
            .execute_unpaged(&prepared, (&ks,))
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"))
            .into_rows_result()
            .expect("rows")
            .rows_num();
        assert_eq!(n > 0, has_rows, "{query}");
    }
    for (query, has_rows) in [
        (
            "SELECT * FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.scylla_tables WHERE keyspace_name = ? AND table_name = ?",
            true,
        ),
        (
            "SELECT table_name, column_name, clustering_order, type, kind, position \
             FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
            true,
        ),
        (
            "SELECT * FROM system_schema.indexes WHERE keyspace_name = ? AND table_name = ?",
            false,
        ),
        (
            "SELECT * FROM system_schema.views WHERE keyspace_name = ? AND base_table_name = ? \
             ALLOW FILTERING",
            false,
        ),
    ] {
        let n = session
            .query_unpaged(query, (&ks, "t"))
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"))
            .into_rows_result()
            .expect("rows")
            .rows_num();
        assert_eq!(n > 0, has_rows, "{query}");
    }
    for (table, expected) in SCYLLA_COLUMNS {
        let query = format!("SELECT * FROM {table}");
        let result = session
            .query_unpaged(query.as_str(), ())
            .await
            .unwrap_or_else(|e| panic!("{query}: {e}"));
        let expected = expected.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(columns_of(&result), expected, "{table}");
    }
    cluster.shutdown().await;
}

/// Tables Scylla does not have: `system.peers_v2` (Cassandra 4; the Java drivers fall back to
/// `system.peers` on this Invalid, gocql and the Python driver do not ask Scylla), the Java
/// driver 4.x's `system.prepared_statements` (it then re-prepares everything),
/// `system_virtual_schema` (queried only for Cassandra 4 release versions) and the Python
/// driver's `consistency` column of `scylla_keyspaces` (only Scylla versions with strongly
/// consistent tablets have it; the driver absorbs the Invalid).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_scylla_lacks_is_invalid_as_on_scylla() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    for (cql, message) in [
        (
            "SELECT * FROM system.peers_v2",
            "unconfigured table peers_v2",
        ),
        (
            "SELECT peer, data_center, host_id, native_address, native_port, preferred_ip, rack, \
             release_version, schema_version, tokens FROM system.peers_v2",
            "unconfigured table peers_v2",
        ),
        (
            "SELECT prepared_id FROM system.prepared_statements",
            "unconfigured table prepared_statements",
        ),
        (
            "SELECT * FROM system_virtual_schema.keyspaces",
            "Keyspace system_virtual_schema does not exist",
        ),
        (
            "SELECT keyspace_name, consistency FROM system_schema.scylla_keyspaces",
            "Undefined column name consistency",
        ),
        // The Python driver asks for it when it does not know the release version yet.
        (
            "SELECT dse_version FROM system.local WHERE key='local'",
            "Undefined column name dse_version",
        ),
    ] {
        let (e, msg) = db_error(&session, cql).await;
        assert_eq!((e, msg.as_str()), (DbError::Invalid, message), "{cql}");
    }
    cluster.shutdown().await;
}

/// The rows of `query` as their columns' values.
async fn column_values(session: &Session, query: &str) -> Vec<Vec<Option<CqlValue>>> {
    rows(session, query)
        .await
        .into_iter()
        .map(|r| r.columns)
        .collect()
}

fn text(v: &Option<CqlValue>) -> &str {
    v.as_ref()
        .and_then(CqlValue::as_text)
        .map_or("<null>", |s| s)
}

/// What `system_schema` shows is what Scylla writes: upper-case clustering orders
/// (scylladb#8477), tuples as `frozen<tuple<...>>`, dropped columns with their drop time in
/// microseconds and user types expanded to tuples, `system.local`'s removed columns, and
/// `committed_by_group0` only for tables whose schema went through group 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_rows_are_written_as_scylla_writes_them() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = schema(&session).await;

    let columns = column_values(
        &session,
        &format!(
            "SELECT column_name, clustering_order, kind, position, type FROM system_schema.columns \
             WHERE keyspace_name = '{ks}' AND table_name = 't'"
        ),
    )
    .await;
    let shown: Vec<String> = columns
        .iter()
        .map(|r| {
            let position = match &r[3] {
                Some(CqlValue::Int(p)) => *p,
                other => panic!("position {other:?}"),
            };
            format!(
                "{} {} {} {position} {}",
                text(&r[0]),
                text(&r[1]),
                text(&r[2]),
                text(&r[4])
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            "ck DESC clustering 0 text",
            "pk NONE partition_key 0 int",
            "tp NONE regular -1 frozen<tuple<int, text>>",
            "u NONE regular -1 frozen<ut>",
        ]
    );

    let before = chrono::Utc::now().timestamp_micros();
    run(&session, &format!("ALTER TABLE {ks}.t DROP u")).await;
    let after = chrono::Utc::now().timestamp_micros();
    let dropped = column_values(
        &session,
        &format!(
            "SELECT dropped_time, type FROM system_schema.dropped_columns \
             WHERE keyspace_name = '{ks}' AND table_name = 't' AND column_name = 'u'"
        ),
    )
    .await;
    assert_eq!(dropped.len(), 1);
    assert_eq!(text(&dropped[0][1]), "frozen<tuple<int, text>>");
    match &dropped[0][0] {
        // The drop's write timestamp in µs, stored in a timestamp (ms) column unchanged.
        Some(CqlValue::Timestamp(CqlTimestamp(t))) => {
            assert!((before..=after).contains(t), "{before} <= {t} <= {after}")
        }
        other => panic!("dropped_time {other:?}"),
    }
    let local_dropped = column_values(
        &session,
        "SELECT column_name, type FROM system_schema.dropped_columns \
         WHERE keyspace_name = 'system' AND table_name = 'local'",
    )
    .await;
    let local_dropped: Vec<(&str, &str)> = local_dropped
        .iter()
        .map(|r| (text(&r[0]), text(&r[1])))
        .collect();
    assert_eq!(
        local_dropped,
        [
            ("scylla_cpu_sharding_algorithm", "text"),
            ("scylla_msb_ignore", "int"),
            ("scylla_nr_shards", "int"),
            ("thrift_version", "text"),
        ]
    );

    let group0 = |r: &[Vec<Option<CqlValue>>]| r.first().map(|r| r[0].clone());
    let user = column_values(
        &session,
        &format!(
            "SELECT committed_by_group0 FROM system_schema.scylla_tables \
             WHERE keyspace_name = '{ks}' AND table_name = 't'"
        ),
    )
    .await;
    assert_eq!(group0(&user), Some(Some(CqlValue::Boolean(true))));
    let local = column_values(
        &session,
        "SELECT committed_by_group0 FROM system_schema.scylla_tables \
         WHERE keyspace_name = 'system' AND table_name = 'local'",
    )
    .await;
    assert_eq!(group0(&local), Some(None));
    cluster.shutdown().await;
}

/// The Java driver 3.x reads each keyspace's schema tables 1000 rows at a time, restarting
/// after the last row seen with a clustering slice (`type_name > 'x'`,
/// `(table_name, column_name) > ('t', 'c')`): walked with pages of 3 rows, the slices visit
/// every row exactly once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clustering_slices_page_through_the_schema_tables() {
    let cluster = TestCluster::start(EmbeddedCluster::builder())
        .await
        .expect("cluster starts");
    let session = cluster.session().await.expect("session");
    let ks = schema(&session).await;
    for t in ["a", "b", "c"] {
        run(
            &session,
            &format!(
                "CREATE TABLE {ks}.{t} (pk int, c1 int, c2 int, v int, PRIMARY KEY (pk, c1, c2))"
            ),
        )
        .await;
    }
    for t in ["t1", "t2", "t3", "t4"] {
        run(&session, &format!("CREATE TYPE {ks}.{t} (x int)")).await;
    }

    let all = column_values(
        &session,
        &format!(
            "SELECT table_name, column_name FROM system_schema.columns WHERE keyspace_name = '{ks}'"
        ),
    )
    .await;
    assert!(all.len() > 12);
    let mut walked = Vec::new();
    let mut query = format!(
        "SELECT table_name, column_name FROM system_schema.columns WHERE keyspace_name = '{ks}' LIMIT 3"
    );
    loop {
        let page = column_values(&session, &query).await;
        let Some(last) = page.last() else { break };
        query = format!(
            "SELECT table_name, column_name FROM system_schema.columns WHERE keyspace_name = '{ks}' \
             AND (table_name, column_name) > ('{}', '{}') LIMIT 3",
            text(&last[0]),
            text(&last[1])
        );
        walked.extend(page);
    }
    assert_eq!(walked, all);

    let types = column_values(
        &session,
        &format!("SELECT type_name FROM system_schema.types WHERE keyspace_name = '{ks}'"),
    )
    .await;
    let names: Vec<&str> = types.iter().map(|r| text(&r[0])).collect();
    assert_eq!(names, ["t1", "t2", "t3", "t4", "ut"]);
    let after_t2 = column_values(
        &session,
        &format!(
            "SELECT type_name FROM system_schema.types WHERE keyspace_name = '{ks}' \
             AND type_name > 't2' LIMIT 2"
        ),
    )
    .await;
    let names: Vec<&str> = after_t2.iter().map(|r| text(&r[0])).collect();
    assert_eq!(names, ["t3", "t4"]);
    cluster.shutdown().await;
}
