//! Change Data Capture in the embedded cluster.
//!
//! - [`streams`]: stream ids, generations' stream layouts (vnodes) and tablet stream sets.
//! - [`log`]: the log rows of a write (deltas, pre-images, post-images), written into the
//!   stream of the write's partition.

pub(crate) mod log;
pub(crate) mod streams;
