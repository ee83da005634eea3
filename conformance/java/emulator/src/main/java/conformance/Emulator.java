package conformance;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One running {@code scylla-emulator} process (the path in the system property
 * {@code conformance.emulator}, set by conformance/java/run).
 *
 * <p>Node 1 listens at the given address on a free port, node i at the address i - 1 above it.
 * The process prints {@code ready HOST:PORT} on stdout once every node accepts connections,
 * then answers console commands on stdin ({@code add-node}, {@code stats}, ...) with a line
 * {@code ok [...]} or {@code error: ...}. Its stderr (with the statement log: every statement
 * a client sent and every error answered) goes to {@code <conformance.logs>/<name>.log}.
 * {@link #close()} kills it.
 */
public final class Emulator implements AutoCloseable {
    private static final String END = "\u0000end";

    private final Process process;
    private final Writer stdin;
    private final BlockingQueue<String> lines;
    private final String host;
    private final int port;

    private Emulator(Process process, String host, int port, Writer stdin, BlockingQueue<String> lines) {
        this.process = process;
        this.lines = lines;
        this.host = host;
        this.port = port;
        this.stdin = stdin;
    }

    /**
     * Starts an emulator of {@code nodes} nodes with node 1 at {@code address} and waits for
     * its {@code ready} line. {@code generationDelay} is the time between a node joining and
     * the start of its CDC generation.
     */
    public static Emulator start(String name, String address, int nodes, Duration generationDelay)
            throws IOException, InterruptedException {
        String binary = System.getProperty("conformance.emulator", System.getenv("SCYLLA_EMULATOR"));
        if (binary == null || binary.isEmpty() || binary.startsWith("${")) {
            throw new IllegalStateException(
                    "the system property conformance.emulator (the scylla-emulator binary) is not set;"
                            + " run conformance/java/run");
        }
        List<String> command = new ArrayList<>(List.of(
                binary,
                "--nodes", Integer.toString(nodes),
                "--address", address,
                "--port", "0",
                "--generation-delay",
                String.format(Locale.ROOT, "%.3f", generationDelay.toMillis() / 1000.0)));
        ProcessBuilder builder = new ProcessBuilder(command);
        String logs = System.getProperty("conformance.logs");
        if (logs != null && !logs.isEmpty() && !logs.startsWith("${")) {
            Path dir = Path.of(logs);
            Files.createDirectories(dir);
            builder.redirectError(dir.resolve(name + ".log").toFile());
            builder.environment().put("RUST_LOG", "warn,scylla_emulator::statements=debug");
        } else {
            builder.redirectError(ProcessBuilder.Redirect.INHERIT);
            builder.environment().put("RUST_LOG", "warn");
        }
        Process process = builder.start();
        Writer stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        BlockingQueue<String> queue = new LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader out = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    queue.add(line);
                }
            } catch (IOException e) {
                // The process is gone: END below tells the waiting side.
            }
            queue.add(END);
        }, "scylla-emulator stdout");
        reader.setDaemon(true);
        reader.start();
        String ready;
        try {
            ready = next(queue, process, Duration.ofSeconds(60));
        } catch (RuntimeException | InterruptedException e) {
            process.destroyForcibly();
            throw e;
        }
        if (!ready.startsWith("ready ")) {
            process.destroyForcibly();
            throw new IllegalStateException("expected `ready HOST:PORT` from scylla-emulator, got " + ready);
        }
        String endpoint = ready.substring("ready ".length()).trim();
        int colon = endpoint.lastIndexOf(':');
        Emulator emulator = new Emulator(process, endpoint.substring(0, colon),
                Integer.parseInt(endpoint.substring(colon + 1)), stdin, queue);
        Runtime.getRuntime().addShutdownHook(new Thread(process::destroyForcibly));
        return emulator;
    }

    private static String next(BlockingQueue<String> queue, Process process, Duration timeout)
            throws InterruptedException {
        String line = queue.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        if (line == null) {
            throw new IllegalStateException("no answer from scylla-emulator within " + timeout);
        }
        if (line.equals(END)) {
            throw new IllegalStateException("scylla-emulator exited"
                    + (process.isAlive() ? "" : " with status " + process.exitValue()));
        }
        return line;
    }

    /** Address of node 1. */
    public String host() {
        return host;
    }

    /** CQL port of every node. */
    public int port() {
        return port;
    }

    /** Node 1's CQL endpoint. */
    public InetSocketAddress contactPoint() {
        return new InetSocketAddress(host, port);
    }

    /** Address of node {@code i} (1-based). */
    public InetAddress nodeAddress(int i) {
        try {
            byte[] ip = InetAddress.getByName(host).getAddress();
            ip[3] = (byte) ((ip[3] & 0xff) + i - 1);
            return InetAddress.getByAddress(ip);
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Runs one console command; returns what follows {@code ok} on its reply line (empty for a
     * bare {@code ok}). Lines before the reply (rows of a {@code cql} command, {@code stats})
     * are returned first, one per element, then the reply.
     */
    public synchronized List<String> command(String line) throws IOException, InterruptedException {
        stdin.write(line + "\n");
        stdin.flush();
        List<String> out = new ArrayList<>();
        while (true) {
            String reply = next(lines, process, Duration.ofSeconds(60));
            if (reply.equals("ok") || reply.startsWith("ok ")) {
                out.add(reply.length() > 2 ? reply.substring(3) : "");
                return out;
            }
            if (reply.startsWith("error:")) {
                throw new IllegalStateException(line + ": " + reply);
            }
            out.add(reply);
        }
    }

    /**
     * The client connections open per {@code "node/shard"}, from the console's
     * {@code connections [codec]}: all of them, or with codec "lz4" or "snappy" only those
     * that negotiated that frame compression.
     */
    public java.util.Map<String, Integer> connections(String codec) throws IOException, InterruptedException {
        List<String> reply = command(codec == null ? "connections" : "connections " + codec);
        java.util.Map<String, Integer> out = new java.util.TreeMap<>();
        for (String entry : reply.get(reply.size() - 1).trim().split("\\s+")) {
            if (!entry.isEmpty()) {
                String[] placeCount = entry.split("=");
                out.put(placeCount[0], Integer.parseInt(placeCount[1]));
            }
        }
        return out;
    }

    /** {@link #connections} summed per node. */
    public java.util.Map<Integer, Integer> connectionsPerNode(String codec) throws IOException, InterruptedException {
        java.util.Map<Integer, Integer> out = new java.util.TreeMap<>();
        connections(codec).forEach((place, n) -> out.merge(Integer.parseInt(place.split("/")[0]), n, Integer::sum));
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }
}
