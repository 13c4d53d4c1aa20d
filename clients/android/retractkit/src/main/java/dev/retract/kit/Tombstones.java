package dev.retract.kit;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.LongSupplier;

/**
 * Recently retracted references, so that an original arriving after its
 * retraction (FCM delivers in no guaranteed order, and holds messages for a
 * phone that is off) is recognised and not shown. Kept in {@link TextStorage}
 * as RetractKit keeps them: {@code {"entries":[{"reference":…,"retractedAt":seconds}]}},
 * at most {@link #DEFAULT_LIMIT} references for {@link #DEFAULT_LIFETIME_MILLIS}.
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

    /** Remembers {@code references} as retracted now; a repeated one moves to the newest end. */
    public synchronized void record(Collection<String> references) throws IOException {
        if (references.isEmpty()) return;
        Map<String, Double> entries = load();
        double now = nowMillis.getAsLong() / 1000.0;
        // One retraction's references share a time and go in Swift's order, as RetractKit writes them.
        TreeSet<String> sorted = new TreeSet<>(CanonicalText::compare);
        sorted.addAll(references);
        for (String reference : sorted) {
            entries.remove(CanonicalText.key(reference));
            entries.put(CanonicalText.key(reference), now);
        }
        prune(entries, now);
        storage.save(encode(entries));
    }

    /** Whether {@code reference} was retracted within the lifetime. */
    public synchronized boolean contains(String reference) {
        Double at = load().get(CanonicalText.key(reference));
        return at != null && at > nowMillis.getAsLong() / 1000.0 - lifetimeMillis / 1000.0;
    }

    /** Whether an arriving original was retracted before it arrived, by any reference its data names. */
    public boolean wasRetracted(Map<String, ?> data) {
        CustomData customData = RetractPayload.read(data).customData();
        if (customData == null) return false;
        for (String reference : customData.references()) {
            if (contains(reference)) return true;
        }
        return false;
    }

    /** The references remembered now, oldest first. */
    public synchronized List<String> references() {
        Map<String, Double> entries = load();
        prune(entries, nowMillis.getAsLong() / 1000.0);
        return new ArrayList<>(entries.keySet());
    }

    private void prune(Map<String, Double> entries, double now) {
        double oldestKept = now - lifetimeMillis / 1000.0;
        entries.values().removeIf(at -> at <= oldestKept);
        int excess = entries.size() - Math.max(limit, 0);
        for (var iterator = entries.keySet().iterator(); excess > 0 && iterator.hasNext(); excess--) {
            iterator.next();
            iterator.remove();
        }
    }

    /** Unreadable storage counts as empty: tombstones are an optimisation, and the next record overwrites it. */
    private Map<String, Double> load() {
        Map<String, Double> entries = new LinkedHashMap<>();
        try {
            String text = storage.load();
            if (text == null) return entries;
            Object entryList = ((Map<?, ?>) Json.parse(text)).get("entries");
            for (Object element : (List<?>) entryList) {
                Map<?, ?> entry = (Map<?, ?>) element;
                entries.put(CanonicalText.key((String) entry.get("reference")), ((JsonNumber) entry.get("retractedAt")).doubleValue());
            }
        } catch (IOException | Json.SyntaxError | ClassCastException | NullPointerException unreadable) {
            entries.clear();
        }
        return entries;
    }

    private static String encode(Map<String, Double> entries) {
        List<Object> list = new ArrayList<>();
        for (Map.Entry<String, Double> entry : entries.entrySet()) {
            Map<String, Object> object = new LinkedHashMap<>();
            object.put("reference", entry.getKey());
            object.put("retractedAt", new JsonNumber(String.valueOf(entry.getValue())));
            list.add(object);
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("entries", list);
        return Json.write(root);
    }
}
