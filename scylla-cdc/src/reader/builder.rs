//! [`CDCLogReaderBuilder`]: the reader's settings and their defaults and bounds, their
//! validation, the checks of the tables ([`crate::cluster::schema`]) and the start of the
//! reader's task with a [`Worker`] per table (and its consumer group's runtime, if any) and
//! the [`Follower`] of their generations.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use chrono::{DateTime, Utc};
use scylla::client::session::Session;
use tokio::sync::watch;
use tracing::{Instrument, info, info_span};

use crate::base::error::{Backoff, CDCError, retry_transient};
use crate::base::time::ceil_to_millis;
use crate::base::time::{Clock, SystemClock};
use crate::change::ChangeConsumerFactory;
use crate::checkpoints::CDCCheckpointSaver;
use crate::cluster::generations::{
    GenerationFetcher, SharedStreams, TabletGenerationFetcher, VnodeGenerationFetcher,
};
use crate::cluster::replicas::DEFAULT_MAX_PARTITION_KEY_RESTRICTIONS_PER_QUERY;
use crate::cluster::schema::{check_table, read_log_ttl, uses_tablets};
use crate::consumer::ConsumerFactory;
use crate::report::events::{EventListener, ReaderEvent};
use crate::report::progress::{Overall, RateLimiter, ReaderStats, Stats};
use crate::stream::ReaderSettings;
use crate::stream::early::{EarlyReads, EarlySettings};
use crate::stream::error_policy::ConsumerErrorPolicy;
use crate::stream::page::{DriverLogSource, LogSource};
use crate::stream::sink::ConsumerKind;

use super::member::GroupRuntime;
use super::worker::Worker;
use super::{CDCLogReader, CDCReaderHandle, Followed, Follower, run_tables};

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

/// The longest [`CDCLogReaderBuilder::sleep_interval`]: a day. It is also the longest pause
/// of an idle stream group ([`CDCLogReaderBuilder::max_idle_latency`]).
pub const MAX_SLEEP_INTERVAL: Duration = Duration::from_secs(24 * 3600);
/// The shortest [`CDCLogReaderBuilder::window_size`]: a millisecond, the precision of window
/// bounds (CQL timestamps); a shorter window would never move past its start.
pub const MIN_WINDOW_SIZE: Duration = Duration::from_millis(1);
/// The shortest [`EarlyReads::poll_interval`]: 1 ms (the resolution of window bounds).
pub const MIN_EARLY_POLL_INTERVAL: Duration = Duration::from_millis(1);

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
    pub(super) log_ttl: Option<Duration>,
    /// The cap on rows per second of the whole reader (`None`: unlimited).
    max_rows_per_second: Option<u64>,
    /// What happens to a row the consumer cannot take.
    on_consumer_error: ConsumerErrorPolicy,
    /// The most stream ids one log query names.
    max_partition_key_restrictions_per_query: usize,
    /// The bound on a row's delay while its group is idle (`None`: safety interval plus
    /// sleep interval).
    max_idle_latency: Option<Duration>,
    /// Early reads (`None`: off, the default).
    early_reads: Option<EarlyReads>,
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
            early_reads: None,
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
    /// watermark and [`Progress`][crate::Progress] are this member's: see
    /// [`Progress::group`][crate::Progress::group].
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
    /// `max(sleep_interval, MIN_GENERATION_POLL)`
    /// ([`MIN_GENERATION_POLL`][crate::MIN_GENERATION_POLL]: 100 ms), so a zero or tiny sleep
    /// interval does not poll the system tables continuously.
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

    /// Adds `listener` to the event listener already set (if any): both receive every event,
    /// the one set before first. For the command-line toolkit, which logs a group's unit
    /// events whatever listener a program sets.
    #[cfg(feature = "cli")]
    pub(crate) fn also_on_event(
        mut self,
        listener: impl Fn(&ReaderEvent) + Send + Sync + 'static,
    ) -> Self {
        self.event_listener = Some(match self.event_listener.take() {
            None => Arc::new(listener),
            Some(before) => Arc::new(move |e: &ReaderEvent| {
                before(e);
                listener(e);
            }),
        });
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

    /// Delivers each change within about a second of its write instead of a safety interval
    /// after it, without losing late writes ([`EarlyReads`]; off by default): each stream
    /// group reads `lag` behind now every `poll_interval`, and a confirmation read of each
    /// window, once it is older than the safety interval, delivers the rows that became
    /// visible only after the early read had passed them, flagged as late
    /// ([`crate::CDCRow::is_late`], [`crate::Change::is_late`]). Checkpoints and the low watermark
    /// cover only confirmed windows. See the crate docs' "Early reads" for the order kept
    /// and why it is off by default; `build` refuses a lag not shorter than the safety
    /// interval and a zero poll interval or row cap.
    pub fn early_reads(mut self, early: impl Into<Option<EarlyReads>>) -> Self {
        self.early_reads = early.into();
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
    pub(super) fn max_idle_pause(&self) -> Duration {
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
    pub(super) fn log_ttl(mut self, ttl: Option<Duration>) -> Self {
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
    pub(super) fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
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
    pub(super) fn table_set(&self) -> Result<Vec<String>, CDCError> {
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
    pub(super) fn validate(&self) -> Result<(bool, bool), CDCError> {
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
        if let Some(early) = &self.early_reads {
            if early.lag >= self.safety_interval {
                return Err(CDCError::InvalidConfig(format!(
                    "the early reads' lag ({:?}) must be shorter than the safety interval \
                     ({:?}): early reads read closer to now than the safety interval",
                    early.lag, self.safety_interval
                )));
            }
            if early.poll_interval < MIN_EARLY_POLL_INTERVAL {
                return Err(CDCError::InvalidConfig(format!(
                    "the early reads' poll interval must be at least \
                     {MIN_EARLY_POLL_INTERVAL:?} (it was {:?})",
                    early.poll_interval
                )));
            }
            if early.max_unconfirmed_rows == 0 {
                return Err(CDCError::InvalidConfig(
                    "the early reads' max_unconfirmed_rows must be greater than zero".into(),
                ));
            }
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
    pub(super) async fn start(
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
        // One budget of unconfirmed rows for every stream group of every table.
        let early = self.early_reads.as_ref().map(EarlySettings::new);
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
                    Some(GroupRuntime {
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
            workers.push((
                Worker {
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
                        early: early.clone(),
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
                },
                group,
            ));
        }
        let stats = ReaderStats::new(all_stats, overall, self.clock.clone());
        let follower = Follower {
            followed,
            sleep_interval: self.sleep_interval,
        };
        let tables = workers
            .iter()
            .map(|(w, _)| w.table.as_str())
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
pub(super) struct TableSetup {
    /// The base table.
    pub(super) table: String,
    /// Its CDC log table.
    pub(super) log_table: String,
    /// Its generations and streams (the same fetcher for every table of a vnode keyspace).
    pub(super) fetcher: Arc<dyn GenerationFetcher>,
    /// Its log.
    pub(super) source: Arc<dyn LogSource>,
    /// Its CDC `ttl` (`None`: rows do not expire, or it is unknown).
    pub(super) log_ttl: Option<Duration>,
}
