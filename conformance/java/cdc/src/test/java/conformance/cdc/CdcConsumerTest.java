package conformance.cdc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.ConsistencyLevel;
import com.datastax.driver.core.PreparedStatement;
import com.datastax.driver.core.Row;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.SimpleStatement;
import com.scylladb.cdc.lib.CDCConsumer;
import com.scylladb.cdc.model.worker.RawChange;
import conformance.Emulator;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Date;
import java.util.HexFormat;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * scylla-cdc-java's {@code CDCConsumer}, unmodified, reads a table's CDC log while the
 * cluster gains a node (a new CDC generation): every change arrives once, with its values,
 * in write order per partition, each from a stream of the generation it was written in.
 */
class CdcConsumerTest {
    private static final Duration GENERATION_DELAY = Duration.ofSeconds(4);
    private static final int PARTITIONS = 12;

    /** One change as written, and as the consumer should describe it. */
    record Change(String operation, int ck, String v, Long n) {
        @Override
        public String toString() {
            return operation + "(ck=" + ck + ", v=" + v + ", n=" + n + ")";
        }
    }

    /** Changes the consumer delivered, per partition, with the stream and time of each. */
    static final class Delivered {
        final Map<Integer, List<Change>> changes = new TreeMap<>();
        final Map<Integer, List<String>> streams = new TreeMap<>();
        final Map<Integer, List<Long>> times = new TreeMap<>();
        int count;

        synchronized CompletableFuture<Void> consume(RawChange change) {
            int pk = change.getCell("pk").getInt();
            int ck = change.getCell("ck").getInt();
            String v = change.isNull("v") ? null : change.getCell("v").getString();
            Long n = change.isNull("n") ? null : change.getCell("n").getLong();
            changes.computeIfAbsent(pk, k -> new ArrayList<>())
                    .add(new Change(change.getOperationType().name(), ck, v, n));
            streams.computeIfAbsent(pk, k -> new ArrayList<>())
                    .add(hex(change.getId().getStreamId().getValue()));
            times.computeIfAbsent(pk, k -> new ArrayList<>())
                    .add(change.getId().getChangeTime().getDate().getTime());
            count++;
            return CompletableFuture.completedFuture(null);
        }

        synchronized int count() {
            return count;
        }
    }

    private static String hex(ByteBuffer b) {
        ByteBuffer copy = b.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    /** Writes one phase of changes: per partition an insert, an update and a row delete. */
    private static void phase(Session session, int phase, Map<Integer, List<Change>> written) {
        PreparedStatement insert = session.prepare("INSERT INTO ks.t (pk, ck, v, n) VALUES (?, ?, ?, ?)");
        PreparedStatement update = session.prepare("UPDATE ks.t SET v = ? WHERE pk = ? AND ck = ?");
        PreparedStatement delete = session.prepare("DELETE FROM ks.t WHERE pk = ? AND ck = ?");
        for (int pk = 0; pk < PARTITIONS; pk++) {
            List<Change> w = written.computeIfAbsent(pk, k -> new ArrayList<>());
            int ck = phase * 10;
            String v = "p" + phase + "-" + pk;
            long n = phase * 1000L + pk;
            session.execute(insert.bind(pk, ck, v, n).setConsistencyLevel(ConsistencyLevel.QUORUM));
            w.add(new Change("ROW_INSERT", ck, v, n));
            session.execute(update.bind(v + "-updated", pk, ck).setConsistencyLevel(ConsistencyLevel.QUORUM));
            w.add(new Change("ROW_UPDATE", ck, v + "-updated", null));
            session.execute(delete.bind(pk, ck + 1).setConsistencyLevel(ConsistencyLevel.QUORUM));
            w.add(new Change("ROW_DELETE", ck + 1, null, null));
        }
    }

    private static Set<String> generationStreams(Session session, Date time) {
        Set<String> out = new HashSet<>();
        for (Row row : session.execute(new SimpleStatement(
                "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = ?", time)
                .setConsistencyLevel(ConsistencyLevel.QUORUM))) {
            for (ByteBuffer stream : row.getSet("streams", ByteBuffer.class)) {
                out.add(hex(stream));
            }
        }
        return out;
    }

    @Test
    void readsEveryChangeAcrossAGenerationChange() throws Exception {
        int octet = Integer.getInteger("conformance.octet", 230);
        try (Emulator emulator = Emulator.start("cdc-CdcConsumerTest", "127.0." + octet + ".1", 3, GENERATION_DELAY);
                Cluster cluster = Cluster.builder().addContactPoint(emulator.host()).withPort(emulator.port()).build()) {
            Session session = cluster.connect();
            session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
                    + " AND tablets = {'enabled': false}");
            session.execute("CREATE TABLE ks.t (pk int, ck int, v text, n bigint, PRIMARY KEY (pk, ck))"
                    + " WITH cdc = {'enabled': true}");
            Date firstGeneration = session.execute(new SimpleStatement(
                    "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'")
                    .setConsistencyLevel(ConsistencyLevel.QUORUM)).one().getTimestamp(0);

            Delivered delivered = new Delivered();
            CDCConsumer consumer = CDCConsumer.builder()
                    .addContactPoint(emulator.contactPoint())
                    .addTable("ks", "t")
                    .withConsumer(delivered::consume)
                    .withWorkersCount(1)
                    .withQueryTimeWindowSizeMs(5_000)
                    .withConfidenceWindowSizeMs(1_000)
                    .withSleepBeforeFirstGenerationMs(500)
                    .withSleepBeforeGenerationDoneMs(500)
                    .withSleepAfterExceptionMs(500)
                    .build();
            Throwable invalid = consumer.validate().orElse(null);
            if (invalid != null) {
                fail("CDCConsumer.validate: " + invalid, invalid);
            }
            consumer.start();
            try {
                Map<Integer, List<Change>> written = new TreeMap<>();
                phase(session, 1, written);
                long phaseOneEnd = System.currentTimeMillis();

                // A fourth node joins: its generation starts GENERATION_DELAY later.
                long secondGenerationMs = Long.parseLong(emulator.command("add-node").get(0).trim());
                assertTrue(secondGenerationMs > phaseOneEnd, "the new generation starts before the last write");
                long deadline = System.currentTimeMillis() + GENERATION_DELAY.toMillis() + 30_000;
                while (true) {
                    long count = session.execute(new SimpleStatement(
                            "SELECT COUNT(*) FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'")
                            .setConsistencyLevel(ConsistencyLevel.QUORUM)).one().getLong(0);
                    if (count == 2 && System.currentTimeMillis() > secondGenerationMs + 100) {
                        break;
                    }
                    assertTrue(System.currentTimeMillis() < deadline, "the second generation is not operating");
                    Thread.sleep(50);
                }
                phase(session, 2, written);

                int total = written.values().stream().mapToInt(List::size).sum();
                long waitUntil = System.currentTimeMillis() + 120_000;
                while (delivered.count() < total && System.currentTimeMillis() < waitUntil) {
                    Thread.sleep(50);
                }
                // A change delivered twice would come with a later window: watch a few more
                // windows (confidence window 1 s, sleeps of 0.5 s) before counting.
                long quiet = System.currentTimeMillis() + 3_000;
                while (delivered.count() <= total && System.currentTimeMillis() < quiet) {
                    Thread.sleep(50);
                }

                Set<String> firstStreams = generationStreams(session, firstGeneration);
                Set<String> secondStreams = generationStreams(session, new Date(secondGenerationMs));
                assertFalse(firstStreams.isEmpty(), "no streams in the first generation");
                assertFalse(secondStreams.isEmpty(), "no streams in the second generation");
                synchronized (delivered) {
                    for (int pk = 0; pk < PARTITIONS; pk++) {
                        assertEquals(written.get(pk), delivered.changes.get(pk), "changes of partition " + pk);
                        List<String> streams = delivered.streams.get(pk);
                        List<Long> times = delivered.times.get(pk);
                        for (int i = 0; i < streams.size(); i++) {
                            boolean inSecond = times.get(i) >= secondGenerationMs;
                            Set<String> generation = inSecond ? secondStreams : firstStreams;
                            assertTrue(generation.contains(streams.get(i)), "partition " + pk + " change " + i
                                    + " came from stream " + streams.get(i) + " of the wrong generation");
                        }
                    }
                    assertEquals(written.keySet(), delivered.changes.keySet(), "partitions delivered");
                    assertEquals(total, delivered.count, "changes delivered");
                }
            } finally {
                consumer.stop();
            }
        }
    }
}
