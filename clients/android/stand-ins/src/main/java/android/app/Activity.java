// Stand-in, declarations only: https://developer.android.com/reference/android/app/Activity
// (onCreate(Bundle), requestPermissions(String[], int) since API 23).
package android.app;

import android.os.Bundle;

public class Activity extends android.content.ContextWrapper {
    public Activity() {
        super(null);
        throw new RuntimeException("Stub!");
    }

    protected void onCreate(Bundle savedInstanceState) {
        throw new RuntimeException("Stub!");
    }

    public final void requestPermissions(String[] permissions, int requestCode) {
        throw new RuntimeException("Stub!");
    }
}
