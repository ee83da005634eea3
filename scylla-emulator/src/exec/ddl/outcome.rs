//! What a DDL statement takes and gives: the [`DdlContext`] it runs in, and the
//! [`DdlOutcome`] it returns (the next schema snapshot, the answer, the events to announce in
//! Scylla's order, and the [`StorageChange`]s to apply to table data).

use std::sync::Arc;

use uuid::Uuid;

use crate::frame::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::{Schema, TableDef};
use crate::storage::ColumnId;

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

impl DdlOutcome {
    /// An applied change: `next` gets a fresh version.
    pub(super) fn applied(
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
    pub(super) fn applied_with_events(
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
    pub(super) fn unchanged(change: Option<(SchemaChangeType, SchemaChangeTarget)>) -> DdlOutcome {
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
pub(super) fn table_event(change: SchemaChangeType, keyspace: &str, table: &str) -> SchemaChange {
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
pub(super) fn table_events<'a>(
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
