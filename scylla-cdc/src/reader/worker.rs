//! The work of one table ([`Worker`]): it walks the table's generations and, for each, runs
//! one stream reader per stream group until every group reaches the generation's end; it
//! loads where each stream starts from the checkpoints, reports the changes lost to the log's
//! TTL, and checks that CDC is still enabled on the table. A member of a consumer group uses
//! the same worker to read the units it holds (`member.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use scylla::client::session::Session;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{Instrument, info, info_span, warn};

use crate::base::cdc_types::GenerationTimestamp;
use crate::base::error::{Backoff, CDCError, retry_transient};
use crate::base::time::ceil_to_millis;
use crate::checkpoints::CDCCheckpointSaver;
use crate::cluster::generations::{GenerationFetcher, generation_covering, next_generation};
use crate::cluster::replicas::{ReadGroup, group_by_replica, group_with_session};
use crate::report::events::{EventListener, ExpiredGap, ReaderEvent};
use crate::report::progress::retry_kind_of;
use crate::stream::sink::ConsumerKind;
use crate::stream::{ReaderSettings, StreamReader};

/// How often the current generation is saved again while a reader stays in it.
const GENERATION_RESAVE_INTERVAL: Duration = Duration::from_secs(3600);

/// The least time between two looks for a new generation (and at the table's CDC option),
/// whatever the [`sleep_interval`](crate::CDCLogReaderBuilder::sleep_interval).
pub const MIN_GENERATION_POLL: Duration = Duration::from_millis(100);

/// Clears a table's "waiting for a generation" flag when dropped.
struct WaitingFlag(Arc<AtomicBool>);

impl WaitingFlag {
    fn set(&self, waiting: bool) {
        self.0.store(waiting, Ordering::Relaxed);
    }
}

impl Drop for WaitingFlag {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// The work of one table: walks its generations and runs their stream readers.
pub(super) struct Worker {
    pub(super) fetcher: Arc<dyn GenerationFetcher>,
    /// Makes what each stream group's rows go to.
    pub(super) consumers: ConsumerKind,
    pub(super) settings: ReaderSettings,
    /// Where saved progress is loaded from, when loading is on.
    pub(super) loader: Option<Arc<dyn CDCCheckpointSaver>>,
    pub(super) start: DateTime<Utc>,
    /// The generations known so far, oldest first.
    pub(super) generations: Arc<Vec<GenerationTimestamp>>,
    /// Where the [`Follower`](super::Follower) publishes new lists of generations.
    pub(super) generations_rx: watch::Receiver<Arc<Vec<GenerationTimestamp>>>,
    /// Set while this table waits for its current generation's successor (the follower
    /// polls only then).
    pub(super) waiting: Arc<AtomicBool>,
    pub(super) loaded_generation: Option<GenerationTimestamp>,
    /// The table's CDC `ttl` (`None`: rows do not expire, or it is unknown).
    pub(super) log_ttl: Option<Duration>,
    /// Receives the reader's events.
    pub(super) events: Option<EventListener>,
    pub(super) keyspace: String,
    pub(super) table: String,
    /// The table's CDC log table (whose replicas the stream groups follow).
    pub(super) log_table: String,
    /// The most stream ids one log query names.
    pub(super) max_streams_per_query: usize,
    /// Where the worker checks that the table still logs its changes (`None` in unit tests
    /// without a cluster).
    pub(super) cdc_probe: Option<Arc<Session>>,
    /// The reader's end, which the worker sets itself when CDC is disabled.
    pub(super) end_tx: Arc<watch::Sender<Option<DateTime<Utc>>>>,
    /// Set when CDC was found disabled: everything before it is read, then the reader ends
    /// with [`CDCError::CdcDisabled`].
    pub(super) disabled_until: Option<DateTime<Utc>>,
}

impl Worker {
    /// After a check found CDC disabled on the table: read every change logged before now
    /// (plus the safety interval, for the nodes' clocks), then end.
    fn cdc_disabled(&mut self) {
        let until = ceil_to_millis(crate::base::time::plus(
            Utc::now(),
            self.settings.safety_interval,
        ));
        warn!(
            keyspace = %self.keyspace,
            table = %self.table,
            "CDC was disabled on the table: reading every change logged before {until}, then stopping"
        );
        self.disabled_until = Some(until);
        self.end_tx
            .send_modify(|end| *end = Some(end.map_or(until, |e| e.min(until))));
    }

    /// Checks (once per poll for new generations) that CDC is still enabled on the table.
    pub(super) async fn check_cdc_enabled(&mut self) {
        let Some(session) = self.cdc_probe.clone() else {
            return;
        };
        if self.disabled_until.is_some() {
            return;
        }
        match crate::cluster::cdc_options::cdc_enabled(&session, &self.keyspace, &self.table).await
        {
            Ok(true) => {}
            Ok(false) => self.cdc_disabled(),
            Err(e) => warn!(error = %e, "could not check that CDC is still enabled"),
        }
    }

    pub(super) fn end(&self) -> Option<DateTime<Utc>> {
        *self.settings.end.borrow()
    }

    /// The table's result once it was read (by [`Self::run_generations`], or as a member of
    /// a consumer group): an error if CDC was found disabled on it.
    pub(super) fn finish(&self) -> Result<(), CDCError> {
        match self.disabled_until {
            Some(until) => Err(CDCError::CdcDisabled {
                keyspace: self.keyspace.clone(),
                table: self.table.clone(),
                until,
            }),
            None => Ok(()),
        }
    }

    /// Takes the newest list of generations the follower published.
    pub(super) fn refresh_generations(&mut self) {
        self.generations = self.generations_rx.borrow_and_update().clone();
    }

    pub(super) async fn run_generations(&mut self) -> Result<(), CDCError> {
        let first_from = self.loaded_generation.map_or(self.start, |g| g.timestamp);
        let Some(mut current) = generation_covering(&self.generations, first_from) else {
            return Ok(());
        };
        let mut first = true;
        loop {
            if self.end().is_some_and(|e| e <= current.timestamp) {
                return Ok(());
            }
            self.run_generation(current, first).await?;
            first = false;
            self.refresh_generations();
            let next = next_generation(&self.generations, &current);
            match next {
                Some(next) if self.end().is_none_or(|e| e > next.timestamp) => current = next,
                _ => return Ok(()),
            }
        }
    }

    /// The stream groups of a generation, retrying transient failures (a node may be down
    /// while the topology changes) with capped exponential backoff.
    pub(super) async fn fetch_stream_groups(
        &self,
        generation: &GenerationTimestamp,
    ) -> Result<Vec<Vec<crate::base::cdc_types::StreamID>>, CDCError> {
        let mut backoff = Backoff::new(self.settings.give_up_after);
        loop {
            match self.fetcher.fetch_stream_groups(generation).await {
                Err(e) if e.is_transient() => {
                    let kind = retry_kind_of(&e);
                    if !backoff
                        .wait("reading the streams of a generation", &e)
                        .await
                    {
                        return Err(e);
                    }
                    self.settings.stats.retry(kind);
                }
                other => return other,
            }
        }
    }

    /// The oldest time whose rows may still be in the log, or `None` when rows do not
    /// expire.
    ///
    /// Scylla writes every log cell with the CDC `ttl` as its TTL (the `ttl` CDC option: "per-cell
    /// TTL on every log cell", the project's `design/scylla-cdc-semantics.md` §1.1); as for any
    /// TTL, the expiry is computed from the coordinator's clock when the write is applied
    /// (ScyllaDB's "Expiring Data with Time to Live" documentation), in whole seconds, which
    /// only makes rows expire earlier. A row with `cdc$time` `c` is gone once that node's
    /// clock passes about `c + ttl`. The node's clock and the writer's timestamp may
    /// be off ours by as much as the safety interval allows for, so a row is only taken as
    /// expired when it is older than `now - ttl - safety_interval`: reading never starts after
    /// a row that may still be in the log.
    pub(super) fn oldest_readable(&self) -> Option<DateTime<Utc>> {
        let ttl = self.log_ttl?;
        let margin = ttl.checked_add(self.settings.safety_interval)?;
        let now = self.settings.clock.now();
        now.checked_sub_signed(crate::base::time::to_delta(margin))
            .map(crate::base::time::truncate_to_millis)
    }

    /// Reports a gap of expired changes: the event, the metric and a WARN line.
    pub(super) fn report_gap(&self, gap: ExpiredGap) {
        let width = gap.width();
        warn!(
            generation = %gap.generation,
            streams = gap.streams.len(),
            requested = %gap.requested,
            first_readable = %gap.first_readable,
            gap_seconds = width.as_secs_f64(),
            ttl_seconds = gap.ttl.as_secs(),
            "changes were lost to the CDC log's TTL: reading of {}.{} was asked to start at {} but the log only holds changes from {} on",
            gap.keyspace, gap.table, gap.requested, gap.first_readable,
        );
        metrics::gauge!(
            "scylla_cdc_expired_gap_seconds",
            "keyspace" => gap.keyspace.clone(),
            "table" => gap.table.clone()
        )
        .increment(width.as_secs_f64());
        if let Some(listener) = &self.events {
            listener(&ReaderEvent::ExpiredGap(gap));
        }
    }

    /// Where each of `streams` (of `generation`) starts: the generation's start after the
    /// first generation; else its saved checkpoint when loading (the generation's start for
    /// a stream without one when resuming a saved generation), or the reader's start.
    ///
    /// Per stream, not per group: checkpoints are stored per stream, and the groups read
    /// now (by replica) need not be the groups that saved them (one per vnode before), so a
    /// group's streams may have been saved at different times.
    async fn stream_starts(
        &self,
        generation: &GenerationTimestamp,
        streams: &[crate::base::cdc_types::StreamID],
        first: bool,
    ) -> Result<Vec<DateTime<Utc>>, CDCError> {
        if !first {
            return Ok(vec![generation.timestamp; streams.len()]);
        }
        if let Some(loader) = &self.loader {
            let mut backoff = Backoff::new(self.settings.give_up_after);
            let saved = retry_transient("loading stream checkpoints", &mut backoff, || async {
                loader
                    .load_stream_checkpoints(streams)
                    .await
                    .map_err(|source| CDCError::Checkpoint {
                        action: "load stream checkpoints",
                        source,
                    })
            })
            .await?;
            if saved.len() != streams.len() {
                return Err(CDCError::Checkpoint {
                    action: "load stream checkpoints",
                    source: anyhow::anyhow!(
                        "the checkpoint saver returned {} checkpoints for {} streams",
                        saved.len(),
                        streams.len()
                    ),
                });
            }
            let resuming = self.loaded_generation.is_some();
            return Ok(saved
                .into_iter()
                .map(|saved| match saved {
                    Some(saved) => saved.max(generation.timestamp),
                    // Resuming a generation this stream saved nothing in: read it from its
                    // start rather than risk skipping what was written while the reader
                    // was down.
                    None if resuming => generation.timestamp,
                    None => self.start.max(generation.timestamp),
                })
                .collect());
        }
        Ok(vec![self.start.max(generation.timestamp); streams.len()])
    }

    /// The groups the streams of a generation are read in: by replica when the driver
    /// knows the cluster, in chunks the cluster accepts.
    pub(super) fn read_groups(
        &self,
        groups: Vec<Vec<crate::base::cdc_types::StreamID>>,
    ) -> Vec<ReadGroup> {
        match &self.cdc_probe {
            Some(session) => group_with_session(
                session,
                &self.keyspace,
                &self.log_table,
                groups,
                self.max_streams_per_query,
            ),
            None => group_by_replica(groups, |_| None, self.max_streams_per_query),
        }
    }

    /// Reads one generation until every group reaches its end (or the reader's end).
    async fn run_generation(
        &mut self,
        generation: GenerationTimestamp,
        first: bool,
    ) -> Result<(), CDCError> {
        let listed = self.fetch_stream_groups(&generation).await?;
        let listed_groups = listed.len();
        let groups = self.read_groups(listed);
        info!(
            generation = %generation,
            groups = groups.len(),
            listed_groups,
            routed = groups.iter().filter(|g| g.replica.is_some()).count(),
            "reading a CDC generation"
        );
        self.refresh_generations();
        if let Some(saver) = &self.settings.saver
            && let Err(e) = saver.save_new_generation(&generation).await
        {
            warn!(error = %e, generation = %generation, "could not save the CDC generation");
        }
        let next = next_generation(&self.generations, &generation);
        let (gen_end_tx, gen_end_rx) = watch::channel(next.map(|g| g.timestamp));
        let mut readers = JoinSet::new();
        // Reading starts no earlier than the oldest time still in the log, nor later than
        // this generation's end (or the reader's) when all of it has expired.
        let oldest = self
            .oldest_readable()
            .map(|o| next.map_or(o, |n| o.min(n.timestamp)))
            .map(|o| self.end().map_or(o, |e| o.min(e)));
        let mut gap: Option<(DateTime<Utc>, Vec<crate::base::cdc_types::StreamID>)> = None;
        // Every group's start is known before any group runs: the low watermark is the least
        // position of all of them.
        let all_streams: Vec<_> = groups.iter().flat_map(|g| g.streams.clone()).collect();
        let mut all_starts = self
            .stream_starts(&generation, &all_streams, first)
            .await?
            .into_iter();
        let mut starts = Vec::with_capacity(groups.len());
        let mut stream_starts = Vec::with_capacity(groups.len());
        for group in &groups {
            let mut these = Vec::with_capacity(group.streams.len());
            for (stream, mut start) in group.streams.iter().zip(all_starts.by_ref()) {
                if let Some(oldest) = oldest
                    && start < oldest
                {
                    let (requested, streams) = gap.get_or_insert_with(|| (start, Vec::new()));
                    *requested = (*requested).min(start);
                    streams.push(*stream);
                    start = oldest;
                }
                these.push(start);
            }
            // The group reads from its earliest stream.
            starts.push(these.iter().copied().min().unwrap_or(generation.timestamp));
            stream_starts.push(these);
        }
        let stream_count = groups.iter().map(|g| g.streams.len()).sum();
        let slots = self
            .settings
            .stats
            .begin_generation(stream_count, &starts, !first);
        for (((group, start), these), slot) in
            groups.into_iter().zip(starts).zip(stream_starts).zip(slots)
        {
            let ReadGroup {
                streams: group,
                replica,
            } = group;
            let mut settings = self.settings.clone();
            if let Some(routed) = replica.and_then(|r| settings.source.routed(r)) {
                settings.source = routed;
            }
            let sink = self.consumers.new_sink(&self.table).await;
            let span = info_span!(
                "stream_reader",
                stream = %group.first().map(|s| s.to_string()).unwrap_or_default(),
                streams = group.len(),
                generation = %generation,
                window_start = tracing::field::Empty,
            );
            let reader = StreamReader::new(
                settings,
                group,
                generation,
                gen_end_rx.clone(),
                start,
                sink,
                slot,
            )
            .with_stream_starts(these);
            readers.spawn(reader.run().instrument(span));
        }
        if let (Some((requested, streams)), Some(first_readable), Some(ttl)) =
            (gap, oldest, self.log_ttl)
        {
            self.report_gap(ExpiredGap {
                keyspace: self.keyspace.clone(),
                table: self.table.clone(),
                generation,
                streams,
                requested,
                first_readable,
                ttl,
            });
        }
        let mut known_next = next.is_some();
        let waiting = WaitingFlag(self.waiting.clone());
        waiting.set(!known_next);
        // Whether the follower still publishes (it lives as long as the reader's task).
        let mut followed = true;
        // Checkpoint rows have a TTL: re-save the generation now and then, so that a reader
        // that stays in one generation for long still finds it after a restart.
        let mut resave = tokio::time::interval(GENERATION_RESAVE_INTERVAL);
        resave.tick().await;
        loop {
            tokio::select! {
                _ = resave.tick(), if self.settings.saver.is_some() => {
                    if let Some(saver) = &self.settings.saver
                        && let Err(e) = saver.save_new_generation(&generation).await
                    {
                        warn!(error = %e, generation = %generation, "could not save the CDC generation");
                    }
                }
                joined = readers.join_next() => match joined {
                    None => return Ok(()),
                    Some(Ok(Ok(()))) => {}
                    // Dropping `readers` on return aborts the other stream readers.
                    Some(Ok(Err(e))) => return Err(e),
                    Some(Err(e)) => return Err(CDCError::Task(e.to_string())),
                },
                _ = tokio::time::sleep(self.settings.sleep_interval.max(MIN_GENERATION_POLL)), if !known_next => {
                    self.check_cdc_enabled().await;
                }
                changed = self.generations_rx.changed(), if !known_next && followed => {
                    if changed.is_err() {
                        followed = false;
                        continue;
                    }
                    self.refresh_generations();
                    if let Some(n) = next_generation(&self.generations, &generation) {
                        info!(next = %n, "a new CDC generation was published");
                        known_next = true;
                        waiting.set(false);
                        // Receivers live as long as their readers; none left is fine.
                        let _ = gen_end_tx.send(Some(n.timestamp));
                    }
                }
            }
        }
    }
}
