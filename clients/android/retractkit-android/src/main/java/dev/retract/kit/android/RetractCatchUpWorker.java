package dev.retract.kit.android;

import android.content.Context;
import androidx.work.ListenableWorker;
import androidx.work.Worker;
import androidx.work.WorkerParameters;
import dev.retract.kit.FeedException;

/**
 * A WorkManager job that reads the device feed ({@link RetractMessaging#catchUp(long)})
 * and cancels what it names, for {@link WorkManagerCatchUp}. The app
 * subclasses it to give the {@link RetractMessaging} it uses, and lists
 * nothing in its manifest (WorkManager's own initializer runs it):
 *
 * <pre>{@code
 * public final class ChatCatchUpWorker extends RetractCatchUpWorker {
 *     public ChatCatchUpWorker(Context context, WorkerParameters parameters) { super(context, parameters); }
 *     protected RetractMessaging retractMessaging(Context context) { return ChatRetract.get(context); }
 * }
 * }</pre>
 */
public abstract class RetractCatchUpWorker extends Worker {
    /** How long one job's pages may take together: WorkManager gives a job up to ten minutes. */
    public static final long BUDGET_MILLIS = 60_000;

    protected RetractCatchUpWorker(Context context, WorkerParameters parameters) {
        super(context, parameters);
    }

    /** The app's {@link RetractMessaging}, as its messaging service makes it. */
    protected abstract RetractMessaging retractMessaging(Context context);

    /**
     * Reads the feed. A feed that cannot be reached now (no answer, 429, 5xx)
     * is tried again with WorkManager's backoff; one that refuses the key
     * (another 4xx) is not, and the next start reads it.
     */
    @Override
    public final ListenableWorker.Result doWork() {
        try {
            retractMessaging(getApplicationContext()).catchUp(BUDGET_MILLIS);
            return ListenableWorker.Result.success();
        } catch (FeedException unread) {
            int status = unread.status();
            boolean later = status == 0 || status == 429 || status >= 500;
            return later ? ListenableWorker.Result.retry() : ListenableWorker.Result.failure();
        }
    }
}
