// Stand-in, declarations only: https://developer.android.com/reference/android/app/Notification
// (the public field extras, getGroup(), getChannelId() since API 26) and
// https://developer.android.com/reference/android/app/Notification.Builder
// (Builder(Context, String channelId) since API 26, recoverBuilder(Context, Notification)
// since API 24, and the setters used here).
package android.app;

import android.content.Context;
import android.os.Bundle;

public class Notification {
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

        public Notification build() {
            throw new RuntimeException("Stub!");
        }
    }
}
