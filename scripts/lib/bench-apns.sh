#!/usr/bin/env bash
# scripts/bench apns: APNsClient against (a) the APNs simulator and (b) h2o, a
# neutral HTTP/2 sink whose handler reads each body and answers 200; and, in
# the same run, h2load against the same h2o with the same connections and
# streams in flight. Prints pushes/s per run, then medians and the ratio
# client/h2load.
#
# The client runs its sending tasks on the connections' event loop (how
# RetractCore sends); "global" is the same client driven from Swift's global
# executor. --with-ahc adds AsyncHTTPClient (Benchmarks/AHCComparison).
set -euo pipefail

pushes=200000
connections=1
streams=100
runs=3
with_ahc=false
while [ $# -gt 0 ]; do
    case "$1" in
        --with-ahc) with_ahc=true; shift ;;
        -n) pushes=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "bench apns: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
require_h2o_and_h2load

swift build -c release --product retract-bench >&2
swift build -c release --product retract >&2
bin=$(swift build -c release --show-bin-path)
if $with_ahc; then
    swift build -c release --package-path Benchmarks/AHCComparison >&2
    ahc_bin=$(swift build -c release --package-path Benchmarks/AHCComparison --show-bin-path)/ahc-apns-bench
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/retract-bench-apns.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$bin/retract-bench" certs --out "$work"
topic=com.example.bench

# h2o: one thread, a handler that reads the body and answers 200 with an apns-id.
start_h2o_sink /3/device apns-id 00000000-0000-0000-0000-000000000000 ""
pids+=("$h2o_pid")

# The simulator, as its own process like h2o, keeping no inbox.
sim_port=$(free_port)
"$bin/retract" simulator --port "$sim_port" --cert-dir "$work/sim" --no-inbox \
    --key "BENCHKEY01:BENCHTEAM1:$work/signing-key.p8" --max-streams 1000 >"$work/simulator.log" 2>&1 &
pids+=($!)
wait_for_port "$sim_port"

# The same device tokens and body for h2load as APNsClient sends.
python3 - "$work" "$h2o_port" "$pushes" <<'PY'
import sys
work, port, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(f"{work}/uris.txt", "w") as uris:
    for i in range(count):
        uris.write(f"https://127.0.0.1:{port}/3/device/{i:064x}\n")
PY
printf '%s' '{"aps":{"content-available":1},"notificationCustomData":{"pushNotificationReferenceId":"bench-reference","isReferredNotificationMustRemoved":true}}' >"$work/body.json"

client() {
    "$bin/retract-bench" apns --port "$1" --ca "$2" --key "$work/signing-key.p8" \
        -n "$pushes" --connections "$connections" --streams "$streams" --topic "$topic" "${@:3}" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failures"] == 0, d; print(round(d["pushesPerSecond"]))'
}
ahc() {
    "$ahc_bin" "$h2o_port" "$work/ca.pem" "$work/token.jwt" "$pushes" $((connections * streams)) |
        python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["failures"] == 0, d; print(round(d["pushesPerSecond"]))'
}
echo "pushes=$pushes connections=$connections streams=$streams (release build, $(nproc) cores)"
columns=(h2load/h2o client/h2o global/h2o client/sim)
$with_ahc && columns+=(ahc/h2o)
columns+=(ratio)
table_start "${columns[@]}"
for run in $(seq 1 "$runs"); do
    row=()
    row+=("$(h2load_rate -n "$pushes" -c "$connections" -m "$streams" -t 1 -i "$work/uris.txt" -d "$work/body.json" \
        -H "apns-topic: $topic" -H "apns-push-type: background" -H "apns-priority: 5" \
        -H "authorization: bearer $(cat "$work/token.jwt")")")
    row+=("$(client "$h2o_port" "$work/ca.pem")")
    row+=("$(client "$h2o_port" "$work/ca.pem" --global-executor)")
    row+=("$(client "$sim_port" "$work/sim/simulator-ca.pem")")
    $with_ahc && row+=("$(ahc)")
    row+=("$(python3 -c "print(f'{${row[1]} / ${row[0]}:.2f}')")")
    table_row "$run" "${row[@]}"
done
table_medians
