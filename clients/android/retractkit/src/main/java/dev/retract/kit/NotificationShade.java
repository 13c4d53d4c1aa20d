package dev.retract.kit;

import java.util.List;

/**
 * The notifications showing, and the one way to take one away: on Android,
 * {@code NotificationManager.getActiveNotifications()} and
 * {@code NotificationManager.cancel(tag, id)} (the adapter in
 * {@code dev.retract.kit.android}); in tests, a list.
 */
public interface NotificationShade {
    /** The app's notifications showing now. */
    List<ShownNotification> active();

    /** Takes {@code notification} away (by its tag and id). */
    void cancel(ShownNotification notification);
}
