package dev.retract.kit.android;

/**
 * Where the device feed is read when a message asks for it (a retraction
 * whose rest is in the feed, FCM's {@code onDeletedMessages}): out of
 * {@code onMessageReceived}, whose execution window Firebase says is short,
 * and whose longer work it sends to WorkManager. {@link WorkManagerCatchUp}
 * is that; an app with its own background work hands the read to it
 * ({@link RetractMessaging#catchUp(long)} on a background thread).
 */
public interface CatchUpScheduler {
    /** Arranges for {@link RetractMessaging#catchUp(long)} to run soon, on a background thread. */
    void scheduleCatchUp();
}
