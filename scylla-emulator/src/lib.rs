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
//! stop it cleanly (exit status 0), whatever its stdin is. `--help` lists its flags.
//!
//! # Inside
//!
//! The modules form layers; each imports only from the layers below it (lowest first):
//!
//! 1. `types` (CQL values and types);
//! 2. `cql` (lexer, parser, statements), `schema` (keyspaces, tables, user types, the
//!    `system_schema` rows), `storage` (partitions, cells, tombstones, reconciliation),
//!    `frame` (the native protocol: compression, header, requests, responses);
//! 3. `cluster` (configuration, topology and token ring, tablets, fault rules, request
//!    counters: the cluster state the layers above read);
//! 4. `cdc` (log tables, stream ids, generations);
//! 5. `exec` (statement execution over a schema, storage and topology snapshot);
//! 6. `server` (`ClusterCore`, the state every node's server shares, which owns the
//!    database; listeners and connections);
//! 7. this facade (`EmbeddedCluster`), then the `scylla-emulator` binary.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rand::SeedableRng;
use tokio::sync::{Mutex, broadcast};
use uuid::Uuid;

pub mod types;

mod preload;
mod test_certs;

pub(crate) mod cdc;
pub(crate) mod cluster;
pub(crate) mod cql;
pub(crate) mod exec;
pub(crate) mod frame;
pub(crate) mod schema;
pub(crate) mod server;
pub(crate) mod storage;

pub use cluster::TableRequestCounts;
pub use cluster::faults::{FaultError, FaultHits, FaultOpcode, FaultReaction, FaultRule};
pub use preload::{MAX_PRELOAD_ROWS, Preload, PreloadProgress, PreloadSpecError};
pub use test_certs::{TestCa, TestCertError, TestCertificate};

use cluster::{ClusterConfig, NodeInfo, Topology};
use frame::{Event, StatusChangeType};
use server::ClusterCore;
use server::NodeServer;
use server::listen::{self, AddressPlan};

/// Errors of the embedded cluster's control API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A listener could not be bound.
    #[error("cannot bind {what}: {source}")]
    Bind {
        /// What was being bound.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The builder was given settings that cannot work.
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// There is no node with this index.
    #[error("there is no node {0} (nodes are numbered from 1)")]
    NoSuchNode(usize),
    /// The node is already stopped.
    #[error("node {0} is already stopped")]
    NodeStopped(usize),
    /// The node is already running.
    #[error("node {0} is already running")]
    NodeRunning(usize),
    /// A CDC metadata operation failed (e.g. splitting the tablets of a table without them).
    #[error("{0}")]
    Cdc(String),
    /// A preloaded table could not be created or filled.
    #[error("preload failed: {0}")]
    Preload(String),
}

/// Configures and starts an [`EmbeddedCluster`].
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    nodes: usize,
    shards_per_node: u32,
    vnodes_per_node: usize,
    port: u16,
    shard_aware_port: u16,
    address: Option<Ipv4Addr>,
    credentials: Option<(String, String)>,
    tls: Option<TlsFiles>,
    generation_delay: Duration,
    default_cdc_ttl: u32,
    seed: Option<u64>,
    preloads: Vec<Preload>,
    query_page_size_in_bytes: u64,
    query_tombstone_page_limit: u64,
}

/// The TLS settings of a cluster (see [`ClusterBuilder::tls`]).
#[derive(Clone)]
struct TlsFiles {
    source: TlsSource,
    client_ca: Option<Vec<u8>>,
    port: u16,
    shard_aware_port: u16,
}

/// Where the server certificate comes from.
#[derive(Clone)]
enum TlsSource {
    /// Not given yet (only client CA or ports were set).
    Missing,
    /// A certificate chain and key, PEM.
    Pem { cert_chain: Vec<u8>, key: Vec<u8> },
    /// Made at start by a test CA, for every address of the cluster's range and these names.
    Ca { ca: TestCa, names: Vec<String> },
}

impl TlsFiles {
    fn new() -> TlsFiles {
        TlsFiles {
            source: TlsSource::Missing,
            client_ca: None,
            port: 0,
            shard_aware_port: 0,
        }
    }
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The private key stays out of debug output.
        f.debug_struct("TlsFiles")
            .field("client_certificates_required", &self.client_ca.is_some())
            .field("port", &self.port)
            .field("shard_aware_port", &self.shard_aware_port)
            .finish_non_exhaustive()
    }
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            nodes: 1,
            shards_per_node: 2,
            vnodes_per_node: 16,
            port: 0,
            shard_aware_port: 0,
            address: None,
            credentials: None,
            tls: None,
            generation_delay: Duration::from_secs(2),
            default_cdc_ttl: 86400,
            seed: None,
            preloads: Vec::new(),
            query_page_size_in_bytes: cluster::DEFAULT_QUERY_PAGE_SIZE_IN_BYTES,
            query_tombstone_page_limit: cluster::DEFAULT_QUERY_TOMBSTONE_PAGE_LIMIT,
        }
    }
}

impl ClusterBuilder {
    /// Number of nodes (default 1).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }

    /// Shards per node (default 2).
    pub fn shards_per_node(mut self, n: u32) -> Self {
        self.shards_per_node = n;
        self
    }

    /// Vnode tokens per node (default 16; Scylla's default is 256).
    pub fn vnodes_per_node(mut self, n: usize) -> Self {
        self.vnodes_per_node = n;
        self
    }

    /// CQL port of every node (default 0: any free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Shard-aware port of every node (default 0: any free port).
    pub fn shard_aware_port(mut self, port: u16) -> Self {
        self.shard_aware_port = port;
        self
    }

    /// Address of node 1; node *i* gets the address *i − 1* above it (default: a free
    /// random `127.x.y.1`).
    pub fn address(mut self, address: Ipv4Addr) -> Self {
        self.address = Some(address);
        self
    }

    /// Requires PasswordAuthenticator credentials on every connection.
    pub fn credentials(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some((user.into(), password.into()));
        self
    }

    /// Opens a TLS port and a shard-aware TLS port on every node besides the plaintext ports,
    /// as ScyllaDB with `client_encryption_options` enabled and `native_transport_port_ssl` /
    /// `native_shard_aware_transport_port_ssl` set: `cert_chain_pem` is the server's
    /// certificate chain (leaf first), `key_pem` its private key, both PEM. The ports are
    /// free ports unless [`ClusterBuilder::tls_ports`] names them; see
    /// [`EmbeddedCluster::tls_contact_point`]. Works together with
    /// [`ClusterBuilder::credentials`].
    pub fn tls(mut self, cert_chain_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Self {
        self.tls.get_or_insert_with(TlsFiles::new).source = TlsSource::Pem {
            cert_chain: cert_chain_pem.into(),
            key: key_pem.into(),
        };
        self
    }

    /// As [`ClusterBuilder::tls`], with a server certificate that `ca` signs when the cluster
    /// starts, for every address of the cluster's `127.x.y.0/24` range (nodes added later
    /// included) and the DNS `names`: what a test needs, since a cluster's addresses are
    /// chosen when it starts.
    pub fn tls_signed_by(mut self, ca: &TestCa, names: &[&str]) -> Self {
        self.tls.get_or_insert_with(TlsFiles::new).source = TlsSource::Ca {
            ca: ca.clone(),
            names: names.iter().map(|n| n.to_string()).collect(),
        };
        self
    }

    /// Mutual TLS (Scylla's `require_client_auth`): a client on a TLS port must present a
    /// certificate signed by one of the CA certificates of `ca_pem`. Needs
    /// [`ClusterBuilder::tls`].
    pub fn tls_require_client_cert(mut self, ca_pem: impl Into<Vec<u8>>) -> Self {
        self.tls.get_or_insert_with(TlsFiles::new).client_ca = Some(ca_pem.into());
        self
    }

    /// The TLS port and the shard-aware TLS port of every node (default 0: free ports).
    /// Needs [`ClusterBuilder::tls`].
    pub fn tls_ports(mut self, port: u16, shard_aware_port: u16) -> Self {
        let tls = self.tls.get_or_insert_with(TlsFiles::new);
        tls.port = port;
        tls.shard_aware_port = shard_aware_port;
        self
    }

    /// Delay between a node joining and the start of the CDC generation it causes (default
    /// 2 s; real Scylla uses about 65 s).
    pub fn generation_delay(mut self, delay: Duration) -> Self {
        self.generation_delay = delay;
        self
    }

    /// Default `ttl` of the `cdc` table option, in seconds (default 86400, as Scylla).
    pub fn default_cdc_ttl(mut self, seconds: u32) -> Self {
        self.default_cdc_ttl = seconds;
        self
    }

    /// Scylla's `query_page_size_in_bytes` (default 1 MiB, as Scylla): a paged SELECT cuts
    /// its page after the row that takes the page's data past this many bytes, even when the
    /// page holds fewer rows than the page size asks for. At least 1.
    pub fn query_page_size_in_bytes(mut self, bytes: u64) -> Self {
        self.query_page_size_in_bytes = bytes;
        self
    }

    /// Scylla's `query_tombstone_page_limit` (default 10,000, as Scylla): a paged SELECT
    /// cuts its page once it has passed this many tombstones (deleted rows and partitions,
    /// rows whose data expired less than `gc_grace_seconds` ago), even when the page is then
    /// empty: the client gets an empty page with more to come. At least 1.
    pub fn query_tombstone_page_limit(mut self, tombstones: u64) -> Self {
        self.query_tombstone_page_limit = tombstones;
        self
    }

    /// Seed of the random choices (tokens, stream ids) for reproducible layouts.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Fills a CDC table before [`ClusterBuilder::start`] returns (see [`Preload`]); may be
    /// called for several tables.
    pub fn preload(mut self, preload: Preload) -> Self {
        self.preloads.push(preload);
        self
    }

    /// Starts the cluster; returns once every node accepts connections (and every
    /// [preloaded](ClusterBuilder::preload) table is full).
    pub async fn start(self) -> Result<EmbeddedCluster, ClusterError> {
        if self.nodes == 0 || self.nodes > 250 {
            return Err(ClusterError::Config(format!(
                "a cluster needs 1 to 250 nodes, not {}",
                self.nodes
            )));
        }
        if self.shards_per_node == 0 || self.shards_per_node > 256 {
            return Err(ClusterError::Config(format!(
                "a node needs 1 to 256 shards, not {}",
                self.shards_per_node
            )));
        }
        if self.vnodes_per_node == 0 || self.vnodes_per_node > 4096 {
            return Err(ClusterError::Config(format!(
                "a node needs 1 to 4096 vnodes, not {}",
                self.vnodes_per_node
            )));
        }
        if self.query_page_size_in_bytes == 0 || self.query_tombstone_page_limit == 0 {
            return Err(ClusterError::Config(
                "query_page_size_in_bytes and query_tombstone_page_limit must be at least 1".into(),
            ));
        }
        for (i, p) in self.preloads.iter().enumerate() {
            p.validate()
                .map_err(|e| ClusterError::Config(e.to_string()))?;
            if self.preloads[..i]
                .iter()
                .any(|q| (q.keyspace(), q.table()) == (p.keyspace(), p.table()))
            {
                return Err(ClusterError::Config(format!(
                    "{}.{} is preloaded twice",
                    p.keyspace(),
                    p.table()
                )));
            }
        }
        // Certificates given as PEM are checked before anything is bound.
        let mut tls = match &self.tls {
            Some(TlsFiles {
                source: TlsSource::Missing,
                ..
            }) => {
                return Err(ClusterError::Config(
                    "TLS settings without a certificate (ClusterBuilder::tls)".into(),
                ));
            }
            Some(TlsFiles {
                source: TlsSource::Pem { cert_chain, key },
                client_ca,
                ..
            }) => Some(
                server::tls::acceptor(cert_chain, key, client_ca.as_deref())
                    .map_err(ClusterError::Config)?,
            ),
            _ => None,
        };
        let tls_ports = self.tls.as_ref().map(|t| (t.port, t.shard_aware_port));
        let (plan, listeners) = listen::bind_cluster(
            self.nodes,
            self.address,
            self.port,
            self.shard_aware_port,
            tls_ports,
        )
        .await
        .map_err(|source| ClusterError::Bind {
            what: format!("{} nodes", self.nodes),
            source,
        })?;
        if let Some(TlsFiles {
            source: TlsSource::Ca { ca, names },
            client_ca,
            ..
        }) = &self.tls
        {
            let ips: Vec<std::net::IpAddr> = (1..=255)
                .filter_map(|i| plan.node_ip(i))
                .map(Into::into)
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let acceptor = ca
                .server_cert(&ips, &names)
                .map_err(|e| e.to_string())
                .and_then(|cert| {
                    server::tls::acceptor(
                        cert.cert_pem.as_bytes(),
                        cert.key_pem.as_bytes(),
                        client_ca.as_deref(),
                    )
                });
            match acceptor {
                Ok(acceptor) => tls = Some(acceptor),
                Err(e) => {
                    if self.address.is_none() {
                        listen::release_prefix(plan.prefix);
                    }
                    return Err(ClusterError::Config(e));
                }
            }
        }
        let mut rng = match self.seed {
            Some(seed) => rand::rngs::StdRng::seed_from_u64(seed),
            None => rand::rngs::StdRng::from_entropy(),
        };
        let mut tokens: Vec<Vec<i64>> = Vec::new();
        let mut nodes = Vec::new();
        for index in 1..=self.nodes {
            let t = cluster::ring::random_tokens(&mut rng, self.vnodes_per_node, &tokens);
            tokens.push(t.clone());
            nodes.push(NodeInfo {
                index,
                ip: plan
                    .node_ip(index)
                    .ok_or(ClusterError::NoSuchNode(index))?
                    .into(),
                host_id: Uuid::from_u128(rand::Rng::r#gen(&mut rng)),
                tokens: t,
                shards: self.shards_per_node,
                up: true,
            });
        }
        let config = ClusterConfig {
            shards_per_node: self.shards_per_node,
            vnodes_per_node: self.vnodes_per_node,
            ignore_msb: cluster::partitioner::DEFAULT_IGNORE_MSB,
            credentials: self.credentials,
            generation_delay: self.generation_delay,
            default_cdc_ttl: self.default_cdc_ttl,
            seed: self.seed,
            query_page_size_in_bytes: self.query_page_size_in_bytes,
            query_tombstone_page_limit: self.query_tombstone_page_limit,
        };
        let (events, _) = broadcast::channel(1024);
        let core = Arc::new(ClusterCore {
            db: exec::Database::new(&config),
            config,
            plan,
            topology: RwLock::new(Arc::new(Topology::new(nodes))),
            events,
            faults: Default::default(),
            stats: Default::default(),
            tls,
        });
        // The first generation of a fresh cluster operates from now (Scylla 4.4+).
        let topology = core.topology();
        core.db
            .new_vnode_generation(
                &topology,
                core.config.ignore_msb,
                chrono::Utc::now().timestamp_millis(),
            )
            .map_err(|e| ClusterError::Cdc(e.message))?;
        // Preloads run on blocking threads (they take seconds to minutes), before any node
        // accepts connections.
        for preload in self.preloads {
            let core = core.clone();
            tokio::task::spawn_blocking(move || core.db.preload(&preload))
                .await
                .map_err(|e| ClusterError::Preload(e.to_string()))?
                .map_err(|e| ClusterError::Preload(e.message))?;
        }
        let servers = listeners
            .into_iter()
            .enumerate()
            .map(|(i, l)| Some(NodeServer::spawn(core.clone(), i + 1, l)))
            .collect();
        Ok(EmbeddedCluster {
            core,
            servers: Mutex::new(servers),
            rng: parking_lot::Mutex::new(rng),
        })
    }
}

/// A running embedded cluster.
///
/// Dropping it stops every node (without waiting); [`EmbeddedCluster::shutdown`] stops them
/// and waits until every connection is closed.
pub struct EmbeddedCluster {
    core: Arc<ClusterCore>,
    servers: Mutex<Vec<Option<NodeServer>>>,
    /// Tokens and host ids of nodes added later.
    rng: parking_lot::Mutex<rand::rngs::StdRng>,
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
    /// A driver session connected to this cluster (with its credentials, if any), ready to use:
    /// `Session::connect` has fetched the cluster's metadata.
    pub async fn session(
        &self,
    ) -> Result<Arc<scylla::client::session::Session>, scylla::errors::NewSessionError> {
        let mut builder = scylla::client::session_builder::SessionBuilder::new()
            .known_node(self.contact_point().to_string());
        if let Some((user, password)) = self.credentials() {
            builder = builder.user(user, password);
        }
        builder.build().await.map(Arc::new)
    }

    /// A builder with the defaults: 1 node, 2 shards, 16 vnodes, free ports.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
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
    /// with [`ClusterBuilder::tls`].
    pub fn tls_contact_point(&self) -> Option<SocketAddr> {
        let (port, _) = self.core.plan.tls_ports?;
        Some(SocketAddr::new(self.contact_point().ip(), port))
    }

    /// The shard-aware TLS port of every node, when the cluster has TLS ports.
    pub fn shard_aware_tls_port(&self) -> Option<u16> {
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
