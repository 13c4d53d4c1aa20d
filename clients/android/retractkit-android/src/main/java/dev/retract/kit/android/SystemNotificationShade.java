package dev.retract.kit.android;

import android.app.Notification;
import android.app.NotificationManager;
import android.content.Context;
import android.os.Bundle;
import android.service.notification.StatusBarNotification;
import dev.retract.kit.NotificationShade;
import dev.retract.kit.ShownNotification;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The app's notifications as {@code NotificationManager} shows them
 * ({@code getActiveNotifications()}, API 23), cancels them
 * ({@code cancel(tag, id)}) and re-posts them with an edit's words
 * ({@code Notification.Builder.recoverBuilder}, API 24, then
 * {@code notify(tag, id, …)}).
 */
public final class SystemNotificationShade implements NotificationShade {
    private final Context context;
    private final NotificationManager manager;

    /** @param context what {@code recoverBuilder} rebuilds an edited notification with: the app's */
    public SystemNotificationShade(Context context, NotificationManager manager) {
        this.context = context;
        this.manager = manager;
    }

    @Override
    public List<ShownNotification> active() {
        List<ShownNotification> showing = new ArrayList<>();
        for (StatusBarNotification shown : manager.getActiveNotifications()) {
            Notification notification = shown.getNotification();
            showing.add(new ShownNotification(shown.getTag(), shown.getId(), extras(notification.extras), notification.getGroup(),
                    notification.getChannelId()));
        }
        return showing;
    }

    @Override
    public void cancel(ShownNotification notification) {
        manager.cancel(notification.tag(), notification.id());
    }

    /**
     * Rebuilds the notification showing under the same tag and id from itself
     * (its channel, group, extras, icon and intent kept), with the new title
     * and text, and posts it in its place, alerting only once: the user sees
     * the words change, and hears nothing. A style's own text (a
     * {@code BigTextStyle}'s, a {@code MessagingStyle}'s messages) is the
     * app's to rewrite. Nothing when it is no longer showing.
     */
    @Override
    public void edit(ShownNotification notification, String title, String text) {
        for (StatusBarNotification shown : manager.getActiveNotifications()) {
            if (shown.getId() != notification.id() || !Objects.equals(shown.getTag(), notification.tag())) continue;
            Notification.Builder builder = Notification.Builder.recoverBuilder(context, shown.getNotification())
                    .setContentText(text)
                    .setOnlyAlertOnce(true);
            if (title != null) builder.setContentTitle(title);
            manager.notify(shown.getTag(), shown.getId(), builder.build());
            return;
        }
    }

    /**
     * The extras' values as the library reads them: strings (styled text, such
     * as a title, as its characters), numbers and booleans; the rest is not
     * Retract's.
     */
    @SuppressWarnings("deprecation")
    private static Map<String, Object> extras(Bundle bundle) {
        Map<String, Object> extras = new LinkedHashMap<>();
        if (bundle == null) return extras;
        for (String key : bundle.keySet()) {
            Object value = bundle.get(key);
            if (value instanceof CharSequence) {
                extras.put(key, value.toString());
            } else if (value instanceof Number || value instanceof Boolean) {
                extras.put(key, value);
            }
        }
        return extras;
    }
}
