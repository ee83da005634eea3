//! Picking loopback addresses and ports for a cluster's nodes, and binding them.
//!
//! Node *i* (1-based) of a cluster listens on `127.x.y.i`, on the same CQL port and the same
//! shard-aware port as every other node (drivers learn peers' addresses from
//! `system.peers.rpc_address` and reuse the contact point's port). Clusters started in one
//! process get distinct `127.x.y.0/24` ranges from a process-wide registry; clusters of
//! different processes (test binaries run in parallel) pick random ranges and retry when a
//! bind clashes.

use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use parking_lot::Mutex;
use rand::Rng;
use tokio::net::TcpListener;

/// The listeners of one node.
#[derive(Debug)]
pub(crate) struct NodeListeners {
    /// The regular CQL port.
    pub(crate) cql: TcpListener,
    /// The shard-aware port (shard = client source port % shard count).
    pub(crate) shard_aware: TcpListener,
    /// With TLS: the TLS port and the shard-aware TLS port.
    pub(crate) tls: Option<(TcpListener, TcpListener)>,
}

/// Where a cluster's nodes listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AddressPlan {
    /// First three octets of every node's address (`127.x.y`).
    pub(crate) prefix: [u8; 3],
    /// Last octet of node 1 (node *i* gets `first + i - 1`).
    pub(crate) first: u8,
    /// CQL port of every node.
    pub(crate) port: u16,
    /// Shard-aware port of every node.
    pub(crate) shard_aware_port: u16,
    /// With TLS: the TLS port and the shard-aware TLS port of every node (Scylla's
    /// `native_transport_port_ssl` and `native_shard_aware_transport_port_ssl`).
    pub(crate) tls_ports: Option<(u16, u16)>,
}

impl AddressPlan {
    /// The address of node `index` (1-based), or `None` past the end of the /24.
    pub(crate) fn node_ip(&self, index: usize) -> Option<Ipv4Addr> {
        let last = usize::from(self.first) + index.checked_sub(1)?;
        let last = u8::try_from(last).ok().filter(|l| *l < 255)?;
        Some(Ipv4Addr::new(
            self.prefix[0],
            self.prefix[1],
            self.prefix[2],
            last,
        ))
    }

    /// The CQL endpoint of node `index` (1-based).
    pub(crate) fn node_addr(&self, index: usize) -> Option<SocketAddr> {
        Some(SocketAddr::new(self.node_ip(index)?.into(), self.port))
    }
}

/// `127.x.y` prefixes in use by clusters of this process.
static USED_PREFIXES: Mutex<Option<HashSet<[u8; 3]>>> = Mutex::new(None);

/// Releases a prefix when its cluster shuts down.
pub(crate) fn release_prefix(prefix: [u8; 3]) {
    if let Some(set) = USED_PREFIXES.lock().as_mut() {
        set.remove(&prefix);
    }
}

fn reserve_prefix(prefix: [u8; 3]) -> bool {
    USED_PREFIXES
        .lock()
        .get_or_insert_with(HashSet::new)
        .insert(prefix)
}

/// Binds the listeners of a node at `ip` on the plan's ports (port 0 = any free port).
pub(crate) async fn bind_node(ip: Ipv4Addr, plan: &AddressPlan) -> io::Result<NodeListeners> {
    let cql = TcpListener::bind((ip, plan.port)).await?;
    let shard_aware = TcpListener::bind((ip, plan.shard_aware_port)).await?;
    let tls = match plan.tls_ports {
        Some((port, shard_aware_port)) => Some((
            TcpListener::bind((ip, port)).await?,
            TcpListener::bind((ip, shard_aware_port)).await?,
        )),
        None => None,
    };
    Ok(NodeListeners {
        cql,
        shard_aware,
        tls,
    })
}

/// Binds `nodes` nodes. With `fixed` (`--address`), node 1 is at that address and the ports
/// are as given (0 = free ports chosen once for node 1 and reused by the others). Without it,
/// a random unused `127.x.y.0/24` range is chosen, retrying on clashes with other processes.
/// `tls_ports`: the TLS ports to bind too, if any.
pub(crate) async fn bind_cluster(
    nodes: usize,
    fixed: Option<Ipv4Addr>,
    port: u16,
    shard_aware_port: u16,
    tls_ports: Option<(u16, u16)>,
) -> io::Result<(AddressPlan, Vec<NodeListeners>)> {
    const ATTEMPTS: usize = 64;
    let mut last_error = None;
    for _ in 0..ATTEMPTS {
        let (prefix, first) = match fixed {
            Some(ip) => {
                let o = ip.octets();
                ([o[0], o[1], o[2]], o[3])
            }
            None => {
                let mut rng = rand::thread_rng();
                // Stay off 127.0.0.0/16, where other local services usually listen.
                let prefix = [127, rng.gen_range(1..=254), rng.r#gen()];
                if !reserve_prefix(prefix) {
                    continue;
                }
                (prefix, 1)
            }
        };
        let mut plan = AddressPlan {
            prefix,
            first,
            port,
            shard_aware_port,
            tls_ports,
        };
        match bind_all(&mut plan, nodes).await {
            Ok(listeners) => return Ok((plan, listeners)),
            Err(e) => {
                if fixed.is_some() {
                    return Err(e);
                }
                release_prefix(prefix);
                last_error = Some(e);
            }
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::other("no free loopback range found")))
}

async fn bind_all(plan: &mut AddressPlan, nodes: usize) -> io::Result<Vec<NodeListeners>> {
    let mut out = Vec::with_capacity(nodes);
    for i in 1..=nodes {
        let ip = plan
            .node_ip(i)
            .ok_or_else(|| io::Error::other("too many nodes for one /24 address range"))?;
        let listeners = bind_node(ip, plan).await?;
        if i == 1 {
            plan.port = listeners.cql.local_addr()?.port();
            plan.shard_aware_port = listeners.shard_aware.local_addr()?.port();
            if let Some((tls, shard_aware_tls)) = &listeners.tls {
                plan.tls_ports = Some((
                    tls.local_addr()?.port(),
                    shard_aware_tls.local_addr()?.port(),
                ));
            }
        }
        out.push(listeners);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn clusters_get_distinct_ranges_and_shared_ports() {
        let (a, la) = bind_cluster(3, None, 0, 0, None).await.expect("bind a");
        let (b, _lb) = bind_cluster(2, None, 0, 0, Some((0, 0)))
            .await
            .expect("bind b");
        assert_ne!(a.prefix, b.prefix);
        assert_eq!(la.len(), 3);
        for (i, l) in la.iter().enumerate() {
            let addr = l.cql.local_addr().expect("addr");
            assert_eq!(Some(addr), a.node_addr(i + 1));
            assert_eq!(
                l.shard_aware.local_addr().expect("addr").port(),
                a.shard_aware_port
            );
        }
        assert_ne!(a.port, a.shard_aware_port);
        assert_eq!(a.tls_ports, None);
        let (tls, shard_aware_tls) = b.tls_ports.expect("TLS ports bound");
        assert!(tls != 0 && shard_aware_tls != 0 && tls != shard_aware_tls);
        release_prefix(a.prefix);
        release_prefix(b.prefix);
    }

    #[test]
    fn node_addresses_stay_in_the_range() {
        let plan = AddressPlan {
            prefix: [127, 5, 6],
            first: 1,
            port: 9042,
            shard_aware_port: 19042,
            tls_ports: None,
        };
        assert_eq!(plan.node_ip(1), Some(Ipv4Addr::new(127, 5, 6, 1)));
        assert_eq!(plan.node_ip(3), Some(Ipv4Addr::new(127, 5, 6, 3)));
        assert_eq!(plan.node_ip(0), None);
        assert_eq!(plan.node_ip(255), None);
    }
}
