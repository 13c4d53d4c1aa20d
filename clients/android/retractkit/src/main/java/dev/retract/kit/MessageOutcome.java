package dev.retract.kit;

import java.util.Collections;
import java.util.List;
import java.util.Set;

/** What {@link RetractClient#onMessageReceived} did with one message. */
public final class MessageOutcome {
    /** What the message was. */
    public enum Kind {
        /** A retraction: {@link #removed()} were cancelled (possibly none). */
        RETRACTION,
        /** An original Retract sent for the app to show: {@link #original()} says how. */
        ORIGINAL,
        /** Such an original whose retraction arrived first: do not show it. */
        RETRACTED_ORIGINAL,
        /**
         * An edit: {@link #edited()} show {@link #edit()}'s words now
         * (possibly none: dismissed, or never shown). None when one of its
         * references was retracted before ({@link #retractedBefore()}): a
         * deleted message is never shown again.
         */
        EDIT,
        /**
         * Not for the library: the app's own message, left to it. When it
         * names a reference (a silent original, say), {@link #original()} is
         * set and {@link #retractedBefore()} says whether it was retracted.
         */
        NOT_RETRACT
    }

    private final Kind kind;
    private final List<ShownNotification> removed;
    private final Set<String> references;
    private final Set<String> threads;
    private final Original original;
    private final boolean retractedBefore;
    private final List<PayloadProblem> diagnostics;
    private final boolean moreInFeed;
    private final NotificationEdit edit;
    private final List<ShownNotification> edited;
    private String account;
    private Integer badge;
    private List<ShownNotification> rebuilt = Collections.emptyList();

    MessageOutcome(Kind kind, List<ShownNotification> removed, Set<String> references, Set<String> threads, Original original,
            boolean retractedBefore, List<PayloadProblem> diagnostics, boolean moreInFeed) {
        this(kind, removed, references, threads, original, retractedBefore, diagnostics, moreInFeed, null, Collections.emptyList());
    }

    MessageOutcome(Kind kind, List<ShownNotification> removed, Set<String> references, Set<String> threads, Original original,
            boolean retractedBefore, List<PayloadProblem> diagnostics, boolean moreInFeed, NotificationEdit edit,
            List<ShownNotification> edited) {
        this.kind = kind;
        this.removed = Collections.unmodifiableList(removed);
        this.references = Collections.unmodifiableSet(references);
        this.threads = Collections.unmodifiableSet(threads);
        this.original = original;
        this.retractedBefore = retractedBefore;
        this.diagnostics = diagnostics;
        this.moreInFeed = moreInFeed;
        this.edit = edit;
        this.edited = Collections.unmodifiableList(edited);
    }

    /** This outcome, of {@code account}. */
    MessageOutcome of(String account) {
        this.account = account;
        return this;
    }

    /** This outcome, with the badge the message gives. */
    MessageOutcome badging(Integer badge) {
        this.badge = badge;
        return this;
    }

    /** This outcome, with the conversations a retraction re-posted. */
    MessageOutcome rebuilding(List<ShownNotification> rebuilt) {
        this.rebuilt = Collections.unmodifiableList(new java.util.ArrayList<>(rebuilt));
        return this;
    }

    /**
     * The conversation notifications a retraction re-posted without the
     * messages it took, silently and in place, as they show now
     * ({@link ShownNotification#conversation()}); those it left with no
     * message are in {@link #removed()}.
     */
    public List<ShownNotification> rebuilt() {
        return rebuilt;
    }

    public Kind kind() {
        return kind;
    }

    /** The account the message's references and threads are of ({@code pushNotificationAccount}); null: the app's only account. */
    public String account() {
        return account;
    }

    /**
     * The app icon's badge the message gives ({@code pushNotificationBadge}, a
     * read's), for the app to set ({@code ShortcutBadger}-style launchers, or
     * a conversation's {@code setNumber}); null: the message gives none.
     */
    public Integer badge() {
        return badge;
    }

    /**
     * The notifications cancelled: those a retraction names, and any showing
     * whose reference was retracted before (see {@link RetractClient#sweep}).
     */
    public List<ShownNotification> removed() {
        return removed;
    }

    /** The references a retraction named, or those an edit named. */
    public Set<String> references() {
        return references;
    }

    /** The conversations a retraction named. */
    public Set<String> threads() {
        return threads;
    }

    /** The original the message is, when it names a reference and is not a retraction; else null. */
    public Original original() {
        return original;
    }

    /**
     * Whether that original's retraction came before it: do not show it. For
     * an edit, whether one of its references was retracted before, so that
     * nothing was edited.
     */
    public boolean retractedBefore() {
        return retractedBefore;
    }

    /** Values of the message that could not be read and were left out. */
    public List<PayloadProblem> diagnostics() {
        return diagnostics;
    }

    /** The new words of an edit ({@link Kind#EDIT}); else null. */
    public NotificationEdit edit() {
        return edit;
    }

    /**
     * The notifications an edit re-posted, as they show now: those a
     * retraction of its references would have removed.
     */
    public List<ShownNotification> edited() {
        return edited;
    }

    /** A retraction said the rest is in the device feed: read it ({@link RetractClient#catchUp}). */
    public boolean moreInFeed() {
        return moreInFeed;
    }
}
