//! Server-side `DESCRIBE`, as Scylla executes it (`cql3/statements/describe_statement.cc`,
//! `schema::describe`, `keyspace_metadata::describe`, `user_type_impl::describe`).
//!
//! A [`Describe`] statement becomes RESULT Rows of *descriptions*: `keyspace_name`, `type`,
//! `name` (names quoted when CQL needs it) and, except for the listings (`DESC KEYSPACES`,
//! `TABLES`, `TYPES`, `FUNCTIONS`, `AGGREGATES`), the `create_statement` that recreates the
//! element. `DESC CLUSTER` answers its own columns (`cluster`, `partitioner`, `snitch`, and
//! `range_ownership` when the connection uses a vnode user keyspace). [`result_metadata`] gives
//! the columns at PREPARE time, [`execute`] the rows.
//!
//! CDC log tables follow Scylla: an *attached* log (its base has CDC enabled) is left out of
//! listings and keyspace descriptions, because the base's `cdc = {...}` option recreates it;
//! the base's description is followed by an `ALTER TABLE <log> WITH <properties>` that
//! restores the log's own properties; `DESC TABLE <log>` answers its `CREATE TABLE` wrapped
//! in a "Do NOT execute" comment. A detached log is described like any table.
//!
//! Secondary indexes are described after their table (and by `DESC INDEX` or by name) as
//! `CREATE INDEX ... WITH <the backing view's properties>`; `DESC MATERIALIZED VIEW` of an
//! index's view answers its `CREATE MATERIALIZED VIEW` inside a "Do NOT execute" comment.
//! Materialized views are described as Scylla does: after their base table's indexes
//! (`DESC TABLE` and keyspace descriptions), on their own with `DESC MATERIALIZED VIEW` or
//! `DESC name`, never in `DESC TABLES`.
//!
//! The embedded cluster has no roles, service levels, user functions or aggregates, so the
//! listings of those are empty and naming one fails as it does on Scylla when it does not
//! exist.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::cluster::{CLUSTER_NAME, DATACENTER, Topology};
use crate::cql::{Describe, DescribeTarget, QualifiedName, is_reserved};
use crate::frame::{ColumnSpec, CqlError, ErrorKind, ResultMetadata};
use crate::schema::{
    CDC_LOG_SUFFIX, ClusteringOrder, ColumnDef, ColumnKind, KeyspaceDef, Schema, TableDef,
};
use crate::types::value::Value;
use crate::types::{CqlType, UserType};

/// The partitioner `DESC CLUSTER` reports.
const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";

/// The snitch `DESC CLUSTER` reports (Scylla's default `endpoint_snitch`, whose data center
/// is the `datacenter1` every node of the embedded cluster is in).
const SNITCH: &str = "org.apache.cassandra.locator.SimpleSnitch";

/// What the describing connection brings: its keyspace and whether its user is a superuser.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DescribeContext<'a> {
    /// The schema snapshot described.
    pub(crate) schema: &'a Schema,
    /// The nodes and their ring (`DESC CLUSTER`).
    pub(crate) topology: &'a Topology,
    /// The connection's keyspace (`USE`).
    pub(crate) keyspace: Option<&'a str>,
    /// Whether the connection's user is a superuser (an authenticated user of a cluster with
    /// credentials; anonymous connections are not).
    pub(crate) superuser: bool,
}

/// One described element (Scylla's `cql3::description`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Description {
    /// Keyspace of the element (as stored; quoted when serialized).
    keyspace: String,
    /// `keyspace`, `type`, `table`, ...
    kind: &'static str,
    /// Name of the element (as stored; quoted when serialized).
    name: String,
    /// The statement recreating it; `None` in listings.
    create_statement: Option<String>,
}

/// The rows of a DESCRIBE result: one cell per column, `None` for null.
pub(crate) type DescribeRows = Vec<Vec<Option<Bytes>>>;

/// A `system.describe` column of type `text`.
fn text_column(name: &str) -> ColumnSpec {
    ColumnSpec::new("system", "describe", name, CqlType::Text)
}

/// The type of `DESC CLUSTER`'s `range_ownership`: `map<text, list<text>>`.
fn range_ownership_type() -> CqlType {
    CqlType::Map {
        key: Box::new(CqlType::Text),
        value: Box::new(CqlType::List {
            elem: Box::new(CqlType::Text),
            frozen: false,
        }),
        frozen: false,
    }
}

/// Whether the statement lists elements (no `create_statement` column).
fn is_listing(target: &DescribeTarget) -> bool {
    matches!(
        target,
        DescribeTarget::Keyspaces
            | DescribeTarget::Tables
            | DescribeTarget::Types
            | DescribeTarget::Functions
            | DescribeTarget::Aggregates
    )
}

/// The result columns Scylla announces for the statement when it is prepared
/// (`DESC CLUSTER` may add `range_ownership` when it runs).
pub(crate) fn result_metadata(d: &Describe) -> ResultMetadata {
    let names: &[&str] = match &d.target {
        DescribeTarget::Cluster => &["cluster", "partitioner", "snitch"],
        t if is_listing(t) => &["keyspace_name", "type", "name"],
        _ => &["keyspace_name", "type", "name", "create_statement"],
    };
    ResultMetadata {
        columns: names.iter().map(|n| text_column(n)).collect(),
    }
}

/// Runs a DESCRIBE statement: its result columns and rows.
pub(crate) fn execute(
    d: &Describe,
    ctx: &DescribeContext<'_>,
) -> Result<(ResultMetadata, DescribeRows), CqlError> {
    if let DescribeTarget::Cluster = d.target {
        return describe_cluster(ctx);
    }
    let schema = ctx.schema;
    let internals = d.with_internals;
    let descriptions = match &d.target {
        DescribeTarget::Cluster => Vec::new(),
        DescribeTarget::Schema { full } => {
            if d.with_passwords && !ctx.superuser {
                return Err(CqlError::new(
                    ErrorKind::Unauthorized,
                    "DESCRIBE SCHEMA WITH INTERNALS AND PASSWORDS can only be issued by a superuser",
                ));
            }
            let mut out = Vec::new();
            for ks in schema.keyspaces.values() {
                if *full || !ks.system {
                    out.extend(keyspace_elements(schema, ks, internals));
                }
            }
            // WITH INTERNALS would add roles, grants and service levels here; the embedded
            // cluster has none.
            out
        }
        DescribeTarget::Keyspace { name, only } => {
            let ks = keyspace_or_error(schema, name.as_deref().or(ctx.keyspace).unwrap_or(""))?;
            if *only {
                vec![describe_keyspace(ks, true)]
            } else {
                keyspace_elements(schema, ks, internals)
            }
        }
        DescribeTarget::Keyspaces => schema
            .keyspaces
            .values()
            .map(|ks| describe_keyspace(ks, false))
            .collect(),
        DescribeTarget::Tables | DescribeTarget::Types => {
            let mut out = Vec::new();
            for ks in listed_keyspaces(schema, ctx.keyspace)? {
                if d.target == DescribeTarget::Tables {
                    out.extend(listed_tables(ks).into_iter().map(|t| Description {
                        keyspace: t.keyspace.clone(),
                        kind: "table",
                        name: t.name.clone(),
                        create_statement: None,
                    }));
                } else {
                    out.extend(
                        sorted_types(ks)
                            .into_iter()
                            .map(|t| describe_type(t, false)),
                    );
                }
            }
            out
        }
        DescribeTarget::Functions | DescribeTarget::Aggregates => {
            // Checks the keyspace like Scylla; there are no user functions or aggregates.
            listed_keyspaces(schema, ctx.keyspace)?;
            Vec::new()
        }
        DescribeTarget::Table(name)
        | DescribeTarget::Index(name)
        | DescribeTarget::MaterializedView(name)
        | DescribeTarget::Type(name)
        | DescribeTarget::Function(name)
        | DescribeTarget::Aggregate(name) => {
            let ks_name = name.keyspace.as_deref().or(ctx.keyspace).ok_or_else(|| {
                CqlError::invalid("No keyspace specified and no current keyspace")
            })?;
            let ks = keyspace_or_error(schema, ks_name)?;
            describe_element(schema, ks, &d.target, &name.name, internals)?
        }
        DescribeTarget::Generic(name) => describe_generic(schema, ctx.keyspace, name, internals)?,
    };
    let metadata = result_metadata(d);
    let with_statement = !is_listing(&d.target);
    let rows = descriptions
        .into_iter()
        .map(|desc| serialize(desc, with_statement))
        .collect();
    Ok((metadata, rows))
}

/// A description as row cells (Scylla's `description::serialize`).
fn serialize(desc: Description, with_statement: bool) -> Vec<Option<Bytes>> {
    let text = |s: String| Some(Bytes::from(s.into_bytes()));
    let mut row = vec![
        text(maybe_quote(&desc.keyspace)),
        text(desc.kind.to_string()),
        text(maybe_quote(&desc.name)),
    ];
    if with_statement {
        row.push(text(desc.create_statement.unwrap_or_default()));
    }
    row
}

/// `'<name>' not found in keyspaces`, Scylla's error for a missing keyspace.
fn keyspace_or_error<'s>(schema: &'s Schema, name: &str) -> Result<&'s KeyspaceDef, CqlError> {
    schema
        .keyspace(name)
        .ok_or_else(|| CqlError::invalid(format!("'{name}' not found in keyspaces")))
}

/// The keyspaces a listing covers: the connection's keyspace, or all of them by name.
fn listed_keyspaces<'s>(
    schema: &'s Schema,
    keyspace: Option<&str>,
) -> Result<Vec<&'s KeyspaceDef>, CqlError> {
    match keyspace {
        Some(ks) => Ok(vec![keyspace_or_error(schema, ks)?]),
        None => Ok(schema.keyspaces.values().collect()),
    }
}

/// Whether `table` is the log of a base table of its keyspace that has CDC enabled
/// (Scylla's `cdc::is_log_for_some_table`, which decides by name).
fn is_attached_log(ks: &KeyspaceDef, table: &str) -> bool {
    table
        .strip_suffix(CDC_LOG_SUFFIX)
        .and_then(|base| ks.tables.get(base))
        .is_some_and(|base| base.options.cdc_enabled())
}

/// The tables a keyspace lists: every table but attached CDC logs and views, by name
/// (`keyspace_metadata::tables` has no views).
fn listed_tables(ks: &KeyspaceDef) -> Vec<&Arc<TableDef>> {
    ks.tables
        .values()
        .filter(|t| !is_attached_log(ks, &t.name) && !t.is_view())
        .collect()
}

/// The keyspace, its types, and its tables with their CDC log properties
/// (`describe_all_keyspace_elements`).
fn keyspace_elements(schema: &Schema, ks: &KeyspaceDef, internals: bool) -> Vec<Description> {
    let mut out = vec![describe_keyspace(ks, true)];
    out.extend(sorted_types(ks).into_iter().map(|t| describe_type(t, true)));
    for t in listed_tables(ks) {
        out.extend(describe_table(schema, ks, t, internals));
    }
    out
}

/// One element named by `DESC TABLE | INDEX | MATERIALIZED VIEW | TYPE | FUNCTION |
/// AGGREGATE`, in keyspace `ks`.
fn describe_element(
    schema: &Schema,
    ks: &KeyspaceDef,
    target: &DescribeTarget,
    name: &str,
    internals: bool,
) -> Result<Vec<Description>, CqlError> {
    let ks_name = &ks.name;
    match target {
        DescribeTarget::Table(_) => {
            let t = ks.tables.get(name).ok_or_else(|| {
                CqlError::invalid(format!("Table '{name}' not found in keyspace '{ks_name}'"))
            })?;
            if t.is_view() {
                return Err(CqlError::invalid(
                    "Cannot use DESC TABLE on materialized View. (Did you mean DESC MATERIALIZED VIEW)?",
                ));
            }
            Ok(describe_table(schema, ks, t, internals))
        }
        DescribeTarget::Type(_) => {
            let t = ks.types.get(name).ok_or_else(|| {
                CqlError::invalid(format!("Type '{name}' not found in keyspace '{ks_name}'"))
            })?;
            Ok(vec![describe_type(t, true)])
        }
        DescribeTarget::Index(_) => match ks.indexed_table(name) {
            Some((t, i)) => Ok(vec![describe_index(t, i, internals)]),
            None => Err(CqlError::invalid(format!(
                "Table for existing index '{name}' not found in '{ks_name}'"
            ))),
        },
        DescribeTarget::MaterializedView(_) => match ks.tables.get(name) {
            Some(v) if v.is_view() => Ok(vec![describe_view(v, internals)]),
            _ => match index_view(ks, name) {
                Some((t, i)) => Ok(vec![describe_index_view(t, i, internals)]),
                None => Err(CqlError::invalid(format!(
                    "Materialized view '{name}' not found in keyspace '{ks_name}'"
                ))),
            },
        },
        DescribeTarget::Function(_) => Err(CqlError::invalid(format!(
            "Function '{name}' not found in keyspace '{ks_name}'"
        ))),
        _ => Err(CqlError::invalid(format!(
            "Aggregate '{name}' not found in keyspace '{ks_name}'"
        ))),
    }
}

/// `DESC [ks.]name`: a keyspace (unqualified names first), else a table or a type of the
/// named or current keyspace.
fn describe_generic(
    schema: &Schema,
    current: Option<&str>,
    name: &QualifiedName,
    internals: bool,
) -> Result<Vec<Description>, CqlError> {
    let element = &name.name;
    if name.keyspace.is_none() {
        if let Some(ks) = schema.keyspace(element) {
            return Ok(keyspace_elements(schema, ks, internals));
        }
        if current.is_none() {
            return Err(CqlError::invalid(format!(
                "'{element}' not found in keyspaces"
            )));
        }
    }
    let ks_name = name.keyspace.as_deref().or(current).unwrap_or("");
    let ks = schema
        .keyspace(ks_name)
        .ok_or_else(|| CqlError::invalid(format!("'{element}' not found in keyspaces")))?;
    if let Some(t) = ks.tables.get(element) {
        if t.is_view() {
            return Ok(vec![describe_view(t, internals)]);
        }
        return Ok(describe_table(schema, ks, t, internals));
    }
    if let Some((t, i)) = index_view(ks, element) {
        return Ok(vec![describe_index_view(t, i, internals)]);
    }
    if let Some((t, i)) = ks.indexed_table(element) {
        return Ok(vec![describe_index(t, i, internals)]);
    }
    if let Some(t) = ks.types.get(element) {
        return Ok(vec![describe_type(t, true)]);
    }
    Err(CqlError::invalid(format!(
        "'{element}' not found in keyspace '{ks_name}'"
    )))
}

// ---------------------------------------------------------------------------------------
// Keyspaces and types
// ---------------------------------------------------------------------------------------

/// A keyspace (`keyspace_metadata::describe`): replication (class first, then its options),
/// durable writes and the tablets setting.
fn describe_keyspace(ks: &KeyspaceDef, with_statement: bool) -> Description {
    let create_statement = with_statement.then(|| {
        let mut s = format!(
            "CREATE KEYSPACE {} WITH replication = {{'class': {}",
            maybe_quote(&ks.name),
            single_quote(ks.replication.class())
        );
        for (k, v) in &ks.replication.options {
            if k != "class" {
                let _ = write!(s, ", {}: {}", single_quote(k), single_quote(v));
            }
        }
        let _ = write!(s, "}} AND durable_writes = {}", ks.durable_writes);
        match ks.initial_tablets {
            None => s.push_str(" AND tablets = {'enabled': false}"),
            Some(0) => s.push_str(" AND tablets = {'enabled': true}"),
            Some(n) => {
                let _ = write!(s, " AND tablets = {{'enabled': true, 'initial': {n}}}");
            }
        }
        s.push(';');
        s
    });
    Description {
        keyspace: ks.name.clone(),
        kind: "keyspace",
        name: ks.name.clone(),
        create_statement,
    }
}

/// A user type (`user_type_impl::describe`).
fn describe_type(t: &UserType, with_statement: bool) -> Description {
    let create_statement = with_statement.then(|| {
        let mut s = format!(
            "CREATE TYPE {}.{} (\n",
            maybe_quote(&t.keyspace),
            maybe_quote(&t.name)
        );
        for (i, (field, typ)) in t.fields.iter().enumerate() {
            let _ = write!(s, "    {} {}", maybe_quote(field), type_name(typ));
            if i + 1 < t.fields.len() {
                s.push(',');
            }
            s.push('\n');
        }
        s.push_str(");");
        s
    });
    Description {
        keyspace: t.keyspace.clone(),
        kind: "type",
        name: t.name.clone(),
        create_statement,
    }
}

/// The names of the user types `typ` refers to, directly or through other types.
fn referenced_types(typ: &CqlType, out: &mut Vec<String>) {
    match typ {
        CqlType::List { elem, .. } | CqlType::Set { elem, .. } => referenced_types(elem, out),
        CqlType::Map { key, value, .. } => {
            referenced_types(key, out);
            referenced_types(value, out);
        }
        CqlType::Tuple(elems) => elems.iter().for_each(|e| referenced_types(e, out)),
        CqlType::Udt { def, .. } => {
            if !out.contains(&def.name) {
                out.push(def.name.clone());
            }
            for (_, f) in &def.fields {
                referenced_types(f, out);
            }
        }
        _ => {}
    }
}

/// The keyspace's user types, every type after the types it uses (Kahn's algorithm over
/// name-ordered types, as Scylla's `get_sorted_types` does).
fn sorted_types(ks: &KeyspaceDef) -> Vec<&Arc<UserType>> {
    let types: Vec<&Arc<UserType>> = ks.types.values().collect();
    // Edges referenced -> user, grouped by the referenced type's name.
    let mut users: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut pending: HashMap<&str, usize> = HashMap::new();
    for t in &types {
        let mut refs = Vec::new();
        for (_, f) in &t.fields {
            referenced_types(f, &mut refs);
        }
        for r in refs {
            if let Some((name, _)) = ks.types.get_key_value(r.as_str()) {
                users
                    .entry(name.as_str())
                    .or_default()
                    .push(t.name.as_str());
                *pending.entry(t.name.as_str()).or_default() += 1;
            }
        }
    }
    let mut sorted: Vec<&str> = types
        .iter()
        .map(|t| t.name.as_str())
        .filter(|n| !pending.contains_key(n))
        .collect();
    let mut i = 0;
    while i < sorted.len() {
        for user in users.get(sorted[i]).into_iter().flatten() {
            if let Some(count) = pending.get_mut(user) {
                *count -= 1;
                if *count == 0 {
                    sorted.push(user);
                }
            }
        }
        i += 1;
    }
    // A cycle cannot be created through CQL; keep any leftover types rather than lose them.
    for t in &types {
        if !sorted.contains(&t.name.as_str()) {
            sorted.push(t.name.as_str());
        }
    }
    sorted.into_iter().filter_map(|n| ks.types.get(n)).collect()
}

// ---------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------

/// A table (`describe_statement.cc` `table()`): its own description (commented out for an
/// attached CDC log), then, for a base table with CDC enabled, the `ALTER TABLE` that
/// restores its log's properties.
fn describe_table(
    schema: &Schema,
    ks: &KeyspaceDef,
    t: &TableDef,
    internals: bool,
) -> Vec<Description> {
    let mut create = create_table_statement(t, internals);
    if is_attached_log(ks, &t.name) {
        create = format!(
            "/* Do NOT execute this statement! It's only for informational purposes.\n   \
             A CDC log table is created automatically when creating the base with CDC\n   \
             enabled option or creating the vector index on the base table's vector column.\n\
             \n{create}\n*/"
        );
    }
    let mut out = vec![Description {
        keyspace: t.keyspace.clone(),
        kind: "table",
        name: t.name.clone(),
        create_statement: Some(create),
    }];
    // Its indexes, by name (`describe_statement.cc` `table`).
    out.extend(t.indexes.iter().map(|i| describe_index(t, i, internals)));
    // Its views, by name (`describe_statement.cc` `table()`: indexes, then views).
    out.extend(ks.views_of(&t.name).map(|v| describe_view(v, internals)));
    if t.options.cdc_enabled()
        && let Some(log) = schema.cdc_log_of(t)
    {
        out.push(Description {
            keyspace: log.keyspace.clone(),
            kind: "table",
            name: log.name.clone(),
            create_statement: Some(format!(
                "ALTER TABLE {} WITH {};\n",
                qualified(log),
                table_properties(log)
            )),
        });
    }
    out
}

/// A secondary index (`schema::get_create_statement` of its view as an index):
/// `CREATE INDEX name ON ks.t(target) WITH <the view's properties>;` where the target is
/// written as `describe_index_columns` writes it: `((pk), v)` for a local index (the
/// indexed column as the `target` option names it), `full(c)` for a frozen collection,
/// `values(s)` for a set (stored as `keys(s)`), else the `target` option.
fn describe_index(t: &TableDef, i: &crate::schema::IndexDef, internals: bool) -> Description {
    let view = i.view_table(t);
    let mut target = String::new();
    if i.local {
        let pk: Vec<String> = t.partition_key().map(|c| maybe_quote(&c.name)).collect();
        let _ = write!(target, "({}), {}", pk.join(", "), i.column);
    } else {
        let typ = t.column(&i.column).map(|c| &c.typ);
        if typ.is_some_and(|t| t.is_collection() && !t.is_multi_cell()) {
            let _ = write!(target, "full({})", maybe_quote(&i.column));
        } else if typ.is_some_and(|t| matches!(t, CqlType::Set { .. }))
            && i.target_option.starts_with("keys(")
        {
            let _ = write!(target, "values({})", maybe_quote(&i.column));
        } else {
            target.push_str(&i.target_option);
        }
    }
    let mut s = format!(
        "CREATE INDEX {} ON {}({target}) WITH ",
        maybe_quote(&i.name),
        qualified(t)
    );
    if internals {
        let _ = write!(s, "ID = {}\n    AND ", i.view_id);
    }
    s.push_str(&index_view_properties(&view, i));
    s.push_str(";\n");
    Description {
        keyspace: t.keyspace.clone(),
        kind: "index",
        name: i.name.clone(),
        create_statement: Some(s),
    }
}

/// The index whose backing view is named `name`, with its table.
fn index_view<'k>(
    ks: &'k KeyspaceDef,
    name: &str,
) -> Option<(&'k TableDef, &'k crate::schema::IndexDef)> {
    ks.tables.values().find_map(|t| {
        t.indexes
            .iter()
            .find(|i| i.view_name() == name)
            .map(|i| (&**t, i))
    })
}

/// The backing view of an index as `DESC MATERIALIZED VIEW` shows it
/// (`describe_statement.cc` `view`): its `CREATE MATERIALIZED VIEW` statement
/// (`schema::get_create_statement` of a view: the columns it selects, its base, its
/// `WHERE`, its key and clustering order, its properties), inside a comment saying not to
/// run it, since the index recreates it.
fn describe_index_view(t: &TableDef, i: &crate::schema::IndexDef, internals: bool) -> Description {
    let view = i.view_table(t);
    let names = |kind: ColumnKind| -> Vec<String> {
        view.columns
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| maybe_quote(&c.name))
            .collect()
    };
    let pk = names(ColumnKind::PartitionKey);
    let ck = names(ColumnKind::Clustering);
    let selected: Vec<String> = view.columns.iter().map(|c| maybe_quote(&c.name)).collect();
    let mut s = format!(
        "CREATE MATERIALIZED VIEW {} AS\n    SELECT {}\n    FROM {}\n    WHERE {}\n    PRIMARY KEY (",
        qualified(&view),
        selected.join(", "),
        qualified(t),
        i.where_clause()
    );
    if pk.len() > 1 {
        let _ = write!(s, "({})", pk.join(", "));
    } else {
        s.push_str(&pk.join(", "));
    }
    for c in &ck {
        let _ = write!(s, ", {c}");
    }
    s.push_str(")\n    WITH ");
    if internals {
        let _ = write!(s, "ID = {}\nAND ", i.view_id);
    }
    if !ck.is_empty() {
        let order: Vec<String> = ck.iter().map(|c| format!("{c} ASC")).collect();
        let _ = write!(s, "CLUSTERING ORDER BY ({})\n    AND ", order.join(", "));
    }
    s.push_str(&index_view_properties(&view, i));
    s.push_str(";\n");
    Description {
        keyspace: view.keyspace.clone(),
        kind: "view",
        name: view.name.clone(),
        create_statement: Some(format!(
            "/* Do NOT execute this statement! It's only for informational purposes.\n   \
             This materialized view is the underlying materialized view of a secondary\n   \
             index. It can be restored via restoring the index.\n\n{s}\n*/"
        )),
    }
}

/// The properties of an index's view (`schema_properties`): a table's, with the `tags`
/// extension and `synchronous_updates` of a local index's view.
fn index_view_properties(view: &TableDef, i: &crate::schema::IndexDef) -> String {
    let mut props = table_properties(view);
    if i.synchronous_updates() {
        // The `tags` extension sorts before `tombstone_gc`; then the view's own setting.
        let tags = "\n    AND tags = {'synchronous_updates': 'true'}";
        match props.find("\n    AND tombstone_gc") {
            Some(at) => props.insert_str(at, tags),
            None => props.push_str(tags),
        }
        props.push_str("\n    AND synchronous_updates = true");
    }
    props
}

/// A materialized view (`schema::get_create_statement` of a view): `CREATE MATERIALIZED
/// VIEW ks.v AS SELECT ... FROM ks.base WHERE ... PRIMARY KEY (...) WITH ...`.
fn describe_view(v: &TableDef, internals: bool) -> Description {
    let info = v.view_info();
    let mut s = format!("CREATE MATERIALIZED VIEW {} AS\n    SELECT ", qualified(v));
    if info.is_some_and(|i| i.include_all_columns) {
        s.push('*');
    } else {
        let names: Vec<String> = v.columns.iter().map(|c| maybe_quote(&c.name)).collect();
        s.push_str(&names.join(", "));
    }
    let base = info.map(|i| i.base.as_str()).unwrap_or_default();
    let _ = write!(
        s,
        "\n    FROM {}.{}\n    WHERE {}",
        maybe_quote(&v.keyspace),
        maybe_quote(base),
        info.map(|i| i.where_clause.as_str()).unwrap_or_default()
    );
    let pk: Vec<String> = v.partition_key().map(|c| maybe_quote(&c.name)).collect();
    s.push_str("\n    PRIMARY KEY (");
    if pk.len() > 1 {
        let _ = write!(s, "({})", pk.join(", "));
    } else {
        s.push_str(&pk.join(", "));
    }
    for c in v.clustering_key() {
        let _ = write!(s, ", {}", maybe_quote(&c.name));
    }
    s.push_str(")\n    WITH ");
    if internals {
        let _ = write!(s, "ID = {}\nAND ", v.id);
    }
    let clustering: Vec<String> = v
        .clustering_key()
        .map(|c| {
            let order = match c.order {
                ClusteringOrder::Asc => "ASC",
                ClusteringOrder::Desc => "DESC",
            };
            format!("{} {order}", maybe_quote(&c.name))
        })
        .collect();
    if !clustering.is_empty() {
        let _ = write!(
            s,
            "CLUSTERING ORDER BY ({})\n    AND ",
            clustering.join(", ")
        );
    }
    s.push_str(&table_properties(v));
    s.push_str(";\n");
    Description {
        keyspace: v.keyspace.clone(),
        kind: "view",
        name: v.name.clone(),
        create_statement: Some(s),
    }
}

/// `ks.t`, each part quoted when needed.
fn qualified(t: &TableDef) -> String {
    format!("{}.{}", maybe_quote(&t.keyspace), maybe_quote(&t.name))
}

/// A column as `CREATE TABLE` declares it: `name type [STATIC]`.
fn column_declaration(c: &ColumnDef) -> String {
    let mut s = format!("{} {}", maybe_quote(&c.name), type_name(&c.typ));
    if c.kind == ColumnKind::Static {
        s.push_str(" STATIC");
    }
    s
}

/// Scylla's `schema::get_create_statement` for a table. With `internals`: the table id, the
/// dropped columns (declared, then dropped at their drop time, then re-added when a column
/// of that name exists again).
fn create_table_statement(t: &TableDef, internals: bool) -> String {
    let name = qualified(t);
    let mut s = format!("CREATE TABLE {name} (");
    // Columns in Scylla's order: partition key, clustering key, static, regular.
    let rank = |c: &&ColumnDef| match c.kind {
        ColumnKind::PartitionKey => 0,
        ColumnKind::Clustering => 1,
        ColumnKind::Static => 2,
        ColumnKind::Regular => 3,
    };
    let mut columns: Vec<&ColumnDef> = t.columns.iter().collect();
    columns.sort_by_key(rank);
    for c in &columns {
        if internals && t.dropped_columns.contains_key(&c.name) {
            continue;
        }
        let _ = write!(s, "\n    {},", column_declaration(c));
    }
    if internals {
        for (dropped, d) in &t.dropped_columns {
            let _ = write!(s, "\n    {} {},", maybe_quote(dropped), type_name(&d.typ));
        }
    }
    let pk: Vec<String> = t.partition_key().map(|c| maybe_quote(&c.name)).collect();
    s.push_str("\n    PRIMARY KEY (");
    if pk.len() > 1 {
        let _ = write!(s, "({})", pk.join(", "));
    } else {
        s.push_str(&pk.join(", "));
    }
    for c in t.clustering_key() {
        let _ = write!(s, ", {}", maybe_quote(&c.name));
    }
    s.push_str(")\n) WITH ");
    if internals {
        let _ = write!(s, "ID = {}\nAND ", t.id);
    }
    let clustering: Vec<String> = t
        .clustering_key()
        .map(|c| {
            let order = match c.order {
                ClusteringOrder::Asc => "ASC",
                ClusteringOrder::Desc => "DESC",
            };
            format!("{} {order}", maybe_quote(&c.name))
        })
        .collect();
    if !clustering.is_empty() {
        let _ = write!(
            s,
            "CLUSTERING ORDER BY ({})\n    AND ",
            clustering.join(", ")
        );
    }
    if t.compact_storage {
        s.push_str("COMPACT STORAGE\n    AND ");
    }
    s.push_str(&table_properties(t));
    s.push_str(";\n");
    if internals {
        for (dropped, d) in &t.dropped_columns {
            let _ = write!(
                s,
                "\nALTER TABLE {name} DROP {} USING TIMESTAMP {};",
                maybe_quote(dropped),
                d.dropped_at
            );
            if let Some(c) = t.column(dropped) {
                let _ = write!(s, "\nALTER TABLE {name} ADD {};", column_declaration(c));
            }
        }
    }
    s
}

/// `'k': 'v', ...` (Scylla's `map_as_cql_param`: keys in order, nothing escaped).
fn map_param<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    entries
        .into_iter()
        .map(|(k, v)| format!("'{k}': '{v}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table's properties as `schema::schema_properties` writes them, joined by
/// `\n    AND `: every option, then the schema extensions (`cdc`, `paxos_grace_seconds`,
/// `tombstone_gc`) in name order.
fn table_properties(t: &TableDef) -> String {
    let o = &t.options;
    let caching: Vec<(&String, &String)> = o
        .caching
        .iter()
        .filter(|(k, v)| k.as_str() != "enabled" || v.as_str() != "true")
        .collect();
    let class = o.compaction.get("class").map(String::as_str).unwrap_or("");
    let compaction_options = o.compaction.iter().filter(|(k, _)| k.as_str() != "class");
    let mut compaction = format!("{{'class': '{class}'");
    for (k, v) in compaction_options {
        let _ = write!(compaction, ", '{k}': '{v}'");
    }
    compaction.push('}');
    let mut props = vec![
        format!(
            "bloom_filter_fp_chance = {}",
            format_double(o.bloom_filter_fp_chance)
        ),
        format!("caching = {{{}}}", map_param(caching)),
        format!("comment = {}", single_quote(&o.comment)),
        format!("compaction = {compaction}"),
        format!("compression = {{{}}}", map_param(&o.compression)),
        format!("crc_check_chance = {}", format_double(o.crc_check_chance)),
        format!("default_time_to_live = {}", o.default_time_to_live),
        format!("gc_grace_seconds = {}", o.gc_grace_seconds),
        format!("max_index_interval = {}", o.max_index_interval),
        format!(
            "memtable_flush_period_in_ms = {}",
            o.memtable_flush_period_in_ms
        ),
        format!("min_index_interval = {}", o.min_index_interval),
        format!("speculative_retry = '{}'", o.speculative_retry),
    ];
    if let Some(cdc) = &o.cdc {
        props.push(format!("cdc = {{{}}}", map_param(&cdc.to_map())));
    }
    if let Some(p) = o.paxos_grace_seconds {
        props.push(format!("paxos_grace_seconds = {p}"));
    }
    if let Some(gc) = &o.tombstone_gc {
        props.push(format!("tombstone_gc = {{{}}}", map_param(gc)));
    }
    props.join("\n    AND ")
}

// ---------------------------------------------------------------------------------------
// DESC CLUSTER
// ---------------------------------------------------------------------------------------

/// `DESC CLUSTER`: name, partitioner and snitch, and the token ranges' replicas of the
/// connection's keyspace when it is a vnode user keyspace.
fn describe_cluster(ctx: &DescribeContext<'_>) -> Result<(ResultMetadata, DescribeRows), CqlError> {
    let text = |s: &str| Some(Bytes::copy_from_slice(s.as_bytes()));
    let mut columns = vec![
        text_column("cluster"),
        text_column("partitioner"),
        text_column("snitch"),
    ];
    let mut row = vec![text(CLUSTER_NAME), text(PARTITIONER), text(SNITCH)];
    let ks = ctx
        .keyspace
        .and_then(|k| ctx.schema.keyspace(k))
        .filter(|ks| !ks.system && !ks.uses_tablets());
    if let Some(ks) = ks {
        columns.push(ColumnSpec::new(
            "system",
            "describe",
            "range_ownership",
            range_ownership_type(),
        ));
        row.push(Some(range_ownership(ctx.topology, ks)));
    }
    Ok((ResultMetadata { columns }, vec![row]))
}

/// The `range_ownership` map: each vnode's end token (as text) to the addresses of its
/// replicas, ranges in order of their start token, as Scylla serializes it.
fn range_ownership(topology: &Topology, ks: &KeyspaceDef) -> Bytes {
    let rf = ks.replication.factor(DATACENTER);
    let mut ranges: Vec<(i64, i64, Vec<usize>)> = topology
        .ring
        .vnodes()
        .map(|v| (v.start_exclusive, v.end, topology.ring.replicas(v.end, rf)))
        .collect();
    ranges.sort_by_key(|r| r.0);
    let mut out = BytesMut::new();
    out.put_i32(i32::try_from(ranges.len()).unwrap_or(i32::MAX));
    for (_, end, replicas) in ranges {
        let key = end.to_string();
        out.put_i32(i32::try_from(key.len()).unwrap_or(i32::MAX));
        out.put_slice(key.as_bytes());
        let endpoints = replicas
            .iter()
            .filter_map(|&i| topology.nodes.get(i))
            .map(|n| Value::text(&n.ip.to_string()))
            .collect();
        let list = Value::list(endpoints).to_bytes();
        out.put_i32(i32::try_from(list.len()).unwrap_or(i32::MAX));
        out.put_slice(&list);
    }
    out.freeze()
}

// ---------------------------------------------------------------------------------------
// Text rendering
// ---------------------------------------------------------------------------------------

/// Scylla's `cql3::util::maybe_quote`: bare when the name is `[a-z][a-z0-9_]*` and not a
/// reserved word (the parser's set, which is Scylla's: every keyword of `cql3/Cql.g` that is
/// not an `unreserved_keyword`, plus the boolean constants), otherwise double-quoted with
/// inner quotes doubled.
pub(crate) fn maybe_quote(name: &str) -> String {
    let mut chars = name.chars();
    let plain = matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'));
    if plain && !is_reserved(name) {
        return name.to_string();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Scylla's `cql3::util::single_quote`: a string literal with inner quotes doubled.
fn single_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A CQL type as Scylla's `cql3_type_name` spells it: `frozen<...>` around every frozen
/// collection, user type and tuple, nested ones included; user types by their quoted name.
pub(crate) fn type_name(t: &CqlType) -> String {
    if let Some(n) = t.native_name() {
        return n.to_string();
    }
    let inner = match t {
        CqlType::List { elem, .. } => format!("list<{}>", type_name(elem)),
        CqlType::Set { elem, .. } => format!("set<{}>", type_name(elem)),
        CqlType::Map { key, value, .. } => {
            format!("map<{}, {}>", type_name(key), type_name(value))
        }
        CqlType::Tuple(elems) => format!(
            "tuple<{}>",
            elems.iter().map(type_name).collect::<Vec<_>>().join(", ")
        ),
        CqlType::Udt { def, .. } => maybe_quote(&def.name),
        _ => String::new(),
    };
    if t.is_multi_cell() {
        inner
    } else {
        format!("frozen<{inner}>")
    }
}

/// A double as `fmt::to_string` writes it: the shortest digits that read back as the same
/// value, in fixed notation for decimal exponents -4..16 (`0.01`, `1`), otherwise in
/// exponent notation with at least two exponent digits (`1e-05`).
fn format_double(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits: `d[.ddd]e<exp>`.
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4..16).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
        return out;
    }
    let n = digits.len() as i32;
    if exp < 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-exp - 1) as usize));
        out.push_str(&digits);
    } else if exp + 1 >= n {
        out.push_str(&digits);
        out.push_str(&"0".repeat((exp + 1 - n) as usize));
    } else {
        let point = (exp + 1) as usize;
        out.push_str(&digits[..point]);
        out.push('.');
        out.push_str(&digits[point..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_are_written_like_fmt() {
        assert_eq!(format_double(0.01), "0.01");
        assert_eq!(format_double(1.0), "1");
        assert_eq!(format_double(0.5), "0.5");
        assert_eq!(format_double(0.1234), "0.1234");
        assert_eq!(format_double(0.00001), "1e-05");
        assert_eq!(format_double(0.0001), "0.0001");
        assert_eq!(format_double(1500.0), "1500");
        assert_eq!(format_double(12.25), "12.25");
        assert_eq!(format_double(1e16), "1e+16");
        assert_eq!(format_double(1.5e-7), "1.5e-07");
        assert_eq!(format_double(0.0), "0");
    }

    #[test]
    fn names_are_quoted_like_scylla() {
        assert_eq!(maybe_quote("ks1"), "ks1");
        assert_eq!(maybe_quote("Quoted_KS"), "\"Quoted_KS\"");
        assert_eq!(maybe_quote("cdc$time"), "\"cdc$time\"");
        assert_eq!(maybe_quote("a\"b"), "\"a\"\"b\"");
        assert_eq!(maybe_quote("select"), "\"select\"");
        assert_eq!(maybe_quote("token"), "\"token\"");
        // Unreserved keywords stay bare.
        assert_eq!(maybe_quote("ttl"), "ttl");
        assert_eq!(maybe_quote("key"), "key");
        assert_eq!(maybe_quote(""), "\"\"");
        assert_eq!(maybe_quote("1a"), "\"1a\"");
        assert_eq!(single_quote("it's"), "'it''s'");
    }

    #[test]
    fn types_are_spelled_like_cql3_type_name() {
        let ut = Arc::new(UserType {
            keyspace: "ks".into(),
            name: "My Type".into(),
            fields: vec![("a".into(), CqlType::Int)],
        });
        let list = |e: CqlType, frozen| CqlType::List {
            elem: Box::new(e),
            frozen,
        };
        let udt = |frozen| CqlType::Udt {
            def: ut.clone(),
            frozen,
        };
        assert_eq!(type_name(&udt(false)), "\"My Type\"");
        assert_eq!(type_name(&udt(true)), "frozen<\"My Type\">");
        assert_eq!(
            type_name(&list(udt(true), false)),
            "list<frozen<\"My Type\">>"
        );
        assert_eq!(
            type_name(&CqlType::Tuple(vec![
                CqlType::Int,
                list(CqlType::Text, true)
            ])),
            "frozen<tuple<int, frozen<list<text>>>>"
        );
        assert_eq!(
            type_name(&CqlType::Map {
                key: Box::new(CqlType::Text),
                value: Box::new(CqlType::Tuple(vec![CqlType::Int])),
                frozen: false,
            }),
            "map<text, frozen<tuple<int>>>"
        );
    }
}
