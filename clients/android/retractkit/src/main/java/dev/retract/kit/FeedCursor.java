package dev.retract.kit;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The phone's place in the retraction feed: its FCM registration token, the
 * cursor of the last catch-up and the validator of the last page that listed
 * nothing, kept in {@link TextStorage} (its own key) across process starts.
 */
public final class FeedCursor {
    private final TextStorage storage;

    public FeedCursor(TextStorage storage) {
        this.storage = storage;
    }

    /** Where the next read starts. */
    public static final class Position {
        public final String token;
        /** Null until the first catch-up. */
        public final String cursor;
        /** The {@code ETag} of the last page read from {@code cursor}, when it listed nothing. */
        public final String validator;

        Position(String token, String cursor, String validator) {
            this.token = token;
            this.cursor = cursor;
            this.validator = validator;
        }
    }

    /**
     * Saves the registration token ({@code onNewToken}, or
     * {@code FirebaseMessaging.getToken()} at start). A token other than the
     * one saved starts the feed again from the beginning: the cursor belonged
     * to the old one.
     */
    public synchronized void saveToken(String token) throws IOException {
        Position saved = position();
        if (saved != null && saved.token.equals(token)) return;
        write(new Position(token, null, null));
    }

    /** The saved token and cursor, or null when no token is saved (or the storage cannot be read). */
    public synchronized Position position() {
        try {
            String text = storage.load();
            if (text == null) return null;
            Map<?, ?> object = (Map<?, ?>) Json.parse(text);
            Object token = object.get("token");
            if (!(token instanceof String)) return null;
            return new Position((String) token, string(object.get("cursor")), string(object.get("validator")));
        } catch (IOException | Json.SyntaxError | ClassCastException unreadable) {
            return null;
        }
    }

    /** Moves the cursor, unless the app saved another token meanwhile. */
    synchronized void advance(String token, String cursor, String validator) throws IOException {
        Position saved = position();
        if (saved == null || !saved.token.equals(token)) return;
        write(new Position(token, cursor, validator));
    }

    private void write(Position position) throws IOException {
        Map<String, Object> object = new LinkedHashMap<>();
        object.put("token", position.token);
        if (position.cursor != null) object.put("cursor", position.cursor);
        if (position.validator != null) object.put("validator", position.validator);
        storage.save(Json.write(object));
    }

    private static String string(Object value) {
        return value instanceof String ? (String) value : null;
    }
}
