#!/usr/bin/env bash
# scripts/bench fcm: a retraction of N devices recorded as FCM devices,
# worked to the end by RetractCore (ledger pages, work queue, FCM client with
# its OAuth2 token) against the FCM simulator running as its own process; in
# the same run, FCMClient alone sends the same N messages with the same
# window to the same simulator. Prints devices/s for both and the ratio
# engine/client, per run and as medians.
#
# Then FCMClient alone against h2o, a neutral HTTP/2 sink answering every
# messages:send with 200, next to h2load sending the same body to the same
# h2o with the same window on one connection: client/h2load, per run and
# as medians. --with-ahc adds AsyncHTTPClient sending the same body to the
# same h2o (Benchmarks/AHCComparison), the client FCMClient used before.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=20000
runs=3
window=400
with_ahc=false
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --with-ahc) with_ahc=true; shift ;;
        --window) window=$2; extra+=("$1" "$2"); shift 2 ;;
        *) echo "bench fcm: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
require_h2o_and_h2load
swift build -c release --product retract-bench >&2
bin=$(swift build -c release --show-bin-path)
if $with_ahc; then
    swift build -c release --package-path Benchmarks/AHCComparison >&2
    ahc_bin=$(swift build -c release --package-path Benchmarks/AHCComparison --show-bin-path)/ahc-apns-bench
fi

open_bench_database retract_bench_fcm
open_bench_work fcm

port=$(free_port)
"$bin/retract-bench" fcm-simulator --port "$port" --out "$work" >"$work/simulator.log" 2>&1 &
simulator_pid=$!
for _ in $(seq 1 100); do
    [ -f "$work/fcm-ca.pem" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

echo "devices=$devices ${extra[*]} (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
ratio_runs enginePerSecond clientPerSecond engine/s client/s \
    "$bin/retract-bench" fcm --database-url "$url" --base-url "https://127.0.0.1:$port" --ca "$work/fcm-ca.pem" \
    --service-account "$work/service-account.json" -n "$devices" "${extra[@]}"

# The same client against h2o, next to h2load.
"$bin/retract-bench" certs --out "$work" >/dev/null
start_h2o_sink /v1/projects x-sink h2o '{"name":"projects/retract-bench/messages/0:1"}'
"$bin/retract-bench" fcm-client --write-body "$work/message.json" --base-url "https://127.0.0.1:$h2o_port" --service-account "$work/service-account.json"
send_url="https://127.0.0.1:$h2o_port/v1/projects/retract-bench/messages:send"
# h2o checks no token; h2load carries a fixed one, the client fetches its own
# from the simulator's token endpoint once, before its timing starts.
access_token=bench-h2load-token
printf '%s' "$access_token" >"$work/access-token"
messages=$((devices * 5))
echo
echo "FCMClient alone against h2o next to h2load: messages=$messages window=$window, one connection for h2load"
columns=(h2load/h2o client/h2o)
$with_ahc && columns+=(ahc/h2o)
columns+=(ratio)
table_start "${columns[@]}"
for run in $(seq 1 "$runs"); do
    row=()
    row+=("$(h2load_rate -n "$messages" -c 1 -m "$window" -t 1 -d "$work/message.json" \
        -H "content-type: application/json; charset=UTF-8" -H "authorization: Bearer $access_token" "$send_url")")
    row+=("$("$bin/retract-bench" fcm-client --base-url "https://127.0.0.1:$h2o_port" --ca "$work/ca.pem" --ca "$work/fcm-ca.pem" \
        --service-account "$work/service-account.json" -n "$messages" --window "$window" |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["clientPerSecond"]))')")
    if $with_ahc; then
        row+=("$("$ahc_bin" "$h2o_port" "$work/ca.pem" "$work/access-token" "$messages" "$window" \
            "/v1/projects/retract-bench/messages:send" "$work/message.json" |
            python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failures"] == 0, d; print(round(d["pushesPerSecond"]))')")
    fi
    row+=("$(python3 -c "print(f'{${row[1]} / ${row[0]}:.2f}')")")
    table_row "$run" "${row[@]}"
done
table_medians
