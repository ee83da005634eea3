//! Change Data Capture in the embedded cluster: a CDC-enabled table has a log table
//! ([`log_schema`]); every write to the table adds log rows ([`log`]) to the stream of the
//! written partition, chosen among the streams ([`streams`]) of the generation or tablet
//! stream set in force at the write's timestamp ([`generations`]).
//!
//! - [`log_schema`]: the CDC log table of a base table (name, columns, types, properties) and
//!   how it follows the base's schema changes.
//! - [`log`]: the log rows of a write (deltas, pre-images, post-images), written into the
//!   stream of the write's partition.
//! - [`streams`]: stream ids, generations' stream layouts (vnodes) and tablet stream sets.
//! - [`generations`]: every generation and stream set, stream choice and write admission.
//!
//! `replay_tests` (tests only) replays the worked examples of [`log`] through the `scylla`
//! driver against an embedded cluster.

pub(crate) mod generations;
pub(crate) mod log;
pub(crate) mod log_schema;
pub(crate) mod streams;

#[cfg(test)]
mod replay_tests;
