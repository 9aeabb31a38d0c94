package mesh.bench;

import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * Window count updates to alerts: one alert per input record that brings a window to the limit.
 *
 * <p>With hopping windows one input record updates every window containing it (12 of 60 s every
 * 5 s), each update arriving here in turn while that record is processed. The runtime's velocity
 * detector raises one alert for such a record, not one per window, so only the first update at
 * or above the limit from a given input record (topic, partition, offset) becomes an alert.
 */
final class WindowAlerts implements Processor<Windowed<byte[]>, Long, byte[], byte[]> {
    private final long limit;
    private final Progress progress;
    private ProcessorContext<byte[], byte[]> context;
    private int lastPartition = -1;
    private long lastOffset = -1;
    private String lastTopic;

    WindowAlerts(long limit, Progress progress) {
        this.limit = limit;
        this.progress = progress;
    }

    @Override
    public void init(ProcessorContext<byte[], byte[]> context) {
        this.context = context;
    }

    @Override
    public void process(Record<Windowed<byte[]>, Long> update) {
        Long count = update.value();
        if (count == null || count < limit || alreadyAlerted()) {
            return;
        }
        Windowed<byte[]> window = update.key();
        byte[] customer = window.key();
        byte[] alert =
                Alerts.velocity(customer, count, window.window().start(), window.window().end());
        context.forward(new Record<>(customer, alert, update.timestamp()));
        progress.alertSent();
    }

    /** True if this input record has already alerted; remembers it otherwise. */
    private boolean alreadyAlerted() {
        RecordMetadata source = context.recordMetadata().orElse(null);
        if (source == null) {
            return false;
        }
        if (source.offset() == lastOffset
                && source.partition() == lastPartition
                && source.topic().equals(lastTopic)) {
            return true;
        }
        lastTopic = source.topic();
        lastPartition = source.partition();
        lastOffset = source.offset();
        return false;
    }
}
