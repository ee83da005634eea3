//! DDL: the statements that change the schema, executed against an immutable [`Schema`]
//! snapshot.
//!
//! [`execute_ddl`] takes the current snapshot, one parsed DDL statement and a [`DdlContext`]
//! (the connection's keyspace, the time, the default CDC TTL) and returns a [`DdlOutcome`]:
//! the next snapshot (with a fresh version UUID, or `None` when nothing changed), the
//! [`SchemaChange`] to answer with (or `None` for a RESULT Void), the schema change events to
//! announce (every object the statement created, altered or dropped, as Scylla's schema
//! merge notifies them: `db/schema_applier.cc`), and the [`StorageChange`]s the executor
//! applies to table data before it swaps the snapshot in.
//! The statement either applies completely or fails with the [`CqlError`] Scylla returns;
//! the input snapshot is never modified.
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

use std::sync::Arc;

use uuid::Uuid;

use crate::cql::{QualifiedName, Statement};
use crate::frame::{CqlError, ErrorKind, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::system::{SYSTEM, SYSTEM_DISTRIBUTED, SYSTEM_SCHEMA, SYSTEM_TRACES};
use crate::schema::{Schema, TableDef};
use crate::storage::ColumnId;

mod index;
mod keyspace;
mod options;
mod table;
mod types;
mod view;

#[cfg(test)]
pub(crate) mod tests;

// The executor resolves the types of bind markers and casts with it.
pub(crate) use keyspace::tablet_count;
pub(crate) use types::resolve_type;

/// What a DDL statement needs besides the schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DdlContext<'a> {
    /// The connection's keyspace (from `USE`), for unqualified names.
    pub(crate) keyspace: Option<&'a str>,
    /// Current time, µs since the epoch (drop times of columns).
    pub(crate) now_micros: i64,
    /// `ttl` of the `cdc` option when a statement does not give one.
    pub(crate) default_cdc_ttl: u32,
}

/// The result of a DDL statement.
#[derive(Debug, Clone)]
pub(crate) struct DdlOutcome {
    /// The new snapshot with its version already replaced; `None` when the schema does not
    /// change (`IF [NOT] EXISTS` no-ops, `TRUNCATE`).
    pub(crate) schema: Option<Schema>,
    /// The schema change to answer with (RESULT SchemaChange); `None` answers RESULT Void.
    /// Note that `CREATE ... IF NOT EXISTS` of an existing object answers a `CREATED` change
    /// without changing the schema, as Scylla does since 6.0 (scylladb#16909), and
    /// `TRUNCATE` answers Void.
    pub(crate) change: Option<SchemaChange>,
    /// The events to announce to registered connections, in the order Scylla sends them.
    /// Empty when the schema does not change: Scylla announces no mutations then, so its
    /// migration listeners send nothing (`query_processor::announce_schema_statement`),
    /// even for the `CREATED` answer of an `IF NOT EXISTS` no-op. A statement that changes
    /// more than its own object announces each one: the CDC log table created, altered
    /// or dropped with its base, the tables whose columns use an altered type, the types
    /// and tables of a dropped keyspace.
    pub(crate) events: Vec<SchemaChange>,
    /// Changes to table data, to apply before the new snapshot is swapped in (also when
    /// `schema` is `None`: `TRUNCATE`).
    pub(crate) storage: Vec<StorageChange>,
    /// Warnings sent with the answer (`CREATE MATERIALIZED VIEW` has Scylla's).
    pub(crate) warnings: Vec<String>,
}

/// A change to table data that comes with a schema change.
#[derive(Debug, Clone)]
pub(crate) enum StorageChange {
    /// Create the empty data of a new table (clustering order from its definition:
    /// `TableDef::clustering_descending`).
    CreateTable(Arc<TableDef>),
    /// Drop a table's data.
    DropTable(Uuid),
    /// Remove the cells of dropped columns.
    DropColumns {
        /// Table id.
        table: Uuid,
        /// Storage ids of the dropped columns.
        columns: Vec<ColumnId>,
    },
    /// Remove all of a table's data.
    Truncate(Uuid),
    /// Fill a new materialized view from its base's rows, once the new schema is in place.
    BuildView(Arc<TableDef>),
}

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

impl DdlOutcome {
    /// An applied change: `next` gets a fresh version.
    fn applied(
        mut next: Schema,
        change: SchemaChangeType,
        target: SchemaChangeTarget,
        storage: Vec<StorageChange>,
    ) -> DdlOutcome {
        next.version = Uuid::new_v4();
        let change = SchemaChange { change, target };
        DdlOutcome {
            schema: Some(next),
            events: vec![change.clone()],
            change: Some(change),
            storage,
            warnings: Vec::new(),
        }
    }

    /// An applied change whose events are `events` (the statement's own change among them,
    /// where Scylla sends it).
    fn applied_with_events(
        next: Schema,
        change: SchemaChangeType,
        target: SchemaChangeTarget,
        storage: Vec<StorageChange>,
        events: Vec<SchemaChange>,
    ) -> DdlOutcome {
        let mut outcome = DdlOutcome::applied(next, change, target, storage);
        outcome.events = events;
        outcome
    }

    /// Nothing changes; the answer is `change` (or Void), and nothing is announced.
    fn unchanged(change: Option<(SchemaChangeType, SchemaChangeTarget)>) -> DdlOutcome {
        DdlOutcome {
            schema: None,
            change: change.map(|(change, target)| SchemaChange { change, target }),
            events: Vec::new(),
            storage: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// A `TABLE` schema change event.
fn table_event(change: SchemaChangeType, keyspace: &str, table: &str) -> SchemaChange {
    SchemaChange {
        change,
        target: SchemaChangeTarget::Table {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
        },
    }
}

/// `TABLE` events of `change` for `tables` in the order Scylla's schema merge notifies them:
/// ordinary tables before CDC log tables (`notify_tables_and_views`, `db/schema_applier.cc`),
/// each group by name.
fn table_events<'a>(
    change: SchemaChangeType,
    tables: impl IntoIterator<Item = &'a TableDef>,
) -> Vec<SchemaChange> {
    let mut tables: Vec<&TableDef> = tables.into_iter().collect();
    tables.sort_by(|a, b| (a.is_cdc_log(), &a.name).cmp(&(b.is_cdc_log(), &b.name)));
    tables
        .into_iter()
        .map(|t| table_event(change, &t.keyspace, &t.name))
        .collect()
}

/// The keyspace of a possibly unqualified name.
fn keyspace_of(name: &QualifiedName, ctx: &DdlContext<'_>) -> Result<String, CqlError> {
    match (&name.keyspace, ctx.keyspace) {
        (Some(ks), _) => Ok(ks.clone()),
        (None, Some(ks)) => Ok(ks.to_string()),
        (None, None) => Err(CqlError::invalid(
            "No keyspace has been specified. USE a keyspace, or explicitly specify \
             keyspace.tablename",
        )),
    }
}

/// The keyspaces users can never change (`system`, `system_schema`).
fn is_system_keyspace(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == SYSTEM || lower == SYSTEM_SCHEMA
}

/// A schema-altering permission, as Scylla names it in its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Permission {
    /// `CREATE`
    Create,
    /// `ALTER`
    Alter,
    /// `DROP`
    Drop,
}

impl Permission {
    /// The permission's name.
    fn as_str(self) -> &'static str {
        match self {
            Permission::Create => "CREATE",
            Permission::Alter => "ALTER",
            Permission::Drop => "DROP",
        }
    }
}

/// The CDC generation tables users may read and write but never alter or drop.
const PROTECTED_CDC_TABLES: [&str; 2] = [
    crate::schema::system::CDC_STREAMS_DESCRIPTIONS_V2,
    crate::schema::system::CDC_GENERATION_TIMESTAMPS,
];

/// Scylla's access check for a schema change of keyspace `ks` (or of its table `table`):
/// `system` and `system_schema` are not user-modifiable, nothing in `system_traces` can be
/// dropped, and the CDC generation tables of `system_distributed` cannot be altered or
/// dropped. The embedded cluster also refuses to drop `system_distributed` itself, which
/// the CDC machinery needs.
fn check_access(ks: &str, table: Option<&str>, permission: Permission) -> Result<(), CqlError> {
    let unauthorized = |m: String| CqlError::new(ErrorKind::Unauthorized, m);
    if is_system_keyspace(ks) {
        return Err(unauthorized(format!(
            "{ks} keyspace is not user-modifiable."
        )));
    }
    let lower = ks.to_ascii_lowercase();
    let resource = match table {
        Some(t) => format!("<table {ks}.{t}>"),
        None => format!("<keyspace {ks}>"),
    };
    let denied = match permission {
        Permission::Drop => {
            lower == SYSTEM_TRACES
                || (lower == SYSTEM_DISTRIBUTED
                    && table.is_none_or(|t| PROTECTED_CDC_TABLES.contains(&t)))
        }
        Permission::Alter => {
            lower == SYSTEM_DISTRIBUTED && table.is_some_and(|t| PROTECTED_CDC_TABLES.contains(&t))
        }
        Permission::Create => false,
    };
    if denied {
        return Err(unauthorized(format!(
            "Cannot {} {resource}",
            permission.as_str()
        )));
    }
    Ok(())
}

/// Whether `name` is a valid keyspace or table name (`\w+`).
fn is_word(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Longest keyspace or table name Scylla accepts.
const NAME_LENGTH: usize = 48;

/// `Keyspace x does not exist` (Invalid).
fn no_keyspace(ks: &str) -> CqlError {
    CqlError::invalid(format!("Keyspace {ks} does not exist"))
}

/// `unconfigured table t` (Invalid).
fn no_table(table: &str) -> CqlError {
    CqlError::invalid(format!("unconfigured table {table}"))
}
