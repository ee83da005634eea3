//! Nodes, shards and the token ring of the embedded cluster.
//!
//! - [`partitioner`]: Murmur3 and CDC partitioners, the Scylla sharder.
//! - [`faults`]: fault-injection rules checked against every request.
//! - [`ring`]: each node's vnode tokens and the ring they form (ownership, vnode ranges).

pub(crate) mod faults;
pub(crate) mod partitioner;
pub(crate) mod ring;
