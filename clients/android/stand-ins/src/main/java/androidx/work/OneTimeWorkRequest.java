// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/OneTimeWorkRequest
// and https://developer.android.com/reference/androidx/work/OneTimeWorkRequest.Builder
// (Builder(Class<? extends ListenableWorker>), setConstraints(Constraints), build()).
package androidx.work;

public final class OneTimeWorkRequest {
    OneTimeWorkRequest() {
        throw new RuntimeException("Stub!");
    }

    public static final class Builder {
        public Builder(Class<? extends ListenableWorker> workerClass) {
            throw new RuntimeException("Stub!");
        }

        public Builder setConstraints(Constraints constraints) {
            throw new RuntimeException("Stub!");
        }

        public OneTimeWorkRequest build() {
            throw new RuntimeException("Stub!");
        }
    }
}
