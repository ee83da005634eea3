"""Static columns."""

from differ import Case, ddl, px, q

TABLE = "CREATE TABLE @t (pk int, ck int, s text static, v int, PRIMARY KEY (pk, ck))"

CASES = [
    Case("static_only_partition", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, s) VALUES (1, 'static only')"),
        q("SELECT * FROM @t"),
        q("SELECT pk, s FROM @t WHERE pk = 1"),
        q("SELECT ck, v FROM @t WHERE pk = 1"),
        q("SELECT count(*) FROM @t WHERE pk = 1"),
    ]),
    Case("static_shared_by_rows", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (1, 1, 'a', 10)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 20)"),
        q("UPDATE @t SET s = 'b' WHERE pk = 1"),
        q("SELECT * FROM @t WHERE pk = 1"),
        q("SELECT s FROM @t WHERE pk = 1"),
        q("SELECT DISTINCT pk, s FROM @t"),
    ]),
    Case("static_delete", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (1, 1, 'a', 10)"),
        q("DELETE s FROM @t WHERE pk = 1"),
        q("SELECT * FROM @t"),
        q("DELETE FROM @t WHERE pk = 1 AND ck = 1"),
        q("SELECT * FROM @t"),
        q("INSERT INTO @t (pk, s) VALUES (2, 'x')"),
        q("DELETE FROM @t WHERE pk = 2 AND ck = 5"),
        q("SELECT * FROM @t WHERE pk = 2"),
    ]),
    Case("static_with_slice", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, ck, s, v) VALUES (1, 1, 'a', 10)"),
        q("INSERT INTO @t (pk, ck, v) VALUES (1, 2, 20)"),
        q("SELECT * FROM @t WHERE pk = 1 AND ck > 5"),
        q("SELECT * FROM @t WHERE pk = 1 AND ck >= 2"),
        q("SELECT s, v FROM @t WHERE pk = 1 AND ck < 0"),
    ]),
    Case("static_errors", [
        ddl(TABLE),
        q("UPDATE @t SET v = 1 WHERE pk = 1", label="regular_without_ck"),
        q("INSERT INTO @t (pk, ck, s) VALUES (1, 1, 'x')", label="static_with_ck"),
        q("INSERT INTO @t (pk, v) VALUES (1, 1)", label="regular_without_ck_insert"),
        ddl("CREATE TABLE @t2 (pk int PRIMARY KEY, s int static)"),
        ddl("CREATE TABLE @t3 (pk int, ck int static, PRIMARY KEY (pk, ck))"),
    ]),
    Case("static_prepared", [
        ddl(TABLE),
        px("UPDATE @t SET s = ? WHERE pk = ?", ["p", 3]),
        px("SELECT pk, ck, s FROM @t WHERE pk = ?", [3]),
        px("INSERT INTO @t (pk, ck, s, v) VALUES (?, ?, ?, ?)", [3, 1, "q", 1]),
        px("SELECT * FROM @t WHERE pk = ?", [3]),
    ]),
]


def test_case(case, check):
    check(case)
