"""Collection updates, element and slice selection (and their column names), UDT fields."""

from differ import Case, ddl, p, px, q

TABLE = ("CREATE TABLE @t (pk int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, "
         "fm frozen<map<text, int>>, fs frozen<set<int>>)")
ROW = "INSERT INTO @t (pk, l, s, m, fm, fs) VALUES (1, [10, 20, 30], {'a', 'c', 'b'}, " \
      "{'x': 1, 'y': 2, 'z': 3}, {'k': 1, 'j': 2}, {3, 1})"

CASES = [
    Case("map_element_selection", [
        ddl(TABLE), q(ROW),
        q("SELECT m['y'] FROM @t WHERE pk = 1"),
        q("SELECT m['nosuch'] FROM @t WHERE pk = 1"),
        q("SELECT fm['j'], m['x'] AS mx FROM @t WHERE pk = 1"),
        px("SELECT m[?] FROM @t WHERE pk = ?", ["z", 1]),
    ]),
    Case("map_and_set_slices", [
        ddl(TABLE), q(ROW),
        q("SELECT m['x'..'y'] FROM @t WHERE pk = 1"),
        q("SELECT m['y'..] FROM @t WHERE pk = 1"),
        q("SELECT s['b'] FROM @t WHERE pk = 1"),
        q("SELECT s['a'..'b'] FROM @t WHERE pk = 1"),
        q("SELECT fs[1] FROM @t WHERE pk = 1"),
    ]),
    Case("element_selection_names", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, mi map<int, int>, mb map<blob, int>, "
            "mt map<timestamp, int>, md map<date, int>, mu map<uuid, int>, st set<text>)"),
        q("INSERT INTO @t (pk, mi, mb, mt, md, mu, st) VALUES (1, {1: 10}, {0x01: 11}, "
          "{'2024-01-01 00:00:00+0000': 12}, {'2024-01-01': 13}, "
          "{d2177dd0-eaa2-11de-a572-001b779c76e3: 14}, {'a'})"),
        q("SELECT mi[1], mb[0x01], mt['2024-01-01 00:00:00+0000'] FROM @t WHERE pk = 1",
          label="typed_keys"),
        q("SELECT md['2024-01-01'], mu[d2177dd0-eaa2-11de-a572-001b779c76e3], st['a'] FROM @t "
          "WHERE pk = 1", label="more_typed_keys"),
        p("SELECT mi[?], st[?] FROM @t WHERE pk = ?", label="markers"),
        p("SELECT mi[:k] FROM @t WHERE pk = :p", label="named_marker"),
    ]),
    Case("list_element_selection", [
        ddl(TABLE), q(ROW),
        q("SELECT l[0] FROM @t WHERE pk = 1", label="index"),
        q("SELECT l[1..2] FROM @t WHERE pk = 1", label="slice"),
    ]),
    Case("list_updates", [
        ddl(TABLE), q(ROW),
        q("UPDATE @t SET l = l + [40] WHERE pk = 1"),
        q("UPDATE @t SET l = [5] + l WHERE pk = 1"),
        q("UPDATE @t SET l = l - [20] WHERE pk = 1"),
        q("UPDATE @t SET l[0] = 99 WHERE pk = 1"),
        q("SELECT l FROM @t WHERE pk = 1"),
        q("DELETE l[1] FROM @t WHERE pk = 1"),
        q("SELECT l FROM @t WHERE pk = 1"),
        q("UPDATE @t SET l[10] = 1 WHERE pk = 1", label="index_out_of_bounds"),
        q("UPDATE @t SET l[0] = 1 WHERE pk = 2", label="index_on_missing_list"),
        q("UPDATE @t SET l = l + [1] WHERE pk = 3"),
        q("SELECT pk, l FROM @t"),
    ]),
    Case("set_updates", [
        ddl(TABLE), q(ROW),
        q("UPDATE @t SET s = s + {'d', 'a'} WHERE pk = 1"),
        q("UPDATE @t SET s = s - {'b', 'nosuch'} WHERE pk = 1"),
        q("SELECT s FROM @t WHERE pk = 1"),
        q("UPDATE @t SET s = s - {'a', 'c', 'd'} WHERE pk = 1"),
        q("SELECT pk, s FROM @t WHERE pk = 1"),
        q("UPDATE @t SET s = {} WHERE pk = 1"),
        q("SELECT s FROM @t WHERE pk = 1"),
    ]),
    Case("map_updates", [
        ddl(TABLE), q(ROW),
        q("UPDATE @t SET m['w'] = 0, m['x'] = 100 WHERE pk = 1"),
        q("UPDATE @t SET m = m + {'v': -1} WHERE pk = 1"),
        q("UPDATE @t SET m = m - {'y'} WHERE pk = 1"),
        q("DELETE m['z'] FROM @t WHERE pk = 1"),
        q("SELECT m FROM @t WHERE pk = 1"),
        q("UPDATE @t SET m['k'] = null WHERE pk = 1"),
        q("SELECT m FROM @t WHERE pk = 1"),
    ]),
    Case("frozen_collection_errors", [
        ddl(TABLE), q(ROW),
        q("UPDATE @t SET fm['k'] = 5 WHERE pk = 1", label="frozen_element_set"),
        q("UPDATE @t SET fs = fs + {4} WHERE pk = 1", label="frozen_add"),
        q("DELETE fm['k'] FROM @t WHERE pk = 1", label="frozen_element_delete"),
        q("UPDATE @t SET s = s + [1] WHERE pk = 1", label="list_literal_for_set"),
        q("UPDATE @t SET m = m + {'a'} WHERE pk = 1", label="set_literal_for_map"),
    ]),
    Case("collection_prepared", [
        ddl(TABLE),
        p("UPDATE @t SET l = l + ?, s = s + ?, m = m + ? WHERE pk = ?"),
        p("UPDATE @t SET m[?] = ?, l[?] = ? WHERE pk = ?"),
        p("DELETE m[?], l[?] FROM @t WHERE pk = ?"),
        px("UPDATE @t SET l = l + ?, s = s + ?, m = m + ? WHERE pk = ?", [[1], {"q"}, {"r": 5}, 7]),
        px("SELECT l, s, m FROM @t WHERE pk = ?", [7]),
    ]),
    Case("collection_null_elements", [
        ddl(TABLE),
        q("INSERT INTO @t (pk, l) VALUES (1, [1, null])", label="null_in_list"),
        q("INSERT INTO @t (pk, s) VALUES (1, {'a', null})", label="null_in_set"),
        q("INSERT INTO @t (pk, m) VALUES (1, {'a': null})", label="null_map_value"),
        q("SELECT * FROM @t"),
    ]),
    Case("udt_field_selection", [
        ddl("CREATE TYPE @ks.@ut (a int, b text, c list<int>)"),
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, u frozen<@ut>, nu @ut)"),
        q("INSERT INTO @t (pk, u, nu) VALUES (1, {a: 1, b: 'x', c: [1]}, {a: 2, b: 'y'})"),
        q("SELECT u.a, u.b, nu.c, nu.b FROM @t"),
        q("SELECT u.nosuch FROM @t", label="unknown_field"),
        q("UPDATE @t SET u.a = 5 WHERE pk = 1", label="frozen_field_update"),
        q("UPDATE @t SET nu.a = 5, nu.c = [9] WHERE pk = 1"),
        q("SELECT nu FROM @t"),
    ]),
]


def test_case(case, check):
    check(case)
