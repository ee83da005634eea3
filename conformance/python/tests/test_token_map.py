"""The driver's token map against the cluster's replicas, on a 3-node cluster.

The expected replicas are computed here, not by the driver's token map: from the tokens every
node reports in `system.local` (each node asked directly) and the Murmur3 token of the key
(the driver's `Murmur3Token`), walking the ring clockwise from the key's token as Scylla's
NetworkTopologyStrategy does on one rack of one datacenter. Then the cluster itself is asked:
with a replica stopped, a read at consistency ALL of that key must be Unavailable, and with a
non-replica stopped it must succeed.
"""

import bisect
import struct

import pytest
from cassandra import ConsistencyLevel, Unavailable
from cassandra.metadata import Murmur3Token
from cassandra.query import SimpleStatement

from conftest import create_keyspace

KEYS = range(0, 300, 7)


def ring_from_system_tables(session, cluster):
    """[(token, address)] sorted by token, from each node's own system.local."""
    ring = []
    for host in cluster.metadata.all_hosts():
        row = session.execute(
            "SELECT rpc_address, tokens FROM system.local WHERE key = 'local'",
            host=host).one()
        assert row.rpc_address == host.address
        ring.extend((int(t), host.address) for t in row.tokens)
    # And the peers as one node sees them agree with what each says about itself.
    some_host = next(iter(cluster.metadata.all_hosts()))
    for peer in session.execute("SELECT peer, rpc_address, tokens FROM system.peers",
                                host=some_host):
        assert peer.peer == peer.rpc_address
        assert {(int(t), peer.rpc_address) for t in peer.tokens} <= set(ring)
    ring.sort()
    return ring


def expected_replicas(ring, token, rf):
    """The first `rf` distinct nodes from the first ring token >= `token`, wrapping."""
    tokens = [t for t, _ in ring]
    start = bisect.bisect_left(tokens, token)
    replicas = []
    for i in range(len(ring)):
        address = ring[(start + i) % len(ring)][1]
        if address not in replicas:
            replicas.append(address)
        if len(replicas) == rf:
            break
    return replicas


def key_bytes(pk):
    return struct.pack(">i", pk)


@pytest.mark.parametrize("rf", [1, 2, 3])
def test_driver_replicas_match_the_ring(emulator, new_cluster, rf):
    cluster, session = new_cluster(emulator)
    ks = create_keyspace(session, rf=rf)
    session.execute(f"CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)")
    ring = ring_from_system_tables(session, cluster)
    assert len(ring) == 3 * 16
    primaries = set()
    for pk in KEYS:
        key = key_bytes(pk)
        token = Murmur3Token.from_key(key).value
        expected = expected_replicas(ring, token, rf)
        got = [h.address for h in cluster.metadata.get_replicas(ks, key)]
        assert sorted(got) == sorted(expected), (pk, token)
        # The driver lists the primary replica (the token's owner) first.
        assert got[0] == expected[0], (pk, token)
        primaries.add(expected[0])
    assert primaries == set(emulator.addresses), "the sample covers every node"


@pytest.mark.parametrize("rf", [1, 2])
def test_stopping_a_replica_makes_exactly_its_keys_unavailable(new_emulator, new_cluster, rf):
    emu = new_emulator(nodes=3)
    cluster, session = new_cluster(emu)
    ks = create_keyspace(session, rf=rf)
    session.execute(f"CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.t (pk, v) VALUES (?, ?)")
    for pk in KEYS:
        session.execute(insert, (pk, pk))
    replicas = {pk: {h.address for h in cluster.metadata.get_replicas(ks, key_bytes(pk))}
                for pk in KEYS}
    assert all(len(r) == rf for r in replicas.values())

    stopped = emu.addresses[2]
    emu.command(f"stop-node {emu.node_index(stopped)}")
    # The driver may not know yet that the node is down (it discounts a DOWN event while it
    # still counts open connections to the node): a request sent to it fails with a closed
    # connection and, being idempotent, is retried on another coordinator.
    select = SimpleStatement(f"SELECT v FROM {ks}.t WHERE pk = %s",
                             consistency_level=ConsistencyLevel.ALL, is_idempotent=True)
    unavailable, available = [], []
    for pk in KEYS:
        try:
            assert session.execute(select, (pk,)).one().v == pk
            available.append(pk)
        except Unavailable:
            unavailable.append(pk)
    assert unavailable == [pk for pk in KEYS if stopped in replicas[pk]]
    assert available == [pk for pk in KEYS if stopped not in replicas[pk]]
    assert unavailable and available
