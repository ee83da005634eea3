"""Every CQL type: literals and bound values, edge values, empty values and nulls."""

import datetime
import decimal
import uuid

from cassandra.query import UNSET_VALUE
from cassandra.util import Date, Duration, Time

from differ import Case, ddl, px, q


def scalar(name, cql_type, literals, bound, *, extra=()):
    """A table with one column of ``cql_type``: each literal written with a QUERY, each bound
    value through a prepared INSERT, then everything read back (QUERY and prepared SELECT)."""
    steps = [ddl(f"CREATE TABLE @t (pk int PRIMARY KEY, v {cql_type})")]
    for i, lit in enumerate(literals):
        steps.append(q(f"INSERT INTO @t (pk, v) VALUES ({i}, {lit})"))
    for i, val in enumerate(bound):
        steps.append(px("INSERT INTO @t (pk, v) VALUES (?, ?)", [100 + i, val]))
    steps += list(extra)
    steps.append(q("SELECT pk, v FROM @t"))
    steps.append(px("SELECT v FROM @t WHERE pk = ?", [0]))
    return Case(name, steps)


CASES = [
    scalar("ascii", "ascii", ["'abc'", "''", "'a''b'"], ["xyz", ""],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 'é')", label="non_ascii")]),
    scalar("text", "text", ["'héllo'", "''", "'it''s'", "$$dollar quoted$$"], ["ü€", ""]),
    scalar("varchar", "varchar", ["'v'", "'日本'"], ["bound"]),
    scalar("int", "int", ["0", "-2147483648", "2147483647", "-0"], [-1, 2147483647],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 2147483648)", label="overflow"),
                  q("INSERT INTO @t (pk, v) VALUES (51, 1.5)", label="float_literal")]),
    scalar("bigint", "bigint", ["-9223372036854775808", "9223372036854775807", "0"], [2**40],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 9223372036854775808)", label="overflow")]),
    scalar("smallint", "smallint", ["-32768", "32767"], [12],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 32768)", label="overflow")]),
    scalar("tinyint", "tinyint", ["-128", "127"], [-5],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 128)", label="overflow")]),
    scalar("varint", "varint",
           ["0", "-1", "123456789012345678901234567890", "-99999999999999999999999999",
            "9223372036854775808"],
           [2**100, -(2**70), 0]),
    scalar("decimal", "decimal",
           ["0", "1.50", "-0.001", "1E+10", "123456789012345678901234567890.123456789", "1e-20",
            "-0.0"],
           [decimal.Decimal("3.14000"), decimal.Decimal("-1E-5"), decimal.Decimal("12345678901234567890")]),
    scalar("float", "float", ["1.5", "-0.0", "NaN", "Infinity", "-Infinity", "3.4028235e38", "1"],
           [0.1, -2.5]),
    scalar("double", "double",
           ["1.5", "NaN", "-Infinity", "1.7976931348623157e308", "5e-324", "-0.0", "42"],
           [0.1, 1e100]),
    scalar("boolean", "boolean", ["true", "false", "TRUE"], [True, False]),
    scalar("blob", "blob", ["0x", "0xCAFE", "0x00ff"], [b"\x01\x02", b""],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 0xABC)", label="odd_hex")]),
    scalar("uuid", "uuid",
           ["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000"],
           [uuid.UUID("9f1c2f3a-1b2c-4d5e-8f90-123456789abc")]),
    scalar("timeuuid", "timeuuid", ["d2177dd0-eaa2-11de-a572-001b779c76e3"],
           [uuid.UUID("50554d6e-29bb-11e5-b345-feff819cdc9f")],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 123e4567-e89b-42d3-a456-426614174000)",
                    label="v4_into_timeuuid")]),
    scalar("timestamp", "timestamp",
           ["'2024-01-02 03:04:05'", "'2024-01-02T03:04:05.678Z'", "'2024-01-02 03:04:05+0200'",
            "0", "-1000", "1700000000000", "'2024-01-02'"],
           [datetime.datetime(2021, 5, 6, 7, 8, 9, 123000)],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 'not a time')", label="bad_literal")]),
    scalar("date", "date", ["'2024-02-29'", "'1970-01-01'", "'1900-01-01'", "2147483648"],
           [Date(datetime.date(2000, 1, 1))]),
    # Texts ScyllaDB reads differently from Cassandra (each its own table, so that one
    # server's extra row does not change the other steps).
    Case("date_text_arithmetic", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v date)"),
        q("INSERT INTO @t (pk, v) VALUES (50, '2023-02-29')", label="bad_day"),
        q("SELECT v FROM @t WHERE pk = 50", label="bad_day_stored"),
        q("INSERT INTO @t (pk, v) VALUES (51, '2023-1-5')", label="short_fields"),
        q("INSERT INTO @t (pk, v) VALUES (52, ' 2023-01-05')", label="leading_space"),
        q("INSERT INTO @t (pk, v) VALUES (53, '2023-01-05x')", label="trailing_text"),
        q("SELECT v FROM @t WHERE pk = 51", label="short_fields_stored"),
    ]),
    Case("timestamp_texts", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v timestamp)"),
        q("INSERT INTO @t (pk, v) VALUES (1, '2023-02-29')", label="bad_day"),
        q("INSERT INTO @t (pk, v) VALUES (2, '2023-13-01')", label="bad_month"),
        q("INSERT INTO @t (pk, v) VALUES (3, '2024-01-02 03:04:05.1234')", label="long_millis"),
        q("INSERT INTO @t (pk, v) VALUES (4, '2024-01-02 03:04:05-0130')", label="negative_zone"),
        q("INSERT INTO @t (pk, v) VALUES (5, '2024-01-02 03:04:05+02:00')", label="colon_zone"),
        q("SELECT v FROM @t WHERE pk = 4"),
        q("SELECT v FROM @t WHERE pk = 5"),
    ]),
    scalar("time", "time", ["'08:12:54'", "'08:12:54.123456789'", "'00:00:00'"],
           [Time(datetime.time(23, 59, 59, 999999))],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, '24:00:00')", label="bad_time"),
                  q("INSERT INTO @t (pk, v) VALUES (51, '08:12:54.1234567890')",
                    label="ten_fraction_digits")]),
    Case("constant_classes", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, ti time, du duration)"),
        q("INSERT INTO @t (pk, ti) VALUES (1, 1000)", label="integer_time"),
        q("INSERT INTO @t (pk, du) VALUES (2, 1000)", label="integer_duration"),
        q("INSERT INTO @t (pk, du) VALUES (3, '1h')", label="string_duration"),
    ]),
    scalar("duration", "duration",
           ["1y2mo3w4d5h6m7s8ms9us10ns", "P1Y2M3DT4H5M6S", "P2W", "-1d", "0s", "P0001-02-03T04:05:06"],
           [Duration(1, 2, 3000)],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, 1x)", label="bad_unit")]),
    scalar("inet", "inet", ["'127.0.0.1'", "'::1'", "'2001:db8::ff00:42:8329'"],
           ["10.1.2.3", "fe80::1"],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, '300.1.1.1')", label="bad_address")]),
    scalar("list_int", "list<int>", ["[1, 2, 3]", "[]", "[3, 3, 1]", "null"], [[4, 5], []]),
    scalar("set_text", "set<text>", ["{'b', 'a', 'b'}", "{}"], [{"z", "y"}]),
    scalar("map_text_int", "map<text, int>", ["{'b': 2, 'a': 1}", "{}"], [{"k": 9}]),
    scalar("frozen_list", "frozen<list<int>>", ["[1, 2]", "[]"], [[7, 8]]),
    scalar("frozen_set", "frozen<set<int>>", ["{3, 1, 2}", "{}"], [{5, 4}]),
    scalar("frozen_map", "frozen<map<int, text>>", ["{2: 'b', 1: 'a'}", "{}"], [{1: "x"}]),
    scalar("nested_map_of_lists", "map<text, frozen<list<int>>>", ["{'a': [1, 2], 'b': []}"],
           [{"c": [3]}]),
    scalar("list_of_maps", "list<frozen<map<int, text>>>", ["[{1: 'a'}, {}]"], [[{2: "b"}]]),
    scalar("set_of_tuples", "set<frozen<tuple<int, text>>>", ["{(2, 'b'), (1, 'a')}"],
           [{(3, "c")}]),
    scalar("tuple", "tuple<int, text, boolean>", ["(1, 'a', true)", "(2, null, false)"],
           [(3, "c", None)],
           extra=[q("INSERT INTO @t (pk, v) VALUES (50, (1, 'a'))", label="short_tuple"),
                  q("INSERT INTO @t (pk, v) VALUES (51, (1, 'a', true, 4))", label="long_tuple")]),
    Case("udt_frozen", [
        ddl("CREATE TYPE @ks.@ut (a int, b text)"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v frozen<@ut>)"),
        q("INSERT INTO @t (pk, v) VALUES (0, {a: 1, b: 'x'})"),
        q("INSERT INTO @t (pk, v) VALUES (1, {a: 2})"),
        q("INSERT INTO @t (pk, v) VALUES (2, {b: 'only b'})"),
        q("INSERT INTO @t (pk, v) VALUES (3, {c: 1})", label="unknown_field"),
        px("INSERT INTO @t (pk, v) VALUES (?, ?)", [4, {"a": 5, "b": "y"}]),
        q("SELECT pk, v, v.a, v.b FROM @t"),
        px("SELECT v FROM @t WHERE pk = ?", [0]),
    ]),
    Case("udt_non_frozen", [
        ddl("CREATE TYPE @ks.@ut (a int, b text)"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v @ut)"),
        q("INSERT INTO @t (pk, v) VALUES (0, {a: 1, b: 'x'})"),
        q("UPDATE @t SET v.b = 'changed' WHERE pk = 0"),
        q("UPDATE @t SET v.a = 7 WHERE pk = 1"),
        q("DELETE v.b FROM @t WHERE pk = 0"),
        px("UPDATE @t SET v.a = ? WHERE pk = ?", [9, 2]),
        q("SELECT pk, v, v.a FROM @t"),
    ]),
    Case("udt_nested", [
        ddl("CREATE TYPE @ks.@ut (a int, b text)"),
        ddl("CREATE TYPE @ks.@ut2 (inner frozen<@ut>, tags set<text>)"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v frozen<@ut2>, l list<frozen<@ut>>)"),
        q("INSERT INTO @t (pk, v, l) VALUES (0, {inner: {a: 1, b: 'x'}, tags: {'t'}}, [{a: 3}])"),
        px("INSERT INTO @t (pk, v, l) VALUES (?, ?, ?)",
           [1, {"inner": {"a": 2, "b": None}, "tags": {"u"}}, [{"a": 4, "b": "z"}]]),
        q("SELECT pk, v, v.inner, v.inner.a, l FROM @t"),
    ]),
    Case("empty_values", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, i int, t text, b blob, d double, u uuid)"),
        q("INSERT INTO @t (pk, i, t, b, d, u) VALUES (0, blobAsInt(0x), '', 0x, blobAsDouble(0x), blobAsUuid(0x))"),
        q("INSERT INTO @t (pk, t) VALUES (1, '')"),
        q("SELECT pk, i, t, b, d, u FROM @t"),
        q("SELECT pk FROM @t WHERE t = '' ALLOW FILTERING"),
    ]),
    Case("nulls_and_unset", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, a int, b text, c list<int>)"),
        q("INSERT INTO @t (pk, a, b, c) VALUES (0, 1, 'x', [1])"),
        q("INSERT INTO @t (pk, a, b, c) VALUES (1, null, null, null)"),
        px("INSERT INTO @t (pk, a, b, c) VALUES (?, ?, ?, ?)", [2, None, "y", None]),
        px("INSERT INTO @t (pk, a, b, c) VALUES (?, ?, ?, ?)", [0, UNSET_VALUE, "z", UNSET_VALUE]),
        px("UPDATE @t SET a = ? WHERE pk = ?", [None, 0]),
        q("SELECT pk, a, b, c FROM @t"),
        q("INSERT INTO @t (pk, a) VALUES (null, 1)", label="null_key"),
        px("INSERT INTO @t (pk, a) VALUES (?, ?)", [None, 1], label="bound_null_key"),
        px("SELECT * FROM @t WHERE pk = ?", [UNSET_VALUE], label="unset_key"),
    ]),
    Case("text_key_types", [
        ddl("CREATE TABLE @t (pk text, ck timeuuid, v int, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, ck, v) VALUES ('a', 50554d6e-29bb-11e5-b345-feff819cdc9f, 1)"),
        q("INSERT INTO @t (pk, ck, v) VALUES ('a', 00000000-0000-1000-8080-808080808080, 2)"),
        q("INSERT INTO @t (pk, ck, v) VALUES ('a', d2177dd0-eaa2-11de-a572-001b779c76e3, 3)"),
        q("SELECT * FROM @t WHERE pk = 'a'"),
    ]),
    Case("decimal_equality", [
        ddl("CREATE TABLE @t (pk decimal, ck decimal, v int, s set<decimal>, "
            "m map<decimal, int>, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1.0, 1.0, 1)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1.0, 1.00, 2)", label="same_clustering_row"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1.00, 1.0, 3)", label="other_partition"),
        q("SELECT pk, ck, v FROM @t WHERE pk = 1.0"),
        q("SELECT pk, ck, v FROM @t WHERE pk = 1.00"),
        q("SELECT v FROM @t WHERE pk = 1.0 AND ck = 1.000", label="lookup_other_scale"),
        q("UPDATE @t SET s = {1.0, 1.00, 2}, m = {1.0: 1, 1.00: 2} WHERE pk = 1.0 AND ck = 1"),
        q("SELECT s, m FROM @t WHERE pk = 1.0 AND ck = 1", label="collections"),
    ]),
    Case("blob_and_varint_keys_order", [
        ddl("CREATE TABLE @t (pk int, b blob, n varint, d decimal, PRIMARY KEY (pk, b, n, d))"),
        q("INSERT INTO @t (pk, b, n, d) VALUES (1, 0x02, 10, 1.0)"),
        q("INSERT INTO @t (pk, b, n, d) VALUES (1, 0x01ff, -5, 2)"),
        q("INSERT INTO @t (pk, b, n, d) VALUES (1, 0x, 0, 0)"),
        q("INSERT INTO @t (pk, b, n, d) VALUES (1, 0x02, -100000000000000000000, 1.00)"),
        q("INSERT INTO @t (pk, b, n, d) VALUES (1, 0x02, 10, 1.00)"),
        q("SELECT * FROM @t WHERE pk = 1"),
    ]),
    Case("inet_and_uuid_keys_order", [
        ddl("CREATE TABLE @t (pk int, i inet, u uuid, PRIMARY KEY (pk, i, u))"),
        q("INSERT INTO @t (pk, i, u) VALUES (1, '10.0.0.1', 9f1c2f3a-1b2c-4d5e-8f90-123456789abc)"),
        q("INSERT INTO @t (pk, i, u) VALUES (1, '::1', 00000000-0000-0000-0000-000000000000)"),
        q("INSERT INTO @t (pk, i, u) VALUES (1, '10.0.0.1', 50554d6e-29bb-11e5-b345-feff819cdc9f)"),
        q("INSERT INTO @t (pk, i, u) VALUES (1, '1.2.3.4', d2177dd0-eaa2-11de-a572-001b779c76e3)"),
        q("SELECT * FROM @t WHERE pk = 1"),
    ]),
    Case("bound_type_mismatch", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v bigint, s set<int>)"),
        px("INSERT INTO @t (pk, v) VALUES (?, ?)", [1, "not a number"], label="text_for_bigint"),
        px("INSERT INTO @t (pk, s) VALUES (?, ?)", [1, [1, 2]], label="list_for_set"),
        q("SELECT * FROM @t"),
    ]),
]


def test_case(case, check):
    check(case)
