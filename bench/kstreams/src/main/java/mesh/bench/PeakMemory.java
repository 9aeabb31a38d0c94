package mesh.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The process's peak resident memory (VmHWM), as bench/drain.py reports the runtime's.
 *
 * <p>Resident, not heap: it counts RocksDB's native memory and the JVM's own, which a heap figure
 * would leave out.
 */
final class PeakMemory {
    private PeakMemory() {}

    /** MiB, or -1 where /proc/self/status is not there to read (not Linux). */
    static double megabytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // no figure rather than no result
        }
        return -1;
    }
}
