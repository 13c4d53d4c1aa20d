#!/usr/bin/env bash
# scripts/bench rtt: the fan-out rate at APNs's round trip. `retract
# notification` (release build, its own process) retracts N recorded devices
# (default 100,000) against `retract simulator --latency-ms L --no-inbox`, for
# L = 0, 50 and 200 ms, each with the defaults (the window and connections
# size themselves) and with `--window 400 --connections 2` (the fixed defaults
# before they did). Rates come from the account's own `seconds`. The
# latencies take turns within each run; prints every run and the medians,
# with each rate as a share of the same run's rate at the first latency
# (0 ms unless --latencies says otherwise) with the defaults.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=100000
runs=3
latencies=(0 50 200)
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --latencies) read -r -a latencies <<<"${2//,/ }"; shift 2 ;;
        *) echo "bench rtt: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_rtt
open_bench_work rtt
"$bin/retract-bench" certs --out "$work" >/dev/null

# One simulator per latency, each with its own certificate authority, app and N recorded devices.
declare -A app reference ca
simulator_pids=()
cleanup_rtt() {
    for pid in "${simulator_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    cleanup_bench_work
}
trap cleanup_rtt EXIT
for latency in "${latencies[@]}"; do
    start_bench_simulator "$work/sim-$latency" "$latency"
    port=$sim_port
    simulator_pids+=("$sim_pid")
    ca[$latency]=$work/sim-$latency/simulator-ca.pem
    made=$("$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "${ca[$latency]}" \
        --key "$work/signing-key.p8" -n "$devices" --record-only)
    app[$latency]=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['app'])" "$made")
    reference[$latency]=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['reference'])" "$made")
done

# Devices per second of one `retract notification`, by its account.
rate() {
    local latency=$1 out
    shift
    # Its progress lines go to a log; shown if it fails.
    if ! out=$(DATABASE_URL=$url APNS_CA_FILE=${ca[$latency]} "$bin/retract" notification "${reference[$latency]}" \
        --app "${app[$latency]}" --json "$@" 2>"$work/notification.log"); then
        cat "$work/notification.log" >&2
        return 1
    fi
    python3 -c "
import json, sys
account = json.loads(sys.argv[1])
assert account['sent'] == int(sys.argv[2]), account
print(round(account['sent'] / account['seconds']))" "$out" "$devices"
}

echo "devices=$devices (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
printf '%-8s%-12s%-34s%12s%10s\n' run latency-ms flags devices/s share
declare -A all
for run in $(seq 1 "$runs"); do
    base=
    for latency in "${latencies[@]}"; do
        for flags in defaults "--window 400 --connections 2"; do
            if [ "$flags" = defaults ]; then
                r=$(rate "$latency")
            else
                # shellcheck disable=SC2086
                r=$(rate "$latency" $flags)
            fi
            [ -n "$base" ] || base=$r
            share=$(python3 -c "print(f'{$r / $base:.2f}')")
            printf '%-8s%-12s%-34s%12s%10s\n' "$run" "$latency" "$flags" "$r" "$share"
            all["$latency|$flags"]+=" $r"
            all["$latency|$flags|share"]+=" $share"
        done
    done
done
for latency in "${latencies[@]}"; do
    for flags in defaults "--window 400 --connections 2"; do
        # shellcheck disable=SC2086
        printf '%-8s%-12s%-34s%12s%10s\n' median "$latency" "$flags" "$(median ${all["$latency|$flags"]})" \
            "$(median ${all["$latency|$flags|share"]})"
    done
done
