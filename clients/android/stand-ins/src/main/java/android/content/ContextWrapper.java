// Stand-in, declarations only: https://developer.android.com/reference/android/content/ContextWrapper
package android.content;

public class ContextWrapper extends Context {
    public ContextWrapper(Context base) {
        throw new RuntimeException("Stub!");
    }

    @Override
    public SharedPreferences getSharedPreferences(String name, int mode) {
        throw new RuntimeException("Stub!");
    }

    @Override
    public Context getApplicationContext() {
        throw new RuntimeException("Stub!");
    }

    @Override
    public android.content.pm.PackageManager getPackageManager() {
        throw new RuntimeException("Stub!");
    }

    @Override
    public String getPackageName() {
        throw new RuntimeException("Stub!");
    }

    @Override
    public int checkSelfPermission(String permission) {
        throw new RuntimeException("Stub!");
    }
}
