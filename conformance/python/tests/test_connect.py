"""Connecting with the driver's default options: topology, schema metadata, token map, pools,
and requests routed to the replica's shard."""

import struct

from cassandra.cluster import Cluster
from cassandra.metadata import Murmur3Token
from cassandra.policies import TokenAwarePolicy

from conftest import create_keyspace
from support import wait_until


def shard_of(token, shards, ignore_msb=12):
    """Scylla's biased-token-round-robin sharder (`dht::sharder`), computed here from its
    definition, not by the driver: unbias the token, drop `ignore_msb` high bits, and scale
    the remaining 64-bit fraction to the shard count."""
    unbiased = (token + (1 << 63)) & ((1 << 64) - 1)
    shifted = (unbiased << ignore_msb) & ((1 << 64) - 1)
    return (shifted * shards) >> 64


def test_connect_with_default_options(emulator):
    cluster = Cluster([emulator.host], port=emulator.port)
    try:
        session = cluster.connect()
        # The driver settles on protocol v4, the newest Scylla speaks.
        assert cluster.protocol_version == 4
        policy = cluster.profile_manager.default.load_balancing_policy
        assert isinstance(policy, TokenAwarePolicy)

        metadata = cluster.metadata
        hosts = metadata.all_hosts()
        assert sorted(h.address for h in hosts) == sorted(emulator.addresses)
        assert all(h.is_up for h in hosts)
        assert {h.datacenter for h in hosts} == {"datacenter1"}
        assert {h.rack for h in hosts} == {"rack1"}
        assert len({h.host_id for h in hosts}) == 3
        assert metadata.partitioner == "org.apache.cassandra.dht.Murmur3Partitioner"

        # The schema metadata was built without errors, system keyspaces included.
        for ks in ("system", "system_schema", "system_distributed", "system_traces"):
            assert ks in metadata.keyspaces, ks
        assert "local" in metadata.keyspaces["system"].tables
        assert "functions" in metadata.keyspaces["system_schema"].tables
        for ks in metadata.keyspaces.values():
            for table in ks.tables.values():
                assert table._exc_info is None, f"{ks.name}.{table.name}: {table._exc_info}"
                assert table.partition_key, f"{ks.name}.{table.name} has a partition key"

        # The token map: 16 vnodes per node (the emulator's default).
        assert metadata.token_map is not None
        assert len(metadata.token_map.ring) == 3 * 16
        owners = set(metadata.token_map.token_to_host_owner.values())
        assert {h.address for h in owners} == set(emulator.addresses)

        # A shard-aware pool per host: one connection per shard.
        def pools_full():
            state = session.get_pool_state()
            return len(state) == 3 and all(
                s["open_count"] >= emulator.shards for s in state.values())
        wait_until(pools_full, 30, "a connection to every shard of every host")

        row = session.execute(
            "SELECT cluster_name, release_version, partitioner FROM system.local "
            "WHERE key = 'local'").one()
        assert row.release_version == "3.0.8"
        assert row.partitioner == metadata.partitioner
        assert row.cluster_name == metadata.cluster_name
    finally:
        cluster.shutdown()


def test_prepared_requests_go_to_the_replica_shard(emulator, new_cluster):
    cluster, session = new_cluster(emulator)
    ks = create_keyspace(session, rf=1)
    session.execute(f"CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.t (pk, v) VALUES (?, ?)")
    select = session.prepare(f"SELECT v FROM {ks}.t WHERE pk = ?")
    wait_until(lambda: all(s["open_count"] >= emulator.shards
                           for s in session.get_pool_state().values()),
               30, "a connection to every shard")

    reads = 40
    for pk in range(6):
        key = struct.pack(">i", pk)
        token = Murmur3Token.from_key(key).value
        replicas = cluster.metadata.get_replicas(ks, key)
        assert len(replicas) == 1
        node = emulator.node_index(replicas[0].address)
        shard = shard_of(token, emulator.shards)

        session.execute(insert, (pk, pk * 10))
        before = emulator.stats()
        for _ in range(reads):
            assert session.execute(select, (pk,)).one().v == pk * 10
        after = emulator.stats()
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        assert delta.get((node, shard), 0) >= reads, (pk, node, shard, delta)
        elsewhere = sum(n for k, n in delta.items() if k != (node, shard))
        # Only the driver's own background requests (heartbeats) may land elsewhere.
        assert elsewhere < reads // 4, (pk, node, shard, delta)
