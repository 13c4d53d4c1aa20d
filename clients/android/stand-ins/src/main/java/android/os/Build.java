// Stand-in, declarations only: https://developer.android.com/reference/android/os/Build.VERSION
// (SDK_INT) and https://developer.android.com/reference/android/os/Build.VERSION_CODES (P = 28, TIRAMISU = 33).
package android.os;

public class Build {
    Build() {
        throw new RuntimeException("Stub!");
    }

    public static class VERSION {
        public static final int SDK_INT = 0;

        VERSION() {
            throw new RuntimeException("Stub!");
        }
    }

    public static class VERSION_CODES {
        public static final int P = 28;
        public static final int TIRAMISU = 33;

        VERSION_CODES() {
            throw new RuntimeException("Stub!");
        }
    }
}
