#!/usr/bin/env bash
# scripts/bench fcm: a retraction of N devices recorded as FCM devices,
# worked to the end by RetractCore (ledger pages, work queue, FCM client with
# its OAuth2 token) against the FCM simulator running as its own process; in
# the same run, FCMClient alone sends the same N messages with the same
# window to the same simulator. Prints devices/s for both and the ratio
# engine/client, per run and as medians.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=20000
runs=3
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --window) extra+=("$1" "$2"); shift 2 ;;
        *) echo "bench fcm: unknown argument $1" >&2; exit 64 ;;
    esac
done

swift build -c release --product retract-bench >&2
bin=$(swift build -c release --show-bin-path)

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
open_bench_database retract_bench_fcm
open_bench_work fcm

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
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
