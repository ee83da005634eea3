"""Frame compression: the driver asks for lz4 or snappy (Scylla offers both in SUPPORTED) and
every request and response of the session is compressed."""

import pytest
from cassandra import connection as driver_connection

from conftest import create_keyspace


@pytest.mark.parametrize("algorithm", ["lz4", "snappy"])
def test_compressed_session(emulator, new_cluster, algorithm):
    # The driver has the codec (lz4 and python-snappy are installed by requirements.txt).
    assert algorithm in driver_connection.locally_supported_compressions
    cluster, session = new_cluster(emulator, compression=algorithm)
    # The control connection negotiated the codec in its STARTUP.
    control = cluster.control_connection._connection
    assert control._compression_type == algorithm, \
        f"the server did not accept {algorithm} compression"
    assert control.compressor is not None

    ks = create_keyspace(session, rf=1)
    session.execute(f"CREATE TABLE {ks}.t (pk int PRIMARY KEY, v text)")
    insert = session.prepare(f"INSERT INTO {ks}.t (pk, v) VALUES (?, ?)")
    # Large, compressible values, and small ones.
    values = {pk: ("abc" * (pk * 1000)) for pk in range(1, 20)}
    values[0] = ""
    for pk, v in values.items():
        session.execute(insert, (pk, v))
    rows = {r.pk: r.v for r in session.execute(f"SELECT pk, v FROM {ks}.t")}
    assert rows == values

    # Every pooled connection compresses too.
    for pool in session._pools.values():
        for conn in pool._connections.values():
            assert conn._compression_type == algorithm
