//! TEMPORARY stand-in for the DDL engineer's `exec/system_tables.rs` (same interface):
//! `system.local` and `system.peers` only. Remove when `exec/system_tables.rs` is merged.

use std::sync::Arc;

use crate::cluster::{self, ClusterConfig, Topology};
use crate::schema::{Schema, TableDef};
use crate::storage::{
    CellUpdate, ClusteringKey, ColumnId, ElementUpdate, PartitionMutation, RowUpdate,
};
use crate::types::value::Value;

/// What a virtual table is rendered from.
pub(crate) struct SystemView<'a> {
    /// The schema snapshot.
    pub(crate) schema: &'a Schema,
    /// Nodes.
    pub(crate) topology: &'a Topology,
    /// The coordinator node (1-based).
    pub(crate) coordinator: usize,
    /// Cluster settings.
    pub(crate) config: &'a ClusterConfig,
}

/// Rows of a virtual table as mutations.
pub(crate) fn virtual_table_rows(
    table: &TableDef,
    view: &SystemView<'_>,
) -> Vec<PartitionMutation> {
    let ts = 1;
    let cell = |row: &mut RowUpdate, name: &str, v: Value| {
        if let Some(c) = table.column(name) {
            let id = ColumnId(c.id);
            if c.typ.is_multi_cell() {
                let elements = v
                    .as_elements()
                    .unwrap_or(&[])
                    .iter()
                    .map(|e| ElementUpdate {
                        key: e.clone(),
                        ts,
                        ttl: None,
                        value: Some(Value::Empty),
                    })
                    .collect();
                row.set_cell(
                    id,
                    CellUpdate::Collection {
                        tombstone: None,
                        elements,
                    },
                );
            } else {
                row.set_cell(
                    id,
                    CellUpdate::Atomic {
                        ts,
                        ttl: None,
                        value: Some(v),
                    },
                );
            }
        }
    };
    let node_row = |row: &mut RowUpdate, n: &cluster::NodeInfo| {
        cell(row, "data_center", Value::text(cluster::DATACENTER));
        cell(row, "rack", Value::text(cluster::RACK));
        cell(row, "host_id", Value::Uuid(n.host_id));
        cell(row, "rpc_address", Value::Inet(n.ip));
        cell(row, "schema_version", Value::Uuid(view.schema.version));
        cell(
            row,
            "release_version",
            Value::text(cluster::RELEASE_VERSION),
        );
        let mut tokens: Vec<Value> = n
            .tokens
            .iter()
            .map(|t| Value::text(&t.to_string()))
            .collect();
        tokens.sort();
        cell(row, "tokens", Value::Set(Arc::from(tokens)));
    };
    let key = |v: Value| super::restrictions::make_partition_key(table, vec![v]).ok();
    let mut out = Vec::new();
    match (table.keyspace.as_str(), table.name.as_str()) {
        ("system", "local") => {
            let Some(n) = view.topology.node(view.coordinator) else {
                return out;
            };
            let Some(k) = key(Value::text("local")) else {
                return out;
            };
            let mut m = PartitionMutation::new(k);
            let mut row = RowUpdate::default();
            node_row(&mut row, n);
            cell(&mut row, "cluster_name", Value::text(cluster::CLUSTER_NAME));
            cell(&mut row, "broadcast_address", Value::Inet(n.ip));
            cell(&mut row, "listen_address", Value::Inet(n.ip));
            cell(&mut row, "cql_version", Value::text("3.3.1"));
            cell(
                &mut row,
                "partitioner",
                Value::text("org.apache.cassandra.dht.Murmur3Partitioner"),
            );
            m.rows.push((ClusteringKey::empty(), row));
            out.push(m);
        }
        ("system", "peers") => {
            for n in &view.topology.nodes {
                if n.index == view.coordinator {
                    continue;
                }
                let Some(k) = key(Value::Inet(n.ip)) else {
                    continue;
                };
                let mut m = PartitionMutation::new(k);
                let mut row = RowUpdate::default();
                node_row(&mut row, n);
                m.rows.push((ClusteringKey::empty(), row));
                out.push(m);
            }
        }
        _ => {}
    }
    out
}
