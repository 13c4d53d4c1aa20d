package dev.retract.kit;

import java.util.List;
import java.util.Map;

/**
 * One value inside custom data, seen as the JSON it came from: the kinds
 * RetractKit's rules tell apart. Only one level of an array or an object is
 * looked into (an edit, {@code pushNotificationEdit}, is the one object custom
 * data holds).
 */
final class PayloadValue {
    enum Kind {
        NULL, BOOLEAN, INTEGER, FRACTION, STRING, ARRAY, OBJECT, OTHER
    }

    final Kind kind;
    /** The boolean, the integer's decimal text, the string, the fraction's double, the elements, or the fields. */
    final Object value;
    /** For {@link Kind#OTHER}: what it is, for messages ("an object", "an array"). */
    final String otherName;

    private PayloadValue(Kind kind, Object value, String otherName) {
        this.kind = kind;
        this.value = value;
        this.otherName = otherName;
    }

    static PayloadValue of(Object value) {
        return of(value, true);
    }

    static PayloadValue of(Object value, boolean lookIntoArrays) {
        if (value == null || value == Json.NULL) return new PayloadValue(Kind.NULL, null, null);
        if (value instanceof String) return new PayloadValue(Kind.STRING, value, null);
        if (value instanceof Boolean) return new PayloadValue(Kind.BOOLEAN, value, null);
        if (value instanceof JsonNumber) {
            JsonNumber number = (JsonNumber) value;
            String integer = number.integerText();
            return integer != null
                    ? new PayloadValue(Kind.INTEGER, integer, null)
                    : new PayloadValue(Kind.FRACTION, number.doubleValue(), null);
        }
        if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            // Android's Bundle extras hold numbers as Java numbers.
            return new PayloadValue(Kind.INTEGER, String.valueOf(value), null);
        }
        if (value instanceof Double || value instanceof Float) {
            double number = ((Number) value).doubleValue();
            if (Double.isNaN(number) || Double.isInfinite(number)) return new PayloadValue(Kind.FRACTION, number, null);
            return of(new JsonNumber(new java.math.BigDecimal(number).toString()), lookIntoArrays);
        }
        if (value instanceof List || value instanceof Object[]) {
            if (!lookIntoArrays) return new PayloadValue(Kind.OTHER, null, "an array");
            List<?> elements = value instanceof List ? (List<?>) value : java.util.Arrays.asList((Object[]) value);
            java.util.ArrayList<PayloadValue> read = new java.util.ArrayList<>();
            for (Object element : elements) read.add(of(element, false));
            return new PayloadValue(Kind.ARRAY, read, null);
        }
        if (value instanceof Map) {
            if (!lookIntoArrays) return new PayloadValue(Kind.OTHER, null, "an object");
            Map<String, PayloadValue> fields = new java.util.LinkedHashMap<>();
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (entry.getKey() instanceof String) fields.put((String) entry.getKey(), of(entry.getValue(), false));
            }
            return new PayloadValue(Kind.OBJECT, fields, null);
        }
        return new PayloadValue(Kind.OTHER, null, "a value of type " + value.getClass().getSimpleName());
    }

    /** What the value is, for messages; RetractKit's words. */
    String kindName() {
        switch (kind) {
            case NULL:
                return "null";
            case BOOLEAN:
                return "a boolean";
            case INTEGER:
                return "an integer";
            case FRACTION:
                return "a number with a fraction";
            case STRING:
                return "a string";
            case ARRAY:
                return "an array";
            case OBJECT:
                return "an object";
            default:
                return otherName;
        }
    }

    @SuppressWarnings("unchecked")
    List<PayloadValue> elements() {
        return (List<PayloadValue>) value;
    }

    @SuppressWarnings("unchecked")
    Map<String, PayloadValue> fields() {
        return (Map<String, PayloadValue>) value;
    }

    boolean sameAs(PayloadValue other) {
        return kind == other.kind && java.util.Objects.equals(value, other.value) && java.util.Objects.equals(otherName, other.otherName);
    }
}
