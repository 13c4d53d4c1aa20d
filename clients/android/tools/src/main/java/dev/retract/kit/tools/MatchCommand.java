package dev.retract.kit.tools;

import dev.retract.kit.CanonicalText;
import dev.retract.kit.Conversation;
import dev.retract.kit.ConversationMessage;
import dev.retract.kit.MessageOutcome;
import dev.retract.kit.InMemoryShade;
import dev.retract.kit.Json;
import dev.retract.kit.JsonNumber;
import dev.retract.kit.NotificationEdit;
import dev.retract.kit.PayloadProblem;
import dev.retract.kit.PushReading;
import dev.retract.kit.RetractClient;
import dev.retract.kit.RetractPayload;
import dev.retract.kit.ShownNotification;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * {@code match --push PUSH.json --delivered DELIVERED.json}: what an Android
 * phone running the library removes, or edits, for a push. The same options,
 * output and exit codes as {@code retract match}.
 */
final class MatchCommand {
    static final String HELP = String.join("\n",
            "usage: scripts/android-match --push PUSH.json --delivered DELIVERED.json",
            "",
            "Shows what an Android phone running RetractKit for Android removes, or edits, for a push: the same",
            "interface, output and exit codes as `retract match`.",
            "",
            "PUSH is the FCM message's data map (every value a string), or any push's JSON object",
            "(an iPhone's userInfo too). DELIVERED is an array of the notifications showing, each either",
            "  an Android notification: {\"tag\": \"msg-8812\", \"id\": 0, \"extras\": {...}, \"group\": \"c-1\", \"channel\": \"messages\"}",
            "    (StatusBarNotification's getTag(), getId(), the notification's extras, getGroup(), getChannelId();",
            "    every key optional but one of tag and id; a Firebase-displayed original has its tag and id 0",
            "    and no extras), named in the output by its tag, tag#id when the id is not 0, #id without a tag;",
            "    a conversation notification (the library's MessagingStyle model) adds \"conversation\": {\"thread\": \"c-1\",",
            "    \"account\": \"...\", \"messages\": [{\"reference\": \"m1\", \"text\": \"...\", \"sender\": \"...\"}]} (account and",
            "    sender optional; its tag, when given, is \"conversation:\" and the thread, within its account);",
            "  or an iPhone's, as `retract match` takes it: {\"identifier\": \"...\", \"userInfo\": {...},",
            "    \"threadIdentifier\": \"...\"}, named by its identifier.",
            "",
            "Prints one JSON object: {\"retraction\": true|false, \"references\": [...], \"threads\": [...],",
            "\"remove\": [...], \"diagnostics\": [{\"key\": \"...\", \"problem\": \"...\"}]}, with \"account\" after \"threads\" when the",
            "push names one, and \"rebuilt\": [{\"name\": ..., \"messages\": [{\"reference\": ..., \"text\": ...}]}] after \"remove\"",
            "when conversations were re-posted without some messages or with an edit's words; for an edit (pushNotificationEdit,",
            "no removal flag), also \"edit\": {\"title\": \"...\" or null, \"body\": \"...\"} and \"edited\": [...], the notifications",
            "that now show its words, before \"diagnostics\", with the edit's references as \"references\". A value a",
            "phone cannot read is left out and the rest of the push is read; each such value is a diagnostic, also",
            "printed on stderr.",
            "",
            "Exit codes: 0 done; 2 a file is missing, unreadable, not JSON or not of the expected shape;",
            "64 a bad argument.");

    private MatchCommand() {}

    static int run(String[] arguments, PrintStream out, PrintStream err) {
        String pushPath = null;
        String deliveredPath = null;
        for (int index = 0; index < arguments.length; index++) {
            String argument = arguments[index];
            if (argument.equals("-h") || argument.equals("--help")) {
                out.println(HELP);
                return 0;
            }
            boolean push = argument.equals("--push");
            if (!push && !argument.equals("--delivered")) {
                err.println("android-match: unknown argument '" + argument + "'\n" + HELP);
                return 64;
            }
            if (index + 1 >= arguments.length) {
                err.println("android-match: " + argument + " needs a file");
                return 64;
            }
            if (push) pushPath = arguments[++index]; else deliveredPath = arguments[++index];
        }
        if (pushPath == null || deliveredPath == null) {
            err.println("android-match: both --push and --delivered are needed\n" + HELP);
            return 64;
        }
        Map<String, Object> push;
        List<ShownNotification> delivered;
        try {
            push = readPush(pushPath);
            delivered = readDelivered(deliveredPath);
        } catch (InputProblem problem) {
            err.println("android-match: " + problem.getMessage());
            return 2;
        }
        PushReading reading = RetractPayload.read(push);
        for (PayloadProblem problem : reading.diagnostics()) {
            err.println("android-match: warning: " + pushPath + ": " + problem);
        }
        List<String> removed = new ArrayList<>();
        List<String> edited = new ArrayList<>();
        List<Conversation> rebuilt = new ArrayList<>();
        InMemoryShade shade = new InMemoryShade(delivered);
        MessageOutcome outcome = new RetractClient(null).onMessageReceived(push, shade);
        if (reading.isRetraction()) {
            for (ShownNotification notification : outcome.removed()) removed.add(notification.name());
            for (ShownNotification notification : outcome.rebuilt()) rebuilt.add(notification.conversation());
        } else if (reading.isEdit()) {
            for (ShownNotification notification : outcome.edited()) {
                edited.add(notification.name());
                if (notification.conversation() != null) rebuilt.add(notification.conversation());
            }
        }
        Collection<String> references = reading.isEdit() ? reading.editedReferences() : reading.retractedReferences();
        out.println(report(reading.isRetraction(), references, reading.retractedThreads(), reading.account(), removed, rebuilt,
                reading.edit(), edited, reading.diagnostics()));
        return 0;
    }

    /**
     * The line {@code retract match} prints, keys in its order, lists sorted;
     * {@code "edit"} and {@code "edited"} only for an edit ({@code edit} not null).
     */
    static String report(boolean retraction, Collection<String> references, Collection<String> threads, String account,
            Collection<String> removed, List<Conversation> rebuilt, NotificationEdit edit, Collection<String> edited,
            List<PayloadProblem> diagnostics) {
        List<String> problems = new ArrayList<>();
        for (PayloadProblem problem : diagnostics) {
            problems.add("{\"key\": " + Json.quote(problem.key()) + ", \"problem\": " + Json.quote(problem.description()) + "}");
        }
        String editing = edit == null ? ""
                : "\"edit\": {\"title\": " + (edit.title() == null ? "null" : Json.quote(edit.title())) + ", \"body\": "
                        + Json.quote(edit.body()) + "}, \"edited\": " + list(edited) + ", ";
        String named = account == null ? "" : ", \"account\": " + Json.quote(account);
        String conversations = "";
        if (!rebuilt.isEmpty()) {
            List<Conversation> sorted = new ArrayList<>(rebuilt);
            sorted.sort((one, other) -> CanonicalText.compare(one.tag(), other.tag()));
            List<String> entries = new ArrayList<>();
            for (Conversation conversation : sorted) {
                List<String> messages = new ArrayList<>();
                for (ConversationMessage message : conversation.messages()) {
                    messages.add("{\"reference\": " + Json.quote(message.reference()) + ", \"text\": " + Json.quote(message.text()) + "}");
                }
                entries.add("{\"name\": " + Json.quote(conversation.tag()) + ", \"messages\": [" + String.join(", ", messages) + "]}");
            }
            conversations = "\"rebuilt\": [" + String.join(", ", entries) + "], ";
        }
        return "{\"retraction\": " + retraction + ", \"references\": " + list(references) + ", \"threads\": " + list(threads)
                + named + ", \"remove\": " + list(removed) + ", " + conversations + editing + "\"diagnostics\": ["
                + String.join(", ", problems) + "]}";
    }

    /** Sorted as Swift sorts strings: by their NFC forms' code points. */
    private static String list(Collection<String> strings) {
        List<String> sorted = new ArrayList<>(strings);
        sorted.sort(CanonicalText::compare);
        List<String> quoted = new ArrayList<>();
        for (String string : sorted) quoted.add(Json.quote(string));
        return "[" + String.join(", ", quoted) + "]";
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> readPush(String path) throws InputProblem {
        Object json = readJson(path);
        if (!(json instanceof Map)) {
            throw new InputProblem(path + ": expected a JSON object (the push's userInfo), found " + kind(json));
        }
        return (Map<String, Object>) json;
    }

    @SuppressWarnings("unchecked")
    static List<ShownNotification> readDelivered(String path) throws InputProblem {
        Object json = readJson(path);
        if (!(json instanceof List)) {
            throw new InputProblem(path + ": expected a JSON array of {\"identifier\", \"userInfo\"}, found " + kind(json));
        }
        List<ShownNotification> delivered = new ArrayList<>();
        List<?> elements = (List<?>) json;
        for (int index = 0; index < elements.size(); index++) {
            try {
                delivered.add(notification(elements.get(index), index));
            } catch (IllegalArgumentException problem) {
                throw new InputProblem(path + ": " + problem.getMessage());
            }
        }
        return delivered;
    }

    /** One notification of a delivered list, iPhone-shaped or Android-shaped; the message names what is wrong. */
    @SuppressWarnings("unchecked")
    static ShownNotification notification(Object element, int index) {
        String at = "element " + index + ": ";
        if (!(element instanceof Map)) throw new IllegalArgumentException(at + "expected an object, found " + kind(element));
        Map<String, Object> object = (Map<String, Object>) element;
        if (!object.containsKey("identifier") && (object.containsKey("tag") || object.containsKey("id"))) {
            Object tag = object.get("tag");
            if (tag != null && tag != Json.NULL && !(tag instanceof String)) {
                throw new IllegalArgumentException(at + "\"tag\" must be a string or null, found " + kind(tag));
            }
            int id = 0;
            Object idValue = object.get("id");
            if (idValue != null) {
                String integer = idValue instanceof JsonNumber ? integerText((JsonNumber) idValue) : null;
                if (integer == null) throw new IllegalArgumentException(at + "\"id\" must be an integer (a 32-bit notification id), found " + kind(idValue));
                id = Integer.parseInt(integer);
            }
            ShownNotification notification = new ShownNotification(tag instanceof String ? (String) tag : null, id,
                    objectField(object, "extras", at), stringField(object, "group", at), stringField(object, "channel", at));
            if (!object.containsKey("conversation")) return notification;
            Conversation conversation = conversation(object.get("conversation"), at);
            if (tag instanceof String && !CanonicalText.same((String) tag, conversation.tag())) {
                throw new IllegalArgumentException(at + "\"tag\" of a conversation must be " + Json.quote(conversation.tag()) + ", found "
                        + Json.quote((String) tag));
            }
            return ShownNotification.ofConversation(conversation, notification.group(), notification.channel());
        }
        Object identifier = object.get("identifier");
        if (!(identifier instanceof String)) {
            throw new IllegalArgumentException(at + "\"identifier\" must be a string (an iPhone's notification), or give \"tag\" and \"id\" (an Android one)");
        }
        return ShownNotification.ofIPhone((String) identifier, objectField(object, "userInfo", at), stringField(object, "threadIdentifier", at));
    }

    /** A conversation notification's {@code "conversation"}: its thread, account and messages. */
    private static Conversation conversation(Object value, String at) {
        if (!(value instanceof Map)) throw new IllegalArgumentException(at + "\"conversation\" must be an object, found " + kind(value));
        Map<?, ?> object = (Map<?, ?>) value;
        Object thread = object.get("thread");
        if (!(thread instanceof String) || ((String) thread).isEmpty()) {
            throw new IllegalArgumentException(at + "\"conversation.thread\" must be a non-empty string, found " + kind(thread));
        }
        Object account = object.get("account");
        if (account != null && !(account instanceof String)) {
            throw new IllegalArgumentException(at + "\"conversation.account\" must be a string, found " + kind(account));
        }
        Object list = object.get("messages");
        if (!(list instanceof List)) throw new IllegalArgumentException(at + "\"conversation.messages\" must be an array, found " + kind(list));
        List<ConversationMessage> messages = new ArrayList<>();
        List<?> elements = (List<?>) list;
        for (int index = 0; index < elements.size(); index++) {
            Object element = elements.get(index);
            Map<?, ?> message = element instanceof Map ? (Map<?, ?>) element : null;
            Object reference = message == null ? null : message.get("reference");
            String written = reference instanceof String && !((String) reference).isEmpty() ? (String) reference
                    : reference instanceof JsonNumber ? ((JsonNumber) reference).integerText() : null;
            Object text = message == null ? null : message.get("text");
            Object sender = message == null ? null : message.get("sender");
            if (written == null || !(text instanceof String) || (sender != null && !(sender instanceof String))) {
                throw new IllegalArgumentException(at + "\"conversation.messages[" + index + "]\" must be an object with a \"reference\" "
                        + "(a string or an integer), a \"text\" (a string) and maybe a \"sender\" (a string)");
            }
            messages.add(new ConversationMessage(written, (String) text, (String) sender, index));
        }
        return new Conversation((String) account, (String) thread, null, false, messages);
    }

    /** The number as a 32-bit notification id, or null when it is not one. */
    private static String integerText(JsonNumber number) {
        String integer = number.integerText();
        if (integer == null) return null;
        java.math.BigInteger value = new java.math.BigInteger(integer);
        boolean fits = value.bitLength() < 32;
        return fits ? integer : null;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> objectField(Map<String, Object> object, String key, String at) {
        Object value = object.get(key);
        if (value == null) return null;
        if (!(value instanceof Map)) throw new IllegalArgumentException(at + "\"" + key + "\" must be an object, found " + kind(value));
        return (Map<String, Object>) value;
    }

    private static String stringField(Map<String, Object> object, String key, String at) {
        Object value = object.get(key);
        if (value == null) return null;
        if (!(value instanceof String)) throw new IllegalArgumentException(at + "\"" + key + "\" must be a string, found " + kind(value));
        return (String) value;
    }

    private static Object readJson(String path) throws InputProblem {
        String text;
        try {
            byte[] bytes = Files.readAllBytes(Paths.get(path));
            try {
                text = StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)).toString();
            } catch (java.nio.charset.CharacterCodingException notUTF8) {
                throw new InputProblem(path + ": not valid JSON (not UTF-8)");
            }
        } catch (NoSuchFileException missing) {
            throw new InputProblem(path + ": no such file");
        } catch (IOException | java.nio.file.InvalidPathException unreadable) {
            throw new InputProblem(path + ": cannot be read (" + unreadable.getMessage() + ")");
        }
        try {
            return Json.parse(text);
        } catch (Json.SyntaxError error) {
            throw new InputProblem(path + ": not valid JSON (" + error.getMessage() + ")");
        }
    }

    /** What a JSON value is, in the words of {@code retract match}'s messages. */
    static String kind(Object value) {
        if (value instanceof Map) return "an object";
        if (value instanceof List) return "an array";
        if (value instanceof String) return "a string";
        if (value instanceof JsonNumber) return "a number";
        if (value instanceof Boolean) return "a boolean";
        return "null";
    }

    static final class InputProblem extends Exception {
        private static final long serialVersionUID = 1L;

        InputProblem(String message) {
            super(message);
        }
    }
}
