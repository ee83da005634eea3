//! The network side of the embedded cluster: listeners, connections, request dispatch.
//!
//! Each node runs a [`NodeServer`]: two accept loops (the regular CQL port, where
//! connections are spread over shards round-robin, and the shard-aware port, where the shard
//! is the client's source port modulo the shard count), two more with TLS (the TLS port and
//! the shard-aware TLS port, [`tls`]) and one task per connection ([`connection`]); with
//! TLS only, the two native ports speak TLS and there is no other. Stopping a node closes
//! its listeners and every connection, and waits until they are gone.
//!
//! - [`core`]: [`ClusterCore`], the state every node's server shares (configuration,
//!   topology, database, events, faults, counters).
//! - [`listen`]: loopback address plans and binding of each node's two listeners.
//! - [`connection`]: the per-connection protocol state machine (handshake and compression,
//!   dispatch, tablet routing information on results).
//! - [`tls`]: the TLS ports' acceptor (certificates, mutual TLS).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

pub(crate) mod connection;
pub(crate) mod core;
pub(crate) mod listen;
pub(crate) mod tls;

pub(crate) use self::core::ClusterCore;

/// A running node's listeners and connections.
pub(crate) struct NodeServer {
    shutdown: watch::Sender<bool>,
    accept_tasks: Vec<JoinHandle<()>>,
    /// Yields `None` once every connection task (each holds a sender) has finished.
    alive: mpsc::Receiver<()>,
}

impl NodeServer {
    /// Starts serving node `node` (1-based) on its listeners.
    pub(crate) fn spawn(
        cluster: Arc<ClusterCore>,
        node: usize,
        listeners: listen::NodeListeners,
    ) -> NodeServer {
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (alive_tx, alive) = mpsc::channel(1);
        let round_robin = Arc::new(AtomicU32::new(0));
        let shards = cluster.config.shards_per_node.max(1);
        let regular = {
            let round_robin = round_robin.clone();
            move |_| round_robin.fetch_add(1, Ordering::Relaxed) % shards
        };
        let shard_aware = move |peer_port| u32::from(peer_port) % shards;
        // TLS only: the native ports themselves speak TLS.
        let native_tls = cluster.tls.clone().filter(|_| cluster.tls_only);
        let mut accept_tasks = vec![
            accept_loop(
                listeners.cql,
                native_tls.clone(),
                cluster.clone(),
                node,
                shutdown_rx.clone(),
                alive_tx.clone(),
                regular.clone(),
            ),
            accept_loop(
                listeners.shard_aware,
                native_tls,
                cluster.clone(),
                node,
                shutdown_rx.clone(),
                alive_tx.clone(),
                shard_aware,
            ),
        ];
        if let (Some((tls, shard_aware_tls)), Some(acceptor)) = (listeners.tls, &cluster.tls) {
            accept_tasks.push(accept_loop(
                tls,
                Some(acceptor.clone()),
                cluster.clone(),
                node,
                shutdown_rx.clone(),
                alive_tx.clone(),
                regular,
            ));
            accept_tasks.push(accept_loop(
                shard_aware_tls,
                Some(acceptor.clone()),
                cluster.clone(),
                node,
                shutdown_rx,
                alive_tx,
                shard_aware,
            ));
        }
        NodeServer {
            shutdown,
            accept_tasks,
            alive,
        }
    }

    /// Closes the listeners and every connection, and waits until all are gone.
    pub(crate) async fn stop(mut self) {
        let _ = self.shutdown.send(true);
        for task in self.accept_tasks.drain(..) {
            let _ = task.await;
        }
        while self.alive.recv().await.is_some() {}
    }
}

fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    cluster: Arc<ClusterCore>,
    node: usize,
    mut shutdown: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
    shard_for: impl Fn(u16) -> u32 + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, peer)) = accepted else { continue };
                    let shard = shard_for(peer.port());
                    let cluster = cluster.clone();
                    let shutdown = shutdown.clone();
                    let alive = alive.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        match tls {
                            None => {
                                connection::serve(stream, peer, cluster, node, shard, shutdown)
                                    .await
                            }
                            Some(acceptor) => {
                                connection::serve_tls(
                                    acceptor, stream, peer, cluster, node, shard, shutdown,
                                )
                                .await
                            }
                        }
                        drop(alive);
                    });
                }
                _ = shutdown.changed() => break,
            }
        }
    })
}
