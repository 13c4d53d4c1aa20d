#!/usr/bin/env bash
# scripts/bench reads: reads of a chat load (docs/reads.md). A release build
# of `retract serve --mode all --key-write-rate 0` (its own process) with
# the APNs simulator at a data centre's latency behind it; USERS users with
# DEVICES phones each are sent messages of one conversation each. Per run,
# on a database of its own: one-message deletions (one phone each, one every
# 50 ms) are timed alone for SECONDS; then for SECONDS reads are posted at
# RATE a second, each a user reading their next message on their first phone
# (POST /v1/reads with `reader`), while the same deletions are timed beside
# them. Prints per run: reads/s accepted, the POST's answer p99, POST -> push
# p50/p99 (to every other phone; each push checked to be background, to
# carry the message read, and none to the reader), the deletion's p99 alone
# and under the reads and their ratio, and what each read cost the ledger
# (bytes of device_feed and read_marks with their indexes, feed rows, write
# transactions of the whole database); then the medians.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
#
#   scripts/bench reads [--users U] [--devices D] [--rate R] [-d SECONDS] [--runs N] [--latency-ms L] [--connections C]
#
# --connections: the HTTP/1.1 connections the reads are posted on (32), at most 256 reads unanswered.
set -euo pipefail

users=10000
devices=3
rate=2000
duration=10
runs=3
latency=20
connections=32
while [ $# -gt 0 ]; do
    case "$1" in
        --users) users=$2; shift 2 ;;
        --devices) devices=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        -d) duration=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --latency-ms) latency=$2; shift 2 ;;
        --connections) connections=$2; shift 2 ;;
        *) echo "bench reads: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_reads
open_bench_work reads
open_run_databases

echo "users=$users devices=$devices rate=$rate/s on $connections connections for ${duration}s, APNs latency ${latency} ms (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
format='%-7s%10s%10s%9s%9s%9s%11s%11s%7s%9s%7s%7s%7s\n'
# shellcheck disable=SC2059
printf "$format" run reads/s answer99 push50 push99 pushmax del99-alone del99-reads ratio bytes/rd rows/rd xact/rd bad
columns=(acceptedPerSecond answerP99 pushP50 pushP99 pushMax deleteAloneP99 deleteLoadedP99 ratio bytesPerRead feedRowsPerRead writeTransactionsPerRead bad)
declare -A all
for run in $(seq 1 "$runs"); do
    new_run_database "$run"
    out=$("$bin/retract-bench" reads --database-url "$run_url" --retract "$bin/retract" --work "$work/run-$run" \
        --users "$users" --devices "$devices" --rate "$rate" -d "$duration" --latency-ms "$latency" --connections "$connections")
    drop_run_database
    # The ratio, and every read or push that went wrong: refused, missing, wrong, to the reader.
    out=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); o["ratio"]=o["deleteLoadedP99"]/max(o["deleteAloneP99"],0.001); o["bad"]=o["refused"]+o["missing"]+o["wrong"]+o["readerPushes"]; print(json.dumps(o))' "$out")
    row=()
    for column in "${columns[@]}"; do
        value=$(field "$out" "$column")
        row+=("$value")
        all[$column]="${all[$column]:-} $value"
    done
    # shellcheck disable=SC2059
    printf "$format" "$run" "${row[@]}"
done
medians=()
# shellcheck disable=SC2086
for column in "${columns[@]}"; do medians+=("$(median ${all[$column]})"); done
# shellcheck disable=SC2059
printf "$format" median "${medians[@]}"
