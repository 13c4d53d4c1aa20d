// Stand-in, declarations only: https://developer.android.com/reference/android/app/PendingIntent
// (getActivity(Context, int, Intent, int), FLAG_IMMUTABLE since API 23, FLAG_UPDATE_CURRENT).
package android.app;

import android.content.Context;
import android.content.Intent;

public final class PendingIntent {
    public static final int FLAG_IMMUTABLE = 67108864;
    public static final int FLAG_UPDATE_CURRENT = 134217728;

    PendingIntent() {
        throw new RuntimeException("Stub!");
    }

    public static PendingIntent getActivity(Context context, int requestCode, Intent intent, int flags) {
        throw new RuntimeException("Stub!");
    }
}
