"""TTL, WRITETIME and USING TIMESTAMP, including collections."""

from differ import Case, ddl, in_range, is_recent_micros, px, q

TABLE = ("CREATE TABLE @t (pk int, ck int, v int, t text, l list<int>, s set<int>, "
         "m map<int, int>, fl frozen<list<int>>, PRIMARY KEY (pk, ck))")

CASES = [
    Case("using_timestamp", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, t) VALUES (1, 1, 1, 'a') USING TIMESTAMP 1000"),
        q("UPDATE @t USING TIMESTAMP 500 SET v = 2 WHERE pk = 1 AND ck = 1", label="older_loses"),
        q("UPDATE @t USING TIMESTAMP 2000 SET t = 'b' WHERE pk = 1 AND ck = 1"),
        q("SELECT v, t, writetime(v), writetime(t) FROM @t"),
        q("DELETE FROM @t USING TIMESTAMP 1500 WHERE pk = 1 AND ck = 1"),
        q("SELECT v, t, writetime(t) FROM @t"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 3) USING TIMESTAMP 1000", label="tie"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 2) USING TIMESTAMP 1000", label="tie_smaller"),
        q("SELECT v FROM @t"),
    ]),
    Case("writetime_server_assigned", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1)"),
        q("SELECT writetime(v) FROM @t", mask={0: is_recent_micros}),
    ]),
    Case("ttl_values", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, t) VALUES (1, 1, 1, 'a') USING TTL 1000"),
        q("UPDATE @t USING TTL 500 SET t = 'b' WHERE pk = 1 AND ck = 1"),
        q("SELECT ttl(v), ttl(t) FROM @t", mask={0: in_range(990, 1000), 1: in_range(490, 500)}),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 1) USING TTL 0"),
        q("SELECT ttl(v) FROM @t WHERE pk = 1 AND ck = 2"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 3, 1) USING TTL 1000 AND TIMESTAMP 77"),
        q("SELECT writetime(v), ttl(v) FROM @t WHERE pk = 1 AND ck = 3",
          mask={1: in_range(990, 1000)}),
    ]),
    Case("ttl_errors", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) USING TTL -1", label="negative"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) USING TTL 630720001", label="too_large"),
        px("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?) USING TTL ?", [1, 1, 1, -5],
           label="bound_negative"),
        q("SELECT ttl(pk) FROM @t", label="ttl_of_key"),
        q("SELECT writetime(ck) FROM @t", label="writetime_of_key"),
        q("SELECT ttl(l) FROM @t", label="ttl_of_collection"),
    ]),
    Case("writetime_of_collections", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, l, s, m, fl) VALUES (1, 1, [1, 2], {3}, {4: 4}, [5]) "
          "USING TIMESTAMP 100"),
        q("SELECT writetime(fl) FROM @t", label="frozen"),
        q("SELECT writetime(l) FROM @t", label="list"),
        q("SELECT writetime(s) FROM @t", label="set"),
        q("SELECT writetime(m) FROM @t", label="map"),
    ]),
    Case("default_time_to_live", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int) WITH default_time_to_live = 1000"),
        q("INSERT INTO @t (pk, v) VALUES (1, 1)"),
        q("INSERT INTO @t (pk, v) VALUES (2, 1) USING TTL 0"),
        q("INSERT INTO @t (pk, v) VALUES (3, 1) USING TTL 50"),
        q("SELECT pk, ttl(v) FROM @t", mask={1: in_range(40, 1000)}),
    ]),
    Case("bound_ttl_and_timestamp", [
        ddl(TABLE),
        px("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?",
           [1, 1, 1, 1000, 12345]),
        px("UPDATE @t USING TIMESTAMP ? AND TTL ? SET t = ? WHERE pk = ? AND ck = ?",
           [12346, 0, "x", 1, 1]),
        q("SELECT writetime(v), writetime(t), ttl(t) FROM @t"),
        px("SELECT ttl(v) FROM @t WHERE pk = ? AND ck = ?", [1, 1], mask={0: in_range(990, 1000)}),
    ]),
    Case("expired_cells", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, t) VALUES (1, 1, 1, 'a') USING TIMESTAMP 10"),
        q("UPDATE @t USING TTL 1 AND TIMESTAMP 5 SET v = 9 WHERE pk = 1 AND ck = 1",
          label="older_ttl_write_loses"),
        q("SELECT v, ttl(v) FROM @t"),
    ]),
]


def test_case(case, check):
    check(case)
