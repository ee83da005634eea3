"""`cluster.metadata`: keyspaces, tables, columns with their kinds and clustering order, user
types, and the CDC log table of a table with CDC, as the driver builds them from
`system_schema`; materialized views with their base."""

import pytest

from conftest import create_keyspace
from support import wait_until


@pytest.fixture(scope="module")
def schema(session):
    ks = create_keyspace(session, rf=3)
    session.execute(f"CREATE TYPE {ks}.address (street text, zip int)")
    session.execute(f"CREATE TYPE {ks}.person (name text, home frozen<address>, "
                    "nicknames frozen<list<text>>)")
    session.execute(
        f"CREATE TABLE {ks}.t (pk int, ck1 text, ck2 bigint, s int static, v person, "
        "l list<int>, m map<text, frozen<address>>, tp tuple<int, text>, \"Quoted\" blob, "
        "PRIMARY KEY (pk, ck1, ck2)) WITH CLUSTERING ORDER BY (ck1 DESC, ck2 ASC) "
        "AND cdc = {'enabled': true} AND comment = 'with cdc' AND default_time_to_live = 7")
    session.execute(
        f"CREATE TABLE {ks}.composite (a uuid, b text, c timestamp, v set<text>, "
        "PRIMARY KEY ((a, b), c))")
    # The driver refreshes the table a DDL statement names when the statement completes; the
    # CDC log table, created by the same statement, arrives through the SCHEMA_CHANGE event
    # the server pushes for it.
    wait_until(lambda: "t_scylla_cdc_log" in session.cluster.metadata.keyspaces[ks].tables,
               30, "the CDC log table in the driver's metadata")
    return ks


def test_keyspace(cluster, schema):
    ks = cluster.metadata.keyspaces[schema]
    assert ks.durable_writes is True
    strategy = ks.replication_strategy
    assert type(strategy).__name__ == "NetworkTopologyStrategy"
    assert strategy.dc_replication_factors == {"datacenter1": 3}
    assert set(ks.tables) == {"t", "t_scylla_cdc_log", "composite"}
    assert ks.views == {}
    assert ks.functions == {} and ks.aggregates == {}
    cql = ks.export_as_string()
    assert f"CREATE KEYSPACE {schema} WITH replication" in cql
    assert f"CREATE TABLE {schema}.t (" in cql


def test_user_types(cluster, schema):
    types = cluster.metadata.keyspaces[schema].user_types
    assert set(types) == {"address", "person"}
    assert types["address"].field_names == ["street", "zip"]
    assert types["address"].field_types == ["text", "int"]
    assert types["person"].field_names == ["name", "home", "nicknames"]
    assert types["person"].field_types == ["text", "frozen<address>", "frozen<list<text>>"]


def test_columns_kinds_and_clustering_order(cluster, schema):
    t = cluster.metadata.keyspaces[schema].tables["t"]
    assert t._exc_info is None
    assert [c.name for c in t.partition_key] == ["pk"]
    assert [c.name for c in t.clustering_key] == ["ck1", "ck2"]
    assert [c.is_reversed for c in t.clustering_key] == [True, False]
    assert not t.is_compact_storage
    columns = {name: (c.cql_type, c.is_static) for name, c in t.columns.items()}
    assert columns == {
        "pk": ("int", False),
        "ck1": ("text", False),
        "ck2": ("bigint", False),
        "s": ("int", True),
        "v": ("person", False),
        "l": ("list<int>", False),
        "m": ("map<text, frozen<address>>", False),
        "tp": ("frozen<tuple<int, text>>", False),
        "Quoted": ("blob", False),
    }
    # Key columns first, in key order, then the others by name.
    assert list(t.columns)[:3] == ["pk", "ck1", "ck2"]
    assert t.options["comment"] == "with cdc"
    assert t.options["default_time_to_live"] == 7
    assert "cdc" in t.extensions
    cql = t.export_as_string()
    assert "WITH CLUSTERING ORDER BY (ck1 DESC, ck2 ASC)" in cql
    assert "s int static" in cql

    composite = cluster.metadata.keyspaces[schema].tables["composite"]
    assert [c.name for c in composite.partition_key] == ["a", "b"]
    assert [c.name for c in composite.clustering_key] == ["c"]
    assert composite.columns["v"].cql_type == "set<text>"


def test_cdc_log_table(cluster, schema):
    log = cluster.metadata.keyspaces[schema].tables["t_scylla_cdc_log"]
    assert log._exc_info is None
    assert [c.name for c in log.partition_key] == ["cdc$stream_id"]
    assert [c.name for c in log.clustering_key] == ["cdc$time", "cdc$batch_seq_no"]
    types = {name: c.cql_type for name, c in log.columns.items()}
    expected = {
        "cdc$stream_id": "blob",
        "cdc$time": "timeuuid",
        "cdc$batch_seq_no": "int",
        "cdc$operation": "tinyint",
        "cdc$ttl": "bigint",
        "cdc$end_of_batch": "boolean",
        # Base key columns keep their types; the static and regular columns are logged
        # frozen, with a cdc$deleted_ flag each, and the non-frozen collections and UDTs with
        # their deleted elements (Scylla's cdc/log.cc).
        "pk": "int",
        "ck1": "text",
        "ck2": "bigint",
        "s": "int",
        "cdc$deleted_s": "boolean",
        "v": "frozen<person>",
        "cdc$deleted_v": "boolean",
        "cdc$deleted_elements_v": "frozen<set<smallint>>",
        "l": "frozen<map<timeuuid, int>>",
        "cdc$deleted_l": "boolean",
        "cdc$deleted_elements_l": "frozen<set<timeuuid>>",
        "m": "frozen<map<text, frozen<address>>>",
        "cdc$deleted_m": "boolean",
        "cdc$deleted_elements_m": "frozen<set<text>>",
        "tp": "frozen<tuple<int, text>>",
        "cdc$deleted_tp": "boolean",
        "Quoted": "blob",
        "cdc$deleted_Quoted": "boolean",
    }
    assert types == expected
    assert log.options["comment"] == f"CDC log for {schema}.t"
    assert log.options["gc_grace_seconds"] == 0
    assert [c.is_reversed for c in log.clustering_key] == [False, False]


def test_system_schema_tables_are_described(cluster):
    """Every system_schema table Scylla has shows up with its key columns."""
    tables = cluster.metadata.keyspaces["system_schema"].tables
    expected_keys = {
        "keyspaces": (["keyspace_name"], []),
        "scylla_keyspaces": (["keyspace_name"], []),
        "tables": (["keyspace_name"], ["table_name"]),
        "scylla_tables": (["keyspace_name"], ["table_name"]),
        "columns": (["keyspace_name"], ["table_name", "column_name"]),
        "view_virtual_columns": (["keyspace_name"], ["table_name", "column_name"]),
        "computed_columns": (["keyspace_name"], ["table_name", "column_name"]),
        "dropped_columns": (["keyspace_name"], ["table_name", "column_name"]),
        "triggers": (["keyspace_name"], ["table_name", "trigger_name"]),
        "views": (["keyspace_name"], ["view_name"]),
        "indexes": (["keyspace_name"], ["table_name", "index_name"]),
        "types": (["keyspace_name"], ["type_name"]),
        "functions": (["keyspace_name"], ["function_name", "argument_types"]),
        "aggregates": (["keyspace_name"], ["aggregate_name", "argument_types"]),
        "scylla_aggregates": (["keyspace_name"], ["aggregate_name", "argument_types"]),
    }
    got = {name: ([c.name for c in t.partition_key], [c.name for c in t.clustering_key])
           for name, t in tables.items()}
    assert got == expected_keys
    assert tables["functions"].columns["argument_types"].cql_type == "frozen<list<text>>"


def test_materialized_view(cluster, session):
    ks = create_keyspace(session, rf=1)
    session.execute(f"CREATE TABLE {ks}.base (pk int, ck int, v text, w int, "
                    "PRIMARY KEY (pk, ck))")
    session.execute(
        f"CREATE MATERIALIZED VIEW {ks}.by_v AS SELECT pk, ck, v FROM {ks}.base "
        "WHERE v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, pk, ck) "
        "WITH CLUSTERING ORDER BY (pk DESC) AND comment = 'by v'")
    meta = wait_until(lambda: cluster.metadata.keyspaces[ks].views.get("by_v"), 30,
                      "the view in the driver's metadata")
    assert meta.base_table_name == "base"
    assert meta.include_all_columns is False
    assert meta.where_clause == "v IS NOT NULL AND pk IS NOT NULL AND ck IS NOT NULL"
    assert [c.name for c in meta.partition_key] == ["v"]
    assert [c.name for c in meta.clustering_key] == ["pk", "ck"]
    assert [c.is_reversed for c in meta.clustering_key] == [True, False]
    assert {n: c.cql_type for n, c in meta.columns.items()} == {
        "v": "text", "pk": "int", "ck": "int"}
    assert meta.options["comment"] == "by v"
    keyspace = cluster.metadata.keyspaces[ks]
    assert set(keyspace.tables) == {"base"}
    assert set(keyspace.tables["base"].views) == {"by_v"}
    assert f"CREATE MATERIALIZED VIEW {ks}.by_v AS" in keyspace.export_as_string()
    # Rows written to the base are read from the view.
    session.execute(f"INSERT INTO {ks}.base (pk, ck, v, w) VALUES (1, 2, 'x', 3)")
    assert list(session.execute(f"SELECT v, pk, ck FROM {ks}.by_v")) == [("x", 1, 2)]
    session.execute(f"DROP MATERIALIZED VIEW {ks}.by_v")
    wait_until(lambda: "by_v" not in cluster.metadata.keyspaces[ks].views, 30,
               "the view gone from the driver's metadata")
    assert cluster.metadata.keyspaces[ks].tables["base"].views == {}
