package dev.retract.kit;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An original Retract sent as data only, as the app should show it: the
 * notification it builds carries {@link #tag()} (so a retraction finds it by
 * its reference), {@link #group()} (its conversation, so a thread retraction
 * finds it too) and {@link #extras()} (the data, with the custom data).
 */
public final class Original {
    private final String reference;
    private final String title;
    private final String body;
    private final String thread;
    private final String account;
    private final Map<String, String> extras;

    Original(String reference, String title, String body, String thread, String account, Map<String, String> extras) {
        this.reference = reference;
        this.title = title;
        this.body = body;
        this.thread = thread;
        this.account = account;
        this.extras = Collections.unmodifiableMap(new LinkedHashMap<>(extras));
    }

    /** The reference (the first, when the original names several). */
    public String reference() {
        return reference;
    }

    /** The tag to post it with: {@link RetractTags#forReference(String, String)}, within its account. */
    public String tag() {
        return RetractTags.forReference(reference, account);
    }

    /** The alert's title ({@code title} in the data), or null. */
    public String title() {
        return title;
    }

    /** The alert's text ({@code body} in the data), or null. */
    public String body() {
        return body;
    }

    /**
     * The group key of its conversation ({@code pushNotificationThreadId}, within
     * its account: {@link RetractTags#forThread}), to use as the notification's
     * group; or null.
     */
    public String group() {
        return thread == null ? null : RetractTags.forThread(thread, account);
    }

    /** Its conversation ({@code pushNotificationThreadId}), or null. */
    public String thread() {
        return thread;
    }

    /** The account it is of ({@code pushNotificationAccount}), or null: the app's only account. */
    public String account() {
        return account;
    }

    /**
     * Whether Retract sent it for the app to show ({@code androidDisplay: "app"}):
     * it carries the alert's title or body. A silent original has neither.
     */
    public boolean isForTheAppToShow() {
        return title != null || body != null;
    }

    /** The same original with other words: a Firebase notification message handed to the app in the foreground. */
    public Original withAlert(String title, String body) {
        return new Original(reference, title, body, thread, account, extras);
    }

    /** The whole data map, to put into the notification's extras. */
    public Map<String, String> extras() {
        return extras;
    }

    /** The notification this original becomes once posted with id {@code id} on {@code channel}, its title and body shown. */
    public ShownNotification shown(int id, String channel) {
        return new ShownNotification(tag(), id, extras, group(), channel, title, body);
    }
}
