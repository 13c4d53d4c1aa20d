package dev.retract.kit.android;

import android.app.NotificationManager;
import android.os.Bundle;
import android.service.notification.StatusBarNotification;
import dev.retract.kit.NotificationShade;
import dev.retract.kit.ShownNotification;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The app's notifications as {@code NotificationManager} shows them
 * ({@code getActiveNotifications()}, API 23) and cancels them
 * ({@code cancel(tag, id)}).
 */
public final class SystemNotificationShade implements NotificationShade {
    private final NotificationManager manager;

    public SystemNotificationShade(NotificationManager manager) {
        this.manager = manager;
    }

    @Override
    public List<ShownNotification> active() {
        List<ShownNotification> showing = new ArrayList<>();
        for (StatusBarNotification shown : manager.getActiveNotifications()) {
            android.app.Notification notification = shown.getNotification();
            showing.add(new ShownNotification(shown.getTag(), shown.getId(), extras(notification.extras), notification.getGroup(),
                    notification.getChannelId()));
        }
        return showing;
    }

    @Override
    public void cancel(ShownNotification notification) {
        manager.cancel(notification.tag(), notification.id());
    }

    /** The extras' values as the library reads them: strings, numbers and booleans; the rest is not Retract's. */
    @SuppressWarnings("deprecation")
    private static Map<String, Object> extras(Bundle bundle) {
        Map<String, Object> extras = new LinkedHashMap<>();
        if (bundle == null) return extras;
        for (String key : bundle.keySet()) {
            Object value = bundle.get(key);
            if (value instanceof String || value instanceof Number || value instanceof Boolean) extras.put(key, value);
        }
        return extras;
    }
}
