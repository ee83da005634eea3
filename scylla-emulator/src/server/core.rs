//! [`ClusterCore`]: the state every node's server holds. It sits above `exec` (it owns the
//! [`Database`]) and below the servers, so that `cluster/` (ring, topology, faults) never
//! imports the layers that read it.

use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::sync::broadcast;
use tokio_rustls::TlsAcceptor;

use crate::cluster::{ClusterConfig, RequestStats, Topology, faults};
use crate::exec::Database;
use crate::frame::Event;
use crate::server::listen::AddressPlan;

/// State shared by every node of a running cluster.
pub(crate) struct ClusterCore {
    /// Fixed settings.
    pub(crate) config: ClusterConfig,
    /// Where nodes listen.
    pub(crate) plan: AddressPlan,
    /// Nodes and ring.
    pub(crate) topology: RwLock<Arc<Topology>>,
    /// Schema, data, prepared statements, CDC state.
    pub(crate) db: Database,
    /// Events for registered connections.
    pub(crate) events: broadcast::Sender<Event>,
    /// Fault-injection rules.
    pub(crate) faults: faults::FaultRules,
    /// Request counters.
    pub(crate) stats: RequestStats,
    /// The TLS ports' acceptor, when the cluster has TLS ports (or, with `tls_only`, the
    /// native ports' acceptor).
    pub(crate) tls: Option<TlsAcceptor>,
    /// The native ports (CQL and shard-aware) speak TLS only, with `tls` as their acceptor,
    /// and there are no TLS ports besides them (Scylla with `client_encryption_options`
    /// enabled and no `native_transport_port_ssl`).
    pub(crate) tls_only: bool,
}

impl ClusterCore {
    /// A snapshot of the topology.
    pub(crate) fn topology(&self) -> Arc<Topology> {
        self.topology.read().clone()
    }

    /// The CQL endpoint of node `index`.
    pub(crate) fn node_endpoint(&self, index: usize) -> Option<SocketAddr> {
        self.plan.node_addr(index)
    }

    /// Publishes an event to every registered connection (no-op without listeners).
    pub(crate) fn publish(&self, event: Event) {
        // An error only means nobody is registered right now.
        let _ = self.events.send(event);
    }
}
