// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/Constraints
// and https://developer.android.com/reference/androidx/work/Constraints.Builder (setRequiredNetworkType).
package androidx.work;

public final class Constraints {
    Constraints() {
        throw new RuntimeException("Stub!");
    }

    public static final class Builder {
        public Builder() {
            throw new RuntimeException("Stub!");
        }

        public Builder setRequiredNetworkType(NetworkType networkType) {
            throw new RuntimeException("Stub!");
        }

        public Constraints build() {
            throw new RuntimeException("Stub!");
        }
    }
}
