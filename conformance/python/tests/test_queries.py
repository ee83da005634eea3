"""Paging, batches and lightweight transactions through the driver."""

import struct

import pytest
from cassandra import ConsistencyLevel, InvalidRequest
from cassandra.metadata import Murmur3Token
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from conftest import create_keyspace

PARTITIONS = 40
ROWS = 30


@pytest.fixture(scope="module")
def paged(session):
    ks = create_keyspace(session, rf=3)
    session.execute(f"CREATE TABLE {ks}.p (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
                    "WITH CLUSTERING ORDER BY (ck DESC)")
    insert = session.prepare(f"INSERT INTO {ks}.p (pk, ck, v) VALUES (?, ?, ?)")
    for pk in range(PARTITIONS):
        for ck in range(ROWS):
            session.execute(insert, (pk, ck, f"{pk}/{ck}"))
    return ks


def expected_order():
    """Every row in the order a full scan returns them: partitions by token, rows by the
    clustering order (descending)."""
    by_token = sorted(range(PARTITIONS),
                      key=lambda pk: Murmur3Token.from_key(struct.pack(">i", pk)).value)
    return [(pk, ck) for pk in by_token for ck in reversed(range(ROWS))]


@pytest.mark.parametrize("fetch_size", [1, 7, 100, 5000])
def test_paging_over_partitions(session, paged, fetch_size):
    statement = SimpleStatement(f"SELECT pk, ck, v FROM {paged}.p", fetch_size=fetch_size)
    result = session.execute(statement)
    first_page = result.current_rows
    assert len(first_page) == min(fetch_size, PARTITIONS * ROWS)
    assert result.has_more_pages == (fetch_size < PARTITIONS * ROWS)
    rows = [(r.pk, r.ck) for r in result]
    assert rows == expected_order()
    assert all(r.v == f"{r.pk}/{r.ck}" for r in session.execute(statement))


def test_paging_within_a_partition_prepared(session, paged):
    select = session.prepare(f"SELECT ck FROM {paged}.p WHERE pk = ? AND ck >= ?")
    select.fetch_size = 4
    result = session.execute(select, (5, 3))
    assert [r.ck for r in result] == list(reversed(range(3, ROWS)))


def test_paging_state_resumes_where_the_page_ended(session, paged):
    statement = SimpleStatement(f"SELECT pk, ck FROM {paged}.p", fetch_size=10)
    everything = expected_order()
    seen = []
    paging_state = None
    pages = 0
    while True:
        result = session.execute(statement, paging_state=paging_state)
        page = [(r.pk, r.ck) for r in result.current_rows]
        assert len(page) <= 10
        seen.extend(page)
        pages += 1
        paging_state = result.paging_state
        if paging_state is None:
            break
    assert seen == everything
    # Every full page says more may follow, so a row count that fills its pages exactly ends
    # with one empty page (ScyllaDB's service/pager/query_pagers.cc; Cassandra does the same):
    # len // 10 full pages, then the short or empty last one.
    assert pages == len(everything) // 10 + 1
    # The same paging state resumes the same way twice.
    first = session.execute(statement)
    state = first.paging_state
    again1 = [(r.pk, r.ck) for r in session.execute(statement, paging_state=state).current_rows]
    again2 = [(r.pk, r.ck) for r in session.execute(statement, paging_state=state).current_rows]
    assert again1 == again2 == everything[10:20]


def test_logged_and_unlogged_batches(session, keyspace):
    session.execute(f"CREATE TABLE {keyspace}.b (pk int, ck int, v text, PRIMARY KEY (pk, ck))")
    insert = session.prepare(f"INSERT INTO {keyspace}.b (pk, ck, v) VALUES (?, ?, ?)")
    for batch_type in (BatchType.LOGGED, BatchType.UNLOGGED):
        batch = BatchStatement(batch_type=batch_type)
        base = 0 if batch_type == BatchType.LOGGED else 100
        for i in range(5):
            batch.add(insert, (base + i % 2, i, f"p{i}"))
        batch.add(SimpleStatement(f"UPDATE {keyspace}.b SET v = %s WHERE pk = %s AND ck = %s"),
                  ("simple", base, 9))
        batch.add(f"DELETE FROM {keyspace}.b WHERE pk = {base + 1} AND ck = 3")
        session.execute(batch)
        rows = {(r.pk, r.ck): r.v for r in session.execute(
            f"SELECT pk, ck, v FROM {keyspace}.b WHERE pk IN ({base}, {base + 1})")}
        assert rows == {(base, 0): "p0", (base, 2): "p2", (base, 4): "p4",
                        (base + 1, 1): "p1", (base, 9): "simple"}


def test_counter_batch(session, keyspace):
    session.execute(f"CREATE TABLE {keyspace}.c (pk int PRIMARY KEY, n counter)")
    update = session.prepare(f"UPDATE {keyspace}.c SET n = n + ? WHERE pk = ?")
    batch = BatchStatement(batch_type=BatchType.COUNTER)
    for pk, delta in [(1, 5), (2, 7), (1, 3)]:
        batch.add(update, (delta, pk))
    session.execute(batch)
    rows = {r.pk: r.n for r in session.execute(f"SELECT pk, n FROM {keyspace}.c")}
    assert rows == {1: 8, 2: 7}
    # A counter update is refused in a logged batch, and a regular write in a counter batch.
    mixed = BatchStatement(batch_type=BatchType.LOGGED)
    mixed.add(update, (1, 1))
    with pytest.raises(InvalidRequest):
        session.execute(mixed)


def test_lightweight_transactions(session, keyspace):
    """Scylla answers every conditional statement with `[applied]` followed by the columns
    of the condition, or every column of the table for `IF [NOT] EXISTS`, holding the row as
    it was before the statement, applied or not (docs/features/lwt.rst)."""
    session.execute(f"CREATE TABLE {keyspace}.l (pk int, ck int, v int, w text, "
                    "PRIMARY KEY (pk, ck))")
    all_columns = ["[applied]", "pk", "ck", "v", "w"]
    insert = session.prepare(
        f"INSERT INTO {keyspace}.l (pk, ck, v, w) VALUES (?, ?, ?, ?) IF NOT EXISTS")
    insert.serial_consistency_level = ConsistencyLevel.SERIAL

    first = session.execute(insert, (1, 1, 10, "a"))
    assert first.was_applied
    assert first.column_names == all_columns
    assert tuple(first.one()) == (True, None, None, None, None)

    second = session.execute(insert, (1, 1, 20, "b"))
    assert not second.was_applied
    assert second.column_names == all_columns
    assert tuple(second.one()) == (False, 1, 1, 10, "a")

    update = session.prepare(f"UPDATE {keyspace}.l SET v = ? WHERE pk = ? AND ck = ? IF v = ?")
    applied = session.execute(update, (11, 1, 1, 10))
    assert applied.was_applied
    assert applied.column_names == ["[applied]", "v"]
    assert tuple(applied.one()) == (True, 10)
    refused = session.execute(update, (12, 1, 1, 10))
    assert not refused.was_applied
    assert tuple(refused.one()) == (False, 11)

    conditional_delete = session.execute(
        f"DELETE FROM {keyspace}.l WHERE pk = 1 AND ck = 1 IF w = 'z'")
    assert not conditional_delete.was_applied
    assert tuple(conditional_delete.one()) == (False, "a")
    deleted = session.execute(f"DELETE FROM {keyspace}.l WHERE pk = 1 AND ck = 1 IF EXISTS")
    assert deleted.was_applied
    assert deleted.column_names == all_columns
    assert tuple(deleted.one()) == (True, 1, 1, 11, "a")
    assert session.execute(f"SELECT * FROM {keyspace}.l WHERE pk = 1").one() is None
    missing = session.execute(f"UPDATE {keyspace}.l SET v = 1 WHERE pk = 2 AND ck = 2 IF EXISTS")
    assert not missing.was_applied
    assert missing.column_names == all_columns
    assert tuple(missing.one()) == (False, None, None, None, None)
    assert session.execute(f"SELECT * FROM {keyspace}.l WHERE pk = 2").one() is None
