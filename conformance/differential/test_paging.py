"""Paging: page sizes, has-more flags, resuming with a paging state."""

from differ import Case, ddl, pages, q


def data(n_partitions, n_rows, extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, v text, s int static, PRIMARY KEY (pk, ck))")]
    for pk in range(n_partitions):
        values = " ".join(f"INSERT INTO @t (pk, ck, v) VALUES ({pk}, {ck}, 'v{pk}_{ck}');"
                          for ck in range(n_rows))
        steps.append(q(f"BEGIN UNLOGGED BATCH {values} APPLY BATCH"))
    return steps + extra


CASES = [
    Case("full_scan_pages", data(5, 4, [
        pages("SELECT pk, ck, v FROM @t", 3),
        pages("SELECT pk, ck, v FROM @t", 1),
        pages("SELECT pk, ck, v FROM @t", 20),
        pages("SELECT pk, ck, v FROM @t", 100),
    ])),
    Case("single_partition_pages", data(2, 10, [
        pages("SELECT ck, v FROM @t WHERE pk = 1", 4),
        pages("SELECT ck, v FROM @t WHERE pk = 1 ORDER BY ck DESC", 3),
        pages("SELECT ck, v FROM @t WHERE pk = 1 AND ck > 2", 5),
    ])),
    Case("paging_with_limit", data(3, 5, [
        pages("SELECT pk, ck FROM @t LIMIT 7", 3),
        pages("SELECT pk, ck FROM @t PER PARTITION LIMIT 2", 2),
        pages("SELECT pk, ck FROM @t WHERE pk = 0 LIMIT 4", 3),
    ])),
    Case("paging_with_static", [
        ddl("CREATE TABLE @t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck))"),
        q("INSERT INTO @t (pk, s) VALUES (1, 1)"),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (2, 1, 2, 1)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (2, 2, 2)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (2, 3, 3)"),
        pages("SELECT * FROM @t", 2),
        pages("SELECT DISTINCT pk, s FROM @t", 1),
    ]),
    Case("paging_in_and_filtering", data(4, 4, [
        pages("SELECT pk, ck FROM @t WHERE pk IN (3, 1, 2)", 5),
        pages("SELECT pk, ck FROM @t WHERE ck = 2 ALLOW FILTERING", 2),
        pages("SELECT pk, ck FROM @t WHERE pk IN (0, 1)", 3, values=None),
    ])),
    Case("paging_prepared", data(3, 3, [
        pages("SELECT pk, ck, v FROM @t WHERE pk = ?", 2, values=[1]),
        pages("SELECT pk, ck, v FROM @t WHERE token(pk) > ?", 4, values=[-(2**63)]),
    ])),
    Case("paging_aggregate", data(3, 5, [
        pages("SELECT count(*) FROM @t", 2),
        pages("SELECT pk, count(*) FROM @t GROUP BY pk", 1),
    ])),
    Case("paging_large_rows", [
        ddl("CREATE TABLE @t (pk int, ck int, v text, PRIMARY KEY (pk, ck))"),
        *[q(f"INSERT INTO @t (pk, ck, v) VALUES (1, {ck}, '{str(ck) * 250000}')")
          for ck in range(1, 7)],
        pages("SELECT ck, v FROM @t WHERE pk = 1", 100, label="pages_by_size"),
    ]),
    Case("paging_empty", [
        ddl("CREATE TABLE @t (pk int, ck int, PRIMARY KEY (pk, ck))"),
        pages("SELECT * FROM @t", 10),
        pages("SELECT * FROM @t WHERE pk = 1", 10),
    ]),
]


def test_case(case, check):
    check(case)
