//! The checks every DDL statement makes: the keyspace of a possibly unqualified name, valid
//! names, Scylla's access rules for schema changes ([`check_access`]), and the errors of
//! missing keyspaces and tables.

use crate::cql::QualifiedName;
use crate::frame::{CqlError, ErrorKind};
use crate::schema::system::{SYSTEM, SYSTEM_DISTRIBUTED, SYSTEM_SCHEMA, SYSTEM_TRACES};

use super::outcome::DdlContext;

/// The keyspace of a possibly unqualified name.
pub(super) fn keyspace_of(name: &QualifiedName, ctx: &DdlContext<'_>) -> Result<String, CqlError> {
    match (&name.keyspace, ctx.keyspace) {
        (Some(ks), _) => Ok(ks.clone()),
        (None, Some(ks)) => Ok(ks.to_string()),
        (None, None) => Err(CqlError::invalid(
            "No keyspace has been specified. USE a keyspace, or explicitly specify \
             keyspace.tablename",
        )),
    }
}

/// The keyspaces users can never change (`system`, `system_schema`).
pub(super) fn is_system_keyspace(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == SYSTEM || lower == SYSTEM_SCHEMA
}

/// A schema-altering permission, as Scylla names it in its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Permission {
    /// `CREATE`
    Create,
    /// `ALTER`
    Alter,
    /// `DROP`
    Drop,
}

impl Permission {
    /// The permission's name.
    fn as_str(self) -> &'static str {
        match self {
            Permission::Create => "CREATE",
            Permission::Alter => "ALTER",
            Permission::Drop => "DROP",
        }
    }
}

/// The CDC generation tables users may read and write but never alter or drop.
pub(super) const PROTECTED_CDC_TABLES: [&str; 2] = [
    crate::schema::system::CDC_STREAMS_DESCRIPTIONS_V2,
    crate::schema::system::CDC_GENERATION_TIMESTAMPS,
];

/// Scylla's access check for a schema change of keyspace `ks` (or of its table `table`):
/// `system` and `system_schema` are not user-modifiable, nothing in `system_traces` can be
/// dropped, and the CDC generation tables of `system_distributed` cannot be altered or
/// dropped. The embedded cluster also refuses to drop `system_distributed` itself, which
/// the CDC machinery needs.
pub(super) fn check_access(
    ks: &str,
    table: Option<&str>,
    permission: Permission,
) -> Result<(), CqlError> {
    let unauthorized = |m: String| CqlError::new(ErrorKind::Unauthorized, m);
    if is_system_keyspace(ks) {
        return Err(unauthorized(format!(
            "{ks} keyspace is not user-modifiable."
        )));
    }
    let lower = ks.to_ascii_lowercase();
    let resource = match table {
        Some(t) => format!("<table {ks}.{t}>"),
        None => format!("<keyspace {ks}>"),
    };
    let denied = match permission {
        Permission::Drop => {
            lower == SYSTEM_TRACES
                || (lower == SYSTEM_DISTRIBUTED
                    && table.is_none_or(|t| PROTECTED_CDC_TABLES.contains(&t)))
        }
        Permission::Alter => {
            lower == SYSTEM_DISTRIBUTED && table.is_some_and(|t| PROTECTED_CDC_TABLES.contains(&t))
        }
        Permission::Create => false,
    };
    if denied {
        return Err(unauthorized(format!(
            "Cannot {} {resource}",
            permission.as_str()
        )));
    }
    Ok(())
}

/// Whether `name` is a valid keyspace or table name (`\w+`).
pub(super) fn is_word(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Longest keyspace or table name Scylla accepts.
pub(super) const NAME_LENGTH: usize = 48;

/// `Keyspace x does not exist` (Invalid).
pub(super) fn no_keyspace(ks: &str) -> CqlError {
    CqlError::invalid(format!("Keyspace {ks} does not exist"))
}

/// `unconfigured table t` (Invalid).
pub(super) fn no_table(table: &str) -> CqlError {
    CqlError::invalid(format!("unconfigured table {table}"))
}
