"""ScyllaDB's Python driver over TLS (`ssl_context`) to the emulator's TLS port, as to a
Scylla node with `client_encryption_options` and `native_transport_port_ssl`: the server's
certificate verified against the CA (its name checked too), password authentication on top,
mutual TLS with a client certificate, and a client that does not trust the CA refused. Then
the other configuration, `--tls-only`: no `native_transport_port_ssl`, so the CQL port
itself speaks TLS and nothing speaks plaintext."""

import ssl
import time

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable

from support import Emulator

USER = "tls_user"
PASSWORD = "tls-conformance-pw"
TLS_PORT = 9142


def start(tmp_path, mutual=False):
    """A 2-node emulator with TLS ports (certificates made by `--tls-test-ca` into
    `tmp_path`) and the PasswordAuthenticator."""
    args = ["--username", USER, "--password", PASSWORD,
            "--tls-test-ca", str(tmp_path), "--tls-port", str(TLS_PORT),
            "--shard-aware-tls-port", str(TLS_PORT + 10000)]
    if mutual:
        args.append("--tls-require-client-cert")
    return Emulator(nodes=2, extra_args=args)


def context(tmp_path, client_cert=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(tmp_path / "ca.pem"))
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    if client_cert:
        ctx.load_cert_chain(str(tmp_path / "client.pem"), str(tmp_path / "client.key"))
    return ctx


def connect(emu, ctx, password=PASSWORD):
    cluster = Cluster([emu.host], port=TLS_PORT, ssl_context=ctx,
                      auth_provider=PlainTextAuthProvider(USER, password))
    return cluster, cluster.connect()


def refused(emu, ctx, password=PASSWORD):
    """The driver cannot connect with these settings."""
    cluster = Cluster([emu.host], port=TLS_PORT, ssl_context=ctx, connect_timeout=3,
                      auth_provider=PlainTextAuthProvider(USER, password))
    try:
        with pytest.raises(NoHostAvailable):
            cluster.connect()
    finally:
        cluster.shutdown()


@pytest.fixture
def emulators():
    started = []
    yield started
    for emu in started:
        emu.stop()


def test_ssl_context_reads_and_writes(tmp_path, emulators):
    emu = start(tmp_path)
    emulators.append(emu)
    cluster, session = connect(emu, context(tmp_path))
    try:
        row = session.execute("SELECT cluster_name FROM system.local").one()
        assert row.cluster_name
        # Both nodes reached over TLS (the driver learnt node 2 from system.peers).
        assert sorted(h.address for h in cluster.metadata.all_hosts()) == sorted(emu.addresses)
        assert all(h.is_up for h in cluster.metadata.all_hosts())
        session.execute("CREATE KEYSPACE tls_ks WITH replication = "
                        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}")
        session.execute("CREATE TABLE tls_ks.t (pk int PRIMARY KEY, v text)")
        for pk in range(10):
            session.execute("INSERT INTO tls_ks.t (pk, v) VALUES (%s, %s)", (pk, f"v{pk}"))
        assert session.execute("SELECT count(*) FROM tls_ks.t").one()[0] == 10
    finally:
        cluster.shutdown()


def test_mutual_tls_needs_the_client_certificate(tmp_path, emulators):
    emu = start(tmp_path, mutual=True)
    emulators.append(emu)
    refused(emu, context(tmp_path))
    cluster, session = connect(emu, context(tmp_path, client_cert=True))
    try:
        assert session.execute("SELECT key FROM system.local").one().key == "local"
    finally:
        cluster.shutdown()


def test_refusals_leave_the_server_serving(tmp_path, emulators):
    emu = start(tmp_path)
    emulators.append(emu)
    # A client that trusts another CA (the system's) refuses the server's certificate.
    refused(emu, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
    # A wrong password over TLS.
    refused(emu, context(tmp_path), password="wrong")
    # A plaintext client on the TLS port.
    refused(emu, None)
    cluster, session = connect(emu, context(tmp_path))
    try:
        assert session.execute("SELECT key FROM system.local").one().key == "local"
    finally:
        cluster.shutdown()


def test_tls_only_cql_port(tmp_path, emulators):
    """`--tls-only`: the driver connects over TLS to the `ready` port itself (the CQL port),
    reaches both nodes and reads and writes; a plaintext client is refused at once, not left
    hanging, and the server goes on serving TLS clients and its console."""
    emu = Emulator(nodes=2, extra_args=["--username", USER, "--password", PASSWORD,
                                        "--tls-test-ca", str(tmp_path), "--tls-only"])
    emulators.append(emu)
    started = time.monotonic()
    plain = Cluster([emu.host], port=emu.port, connect_timeout=3,
                    auth_provider=PlainTextAuthProvider(USER, PASSWORD))
    try:
        with pytest.raises(NoHostAvailable):
            plain.connect()
    finally:
        plain.shutdown()
    assert time.monotonic() - started < 15, "the plaintext client was left waiting"
    cluster = Cluster([emu.host], port=emu.port, ssl_context=context(tmp_path),
                      auth_provider=PlainTextAuthProvider(USER, PASSWORD))
    try:
        session = cluster.connect()
        assert sorted(h.address for h in cluster.metadata.all_hosts()) == sorted(emu.addresses)
        assert all(h.is_up for h in cluster.metadata.all_hosts())
        session.execute("CREATE KEYSPACE tls_only_ks WITH replication = "
                        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}")
        session.execute("CREATE TABLE tls_only_ks.t (pk int PRIMARY KEY, v text)")
        insert = session.prepare("INSERT INTO tls_only_ks.t (pk, v) VALUES (?, ?)")
        for pk in range(10):
            session.execute(insert, (pk, f"v{pk}"))
        assert session.execute("SELECT count(*) FROM tls_only_ks.t").one()[0] == 10
    finally:
        cluster.shutdown()
    # The console's own session speaks TLS too.
    rows = emu.command("cql SELECT count(*) FROM tls_only_ks.t")
    assert rows == ["count = 10", "ok 1 row"], rows
