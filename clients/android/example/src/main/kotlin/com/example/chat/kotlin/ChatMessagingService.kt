package com.example.chat.kotlin

import com.google.firebase.messaging.FirebaseMessagingService
import com.google.firebase.messaging.RemoteMessage
import dev.retract.kit.RetractionFeed
import dev.retract.kit.android.RetractMessaging
import kotlin.concurrent.thread

/**
 * The Kotlin form of ChatMessagingService.java: the whole RetractKit for
 * Android integration of a chat app. scripts/android-test compiles it against
 * the stand-ins when kotlinc is on PATH (Debian's is Kotlin 1.3).
 */
class ChatMessagingService : FirebaseMessagingService() {
    private val retract by lazy {
        RetractMessaging(
            applicationContext,
            RetractionFeed("https://retract.example.com", Secrets.RETRACT_CLIENT_KEY, null),
            "messages", Secrets.NOTIFICATION_ICON
        )
    }

    /** Retractions, edits (new words for a notification still showing) and Retract's originals are RetractKit's. */
    override fun onMessageReceived(message: RemoteMessage) {
        if (retract.onMessageReceived(message)) return
        // the app's own messages (typing, receipts), as before
    }

    override fun onNewToken(token: String) {
        retract.onNewToken(token) // saves it and reads the feed for it
        // and send the token to the backend, as before
    }

    /** At every start of the app: FCM delivers nothing to a force-stopped app. */
    fun catchUpAtStart() {
        thread { runCatching { retract.catchUp(RetractMessaging.DEFAULT_FEED_BUDGET_MILLIS) } }
    }
}

/** What a real app takes from its build (BuildConfig, R.drawable). */
object Secrets {
    const val RETRACT_CLIENT_KEY = "rk_client_example"
    const val NOTIFICATION_ICON = 0x7f080001
}
