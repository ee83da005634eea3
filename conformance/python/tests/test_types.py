"""Every CQL type the cluster supports round-trips through the driver: written with bound
values of a prepared statement, read back (prepared and unprepared), equal."""

import datetime
import ipaddress
import uuid
from collections import namedtuple
from decimal import Decimal

import pytest
from cassandra.util import Date, Duration, OrderedMapSerializedKey, SortedSet, Time

from conftest import create_keyspace

Address = namedtuple("Address", ["street", "zip", "tags"])
Person = namedtuple("Person", ["name", "home", "phones"])

# (column, CQL type, value written, value expected back when it differs)
COLUMNS = [
    ("a", "ascii", "plain ascii", None),
    ("b", "bigint", -(2 ** 63), None),
    ("bl", "blob", b"\x00\x01\xfe\xff", None),
    ("bo", "boolean", True, None),
    ("d", "date", datetime.date(1969, 7, 20), Date(datetime.date(1969, 7, 20))),
    ("de", "decimal", Decimal("-1234567890.0987654321"), None),
    ("db", "double", 2.718281828459045, None),
    ("du", "duration", Duration(14, 3, 5_000_000_123), None),
    ("dn", "duration", Duration(-1, -2, -3), None),
    ("f", "float", 1.5, None),
    ("i4", "inet", "192.168.10.1", None),
    ("i6", "inet", "2001:db8::8a2e:370:7334", None),
    ("n", "int", -2 ** 31, None),
    ("si", "smallint", -32768, None),
    ("t", "text", "zażółć gęślą jaźń ✓", None),
    ("tm", "time", datetime.time(23, 59, 58, 999999),
     Time(datetime.time(23, 59, 58, 999999))),
    ("ts", "timestamp", datetime.datetime(2024, 2, 29, 12, 34, 56, 789000), None),
    ("tu", "timeuuid", uuid.UUID("a7c0f4a2-4a6e-11ee-be56-0242ac120002"), None),
    ("ti", "tinyint", -128, None),
    ("u", "uuid", uuid.UUID("123e4567-e89b-42d3-a456-426614174000"), None),
    ("vi", "varint", 2 ** 100 + 1, None),
    ("vn", "varint", -(2 ** 70), None),
    ("l", "list<int>", [3, 1, 2, 1], None),
    ("s", "set<text>", {"b", "a", "c"}, SortedSet(["a", "b", "c"])),
    ("m", "map<text, int>", {"x": 1, "y": -2}, None),
    ("fl", "frozen<list<bigint>>", [5, 4], None),
    ("fs", "frozen<set<uuid>>", {uuid.UUID(int=1), uuid.UUID(int=2)},
     SortedSet([uuid.UUID(int=1), uuid.UUID(int=2)])),
    ("fm", "frozen<map<int, text>>", {2: "two", 1: "one"}, None),
    ("nested", "map<text, frozen<list<frozen<set<int>>>>>",
     {"k": [{1, 2}, {3}]}, {"k": [SortedSet([1, 2]), SortedSet([3])]}),
    ("tp", "tuple<int, text, frozen<list<int>>>", (1, "one", [1]), None),
    ("ntp", "tuple<tuple<int, text>, boolean>", ((7, "seven"), False), None),
    ("ud", "frozen<address>", Address("Main St", 12345, {"home"}),
     Address("Main St", 12345, SortedSet(["home"]))),
    ("un", "person", Person("Ann", Address("Side St", 1, set()), ["1", "2"]),
     Person("Ann", Address("Side St", 1, SortedSet()), ["1", "2"])),
    ("lu", "list<frozen<address>>", [Address("A", 1, {"x"}), Address("B", 2, None)],
     [Address("A", 1, SortedSet(["x"])), Address("B", 2, None)]),
    ("mu", "map<int, frozen<person>>", {1: Person("Bob", None, None)}, None),
]


def normalize(value):
    """Driver containers compared as plain values: sorted sets and ordered maps as sets and
    dicts, named tuples (user types) as tuples."""
    if isinstance(value, (SortedSet, set, frozenset)):
        return frozenset(normalize(v) for v in value)
    if isinstance(value, (OrderedMapSerializedKey, dict)):
        return {normalize(k): normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(normalize(v) for v in value)
    return value


@pytest.fixture(scope="module")
def types_keyspace(session):
    ks = create_keyspace(session, rf=3)
    session.execute(f"CREATE TYPE {ks}.address (street text, zip int, tags frozen<set<text>>)")
    session.execute(f"CREATE TYPE {ks}.person (name text, home frozen<address>, "
                    "phones frozen<list<text>>)")
    columns = ", ".join(f"{name} {typ}" for name, typ, _, _ in COLUMNS)
    session.execute(f"CREATE TABLE {ks}.all_types (pk int PRIMARY KEY, {columns})")
    return ks


def test_every_type_round_trips(session, types_keyspace):
    ks = types_keyspace
    names = [c[0] for c in COLUMNS]
    insert = session.prepare(
        f"INSERT INTO {ks}.all_types (pk, {', '.join(names)}) "
        f"VALUES (?, {', '.join('?' for _ in names)})")
    # The prepared statement's bind types are the columns' types.
    bound = {c.name: c.type.cql_parameterized_type() for c in insert.column_metadata}
    assert bound["pk"] == "int"
    session.execute(insert, [1] + [value for _, _, value, _ in COLUMNS])

    select = session.prepare(f"SELECT * FROM {ks}.all_types WHERE pk = ?")
    prepared_row = session.execute(select, (1,)).one()
    simple_row = session.execute(f"SELECT * FROM {ks}.all_types WHERE pk = 1").one()
    for row in (prepared_row, simple_row):
        for name, typ, value, expected in COLUMNS:
            want = value if expected is None else expected
            got = getattr(row, name)
            assert normalize(got) == normalize(want), f"{name} {typ}: {got!r} != {want!r}"
    # Types the driver maps to specific classes keep them.
    assert isinstance(prepared_row.de, Decimal)
    assert isinstance(prepared_row.du, Duration)
    assert ipaddress.ip_address(prepared_row.i6) == ipaddress.ip_address("2001:db8::8a2e:370:7334")


def test_nulls_and_empty_values(session, types_keyspace):
    ks = types_keyspace
    names = [c[0] for c in COLUMNS]
    insert = session.prepare(
        f"INSERT INTO {ks}.all_types (pk, {', '.join(names)}) "
        f"VALUES (?, {', '.join('?' for _ in names)})")
    session.execute(insert, [2] + [None for _ in names])
    row = session.execute(f"SELECT * FROM {ks}.all_types WHERE pk = 2").one()
    assert row.pk == 2
    for name in names:
        assert getattr(row, name) is None, name
    # An empty non-frozen collection is no collection at all; an empty frozen one is a value.
    session.execute(f"INSERT INTO {ks}.all_types (pk, l, s, m, fl, fs) VALUES (3, ?, ?, ?, ?, ?)"
                    .replace("?", "%s"), ([], set(), {}, [], set()))
    row = session.execute(f"SELECT l, s, m, fl, fs FROM {ks}.all_types WHERE pk = 3").one()
    assert (row.l, row.s, row.m) == (None, None, None)
    assert list(row.fl) == [] and len(row.fs) == 0


def test_counters(session, types_keyspace):
    ks = types_keyspace
    session.execute(f"CREATE TABLE {ks}.counters (pk text, ck int, c1 counter, c2 counter, "
                    "PRIMARY KEY (pk, ck))")
    update = session.prepare(f"UPDATE {ks}.counters SET c1 = c1 + ?, c2 = c2 - ? "
                             "WHERE pk = ? AND ck = ?")
    for delta in (5, 7, -3):
        session.execute(update, (delta, delta * 2, "k", 1))
    row = session.execute(f"SELECT c1, c2 FROM {ks}.counters WHERE pk = 'k' AND ck = 1").one()
    assert (row.c1, row.c2) == (9, -18)
    big = 2 ** 62
    session.execute(update, (big, 0, "k", 2))
    assert session.execute(
        f"SELECT c1 FROM {ks}.counters WHERE pk = 'k' AND ck = 2").one().c1 == big
