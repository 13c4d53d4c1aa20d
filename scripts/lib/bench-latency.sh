#!/usr/bin/env bash
# scripts/bench latency: how soon a deleted chat message's push leaves. N
# one-device retractions (default 500), posted one after another to
# `retract serve` (release build, its own processes), each timed from just
# before its POST /v1/retractions to the APNs simulator accepting the push
# (the simulator's own receive time; it runs in the benchmark's process, so
# both times come from one clock). Two layouts: one `serve --mode all`, and
# `--mode api` beside `--mode workers`. Prints p50, p99 and max in ms, and
# the POST's own answer time (p50), per run and as medians.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

retractions=500
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        -n) retractions=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "bench latency: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_latency
open_bench_work latency
open_run_databases

echo "retractions=$retractions per run, one device each (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
printf '%-8s%-5s%10s%10s%10s%12s\n' layout run p50-ms p99-ms max-ms answer-ms
for layout in all split; do
    p50s=() p99s=() maxes=() answers=()
    for run in $(seq 1 "$runs"); do
        new_run_database "${layout}_$run"
        out=$("$bin/retract-bench" latency --database-url "$run_url" --retract "$bin/retract" --work "$work/$layout-$run" \
            --layout "$layout" -n "$retractions")
        drop_run_database
        p50=$(field "$out" p50) p99=$(field "$out" p99) max=$(field "$out" max) answer=$(field "$out" answerP50)
        printf '%-8s%-5s%10s%10s%10s%12s\n' "$layout" "$run" "$p50" "$p99" "$max" "$answer"
        p50s+=("$p50") p99s+=("$p99") maxes+=("$max") answers+=("$answer")
    done
    printf '%-8s%-5s%10s%10s%10s%12s\n' "$layout" median "$(median "${p50s[@]}")" "$(median "${p99s[@]}")" \
        "$(median "${maxes[@]}")" "$(median "${answers[@]}")"
done
