// Stand-in, declarations only: https://developer.android.com/reference/androidx/work/Operation
package androidx.work;

public interface Operation {}
