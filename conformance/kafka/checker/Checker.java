// kafka-check: reads (and writes) a Kafka cluster with clients nobody here wrote: Kafka's own
// Java consumer, producer and admin client, Kafka Connect's JsonConverter and a Connect
// transformation (Debezium's ExtractNewRecordState by default). Run by conformance/kafka/
// kafka-check, which resolves checker/pom.xml and compiles this file once; see its header
// (or `kafka-check --help`) for the subcommands and their output.
//
// Output is JSON, one object per line, UTF-8 whatever the locale; diagnostics go to stderr.
// Exit status: 0 success, 1 failure (timeout, a conversion or transformation error, more
// records than expected, a Kafka error), 2 usage error.

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.connect.connector.ConnectRecord;
import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;
import org.apache.kafka.connect.transforms.Transformation;

public final class Checker {
    static final String DEFAULT_TRANSFORM = "io.debezium.transforms.ExtractNewRecordState";

    /** A failure reported as `kafka-check: MESSAGE` on stderr with exit status 1 (2: usage). */
    static final class Fail extends RuntimeException {
        final int status;

        Fail(int status, String message) {
            super(message);
            this.status = status;
        }
    }

    static Fail usage(String message) {
        return new Fail(2, message + " (kafka-check --help)");
    }

    static Fail fail(String message) {
        return new Fail(1, message);
    }

    // --- Arguments ------------------------------------------------------------------------

    static final Set<String> FLAGS = Set.of("--from-beginning", "--abort", "--internal", "--if-not-exists");
    static final Set<String> MULTI = Set.of("--transform-config", "--converter-config", "--client-config", "--config");

    static final class Args {
        final String command;
        final Map<String, List<String>> values = new HashMap<>();
        final Set<String> flags = new HashSet<>();

        Args(String[] argv, Map<String, Set<String>> allowed) {
            if (argv.length == 0) {
                throw usage("no subcommand");
            }
            command = argv[0];
            Set<String> ok = allowed.get(command);
            if (ok == null) {
                throw usage("unknown subcommand '" + command + "'");
            }
            for (int i = 1; i < argv.length; i++) {
                String a = argv[i];
                if (!ok.contains(a)) {
                    throw usage(command + ": unknown option '" + a + "'");
                }
                if (FLAGS.contains(a)) {
                    flags.add(a);
                    continue;
                }
                if (i + 1 >= argv.length) {
                    throw usage(command + ": " + a + " needs a value");
                }
                String v = argv[++i];
                List<String> list = values.computeIfAbsent(a, k -> new ArrayList<>());
                if (!list.isEmpty() && !MULTI.contains(a)) {
                    throw usage(command + ": " + a + " given twice");
                }
                list.add(v);
            }
        }

        String get(String name) {
            List<String> l = values.get(name);
            return l == null ? null : l.get(0);
        }

        String required(String name) {
            String v = get(name);
            if (v == null) {
                throw usage(command + ": " + name + " is required");
            }
            return v;
        }

        boolean flag(String name) {
            return flags.contains(name);
        }

        long number(String name, long dflt, long min) {
            String v = get(name);
            if (v == null) {
                return dflt;
            }
            try {
                long n = Long.parseLong(v);
                if (n < min) {
                    throw usage(command + ": " + name + " must be >= " + min + ", got " + v);
                }
                return n;
            } catch (NumberFormatException e) {
                throw usage(command + ": " + name + " wants a number, got '" + v + "'");
            }
        }

        /** KEY=VALUE options as an ordered map. */
        Map<String, String> pairs(String name) {
            Map<String, String> m = new LinkedHashMap<>();
            for (String kv : values.getOrDefault(name, List.of())) {
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw usage(command + ": " + name + " wants KEY=VALUE, got '" + kv + "'");
                }
                m.put(kv.substring(0, eq), kv.substring(eq + 1));
            }
            return m;
        }

        List<String> topics() {
            List<String> t = new ArrayList<>();
            for (String s : required("--topic").split(",")) {
                if (!s.isEmpty()) {
                    t.add(s);
                }
            }
            if (t.isEmpty()) {
                throw usage(command + ": --topic names no topic");
            }
            return t;
        }
    }

    static final Set<String> READ_OPTS = Set.of("--bootstrap", "--topic", "--isolation", "--from-beginning",
            "--expect", "--idle-ms", "--timeout", "--client-config");

    static Set<String> with(Set<String> base, String... more) {
        Set<String> s = new HashSet<>(base);
        s.addAll(Arrays.asList(more));
        return s;
    }

    static final Map<String, Set<String>> COMMANDS = Map.of(
            "consume", READ_OPTS,
            "connect", with(READ_OPTS, "--schemas", "--converter-config"),
            "flatten", with(READ_OPTS, "--schemas", "--converter-config", "--transform", "--transform-config"),
            "describe", Set.of("--bootstrap", "--topic", "--internal", "--timeout", "--client-config"),
            "produce", Set.of("--bootstrap", "--topic", "--transactional-id", "--abort", "--timeout",
                    "--client-config"),
            "create-topic", Set.of("--bootstrap", "--topic", "--partitions", "--config", "--if-not-exists",
                    "--timeout", "--client-config"));

    // --- Main -----------------------------------------------------------------------------

    public static void main(String[] argv) {
        if (argv.length == 1 && (argv[0].equals("--help") || argv[0].equals("-h"))) {
            System.out.println("kafka-check SUBCOMMAND: consume, connect, flatten, describe, produce, create-topic;"
                    + " see conformance/kafka/kafka-check --help");
            return;
        }
        int status;
        // stdout: UTF-8 whatever the locale, buffered (flushed after each batch of records).
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        try {
            Args args = new Args(argv, COMMANDS);
            status = switch (args.command) {
                case "consume", "connect", "flatten" -> read(args, out);
                case "describe" -> describe(args, out);
                case "produce" -> produce(args, out);
                case "create-topic" -> createTopic(args);
                default -> throw usage("unknown subcommand");
            };
        } catch (Fail f) {
            flushQuietly(out);
            System.err.println("kafka-check: " + f.getMessage());
            status = f.status;
        } catch (Exception e) {
            flushQuietly(out);
            System.err.println("kafka-check: " + e);
            e.printStackTrace(System.err);
            status = 1;
        }
        flushQuietly(out);
        System.err.flush();
        // halt: the Kafka clients are closed; no non-daemon thread may keep the JVM alive.
        Runtime.getRuntime().halt(status);
    }

    static void flushQuietly(OutputStream out) {
        try {
            out.flush();
        } catch (IOException e) {
            // stdout closed: nothing to report it to
        }
    }

    static final JsonFactory JSON = new JsonFactory();
    static final ObjectMapper MAPPER = new ObjectMapper();

    static JsonGenerator generator(OutputStream out) throws IOException {
        JsonGenerator g = JSON.createGenerator(out, JsonEncoding.UTF8);
        g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
        g.disable(JsonGenerator.Feature.FLUSH_PASSED_TO_STREAM);
        g.setRootValueSeparator(null); // records are separated by the newline written after each
        return g;
    }

    static Properties clientProps(Args args, long timeoutMs) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.required("--bootstrap"));
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafka-check");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(timeoutMs, 30_000)));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs));
        p.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        return p;
    }

    // --- consume, connect, flatten ------------------------------------------------------------

    /** What each subcommand does with a record; returns false for a record in error. */
    interface RecordWriter {
        boolean write(ConsumerRecord<byte[], byte[]> rec, JsonGenerator g) throws IOException;
    }

    static int read(Args args, OutputStream out) throws Exception {
        List<String> topics = args.topics();
        long timeoutMs = args.number("--timeout", 60, 1) * 1000;
        long expect = args.number("--expect", -1, 0);
        long idleMs = args.number("--idle-ms", -1, 0);
        if (expect < 0 && idleMs < 0) {
            throw usage(args.command + ": give --expect N or --idle-ms MS (or both)");
        }
        String isolation = Optional.ofNullable(args.get("--isolation")).orElse("read_committed");
        if (!isolation.equals("read_committed") && !isolation.equals("read_uncommitted")) {
            throw usage(args.command + ": --isolation is read_committed or read_uncommitted, got '" + isolation + "'");
        }
        RecordWriter writer = switch (args.command) {
            case "consume" -> Checker::writeRaw;
            case "connect" -> new ConnectWriter(args, false);
            default -> new ConnectWriter(args, true);
        };

        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        Properties p = clientProps(args, timeoutMs);
        p.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(16 << 20));
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(64 << 20));
        p.putAll(args.pairs("--client-config"));
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            // Every partition of every topic, waiting (within the timeout) for topics that do
            // not exist yet; no consumer group, so nothing is committed.
            List<TopicPartition> partitions = new ArrayList<>();
            for (String topic : topics) {
                List<PartitionInfo> infos = List.of();
                while (true) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw fail("timed out after " + timeoutMs / 1000 + " s: topic '" + topic
                                + "' does not exist or the cluster does not answer");
                    }
                    try {
                        infos = consumer.partitionsFor(topic, Duration.ofNanos(Math.min(left, TimeUnit.SECONDS.toNanos(2))));
                    } catch (org.apache.kafka.common.errors.TimeoutException e) {
                        infos = List.of();
                    }
                    if (infos != null && !infos.isEmpty()) {
                        break;
                    }
                    Thread.sleep(100);
                }
                for (PartitionInfo info : infos) {
                    partitions.add(new TopicPartition(topic, info.partition()));
                }
            }
            consumer.assign(partitions);
            if (args.flag("--from-beginning")) {
                consumer.seekToBeginning(partitions);
            } else {
                consumer.seekToEnd(partitions);
            }
            Map<TopicPartition, Long> positions = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
            for (TopicPartition tp : partitions) {
                long left = Math.max(1, deadline - System.nanoTime());
                positions.put(tp, consumer.position(tp, Duration.ofNanos(left)));
            }
            System.err.println("kafka-check: " + args.command + " " + String.join(",", topics) + " ("
                    + isolation + ") from " + positions);

            JsonGenerator g = generator(out);
            long count = 0;
            long errors = 0;
            long last = System.nanoTime();
            long idleNanos = TimeUnit.MILLISECONDS.toNanos(idleMs);
            boolean strict = expect >= 0 && idleMs >= 0;
            outer:
            while (true) {
                long now = System.nanoTime();
                if (expect >= 0 && count >= expect && idleMs < 0) {
                    break;
                }
                if (idleMs >= 0 && now - last >= idleNanos && (expect < 0 || count >= expect)) {
                    break;
                }
                if (now >= deadline) {
                    g.flush();
                    throw fail("timed out after " + timeoutMs / 1000 + " s with " + count + " records"
                            + (expect >= 0 ? " of the " + expect + " expected" : " (records kept arriving)")
                            + (errors > 0 ? ", " + errors + " in error" : ""));
                }
                long wait = deadline - now;
                if (idleMs >= 0 && (expect < 0 || count >= expect)) {
                    wait = Math.min(wait, idleNanos - (now - last));
                }
                wait = Math.max(1, Math.min(wait, TimeUnit.MILLISECONDS.toNanos(500)));
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofNanos(wait));
                if (records.isEmpty()) {
                    continue;
                }
                last = System.nanoTime();
                for (ConsumerRecord<byte[], byte[]> rec : records) {
                    if (expect >= 0 && !strict && count >= expect) {
                        break outer;
                    }
                    if (!writer.write(rec, g)) {
                        errors++;
                    }
                    g.writeRaw('\n');
                    count++;
                }
                g.flush();
                out.flush();
            }
            g.flush();
            out.flush();
            if (strict && count > expect) {
                throw fail("expected " + expect + " records, read " + count);
            }
            if (errors > 0) {
                throw fail(errors + " of " + count + " records could not be "
                        + (args.command.equals("flatten") ? "converted or transformed" : "converted"));
            }
            System.err.println("kafka-check: read " + count + " records in "
                    + String.format("%.1f", (System.nanoTime() - start) / 1e9) + " s");
            return 0;
        }
    }

    static boolean writeRaw(ConsumerRecord<byte[], byte[]> rec, JsonGenerator g) throws IOException {
        g.writeStartObject();
        g.writeStringField("topic", rec.topic());
        g.writeNumberField("partition", rec.partition());
        g.writeNumberField("offset", rec.offset());
        g.writeFieldName("key");
        writeBytes(g, rec.key());
        g.writeFieldName("value");
        writeBytes(g, rec.value());
        g.writeFieldName("headers");
        Map<String, List<byte[]>> headers = new LinkedHashMap<>();
        for (Header h : rec.headers()) {
            headers.computeIfAbsent(h.key(), k -> new ArrayList<>()).add(h.value());
        }
        g.writeStartObject();
        for (Map.Entry<String, List<byte[]>> e : headers.entrySet()) {
            g.writeFieldName(e.getKey());
            if (e.getValue().size() == 1) {
                writeBytes(g, e.getValue().get(0));
            } else {
                g.writeStartArray();
                for (byte[] v : e.getValue()) {
                    writeBytes(g, v);
                }
                g.writeEndArray();
            }
        }
        g.writeEndObject();
        g.writeNumberField("timestamp", rec.timestamp());
        g.writeStringField("timestamp_type", rec.timestampType().toString());
        g.writeEndObject();
        return true;
    }

    /** Bytes as a JSON string when they are UTF-8, as {"base64": ...} when not, null as null. */
    static void writeBytes(JsonGenerator g, byte[] bytes) throws IOException {
        if (bytes == null) {
            g.writeNull();
            return;
        }
        try {
            CharBuffer chars = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes));
            g.writeString(chars.toString());
        } catch (CharacterCodingException e) {
            g.writeStartObject();
            g.writeStringField("base64", Base64.getEncoder().encodeToString(bytes));
            g.writeEndObject();
        }
    }

    /** connect and flatten: JsonConverter, then (flatten) a transformation. */
    static final class ConnectWriter implements RecordWriter {
        final JsonConverter keyConverter = new JsonConverter();
        final JsonConverter valueConverter = new JsonConverter();
        final SimpleHeaderConverter headerConverter = new SimpleHeaderConverter();
        final Transformation<SinkRecord> transform;

        @SuppressWarnings("unchecked")
        ConnectWriter(Args args, boolean flatten) throws Exception {
            String schemas = Optional.ofNullable(args.get("--schemas")).orElse("true");
            if (!schemas.equals("true") && !schemas.equals("false")) {
                throw usage(args.command + ": --schemas is true or false, got '" + schemas + "'");
            }
            Map<String, String> conf = new HashMap<>();
            conf.put("schemas.enable", schemas);
            conf.putAll(args.pairs("--converter-config"));
            keyConverter.configure(conf, true);
            valueConverter.configure(conf, false);
            headerConverter.configure(Map.of());
            if (flatten) {
                String cls = Optional.ofNullable(args.get("--transform")).orElse(DEFAULT_TRANSFORM);
                Object t;
                try {
                    t = Class.forName(cls).getDeclaredConstructor().newInstance();
                } catch (ClassNotFoundException e) {
                    throw usage(args.command + ": no class " + cls + " on the classpath");
                }
                if (!(t instanceof Transformation)) {
                    throw usage(args.command + ": " + cls + " is not a Connect Transformation");
                }
                transform = (Transformation<SinkRecord>) t;
                transform.configure(args.pairs("--transform-config"));
            } else {
                transform = null;
            }
        }

        @Override
        public boolean write(ConsumerRecord<byte[], byte[]> rec, JsonGenerator g) throws IOException {
            String stage = "key";
            ConnectRecord<?> result;
            SchemaAndValue key;
            SchemaAndValue value;
            try {
                key = keyConverter.toConnectData(rec.topic(), rec.headers(), rec.key());
                stage = "value";
                value = valueConverter.toConnectData(rec.topic(), rec.headers(), rec.value());
                if (transform == null) {
                    writeConnectRecord(g, rec.topic(), rec.partition(), rec.offset(), rec.timestamp(),
                            key.schema(), key.value(), value.schema(), value.value(), null);
                    return true;
                }
                stage = "headers";
                ConnectHeaders headers = new ConnectHeaders();
                for (Header h : rec.headers()) {
                    headers.add(h.key(), headerConverter.toConnectHeader(rec.topic(), h.key(), h.value()));
                }
                SinkRecord sink = new SinkRecord(rec.topic(), rec.partition(), key.schema(), key.value(),
                        value.schema(), value.value(), rec.offset(), rec.timestamp(), rec.timestampType(),
                        headers);
                stage = "transform";
                result = transform.apply(sink);
            } catch (Exception e) {
                writeError(g, rec, stage, e);
                return false;
            }
            if (result == null) {
                g.writeStartObject();
                g.writeBooleanField("dropped", true);
                g.writeStringField("topic", rec.topic());
                g.writeNumberField("partition", rec.partition());
                g.writeNumberField("offset", rec.offset());
                g.writeEndObject();
                return true;
            }
            writeConnectRecord(g, result.topic(), result.kafkaPartition(), rec.offset(), result.timestamp(),
                    result.keySchema(), result.key(), result.valueSchema(), result.value(), result.headers());
            return true;
        }
    }

    static void writeConnectRecord(JsonGenerator g, String topic, Integer partition, long offset, Long timestamp,
            Schema keySchema, Object key, Schema valueSchema, Object value,
            org.apache.kafka.connect.header.Headers headers) throws IOException {
        g.writeStartObject();
        g.writeStringField("topic", topic);
        if (partition == null) {
            g.writeNullField("partition");
        } else {
            g.writeNumberField("partition", partition);
        }
        g.writeNumberField("offset", offset);
        if (timestamp != null) {
            g.writeNumberField("timestamp", timestamp);
        }
        g.writeFieldName("key");
        writeValue(g, keySchema, key);
        g.writeFieldName("key_schema");
        writeSchema(g, keySchema);
        g.writeFieldName("value");
        writeValue(g, valueSchema, value);
        g.writeFieldName("value_schema");
        writeSchema(g, valueSchema);
        if (headers != null) {
            Map<String, List<org.apache.kafka.connect.header.Header>> byName = new LinkedHashMap<>();
            for (org.apache.kafka.connect.header.Header h : headers) {
                byName.computeIfAbsent(h.key(), k -> new ArrayList<>()).add(h);
            }
            g.writeFieldName("headers");
            g.writeStartObject();
            for (Map.Entry<String, List<org.apache.kafka.connect.header.Header>> e : byName.entrySet()) {
                g.writeFieldName(e.getKey());
                if (e.getValue().size() == 1) {
                    writeValue(g, e.getValue().get(0).schema(), e.getValue().get(0).value());
                } else {
                    g.writeStartArray();
                    for (org.apache.kafka.connect.header.Header h : e.getValue()) {
                        writeValue(g, h.schema(), h.value());
                    }
                    g.writeEndArray();
                }
            }
            g.writeEndObject();
        }
        g.writeEndObject();
    }

    static long reportedErrors;

    static void writeError(JsonGenerator g, ConsumerRecord<byte[], byte[]> rec, String stage, Exception e)
            throws IOException {
        StringBuilder msg = new StringBuilder(stage).append(": ").append(e);
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        if (root != e && !msg.toString().contains(String.valueOf(root.getMessage()))) {
            msg.append(" (root cause: ").append(root).append(')');
        }
        String text = msg.toString().replace('\n', ' ');
        if (++reportedErrors <= 10) {
            System.err.println("kafka-check: " + rec.topic() + "-" + rec.partition() + "@" + rec.offset() + ": " + text
                    + (reportedErrors == 10 ? " (further errors only on stdout)" : ""));
        }
        g.writeStartObject();
        g.writeStringField("topic", rec.topic());
        g.writeNumberField("partition", rec.partition());
        g.writeNumberField("offset", rec.offset());
        g.writeStringField("error", text);
        g.writeFieldName("raw_key");
        writeBytes(g, rec.key());
        g.writeFieldName("raw_value");
        writeBytes(g, rec.value());
        g.writeEndObject();
    }

    static final DateTimeFormatter DATE = DateTimeFormatter.ISO_LOCAL_DATE.withZone(ZoneOffset.UTC);
    static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS").withZone(ZoneOffset.UTC);

    /**
     * A Connect value as JSON: Struct as an object of its fields in schema order (the values as
     * set, without the fields' defaults), map as an object (an array of {"key","value"} when
     * its keys are not strings), array as array, bytes as base64, Decimal as a string (no
     * precision lost), Date/Time/Timestamp as ISO-8601 strings (UTC), NaN and infinities as
     * strings, null as null.
     */
    static void writeValue(JsonGenerator g, Schema schema, Object v) throws IOException {
        if (v == null) {
            g.writeNull();
        } else if (v instanceof Struct s) {
            g.writeStartObject();
            for (Field f : s.schema().fields()) {
                g.writeFieldName(f.name());
                writeValue(g, f.schema(), s.getWithoutDefault(f.name()));
            }
            g.writeEndObject();
        } else if (v instanceof Map<?, ?> m) {
            Schema ks = schema != null && schema.type() == Schema.Type.MAP ? schema.keySchema() : null;
            Schema vs = schema != null && schema.type() == Schema.Type.MAP ? schema.valueSchema() : null;
            boolean stringKeys = m.keySet().stream().allMatch(k -> k instanceof String);
            if (stringKeys) {
                // By key: a Connect map has no order (JsonConverter's schemaless objects are
                // HashMaps), so the output does not depend on hashing.
                g.writeStartObject();
                for (Map.Entry<?, ?> e : new TreeMap<Object, Object>(m).entrySet()) {
                    g.writeFieldName((String) e.getKey());
                    writeValue(g, vs, e.getValue());
                }
                g.writeEndObject();
            } else {
                g.writeStartArray();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    g.writeStartObject();
                    g.writeFieldName("key");
                    writeValue(g, ks, e.getKey());
                    g.writeFieldName("value");
                    writeValue(g, vs, e.getValue());
                    g.writeEndObject();
                }
                g.writeEndArray();
            }
        } else if (v instanceof Collection<?> c) {
            Schema is = schema != null && schema.type() == Schema.Type.ARRAY ? schema.valueSchema() : null;
            g.writeStartArray();
            for (Object o : c) {
                writeValue(g, is, o);
            }
            g.writeEndArray();
        } else if (v instanceof byte[] b) {
            g.writeString(Base64.getEncoder().encodeToString(b));
        } else if (v instanceof ByteBuffer bb) {
            ByteBuffer d = bb.duplicate();
            byte[] b = new byte[d.remaining()];
            d.get(b);
            g.writeString(Base64.getEncoder().encodeToString(b));
        } else if (v instanceof BigDecimal d) {
            // Plain digits unless the exponent is far out: Connect's header parser reads a
            // text such as "12e345678901" as a number, whose plain form would be gigabytes
            // (the checker once died of it with an OutOfMemoryError instead of reporting it).
            g.writeString(Math.abs((long) d.scale()) > 4096 ? d.toString() : d.toPlainString());
        } else if (v instanceof java.util.Date d) {
            Instant i = d.toInstant();
            String name = schema == null ? null : schema.name();
            if (org.apache.kafka.connect.data.Date.LOGICAL_NAME.equals(name)) {
                g.writeString(DATE.format(i));
            } else if (org.apache.kafka.connect.data.Time.LOGICAL_NAME.equals(name)) {
                g.writeString(TIME.format(i));
            } else {
                g.writeString(i.toString());
            }
        } else if (v instanceof Float f) {
            if (f.isNaN() || f.isInfinite()) {
                g.writeString(f.toString());
            } else {
                g.writeNumber(f);
            }
        } else if (v instanceof Double d) {
            if (d.isNaN() || d.isInfinite()) {
                g.writeString(d.toString());
            } else {
                g.writeNumber(d);
            }
        } else if (v instanceof Byte n) {
            g.writeNumber(n);
        } else if (v instanceof Short n) {
            g.writeNumber(n);
        } else if (v instanceof Integer n) {
            g.writeNumber(n);
        } else if (v instanceof Long n) {
            g.writeNumber(n);
        } else if (v instanceof java.math.BigInteger n) {
            g.writeNumber(n);
        } else if (v instanceof Boolean b) {
            g.writeBoolean(b);
        } else {
            g.writeString(v.toString());
        }
    }

    /**
     * A Connect schema as JSON, in the style of JsonConverter's own schemas: {"type", "optional",
     * and when set "name", "version", "doc", "parameters", "default"; a struct's "fields" (each
     * a schema with its "field" name), an array's "items", a map's "keys" and "values"}; no
     * schema as null.
     */
    static void writeSchema(JsonGenerator g, Schema s) throws IOException {
        if (s == null) {
            g.writeNull();
            return;
        }
        g.writeStartObject();
        writeSchemaFields(g, s);
        g.writeEndObject();
    }

    static void writeSchemaFields(JsonGenerator g, Schema s) throws IOException {
        g.writeStringField("type", s.type().getName());
        g.writeBooleanField("optional", s.isOptional());
        if (s.name() != null) {
            g.writeStringField("name", s.name());
        }
        if (s.version() != null) {
            g.writeNumberField("version", s.version());
        }
        if (s.doc() != null) {
            g.writeStringField("doc", s.doc());
        }
        if (s.parameters() != null && !s.parameters().isEmpty()) {
            g.writeObjectFieldStart("parameters");
            for (Map.Entry<String, String> e : new TreeMap<>(s.parameters()).entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
        }
        if (s.defaultValue() != null) {
            g.writeFieldName("default");
            writeValue(g, s, s.defaultValue());
        }
        switch (s.type()) {
            case STRUCT -> {
                g.writeArrayFieldStart("fields");
                for (Field f : s.fields()) {
                    g.writeStartObject();
                    g.writeStringField("field", f.name());
                    writeSchemaFields(g, f.schema());
                    g.writeEndObject();
                }
                g.writeEndArray();
            }
            case ARRAY -> {
                g.writeFieldName("items");
                writeSchema(g, s.valueSchema());
            }
            case MAP -> {
                g.writeFieldName("keys");
                writeSchema(g, s.keySchema());
                g.writeFieldName("values");
                writeSchema(g, s.valueSchema());
            }
            default -> {
            }
        }
    }

    // --- describe ---------------------------------------------------------------------------

    static <T> T await(KafkaFuture<T> f, long timeoutMs, String what) throws Exception {
        try {
            return f.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw fail(what + ": " + e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw fail(what + ": no answer within " + timeoutMs / 1000 + " s");
        }
    }

    static int describe(Args args, OutputStream out) throws Exception {
        long timeoutMs = args.number("--timeout", 60, 1) * 1000;
        try (Admin admin = Admin.create(clientProps(args, timeoutMs))) {
            DescribeClusterResult cluster = admin.describeCluster();
            String clusterId = await(cluster.clusterId(), timeoutMs, "describe cluster");
            Collection<Node> nodes = await(cluster.nodes(), timeoutMs, "describe cluster");
            List<String> names;
            if (args.get("--topic") != null) {
                names = args.topics();
            } else {
                names = new ArrayList<>(await(admin.listTopics(new ListTopicsOptions().listInternal(args.flag("--internal")))
                        .names(), timeoutMs, "list topics"));
            }
            names.sort(null);
            Map<String, TopicDescription> topics = await(admin.describeTopics(names).allTopicNames(), timeoutMs,
                    "describe topics " + names);
            List<ConfigResource> resources = new ArrayList<>();
            for (String n : names) {
                resources.add(new ConfigResource(ConfigResource.Type.TOPIC, n));
            }
            Map<ConfigResource, Config> configs = await(admin.describeConfigs(resources).all(), timeoutMs,
                    "describe topic configs");

            JsonGenerator g = generator(out);
            g.writeStartObject();
            g.writeStringField("cluster_id", clusterId);
            g.writeArrayFieldStart("brokers");
            for (Node n : nodes) {
                g.writeStartObject();
                g.writeNumberField("id", n.id());
                g.writeStringField("host", n.host());
                g.writeNumberField("port", n.port());
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeArrayFieldStart("topics");
            for (String n : names) {
                TopicDescription d = topics.get(n);
                g.writeStartObject();
                g.writeStringField("name", n);
                g.writeStringField("id", d.topicId().toString());
                g.writeBooleanField("internal", d.isInternal());
                g.writeNumberField("partitions", d.partitions().size());
                g.writeArrayFieldStart("partition_details");
                for (TopicPartitionInfo pi : d.partitions()) {
                    g.writeStartObject();
                    g.writeNumberField("partition", pi.partition());
                    if (pi.leader() == null) {
                        g.writeNullField("leader");
                    } else {
                        g.writeNumberField("leader", pi.leader().id());
                    }
                    g.writeArrayFieldStart("replicas");
                    for (Node r : pi.replicas()) {
                        g.writeNumber(r.id());
                    }
                    g.writeEndArray();
                    g.writeArrayFieldStart("isr");
                    for (Node r : pi.isr()) {
                        g.writeNumber(r.id());
                    }
                    g.writeEndArray();
                    g.writeEndObject();
                }
                g.writeEndArray();
                Config c = configs.get(new ConfigResource(ConfigResource.Type.TOPIC, n));
                Map<String, ConfigEntry> entries = new TreeMap<>();
                for (ConfigEntry e : c.entries()) {
                    entries.put(e.name(), e);
                }
                g.writeObjectFieldStart("configs");
                for (ConfigEntry e : entries.values()) {
                    g.writeStringField(e.name(), e.value());
                }
                g.writeEndObject();
                g.writeObjectFieldStart("overrides");
                for (ConfigEntry e : entries.values()) {
                    if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) {
                        g.writeStringField(e.name(), e.value());
                    }
                }
                g.writeEndObject();
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
            g.writeRaw('\n');
            g.flush();
            return 0;
        }
    }

    // --- produce, create-topic ----------------------------------------------------------------

    /** A JSON input field as bytes: null, a string's UTF-8, or any other JSON as compact text. */
    static byte[] inputBytes(JsonNode n) throws IOException {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isTextual()) {
            return n.textValue().getBytes(StandardCharsets.UTF_8);
        }
        return MAPPER.writeValueAsBytes(n);
    }

    static int produce(Args args, OutputStream out) throws Exception {
        String topic = args.required("--topic");
        long timeoutMs = args.number("--timeout", 60, 1) * 1000;
        String txId = args.get("--transactional-id");
        boolean abort = args.flag("--abort");
        if (abort && txId == null) {
            throw usage("produce: --abort needs --transactional-id");
        }
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int line = 0;
        for (String s; (s = in.readLine()) != null; ) {
            line++;
            if (s.isBlank()) {
                continue;
            }
            JsonNode n;
            try {
                n = MAPPER.readTree(s);
            } catch (IOException e) {
                throw usage("produce: stdin line " + line + " is not JSON: " + e.getMessage());
            }
            if (!n.isObject()) {
                throw usage("produce: stdin line " + line + " is not a JSON object");
            }
            RecordHeaders headers = new RecordHeaders();
            JsonNode h = n.get("headers");
            if (h != null && h.isObject()) {
                for (Map.Entry<String, JsonNode> e : h.properties()) {
                    headers.add(e.getKey(), inputBytes(e.getValue()));
                }
            }
            Integer partition = n.hasNonNull("partition") ? n.get("partition").asInt() : null;
            records.add(new ProducerRecord<>(topic, partition, null, inputBytes(n.get("key")),
                    inputBytes(n.get("value")), headers));
        }
        Properties p = clientProps(args, timeoutMs);
        p.remove(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeoutMs));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeoutMs, 31_000)));
        if (txId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txId);
        }
        p.putAll(args.pairs("--client-config"));
        JsonGenerator g = generator(out);
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (txId != null) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (ProducerRecord<byte[], byte[]> r : records) {
                sent.add(producer.send(r));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata m;
                try {
                    m = f.get();
                } catch (ExecutionException e) {
                    throw fail("produce to " + topic + ": " + e.getCause());
                }
                g.writeStartObject();
                g.writeStringField("topic", m.topic());
                g.writeNumberField("partition", m.partition());
                g.writeNumberField("offset", m.offset());
                g.writeEndObject();
                g.writeRaw('\n');
            }
            if (txId != null) {
                if (abort) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
            g.flush();
            System.err.println("kafka-check: produced " + records.size() + " records to " + topic
                    + (txId == null ? "" : abort ? " (transaction aborted)" : " (transaction committed)"));
            producer.close(Duration.ofMillis(timeoutMs));
            return 0;
        }
    }

    static int createTopic(Args args) throws Exception {
        long timeoutMs = args.number("--timeout", 60, 1) * 1000;
        int partitions = (int) args.number("--partitions", 1, 1);
        try (Admin admin = Admin.create(clientProps(args, timeoutMs))) {
            for (String topic : args.topics()) {
                NewTopic t = new NewTopic(topic, Optional.of(partitions), Optional.empty())
                        .configs(args.pairs("--config"));
                try {
                    admin.createTopics(List.of(t)).all().get(timeoutMs, TimeUnit.MILLISECONDS);
                    System.err.println("kafka-check: created topic " + topic + " (" + partitions + " partitions)");
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof TopicExistsException && args.flag("--if-not-exists")) {
                        continue;
                    }
                    throw fail("create topic " + topic + ": " + e.getCause());
                } catch (java.util.concurrent.TimeoutException e) {
                    throw fail("create topic " + topic + ": no answer within " + timeoutMs / 1000 + " s");
                }
            }
            return 0;
        }
    }
}
