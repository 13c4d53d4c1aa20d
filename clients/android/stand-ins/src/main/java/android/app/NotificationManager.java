// Stand-in, declarations only: https://developer.android.com/reference/android/app/NotificationManager
// (getActiveNotifications() since API 23, cancel(String, int), notify(String, int, Notification),
// createNotificationChannel(NotificationChannel) since API 26, IMPORTANCE_HIGH).
package android.app;

import android.service.notification.StatusBarNotification;

public class NotificationManager {
    public static final int IMPORTANCE_HIGH = 4;

    NotificationManager() {
        throw new RuntimeException("Stub!");
    }

    public StatusBarNotification[] getActiveNotifications() {
        throw new RuntimeException("Stub!");
    }

    public void cancel(String tag, int id) {
        throw new RuntimeException("Stub!");
    }

    public void notify(String tag, int id, Notification notification) {
        throw new RuntimeException("Stub!");
    }

    public void createNotificationChannel(NotificationChannel channel) {
        throw new RuntimeException("Stub!");
    }
}
