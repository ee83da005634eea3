//! CDC generations (vnode keyspaces) and stream sets (tablet keyspaces): which stream a write
//! goes to, which writes are admitted, and what the CDC metadata tables show.
//!
//! [`CdcState`] keeps every vnode generation ever created (a [`VnodeGeneration`] operates from
//! its timestamp until the next one's) and, per CDC-enabled table of a tablet keyspace, its
//! stream sets. [`CdcState::vnode_stream`] and [`CdcState::tablet_stream`] pick the stream of
//! a base write by its token and **write timestamp** and enforce Scylla's admission rules
//! (semantics §5.6): no writes more than 5 s into the future, and for vnodes none into the
//! past before the generation operating 5 s ago.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rand::Rng;
use uuid::Uuid;

use super::streams::{StreamId, VnodeGeneration, tablet_stream_for_token, tablet_stream_set};
use crate::frame::CqlError;

/// How far into the future (and the past) a write timestamp may be, in µs.
pub(crate) const GENERATION_LEEWAY_MICROS: i64 = 5_000_000;

/// The stream sets of one CDC-enabled table in a tablet keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TabletStreams {
    /// Stream sets in timestamp order: (timestamp ms, streams sorted by token).
    pub(crate) sets: Vec<(i64, Vec<StreamId>)>,
}

impl TabletStreams {
    /// The current number of tablets (streams of the newest set).
    #[cfg(test)]
    pub(crate) fn tablet_count(&self) -> usize {
        self.sets.last().map_or(0, |(_, s)| s.len())
    }
}

/// A change of stream state in `system.cdc_streams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StreamState {
    /// Member of the set operating from the timestamp.
    Current = 0,
    /// Closed at the timestamp.
    Closed = 1,
    /// Opened at the timestamp.
    Opened = 2,
}

/// All CDC stream metadata of the cluster.
#[derive(Debug, Clone, Default)]
pub(crate) struct CdcState {
    vnode: Vec<VnodeGeneration>,
    tablets: HashMap<Uuid, TabletStreams>,
}

/// Formats µs since the epoch the way Scylla's messages show timestamps.
fn format_micros(micros: i64) -> String {
    DateTime::<Utc>::from_timestamp_micros(micros)
        .map(|t| t.format("%Y/%m/%d %H:%M:%S%.6f").to_string())
        .unwrap_or_else(|| micros.to_string())
}

impl CdcState {
    /// Adds a vnode generation (kept sorted by timestamp).
    pub(crate) fn add_vnode_generation(&mut self, generation: VnodeGeneration) {
        let i = self
            .vnode
            .partition_point(|g| g.timestamp_ms <= generation.timestamp_ms);
        self.vnode.insert(i, generation);
    }

    /// Every vnode generation, oldest first.
    #[cfg(test)]
    pub(crate) fn vnode_generations(&self) -> &[VnodeGeneration] {
        &self.vnode
    }

    /// The stream of a base write to a vnode keyspace (semantics §5.6, Scylla's
    /// `cdc::metadata::get_vnode_stream`).
    pub(crate) fn vnode_stream(
        &self,
        write_ts: i64,
        token: i64,
        now: i64,
    ) -> Result<StreamId, CqlError> {
        if write_ts > now.saturating_add(GENERATION_LEEWAY_MICROS) {
            return Err(from_the_future(write_ts, now));
        }
        let gen_start = |g: &VnodeGeneration| g.timestamp_ms.saturating_mul(1000);
        let past = now.saturating_sub(GENERATION_LEEWAY_MICROS);
        if write_ts <= past {
            // The generation that was operating `leeway` ago; the write must belong to it and
            // it must still be the current one.
            let i = self.vnode.partition_point(|g| gen_start(g) <= past);
            let operating = i.checked_sub(1).map(|i| (i, &self.vnode[i]));
            let rejected = match operating {
                None => true,
                Some((i, g)) => {
                    let superseded = self.vnode.get(i + 1).is_some_and(|n| gen_start(n) <= now);
                    write_ts < gen_start(g) || superseded
                }
            };
            if rejected {
                return Err(CqlError::invalid(format!(
                    "cdc: attempted to get a stream \"from the past\" ({}; current server time: {}). \
                     With CDC you cannot send writes with timestamps too far into the past, because \
                     that would break consistency properties.\nWe *do* allow sending writes into the \
                     near past, but our ability to do that is limited. Are you using client-side \
                     timestamps? Make sure your clocks are well-synchronized with the database's clocks.",
                    format_micros(write_ts),
                    format_micros(now)
                )));
            }
        }
        let i = self.vnode.partition_point(|g| gen_start(g) <= write_ts);
        let generation = i.checked_sub(1).map(|i| &self.vnode[i]).ok_or_else(|| {
            CqlError::server(format!(
                "cdc::metadata::get_stream: could not find any CDC stream for timestamp {}. \
                 Are we in the middle of a cluster upgrade?",
                format_micros(write_ts)
            ))
        })?;
        generation.stream_for_token(token).ok_or_else(|| {
            CqlError::server("cdc::metadata::get_stream: the generation has no streams")
        })
    }

    /// Creates the first stream set of a tablet table (at log-table creation).
    pub(crate) fn create_tablet_streams(
        &mut self,
        table: Uuid,
        tablets: u64,
        timestamp_ms: i64,
        rng: &mut impl Rng,
    ) {
        self.tablets.entry(table).or_insert_with(|| TabletStreams {
            sets: vec![(timestamp_ms, tablet_stream_set(tablets, rng))],
        });
    }

    /// Doubles a tablet table's tablets: a new stream set operating from `timestamp_ms`
    /// (at least 1 ms after the previous set). Returns the set's timestamp, or `None` when the
    /// table has no stream sets.
    pub(crate) fn split_tablets(
        &mut self,
        table: Uuid,
        timestamp_ms: i64,
        rng: &mut impl Rng,
    ) -> Option<i64> {
        let streams = self.tablets.get_mut(&table)?;
        let (last_ts, last) = streams.sets.last()?;
        let ts = timestamp_ms.max(last_ts + 1);
        let count = (last.len() as u64).saturating_mul(2).max(1);
        streams.sets.push((ts, tablet_stream_set(count, rng)));
        Some(ts)
    }

    /// Forgets a table's stream sets (DROP TABLE / DROP KEYSPACE).
    pub(crate) fn drop_table(&mut self, table: Uuid) {
        self.tablets.remove(&table);
    }

    /// Every CDC table of a tablet keyspace (by base table id) with its stream sets.
    pub(crate) fn tablet_tables(&self) -> impl Iterator<Item = (Uuid, &TabletStreams)> {
        self.tablets.iter().map(|(id, s)| (*id, s))
    }

    /// The current tablet count of a CDC table of a tablet keyspace: the size of its newest
    /// stream set (one stream per tablet).
    pub(crate) fn tablet_count(&self, table: Uuid) -> Option<u64> {
        let (_, newest) = self.tablets.get(&table)?.sets.last()?;
        u64::try_from(newest.len()).ok()
    }

    /// The stream sets of a tablet table.
    #[cfg(test)]
    pub(crate) fn tablet_streams(&self, table: Uuid) -> Option<&TabletStreams> {
        self.tablets.get(&table)
    }

    /// The stream of a base write to a tablet table (semantics §5.6, Scylla's
    /// `get_tablet_stream`): no "past" check, but nothing before the first set.
    pub(crate) fn tablet_stream(
        &self,
        table: Uuid,
        write_ts: i64,
        token: i64,
        now: i64,
    ) -> Result<StreamId, CqlError> {
        if write_ts > now.saturating_add(GENERATION_LEEWAY_MICROS) {
            return Err(from_the_future(write_ts, now));
        }
        let streams = self.tablets.get(&table).ok_or_else(|| {
            CqlError::server(format!(
                "cdc::metadata::get_stream: could not find stream metadata for table {table}."
            ))
        })?;
        let set = streams
            .sets
            .iter()
            .rev()
            .find(|(ts, _)| ts.saturating_mul(1000) <= write_ts)
            .ok_or_else(|| {
                CqlError::server(format!(
                    "cdc::metadata::get_stream: could not find any CDC streams for table {table} \
                     for timestamp {write_ts}."
                ))
            })?;
        tablet_stream_for_token(&set.1, token).ok_or_else(|| {
            CqlError::server(format!(
                "cdc::metadata::get_stream: no stream for token {token}."
            ))
        })
    }

    /// The rows of `system.cdc_streams` for a table: per set, state 0 (current) for every
    /// member, 1 for streams closed and 2 for streams opened at that timestamp (the first set
    /// opens all of its streams). Sorted by (timestamp, state, stream id).
    pub(crate) fn tablet_stream_rows(&self, table: Uuid) -> Vec<(i64, StreamState, StreamId)> {
        let Some(streams) = self.tablets.get(&table) else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        let mut previous: &[StreamId] = &[];
        for (ts, set) in &streams.sets {
            for s in set {
                rows.push((*ts, StreamState::Current, *s));
                if !previous.contains(s) {
                    rows.push((*ts, StreamState::Opened, *s));
                }
            }
            for s in previous {
                if !set.contains(s) {
                    rows.push((*ts, StreamState::Closed, *s));
                }
            }
            previous = set;
        }
        rows.sort();
        rows
    }
}

fn from_the_future(write_ts: i64, now: i64) -> CqlError {
    CqlError::invalid(format!(
        "cdc: attempted to get a stream \"from the future\" ({}; current server time: {}). \
         With CDC you cannot send writes with timestamps arbitrarily into the future, because we \
         don't know what streams will be used at that time.\nWe *do* allow sending writes into \
         the near future, but our ability to do that is limited. If you really must use your own \
         timestamps, then make sure your clocks are well-synchronized with the database's clocks.",
        format_micros(write_ts),
        format_micros(now)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::ring::{Ring, random_tokens};
    use crate::frame::ErrorKind;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const S: i64 = 1_000_000;

    fn state_with(gen_ms: &[i64]) -> CdcState {
        let mut rng = StdRng::seed_from_u64(9);
        let ring = Ring::new(&[random_tokens(&mut rng, 4, &[])]);
        let mut state = CdcState::default();
        for &ms in gen_ms {
            state.add_vnode_generation(VnodeGeneration::build(ms, &ring, &[2], 12, &mut rng));
        }
        state
    }

    #[test]
    fn writes_pick_the_generation_of_their_timestamp() {
        // Generations at t=100 s and t=200 s; now = 300 s.
        let state = state_with(&[100_000, 200_000]);
        let now = 300 * S;
        let gens = state.vnode_generations();
        let s = state.vnode_stream(now, 42, now).expect("current write");
        assert!(gens[1].all_streams().any(|x| x == s));
        // A write at 199 s is "from the past" (before the operating generation).
        let err = state.vnode_stream(199 * S, 42, now).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::Invalid));
        assert!(err.message.contains("from the past"), "{}", err.message);
        // Within the leeway it is allowed, and goes to the generation of its timestamp.
        let s = state.vnode_stream(now - 4 * S, 42, now).expect("near past");
        assert!(gens[1].all_streams().any(|x| x == s));
    }

    #[test]
    fn future_writes_are_rejected() {
        let state = state_with(&[100_000]);
        let now = 300 * S;
        assert!(state.vnode_stream(now + 5 * S, 1, now).is_ok());
        let err = state.vnode_stream(now + 5 * S + 1, 1, now).unwrap_err();
        assert!(err.message.contains("from the future"));
    }

    #[test]
    fn a_pending_generation_takes_writes_from_its_timestamp() {
        // The second generation starts 2 s in the future.
        let now = 300 * S;
        let state = state_with(&[100_000, 302_000]);
        let gens = state.vnode_generations();
        let before = state.vnode_stream(now, 7, now).expect("old generation");
        assert!(gens[0].all_streams().any(|x| x == before));
        let after = state.vnode_stream(302 * S, 7, now).expect("new generation");
        assert!(gens[1].all_streams().any(|x| x == after));
        // Just superseded (new generation started 1 s ago): writes stamped before it, but
        // within the leeway, still use the old generation.
        let now = 303 * S;
        let old = state.vnode_stream(301 * S, 7, now).expect("within leeway");
        assert!(gens[0].all_streams().any(|x| x == old));
    }

    #[test]
    fn no_generation_is_a_server_error() {
        let state = CdcState::default();
        let err = state.vnode_stream(10 * S, 1, 10 * S).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::ServerError));
        assert!(err.message.contains("could not find any CDC stream"));
    }

    #[test]
    fn tablet_sets_split_and_route_by_token() {
        let mut rng = StdRng::seed_from_u64(1);
        let table = Uuid::from_u128(5);
        let mut state = CdcState::default();
        state.create_tablet_streams(table, 2, 1_000, &mut rng);
        let ts = state.split_tablets(table, 1_000, &mut rng).expect("exists");
        assert_eq!(ts, 1_001);
        assert_eq!(
            state.tablet_streams(table).map(|t| t.tablet_count()),
            Some(4)
        );
        let now = 2 * S;
        let first = state.tablet_stream(table, S, -5, now).expect("first set");
        assert_eq!(first.token(), -1);
        let second = state
            .tablet_stream(table, 1_001_000, -5, now)
            .expect("second set");
        assert_eq!(second.token(), -1);
        assert_ne!(first, second);
        // Before the first set: server error; no "past" check otherwise.
        let err = state.tablet_stream(table, 999_999, 0, now).unwrap_err();
        assert!(matches!(err.kind, ErrorKind::ServerError));
        let rows = state.tablet_stream_rows(table);
        let count =
            |ts: i64, st: StreamState| rows.iter().filter(|(t, s, _)| *t == ts && *s == st).count();
        assert_eq!(count(1_000, StreamState::Current), 2);
        assert_eq!(count(1_000, StreamState::Opened), 2);
        assert_eq!(count(1_000, StreamState::Closed), 0);
        assert_eq!(count(1_001, StreamState::Current), 4);
        assert_eq!(count(1_001, StreamState::Closed), 2);
        assert_eq!(count(1_001, StreamState::Opened), 4);
    }
}
