//! The built-in system keyspaces and their tables, with the exact column names and types real
//! Scylla has (driver contract §2–§3, semantics §5).
//!
//! - `system`: `local` and `peers` (rendered per coordinator node), and the tablet CDC
//!   tables `cdc_timestamps` and `cdc_streams` (virtual, computed from the tablet stream sets).
//! - `system_schema`: every table Scylla 2025.x has there, with its columns and types
//!   (`db/schema_tables.cc`): `keyspaces`, `scylla_keyspaces`, `tables`, `scylla_tables`,
//!   `columns`, `view_virtual_columns`, `computed_columns`, `dropped_columns`, `triggers`,
//!   `types`, `functions`, `aggregates`, `scylla_aggregates`, `views`, `indexes` (rendered
//!   from the schema snapshot; those for objects the embedded cluster cannot create, such as
//!   functions, views and indexes, are always empty).
//! - `system_distributed`: `cdc_generation_timestamps` and `cdc_streams_descriptions_v2`,
//!   stored tables the cluster writes when it creates a generation (`SimpleStrategy`, RF 3,
//!   which makes QUORUM reads fail on a one-node cluster exactly as on Scylla).
//! - `system_traces`: `sessions`, `sessions_time_idx`, `events`, `node_slow_log`,
//!   `node_slow_log_time_idx` (always empty: tracing is not implemented).

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::keyspace::{KeyspaceDef, Replication};
use super::options::TableOptions;
use super::table::{ClusteringOrder, ColumnDef, ColumnKind, DroppedColumn, TableDef, TableKind};
use crate::types::CqlType;

/// `system`
pub(crate) const SYSTEM: &str = "system";
/// `system_schema`
pub(crate) const SYSTEM_SCHEMA: &str = "system_schema";
/// `system_distributed`
pub(crate) const SYSTEM_DISTRIBUTED: &str = "system_distributed";
/// `system_traces`
pub(crate) const SYSTEM_TRACES: &str = "system_traces";

/// `system_distributed.cdc_generation_timestamps`
pub(crate) const CDC_GENERATION_TIMESTAMPS: &str = "cdc_generation_timestamps";
/// `system_distributed.cdc_streams_descriptions_v2`
pub(crate) const CDC_STREAMS_DESCRIPTIONS_V2: &str = "cdc_streams_descriptions_v2";
/// `system.cdc_timestamps`
pub(crate) const CDC_TIMESTAMPS: &str = "cdc_timestamps";
/// `system.cdc_streams`
pub(crate) const CDC_STREAMS: &str = "cdc_streams";

fn text() -> CqlType {
    CqlType::Text
}

fn frozen_map(k: CqlType, v: CqlType) -> CqlType {
    CqlType::Map {
        key: Box::new(k),
        value: Box::new(v),
        frozen: true,
    }
}

fn text_map() -> CqlType {
    frozen_map(text(), text())
}

fn frozen_list(e: CqlType) -> CqlType {
    CqlType::List {
        elem: Box::new(e),
        frozen: true,
    }
}

/// Column shorthand: `(name, type, kind)`, positions assigned in the order given.
struct Spec {
    keyspace: &'static str,
    name: &'static str,
    partition: Vec<(&'static str, CqlType)>,
    clustering: Vec<(&'static str, CqlType, ClusteringOrder)>,
    regular: Vec<(&'static str, CqlType)>,
    kind: TableKind,
    comment: &'static str,
}

impl Spec {
    fn build(self) -> TableDef {
        let mut columns = Vec::new();
        for (i, (name, typ)) in self.partition.into_iter().enumerate() {
            columns.push(ColumnDef {
                name: name.into(),
                typ,
                kind: ColumnKind::PartitionKey,
                position: i as i32,
                order: ClusteringOrder::Asc,
                id: 0,
            });
        }
        for (i, (name, typ, order)) in self.clustering.into_iter().enumerate() {
            columns.push(ColumnDef {
                name: name.into(),
                typ,
                kind: ColumnKind::Clustering,
                position: i as i32,
                order,
                id: 0,
            });
        }
        for (name, typ) in self.regular {
            columns.push(ColumnDef {
                name: name.into(),
                typ,
                kind: ColumnKind::Regular,
                position: -1,
                order: ClusteringOrder::Asc,
                id: 0,
            });
        }
        let options = TableOptions {
            comment: self.comment.into(),
            ..TableOptions::default()
        };
        let mut t = TableDef::new(self.keyspace, self.name, columns, options, self.kind);
        // System tables have stable name-based (MD5, version 3) ids, like Scylla's legacy ids.
        t.id = Uuid::new_v3(
            &Uuid::NAMESPACE_OID,
            format!("{}.{}", self.keyspace, self.name).as_bytes(),
        );
        t
    }
}

use ClusteringOrder::{Asc, Desc};

impl TableDef {
    /// `system.local` as Scylla defines it removes four old columns at the maximum write
    /// timestamp (`system_keyspace::local()`), and they are listed in
    /// `system_schema.dropped_columns`.
    fn with_local_dropped_columns(mut self) -> TableDef {
        for (name, typ) in [
            ("scylla_cpu_sharding_algorithm", text()),
            ("scylla_nr_shards", CqlType::Int),
            ("scylla_msb_ignore", CqlType::Int),
            ("thrift_version", text()),
        ] {
            self.dropped_columns.insert(
                name.into(),
                DroppedColumn {
                    dropped_at: i64::MAX,
                    typ,
                },
            );
        }
        self
    }

    /// `gc_grace_seconds = 0`, as Scylla sets it on `system.local` and `system.peers`.
    fn without_gc_grace(mut self) -> TableDef {
        self.options.gc_grace_seconds = 0;
        self
    }
}

fn system_tables() -> Vec<TableDef> {
    let tokens = CqlType::Set {
        elem: Box::new(text()),
        frozen: false,
    };
    vec![
        Spec {
            keyspace: SYSTEM,
            name: "local",
            partition: vec![("key", text())],
            clustering: vec![],
            regular: vec![
                ("bootstrapped", text()),
                ("broadcast_address", CqlType::Inet),
                ("cluster_name", text()),
                ("cql_version", text()),
                ("data_center", text()),
                ("gossip_generation", CqlType::Int),
                ("host_id", CqlType::Uuid),
                ("listen_address", CqlType::Inet),
                ("native_protocol_version", text()),
                ("partitioner", text()),
                ("rack", text()),
                ("release_version", text()),
                ("rpc_address", CqlType::Inet),
                ("schema_version", CqlType::Uuid),
                ("supported_features", text()),
                ("tokens", tokens.clone()),
                (
                    "truncated_at",
                    CqlType::Map {
                        key: Box::new(CqlType::Uuid),
                        value: Box::new(CqlType::Blob),
                        frozen: false,
                    },
                ),
            ],
            kind: TableKind::Virtual,
            comment: "information about the local node",
        }
        .build()
        .with_local_dropped_columns()
        .without_gc_grace(),
        Spec {
            keyspace: SYSTEM,
            name: "peers",
            partition: vec![("peer", CqlType::Inet)],
            clustering: vec![],
            regular: vec![
                ("data_center", text()),
                ("host_id", CqlType::Uuid),
                ("preferred_ip", CqlType::Inet),
                ("rack", text()),
                ("release_version", text()),
                ("rpc_address", CqlType::Inet),
                ("schema_version", CqlType::Uuid),
                ("supported_features", text()),
                ("tokens", tokens),
            ],
            kind: TableKind::Virtual,
            comment: "information about known peers in the cluster",
        }
        .build()
        .without_gc_grace(),
        // Scylla's view builder inserts a row here once a view (or an index's backing view)
        // has been built from its base; the embedded cluster builds at CREATE, so every view
        // is listed. Clients wait on this table before reading a new view.
        Spec {
            keyspace: SYSTEM,
            name: "built_views",
            partition: vec![("keyspace_name", text())],
            clustering: vec![("view_name", text(), Asc)],
            regular: vec![],
            kind: TableKind::Virtual,
            comment: "built views",
        }
        .build()
        .without_gc_grace(),
        Spec {
            keyspace: SYSTEM,
            name: CDC_TIMESTAMPS,
            partition: vec![("keyspace_name", text()), ("table_name", text())],
            clustering: vec![("timestamp", CqlType::Timestamp, Desc)],
            regular: vec![],
            kind: TableKind::Virtual,
            comment: "CDC generations for tablets-based tables",
        }
        .build(),
        Spec {
            keyspace: SYSTEM,
            name: CDC_STREAMS,
            partition: vec![("keyspace_name", text()), ("table_name", text())],
            clustering: vec![
                ("timestamp", CqlType::Timestamp, Asc),
                ("stream_state", CqlType::Tinyint, Asc),
                ("stream_id", CqlType::Blob, Asc),
            ],
            regular: vec![],
            kind: TableKind::Virtual,
            comment: "CDC streams for each generation for tablets-based tables",
        }
        .build(),
    ]
}

fn system_schema_tables() -> Vec<TableDef> {
    let ks = || vec![("keyspace_name", text())];
    let common_table_props = || {
        vec![
            ("bloom_filter_fp_chance", CqlType::Double),
            ("caching", text_map()),
            ("comment", text()),
            ("compaction", text_map()),
            ("compression", text_map()),
            ("crc_check_chance", CqlType::Double),
            ("dclocal_read_repair_chance", CqlType::Double),
            ("default_time_to_live", CqlType::Int),
            ("extensions", frozen_map(text(), CqlType::Blob)),
            ("gc_grace_seconds", CqlType::Int),
            ("id", CqlType::Uuid),
            ("max_index_interval", CqlType::Int),
            ("memtable_flush_period_in_ms", CqlType::Int),
            ("min_index_interval", CqlType::Int),
            ("read_repair_chance", CqlType::Double),
            ("speculative_retry", text()),
        ]
    };
    let text_list = || frozen_list(text());
    let mut tables_regular = common_table_props();
    tables_regular.push((
        "flags",
        CqlType::Set {
            elem: Box::new(text()),
            frozen: true,
        },
    ));
    let mut views_regular = common_table_props();
    views_regular.extend([
        ("base_table_id", CqlType::Uuid),
        ("base_table_name", text()),
        ("where_clause", text()),
        ("include_all_columns", CqlType::Boolean),
    ]);
    let sys = |name, clustering, regular, comment| {
        Spec {
            keyspace: SYSTEM_SCHEMA,
            name,
            partition: ks(),
            clustering,
            regular,
            kind: TableKind::Virtual,
            comment,
        }
        .build()
    };
    vec![
        sys(
            "keyspaces",
            vec![],
            vec![
                ("durable_writes", CqlType::Boolean),
                ("replication", text_map()),
            ],
            "keyspace definitions",
        ),
        sys(
            "scylla_keyspaces",
            vec![],
            vec![
                ("storage_type", text()),
                ("storage_options", text_map()),
                ("initial_tablets", CqlType::Int),
            ],
            "scylla-specific information for keyspaces",
        ),
        sys(
            "tables",
            vec![("table_name", text(), Asc)],
            tables_regular,
            "table definitions",
        ),
        sys(
            "scylla_tables",
            vec![("table_name", text(), Asc)],
            // With the IN_MEMORY_TABLES and GROUP0_SCHEMA_VERSIONING schema features, which
            // every 2025.x cluster has enabled.
            vec![
                ("version", CqlType::Uuid),
                ("cdc", text_map()),
                ("partitioner", text()),
                ("in_memory", CqlType::Boolean),
                ("committed_by_group0", CqlType::Boolean),
                ("tablets", text_map()),
            ],
            "scylla-specific information for tables",
        ),
        sys(
            "columns",
            vec![("table_name", text(), Asc), ("column_name", text(), Asc)],
            vec![
                ("clustering_order", text()),
                ("column_name_bytes", CqlType::Blob),
                ("kind", text()),
                ("position", CqlType::Int),
                ("type", text()),
            ],
            "column definitions",
        ),
        sys(
            "view_virtual_columns",
            vec![("table_name", text(), Asc), ("column_name", text(), Asc)],
            vec![
                ("clustering_order", text()),
                ("column_name_bytes", CqlType::Blob),
                ("kind", text()),
                ("position", CqlType::Int),
                ("type", text()),
            ],
            "column definitions",
        ),
        sys(
            "computed_columns",
            vec![("table_name", text(), Asc), ("column_name", text(), Asc)],
            vec![("computation", CqlType::Blob)],
            "computed columns",
        ),
        sys(
            "dropped_columns",
            vec![("table_name", text(), Asc), ("column_name", text(), Asc)],
            vec![("dropped_time", CqlType::Timestamp), ("type", text())],
            "dropped column registry",
        ),
        sys(
            "types",
            vec![("type_name", text(), Asc)],
            vec![
                ("field_names", frozen_list(text())),
                ("field_types", frozen_list(text())),
            ],
            "user defined type definitions",
        ),
        sys(
            "triggers",
            vec![("table_name", text(), Asc), ("trigger_name", text(), Asc)],
            vec![("options", text_map())],
            "trigger definitions",
        ),
        sys(
            "functions",
            vec![
                ("function_name", text(), Asc),
                ("argument_types", text_list(), Asc),
            ],
            vec![
                ("argument_names", text_list()),
                ("body", text()),
                ("language", text()),
                ("return_type", text()),
                ("called_on_null_input", CqlType::Boolean),
            ],
            "user defined function definitions",
        ),
        sys(
            "aggregates",
            vec![
                ("aggregate_name", text(), Asc),
                ("argument_types", text_list(), Asc),
            ],
            vec![
                ("final_func", text()),
                ("initcond", text()),
                ("return_type", text()),
                ("state_func", text()),
                ("state_type", text()),
            ],
            "user defined aggregate definitions",
        ),
        sys(
            "scylla_aggregates",
            vec![
                ("aggregate_name", text(), Asc),
                ("argument_types", text_list(), Asc),
            ],
            vec![("reduce_func", text()), ("state_type", text())],
            "scylla-specific information for user defined aggregates",
        ),
        sys(
            "views",
            vec![("view_name", text(), Asc)],
            views_regular,
            "view definitions",
        ),
        sys(
            "indexes",
            vec![("table_name", text(), Asc), ("index_name", text(), Asc)],
            vec![("kind", text()), ("options", text_map())],
            "secondary index definitions",
        ),
    ]
}

fn system_distributed_tables() -> Vec<TableDef> {
    vec![
        Spec {
            keyspace: SYSTEM_DISTRIBUTED,
            name: CDC_GENERATION_TIMESTAMPS,
            partition: vec![("key", text())],
            clustering: vec![("time", CqlType::Timestamp, Desc)],
            regular: vec![("expired", CqlType::Timestamp)],
            kind: TableKind::System,
            comment: "",
        }
        .build(),
        Spec {
            keyspace: SYSTEM_DISTRIBUTED,
            name: CDC_STREAMS_DESCRIPTIONS_V2,
            partition: vec![("time", CqlType::Timestamp)],
            clustering: vec![("range_end", CqlType::Bigint, Asc)],
            regular: vec![(
                "streams",
                CqlType::Set {
                    elem: Box::new(CqlType::Blob),
                    frozen: true,
                },
            )],
            kind: TableKind::System,
            comment: "",
        }
        .build(),
    ]
}

/// The tracing tables as Scylla creates them (`tracing/trace_keyspace_helper.cc`): plain CQL
/// tables with a default TTL of one day and no comment.
fn system_traces_tables() -> Vec<TableDef> {
    let traces = |name, partition, clustering, regular| {
        let mut t = Spec {
            keyspace: SYSTEM_TRACES,
            name,
            partition,
            clustering,
            regular,
            kind: TableKind::System,
            comment: "",
        }
        .build();
        t.options.default_time_to_live = 86400;
        t
    };
    let parameters = || CqlType::Map {
        key: Box::new(text()),
        value: Box::new(text()),
        frozen: false,
    };
    vec![
        traces(
            "sessions",
            vec![("session_id", CqlType::Uuid)],
            vec![],
            vec![
                ("client", CqlType::Inet),
                ("command", text()),
                ("coordinator", CqlType::Inet),
                ("duration", CqlType::Int),
                ("parameters", parameters()),
                ("request", text()),
                ("request_size", CqlType::Int),
                ("response_size", CqlType::Int),
                ("started_at", CqlType::Timestamp),
                ("username", text()),
            ],
        ),
        traces(
            "sessions_time_idx",
            vec![("minute", CqlType::Timestamp)],
            vec![
                ("started_at", CqlType::Timestamp, Asc),
                ("session_id", CqlType::Uuid, Asc),
            ],
            vec![],
        ),
        traces(
            "events",
            vec![("session_id", CqlType::Uuid)],
            vec![("event_id", CqlType::Timeuuid, Asc)],
            vec![
                ("activity", text()),
                ("scylla_parent_id", CqlType::Bigint),
                ("scylla_span_id", CqlType::Bigint),
                ("source", CqlType::Inet),
                ("source_elapsed", CqlType::Int),
                ("thread", text()),
            ],
        ),
        traces(
            "node_slow_log",
            vec![("start_time", CqlType::Timeuuid)],
            vec![
                ("node_ip", CqlType::Inet, Asc),
                ("shard", CqlType::Int, Asc),
            ],
            vec![
                ("command", text()),
                ("date", CqlType::Timestamp),
                ("duration", CqlType::Int),
                ("parameters", parameters()),
                ("session_id", CqlType::Uuid),
                ("source_ip", CqlType::Inet),
                (
                    "table_names",
                    CqlType::Set {
                        elem: Box::new(text()),
                        frozen: false,
                    },
                ),
                ("username", text()),
            ],
        ),
        traces(
            "node_slow_log_time_idx",
            vec![("minute", CqlType::Timestamp)],
            vec![
                ("started_at", CqlType::Timestamp, Asc),
                ("session_id", CqlType::Uuid, Asc),
            ],
            vec![
                ("node_ip", CqlType::Inet),
                ("shard", CqlType::Int),
                ("start_time", CqlType::Timeuuid),
            ],
        ),
    ]
}

fn keyspace(name: &str, replication: &[(&str, &str)], tables: Vec<TableDef>) -> KeyspaceDef {
    KeyspaceDef {
        name: name.into(),
        replication: Replication {
            options: replication
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        durable_writes: true,
        initial_tablets: None,
        tables: tables
            .into_iter()
            .map(|t| (t.name.clone(), Arc::new(t)))
            .collect(),
        types: BTreeMap::new(),
        system: true,
    }
}

/// Fully qualified class of `LocalStrategy`.
pub(crate) const LOCAL_STRATEGY: &str = "org.apache.cassandra.locator.LocalStrategy";
/// Fully qualified class of `SimpleStrategy`.
pub(crate) const SIMPLE_STRATEGY: &str = "org.apache.cassandra.locator.SimpleStrategy";
/// Fully qualified class of `NetworkTopologyStrategy`.
pub(crate) const NETWORK_TOPOLOGY_STRATEGY: &str =
    "org.apache.cassandra.locator.NetworkTopologyStrategy";

/// The built-in system keyspaces, as a fresh cluster has them.
pub(crate) fn system_keyspaces() -> Vec<KeyspaceDef> {
    vec![
        keyspace(SYSTEM, &[("class", LOCAL_STRATEGY)], system_tables()),
        keyspace(
            SYSTEM_SCHEMA,
            &[("class", LOCAL_STRATEGY)],
            system_schema_tables(),
        ),
        keyspace(
            SYSTEM_DISTRIBUTED,
            &[("class", SIMPLE_STRATEGY), ("replication_factor", "3")],
            system_distributed_tables(),
        ),
        keyspace(
            SYSTEM_TRACES,
            &[("class", SIMPLE_STRATEGY), ("replication_factor", "2")],
            system_traces_tables(),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_metadata_columns_exist_with_the_contract_types() {
        let keyspaces = system_keyspaces();
        let find = |ks: &str, t: &str| {
            keyspaces
                .iter()
                .find(|k| k.name == ks)
                .and_then(|k| k.tables.get(t))
                .cloned()
                .unwrap_or_else(|| panic!("{ks}.{t} missing"))
        };
        let local = find(SYSTEM, "local");
        for (name, typ) in [
            ("host_id", "uuid"),
            ("rpc_address", "inet"),
            ("data_center", "text"),
            ("rack", "text"),
            ("tokens", "set<text>"),
            ("cluster_name", "text"),
            ("schema_version", "uuid"),
        ] {
            assert_eq!(
                local.column(name).map(|c| c.typ.to_string()).as_deref(),
                Some(typ),
                "system.local.{name}"
            );
        }
        assert!(find(SYSTEM, "peers").column("peer").is_some());
        let columns = find(SYSTEM_SCHEMA, "columns");
        let names: Vec<&str> = columns.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "keyspace_name",
                "table_name",
                "column_name",
                "clustering_order",
                "column_name_bytes",
                "kind",
                "position",
                "type"
            ]
        );
        let gen_ts = find(SYSTEM_DISTRIBUTED, CDC_GENERATION_TIMESTAMPS);
        assert_eq!(
            gen_ts.column("time").map(|c| c.order),
            Some(ClusteringOrder::Desc)
        );
        let streams = find(SYSTEM_DISTRIBUTED, CDC_STREAMS_DESCRIPTIONS_V2);
        assert_eq!(
            streams
                .column("streams")
                .map(|c| c.typ.to_string())
                .as_deref(),
            Some("frozen<set<blob>>")
        );
        assert_eq!(
            find(SYSTEM_SCHEMA, "keyspaces")
                .column("replication")
                .map(|c| c.typ.to_string())
                .as_deref(),
            Some("frozen<map<text, text>>")
        );
    }

    #[test]
    fn system_distributed_is_simple_strategy_rf3() {
        let ks = system_keyspaces()
            .into_iter()
            .find(|k| k.name == SYSTEM_DISTRIBUTED)
            .expect("present");
        assert_eq!(ks.replication.class(), SIMPLE_STRATEGY);
        assert_eq!(ks.replication.factor("datacenter1"), 3);
    }
}
