package dev.retract.kit;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
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

    /** @param tombstones where retracted references are remembered; null keeps none */
    public RetractClient(Tombstones tombstones) {
        this.tombstones = tombstones;
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
        if (reading.isRetraction()) {
            List<ShownNotification> removed = retract(reading.retractedReferences(), reading.retractedThreads(), shade);
            return new MessageOutcome(MessageOutcome.Kind.RETRACTION, removed, reading.retractedReferences(), reading.retractedThreads(),
                    null, false, reading.diagnostics(), reading.moreInFeed());
        }
        if (reading.isEdit()) {
            List<ShownNotification> swept = sweep(shade);
            boolean retracted = wasRetracted(reading.editedReferences());
            List<ShownNotification> edited = edit(reading.editedReferences(), reading.edit(), shade);
            return new MessageOutcome(MessageOutcome.Kind.EDIT, swept, reading.editedReferences(), Collections.emptySet(), null, retracted,
                    reading.diagnostics(), false, reading.edit(), edited);
        }
        Original original = original(reading, data);
        if (original == null) {
            return new MessageOutcome(MessageOutcome.Kind.NOT_RETRACT, Collections.emptyList(), Collections.emptySet(),
                    Collections.emptySet(), null, false, reading.diagnostics(), false);
        }
        boolean retracted = wasRetracted(reading.customData().references());
        List<ShownNotification> swept = sweep(shade);
        MessageOutcome.Kind kind = !original.isForTheAppToShow()
                ? MessageOutcome.Kind.NOT_RETRACT
                : retracted ? MessageOutcome.Kind.RETRACTED_ORIGINAL : MessageOutcome.Kind.ORIGINAL;
        return new MessageOutcome(kind, swept, Collections.emptySet(), Collections.emptySet(), original, retracted,
                reading.diagnostics(), false);
    }

    /**
     * Cancels the notifications showing whose references were retracted
     * before (the tombstones): originals Firebase showed after their
     * retraction had come. Run with every message of Retract's and every
     * catch-up; nothing without tombstones.
     *
     * @return what was cancelled
     */
    public List<ShownNotification> sweep(NotificationShade shade) {
        if (tombstones == null) return Collections.emptyList();
        List<String> retracted = tombstones.references();
        if (retracted.isEmpty()) return Collections.emptyList();
        List<ShownNotification> matched =
                ShownNotification.retractedBy(shade.active(), new java.util.HashSet<>(retracted), Collections.<String>emptySet());
        for (ShownNotification notification : matched) shade.cancel(notification);
        return matched;
    }

    /**
     * Cancels the notifications showing that carry, or are tagged with, one of
     * {@code references}, and those in one of {@code threads}; remembers the
     * references (not the threads: a conversation goes on, and its next
     * messages must show). Those of earlier retractions that are showing go
     * too ({@link #sweep}).
     *
     * @return what was cancelled
     */
    public List<ShownNotification> retract(Set<String> references, Set<String> threads, NotificationShade shade) {
        Set<String> removing = new java.util.LinkedHashSet<>(references);
        if (tombstones != null) {
            removing.addAll(tombstones.references());
            if (!references.isEmpty()) {
                try {
                    tombstones.record(references);
                } catch (IOException unsaved) {
                    // A tombstone that cannot be saved only costs the late-original check; the removal must still happen.
                }
            }
        }
        List<ShownNotification> matched = ShownNotification.retractedBy(shade.active(), removing, threads);
        for (ShownNotification notification : matched) shade.cancel(notification);
        return matched;
    }

    /**
     * Re-posts, silently and in place, every notification showing that a
     * retraction of {@code references} would remove (by its tag or the custom
     * data in its extras; not by its conversation, whose other messages keep
     * their words), with the edit's title (or the one shown, when the edit
     * has none) and its body as text. A notification no longer showing stays
     * gone: an edit never posts one. Nothing at all when one of the
     * references was retracted before (a tombstone): a deleted message is
     * never shown again, whatever order FCM delivered its edit and its
     * retraction in.
     *
     * @return the notifications re-posted, as they show now
     */
    public List<ShownNotification> edit(Set<String> references, NotificationEdit edit, NotificationShade shade) {
        if (wasRetracted(references)) return Collections.emptyList();
        List<ShownNotification> edited = new ArrayList<>();
        for (ShownNotification notification : ShownNotification.retractedBy(shade.active(), references, Collections.<String>emptySet())) {
            shade.edit(notification, edit.title(), edit.body());
            edited.add(notification.edited(edit.title(), edit.body()));
        }
        return edited;
    }

    /** Whether a tombstone says one of {@code references} was retracted; false without tombstones. */
    private boolean wasRetracted(Collection<String> references) {
        if (tombstones == null) return false;
        for (String reference : references) {
            if (tombstones.contains(reference)) return true;
        }
        return false;
    }

    /** What a catch-up did. */
    public static final class CatchUp {
        public final List<ShownNotification> removed;
        public final Set<String> references;
        /** Pages read; 0 when no token is saved yet. */
        public final int pages;
        /**
         * Why it stopped before the feed's last page, or null: what it read
         * was removed and the cursor moved past it; the rest is read next time.
         */
        public final FeedException stoppedBy;

        CatchUp(List<ShownNotification> removed, Set<String> references, int pages, FeedException stoppedBy) {
            this.removed = Collections.unmodifiableList(removed);
            this.references = Collections.unmodifiableSet(references);
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
        if (position == null) return new CatchUp(Collections.emptyList(), Collections.emptySet(), 0, null);
        RetractionFeed.Read read = feed.read(position.token, position.cursor, position.validator, budgetMillis);
        List<ShownNotification> removed = read.references.isEmpty()
                ? sweep(shade)
                : retract(read.references, Collections.emptySet(), shade);
        boolean moved = !java.util.Objects.equals(read.cursor, position.cursor) || !java.util.Objects.equals(read.validator, position.validator);
        if (moved && read.cursor != null) {
            try {
                saved.advance(position.token, read.cursor, read.validator);
            } catch (IOException unsaved) {
                // A cursor that cannot be saved only means reading these entries again.
            }
        }
        return new CatchUp(removed, read.references, read.pages, read.stoppedBy);
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
                customData.threadId(), extras);
    }

    private static String text(Object value) {
        return value instanceof String ? (String) value : null;
    }
}
