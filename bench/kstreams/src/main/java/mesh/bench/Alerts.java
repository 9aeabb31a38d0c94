package mesh.bench;

import java.nio.charset.StandardCharsets;

/**
 * The alerts' values: a few fields as JSON bytes.
 *
 * <p>Smaller than the runtime's alerts (an Avro record with a reason and evidence): the peer
 * writes what a minimal Kafka Streams detector would, so the comparison does not rest on them.
 */
final class Alerts {
    private Alerts() {}

    static byte[] largeAmount(String customer, double amount, String currency, double ratio) {
        return ("{\"customer\": " + quoted(customer)
                        + ", \"amount\": " + amount
                        + ", \"currency\": " + quoted(currency)
                        + ", \"ratio\": " + ratio + "}")
                .getBytes(StandardCharsets.UTF_8);
    }

    static byte[] velocity(byte[] customer, long count, long windowStart, long windowEnd) {
        return ("{\"customer\": " + quoted(new String(customer, StandardCharsets.UTF_8))
                        + ", \"count\": " + count
                        + ", \"window_start\": " + windowStart
                        + ", \"window_end\": " + windowEnd + "}")
                .getBytes(StandardCharsets.UTF_8);
    }

    /** A JSON string; ids and codes are plain ASCII, but a quote must not break the value. */
    static String quoted(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
