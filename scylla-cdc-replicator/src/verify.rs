//! `scylla-cdc-replicator verify`: compares a source table with its replica, row by row.
//!
//! The Murmur3 token ring is split into [`token_ranges`] (256 by default). Each range is
//! scanned on both sides at once with the same statement ([`ScanPlan`]: the token, the key
//! columns, and every other column with, for the atomic ones, `WRITETIME` and `TTL`), paged,
//! and the two streams are merged in token order: rows of a token present
//! on one side only are missing (on the destination) or extra (on the destination); rows of
//! a token present on both sides are matched by primary key and compared cell by cell. Up to
//! `--parallelism` ranges are scanned at once, and a range holds at most one page and one
//! token's rows (one partition, barring Murmur3 collisions) of each side in memory, so
//! memory does not grow with the table.
//!
//! # What "equal" means
//!
//! Two rows with the same primary key are equal when every non-key column has the same value
//! and, for atomic columns (scalars, frozen collections and UDTs, tuples, vectors), the same
//! `WRITETIME` and a `TTL` within [`TTL_TOLERANCE_SECS`] of each other: `TTL()` is the
//! remaining time to live when the row is read, the two sides are read a moment apart, and
//! the replicator computes the remaining TTL it writes to the second. Non-frozen collections
//! and UDTs have no single write time: only their values are compared. Static columns are
//! compared on every row of their partition (a partition whose static row differs counts
//! each of its rows as different).
//!
//! `--at TIME` compares the tables as they were at TIME as far as a scan can tell: a cell
//! written after TIME (on either side) is not compared, nor is a row whose every cell was
//! written after TIME (counted apart, [`Report::newer`]), so that writes still in flight while
//! the source keeps being written do not show as differences. A scan sees only the newest
//! cells: an overwritten cell's earlier value and a deleted row are gone, so a row deleted
//! after TIME on one side and not yet on the other still shows as a difference.
//!
//! # Exit codes
//!
//! 0 the tables are equal, [`EXIT_DIFFERENT`] (5) they differ, 1 a failure while scanning
//! (a request that kept failing past `--give-up-after`, an interruption), 2 a bad argument, 3
//! a cluster that cannot be reached, 4 a keyspace or table missing or not matching.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use scylla::client::session::Session;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};
use scylla_cdc::Backoff;
use scylla_cdc::cli::Output;
use scylla_cdc::cli::{CliError, Shutdown, error_chain, retry_startup};
use tracing::info;

// The verify command's arguments live with the other arguments; this module's public paths
// (`verify::VerifyArgs`, `verify::VerifyConfig`) stay.
pub use crate::args::{EXIT_DIFFERENT, VerifyArgs, VerifyConfig};
use crate::scan::{ScanError, Side, value_text};
pub use crate::scan::{ScanPlan, token_ranges};
use crate::schema::{check_compatible, read_table_schema, schema_error};

/// TTLs that differ by at most this many seconds are equal (see the module docs): 1 s of
/// rounding in the replicator's remaining-TTL computation, 1 s of rounding of `TTL()` on
/// each side, and the time between reading a row on the two sides, which are read page by
/// page in step.
pub const TTL_TOLERANCE_SECS: i32 = 5;

/// Most differing rows named in a report.
pub const MAX_SAMPLES: usize = 10;

/// How a row differs between the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DiffKind {
    /// On the source, not on the destination.
    Missing,
    /// On the destination, not on the source.
    Extra,
    /// On both, with a different value, write time or TTL.
    Different,
}

impl fmt::Display for DiffKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DiffKind::Missing => "missing on the destination",
            DiffKind::Extra => "extra on the destination",
            DiffKind::Different => "different",
        })
    }
}

/// One differing row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffSample {
    /// Its partition's token.
    pub token: i64,
    /// Its primary key, `name=value, ...`.
    pub key: String,
    /// How it differs.
    pub kind: DiffKind,
    /// For [`DiffKind::Different`], the first differing cell, e.g.
    /// `v: source 1, destination 2`.
    pub detail: Option<String>,
}

impl fmt::Display for DiffSample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.key)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

/// The result of comparing one table with its replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Rows seen on either side (equal + missing + extra + different).
    pub compared: u64,
    /// Rows on the source, not on the destination.
    pub missing: u64,
    /// Rows on the destination, not on the source.
    pub extra: u64,
    /// Rows on both sides that differ.
    pub different: u64,
    /// Rows on one side only whose every cell was written after `--at` (not differences).
    pub newer: u64,
    /// The first [`MAX_SAMPLES`] differing rows, in token order.
    pub samples: Vec<DiffSample>,
}

impl Report {
    /// Whether the tables are equal.
    pub fn is_equal(&self) -> bool {
        self.missing == 0 && self.extra == 0 && self.different == 0
    }

    /// Adds a differing row.
    fn record(&mut self, sample: DiffSample) {
        match sample.kind {
            DiffKind::Missing => self.missing += 1,
            DiffKind::Extra => self.extra += 1,
            DiffKind::Different => self.different += 1,
        }
        self.compared += 1;
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push(sample);
        }
    }

    /// Adds the report of another range.
    fn merge(&mut self, other: Report) {
        self.compared += other.compared;
        self.missing += other.missing;
        self.extra += other.extra;
        self.different += other.different;
        self.newer += other.newer;
        self.samples.extend(other.samples);
        self.samples
            .sort_by(|a, b| (a.token, &a.key).cmp(&(b.token, &b.key)));
        self.samples.truncate(MAX_SAMPLES);
    }
}

impl fmt::Display for Report {
    /// `rows compared N, missing M, extra E, different D`, then one line per sample.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rows compared {}, missing {}, extra {}, different {}",
            self.compared, self.missing, self.extra, self.different
        )?;
        if self.newer > 0 {
            write!(
                f,
                ", on one side only but written after --at {}",
                self.newer
            )?;
        }
        for s in &self.samples {
            write!(f, "\n  {s}")?;
        }
        Ok(())
    }
}

impl ScanPlan {
    /// The first difference between the source and destination versions of a row, if any.
    fn difference(&self, source: &Row, destination: &Row, cutoff: Option<i64>) -> Option<String> {
        let mut at = 1 + self.key_names.len();
        let cell = |row: &Row, i: usize| row.columns.get(i).cloned().flatten();
        for c in &self.columns {
            if c.timed {
                let (ws, wd) = (cell(source, at), cell(destination, at));
                let (ts, td) = (cell(source, at + 1), cell(destination, at + 1));
                at += 2;
                if written_after(&ws, cutoff) || written_after(&wd, cutoff) {
                    // Written after --at on one side: not compared.
                    at += 1;
                    continue;
                }
                let (vs, vd) = (cell(source, at), cell(destination, at));
                if vs != vd {
                    return Some(format!(
                        "{}: source {}, destination {}",
                        c.name,
                        value_text(&vs),
                        value_text(&vd)
                    ));
                }
                if ws != wd {
                    return Some(format!(
                        "writetime({}): source {}, destination {}",
                        c.name,
                        value_text(&ws),
                        value_text(&wd)
                    ));
                }
                let ttl_equal = match (&ts, &td) {
                    (None, None) => true,
                    (Some(CqlValue::Int(a)), Some(CqlValue::Int(b))) => {
                        (i64::from(*a) - i64::from(*b)).abs() <= i64::from(TTL_TOLERANCE_SECS)
                    }
                    (a, b) => a == b,
                };
                if !ttl_equal {
                    return Some(format!(
                        "ttl({}): source {}, destination {}",
                        c.name,
                        value_text(&ts),
                        value_text(&td)
                    ));
                }
            } else {
                let (vs, vd) = (cell(source, at), cell(destination, at));
                if vs != vd {
                    return Some(format!(
                        "{}: source {}, destination {}",
                        c.name,
                        value_text(&vs),
                        value_text(&vd)
                    ));
                }
            }
            at += 1;
        }
        None
    }
}

/// Whether a `WRITETIME` value is after `cutoff` (microseconds).
fn written_after(writetime: &Option<CqlValue>, cutoff: Option<i64>) -> bool {
    matches!((writetime, cutoff), (Some(CqlValue::BigInt(w)), Some(c)) if *w > c)
}

impl ScanPlan {
    /// Whether every cell of `row` that has a write time was written after `cutoff`, and it
    /// has at least one (a row of keys alone cannot be dated).
    fn all_written_after(&self, row: &Row, cutoff: Option<i64>) -> bool {
        let mut at = 1 + self.key_names.len();
        let mut dated = false;
        for c in &self.columns {
            if c.timed {
                match row.columns.get(at).cloned().flatten() {
                    None => {}
                    w if written_after(&w, cutoff) => dated = true,
                    Some(_) => return false,
                }
                at += 2;
            }
            at += 1;
        }
        dated
    }
}

/// What a range scan shares with the others.
struct ScanContext {
    source: Arc<Session>,
    destination: Arc<Session>,
    source_statement: PreparedStatement,
    destination_statement: PreparedStatement,
    plan: ScanPlan,
    /// `--at` in microseconds.
    cutoff: Option<i64>,
    compared: AtomicU64,
    ranges_done: AtomicU64,
}

/// Compares one token range of the two tables (see the module docs).
async fn compare_range(ctx: &ScanContext, range: (i64, i64)) -> Result<Report, ScanError> {
    let (mut s, mut d) = tokio::try_join!(
        Side::open("source", &ctx.source, &ctx.source_statement, range),
        Side::open(
            "destination",
            &ctx.destination,
            &ctx.destination_statement,
            range
        ),
    )?;
    let mut report = Report::default();
    let mut previous = range.0;
    loop {
        let (ts, td) = (s.token()?, d.token()?);
        let token = match (ts, td) {
            (None, None) => break,
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        // The merge relies on both sides returning rows in token order, inside the range: a
        // cluster that does not (another partitioner) is an error, not a list of differences.
        if token <= previous || token > range.1 {
            return Err(ScanError {
                message: format!(
                    "token {token} out of order after {previous} in range ({}, {}]",
                    range.0, range.1
                ),
                transient: false,
            });
        }
        previous = token;
        let (source_rows, destination_rows) = tokio::try_join!(
            async {
                if ts == Some(token) {
                    s.take_token(token).await
                } else {
                    Ok(Vec::new())
                }
            },
            async {
                if td == Some(token) {
                    d.take_token(token).await
                } else {
                    Ok(Vec::new())
                }
            },
        )?;
        let before = report.compared;
        compare_token(
            &ctx.plan,
            ctx.cutoff,
            token,
            source_rows,
            destination_rows,
            &mut report,
        );
        ctx.compared
            .fetch_add(report.compared - before, Ordering::Relaxed);
    }
    Ok(report)
}

/// Compares the rows of one token, matched by primary key (the `Debug` text of its values,
/// which tells every two distinct values apart).
fn compare_token(
    plan: &ScanPlan,
    cutoff: Option<i64>,
    token: i64,
    source_rows: Vec<Row>,
    destination_rows: Vec<Row>,
    report: &mut Report,
) {
    let identity = |row: &Row| format!("{:?}", row.columns.get(1..1 + plan.key_names.len()));
    let mut source: HashMap<String, Row> = HashMap::with_capacity(source_rows.len());
    let mut order = Vec::with_capacity(source_rows.len());
    for row in source_rows {
        let id = identity(&row);
        order.push(id.clone());
        source.insert(id, row);
    }
    let sample = |row: &Row, kind, detail| DiffSample {
        token,
        key: plan.key_text(row),
        kind,
        detail,
    };
    for row in destination_rows {
        match source.remove(&identity(&row)) {
            None if plan.all_written_after(&row, cutoff) => report.newer += 1,
            None => report.record(sample(&row, DiffKind::Extra, None)),
            Some(s) => match plan.difference(&s, &row, cutoff) {
                None => report.compared += 1,
                Some(d) => report.record(sample(&row, DiffKind::Different, Some(d))),
            },
        }
    }
    for id in order {
        if let Some(row) = source.remove(&id) {
            if plan.all_written_after(&row, cutoff) {
                report.newer += 1;
            } else {
                report.record(sample(&row, DiffKind::Missing, None));
            }
        }
    }
}

/// [`compare_range`], retrying the whole range after a transient failure.
async fn compare_range_retrying(
    ctx: &ScanContext,
    range: (i64, i64),
    give_up_after: Option<Duration>,
) -> Result<Report, CliError> {
    let mut backoff = Backoff::new(give_up_after);
    loop {
        match compare_range(ctx, range).await {
            Ok(r) => {
                ctx.ranges_done.fetch_add(1, Ordering::Relaxed);
                return Ok(r);
            }
            Err(e) if e.transient => {
                let what = format!("scanning token range ({}, {}]", range.0, range.1);
                if !backoff.wait(&what, &e).await {
                    return Err(CliError::transient(format!("{what}: {e}")));
                }
            }
            Err(e) => return Err(CliError::runtime(format!("scanning: {e}"))),
        }
    }
}

/// Compares table `table` of `config.keyspace` on the source with its replica in
/// `config.destination_keyspace`, with both sessions open.
pub async fn verify_table(
    source: Arc<Session>,
    destination: Arc<Session>,
    config: &VerifyConfig,
    table: &str,
) -> Result<Report, CliError> {
    let give_up = config.give_up_after;
    let dks = &config.destination_keyspace;
    let schema = retry_startup("reading the source table's schema", give_up, || async {
        read_table_schema(&source, &config.keyspace, table)
            .await
            .map_err(|e| schema_error("source", e))
    })
    .await?;
    let dest_schema = retry_startup(
        "reading the destination table's schema",
        give_up,
        || async {
            read_table_schema(&destination, dks, table)
                .await
                .map_err(|e| schema_error("destination", e))
        },
    )
    .await?;
    // The source's columns are compared; extra regular destination columns (kept by
    // --allow-extra-columns after a drop on the source) are not.
    check_compatible(&schema, &dest_schema, true)
        .map_err(|e| CliError::schema(format!("destination: {e}")))?;
    let plan = ScanPlan::new(&schema);
    let prepare = |session: Arc<Session>, statement: String| async move {
        let mut p = session.prepare(statement.clone()).await.map_err(|e| {
            let message = format!("preparing `{statement}`: {}", error_chain(&e));
            if scylla_cdc::is_transient_prepare(&e) {
                CliError::transient(message)
            } else {
                CliError::runtime(message)
            }
        })?;
        p.set_page_size(i32::try_from(config.page_size).unwrap_or(i32::MAX));
        Ok::<_, CliError>(p)
    };
    let pk_len = schema.partition_key_len;
    let source_statement = retry_startup("preparing the source scan", give_up, || {
        prepare(
            source.clone(),
            plan.statement(&config.keyspace, table, pk_len),
        )
    })
    .await?;
    let destination_statement = retry_startup("preparing the destination scan", give_up, || {
        prepare(destination.clone(), plan.statement(dks, table, pk_len))
    })
    .await?;
    let ctx = ScanContext {
        source,
        destination,
        source_statement,
        destination_statement,
        plan,
        cutoff: config.at.map(|t| t.timestamp_micros()),
        compared: AtomicU64::new(0),
        ranges_done: AtomicU64::new(0),
    };
    let ranges = token_ranges(config.ranges);
    let total = ranges.len();
    let name = format!("{}.{table}", config.keyspace);
    info!(table = %name, ranges = total, parallelism = config.parallelism, "verifying");
    let started = Instant::now();
    let scans = stream::iter(ranges)
        .map(|r| compare_range_retrying(&ctx, r, give_up))
        .buffer_unordered(usize::try_from(config.parallelism).unwrap_or(8))
        .try_fold(Report::default(), |mut acc, r| async move {
            acc.merge(r);
            Ok(acc)
        });
    tokio::pin!(scans);
    let mut ticks = tokio::time::interval(config.progress_interval);
    ticks.tick().await; // the first tick is immediate
    let (mut last, mut last_at) = (0, Instant::now());
    let report = loop {
        tokio::select! {
            r = &mut scans => break r?,
            _ = ticks.tick() => {
                let rows = ctx.compared.load(Ordering::Relaxed);
                let rate = (rows - last) as f64 / last_at.elapsed().as_secs_f64().max(1e-9);
                let done = ctx.ranges_done.load(Ordering::Relaxed);
                info!(
                    table = %name,
                    ranges_done = done,
                    ranges = total,
                    rows_compared = rows,
                    "verify progress: {done}/{total} ranges, {rows} rows compared, {rate:.0} rows/s"
                );
                (last, last_at) = (rows, Instant::now());
            }
        }
    };
    let secs = started.elapsed().as_secs_f64();
    info!(
        table = %name,
        rows_compared = report.compared,
        "verified {name} in {secs:.1}s, {:.0} rows/s",
        report.compared as f64 / secs.max(1e-9)
    );
    Ok(report)
}

/// Runs a verification: connects, compares every table, writes a report per table on `out`.
/// Returns an error with exit code [`EXIT_DIFFERENT`] naming the tables that differ, if any;
/// a failure to compare them has another code (see the module docs).
pub async fn run_verify(
    config: &VerifyConfig,
    out: &Output,
    mut shutdown: Shutdown,
) -> Result<(), CliError> {
    let work = async {
        let (source, destination) = config.clusters.connect(config.give_up_after).await?;
        let mut differing = Vec::new();
        for table in &config.tables {
            let report = verify_table(source.clone(), destination.clone(), config, table).await?;
            let name = format!("{}.{table}", config.keyspace);
            out.write(&format!("{name}: {report}\n"))
                .map_err(|e| CliError::runtime(format!("cannot write the report: {e}")))?;
            if !report.is_equal() {
                differing.push(name);
            }
        }
        if differing.is_empty() {
            Ok(())
        } else {
            Err(CliError::new(
                EXIT_DIFFERENT,
                format!(
                    "the destination differs from the source: {}",
                    differing.join(", ")
                ),
            ))
        }
    };
    tokio::select! {
        r = work => r,
        () = shutdown.requested() => Err(CliError::runtime("verification interrupted")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::ScannedColumn;
    use scylla_cdc::cli::{clap_failure, exit_code};

    /// `scylla-cdc-replicator verify ARGS`, as the program parses it.
    fn parse(args: &[&str]) -> Result<VerifyConfig, CliError> {
        let full = ["scylla-cdc-replicator", "verify"]
            .iter()
            .chain(args)
            .copied();
        match crate::args::parse(full) {
            Ok(crate::args::Invocation::Verify(a)) => a.into_config(),
            Ok(crate::args::Invocation::Replicate(_)) => panic!("not verify"),
            Err(e) => Err(clap_failure(&e).unwrap_err()),
        }
    }

    const BASE: [&str; 8] = [
        "--source",
        "10.0.0.1",
        "--destination",
        "10.0.1.1",
        "-k",
        "ks",
        "-t",
        "t",
    ];

    #[test]
    fn arguments() {
        let c = parse(&BASE).unwrap();
        assert_eq!(c.clusters.source, vec!["10.0.0.1:9042"]);
        assert_eq!(c.destination_keyspace, "ks");
        assert_eq!((c.ranges, c.parallelism, c.page_size), (256, 8, 1000));
        assert_eq!(c.give_up_after, Some(Duration::from_secs(60)));
        let more = [
            &BASE[..],
            &["--ranges", "7", "--parallelism", "2", "--page-size", "9"],
        ];
        let c = parse(&more.concat()).unwrap();
        assert_eq!((c.ranges, c.parallelism, c.page_size), (7, 2, 9));
        assert_eq!(c.at, None);
        let at = parse(&[&BASE[..], &["--at", "2026-05-01T12:00:00Z"]].concat()).unwrap();
        assert_eq!(
            at.at.map(|t| t.timestamp_micros()),
            Some(1_777_636_800_000_000)
        );
        for (extra, needle) in [
            (&["--ranges", "0"][..], "1 to 65536"),
            (&["--parallelism", "x"][..], "1 to 65536"),
            (&["--at", "yesterday"][..], "not a time"),
            (&["--source-user", "u"][..], "--source-password"),
        ] {
            let err = parse(&[&BASE[..], extra].concat()).unwrap_err();
            assert_eq!(err.exit_code(), exit_code::USAGE, "{extra:?}: {err}");
            assert!(err.message().contains(needle), "{extra:?}: {err}");
        }
        let same = ["--source", "a", "--destination", "a", "-k", "ks", "-t", "t"];
        assert!(parse(&same).unwrap_err().message().contains("same tables"));
    }

    #[test]
    fn ttls_within_the_tolerance_are_equal() {
        let plan = ScanPlan {
            key_names: vec!["pk".into()],
            columns: vec![
                ScannedColumn {
                    name: "v".into(),
                    timed: true,
                },
                ScannedColumn {
                    name: "tags".into(),
                    timed: false,
                },
            ],
        };
        let row = |ttl: Option<i32>, writetime: i64, tags: i32| Row {
            columns: vec![
                Some(CqlValue::BigInt(42)),
                Some(CqlValue::Int(1)),
                Some(CqlValue::BigInt(writetime)),
                ttl.map(CqlValue::Int),
                Some(CqlValue::Int(7)),
                Some(CqlValue::Set(vec![CqlValue::Int(tags)])),
            ],
        };
        let base = row(Some(100), 10, 1);
        assert_eq!(plan.difference(&base, &row(Some(100), 10, 1), None), None);
        assert_eq!(plan.difference(&base, &row(Some(95), 10, 1), None), None);
        assert_eq!(plan.difference(&base, &row(Some(105), 10, 1), None), None);
        assert_eq!(
            plan.difference(&base, &row(Some(94), 10, 1), None)
                .as_deref(),
            Some("ttl(v): source 100, destination 94")
        );
        assert_eq!(
            plan.difference(&base, &row(None, 10, 1), None).as_deref(),
            Some("ttl(v): source 100, destination null")
        );
        assert_eq!(
            plan.difference(&base, &row(Some(100), 11, 1), None)
                .as_deref(),
            Some("writetime(v): source 10, destination 11")
        );
        assert_eq!(
            plan.difference(&base, &row(Some(100), 10, 2), None)
                .as_deref(),
            Some("tags: source {1}, destination {2}")
        );
        assert_eq!(plan.key_text(&base), "pk=1");

        // --at 10: a cell written after it on either side is not compared; a row whose
        // dated cells were all written after it is "newer", not missing or extra.
        let later = row(Some(100), 11, 1);
        assert_eq!(plan.difference(&base, &later, Some(10)), None);
        assert_eq!(
            plan.difference(&base, &later, Some(11)).as_deref(),
            Some("writetime(v): source 10, destination 11")
        );
        assert_eq!(
            plan.difference(&base, &row(Some(100), 11, 2), Some(10))
                .as_deref(),
            Some("tags: source {1}, destination {2}"),
            "a cell without a write time is always compared"
        );
        assert!(plan.all_written_after(&later, Some(10)));
        assert!(!plan.all_written_after(&later, Some(11)));
        assert!(!plan.all_written_after(&later, None));
    }

    #[test]
    fn ranges_cover_the_ring() {
        for n in [1, 2, 3, 256, 1000] {
            let r = token_ranges(n);
            assert_eq!(r.len(), n as usize);
            assert_eq!(r[0].0, i64::MIN);
            assert_eq!(r[r.len() - 1].1, i64::MAX);
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert!(w[0].0 < w[0].1);
            }
        }
    }

    #[test]
    fn report_keeps_the_first_samples_in_token_order() {
        let sample = |token, kind| DiffSample {
            token,
            key: format!("pk={token}"),
            kind,
            detail: None,
        };
        let mut a = Report::default();
        for t in (100..120).rev() {
            a.record(sample(t, DiffKind::Missing));
        }
        let mut b = Report::default();
        b.record(sample(5, DiffKind::Extra));
        b.compared += 3;
        a.merge(b);
        assert_eq!(a.compared, 24);
        assert_eq!((a.missing, a.extra, a.different), (20, 1, 0));
        assert_eq!(a.samples.len(), MAX_SAMPLES);
        assert_eq!(a.samples[0].token, 5);
        assert!(!a.is_equal());
        assert!(a.to_string().starts_with(
            "rows compared 24, missing 20, extra 1, different 0\n  extra on the destination: pk=5"
        ));
    }
}
