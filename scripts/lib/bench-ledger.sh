#!/usr/bin/env bash
# scripts/bench ledger: records N deliveries of one reference through
# RetractStore (batches of B), then loads the same rows into the same emptied
# table with psql \copy, in the same run; prints rows/s for both and the ratio
# store/copy; then the same with each label (thread, sender, recipient,
# campaign) on every delivery, one at a time and all four: what each index
# costs on ingest. Then streams every device of that reference and prints rows/s
# and the streaming process's peak RSS. Uses DATABASE_URL's server when set,
# else a throwaway PostgreSQL that is removed at exit.
set -euo pipefail

rows=1000000
batch=10000
runs=3
while [ $# -gt 0 ]; do
    case "$1" in
        -n) rows=$2; shift 2 ;;
        --batch) batch=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        *) echo "bench ledger: unknown argument $1" >&2; exit 64 ;;
    esac
done

swift build -c release --product retract-bench >&2
bin=$(swift build -c release --show-bin-path)

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
open_bench_database retract_bench
open_bench_work ledger
chmod 755 "$work"


echo "rows=$rows batch=$batch (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
ratio_runs storeRowsPerSecond copyRowsPerSecond store/s copy/s \
    "$bin/retract-bench" ledger --database-url "$url" -n "$rows" --batch "$batch" --work "$work"

# The same with labels on every delivery (each indexed for retraction by
# selector), COPY loading the same columns.
for labels in thread sender recipient campaign "thread sender recipient campaign"; do
    printf '\nwith %s on every delivery\n' "$labels"
    label_flags=()
    for label in $labels; do label_flags+=(--label "$label"); done
    ratio_runs storeRowsPerSecond copyRowsPerSecond store/s copy/s \
        "$bin/retract-bench" ledger --database-url "$url" -n "$rows" --batch "$batch" --work "$work" "${label_flags[@]}"
done

printf '\n%-7s%14s%14s\n' run devices/s peakRSS-MiB
stream_all=() rss_all=()
for run in $(seq 1 "$runs"); do
    out=$("$bin/retract-bench" ledger-stream --database-url "$url")
    rate=$(field "$out" devicesPerSecond)
    rss=$(field "$out" peakRSSMiB)
    printf '%-7s%14.0f%14s\n' "$run" "$rate" "$rss"
    stream_all+=("$rate") rss_all+=("$rss")
done
printf '%-7s%14.0f%14s\n' median "$(median "${stream_all[@]}")" "$(median "${rss_all[@]}")"
