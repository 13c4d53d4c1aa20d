package dev.retract.kit;

import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** What a phone reads out of one push. */
public final class PushReading {
    private final CustomData customData;
    private final List<PayloadProblem> diagnostics;

    PushReading(CustomData customData, List<PayloadProblem> diagnostics) {
        this.customData = customData;
        this.diagnostics = Collections.unmodifiableList(diagnostics);
    }

    /** The custom data, united across both keys (or read at the top level); null when the push carries none. */
    public CustomData customData() {
        return customData;
    }

    /** The values that could not be read, each naming its key, in reading order. */
    public List<PayloadProblem> diagnostics() {
        return diagnostics;
    }

    /**
     * Whether the push is a retraction: the removal flag set to an accepted
     * true value, and a reference or a thread to remove.
     */
    public boolean isRetraction() {
        return customData != null && customData.mustRemove
                && !(customData.references().isEmpty() && customData.threadIds.isEmpty());
    }

    /** The references to remove; empty when the push is not a retraction. */
    public Set<String> retractedReferences() {
        return isRetraction() ? new LinkedHashSet<>(customData.references()) : Collections.<String>emptySet();
    }

    /** The conversations whose every notification the retraction removes; empty when it is not one. */
    public Set<String> retractedThreads() {
        return isRetraction() ? new LinkedHashSet<>(CanonicalText.distinct(customData.threadIds)) : Collections.<String>emptySet();
    }

    /**
     * Whether the push is an edit: not a retraction (removing wins: a deleted
     * message is never shown again), a readable {@code pushNotificationEdit},
     * and a reference whose notification it changes.
     */
    public boolean isEdit() {
        return !isRetraction() && customData != null && customData.edit != null && !customData.references().isEmpty();
    }

    /** The new words of the notifications of {@link #editedReferences()}; null when the push is not an edit. */
    public NotificationEdit edit() {
        return isEdit() ? customData.edit : null;
    }

    /** Every reference the edit names, single and batch; empty when the push is not an edit. */
    public Set<String> editedReferences() {
        return isEdit() ? new LinkedHashSet<>(customData.references()) : Collections.<String>emptySet();
    }

    /** The account its references and threads are of ({@code pushNotificationAccount}), or null: the app's only account. */
    public String account() {
        return customData == null ? null : customData.account;
    }

    /** The app icon's badge the push gives (a read's, {@code pushNotificationBadge}) for the app to set, or null. */
    public Integer badge() {
        return customData == null ? null : customData.badge;
    }

    /** Whether the push says the rest of what to remove is in the device feed. */
    public boolean moreInFeed() {
        return isRetraction() && customData.moreInFeed;
    }
}
