"""`DESCRIBE KEYSPACE` (server-side, as Scylla implements it) re-executes: its statements,
run in order on a fresh cluster, recreate the same `system_schema` rows."""

from conftest import create_keyspace

SCHEMA = [
    "CREATE TYPE {ks}.address (street text, \"Zip\" int, tags frozen<set<text>>)",
    "CREATE TYPE {ks}.person (name text, home frozen<address>, phones frozen<list<text>>)",
    "CREATE TABLE {ks}.t (pk int, ck1 text, ck2 timeuuid, s int static, v person, "
    "l list<int>, m map<text, frozen<address>>, tp tuple<int, text>, \"Quoted\" blob, "
    "PRIMARY KEY ((pk), ck1, ck2)) WITH CLUSTERING ORDER BY (ck1 DESC, ck2 ASC) "
    "AND cdc = {{'enabled': true, 'preimage': true, 'ttl': 3600}} AND comment = 'it''s t' "
    "AND default_time_to_live = 60 AND gc_grace_seconds = 3600",
    "CREATE TABLE {ks}.counts (a text, b bigint, n counter, PRIMARY KEY ((a, b)))",
    "CREATE TABLE {ks}.\"Mixed\" (\"Key\" text PRIMARY KEY, value frozen<map<int, text>>)",
]

# Columns that differ between two clusters with the same schema: table ids and versions.
IGNORED = {"id", "version"}

SCHEMA_TABLES = ["keyspaces", "scylla_keyspaces", "tables", "scylla_tables", "columns",
                 "dropped_columns", "types", "views", "indexes", "triggers", "functions",
                 "aggregates", "computed_columns", "view_virtual_columns"]


def schema_rows(session, ks):
    """Every system_schema row of keyspace `ks`, by table, without the ignored columns."""
    rows = {}
    for table in SCHEMA_TABLES:
        result = session.execute(
            f"SELECT * FROM system_schema.{table} WHERE keyspace_name = %s", (ks,))
        rows[table] = sorted(
            (tuple(sorted((k, repr(v)) for k, v in r._asdict().items() if k not in IGNORED))
             for r in result))
    return rows


def test_describe_keyspace_statements_recreate_the_schema(session, new_emulator, new_cluster):
    ks = create_keyspace(session, rf=3)
    for statement in SCHEMA:
        session.execute(statement.format(ks=ks))

    described = list(session.execute(f"DESCRIBE KEYSPACE {ks}"))
    assert described, "DESCRIBE KEYSPACE returned no rows"
    assert described[0].keyspace_name == ks and described[0].type == "keyspace"
    statements = [row.create_statement for row in described]
    assert any(s.startswith(f"CREATE TABLE {ks}.t ") for s in statements), statements

    fresh = new_emulator(nodes=3)
    _, fresh_session = new_cluster(fresh)
    for statement in statements:
        fresh_session.execute(statement)

    original = schema_rows(session, ks)
    recreated = schema_rows(fresh_session, ks)
    for table in SCHEMA_TABLES:
        assert recreated[table] == original[table], f"system_schema.{table}"
    assert original["tables"] and original["columns"] and original["types"]
