#!/bin/sh
# One push with curl and openssl, the way Apple's "Sending push notifications
# using command-line tools" does it: a provider token made by hand (JSON with
# spaces, signed by `openssl dgst -sign`, which writes a DER signature) and a
# POST over HTTP/2. Point it at `retract simulator` to try it (docs/simulator.md),
# or at api.sandbox.push.apple.com with your own key and a real device token.
#
#   TEAM_ID=DEF123GHIJ AUTH_KEY_ID=ABC123DEFG TOKEN_KEY_FILE_NAME=AuthKey_ABC123DEFG.p8 \
#   TOPIC=com.example.chat DEVICE_TOKEN=0a0b... APNS_HOST_NAME=127.0.0.1:2197 \
#   CA_FILE=/tmp/sim/simulator-ca.pem docs/examples/apns-curl.sh
#
# Optional: PUSH_TYPE (background), PRIORITY (5), PAYLOAD (a retraction push),
# CA_FILE (trust this authority instead of the system's). Prints APNs's
# answer body, if any, and then the HTTP status on a line of its own.
set -eu
: "${TEAM_ID:?TEAM_ID: your team id}" "${AUTH_KEY_ID:?AUTH_KEY_ID: the key id}"
: "${TOKEN_KEY_FILE_NAME:?TOKEN_KEY_FILE_NAME: the .p8 file}" "${TOPIC:?TOPIC: the app bundle id}"
: "${DEVICE_TOKEN:?DEVICE_TOKEN: a hex device token}" "${APNS_HOST_NAME:?APNS_HOST_NAME: host or host:port}"
PUSH_TYPE=${PUSH_TYPE:-background}
PRIORITY=${PRIORITY:-5}
PAYLOAD=${PAYLOAD:-'{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceIds":["msg-8812"],"isReferredNotificationMustRemoved":true}}'}

base64url() { openssl base64 -e -A | tr -- '+/' '-_' | tr -d '='; }

issued_at=$(date +%s)
header=$(printf '{ "alg": "ES256", "kid": "%s" }' "$AUTH_KEY_ID" | base64url)
claims=$(printf '{ "iss": "%s", "iat": %d }' "$TEAM_ID" "$issued_at" | base64url)
signature=$(printf '%s' "$header.$claims" | openssl dgst -binary -sha256 -sign "$TOKEN_KEY_FILE_NAME" | base64url)
token="$header.$claims.$signature"

set -- --silent --show-error --http2 --write-out '\n%{http_code}\n' \
    --header "apns-topic: $TOPIC" --header "apns-push-type: $PUSH_TYPE" --header "apns-priority: $PRIORITY" \
    --header "authorization: bearer $token" --data "$PAYLOAD"
[ -n "${CA_FILE:-}" ] && set -- "$@" --cacert "$CA_FILE"
exec curl "$@" "https://$APNS_HOST_NAME/3/device/$DEVICE_TOKEN"
