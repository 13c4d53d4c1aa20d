// Written for app teams; NOT run here: this machine has no Android SDK and no
// Maven repository. scripts/android-test builds and tests the same sources
// with the JDK and JUnit alone.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}
dependencyResolutionManagement {
    repositories {
        google()
        mavenCentral()
    }
}
rootProject.name = "retractkit-android"
include(":retractkit", ":retractkit-android")
