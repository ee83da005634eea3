//! A keyspace's definition ([`KeyspaceDef`]): its replication settings ([`Replication`]), its
//! tables (views among them, with the same namespace as in Scylla) and its user types.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::index::IndexDef;
use super::table::{TableDef, TableKind, cdc_log_name};
use crate::types::UserType;

/// Replication settings of a keyspace, as stored in `system_schema.keyspaces.replication`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replication {
    /// The map, with `class` fully qualified and per-DC factors for NetworkTopologyStrategy.
    pub(crate) options: BTreeMap<String, String>,
}

impl Replication {
    /// The fully qualified strategy class.
    pub(crate) fn class(&self) -> &str {
        self.options.get("class").map(String::as_str).unwrap_or("")
    }

    /// Replication factor in the single data center the embedded cluster has.
    pub(crate) fn factor(&self, datacenter: &str) -> usize {
        let get = |k: &str| self.options.get(k).and_then(|v| v.parse::<usize>().ok());
        if self.class().ends_with("LocalStrategy") || self.class().ends_with("EverywhereStrategy") {
            return 1;
        }
        get("replication_factor")
            .or_else(|| get(datacenter))
            .unwrap_or(1)
    }
}

/// A keyspace definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyspaceDef {
    /// Name, case preserved.
    pub(crate) name: String,
    /// Replication.
    pub(crate) replication: Replication,
    /// `durable_writes`
    pub(crate) durable_writes: bool,
    /// `Some(initial tablet count)` for a tablets keyspace, `None` for vnodes.
    pub(crate) initial_tablets: Option<u32>,
    /// Tables by name.
    pub(crate) tables: BTreeMap<String, Arc<TableDef>>,
    /// User types by name.
    pub(crate) types: BTreeMap<String, Arc<UserType>>,
    /// Whether this is one of the built-in system keyspaces.
    pub(crate) system: bool,
}

impl KeyspaceDef {
    /// The CDC log table of base table `base` of this keyspace (attached or detached).
    pub(crate) fn cdc_log_of(&self, base: &str) -> Option<&Arc<TableDef>> {
        self.tables
            .get(&cdc_log_name(base))
            .filter(|t| matches!(&t.kind, TableKind::CdcLog { base: b } if b == base))
    }

    /// The views of base table `base`, by name.
    pub(crate) fn views_of<'a>(&'a self, base: &'a str) -> impl Iterator<Item = &'a Arc<TableDef>> {
        self.tables
            .values()
            .filter(move |t| t.view_info().is_some_and(|v| v.base == base))
    }

    /// Whether the keyspace uses tablets.
    pub(crate) fn uses_tablets(&self) -> bool {
        self.initial_tablets.is_some()
    }

    /// The table that has the index `name`, and the index (index names are unique in a
    /// keyspace: `find_indexed_table`).
    pub(crate) fn indexed_table(&self, name: &str) -> Option<(&Arc<TableDef>, &IndexDef)> {
        self.tables
            .values()
            .find_map(|t| t.index(name).map(|i| (t, i)))
    }
}
