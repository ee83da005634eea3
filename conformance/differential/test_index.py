"""Secondary indexes: CREATE INDEX and queries by the indexed column."""

from differ import Case, ddl, pages, q


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
        ddl("DROP INDEX IF EXISTS @ks.no_such_index", label="drop_if_exists"),
        ddl("CREATE INDEX ON @t (KEYS(s))", label="keys_of_set"),
        ddl("CREATE INDEX ON @t (FULL(v))", label="full_of_int"),
        ddl("CREATE INDEX ON @t (ENTRIES(s))", label="entries_of_set"),
        ddl("CREATE INDEX ON nosuch_table (v)", label="unknown_table"),
    ])),
    Case("index_duplicates_and_dependent_columns", data([
        ddl("CREATE INDEX @idx ON @t (v)"),
        ddl("CREATE INDEX IF NOT EXISTS other_idx ON @t (v)", label="same_target_if_not_exists"),
        ddl("CREATE INDEX other_idx ON @t (v)", label="same_target"),
        ddl("CREATE INDEX @idx ON @t (t)", label="same_name"),
        ddl("ALTER TABLE @t DROP v", label="drop_indexed_column"),
        ddl("ALTER TABLE @t DROP t", label="drop_other_column"),
        q("SELECT pk, ck FROM @t WHERE v = 20", label="still_indexed", until_indexed=True),
        ddl("DROP INDEX @ks.@idx"),
        ddl("ALTER TABLE @t DROP v", label="drop_after_index"),
    ])),
    Case("index_maintenance", data([
        ddl("CREATE INDEX @idx ON @t (v)"),
        q("SELECT pk, ck FROM @t WHERE v = 10", until_indexed=True, label="initial"),
        q("UPDATE @t SET v = 99 WHERE pk = 1 AND ck = 1"),
        q("SELECT pk, ck FROM @t WHERE v = 10", label="after_update"),
        q("SELECT pk, ck, v FROM @t WHERE v = 99", label="new_value"),
        q("DELETE v FROM @t WHERE pk = 1 AND ck = 1"),
        q("SELECT pk, ck FROM @t WHERE v = 99", label="after_cell_delete"),
        q("DELETE FROM @t WHERE pk = 2 AND ck = 1"),
        q("SELECT pk, ck FROM @t WHERE v = 10", label="after_row_delete"),
        q("INSERT INTO @t (pk, ck, v) VALUES (2, 1, 10)"),
        q("DELETE FROM @t WHERE pk = 2 AND ck >= 1"),
        q("SELECT pk, ck FROM @t WHERE v = 10", label="after_range_delete"),
        q("DELETE FROM @t WHERE pk = 3"),
        q("SELECT pk, ck FROM @t WHERE v = 10", label="after_partition_delete"),
        q("SELECT pk, ck FROM @t WHERE v = 20", label="other_value"),
    ])),
    Case("index_paging_and_limits", [
        ddl("CREATE TABLE @t (pk int, ck int, v int, PRIMARY KEY (pk, ck))"),
        *[q(f"INSERT INTO @t (pk, ck, v) VALUES ({pk}, {ck}, {ck % 2})")
          for pk in range(6) for ck in range(5)],
        ddl("CREATE INDEX @idx ON @t (v)"),
        q("SELECT pk, ck FROM @t WHERE v = 0", until_indexed=True, label="all"),
        pages("SELECT pk, ck FROM @t WHERE v = 0", 4),
        pages("SELECT pk, ck FROM @t WHERE v = 1", 5),
        q("SELECT pk, ck FROM @t WHERE v = 0 LIMIT 5", label="limit"),
        pages("SELECT pk, ck FROM @t WHERE v = 0 LIMIT 7", 3),
        q("SELECT pk, ck FROM @t WHERE v = 0 PER PARTITION LIMIT 1", label="per_partition_limit"),
        q("SELECT count(*) FROM @t WHERE v = 1", label="count"),
        q("SELECT pk, ck FROM @t WHERE pk = 2 AND v = 0", label="with_partition_key"),
    ]),
    Case("index_filtering_rules", data([
        ddl("CREATE INDEX @idx ON @t (v)"),
        q("SELECT pk, ck FROM @t WHERE v = 10", until_indexed=True, label="indexed"),
        q("SELECT pk, ck FROM @t WHERE v = 10 AND t = 't1'", label="second_regular"),
        q("SELECT pk, ck FROM @t WHERE v = 10 AND t = 't1' ALLOW FILTERING",
          label="second_regular_allowed"),
        q("SELECT pk, ck FROM @t WHERE v > 10", label="slice_on_indexed"),
        q("SELECT pk, ck FROM @t WHERE v = 10 AND ck = 1 ALLOW FILTERING",
          label="clustering_allowed"),
        q("SELECT pk, ck FROM @t WHERE pk = 1 AND ck = 1 AND v = 10", label="full_key"),
    ])),
    Case("index_static_and_key_columns", [
        ddl("CREATE TABLE @t (p1 int, p2 int, ck int, st int STATIC, v int, "
            "PRIMARY KEY ((p1, p2), ck))"),
        *[q(f"INSERT INTO @t (p1, p2, ck, st, v) VALUES ({p}, {p}, {ck}, {p % 2}, {ck})")
          for p in range(4) for ck in range(2)],
        ddl("CREATE INDEX ON @t (st)"),
        ddl("CREATE INDEX ON @t (p2)"),
        q("SELECT p1, ck FROM @t WHERE st = 1", until_indexed=True, label="static"),
        q("SELECT p1, ck FROM @t WHERE p2 = 2", until_indexed=True, label="key_component"),
    ]),
    Case("index_map_values_and_entries", data([
        ddl("CREATE INDEX ON @t (VALUES(m))"),
        ddl("CREATE INDEX ON @t (ENTRIES(m))"),
        q("SELECT pk, ck FROM @t WHERE m CONTAINS 2", until_indexed=True, label="values"),
        q("SELECT pk, ck FROM @t WHERE m['k1'] = 3", until_indexed=True, label="entries"),
        q("SELECT index_name, options FROM system_schema.indexes WHERE keyspace_name = '@ks' "
          "AND table_name = '@tn'", label="targets"),
    ])),
    Case("index_local", data([
        ddl("CREATE INDEX @idx ON @t ((pk), v)", label="create_local"),
        q("SELECT pk, ck FROM @t WHERE pk = 1 AND v = 10", label="by_partition"),
        q("SELECT pk, ck FROM @t WHERE v = 10", label="without_partition"),
        q("SELECT options FROM system_schema.indexes WHERE keyspace_name = '@ks' "
          "AND table_name = '@tn'", label="target"),
    ])),
]


def test_case(case, check):
    check(case)
