//! Readers running in this process against an in-process embedded cluster, what
//! `scylla-cdc-bench idle` and `scylla-cdc-bench latency` share: this workspace's reader and
//! scylla-cdc-rust 0.7 (crates.io, imported as `upstream`) started with the same settings on
//! one table, each with its own driver session, each telling a [`Delivery`] about every row it
//! delivers (its `pk` and whether it was flagged late); the requests the cluster received, and
//! the requests each session sent ([`counted_session`]: the cluster counts per node and shard,
//! so it cannot tell readers that run at once apart); percentiles of delays.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::cluster::{ClusterState, NodeRef};
use scylla::errors::RequestAttemptError;
use scylla::policies::load_balancing::{
    DefaultPolicy, FallbackPlan, LoadBalancingPolicy, RoutingInfo,
};
use scylla::routing::Shard;
use scylla_emulator::{EmbeddedCluster, FaultOpcode};
use tokio::sync::watch;

/// What a reader's consumers tell about each row they get.
pub trait Delivery: Send + Sync + 'static {
    /// A row was delivered: its `pk` (an `int` column; `None` if it has none) and whether
    /// the reader flagged it as late (`CDCRow::is_late`; always `false` for 0.7).
    fn row(&self, pk: Option<i32>, late: bool);
}

/// Which library reads, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaderKind {
    /// This workspace's `scylla-cdc`, with early reads when given.
    Ours {
        /// `CDCLogReaderBuilder::early_reads` (`None`: off, the library's default).
        early: Option<scylla_cdc::EarlyReads>,
        /// `max_rows_per_second` (`None`: no cap).
        cap: Option<u64>,
    },
    /// scylla-cdc-rust 0.7.0.
    Upstream,
}

/// A reader's settings: its library and the intervals it is given (`None`: the library's
/// default; both libraries default to a 30 s safety interval and a 10 s sleep interval).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderSettings {
    /// The library (and its own options).
    pub kind: ReaderKind,
    /// `safety_interval`.
    pub safety_interval: Option<Duration>,
    /// `sleep_interval`.
    pub sleep_interval: Option<Duration>,
}

impl ReaderSettings {
    /// This reader, library defaults (no early reads).
    pub fn ours() -> Self {
        Self {
            kind: ReaderKind::Ours {
                early: None,
                cap: None,
            },
            safety_interval: None,
            sleep_interval: None,
        }
    }

    /// scylla-cdc-rust 0.7, library defaults.
    pub fn upstream() -> Self {
        Self {
            kind: ReaderKind::Upstream,
            safety_interval: None,
            sleep_interval: None,
        }
    }

    /// With `safety_interval` and `sleep_interval` set.
    pub fn intervals(mut self, safety: Duration, sleep: Duration) -> Self {
        self.safety_interval = Some(safety);
        self.sleep_interval = Some(sleep);
        self
    }

    /// The safety interval the reader runs with (the libraries' default, 30 s, when unset:
    /// scylla-cdc 0.7's is the same, though not exported).
    pub fn safety(&self) -> Duration {
        self.safety_interval
            .unwrap_or(scylla_cdc::DEFAULT_SAFETY_INTERVAL)
    }

    /// The sleep interval the reader runs with (10 s when unset, in both libraries).
    pub fn sleep(&self) -> Duration {
        self.sleep_interval
            .unwrap_or(scylla_cdc::DEFAULT_SLEEP_INTERVAL)
    }
}

/// A reader running as a task of this process: [`Running::stop`] ends it.
pub struct Running {
    stop: Box<dyn FnOnce() + Send>,
    task: tokio::task::JoinHandle<()>,
    /// This workspace's reader's low watermark (`None` for scylla-cdc 0.7, which has none).
    low_watermark: Option<watch::Receiver<Option<DateTime<Utc>>>>,
    /// The error the reader ended with, if it failed.
    failure: Arc<Mutex<Option<String>>>,
}

impl Running {
    /// The error the reader ended with, if it failed (it is also printed when it happens).
    pub fn failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The reader's low watermark (`CDCLogReader::low_watermark`): every change at or before
    /// it was delivered. `None` for scylla-cdc 0.7, and until the reader has one.
    pub fn low_watermark(&self) -> Option<DateTime<Utc>> {
        self.low_watermark.as_ref().and_then(|w| *w.borrow())
    }

    /// Stops the reader and waits (at most 30 s) for its task to end.
    pub async fn stop(self) {
        (self.stop)();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.task).await;
    }
}

/// This reader's consumer: tells the delivery each row's `pk` and late flag.
struct Ours(Arc<dyn Delivery>);

#[async_trait]
impl scylla_cdc::Consumer for Ours {
    async fn consume_cdc(&mut self, row: scylla_cdc::CDCRow<'_>) -> anyhow::Result<()> {
        let pk = row.get_value("pk").ok().flatten().and_then(|v| v.as_int());
        self.0.row(pk, row.is_late);
        Ok(())
    }
}

/// A factory of [`Ours`].
struct OurFactory(Arc<dyn Delivery>);

#[async_trait]
impl scylla_cdc::ConsumerFactory for OurFactory {
    async fn new_consumer(&self) -> Box<dyn scylla_cdc::Consumer> {
        Box::new(Ours(self.0.clone()))
    }
}

/// scylla-cdc 0.7's consumer.
struct Theirs(Arc<dyn Delivery>);

#[async_trait]
impl upstream::consumer::Consumer for Theirs {
    async fn consume_cdc(&mut self, row: upstream::consumer::CDCRow<'_>) -> anyhow::Result<()> {
        let pk = if row.column_exists("pk") {
            row.get_value("pk").as_ref().and_then(|v| v.as_int())
        } else {
            None
        };
        self.0.row(pk, false);
        Ok(())
    }
}

/// A factory of [`Theirs`].
struct TheirFactory(Arc<dyn Delivery>);

#[async_trait]
impl upstream::consumer::ConsumerFactory for TheirFactory {
    async fn new_consumer(&self) -> Box<dyn upstream::consumer::Consumer> {
        Box::new(Theirs(self.0.clone()))
    }
}

/// Starts a reader of `keyspace.table` from `start` with `settings`, delivering to
/// `delivery`; `name` prefixes its error line if it fails.
pub async fn start_reader(
    settings: &ReaderSettings,
    session: Arc<Session>,
    keyspace: &str,
    table: &str,
    start: chrono::DateTime<chrono::Utc>,
    delivery: Arc<dyn Delivery>,
    name: &str,
) -> anyhow::Result<Running> {
    let name = name.to_owned();
    match &settings.kind {
        ReaderKind::Ours { early, cap } => {
            let mut builder = scylla_cdc::CDCLogReaderBuilder::new()
                .session(session)
                .keyspace(keyspace)
                .table_name(table)
                .consumer_factory(Arc::new(OurFactory(delivery)))
                .start_timestamp(start)
                .early_reads(early.clone());
            if let Some(safety) = settings.safety_interval {
                builder = builder.safety_interval(safety);
            }
            if let Some(sleep) = settings.sleep_interval {
                builder = builder.sleep_interval(sleep);
            }
            if let Some(cap) = cap {
                builder = builder.max_rows_per_second(*cap);
            }
            let (mut reader, handle) = builder
                .build()
                .await
                .with_context(|| format!("starting {name}"))?;
            let low_watermark = Some(reader.low_watermark());
            let failure = Arc::default();
            let task = tokio::spawn(note_failure(name, handle, Arc::clone(&failure)));
            Ok(Running {
                stop: Box::new(move || reader.stop()),
                task,
                low_watermark,
                failure,
            })
        }
        ReaderKind::Upstream => {
            let since_epoch = Duration::from_millis(u64::try_from(start.timestamp_millis())?);
            let mut builder = upstream::log_reader::CDCLogReaderBuilder::new()
                .session(session)
                .keyspace(keyspace)
                .table_name(table)
                .consumer_factory(Arc::new(TheirFactory(delivery)))
                .start_timestamp(since_epoch);
            if let Some(safety) = settings.safety_interval {
                builder = builder.safety_interval(safety);
            }
            if let Some(sleep) = settings.sleep_interval {
                builder = builder.sleep_interval(sleep);
            }
            let (mut reader, handle) = builder
                .build()
                .await
                .with_context(|| format!("starting {name}"))?;
            let failure = Arc::default();
            let task = tokio::spawn(note_failure(name, handle, Arc::clone(&failure)));
            Ok(Running {
                stop: Box::new(move || reader.stop()),
                task,
                low_watermark: None,
                failure,
            })
        }
    }
}

/// Waits for a reader's `handle`; prints and keeps in `failure` the error it ends with.
async fn note_failure<E: std::fmt::Display>(
    name: String,
    handle: impl Future<Output = Result<(), E>>,
    failure: Arc<Mutex<Option<String>>>,
) {
    if let Err(e) = handle.await {
        let e = format!("{e:#}");
        eprintln!("{name} failed: {e}");
        *failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }
}

/// The statement requests (QUERY, EXECUTE, BATCH attempts, page fetches included) one
/// session sent, counted by its load-balancing policy ([`counted_session`]).
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    /// Requests sent so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The driver's default policy, counting every attempt it is told the outcome of (the
/// driver calls `on_request_success` or `on_request_failure` once per attempt it routes).
#[derive(Debug)]
struct CountingPolicy {
    inner: Arc<dyn LoadBalancingPolicy>,
    sent: RequestCounter,
}

impl LoadBalancingPolicy for CountingPolicy {
    fn pick<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> Option<(NodeRef<'a>, Option<Shard>)> {
        self.inner.pick(request, cluster)
    }

    fn fallback<'a>(
        &'a self,
        request: &'a RoutingInfo,
        cluster: &'a ClusterState,
    ) -> FallbackPlan<'a> {
        self.inner.fallback(request, cluster)
    }

    fn on_request_success(&self, request: &RoutingInfo, latency: Duration, node: NodeRef<'_>) {
        self.sent.0.fetch_add(1, Ordering::Relaxed);
        self.inner.on_request_success(request, latency, node);
    }

    fn on_request_failure(
        &self,
        request: &RoutingInfo,
        latency: Duration,
        node: NodeRef<'_>,
        error: &RequestAttemptError,
    ) {
        self.sent.0.fetch_add(1, Ordering::Relaxed);
        self.inner.on_request_failure(request, latency, node, error);
    }

    fn name(&self) -> String {
        format!("Counting({})", self.inner.name())
    }
}

/// A driver session to `contact` whose statement requests are counted on the client side, by
/// its load-balancing policy (the driver's default one, counting): every attempt of a
/// statement the session routes, page fetches and retries included. This workspace's reader
/// wraps the session's policy in its own routing policy, which passes the counts on;
/// scylla-cdc 0.7 uses it as it is. What the driver sends on its own (the control
/// connection's metadata queries, PREPARE on every node) is not counted.
pub async fn counted_session(
    contact: SocketAddr,
) -> anyhow::Result<(Arc<Session>, RequestCounter)> {
    let sent = RequestCounter::default();
    let policy = CountingPolicy {
        inner: DefaultPolicy::builder().build(),
        sent: sent.clone(),
    };
    let profile = ExecutionProfile::builder()
        .load_balancing_policy(Arc::new(policy))
        .build();
    let session = SessionBuilder::new()
        .known_node(contact.to_string())
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .with_context(|| format!("connecting to {contact}"))?;
    Ok((Arc::new(session), sent))
}

/// QUERY and EXECUTE requests the cluster received so far, all nodes and shards.
pub fn requests(cluster: &EmbeddedCluster) -> u64 {
    let sum = |op| -> u64 { cluster.request_counts_of(op).values().sum() };
    sum(FaultOpcode::Query) + sum(FaultOpcode::Execute)
}

/// The `q` quantile (0..=1) of `sorted` (ascending), nearest rank: the least value with at
/// least `q` of the values at or below it; `None` if empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// p50, p99 and max of `values` (sorted here); `None` if empty.
pub fn p50_p99_max(mut values: Vec<f64>) -> Option<[f64; 3]> {
    values.sort_by(f64::total_cmp);
    Some([
        quantile(&values, 0.5)?,
        quantile(&values, 0.99)?,
        *values.last()?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        assert_eq!(quantile(&[], 0.5), None);
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        // Fewer than 100 values: p99 is the largest.
        assert_eq!(quantile(&[1.0, 2.0, 3.0], 0.99), Some(3.0));
        assert_eq!(p50_p99_max(vec![3.0, 1.0, 2.0]), Some([2.0, 3.0, 3.0]));
        assert_eq!(p50_p99_max(vec![]), None);
    }
}
