"""Runs one differential case against two CQL servers and compares what a client sees.

A *case* is a list of *steps* (a statement, a prepare, a batch, a paged read). Every step runs
on both targets (the embedded cluster, ``scylla-emulator``, and a real Apache Cassandra node),
in the same order, each through the Python driver (protocol v4). Each step yields an
*observation*: a plain JSON-like dict of what the driver returned (columns with types, rows,
warnings, error class and code, prepared metadata, page boundaries). Observations are
compared aspect by aspect; every difference either matches an entry of
``allowed_differences.yaml`` (which cites the ScyllaDB document or source that justifies it) or
fails the case.

Statements name the case's objects with ``@`` placeholders, replaced before sending:
``@ks`` (the suite's keyspace), ``@t``, ``@t2``, ``@t3`` (tables, ``ks.name``), ``@tn``
(the bare table name), ``@ut``, ``@ut2`` (type names, bare), ``@mv``, ``@idx`` (view and
index names, bare). ``@`` appears nowhere else in CQL, so no literal is ever rewritten.
"""

from __future__ import annotations

import datetime
import decimal
import fnmatch
import ipaddress
import math
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import cassandra
from cassandra import ConsistencyLevel
from cassandra.query import BatchStatement, BatchType, SimpleStatement
from cassandra.util import Date, Duration, Time

KEYSPACE = "differential"
INDEX_BUILD_TIMEOUT = 30.0
# How long a view may take to be built from its base's existing rows.
VIEW_BUILD_TIMEOUT = 60.0

# ------------------------------------------------------------------------------------------
# Steps
# ------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One action of a case. ``kind`` is one of query, prepare, execute, batch, pages,
    view_built."""

    kind: str
    cql: str | list = ""
    values: Any = None
    label: str | None = None
    # Compare the warnings the server attached (count), not only rows and errors.
    warnings: bool = False
    # Column index or name -> function(value) -> comparable value, for values that cannot be equal on
    # two servers (now(), uuid(), a TTL counting down): the case says what must hold instead.
    mask: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    fetch_size: int | None = None
    consistency: int | None = None
    serial_consistency: int | None = None
    batch_type: Any = None
    prepared: bool = False
    # Sort rows before comparing (only where neither server promises an order).
    unordered: bool = False
    # Compare only the shape of rows (count and columns), for reads whose values are
    # server-specific by nature (e.g. system tables); the case says so explicitly.
    rows_compared: bool = True
    # A schema statement (for reading the case; compared like any other step).
    schema_step: bool = False
    # Retry (bounded) while the server answers ReadFailure: a secondary index that is still
    # being built (Cassandra builds new indexes in the background).
    until_indexed: bool = False


def q(cql, *, label=None, warnings=False, mask=None, fetch_size=None, consistency=None,
      serial_consistency=None, unordered=False, rows_compared=True, until_indexed=False):
    """A QUERY (unprepared; no bound values)."""
    return Step("query", cql, label=label, warnings=warnings, mask=mask or {},
                fetch_size=fetch_size, consistency=consistency,
                serial_consistency=serial_consistency, unordered=unordered,
                rows_compared=rows_compared, until_indexed=until_indexed)


def ddl(cql, *, label=None):
    """A schema statement (compared like a query: success, or the same error)."""
    return Step("query", cql, label=label, schema_step=True)


def p(cql, *, label=None):
    """PREPARE only: compares bind markers, partition-key indexes and result metadata."""
    return Step("prepare", cql, label=label)


def px(cql, values, *, label=None, warnings=False, mask=None, fetch_size=None,
       consistency=None, serial_consistency=None, unordered=False):
    """PREPARE, then EXECUTE with bound values (sent as bytes on the wire)."""
    return Step("execute", cql, values=values, label=label, warnings=warnings,
                mask=mask or {}, fetch_size=fetch_size, consistency=consistency,
                serial_consistency=serial_consistency, unordered=unordered)


def batch(statements, *, batch_type=BatchType.LOGGED, prepared=False, label=None,
          warnings=False, mask=None, serial_consistency=None):
    """A BATCH frame. ``statements`` is a list of CQL strings or (cql, values) pairs;
    with ``prepared`` every statement is prepared first and sent by id with bound values."""
    return Step("batch", statements, label=label, warnings=warnings, mask=mask or {},
                batch_type=batch_type, prepared=prepared,
                serial_consistency=serial_consistency)


def view_built(view="@mv", *, label=None):
    """Waits (bounded) until ``system.built_views`` lists ``view`` (bare name, in ``@ks``).
    Both servers build a view from its base's existing rows in the background and record it
    there when done; the observation is whether it was built in time."""
    return Step("view_built", view, label=label)


def pages(cql, fetch_size, *, values=None, label=None):
    """A paged read: every page's rows and has-more flag, and a resumed read that passes the
    first page's paging state back in a new request."""
    return Step("pages", cql, values=values, label=label, fetch_size=fetch_size)


@dataclass
class Case:
    """A named list of steps; ``category`` comes from the test module."""

    name: str
    steps: list[Step]
    doc: str = ""


# ------------------------------------------------------------------------------------------
# Masks
# ------------------------------------------------------------------------------------------


def is_timeuuid(v):
    return "timeuuid" if isinstance(v, uuid.UUID) and v.version == 1 else repr(v)


def is_uuid4(v):
    return "uuid4" if isinstance(v, uuid.UUID) and v.version == 4 else repr(v)


def is_recent_timestamp(v):
    """A datetime within a day of now (both servers' clocks are this machine's)."""
    if isinstance(v, datetime.datetime):
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        naive = v.replace(tzinfo=None)
        return "recent" if abs((now - naive).total_seconds()) < 86400 else f"far:{v}"
    return repr(v)


def is_recent_date(v):
    if isinstance(v, Date):
        today = datetime.date.today()
        return "today" if abs((v.date() - today).days) <= 1 else f"far:{v}"
    return repr(v)


def is_recent_micros(v):
    """A write timestamp in microseconds within a day of now."""
    if isinstance(v, int):
        now = datetime.datetime.now(datetime.timezone.utc).timestamp() * 1e6
        return "recent" if abs(now - v) < 86400e6 else f"far:{v}"
    return repr(v)


def in_range(lo, hi):
    def check(v):
        return f"in[{lo},{hi}]" if isinstance(v, int) and lo <= v <= hi else repr(v)
    return check


def present(v):
    return "null" if v is None else "present"


# ------------------------------------------------------------------------------------------
# Normalisation of driver values and types
# ------------------------------------------------------------------------------------------


def render_type(t) -> str:
    """A CQL type from the driver's type class, with UDT keyspace, name and fields."""
    name = getattr(t, "typename", None) or getattr(t, "cassname", None) or str(t)
    if getattr(t, "fieldnames", None):  # a UDT
        fields = ", ".join(f"{f} {render_type(s)}" for f, s in zip(t.fieldnames, t.subtypes))
        return f"udt<{t.keyspace}.{t.typename}>({fields})"
    subtypes = getattr(t, "subtypes", ())
    if subtypes:
        return f"{name}<{', '.join(render_type(s) for s in subtypes)}>"
    return name


def norm(v):
    """A driver value as JSON-like data that keeps every distinction a user can see
    (decimal scale, map order, tuple vs list, UDT field names)."""
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v if abs(v) < 2**53 else {"int": str(v)}
    if isinstance(v, float):
        if math.isnan(v):
            return {"float": "NaN"}
        if math.isinf(v):
            return {"float": "Infinity" if v > 0 else "-Infinity"}
        return {"float": repr(v)}
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"blob": bytes(v).hex()}
    if isinstance(v, uuid.UUID):
        return {"uuid": str(v)}
    if isinstance(v, datetime.datetime):
        return {"timestamp": v.isoformat()}
    if isinstance(v, datetime.date):
        return {"date": v.isoformat()}
    if isinstance(v, Date):
        return {"date": str(v)}
    if isinstance(v, (Time, datetime.time)):
        return {"time": str(v)}
    if isinstance(v, Duration):
        return {"duration": [v.months, v.days, v.nanoseconds]}
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return {"inet": str(v)}
    if hasattr(v, "_fields"):  # UDT values are namedtuples
        return {"udt": {f: norm(getattr(v, f)) for f in v._fields}}
    if isinstance(v, tuple):
        return {"tuple": [norm(x) for x in v]}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if hasattr(v, "items"):  # OrderedMapSerializedKey, dict
        return {"map": [[norm(k), norm(x)] for k, x in v.items()]}
    if isinstance(v, (set, frozenset)) or type(v).__name__ == "SortedSet":
        return {"set": [norm(x) for x in v]}
    return {"other": f"{type(v).__name__}:{v!r}"}


def error_observation(exc: BaseException) -> dict:
    """Driver exception type, CQL error code, and the protocol fields of the error body
    (not its message text: the two servers word messages differently)."""
    obs: dict[str, Any] = {"class": type(exc).__name__}
    code = getattr(exc, "code", None)
    if code is None:
        # Exceptions the driver builds from an ERROR frame (``to_exception``) drop the code;
        # the class tells it.
        code = {
            "InvalidRequest": 0x2200,
            "Unauthorized": 0x2100,
            "ConfigurationException": 0x2300,
            "AuthenticationFailed": 0x0100,
            "AlreadyExists": 0x2400,
            "Unavailable": 0x1000,
            "ReadTimeout": 0x1200,
            "WriteTimeout": 0x1100,
            "ReadFailure": 0x1300,
            "WriteFailure": 0x1500,
            "FunctionFailure": 0x1400,
        }.get(type(exc).__name__)
    obs["code"] = f"0x{code:04x}" if isinstance(code, int) else None
    if type(exc).__name__ == "AlreadyExists":
        obs["keyspace"] = getattr(exc, "keyspace", None)
        obs["table"] = getattr(exc, "table", None) or None
    inner = getattr(exc, "errors", None)
    if code is None and isinstance(inner, dict) and inner:
        answers = [error_observation(e) for e in inner.values()]
        if all(a.get("code") for a in answers):
            # The driver gave up after every host answered with an error it retries on the
            # next host (a ServerError): what the servers answered, not the hosts' addresses.
            obs["errors"] = answers
            return obs
    if code is None:
        # Not a server answer (the driver refused a value, or lost the connection): the
        # text is the only clue, and it comes from the same driver on both sides.
        obs["detail"] = str(exc)[:300]
    return obs


# ------------------------------------------------------------------------------------------
# Running steps
# ------------------------------------------------------------------------------------------


@dataclass
class Names:
    """Concrete names of a case's objects (the same on both targets)."""

    ks: str
    base: str

    def mapping(self) -> dict[str, str]:
        b = self.base
        return {
            "ks": self.ks,
            "ks2": f"{b}_ks",
            "t": f"{self.ks}.{b}",
            "t2": f"{self.ks}.{b}_2",
            "t3": f"{self.ks}.{b}_3",
            "tn": b,
            "tn2": f"{b}_2",
            "ut": f"{b}_ut",
            "ut2": f"{b}_ut2",
            "mv": f"{b}_mv",
            "idx": f"{b}_idx",
        }


_PLACEHOLDER = re.compile(r"@(\w+)")


def expand(text: str, names: Names) -> str:
    mapping = names.mapping()

    def sub(m):
        key = m.group(1)
        if key not in mapping:
            raise KeyError(f"unknown placeholder @{key} in {text!r}")
        return mapping[key]

    return _PLACEHOLDER.sub(sub, text)


def expand_values(values, names: Names):
    """Placeholders in bound string values (e.g. a keyspace name bound to a marker)."""
    if isinstance(values, str):
        return expand(values, names)
    if isinstance(values, list):
        return [expand_values(v, names) for v in values]
    return values


def _rows_observation(rs, step: Step) -> dict:
    names = list(rs.column_names or [])
    types = [render_type(t) for t in (rs.column_types or [])]
    obs: dict[str, Any] = {"kind": "rows" if names else "void"}
    if names:
        obs["columns"] = [[n, t] for n, t in zip(names, types)]
        rows = []
        for row in rs.current_rows:
            out = []
            for i, (n, v) in enumerate(zip(names, row)):
                fn = step.mask.get(i, step.mask.get(n))
                out.append(fn(v) if fn else norm(v))
            rows.append(out)
        if step.unordered:
            rows.sort(key=repr)
        obs["rows"] = rows if step.rows_compared else {"count": len(rows)}
    obs["warnings"] = len(rs.response_future.warnings or [])
    return obs


def _prepared_observation(ps) -> dict:
    bind = [[c.keyspace_name, c.table_name, c.name, render_type(c.type)]
            for c in (ps.column_metadata or [])]
    result = [[c[0], c[1], c[2], render_type(c[3])] for c in (ps.result_metadata or [])]
    return {
        "bind": bind,
        "pk_indexes": list(ps.routing_key_indexes or []),
        "result_metadata": result,
    }


def _statement(cql, step: Step):
    st = SimpleStatement(cql, fetch_size=step.fetch_size)
    if step.consistency is not None:
        st.consistency_level = step.consistency
    if step.serial_consistency is not None:
        st.serial_consistency_level = step.serial_consistency
    return st


def run_step(session, step: Step, names: Names) -> dict:
    """Runs one step; returns its observation. Any exception (a server error, or the driver
    refusing a value because of the bind metadata the server sent) is an observation too."""
    if isinstance(step.cql, str):
        cql = expand(step.cql, names)
    else:
        cql = [expand(x, names) if isinstance(x, str) else (expand(x[0], names), x[1])
               for x in step.cql]
    prepared_obs = None
    try:
        if step.kind == "query":
            deadline = time.monotonic() + INDEX_BUILD_TIMEOUT
            while True:
                try:
                    rs = session.execute(_statement(cql, step))
                    break
                except Exception as exc:  # noqa: BLE001
                    if not (step.until_indexed and type(exc).__name__ == "ReadFailure"
                            and time.monotonic() < deadline):
                        raise
                    time.sleep(0.2)  # the index build is not observable otherwise
            return _rows_observation(rs, step)
        if step.kind == "prepare":
            ps = session.prepare(cql)
            return {"kind": "prepared", **_prepared_observation(ps)}
        if step.kind == "execute":
            ps = session.prepare(cql)
            prepared_obs = {"kind": "prepared", **_prepared_observation(ps)}
            bound = ps.bind(expand_values(step.values, names))
            if step.fetch_size is not None:
                bound.fetch_size = step.fetch_size
            if step.consistency is not None:
                bound.consistency_level = step.consistency
            if step.serial_consistency is not None:
                bound.serial_consistency_level = step.serial_consistency
            res = _rows_observation(session.execute(bound), step)
            res["prepared"] = prepared_obs
            return res
        if step.kind == "batch":
            bs = BatchStatement(batch_type=step.batch_type)
            if step.serial_consistency is not None:
                bs.serial_consistency_level = step.serial_consistency
            for item in cql:
                text, values = (item, None) if isinstance(item, str) else item
                if step.prepared:
                    bs.add(session.prepare(text), values or ())
                else:
                    bs.add(SimpleStatement(text), values)
            return _rows_observation(session.execute(bs), step)
        if step.kind == "pages":
            return _pages_observation(session, step, cql, expand_values(step.values, names))
        if step.kind == "view_built":
            return {"kind": "view_built", "built": _wait_view_built(session, cql, names)}
        raise ValueError(f"unknown step kind {step.kind}")
    except Exception as exc:  # noqa: BLE001 - every failure is part of what the client sees
        if prepared_obs is not None:
            return {**prepared_obs, "kind": "prepared+error", "error": error_observation(exc)}
        return {"kind": "error", "error": error_observation(exc)}


def _wait_view_built(session, view: str, names: Names) -> bool:
    st = SimpleStatement("SELECT view_name FROM system.built_views "
                         "WHERE keyspace_name = %s AND view_name = %s")
    keyspace = expand("@ks", names)
    deadline = time.monotonic() + VIEW_BUILD_TIMEOUT
    while True:
        if list(session.execute(st, (keyspace, view))):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)  # the build's end is not announced to clients


MAX_PAGES = 1000


def _pages_observation(session, step: Step, cql: str, values) -> dict:
    if values is not None:
        ps = session.prepare(cql)
        make = lambda: ps.bind(values)  # noqa: E731
    else:
        make = lambda: SimpleStatement(cql)  # noqa: E731
    st = make()
    st.fetch_size = step.fetch_size
    rs = session.execute(st)
    first_state = rs.paging_state
    columns = [[n, render_type(t)] for n, t in zip(rs.column_names or [], rs.column_types or [])]
    page_list = []
    while True:
        page_list.append({"rows": [[norm(v) for v in r] for r in rs.current_rows],
                          "more": bool(rs.has_more_pages)})
        if not rs.has_more_pages or len(page_list) >= MAX_PAGES:
            break
        rs.fetch_next_page()
    obs = {"kind": "pages", "columns": columns, "pages": page_list}
    # Resume: a new request with the first page's paging state returns the second page on.
    if first_state is not None:
        st2 = make()
        st2.fetch_size = step.fetch_size
        rs2 = session.execute(st2, paging_state=first_state)
        obs["resumed_first_page"] = [[norm(v) for v in r] for r in rs2.current_rows]
    return obs


# ------------------------------------------------------------------------------------------
# Comparing observations
# ------------------------------------------------------------------------------------------


def aspects(obs: dict, step: Step) -> dict[str, Any]:
    """Splits an observation into named aspects compared independently."""
    out: dict[str, Any] = {}
    kind = obs.get("kind")
    prepared = obs.get("prepared") if kind in ("rows", "void") else None
    if kind in ("prepared", "prepared+error"):
        prepared = obs
    if prepared is not None:
        out["bind"] = prepared["bind"]
        out["pk_indexes"] = prepared["pk_indexes"]
        out["result_metadata"] = prepared["result_metadata"]
    if kind == "error" or kind == "prepared+error":
        out["outcome"] = {"error": obs["error"]}
        return out
    if kind == "prepared":
        out["outcome"] = "prepared"
        return out
    if kind == "view_built":
        out["outcome"] = {"view_built": obs["built"]}
        return out
    if kind == "pages":
        out["outcome"] = "pages"
        out["columns"] = obs["columns"]
        out["pages"] = [[len(pg["rows"]), pg["more"]] for pg in obs["pages"]]
        # A page that says "more" but holds fewer rows than asked for: ScyllaDB cuts pages
        # at 1 MB (docs/dev/paged-queries.md), Cassandra only by row count.
        out["short_pages"] = any(pg["more"] and len(pg["rows"]) < step.fetch_size
                                 for pg in obs["pages"])
        out["rows"] = [r for pg in obs["pages"] for r in pg["rows"]]
        if "resumed_first_page" in obs:
            out["resume"] = obs["resumed_first_page"]
        return out
    out["outcome"] = "rows" if kind == "rows" else "ok"
    if kind == "rows":
        out["columns"] = obs["columns"]
        out["rows"] = obs["rows"]
    if step.warnings:
        out["warnings"] = obs["warnings"]
    return out


@dataclass
class Difference:
    case: str  # "category/name"
    step: str  # label or index
    aspect: str
    emulator: Any
    cassandra: Any
    cql: str


def compare(case_id: str, steps: list[Step], emu: list[dict], cas: list[dict],
            names: Names) -> list[Difference]:
    diffs = []
    for i, (step, e, c) in enumerate(zip(steps, emu, cas)):
        label = step.label or str(i)
        ea, ca = aspects(e, step), aspects(c, step)
        keys = set(ea) | set(ca)
        if ea.get("outcome") != ca.get("outcome"):
            # One answered differently in kind (an error, or rows vs no rows): the rows and
            # columns (or prepared metadata) of one side only are no extra finding.
            keys -= {"columns", "rows", "pages", "short_pages", "resume", "warnings"}
            keys = {k for k in keys if k in ea and k in ca}
        for key in sorted(keys):
            if ea.get(key, "<absent>") != ca.get(key, "<absent>"):
                cql = step.cql if isinstance(step.cql, str) else " ; ".join(
                    x if isinstance(x, str) else x[0] for x in step.cql)
                diffs.append(Difference(case_id, label, key, ea.get(key, "<absent>"),
                                        ca.get(key, "<absent>"), expand(cql, names)))
    return diffs


# ------------------------------------------------------------------------------------------
# Allowed differences
# ------------------------------------------------------------------------------------------


@dataclass
class Allowance:
    """One entry of allowed_differences.yaml."""

    case: str
    reason: str
    source: str
    step: str | None = None
    aspect: str | None = None
    # If given: what the emulator must show for that aspect (ScyllaDB's documented answer).
    scylla: Any = None
    has_scylla: bool = False
    # If given (aspect ``bind`` only): ScyllaDB's bind marker names are Cassandra's rewritten
    # by these [pattern, replacement] regex pairs (the first full match per name); the
    # difference is allowed only when the emulator shows exactly the rewritten metadata.
    rename: list | None = None

    def applies_to(self, case_id: str) -> bool:
        """``case`` is a case id or a glob over case ids (``*/*`` for every case)."""
        return fnmatch.fnmatchcase(case_id, self.case)

    def matches(self, d: Difference) -> bool:
        if not (self.applies_to(d.case) and (self.step is None or self.step == d.step)
                and (self.aspect is None or self.aspect == d.aspect)):
            return False
        return self.rename is None or renamed_binds(d.cassandra, self.rename) == d.emulator


def renamed_binds(binds: Any, rules: list) -> Any:
    """Bind metadata ([keyspace, table, name, type] per marker) with each name rewritten by
    the first [pattern, replacement] pair whose pattern matches all of it."""
    if not isinstance(binds, list):
        return binds
    out = []
    for ks, table, name, typ in binds:
        for pattern, replacement in rules:
            if re.fullmatch(pattern, name):
                name = re.sub(pattern, replacement, name)
                break
        out.append([ks, table, name, typ])
    return out


def load_allowances(path) -> list[Allowance]:
    import yaml

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f) or []
    out = []
    for i, entry in enumerate(data):
        missing = [k for k in ("case", "reason", "source") if not entry.get(k)]
        if missing:
            raise ValueError(f"allowed_differences entry {i} lacks {missing}: {entry}")
        if not re.match(r"^(https://docs\.scylladb\.com/|https://opensource\.docs\.scylladb\.com/|"
                        r"scylladb/scylladb:)", entry["source"]):
            raise ValueError(f"allowed_differences entry {i}: source must be a ScyllaDB document "
                             f"URL or a scylladb/scylladb:<path> source file: {entry['source']}")
        if "rename" in entry and entry.get("aspect") != "bind":
            raise ValueError(f"allowed_differences entry {i}: rename needs aspect: bind")
        out.append(Allowance(case=entry["case"], reason=entry["reason"], source=entry["source"],
                             step=None if entry.get("step") is None else str(entry["step"]),
                             aspect=entry.get("aspect"), scylla=entry.get("scylla"),
                             has_scylla="scylla" in entry, rename=entry.get("rename")))
    return out


def judge(case_id: str, steps: list[Step], emu: list[dict], diffs: list[Difference],
          allowances: list[Allowance]):
    """Returns (unexplained differences, allowed differences, broken allowances). An
    allowance with a ``scylla`` expectation also checks that the emulator shows it."""
    mine = [a for a in allowances if a.applies_to(case_id)]
    unexplained, allowed = [], []
    for d in diffs:
        match = next((a for a in mine if a.matches(d)), None)
        (allowed if match else unexplained).append((d, match))
    broken = []
    for a in mine:
        if not a.has_scylla:
            continue
        # ``scylla`` is the expected value of ``aspect``, or, without an aspect, a mapping
        # aspect -> expected value.
        expected = {a.aspect: a.scylla} if a.aspect else dict(a.scylla or {})
        for i, (step, e) in enumerate(zip(steps, emu)):
            label = step.label or str(i)
            if a.step is not None and a.step != label:
                continue
            got_all = aspects(e, step)
            for aspect, want in expected.items():
                got = got_all.get(aspect, "<absent>")
                if got != want:
                    broken.append((a, f"{label}/{aspect}", got))
    return [d for d, _ in unexplained], allowed, broken


def run_case(case: Case, category: str, targets: dict, allowances: list[Allowance]):
    """Runs ``case`` on both targets and judges the differences. Returns a report dict."""
    case_id = f"{category}/{case.name}"
    names = Names(KEYSPACE, table_base(category, case.name))
    observations = {}
    for tname, session in targets.items():
        observations[tname] = [run_step(session, s, names) for s in case.steps]
    diffs = compare(case_id, case.steps, observations["emulator"], observations["cassandra"],
                    names)
    unexplained, allowed, broken = judge(case_id, case.steps, observations["emulator"], diffs,
                                         allowances)
    return {
        "case": case_id,
        "unexplained": unexplained,
        "allowed": allowed,
        "broken": broken,
        "observations": observations,
    }


def table_base(category: str, name: str) -> str:
    """A table name unique per case, within Cassandra's 48-character limit (with room for
    the ``_2``/``_ut2``/``_idx`` suffixes)."""
    base = re.sub(r"[^a-z0-9_]", "_", f"{category[:6]}_{name}".lower())
    if len(base) > 40:
        import hashlib

        base = base[:33] + "_" + hashlib.sha1(base.encode()).hexdigest()[:6]
    return base


def consistency(name: str) -> int:
    return getattr(ConsistencyLevel, name)
