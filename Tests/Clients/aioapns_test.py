"""aioapns (PyPI), used as another team would, against `retract simulator`.

aioapns always connects to Apple's hosts; pointing it at the simulator takes a
subclass of its protocol class naming the host and port, and an SSL context
trusting the simulator's authority. Everything else is aioapns as shipped: its
PyJWT provider token, its HTTP/2 (h2) framing, and no ALPN (aioapns sets none).

Run by scripts/client-test, which starts the simulator and passes:
    aioapns_test.py PORT INBOX_PORT CA_FILE KEY_FILE KEY_ID TEAM_ID TOPIC
"""

import asyncio
import json
import ssl
import sys
import urllib.request

from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsDevelopmentClientProtocol

PUSHES = 2000


def client(port, ca_file, key, key_id, team_id, topic):
    class SimulatorProtocol(APNsDevelopmentClientProtocol):
        APNS_SERVER = "127.0.0.1"
        APNS_PORT = port

    apns = APNs(
        key=key,
        key_id=key_id,
        team_id=team_id,
        topic=topic,
        use_sandbox=True,
        ssl_context=ssl.create_default_context(cafile=ca_file),
        max_connections=2,
    )
    apns.pool.protocol_class = SimulatorProtocol
    return apns


def retraction(token, reference):
    return NotificationRequest(
        device_token=token,
        message={
            "aps": {"content-available": 1},
            "notificationCustomData": {
                "pushNotificationReferenceIds": [reference],
                "isReferredNotificationMustRemoved": True,
            },
        },
        push_type=PushType.BACKGROUND,
        priority=5,
    )


def inbox(inbox_port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{inbox_port}{path}", timeout=10) as answer:
        return json.load(answer)


def check(condition, message):
    if not condition:
        print(f"aioapns_test: FAILED: {message}", file=sys.stderr)
        sys.exit(1)


async def main():
    port, inbox_port = int(sys.argv[1]), int(sys.argv[2])
    ca_file, key_file, key_id, team_id, topic = sys.argv[3:8]
    with open(key_file) as file:
        key = file.read()

    # The registered key: every background push accepted.
    apns = client(port, ca_file, key, key_id, team_id, topic)
    tokens = ["%064x" % (0xA10000 + i) for i in range(PUSHES)]
    results = await asyncio.gather(*(apns.send_notification(retraction(t, "m1")) for t in tokens))
    refused = [(r.status, r.description) for r in results if not r.is_successful]
    check(not refused, f"{len(refused)} of {PUSHES} pushes refused, first {refused[:1]}")
    stats = inbox(inbox_port, "/stats")
    check(stats["accepted"] == PUSHES, f"the simulator accepted {stats['accepted']}, not {PUSHES}")
    # aioapns makes a provider token per connection, and opens at most max_connections (2).
    check(1 <= stats["providerTokens"] <= 2, f"{stats['providerTokens']} provider tokens from at most 2 connections")
    received = inbox(inbox_port, f"/inbox/{tokens[0]}")
    check(len(received) == 1 and received[0]["headers"]["apns-push-type"] == "background",
          f"the first device's inbox: {received}")

    # A team the key does not belong to: refused as APNs refuses it.
    wrong = client(port, ca_file, key, key_id, "OTHERTEAM9", topic)
    result = await wrong.send_notification(retraction("%064x" % 0xB10000, "m2"))
    check(result.status == "403" and result.description == "InvalidProviderToken",
          f"a wrong team was answered {result.status} {result.description}")

    print(f"aioapns_test: {PUSHES} background pushes accepted; a wrong team refused with 403 InvalidProviderToken")


asyncio.run(main())
