//! Nodes, shards and the token ring of the embedded cluster: the cluster state the layers
//! above read.
//!
//! The configuration ([`ClusterConfig`]), the [`Topology`] (nodes with their host ids,
//! tokens, shard counts, up/down state and gossip generations, and the [`ring::Ring`] they form), the
//! fault-injection rules and per-(node, shard) request counters ([`RequestStats`]). The state
//! a running cluster's servers share, with the database, is `server::core::ClusterCore`, a
//! layer up: nothing here imports `exec/` or `server/`.
//!
//! - [`partitioner`]: Murmur3 and CDC partitioners, the Scylla sharder.
//! - [`ring`]: each node's vnode tokens and the ring they form (ownership, vnode ranges).
//! - [`faults`]: fault-injection rules checked against every request.
//! - [`tablets`]: tablet boundaries and the replicas (node, shard) of each tablet.
//! - [`preload`]: the tables a cluster fills before it serves ([`crate::Preload`]).

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use uuid::Uuid;

use crate::cluster::faults::FaultOpcode;

pub(crate) mod faults;
pub(crate) mod partitioner;
pub(crate) mod preload;
pub(crate) mod ring;
pub(crate) mod tablets;

/// Data center name every node reports (Scylla's default).
pub(crate) const DATACENTER: &str = "datacenter1";
/// Rack name every node reports (Scylla's default).
pub(crate) const RACK: &str = "rack1";
/// Cluster name in `system.local`.
pub(crate) const CLUSTER_NAME: &str = "Embedded Scylla Cluster";
/// Release version reported in `system.local`/`system.peers` (a Scylla-compatible CQL server).
pub(crate) const RELEASE_VERSION: &str = "3.0.8";

/// Settings fixed when the cluster starts.
#[derive(Debug, Clone)]
pub(crate) struct ClusterConfig {
    /// Shards per node.
    pub(crate) shards_per_node: u32,
    /// Vnode tokens per node.
    pub(crate) vnodes_per_node: usize,
    /// `ignore_msb` of the sharder.
    pub(crate) ignore_msb: u32,
    /// Credentials required by the PasswordAuthenticator, if any.
    pub(crate) credentials: Option<(String, String)>,
    /// Delay between a node joining and the new CDC generation's timestamp.
    pub(crate) generation_delay: Duration,
    /// Default `ttl` of the `cdc` table option.
    pub(crate) default_cdc_ttl: u32,
    /// Seed of random choices (tokens, stream ids), for reproducible layouts.
    pub(crate) seed: Option<u64>,
    /// Scylla's `query_page_size_in_bytes`: a paged read cuts its page after the row that
    /// takes the page's data past this many bytes.
    pub(crate) query_page_size_in_bytes: u64,
    /// Scylla's `query_tombstone_page_limit`: a paged read cuts its page after this many
    /// tombstones, even when the page is empty.
    pub(crate) query_tombstone_page_limit: u64,
}

/// Default of Scylla's `query_page_size_in_bytes` (`db/config.cc`: 1 MiB).
pub(crate) const DEFAULT_QUERY_PAGE_SIZE_IN_BYTES: u64 = 1 << 20;
/// Default of Scylla's `query_tombstone_page_limit` (`db/config.cc`: 10,000).
pub(crate) const DEFAULT_QUERY_TOMBSTONE_PAGE_LIMIT: u64 = 10_000;

/// One node of the cluster.
#[derive(Debug, Clone)]
pub(crate) struct NodeInfo {
    /// 1-based index.
    pub(crate) index: usize,
    /// Loopback address (rpc, broadcast and listen address).
    pub(crate) ip: IpAddr,
    /// Host id, stable for the node's life.
    pub(crate) host_id: Uuid,
    /// Vnode tokens, sorted.
    pub(crate) tokens: Vec<i64>,
    /// Number of shards.
    pub(crate) shards: u32,
    /// Whether the node currently accepts connections.
    pub(crate) up: bool,
}

/// The gossip generation of a node starting now: seconds since the epoch (Scylla's
/// `gms::get_generation_number`).
pub(crate) fn generation_number_now() -> i32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    i32::try_from(secs).unwrap_or(i32::MAX)
}

/// The nodes and the ring they form.
#[derive(Debug, Clone, Default)]
pub(crate) struct Topology {
    /// Nodes in index order (node `i` at position `i - 1`).
    pub(crate) nodes: Vec<NodeInfo>,
    /// The token ring over all nodes.
    pub(crate) ring: ring::Ring,
    /// `system.local.gossip_generation` of each node, by index: seconds since the epoch when
    /// the node last started (Scylla's `increment_and_get_generation`).
    pub(crate) gossip_generations: std::collections::BTreeMap<usize, i32>,
}

impl Topology {
    /// Builds the ring from the nodes' tokens; every node starts now.
    pub(crate) fn new(nodes: Vec<NodeInfo>) -> Topology {
        let tokens: Vec<Vec<i64>> = nodes.iter().map(|n| n.tokens.clone()).collect();
        let now = generation_number_now();
        Topology {
            ring: ring::Ring::new(&tokens),
            gossip_generations: nodes.iter().map(|n| (n.index, now)).collect(),
            nodes,
        }
    }

    /// Node `index` (1-based).
    pub(crate) fn node(&self, index: usize) -> Option<&NodeInfo> {
        index.checked_sub(1).and_then(|i| self.nodes.get(i))
    }

    /// Records that node `index` (re)started now: its gossip generation grows.
    pub(crate) fn restarted(&mut self, index: usize) {
        let generation = self.gossip_generations.entry(index).or_default();
        *generation = generation_number_now().max(generation.saturating_add(1));
    }
}

/// What a statement request does to a table, for the per-table counters
/// ([`RequestStats::record_table`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableAccess {
    /// A `SELECT`.
    Read,
    /// An `INSERT`, `UPDATE` or `DELETE` without a condition, or a batch of them.
    Write,
    /// A lightweight transaction: a statement with `IF ...`, or a batch with one.
    Lwt,
}

/// Statement requests (QUERY, EXECUTE, BATCH) to one table, counted since
/// `EmbeddedCluster::count_table_requests` or the last reset (see
/// `EmbeddedCluster::table_request_counts`). A batch counts once for each table it writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableRequestCounts {
    /// `SELECT`s.
    pub reads: u64,
    /// Writes without a condition (statements or batches).
    pub writes: u64,
    /// Lightweight transactions: conditional statements or batches with a condition.
    pub lwts: u64,
    /// The lightweight transactions among `lwts` sent with serial consistency LOCAL_SERIAL
    /// (Paxos among the coordinator's data centre only); the others were sent with SERIAL,
    /// or with none (SERIAL, as the protocol defines).
    pub local_serial_lwts: u64,
}

/// The atomic counters behind a [`TableRequestCounts`].
#[derive(Debug, Default)]
struct TableCounters {
    reads: AtomicU64,
    writes: AtomicU64,
    lwts: AtomicU64,
    local_serial_lwts: AtomicU64,
}

impl TableCounters {
    fn snapshot(&self) -> TableRequestCounts {
        TableRequestCounts {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            lwts: self.lwts.load(Ordering::Relaxed),
            local_serial_lwts: self.local_serial_lwts.load(Ordering::Relaxed),
        }
    }

    fn reset(&self) {
        self.reads.store(0, Ordering::Relaxed);
        self.writes.store(0, Ordering::Relaxed);
        self.lwts.store(0, Ordering::Relaxed);
        self.local_serial_lwts.store(0, Ordering::Relaxed);
    }
}

/// Requests counted per (node, shard), to check token- and shard-aware routing, and the
/// connections open on each (node, shard), in all and per negotiated compression codec;
/// statement requests per table, for the tables asked for.
#[derive(Debug, Default)]
pub(crate) struct RequestStats {
    counts: Mutex<std::collections::HashMap<(usize, u32, FaultOpcode), Arc<AtomicU64>>>,
    connections: Mutex<std::collections::BTreeMap<(usize, u32), usize>>,
    compressed: Mutex<std::collections::BTreeMap<(usize, u32, &'static str), usize>>,
    /// Counters of the tables counted, by (keyspace, table) as stored.
    tables: parking_lot::RwLock<std::collections::HashMap<(String, String), Arc<TableCounters>>>,
    /// Whether `tables` is not empty: requests are only looked at (their table found) then.
    counting_tables: std::sync::atomic::AtomicBool,
}

impl RequestStats {
    /// Starts counting the statement requests to `keyspace.table` (names as stored); a table
    /// already counted keeps its counts.
    pub(crate) fn count_table(&self, keyspace: &str, table: &str) {
        self.tables
            .write()
            .entry((keyspace.to_owned(), table.to_owned()))
            .or_default();
        self.counting_tables.store(true, Ordering::Release);
    }

    /// Whether any table is counted (else [`record_table`](Self::record_table) need not be
    /// called: finding a request's table costs a lookup or a parse).
    pub(crate) fn counting_tables(&self) -> bool {
        self.counting_tables.load(Ordering::Acquire)
    }

    /// Counts one statement request to `keyspace.table`, if that table is counted;
    /// `local_serial`: the request asked for serial consistency LOCAL_SERIAL.
    pub(crate) fn record_table(
        &self,
        keyspace: &str,
        table: &str,
        access: TableAccess,
        local_serial: bool,
    ) {
        let tables = self.tables.read();
        // A borrowed-key lookup without allocating: the map is small (the tables asked for).
        let Some(counters) = tables
            .iter()
            .find(|((k, t), _)| k == keyspace && t == table)
            .map(|(_, c)| c)
        else {
            return;
        };
        let counter = match access {
            TableAccess::Read => &counters.reads,
            TableAccess::Write => &counters.writes,
            TableAccess::Lwt => &counters.lwts,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if access == TableAccess::Lwt && local_serial {
            counters.local_serial_lwts.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts of `keyspace.table` (zero if it is not counted).
    pub(crate) fn table_counts(&self, keyspace: &str, table: &str) -> TableRequestCounts {
        self.tables
            .read()
            .get(&(keyspace.to_owned(), table.to_owned()))
            .map(|c| c.snapshot())
            .unwrap_or_default()
    }

    /// Counts one statement request (QUERY, EXECUTE or BATCH) on `(node, shard)`.
    pub(crate) fn record(&self, node: usize, shard: u32, opcode: FaultOpcode) {
        let counter = self
            .counts
            .lock()
            .entry((node, shard, opcode))
            .or_default()
            .clone();
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A snapshot of the counters of the requests `opcode` accepts, summed per (node, shard).
    pub(crate) fn snapshot(
        &self,
        opcode: impl Fn(FaultOpcode) -> bool,
    ) -> std::collections::BTreeMap<(usize, u32), u64> {
        let mut out = std::collections::BTreeMap::new();
        for ((node, shard, op), n) in self.counts.lock().iter() {
            if opcode(*op) {
                *out.entry((*node, *shard)).or_default() += n.load(Ordering::Relaxed);
            }
        }
        out
    }

    /// Resets every counter to zero.
    pub(crate) fn reset(&self) {
        self.counts.lock().clear();
        for counters in self.tables.read().values() {
            counters.reset();
        }
    }

    /// Counts a connection opened (`+1`) or closed (`-1`) on `(node, shard)`.
    pub(crate) fn connection(&self, node: usize, shard: u32, opened: bool) {
        let mut connections = self.connections.lock();
        let n = connections.entry((node, shard)).or_default();
        if opened {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                connections.remove(&(node, shard));
            }
        }
    }

    /// Connections open per `(node, shard)`.
    pub(crate) fn connections(&self) -> std::collections::BTreeMap<(usize, u32), usize> {
        self.connections.lock().clone()
    }

    /// Counts a connection that negotiated compression with `codec` (`+1`), or closed
    /// (`-1`), on `(node, shard)`.
    pub(crate) fn compressed_connection(
        &self,
        node: usize,
        shard: u32,
        codec: &'static str,
        opened: bool,
    ) {
        let mut compressed = self.compressed.lock();
        let n = compressed.entry((node, shard, codec)).or_default();
        if opened {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                compressed.remove(&(node, shard, codec));
            }
        }
    }

    /// Connections open per `(node, shard)` that negotiated compression with `codec`.
    pub(crate) fn compressed_connections(
        &self,
        codec: &str,
    ) -> std::collections::BTreeMap<(usize, u32), usize> {
        self.compressed
            .lock()
            .iter()
            .filter(|((_, _, c), _)| *c == codec)
            .map(|(&(node, shard, _), &n)| ((node, shard), n))
            .collect()
    }
}
