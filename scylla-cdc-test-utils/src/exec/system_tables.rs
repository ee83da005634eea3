//! The rows of the virtual system tables (`TableKind::Virtual`), computed on read.
//!
//! [`virtual_table_rows`] renders one virtual table as seen from the coordinator described by
//! a [`SystemView`] (schema snapshot, topology, coordinator node, cluster configuration) as
//! [`PartitionMutation`]s; the executor applies them to a fresh `TableData` and runs the
//! SELECT on it, so filtering, paging and column selection work as for any table.
//!
//! - `system.local`: the coordinator itself; `system.peers`: every *other* node, up or down
//!   (driver contract §2).
//! - `system_schema.*`: keyspaces, tables, columns, dropped columns and user types of every
//!   keyspace, user and system alike (contract §3), with the CDC extension and partitioner
//!   (semantics §1.1, §1.3). `views` and `indexes` are always empty.
//! - `system.cdc_timestamps` / `system.cdc_streams` (tablet CDC metadata) are rendered empty
//!   here for now: the CDC module fills them from its tablet stream sets.

use std::collections::HashMap;
use std::net::IpAddr;

use bytes::Bytes;

use crate::cluster::partitioner::{murmur3_token, serialize_partition_key};
use crate::cluster::{
    CLUSTER_NAME, ClusterConfig, DATACENTER, NodeInfo, RACK, RELEASE_VERSION, Topology,
};
use crate::schema::system::{SYSTEM, SYSTEM_SCHEMA};
use crate::schema::{ColumnKind, Schema, TableDef};
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
    /// The cluster's configuration.
    pub(crate) config: &'a ClusterConfig,
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
        (SYSTEM_SCHEMA, "keyspaces") => keyspaces(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "scylla_keyspaces") => scylla_keyspaces(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "tables") => tables(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "scylla_tables") => scylla_tables(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "columns") => columns(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "dropped_columns") => dropped_columns(&mut rows, view.schema),
        (SYSTEM_SCHEMA, "types") => types(&mut rows, view.schema),
        // `views`, `indexes`: the embedded cluster has no materialized views or indexes.
        // `system.cdc_timestamps`, `system.cdc_streams`: filled by the CDC module from the
        // tablet stream sets; empty here.
        _ => {}
    }
    rows.finish()
}

/// Accumulates rows of one table into one mutation per partition.
struct Rows<'t> {
    /// The table rendered.
    table: &'t TableDef,
    /// Mutations in the order their partitions were first seen.
    partitions: Vec<PartitionMutation>,
    /// Index in `partitions` by serialized partition key.
    index: HashMap<Bytes, usize>,
}

impl<'t> Rows<'t> {
    /// An empty set of rows of `table`.
    fn new(table: &'t TableDef) -> Rows<'t> {
        Rows {
            table,
            partitions: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// The mutations.
    fn finish(self) -> Vec<PartitionMutation> {
        self.partitions
    }

    /// Adds one row given as `(column, value)` pairs; null values and unknown columns are
    /// skipped. A row whose key is incomplete is skipped.
    fn add(&mut self, cells: Vec<(&str, Option<Value>)>) {
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
                ts: RENDER_TS,
                ttl: None,
            }),
            ..RowUpdate::default()
        };
        for column in self.table.value_columns() {
            if let Some(value) = get(&column.name) {
                update.set_cell(ColumnId(column.id), cell(&column.typ, value));
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
fn cell(typ: &CqlType, value: Value) -> CellUpdate {
    let element = |key: Value, value: Value| ElementUpdate {
        key,
        ts: RENDER_TS,
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
            ts: RENDER_TS,
            ttl: None,
            value: Some(value),
        },
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
            Value::blob(p.to_le_bytes().to_vec()),
        ));
    }
    Value::map(entries)
}

/// `system_schema.tables`: every table of every keyspace, with all its properties.
fn tables(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        let o = &t.options;
        rows.add(vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&t.name)),
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
            ("extensions", Some(extensions(t))),
            (
                "flags",
                Some(Value::set(t.flags().into_iter().map(Value::text).collect())),
            ),
            ("gc_grace_seconds", Some(Value::Int(o.gc_grace_seconds))),
            ("id", Some(Value::uuid(t.id))),
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
        ]);
    }
}

/// `system_schema.scylla_tables`: the CDC partitioner for log tables (attached or
/// detached), null for the others.
fn scylla_tables(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        rows.add(vec![
            ("keyspace_name", text(&t.keyspace)),
            ("table_name", text(&t.name)),
            ("version", Some(Value::uuid(schema.version))),
            ("partitioner", t.partitioner().and_then(text)),
            ("committed_by_group0", Some(Value::Boolean(true))),
        ]);
    }
}

/// `system_schema.columns`: every column of every table.
fn columns(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        for c in &t.columns {
            let order = if c.kind == ColumnKind::Clustering {
                c.order.as_str()
            } else {
                "none"
            };
            rows.add(vec![
                ("keyspace_name", text(&t.keyspace)),
                ("table_name", text(&t.name)),
                ("column_name", text(&c.name)),
                ("clustering_order", text(order)),
                (
                    "column_name_bytes",
                    Some(Value::blob(c.name.as_bytes().to_vec())),
                ),
                ("kind", text(c.kind.as_str())),
                ("position", Some(Value::Int(c.position))),
                ("type", text(&c.typ.to_string())),
            ]);
        }
    }
}

/// `system_schema.dropped_columns`
fn dropped_columns(rows: &mut Rows<'_>, schema: &Schema) {
    for t in schema.tables() {
        for (name, d) in &t.dropped_columns {
            rows.add(vec![
                ("keyspace_name", text(&t.keyspace)),
                ("table_name", text(&t.name)),
                ("column_name", text(name)),
                (
                    "dropped_time",
                    Some(Value::Timestamp(d.dropped_at.div_euclid(1000))),
                ),
                ("type", text(&d.typ.to_string())),
            ]);
        }
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
