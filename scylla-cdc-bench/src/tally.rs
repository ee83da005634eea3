//! What the child processes of `scylla-cdc-bench compare`, `scylla-cdc-bench group` and
//! `scylla-cdc-bench latency` share: the consumers' tally (count the row, decode `v`, add it to
//! a checksum), the consumer factories of both readers that tally, and the one result line a
//! child prints for its parent.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use anyhow::{Context, bail};
use async_trait::async_trait;
use scylla::value::CqlValue;

use crate::mix;

/// Totals of every consumer of one child process.
#[derive(Debug, Default)]
pub struct Totals {
    rows: AtomicU64,
    checksum: AtomicU64,
    last_row_us: AtomicU64,
    /// Whether a row should still be left out (the tests' wrong delivery).
    drop_one: AtomicBool,
}

impl Totals {
    /// Totals that leave the first delivered row out with `drop_one_row`.
    pub fn new(drop_one_row: bool) -> Arc<Totals> {
        Arc::new(Totals {
            drop_one: AtomicBool::new(drop_one_row),
            ..Totals::default()
        })
    }

    /// Rows tallied by the consumers dropped so far.
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }

    /// Wrapping sum of [`mix`] of their rows' `v`.
    pub fn checksum(&self) -> u64 {
        self.checksum.load(Ordering::Relaxed)
    }

    /// When their last row was tallied, microseconds since the epoch (0: none, or not
    /// timed).
    pub fn last_row_us(&self) -> u64 {
        self.last_row_us.load(Ordering::Relaxed)
    }
}

/// One consumer's tally: count the row, decode `v` (8 big-endian bytes), add it to the
/// checksum, and, when timed, note the time. It adds its totals to the shared ones when
/// dropped (the readers drop their consumers before their handles resolve).
#[derive(Debug)]
pub struct Tally {
    rows: u64,
    checksum: u64,
    /// `None`: not timed (a clock read per row would be measured as the reader's CPU).
    last_row_us: Option<u64>,
    shared: Arc<Totals>,
}

impl Tally {
    /// A tally adding to `shared`; `timed` notes when each row arrived.
    pub fn new(shared: Arc<Totals>, timed: bool) -> Tally {
        Tally {
            rows: 0,
            checksum: 0,
            last_row_us: timed.then_some(0),
            shared,
        }
    }

    /// Tallies one row's `v`.
    pub fn add(&mut self, v: &[u8]) -> anyhow::Result<()> {
        let bytes: [u8; 8] = v
            .try_into()
            .with_context(|| format!("v has {} bytes, not 8", v.len()))?;
        if self.shared.drop_one.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        self.rows += 1;
        self.checksum = self.checksum.wrapping_add(mix(u64::from_be_bytes(bytes)));
        if let Some(last) = &mut self.last_row_us {
            *last = now_us();
        }
        Ok(())
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.shared.rows.fetch_add(self.rows, Ordering::Relaxed);
        self.shared
            .checksum
            .fetch_add(self.checksum, Ordering::Relaxed);
        self.shared
            .last_row_us
            .fetch_max(self.last_row_us.unwrap_or(0), Ordering::Relaxed);
    }
}

/// This workspace's reader's consumers that tally: `v` borrowed from the page, each consumer
/// with its own [`Tally`] (timed or not) adding to the shared totals.
pub struct TallyFactory {
    totals: Arc<Totals>,
    timed: bool,
}

impl TallyFactory {
    /// Consumers adding to `totals`; `timed` notes when each row arrived.
    pub fn new(totals: Arc<Totals>, timed: bool) -> Arc<Self> {
        Arc::new(Self { totals, timed })
    }
}

/// A consumer of [`TallyFactory`].
struct TallyConsumer(Tally);

#[async_trait]
impl scylla_cdc::Consumer for TallyConsumer {
    async fn consume_cdc(&mut self, row: scylla_cdc::CDCRow<'_>) -> anyhow::Result<()> {
        let v = row
            .get_value_as::<&[u8]>("v")?
            .context("a log row without v")?;
        self.0.add(v)
    }
}

#[async_trait]
impl scylla_cdc::ConsumerFactory for TallyFactory {
    async fn new_consumer(&self) -> Box<dyn scylla_cdc::Consumer> {
        Box::new(TallyConsumer(Tally::new(self.totals.clone(), self.timed)))
    }
}

/// scylla-cdc 0.7's consumers that tally (untimed): its `CDCRow` holds `CqlValue`s, `v` is
/// a `CqlValue::Blob`.
pub struct UpstreamTallyFactory(Arc<Totals>);

impl UpstreamTallyFactory {
    /// Consumers adding to `totals`.
    pub fn new(totals: Arc<Totals>) -> Arc<Self> {
        Arc::new(Self(totals))
    }
}

/// A consumer of [`UpstreamTallyFactory`].
struct UpstreamTallyConsumer(Tally);

#[async_trait]
impl upstream::consumer::Consumer for UpstreamTallyConsumer {
    async fn consume_cdc(&mut self, row: upstream::consumer::CDCRow<'_>) -> anyhow::Result<()> {
        match row.get_value("v") {
            Some(CqlValue::Blob(v)) => self.0.add(v),
            other => bail!("v is {other:?}, not a blob"),
        }
    }
}

#[async_trait]
impl upstream::consumer::ConsumerFactory for UpstreamTallyFactory {
    async fn new_consumer(&self) -> Box<dyn upstream::consumer::Consumer> {
        Box::new(UpstreamTallyConsumer(Tally::new(self.0.clone(), false)))
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The fields of the result line starting with `prefix` among a child's output lines
/// (`prefix name=value ...`, every value a `u64`).
#[derive(Debug)]
pub struct ResultFields(HashMap<String, u64>);

impl ResultFields {
    /// Finds and parses the line.
    pub fn parse(output: &str, prefix: &str) -> anyhow::Result<ResultFields> {
        let line = output
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .context("the child printed no result line")?;
        let mut fields = HashMap::new();
        for field in line.split_whitespace() {
            let malformed = || format!("malformed result field {field:?}");
            let (k, v) = field.split_once('=').with_context(malformed)?;
            fields.insert(k.to_owned(), v.parse().with_context(malformed)?);
        }
        Ok(ResultFields(fields))
    }

    /// One field's value.
    pub fn get(&self, name: &str) -> anyhow::Result<u64> {
        self.0
            .get(name)
            .copied()
            .with_context(|| format!("no {name} in the result line"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tallies_of_the_whole_backlog_match_its_checksum() {
        let shared = Totals::new(false);
        for part in [0..3u64, 3..10] {
            let mut t = Tally::new(shared.clone(), true);
            for n in part {
                t.add(&n.to_be_bytes()).unwrap();
            }
        }
        assert_eq!(
            (shared.rows(), shared.checksum()),
            crate::backlog_checksum(10)
        );
        assert!(shared.last_row_us() > 0);
        // A row delivered twice instead of another is seen; untimed tallies note no time.
        let other = Totals::new(false);
        let mut t = Tally::new(other.clone(), false);
        for n in [0u64, 1, 2, 3, 4, 5, 6, 7, 8, 8] {
            t.add(&n.to_be_bytes()).unwrap();
        }
        assert!(t.add(&[1, 2, 3]).is_err());
        drop(t);
        assert_ne!(
            (other.rows(), other.checksum()),
            crate::backlog_checksum(10)
        );
        assert_eq!(other.last_row_us(), 0);
    }

    #[test]
    fn a_dropped_row_is_left_out_once() {
        let shared = Totals::new(true);
        let mut t = Tally::new(shared.clone(), false);
        for n in 0..3u64 {
            t.add(&n.to_be_bytes()).unwrap();
        }
        drop(t);
        assert_eq!(shared.rows(), 2);
    }

    #[test]
    fn result_fields_are_found_among_other_lines() {
        let f = ResultFields::parse("noise\nres rows=3 checksum=18446744073709551615\n", "res")
            .unwrap();
        assert_eq!(
            (f.get("rows").unwrap(), f.get("checksum").unwrap()),
            (3, u64::MAX)
        );
        assert!(f.get("cpu_us").is_err());
        assert!(ResultFields::parse("nothing", "res").is_err());
        assert!(ResultFields::parse("res rows=x", "res").is_err());
        assert!(ResultFields::parse("res rows", "res").is_err());
    }
}
