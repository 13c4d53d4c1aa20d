// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/ListenableWorker
// and https://developer.android.com/reference/androidx/work/ListenableWorker.Result
// (success(), retry(), failure()), work-runtime 2.9.
package androidx.work;

import android.content.Context;

public abstract class ListenableWorker {
    public ListenableWorker(Context appContext, WorkerParameters workerParams) {
        throw new RuntimeException("Stub!");
    }

    public final Context getApplicationContext() {
        throw new RuntimeException("Stub!");
    }

    public abstract static class Result {
        Result() {
            throw new RuntimeException("Stub!");
        }

        public static Result success() {
            throw new RuntimeException("Stub!");
        }

        public static Result retry() {
            throw new RuntimeException("Stub!");
        }

        public static Result failure() {
            throw new RuntimeException("Stub!");
        }
    }
}
