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
        TreeSet<String> left = new TreeSet<>();
        for (ShownNotification notification : shade.active()) left.add(notification.name());
        TreeSet<String> expectedLeft = new TreeSet<>();
        for (ShownNotification notification : showing) expectedLeft.add(notification.name());
        expectedLeft.removeAll(removed);
        assertEquals(expectedLeft, left, "what stays showing");
        checkEdit(vector, outcome, showing, shade);
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
    private static void checkEdit(Map<String, Object> vector, MessageOutcome outcome, List<ShownNotification> before, InMemoryShade shade) {
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
        for (ShownNotification now : shade.active()) {
            ShownNotification then = was.get(now.name());
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

    @SuppressWarnings("unchecked")
    private static TreeSet<String> sorted(Object list) {
        return new TreeSet<>((List<String>) list);
    }
}
