package dev.retract.kit;

import java.util.ArrayList;

/**
 * Posts an app's conversation notifications ({@link Conversation}). Each
 * notification holds what it shows (the adapter keeps the conversation in
 * its extras, {@link Conversation#EXTRA_CONVERSATION}), so that a retraction
 * handled by a later process, or after the app's storage was cleared, finds
 * every message it holds: nothing else is kept. Give the same instance to the
 * {@link RetractClient} (it serializes a retraction's or an edit's re-post
 * with a new message's post, which may run on another thread: WorkManager's,
 * FCM's).
 *
 * <pre>{@code
 * Conversations conversations = new Conversations();
 * RetractClient client = new RetractClient(tombstones, conversations);
 * // a message Retract sent for the app to show (MessageOutcome.Kind.ORIGINAL), with its conversation:
 * conversations.post(outcome.original(), System.currentTimeMillis(), shade);
 * }</pre>
 */
public final class Conversations {
    public Conversations() {}

    /**
     * Shows {@code message} in the conversation {@code thread} of
     * {@code account}, as its newest message, alerting as a new message does:
     * added to the conversation's notification while it shows, or a new one
     * when it does not (the user dismissed it: its old messages do not come
     * back).
     *
     * @param title the conversation's title (a group's name), or null to keep the one it shows
     * @return the conversation as it is now shown
     */
    public synchronized Conversation post(String account, String thread, String title, boolean group, ConversationMessage message,
            NotificationShade shade) {
        Conversation shown = showing(RetractTags.forConversation(thread, account), shade);
        Conversation next = (shown != null ? shown : new Conversation(account, thread, title, group, new ArrayList<>())).adding(message);
        if (title != null) next = new Conversation(account, thread, title, group, next.messages());
        shade.postConversation(next, false);
        return next;
    }

    /**
     * Shows an original Retract sent for the app to show ({@link MessageOutcome.Kind#ORIGINAL})
     * in its conversation: its body as the message's words, its title as who
     * wrote it. An original without a conversation ({@code pushNotificationThreadId})
     * is not for a conversation notification: null, and nothing is shown.
     */
    public Conversation post(Original original, long timeMillis, NotificationShade shade) {
        if (original.thread() == null) return null;
        return post(original.account(), original.thread(), null, false,
                new ConversationMessage(original.reference(), original.body(), original.title(), timeMillis), shade);
    }

    /** The conversation showing under {@code tag}, or null when none does. */
    private static Conversation showing(String tag, NotificationShade shade) {
        for (ShownNotification notification : shade.active()) {
            if (notification.conversation() != null && CanonicalText.same(notification.tag(), tag)) return notification.conversation();
        }
        return null;
    }
}
