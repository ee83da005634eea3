"""Logged, unlogged and counter batches."""

from cassandra.query import BatchType

from differ import Case, batch, ddl, px, q

TABLE = "CREATE TABLE @t (pk int, ck int, v text, PRIMARY KEY (pk, ck))"

CASES = [
    Case("logged_batch_text", [
        ddl(TABLE),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); "
          "INSERT INTO @t (pk, ck, v) VALUES (2, 1, 'b'); "
          "UPDATE @t SET v = 'c' WHERE pk = 1 AND ck = 2; APPLY BATCH"),
        q("SELECT * FROM @t"),
        q("BEGIN BATCH DELETE FROM @t WHERE pk = 2; APPLY BATCH"),
        q("SELECT * FROM @t"),
    ]),
    Case("unlogged_batch_text", [
        ddl(TABLE),
        q("BEGIN UNLOGGED BATCH INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); "
          "INSERT INTO @t (pk, ck, v) VALUES (1, 2, 'b') APPLY BATCH"),
        q("SELECT * FROM @t"),
    ]),
    Case("batch_using_timestamp", [
        ddl(TABLE),
        q("BEGIN BATCH USING TIMESTAMP 1000 INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); "
          "INSERT INTO @t (pk, ck, v) VALUES (1, 2, 'b') USING TIMESTAMP 2000; APPLY BATCH",
          label="statement_timestamp_in_batch_timestamp"),
        q("BEGIN BATCH USING TIMESTAMP 1000 INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); APPLY BATCH"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'older') USING TIMESTAMP 999"),
        q("SELECT pk, ck, v, writetime(v) FROM @t"),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (3, 1, 'x') USING TIMESTAMP 10; "
          "INSERT INTO @t (pk, ck, v) VALUES (3, 2, 'y') USING TIMESTAMP 20; APPLY BATCH"),
        q("SELECT pk, ck, writetime(v) FROM @t WHERE pk = 3"),
    ]),
    Case("batch_frame_prepared", [
        ddl(TABLE),
        batch([("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?)", (1, 1, "a")),
               ("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?)", (1, 2, "b")),
               ("UPDATE @t SET v = ? WHERE pk = ? AND ck = ?", ("c", 2, 1))], prepared=True),
        batch([("DELETE FROM @t WHERE pk = ? AND ck = ?", (1, 1))], prepared=True,
              batch_type=BatchType.UNLOGGED),
        q("SELECT * FROM @t"),
    ]),
    Case("batch_frame_mixed", [
        ddl(TABLE),
        batch(["INSERT INTO @t (pk, ck, v) VALUES (5, 1, 'literal')",
               ("INSERT INTO @t (pk, ck, v) VALUES (%s, %s, %s)", (5, 2, "interpolated"))]),
        q("SELECT * FROM @t"),
    ]),
    Case("counter_batch", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, c counter)"),
        q("BEGIN COUNTER BATCH UPDATE @t SET c = c + 1 WHERE pk = 1; "
          "UPDATE @t SET c = c + 2 WHERE pk = 1; UPDATE @t SET c = c - 5 WHERE pk = 2; APPLY BATCH"),
        batch(["UPDATE @t SET c = c + 10 WHERE pk = 1"], batch_type=BatchType.COUNTER),
        q("SELECT * FROM @t"),
        q("BEGIN BATCH UPDATE @t SET c = c + 1 WHERE pk = 1; APPLY BATCH", label="counter_in_logged"),
        q("BEGIN COUNTER BATCH INSERT INTO @t (pk) VALUES (3); APPLY BATCH", label="insert_in_counter"),
        batch(["UPDATE @t SET c = c + 1 WHERE pk = 1"], batch_type=BatchType.LOGGED,
              label="counter_in_logged_frame"),
    ]),
    Case("batch_errors", [
        ddl(TABLE),
        ddl("CREATE TABLE @t2 (pk int PRIMARY KEY, c counter)"),
        q("BEGIN BATCH SELECT * FROM @t; APPLY BATCH", label="select_in_batch"),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); "
          "UPDATE @t2 SET c = c + 1 WHERE pk = 1; APPLY BATCH", label="mixed_counter"),
        q("BEGIN COUNTER BATCH USING TIMESTAMP 5 UPDATE @t2 SET c = c + 1 WHERE pk = 1; APPLY BATCH",
          label="counter_timestamp"),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a') USING TTL 5 APPLY BATCH",
          label="ttl_in_batch_statement"),
        q("BEGIN BATCH USING TTL 5 INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); APPLY BATCH",
          label="batch_ttl"),
        q("BEGIN BATCH APPLY BATCH", label="empty"),
    ]),
    Case("batch_warnings", [
        ddl(TABLE),
        q("BEGIN UNLOGGED BATCH " + " ".join(
            f"INSERT INTO @t (pk, ck, v) VALUES ({i}, 1, 'x');" for i in range(20)) +
          " APPLY BATCH", warnings=True, label="unlogged_many_partitions"),
        q("BEGIN BATCH " + " ".join(
            f"INSERT INTO @t (pk, ck, v) VALUES (1, {i}, '{'x' * 7000}');" for i in range(25)) +
          " APPLY BATCH", warnings=True, label="large_batch"),
        q("SELECT count(*) FROM @t"),
    ]),
    Case("batch_cross_table", [
        ddl(TABLE),
        ddl("CREATE TABLE @t2 (pk int PRIMARY KEY, v text)"),
        q("BEGIN BATCH INSERT INTO @t (pk, ck, v) VALUES (1, 1, 'a'); "
          "INSERT INTO @t2 (pk, v) VALUES (1, 'b'); APPLY BATCH"),
        q("SELECT * FROM @t"),
        q("SELECT * FROM @t2"),
        px("SELECT * FROM @t2 WHERE pk = ?", [1]),
    ]),
]


def test_case(case, check):
    check(case)
