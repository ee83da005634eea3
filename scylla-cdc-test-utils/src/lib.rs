//! An embedded, in-process ScyllaDB-compatible cluster for tests, demos and benchmarks.
//!
//! The cluster speaks the CQL native protocol v4 on loopback addresses (node *i* on its own
//! `127.x.y.i`), so the official `scylla` driver, or any other CQL driver, uses it exactly as
//! it would use a real ScyllaDB cluster: token- and shard-aware routing, prepared statements,
//! paging, schema metadata, events, and the CDC log with its stream generations.
// Modules are being integrated one by one; until every one is wired into the server some
// of their items are not used yet.
#![allow(dead_code)]

pub mod types;

pub(crate) mod cdc;
pub(crate) mod cluster;
pub(crate) mod cql;
pub(crate) mod exec;
pub(crate) mod frame;
pub(crate) mod schema;
pub(crate) mod server;
pub(crate) mod storage;

pub use cluster::faults::{FaultError, FaultOpcode, FaultReaction, FaultRule};
