package mesh.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * detectors/large_amount/thresholds.yaml, read by hand.
 *
 * <p>The file is flat {@code CODE: number} lines and comments; a YAML library would be one more
 * dependency for that. Anything else in it is refused rather than guessed at, so a richer file
 * cannot silently give the peer a different rule from the detector's.
 */
final class Thresholds {
    private Thresholds() {}

    static Map<String, Double> read(Path file) throws IOException {
        return parse(Files.readAllLines(file), file.toString());
    }

    static Map<String, Double> parse(List<String> lines, String source) {
        Map<String, Double> thresholds = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = stripComment(lines.get(i)).strip();
            if (line.isEmpty()) {
                continue;
            }
            int colon = line.indexOf(':');
            String code = colon < 0 ? "" : line.substring(0, colon).strip();
            String limit = colon < 0 ? "" : line.substring(colon + 1).strip();
            try {
                if (code.isEmpty()) {
                    throw new NumberFormatException();
                }
                thresholds.put(code, Double.parseDouble(limit));
            } catch (NumberFormatException e) {
                throw new UsageException(
                        source + " line " + (i + 1) + ": expected CODE: number, got " + line);
            }
        }
        if (thresholds.isEmpty()) {
            throw new UsageException(source + " holds no CODE: number line");
        }
        return thresholds;
    }

    private static String stripComment(String line) {
        int hash = line.indexOf('#');
        return hash < 0 ? line : line.substring(0, hash);
    }
}
