// Stand-in, declarations only: https://developer.android.com/reference/android/service/notification/StatusBarNotification
// (getTag(), getId(), getNotification()).
package android.service.notification;

import android.app.Notification;

public class StatusBarNotification {
    StatusBarNotification() {
        throw new RuntimeException("Stub!");
    }

    public String getTag() {
        throw new RuntimeException("Stub!");
    }

    public int getId() {
        throw new RuntimeException("Stub!");
    }

    public Notification getNotification() {
        throw new RuntimeException("Stub!");
    }
}
