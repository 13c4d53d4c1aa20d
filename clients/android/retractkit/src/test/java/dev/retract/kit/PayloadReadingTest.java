package dev.retract.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Reading FCM data maps as RemoteMessage.getData() gives them: every value a string. */
class PayloadReadingTest {
    @Test
    void theRetractionRetractSendsThroughFcmIsReadFromItsStringMap() {
        // What FCMMessage puts in `data` for a background retraction: the custom data as its JSON text.
        Map<String, String> data = Map.of("notificationCustomData",
                "{\"isReferredNotificationMustRemoved\":true,\"pushNotificationReferenceIds\":[\"m1\",\"m2\"],\"pushNotificationThreadIds\":[\"c-9\"]}");
        PushReading reading = RetractPayload.read(data);
        assertTrue(reading.isRetraction());
        assertEquals(Set.of("m1", "m2"), reading.retractedReferences());
        assertEquals(Set.of("c-9"), reading.retractedThreads());
        assertTrue(reading.diagnostics().isEmpty());
    }

    @Test
    void aNullMapOrAnEmptyOneIsNotARetraction() {
        assertFalse(RetractPayload.read(null).isRetraction());
        assertNull(RetractPayload.read(Map.of()).customData());
        assertFalse(RetractPayload.read(Map.of("chat", "hello")).isRetraction());
    }

    @Test
    void hostileValuesAreReportedNeverThrown() {
        String deep = "[".repeat(100_000);
        Map<String, Object> data = new HashMap<>();
        data.put("notificationCustomData", deep);
        data.put("notifcationCustomData", "{\"pushNotificationReferenceIds\": " + "[".repeat(600) + "]".repeat(600) + "}");
        data.put("pushNotificationReferenceId", "m1");
        PushReading reading = RetractPayload.read(data);
        assertFalse(reading.isRetraction());
        assertEquals(List.of("notificationCustomData", "notifcationCustomData"), keys(reading));
    }

    @Test
    void numbersAreJudgedAsRetractKitJudgesThem() throws Exception {
        assertEquals("235", new JsonNumber("235.0").integerText());
        assertEquals("1000", new JsonNumber("1e3").integerText());
        assertEquals("18446744073709551615", new JsonNumber("18446744073709551615").integerText());
        assertNull(new JsonNumber("18446744073709551616").integerText());
        assertNull(new JsonNumber("1.5").integerText());
        assertEquals("1e+20", JsonNumber.swiftDescription(1e20));
        assertEquals("1.5", JsonNumber.swiftDescription(1.5));
        assertEquals("1e-05", JsonNumber.swiftDescription(0.00001));
        assertEquals("0.0001", JsonNumber.swiftDescription(0.0001));
        assertEquals("1.2345678901234567e+19", JsonNumber.swiftDescription(12345678901234567890.0));
        assertEquals("1000000000000000.0", JsonNumber.swiftDescription(1e15));
    }

    @Test
    void aFlagInAnyAcceptedFormAndTheOthersReported() {
        for (String yes : List.of("true", "1")) {
            assertTrue(RetractPayload.read(Map.of("pushNotificationReferenceId", "m", "isReferredNotificationMustRemoved", yes)).isRetraction());
        }
        for (String no : List.of("false", "0")) {
            assertFalse(RetractPayload.read(Map.of("pushNotificationReferenceId", "m", "isReferredNotificationMustRemoved", no)).isRetraction());
        }
        PushReading reading = RetractPayload.read(Map.of("pushNotificationReferenceId", "m", "isReferredNotificationMustRemoved", "True"));
        assertFalse(reading.isRetraction());
        assertEquals("isReferredNotificationMustRemoved: \"True\" is not a removal flag (true, 1 or \"true\")",
                reading.diagnostics().get(0).description());
    }

    @Test
    void numbersAreReadExactlyWhereSwiftReadsThemAsDecimals() {
        // Swift's parser on Linux reads a number as a decimal when its text before a lowercase e is longer than 17 characters.
        assertEquals("9007199254740993", new JsonNumber("9007199254740993.0").integerText());
        assertEquals("123456789012345678", new JsonNumber("123456789012345678E0").integerText());
        assertEquals("9007199254740992", new JsonNumber("9.007199254740993e15").integerText());
        assertEquals("9007199254740992", new JsonNumber("900719925474099.3e1").integerText());
        assertEquals("-9007199254740993", new JsonNumber("-900719925474099.3e1").integerText());
        assertEquals("12345678901234565", new JsonNumber("1234567890123456.5e1").integerText());
        assertEquals("9223372036854775808", new JsonNumber("9223372036854775808.0").integerText());
        assertEquals("18446744073709551615", new JsonNumber("18446744073709551615e0").integerText());
        // Written as Swift writes a double: the fewest digits that read back.
        assertEquals("5.65e+21", JsonNumber.swiftDescription(5.65e21));
        assertEquals("2.83584e+23", JsonNumber.swiftDescription(2.83584e23));
        assertEquals("5e-324", JsonNumber.swiftDescription(Double.MIN_VALUE));
    }

    @Test
    void aNumberInAnAndroidBundleThatIsNotANumberIsReportedNotThrown() {
        Map<String, Object> extras = new HashMap<>();
        extras.put("pushNotificationReferenceIds", List.of(Double.NaN, Float.POSITIVE_INFINITY, "m1"));
        extras.put("pushNotificationReferenceId", Double.NaN);
        PushReading reading = RetractPayload.read(extras);
        assertEquals(List.of("m1"), reading.customData().references());
        assertEquals(3, reading.diagnostics().size());
        assertEquals("pushNotificationReferenceId: nan is not an integer reference", reading.diagnostics().get(0).description());
    }

    @Test
    void jsonTextIsReadAsSwiftReadsIt() throws Exception {
        // Taken, as Swift's JSONSerialization takes them.
        assertEquals(List.of("a", "b"), Json.parse("[\"a\",\"b\",]"));
        assertEquals(Map.of("a", new JsonNumber("1")), Json.parse("{\"a\":1,}"));
        assertEquals(List.of("a"), Json.parse("\uFEFF[\"a\"]"));
        assertEquals(List.of("\uD83D\uDE00"), Json.parse("[\"\\ud83d\\ude00\"]"));
        Json.parse("[".repeat(512) + "]".repeat(512));
        // Refused, as Swift refuses them.
        assertRefused(List.of("[1e400]", "[\"\\ud800\"]", "[\"\\udc00\"]", "[\"\\u+041\"]", "[\"\\u-001\"]", "[,]", "{,}",
                "[".repeat(513) + "]".repeat(513)));
    }

    /** Each of {@code texts} is refused, the message saying where. */
    private static void assertRefused(List<String> texts) {
        for (String broken : texts) {
            try {
                Json.parse(broken);
                throw new AssertionError("parsed " + broken);
            } catch (Json.SyntaxError expected) {
                assertTrue(expected.getMessage().contains("at character"), expected.getMessage());
            }
        }
    }

    @Test
    void canonicallyEquivalentReferencesAreOneReference() {
        PushReading reading = RetractPayload.read(Map.of("notificationCustomData",
                "{\"pushNotificationReferenceIds\":[\"e\u0301\",\"\u00e9\",\"f\"],\"isReferredNotificationMustRemoved\":true}"));
        assertEquals(List.of("e\u0301", "f"), List.copyOf(reading.retractedReferences()));
        ShownNotification tagged = new ShownNotification("\u00e9", 0, null, null, null);
        assertTrue(tagged.isRetractedBy(reading.retractedReferences(), Set.of()));
    }

    @Test
    void jsonTextIsReadStrictly() {
        assertRefused(List.of("", "{", "{\"a\":}", "01", "1.", "\"\\x\"", "{\"a\":1} x", "tru", "\"\u0001\""));
    }

    @Test
    void quotingMatchesRetractsSwiftWriter() {
        assertEquals("\"a\\\"b\\\\c\\n\\u0001é/\"", Json.quote("a\"b\\c\n\u0001é/"));
    }

    private static List<String> keys(PushReading reading) {
        return reading.diagnostics().stream().map(PayloadProblem::key).collect(java.util.stream.Collectors.toList());
    }
}
