package dev.retract.kit.tools;

import dev.retract.kit.ConversationMessage;
import dev.retract.kit.Conversations;
import dev.retract.kit.FeedCursor;
import dev.retract.kit.FeedException;
import dev.retract.kit.InMemoryShade;
import dev.retract.kit.Json;
import dev.retract.kit.MessageOutcome;
import dev.retract.kit.RetractClient;
import dev.retract.kit.RetractionFeed;
import dev.retract.kit.ShownNotification;
import dev.retract.kit.TextStorage;
import dev.retract.kit.Tombstones;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code replay}: the app side of simulated Android phones. Reads one phone
 * per line on stdin, {@code {"device": "...", "style": "message", "events": [...]}}
 * ({@code style}, optional: {@code "message"}, one notification per message,
 * the default, or {@code "conversation"}, an app that shows an original with
 * a conversation in its conversation's notification), each event one of
 * <ul>
 *   <li>{@code {"display": {"tag": ..., "id": 0, "channel": ..., "title": ..., "body": ...}}}: Firebase
 *       showed a notification message itself (the app was in the background), with no app code,
 *       in place of one showing under the same tag and id; {@code title} and {@code body}, each
 *       optional, are its {@code android.notification}'s;</li>
 *   <li>{@code {"data": {...}}}: a message Android handed to the app's
 *       {@code onMessageReceived}, its data map;</li>
 *   <li>{@code {"start": {"feed": "https://…", "key": "…", "app": "…"}}}: the user
 *       opened the app, which reads the device feed for its token (the
 *       device) as an integration does at every start;</li>
 * </ul>
 * and runs the app a RetractKit for Android integration is (the library's
 * {@link RetractClient} with tombstones, over a shade that behaves as
 * Android's): a retraction cancels what it names, an edit re-posts what is
 * still showing of what it names with its words, an original sent as data
 * only is posted under its tag unless it was retracted first (or into its
 * conversation). Prints one line per phone:
 * {@code {"device": "...", "showing": [{"name": ..., "references": [...], "title": ..., "text": ...}], "alerts": n, "diagnostics": n}},
 * in the order they were posted, {@code title} and {@code text} a string or null, a
 * conversation notification with {@code "messages": [{"reference": ..., "text": ...}]},
 * {@code alerts} the posts that alerted (sound, vibration, heads-up), with
 * {@code "feedError"} when a feed could not be read.
 * The phone's state (force-stopped, Doze) is the simulator's: it decides which
 * events reach the app.
 */
final class ReplayCommand {
    /** The channel the app posts its originals on. */
    static final String CHANNEL = "messages";

    private ReplayCommand() {}

    static int run(String[] arguments, BufferedReader input, PrintStream out, PrintStream err) throws IOException {
        if (arguments.length > 0) {
            err.println("android-replay: replay takes no arguments, only phones on stdin");
            return 64;
        }
        int lineNumber = 0;
        for (String line; (line = input.readLine()) != null; ) {
            lineNumber++;
            if (line.isBlank()) continue;
            try {
                out.println(replay(line));
            } catch (IllegalArgumentException | Json.SyntaxError problem) {
                err.println("android-replay: line " + lineNumber + ": " + problem.getMessage());
                return 2;
            }
        }
        out.flush();
        return 0;
    }

    @SuppressWarnings("unchecked")
    static String replay(String line) throws Json.SyntaxError {
        Object parsed = Json.parse(line);
        if (!(parsed instanceof Map) || !(((Map<?, ?>) parsed).get("device") instanceof String)
                || !(((Map<?, ?>) parsed).get("events") instanceof List)) {
            throw new IllegalArgumentException("expected {\"device\": \"...\", \"events\": [...]}");
        }
        Map<String, Object> phone = (Map<String, Object>) parsed;
        Object style = phone.getOrDefault("style", "message");
        if (!"message".equals(style) && !"conversation".equals(style)) {
            throw new IllegalArgumentException("\"style\" must be \"message\" or \"conversation\"");
        }
        Conversations conversations = "conversation".equals(style) ? new Conversations() : null;
        InMemoryShade shade = new InMemoryShade();
        RetractClient client = new RetractClient(new Tombstones(TextStorage.inMemory()), conversations);
        int diagnostics = 0;
        String feedError = null;
        List<?> events = (List<?>) phone.get("events");
        for (int index = 0; index < events.size(); index++) {
            Object event = events.get(index);
            Object display = event instanceof Map ? ((Map<?, ?>) event).get("display") : null;
            Object data = event instanceof Map ? ((Map<?, ?>) event).get("data") : null;
            Object start = event instanceof Map ? ((Map<?, ?>) event).get("start") : null;
            if (start instanceof Map) {
                feedError = start((Map<?, ?>) start, (String) phone.get("device"), client, shade);
            } else if (display instanceof Map) {
                shade.post(displayed((Map<?, ?>) display, index));
            } else if (data instanceof Map) {
                MessageOutcome outcome = client.onMessageReceived((Map<String, ?>) data, shade);
                diagnostics += outcome.diagnostics().size();
                if (outcome.kind() != MessageOutcome.Kind.ORIGINAL) continue;
                if (conversations == null || conversations.post(outcome.original(), index, shade) == null) {
                    shade.post(outcome.original().shown(0, CHANNEL));
                }
            } else {
                throw new IllegalArgumentException("event " + index + ": expected {\"display\": {...}}, {\"data\": {...}} or {\"start\": {...}}");
            }
        }
        List<Object> showing = new ArrayList<>();
        for (ShownNotification notification : shade.active()) {
            Map<String, Object> shown = new LinkedHashMap<>();
            shown.put("name", notification.name());
            shown.put("references", new ArrayList<>(notification.references()));
            shown.put("title", notification.title());
            shown.put("text", notification.text());
            if (notification.conversation() != null) {
                List<Object> messages = new ArrayList<>();
                for (ConversationMessage message : notification.conversation().messages()) {
                    Map<String, Object> entry = new LinkedHashMap<>();
                    entry.put("reference", message.reference());
                    entry.put("text", message.text());
                    messages.add(entry);
                }
                shown.put("messages", messages);
            }
            showing.add(shown);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("device", phone.get("device"));
        result.put("showing", showing);
        result.put("alerts", new dev.retract.kit.JsonNumber(String.valueOf(shade.alerts())));
        result.put("diagnostics", new dev.retract.kit.JsonNumber(String.valueOf(diagnostics)));
        if (feedError != null) result.put("feedError", feedError);
        return Json.write(result);
    }

    /**
     * The notification Firebase shows for a display event: its tag, id and
     * channel, with its title and body (else those its extras hold, as Android
     * keeps them).
     */
    private static ShownNotification displayed(Map<?, ?> display, int index) {
        ShownNotification shown = MatchCommand.notification(display, index);
        String title = word(display, "title", index);
        String body = word(display, "body", index);
        return new ShownNotification(shown.tag(), shown.id(), shown.extras(), shown.group(), shown.channel(),
                title != null ? title : shown.title(), body != null ? body : shown.text());
    }

    private static String word(Map<?, ?> display, String key, int index) {
        Object value = display.get(key);
        if (value == null || value == Json.NULL) return null;
        if (!(value instanceof String)) {
            throw new IllegalArgumentException("event " + index + ": \"" + key + "\" must be a string, found " + MatchCommand.kind(value));
        }
        return (String) value;
    }

    /** The app starts: it saves its token and reads the feed; the problem, or null. */
    private static String start(Map<?, ?> start, String token, RetractClient client, InMemoryShade shade) {
        Object url = start.get("feed");
        Object key = start.get("key");
        Object app = start.get("app");
        if (!(url instanceof String) || !(key instanceof String)) {
            throw new IllegalArgumentException("a start needs {\"feed\": URL, \"key\": KEY}");
        }
        FeedCursor cursor = new FeedCursor(TextStorage.inMemory());
        try {
            cursor.saveToken(token);
            client.catchUp(new RetractionFeed((String) url, (String) key, app instanceof String ? (String) app : null), cursor, shade,
                    FEED_BUDGET_MILLIS);
            return null;
        } catch (FeedException | java.io.IOException problem) {
            return problem.getMessage();
        }
    }

    /** What an integration gives a catch-up at start (RetractMessaging's default). */
    static final long FEED_BUDGET_MILLIS = 5_000;
}
