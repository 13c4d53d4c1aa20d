package dev.retract.kit;

import java.util.ArrayList;
import java.util.List;

/**
 * A {@link NotificationShade} in memory, as Android's behaves: posting under
 * a tag and id already showing replaces that notification (and, as RetractKit's
 * in-memory center does, one listed under the same name), as the newest; an
 * edit changes a notification's words where it is. For tests, and for the
 * simulator's Android phones.
 */
public final class InMemoryShade implements NotificationShade {
    private final List<ShownNotification> showing = new ArrayList<>();

    public InMemoryShade() {}

    public InMemoryShade(List<ShownNotification> showing) {
        for (ShownNotification notification : showing) post(notification);
    }

    /** Shows {@code notification}, in place of one with the same tag and id. */
    public synchronized void post(ShownNotification notification) {
        showing.removeIf(shown -> sameSlot(shown, notification));
        showing.add(notification);
    }

    @Override
    public synchronized List<ShownNotification> active() {
        return new ArrayList<>(showing);
    }

    @Override
    public synchronized void cancel(ShownNotification notification) {
        showing.removeIf(shown -> sameSlot(shown, notification));
    }

    /**
     * Changes the words of the notification in {@code notification}'s slot,
     * where it is: Android sorts the shade by each notification's time, which
     * a re-post through {@code Notification.Builder.recoverBuilder} keeps.
     */
    @Override
    public synchronized void edit(ShownNotification notification, String title, String text) {
        showing.replaceAll(shown -> sameSlot(shown, notification) ? shown.edited(title, text) : shown);
    }

    private static boolean sameSlot(ShownNotification one, ShownNotification other) {
        boolean sameTagAndId = one.id() == other.id() && java.util.Objects.equals(one.tag(), other.tag());
        return sameTagAndId || CanonicalText.same(one.name(), other.name());
    }
}
