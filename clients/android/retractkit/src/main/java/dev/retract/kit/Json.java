package dev.retract.kit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and string writer, so the library needs nothing
 * beyond the JDK (Android's {@code org.json} is not on a plain JVM, and it
 * reads numbers and nulls in its own way).
 *
 * <p>Objects become {@link LinkedHashMap}s in the order written, arrays
 * {@link List}s, strings {@link String}s, {@code true}/{@code false}
 * {@link Boolean}s, numbers {@link JsonNumber}s (their text, so that
 * {@code 235.0} and {@code 100000000000000000000} are judged as written) and
 * {@code null} is {@link #NULL}.
 *
 * <p>It accepts and refuses what Swift's {@code JSONSerialization} does, so
 * that a push reads the same on both clients: a trailing comma before
 * {@code ]} or {@code }} and a leading byte-order mark are accepted; a
 * number too large for a double, a lone surrogate and nesting deeper than
 * 512 are refused.
 */
public final class Json {
    /** JSON's {@code null}: a key present with no value, unlike a key absent. */
    public static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    /** Deeper nesting than this is refused rather than followed. */
    static final int MAXIMUM_DEPTH = 512;

    /** Text that is not JSON; the message says where and why. */
    public static final class SyntaxError extends Exception {
        private static final long serialVersionUID = 1L;

        SyntaxError(String message) {
            super(message);
        }
    }

    private final String text;
    private int position;

    private Json(String text) {
        this.text = text;
    }

    /** Reads one JSON value (a fragment such as {@code 42} too) filling the whole text. */
    public static Object parse(String text) throws SyntaxError {
        Json reader = new Json(text);
        if (text.startsWith("\uFEFF")) reader.position = 1;
        reader.skipSpace();
        Object value = reader.value(0);
        reader.skipSpace();
        if (reader.position != text.length()) {
            throw reader.error("unexpected text after the value");
        }
        return value;
    }

    /**
     * {@code string} as a JSON string literal, quotes included, escaped as
     * Retract's Swift code writes it: quote, backslash and control characters
     * only.
     */
    public static String quote(String string) {
        StringBuilder out = new StringBuilder(string.length() + 2);
        out.append('"');
        for (int index = 0; index < string.length(); index++) {
            char character = string.charAt(index);
            switch (character) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                default:
                    if (character < 0x20) {
                        out.append(String.format("\\u%04x", (int) character));
                    } else {
                        out.append(character);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** A JSON value written out compactly: maps, lists, strings, booleans, numbers and {@link #NULL}. */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null || value == NULL) {
            out.append("null");
        } else if (value instanceof String) {
            out.append(quote((String) value));
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!first) out.append(',');
                first = false;
                out.append(quote(String.valueOf(entry.getKey()))).append(':');
                write(entry.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof List) {
            out.append('[');
            boolean first = true;
            for (Object element : (List<?>) value) {
                if (!first) out.append(',');
                first = false;
                write(element, out);
            }
            out.append(']');
        } else {
            out.append(value);
        }
    }

    private Object value(int depth) throws SyntaxError {
        if (depth >= MAXIMUM_DEPTH) throw error("nested more than " + MAXIMUM_DEPTH + " deep");
        if (position >= text.length()) throw error("the text ends where a value should be");
        char character = text.charAt(position);
        switch (character) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                literal("true");
                return Boolean.TRUE;
            case 'f':
                literal("false");
                return Boolean.FALSE;
            case 'n':
                literal("null");
                return NULL;
            default:
                if (character == '-' || (character >= '0' && character <= '9')) return number();
                throw error("unexpected character '" + character + "'");
        }
    }

    private Map<String, Object> object(int depth) throws SyntaxError {
        position++;
        Map<String, Object> object = new LinkedHashMap<>();
        skipSpace();
        if (peek('}')) {
            position++;
            return object;
        }
        while (true) {
            skipSpace();
            if (peek('}') && !object.isEmpty()) {
                // A trailing comma, which Swift's parser takes.
                position++;
                return object;
            }
            if (!peek('"')) throw error("expected a key in quotes");
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            object.put(key, value(depth + 1));
            skipSpace();
            if (peek(',')) {
                position++;
                continue;
            }
            expect('}');
            return object;
        }
    }

    private List<Object> array(int depth) throws SyntaxError {
        position++;
        List<Object> array = new ArrayList<>();
        skipSpace();
        if (peek(']')) {
            position++;
            return Collections.unmodifiableList(array);
        }
        while (true) {
            skipSpace();
            if (peek(']') && !array.isEmpty()) {
                // A trailing comma, which Swift's parser takes.
                position++;
                return Collections.unmodifiableList(array);
            }
            array.add(value(depth + 1));
            skipSpace();
            if (peek(',')) {
                position++;
                continue;
            }
            expect(']');
            return Collections.unmodifiableList(array);
        }
    }

    private String string() throws SyntaxError {
        position++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (position >= text.length()) throw error("a string is not closed");
            char character = text.charAt(position++);
            if (character == '"') return out.toString();
            if (character < 0x20) throw error("a control character inside a string");
            if (character != '\\') {
                out.append(character);
                continue;
            }
            if (position >= text.length()) throw error("a string is not closed");
            char escaped = text.charAt(position++);
            switch (escaped) {
                case '"':
                case '\\':
                case '/':
                    out.append(escaped);
                    break;
                case 'b':
                    out.append('\b');
                    break;
                case 'f':
                    out.append('\f');
                    break;
                case 'n':
                    out.append('\n');
                    break;
                case 'r':
                    out.append('\r');
                    break;
                case 't':
                    out.append('\t');
                    break;
                case 'u': {
                    char unit = hexEscape();
                    if (Character.isLowSurrogate(unit)) throw error("a lone low surrogate");
                    if (Character.isHighSurrogate(unit)) {
                        if (!text.startsWith("\\u", position)) throw error("a lone high surrogate");
                        position += 2;
                        char low = hexEscape();
                        if (!Character.isLowSurrogate(low)) throw error("a high surrogate without its low one");
                        out.append(unit);
                        unit = low;
                    }
                    out.append(unit);
                    break;
                }
                default:
                    throw error("unknown escape \\" + escaped);
            }
        }
    }

    /** The four hex digits after {@code \\u}, as a UTF-16 unit. */
    private char hexEscape() throws SyntaxError {
        if (position + 4 > text.length()) throw error("a \\u escape is cut short");
        int unit = 0;
        for (int index = 0; index < 4; index++) {
            char character = text.charAt(position + index);
            int digit = character >= '0' && character <= '9' ? character - '0'
                    : character >= 'a' && character <= 'f' ? character - 'a' + 10
                    : character >= 'A' && character <= 'F' ? character - 'A' + 10 : -1;
            if (digit < 0) throw error("a \\u escape is not four hex digits");
            unit = unit * 16 + digit;
        }
        position += 4;
        return (char) unit;
    }

    private JsonNumber number() throws SyntaxError {
        int start = position;
        if (peek('-')) position++;
        if (peek('0')) {
            position++;
        } else if (!digits()) {
            throw error("a number without digits");
        }
        if (peek('.')) {
            position++;
            if (!digits()) throw error("no digits after a decimal point");
        }
        if (peek('e') || peek('E')) {
            position++;
            if (peek('+') || peek('-')) position++;
            if (!digits()) throw error("no digits in an exponent");
        }
        String written = text.substring(start, position);
        if (Double.isInfinite(Double.parseDouble(written))) throw error("a number too large for a double");
        return new JsonNumber(written);
    }

    private boolean digits() {
        int start = position;
        while (position < text.length() && text.charAt(position) >= '0' && text.charAt(position) <= '9') position++;
        return position > start;
    }

    private void literal(String word) throws SyntaxError {
        if (!text.startsWith(word, position)) throw error("unexpected text where " + word + " was expected");
        position += word.length();
    }

    private void expect(char character) throws SyntaxError {
        if (!peek(character)) {
            throw error(position >= text.length() ? "the text ends where '" + character + "' should be" : "expected '" + character + "'");
        }
        position++;
    }

    private boolean peek(char character) {
        return position < text.length() && text.charAt(position) == character;
    }

    private void skipSpace() {
        while (position < text.length()) {
            char character = text.charAt(position);
            if (character != ' ' && character != '\n' && character != '\r' && character != '\t') return;
            position++;
        }
    }

    private SyntaxError error(String problem) {
        return new SyntaxError(problem + " at character " + position);
    }
}
