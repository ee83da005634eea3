//! Planning: a parsed [`Statement`] resolved against one schema snapshot into a [`Planned`]
//! statement (the [`Plan`] the executor runs, plus the PREPARED metadata: bind variables,
//! partition-key indexes, LWT flag, result columns).
//!
//! [`plan_statement`] dispatches a statement to its planner ([`select`], [`modify`],
//! [`batch`]) with a fresh [`Binder`], which every planner fills.

use std::sync::Arc;

use uuid::Uuid;

use crate::cql::{Describe, Statement};
use crate::frame::{CqlError, PreparedMetadata, ResultMetadata};
use crate::schema::Schema;

use super::batch::{self, BatchPlan};
use super::binder::Binder;
use super::modify::{self, ModifyPlan};
use super::select::{self, SelectPlan};

/// What executing a statement does.
#[derive(Debug)]
pub(crate) enum Plan {
    /// A SELECT.
    Select(Box<SelectPlan>),
    /// An INSERT, UPDATE or DELETE.
    Modify(Box<ModifyPlan>),
    /// A BATCH.
    Batch(Box<BatchPlan>),
    /// `USE ks` (canonical name).
    Use(String),
    /// A DDL statement, run by `ddl::execute_ddl` at every execution.
    Ddl(Box<Statement>),
    /// A DESCRIBE statement, answered from the schema at every execution.
    Describe(Box<Describe>),
}

/// A statement planned against one schema version.
#[derive(Debug)]
pub(crate) struct Planned {
    /// What to run.
    pub(crate) plan: Plan,
    /// The schema version planned against.
    pub(crate) schema_version: Uuid,
    /// Bind variables, pk indexes and LWT flag.
    pub(crate) metadata: PreparedMetadata,
    /// Result columns of a SELECT.
    pub(crate) result: Option<Arc<ResultMetadata>>,
}

/// Plans a statement for a connection whose keyspace is `keyspace`.
pub(crate) fn plan_statement(
    schema: &Arc<Schema>,
    keyspace: Option<&str>,
    stmt: &Statement,
) -> Result<Planned, CqlError> {
    let count = stmt.bind_count();
    let mut binder = Binder::new(schema.clone(), count);
    let mut lwt = false;
    let mut result = None;
    let plan = match stmt {
        Statement::Select(s) => {
            let p = select::plan_select(schema, keyspace, s, &mut binder)?;
            result = Some(p.result.clone());
            Plan::Select(Box::new(p))
        }
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
            let p = modify::plan_modify(schema, keyspace, stmt, &mut binder)?;
            lwt = p.is_conditional();
            Plan::Modify(Box::new(p))
        }
        Statement::Batch(b) => {
            let p = batch::plan_batch(schema, keyspace, b, &mut binder)?;
            lwt = p.is_conditional();
            Plan::Batch(Box::new(p))
        }
        Statement::Use { keyspace: ks } => {
            let def = schema
                .keyspace(ks)
                .ok_or_else(|| CqlError::invalid(format!("Keyspace '{ks}' does not exist")))?;
            Plan::Use(def.name.clone())
        }
        Statement::Describe(d) => {
            result = Some(Arc::new(super::describe::result_metadata(d)));
            Plan::Describe(Box::new(d.clone()))
        }
        Statement::Unsupported { what } => {
            return Err(CqlError::invalid(format!(
                "{what} statements are not supported by the embedded cluster"
            )));
        }
        other => Plan::Ddl(Box::new(other.clone())),
    };
    let (variables, pk_indexes) = binder.finish()?;
    Ok(Planned {
        plan,
        schema_version: schema.version,
        metadata: PreparedMetadata {
            lwt,
            pk_indexes,
            variables,
        },
        result,
    })
}
