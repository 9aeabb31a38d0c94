package mesh.bench;

import java.time.Duration;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/** The three topologies, in the DSL a Kafka Streams user would write for these rules. */
final class Topologies {
    /** detectors/velocity/detector.py: COUNT, WINDOW_MS, HOP_MS, and its grace (one window). */
    static final long VELOCITY_COUNT = 5;
    static final Duration WINDOW = Duration.ofSeconds(60);
    static final Duration HOP = Duration.ofSeconds(5);
    static final Duration GRACE = WINDOW;

    private Topologies() {}

    static Topology build(
            Mode mode,
            String input,
            String output,
            Schema schema,
            Map<String, Double> thresholds,
            Progress progress) {
        return switch (mode) {
            case LARGE_AMOUNT -> largeAmount(input, output, schema, thresholds, progress);
            case TUMBLING_COUNT -> windowCount(
                    TimeWindows.ofSizeAndGrace(WINDOW, GRACE), input, output, schema, progress);
            case HOPPING_COUNT -> windowCount(
                    TimeWindows.ofSizeAndGrace(WINDOW, GRACE).advanceBy(HOP),
                    input, output, schema, progress);
        };
    }

    private static Topology largeAmount(
            String input,
            String output,
            Schema schema,
            Map<String, Double> thresholds,
            Progress progress) {
        LargeAmountRule rule = new LargeAmountRule(thresholds);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .peek((customer, message) -> progress.recordSeen())
                .processValues(DecodeTransactions.supplier(schema))
                .mapValues(rule::alertFor)
                .filter((customer, alert) -> alert != null)
                .peek((customer, alert) -> progress.alertSent())
                .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        return builder.build();
    }

    /**
     * Transactions per customer (the input's key already: no repartition) and window, in the
     * default RocksDB window store; an alert when a window's count reaches VELOCITY_COUNT.
     */
    private static Topology windowCount(
            TimeWindows windows, String input, String output, Schema schema, Progress progress) {
        StreamsBuilder builder = new StreamsBuilder();
        Consumed<byte[], byte[]> atEventTime =
                Consumed.with(Serdes.ByteArray(), Serdes.ByteArray())
                        .withTimestampExtractor(new EventTimeExtractor(schema));
        builder.stream(input, atEventTime)
                .peek((customer, message) -> progress.recordSeen())
                .groupByKey(Grouped.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .windowedBy(windows)
                .count()
                .toStream()
                .process(() -> new WindowAlerts(VELOCITY_COUNT, progress))
                .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        return builder.build();
    }
}
