#!/usr/bin/env bash
# scripts/bench feed: the device feed (GET /v1/devices/{token}/retractions)
# as a chat app's phones read it. A release build of `retract serve` (mode
# all) on 127.0.0.1 with the APNs simulator behind it (--latency-ms L,
# default 20) over a ledger of 1,000,000 deliveries: 1,000 references
# ref-1 … ref-1000, each sent to 1,000 of 20,000 devices (written with SQL,
# then ANALYZEd), 200 of them (every fifth) retracted through the API and
# sent to the end. S devices (default 2,000) then read their feed (every
# page), and again from the cursor it gave; each keeps that cursor and the
# second answer's ETag (nothing new), as a phone does. Each run then
# measures, with wrk on C connections for D seconds each:
#   floor  GET /healthz, the server's HTTP floor (no database, no key);
#   full   the feed of a random device (limit=100, about 10 retractions each);
#   since  ?since=<its cursor>: nothing new, asked without a validator;
#   etag   the same with If-None-Match (as RetractKit asks), when the server
#          gives ETags;
# printing requests/s, p99, the ratio to the floor, the server's CPU
# microseconds per call, and PostgreSQL's CPU seconds per 10,000 calls
# (throwaway cluster only; both read from /proc). Then a
# retraction of 100,000 devices alone, one of 100,000 others while wrk
# reads the feed (mode phone: etag nine times in ten, full the tenth) on C
# connections, and a third alone: devices/s of each, and the ratio of the
# loaded one to the mean of the two alone, and where the CPU went during
# each (the server's, the simulator's and PostgreSQL's milliseconds per
# 1,000 devices; how busy the machine was). wrk starts 2 s before the loaded
# retraction, so its req/s mixes those 2 s unpaced with the time the server
# paces the feed while sending (--feed-rate-while-sending). Then the mixed load: wrk
# records (4 connections, new devices of random references), retracts (2,
# random references of the ledger) and reads the feed (C, mode phone) at
# once for D seconds. Each run starts once the last one's retractions are
# sent, with validators read again. The ledger is vacuumed and checkpointed
# before each run and each of the three retractions (settle).
#
# --references R scales the ledger: R references to 20 R devices (R x 1,000
# deliveries, every fifth reference retracted; 100 for 0.1 million, 10,000 for
# 10 million). --calls-only measures the calls alone, with `retract serve
# --mode api` (nothing is sent: the retractions stay queued, and are listed
# all the same). Uses DATABASE_URL's server when set, else a throwaway
# PostgreSQL; RETRACT_BINARY instead of the build when set.
#
# --cost [-n N] measures instead what the feed's rows cost a retraction of N
# devices (default 1,000,000): per run, two references of N deliveries each,
# one retracted through POST /v1/retractions with the trigger that writes
# the feed's rows (migration 0017) turned off, the other with it on, in turn;
# the time the POST took, the WAL written, and the bytes the feed's table grew by.
#
#   scripts/bench feed [-d SECONDS] [-c CONNECTIONS] [--runs R] [--sample S] [--latency-ms L]
#                      [--references R] [--calls-only] [-- SERVE FLAGS]
#   scripts/bench feed --cost [-n DEVICES] [--runs R]
set -euo pipefail

duration=20
connections=32
runs=1
sample=2000
latency=20
references=1000
calls_only=false
cost=false
cost_devices=1000000
serve_flags=()
while [ $# -gt 0 ]; do
    case "$1" in
        -d) duration=$2; shift 2 ;;
        -c) connections=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --sample) sample=$2; shift 2 ;;
        --latency-ms) latency=$2; shift 2 ;;
        --references) references=$2; shift 2 ;;
        --calls-only) calls_only=true; shift ;;
        --cost) cost=true; shift ;;
        -n) cost_devices=$2; shift 2 ;;
        --) shift; serve_flags=("$@"); break ;;
        *) echo "bench feed: unknown argument $1" >&2; exit 64 ;;
    esac
done
devices=$((20 * references)) per_reference=1000 broadcast=100000
$calls_only && broadcast=0
threads=$((connections < 2 ? connections : 2))

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
# shellcheck source=local-api.sh
source scripts/lib/local-api.sh
retract=$(retract_binary release)
ensure_wrk

open_local_api retract_bench_feed
sql() { psql "$url" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# Vacuums and checkpoints the ledger, so that what the last step wrote is not
# vacuumed or flushed during the next one's figures (as a ledger in steady
# state would be); CHECKPOINT needs a superuser or pg_checkpoint, and is
# left out without.
settle() {
    sql "VACUUM (ANALYZE)" >/dev/null
    sql "CHECKPOINT" >/dev/null 2>&1 || true
}

"$retract" migrate >/dev/null

# What the feed's rows cost a retraction of many devices.
if $cost; then
    start_simulator
    add_simulated_app bench
    RETRACT_BENCH_KEY=$(create_api_key --app bench --scopes retract --name backend)
    start_server --mode api --log-level warning --key-write-rate 0
    base="http://127.0.0.1:$server_port"
    psql "$url" -Xq -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date);
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT a.id, 'big-' || n || '-' || side, decode(lpad(to_hex(d), 64, '0'), 'hex'), (now() AT TIME ZONE 'UTC')::date, now(), 'apns'
FROM apps a, generate_series(1, $runs) n, (VALUES ('off'), ('on')) s (side), generate_series(1, $cost_devices) d
WHERE a.name = 'bench';
VACUUM ANALYZE;
SQL
    echo "a retraction of $cost_devices devices through POST /v1/retractions (mode api: nothing is sent), the feed's rows off and on" \
        "(release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'), commit $(git rev-parse --short HEAD))"
    printf '%-5s%-6s%12s%16s%20s\n' run rows seconds WAL-bytes/dev feed-bytes/dev
    for run in $(seq 1 "$runs"); do
        for side in off on; do
            if [ "$side" = off ]; then trigger=DISABLE; else trigger=ENABLE; fi
            psql "$url" -Xq -c "ALTER TABLE retractions $trigger TRIGGER retractions_feed" >/dev/null
            wal=$(psql "$url" -XAtc "SELECT pg_current_wal_lsn()")
            bytes=$(psql "$url" -XAtc "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'device_feed'::regclass")
            started=$(date +%s.%N)
            curl -sS --fail-with-body --max-time 600 -o /dev/null -H "Authorization: Bearer $RETRACT_BENCH_KEY" \
                -H "Content-Type: application/json" --data "{\"app\":\"bench\",\"references\":[\"big-$run-$side\"]}" "$base/v1/retractions"
            ended=$(date +%s.%N)
            psql "$url" -XAtq -c CHECKPOINT >/dev/null
            python3 - "$run" "$side" "$started" "$ended" "$cost_devices" \
                "$(psql "$url" -XAtc "SELECT pg_current_wal_lsn() - '$wal'::pg_lsn")" \
                "$(psql "$url" -XAtc "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) - $bytes FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'device_feed'::regclass")" <<'PY'
import sys
run, side, started, ended, devices, wal, grown = sys.argv[1:]
devices = int(devices)
print(f"{run:<5}{side:<6}{float(ended) - float(started):>12.2f}{float(wal) / devices:>16.1f}{float(grown) / devices:>20.1f}")
PY
        done
    done
    exit 0
fi

start_simulator --latency-ms "$latency"
add_simulated_app bench
client_key=$(create_api_key --app bench --scopes client --name phones)
RETRACT_BENCH_KEY=$(create_api_key --app bench --scopes record,retract --name backend)
export RETRACT_BENCH_KEY

# Device d's token: d in hex, 64 digits. Reference r goes to the 1,000
# devices 1 + ((r * 1000 + k) * 7919 mod 20 R), k = 1 … 1000: distinct, as
# 7919 is prime to 20 R (R not a multiple of 7919). The broadcasts of run n:
# "quiet-n" to devices 10^6 * (2n) + 1 …, "loaded-n" to 10^6 * (2n + 1) + 1 …,
# 100,000 each.
started=$(date +%s)
psql "$url" -Xq -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date);
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date - 1);
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT a.id, 'ref-' || r, decode(lpad(to_hex(1 + ((r * $per_reference + k) * 7919) % $devices), 64, '0'), 'hex'),
       ((now() - r * interval '10 ms') AT TIME ZONE 'UTC')::date, now() - r * interval '10 ms', 'apns'
FROM apps a, generate_series(1::bigint, $references) r, generate_series(1::bigint, $per_reference) k
WHERE a.name = 'bench';
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT a.id, b.name || '-' || n, decode(lpad(to_hex(1000000 * (3 * n + b.side) + d), 64, '0'), 'hex'),
       (now() AT TIME ZONE 'UTC')::date, now(), 'apns'
FROM apps a, generate_series(1, $runs) n, (VALUES ('quiet', 0), ('loaded', 1), ('after', 2)) b (name, side),
     generate_series(1, $broadcast) d
WHERE a.name = 'bench';
ANALYZE;
SQL
echo "ledger: $((references * per_reference)) deliveries ($references references x $per_reference of $devices devices)" \
    "and $((3 * runs * broadcast)) for the broadcasts, written in $(($(date +%s) - started)) s" >&2

mode=all
$calls_only && mode=api
start_server --mode "$mode" --log-level warning --key-read-rate 0 --key-write-rate 0 "${serve_flags[@]}"
base="http://127.0.0.1:$server_port"

# POSTs a retraction of reference $1; prints its id.
retract_reference() {
    local answer
    if ! answer=$(curl -sS --fail-with-body --max-time 60 -H "Authorization: Bearer $RETRACT_BENCH_KEY" \
        -H "Content-Type: application/json" --data "{\"app\":\"bench\",\"references\":[\"$1\"]}" "$base/v1/retractions"); then
        echo "bench feed: retracting $1 failed: $answer" >&2
        return 1
    fi
    python3 -c "import json,sys; print(json.loads(sys.argv[1])['id'])" "$answer"
}

# Waits, at most 600 s, until no retraction is queued or sending.
wait_for_retractions() {
    local open
    for _ in $(seq 1 1200); do
        open=$(sql "SELECT count(*) FROM retractions WHERE state IN ('queued', 'sending')")
        [ "$open" = 0 ] && return 0
        sleep 0.5
    done
    echo "bench feed: $open retractions still open after 600 s; measuring anyway" >&2
}

started=$(date +%s)
for r in $(seq 5 5 "$references"); do retract_reference "ref-$r" >/dev/null; done
$calls_only || wait_for_retractions
echo "$((references / 5)) retractions of 1,000 devices each made (and sent, unless --calls-only) in $(($(date +%s) - started)) s" >&2
psql "$url" -XAtq -c "SELECT 'device_feed: ' || (SELECT count(*) FROM device_feed) || ' rows in ' ||
    (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'device_feed'::regclass) || ' bytes with its index'" >&2

# The sample: each of S devices reads its feed, as the app does at first
# launch, and again from the cursor it gave, as at the next push (nothing
# new); $work/devices.txt gets the token, that cursor and the second
# answer's validator. Sets etags (false for a server that gives none).
sample_devices() {
    python3 - "$base" "$client_key" "$devices" "$sample" "$1" >"$work/devices.txt" <<'PY'
import http.client, json, random, sys, urllib.parse
base, key, devices, sample, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
connection = http.client.HTTPConnection(urllib.parse.urlsplit(base).netloc, timeout=60)
random.seed(seed)
listed = 0
for device in random.sample(range(1, devices + 1), sample):
    token = f"{device:064x}"
    # Every page, as the app reads them: runs after the first retract more,
    # and a device may have more than one page.
    page = {"hasMore": True}
    while page["hasMore"]:
        since = f"&since={page['cursor']}" if "cursor" in page else ""
        connection.request("GET", f"/v1/devices/{token}/retractions?limit=100{since}", headers={"Authorization": f"Bearer {key}"})
        answer = connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            sys.exit(f"bench feed: the feed of {token} answered {answer.status}: {body[:300]!r}")
        page = json.loads(body)
        listed += len(page["retractions"])
    connection.request(
        "GET", f"/v1/devices/{token}/retractions?limit=100&since={page['cursor']}", headers={"Authorization": f"Bearer {key}"})
    answer = connection.getresponse()
    again = json.loads(answer.read())
    if answer.status != 200 or again["retractions"]:
        sys.exit(f"bench feed: the feed of {token} from its cursor answered {answer.status}: {again}")
    print(token, page["cursor"], answer.getheader("ETag") or "-")
print(f"{sample} devices read their feed: {listed / sample:.1f} retractions each", file=sys.stderr)
PY
    etags=true
    if grep -q ' -$' "$work/devices.txt"; then etags=false; fi
}
export FEED_DEVICES=$work/devices.txt

# wrk on $1 connections for $duration s against path $2, with script $3 of
# scripts/lib (- for none) in FEED_MODE $4 (wrk-feed.lua); the client key for
# the feed, the backend's otherwise. Prints "requests/s p99-ms requests". An
# answer over 399 fails the benchmark (304 is an answer like 200).
load() {
    local out script=() key=$RETRACT_BENCH_KEY
    [ "$3" = - ] || script=(-s "scripts/lib/$3")
    [ "$3" != wrk-feed.lua ] || key=$client_key
    if ! out=$(FEED_MODE=${4:-} RETRACT_BENCH_KEY=$key timeout --foreground $((duration + 60)) \
        wrk -t"$(($1 < 2 ? $1 : 2))" -c"$1" -d"${duration}s" --latency "${script[@]}" "$base$2" 2>&1); then
        printf 'bench feed: wrk failed:\n%s\n' "$out" >&2
        return 1
    fi
    wrk_figures "$out"
}

# CPU seconds `retract serve` has used so far.
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$server_pid/stat"; }

# wrk on $1 connections against path $2 with script $3 in mode $4 (as load),
# then its row: label $5, the floor's rate $6 (none: this is the floor);
# requests/s, p99, ratio to the floor, the server's CPU µs per call and
# PostgreSQL's CPU seconds per 10,000 calls. Prints the row; sets figures.
measure() {
    local pg server rate p99 count
    pg=$(pg_cpu)
    server=$(server_cpu)
    figures=$(load "$1" "$2" "$3" "$4")
    read -r rate p99 count <<<"$figures"
    python3 - "$5" "$rate" "$p99" "$count" "${6:-$rate}" "$server" "$(server_cpu)" "$pg" "$(pg_cpu)" <<'PY'
import sys
label, rate, p99, count, floor, server_before, server_after, pg_before, pg_after = sys.argv[1:]
count = int(count)
server = (float(server_after) - float(server_before)) * 1e6 / count
pg = f"{(float(pg_after) - float(pg_before)) * 10000 / count:.2f}" if pg_before and pg_after else "-"
print(f"{label:<7}{float(rate):>10.0f}{float(p99):>9.2f}{float(rate) / float(floor):>9.3f}{server:>16.0f}{pg:>14}")
PY
}

# CPU seconds so far of the server, the simulator (the first process
# local-api.sh started) and PostgreSQL, and the machine's busy and total
# seconds (all cores, from /proc/stat); PostgreSQL's is - on DATABASE_URL's
# server, whose processes are not read.
cpu_now() {
    local sim pg
    sim=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/${local_api_pids[0]}/stat")
    pg=$(pg_cpu)
    echo "$(server_cpu) $sim ${pg:--} $(awk -v hz="$(getconf CLK_TCK)" '/^cpu / {
        printf "%.2f %.2f", ($2 + $3 + $4 + $7 + $8) / hz, ($2 + $3 + $4 + $5 + $6 + $7 + $8) / hz }' /proc/stat)"
}

# Where the CPU went between two cpu_now readings $1 and $2, for $3 devices:
# CPU milliseconds per 1,000 devices of the server, the simulator and
# PostgreSQL, and how busy the machine was.
cpu_spent() {
    python3 - "$1" "$2" "$3" <<'PY'
import sys
before, after, devices = sys.argv[1].split(), sys.argv[2].split(), int(sys.argv[3])
d = [float(b) - float(a) if a != "-" and b != "-" else None for a, b in zip(before, after)]
per = lambda x: "-" if x is None else f"{x * 1e6 / devices:.0f}"
print(f"CPU ms per 1,000 devices: server {per(d[0])}, simulator {per(d[1])}, PostgreSQL {per(d[2])}; machine busy {d[3] / d[4]:.0%}")
PY
}

# devices/s of retraction $1, from the times its ledger row gives.
retraction_rate() {
    sql "SELECT round(total / extract(epoch FROM finished_at - started_at)) FROM retractions WHERE id = '$1'"
}

echo "feed: ${references} references x ${per_reference} of ${devices} devices, $((references / 5)) retracted; sample=$sample duration=${duration}s" \
    "connections=$connections latency-ms=$latency serve flags: ${serve_flags[*]:-(none)} (release build, $(nproc) cores," \
    "PostgreSQL $(psql "$server" -XAtc 'show server_version'), commit $(git rev-parse --short HEAD))"
for run in $(seq 1 "$runs"); do
    # From an idle server (what the last run queued is sent), with validators of the ledger as it is.
    $calls_only || wait_for_retractions
    settle
    sample_devices "$run"
    echo
    echo "run $run"
    printf '%-7s%10s%9s%9s%16s%14s\n' call req/s p99-ms /floor "server-cpu-us" "pg-cpu-s/10k"
    measure "$connections" /healthz - "" floor
    floor=${figures%% *}
    calls=(full since)
    $etags && calls+=(etag)
    for call in "${calls[@]}"; do measure "$connections" / wrk-feed.lua "$call" "$call" "$floor"; done
    $calls_only && continue

    # A retraction of 100,000 devices alone, one of 100,000 others under the feed's load, and a third alone
    # again: the loaded one is compared with the mean of the two alone, as the ledger and the machine drift.
    settle
    cpu_before=$(cpu_now)
    quiet=$(retract_reference "quiet-$run")
    wait_for_retractions
    quiet_cpu=$(cpu_spent "$cpu_before" "$(cpu_now)" "$broadcast")
    settle
    FEED_MODE=phone RETRACT_BENCH_KEY=$client_key timeout --foreground 700 \
        wrk -t"$threads" -c"$connections" -d600s --latency -s scripts/lib/wrk-feed.lua "$base/" >"$work/under-load.txt" 2>&1 &
    wrk_pid=$!
    sleep 2
    cpu_before=$(cpu_now)
    loaded=$(retract_reference "loaded-$run")
    wait_for_retractions
    loaded_cpu=$(cpu_spent "$cpu_before" "$(cpu_now)" "$broadcast")
    kill -INT "$wrk_pid" 2>/dev/null || true
    wait "$wrk_pid" || true
    settle
    cpu_before=$(cpu_now)
    after=$(retract_reference "after-$run")
    wait_for_retractions
    after_cpu=$(cpu_spent "$cpu_before" "$(cpu_now)" "$broadcast")
    quiet_rate=$(retraction_rate "$quiet")
    loaded_rate=$(retraction_rate "$loaded")
    after_rate=$(retraction_rate "$after")
    printf '%-34s%10s devices/s, then %s after the loaded one\n' "retraction of $broadcast, alone" "$quiet_rate" "$after_rate"
    printf '%-34s%10s devices/s   ratio %s   (feed meanwhile: %s req/s, p99 %s ms)\n' "retraction of $broadcast, feed load" \
        "$loaded_rate" "$(python3 -c "print(round(2 * $loaded_rate / ($quiet_rate + $after_rate), 3))")" \
        "$(wrk_figures "$(cat "$work/under-load.txt")" | cut -d' ' -f1)" "$(wrk_figures "$(cat "$work/under-load.txt")" | cut -d' ' -f2)"
    printf '  alone:     %s\n  loaded:    %s\n  after:     %s\n' "$quiet_cpu" "$loaded_cpu" "$after_cpu"

    # Recording, retracting and reading the feed at once.
    wait_for_retractions
    load 4 /v1/deliveries wrk-deliveries.lua >"$work/mixed-record.txt" &
    record_pid=$!
    RETRACT_BENCH_REFERENCES=$references load 2 /v1/retractions wrk-retractions.lua >"$work/mixed-retract.txt" &
    retract_pid=$!
    measure "$connections" / wrk-feed.lua phone phone "$floor" >"$work/mixed-feed.txt"
    wait "$record_pid" "$retract_pid"
    echo "mixed: all three at once (the CPU columns count the three)"
    # shellcheck disable=SC2046 # rate and p99, two words
    printf '%-7s%10s%9s%9s%16s%14s\n' record $(cut -d' ' -f1,2 "$work/mixed-record.txt") - - -
    # shellcheck disable=SC2046
    printf '%-7s%10s%9s%9s%16s%14s\n' retract $(cut -d' ' -f1,2 "$work/mixed-retract.txt") - - -
    cat "$work/mixed-feed.txt"
done
