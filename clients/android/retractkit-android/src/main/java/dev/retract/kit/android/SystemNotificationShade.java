package dev.retract.kit.android;

import android.app.Notification;
import android.app.NotificationManager;
import android.app.PendingIntent;
import android.app.Person;
import android.content.Context;
import android.content.Intent;
import android.os.Build;
import android.os.Bundle;
import android.service.notification.StatusBarNotification;
import dev.retract.kit.Conversation;
import dev.retract.kit.ConversationMessage;
import dev.retract.kit.NotificationShade;
import dev.retract.kit.Original;
import dev.retract.kit.ShownNotification;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The app's notifications as {@code NotificationManager} shows them
 * ({@code getActiveNotifications()}, API 23), cancels them
 * ({@code cancel(tag, id)}), re-posts them with an edit's words
 * ({@code Notification.Builder.recoverBuilder}, API 24, then
 * {@code notify(tag, id, …)}) and posts the library's own: a message for
 * the app to show, and conversation notifications ({@code MessagingStyle}),
 * each on the app's channel with its icon, a default content intent and the
 * app's {@link NotificationStyler}.
 */
public final class SystemNotificationShade implements NotificationShade {
    private final Context context;
    private final NotificationManager manager;
    private final String channelId;
    private final int smallIcon;
    private final NotificationStyler styler;

    /**
     * @param context what {@code recoverBuilder} rebuilds an edited notification with, and posts with: the app's
     * @param channelId the channel the library's notifications are posted on (created by the app)
     * @param smallIcon the icon resource of those notifications
     */
    public SystemNotificationShade(Context context, NotificationManager manager, String channelId, int smallIcon,
            NotificationStyler styler) {
        this.context = context;
        this.manager = manager;
        this.channelId = channelId;
        this.smallIcon = smallIcon;
        this.styler = styler == null ? NotificationStyler.NONE : styler;
    }

    /**
     * The app's notifications showing; a conversation notification of the
     * library's with the conversation its extras keep ({@link Conversation#EXTRA_CONVERSATION}).
     */
    @Override
    public List<ShownNotification> active() {
        List<ShownNotification> showing = new ArrayList<>();
        for (StatusBarNotification shown : manager.getActiveNotifications()) {
            Notification notification = shown.getNotification();
            Map<String, Object> extras = extras(notification.extras);
            Object kept = extras.get(Conversation.EXTRA_CONVERSATION);
            Conversation conversation = kept instanceof String ? Conversation.fromJson((String) kept) : null;
            if (conversation != null && Objects.equals(conversation.tag(), shown.getTag())) {
                showing.add(ShownNotification.ofConversation(conversation, notification.getGroup(), notification.getChannelId()));
            } else {
                showing.add(new ShownNotification(shown.getTag(), shown.getId(), extras, notification.getGroup(),
                        notification.getChannelId()));
            }
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
     * {@code BigTextStyle}'s, a {@code MessagingStyle} the app built itself)
     * is the app's to rewrite; the library's conversations are re-posted by
     * {@link #postConversation}. Nothing when it is no longer showing.
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
     * Posts {@code conversation} as a {@code MessagingStyle} notification under
     * its tag, id 0: its messages oldest first, each with its sender (the
     * phone's user for a message without one), the conversation's title and
     * whether it is a group; its time the newest message's. A re-post with
     * {@code onlyAlertOnce} changes it in place without a sound, vibration or
     * heads-up.
     */
    @Override
    public void postConversation(Conversation conversation, boolean onlyAlertOnce) {
        Bundle extras = new Bundle();
        extras.putString(Conversation.EXTRA_CONVERSATION, conversation.toJson());
        Notification.Builder builder = new Notification.Builder(context, channelId)
                .setSmallIcon(smallIcon)
                .setAutoCancel(true)
                .setOnlyAlertOnce(onlyAlertOnce)
                .setCategory(Notification.CATEGORY_MESSAGE)
                .setStyle(style(conversation, styler.userName()))
                .addExtras(extras)
                .setContentIntent(launchIntent(conversation.tag(), conversation.thread(), conversation.account(), null));
        List<ConversationMessage> messages = conversation.messages();
        if (!messages.isEmpty()) {
            ConversationMessage newest = messages.get(messages.size() - 1);
            builder.setWhen(newest.timeMillis()).setShowWhen(true).setContentText(newest.text());
        }
        if (conversation.title() != null) builder.setContentTitle(conversation.title());
        styler.styleConversation(builder, conversation);
        manager.notify(conversation.tag(), 0, builder.build());
    }

    /**
     * Posts {@code original} under {@code tag} (its own when null), as Firebase
     * would have shown it: its title and body, its conversation as its group,
     * its data in its extras and the launch intent's.
     */
    void post(Original original, String tag) {
        Bundle extras = new Bundle();
        for (Map.Entry<String, String> entry : original.extras().entrySet()) extras.putString(entry.getKey(), entry.getValue());
        String posted = tag != null ? tag : original.tag();
        Notification.Builder builder = new Notification.Builder(context, channelId)
                .setSmallIcon(smallIcon)
                .setAutoCancel(true)
                .addExtras(extras)
                .setContentIntent(launchIntent(posted, original.thread(), original.account(), original.extras()));
        if (original.title() != null) builder.setContentTitle(original.title());
        if (original.body() != null) builder.setContentText(original.body());
        if (original.group() != null) builder.setGroup(original.group());
        styler.styleMessage(builder, original);
        manager.notify(posted, 0, builder.build());
    }

    /** The MessagingStyle of a conversation: with {@code Person}s from Android 9, with names before. */
    @SuppressWarnings("deprecation")
    private static Notification.MessagingStyle style(Conversation conversation, CharSequence userName) {
        Notification.MessagingStyle style;
        if (Build.VERSION.SDK_INT >= Build.VERSION_CODES.P) {
            style = new Notification.MessagingStyle(new Person.Builder().setName(userName).build())
                    .setGroupConversation(conversation.isGroup());
            for (ConversationMessage message : conversation.messages()) {
                Person sender = message.sender() == null ? null : new Person.Builder().setName(message.sender()).build();
                style.addMessage(message.text(), message.timeMillis(), sender);
            }
        } else {
            style = new Notification.MessagingStyle(userName);
            for (ConversationMessage message : conversation.messages()) {
                style.addMessage(message.text(), message.timeMillis(), (CharSequence) message.sender());
            }
        }
        if (conversation.title() != null) style.setConversationTitle(conversation.title());
        return style;
    }

    /**
     * What a tap opens by default, as a notification Firebase shows opens: the
     * app's launcher activity, with the message's data, the conversation and
     * the account in its extras (the app's {@link NotificationStyler} sets its
     * own to open the conversation itself). Null for an app without one.
     */
    private PendingIntent launchIntent(String tag, String thread, String account, Map<String, String> data) {
        Intent intent = context.getPackageManager().getLaunchIntentForPackage(context.getPackageName());
        if (intent == null) return null;
        intent.setPackage(null);
        intent.addFlags(Intent.FLAG_ACTIVITY_CLEAR_TOP);
        if (data != null) {
            for (Map.Entry<String, String> entry : data.entrySet()) intent.putExtra(entry.getKey(), entry.getValue());
        }
        if (thread != null) intent.putExtra(EXTRA_THREAD, thread);
        if (account != null) intent.putExtra(EXTRA_ACCOUNT, account);
        return PendingIntent.getActivity(context, tag.hashCode(), intent, PendingIntent.FLAG_IMMUTABLE | PendingIntent.FLAG_UPDATE_CURRENT);
    }

    /** The launch intent's extra naming the conversation of the notification tapped. */
    public static final String EXTRA_THREAD = "dev.retract.kit.thread";
    /** The launch intent's extra naming the account of the notification tapped. */
    public static final String EXTRA_ACCOUNT = "dev.retract.kit.account";

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
