//! Schema of the embedded cluster: keyspaces, tables, columns, user types and their options.
//!
//! A [`Schema`] is an immutable snapshot (keyspaces → tables and types) with a version UUID;
//! DDL builds a new snapshot and swaps it in, so readers hold an `Arc<Schema>` without locks.
//! A [`TableDef`] lists its columns in Scylla's order (partition key, clustering key, then
//! static columns, then regular columns, each group sorted by name bytes) and carries its [`TableOptions`],
//! including the [`CdcOptions`] that decide whether writes are logged, and the
//! [`DroppedColumn`]s it remembers. A table of kind [`TableKind::CdcLog`] is the CDC log of
//! the base table it names; it is *attached* while that base has CDC enabled and *detached*
//! (kept, no longer written) once CDC is disabled ([`Schema::cdc_log_attached`]).
//! [`KeyspaceDef`]s hold [`Replication`] settings, tables and user types ([`UserType`]).
//!
//! - [`view`]: what a materialized view ([`TableKind::View`]) knows of its base table.
//! - [`system`]: definitions of the system tables (`system.local`, `system_schema.*`, the CDC
//!   metadata tables) and the rows of the schema tables rendered from a snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use crate::types::{CqlType, UserType};

pub(crate) mod index;
pub(crate) mod system;
pub(crate) mod view;

pub(crate) use index::IndexDef;

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

/// The `cdc` table option (semantics §1.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CdcOptions {
    /// Whether writes are logged.
    pub(crate) enabled: bool,
    /// Pre-image mode.
    pub(crate) preimage: PreimageMode,
    /// Whether post-images are logged.
    pub(crate) postimage: bool,
    /// Whether delta rows carry values (`full`) or only keys (`keys`).
    pub(crate) delta_full: bool,
    /// TTL (seconds) of every log cell; 0 = no TTL.
    pub(crate) ttl: u32,
}

/// The `preimage` CDC option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PreimageMode {
    /// No pre-images.
    Off,
    /// Pre-images of the columns the write touches.
    On,
    /// Pre-images of the whole row.
    Full,
}

impl Default for CdcOptions {
    fn default() -> Self {
        CdcOptions {
            enabled: false,
            preimage: PreimageMode::Off,
            postimage: false,
            delta_full: true,
            ttl: 86400,
        }
    }
}

impl CdcOptions {
    /// The option map as Scylla serializes it (all five keys, sorted).
    pub(crate) fn to_map(&self) -> BTreeMap<String, String> {
        let b = |v: bool| if v { "true" } else { "false" }.to_string();
        let mut m = BTreeMap::new();
        m.insert(
            "delta".into(),
            if self.delta_full { "full" } else { "keys" }.into(),
        );
        m.insert("enabled".into(), b(self.enabled));
        m.insert("postimage".into(), b(self.postimage));
        m.insert(
            "preimage".into(),
            match self.preimage {
                PreimageMode::Off => "false",
                PreimageMode::On => "true",
                PreimageMode::Full => "full",
            }
            .into(),
        );
        m.insert("ttl".into(), self.ttl.to_string());
        m
    }

    /// The `cdc` schema extension blob: Scylla's IDL serialization of `map<string, string>`,
    /// a little-endian u32 count, then each key and value as a little-endian u32 length and
    /// UTF-8 bytes, keys sorted (semantics §1.1).
    pub(crate) fn extension_blob(&self) -> Vec<u8> {
        let map = self.to_map();
        let mut out = Vec::new();
        out.extend_from_slice(&(map.len() as u32).to_le_bytes());
        for (k, v) in &map {
            for s in [k, v] {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        out
    }

    /// [`CdcOptions::parse`] with `default_ttl` as the `ttl` when the map does not give one
    /// (the cluster's configurable default, 86400 s as in Scylla unless changed).
    pub(crate) fn parse_with_default_ttl(
        entries: &[(String, String)],
        default_ttl: u32,
    ) -> Result<CdcOptions, String> {
        let mut o = CdcOptions::parse(entries)?;
        if !entries.iter().any(|(k, _)| k.eq_ignore_ascii_case("ttl")) {
            o.ttl = default_ttl;
        }
        Ok(o)
    }

    /// Parses the option map of `WITH cdc = {...}` (keys and values case-insensitive; values
    /// given as strings or bare literals, already rendered as text). Parsing starts from the
    /// defaults: ALTER replaces the whole option set. Errors are the messages Scylla returns
    /// as a configuration error.
    pub(crate) fn parse(entries: &[(String, String)]) -> Result<CdcOptions, String> {
        let mut o = CdcOptions::default();
        let parse_bool = |key: &str, v: &str| match v {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(format!("Invalid value for CDC option \"{key}\": {v}")),
        };
        for (key, value) in entries {
            let key = key.to_ascii_lowercase();
            let value = value.to_ascii_lowercase();
            match key.as_str() {
                "enabled" => o.enabled = parse_bool(&key, &value)?,
                "postimage" => o.postimage = parse_bool(&key, &value)?,
                "preimage" => {
                    o.preimage = if value == "full" {
                        PreimageMode::Full
                    } else if parse_bool(&key, &value)? {
                        PreimageMode::On
                    } else {
                        PreimageMode::Off
                    }
                }
                "delta" => {
                    o.delta_full = match value.as_str() {
                        "full" => true,
                        "keys" => false,
                        _ => {
                            return Err(format!("Invalid value for CDC option \"delta\": {value}"));
                        }
                    }
                }
                "ttl" => {
                    let ttl: i64 = value
                        .parse()
                        .map_err(|_| format!("Invalid value for CDC option \"ttl\": {value}"))?;
                    if ttl < 0 {
                        return Err("Invalid CDC option: ttl must be >= 0".into());
                    }
                    o.ttl = u32::try_from(ttl)
                        .ok()
                        .filter(|t| *t <= i32::MAX as u32)
                        .ok_or_else(|| "Invalid CDC option: ttl too large".to_string())?;
                }
                _ => return Err(format!("Invalid CDC option: {key}")),
            }
        }
        Ok(o)
    }
}

/// Table properties kept and shown in `system_schema.tables`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableOptions {
    /// `comment`
    pub(crate) comment: String,
    /// `read_repair_chance` (obsolete in Scylla, kept and shown).
    pub(crate) read_repair_chance: f64,
    /// `dclocal_read_repair_chance` (obsolete in Scylla, kept and shown).
    pub(crate) dclocal_read_repair_chance: f64,
    /// `paxos_grace_seconds` (a Scylla extension), if set.
    pub(crate) paxos_grace_seconds: Option<i32>,
    /// `default_time_to_live` (seconds, 0 = none).
    pub(crate) default_time_to_live: i32,
    /// `gc_grace_seconds`
    pub(crate) gc_grace_seconds: i32,
    /// `bloom_filter_fp_chance`
    pub(crate) bloom_filter_fp_chance: f64,
    /// `crc_check_chance`
    pub(crate) crc_check_chance: f64,
    /// `speculative_retry`
    pub(crate) speculative_retry: String,
    /// `min_index_interval`
    pub(crate) min_index_interval: i32,
    /// `max_index_interval`
    pub(crate) max_index_interval: i32,
    /// `memtable_flush_period_in_ms`
    pub(crate) memtable_flush_period_in_ms: i32,
    /// `caching`
    pub(crate) caching: BTreeMap<String, String>,
    /// `compaction`
    pub(crate) compaction: BTreeMap<String, String>,
    /// `compression`
    pub(crate) compression: BTreeMap<String, String>,
    /// The `cdc` option, if the table ever had one.
    pub(crate) cdc: Option<CdcOptions>,
    /// The `tombstone_gc` extension, if set.
    pub(crate) tombstone_gc: Option<BTreeMap<String, String>>,
}

impl Default for TableOptions {
    fn default() -> Self {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        TableOptions {
            comment: String::new(),
            read_repair_chance: 0.0,
            dclocal_read_repair_chance: 0.0,
            paxos_grace_seconds: None,
            default_time_to_live: 0,
            gc_grace_seconds: 864000,
            bloom_filter_fp_chance: 0.01,
            crc_check_chance: 1.0,
            speculative_retry: "99.0PERCENTILE".into(),
            min_index_interval: 128,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            caching: map(&[("keys", "ALL"), ("rows_per_partition", "ALL")]),
            // Scylla stores and shows compaction classes by their short names.
            compaction: map(&[("class", "SizeTieredCompactionStrategy")]),
            compression: map(&[(
                "sstable_compression",
                "org.apache.cassandra.io.compress.LZ4Compressor",
            )]),
            cdc: None,
            tombstone_gc: None,
        }
    }
}

impl TableOptions {
    /// Whether writes to the table are logged to a CDC log.
    pub(crate) fn cdc_enabled(&self) -> bool {
        self.cdc.as_ref().is_some_and(|c| c.enabled)
    }
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
    View(Box<view::ViewInfo>),
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

/// Replication settings of a keyspace, as stored in `system_schema.keyspaces.replication`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replication {
    /// The map, with `class` fully qualified and per-DC factors for NetworkTopologyStrategy.
    pub(crate) options: BTreeMap<String, String>,
}

impl Replication {
    /// The fully qualified strategy class.
    pub(crate) fn class(&self) -> &str {
        self.options.get("class").map(String::as_str).unwrap_or("")
    }

    /// Replication factor in the single data center the embedded cluster has.
    pub(crate) fn factor(&self, datacenter: &str) -> usize {
        let get = |k: &str| self.options.get(k).and_then(|v| v.parse::<usize>().ok());
        if self.class().ends_with("LocalStrategy") || self.class().ends_with("EverywhereStrategy") {
            return 1;
        }
        get("replication_factor")
            .or_else(|| get(datacenter))
            .unwrap_or(1)
    }
}

/// A keyspace definition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeyspaceDef {
    /// Name, case preserved.
    pub(crate) name: String,
    /// Replication.
    pub(crate) replication: Replication,
    /// `durable_writes`
    pub(crate) durable_writes: bool,
    /// `Some(initial tablet count)` for a tablets keyspace, `None` for vnodes.
    pub(crate) initial_tablets: Option<u32>,
    /// Tables by name.
    pub(crate) tables: BTreeMap<String, Arc<TableDef>>,
    /// User types by name.
    pub(crate) types: BTreeMap<String, Arc<UserType>>,
    /// Whether this is one of the built-in system keyspaces.
    pub(crate) system: bool,
}

/// An immutable snapshot of the whole schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schema {
    /// The schema version every node reports; replaced on every DDL.
    pub(crate) version: Uuid,
    /// Keyspaces by name.
    pub(crate) keyspaces: BTreeMap<String, KeyspaceDef>,
}

impl Schema {
    /// The schema of a fresh cluster: the system keyspaces only, with a random version.
    pub(crate) fn with_system_keyspaces() -> Schema {
        Schema {
            version: Uuid::new_v4(),
            keyspaces: system::system_keyspaces()
                .into_iter()
                .map(|k| (k.name.clone(), k))
                .collect(),
        }
    }

    /// Looks a keyspace up.
    pub(crate) fn keyspace(&self, name: &str) -> Option<&KeyspaceDef> {
        self.keyspaces.get(name)
    }

    /// Looks a table up.
    pub(crate) fn table(&self, keyspace: &str, table: &str) -> Option<&Arc<TableDef>> {
        self.keyspaces.get(keyspace)?.tables.get(table)
    }

    /// Every table of every keyspace.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &Arc<TableDef>> {
        self.keyspaces.values().flat_map(|k| k.tables.values())
    }

    /// Looks a table up by id.
    pub(crate) fn table_by_id(&self, id: Uuid) -> Option<&Arc<TableDef>> {
        self.tables().find(|t| t.id == id)
    }

    /// The CDC log table of `base` (attached or detached), if it has one.
    pub(crate) fn cdc_log_of(&self, base: &TableDef) -> Option<&Arc<TableDef>> {
        self.keyspaces.get(&base.keyspace)?.cdc_log_of(&base.name)
    }

    /// The base table of a CDC log table.
    pub(crate) fn cdc_base_of(&self, log: &TableDef) -> Option<&Arc<TableDef>> {
        match &log.kind {
            TableKind::CdcLog { base } => self.table(&log.keyspace, base),
            _ => None,
        }
    }

    /// Whether `log` is a CDC log table that is attached: its base table has CDC enabled, so
    /// writes to the base are logged into it and its columns follow the base's. A detached
    /// log (CDC disabled on the base) is kept as it is until CDC is enabled again.
    pub(crate) fn cdc_log_attached(&self, log: &TableDef) -> bool {
        self.cdc_base_of(log)
            .is_some_and(|base| base.options.cdc_enabled())
    }
}

impl KeyspaceDef {
    /// The CDC log table of base table `base` of this keyspace (attached or detached).
    pub(crate) fn cdc_log_of(&self, base: &str) -> Option<&Arc<TableDef>> {
        self.tables
            .get(&cdc_log_name(base))
            .filter(|t| matches!(&t.kind, TableKind::CdcLog { base: b } if b == base))
    }

    /// Whether the keyspace uses tablets.
    pub(crate) fn uses_tablets(&self) -> bool {
        self.initial_tablets.is_some()
    }

    /// The table that has the index `name`, and the index (index names are unique in a
    /// keyspace: `find_indexed_table`).
    pub(crate) fn indexed_table(&self, name: &str) -> Option<(&Arc<TableDef>, &IndexDef)> {
        self.tables
            .values()
            .find_map(|t| t.index(name).map(|i| (t, i)))
    }
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

    #[test]
    fn cdc_options_parse_like_scylla() {
        let kv = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let o = CdcOptions::parse(&kv(&[
            ("Enabled", "TRUE"),
            ("preimage", "full"),
            ("ttl", "10"),
        ]))
        .expect("valid");
        assert!(o.enabled);
        assert_eq!(o.preimage, PreimageMode::Full);
        assert_eq!(o.ttl, 10);
        // Parsing starts from the defaults.
        let o = CdcOptions::parse(&kv(&[("enabled", "false")])).expect("valid");
        assert_eq!(o, CdcOptions::default());
        assert_eq!(
            CdcOptions::parse(&kv(&[("enabled", "yes")])).unwrap_err(),
            "Invalid value for CDC option \"enabled\": yes"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("foo", "1")])).unwrap_err(),
            "Invalid CDC option: foo"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("ttl", "-1")])).unwrap_err(),
            "Invalid CDC option: ttl must be >= 0"
        );
        assert_eq!(
            CdcOptions::parse(&kv(&[("ttl", "99999999999")])).unwrap_err(),
            "Invalid CDC option: ttl too large"
        );
    }

    #[test]
    fn cdc_extension_blob_is_little_endian_idl_map() {
        let blob = CdcOptions {
            enabled: true,
            ..CdcOptions::default()
        }
        .extension_blob();
        assert_eq!(&blob[..4], &5u32.to_le_bytes());
        assert_eq!(&blob[4..8], &5u32.to_le_bytes());
        assert_eq!(&blob[8..13], b"delta");
        assert_eq!(&blob[13..17], &4u32.to_le_bytes());
        assert_eq!(&blob[17..21], b"full");
        let text = String::from_utf8_lossy(&blob);
        assert!(text.contains("enabled") && text.contains("true") && text.contains("86400"));
    }
}
