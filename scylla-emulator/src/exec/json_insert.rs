//! The document of an `INSERT JSON` at execution: [`JsonInsert`] holds what planning
//! decided (the JSON source, every column of the table and the synthetic bind markers its
//! values fill, planned with the INSERT by `modify`) and binds a request's document to those
//! markers, with ScyllaDB's checks in its order (see [`super::json`] for the conversions and
//! the errors they become).

use crate::frame::{BoundValue, CqlError};
use crate::schema::ColumnKind;
use crate::types::CqlType;
use crate::types::json::{self as jt, Json};
use crate::types::value::Value;

use super::json::{ConvError, from_json};
use super::values::{Bound, EvalCtx, Expr};

/// Where a column of the table gets its value in an `INSERT JSON`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct JsonColumn {
    /// The column's name (case preserved).
    pub(super) name: String,
    /// Its type.
    pub(super) typ: CqlType,
    /// Its role.
    pub(super) kind: ColumnKind,
    /// Its position in the partition or clustering key.
    pub(super) position: i32,
    /// The synthetic marker its value is bound to (keys and regular columns).
    pub(super) slot: Option<usize>,
}

/// A planned `INSERT JSON`: the document and the synthetic markers its values fill.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonInsert {
    /// The JSON text: a constant or the statement's marker.
    pub(super) source: Expr,
    /// Every column of the table, in table order.
    pub(super) columns: Vec<JsonColumn>,
    /// Number of the statement's own markers (the synthetic ones follow).
    pub(super) base: usize,
    /// Number of synthetic markers.
    pub(super) slots: usize,
    /// `DEFAULT UNSET`
    pub(super) default_unset: bool,
}

impl JsonInsert {
    /// The statement's values followed by the document's values of its synthetic markers,
    /// with ScyllaDB's checks in its order: the document parses as an object of known columns
    /// whose values convert (server errors otherwise, but for unknown columns), then the
    /// partition key and the clustering key are present and not null, then no counter column
    /// is written.
    pub(super) fn bind(&self, values: &[BoundValue]) -> Result<Vec<BoundValue>, CqlError> {
        let text = match self.source.eval(&EvalCtx { values })? {
            Bound::Value(v) => v.as_str().unwrap_or("").to_string(),
            // ScyllaDB reads the null (or unset) value's bytes without checking: a failed
            // `std::get` on the value's variant.
            Bound::Null | Bound::Unset => {
                return Err(CqlError::server("std::get: wrong index for variant"));
            }
        };
        let doc = jt::parse(&text).map_err(|e| CqlError::server(e.message()))?;
        let Json::Object(members) = doc else {
            return Err(CqlError::server(
                "JSON assert failed on condition 'IsObject()'",
            ));
        };
        // A name in double quotes is case-sensitive, any other is lower-cased; of two equal
        // names the first counts.
        let mut named: Vec<(String, Json)> = Vec::with_capacity(members.len());
        for (name, v) in members {
            let key = if name.len() > 1 && name.starts_with('"') && name.ends_with('"') {
                name[1..name.len() - 1].to_string()
            } else {
                name.to_ascii_lowercase()
            };
            if !named.iter().any(|(k, _)| *k == key) {
                named.push((key, v));
            }
        }
        let mut found: Vec<Option<Option<Value>>> = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let v = match named.iter().position(|(k, _)| *k == c.name) {
                None => None,
                Some(i) => {
                    let (_, j) = named.remove(i);
                    Some(match j {
                        Json::Null => None,
                        j => Some(from_json(&c.typ, &j).map_err(ConvError::into_statement_error)?),
                    })
                }
            };
            found.push(v);
        }
        if let Some((name, _)) = named.first() {
            return Err(CqlError::invalid(format!(
                "JSON values map contains unrecognized column: {name}"
            )));
        }
        for kind in [ColumnKind::PartitionKey, ColumnKind::Clustering] {
            let mut key: Vec<(&JsonColumn, bool)> = self
                .columns
                .iter()
                .zip(&found)
                .filter(|(c, _)| c.kind == kind)
                .map(|(c, v)| (c, matches!(v, Some(Some(_)))))
                .collect();
            key.sort_by_key(|(c, _)| c.position);
            if let Some((c, _)) = key.iter().find(|(_, present)| !present) {
                return Err(CqlError::invalid(format!(
                    "Missing mandatory PRIMARY KEY part {}",
                    c.name
                )));
            }
        }
        if let Some(c) = self
            .columns
            .iter()
            .find(|c| c.kind == ColumnKind::Regular && c.typ.is_counter())
        {
            return Err(CqlError::invalid(format!(
                "Cannot set the value of counter column {} in JSON",
                c.name
            )));
        }
        let mut out = Vec::with_capacity(self.base + self.slots);
        out.extend_from_slice(values);
        out.resize(self.base + self.slots, BoundValue::Unset);
        for (c, v) in self.columns.iter().zip(found) {
            let Some(slot) = c.slot else { continue };
            out[self.base + slot] = match v {
                Some(Some(v)) => BoundValue::Value(v.to_bytes()),
                Some(None) => BoundValue::Null,
                None if self.default_unset => BoundValue::Unset,
                None => BoundValue::Null,
            };
        }
        Ok(out)
    }
}
