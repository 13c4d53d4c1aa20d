package com.example.chat;

import android.content.Context;
import androidx.work.WorkerParameters;
import dev.retract.kit.android.RetractCatchUpWorker;
import dev.retract.kit.android.RetractMessaging;

/** Reads the device feed in WorkManager when a message asks for it (see {@link ChatRetract}). */
public final class ChatCatchUpWorker extends RetractCatchUpWorker {
    public ChatCatchUpWorker(Context context, WorkerParameters parameters) {
        super(context, parameters);
    }

    @Override
    protected RetractMessaging retractMessaging(Context context) {
        return ChatRetract.get(context);
    }
}
