"""SELECT JSON, INSERT JSON, toJson() and fromJson()."""

from differ import Case, ddl, px, q

TABLE = ("CREATE TABLE @t (pk int, ck text, i bigint, d decimal, f double, b blob, ts timestamp, "
         "u uuid, l list<int>, s set<text>, m map<text, int>, tu tuple<int, text>, "
         "\"Caps\" int, PRIMARY KEY (pk, ck))")
ROW = ("INSERT INTO @t (pk, ck, i, d, f, b, ts, u, l, s, m, tu, \"Caps\") VALUES (1, 'a', 9007199254740993, "
       "1.50, 0.1, 0xcafe, '2024-01-02 03:04:05.006Z', 123e4567-e89b-12d3-a456-426614174000, "
       "[1, 2], {'y', 'x'}, {'k': 1}, (1, 'q'), 7)")

CASES = [
    Case("select_json_star", [
        ddl(TABLE), q(ROW),
        q("SELECT JSON * FROM @t"),
        q("SELECT JSON pk, ck, \"Caps\" FROM @t WHERE pk = 1"),
        q("SELECT JSON i AS big, d, f FROM @t"),
    ]),
    Case("select_json_functions", [
        ddl(TABLE), q(ROW),
        q("SELECT JSON count(*) FROM @t"),
        q("SELECT JSON ttl(i), writetime(i) FROM @t", mask={}),
        q("SELECT JSON * FROM @t WHERE pk = 2"),
    ]),
    Case("to_json", [
        ddl(TABLE), q(ROW),
        q("SELECT toJson(l), toJson(m), toJson(ts), toJson(b), toJson(tu), toJson(u) FROM @t"),
        q("SELECT toJson(pk), toJson(ck), toJson(d), toJson(f) FROM @t"),
    ]),
    Case("insert_json", [
        ddl(TABLE),
        q("INSERT INTO @t JSON '{\"pk\": 2, \"ck\": \"b\", \"i\": 5, \"l\": [3, 4], \"m\": {\"z\": 26}, "
          "\"ts\": \"2024-01-02 03:04:05Z\", \"b\": \"0x00ff\", \"\\\"Caps\\\"\": 3}'"),
        q("INSERT INTO @t JSON '{\"pk\": \"3\", \"ck\": \"c\", \"d\": \"1.25\", \"f\": 2}'"),
        q("SELECT * FROM @t"),
        px("INSERT INTO @t JSON ?", ['{"pk": 4, "ck": "d", "s": ["a"]}']),
        q("SELECT pk, ck, s FROM @t WHERE pk = 4"),
    ]),
    Case("insert_json_defaults", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, i, l) VALUES (5, 'e', 1, [1])"),
        q("INSERT INTO @t JSON '{\"pk\": 5, \"ck\": \"e\", \"d\": 2}' DEFAULT UNSET"),
        q("SELECT pk, ck, i, d, l FROM @t WHERE pk = 5"),
        q("INSERT INTO @t JSON '{\"pk\": 5, \"ck\": \"e\", \"d\": 3}' DEFAULT NULL"),
        q("SELECT pk, ck, i, d, l FROM @t WHERE pk = 5"),
        q("INSERT INTO @t JSON '{\"pk\": 5, \"ck\": \"e\", \"d\": 4}'"),
        q("SELECT pk, ck, i, d, l FROM @t WHERE pk = 5"),
    ]),
    Case("insert_json_errors", [
        ddl(TABLE),
        q("INSERT INTO @t JSON '{\"pk\": 1}'", label="missing_key"),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"ck\": \"a\", \"nosuch\": 1}'", label="unknown_column"),
        q("INSERT INTO @t JSON 'not json'", label="not_json"),
        q("INSERT INTO @t JSON '{\"pk\": \"x\", \"ck\": \"a\"}'", label="bad_value"),
    ]),
    Case("from_json", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, l, m, i) VALUES (6, 'f', fromJson('[7, 8]'), fromJson('{\"a\": 1}'), fromJson('12'))"),
        q("SELECT pk, ck, l, m, i FROM @t WHERE pk = 6"),
        q("UPDATE @t SET s = fromJson('[\"p\"]') WHERE pk = 6 AND ck = 'f'"),
        q("SELECT s FROM @t WHERE pk = 6"),
        q("INSERT INTO @t (pk, ck, i) VALUES (7, 'g', fromJson('\"x\"'))", label="bad_json_value"),
    ]),
    Case("json_udt", [
        ddl("CREATE TYPE @ks.@ut (a int, \"B\" text)"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, u frozen<@ut>)"),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"u\": {\"a\": 1, \"\\\"B\\\"\": \"x\"}}'"),
        q("SELECT JSON * FROM @t"),
        q("SELECT toJson(u) FROM @t"),
    ]),
]


def test_case(case, check):
    check(case)
