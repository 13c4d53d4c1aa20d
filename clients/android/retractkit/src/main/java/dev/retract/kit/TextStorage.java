package dev.retract.kit;

import java.io.IOException;

/**
 * A few hundred bytes of text kept across process starts: on Android a key
 * of {@code SharedPreferences} (the adapter's {@code PreferencesStorage}); in
 * tests, a field. Give tombstones and the feed cursor a key each.
 */
public interface TextStorage {
    /** The text saved, or null when nothing is. */
    String load() throws IOException;

    void save(String text) throws IOException;

    /** Storage in memory only: for tests, and for an app that keeps nothing across starts. */
    static TextStorage inMemory() {
        return new TextStorage() {
            private String text;

            @Override
            public synchronized String load() {
                return text;
            }

            @Override
            public synchronized void save(String text) {
                this.text = text;
            }
        };
    }
}
