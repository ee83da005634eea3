"""Counter tables."""

from differ import Case, ddl, is_recent_micros, p, px, q

TABLE = "CREATE TABLE @t (pk int, ck int, a counter, b counter, PRIMARY KEY (pk, ck))"

CASES = [
    Case("increment_decrement", [
        ddl(TABLE),
        q("UPDATE @t SET a = a + 1 WHERE pk = 1 AND ck = 1"),
        q("UPDATE @t SET a = a + 5, b = b - 3 WHERE pk = 1 AND ck = 1"),
        q("UPDATE @t SET b = b + -2 WHERE pk = 1 AND ck = 2"),
        q("UPDATE @t SET a = a - -9223372036854775807 WHERE pk = 2 AND ck = 1"),
        q("SELECT * FROM @t"),
        q("SELECT sum(a), max(b) FROM @t"),
    ]),
    Case("counter_prepared", [
        ddl(TABLE),
        p("UPDATE @t SET a = a + ? WHERE pk = ? AND ck = ?"),
        px("UPDATE @t SET a = a + ? WHERE pk = ? AND ck = ?", [7, 1, 1]),
        px("UPDATE @t SET a = a - ? WHERE pk = ? AND ck = ?", [2, 1, 1]),
        px("SELECT a, b FROM @t WHERE pk = ? AND ck = ?", [1, 1]),
    ]),
    Case("counter_delete", [
        ddl(TABLE),
        q("UPDATE @t SET a = a + 1, b = b + 1 WHERE pk = 1 AND ck = 1"),
        q("DELETE a FROM @t WHERE pk = 1 AND ck = 1"),
        q("SELECT * FROM @t"),
        q("DELETE FROM @t WHERE pk = 1"),
        q("SELECT * FROM @t"),
    ]),
    Case("counter_errors", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, a) VALUES (1, 1, 1)", label="insert"),
        q("UPDATE @t SET a = 5 WHERE pk = 1 AND ck = 1", label="set"),
        q("UPDATE @t SET a = a + 1 WHERE pk = 1 AND ck = 1 USING TTL 10", label="ttl_misplaced"),
        q("UPDATE @t USING TTL 10 SET a = a + 1 WHERE pk = 1 AND ck = 1", label="ttl"),
        q("UPDATE @t USING TIMESTAMP 10 SET a = a + 1 WHERE pk = 1 AND ck = 1", label="timestamp"),
        q("UPDATE @t SET a = b + 1 WHERE pk = 1 AND ck = 1", label="other_column"),
        q("UPDATE @t SET a = a + 1.5 WHERE pk = 1 AND ck = 1", label="float"),
        q("SELECT writetime(a) FROM @t", label="writetime"),
        q("SELECT ttl(a) FROM @t", label="ttl_function"),
    ]),
    Case("counter_functions", [
        ddl(TABLE),
        q("UPDATE @t SET a = a + 5, b = b - 2 WHERE pk = 1 AND ck = 1"),
        q("UPDATE @t SET a = a + 1 WHERE pk = 1 AND ck = 2"),
        q("SELECT writetime(a), ttl(a) FROM @t WHERE pk = 1 AND ck = 1",
          mask={0: is_recent_micros}),
        q("SELECT min(a), max(a), sum(a), avg(a), count(a) FROM @t", label="aggregates"),
        q("SELECT CAST(a AS bigint), CAST(a AS text), CAST(a AS double) FROM @t "
          "WHERE pk = 1 AND ck = 1", label="casts"),
    ]),
    Case("counter_table_definition_errors", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, c counter, v int)", label="mixed"),
        ddl("CREATE TABLE @t2 (pk counter PRIMARY KEY, v int)", label="counter_key"),
        ddl("CREATE TABLE @t3 (pk int PRIMARY KEY, c counter) WITH default_time_to_live = 5",
            label="default_ttl"),
    ]),
    Case("counter_static", [
        ddl("CREATE TABLE @t (pk int, ck int, s counter static, c counter, PRIMARY KEY (pk, ck))"),
        q("UPDATE @t SET s = s + 3 WHERE pk = 1"),
        q("UPDATE @t SET c = c + 1 WHERE pk = 1 AND ck = 1"),
        q("SELECT * FROM @t"),
    ]),
]


def test_case(case, check):
    check(case)
