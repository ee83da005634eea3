"""Errors: the driver's exception class and the CQL error code (and AlreadyExists' fields)."""

from differ import Case, ddl, px, q

TABLE = "CREATE TABLE @t (pk int, ck int, v int, t text, PRIMARY KEY (pk, ck))"

CASES = [
    Case("syntax_errors", [
        q("SELEC * FROM @t", label="typo"),
        q("SELECT * FROM", label="truncated"),
        q("SELECT * FROM @t WHERE", label="empty_where"),
        q("INSERT INTO @t (pk) VALUES (1", label="unclosed"),
        q("SELECT * FROM @t WHERE pk = 'unterminated", label="unterminated_string"),
        q("", label="empty_statement"),
        q("SELECT * FROM @t;;", label="double_semicolon"),
        q("CREATE TABLE (pk int PRIMARY KEY)", label="create_without_name"),
    ]),
    Case("unconfigured_objects", [
        q("SELECT * FROM @ks.no_such_table", label="table"),
        q("SELECT * FROM no_such_keyspace_x.t", label="keyspace"),
        q("INSERT INTO @ks.no_such_table (pk) VALUES (1)", label="insert"),
        q("USE no_such_keyspace_x", label="use"),
        ddl("DROP TABLE @ks.no_such_table", label="drop_table"),
        ddl("DROP KEYSPACE no_such_keyspace_x", label="drop_keyspace"),
        ddl("DROP TYPE @ks.no_such_type", label="drop_type"),
        ddl("DROP TABLE IF EXISTS @ks.no_such_table", label="drop_table_if_exists"),
        ddl("DROP KEYSPACE IF EXISTS no_such_keyspace_x", label="drop_keyspace_if_exists"),
        q("TRUNCATE @ks.no_such_table", label="truncate"),
    ]),
    Case("already_exists", [
        ddl(TABLE),
        ddl(TABLE, label="table"),
        ddl("CREATE TABLE IF NOT EXISTS @t (pk int PRIMARY KEY)", label="table_if_not_exists"),
        ddl("CREATE KEYSPACE @ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            label="keyspace"),
        ddl("CREATE TYPE @ks.@ut (a int)"),
        ddl("CREATE TYPE @ks.@ut (a int)", label="type"),
        ddl("CREATE TYPE IF NOT EXISTS @ks.@ut (b int)", label="type_if_not_exists"),
        ddl("ALTER TABLE @t ADD v int", label="column"),
    ]),
    Case("type_mismatch", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'text')", label="text_for_int"),
        q("INSERT INTO @t (pk, ck, t) VALUES (1, 1, 5)", label="int_for_text"),
        q("INSERT INTO @t (pk, ck, v) VALUES ('a', 1, 1)", label="text_for_key"),
        q("SELECT * FROM @t WHERE pk = 'a'", label="where_text_for_int"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, [1])", label="list_for_int"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, {1: 2})", label="map_for_int"),
        q("UPDATE @t SET v = v + 1 WHERE pk = 1 AND ck = 1", label="increment_non_counter"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, true)", label="bool_for_int"),
    ]),
    Case("missing_key_parts", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, v) VALUES (1, 1)", label="insert_without_ck"),
        q("INSERT INTO @t (ck, v) VALUES (1, 1)", label="insert_without_pk"),
        q("UPDATE @t SET v = 1 WHERE pk = 1", label="update_without_ck"),
        q("UPDATE @t SET v = 1 WHERE ck = 1", label="update_without_pk"),
        q("DELETE v FROM @t WHERE pk = 1", label="delete_column_without_ck"),
        q("DELETE FROM @t WHERE ck = 1", label="delete_without_pk"),
        q("UPDATE @t SET v = 1 WHERE pk = 1 AND ck > 1", label="update_slice"),
        q("UPDATE @t SET pk = 2 WHERE pk = 1 AND ck = 1", label="update_key_column"),
    ]),
    Case("unknown_identifiers", [
        ddl(TABLE),
        q("SELECT nosuch FROM @t", label="select_column"),
        q("SELECT * FROM @t WHERE nosuch = 1 ALLOW FILTERING", label="where_column"),
        q("INSERT INTO @t (pk, ck, nosuch) VALUES (1, 1, 1)", label="insert_column"),
        q("UPDATE @t SET nosuch = 1 WHERE pk = 1 AND ck = 1", label="update_column"),
        q("SELECT nosuchfunction(v) FROM @t", label="function"),
        q("INSERT INTO @t (pk, ck, v, v) VALUES (1, 1, 1, 2)", label="duplicate_column"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1)", label="fewer_values"),
    ]),
    Case("ddl_errors", [
        ddl("CREATE TABLE @t (pk int, v int)", label="no_primary_key"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int, v text)", label="duplicate_column"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v nosuchtype)", label="unknown_type"),
        ddl("CREATE TABLE @t (pk list<int> PRIMARY KEY)", label="non_frozen_key"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, PRIMARY KEY (pk))", label="two_primary_keys"),
        ddl("CREATE TABLE @t (pk int, ck int, PRIMARY KEY (pk, nosuch))", label="unknown_key_column"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY) WITH nosuchoption = 1", label="unknown_option"),
        ddl("CREATE TABLE @t (pk int, ck int, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (pk DESC)",
            label="order_by_partition_key"),
        ddl("CREATE KEYSPACE @ks2 WITH replication = {'class': 'NoSuchStrategy'}", label="bad_strategy"),
        ddl("CREATE KEYSPACE @ks2 WITH replication = {'class': 'SimpleStrategy'}", label="no_rf"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, s int static)", label="static_without_ck"),
    ]),
    Case("alter_errors", [
        ddl(TABLE),
        ddl("ALTER TABLE @t DROP pk", label="drop_key"),
        ddl("ALTER TABLE @t DROP nosuch", label="drop_unknown"),
        ddl("ALTER TABLE @t ALTER v TYPE text", label="alter_type"),
        ddl("ALTER TABLE @t RENAME v TO w", label="rename_regular"),
        ddl("ALTER TABLE @t ADD pk text", label="add_existing_key"),
    ]),
    Case("invalid_values", [
        ddl(TABLE),
        q("SELECT * FROM @t WHERE pk = 1 AND ck = 1 AND ck = 2", label="ck_twice"),
        q("INSERT INTO @t (pk, ck, t) VALUES (1, 1, textAsBlob('x'))", label="blob_for_text"),
        px("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?)", [1, 2**40, 1], label="bound_overflow"),
        q("SELECT * FROM @t WHERE pk = 1 AND ck IN (1, 2) AND ck = 1", label="in_and_eq"),
        q("SELECT DISTINCT v FROM @t", label="distinct_regular"),
        q("SELECT DISTINCT ck FROM @t", label="distinct_clustering"),
    ]),
]


def test_case(case, check):
    check(case)
