// Stand-in, declarations only: https://firebase.google.com/docs/reference/android/com/google/firebase/messaging/RemoteMessage
// (getData(), getNotification(), getMessageId(), getPriority(), getOriginalPriority(), PRIORITY_* constants)
// and https://firebase.google.com/docs/reference/android/com/google/firebase/messaging/RemoteMessage.Notification
// (getTitle(), getBody(), getTag()).
package com.google.firebase.messaging;

import java.util.Map;

public final class RemoteMessage {
    public static final int PRIORITY_UNKNOWN = 0;
    public static final int PRIORITY_HIGH = 1;
    public static final int PRIORITY_NORMAL = 2;

    RemoteMessage() {
        throw new RuntimeException("Stub!");
    }

    public Map<String, String> getData() {
        throw new RuntimeException("Stub!");
    }

    public Notification getNotification() {
        throw new RuntimeException("Stub!");
    }

    public static class Notification {
        Notification() {
            throw new RuntimeException("Stub!");
        }

        public String getTitle() {
            throw new RuntimeException("Stub!");
        }

        public String getBody() {
            throw new RuntimeException("Stub!");
        }

        public String getTag() {
            throw new RuntimeException("Stub!");
        }
    }

    public String getMessageId() {
        throw new RuntimeException("Stub!");
    }

    public int getPriority() {
        throw new RuntimeException("Stub!");
    }

    public int getOriginalPriority() {
        throw new RuntimeException("Stub!");
    }
}
