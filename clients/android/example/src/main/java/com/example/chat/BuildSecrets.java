package com.example.chat;

/** What a real app takes from its build: the client key (scope `client`) and its notification icon resource. */
final class BuildSecrets {
    static final String RETRACT_CLIENT_KEY = "rk_client_example";
    static final int NOTIFICATION_ICON = 0x7f080001;

    private BuildSecrets() {}
}
