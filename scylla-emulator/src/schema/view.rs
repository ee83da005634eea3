//! Materialized views: what a view's [`TableDef`] (of kind [`TableKind::View`]) knows about
//! its base table, as Scylla's `view_info` does (`view_info.hh`): the base, whether it was
//! created with `SELECT *`, and its `WHERE` clause.
//!
//! A view is a table of its keyspace (views and tables share one namespace, as in Scylla),
//! so SELECT plans and reads it as any table; writes to it are refused, and its rows are
//! maintained from its base's (`exec::view`).

use std::sync::Arc;

use uuid::Uuid;

use super::{KeyspaceDef, TableDef, TableKind};

/// The view-specific part of a view's definition (`system_schema.views`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewInfo {
    /// Base table name (same keyspace).
    pub(crate) base: String,
    /// Base table id (`base_table_id`).
    pub(crate) base_id: Uuid,
    /// `include_all_columns`: created with `SELECT *`.
    pub(crate) include_all_columns: bool,
    /// `where_clause` as Scylla stores it (`relations_to_where_clause`): the relations
    /// joined with ` AND `.
    pub(crate) where_clause: String,
    /// The equality restrictions of the view's `WHERE` clause (`ck = 1`): (base column
    /// name, value in its CQL serialization); a base row enters the view only if every one
    /// holds.
    pub(crate) filters: Vec<(String, Vec<u8>)>,
}

impl TableDef {
    /// The view part of a view's definition.
    pub(crate) fn view_info(&self) -> Option<&ViewInfo> {
        match &self.kind {
            TableKind::View(v) => Some(v),
            _ => None,
        }
    }

    /// Whether this is a materialized view.
    pub(crate) fn is_view(&self) -> bool {
        self.view_info().is_some()
    }
}

impl KeyspaceDef {
    /// The views of base table `base`, by name.
    pub(crate) fn views_of<'a>(&'a self, base: &'a str) -> impl Iterator<Item = &'a Arc<TableDef>> {
        self.tables
            .values()
            .filter(move |t| t.view_info().is_some_and(|v| v.base == base))
    }
}
