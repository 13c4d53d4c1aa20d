package dev.retract.kit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A conversation notification: one notification per conversation holding
 * its last messages, as Android's conversation notifications
 * ({@code Notification.MessagingStyle}) and most chat apps show them. The
 * adapter turns it into the real notification; this is what the library
 * keeps and matches.
 *
 * <p>It is posted under {@link #tag()} (id 0), never found by it as a
 * reference. A retraction of some of its messages leaves it with the others; of
 * all of them, or of its conversation (a thread retraction), it goes. An
 * edit of one of them changes that message's words. Within its account: a
 * retraction or edit of another account touches none of its messages.
 */
public final class Conversation {
    /** The most messages one holds, as {@code MessagingStyle.MAXIMUM_RETAINED_MESSAGES}: the oldest go first. */
    public static final int MAXIMUM_MESSAGES = 25;
    /**
     * Where the notification's extras keep the conversation it shows
     * ({@link #toJson()}): a retraction reads what it holds from there, in any
     * process, whatever the app's storage holds.
     */
    public static final String EXTRA_CONVERSATION = "dev.retract.kit.conversation";

    private final String account;
    private final String thread;
    private final String title;
    private final boolean group;
    private final List<ConversationMessage> messages;

    /**
     * @param account the account it is of, or null: the app's only account
     * @param thread its conversation ({@code pushNotificationThreadId}, {@code thread} when it was recorded)
     * @param title the conversation's title (a group's name), or null for one person
     * @param group whether it is a group conversation
     * @param messages its messages, oldest first; past {@link #MAXIMUM_MESSAGES} the oldest are left out
     */
    public Conversation(String account, String thread, String title, boolean group, List<ConversationMessage> messages) {
        this.account = account;
        this.thread = Objects.requireNonNull(thread, "thread");
        this.title = title;
        this.group = group;
        List<ConversationMessage> kept = new ArrayList<>(messages);
        if (kept.size() > MAXIMUM_MESSAGES) kept = kept.subList(kept.size() - MAXIMUM_MESSAGES, kept.size());
        this.messages = Collections.unmodifiableList(new ArrayList<>(kept));
    }

    /**
     * The tag of its notification: {@link RetractTags#forConversation}. A
     * message whose reference starts with {@code conversation:} would share
     * its slot; references should not.
     */
    public String tag() {
        return RetractTags.forConversation(thread, account);
    }

    public String account() {
        return account;
    }

    public String thread() {
        return thread;
    }

    public String title() {
        return title;
    }

    public boolean isGroup() {
        return group;
    }

    /** Its messages, oldest first. */
    public List<ConversationMessage> messages() {
        return messages;
    }

    /** The same conversation with {@code message} added as the newest (one with its reference is replaced). */
    public Conversation adding(ConversationMessage message) {
        List<ConversationMessage> next = new ArrayList<>();
        for (ConversationMessage kept : messages) {
            if (!CanonicalText.same(kept.reference(), message.reference())) next.add(kept);
        }
        next.add(message);
        return new Conversation(account, thread, title, group, next);
    }

    /** The same conversation with other messages. */
    public Conversation withMessages(List<ConversationMessage> messages) {
        return new Conversation(account, thread, title, group, messages);
    }

    /** Whether it is of {@code account} (null: the app's only account). */
    public boolean isOf(String account) {
        return this.account == null ? account == null : account != null && CanonicalText.same(this.account, account);
    }

    /**
     * What a retraction leaves of it: null when it goes whole (its thread is
     * among {@code threads} of its account, or none of its messages is left),
     * itself when it is untouched, else a copy without the retracted messages.
     *
     * @param references the references retracted, by account (the app's only account under null)
     * @param threads the conversations retracted whole, of {@code account}
     */
    public Conversation retracting(Map<String, Set<String>> references, Set<String> threads, String account) {
        if (isOf(account)) {
            for (String retracted : threads) {
                if (CanonicalText.same(retracted, thread)) return null;
            }
        }
        Set<String> mine = null;
        for (Map.Entry<String, Set<String>> entry : references.entrySet()) {
            if (isOf(entry.getKey())) mine = entry.getValue();
        }
        if (mine == null || mine.isEmpty()) return this;
        List<ConversationMessage> kept = new ArrayList<>();
        for (ConversationMessage message : messages) {
            if (!containsSame(mine, message.reference())) kept.add(message);
        }
        if (kept.size() == messages.size()) return this;
        return kept.isEmpty() ? null : withMessages(kept);
    }

    /** It with the messages of {@code references} of {@code account} saying {@code text}; itself when it holds none of them. */
    public Conversation editing(Set<String> references, String account, String text) {
        if (!isOf(account)) return this;
        boolean changed = false;
        List<ConversationMessage> next = new ArrayList<>();
        for (ConversationMessage message : messages) {
            boolean edited = containsSame(references, message.reference());
            changed |= edited;
            next.add(edited ? message.withText(text) : message);
        }
        return changed ? withMessages(next) : this;
    }

    /**
     * The conversation as its notification's extras keep it:
     * {@code {"account":…,"thread":…,"title":…,"group":false,"messages":[{"reference":…,"text":…,"sender":…,"time":…}]}}
     * ({@code account}, {@code title} and {@code sender} only when set).
     */
    public String toJson() {
        Map<String, Object> object = new java.util.LinkedHashMap<>();
        if (account != null) object.put("account", account);
        object.put("thread", thread);
        if (title != null) object.put("title", title);
        object.put("group", group);
        List<Object> list = new ArrayList<>();
        for (ConversationMessage message : messages) {
            Map<String, Object> entry = new java.util.LinkedHashMap<>();
            entry.put("reference", message.reference());
            entry.put("text", message.text());
            if (message.sender() != null) entry.put("sender", message.sender());
            entry.put("time", new JsonNumber(String.valueOf(message.timeMillis())));
            list.add(entry);
        }
        object.put("messages", list);
        return Json.write(object);
    }

    /** The conversation {@link #toJson()} wrote, or null for anything else. */
    public static Conversation fromJson(String text) {
        try {
            Map<?, ?> object = (Map<?, ?>) Json.parse(text);
            List<ConversationMessage> messages = new ArrayList<>();
            for (Object element : (List<?>) object.get("messages")) {
                Map<?, ?> message = (Map<?, ?>) element;
                Object sender = message.get("sender");
                messages.add(new ConversationMessage((String) message.get("reference"), (String) message.get("text"),
                        sender instanceof String ? (String) sender : null, Long.parseLong(((JsonNumber) message.get("time")).text())));
            }
            Object account = object.get("account");
            Object title = object.get("title");
            return new Conversation(account instanceof String ? (String) account : null, (String) object.get("thread"),
                    title instanceof String ? (String) title : null, Boolean.TRUE.equals(object.get("group")), messages);
        } catch (Json.SyntaxError | ClassCastException | NullPointerException | NumberFormatException unreadable) {
            return null;
        }
    }

    private static boolean containsSame(Set<String> strings, String text) {
        for (String string : strings) {
            if (CanonicalText.same(string, text)) return true;
        }
        return false;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof Conversation)) return false;
        Conversation that = (Conversation) other;
        return Objects.equals(account, that.account) && thread.equals(that.thread) && Objects.equals(title, that.title)
                && group == that.group && messages.equals(that.messages);
    }

    @Override
    public int hashCode() {
        return Objects.hash(account, thread, title, group, messages);
    }

    @Override
    public String toString() {
        return "Conversation(" + tag() + ", " + messages.size() + " messages)";
    }
}
