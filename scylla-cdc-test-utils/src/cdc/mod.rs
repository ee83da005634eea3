//! Change Data Capture in the embedded cluster.
//!
//! - [`log_schema`]: the CDC log table of a base table (name, columns, types, properties) and
//!   how it follows the base's schema changes.
//! - [`streams`]: stream ids, generations' stream layouts (vnodes) and tablet stream sets.
//! - [`generations`]: every generation and stream set, stream choice and write admission.

pub(crate) mod generations;
pub(crate) mod log_schema;
pub(crate) mod streams;
