package dev.retract.kit.android;

import android.content.SharedPreferences;
import dev.retract.kit.TextStorage;

/** {@link TextStorage} under one key of {@code SharedPreferences}. */
public final class PreferencesStorage implements TextStorage {
    private final SharedPreferences preferences;
    private final String key;

    public PreferencesStorage(SharedPreferences preferences, String key) {
        this.preferences = preferences;
        this.key = key;
    }

    @Override
    public String load() {
        return preferences.getString(key, null);
    }

    /** Written with {@code commit()}: the process may end right after a push is handled. */
    @Override
    public void save(String text) throws java.io.IOException {
        if (!preferences.edit().putString(key, text).commit()) throw new java.io.IOException("SharedPreferences did not save " + key);
    }
}
