//! Preloaded CDC tables for benchmarks: [`Preload`] describes one table the cluster fills
//! before [`crate::ClusterBuilder::start`] returns.
//!
//! A preloaded table is `<keyspace>.<table> (pk bigint, ck bigint, v blob, PRIMARY KEY (pk,
//! ck)) WITH cdc = {'enabled': true, ...}` in a keyspace created when missing
//! (`NetworkTopologyStrategy`, replication factor 1, vnodes). It receives `partitions ×
//! rows_per_partition` single-row INSERTs — partition keys `0..partitions`, clustering keys
//! `0..rows_per_partition`, `v` = the row number `pk × rows_per_partition + ck` as 8
//! big-endian bytes — each with its own timestamp from the strictly increasing server clock,
//! through the executor's INSERT plan and the same write path as CQL inserts: the base rows
//! and the CDC log rows are exactly those the same INSERTs sent by a driver would produce.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Most rows one preload may write (keeps `pk × rows + ck` well inside `i64`).
pub const MAX_PRELOAD_ROWS: u64 = 1 << 40;

/// A table to fill before the cluster starts serving.
///
/// The table is `<keyspace>.<table> (pk bigint, ck bigint, v blob, PRIMARY KEY (pk, ck))
/// WITH cdc = {'enabled': true, ...}`, in a keyspace created when missing
/// (`NetworkTopologyStrategy`, replication factor 1, vnodes). It receives `partitions ×
/// rows_per_partition` single-row INSERTs — partition keys `0..partitions`, clustering keys
/// `0..rows_per_partition`, `v` = the row number `pk × rows_per_partition + ck` as 8
/// big-endian bytes — each with its own timestamp from the strictly increasing server clock,
/// through the executor's INSERT plan and the write path of CQL inserts: the base and CDC
/// log rows are exactly those the same INSERTs sent by a driver would produce. A few threads
/// write different partitions at once; within a partition, rows are written in clustering
/// order.
///
/// ```
/// use scylla_emulator::Preload;
///
/// let p: Preload = "bench.t:partitions=1000,rows=100,postimage".parse().unwrap();
/// assert_eq!((p.keyspace(), p.table(), p.rows()), ("bench", "t", 100_000));
/// assert!(p.postimage_enabled() && !p.preimage_enabled());
/// ```
#[derive(Clone)]
pub struct Preload {
    keyspace: String,
    table: String,
    partitions: u64,
    rows_per_partition: u64,
    preimage: bool,
    postimage: bool,
    progress: Option<ProgressHook>,
}

/// A progress listener of a [`Preload`].
type ProgressHook = Arc<dyn Fn(&PreloadProgress) + Send + Sync>;

impl fmt::Debug for Preload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Preload")
            .field("keyspace", &self.keyspace)
            .field("table", &self.table)
            .field("partitions", &self.partitions)
            .field("rows_per_partition", &self.rows_per_partition)
            .field("preimage", &self.preimage)
            .field("postimage", &self.postimage)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// How far a preload has come, handed to [`Preload::on_progress`] about once a second and
/// once at the end.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PreloadProgress {
    /// `keyspace.table`.
    pub table: String,
    /// Rows written so far.
    pub rows_done: u64,
    /// Rows to write in all.
    pub rows_total: u64,
    /// Time since the preload started.
    pub elapsed: Duration,
}

/// A `--preload` specification that does not parse, or a preload that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid preload `{spec}`: {reason}")]
pub struct PreloadSpecError {
    /// The specification as given.
    pub spec: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Whether `name` is a CQL identifier usable unquoted (then case-insensitive).
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 48
}

impl Preload {
    /// `partitions × rows_per_partition` rows into `keyspace.table`, without images.
    /// Names are CQL identifiers, lower-cased like unquoted CQL names.
    pub fn new(
        keyspace: impl Into<String>,
        table: impl Into<String>,
        partitions: u64,
        rows_per_partition: u64,
    ) -> Preload {
        Preload {
            keyspace: keyspace.into().to_ascii_lowercase(),
            table: table.into().to_ascii_lowercase(),
            partitions,
            rows_per_partition,
            preimage: false,
            postimage: false,
            progress: None,
        }
    }

    /// Enables the `preimage` CDC option of the table (default off). The table starts empty,
    /// so the inserts log no pre-images; the option is there for readers' sake.
    pub fn preimage(mut self, enabled: bool) -> Self {
        self.preimage = enabled;
        self
    }

    /// Enables the `postimage` CDC option of the table (default off): every insert then
    /// logs a post-image row after its delta row.
    pub fn postimage(mut self, enabled: bool) -> Self {
        self.postimage = enabled;
        self
    }

    /// Calls `f` about once a second while the table fills, and once when it is full.
    pub fn on_progress(mut self, f: impl Fn(&PreloadProgress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The table (without keyspace).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Number of partitions.
    pub fn partitions(&self) -> u64 {
        self.partitions
    }

    /// Rows per partition.
    pub fn rows_per_partition(&self) -> u64 {
        self.rows_per_partition
    }

    /// Rows in all (`partitions × rows_per_partition`, saturating).
    pub fn rows(&self) -> u64 {
        self.partitions.saturating_mul(self.rows_per_partition)
    }

    /// Whether the table's `preimage` option is on.
    pub fn preimage_enabled(&self) -> bool {
        self.preimage
    }

    /// Whether the table's `postimage` option is on.
    pub fn postimage_enabled(&self) -> bool {
        self.postimage
    }

    /// Reports progress, if anyone listens.
    pub(crate) fn report(&self, progress: PreloadProgress) {
        if let Some(f) = &self.progress {
            f(&progress);
        }
    }

    /// Checks the names and sizes.
    pub fn validate(&self) -> Result<(), PreloadSpecError> {
        let err = |reason: String| PreloadSpecError {
            spec: format!("{}.{}", self.keyspace, self.table),
            reason,
        };
        if !valid_name(&self.keyspace) {
            return Err(err(format!(
                "`{}` is not a keyspace name (a letter, then letters, digits or _; at most 48)",
                self.keyspace
            )));
        }
        if self.keyspace.starts_with("system") {
            return Err(err("cannot preload a table of a system keyspace".into()));
        }
        if !valid_name(&self.table) {
            return Err(err(format!(
                "`{}` is not a table name (a letter, then letters, digits or _; at most 48)",
                self.table
            )));
        }
        if self.table.ends_with("_scylla_cdc_log") {
            return Err(err("the table name cannot end with _scylla_cdc_log".into()));
        }
        if self.partitions == 0 || self.rows_per_partition == 0 {
            return Err(err("partitions and rows must be at least 1".into()));
        }
        match self.partitions.checked_mul(self.rows_per_partition) {
            Some(n) if n <= MAX_PRELOAD_ROWS => Ok(()),
            _ => Err(err(format!(
                "{} × {} rows is more than {MAX_PRELOAD_ROWS}",
                self.partitions, self.rows_per_partition
            ))),
        }
    }
}

impl FromStr for Preload {
    type Err = PreloadSpecError;

    /// Parses `<keyspace>.<table>:partitions=<P>,rows=<R>[,preimage][,postimage]` (the
    /// `--preload` flag of `scylla-emulator`).
    fn from_str(spec: &str) -> Result<Preload, PreloadSpecError> {
        let err = |reason: String| PreloadSpecError {
            spec: spec.to_string(),
            reason,
        };
        let (name, options) = spec.split_once(':').ok_or_else(|| {
            err("expected <keyspace>.<table>:partitions=<P>,rows=<R>[,preimage][,postimage]".into())
        })?;
        let (keyspace, table) = name
            .split_once('.')
            .ok_or_else(|| err(format!("`{name}` is not <keyspace>.<table>")))?;
        let (mut partitions, mut rows, mut preimage, mut postimage) = (None, None, false, false);
        for option in options.split(',').map(str::trim) {
            let (key, value) = match option.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (option, None),
            };
            let count = |slot: &mut Option<u64>| -> Result<(), PreloadSpecError> {
                let v = value.ok_or_else(|| err(format!("`{key}` needs a number")))?;
                let n: u64 = v
                    .replace('_', "")
                    .parse()
                    .map_err(|_| err(format!("`{key}={v}` is not a whole number")))?;
                if slot.replace(n).is_some() {
                    return Err(err(format!("`{key}` is given twice")));
                }
                Ok(())
            };
            match (key, value) {
                ("partitions", _) => count(&mut partitions)?,
                ("rows", _) => count(&mut rows)?,
                ("preimage", None) => preimage = true,
                ("postimage", None) => postimage = true,
                ("preimage" | "postimage", Some(_)) => {
                    return Err(err(format!("`{key}` takes no value")));
                }
                ("", None) => return Err(err("empty option".into())),
                _ => return Err(err(format!("unknown option `{option}`"))),
            }
        }
        let partitions = partitions.ok_or_else(|| err("missing partitions=<P>".into()))?;
        let rows = rows.ok_or_else(|| err("missing rows=<R>".into()))?;
        let preload = Preload::new(keyspace, table, partitions, rows)
            .preimage(preimage)
            .postimage(postimage);
        preload.validate().map_err(|e| err(e.reason))?;
        Ok(preload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_flag() {
        let p: Preload = "Bench.T1:partitions=1_000,rows=10,preimage,postimage"
            .parse()
            .expect("valid");
        assert_eq!((p.keyspace(), p.table()), ("bench", "t1"));
        assert_eq!(
            (p.partitions(), p.rows_per_partition(), p.rows()),
            (1000, 10, 10_000)
        );
        assert!(p.preimage_enabled() && p.postimage_enabled());
        let p: Preload = "ks.t:rows=3, partitions=2".parse().expect("any order");
        assert_eq!(p.rows(), 6);
        assert!(!p.preimage_enabled() && !p.postimage_enabled());
    }

    #[test]
    fn rejects_bad_specs_with_a_reason() {
        for (spec, reason) in [
            ("ks.t", "expected <keyspace>.<table>"),
            ("kst:partitions=1,rows=1", "is not <keyspace>.<table>"),
            ("ks.t:partitions=1", "missing rows"),
            ("ks.t:rows=1", "missing partitions"),
            ("ks.t:partitions=x,rows=1", "not a whole number"),
            ("ks.t:partitions=-1,rows=1", "not a whole number"),
            ("ks.t:partitions=1,rows=1,rows=2", "given twice"),
            ("ks.t:partitions=1,rows=1,preimage=true", "takes no value"),
            ("ks.t:partitions=1,rows=1,bogus", "unknown option"),
            ("ks.t:partitions=1,rows=1,", "empty option"),
            ("ks.t:partitions=0,rows=1", "at least 1"),
            ("ks.t:partitions=4294967296,rows=4294967296", "more than"),
            ("1ks.t:partitions=1,rows=1", "not a keyspace name"),
            ("ks.t-x:partitions=1,rows=1", "not a table name"),
            ("system.t:partitions=1,rows=1", "system keyspace"),
            ("ks.t_scylla_cdc_log:partitions=1,rows=1", "_scylla_cdc_log"),
        ] {
            let e = spec.parse::<Preload>().expect_err(spec);
            assert_eq!(e.spec, spec);
            assert!(e.reason.contains(reason), "{spec}: {}", e.reason);
            assert!(
                e.to_string()
                    .starts_with(&format!("invalid preload `{spec}`: "))
            );
        }
    }

    #[test]
    fn progress_hook_is_called() {
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let s = seen.clone();
        let p = Preload::new("ks", "t", 1, 1).on_progress(move |p| s.lock().push(p.rows_done));
        p.report(PreloadProgress {
            table: "ks.t".into(),
            rows_done: 7,
            rows_total: 7,
            elapsed: Duration::ZERO,
        });
        assert_eq!(*seen.lock(), [7]);
        assert!(format!("{p:?}").contains("progress: true"));
    }
}
