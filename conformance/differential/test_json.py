"""SELECT JSON, INSERT JSON, toJson() and fromJson()."""

import re

from differ import Case, batch, ddl, is_recent_micros, p, px, q


def json_writetime_masked(v):
    """A SELECT JSON text whose "writetime(...)" members (server-assigned) are replaced by
    what must hold for them: a write time within a day of now."""
    if not isinstance(v, str):
        return repr(v)
    return re.sub(r'("writetime\([^)]*\)": )(\d+)',
                  lambda m: m.group(1) + str(is_recent_micros(int(m.group(2)))), v)


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
        q("SELECT JSON ttl(i), writetime(i) FROM @t", mask={0: json_writetime_masked}),
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
        q("INSERT INTO @t (pk, u) VALUES (2, {a: 2, \"B\": 'y'})"),
        q("SELECT JSON * FROM @t WHERE pk = 2", label="case_sensitive_field"),
        q("SELECT toJson(u) FROM @t WHERE pk = 2", label="case_sensitive_tojson"),
        q("INSERT INTO @t JSON '{\"pk\": 3, \"u\": {\"a\": 3, \"B\": \"z\"}}'",
          label="unquoted_field"),
    ]),
]


TYPES = ("CREATE TABLE @t (pk int PRIMARY KEY, a ascii, bo boolean, da date, ti time, "
         "tu timeuuid, ip inet, vi varint, fl float, si smallint, tn tinyint, du duration, "
         "db double, de decimal)")
TYPES_ROW = ("INSERT INTO @t (pk, a, bo, da, ti, tu, ip, vi, fl, si, tn, du, db, de) VALUES "
             "(1, 'asc', true, '2024-02-29', '01:02:03.000000004', "
             "6bddc89a-5644-11e4-97fc-56847afe9799, '10.1.2.3', 123456789012345678901234567890, "
             "1.25, -32768, 127, 1y2mo3d4h5m6s7ms8us9ns, -0.5, -12.345)")

CASES += [
    Case("select_json_every_type", [
        ddl(TYPES), q(TYPES_ROW),
        q("SELECT JSON * FROM @t"),
        q("SELECT toJson(a), toJson(bo), toJson(da), toJson(ti), toJson(tu), toJson(ip) FROM @t"),
        q("SELECT toJson(vi), toJson(fl), toJson(si), toJson(tn), toJson(du), toJson(db), "
          "toJson(de) FROM @t"),
        q('SELECT JSON pk, bo AS "Flag", bo AS flag FROM @t'),
    ]),
    Case("insert_json_every_type", [
        ddl(TYPES),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"a\": \"asc\", \"bo\": false, \"da\": \"2024-02-29\", "
          "\"ti\": \"01:02:03.000000004\", \"tu\": \"6bddc89a-5644-11e4-97fc-56847afe9799\", "
          "\"ip\": \"10.1.2.3\", \"vi\": \"123456789012345678901234567890\", \"fl\": 1.25, "
          "\"si\": -32768, \"tn\": 127, \"du\": \"1h30m\", \"db\": -0.5, \"de\": -12.345}'"),
        q("SELECT * FROM @t WHERE pk = 1"),
        q("INSERT INTO @t JSON '{\"pk\": \"2\", \"bo\": \"TRUE\", \"vi\": \"-7\", \"fl\": \"2.5\", "
          "\"si\": \"12\", \"tn\": \"-3\", \"db\": \"1e3\", \"de\": \"1.50\", \"da\": \"2000-01-01\"}'"),
        q("SELECT pk, bo, vi, fl, si, tn, db, de, da FROM @t WHERE pk = 2"),
        q("INSERT INTO @t JSON '{\"pk\": 3, \"ip\": \"::1\", \"du\": \"P1DT2H\"}'"),
        q("SELECT pk, ip, du FROM @t WHERE pk = 3"),
        q("INSERT INTO @t JSON '{\"pk\": 4, \"tn\": 128}'", label="tinyint_overflow"),
        q("INSERT INTO @t JSON '{\"pk\": 4, \"ti\": 5}'", label="time_not_a_string"),
        q("INSERT INTO @t JSON '{\"pk\": 5, \"vi\": 123456789012345678901234567890}'",
          label="big_varint_number"),
    ]),
    Case("json_float_formats", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, d double, f float, de decimal)"),
        q("INSERT INTO @t (pk, d, f, de) VALUES (1, 17.0, 2.0, 1.000)"),
        q("INSERT INTO @t (pk, d, f, de) VALUES (2, 1e20, 1e-5, 1e3)"),
        q("INSERT INTO @t (pk, d, f) VALUES (3, NaN, -Infinity)"),
        q("SELECT JSON * FROM @t WHERE pk = 1", label="whole"),
        q("SELECT JSON * FROM @t WHERE pk = 2", label="exponents"),
        q("SELECT JSON * FROM @t WHERE pk = 3", label="not_finite"),
    ]),
    Case("json_nulls_and_empty", [
        ddl(TABLE),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"ck\": \"\", \"b\": \"0x\", \"l\": null, \"i\": null}'"),
        q("SELECT pk, ck, b, l, i FROM @t WHERE pk = 1"),
        q("SELECT JSON pk, ck, b, l, i FROM @t WHERE pk = 1"),
        q("SELECT toJson(i), toJson(l), toJson(b) FROM @t WHERE pk = 1"),
        q("INSERT INTO @t (pk, ck, l, s, m) VALUES (2, 'x', [], {}, {})"),
        q("SELECT JSON l, s, m FROM @t WHERE pk = 2"),
    ]),
    Case("json_collections_nested", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, mi map<int, text>, mts map<timestamp, int>, "
            "ml map<frozen<list<int>>, int>, lf frozen<list<frozen<set<int>>>>, "
            "tn tuple<int, frozen<map<text, int>>>)"),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"mi\": {\"2\": \"b\", \"1\": \"a\"}, "
          "\"mts\": {\"2024-01-02 03:04:05Z\": 7}, \"ml\": {\"[1, 2]\": 3}, "
          "\"lf\": [[2, 1], []], \"tn\": [1, {\"z\": 26}]}'"),
        q("SELECT pk, mi, mts, ml, lf, tn FROM @t"),
        q("SELECT JSON mi, mts, ml, lf, tn FROM @t"),
        q("INSERT INTO @t JSON '{\"pk\": 2, \"mi\": {\"x\": \"a\"}}'", label="bad_key"),
        q("INSERT INTO @t JSON '{\"pk\": 2, \"lf\": [[1, null]]}'", label="null_element"),
    ]),
    Case("insert_json_static", [
        ddl("CREATE TABLE @t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"ck\": 1, \"s\": 5, \"v\": 6}'", label="with_static"),
        q("SELECT pk, ck, s, v FROM @t WHERE pk = 1", label="static_read"),
        q("INSERT INTO @t JSON '{\"pk\": 1, \"s\": 7}'", label="static_only"),
    ]),
    Case("json_batches_and_prepared", [
        ddl(TABLE),
        batch(["INSERT INTO @t JSON '{\"pk\": 1, \"ck\": \"a\", \"i\": 1}'",
               "INSERT INTO @t JSON '{\"pk\": 1, \"ck\": \"b\", \"i\": 2}' DEFAULT UNSET"]),
        batch([("INSERT INTO @t JSON ?", ('{"pk": 2, "ck": "c", "l": [5]}',))], prepared=True),
        q("SELECT pk, ck, i, l FROM @t"),
        p("SELECT JSON pk, ck FROM @t WHERE pk = ?"),
        px("SELECT JSON pk, ck, i FROM @t WHERE pk = ?", [1]),
        px("INSERT INTO @t (pk, ck, i, l) VALUES (?, ?, fromJson(?), fromJson(?))",
           [3, "d", "42", "[1, 2]"]),
        q("SELECT pk, ck, i, l FROM @t WHERE pk = 3"),
        px("INSERT INTO @t (pk, ck, i) VALUES (?, ?, fromJson(?))", [3, "e", '"x"'],
           label="bad_bound_json"),
    ]),
    Case("json_function_errors", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, i) VALUES (1, 'a', toJson(1))", label="tojson_in_insert"),
        q("SELECT fromJson(ck) FROM @t", label="fromjson_in_selection"),
        q("INSERT INTO @t (pk, ck, i) VALUES (1, 'a', fromJson('dog'))", label="not_json"),
        q("INSERT INTO @t (pk, ck, i) VALUES (1, 'a', fromJson('1.5'))", label="fraction"),
        q("INSERT INTO @t (pk, ck, i) VALUES (1, 'a', fromJson('9223372036854775808'))",
          label="overflow"),
        q("INSERT INTO @t (pk, ck, i) VALUES (1, 'a', fromJson(null))"),
        q("SELECT i, toJson(i) FROM @t WHERE pk = 1"),
        q("INSERT INTO @t JSON '[1]'", label="not_an_object"),
    ]),
]


def test_case(case, check):
    check(case)
