package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The app's calls on a shade that behaves as Android's. */
class RetractClientTest {
    private final AtomicLong now = new AtomicLong(1_000_000);
    private final TextStorage storage = TextStorage.inMemory();
    private final RetractClient client = new RetractClient(new Tombstones(storage, 256, Tombstones.DEFAULT_LIFETIME_MILLIS, now::get));

    static Map<String, String> retraction(String references) {
        return Map.of("notificationCustomData", "{\"isReferredNotificationMustRemoved\":true,\"pushNotificationReferenceIds\":" + references + "}");
    }

    static Map<String, String> original(String reference, String thread) {
        return Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"" + reference + "\",\"pushNotificationThreadId\":\"" + thread + "\"}",
                "title", "Ada", "body", "see you at 8?");
    }

    @Test
    void aDataOnlyOriginalIsPostedUnderItsTagAndItsRetractionCancelsIt() {
        InMemoryShade shade = new InMemoryShade();
        MessageOutcome arrived = client.onMessageReceived(original("m1", "c-1"), shade);
        assertEquals(MessageOutcome.Kind.ORIGINAL, arrived.kind());
        assertEquals("m1", arrived.original().tag());
        assertEquals("Ada", arrived.original().title());
        assertEquals("see you at 8?", arrived.original().body());
        assertEquals("c-1", arrived.original().group());
        shade.post(arrived.original().shown(0, "messages"));
        shade.post(new ShownNotification("other", 0, null, null, "messages"));

        MessageOutcome retracted = client.onMessageReceived(retraction("[\"m1\"]"), shade);
        assertEquals(MessageOutcome.Kind.RETRACTION, retracted.kind());
        assertEquals(List.of("m1"), names(retracted.removed()));
        assertEquals(List.of("other"), names(shade.active()));
    }

    @Test
    void aFirebaseDisplayedOriginalIsFoundByItsTagAlone() {
        // Firebase showed it: tag from android.notification.tag, id 0, none of the data in its extras.
        InMemoryShade shade = new InMemoryShade(List.of(
                new ShownNotification("msg-8812", 0, Map.of("android.title", "Spring sale"), null, "fcm_fallback_notification_channel"),
                new ShownNotification("FCM-Notification:12", 0, null, null, null)));
        MessageOutcome outcome = client.onMessageReceived(retraction("[\"msg-8812\"]"), shade);
        assertEquals(List.of("msg-8812"), names(outcome.removed()));
        assertEquals(List.of("FCM-Notification:12"), names(shade.active()));
    }

    @Test
    void aThreadRetractionTakesTheGroupButNeverMatchesAChannel() {
        InMemoryShade shade = new InMemoryShade(List.of(
                new ShownNotification("m1", 0, null, "c-1", "messages"),
                new ShownNotification("m2", 0, Map.of("pushNotificationReferenceId", "m2", "pushNotificationThreadId", "c-1"), null, null),
                new ShownNotification("m3", 0, null, "c-2", "c-1")));
        MessageOutcome outcome = client.onMessageReceived(
                Map.of("notificationCustomData", "{\"isReferredNotificationMustRemoved\":\"true\",\"pushNotificationThreadIds\":\"[\\\"c-1\\\"]\"}"), shade);
        assertEquals(List.of("m1", "m2"), names(outcome.removed()));
        assertEquals(List.of("m3"), names(shade.active()));
    }

    @Test
    void anOriginalArrivingAfterItsRetractionIsNotShownWhileItsTombstoneLasts() {
        InMemoryShade shade = new InMemoryShade();
        client.onMessageReceived(retraction("[\"m1\"]"), shade);
        assertEquals(MessageOutcome.Kind.RETRACTED_ORIGINAL, client.onMessageReceived(original("m1", "c-1"), shade).kind());
        assertEquals(MessageOutcome.Kind.ORIGINAL, client.onMessageReceived(original("m2", "c-1"), shade).kind());
        now.addAndGet(Tombstones.DEFAULT_LIFETIME_MILLIS + 1);
        assertEquals(MessageOutcome.Kind.ORIGINAL, client.onMessageReceived(original("m1", "c-1"), shade).kind());
    }

    @Test
    void tombstonesKeepTheNewestWithinTheLimitAndSurviveUnreadableStorage() throws Exception {
        Tombstones tombstones = new Tombstones(storage, 3, 60_000, now::get);
        tombstones.record(List.of("a", "b"));
        now.addAndGet(1);
        tombstones.record(List.of("c", "d"));
        assertEquals(List.of("b", "c", "d"), tombstones.references());
        now.addAndGet(1);
        tombstones.record(List.of("b"));
        assertEquals(List.of("c", "d", "b"), tombstones.references());
        storage.save("{not json");
        assertEquals(List.of(), tombstones.references());
        tombstones.record(List.of("e"));
        assertTrue(tombstones.contains("e"));
        assertTrue(tombstones.wasRetracted(Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"e\"}")));
    }

    @Test
    void aSilentOriginalIsTheAppsToHandleWithWhatItNeedsToKnow() {
        InMemoryShade shade = new InMemoryShade();
        Map<String, String> silent = Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"sync-1\"}");
        MessageOutcome outcome = client.onMessageReceived(silent, shade);
        assertEquals(MessageOutcome.Kind.NOT_RETRACT, outcome.kind());
        assertEquals("sync-1", outcome.original().reference());
        assertEquals(false, outcome.retractedBefore());
        client.onMessageReceived(retraction("[\"sync-1\"]"), shade);
        assertEquals(true, client.onMessageReceived(silent, shade).retractedBefore());
        assertEquals(List.of(), shade.active(), "nothing was posted");
    }

    @Test
    void anOriginalFirebaseShowedAfterItsRetractionGoesWithTheNextMessageOfRetracts() {
        InMemoryShade shade = new InMemoryShade();
        client.onMessageReceived(retraction("[\"m1\"]"), shade);
        // Offline, FCM delivered the original after its retraction, and Firebase showed it: no app code ran.
        shade.post(new ShownNotification("m1", 0, null, null, "fcm_fallback_notification_channel"));
        shade.post(new ShownNotification("m2", 0, null, null, "fcm_fallback_notification_channel"));
        MessageOutcome next = client.onMessageReceived(original("m3", "c-1"), shade);
        assertEquals(MessageOutcome.Kind.ORIGINAL, next.kind());
        assertEquals(List.of("m1"), names(next.removed()));
        assertEquals(List.of("m2"), names(shade.active()));
        // And a later retraction takes it along too.
        shade.post(new ShownNotification("m1", 0, null, null, null));
        assertEquals(List.of("m2", "m1"), names(client.onMessageReceived(retraction("[\"m2\"]"), shade).removed()));
    }

    @Test
    void theAppsOwnMessagesAreLeftToIt() {
        InMemoryShade shade = new InMemoryShade(List.of(new ShownNotification("m1", 0, null, null, null)));
        MessageOutcome outcome = client.onMessageReceived(Map.of("type", "typing", "chat", "c-1"), shade);
        assertEquals(MessageOutcome.Kind.NOT_RETRACT, outcome.kind());
        assertEquals(1, shade.active().size());
    }

    static List<String> names(List<ShownNotification> notifications) {
        return notifications.stream().map(ShownNotification::name).collect(Collectors.toList());
    }
}
