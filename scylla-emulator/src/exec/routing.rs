//! Which tablet a statement request targets, for the TABLETS_ROUTING_V1 extension.
//!
//! Scylla attaches tablet routing information only where a driver can use it: a SELECT of
//! one partition or an INSERT / UPDATE / DELETE of one (conditional ones included) of a table
//! in a tablet keyspace, whose partition key is fully bound by markers
//! (`_may_use_token_aware_routing`, set from the statement's partition-key bind indexes in
//! `select_statement.cc` and `modification_statement.cc`); never for batches, DDL or
//! statements with literal keys. [`Database::tablet_target`] finds such a request's table,
//! tablet layout and token; the server decides whether it reached a replica.

use uuid::Uuid;

use crate::cluster::DATACENTER;
use crate::cluster::partitioner::{cdc_token, murmur3_token, serialize_partition_key};
use crate::cluster::tablets::TabletLayout;
use crate::frame::{BoundValue, Request};
use crate::schema::{TableDef, TableKind};

use super::plan::Plan;
use super::{ConnState, Database, named_values};

/// The tablet a request targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TabletTarget {
    /// The tablets of the request's table.
    pub(crate) layout: TabletLayout,
    /// The partition's token (by the table's partitioner).
    pub(crate) token: i64,
}

impl Database {
    /// The tablet a QUERY or EXECUTE targets, if it is a single-partition statement of a
    /// tablet table with its partition key bound by markers; `None` otherwise (and for
    /// requests that will fail: unknown ids, missing or null key values).
    pub(crate) fn tablet_target(
        &self,
        conn: &ConnState,
        request: &Request,
    ) -> Option<TabletTarget> {
        let (cached, params) = match request {
            Request::Execute { id, params } => (self.prepared.read().get(id).cloned()?, params),
            // Only statements with bound values can have their key bound.
            Request::Query { query, params } if !params.values.is_empty() => (
                self.cached_unprepared(conn.keyspace.as_deref(), query)
                    .ok()?,
                params,
            ),
            _ => return None,
        };
        let planned = self.planned(&cached).ok()?;
        let table = match &planned.plan {
            Plan::Select(p) => &p.table,
            Plan::Modify(p) => &p.table,
            _ => return None,
        };
        let pk_indexes = &planned.metadata.pk_indexes;
        if pk_indexes.is_empty() {
            return None;
        }
        let layout = self.tablet_layout(table)?;
        let values = named_values(&planned, params).ok()?;
        let parts = pk_indexes
            .iter()
            .map(|&i| match values.get(usize::from(i))? {
                BoundValue::Value(v) => Some(v.clone()),
                BoundValue::Null | BoundValue::Unset => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let key = serialize_partition_key(parts.iter().map(|b| &b[..]))?;
        let token = if table.partitioner().is_some() {
            cdc_token(&key)
        } else {
            murmur3_token(&key)
        };
        Some(TabletTarget { layout, token })
    }

    /// The tablet layout of `keyspace.table`; `None` for a table without tablets.
    pub(crate) fn tablet_layout_of(&self, keyspace: &str, table: &str) -> Option<TabletLayout> {
        let schema = self.schema();
        let table = schema.table(keyspace, table)?.clone();
        self.tablet_layout(&table)
    }

    /// [`Database::tablet_layout_of`] for a table definition. A table starts with its
    /// keyspace's initial tablet count; its current count is its CDC stream sets' (they
    /// follow splits), or else the initial one.
    fn tablet_layout(&self, table: &TableDef) -> Option<TabletLayout> {
        let schema = self.schema();
        let keyspace = schema.keyspace(&table.keyspace)?;
        let initial = u64::from(keyspace.initial_tablets?).max(1);
        let map_table = tablet_map_owner(&schema, table)?;
        let count = self
            .cdc_state()
            .tablet_count(map_table)
            .unwrap_or(initial)
            .max(1);
        Some(TabletLayout {
            table: map_table,
            initial,
            count,
            rf: keyspace.replication.factor(DATACENTER),
        })
    }
}

/// The id of the table whose tablet map `table` uses: its own, or its base table's for a
/// CDC log; `None` for tables without tablets (system and virtual ones).
fn tablet_map_owner(schema: &crate::schema::Schema, table: &TableDef) -> Option<Uuid> {
    match &table.kind {
        TableKind::User | TableKind::View(_) => Some(table.id),
        TableKind::CdcLog { base } => schema.table(&table.keyspace, base).map(|b| b.id),
        TableKind::Virtual | TableKind::System => None,
    }
}
