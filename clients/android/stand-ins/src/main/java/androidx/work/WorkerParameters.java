// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/WorkerParameters
package androidx.work;

public final class WorkerParameters {
    WorkerParameters() {
        throw new RuntimeException("Stub!");
    }
}
