//! The embedded cluster's TLS ports (`ClusterBuilder::tls`): drivers connect over TLS, with
//! client certificates when mutual TLS is on, together with password authentication; each
//! kind of bad client is refused on its own connection while the server keeps serving.

use std::sync::Arc;
use std::time::Duration;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla_emulator::{EmbeddedCluster, TestCa, TestCertificate};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const USER: &str = "cdc_user";
const PASSWORD: &str = "s3cret-tls-pass";

/// A CA and a two-node cluster with TLS ports (a server certificate of the CA) and
/// password authentication; with `mutual`, client certificates of the CA are required.
struct Setup {
    ca: TestCa,
    cluster: EmbeddedCluster,
}

async fn start(mutual: bool) -> Setup {
    let ca = TestCa::new("scylla-cdc test CA").expect("CA");
    let mut builder = EmbeddedCluster::builder()
        .nodes(2)
        .credentials(USER, PASSWORD)
        .tls_signed_by(&ca, &["localhost"]);
    if mutual {
        builder = builder.tls_require_client_cert(ca.cert_pem());
    }
    let cluster = builder.start().await.expect("cluster with TLS");
    Setup { ca, cluster }
}

fn client_config(ca_pem: &str, client: Option<&TestCertificate>) -> Arc<rustls::ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA cert");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let chain = CertificateDer::pem_slice_iter(c.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .expect("client chain");
            let key = PrivateKeyDer::from_pem_slice(c.key_pem.as_bytes()).expect("client key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("client auth")
        }
    };
    Arc::new(config)
}

async fn connect(
    cluster: &EmbeddedCluster,
    tls: Option<Arc<rustls::ClientConfig>>,
    password: &str,
) -> Result<Session, String> {
    let addr = cluster.tls_contact_point().expect("TLS port");
    SessionBuilder::new()
        .known_node_addr(addr)
        .user(USER, password)
        .tls_context(tls)
        .connection_timeout(Duration::from_secs(5))
        .build()
        .await
        .map_err(|e| e.to_string())
}

async fn works(session: &Session) {
    let rows = session
        .query_unpaged("SELECT cluster_name FROM system.local", ())
        .await
        .expect("query over TLS")
        .into_rows_result()
        .expect("rows");
    assert_eq!(rows.rows_num(), 1);
}

/// A client with the CA and the password reads over TLS, on both nodes; the plaintext port
/// still serves plaintext clients; SUPPORTED announces the shard-aware TLS port.
#[tokio::test]
async fn drivers_connect_over_tls_with_a_password() {
    let Setup { ca, cluster } = start(false).await;
    let session = connect(&cluster, Some(client_config(ca.cert_pem(), None)), PASSWORD)
        .await
        .expect("TLS session");
    works(&session).await;
    session
        .query_unpaged(
            "CREATE KEYSPACE tls_ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
            (),
        )
        .await
        .expect("DDL over TLS");
    session
        .query_unpaged("CREATE TABLE tls_ks.t (pk int PRIMARY KEY, v text)", ())
        .await
        .expect("table");
    for pk in 0..20 {
        session
            .query_unpaged("INSERT INTO tls_ks.t (pk, v) VALUES (?, 'x')", (pk,))
            .await
            .expect("insert over TLS");
    }
    let count: i64 = session
        .query_unpaged("SELECT count(*) FROM tls_ks.t", ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row::<(i64,)>()
        .expect("one row")
        .0;
    assert_eq!(count, 20);

    // The plaintext port is still there, as on Scylla with a separate TLS port.
    let plain = SessionBuilder::new()
        .known_node_addr(cluster.contact_point())
        .user(USER, PASSWORD)
        .build()
        .await
        .expect("plaintext session");
    works(&plain).await;

    // OPTIONS over TLS: SUPPORTED names the shard-aware TLS port.
    let supported = raw_options(&cluster, client_config(ca.cert_pem(), None)).await;
    let port = cluster
        .shard_aware_tls_port()
        .expect("shard-aware TLS port");
    let needle = "SCYLLA_SHARD_AWARE_PORT_SSL";
    let at = find(&supported, needle.as_bytes()).expect("SCYLLA_SHARD_AWARE_PORT_SSL announced");
    // [string list] of one [string]: count (2 bytes), length (2 bytes), the port.
    let after = &supported[at + needle.len()..];
    let len = usize::from(u16::from_be_bytes([after[2], after[3]]));
    assert_eq!(&after[4..4 + len], port.to_string().as_bytes());
    cluster.shutdown().await;
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends OPTIONS on a TLS connection to node 1's TLS port and returns SUPPORTED's body.
async fn raw_options(cluster: &EmbeddedCluster, config: Arc<rustls::ClientConfig>) -> Vec<u8> {
    let addr = cluster.tls_contact_point().expect("TLS port");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let connector = tokio_rustls::TlsConnector::from(config);
    let mut tls = connector
        .connect(ServerName::IpAddress(addr.ip().into()), tcp)
        .await
        .expect("TLS handshake");
    // v4 request, no flags, stream 1, OPTIONS (0x05), empty body.
    tls.write_all(&[0x04, 0, 0, 1, 0x05, 0, 0, 0, 0])
        .await
        .expect("write");
    let mut header = [0u8; 9];
    tls.read_exact(&mut header).await.expect("header");
    assert_eq!(header[4], 0x06, "SUPPORTED");
    let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
    let mut body = vec![0u8; len];
    tls.read_exact(&mut body).await.expect("body");
    body
}

/// A plaintext client on the TLS port, a client that does not trust the server's CA and a
/// wrong password are each refused; a good client connects afterwards.
#[tokio::test]
async fn bad_clients_are_refused_and_the_server_keeps_serving() {
    let Setup { ca, cluster } = start(false).await;

    let plaintext = connect(&cluster, None, PASSWORD).await;
    assert!(
        plaintext.is_err(),
        "a plaintext client on the TLS port connected"
    );

    let other_ca = TestCa::new("another CA").expect("CA");
    let unknown_ca = connect(
        &cluster,
        Some(client_config(other_ca.cert_pem(), None)),
        PASSWORD,
    )
    .await
    .expect_err("a client that does not trust the server's CA connected");
    assert!(
        unknown_ca.to_lowercase().contains("certificate"),
        "not a certificate error: {unknown_ca}"
    );

    let wrong_password = connect(
        &cluster,
        Some(client_config(ca.cert_pem(), None)),
        "not-the-password",
    )
    .await
    .expect_err("a wrong password was accepted over TLS");
    assert!(
        wrong_password.contains("Username and/or password are incorrect"),
        "{wrong_password}"
    );

    let session = connect(&cluster, Some(client_config(ca.cert_pem(), None)), PASSWORD)
        .await
        .expect("a good client after the refusals");
    works(&session).await;
    cluster.shutdown().await;
}

/// With client certificates required: a client without one, or with one another CA signed,
/// is refused; a client with a certificate of the configured CA reads.
#[tokio::test]
async fn mutual_tls_requires_a_client_certificate_of_the_ca() {
    let Setup { ca, cluster } = start(true).await;

    let without = connect(&cluster, Some(client_config(ca.cert_pem(), None)), PASSWORD).await;
    assert!(without.is_err(), "a client without a certificate connected");

    let other_ca = TestCa::new("another CA").expect("CA");
    let foreign = other_ca.client_cert("intruder").expect("client cert");
    let foreign = connect(
        &cluster,
        Some(client_config(ca.cert_pem(), Some(&foreign))),
        PASSWORD,
    )
    .await;
    assert!(foreign.is_err(), "a certificate of another CA was accepted");

    let client = ca.client_cert("cdc-client").expect("client cert");
    let session = connect(
        &cluster,
        Some(client_config(ca.cert_pem(), Some(&client))),
        PASSWORD,
    )
    .await
    .expect("mutual TLS session");
    works(&session).await;
    cluster.shutdown().await;
}

/// The builder refuses a key that is not PEM, with a clear error.
#[tokio::test]
async fn a_bad_key_is_a_configuration_error() {
    let ca = TestCa::new("CA").expect("CA");
    let server = ca
        .server_cert(&["127.0.0.1".parse().expect("ip")], &[])
        .expect("cert");
    let error = EmbeddedCluster::builder()
        .tls(server.cert_pem, "not a key")
        .start()
        .await
        .expect_err("a bad key was accepted");
    assert!(error.to_string().contains("TLS private key"), "{error}");
}

/// TLS only (`ClusterBuilder::tls_only`): the CQL port itself speaks TLS. A driver with the
/// CA reads and writes on both nodes through the contact point; SUPPORTED announces the
/// shard-aware port and no TLS port besides it; the cluster's own `session()` connects over
/// TLS (with a client certificate when one is required).
#[tokio::test]
async fn tls_only_encrypts_the_cql_port_itself() {
    for mutual in [false, true] {
        let ca = TestCa::new("TLS-only CA").expect("CA");
        let mut builder = EmbeddedCluster::builder()
            .nodes(2)
            .credentials(USER, PASSWORD)
            .tls_signed_by(&ca, &["localhost"])
            .tls_only();
        if mutual {
            builder = builder.tls_require_client_cert(ca.cert_pem());
        }
        let cluster = builder.start().await.expect("TLS-only cluster");
        assert!(cluster.is_tls_only());
        assert_eq!(cluster.tls_contact_point(), Some(cluster.contact_point()));
        assert_eq!(
            cluster.shard_aware_tls_port(),
            Some(cluster.shard_aware_port())
        );
        let client = ca.client_cert("cdc-client").expect("client cert");
        let config = client_config(ca.cert_pem(), mutual.then_some(&client));
        let session = connect(&cluster, Some(config.clone()), PASSWORD)
            .await
            .unwrap_or_else(|e| panic!("mutual={mutual}: TLS session: {e}"));
        works(&session).await;
        assert_eq!(
            session.get_cluster_state().get_nodes_info().len(),
            2,
            "both nodes known"
        );
        session
            .query_unpaged(
                "CREATE KEYSPACE only_ks WITH replication = {'class': 'SimpleStrategy', \
                 'replication_factor': 2}",
                (),
            )
            .await
            .expect("DDL over TLS");
        // The cluster's own session, as the tests and the console use it.
        let own = cluster.session().await.expect("the cluster's own session");
        works(&own).await;
        // As Scylla without native_shard_aware_transport_port_ssl: the shard-aware port is
        // announced, and no TLS port besides it.
        let supported = raw_options(&cluster, config).await;
        assert!(
            find(&supported, b"SCYLLA_SHARD_AWARE_PORT_SSL").is_none(),
            "no separate TLS port to announce"
        );
        let needle = b"SCYLLA_SHARD_AWARE_PORT";
        let at = find(&supported, needle).expect("SCYLLA_SHARD_AWARE_PORT announced");
        let after = &supported[at + needle.len()..];
        let len = usize::from(u16::from_be_bytes([after[2], after[3]]));
        assert_eq!(
            &after[4..4 + len],
            cluster.shard_aware_port().to_string().as_bytes()
        );
        cluster.shutdown().await;
    }
}

/// A plaintext client on a TLS-only port is refused at once (its connection closed, no
/// hang), on the CQL port and on the shard-aware port, by the driver and by raw bytes; the
/// server keeps serving TLS clients.
#[tokio::test]
async fn tls_only_refuses_plaintext_at_once() {
    let ca = TestCa::new("TLS-only CA").expect("CA");
    let cluster = EmbeddedCluster::builder()
        .credentials(USER, PASSWORD)
        .tls_signed_by(&ca, &[])
        .tls_only()
        .start()
        .await
        .expect("TLS-only cluster");
    let started = std::time::Instant::now();
    let plaintext = connect(&cluster, None, PASSWORD)
        .await
        .expect_err("a plaintext client connected to a TLS-only port");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused after {:?}: {plaintext}",
        started.elapsed()
    );
    for port in [cluster.contact_point().port(), cluster.shard_aware_port()] {
        let addr = std::net::SocketAddr::new(cluster.contact_point().ip(), port);
        let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        // A CQL v4 OPTIONS request in plaintext: the server answers nothing and closes.
        tcp.write_all(&[0x04, 0, 0, 1, 0x05, 0, 0, 0, 0])
            .await
            .expect("write");
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer))
            .await
            .expect("the server closes the connection, without a hang");
        // Closed, perhaps after a TLS alert record (content type 21), never a CQL frame.
        if read.is_ok() && !answer.is_empty() {
            assert_eq!(answer[0], 21, "port {port}: {answer:?}");
        }
    }
    let session = connect(&cluster, Some(client_config(ca.cert_pem(), None)), PASSWORD)
        .await
        .expect("a TLS client after the refusals");
    works(&session).await;
    cluster.shutdown().await;
}

/// TLS only needs a certificate and has no TLS ports.
#[tokio::test]
async fn tls_only_settings_that_cannot_work_are_configuration_errors() {
    let error = EmbeddedCluster::builder()
        .tls_only()
        .start()
        .await
        .expect_err("TLS only without a certificate");
    assert!(error.to_string().contains("certificate"), "{error}");
    let ca = TestCa::new("CA").expect("CA");
    let error = EmbeddedCluster::builder()
        .tls_signed_by(&ca, &[])
        .tls_only()
        .tls_ports(19142, 29142)
        .start()
        .await
        .expect_err("TLS only with TLS ports");
    assert!(error.to_string().contains("tls_ports"), "{error}");
}
