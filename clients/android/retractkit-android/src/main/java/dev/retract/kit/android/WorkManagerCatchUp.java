package dev.retract.kit.android;

import android.content.Context;
import androidx.work.Constraints;
import androidx.work.ExistingWorkPolicy;
import androidx.work.NetworkType;
import androidx.work.OneTimeWorkRequest;
import androidx.work.WorkManager;

/**
 * Reads the device feed in a WorkManager job ({@link RetractCatchUpWorker}),
 * once the phone has a network: one unique job, a later request appended
 * after the one running, so a retraction that comes during a read is read
 * too.
 *
 * <pre>{@code
 * new RetractMessaging.Settings("messages", R.drawable.ic_notification)
 *     .catchingUpWith(new WorkManagerCatchUp(context, ChatCatchUpWorker.class));
 * }</pre>
 */
public final class WorkManagerCatchUp implements CatchUpScheduler {
    /** The unique work's name. */
    public static final String UNIQUE_WORK = "dev.retract.kit.catch-up";

    private final Context context;
    private final Class<? extends RetractCatchUpWorker> worker;

    /** @param worker the app's {@link RetractCatchUpWorker}, which makes its {@link RetractMessaging} */
    public WorkManagerCatchUp(Context context, Class<? extends RetractCatchUpWorker> worker) {
        this.context = context.getApplicationContext();
        this.worker = worker;
    }

    @Override
    public void scheduleCatchUp() {
        Constraints online = new Constraints.Builder().setRequiredNetworkType(NetworkType.CONNECTED).build();
        OneTimeWorkRequest request = new OneTimeWorkRequest.Builder(worker).setConstraints(online).build();
        WorkManager.getInstance(context).enqueueUniqueWork(UNIQUE_WORK, ExistingWorkPolicy.APPEND_OR_REPLACE, request);
    }
}
