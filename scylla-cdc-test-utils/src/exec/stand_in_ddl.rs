//! TEMPORARY stand-in for the DDL engineer's `exec/ddl.rs` (same interface), so that the
//! executor can be tested before both are merged: keyspaces, tables and types only, with
//! none of the real module's validation. Remove when `exec/ddl.rs` is merged.

use std::sync::Arc;

use uuid::Uuid;

use crate::cql::{Statement, TypeExpr};
use crate::frame::{self, CqlError, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::{
    ClusteringOrder, ColumnDef, ColumnKind, KeyspaceDef, Replication, Schema, TableDef, TableKind,
    TableOptions,
};
use crate::storage;
use crate::types::{CqlType, UserType};

/// What DDL runs with.
pub(crate) struct DdlContext<'a> {
    /// The connection's keyspace.
    pub(crate) keyspace: Option<&'a str>,
    /// Server time (µs).
    pub(crate) now_micros: i64,
    /// Default `ttl` of the cdc option.
    pub(crate) default_cdc_ttl: u32,
}

/// The result of a DDL statement.
pub(crate) struct DdlOutcome {
    /// The new snapshot (`None`: no-op).
    pub(crate) schema: Option<Schema>,
    /// What to announce (`None`: RESULT Void).
    pub(crate) change: Option<frame::SchemaChange>,
    /// Storage work.
    pub(crate) storage: Vec<StorageChange>,
}

/// Storage work of a DDL statement.
pub(crate) enum StorageChange {
    /// A new table.
    CreateTable(Arc<TableDef>),
    /// A dropped table.
    DropTable(Uuid),
    /// Dropped columns.
    DropColumns {
        /// Table id.
        table: Uuid,
        /// Columns.
        columns: Vec<storage::ColumnId>,
    },
    /// TRUNCATE.
    Truncate(Uuid),
}

/// Resolves a type expression.
pub(crate) fn resolve_type(
    schema: &Schema,
    keyspace: &str,
    ty: &TypeExpr,
) -> Result<CqlType, CqlError> {
    resolve(schema, keyspace, ty, false)
}

fn resolve(schema: &Schema, ks: &str, ty: &TypeExpr, frozen: bool) -> Result<CqlType, CqlError> {
    Ok(match ty {
        TypeExpr::Native(t) => t.clone(),
        TypeExpr::List(e) => CqlType::List {
            elem: Box::new(resolve(schema, ks, e, true)?),
            frozen,
        },
        TypeExpr::Set(e) => CqlType::Set {
            elem: Box::new(resolve(schema, ks, e, true)?),
            frozen,
        },
        TypeExpr::Map(k, v) => CqlType::Map {
            key: Box::new(resolve(schema, ks, k, true)?),
            value: Box::new(resolve(schema, ks, v, true)?),
            frozen,
        },
        TypeExpr::Tuple(es) => CqlType::Tuple(
            es.iter()
                .map(|e| resolve(schema, ks, e, true))
                .collect::<Result<_, _>>()?,
        ),
        TypeExpr::Frozen(e) => resolve(schema, ks, e, true)?,
        TypeExpr::UserDefined(name) => {
            let k = name.keyspace.as_deref().unwrap_or(ks);
            let def = schema
                .keyspace(k)
                .and_then(|kd| kd.types.get(&name.name))
                .ok_or_else(|| CqlError::invalid(format!("Unknown type {name}")))?;
            CqlType::Udt {
                def: def.clone(),
                frozen,
            }
        }
        _ => return Err(CqlError::invalid(format!("Unsupported type {ty}"))),
    })
}

fn change(change: SchemaChangeType, target: SchemaChangeTarget) -> Option<SchemaChange> {
    Some(SchemaChange { change, target })
}

/// Runs a DDL statement against a snapshot.
pub(crate) fn execute_ddl(
    schema: &Schema,
    stmt: &Statement,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let mut s = schema.clone();
    s.version = Uuid::new_v4();
    let ks_of = |q: &crate::cql::QualifiedName| -> Result<String, CqlError> {
        q.keyspace
            .clone()
            .or_else(|| ctx.keyspace.map(str::to_string))
            .ok_or_else(|| CqlError::invalid("No keyspace has been specified"))
    };
    let noop = || DdlOutcome {
        schema: None,
        change: None,
        storage: Vec::new(),
    };
    match stmt {
        Statement::CreateKeyspace(c) => {
            if s.keyspaces.contains_key(&c.name) {
                if c.if_not_exists {
                    return Ok(noop());
                }
                return Err(CqlError::already_exists(
                    &c.name,
                    "",
                    format!("Keyspace {} already exists", c.name),
                ));
            }
            let mut options = std::collections::BTreeMap::new();
            for p in &c.properties {
                if p.name == "replication" {
                    for (k, v) in p.value.as_text_map().unwrap_or_default() {
                        let v = match v.as_str() {
                            "SimpleStrategy" => crate::schema::system::SIMPLE_STRATEGY.to_string(),
                            "NetworkTopologyStrategy" => {
                                crate::schema::system::NETWORK_TOPOLOGY_STRATEGY.to_string()
                            }
                            _ => v,
                        };
                        options.insert(k, v);
                    }
                }
            }
            s.keyspaces.insert(
                c.name.clone(),
                KeyspaceDef {
                    name: c.name.clone(),
                    replication: Replication { options },
                    durable_writes: true,
                    initial_tablets: None,
                    tables: Default::default(),
                    types: Default::default(),
                    system: false,
                },
            );
            Ok(DdlOutcome {
                schema: Some(s),
                change: change(
                    SchemaChangeType::Created,
                    SchemaChangeTarget::Keyspace {
                        keyspace: c.name.clone(),
                    },
                ),
                storage: Vec::new(),
            })
        }
        Statement::DropKeyspace(d) => {
            let Some(k) = s.keyspaces.remove(&d.name) else {
                if d.if_exists {
                    return Ok(noop());
                }
                return Err(CqlError::config(format!(
                    "Cannot drop non existing keyspace '{}'.",
                    d.name
                )));
            };
            Ok(DdlOutcome {
                schema: Some(s),
                change: change(
                    SchemaChangeType::Dropped,
                    SchemaChangeTarget::Keyspace {
                        keyspace: d.name.clone(),
                    },
                ),
                storage: k
                    .tables
                    .values()
                    .map(|t| StorageChange::DropTable(t.id))
                    .collect(),
            })
        }
        Statement::CreateType(c) => {
            let ks = ks_of(&c.name)?;
            let fields = c
                .fields
                .iter()
                .map(|(n, t)| Ok((n.clone(), resolve(schema, &ks, t, true)?)))
                .collect::<Result<Vec<_>, CqlError>>()?;
            let kdef = s
                .keyspaces
                .get_mut(&ks)
                .ok_or_else(|| CqlError::invalid(format!("Keyspace {ks} does not exist")))?;
            kdef.types.insert(
                c.name.name.clone(),
                Arc::new(UserType {
                    keyspace: ks.clone(),
                    name: c.name.name.clone(),
                    fields,
                }),
            );
            Ok(DdlOutcome {
                schema: Some(s),
                change: change(
                    SchemaChangeType::Created,
                    SchemaChangeTarget::Type {
                        keyspace: ks,
                        name: c.name.name.clone(),
                    },
                ),
                storage: Vec::new(),
            })
        }
        Statement::CreateTable(c) => {
            let ks = ks_of(&c.name)?;
            if s.table(&ks, &c.name.name).is_some() {
                if c.if_not_exists {
                    return Ok(noop());
                }
                return Err(CqlError::already_exists(&ks, &c.name.name, "table exists"));
            }
            let mut cols = Vec::new();
            for cd in &c.columns {
                let typ = resolve(schema, &ks, &cd.ty, false)?;
                let (kind, position) = if let Some(p) = c
                    .primary_key
                    .partition_key
                    .iter()
                    .position(|x| *x == cd.name)
                {
                    (ColumnKind::PartitionKey, p as i32)
                } else if let Some(p) = c.primary_key.clustering.iter().position(|x| *x == cd.name)
                {
                    (ColumnKind::Clustering, p as i32)
                } else if cd.is_static {
                    (ColumnKind::Static, -1)
                } else {
                    (ColumnKind::Regular, -1)
                };
                let order = c
                    .options
                    .clustering_order
                    .iter()
                    .find(|(n, _)| *n == cd.name)
                    .map_or(ClusteringOrder::Asc, |(_, o)| match o {
                        crate::cql::Order::Asc => ClusteringOrder::Asc,
                        crate::cql::Order::Desc => ClusteringOrder::Desc,
                    });
                let typ = if kind.is_primary_key() {
                    typ.frozen()
                } else {
                    typ
                };
                cols.push(ColumnDef {
                    name: cd.name.clone(),
                    typ,
                    kind,
                    position,
                    order,
                    id: 0,
                });
            }
            let mut options = TableOptions::default();
            for p in &c.options.properties {
                if p.name == "default_time_to_live" {
                    options.default_time_to_live =
                        p.value.as_text().and_then(|t| t.parse().ok()).unwrap_or(0);
                }
            }
            let t = Arc::new(TableDef::new(
                ks.clone(),
                c.name.name.clone(),
                cols,
                options,
                TableKind::User,
            ));
            let kdef = s
                .keyspaces
                .get_mut(&ks)
                .ok_or_else(|| CqlError::invalid(format!("Keyspace {ks} does not exist")))?;
            kdef.tables.insert(t.name.clone(), t.clone());
            Ok(DdlOutcome {
                schema: Some(s),
                change: change(
                    SchemaChangeType::Created,
                    SchemaChangeTarget::Table {
                        keyspace: ks,
                        table: t.name.clone(),
                    },
                ),
                storage: vec![StorageChange::CreateTable(t)],
            })
        }
        Statement::DropTable(d) => {
            let ks = ks_of(&d.table)?;
            let removed = s
                .keyspaces
                .get_mut(&ks)
                .and_then(|k| k.tables.remove(&d.table.name));
            let Some(t) = removed else {
                if d.if_exists {
                    return Ok(noop());
                }
                return Err(CqlError::invalid(format!(
                    "unconfigured table {}",
                    d.table.name
                )));
            };
            Ok(DdlOutcome {
                schema: Some(s),
                change: change(
                    SchemaChangeType::Dropped,
                    SchemaChangeTarget::Table {
                        keyspace: ks,
                        table: t.name.clone(),
                    },
                ),
                storage: vec![StorageChange::DropTable(t.id)],
            })
        }
        Statement::Truncate(tr) => {
            let ks = ks_of(&tr.table)?;
            let t = schema.table(&ks, &tr.table.name).ok_or_else(|| {
                CqlError::invalid(format!("unconfigured table {}", tr.table.name))
            })?;
            Ok(DdlOutcome {
                schema: None,
                change: None,
                storage: vec![StorageChange::Truncate(t.id)],
            })
        }
        _ => Err(CqlError::invalid(
            "DDL statement not supported by the stand-in",
        )),
    }
}
