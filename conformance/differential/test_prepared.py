"""Prepared statement metadata: bind marker names and types, partition-key indexes, result
metadata."""

from differ import Case, ddl, p, px

TABLE = ("CREATE TABLE @t (a int, b text, ck int, v bigint, l list<int>, m map<text, int>, "
         "s set<text>, PRIMARY KEY ((a, b), ck))")

CASES = [
    Case("insert_markers", [
        ddl(TABLE),
        p("INSERT INTO @t (a, b, ck, v) VALUES (?, ?, ?, ?)"),
        p("INSERT INTO @t (ck, v, b, a) VALUES (?, ?, ?, ?)"),
        p("INSERT INTO @t (a, b, ck, v) VALUES (:x, :y, :z, :w)"),
        p("INSERT INTO @t (a, b, ck, v) VALUES (?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?"),
        p("INSERT INTO @t (a, b, ck) VALUES (1, ?, 2)"),
    ]),
    Case("update_markers", [
        ddl(TABLE),
        p("UPDATE @t SET v = ? WHERE a = ? AND b = ? AND ck = ?"),
        p("UPDATE @t SET l = l + ?, m[?] = ?, s = s - ? WHERE a = ? AND b = ? AND ck = ?"),
        p("UPDATE @t USING TIMESTAMP ? SET l[?] = ? WHERE a = ? AND b = ? AND ck = ?"),
        p("UPDATE @t SET v = :v WHERE b = :b AND a = :a AND ck IN :cks"),
    ]),
    Case("delete_markers", [
        ddl(TABLE),
        p("DELETE FROM @t WHERE a = ? AND b = ?"),
        p("DELETE v, m[?] FROM @t USING TIMESTAMP ? WHERE a = ? AND b = ? AND ck = ?"),
        p("DELETE FROM @t WHERE a = ? AND b = ? AND ck > ? AND ck <= ?"),
    ]),
    Case("select_markers", [
        ddl(TABLE),
        p("SELECT * FROM @t WHERE a = ? AND b = ?"),
        p("SELECT v, l FROM @t WHERE a IN ? AND b = ? AND ck = ?"),
        p("SELECT a, b FROM @t WHERE token(a, b) >= ? LIMIT ?"),
        p("SELECT * FROM @t WHERE a = ? AND b = ? AND ck IN (?, ?)"),
        p("SELECT m['k'] FROM @t WHERE a = ? AND b = ?"),
        p("SELECT * FROM @t WHERE m[?] = ? ALLOW FILTERING"),
        p("SELECT ck, v AS renamed, writetime(v), ttl(v) FROM @t WHERE a = ? AND b = ?"),
        p("SELECT count(*) FROM @t"),
    ]),
    Case("function_markers", [
        ddl(TABLE),
        p("SELECT * FROM @t WHERE a = ? AND b = ? AND ck = blobAsInt(?)"),
        p("SELECT intAsBlob(?) FROM @t"),
        p("INSERT INTO @t (a, b, ck, v) VALUES (?, ?, ?, toUnixTimestamp(?))"),
    ]),
    Case("prepared_execute_roundtrip", [
        ddl(TABLE),
        px("INSERT INTO @t (a, b, ck, v, l, m, s) VALUES (?, ?, ?, ?, ?, ?, ?)",
           [1, "x", 1, 2**40, [1, 2], {"k": 1}, {"s"}]),
        px("UPDATE @t SET l = l + ?, m[?] = ? WHERE a = ? AND b = ? AND ck = ?",
           [[3], "k2", 2, 1, "x", 1]),
        px("SELECT * FROM @t WHERE a = ? AND b = ?", [1, "x"]),
        px("SELECT m['k2'], l FROM @t WHERE a = ? AND b = ? AND ck = ?", [1, "x", 1]),
    ]),
    Case("prepare_errors", [
        ddl(TABLE),
        p("SELECT * FROM @t WHERE nosuch = ?", label="unknown_column"),
        p("INSERT INTO @t (a, b, ck, v) VALUES (?, ?, ?)", label="too_few_values"),
        p("SELECT * FROM @ks.nosuch WHERE a = ?", label="unknown_table"),
        p("SELEC * FROM @t", label="syntax"),
        p("INSERT INTO @t (a, b, ck, ck) VALUES (?, ?, ?, ?)", label="duplicate_column"),
    ]),
    Case("ddl_prepared", [
        p("CREATE TABLE @t (pk int PRIMARY KEY)", label="create"),
        ddl(TABLE),
        p("TRUNCATE @t", label="truncate"),
        p("USE @ks", label="use"),
    ]),
]


def test_case(case, check):
    check(case)
