package com.example.chat;

import com.google.firebase.messaging.FirebaseMessagingService;
import com.google.firebase.messaging.RemoteMessage;

/**
 * A chat app's messaging service with RetractKit for Android: the whole
 * integration. Declared in the manifest with the
 * {@code com.google.firebase.MESSAGING_EVENT} intent filter, as Firebase's
 * guide says (see AndroidManifest.xml beside it). Compiled here against the
 * stand-ins (scripts/android-test).
 */
public class ChatMessagingService extends FirebaseMessagingService {
    /**
     * Retractions, edits (a message's notification, or its line in its
     * conversation's, shows its new words; one dismissed stays gone) and the
     * originals Retract sends for the app to show (into their conversation's
     * notification) are RetractKit's: nothing more to do for them.
     */
    @Override
    public void onMessageReceived(RemoteMessage message) {
        if (ChatRetract.get(this).onMessageReceived(message)) return;
        // The app's own messages (typing indicators, receipts) as before.
    }

    /** FCM dropped messages for this phone (over 100 while it was offline): the feed has the retractions among them. */
    @Override
    public void onDeletedMessages() {
        ChatRetract.get(this).onDeletedMessages();
    }

    @Override
    public void onNewToken(String token) {
        ChatRetract.get(this).onNewToken(token);
        // …and send the token to the chat backend, as before.
    }
}
