//! Type resolution ([`resolve_type`]) and CREATE / ALTER / DROP TYPE.
//!
//! Freezing follows Scylla: a collection or UDT written at the top level of a column (or of a
//! UDT field) is non-frozen unless wrapped in `frozen<...>`; inside a non-frozen collection
//! every collection or UDT must be written `frozen<...>`; inside `frozen<...>` and inside a
//! tuple everything is frozen implicitly. UDTs are looked up in the statement's keyspace (a
//! qualified name must name that keyspace). When a type changes, every type and every table
//! of the keyspace that uses it (CDC logs included) is rebuilt with the new definition.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::cql::{AlterType, AlterTypeAction, CreateType, DropType, TypeExpr};
use crate::frame::{CqlError, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use crate::schema::{KeyspaceDef, Schema, TableDef};
use crate::types::{CqlType, UserType};

use super::checks::{Permission, check_access, keyspace_of};
use super::outcome::{DdlContext, DdlOutcome, table_events};

/// User types of one keyspace, by name.
pub(super) type UserTypes = BTreeMap<String, Arc<UserType>>;

/// Resolves a column type written in a statement on keyspace `keyspace` (UDTs are looked up
/// there), with Scylla's freezing rules and its messages.
pub(crate) fn resolve_type(
    schema: &Schema,
    keyspace: &str,
    ty: &TypeExpr,
) -> Result<CqlType, CqlError> {
    let empty = UserTypes::new();
    let types = schema.keyspace(keyspace).map_or(&empty, |k| &k.types);
    resolve_in(types, keyspace, ty)
}

/// [`resolve_type`] against an explicit set of user types.
pub(super) fn resolve_in(
    types: &UserTypes,
    keyspace: &str,
    ty: &TypeExpr,
) -> Result<CqlType, CqlError> {
    resolve(types, keyspace, ty, false)
}

/// Whether a written type can be frozen (collections, tuples and UDTs).
fn supports_freezing(ty: &TypeExpr) -> bool {
    matches!(
        ty,
        TypeExpr::List(_)
            | TypeExpr::Set(_)
            | TypeExpr::Map(..)
            | TypeExpr::Tuple(_)
            | TypeExpr::UserDefined(_)
    )
}

/// Whether a written type must be frozen explicitly inside a non-frozen collection.
fn needs_explicit_freeze(ty: &TypeExpr) -> bool {
    matches!(
        ty,
        TypeExpr::List(_) | TypeExpr::Set(_) | TypeExpr::Map(..) | TypeExpr::UserDefined(_)
    )
}

/// Whether a resolved type is or contains `duration`.
pub(super) fn references_duration(t: &CqlType) -> bool {
    match t {
        CqlType::Duration => true,
        CqlType::List { elem, .. } | CqlType::Set { elem, .. } => references_duration(elem),
        CqlType::Map { key, value, .. } => references_duration(key) || references_duration(value),
        CqlType::Tuple(elems) => elems.iter().any(references_duration),
        CqlType::Udt { def, .. } => def.fields.iter().any(|(_, f)| references_duration(f)),
        _ => false,
    }
}

/// Resolves `ty`; `frozen` says whether it sits inside a frozen type.
fn resolve(
    types: &UserTypes,
    keyspace: &str,
    ty: &TypeExpr,
    frozen: bool,
) -> Result<CqlType, CqlError> {
    let invalid = |m: String| Err(CqlError::invalid(m));
    match ty {
        TypeExpr::Native(t) => Ok(t.clone()),
        TypeExpr::Frozen(inner) => {
            if !supports_freezing(inner) && !matches!(**inner, TypeExpr::Frozen(_)) {
                return invalid(format!(
                    "frozen<> is only allowed on collections, tuples, and user-defined types \
                     (got {inner})"
                ));
            }
            resolve(types, keyspace, inner, true)
        }
        TypeExpr::List(e) | TypeExpr::Set(e) => {
            if !frozen && needs_explicit_freeze(e) {
                return invalid(format!(
                    "Non-frozen user types or collections are not allowed inside collections: \
                     {ty}"
                ));
            }
            let elem = resolve(types, keyspace, e, true)?;
            if elem.is_counter() {
                return invalid(format!("Counters are not allowed inside collections: {ty}"));
            }
            let elem = Box::new(elem);
            if let TypeExpr::List(_) = ty {
                Ok(CqlType::List { elem, frozen })
            } else {
                if references_duration(&elem) {
                    return invalid(format!("Durations are not allowed inside sets: {ty}"));
                }
                Ok(CqlType::Set { elem, frozen })
            }
        }
        TypeExpr::Map(k, v) => {
            if !frozen && (needs_explicit_freeze(k) || needs_explicit_freeze(v)) {
                return invalid(format!(
                    "Non-frozen user types or collections are not allowed inside collections: \
                     {ty}"
                ));
            }
            let key = resolve(types, keyspace, k, true)?;
            let value = resolve(types, keyspace, v, true)?;
            if key.is_counter() || value.is_counter() {
                return invalid(format!("Counters are not allowed inside collections: {ty}"));
            }
            if references_duration(&key) {
                return invalid(format!("Durations are not allowed as map keys: {ty}"));
            }
            Ok(CqlType::Map {
                key: Box::new(key),
                value: Box::new(value),
                frozen,
            })
        }
        TypeExpr::Tuple(elems) => {
            let mut out = Vec::with_capacity(elems.len());
            for e in elems {
                let t = resolve(types, keyspace, e, true)?;
                if t.is_counter() {
                    return invalid("Counters are not allowed inside tuples".into());
                }
                out.push(t);
            }
            Ok(CqlType::Tuple(out))
        }
        TypeExpr::UserDefined(name) => {
            if let Some(ks) = &name.keyspace
                && ks != keyspace
            {
                return invalid(format!(
                    "Statement on keyspace {keyspace} cannot refer to a user type in keyspace \
                     {ks}; user types can only be used in the keyspace they are defined in"
                ));
            }
            match types.get(&name.name) {
                Some(def) => Ok(CqlType::Udt {
                    def: def.clone(),
                    frozen,
                }),
                None => invalid(format!("Unknown type {keyspace}.{}", name.name)),
            }
        }
        TypeExpr::Vector { .. } => invalid(format!(
            "Type {ty} is not supported by the embedded cluster"
        )),
        TypeExpr::Custom(class) => invalid(format!(
            "Custom type '{class}' is not supported by the embedded cluster"
        )),
    }
}

/// Whether `t` uses the user type `keyspace.name` (directly or nested).
pub(super) fn references_udt(t: &CqlType, keyspace: &str, name: &str) -> bool {
    match t {
        CqlType::List { elem, .. } | CqlType::Set { elem, .. } => {
            references_udt(elem, keyspace, name)
        }
        CqlType::Map { key, value, .. } => {
            references_udt(key, keyspace, name) || references_udt(value, keyspace, name)
        }
        CqlType::Tuple(elems) => elems.iter().any(|e| references_udt(e, keyspace, name)),
        CqlType::Udt { def, .. } => {
            (def.keyspace == keyspace && def.name == name)
                || def
                    .fields
                    .iter()
                    .any(|(_, f)| references_udt(f, keyspace, name))
        }
        _ => false,
    }
}

/// `t` with every user type of `keyspace` replaced by its definition in `types`.
fn refresh_type(t: &CqlType, keyspace: &str, types: &UserTypes) -> CqlType {
    match t {
        CqlType::List { elem, frozen } => CqlType::List {
            elem: Box::new(refresh_type(elem, keyspace, types)),
            frozen: *frozen,
        },
        CqlType::Set { elem, frozen } => CqlType::Set {
            elem: Box::new(refresh_type(elem, keyspace, types)),
            frozen: *frozen,
        },
        CqlType::Map { key, value, frozen } => CqlType::Map {
            key: Box::new(refresh_type(key, keyspace, types)),
            value: Box::new(refresh_type(value, keyspace, types)),
            frozen: *frozen,
        },
        CqlType::Tuple(elems) => CqlType::Tuple(
            elems
                .iter()
                .map(|e| refresh_type(e, keyspace, types))
                .collect(),
        ),
        CqlType::Udt { def, frozen } => match types.get(&def.name) {
            Some(new) if def.keyspace == keyspace => CqlType::Udt {
                def: new.clone(),
                frozen: *frozen,
            },
            _ => t.clone(),
        },
        other => other.clone(),
    }
}

/// Names of the user types of `keyspace` that `t` uses directly.
fn direct_udts(t: &CqlType, keyspace: &str, out: &mut BTreeSet<String>) {
    match t {
        CqlType::List { elem, .. } | CqlType::Set { elem, .. } => direct_udts(elem, keyspace, out),
        CqlType::Map { key, value, .. } => {
            direct_udts(key, keyspace, out);
            direct_udts(value, keyspace, out);
        }
        CqlType::Tuple(elems) => elems.iter().for_each(|e| direct_udts(e, keyspace, out)),
        CqlType::Udt { def, .. } if def.keyspace == keyspace => {
            out.insert(def.name.clone());
        }
        _ => {}
    }
}

/// Rebuilds every user type of the keyspace from `types` (whose entries may be stale copies
/// of each other), dependencies first, so that every nested reference is the current one.
fn refresh_all_types(keyspace: &str, types: &UserTypes) -> UserTypes {
    /// Refreshes `name` after the types it uses; `visiting` guards against cycles.
    fn visit(
        name: &str,
        keyspace: &str,
        old: &UserTypes,
        done: &mut UserTypes,
        visiting: &mut BTreeSet<String>,
    ) {
        if done.contains_key(name) || !visiting.insert(name.to_string()) {
            return;
        }
        let Some(ut) = old.get(name) else {
            return;
        };
        let mut deps = BTreeSet::new();
        for (_, f) in &ut.fields {
            direct_udts(f, keyspace, &mut deps);
        }
        for d in &deps {
            visit(d, keyspace, old, done, visiting);
        }
        // Types not refreshed yet (only possible with a cycle) keep their old definition.
        let mut lookup = old.clone();
        lookup.extend(done.iter().map(|(k, v)| (k.clone(), v.clone())));
        let fields = ut
            .fields
            .iter()
            .map(|(n, f)| (n.clone(), refresh_type(f, keyspace, &lookup)))
            .collect();
        done.insert(
            name.to_string(),
            Arc::new(UserType {
                keyspace: ut.keyspace.clone(),
                name: ut.name.clone(),
                fields,
            }),
        );
    }
    let mut done = UserTypes::new();
    for name in types.keys() {
        let mut visiting = BTreeSet::new();
        visit(name, keyspace, types, &mut done, &mut visiting);
    }
    done
}

/// Rebuilds a keyspace after its user types changed: every type, and every column of every
/// table, refers to the current definitions.
pub(super) fn refresh_keyspace(ks: &mut KeyspaceDef) {
    ks.types = refresh_all_types(&ks.name, &ks.types);
    let names: Vec<String> = ks.tables.keys().cloned().collect();
    for name in names {
        let Some(table) = ks.tables.get(&name) else {
            continue;
        };
        let mut updated: TableDef = (**table).clone();
        for c in &mut updated.columns {
            c.typ = refresh_type(&c.typ, &ks.name, &ks.types);
        }
        for d in updated.dropped_columns.values_mut() {
            d.typ = refresh_type(&d.typ, &ks.name, &ks.types);
        }
        if updated != **table {
            ks.tables.insert(name, Arc::new(updated));
        }
    }
}

/// The `TYPE` target of a schema change.
fn target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Type {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
    }
}

/// Checks the field names of a type for duplicates (Scylla names them in hex).
fn check_duplicate_fields(name: &str, fields: &[(String, CqlType)]) -> Result<(), CqlError> {
    for (i, (a, _)) in fields.iter().enumerate() {
        if fields.iter().skip(i + 1).any(|(b, _)| a == b) {
            let hex: String = a.bytes().map(|b| format!("{b:02x}")).collect();
            return Err(CqlError::invalid(format!(
                "Duplicate field name {hex} in type {name}"
            )));
        }
    }
    Ok(())
}

/// Resolves the type of a UDT field: like a column type, but a field cannot be a counter
/// or a non-frozen UDT.
fn resolve_field(types: &UserTypes, keyspace: &str, ty: &TypeExpr) -> Result<CqlType, CqlError> {
    if matches!(ty, TypeExpr::Native(CqlType::Counter)) {
        return Err(CqlError::invalid("A user type cannot contain counters"));
    }
    if matches!(ty, TypeExpr::UserDefined(_)) {
        return Err(CqlError::invalid(
            "A user type cannot contain non-frozen user type fields",
        ));
    }
    resolve_in(types, keyspace, ty)
}

/// `CREATE TYPE [IF NOT EXISTS] [ks.]name (...)`
pub(super) fn create(
    schema: &Schema,
    stmt: &CreateType,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    check_access(&ks_name, None, Permission::Create)?;
    for (_, ty) in &stmt.fields {
        if matches!(ty, TypeExpr::Native(CqlType::Counter)) {
            return Err(CqlError::invalid("A user type cannot contain counters"));
        }
        if matches!(ty, TypeExpr::UserDefined(_)) {
            return Err(CqlError::invalid(
                "A user type cannot contain non-frozen user type fields",
            ));
        }
    }
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(super::checks::no_keyspace(&ks_name));
    };
    if ks.types.contains_key(name) {
        if stmt.if_not_exists {
            return Ok(DdlOutcome::unchanged(Some((
                SchemaChangeType::Created,
                target(&ks_name, name),
            ))));
        }
        return Err(CqlError::invalid(format!(
            "A user type of name {ks_name}.{name} already exists"
        )));
    }
    let mut fields = Vec::with_capacity(stmt.fields.len());
    for (field, ty) in &stmt.fields {
        fields.push((field.clone(), resolve_field(&ks.types, &ks_name, ty)?));
    }
    check_duplicate_fields(name, &fields)?;
    let mut next = schema.clone();
    let Some(ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(super::checks::no_keyspace(&ks_name));
    };
    ks.types.insert(
        name.clone(),
        Arc::new(UserType {
            keyspace: ks_name.clone(),
            name: name.clone(),
            fields,
        }),
    );
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Created,
        target(&ks_name, name),
        Vec::new(),
    ))
}

/// `ALTER TYPE [ks.]name ADD / RENAME / ALTER ... TYPE`
pub(super) fn alter(
    schema: &Schema,
    stmt: &AlterType,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    check_access(&ks_name, None, Permission::Alter)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(CqlError::invalid(format!(
            "Cannot alter type in unknown keyspace {ks_name}"
        )));
    };
    let qualified = format!("{ks_name}.{name}");
    let Some(current) = ks.types.get(name) else {
        return Err(CqlError::invalid(format!(
            "No user type named {qualified} exists."
        )));
    };
    for table in ks.tables.values() {
        for c in table.partition_key() {
            if references_udt(&c.typ, &ks_name, name) {
                return Err(CqlError::invalid(format!(
                    "Cannot add new field to type {qualified} because it is used in the \
                     partition key column {} of table {ks_name}.{}",
                    c.name, table.name
                )));
            }
        }
    }
    let updated = altered_type(ks, (&ks_name, name), &qualified, current, &stmt.action)?;
    let events = alter_events(ks, &ks_name, name);
    let mut next = schema.clone();
    let Some(ks) = next.keyspaces.get_mut(&ks_name) else {
        return Err(super::checks::no_keyspace(&ks_name));
    };
    ks.types.insert(name.clone(), Arc::new(updated));
    refresh_keyspace(ks);
    Ok(DdlOutcome::applied_with_events(
        next,
        SchemaChangeType::Updated,
        target(&ks_name, name),
        Vec::new(),
        events,
    ))
}

/// The user type `current` (keyspace and name `(ks_name, name)`, written `qualified`) of
/// keyspace `ks` after an `ALTER TYPE`'s `action`.
fn altered_type(
    ks: &KeyspaceDef,
    (ks_name, name): (&str, &str),
    qualified: &str,
    current: &UserType,
    action: &AlterTypeAction,
) -> Result<UserType, CqlError> {
    let field_index = |f: &str| current.fields.iter().position(|(n, _)| n == f);
    let mut updated = current.clone();
    match action {
        AlterTypeAction::Add { field, ty } => {
            if field_index(field).is_some() {
                return Err(CqlError::invalid(format!(
                    "Cannot add new field {field} to type {qualified}: a field of the same name \
                     already exists"
                )));
            }
            let t = added_field_type(ks, (ks_name, name), qualified, field, ty)?;
            updated.fields.push((field.clone(), t));
        }
        AlterTypeAction::Rename(renames) => {
            for (from, to) in renames {
                let Some(i) = field_index(from) else {
                    return Err(CqlError::invalid(format!(
                        "Unknown field {from} in type {qualified}"
                    )));
                };
                if let Some(f) = updated.fields.get_mut(i) {
                    f.0 = to.clone();
                }
            }
            check_duplicate_fields(name, &updated.fields)?;
        }
        AlterTypeAction::AlterFieldType { field, ty } => {
            let Some(i) = field_index(field) else {
                return Err(CqlError::invalid(format!(
                    "Unknown field {field} in type {qualified}"
                )));
            };
            let t = resolve_field(&ks.types, ks_name, ty)?;
            let Some((_, previous)) = current.fields.get(i) else {
                return Err(CqlError::server("field index out of range"));
            };
            if t != *previous {
                return Err(CqlError::invalid(format!(
                    "Type {ty} in incompatible with previous type {previous} of field {field} \
                     in user type {qualified}"
                )));
            }
        }
    }
    Ok(updated)
}

/// The type of the field `field` that `ALTER TYPE ... ADD` adds to the type `(ks_name,
/// name)`: no duration where the type is in a clustering key, and no reference back to the
/// type itself.
fn added_field_type(
    ks: &KeyspaceDef,
    (ks_name, name): (&str, &str),
    qualified: &str,
    field: &str,
    ty: &TypeExpr,
) -> Result<CqlType, CqlError> {
    let t = resolve_field(&ks.types, ks_name, ty)?;
    if references_duration(&t) {
        for table in ks.tables.values() {
            for c in table.clustering_key() {
                if references_udt(&c.typ, ks_name, name) {
                    return Err(CqlError::invalid(format!(
                        "Cannot add new field to type {qualified} because it is used \
                         in the clustering key column {} of table {ks_name}.{} where \
                         durations are not allowed",
                        c.name, table.name
                    )));
                }
            }
        }
    }
    if references_udt(&t, ks_name, name) {
        return Err(CqlError::invalid(format!(
            "Cannot add new field {field} of type {ty} to type {qualified} as this \
             would create a circular reference"
        )));
    }
    Ok(t)
}

/// The events of an `ALTER TYPE` of `name`: the type, then every table with a column that
/// uses it.
fn alter_events(ks: &KeyspaceDef, ks_name: &str, name: &str) -> Vec<SchemaChange> {
    // Scylla rewrites every table with a column that uses the type
    // (`alter_type_statement::prepare_announcement_mutations`), and with each base that has
    // CDC enabled its log (`on_before_update_column_family`, cdc/log.cc); the merge
    // announces the type, then those tables, CDC logs last (db/schema_applier.cc).
    let uses_type = |t: &TableDef| {
        t.columns
            .iter()
            .any(|c| references_udt(&c.typ, ks_name, name))
    };
    let altered: BTreeMap<&str, &TableDef> = ks
        .tables
        .values()
        .filter(|t| uses_type(t))
        .flat_map(|t| {
            let log = (t.options.cdc_enabled() && !t.is_cdc_log())
                .then(|| ks.cdc_log_of(&t.name))
                .flatten();
            std::iter::once(&**t).chain(log.map(|l| &**l))
        })
        .map(|t| (t.name.as_str(), t))
        .collect();
    let mut events = vec![SchemaChange {
        change: SchemaChangeType::Updated,
        target: target(ks_name, name),
    }];
    events.extend(table_events(
        SchemaChangeType::Updated,
        altered.into_values(),
    ));
    events
}

/// `DROP TYPE [IF EXISTS] [ks.]name`: refused while a type or a table uses it.
pub(super) fn drop(
    schema: &Schema,
    stmt: &DropType,
    ctx: &DdlContext<'_>,
) -> Result<DdlOutcome, CqlError> {
    let ks_name = keyspace_of(&stmt.name, ctx)?;
    let name = &stmt.name.name;
    check_access(&ks_name, None, Permission::Drop)?;
    let Some(ks) = schema.keyspace(&ks_name) else {
        return Err(CqlError::invalid(format!(
            "Cannot drop type in unknown keyspace {ks_name}"
        )));
    };
    if !ks.types.contains_key(name) {
        if stmt.if_exists {
            return Ok(DdlOutcome::unchanged(None));
        }
        return Err(CqlError::invalid(format!(
            "No user type named {ks_name}.{name} exists."
        )));
    }
    for other in ks.types.values().filter(|t| t.name != *name) {
        if other
            .fields
            .iter()
            .any(|(_, f)| references_udt(f, &ks_name, name))
        {
            return Err(CqlError::invalid(format!(
                "Cannot drop user type {ks_name}.{name} as it is still used by user type {}",
                other.name
            )));
        }
    }
    for table in ks.tables.values() {
        if table
            .columns
            .iter()
            .any(|c| references_udt(&c.typ, &ks_name, name))
        {
            return Err(CqlError::invalid(format!(
                "Cannot drop user type {ks_name}.{name} as it is still used by table \
                 {ks_name}.{}",
                table.name
            )));
        }
    }
    let mut next = schema.clone();
    if let Some(ks) = next.keyspaces.get_mut(&ks_name) {
        ks.types.remove(name);
    }
    Ok(DdlOutcome::applied(
        next,
        SchemaChangeType::Dropped,
        target(&ks_name, name),
        Vec::new(),
    ))
}
