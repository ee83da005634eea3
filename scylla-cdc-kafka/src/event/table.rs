//! A table's columns, as the renderer needs them, from the driver's schema metadata.

use scylla::client::session::Session;
use scylla::cluster::metadata::ColumnKind;
use scylla::frame::response::result::ColumnType;

/// A column of a table: its name (as stored) and its CQL type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// The name, as stored (case-sensitive).
    pub name: String,
    /// The CQL type in the base table (a non-frozen collection or UDT is not frozen).
    pub typ: ColumnType<'static>,
}

impl ColumnInfo {
    /// A column.
    pub fn new(name: impl Into<String>, typ: ColumnType<'static>) -> ColumnInfo {
        ColumnInfo {
            name: name.into(),
            typ,
        }
    }
}

/// The role of a column in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Partition,
    Clustering,
    Static,
    Regular,
}

impl Role {
    pub(crate) fn is_key(self) -> bool {
        matches!(self, Role::Partition | Role::Clustering)
    }
}

/// A table: its keyspace, name and columns by role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The keyspace.
    pub keyspace: String,
    /// The table.
    pub table: String,
    /// The partition key columns, in key order.
    pub partition_key: Vec<ColumnInfo>,
    /// The clustering key columns, in key order.
    pub clustering_key: Vec<ColumnInfo>,
    /// The static columns.
    pub static_columns: Vec<ColumnInfo>,
    /// The regular columns.
    pub regular_columns: Vec<ColumnInfo>,
}

impl TableInfo {
    /// The table as the session's schema metadata (`Session::get_cluster_state`) describes
    /// it. The metadata may lag behind a schema change the session did not see yet: refresh
    /// it first (`Session::refresh_metadata`) after creating or altering the table.
    pub fn from_session(
        session: &Session,
        keyspace: &str,
        table: &str,
    ) -> anyhow::Result<TableInfo> {
        let state = session.get_cluster_state();
        let ks = state
            .get_keyspace(keyspace)
            .ok_or_else(|| anyhow::anyhow!("keyspace {keyspace} is not in the schema metadata"))?;
        let t = ks.tables.get(table).ok_or_else(|| {
            anyhow::anyhow!("table {keyspace}.{table} is not in the schema metadata")
        })?;
        let column = |name: &String| -> anyhow::Result<ColumnInfo> {
            let c = t.columns.get(name).ok_or_else(|| {
                anyhow::anyhow!("column {name} of {keyspace}.{table} is not in the schema metadata")
            })?;
            Ok(ColumnInfo::new(name.clone(), c.typ.clone()))
        };
        let partition_key: Vec<ColumnInfo> = t
            .partition_key
            .iter()
            .map(column)
            .collect::<anyhow::Result<_>>()?;
        let clustering_key: Vec<ColumnInfo> = t
            .clustering_key
            .iter()
            .map(column)
            .collect::<anyhow::Result<_>>()?;
        let mut static_columns = Vec::new();
        let mut regular_columns = Vec::new();
        for (name, c) in &t.columns {
            match c.kind {
                ColumnKind::Static => {
                    static_columns.push(ColumnInfo::new(name.clone(), c.typ.clone()))
                }
                ColumnKind::Regular => {
                    regular_columns.push(ColumnInfo::new(name.clone(), c.typ.clone()))
                }
                _ => {}
            }
        }
        static_columns.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        regular_columns.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        anyhow::ensure!(
            !partition_key.is_empty(),
            "{keyspace}.{table} has no partition key in the schema metadata"
        );
        Ok(TableInfo {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
            partition_key,
            clustering_key,
            static_columns,
            regular_columns,
        })
    }

    /// Whether the table has a clustering key.
    pub fn has_clustering_key(&self) -> bool {
        !self.clustering_key.is_empty()
    }

    /// Every column with its role, in the CDC log's column order: the base table's columns
    /// are all regular columns of the log table, which Scylla orders by the bytes of their
    /// names (the order the connector's structs follow, `ChangeSchema`'s column order).
    pub(crate) fn log_order(&self) -> Vec<(&ColumnInfo, Role)> {
        let mut all: Vec<(&ColumnInfo, Role)> = self
            .partition_key
            .iter()
            .map(|c| (c, Role::Partition))
            .chain(self.clustering_key.iter().map(|c| (c, Role::Clustering)))
            .chain(self.static_columns.iter().map(|c| (c, Role::Static)))
            .chain(self.regular_columns.iter().map(|c| (c, Role::Regular)))
            .collect();
        all.sort_by(|a, b| a.0.name.as_bytes().cmp(b.0.name.as_bytes()));
        all
    }
}
