// Stand-in, declarations only: https://developer.android.com/reference/android/content/pm/PackageManager
// (getLaunchIntentForPackage(String), PERMISSION_GRANTED).
package android.content.pm;

import android.content.Intent;

public abstract class PackageManager {
    public static final int PERMISSION_GRANTED = 0;

    public PackageManager() {
        throw new RuntimeException("Stub!");
    }

    public abstract Intent getLaunchIntentForPackage(String packageName);
}
