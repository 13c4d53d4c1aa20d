package dev.retract.kit;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongSupplier;

/**
 * Recently retracted references, so that an original arriving after its
 * retraction (FCM delivers in no guaranteed order, and holds messages for a
 * phone that is off) is recognised and not shown. Kept in {@link TextStorage}
 * as RetractKit keeps them:
 * {@code {"entries":[{"reference":…,"retractedAt":seconds,"account":…}]}} (no
 * {@code account} for the app's only account), at most {@link #DEFAULT_LIMIT}
 * references for {@link #DEFAULT_LIFETIME_MILLIS}.
 */
public final class Tombstones {
    public static final int DEFAULT_LIMIT = 256;
    public static final long DEFAULT_LIFETIME_MILLIS = 7L * 24 * 60 * 60 * 1000;

    private final TextStorage storage;
    private final int limit;
    private final long lifetimeMillis;
    private final LongSupplier nowMillis;

    public Tombstones(TextStorage storage) {
        this(storage, DEFAULT_LIMIT, DEFAULT_LIFETIME_MILLIS, System::currentTimeMillis);
    }

    /** @param nowMillis the clock, replaceable in tests */
    public Tombstones(TextStorage storage, int limit, long lifetimeMillis, LongSupplier nowMillis) {
        this.storage = storage;
        this.limit = limit;
        this.lifetimeMillis = lifetimeMillis;
        this.nowMillis = nowMillis;
    }

    /** Remembers {@code references} of the app's only account as retracted now. */
    public void record(Collection<String> references) throws IOException {
        record(references, null);
    }

    /** Remembers {@code references} of {@code account} as retracted now; a repeated one moves to the newest end. */
    public synchronized void record(Collection<String> references, String account) throws IOException {
        if (references.isEmpty()) return;
        Map<Key, Double> entries = load();
        double now = nowMillis.getAsLong() / 1000.0;
        // One retraction's references share a time and go in Swift's order, as RetractKit writes them.
        TreeSet<String> sorted = new TreeSet<>(CanonicalText::compare);
        sorted.addAll(references);
        for (String reference : sorted) {
            Key key = new Key(account, reference);
            entries.remove(key);
            entries.put(key, now);
        }
        prune(entries, now);
        storage.save(encode(entries));
    }

    /** Whether {@code reference} of the app's only account was retracted within the lifetime. */
    public boolean contains(String reference) {
        return contains(reference, null);
    }

    /** Whether {@code reference} of {@code account} was retracted within the lifetime. */
    public synchronized boolean contains(String reference, String account) {
        Double at = load().get(new Key(account, reference));
        return at != null && at > nowMillis.getAsLong() / 1000.0 - lifetimeMillis / 1000.0;
    }

    /** Whether an arriving original was retracted before it arrived, by any reference its data names, within its account. */
    public boolean wasRetracted(Map<String, ?> data) {
        CustomData customData = RetractPayload.read(data).customData();
        if (customData == null) return false;
        for (String reference : customData.references()) {
            if (contains(reference, customData.account())) return true;
        }
        return false;
    }

    /** The references remembered now, oldest first, whatever their account. */
    public synchronized List<String> references() {
        List<String> references = new ArrayList<>();
        for (Key key : live().keySet()) references.add(key.reference);
        return references;
    }

    /**
     * The references remembered now, by account (the app's only account under
     * null), oldest first.
     */
    public synchronized Map<String, Set<String>> referencesByAccount() {
        Map<String, Set<String>> byAccount = new LinkedHashMap<>();
        for (Key key : live().keySet()) byAccount.computeIfAbsent(key.account, account -> new LinkedHashSet<>()).add(key.reference);
        return byAccount;
    }

    private Map<Key, Double> live() {
        Map<Key, Double> entries = load();
        prune(entries, nowMillis.getAsLong() / 1000.0);
        return entries;
    }

    private void prune(Map<Key, Double> entries, double now) {
        double oldestKept = now - lifetimeMillis / 1000.0;
        entries.values().removeIf(at -> at <= oldestKept);
        int excess = entries.size() - Math.max(limit, 0);
        for (Iterator<Key> iterator = entries.keySet().iterator(); excess > 0 && iterator.hasNext(); excess--) {
            iterator.next();
            iterator.remove();
        }
    }

    /** Unreadable storage counts as empty: tombstones are an optimisation, and the next record overwrites it. */
    private Map<Key, Double> load() {
        Map<Key, Double> entries = new LinkedHashMap<>();
        try {
            String text = storage.load();
            if (text == null) return entries;
            Object entryList = ((Map<?, ?>) Json.parse(text)).get("entries");
            for (Object element : (List<?>) entryList) {
                Map<?, ?> entry = (Map<?, ?>) element;
                Object account = entry.get("account");
                entries.put(new Key(account instanceof String ? (String) account : null, (String) entry.get("reference")),
                        ((JsonNumber) entry.get("retractedAt")).doubleValue());
            }
        } catch (IOException | Json.SyntaxError | ClassCastException | NullPointerException unreadable) {
            entries.clear();
        }
        return entries;
    }

    private static String encode(Map<Key, Double> entries) {
        List<Object> list = new ArrayList<>();
        for (Map.Entry<Key, Double> entry : entries.entrySet()) {
            Map<String, Object> object = new LinkedHashMap<>();
            object.put("reference", entry.getKey().reference);
            object.put("retractedAt", new JsonNumber(String.valueOf(entry.getValue())));
            if (entry.getKey().account != null) object.put("account", entry.getKey().account);
            list.add(object);
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("entries", list);
        return Json.write(root);
    }

    /** A reference within its account, compared as Swift compares strings. */
    private static final class Key {
        final String account;
        final String reference;

        Key(String account, String reference) {
            this.account = account == null ? null : CanonicalText.key(account);
            this.reference = CanonicalText.key(reference);
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Key && Objects.equals(account, ((Key) other).account) && reference.equals(((Key) other).reference);
        }

        @Override
        public int hashCode() {
            return Objects.hash(account, reference);
        }
    }
}
