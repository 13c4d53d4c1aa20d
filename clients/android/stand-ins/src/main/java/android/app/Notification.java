// Stand-in, declarations only: https://developer.android.com/reference/android/app/Notification
// (the public field extras, getGroup(), getChannelId() since API 26, CATEGORY_MESSAGE),
// https://developer.android.com/reference/android/app/Notification.Builder
// (Builder(Context, String channelId) since API 26, recoverBuilder(Context, Notification)
// since API 24, setShortcutId since API 26, addPerson(Person) since API 28, and the setters used here),
// https://developer.android.com/reference/android/app/Notification.Style and
// https://developer.android.com/reference/android/app/Notification.MessagingStyle
// (MessagingStyle(CharSequence) API 24, deprecated in 28; MessagingStyle(Person) API 28;
// setConversationTitle API 24; setGroupConversation API 28; addMessage(CharSequence, long,
// CharSequence) API 24, deprecated in 28; addMessage(CharSequence, long, Person) API 28;
// MAXIMUM_RETAINED_MESSAGES = 25).
package android.app;

import android.content.Context;
import android.os.Bundle;

public class Notification {
    public static final String CATEGORY_MESSAGE = "msg";

    public Bundle extras;

    public String getGroup() {
        throw new RuntimeException("Stub!");
    }

    public String getChannelId() {
        throw new RuntimeException("Stub!");
    }

    public static class Builder {
        public Builder(Context context, String channelId) {
            throw new RuntimeException("Stub!");
        }

        public static Notification.Builder recoverBuilder(Context context, Notification n) {
            throw new RuntimeException("Stub!");
        }

        public Builder setContentTitle(CharSequence title) {
            throw new RuntimeException("Stub!");
        }

        public Builder setContentText(CharSequence text) {
            throw new RuntimeException("Stub!");
        }

        public Builder setSmallIcon(int icon) {
            throw new RuntimeException("Stub!");
        }

        public Builder setGroup(String groupKey) {
            throw new RuntimeException("Stub!");
        }

        public Builder addExtras(Bundle extras) {
            throw new RuntimeException("Stub!");
        }

        public Builder setAutoCancel(boolean autoCancel) {
            throw new RuntimeException("Stub!");
        }

        public Builder setOnlyAlertOnce(boolean onlyAlertOnce) {
            throw new RuntimeException("Stub!");
        }

        public Builder setStyle(Notification.Style style) {
            throw new RuntimeException("Stub!");
        }

        public Builder setCategory(String category) {
            throw new RuntimeException("Stub!");
        }

        public Builder setWhen(long when) {
            throw new RuntimeException("Stub!");
        }

        public Builder setShowWhen(boolean show) {
            throw new RuntimeException("Stub!");
        }

        public Builder setContentIntent(PendingIntent intent) {
            throw new RuntimeException("Stub!");
        }

        public Builder setShortcutId(String shortcutId) {
            throw new RuntimeException("Stub!");
        }

        public Builder addPerson(Person person) {
            throw new RuntimeException("Stub!");
        }

        public Notification build() {
            throw new RuntimeException("Stub!");
        }
    }

    public abstract static class Style {
        public Style() {
            throw new RuntimeException("Stub!");
        }
    }

    public static class MessagingStyle extends Style {
        public static final int MAXIMUM_RETAINED_MESSAGES = 25;

        @Deprecated
        public MessagingStyle(CharSequence userDisplayName) {
            throw new RuntimeException("Stub!");
        }

        public MessagingStyle(Person user) {
            throw new RuntimeException("Stub!");
        }

        public MessagingStyle setConversationTitle(CharSequence conversationTitle) {
            throw new RuntimeException("Stub!");
        }

        public MessagingStyle setGroupConversation(boolean isGroupConversation) {
            throw new RuntimeException("Stub!");
        }

        @Deprecated
        public MessagingStyle addMessage(CharSequence text, long timestamp, CharSequence sender) {
            throw new RuntimeException("Stub!");
        }

        public MessagingStyle addMessage(CharSequence text, long timestamp, Person sender) {
            throw new RuntimeException("Stub!");
        }
    }
}
