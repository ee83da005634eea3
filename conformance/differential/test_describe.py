"""Server-side DESCRIBE (CQL 3.4.7 / Scylla 5+): result columns, which rows come back, and the
part of each create_statement that defines columns and keys (table options differ between the
two servers by design: each prints its own defaults)."""

import re

from differ import Case, ddl, q


def head(v):
    """The statement up to its WITH clause, whitespace collapsed."""
    if not isinstance(v, str):
        return repr(v)
    text = re.split(r"\)\s+WITH\s", v, maxsplit=1)[0]
    return " ".join(text.split())


MASK = {3: head}

SETUP = [
    ddl("CREATE KEYSPACE @ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"),
    ddl("CREATE TYPE @ks2.point (x int, y int)"),
    ddl("CREATE TABLE @ks2.items (pk int, ck text, v frozen<point>, s int static, "
        "PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC)"),
    ddl("CREATE TABLE @ks2.simple (id uuid PRIMARY KEY, n bigint)"),
]

CASES = [
    Case("describe_table", SETUP + [
        q("DESCRIBE TABLE @ks2.items", mask=MASK),
        q("DESC TABLE @ks2.simple", mask=MASK),
        q("DESCRIBE @ks2.simple", mask=MASK),
    ]),
    Case("describe_type", SETUP + [
        q("DESCRIBE TYPE @ks2.point"),
        q("DESCRIBE TYPES"),
    ]),
    Case("describe_keyspace", SETUP + [
        q("DESCRIBE KEYSPACE @ks2", mask=MASK),
        q("DESCRIBE ONLY KEYSPACE @ks2", mask=MASK),
    ]),
    Case("describe_index_and_view", SETUP + [
        ddl("CREATE INDEX items_by_s ON @ks2.items (s)"),
        ddl("CREATE MATERIALIZED VIEW @ks2.by_n AS SELECT * FROM @ks2.simple "
            "WHERE n IS NOT NULL AND id IS NOT NULL PRIMARY KEY (n, id)"),
        q("DESCRIBE INDEX @ks2.items_by_s"),
        q("DESCRIBE MATERIALIZED VIEW @ks2.by_n", mask=MASK),
    ]),
    Case("describe_errors", SETUP + [
        q("DESCRIBE TABLE @ks2.nosuch", label="unknown_table"),
        q("DESCRIBE KEYSPACE nosuch_keyspace_x", label="unknown_keyspace"),
        q("DESCRIBE TYPE @ks2.nosuch", label="unknown_type"),
    ]),
]


def test_case(case, check):
    check(case)
