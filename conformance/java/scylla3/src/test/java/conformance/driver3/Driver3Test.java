package conformance.driver3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ColumnMetadata;
import com.datastax.driver.core.DataType;
import com.datastax.driver.core.Host;
import com.datastax.driver.core.KeyspaceMetadata;
import com.datastax.driver.core.Metadata;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.ProtocolOptions;
import com.datastax.driver.core.ProtocolVersion;
import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SimpleStatement;
import com.datastax.driver.core.TableMetadata;
import com.datastax.driver.core.TypeCodec;
import com.datastax.driver.core.UserType;
import conformance.Emulator;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** ScyllaDB's Java driver 3.x against a 3-node scylla-emulator: what the driver's users check first. */
class Driver3Test {
    private static Emulator emulator;
    private static Cluster cluster;
    private static Session session;

    @BeforeAll
    static void start() throws Exception {
        int octet = Integer.getInteger("conformance.octet", 220);
        emulator = Emulator.start("scylla3-Driver3Test", "127.0." + octet + ".1", 3, Duration.ofSeconds(1));
        cluster = connect(ProtocolOptions.Compression.NONE);
        session = cluster.connect();
    }

    @AfterAll
    static void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
        if (emulator != null) {
            emulator.close();
        }
    }

    /** A Cluster with the driver's defaults but the contact point and the compression. */
    private static Cluster connect(ProtocolOptions.Compression compression) {
        return Cluster.builder()
                .addContactPoint(emulator.host())
                .withPort(emulator.port())
                .withCompression(compression)
                .build();
    }

    private static void ddl(String cql) {
        ResultSet rs = session.execute(cql);
        assertTrue(rs.getExecutionInfo().isSchemaInAgreement(), "schema agreement after " + cql);
    }

    @Test
    void connectsWithDefaultOptions() {
        assertEquals(ProtocolVersion.V4, cluster.getConfiguration().getProtocolOptions().getProtocolVersion());
        Metadata metadata = cluster.getMetadata();
        Set<Host> hosts = metadata.getAllHosts();
        assertEquals(3, hosts.size(), "hosts: " + hosts);
        Set<InetAddress> addresses = new java.util.HashSet<>();
        for (Host host : hosts) {
            assertTrue(host.isUp(), host + " is down");
            assertEquals("datacenter1", host.getDatacenter());
            assertEquals("rack1", host.getRack());
            assertNotNull(host.getHostId(), host + " has no host id");
            assertEquals(16, host.getTokens().size(), host + " tokens");
            addresses.add(host.getAddress());
        }
        assertEquals(Set.of(emulator.nodeAddress(1), emulator.nodeAddress(2), emulator.nodeAddress(3)), addresses);
        assertEquals("org.apache.cassandra.dht.Murmur3Partitioner", metadata.getPartitioner());
        Row local = session.execute("SELECT release_version FROM system.local").one();
        assertNotNull(local.getString("release_version"));
        Set<String> serverKeyspaces = session.execute("SELECT keyspace_name FROM system_schema.keyspaces").all()
                .stream().map(r -> r.getString(0)).collect(Collectors.toSet());
        Set<String> driverKeyspaces = metadata.getKeyspaces().stream()
                .map(KeyspaceMetadata::getName).collect(Collectors.toSet());
        assertEquals(serverKeyspaces, driverKeyspaces);
    }

    /**
     * ScyllaDB's 3.x driver is shard-aware: its pool holds a connection to every shard of
     * every node (2 shards each here), filled in the background after the session opens.
     */
    @Test
    void poolsReachEveryShard() throws Exception {
        Set<String> want = Set.of("1/0", "1/1", "2/0", "2/1", "3/0", "3/1");
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            java.util.Map<String, Integer> connections = emulator.connections(null);
            if (connections.keySet().containsAll(want)) {
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

        KeyspaceMetadata ks = cluster.getMetadata().getKeyspace("meta");
        assertNotNull(ks, "no keyspace meta");
        assertEquals("org.apache.cassandra.locator.NetworkTopologyStrategy", ks.getReplication().get("class"));
        assertEquals("3", ks.getReplication().get("datacenter1"));

        UserType point = ks.getUserType("point");
        assertNotNull(point, "no type point");
        assertEquals(List.of("x", "y"), new ArrayList<>(point.getFieldNames()));
        assertEquals(DataType.cint(), point.getFieldType("x"));
        assertEquals(DataType.cint(), point.getFieldType("y"));

        TableMetadata t = ks.getTable("t");
        assertNotNull(t, "no table t");
        assertEquals(List.of("pk"), names(t.getPartitionKey()));
        assertEquals(List.of("ck"), names(t.getClusteringColumns()));
        // Scylla writes clustering_order in upper case ('DESC', db/schema_tables.cc; Cassandra
        // writes 'desc'), and this driver compares with "desc" case-sensitively, so it reports
        // ASC against real Scylla too (scylladb/scylladb#8477; the 3.x fix, scylladb/java-driver
        // #68, was not merged). Check what the server stores instead.
        assertEquals(1, t.getClusteringOrder().size());
        assertEquals("DESC", session.execute("SELECT clustering_order FROM system_schema.columns"
                + " WHERE keyspace_name = 'meta' AND table_name = 't' AND column_name = 'ck'").one().getString(0));
        assertEquals(DataType.cint(), column(t, "pk").getType());
        assertEquals(DataType.text(), column(t, "ck").getType());
        UserType v = assertInstanceOf(UserType.class, column(t, "v").getType());
        assertTrue(v.isFrozen(), "v is frozen<point>");
        assertEquals("point", v.getTypeName());
        assertEquals(DataType.list(DataType.bigint()), column(t, "l").getType());

        // The response to CREATE TABLE refreshes only `t`; this driver learns of the log table
        // from its own pushed schema event, refreshed in the background: wait for it.
        TableMetadata log = ks.getTable("t_scylla_cdc_log");
        long deadline = System.currentTimeMillis() + 10_000;
        while (log == null && System.currentTimeMillis() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            log = cluster.getMetadata().getKeyspace("meta").getTable("t_scylla_cdc_log");
        }
        assertNotNull(log, "no CDC log table t_scylla_cdc_log: " + ks.getTables());
        assertEquals(List.of("cdc$stream_id"), names(log.getPartitionKey()));
        assertEquals(List.of("cdc$time", "cdc$batch_seq_no"), names(log.getClusteringColumns()));
        assertEquals(DataType.blob(), column(log, "cdc$stream_id").getType());
        assertEquals(DataType.timeuuid(), column(log, "cdc$time").getType());
        assertEquals(DataType.cint(), column(log, "cdc$batch_seq_no").getType());
        assertEquals(DataType.tinyint(), column(log, "cdc$operation").getType());
        assertEquals(DataType.cboolean(), column(log, "cdc$end_of_batch").getType());
        assertEquals(DataType.cint(), column(log, "pk").getType());
        assertEquals(DataType.cboolean(), column(log, "cdc$deleted_v").getType());
        // A list's elements are keyed by timeuuid: its deleted elements are a frozen set of them.
        assertEquals(DataType.frozenSet(DataType.timeuuid()), column(log, "cdc$deleted_elements_l").getType());
    }

    private static ColumnMetadata column(TableMetadata table, String name) {
        ColumnMetadata c = table.getColumn(name);
        assertNotNull(c, table.getName() + " has no column " + name + ": " + table.getColumns());
        return c;
    }

    private static List<String> names(List<ColumnMetadata> columns) {
        return columns.stream().map(ColumnMetadata::getName).toList();
    }

    /**
     * The driver's replicas of each key equal the replicas computed from the ring that the
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

        TreeMap<Long, InetAddress> ring = new TreeMap<>();
        for (Host host : cluster.getMetadata().getAllHosts()) {
            ResultSet rs = session.execute(new SimpleStatement("SELECT tokens FROM system.local").setHost(host));
            assertEquals(host, rs.getExecutionInfo().getQueriedHost(), "system.local was read from another node");
            Set<String> tokens = rs.one().getSet("tokens", String.class);
            assertFalse(tokens.isEmpty(), host + " reports no tokens");
            for (String token : tokens) {
                assertTrue(ring.put(Long.parseLong(token), host.getAddress()) == null, "token " + token + " owned twice");
            }
        }
        assertEquals(48, ring.size(), "3 nodes x 16 vnodes");

        PreparedStatement insert = session.prepare("INSERT INTO " + ks + ".kv (pk, v) VALUES (?, ?)");
        PreparedStatement token = session.prepare("SELECT token(pk) FROM " + ks + ".kv WHERE pk = ?");
        for (int pk = 0; pk < 60; pk++) {
            session.execute(insert.bind(pk, pk));
            long t = session.execute(token.bind(pk)).one().getLong(0);
            Set<InetAddress> want = replicas(ring, t, rf);
            ByteBuffer key = TypeCodec.cint().serialize(pk, ProtocolVersion.V4);
            // A null token factory is the cluster's partitioner.
            Set<InetAddress> got = cluster.getMetadata().getReplicas(ks, null, key).stream()
                    .map(Host::getAddress).collect(Collectors.toSet());
            assertEquals(want, got, "replicas of pk " + pk + " (token " + t + ") in " + ks);
        }
    }

    /** NetworkTopologyStrategy with one data center and one rack: the first rf distinct owners clockwise. */
    private static Set<InetAddress> replicas(TreeMap<Long, InetAddress> ring, long token, int rf) {
        Set<InetAddress> out = new LinkedHashSet<>();
        List<InetAddress> clockwise = new ArrayList<>(ring.tailMap(token, true).values());
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
        assertTrue(insert.isLWT(), "the driver knows the statement is an LWT");

        ResultSet first = session.execute(insert.bind(1, 10));
        assertTrue(first.wasApplied());
        assertTrue(first.one().getBool("[applied]"));

        ResultSet second = session.execute(insert.bind(1, 20));
        assertFalse(second.wasApplied());
        Row existing = second.one();
        assertFalse(existing.getBool("[applied]"));
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
    @EnumSource(value = ProtocolOptions.Compression.class, names = {"LZ4", "SNAPPY"})
    void compressedSessionsRoundTrip(ProtocolOptions.Compression compression) throws Exception {
        ddl("CREATE KEYSPACE IF NOT EXISTS compression WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
                + " AND tablets = {'enabled': false}");
        ddl("CREATE TABLE IF NOT EXISTS compression.t (pk text PRIMARY KEY, v text)");
        try (Cluster compressed = connect(compression)) {
            Session s = compressed.connect();
            assertEquals(compression, compressed.getConfiguration().getProtocolOptions().getCompression());
            String name = compression.toString();
            String value = ("compressed " + name + " ").repeat(2000);
            s.execute("INSERT INTO compression.t (pk, v) VALUES (?, ?)", name, value);
            Row row = s.execute("SELECT v FROM compression.t WHERE pk = ?", name).one();
            assertNotNull(row);
            assertEquals(value, row.getString("v"));
            assertEquals(3, compressed.getMetadata().getAllHosts().size());
            assertNotNull(compressed.getMetadata().getKeyspace("compression"));
            // The server saw the codec negotiated on this session's connections: at least one
            // on every node (the default session's connections stay uncompressed).
            String codec = compression.toString().toLowerCase(java.util.Locale.ROOT);
            java.util.Map<Integer, Integer> perNode = emulator.connectionsPerNode(codec);
            assertEquals(Set.of(1, 2, 3), perNode.keySet(), codec + " connections per node: " + perNode);
        }
    }
}
