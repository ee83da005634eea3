//! What a running reader reports besides rows: [`ReaderEvent`]s, received through
//! [`CDCLogReaderBuilder::on_event`](crate::CDCLogReaderBuilder::on_event).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::base::cdc_types::{GenerationTimestamp, StreamID};

/// Something a reader reports to the program besides rows. More kinds will be added (the
/// enum is non-exhaustive): match the ones you handle and ignore the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReaderEvent {
    /// Changes were lost to the log's TTL: reading was asked to start before the oldest
    /// time still in the log.
    ExpiredGap(ExpiredGap),
    /// A member of a consumer group started reading a unit of work (it holds its lease).
    UnitStarted(UnitEvent),
    /// A member of a consumer group stopped reading a unit of work: it handed it over, left
    /// the group, finished it, or stopped it because its lease could not be renewed in time.
    /// The unit's reader has stopped when this is reported: nothing of the unit is delivered
    /// by this member after it.
    UnitStopped(UnitEvent),
}

/// A unit of work of a consumer group ([`crate::CDCLogReaderBuilder::group`]) that a member
/// started or stopped reading.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnitEvent {
    /// The keyspace of the base table.
    pub keyspace: String,
    /// The base table.
    pub table: String,
    /// The member.
    pub member: String,
    /// The unit's key in the lease table.
    pub unit: String,
    /// The unit's streams (a vnode's streams, or a tablet's stream).
    pub streams: Vec<StreamID>,
    /// Why the member stopped reading it (`None` when it started).
    pub reason: Option<UnitStopReason>,
}

/// Why a member of a consumer group stopped reading a unit ([`ReaderEvent::UnitStopped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnitStopReason {
    /// Handed over to a member that asked for it, after saving its checkpoint.
    HandedOver,
    /// The member left the group (`stop()`, or its handle was dropped).
    Left,
    /// Read to its generation's end (the unit is done).
    Finished,
    /// Read to the reader's end (end timestamp or `stop_at`).
    EndReached,
    /// Its lease could not be renewed in time, or another member holds it now: the member
    /// stopped reading it at once.
    LeaseLost,
    /// Its reader failed (the error ends the reader).
    Failed,
    /// Stopped at a window's end (checkpoints saved) because a unit read together with it
    /// was handed over; the member reads it again at once, regrouped with its other units.
    Regrouped,
}

/// Reading of one generation was asked to start (by the start timestamp, a saved checkpoint,
/// or the generation's own start while catching up) before the oldest time still in the log:
/// changes in `[requested, first_readable)` may have expired and were not read.
///
/// One event per generation whose start was moved, covering every stream group of it that
/// was moved (`streams`). Reading starts at `first_readable`, never later, so no row still in
/// the log is skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExpiredGap {
    /// The keyspace of the base table.
    pub keyspace: String,
    /// The base table.
    pub table: String,
    /// The generation (or tablet stream set) read.
    pub generation: GenerationTimestamp,
    /// The streams whose reading was moved forward.
    pub streams: Vec<StreamID>,
    /// The earliest start asked for among those streams.
    pub requested: DateTime<Utc>,
    /// Where reading of those streams starts: the oldest time still in the log
    /// (now − the table's CDC `ttl` − the safety interval), or the generation's end when
    /// all of the generation has expired (the next generation's event continues from there),
    /// or the reader's end timestamp when everything up to it has expired.
    pub first_readable: DateTime<Utc>,
    /// The table's CDC `ttl` the oldest time was computed from.
    pub ttl: Duration,
}

impl ExpiredGap {
    /// The width of the gap: `first_readable - requested`.
    pub fn width(&self) -> Duration {
        (self.first_readable - self.requested)
            .to_std()
            .unwrap_or_default()
    }
}

/// The program's event callback.
pub(crate) type EventListener = Arc<dyn Fn(&ReaderEvent) + Send + Sync>;
