package dev.retract.kit;

import java.util.Map;

/** Reads Retract's custom data out of a push: an FCM message's data map, or any JSON object. */
public final class RetractPayload {
    private RetractPayload() {}

    /**
     * Reads a push leniently, as a phone must: a value that cannot be read is
     * dropped and reported in {@link PushReading#diagnostics()}, and the rest
     * of the push still counts. Never throws for what the map holds.
     *
     * <p>Custom data is read from {@code notificationCustomData} and the
     * article's {@code notifcationCustomData} (an object, or a JSON string
     * holding one, which is how FCM carries it), both when both are present.
     * A push with no readable custom data object is read at its top level,
     * where flat FCM data maps put the keys.
     *
     * @param data the message's data ({@code RemoteMessage.getData()}: every
     *     value a string), or a parsed JSON object
     */
    public static PushReading read(Map<String, ?> data) {
        CustomDataReader reader = new CustomDataReader();
        if (data == null) return new PushReading(null, reader.diagnostics);
        for (String key : PayloadKeys.CUSTOM_DATA) {
            Object value = data.get(key);
            if (value == null || value == Json.NULL) continue;
            reader.readPushValue(value, key);
        }
        // An FCM data map may carry a custom data key left empty next to flat keys.
        if (!reader.foundObject && hasTopLevelKeys(data)) {
            reader.read("", key -> data.containsKey(key) ? PayloadValue.of(data.get(key)) : null);
        }
        return new PushReading(reader.foundObject ? reader.customData : null, reader.diagnostics);
    }

    private static boolean hasTopLevelKeys(Map<String, ?> data) {
        for (int index = 0; index < 2; index++) {
            if (data.containsKey(PayloadKeys.REFERENCE_ID.get(index)) || data.containsKey(PayloadKeys.MUST_REMOVE.get(index))) return true;
        }
        return data.containsKey(PayloadKeys.REFERENCE_IDS) || data.containsKey(PayloadKeys.THREAD_ID)
                || data.containsKey(PayloadKeys.THREAD_IDS) || data.containsKey(PayloadKeys.EDIT);
    }
}
