"""Aggregates (count, min, max, sum, avg) and GROUP BY."""

from differ import Case, ddl, p, px, q


def numbers(extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, i int, b bigint, f float, d double, "
                 "dc decimal, vi varint, t text, ts timestamp, PRIMARY KEY (pk, ck))")]
    rows = [(1, 1, 10, 100, 1.5, 2.25, "1.10", 5, "'b'", "'2024-01-01'"),
            (1, 2, -3, 7, 2.5, -1.0, "2.205", -9, "'a'", "'2023-06-01'"),
            (1, 3, 4, 1, 0.25, 0.5, "0", 100000000000000000000, "'c'", "'2025-12-31'"),
            (2, 1, 7, 2, 3.0, 10.0, "-1.5", 1, "'z'", "'2020-02-02'"),
            (2, 2, None, None, None, None, None, None, None, None)]
    for r in rows:
        vals = ", ".join("null" if v is None else str(v) for v in r)
        steps.append(q(f"INSERT INTO @t (pk, ck, i, b, f, d, dc, vi, t, ts) VALUES ({vals})"))
    return steps + extra


CASES = [
    Case("count", numbers([
        q("SELECT count(*) FROM @t"),
        q("SELECT count(1) FROM @t"),
        q("SELECT count(i), count(t) FROM @t"),
        q("SELECT COUNT(*) FROM @t WHERE pk = 1"),
        q("SELECT count(*) AS n FROM @t WHERE pk = 1 AND ck > 1"),
        q("SELECT count(*) FROM @t WHERE pk = 9"),
    ])),
    Case("min_max", numbers([
        q("SELECT min(i), max(i), min(b), max(b) FROM @t"),
        q("SELECT min(f), max(d), min(dc), max(vi) FROM @t"),
        q("SELECT min(t), max(t), min(ts), max(ts) FROM @t"),
        q("SELECT max(ck) FROM @t WHERE pk = 1"),
        q("SELECT min(i) FROM @t WHERE pk = 9"),
    ])),
    Case("sum", numbers([
        q("SELECT sum(i), sum(b), sum(vi) FROM @t"),
        q("SELECT sum(f), sum(d), sum(dc) FROM @t"),
        q("SELECT sum(i) FROM @t WHERE pk = 9"),
    ])),
    Case("avg", numbers([
        q("SELECT avg(i), avg(b), avg(vi) FROM @t"),
        q("SELECT avg(f), avg(d), avg(dc) FROM @t"),
        q("SELECT avg(i) FROM @t WHERE pk = 9"),
        q("SELECT avg(dc) FROM @t WHERE pk = 9"),
    ])),
    Case("sum_overflow", [
        ddl("CREATE TABLE @t (pk int, ck int, i int, ti tinyint, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, ck, i, ti) VALUES (1, 1, 2147483647, 127)"),
        q("INSERT INTO @t (pk, ck, i, ti) VALUES (1, 2, 1, 1)"),
        q("SELECT sum(i), sum(ti), avg(i), avg(ti) FROM @t"),
    ]),
    Case("aggregate_with_columns", numbers([
        q("SELECT pk, ck, count(*) FROM @t WHERE pk = 1", label="column_and_aggregate"),
        q("SELECT i, max(i) FROM @t", label="regular_and_aggregate"),
        q("SELECT count(*), max(i) AS top, min(i) FROM @t WHERE pk IN (1, 2)"),
    ])),
    Case("aggregate_errors", numbers([
        q("SELECT sum(t) FROM @t", label="sum_text"),
        q("SELECT avg(ts) FROM @t", label="avg_timestamp"),
        q("SELECT count(i, b) FROM @t", label="count_two_args"),
        q("SELECT nosuch(i) FROM @t", label="unknown_function"),
    ])),
    Case("aggregate_prepared_metadata", numbers([
        p("SELECT count(*), min(i), max(dc), sum(b), avg(d) FROM @t WHERE pk = ?"),
        px("SELECT count(*) FROM @t WHERE pk = ?", [1]),
    ])),
    Case("group_by_partition", numbers([
        q("SELECT pk, count(*) FROM @t GROUP BY pk"),
        q("SELECT pk, max(i), sum(b) FROM @t GROUP BY pk"),
        q("SELECT pk, ck, i FROM @t GROUP BY pk", label="plain_columns"),
    ])),
    Case("group_by_clustering", numbers([
        q("SELECT pk, ck, count(*) FROM @t GROUP BY pk, ck"),
        q("SELECT pk, ck, count(*) FROM @t WHERE pk = 1 GROUP BY pk, ck"),
        q("SELECT pk, count(*) FROM @t WHERE pk = 1 GROUP BY pk LIMIT 1"),
        q("SELECT pk, count(*) FROM @t GROUP BY pk LIMIT 1"),
    ])),
    Case("group_by_limits", numbers([
        q("SELECT pk, ck, count(*) FROM @t GROUP BY pk, ck PER PARTITION LIMIT 2"),
        q("SELECT pk, ck, count(*) FROM @t GROUP BY pk, ck PER PARTITION LIMIT 1 LIMIT 1"),
        q("SELECT pk, ck, i FROM @t GROUP BY pk, ck PER PARTITION LIMIT 2", label="plain"),
        q("SELECT ck, count(*) FROM @t WHERE pk = 1 GROUP BY ck", label="skip_restricted_pk"),
        q("SELECT count(*) FROM @t PER PARTITION LIMIT 1", label="ungrouped_ppl"),
    ])),
    Case("group_by_errors", numbers([
        q("SELECT ck, count(*) FROM @t GROUP BY ck", label="skip_partition_key"),
        q("SELECT i, count(*) FROM @t GROUP BY i", label="regular_column"),
        q("SELECT pk, count(*) FROM @t GROUP BY pk, i", label="regular_after_key"),
    ])),
]


def test_case(case, check):
    check(case)
