package mesh.bench;

import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * How long the stores took to come back from their changelogs, and how many records that read:
 * the peer of the runtime's restore in the state-at-scale scenario. Restores of several
 * partitions overlap, so the time runs from the first start to the last end.
 */
final class RestoreTimer implements StateRestoreListener {
    private final AtomicLong firstStart = new AtomicLong(0);
    private final AtomicLong lastEnd = new AtomicLong(0);
    private final AtomicLong restored = new AtomicLong(0);

    @Override
    public void onRestoreStart(TopicPartition partition, String store, long start, long end) {
        firstStart.compareAndSet(0, System.nanoTime());
    }

    @Override
    public void onBatchRestored(TopicPartition partition, String store, long end, long count) {
        // counted once per partition at its end
    }

    @Override
    public void onRestoreEnd(TopicPartition partition, String store, long total) {
        restored.addAndGet(total);
        lastEnd.set(System.nanoTime());
    }

    long restored() {
        return restored.get();
    }

    double seconds() {
        long start = firstStart.get();
        return start == 0 ? 0.0 : (lastEnd.get() - start) / 1e9;
    }
}
