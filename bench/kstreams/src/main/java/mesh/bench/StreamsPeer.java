package mesh.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;

/**
 * The Kafka Streams peer of the detectors benchmark: one rule over a topic's first COUNT records.
 *
 * <p>{@code StreamsPeer MODE BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC COUNT SCHEMA_FILE [THRESHOLDS_FILE]}
 *
 * <p>Prints one JSON line: records, seconds from the first record to the COUNT-th, alerts, mode,
 * close_seconds (the close that flushes the alerts and commits), rss_mb (peak resident memory)
 * and version (Kafka Streams'). Exits 2 when records stop coming (none at all, or fewer than
 * COUNT) for {@link #IDLE_TIMEOUT_MS}, 1 when the streams fail.
 */
public final class StreamsPeer {
    static final long IDLE_TIMEOUT_MS = 120_000;
    static final long CLOSE_TIMEOUT_MS = 60_000;

    private StreamsPeer() {}

    public static void main(String[] args) {
        int status;
        try {
            status = run(args);
        } catch (UsageException e) {
            System.err.println("error: " + e.getMessage());
            status = 2;
        } catch (IOException e) {
            System.err.println("error: " + e);
            status = 1;
        } catch (InterruptedException e) {
            System.err.println("error: interrupted");
            status = 1;
        }
        System.exit(status); // Kafka's and RocksDB's threads must not keep the JVM up
    }

    static int run(String[] args) throws IOException, InterruptedException {
        if (args.length < 6 || args.length > 7) {
            throw new UsageException(
                    "usage: StreamsPeer MODE BOOTSTRAP INPUT_TOPIC OUTPUT_TOPIC COUNT SCHEMA_FILE"
                            + " [THRESHOLDS_FILE]");
        }
        Mode mode = Mode.parse(args[0]);
        long count = parseCount(args[4]);
        Schema schema = TransactionDecoder.readSchema(Path.of(args[5]));
        Map<String, Double> thresholds = Map.of();
        if (mode == Mode.LARGE_AMOUNT) {
            if (args.length < 7) {
                throw new UsageException("large_amount needs the THRESHOLDS_FILE argument");
            }
            thresholds = Thresholds.read(Path.of(args[6]));
        }
        Path stateDir = temporaryStateDir();
        Progress progress = new Progress(count);
        KafkaStreams streams =
                new KafkaStreams(
                        Topologies.build(mode, args[2], args[3], schema, thresholds, progress),
                        config(mode, args[1], stateDir));
        RestoreTimer restores = new RestoreTimer();
        streams.setGlobalStateRestoreListener(restores);
        streams.setUncaughtExceptionHandler(
                error -> {
                    progress.fail(error);
                    return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
                });
        streams.start();
        String stuck = waitForTarget(progress);
        if (progress.failure() != null || stuck != null) {
            streams.close(Duration.ofSeconds(10));
            System.err.println("error: " + (stuck != null ? stuck : describe(progress.failure())));
            return stuck != null ? 2 : 1;
        }
        long closing = System.nanoTime();
        boolean closed = streams.close(Duration.ofMillis(CLOSE_TIMEOUT_MS));
        double closeSeconds = (System.nanoTime() - closing) / 1e9;
        if (!closed) {
            System.err.println(
                    "error: Kafka Streams did not close within " + CLOSE_TIMEOUT_MS / 1000
                            + " s: its alerts may not all be written");
            return 1;
        }
        System.out.println(
                resultLine(mode, progress, closeSeconds, PeakMemory.megabytes(), restores));
        return 0;
    }

    /**
     * Kafka Streams' defaults, except where a comment says why; the defaults this benchmark
     * depends on are set anyway, so the comparison's terms are written down here.
     */
    static Properties config(Mode mode, String bootstrap, Path stateDir) {
        Properties p = new Properties();
        // A new application per run: its own consumer group (nothing committed, so it reads the
        // topic from the start), its own changelog topics and its own empty state. The
        // state-at-scale scenario names one (-Dmesh.bench.applicationId) to run it twice: the
        // second run restores the first one's state from its changelog into an empty folder.
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        p.put(
                StreamsConfig.APPLICATION_ID_CONFIG,
                System.getProperty(
                        "mesh.bench.applicationId", "bench-kstreams-" + mode.id + "-" + suffix));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // A temporary folder, deleted at exit: a run's RocksDB stores are of no use afterwards.
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        // The default, stated: one runtime instance is one Python thread, so the peer gets one
        // stream thread for all the topic's partitions.
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // The default, stated: the runtime's guarantee too (output acknowledged, then committed).
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        // Kafka Streams' default, stated: the topic is read from its start.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // The Kafka 4 producer's defaults, stated: the runtime's producer uses the same.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "all");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG), true);
        if (mode.windowed) {
            // Not the default (10 MB): the record cache holds a window's count back until it is
            // evicted or committed (every 30 s), merged with its later updates, so alerts could
            // come late and fewer than one per record that reaches the limit. The runtime alerts
            // on each such record as it is processed; without the cache, so does the peer. Nor
            // does the cache buy much here: measured on the feed, hopping ran 12-18 % slower with
            // it (a record touches 12 windows, which keeps it evicting), tumbling 0-10 % faster,
            // and either one's peak RSS was 150-180 MB higher.
            p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        }
        return p;
    }

    /** Null once COUNT records are processed (or the streams failed); else why it gave up. */
    private static String waitForTarget(Progress progress) throws InterruptedException {
        long seen = 0;
        long lastChange = System.nanoTime();
        while (!progress.await(1_000)) {
            long now = System.nanoTime();
            if (progress.records() != seen) {
                seen = progress.records();
                lastChange = now;
            } else if (now - lastChange > IDLE_TIMEOUT_MS * 1_000_000) {
                String waited = IDLE_TIMEOUT_MS / 1000 + " s";
                return seen == 0
                        ? "no record arrived within " + waited
                        : "only " + seen + " of " + progress.target() + " records arrived ("
                                + "nothing more for " + waited + ")";
            }
        }
        return null;
    }

    static String resultLine(
            Mode mode, Progress progress, double closeSeconds, double rssMb, RestoreTimer restores) {
        return String.format(
                Locale.ROOT,
                "{\"records\": %d, \"seconds\": %.6f, \"alerts\": %d, \"mode\": \"%s\","
                        + " \"close_seconds\": %.6f, \"rss_mb\": %.1f, \"version\": \"%s\","
                        + " \"restored\": %d, \"restore_seconds\": %.6f}",
                progress.target(), // the time is to the COUNT-th record, whatever came after
                progress.seconds(),
                progress.alerts(),
                mode.id,
                closeSeconds,
                rssMb,
                AppInfoParser.getVersion(),
                restores.restored(),
                restores.seconds());
    }

    private static long parseCount(String text) {
        try {
            long count = Long.parseLong(text);
            if (count > 0) {
                return count;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("COUNT must be a positive whole number, got " + text);
    }

    /** The streams' first error, with its root cause: what a user needs to see. */
    private static String describe(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == error ? error.toString() : error + " (cause: " + root + ")";
    }

    /** A state folder removed when the JVM exits, however it exits short of being killed. */
    private static Path temporaryStateDir() throws IOException {
        Path dir = Files.createTempDirectory("kstreams-peer-");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir)));
        return dir;
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            System.err.println("warning: could not delete " + dir + ": " + e);
        }
    }
}
