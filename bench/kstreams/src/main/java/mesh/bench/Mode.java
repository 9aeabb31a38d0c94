package mesh.bench;

import java.util.Arrays;
import java.util.stream.Collectors;

/** What the peer computes: one of the detectors' rules, written the Kafka Streams way. */
enum Mode {
    /** detectors/large_amount: stateless, an amount above its currency's threshold. */
    LARGE_AMOUNT("large_amount", false),
    /** The cheapest windowed count: 60 s tumbling windows (faust_tumbling's peer). */
    TUMBLING_COUNT("tumbling_count", true),
    /** detectors/velocity's windows: 60 s every 5 s, as the runtime counts them. */
    HOPPING_COUNT("hopping_count", true);

    final String id;
    final boolean windowed;

    Mode(String id, boolean windowed) {
        this.id = id;
        this.windowed = windowed;
    }

    static Mode parse(String id) {
        for (Mode mode : values()) {
            if (mode.id.equals(id)) {
                return mode;
            }
        }
        String known = Arrays.stream(values()).map(m -> m.id).collect(Collectors.joining(", "));
        throw new UsageException("unknown mode " + id + "; known: " + known);
    }
}
