// Stand-in, declarations only: https://developer.android.com/reference/android/app/NotificationChannel
// (NotificationChannel(String id, CharSequence name, int importance), API 26).
package android.app;

public final class NotificationChannel {
    public NotificationChannel(String id, CharSequence name, int importance) {
        throw new RuntimeException("Stub!");
    }
}
