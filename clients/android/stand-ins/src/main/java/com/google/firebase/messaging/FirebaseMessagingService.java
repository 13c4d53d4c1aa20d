// Stand-in, declarations only: https://firebase.google.com/docs/reference/android/com/google/firebase/messaging/FirebaseMessagingService
// (extends EnhancedIntentService, itself an android.app.Service; onMessageReceived(RemoteMessage),
// onNewToken(String), onDeletedMessages(): "called when the FCM server deletes pending messages", as it
// does past 100 pending for an offline device).
package com.google.firebase.messaging;

public class FirebaseMessagingService extends android.app.Service {
    public FirebaseMessagingService() {
        throw new RuntimeException("Stub!");
    }

    public void onMessageReceived(RemoteMessage message) {
        throw new RuntimeException("Stub!");
    }

    public void onNewToken(String token) {
        throw new RuntimeException("Stub!");
    }

    public void onDeletedMessages() {
        throw new RuntimeException("Stub!");
    }
}
