// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/WorkManager
// (getInstance(Context), enqueueUniqueWork(String, ExistingWorkPolicy, OneTimeWorkRequest)).
package androidx.work;

import android.content.Context;

public abstract class WorkManager {
    WorkManager() {
        throw new RuntimeException("Stub!");
    }

    public static WorkManager getInstance(Context context) {
        throw new RuntimeException("Stub!");
    }

    public abstract Operation enqueueUniqueWork(String uniqueWorkName, ExistingWorkPolicy existingWorkPolicy, OneTimeWorkRequest work);
}
