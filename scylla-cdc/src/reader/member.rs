//! A member of a consumer group ([`crate::CDCLogReaderBuilder::group`]): instead of reading
//! every stream group of a generation, a [`Worker`] reads the units of work it holds a lease
//! on, as decided through the lease table ([`crate::group::lease`]).
//!
//! Every `renew_interval` the member reads the group's partition of the lease table, renews
//! its leases in one conditional batch, creates the units of the next generation once every
//! unit of the current one is done (so that a partition's changes of one generation are all
//! delivered before any of the next, as a reader outside a group does), and takes, asks for
//! or hands over units until every member holds an equal share ([`crate::group::plan::plan`]).
//! A round whose own work takes longer than a renew interval (takes, requests and hand-overs
//! are one lightweight transaction per unit; checkpoints of the units it starts are loaded a
//! few units at a time) renews the leases again in between, so that it never outlasts the
//! leases of the units it reads or has just taken.
//!
//! The units a member starts in one round are read together, grouped by replica as a reader
//! outside a group reads a generation (one [`StreamReader`] per node and shard, at most
//! `max_partition_key_restrictions_per_query` streams per query), each stream from its own
//! checkpoint. The member stops a reader
//! - gracefully (it reads to the end of its window and saves its checkpoints) before handing
//!   one of its units over to a member that asked for it (its other units are read again,
//!   regrouped, from the checkpoints just saved), or before leaving the group on `stop()`;
//! - at once, by aborting its task, when a lease of its units may run out: a lease is counted
//!   from the moment its last successful renewal was *sent*, less half a renewal interval, so
//!   the member has stopped reading before any other member may take the unit over;
//! - when it reaches the generation's end (its units are then marked done) or the reader's
//!   end.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;
use tracing::{Instrument, debug, info, info_span, warn};

use super::worker::Worker;
use crate::base::cdc_types::{GenerationTimestamp, StreamID};
use crate::base::error::{Backoff, CDCError, retry_transient};
use crate::cluster::generations::{generation_covering, next_generation};
use crate::group::lease::{
    Cas, LeaseRow, LeaseTable, NewUnit, member_key, unit_generation_millis, unit_key,
};
use crate::group::plan::{Observations, View, plan};
use crate::report::events::{ExpiredGap, ReaderEvent, UnitEvent, UnitStopReason};
use crate::report::progress::{GroupProgress, Slot};
use crate::stream::{Deadline, StreamReader};

/// What a member needs besides its [`Worker`].
pub(crate) struct GroupRuntime {
    pub(crate) lease: LeaseTable,
    pub(crate) member: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_interval: Duration,
    /// `stop()`, or the handle was dropped: leave the group.
    pub(crate) stop: watch::Receiver<bool>,
}

/// A reader of some streams of some units this member holds (one replica's).
struct Running {
    /// The units whose streams it reads (a unit's streams may be split over the readers of
    /// several replicas).
    units: Vec<String>,
    abort: AbortHandle,
    /// The end of its reading: the next generation's start once known, or a time in the past
    /// to stop it at its next window.
    end_tx: watch::Sender<Option<DateTime<Utc>>>,
    /// When the member must have stopped reading it unless it renews its units' leases: the
    /// reader checks it itself before every delivery, and the member aborts it then too.
    deadline: Arc<Deadline>,
    /// Asked to stop gracefully (before its generation's end).
    stopping: bool,
    /// Aborted (a lease of its units may have run out).
    aborted: bool,
    slot: Slot,
    streams: usize,
}

impl Running {
    /// Stops it at the end of its current window, saving its checkpoints.
    fn stop_gracefully(&mut self) {
        if !self.aborted && !self.stopping {
            self.stopping = true;
            self.end_tx.send_replace(Some(DateTime::<Utc>::MIN_UTC));
        }
    }
}

/// How many units' checkpoints [`Member::start_units`] loads at once (between two chances to
/// renew the leases).
const LOAD_UNITS: usize = 32;

/// A unit to start reading, with its streams and until when its lease is held.
struct ToStart {
    row: LeaseRow,
    streams: Vec<StreamID>,
    valid_until: Instant,
    /// Its streams' checkpoints, once loaded.
    saved: Option<Vec<Option<DateTime<Utc>>>>,
    /// The member whose lease on it ran out before this member took it over (the saver is
    /// told before the checkpoints are loaded: [`crate::CDCCheckpointSaver::taking_over`]).
    taken_from: Option<String>,
}

/// Why [`Member::step`] returns.
#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    /// Everything up to the reader's end is read.
    Finished,
}

/// What [`Member::pick_generation`] found.
enum Pick {
    /// Read the generation starting at these milliseconds.
    Read(i64),
    /// Create the missing units of `generation`, starting at `start`, then read it.
    Create {
        generation: GenerationTimestamp,
        start: DateTime<Utc>,
    },
    /// Every generation is read; the next is not published yet.
    Wait,
    /// Everything up to the reader's end is read.
    Finished,
}

/// How a reader stopped before its units' end; ordered from the mildest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Interruption {
    /// At a window's end, its checkpoints saved (to hand a unit over, to regroup, to leave).
    Stopped,
    /// At once, without a checkpoint (its leases may have run out, or the member left and
    /// they ran out before its window ended).
    Aborted,
    /// With an error.
    Failed,
}

/// Why a member stopped reading a unit once the unit's last reader stopped. A unit's streams
/// may be read by several readers (one per replica); the worst way one of them stopped
/// before the unit's end (`interrupted`) decides first: a unit one of whose readers was
/// aborted without a checkpoint was lost (or left, when the member is leaving), even if
/// another reader of it stopped at a window's end. Then a hand-over (`give`: `Some(true)` to
/// a member that asked, `Some(false)` freed), a regrouping, its generation's end
/// (`generation_done`), or the reader's end.
fn stop_reason(
    interrupted: Option<Interruption>,
    leaving: bool,
    give: Option<bool>,
    generation_done: bool,
) -> UnitStopReason {
    match (interrupted, give) {
        (Some(Interruption::Failed), _) => UnitStopReason::Failed,
        (Some(Interruption::Aborted), _) if leaving => UnitStopReason::Left,
        (Some(Interruption::Aborted), _) => UnitStopReason::LeaseLost,
        (_, Some(true)) => UnitStopReason::HandedOver,
        (_, Some(false)) => UnitStopReason::Left,
        (Some(Interruption::Stopped), None) => UnitStopReason::Regrouped,
        (None, None) if generation_done => UnitStopReason::Finished,
        (None, None) => UnitStopReason::EndReached,
    }
}

/// The generation starting at `ms` milliseconds since the epoch (a unit key's).
fn generation_of_millis(ms: i64) -> GenerationTimestamp {
    GenerationTimestamp::new(DateTime::from_timestamp_millis(ms).unwrap_or_default())
}

struct Member<'w> {
    w: &'w mut Worker,
    g: GroupRuntime,
    obs: Observations,
    /// By task id.
    running: HashMap<tokio::task::Id, Running>,
    tasks: JoinSet<Result<(), CDCError>>,
    /// The units of each generation met: key → streams.
    units_of: BTreeMap<GenerationTimestamp, Arc<HashMap<String, Vec<StreamID>>>>,
    /// Units whose reader reached the reader's end: held, not started again.
    ended: HashSet<String>,
    /// Units to hand over (`None`: to free) once none of their readers runs.
    giving: HashMap<String, Option<String>>,
    /// Units one of whose readers stopped before the unit's end (it is not done), and the
    /// worst way one did.
    interrupted: HashMap<String, Interruption>,
    /// Leaving the group: every reader is stopping.
    leaving: bool,
    /// The generation being read.
    generation: Option<GenerationTimestamp>,
    last_version: i64,
    /// Until when the leases renewed by the last renewal are valid (`None`: it failed).
    renewed_until: Option<Instant>,
    /// When the last renewal was sent (successful or not).
    last_renewal: Option<Instant>,
    /// The units this member holds and renews (not done), as its last renewal left them,
    /// with the ones it took or handed over since.
    held: Vec<String>,
    /// Units taken over from a member whose lease ran out, whose take's answer was lost: if
    /// a later round finds the take applied, the saver is told of that member all the same.
    lost_takes: HashMap<String, String>,
}

impl Worker {
    /// Runs this table's work as a member of a consumer group until the end, `stop()` or an
    /// error; leaves the group (hands its units back) either way.
    pub(super) async fn run_member(&mut self, g: GroupRuntime) -> Result<(), CDCError> {
        info!(
            member = %g.member,
            lease_table = %g.lease.name(),
            "joining the consumer group"
        );
        let mut member = Member {
            w: self,
            g,
            obs: Observations::default(),
            running: HashMap::new(),
            tasks: JoinSet::new(),
            units_of: BTreeMap::new(),
            ended: HashSet::new(),
            giving: HashMap::new(),
            interrupted: HashMap::new(),
            leaving: false,
            generation: None,
            last_version: 0,
            renewed_until: None,
            last_renewal: None,
            held: Vec::new(),
            lost_takes: HashMap::new(),
        };
        let result = member.run().await;
        member.leave().await;
        result
    }
}

impl Member<'_> {
    fn me(&self) -> &str {
        &self.g.member
    }

    /// A version no earlier one of this member's equals: microseconds since the epoch, or one
    /// more than the last.
    fn next_version(&mut self) -> i64 {
        let now = Utc::now().timestamp_micros();
        self.last_version = now.max(self.last_version + 1);
        self.last_version
    }

    /// How long a lease lasts from the moment its renewal (or take) was sent: the lease
    /// duration less half a renewal interval, so that the member stops reading a unit before
    /// another member may see its lease run out (they wait a full lease duration from when
    /// they saw the renewal, which is later than it was sent).
    fn validity(&self) -> Duration {
        self.g
            .lease_duration
            .saturating_sub(self.g.renew_interval / 2)
    }

    fn expires_at(&self) -> DateTime<Utc> {
        crate::base::time::plus(Utc::now(), self.g.lease_duration)
    }

    async fn run(&mut self) -> Result<(), CDCError> {
        let mut tick = tokio::time::interval(self.g.renew_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stop = self.g.stop.clone();
        // A round also runs at once when the reader's end moves (`stop_at`, the programs'
        // SIGTERM: the member finishes then, not a renew interval later) and when the
        // follower publishes generations (a switch is not left waiting for the next round):
        // with a long renew interval (hours) either would wait that long.
        let mut end = self.w.settings.end.clone();
        let mut generations = self.w.generations_rx.clone();
        let (mut end_open, mut generations_open) = (true, true);
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                biased;
                _ = async { drop(stop.wait_for(|s| *s).await) } => return Ok(()),
                joined = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => {
                    if let Some(joined) = joined {
                        self.reader_stopped(joined).await?;
                    }
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.abort_expired();
                }
                _ = tick.tick() => {
                    if self.step().await? == Flow::Finished {
                        return Ok(());
                    }
                }
                changed = end.changed(), if end_open => match changed {
                    Ok(()) => tick.reset_immediately(),
                    Err(_) => end_open = false,
                },
                changed = generations.changed(), if generations_open => match changed {
                    Ok(()) => tick.reset_immediately(),
                    Err(_) => generations_open = false,
                },
            }
        }
    }

    /// The earliest deadline of a reader still running.
    fn next_deadline(&self) -> Option<Instant> {
        self.running
            .values()
            .filter(|r| !r.aborted)
            .map(|r| r.deadline.at())
            .min()
    }

    /// Aborts every reader a lease of whose units may have run out.
    fn abort_expired(&mut self) {
        let now = Instant::now();
        for r in self.running.values_mut() {
            if !r.aborted && r.deadline.at() <= now {
                warn!(
                    units = ?r.units,
                    "leases could not be renewed in time: stopping a reader before another member may take its units over"
                );
                r.abort.abort();
                r.aborted = true;
            }
        }
    }

    /// How many running readers read some stream of `unit`.
    fn readers_of(&self, unit: &str) -> usize {
        self.running
            .values()
            .filter(|r| r.units.iter().any(|u| u == unit))
            .count()
    }

    /// The units some running reader reads.
    fn running_units(&self) -> HashSet<String> {
        self.running
            .values()
            .flat_map(|r| r.units.iter().cloned())
            .collect()
    }

    /// Reports that this member started reading `unit` (`reason: None`) or stopped.
    fn event(&self, unit: &str, reason: Option<UnitStopReason>) {
        if let Some(listener) = &self.w.events {
            let streams = unit_generation_millis(unit)
                .and_then(|ms| self.units_of.get(&generation_of_millis(ms)))
                .and_then(|units| units.get(unit))
                .cloned()
                .unwrap_or_default();
            let e = UnitEvent {
                keyspace: self.w.keyspace.clone(),
                table: self.w.table.clone(),
                member: self.g.member.clone(),
                unit: unit.to_owned(),
                streams,
                reason,
            };
            listener(&match reason {
                None => ReaderEvent::UnitStarted(e),
                Some(_) => ReaderEvent::UnitStopped(e),
            });
        }
    }

    /// A reader ended. For each of its units that no other reader reads any more: hand it
    /// over (if asked), mark it done (read to its generation's end), keep it held (read to
    /// the reader's end), or leave it to be read again (stopped early).
    async fn reader_stopped(
        &mut self,
        joined: Result<(tokio::task::Id, Result<(), CDCError>), tokio::task::JoinError>,
    ) -> Result<(), CDCError> {
        let (id, result) = match joined {
            // The reader found its deadline passed and stopped itself: as an abort.
            Ok((id, Err(CDCError::LeaseExpired))) => (id, None),
            Ok((id, result)) => (id, Some(result)),
            Err(e) if e.is_cancelled() => (e.id(), None),
            Err(e) => return Err(CDCError::Task(e.to_string())),
        };
        let Some(r) = self.running.remove(&id) else {
            return Ok(());
        };
        self.w.settings.stats.remove_slot(&r.slot, r.streams);
        let generation_end = *r.end_tx.borrow();
        let end = self.w.end();
        let failed = matches!(result, Some(Err(_)));
        let cancelled = result.is_none();
        let generation_done =
            !r.stopping && generation_end.is_some_and(|g| end.is_none_or(|e| e >= g));
        if cancelled {
            debug!(units = ?r.units, "a reader was aborted");
        }
        let how = if failed {
            Some(Interruption::Failed)
        } else if cancelled {
            Some(Interruption::Aborted)
        } else if r.stopping {
            Some(Interruption::Stopped)
        } else {
            None
        };
        for unit in &r.units {
            if let Some(how) = how {
                let worst = self.interrupted.entry(unit.clone()).or_insert(how);
                *worst = (*worst).max(how);
            }
            if self.readers_of(unit) > 0 {
                continue;
            }
            // The unit's last reader stopped.
            let interrupted = self.interrupted.remove(unit);
            let aborted = interrupted >= Some(Interruption::Aborted);
            let give = self.giving.remove(unit);
            let reason = stop_reason(
                interrupted,
                self.leaving,
                give.as_ref().map(Option::is_some),
                generation_done,
            );
            self.event(unit, Some(reason));
            if matches!(
                reason,
                UnitStopReason::HandedOver | UnitStopReason::Left | UnitStopReason::Finished
            ) {
                // One transaction per unit: a reader of many units must not make the others
                // run out (see `keep_alive`).
                self.keep_alive(&mut Vec::new()).await;
            }
            let version = self.next_version();
            match reason {
                UnitStopReason::HandedOver | UnitStopReason::Left if !aborted => {
                    let to = give.flatten();
                    let expires = to.as_ref().map(|_| self.expires_at());
                    match self
                        .g
                        .lease
                        .hand_over(unit, &self.g.member, to.as_deref(), version, expires)
                        .await
                    {
                        Ok(Cas::Applied) => {
                            self.held.retain(|u| u != unit);
                            info!(unit = %unit, to = ?to, "handed a unit over")
                        }
                        Ok(Cas::NotApplied) => {
                            warn!(unit = %unit, "a unit to hand over was no longer this member's")
                        }
                        Err(e) => {
                            warn!(unit = %unit, error = %e, "could not hand a unit over (its lease will run out)")
                        }
                    }
                }
                UnitStopReason::Finished => {
                    // On failure the next round finds the unit still held and reads it again:
                    // its checkpoints are at the generation's end, so nothing is delivered
                    // twice.
                    match self.g.lease.finish(unit, &self.g.member, version).await {
                        Ok(_) => self.held.retain(|u| u != unit),
                        Err(e) => warn!(unit = %unit, error = %e, "could not mark a unit done"),
                    }
                }
                UnitStopReason::EndReached => {
                    self.ended.insert(unit.clone());
                }
                _ => {}
            }
        }
        match result {
            Some(Err(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// The units of `generation`: key → streams (cached).
    async fn units(
        &mut self,
        generation: GenerationTimestamp,
    ) -> Result<Arc<HashMap<String, Vec<StreamID>>>, CDCError> {
        if !self.units_of.contains_key(&generation) {
            let groups = self.w.fetch_stream_groups(&generation).await?;
            let units: HashMap<String, Vec<StreamID>> = groups
                .into_iter()
                .filter_map(|streams| {
                    let first = *streams.iter().min()?;
                    Some((unit_key(&generation, &first), streams))
                })
                .collect();
            // Only the generations still to be read are kept.
            self.units_of.retain(|g, _| *g >= generation);
            self.units_of.insert(generation, Arc::new(units));
        }
        Ok(self.units_of[&generation].clone())
    }

    /// Creates the units of `generation` that are missing, starting without checkpoints at
    /// `start`.
    async fn create_units(
        &mut self,
        generation: GenerationTimestamp,
        start: DateTime<Utc>,
        existing: &[LeaseRow],
    ) -> Result<(), CDCError> {
        let units = self.units(generation).await?;
        let mut new: Vec<NewUnit> = units
            .keys()
            .filter(|k| !existing.iter().any(|r| &r.unit == *k))
            .map(|k| NewUnit {
                key: k.clone(),
                start,
            })
            .collect();
        new.sort_by(|a, b| a.key.cmp(&b.key));
        if !new.is_empty() {
            info!(generation = %generation, units = new.len(), "creating the units of a generation in the lease table");
            self.g.lease.create_units(&new).await?;
        }
        Ok(())
    }

    /// Which generation the group reads, from the lease table's unit rows:
    /// - the oldest generation with a unit not done, unless it is the newest generation with
    ///   rows and some of its units have no row yet (a creation stopped half-way: a batch
    ///   failed or timed out, or the member creating them was killed): their rows are
    ///   created first, with the start the others have, so that no stream of a generation is
    ///   left unread (also when the units that were created are all done already);
    /// - once every unit of every generation is done: the next generation (created from its
    ///   start), the first one (from the reader's start or the saved generation) when there
    ///   is no unit at all, or nothing yet while the next generation is not published.
    async fn pick_generation(&mut self, rows: &[LeaseRow]) -> Result<Pick, CDCError> {
        // Per generation: the keys of its unit rows and their (earliest) start.
        let mut by_generation: BTreeMap<i64, (HashSet<&str>, Option<DateTime<Utc>>)> =
            BTreeMap::new();
        for row in rows.iter().filter(|r| r.is_unit()) {
            let Some(ms) = unit_generation_millis(&row.unit) else {
                continue;
            };
            let (keys, start) = by_generation.entry(ms).or_default();
            keys.insert(row.unit.as_str());
            *start = match (*start, row.start) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let newest = by_generation.keys().next_back().copied();
        for (&ms, (keys, start)) in &by_generation {
            let generation = generation_of_millis(ms);
            let units = self.units(generation).await?;
            // Only the newest generation can miss units: a generation's units are created
            // once every unit of the one before is done, and only then are the older
            // generations' rows deleted (a deletion stopped half-way leaves some behind).
            if Some(ms) == newest && units.keys().any(|k| !keys.contains(k.as_str())) {
                info!(
                    generation = %generation,
                    units = units.len(),
                    created = keys.len(),
                    "some units of a generation were never created: creating them"
                );
                let start = start.unwrap_or(generation.timestamp);
                return Ok(Pick::Create { generation, start });
            }
            // Only a unit this member knows the streams of counts as not done: a row no
            // member can read must not hold the group in its generation for ever.
            let not_done = rows.iter().any(|r| {
                r.is_unit()
                    && !r.done
                    && unit_generation_millis(&r.unit) == Some(ms)
                    && units.contains_key(&r.unit)
            });
            if not_done {
                return Ok(Pick::Read(ms));
            }
        }
        self.w.refresh_generations();
        let (generation, start) = match by_generation.keys().next_back() {
            None => {
                let first_from = self
                    .w
                    .loaded_generation
                    .map_or(self.w.start, |g| g.timestamp);
                let Some(g) = generation_covering(&self.w.generations, first_from) else {
                    return Ok(Pick::Finished);
                };
                // Resuming a saved generation: a stream without a checkpoint is read from
                // the generation's start rather than risk skipping changes.
                let start = if self.w.loaded_generation.is_some() {
                    g.timestamp
                } else {
                    self.w.start.max(g.timestamp)
                };
                (g, start)
            }
            Some(&ms) => match next_generation(&self.w.generations, &generation_of_millis(ms)) {
                Some(next) => (next, next.timestamp),
                None => {
                    self.w
                        .waiting
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    self.w.check_cdc_enabled().await;
                    return Ok(Pick::Wait);
                }
            },
        };
        Ok(Pick::Create { generation, start })
    }

    /// One round: read the lease table, renew, follow generations, balance.
    async fn step(&mut self) -> Result<Flow, CDCError> {
        let mut rows = match self.g.lease.read().await {
            Ok(rows) => rows,
            Err(e) => {
                warn!(error = %e, "could not read the lease table (held leases stay valid until they run out)");
                return Ok(Flow::Continue);
            }
        };
        let read_at = Instant::now();
        self.obs.update(&rows, read_at);
        self.renew(&mut rows).await;

        let current = match self.pick_generation(&rows).await? {
            Pick::Read(ms) => ms,
            Pick::Wait => return Ok(Flow::Continue),
            Pick::Finished => return Ok(Flow::Finished),
            Pick::Create { generation, start } => {
                if self.w.end().is_some_and(|e| e <= generation.timestamp) {
                    return Ok(Flow::Finished);
                }
                if let Err(e) = self.create_units(generation, start, &rows).await {
                    // Some may have been created: the next round finds the generation's
                    // other units missing and creates them (`pick_generation`).
                    warn!(error = %e, generation = %generation, "could not create the units of a generation");
                    return Ok(Flow::Continue);
                }
                // Rows of generations every member is done with (every older generation is
                // done when a generation's units are created).
                let old: Vec<String> = rows
                    .iter()
                    .filter(|r| {
                        r.is_unit()
                            && r.done
                            && unit_generation_millis(&r.unit)
                                < Some(generation.timestamp.timestamp_millis())
                    })
                    .map(|r| r.unit.clone())
                    .collect();
                if !old.is_empty()
                    && let Err(e) = self.g.lease.delete(&old).await
                {
                    warn!(error = %e, "could not delete the units of a finished generation");
                }
                rows = match self.g.lease.read().await {
                    Ok(rows) => rows,
                    Err(_) => return Ok(Flow::Continue),
                };
                self.obs.update(&rows, Instant::now());
                generation.timestamp.timestamp_millis()
            }
        };
        let generation = generation_of_millis(current);
        if self.w.end().is_some_and(|e| e <= generation.timestamp) {
            return Ok(Flow::Finished);
        }
        self.enter(generation).await?;
        // With an end: once every stream of the generation is read to it (by any member),
        // this member is done. Checked before taking anything, so that members leaving at the
        // end do not hand each other units that are read already.
        if self.running.is_empty()
            && self.w.end().is_some()
            && self.all_read_to_end(generation).await
        {
            return Ok(Flow::Finished);
        }

        // Shared, not copied: the map is the generation's, cached for every round.
        let units_known = self.units(generation).await?;
        let live = self.live_members(&rows, read_at);
        let current_units: Vec<&LeaseRow> = rows
            .iter()
            .filter(|r| {
                r.is_unit()
                    && !r.done
                    && unit_generation_millis(&r.unit) == Some(current)
                    && units_known.contains_key(&r.unit)
            })
            .collect();
        let view = View {
            me: &self.g.member,
            live: live.clone(),
            units: current_units.clone(),
        };
        let d = self.g.lease_duration;
        let obs = &self.obs;
        let decided = plan(&view, |u| obs.expired(u, d, read_at));
        debug!(
            member = %self.g.member,
            live = ?live,
            units = current_units.len(),
            running = self.running.len(),
            plan = ?decided,
            "a round of the consumer group"
        );
        let giving: HashSet<&str> = decided.give.iter().map(|(u, _)| u.as_str()).collect();
        let running_units = self.running_units();
        let mut to_start: Vec<ToStart> = Vec::new();

        // Units this member holds but does not read (a take whose answer was lost, a unit
        // stopped when its lease could not be renewed, or one stopped to be regrouped): read
        // them once renewed.
        if let Some(valid_until) = self.renewed_until
            && valid_until > Instant::now()
        {
            for row in &current_units {
                if row.owner.as_deref() == Some(self.me())
                    && !running_units.contains(&row.unit)
                    && !self.ended.contains(&row.unit)
                    && !self.giving.contains_key(&row.unit)
                    && !giving.contains(row.unit.as_str())
                {
                    to_start.push(ToStart {
                        row: (*row).clone(),
                        streams: units_known[&row.unit].clone(),
                        valid_until,
                        saved: None,
                        taken_from: self.lost_takes.remove(&row.unit),
                    });
                }
            }
        }

        // Every lightweight transaction of the round is preceded by a renewal when the round
        // has run for a renew interval since the last one (`keep_alive`): a round with many
        // takes, requests or checkpoint loads must not outlast the leases this member holds.
        for (unit, requester) in &decided.withdraw {
            self.keep_alive(&mut to_start).await;
            if let Err(e) = self.g.lease.clear_request(unit, requester).await {
                debug!(error = %e, "could not withdraw a request");
            }
        }
        for (unit, to) in &decided.give {
            if self.giving.contains_key(unit) {
                continue;
            }
            if running_units.contains(unit) {
                info!(unit = %unit, to = %to, "stopping a unit to hand it over");
                self.giving.insert(unit.clone(), Some(to.clone()));
                for r in self.running.values_mut() {
                    if r.units.contains(unit) {
                        r.stop_gracefully();
                    }
                }
            } else {
                // Held but not read: hand it over at once.
                self.keep_alive(&mut to_start).await;
                let version = self.next_version();
                let expires = self.expires_at();
                if let Ok(Cas::Applied) = self
                    .g
                    .lease
                    .hand_over(unit, &self.g.member, Some(to), version, Some(expires))
                    .await
                {
                    self.held.retain(|u| u != unit);
                }
            }
        }
        // A unit another member took first is replaced by a spare free one, so that members
        // starting together do not wait a round for each unit they lose a race for.
        let mut spare = decided.spare.iter();
        let mut queue: std::collections::VecDeque<&(String, Option<String>, i64)> =
            decided.take.iter().collect();
        while let Some((unit, owner, version)) = queue.pop_front() {
            self.keep_alive(&mut to_start).await;
            let new_version = self.next_version();
            let expires = self.expires_at();
            let sent = Instant::now();
            match self
                .g
                .lease
                .take(
                    unit,
                    &self.g.member,
                    owner.as_deref(),
                    *version,
                    new_version,
                    expires,
                )
                .await
            {
                Ok(Cas::Applied) => {
                    self.lost_takes.remove(unit);
                    if let Some(owner) = owner {
                        info!(unit = %unit, from = %owner, "took over a unit whose lease ran out");
                    }
                    let Some(row) = rows.iter().find(|r| &r.unit == unit) else {
                        continue;
                    };
                    to_start.push(ToStart {
                        row: LeaseRow {
                            owner: Some(self.g.member.clone()),
                            version: new_version,
                            ..row.clone()
                        },
                        streams: units_known[unit].clone(),
                        valid_until: sent + self.validity(),
                        saved: None,
                        taken_from: owner.clone().filter(|o| o != self.me()),
                    });
                    self.held.push(unit.clone());
                }
                Ok(Cas::NotApplied) => {
                    debug!(unit = %unit, "another member took the unit first");
                    if let Some(next) = spare.next() {
                        queue.push_back(next);
                    }
                }
                // The answer was lost: the next read shows whether it was taken.
                Err(e) => {
                    if let Some(owner) = owner.clone().filter(|o| o != self.me()) {
                        self.lost_takes.insert(unit.clone(), owner);
                    }
                    warn!(unit = %unit, error = %e, "could not take a unit")
                }
            }
        }
        if !to_start.is_empty() {
            self.start_units(to_start, generation).await?;
        } else if decided.give.is_empty()
            && decided.take.is_empty()
            && self.giving.is_empty()
            && self.running.values().all(|r| !r.stopping && !r.aborted)
        {
            self.consolidate(&units_known);
        }
        for (unit, owner) in &decided.request {
            self.keep_alive(&mut Vec::new()).await;
            match self.g.lease.request(unit, &self.g.member, owner).await {
                Ok(Cas::Applied) => info!(unit = %unit, owner = %owner, "asked for a unit"),
                Ok(Cas::NotApplied) => {}
                Err(e) => debug!(unit = %unit, error = %e, "could not ask for a unit"),
            }
        }
        // Members that stopped renewing long ago leave no row behind.
        for row in rows.iter().filter(|r| r.member().is_some()) {
            if row.member() != Some(self.me()) && self.obs.expired(&row.unit, 3 * d, read_at) {
                let _ = self.g.lease.delete_if(&row.unit, row.version).await;
            }
        }
        self.publish(live.len(), current_units.len());
        Ok(Flow::Continue)
    }

    /// When nothing changed hands this round and the units read are split over more readers
    /// than their replicas need (units taken in different rounds are read apart), stops the
    /// readers at their windows' ends, so that the next round reads the units again grouped
    /// by replica (from the checkpoints just saved: nothing is read twice).
    fn consolidate(&mut self, units_known: &HashMap<String, Vec<StreamID>>) {
        let held: Vec<Vec<StreamID>> = self
            .running_units()
            .iter()
            .filter_map(|u| units_known.get(u).cloned())
            .collect();
        if held.is_empty() {
            return;
        }
        let needed = self.w.read_groups(held).len();
        if self.running.len() > needed {
            info!(
                readers = self.running.len(),
                needed, "regrouping the units this member reads by replica"
            );
            for r in self.running.values_mut() {
                r.stop_gracefully();
            }
        }
    }

    /// Whether every stream of `generation` has a checkpoint at the reader's end or later.
    async fn all_read_to_end(&mut self, generation: GenerationTimestamp) -> bool {
        let (Some(end), Some(loader)) = (self.w.end(), self.w.loader.clone()) else {
            return false;
        };
        let streams: Vec<StreamID> = match self.units(generation).await {
            Ok(units) => units.values().flatten().cloned().collect(),
            Err(_) => return false,
        };
        match loader.load_stream_checkpoints(&streams).await {
            Ok(saved) => saved.iter().all(|s| s.is_some_and(|s| s >= end)),
            Err(_) => false,
        }
    }

    /// Members seen renewing within a lease duration, this one included.
    fn live_members(&self, rows: &[LeaseRow], now: Instant) -> Vec<String> {
        let mut live: Vec<String> = rows
            .iter()
            .filter_map(|r| r.member().map(|m| (m, r)))
            .filter(|(m, r)| {
                *m == self.me() || !self.obs.expired(&r.unit, self.g.lease_duration, now)
            })
            .map(|(m, _)| m.to_owned())
            .collect();
        if !live.iter().any(|m| m == self.me()) {
            live.push(self.g.member.clone());
        }
        live.sort();
        live
    }

    /// Publishes what this member holds to its progress.
    fn publish(&self, members: usize, units: usize) {
        let mut owned: Vec<String> = self.running_units().into_iter().collect();
        owned.sort();
        self.w.settings.stats.set_group(GroupProgress {
            member: self.g.member.clone(),
            members,
            units,
            owned,
            readers: self.running.len(),
        });
    }

    /// Starts reading `generation` (the stream groups of the previous one no longer count).
    async fn enter(&mut self, generation: GenerationTimestamp) -> Result<(), CDCError> {
        if self.generation == Some(generation) {
            // Tell the units where the generation ends once the next one is known.
            self.w.refresh_generations();
            if let Some(next) = next_generation(&self.w.generations, &generation) {
                self.w
                    .waiting
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                for r in self.running.values() {
                    if !r.stopping {
                        r.end_tx.send_if_modified(|e| {
                            let changed = e.is_none();
                            if changed {
                                *e = Some(next.timestamp);
                            }
                            changed
                        });
                    }
                }
            } else {
                self.w
                    .waiting
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                self.w.check_cdc_enabled().await;
            }
            return Ok(());
        }
        info!(generation = %generation, "reading a CDC generation as a member of a consumer group");
        let switch = self.generation.is_some();
        self.generation = Some(generation);
        self.ended.clear();
        self.w.settings.stats.begin_generation(0, &[], switch);
        if let Some(saver) = &self.w.settings.saver
            && let Err(e) = saver.save_new_generation(&generation).await
        {
            warn!(error = %e, generation = %generation, "could not save the CDC generation");
        }
        Box::pin(self.enter(generation)).await
    }

    /// Starts reading units this member now holds, grouped by replica, each stream from its
    /// checkpoint (or its unit's start).
    async fn start_units(
        &mut self,
        mut units: Vec<ToStart>,
        generation: GenerationTimestamp,
    ) -> Result<(), CDCError> {
        // Loading the checkpoints is bounded by the leases: a load that hangs (or retries a
        // cluster that keeps failing) past them must not start readers of units this member
        // may no longer hold. The units stay held; a later round starts them once renewed.
        // The leases are renewed while the saver works (`renewing_while`), so that a slow
        // load (many units, or a saver waiting on another system) outlasts neither the
        // leases of the units it loads nor those of the readers running; a load holds the
        // round for two lease durations at most (the units wait for a later round). The
        // units are loaded a few at a time all the same (a smaller unit of work to lose).
        if let Some(loader) = self.w.loader.clone() {
            // The saver hears of every member whose units are taken over before their
            // checkpoints are read (it may have to fence what that member still writes).
            let mut previous: BTreeMap<String, Vec<StreamID>> = BTreeMap::new();
            for u in &units {
                if let Some(owner) = &u.taken_from {
                    previous
                        .entry(owner.clone())
                        .or_default()
                        .extend(u.streams.iter().copied());
                }
            }
            for (owner, streams) in previous {
                self.keep_alive(&mut units).await;
                let mut backoff = Backoff::new(self.w.settings.give_up_after);
                let told = retry_transient("telling the saver of a takeover", &mut backoff, || {
                    let (loader, owner, streams) = (loader.clone(), owner.clone(), &streams);
                    async move {
                        loader.taking_over(&owner, streams).await.map_err(|source| {
                            CDCError::Checkpoint {
                                action: "prepare a takeover",
                                source,
                            }
                        })
                    }
                });
                match self.renewing_while(&mut units, told).await {
                    Some(told) => told?,
                    None if self.stop_requested() => return Ok(()),
                    None => {
                        warn!(
                            from = %owner,
                            "the saver could not prepare the takeover within two lease durations or before the leases ran out: not starting the units this round"
                        );
                        // Whichever round starts them must tell the saver again.
                        for u in &units {
                            if let Some(o) = &u.taken_from {
                                self.lost_takes.insert(u.row.unit.clone(), o.clone());
                            }
                        }
                        return Ok(());
                    }
                }
            }
            loop {
                self.keep_alive(&mut units).await;
                // By unit, not by position: a renewal during the load drops the units it
                // finds held by another member.
                let chunk: Vec<(String, usize)> = units
                    .iter()
                    .filter(|u| u.saved.is_none())
                    .take(LOAD_UNITS)
                    .map(|u| (u.row.unit.clone(), u.streams.len()))
                    .collect();
                if chunk.is_empty() {
                    break;
                }
                let streams: Vec<StreamID> = units
                    .iter()
                    .filter(|u| chunk.iter().any(|(unit, _)| *unit == u.row.unit))
                    .flat_map(|u| u.streams.iter().copied())
                    .collect();
                let mut backoff = Backoff::new(self.w.settings.give_up_after);
                let load = retry_transient("loading stream checkpoints", &mut backoff, || async {
                    loader
                        .load_stream_checkpoints(&streams)
                        .await
                        .map_err(|source| CDCError::Checkpoint {
                            action: "load stream checkpoints",
                            source,
                        })
                });
                let mut saved = match self.renewing_while(&mut units, load).await {
                    Some(saved) => saved?.into_iter(),
                    None if self.stop_requested() => return Ok(()),
                    None => {
                        warn!(
                            units = units.len(),
                            "the units' checkpoints could not be loaded within two lease durations or before their leases ran out: not starting them this round"
                        );
                        return Ok(());
                    }
                };
                for (unit, n) in chunk {
                    let times: Vec<Option<DateTime<Utc>>> = saved.by_ref().take(n).collect();
                    if let Some(u) = units.iter_mut().find(|u| u.row.unit == unit) {
                        u.saved = Some(times);
                    }
                }
            }
        }
        if units.is_empty() {
            return Ok(());
        }
        let mut unit_of: HashMap<StreamID, usize> = HashMap::new();
        let mut fallback = Vec::with_capacity(units.len());
        for (i, u) in units.iter().enumerate() {
            for s in &u.streams {
                unit_of.insert(*s, i);
            }
            fallback.push(
                u.row
                    .start
                    .unwrap_or(generation.timestamp)
                    .max(generation.timestamp),
            );
        }
        let all: Vec<StreamID> = units.iter().flat_map(|u| u.streams.clone()).collect();
        let saved: Vec<Option<DateTime<Utc>>> = units
            .iter()
            .flat_map(|u| {
                let n = u.streams.len();
                u.saved.clone().unwrap_or_else(|| vec![None; n])
            })
            .collect();
        self.w.refresh_generations();
        let next = next_generation(&self.w.generations, &generation).map(|g| g.timestamp);
        // Reading starts no earlier than the oldest time still in the log, nor later than the
        // generation's end (or the reader's) when all of it has expired; a start moved past
        // expired rows is reported as a gap, as outside a group.
        let oldest = self
            .w
            .oldest_readable()
            .map(|o| next.map_or(o, |n| o.min(n)))
            .map(|o| self.w.end().map_or(o, |e| o.min(e)));
        let mut gap: Option<(DateTime<Utc>, Vec<StreamID>)> = None;
        let start_of: HashMap<StreamID, DateTime<Utc>> = all
            .iter()
            .zip(saved.into_iter().chain(std::iter::repeat(None)))
            .map(|(s, saved)| {
                let unit_start = fallback[unit_of[s]];
                let mut start = saved.map_or(unit_start, |t| t.max(generation.timestamp));
                if let Some(oldest) = oldest
                    && start < oldest
                {
                    let (requested, streams) = gap.get_or_insert_with(|| (start, Vec::new()));
                    *requested = (*requested).min(start);
                    streams.push(*s);
                    start = oldest;
                }
                (*s, start)
            })
            .collect();
        if let (Some((requested, streams)), Some(first_readable), Some(ttl)) =
            (gap, oldest, self.w.log_ttl)
        {
            self.w.report_gap(ExpiredGap {
                keyspace: self.w.keyspace.clone(),
                table: self.w.table.clone(),
                generation,
                streams,
                requested,
                first_readable,
                ttl,
            });
        }
        let groups = self
            .w
            .read_groups(units.iter().map(|u| u.streams.clone()).collect());
        let mut announced: HashSet<usize> = HashSet::new();
        for group in groups {
            let streams = group.streams;
            let mut members: Vec<usize> = streams.iter().map(|s| unit_of[s]).collect();
            members.sort_unstable();
            members.dedup();
            let starts: Vec<DateTime<Utc>> = streams.iter().map(|s| start_of[s]).collect();
            let start = starts.iter().copied().min().unwrap_or(generation.timestamp);
            let deadline = Arc::new(Deadline::new(
                members
                    .iter()
                    .map(|i| units[*i].valid_until)
                    .min()
                    .unwrap_or_else(Instant::now),
            ));
            let (end_tx, end_rx) = watch::channel(next);
            let mut settings = self.w.settings.clone();
            if let Some(r) = group.replica.and_then(|r| settings.source.routed(r)) {
                settings.source = r;
            }
            let slot = self.w.settings.stats.add_slot(start, streams.len());
            let sink = self.w.consumers.new_sink(&self.w.table).await;
            let keys: Vec<String> = members.iter().map(|i| units[*i].row.unit.clone()).collect();
            let span = info_span!(
                "unit_reader",
                units = keys.len(),
                streams = streams.len(),
                generation = %generation,
                window_start = tracing::field::Empty,
            );
            let n = streams.len();
            let reader = StreamReader::new(
                settings,
                streams,
                generation,
                end_rx,
                start,
                sink,
                slot.clone(),
            )
            .with_stream_starts(starts)
            .with_deadline(deadline.clone());
            for i in &members {
                if announced.insert(*i) {
                    self.event(&units[*i].row.unit, None);
                }
            }
            let abort = self.tasks.spawn(reader.run().instrument(span));
            self.running.insert(
                abort.id(),
                Running {
                    units: keys,
                    abort,
                    end_tx,
                    deadline,
                    stopping: false,
                    aborted: false,
                    slot,
                    streams: n,
                },
            );
        }
        Ok(())
    }

    /// Renews the leases of every unit this member holds (as `rows` show) and its membership;
    /// stops at once the readers of units another member holds now. The units the renewal
    /// finds held by another member are changed in `rows` to show that owner, so that the
    /// rest of the round neither reads them nor counts them as this member's.
    async fn renew(&mut self, rows: &mut [LeaseRow]) {
        let me = self.g.member.clone();
        // A running unit another member holds now: this member's lease ran out.
        let lost_now: Vec<String> = self
            .running_units()
            .into_iter()
            .filter(|unit| {
                rows.iter()
                    .find(|row| &row.unit == unit)
                    .is_none_or(|row| row.owner.as_deref() != Some(me.as_str()))
            })
            .collect();
        self.abort_units(&lost_now);
        let held: Vec<String> = rows
            .iter()
            .filter(|r| r.is_unit() && !r.done && r.owner.as_deref() == Some(me.as_str()))
            .map(|r| r.unit.clone())
            .collect();
        if let Some((lost, _)) = self.renew_units(held).await {
            for (unit, owner) in lost {
                if let Some(row) = rows.iter_mut().find(|r| r.unit == unit) {
                    row.owner = owner;
                }
            }
        }
    }

    /// Renews the leases of `held` and this member's membership, sent now; stops at once
    /// the readers of units the renewal finds held by another member, and extends the
    /// deadlines of the others. Returns the units found lost (with their owners) and until
    /// when the others are valid, or `None` if the renewal failed.
    async fn renew_units(
        &mut self,
        mut held: Vec<String>,
    ) -> Option<(Vec<(String, Option<String>)>, Instant)> {
        let version = self.next_version();
        let expires = self.expires_at();
        let ttl = self.g.lease_duration.saturating_mul(3);
        let sent = Instant::now();
        let validity = self.validity();
        if let Some(gap) = self.last_renewal.map(|last| sent.duration_since(last))
            && gap > validity
        {
            warn!(
                gap = ?gap,
                "the leases ran out between two renewals (a round, or the process, stalled for longer than a lease): readers stopped"
            );
        }
        self.last_renewal = Some(sent);
        match self
            .g
            .lease
            .renew(&self.g.member, &held, version, expires, ttl)
            .await
        {
            Ok(lost) => {
                let lost_keys: Vec<String> = lost.iter().map(|(unit, _)| unit.clone()).collect();
                for (unit, owner) in &lost {
                    warn!(unit = %unit, owner = ?owner, "a renewal found a unit held by another member");
                }
                self.abort_units(&lost_keys);
                held.retain(|u| !lost_keys.contains(u));
                let valid_until = sent + validity;
                if sent.elapsed() > validity {
                    warn!(
                        took = ?sent.elapsed(),
                        units = held.len(),
                        "a renewal took longer than a lease: the leases it renewed had run out when it returned"
                    );
                }
                for r in self.running.values() {
                    if !r.aborted && r.units.iter().all(|u| held.contains(u)) {
                        r.deadline.extend(valid_until);
                    }
                }
                self.held = held;
                self.renewed_until = Some(valid_until);
                Some((lost, valid_until))
            }
            Err(e) => {
                warn!(error = %e, units = held.len(), "could not renew leases (readers stop when the leases run out)");
                self.renewed_until = None;
                None
            }
        }
    }

    /// Awaits `work` (the saver preparing or loading units this member is starting), renewing
    /// every lease of the member meanwhile (the units' and its running readers'), so that a
    /// slow saver (one that waits for another system, such as Kafka transactions still open)
    /// costs the member neither the units nor the readers it runs. `None` once the units'
    /// leases run out first (a renewal failed, or found them taken: they are not started),
    /// none of them is left, the member is asked to stop (it leaves without waiting for the
    /// saver), or the work has held the round for twice the lease duration: the units stay
    /// held for a later round, and this round goes on, since only a round takes over the
    /// units of a member whose lease ran out, and fences it, which may be what the saver waits
    /// for (a Kafka saver's load waits for the transactions still open, a paused member's
    /// among them).
    async fn renewing_while<T>(
        &mut self,
        units: &mut Vec<ToStart>,
        work: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        tokio::pin!(work);
        let mut stop = self.g.stop.clone();
        let round_goes_on = Instant::now() + self.g.lease_duration.saturating_mul(2);
        loop {
            let valid_until = units.iter().map(|u| u.valid_until).min()?;
            let next_renewal = self
                .last_renewal
                .map_or_else(Instant::now, |t| t + self.g.renew_interval);
            tokio::select! {
                biased;
                out = &mut work => return Some(out),
                _ = async { drop(stop.wait_for(|s| *s).await) } => return None,
                _ = tokio::time::sleep_until(valid_until.min(round_goes_on)) => return None,
                _ = tokio::time::sleep_until(next_renewal) => self.keep_alive(units).await,
            }
        }
    }

    /// Whether the member was asked to stop (`stop()`, or the reader's handle is gone).
    fn stop_requested(&self) -> bool {
        self.g.stop.has_changed().is_err() || *self.g.stop.borrow()
    }

    /// Renews the leases again once a renew interval has passed since the last renewal was
    /// sent, in the middle of a round whose work (lightweight transactions one unit at a
    /// time, checkpoint loads) takes that long: the units held, and `starting` (units taken
    /// or to be started this round, which are dropped when the renewal finds them held by
    /// another member, and whose validity it extends).
    async fn keep_alive(&mut self, starting: &mut Vec<ToStart>) {
        if self
            .last_renewal
            .is_some_and(|t| t.elapsed() < self.g.renew_interval)
        {
            return;
        }
        let mut held = self.held.clone();
        for u in starting.iter() {
            if !held.contains(&u.row.unit) {
                held.push(u.row.unit.clone());
            }
        }
        if let Some((lost, valid_until)) = self.renew_units(held).await {
            starting.retain(|u| !lost.iter().any(|(unit, _)| *unit == u.row.unit));
            for u in starting.iter_mut() {
                u.valid_until = u.valid_until.max(valid_until);
            }
        }
    }

    /// Aborts the readers of `keys` (units another member holds now).
    fn abort_units(&mut self, keys: &[String]) {
        for r in self.running.values_mut() {
            if !r.aborted && r.units.iter().any(|u| keys.contains(u)) {
                warn!(units = ?r.units, "another member holds a unit this member was reading: stopping its reader");
                r.abort.abort();
                r.aborted = true;
            }
        }
    }

    /// Leaves the group: stops every unit at its position (its reader ends its window and
    /// saves its checkpoint), renewing the leases meanwhile, so that a graceful stop repeats
    /// nothing however long the last windows take; a reader is aborted only when its lease
    /// runs out (the lease table could not be renewed). Then frees its units and removes its
    /// row.
    async fn leave(&mut self) {
        self.leaving = true;
        for unit in self.running_units() {
            self.giving.entry(unit).or_insert(None);
        }
        for r in self.running.values_mut() {
            r.stop_gracefully();
        }
        let mut tick = tokio::time::interval(self.g.renew_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The round just before renewed them.
        tick.reset();
        while !self.tasks.is_empty() {
            let deadline = self.next_deadline();
            tokio::select! {
                joined = self.tasks.join_next_with_id() => {
                    if let Some(joined) = joined
                        && let Err(e) = self.reader_stopped(joined).await
                    {
                        debug!(error = %e, "a unit's reader failed while leaving");
                    }
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.abort_expired();
                }
                _ = tick.tick() => {
                    match self.g.lease.read().await {
                        Ok(mut rows) => {
                            self.obs.update(&rows, Instant::now());
                            self.renew(&mut rows).await;
                        }
                        Err(e) => {
                            warn!(error = %e, "could not read the lease table while leaving (readers stop when their leases run out)");
                        }
                    }
                }
            }
        }
        // Units still held (aborted ones, ended ones): free them.
        match self.g.lease.read().await {
            Ok(rows) => {
                for row in rows.iter().filter(|r| r.is_unit()) {
                    if row.owner.as_deref() == Some(self.me()) {
                        let version = self.next_version();
                        let _ = self
                            .g
                            .lease
                            .hand_over(&row.unit, &self.g.member, None, version, None)
                            .await;
                    } else if row.wanted_by.as_deref() == Some(self.me()) {
                        let _ = self.g.lease.clear_request(&row.unit, &self.g.member).await;
                    }
                }
            }
            Err(e) => {
                warn!(error = %e, "could not read the lease table to leave the group (leases run out)")
            }
        }
        if let Err(e) = self.g.lease.delete(&[member_key(&self.g.member)]).await {
            debug!(error = %e, "could not remove this member's row");
        }
        info!(member = %self.g.member, "left the consumer group");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_reported_by_the_worst_stop_of_its_readers() {
        use Interruption::*;
        use UnitStopReason as R;
        // A unit read by two readers: one aborted when its lease ran out, the other stopped
        // at a window's end to regroup or to hand a unit over. Its streams of the aborted
        // reader have no checkpoint where they got to: the unit was lost, not regrouped.
        assert_eq!(stop_reason(Some(Aborted), false, None, false), R::LeaseLost);
        assert_eq!(
            stop_reason(Some(Aborted), false, Some(true), false),
            R::LeaseLost
        );
        assert_eq!(
            stop_reason(Some(Aborted), true, Some(false), false),
            R::Left
        );
        assert_eq!(
            stop_reason(Some(Failed), false, Some(true), false),
            R::Failed
        );
        // Stopped at windows' ends, checkpoints saved.
        assert_eq!(stop_reason(Some(Stopped), false, None, false), R::Regrouped);
        assert_eq!(
            stop_reason(Some(Stopped), false, Some(true), false),
            R::HandedOver
        );
        assert_eq!(
            stop_reason(Some(Stopped), true, Some(false), false),
            R::Left
        );
        // Read to an end.
        assert_eq!(stop_reason(None, false, None, true), R::Finished);
        assert_eq!(stop_reason(None, false, None, false), R::EndReached);
        assert!(Stopped < Aborted && Aborted < Failed);
    }
}
