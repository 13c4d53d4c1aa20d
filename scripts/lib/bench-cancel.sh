#!/usr/bin/env bash
# scripts/bench cancel: how soon a cancel stops a mass retraction. A
# retraction of N devices (default 200,000) through `retract serve --mode
# all` (release build, its own process) to the APNs simulator answering in
# L ms (default 20); after 2,000 are sent, POST /v1/retractions/{id}/cancel.
# Prints, in seconds from just before the cancel's POST: its answer, the last
# push the simulator accepted, and the retraction reading `cancelled`; and
# the account (sent, spared, total). Per run and as medians.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=200000
runs=3
latency=20
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --latency-ms) latency=$2; shift 2 ;;
        *) echo "bench cancel: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_cancel
open_bench_work cancel
open_run_databases

echo "devices=$devices, APNs latency ${latency} ms, cancelled after 2,000 sent (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
printf '%-7s%10s%12s%14s%10s%10s%10s\n' run answer-s last-push-s cancelled-s sent spared total
answers=() lasts=() ends=()
for run in $(seq 1 "$runs"); do
    new_run_database "$run"
    out=$("$bin/retract-bench" cancel --database-url "$run_url" --retract "$bin/retract" --work "$work/$run" -n "$devices" \
        --latency-ms "$latency")
    drop_run_database
    answer=$(field "$out" answer) last=$(field "$out" lastPush) end=$(field "$out" cancelled)
    printf '%-7s%10.2f%12.2f%14.2f%10s%10s%10s\n' "$run" "$answer" "$last" "$end" "$(field "$out" sent)" "$(field "$out" spared)" \
        "$(field "$out" total)"
    answers+=("$answer") lasts+=("$last") ends+=("$end")
done
printf '%-7s%10.2f%12.2f%14.2f\n' median "$(median "${answers[@]}")" "$(median "${lasts[@]}")" "$(median "${ends[@]}")"
