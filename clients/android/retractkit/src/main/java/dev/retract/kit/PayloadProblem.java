package dev.retract.kit;

import java.util.Objects;

/**
 * A value of a push that could not be read and was left out; the rest of the
 * push still counts. {@link #key()} is a path into the push such as
 * {@code notificationCustomData.pushNotificationReferenceIds[2]}. The
 * descriptions are RetractKit's (Swift) word for word, but for the JSON
 * parser's own reason inside "not valid JSON (…)".
 */
public final class PayloadProblem {
    private final String key;
    private final String description;

    private PayloadProblem(String key, String description) {
        this.key = key;
        this.description = description;
    }

    static PayloadProblem invalidJson(String key, String reason) {
        return new PayloadProblem(key, key + ": not valid JSON (" + reason + ")");
    }

    static PayloadProblem wrongType(String key, String expected, String found) {
        return new PayloadProblem(key, key + ": expected " + expected + ", found " + found);
    }

    static PayloadProblem invalidValue(String key, String reason) {
        return new PayloadProblem(key, key + ": " + reason);
    }

    static PayloadProblem conflictingKeys(String key, String otherKey) {
        return new PayloadProblem(key, key + " and " + otherKey + " are both present with different values");
    }

    /** The path of the value the problem is at (for two flags that disagree, the first). */
    public String key() {
        return key;
    }

    /** What is wrong, starting with the key. */
    public String description() {
        return description;
    }

    @Override
    public String toString() {
        return description;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PayloadProblem && ((PayloadProblem) other).description.equals(description);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, description);
    }
}
