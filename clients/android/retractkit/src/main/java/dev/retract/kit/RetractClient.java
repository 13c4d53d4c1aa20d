package dev.retract.kit;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What an Android app calls from {@code FirebaseMessagingService.onMessageReceived}
 * with the message's data, and at start for the device feed. Plain JVM: the
 * notifications showing come through a {@link NotificationShade}.
 *
 * <pre>{@code
 * RetractClient client = new RetractClient(new Tombstones(storage));
 * MessageOutcome outcome = client.onMessageReceived(message.getData(), shade);
 * }</pre>
 *
 * <p>Never throws for what a message holds: a value that cannot be read is
 * left out and reported in {@link MessageOutcome#diagnostics()}.
 */
public final class RetractClient {
    private final Tombstones tombstones;
    private final Conversations conversations;

    /** @param tombstones where retracted references are remembered; null keeps none */
    public RetractClient(Tombstones tombstones) {
        this(tombstones, null);
    }

    /**
     * @param tombstones where retracted references are remembered; null keeps none
     * @param conversations what posts the app's conversation notifications
     *     ({@link Conversations}), so that a retraction's or an edit's re-post
     *     and a new message's post never interleave; null when it shows none
     */
    public RetractClient(Tombstones tombstones, Conversations conversations) {
        this.tombstones = tombstones;
        this.conversations = conversations;
    }

    /**
     * Handles one FCM message's data map.
     *
     * <ul>
     *   <li>A retraction cancels the notifications it names and remembers its
     *       references ({@link MessageOutcome.Kind#RETRACTION}).</li>
     *   <li>An edit re-posts the notifications of its references still
     *       showing with its words ({@link MessageOutcome.Kind#EDIT}; see
     *       {@link #edit}).</li>
     *   <li>An original Retract sent for the app to show ({@code androidDisplay: "app"}:
     *       a reference, and the alert's {@code title} or {@code body} in the
     *       data) comes back as {@link MessageOutcome.Kind#ORIGINAL}, to post
     *       under {@link Original#tag()}; or as
     *       {@link MessageOutcome.Kind#RETRACTED_ORIGINAL} when its retraction
     *       came first.</li>
     *   <li>Anything else is the app's ({@link MessageOutcome.Kind#NOT_RETRACT}),
     *       a silent push with a reference too; {@link MessageOutcome#original()}
     *       is then set when it names a reference, with
     *       {@link MessageOutcome#retractedBefore()}, for an app that shows
     *       such messages itself.</li>
     * </ul>
     *
     * <p>A message of Retract's also cancels any notification showing whose
     * reference was already retracted: an original Firebase showed itself
     * after its retraction had come (no app code runs for those).
     */
    public MessageOutcome onMessageReceived(Map<String, ?> data, NotificationShade shade) {
        PushReading reading = RetractPayload.read(data);
        String account = reading.account();
        if (reading.isRetraction()) {
            Changes changes = retracting(reading.retractedReferences(), reading.retractedThreads(), account, shade);
            return new MessageOutcome(MessageOutcome.Kind.RETRACTION, changes.removed, reading.retractedReferences(),
                    reading.retractedThreads(), null, false, reading.diagnostics(), reading.moreInFeed()).of(account).badging(reading.badge())
                    .rebuilding(changes.rebuilt);
        }
        if (reading.isEdit()) {
            List<ShownNotification> swept = sweep(shade);
            boolean retracted = wasRetracted(reading.editedReferences(), account);
            List<ShownNotification> edited = edit(reading.editedReferences(), reading.edit(), account, shade);
            return new MessageOutcome(MessageOutcome.Kind.EDIT, swept, reading.editedReferences(), Collections.emptySet(), null, retracted,
                    reading.diagnostics(), false, reading.edit(), edited).of(account);
        }
        Original original = original(reading, data);
        if (original == null) {
            return new MessageOutcome(MessageOutcome.Kind.NOT_RETRACT, Collections.emptyList(), Collections.emptySet(),
                    Collections.emptySet(), null, false, reading.diagnostics(), false).of(account);
        }
        boolean retracted = wasRetracted(reading.customData().references(), account);
        List<ShownNotification> swept = sweep(shade);
        MessageOutcome.Kind kind = !original.isForTheAppToShow()
                ? MessageOutcome.Kind.NOT_RETRACT
                : retracted ? MessageOutcome.Kind.RETRACTED_ORIGINAL : MessageOutcome.Kind.ORIGINAL;
        return new MessageOutcome(kind, swept, Collections.emptySet(), Collections.emptySet(), original, retracted,
                reading.diagnostics(), false).of(account);
    }

    /**
     * Cancels the notifications showing whose references were retracted
     * before (the tombstones): originals Firebase showed after their
     * retraction had come. Conversations holding such a message are
     * re-posted without it. Run with every message of Retract's and every
     * catch-up; nothing without tombstones.
     *
     * @return what was cancelled
     */
    public List<ShownNotification> sweep(NotificationShade shade) {
        if (tombstones == null) return Collections.emptyList();
        return change(tombstones.referencesByAccount(), Collections.<String>emptySet(), null, shade).removed;
    }

    /**
     * Cancels the notifications showing that carry, or are tagged with, one of
     * {@code references}, and those in one of {@code threads}, of the app's
     * only account; see {@link #retract(Set, Set, String, NotificationShade)}.
     *
     * @return what was cancelled
     */
    public List<ShownNotification> retract(Set<String> references, Set<String> threads, NotificationShade shade) {
        return retract(references, threads, null, shade);
    }

    /**
     * Cancels the notifications showing that carry, or are tagged with, one of
     * {@code references}, and those in one of {@code threads}, of
     * {@code account} (null: the app's only account; see
     * {@link ShownNotification}); remembers the references (not the threads:
     * a conversation goes on, and its next messages must show). Those of
     * earlier retractions that are showing go too ({@link #sweep}).
     *
     * <p>A conversation notification ({@link Conversation}) holding some of
     * the references is re-posted without them, silently, in its place; one
     * left with none of its messages, or whose conversation is among
     * {@code threads}, is cancelled.
     *
     * @return what was cancelled
     */
    public List<ShownNotification> retract(Set<String> references, Set<String> threads, String account, NotificationShade shade) {
        return retracting(references, threads, account, shade).removed;
    }

    /** What a retraction changed: what it cancelled, and the conversations it re-posted, as they show now. */
    private static final class Changes {
        final List<ShownNotification> removed = new ArrayList<>();
        final List<ShownNotification> rebuilt = new ArrayList<>();
    }

    private Changes retracting(Set<String> references, Set<String> threads, String account, NotificationShade shade) {
        Map<String, Set<String>> removing = new LinkedHashMap<>();
        if (tombstones != null) {
            removing.putAll(tombstones.referencesByAccount());
            if (!references.isEmpty()) {
                try {
                    tombstones.record(references, account);
                } catch (IOException unsaved) {
                    // A tombstone that cannot be saved only costs the late-original check; the removal must still happen.
                }
            }
        }
        // Accounts are compared as Swift compares strings, as the tombstones keep them.
        String key = account == null ? null : CanonicalText.key(account);
        Set<String> own = new LinkedHashSet<>(removing.getOrDefault(key, Collections.<String>emptySet()));
        own.addAll(references);
        if (!own.isEmpty()) removing.put(key, own);
        return change(removing, threads, key, shade);
    }

    /**
     * Applies a retraction of {@code byAccount}'s references (each of its
     * account) and of {@code threads} of {@code account} to what shows: each
     * notification it removes is cancelled once, in the order they show;
     * each conversation it takes messages from is re-posted without them.
     */
    private Changes change(Map<String, Set<String>> byAccount, Set<String> threads, String account, NotificationShade shade) {
        // What shows is read, changed and posted again as one step against a new message's post (Conversations#post).
        synchronized (monitor()) {
            return changing(byAccount, threads, account, shade);
        }
    }

    private Changes changing(Map<String, Set<String>> byAccount, Set<String> threads, String account, NotificationShade shade) {
        Changes changes = new Changes();
        if (byAccount.isEmpty() && threads.isEmpty()) return changes;
        List<ShownNotification> showing = shade.active();
        Set<String> matched = new java.util.HashSet<>();
        for (Map.Entry<String, Set<String>> entry : byAccount.entrySet()) {
            boolean own = java.util.Objects.equals(entry.getKey(), account);
            for (ShownNotification notification : ShownNotification.retractedBy(showing, entry.getValue(),
                    own ? threads : Collections.<String>emptySet(), entry.getKey())) {
                matched.add(CanonicalText.key(notification.name()));
            }
        }
        if (!byAccount.containsKey(account)) {
            for (ShownNotification notification : ShownNotification.retractedBy(showing, Collections.<String>emptySet(), threads, account)) {
                matched.add(CanonicalText.key(notification.name()));
            }
        }
        for (ShownNotification notification : showing) {
            Conversation conversation = notification.conversation();
            if (conversation != null) {
                Conversation left = conversation.retracting(byAccount, threads, account);
                if (left == conversation) continue;
                if (left == null) {
                    shade.cancel(notification);
                    changes.removed.add(notification);
                } else {
                    shade.postConversation(left, true);
                    changes.rebuilt.add(notification.holding(left));
                }
            } else if (matched.contains(CanonicalText.key(notification.name()))) {
                shade.cancel(notification);
                changes.removed.add(notification);
            }
        }
        return changes;
    }

    /**
     * Re-posts, silently and in place, every notification showing that a
     * retraction of {@code references} would remove (by its tag or the custom
     * data in its extras; not by its conversation, whose other messages keep
     * their words), with the edit's title (or the one shown, when the edit
     * has none) and its body as text. A conversation notification holding one
     * of the messages is re-posted with that message's new words (the body;
     * a message's sender is not an edit's title). A notification no longer
     * showing stays gone: an edit never posts one. Nothing at all when one of
     * the references was retracted before (a tombstone): a deleted message is
     * never shown again, whatever order FCM delivered its edit and its
     * retraction in.
     *
     * @return the notifications re-posted, as they show now
     */
    public List<ShownNotification> edit(Set<String> references, NotificationEdit edit, NotificationShade shade) {
        return edit(references, edit, null, shade);
    }

    /** {@link #edit(Set, NotificationEdit, NotificationShade)} of the references of {@code account} (null: the app's only account). */
    public List<ShownNotification> edit(Set<String> references, NotificationEdit edit, String account, NotificationShade shade) {
        if (wasRetracted(references, account)) return Collections.emptyList();
        synchronized (monitor()) {
            return editing(references, edit, account, shade);
        }
    }

    /** What serializes changes to what shows: the {@link Conversations}' monitor, which its posts hold. */
    private Object monitor() {
        return conversations != null ? conversations : this;
    }

    private List<ShownNotification> editing(Set<String> references, NotificationEdit edit, String account, NotificationShade shade) {
        List<ShownNotification> showing = shade.active();
        List<ShownNotification> matched = ShownNotification.retractedBy(showing, references, Collections.<String>emptySet(), account);
        List<ShownNotification> edited = new ArrayList<>();
        for (ShownNotification notification : showing) {
            Conversation conversation = notification.conversation();
            if (conversation != null) {
                Conversation changed = conversation.editing(references, account, edit.body());
                if (changed == conversation) continue;
                shade.postConversation(changed, true);
                edited.add(notification.holding(changed));
            } else if (matched.contains(notification)) {
                shade.edit(notification, edit.title(), edit.body());
                edited.add(notification.edited(edit.title(), edit.body()));
            }
        }
        return edited;
    }

    /** Whether a tombstone says one of {@code references} of {@code account} was retracted; false without tombstones. */
    private boolean wasRetracted(Collection<String> references, String account) {
        if (tombstones == null) return false;
        for (String reference : references) {
            if (tombstones.contains(reference, account)) return true;
        }
        return false;
    }

    /** What a catch-up did. */
    public static final class CatchUp {
        public final List<ShownNotification> removed;
        /** The references the feed named of the app's only account. */
        public final Set<String> references;
        /** Every account's references the feed named, by account (the app's only account under null). */
        public final Map<String, Set<String>> byAccount;
        /** Pages read; 0 when no token is saved yet. */
        public final int pages;
        /**
         * Why it stopped before the feed's last page, or null: what it read
         * was removed and the cursor moved past it; the rest is read next time.
         */
        public final FeedException stoppedBy;

        CatchUp(List<ShownNotification> removed, Set<String> references, Map<String, Set<String>> byAccount, int pages,
                FeedException stoppedBy) {
            this.removed = Collections.unmodifiableList(removed);
            this.references = Collections.unmodifiableSet(references);
            this.byAccount = Collections.unmodifiableMap(byAccount);
            this.pages = pages;
            this.stoppedBy = stoppedBy;
        }
    }

    /**
     * Reads the feed from the cursor {@code saved} keeps, cancels what it
     * names, and only then moves the cursor, so a process stopped in between
     * reads the same entries again rather than skipping them. Run it at every
     * start and after {@code onNewToken}: FCM delivers nothing to an app that
     * was force-stopped, and may drop messages.
     *
     * @param budgetMillis how long every page together may take; pages read
     *     before it ran out count ({@link CatchUp#stoppedBy})
     * @throws FeedException when the feed's first page cannot be read; nothing was removed and the cursor did not move
     */
    public CatchUp catchUp(RetractionFeed feed, FeedCursor saved, NotificationShade shade, long budgetMillis) throws FeedException {
        FeedCursor.Position position = saved.position();
        if (position == null) return new CatchUp(Collections.emptyList(), Collections.emptySet(), Collections.emptyMap(), 0, null);
        RetractionFeed.Read read = feed.read(position.token, position.cursor, position.validator, budgetMillis);
        List<ShownNotification> removed = new ArrayList<>();
        for (Map.Entry<String, Set<String>> entry : read.byAccount.entrySet()) {
            removed.addAll(retract(entry.getValue(), Collections.emptySet(), entry.getKey(), shade));
        }
        if (read.byAccount.isEmpty()) removed.addAll(sweep(shade));
        boolean moved = !java.util.Objects.equals(read.cursor, position.cursor) || !java.util.Objects.equals(read.validator, position.validator);
        if (moved && read.cursor != null) {
            try {
                saved.advance(position.token, read.cursor, read.validator);
            } catch (IOException unsaved) {
                // A cursor that cannot be saved only means reading these entries again.
            }
        }
        return new CatchUp(removed, read.references, read.byAccount, read.pages, read.stoppedBy);
    }

    /** An original Retract sent as data only: custom data with a reference and no removal flag set. */
    private static Original original(PushReading reading, Map<String, ?> data) {
        CustomData customData = reading.customData();
        if (customData == null || customData.mustRemove() || customData.references().isEmpty()) return null;
        Map<String, String> extras = new LinkedHashMap<>();
        for (Map.Entry<String, ?> entry : data.entrySet()) {
            Object value = entry.getValue();
            extras.put(entry.getKey(), value instanceof String ? (String) value : Json.write(value));
        }
        return new Original(customData.references().get(0), text(data.get(PayloadKeys.TITLE)), text(data.get(PayloadKeys.BODY)),
                customData.threadId(), customData.account(), extras);
    }

    private static String text(Object value) {
        return value instanceof String ? (String) value : null;
    }
}
