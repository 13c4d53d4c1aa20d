package dev.retract.kit;

/** Why the device feed could not be read; nothing was removed for it, and the cursor did not move. */
public final class FeedException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int status;
    private final String type;

    FeedException(int status, String type, String detail) {
        super(status > 0 ? "HTTP " + status + ": " + detail : detail);
        this.status = status;
        this.type = type;
    }

    /** The HTTP status, or 0 when no answer came (no network, the time ran out). */
    public int status() {
        return status;
    }

    /** The problem's {@code type} from the server, such as {@code https://retract.dev/problems/unauthorized}, or null. */
    public String type() {
        return type;
    }
}
