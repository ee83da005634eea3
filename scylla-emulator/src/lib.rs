//! An embedded, in-process ScyllaDB-compatible cluster for tests, demos and benchmarks.
//!
//! The cluster speaks the CQL native protocol v4 on loopback addresses (node *i* on its own
//! `127.x.y.i`, every node on the same port plus a shard-aware port), so the official
//! `scylla` driver, or any other CQL driver, uses it exactly as it would use a real ScyllaDB
//! cluster: token- and shard-aware routing, prepared statements, paging, schema metadata,
//! events, and the CDC log with its stream generations.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use scylla_emulator::EmbeddedCluster;
//!
//! let cluster = EmbeddedCluster::builder().nodes(3).shards_per_node(2).start().await?;
//! println!("contact point: {}", cluster.contact_point());
//! cluster.stop_node(2).await?;
//! cluster.start_node(2).await?;
//! cluster.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! Many clusters can run at once in one process (each gets its own `127.x.y.0/24` range and
//! free ports). The cluster keeps everything in memory and runs until
//! [`EmbeddedCluster::shutdown`] or until it is dropped.
//!
//! # Using it from tests
//!
//! Start a cluster per test (each gets its own loopback range, so tests run in parallel),
//! connect with [`EmbeddedCluster::session`] or any driver at
//! [`EmbeddedCluster::contact_point`], and drive its control API: stop, start and add nodes,
//! split tablets, inject faults ([`FaultRule`]), count requests. From other languages, run the
//! `scylla-emulator` binary (below) and read its `ready` line.
//!
//! # TLS
//!
//! [`ClusterBuilder::tls`] opens a TLS port and a shard-aware TLS port on every node beside
//! the plaintext ones (as ScyllaDB's `native_transport_port_ssl` and
//! `native_shard_aware_transport_port_ssl`), [`ClusterBuilder::tls_require_client_cert`]
//! asks clients for certificates (mutual TLS); [`TestCa`] makes the certificates a test
//! needs at run time.
//!
//! # The `scylla-emulator` binary
//!
//! The same cluster as a process: `scylla-emulator --nodes 3` prints `ready 127.0.0.1:9042`
//! once every node accepts connections, then reads commands on stdin (`cql <statement>`,
//! `consistency [<level>]`, `stop-node <i>`, `start-node <i>`, `add-node`,
//! `split-tablets <ks>.<table>`, `fault <rule>`, `clear-faults`, `stats`, `shutdown`),
//! answering each with a line `ok ...` or `error: <reason>`. `cql` statements run at
//! consistency ONE unless `consistency` sets another level, as in cqlsh. SIGTERM and SIGINT
//! stop it cleanly (exit status 0), whatever its stdin is. `--help` lists its flags; [`cli`]
//! is its command line (the flags, the help text and the [`cli::exit_code`]s).
//!
//! # Inside
//!
//! The modules form layers; each imports only from the layers below it (lowest first):
//!
//! 1. `types` (CQL values and types);
//! 2. `cql` (lexer, parser, statements), `schema` (keyspaces, tables, user types, the
//!    `system_schema` rows), `storage` (partitions, cells, tombstones, reconciliation),
//!    `frame` (the native protocol: compression, header, requests, responses);
//! 3. `cluster` (configuration, preloaded tables, topology and token ring, tablets, fault
//!    rules, request counters: the cluster state the layers above read);
//! 4. `cdc` (log tables, stream ids, generations);
//! 5. `exec` (statement execution over a schema, storage and topology snapshot);
//! 6. `server` (`ClusterCore`, the state every node's server shares, which owns the
//!    database; listeners and connections);
//! 7. `embedded` ([`EmbeddedCluster`] and its [`ClusterBuilder`], [`TestCa`]), re-exported by
//!    this facade, which only declares the modules; `cli` (the binary's command line), then
//!    the `scylla-emulator` binary.

pub mod cli;
pub mod types;

pub(crate) mod cdc;
pub(crate) mod cluster;
pub(crate) mod cql;
pub(crate) mod exec;
pub(crate) mod frame;
pub(crate) mod schema;
pub(crate) mod server;
pub(crate) mod storage;

mod embedded;

pub use cluster::TableRequestCounts;
pub use cluster::faults::{FaultError, FaultHits, FaultOpcode, FaultReaction, FaultRule};
pub use cluster::preload::{MAX_PRELOAD_ROWS, Preload, PreloadProgress, PreloadSpecError};
pub use embedded::{
    ClusterBuilder, ClusterError, EmbeddedCluster, TestCa, TestCertError, TestCertificate,
};
