package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Conversation notifications through the path an app takes: originals
 * Retract sent for the app to show go into their conversation's notification
 * ({@link Conversations#post}), and retractions, edits and thread retractions
 * through {@link RetractClient#onMessageReceived} change it, over a shade that
 * behaves as Android's and counts the posts that alert.
 */
class ConversationTest {
    private final Conversations conversations = new Conversations();
    private final RetractClient client = new RetractClient(new Tombstones(TextStorage.inMemory()), conversations);
    private final InMemoryShade shade = new InMemoryShade();

    /** What Retract sends an Android phone for the app to show: a data message with the custom data as JSON text. */
    static Map<String, String> original(String reference, String thread, String account, String sender, String text) {
        String accountField = account == null ? "" : ",\"pushNotificationAccount\":\"" + account + "\"";
        return Map.of("notificationCustomData",
                "{\"pushNotificationReferenceId\":\"" + reference + "\",\"pushNotificationThreadId\":\"" + thread + "\"" + accountField + "}",
                "title", sender, "body", text);
    }

    static Map<String, String> retraction(String customData) {
        return Map.of("notificationCustomData", "{" + customData + ",\"isReferredNotificationMustRemoved\":true}");
    }

    /** Receives an original as an app showing conversations does. */
    private void receive(Map<String, String> data, long at) throws Exception {
        MessageOutcome outcome = client.onMessageReceived(data, shade);
        assertEquals(MessageOutcome.Kind.ORIGINAL, outcome.kind());
        conversations.post(outcome.original(), at, shade);
    }

    private void threeMessagesOfConversationC1() throws Exception {
        receive(original("m1", "c-1", null, "Ada", "Are we on?"), 1_000);
        receive(original("m2", "c-1", null, "Ada", "Wrong chat, sorry"), 2_000);
        receive(original("m3", "c-1", null, "Grace", "Yes, at 9"), 3_000);
    }

    static List<String> references(ShownNotification notification) {
        List<String> references = new ArrayList<>();
        for (ConversationMessage message : notification.conversation().messages()) references.add(message.reference());
        return references;
    }

    @Test
    void threeMessagesOfAConversationShowAsOneNotificationThatAlertedThrice() throws Exception {
        threeMessagesOfConversationC1();
        assertEquals(1, shade.active().size());
        ShownNotification shown = shade.active().get(0);
        assertEquals("conversation:c-1", shown.tag());
        assertEquals(List.of("m1", "m2", "m3"), references(shown));
        assertEquals("Yes, at 9", shown.text());
        assertEquals(3, shade.alerts());
        // The notification keeps what it shows in its extras: a later process reads the same conversation there.
        assertEquals(shown.conversation(), Conversation.fromJson((String) shown.extras().get(Conversation.EXTRA_CONVERSATION)));
    }

    @Test
    void retractingOneMessageRepostsTheConversationWithoutItAndAlertsNoOne() throws Exception {
        threeMessagesOfConversationC1();
        MessageOutcome outcome = client.onMessageReceived(retraction("\"pushNotificationReferenceId\":\"m2\""), shade);

        assertEquals(MessageOutcome.Kind.RETRACTION, outcome.kind());
        assertEquals(List.of(), outcome.removed());
        assertEquals(1, outcome.rebuilt().size());
        ShownNotification shown = shade.active().get(0);
        assertEquals(List.of("m1", "m3"), references(shown));
        assertEquals(shown, outcome.rebuilt().get(0));
        assertEquals(3, shade.alerts(), "the re-post alerts only once: no new alert");
        Conversation kept = Conversation.fromJson((String) shade.active().get(0).extras().get(Conversation.EXTRA_CONVERSATION));
        assertEquals(List.of("m1", "m3"), references(ShownNotification.ofConversation(kept, null, null)));
    }

    @Test
    void anEditChangesOneLineSilently() throws Exception {
        threeMessagesOfConversationC1();
        MessageOutcome outcome = client.onMessageReceived(
                Map.of("notificationCustomData", "{\"pushNotificationReferenceId\":\"m1\",\"pushNotificationEdit\":{\"body\":\"Are we on at 9?\"}}"),
                shade);

        assertEquals(MessageOutcome.Kind.EDIT, outcome.kind());
        assertEquals(1, outcome.edited().size());
        List<ConversationMessage> messages = shade.active().get(0).conversation().messages();
        assertEquals("Are we on at 9?", messages.get(0).text());
        assertEquals("Wrong chat, sorry", messages.get(1).text());
        assertEquals("Yes, at 9", messages.get(2).text());
        assertEquals("Ada", messages.get(0).sender());
        assertEquals(3, shade.alerts());
    }

    @Test
    void theLastMessageRetractedCancelsItAndAThreadRetractionClearsIt() throws Exception {
        receive(original("m1", "c-1", null, "Ada", "hi"), 1_000);
        receive(original("m9", "c-2", null, "Bob", "other chat"), 2_000);
        MessageOutcome last = client.onMessageReceived(retraction("\"pushNotificationReferenceId\":\"m1\""), shade);
        assertEquals(List.of("conversation:c-1"), names(last.removed()));

        receive(original("m2", "c-1", null, "Ada", "again"), 3_000);
        receive(original("m3", "c-1", null, "Ada", "and again"), 4_000);
        MessageOutcome thread = client.onMessageReceived(retraction("\"pushNotificationThreadIds\":[\"c-1\"]"), shade);
        assertEquals(List.of("conversation:c-1"), names(thread.removed()));
        assertEquals(List.of("conversation:c-2"), names(shade.active()));
    }

    @Test
    void aConversationTheUserDismissedStartsAnewWithItsNextMessage() throws Exception {
        threeMessagesOfConversationC1();
        shade.cancel(shade.active().get(0));
        receive(original("m4", "c-1", null, "Ada", "Still there?"), 4_000);
        assertEquals(List.of("m4"), references(shade.active().get(0)));
    }

    @Test
    void aMessageRetractedBeforeItArrivesNeverJoinsItsConversation() throws Exception {
        receive(original("m1", "c-1", null, "Ada", "hi"), 1_000);
        client.onMessageReceived(retraction("\"pushNotificationReferenceId\":\"m2\""), shade);
        MessageOutcome late = client.onMessageReceived(original("m2", "c-1", null, "Ada", "oops"), shade);
        assertEquals(MessageOutcome.Kind.RETRACTED_ORIGINAL, late.kind());
        assertEquals(List.of("m1"), references(shade.active().get(0)));
    }

    @Test
    void aConversationKeepsItsLastMessagesOnly() throws Exception {
        for (int index = 0; index < Conversation.MAXIMUM_MESSAGES + 5; index++) {
            receive(original("m" + index, "c-1", null, "Ada", "n" + index), index);
        }
        List<String> references = references(shade.active().get(0));
        assertEquals(Conversation.MAXIMUM_MESSAGES, references.size());
        assertEquals("m5", references.get(0));
    }

    @Test
    void aRetractionOfOneAccountLeavesTheOtherAccountsMessageWithTheSameReference() throws Exception {
        receive(original("233", "general", "acme", "Ada", "acme's 233"), 1_000);
        receive(original("234", "general", "acme", "Ada", "acme's 234"), 2_000);
        receive(original("233", "general", "globex", "Bob", "globex's 233"), 3_000);
        // Two accounts' "general" are two conversations.
        assertEquals(List.of("conversation:acme/general", "conversation:globex/general"), names(shade.active()));

        MessageOutcome outcome = client.onMessageReceived(
                retraction("\"pushNotificationReferenceId\":\"233\",\"pushNotificationAccount\":\"acme\""), shade);
        assertEquals("acme", outcome.account());
        assertEquals(List.of("234"), references(shade.active().get(0)));
        assertEquals(List.of("233"), references(shade.active().get(1)));
        // The app's only account (no account) touches neither.
        client.onMessageReceived(retraction("\"pushNotificationReferenceId\":\"234\""), shade);
        assertEquals(List.of("234"), references(shade.active().get(0)));
        // A thread retraction of globex clears globex's general only.
        client.onMessageReceived(retraction("\"pushNotificationThreadIds\":[\"general\"],\"pushNotificationAccount\":\"globex\""), shade);
        assertEquals(List.of("conversation:acme/general"), names(shade.active()));
    }

    @Test
    void perMessageNotificationsOfTwoAccountsAreTaggedApartAndRetractedApart() {
        RetractClient perMessage = new RetractClient(new Tombstones(TextStorage.inMemory()));
        InMemoryShade messages = new InMemoryShade();
        for (String account : List.of("acme", "globex")) {
            MessageOutcome outcome = perMessage.onMessageReceived(original("233", "general", account, "Ada", account), messages);
            messages.post(outcome.original().shown(0, "messages"));
        }
        assertEquals(List.of("acme/233", "globex/233"), names(messages.active()));
        assertEquals("acme/general", messages.active().get(0).group());
        MessageOutcome outcome = perMessage.onMessageReceived(
                retraction("\"pushNotificationReferenceId\":233,\"pushNotificationAccount\":\"globex\""), messages);
        assertEquals(List.of("globex/233"), names(outcome.removed()));
        assertEquals(List.of("acme/233"), names(messages.active()));
        // A late original of globex's 233 meets globex's tombstone; acme's would not.
        assertEquals(MessageOutcome.Kind.RETRACTED_ORIGINAL,
                perMessage.onMessageReceived(original("233", "general", "globex", "Ada", "again"), messages).kind());
        assertEquals(MessageOutcome.Kind.ORIGINAL,
                perMessage.onMessageReceived(original("233", "general", "acme", "Ada", "again"), messages).kind());
    }

    @Test
    void aConversationReadsBackFromItsExtrasAsItWasWritten() {
        Conversation written = new Conversation("a/b", "c-1", "Team", true, List.of(
                new ConversationMessage("m1", "hi \"there\"", "Ada", 1_700_000_000_000L), new ConversationMessage("m2", "", null, 5)));
        assertEquals(written, Conversation.fromJson(written.toJson()));
        assertNull(Conversation.fromJson("{not json"));
        assertNull(Conversation.fromJson("{\"thread\":\"c-1\"}"));
        // Two processes, one conversation: the one a retraction reads is the one the notification shows.
        assertTrue(written.toJson().contains("\"account\":\"a/b\""));
    }

    static List<String> names(List<ShownNotification> notifications) {
        List<String> names = new ArrayList<>();
        for (ShownNotification notification : notifications) names.add(notification.name());
        return names;
    }
}
