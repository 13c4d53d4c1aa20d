package dev.retract.kit;

/** The keys of Retract's payloads (docs/payload.md), in both dialects. */
public final class PayloadKeys {
    private PayloadKeys() {}

    /** The custom data keys, canonical first then the article's spelling, in reading order. */
    public static final java.util.List<String> CUSTOM_DATA = java.util.List.of("notificationCustomData", "notifcationCustomData");
    /** The single reference, canonical then the article's spelling. */
    public static final java.util.List<String> REFERENCE_ID = java.util.List.of("pushNotificationReferenceId", "pushNotificationReferanceId");
    /** The removal flag, canonical then the article's spelling. */
    public static final java.util.List<String> MUST_REMOVE =
            java.util.List.of("isReferredNotificationMustRemoved", "isReferedNotificationMustRemoved");
    public static final String REFERENCE_IDS = "pushNotificationReferenceIds";
    public static final String THREAD_ID = "pushNotificationThreadId";
    public static final String THREAD_IDS = "pushNotificationThreadIds";
    public static final String MORE_IN_FEED = "pushNotificationMoreInFeed";
    /**
     * An edit: the new {@code title} and {@code body} of the notification of
     * the push's references ({@link NotificationEdit}), in both dialects.
     */
    public static final String EDIT = "pushNotificationEdit";
    /**
     * The account a notification, a retraction or an edit is of, where one app
     * on a phone holds several (servers, workspaces, users): its references
     * and threads are that account's. Absent: the app's only account.
     */
    public static final String ACCOUNT = "pushNotificationAccount";
    /**
     * The app icon's badge a read's push gives, for the app to set (a whole
     * number from 0, or one as a string): a background push carries no badge
     * of its own.
     */
    public static final String BADGE = "pushNotificationBadge";

    /**
     * The title and body of an original Retract sends to Android as data only
     * (the app builds the notification): the alert's words, in the data map;
     * and the keys of an edit's new words, inside {@link #EDIT}.
     */
    public static final String TITLE = "title";
    public static final String BODY = "body";
}
