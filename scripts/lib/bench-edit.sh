#!/usr/bin/env bash
# scripts/bench edit: an edit's fan-out rate against a retraction's, in the
# same run. N devices (default 100,000) each received two references;
# through `retract serve --mode all` (release build, its own process) to the
# APNs simulator answering in L ms (default 20), one is edited (POST
# /v1/edits, background mode), then the other retracted (POST
# /v1/retractions). Each is timed from just before its POST to its account
# reading `done`. Prints both rates (devices/s) and edit/retraction, per run
# and as medians.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=100000
runs=3
latency=20
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --latency-ms) latency=$2; shift 2 ;;
        *) echo "bench edit: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_edit
open_bench_work edit
open_run_databases

echo "devices=$devices, APNs latency ${latency} ms (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
printf '%-7s%10s%12s%14s%14s%8s\n' run edit-s edit-dev/s retract-s retract-dev/s ratio
edits=() retractions=() ratios=()
for run in $(seq 1 "$runs"); do
    new_run_database "$run"
    out=$("$bin/retract-bench" edit --database-url "$run_url" --retract "$bin/retract" --work "$work/$run" -n "$devices" \
        --latency-ms "$latency")
    drop_run_database
    edit=$(field "$out" editRate) retraction=$(field "$out" retractionRate)
    ratio=$(awk -v e="$edit" -v r="$retraction" 'BEGIN { printf "%.2f", e / r }')
    printf '%-7s%10.2f%12.0f%14.2f%14.0f%8s\n' "$run" "$(field "$out" editSeconds)" "$edit" "$(field "$out" retractionSeconds)" \
        "$retraction" "$ratio"
    edits+=("$edit") retractions+=("$retraction") ratios+=("$ratio")
done
printf '%-7s%10s%12.0f%14s%14.0f%8.2f\n' median "" "$(median "${edits[@]}")" "" "$(median "${retractions[@]}")" "$(median "${ratios[@]}")"
