"""Lightweight transactions: IF NOT EXISTS, IF EXISTS, IF conditions, conditional batches."""

from cassandra import ConsistencyLevel
from cassandra.query import BatchType

from differ import Case, batch, ddl, p, px, q

TABLE = "CREATE TABLE @t (pk int, ck int, v int, t text, m map<text, int>, PRIMARY KEY (pk, ck))"

CASES = [
    Case("insert_if_not_exists", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 10) IF NOT EXISTS", label="applied"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 20) IF NOT EXISTS", label="not_applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("update_if_exists", [
        ddl(TABLE),
        q("UPDATE @t SET v = 1 WHERE pk = 1 AND ck = 1 IF EXISTS", label="not_applied"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 10)"),
        q("UPDATE @t SET v = 2 WHERE pk = 1 AND ck = 1 IF EXISTS", label="applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("delete_if_exists", [
        ddl(TABLE),
        q("DELETE FROM @t WHERE pk = 1 AND ck = 1 IF EXISTS", label="not_applied"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 10)"),
        q("DELETE FROM @t WHERE pk = 1 AND ck = 1 IF EXISTS", label="applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("update_if_condition", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, t) VALUES (1, 1, 10, 'a')"),
        q("UPDATE @t SET v = 11 WHERE pk = 1 AND ck = 1 IF v = 10", label="applied"),
        q("UPDATE @t SET v = 12 WHERE pk = 1 AND ck = 1 IF v = 10", label="not_applied"),
        q("UPDATE @t SET v = 13 WHERE pk = 1 AND ck = 1 IF v > 5 AND t = 'a'", label="two_conditions"),
        q("UPDATE @t SET v = 14 WHERE pk = 1 AND ck = 1 IF t IN ('x', 'y')", label="in_not_applied"),
        q("UPDATE @t SET v = 15 WHERE pk = 1 AND ck = 1 IF t != 'a'", label="neq_not_applied"),
        q("UPDATE @t SET v = 1 WHERE pk = 2 AND ck = 1 IF v = 1", label="missing_row"),
        q("SELECT * FROM @t"),
    ]),
    Case("condition_on_null_and_collection", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, m) VALUES (1, 1, 10, {'a': 1})"),
        q("UPDATE @t SET v = 2 WHERE pk = 1 AND ck = 1 IF t = null", label="null_applied"),
        q("UPDATE @t SET v = 3 WHERE pk = 1 AND ck = 1 IF m['a'] = 1", label="element_applied"),
        q("UPDATE @t SET v = 4 WHERE pk = 1 AND ck = 1 IF m['a'] = 5", label="element_not_applied"),
        q("UPDATE @t SET v = 5 WHERE pk = 1 AND ck = 1 IF m = {'a': 1}", label="whole_map"),
        q("SELECT * FROM @t"),
    ]),
    Case("delete_if_condition", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v, t) VALUES (1, 1, 10, 'a')"),
        q("DELETE t FROM @t WHERE pk = 1 AND ck = 1 IF v = 9", label="not_applied"),
        q("DELETE t FROM @t WHERE pk = 1 AND ck = 1 IF v = 10", label="applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("lwt_errors", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) USING TIMESTAMP 5 IF NOT EXISTS",
          label="timestamp"),
        q("UPDATE @t SET v = 1 WHERE pk IN (1, 2) AND ck = 1 IF v = 1", label="in_partition"),
        q("UPDATE @t SET v = 1 WHERE pk = 1 AND ck = 1 IF pk = 1", label="condition_on_key"),
        q("UPDATE @t SET v = 1 WHERE pk = 1 AND ck = 1 IF nosuch = 1", label="unknown_column"),
        q("DELETE FROM @t WHERE pk = 1 IF v = 1", label="partition_delete_condition"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS USING TIMESTAMP 5",
          label="insert_timestamp"),
        q("UPDATE @t USING TIMESTAMP 5 SET v = 1 WHERE pk = 1 AND ck = 1 IF v = 1",
          label="update_timestamp"),
        q("DELETE FROM @t USING TIMESTAMP 5 WHERE pk = 1 AND ck = 1 IF EXISTS",
          label="delete_timestamp"),
    ]),
    Case("lwt_prepared", [
        ddl(TABLE),
        p("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?) IF NOT EXISTS", label="insert_meta"),
        p("UPDATE @t SET v = ? WHERE pk = ? AND ck = ? IF v = ?", label="update_meta"),
        px("INSERT INTO @t (pk, ck, v) VALUES (?, ?, ?) IF NOT EXISTS", [1, 1, 1], label="applied"),
        px("UPDATE @t SET v = ? WHERE pk = ? AND ck = ? IF v = ?", [2, 1, 1, 5], label="not_applied"),
    ]),
    Case("lwt_serial_consistency", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS",
          serial_consistency=ConsistencyLevel.LOCAL_SERIAL, label="local_serial"),
        q("SELECT * FROM @t WHERE pk = 1", consistency=ConsistencyLevel.SERIAL, label="serial_read"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 1) IF NOT EXISTS",
          serial_consistency=ConsistencyLevel.ONE, label="bad_serial"),
    ]),
    Case("conditional_batch_applied", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1)"),
        batch(["UPDATE @t SET v = 2 WHERE pk = 1 AND ck = 1 IF v = 1",
               "INSERT INTO @t (pk, ck, v) VALUES (1, 2, 20) IF NOT EXISTS"], label="applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("conditional_batch_not_applied", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 2)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1)"),
        batch(["INSERT INTO @t (pk, ck, v) VALUES (1, 2, 20) IF NOT EXISTS",
               "UPDATE @t SET v = 9 WHERE pk = 1 AND ck = 1 IF v = 7"], label="not_applied"),
        q("SELECT * FROM @t"),
    ]),
    Case("conditional_batch_errors", [
        ddl(TABLE),
        batch(["INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS",
               "INSERT INTO @t (pk, ck, v) VALUES (2, 1, 1) IF NOT EXISTS"], label="two_partitions"),
        batch(["INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS",
               "INSERT INTO @t (pk, ck, v) VALUES (1, 2, 1) USING TIMESTAMP 5"],
              label="timestamp_in_conditional"),
        # The statement is written at the transaction's timestamp, not its own.
        q("SELECT writetime(v) FROM @t WHERE pk = 1 AND ck = 2",
          mask={0: lambda w: w is not None and w != 5}, label="statement_timestamp_unused"),
        batch(["INSERT INTO @t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS"],
              batch_type=BatchType.UNLOGGED, label="unlogged_conditional"),
    ]),
    Case("static_condition", [
        ddl("CREATE TABLE @t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, s) VALUES (1, 5) IF NOT EXISTS", label="static_insert"),
        q("UPDATE @t SET s = 6 WHERE pk = 1 IF s = 5", label="static_update"),
        q("UPDATE @t SET v = 1 WHERE pk = 1 AND ck = 1 IF s = 6", label="regular_by_static"),
        q("SELECT * FROM @t"),
        batch(["UPDATE @t SET v = 2 WHERE pk = 1 AND ck = 2 IF s = 6",
               "UPDATE @t SET s = 7 WHERE pk = 1"], label="batch_static_condition"),
        q("SELECT * FROM @t", label="after_batch"),
        q("DELETE s FROM @t WHERE pk = 1 IF v = 1", label="static_delete_regular_condition"),
        q("DELETE FROM @t WHERE pk = 1 IF EXISTS", label="partition_delete_if_exists"),
        q("DELETE s FROM @t WHERE pk = 1 IF s = 7", label="static_delete_static_condition"),
        q("SELECT * FROM @t", label="after_static_delete"),
    ]),
]


def test_case(case, check):
    check(case)
