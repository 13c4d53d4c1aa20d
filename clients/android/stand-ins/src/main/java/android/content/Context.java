// Stand-in, declarations only: https://developer.android.com/reference/android/content/Context
// (getSystemService(Class) since API 23, getSharedPreferences(String, int), MODE_PRIVATE,
// getPackageManager(), getPackageName(), checkSelfPermission(String) since API 23).
// Bodies throw as android.jar's do; compiled against, never run.
package android.content;

public abstract class Context {
    public static final int MODE_PRIVATE = 0;

    public abstract SharedPreferences getSharedPreferences(String name, int mode);

    public final <T> T getSystemService(Class<T> serviceClass) {
        throw new RuntimeException("Stub!");
    }

    public abstract Context getApplicationContext();

    public abstract android.content.pm.PackageManager getPackageManager();

    public abstract String getPackageName();

    public abstract int checkSelfPermission(String permission);
}
