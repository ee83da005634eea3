//! CREATE / ALTER / DROP KEYSPACE and the keyspace options (`replication`,
//! `durable_writes`, `tablets`, `storage`).
//!
//! Keyspaces use vnodes unless `tablets = {'enabled': true}` or `{'initial': N}` is given.
//! A driver routes a tablet keyspace's statements at random until it learns each tablet's
//! replicas from the `tablets-routing-v1` payload the server attaches to results of requests
//! that missed them (`crate::cluster::tablets`, `exec::routing`).

use std::collections::BTreeMap;

use crate::cluster::DATACENTER;
use crate::cql::{AlterKeyspace, CreateKeyspace, DropKeyspace, OptionValue, Property};
use crate::frame::{CqlError, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::system::{LOCAL_STRATEGY, NETWORK_TOPOLOGY_STRATEGY, SIMPLE_STRATEGY};
use crate::schema::{KeyspaceDef, Replication, Schema};

use super::checks::{NAME_LENGTH, Permission, check_access, is_system_keyspace, is_word};
use super::outcome::{DdlContext, DdlOutcome, StorageChange, table_events};

/// Tablet count of a tablets keyspace that does not give `initial` (stored as 0, as
/// ScyllaDB stores it), a power of two.
pub(super) const DEFAULT_INITIAL_TABLETS: u32 = 8;

/// Prefix of the replication strategies' fully qualified class names.
const LOCATOR_PREFIX: &str = "org.apache.cassandra.locator.";

/// The keyspace options of a CREATE or ALTER statement.
#[derive(Debug, Default)]
struct KeyspaceProps {
    /// `replication`, as text pairs.
    replication: Option<Vec<(String, String)>>,
    /// `durable_writes`
    durable_writes: Option<bool>,
    /// `tablets`: `Some(None)` = disabled, `Some(Some(n))` = enabled with `n` tablets.
    tablets: Option<Option<u32>>,
}

/// A map-valued option, or Scylla's syntax error.
fn map_value(p: &Property) -> Result<Vec<(String, String)>, CqlError> {
    p.value.as_text_map().ok_or_else(|| {
        CqlError::syntax(format!(
            "Invalid value for property '{}'. It should be a map.",
            p.name
        ))
    })
}

/// Parses the keyspace properties (names first, as Scylla validates them).
fn parse_props(properties: &[Property]) -> Result<KeyspaceProps, CqlError> {
    for p in properties {
        if !matches!(
            p.name.as_str(),
            "replication" | "durable_writes" | "tablets" | "storage"
        ) {
            return Err(CqlError::syntax(format!("Unknown property '{}'", p.name)));
        }
    }
    let mut props = KeyspaceProps::default();
    for p in properties {
        match p.name.as_str() {
            "replication" => props.replication = Some(map_value(p)?),
            "durable_writes" => {
                let text = match &p.value {
                    OptionValue::Constant(l) => l.to_option_text(),
                    OptionValue::Map(_) => {
                        return Err(CqlError::syntax(format!(
                            "Invalid value for property '{}'. It should be a string",
                            p.name
                        )));
                    }
                };
                // Scylla's boolean properties: `true`, `1` and `yes` are true, anything else
                // false.
                let t = text.to_ascii_lowercase();
                props.durable_writes = Some(t == "true" || t == "1" || t == "yes");
            }
            "tablets" => props.tablets = Some(parse_tablets(&map_value(p)?)?),
            "storage" => {
                for (k, v) in map_value(p)? {
                    if k == "type" && !v.eq_ignore_ascii_case("local") {
                        return Err(CqlError::invalid(format!(
                            "Unsupported storage type {v}: the embedded cluster only has \
                             LOCAL storage"
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(props)
}

/// Parses `tablets = {'enabled': ..., 'initial': N}`.
fn parse_tablets(entries: &[(String, String)]) -> Result<Option<u32>, CqlError> {
    let mut enabled = None;
    let mut initial = None;
    for (k, v) in entries {
        match k.as_str() {
            "enabled" => match v.as_str() {
                "true" => enabled = Some(true),
                "false" => enabled = Some(false),
                _ => {
                    return Err(CqlError::config(format!(
                        "Tablets enabled value must be true or false; found: {v}"
                    )));
                }
            },
            "initial" => {
                let n: u32 = v.parse().map_err(|_| {
                    CqlError::config(format!(
                        "Initial tablets value should be numeric; found {v}"
                    ))
                })?;
                initial = Some(n);
            }
            other => {
                return Err(CqlError::config(format!(
                    "Unrecognized tablets option {other}"
                )));
            }
        }
    }
    if enabled == Some(false) {
        return Ok(None);
    }
    // `ks_prop_defs::get_initial_tablets`: any tablets map that does not disable them
    // enables them, with the `initial` given or 0 (the tablet allocator then chooses; the
    // embedded cluster uses `tablet_count`).
    Ok(Some(initial.unwrap_or(0)))
}

/// The number of tablets of a table in a keyspace whose stored `initial_tablets` is
/// `initial` (0: the allocator's choice, [`DEFAULT_INITIAL_TABLETS`] here).
pub(crate) fn tablet_count(initial: u32) -> u32 {
    if initial == 0 {
        DEFAULT_INITIAL_TABLETS
    } else {
        initial
    }
}

/// Parses a replication factor as Scylla does (digits only).
fn parse_rf(value: &str) -> Result<usize, CqlError> {
    if value.is_empty() || !value.chars().all(|c| c.is_ascii_digit()) {
        return Err(CqlError::config(format!(
            "Replication factor must be numeric and non-negative, found '{value}'"
        )));
    }
    value
        .parse()
        .map_err(|_| CqlError::config(format!("Replication factor must be numeric; found {value}")))
}

/// Builds the stored replication map of keyspace `ks` from the written options: the class
/// fully qualified, SimpleStrategy's `replication_factor` checked, NetworkTopologyStrategy's
/// `replication_factor` expanded into the cluster's only data center.
fn parse_replication(ks: &str, entries: &[(String, String)]) -> Result<Replication, CqlError> {
    let Some(class) = entries.iter().find(|(k, _)| k == "class").map(|(_, v)| v) else {
        return Err(CqlError::config(
            "Missing mandatory replication strategy class",
        ));
    };
    let qualified = if class.contains('.') {
        class.clone()
    } else {
        format!("{LOCATOR_PREFIX}{class}")
    };
    let others = entries.iter().filter(|(k, _)| k != "class");
    let unrecognized = |key: &str| {
        CqlError::config(format!(
            "Unrecognized strategy option {{{key}}} passed to {qualified} for keyspace {ks}"
        ))
    };
    let mut options = BTreeMap::new();
    options.insert("class".to_string(), qualified.clone());
    if qualified == SIMPLE_STRATEGY {
        let mut rf = None;
        for (k, v) in others {
            if k != "replication_factor" {
                return Err(unrecognized(k));
            }
            parse_rf(v)?;
            rf = Some(v.clone());
        }
        let rf = rf.ok_or_else(|| {
            CqlError::config("SimpleStrategy requires a replication_factor strategy option.")
        })?;
        options.insert("replication_factor".to_string(), rf);
    } else if qualified == NETWORK_TOPOLOGY_STRATEGY {
        let mut expand = None;
        for (k, v) in others {
            parse_rf(v)?;
            if k == "replication_factor" {
                expand = Some(v.clone());
            } else if k == DATACENTER {
                options.insert(k.clone(), v.clone());
            } else {
                return Err(unrecognized(k));
            }
        }
        if let Some(rf) = expand {
            options.entry(DATACENTER.to_string()).or_insert(rf);
        }
    } else if qualified == LOCAL_STRATEGY {
        return Err(CqlError::config(
            "Unable to use given strategy class: LocalStrategy is reserved for internal use.",
        ));
    } else {
        return Err(CqlError::config(format!(
            "Unable to find replication strategy class '{qualified}'"
        )));
    }
    Ok(Replication { options })
}

/// Checks that a tablets setting fits the replication strategy.
fn check_tablets(replication: &Replication, tablets: Option<u32>) -> Result<(), CqlError> {
    if tablets.is_some() && replication.class() != NETWORK_TOPOLOGY_STRATEGY {
        return Err(CqlError::config(
            "Tablets can only be used with NetworkTopologyStrategy",
        ));
    }
    Ok(())
}

/// The `KEYSPACE` target of a schema change.
fn target(name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Keyspace {
        keyspace: name.to_string(),
    }
}

/// `CREATE KEYSPACE [IF NOT EXISTS] ks WITH ...`
pub(super) fn create(
    schema: &Schema,
    stmt: &CreateKeyspace,
    _ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let name = &stmt.name;
    if is_system_keyspace(name) {
        return Err(CqlError::invalid("system keyspace is not user-modifiable"));
    }
    if !is_word(name) {
        return Err(CqlError::invalid(format!(
            "\"{name}\" is not a valid keyspace name"
        )));
    }
    if name.chars().count() > NAME_LENGTH {
        return Err(CqlError::invalid(format!(
            "Keyspace names shouldn't be more than {NAME_LENGTH} characters long (got \"{name}\")"
        )));
    }
    let props = parse_props(&stmt.properties)?;
    let replication = parse_replication(name, props.replication.as_deref().unwrap_or(&[]))?;
    let tablets = props.tablets.flatten();
    check_tablets(&replication, tablets)?;
    if schema.keyspace(name).is_some() {
        if stmt.if_not_exists {
            return Ok(DdlOutcome::unchanged(Some((
                SchemaChangeType::Created,
                target(name),
            ))));
        }
        return Err(CqlError::already_exists(
            name.clone(),
            "",
            format!("Cannot add existing keyspace \"{name}\""),
        ));
    }
    let mut next = schema.clone();
    next.keyspaces.insert(
        name.clone(),
        KeyspaceDef {
            name: name.clone(),
            replication,
            durable_writes: props.durable_writes.unwrap_or(true),
            initial_tablets: tablets,
            tables: BTreeMap::new(),
            types: BTreeMap::new(),
            system: false,
        },
    );
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Created,
        target(name),
        Vec::new(),
    ))
}

/// `ALTER KEYSPACE ks WITH ...`
pub(super) fn alter(
    schema: &Schema,
    stmt: &AlterKeyspace,
    _ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let name = &stmt.name;
    check_access(name, None, Permission::Alter)?;
    let props = parse_props(&stmt.properties)?;
    let Some(current) = schema.keyspace(name) else {
        return Err(CqlError::invalid(format!("Unknown keyspace {name}")));
    };
    let mut updated = current.clone();
    if let Some(entries) = &props.replication {
        if !entries.iter().any(|(k, _)| k == "class") {
            if !entries.is_empty() {
                return Err(CqlError::config("Missing replication strategy class"));
            }
        } else {
            updated.replication = parse_replication(name, entries)?;
        }
    }
    if let Some(tablets) = props.tablets
        && tablets.is_some() != current.uses_tablets()
    {
        return Err(CqlError::invalid(
            "Cannot alter replication strategy vnode/tablets flavor",
        ));
    }
    check_tablets(&updated.replication, updated.initial_tablets)?;
    if let Some(d) = props.durable_writes {
        updated.durable_writes = d;
    }
    let mut next = schema.clone();
    next.keyspaces.insert(name.clone(), updated);
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Updated,
        target(name),
        Vec::new(),
    ))
}

/// `DROP KEYSPACE [IF EXISTS] ks`: drops every table (CDC logs included) and type.
pub(super) fn drop(schema: &Schema, stmt: &DropKeyspace) -> Result<DdlOutcome, CqlError> {
    let name = &stmt.name;
    check_access(name, None, Permission::Drop)?;
    let Some(ks) = schema.keyspace(name) else {
        if stmt.if_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        return Err(CqlError::config(format!(
            "Cannot drop non existing keyspace '{name}'."
        )));
    };
    let storage = ks
        .tables
        .values()
        .map(|t| StorageChange::DropTable(t.id))
        .collect();
    // Scylla's schema merge notifies the keyspace, then its types, then the views of its
    // indexes, then its tables (CDC logs last): `schema_applier::post_commit` and `notify_tables_and_views`,
    // db/schema_applier.cc.
    let mut events = vec![SchemaChange {
        change: SchemaChangeType::Dropped,
        target: target(name),
    }];
    events.extend(ks.types.values().map(|t| SchemaChange {
        change: SchemaChangeType::Dropped,
        target: SchemaChangeTarget::Type {
            keyspace: name.clone(),
            name: t.name.clone(),
        },
    }));
    // The views of secondary indexes are dropped (and notified) before the tables.
    let mut views: Vec<String> = ks
        .tables
        .values()
        .flat_map(|t| t.indexes.iter().map(|i| i.view_name()))
        .collect();
    views.sort();
    events.extend(views.into_iter().map(|view| SchemaChange {
        change: SchemaChangeType::Dropped,
        target: SchemaChangeTarget::Table {
            keyspace: name.clone(),
            table: view,
        },
    }));
    events.extend(table_events(
        SchemaChangeType::Dropped,
        ks.tables.values().map(|t| &**t),
    ));
    let mut next = schema.clone();
    next.keyspaces.remove(name);
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Dropped,
        target(name),
        storage,
        events,
    ))
}
