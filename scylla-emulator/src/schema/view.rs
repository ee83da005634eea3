//! Materialized views: what a view's [`TableDef`](super::TableDef) (of kind
//! [`TableKind::View`](super::TableKind::View)) knows about its base table, as Scylla's
//! `view_info` does (`view_info.hh`): the base, whether it was created with `SELECT *`, and
//! its `WHERE` clause.
//!
//! A view is a table of its keyspace (views and tables share one namespace, as in Scylla),
//! so SELECT plans and reads it as any table; writes to it are refused, and its rows are
//! maintained from its base's (`exec::view`).

use uuid::Uuid;

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
