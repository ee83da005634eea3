"""Secondary indexes: CREATE INDEX and queries by the indexed column."""

from differ import Case, ddl, q


def data(extra):
    steps = [ddl("CREATE TABLE @t (pk int, ck int, v int, t text, s set<int>, m map<text, int>, "
                 "PRIMARY KEY (pk, ck))")]
    for pk in (1, 2, 3):
        for ck in (1, 2):
            steps.append(q(f"INSERT INTO @t (pk, ck, v, t, s, m) VALUES ({pk}, {ck}, {ck * 10}, "
                           f"'t{pk}', {{{pk}}}, {{'k{ck}': {pk}}})"))
    return steps + extra


CASES = [
    Case("index_regular_column", data([
        ddl("CREATE INDEX @idx ON @t (v)"),
        q("SELECT pk, ck FROM @t WHERE v = 20", unordered=True, until_indexed=True),
        q("SELECT pk, ck FROM @t WHERE v = 99", until_indexed=True),
        q("SELECT pk, ck FROM @t WHERE pk = 1 AND v = 10", until_indexed=True),
        q("SELECT count(*) FROM @t WHERE v = 10", until_indexed=True),
    ])),
    Case("index_metadata", data([
        ddl("CREATE INDEX @idx ON @t (t)"),
        q("SELECT keyspace_name, table_name, index_name, kind, options FROM system_schema.indexes "
          "WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
        ddl("CREATE INDEX IF NOT EXISTS @idx ON @t (t)", label="if_not_exists"),
        ddl("CREATE INDEX @idx ON @t (t)", label="already_exists"),
        ddl("DROP INDEX @ks.@idx"),
        q("SELECT index_name FROM system_schema.indexes WHERE keyspace_name = '@ks' AND table_name = '@tn'"),
        q("SELECT pk FROM @t WHERE t = 't1'", label="after_drop", until_indexed=True),
    ])),
    Case("index_collections", data([
        ddl("CREATE INDEX ON @t (s)"),
        ddl("CREATE INDEX ON @t (KEYS(m))"),
        q("SELECT pk, ck FROM @t WHERE s CONTAINS 2", unordered=True, until_indexed=True),
        q("SELECT pk, ck FROM @t WHERE m CONTAINS KEY 'k1'", unordered=True, until_indexed=True),
        q("SELECT index_name, options FROM system_schema.indexes WHERE keyspace_name = '@ks' "
          "AND table_name = '@tn'"),
    ])),
    Case("index_clustering_column", data([
        ddl("CREATE INDEX @idx ON @t (ck)"),
        q("SELECT pk, ck, v FROM @t WHERE ck = 2", unordered=True, until_indexed=True),
    ])),
    Case("index_errors", data([
        ddl("CREATE INDEX ON @t (nosuch)", label="unknown_column"),
        ddl("CREATE INDEX ON @t (pk)", label="sole_partition_key"),
        ddl("DROP INDEX @ks.no_such_index", label="drop_unknown"),
        ddl("CREATE CUSTOM INDEX ON @t (t) USING 'org.apache.cassandra.index.sasi.SASIIndex'",
            label="sasi"),
    ])),
]


def test_case(case, check):
    check(case)
