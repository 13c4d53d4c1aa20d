#!/usr/bin/env bash
# scripts/bench api: the HTTP API under wrk. A release build of `retract serve`
# (mode all: the API and the fan-out workers in one process) on 127.0.0.1, with
# 20,000 one-device references ref-0 … ref-19999 recorded first, and the APNs
# simulator behind it. Each run is two wrk loads of D seconds on C connections:
# (a) POST /v1/deliveries, 100 new random tokens for a random reference per
# request, then (b) POST /v1/retractions of one random reference per request,
# then (c) GET /healthz, the same server's HTTP floor (no database, no key),
# which (a) and (b) are compared with as a ratio within the run. Prints
# requests/s and the 99th-percentile latency of each per run, then the medians. The workers send what (b) queued between runs. Uses DATABASE_URL's
# server when set, else a throwaway PostgreSQL removed at exit; RETRACT_BINARY
# instead of the build when set.
set -euo pipefail

duration=10
connections=32
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        -d) duration=$2; shift 2 ;;
        -c) connections=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "bench api: unknown argument $1" >&2; exit 64 ;;
    esac
done
references=20000 # as in scripts/lib/wrk-*.lua
threads=$((connections < 2 ? connections : 2)) # wrk wants a connection per thread at least

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
# shellcheck source=local-api.sh
source scripts/lib/local-api.sh
retract=$(retract_binary release)
ensure_wrk

open_local_api retract_bench_api

"$retract" migrate >/dev/null
start_simulator
add_simulated_app bench
RETRACT_BENCH_KEY=$(create_api_key --app bench --scopes record,retract --name bench)
export RETRACT_BENCH_KEY
# Per-key limits off: the benchmark is one key at full speed.
start_server --mode all --log-level warning --key-read-rate 0 --key-write-rate 0
base="http://127.0.0.1:$server_port"

# ref-N delivered to one device each, token N: 1,000 deliveries per request.
python3 - "$work" "$references" <<'PY'
import json, sys
work, count = sys.argv[1], int(sys.argv[2])
for batch, start in enumerate(range(0, count, 1000)):
    deliveries = [{"app": "bench", "reference": f"ref-{n}", "tokens": [f"{n:064x}"]} for n in range(start, min(start + 1000, count))]
    with open(f"{work}/record-{batch:03}.json", "w") as body:
        json.dump(deliveries, body)
PY
recorded=0
for body in "$work"/record-*.json; do
    if ! answer=$(curl -sS --fail-with-body --max-time 60 -H "Authorization: Bearer $RETRACT_BENCH_KEY" \
        -H "Content-Type: application/json" --data-binary "@$body" "$base/v1/deliveries"); then
        echo "bench api: recording the references failed: $answer" >&2
        exit 1
    fi
    recorded=$((recorded + $(field "$answer" recorded)))
done
if [ "$recorded" -ne "$references" ]; then
    echo "bench api: recorded $recorded deliveries, expected $references" >&2
    exit 1
fi

# wrk with Lua script $1 (- for none: plain GETs) against path $2; prints "requests/s p99-ms requests". An
# answer over 399 fails the benchmark. --foreground keeps wrk in this
# script's process group, so Ctrl-C reaches it.
load() {
    local out
    local script=()
    [ "$1" = - ] || script=(-s "scripts/lib/$1")
    if ! out=$(timeout --foreground $((duration + 60)) wrk -t"$threads" -c"$connections" -d"${duration}s" --latency \
        "${script[@]}" "$base$2" 2>&1); then
        printf 'bench api: wrk failed:\n%s\n' "$out" >&2
        return 1
    fi
    wrk_figures "$out"
}

# Waits, at most 300 s, until the workers have sent what the last run queued,
# so that each run starts from an idle server.
wait_for_workers() {
    local depth
    sleep 2 # the server refreshes the gauge every second
    for _ in $(seq 1 300); do
        depth=$(curl -sS --max-time 5 "$base/metrics" | awk '$1 == "retract_queue_depth" {print $2}')
        if [ -z "$depth" ] || [ "${depth%.*}" = 0 ]; then return 0; fi
        sleep 1
    done
    echo "bench api: the workers still have $depth items queued; measuring anyway" >&2
}

echo "duration=${duration}s connections=$connections threads=$threads references=$references (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
echo "record: POST /v1/deliveries of 100 tokens; retract: POST /v1/retractions of 1 reference; floor: GET /healthz"
printf '%-7s%11s%9s%15s%9s%11s%9s%9s%10s\n' run record/s p99-ms retract/s p99-ms floor/s p99-ms "rec/flr" "ret/flr"
record_all=() record_p99_all=() retract_all=() retract_p99_all=() floor_all=() record_ratio_all=() retract_ratio_all=()
for run in $(seq 1 "$runs"); do
    wait_for_workers
    result=$(load wrk-deliveries.lua /v1/deliveries)
    read -r record_rate record_p99 _ <<<"$result"
    result=$(load wrk-retractions.lua /v1/retractions)
    read -r retract_rate retract_p99 _ <<<"$result"
    result=$(load - /healthz)
    read -r floor_rate floor_p99 _ <<<"$result"
    record_ratio=$(python3 -c "print(round($record_rate / $floor_rate, 3))")
    retract_ratio=$(python3 -c "print(round($retract_rate / $floor_rate, 3))")
    printf '%-7s%11s%9s%15s%9s%11s%9s%9s%10s\n' "$run" "$record_rate" "$record_p99" "$retract_rate" "$retract_p99" "$floor_rate" "$floor_p99" \
        "$record_ratio" "$retract_ratio"
    record_all+=("$record_rate") record_p99_all+=("$record_p99") retract_all+=("$retract_rate") retract_p99_all+=("$retract_p99")
    floor_all+=("$floor_rate") record_ratio_all+=("$record_ratio") retract_ratio_all+=("$retract_ratio")
done
printf '%-7s%11s%9s%15s%9s%11s%9s%9s%10s\n' median "$(median "${record_all[@]}")" "$(median "${record_p99_all[@]}")" \
    "$(median "${retract_all[@]}")" "$(median "${retract_p99_all[@]}")" "$(median "${floor_all[@]}")" "" \
    "$(median "${record_ratio_all[@]}")" "$(median "${retract_ratio_all[@]}")"
echo "deliveries recorded per second (median): $(python3 -c "print(int($(median "${record_all[@]}") * 100))")"
