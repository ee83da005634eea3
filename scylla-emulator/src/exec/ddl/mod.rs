//! DDL: the statements that change the schema, executed against an immutable [`Schema`]
//! snapshot.
//!
//! [`execute_ddl`] takes the current snapshot, one parsed DDL statement and a [`DdlContext`]
//! (the connection's keyspace, the time, the default CDC TTL) and returns a [`DdlOutcome`]:
//! the next snapshot (with a fresh version UUID, or `None` when nothing changed), the
//! [`SchemaChange`](crate::frame::SchemaChange) to answer with (or `None` for a RESULT Void),
//! the schema change events to announce (every object the statement created, altered or
//! dropped, as Scylla's schema merge notifies them: `db/schema_applier.cc`), and the
//! [`StorageChange`]s the executor applies to table data before it swaps the snapshot in.
//! The statement either applies completely or fails with the [`CqlError`] Scylla returns;
//! the input snapshot is never modified.
//!
//! Below the statements: `outcome` ([`DdlContext`], [`DdlOutcome`], [`StorageChange`]) and
//! `checks` (names, access rules, missing objects), which every statement uses.
//!
//! - `keyspace`: CREATE / ALTER / DROP KEYSPACE, replication and tablets options.
//! - `table`: CREATE / ALTER / DROP TABLE and TRUNCATE, including the life cycle of the CDC
//!   log table (created, updated, detached, re-attached and dropped with its base; the log's
//!   own shape lives in [`crate::cdc::log_schema`]).
//! - `view`: CREATE / ALTER / DROP MATERIALIZED VIEW with Scylla's validation, and what a
//!   base's views require of DROP TABLE, ALTER TABLE and TRUNCATE of the base.
//! - `options`: the `WITH` properties of tables.
//! - `types`: [`resolve_type`] (a written type against the keyspace's user types, with
//!   Scylla's freezing rules) and CREATE / ALTER / DROP TYPE.

use crate::cql::Statement;
use crate::frame::CqlError;
use crate::schema::Schema;

mod checks;
mod index;
mod keyspace;
mod options;
mod outcome;
mod table;
mod types;
mod view;

#[cfg(test)]
pub(crate) mod tests;

// What the executor takes from DDL: the types of bind markers and casts, the tablet count
// of a keyspace, and what a statement gives.
pub(crate) use keyspace::tablet_count;
pub(crate) use outcome::{DdlContext, DdlOutcome, StorageChange};
pub(crate) use types::resolve_type;

/// Executes a DDL statement (`CREATE/ALTER/DROP KEYSPACE`, `CREATE/ALTER/DROP TABLE`,
/// `TRUNCATE`, `CREATE/ALTER/DROP TYPE`, `CREATE/DROP INDEX`) against `schema`. Any other statement is a server
/// error (the executor only routes DDL here).
pub(crate) fn execute_ddl(
    schema: &Schema,
    stmt: &Statement,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    match stmt {
        Statement::CreateKeyspace(s) => keyspace::create(schema, s, ctx),
        Statement::AlterKeyspace(s) => keyspace::alter(schema, s, ctx),
        Statement::DropKeyspace(s) => keyspace::drop(schema, s),
        Statement::CreateTable(s) => table::create(schema, s, ctx),
        Statement::AlterTable(s) => table::alter(schema, s, ctx),
        Statement::DropTable(s) => table::drop(schema, s, ctx),
        Statement::Truncate(s) => table::truncate(schema, s, ctx),
        Statement::CreateType(s) => types::create(schema, s, ctx),
        Statement::AlterType(s) => types::alter(schema, s, ctx),
        Statement::DropType(s) => types::drop(schema, s, ctx),
        Statement::CreateIndex(s) => index::create(schema, s, ctx),
        Statement::DropIndex(s) => index::drop(schema, s, ctx),
        Statement::CreateView(s) => view::create(schema, s, ctx),
        Statement::AlterView(s) => view::alter(schema, s, ctx),
        Statement::DropView(s) => view::drop(schema, s, ctx),
        _ => Err(CqlError::server("not a DDL statement")),
    }
}
