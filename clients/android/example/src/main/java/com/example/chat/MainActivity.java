package com.example.chat;

import android.Manifest;
import android.app.Activity;
import android.app.NotificationChannel;
import android.app.NotificationManager;
import android.content.pm.PackageManager;
import android.os.Build;
import android.os.Bundle;

/**
 * What the app does at start for its notifications: the channel they are
 * posted on (Android 8), the permission to post them (Android 13 asks the
 * user: without it nothing shows, and nothing needs taking back), and a
 * catch-up on the device feed, off the main thread.
 */
public class MainActivity extends Activity {
    static final int NOTIFICATION_PERMISSION = 1;

    @Override
    protected void onCreate(Bundle savedInstanceState) {
        super.onCreate(savedInstanceState);
        NotificationManager manager = getSystemService(NotificationManager.class);
        manager.createNotificationChannel(new NotificationChannel(ChatRetract.CHANNEL, "Messages", NotificationManager.IMPORTANCE_HIGH));
        if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.TIRAMISU
                && checkSelfPermission(Manifest.permission.POST_NOTIFICATIONS) != PackageManager.PERMISSION_GRANTED) {
            requestPermissions(new String[] {Manifest.permission.POST_NOTIFICATIONS}, NOTIFICATION_PERMISSION);
        }
        // FCM delivers nothing to a force-stopped app: what was retracted meanwhile is in the feed.
        new Thread(() -> {
            try {
                ChatRetract.get(this).catchUp(dev.retract.kit.android.RetractMessaging.DEFAULT_FEED_BUDGET_MILLIS);
            } catch (dev.retract.kit.FeedException unread) {
                // Read again at the next start.
            }
        }).start();
    }
}
