"""Native functions and casts."""

from differ import (Case, ddl, is_recent_date, is_recent_micros, is_recent_timestamp, is_timeuuid,
                    is_uuid4, p, q)

TABLE = "CREATE TABLE @t (pk int PRIMARY KEY, i int, b bigint, t text, ts timestamp, tu timeuuid, d date, bl blob, dc decimal, f float)"
ROW = ("INSERT INTO @t (pk, i, b, t, ts, tu, d, bl, dc, f) VALUES (1, 42, 1700000000000, '12', "
       "'2024-05-06 07:08:09.010Z', 50554d6e-29bb-11e5-b345-feff819cdc9f, '2024-05-06', 0x0000002a, 1.25, 2.5)")

CASES = [
    Case("now_and_uuid", [
        ddl(TABLE), q(ROW),
        q("SELECT now(), uuid() FROM @t", mask={0: is_timeuuid, 1: is_uuid4}),
        q("INSERT INTO @t (pk, tu) VALUES (2, now())"),
        q("SELECT tu FROM @t WHERE pk = 2", mask={0: is_timeuuid}),
        q("INSERT INTO @t (pk, tu) VALUES (3, uuid())", label="uuid_into_timeuuid"),
    ]),
    Case("time_conversions", [
        ddl(TABLE), q(ROW),
        q("SELECT toTimestamp(tu), toDate(tu), toUnixTimestamp(tu) FROM @t WHERE pk = 1"),
        q("SELECT toDate(ts), toUnixTimestamp(ts), toTimestamp(d), toUnixTimestamp(d) FROM @t WHERE pk = 1"),
        q("SELECT toTimestamp(now()), toDate(now()) FROM @t WHERE pk = 1",
          mask={0: is_recent_timestamp, 1: is_recent_date}),
        q("SELECT currentTimestamp(), currentDate(), currentTimeUUID() FROM @t WHERE pk = 1",
          mask={0: is_recent_timestamp, 1: is_recent_date, 2: is_timeuuid}),
    ]),
    Case("deprecated_time_functions", [
        ddl(TABLE), q(ROW),
        q("SELECT dateOf(tu) FROM @t WHERE pk = 1", label="dateOf"),
        q("SELECT unixTimestampOf(tu) FROM @t WHERE pk = 1", label="unixTimestampOf"),
    ]),
    Case("min_max_timeuuid", [
        ddl("CREATE TABLE @t (pk int, tu timeuuid, PRIMARY KEY (pk, tu))"),
        q("INSERT INTO @t (pk, tu) VALUES (1, 50554d6e-29bb-11e5-b345-feff819cdc9f)"),
        q("INSERT INTO @t (pk, tu) VALUES (1, d2177dd0-eaa2-11de-a572-001b779c76e3)"),
        q("SELECT tu FROM @t WHERE pk = 1 AND tu > maxTimeuuid('2013-01-01 00:00+0000') "
          "AND tu < minTimeuuid('2020-01-01 00:00+0000')"),
        q("SELECT minTimeuuid('2013-01-01 00:00+0000'), maxTimeuuid(1000) FROM @t WHERE pk = 1"),
        q("SELECT tu FROM @t WHERE pk = 1 AND tu >= minTimeuuid(0)"),
    ]),
    Case("blob_conversions", [
        ddl(TABLE), q(ROW),
        q("SELECT blobAsInt(bl), intAsBlob(i), textAsBlob(t), bigintAsBlob(b) FROM @t WHERE pk = 1"),
        q("SELECT blobAsText(textAsBlob('héllo')), varcharAsBlob('x'), blobAsBigint(bigintAsBlob(7)) FROM @t WHERE pk = 1"),
        q("INSERT INTO @t (pk, i) VALUES (5, blobAsInt(0x0001))", label="wrong_blob_length"),
        q("SELECT blobAsInt(t) FROM @t WHERE pk = 1", label="text_arg"),
    ]),
    Case("token_ttl_writetime_functions", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, i, t) VALUES (7, 1, 'x') USING TTL 1000 AND TIMESTAMP 123"),
        q("SELECT token(pk), ttl(i), writetime(t) FROM @t WHERE pk = 7",
          mask={1: lambda v: "ok" if isinstance(v, int) and 990 <= v <= 1000 else repr(v)}),
        q("SELECT pk, token(pk) AS tk FROM @t"),
        q("SELECT writetime(i) FROM @t WHERE pk = 7", mask={}),
        q("INSERT INTO @t (pk, i) VALUES (8, 1)"),
        q("SELECT writetime(i), ttl(i) FROM @t WHERE pk = 8", mask={0: is_recent_micros}),
    ]),
    Case("casts", [
        ddl(TABLE), q(ROW),
        q("SELECT CAST(i AS text), CAST(i AS double), CAST(i AS bigint), CAST(i AS varint) FROM @t WHERE pk = 1"),
        q("SELECT CAST(dc AS text), CAST(f AS int), CAST(dc AS double), CAST(b AS float) FROM @t WHERE pk = 1"),
        q("SELECT CAST(ts AS date), CAST(ts AS text), CAST(tu AS timestamp), CAST(d AS timestamp) FROM @t WHERE pk = 1"),
        q("SELECT CAST(t AS int) FROM @t WHERE pk = 1", label="text_to_int"),
        q("SELECT CAST(bl AS text) FROM @t WHERE pk = 1", label="blob_to_text"),
        q("SELECT CAST(i AS ascii), CAST(f AS decimal), CAST(i AS smallint) FROM @t WHERE pk = 1"),
    ]),
    Case("cast_matrix", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, i int, vi varint, db double, f float, "
            "dc decimal, a ascii, t text, bo boolean, ip inet, tm time, d date, "
            "ts timestamp, tu timeuuid, u uuid, bl blob)"),
        q("INSERT INTO @t (pk, i, vi, db, f, dc, a, t, bo, ip, tm, d, ts, tu, u, bl) VALUES "
          "(1, 42, 7, 1.0, 2.5, 1.10, 'asc', 'txt', true, '10.0.0.1', '07:08:09.010', "
          "'2024-05-06', '1969-12-31 23:59:59.999Z', 50554d6e-29bb-11e5-b345-feff819cdc9f, "
          "d2177dd0-eaa2-11de-a572-001b779c76e3, 0x0102)"),
        q("SELECT CAST(i AS decimal), CAST(vi AS decimal), CAST(f AS decimal) FROM @t "
          "WHERE pk = 1", label="to_decimal"),
        q("SELECT CAST(db AS text), CAST(f AS text), CAST(dc AS text) FROM @t WHERE pk = 1",
          label="numbers_to_text"),
        q("SELECT CAST(a AS text), CAST(bo AS text), CAST(ip AS text), CAST(tm AS text), "
          "CAST(d AS text), CAST(ts AS text), CAST(tu AS text), CAST(u AS text) FROM @t "
          "WHERE pk = 1", label="others_to_text"),
        q("SELECT CAST(i AS tinyint), CAST(db AS int), CAST(dc AS bigint), CAST(vi AS double), "
          "CAST(i AS varint), CAST(tu AS date) FROM @t WHERE pk = 1", label="numbers"),
        q("SELECT CAST(i AS int), CAST(t AS varchar) FROM @t WHERE pk = 1",
          label="same_type"),
        q("SELECT CAST(tu AS uuid) FROM @t WHERE pk = 1", label="timeuuid_to_uuid"),
        q("SELECT CAST(t AS ascii) FROM @t WHERE pk = 1", label="text_to_ascii"),
        q("SELECT CAST(bo AS int) FROM @t WHERE pk = 1", label="boolean_to_int"),
        q("SELECT CAST(ts AS bigint) FROM @t WHERE pk = 1", label="timestamp_to_bigint"),
        q("SELECT CAST(t AS blob) FROM @t WHERE pk = 1", label="text_to_blob"),
        q("SELECT CAST(i AS counter) FROM @t WHERE pk = 1", label="to_counter"),
    ]),
    Case("time_function_overloads", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ts) VALUES (2, toTimestamp('2024-01-02'))", label="date_literal"),
        q("SELECT ts FROM @t WHERE pk = 2"),
        q("INSERT INTO @t (pk, b) VALUES (3, toUnixTimestamp('2024-01-02'))",
          label="ambiguous_literal"),
        p("INSERT INTO @t (pk, d) VALUES (?, toDate(?))", label="ambiguous_marker"),
        p("INSERT INTO @t (pk, ts) VALUES (?, toTimestamp((date) ?))", label="type_hint"),
    ]),
    Case("function_column_names", [
        ddl(TABLE), q(ROW),
        q("SELECT blobAsInt(bl), TOTIMESTAMP(tu), Token(pk), CAST(i AS text), WRITETIME(i) FROM @t WHERE pk = 1",
          mask={4: is_recent_micros}),
        p("SELECT blobAsInt(bl) AS x, toDate(ts), writetime(t), ttl(t), token(pk) FROM @t WHERE pk = ?"),
    ]),
    Case("arithmetic_and_literals", [
        ddl(TABLE), q(ROW),
        q("SELECT i + 1, i * 2, -i FROM @t WHERE pk = 1", label="operators"),
        q("SELECT 1, 'text', (int) 5 FROM @t WHERE pk = 1", label="literal_selectors"),
        q("SELECT i AS \"Alias\", t AS x FROM @t WHERE pk = 1"),
    ]),
    Case("function_errors", [
        ddl(TABLE), q(ROW),
        q("SELECT toDate(i) FROM @t", label="wrong_argument_type"),
        q("SELECT now(1) FROM @t", label="wrong_arity"),
        q("SELECT token(t) FROM @t", label="token_non_key"),
        q("SELECT system.now() FROM @t", label="qualified_name", mask={0: is_timeuuid}),
    ]),
]


def test_case(case, check):
    check(case)
