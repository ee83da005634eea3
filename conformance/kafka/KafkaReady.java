// KafkaReady: start-kafka's readiness check, run with the broker's own classpath (it holds
// kafka-clients) right after the broker's JVM is started.
//
// Usage: java -cp CLASSPATH:DIR KafkaReady BOOTSTRAP NODE_ID TIMEOUT_MS PROPERTIES LOG OFFSET PID
//
// Exits 0 once a DescribeCluster request answered by BOOTSTRAP lists broker NODE_ID (KRaft
// lists only registered, unfenced brokers, so the broker serves); 3 when process PID (the
// broker) exits first; 1 when TIMEOUT_MS pass first. The reason goes to stderr.
//
// PROPERTIES (the node's server.properties) is not read: it is there so that start-kafka can
// find this process by its command line. LOG and OFFSET: the broker's log and where this
// start's lines begin in it. The port accepts connections before the broker serves, and a
// request sent then hangs until its timeout, so it answers late even when the broker became
// ready meanwhile. So after one early attempt (it loads the client's classes, a second's work
// on a loaded machine, while the broker starts), no request goes out until the log says
// "Kafka Server started" (checked every 50 ms); then each attempt, with a new client, has
// 5 s. If that line has not come after 15 s (a very slow start, or another Kafka's wording),
// attempts of 1 s each begin anyway: the log only sets the pace, the answer is what counts.
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.Node;

public final class KafkaReady {
    static final String STARTED = "Kafka Server started";

    /** Reads the log from an offset on, remembering where it stopped. */
    static final class LogWatch {
        final String path;
        long position;
        String carry = "";

        LogWatch(String path, long position) {
            this.path = path;
            this.position = position;
        }

        boolean started() {
            try (RandomAccessFile f = new RandomAccessFile(path, "r")) {
                long length = f.length();
                if (length <= position) {
                    return false;
                }
                byte[] bytes = new byte[(int) Math.min(length - position, 1 << 22)];
                f.seek(position);
                f.readFully(bytes);
                position += bytes.length;
                String text = carry + new String(bytes, StandardCharsets.ISO_8859_1);
                if (text.contains(STARTED)) {
                    return true;
                }
                carry = text.substring(Math.max(0, text.length() - STARTED.length()));
            } catch (IOException e) {
                // not there yet
            }
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: KafkaReady BOOTSTRAP NODE_ID TIMEOUT_MS PROPERTIES LOG OFFSET PID");
            System.exit(2);
        }
        String bootstrap = args[0];
        int nodeId = Integer.parseInt(args[1]);
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
        LogWatch log = new LogWatch(args[4], Long.parseLong(args[5]));
        ProcessHandle broker = ProcessHandle.of(Long.parseLong(args[6])).orElse(null);
        long patience = start + TimeUnit.SECONDS.toNanos(15);

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "50");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "100");
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        props.put(AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "100");

        String last = "no answer";
        boolean first = true;
        boolean started = false;
        while (System.nanoTime() < deadline) {
            if (broker == null || !broker.isAlive()) {
                System.err.println("KafkaReady: the broker (pid " + args[6] + ") exited");
                System.exit(3);
            }
            if (!first && !started) {
                started = log.started();
                if (!started && System.nanoTime() < patience) {
                    last = "the log does not say \"" + STARTED + "\" yet";
                    Thread.sleep(50);
                    continue;
                }
            }
            int attemptMs = first ? 300 : started ? 5000 : 1000;
            first = false;
            // A new client for each attempt: a client that met the broker before it served
            // (a hung connection, metadata without brokers) waits out its own timeouts.
            Admin admin = Admin.create(props);
            try {
                var nodes = admin.describeCluster(new DescribeClusterOptions().timeoutMs(attemptMs))
                        .nodes().get(attemptMs + 500, TimeUnit.MILLISECONDS);
                for (Node node : nodes) {
                    if (node.id() == nodeId) {
                        // At once: closing the client and the JVM's shutdown add ~0.1 s.
                        Runtime.getRuntime().halt(0);
                    }
                }
                last = "the cluster lists brokers " + nodes + ", not node " + nodeId;
            } catch (Exception e) {
                last = String.valueOf(e.getCause() != null ? e.getCause() : e);
            } finally {
                admin.close(Duration.ZERO);
            }
            Thread.sleep(100);
        }
        System.err.println("KafkaReady: broker " + nodeId + " at " + bootstrap + " not ready within "
                + args[2] + " ms: " + last);
        System.exit(1);
    }
}
