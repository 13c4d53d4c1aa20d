package dev.retract.kit.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the simulator's Android phones and scripts/android-match print for an edit. */
class EditCommandsTest {
    @Test
    void aPhoneShowsTheNewWordsOfWhatFirebaseDisplayedAndNothingOfWhatItNeverShowed() throws Exception {
        String phone = "{\"device\":\"p1\",\"events\":["
                + "{\"display\":{\"tag\":\"m1\",\"id\":0,\"channel\":\"fcm_fallback_notification_channel\",\"title\":\"Ada\",\"body\":\"See you at 8?\"}},"
                + "{\"display\":{\"tag\":\"m2\",\"id\":0,\"channel\":\"fcm_fallback_notification_channel\",\"body\":\"Bring the map\"}},"
                + "{\"data\":{\"notificationCustomData\":\"{\\\"pushNotificationReferenceIds\\\":[\\\"m1\\\",\\\"m2\\\",\\\"m4\\\"],"
                + "\\\"pushNotificationEdit\\\":{\\\"body\\\":\\\"See you at 9?\\\"}}\"}}]}";
        assertEquals("{\"device\":\"p1\",\"showing\":["
                + "{\"name\":\"m1\",\"references\":[\"m1\"],\"title\":\"Ada\",\"text\":\"See you at 9?\"},"
                + "{\"name\":\"m2\",\"references\":[\"m2\"],\"title\":null,\"text\":\"See you at 9?\"}],\"alerts\":2,\"diagnostics\":0}",
                ReplayCommand.replay(phone));
    }

    @Test
    void aDisplayUnderATagShowingReplacesItAndARetractedMessageIsNotEdited() throws Exception {
        String phone = "{\"device\":\"p1\",\"events\":["
                + "{\"display\":{\"tag\":\"m1\",\"id\":0,\"title\":\"Ada\",\"body\":\"first\"}},"
                + "{\"display\":{\"tag\":\"m1\",\"id\":0,\"title\":\"Ada\",\"body\":\"second\"}},"
                + "{\"data\":{\"notificationCustomData\":\"{\\\"pushNotificationReferenceId\\\":\\\"m2\\\",\\\"isReferredNotificationMustRemoved\\\":true}\"}},"
                + "{\"display\":{\"tag\":\"m2\",\"id\":0,\"title\":\"Ada\",\"body\":\"late\"}},"
                + "{\"data\":{\"notificationCustomData\":\"{\\\"pushNotificationReferenceId\\\":\\\"m2\\\",\\\"pushNotificationEdit\\\":{\\\"body\\\":\\\"edited\\\"}}\"}}]}";
        assertEquals("{\"device\":\"p1\",\"showing\":[{\"name\":\"m1\",\"references\":[\"m1\"],\"title\":\"Ada\",\"text\":\"second\"}],\"alerts\":3,\"diagnostics\":0}",
                ReplayCommand.replay(phone));
    }

    @Test
    void anOriginalTheAppPostedIsEditedWithItsTitleKept() throws Exception {
        String phone = "{\"device\":\"p1\",\"events\":["
                + "{\"data\":{\"notificationCustomData\":\"{\\\"pushNotificationReferenceId\\\":\\\"m1\\\"}\",\"title\":\"Ada\",\"body\":\"See you at 8?\"}},"
                + "{\"data\":{\"pushNotificationReferenceId\":\"m1\",\"pushNotificationEdit\":\"{\\\"title\\\":true,\\\"body\\\":\\\"See you at 9?\\\"}\"}}]}";
        assertEquals("{\"device\":\"p1\",\"showing\":[{\"name\":\"m1\",\"references\":[\"m1\"],\"title\":\"Ada\",\"text\":\"See you at 9?\"}],\"alerts\":1,\"diagnostics\":1}",
                ReplayCommand.replay(phone));
    }

    @Test
    void matchPrintsTheEditAndWhatShowsIt(@TempDir Path folder) throws Exception {
        Path delivered = Files.writeString(folder.resolve("delivered.json"),
                "[{\"tag\": \"msg-8812\", \"id\": 0}, {\"tag\": \"c\", \"id\": 2, \"extras\": {\"pushNotificationReferenceId\": \"msg-8812\"}},"
                        + " {\"tag\": \"other\", \"id\": 0, \"group\": \"msg-8812\"}, {\"identifier\": \"msg-8812-ios\"}]");
        String edit = "{\"aps\":{\"content-available\":1},\"notificationCustomData\":{\"pushNotificationReferenceId\":\"msg-8812\","
                + "\"pushNotificationEdit\":{\"title\":\"Ada\",\"body\":\"See you at 9?\"}}}";
        assertEquals("{\"retraction\": false, \"references\": [\"msg-8812\"], \"threads\": [], \"remove\": [], "
                + "\"edit\": {\"title\": \"Ada\", \"body\": \"See you at 9?\"}, \"edited\": [\"c#2\", \"msg-8812\"], \"diagnostics\": []}",
                match(folder, edit, delivered));
        String untitled = "{\"pushNotificationReferenceId\":\"msg-8812\",\"pushNotificationEdit\":\"{\\\"body\\\":\\\"At 9, \u00e0 9 h\\\"}\"}";
        assertEquals("{\"retraction\": false, \"references\": [\"msg-8812\"], \"threads\": [], \"remove\": [], "
                + "\"edit\": {\"title\": null, \"body\": \"At 9, \u00e0 9 h\"}, \"edited\": [\"c#2\", \"msg-8812\"], \"diagnostics\": []}",
                match(folder, untitled, delivered));
        String removal = "{\"notificationCustomData\":{\"pushNotificationReferenceId\":\"msg-8812\",\"isReferredNotificationMustRemoved\":true,"
                + "\"pushNotificationEdit\":{\"body\":\"x\"}}}";
        assertEquals("{\"retraction\": true, \"references\": [\"msg-8812\"], \"threads\": [], \"remove\": [\"c#2\", \"msg-8812\"], \"diagnostics\": []}",
                match(folder, removal, delivered));
        String bodiless = "{\"notificationCustomData\":{\"pushNotificationReferenceId\":\"msg-8812\",\"pushNotificationEdit\":{\"title\":\"Ada\"}}}";
        assertEquals("{\"retraction\": false, \"references\": [], \"threads\": [], \"remove\": [], \"diagnostics\": ["
                + "{\"key\": \"notificationCustomData.pushNotificationEdit.body\", "
                + "\"problem\": \"notificationCustomData.pushNotificationEdit.body: an edit needs a body\"}]}",
                match(folder, bodiless, delivered));
    }

    private static String match(Path folder, String push, Path delivered) throws Exception {
        Path file = Files.writeString(folder.resolve("push.json"), push);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = MatchCommand.run(new String[] {"--push", file.toString(), "--delivered", delivered.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, status, err.toString(StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8).strip();
    }
}
