package dev.retract.kit.android;

import android.app.Notification;
import android.app.NotificationManager;
import android.content.Context;
import android.os.Bundle;
import com.google.firebase.messaging.RemoteMessage;
import dev.retract.kit.FeedCursor;
import dev.retract.kit.FeedException;
import dev.retract.kit.MessageOutcome;
import dev.retract.kit.Original;
import dev.retract.kit.RetractClient;
import dev.retract.kit.RetractionFeed;
import dev.retract.kit.Tombstones;
import java.util.Map;

/**
 * The glue a {@code FirebaseMessagingService} calls: retractions cancel what
 * they name, edits re-post what they name with their words, originals Retract
 * sent as data only are posted under their tag on the app's channel, and the
 * device feed is read with a cursor kept in {@code SharedPreferences}. Everything it decides is the plain-JVM
 * {@link RetractClient}'s; this class only reaches Android.
 *
 * <p>{@code onMessageReceived} and {@code onNewToken} run on a background
 * thread, where the feed's network read is allowed; call {@link #catchUp}
 * at start from a background thread too.
 */
public final class RetractMessaging {
    /** The {@code SharedPreferences} file it keeps its tombstones and feed cursor in. */
    public static final String PREFERENCES = "dev.retract.kit";
    /**
     * How long one catch-up may take. Firebase gives {@code onMessageReceived}
     * "a short execution window" whose length it does not state, so a
     * retraction's feed read is kept short; at start there is no such window.
     */
    public static final long DEFAULT_FEED_BUDGET_MILLIS = 5_000;

    private final Context context;
    private final NotificationManager manager;
    private final RetractClient client;
    private final FeedCursor cursor;
    private final RetractionFeed feed;
    private final String channelId;
    private final int smallIcon;

    /**
     * @param feed the device feed, or null to read none
     * @param channelId the channel the app's originals are posted on (created by the app)
     * @param smallIcon the icon resource of those notifications
     */
    public RetractMessaging(Context context, RetractionFeed feed, String channelId, int smallIcon) {
        this.context = context;
        this.manager = context.getSystemService(NotificationManager.class);
        android.content.SharedPreferences preferences = context.getSharedPreferences(PREFERENCES, Context.MODE_PRIVATE);
        this.client = new RetractClient(new Tombstones(new PreferencesStorage(preferences, "tombstones")));
        this.cursor = new FeedCursor(new PreferencesStorage(preferences, "feedCursor"));
        this.feed = feed;
        this.channelId = channelId;
        this.smallIcon = smallIcon;
    }

    /**
     * Handles a message if it is Retract's to handle.
     *
     * @return true for a retraction; for an edit (the notifications of its
     *     references still showing now show its words; one the user
     *     dismissed stays gone, one retracted is never shown again); for an
     *     original Retract sent for the app to show, and for an original
     *     Firebase would have shown but handed to the app because it is in
     *     the foreground (each posted under its tag, unless its retraction
     *     came first); false for anything else, the app's own, to handle as
     *     before
     */
    public boolean onMessageReceived(RemoteMessage message) {
        Map<String, String> data = message.getData();
        SystemNotificationShade shade = new SystemNotificationShade(context, manager);
        MessageOutcome outcome = client.onMessageReceived(data, shade);
        switch (outcome.kind()) {
            case RETRACTION:
                if (outcome.moreInFeed()) catchUpQuietly();
                return true;
            case ORIGINAL:
                post(outcome.original(), null);
                return true;
            case EDIT:
            case RETRACTED_ORIGINAL:
                return true;
            default:
                // In the foreground, Firebase hands the app a notification message rather than showing it.
                RemoteMessage.Notification shown = message.getNotification();
                if (shown == null || outcome.original() == null) return false;
                if (!outcome.retractedBefore()) post(outcome.original().withAlert(shown.getTitle(), shown.getBody()), shown.getTag());
                return true;
        }
    }

    /** Saves a new registration token and reads the feed for it from the beginning. */
    public void onNewToken(String token) {
        try {
            cursor.saveToken(token);
        } catch (java.io.IOException unsaved) {
            return;
        }
        catchUpQuietly();
    }

    /**
     * Reads the device feed and cancels what it names: at every start (FCM
     * delivers nothing to a force-stopped app), and when a retraction says
     * the rest is there.
     */
    public RetractClient.CatchUp catchUp(long budgetMillis) throws FeedException {
        if (feed == null) return null;
        return client.catchUp(feed, cursor, new SystemNotificationShade(context, manager), budgetMillis);
    }

    private void catchUpQuietly() {
        try {
            catchUp(DEFAULT_FEED_BUDGET_MILLIS);
        } catch (FeedException unread) {
            // Read again at the next start or push; the cursor did not move.
        }
    }

    /** Posts {@code original} under {@code tag}, or under its own tag when null, as Firebase would have. */
    private void post(Original original, String tag) {
        Bundle extras = new Bundle();
        for (Map.Entry<String, String> entry : original.extras().entrySet()) extras.putString(entry.getKey(), entry.getValue());
        Notification.Builder builder = new Notification.Builder(context, channelId)
                .setSmallIcon(smallIcon)
                .setAutoCancel(true)
                .addExtras(extras);
        if (original.title() != null) builder.setContentTitle(original.title());
        if (original.body() != null) builder.setContentText(original.body());
        if (original.group() != null) builder.setGroup(original.group());
        manager.notify(tag != null ? tag : original.tag(), 0, builder.build());
    }
}
