package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** Every case of Tests/Vectors/payloads.json, through the client an app calls: the contract RetractKit (Swift) is checked against. */
class VectorTest {
    static Path vectorsFile() {
        return Paths.get(System.getProperty("retract.vectors", "../../Tests/Vectors/payloads.json"));
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> cases() throws Exception {
        Object root = Json.parse(new String(Files.readAllBytes(vectorsFile()), StandardCharsets.UTF_8));
        return (List<Map<String, Object>>) ((Map<String, Object>) root).get("cases");
    }

    @TestFactory
    Stream<DynamicTest> everyVector() throws Exception {
        List<Map<String, Object>> cases = cases();
        assertTrue(cases.size() >= 46, "payloads.json has " + cases.size() + " cases");
        return cases.stream().map(vector -> DynamicTest.dynamicTest((String) vector.get("name"), () -> check(vector)));
    }

    @SuppressWarnings("unchecked")
    private static void check(Map<String, Object> vector) throws Exception {
        Map<String, Object> push = (Map<String, Object>) vector.get("push");
        List<ShownNotification> showing = new ArrayList<>();
        for (Object element : (List<Object>) vector.get("delivered")) {
            Map<String, Object> object = (Map<String, Object>) element;
            if (object.containsKey("identifier")) {
                showing.add(ShownNotification.ofIPhone((String) object.get("identifier"), (Map<String, Object>) object.get("userInfo"),
                        (String) object.get("threadIdentifier")));
            } else if (object.containsKey("conversation")) {
                showing.add(ShownNotification.ofConversation(conversation((Map<String, Object>) object.get("conversation")),
                        (String) object.get("group"), (String) object.get("channel")));
            } else {
                Object id = object.get("id");
                Object tag = object.get("tag");
                showing.add(new ShownNotification(tag instanceof String ? (String) tag : null, id == null ? 0 : Integer.parseInt(((JsonNumber) id).text()),
                        (Map<String, Object>) object.get("extras"), (String) object.get("group"), (String) object.get("channel")));
            }
        }
        InMemoryShade shade = new InMemoryShade(showing);
        MessageOutcome outcome = new RetractClient(null).onMessageReceived(push, shade);

        assertEquals(vector.get("retraction"), outcome.kind() == MessageOutcome.Kind.RETRACTION, "retraction");
        assertEquals(sorted(vector.get("references")), new TreeSet<>(outcome.references()), "references");
        assertEquals(sorted(vector.getOrDefault("threads", List.of())), new TreeSet<>(outcome.threads()), "threads");
        TreeSet<String> removed = new TreeSet<>();
        for (ShownNotification notification : outcome.removed()) removed.add(notification.name());
        assertEquals(sorted(vector.get("remove")), removed, "remove");
        assertEquals(vector.get("account"), outcome.account(), "account");
        Object badge = vector.get("badge");
        assertEquals(badge == null ? null : Integer.valueOf(((JsonNumber) badge).text()), outcome.badge(), "badge");
        List<String> rebuilt = new ArrayList<>();
        for (ShownNotification notification : outcome.rebuilt()) rebuilt.add(Json.write(rebuiltEntry(notification.conversation())));
        for (ShownNotification notification : outcome.edited()) {
            if (notification.conversation() != null) rebuilt.add(Json.write(rebuiltEntry(notification.conversation())));
        }
        List<String> expectedRebuilt = new ArrayList<>();
        for (Object entry : (List<Object>) vector.getOrDefault("rebuilt", List.of())) expectedRebuilt.add(Json.write(entry));
        rebuilt.sort(null);
        expectedRebuilt.sort(null);
        assertEquals(expectedRebuilt, rebuilt, "rebuilt");
        TreeSet<String> left = new TreeSet<>();
        for (ShownNotification notification : shade.active()) left.add(notification.name());
        TreeSet<String> expectedLeft = new TreeSet<>();
        for (ShownNotification notification : showing) expectedLeft.add(notification.name());
        expectedLeft.removeAll(removed);
        assertEquals(expectedLeft, left, "what stays showing");
        checkEdit(vector, outcome, showing, shade, removed);
        List<String> keys = new ArrayList<>();
        for (PayloadProblem problem : outcome.diagnostics()) keys.add(problem.key());
        keys.sort(null);
        List<String> expectedKeys = new ArrayList<>((List<String>) vector.get("diagnostics"));
        expectedKeys.sort(null);
        assertEquals(expectedKeys, keys, "diagnostics");
    }

    /**
     * {@code "edit"} (absent: the push is not an edit) and {@code "edited"}
     * (absent: none): the edit read, the notifications re-posted, and what
     * each shows now.
     */
    @SuppressWarnings("unchecked")
    private static void checkEdit(Map<String, Object> vector, MessageOutcome outcome, List<ShownNotification> before, InMemoryShade shade,
            Set<String> removed) {
        Map<String, Object> expected = (Map<String, Object>) vector.get("edit");
        if (expected == null) {
            assertNull(outcome.edit(), "edit");
            assertTrue(outcome.kind() != MessageOutcome.Kind.EDIT, "not an edit");
        } else {
            assertEquals(MessageOutcome.Kind.EDIT, outcome.kind(), "an edit");
            assertNotNull(outcome.edit(), "edit");
            Object title = expected.get("title");
            assertEquals(title == Json.NULL ? null : title, outcome.edit().title(), "edit.title");
            assertEquals(expected.get("body"), outcome.edit().body(), "edit.body");
        }
        TreeSet<String> edited = new TreeSet<>();
        for (ShownNotification notification : outcome.edited()) edited.add(notification.name());
        assertEquals(sorted(vector.getOrDefault("edited", List.of())), edited, "edited");
        Map<String, ShownNotification> was = new LinkedHashMap<>();
        for (ShownNotification notification : before) was.put(notification.name(), notification);
        Set<String> rebuilt = new java.util.HashSet<>();
        for (ShownNotification notification : outcome.rebuilt()) rebuilt.add(notification.name());
        for (ShownNotification now : shade.active()) {
            ShownNotification then = was.get(now.name());
            if (now.conversation() != null && (rebuilt.contains(now.name()) || edited.contains(now.name()))) {
                // Re-posted silently, in its place (what it holds now is checked against the case's "rebuilt").
                List<String> order = new ArrayList<>();
                for (ShownNotification notification : before) {
                    if (!removed.contains(notification.name())) order.add(notification.name());
                }
                List<String> after = new ArrayList<>();
                for (ShownNotification notification : shade.active()) after.add(notification.name());
                assertEquals(order.indexOf(now.name()), after.indexOf(now.name()), now.name() + " stays in its place");
                assertEquals(then.conversation().thread(), now.conversation().thread(), now.name() + "'s conversation");
                continue;
            }
            if (!edited.contains(now.name())) {
                assertEquals(then, now, now.name() + " is left as it was");
                continue;
            }
            String title = outcome.edit().title() != null ? outcome.edit().title() : then.title();
            assertEquals(then.edited(title, outcome.edit().body()), now, now.name() + " shows the edit");
            assertEquals(title, now.title(), now.name() + "'s title");
            assertEquals(outcome.edit().body(), now.text(), now.name() + "'s text");
        }
    }

    /** A case's {@code "conversation"}, as the file writes it. */
    @SuppressWarnings("unchecked")
    static Conversation conversation(Map<String, Object> object) {
        List<ConversationMessage> messages = new ArrayList<>();
        for (Object element : (List<Object>) object.get("messages")) {
            Map<String, Object> message = (Map<String, Object>) element;
            Object reference = message.get("reference");
            messages.add(new ConversationMessage(reference instanceof JsonNumber ? ((JsonNumber) reference).text() : (String) reference,
                    (String) message.get("text"), (String) message.get("sender"), messages.size()));
        }
        return new Conversation((String) object.get("account"), (String) object.get("thread"), null, false, messages);
    }

    /** A conversation as a case's {@code "rebuilt"} writes it. */
    static Map<String, Object> rebuiltEntry(Conversation conversation) {
        List<Object> messages = new ArrayList<>();
        for (ConversationMessage message : conversation.messages()) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("reference", message.reference());
            entry.put("text", message.text());
            messages.add(entry);
        }
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("name", conversation.tag());
        entry.put("messages", messages);
        return entry;
    }

    @SuppressWarnings("unchecked")
    private static TreeSet<String> sorted(Object list) {
        return new TreeSet<>((List<String>) list);
    }
}
