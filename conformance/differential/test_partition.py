"""Partition-key restrictions: IN (and the order of rows it returns), composite keys, token()."""

from differ import Case, ddl, p, px, q


def keyed(extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, v text, PRIMARY KEY (pk, ck))")]
    for pk in (5, 1, 3, 2, 4):
        for ck in (2, 1):
            steps.append(q(f"INSERT INTO @t (pk, ck, v) VALUES ({pk}, {ck}, 'p{pk}c{ck}')"))
    return steps + extra


def composite(extra):
    steps = [ddl("CREATE TABLE @t (a int, b text, ck int, v int, PRIMARY KEY ((a, b), ck))")]
    for a in (1, 2):
        for b in ("x", "y"):
            steps.append(q(f"INSERT INTO @t (a, b, ck, v) VALUES ({a}, '{b}', 1, {a})"))
    return steps + extra


CASES = [
    Case("full_scan_token_order", keyed([
        q("SELECT * FROM @t"),
        q("SELECT pk, token(pk) FROM @t"),
        q("SELECT DISTINCT pk FROM @t"),
    ])),
    Case("in_partition_order", keyed([
        q("SELECT * FROM @t WHERE pk IN (3, 1, 5)"),
        q("SELECT * FROM @t WHERE pk IN (4, 4, 2)"),
        q("SELECT * FROM @t WHERE pk IN (3, 1, 5) AND ck = 1"),
        q("SELECT * FROM @t WHERE pk IN (3, 1) ORDER BY ck DESC", label="order_by_with_in"),
        q("SELECT * FROM @t WHERE pk IN (99, 1)"),
    ])),
    Case("in_partition_prepared", keyed([
        px("SELECT * FROM @t WHERE pk IN ?", [[5, 2]]),
        px("SELECT * FROM @t WHERE pk IN (?, ?) AND ck IN ?", [2, 5, [2]]),
        px("SELECT * FROM @t WHERE pk IN ?", [[]]),
    ])),
    Case("composite_partition_key", composite([
        q("SELECT * FROM @t"),
        q("SELECT * FROM @t WHERE a = 1 AND b = 'y'"),
        q("SELECT * FROM @t WHERE a = 1 AND b IN ('y', 'x')"),
        q("SELECT * FROM @t WHERE a IN (2, 1) AND b = 'x'"),
        q("SELECT * FROM @t WHERE a IN (2, 1, 2) AND b IN ('y', 'x')"),
        q("SELECT * FROM @t WHERE a = 1", label="partial_key"),
        q("SELECT token(a, b), a, b FROM @t"),
        p("SELECT * FROM @t WHERE b = ? AND a = ?"),
        p("INSERT INTO @t (v, ck, b, a) VALUES (?, ?, ?, ?)"),
    ])),
    Case("token_restrictions", keyed([
        q("SELECT pk FROM @t WHERE token(pk) > token(3)"),
        q("SELECT pk FROM @t WHERE token(pk) <= token(3)"),
        q("SELECT pk FROM @t WHERE token(pk) > -9223372036854775808 AND token(pk) < 0"),
        q("SELECT pk FROM @t WHERE token(pk) >= 0"),
        q("SELECT pk FROM @t WHERE token(pk) = token(4)"),
        q("SELECT pk FROM @t WHERE token(pk) > token(3) AND token(pk) < token(3)"),
        q("SELECT pk FROM @t WHERE token(pk) > 9223372036854775807"),
        q("SELECT DISTINCT pk FROM @t WHERE token(pk) > token(1)"),
    ])),
    Case("token_prepared", keyed([
        p("SELECT pk FROM @t WHERE token(pk) > ? AND token(pk) <= ?"),
        px("SELECT pk, ck FROM @t WHERE token(pk) > ? AND token(pk) <= ?", [-(2**63), 0]),
        p("SELECT pk FROM @t WHERE token(pk) > token(?)"),
    ])),
    Case("token_errors", keyed([
        q("SELECT pk FROM @t WHERE token(ck) > 0", label="token_of_non_key"),
        q("SELECT pk FROM @t WHERE token(pk) > 'abc'", label="token_of_text"),
        q("SELECT pk FROM @t WHERE token(pk) > 0 AND pk = 1", label="token_and_eq"),
        q("UPDATE @t SET v = 'x' WHERE token(pk) > 0 AND ck = 1", label="token_in_update"),
    ])),
    Case("token_composite", composite([
        q("SELECT a, b FROM @t WHERE token(a, b) > token(1, 'x')"),
        q("SELECT a, b FROM @t WHERE token(b, a) > 0", label="wrong_order"),
    ])),
    Case("partition_key_errors", keyed([
        q("SELECT * FROM @t WHERE ck = 1", label="ck_without_pk"),
        q("SELECT * FROM @t WHERE pk > 1", label="pk_slice"),
        q("SELECT * FROM @t WHERE v = 'p1c1'", label="regular_without_filtering"),
        q("SELECT * FROM @t WHERE pk = 1 AND pk = 2", label="pk_twice"),
    ])),
]


def test_case(case, check):
    check(case)
