package mesh.bench;

/** A bad argument or input file: reported as one line, without a stack trace. */
final class UsageException extends RuntimeException {
    UsageException(String message) {
        super(message);
    }
}
