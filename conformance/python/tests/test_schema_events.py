"""Schema changes made through one Cluster reach another Cluster's metadata through the
server's SCHEMA_CHANGE events, without reconnecting."""

from support import unique_name, wait_until

TIMEOUT = 30


def test_changes_through_one_session_show_up_in_another_cluster(emulator, new_cluster):
    writer_cluster, writer = new_cluster(emulator)
    watcher, _ = new_cluster(emulator)
    control = watcher.control_connection._connection

    def keyspace_meta(name):
        return watcher.metadata.keyspaces.get(name)

    ks = unique_name("events")
    writer.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                   "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3} "
                   "AND tablets = {'enabled': false}")
    wait_until(lambda: keyspace_meta(ks), TIMEOUT, "the keyspace")
    assert keyspace_meta(ks).replication_strategy.dc_replication_factors == {"datacenter1": 3}

    writer.execute(f"CREATE TYPE {ks}.pair (a int, b text)")
    wait_until(lambda: "pair" in keyspace_meta(ks).user_types, TIMEOUT, "the type")

    writer.execute(f"CREATE TABLE {ks}.t (pk int PRIMARY KEY, v int)")
    wait_until(lambda: "t" in keyspace_meta(ks).tables, TIMEOUT, "the table")
    assert list(keyspace_meta(ks).tables["t"].columns) == ["pk", "v"]

    writer.execute(f"ALTER TABLE {ks}.t ADD p frozen<pair>")
    wait_until(lambda: "p" in keyspace_meta(ks).tables["t"].columns, TIMEOUT, "the new column")
    assert keyspace_meta(ks).tables["t"].columns["p"].cql_type == "frozen<pair>"

    # Two events: CREATED for the log, UPDATED for the base (in that order, as Scylla sends
    # them); the driver refreshes each on its own.
    writer.execute(f"ALTER TABLE {ks}.t WITH cdc = {{'enabled': true}}")
    wait_until(lambda: "t_scylla_cdc_log" in keyspace_meta(ks).tables, TIMEOUT, "the CDC log")
    wait_until(lambda: "cdc" in keyspace_meta(ks).tables["t"].extensions, TIMEOUT,
               "the cdc extension of the base table")

    writer.execute(f"ALTER TABLE {ks}.t DROP v")
    wait_until(lambda: "v" not in keyspace_meta(ks).tables["t"].columns, TIMEOUT,
               "the dropped column to go")
    wait_until(lambda: "cdc$deleted_v" not in keyspace_meta(ks).tables["t_scylla_cdc_log"].columns,
               TIMEOUT, "the dropped column to go from the log")

    writer.execute(f"DROP TABLE {ks}.t")
    wait_until(lambda: not keyspace_meta(ks).tables, TIMEOUT, "the table and its log to go")

    writer.execute(f"ALTER KEYSPACE {ks} WITH replication = "
                   "{'class': 'NetworkTopologyStrategy', 'replication_factor': 2}")
    wait_until(lambda: keyspace_meta(ks).replication_strategy.dc_replication_factors
               == {"datacenter1": 2}, TIMEOUT, "the new replication")

    writer.execute(f"DROP KEYSPACE {ks}")
    wait_until(lambda: keyspace_meta(ks) is None, TIMEOUT, "the keyspace to go")
    # All through the same control connection: nothing reconnected.
    assert watcher.control_connection._connection is control
    assert not control.is_defunct
