// Written for app teams; NOT run here (no Android SDK, no Maven repository on
// this machine). scripts/android-test is what runs: it compiles the same
// sources with `javac --release 11` and runs the core's tests with JUnit 5.
plugins {
    id("com.android.library") version "8.5.2" apply false
}

project(":retractkit") {
    // The core: plain Java 11, no Android or Firebase type, tested on any JVM.
    apply(plugin = "java-library")
    extensions.configure<JavaPluginExtension> {
        sourceCompatibility = JavaVersion.VERSION_11
        targetCompatibility = JavaVersion.VERSION_11
    }
    dependencies {
        "testImplementation"("org.junit.jupiter:junit-jupiter:5.9.2")
        "testRuntimeOnly"("org.junit.platform:junit-platform-launcher:1.9.2")
    }
    tasks.withType<Test> {
        useJUnitPlatform()
        systemProperty("retract.vectors", rootDir.resolve("../../Tests/Vectors/payloads.json").path)
    }
}

project(":retractkit-android") {
    // The adapter: FirebaseMessagingService glue, NotificationManager, SharedPreferences.
    apply(plugin = "com.android.library")
    extensions.configure<com.android.build.gradle.LibraryExtension> {
        namespace = "dev.retract.kit.android"
        compileSdk = 34
        defaultConfig { minSdk = 26 }
        compileOptions {
            sourceCompatibility = JavaVersion.VERSION_11
            targetCompatibility = JavaVersion.VERSION_11
        }
    }
    dependencies {
        "api"(project(":retractkit"))
        "implementation"("com.google.firebase:firebase-messaging:24.0.0")
        // WorkManagerCatchUp and RetractCatchUpWorker: the feed read out of onMessageReceived.
        "implementation"("androidx.work:work-runtime:2.9.0")
    }
}
