//! The fast path behind [`crate::Preload`]: filling a CDC table with single-row INSERTs
//! without a client.
//!
//! [`Database::preload`] creates the keyspace (when missing) and the table through the DDL
//! executor, plans `INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)` once, and then, on a few
//! threads that share the partitions, binds each row's values, builds its mutation with the
//! INSERT plan at the next server timestamp and hands chunks of mutations to
//! [`Database::write`] — the write path of every CQL write, CDC log rows included. Only the
//! network, the frame codec and per-request planning are skipped; chunking amortises the
//! table locks and the CDC stream lookup, and each mutation still gets its own log rows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;

use super::plan::Plan;
use super::values::EvalCtx;
use super::{ConnState, Database, Outcome, modify};
use crate::cluster::preload::{Preload, PreloadProgress};
use crate::frame::{BoundValue, CqlError};

/// Mutations handed to [`Database::write`] at once.
const CHUNK_ROWS: usize = 512;

/// Worker threads at most (the table locks serialise the rest).
const MAX_THREADS: usize = 4;

/// Interval between two progress reports.
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// The value of `v` in row number `n`: 8 big-endian bytes.
pub(crate) fn preload_value(n: u64) -> [u8; 8] {
    n.to_be_bytes()
}

impl Database {
    /// Runs a DDL statement given as CQL text, as a client on node 1 would.
    fn ddl_internal(&self, cql: &str) -> Result<(), CqlError> {
        let cached = self.parse_and_plan(None, cql)?;
        let planned = self.planned(&cached)?;
        let Plan::Ddl(stmt) = &planned.plan else {
            return Err(CqlError::server(format!("not a DDL statement: {cql}")));
        };
        self.run_ddl(stmt, &ConnState::new(1, 0), &mut Outcome::default())?;
        Ok(())
    }

    /// Creates and fills a preloaded table (see [`crate::Preload`]); returns the rows
    /// written.
    pub(crate) fn preload(&self, spec: &Preload) -> Result<u64, CqlError> {
        spec.validate()
            .map_err(|e| CqlError::invalid(e.to_string()))?;
        let (ks, table) = (spec.keyspace(), spec.table());
        self.ddl_internal(&format!(
            "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
             {{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}}"
        ))?;
        self.ddl_internal(&format!(
            "CREATE TABLE {ks}.{table} (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck)) \
             WITH cdc = {{'enabled': true, 'preimage': {}, 'postimage': {}}}",
            spec.preimage_enabled(),
            spec.postimage_enabled()
        ))?;
        let insert = self.parse_and_plan(
            None,
            &format!("INSERT INTO {ks}.{table} (pk, ck, v) VALUES (?, ?, ?)"),
        )?;
        let planned = self.planned(&insert)?;
        let Plan::Modify(plan) = &planned.plan else {
            return Err(CqlError::server(
                "the preload INSERT did not plan as a write",
            ));
        };
        let (partitions, rows) = (spec.partitions(), spec.rows_per_partition());
        let total = spec.rows();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, MAX_THREADS)
            .min(usize::try_from(partitions).unwrap_or(usize::MAX));
        let done = AtomicU64::new(0);
        let next_partition = AtomicU64::new(0);
        let start = Instant::now();
        let last_report = Mutex::new(start);
        let report = |rows_done: u64| {
            spec.report(PreloadProgress {
                table: format!("{ks}.{table}"),
                rows_done,
                rows_total: total,
                elapsed: start.elapsed(),
            })
        };
        // Each worker takes the next partition and writes its rows in clustering order.
        let worker = || -> Result<(), CqlError> {
            let mut chunk = Vec::with_capacity(CHUNK_ROWS);
            let flush = |chunk: &mut Vec<_>| -> Result<(), CqlError> {
                let n = chunk.len() as u64;
                self.write(&plan.table, std::mem::take(chunk))?;
                let now_done = done.fetch_add(n, Ordering::Relaxed) + n;
                let mut last = last_report.lock();
                if last.elapsed() >= REPORT_EVERY {
                    *last = Instant::now();
                    drop(last);
                    report(now_done);
                }
                Ok(())
            };
            loop {
                let pk = next_partition.fetch_add(1, Ordering::Relaxed);
                if pk >= partitions {
                    break;
                }
                let pk_value =
                    BoundValue::Value(Bytes::copy_from_slice(&(pk as i64).to_be_bytes()));
                for ck in 0..rows {
                    let values = [
                        pk_value.clone(),
                        BoundValue::Value(Bytes::copy_from_slice(&(ck as i64).to_be_bytes())),
                        BoundValue::Value(Bytes::copy_from_slice(&preload_value(pk * rows + ck))),
                    ];
                    let ctx = EvalCtx { values: &values };
                    let wp = modify::write_params(plan, &ctx, self.next_timestamp())?;
                    chunk.extend(self.build(plan, &ctx, wp)?);
                    if chunk.len() >= CHUNK_ROWS {
                        flush(&mut chunk)?;
                    }
                }
            }
            if !chunk.is_empty() {
                flush(&mut chunk)?;
            }
            Ok(())
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(CqlError::server("a preload worker panicked")))
                })
                .collect::<Result<Vec<()>, CqlError>>()
        })?;
        let written = done.load(Ordering::Relaxed);
        report(written);
        Ok(written)
    }
}
