package dev.retract.kit;

import java.util.Objects;

/**
 * What an edit shows instead of a notification's words
 * ({@code "pushNotificationEdit": {"title": "Ada", "body": "See you at 9?"}}):
 * RetractKit's {@code NotificationEdit}.
 */
public final class NotificationEdit {
    private final String title;
    private final String body;

    NotificationEdit(String title, String body) {
        this.title = title;
        this.body = body;
    }

    /** The new title; null keeps the one shown. */
    public String title() {
        return title;
    }

    /** The new text (possibly empty, never null). */
    public String body() {
        return body;
    }

    @Override
    public boolean equals(Object other) {
        if (!(other instanceof NotificationEdit)) return false;
        NotificationEdit that = (NotificationEdit) other;
        return Objects.equals(title, that.title) && body.equals(that.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(title, body);
    }

    @Override
    public String toString() {
        return "NotificationEdit(title: " + title + ", body: " + body + ")";
    }
}
