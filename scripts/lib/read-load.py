"""Read load on a running `retract serve`: PARALLEL clients each calling
GET /v1/notifications (no range, no app: the unbounded list) in a loop for
SECONDS, with a read-only key, while a probe times POST /v1/retractions (a
dry run, with a key that may retract) and GET /readyz every half second.
Prints one JSON object: what the list calls got, and each probe's latencies.

    python3 read-load.py BASE_URL READ_KEY RETRACT_KEY APP PARALLEL SECONDS [--honour-retry-after]
"""
import http.client
import json
import statistics
import sys
import threading
import time
import urllib.parse

base, read_key, retract_key, app = sys.argv[1:5]
parallel, seconds = int(sys.argv[5]), float(sys.argv[6])
honour = "--honour-retry-after" in sys.argv[7:]
host = urllib.parse.urlparse(base)
stop_at = time.monotonic() + seconds
lock = threading.Lock()
list_statuses: dict[str, int] = {}
list_times: list[float] = []


def call(connection, method, path, key=None, body=None):
    headers = {"Content-Type": "application/json"} if body else {}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    started = time.monotonic()
    connection.request(method, path, body=body, headers=headers)
    answer = connection.getresponse()
    answer.read()
    return answer.status, time.monotonic() - started, answer.getheader("Retry-After")


def lister():
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
    while time.monotonic() < stop_at:
        try:
            status, elapsed, retry_after = call(connection, "GET", "/v1/notifications", read_key)
        except Exception as error:  # a reset or timeout counts as what it is
            status, elapsed, retry_after = type(error).__name__, 0.0, None
            connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
        with lock:
            list_statuses[str(status)] = list_statuses.get(str(status), 0) + 1
            if status == 200:
                list_times.append(elapsed)
        if honour and retry_after:
            time.sleep(min(float(retry_after), max(0.0, stop_at - time.monotonic())))


probes: dict[str, list[tuple[int, float]]] = {"retract": [], "readyz": []}


def prober():
    body = json.dumps({"app": app, "references": ["probe"], "dryRun": True, "reason": "read-load probe"})
    while time.monotonic() < stop_at:
        for name, method, path, key, payload in [
            ("retract", "POST", "/v1/retractions", retract_key, body),
            ("readyz", "GET", "/readyz", None, None),
        ]:
            connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
            try:
                status, elapsed, _ = call(connection, method, path, key, payload)
            except Exception:
                status, elapsed = 0, 30.0
            probes[name].append((status, elapsed))
            connection.close()
        time.sleep(0.5)


threads = [threading.Thread(target=lister) for _ in range(parallel)] + [threading.Thread(target=prober)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()


def summary(samples):
    times = sorted(t for _, t in samples)
    ok = [t for s, t in samples if 200 <= s < 300]
    return {
        "calls": len(samples),
        "ok": len(ok),
        "median_ms": round(statistics.median(times) * 1000, 1) if times else None,
        "max_ms": round(max(times) * 1000, 1) if times else None,
        "late_or_failed": sum(1 for s, t in samples if t > 1.0 or not 200 <= s < 300),
    }


print(json.dumps({
    "list": {
        "statuses": list_statuses,
        "median_ms": round(statistics.median(list_times) * 1000, 1) if list_times else None,
    },
    "retract": summary(probes["retract"]),
    "readyz": summary(probes["readyz"]),
}))
