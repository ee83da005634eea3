//! Server-side `DESCRIBE` through the real `scylla` driver: the result columns and rows
//! Scylla answers, its errors, and — the acceptance test — that every `create_statement`
//! recreates the same schema: describe on one cluster, run the statements on a fresh one,
//! and compare every `system_schema` row.
//!
//! The schema covers every table option and column type the cluster supports, user types
//! nested in collections and tuples, static columns, clustering order, compact storage,
//! counters, tablet and vnode keyspaces, and CDC tables with every CDC option (whose log
//! tables are recreated by the base table's `cdc` option and the `ALTER TABLE` DESCRIBE adds
//! for their properties).

use std::collections::BTreeSet;

use scylla::client::session::Session;
use scylla::value::{CqlValue, Row};
use scylla_emulator::EmbeddedCluster;

use crate::support::{rows_result, run};

/// Rows of a DESCRIBE: `(keyspace_name, type, name, create_statement)`.
type Desc = Vec<(String, String, String, Option<String>)>;

/// Runs a DESCRIBE and returns its rows (the create statement is `None` in listings).
async fn describe(session: &Session, cql: &str) -> Desc {
    let result = rows_result(session, cql).await;
    let with_statement = result.column_specs().len() == 4;
    result
        .rows::<Row>()
        .expect("rows")
        .map(|r| {
            let cells: Vec<Option<String>> = r
                .expect("row")
                .columns
                .into_iter()
                .map(|c| match c {
                    Some(CqlValue::Text(s)) => Some(s),
                    None => None,
                    other => panic!("{cql}: not text: {other:?}"),
                })
                .collect();
            let text = |i: usize| cells[i].clone().expect("not null");
            (text(0), text(1), text(2), with_statement.then(|| text(3)))
        })
        .collect()
}

/// The error message of a statement that must fail.
async fn error(session: &Session, cql: &str) -> String {
    match session.query_unpaged(cql, ()).await {
        Ok(_) => panic!("{cql} succeeded"),
        Err(e) => e.to_string(),
    }
}

/// Every row of every `system_schema` table about the keyspaces `keyspaces`, as text, minus
/// the columns a recreated schema legitimately changes (table ids unless `with_ids`, the
/// schema version).
async fn schema_rows(session: &Session, keyspaces: &[&str], with_ids: bool) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for table in [
        "keyspaces",
        "scylla_keyspaces",
        "tables",
        "scylla_tables",
        "columns",
        "dropped_columns",
        "types",
    ] {
        let result = session
            .query_unpaged(format!("SELECT * FROM system_schema.{table}"), ())
            .await
            .unwrap_or_else(|e| panic!("{table}: {e}"))
            .into_rows_result()
            .expect("rows");
        let names: Vec<String> = result
            .column_specs()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        for row in result.rows::<Row>().expect("rows") {
            let row = row.expect("row");
            let ks = match &row.columns[0] {
                Some(CqlValue::Text(ks)) => ks.clone(),
                other => panic!("keyspace_name: {other:?}"),
            };
            if !keyspaces.contains(&ks.as_str()) {
                continue;
            }
            let mut text = format!("{table}:");
            for (name, value) in names.iter().zip(&row.columns) {
                if name == "version" || (name == "id" && !with_ids) {
                    continue;
                }
                text.push_str(&format!(" {name}={value:?}"));
            }
            out.insert(text);
        }
    }
    out
}

/// Runs every statement of a DESCRIBE's rows in order (a create statement `WITH INTERNALS`
/// can hold several statements, one per line group, each ending with `;`).
async fn replay(session: &Session, desc: &Desc) {
    for (_, _, _, statement) in desc {
        let statement = statement.as_deref().expect("create statement");
        assert!(
            !statement.starts_with("/*"),
            "a commented-out statement: {statement}"
        );
        for part in statement
            .split(";\n")
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            run(session, part).await;
        }
    }
}

/// The schema of the acceptance test: three keyspaces, every option and type.
const SCHEMA: &[&str] = &[
    "CREATE KEYSPACE ks_main WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} \
     AND tablets = {'enabled': false}",
    "CREATE KEYSPACE \"Ks_Simple\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2} \
     AND durable_writes = false",
    "CREATE KEYSPACE ks_tablets WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} \
     AND tablets = {'enabled': true, 'initial': 4}",
    // Types whose names sort against their dependencies: DESCRIBE must order them.
    "CREATE TYPE ks_main.z_inner (a int, \"B\" text, c frozen<list<int>>)",
    "CREATE TYPE ks_main.m_middle (i frozen<z_inner>, s set<frozen<z_inner>>)",
    "CREATE TYPE ks_main.a_outer (m frozen<map<text, frozen<m_middle>>>, t tuple<int, frozen<z_inner>>, \"select\" int)",
    "CREATE TYPE \"Ks_Simple\".odd_type (\"x\"\"y\" int)",
    "CREATE TABLE ks_main.all_types (
        pk1 int, pk2 text, ck1 timeuuid, ck2 bigint, ck3 frozen<z_inner>,
        s_static text STATIC,
        a ascii, b bigint, bl blob, bo boolean, da date, de decimal, dou double, du duration,
        f float, i inet, it int, sm smallint, t text, ti time, ts timestamp, tu timeuuid,
        tiny tinyint, u uuid, vc varchar, vi varint,
        l list<int>, st set<text>, m map<int, frozen<list<text>>>, fs frozen<set<int>>,
        fm frozen<map<text, frozen<z_inner>>>, tup tuple<int, text, frozen<list<int>>>,
        udt a_outer, fudt frozen<a_outer>, lu list<frozen<m_middle>>, mu map<frozen<z_inner>, int>,
        \"MyCol\" int, \"select\" int, \"a\"\"b\" int, \"desc\" int, ttl int,
        PRIMARY KEY ((pk1, pk2), ck1, ck2, ck3))
     WITH CLUSTERING ORDER BY (ck1 DESC, ck2 ASC, ck3 DESC)",
    "CREATE TABLE ks_main.options (pk int PRIMARY KEY, v int)
     WITH comment = 'it''s a \"table\"; -- with text'
     AND bloom_filter_fp_chance = 0.00001
     AND caching = {'keys': 'NONE', 'rows_per_partition': '10', 'enabled': 'false'}
     AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}
     AND compression = {'sstable_compression': 'ZstdCompressor', 'chunk_length_in_kb': '16', 'compression_level': '3'}
     AND crc_check_chance = 0.5
     AND default_time_to_live = 3600
     AND gc_grace_seconds = 7200
     AND min_index_interval = 64 AND max_index_interval = 1024
     AND memtable_flush_period_in_ms = 60000
     AND speculative_retry = '50ms'
     AND paxos_grace_seconds = 600
     AND tombstone_gc = {'mode': 'disabled', 'propagation_delay_in_seconds': '120'}",
    "CREATE TABLE ks_main.no_compression (pk int PRIMARY KEY, v int)
     WITH compression = {} AND speculative_retry = 'ALWAYS' AND caching = {'enabled': 'true', 'keys': 'NONE'} AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', 'compaction_window_size': '2'}",
    "CREATE TABLE ks_main.cdc_full (pk int, ck int, s int STATIC, v text, l list<int>, u a_outer, PRIMARY KEY (pk, ck))
     WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true, 'delta': 'keys', 'ttl': 3600}",
    "CREATE TABLE ks_main.cdc_plain (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'preimage': true, 'ttl': 0}",
    // The log's own properties, restored by DESCRIBE's ALTER TABLE.
    "ALTER TABLE ks_main.cdc_plain_scylla_cdc_log WITH comment = 'custom log comment' AND gc_grace_seconds = 17 \
     AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}",
    "CREATE TABLE ks_main.cdc_was_on (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': false, 'postimage': true}",
    "CREATE TABLE ks_main.counts (pk int, ck int, c counter, d counter, PRIMARY KEY (pk, ck))",
    "CREATE TABLE ks_main.compact_dense (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH COMPACT STORAGE",
    "CREATE TABLE ks_main.compact_static (pk int PRIMARY KEY, v int, w text) WITH COMPACT STORAGE",
    "CREATE TABLE \"Ks_Simple\".\"Quoted_Table\" (\"Pk\" int, \"x\"\"y\" frozen<odd_type>, \"Ck\" int, PRIMARY KEY (\"Pk\", \"Ck\"))",
    "CREATE TABLE ks_tablets.t (pk int, ck int, v map<int, text>, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC)",
    "CREATE TABLE ks_tablets.logged (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'postimage': true}",
];

/// The user keyspaces of [`SCHEMA`].
const KEYSPACES: &[&str] = &["ks_main", "Ks_Simple", "ks_tablets"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_schema_recreates_every_option_and_type() {
    let source = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = source.session().await.expect("session");
    for statement in SCHEMA {
        run(&session, statement).await;
    }
    let desc = describe(&session, "DESC SCHEMA").await;
    // Logs are recreated by their base tables: never a CREATE of their own.
    assert!(
        desc.iter().all(|(_, _, _, s)| !s
            .as_deref()
            .unwrap_or("")
            .contains("CREATE TABLE ks_main.cdc_plain_scylla_cdc_log")),
        "{desc:#?}"
    );
    let target = EmbeddedCluster::builder().start().await.expect("cluster");
    let fresh = target.session().await.expect("session");
    replay(&fresh, &desc).await;
    let expected = schema_rows(&session, KEYSPACES, false).await;
    let got = schema_rows(&fresh, KEYSPACES, false).await;
    assert!(expected.len() > 100, "{expected:#?}");
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing: {missing:#?}\nextra: {extra:#?}"
    );
    let keyspace = |name: &str| {
        desc.iter()
            .find(|r| r.1 == "keyspace" && r.2 == name)
            .and_then(|r| r.3.clone())
            .unwrap_or_default()
    };
    assert!(
        keyspace("ks_tablets")
            .ends_with(" AND durable_writes = true AND tablets = {'enabled': true, 'initial': 4};")
    );
    assert!(
        keyspace("\"Ks_Simple\"")
            .ends_with(" AND durable_writes = false AND tablets = {'enabled': false};")
    );
    // And the recreated schema describes exactly as the original.
    assert_eq!(describe(&fresh, "DESC SCHEMA").await, desc);
    source.shutdown().await;
    target.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_with_internals_recreates_ids_and_dropped_columns() {
    let source = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = source.session().await.expect("session");
    run(
        &session,
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
    )
    .await;
    run(
        &session,
        "CREATE TABLE ks.t (pk int PRIMARY KEY, a int, b text, c list<int>)",
    )
    .await;
    run(&session, "ALTER TABLE ks.t DROP b").await;
    run(&session, "ALTER TABLE ks.t DROP c").await;
    run(&session, "ALTER TABLE ks.t ADD c map<int, int>").await;
    run(
        &session,
        "CREATE TABLE ks.plain (pk int PRIMARY KEY) WITH cdc = {'enabled': true}",
    )
    .await;
    let desc = describe(&session, "DESC KEYSPACE ks WITH INTERNALS").await;
    let t = desc
        .iter()
        .find(|(_, _, name, _)| name == "t")
        .and_then(|(_, _, _, s)| s.clone())
        .expect("t");
    assert!(t.contains("\n    b text,"), "{t}");
    assert!(
        t.contains("\n    c frozen<list<int>>,") || t.contains("\n    c list<int>,"),
        "{t}"
    );
    assert!(
        t.contains("ALTER TABLE ks.t DROP b USING TIMESTAMP "),
        "{t}"
    );
    assert!(t.contains("ALTER TABLE ks.t ADD c map<int, int>;"), "{t}");
    assert!(t.contains(") WITH ID = "), "{t}");
    let target = EmbeddedCluster::builder().start().await.expect("cluster");
    let fresh = target.session().await.expect("session");
    replay(&fresh, &desc).await;
    let expected = schema_rows(&session, &["ks"], true).await;
    let got = schema_rows(&fresh, &["ks"], true).await;
    // The log table gets a new id; the base tables keep theirs.
    let differ: Vec<_> = expected.symmetric_difference(&got).collect();
    assert!(
        differ
            .iter()
            .all(|r| r.starts_with("tables:") && r.contains("plain_scylla_cdc_log")),
        "{differ:#?}"
    );
    assert_eq!(differ.len(), 2, "{differ:#?}");
    source.shutdown().await;
    target.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_answers_scylla_s_columns_and_statements() {
    let cluster = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = cluster.session().await.expect("session");
    run(
        &session,
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} \
         AND tablets = {'enabled': false}",
    )
    .await;
    run(&session, "CREATE TYPE ks.ut (a int, \"B\" text)").await;
    run(
        &session,
        "CREATE TABLE ks.t (pk int, ck int, s int STATIC, v frozen<ut>, PRIMARY KEY (pk, ck)) \
         WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true}",
    )
    .await;

    // Result metadata: system.describe, four text columns (three for listings).
    let result = session
        .query_unpaged("DESC TABLE ks.t", ())
        .await
        .expect("describe")
        .into_rows_result()
        .expect("rows");
    let specs: Vec<(String, String, String, String)> = result
        .column_specs()
        .iter()
        .map(|c| {
            (
                c.table_spec().ks_name().to_string(),
                c.table_spec().table_name().to_string(),
                c.name().to_string(),
                format!("{:?}", c.typ()),
            )
        })
        .collect();
    let text = format!(
        "{:?}",
        scylla::cluster::metadata::ColumnType::Native(scylla::cluster::metadata::NativeType::Text)
    );
    let expect = |names: &[&str]| -> Vec<(String, String, String, String)> {
        names
            .iter()
            .map(|n| {
                (
                    "system".into(),
                    "describe".into(),
                    n.to_string(),
                    text.clone(),
                )
            })
            .collect()
    };
    assert_eq!(
        specs,
        expect(&["keyspace_name", "type", "name", "create_statement"])
    );
    let listing = session
        .query_unpaged("DESC TABLES", ())
        .await
        .expect("tables")
        .into_rows_result()
        .expect("rows");
    let names: Vec<&str> = listing.column_specs().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["keyspace_name", "type", "name"]);
    // Prepared, the statement announces the same columns.
    let prepared = session.prepare("DESC KEYSPACES").await.expect("prepare");
    let specs = prepared.get_current_result_set_col_specs();
    let names: Vec<&str> = specs.get().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["keyspace_name", "type", "name"]);

    let desc = describe(&session, "DESC TABLE ks.t").await;
    assert_eq!(desc.len(), 2, "{desc:#?}");
    assert_eq!(
        desc[0].3.as_deref(),
        Some(
            "CREATE TABLE ks.t (
    pk int,
    ck int,
    s int STATIC,
    v frozen<ut>,
    PRIMARY KEY (pk, ck)
) WITH CLUSTERING ORDER BY (ck DESC)
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'ALL'}
    AND comment = ''
    AND compaction = {'class': 'SizeTieredCompactionStrategy'}
    AND compression = {'sstable_compression': 'LZ4WithDictsCompressor'}
    AND crc_check_chance = 1
    AND default_time_to_live = 0
    AND gc_grace_seconds = 864000
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND speculative_retry = '99.0PERCENTILE'
    AND cdc = {'delta': 'full', 'enabled': 'true', 'postimage': 'false', 'preimage': 'false', 'ttl': '86400'}
    AND tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '3600'};
"
        )
    );
    assert_eq!(
        (desc[1].0.as_str(), desc[1].1.as_str(), desc[1].2.as_str()),
        ("ks", "table", "t_scylla_cdc_log")
    );
    assert_eq!(
        desc[1].3.as_deref(),
        Some(
            "ALTER TABLE ks.t_scylla_cdc_log WITH bloom_filter_fp_chance = 0.01
    AND caching = {'enabled': 'false', 'keys': 'NONE', 'rows_per_partition': 'NONE'}
    AND comment = 'CDC log for ks.t'
    AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': '60', 'compaction_window_unit': 'MINUTES', 'expired_sstable_check_frequency_seconds': '1800'}
    AND compression = {'sstable_compression': 'LZ4WithDictsCompressor'}
    AND crc_check_chance = 1
    AND default_time_to_live = 0
    AND gc_grace_seconds = 0
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND speculative_retry = '99.0PERCENTILE'
    AND tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '3600'};
"
        )
    );
    // The log itself: commented out, as Scylla 2025.1+ does.
    let log = describe(&session, "DESC TABLE ks.t_scylla_cdc_log").await;
    assert_eq!(log.len(), 1);
    let statement = log[0].3.clone().expect("statement");
    assert!(
        statement.starts_with(
            "/* Do NOT execute this statement! It's only for informational purposes.\n   \
             A CDC log table is created automatically when creating the base with CDC\n   \
             enabled option or creating the vector index on the base table's vector column.\n\
             \nCREATE TABLE ks.t_scylla_cdc_log (\n    \"cdc$stream_id\" blob,\n    \"cdc$time\" timeuuid,\n    \"cdc$batch_seq_no\" int,\n"
        ),
        "{statement}"
    );
    assert!(statement.ends_with(";\n\n*/"), "{statement}");
    assert!(statement.contains("\n    PRIMARY KEY (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\")\n) WITH CLUSTERING ORDER BY (\"cdc$time\" ASC, \"cdc$batch_seq_no\" ASC)\n"));

    // Keyspace and type.
    let ks = describe(&session, "DESC ONLY KEYSPACE ks").await;
    assert_eq!(
        ks,
        vec![(
            "ks".to_string(),
            "keyspace".to_string(),
            "ks".to_string(),
            Some(
                "CREATE KEYSPACE ks WITH replication = {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', \
                 'datacenter1': '1'} AND durable_writes = true AND tablets = {'enabled': false};"
                    .to_string()
            )
        )]
    );
    let ut = describe(&session, "DESC TYPE ks.ut").await;
    assert_eq!(
        ut[0].3.as_deref(),
        Some("CREATE TYPE ks.ut (\n    a int,\n    \"B\" text\n);")
    );
    // A whole keyspace: keyspace, types, tables (the attached log left out, its ALTER after
    // its base).
    let all = describe(&session, "DESC KEYSPACE ks").await;
    let kinds: Vec<(&str, &str)> = all.iter().map(|r| (r.1.as_str(), r.2.as_str())).collect();
    assert_eq!(
        kinds,
        [
            ("keyspace", "ks"),
            ("type", "ut"),
            ("table", "t"),
            ("table", "t_scylla_cdc_log")
        ]
    );
    assert_eq!(describe(&session, "DESC ks").await, all);
    assert_eq!(
        describe(&session, "DESC ks.t").await,
        describe(&session, "DESCRIBE TABLE ks.t").await
    );
    assert_eq!(describe(&session, "DESC ks.ut").await, ut);
    let tables = describe(&session, "DESC TABLES").await;
    assert!(tables.contains(&("ks".into(), "table".into(), "t".into(), None)));
    assert!(
        !tables.iter().any(|r| r.2 == "t_scylla_cdc_log"),
        "{tables:?}"
    );
    assert!(tables.contains(&(
        "system_distributed".into(),
        "table".into(),
        "cdc_streams_descriptions_v2".into(),
        None
    )));
    let types = describe(&session, "DESC TYPES").await;
    assert_eq!(types, vec![("ks".into(), "type".into(), "ut".into(), None)]);
    let keyspaces = describe(&session, "DESC KEYSPACES").await;
    let names: Vec<&str> = keyspaces.iter().map(|r| r.2.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(
        names.contains(&"ks") && names.contains(&"system_distributed"),
        "{names:?}"
    );
    assert!(describe(&session, "DESC FUNCTIONS").await.is_empty());
    assert!(describe(&session, "DESC AGGREGATES").await.is_empty());
    // A detached log (CDC disabled on its base) is an ordinary table again: listed, and
    // described without the comment; its base no longer brings an ALTER for it.
    run(&session, "ALTER TABLE ks.t WITH cdc = {'enabled': false}").await;
    let tables = describe(&session, "DESC TABLES").await;
    assert!(
        tables.iter().any(|r| r.2 == "t_scylla_cdc_log"),
        "{tables:?}"
    );
    let log = describe(&session, "DESC TABLE ks.t_scylla_cdc_log").await;
    assert!(
        log[0]
            .3
            .as_deref()
            .unwrap_or("")
            .starts_with("CREATE TABLE ks.t_scylla_cdc_log (")
    );
    let base = describe(&session, "DESC TABLE ks.t").await;
    assert_eq!(base.len(), 1, "{base:#?}");
    assert!(
        base[0]
            .3
            .as_deref()
            .unwrap_or("")
            .contains("AND cdc = {'delta': 'full', 'enabled': 'false',")
    );
    run(&session, "ALTER TABLE ks.t WITH cdc = {'enabled': true}").await;
    // DESC SCHEMA has user keyspaces only; FULL SCHEMA the system ones too.
    let schema = describe(&session, "DESC SCHEMA").await;
    assert!(schema.iter().all(|r| r.0 == "ks"), "{schema:?}");
    let full = describe(&session, "DESC FULL SCHEMA").await;
    for ks in ["system", "system_schema", "system_distributed", "ks"] {
        assert!(full.iter().any(|r| r.1 == "keyspace" && r.2 == ks), "{ks}");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_names_are_quoted_and_errors_are_scylla_s() {
    let cluster = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = cluster.session().await.expect("session");
    run(
        &session,
        "CREATE KEYSPACE \"Quoted_KS\" WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
    )
    .await;
    run(
        &session,
        "CREATE TABLE \"Quoted_KS\".\"Quoted_TABLE\" (a int PRIMARY KEY, \"!@#$%\" int)",
    )
    .await;
    let desc = describe(&session, "DESC TABLE \"Quoted_KS\".\"Quoted_TABLE\"").await;
    assert_eq!(
        (desc[0].0.as_str(), desc[0].2.as_str()),
        ("\"Quoted_KS\"", "\"Quoted_TABLE\"")
    );
    let statement = desc[0].3.as_deref().unwrap_or("");
    assert!(
        statement.starts_with(
            "CREATE TABLE \"Quoted_KS\".\"Quoted_TABLE\" (\n    a int,\n    \"!@#$%\" int,"
        ),
        "{statement}"
    );
    let keyspaces = describe(&session, "DESC KEYSPACES").await;
    assert!(keyspaces.contains(&(
        "\"Quoted_KS\"".into(),
        "keyspace".into(),
        "\"Quoted_KS\"".into(),
        None
    )));
    // The generic form takes unquoted words as written.
    assert!(
        error(&session, "DESC quoted_ks")
            .await
            .contains("'quoted_ks' not found in keyspaces")
    );
    assert_eq!(describe(&session, "DESC \"Quoted_KS\"").await.len(), 2);

    for (cql, message) in [
        ("DESC KEYSPACE nope", "'nope' not found in keyspaces"),
        ("DESC KEYSPACE", "'' not found in keyspaces"),
        (
            "DESC TABLE t",
            "No keyspace specified and no current keyspace",
        ),
        ("DESC TABLE nope.t", "'nope' not found in keyspaces"),
        (
            "DESC TABLE \"Quoted_KS\".t",
            "Table 't' not found in keyspace 'Quoted_KS'",
        ),
        (
            "DESC TYPE \"Quoted_KS\".t",
            "Type 't' not found in keyspace 'Quoted_KS'",
        ),
        (
            "DESC INDEX \"Quoted_KS\".i",
            "Table for existing index 'i' not found in 'Quoted_KS'",
        ),
        (
            "DESC MATERIALIZED VIEW \"Quoted_KS\".v",
            "Materialized view 'v' not found in keyspace 'Quoted_KS'",
        ),
        (
            "DESC FUNCTION \"Quoted_KS\".f",
            "Function 'f' not found in keyspace 'Quoted_KS'",
        ),
        (
            "DESC AGGREGATE \"Quoted_KS\".a",
            "Aggregate 'a' not found in keyspace 'Quoted_KS'",
        ),
        ("DESC nothing", "'nothing' not found in keyspaces"),
        (
            "DESC \"Quoted_KS\".nothing",
            "'nothing' not found in keyspace 'Quoted_KS'",
        ),
        ("DESC nope.nothing", "'nothing' not found in keyspaces"),
        (
            "DESC TABLE t WITH INTERNALS AND PASSWORDS",
            "Option WITH PASSWORDS is only allowed with DESC SCHEMA",
        ),
        (
            "DESC SCHEMA WITH INTERNALS AND PASSWORDS",
            "DESCRIBE SCHEMA WITH INTERNALS AND PASSWORDS can only be issued by a superuser",
        ),
    ] {
        let e = error(&session, cql).await;
        assert!(e.contains(message), "{cql}: {e}");
    }
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_follows_the_current_keyspace() {
    let cluster = EmbeddedCluster::builder()
        .nodes(3)
        .start()
        .await
        .expect("cluster");
    let session = cluster.session().await.expect("session");
    run(
        &session,
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 2} \
         AND tablets = {'enabled': false}",
    )
    .await;
    run(&session, "CREATE TABLE ks.b (pk int PRIMARY KEY)").await;
    run(&session, "CREATE TABLE ks.a (pk int PRIMARY KEY)").await;
    session.use_keyspace("ks", false).await.expect("use");
    assert_eq!(
        describe(&session, "DESC TABLES").await,
        vec![
            ("ks".into(), "table".into(), "a".into(), None),
            ("ks".into(), "table".into(), "b".into(), None)
        ]
    );
    assert_eq!(
        describe(&session, "DESC TABLE a").await,
        describe(&session, "DESC TABLE ks.a").await
    );
    assert_eq!(
        describe(&session, "DESC a").await,
        describe(&session, "DESC TABLE ks.a").await
    );
    assert_eq!(
        describe(&session, "DESC KEYSPACE").await,
        describe(&session, "DESC KEYSPACE ks").await
    );
    // DESC CLUSTER adds each range's replicas of the current (vnode) keyspace.
    let rows = session
        .query_unpaged("DESC CLUSTER", ())
        .await
        .expect("cluster")
        .into_rows_result()
        .expect("rows");
    let names: Vec<&str> = rows.column_specs().iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["cluster", "partitioner", "snitch", "range_ownership"]
    );
    let row = rows.single_row::<Row>().expect("one row");
    let text = |i: usize| match &row.columns[i] {
        Some(CqlValue::Text(s)) => s.clone(),
        other => panic!("{other:?}"),
    };
    assert!(!text(0).is_empty());
    assert_eq!(text(1), "org.apache.cassandra.dht.Murmur3Partitioner");
    let Some(CqlValue::Map(ranges)) = &row.columns[3] else {
        panic!("range_ownership: {:?}", row.columns[3]);
    };
    assert_eq!(ranges.len(), 3 * 16, "one range per vnode token");
    let nodes: BTreeSet<String> = cluster
        .node_addresses()
        .iter()
        .map(|a| a.ip().to_string())
        .collect();
    let mut ends = Vec::new();
    for (end, replicas) in ranges {
        let (CqlValue::Text(end), CqlValue::List(replicas)) = (end, replicas) else {
            panic!("{end:?} {replicas:?}");
        };
        ends.push(end.parse::<i64>().expect("token"));
        let replicas: BTreeSet<String> = replicas
            .iter()
            .map(|r| match r {
                CqlValue::Text(r) => r.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(replicas.len(), 2, "RF 2: {replicas:?}");
        assert!(replicas.is_subset(&nodes), "{replicas:?}");
    }
    // Ranges in order of their start token: the wrap-around range (ending at the first
    // token) comes last.
    let first = ends.remove(ends.len() - 1);
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "{ends:?}");
    assert!(first < ends[0], "{first} {ends:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_keyspace_system_distributed_with_internals_as_gocql_sends_it() {
    let cluster = EmbeddedCluster::builder().start().await.expect("cluster");
    let session = cluster.session().await.expect("session");
    let desc = describe(
        &session,
        "DESCRIBE KEYSPACE system_distributed WITH INTERNALS",
    )
    .await;
    assert_eq!(
        desc[0].3.as_deref(),
        Some(
            "CREATE KEYSPACE system_distributed WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', \
         'replication_factor': '3'} AND durable_writes = true AND tablets = {'enabled': false};"
        )
    );
    let names: Vec<&str> = desc.iter().map(|r| r.2.as_str()).collect();
    assert!(
        names.contains(&"cdc_generation_timestamps")
            && names.contains(&"cdc_streams_descriptions_v2"),
        "{names:?}"
    );
    let generations = desc
        .iter()
        .find(|r| r.2 == "cdc_generation_timestamps")
        .and_then(|r| r.3.as_deref())
        .unwrap_or("");
    assert!(generations.contains("WITH ID = "), "{generations}");
    assert!(
        generations.contains("CLUSTERING ORDER BY (time DESC)"),
        "{generations}"
    );
    cluster.shutdown().await;
}
