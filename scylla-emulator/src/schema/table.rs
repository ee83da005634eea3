//! A table's definition: its columns ([`ColumnDef`]) in Scylla's order, its kind
//! ([`TableKind`]: user table, CDC log, system table, materialized view), its properties, the
//! columns it dropped and its secondary indexes.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::index::IndexDef;
use super::options::TableOptions;
use super::view::ViewInfo;
use crate::types::CqlType;

/// Suffix of CDC log table names.
pub(crate) const CDC_LOG_SUFFIX: &str = "_scylla_cdc_log";

/// The CDC log table's partitioner, as shown in `system_schema.scylla_tables`.
pub(crate) const CDC_PARTITIONER: &str = "com.scylladb.dht.CDCPartitioner";

/// The name of the CDC log table of base table `base`.
pub(crate) fn cdc_log_name(base: &str) -> String {
    format!("{base}{CDC_LOG_SUFFIX}")
}

/// What part of the primary key (if any) a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ColumnKind {
    /// Part of the partition key.
    PartitionKey,
    /// Part of the clustering key.
    Clustering,
    /// A static column (one value per partition).
    Static,
    /// A regular column.
    Regular,
}

impl ColumnKind {
    /// The name `system_schema.columns.kind` uses.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ColumnKind::PartitionKey => "partition_key",
            ColumnKind::Clustering => "clustering",
            ColumnKind::Static => "static",
            ColumnKind::Regular => "regular",
        }
    }

    /// Whether the column is part of the primary key.
    pub(crate) fn is_primary_key(self) -> bool {
        matches!(self, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }
}

/// Sort order of a clustering column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) enum ClusteringOrder {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

impl ClusteringOrder {
    /// The name `system_schema.columns.clustering_order` uses for a clustering column
    /// (`NONE` for the others): Scylla writes it upper-case (`fill_column_info` in
    /// `db/schema_tables.cc`), unlike Cassandra (scylladb/scylladb#8477).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ClusteringOrder::Asc => "ASC",
            ClusteringOrder::Desc => "DESC",
        }
    }
}

/// A column of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnDef {
    /// Name, case preserved.
    pub(crate) name: String,
    /// Type.
    pub(crate) typ: CqlType,
    /// Key role.
    pub(crate) kind: ColumnKind,
    /// Position within the partition or clustering key; -1 for static and regular columns.
    pub(crate) position: i32,
    /// Clustering order (meaningful for clustering columns only).
    pub(crate) order: ClusteringOrder,
    /// Storage id of the column, unique within the table and never reused.
    pub(crate) id: u32,
}

/// What kind of table a [`TableDef`] describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableKind {
    /// A user table.
    User,
    /// The CDC log of the named base table (in the same keyspace).
    CdcLog {
        /// Base table name.
        base: String,
    },
    /// A system table whose rows are computed on read (e.g. `system.local`).
    Virtual,
    /// A system table stored like a user table (e.g. the CDC generation tables).
    System,
    /// A materialized view of a base table in the same keyspace.
    View(Box<ViewInfo>),
}

/// A table definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableDef {
    /// Keyspace name.
    pub(crate) keyspace: String,
    /// Table name, case preserved.
    pub(crate) name: String,
    /// Table id (`system_schema.tables.id`).
    pub(crate) id: Uuid,
    /// Columns in Scylla's order: partition key, clustering key, then static columns, then
    /// regular columns, each group sorted by the bytes of its names.
    pub(crate) columns: Vec<ColumnDef>,
    /// Properties.
    pub(crate) options: TableOptions,
    /// Kind of table.
    pub(crate) kind: TableKind,
    /// `WITH COMPACT STORAGE`.
    pub(crate) compact_storage: bool,
    /// Next storage id to give a new column.
    pub(crate) next_column_id: u32,
    /// Columns dropped with `ALTER TABLE ... DROP` (`system_schema.dropped_columns`), by
    /// name; the latest drop of a name wins.
    pub(crate) dropped_columns: BTreeMap<String, DroppedColumn>,
    /// Secondary indexes on the table, by name (Scylla's `schema::indices()`).
    pub(crate) indexes: Vec<IndexDef>,
}

/// A column dropped from a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DroppedColumn {
    /// When it was dropped (µs since the epoch). A CDC log drops columns 5 s in the future,
    /// and a column cannot be added back under the same name before that time.
    pub(crate) dropped_at: i64,
    /// Its type when it was dropped, with user types expanded to tuples
    /// (`expand_user_type`, db/schema_tables.cc).
    pub(crate) typ: CqlType,
}

impl TableDef {
    /// Creates a table from its columns (any order); sorts them into Scylla's order and gives
    /// them storage ids.
    pub(crate) fn new(
        keyspace: impl Into<String>,
        name: impl Into<String>,
        mut columns: Vec<ColumnDef>,
        options: TableOptions,
        kind: TableKind,
    ) -> TableDef {
        sort_columns(&mut columns);
        for (i, c) in columns.iter_mut().enumerate() {
            c.id = i as u32;
        }
        let next_column_id = columns.len() as u32;
        TableDef {
            keyspace: keyspace.into(),
            name: name.into(),
            id: Uuid::new_v4(),
            columns,
            options,
            kind,
            compact_storage: false,
            next_column_id,
            dropped_columns: BTreeMap::new(),
            indexes: Vec::new(),
        }
    }

    /// The index named `name`, if the table has it.
    pub(crate) fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.name == name)
    }

    /// Looks a column up by its exact (case-sensitive) name.
    pub(crate) fn column(&self, name: &str) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Index in `columns` of the named column.
    pub(crate) fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Partition-key columns in key order.
    pub(crate) fn partition_key(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }

    /// Clustering columns in key order.
    pub(crate) fn clustering_key(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
    }

    /// Static columns (in name order), then regular columns (in name order).
    pub(crate) fn value_columns(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns.iter().filter(|c| !c.kind.is_primary_key())
    }

    /// Whether this is a counter table: it has (or had, before they were dropped) counter
    /// columns. Like Scylla's flag, this stays after every counter column is dropped.
    pub(crate) fn is_counter(&self) -> bool {
        self.columns.iter().any(|c| c.typ.is_counter())
            || self.dropped_columns.values().any(|d| d.typ.is_counter())
    }

    /// Whether this table is a CDC log table.
    pub(crate) fn is_cdc_log(&self) -> bool {
        matches!(self.kind, TableKind::CdcLog { .. })
    }

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

    /// The partitioner shown in `system_schema.scylla_tables` (`None` = the default Murmur3).
    pub(crate) fn partitioner(&self) -> Option<&'static str> {
        self.is_cdc_log().then_some(CDC_PARTITIONER)
    }

    /// Adds a column (ALTER TABLE ADD), giving it a fresh storage id and keeping the order.
    pub(crate) fn add_column(&mut self, mut column: ColumnDef) {
        column.id = self.next_column_id;
        self.next_column_id += 1;
        self.columns.push(column);
        sort_columns(&mut self.columns);
    }

    /// Removes a column (ALTER TABLE DROP) and records when it was dropped.
    pub(crate) fn drop_column(&mut self, name: &str, dropped_at_micros: i64) -> Option<ColumnDef> {
        let i = self.column_index(name)?;
        let column = self.columns.remove(i);
        self.dropped_columns.insert(
            name.to_string(),
            DroppedColumn {
                dropped_at: dropped_at_micros,
                // User types expanded to tuples, as Scylla records them.
                typ: column.typ.expand_user_types(),
            },
        );
        Some(column)
    }

    /// Renames a primary-key column in place (its storage id and position are kept).
    /// Returns `false` when there is no such column.
    pub(crate) fn rename_column(&mut self, from: &str, to: &str) -> bool {
        match self.columns.iter_mut().find(|c| c.name == from) {
            Some(c) => {
                c.name = to.to_string();
                sort_columns(&mut self.columns);
                true
            }
            None => false,
        }
    }

    /// Clustering order of each clustering column, `true` for descending (what
    /// `storage::TableData::new` takes).
    pub(crate) fn clustering_descending(&self) -> Vec<bool> {
        self.clustering_key()
            .map(|c| c.order == ClusteringOrder::Desc)
            .collect()
    }

    /// The table's `system_schema.tables.flags`: `compound` for CQL tables, `dense` for
    /// compact tables with clustering columns, `counter` for counter tables.
    pub(crate) fn flags(&self) -> Vec<&'static str> {
        let clustering = self.clustering_key().count();
        let mut flags = Vec::new();
        if self.is_counter() {
            flags.push("counter");
        }
        if !self.compact_storage || clustering > 1 {
            flags.push("compound");
        }
        if self.compact_storage && clustering > 0 {
            flags.push("dense");
        }
        flags.sort_unstable();
        flags
    }
}

/// Sorts columns into Scylla's order (`schema::all_columns()`, which `SELECT *` and
/// `DESCRIBE` follow): partition key by position, clustering key by position, then the static
/// columns and then the regular columns, each group by the bytes of the names.
fn sort_columns(columns: &mut [ColumnDef]) {
    let rank = |k: ColumnKind| match k {
        ColumnKind::PartitionKey => 0,
        ColumnKind::Clustering => 1,
        ColumnKind::Static => 2,
        ColumnKind::Regular => 3,
    };
    columns.sort_by(|a, b| {
        rank(a.kind).cmp(&rank(b.kind)).then_with(|| {
            if a.kind.is_primary_key() {
                a.position.cmp(&b.position)
            } else {
                a.name.as_bytes().cmp(b.name.as_bytes())
            }
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, kind: ColumnKind, position: i32) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            typ: CqlType::Int,
            kind,
            position,
            order: ClusteringOrder::Asc,
            id: 0,
        }
    }

    #[test]
    fn columns_are_in_scylla_order() {
        let t = TableDef::new(
            "ks",
            "t",
            vec![
                col("v", ColumnKind::Regular, -1),
                col("cdc$time", ColumnKind::Regular, -1),
                col("ck2", ColumnKind::Clustering, 1),
                col("MyCol", ColumnKind::Regular, -1),
                col("pk", ColumnKind::PartitionKey, 0),
                col("ck1", ColumnKind::Clustering, 0),
                col("s", ColumnKind::Static, -1),
            ],
            TableOptions::default(),
            TableKind::User,
        );
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["pk", "ck1", "ck2", "s", "MyCol", "cdc$time", "v"]);
        let ids: Vec<u32> = t.columns.iter().map(|c| c.id).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn added_columns_get_fresh_ids() {
        let mut t = TableDef::new(
            "ks",
            "t",
            vec![
                col("pk", ColumnKind::PartitionKey, 0),
                col("v", ColumnKind::Regular, -1),
            ],
            TableOptions::default(),
            TableKind::User,
        );
        t.drop_column("v", 10).expect("exists");
        t.add_column(col("v", ColumnKind::Regular, -1));
        assert_eq!(t.column("v").map(|c| c.id), Some(2));
        assert_eq!(t.dropped_columns.get("v").map(|d| d.dropped_at), Some(10));
    }
}
