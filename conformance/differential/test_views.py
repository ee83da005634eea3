"""Materialized views: maintenance on every kind of base write,
reads (paging, restrictions), timestamps and TTLs carried from the base, and the errors."""

from differ import Case, ddl, in_range, pages, q, view_built

TABLE = "CREATE TABLE @t (pk int, ck int, v int, w text, PRIMARY KEY (pk, ck))"
VIEW = ("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT * FROM @t WHERE v IS NOT NULL "
        "AND pk IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)")
ALL = "SELECT * FROM @ks.@mv"

CASES = [
    # Building a view from the rows its base already has is asynchronous on both servers
    # (Cassandra's and Scylla's view builders): a case that creates a view over existing rows
    # waits for system.built_views to list it before reading it (view_built).
    Case("maintenance_on_update_and_delete", [
        ddl(TABLE),
        ddl(VIEW),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (1, 1, 10, 'a')"),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (1, 2, 20, 'b')"),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (1, 3, 30, 'c')"),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (2, 1, 40, 'd')"),
        q("UPDATE @t SET w = 'a2' WHERE pk = 1 AND ck = 1"),
        q(ALL, label="update_other_column"),
        q("UPDATE @t SET v = 11 WHERE pk = 1 AND ck = 1"),
        q(ALL, label="key_change_moves_row"),
        q("DELETE w FROM @t WHERE pk = 1 AND ck = 2"),
        q(ALL, label="delete_other_column"),
        q("DELETE v FROM @t WHERE pk = 1 AND ck = 2"),
        q(ALL, label="delete_key_column"),
        q("DELETE FROM @t WHERE pk = 1 AND ck = 1"),
        q(ALL, label="delete_row"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 4, 50)"),
        q("DELETE FROM @t WHERE pk = 1 AND ck >= 3"),
        q(ALL, label="delete_range"),
        q("DELETE FROM @t WHERE pk = 2"),
        q(ALL, label="delete_partition"),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (3, 1, 60); "
          "INSERT INTO @t (pk, ck, v) VALUES (3, 2, 61); APPLY BATCH"),
        q(ALL, label="batch"),
    ]),
    Case("timestamps_and_ttls_from_the_base", [
        ddl(TABLE),
        ddl(VIEW),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (1, 1, 10, 'a') USING TIMESTAMP 1000"),
        q("UPDATE @t USING TIMESTAMP 2000 SET w = 'b' WHERE pk = 1 AND ck = 1"),
        q("SELECT w, writetime(w) FROM @ks.@mv", label="writetime"),
        q("UPDATE @t USING TIMESTAMP 500 SET v = 99 WHERE pk = 1 AND ck = 1", label="older_key"),
        q(ALL, label="older_key_loses"),
        q("INSERT INTO @t (pk, ck, v, w) VALUES (2, 1, 20, 'x') USING TTL 1000"),
        q("SELECT v, ttl(w) FROM @ks.@mv WHERE v = 20", mask={1: in_range(990, 1000)}),
    ]),
    Case("paging_and_restrictions", [
        ddl(TABLE),
        *[q(f"INSERT INTO @t (pk, ck, v) VALUES ({pk}, {ck}, {(pk + ck) % 3})")
          for pk in range(4) for ck in range(3)],
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT pk, ck, v FROM @t WHERE v IS NOT NULL "
            "AND pk IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, ck, pk) "
            "WITH CLUSTERING ORDER BY (ck DESC, pk ASC)"),
        view_built(),
        pages("SELECT * FROM @ks.@mv", 5),
        q("SELECT * FROM @ks.@mv WHERE v = 1 AND ck = 2", label="key_restriction"),
        q("SELECT * FROM @ks.@mv WHERE v = 0 AND ck < 2", label="slice"),
    ]),
    Case("view_errors", [
        ddl("CREATE TABLE @t (pk int, ck int, v int, w int, s int static, PRIMARY KEY (pk, ck))"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT pk, ck FROM @t WHERE pk IS NOT NULL "
            "AND v IS NOT NULL PRIMARY KEY (v, pk)", label="missing_base_key_column"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT pk, ck FROM @t WHERE pk IS NOT NULL "
            "AND ck IS NOT NULL AND v IS NOT NULL AND w IS NOT NULL PRIMARY KEY ((v, w), pk, ck)",
            label="two_non_key_columns"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT pk, ck FROM @t WHERE pk IS NOT NULL "
            "PRIMARY KEY (pk, ck)", label="no_is_not_null"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT * FROM @t WHERE pk IS NOT NULL "
            "AND ck IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, pk, ck)", label="static_selected"),
        ddl("CREATE MATERIALIZED VIEW @ks.@mv AS SELECT pk, ck, v FROM @t WHERE pk IS NOT NULL "
            "AND ck IS NOT NULL AND v IS NOT NULL PRIMARY KEY (v, pk, ck)"),
        q("INSERT INTO @ks.@mv (v, pk, ck) VALUES (1, 1, 1)", label="write_to_view"),
        ddl("DROP TABLE @t", label="drop_base_with_view"),
        ddl("DROP TABLE @ks.@mv", label="drop_table_on_view"),
        ddl("ALTER MATERIALIZED VIEW @ks.@mv WITH comment = 'hi'"),
        q("SELECT view_name, comment FROM system_schema.views WHERE keyspace_name = '@ks' "
          "AND view_name = '@mv'",
          label="altered"),
        ddl("DROP MATERIALIZED VIEW @ks.@mv"),
        ddl("DROP MATERIALIZED VIEW IF EXISTS @ks.@mv", label="drop_if_exists"),
        q("SELECT view_name FROM system_schema.views WHERE keyspace_name = '@ks' "
          "AND view_name = '@mv'",
          label="dropped"),
    ]),
]


def test_case(case, check):
    check(case)
