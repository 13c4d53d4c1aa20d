package dev.retract.kit.android;

import android.app.Notification;
import dev.retract.kit.Conversation;
import dev.retract.kit.Original;

/**
 * The app's hook into each notification the library posts for it, called
 * with its builder just before it is posted: the place for the app's own
 * content intent, people, shortcut, large icon or colour. What it sets wins:
 * the library has set the channel, small icon, words, style, extras and a
 * default content intent (the app's launcher activity, as Firebase's own
 * notifications open) before.
 *
 * <pre>{@code
 * NotificationStyler styler = new NotificationStyler() {
 *     public void styleConversation(Notification.Builder builder, Conversation conversation) {
 *         builder.setShortcutId(conversation.thread());   // a long-lived sharing shortcut: Android 11's conversation space
 *         builder.setContentIntent(openConversation(conversation.thread()));
 *     }
 * };
 * }</pre>
 */
public interface NotificationStyler {
    /** Styles nothing: the library's defaults. */
    NotificationStyler NONE = new NotificationStyler() {};

    /** How a conversation notification names the phone's own user (its {@code MessagingStyle} user): "You" unless the app says otherwise. */
    default CharSequence userName() {
        return "You";
    }

    /**
     * A message Retract sent for the app to show, posted as a notification of
     * its own (its tag, its conversation as its group, its data in its extras).
     */
    default void styleMessage(Notification.Builder builder, Original original) {}

    /**
     * A conversation notification: a new message's post, or a retraction's or
     * an edit's re-post without a message or with new words (then with
     * {@code setOnlyAlertOnce(true)}). The builder's style is the
     * {@code MessagingStyle} of {@code conversation}'s messages; the app may
     * set its own in its place, from the same model.
     */
    default void styleConversation(Notification.Builder builder, Conversation conversation) {}
}
