//! `/health` beside `/metrics` on `--metrics-addr`: whether the program's reader is connected
//! to the cluster and moving forward, for a load balancer, a service manager or an alert.
//!
//! `GET /health` answers `200 OK` when the reader runs, the driver holds an open connection to
//! at least one node of the cluster, and the reader has moved forward (finished a window or
//! delivered a page: [`crate::Progress::last_progress`]) within the *progress bound*
//! ([`stall_bound`]): 60 s plus the longest pause an idle stream group takes between two
//! windows, the sleep interval (with `--max-idle-latency`, that minus the safety interval if
//! longer); 70 s with the programs' defaults. Otherwise it answers
//! `503 Service Unavailable` with the reason. The body is one JSON object:
//!
//! ```json
//! {"status":"ok","connected":true,"low_watermark":"2026-01-02T03:04:05.123456Z",
//!  "lag_seconds":30.2,"seconds_since_progress":1.4,"progress_bound_seconds":70.0}
//! ```
//!
//! `status` is one of `ok`, `starting` (before the first contact with the cluster succeeds,
//! then until the reader starts: a replicator's `--snapshot` copy comes first), `disconnected`
//! (no open connection to any node: the driver is reconnecting), `stalled` (no progress for
//! longer than the bound: reads keep failing, or the consumer, the destination or the Kafka
//! broker, does not take the rows), `stopping` (a stop was requested) and `stopped` (the
//! reader ended; the program exits once it has finished its own work); every status but `ok`
//! comes with a `reason`. A member of a consumer group that reads no unit (the others hold
//! them all) is `ok`: it has nothing to read.
//!
//! The state is process-wide, like the `metrics` recorder: [`super::connect`] records the first
//! contact, a program hands its running readers over with [`reading`], and
//! [`super::supervise`] records the stop. Nothing is recorded unless `--metrics-addr` serves it
//! (`metrics_http::serve_metrics` enables it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use scylla::client::session::Session;

use super::{ReadersProgress, RunningReader, rfc3339_micros};

/// The least progress bound: a reader that has not moved for a minute is stalled, whatever
/// its settings.
pub const MIN_STALL_BOUND: Duration = Duration::from_secs(60);

/// The progress bound of a reader with these settings: [`MIN_STALL_BOUND`] plus the longest
/// pause of an idle stream group between two windows (`sleep_interval`, or with a
/// `max_idle_latency`, that minus `safety_interval` if longer, as the reader's adaptive
/// polling waits; at most a day).
pub fn stall_bound(
    sleep_interval: Duration,
    safety_interval: Duration,
    max_idle_latency: Option<Duration>,
) -> Duration {
    let idle = max_idle_latency
        .map_or(sleep_interval, |l| l.saturating_sub(safety_interval))
        .max(sleep_interval)
        .min(crate::MAX_SLEEP_INTERVAL.max(sleep_interval));
    MIN_STALL_BOUND.saturating_add(idle)
}

/// Where the program is.
enum Phase {
    /// Before the reader runs; `connected` once a first contact succeeded.
    Starting { connected: bool },
    /// The reader runs.
    Reading(Box<Reading>),
    /// A stop was requested; the readers finish their windows.
    Stopping,
    /// The readers ended.
    Stopped { reason: String },
}

/// What a running reader is judged by.
struct Reading {
    /// The reader's session (not kept alive by this).
    session: Weak<Session>,
    progress: ReadersProgress,
    bound: Duration,
    /// When the reader was handed over: the start of the bound before its first progress.
    since: DateTime<Utc>,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static PHASE: Mutex<Phase> = Mutex::new(Phase::Starting { connected: false });

fn set(phase: Phase) {
    if ENABLED.load(Ordering::Relaxed) {
        *PHASE.lock().unwrap_or_else(|e| e.into_inner()) = phase;
    }
}

/// Starts recording the process's health (called when `/health` is served).
pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// A first contact with the cluster succeeded (recorded only before the reader runs).
pub(crate) fn connected() {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let mut phase = PHASE.lock().unwrap_or_else(|e| e.into_inner());
    if let Phase::Starting { connected } = &mut *phase {
        *connected = true;
    }
}

/// The program's readers run, reading through `session`: from now on `/health` judges them,
/// with `bound` as the progress bound (see [`stall_bound`]).
pub fn reading(session: &Arc<Session>, readers: &[RunningReader], bound: Duration) {
    set(Phase::Reading(Box::new(Reading {
        session: Arc::downgrade(session),
        progress: ReadersProgress::of(readers),
        bound,
        since: Utc::now(),
    })));
}

/// A stop was requested.
pub(crate) fn stopping() {
    set(Phase::Stopping);
}

/// The readers ended, for `reason`.
pub(crate) fn stopped(reason: String) {
    set(Phase::Stopped { reason });
}

/// A `/health` answer: the HTTP status and the JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// 200 or 503.
    pub status: u16,
    /// The JSON object.
    pub body: serde_json::Value,
}

/// The process's health now.
pub fn report() -> Report {
    let phase = PHASE.lock().unwrap_or_else(|e| e.into_inner());
    judge(&phase, Utc::now())
}

fn judge(phase: &Phase, now: DateTime<Utc>) -> Report {
    let unavailable = |status: &str, connected: bool, reason: &str| Report {
        status: 503,
        body: serde_json::json!({
            "status": status,
            "connected": connected,
            "reason": reason,
        }),
    };
    let reading = match phase {
        Phase::Starting { connected: false } => {
            return unavailable(
                "starting",
                false,
                "not connected to the cluster yet (the first contact is being retried)",
            );
        }
        Phase::Starting { connected: true } => {
            return unavailable(
                "starting",
                true,
                "connected; the reader has not started yet",
            );
        }
        Phase::Stopping => {
            return unavailable(
                "stopping",
                true,
                "a stop was requested: the reader finishes its current windows",
            );
        }
        Phase::Stopped { reason } => return unavailable("stopped", false, reason),
        Phase::Reading(r) => r,
    };
    let (nodes, up) = match reading.session.upgrade() {
        Some(session) => {
            let state = session.get_cluster_state();
            let nodes = state.get_nodes_info();
            (
                nodes.len(),
                nodes.iter().filter(|n| n.is_connected()).count(),
            )
        }
        None => (0, 0),
    };
    let progress: Vec<crate::Progress> = reading.progress.0.iter().map(|p| p.progress()).collect();
    verdict(
        Observed {
            nodes,
            up,
            progress: &progress,
            low_watermark: reading.progress.low_watermark(),
            since: reading.since,
            bound: reading.bound,
        },
        now,
    )
}

/// What a running reader is judged on.
struct Observed<'a> {
    /// Nodes the driver knows, and those it holds a connection to.
    nodes: usize,
    up: usize,
    /// Each reader's progress.
    progress: &'a [crate::Progress],
    low_watermark: Option<DateTime<Utc>>,
    /// When the readers were handed over.
    since: DateTime<Utc>,
    bound: Duration,
}

/// The health of running readers.
fn verdict(o: Observed<'_>, now: DateTime<Utc>) -> Report {
    let connected = o.up > 0;
    let last = o.progress.iter().filter_map(|p| p.last_progress).max();
    let since_progress = (now - last.unwrap_or(o.since))
        .to_std()
        .unwrap_or(Duration::ZERO);
    // A member of a consumer group that holds no unit has nothing to read.
    let idle_member = !o.progress.is_empty()
        && o.progress
            .iter()
            .all(|p| p.group.as_ref().is_some_and(|g| g.owned.is_empty()));
    let (status, reason) = if !connected {
        (
            "disconnected",
            Some(format!(
                "no open connection to any of the {} nodes of the cluster (the driver is \
                 reconnecting)",
                o.nodes
            )),
        )
    } else if since_progress > o.bound && !idle_member {
        (
            "stalled",
            Some(format!(
                "no progress for {:.0} s (bound {:.0} s): reads keep failing or the consumer \
                 does not take the rows",
                since_progress.as_secs_f64(),
                o.bound.as_secs_f64()
            )),
        )
    } else {
        ("ok", None)
    };
    let mut body = serde_json::json!({
        "status": status,
        "connected": connected,
        "nodes": o.nodes,
        "nodes_connected": o.up,
        "low_watermark": o.low_watermark.map(rfc3339_micros),
        "lag_seconds": o.low_watermark
            .map(|w| (now - w).num_milliseconds().max(0) as f64 / 1000.0),
        "seconds_since_progress": (since_progress.as_millis() as f64) / 1000.0,
        "progress_bound_seconds": o.bound.as_secs_f64(),
    });
    if idle_member {
        body["group_units_owned"] = 0.into();
    }
    if let Some(reason) = reason {
        body["reason"] = reason.into();
    }
    Report {
        status: if status == "ok" { 200 } else { 503 },
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_a_minute_plus_the_longest_idle_pause() {
        let s = Duration::from_secs;
        assert_eq!(stall_bound(s(10), s(30), None), s(70));
        // Adaptive polling: an idle group waits up to max idle latency - safety interval.
        assert_eq!(stall_bound(s(10), s(30), Some(s(150))), s(180));
        // A max idle latency under safety + sleep means no back-off.
        assert_eq!(stall_bound(s(10), s(30), Some(s(20))), s(70));
        assert_eq!(stall_bound(s(0), s(0), None), s(60));
        // Never more than a day of pause.
        assert_eq!(
            stall_bound(s(10), s(30), Some(s(10 * 86_400))),
            s(60 + 86_400)
        );
    }

    #[test]
    fn before_the_reader_runs_and_after_it_is_unavailable() {
        let now = Utc::now();
        let r = judge(&Phase::Starting { connected: false }, now);
        assert_eq!(r.status, 503);
        assert_eq!(r.body["status"], "starting");
        assert_eq!(r.body["connected"], false);
        assert!(r.body["reason"].as_str().unwrap().contains("not connected"));
        let r = judge(&Phase::Starting { connected: true }, now);
        assert_eq!((r.status, &r.body["connected"]), (503, &true.into()));
        let r = judge(&Phase::Stopping, now);
        assert_eq!((r.status, &r.body["status"]), (503, &"stopping".into()));
        let r = judge(
            &Phase::Stopped {
                reason: "error: ks.t: \"quoted\"".into(),
            },
            now,
        );
        assert_eq!(r.status, 503);
        assert_eq!(r.body["reason"], "error: ks.t: \"quoted\"");
        // The body is JSON a client parses back.
        let text = r.body.to_string();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap(),
            r.body
        );
    }

    /// A reader's progress, last moving at `last`, in a group holding `owned` units.
    fn progress(last: Option<DateTime<Utc>>, owned: Option<usize>) -> crate::Progress {
        let stats = crate::report::progress::Stats::new(
            "ks",
            "t",
            Arc::new(crate::base::time::SystemClock),
            Duration::from_secs(30),
        );
        let mut p = stats.snapshot();
        p.last_progress = last;
        p.group = owned.map(|n| crate::GroupProgress {
            owned: (0..n).map(|i| format!("unit-{i}")).collect(),
            ..Default::default()
        });
        p
    }

    fn observed<'a>(
        up: usize,
        progress: &'a [crate::Progress],
        since: DateTime<Utc>,
    ) -> Observed<'a> {
        Observed {
            nodes: 3,
            up,
            progress,
            low_watermark: Some(since),
            since,
            bound: Duration::from_secs(70),
        }
    }

    #[test]
    fn a_reader_is_ok_while_it_moves_and_stalled_once_it_stops() {
        let started = Utc::now();
        let s = chrono::TimeDelta::seconds;
        // Just handed over, nothing read yet: the bound runs from the hand-over.
        let none = [progress(None, None)];
        let r = verdict(observed(3, &none, started), started + s(69));
        assert_eq!((r.status, &r.body["status"]), (200, &"ok".into()));
        assert_eq!(r.body["nodes_connected"], 3);
        let r = verdict(observed(3, &none, started), started + s(71));
        assert_eq!((r.status, &r.body["status"]), (503, &"stalled".into()));
        assert!(
            r.body["reason"]
                .as_str()
                .unwrap()
                .contains("no progress for 71 s"),
            "{}",
            r.body
        );
        // The latest of the readers' progress counts.
        let moving = [
            progress(Some(started + s(10)), None),
            progress(Some(started + s(100)), None),
        ];
        let r = verdict(observed(1, &moving, started), started + s(120));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["seconds_since_progress"], 20.0);
        assert_eq!(r.body["lag_seconds"], 120.0);
        // No connection: disconnected, whatever the progress.
        let r = verdict(observed(0, &moving, started), started + s(101));
        assert_eq!((r.status, &r.body["status"]), (503, &"disconnected".into()));
        assert!(r.body["reason"].as_str().unwrap().contains("3 nodes"));
        // A group member without units has nothing to read: not stalled.
        let idle = [progress(None, Some(0))];
        let r = verdict(observed(3, &idle, started), started + s(600));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["group_units_owned"], 0);
        let owning = [progress(None, Some(2))];
        let r = verdict(observed(3, &owning, started), started + s(600));
        assert_eq!(r.status, 503, "{}", r.body);
    }

    #[test]
    fn a_reader_without_its_session_is_disconnected() {
        let reading = Reading {
            session: Weak::new(),
            progress: ReadersProgress(Vec::new()),
            bound: Duration::from_secs(70),
            since: Utc::now(),
        };
        let r = judge(&Phase::Reading(Box::new(reading)), Utc::now());
        assert_eq!(r.status, 503);
        assert_eq!(r.body["status"], "disconnected");
        assert_eq!(r.body["connected"], false);
        assert_eq!(r.body["progress_bound_seconds"], 70.0);
    }
}
