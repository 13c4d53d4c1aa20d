// Stand-in, declarations only: https://developer.android.com/reference/android/content/Intent
// (addFlags(int), putExtra(String, String), setPackage(String), FLAG_ACTIVITY_CLEAR_TOP).
package android.content;

public class Intent {
    public static final int FLAG_ACTIVITY_CLEAR_TOP = 67108864;

    public Intent() {
        throw new RuntimeException("Stub!");
    }

    public Intent addFlags(int flags) {
        throw new RuntimeException("Stub!");
    }

    public Intent putExtra(String name, String value) {
        throw new RuntimeException("Stub!");
    }

    public Intent setPackage(String packageName) {
        throw new RuntimeException("Stub!");
    }
}
