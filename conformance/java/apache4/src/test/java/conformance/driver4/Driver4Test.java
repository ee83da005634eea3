package conformance.driver4;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultProtocolVersion;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.metadata.Metadata;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.metadata.schema.ColumnMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.type.DataTypes;
import com.datastax.oss.driver.api.core.type.ListType;
import com.datastax.oss.driver.api.core.type.UserDefinedType;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import com.datastax.oss.driver.internal.core.context.InternalDriverContext;
import conformance.Emulator;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A Java driver 4.x (Apache's in module apache4, ScyllaDB's fork in module scylla4, same
 * source) against a 3-node scylla-emulator: what the driver's users check first.
 */
class Driver4Test {
    /** DDL waits for schema agreement, which a debug build on a loaded machine may take a while for. */
    private static final Duration DDL_TIMEOUT = Duration.ofSeconds(30);

    private static Emulator emulator;
    private static CqlSession session;

    @BeforeAll
    static void start() throws Exception {
        int octet = Integer.getInteger("conformance.octet", 200);
        String module = System.getProperty("conformance.module", "driver4");
        emulator = Emulator.start(module + "-Driver4Test", "127.0." + octet + ".1", 3, Duration.ofSeconds(1));
        session = connect(null);
    }

    @AfterAll
    static void stop() throws Exception {
        if (session != null) {
            session.close();
        }
        if (emulator != null) {
            emulator.close();
        }
    }

    /**
     * A session with the driver's defaults: only the contact point and the local data center
     * (which 4.x requires with explicit contact points), and the compression if not null.
     */
    private static CqlSession connect(String compression) {
        var builder = CqlSession.builder()
                .addContactPoint(emulator.contactPoint())
                .withLocalDatacenter("datacenter1");
        if (compression != null) {
            builder.withConfigLoader(DriverConfigLoader.programmaticBuilder()
                    .withString(DefaultDriverOption.PROTOCOL_COMPRESSION, compression)
                    .build());
        }
        return builder.build();
    }

    private static ResultSet ddl(String cql) {
        ResultSet rs = session.execute(SimpleStatement.newInstance(cql).setTimeout(DDL_TIMEOUT));
        assertTrue(rs.getExecutionInfo().isSchemaInAgreement(), "schema agreement after " + cql);
        return rs;
    }

    @Test
    void connectsWithDefaultOptions() {
        assertEquals(DefaultProtocolVersion.V4, session.getContext().getProtocolVersion());
        Map<?, Node> nodes = session.getMetadata().getNodes();
        assertEquals(3, nodes.size(), "nodes: " + nodes.values());
        Set<InetAddress> addresses = new HashSet<>();
        for (Node node : nodes.values()) {
            assertEquals(NodeState.UP, node.getState(), node + " is " + node.getState());
            assertEquals("datacenter1", node.getDatacenter());
            assertEquals("rack1", node.getRack());
            assertNotNull(node.getHostId(), node + " has no host id");
            assertTrue(node.getOpenConnections() > 0, node + " has no open connection");
            addresses.add(((InetSocketAddress) node.getEndPoint().resolve()).getAddress());
        }
        assertEquals(Set.of(emulator.nodeAddress(1), emulator.nodeAddress(2), emulator.nodeAddress(3)), addresses);
        Row local = session.execute("SELECT cluster_name, release_version FROM system.local").one();
        assertNotNull(local);
        assertNotNull(local.getString("release_version"));
        // Every keyspace the server has is in the driver's schema metadata.
        // The 4.x drivers leave system and system_* out of schema metadata by default
        // (advanced.metadata.schema.refreshed-keyspaces).
        Set<String> serverKeyspaces = session.execute("SELECT keyspace_name FROM system_schema.keyspaces").all()
                .stream().map(r -> r.getString(0))
                .filter(k -> !k.equals("system") && !k.startsWith("system_"))
                .collect(Collectors.toSet());
        Set<String> driverKeyspaces = session.getMetadata().getKeyspaces().keySet().stream()
                .map(CqlIdentifier::asInternal).collect(Collectors.toSet());
        assertEquals(serverKeyspaces, driverKeyspaces);
        assertTrue(session.getMetadata().getTokenMap().isPresent(), "no token map");
    }

    /**
     * ScyllaDB's fork is shard-aware: its pool holds a connection to every shard of every node
     * (2 shards each here), filled in the background after the session opens. Apache's driver
     * is not: it holds one connection per node.
     */
    @Test
    void poolsReachEveryShardOfScyllaNodes() throws Exception {
        boolean shardAware = System.getProperty("conformance.module", "").equals("scylla4");
        Set<String> want = shardAware
                ? Set.of("1/0", "1/1", "2/0", "2/1", "3/0", "3/1")
                : Set.of();
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            Map<String, Integer> connections = emulator.connections(null);
            Set<Integer> nodes = connections.keySet().stream()
                    .map(p -> Integer.parseInt(p.split("/")[0])).collect(Collectors.toSet());
            if (nodes.equals(Set.of(1, 2, 3)) && connections.keySet().containsAll(want)) {
                System.out.println("connections per node/shard: " + connections);
                break;
            }
            assertTrue(System.currentTimeMillis() < deadline, "connections per node/shard: " + connections);
            Thread.sleep(50);
        }
    }

    @Test
    void metadataShowsKeyspaceTableColumnsTypeAndCdcLog() {
        ddl("CREATE KEYSPACE meta WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
                + " AND tablets = {'enabled': false}");
        ddl("CREATE TYPE meta.point (x int, y int)");
        ddl("CREATE TABLE meta.t (pk int, ck text, v frozen<point>, l list<bigint>, PRIMARY KEY (pk, ck))"
                + " WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true}");

        Metadata metadata = session.getMetadata();
        KeyspaceMetadata ks = metadata.getKeyspace("meta").orElseThrow(() -> new AssertionError("no keyspace meta"));
        assertEquals("org.apache.cassandra.locator.NetworkTopologyStrategy", ks.getReplication().get("class"));
        assertEquals("3", ks.getReplication().get("datacenter1"));

        UserDefinedType point = ks.getUserDefinedType("point").orElseThrow(() -> new AssertionError("no type point"));
        assertEquals(List.of(CqlIdentifier.fromCql("x"), CqlIdentifier.fromCql("y")), point.getFieldNames());
        assertEquals(List.of(DataTypes.INT, DataTypes.INT), point.getFieldTypes());

        TableMetadata t = ks.getTable("t").orElseThrow(() -> new AssertionError("no table t"));
        assertEquals(List.of("pk"), names(t.getPartitionKey()));
        assertEquals(List.of("ck"), names(t.getClusteringColumns().keySet().stream().toList()));
        // Scylla writes clustering_order in upper case ('DESC', db/schema_tables.cc; Cassandra
        // writes 'desc'). ScyllaDB's fork compares case-insensitively (scylladb/java-driver#71);
        // Apache's driver compares with "desc" and reports ASC against real Scylla too
        // (scylladb/scylladb#8477), so for it check what the server stores.
        if (System.getProperty("conformance.module", "").equals("scylla4")) {
            assertEquals("DESC", t.getClusteringColumns().values().iterator().next().name());
        } else {
            assertEquals(1, t.getClusteringColumns().size());
        }
        assertEquals("DESC", session.execute("SELECT clustering_order FROM system_schema.columns"
                + " WHERE keyspace_name = 'meta' AND table_name = 't' AND column_name = 'ck'").one().getString(0));
        assertEquals(DataTypes.INT, column(t, "pk").getType());
        assertEquals(DataTypes.TEXT, column(t, "ck").getType());
        UserDefinedType v = assertInstanceOf(UserDefinedType.class, column(t, "v").getType());
        assertTrue(v.isFrozen(), "v is frozen<point>");
        assertEquals("point", v.getName().asInternal());
        ListType l = assertInstanceOf(ListType.class, column(t, "l").getType());
        assertEquals(DataTypes.BIGINT, l.getElementType());
        assertFalse(l.isFrozen());

        TableMetadata log = ks.getTable("t_scylla_cdc_log")
                .orElseThrow(() -> new AssertionError("no CDC log table t_scylla_cdc_log: " + ks.getTables().keySet()));
        assertEquals(List.of("cdc$stream_id"), names(log.getPartitionKey()));
        assertEquals(List.of("cdc$time", "cdc$batch_seq_no"), names(log.getClusteringColumns().keySet().stream().toList()));
        assertEquals(DataTypes.BLOB, column(log, "cdc$stream_id").getType());
        assertEquals(DataTypes.TIMEUUID, column(log, "cdc$time").getType());
        assertEquals(DataTypes.INT, column(log, "cdc$batch_seq_no").getType());
        assertEquals(DataTypes.TINYINT, column(log, "cdc$operation").getType());
        assertEquals(DataTypes.BOOLEAN, column(log, "cdc$end_of_batch").getType());
        assertEquals(DataTypes.INT, column(log, "pk").getType());
        assertEquals(DataTypes.TEXT, column(log, "ck").getType());
        assertEquals(DataTypes.BOOLEAN, column(log, "cdc$deleted_v").getType());
        // A list's elements are keyed by timeuuid: its deleted elements are a frozen set of them.
        assertEquals(DataTypes.setOf(DataTypes.TIMEUUID, true), column(log, "cdc$deleted_elements_l").getType());
    }

    private static ColumnMetadata column(TableMetadata table, String name) {
        return table.getColumn(CqlIdentifier.fromInternal(name)).orElseThrow(
                () -> new AssertionError(table.getName() + " has no column " + name + ": " + table.getColumns().keySet()));
    }

    private static List<String> names(List<?> columns) {
        return columns.stream()
                .map(c -> c instanceof ColumnMetadata m ? m.getName().asInternal() : c.toString())
                .toList();
    }

    /**
     * The token map's replicas of each key equal the replicas computed from the ring that the
     * nodes themselves report (each node's {@code system.local} tokens, read from that node),
     * for RF 1, 2 and 3 on 3 nodes.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3})
    void tokenMapReplicasEqualTheCluster(int rf) {
        String ks = "rf" + rf;
        ddl("CREATE KEYSPACE " + ks + " WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': "
                + rf + "} AND tablets = {'enabled': false}");
        ddl("CREATE TABLE " + ks + ".kv (pk int PRIMARY KEY, v int)");

        // The ring as the nodes report it.
        TreeMap<Long, InetAddress> ring = new TreeMap<>();
        for (Node node : session.getMetadata().getNodes().values()) {
            ResultSet rs = session.execute(SimpleStatement.newInstance("SELECT tokens FROM system.local").setNode(node));
            assertEquals(node, rs.getExecutionInfo().getCoordinator(), "system.local was read from another node");
            Set<String> tokens = rs.one().getSet("tokens", String.class);
            assertFalse(tokens.isEmpty(), node + " reports no tokens");
            InetAddress address = ((InetSocketAddress) node.getEndPoint().resolve()).getAddress();
            for (String token : tokens) {
                assertTrue(ring.put(Long.parseLong(token), address) == null, "token " + token + " owned twice");
            }
        }
        assertEquals(48, ring.size(), "3 nodes x 16 vnodes");

        TokenMap tokenMap = session.getMetadata().getTokenMap().orElseThrow();
        PreparedStatement insert = session.prepare("INSERT INTO " + ks + ".kv (pk, v) VALUES (?, ?)");
        PreparedStatement token = session.prepare("SELECT token(pk) FROM " + ks + ".kv WHERE pk = ?");
        for (int pk = 0; pk < 60; pk++) {
            session.execute(insert.bind(pk, pk));
            long t = session.execute(token.bind(pk)).one().getLong(0);
            Set<InetAddress> want = replicas(ring, t, rf);
            ByteBuffer key = TypeCodecs.INT.encode(pk, DefaultProtocolVersion.V4);
            Set<InetAddress> got = tokenMap.getReplicas(CqlIdentifier.fromCql(ks), key).stream()
                    .map(n -> ((InetSocketAddress) n.getEndPoint().resolve()).getAddress())
                    .collect(Collectors.toSet());
            assertEquals(want, got, "replicas of pk " + pk + " (token " + t + ") in " + ks);
            // The driver's own token of the key is the server's.
            assertEquals(tokenMap.newToken(key), tokenMap.parse(Long.toString(t)), "token of pk " + pk);
        }
    }

    /** NetworkTopologyStrategy with one data center and one rack: the first rf distinct owners clockwise. */
    private static Set<InetAddress> replicas(TreeMap<Long, InetAddress> ring, long token, int rf) {
        Set<InetAddress> out = new java.util.LinkedHashSet<>();
        List<InetAddress> clockwise = new java.util.ArrayList<>(ring.tailMap(token, true).values());
        clockwise.addAll(ring.headMap(token, false).values());
        for (InetAddress a : clockwise) {
            if (out.size() == rf) {
                break;
            }
            out.add(a);
        }
        return out;
    }

    @Test
    void preparedLwtAnswersApplied() {
        ddl("CREATE KEYSPACE IF NOT EXISTS lwt WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
                + " AND tablets = {'enabled': false}");
        ddl("CREATE TABLE lwt.t (pk int PRIMARY KEY, v int)");
        PreparedStatement insert = session.prepare("INSERT INTO lwt.t (pk, v) VALUES (?, ?) IF NOT EXISTS");

        ResultSet first = session.execute(insert.bind(1, 10));
        assertTrue(first.wasApplied());
        assertTrue(first.one().getBoolean("[applied]"));

        ResultSet second = session.execute(insert.bind(1, 20));
        assertFalse(second.wasApplied());
        Row existing = second.one();
        assertFalse(existing.getBoolean("[applied]"));
        assertEquals(1, existing.getInt("pk"));
        assertEquals(10, existing.getInt("v"));

        PreparedStatement update = session.prepare("UPDATE lwt.t SET v = ? WHERE pk = ? IF v = ?");
        assertTrue(session.execute(update.bind(30, 1, 10)).wasApplied());
        ResultSet rejected = session.execute(update.bind(40, 1, 10));
        assertFalse(rejected.wasApplied());
        assertEquals(30, rejected.one().getInt("v"));
        assertEquals(30, session.execute("SELECT v FROM lwt.t WHERE pk = 1").one().getInt("v"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"lz4", "snappy"})
    void compressedSessionsRoundTrip(String algorithm) throws Exception {
        ddl("CREATE KEYSPACE IF NOT EXISTS compression WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
                + " AND tablets = {'enabled': false}");
        ddl("CREATE TABLE IF NOT EXISTS compression.t (pk text PRIMARY KEY, v text)");
        try (CqlSession compressed = connect(algorithm)) {
            assertEquals(algorithm, ((InternalDriverContext) compressed.getContext()).getCompressor().algorithm());
            assertEquals(DefaultProtocolVersion.V4, compressed.getContext().getProtocolVersion());
            // A value that compresses well and spans several kilobytes, both ways.
            String value = ("compressed " + algorithm + " ").repeat(2000);
            compressed.execute(SimpleStatement.newInstance("INSERT INTO compression.t (pk, v) VALUES (?, ?)", algorithm, value));
            Row row = compressed.execute(SimpleStatement.newInstance("SELECT v FROM compression.t WHERE pk = ?", algorithm)).one();
            assertNotNull(row);
            assertEquals(value, row.getString("v"));
            assertEquals(3, compressed.getMetadata().getNodes().size());
            assertTrue(compressed.getMetadata().getKeyspace("compression").isPresent());
            // The server saw the codec negotiated on this session's connections: at least one
            // on every node (the default session's connections stay uncompressed).
            Map<Integer, Integer> perNode = emulator.connectionsPerNode(algorithm);
            assertEquals(Set.of(1, 2, 3), perNode.keySet(), algorithm + " connections per node: " + perNode);
        }
    }
}
