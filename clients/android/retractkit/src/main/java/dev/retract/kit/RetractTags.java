package dev.retract.kit;

/**
 * The tag an Android notification of a Retract original carries, so that a
 * retraction can find it by the reference alone: the reference itself, as on
 * an iPhone the notification's identifier is the reference (its collapse id).
 *
 * <p>Retract sends a Firebase-displayed original ({@code android.notification})
 * with this tag unless the sender gave a collapse id of its own, which then
 * becomes the tag so that a later notification replaces it; an app that
 * builds its notifications from data messages posts them with this tag
 * ({@link Original#tag()}).
 */
public final class RetractTags {
    private RetractTags() {}

    /** The tag of the notification of {@code reference}. */
    public static String forReference(String reference) {
        return reference;
    }
}
