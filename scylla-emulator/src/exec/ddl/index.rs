//! CREATE INDEX and DROP INDEX, as ScyllaDB 2025.x checks and applies them
//! (`cql3/statements/create_index_statement.cc`, `drop_index_statement.cc`).
//!
//! An index becomes an [`IndexDef`] of its base table. Scylla also creates the index's
//! backing materialized view `<name>_index` in the same schema change and announces it:
//! CREATE INDEX announces CREATED for the view, then UPDATED for the base table (views
//! created before tables altered: `notify_tables_and_views`, db/schema_applier.cc), and
//! answers UPDATED for the base table; DROP INDEX announces DROPPED for the view, then
//! UPDATED for the base. The embedded cluster keeps no view data: queries by an indexed
//! column read the base table (`exec::index`), which gives the rows a view would.

use std::sync::Arc;

use crate::cql::{CreateIndex, DropIndex, IndexTargetExpr};
use crate::frame::{CqlError, SchemaChangeTarget, SchemaChangeType};
use crate::schema::index::{INDEX_VIEW_SUFFIX, IndexTarget};
use crate::schema::{ColumnDef, ColumnKind, IndexDef, KeyspaceDef, Schema, TableDef};
use crate::types::CqlType;

use super::checks::{NAME_LENGTH, Permission, check_access, keyspace_of, no_keyspace, no_table};
use super::outcome::{DdlContext, DdlOutcome, table_event};
use super::types::references_duration;

/// `index_target::target_type` of a written target, before Scylla's rewrite for
/// collections: `full` is kept apart (only frozen collections take it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Regular,
    Values,
    Keys,
    Entries,
    Full,
}

impl Written {
    /// `to_sstring(target_type)`.
    fn as_str(self) -> &'static str {
        match self {
            Written::Regular => "regular_values",
            Written::Values => "values",
            Written::Keys => "keys",
            Written::Entries => "entries",
            Written::Full => "full",
        }
    }

    /// `target_type_name` (create_index_statement.cc).
    fn type_name(self) -> &'static str {
        match self {
            Written::Regular => "value",
            Written::Values => "values()",
            Written::Keys => "keys()",
            Written::Entries => "entries()",
            Written::Full => "full()",
        }
    }
}

/// Custom index classes Scylla knows (`get_custom_class_factory`) or rewrites (SAI).
fn known_custom_class(class: &str) -> bool {
    let lower = class.to_ascii_lowercase();
    lower == "vector_index"
        || lower == "fulltext_index"
        || class == "org.apache.cassandra.index.sai.StorageAttachedIndex"
        || lower == "storageattachedindex"
        || lower == "sai"
}

/// The `target` option of a single-column index (`serialize_targets`): the column as CQL
/// writes it, inside `keys(...)`/`values(...)`/`entries(...)` for collection targets.
fn single_target_option(column: &str, target: IndexTarget) -> String {
    let quoted = super::super::describe::maybe_quote(column);
    match target.function() {
        None => quoted,
        Some(f) => format!("{f}({quoted})"),
    }
}

/// Whether keyspace `ks` has a table (or an index view) named `name` (`has_schema`).
fn has_schema(ks: &KeyspaceDef, name: &str) -> bool {
    ks.tables.contains_key(name)
        || ks
            .tables
            .values()
            .any(|t| t.indexes.iter().any(|i| i.view_name() == name))
}

/// Every index name of a keyspace (`existing_index_names`).
fn index_names(ks: &KeyspaceDef) -> impl Iterator<Item = &str> {
    ks.tables
        .values()
        .flat_map(|t| t.indexes.iter().map(|i| i.name.as_str()))
}

/// `index_metadata::get_default_index_name` then `get_available_index_name`:
/// `<table>_<column>_idx` with the column's non-word characters dropped, then `_1`, `_2`, ...
/// until neither an index nor a table (view) has the name.
fn default_index_name(ks: &KeyspaceDef, table: &str, root: &str) -> String {
    let root: String = root
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    let base = format!("{table}_{root}_idx");
    let taken = |name: &str| {
        has_schema(ks, &format!("{name}{INDEX_VIEW_SUFFIX}")) || index_names(ks).any(|n| n == name)
    };
    let mut name = base.clone();
    let mut i = 0;
    while taken(&name) {
        i += 1;
        name = format!("{base}_{i}");
    }
    name
}

/// `validate_for_local_index`: the first target `(a, b)` must be the whole partition key, in
/// order, and be followed by the indexed column, which is not static.
fn validate_local(stmt: &CreateIndex, table: &TableDef) -> Result<(), CqlError> {
    if let Some(IndexTargetExpr::Columns(columns)) = stmt.targets.first() {
        let pk: Vec<&str> = table.partition_key().map(|c| c.name.as_str()).collect();
        let mut next = 0;
        for name in columns {
            let is_pk = table
                .column(name)
                .is_some_and(|c| c.kind == ColumnKind::PartitionKey);
            if !is_pk {
                return Err(CqlError::invalid(format!(
                    "Local index definition must contain full partition key only. Redundant column: {name}"
                )));
            }
            if next == pk.len() {
                return Err(CqlError::invalid(format!(
                    "Duplicate column definition in local index: {name}"
                )));
            }
            if pk[next] != name {
                break;
            }
            next += 1;
        }
        if let Some(missing) = pk.get(next) {
            return Err(CqlError::invalid(format!(
                "Local index definition must contain full partition key only. Missing column: {missing}"
            )));
        }
        if stmt.targets.len() == 1 {
            return Err(CqlError::invalid(
                "Local index definition must provide an indexed column, not just partition key",
            ));
        }
    }
    for t in stmt.targets.iter().skip(1) {
        match t {
            IndexTargetExpr::Columns(_) => {
                return Err(CqlError::invalid(
                    "Multi-column index targets are currently only supported for partition key",
                ));
            }
            IndexTargetExpr::Column { column, .. } => {
                if table
                    .column(column)
                    .is_some_and(|c| c.kind == ColumnKind::Static)
                {
                    return Err(CqlError::invalid(
                        "Local indexes containing static columns are not supported.",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The column name of a target as Scylla prints it in errors (`index_target::column_name`).
fn target_column_name(t: &IndexTargetExpr) -> String {
    match t {
        IndexTargetExpr::Column { column, .. } => column.clone(),
        IndexTargetExpr::Columns(c) => format!("({})", c.join(",")),
    }
}

/// `CREATE [CUSTOM] INDEX ...`: the table and the statement's shape are checked, then the
/// indexed column and what of it is indexed, then the index is named and added, each with
/// Scylla's errors in Scylla's order.
pub(super) fn create(
    schema: &Schema,
    stmt: &CreateIndex,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    // create_index_statement::validate
    if stmt.targets.is_empty() && !stmt.custom {
        return Err(CqlError::invalid(
            "Only CUSTOM indexes can be created without specifying a target column",
        ));
    }
    let ks_name = keyspace_of(&stmt.table, ctx)?;
    let table_name = &stmt.table.name;
    check_access(&ks_name, Some(table_name), Permission::Alter)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let Some(table) = ks.tables.get(table_name) else {
        return Err(no_table(table_name));
    };
    let compound = check_indexed_table(stmt, table)?;
    let given_name = stmt.name.clone().unwrap_or_default();
    check_index_statement(stmt, table, &given_name)?;
    let local = matches!(stmt.targets.first(), Some(IndexTargetExpr::Columns(_)));
    let Some(IndexTargetExpr::Column { function, column }) = stmt.targets.last() else {
        return Err(CqlError::invalid(
            "Only CUSTOM indexes can be created without specifying a target column",
        ));
    };
    let written = match function.as_deref() {
        None => Written::Regular,
        Some("values") => Written::Values,
        Some("keys") => Written::Keys,
        Some("entries") => Written::Entries,
        _ => Written::Full,
    };
    let cd = indexed_column(table, column, compound)?;
    let target = index_target(cd, column, written, local)?;
    if !given_name.is_empty() && index_names(ks).any(|n| n == given_name) && !stmt.if_not_exists {
        return Err(CqlError::invalid("Index already exists"));
    }
    let index = build_index(ks, table, given_name, (column, cd), target, local)?;
    // `find_index_noname`: the same target (and locality) under another name.
    if let Some(existing) = table
        .indexes
        .iter()
        .find(|i| i.target_option == index.target_option && i.local == index.local)
    {
        if stmt.if_not_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        return Err(CqlError::invalid(format!(
            "Index {} is a duplicate of existing index {}",
            index.name, existing.name
        )));
    }
    let view_name = index.view_name();
    if has_schema(ks, &view_name) {
        return Err(CqlError::invalid(format!(
            "Index {} cannot be created, because table {view_name} already exists",
            index.name
        )));
    }
    let mut updated = (**table).clone();
    updated.indexes.push(index);
    updated.indexes.sort_by(|a, b| a.name.cmp(&b.name));
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    next_ks.tables.insert(table_name.clone(), Arc::new(updated));
    let events = vec![
        table_event(SchemaChangeType::Created, &ks_name, &view_name),
        table_event(SchemaChangeType::Updated, &ks_name, table_name),
    ];
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Updated,
        table_target(&ks_name, table_name),
        Vec::new(),
        events,
    ))
}

/// What an indexed table must not be (`validate_while_executing`); whether its storage is
/// compound.
fn check_indexed_table(stmt: &CreateIndex, table: &TableDef) -> Result<bool, CqlError> {
    if !stmt.properties.is_empty() {
        return Err(CqlError::invalid(
            "Properties of an index's view are not supported by the embedded cluster",
        ));
    }
    if table.is_counter() {
        return Err(CqlError::invalid(
            "Secondary indexes are not supported on counter tables",
        ));
    }
    let clustering = table.clustering_key().count();
    if table.compact_storage && clustering > 0 {
        return Err(CqlError::invalid(
            "Secondary indexes are not supported on COMPACT STORAGE tables that have clustering columns",
        ));
    }
    Ok(!table.compact_storage || clustering > 1)
}

/// The checks of the statement's name, kind and targets: no custom index, and several
/// targets only as a local index's `((pk), ck)`.
fn check_index_statement(
    stmt: &CreateIndex,
    table: &TableDef,
    given_name: &str,
) -> Result<(), CqlError> {
    if given_name.len() > NAME_LENGTH {
        return Err(CqlError::invalid(format!(
            "index names shouldn't be more than {NAME_LENGTH} characters long (got \"{given_name}\")"
        )));
    }
    validate_local(stmt, table)?;
    let custom_class = stmt.using.as_deref();
    if stmt.custom || custom_class.is_some() {
        return Err(match custom_class {
            Some(c) if !known_custom_class(c) => {
                CqlError::invalid(format!("Non-supported custom class '{c}' provided"))
            }
            _ => CqlError::invalid(
                "Custom (vector and full-text) indexes are not supported by the embedded cluster",
            ),
        });
    }
    if stmt.targets.len() > 1 {
        // validate_targets_for_multi_column_index
        if stmt.targets.len() > 2 || matches!(stmt.targets[0], IndexTargetExpr::Column { .. }) {
            return Err(CqlError::invalid(
                "Only CUSTOM indexes support multiple columns",
            ));
        }
        let mut seen = Vec::new();
        for t in &stmt.targets {
            let name = target_column_name(t);
            if seen.contains(&name) {
                return Err(CqlError::invalid(format!(
                    "Duplicate column {name} in index target list"
                )));
            }
            seen.push(name);
        }
    }
    Ok(())
}

/// The indexed column, with the checks of its type and kind.
fn indexed_column<'t>(
    table: &'t TableDef,
    column: &str,
    compound: bool,
) -> Result<&'t ColumnDef, CqlError> {
    let Some(cd) = table.column(column) else {
        return Err(CqlError::invalid(format!(
            "No column definition found for column {column}"
        )));
    };
    if references_duration(&cd.typ) {
        let t = &cd.typ;
        return Err(CqlError::invalid(if t.is_collection() {
            "Secondary indexes are not supported on collections containing durations"
        } else if matches!(t, CqlType::Udt { .. }) {
            "Secondary indexes are not supported on UDTs containing durations"
        } else if matches!(t, CqlType::Tuple(_)) {
            "Secondary indexes are not supported on tuples containing durations"
        } else {
            "Secondary indexes are not supported on duration columns"
        }));
    }
    if !compound && cd.kind.is_primary_key() {
        return Err(CqlError::invalid(
            "Secondary indexes are not supported on PRIMARY KEY columns in COMPACT STORAGE tables",
        ));
    }
    if cd.kind == ColumnKind::PartitionKey && table.partition_key().count() == 1 {
        return Err(CqlError::invalid(format!(
            "Cannot create secondary index on partition key column {column}"
        )));
    }
    Ok(cd)
}

/// What of column `cd` an index indexes, given the function written around it.
fn index_target(
    cd: &ColumnDef,
    column: &str,
    written: Written,
    local: bool,
) -> Result<IndexTarget, CqlError> {
    if cd.typ.is_multi_cell() {
        if !cd.typ.is_collection() {
            return Err(CqlError::invalid(format!(
                "Cannot create secondary index on UDT column {column}"
            )));
        }
        if local {
            return Err(CqlError::invalid(format!(
                "Local secondary index on collection column {column} is not implemented yet."
            )));
        }
        if written == Written::Full {
            return Err(CqlError::invalid(
                "full() indexes can only be created on frozen collections",
            ));
        }
        let is_map = matches!(cd.typ, CqlType::Map { .. });
        return match written {
            Written::Keys | Written::Entries if !is_map => Err(CqlError::invalid(format!(
                "Cannot create secondary index on {} of column {column} with non-map type",
                written.as_str()
            ))),
            Written::Keys => Ok(IndexTarget::Keys),
            Written::Entries => Ok(IndexTarget::Entries),
            // rewrite_target_for_collection: the values of a set are its keys.
            _ if matches!(cd.typ, CqlType::Set { .. }) => Ok(IndexTarget::Keys),
            _ => Ok(IndexTarget::CollectionValues),
        };
    }
    if cd.typ.is_collection() {
        if written != Written::Full {
            return Err(CqlError::invalid(format!(
                "Cannot create index on {} of frozen collection column {column}",
                written.type_name()
            )));
        }
        return Ok(IndexTarget::Values);
    }
    if written == Written::Full {
        return Err(CqlError::invalid(
            "full() indexes can only be created on frozen collections",
        ));
    }
    if written != Written::Regular {
        let n = written.type_name();
        return Err(CqlError::invalid(format!(
            "Cannot create index on {n} of column {column}; only non-frozen collections support {n} indexes"
        )));
    }
    Ok(IndexTarget::Values)
}

/// The index's definition (`build_index_schema`) on `column` (as written; `cd` its
/// definition): its name (given, or the default one), its target option and the options of
/// its view.
fn build_index(
    ks: &KeyspaceDef,
    table: &TableDef,
    given_name: String,
    (column, cd): (&str, &ColumnDef),
    target: IndexTarget,
    local: bool,
) -> Result<IndexDef, CqlError> {
    let name = if given_name.is_empty() {
        default_index_name(ks, &table.name, column)
    } else {
        given_name
    };
    let target_option = if local {
        let pk: Vec<String> = table
            .partition_key()
            .map(|c| crate::schema::index::json_string(&c.name))
            .collect();
        format!(
            "{{\"pk\":[{}],\"ck\":[{}]}}",
            pk.join(","),
            crate::schema::index::json_string(column)
        )
    } else {
        single_target_option(column, target)
    };
    if local && cd.kind == ColumnKind::PartitionKey {
        // create_view_for_index
        return Err(CqlError::invalid(
            "Local indexing based on partition key column is not allowed, since whole base partition key must be used in queries anyway. Use global indexing instead.",
        ));
    }
    // The view's tombstone_gc is that of a table of its keyspace (`get_default_tombstone_gc_mode`);
    // a local index's view is co-located with its base on tablets.
    let view_options = crate::schema::TableOptions {
        tombstone_gc: Some(super::options::default_tombstone_gc(
            ks,
            !(local && ks.uses_tablets()),
        )),
        ..Default::default()
    };
    Ok(IndexDef {
        name,
        column: column.to_string(),
        target,
        local,
        target_option,
        view_id: uuid::Uuid::new_v4(),
        view_options,
    })
}

/// `DROP INDEX [IF EXISTS] [ks.]name`.
pub(super) fn drop(
    schema: &Schema,
    stmt: &DropIndex,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let name = &stmt.name.name;
    let Some((table, index)) = ks.indexed_table(name) else {
        if stmt.if_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        return Err(CqlError::invalid(format!(
            "Index '{name}' could not be found in any of the tables of keyspace '{ks_name}'"
        )));
    };
    check_access(&ks_name, Some(&table.name), Permission::Alter)?;
    let view_name = index.view_name();
    let table_name = table.name.clone();
    let mut updated = (**table).clone();
    updated.indexes.retain(|i| i.name != *name);
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    next_ks.tables.insert(table_name.clone(), Arc::new(updated));
    let events = vec![
        table_event(SchemaChangeType::Dropped, &ks_name, &view_name),
        table_event(SchemaChangeType::Updated, &ks_name, &table_name),
    ];
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Updated,
        table_target(&ks_name, &table_name),
        Vec::new(),
        events,
    ))
}

/// The `TABLE` target of a schema change.
fn table_target(keyspace: &str, table: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: keyspace.to_string(),
        table: table.to_string(),
    }
}

/// `Cannot drop column ...: materialized view ... needs this column` when an index's view
/// has a column of that name (alter_table_statement::drop_column; an index on a key column
/// keeps every regular column as a virtual column of its view).
pub(super) fn check_drop_column(table: &TableDef, column: &str) -> Result<(), CqlError> {
    for index in &table.indexes {
        if index
            .view_columns(table)
            .iter()
            .any(|(c, _)| c.name == column)
        {
            return Err(CqlError::invalid(format!(
                "Cannot drop column {column} from base table {}.{}: materialized view {} needs this column",
                table.keyspace,
                table.name,
                index.view_name()
            )));
        }
    }
    Ok(())
}

/// `Cannot rename column ... because it has dependent secondary indexes (...)`
/// (alter_table_statement.cc `validate_column_rename`).
pub(super) fn check_rename_column(table: &TableDef, column: &str) -> Result<(), CqlError> {
    let dependent: Vec<&str> = table
        .indexes
        .iter()
        .filter(|i| i.depends_on(column))
        .map(|i| i.name.as_str())
        .collect();
    if dependent.is_empty() {
        return Ok(());
    }
    Err(CqlError::invalid(format!(
        "Cannot rename column {column} because it has dependent secondary indexes ({})",
        dependent.join(", ")
    )))
}
