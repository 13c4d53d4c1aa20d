package dev.retract.kit;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Reads custom data value by value, from any number of objects, into one
 * {@link CustomData}: RetractKit's {@code CustomDataReader}, rule for rule.
 *
 * <p>A value that cannot be read is set aside as a problem and the rest is
 * kept, so one stray value never hides the references next to it. References
 * from every object and every spelling are united; the removal flag is set
 * when any accepted spelling says true.
 */
final class CustomDataReader {
    final CustomData customData = new CustomData();
    final List<PayloadProblem> diagnostics = new ArrayList<>();
    boolean foundObject;
    private final List<String> flagPaths = new ArrayList<>();
    private final List<Boolean> flagValues = new ArrayList<>();
    /** The references and threads read so far, by {@link CanonicalText#key}. */
    private final Set<String> known = new HashSet<>();
    private final Set<String> knownThreads = new HashSet<>();
    /** Where the account was read from, or null. */
    private String accountPath;

    /** A custom data value of a push: an object, or a JSON string holding one. */
    void readPushValue(Object value, String path) {
        Map<?, ?> object;
        if (value instanceof Map) {
            object = (Map<?, ?>) value;
        } else if (value instanceof String) {
            Object parsed;
            try {
                parsed = Json.parse((String) value);
            } catch (Json.SyntaxError error) {
                diagnostics.add(PayloadProblem.invalidJson(path, error.getMessage()));
                return;
            }
            if (!(parsed instanceof Map)) {
                diagnostics.add(PayloadProblem.wrongType(path, "a JSON object", PayloadValue.of(parsed).kindName()));
                return;
            }
            object = (Map<?, ?>) parsed;
        } else {
            diagnostics.add(PayloadProblem.wrongType(path, "an object, a JSON string or Data", PayloadValue.of(value).kindName()));
            return;
        }
        read(path, key -> object.containsKey(key) ? PayloadValue.of(object.get(key)) : null);
    }

    /** Reads the fields of one object through {@code lookup}, which gives null for a key absent. */
    void read(String path, Function<String, PayloadValue> lookup) {
        foundObject = true;
        Set<String> knownBefore = new HashSet<>(known);
        for (String key : PayloadKeys.REFERENCE_ID) {
            PayloadValue value = lookup.apply(key);
            if (value == null) continue;
            String reference = reference(value, path(path, key));
            if (reference == null) continue;
            if (customData.referenceId == null) {
                customData.referenceId = reference;
            } else if (!known.contains(CanonicalText.key(reference))) {
                customData.referenceIds.add(reference);
            }
            known.add(CanonicalText.key(reference));
        }
        PayloadValue batchValue = lookup.apply(PayloadKeys.REFERENCE_IDS);
        if (batchValue != null) {
            // Within one object the batch is kept as written; what an earlier object already named is not repeated.
            for (String reference : batch(batchValue, path(path, PayloadKeys.REFERENCE_IDS))) {
                if (knownBefore.contains(CanonicalText.key(reference))) continue;
                customData.referenceIds.add(reference);
                known.add(CanonicalText.key(reference));
            }
        }
        if (customData.threadId == null) {
            PayloadValue value = lookup.apply(PayloadKeys.THREAD_ID);
            if (value != null) customData.threadId = thread(value, path(path, PayloadKeys.THREAD_ID));
        }
        PayloadValue threadsValue = lookup.apply(PayloadKeys.THREAD_IDS);
        if (threadsValue != null) {
            for (String thread : threads(threadsValue, path(path, PayloadKeys.THREAD_IDS))) {
                if (knownThreads.add(CanonicalText.key(thread))) customData.threadIds.add(thread);
            }
        }
        PayloadValue moreValue = lookup.apply(PayloadKeys.MORE_IN_FEED);
        if (moreValue != null) {
            Boolean more = flag(moreValue, path(path, PayloadKeys.MORE_IN_FEED));
            if (more != null) customData.moreInFeed = customData.moreInFeed || more;
        }
        PayloadValue editValue = lookup.apply(PayloadKeys.EDIT);
        if (editValue != null) {
            // Every edit is read, for its diagnostics; the first readable one counts.
            NotificationEdit edit = edit(editValue, path(path, PayloadKeys.EDIT));
            if (customData.edit == null) customData.edit = edit;
        }
        PayloadValue accountValue = lookup.apply(PayloadKeys.ACCOUNT);
        if (accountValue != null) {
            String where = path(path, PayloadKeys.ACCOUNT);
            String account = identifier(accountValue, where, "account");
            if (account != null && accountPath != null && !CanonicalText.same(account, customData.account)) {
                // The first account counts: a push is of one account.
                diagnostics.add(PayloadProblem.conflictingKeys(accountPath, where));
            } else if (account != null && accountPath == null) {
                customData.account = account;
                accountPath = where;
            }
        }
        PayloadValue badgeValue = lookup.apply(PayloadKeys.BADGE);
        if (badgeValue != null && customData.badge == null) customData.badge = badge(badgeValue, path(path, PayloadKeys.BADGE));
        for (String key : PayloadKeys.MUST_REMOVE) {
            PayloadValue value = lookup.apply(key);
            if (value == null) continue;
            String flagPath = path(path, key);
            Boolean flag = flag(value, flagPath);
            if (flag == null) continue;
            if (!flagValues.isEmpty() && !flagValues.get(0).equals(flag) && allSame(flagValues)) {
                // Reported once; removing wins, as either spelling alone would have removed.
                diagnostics.add(PayloadProblem.conflictingKeys(flagPaths.get(0), flagPath));
            }
            flagPaths.add(flagPath);
            flagValues.add(flag);
            customData.mustRemove = customData.mustRemove || flag;
        }
    }

    private static boolean allSame(List<Boolean> values) {
        for (Boolean value : values) {
            if (!value.equals(values.get(0))) return false;
        }
        return true;
    }

    /** A batch: an array, or a JSON array in a string (FCM data values are strings). */
    private List<String> batch(PayloadValue value, String path) {
        String expected = "an array of references, or a JSON array in a string";
        List<PayloadValue> elements;
        switch (value.kind) {
            case NULL:
                return new ArrayList<>();
            case ARRAY:
                elements = value.elements();
                break;
            case STRING: {
                Object parsed;
                try {
                    parsed = Json.parse((String) value.value);
                } catch (Json.SyntaxError error) {
                    diagnostics.add(PayloadProblem.wrongType(path, expected, "a string that is not JSON"));
                    return new ArrayList<>();
                }
                PayloadValue read = PayloadValue.of(parsed);
                if (read.kind != PayloadValue.Kind.ARRAY) {
                    diagnostics.add(PayloadProblem.wrongType(path, expected, "a string holding " + read.kindName()));
                    return new ArrayList<>();
                }
                elements = read.elements();
                break;
            }
            default:
                diagnostics.add(PayloadProblem.wrongType(path, expected, value.kindName()));
                return new ArrayList<>();
        }
        List<String> references = new ArrayList<>();
        for (int index = 0; index < elements.size(); index++) {
            String reference = reference(elements.get(index), path + "[" + index + "]");
            if (reference != null) references.add(reference);
        }
        return references;
    }

    /**
     * An edit: an object, or a JSON object in a string (FCM data values are
     * strings), with a string {@code body} and, optionally, a string
     * {@code title}. An edit without a body is no edit; a title that is not a
     * string is left out, and the edit keeps the title shown. Null means absent.
     */
    private NotificationEdit edit(PayloadValue value, String path) {
        String expected = "an object with a body, or a JSON object in a string";
        Map<String, PayloadValue> fields;
        switch (value.kind) {
            case NULL:
                return null;
            case OBJECT:
                fields = value.fields();
                break;
            case STRING: {
                Object parsed;
                try {
                    parsed = Json.parse((String) value.value);
                } catch (Json.SyntaxError error) {
                    diagnostics.add(PayloadProblem.wrongType(path, expected, "a string that is not JSON"));
                    return null;
                }
                PayloadValue read = PayloadValue.of(parsed);
                if (read.kind != PayloadValue.Kind.OBJECT) {
                    diagnostics.add(PayloadProblem.wrongType(path, expected, "a string holding " + read.kindName()));
                    return null;
                }
                fields = read.fields();
                break;
            }
            default:
                diagnostics.add(PayloadProblem.wrongType(path, expected, value.kindName()));
                return null;
        }
        PayloadValue body = fields.getOrDefault(PayloadKeys.BODY, PayloadValue.of(null));
        if (body.kind == PayloadValue.Kind.NULL) {
            diagnostics.add(PayloadProblem.invalidValue(path(path, PayloadKeys.BODY), "an edit needs a body"));
            return null;
        }
        if (body.kind != PayloadValue.Kind.STRING) {
            diagnostics.add(PayloadProblem.wrongType(path(path, PayloadKeys.BODY), "a string", body.kindName()));
            return null;
        }
        PayloadValue title = fields.getOrDefault(PayloadKeys.TITLE, PayloadValue.of(null));
        if (title.kind != PayloadValue.Kind.STRING && title.kind != PayloadValue.Kind.NULL) {
            diagnostics.add(PayloadProblem.wrongType(path(path, PayloadKeys.TITLE), "a string", title.kindName()));
        }
        return new NotificationEdit(title.kind == PayloadValue.Kind.STRING ? (String) title.value : null, (String) body.value);
    }

    /**
     * The threads of a retraction: one thread id (a string or an integer), an
     * array of them, or a JSON array in a string. A string that is not a JSON
     * array is one thread id.
     */
    private List<String> threads(PayloadValue value, String path) {
        List<PayloadValue> elements = new ArrayList<>();
        if (value.kind == PayloadValue.Kind.ARRAY) {
            elements = value.elements();
        } else if (value.kind == PayloadValue.Kind.STRING) {
            PayloadValue parsed = null;
            try {
                parsed = PayloadValue.of(Json.parse((String) value.value));
            } catch (Json.SyntaxError notJson) {
                // One thread id, as written.
            }
            if (parsed != null && parsed.kind == PayloadValue.Kind.ARRAY) {
                elements = parsed.elements();
            } else {
                elements.add(value);
            }
        } else {
            elements.add(value);
        }
        boolean single = elements.size() == 1 && value.sameAs(elements.get(0));
        List<String> threads = new ArrayList<>();
        for (int index = 0; index < elements.size(); index++) {
            String thread = thread(elements.get(index), single ? path : path + "[" + index + "]");
            if (thread != null) threads.add(thread);
        }
        return threads;
    }

    /** A reference: a non-empty string or an integer; null means absent. A bad one is a diagnostic. */
    private String reference(PayloadValue value, String path) {
        try {
            return readReference(value, path);
        } catch (Problem problem) {
            diagnostics.add(problem.problem);
            return null;
        }
    }

    /** A thread id, read as a reference is; the messages say "thread id". */
    private String thread(PayloadValue value, String path) {
        return identifier(value, path, "thread id");
    }

    /** A value read as a reference is, whose messages call it {@code name}. */
    private String identifier(PayloadValue value, String path, String name) {
        try {
            return readReference(value, path);
        } catch (Problem problem) {
            PayloadProblem found = problem.problem;
            if (problem.invalidValue) {
                found = PayloadProblem.invalidValue(path, problem.reason.replace("reference", name));
            }
            diagnostics.add(found);
            return null;
        }
    }

    private static String readReference(PayloadValue value, String path) throws Problem {
        switch (value.kind) {
            case NULL:
                return null;
            case STRING: {
                String string = (String) value.value;
                if (string.isEmpty()) throw Problem.invalid(path, "a reference must not be empty");
                return string;
            }
            case INTEGER:
                return (String) value.value;
            case FRACTION: {
                double number = (Double) value.value;
                String written = JsonNumber.swiftDescription(number);
                if (number == Math.rint(number)) {
                    throw Problem.invalid(path, written + " is too large for an integer reference; send it as a string");
                }
                throw Problem.invalid(path, written + " is not an integer reference");
            }
            default:
                throw new Problem(PayloadProblem.wrongType(path, "a string or an integer", value.kindName()), false, null);
        }
    }

    /** A badge: a whole number from 0, or one as a string (FCM data values are); null means absent. A bad one is a diagnostic. */
    private Integer badge(PayloadValue value, String path) {
        switch (value.kind) {
            case NULL:
                return null;
            case INTEGER:
            case STRING:
                try {
                    int badge = Integer.parseInt((String) value.value);
                    if (badge >= 0) return badge;
                } catch (NumberFormatException notAWholeNumber) {
                    // Said below.
                }
                diagnostics.add(PayloadProblem.invalidValue(path, quotedForMessage(value) + " is not a badge (a whole number from 0)"));
                return null;
            case FRACTION:
                diagnostics.add(PayloadProblem.invalidValue(path, quotedForMessage(value) + " is not a badge (a whole number from 0)"));
                return null;
            default:
                diagnostics.add(PayloadProblem.wrongType(path, "a whole number", value.kindName()));
                return null;
        }
    }

    /** The removal flag: true/false, 1/0, or those as strings; null means absent. A bad one is a diagnostic. */
    private Boolean flag(PayloadValue value, String path) {
        switch (value.kind) {
            case NULL:
                return null;
            case BOOLEAN:
                return (Boolean) value.value;
            case INTEGER:
            case STRING:
                if ("1".equals(value.value) || (value.kind == PayloadValue.Kind.STRING && "true".equals(value.value))) return true;
                if ("0".equals(value.value) || (value.kind == PayloadValue.Kind.STRING && "false".equals(value.value))) return false;
                diagnostics.add(PayloadProblem.invalidValue(path, quotedForMessage(value) + " is not a removal flag (true, 1 or \"true\")"));
                return null;
            case FRACTION:
                diagnostics.add(PayloadProblem.invalidValue(path, quotedForMessage(value) + " is not a removal flag (true, 1 or \"true\")"));
                return null;
            default:
                diagnostics.add(PayloadProblem.wrongType(path, "a boolean, 0/1 or \"true\"/\"false\"", value.kindName()));
                return null;
        }
    }

    private static String quotedForMessage(PayloadValue value) {
        switch (value.kind) {
            case INTEGER:
                return (String) value.value;
            case FRACTION:
                return JsonNumber.swiftDescription((Double) value.value);
            case STRING:
                return "\"" + value.value + "\"";
            default:
                return value.kindName();
        }
    }

    /** {@code key} inside the object at {@code path}; top-level keys have no prefix. */
    static String path(String path, String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    /** A value that cannot be read, with what a thread id's message needs. */
    private static final class Problem extends Exception {
        private static final long serialVersionUID = 1L;
        final transient PayloadProblem problem;
        final boolean invalidValue;
        final String reason;

        Problem(PayloadProblem problem, boolean invalidValue, String reason) {
            super(problem.description(), null, false, false);
            this.problem = problem;
            this.invalidValue = invalidValue;
            this.reason = reason;
        }

        static Problem invalid(String path, String reason) {
            return new Problem(PayloadProblem.invalidValue(path, reason), true, reason);
        }
    }
}
