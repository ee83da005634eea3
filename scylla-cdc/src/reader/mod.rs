//! The reader: [`builder::CDCLogReaderBuilder`] validates the configuration and the tables
//! and starts a reader, [`CDCLogReader`] controls the running reader, [`CDCReaderHandle`]
//! resolves to its result and [`ProgressHandle`] reads its figures from anywhere.
//!
//! `build()` spawns one task per reader. In it, one [`Worker`] per table walks the
//! generations of its table (`worker.rs`): for each it starts one
//! [`StreamReader`](crate::stream::StreamReader) per stream group (in a `JoinSet`), tells the
//! readers where the current generation ends once it is known, and moves on only when every
//! reader has reached that point; a worker of a consumer group's member reads the units it
//! holds leases on instead (`member.rs`). One [`Follower`] beside them polls for new
//! generations, once per sleep interval for every table that is waiting for one: a vnode
//! keyspace has one list of generations for all its tables (one poll serves them all), a
//! tablet keyspace one per table. Each table has its own log query, stream readers,
//! statistics (labelled by table), checkpoints, CDC-disabled check and expired-gap reports;
//! the session, the consumer factory, the end, the rate limiter and the checkpoint saver are
//! the reader's.
//!
//! The files stand on each other in this order: `worker.rs`, then `member.rs` (a mode of a
//! worker), then this file (the task of the workers and the follower, and the reader's
//! handles), then `builder.rs` (which makes all of them).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::TryFutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{Instrument, info_span, warn};

use crate::base::cdc_types::GenerationTimestamp;
use crate::base::error::CDCError;
use crate::base::time::ceil_to_millis;
use crate::cluster::generations::GenerationFetcher;
use crate::report::progress::{Progress, ReaderStats};

use member::GroupRuntime;
use worker::{MIN_GENERATION_POLL, Worker};

pub(crate) mod builder;
mod member;
pub(crate) mod worker;

/// Runs every table's worker (with its consumer group, if any) and the generation follower
/// until every table is done (or the first error, which stops the others: dropping a worker
/// aborts its stream readers).
async fn run_tables(
    tables: Vec<(Worker, Option<GroupRuntime>)>,
    follower: Follower,
) -> Result<(), CDCError> {
    let several = tables.len() > 1;
    let tables = futures::future::try_join_all(tables.into_iter().map(|(w, group)| {
        let span = if several {
            info_span!("cdc_table", table = %w.table)
        } else {
            tracing::Span::none()
        };
        let table = w.table.clone();
        run_table(w, group)
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

/// Reads one table: as a member of its consumer group, or every stream group of each of
/// its generations.
async fn run_table(mut worker: Worker, group: Option<GroupRuntime>) -> Result<(), CDCError> {
    match group {
        Some(group) => worker.run_member(group).await?,
        None => worker.run_generations().await?,
    }
    worker.finish()
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
mod tests;
