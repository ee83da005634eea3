//! [`ClusterBuilder`]: the settings of an embedded cluster and its start, in steps: check
//! the settings, bind every node's listeners, make the TLS acceptor, choose the nodes' tokens
//! and host ids, create the shared [`ClusterCore`] with the first CDC generation, fill the
//! preloaded tables, and spawn a server for every node.

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::sync::broadcast;
use tokio_rustls::TlsAcceptor;
use uuid::Uuid;

use crate::cluster::preload::Preload;
use crate::cluster::{self, ClusterConfig, NodeInfo, Topology};
use crate::exec;
use crate::server::listen::{self, AddressPlan};
use crate::server::{ClusterCore, NodeServer};

use super::cluster::EmbeddedCluster;
use super::error::ClusterError;
use super::test_certs::TestCa;
use super::tls::{Served, TlsFiles, TlsSource};

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

    /// The other TLS configuration of ScyllaDB: `client_encryption_options` enabled and
    /// neither `native_transport_port_ssl` nor `native_shard_aware_transport_port_ssl` set,
    /// so that the CQL port and the shard-aware port themselves speak TLS and nothing speaks
    /// plaintext (Scylla's `transport/controller.cc`, `start_listening_on_tcp_sockets`). Most
    /// production clusters with client encryption run this way. Needs a certificate
    /// ([`ClusterBuilder::tls`] or [`ClusterBuilder::tls_signed_by`]); works with
    /// [`ClusterBuilder::tls_require_client_cert`] and [`ClusterBuilder::credentials`]; not
    /// with [`ClusterBuilder::tls_ports`].
    ///
    /// As on Scylla, SUPPORTED then announces `SCYLLA_SHARD_AWARE_PORT` (which speaks TLS)
    /// and no `SCYLLA_SHARD_AWARE_PORT_SSL`; a plaintext client is refused per connection
    /// (its connection is closed at its first bytes, which are no TLS handshake).
    /// [`EmbeddedCluster::contact_point`] and [`EmbeddedCluster::tls_contact_point`] are
    /// then the same endpoint, and [`EmbeddedCluster::session`] connects over TLS, trusting
    /// the cluster's own certificate.
    pub fn tls_only(mut self) -> Self {
        self.tls.get_or_insert_with(TlsFiles::new).only = true;
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
        self.validate()?;
        // Certificates given as PEM are checked before anything is bound.
        let pem_tls = match &self.tls {
            Some(files) => files.pem_acceptor().map_err(ClusterError::Config)?,
            None => None,
        };
        let (plan, listeners) = self.bind().await?;
        let tls = match self.ca_acceptor(&plan) {
            Ok(Some(served)) => Some(served),
            Ok(None) => pem_tls,
            Err(e) => return Err(e),
        };
        let tls_only = self.tls.as_ref().is_some_and(|t| t.only);
        // The cluster's own sessions, when nothing speaks plaintext.
        let session_tls = match (&self.tls, &tls) {
            (Some(files), Some(served)) if files.only => Some(
                files
                    .session_config(served)
                    .map_err(|e| self.config_error(&plan, e))?,
            ),
            _ => None,
        };
        let mut rng = match self.seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_entropy(),
        };
        let nodes = self.first_nodes(&plan, &mut rng)?;
        let preloads = self.preloads;
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
        let core = new_core(config, plan, nodes, tls.map(|t| t.acceptor), tls_only)?;
        fill_preloads(&core, preloads).await?;
        Ok(spawn_servers(core, listeners, rng, session_tls))
    }

    /// Checks the settings before anything is bound.
    fn validate(&self) -> Result<(), ClusterError> {
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
        if let Some(tls) = &self.tls
            && tls.only
            && (tls.port != 0 || tls.shard_aware_port != 0)
        {
            return Err(ClusterError::Config(
                "tls_only encrypts the CQL ports themselves: it has no TLS ports (tls_ports)"
                    .into(),
            ));
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
        Ok(())
    }

    /// Binds the listeners of every node: the cluster's address plan and each node's
    /// listeners, in node order.
    async fn bind(&self) -> Result<(AddressPlan, Vec<listen::NodeListeners>), ClusterError> {
        let tls_ports = self
            .tls
            .as_ref()
            .filter(|t| !t.only)
            .map(|t| (t.port, t.shard_aware_port));
        listen::bind_cluster(
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
        })
    }

    /// The acceptor of a certificate that a test CA signs for the addresses of `plan`
    /// (`None` for other settings); on failure the range of addresses chosen for the cluster
    /// is given back.
    fn ca_acceptor(&self, plan: &AddressPlan) -> Result<Option<Served>, ClusterError> {
        let Some(files) = &self.tls else {
            return Ok(None);
        };
        files
            .ca_acceptor(plan)
            .map_err(|e| self.config_error(plan, e))
    }

    /// A configuration error found after `plan`'s addresses were chosen: the range chosen
    /// for the cluster is given back.
    fn config_error(&self, plan: &AddressPlan, e: String) -> ClusterError {
        if self.address.is_none() {
            listen::release_prefix(plan.prefix);
        }
        ClusterError::Config(e)
    }

    /// The first nodes: each at its address of `plan`, with random tokens and host id.
    fn first_nodes(
        &self,
        plan: &AddressPlan,
        rng: &mut StdRng,
    ) -> Result<Vec<NodeInfo>, ClusterError> {
        let mut tokens: Vec<Vec<i64>> = Vec::new();
        let mut nodes = Vec::new();
        for index in 1..=self.nodes {
            let t = cluster::ring::random_tokens(rng, self.vnodes_per_node, &tokens);
            tokens.push(t.clone());
            nodes.push(NodeInfo {
                index,
                ip: plan
                    .node_ip(index)
                    .ok_or(ClusterError::NoSuchNode(index))?
                    .into(),
                host_id: Uuid::from_u128(rand::Rng::r#gen(rng)),
                tokens: t,
                shards: self.shards_per_node,
                up: true,
            });
        }
        Ok(nodes)
    }
}

/// The state the nodes' servers share, with the first CDC generation of a fresh cluster,
/// operating from now (Scylla 4.4+).
fn new_core(
    config: ClusterConfig,
    plan: AddressPlan,
    nodes: Vec<NodeInfo>,
    tls: Option<TlsAcceptor>,
    tls_only: bool,
) -> Result<Arc<ClusterCore>, ClusterError> {
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
        tls_only,
    });
    let topology = core.topology();
    core.db
        .new_vnode_generation(
            &topology,
            core.config.ignore_msb,
            chrono::Utc::now().timestamp_millis(),
        )
        .map_err(|e| ClusterError::Cdc(e.message))?;
    Ok(core)
}

/// Fills the preloaded tables, on blocking threads (they take seconds to minutes), before
/// any node accepts connections.
async fn fill_preloads(
    core: &Arc<ClusterCore>,
    preloads: Vec<Preload>,
) -> Result<(), ClusterError> {
    for preload in preloads {
        let core = core.clone();
        tokio::task::spawn_blocking(move || core.db.preload(&preload))
            .await
            .map_err(|e| ClusterError::Preload(e.to_string()))?
            .map_err(|e| ClusterError::Preload(e.message))?;
    }
    Ok(())
}

/// A server for every node on its listeners: the running cluster.
fn spawn_servers(
    core: Arc<ClusterCore>,
    listeners: Vec<listen::NodeListeners>,
    rng: StdRng,
    session_tls: Option<Arc<rustls::ClientConfig>>,
) -> EmbeddedCluster {
    let servers = listeners
        .into_iter()
        .enumerate()
        .map(|(i, l)| Some(NodeServer::spawn(core.clone(), i + 1, l)))
        .collect();
    EmbeddedCluster::new(core, servers, rng, session_tls)
}

impl EmbeddedCluster {
    /// A builder with the defaults: 1 node, 2 shards, 16 vnodes, free ports.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }
}
