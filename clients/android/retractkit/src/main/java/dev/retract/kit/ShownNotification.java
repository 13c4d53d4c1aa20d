package dev.retract.kit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A notification showing on the phone, as matching sees it: what Android's
 * {@code StatusBarNotification} gives ({@code getTag()}, {@code getId()}, the
 * notification's {@code extras}, {@code getGroup()} and
 * {@code getChannelId()}).
 *
 * <p>A retraction removes it when one of its references is retracted (the
 * custom data in its extras, read as a push is read), when its tag is one of
 * them (Firebase shows an original under the tag Retract gives it, see
 * {@link RetractTags}; an app that builds its own notification uses the same
 * tag), or when its conversation is retracted: its group, or the thread in its
 * extras' custom data. The channel is not a conversation (the user turns
 * channels on and off by kind: "Messages", "Offers") and is never matched.
 *
 * <p>An edit re-posts it with other words ({@link #title()}, {@link #text()})
 * when a retraction of the edit's references would remove it, by its tag or
 * its extras' custom data: never by its conversation, whose other messages
 * keep theirs.
 *
 * <p>Where one app on a phone holds several accounts, a notification whose
 * extras' custom data names an account ({@code pushNotificationAccount}) is
 * that account's: only a retraction of the same account removes it. One
 * that names none is the app's only account's for a retraction without one;
 * a retraction of an account finds it by its name and group alone, when
 * they are the account's tag and group key ({@link RetractTags}): an
 * original Firebase showed, whose extras hold none of the data.
 */
public final class ShownNotification {
    /** Where Android keeps a notification's title in its extras ({@code Notification.EXTRA_TITLE}). */
    public static final String EXTRA_TITLE = "android.title";
    /** Where Android keeps a notification's text in its extras ({@code Notification.EXTRA_TEXT}). */
    public static final String EXTRA_TEXT = "android.text";

    private final String tag;
    private final int id;
    private final Map<String, ?> extras;
    private final String group;
    private final String channel;
    private final String identifier;
    private final String title;
    private final String text;
    private final Set<String> references;
    private final Set<String> threads;
    private final String account;
    private final Conversation conversation;

    /**
     * @param tag the notification's tag, or null (Firebase's own default is {@code FCM-Notification:<n>})
     * @param id its id; Firebase shows its notifications with id 0
     * @param extras its extras: what the app put there (the data map, for
     *     an original the app built), or none of the data for one Firebase
     *     showed; its title and text are read from {@link #EXTRA_TITLE} and
     *     {@link #EXTRA_TEXT}, where Android keeps them
     * @param group its group key, or null
     * @param channel its channel id, or null
     */
    public ShownNotification(String tag, int id, Map<String, ?> extras, String group, String channel) {
        this(tag, id, extras, group, channel, androidName(tag, id), string(extras, EXTRA_TITLE), string(extras, EXTRA_TEXT));
    }

    /**
     * A notification whose words are given rather than read from its extras:
     * one the app is about to post, or one Firebase showed from an
     * {@code android.notification}'s title and body.
     *
     * @param title its title, or null
     * @param text its text, or null
     */
    public ShownNotification(String tag, int id, Map<String, ?> extras, String group, String channel, String title, String text) {
        this(tag, id, extras, group, channel, androidName(tag, id), title, text);
    }

    private ShownNotification(String tag, int id, Map<String, ?> extras, String group, String channel, String identifier, String title,
            String text) {
        this(tag, id, extras, group, channel, identifier, title, text, null);
    }

    private ShownNotification(String tag, int id, Map<String, ?> extras, String group, String channel, String identifier, String title,
            String text, Conversation conversation) {
        this.conversation = conversation;
        this.tag = tag;
        this.id = id;
        this.extras = extras == null ? Collections.<String, Object>emptyMap() : Collections.unmodifiableMap(new LinkedHashMap<>(extras));
        this.group = group;
        this.channel = channel;
        this.identifier = identifier;
        this.title = title;
        this.text = text;
        CustomData customData = conversation != null ? null : RetractPayload.read(this.extras).customData();
        this.account = conversation != null ? conversation.account() : customData == null ? null : customData.account();
        List<String> references = new ArrayList<>();
        if (customData != null) references.addAll(customData.references());
        if (conversation != null) {
            for (ConversationMessage message : conversation.messages()) references.add(message.reference());
        } else if (tag != null && !tag.isEmpty()) {
            references.add(tag);
        }
        this.references = Collections.unmodifiableSet(new LinkedHashSet<>(CanonicalText.distinct(references)));
        List<String> threads = new ArrayList<>();
        String grouped = conversation != null ? conversation.thread() : group != null ? group : apsThread(this.extras);
        if (grouped != null && !grouped.isEmpty()) threads.add(grouped);
        if (customData != null && customData.threadId() != null && !customData.threadId().isEmpty()) threads.add(customData.threadId());
        this.threads = Collections.unmodifiableSet(new LinkedHashSet<>(CanonicalText.distinct(threads)));
    }

    /**
     * The notification of a conversation ({@link Conversation}): its tag and
     * id 0, the extras that say which conversation it is, on
     * {@code channel}, titled with the conversation's title and showing its
     * newest message. A retraction finds it by its messages and its
     * conversation, never by its tag.
     */
    public static ShownNotification ofConversation(Conversation conversation, String group, String channel) {
        Map<String, Object> extras = new LinkedHashMap<>();
        extras.put(Conversation.EXTRA_CONVERSATION, conversation.toJson());
        List<ConversationMessage> messages = conversation.messages();
        String text = messages.isEmpty() ? null : messages.get(messages.size() - 1).text();
        return new ShownNotification(conversation.tag(), 0, extras, group, channel, conversation.tag(), conversation.title(), text,
                conversation);
    }

    /** The same notification holding {@code conversation} now (a re-post of it). */
    public ShownNotification holding(Conversation conversation) {
        return ofConversation(conversation, group, channel);
    }

    /**
     * An iPhone's notification as {@code retract match} takes it: its
     * request identifier, its {@code userInfo} and its thread identifier.
     * The identifier plays the part of the tag (both are what an original's
     * collapse id becomes) and the thread identifier that of the group.
     */
    public static ShownNotification ofIPhone(String identifier, Map<String, ?> userInfo, String threadIdentifier) {
        Object alert = userInfo == null || !(userInfo.get("aps") instanceof Map) ? null : ((Map<?, ?>) userInfo.get("aps")).get("alert");
        String title = alert instanceof Map ? string((Map<?, ?>) alert, "title") : null;
        String body = alert instanceof Map ? string((Map<?, ?>) alert, "body") : alert instanceof String ? (String) alert : null;
        return new ShownNotification(identifier, 0, userInfo, threadIdentifier, null, identifier, title, body);
    }

    /**
     * The same notification re-posted with other words, as an edit leaves it:
     * the same tag, id, extras, group and channel.
     *
     * @param title the new title; null keeps the one shown
     * @param text the new text
     */
    public ShownNotification edited(String title, String text) {
        return new ShownNotification(tag, id, extras, group, channel, identifier, title != null ? title : this.title, text, conversation);
    }

    /** A text value of {@code map}: a string, or any {@code CharSequence} (Android's styled text) as its characters; else null. */
    private static String string(Map<?, ?> map, String key) {
        Object value = map == null ? null : map.get(key);
        return value instanceof CharSequence ? value.toString() : null;
    }

    /** How the notification is named in lists: its tag; {@code tag#id} when the id is not 0; {@code #id} without a tag. */
    static String androidName(String tag, int id) {
        if (tag == null) return "#" + id;
        return id == 0 ? tag : tag + "#" + id;
    }

    private static String apsThread(Map<String, ?> extras) {
        Object aps = extras.get("aps");
        if (!(aps instanceof Map)) return null;
        Object thread = ((Map<?, ?>) aps).get("thread-id");
        return thread instanceof String ? (String) thread : null;
    }

    /** Whether a retraction of {@code references} and {@code threads} of the app's only account removes this notification. */
    public boolean isRetractedBy(Set<String> references, Set<String> threads) {
        return isRetractedBy(references, threads, null);
    }

    /**
     * Whether a retraction of {@code references} and {@code threads} of
     * {@code account} (null: the app's only account) removes this
     * notification: see the class's rules for accounts.
     */
    public boolean isRetractedBy(Set<String> references, Set<String> threads, String account) {
        return isRetractedByKeys(keys(references), keys(threads), account);
    }

    /** {@link #isRetractedBy} with the references and threads as {@link CanonicalText#key}s. */
    private boolean isRetractedByKeys(Set<String> references, Set<String> threads, String account) {
        // A conversation goes by its messages or its conversation, not as one message: see Conversation#retracting.
        if (conversation != null) return false;
        if (this.account != null && (account == null || !CanonicalText.same(this.account, account))) return false;
        if (account != null) {
            boolean scoped = false;
            String name = CanonicalText.key(identifier);
            for (String reference : references) {
                if (CanonicalText.key(RetractTags.scoped(reference, account)).equals(name)) scoped = true;
            }
            for (String thread : threads) {
                String group = CanonicalText.key(RetractTags.scoped(thread, account));
                for (String own : this.threads) {
                    if (CanonicalText.key(own).equals(group)) scoped = true;
                }
            }
            if (scoped || this.account == null) return scoped;
        }
        for (String reference : this.references) {
            if (references.contains(CanonicalText.key(reference))) return true;
        }
        for (String thread : this.threads) {
            if (threads.contains(CanonicalText.key(thread))) return true;
        }
        return references.contains(CanonicalText.key(identifier));
    }

    private static Set<String> keys(Set<String> strings) {
        Set<String> keys = new java.util.HashSet<>();
        for (String text : strings) keys.add(CanonicalText.key(text));
        return keys;
    }

    /** The references this notification stands for: those of its extras, and its tag. */
    public Set<String> references() {
        return references;
    }

    /** The conversations it belongs to: its group (or an iPhone's thread) and its extras' thread. */
    public Set<String> threads() {
        return threads;
    }

    /** The conversation it shows, when it is a conversation notification ({@link #ofConversation}); else null. */
    public Conversation conversation() {
        return conversation;
    }

    /** The account its extras' custom data names (a conversation's, for one), or null: the app's only account. */
    public String account() {
        return account;
    }

    /** The name lists give it: the tag (the identifier, for an iPhone's); see {@link #androidName}. */
    public String name() {
        return identifier;
    }

    public String tag() {
        return tag;
    }

    public int id() {
        return id;
    }

    public Map<String, ?> extras() {
        return extras;
    }

    public String group() {
        return group;
    }

    public String channel() {
        return channel;
    }

    /** Its title ({@link #EXTRA_TITLE}; an iPhone's {@code aps.alert.title}), or null. */
    public String title() {
        return title;
    }

    /** Its text ({@link #EXTRA_TEXT}; an iPhone's {@code aps.alert.body}, or {@code aps.alert} as a string), or null. */
    public String text() {
        return text;
    }

    /** Of {@code showing}, those a retraction of {@code references} and {@code threads} removes, each once, in order. */
    public static List<ShownNotification> retractedBy(List<ShownNotification> showing, Set<String> references, Set<String> threads) {
        return retractedBy(showing, references, threads, null);
    }

    /**
     * Of {@code showing}, those a retraction of {@code references} and
     * {@code threads} of {@code account} removes, each once, in order.
     */
    public static List<ShownNotification> retractedBy(List<ShownNotification> showing, Set<String> references, Set<String> threads,
            String account) {
        List<ShownNotification> matched = new ArrayList<>();
        Set<String> seen = new LinkedHashSet<>();
        Set<String> referenceKeys = keys(references);
        Set<String> threadKeys = keys(threads);
        for (ShownNotification notification : showing) {
            if (notification.isRetractedByKeys(referenceKeys, threadKeys, account) && seen.add(CanonicalText.key(notification.name()))) {
                matched.add(notification);
            }
        }
        return matched;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof ShownNotification)) return false;
        ShownNotification that = (ShownNotification) other;
        return id == that.id && Objects.equals(tag, that.tag) && Objects.equals(identifier, that.identifier)
                && extras.equals(that.extras) && Objects.equals(group, that.group) && Objects.equals(channel, that.channel)
                && Objects.equals(title, that.title) && Objects.equals(text, that.text) && Objects.equals(conversation, that.conversation);
    }

    @Override
    public int hashCode() {
        return Objects.hash(tag, id, identifier, group, channel);
    }

    @Override
    public String toString() {
        return "ShownNotification(" + name() + ")";
    }
}
