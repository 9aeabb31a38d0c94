package mesh.bench;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Records processed and alerts sent, and the time from the first record to the target one.
 *
 * <p>The stream thread is the only writer; the main thread watches the counts (volatile: one
 * ordered store a record, nothing next to the record's decoding) and reads the times once the
 * target is reached, which the latch orders after their writes.
 */
final class Progress {
    private final long target;
    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile long records;
    private volatile long alerts;
    private volatile Throwable failure;
    private long firstNanos;
    private long targetNanos;

    Progress(long target) {
        this.target = target;
    }

    /** One more input record: called at the start of its processing. */
    void recordSeen() {
        long seen = records + 1;
        if (seen == 1) {
            firstNanos = System.nanoTime();
        }
        if (seen == target) {
            targetNanos = System.nanoTime();
        }
        records = seen;
        if (seen == target) {
            finished.countDown();
        }
    }

    void alertSent() {
        alerts = alerts + 1;
    }

    /** The stream thread died: wake the main thread, which reports it. */
    void fail(Throwable cause) {
        failure = cause;
        finished.countDown();
    }

    /** True when the target was reached or the streams failed, waiting at most {@code millis}. */
    boolean await(long millis) throws InterruptedException {
        return finished.await(millis, TimeUnit.MILLISECONDS);
    }

    long records() {
        return records;
    }

    long alerts() {
        return alerts;
    }

    long target() {
        return target;
    }

    Throwable failure() {
        return failure;
    }

    /** First record to the target one; only meaningful once the target was reached. */
    double seconds() {
        return (targetNanos - firstNanos) / 1e9;
    }
}
