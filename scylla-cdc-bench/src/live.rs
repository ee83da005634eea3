//! Readers running in this process against an in-process embedded cluster, what `idle-bench`
//! and `latency-bench` share: this workspace's reader and scylla-cdc-rust 0.7 (crates.io,
//! imported as `upstream`) started with the same settings on one table, each with its own
//! driver session, each telling a [`Delivery`] about every row it delivers (its `pk` and
//! whether it was flagged late); the requests the cluster received; percentiles of delays.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use scylla::client::session::Session;
use scylla_emulator::{EmbeddedCluster, FaultOpcode};

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
}

/// A reader running as a task of this process: [`Running::stop`] ends it.
pub struct Running {
    stop: Box<dyn FnOnce() + Send>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
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
            let (mut reader, handle) = builder.build().await?;
            let task = tokio::spawn(async move {
                if let Err(e) = handle.await {
                    eprintln!("{name} failed: {e}");
                }
            });
            Ok(Running {
                stop: Box::new(move || reader.stop()),
                task,
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
            let (mut reader, handle) = builder.build().await?;
            let task = tokio::spawn(async move {
                if let Err(e) = handle.await {
                    eprintln!("{name} failed: {e}");
                }
            });
            Ok(Running {
                stop: Box::new(move || reader.stop()),
                task,
            })
        }
    }
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
