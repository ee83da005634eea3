"""LIMIT and PER PARTITION LIMIT."""

from differ import Case, ddl, p, px, q


def data(extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, v int, PRIMARY KEY (pk, ck))")]
    for pk in (1, 2, 3):
        for ck in (1, 2, 3, 4):
            steps.append(q(f"INSERT INTO @t (pk, ck, v) VALUES ({pk}, {ck}, {pk * 10 + ck})"))
    return steps + extra


CASES = [
    Case("limit", data([
        q("SELECT * FROM @t LIMIT 5"),
        q("SELECT * FROM @t WHERE pk = 2 LIMIT 2"),
        q("SELECT * FROM @t WHERE pk = 2 ORDER BY ck DESC LIMIT 3"),
        q("SELECT * FROM @t WHERE pk IN (1, 3) LIMIT 5"),
        q("SELECT * FROM @t LIMIT 100"),
        q("SELECT DISTINCT pk FROM @t LIMIT 2"),
    ])),
    Case("per_partition_limit", data([
        q("SELECT * FROM @t PER PARTITION LIMIT 1"),
        q("SELECT * FROM @t PER PARTITION LIMIT 2 LIMIT 5"),
        q("SELECT * FROM @t WHERE pk IN (3, 1) PER PARTITION LIMIT 2"),
        q("SELECT * FROM @t WHERE pk = 1 AND ck > 1 PER PARTITION LIMIT 2"),
    ])),
    Case("limit_bound", data([
        p("SELECT * FROM @t WHERE pk = ? LIMIT ?"),
        p("SELECT * FROM @t PER PARTITION LIMIT ? LIMIT ?"),
        px("SELECT * FROM @t WHERE pk = ? LIMIT ?", [1, 2]),
        px("SELECT * FROM @t PER PARTITION LIMIT ? LIMIT ?", [1, 2]),
    ])),
    Case("limit_errors", data([
        q("SELECT * FROM @t LIMIT 0", label="zero"),
        q("SELECT * FROM @t LIMIT -1", label="negative"),
        q("SELECT * FROM @t PER PARTITION LIMIT 0", label="ppl_zero"),
        px("SELECT * FROM @t LIMIT ?", [0], label="bound_zero"),
        q("SELECT * FROM @t LIMIT 'a'", label="text"),
        q("SELECT DISTINCT pk FROM @t PER PARTITION LIMIT 1", label="distinct_ppl"),
    ])),
    Case("distinct_rules", data([
        q("SELECT DISTINCT pk FROM @t WHERE pk IN (3, 1)"),
        q("SELECT DISTINCT pk FROM @t WHERE ck = 1 ALLOW FILTERING", label="clustering_restriction"),
        q("SELECT DISTINCT pk FROM @t WHERE v = 11 ALLOW FILTERING", label="regular_restriction"),
        q("SELECT DISTINCT token(pk) FROM @t", label="token_only"),
        q("SELECT DISTINCT count(*) FROM @t", label="aggregate_only"),
    ])),
    Case("limit_with_aggregate", data([
        q("SELECT count(*) FROM @t LIMIT 1"),
        q("SELECT pk, count(*) FROM @t GROUP BY pk PER PARTITION LIMIT 1"),
    ])),
]


def test_case(case, check):
    check(case)
