package com.example.chat;

import android.content.Context;
import dev.retract.kit.RetractionFeed;
import dev.retract.kit.android.NotificationStyler;
import dev.retract.kit.android.RetractMessaging;
import dev.retract.kit.android.WorkManagerCatchUp;

/**
 * The app's one {@link RetractMessaging}, made once and shared by its
 * messaging service and its catch-up worker: conversation notifications on
 * the "messages" channel, the feed read in WorkManager when a message asks.
 */
final class ChatRetract {
    static final String CHANNEL = "messages";
    private static RetractMessaging shared;

    private ChatRetract() {}

    static synchronized RetractMessaging get(Context context) {
        if (shared == null) {
            Context app = context.getApplicationContext();
            RetractionFeed feed = new RetractionFeed("https://retract.example.com", BuildSecrets.RETRACT_CLIENT_KEY, null);
            RetractMessaging.Settings settings = new RetractMessaging.Settings(CHANNEL, BuildSecrets.NOTIFICATION_ICON)
                    .showingConversations()
                    .styledBy(new ChatStyler())
                    .catchingUpWith(new WorkManagerCatchUp(app, ChatCatchUpWorker.class));
            shared = new RetractMessaging(app, feed, settings);
        }
        return shared;
    }

    /** The app's own touches: its long-lived shortcut per conversation (Android 11's conversation space). */
    static final class ChatStyler implements NotificationStyler {
        @Override
        public void styleConversation(android.app.Notification.Builder builder, dev.retract.kit.Conversation conversation) {
            builder.setShortcutId("conversation-" + conversation.thread());
        }
    }
}
