// Stand-in, declarations only: https://developer.android.com/reference/android/app/Service
// (public abstract class Service extends ContextWrapper).
package android.app;

public abstract class Service extends android.content.ContextWrapper {
    public Service() {
        super(null);
        throw new RuntimeException("Stub!");
    }
}
