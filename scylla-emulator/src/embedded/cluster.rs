//! [`EmbeddedCluster`]: a running embedded cluster and its control API (addresses, nodes
//! stopped, started and added, tablets split, faults, request counters, shutdown), over the
//! [`ClusterCore`] that every node's server shares.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use rand::rngs::StdRng;
use tokio::sync::Mutex;
use uuid::Uuid;

use crate::cluster::faults::{FaultHits, FaultOpcode, FaultRule};
use crate::cluster::{self, NodeInfo, TableRequestCounts, Topology};
use crate::frame::{self, Event, StatusChangeType};
use crate::server::listen::{self, AddressPlan};
use crate::server::{ClusterCore, NodeServer};

use super::error::ClusterError;

/// A running embedded cluster.
///
/// Dropping it stops every node (without waiting); [`EmbeddedCluster::shutdown`] stops them
/// and waits until every connection is closed.
pub struct EmbeddedCluster {
    core: Arc<ClusterCore>,
    servers: Mutex<Vec<Option<NodeServer>>>,
    /// Tokens and host ids of nodes added later.
    rng: parking_lot::Mutex<StdRng>,
    /// The TLS of [`EmbeddedCluster::session`] when the native ports speak TLS only.
    session_tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for EmbeddedCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedCluster")
            .field("contact_point", &self.contact_point())
            .field("nodes", &self.core.topology().nodes.len())
            .finish()
    }
}

impl EmbeddedCluster {
    /// The cluster whose nodes' servers are `servers` (in node order); `rng` chooses the
    /// tokens and host ids of nodes added later; `session_tls` is the TLS of its own
    /// sessions when nothing speaks plaintext.
    pub(super) fn new(
        core: Arc<ClusterCore>,
        servers: Vec<Option<NodeServer>>,
        rng: StdRng,
        session_tls: Option<Arc<rustls::ClientConfig>>,
    ) -> EmbeddedCluster {
        EmbeddedCluster {
            core,
            servers: Mutex::new(servers),
            rng: parking_lot::Mutex::new(rng),
            session_tls,
        }
    }

    /// A driver session connected to this cluster (with its credentials, if any), ready to use:
    /// `Session::connect` has fetched the cluster's metadata. With
    /// [`ClusterBuilder::tls_only`](crate::ClusterBuilder::tls_only) it connects over TLS,
    /// trusting exactly the cluster's own certificate (and presenting a client certificate of
    /// the test CA when one is required; a cluster with a PEM certificate and client
    /// certificates required refuses it).
    pub async fn session(
        &self,
    ) -> Result<Arc<scylla::client::session::Session>, scylla::errors::NewSessionError> {
        let mut builder = scylla::client::session_builder::SessionBuilder::new()
            .known_node(self.contact_point().to_string());
        if let Some((user, password)) = self.credentials() {
            builder = builder.user(user, password);
        }
        if let Some(tls) = &self.session_tls {
            builder = builder.tls_context(Some(tls.clone()));
        }
        builder.build().await.map(Arc::new)
    }

    /// Whether the native ports speak TLS only
    /// ([`ClusterBuilder::tls_only`](crate::ClusterBuilder::tls_only)).
    pub fn is_tls_only(&self) -> bool {
        self.core.tls_only
    }

    /// The CQL endpoint of node 1.
    pub fn contact_point(&self) -> SocketAddr {
        self.core
            .node_endpoint(1)
            .expect("node 1 always has an address")
    }

    /// The CQL endpoints of every node, in node order.
    pub fn node_addresses(&self) -> Vec<SocketAddr> {
        let n = self.core.topology().nodes.len();
        (1..=n).filter_map(|i| self.core.node_endpoint(i)).collect()
    }

    /// The credentials the cluster requires, if any.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.core
            .config
            .credentials
            .as_ref()
            .map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The shard-aware port of every node.
    pub fn shard_aware_port(&self) -> u16 {
        self.core.plan.shard_aware_port
    }

    /// The TLS endpoint of node 1 (its address and the TLS port), when the cluster was built
    /// with [`ClusterBuilder::tls`](crate::ClusterBuilder::tls); with
    /// [`ClusterBuilder::tls_only`](crate::ClusterBuilder::tls_only), the
    /// [`contact_point`](Self::contact_point) itself.
    pub fn tls_contact_point(&self) -> Option<SocketAddr> {
        if self.core.tls_only {
            return Some(self.contact_point());
        }
        let (port, _) = self.core.plan.tls_ports?;
        Some(SocketAddr::new(self.contact_point().ip(), port))
    }

    /// The shard-aware TLS port of every node, when the cluster has TLS ports; with
    /// [`ClusterBuilder::tls_only`](crate::ClusterBuilder::tls_only), the
    /// [`shard_aware_port`](Self::shard_aware_port) itself.
    pub fn shard_aware_tls_port(&self) -> Option<u16> {
        if self.core.tls_only {
            return Some(self.core.plan.shard_aware_port);
        }
        self.core.plan.tls_ports.map(|(_, port)| port)
    }

    /// Stops node `index` (1-based): it closes its listeners and every connection, and other
    /// nodes announce it DOWN. Its data stays (all nodes share one store).
    pub async fn stop_node(&self, index: usize) -> Result<(), ClusterError> {
        let mut servers = self.servers.lock().await;
        let slot = index
            .checked_sub(1)
            .and_then(|i| servers.get_mut(i))
            .ok_or(ClusterError::NoSuchNode(index))?;
        let server = slot.take().ok_or(ClusterError::NodeStopped(index))?;
        self.set_node_up(index, false);
        server.stop().await;
        if let Some(addr) = self.core.node_endpoint(index) {
            self.core.publish(Event::StatusChange {
                change: StatusChangeType::Down,
                addr,
            });
        }
        Ok(())
    }

    /// Starts node `index` again on the same address and ports; other nodes announce it UP.
    pub async fn start_node(&self, index: usize) -> Result<(), ClusterError> {
        let mut servers = self.servers.lock().await;
        let slot = index
            .checked_sub(1)
            .and_then(|i| servers.get_mut(i))
            .ok_or(ClusterError::NoSuchNode(index))?;
        if slot.is_some() {
            return Err(ClusterError::NodeRunning(index));
        }
        let plan: AddressPlan = self.core.plan;
        let ip = plan.node_ip(index).ok_or(ClusterError::NoSuchNode(index))?;
        let listeners =
            listen::bind_node(ip, &plan)
                .await
                .map_err(|source| ClusterError::Bind {
                    what: format!("node {index} at {ip}"),
                    source,
                })?;
        *slot = Some(NodeServer::spawn(self.core.clone(), index, listeners));
        self.set_node_up(index, true);
        if let Some(addr) = self.core.node_endpoint(index) {
            self.core.publish(Event::StatusChange {
                change: StatusChangeType::Up,
                addr,
            });
        }
        Ok(())
    }

    /// Adds a node (the next address of the range, the cluster's shard and vnode counts, new
    /// random tokens). As on Scylla, the join creates a new CDC generation operating from
    /// now + the generation delay; the new node is announced (TOPOLOGY_CHANGE NEW_NODE).
    /// Returns the new generation's timestamp.
    pub async fn add_node(&self) -> Result<chrono::DateTime<chrono::Utc>, ClusterError> {
        let mut servers = self.servers.lock().await;
        let index = servers.len() + 1;
        let plan = self.core.plan;
        let ip = plan
            .node_ip(index)
            .ok_or_else(|| ClusterError::Config("no address left in the cluster's range".into()))?;
        let listeners =
            listen::bind_node(ip, &plan)
                .await
                .map_err(|source| ClusterError::Bind {
                    what: format!("node {index} at {ip}"),
                    source,
                })?;
        let topology = {
            let mut rng = self.rng.lock();
            let current = self.core.topology();
            let taken: Vec<Vec<i64>> = current.nodes.iter().map(|n| n.tokens.clone()).collect();
            let tokens =
                cluster::ring::random_tokens(&mut *rng, self.core.config.vnodes_per_node, &taken);
            let mut nodes = current.nodes.clone();
            nodes.push(NodeInfo {
                index,
                ip: ip.into(),
                host_id: Uuid::from_u128(rand::Rng::r#gen(&mut *rng)),
                tokens,
                shards: self.core.config.shards_per_node,
                up: true,
            });
            let mut next = Topology::new(nodes);
            // The nodes already there keep their gossip generations.
            next.gossip_generations
                .extend(current.gossip_generations.iter().map(|(i, g)| (*i, *g)));
            Arc::new(next)
        };
        *self.core.topology.write() = topology.clone();
        servers.push(Some(NodeServer::spawn(self.core.clone(), index, listeners)));
        let delay = chrono::Duration::from_std(self.core.config.generation_delay)
            .unwrap_or(chrono::Duration::zero());
        let timestamp = chrono::Utc::now() + delay;
        self.core
            .db
            .new_vnode_generation(
                &topology,
                self.core.config.ignore_msb,
                timestamp.timestamp_millis(),
            )
            .map_err(|e| ClusterError::Cdc(e.message))?;
        if let Some(addr) = self.core.node_endpoint(index) {
            self.core.publish(Event::TopologyChange {
                change: frame::TopologyChangeType::NewNode,
                addr,
            });
        }
        Ok(
            chrono::DateTime::from_timestamp_millis(timestamp.timestamp_millis())
                .unwrap_or(timestamp),
        )
    }

    /// Splits every tablet of `keyspace.table` (a CDC table of a tablet keyspace) in two: a new
    /// stream set with twice the streams, operating from now + the generation delay, as
    /// Scylla does after a tablet split. Returns the new set's timestamp.
    pub async fn split_tablets(
        &self,
        keyspace: &str,
        table: &str,
    ) -> Result<chrono::DateTime<chrono::Utc>, ClusterError> {
        let delay = chrono::Duration::from_std(self.core.config.generation_delay)
            .unwrap_or(chrono::Duration::zero());
        let at = (chrono::Utc::now() + delay).timestamp_millis();
        let ts = self
            .core
            .db
            .split_tablets(keyspace, table, at)
            .map_err(ClusterError::Cdc)?;
        chrono::DateTime::from_timestamp_millis(ts)
            .ok_or_else(|| ClusterError::Cdc(format!("invalid stream set timestamp {ts}")))
    }

    fn set_node_up(&self, index: usize, up: bool) {
        let mut topology = self.core.topology.write();
        let mut t = (**topology).clone();
        if let Some(node) = index.checked_sub(1).and_then(|i| t.nodes.get_mut(i)) {
            node.up = up;
        }
        if up {
            t.restarted(index);
        }
        *topology = Arc::new(t);
    }

    /// The primary owner of `token`: node index (1-based) and the shard of that node that owns
    /// it under Scylla's sharder. A token-aware, shard-aware driver sends a request for a
    /// partition with this token to exactly this (node, shard).
    pub fn token_owner(&self, token: i64) -> (usize, u32) {
        let topology = self.core.topology();
        let node = topology.ring.owner_of(token).map_or(1, |n| n + 1);
        let shards = topology.node(node).map_or(1, |n| n.shards);
        (
            node,
            cluster::partitioner::shard_of(token, shards, self.core.config.ignore_msb),
        )
    }

    /// The replicas of the tablet of `keyspace.table` that holds `token`, as (node index
    /// (1-based), shard), in the order the `tablets-routing-v1` payload lists them; `None`
    /// when the table does not exist or its keyspace does not use tablets. A driver that
    /// learned the tablet sends a request for a partition with this token to one of these.
    pub fn tablet_replicas(
        &self,
        keyspace: &str,
        table: &str,
        token: i64,
    ) -> Option<Vec<(usize, u32)>> {
        let layout = self.core.db.tablet_layout_of(keyspace, table)?;
        let (_, replicas) = layout.replicas_of_token(&self.core.topology(), token);
        Some(replicas.iter().map(|r| (r.node + 1, r.shard)).collect())
    }

    /// Adds a fault-injection rule (checked in the order added; the first match wins);
    /// returns the count of requests it reacts to.
    pub fn add_fault(&self, rule: FaultRule) -> FaultHits {
        self.core.faults.add(rule)
    }

    /// Removes every fault-injection rule.
    pub fn clear_faults(&self) {
        self.core.faults.clear();
    }

    /// Statement requests (QUERY, EXECUTE, BATCH) received so far per `(node, shard)`,
    /// including the driver's own metadata queries.
    pub fn request_counts(&self) -> BTreeMap<(usize, u32), u64> {
        self.core.stats.snapshot(|_| true)
    }

    /// Requests of one kind (`Query`, `Execute` or `Batch`) received so far per
    /// `(node, shard)`. EXECUTE counts show how a driver routes prepared statements, apart
    /// from the QUERY requests it sends on its own (metadata refreshes after schema events).
    pub fn request_counts_of(&self, opcode: FaultOpcode) -> BTreeMap<(usize, u32), u64> {
        self.core.stats.snapshot(|op| op == opcode)
    }

    /// Starts counting the statement requests (QUERY, EXECUTE, BATCH) to `keyspace.table`
    /// (names as stored, case-sensitive), on every node: reads, writes and lightweight
    /// transactions apart (see [`table_request_counts`](Self::table_request_counts)), for
    /// instance the requests a consumer group makes to its lease table. The table need not
    /// exist yet. Until a table is counted, requests are not looked at.
    pub fn count_table_requests(&self, keyspace: &str, table: &str) {
        self.core.stats.count_table(keyspace, table);
    }

    /// The statement requests to `keyspace.table` received since
    /// [`count_table_requests`](Self::count_table_requests) (or the last
    /// [`reset_request_counts`](Self::reset_request_counts)), all nodes together; zero if the
    /// table is not counted. A request counts once per table it touches: a `SELECT` as a
    /// read, a modification or batch as a write, or as a lightweight transaction if it (or
    /// any statement of the batch) has an `IF` condition. Requests are counted when they
    /// arrive, before fault rules and execution, so failed ones count too.
    pub fn table_request_counts(&self, keyspace: &str, table: &str) -> TableRequestCounts {
        self.core.stats.table_counts(keyspace, table)
    }

    /// Client connections currently open per `(node, shard)` (a driver's pool holds one per
    /// shard of every node, plus its control connection).
    pub fn connection_counts(&self) -> BTreeMap<(usize, u32), usize> {
        self.core.stats.connections()
    }

    /// Client connections currently open per `(node, shard)` that negotiated frame
    /// compression with `codec` (`"lz4"` or `"snappy"`, the names of the STARTUP
    /// `COMPRESSION` option), to check that a driver compresses on every connection.
    pub fn compressed_connection_counts(&self, codec: &str) -> BTreeMap<(usize, u32), usize> {
        self.core.stats.compressed_connections(codec)
    }

    /// Resets the request counters.
    pub fn reset_request_counts(&self) {
        self.core.stats.reset();
    }

    /// Stops every node and waits until every connection is closed.
    pub async fn shutdown(self) {
        let servers: Vec<NodeServer> = self.servers.lock().await.drain(..).flatten().collect();
        for server in servers {
            server.stop().await;
        }
    }
}

impl Drop for EmbeddedCluster {
    fn drop(&mut self) {
        listen::release_prefix(self.core.plan.prefix);
    }
}
