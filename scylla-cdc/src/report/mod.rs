//! What a running reader reports: its figures ([`progress`]: the public [`Progress`] and the
//! shared counters, positions and low watermark the stream readers update, the metrics they
//! record, and the rate limiter they share) and its events ([`events`]: [`ReaderEvent`] and
//! what it carries).
//!
//! [`Progress`]: progress::Progress
//! [`ReaderEvent`]: events::ReaderEvent

pub(crate) mod events;
pub(crate) mod progress;
