"""Clustering slices and order, multi-column restrictions, IN on clustering keys."""

from differ import Case, ddl, p, px, q


def filled(extra_steps, *, order=""):
    steps = [ddl("CREATE TABLE @t (pk int, c1 int, c2 text, v int, PRIMARY KEY (pk, c1, c2))"
                 + order)]
    for c1 in (1, 2, 3):
        for c2 in ("a", "b", "c"):
            steps.append(q(f"INSERT INTO @t (pk, c1, c2, v) VALUES (0, {c1}, '{c2}', {c1 * 10})"))
    steps.append(q("INSERT INTO @t (pk, c1, c2, v) VALUES (1, 1, 'a', 99)"))
    return steps + extra_steps


CASES = [
    Case("slice_single_bounds", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 1"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 >= 2"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 < 2"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 <= 2"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 1 AND c1 < 3"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 3"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 2 AND c1 < 2"),
    ])),
    Case("slice_second_column", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND c1 = 2 AND c2 > 'a'"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 = 2 AND c2 >= 'b' AND c2 < 'c'"),
        q("SELECT * FROM @t WHERE pk = 0 AND c2 > 'a'", label="skip_first"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 1 AND c2 > 'a'", label="slice_then_restrict"),
    ])),
    Case("order_by", filled([
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 DESC"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 DESC, c2 DESC"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 ASC, c2 ASC"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 >= 2 ORDER BY c1 DESC"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 DESC, c2 ASC", label="mixed_order"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c2 DESC", label="order_by_second"),
        q("SELECT * FROM @t ORDER BY c1 DESC", label="order_without_pk"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY v DESC", label="order_by_regular"),
    ])),
    Case("clustering_order_desc_table", filled([
        q("SELECT * FROM @t WHERE pk = 0"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 > 1"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 ASC"),
        q("SELECT * FROM @t WHERE pk = 0 ORDER BY c1 DESC, c2 ASC"),
    ], order=" WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")),
    Case("multi_column_slice", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) > (2, 'a')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) >= (2, 'b') AND (c1, c2) < (3, 'b')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) <= (1, 'b')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1) > (2)"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) > (2, 'a') AND c1 < 3", label="mixed"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c2, c1) > ('a', 2)", label="wrong_order"),
    ])),
    Case("multi_column_slice_desc", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) > (2, 'a')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) < (2, 'c') ORDER BY c1 ASC"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) >= (1, 'b') AND (c1, c2) < (3, 'a')"),
        px("SELECT * FROM @t WHERE pk = ? AND (c1, c2) <= (?, ?)", [0, 2, "b"]),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) > (2, 'a') AND (c1, c2) < (2, 'c')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) > (2, 'b') AND (c1, c2) < (2, 'b')"),
    ], order=" WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")),
    Case("multi_column_eq_and_in", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) = (2, 'b')"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) IN ((3, 'c'), (1, 'a'), (9, 'z'))"),
        q("SELECT * FROM @t WHERE pk = 0 AND (c1, c2) IN ((3, 'c'), (1, 'a')) ORDER BY c1 DESC"),
        px("SELECT * FROM @t WHERE pk = ? AND (c1, c2) IN ?", [0, [(2, "a"), (1, "c")]]),
        px("SELECT * FROM @t WHERE pk = ? AND (c1, c2) > ?", [0, (2, "b")]),
    ])),
    Case("in_on_clustering", filled([
        q("SELECT * FROM @t WHERE pk = 0 AND c1 IN (3, 1)"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 IN (3, 1) ORDER BY c1 DESC"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 = 2 AND c2 IN ('c', 'a', 'a')"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 IN (1, 2) AND c2 IN ('b', 'a')"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 IN ()"),
        q("SELECT * FROM @t WHERE pk = 0 AND c1 IN (1, 2) AND c2 > 'a'"),
        px("SELECT * FROM @t WHERE pk = ? AND c1 IN ?", [0, [2, 3]]),
    ])),
    Case("clustering_prepared_metadata", filled([
        p("SELECT * FROM @t WHERE pk = ? AND c1 > ? AND c1 <= ?"),
        p("SELECT c2, v FROM @t WHERE pk = :p AND c1 = :first AND c2 IN :seconds"),
        p("SELECT * FROM @t WHERE pk = ? AND (c1, c2) >= (?, ?)"),
        p("SELECT * FROM @t WHERE pk = ? AND (c1, c2) IN ((?, ?), (?, ?))"),
    ])),
    Case("range_delete", filled([
        q("DELETE FROM @t WHERE pk = 0 AND c1 > 1 AND c1 < 3"),
        q("SELECT * FROM @t WHERE pk = 0"),
        q("DELETE FROM @t WHERE pk = 0 AND c1 = 3 AND c2 >= 'b'"),
        q("SELECT * FROM @t WHERE pk = 0"),
        q("DELETE FROM @t WHERE pk = 0 AND (c1, c2) <= (1, 'b')"),
        q("SELECT * FROM @t WHERE pk = 0"),
        q("DELETE v FROM @t WHERE pk = 0 AND c1 > 0", label="column_range_delete"),
    ])),
]


def test_case(case, check):
    check(case)
