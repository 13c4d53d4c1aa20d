// Stand-in, declarations only: https://developer.android.com/reference/android/Manifest.permission
// (POST_NOTIFICATIONS since API 33).
package android;

public final class Manifest {
    Manifest() {
        throw new RuntimeException("Stub!");
    }

    public static final class permission {
        public static final String POST_NOTIFICATIONS = "android.permission.POST_NOTIFICATIONS";

        permission() {
            throw new RuntimeException("Stub!");
        }
    }
}
