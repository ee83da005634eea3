//! The CDC state the database keeps ([`CdcCell`]: generations and stream sets, and the
//! random source of stream ids) and what one write to a CDC-enabled table adds
//! ([`CdcWrite`]: its log table and each base mutation's stream). `cdc_write` plans and
//! applies them on the write path.

use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::cdc::generations::CdcState;
use crate::cdc::log::ResolvedColumns;
use crate::cdc::streams::StreamId;
use crate::schema::{CdcOptions, TableDef};
use crate::storage::{Now, PartitionMutation, TableStore};

/// What writing to a CDC-enabled table adds: its log table and each base mutation's stream.
pub(crate) struct CdcWrite {
    pub(super) log: Arc<TableDef>,
    pub(super) store: Arc<TableStore>,
    pub(super) options: CdcOptions,
    pub(super) streams: Vec<StreamId>,
}

impl CdcWrite {
    /// The log columns of `base` (the table this write logs), for
    /// `Database::apply_base_logged`.
    pub(crate) fn resolve_columns<'t>(&self, base: &'t TableDef) -> ResolvedColumns<'t> {
        ResolvedColumns::new(base, &self.log)
    }

    /// Applies log mutations to the log table, under its lock (taken once).
    pub(crate) fn apply_log(&self, rows: &[PartitionMutation], now: Now) {
        if rows.is_empty() {
            return;
        }
        let mut log = self.store.data.write();
        for r in rows {
            log.apply(r, now);
        }
    }
}

/// The CDC state and the random source of stream ids.
pub(crate) struct CdcCell {
    pub(super) state: parking_lot::RwLock<CdcState>,
    pub(super) rng: parking_lot::Mutex<StdRng>,
}

impl CdcCell {
    /// Empty state; stream ids drawn from `seed` when given.
    pub(crate) fn new(seed: Option<u64>) -> CdcCell {
        CdcCell {
            state: parking_lot::RwLock::new(CdcState::default()),
            rng: parking_lot::Mutex::new(match seed {
                Some(s) => StdRng::seed_from_u64(s ^ 0x5eed_cdc0),
                None => StdRng::from_entropy(),
            }),
        }
    }
}
