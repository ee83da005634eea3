//! Benchmark programs for the workspace, the subcommands of one binary, `scylla-cdc-bench`
//! (`src/bin/scylla-cdc-bench/`, a module each: `scylla-cdc-bench compare --nodes 3`), and
//! what they share: starting a `scylla-emulator` process, reading CPU time (of processes and of
//! their children) and peak memory of processes. (They were ten binaries, `compare-bench` to
//! `soak-bench`, each a link of the whole workspace.)
//!
//! - `emulator`: driver → embedded cluster throughput (prepared writes, prepared reads,
//!   full scans).
//! - `compare`: this workspace's log reader and scylla-cdc-rust 0.7.0 (crates.io) reading
//!   the same backlog of one in-process embedded cluster, each in its own child process,
//!   alternating (rows/s, CPU per row, peak RSS, the cluster's CPU per row, correctness).
//! - `reader`: the `scylla-cdc` log reader catching up a preloaded backlog (rows/s, CPU
//!   per row, peak memory for growing backlogs).
//! - `replicator`: replication of a preloaded CDC backlog between two emulator
//!   processes (changes/s, replicator CPU per change, peak RSS).
//! - `idle`: what the reader costs the cluster while idle, beside scylla-cdc-rust 0.7
//!   (requests/s idle, requests and rows of a catch-up, write-to-delivery delay).
//! - `latency`: write-to-delivery delay (idle, under steady write rates), late rows
//!   delivered, idle requests/s and catch-up CPU per row of this reader with and without
//!   early reads and of scylla-cdc-rust 0.7 (defaults, and a 100 ms safety interval), four
//!   readers of one table at once; and the poll interval's trade-off of early reads.
//! - `soak`: the printer and replicator binaries launched under a steady write load that
//!   starts at their launch (rows differing, changes missed, memory over the run).
//! - `group`: 1, 2, 3 members of a consumer group (each a child process) sharing the
//!   catch-up of one preloaded backlog (rows/s, speedup, client CPU per row, per-member rows,
//!   exact count and checksum of the union), and the lease table's requests per second while
//!   catching up and while idle.
//! - `kafka`: `scylla-cdc-kafka` (a child process) publishing to a real Kafka 4.4 broker
//!   (`conformance/kafka/start-kafka`): changes/s catching up a preloaded backlog with and
//!   without transactions (peak RSS, CPU, the records read back), and the delay from a write
//!   to its visibility to a `read_committed` consumer with and without early reads.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;

pub mod latency;
pub mod live;
pub mod tally;

/// A `scylla-emulator` child process, killed when dropped.
pub struct Emulator {
    child: Child,
    /// The contact point it printed on its `ready` line.
    pub contact_point: SocketAddr,
}

impl Emulator {
    /// Starts `binary` with `args` and waits for its `ready <addr>` line.
    pub fn start(binary: &Path, args: &[String]) -> anyhow::Result<Emulator> {
        let mut child = Command::new(binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .context("reading the emulator's ready line")?;
        let Some(addr) = line.trim().strip_prefix("ready ") else {
            let _ = child.kill();
            bail!("the emulator did not print `ready <addr>` but {line:?}");
        };
        let contact_point = addr.parse().context("parsing the ready address")?;
        Ok(Emulator {
            child,
            contact_point,
        })
    }

    /// A driver session connected to it.
    pub async fn session(&self) -> anyhow::Result<Arc<Session>> {
        let session = SessionBuilder::new()
            .known_node(self.contact_point.to_string())
            .build()
            .await
            .with_context(|| format!("connecting to the emulator at {}", self.contact_point))?;
        Ok(Arc::new(session))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `scylla-emulator` next to the running benchmark binary (both are built into the same
/// target directory), unless `explicit` is given.
pub fn emulator_binary(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p);
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .context("the benchmark binary has no directory")?;
    let candidate = dir.join("scylla-emulator");
    if candidate.exists() {
        Ok(candidate)
    } else {
        bail!(
            "{} not found: build it with `cargo build --release -p scylla-emulator` or pass --emulator",
            candidate.display()
        )
    }
}

/// A loopback address for node 1 that other processes are unlikely to use.
pub fn random_loopback() -> String {
    let pid = std::process::id();
    format!("127.{}.{}.1", 100 + pid % 100, (pid / 100) % 250)
}

/// CPU time (user + system) a process has used so far, from `/proc/<pid>/stat`.
pub fn process_cpu_time(pid: u32) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').context("malformed stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat, i.e. indexes 11 and 12 after the name.
    let ticks: u64 = fields.get(11).context("no utime")?.parse::<u64>()?
        + fields.get(12).context("no stime")?.parse::<u64>()?;
    let hz = clock_ticks_per_second();
    Ok(Duration::from_secs_f64(ticks as f64 / hz as f64))
}

/// Peak resident set size of a process (`VmHWM`), in bytes.
pub fn process_peak_rss(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .context("no VmHWM")?;
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .context("malformed VmHWM")?
        .parse()?;
    Ok(kb * 1024)
}

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if !n.is_multiple_of(2) {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// CPU time and peak RSS of this process, from `getrusage`.
pub fn own_usage() -> (Duration, u64) {
    let usage = own_rusage();
    (usage.user + usage.system, usage.peak_rss)
}

/// This process's resource usage so far ([`own_rusage`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// CPU time in user space.
    pub user: Duration,
    /// CPU time in the kernel on the process's behalf (system calls, page faults).
    pub system: Duration,
    /// Peak resident set size, in bytes.
    pub peak_rss: u64,
}

/// This process's user and system CPU time and peak RSS, from `getrusage` (zero if it fails).
// The one unsafe call of the workspace: libc's `getrusage` has no safe wrapper in our deps.
#[allow(unsafe_code)]
pub fn own_rusage() -> Usage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full `rusage` into the pointer on success.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return Usage::default();
        }
        usage.assume_init()
    };
    usage_of(&usage)
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000)
}

fn usage_of(usage: &libc::rusage) -> Usage {
    Usage {
        user: timeval(usage.ru_utime),
        system: timeval(usage.ru_stime),
        peak_rss: usage.ru_maxrss as u64 * 1024,
    }
}

/// Reaps the child process `pid` if it has ended (`wait4` with `WNOHANG`): its exit status
/// and the CPU time (user + system) of all its threads; `Ok(None)` while it runs. A
/// `std::process::Child` reaped this way must not be waited for or killed afterwards.
///
/// Not its peak RSS: Linux carries a process's peak RSS across `execve`, and a child that
/// `std::process::Command` spawns (`posix_spawn`, a `vfork`) shares this process's memory
/// until its `execve`, so `wait4`'s `ru_maxrss` is at least this process's own peak at the
/// spawn. Sample the child's `VmHWM` ([`process_peak_rss`]) while it runs instead.
#[allow(unsafe_code)]
pub fn try_wait_with_cpu(
    pid: u32,
) -> std::io::Result<Option<(std::process::ExitStatus, Duration)>> {
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: wait4 writes the status and a full `rusage` into the pointers when it returns
    // the pid; with WNOHANG it returns 0 (nothing written) while the child runs.
    let reaped = unsafe {
        libc::wait4(
            pid as libc::pid_t,
            &mut status,
            libc::WNOHANG,
            usage.as_mut_ptr(),
        )
    };
    if reaped < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if reaped == 0 {
        return Ok(None);
    }
    // SAFETY: wait4 returned the pid, so it filled `usage`.
    let usage = usage_of(&unsafe { usage.assume_init() });
    Ok(Some((
        std::process::ExitStatus::from_raw(status),
        usage.user + usage.system,
    )))
}

/// Sends SIGTERM to a process.
#[allow(unsafe_code)]
pub fn terminate(pid: u32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGTERM);
    }
}

/// CPU time (user + system) of this process's children that have ended and been waited
/// for, from `getrusage(RUSAGE_CHILDREN)`. The difference around one child's run is that
/// child's CPU time when no other child ends meanwhile.
#[allow(unsafe_code)]
pub fn children_cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a full `rusage` into the pointer on success.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) != 0 {
            return Duration::ZERO;
        }
        usage.assume_init()
    };
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

#[allow(unsafe_code)]
fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as u64 } else { 100 }
}

/// Formats a byte count as MiB.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// splitmix64's finaliser: a preloaded row number's contribution to a backlog checksum (a
/// plain sum would not see two rows swapping values; this one makes cancelling mistakes
/// unlikely).
pub fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Row count and checksum (wrapping sum of [`mix`] of every `v`) of a preload of `total`
/// rows (`v` = row numbers `0..total`, see `scylla_emulator::Preload`).
pub fn backlog_checksum(total: u64) -> (u64, u64) {
    (
        total,
        (0..total).fold(0u64, |sum, n| sum.wrapping_add(mix(n))),
    )
}

/// The end of a preloaded backlog (exclusive), milliseconds since the epoch: just after a
/// write made after the preload (the cluster's write timestamps strictly increase and may
/// run ahead of the wall clock during a fast preload). The write goes to
/// `keyspace.backlog_clock`, a table without CDC created for it.
pub async fn end_of_backlog(
    cluster: &scylla_emulator::EmbeddedCluster,
    keyspace: &str,
) -> anyhow::Result<u64> {
    let session = SessionBuilder::new()
        .known_node(cluster.contact_point().to_string())
        .build()
        .await
        .context("connecting to the embedded cluster")?;
    end_of_backlog_in(&session, keyspace).await
}

/// [`end_of_backlog`] of the cluster of `session` (an emulator in another process, say).
pub async fn end_of_backlog_in(session: &Session, keyspace: &str) -> anyhow::Result<u64> {
    session
        .query_unpaged(
            format!(
                "CREATE TABLE IF NOT EXISTS {keyspace}.backlog_clock (k int PRIMARY KEY, v int)"
            ),
            (),
        )
        .await?;
    session
        .query_unpaged(
            format!("INSERT INTO {keyspace}.backlog_clock (k, v) VALUES (0, 0)"),
            (),
        )
        .await?;
    let (micros,) = session
        .query_unpaged(
            format!("SELECT writetime(v) FROM {keyspace}.backlog_clock WHERE k = 0"),
            (),
        )
        .await?
        .into_rows_result()?
        .single_row::<(i64,)>()?;
    let micros = u64::try_from(micros).context("a write timestamp before 1970")?;
    Ok(micros.div_ceil(1000))
}

/// An in-process embedded cluster holding a preloaded CDC backlog of `keyspace.table`, ready
/// to be read from `start_ms` to `end_ms` (exclusive, milliseconds since the epoch).
pub struct Backlog {
    /// The cluster.
    pub cluster: scylla_emulator::EmbeddedCluster,
    /// Just before the cluster (and its first generation) existed.
    pub start_ms: u64,
    /// Just after the last preloaded write (see [`end_of_backlog`]).
    pub end_ms: u64,
}

/// The shape of a [`Backlog`]'s cluster and of its preload; the same options in every
/// program that preloads one (`#[command(flatten)]`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct BacklogShape {
    /// Nodes of the embedded cluster.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Shards per node.
    #[arg(long, default_value_t = 2)]
    pub shards: u32,
    /// Vnodes per node (one stream group per vnode before grouping by replica).
    #[arg(long, default_value_t = 16)]
    pub vnodes: usize,
    /// Partitions of the preloaded table.
    #[arg(long, default_value_t = 1000)]
    pub partitions: u64,
    /// Rows per partition (one log row each).
    #[arg(long, default_value_t = 2000)]
    pub rows: u64,
}

impl BacklogShape {
    /// The rows of the backlog; an error for an empty cluster or backlog, or one too large
    /// to count.
    pub fn total_rows(&self) -> anyhow::Result<u64> {
        anyhow::ensure!(
            self.nodes > 0 && self.partitions > 0 && self.rows > 0,
            "--nodes, --partitions and --rows must be at least 1"
        );
        self.partitions
            .checked_mul(self.rows)
            .context("--partitions × --rows is too large")
    }

    /// `P partitions × R rows, N node(s) × S shards, V vnodes each`, for the programs'
    /// first line.
    pub fn describe(&self) -> String {
        format!(
            "{} partitions × {} rows, {} node(s) × {} shards, {} vnodes each",
            self.partitions, self.rows, self.nodes, self.shards, self.vnodes
        )
    }
}

impl Backlog {
    /// Starts the cluster with the preload, prints how long the preload took, and returns
    /// once the end of the backlog is `safety_interval_ms` in the past, so that a reader
    /// that stays that far behind now never waits for the clock while reading it.
    pub async fn start(
        keyspace: &str,
        table: &str,
        shape: BacklogShape,
        safety_interval_ms: u64,
    ) -> anyhow::Result<Backlog> {
        let start_ms = now_ms().saturating_sub(1);
        let loading = std::time::Instant::now();
        let cluster = scylla_emulator::EmbeddedCluster::builder()
            .nodes(shape.nodes)
            .shards_per_node(shape.shards)
            .vnodes_per_node(shape.vnodes)
            .preload(scylla_emulator::Preload::new(
                keyspace,
                table,
                shape.partitions,
                shape.rows,
            ))
            .start()
            .await
            .context("starting the embedded cluster")?;
        println!(
            "preloaded {} rows in {:.1} s; cluster at {}",
            shape.partitions * shape.rows,
            loading.elapsed().as_secs_f64(),
            cluster.contact_point()
        );
        let end_ms = end_of_backlog(&cluster, keyspace).await?;
        let ready_at = end_ms + safety_interval_ms + 1;
        let now = now_ms();
        if ready_at > now {
            tokio::time::sleep(Duration::from_millis(ready_at - now)).await;
        }
        Ok(Backlog {
            cluster,
            start_ms,
            end_ms,
        })
    }
}

/// Milliseconds since the epoch, by this machine's clock.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_shape_counts_its_rows_and_refuses_empty_ones() {
        let shape = BacklogShape {
            nodes: 3,
            shards: 2,
            vnodes: 16,
            partitions: 1000,
            rows: 2000,
        };
        assert_eq!(shape.total_rows().unwrap(), 2_000_000);
        assert_eq!(
            shape.describe(),
            "1000 partitions × 2000 rows, 3 node(s) × 2 shards, 16 vnodes each"
        );
        for empty in [
            BacklogShape { nodes: 0, ..shape },
            BacklogShape {
                partitions: 0,
                ..shape
            },
            BacklogShape { rows: 0, ..shape },
        ] {
            assert!(empty.total_rows().is_err(), "{empty:?}");
        }
        let huge = BacklogShape {
            rows: u64::MAX,
            ..shape
        };
        assert!(huge.total_rows().is_err());
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
