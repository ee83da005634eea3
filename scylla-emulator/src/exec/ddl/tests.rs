//! Tests of the DDL statements: every rule and message, and the CDC log life cycle.

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::cdc::log_schema::DROP_DELAY_MICROS;
use crate::cql::parse_statement;
use crate::frame::{ErrorKind, SchemaChangeTarget, SchemaChangeType};
use crate::schema::system::{NETWORK_TOPOLOGY_STRATEGY, SIMPLE_STRATEGY};
use crate::schema::{ClusteringOrder, ColumnKind, TableDef, TableKind};
use crate::storage::ColumnId;
use crate::types::CqlType;

/// A schema plus a clock, to run DDL statements one after another.
pub(crate) struct Db {
    /// The current snapshot.
    pub(crate) schema: Schema,
    /// Current time, µs.
    pub(crate) now: i64,
    /// The `USE` keyspace.
    pub(crate) keyspace: Option<String>,
    /// Default CDC TTL.
    pub(crate) default_cdc_ttl: u32,
}

impl Db {
    /// A fresh cluster's schema.
    pub(crate) fn new() -> Db {
        Db {
            schema: Schema::with_system_keyspaces(),
            now: 1_700_000_000_000_000,
            keyspace: None,
            default_cdc_ttl: 86400,
        }
    }

    /// Runs one statement; applies the new snapshot on success.
    pub(crate) fn run(&mut self, cql: &str) -> Result<DdlOutcome, CqlError> {
        let stmt = parse_statement(cql).unwrap_or_else(|e| panic!("{cql}: {e}"));
        let ctx = DdlContext {
            keyspace: self.keyspace.as_deref(),
            now_micros: self.now,
            default_cdc_ttl: self.default_cdc_ttl,
        };
        let outcome = execute_ddl(&self.schema, &stmt, &ctx)?;
        if let Some(s) = &outcome.schema {
            assert_ne!(s.version, self.schema.version, "{cql}: version must change");
            self.schema = s.clone();
        }
        Ok(outcome)
    }

    /// Runs a statement that must succeed.
    pub(crate) fn ok(&mut self, cql: &str) -> DdlOutcome {
        self.run(cql)
            .unwrap_or_else(|e| panic!("{cql}: unexpected error {e:?}"))
    }

    /// Runs a statement that must fail; the schema must not change.
    pub(crate) fn err(&mut self, cql: &str) -> CqlError {
        let before = self.schema.clone();
        let e = match self.run(cql) {
            Ok(o) => panic!("{cql}: expected an error, got {o:?}"),
            Err(e) => e,
        };
        assert_eq!(
            self.schema, before,
            "{cql}: a failed statement changed the schema"
        );
        e
    }

    /// A table that must exist.
    pub(crate) fn table(&self, ks: &str, t: &str) -> Arc<TableDef> {
        self.schema
            .table(ks, t)
            .cloned()
            .unwrap_or_else(|| panic!("{ks}.{t} missing"))
    }

    /// Creates keyspace `ks` with SimpleStrategy RF 1.
    pub(crate) fn keyspace(&mut self, ks: &str) {
        self.ok(&format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', \
             'replication_factor': 1}}"
        ));
    }
}

/// Asserts an error's kind and exact message.
fn assert_error(e: &CqlError, kind: ErrorKind, message: &str) {
    assert_eq!((&e.kind, e.message.as_str()), (&kind, message));
}

fn table_change(o: &DdlOutcome) -> (SchemaChangeType, String, String) {
    match o.change.as_ref().map(|c| (c.change, &c.target)) {
        Some((c, SchemaChangeTarget::Table { keyspace, table })) => {
            (c, keyspace.clone(), table.clone())
        }
        other => panic!("not a table change: {other:?}"),
    }
}

fn column_names(t: &TableDef) -> Vec<&str> {
    t.columns.iter().map(|c| c.name.as_str()).collect()
}

// ---------------------------------------------------------------------------------------
// Keyspaces
// ---------------------------------------------------------------------------------------

#[test]
fn create_keyspace_qualifies_the_class_and_announces_it() {
    let mut db = Db::new();
    let o = db.ok(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 3} AND durable_writes = false",
    );
    let change = o.change.expect("change");
    assert_eq!(change.change, SchemaChangeType::Created);
    assert_eq!(
        change.target,
        SchemaChangeTarget::Keyspace {
            keyspace: "ks".into()
        }
    );
    assert!(o.storage.is_empty());
    let ks = db.schema.keyspace("ks").expect("ks");
    assert_eq!(ks.replication.class(), SIMPLE_STRATEGY);
    assert_eq!(
        ks.replication
            .options
            .get("replication_factor")
            .map(String::as_str),
        Some("3")
    );
    assert!(!ks.durable_writes);
    assert_eq!(ks.initial_tablets, None, "vnodes by default");
    assert!(!ks.system);
    // A fully qualified class is kept as it is.
    db.ok("CREATE KEYSPACE ks2 WITH replication = {'class': \
         'org.apache.cassandra.locator.SimpleStrategy', 'replication_factor': '1'}");
    assert_eq!(
        db.schema.keyspace("ks2").map(|k| k.replication.class()),
        Some(SIMPLE_STRATEGY)
    );
}

#[test]
fn network_topology_replication_factor_is_expanded_into_the_datacenter() {
    let mut db = Db::new();
    db.ok(
        "CREATE KEYSPACE n WITH replication = {'class': 'NetworkTopologyStrategy', \
         'replication_factor': 3}",
    );
    let r = &db.schema.keyspace("n").expect("n").replication;
    assert_eq!(r.class(), NETWORK_TOPOLOGY_STRATEGY);
    assert_eq!(r.options.get("datacenter1").map(String::as_str), Some("3"));
    assert!(!r.options.contains_key("replication_factor"));
    assert_eq!(r.options.len(), 2);
    db.ok(
        "CREATE KEYSPACE n2 WITH replication = {'class': 'NetworkTopologyStrategy', \
         'datacenter1': 2}",
    );
    assert_eq!(
        db.schema
            .keyspace("n2")
            .and_then(|k| k.replication.options.get("datacenter1"))
            .map(String::as_str),
        Some("2")
    );
    let e = db.err(
        "CREATE KEYSPACE n3 WITH replication = {'class': 'NetworkTopologyStrategy', 'dc2': 1}",
    );
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Unrecognized strategy option {dc2} passed to \
         org.apache.cassandra.locator.NetworkTopologyStrategy for keyspace n3",
    );
}

#[test]
fn replication_errors_are_configuration_errors() {
    let mut db = Db::new();
    for (cql, message) in [
        (
            "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy'}",
            "SimpleStrategy requires a replication_factor strategy option.",
        ),
        (
            "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', \
             'replication_factor': 'x'}",
            "Replication factor must be numeric and non-negative, found 'x'",
        ),
        (
            "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', \
             'replication_factor': -1}",
            "Replication factor must be numeric and non-negative, found '-1'",
        ),
        (
            "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', \
             'replication_factor': 1, 'foo': 1}",
            "Unrecognized strategy option {foo} passed to \
             org.apache.cassandra.locator.SimpleStrategy for keyspace k",
        ),
        (
            "CREATE KEYSPACE k WITH replication = {'class': 'FooStrategy'}",
            "Unable to find replication strategy class 'org.apache.cassandra.locator.FooStrategy'",
        ),
        (
            "CREATE KEYSPACE k WITH replication = {'replication_factor': 1}",
            "Missing mandatory replication strategy class",
        ),
        (
            "CREATE KEYSPACE k WITH durable_writes = true",
            "Missing mandatory replication strategy class",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::ConfigError, message);
    }
    let e = db.err(
        "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1} AND foo = 1",
    );
    assert_error(&e, ErrorKind::SyntaxError, "Unknown property 'foo'");
    let e = db.err("CREATE KEYSPACE k WITH replication = 'x'");
    assert_error(
        &e,
        ErrorKind::SyntaxError,
        "Invalid value for property 'replication'. It should be a map.",
    );
}

#[test]
fn duplicate_keyspace_is_already_exists_unless_if_not_exists() {
    let mut db = Db::new();
    db.keyspace("ks");
    let e = db.err(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    assert_eq!(
        e.kind,
        ErrorKind::AlreadyExists {
            keyspace: "ks".into(),
            table: String::new()
        }
    );
    assert_eq!(e.message, "Cannot add existing keyspace \"ks\"");
    let version = db.schema.version;
    let o = db.ok(
        "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    assert!(o.schema.is_none());
    assert_eq!(db.schema.version, version);
    assert_eq!(
        o.change.map(|c| c.change),
        Some(SchemaChangeType::Created),
        "Scylla announces CREATED even when nothing was created"
    );
}

#[test]
fn system_keyspaces_cannot_be_changed() {
    let mut db = Db::new();
    let e = db.err(
        "CREATE KEYSPACE system WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    assert_error(
        &e,
        ErrorKind::Invalid,
        "system keyspace is not user-modifiable",
    );
    let e = db.err(
        "ALTER KEYSPACE system_schema WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "system_schema keyspace is not user-modifiable.",
    );
    let e = db.err("DROP KEYSPACE system");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "system keyspace is not user-modifiable.",
    );
    let e = db.err("DROP KEYSPACE system_traces");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "Cannot DROP <keyspace system_traces>",
    );
    let e = db.err("DROP TABLE system_distributed.cdc_generation_timestamps");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "Cannot DROP <table system_distributed.cdc_generation_timestamps>",
    );
    let e = db.err("ALTER TABLE system_distributed.cdc_streams_descriptions_v2 WITH comment = 'x'");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "Cannot ALTER <table system_distributed.cdc_streams_descriptions_v2>",
    );
    let e = db.err("CREATE TABLE system.t (pk int PRIMARY KEY)");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "system keyspace is not user-modifiable.",
    );
    let e = db.err("DROP TABLE system.local");
    assert_eq!(e.kind, ErrorKind::Unauthorized);
    let e = db.err("CREATE TYPE system_schema.ut (a int)");
    assert_eq!(e.kind, ErrorKind::Unauthorized);
}

#[test]
fn tablets_are_opt_in() {
    let mut db = Db::new();
    let nts = "replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}";
    db.ok(&format!("CREATE KEYSPACE v WITH {nts}"));
    assert_eq!(
        db.schema.keyspace("v").and_then(|k| k.initial_tablets),
        None
    );
    db.ok(&format!(
        "CREATE KEYSPACE t1 WITH {nts} AND tablets = {{'enabled': true}}"
    ));
    // Stored as 0, as ScyllaDB stores it (`ks_prop_defs::get_initial_tablets`); the
    // embedded cluster's tables then get `DEFAULT_INITIAL_TABLETS` tablets.
    assert_eq!(
        db.schema.keyspace("t1").and_then(|k| k.initial_tablets),
        Some(0)
    );
    assert_eq!(keyspace::tablet_count(0), keyspace::DEFAULT_INITIAL_TABLETS);
    assert_eq!(keyspace::tablet_count(16), 16);
    // An empty tablets map enables tablets too.
    db.ok(&format!("CREATE KEYSPACE t0 WITH {nts} AND tablets = {{}}"));
    assert_eq!(
        db.schema.keyspace("t0").and_then(|k| k.initial_tablets),
        Some(0)
    );
    db.ok(&format!(
        "CREATE KEYSPACE t2 WITH {nts} AND tablets = {{'initial': 16}}"
    ));
    assert_eq!(
        db.schema.keyspace("t2").and_then(|k| k.initial_tablets),
        Some(16)
    );
    db.ok(&format!(
        "CREATE KEYSPACE t3 WITH {nts} AND tablets = {{'enabled': false}}"
    ));
    assert_eq!(
        db.schema.keyspace("t3").and_then(|k| k.initial_tablets),
        None
    );
    let e = db.err(
        "CREATE KEYSPACE s WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1} AND tablets = {'enabled': true}",
    );
    assert_eq!(e.kind, ErrorKind::ConfigError);
    let e = db.err(&format!(
        "CREATE KEYSPACE t4 WITH {nts} AND tablets = {{'enabled': 'yes'}}"
    ));
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Tablets enabled value must be true or false; found: yes",
    );
    let e = db.err(&format!(
        "CREATE KEYSPACE t4 WITH {nts} AND tablets = {{'initial': 'many'}}"
    ));
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Initial tablets value should be numeric; found many",
    );
    let e = db.err(&format!(
        "CREATE KEYSPACE t4 WITH {nts} AND tablets = {{'foo': 1}}"
    ));
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Unrecognized tablets option foo",
    );
    let e = db.err("ALTER KEYSPACE v WITH tablets = {'enabled': true}");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot alter replication strategy vnode/tablets flavor",
    );
}

#[test]
fn alter_keyspace_replaces_replication_and_durable_writes() {
    let mut db = Db::new();
    db.keyspace("ks");
    let o = db.ok(
        "ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', \
         'datacenter1': 2} AND durable_writes = false",
    );
    assert_eq!(o.change.map(|c| c.change), Some(SchemaChangeType::Updated));
    let ks = db.schema.keyspace("ks").expect("ks");
    assert_eq!(ks.replication.class(), NETWORK_TOPOLOGY_STRATEGY);
    assert_eq!(ks.replication.factor("datacenter1"), 2);
    assert!(!ks.durable_writes);
    let e = db.err("ALTER KEYSPACE nope WITH durable_writes = true");
    assert_error(&e, ErrorKind::Invalid, "Unknown keyspace nope");
    let e = db.err("ALTER KEYSPACE ks WITH replication = {'replication_factor': 1}");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Missing replication strategy class",
    );
}

#[test]
fn drop_keyspace_drops_every_table() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.a (pk int PRIMARY KEY) WITH cdc = {'enabled': true}");
    db.ok("CREATE TABLE ks.b (pk int PRIMARY KEY)");
    let ids: Vec<Uuid> = ["a", "a_scylla_cdc_log", "b"]
        .iter()
        .map(|t| db.table("ks", t).id)
        .collect();
    let o = db.ok("DROP KEYSPACE ks");
    let mut dropped: Vec<Uuid> = o
        .storage
        .iter()
        .map(|s| match s {
            StorageChange::DropTable(id) => *id,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    dropped.sort();
    let mut expected = ids;
    expected.sort();
    assert_eq!(dropped, expected);
    assert!(db.schema.keyspace("ks").is_none());
    assert_eq!(o.change.map(|c| c.change), Some(SchemaChangeType::Dropped));
    let e = db.err("DROP KEYSPACE ks");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Cannot drop non existing keyspace 'ks'.",
    );
    let o = db.ok("DROP KEYSPACE IF EXISTS ks");
    assert!(o.schema.is_none() && o.change.is_none());
}

#[test]
fn keyspace_names_are_checked() {
    let mut db = Db::new();
    let e = db.err(
        "CREATE KEYSPACE \"a-b\" WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
    );
    assert_error(
        &e,
        ErrorKind::Invalid,
        "\"a-b\" is not a valid keyspace name",
    );
    let long = "k".repeat(49);
    let e = db.err(&format!(
        "CREATE KEYSPACE {long} WITH replication = {{'class': 'SimpleStrategy', \
         'replication_factor': 1}}"
    ));
    assert_eq!(
        e.message,
        format!("Keyspace names shouldn't be more than 48 characters long (got \"{long}\")")
    );
}

// ---------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------

#[test]
fn create_table_builds_columns_in_scylla_order() {
    let mut db = Db::new();
    db.keyspace("ks");
    let o = db.ok(
        "CREATE TABLE ks.t (pk1 int, pk2 text, c1 int, c2 timeuuid, s int static, \
         b text, a list<int>, PRIMARY KEY ((pk1, pk2), c1, c2)) \
         WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
    );
    assert_eq!(
        table_change(&o),
        (SchemaChangeType::Created, "ks".into(), "t".into())
    );
    let t = db.table("ks", "t");
    assert_eq!(column_names(&t), ["pk1", "pk2", "c1", "c2", "s", "a", "b"]);
    let kinds: Vec<(ColumnKind, i32)> = t.columns.iter().map(|c| (c.kind, c.position)).collect();
    assert_eq!(
        kinds,
        [
            (ColumnKind::PartitionKey, 0),
            (ColumnKind::PartitionKey, 1),
            (ColumnKind::Clustering, 0),
            (ColumnKind::Clustering, 1),
            (ColumnKind::Static, -1),
            (ColumnKind::Regular, -1),
            (ColumnKind::Regular, -1),
        ]
    );
    assert_eq!(t.column("c1").map(|c| c.order), Some(ClusteringOrder::Desc));
    assert_eq!(t.clustering_descending(), [true, false]);
    assert_eq!(
        t.column("a").map(|c| c.typ.to_string()).as_deref(),
        Some("list<int>")
    );
    assert_eq!(t.kind, TableKind::User);
    assert!(t.options.cdc.is_none());
    assert_eq!(t.flags(), ["compound"]);
    match o.storage.as_slice() {
        [StorageChange::CreateTable(created)] => assert_eq!(created.id, t.id),
        other => panic!("unexpected storage changes {other:?}"),
    }
    // COLUMNFAMILY is a synonym; the USE keyspace applies to unqualified names.
    db.keyspace = Some("ks".into());
    db.ok("CREATE COLUMNFAMILY t2 (k int PRIMARY KEY, v int)");
    assert!(db.schema.table("ks", "t2").is_some());
}

#[test]
fn unqualified_names_need_a_keyspace() {
    let mut db = Db::new();
    let e = db.err("CREATE TABLE t (pk int PRIMARY KEY)");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "No keyspace has been specified. USE a keyspace, or explicitly specify \
         keyspace.tablename",
    );
    let e = db.err("CREATE TABLE nope.t (pk int PRIMARY KEY)");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot create a table in a non-existent keyspace: nope",
    );
}

#[test]
fn duplicate_table_is_already_exists_with_keyspace_and_table() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY)");
    let e = db.err("CREATE TABLE ks.t (pk int PRIMARY KEY, v int)");
    assert_eq!(
        e.kind,
        ErrorKind::AlreadyExists {
            keyspace: "ks".into(),
            table: "t".into()
        }
    );
    assert_eq!(
        e.message,
        "Cannot add already existing table \"t\" to keyspace \"ks\""
    );
    let o = db.ok("CREATE TABLE IF NOT EXISTS ks.t (pk int PRIMARY KEY, v int)");
    assert!(o.schema.is_none() && o.storage.is_empty());
    assert_eq!(
        table_change(&o),
        (SchemaChangeType::Created, "ks".into(), "t".into())
    );
    assert!(db.table("ks", "t").column("v").is_none());
}

#[test]
fn primary_key_rules() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.ut (a int)");
    for (cql, message) in [
        (
            "CREATE TABLE ks.t (pk int, v int, PRIMARY KEY (x))",
            "Unknown definition x referenced in PRIMARY KEY",
        ),
        (
            "CREATE TABLE ks.t (pk int, PRIMARY KEY (pk, pk))",
            "Unknown definition pk referenced in PRIMARY KEY",
        ),
        (
            "CREATE TABLE ks.t (pk list<int> PRIMARY KEY)",
            "Invalid non-frozen collection type for PRIMARY KEY component pk",
        ),
        (
            "CREATE TABLE ks.t (pk int, c ut, PRIMARY KEY (pk, c))",
            "Invalid non-frozen user-defined type for PRIMARY KEY component c",
        ),
        (
            "CREATE TABLE ks.t (pk counter PRIMARY KEY)",
            "counter type is not supported for PRIMARY KEY part pk",
        ),
        (
            "CREATE TABLE ks.t (pk int, c duration, PRIMARY KEY (pk, c))",
            "duration type is not supported for PRIMARY KEY part c",
        ),
        (
            "CREATE TABLE ks.t (pk frozen<list<duration>> PRIMARY KEY)",
            "duration type is not supported for PRIMARY KEY part pk",
        ),
        (
            "CREATE TABLE ks.t (pk int, c int static, PRIMARY KEY (pk, c))",
            "Static column c cannot be part of the PRIMARY KEY",
        ),
        (
            "CREATE TABLE ks.t (pk int PRIMARY KEY, s int static)",
            "Static columns are only useful (and thus allowed) if the table has at least one \
             clustering column",
        ),
        (
            "CREATE TABLE ks.t (pk int PRIMARY KEY, v int, v text)",
            "Multiple definition of identifier v",
        ),
        (
            "CREATE TABLE ks.t (pk int, a int, b int, PRIMARY KEY (pk, a, b)) WITH \
             CLUSTERING ORDER BY (b DESC, a ASC)",
            "The order of columns in the CLUSTERING ORDER directive must be the one of the \
             clustering key (a must appear before b)",
        ),
        (
            "CREATE TABLE ks.t (pk int, a int, b int, PRIMARY KEY (pk, a, b)) WITH \
             CLUSTERING ORDER BY (b DESC)",
            "Missing CLUSTERING ORDER for column a",
        ),
        (
            "CREATE TABLE ks.t (pk int, a int, PRIMARY KEY (pk, a)) WITH \
             CLUSTERING ORDER BY (a DESC, pk ASC)",
            "Only clustering key columns can be defined in CLUSTERING ORDER directive",
        ),
        (
            "CREATE TABLE ks.t (pk int PRIMARY KEY, c counter) WITH default_time_to_live = 10",
            "Cannot set default_time_to_live on a table with counters",
        ),
        (
            "CREATE TABLE ks.\"a-b\" (pk int PRIMARY KEY)",
            "\"a-b\" is not a valid table name (must be alphanumeric character only: \
             [0-9A-Za-z]+)",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, message);
    }
    let e = db.err("CREATE TABLE ks.t (pk int PRIMARY KEY, c counter, v int)");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Cannot add a non counter column (v) in a counter column family",
    );
    // A prefix of the clustering columns may be ordered; the rest stay ascending.
    db.ok(
        "CREATE TABLE ks.ok (pk int, a int, b int, PRIMARY KEY (pk, a, b)) WITH \
         CLUSTERING ORDER BY (a DESC)",
    );
    assert_eq!(db.table("ks", "ok").clustering_descending(), [true, false]);
    // Frozen collections and UDTs may be keys; counter tables hold only counters.
    db.ok("CREATE TABLE ks.fk (pk frozen<list<int>>, c frozen<ut>, PRIMARY KEY (pk, c))");
    db.ok("CREATE TABLE ks.cnt (pk int PRIMARY KEY, c counter, s counter)");
    assert!(db.table("ks", "cnt").is_counter());
    assert_eq!(db.table("ks", "cnt").flags(), ["compound", "counter"]);
}

#[test]
fn compact_storage_rules() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.c1 (pk int PRIMARY KEY, v int) WITH COMPACT STORAGE");
    let t = db.table("ks", "c1");
    assert!(t.compact_storage);
    assert!(t.flags().is_empty());
    db.ok("CREATE TABLE ks.c2 (pk int, c int, v int, PRIMARY KEY (pk, c)) WITH COMPACT STORAGE");
    assert_eq!(db.table("ks", "c2").flags(), ["dense"]);
    for (cql, message) in [
        (
            "CREATE TABLE ks.x (pk int PRIMARY KEY) WITH COMPACT STORAGE",
            "No definition found that is not part of the PRIMARY KEY",
        ),
        (
            "CREATE TABLE ks.x (pk int PRIMARY KEY, l list<int>) WITH COMPACT STORAGE",
            "Non-frozen collections and UDTs are not supported with COMPACT STORAGE",
        ),
        (
            "CREATE TABLE ks.x (pk int, c int, a int, b int, PRIMARY KEY (pk, c)) WITH \
             COMPACT STORAGE",
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not \
             part of the PRIMARY KEY (got: a, b)",
        ),
        (
            "CREATE TABLE ks.x (pk int, c int, s int static, PRIMARY KEY (pk, c)) WITH \
             COMPACT STORAGE",
            "Static columns are not supported in COMPACT STORAGE tables",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, message);
    }
    let e = db.err("ALTER TABLE ks.c2 ADD w int");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot add new column to a COMPACT STORAGE table",
    );
    let e = db.err("ALTER TABLE ks.c1 DROP v");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop columns from a non-CQL3 table",
    );
}

#[test]
fn table_properties_are_kept() {
    let mut db = Db::new();
    db.keyspace("ks");
    let id = Uuid::new_v4();
    db.ok(&format!(
        "CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH comment = 'hi' AND \
         default_time_to_live = 60 AND gc_grace_seconds = 5 AND id = {id} AND \
         compaction = {{'class': 'LeveledCompactionStrategy'}} AND \
         tombstone_gc = {{'mode': 'immediate'}} AND paxos_grace_seconds = 3"
    ));
    let t = db.table("ks", "t");
    assert_eq!(t.id, id);
    assert_eq!(t.options.comment, "hi");
    assert_eq!(t.options.default_time_to_live, 60);
    assert_eq!(t.options.gc_grace_seconds, 5);
    assert_eq!(
        t.options.compaction.get("class").map(String::as_str),
        Some("LeveledCompactionStrategy")
    );
    let o = db.ok("ALTER TABLE ks.t WITH comment = 'bye' AND bloom_filter_fp_chance = 0.5");
    assert_eq!(
        table_change(&o),
        (SchemaChangeType::Updated, "ks".into(), "t".into())
    );
    let t = db.table("ks", "t");
    assert_eq!(t.options.comment, "bye");
    assert_eq!(t.options.bloom_filter_fp_chance, 0.5);
    assert_eq!(t.options.default_time_to_live, 60, "other options stay");
    let e = db.err(&format!("ALTER TABLE ks.t WITH id = {id}"));
    assert_error(&e, ErrorKind::ConfigError, "Cannot alter table id.");
    let e = db.err("ALTER TABLE ks.t WITH foo = 1");
    assert_error(&e, ErrorKind::SyntaxError, "Unknown property 'foo'");
    db.ok("CREATE TABLE ks.c (pk int PRIMARY KEY, n counter)");
    let e = db.err("ALTER TABLE ks.c WITH default_time_to_live = 5");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot set default_time_to_live on a table with counters",
    );
}

#[test]
fn alter_table_add_columns() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int, c int, v int, PRIMARY KEY (pk, c))");
    let o = db.ok("ALTER TABLE ks.t ADD (s text static, l list<int>)");
    assert!(o.storage.is_empty());
    let t = db.table("ks", "t");
    assert_eq!(t.column("s").map(|c| c.kind), Some(ColumnKind::Static));
    assert_eq!(t.column("l").map(|c| c.id), Some(4));
    assert_eq!(column_names(&t), ["pk", "c", "s", "l", "v"]);
    for (cql, kind, message) in [
        (
            "ALTER TABLE ks.t ADD pk int",
            ErrorKind::Invalid,
            "Invalid column name pk because it conflicts with a PRIMARY KEY part",
        ),
        (
            "ALTER TABLE ks.t ADD c int",
            ErrorKind::Invalid,
            "Invalid column name c because it conflicts with an existing column",
        ),
        (
            "ALTER TABLE ks.t ADD v int",
            ErrorKind::Invalid,
            "Invalid column name v because it conflicts with an existing column",
        ),
        (
            "ALTER TABLE ks.t ADD n counter",
            ErrorKind::ConfigError,
            "Cannot add a counter column (n) in a non counter column family",
        ),
        (
            "ALTER TABLE ks.t ADD x list<list<int>>",
            ErrorKind::Invalid,
            "Non-frozen user types or collections are not allowed inside collections: \
             list<list<int>>",
        ),
        (
            "ALTER TABLE ks.nope ADD x int",
            ErrorKind::Invalid,
            "unconfigured table nope",
        ),
        (
            "ALTER TABLE nope.t ADD x int",
            ErrorKind::Invalid,
            "Keyspace nope does not exist",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, kind, message);
    }
    db.ok("CREATE TABLE ks.nock (pk int PRIMARY KEY)");
    let e = db.err("ALTER TABLE ks.nock ADD s int static");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Static columns are only useful (and thus allowed) if the table has at least one \
         clustering column",
    );
    db.ok("CREATE TABLE ks.cnt (pk int PRIMARY KEY, n counter)");
    let e = db.err("ALTER TABLE ks.cnt ADD v int");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Cannot add a non counter column (v) in a counter column family",
    );
    db.ok("ALTER TABLE ks.cnt DROP n");
    let e = db.err("ALTER TABLE ks.cnt ADD n counter");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot re-add previously dropped counter column n",
    );
}

#[test]
fn alter_table_drop_columns() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int, c int, a int, b text, PRIMARY KEY (pk, c))");
    let t = db.table("ks", "t");
    let (a, b) = (
        t.column("a").map(|c| c.id).unwrap_or_default(),
        t.column("b").map(|c| c.id).unwrap_or_default(),
    );
    let o = db.ok("ALTER TABLE ks.t DROP (a, b)");
    match o.storage.as_slice() {
        [StorageChange::DropColumns { table, columns }] => {
            assert_eq!(*table, t.id);
            assert_eq!(columns, &[ColumnId(a), ColumnId(b)]);
        }
        other => panic!("unexpected {other:?}"),
    }
    let t = db.table("ks", "t");
    assert_eq!(column_names(&t), ["pk", "c"]);
    let dropped = t.dropped_columns.get("b").expect("recorded");
    assert_eq!(dropped.dropped_at, db.now);
    assert_eq!(dropped.typ, CqlType::Text);
    db.ok("ALTER TABLE ks.t ADD b int");
    assert_eq!(
        db.table("ks", "t").column("b").map(|c| c.id),
        Some(4),
        "a re-added column gets a new storage id"
    );
    db.ok("ALTER TABLE ks.t DROP b USING TIMESTAMP 42");
    assert_eq!(
        db.table("ks", "t")
            .dropped_columns
            .get("b")
            .map(|d| d.dropped_at),
        Some(42)
    );
    let e = db.err("ALTER TABLE ks.t DROP c");
    assert_error(&e, ErrorKind::Invalid, "Cannot drop PRIMARY KEY part c");
    let e = db.err("ALTER TABLE ks.t DROP zz");
    assert_error(&e, ErrorKind::Invalid, "Column zz was not found in table t");
}

#[test]
fn alter_table_rename_and_alter_type() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int, c int, v int, PRIMARY KEY (pk, c))");
    let id = db.table("ks", "t").column("c").map(|c| c.id);
    db.ok("ALTER TABLE ks.t RENAME c TO c2 AND pk TO p");
    let t = db.table("ks", "t");
    assert_eq!(column_names(&t), ["p", "c2", "v"]);
    assert_eq!(t.column("c2").map(|c| c.id), id);
    assert_eq!(t.column("c2").map(|c| c.position), Some(0));
    for (cql, message) in [
        (
            "ALTER TABLE ks.t RENAME v TO w",
            "Cannot rename non PRIMARY KEY part v",
        ),
        (
            "ALTER TABLE ks.t RENAME x TO w",
            "Cannot rename unknown column x in table t",
        ),
        (
            "ALTER TABLE ks.t RENAME c2 TO v",
            "Cannot rename column c2 to v in table t; another column of that name already exist",
        ),
        (
            "ALTER TABLE ks.t ALTER v TYPE bigint",
            "Altering of types is not allowed",
        ),
        (
            "ALTER TABLE ks.t ALTER x TYPE bigint",
            "Column x was not found in table t",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, message);
    }
}

#[test]
fn drop_table_and_truncate() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY)");
    let id = db.table("ks", "t").id;
    let o = db.ok("TRUNCATE ks.t");
    assert!(o.schema.is_none() && o.change.is_none());
    assert!(matches!(o.storage.as_slice(), [StorageChange::Truncate(x)] if *x == id));
    let o = db.ok("TRUNCATE TABLE ks.t");
    assert_eq!(o.storage.len(), 1);
    let e = db.err("TRUNCATE ks.nope");
    assert_error(&e, ErrorKind::Invalid, "unconfigured table nope");
    let e = db.err("TRUNCATE system.local");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot truncate virtual table system.local",
    );
    let o = db.ok("DROP TABLE ks.t");
    assert_eq!(
        table_change(&o),
        (SchemaChangeType::Dropped, "ks".into(), "t".into())
    );
    assert!(matches!(o.storage.as_slice(), [StorageChange::DropTable(x)] if *x == id));
    assert!(db.schema.table("ks", "t").is_none());
    // ScyllaDB turns the configuration_exception into an InvalidRequest
    // (drop_table_statement.cc), also for a table of a missing keyspace.
    let e = db.err("DROP TABLE ks.t");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop non existing table 't' in keyspace 'ks'.",
    );
    let e = db.err("DROP TABLE nosuchks.t");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop non existing table 't' in keyspace 'nosuchks'.",
    );
    // DROP KEYSPACE passes the configuration_exception on.
    let e = db.err("DROP KEYSPACE nosuchks");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Cannot drop non existing keyspace 'nosuchks'.",
    );
    let o = db.ok("DROP TABLE IF EXISTS ks.t");
    assert!(o.schema.is_none() && o.change.is_none() && o.storage.is_empty());
}

#[test]
fn non_ddl_statement_is_refused() {
    let db = Db::new();
    let stmt = parse_statement("SELECT * FROM system.local").expect("parses");
    let ctx = DdlContext {
        keyspace: None,
        now_micros: 0,
        default_cdc_ttl: 86400,
    };
    let e = execute_ddl(&db.schema, &stmt, &ctx).expect_err("not DDL");
    assert_eq!(e.kind, ErrorKind::ServerError);
}

// ---------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------

fn resolve(db: &Db, ks: &str, ty: &str) -> Result<CqlType, CqlError> {
    let t = crate::cql::parse_type(ty).unwrap_or_else(|e| panic!("{ty}: {e}"));
    resolve_type(&db.schema, ks, &t)
}

#[test]
fn freezing_rules() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.keyspace("other");
    db.ok("CREATE TYPE ks.ut (a int)");
    for (ty, shown) in [
        ("int", "int"),
        ("varchar", "text"),
        ("list<int>", "list<int>"),
        ("list<frozen<list<int>>>", "list<frozen<list<int>>>"),
        ("frozen<list<list<int>>>", "frozen<list<frozen<list<int>>>>"),
        ("map<int, frozen<ut>>", "map<int, frozen<ut>>"),
        ("set<frozen<map<int, text>>>", "set<frozen<map<int, text>>>"),
        // Tuples are never multi-cell: shown frozen, as Scylla's cql3_type_name does.
        (
            "tuple<int, list<int>>",
            "frozen<tuple<int, frozen<list<int>>>>",
        ),
        ("list<tuple<int, text>>", "list<frozen<tuple<int, text>>>"),
        ("ut", "ut"),
        ("frozen<ut>", "frozen<ut>"),
        ("ks.ut", "ut"),
        ("frozen<frozen<ut>>", "frozen<ut>"),
        ("map<duration, int>", "map<duration, int>"),
    ] {
        match resolve(&db, "ks", ty) {
            Ok(t) if ty == "map<duration, int>" => panic!("{ty} accepted as {t}"),
            Ok(t) => assert_eq!(t.to_string(), shown, "{ty}"),
            Err(e) if ty == "map<duration, int>" => {
                assert_eq!(
                    e.message,
                    "Durations are not allowed as map keys: map<duration, int>"
                )
            }
            Err(e) => panic!("{ty}: {e:?}"),
        }
    }
    assert!(
        matches!(
            resolve(&db, "ks", "ut"),
            Ok(CqlType::Udt { frozen: false, .. })
        ),
        "a top-level UDT is non-frozen"
    );
    for (ty, message) in [
        (
            "list<list<int>>",
            "Non-frozen user types or collections are not allowed inside collections: \
             list<list<int>>",
        ),
        (
            "map<int, ut>",
            "Non-frozen user types or collections are not allowed inside collections: \
             map<int, ut>",
        ),
        (
            "set<set<int>>",
            "Non-frozen user types or collections are not allowed inside collections: \
             set<set<int>>",
        ),
        (
            "frozen<int>",
            "frozen<> is only allowed on collections, tuples, and user-defined types (got int)",
        ),
        (
            "list<counter>",
            "Counters are not allowed inside collections: list<counter>",
        ),
        (
            "tuple<int, counter>",
            "Counters are not allowed inside tuples",
        ),
        (
            "set<duration>",
            "Durations are not allowed inside sets: set<duration>",
        ),
        ("nope", "Unknown type ks.nope"),
        (
            "other.ut",
            "Statement on keyspace ks cannot refer to a user type in keyspace other; user types \
             can only be used in the keyspace they are defined in",
        ),
    ] {
        let e = resolve(&db, "ks", ty).expect_err(ty);
        assert_error(&e, ErrorKind::Invalid, message);
    }
    assert_eq!(
        resolve(&db, "ks", "vector<float, 3>").map_err(|e| e.kind),
        Err(ErrorKind::Invalid)
    );
    // UDTs of another keyspace are not visible.
    let e = resolve(&db, "other", "ut").expect_err("not in other");
    assert_eq!(e.message, "Unknown type other.ut");
}

#[test]
fn create_type_rules() {
    let mut db = Db::new();
    db.keyspace("ks");
    let o = db.ok("CREATE TYPE ks.ut (a int, l list<int>, f frozen<map<int, text>>)");
    let c = o.change.expect("change");
    assert_eq!(c.change, SchemaChangeType::Created);
    assert_eq!(
        c.target,
        SchemaChangeTarget::Type {
            keyspace: "ks".into(),
            name: "ut".into()
        }
    );
    let ut = db
        .schema
        .keyspace("ks")
        .and_then(|k| k.types.get("ut"))
        .cloned()
        .expect("ut");
    let shown: Vec<String> = ut.fields.iter().map(|(n, t)| format!("{n} {t}")).collect();
    assert_eq!(shown, ["a int", "l list<int>", "f frozen<map<int, text>>"]);
    for (cql, message) in [
        (
            "CREATE TYPE ks.ut (a int)",
            "A user type of name ks.ut already exists",
        ),
        (
            "CREATE TYPE ks.c (a counter)",
            "A user type cannot contain counters",
        ),
        (
            "CREATE TYPE ks.n (a ut)",
            "A user type cannot contain non-frozen user type fields",
        ),
        (
            "CREATE TYPE ks.d (a int, a text)",
            "Duplicate field name 61 in type d",
        ),
        ("CREATE TYPE ks.s (a frozen<s>)", "Unknown type ks.s"),
        ("CREATE TYPE nope.t (a int)", "Keyspace nope does not exist"),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, message);
    }
    let o = db.ok("CREATE TYPE IF NOT EXISTS ks.ut (b int)");
    assert!(o.schema.is_none());
    assert_eq!(o.change.map(|c| c.change), Some(SchemaChangeType::Created));
    // A UDT with a non-frozen collection cannot be a non-frozen column.
    let e = db.err("CREATE TABLE ks.t (pk int PRIMARY KEY, u ut)");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Non-frozen UDTs with nested non-frozen collections are not supported",
    );
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, u frozen<ut>)");
}

#[test]
fn alter_type_rebuilds_types_and_tables_that_use_it() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.inner (a int)");
    db.ok("CREATE TYPE ks.outer (i frozen<inner>)");
    db.ok(
        "CREATE TABLE ks.t (pk int PRIMARY KEY, x inner, y frozen<outer>, z list<frozen<inner>>) \
         WITH cdc = {'enabled': true}",
    );
    let o = db.ok("ALTER TYPE ks.inner ADD b text");
    let c = o.change.expect("change");
    assert_eq!(c.change, SchemaChangeType::Updated);
    let fields = |t: &CqlType| -> Vec<String> {
        match t {
            CqlType::Udt { def, .. } => def.fields.iter().map(|(n, _)| n.clone()).collect(),
            _ => Vec::new(),
        }
    };
    let ks = db.schema.keyspace("ks").expect("ks").clone();
    let inner = ks.types.get("inner").expect("inner");
    assert_eq!(inner.fields.len(), 2);
    let outer = ks.types.get("outer").expect("outer");
    assert_eq!(
        outer.fields.first().map(|(_, t)| fields(t)),
        Some(vec!["a".to_string(), "b".to_string()])
    );
    let t = db.table("ks", "t");
    assert_eq!(
        t.column("x").map(|c| fields(&c.typ)),
        Some(vec!["a".into(), "b".into()])
    );
    match t.column("y").map(|c| &c.typ) {
        Some(CqlType::Udt { def, .. }) => {
            assert_eq!(def.fields.first().map(|(_, t)| fields(t).len()), Some(2))
        }
        other => panic!("{other:?}"),
    }
    match t.column("z").map(|c| &c.typ) {
        Some(CqlType::List { elem, .. }) => assert_eq!(fields(elem).len(), 2),
        other => panic!("{other:?}"),
    }
    // The log sees the new definition too, with the same columns (no drop/add).
    let log = db.table("ks", "t_scylla_cdc_log");
    assert_eq!(
        log.column("x").map(|c| fields(&c.typ)),
        Some(vec!["a".into(), "b".into()])
    );
    assert!(log.dropped_columns.is_empty());
    db.ok("ALTER TYPE ks.inner RENAME a TO a2 AND b TO b2");
    assert_eq!(
        db.table("ks", "t").column("x").map(|c| fields(&c.typ)),
        Some(vec!["a2".into(), "b2".into()])
    );
    for (cql, message) in [
        (
            "ALTER TYPE ks.inner ADD a2 int",
            "Cannot add new field a2 to type ks.inner: a field of the same name already exists",
        ),
        (
            "ALTER TYPE ks.inner RENAME q TO r",
            "Unknown field q in type ks.inner",
        ),
        (
            "ALTER TYPE ks.inner RENAME a2 TO b2",
            "Duplicate field name 6232 in type inner",
        ),
        (
            "ALTER TYPE ks.inner ALTER a2 TYPE bigint",
            "Type bigint in incompatible with previous type int of field a2 in user type ks.inner",
        ),
        (
            "ALTER TYPE ks.nope ADD x int",
            "No user type named ks.nope exists.",
        ),
        (
            "ALTER TYPE nope.inner ADD x int",
            "Cannot alter type in unknown keyspace nope",
        ),
        (
            "ALTER TYPE ks.inner ADD o frozen<outer>",
            "Cannot add new field o of type frozen<outer> to type ks.inner as this would create \
             a circular reference",
        ),
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, message);
    }
    db.ok("ALTER TYPE ks.inner ALTER a2 TYPE int");
    db.ok("CREATE TYPE ks.key (a int)");
    db.ok("CREATE TABLE ks.k (pk frozen<key> PRIMARY KEY)");
    let e = db.err("ALTER TYPE ks.key ADD b int");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot add new field to type ks.key because it is used in the partition key column pk \
         of table ks.k",
    );
}

#[test]
fn drop_type_is_refused_while_used() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.a (x int)");
    db.ok("CREATE TYPE ks.b (y frozen<a>)");
    let e = db.err("DROP TYPE ks.a");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop user type ks.a as it is still used by user type b",
    );
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v tuple<int, frozen<b>>)");
    let e = db.err("DROP TYPE ks.b");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop user type ks.b as it is still used by table ks.t",
    );
    db.ok("DROP TABLE ks.t");
    let o = db.ok("DROP TYPE ks.b");
    assert_eq!(o.change.map(|c| c.change), Some(SchemaChangeType::Dropped));
    db.ok("DROP TYPE ks.a");
    let e = db.err("DROP TYPE ks.a");
    assert_error(&e, ErrorKind::Invalid, "No user type named ks.a exists.");
    let o = db.ok("DROP TYPE IF EXISTS ks.a");
    assert!(o.schema.is_none() && o.change.is_none());
    let e = db.err("DROP TYPE nope.a");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot drop type in unknown keyspace nope",
    );
}

// ---------------------------------------------------------------------------------------
// CDC log life cycle
// ---------------------------------------------------------------------------------------

#[test]
fn create_with_cdc_creates_the_log_in_the_same_change() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.ut (a int, b int, c int)");
    let o = db.ok(
        "CREATE TABLE ks.t (pk int, ck int, s int static, v int, m map<int,text>, l list<text>, \
         st set<int>, u frozen<ut>, nu ut, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
    );
    assert_eq!(
        table_change(&o),
        (SchemaChangeType::Created, "ks".into(), "t".into())
    );
    let base = db.table("ks", "t");
    let log = db.table("ks", "t_scylla_cdc_log");
    let created: Vec<Uuid> = o
        .storage
        .iter()
        .map(|s| match s {
            StorageChange::CreateTable(t) => t.id,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(created, [base.id, log.id]);
    assert_eq!(log.kind, TableKind::CdcLog { base: "t".into() });
    assert!(db.schema.cdc_log_attached(&log));
    assert_eq!(db.schema.cdc_base_of(&log).map(|b| b.id), Some(base.id));
    // The worked example of semantics §1.2, in SELECT * order.
    let shown: Vec<String> = log
        .columns
        .iter()
        .map(|c| format!("{} {}", crate::types::quote_identifier(&c.name), c.typ))
        .collect();
    assert_eq!(
        shown.join(", "),
        "\"cdc$stream_id\" blob, \"cdc$time\" timeuuid, \"cdc$batch_seq_no\" int, \
         \"cdc$deleted_elements_l\" frozen<set<timeuuid>>, \"cdc$deleted_elements_m\" \
         frozen<set<int>>, \"cdc$deleted_elements_nu\" frozen<set<smallint>>, \
         \"cdc$deleted_elements_st\" frozen<set<int>>, \"cdc$deleted_l\" boolean, \
         \"cdc$deleted_m\" boolean, \"cdc$deleted_nu\" boolean, \"cdc$deleted_s\" boolean, \
         \"cdc$deleted_st\" boolean, \"cdc$deleted_u\" boolean, \"cdc$deleted_v\" boolean, \
         \"cdc$end_of_batch\" boolean, \"cdc$operation\" tinyint, \"cdc$ttl\" bigint, ck int, \
         l frozen<map<timeuuid, text>>, m frozen<map<int, text>>, nu frozen<ut>, pk int, s int, \
         st frozen<set<int>>, u frozen<ut>, v int"
    );
    assert_eq!(log.options.comment, "CDC log for ks.t");
    assert_eq!(log.options.gc_grace_seconds, 0);
    assert!(log.options.cdc.is_none());
    assert_eq!(
        log.partitioner(),
        Some(crate::schema::table::CDC_PARTITIONER)
    );
    let cdc = base.options.cdc.as_ref().expect("cdc");
    assert!(cdc.enabled);
    assert_eq!(cdc.ttl, 86400);
}

#[test]
fn cdc_default_ttl_comes_from_the_context() {
    let mut db = Db::new();
    db.default_cdc_ttl = 600;
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}");
    assert_eq!(
        db.table("ks", "t").options.cdc.as_ref().map(|c| c.ttl),
        Some(600)
    );
    let log = db.table("ks", "t_scylla_cdc_log");
    assert_eq!(
        log.options
            .compaction
            .get("compaction_window_size")
            .map(String::as_str),
        Some("1")
    );
    db.ok("CREATE TABLE ks.u (pk int PRIMARY KEY) WITH cdc = {'enabled': true, 'ttl': 0}");
    assert_eq!(
        db.table("ks", "u").options.cdc.as_ref().map(|c| c.ttl),
        Some(0)
    );
    assert_eq!(
        db.table("ks", "u_scylla_cdc_log").options.gc_grace_seconds,
        864000
    );
}

#[test]
fn alter_add_and_drop_propagate_to_the_log() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    let log_id = db.table("ks", "t_scylla_cdc_log").id;
    db.ok("ALTER TABLE ks.t ADD m map<int, text>");
    let log = db.table("ks", "t_scylla_cdc_log");
    assert_eq!(log.id, log_id);
    assert_eq!(
        log.column("m").map(|c| c.typ.to_string()).as_deref(),
        Some("frozen<map<int, text>>")
    );
    assert!(log.column("cdc$deleted_m").is_some());
    assert!(log.column("cdc$deleted_elements_m").is_some());

    let ids: Vec<ColumnId> = ["m", "cdc$deleted_m", "cdc$deleted_elements_m"]
        .iter()
        .filter_map(|n| log.column(n).map(|c| ColumnId(c.id)))
        .collect();
    let base_m = db.table("ks", "t").column("m").map(|c| ColumnId(c.id));
    let o = db.ok("ALTER TABLE ks.t DROP m");
    let base_id = db.table("ks", "t").id;
    let mut by_table = std::collections::BTreeMap::new();
    for s in &o.storage {
        match s {
            StorageChange::DropColumns { table, columns } => {
                by_table.insert(*table, columns.clone());
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(by_table.get(&base_id).cloned(), base_m.map(|m| vec![m]));
    let mut got = by_table.get(&log_id).cloned().unwrap_or_default();
    got.sort();
    let mut expected = ids;
    expected.sort();
    assert_eq!(got, expected);
    let log = db.table("ks", "t_scylla_cdc_log");
    assert!(log.column("m").is_none());
    assert_eq!(
        log.dropped_columns.get("m").map(|d| d.dropped_at),
        Some(db.now + DROP_DELAY_MICROS)
    );
    assert_eq!(
        db.table("ks", "t")
            .dropped_columns
            .get("m")
            .map(|d| d.dropped_at),
        Some(db.now)
    );
    // Re-adding within the 5 s window fails; the base is left unchanged.
    db.now += 2_500_000;
    let e = db.err("ALTER TABLE ks.t ADD m int");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot add column m because a column with the same name was dropped too recently. \
         Please retry after 3 seconds",
    );
    db.now += 2_500_000;
    db.ok("ALTER TABLE ks.t ADD m int");
    assert_eq!(
        db.table("ks", "t_scylla_cdc_log")
            .column("m")
            .map(|c| c.typ.clone()),
        Some(CqlType::Int)
    );
}

#[test]
fn renaming_a_key_column_renames_it_in_the_log() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok(
        "CREATE TABLE ks.t (p int, v int, u int, PRIMARY KEY (p, v)) WITH cdc = {'enabled': true}",
    );
    db.ok("ALTER TABLE ks.t RENAME v TO v2");
    let log = db.table("ks", "t_scylla_cdc_log");
    assert!(log.column("v").is_none());
    assert_eq!(log.column("v2").map(|c| c.kind), Some(ColumnKind::Regular));
    assert!(log.dropped_columns.contains_key("v"));
}

#[test]
fn disabling_detaches_and_enabling_reattaches_the_same_log() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok(
        "CREATE TABLE ks.t (p int, v int, u int, a int, PRIMARY KEY (p, v)) WITH cdc = \
         {'enabled': true, 'preimage': true, 'postimage': true, 'ttl': 1}",
    );
    let log = db.table("ks", "t_scylla_cdc_log");
    let window = log.options.compaction.clone();
    let o = db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': false}");
    assert_eq!(o.storage.len(), 0, "the log is kept");
    // ALTER replaces the whole option set: the other options are back to their defaults.
    let cdc = db
        .table("ks", "t")
        .options
        .cdc
        .clone()
        .expect("extension stays");
    assert_eq!(cdc, crate::schema::CdcOptions::default());
    let detached = db.table("ks", "t_scylla_cdc_log");
    assert_eq!(detached.id, log.id);
    assert!(!db.schema.cdc_log_attached(&detached));
    assert_eq!(
        detached.partitioner(),
        Some(crate::schema::table::CDC_PARTITIONER)
    );

    // Base changes while detached do not reach the log.
    db.ok("ALTER TABLE ks.t DROP a");
    db.ok("ALTER TABLE ks.t ADD b double");
    db.ok("ALTER TABLE ks.t RENAME v TO v2");
    assert_eq!(*db.table("ks", "t_scylla_cdc_log"), *detached);

    // Re-enabling re-attaches the same table and reconciles its columns.
    let o = db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': true}");
    let log2 = db.table("ks", "t_scylla_cdc_log");
    assert_eq!(log2.id, log.id);
    assert!(db.schema.cdc_log_attached(&log2));
    assert_eq!(
        column_names(&log2),
        [
            "cdc$stream_id",
            "cdc$time",
            "cdc$batch_seq_no",
            "b",
            "cdc$deleted_b",
            "cdc$deleted_u",
            "cdc$end_of_batch",
            "cdc$operation",
            "cdc$ttl",
            "p",
            "u",
            "v2",
        ]
    );
    let dropped: Vec<&str> = log2.dropped_columns.keys().map(String::as_str).collect();
    assert_eq!(dropped, ["a", "cdc$deleted_a", "v"]);
    match o.storage.as_slice() {
        [StorageChange::DropColumns { table, columns }] => {
            assert_eq!(*table, log.id);
            assert_eq!(columns.len(), 3);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Properties are preserved: the window is not recomputed from the new ttl.
    assert_eq!(log2.options.compaction, window);
    assert_eq!(log2.options.comment, log.options.comment);
}

#[test]
fn a_reattached_log_equals_a_never_detached_one() {
    let mut db = Db::new();
    db.keyspace("ks");
    for t in ["t1", "t2"] {
        db.ok(&format!(
            "CREATE TABLE ks.{t} (p int, v int, u int, a int, PRIMARY KEY (p, v)) WITH cdc = \
             {{'enabled': true}}"
        ));
    }
    db.ok("ALTER TABLE ks.t2 WITH cdc = {'enabled': false}");
    for t in ["t1", "t2"] {
        db.ok(&format!("ALTER TABLE ks.{t} DROP a"));
        db.ok(&format!("ALTER TABLE ks.{t} ADD b double"));
        db.ok(&format!("ALTER TABLE ks.{t} RENAME v TO v2"));
    }
    db.ok("ALTER TABLE ks.t2 WITH cdc = {'enabled': true}");
    let shape = |t: &TableDef| -> Vec<(String, String, ColumnKind)> {
        t.columns
            .iter()
            .map(|c| (c.name.clone(), c.typ.to_string(), c.kind))
            .collect()
    };
    assert_eq!(
        shape(&db.table("ks", "t1_scylla_cdc_log")),
        shape(&db.table("ks", "t2_scylla_cdc_log"))
    );
}

#[test]
fn dropping_the_base_drops_the_log_attached_or_detached() {
    let mut db = Db::new();
    db.keyspace("ks");
    for (t, disable) in [("a", false), ("b", true)] {
        db.ok(&format!(
            "CREATE TABLE ks.{t} (pk int PRIMARY KEY) WITH cdc = {{'enabled': true}}"
        ));
        if disable {
            db.ok(&format!(
                "ALTER TABLE ks.{t} WITH cdc = {{'enabled': false}}"
            ));
        }
        let ids = [
            db.table("ks", t).id,
            db.table("ks", &format!("{t}_scylla_cdc_log")).id,
        ];
        let o = db.ok(&format!("DROP TABLE ks.{t}"));
        let dropped: Vec<Uuid> = o
            .storage
            .iter()
            .filter_map(|s| match s {
                StorageChange::DropTable(id) => Some(*id),
                _ => None,
            })
            .collect();
        assert_eq!(dropped, ids);
        assert!(
            db.schema
                .table("ks", &format!("{t}_scylla_cdc_log"))
                .is_none()
        );
    }
}

#[test]
fn an_attached_log_cannot_be_dropped_a_detached_one_can() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}");
    let e = db.err("DROP TABLE ks.t_scylla_cdc_log");
    assert_error(
        &e,
        ErrorKind::Unauthorized,
        "Cannot DROP cdc log table t_scylla_cdc_log",
    );
    let e = db.err("DROP TABLE IF EXISTS ks.t_scylla_cdc_log");
    assert_eq!(e.kind, ErrorKind::Unauthorized);
    let old = db.table("ks", "t_scylla_cdc_log").id;
    db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': false}");
    let o = db.ok("DROP TABLE ks.t_scylla_cdc_log");
    assert!(matches!(o.storage.as_slice(), [StorageChange::DropTable(id)] if *id == old));
    assert!(db.schema.table("ks", "t").is_some(), "the base stays");
    // Enabling CDC again creates a new log.
    db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': true}");
    assert_ne!(db.table("ks", "t_scylla_cdc_log").id, old);
    // TRUNCATE of the base does not touch the log.
    let o = db.ok("TRUNCATE ks.t");
    let base = db.table("ks", "t").id;
    assert!(matches!(o.storage.as_slice(), [StorageChange::Truncate(id)] if *id == base));
}

#[test]
fn log_columns_cannot_be_changed_directly() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (p int PRIMARY KEY, v int, u int) WITH cdc = {'enabled': true}");
    let attached = "You cannot modify the set of columns of a CDC log table directly. Modify \
                    the base table instead.";
    for cql in [
        "ALTER TABLE ks.t_scylla_cdc_log ADD c int",
        "ALTER TABLE ks.t_scylla_cdc_log DROP u",
        "ALTER TABLE ks.t_scylla_cdc_log DROP \"cdc$stream_id\"",
        "ALTER TABLE ks.t_scylla_cdc_log ALTER u TYPE float",
    ] {
        let e = db.err(cql);
        assert_error(&e, ErrorKind::Invalid, attached);
    }
    let e = db.err("ALTER TABLE ks.t_scylla_cdc_log RENAME u TO c");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot rename a column of a CDC log table.",
    );
    // Properties may be changed.
    db.ok("ALTER TABLE ks.t_scylla_cdc_log WITH comment = 'mine'");
    assert_eq!(db.table("ks", "t_scylla_cdc_log").options.comment, "mine");
    // No CDC on a CDC log.
    let e = db.err("ALTER TABLE ks.t_scylla_cdc_log WITH cdc = {'enabled': true}");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot create a CDC log for a table ks.t_scylla_cdc_log, because creating nested CDC \
         logs is not allowed",
    );

    db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': false}");
    let e = db.err("ALTER TABLE ks.t_scylla_cdc_log ADD c int");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "You cannot modify the set of columns of a CDC log table directly. Although the base \
         table has deactivated CDC, this table will continue being a CDC log table until it is \
         dropped. If you want to modify the columns in it, you can only do that by reenabling \
         CDC on the base table, which will reattach this log table. Then you will be able to \
         modify the columns in the base table, and that will have effect on the log table too. \
         Modifying the columns of a CDC log table directly is never allowed.",
    );
    let e = db.err("ALTER TABLE ks.t_scylla_cdc_log RENAME u TO c");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "You cannot rename a column of a CDC log table. Although the base table has deactivated \
         CDC, this table will continue being a CDC log table until it is dropped.",
    );
}

#[test]
fn a_user_table_with_the_log_name_blocks_cdc() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.x_scylla_cdc_log (p int PRIMARY KEY, v int)");
    let message = "Cannot create CDC log table for table ks.x because a table of name \
                   ks.x_scylla_cdc_log already exists";
    let e = db.err("CREATE TABLE ks.x (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    assert_error(&e, ErrorKind::Invalid, message);
    db.ok("CREATE TABLE ks.x (pk int PRIMARY KEY, v int)");
    let e = db.err("ALTER TABLE ks.x WITH cdc = {'enabled': true}");
    assert_error(&e, ErrorKind::Invalid, message);
    // The look-alike is an ordinary table: its columns can change and it can be dropped.
    db.ok("ALTER TABLE ks.x_scylla_cdc_log DROP v");
    assert_eq!(db.table("ks", "x_scylla_cdc_log").partitioner(), None);
    db.ok("DROP TABLE ks.x_scylla_cdc_log");
    db.ok("ALTER TABLE ks.x WITH cdc = {'enabled': true}");
    assert!(db.table("ks", "x_scylla_cdc_log").is_cdc_log());
}

#[test]
fn counters_cannot_have_cdc() {
    let mut db = Db::new();
    db.keyspace("ks");
    let e =
        db.err("CREATE TABLE ks.c (pk int PRIMARY KEY, n counter) WITH cdc = {'enabled': true}");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot create CDC log for table ks.c. Counter support not implemented",
    );
    db.ok("CREATE TABLE ks.c (pk int PRIMARY KEY, n counter)");
    let e = db.err("ALTER TABLE ks.c WITH cdc = {'enabled': true}");
    assert_eq!(e.kind, ErrorKind::Invalid);
}

#[test]
fn cdc_extension_exists_only_once_the_option_was_given() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY)");
    assert!(db.table("ks", "t").options.cdc.is_none());
    db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': false}");
    assert!(db.schema.table("ks", "t_scylla_cdc_log").is_none());
    let cdc = db.table("ks", "t").options.cdc.clone().expect("extension");
    assert!(!cdc.enabled);
    let e = db.err("ALTER TABLE ks.t WITH cdc = {'enabled': true, 'delta': 'some'}");
    assert_error(
        &e,
        ErrorKind::ConfigError,
        "Invalid value for CDC option \"delta\": some",
    );
}

#[test]
fn cdc_works_on_tablets_keyspaces() {
    let mut db = Db::new();
    db.ok(
        "CREATE KEYSPACE tk WITH replication = {'class': 'NetworkTopologyStrategy', \
         'replication_factor': 1} AND tablets = {'enabled': true}",
    );
    db.ok("CREATE TABLE tk.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    assert!(db.table("tk", "t_scylla_cdc_log").is_cdc_log());
    let e = db.err("CREATE TABLE tk.c (pk int PRIMARY KEY, n counter)");
    assert_error(
        &e,
        ErrorKind::Invalid,
        "Cannot use the 'counter' type for table tk.c: Counters are not yet supported with \
         tablets",
    );
}

// ---------------------------------------------------------------------------------------
// Announced events
// ---------------------------------------------------------------------------------------

/// The announced events of an outcome, as `(change, "KEYSPACE ks" / "TABLE ks.t" /
/// "TYPE ks.t")`.
fn events(o: &DdlOutcome) -> Vec<(SchemaChangeType, String)> {
    o.events
        .iter()
        .map(|e| {
            let what = match &e.target {
                SchemaChangeTarget::Keyspace { keyspace } => format!("KEYSPACE {keyspace}"),
                SchemaChangeTarget::Table { keyspace, table } => {
                    format!("TABLE {keyspace}.{table}")
                }
                SchemaChangeTarget::Type { keyspace, name } => format!("TYPE {keyspace}.{name}"),
                other => format!("{other:?}"),
            };
            (e.change, what)
        })
        .collect()
}

/// `(change, what)` pairs.
fn expected(list: &[(SchemaChangeType, &str)]) -> Vec<(SchemaChangeType, String)> {
    list.iter().map(|(c, w)| (*c, (*w).to_string())).collect()
}

#[test]
fn cdc_log_tables_are_announced_with_their_base_as_scylla_does() {
    use SchemaChangeType::{Created, Dropped, Updated};
    let mut db = Db::new();
    db.keyspace("ks");
    let log = "TABLE ks.t_scylla_cdc_log";
    // CREATE with CDC: the base, then its log.
    let o = db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}");
    assert_eq!(
        events(&o),
        expected(&[(Created, "TABLE ks.t"), (Created, log)])
    );
    // Any ALTER of a base with CDC enabled rewrites the log: UPDATED base, UPDATED log.
    let o = db.ok("ALTER TABLE ks.t ADD w text");
    assert_eq!(
        events(&o),
        expected(&[(Updated, "TABLE ks.t"), (Updated, log)])
    );
    let o = db.ok("ALTER TABLE ks.t WITH comment = 'nothing for the log'");
    assert_eq!(
        events(&o),
        expected(&[(Updated, "TABLE ks.t"), (Updated, log)])
    );
    // Disabling CDC keeps the log and announces the base only.
    let o = db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': false}");
    assert_eq!(events(&o), expected(&[(Updated, "TABLE ks.t")]));
    let o = db.ok("ALTER TABLE ks.t WITH comment = 'detached'");
    assert_eq!(events(&o), expected(&[(Updated, "TABLE ks.t")]));
    // Enabling it again re-attaches (rewrites) the existing log.
    let o = db.ok("ALTER TABLE ks.t WITH cdc = {'enabled': true}");
    assert_eq!(
        events(&o),
        expected(&[(Updated, "TABLE ks.t"), (Updated, log)])
    );
    // DROP: the base, then its log.
    let o = db.ok("DROP TABLE ks.t");
    assert_eq!(
        events(&o),
        expected(&[(Dropped, "TABLE ks.t"), (Dropped, log)])
    );
    // Enabling CDC on a table without a log creates it: created tables are announced
    // before altered ones.
    db.ok("CREATE TABLE ks.u (pk int PRIMARY KEY, v int)");
    let o = db.ok("ALTER TABLE ks.u WITH cdc = {'enabled': true, 'preimage': true}");
    assert_eq!(
        events(&o),
        expected(&[
            (Created, "TABLE ks.u_scylla_cdc_log"),
            (Updated, "TABLE ks.u")
        ])
    );
    // A detached log dropped on its own is announced alone.
    db.ok("ALTER TABLE ks.u WITH cdc = {'enabled': false}");
    let o = db.ok("DROP TABLE ks.u_scylla_cdc_log");
    assert_eq!(
        events(&o),
        expected(&[(Dropped, "TABLE ks.u_scylla_cdc_log")])
    );
    let o = db.ok("DROP TABLE ks.u");
    assert_eq!(events(&o), expected(&[(Dropped, "TABLE ks.u")]));
}

#[test]
fn no_op_statements_answer_without_announcing() {
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TABLE ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}");
    db.ok("CREATE TYPE ks.ut (a int)");
    for cql in [
        "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', \
         'replication_factor': 1}",
        "CREATE TABLE IF NOT EXISTS ks.t (pk int PRIMARY KEY) WITH cdc = {'enabled': true}",
        "CREATE TYPE IF NOT EXISTS ks.ut (a int)",
    ] {
        let o = db.ok(cql);
        assert!(o.schema.is_none(), "{cql}");
        assert_eq!(
            o.change.map(|c| c.change),
            Some(SchemaChangeType::Created),
            "{cql}"
        );
        assert!(o.events.is_empty(), "{cql}: announced {:?}", o.events);
    }
    for cql in [
        "DROP TABLE IF EXISTS ks.nope",
        "DROP TYPE IF EXISTS ks.nope",
        "DROP KEYSPACE IF EXISTS nope",
        "TRUNCATE ks.t",
    ] {
        let o = db.ok(cql);
        assert!(o.change.is_none() && o.events.is_empty(), "{cql}");
    }
}

#[test]
fn dropping_a_keyspace_announces_its_types_and_tables() {
    use SchemaChangeType::Dropped;
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.ut (a int)");
    db.ok("CREATE TABLE ks.b (pk int PRIMARY KEY, u frozen<ut>) WITH cdc = {'enabled': true}");
    db.ok("CREATE TABLE ks.a (pk int PRIMARY KEY)");
    let o = db.ok("DROP KEYSPACE ks");
    assert_eq!(
        events(&o),
        expected(&[
            (Dropped, "KEYSPACE ks"),
            (Dropped, "TYPE ks.ut"),
            (Dropped, "TABLE ks.a"),
            (Dropped, "TABLE ks.b"),
            (Dropped, "TABLE ks.b_scylla_cdc_log"),
        ])
    );
}

#[test]
fn altering_a_type_announces_the_tables_that_use_it() {
    use SchemaChangeType::Updated;
    let mut db = Db::new();
    db.keyspace("ks");
    db.ok("CREATE TYPE ks.ut (a int)");
    db.ok("CREATE TYPE ks.other (x int)");
    db.ok(
        "CREATE TABLE ks.t (pk int PRIMARY KEY, l list<frozen<ut>>) \
         WITH cdc = {'enabled': true}",
    );
    db.ok("CREATE TABLE ks.unrelated (pk int PRIMARY KEY, o frozen<other>)");
    let o = db.ok("ALTER TYPE ks.ut ADD b text");
    assert_eq!(
        events(&o),
        expected(&[
            (Updated, "TYPE ks.ut"),
            (Updated, "TABLE ks.t"),
            (Updated, "TABLE ks.t_scylla_cdc_log"),
        ])
    );
    let o = db.ok("ALTER TYPE ks.other RENAME x TO y");
    assert_eq!(
        events(&o),
        expected(&[(Updated, "TYPE ks.other"), (Updated, "TABLE ks.unrelated")])
    );
}
