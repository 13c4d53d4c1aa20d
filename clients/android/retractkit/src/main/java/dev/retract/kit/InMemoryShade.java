package dev.retract.kit;

import java.util.ArrayList;
import java.util.List;

/**
 * A {@link NotificationShade} in memory, as Android's behaves: posting under
 * a tag and id already showing replaces that notification (and, as RetractKit's
 * in-memory center does, one listed under the same name), as the newest; an
 * edit changes a notification's words where it is. It counts the posts that
 * alert (sound, vibration, heads-up), as Android decides: every post but
 * one with {@code setOnlyAlertOnce} of a notification already showing, and
 * no edit. For tests, and for the simulator's Android phones.
 */
public final class InMemoryShade implements NotificationShade {
    private final List<ShownNotification> showing = new ArrayList<>();
    private int alerts;

    public InMemoryShade() {}

    /** A shade showing {@code showing} already, which alerted before it counts. */
    public InMemoryShade(List<ShownNotification> showing) {
        for (ShownNotification notification : showing) place(notification);
    }

    /** Shows {@code notification}, in place of one with the same tag and id, and alerts. */
    public synchronized void post(ShownNotification notification) {
        place(notification);
        alerts++;
    }

    private void place(ShownNotification notification) {
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
     * Silently: the re-post alerts only once.
     */
    @Override
    public synchronized void edit(ShownNotification notification, String title, String text) {
        showing.replaceAll(shown -> sameSlot(shown, notification) ? shown.edited(title, text) : shown);
    }

    /**
     * Shows {@code conversation}'s notification: a re-post that alerts only
     * once stays in its place (its time kept, as a re-post keeps
     * {@code setWhen}); a new message, or one not showing, comes as the newest.
     */
    @Override
    public synchronized void postConversation(Conversation conversation, boolean onlyAlertOnce) {
        ShownNotification posted = ShownNotification.ofConversation(conversation, null, null);
        boolean shown = false;
        for (int index = 0; index < showing.size(); index++) {
            if (sameSlot(showing.get(index), posted)) {
                shown = true;
                if (onlyAlertOnce) showing.set(index, showing.get(index).holding(conversation));
            }
        }
        if (!shown || !onlyAlertOnce) place(posted);
        if (!onlyAlertOnce || !shown) alerts++;
    }

    /** How many posts alerted so far. */
    public synchronized int alerts() {
        return alerts;
    }

    private static boolean sameSlot(ShownNotification one, ShownNotification other) {
        boolean sameTagAndId = one.id() == other.id() && java.util.Objects.equals(one.tag(), other.tag());
        return sameTagAndId || CanonicalText.same(one.name(), other.name());
    }
}
