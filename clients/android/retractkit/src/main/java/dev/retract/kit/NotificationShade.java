package dev.retract.kit;

import java.util.List;

/**
 * The notifications showing, the way to take one away and the way to change
 * its words: on Android, {@code NotificationManager.getActiveNotifications()},
 * {@code NotificationManager.cancel(tag, id)} and {@code notify(tag, id, …)}
 * (the adapter in {@code dev.retract.kit.android}); in tests, a list.
 */
public interface NotificationShade {
    /** The app's notifications showing now. */
    List<ShownNotification> active();

    /** Takes {@code notification} away (by its tag and id). */
    void cancel(ShownNotification notification);

    /**
     * Re-posts {@code notification} in place with other words, silently: the
     * same tag, id, channel, group and extras. Nothing when it is no longer
     * showing: an edit never brings back what the user dismissed.
     *
     * @param title the new title; null keeps the one shown
     * @param text the new text
     */
    void edit(ShownNotification notification, String title, String text);

    /**
     * Posts {@code conversation}'s notification under its tag (id 0), in
     * place of the one showing: a conversation notification
     * ({@code MessagingStyle}) holding its messages.
     *
     * @param onlyAlertOnce true to change it without a sound, vibration or
     *     heads-up when it is showing already ({@code setOnlyAlertOnce}): what a
     *     retraction or an edit re-posts; false for a new message, which alerts
     */
    void postConversation(Conversation conversation, boolean onlyAlertOnce);
}
