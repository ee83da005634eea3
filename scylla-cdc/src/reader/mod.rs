//! The reader's public face: [`CDCLogReaderBuilder`] validates the configuration and the
//! table, [`CDCLogReader`] controls a running reader and [`CDCReaderHandle`] resolves to its
//! result.
//!
//! `build()` spawns one task per reader. In it, one [`Worker`] per table walks the
//! generations of its table: for each it starts one [`StreamReader`] per stream group (in a
//! `JoinSet`), tells the readers where the current generation ends once it is known, and
//! moves on only when every reader has reached that point. One [`Follower`] beside them
//! polls for new generations, once per sleep interval for every table that is waiting for
//! one: a vnode keyspace has one list of generations for all its tables (one poll serves
//! them all), a tablet keyspace one per table. Each table has its own log query, stream
//! readers, statistics (labelled by table), checkpoints, CDC-disabled check and
//! expired-gap reports; the session, the consumer factory, the end, the rate limiter and the
//! checkpoint saver are the reader's.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use futures::TryFutureExt;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{Instrument, info, info_span, warn};

use crate::base::cdc_types::GenerationTimestamp;
use crate::base::error::{Backoff, CDCError, retry_transient};
use crate::base::time::{Clock, SystemClock};
use crate::change::ChangeConsumerFactory;
use crate::checkpoints::CDCCheckpointSaver;
use crate::cluster::generations::{
    GenerationFetcher, SharedStreams, TabletGenerationFetcher, VnodeGenerationFetcher,
    generation_covering, next_generation,
};
use crate::cluster::replicas::{
    DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY, ReadGroup, group_by_replica,
    group_with_session,
};
use crate::consumer::ConsumerFactory;
use crate::report::events::{EventListener, ExpiredGap, ReaderEvent};
use crate::report::progress::{Overall, Progress, RateLimiter, ReaderStats, Stats, retry_kind_of};
use crate::stream::error_policy::ConsumerErrorPolicy;
use crate::stream::sink::ConsumerKind;
use crate::stream::{DriverLogSource, LogSource, ReaderSettings, StreamReader};

mod member;

/// Default lease duration of a consumer group's member: 10 s.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(10);
/// The longest [`CDCLogReaderBuilder::lease_duration`]: a day. A member's row lives three
/// lease durations (a CQL TTL, at most 20 years), and a dead member's units wait a lease
/// duration before they are taken over.
pub const MAX_LEASE_DURATION: Duration = Duration::from_secs(24 * 3600);
/// The shortest [`CDCLogReaderBuilder::renew_interval`]: a millisecond, the resolution of the
/// runtime's timers (a shorter interval renews every millisecond all the same, while the
/// member takes its leases to last only the lease duration less half of it).
pub const MIN_RENEW_INTERVAL: Duration = Duration::from_millis(1);

/// A consumer group's settings ([`CDCLogReaderBuilder::group`]).
#[derive(Clone, Debug)]
struct GroupOptions {
    name: String,
    member_id: Option<String>,
    lease_duration: Duration,
    renew_interval: Option<Duration>,
    lease_table: Option<(String, String)>,
}

impl GroupOptions {
    fn renew_interval(&self) -> Duration {
        self.renew_interval.unwrap_or(self.lease_duration / 3)
    }
}

/// Default longest window: 60 s.
pub const DEFAULT_WINDOW_SIZE: Duration = Duration::from_secs(60);
/// Default safety interval: 30 s.
pub const DEFAULT_SAFETY_INTERVAL: Duration = Duration::from_secs(30);
/// Default pause once caught up: 10 s.
pub const DEFAULT_SLEEP_INTERVAL: Duration = Duration::from_secs(10);
/// Default least time between two checkpoints of one stream group: 10 s.
pub const DEFAULT_PAUSE_BETWEEN_SAVES: Duration = Duration::from_secs(10);

/// How often the current generation is saved again while a reader stays in it.
const GENERATION_RESAVE_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest [`CDCLogReaderBuilder::sleep_interval`]: a day. It is also the longest pause
/// of an idle stream group ([`CDCLogReaderBuilder::max_idle_latency`]).
pub const MAX_SLEEP_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// The shortest [`CDCLogReaderBuilder::window_size`]: a millisecond, the precision of window
/// bounds (CQL timestamps); a shorter window would never move past its start.
pub const MIN_WINDOW_SIZE: Duration = Duration::from_millis(1);
/// The least time between two looks for a new generation (and at the table's CDC option),
/// whatever the [`CDCLogReaderBuilder::sleep_interval`].
pub const MIN_GENERATION_POLL: Duration = Duration::from_millis(100);

/// Rounds a point in time up to whole milliseconds, so that a limit in between two
/// milliseconds still lets every earlier row through.
fn ceil_to_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = crate::base::time::truncate_to_millis(t);
    if floor == t {
        t
    } else {
        // Within the last millisecond chrono can represent: `t` itself.
        floor
            .checked_add_signed(TimeDelta::milliseconds(1))
            .unwrap_or(t)
    }
}

/// Configures and starts a [`CDCLogReader`].
///
/// Required: [`session`](Self::session), [`keyspace`](Self::keyspace),
/// [`table_name`](Self::table_name) (or [`tables`](Self::tables)),
/// [`consumer_factory`](Self::consumer_factory) (or
/// [`change_consumer_factory`](Self::change_consumer_factory)).
#[must_use]
pub struct CDCLogReaderBuilder {
    session: Option<Arc<Session>>,
    keyspace: Option<String>,
    /// The base tables to read (empty until set).
    tables: Vec<String>,
    consumer_factory: Option<ConsumerKind>,
    start_timestamp: Option<DateTime<Utc>>,
    /// When the builder was made: the start when none is given.
    created_at: DateTime<Utc>,
    end_timestamp: Option<DateTime<Utc>>,
    window_size: Duration,
    safety_interval: Duration,
    sleep_interval: Duration,
    checkpoint_saver: Option<Arc<dyn CDCCheckpointSaver>>,
    should_save_progress: Option<bool>,
    should_load_progress: Option<bool>,
    pause_between_saves: Duration,
    give_up_after: Option<Duration>,
    clock: Arc<dyn Clock>,
    /// Receives the reader's events.
    event_listener: Option<EventListener>,
    /// The tables' CDC `ttl` (`None`: no expiry, or unknown), as `build` would read it.
    #[cfg(test)]
    log_ttl: Option<Duration>,
    /// The cap on rows per second of the whole reader (`None`: unlimited).
    max_rows_per_second: Option<u64>,
    /// What happens to a row the consumer cannot take.
    on_consumer_error: ConsumerErrorPolicy,
    /// The most stream ids one log query names.
    max_partition_key_restrictions_per_query: usize,
    /// The bound on a row's delay while its group is idle (`None`: safety interval plus
    /// sleep interval).
    max_idle_latency: Option<Duration>,
    /// The consumer group this reader is a member of (`None`: it reads every stream).
    group: Option<GroupOptions>,
    /// Group settings given before (or without) `group`: applied by it, refused without it.
    group_settings_without_group: Vec<&'static str>,
    pending_group: GroupOptions,
}

impl Default for CDCLogReaderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl CDCLogReaderBuilder {
    /// A builder with the defaults: start at this call (see
    /// [`start_timestamp`](Self::start_timestamp)), no end, 60 s windows, 30 s safety
    /// interval, 10 s sleep, no checkpoints.
    pub fn new() -> Self {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        Self {
            session: None,
            keyspace: None,
            tables: Vec::new(),
            consumer_factory: None,
            start_timestamp: None,
            created_at: clock.now(),
            end_timestamp: None,
            window_size: DEFAULT_WINDOW_SIZE,
            safety_interval: DEFAULT_SAFETY_INTERVAL,
            sleep_interval: DEFAULT_SLEEP_INTERVAL,
            checkpoint_saver: None,
            should_save_progress: None,
            should_load_progress: None,
            pause_between_saves: DEFAULT_PAUSE_BETWEEN_SAVES,
            give_up_after: None,
            clock,
            event_listener: None,
            #[cfg(test)]
            log_ttl: None,
            max_rows_per_second: None,
            on_consumer_error: ConsumerErrorPolicy::default(),
            max_partition_key_restrictions_per_query:
                DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY,
            max_idle_latency: None,
            group: None,
            group_settings_without_group: Vec::new(),
            pending_group: GroupOptions {
                name: String::new(),
                member_id: None,
                lease_duration: DEFAULT_LEASE_DURATION,
                renew_interval: None,
                lease_table: None,
            },
        }
    }

    /// Makes this reader a member of the consumer group `name`: readers started with the same
    /// group name on the same table divide its units of work among themselves (a vnode
    /// keyspace: the streams of one vnode; a tablet keyspace: a tablet's stream), so that
    /// each change is read by one member. Membership and ownership live in a lease table
    /// next to the checkpoint table (`<checkpoint table>_leases`, created if missing; see
    /// [`lease_table`](Self::lease_table)); every decision is a lightweight transaction on it.
    ///
    /// - A member holds a lease per unit and renews them every
    ///   [`renew_interval`](Self::renew_interval); a unit whose lease was not renewed for a
    ///   [`lease_duration`](Self::lease_duration) is taken over by another member, which
    ///   resumes it from its checkpoint: changes after the last checkpoint are delivered again
    ///   (at least once), none is skipped, and a partition's changes stay in order.
    /// - A member stops reading a unit before its lease can run out when it cannot renew it
    ///   (Unavailable, timeouts, a request that hangs, a paused process: each reader checks
    ///   its deadline before every delivery), so two members never read one unit at the same
    ///   time. Lease transactions run at serial consistency SERIAL, so this holds with a lease
    ///   keyspace replicated over several data centres too.
    /// - Members hold equal shares (± 1): a new member asks the others for units, which they
    ///   hand over after reading to the end of their window and saving the checkpoint; a member
    ///   that stops ([`CDCLogReader::stop`], or its handle dropped) finishes its windows the
    ///   same way, renewing its leases meanwhile, and hands its units back.
    /// - The next generation's units are read once every unit of the current one is done.
    ///
    /// Needs a checkpoint saver that saves and loads, and stores its checkpoints in a table
    /// ([`crate::TableBackedCheckpointSaver`]) unless [`lease_table`](Self::lease_table) is
    /// set; every member must use the same checkpoint table and reader name. The low
    /// watermark and [`Progress`] are this member's: see [`Progress::group`].
    pub fn group(mut self, name: impl Into<String>) -> Self {
        let mut options = self.pending_group.clone();
        options.name = name.into();
        self.group = Some(options);
        self
    }

    fn with_group(mut self, setting: &'static str, f: impl Fn(&mut GroupOptions)) -> Self {
        f(&mut self.pending_group);
        match &mut self.group {
            Some(g) => f(g),
            None => self.group_settings_without_group.push(setting),
        }
        self
    }

    /// This member's id in its group (default: the host's name, the process id and 8 random
    /// hex digits). Ids must differ between the members running at one time.
    pub fn member_id(self, id: impl Into<String>) -> Self {
        let id = id.into();
        self.with_group("member_id", move |g| g.member_id = Some(id.clone()))
    }

    /// How long a member's lease on a unit lasts without renewal: how long a unit of a member
    /// that died waits before another member takes it over (default 10 s; more than zero, at
    /// most [`MAX_LEASE_DURATION`], a day).
    pub fn lease_duration(self, duration: Duration) -> Self {
        self.with_group("lease_duration", move |g| g.lease_duration = duration)
    }

    /// How often a member renews its leases and looks at the group (default: a third of the
    /// lease duration). Must be at least [`MIN_RENEW_INTERVAL`] (1 ms) and shorter than the
    /// lease duration.
    pub fn renew_interval(self, interval: Duration) -> Self {
        self.with_group("renew_interval", move |g| g.renew_interval = Some(interval))
    }

    /// The lease table of the group, `keyspace.table` (created if missing); default: the
    /// checkpoint table's name with `_leases` appended, in its keyspace.
    pub fn lease_table(self, keyspace: impl Into<String>, table: impl Into<String>) -> Self {
        let at = (keyspace.into(), table.into());
        self.with_group("lease_table", move |g| g.lease_table = Some(at.clone()))
    }

    /// What happens when the consumer fails on a row (returns an error or panics): retries,
    /// then stop, skip or write a dead letter. Default: three retries, 500 ms apart at first
    /// (doubling), then stop. See [`ConsumerErrorPolicy`].
    pub fn on_consumer_error(mut self, policy: ConsumerErrorPolicy) -> Self {
        self.on_consumer_error = policy;
        self
    }

    /// The session to read with (required).
    pub fn session(mut self, session: Arc<Session>) -> Self {
        self.session = Some(session);
        self
    }

    /// The keyspace of the base table, as stored (case-sensitive, unquoted) (required).
    pub fn keyspace(mut self, keyspace: impl Into<String>) -> Self {
        self.keyspace = Some(keyspace.into());
        self
    }

    /// The base table (not its `_scylla_cdc_log`), as stored (required, unless
    /// [`tables`](Self::tables) is set). The same as `tables([table_name])`: it replaces any
    /// table set before.
    pub fn table_name(mut self, table_name: impl Into<String>) -> Self {
        self.tables = vec![table_name.into()];
        self
    }

    /// Several base tables of the keyspace to read with one reader, as stored (not their
    /// `_scylla_cdc_log`). Replaces any table set before ([`table_name`](Self::table_name)
    /// is one table); the last call wins.
    ///
    /// The tables share the reader's session, task, generation polling (in a vnode keyspace
    /// one poll per sleep interval serves every table; in a tablet keyspace each table has
    /// its own streams, polled in the same round), consumer factory (asked for a consumer
    /// per table and stream group, see [`ConsumerFactory::new_consumer_for_table`]), end,
    /// [`max_rows_per_second`](Self::max_rows_per_second) and checkpoint saver. Each table
    /// keeps its own checkpoints: with several tables the saver is asked for a per-table view
    /// ([`CDCCheckpointSaver::for_table`]), and a table with no saved progress (e.g. one
    /// added to the reader later) starts at [`start_timestamp`](Self::start_timestamp).
    /// Rows say which table they are from ([`crate::CDCRow::table`]). Ordering and delivery
    /// guarantees are per stream of each table, as for one table; nothing is promised across
    /// tables.
    ///
    /// [`build`](Self::build) fails on an empty set, a table named twice, and (naming it) a
    /// table that does not exist or has no CDC. The first error of any table stops the whole
    /// reader; so does CDC being disabled on one of them (once every table has been read up
    /// to that moment).
    pub fn tables<I, S>(mut self, tables: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tables = tables.into_iter().map(Into::into).collect();
        self
    }

    /// Makes the consumers, one per table and stream group, which get the log row by row
    /// (required, unless [`change_consumer_factory`](Self::change_consumer_factory) is set;
    /// the last of the two calls wins).
    pub fn consumer_factory(mut self, factory: Arc<dyn ConsumerFactory>) -> Self {
        self.consumer_factory = Some(ConsumerKind::Rows(factory));
        self
    }

    /// Makes the consumers, one per stream group, which get whole [`Change`]s: every row of
    /// one stream with one `cdc$time`, delivered once complete, never split (the
    /// alternative to [`consumer_factory`](Self::consumer_factory); the last of the two calls
    /// wins). See the crate docs ("Whole changes") for how rows are assembled.
    ///
    /// [`Change`]: crate::Change
    pub fn change_consumer_factory(mut self, factory: Arc<dyn ChangeConsumerFactory>) -> Self {
        self.consumer_factory = Some(ConsumerKind::Changes(factory));
        self
    }

    /// Where reading starts when there is no saved progress: rows with an earlier `cdc$time`
    /// are not delivered.
    ///
    /// Default: the moment [`CDCLogReaderBuilder::new`] was called, not the moment
    /// [`build`](Self::build) runs. `build` connects, reads the schema and the generations and
    /// loads checkpoints, which takes seconds on a real cluster (longer while it retries);
    /// writes made meanwhile are delivered. A program that must deliver everything written
    /// after it was launched creates the builder first thing, or passes its launch time here.
    /// A saved checkpoint takes precedence when progress is loaded.
    pub fn start_timestamp(mut self, start: impl Into<DateTime<Utc>>) -> Self {
        self.start_timestamp = Some(start.into());
        self
    }

    /// Where reading ends: rows with an earlier `cdc$time` are delivered, then the handle
    /// resolves (default: never).
    pub fn end_timestamp(mut self, end: impl Into<DateTime<Utc>>) -> Self {
        self.end_timestamp = Some(end.into());
        self
    }

    /// Longest window one query covers (default 60 s; at least [`MIN_WINDOW_SIZE`], 1 ms:
    /// window bounds are whole milliseconds). Any longer value is allowed: a window also ends
    /// a safety interval before now.
    pub fn window_size(mut self, window_size: Duration) -> Self {
        self.window_size = window_size;
        self
    }

    /// How far behind "now" reading stays, so that writes in flight (and clock skew between
    /// nodes) are not missed (default 30 s). Zero is allowed (reading follows now closely);
    /// so is any longer value, which only delays reading (past the end of time, nothing is
    /// ever read).
    pub fn safety_interval(mut self, safety_interval: Duration) -> Self {
        self.safety_interval = safety_interval;
        self
    }

    /// How long a caught-up stream reader waits before its next window, and how often new
    /// generations are looked for (default 10 s, at most [`MAX_SLEEP_INTERVAL`], a day).
    ///
    /// Zero is allowed, as in scylla-cdc-rust: a caught-up group reads its next window as
    /// soon as the last one is done (one query per group per window, so the cluster is
    /// polled continuously). New generations and the table's CDC option are looked for every
    /// `max(sleep_interval, MIN_GENERATION_POLL)` ([`MIN_GENERATION_POLL`]: 100 ms), so a
    /// zero or tiny sleep interval does not poll the system tables continuously.
    ///
    /// A pause ends early when the reader is told to stop ([`CDCLogReader::stop_at`], as the
    /// programs do on SIGTERM) or a new generation is found: a long sleep interval never
    /// delays a graceful stop.
    pub fn sleep_interval(mut self, sleep_interval: Duration) -> Self {
        self.sleep_interval = sleep_interval;
        self
    }

    /// Where progress is saved and loaded. With a saver, saving and loading are on unless
    /// turned off.
    pub fn checkpoint_saver(mut self, saver: Arc<dyn CDCCheckpointSaver>) -> Self {
        self.checkpoint_saver = Some(saver);
        self
    }

    /// Whether to save checkpoints (default: true when a saver is set; true without a
    /// saver is an error).
    pub fn should_save_progress(mut self, save: bool) -> Self {
        self.should_save_progress = Some(save);
        self
    }

    /// Whether to resume from saved progress (default: true when a saver is set; true
    /// without a saver is an error).
    pub fn should_load_progress(mut self, load: bool) -> Self {
        self.should_load_progress = Some(load);
        self
    }

    /// Least time between two checkpoints of one stream group (default 10 s). Zero saves after
    /// every window; a group also saves when it finishes a generation and when it stops,
    /// whatever this is (so a very long pause saves only then).
    pub fn pause_between_saves(mut self, pause: Duration) -> Self {
        self.pause_between_saves = pause;
        self
    }

    /// Receives the reader's [`ReaderEvent`]s, such as [`ReaderEvent::ExpiredGap`] when the
    /// start (or a saved checkpoint) is older than what the log still holds.
    ///
    /// Called on the reader's task: it must return quickly (forward the event to a channel
    /// for slow work). Each event is also logged (`warn!` for an expired gap).
    pub fn on_event(mut self, listener: impl Fn(&ReaderEvent) + Send + Sync + 'static) -> Self {
        self.event_listener = Some(Arc::new(listener));
        self
    }

    /// Caps the rows read and delivered per second by the whole reader, all stream groups
    /// of all its tables together, so that catching up a backlog does not overload the cluster (default:
    /// unlimited; 0 is refused by [`build`](Self::build)).
    ///
    /// The groups share one token bucket (a burst of a tenth of a second's worth) and wait
    /// for it asynchronously. A group pays for the rows of a page in small chunks (a
    /// fiftieth of the rate, at most 1000 rows) just before delivering them, so that
    /// delivery is smooth even when a page holds several seconds' worth, and it requests its
    /// next page only once every row of the current page is paid for. The cap therefore
    /// holds for what is read from the cluster, not only for what is delivered: reading runs
    /// ahead of the cap by at most the one page a group may fetch in advance (the page that
    /// is prefetched while the consumer handles the current one is bought before it is
    /// requested).
    pub fn max_rows_per_second(mut self, rows: u64) -> Self {
        self.max_rows_per_second = Some(rows);
        self
    }

    /// The most stream ids one query of the log names (default 100, ScyllaDB's default
    /// `max_partition_key_restrictions_per_query`; must not be zero). Set it to the
    /// cluster's value if that was changed: a query naming more partition keys than the
    /// cluster allows fails.
    ///
    /// The reader groups the streams of a generation by the replica that owns them (node
    /// and shard, by the driver's token ring or tablet map) and reads each group, in chunks
    /// of at most this many streams, with one query per window sent to that shard. On a
    /// cluster of 3 nodes with 256 vnodes and 2 shards each, that is 18 queries per window
    /// instead of one per vnode (768). Streams whose replica the driver does not know are
    /// read in the groups the cluster lists them in (one per vnode, or one per tablet).
    pub fn max_partition_key_restrictions_per_query(mut self, max: usize) -> Self {
        self.max_partition_key_restrictions_per_query = max;
        self
    }

    /// Adaptive polling: the longest a row written while its stream group is idle waits
    /// before the query that reads it is sent, counted from its write (default: the safety
    /// interval plus the sleep interval, today's bound, so that the default polls as often as
    /// without adaptive polling).
    ///
    /// A caught-up group whose last window held no row waits twice as long before its next
    /// window as after the one before (from the sleep interval), up to `max_idle_latency`
    /// minus the safety interval; its first row makes it wait only the sleep interval again.
    /// A row is then delivered at most `max_idle_latency` plus the time of the read after
    /// it was written. Raising it (say to 2 minutes with the default 30 s safety interval)
    /// cuts the queries of idle groups by up to the ratio of the longest pause to the sleep
    /// interval. A value below the safety interval plus the sleep interval means no back-off;
    /// a pause never exceeds [`MAX_SLEEP_INTERVAL`] (a day) nor delays a stop, whatever the
    /// value.
    pub fn max_idle_latency(mut self, max_idle_latency: Duration) -> Self {
        self.max_idle_latency = Some(max_idle_latency);
        self
    }

    /// The longest pause of an idle group (see [`max_idle_latency`](Self::max_idle_latency)).
    fn max_idle_pause(&self) -> Duration {
        self.max_idle_latency
            .map_or(self.sleep_interval, |l| {
                l.saturating_sub(self.safety_interval)
            })
            .clamp(
                self.sleep_interval,
                MAX_SLEEP_INTERVAL.max(self.sleep_interval),
            )
    }

    /// Sets the log's TTL, as `build` reads it from the table's schema.
    #[cfg(test)]
    fn log_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.log_ttl = ttl;
        self
    }

    /// How long a request that fails transiently (timeouts, `Overloaded`, unavailable
    /// replicas, broken connections: see [`crate::is_transient`]) keeps being retried, counted
    /// from its first failure; then the reader fails with the last error (default: retry
    /// forever).
    ///
    /// Applies to every step of [`build`](Self::build) (the schema checks, the prepares, the
    /// generation reads, loading saved progress) and to the reads while running. Each retry
    /// logs a WARN line with its cause, so a cluster that is gone for good is visible in the
    /// log either way. A definite answer (missing keyspace or table, CDC off, a refused
    /// permission) is never retried.
    ///
    /// Zero gives up at the first transient failure; a duration past the end of any clock
    /// (such as `Duration::MAX`) retries forever, as without this setting.
    pub fn give_up_after(mut self, give_up_after: Duration) -> Self {
        self.give_up_after = Some(give_up_after);
        self
    }

    /// Replaces the clock (and the default start, which is the new clock's "now").
    #[cfg(test)]
    fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.created_at = clock.now();
        self.clock = clock;
        self
    }

    /// Checks the configuration and the tables, then starts reading in a background task.
    ///
    /// Returns the reader (to stop it) and a handle that resolves to the reader's result
    /// (dropping the handle stops the reader).
    /// Errors: a missing option, an invalid configuration (a window shorter than
    /// [`MIN_WINDOW_SIZE`], a sleep interval longer than [`MAX_SLEEP_INTERVAL`], zero
    /// `max_rows_per_second` or `max_partition_key_restrictions_per_query`, a consumer
    /// group's lease duration over [`MAX_LEASE_DURATION`] or not longer than its renew
    /// interval, a renew interval under [`MIN_RENEW_INTERVAL`], end not after start, no table
    /// or a table named twice), a
    /// missing keyspace or table, a table without CDC, a failed metadata query, a saver that
    /// cannot serve several tables ([`CDCCheckpointSaver::for_table`]), or a failure to load
    /// saved progress.
    pub async fn build(self) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let session = self
            .session
            .clone()
            .ok_or(CDCError::MissingOption("session"))?;
        let keyspace = self
            .keyspace
            .clone()
            .ok_or(CDCError::MissingOption("keyspace"))?;
        let tables = self.table_set()?;
        let consumers = self
            .consumer_factory
            .clone()
            .ok_or(CDCError::MissingOption("consumer_factory"))?;
        let (save, load) = self.validate()?;

        // Every step retries transient failures (a node overloaded, timing out or restarting
        // while the reader starts); only a definite answer ends start-up.
        let give_up_after = self.give_up_after;
        let backoff = || Backoff::new(give_up_after);
        let mut log_ttls = Vec::with_capacity(tables.len());
        for table in &tables {
            retry_transient("checking the table", &mut backoff(), || {
                check_table(&session, &keyspace, table)
            })
            .await?;
            log_ttls.push(
                retry_transient("reading the table's CDC options", &mut backoff(), || {
                    read_log_ttl(&session, &keyspace, table)
                })
                .await?,
            );
        }
        let tablets = retry_transient("reading the keyspace's replication", &mut backoff(), || {
            uses_tablets(&session, &keyspace)
        })
        .await?;
        // Vnode keyspaces: one list of generations and streams for every table (read once
        // for all of them).
        let shared: Option<Arc<dyn GenerationFetcher>> = if tablets {
            None
        } else {
            let fetcher =
                retry_transient("preparing the generation queries", &mut backoff(), || {
                    VnodeGenerationFetcher::new(session.clone())
                })
                .await?;
            Some(if tables.len() > 1 {
                Arc::new(SharedStreams::new(Arc::new(fetcher)))
            } else {
                Arc::new(fetcher)
            })
        };
        let mut setups = Vec::with_capacity(tables.len());
        for (table, log_ttl) in tables.into_iter().zip(log_ttls) {
            let fetcher: Arc<dyn GenerationFetcher> = match &shared {
                Some(f) => f.clone(),
                None => Arc::new(
                    retry_transient("preparing the generation queries", &mut backoff(), || {
                        TabletGenerationFetcher::new(session.clone(), &keyspace, &table)
                    })
                    .await?,
                ),
            };
            let log_table = format!("{table}_scylla_cdc_log");
            let source = Arc::new(
                retry_transient("preparing the CDC log query", &mut backoff(), || {
                    DriverLogSource::new(session.clone(), &keyspace, &log_table)
                })
                .await?,
            );
            setups.push(TableSetup {
                table,
                log_table,
                fetcher,
                source,
                log_ttl,
            });
        }
        self.start(setups, consumers, keyspace, save, load).await
    }

    /// The tables to read: at least one, none twice.
    fn table_set(&self) -> Result<Vec<String>, CDCError> {
        if self.tables.is_empty() {
            return Err(CDCError::MissingOption("table_name"));
        }
        for (i, t) in self.tables.iter().enumerate() {
            if self.tables[..i].contains(t) {
                return Err(CDCError::InvalidConfig(format!(
                    "table `{t}` is named twice in the reader's tables"
                )));
            }
        }
        Ok(self.tables.clone())
    }

    /// Validates options that need no cluster; returns whether to save and to load.
    fn validate(&self) -> Result<(bool, bool), CDCError> {
        if self.window_size < MIN_WINDOW_SIZE {
            return Err(CDCError::InvalidConfig(format!(
                "window_size must be at least {MIN_WINDOW_SIZE:?} (window bounds are whole \
                 milliseconds; it was {:?})",
                self.window_size
            )));
        }
        if self.sleep_interval > MAX_SLEEP_INTERVAL {
            return Err(CDCError::InvalidConfig(format!(
                "sleep_interval must be at most {MAX_SLEEP_INTERVAL:?} (it was {:?})",
                self.sleep_interval
            )));
        }
        if self.max_partition_key_restrictions_per_query == 0 {
            return Err(CDCError::InvalidConfig(
                "max_partition_key_restrictions_per_query must be greater than zero".into(),
            ));
        }
        if self.max_rows_per_second == Some(0) {
            return Err(CDCError::InvalidConfig(
                "max_rows_per_second must be greater than zero (leave it unset for no limit)"
                    .into(),
            ));
        }
        if let (Some(s), Some(e)) = (self.start_timestamp, self.end_timestamp)
            && e <= s
        {
            return Err(CDCError::InvalidConfig(format!(
                "end_timestamp ({e}) must be after start_timestamp ({s})"
            )));
        }
        let has_saver = self.checkpoint_saver.is_some();
        let save = self.should_save_progress.unwrap_or(has_saver);
        let load = self.should_load_progress.unwrap_or(has_saver);
        if (save || load) && !has_saver {
            return Err(CDCError::MissingOption("checkpoint_saver"));
        }
        self.validate_group(save, load)?;
        Ok((save, load))
    }

    /// Checks the consumer group's settings.
    fn validate_group(&self, save: bool, load: bool) -> Result<(), CDCError> {
        let Some(g) = &self.group else {
            if let Some(setting) = self.group_settings_without_group.first() {
                return Err(CDCError::InvalidConfig(format!(
                    "`{setting}` is a setting of a consumer group: set `group` too"
                )));
            }
            return Ok(());
        };
        if g.name.is_empty() {
            return Err(CDCError::InvalidConfig(
                "the consumer group's name must not be empty".into(),
            ));
        }
        if g.member_id.as_deref() == Some("") {
            return Err(CDCError::InvalidConfig(
                "the member id must not be empty".into(),
            ));
        }
        if self.checkpoint_saver.is_none() {
            return Err(CDCError::InvalidConfig(
                "a consumer group needs a checkpoint saver (members resume each other's units \
                 from their checkpoints): set `checkpoint_saver`"
                    .into(),
            ));
        }
        if !save || !load {
            return Err(CDCError::InvalidConfig(
                "a consumer group needs checkpoints saved and loaded (members resume each \
                 other's units from them)"
                    .into(),
            ));
        }
        if g.lease_duration > MAX_LEASE_DURATION {
            return Err(CDCError::InvalidConfig(format!(
                "lease_duration must be at most 1 day (it was {:?})",
                g.lease_duration
            )));
        }
        let renew = g.renew_interval();
        if renew < MIN_RENEW_INTERVAL || g.lease_duration <= renew {
            return Err(CDCError::InvalidConfig(format!(
                "the lease duration ({:?}) must be longer than the renew interval ({renew:?}), \
                 which must be at least {MIN_RENEW_INTERVAL:?}",
                g.lease_duration
            )));
        }
        if self.lease_table_of(g).is_none() {
            return Err(CDCError::InvalidConfig(
                "a consumer group needs a lease table: use a TableBackedCheckpointSaver (the \
                 lease table goes next to its table) or set `lease_table`"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Where the group's lease table is.
    fn lease_table_of(&self, g: &GroupOptions) -> Option<(String, String)> {
        g.lease_table.clone().or_else(|| {
            self.checkpoint_saver
                .as_ref()?
                .checkpoint_table()
                .map(|(ks, t)| (ks, format!("{t}_leases")))
        })
    }

    /// Starts the reader's task with the given tables (their fetchers and log sources).
    async fn start(
        self,
        setups: Vec<TableSetup>,
        consumers: ConsumerKind,
        keyspace: String,
        save: bool,
        load: bool,
    ) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let start = self.start_timestamp.unwrap_or(self.created_at);
        let backoff = || Backoff::new(self.give_up_after);
        let several = setups.len() > 1;
        // One followed list of generations per distinct fetcher: the vnode keyspace's one
        // for all tables, or one per tablet table.
        let mut followed: Vec<Followed> = Vec::new();
        let (end_tx, end_rx) = watch::channel(self.end_timestamp.map(ceil_to_millis));
        let end_tx = Arc::new(end_tx);
        let (stop_tx, mut stop_rx) = watch::channel(false);
        let overall = Arc::new(Overall::new(setups.len()));
        let limiter = self
            .max_rows_per_second
            .map(|n| Arc::new(RateLimiter::new(n)));
        // One prefetch budget for every group of every table.
        let prefetch = Arc::new(tokio::sync::Semaphore::new(crate::stream::PREFETCH_PAGES));
        let mut workers = Vec::with_capacity(setups.len());
        let mut all_stats = Vec::with_capacity(setups.len());
        for (index, setup) in setups.into_iter().enumerate() {
            let TableSetup {
                table,
                log_table,
                fetcher,
                source,
                log_ttl,
            } = setup;
            let position = followed
                .iter()
                .position(|f| Arc::ptr_eq(&f.fetcher, &fetcher));
            let position = match position {
                Some(p) => p,
                None => {
                    let generations =
                        retry_transient("reading the CDC generations", &mut backoff(), || {
                            fetcher.fetch_all_generations()
                        })
                        .await?;
                    if generations.is_empty() {
                        return Err(CDCError::NoGeneration { keyspace, table });
                    }
                    followed.push(Followed {
                        fetcher: fetcher.clone(),
                        generations: watch::channel(Arc::new(generations)).0,
                        waiting: Vec::new(),
                    });
                    followed.len() - 1
                }
            };
            let waiting = Arc::new(AtomicBool::new(false));
            let follow = &mut followed[position];
            follow.waiting.push(waiting.clone());
            let generations_rx = follow.generations.subscribe();
            let generations = generations_rx.borrow().clone();
            let saver = match &self.checkpoint_saver {
                Some(saver) if several => {
                    Some(
                        saver
                            .for_table(&table)
                            .map_err(|source| CDCError::Checkpoint {
                                action: "serve several tables",
                                source,
                            })?,
                    )
                }
                other => other.clone(),
            };
            let loaded_generation = match (&saver, load) {
                (Some(saver), true) => {
                    retry_transient("loading the saved generation", &mut backoff(), || async {
                        saver
                            .load_last_generation()
                            .await
                            .map_err(|source| CDCError::Checkpoint {
                                action: "load the last generation",
                                source,
                            })
                    })
                    .await?
                }
                _ => None,
            };
            let group = match &self.group {
                None => None,
                Some(g) => {
                    let session = self
                        .session
                        .clone()
                        .ok_or(CDCError::MissingOption("session"))?;
                    let at = self.lease_table_of(g).ok_or_else(|| {
                        CDCError::InvalidConfig("a consumer group needs a lease table".into())
                    })?;
                    let lease = retry_transient("opening the lease table", &mut backoff(), || {
                        crate::group::lease::LeaseTable::open(
                            session.clone(),
                            (&at.0, &at.1),
                            &g.name,
                            &keyspace,
                            &table,
                        )
                    })
                    .await?;
                    Some(member::GroupRuntime {
                        lease,
                        member: g
                            .member_id
                            .clone()
                            .unwrap_or_else(crate::group::lease::default_member_id),
                        lease_duration: g.lease_duration,
                        renew_interval: g.renew_interval(),
                        stop: stop_rx.clone(),
                    })
                }
            };
            let stats = Arc::new(
                Stats::new(&keyspace, &table, self.clock.clone(), self.safety_interval)
                    .in_reader(overall.clone(), index),
            );
            all_stats.push((table.clone(), stats.clone()));
            workers.push(Worker {
                fetcher,
                consumers: consumers.clone(),
                settings: ReaderSettings {
                    table: Arc::from(table.as_str()),
                    window_size: self.window_size,
                    safety_interval: self.safety_interval,
                    sleep_interval: self.sleep_interval,
                    max_idle_pause: self.max_idle_pause(),
                    pause_between_saves: self.pause_between_saves,
                    saver: if save { saver.clone() } else { None },
                    clock: self.clock.clone(),
                    source,
                    end: end_rx.clone(),
                    give_up_after: self.give_up_after,
                    stats,
                    limiter: limiter.clone(),
                    on_error: self.on_consumer_error.clone(),
                    keyspace: Arc::from(keyspace.as_str()),
                    prefetch: prefetch.clone(),
                },
                loader: if load { saver } else { None },
                start,
                generations,
                generations_rx,
                waiting,
                loaded_generation,
                log_ttl,
                events: self.event_listener.clone(),
                keyspace: keyspace.clone(),
                table,
                log_table,
                max_streams_per_query: self.max_partition_key_restrictions_per_query,
                cdc_probe: self.session.clone(),
                end_tx: end_tx.clone(),
                disabled_until: None,
                group,
            });
        }
        let stats = ReaderStats::new(all_stats, overall, self.clock.clone());
        let follower = Follower {
            followed,
            sleep_interval: self.sleep_interval,
        };
        let tables = workers
            .iter()
            .map(|w| w.table.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let span = info_span!("cdc_log_reader", keyspace = %keyspace, table = %tables);
        let grouped = self.group.is_some();
        let task = tokio::spawn(
            async move {
                tokio::select! {
                    result = run_tables(workers, follower) => result,
                    // A member of a group leaves it (hands its units back) on `stop()`.
                    // `stop()`, or the handle was dropped (it stops the reader too).
                    _ = stop_rx.wait_for(|stopped| *stopped), if !grouped => {
                        info!("CDC log reader stopped");
                        Ok(())
                    }
                }
            }
            .instrument(span),
        );
        Ok((
            CDCLogReader {
                end: end_tx,
                stop: stop_tx.clone(),
                stats,
            },
            CDCReaderHandle {
                task,
                stop: stop_tx,
            },
        ))
    }
}

/// What the reader's task needs for one table.
struct TableSetup {
    /// The base table.
    table: String,
    /// Its CDC log table.
    log_table: String,
    /// Its generations and streams (the same fetcher for every table of a vnode keyspace).
    fetcher: Arc<dyn GenerationFetcher>,
    /// Its log.
    source: Arc<dyn LogSource>,
    /// Its CDC `ttl` (`None`: rows do not expire, or it is unknown).
    log_ttl: Option<Duration>,
}

/// Runs every table's worker and the generation follower until every table is done (or the
/// first error, which stops the others: dropping a worker aborts its stream readers).
async fn run_tables(workers: Vec<Worker>, follower: Follower) -> Result<(), CDCError> {
    let several = workers.len() > 1;
    let tables = futures::future::try_join_all(workers.into_iter().map(|w| {
        let span = if several {
            info_span!("cdc_table", table = %w.table)
        } else {
            tracing::Span::none()
        };
        let table = w.table.clone();
        w.run()
            .inspect_err(move |e| {
                if several {
                    // The error may not name the table (a consumer's, a log read's).
                    warn!(table = %table, error = %e, "reading the table failed: stopping the reader");
                }
            })
            .instrument(span)
    }));
    tokio::select! {
        result = tables => result.map(|_| ()),
        never = follower.run() => match never {},
    }
}

/// One list of generations that the [`Follower`] keeps up to date, and the tables that read
/// it.
struct Followed {
    fetcher: Arc<dyn GenerationFetcher>,
    /// Every published generation, oldest first.
    generations: watch::Sender<Arc<Vec<GenerationTimestamp>>>,
    /// Per table reading it: whether it waits for its current generation's successor.
    waiting: Vec<Arc<AtomicBool>>,
}

/// Polls for new generations, once per sleep interval (at least [`MIN_GENERATION_POLL`]
/// apart), for the lists some table waits on.
struct Follower {
    followed: Vec<Followed>,
    sleep_interval: Duration,
}

impl Follower {
    async fn run(self) -> std::convert::Infallible {
        // A zero sleep interval is allowed (`interval` panics on a zero period), and a tiny one
        // must not poll the system tables continuously.
        let mut tick = tokio::time::interval(self.sleep_interval.max(MIN_GENERATION_POLL));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            for f in &self.followed {
                if !f.waiting.iter().any(|w| w.load(Ordering::Relaxed)) {
                    continue;
                }
                match f.fetcher.fetch_all_generations().await {
                    Ok(gens) => {
                        f.generations.send_if_modified(|current| {
                            if **current == gens {
                                false
                            } else {
                                *current = Arc::new(gens);
                                true
                            }
                        });
                    }
                    Err(e) => warn!(error = %e, "could not look for new CDC generations"),
                }
            }
        }
    }
}

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

/// Fails unless the keyspace, the table and its CDC log table exist.
async fn check_table(session: &Session, keyspace: &str, table: &str) -> Result<(), CDCError> {
    let query_err = |what: &str| {
        let what = what.to_owned();
        move |source| CDCError::Query {
            what,
            source: Box::new(source),
        }
    };
    let ks = session
        .query_unpaged(
            "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await
        .map_err(query_err("looking up the keyspace"))?;
    if rows_count(ks) == 0 {
        return Err(CDCError::KeyspaceNotFound(keyspace.to_owned()));
    }
    let table_exists = |name: String| async move {
        let r = session
            .query_unpaged(
                "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                (keyspace, name),
            )
            .await
            .map_err(query_err("looking up the table"))?;
        Ok::<bool, CDCError>(rows_count(r) > 0)
    };
    if !table_exists(table.to_owned()).await? {
        return Err(CDCError::TableNotFound {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
        });
    }
    if !table_exists(format!("{table}_scylla_cdc_log")).await? {
        return Err(CDCError::CdcNotEnabled {
            keyspace: keyspace.to_owned(),
            table: table.to_owned(),
        });
    }
    Ok(())
}

/// The table's CDC `ttl` from its `cdc` schema extension: `None` for `ttl: 0` (no expiry) and
/// when the table has no `cdc` extension or no `ttl` in it (nothing is assumed to expire).
async fn read_log_ttl(
    session: &Session,
    keyspace: &str,
    table: &str,
) -> Result<Option<Duration>, CDCError> {
    let Some(options) =
        crate::cluster::cdc_options::read_cdc_extension(session, keyspace, table).await?
    else {
        info!("the table has no cdc schema extension: its log is not assumed to expire");
        return Ok(None);
    };
    crate::cluster::cdc_options::log_ttl(&options).map_err(|detail| CDCError::BadMetadata {
        what: format!("the cdc extension of {keyspace}.{table}"),
        detail,
    })
}

/// Number of rows of a result (0 when it is not rows).
fn rows_count(result: scylla::response::query_result::QueryResult) -> usize {
    result.into_rows_result().map(|r| r.rows_num()).unwrap_or(0)
}

/// Whether the keyspace uses tablets: `initial_tablets` in `system_schema.scylla_keyspaces`
/// is non-null. Servers without that table (older Scylla) use vnodes.
async fn uses_tablets(session: &Session, keyspace: &str) -> Result<bool, CDCError> {
    let result = session
        .query_unpaged(
            "SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
            (keyspace,),
        )
        .await;
    let result = match result {
        Ok(r) => r,
        Err(ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Invalid | DbError::SyntaxError,
            msg,
        ))) => {
            info!(reason = %msg, "no system_schema.scylla_keyspaces: assuming vnodes");
            return Ok(false);
        }
        Err(source) => {
            return Err(CDCError::Query {
                what: "reading system_schema.scylla_keyspaces".into(),
                source: Box::new(source),
            });
        }
    };
    let bad = |e: String| CDCError::BadMetadata {
        what: "system_schema.scylla_keyspaces".into(),
        detail: e,
    };
    let rows = match result.into_rows_result() {
        Ok(rows) => rows,
        Err(e) => return Err(bad(e.to_string())),
    };
    let row = rows
        .maybe_first_row::<(Option<i32>,)>()
        .map_err(|e| bad(e.to_string()))?;
    Ok(matches!(row, Some((Some(_),))))
}

/// The work of one table: walks its generations and runs their stream readers.
struct Worker {
    fetcher: Arc<dyn GenerationFetcher>,
    /// Makes what each stream group's rows go to.
    consumers: ConsumerKind,
    settings: ReaderSettings,
    /// Where saved progress is loaded from, when loading is on.
    loader: Option<Arc<dyn CDCCheckpointSaver>>,
    start: DateTime<Utc>,
    /// The generations known so far, oldest first.
    generations: Arc<Vec<GenerationTimestamp>>,
    /// Where the [`Follower`] publishes new lists of generations.
    generations_rx: watch::Receiver<Arc<Vec<GenerationTimestamp>>>,
    /// Set while this table waits for its current generation's successor (the follower
    /// polls only then).
    waiting: Arc<AtomicBool>,
    loaded_generation: Option<GenerationTimestamp>,
    /// The table's CDC `ttl` (`None`: rows do not expire, or it is unknown).
    log_ttl: Option<Duration>,
    /// Receives the reader's events.
    events: Option<EventListener>,
    keyspace: String,
    table: String,
    /// The table's CDC log table (whose replicas the stream groups follow).
    log_table: String,
    /// The most stream ids one log query names.
    max_streams_per_query: usize,
    /// Where the worker checks that the table still logs its changes (`None` in unit tests
    /// without a cluster).
    cdc_probe: Option<Arc<Session>>,
    /// The reader's end, which the worker sets itself when CDC is disabled.
    end_tx: Arc<watch::Sender<Option<DateTime<Utc>>>>,
    /// Set when CDC was found disabled: everything before it is read, then the reader ends
    /// with [`CDCError::CdcDisabled`].
    disabled_until: Option<DateTime<Utc>>,
    /// The consumer group this worker reads as a member of.
    group: Option<member::GroupRuntime>,
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
    async fn check_cdc_enabled(&mut self) {
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

    fn end(&self) -> Option<DateTime<Utc>> {
        *self.settings.end.borrow()
    }

    async fn run(mut self) -> Result<(), CDCError> {
        match self.group.take() {
            Some(group) => self.run_member(group).await?,
            None => self.run_generations().await?,
        }
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
    fn refresh_generations(&mut self) {
        self.generations = self.generations_rx.borrow_and_update().clone();
    }

    async fn run_generations(&mut self) -> Result<(), CDCError> {
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
    async fn fetch_stream_groups(
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
    fn oldest_readable(&self) -> Option<DateTime<Utc>> {
        let ttl = self.log_ttl?;
        let margin = ttl.checked_add(self.settings.safety_interval)?;
        let now = self.settings.clock.now();
        now.checked_sub_signed(crate::base::time::to_delta(margin))
            .map(crate::base::time::truncate_to_millis)
    }

    /// Reports a gap of expired changes: the event, the metric and a WARN line.
    fn report_gap(&self, gap: ExpiredGap) {
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
    fn read_groups(&self, groups: Vec<Vec<crate::base::cdc_types::StreamID>>) -> Vec<ReadGroup> {
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

/// Reads a reader's [`Progress`] from anywhere ([`CDCLogReader::progress_handle`]); cheap to
/// clone, and valid after the reader ends (its last figures).
#[derive(Clone)]
pub struct ProgressHandle {
    stats: ReaderStats,
}

impl ProgressHandle {
    /// The same as [`CDCLogReader::progress`].
    pub fn progress(&self) -> Progress {
        self.stats.snapshot()
    }
}

impl std::fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ProgressHandle")
            .field(&self.progress())
            .finish()
    }
}

/// Controls a running reader ([`CDCLogReader::stop`], [`CDCLogReader::stop_at`]) and reports
/// on it ([`CDCLogReader::progress`], [`CDCLogReader::low_watermark`]).
///
/// Dropping it gives up that control and leaves the reader running: the reader's lifetime is
/// its [`CDCReaderHandle`]'s, so `let (_, handle) = builder.build().await?; handle.await?`
/// reads until the end timestamp or an error, as in scylla-cdc-rust.
pub struct CDCLogReader {
    end: Arc<watch::Sender<Option<DateTime<Utc>>>>,
    stop: watch::Sender<bool>,
    stats: ReaderStats,
}

impl CDCLogReader {
    /// What the reader has done so far: rows, changes and windows read, retries, consumer
    /// errors, the current generation's streams, generation switches, the low watermark and
    /// the lag behind it. The same figures are recorded as metrics (see the crate docs).
    ///
    /// A reader of several tables reports their sums and its low watermark (the least of
    /// the tables'), and each table's own figures in [`Progress::tables`] (a reader of one
    /// table lists that table there too).
    pub fn progress(&self) -> Progress {
        self.stats.snapshot()
    }

    /// A handle that reads [`CDCLogReader::progress`] without the reader, e.g. from a task
    /// that logs progress lines while another one owns the reader.
    pub fn progress_handle(&self) -> ProgressHandle {
        ProgressHandle {
            stats: self.stats.clone(),
        }
    }

    /// The low watermark: a time `T` such that every change with `cdc$time <= T`, in every
    /// stream of every table of the reader (across generations), has been delivered — everything up to `T`
    /// is applied, in the sense that each consumer's `consume_cdc` has returned `Ok` for it.
    /// (A consumer that finishes its work in the background, in
    /// [`Consumer::flush`](crate::Consumer::flush), has done so for everything before the
    /// groups' last checkpoints.)
    ///
    /// `T` is the least position of the current generation's stream groups (a group's
    /// position is where its next window starts; a group that has not read a window yet is
    /// at its start), less one microsecond since positions are exclusive, and never later
    /// than `now - safety_interval` less one microsecond. Once a generation has been read to
    /// its end, its groups no longer hold the watermark back. It only moves forward within a
    /// run; it is `None` until the first generation's groups are set up. With several
    /// tables it is the least of the tables' watermarks (each computed as above), `None`
    /// until every table has one.
    ///
    /// It is not saved with the checkpoints (their table holds one row per stream group):
    /// after a restart it is recomputed from the groups' loaded checkpoints, which gives the
    /// same value since it is their minimum.
    pub fn low_watermark(&self) -> watch::Receiver<Option<DateTime<Utc>>> {
        self.stats.watch_watermark()
    }

    /// Stops reading now: stream readers are cancelled where they are (a row being consumed
    /// is not waited for) and the handle resolves to `Ok(())` promptly.
    pub fn stop(&mut self) {
        self.stop.send_replace(true);
    }

    /// Reads every row with `cdc$time` before `when` (rounded up to the millisecond), then
    /// resolves the handle with `Ok(())`. Since reading stays `safety_interval` behind now,
    /// this takes until about `when + safety_interval`. An earlier end is kept.
    pub fn stop_at(&mut self, when: impl Into<DateTime<Utc>>) {
        let when = ceil_to_millis(when.into());
        self.end.send_modify(|end| {
            *end = Some(end.map_or(when, |e| e.min(when)));
        });
    }
}

/// Resolves to the reader's final result: `Ok(())` after `stop()`, after `stop_at` or the
/// end timestamp was reached, or the first error of any stream reader (which stops them all).
///
/// Like any future, dropping it cancels the work: the reader stops as with
/// [`CDCLogReader::stop`] (progress is what the last checkpoint saved). To let a reader run
/// in the background, move the handle into a task (`tokio::spawn(handle)`).
#[must_use = "dropping the handle stops the reader; await it"]
pub struct CDCReaderHandle {
    task: JoinHandle<Result<(), CDCError>>,
    /// Stops the reader when the handle is dropped.
    stop: watch::Sender<bool>,
}

impl Drop for CDCReaderHandle {
    fn drop(&mut self) {
        // A no-op once the reader has finished (nobody listens any more).
        self.stop.send_replace(true);
    }
}

impl Future for CDCReaderHandle {
    type Output = Result<(), CDCError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| joined.unwrap_or_else(|e| Err(CDCError::Task(e.to_string()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::cdc_types::StreamID;
    use crate::base::time::TokioClock;
    use crate::checkpoints::tests::MemorySaver;
    use crate::cluster::generations::tests::FakeFetcher;
    use crate::consumer::Consumer;
    use crate::stream::tests::{FakeLog, Recorder, Seen, ms, row, stream};
    use async_trait::async_trait;
    use std::sync::Mutex;

    const BASE: i64 = 1_700_000_000_000;

    struct Factory {
        seen: Arc<Mutex<Vec<Seen>>>,
        fail_on: Option<i32>,
    }

    #[async_trait]
    impl ConsumerFactory for Factory {
        async fn new_consumer(&self) -> Box<dyn Consumer> {
            Box::new(Recorder {
                seen: self.seen.clone(),
                fail_on: self.fail_on,
            })
        }
    }

    fn g(ms_: i64) -> GenerationTimestamp {
        GenerationTimestamp::new(ms(ms_))
    }

    struct Env {
        fetcher: Arc<FakeFetcher>,
        log: Arc<FakeLog>,
        saver: Arc<MemorySaver>,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Env {
        fn new() -> Self {
            Self {
                fetcher: Arc::new(FakeFetcher::default()),
                log: Arc::new(FakeLog::new(7)),
                saver: Arc::new(MemorySaver::default()),
                seen: Arc::new(Mutex::new(Vec::new())),
            }
        }

        fn builder(&self) -> CDCLogReaderBuilder {
            CDCLogReaderBuilder::new()
                .window_size(Duration::from_secs(60))
                .safety_interval(Duration::from_secs(30))
                .sleep_interval(Duration::from_secs(10))
                .clock(Arc::new(TokioClock::starting_at(ms(BASE))))
        }

        async fn start(
            &self,
            b: CDCLogReaderBuilder,
            fail_on: Option<i32>,
        ) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
            let (save, load) = b.validate()?;
            let factory = Arc::new(Factory {
                seen: self.seen.clone(),
                fail_on,
            });
            let setup = TableSetup {
                table: "t".into(),
                log_table: "t_scylla_cdc_log".into(),
                fetcher: self.fetcher.clone(),
                source: self.log.clone(),
                log_ttl: b.log_ttl,
            };
            b.start(
                vec![setup],
                ConsumerKind::Rows(factory),
                "ks".into(),
                save,
                load,
            )
            .await
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }

    #[tokio::test]
    async fn build_rejects_bad_configuration() {
        let err = CDCLogReaderBuilder::new().build().await.err().unwrap();
        assert!(matches!(err, CDCError::MissingOption("session")), "{err}");
        let e = Env::new();
        let zero = e
            .builder()
            .window_size(Duration::ZERO)
            .validate()
            .unwrap_err();
        assert!(matches!(zero, CDCError::InvalidConfig(_)), "{zero}");
        e.builder()
            .sleep_interval(Duration::ZERO)
            .validate()
            .expect("a zero sleep interval is allowed");
        let sleep = e
            .builder()
            .sleep_interval(Duration::from_secs(2 * 24 * 3600))
            .validate()
            .unwrap_err();
        assert!(sleep.to_string().contains("sleep_interval"), "{sleep}");
        let backwards = e
            .builder()
            .start_timestamp(ms(10))
            .end_timestamp(ms(10))
            .validate()
            .unwrap_err();
        assert!(
            backwards.to_string().contains("end_timestamp"),
            "{backwards}"
        );
        let no_saver = e
            .builder()
            .should_load_progress(true)
            .validate()
            .unwrap_err();
        assert!(matches!(
            no_saver,
            CDCError::MissingOption("checkpoint_saver")
        ));
        assert_eq!(e.builder().validate().unwrap(), (false, false));
        let with_saver = e.builder().checkpoint_saver(e.saver.clone());
        assert_eq!(with_saver.validate().unwrap(), (true, true));
    }

    #[tokio::test]
    async fn build_rejects_bad_group_configuration() {
        let e = Env::new();
        let err = |b: CDCLogReaderBuilder| b.validate().unwrap_err().to_string();
        // Group settings without a group.
        let e1 = err(e.builder().member_id("m"));
        assert!(e1.contains("`member_id`") && e1.contains("`group`"), "{e1}");
        // A group without checkpoints.
        let e2 = err(e.builder().group("g"));
        assert!(e2.contains("checkpoint saver"), "{e2}");
        let e3 = err(e
            .builder()
            .checkpoint_saver(e.saver.clone())
            .should_save_progress(false)
            .group("g"));
        assert!(e3.contains("saved and loaded"), "{e3}");
        // A saver that is not a table, and no lease table given.
        let e4 = err(e.builder().checkpoint_saver(e.saver.clone()).group("g"));
        assert!(e4.contains("lease table"), "{e4}");
        let ok = e
            .builder()
            .checkpoint_saver(e.saver.clone())
            .group("g")
            .lease_table("ks", "leases");
        assert_eq!(ok.validate().unwrap(), (true, true));
        // Lease duration not longer than the renew interval, either order of the calls.
        let e5 = err(e
            .builder()
            .checkpoint_saver(e.saver.clone())
            .lease_duration(Duration::from_secs(3))
            .renew_interval(Duration::from_secs(3))
            .group("g")
            .lease_table("ks", "leases"));
        assert!(e5.contains("lease duration"), "{e5}");
        let e6 = err(e
            .builder()
            .checkpoint_saver(e.saver.clone())
            .group("g")
            .lease_table("ks", "leases")
            .lease_duration(Duration::from_secs(1))
            .renew_interval(Duration::from_secs(2)));
        assert!(e6.contains("renew interval"), "{e6}");
        let e7 = err(e
            .builder()
            .checkpoint_saver(e.saver.clone())
            .group("")
            .lease_table("ks", "leases"));
        assert!(e7.contains("name"), "{e7}");
    }

    #[tokio::test(start_paused = true)]
    async fn no_generation_is_an_error() {
        let e = Env::new();
        let err = e.start(e.builder(), None).await.err().unwrap();
        assert!(matches!(err, CDCError::NoGeneration { .. }), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn follows_a_new_generation_after_finishing_the_old_one() {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        e.log.push(row(1, (BASE - 1_800_000) * 1000, 0, 1));
        e.log.push(row(2, (BASE + 30_000) * 1000, 0, 2));
        e.log.push(row(1, (BASE + 50_000) * 1000, 0, 3));
        e.log.push(row(3, (BASE + 70_000) * 1000, 0, 4));
        e.log.push(row(3, (BASE + 100_000) * 1000, 0, 5));
        let fetcher = e.fetcher.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            fetcher.add(g(BASE + 60_000), vec![vec![stream(3)]]);
        });
        let b = e
            .builder()
            .start_timestamp(ms(BASE - 3_600_000))
            .end_timestamp(ms(BASE + 120_000))
            .checkpoint_saver(e.saver.clone());
        let (_reader, handle) = e.start(b, None).await.unwrap();
        handle.await.unwrap();
        let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        assert_eq!(vs.len(), 5, "{vs:?}");
        // Every row of the first generation came before any of the second.
        let first_g2 = vs.iter().position(|v| *v >= 4).unwrap();
        assert!(vs[..first_g2].iter().all(|v| *v <= 3));
        assert_eq!(vs[first_g2..], [4, 5]);
        assert_eq!(
            *e.saver.generations_saved.lock().unwrap(),
            vec![g(BASE - 3_600_000), g(BASE + 60_000)]
        );
        // The first generation's groups were never asked past the second's start.
        for (streams, _, end, _) in e.log.requests.lock().unwrap().iter() {
            if streams[0] != stream(3) {
                assert!(*end <= ms(BASE + 60_000));
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn resume_from_checkpoints_loses_nothing() {
        let e = Env::new();
        let g1 = BASE - 3_600_000;
        let g2 = BASE - 600_000;
        e.fetcher.add(g(g1), vec![vec![stream(1)]]);
        e.fetcher.add(g(g2), vec![vec![stream(2)]]);
        let mut v = 0;
        for i in 0..300 {
            v += 1;
            e.log.push(row(1, (g1 + i * 10_000) * 1000, 0, v));
        }
        for i in 0..50 {
            v += 1;
            e.log.push(row(2, (g2 + i * 10_000) * 1000, 0, v));
        }
        let total = v;

        // Run 1 "crashes" on row 200 (the consumer fails).
        let b = e
            .builder()
            .start_timestamp(ms(g1))
            .checkpoint_saver(e.saver.clone())
            .pause_between_saves(Duration::ZERO);
        let (_r1, h1) = e.start(b, Some(200)).await.unwrap();
        assert!(matches!(h1.await, Err(CDCError::Consumer { .. })));
        let run1 = e.seen();
        assert_eq!(run1.len(), 199);
        let checkpoint = e.saver.streams.lock().unwrap()[&stream(1)];
        e.seen.lock().unwrap().clear();

        // Run 2 starts "now" by default, but resumes from the checkpoint, follows into the
        // next generation and stops once caught up.
        let b = e.builder().checkpoint_saver(e.saver.clone());
        let (mut r2, h2) = e.start(b, None).await.unwrap();
        r2.stop_at(ms(BASE - 35_000));
        h2.await.unwrap();
        let run2 = e.seen();
        let mut all: Vec<i32> = run1.iter().chain(&run2).filter_map(|s| s.3).collect();
        all.sort();
        all.dedup();
        assert_eq!(all, (1..=total).collect::<Vec<_>>(), "something was lost");
        // Duplicates only after the last checkpoint.
        let cp_us = checkpoint.timestamp_micros();
        for dup in run2.iter().filter(|s| run1.contains(s)) {
            assert!(
                dup.1 >= cp_us,
                "{dup:?} redelivered from before {checkpoint}"
            );
        }
        assert!(run2.len() < 200, "run 2 restarted from scratch");
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_start_is_when_the_builder_was_made() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        e.log.push(row(1, (BASE - 1_000) * 1000, 0, 1));
        // Written while the program was starting up: after the builder was made, long
        // before `build` returned.
        e.log.push(row(1, (BASE + 2_000) * 1000, 0, 2));
        e.log.push(row(1, (BASE + 25_000) * 1000, 0, 3));
        let b = e.builder();
        tokio::time::sleep(Duration::from_secs(20)).await;
        let (mut r, h) = e.start(b, None).await.unwrap();
        r.stop_at(ms(BASE + 30_000));
        h.await.unwrap();
        let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        assert_eq!(vs, vec![2, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_loading_the_start_timestamp_applies() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 1));
        e.log.push(row(1, (BASE - 1_000_000) * 1000, 0, 2));
        e.saver
            .streams
            .lock()
            .unwrap()
            .insert(stream(1), ms(BASE - 3_500_000));
        let b = e
            .builder()
            .start_timestamp(ms(BASE - 2_000_000))
            .end_timestamp(ms(BASE - 500_000))
            .checkpoint_saver(e.saver.clone())
            .should_load_progress(false);
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        assert_eq!(vs, vec![2]);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_metadata_errors_are_retried() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 1));
        let transient = || CDCError::Query {
            what: "streams".into(),
            source: Box::new(ExecutionError::RequestTimeout(Duration::from_secs(1))),
        };
        e.fetcher
            .group_errors
            .lock()
            .unwrap()
            .extend([transient(), transient()]);
        let b = e
            .builder()
            .start_timestamp(ms(BASE - 3_600_000))
            .end_timestamp(ms(BASE - 1_000_000));
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        assert_eq!(e.seen().len(), 1);

        // A permanent one ends the reader with that error.
        e.fetcher
            .group_errors
            .lock()
            .unwrap()
            .push(CDCError::Query {
                what: "streams".into(),
                source: Box::new(ExecutionError::LastAttemptError(
                    RequestAttemptError::DbError(DbError::Invalid, "no".into()),
                )),
            });
        let b = e.builder().start_timestamp(ms(BASE - 3_600_000));
        let (_r, h) = e.start(b, None).await.unwrap();
        assert!(matches!(h.await, Err(CDCError::Query { .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_resolves_promptly() {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        let (mut r, h) = e.start(e.builder(), None).await.unwrap();
        tokio::time::sleep(Duration::from_secs(100)).await;
        let before = tokio::time::Instant::now();
        r.stop();
        h.await.unwrap();
        assert!(before.elapsed() < Duration::from_millis(1));
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_reader_keeps_reading_and_dropping_the_handle_stops() {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        let (r, h) = e.start(e.builder(), None).await.unwrap();
        drop(r);
        // Logged after the start; readable once 30 s (the safety interval) have passed.
        e.log.push(row(1, (BASE + 5_000) * 1000, 0, 1));
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert_eq!(
            e.seen().len(),
            1,
            "the reader kept reading without its CDCLogReader"
        );

        drop(h);

        // Dropping the handle stops the reader, even while its CDCLogReader is alive.
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        let (_reader, h) = e.start(e.builder(), None).await.unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        drop(h);
        // The reader is gone once it has released its factory and every consumer, which
        // hold the only other references to `seen`.
        tokio::time::timeout(Duration::from_secs(1), async {
            while Arc::strong_count(&e.seen) > 1 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("dropping the handle did not stop the reader");
        e.log.push(row(2, (BASE + 20_000) * 1000, 0, 2));
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert!(
            e.seen().is_empty(),
            "a row delivered after the handle was dropped"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn consumer_error_stops_every_group() {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        e.log.push(row(1, (BASE - 3_000_000) * 1000, 0, 13));
        let b = e.builder().start_timestamp(ms(BASE - 3_600_000));
        let (_r, h) = e.start(b, Some(13)).await.unwrap();
        // Without the error the reader would run forever (no end).
        let err = tokio::time::timeout(Duration::from_secs(3600), h)
            .await
            .unwrap()
            .unwrap_err();
        assert!(matches!(err, CDCError::Consumer { stream: s, .. } if s == stream(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn generation_is_saved_again_while_staying_in_it() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        let b = e.builder().checkpoint_saver(e.saver.clone());
        let (mut r, h) = e.start(b, None).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2 * 3600 + 60)).await;
        r.stop();
        h.await.unwrap();
        assert_eq!(e.saver.generations_saved.lock().unwrap().len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn stop_at_delivers_everything_before_it() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        // Rows written after the reader started, up to just before the stop time.
        for i in 0..20 {
            e.log.push(row(1, (BASE + i * 5_000) * 1000, 0, i as i32));
        }
        e.log.push(row(1, (BASE + 100_000) * 1000 + 1, 0, 99));
        let (mut r, h) = e.start(e.builder(), None).await.unwrap();
        tokio::time::sleep(Duration::from_secs(50)).await;
        // Rounded up to the next millisecond: the row 1 µs after it is still excluded.
        r.stop_at(DateTime::from_timestamp_micros((BASE + 100_000) * 1000 - 500).unwrap());
        h.await.unwrap();
        let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        assert_eq!(vs, (0..20).collect::<Vec<_>>());
    }

    /// The events a reader reported.
    fn event_log(b: CDCLogReaderBuilder) -> (CDCLogReaderBuilder, Arc<Mutex<Vec<ReaderEvent>>>) {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let b = b.on_event(move |e| sink.lock().unwrap().push(e.clone()));
        (b, events)
    }

    const HOUR: i64 = 3_600_000;
    /// The oldest readable time with a 1 h TTL and the 30 s safety interval, at `BASE`.
    const OLDEST: i64 = BASE - HOUR - 30_000;

    #[tokio::test(start_paused = true)]
    async fn a_start_older_than_the_ttl_reports_the_gap_and_reads_from_the_oldest_time() {
        let e = Env::new();
        e.fetcher
            .add(g(BASE - 10 * HOUR), vec![vec![stream(1)], vec![stream(2)]]);
        // Expired rows (a real log would no longer hold them).
        e.log.push(row(1, (BASE - 5 * HOUR) * 1000, 0, 1));
        e.log.push(row(2, (OLDEST - 1) * 1000, 0, 2));
        // Still in the log, the first one exactly at the oldest readable time.
        e.log.push(row(1, OLDEST * 1000, 0, 3));
        e.log.push(row(2, (BASE - 60_000) * 1000, 0, 4));
        let (b, events) = event_log(
            e.builder()
                .log_ttl(Some(Duration::from_secs(3600)))
                .start_timestamp(ms(BASE - 9 * HOUR))
                .end_timestamp(ms(BASE - 40_000)),
        );
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        let mut vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        vs.sort();
        assert_eq!(vs, vec![3, 4]);
        let events = events.lock().unwrap().clone();
        let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert_eq!(gap.requested, ms(BASE - 9 * HOUR));
        assert_eq!(gap.first_readable, ms(OLDEST));
        assert_eq!(gap.generation, g(BASE - 10 * HOUR));
        assert_eq!(gap.streams, vec![stream(1), stream(2)]);
        assert_eq!(gap.ttl, Duration::from_secs(3600));
        assert_eq!(
            gap.width(),
            Duration::from_millis((OLDEST - (BASE - 9 * HOUR)) as u64)
        );
        assert_eq!((gap.keyspace.as_str(), gap.table.as_str()), ("ks", "t"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_checkpoint_older_than_the_ttl_reports_the_gap_for_its_streams() {
        let e = Env::new();
        let g1 = BASE - 10 * HOUR;
        e.fetcher.add(g(g1), vec![vec![stream(1)], vec![stream(2)]]);
        *e.saver.generation.lock().unwrap() = Some(g(g1));
        e.saver.streams.lock().unwrap().extend([
            (stream(1), ms(BASE - 2 * HOUR)),
            (stream(2), ms(BASE - 600_000)),
        ]);
        e.log.push(row(1, (BASE - 90 * 60_000) * 1000, 0, 1));
        e.log.push(row(1, (OLDEST + 1) * 1000, 0, 2));
        e.log.push(row(2, (BASE - 500_000) * 1000, 0, 3));
        let (b, events) = event_log(
            e.builder()
                .log_ttl(Some(Duration::from_secs(3600)))
                .checkpoint_saver(e.saver.clone()),
        );
        let (mut r, h) = e.start(b, None).await.unwrap();
        r.stop_at(ms(BASE - 40_000));
        h.await.unwrap();
        let mut vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
        vs.sort();
        assert_eq!(vs, vec![2, 3]);
        let events = events.lock().unwrap().clone();
        let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert_eq!(gap.requested, ms(BASE - 2 * HOUR));
        assert_eq!(gap.first_readable, ms(OLDEST));
        // The stream whose checkpoint is recent lost nothing.
        assert_eq!(gap.streams, vec![stream(1)]);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_generations_report_contiguous_gaps() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
        e.fetcher.add(g(BASE - 5 * HOUR), vec![vec![stream(2)]]);
        e.log.push(row(2, (BASE - 50 * 60_000) * 1000, 0, 1));
        let (b, events) = event_log(
            e.builder()
                .log_ttl(Some(Duration::from_secs(3600)))
                .start_timestamp(ms(BASE - 9 * HOUR))
                .end_timestamp(ms(BASE - 40_000)),
        );
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        assert_eq!(e.seen().len(), 1);
        let bounds: Vec<_> = events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                ReaderEvent::ExpiredGap(gap) => {
                    Some((gap.generation, gap.requested, gap.first_readable))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            bounds,
            vec![
                (
                    g(BASE - 10 * HOUR),
                    ms(BASE - 9 * HOUR),
                    ms(BASE - 5 * HOUR)
                ),
                (g(BASE - 5 * HOUR), ms(BASE - 5 * HOUR), ms(OLDEST)),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_range_that_has_expired_entirely_ends_at_its_end() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
        e.log.push(row(1, (BASE - 6 * HOUR) * 1000, 0, 1));
        let (b, events) = event_log(
            e.builder()
                .log_ttl(Some(Duration::from_secs(3600)))
                .checkpoint_saver(e.saver.clone())
                .start_timestamp(ms(BASE - 9 * HOUR))
                .end_timestamp(ms(BASE - 5 * HOUR)),
        );
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        assert!(e.seen().is_empty());
        let events = events.lock().unwrap().clone();
        let [ReaderEvent::ExpiredGap(gap)] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert_eq!(
            (gap.requested, gap.first_readable),
            (ms(BASE - 9 * HOUR), ms(BASE - 5 * HOUR))
        );
        // The checkpoint does not claim more than the reader's end.
        assert_eq!(
            e.saver.streams.lock().unwrap()[&stream(1)],
            ms(BASE - 5 * HOUR)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_ttl_nothing_expires() {
        let e = Env::new();
        e.fetcher.add(g(BASE - 10 * HOUR), vec![vec![stream(1)]]);
        e.log.push(row(1, (BASE - 9 * HOUR) * 1000, 0, 1));
        let (b, events) = event_log(
            e.builder()
                .log_ttl(None)
                .start_timestamp(ms(BASE - 10 * HOUR))
                .end_timestamp(ms(BASE - 40_000)),
        );
        let (_r, h) = e.start(b, None).await.unwrap();
        h.await.unwrap();
        assert_eq!(e.seen().len(), 1);
        assert!(events.lock().unwrap().is_empty());
    }

    /// Rows seen by a reader of several tables: (the table the consumer was made for, the
    /// row's `table()`, `v`).
    type TableSeen = Arc<Mutex<Vec<(String, String, i32)>>>;

    struct TableRecorder {
        table: String,
        seen: TableSeen,
    }

    #[async_trait]
    impl Consumer for TableRecorder {
        async fn consume_cdc(&mut self, row: crate::CDCRow<'_>) -> anyhow::Result<()> {
            let v = row.get_value_as::<i32>("v")?.unwrap_or_default();
            self.seen
                .lock()
                .unwrap()
                .push((self.table.clone(), row.table().to_owned(), v));
            Ok(())
        }
    }

    struct TableFactory {
        seen: TableSeen,
    }

    #[async_trait]
    impl ConsumerFactory for TableFactory {
        async fn new_consumer(&self) -> Box<dyn Consumer> {
            unreachable!("the reader asks for consumers per table")
        }

        async fn new_consumer_for_table(&self, table: &str) -> Box<dyn Consumer> {
            Box::new(TableRecorder {
                table: table.to_owned(),
                seen: self.seen.clone(),
            })
        }
    }

    /// In-memory savers, one per table.
    #[derive(Default)]
    struct PerTableSaver {
        tables: Mutex<std::collections::HashMap<String, Arc<MemorySaver>>>,
    }

    impl PerTableSaver {
        fn table(&self, table: &str) -> Arc<MemorySaver> {
            self.tables
                .lock()
                .unwrap()
                .entry(table.to_owned())
                .or_default()
                .clone()
        }
    }

    #[async_trait]
    impl CDCCheckpointSaver for PerTableSaver {
        fn for_table(&self, table: &str) -> anyhow::Result<Arc<dyn CDCCheckpointSaver>> {
            Ok(self.table(table))
        }
        async fn save_checkpoint(&self, _: &crate::Checkpoint) -> anyhow::Result<()> {
            anyhow::bail!("used without a table")
        }
        async fn save_new_generation(&self, _: &GenerationTimestamp) -> anyhow::Result<()> {
            anyhow::bail!("used without a table")
        }
        async fn load_last_generation(&self) -> anyhow::Result<Option<GenerationTimestamp>> {
            anyhow::bail!("used without a table")
        }
        async fn load_last_checkpoint(
            &self,
            _: &[StreamID],
        ) -> anyhow::Result<Option<DateTime<Utc>>> {
            anyhow::bail!("used without a table")
        }
    }

    /// Starts a reader of tables `t1` and `t2` sharing `fetcher` (a vnode keyspace), or
    /// each with its own (tablets), reading `logs`.
    async fn start_two(
        b: CDCLogReaderBuilder,
        fetchers: [Arc<FakeFetcher>; 2],
        logs: [Arc<FakeLog>; 2],
        seen: &TableSeen,
    ) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let b = b.tables(["t1", "t2"]);
        let tables = b.table_set()?;
        let (save, load) = b.validate()?;
        let setups = tables
            .into_iter()
            .zip(fetchers)
            .zip(logs)
            .map(|((table, fetcher), log)| TableSetup {
                log_table: format!("{table}_scylla_cdc_log"),
                table,
                fetcher: fetcher as Arc<dyn GenerationFetcher>,
                source: log,
                log_ttl: None,
            })
            .collect();
        let factory = Arc::new(TableFactory { seen: seen.clone() });
        b.start(setups, ConsumerKind::Rows(factory), "ks".into(), save, load)
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn two_tables_keep_their_own_checkpoints_and_rows() {
        let fetcher = Arc::new(FakeFetcher::default());
        fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
        let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
        // The same streams (a vnode keyspace), different rows per table.
        logs[0].push(row(1, (BASE - 3_000_000) * 1000, 0, 11));
        logs[0].push(row(2, (BASE - 1_000_000) * 1000, 0, 12));
        logs[1].push(row(1, (BASE - 3_000_000) * 1000, 0, 21));
        logs[1].push(row(2, (BASE - 1_000_000) * 1000, 0, 22));
        let saver = Arc::new(PerTableSaver::default());
        // t1 was read alone before, up to BASE - 2_000_000; t2 never.
        *saver.table("t1").generation.lock().unwrap() = Some(g(BASE - 3_600_000));
        saver.table("t1").streams.lock().unwrap().extend([
            (stream(1), ms(BASE - 2_000_000)),
            (stream(2), ms(BASE - 2_000_000)),
        ]);
        let seen = TableSeen::default();
        let b = Env::new()
            .builder()
            .start_timestamp(ms(BASE - 1_500_000))
            .end_timestamp(ms(BASE - 40_000))
            .checkpoint_saver(saver.clone());
        let (r, h) = start_two(b, [fetcher.clone(), fetcher.clone()], logs, &seen)
            .await
            .unwrap();
        let progress = r.progress_handle();
        h.await.unwrap();
        let mut got = seen.lock().unwrap().clone();
        got.sort();
        // t1 resumed from its checkpoint (row 11 is before it), t2 from the start time.
        assert_eq!(
            got,
            vec![
                ("t1".into(), "t1".into(), 12),
                ("t2".into(), "t2".into(), 22),
            ]
        );
        // Each table saved its own progress.
        for t in ["t1", "t2"] {
            assert_eq!(
                saver.table(t).streams.lock().unwrap()[&stream(2)],
                ms(BASE - 40_000),
                "{t}"
            );
        }
        let p = progress.progress();
        assert_eq!(p.rows, 2);
        assert_eq!(p.streams, 4);
        let per_table: Vec<_> = p
            .tables
            .iter()
            .map(|t| (t.table.as_str(), t.progress.rows))
            .collect();
        assert_eq!(per_table, vec![("t1", 1), ("t2", 1)]);
        assert_eq!(
            p.low_watermark,
            p.tables
                .iter()
                .filter_map(|t| t.progress.low_watermark)
                .min()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_saver_for_one_table_cannot_serve_two() {
        let fetcher = Arc::new(FakeFetcher::default());
        fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
        let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
        let b = Env::new()
            .builder()
            .checkpoint_saver(Arc::new(MemorySaver::default()));
        let err = start_two(b, [fetcher.clone(), fetcher], logs, &TableSeen::default())
            .await
            .err()
            .unwrap();
        assert!(err.to_string().contains("`t1`"), "{err}");
    }

    #[test]
    fn the_table_set_is_checked() {
        let b = CDCLogReaderBuilder::new();
        assert!(matches!(
            b.table_set(),
            Err(CDCError::MissingOption("table_name"))
        ));
        let dup = CDCLogReaderBuilder::new()
            .tables(["a", "b", "a"])
            .table_set();
        assert!(dup.unwrap_err().to_string().contains("`a`"));
        // `table_name` is one table and replaces the set; the last call wins.
        let b = CDCLogReaderBuilder::new()
            .tables(["a", "b"])
            .table_name("c");
        assert_eq!(b.table_set().unwrap(), vec!["c"]);
        let b = CDCLogReaderBuilder::new()
            .table_name("c")
            .tables(["a", "b"]);
        assert_eq!(b.table_set().unwrap(), vec!["a", "b"]);
    }

    /// Generations are polled once per sleep interval for the whole reader in a vnode
    /// keyspace, and followed by every table; in a tablet keyspace each table's own.
    #[tokio::test(start_paused = true)]
    async fn one_generation_poll_serves_every_table_of_a_vnode_keyspace() {
        for tablets in [false, true] {
            let shared = Arc::new(FakeFetcher::default());
            let fetchers = if tablets {
                [
                    Arc::new(FakeFetcher::default()),
                    Arc::new(FakeFetcher::default()),
                ]
            } else {
                [shared.clone(), shared.clone()]
            };
            for f in &fetchers {
                f.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
            }
            let logs = [Arc::new(FakeLog::new(7)), Arc::new(FakeLog::new(7))];
            logs[0].push(row(3, (BASE + 70_000) * 1000, 0, 1));
            logs[1].push(row(3, (BASE + 80_000) * 1000, 0, 2));
            let seen = TableSeen::default();
            let (mut r, h) = start_two(Env::new().builder(), fetchers.clone(), logs, &seen)
                .await
                .unwrap();
            let polls = |fs: &[Arc<FakeFetcher>; 2]| -> usize {
                if tablets {
                    fs.iter()
                        .map(|f| f.polls.load(std::sync::atomic::Ordering::Relaxed))
                        .sum()
                } else {
                    fs[0].polls.load(std::sync::atomic::Ordering::Relaxed)
                }
            };
            let at_start = polls(&fetchers);
            // 10 sleep intervals.
            tokio::time::sleep(Duration::from_secs(100) + Duration::from_millis(1)).await;
            let per_interval = if tablets { 2 } else { 1 };
            assert_eq!(
                polls(&fetchers) - at_start,
                10 * per_interval,
                "tablets: {tablets}"
            );
            for f in &fetchers {
                f.add(g(BASE + 60_000), vec![vec![stream(3)]]);
            }
            r.stop_at(ms(BASE + 90_000));
            h.await.unwrap();
            let mut got = seen.lock().unwrap().clone();
            got.sort();
            assert_eq!(
                got,
                vec![("t1".into(), "t1".into(), 1), ("t2".into(), "t2".into(), 2)],
                "tablets: {tablets}"
            );
        }
    }

    /// A start 40 s before the clock's "now" (the builder's safety interval is 30 s): the rows
    /// just after it are readable at once, and even 1 ms windows reach them quickly.
    const NEAR: i64 = BASE - 40_000;

    /// One builder setting at a bound: its name, how it is set, and the rows the reader must
    /// deliver (0 where the setting makes every row unreadable for now).
    type BoundCase = (
        &'static str,
        fn(&Env, CDCLogReaderBuilder) -> CDCLogReaderBuilder,
        usize,
    );

    /// Runs a reader of three rows with one setting at a bound, in a task of its own (a panic
    /// is reported, not propagated): waits (paused clock) up to 60 s for `rows` rows, then
    /// asks it to stop as the programs do on SIGTERM (`stop_at` in the past) and gives it 2 s
    /// to end. `Err` says what went wrong: a panic, an error, rows missing, or no prompt stop.
    async fn run_at_bound(case: BoundCase) -> Result<(), String> {
        let (_, configure, rows) = case;
        let task = tokio::spawn(async move {
            let e = Env::new();
            e.fetcher
                .add(g(BASE - 3_600_000), vec![vec![stream(1)], vec![stream(2)]]);
            e.log.push(row(1, (NEAR + 10) * 1000, 0, 1));
            e.log.push(row(2, (NEAR + 500) * 1000, 0, 2));
            e.log.push(row(1, (NEAR + 5_000) * 1000, 0, 3));
            let b = e
                .builder()
                .start_timestamp(ms(NEAR))
                .checkpoint_saver(e.saver.clone());
            let b = configure(&e, b);
            let (mut r, h) = e.start(b, None).await.map_err(|e| format!("start: {e}"))?;
            let began = tokio::time::Instant::now();
            while e.seen().len() < rows.max(1) && began.elapsed() < Duration::from_secs(60) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r.stop_at(DateTime::<Utc>::UNIX_EPOCH);
            let asked = tokio::time::Instant::now();
            match tokio::time::timeout(Duration::from_secs(2), h).await {
                Err(_) => return Err("still running 2 s after stop_at".to_owned()),
                Ok(Err(e)) => return Err(format!("ended with {e}")),
                Ok(Ok(())) => {}
            }
            let seen = e.seen().len();
            if seen != rows {
                return Err(format!("{seen} rows delivered, not {rows}"));
            }
            Ok(asked.elapsed())
        });
        match task.await {
            Ok(r) => r.map(|_| ()),
            Err(e) => match e.try_into_panic() {
                Ok(payload) => Err(format!(
                    "panicked: {}",
                    crate::stream::error_policy::panic_message(payload.as_ref())
                )),
                Err(e) => Err(format!("task failed: {e}")),
            },
        }
    }

    /// Every builder setting that takes a duration or a count, at zero (where `validate`
    /// accepts it), at its least and greatest accepted value: `validate` accepts it, the
    /// reader runs, delivers what is readable, and stops promptly when asked.
    #[tokio::test(start_paused = true)]
    async fn every_setting_at_its_bounds_runs() {
        let cases: Vec<BoundCase> = vec![
            (
                "sleep_interval 0",
                |_, b| b.sleep_interval(Duration::ZERO),
                3,
            ),
            (
                "sleep_interval 1 µs",
                |_, b| b.sleep_interval(Duration::from_micros(1)),
                3,
            ),
            (
                "sleep_interval 1 day (max)",
                |_, b| b.sleep_interval(MAX_SLEEP_INTERVAL),
                3,
            ),
            (
                "window_size 1 ms (min)",
                |_, b| b.window_size(Duration::from_millis(1)),
                3,
            ),
            (
                "window_size Duration::MAX",
                |_, b| b.window_size(Duration::MAX),
                3,
            ),
            (
                "safety_interval 0",
                |_, b| b.safety_interval(Duration::ZERO),
                3,
            ),
            (
                "safety_interval Duration::MAX",
                |_, b| b.safety_interval(Duration::MAX),
                0,
            ),
            (
                "max_idle_latency 0",
                |_, b| b.max_idle_latency(Duration::ZERO),
                3,
            ),
            (
                "max_idle_latency Duration::MAX",
                |_, b| b.max_idle_latency(Duration::MAX),
                3,
            ),
            (
                "pause_between_saves 0",
                |_, b| b.pause_between_saves(Duration::ZERO),
                3,
            ),
            (
                "pause_between_saves Duration::MAX",
                |_, b| b.pause_between_saves(Duration::MAX),
                3,
            ),
            ("give_up_after 0", |_, b| b.give_up_after(Duration::ZERO), 3),
            (
                "give_up_after Duration::MAX, after a transient error",
                |e, b| {
                    e.fetcher
                        .group_errors
                        .lock()
                        .unwrap()
                        .push(CDCError::Query {
                            what: "streams".into(),
                            source: Box::new(ExecutionError::RequestTimeout(Duration::from_secs(
                                1,
                            ))),
                        });
                    b.give_up_after(Duration::MAX)
                },
                3,
            ),
            (
                "max_rows_per_second 1 (min)",
                |_, b| b.max_rows_per_second(1),
                3,
            ),
            (
                "max_rows_per_second u64::MAX",
                |_, b| b.max_rows_per_second(u64::MAX),
                3,
            ),
            (
                "max_partition_key_restrictions_per_query 1 (min)",
                |_, b| b.max_partition_key_restrictions_per_query(1),
                3,
            ),
            (
                "max_partition_key_restrictions_per_query usize::MAX",
                |_, b| b.max_partition_key_restrictions_per_query(usize::MAX),
                3,
            ),
            (
                "end_timestamp DateTime::MAX_UTC",
                |_, b| b.end_timestamp(DateTime::<Utc>::MAX_UTC),
                3,
            ),
            (
                "on_consumer_error u32::MAX retries, Duration::MAX apart",
                |_, b| {
                    b.on_consumer_error(
                        ConsumerErrorPolicy::stop().with_retry(u32::MAX, Duration::MAX),
                    )
                },
                3,
            ),
        ];
        let mut failures = Vec::new();
        for case in cases {
            if let Err(e) = run_at_bound(case).await {
                failures.push(format!("{}: {e}", case.0));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// A window shorter than a millisecond never ends a window (bounds are whole
    /// milliseconds): `validate` refuses it, and accepts 1 ms.
    #[test]
    fn a_window_shorter_than_a_millisecond_is_refused() {
        let e = Env::new();
        for w in [Duration::from_nanos(1), Duration::from_micros(999)] {
            let err = e.builder().window_size(w).validate().unwrap_err();
            assert!(
                err.to_string().contains("window_size must be at least 1ms"),
                "{err}"
            );
        }
        e.builder()
            .window_size(Duration::from_millis(1))
            .validate()
            .unwrap();
    }

    /// The lease duration is at most a day (its member rows live three lease durations, and
    /// CQL TTLs are at most 20 years); zero and too long are refused, a day is accepted. The
    /// renew interval is at least a millisecond.
    #[test]
    fn the_lease_duration_is_bounded() {
        let e = Env::new();
        let group = |lease: Duration| {
            e.builder()
                .checkpoint_saver(e.saver.clone())
                .group("g")
                .lease_table("ks", "leases")
                .lease_duration(lease)
                .validate()
        };
        let day = Duration::from_secs(24 * 3600);
        group(day).unwrap();
        for lease in [
            day + Duration::from_millis(1),
            Duration::from_secs(20 * 365 * 24 * 3600),
            Duration::MAX,
        ] {
            let err = group(lease).unwrap_err().to_string();
            assert!(
                err.contains("lease_duration must be at most 1 day"),
                "{lease:?}: {err}"
            );
        }
        let zero = group(Duration::ZERO).unwrap_err().to_string();
        assert!(zero.contains("at least 1ms"), "{zero}");
        // The renew interval: at least a millisecond (the timers' resolution).
        let renew = |renew: Duration| {
            e.builder()
                .checkpoint_saver(e.saver.clone())
                .group("g")
                .lease_table("ks", "leases")
                .renew_interval(renew)
                .validate()
        };
        renew(Duration::from_millis(1)).unwrap();
        for short in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_micros(999),
        ] {
            let err = renew(short).unwrap_err().to_string();
            assert!(err.contains("at least 1ms"), "{short:?}: {err}");
        }
    }

    /// Generations (and the table's CDC option) are looked for at most every
    /// [`MIN_GENERATION_POLL`], however short the sleep interval, and a reader with a zero
    /// sleep interval follows a new generation.
    #[tokio::test(start_paused = true)]
    async fn generation_polls_are_floored_and_followed_at_any_sleep_interval() {
        for sleep in [
            Duration::ZERO,
            Duration::from_micros(1),
            Duration::from_millis(50),
        ] {
            let e = Env::new();
            e.fetcher.add(g(BASE - 3_600_000), vec![vec![stream(1)]]);
            e.log.push(row(3, (BASE + 16_000) * 1000, 0, 1));
            let b = e
                .builder()
                .sleep_interval(sleep)
                .start_timestamp(ms(BASE - 60_000));
            let (mut r, h) = e.start(b, None).await.unwrap();
            let at_start = e.fetcher.polls.load(Ordering::Relaxed);
            tokio::time::sleep(Duration::from_secs(10)).await;
            let polls = e.fetcher.polls.load(Ordering::Relaxed) - at_start;
            assert!(
                (95..=101).contains(&polls),
                "sleep {sleep:?}: {polls} generation polls in 10 s"
            );
            // Published ahead of its start, as Scylla does.
            e.fetcher.add(g(BASE + 15_000), vec![vec![stream(3)]]);
            r.stop_at(ms(BASE + 17_000));
            tokio::time::timeout(Duration::from_secs(60), h)
                .await
                .expect("the reader did not reach its end")
                .unwrap();
            let vs: Vec<i32> = e.seen().iter().filter_map(|s| s.3).collect();
            assert_eq!(vs, [1], "sleep {sleep:?}");
        }
    }

    #[test]
    fn ceil_millis_at_the_end_of_time() {
        let max = DateTime::<Utc>::MAX_UTC;
        assert!(ceil_to_millis(max) >= crate::base::time::truncate_to_millis(max));
    }

    #[test]
    fn identifiers_are_quoted() {
        use crate::base::cdc_types::quote_identifier;
        assert_eq!(quote_identifier("ks"), "\"ks\"");
        assert_eq!(quote_identifier("we\"ird"), "\"we\"\"ird\"");
    }

    #[test]
    fn the_longest_idle_pause_follows_max_idle_latency() {
        let s = Duration::from_secs;
        assert_eq!(
            CDCLogReaderBuilder::new().max_idle_pause(),
            DEFAULT_SLEEP_INTERVAL
        );
        let b = CDCLogReaderBuilder::new().max_idle_latency(s(120));
        assert_eq!(b.max_idle_pause(), s(90));
        let b = CDCLogReaderBuilder::new().max_idle_latency(s(5));
        assert_eq!(b.max_idle_pause(), DEFAULT_SLEEP_INTERVAL);
    }

    #[test]
    fn ceil_millis() {
        let t = DateTime::from_timestamp_micros(1_500).unwrap();
        assert_eq!(ceil_to_millis(t), ms(2));
        assert_eq!(ceil_to_millis(ms(7)), ms(7));
    }

    #[test]
    fn stream_ids_display_in_errors() {
        let s = StreamID::new([0xab; 16]);
        assert!(s.to_string().starts_with("0xabab"));
    }
}
