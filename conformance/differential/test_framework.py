"""The comparator itself (no servers): it must see the differences a user would see."""

import decimal

from differ import Allowance, Names, aspects, compare, error_observation, judge, norm, q

NAMES = Names("ks", "tbl")


def test_norm_keeps_visible_distinctions():
    assert norm(decimal.Decimal("1.0")) != norm(decimal.Decimal("1.00"))
    assert norm((1, 2)) != norm([1, 2])
    assert norm(float("nan")) == {"float": "NaN"}
    assert norm(2**70) == {"int": str(2**70)}
    assert norm(b"\x00\xff") == {"blob": "00ff"}


def test_compare_reports_rows_and_errors():
    step = q("SELECT * FROM @t")
    emu = [{"kind": "rows", "columns": [["a", "int"]], "rows": [[1]], "warnings": 0}]
    cas = [{"kind": "rows", "columns": [["a", "int"]], "rows": [[2]], "warnings": 0}]
    diffs = compare("c/x", [step], emu, cas, NAMES)
    assert [(d.aspect, d.emulator, d.cassandra) for d in diffs] == [("rows", [[1]], [[2]])]
    assert diffs[0].cql == "SELECT * FROM ks.tbl"
    err = [{"kind": "error", "error": {"class": "InvalidRequest", "code": "0x2200"}}]
    diffs = compare("c/x", [step], err, cas, NAMES)
    assert [d.aspect for d in diffs] == ["outcome"]


def test_judge_allowance_and_scylla_expectation():
    step = q("SELECT * FROM @t", label="s")
    emu = [{"kind": "rows", "columns": [["a", "int"]], "rows": [[1]], "warnings": 0}]
    cas = [{"kind": "rows", "columns": [["a", "int"]], "rows": [[2]], "warnings": 0}]
    diffs = compare("c/x", [step], emu, cas, NAMES)
    ok = Allowance(case="c/x", reason="r", source="s", step="s", aspect="rows",
                   scylla=[[1]], has_scylla=True)
    unexplained, allowed, broken = judge("c/x", [step], emu, diffs, [ok])
    assert not unexplained and len(allowed) == 1 and not broken
    wrong = Allowance(case="c/x", reason="r", source="s", step="s", aspect="rows",
                      scylla=[[3]], has_scylla=True)
    _, _, broken = judge("c/x", [step], emu, diffs, [wrong])
    assert broken and broken[0][2] == [[1]]
    unexplained, _, _ = judge("c/x", [step], emu, diffs, [])
    assert len(unexplained) == 1


def test_aspects_of_pages_flag_short_pages():
    from differ import pages

    step = pages("SELECT * FROM @t", 3)
    obs = {"kind": "pages", "columns": [], "pages": [{"rows": [[1], [2]], "more": True},
                                                     {"rows": [[3]], "more": False}]}
    assert aspects(obs, step)["short_pages"] is True


def test_rename_allowance_requires_the_rewritten_names():
    step = q("SELECT * FROM @t WHERE pk IN ?", label="p")
    def prepared(name):
        return [{"kind": "prepared", "bind": [["ks", "tbl", name, "list<int>"]],
                 "pk_indexes": [], "result_metadata": []}]

    cas, emu_ok, emu_bad = prepared("in(pk)"), prepared("IN(pk)"), prepared("pk")
    rule = Allowance(case="*/*", reason="r", source="s", aspect="bind",
                     rename=[[r"in\((.*)\)", r"IN(\1)"]])
    diffs = compare("c/x", [step], emu_ok, cas, NAMES)
    assert [d.aspect for d in diffs] == ["bind"]
    unexplained, allowed, _ = judge("c/x", [step], emu_ok, diffs, [rule])
    assert not unexplained and len(allowed) == 1
    diffs = compare("c/x", [step], emu_bad, cas, NAMES)
    unexplained, _, _ = judge("c/x", [step], emu_bad, diffs, [rule])
    assert len(unexplained) == 1


def test_error_observation_keeps_the_servers_answers_of_no_host_available():
    from cassandra.cluster import NoHostAvailable
    from cassandra.protocol import ServerError

    server = ServerError(code=0x0000, message="marshaling error: x", info=None)
    exc = NoHostAvailable("Unable to complete the operation against any hosts",
                          {"127.0.87.1:41234": server})
    obs = error_observation(exc)
    assert obs == {"class": "NoHostAvailable", "code": None,
                   "errors": [{"class": "ServerError", "code": "0x0000"}]}
    # Without server answers (a connection failure), the text is still the only clue.
    lost = NoHostAvailable("Unable to connect", {"127.0.87.1:41234": OSError("refused")})
    assert "detail" in error_observation(lost)
