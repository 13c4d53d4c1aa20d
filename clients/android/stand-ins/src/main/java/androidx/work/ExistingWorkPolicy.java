// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/ExistingWorkPolicy
// (REPLACE, KEEP, APPEND, APPEND_OR_REPLACE).
package androidx.work;

public enum ExistingWorkPolicy {
    REPLACE, KEEP, APPEND, APPEND_OR_REPLACE
}
