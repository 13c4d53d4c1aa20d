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

missing=()
command -v h2o >/dev/null 2>&1 || missing+=(h2o)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
if [ ${#missing[@]} -gt 0 ]; then
    echo "bench apns: installing ${missing[*]}" >&2
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

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

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
wait_for_port() {
    for _ in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "bench apns: nothing listens on port $1" >&2
    return 1
}

"$bin/retract-bench" certs --out "$work"
topic=com.example.bench

# h2o: one thread, a handler that reads the body and answers 200 with an apns-id.
h2o_port=$(free_port)
cat >"$work/h2o.conf" <<CONF
num-threads: 1
http2-max-concurrent-requests-per-connection: 1000
listen:
  host: 127.0.0.1
  port: $h2o_port
  ssl:
    certificate-file: $work/server.pem
    key-file: $work/server-key.pem
error-log: $work/h2o-error.log
hosts:
  default:
    paths:
      /3/device:
        mruby.handler: |
          Proc.new do |env|
            env["rack.input"].read
            [200, {"apns-id" => "00000000-0000-0000-0000-000000000000"}, []]
          end
CONF
h2o -c "$work/h2o.conf" >"$work/h2o.log" 2>&1 &
pids+=($!)
wait_for_port "$h2o_port"

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
h2load_rate() {
    h2load -n "$pushes" -c "$connections" -m "$streams" -t 1 -i "$work/uris.txt" -d "$work/body.json" \
        -H "apns-topic: $topic" -H "apns-push-type: background" -H "apns-priority: 5" \
        -H "authorization: bearer $(cat "$work/token.jwt")" >"$work/h2load.out" 2>&1
    grep -q " 0 failed, 0 errored" "$work/h2load.out" || { cat "$work/h2load.out" >&2; return 1; }
    sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$work/h2load.out" | cut -d. -f1
}
# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh

echo "pushes=$pushes connections=$connections streams=$streams (release build, $(nproc) cores)"
columns=(h2load/h2o client/h2o global/h2o client/sim)
$with_ahc && columns+=(ahc/h2o)
columns+=(ratio)
printf '%-7s' run; printf '%13s' "${columns[@]}"; echo
declare -A all
for run in $(seq 1 "$runs"); do
    row=()
    row+=("$(h2load_rate)")
    row+=("$(client "$h2o_port" "$work/ca.pem")")
    row+=("$(client "$h2o_port" "$work/ca.pem" --global-executor)")
    row+=("$(client "$sim_port" "$work/sim/simulator-ca.pem")")
    $with_ahc && row+=("$(ahc)")
    row+=("$(python3 -c "print(f'{${row[1]} / ${row[0]}:.2f}')")")
    printf '%-7s' "$run"; printf '%13s' "${row[@]}"; echo
    for i in "${!row[@]}"; do all[$i]+="${row[$i]} "; done
done
printf '%-7s' median
for i in "${!columns[@]}"; do
    # shellcheck disable=SC2086
    printf '%13s' "$(median ${all[$i]})"
done
echo
