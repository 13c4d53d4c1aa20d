// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/Worker
// (Worker(Context, WorkerParameters); doWork() runs on a background thread WorkManager provides).
package androidx.work;

import android.content.Context;

public abstract class Worker extends ListenableWorker {
    public Worker(Context context, WorkerParameters workerParams) {
        super(context, workerParams);
        throw new RuntimeException("Stub!");
    }

    public abstract ListenableWorker.Result doWork();
}
