//! The [`Binder`] that every planner fills: it collects the receiver (name and type) of
//! every bind marker while terms are planned, and which markers bind the partition key by
//! `=`. With it, the name lookups every planner makes: [`resolve_table`] and
//! [`column_index`], with Scylla's errors.

use std::sync::Arc;

use crate::cql::{BindMarker, QualifiedName};
use crate::frame::{ColumnSpec, CqlError};
use crate::schema::{Schema, TableDef};
use crate::types::CqlType;

/// Collects bind-variable receivers while a statement is planned.
#[derive(Debug, Clone)]
pub(crate) struct Binder {
    /// The snapshot being planned against (for UDT lookups in casts).
    pub(crate) schema: Arc<Schema>,
    /// Keyspace of the statement's table.
    pub(crate) keyspace: String,
    /// The statement's table.
    pub(crate) table: String,
    /// One entry per marker, by index.
    specs: Vec<Option<ColumnSpec>>,
    /// For the first table's partition-key columns: the marker binding each by `=`.
    pub(crate) pk_markers: Vec<Option<usize>>,
    /// Whether `pk_markers` has been set (only the first statement of a batch counts).
    pk_set: bool,
}

impl Binder {
    /// A binder for a statement with `count` markers.
    pub(crate) fn new(schema: Arc<Schema>, count: usize) -> Binder {
        Binder {
            schema,
            keyspace: String::new(),
            table: String::new(),
            specs: vec![None; count],
            pk_markers: Vec::new(),
            pk_set: false,
        }
    }

    /// Sets the table that the next markers belong to.
    pub(crate) fn set_table(&mut self, table: &TableDef) {
        self.keyspace = table.keyspace.clone();
        self.table = table.name.clone();
    }

    /// Records the receiver of a marker (`:name` markers keep their own name).
    pub(crate) fn bind(&mut self, m: &BindMarker, name: &str, typ: &CqlType) {
        let spec = ColumnSpec::new(
            self.keyspace.clone(),
            self.table.clone(),
            m.name.clone().unwrap_or_else(|| name.to_string()),
            typ.clone(),
        );
        if let Some(slot) = self.specs.get_mut(m.index) {
            *slot = Some(spec);
        }
    }

    /// Records the receiver of a marker as given (a receiver outside the statement's table,
    /// like `INSERT JSON ?`'s); a `:name` marker keeps its own name.
    pub(crate) fn bind_spec(&mut self, m: &BindMarker, mut spec: ColumnSpec) {
        if let Some(name) = &m.name {
            spec.name = name.clone();
        }
        if let Some(slot) = self.specs.get_mut(m.index) {
            *slot = Some(spec);
        }
    }

    /// Number of markers of the statement.
    pub(crate) fn count(&self) -> usize {
        self.specs.len()
    }

    /// Records which markers bind each partition-key column by `=` (first call wins).
    pub(crate) fn set_pk_markers(&mut self, markers: Vec<Option<usize>>) {
        if !self.pk_set {
            self.pk_set = true;
            self.pk_markers = markers;
        }
    }

    /// The variables in marker order.
    pub(super) fn finish(self) -> Result<(Vec<ColumnSpec>, Vec<u16>), CqlError> {
        let mut vars = Vec::with_capacity(self.specs.len());
        for (i, s) in self.specs.into_iter().enumerate() {
            vars.push(s.ok_or_else(|| {
                CqlError::invalid(format!("Bind marker {i} is not allowed at this position"))
            })?);
        }
        let pk_indexes =
            if !self.pk_markers.is_empty() && self.pk_markers.iter().all(Option::is_some) {
                self.pk_markers
                    .iter()
                    .filter_map(|m| m.and_then(|i| u16::try_from(i).ok()))
                    .collect()
            } else {
                Vec::new()
            };
        Ok((vars, pk_indexes))
    }
}

/// Looks a table up, with the errors Scylla gives.
pub(crate) fn resolve_table(
    schema: &Schema,
    keyspace: Option<&str>,
    name: &QualifiedName,
) -> Result<Arc<TableDef>, CqlError> {
    let ks = match name.keyspace.as_deref().or(keyspace) {
        Some(ks) => ks,
        None => {
            return Err(CqlError::invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
            ));
        }
    };
    let kdef = schema
        .keyspace(ks)
        .ok_or_else(|| CqlError::invalid(format!("Keyspace {ks} does not exist")))?;
    kdef.tables
        .get(&name.name)
        .cloned()
        .ok_or_else(|| CqlError::invalid(format!("unconfigured table {}", name.name)))
}

/// The index in `table.columns` of a named column, or Scylla's error.
pub(crate) fn column_index(table: &TableDef, name: &str) -> Result<usize, CqlError> {
    table
        .column_index(name)
        .ok_or_else(|| CqlError::invalid(format!("Undefined column name {name}")))
}
