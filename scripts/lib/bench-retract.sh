#!/usr/bin/env bash
# scripts/bench retract: a retraction of N recorded devices worked to the end
# by RetractCore (ledger pages, work queue, APNs client) against the APNs
# simulator running as its own process; in the same run, APNsClient alone
# sends the same N pushes with the same window to the same simulator. Prints
# devices/s for both and the ratio engine/client, per run and as medians.
# Then times a service-extension retraction next to a background one of the
# same devices, in the same process (ratio service-extension/background),
# once as recorded and once with each delivery's collapse id recorded.
# Then times a retraction whose devices each had 20 references retracted in the
# last hour, which ride along in every push, next to one of the same tokens in
# an app without any (ratio history/plain), in the same process.
# Then runs `retract notification` (release build, its own process) for N/10
# and N recorded devices and prints each process's peak RSS: memory follows
# the window and page size, not the number of devices.
#
# With --campaign (N 1,000,000 unless -n says otherwise): the N deliveries
# also carry a campaign label, and a retraction by that campaign is timed
# next to one by the reference, of the same deliveries, in the same process
# (ratio campaign/reference); then the peak RSS of `retract notification
# --campaign` for N/10 and N.
# With --history, only the comparison of devices with 20 recent retractions
# each next to devices without, and the CPU seconds the engine, the simulator
# and PostgreSQL used in each half (from /proc), and which half was timed
# first; the ledger holds the 32 day partitions of a month's retention. With
# --vacuumed too, the ledger is vacuumed and analyzed once the devices are
# recorded, as autovacuum has by the time a day-old message is retracted.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=
runs=3
campaign=false
history_only=false
vacuumed=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --window|--connections) extra+=("$1" "$2"); shift 2 ;;
        --campaign) campaign=true; shift ;;
        --history) history_only=true; shift ;;
        --vacuumed) vacuumed=(--vacuumed); shift ;;
        *) echo "bench retract: unknown argument $1" >&2; exit 64 ;;
    esac
done
if [ ${#vacuumed[@]} -gt 0 ] && ! $history_only; then
    echo "bench retract: --vacuumed goes with --history" >&2
    exit 64
fi
if [ -z "$devices" ]; then
    if $campaign; then devices=1000000; else devices=100000; fi
fi

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_retract
open_bench_work retract

"$bin/retract-bench" certs --out "$work" >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$bin/retract" simulator --port "$port" --cert-dir "$work/sim" --no-inbox \
    --key "BENCHKEY01:BENCHTEAM1:$work/signing-key.p8" --max-streams 1000 >"$work/simulator.log" 2>&1 &
simulator_pid=$!
for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done


# The peak RSS of `retract notification` for N/10 and N recorded devices; with
# "campaign", retracting them by their campaign label.
peak_rss_table() {
    local by=$1 n made app reference label labelled=()
    if [ "$by" = campaign ]; then labelled=(--compare-campaign); fi
    printf '\n%-10s%14s%14s\n' devices seconds peakRSS-MiB
    for n in $((devices / 10)) "$devices"; do
        made=$("$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
            --key "$work/signing-key.p8" -n "$n" --record-only "${labelled[@]}")
        app=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['app'])" "$made")
        reference=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['reference'])" "$made")
        label=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['campaign'])" "$made")
        # ru_maxrss of the waited-for child: the retract process's peak resident set, in KiB.
        DATABASE_URL=$url APNS_CA_FILE=$work/sim/simulator-ca.pem python3 - "$bin/retract" "$app" "$reference" "$n" "$by" "$label" <<'PY'
import json, resource, subprocess, sys, time
binary, app, reference, n, by, label = sys.argv[1:7]
target = ["--campaign", label] if by == "campaign" else [reference]
started = time.monotonic()
done = subprocess.run([binary, "notification", *target, "--app", app, "--json"], capture_output=True, text=True)
seconds = time.monotonic() - started
if done.returncode != 0:
    sys.exit(f"retract notification exited {done.returncode}: {done.stderr}")
account = json.loads(done.stdout)
assert account["sent"] == int(n), account
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{n:<10}{seconds:14.1f}{peak:14.1f}")
PY
    done
}

echo "devices=$devices ${extra[*]} (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
if $campaign; then
    printf 'a retraction by campaign next to one by reference, the same deliveries, same run\n'
    ratio_runs campaignPerSecond referencePerSecond campaign/s reference/s \
        "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
        --key "$work/signing-key.p8" -n "$devices" "${extra[@]}" --compare-campaign
    peak_rss_table campaign
    exit 0
fi
# The CPU seconds each process group used per 10,000 devices in each half of
# each run logged in $raw_log (historyCPU and plainCPU), then the medians.
history_cpu_table() {
    python3 - "$raw_log" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
groups = ["bench", "simulator", "postgres"]
print("\nCPU seconds per 10,000 devices, with history / without (bench: the engine; simulator: retract simulator; postgres: every PostgreSQL process)")
print(f"{'run':<7}" + "".join(f"{g:>22}" for g in groups) + "   timed first")
per = {g: ([], []) for g in groups}
for index, run in enumerate(runs, 1):
    scale = 10000 / run["devices"]
    cells = ""
    for g in groups:
        h, p = run["historyCPU"][g] * scale, run["plainCPU"][g] * scale
        per[g][0].append(h)
        per[g][1].append(p)
        cells += f"{h:>12.2f} / {p:<7.2f}"
    print(f"{index:<7}" + cells + ("   history" if run["historyFirst"] else "   plain"))
print(f"{'median':<7}" + "".join(f"{statistics.median(per[g][0]):>12.2f} / {statistics.median(per[g][1]):<7.2f}" for g in groups))
PY
}

if $history_only; then
    printf 'devices with 20 recent retractions each next to devices without, same run\n'
    raw_log="$work/history-runs.jsonl"
    ratio_runs historyPerSecond plainPerSecond history/s plain/s \
        "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
        --key "$work/signing-key.p8" -n "$devices" "${extra[@]}" "${vacuumed[@]}" --compare-history
    history_cpu_table
    exit 0
fi
ratio_runs enginePerSecond clientPerSecond engine/s client/s \
    "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
    --key "$work/signing-key.p8" -n "$devices" "${extra[@]}"

# Delivery modes: a service-extension retraction (alerts, priority 10) of the
# same devices next to a background one, in the same process.
printf '\nservice-extension mode next to background mode, same devices, same run\n'
ratio_runs serviceExtensionPerSecond backgroundPerSecond service-ext/s background/s \
    "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
    --key "$work/signing-key.p8" -n "$devices" "${extra[@]}" --compare-modes

# The same with each delivery's collapse id recorded, as `retract send` records
# it: the alert mode then asks the ledger, per page, whether a newer message
# took an original's place under its collapse id (docs/payload.md).
printf '\nthe same, the deliveries recorded with a collapse id (as retract send records them)\n'
ratio_runs serviceExtensionPerSecond backgroundPerSecond service-ext/s background/s \
    "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
    --key "$work/signing-key.p8" -n "$devices" "${extra[@]}" --compare-modes --collapse-ids

# Earlier retractions ride along (docs/payload.md): each device's 20 recent
# retractions, read per page in one query, topped up into its body.
printf '\ndevices with 20 recent retractions each next to devices without, same run\n'
ratio_runs historyPerSecond plainPerSecond history/s plain/s \
    "$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
    --key "$work/signing-key.p8" -n "$devices" "${extra[@]}" --compare-history

peak_rss_table reference
