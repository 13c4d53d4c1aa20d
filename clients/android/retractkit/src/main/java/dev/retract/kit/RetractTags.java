package dev.retract.kit;

/**
 * The tag an Android notification of a Retract original carries, so that a
 * retraction can find it by the reference alone: the reference itself, as on
 * an iPhone the notification's identifier is the reference (its collapse id).
 * Of an account (where one app on a phone holds several), the account,
 * {@code /}, then the reference, with {@code %} and {@code /} in the account
 * written {@code %25} and {@code %2F}: two accounts' message 233 get two tags.
 * RetractKit (Swift) writes the same ({@code AccountScope}).
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

    /** The tag of the notification of {@code reference} of {@code account} (null: the app's only account). */
    public static String forReference(String reference, String account) {
        return scoped(reference, account);
    }

    /** The group key of conversation {@code thread} of {@code account}: the thread itself without an account. */
    public static String forThread(String thread, String account) {
        return scoped(thread, account);
    }

    /**
     * The tag of the conversation notification of {@code thread} of
     * {@code account} ({@link Conversation}): {@code conversation:} and the
     * thread's group key (a message's reference should not start so).
     */
    public static String forConversation(String thread, String account) {
        return "conversation:" + scoped(thread, account);
    }

    /** {@code value} within {@code account}, as the tags and group keys write it. */
    static String scoped(String value, String account) {
        if (account == null) return value;
        StringBuilder scoped = new StringBuilder();
        account.codePoints().forEach(point -> {
            if (point == '%') {
                scoped.append("%25");
            } else if (point == '/') {
                scoped.append("%2F");
            } else {
                scoped.appendCodePoint(point);
            }
        });
        return scoped.append('/').append(value).toString();
    }
}
