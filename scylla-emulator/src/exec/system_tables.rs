//! The rows of the virtual system tables (`TableKind::Virtual`), computed on read.
//!
//! [`virtual_table_rows`] renders one virtual table as seen from the coordinator described by
//! a [`SystemView`] (schema snapshot, topology, coordinator node, CDC stream metadata) as
//! [`PartitionMutation`]s; the executor applies them to a fresh `TableData` and runs the
//! SELECT on it, so filtering, paging and column selection work as for any table.
//!
//! - `system.local`: the coordinator itself; `system.peers`: every *other* node, up or down
//!   (driver contract §2).
//! - `system_schema.*`: keyspaces, tables, columns, dropped columns and user types of every
//!   keyspace, user and system alike (contract §3), with the CDC extension and partitioner
//!   (semantics §1.1, §1.3), written as Scylla writes them (`db/schema_tables.cc`), and
//!   the secondary indexes (`indexes`) with their backing views (`views`, their columns in
//!   `columns`, `computed_columns` and `view_virtual_columns`, and `scylla_tables`), as
//!   `make_view_mutations` writes them. The tables of objects the embedded cluster has no
//!   way to create (`triggers`, `functions`, `aggregates`, `scylla_aggregates`) are always
//!   empty.
//! - `system.cdc_timestamps` / `system.cdc_streams`: the stream sets of every CDC table of a
//!   tablet keyspace (semantics §5.4), from the cluster's [`CdcState`].

use std::collections::HashMap;
use std::net::IpAddr;

use bytes::Bytes;

use crate::cdc::generations::CdcState;
use crate::cluster::partitioner::{murmur3_token, serialize_partition_key};
use crate::cluster::{CLUSTER_NAME, DATACENTER, NodeInfo, RACK, RELEASE_VERSION, Topology};
use crate::schema::index::IndexTarget;
use crate::schema::index_view::Computed;
use crate::schema::system::{CDC_STREAMS, CDC_TIMESTAMPS, LOCAL_STRATEGY, SYSTEM, SYSTEM_SCHEMA};
use crate::schema::{ColumnDef, ColumnKind, IndexDef, Schema, TableDef};
use crate::storage::{
    CellUpdate, ClusteringKey, ColumnId, ElementUpdate, Liveness, PartitionKey, PartitionMutation,
    RowUpdate,
};
use crate::types::CqlType;
use crate::types::value::Value;

/// What a virtual table shows depends on: the schema, the nodes, and which node answers.
pub(crate) struct SystemView<'a> {
    /// The schema snapshot the query runs against.
    pub(crate) schema: &'a Schema,
    /// The nodes of the cluster.
    pub(crate) topology: &'a Topology,
    /// Node index (1-based) answering the query.
    pub(crate) coordinator: usize,
    /// CDC generations and tablet stream sets.
    pub(crate) cdc: &'a CdcState,
}

/// Write timestamp of every rendered cell.
const RENDER_TS: i64 = 1;

/// CQL version every node reports.
const CQL_VERSION: &str = "3.3.1";

/// Native protocol version every node reports.
const NATIVE_PROTOCOL_VERSION: &str = "4";

/// The cluster's partitioner.
const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";

/// Features the nodes report in `supported_features` (informational only).
const SUPPORTED_FEATURES: &str = "CDC,CDC_GENERATIONS_V2,COMPUTED_COLUMNS,CORRECT_COUNTER_ORDER,\
CORRECT_NON_COMPOUND_RANGE_TOMBSTONES,CORRECT_STATIC_COMPACT_IN_MC,COUNTERS,DIGEST_FOR_NULL_VALUES,\
DIGEST_INSENSITIVE_TO_EXPIRY,HINTED_HANDOFF_SEPARATE_CONNECTION,LA_SSTABLE_FORMAT,LWT,\
MATERIALIZED_VIEWS,MC_SSTABLE_FORMAT,MD_SSTABLE_FORMAT,ME_SSTABLE_FORMAT,NONFROZEN_UDTS,\
PARALLELIZED_AGGREGATION,PER_TABLE_CACHING,PER_TABLE_PARTITIONERS,RANGE_SCAN_DATA_VARIANT,\
RANGE_TOMBSTONES,ROLES,ROW_LEVEL_REPAIR,SCHEMA_TABLES_V3,STREAM_WITH_RPC_STREAM,TOMBSTONE_GC_OPTIONS,\
TRUNCATION_TABLE,TYPED_ERRORS_IN_READ_RPC,UDA,UNBOUNDED_RANGE_TOMBSTONES,VIEW_VIRTUAL_COLUMNS,\
WRITE_FAILURE_REPLY,XXHASH";

/// Rows of the virtual table `table` as seen from `view.coordinator`, as mutations to apply
/// to an empty table. Unknown virtual tables (and the tablet CDC tables, filled by the CDC
/// module) have no rows.
pub(crate) fn virtual_table_rows(
    table: &TableDef,
    view: &SystemView<'_>,
) -> Vec<PartitionMutation> {
    let mut rows = Rows::new(table);
    match (table.keyspace.as_str(), table.name.as_str()) {
        (SYSTEM, "local") => local(&mut rows, view),
        (SYSTEM, "peers") => peers(&mut rows, view),
        (SYSTEM, "built_views") => built_views(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "keyspaces") => keyspaces(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "scylla_keyspaces") => scylla_keyspaces(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "tables") => tables(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "scylla_tables") => scylla_tables(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "columns") => columns(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "dropped_columns") => dropped_columns(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "types") => types(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "indexes") => indexes(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "views") => {
            materialized_views(&mut rows, view.schema);
            views(&mut rows, view.schema);
        }
        (SYSTEM_SCHEMA, "computed_columns") => computed_columns(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "view_virtual_columns") => view_virtual_columns(&mut rows, view.schema),
        (SYSTEM, CDC_TIMESTAMPS) => cdc_timestamps(&mut rows, view),
        (SYSTEM, CDC_STREAMS) => cdc_streams(&mut rows, view),
        // No triggers, user-defined functions or aggregates can be created, so their tables
        // have no rows.
        _ => {}
    }
    rows.finish()
}

/// Accumulates rows of one table into one mutation per partition.
pub(crate) struct Rows<'t> {
    /// The table rendered.
    table: &'t TableDef,
    /// Write timestamp of every cell and row marker.
    ts: i64,
    /// Mutations in the order their partitions were first seen.
    partitions: Vec<PartitionMutation>,
    /// Index in `partitions` by serialized partition key.
    index: HashMap<Bytes, usize>,
}

impl<'t> Rows<'t> {
    /// An empty set of rows of `table`, written at the rendering timestamp.
    pub(crate) fn new(table: &'t TableDef) -> Rows<'t> {
        Rows::at(table, RENDER_TS)
    }

    /// An empty set of rows of `table` whose cells are written at `ts`.
    pub(crate) fn at(table: &'t TableDef, ts: i64) -> Rows<'t> {
        Rows {
            table,
            ts,
            partitions: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The mutations.
    pub(crate) fn finish(self) -> Vec<PartitionMutation> {
        self.partitions
    }

    /// Adds one row given as `(column, value)` pairs; null values and unknown columns are
    /// skipped. A row whose key is incomplete is skipped.
    pub(crate) fn add(&mut self, cells: Vec<(&str, Option<Value>)>) {
        let get = |name: &str| {
            cells
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| v.clone())
        };
        let Some(pk_values) = self
            .table
            .partition_key()
            .map(|c| get(&c.name))
            .collect::<Option<Vec<Value>>>()
        else {
            return;
        };
        let Some(ck_values) = self
            .table
            .clustering_key()
            .map(|c| get(&c.name))
            .collect::<Option<Vec<Value>>>()
        else {
            return;
        };
        let encoded: Vec<Bytes> = pk_values.iter().map(Value::to_bytes).collect();
        let Some(key_bytes) = serialize_partition_key(encoded.iter().map(|b| b.as_ref())) else {
            return;
        };
        let key_bytes = Bytes::from(key_bytes);
        let mut update = RowUpdate {
            marker: Some(Liveness {
                ts: self.ts,
                ttl: None,
            }),
            ..RowUpdate::default()
        };
        for column in self.table.value_columns() {
            if let Some(value) = get(&column.name) {
                update.set_cell(ColumnId(column.id), cell(&column.typ, value, self.ts));
            }
        }
        let i = match self.index.get(&key_bytes) {
            Some(i) => *i,
            None => {
                let token = murmur3_token(&key_bytes);
                self.partitions
                    .push(PartitionMutation::new(PartitionKey::new(
                        token,
                        key_bytes.clone(),
                        pk_values,
                    )));
                let i = self.partitions.len() - 1;
                self.index.insert(key_bytes, i);
                i
            }
        };
        if let Some(p) = self.partitions.get_mut(i) {
            if self.table.clustering_key().next().is_none() {
                let row = p.row_mut(&ClusteringKey::empty());
                *row = update;
            } else {
                p.rows.push((ClusteringKey::new(ck_values), update));
            }
        }
    }
}

/// The cell update writing `value` into a column of type `typ`: non-frozen sets and maps
/// are written element by element, everything else as one atomic cell.
fn cell(typ: &CqlType, value: Value, ts: i64) -> CellUpdate {
    let element = |key: Value, value: Value| ElementUpdate {
        key,
        ts,
        ttl: None,
        value: Some(value),
    };
    match (typ, &value) {
        (CqlType::Set { frozen: false, .. }, Value::Set(elems)) => CellUpdate::Collection {
            tombstone: None,
            elements: elems
                .iter()
                .map(|e| element(e.clone(), Value::Empty))
                .collect(),
        },
        (CqlType::Map { frozen: false, .. }, Value::Map(entries)) => CellUpdate::Collection {
            tombstone: None,
            elements: entries
                .iter()
                .map(|(k, v)| element(k.clone(), v.clone()))
                .collect(),
        },
        _ => CellUpdate::Atomic {
            ts,
            ttl: None,
            value: Some(value),
        },
    }
}

/// `system.cdc_timestamps`: one row per stream set of every CDC table of a tablet keyspace
/// (partition = base keyspace and table name; timestamps clustered newest first).
fn cdc_timestamps(rows: &mut Rows<'_>, view: &SystemView<'_>) {
    for (table_id, streams) in view.cdc.tablet_tables() {
        let Some(base) = view.schema.table_by_id(table_id) else {
            continue;
        };
        for (ts, _) in &streams.sets {
            rows.add(vec![
                ("keyspace_name", text(&base.keyspace)),
                ("table_name", text(&base.name)),
                ("timestamp", Some(Value::Timestamp(*ts))),
            ]);
        }
    }
}

/// `system.cdc_streams`: per stream set, every member (state 0), and the streams closed (1)
/// and opened (2) at its timestamp.
fn cdc_streams(rows: &mut Rows<'_>, view: &SystemView<'_>) {
    for (table_id, _) in view.cdc.tablet_tables() {
        let Some(base) = view.schema.table_by_id(table_id) else {
            continue;
        };
        for (ts, state, stream) in view.cdc.tablet_stream_rows(table_id) {
            rows.add(vec![
                ("keyspace_name", text(&base.keyspace)),
                ("table_name", text(&base.name)),
                ("timestamp", Some(Value::Timestamp(ts))),
                ("stream_state", Some(Value::Tinyint(state as i8))),
                ("stream_id", Some(Value::blob(stream.0))),
            ]);
        }
    }
}

/// A `text` value.
fn text(s: &str) -> Option<Value> {
    Some(Value::text(s))
}

/// A `map<text, text>` value.
fn text_map<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> Option<Value> {
    Some(Value::map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::text(k), Value::text(v)))
            .collect(),
    ))
}

/// A node's tokens as a `set<text>` of decimal strings.
fn tokens(node: &NodeInfo) -> Option<Value> {
    Some(Value::set(
        node.tokens
            .iter()
            .map(|t| Value::text(&t.to_string()))
            .collect(),
    ))
}

/// An `inet` value.
fn inet(ip: IpAddr) -> Option<Value> {
    Some(Value::Inet(ip))
}

/// `system.local`: the coordinator.
fn local(rows: &mut Rows<'_>, view: &SystemView<'_>) {
    let Some(node) = view.topology.node(view.coordinator) else {
        return;
    };
    rows.add(vec![
        ("key", text("local")),
        ("bootstrapped", text("COMPLETED")),
        ("broadcast_address", inet(node.ip)),
        ("cluster_name", text(CLUSTER_NAME)),
        ("cql_version", text(CQL_VERSION)),
        ("data_center", text(DATACENTER)),
        (
            "gossip_generation",
            view.topology
                .gossip_generations
                .get(&node.index)
                .map(|g| Value::Int(*g)),
        ),
        ("host_id", Some(Value::uuid(node.host_id))),
        ("listen_address", inet(node.ip)),
        ("native_protocol_version", text(NATIVE_PROTOCOL_VERSION)),
        ("partitioner", text(PARTITIONER)),
        ("rack", text(RACK)),
        ("release_version", text(RELEASE_VERSION)),
        ("rpc_address", inet(node.ip)),
        ("schema_version", Some(Value::uuid(view.schema.version))),
        ("supported_features", text(SUPPORTED_FEATURES)),
        ("tokens", tokens(node)),
    ]);
}

/// `system.peers`: every node but the coordinator, up or down.
fn peers(rows: &mut Rows<'_>, view: &SystemView<'_>) {
    for node in view
        .topology
        .nodes
        .iter()
        .filter(|n| n.index != view.coordinator)
    {
        rows.add(vec![
            ("peer", inet(node.ip)),
            ("data_center", text(DATACENTER)),
            ("host_id", Some(Value::uuid(node.host_id))),
            ("rack", text(RACK)),
            ("release_version", text(RELEASE_VERSION)),
            ("rpc_address", inet(node.ip)),
            ("schema_version", Some(Value::uuid(view.schema.version))),
            ("supported_features", text(SUPPORTED_FEATURES)),
            ("tokens", tokens(node)),
        ]);
    }
}

/// `system_schema.keyspaces`
fn keyspaces(rows: &mut Rows<'_>, schema: &Schema) {
    for ks in schema.keyspaces.values() {
        rows.add(vec![
            ("keyspace_name", text(&ks.name)),
            ("durable_writes", Some(Value::Boolean(ks.durable_writes))),
            ("replication", text_map(&ks.replication.options)),
        ]);
    }
}

/// `system_schema.scylla_keyspaces`: a row for each tablets keyspace.
fn scylla_keyspaces(rows: &mut Rows<'_>, schema: &Schema) {
    for ks in schema.keyspaces.values() {
        if let Some(n) = ks.initial_tablets {
            rows.add(vec![
                ("keyspace_name", text(&ks.name)),
                (
                    "initial_tablets",
                    Some(Value::Int(i32::try_from(n).unwrap_or(i32::MAX))),
                ),
            ]);
        }
    }
}

/// The IDL serialization of a `map<string, string>` (little-endian counts and lengths),
/// Scylla's format for map-valued schema extensions.
fn idl_string_map<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> Vec<u8> {
    let entries: Vec<(&String, &String)> = entries.into_iter().collect();
    let mut out = Vec::new();
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    out.extend_from_slice(&len(entries.len()));
    for (k, v) in entries {
        for s in [k, v] {
            out.extend_from_slice(&len(s.len()));
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

/// `system_schema.tables.extensions` of a table: `cdc` when the table ever had a `cdc`
/// option, `tombstone_gc` and `paxos_grace_seconds` when set.
fn extensions(table: &TableDef) -> Value {
    let mut entries = Vec::new();
    if let Some(cdc) = &table.options.cdc {
        entries.push((Value::text("cdc"), Value::blob(cdc.extension_blob())));
    }
    if let Some(gc) = &table.options.tombstone_gc {
        entries.push((Value::text("tombstone_gc"), Value::blob(idl_string_map(gc))));
    }
    if let Some(p) = table.options.paxos_grace_seconds {
        entries.push((
            Value::text("paxos_grace_seconds"),
            Value::blob(p.to_le_bytes()),
        ));
    }
    Value::map(entries)
}

/// The properties of a table or view as `add_table_params_to_mutations` writes them.
fn table_params(
    o: &crate::schema::TableOptions,
    extensions: Value,
) -> Vec<(&'static str, Option<Value>)> {
    vec![
        (
            "bloom_filter_fp_chance",
            Some(Value::Double(o.bloom_filter_fp_chance)),
        ),
        ("caching", text_map(&o.caching)),
        ("comment", text(&o.comment)),
        ("compaction", text_map(&o.compaction)),
        ("compression", text_map(&o.compression)),
        ("crc_check_chance", Some(Value::Double(o.crc_check_chance))),
        (
            "dclocal_read_repair_chance",
            Some(Value::Double(o.dclocal_read_repair_chance)),
        ),
        (
            "default_time_to_live",
            Some(Value::Int(o.default_time_to_live)),
        ),
        ("extensions", Some(extensions)),
        ("gc_grace_seconds", Some(Value::Int(o.gc_grace_seconds))),
        ("max_index_interval", Some(Value::Int(o.max_index_interval))),
        (
            "memtable_flush_period_in_ms",
            Some(Value::Int(o.memtable_flush_period_in_ms)),
        ),
        ("min_index_interval", Some(Value::Int(o.min_index_interval))),
        (
            "read_repair_chance",
            Some(Value::Double(o.read_repair_chance)),
        ),
        ("speculative_retry", text(&o.speculative_retry)),
    ]
}

/// `system_schema.views`: every materialized view, with its base and its properties
/// (`make_view_mutations`, db/schema_tables.cc). Its columns are in
/// `system_schema.columns`, under the view's name.
fn materialized_views(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        let Some(info) = t.view_info() else {
            continue;
        };
        let mut cells = vec![
            ("keyspace_name", text(&t.keyspace)),
            ("view_name", text(&t.name)),
            ("base_table_id", Some(Value::uuid(info.base_id))),
            ("base_table_name", text(&info.base)),
            ("where_clause", text(&info.where_clause)),
            (
                "include_all_columns",
                Some(Value::Boolean(info.include_all_columns)),
            ),
        ];
        cells.push(("id", Some(Value::uuid(t.id))));
        cells.extend(table_params(&t.options, extensions(t)));
        rows.add(cells);
    }
}

/// `system.built_views`: every materialized view and index view. The embedded cluster fills
/// a view from its base when it is created, so each one is built as soon as it exists.
fn built_views(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        if t.view_info().is_some() {
            rows.add(vec![
                ("keyspace_name", text(&t.keyspace)),
                ("view_name", text(&t.name)),
            ]);
        }
        for i in &t.indexes {
            rows.add(vec![
                ("keyspace_name", text(&t.keyspace)),
                ("view_name", text(&i.view_name())),
            ]);
        }
    }
}

/// `system_schema.tables`: every table of every keyspace, with all its properties (views
/// are in `system_schema.views`).
fn tables(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables().filter(|t| !t.is_view()) {
        let mut cells = vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&t.name)),
            (
                "flags",
                Some(Value::set(t.flags().into_iter().map(Value::text).collect())),
            ),
            ("id", Some(Value::uuid(t.id))),
        ];
        cells.extend(table_params(&t.options, extensions(t)));
        rows.add(cells);
    }
}

/// Every secondary index with its base table.
fn all_indexes(schema: &Schema) -> impl Iterator<Item = (&TableDef, &IndexDef)> {
    schema
        .tables()
        .flat_map(|t| t.indexes.iter().map(move |i| (t.as_ref(), i)))
}

/// `system_schema.indexes`: every secondary index (`add_index_to_schema_mutation`).
fn indexes(rows: &mut Rows<'_>, schema: &Schema) {
    for (t, i) in all_indexes(schema) {
        rows.add(vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&t.name)),
            ("index_name", text(&i.name)),
            ("kind", text(i.kind())),
            ("options", text_map(&i.options())),
        ]);
    }
}

/// The `extensions` of an index's view: `tombstone_gc`, and for a local index the `tags`
/// that make its updates synchronous.
fn view_extensions(i: &IndexDef) -> Value {
    let mut entries = Vec::new();
    if i.synchronous_updates() {
        let tags = [("synchronous_updates".to_string(), "true".to_string())];
        entries.push((
            Value::text("tags"),
            Value::blob(idl_string_map(tags.iter().map(|(k, v)| (k, v)))),
        ));
    }
    if let Some(gc) = &i.view_options.tombstone_gc {
        entries.push((Value::text("tombstone_gc"), Value::blob(idl_string_map(gc))));
    }
    Value::map(entries)
}

/// `system_schema.views`: the backing view of every secondary index (`make_view_mutations`).
fn views(rows: &mut Rows<'_>, schema: &Schema) {
    for (t, i) in all_indexes(schema) {
        let mut cells = vec![
            ("keyspace_name", text(&t.keyspace)),
            ("view_name", text(&i.view_name())),
            ("base_table_id", Some(Value::uuid(t.id))),
            ("base_table_name", text(&t.name)),
            ("where_clause", text(&i.where_clause())),
            ("include_all_columns", Some(Value::Boolean(false))),
            ("id", Some(Value::uuid(i.view_id))),
        ];
        cells.extend(table_params(&i.view_options, view_extensions(i)));
        rows.add(cells);
    }
}

/// The JSON `computation` of a computed column of an index's view
/// (`token_column_computation::serialize`, `collection_column_computation::serialize`).
fn computation(c: &Computed) -> Option<String> {
    match c {
        Computed::Token => Some("{\"type\":\"token_v2\"}".to_string()),
        Computed::Collection(target, name) => {
            let kind = match target {
                IndexTarget::Keys => "collection_keys",
                IndexTarget::Entries => "collection_entries",
                _ => "collection_values",
            };
            Some(format!(
                "{{\"type\":\"{kind}\",\"collection_name\":{}}}",
                crate::schema::index::json_string(name)
            ))
        }
        _ => None,
    }
}

/// `system_schema.computed_columns`: the computed columns of the views of indexes.
fn computed_columns(rows: &mut Rows<'_>, schema: &Schema) {
    for (t, i) in all_indexes(schema) {
        for (c, computed) in i.view_columns(t) {
            if let Some(json) = computation(&computed) {
                rows.add(vec![
                    ("keyspace_name", text(&t.keyspace)),
                    ("table_name", text(&i.view_name())),
                    ("column_name", text(&c.name)),
                    ("computation", Some(Value::blob(json.into_bytes()))),
                ]);
            }
        }
    }
}

/// `system_schema.view_virtual_columns`: the virtual columns of the views of indexes on
/// key columns.
fn view_virtual_columns(rows: &mut Rows<'_>, schema: &Schema) {
    for (t, i) in all_indexes(schema) {
        for (c, computed) in i.view_columns(t) {
            if computed == Computed::Virtual {
                rows.add(column_cells(&t.keyspace, &i.view_name(), &c));
            }
        }
    }
}

/// `system_schema.scylla_tables`: the CDC partitioner for log tables (attached or
/// detached), null for the others. As in Scylla's `make_scylla_tables_mutation`, `cdc` is
/// always empty (the option lives in `tables.extensions`), `in_memory` is never written and
/// `tablets` only for tables created with tablet options (the embedded cluster has none).
/// `committed_by_group0` is set by schema changes that go through group 0, that is every
/// table but those of the node-local `system` and `system_schema` keyspaces (which Scylla
/// writes directly at boot).
fn scylla_tables(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        let through_group0 = schema
            .keyspaces
            .get(&t.keyspace)
            .is_some_and(|ks| ks.replication.class() != LOCAL_STRATEGY);
        rows.add(vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&t.name)),
            ("version", Some(Value::uuid(schema.version))),
            ("partitioner", t.partitioner().and_then(text)),
            (
                "committed_by_group0",
                through_group0.then_some(Value::Boolean(true)),
            ),
        ]);
    }
    for (t, i) in all_indexes(schema) {
        rows.add(vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&i.view_name())),
            ("version", Some(Value::uuid(schema.version))),
            ("committed_by_group0", Some(Value::Boolean(true))),
        ]);
    }
}

/// `system_schema.columns.clustering_order` of a column, upper-case as Scylla writes it
/// (`NONE`, `ASC`, `DESC`).
fn clustering_order(c: &ColumnDef) -> &'static str {
    if c.kind == ColumnKind::Clustering {
        c.order.as_str()
    } else {
        "NONE"
    }
}

/// The cells of one column's row in `system_schema.columns` (or `view_virtual_columns`).
fn column_cells<'a>(keyspace: &str, table: &str, c: &ColumnDef) -> Vec<(&'a str, Option<Value>)> {
    vec![
        ("keyspace_name", text(keyspace)),
        ("table_name", text(table)),
        ("column_name", text(&c.name)),
        ("clustering_order", text(clustering_order(c))),
        ("column_name_bytes", Some(Value::blob(c.name.as_bytes()))),
        ("kind", text(c.kind.as_str())),
        ("position", Some(Value::Int(c.position))),
        ("type", text(&c.typ.to_string())),
    ]
}

/// `system_schema.columns`: every column of every table, then the (non-virtual) columns of
/// the views of secondary indexes.
fn columns(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        for c in &t.columns {
            rows.add(column_cells(&t.keyspace, &t.name, c));
        }
    }
    for (t, i) in all_indexes(schema) {
        let view = i.view_table(t);
        for c in &view.columns {
            rows.add(column_cells(&view.keyspace, &view.name, c));
        }
    }
}

/// `system_schema.dropped_columns`. Scylla stores the drop's write timestamp (µs since the
/// epoch) as the `timestamp` value unchanged, that is as if it were milliseconds
/// (`add_dropped_column_to_schema_mutation` in `db/schema_tables.cc` builds a `db_clock`
/// time point of `column.timestamp` milliseconds, and reads it back the same way), so
/// `dropped_time` is the microsecond count.
fn dropped_columns(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        for (name, d) in &t.dropped_columns {
            rows.add(vec![
                ("keyspace_name", text(&t.keyspace)),
                ("table_name", text(&t.name)),
                ("column_name", text(name)),
                ("dropped_time", Some(Value::Timestamp(d.dropped_at))),
                ("type", text(&expand_user_types(&d.typ).to_string())),
            ]);
        }
    }
}

/// `typ` with every user type replaced by the tuple of its (expanded) field types, as Scylla
/// (like Cassandra) records the types of dropped columns, so that a type can be dropped once
/// no live column uses it (`expand_user_type` in `db/schema_tables.cc`).
fn expand_user_types(typ: &CqlType) -> CqlType {
    let expand = |t: &CqlType| Box::new(expand_user_types(t));
    match typ {
        CqlType::Udt { def, .. } => CqlType::Tuple(
            def.fields
                .iter()
                .map(|(_, t)| expand_user_types(t))
                .collect(),
        ),
        CqlType::Tuple(elems) => CqlType::Tuple(elems.iter().map(expand_user_types).collect()),
        CqlType::List { elem, frozen } => CqlType::List {
            elem: expand(elem),
            frozen: *frozen,
        },
        CqlType::Set { elem, frozen } => CqlType::Set {
            elem: expand(elem),
            frozen: *frozen,
        },
        CqlType::Map { key, value, frozen } => CqlType::Map {
            key: expand(key),
            value: expand(value),
            frozen: *frozen,
        },
        other => other.clone(),
    }
}

/// `system_schema.types`: field names and field types (as type strings) of every UDT.
fn types(rows: &mut Rows<'_>, schema: &Schema) {
    for ks in schema.keyspaces.values() {
        for ut in ks.types.values() {
            rows.add(vec![
                ("keyspace_name", text(&ks.name)),
                ("type_name", text(&ut.name)),
                (
                    "field_names",
                    Some(Value::list(
                        ut.fields.iter().map(|(n, _)| Value::text(n)).collect(),
                    )),
                ),
                (
                    "field_types",
                    Some(Value::list(
                        ut.fields
                            .iter()
                            .map(|(_, t)| Value::text(&t.to_string()))
                            .collect(),
                    )),
                ),
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::Ipv4Addr;

    use uuid::Uuid;

    use super::*;
    use crate::exec::ddl::resolve_type;
    use crate::exec::ddl::tests::Db;
    use crate::schema::CdcOptions;
    use crate::schema::system::{SIMPLE_STRATEGY, SYSTEM_DISTRIBUTED};
    use crate::schema::table::CDC_PARTITIONER;
    use crate::storage::{Now, PartitionStart, TableData};

    /// A row read back: column name → value (nulls absent).
    type Row = BTreeMap<String, Value>;

    fn topology(n: usize) -> Topology {
        Topology::new(
            (1..=n)
                .map(|i| NodeInfo {
                    index: i,
                    ip: IpAddr::V4(Ipv4Addr::new(127, 0, 0, u8::try_from(i).unwrap_or(0))),
                    host_id: Uuid::from_u128(i as u128),
                    tokens: vec![-(i as i64) * 1000, i as i64 * 1000],
                    shards: 2,
                    up: i != 2,
                })
                .collect(),
        )
    }

    /// Renders `ks.table` from `coordinator`, applies the rows to a fresh table and reads
    /// every row back, as the executor's SELECT would see them.
    fn read(db: &Db, topology: &Topology, coordinator: usize, ks: &str, table: &str) -> Vec<Row> {
        let def = db.table(ks, table);
        assert_eq!(def.kind, crate::schema::TableKind::Virtual, "{ks}.{table}");
        let cdc = crate::cdc::generations::CdcState::default();
        let view = SystemView {
            schema: &db.schema,
            topology,
            coordinator,
            cdc: &cdc,
        };
        let mutations = virtual_table_rows(&def, &view);
        let mut data = TableData::new(&def.clustering_descending()).expect("table");
        for m in &mutations {
            data.apply(m, Now(0));
        }
        let mut rows = Vec::new();
        for p in data.partitions(PartitionStart::First, Now(0)) {
            for r in p.all_rows() {
                let mut row = Row::new();
                for (c, v) in def.partition_key().zip(p.key_values()) {
                    row.insert(c.name.clone(), v.clone());
                }
                for (c, v) in def.clustering_key().zip(r.key()) {
                    row.insert(c.name.clone(), v.clone());
                }
                for c in def.value_columns() {
                    if let Some(v) = r
                        .cell(ColumnId(c.id))
                        .and_then(|cell| cell.to_value(&c.typ))
                    {
                        row.insert(c.name.clone(), v);
                    }
                }
                rows.push(row);
            }
        }
        rows
    }

    fn s(row: &Row, column: &str) -> String {
        row.get(column)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{column} missing in {row:?}"))
            .to_string()
    }

    fn find<'r>(rows: &'r [Row], pairs: &[(&str, &str)]) -> &'r Row {
        rows.iter()
            .find(|r| {
                pairs
                    .iter()
                    .all(|(c, v)| r.get(*c).and_then(Value::as_str) == Some(*v))
            })
            .unwrap_or_else(|| panic!("no row {pairs:?}"))
    }

    fn text_map(row: &Row, column: &str) -> BTreeMap<String, String> {
        row.get(column)
            .and_then(Value::as_map)
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
            .collect()
    }

    #[test]
    fn local_describes_the_coordinator() {
        let db = Db::new();
        let topo = topology(3);
        let rows = read(&db, &topo, 3, "system", "local");
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(s(r, "key"), "local");
        assert_eq!(s(r, "bootstrapped"), "COMPLETED");
        let ip = Value::Inet(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
        for c in ["broadcast_address", "listen_address", "rpc_address"] {
            assert_eq!(r.get(c), Some(&ip), "{c}");
        }
        assert_eq!(s(r, "cluster_name"), CLUSTER_NAME);
        assert_eq!(s(r, "cql_version"), "3.3.1");
        assert_eq!(s(r, "data_center"), "datacenter1");
        assert_eq!(s(r, "rack"), "rack1");
        assert_eq!(s(r, "native_protocol_version"), "4");
        assert_eq!(
            s(r, "partitioner"),
            "org.apache.cassandra.dht.Murmur3Partitioner"
        );
        assert_eq!(s(r, "release_version"), RELEASE_VERSION);
        assert_eq!(r.get("host_id"), Some(&Value::Uuid(Uuid::from_u128(3))));
        // Seconds since the epoch when the node started, larger after each restart.
        let generation = |topo: &Topology| match read(&db, topo, 3, "system", "local")[0]
            .get("gossip_generation")
        {
            Some(Value::Int(g)) => *g,
            other => panic!("gossip_generation {other:?}"),
        };
        let started = generation(&topo);
        assert!(started > 1_700_000_000, "{started}");
        let mut restarted = topo.clone();
        restarted.restarted(3);
        assert!(generation(&restarted) > started);
        assert_eq!(
            r.get("schema_version"),
            Some(&Value::Uuid(db.schema.version))
        );
        let tokens: Vec<&str> = r
            .get("tokens")
            .and_then(Value::as_elements)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let mut expected = vec!["-3000", "3000"];
        expected.sort();
        assert_eq!(tokens, expected);
        // The driver's columns have the contract's types (§2.2).
        let def = db.table("system", "local");
        for (c, t) in [
            ("host_id", "uuid"),
            ("rpc_address", "inet"),
            ("data_center", "text"),
            ("rack", "text"),
            ("tokens", "set<text>"),
            ("cluster_name", "text"),
        ] {
            assert_eq!(def.column(c).map(|c| c.typ.to_string()).as_deref(), Some(t));
        }
        // An unknown coordinator sees no row rather than a panic.
        assert!(read(&db, &topo, 9, "system", "local").is_empty());
    }

    #[test]
    fn peers_are_the_other_nodes_up_or_down() {
        let db = Db::new();
        let topo = topology(3);
        for coordinator in 1..=3 {
            let rows = read(&db, &topo, coordinator, "system", "peers");
            let mut ips: Vec<IpAddr> = rows
                .iter()
                .filter_map(|r| match r.get("rpc_address") {
                    Some(Value::Inet(ip)) => Some(*ip),
                    _ => None,
                })
                .collect();
            ips.sort();
            let expected: Vec<IpAddr> = (1..=3u8)
                .filter(|i| usize::from(*i) != coordinator)
                .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)))
                .collect();
            assert_eq!(ips, expected, "from node {coordinator}");
            for r in &rows {
                assert_eq!(r.get("peer"), r.get("rpc_address"));
                assert!(matches!(r.get("host_id"), Some(Value::Uuid(_))));
                assert_eq!(s(r, "data_center"), "datacenter1");
                assert_eq!(
                    r.get("schema_version"),
                    Some(&Value::Uuid(db.schema.version))
                );
                assert!(
                    r.get("tokens")
                        .and_then(Value::as_elements)
                        .is_some_and(|t| t.len() == 2)
                );
            }
        }
        // One node: no peers.
        assert!(read(&db, &topology(1), 1, "system", "peers").is_empty());
        let def = db.table("system", "peers");
        for (c, t) in [
            ("host_id", "uuid"),
            ("rpc_address", "inet"),
            ("data_center", "text"),
            ("rack", "text"),
            ("tokens", "set<text>"),
        ] {
            assert_eq!(def.column(c).map(|c| c.typ.to_string()).as_deref(), Some(t));
        }
    }

    #[test]
    fn keyspaces_lists_user_and_system_keyspaces() {
        let mut db = Db::new();
        db.ok(
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
             'replication_factor': 3} AND durable_writes = false",
        );
        db.ok(
            "CREATE KEYSPACE tk WITH replication = {'class': 'NetworkTopologyStrategy', \
             'replication_factor': 1} AND tablets = {'initial': 4}",
        );
        let topo = topology(1);
        let rows = read(&db, &topo, 1, "system_schema", "keyspaces");
        let names: Vec<String> = rows.iter().map(|r| s(r, "keyspace_name")).collect();
        for ks in [
            "ks",
            "tk",
            "system",
            "system_schema",
            "system_distributed",
            "system_traces",
        ] {
            assert!(names.iter().any(|n| n == ks), "{ks} missing from {names:?}");
        }
        let sd = find(&rows, &[("keyspace_name", SYSTEM_DISTRIBUTED)]);
        let replication = text_map(sd, "replication");
        assert_eq!(
            replication.get("class").map(String::as_str),
            Some(SIMPLE_STRATEGY)
        );
        assert_eq!(
            replication.get("replication_factor").map(String::as_str),
            Some("3")
        );
        let ks = find(&rows, &[("keyspace_name", "ks")]);
        assert_eq!(ks.get("durable_writes"), Some(&Value::Boolean(false)));
        assert_eq!(
            text_map(ks, "replication")
                .get("datacenter1")
                .map(String::as_str),
            Some("3")
        );
        // Only tablets keyspaces have a scylla_keyspaces row, with initial_tablets.
        let rows = read(&db, &topo, 1, "system_schema", "scylla_keyspaces");
        assert_eq!(rows.len(), 1);
        assert_eq!(s(&rows[0], "keyspace_name"), "tk");
        assert_eq!(rows[0].get("initial_tablets"), Some(&Value::Int(4)));
    }

    #[test]
    fn tables_show_properties_extensions_and_partitioners() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TABLE ks.plain (pk int PRIMARY KEY, v int) WITH comment = 'c'");
        db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
        db.ok("CREATE TABLE ks.d (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
        db.ok("ALTER TABLE ks.d WITH cdc = {'enabled': false}");
        let topo = topology(1);
        let rows = read(&db, &topo, 1, "system_schema", "tables");
        let plain = find(&rows, &[("keyspace_name", "ks"), ("table_name", "plain")]);
        assert_eq!(s(plain, "comment"), "c");
        assert_eq!(
            plain.get("id"),
            Some(&Value::Uuid(db.table("ks", "plain").id))
        );
        assert_eq!(plain.get("gc_grace_seconds"), Some(&Value::Int(864000)));
        assert_eq!(plain.get("default_time_to_live"), Some(&Value::Int(0)));
        assert_eq!(
            plain.get("bloom_filter_fp_chance"),
            Some(&Value::Double(0.01))
        );
        assert_eq!(s(plain, "speculative_retry"), "99.0PERCENTILE");
        assert_eq!(
            text_map(plain, "compaction")
                .get("class")
                .map(String::as_str),
            Some("SizeTieredCompactionStrategy")
        );
        assert_eq!(
            plain.get("flags"),
            Some(&Value::set(vec![Value::text("compound")]))
        );
        let extensions = |r: &Row| -> BTreeMap<String, Vec<u8>> {
            r.get("extensions")
                .and_then(Value::as_map)
                .unwrap_or_default()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_blob()?.to_vec())))
                .collect()
        };
        assert!(
            !extensions(plain).contains_key("cdc"),
            "no cdc option, no extension"
        );
        let t = find(&rows, &[("table_name", "t")]);
        assert_eq!(
            extensions(t).get("cdc"),
            Some(
                &CdcOptions {
                    enabled: true,
                    ..CdcOptions::default()
                }
                .extension_blob()
            )
        );
        let d = find(&rows, &[("table_name", "d")]);
        assert_eq!(
            extensions(d).get("cdc"),
            Some(&CdcOptions::default().extension_blob()),
            "the extension stays with 'enabled': 'false'"
        );
        let log = find(&rows, &[("table_name", "t_scylla_cdc_log")]);
        assert_eq!(s(log, "comment"), "CDC log for ks.t");
        assert_eq!(log.get("gc_grace_seconds"), Some(&Value::Int(0)));
        assert_eq!(
            text_map(log, "caching"),
            [
                ("enabled", "false"),
                ("keys", "NONE"),
                ("rows_per_partition", "NONE")
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
        );
        assert!(extensions(log).contains_key("tombstone_gc"));
        // System tables are listed too.
        find(
            &rows,
            &[("keyspace_name", "system"), ("table_name", "local")],
        );
        find(
            &rows,
            &[
                ("keyspace_name", "system_schema"),
                ("table_name", "columns"),
            ],
        );
        find(
            &rows,
            &[
                ("keyspace_name", SYSTEM_DISTRIBUTED),
                ("table_name", "cdc_streams_descriptions_v2"),
            ],
        );

        let rows = read(&db, &topo, 1, "system_schema", "scylla_tables");
        let partitioner = |t: &str| {
            find(&rows, &[("keyspace_name", "ks"), ("table_name", t)])
                .get("partitioner")
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        assert_eq!(
            partitioner("t_scylla_cdc_log").as_deref(),
            Some(CDC_PARTITIONER)
        );
        assert_eq!(
            partitioner("d_scylla_cdc_log").as_deref(),
            Some(CDC_PARTITIONER),
            "detached logs keep the CDC partitioner"
        );
        assert_eq!(partitioner("t"), None);
        assert_eq!(partitioner("plain"), None);
        assert_eq!(rows.len(), db.schema.tables().count());
    }

    #[test]
    fn columns_describe_every_column_of_every_table() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TYPE ks.ut (a int, b text)");
        db.ok(
            "CREATE TABLE ks.t (pk int, ck text, s int static, v int, \"MyCol\" list<int>, \
             PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true}",
        );
        let topo = topology(1);
        let rows = read(&db, &topo, 1, "system_schema", "columns");
        assert_eq!(
            rows.len(),
            db.schema.tables().map(|t| t.columns.len()).sum::<usize>()
        );
        let col = |t: &str, c: &str| {
            find(
                &rows,
                &[
                    ("keyspace_name", "ks"),
                    ("table_name", t),
                    ("column_name", c),
                ],
            )
        };
        let pk = col("t", "pk");
        assert_eq!(s(pk, "kind"), "partition_key");
        assert_eq!(pk.get("position"), Some(&Value::Int(0)));
        assert_eq!(s(pk, "clustering_order"), "NONE");
        let ck = col("t", "ck");
        assert_eq!(s(ck, "kind"), "clustering");
        assert_eq!(s(ck, "clustering_order"), "DESC");
        assert_eq!(s(ck, "type"), "text");
        let st = col("t", "s");
        assert_eq!(s(st, "kind"), "static");
        assert_eq!(st.get("position"), Some(&Value::Int(-1)));
        let my = col("t", "MyCol");
        assert_eq!(s(my, "kind"), "regular");
        assert_eq!(s(my, "type"), "list<int>");
        assert_eq!(my.get("column_name_bytes"), Some(&Value::blob(b"MyCol")));
        // The log: key columns, then regular columns with position -1.
        let sid = col("t_scylla_cdc_log", "cdc$stream_id");
        assert_eq!(
            (s(sid, "kind"), s(sid, "type")),
            ("partition_key".into(), "blob".into())
        );
        let time = col("t_scylla_cdc_log", "cdc$time");
        assert_eq!(s(time, "clustering_order"), "ASC");
        assert_eq!(time.get("position"), Some(&Value::Int(0)));
        let seq = col("t_scylla_cdc_log", "cdc$batch_seq_no");
        assert_eq!(seq.get("position"), Some(&Value::Int(1)));
        let logged = col("t_scylla_cdc_log", "MyCol");
        assert_eq!(s(logged, "type"), "frozen<map<timeuuid, int>>");
        let base_key = col("t_scylla_cdc_log", "ck");
        assert_eq!(s(base_key, "kind"), "regular");
    }

    /// Every type string `system_schema.columns` shows parses back (with our CQL type
    /// parser, which follows the same grammar as the driver's) to the column's type.
    #[test]
    fn column_type_strings_parse_back_to_the_same_type() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TYPE ks.inner (a int, l list<text>)");
        db.ok("CREATE TYPE ks.outer (i frozen<inner>, t tuple<int, frozen<inner>>)");
        db.ok(
            "CREATE TABLE ks.all_types (pk frozen<tuple<int, text>>, c1 timeuuid, c2 frozen<outer>, \
             a ascii, b bigint, bl blob, bo boolean, d date, de decimal, do double, du duration, \
             f float, i inet, n int, sm smallint, t text, ti time, ts timestamp, ty tinyint, \
             u uuid, vi varint, l list<frozen<set<int>>>, s set<frozen<tuple<int, text>>>, \
             m map<text, frozen<list<frozen<inner>>>>, fm frozen<map<int, frozen<set<blob>>>>, \
             tu tuple<int, list<int>>, ou outer, fo frozen<outer>, \
             PRIMARY KEY (pk, c1, c2)) WITH cdc = {'enabled': true}",
        );
        let topo = topology(1);
        let rows = read(&db, &topo, 1, "system_schema", "columns");
        let mut checked = 0;
        for r in &rows {
            let (ks, table, column) = (
                s(r, "keyspace_name"),
                s(r, "table_name"),
                s(r, "column_name"),
            );
            let text = s(r, "type");
            let def = db.table(&ks, &table);
            let expected = def.column(&column).map(|c| c.typ.clone()).expect("column");
            let parsed = crate::cql::parse_type(&text)
                .unwrap_or_else(|e| panic!("{ks}.{table}.{column}: {text}: {e}"));
            let resolved = resolve_type(&db.schema, &ks, &parsed)
                .unwrap_or_else(|e| panic!("{ks}.{table}.{column}: {text}: {e:?}"));
            assert_eq!(resolved, expected, "{ks}.{table}.{column}: {text}");
            assert!(
                text.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "<>, _$.".contains(c)),
                "{text}: the driver's type parser accepts only these characters"
            );
            checked += 1;
        }
        assert!(checked > 100);
        let types = read(&db, &topo, 1, "system_schema", "types");
        for r in &types {
            for t in r
                .get("field_types")
                .and_then(Value::as_elements)
                .unwrap_or_default()
            {
                let text = t.as_str().unwrap_or_default();
                let parsed = crate::cql::parse_type(text).expect("field type parses");
                resolve_type(&db.schema, &s(r, "keyspace_name"), &parsed).expect("resolves");
            }
        }
    }

    #[test]
    fn dropped_columns_and_types_are_listed() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TYPE ks.ut (a int, b frozen<list<text>>)");
        db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v int, w text) WITH cdc = {'enabled': true}");
        db.ok("CREATE TABLE ks.u (pk int PRIMARY KEY, f frozen<ut>, n ut, l list<frozen<ut>>)");
        db.ok("ALTER TABLE ks.t DROP w");
        db.ok("ALTER TABLE ks.u DROP (f, n, l)");
        let topo = topology(1);
        let rows = read(&db, &topo, 1, "system_schema", "dropped_columns");
        let base = find(&rows, &[("table_name", "t"), ("column_name", "w")]);
        assert_eq!(s(base, "type"), "text");
        // The drop's microsecond timestamp, stored unchanged as Scylla stores it.
        assert_eq!(base.get("dropped_time"), Some(&Value::Timestamp(db.now)));
        let log = find(
            &rows,
            &[("table_name", "t_scylla_cdc_log"), ("column_name", "w")],
        );
        assert_eq!(
            log.get("dropped_time"),
            Some(&Value::Timestamp(db.now + 5_000_000))
        );
        find(
            &rows,
            &[
                ("table_name", "t_scylla_cdc_log"),
                ("column_name", "cdc$deleted_w"),
            ],
        );
        // User types are stored expanded to tuples.
        let u = |c: &str| {
            s(
                find(&rows, &[("table_name", "u"), ("column_name", c)]),
                "type",
            )
        };
        assert_eq!(u("f"), "frozen<tuple<int, frozen<list<text>>>>");
        assert_eq!(u("n"), "frozen<tuple<int, frozen<list<text>>>>");
        assert_eq!(u("l"), "list<frozen<tuple<int, frozen<list<text>>>>>");
        let in_ks = rows
            .iter()
            .filter(|r| s(r, "keyspace_name") == "ks")
            .count();
        assert_eq!(in_ks, 6);
        // system.local's columns that Scylla removed (dropped at the maximum timestamp).
        let local: Vec<(String, String)> = rows
            .iter()
            .filter(|r| s(r, "keyspace_name") == "system")
            .map(|r| (s(r, "column_name"), s(r, "type")))
            .collect();
        assert_eq!(
            local,
            [
                ("scylla_cpu_sharding_algorithm", "text"),
                ("scylla_msb_ignore", "int"),
                ("scylla_nr_shards", "int"),
                ("thrift_version", "text"),
            ]
            .map(|(c, t)| (c.to_string(), t.to_string()))
        );
        assert!(
            rows.iter()
                .filter(|r| s(r, "keyspace_name") == "system")
                .all(|r| r.get("dropped_time") == Some(&Value::Timestamp(i64::MAX)))
        );

        let rows = read(&db, &topo, 1, "system_schema", "types");
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (s(r, "keyspace_name"), s(r, "type_name")),
            ("ks".into(), "ut".into())
        );
        assert_eq!(
            r.get("field_names"),
            Some(&Value::list(vec![Value::text("a"), Value::text("b")]))
        );
        assert_eq!(
            r.get("field_types"),
            Some(&Value::list(vec![
                Value::text("int"),
                Value::text("frozen<list<text>>")
            ]))
        );
    }

    #[test]
    fn views_indexes_and_tablet_cdc_tables_are_empty() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}");
        let topo = topology(2);
        for (ks, t) in [
            ("system_schema", "views"),
            ("system_schema", "indexes"),
            ("system", "cdc_timestamps"),
            ("system", "cdc_streams"),
        ] {
            assert!(read(&db, &topo, 1, ks, t).is_empty(), "{ks}.{t}");
        }
    }

    #[test]
    fn built_views_lists_views_and_index_views_once_created() {
        let mut db = Db::new();
        db.keyspace("ks");
        db.ok("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck))");
        let topo = topology(2);
        assert!(read(&db, &topo, 1, "system", "built_views").is_empty());
        db.ok(
            "CREATE MATERIALIZED VIEW ks.mv AS SELECT * FROM ks.t WHERE v IS NOT NULL \
             AND pk IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)",
        );
        db.ok("CREATE INDEX t_v ON ks.t (v)");
        let names: Vec<(String, String)> = read(&db, &topo, 2, "system", "built_views")
            .iter()
            .map(|r| (s(r, "keyspace_name"), s(r, "view_name")))
            .collect();
        assert_eq!(
            names,
            [
                ("ks".to_string(), "mv".to_string()),
                ("ks".to_string(), "t_v_index".to_string())
            ]
        );
        db.ok("DROP MATERIALIZED VIEW ks.mv");
        db.ok("DROP INDEX ks.t_v");
        assert!(read(&db, &topo, 1, "system", "built_views").is_empty());
    }

    #[test]
    fn rows_follow_the_schema_version() {
        let mut db = Db::new();
        let topo = topology(2);
        let before = read(&db, &topo, 1, "system", "local");
        db.keyspace("ks");
        let after = read(&db, &topo, 1, "system", "local");
        assert_ne!(
            before[0].get("schema_version"),
            after[0].get("schema_version")
        );
        assert_eq!(
            after[0].get("schema_version"),
            Some(&Value::Uuid(db.schema.version))
        );
        let peers = read(&db, &topo, 1, "system", "peers");
        assert_eq!(
            peers[0].get("schema_version"),
            Some(&Value::Uuid(db.schema.version))
        );
    }
}
