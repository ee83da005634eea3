//! DDL: the statements that change the schema, executed against an immutable [`Schema`]
//! snapshot.
//!
//! [`execute_ddl`] takes the current snapshot, one parsed DDL statement and a [`DdlContext`]
//! (the connection's keyspace, the time, the default CDC TTL) and returns a [`DdlOutcome`]:
//! the next snapshot (with a fresh version UUID, or `None` when nothing changed), the
//! [`SchemaChange`] to answer with and to announce (or `None` for a RESULT Void), and the
//! [`StorageChange`]s the executor applies to table data before it swaps the snapshot in.
//! The statement either applies completely or fails with the [`CqlError`] Scylla returns;
//! the input snapshot is never modified.
//!
//! - `keyspace`: CREATE / ALTER / DROP KEYSPACE, replication and tablets options.
//! - `table`: CREATE / ALTER / DROP TABLE and TRUNCATE, including the life cycle of the CDC
//!   log table (created, updated, detached, re-attached and dropped with its base; the log's
//!   own shape lives in [`crate::cdc::log_schema`]).
//! - `options`: the `WITH` properties of tables.
//! - `types`: [`resolve_type`] (a written type against the keyspace's user types, with
//!   Scylla's freezing rules) and CREATE / ALTER / DROP TYPE.

use std::sync::Arc;

use uuid::Uuid;

use crate::cql::{QualifiedName, Statement};
use crate::frame::{CqlError, ErrorKind, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::system::{SYSTEM, SYSTEM_DISTRIBUTED, SYSTEM_SCHEMA, SYSTEM_TRACES};
use crate::schema::{Replication, Schema, TableDef};
use crate::storage::ColumnId;
use crate::types::UserType;

mod keyspace;
mod options;
mod table;
mod types;

#[cfg(test)]
pub(crate) mod tests;

// The executor resolves the types of bind markers and casts with it.
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
    /// The schema change to answer with (RESULT SchemaChange) and to announce to registered
    /// connections; `None` answers RESULT Void. Note that `CREATE ... IF NOT EXISTS` of an
    /// existing object answers a `CREATED` change without changing the schema, as Scylla
    /// does since 6.0 (scylladb#16909), and `TRUNCATE` answers Void.
    pub(crate) change: Option<SchemaChange>,
    /// Changes to table data, to apply before the new snapshot is swapped in (also when
    /// `schema` is `None`: `TRUNCATE`).
    pub(crate) storage: Vec<StorageChange>,
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
}

/// Executes a DDL statement (`CREATE/ALTER/DROP KEYSPACE`, `CREATE/ALTER/DROP TABLE`,
/// `TRUNCATE`, `CREATE/ALTER/DROP TYPE`) against `schema`. Any other statement is a server
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
        _ => Err(CqlError::server("not a DDL statement")),
    }
}

/// The `SCHEMA_CHANGE` events Scylla pushes to registered connections when the schema goes
/// from `old` to `new`. Scylla derives them from the difference of the schema tables, not
/// from the statement (`schema_applier::post_commit` in `db/schema_applier.cc`): keyspaces
/// created, altered and dropped, then user types created, altered and dropped, then tables
/// dropped, created and altered. So one statement can announce several objects:
/// `CREATE TABLE ... WITH cdc` creates the base and its log, `DROP KEYSPACE` drops every
/// type and table in it, and the log of a CDC table changes with its base's columns. An
/// unchanged schema announces nothing.
pub(crate) fn schema_change_events(old: &Schema, new: &Schema) -> Vec<SchemaChange> {
    use std::collections::BTreeMap;

    /// Objects by (keyspace, name) → (created, altered, dropped) names.
    type Objects<'a, T> = BTreeMap<(&'a str, &'a str), T>;
    fn diff<'a, T: PartialEq>(
        old: &Objects<'a, T>,
        new: &Objects<'a, T>,
    ) -> [Vec<(&'a str, &'a str)>; 3] {
        let created = new.keys().filter(|k| !old.contains_key(*k)).copied();
        let dropped = old.keys().filter(|k| !new.contains_key(*k)).copied();
        let altered = new
            .iter()
            .filter(|(k, v)| old.get(*k).is_some_and(|o| o != *v))
            .map(|(k, _)| *k);
        [created.collect(), altered.collect(), dropped.collect()]
    }
    // A keyspace is altered when its own row changes, not when its tables or types do.
    type KeyspaceRow<'a> = (&'a Replication, bool, Option<u32>);
    fn keyspaces(s: &Schema) -> Objects<'_, KeyspaceRow<'_>> {
        s.keyspaces
            .values()
            .map(|k| {
                let row = (&k.replication, k.durable_writes, k.initial_tablets);
                ((k.name.as_str(), ""), row)
            })
            .collect()
    }
    fn types(s: &Schema) -> Objects<'_, &UserType> {
        s.keyspaces
            .values()
            .flat_map(|k| {
                k.types
                    .iter()
                    .map(|(n, t)| ((k.name.as_str(), n.as_str()), &**t))
            })
            .collect()
    }
    fn tables(s: &Schema) -> Objects<'_, &TableDef> {
        s.keyspaces
            .values()
            .flat_map(|k| {
                k.tables
                    .iter()
                    .map(|(n, t)| ((k.name.as_str(), n.as_str()), &**t))
            })
            .collect()
    }
    let [ks_created, ks_altered, ks_dropped] = diff(&keyspaces(old), &keyspaces(new));
    let [types_created, types_altered, types_dropped] = diff(&types(old), &types(new));
    let [tables_created, tables_altered, tables_dropped] = diff(&tables(old), &tables(new));

    use SchemaChangeType::{Created, Dropped, Updated};
    type Target = fn(&str, &str) -> SchemaChangeTarget;
    let keyspace: Target = |ks, _| SchemaChangeTarget::Keyspace {
        keyspace: ks.to_string(),
    };
    let user_type: Target = |ks, name| SchemaChangeTarget::Type {
        keyspace: ks.to_string(),
        name: name.to_string(),
    };
    let table: Target = |ks, name| SchemaChangeTarget::Table {
        keyspace: ks.to_string(),
        table: name.to_string(),
    };
    let mut events = Vec::new();
    let mut announce = |change, names: Vec<(&str, &str)>, target: Target| {
        events.extend(names.into_iter().map(|(ks, name)| SchemaChange {
            change,
            target: target(ks, name),
        }));
    };
    announce(Created, ks_created, keyspace);
    announce(Updated, ks_altered, keyspace);
    announce(Dropped, ks_dropped, keyspace);
    announce(Created, types_created, user_type);
    announce(Updated, types_altered, user_type);
    announce(Dropped, types_dropped, user_type);
    announce(Dropped, tables_dropped, table);
    announce(Created, tables_created, table);
    announce(Updated, tables_altered, table);
    events
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
        DdlOutcome {
            schema: Some(next),
            change: Some(SchemaChange { change, target }),
            storage,
        }
    }

    /// Nothing changes; the answer is `change` (or Void).
    fn unchanged(change: Option<(SchemaChangeType, SchemaChangeTarget)>) -> DdlOutcome {
        DdlOutcome {
            schema: None,
            change: change.map(|(change, target)| SchemaChange { change, target }),
            storage: Vec::new(),
        }
    }
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
