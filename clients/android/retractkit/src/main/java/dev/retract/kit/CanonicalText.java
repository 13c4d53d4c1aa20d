package dev.retract.kit;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Strings compared as Swift compares them: by canonical equivalence, so
 * {@code "é"} written as one character and as {@code e} with a combining
 * accent are one reference, and ordered by their NFC form's code points.
 * RetractKit (Swift) gets this from {@code String} itself; here every
 * comparison of references, threads, tags and names goes through it.
 */
public final class CanonicalText {
    private CanonicalText() {}

    /** The form two canonically equivalent strings share (NFC). */
    public static String key(String text) {
        return Normalizer.isNormalized(text, Normalizer.Form.NFC) ? text : Normalizer.normalize(text, Normalizer.Form.NFC);
    }

    /** Whether {@code one} and {@code other} are canonically equivalent. */
    public static boolean same(String one, String other) {
        return one.equals(other) || key(one).equals(key(other));
    }

    /** {@code strings} without repeats, each kept in the form it first came in, in order. */
    public static List<String> distinct(Collection<String> strings) {
        Map<String, String> first = new LinkedHashMap<>();
        for (String text : strings) first.putIfAbsent(key(text), text);
        return new ArrayList<>(first.values());
    }

    /** Swift's order of strings: their NFC forms, code point by code point. */
    public static int compare(String one, String other) {
        int[] left = key(one).codePoints().toArray();
        int[] right = key(other).codePoints().toArray();
        for (int index = 0; index < Math.min(left.length, right.length); index++) {
            if (left[index] != right[index]) return Integer.compare(left[index], right[index]);
        }
        return Integer.compare(left.length, right.length);
    }
}
