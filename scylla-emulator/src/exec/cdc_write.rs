//! The CDC side of the write path, and the cluster's CDC metadata.
//!
//! A write to a CDC-enabled table is planned with [`Database::cdc_write`] before anything is
//! applied: the log table, and for every base partition mutation its stream, chosen by the
//! partition's token and the write's timestamp (vnode generation or tablet stream set) —
//! which is also where Scylla's admission rules reject writes from the future or the past.
//! [`Database::apply_with_log`] then applies each base mutation under the base table's lock
//! together with its log rows ([`crate::cdc::log::log_mutation`], computed from the
//! partition's state before the write), taking the log table's lock second (lock order
//! base → log everywhere). A multi-mutation write uses [`Database::apply_base_logged`]
//! instead and applies all the log rows at once with [`CdcWrite::apply_log`] after releasing
//! the base table's lock, so that the next write's base work overlaps with it.
//!
//! Generations are created here too: [`Database::new_vnode_generation`] (cluster start, node
//! joins) publishes a generation in `system_distributed` (stream descriptions first, then
//! the timestamp row, as Scylla does), and tablet stream sets are created with a CDC log in a
//! tablet keyspace and renewed by [`Database::split_tablets`].

use parking_lot::RwLockReadGuard;

use super::Database;
use super::cdc_state::CdcWrite;
use super::system_tables::Rows;
use crate::cdc::generations::CdcState;
use crate::cdc::log::{LogContext, ResolvedColumns, log_mutation, log_mutation_resolved};
use crate::cdc::streams::VnodeGeneration;
use crate::cluster::Topology;
use crate::frame::CqlError;
use crate::schema::system::{
    CDC_GENERATION_TIMESTAMPS, CDC_STREAMS_DESCRIPTIONS_V2, SYSTEM_DISTRIBUTED,
};
use crate::schema::{Schema, TableDef};
use crate::storage::{CellUpdate, Now, PartitionMutation, RowUpdate, TableData};
use crate::types::value::Value;

/// Generations and stream sets start this long before "now" when a table's first stream set
/// is created (Scylla dates a tablet table's initial set `now - 5 s`).
const INITIAL_SET_LEAD_MS: i64 = 5_000;

/// The earliest and latest timestamp of anything a mutation writes (a collection tombstone
/// counts at its timestamp + 1, where CDC logs it).
fn timestamp_bounds(m: &PartitionMutation) -> Option<(i64, i64)> {
    let mut bounds: Option<(i64, i64)> = None;
    let mut see = |ts: i64| {
        bounds = Some(match bounds {
            None => (ts, ts),
            Some((lo, hi)) => (lo.min(ts), hi.max(ts)),
        });
    };
    let row = |r: &RowUpdate, see: &mut dyn FnMut(i64)| {
        if let Some(marker) = &r.marker {
            see(marker.ts);
        }
        if let Some(ts) = r.deletion {
            see(ts);
        }
        for (_, cell) in &r.cells {
            match cell {
                CellUpdate::Atomic { ts, .. } | CellUpdate::CounterDelta { ts, .. } => see(*ts),
                CellUpdate::Collection {
                    tombstone,
                    elements,
                } => {
                    if let Some(ts) = tombstone {
                        see(ts.saturating_add(1));
                    }
                    for e in elements {
                        see(e.ts);
                    }
                }
            }
        }
    };
    if let Some(ts) = m.partition_tombstone {
        see(ts);
    }
    if let Some(r) = &m.static_row {
        row(r, &mut see);
    }
    for (_, r) in &m.rows {
        row(r, &mut see);
    }
    for rt in &m.range_tombstones {
        see(rt.ts);
    }
    bounds
}

impl Database {
    /// The CDC metadata (generations and tablet stream sets).
    pub(crate) fn cdc_state(&self) -> RwLockReadGuard<'_, CdcState> {
        self.cdc.state.read()
    }

    /// Plans the CDC side of writing `mutations` to `table`: `None` when the table does not
    /// log; otherwise its log and each mutation's stream. Fails (before anything is written)
    /// when a write's timestamp is not admitted (semantics §5.6).
    ///
    /// All the log rows of one base mutation go to the stream of its earliest timestamp.
    /// Scylla picks the stream per timestamp; the two differ only for a batch whose
    /// `USING TIMESTAMP`s straddle a generation switch, and both timestamps are checked for
    /// admission.
    pub(crate) fn cdc_write(
        &self,
        schema: &Schema,
        table: &TableDef,
        mutations: &[PartitionMutation],
    ) -> Result<Option<CdcWrite>, CqlError> {
        let Some(options) = table.options.cdc.as_ref().filter(|c| c.enabled) else {
            return Ok(None);
        };
        let Some(log) = schema.cdc_log_of(table).cloned() else {
            return Ok(None);
        };
        let store = self.store_of(&log)?;
        let tablets = schema
            .keyspace(&table.keyspace)
            .is_some_and(|k| k.uses_tablets());
        let now = self.clock.now_micros();
        let state = self.cdc.state.read();
        let stream_at = |ts: i64, token: i64| {
            if tablets {
                state.tablet_stream(table.id, ts, token, now)
            } else {
                state.vnode_stream(ts, token, now)
            }
        };
        let mut streams = Vec::with_capacity(mutations.len());
        for m in mutations {
            let (first, last) = timestamp_bounds(m).unwrap_or((now, now));
            if last != first {
                stream_at(last, m.key.token)?;
            }
            streams.push(stream_at(first, m.key.token)?);
        }
        Ok(Some(CdcWrite {
            log,
            store,
            options: options.clone(),
            streams,
        }))
    }

    /// Applies base mutation number `index` of a planned write (and its log rows, when the
    /// table logs) with the base table's lock held.
    pub(crate) fn apply_with_log(
        &self,
        base: &TableDef,
        data: &mut TableData,
        m: &PartitionMutation,
        cdc: Option<(&CdcWrite, usize)>,
        now: Now,
    ) {
        let log_rows = cdc.and_then(|(w, index)| {
            let ctx = LogContext {
                base,
                log: &w.log,
                options: &w.options,
                stream: *w.streams.get(index)?,
            };
            log_mutation(&ctx, data.partition(m.key.token, &m.key.bytes, now), m, now)
        });
        // The base row and its views (`view`).
        self.apply_base(base, data, m, now);
        if let (Some(rows), Some((w, _))) = (log_rows, cdc) {
            w.apply_log(std::slice::from_ref(&rows), now);
        }
    }

    /// Applies base mutation number `index` of a planned write with the base table's lock
    /// held, and returns its log rows (computed from the partition's state before the write)
    /// for the caller to apply with [`CdcWrite::apply_log`] — possibly later, after releasing
    /// the base table's lock, together with the log rows of other mutations. `columns` are
    /// the log columns of `base`, resolved once for the whole write.
    pub(crate) fn apply_base_logged(
        &self,
        base: &TableDef,
        data: &mut TableData,
        m: &PartitionMutation,
        (w, index, columns): (&CdcWrite, usize, &ResolvedColumns<'_>),
        now: Now,
    ) -> Option<PartitionMutation> {
        let ctx = LogContext {
            base,
            log: &w.log,
            options: &w.options,
            stream: *w.streams.get(index)?,
        };
        let log_rows = log_mutation_resolved(
            &ctx,
            columns,
            data.partition(m.key.token, &m.key.bytes, now),
            m,
            now,
        );
        // The base row and its views (`view`).
        self.apply_base(base, data, m, now);
        log_rows
    }

    /// Creates a vnode generation for `topology` operating from `timestamp_ms` and publishes
    /// it in `system_distributed`: every `cdc_streams_descriptions_v2` row first, then the
    /// `cdc_generation_timestamps` row (a reader only looks for streams after seeing the
    /// timestamp).
    pub(crate) fn new_vnode_generation(
        &self,
        topology: &Topology,
        ignore_msb: u32,
        timestamp_ms: i64,
    ) -> Result<(), CqlError> {
        let shards: Vec<u32> = topology.nodes.iter().map(|n| n.shards).collect();
        let generation = {
            let mut rng = self.cdc.rng.lock();
            VnodeGeneration::build(timestamp_ms, &topology.ring, &shards, ignore_msb, &mut *rng)
        };
        let schema = self.schema();
        let table = |name: &str| {
            schema
                .table(SYSTEM_DISTRIBUTED, name)
                .cloned()
                .ok_or_else(|| CqlError::server(format!("{SYSTEM_DISTRIBUTED}.{name} is missing")))
        };
        let descriptions = table(CDC_STREAMS_DESCRIPTIONS_V2)?;
        let timestamps = table(CDC_GENERATION_TIMESTAMPS)?;
        let write_ts = self.next_timestamp();
        let mut rows = Rows::at(&descriptions, write_ts);
        for entry in &generation.entries {
            let streams = entry.streams.iter().map(|s| Value::blob(s.0)).collect();
            rows.add(vec![
                ("time", Some(Value::Timestamp(timestamp_ms))),
                ("range_end", Some(Value::Bigint(entry.range_end))),
                ("streams", Some(Value::set(streams))),
            ]);
        }
        self.write(&descriptions, rows.finish())?;
        let mut row = Rows::at(&timestamps, write_ts);
        row.add(vec![
            ("key", Some(Value::text("timestamps"))),
            ("time", Some(Value::Timestamp(timestamp_ms))),
        ]);
        self.cdc.state.write().add_vnode_generation(generation);
        self.write(&timestamps, row.finish())
    }

    /// Creates the first stream set of a CDC table in a tablet keyspace (when its log is
    /// created), dated 5 s before now as Scylla does.
    pub(crate) fn create_tablet_streams(&self, base: &TableDef, tablets: u32) {
        let ts = self.clock.now_micros().div_euclid(1000) - INITIAL_SET_LEAD_MS;
        let mut rng = self.cdc.rng.lock();
        self.cdc.state.write().create_tablet_streams(
            base.id,
            u64::from(tablets.max(1)),
            ts,
            &mut *rng,
        );
    }

    /// Forgets the stream sets of a dropped table.
    pub(crate) fn drop_tablet_streams(&self, table: uuid::Uuid) {
        self.cdc.state.write().drop_table(table);
    }

    /// Splits every tablet of `keyspace.table` in two: a new stream set operating from
    /// `timestamp_ms`. Returns the set's timestamp.
    pub(crate) fn split_tablets(
        &self,
        keyspace: &str,
        table: &str,
        timestamp_ms: i64,
    ) -> Result<i64, String> {
        let schema = self.schema();
        let ks = schema
            .keyspace(keyspace)
            .ok_or_else(|| format!("keyspace {keyspace} does not exist"))?;
        if !ks.uses_tablets() {
            return Err(format!("keyspace {keyspace} does not use tablets"));
        }
        let base = ks
            .tables
            .get(table)
            .ok_or_else(|| format!("table {keyspace}.{table} does not exist"))?;
        let mut rng = self.cdc.rng.lock();
        self.cdc
            .state
            .write()
            .split_tablets(base.id, timestamp_ms, &mut *rng)
            .ok_or_else(|| format!("table {keyspace}.{table} has no CDC log"))
    }
}
