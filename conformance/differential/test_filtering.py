"""ALLOW FILTERING."""

from differ import Case, ddl, px, q


def data(extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, v int, t text, s set<int>, m map<text, int>, "
                 "l list<int>, PRIMARY KEY (pk, ck))")]
    for pk in (1, 2, 3):
        for ck in (1, 2, 3):
            steps.append(q(f"INSERT INTO @t (pk, ck, v, t, s, m, l) VALUES ({pk}, {ck}, {pk * ck}, "
                           f"'t{ck}', {{{pk}, {ck}}}, {{'k{ck}': {pk}}}, [{ck}, {pk}])"))
    return steps + extra


CASES = [
    Case("filter_regular_column", data([
        q("SELECT * FROM @t WHERE v = 2 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE v > 3 ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE v >= 2 AND v < 6 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE v = 2", label="without_allow_filtering"),
        q("SELECT * FROM @t WHERE t = 't2' AND v = 4 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE v IN (1, 9) ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE v != 1 ALLOW FILTERING", label="not_equal"),
    ])),
    Case("filter_clustering_column", data([
        q("SELECT * FROM @t WHERE ck = 2 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE ck > 1 AND ck < 3 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE pk = 1 AND v > 1 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE pk = 1 AND v > 1", label="pk_and_regular_without"),
        q("SELECT * FROM @t WHERE ck = 2", label="ck_without"),
    ])),
    Case("filter_partition_key", data([
        q("SELECT * FROM @t WHERE pk > 1 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE pk IN (1, 3) AND v > 2 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE token(pk) > 0 AND v = 3 ALLOW FILTERING"),
    ])),
    Case("filter_collections", data([
        q("SELECT pk, ck FROM @t WHERE s CONTAINS 3 ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE m CONTAINS KEY 'k2' ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE m CONTAINS 3 ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE l CONTAINS 2 ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE m['k1'] = 2 ALLOW FILTERING"),
        q("SELECT pk, ck FROM @t WHERE s CONTAINS 3", label="contains_without"),
    ])),
    Case("filter_prepared", data([
        px("SELECT pk, ck, v FROM @t WHERE v > ? ALLOW FILTERING", [5]),
        px("SELECT pk, ck FROM @t WHERE s CONTAINS ? ALLOW FILTERING", [2]),
        px("SELECT pk, ck FROM @t WHERE pk = ? AND v < ? ALLOW FILTERING", [3, 7]),
    ])),
    Case("filter_with_limit_and_count", data([
        q("SELECT * FROM @t WHERE v > 1 LIMIT 2 ALLOW FILTERING"),
        q("SELECT count(*) FROM @t WHERE v > 1 ALLOW FILTERING"),
        q("SELECT * FROM @t WHERE v > 1 PER PARTITION LIMIT 1 ALLOW FILTERING"),
    ])),
    Case("filter_static_column", [
        ddl("CREATE TABLE @t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (1, 1, 10, 1)"),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (2, 1, 20, 2)"),
        q("INSERT INTO @t (pk, s) VALUES (3, 10)"),
        q("SELECT * FROM @t WHERE s = 10 ALLOW FILTERING"),
        q("SELECT pk, s FROM @t WHERE s > 5 ALLOW FILTERING"),
    ]),
]


def test_case(case, check):
    check(case)
