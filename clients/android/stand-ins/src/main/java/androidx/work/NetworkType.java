// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/NetworkType
package androidx.work;

public enum NetworkType {
    NOT_REQUIRED, CONNECTED, UNMETERED, NOT_ROAMING, METERED, TEMPORARILY_UNMETERED
}
