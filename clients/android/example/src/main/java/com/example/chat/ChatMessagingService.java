package com.example.chat;

import com.google.firebase.messaging.FirebaseMessagingService;
import com.google.firebase.messaging.RemoteMessage;
import dev.retract.kit.RetractionFeed;
import dev.retract.kit.android.RetractMessaging;

/**
 * A chat app's messaging service with RetractKit for Android: the whole
 * integration. Declared in the manifest with the
 * {@code com.google.firebase.MESSAGING_EVENT} intent filter, as Firebase's
 * guide says. Compiled here against the stand-ins (scripts/android-test).
 */
public class ChatMessagingService extends FirebaseMessagingService {
    static final String CHANNEL = "messages";
    private RetractMessaging retract;

    private RetractMessaging retract() {
        if (retract == null) {
            RetractionFeed feed = new RetractionFeed("https://retract.example.com", BuildSecrets.RETRACT_CLIENT_KEY, null);
            retract = new RetractMessaging(getApplicationContext(), feed, CHANNEL, BuildSecrets.NOTIFICATION_ICON);
        }
        return retract;
    }

    /**
     * Retractions, edits (the notification of an edited message, still
     * showing, shows its new words; one dismissed stays gone) and the
     * originals Retract sends for the app to show are RetractKit's: nothing
     * more to do for them.
     */
    @Override
    public void onMessageReceived(RemoteMessage message) {
        if (retract().onMessageReceived(message)) return;
        // The app's own messages (typing indicators, receipts) as before.
    }

    @Override
    public void onNewToken(String token) {
        retract().onNewToken(token);
        // …and send the token to the chat backend, as before.
    }
}
