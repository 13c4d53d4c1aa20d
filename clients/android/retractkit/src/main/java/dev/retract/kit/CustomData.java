package dev.retract.kit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Retract's custom data, as read from a push: the same fields as RetractKit's
 * {@code NotificationCustomData}. References are kept in their string form
 * ({@code 233} and {@code "233"} are the same reference).
 */
public final class CustomData {
    String referenceId;
    final List<String> referenceIds = new ArrayList<>();
    boolean mustRemove;
    String threadId;
    final List<String> threadIds = new ArrayList<>();
    boolean moreInFeed;
    NotificationEdit edit;
    String account;
    Integer badge;

    CustomData() {}

    /** The single reference ({@code pushNotificationReferenceId}), or null. */
    public String referenceId() {
        return referenceId;
    }

    /** A batch of references ({@code pushNotificationReferenceIds}). */
    public List<String> referenceIds() {
        return Collections.unmodifiableList(referenceIds);
    }

    /** The removal flag ({@code isReferredNotificationMustRemoved}). */
    public boolean mustRemove() {
        return mustRemove;
    }

    /** An original's conversation ({@code pushNotificationThreadId}), or null. */
    public String threadId() {
        return threadId;
    }

    /** The conversations a retraction removes every notification of ({@code pushNotificationThreadIds}). */
    public List<String> threadIds() {
        return Collections.unmodifiableList(threadIds);
    }

    /** The rest of what to remove is in the device feed ({@code pushNotificationMoreInFeed}). */
    public boolean moreInFeed() {
        return moreInFeed;
    }

    /**
     * The new text of the notification of its references
     * ({@code pushNotificationEdit}), or null: the push is an edit unless it is
     * a retraction ({@link PushReading#isEdit()}).
     */
    public NotificationEdit edit() {
        return edit;
    }

    /**
     * The account its references and threads are of ({@code pushNotificationAccount}),
     * or null: the app's only account.
     */
    public String account() {
        return account;
    }

    /** The app icon's badge a read's push gives ({@code pushNotificationBadge}), or null. */
    public Integer badge() {
        return badge;
    }

    /** Every reference named, single and batch, without repeats, in order. */
    public List<String> references() {
        List<String> all = new ArrayList<>();
        if (referenceId != null) all.add(referenceId);
        all.addAll(referenceIds);
        return CanonicalText.distinct(all);
    }
}
