"""pytest wiring of the differential suite.

Each ``test_<category>.py`` module holds ``CASES`` (a list of ``differ.Case``) and one
``test_case(case, check)`` function; this file parametrizes it with the module's cases, connects
to both targets once per run, and prints a per-case and per-category summary.

Targets come from the environment (``run`` sets them):
``DIFF_EMULATOR=host:port`` (scylla-emulator) and ``DIFF_CASSANDRA=host:port`` (Cassandra).
Without them every case is skipped, saying so. ``DIFF_REPORT=path`` writes every case's
observations and differences as JSON.
"""

from __future__ import annotations

import json
import os
import pathlib
import time
from collections import OrderedDict

import pytest

import differ

HERE = pathlib.Path(__file__).resolve().parent
RESULTS: "OrderedDict[str, dict]" = OrderedDict()


def pytest_generate_tests(metafunc):
    if "case" in metafunc.fixturenames:
        cases = getattr(metafunc.module, "CASES", [])
        names = [c.name for c in cases]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"{metafunc.module.__name__}: duplicate case names {sorted(dupes)}")
        metafunc.parametrize("case", cases, ids=names)


def _endpoint(var):
    value = os.environ.get(var)
    if not value:
        return None
    host, _, port = value.rpartition(":")
    return host, int(port)


def _connect(host, port):
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy
    from cassandra.query import tuple_factory

    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([host]),
        row_factory=tuple_factory,
        request_timeout=60,
    )
    cluster = Cluster(
        [host],
        port=port,
        protocol_version=4,
        # Same wire on both sides (the embedded cluster has no compression yet).
        compression=False,
        # The driver cannot read the embedded cluster's schema tables yet (another engineer's
        # work); metadata is tested elsewhere, this suite compares query results.
        schema_metadata_enabled=False,
        token_metadata_enabled=False,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        connect_timeout=20,
        control_connection_timeout=20,
    )
    return cluster, cluster.connect()


@pytest.fixture(scope="session")
def targets():
    emu, cas = _endpoint("DIFF_EMULATOR"), _endpoint("DIFF_CASSANDRA")
    if not emu or not cas:
        message = "skipped: DIFF_EMULATOR and DIFF_CASSANDRA are not set (start both with ./run)"
        print(message)
        pytest.skip(message)
    clusters, sessions = [], {}
    for name, (host, port) in (("emulator", emu), ("cassandra", cas)):
        cluster, session = _connect(host, port)
        clusters.append(cluster)
        session.execute(f"DROP KEYSPACE IF EXISTS {differ.KEYSPACE}")
        session.execute(
            f"CREATE KEYSPACE {differ.KEYSPACE} WITH replication = "
            "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        sessions[name] = session
    yield sessions
    for cluster in clusters:
        cluster.shutdown()


@pytest.fixture(scope="session")
def allowances():
    return differ.load_allowances(HERE / "allowed_differences.yaml")


def _category(request):
    return request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")


def _short(value, limit=400):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@pytest.fixture
def check(request, targets, allowances):
    """Runs a case on both targets; fails with every unexplained difference."""

    def run(case: differ.Case):
        start = time.monotonic()
        report = differ.run_case(case, _category(request), targets, allowances)
        report["seconds"] = round(time.monotonic() - start, 3)
        RESULTS[report["case"]] = report
        problems = []
        for d in report["unexplained"]:
            problems.append(
                f"  step {d.step} [{d.aspect}] {d.cql}\n"
                f"    emulator : {_short(d.emulator)}\n"
                f"    cassandra: {_short(d.cassandra)}"
            )
        for a, label, got in report["broken"]:
            problems.append(
                f"  step {label}: allowed difference ({a.reason}) expects ScyllaDB's answer\n"
                f"    {_short(a.scylla)}\n"
                f"    emulator gave {_short(got)}"
            )
        if problems:
            pytest.fail(f"{report['case']}: {len(problems)} difference(s)\n" + "\n".join(problems),
                        pytrace=False)

    return run


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not RESULTS:
        return
    tr = terminalreporter
    tr.section("differential cases")
    by_category: "OrderedDict[str, list[int]]" = OrderedDict()
    for case_id, r in RESULTS.items():
        failed = bool(r["unexplained"] or r["broken"])
        category = case_id.split("/", 1)[0]
        counts = by_category.setdefault(category, [0, 0, 0])
        counts[0 if not failed else 1] += 1
        counts[2] += len(r["allowed"]) and 1
        if failed:
            aspects = sorted({f"{d.aspect}@{d.step}" for d in r["unexplained"]}
                             | {f"scylla-expectation@{label}" for _, label, _ in r["broken"]})
            tr.write_line(f"FAIL  {case_id}  ({', '.join(aspects)})")
        else:
            note = f"  ({len(r['allowed'])} allowed difference(s))" if r["allowed"] else ""
            tr.write_line(f"PASS  {case_id}{note}")
    tr.section("differential summary by category")
    tr.write_line(f"{'category':<16}{'cases':>7}{'agree':>7}{'differ':>8}{'allowed':>9}")
    total = [0, 0, 0]
    for category, (ok, bad, allowed) in by_category.items():
        tr.write_line(f"{category:<16}{ok + bad:>7}{ok:>7}{bad:>8}{allowed:>9}")
        total = [total[0] + ok, total[1] + bad, total[2] + allowed]
    tr.write_line(f"{'total':<16}{total[0] + total[1]:>7}{total[0]:>7}{total[1]:>8}{total[2]:>9}")
    tr.write_line("(agree: no difference, or only differences allowed_differences.yaml explains; "
                  "allowed: cases passing thanks to an allowed difference)")
    tr.write_line(f"differential: {total[0]} passed, {total[1]} failed")
    path = os.environ.get("DIFF_REPORT")
    if path:
        out = []
        for r in RESULTS.values():
            out.append({
                "case": r["case"],
                "seconds": r["seconds"],
                "passed": not (r["unexplained"] or r["broken"]),
                "unexplained": [d.__dict__ for d in r["unexplained"]],
                "allowed": [{**d.__dict__, "reason": a.reason, "source": a.source}
                            for d, a in r["allowed"]],
                "broken": [{"reason": a.reason, "step": label, "aspect": a.aspect,
                            "expected": a.scylla, "emulator": got}
                           for a, label, got in r["broken"]],
                "observations": r["observations"],
            })
        pathlib.Path(path).write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
        tr.write_line(f"full report: {path}")
