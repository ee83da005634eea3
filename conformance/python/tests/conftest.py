"""Fixtures: emulator processes, driver clusters and sessions, fresh keyspaces.

Every Cluster is created with the driver's defaults (schema and token metadata on, the
default token-aware load-balancing policy, compression negotiated if the server offers it),
except where a test says otherwise.
"""

import pytest
from cassandra.cluster import Cluster

from support import Emulator, unique_name


@pytest.fixture(scope="module")
def emulator():
    """A 3-node emulator shared by the tests of one module."""
    emu = Emulator(nodes=3)
    yield emu
    emu.stop()


@pytest.fixture
def new_emulator():
    """A factory of emulators private to one test (stopped after it)."""
    started = []

    def make(**kwargs):
        emu = Emulator(**kwargs)
        started.append(emu)
        return emu

    yield make
    for emu in started:
        emu.stop()


@pytest.fixture
def new_cluster():
    """A factory of connected driver clusters (shut down after the test)."""
    clusters = []

    def make(emu, **kwargs):
        cluster = Cluster([emu.host], port=emu.port, **kwargs)
        clusters.append(cluster)
        return cluster, cluster.connect()

    yield make
    for cluster in clusters:
        cluster.shutdown()


@pytest.fixture(scope="module")
def cluster(emulator):
    """A driver cluster with default options, connected to the module's emulator."""
    c = Cluster([emulator.host], port=emulator.port)
    c.connect()
    yield c
    c.shutdown()


@pytest.fixture(scope="module")
def session(cluster):
    return cluster.connect()


def create_keyspace(session, rf=3, name=None):
    """Creates a vnode keyspace (NetworkTopologyStrategy, one DC) and returns its name."""
    ks = name or unique_name("ks")
    session.execute(
        f"CREATE KEYSPACE {ks} WITH replication = "
        f"{{'class': 'NetworkTopologyStrategy', 'replication_factor': {rf}}} "
        "AND tablets = {'enabled': false}")
    return ks


@pytest.fixture
def keyspace(session):
    """A fresh RF 3 keyspace of the module's emulator."""
    return create_keyspace(session)
