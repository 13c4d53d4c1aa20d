package dev.retract.kit.android;

import android.app.NotificationManager;
import android.content.Context;
import com.google.firebase.messaging.RemoteMessage;
import dev.retract.kit.Conversations;
import dev.retract.kit.FeedCursor;
import dev.retract.kit.FeedException;
import dev.retract.kit.MessageOutcome;
import dev.retract.kit.Original;
import dev.retract.kit.RetractClient;
import dev.retract.kit.RetractionFeed;
import dev.retract.kit.Tombstones;
import java.io.IOException;
import java.util.Map;

/**
 * The glue a {@code FirebaseMessagingService} calls: retractions cancel what
 * they name, edits re-post what they name with their words, originals Retract
 * sent as data only are posted under their tag on the app's channel (or into
 * their conversation's notification), and the device feed is read with a
 * cursor kept in {@code SharedPreferences}. Everything it decides is the
 * plain-JVM {@link RetractClient}'s; this class only reaches Android.
 *
 * <p>{@code onMessageReceived} and {@code onNewToken} run on a background
 * thread; a feed read they ask for goes to the {@link CatchUpScheduler}
 * given (WorkManager: {@link WorkManagerCatchUp}), or runs there, within
 * {@link #DEFAULT_FEED_BUDGET_MILLIS}, without one. Call {@link #catchUp} at
 * start from a background thread too.
 */
public final class RetractMessaging {
    /** The {@code SharedPreferences} file it keeps its tombstones and feed cursor in. */
    public static final String PREFERENCES = "dev.retract.kit";
    /**
     * How long one catch-up may take inside {@code onMessageReceived}. Firebase
     * gives that "a short execution window" whose length it does not state, so
     * a read there is kept short; a scheduled one or one at start has more.
     */
    public static final long DEFAULT_FEED_BUDGET_MILLIS = 5_000;

    /** How the library posts what it shows for the app, and where it reads the feed when a message asks. */
    public static final class Settings {
        final String channelId;
        final int smallIcon;
        boolean conversations;
        NotificationStyler styler = NotificationStyler.NONE;
        CatchUpScheduler scheduler;

        /**
         * @param channelId the channel the library's notifications are posted on (created by the app)
         * @param smallIcon the icon resource of those notifications
         */
        public Settings(String channelId, int smallIcon) {
            this.channelId = channelId;
            this.smallIcon = smallIcon;
        }

        /**
         * Shows an original with a conversation ({@code thread} when it was
         * sent) in its conversation's notification, a {@code MessagingStyle}
         * holding its last messages, instead of a notification of its own.
         * A retraction or an edit of one message then re-posts the
         * conversation without it or with its new words, silently.
         */
        public Settings showingConversations() {
            conversations = true;
            return this;
        }

        /** The app's hook into each notification posted: its intents, people, shortcut. */
        public Settings styledBy(NotificationStyler styler) {
            this.styler = styler;
            return this;
        }

        /** Where a feed read a message asks for goes, out of {@code onMessageReceived}. */
        public Settings catchingUpWith(CatchUpScheduler scheduler) {
            this.scheduler = scheduler;
            return this;
        }
    }

    private final Context context;
    private final NotificationManager manager;
    private final RetractClient client;
    private final FeedCursor cursor;
    private final RetractionFeed feed;
    private final Settings settings;
    private final Conversations conversations;

    /**
     * @param feed the device feed, or null to read none
     * @param channelId the channel the app's originals are posted on (created by the app)
     * @param smallIcon the icon resource of those notifications
     */
    public RetractMessaging(Context context, RetractionFeed feed, String channelId, int smallIcon) {
        this(context, feed, new Settings(channelId, smallIcon));
    }

    /** @param feed the device feed, or null to read none */
    public RetractMessaging(Context context, RetractionFeed feed, Settings settings) {
        this.context = context;
        this.manager = context.getSystemService(NotificationManager.class);
        android.content.SharedPreferences preferences = context.getSharedPreferences(PREFERENCES, Context.MODE_PRIVATE);
        this.conversations = settings.conversations ? new Conversations() : null;
        this.client = new RetractClient(new Tombstones(new PreferencesStorage(preferences, "tombstones")), conversations);
        this.cursor = new FeedCursor(new PreferencesStorage(preferences, "feedCursor"));
        this.feed = feed;
        this.settings = settings;
    }

    /**
     * Handles a message if it is Retract's to handle.
     *
     * @return true for a retraction; for an edit (the notifications of its
     *     references still showing now show its words; one the user
     *     dismissed stays gone, one retracted is never shown again); for an
     *     original Retract sent for the app to show, and for an original
     *     Firebase would have shown but handed to the app because it is in
     *     the foreground (each posted under its tag, or into its
     *     conversation's notification, unless its retraction came first);
     *     false for anything else, the app's own, to handle as before
     */
    public boolean onMessageReceived(RemoteMessage message) {
        Map<String, String> data = message.getData();
        SystemNotificationShade shade = shade();
        MessageOutcome outcome = client.onMessageReceived(data, shade);
        switch (outcome.kind()) {
            case RETRACTION:
                if (outcome.moreInFeed()) catchUpSoon();
                return true;
            case ORIGINAL:
                show(outcome.original(), null, shade);
                return true;
            case EDIT:
            case RETRACTED_ORIGINAL:
                return true;
            default:
                // In the foreground, Firebase hands the app a notification message rather than showing it.
                RemoteMessage.Notification shown = message.getNotification();
                if (shown == null || outcome.original() == null) return false;
                if (!outcome.retractedBefore()) show(outcome.original().withAlert(shown.getTitle(), shown.getBody()), shown.getTag(), shade);
                return true;
        }
    }

    /**
     * FCM dropped messages for this phone ({@code FirebaseMessagingService.onDeletedMessages}:
     * over 100 pending while it was offline, or held too long): retractions
     * among them are read from the feed.
     */
    public void onDeletedMessages() {
        catchUpSoon();
    }

    /** Saves a new registration token and reads the feed for it from the beginning. */
    public void onNewToken(String token) {
        try {
            cursor.saveToken(token);
        } catch (IOException unsaved) {
            return;
        }
        catchUpSoon();
    }

    /**
     * Reads the device feed and cancels what it names: at every start (FCM
     * delivers nothing to a force-stopped app), and when a message asks
     * (through the {@link CatchUpScheduler}, or at once without one).
     */
    public RetractClient.CatchUp catchUp(long budgetMillis) throws FeedException {
        if (feed == null) return null;
        return client.catchUp(feed, cursor, shade(), budgetMillis);
    }

    private void catchUpSoon() {
        if (feed == null) return;
        if (settings.scheduler != null) {
            settings.scheduler.scheduleCatchUp();
            return;
        }
        try {
            catchUp(DEFAULT_FEED_BUDGET_MILLIS);
        } catch (FeedException unread) {
            // Read again at the next start or push; the cursor did not move.
        }
    }

    /** Posts {@code original} in its conversation's notification, when the app shows conversations and it has one; else under {@code tag}. */
    private void show(Original original, String tag, SystemNotificationShade shade) {
        if (conversations != null && conversations.post(original, System.currentTimeMillis(), shade) != null) return;
        shade.post(original, tag);
    }

    private SystemNotificationShade shade() {
        return new SystemNotificationShade(context, manager, settings.channelId, settings.smallIcon, settings.styler);
    }
}
