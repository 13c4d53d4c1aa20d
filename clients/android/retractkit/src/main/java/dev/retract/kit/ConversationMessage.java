package dev.retract.kit;

import java.util.Objects;

/**
 * One message of a conversation notification, as Android's
 * {@code Notification.MessagingStyle.Message} holds it: its words, who wrote
 * it and when; and the reference Retract knows it by, so that a retraction
 * or an edit of that message finds it.
 */
public final class ConversationMessage {
    private final String reference;
    private final String text;
    private final String sender;
    private final long timeMillis;

    /**
     * @param reference the message's reference (what a retraction names)
     * @param text what it says
     * @param sender who wrote it, as the notification names them; null for the phone's own user
     * @param timeMillis when it was sent, in milliseconds since 1970
     */
    public ConversationMessage(String reference, String text, String sender, long timeMillis) {
        this.reference = Objects.requireNonNull(reference, "reference");
        this.text = text == null ? "" : text;
        this.sender = sender;
        this.timeMillis = timeMillis;
    }

    public String reference() {
        return reference;
    }

    public String text() {
        return text;
    }

    /** Who wrote it; null for the phone's own user. */
    public String sender() {
        return sender;
    }

    public long timeMillis() {
        return timeMillis;
    }

    /** The same message with other words: an edit's. */
    public ConversationMessage withText(String text) {
        return new ConversationMessage(reference, text, sender, timeMillis);
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof ConversationMessage)) return false;
        ConversationMessage that = (ConversationMessage) other;
        return CanonicalText.same(reference, that.reference) && text.equals(that.text) && Objects.equals(sender, that.sender)
                && timeMillis == that.timeMillis;
    }

    @Override
    public int hashCode() {
        return Objects.hash(CanonicalText.key(reference), text, sender, timeMillis);
    }

    @Override
    public String toString() {
        return "ConversationMessage(" + reference + ": " + text + ")";
    }
}
