"""system_schema reads of the objects a case creates, and schema changes."""

from differ import Case, ddl, px, q

TABLE = ("CREATE TABLE @t (pk int, pk2 text, c1 int, c2 timeuuid, s text static, v map<int, text>, "
         "\"Quoted Col\" int, PRIMARY KEY ((pk, pk2), c1, c2)) "
         "WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND comment = 'hello'")

COLUMNS = ("SELECT column_name, clustering_order, column_name_bytes, kind, position, type "
           "FROM system_schema.columns WHERE keyspace_name = '@ks' AND table_name = '@tn'")

CASES = [
    Case("keyspace_rows", [
        ddl("CREATE KEYSPACE @ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} "
            "AND durable_writes = false"),
        q("SELECT * FROM system_schema.keyspaces WHERE keyspace_name = '@ks2'"),
        px("SELECT keyspace_name, durable_writes, replication FROM system_schema.keyspaces "
           "WHERE keyspace_name = ?", ["@ks2"]),
        ddl("ALTER KEYSPACE @ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}"),
        q("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = '@ks2'"),
        ddl("DROP KEYSPACE @ks2"),
        q("SELECT * FROM system_schema.keyspaces WHERE keyspace_name = '@ks2'"),
    ]),
    Case("keyspace_nts", [
        ddl("CREATE KEYSPACE @ks2 WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1}"),
        q("SELECT keyspace_name, durable_writes FROM system_schema.keyspaces WHERE keyspace_name = '@ks2'"),
        ddl("DROP KEYSPACE @ks2"),
    ]),
    Case("column_rows", [
        ddl(TABLE),
        q(COLUMNS),
        px("SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns "
           "WHERE keyspace_name = ? AND table_name = ?", ["@ks", "@tn"]),
    ]),
    Case("table_rows", [
        ddl(TABLE),
        q("SELECT keyspace_name, table_name, comment, default_time_to_live, gc_grace_seconds, flags "
          "FROM system_schema.tables WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
        px("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
           ["@ks", "@tn"]),
        q("SELECT count(*) FROM system_schema.tables WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
    ]),
    Case("type_rows", [
        ddl("CREATE TYPE @ks.@ut (a int, \"B\" text, c frozen<list<int>>)"),
        ddl("CREATE TYPE @ks.@ut2 (inner frozen<@ut>, m map<int, text>)"),
        q("SELECT type_name, field_names, field_types FROM system_schema.types "
          "WHERE keyspace_name = '@ks' AND type_name IN ('@ut', '@ut2')"),
        ddl("ALTER TYPE @ks.@ut ADD d bigint"),
        ddl("ALTER TYPE @ks.@ut RENAME a TO aa"),
        q("SELECT field_names, field_types FROM system_schema.types "
          "WHERE keyspace_name = '@ks' AND type_name = '@ut'"),
        ddl("DROP TYPE @ks.@ut", label="drop_used_type"),
        ddl("DROP TYPE @ks.@ut2"),
        ddl("DROP TYPE @ks.@ut"),
        q("SELECT * FROM system_schema.types WHERE keyspace_name = '@ks' AND type_name = '@ut'"),
    ]),
    Case("alter_table_columns", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, a int, b text)"),
        q("INSERT INTO @t (pk, a, b) VALUES (1, 1, 'x')"),
        ddl("ALTER TABLE @t ADD c list<int>"),
        ddl("ALTER TABLE @t ADD (d int, e text)"),
        ddl("ALTER TABLE @t DROP a"),
        q(COLUMNS),
        q("SELECT * FROM @t"),
        ddl("ALTER TABLE @t ADD a int", label="re_add_same_type"),
        q("SELECT pk, a FROM @t", label="dropped_data_stays_dropped"),
        q("SELECT column_name, type FROM system_schema.dropped_columns "
          "WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
    ]),
    Case("re_add_dropped_column_other_type", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, a int)"),
        ddl("ALTER TABLE @t DROP a"),
        ddl("ALTER TABLE @t ADD a text", label="re_add"),
    ]),
    Case("alter_table_options", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int)"),
        ddl("ALTER TABLE @t WITH comment = 'changed' AND default_time_to_live = 100 "
            "AND gc_grace_seconds = 3600"),
        q("SELECT comment, default_time_to_live, gc_grace_seconds FROM system_schema.tables "
          "WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
        ddl("ALTER TABLE @t RENAME pk TO id"),
        q("SELECT column_name FROM system_schema.columns WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
    ]),
    Case("drop_and_truncate", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int)"),
        q("INSERT INTO @t (pk, v) VALUES (1, 1)"),
        q("TRUNCATE @t"),
        q("SELECT * FROM @t"),
        q("INSERT INTO @t (pk, v) VALUES (2, 2)"),
        q("TRUNCATE TABLE @t"),
        q("SELECT * FROM @t"),
        ddl("DROP TABLE @t"),
        q("SELECT * FROM @t", label="after_drop"),
        q("SELECT * FROM system_schema.columns WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
    ]),
    Case("materialized_view_rows", [
        ddl("CREATE TABLE @t (pk int, ck int, v int, PRIMARY KEY (pk, ck))"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT * FROM @t WHERE v IS NOT NULL AND pk IS NOT NULL "
            "AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)"),
        q("SELECT keyspace_name, view_name, base_table_name, include_all_columns, where_clause "
          "FROM system_schema.views WHERE keyspace_name = '@ks' AND view_name = '@mv'"),
        q("SELECT column_name, kind, position, type FROM system_schema.columns "
          "WHERE keyspace_name = '@ks' AND table_name = '@mv'"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 10)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 5)"),
        q("SELECT * FROM @ks.@mv"),
        q("SELECT * FROM @ks.@mv WHERE v = 5"),
        ddl("DROP MATERIALIZED VIEW @ks.@mv"),
    ]),
    Case("functions_and_aggregates_tables", [
        q("SELECT * FROM system_schema.functions WHERE keyspace_name = '@ks'"),
        q("SELECT * FROM system_schema.aggregates WHERE keyspace_name = '@ks'"),
        q("SELECT keyspace_name, function_name, argument_types, return_type FROM system_schema.functions "
          "WHERE keyspace_name = '@ks'"),
    ]),
    Case("use_keyspace", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int)"),
        q("USE @ks"),
        q("INSERT INTO @tn (pk, v) VALUES (1, 1)"),
        q("SELECT * FROM @tn"),
        q("USE \"@ks\""),
        q("SELECT * FROM \"@tn\""),
    ]),
    Case("quoted_identifiers", [
        ddl("CREATE TABLE @t (\"Pk\" int, \"select\" int, \"with space\" text, \"Mixed\" int, mixed int, "
            "PRIMARY KEY (\"Pk\", \"select\"))"),
        q("INSERT INTO @t (\"Pk\", \"select\", \"with space\", \"Mixed\", mixed) VALUES (1, 2, 'x', 3, 4)"),
        q("SELECT * FROM @t"),
        q("SELECT \"Pk\", \"with space\", \"Mixed\", MIXED FROM @t"),
        q("SELECT Pk FROM @t", label="unquoted_upper"),
        q(COLUMNS.replace("\"Quoted Col\"", "")),
    ]),
]


def test_case(case, check):
    check(case)
