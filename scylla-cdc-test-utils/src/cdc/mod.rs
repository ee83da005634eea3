//! Change Data Capture in the embedded cluster.
//!
//! - [`streams`]: stream ids, generations' stream layouts (vnodes) and tablet stream sets.
//! - [`generations`]: every generation and stream set, stream choice and write admission.

pub(crate) mod generations;
pub(crate) mod streams;
