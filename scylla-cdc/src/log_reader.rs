//! The reader's public face: [`CDCLogReaderBuilder`] validates the configuration and the
//! table, [`CDCLogReader`] controls a running reader and [`CDCReaderHandle`] resolves to its
//! result.
//!
//! `build()` spawns one worker task. The worker walks the generations of the table: for each
//! it starts one [`StreamReader`] per stream group (in a `JoinSet`), polls for the next
//! generation, tells the readers where the current one ends once it is known, and moves on
//! only when every reader has reached that point.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{Instrument, info, info_span, warn};

use crate::cdc_types::GenerationTimestamp;
use crate::checkpoints::CDCCheckpointSaver;
use crate::consumer::ConsumerFactory;
use crate::error::CDCError;
use crate::stream_generations::{
    GenerationFetcher, TabletGenerationFetcher, VnodeGenerationFetcher, generation_covering,
    next_generation,
};
use crate::stream_reader::{DriverLogSource, LogSource, ReaderSettings, StreamReader};
use crate::time::{Clock, SystemClock};

/// Default longest window: 60 s.
pub const DEFAULT_WINDOW_SIZE: Duration = Duration::from_secs(60);
/// Default safety interval: 30 s.
pub const DEFAULT_SAFETY_INTERVAL: Duration = Duration::from_secs(30);
/// Default pause once caught up: 10 s.
pub const DEFAULT_SLEEP_INTERVAL: Duration = Duration::from_secs(10);
/// Default least time between two checkpoints of one stream group: 10 s.
pub const DEFAULT_PAUSE_BETWEEN_SAVES: Duration = Duration::from_secs(10);

/// Quotes a CQL identifier (`"name"`, with inner quotes doubled).
pub(crate) fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Rounds a point in time up to whole milliseconds, so that a limit in between two
/// milliseconds still lets every earlier row through.
fn ceil_to_millis(t: DateTime<Utc>) -> DateTime<Utc> {
    let floor = crate::time::truncate_to_millis(t);
    if floor == t {
        t
    } else {
        floor + TimeDelta::milliseconds(1)
    }
}

/// Configures and starts a [`CDCLogReader`].
///
/// Required: [`session`](Self::session), [`keyspace`](Self::keyspace),
/// [`table_name`](Self::table_name), [`consumer_factory`](Self::consumer_factory).
#[must_use]
pub struct CDCLogReaderBuilder {
    session: Option<Arc<Session>>,
    keyspace: Option<String>,
    table_name: Option<String>,
    consumer_factory: Option<Arc<dyn ConsumerFactory>>,
    start_timestamp: Option<DateTime<Utc>>,
    end_timestamp: Option<DateTime<Utc>>,
    window_size: Duration,
    safety_interval: Duration,
    sleep_interval: Duration,
    checkpoint_saver: Option<Arc<dyn CDCCheckpointSaver>>,
    should_save_progress: Option<bool>,
    should_load_progress: Option<bool>,
    pause_between_saves: Duration,
    clock: Arc<dyn Clock>,
}

impl Default for CDCLogReaderBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl CDCLogReaderBuilder {
    /// A builder with the defaults: start now, no end, 60 s windows, 30 s safety interval,
    /// 10 s sleep, no checkpoints.
    pub fn new() -> Self {
        Self {
            session: None,
            keyspace: None,
            table_name: None,
            consumer_factory: None,
            start_timestamp: None,
            end_timestamp: None,
            window_size: DEFAULT_WINDOW_SIZE,
            safety_interval: DEFAULT_SAFETY_INTERVAL,
            sleep_interval: DEFAULT_SLEEP_INTERVAL,
            checkpoint_saver: None,
            should_save_progress: None,
            should_load_progress: None,
            pause_between_saves: DEFAULT_PAUSE_BETWEEN_SAVES,
            clock: Arc::new(SystemClock),
        }
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

    /// The base table (not its `_scylla_cdc_log`), as stored (required).
    pub fn table_name(mut self, table_name: impl Into<String>) -> Self {
        self.table_name = Some(table_name.into());
        self
    }

    /// Makes the consumers, one per stream group (required).
    pub fn consumer_factory(mut self, factory: Arc<dyn ConsumerFactory>) -> Self {
        self.consumer_factory = Some(factory);
        self
    }

    /// Where reading starts when there is no saved progress (default: when `build` runs).
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

    /// Longest window one query covers (default 60 s; must not be zero).
    pub fn window_size(mut self, window_size: Duration) -> Self {
        self.window_size = window_size;
        self
    }

    /// How far behind "now" reading stays, so that writes in flight (and clock skew between
    /// nodes) are not missed (default 30 s).
    pub fn safety_interval(mut self, safety_interval: Duration) -> Self {
        self.safety_interval = safety_interval;
        self
    }

    /// How long a caught-up stream reader waits before its next window, and how often new
    /// generations are looked for (default 10 s; must not be zero).
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

    /// Least time between two checkpoints of one stream group (default 10 s).
    pub fn pause_between_saves(mut self, pause: Duration) -> Self {
        self.pause_between_saves = pause;
        self
    }

    #[cfg(test)]
    fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Checks the configuration and the table, then starts reading in a background task.
    ///
    /// Returns the reader (to stop it) and a handle that resolves to the reader's result.
    /// Errors: a missing option, an invalid configuration (zero window or sleep, end not after
    /// start), a missing keyspace or table, a table without CDC, a failed metadata query, or
    /// a failure to load saved progress.
    pub async fn build(self) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let session = self.session.clone().ok_or(CDCError::MissingOption("session"))?;
        let keyspace = self.keyspace.clone().ok_or(CDCError::MissingOption("keyspace"))?;
        let table = self
            .table_name
            .clone()
            .ok_or(CDCError::MissingOption("table_name"))?;
        let factory = self
            .consumer_factory
            .clone()
            .ok_or(CDCError::MissingOption("consumer_factory"))?;
        let (save, load) = self.validate()?;

        check_table(&session, &keyspace, &table).await?;
        let tablets = uses_tablets(&session, &keyspace).await?;
        let fetcher: Arc<dyn GenerationFetcher> = if tablets {
            Arc::new(TabletGenerationFetcher::new(session.clone(), &keyspace, &table).await?)
        } else {
            Arc::new(VnodeGenerationFetcher::new(session.clone()).await?)
        };
        let log_table = format!("{table}_scylla_cdc_log");
        let source = Arc::new(DriverLogSource::new(session.clone(), &keyspace, &log_table).await?);
        self.start(fetcher, source, factory, keyspace, table, save, load)
            .await
    }

    /// Validates options that need no cluster; returns whether to save and to load.
    fn validate(&self) -> Result<(bool, bool), CDCError> {
        if self.window_size.is_zero() {
            return Err(CDCError::InvalidConfig(
                "window_size must be greater than zero".into(),
            ));
        }
        if self.sleep_interval.is_zero() {
            return Err(CDCError::InvalidConfig(
                "sleep_interval must be greater than zero".into(),
            ));
        }
        if let (Some(s), Some(e)) = (self.start_timestamp, self.end_timestamp) {
            if e <= s {
                return Err(CDCError::InvalidConfig(format!(
                    "end_timestamp ({e}) must be after start_timestamp ({s})"
                )));
            }
        }
        let has_saver = self.checkpoint_saver.is_some();
        let save = self.should_save_progress.unwrap_or(has_saver);
        let load = self.should_load_progress.unwrap_or(has_saver);
        if (save || load) && !has_saver {
            return Err(CDCError::MissingOption("checkpoint_saver"));
        }
        Ok((save, load))
    }

    /// Starts the worker with the given fetcher and log source.
    #[allow(clippy::too_many_arguments)]
    async fn start(
        self,
        fetcher: Arc<dyn GenerationFetcher>,
        source: Arc<dyn LogSource>,
        factory: Arc<dyn ConsumerFactory>,
        keyspace: String,
        table: String,
        save: bool,
        load: bool,
    ) -> Result<(CDCLogReader, CDCReaderHandle), CDCError> {
        let start = self.start_timestamp.unwrap_or_else(|| self.clock.now());
        let generations = fetcher.fetch_all_generations().await?;
        if generations.is_empty() {
            return Err(CDCError::NoGeneration { keyspace, table });
        }
        let saver = self.checkpoint_saver.clone();
        let loaded_generation = match (&saver, load) {
            (Some(saver), true) => {
                saver
                    .load_last_generation()
                    .await
                    .map_err(|source| CDCError::Checkpoint {
                        action: "load the last generation",
                        source,
                    })?
            }
            _ => None,
        };
        let (end_tx, end_rx) = watch::channel(self.end_timestamp.map(ceil_to_millis));
        let (stop_tx, mut stop_rx) = watch::channel(false);
        let worker = Worker {
            fetcher,
            factory,
            settings: ReaderSettings {
                window_size: self.window_size,
                safety_interval: self.safety_interval,
                sleep_interval: self.sleep_interval,
                pause_between_saves: self.pause_between_saves,
                saver: if save { saver.clone() } else { None },
                clock: self.clock.clone(),
                source,
                end: end_rx,
            },
            loader: if load { saver } else { None },
            start,
            generations,
            loaded_generation,
        };
        let span = info_span!("cdc_log_reader", keyspace = %keyspace, table = %table);
        let task = tokio::spawn(
            async move {
                tokio::select! {
                    result = worker.run() => result,
                    // `stop()`, or the reader was dropped (the sender is gone).
                    _ = stop_rx.wait_for(|stopped| *stopped) => {
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
                stop: stop_tx,
            },
            CDCReaderHandle { task },
        ))
    }
}

/// Fails unless the keyspace, the table and its CDC log table exist.
async fn check_table(session: &Session, keyspace: &str, table: &str) -> Result<(), CDCError> {
    let query_err = |what: &str| {
        let what = what.to_owned();
        move |source| CDCError::Query { what, source }
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

/// Number of rows of a result (0 when it is not rows).
fn rows_count(result: scylla::response::query_result::QueryResult) -> usize {
    result
        .into_rows_result()
        .map(|r| r.rows_num())
        .unwrap_or(0)
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
                source,
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

/// The background task: walks generations and runs their stream readers.
struct Worker {
    fetcher: Arc<dyn GenerationFetcher>,
    factory: Arc<dyn ConsumerFactory>,
    settings: ReaderSettings,
    /// Where saved progress is loaded from, when loading is on.
    loader: Option<Arc<dyn CDCCheckpointSaver>>,
    start: DateTime<Utc>,
    generations: Vec<GenerationTimestamp>,
    loaded_generation: Option<GenerationTimestamp>,
}

impl Worker {
    fn end(&self) -> Option<DateTime<Utc>> {
        *self.settings.end.borrow()
    }

    async fn run(mut self) -> Result<(), CDCError> {
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
            let next = next_generation(&self.generations, &current);
            match next {
                Some(next) if self.end().is_none_or(|e| e > next.timestamp) => current = next,
                _ => return Ok(()),
            }
        }
    }

    /// Where a stream group of `generation` starts.
    async fn group_start(
        &self,
        generation: &GenerationTimestamp,
        group: &[crate::cdc_types::StreamID],
        first: bool,
    ) -> Result<DateTime<Utc>, CDCError> {
        if !first {
            return Ok(generation.timestamp);
        }
        if let Some(loader) = &self.loader {
            let saved = loader
                .load_last_checkpoint(group)
                .await
                .map_err(|source| CDCError::Checkpoint {
                    action: "load a stream checkpoint",
                    source,
                })?;
            if let Some(saved) = saved {
                return Ok(saved.max(generation.timestamp));
            }
            if self.loaded_generation.is_some() {
                // Resuming a generation this group saved nothing in: read it from its start
                // rather than risk skipping what was written while the reader was down.
                return Ok(generation.timestamp);
            }
        }
        Ok(self.start.max(generation.timestamp))
    }

    /// Reads one generation until every group reaches its end (or the reader's end).
    async fn run_generation(
        &mut self,
        generation: GenerationTimestamp,
        first: bool,
    ) -> Result<(), CDCError> {
        let groups = self.fetcher.fetch_stream_groups(&generation).await?;
        info!(generation = %generation, groups = groups.len(), "reading a CDC generation");
        if let Some(saver) = &self.settings.saver {
            if let Err(e) = saver.save_new_generation(&generation).await {
                warn!(error = %e, generation = %generation, "could not save the CDC generation");
            }
        }
        let next = next_generation(&self.generations, &generation);
        let (gen_end_tx, gen_end_rx) = watch::channel(next.map(|g| g.timestamp));
        let mut readers = JoinSet::new();
        for group in groups {
            let start = self.group_start(&generation, &group, first).await?;
            let consumer = self.factory.new_consumer().await;
            let span = info_span!(
                "stream_reader",
                stream = %group.first().map(|s| s.to_string()).unwrap_or_default(),
                streams = group.len(),
                generation = %generation,
                window_start = tracing::field::Empty,
            );
            let reader = StreamReader::new(
                self.settings.clone(),
                group,
                generation,
                gen_end_rx.clone(),
                start,
                consumer,
            );
            readers.spawn(reader.run().instrument(span));
        }
        let mut known_next = next.is_some();
        loop {
            tokio::select! {
                joined = readers.join_next() => match joined {
                    None => return Ok(()),
                    Some(Ok(Ok(()))) => {}
                    // Dropping `readers` on return aborts the other stream readers.
                    Some(Ok(Err(e))) => return Err(e),
                    Some(Err(e)) => return Err(CDCError::Task(e.to_string())),
                },
                _ = tokio::time::sleep(self.settings.sleep_interval), if !known_next => {
                    match self.fetcher.fetch_all_generations().await {
                        Ok(gens) => {
                            self.generations = gens;
                            if let Some(n) = next_generation(&self.generations, &generation) {
                                info!(next = %n, "a new CDC generation was published");
                                known_next = true;
                                // Receivers live as long as their readers; none left is fine.
                                let _ = gen_end_tx.send(Some(n.timestamp));
                            }
                        }
                        Err(e) => warn!(error = %e, "could not look for new CDC generations"),
                    }
                }
            }
        }
    }
}

/// Controls a running reader. Dropping it stops the reader like [`CDCLogReader::stop`]
/// (progress is what the last checkpoint saved).
#[must_use = "dropping the CDCLogReader stops reading"]
pub struct CDCLogReader {
    end: watch::Sender<Option<DateTime<Utc>>>,
    stop: watch::Sender<bool>,
}

impl CDCLogReader {
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
/// Dropping the handle does not stop the reader; only its result is lost.
#[must_use = "the handle reports the reader's errors; await it"]
pub struct CDCReaderHandle {
    task: JoinHandle<Result<(), CDCError>>,
}

impl Future for CDCReaderHandle {
    type Output = Result<(), CDCError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.task)
            .poll(cx)
            .map(|joined| joined.unwrap_or_else(|e| Err(CDCError::Task(e.to_string()))))
    }
}
