//! Change Data Capture in the embedded cluster.
//!
//! - [`streams`]: stream ids, generations' stream layouts (vnodes) and tablet stream sets.

pub(crate) mod streams;
