"""Every CQL statement the workspace's crates send (scylla-cdc, scylla-cdc-printer,
scylla-cdc-replicator), in their real shapes: the library's schema checks and log-window read,
the checkpoint table, the printer's demo schema and writes, the replicator's schema reads and
its INSERT/UPDATE/DELETE shapes. The shapes are copied from the crates' sources (named in each
case); Scylla-only parts (WITH cdc, BYPASS CACHE, system_distributed, scylla_keyspaces,
SCYLLA_TIMEUUID_LIST_INDEX) are in allowed_differences.yaml with their ScyllaDB document."""

import datetime
import uuid

from cassandra.query import BatchType

from differ import Case, batch, ddl, p, px, q

CHECKPOINT_TABLE = (  # scylla-cdc/src/checkpoints/table.rs create_table_cql
    "CREATE TABLE IF NOT EXISTS @t (reader_name text, keyspace_name text, "
    "table_name text, kind text, stream_id blob, time timestamp, generation timestamp, "
    "PRIMARY KEY ((reader_name, keyspace_name, table_name), kind, stream_id))")
KEY = "reader_name = ? AND keyspace_name = ? AND table_name = ?"

LOG_TABLE = (  # the shape of a CDC log table (scylla-cdc-semantics.md 1.2), created by hand
    "CREATE TABLE @t (\"cdc$stream_id\" blob, \"cdc$time\" timeuuid, \"cdc$batch_seq_no\" int, "
    "\"cdc$end_of_batch\" boolean, \"cdc$operation\" tinyint, \"cdc$ttl\" bigint, pk int, v int, "
    "\"cdc$deleted_v\" boolean, PRIMARY KEY (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\"))")
WINDOW = ("SELECT * FROM @t WHERE \"cdc$stream_id\" IN ? AND \"cdc$time\" >= minTimeuuid(?) "
          "AND \"cdc$time\" < minTimeuuid(?)")

DEMO_TYPE = "CREATE TYPE IF NOT EXISTS @ks.@ut (street text, city text, zip int)"
DEMO_TABLE = ("CREATE TABLE IF NOT EXISTS @t (customer int, order_id int, "
              "customer_name text static, status text, amount bigint, items list<text>, "
              "tags set<text>, quantities map<text, int>, shipping @ut, "
              "PRIMARY KEY (customer, order_id))")


def demo_writes(c):
    """scylla-cdc-printer/src/demo.rs demo_statements, one cycle for customer c."""
    row = lambda o: f"WHERE customer = {c} AND order_id = {o}"  # noqa: E731
    return [
        f"INSERT INTO @t (customer, order_id, customer_name, status, amount, items, tags, "
        f"quantities, shipping) VALUES ({c}, 1, 'Customer {c}', 'new', 100, ['book'], "
        f"{{'new'}}, {{'book': 1}}, {{street: 'Main St {c}', city: 'Oslo', zip: 150}})",
        f"INSERT INTO @t (customer, order_id, status, amount) VALUES ({c}, 2, 'new', 20) USING TTL 600",
        f"UPDATE @t SET status = 'paid', amount = 120 {row(1)}",
        f"UPDATE @t SET items = items + ['pen'] {row(1)}",
        f"UPDATE @t SET tags = tags + {{'paid'}} {row(1)}",
        f"UPDATE @t SET tags = tags - {{'new'}} {row(1)}",
        f"UPDATE @t SET quantities['pen'] = 2 {row(1)}",
        f"UPDATE @t SET shipping.city = 'Bergen' {row(1)}",
        f"UPDATE @t SET customer_name = 'Customer {c} (gold)' WHERE customer = {c}",
        f"DELETE amount FROM @t {row(1)}",
        f"UPDATE @t SET items = ['gift card'] {row(1)}",
        f"BEGIN UNLOGGED BATCH INSERT INTO @t (customer, order_id, status) VALUES ({c}, 3, 'new'); "
        f"INSERT INTO @t (customer, order_id, status) VALUES ({c}, 4, 'new'); "
        f"INSERT INTO @t (customer, order_id, status) VALUES ({c}, 5, 'new'); APPLY BATCH",
    ]


REPL_TABLE = ("CREATE TABLE IF NOT EXISTS @t (\"pk\" int, \"pk2\" text, \"c1\" int, \"c2\" int, "
              "\"s\" int STATIC, \"v\" int, \"fu\" frozen<list<int>>, \"m\" map<int, text>, "
              "\"st\" set<int>, \"l\" list<int>, PRIMARY KEY ((\"pk\", \"pk2\"), \"c1\", \"c2\")) "
              "WITH CLUSTERING ORDER BY (\"c1\" ASC, \"c2\" DESC)")

T0 = datetime.datetime(2024, 1, 1)
T1 = datetime.datetime(2024, 1, 2)
STREAM = bytes.fromhex("0123456789abcdef0123456789abcdef")

CASES = [
    Case("log_reader_schema_checks", [  # scylla-cdc/src/cluster/schema.rs check_table, uses_tablets
        ddl("CREATE TABLE @t (pk int PRIMARY KEY)"),
        px("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", ["@ks"]),
        px("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", ["nosuch_x"]),
        px("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
           ["@ks", "@tn"]),
        px("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
           ["@ks", "nosuch"]),
        px("SELECT initial_tablets FROM system_schema.scylla_keyspaces WHERE keyspace_name = ?",
           ["@ks"], label="scylla_keyspaces"),
    ]),
    Case("stream_reader_window", [  # scylla-cdc/src/stream/page.rs DriverLogSource::new
        ddl(LOG_TABLE),
        q("INSERT INTO @t (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\", \"cdc$end_of_batch\", "
          "\"cdc$operation\", pk, v) VALUES (0x0123456789abcdef0123456789abcdef, "
          "d2177dd0-eaa2-11de-a572-001b779c76e3, 0, true, 2, 1, 1)"),
        q("INSERT INTO @t (\"cdc$stream_id\", \"cdc$time\", \"cdc$batch_seq_no\", \"cdc$end_of_batch\", "
          "\"cdc$operation\", pk, v) VALUES (0x0123456789abcdef0123456789abcdef, "
          "maxTimeuuid('2024-01-01 12:00+0000'), 0, true, 1, 1, 2)"),
        p(WINDOW, label="prepare_window"),
        px(WINDOW, [[STREAM], T0, T1], label="window"),
        px(WINDOW, [[STREAM, b"\x00" * 16], datetime.datetime(2009, 1, 1), T1], label="wide_window"),
        px(WINDOW + " BYPASS CACHE", [[STREAM], T0, T1], label="bypass_cache"),
    ]),
    Case("generation_tables", [  # scylla-cdc/src/cluster/generations.rs
        q("SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'",
          label="vnode_timestamps", rows_compared=False),
        px("SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?",
           [T0], label="vnode_streams"),
        px("SELECT timestamp FROM system.cdc_timestamps WHERE keyspace_name = ? AND table_name = ?",
           ["@ks", "@tn"], label="tablet_timestamps"),
    ]),
    Case("checkpoint_table", [  # scylla-cdc/src/checkpoints/table.rs
        ddl(CHECKPOINT_TABLE),
        ddl(CHECKPOINT_TABLE, label="again"),
        px("INSERT INTO @t (reader_name, keyspace_name, table_name, kind, stream_id, time, "
           "generation) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?",
           ["default", "ks", "t", "generation", b"", None, T0, 604800]),
        px("INSERT INTO @t (reader_name, keyspace_name, table_name, kind, stream_id, time, "
           "generation) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?",
           ["default", "ks", "t", "stream", STREAM, T1, T0, 0]),
        px(f"SELECT generation FROM @t WHERE {KEY} AND kind = 'generation' AND stream_id = ?",
           ["default", "ks", "t", b""]),
        px(f"SELECT time FROM @t WHERE {KEY} AND kind = 'stream' AND stream_id = ?",
           ["default", "ks", "t", STREAM]),
        px(f"SELECT time FROM @t WHERE {KEY} AND kind = 'stream' AND stream_id = ?",
           ["other", "ks", "t", STREAM]),
    ]),
    Case("printer_demo_schema", [  # scylla-cdc-printer/src/demo.rs schema_statements
        ddl("CREATE KEYSPACE IF NOT EXISTS @ks2 WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"),
        ddl(DEMO_TYPE),
        ddl(DEMO_TABLE + " WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}",
            label="with_cdc"),
        ddl(DEMO_TABLE),
        ddl("DROP KEYSPACE @ks2"),
    ]),
    Case("printer_demo_writes", [
        ddl(DEMO_TYPE), ddl(DEMO_TABLE),
        *[q(s) for s in demo_writes(7)],
        q("SELECT * FROM @t"),
        q("DELETE FROM @t WHERE customer = 7 AND order_id = 2"),
        q("DELETE FROM @t WHERE customer = 7 AND order_id >= 3 AND order_id < 5"),
        q("SELECT customer, order_id, status FROM @t"),
        q("DELETE FROM @t WHERE customer = 7"),
        q("SELECT * FROM @t"),
    ]),
    Case("replicator_schema_reads", [  # scylla-cdc-replicator/src/schema.rs
        ddl("CREATE TYPE IF NOT EXISTS @ks.@ut (\"x\" double, \"y\" double)"),
        ddl("CREATE TYPE IF NOT EXISTS @ks.@ut2 (\"street\" text, \"zip\" int, \"geo\" frozen<\"@ut\">)"),
        ddl(REPL_TABLE),
        px("SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns "
           "WHERE keyspace_name = ? AND table_name = ?", ["@ks", "@tn"]),
        px("SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = ?",
           ["@ks"], unordered=True,
           mask={}),
    ]),
    Case("replicator_writes", [  # scylla-cdc-replicator/src/translate.rs statement_text
        ddl(REPL_TABLE),
        px("INSERT INTO @t (\"pk\", \"pk2\", \"c1\", \"c2\", \"v\", \"fu\") VALUES (?, ?, ?, ?, ?, ?) "
           "USING TTL ? AND TIMESTAMP ?", [1, "a", 1, 1, 5, [1, 2], 0, 1000]),
        px("UPDATE @t USING TTL ? AND TIMESTAMP ? SET \"v\" = ?, \"m\" = ? "
           "WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?",
           [0, 1001, 6, {1: "x"}, 1, "a", 1, 1]),
        px("UPDATE @t USING TTL ? AND TIMESTAMP ? SET \"s\" = ? WHERE \"pk\" = ? AND \"pk2\" = ?",
           [0, 1002, 9, 1, "a"]),
        px("UPDATE @t USING TTL ? AND TIMESTAMP ? SET \"st\" = \"st\" + ?, \"st\" = \"st\" - ? "
           "WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?",
           [0, 1003, {1, 2}, {3}, 1, "a", 1, 1], label="add_and_remove_same_set"),
        px("UPDATE @t USING TTL ? AND TIMESTAMP ? SET \"l\"[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ? "
           "WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?",
           [0, 1004, uuid.UUID("d2177dd0-eaa2-11de-a572-001b779c76e3"), 5, 1, "a", 1, 1],
           label="timeuuid_list_index"),
        q("SELECT \"pk\", \"pk2\", \"c1\", \"c2\", \"s\", \"v\", \"fu\", \"m\", \"st\", writetime(\"v\") FROM @t"),
        px("DELETE FROM @t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" > ? AND \"c1\" <= ?",
           [2000, 1, "a", 0, 5]),
        px("DELETE FROM @t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?",
           [2001, 1, "a", 1, 1]),
        px("DELETE FROM @t USING TIMESTAMP ? WHERE \"pk\" = ? AND \"pk2\" = ?", [2002, 1, "a"]),
        q("SELECT * FROM @t"),
    ]),
    Case("replicator_batch_of_prepared", [
        ddl(REPL_TABLE),
        batch([("INSERT INTO @t (\"pk\", \"pk2\", \"c1\", \"c2\", \"v\") VALUES (?, ?, ?, ?, ?) "
                "USING TTL ? AND TIMESTAMP ?", (1, "b", 1, 1, 1, 0, 10)),
               ("UPDATE @t USING TTL ? AND TIMESTAMP ? SET \"v\" = ? "
                "WHERE \"pk\" = ? AND \"pk2\" = ? AND \"c1\" = ? AND \"c2\" = ?", (0, 11, 2, 1, "b", 1, 2))],
              prepared=True, batch_type=BatchType.UNLOGGED),
        q("SELECT \"c1\", \"c2\", \"v\", writetime(\"v\") FROM @t"),
    ]),
    Case("cql_text_with_semicolon_and_comments", [
        ddl("CREATE TABLE @t (pk int PRIMARY KEY, v int);"),
        q("INSERT INTO @t (pk, v) VALUES (1, 1); "),
        q("-- a comment\nSELECT * FROM @t /* inline */ WHERE pk = 1 // trailing"),
        q("select PK, V from @t where PK = 1"),
    ]),
]


def test_case(case, check):
    check(case)
