// Stand-in, declarations only: https://developer.android.com/reference/android/os/Bundle
// (Bundle(), keySet(), get(String) (deprecated in API 33, still present), getString(String), putString).
package android.os;

import java.util.Set;

public final class Bundle {
    public Bundle() {
        throw new RuntimeException("Stub!");
    }

    public Set<String> keySet() {
        throw new RuntimeException("Stub!");
    }

    @Deprecated
    public Object get(String key) {
        throw new RuntimeException("Stub!");
    }

    public String getString(String key) {
        throw new RuntimeException("Stub!");
    }

    public void putString(String key, String value) {
        throw new RuntimeException("Stub!");
    }
}
