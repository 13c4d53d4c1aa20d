package com.example.chat.kotlin

import android.app.Notification
import android.content.Context
import androidx.work.WorkerParameters
import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import dev.retract.kit.Conversation
import dev.retract.kit.RetractionFeed
import dev.retract.kit.android.NotificationStyler
import dev.retract.kit.android.RetractCatchUpWorker
import dev.retract.kit.android.RetractMessaging
import dev.retract.kit.android.WorkManagerCatchUp
import kotlin.concurrent.thread

/**
 * The Kotlin form of the Java example: a chat app that shows one notification
 * per conversation (MessagingStyle), with its own shortcut and tap target,
 * and reads the device feed in WorkManager. scripts/android-test compiles it
 * against the stand-ins when kotlinc is on PATH (Debian's is Kotlin 1.3).
 */
object Retract {
    private var shared: RetractMessaging? = null

    @Synchronized
    fun get(context: Context): RetractMessaging = shared ?: RetractMessaging(
        context.applicationContext,
        RetractionFeed("https://retract.example.com", Secrets.RETRACT_CLIENT_KEY, null),
        RetractMessaging.Settings("messages", Secrets.NOTIFICATION_ICON)
            .showingConversations()                     // a retracted message leaves its conversation, silently
            .styledBy(object : NotificationStyler {
                override fun styleConversation(builder: Notification.Builder, conversation: Conversation) {
                    builder.setShortcutId("conversation-${conversation.thread()}")
                }
            })
            .catchingUpWith(WorkManagerCatchUp(context, CatchUpWorker::class.java))
    ).also { shared = it }
}

class CatchUpWorker(context: Context, parameters: WorkerParameters) : RetractCatchUpWorker(context, parameters) {
    override fun retractMessaging(context: Context) = Retract.get(context)
}

class ChatMessagingService : FirebaseMessagingService() {
    /** Retractions, edits and Retract's originals (into their conversation's notification) are RetractKit's. */
    override fun onMessageReceived(message: RemoteMessage) {
        if (Retract.get(this).onMessageReceived(message)) return
        // the app's own messages (typing, receipts), as before
    }

    override fun onDeletedMessages() = Retract.get(this).onDeletedMessages()

    override fun onNewToken(token: String) {
        Retract.get(this).onNewToken(token) // saves it and reads the feed for it
        // and send the token to the backend, as before
    }

    /** At every start of the app: FCM delivers nothing to a force-stopped app. */
    fun catchUpAtStart() {
        thread { runCatching { Retract.get(this).catchUp(RetractMessaging.DEFAULT_FEED_BUDGET_MILLIS) } }
    }
}

/** What a real app takes from its build (BuildConfig, R.drawable). */
object Secrets {
    const val RETRACT_CLIENT_KEY = "rk_client_example"
    const val NOTIFICATION_ICON = 0x7f080001
}
