//! CREATE / ALTER / DROP TABLE, TRUNCATE, and the life cycle of CDC log tables.
//!
//! A table with `cdc = {'enabled': true}` gets its log table in the same schema change
//! (CREATE, or the ALTER that enables CDC). While CDC is enabled the log follows every
//! column change of its base ([`crate::cdc::log_schema::reconcile_log_table`]); disabling
//! CDC leaves the log in place, detached; enabling it again re-attaches the same table and
//! reconciles its columns; dropping the base drops the log. The log's own columns can never
//! be changed directly, and an attached log cannot be dropped.
//!
//! Each of these announces the log table as Scylla does: CREATED with its base (after it),
//! CREATED before the base's UPDATED when an ALTER enables CDC, UPDATED after the base's on
//! every other ALTER while CDC is enabled (Scylla rewrites the log's schema each time), and
//! DROPPED after its base.

use std::sync::Arc;

use crate::cdc::log_schema;
use crate::cql::{
    AlterTable, AlterTableAction, CreateTable, DropTable, NewColumn, Order, Property, Truncate,
};
use crate::frame::{CqlError, ErrorKind, SchemaChangeTarget, SchemaChangeType};
use crate::schema::{
    ClusteringOrder, ColumnDef, ColumnKind, KeyspaceDef, Schema, TableDef, TableKind, TableOptions,
    cdc_log_name,
};
use crate::storage::ColumnId;
use crate::types::CqlType;

use super::checks::{
    NAME_LENGTH, Permission, check_access, is_word, keyspace_of, no_keyspace, no_table,
};
use super::options;
use super::outcome::{DdlContext, DdlOutcome, StorageChange, table_event};
use super::types::{references_duration, resolve_in};

/// The `TABLE` target of a schema change.
fn target(keyspace: &str, table: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: keyspace.to_string(),
        table: table.to_string(),
    }
}

/// The error of a non-frozen UDT column whose type has non-frozen collection fields.
fn check_udt_fields(t: &CqlType) -> Result<(), CqlError> {
    if let CqlType::Udt { def, frozen: false } = t
        && def.fields.iter().any(|(_, f)| f.is_multi_cell())
    {
        return Err(CqlError::invalid(
            "Non-frozen UDTs with nested non-frozen collections are not supported",
        ));
    }
    Ok(())
}

/// Refuses counters in a tablets keyspace, as Scylla does.
fn check_counter_tablets(ks: &KeyspaceDef, table: &str, t: &CqlType) -> Result<(), CqlError> {
    if t.is_counter() && ks.uses_tablets() {
        return Err(CqlError::invalid(format!(
            "Cannot use the 'counter' type for table {}.{table}: Counters are not yet \
             supported with tablets",
            ks.name
        )));
    }
    Ok(())
}

/// Takes the named column out of `remaining` for the primary key, with Scylla's checks.
fn take_key_column(remaining: &mut Vec<Defined>, name: &str) -> Result<CqlType, CqlError> {
    let Some(i) = remaining.iter().position(|(n, _, _)| n == name) else {
        return Err(CqlError::invalid(format!(
            "Unknown definition {name} referenced in PRIMARY KEY"
        )));
    };
    let (_, t, is_static) = remaining.remove(i);
    if t.is_multi_cell() {
        return Err(CqlError::invalid(if t.is_collection() {
            format!("Invalid non-frozen collection type for PRIMARY KEY component {name}")
        } else {
            format!("Invalid non-frozen user-defined type for PRIMARY KEY component {name}")
        }));
    }
    if t.is_counter() {
        return Err(CqlError::invalid(format!(
            "counter type is not supported for PRIMARY KEY part {name}"
        )));
    }
    if references_duration(&t) {
        return Err(CqlError::invalid(format!(
            "duration type is not supported for PRIMARY KEY part {name}"
        )));
    }
    if is_static {
        return Err(CqlError::invalid(format!(
            "Static column {name} cannot be part of the PRIMARY KEY"
        )));
    }
    Ok(t)
}

/// What [`sync_cdc_log`] did to the CDC log of a base table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LogSync {
    /// Nothing: CDC is disabled (a detached log stays as it is).
    Untouched,
    /// The log table was created.
    Created,
    /// The existing log table was rewritten with the base: Scylla's CDC migration listener
    /// (`on_before_update_column_family`, `cdc/log.cc`) writes the log's schema again on
    /// every ALTER of a base that has CDC enabled, with the ALTER's timestamp, so the log
    /// counts as altered (and is announced as UPDATED) even when none of its columns or
    /// options changed.
    Rewritten,
}

/// Brings the CDC log of `base` (already stored in `ks`) in line with it: creates it,
/// reconciles it (attached, or detached and now re-attached), or leaves it alone when CDC is
/// disabled. Pushes the storage changes this needs.
fn sync_cdc_log(
    ks: &mut KeyspaceDef,
    base: &TableDef,
    ctx: &DdlContext<'_>,
    storage: &mut Vec<StorageChange>,
) -> Result<LogSync, CqlError> {
    let Some(cdc) = base.options.cdc.as_ref().filter(|c| c.enabled) else {
        return Ok(LogSync::Untouched);
    };
    let qualified = format!("{}.{}", base.keyspace, base.name);
    if base.is_cdc_log() {
        return Err(CqlError::invalid(format!(
            "Cannot create a CDC log for a table {qualified}, because creating nested CDC \
             logs is not allowed"
        )));
    }
    if base.is_counter() {
        return Err(CqlError::invalid(format!(
            "Cannot create CDC log for table {qualified}. Counter support not implemented"
        )));
    }
    let log_name = cdc_log_name(&base.name);
    match ks.tables.get(&log_name) {
        None => {
            let mut log = log_schema::new_log_table(base, cdc);
            // A CDC log is a user table: the user-table compression default.
            log.options.compression = options::user_table_compression();
            let log = Arc::new(log);
            storage.push(StorageChange::CreateTable(log.clone()));
            ks.tables.insert(log_name, log);
            Ok(LogSync::Created)
        }
        Some(log) if matches!(&log.kind, TableKind::CdcLog { base: b } if *b == base.name) => {
            let r = log_schema::reconcile_log_table(log, base, ctx.now_micros)?;
            if !r.dropped.is_empty() {
                storage.push(StorageChange::DropColumns {
                    table: log.id,
                    columns: r.dropped.into_iter().map(ColumnId).collect(),
                });
            }
            if r.changed {
                ks.tables.insert(log_name, Arc::new(r.table));
            }
            Ok(LogSync::Rewritten)
        }
        Some(_) => Err(CqlError::invalid(format!(
            "Cannot create CDC log table for table {qualified} because a table of name \
             {qualified}{} already exists",
            crate::schema::CDC_LOG_SUFFIX
        ))),
    }
}

/// `CREATE TABLE [IF NOT EXISTS] [ks.]t (...) [WITH ...]`: the name and the options, the
/// defined columns, the primary key and its clustering order, then the new table (with its
/// CDC log when enabled), with Scylla's errors in Scylla's order.
pub(super) fn create(
    schema: &Schema,
    stmt: &CreateTable,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    check_new_table(stmt)?;
    let (ks, table_options, applied) = new_table_options(schema, stmt, &ks_name, ctx)?;
    let has_default_ttl = table_options.default_time_to_live > 0;
    let (remaining, any_multi_cell) = defined_columns(stmt, ks, &ks_name, has_default_ttl)?;
    let columns = table_columns(stmt, remaining, any_multi_cell)?;
    check_access(&ks_name, None, Permission::Create)?;
    // The backing views of indexes are tables of the keyspace too.
    let is_index_view = ks
        .tables
        .values()
        .any(|t| t.indexes.iter().any(|i| i.view_name() == *name));
    if ks.tables.contains_key(name) || is_index_view {
        if stmt.if_not_exists {
            return Ok(DdlOutcome::unchanged(Some((
                SchemaChangeType::Created,
                target(&ks_name, name),
            ))));
        }
        return Err(CqlError::already_exists(
            ks_name.clone(),
            name.clone(),
            format!("Cannot add already existing table \"{name}\" to keyspace \"{ks_name}\""),
        ));
    }
    let mut table = TableDef::new(
        ks_name.clone(),
        name.clone(),
        columns,
        table_options,
        TableKind::User,
    );
    if let Some(id) = applied.id {
        if schema.table_by_id(id).is_some() {
            return Err(CqlError::invalid(format!("Table id {id} is already used")));
        }
        table.id = id;
    }
    table.compact_storage = stmt.options.compact_storage;
    add_table(schema, &ks_name, Arc::new(table), ctx)
}

/// The checks of a new table's name and of its columns' names.
fn check_new_table(stmt: &CreateTable) -> Result<(), CqlError> {
    let name = &stmt.name.name;
    if !is_word(name) {
        return Err(CqlError::invalid(format!(
            "\"{name}\" is not a valid table name (must be alphanumeric character only: \
             [0-9A-Za-z]+)"
        )));
    }
    if name.chars().count() > NAME_LENGTH {
        return Err(CqlError::invalid(format!(
            "Table names shouldn't be more than {NAME_LENGTH} characters long (got \"{name}\")"
        )));
    }
    for (i, c) in stmt.columns.iter().enumerate() {
        if stmt.columns.iter().skip(i + 1).any(|d| d.name == c.name) {
            return Err(CqlError::invalid(format!(
                "Multiple definition of identifier {}",
                c.name
            )));
        }
    }
    Ok(())
}

/// The keyspace of a new table and the table's options: a user table's defaults, then the
/// WITH clause.
fn new_table_options<'s>(
    schema: &'s Schema,
    stmt: &CreateTable,
    ks_name: &str,
    ctx: &DdlContext<'_>,
) -> Result<(&'s KeyspaceDef, TableOptions, options::Applied), CqlError> {
    let mut table_options = TableOptions {
        compression: options::user_table_compression(),
        ..TableOptions::default()
    };
    let applied = options::apply(
        &mut table_options,
        &stmt.options.properties,
        ctx.default_cdc_ttl,
    )?;
    let Some(ks) = schema.keyspace(ks_name) else {
        return Err(CqlError::invalid(format!(
            "Cannot create a table in a non-existent keyspace: {ks_name}"
        )));
    };
    options::check_tombstone_gc(&table_options, ks)?;
    if table_options.tombstone_gc.is_none() {
        table_options.tombstone_gc = Some(options::default_tombstone_gc(ks, true));
    }
    Ok((ks, table_options, applied))
}

/// A defined column: name, type, whether static.
type Defined = (String, CqlType, bool);

/// The defined columns in the written order, with their types resolved and checked, and
/// whether any of them is multi-cell.
fn defined_columns(
    stmt: &CreateTable,
    ks: &KeyspaceDef,
    ks_name: &str,
    has_default_ttl: bool,
) -> Result<(Vec<Defined>, bool), CqlError> {
    let mut remaining = Vec::with_capacity(stmt.columns.len());
    let mut any_multi_cell = false;
    for c in &stmt.columns {
        if c.is_ttl {
            return Err(CqlError::invalid(format!(
                "Per-row TTL column {} is not supported by the embedded cluster",
                c.name
            )));
        }
        let t = resolve_in(&ks.types, ks_name, &c.ty)?;
        if has_default_ttl && t.is_counter() {
            return Err(CqlError::invalid(
                "Cannot set default_time_to_live on a table with counters",
            ));
        }
        check_counter_tablets(ks, &stmt.name.name, &t)?;
        check_udt_fields(&t)?;
        any_multi_cell |= t.is_multi_cell();
        remaining.push((c.name.clone(), t, c.is_static));
    }
    Ok((remaining, any_multi_cell))
}

/// The table's columns in Scylla's order (partition key, clustering key, then the others),
/// once the primary key is taken out of the `remaining` defined columns and checked against
/// COMPACT STORAGE, static columns, the clustering order and counters.
fn table_columns(
    stmt: &CreateTable,
    mut remaining: Vec<Defined>,
    any_multi_cell: bool,
) -> Result<Vec<ColumnDef>, CqlError> {
    let compact = stmt.options.compact_storage;
    let has_statics = remaining.iter().any(|(_, _, s)| *s);
    let mut partition = Vec::new();
    for alias in &stmt.primary_key.partition_key {
        partition.push((alias.clone(), take_key_column(&mut remaining, alias)?));
    }
    let no_multi_cell_with_compact = || {
        CqlError::invalid("Non-frozen collections and UDTs are not supported with COMPACT STORAGE")
    };
    let clustering_aliases = &stmt.primary_key.clustering;
    if clustering_aliases.is_empty() && compact {
        if remaining.is_empty() {
            return Err(CqlError::invalid(
                "No definition found that is not part of the PRIMARY KEY",
            ));
        }
        if any_multi_cell {
            return Err(no_multi_cell_with_compact());
        }
    }
    let mut clustering = Vec::new();
    for alias in clustering_aliases {
        clustering.push((alias.clone(), take_key_column(&mut remaining, alias)?));
    }
    if compact && !clustering.is_empty() && any_multi_cell {
        return Err(no_multi_cell_with_compact());
    }
    check_key_shape(compact, has_statics, &clustering, &remaining)?;
    let defined_order = &stmt.options.clustering_order;
    check_clustering_order(defined_order, &clustering)?;
    // A counter table has only counter columns besides its key.
    let is_counter_table = remaining.iter().any(|(_, t, _)| t.is_counter());
    if is_counter_table && let Some((n, _, _)) = remaining.iter().find(|(_, t, _)| !t.is_counter())
    {
        return Err(CqlError::config(format!(
            "Cannot add a non counter column ({n}) in a counter column family"
        )));
    }
    let mut columns = Vec::new();
    for (i, (n, t)) in partition.into_iter().enumerate() {
        columns.push(column_def(n, t, ColumnKind::PartitionKey, i));
    }
    for (i, (n, t)) in clustering.into_iter().enumerate() {
        let mut c = column_def(n, t, ColumnKind::Clustering, i);
        if let Some((_, Order::Desc)) = defined_order.get(i) {
            c.order = ClusteringOrder::Desc;
        }
        columns.push(c);
    }
    for (n, t, is_static) in remaining {
        let kind = if is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        };
        columns.push(column_def(n, t, kind, usize::MAX));
    }
    Ok(columns)
}

/// What static columns and COMPACT STORAGE require of the key: statics need clustering
/// columns and no COMPACT STORAGE; a compact table with clustering columns has at most one
/// other column.
fn check_key_shape(
    compact: bool,
    has_statics: bool,
    clustering: &[(String, CqlType)],
    remaining: &[Defined],
) -> Result<(), CqlError> {
    if has_statics {
        if compact {
            return Err(CqlError::invalid(
                "Static columns are not supported in COMPACT STORAGE tables",
            ));
        }
        if clustering.is_empty() {
            return Err(CqlError::invalid(
                "Static columns are only useful (and thus allowed) if the table has at least \
                 one clustering column",
            ));
        }
    }
    if compact && !clustering.is_empty() && remaining.len() > 1 {
        let names: Vec<&str> = remaining.iter().map(|(n, _, _)| n.as_str()).collect();
        return Err(CqlError::invalid(format!(
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part \
             of the PRIMARY KEY (got: {})",
            names.join(", ")
        )));
    }
    Ok(())
}

/// CLUSTERING ORDER BY must name clustering columns, in key order (a prefix is allowed).
fn check_clustering_order(
    defined_order: &[(String, Order)],
    clustering: &[(String, CqlType)],
) -> Result<(), CqlError> {
    if defined_order.len() > clustering.len() {
        return Err(CqlError::invalid(
            "Only clustering key columns can be defined in CLUSTERING ORDER directive",
        ));
    }
    for (i, (column, _)) in defined_order.iter().enumerate() {
        let Some((expected, _)) = clustering.get(i) else {
            break;
        };
        if column != expected {
            return Err(CqlError::invalid(
                if defined_order.iter().any(|(c, _)| c == expected) {
                    format!(
                        "The order of columns in the CLUSTERING ORDER directive must be the one \
                         of the clustering key ({expected} must appear before {column})"
                    )
                } else {
                    format!("Missing CLUSTERING ORDER for column {expected}")
                },
            ));
        }
    }
    Ok(())
}

/// The next schema, with `table` in keyspace `ks_name` and its CDC log when enabled. Scylla
/// creates the log in the same schema change (`on_pre_create_column_families`, cdc/log.cc)
/// and announces it after its base: CREATED base, CREATED log.
fn add_table(
    schema: &Schema,
    ks_name: &str,
    table: Arc<TableDef>,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let name = &table.name;
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(ks_name) else {
        return Err(no_keyspace(ks_name));
    };
    next_ks.tables.insert(name.clone(), table.clone());
    let mut storage = vec![StorageChange::CreateTable(table.clone())];
    let mut events = vec![table_event(SchemaChangeType::Created, ks_name, name)];
    if sync_cdc_log(next_ks, &table, ctx, &mut storage)? == LogSync::Created {
        events.push(table_event(
            SchemaChangeType::Created,
            ks_name,
            &cdc_log_name(name),
        ));
    }
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Created,
        target(ks_name, name),
        storage,
        events,
    ))
}

/// A column definition; `position` is the key position (`usize::MAX` for -1).
fn column_def(name: String, typ: CqlType, kind: ColumnKind, position: usize) -> ColumnDef {
    ColumnDef {
        name,
        typ,
        kind,
        position: i32::try_from(position).unwrap_or(-1),
        order: ClusteringOrder::Asc,
        id: 0,
    }
}

/// `ALTER TABLE [ks.]t ...`: the checks of the table (its views, a CDC log), the action on a
/// copy of the table, then the next schema with its CDC log and views following the table.
pub(super) fn alter(
    schema: &Schema,
    stmt: &AlterTable,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.table, ctx)?;
    let name = &stmt.table.name;
    check_access(&ks_name, Some(name), Permission::Alter)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let Some(table) = ks.tables.get(name) else {
        return Err(no_table(name));
    };
    let dropped: &[String] = match &stmt.action {
        AlterTableAction::Drop { columns, .. } => columns,
        _ => &[],
    };
    let renames = matches!(stmt.action, AlterTableAction::Rename(_));
    if let Some(e) = super::view::check_alter_table(schema, table, dropped, renames) {
        return Err(e);
    }
    if table.is_cdc_log() {
        check_cdc_log_alter(schema.cdc_log_attached(table), &stmt.action)?;
    }
    let mut updated = (**table).clone();
    let mut storage = Vec::new();
    match &stmt.action {
        AlterTableAction::Add(new_columns) => {
            add_columns(ks, table, &mut updated, new_columns, ctx)?;
        }
        AlterTableAction::Drop { columns, timestamp } => {
            let at = timestamp.unwrap_or(ctx.now_micros);
            storage.push(drop_columns(table, &mut updated, columns, at)?);
        }
        AlterTableAction::Rename(renames) => rename_columns(table, &mut updated, renames)?,
        AlterTableAction::AlterColumnType { column, .. } => {
            if updated.column(column).is_none() {
                return Err(CqlError::invalid(format!(
                    "Column {column} was not found in table {name}"
                )));
            }
            return Err(CqlError::invalid("Altering of types is not allowed"));
        }
        AlterTableAction::With(properties) => alter_options(ks, &mut updated, properties, ctx)?,
    }
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let updated = Arc::new(updated);
    next_ks.tables.insert(name.clone(), updated.clone());
    // Scylla notifies created tables before altered ones (`notify_tables_and_views`,
    // db/schema_applier.cc): enabling CDC announces CREATED log, then UPDATED base; any
    // other ALTER of a base with CDC enabled UPDATED base, then UPDATED log; an ALTER that
    // disables CDC leaves the log alone and announces the base only.
    let base_updated = table_event(SchemaChangeType::Updated, &ks_name, name);
    // Its views follow an added column (`view`).
    let view_events = super::view::follow_added_columns(next_ks, table, &updated);
    let log_name = cdc_log_name(name);
    let mut events = match sync_cdc_log(next_ks, &updated, ctx, &mut storage)? {
        LogSync::Untouched => vec![base_updated],
        LogSync::Created => vec![
            table_event(SchemaChangeType::Created, &ks_name, &log_name),
            base_updated,
        ],
        LogSync::Rewritten => vec![
            base_updated,
            table_event(SchemaChangeType::Updated, &ks_name, &log_name),
        ],
    };
    events.extend(view_events);
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Updated,
        target(&ks_name, name),
        storage,
        events,
    ))
}

/// What an ALTER TABLE of a CDC log table (`attached` to its base or not) may not do: change
/// or rename its columns.
fn check_cdc_log_alter(attached: bool, action: &AlterTableAction) -> Result<(), CqlError> {
    match action {
        AlterTableAction::Add(_)
        | AlterTableAction::Drop { .. }
        | AlterTableAction::AlterColumnType { .. } => Err(CqlError::invalid(if attached {
            "You cannot modify the set of columns of a CDC log table directly. Modify \
             the base table instead."
        } else {
            "You cannot modify the set of columns of a CDC log table directly. Although \
             the base table has deactivated CDC, this table will continue being a CDC \
             log table until it is dropped. If you want to modify the columns in it, \
             you can only do that by reenabling CDC on the base table, which will \
             reattach this log table. Then you will be able to modify the columns in \
             the base table, and that will have effect on the log table too. Modifying \
             the columns of a CDC log table directly is never allowed."
        })),
        AlterTableAction::Rename(_) => Err(CqlError::invalid(if attached {
            "Cannot rename a column of a CDC log table."
        } else {
            "You cannot rename a column of a CDC log table. Although the base table has \
             deactivated CDC, this table will continue being a CDC log table until it \
             is dropped."
        })),
        AlterTableAction::With(_) => Ok(()),
    }
}

/// `ALTER TABLE ... ADD`: each new column checked against the table (`table`, being
/// `updated`), then added.
fn add_columns(
    ks: &KeyspaceDef,
    table: &TableDef,
    updated: &mut TableDef,
    new_columns: &[NewColumn],
    ctx: &DdlContext<'_>,
) -> Result<(), CqlError> {
    let clustering_count = table.clustering_key().count();
    let compound = !table.compact_storage || clustering_count > 1;
    if table.compact_storage && clustering_count > 0 {
        return Err(CqlError::invalid(
            "Cannot add new column to a COMPACT STORAGE table",
        ));
    }
    for c in new_columns {
        let t = resolve_in(&ks.types, &ks.name, &c.ty)?;
        if c.is_static {
            if !compound {
                return Err(CqlError::invalid(
                    "Static columns are not allowed in COMPACT STORAGE tables",
                ));
            }
            if clustering_count == 0 {
                return Err(CqlError::invalid(
                    "Static columns are only useful (and thus allowed) if the table has \
                     at least one clustering column",
                ));
            }
        }
        if let Some(existing) = updated.column(&c.name) {
            let conflict = if existing.kind == ColumnKind::PartitionKey {
                "a PRIMARY KEY part"
            } else {
                "an existing column"
            };
            return Err(CqlError::invalid(format!(
                "Invalid column name {} because it conflicts with {conflict}",
                c.name
            )));
        }
        check_added_type(ks, table, &c.name, &t, compound)?;
        log_schema::check_not_dropped_recently(updated, &c.name, ctx.now_micros)?;
        updated.add_column(ColumnDef {
            name: c.name.clone(),
            typ: t,
            kind: if c.is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            },
            position: -1,
            order: ClusteringOrder::Asc,
            id: 0,
        });
    }
    Ok(())
}

/// The checks of the type `t` of a column `name` added to `table`: counters only in a
/// counter table (and not re-added once dropped), no non-frozen collection without a
/// compound key, tablets and UDT fields.
fn check_added_type(
    ks: &KeyspaceDef,
    table: &TableDef,
    name: &str,
    t: &CqlType,
    compound: bool,
) -> Result<(), CqlError> {
    if table.is_counter() && table.dropped_columns.contains_key(name) {
        return Err(CqlError::invalid(format!(
            "Cannot re-add previously dropped counter column {name}"
        )));
    }
    if t.is_collection() && t.is_multi_cell() && !compound {
        return Err(CqlError::invalid(
            "Cannot use non-frozen collections with a non-composite PRIMARY KEY",
        ));
    }
    if t.is_counter() && !table.is_counter() {
        return Err(CqlError::config(format!(
            "Cannot add a counter column ({name}) in a non counter column family"
        )));
    }
    if !t.is_counter() && table.is_counter() {
        return Err(CqlError::config(format!(
            "Cannot add a non counter column ({name}) in a counter column family"
        )));
    }
    check_counter_tablets(ks, &table.name, t)?;
    check_udt_fields(t)
}

/// `ALTER TABLE ... DROP`: the columns dropped at `at` (µs); the change to the table's data.
fn drop_columns(
    table: &TableDef,
    updated: &mut TableDef,
    columns: &[String],
    at: i64,
) -> Result<StorageChange, CqlError> {
    let clustering_count = table.clustering_key().count();
    let compound = !table.compact_storage || clustering_count > 1;
    let dense = table.compact_storage && clustering_count > 0;
    if !compound || dense {
        return Err(CqlError::invalid(
            "Cannot drop columns from a non-CQL3 table",
        ));
    }
    let mut ids = Vec::new();
    for c in columns {
        let Some(def) = updated.column(c) else {
            return Err(CqlError::invalid(format!(
                "Column {c} was not found in table {}",
                table.name
            )));
        };
        if def.kind.is_primary_key() {
            return Err(CqlError::invalid(format!(
                "Cannot drop PRIMARY KEY part {c}"
            )));
        }
        super::index::check_drop_column(table, c)?;
        if let Some(def) = updated.drop_column(c, at) {
            ids.push(ColumnId(def.id));
        }
    }
    Ok(StorageChange::DropColumns {
        table: table.id,
        columns: ids,
    })
}

/// `ALTER TABLE ... RENAME`: primary-key columns only, to names not taken.
fn rename_columns(
    table: &TableDef,
    updated: &mut TableDef,
    renames: &[(String, String)],
) -> Result<(), CqlError> {
    let name = &table.name;
    for (from, to) in renames {
        let Some(def) = updated.column(from) else {
            return Err(CqlError::invalid(format!(
                "Cannot rename unknown column {from} in table {name}"
            )));
        };
        let is_key = def.kind.is_primary_key();
        if updated.column(to).is_some() {
            return Err(CqlError::invalid(format!(
                "Cannot rename column {from} to {to} in table {name}; another column of \
                 that name already exist"
            )));
        }
        if !is_key {
            return Err(CqlError::invalid(format!(
                "Cannot rename non PRIMARY KEY part {from}"
            )));
        }
        super::index::check_rename_column(table, from)?;
        updated.rename_column(from, to);
    }
    Ok(())
}

/// `ALTER TABLE ... WITH`: the properties applied to the table's options.
fn alter_options(
    ks: &KeyspaceDef,
    updated: &mut TableDef,
    properties: &[Property],
    ctx: &DdlContext<'_>,
) -> Result<(), CqlError> {
    let applied = options::apply(&mut updated.options, properties, ctx.default_cdc_ttl)?;
    options::check_tombstone_gc(&updated.options, ks)?;
    if updated.options.tombstone_gc.is_none() {
        updated.options.tombstone_gc =
            Some(options::default_tombstone_gc(ks, !updated.is_cdc_log()));
    }
    if applied.id.is_some() {
        return Err(CqlError::config("Cannot alter table id."));
    }
    if updated.is_counter() && updated.options.default_time_to_live > 0 {
        return Err(CqlError::invalid(
            "Cannot set default_time_to_live on a table with counters",
        ));
    }
    Ok(())
}

/// `DROP TABLE [IF EXISTS] [ks.]t`: also drops the table's CDC log (attached or detached);
/// an attached log itself cannot be dropped.
pub(super) fn drop(
    schema: &Schema,
    stmt: &DropTable,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.table, ctx)?;
    let name = &stmt.table.name;
    check_access(&ks_name, Some(name), Permission::Drop)?;
    let table = schema.table(&ks_name, name);
    if let Some(t) = table
        && schema.cdc_log_attached(t)
    {
        // Scylla answers Unauthorized here "for legacy reasons".
        return Err(CqlError::new(
            ErrorKind::Unauthorized,
            format!("Cannot DROP cdc log table {name}"),
        ));
    }
    if let Some(e) = table.and_then(|t| super::view::check_drop_table(schema, t)) {
        return Err(e);
    }
    let Some(table) = table else {
        if stmt.if_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        // `prepare_column_family_drop_announcement` throws a configuration_exception, which
        // `drop_table_statement::prepare_schema_mutations` turns into an InvalidRequest
        // (unlike DROP KEYSPACE and DROP MATERIALIZED VIEW, which pass it on).
        return Err(CqlError::invalid(format!(
            "Cannot drop non existing table '{name}' in keyspace '{ks_name}'."
        )));
    };
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let mut storage = vec![StorageChange::DropTable(table.id)];
    next_ks.tables.remove(name);
    // The views of its indexes go with the table, announced first (view drops are notified
    // before table drops: `notify_tables_and_views`, db/schema_applier.cc). The log goes
    // with its base (`on_before_drop_column_family`, cdc/log.cc), announced after it:
    // DROPPED base, DROPPED log.
    let mut events: Vec<_> = table
        .indexes
        .iter()
        .map(|i| table_event(SchemaChangeType::Dropped, &ks_name, &i.view_name()))
        .collect();
    events.push(table_event(SchemaChangeType::Dropped, &ks_name, name));
    if !table.is_cdc_log()
        && let Some(log) = next_ks.cdc_log_of(name).cloned()
    {
        storage.push(StorageChange::DropTable(log.id));
        next_ks.tables.remove(&log.name);
        events.push(table_event(SchemaChangeType::Dropped, &ks_name, &log.name));
    }
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Dropped,
        target(&ks_name, name),
        storage,
        events,
    ))
}

/// `TRUNCATE [TABLE] [ks.]t`: removes the table's data (not its log's: a base and its log
/// are truncated separately); answers Void.
pub(super) fn truncate(
    schema: &Schema,
    stmt: &Truncate,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.table, ctx)?;
    let name = &stmt.table.name;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let Some(table) = ks.tables.get(name) else {
        return Err(no_table(name));
    };
    if table.kind == TableKind::Virtual {
        return Err(CqlError::invalid(format!(
            "Cannot truncate virtual table {ks_name}.{name}"
        )));
    }
    // truncate_statement.cc; a base's views are truncated with it.
    if table.is_view() {
        return Err(CqlError::invalid(
            "Cannot TRUNCATE materialized view directly; must truncate base table instead",
        ));
    }
    let mut outcome = DdlOutcome::unchanged(None);
    outcome.storage.push(StorageChange::Truncate(table.id));
    for view in ks.views_of(name) {
        outcome.storage.push(StorageChange::Truncate(view.id));
    }
    Ok(outcome)
}
