//! CREATE / ALTER / DROP MATERIALIZED VIEW, with ScyllaDB's validation
//! (`cql3/statements/create_view_statement.cc`, `alter_view_statement.cc`,
//! `view_prop_defs.cc`, `service/migration_manager.cc`).
//!
//! A view is a table of its keyspace of kind [`TableKind::View`]: its columns are the
//! view key columns, then the selected non-key base columns, with the base's types. Its data
//! is kept up to date by `exec::view`, which also builds it from the base's existing rows
//! once the new schema is in place ([`StorageChange::BuildView`]).

use std::sync::Arc;

use crate::cql::{AlterView, CreateView, DropTable, Order, Relation, Selector, Term};
use crate::frame::{CqlError, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::TableOptions;
use crate::schema::view::ViewInfo;
use crate::schema::{
    ClusteringOrder, ColumnDef, ColumnKind, KeyspaceDef, Schema, TableDef, TableKind,
};

use super::super::literal::literal_value;
use super::checks::{NAME_LENGTH, Permission, check_access, keyspace_of, no_keyspace};
use super::options;
use super::outcome::{DdlContext, DdlOutcome, StorageChange, table_event};
use super::types::references_duration;

/// The `TABLE` target of a schema change (a view is announced as a table, protocol v4).
fn target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: keyspace.to_string(),
        table: name.to_string(),
    }
}

/// Whether `name` matches Scylla's `\w+` for view names.
fn is_view_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// `CREATE MATERIALIZED VIEW ...` (`create_view_statement::prepare_view`): the view and its
/// base are checked, then its selection, its WHERE clause, its primary key and its options,
/// each with Scylla's errors in Scylla's order.
pub(super) fn create(
    schema: &Schema,
    stmt: &CreateView,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    let (ks, base) = view_base(schema, stmt, &ks_name)?;
    let included = selected_columns(stmt, base)?;
    let include_all = stmt.columns.is_none();
    let clause = ViewWhere::of(stmt, base)?;
    // Scylla's warnings (`strict_is_not_null_in_views` is `warn` by default, db/config.cc).
    let mut warnings = Vec::new();
    if ks.uses_tablets() {
        warnings.push(TABLETS_VIEW_WARNING.to_string());
    }
    let key = ViewKey::of(stmt, base, &clause)?;
    let value_columns = value_columns(stmt, base, &key, include_all, &included)?;
    warnings.extend(clause.check_restrictions(name, &key)?);
    let (table_options, applied) = view_options(stmt, ks, ctx)?;
    let columns = view_columns(stmt, &key, value_columns);
    if ks.tables.contains_key(name) {
        if stmt.if_not_exists {
            let mut outcome =
                DdlOutcome::unchanged(Some((SchemaChangeType::Created, target(&ks_name, name))));
            outcome.warnings = warnings;
            return Ok(outcome);
        }
        return Err(CqlError::already_exists(
            ks_name.clone(),
            name.clone(),
            format!("Cannot add already existing table \"{name}\" to keyspace \"{ks_name}\""),
        ));
    }
    let info = ViewInfo {
        base: base.name.clone(),
        base_id: base.id,
        include_all_columns: include_all,
        where_clause: stmt.where_text.join(" AND "),
        filters: clause.filters,
    };
    let mut view = TableDef::new(
        ks_name.clone(),
        name.clone(),
        columns,
        table_options,
        TableKind::View(Box::new(info)),
    );
    if let Some(id) = applied.id {
        if let Some(t) = schema.table_by_id(id) {
            return Err(CqlError::invalid(format!(
                "Table with ID {id} already exists: {}.{}",
                t.keyspace, t.name
            )));
        }
        view.id = id;
    }
    let mut outcome = add_view(schema, &ks_name, Arc::new(view))?;
    outcome.warnings = warnings;
    Ok(outcome)
}

/// Scylla's warning for a view in a keyspace that uses tablets.
const TABLETS_VIEW_WARNING: &str = "Creating a materialized view in a keyspaces that uses \
     tablets requires the keyspace to remain RF-rack-valid while the materialized view \
     exists. Some operations will be restricted to enforce this: altering the keyspace's \
     replication factor, adding a node in a new rack, and removing or decommissioning a node \
     that would eliminate a rack.";

/// The keyspace and base table of a new view, after the checks of its name, its base and
/// its properties that come first in Scylla.
fn view_base<'s>(
    schema: &'s Schema,
    stmt: &CreateView,
    ks_name: &str,
) -> Result<(&'s KeyspaceDef, &'s TableDef), CqlError> {
    let name = &stmt.name.name;
    let base_ks = stmt.base.keyspace.as_deref().unwrap_or(ks_name);
    if base_ks != ks_name {
        return Err(CqlError::invalid(format!(
            "Cannot create a materialized view on a table in a separate keyspace ('{base_ks}' != '{ks_name}')"
        )));
    }
    if !is_view_name(name) {
        return Err(CqlError::invalid(format!(
            "\"{name}\" is not a valid materialized view name (must contain alphanumeric \
             character only: [0-9A-Za-z] or the underscore)"
        )));
    }
    if name.chars().count() > NAME_LENGTH {
        return Err(CqlError::invalid(format!(
            "materialized view names shouldn't be more than {NAME_LENGTH} characters long (got \"{name}\")"
        )));
    }
    check_access(ks_name, Some(&stmt.base.name), Permission::Alter)?;
    let Some(ks) = schema.keyspace(ks_name) else {
        return Err(no_keyspace(ks_name));
    };
    let Some(base) = ks.tables.get(&stmt.base.name) else {
        return Err(CqlError::invalid(format!(
            "unconfigured table {}",
            stmt.base.name
        )));
    };
    check_view_properties(stmt, base)?;
    Ok((ks, base))
}

/// What the view's properties and its base must not be (`view_prop_defs::validate_raw` and
/// the checks of the base).
fn check_view_properties(stmt: &CreateView, base: &TableDef) -> Result<(), CqlError> {
    if stmt.options.compact_storage {
        return Err(CqlError::invalid(
            "Cannot use 'COMPACT STORAGE' when defining a materialized view",
        ));
    }
    if stmt.options.properties.iter().any(|p| p.name == "cdc") {
        return Err(CqlError::invalid(
            "Cannot enable CDC for a materialized view",
        ));
    }
    if base.is_counter() {
        return Err(CqlError::invalid(
            "Materialized views are not supported on counter tables",
        ));
    }
    if base.is_view() {
        return Err(CqlError::invalid(
            "Materialized views cannot be created against other materialized views",
        ));
    }
    if base.is_cdc_log() {
        return Err(CqlError::invalid(
            "Materialized views cannot be created on CDC Log tables",
        ));
    }
    if base.options.gc_grace_seconds == 0 {
        return Err(CqlError::invalid(format!(
            "Cannot create materialized view '{}' for base table '{}' with \
             gc_grace_seconds of 0, since this value is used to TTL undelivered updates. \
             Setting gc_grace_seconds too low might cause undelivered updates to expire \
             before being replayed.",
            stmt.name.name, base.name
        )));
    }
    Ok(())
}

/// The selected base columns, once each (none: `SELECT *`).
fn selected_columns<'b>(
    stmt: &CreateView,
    base: &'b TableDef,
) -> Result<Vec<&'b ColumnDef>, CqlError> {
    let mut included: Vec<&ColumnDef> = Vec::new();
    let Some(items) = &stmt.columns else {
        return Ok(included);
    };
    for item in items {
        if item.alias.is_some() {
            return Err(CqlError::invalid(
                "Cannot use alias when defining a materialized view",
            ));
        }
        let Selector::Column(column) = &item.selector else {
            return Err(CqlError::invalid(
                "Cannot use general expressions when defining a materialized view",
            ));
        };
        let Some(def) = base.column(column) else {
            return Err(unknown_column(column));
        };
        if !included.iter().any(|c| c.name == def.name) {
            included.push(def);
        }
    }
    Ok(included)
}

/// A view's WHERE clause: `IS NOT NULL`, and equality with a constant.
struct ViewWhere<'b> {
    /// The columns restricted by `IS NOT NULL`.
    not_null: Vec<&'b str>,
    /// The equalities: (base column name, value in its CQL serialization).
    filters: Vec<(String, Vec<u8>)>,
    /// The non-primary-key columns restricted by an equality.
    restricted_non_pk: Vec<&'b str>,
}

impl<'b> ViewWhere<'b> {
    /// The WHERE clause of `stmt` over `base`.
    fn of(stmt: &CreateView, base: &'b TableDef) -> Result<ViewWhere<'b>, CqlError> {
        let mut clause = ViewWhere {
            not_null: Vec::new(),
            filters: Vec::new(),
            restricted_non_pk: Vec::new(),
        };
        for r in &stmt.where_clause {
            match r {
                Relation::IsNotNull { column } => {
                    let Some(def) = base.column(column) else {
                        return Err(undefined_column(column));
                    };
                    clause.not_null.push(&def.name);
                }
                Relation::Compare {
                    column,
                    op: crate::cql::CompareOp::Eq,
                    value: Term::Literal(lit),
                } => {
                    let Some(def) = base.column(column) else {
                        return Err(undefined_column(column));
                    };
                    let Some(value) = literal_value(lit, &def.typ, column)? else {
                        return Err(CqlError::invalid(format!(
                            "Invalid null value for column {column}"
                        )));
                    };
                    if !def.kind.is_primary_key() {
                        clause.restricted_non_pk.push(&def.name);
                    }
                    clause
                        .filters
                        .push((def.name.clone(), value.to_bytes().to_vec()));
                }
                // Scylla also takes slices, IN and the like on key columns.
                _ => {
                    return Err(CqlError::invalid(
                        "Only IS NOT NULL and equality with a constant are supported in the \
                         WHERE clause of a materialized view by the embedded cluster",
                    ));
                }
            }
        }
        Ok(clause)
    }

    /// Whether the clause restricts column `c` (by `IS NOT NULL` or an equality).
    fn restricts(&self, c: &ColumnDef) -> bool {
        self.not_null.contains(&c.name.as_str()) || self.filters.iter().any(|(n, _)| *n == c.name)
    }

    /// The restrictions a view `name` with primary key `key` may not have: only the base
    /// column added to the view key may be restricted among non-key columns; `IS NOT NULL`
    /// on other columns is ignored with Scylla's warning (returned).
    fn check_restrictions(
        &self,
        name: &str,
        key: &ViewKey<'_>,
    ) -> Result<Option<String>, CqlError> {
        let restricted_non_pk = &self.restricted_non_pk;
        let allowed_non_pk = restricted_non_pk.len() == 1
            && key.has_non_pk
            && key.names.contains(&restricted_non_pk[0]);
        let ignored_not_null: Vec<&str> = self
            .not_null
            .iter()
            .copied()
            .filter(|c| !key.names.contains(c))
            .collect();
        let warning = (!ignored_not_null.is_empty()).then(|| {
            format!(
                "The IS NOT NULL restriction is allowed only columns which are part of the \
                 view's primary key, found columns: {}. Restrictions on these columns will be \
                 silently ignored. The flag strict_is_not_null_in_views can be used to turn \
                 this warning into an error, or to silence it. (true - error, warn - warning, \
                 false - silent)",
                ignored_not_null.join(", ")
            )
        });
        if !restricted_non_pk.is_empty() && !allowed_non_pk {
            return Err(CqlError::invalid(format!(
                "Non-primary key columns cannot be restricted in the SELECT statement used for \
                 materialized view {name} creation (got restrictions on: {})",
                restricted_non_pk.join(", ")
            )));
        }
        Ok(warning)
    }
}

/// A view's primary key (`validate_primary_key`).
struct ViewKey<'b> {
    /// The key's base columns, each with whether it is in the partition key, in order.
    columns: Vec<(&'b ColumnDef, bool)>,
    /// Their names.
    names: Vec<&'b str>,
    /// Whether a non-primary-key column of the base is in the key.
    has_non_pk: bool,
}

impl<'b> ViewKey<'b> {
    /// The primary key of `stmt` over `base`, whose WHERE clause is `clause`.
    fn of(
        stmt: &CreateView,
        base: &'b TableDef,
        clause: &ViewWhere<'_>,
    ) -> Result<ViewKey<'b>, CqlError> {
        let base_pk_count = base.partition_key().count();
        let mut key = ViewKey {
            columns: Vec::new(),
            names: Vec::new(),
            has_non_pk: false,
        };
        let key_columns = stmt
            .primary_key
            .partition_key
            .iter()
            .map(|n| (n, true))
            .chain(stmt.primary_key.clustering.iter().map(|n| (n, false)));
        for (column, is_partition) in key_columns {
            let Some(def) = base.column(column) else {
                return Err(unknown_column(column));
            };
            key.check_column(column, def)?;
            let single_partition_key = def.kind == ColumnKind::PartitionKey && base_pk_count == 1;
            if !single_partition_key && !clause.restricts(def) {
                return Err(CqlError::invalid(format!(
                    "Primary key column '{column}' is required to be filtered by 'IS NOT NULL'"
                )));
            }
            key.columns.push((def, is_partition));
        }
        Ok(key)
    }

    /// Adds the name of key column `def` (written `column`), with the checks of its type
    /// and kind.
    fn check_column(&mut self, column: &str, def: &'b ColumnDef) -> Result<(), CqlError> {
        if self.names.contains(&def.name.as_str()) {
            return Err(CqlError::invalid(format!(
                "Duplicate entry found in PRIMARY KEY: {column}"
            )));
        }
        self.names.push(&def.name);
        if def.typ.is_multi_cell() {
            return Err(CqlError::invalid(format!(
                "Cannot use MultiCell column '{column}' in PRIMARY KEY of materialized view"
            )));
        }
        if references_duration(&def.typ) {
            return Err(CqlError::invalid(format!(
                "Cannot use Duration column '{column}' in PRIMARY KEY of materialized view"
            )));
        }
        if def.kind == ColumnKind::Static {
            return Err(CqlError::invalid(format!(
                "Cannot use Static column '{column}' in PRIMARY KEY of materialized view"
            )));
        }
        if !def.kind.is_primary_key() {
            if self.has_non_pk {
                return Err(CqlError::invalid(format!(
                    "Cannot include more than one non-primary key column '{column}' in \
                     materialized view primary key"
                )));
            }
            self.has_non_pk = true;
        }
        Ok(())
    }
}

/// The selected base columns outside the view key, after the checks of every base column:
/// statics may not be selected, every base key column must be in the view key; then the
/// checks of the key's shape and of the clustering order.
fn value_columns<'b>(
    stmt: &CreateView,
    base: &'b TableDef,
    key: &ViewKey<'_>,
    include_all: bool,
    included: &[&ColumnDef],
) -> Result<Vec<&'b ColumnDef>, CqlError> {
    let is_included = |c: &ColumnDef| include_all || included.iter().any(|i| i.name == c.name);
    let mut missing = Vec::new();
    let mut value_columns = Vec::new();
    for c in &base.columns {
        let in_key = key.names.contains(&c.name.as_str());
        if is_included(c) && c.kind == ColumnKind::Static {
            return Err(CqlError::invalid(format!(
                "Unable to include static column '{}' which would be included by Materialized \
                 View SELECT * statement",
                c.name
            )));
        }
        if is_included(c) && !in_key {
            value_columns.push(c);
        }
        if c.kind.is_primary_key() && !in_key {
            missing.push(c.name.as_str());
        }
    }
    if !missing.is_empty() {
        return Err(CqlError::invalid(format!(
            "Cannot create Materialized View {} without primary key columns from base {} ({})",
            stmt.name.name,
            base.name,
            missing.join(", ")
        )));
    }
    if stmt.primary_key.partition_key.is_empty() {
        return Err(CqlError::invalid(
            "Must select at least a column for a Materialized View",
        ));
    }
    for (column, _) in &stmt.options.clustering_order {
        if !stmt.primary_key.clustering.contains(column) {
            return Err(CqlError::invalid(format!(
                "CLUSTERING ORDER BY lists {column} which is not a clustering column in the view"
            )));
        }
    }
    Ok(value_columns)
}

/// The view's options: a table's defaults, then the WITH clause.
fn view_options(
    stmt: &CreateView,
    ks: &KeyspaceDef,
    ctx: &DdlContext<'_>,
) -> Result<(TableOptions, options::Applied), CqlError> {
    let mut table_options = TableOptions {
        compression: options::user_table_compression(),
        ..TableOptions::default()
    };
    let applied = options::apply(
        &mut table_options,
        &stmt.options.properties,
        ctx.default_cdc_ttl,
    )?;
    options::check_tombstone_gc(&table_options, ks)?;
    if table_options.tombstone_gc.is_none() {
        table_options.tombstone_gc = Some(options::default_tombstone_gc(ks, true));
    }
    check_view_ttl(&table_options)?;
    Ok((table_options, applied))
}

/// The view's columns: its key (partition key, then clustering columns in their order),
/// then its value columns.
fn view_columns(
    stmt: &CreateView,
    key: &ViewKey<'_>,
    value_columns: Vec<&ColumnDef>,
) -> Vec<ColumnDef> {
    let mut columns = Vec::new();
    let mut partition_position = 0;
    let mut clustering_position = 0;
    for (def, is_partition) in &key.columns {
        let (kind, position) = if *is_partition {
            partition_position += 1;
            (ColumnKind::PartitionKey, partition_position - 1)
        } else {
            clustering_position += 1;
            (ColumnKind::Clustering, clustering_position - 1)
        };
        let descending = !is_partition
            && stmt
                .options
                .clustering_order
                .iter()
                .any(|(c, o)| *c == def.name && *o == Order::Desc);
        columns.push(ColumnDef {
            name: def.name.clone(),
            typ: def.typ.clone(),
            kind,
            position,
            order: if descending {
                ClusteringOrder::Desc
            } else {
                ClusteringOrder::Asc
            },
            id: 0,
        });
    }
    for c in value_columns {
        columns.push(ColumnDef {
            name: c.name.clone(),
            typ: c.typ.clone(),
            kind: ColumnKind::Regular,
            position: -1,
            order: ClusteringOrder::Asc,
            id: 0,
        });
    }
    columns
}

/// The next schema, with `view` in keyspace `ks_name`: its data is created, then built from
/// its base's rows.
fn add_view(schema: &Schema, ks_name: &str, view: Arc<TableDef>) -> Result<DdlOutcome, CqlError> {
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(ks_name) else {
        return Err(no_keyspace(ks_name));
    };
    next_ks.tables.insert(view.name.clone(), view.clone());
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Created,
        target(ks_name, &view.name),
        vec![
            StorageChange::CreateTable(view.clone()),
            StorageChange::BuildView(view),
        ],
    ))
}

/// A view may not have a default TTL (`view_prop_defs::apply_to_builder`).
fn check_view_ttl(options: &TableOptions) -> Result<(), CqlError> {
    if options.default_time_to_live > 0 {
        return Err(CqlError::invalid(
            "Cannot set or alter default_time_to_live for a materialized view. Data in a \
             materialized view always expire at the same time than the corresponding data in \
             the parent table.",
        ));
    }
    Ok(())
}

/// `Unknown column name detected in CREATE MATERIALIZED VIEW statement: c`
fn unknown_column(column: &str) -> CqlError {
    CqlError::invalid(format!(
        "Unknown column name detected in CREATE MATERIALIZED VIEW statement: {}",
        crate::types::quote_identifier(column)
    ))
}

/// `Undefined column name c` (the WHERE clause names a column the base does not have).
fn undefined_column(column: &str) -> CqlError {
    CqlError::invalid(format!(
        "Undefined column name {}",
        crate::types::quote_identifier(column)
    ))
}

/// `ALTER MATERIALIZED VIEW [ks.]v WITH ...` (`alter_view_statement::prepare_view`).
pub(super) fn alter(
    schema: &Schema,
    stmt: &AlterView,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    check_access(&ks_name, Some(name), Permission::Alter)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    let Some(view) = ks.tables.get(name) else {
        return Err(CqlError::invalid(format!("unconfigured table {name}")));
    };
    if !view.is_view() {
        return Err(CqlError::invalid(
            "Cannot use ALTER MATERIALIZED VIEW on Table. (Did you mean ALTER TABLE)?",
        ));
    }
    if stmt.properties.iter().any(|p| p.name == "cdc") {
        return Err(CqlError::invalid(
            "Cannot enable CDC for a materialized view",
        ));
    }
    let mut updated = (**view).clone();
    let applied = options::apply(&mut updated.options, &stmt.properties, ctx.default_cdc_ttl)?;
    if applied.id.is_some() {
        return Err(CqlError::config("Cannot alter table id."));
    }
    options::check_tombstone_gc(&updated.options, ks)?;
    if updated.options.gc_grace_seconds == 0 {
        return Err(CqlError::invalid(
            "Cannot alter gc_grace_seconds of a materialized view to 0, since this value is \
             used to TTL undelivered updates. Setting gc_grace_seconds too low might cause \
             undelivered updates to expire before being replayed.",
        ));
    }
    check_view_ttl(&updated.options)?;
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    next_ks.tables.insert(name.clone(), Arc::new(updated));
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Updated,
        target(&ks_name, name),
        Vec::new(),
    ))
}

/// `DROP MATERIALIZED VIEW [IF EXISTS] [ks.]v` (`prepare_view_drop_announcement`).
pub(super) fn drop(
    schema: &Schema,
    stmt: &DropTable,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.table, ctx)?;
    let name = &stmt.table.name;
    check_access(&ks_name, Some(name), Permission::Drop)?;
    let view = schema.table(&ks_name, name);
    let Some(view) = view else {
        if stmt.if_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        // A configuration_exception, passed on as such (unlike DROP TABLE's).
        return Err(CqlError::config(format!(
            "Cannot drop non existing materialized view '{name}' in keyspace '{ks_name}'."
        )));
    };
    if !view.is_view() {
        return Err(CqlError::invalid(
            "Cannot use DROP MATERIALIZED VIEW on Table. (Did you mean DROP TABLE)?",
        ));
    }
    let mut next = schema.clone();
    let Some(next_ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(no_keyspace(&ks_name));
    };
    next_ks.tables.remove(name);
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Dropped,
        target(&ks_name, name),
        vec![StorageChange::DropTable(view.id)],
    ))
}

/// The refusal of `DROP TABLE` of a base that still has views, or of a view
/// (`prepare_column_family_drop_announcement`); `None` when the drop may go on.
pub(super) fn check_drop_table(schema: &Schema, table: &TableDef) -> Option<CqlError> {
    if table.is_view() {
        return Some(CqlError::invalid(
            "Cannot use DROP TABLE on Materialized View. (Did you mean DROP MATERIALIZED VIEW)?",
        ));
    }
    let ks = schema.keyspace(&table.keyspace)?;
    let views: Vec<&str> = ks.views_of(&table.name).map(|v| v.name.as_str()).collect();
    if views.is_empty() {
        return None;
    }
    Some(CqlError::invalid(format!(
        "Cannot drop table when materialized views still depend on it ({}.{{{}}})",
        table.keyspace,
        views.join(", ")
    )))
}

/// The refusal of `ALTER TABLE` of a view, or of dropping a base column a view needs
/// (`alter_table_statement.cc`): the view's own columns, and every column when the view
/// keeps its rows alive with virtual columns (no base regular column in its key). Renaming
/// a key column of a base with views (which Scylla carries into the views and their
/// `WHERE` clauses) is refused by the embedded cluster.
pub(super) fn check_alter_table(
    schema: &Schema,
    table: &TableDef,
    dropped: &[String],
    renames: bool,
) -> Option<CqlError> {
    if table.is_view() {
        return Some(CqlError::invalid(
            "Cannot use ALTER TABLE on Materialized View. (Did you mean ALTER MATERIALIZED VIEW)?",
        ));
    }
    let ks = schema.keyspace(&table.keyspace)?;
    if renames && ks.views_of(&table.name).next().is_some() {
        return Some(CqlError::invalid(format!(
            "Renaming a column of table {}.{}, which has materialized views, is not supported \
             by the embedded cluster",
            table.keyspace, table.name
        )));
    }
    for column in dropped {
        for view in ks.views_of(&table.name) {
            let has_non_pk_key = view.columns.iter().any(|c| {
                c.kind.is_primary_key()
                    && table
                        .column(&c.name)
                        .is_some_and(|b| b.kind == ColumnKind::Regular)
            });
            if view.column(column).is_some() || !has_non_pk_key {
                return Some(CqlError::invalid(format!(
                    "Cannot drop column {} from base table {}.{}: materialized view {} needs \
                     this column",
                    crate::types::quote_identifier(column),
                    table.keyspace,
                    table.name,
                    view.name
                )));
            }
        }
    }
    None
}

/// After `ALTER TABLE base ADD` (`alter_table_statement::add_column`): every view of the base
/// is rewritten (and announced as UPDATED), and a view created with `SELECT *` gets the new
/// regular columns (static columns are never in a view).
pub(super) fn follow_added_columns(
    ks: &mut KeyspaceDef,
    before: &TableDef,
    after: &TableDef,
) -> Vec<SchemaChange> {
    let added: Vec<&ColumnDef> = after
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular && before.column(&c.name).is_none())
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    let views: Vec<Arc<TableDef>> = ks.views_of(&after.name).cloned().collect();
    let mut events = Vec::new();
    for view in views {
        let mut updated = (*view).clone();
        if view.view_info().is_some_and(|i| i.include_all_columns) {
            for c in &added {
                updated.add_column(ColumnDef {
                    name: c.name.clone(),
                    typ: c.typ.clone(),
                    kind: ColumnKind::Regular,
                    position: -1,
                    order: ClusteringOrder::Asc,
                    id: 0,
                });
            }
        }
        events.push(table_event(
            SchemaChangeType::Updated,
            &view.keyspace,
            &view.name,
        ));
        ks.tables.insert(view.name.clone(), Arc::new(updated));
    }
    events
}
