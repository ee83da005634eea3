// KafkaReady: start-kafka's readiness check. Run with the broker's own classpath (it holds
// kafka-clients); exits 0 once a DescribeCluster request answered by BOOTSTRAP lists broker
// NODE_ID (KRaft lists only registered, unfenced brokers, so the broker can serve), 1 when
// TIMEOUT_MS pass first (the last error on stderr).
//
// Usage: java -cp CLASSPATH:DIR KafkaReady BOOTSTRAP NODE_ID TIMEOUT_MS [LABEL]
// (LABEL is ignored: start-kafka passes the node's server.properties, so that the process
// can be found by its command line.)
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.Node;

public final class KafkaReady {
    public static void main(String[] args) throws Exception {
        if (args.length != 3 && args.length != 4) {
            System.err.println("usage: KafkaReady BOOTSTRAP NODE_ID TIMEOUT_MS [LABEL]");
            System.exit(2);
        }
        String bootstrap = args[0];
        int nodeId = Integer.parseInt(args[1]);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[2]));
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "100");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "200");
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        props.put(AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, "200");
        String last = "no answer";
        try (Admin admin = Admin.create(props)) {
            while (System.nanoTime() < deadline) {
                try {
                    var nodes = admin.describeCluster(new DescribeClusterOptions().timeoutMs(1000))
                            .nodes().get(1500, TimeUnit.MILLISECONDS);
                    for (Node node : nodes) {
                        if (node.id() == nodeId) {
                            return;
                        }
                    }
                    last = "the cluster lists brokers " + nodes + ", not node " + nodeId;
                } catch (Exception e) {
                    last = String.valueOf(e.getCause() != null ? e.getCause() : e);
                }
                Thread.sleep(100);
            }
        }
        System.err.println("KafkaReady: broker " + nodeId + " at " + bootstrap + " not ready: " + last);
        System.exit(1);
    }
}
