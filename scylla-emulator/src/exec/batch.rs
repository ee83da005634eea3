//! BATCH: planning of `BEGIN ... APPLY BATCH` text and the validation rules shared with the
//! BATCH opcode (counter / non-counter mixing, timestamps on both levels, conditional
//! batches on one partition of one table). Execution merges every statement's mutations
//! per (table, partition) before applying them (see `Database::run_batch`).

use std::sync::Arc;

use crate::cql::{Batch, BatchKind, BatchStatement, Statement};
use crate::frame::CqlError;
use crate::schema::Schema;
use crate::types::CqlType;

use super::binder::Binder;
use super::modify::{ModifyPlan, plan_modify};
use super::values::{Expr, plan_term};

/// A planned `BEGIN BATCH ... APPLY BATCH`.
#[derive(Debug)]
pub(crate) struct BatchPlan {
    /// `USING TIMESTAMP` of the batch.
    pub(crate) timestamp: Option<Expr>,
    /// The statements.
    pub(crate) statements: Vec<ModifyPlan>,
}

impl BatchPlan {
    /// Whether any statement has a condition.
    pub(crate) fn is_conditional(&self) -> bool {
        self.statements.iter().any(ModifyPlan::is_conditional)
    }
}

/// Plans a batch statement's text.
pub(crate) fn plan_batch(
    schema: &Arc<Schema>,
    keyspace: Option<&str>,
    b: &Batch,
    binder: &mut Binder,
) -> Result<BatchPlan, CqlError> {
    if b.using.ttl.is_some() {
        return Err(CqlError::invalid(
            "Global TTL on the BATCH statement is not supported.",
        ));
    }
    let timestamp = match &b.using.timestamp {
        Some(t) => Some(plan_term(t, &CqlType::Bigint, "[timestamp]", binder)?),
        None => None,
    };
    let mut statements = Vec::with_capacity(b.statements.len());
    for s in &b.statements {
        let stmt = match s {
            BatchStatement::Insert(i) => Statement::Insert(Box::new(i.clone())),
            BatchStatement::Update(u) => Statement::Update(Box::new(u.clone())),
            BatchStatement::Delete(d) => Statement::Delete(Box::new(d.clone())),
        };
        statements.push(plan_modify(schema, keyspace, &stmt, binder)?);
    }
    let refs: Vec<&ModifyPlan> = statements.iter().collect();
    validate_batch(b.kind, &refs, timestamp.is_some())?;
    Ok(BatchPlan {
        timestamp,
        statements,
    })
}

/// Checks the rules every batch follows, in ScyllaDB's order and words
/// (`batch_statement::validate`, cql3/statements/batch_statement.cc). A statement's own
/// `USING TIMESTAMP` is allowed in a conditional batch (only on its unconditional
/// statements: a conditional statement refuses it when it is planned).
pub(crate) fn validate_batch(
    kind: BatchKind,
    statements: &[&ModifyPlan],
    batch_timestamp: bool,
) -> Result<(), CqlError> {
    let conditional = statements.iter().any(|s| s.is_conditional());
    if batch_timestamp {
        if conditional {
            return Err(CqlError::invalid(
                "Cannot provide custom timestamp for conditional BATCH",
            ));
        }
        if kind == BatchKind::Counter {
            return Err(CqlError::invalid(
                "Cannot provide custom timestamp for counter BATCH",
            ));
        }
    }
    let counters = statements.iter().filter(|s| s.is_counter()).count();
    let has_counter = counters > 0;
    let has_non_counter = counters < statements.len();
    if batch_timestamp && has_counter {
        return Err(CqlError::invalid(
            "Cannot provide custom timestamp for a BATCH containing counters",
        ));
    }
    if batch_timestamp && statements.iter().any(|s| s.has_timestamp()) {
        return Err(CqlError::invalid(
            "Timestamp must be set either on BATCH or individual statements",
        ));
    }
    if kind == BatchKind::Counter && has_non_counter {
        return Err(CqlError::invalid(
            "Cannot include non-counter statement in a counter batch",
        ));
    }
    if kind == BatchKind::Logged && has_counter {
        return Err(CqlError::invalid(
            "Cannot include a counter statement in a logged batch",
        ));
    }
    if has_counter && has_non_counter {
        return Err(CqlError::invalid(
            "Counter and non-counter mutations cannot exist in the same batch",
        ));
    }
    if conditional {
        let first = statements.first().map(|s| s.table.id);
        if statements.iter().any(|s| Some(s.table.id) != first) {
            return Err(CqlError::invalid(
                "BATCH with conditions cannot span multiple tables",
            ));
        }
    }
    Ok(())
}
