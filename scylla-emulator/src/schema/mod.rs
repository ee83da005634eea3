//! Schema of the embedded cluster: keyspaces, tables, columns, user types and their options.
//!
//! A [`Schema`] is an immutable snapshot (keyspaces → tables and types) with a version UUID;
//! DDL builds a new snapshot and swaps it in, so readers hold an `Arc<Schema>` without locks.
//! A [`TableDef`] lists its columns in Scylla's order (partition key, clustering key, then
//! static columns, then regular columns, each group sorted by name bytes) and carries its
//! [`TableOptions`], including the [`CdcOptions`] that decide whether writes are logged, and
//! the [`DroppedColumn`](table::DroppedColumn)s it remembers. A table of kind
//! [`TableKind::CdcLog`] is the CDC log of the base table it names; it is *attached* while
//! that base has CDC enabled and *detached* (kept, no longer written) once CDC is disabled
//! ([`Schema::cdc_log_attached`]). [`KeyspaceDef`]s hold [`Replication`] settings, tables and
//! user types ([`UserType`](crate::types::UserType)).
//!
//! The files stand in layers, each importing only those below it:
//!
//! - [`options`]: a table's properties ([`TableOptions`], [`CdcOptions`]); [`view`]: what a
//!   materialized view ([`TableKind::View`]) knows of its base table.
//! - [`index`]: a secondary index of a table ([`IndexDef`]).
//! - [`table`]: a table's definition ([`TableDef`]: columns, kind, dropped columns, indexes).
//! - [`keyspace`]: a keyspace's definition ([`KeyspaceDef`]); [`index_view`]: the layout of
//!   the materialized view backing an index, built from its base table.
//! - [`system`]: definitions of the system tables (`system.local`, `system_schema.*`, the CDC
//!   metadata tables) and the rows of the schema tables rendered from a snapshot.
//! - this file: the [`Schema`] snapshot, which starts from the system keyspaces.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

pub(crate) mod index;
pub(crate) mod index_view;
pub(crate) mod keyspace;
pub(crate) mod options;
pub(crate) mod system;
pub(crate) mod table;
pub(crate) mod view;

pub(crate) use index::IndexDef;
pub(crate) use keyspace::{KeyspaceDef, Replication};
pub(crate) use options::{CdcOptions, PreimageMode, TableOptions};
pub(crate) use table::{
    CDC_LOG_SUFFIX, ClusteringOrder, ColumnDef, ColumnKind, TableDef, TableKind, cdc_log_name,
};

/// An immutable snapshot of the whole schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schema {
    /// The schema version every node reports; replaced on every DDL.
    pub(crate) version: Uuid,
    /// Keyspaces by name.
    pub(crate) keyspaces: BTreeMap<String, KeyspaceDef>,
}

impl Schema {
    /// The schema of a fresh cluster: the system keyspaces only, with a random version.
    pub(crate) fn with_system_keyspaces() -> Schema {
        Schema {
            version: Uuid::new_v4(),
            keyspaces: system::system_keyspaces()
                .into_iter()
                .map(|k| (k.name.clone(), k))
                .collect(),
        }
    }

    /// Looks a keyspace up.
    pub(crate) fn keyspace(&self, name: &str) -> Option<&KeyspaceDef> {
        self.keyspaces.get(name)
    }

    /// Looks a table up.
    pub(crate) fn table(&self, keyspace: &str, table: &str) -> Option<&Arc<TableDef>> {
        self.keyspaces.get(keyspace)?.tables.get(table)
    }

    /// Every table of every keyspace.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<TableDef>> {
        self.keyspaces.values().flat_map(|k| k.tables.values())
    }

    /// Looks a table up by id.
    pub(crate) fn table_by_id(&self, id: Uuid) -> Option<&Arc<TableDef>> {
        self.tables().find(|t| t.id == id)
    }

    /// The CDC log table of `base` (attached or detached), if it has one.
    pub(crate) fn cdc_log_of(&self, base: &TableDef) -> Option<&Arc<TableDef>> {
        self.keyspaces.get(&base.keyspace)?.cdc_log_of(&base.name)
    }

    /// The base table of a CDC log table.
    pub(crate) fn cdc_base_of(&self, log: &TableDef) -> Option<&Arc<TableDef>> {
        match &log.kind {
            TableKind::CdcLog { base } => self.table(&log.keyspace, base),
            _ => None,
        }
    }

    /// Whether `log` is a CDC log table that is attached: its base table has CDC enabled, so
    /// writes to the base are logged into it and its columns follow the base's. A detached
    /// log (CDC disabled on the base) is kept as it is until CDC is enabled again.
    pub(crate) fn cdc_log_attached(&self, log: &TableDef) -> bool {
        self.cdc_base_of(log)
            .is_some_and(|base| base.options.cdc_enabled())
    }
}
