package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Edits through the path an app takes: {@code RetractClient.onMessageReceived}
 * with the FCM data map, over a shade that behaves as Android's.
 */
class EditTest {
    private final RetractClient client = new RetractClient(new Tombstones(TextStorage.inMemory()));

    /** What Retract sends an Android phone to edit {@code reference}: the custom data as its JSON text. */
    static Map<String, String> edit(String reference, String edit) {
        return Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"" + reference + "\",\"pushNotificationEdit\":" + edit + "}");
    }

    /** An original the app posted from a data message: tag, extras with its custom data, group and channel. */
    static ShownNotification posted(String reference, String group, String title, String text) {
        Map<String, String> data = Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"" + reference + "\"}", "title", title,
                "body", text);
        return new ShownNotification(reference, 0, data, group, "messages", title, text);
    }

    @Test
    void theOriginalShowingGetsTheNewWordsAndKeepsEverythingElse() {
        ShownNotification original = posted("m1", "c-1", "Ada", "See you at 8?");
        InMemoryShade shade = new InMemoryShade(List.of(original, posted("m2", "c-1", "Ada", "Bring the map"),
                new ShownNotification("m3", 4, null, null, "messages")));

        MessageOutcome outcome = client.onMessageReceived(edit("m1", "{\"title\":\"Ada L.\",\"body\":\"See you at 9?\"}"), shade);

        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(new NotificationEdit("Ada L.", "See you at 9?"), outcome.edit());
        assertEquals(List.of("m1"), outcome.references().stream().collect(Collectors.toList()));
        assertEquals(List.of("m1"), names(outcome.edited()));
        assertEquals(List.of(), outcome.removed());
        assertEquals(List.of(), outcome.diagnostics());
        ShownNotification now = shade.active().get(0);
        assertEquals("Ada L.", now.title());
        assertEquals("See you at 9?", now.text());
        assertEquals(original.tag(), now.tag());
        assertEquals(original.id(), now.id());
        assertEquals(original.group(), now.group());
        assertEquals(original.channel(), now.channel());
        assertEquals(original.extras(), now.extras());
        assertEquals(now, outcome.edited().get(0));
        // Its place in the shade is kept, and its conversation's other message keeps its words.
        assertEquals(List.of("m1", "m2", "m3#4"), names(shade.active()));
        assertEquals("Bring the map", shade.active().get(1).text());
    }

    @Test
    void anEditWithoutATitleKeepsTheTitleShownAndMayEmptyTheText() {
        // Firebase showed it: its words are in the extras, where Android keeps them.
        InMemoryShade shade = new InMemoryShade(List.of(new ShownNotification("m1", 0,
                Map.of(ShownNotification.EXTRA_TITLE, "Ada", ShownNotification.EXTRA_TEXT, "See you at 8?"), null, "fcm_fallback_notification_channel")));
        MessageOutcome outcome = client.onMessageReceived(edit("m1", "{\"body\":\"\"}"), shade);
        assertEquals(new NotificationEdit(null, ""), outcome.edit());
        assertEquals("Ada", shade.active().get(0).title());
        assertEquals("", shade.active().get(0).text());
    }

    @Test
    void aDismissedNotificationStaysGone() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m2", "c-1", "Ada", "Bring the map")));
        MessageOutcome outcome = client.onMessageReceived(edit("m1", "{\"body\":\"See you at 9?\"}"), shade);
        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(List.of(), outcome.edited());
        assertEquals(List.of("m2"), names(shade.active()));
        assertEquals("Bring the map", shade.active().get(0).text());
    }

    @Test
    void aRetractedMessageIsNeverShownAgainInAnyWords() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        client.onMessageReceived(RetractClientTest.retraction("[\"m1\"]"), shade);
        // FCM delivered the original again late, and Firebase showed it: no app code ran.
        shade.post(new ShownNotification("m1", 0, null, null, "fcm_fallback_notification_channel", "Ada", "See you at 8?"));

        MessageOutcome outcome = client.onMessageReceived(edit("m1", "{\"body\":\"See you at 9?\"}"), shade);

        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertTrue(outcome.retractedBefore());
        assertEquals(List.of(), outcome.edited());
        assertEquals(List.of("m1"), names(outcome.removed()), "the late original goes, as with any message of Retract's");
        assertEquals(List.of(), shade.active());
    }

    @Test
    void theRemovalFlagMakesItARetractionAndTheEditIsIgnored() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        MessageOutcome outcome = client.onMessageReceived(Map.of("notificationCustomData",
                "{\"pushNotificationReferenceId\":\"m1\",\"isReferredNotificationMustRemoved\":true,\"pushNotificationEdit\":{\"body\":\"x\"}}"),
                shade);
        assertEquals(MessageOutcome.Kind.RETRACTION, outcome.kind());
        assertNull(outcome.edit());
        assertEquals(List.of(), outcome.edited());
        assertEquals(List.of("m1"), names(outcome.removed()));
        assertEquals(List.of(), shade.active());
    }

    @Test
    void anEditWithoutAReferenceDoesNothing() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        MessageOutcome outcome = client.onMessageReceived(
                Map.of("notificationCustomData", "{\"pushNotificationThreadId\":\"c-1\",\"pushNotificationEdit\":{\"body\":\"x\"}}"), shade);
        assertEquals(MessageOutcome.Kind.NOT_RETRACT, outcome.kind());
        assertNull(outcome.edit());
        assertEquals("See you at 8?", shade.active().get(0).text());
    }

    @Test
    void aTitleOfAnotherTypeIsLeftOutAndTheEditStillCounts() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        MessageOutcome outcome = client.onMessageReceived(edit("m1", "{\"title\":7,\"body\":\"See you at 9?\"}"), shade);
        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(new NotificationEdit(null, "See you at 9?"), outcome.edit());
        assertEquals(List.of("notificationCustomData.pushNotificationEdit.title: expected a string, found an integer"),
                descriptions(outcome.diagnostics()));
        assertEquals("Ada", shade.active().get(0).title());
        assertEquals("See you at 9?", shade.active().get(0).text());
    }

    @Test
    void anEditWithoutABodyIsNoEdit() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        for (String edit : List.of("{\"title\":\"Ada\"}", "{\"title\":\"Ada\",\"body\":null}")) {
            MessageOutcome outcome = client.onMessageReceived(edit("m1", edit), shade);
            assertNull(outcome.edit(), edit);
            assertEquals(List.of("notificationCustomData.pushNotificationEdit.body: an edit needs a body"), descriptions(outcome.diagnostics()));
        }
        MessageOutcome wrong = client.onMessageReceived(edit("m1", "{\"body\":[\"x\"]}"), shade);
        assertNull(wrong.edit());
        assertEquals(List.of("notificationCustomData.pushNotificationEdit.body: expected a string, found an array"), descriptions(wrong.diagnostics()));
        assertEquals("See you at 8?", shade.active().get(0).text());
    }

    @Test
    void anEditThatIsNotAnObjectIsLeftOut() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?")));
        String expected = "expected an object with a body, or a JSON object in a string, found ";
        Map<String, String> cases = Map.of("42", "an integer", "[\"x\"]", "an array", "\"{broken\"", "a string that is not JSON",
                "\"[1]\"", "a string holding an array", "null", "");
        for (Map.Entry<String, String> edit : cases.entrySet()) {
            MessageOutcome outcome = client.onMessageReceived(edit("m1", edit.getKey()), shade);
            assertNull(outcome.edit(), edit.getKey());
            List<String> problems = edit.getValue().isEmpty()
                    ? List.of()
                    : List.of("notificationCustomData.pushNotificationEdit: " + expected + edit.getValue());
            assertEquals(problems, descriptions(outcome.diagnostics()), edit.getKey());
        }
        assertEquals("See you at 8?", shade.active().get(0).text());
    }

    @Test
    void theFlatFcmFormCarriesTheEditAsAJsonString() {
        InMemoryShade shade = new InMemoryShade(List.of(posted("m1", "c-1", "Ada", "See you at 8?"), posted("m2", "c-1", "Ada", "Bring the map")));
        MessageOutcome outcome = client.onMessageReceived(Map.of("pushNotificationReferenceIds", "[\"m1\",\"m2\"]",
                "pushNotificationEdit", "{\"title\":\"Ada\",\"body\":\"(edited)\"}"), shade);
        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(List.of("m1", "m2"), names(outcome.edited()));
        assertEquals(List.of("(edited)", "(edited)"), shade.active().stream().map(ShownNotification::text).collect(Collectors.toList()));

        MessageOutcome bad = client.onMessageReceived(Map.of("pushNotificationReferenceId", "m1", "pushNotificationEdit", "see you"), shade);
        assertNull(bad.edit());
        assertEquals(List.of("pushNotificationEdit"), bad.diagnostics().stream().map(PayloadProblem::key).collect(Collectors.toList()));
    }

    @Test
    void theLegacyFormEditsByItsIntegerReference() {
        InMemoryShade shade = new InMemoryShade(List.of(new ShownNotification("233", 0, null, null, "messages", "Spring sale", "20% off"),
                new ShownNotification("sale", 7, Map.of("notifcationCustomData", "{\"pushNotificationReferanceId\":233}"), null, "messages",
                        "Spring sale", "20% off")));
        MessageOutcome outcome = client.onMessageReceived(
                Map.of("notifcationCustomData", "{\"pushNotificationReferanceId\":233,\"pushNotificationEdit\":{\"body\":\"30% off\"}}"), shade);
        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(List.of("233", "sale#7"), names(outcome.edited()));
        assertEquals(List.of("30% off", "30% off"), shade.active().stream().map(ShownNotification::text).collect(Collectors.toList()));
        assertEquals(List.of("Spring sale", "Spring sale"), shade.active().stream().map(ShownNotification::title).collect(Collectors.toList()));
    }

    @Test
    void theFirstEditReadWinsWhenBothCustomDataKeysCarryOneAndEachIsDiagnosed() {
        PushReading reading = RetractPayload.read(Map.of(
                "notificationCustomData", "{\"pushNotificationReferenceId\":\"m1\",\"pushNotificationEdit\":{\"body\":\"canonical\"}}",
                "notifcationCustomData", "{\"pushNotificationReferanceId\":233,\"pushNotificationEdit\":{\"body\":\"legacy\"}}"));
        assertTrue(reading.isEdit());
        assertFalse(reading.isRetraction());
        assertEquals("canonical", reading.edit().body());
        assertEquals(List.of("m1", "233"), List.copyOf(reading.editedReferences()));

        PushReading unreadableFirst = RetractPayload.read(Map.of(
                "notificationCustomData", "{\"pushNotificationReferenceId\":\"m1\",\"pushNotificationEdit\":{\"body\":1}}",
                "notifcationCustomData", "{\"pushNotificationReferanceId\":233,\"pushNotificationEdit\":{\"title\":[],\"body\":\"legacy\"}}"));
        assertEquals(new NotificationEdit(null, "legacy"), unreadableFirst.edit());
        assertEquals(List.of("notificationCustomData.pushNotificationEdit.body", "notifcationCustomData.pushNotificationEdit.title"),
                unreadableFirst.diagnostics().stream().map(PayloadProblem::key).collect(Collectors.toList()));
    }

    static List<String> names(List<ShownNotification> notifications) {
        return RetractClientTest.names(notifications);
    }

    static List<String> descriptions(List<PayloadProblem> problems) {
        return problems.stream().map(PayloadProblem::description).collect(Collectors.toList());
    }
}
