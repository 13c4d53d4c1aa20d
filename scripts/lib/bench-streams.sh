#!/usr/bin/env bash
# scripts/bench streams: abandoned live-progress streams of the console. A
# release build of `retract serve --mode api` (nothing sends, so the
# retraction stays queued and its streams stay open) on a throwaway
# PostgreSQL that logs every statement. N browsers (N/4 sessions of 4) open
# /console/retractions/{id}/events, hold it for H seconds, then all leave at
# once. Counts the retraction status reads PostgreSQL ran (its log:
# `FROM retraction_failures WHERE retraction_id`) while they were open, in
# the 2 s after they left, and in the 10 s after that; the goal is none
# after 2 s. RETRACT_BINARY instead of the build when set (an older binary:
# both cookie names are sent).
#
#   scripts/bench streams [-n STREAMS] [--hold SECONDS]
set -euo pipefail

streams=20
hold=3
while [ $# -gt 0 ]; do
    case "$1" in
        -n) streams=$2; shift 2 ;;
        --hold) hold=$2; shift 2 ;;
        *) echo "bench streams: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
# shellcheck source=local-api.sh
source scripts/lib/local-api.sh
retract=$(retract_binary release)

# The throwaway cluster's log is where the statements are counted.
unset DATABASE_URL
open_local_api retract_bench_streams
log="$THROWAWAY_PG_DIR/postgres.log"
psql "$server" -Xqc "ALTER DATABASE $database SET log_statement = 'all'"

"$retract" migrate >/dev/null
start_simulator
add_simulated_app bench
backend=$(create_api_key --app bench --scopes record,retract --name backend)
sessions=$(((streams + 3) / 4))
for i in $(seq 1 "$sessions"); do create_api_key --app bench --scopes read --name "viewer-$i" >/dev/null 2>&1; done
start_server --mode api --log-level warning
base="http://127.0.0.1:$server_port"

curl -sS --fail-with-body -o /dev/null -H "Authorization: Bearer $backend" -H 'Content-Type: application/json' \
    -d '{"app":"bench","reference":"m-1","tokens":["aa"]}' "$base/v1/deliveries"
id=$(curl -sS --fail-with-body -H "Authorization: Bearer $backend" -H 'Content-Type: application/json' \
    -d '{"app":"bench","references":["m-1"]}' "$base/v1/retractions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')

# Sessions as sign-in makes them: the ledger keeps the SHA-256 of the id the cookie holds.
cookies=()
for i in $(seq 1 "$sessions"); do
    session=$(python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("="))')
    psql "$url" -Xqc "INSERT INTO console_sessions (id_hash, key_id, form_token, expires_at)
        SELECT sha256('$session'::bytea), id, repeat('f', 43), now() + interval '1 hour' FROM api_keys WHERE name = 'viewer-$i'"
    cookies+=("__Host-retract_console=$session; retract_console=$session")
done

python3 - "$server_port" "/console/retractions/$id/events" "$streams" "$hold" "$log" "${cookies[@]}" <<'PY'
import datetime, re, socket, sys, time
port, path, streams, hold, log = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
cookies = sys.argv[6:]
opened = []
for n in range(streams):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookies[n // 4]}\r\nAccept: text/event-stream\r\n\r\n".encode())
    s.settimeout(5)
    first = b""
    while b"data:" not in first:
        chunk = s.recv(4096)
        if not chunk:
            break
        first += chunk
    if b"data:" not in first:
        sys.exit(f"bench streams: stream {n} got no event: {first[:300]!r}")
    opened.append(s)
start = datetime.datetime.now(datetime.timezone.utc)
time.sleep(hold)
left = datetime.datetime.now(datetime.timezone.utc)
for s in opened:
    s.close()
time.sleep(12.5)

stamp = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC")
reads = []
with open(log, errors="replace") as lines:
    for line in lines:
        match = stamp.match(line)
        if match and "FROM retraction_failures WHERE retraction_id" in line:
            at = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
            reads.append((at - left).total_seconds())
held = sum(1 for t in reads if -hold <= t < 0)
first2 = sum(1 for t in reads if 0 <= t < 2)
after = sum(1 for t in reads if 2 <= t < 12)
print(f"streams={streams} sessions={len(cookies)} held={hold:g}s (release build)")
print(f"status reads: {held} while open ({held / hold:.1f}/s), {first2} in the 2 s after they left, {after} in the 10 s after that")
PY
