#!/usr/bin/env bash
# scripts/bench scale: what one PostgreSQL holds and what a second worker
# process adds. Records N devices (default 1,000,000) of one reference
# through RetractStore (batches of 10,000, as `scripts/bench retract` does)
# and prints the ingest rate, the bytes of the deliveries table and its
# indexes (summed over its day partitions) and the WAL the recording wrote,
# each also per million deliveries. Then, unless --ledger-only, against
# `retract simulator --no-inbox --latency-ms L` (its own process, L default
# 0), it retracts the reference with one `retract serve --mode workers`
# process (the engine's defaults, or --window and --connections as given),
# then again (a fresh retraction of the same devices) with two sharing the
# queue. Each retraction is queued by `retract notification --no-wait` with
# the workers already running and idle; its time is the ledger's, from the
# retraction's created_at to its finished_at. Prints devices/s, the ratio
# two/one, each workers process's peak RSS (VmHWM) and CPU seconds, and what
# the retraction cost the work queue (work_items rows inserted, updated,
# deleted; retractions rows updated), the WAL and PostgreSQL's CPU. Last,
# the bytes of the same rows with random tokens.
# Uses DATABASE_URL's server when set, else a throwaway PostgreSQL removed at exit.
set -euo pipefail

devices=1000000
runs=1
latency=0
ledger_only=false
engine=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) devices=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --latency-ms) latency=$2; shift 2 ;;
        --ledger-only) ledger_only=true; shift ;;
        --window|--connections) engine+=("$1" "$2"); shift 2 ;;
        *) echo "bench scale: unknown argument $1" >&2; exit 64 ;;
    esac
done

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
build_release_binaries
open_bench_database retract_bench_scale
open_bench_work scale
worker_pids=()
cleanup_scale() {
    for pid in "${worker_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    cleanup_bench_work
}
trap cleanup_scale EXIT

"$bin/retract-bench" certs --out "$work" >/dev/null
sql() { psql "$url" -XAtqc "$1"; }
now() { date +%s.%N; }
# $2 - $1 as a number with one decimal, or - when either is empty.
minus() { if [ -n "$1" ] && [ -n "$2" ]; then python3 -c "print(f'{$2 - $1:.1f}')"; else echo -; fi; }

echo "devices=$devices latency-ms=$latency ${engine[*]} (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'), commit $(git rev-parse --short HEAD))"

port=1
if ! $ledger_only; then
    start_bench_simulator "$work/sim" "$latency"
    port=$sim_port simulator_pid=$sim_pid
fi

# The ledger: migrate, then record and measure (the WAL written while
# recording also counts the app the recorder registers: one row).
DATABASE_URL=$url "$bin/retract" migrate >/dev/null
wal_before=$(sql "SELECT pg_current_wal_lsn()")
cpu_before=$(pg_cpu)
started=$(now)
made=$("$bin/retract-bench" retract --database-url "$url" --port "$port" --ca "$work/sim/simulator-ca.pem" \
    --key "$work/signing-key.p8" -n "$devices" --record-only)
ended=$(now)
# A moment for the recorder's backends to exit and be counted.
sleep 1
cpu_after=$(pg_cpu)
wal_after=$(sql "SELECT pg_current_wal_lsn()")
app=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['app'])" "$made")
reference=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['reference'])" "$made")

# Each batch's deliveries carry the time the batch was made, just before it
# is written: from the first batch's to the last's, every batch but the last
# was written. That rate leaves out the process's start and making the tokens;
# the process's own wall clock is shown next to it.
span=$(sql "SELECT extract(epoch FROM max(sent_at) - min(sent_at)) FROM deliveries")
printf '\nledger ingest (RetractStore.record, batches of 10,000, one after another)\n'
printf '%-12s%16s%14s%18s%16s%18s\n' deliveries store-rows/s process-s process-rows/s postgres-cpu-s cpu-s/million
python3 - "$devices" "$span" "$started" "$ended" "$(minus "$cpu_before" "$cpu_after")" <<'PY'
import sys
n, span, started, ended = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
cpu = sys.argv[5]
batch = min(10000, n)
store = (n - batch) / span if span > 0 else float("nan")
wall = ended - started
per = f"{float(cpu) / (n / 1e6):.1f}" if cpu != "-" else "-"
print(f"{n:<12}{store:16,.0f}{wall:14.1f}{n / wall:18,.0f}{cpu:>16}{per:>18}")
PY

# Bytes: deliveries is partitioned by day, and the parent holds nothing, so
# each figure is summed over its partitions; each index under the name of
# the partitioned index it belongs to. The partitions' visibility and free
# space maps come with VACUUM: autovacuum may or may not have run yet.
printf '\ndeliveries on disk (summed over %s partition(s); MiB, and bytes per delivery)\n' \
    "$(sql "SELECT count(*) FROM pg_inherits WHERE inhparent = 'deliveries'::regclass")"
printf '%-30s%12s%14s%16s\n' relation MiB bytes/row MiB/million
sql "
WITH parts AS (
    SELECT c.oid, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'deliveries'::regclass
)
SELECT 'table (heap+toast)', sum(pg_total_relation_size(oid) - pg_indexes_size(oid)) FROM parts
UNION ALL
SELECT 'index ' || pi.relname, sum(pg_relation_size(ic.oid))
FROM parts p JOIN pg_index x ON x.indrelid = p.oid JOIN pg_class ic ON ic.oid = x.indexrelid
JOIN pg_inherits ii ON ii.inhrelid = ic.oid JOIN pg_class pi ON pi.oid = ii.inhparent
GROUP BY 1
UNION ALL
SELECT 'indexes (all)', sum(pg_indexes_size(oid)) FROM parts
UNION ALL
SELECT 'total', sum(pg_total_relation_size(oid)) FROM parts
UNION ALL
SELECT 'WAL written recording', pg_wal_lsn_diff('$wal_after', '$wal_before')
" | while IFS='|' read -r name bytes; do
    python3 -c "
import sys
name, b, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
print(f'{name:<30}{b / 2**20:12.1f}{b / n:14.1f}{b / 2**20 / (n / 1e6):16.1f}')" "$name" "$bytes" "$devices"
done

# The benchmark's tokens count up, so every index insert lands at the right
# edge of its B-tree. Real tokens are random: the same rows with each token
# replaced by its SHA-256, inserted in that (random) order by one INSERT ...
# SELECT into a plain table with the same columns and indexes, show what
# that does to the bytes (and to PostgreSQL's own insert rate, no client).
random_token_sizes() {
    local started ended
    sql "CREATE TABLE random_tokens (LIKE deliveries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)"
    started=$(now)
    sql "INSERT INTO random_tokens (app_id, reference, token, sent_on, sent_at, transport, collapse_id, thread, sender, recipient, campaign)
         SELECT app_id, reference, sha256(token), sent_on, sent_at, transport, collapse_id,
             thread, sender, recipient, campaign FROM deliveries" >/dev/null
    ended=$(now)
    printf '
the same rows with random tokens (SHA-256 of each), one INSERT ... SELECT in %s s: %s rows/s
' \
        "$(python3 -c "print(f'{$ended - $started:.1f}')")" "$(python3 -c "print(f'{$devices / ($ended - $started):,.0f}')")"
    printf '%-30s%12s%14s%16s\n' relation MiB bytes/row MiB/million
    sql "
    SELECT 'table (heap+toast)', pg_total_relation_size('random_tokens') - pg_indexes_size('random_tokens')
    UNION ALL
    SELECT 'index deliveries_' || regexp_replace(regexp_replace(regexp_replace(c.relname, '^random_tokens_', ''),
               'app_id_token_sent_on_reference_idx', 'by_device'), 'app_id_(.*)_token_idx', 'by_\1'), pg_relation_size(c.oid)
    FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = 'random_tokens'::regclass
    UNION ALL
    SELECT 'indexes (all)', pg_indexes_size('random_tokens')
    UNION ALL
    SELECT 'total', pg_total_relation_size('random_tokens')
    " | while IFS='|' read -r name bytes; do
        python3 -c "
import sys
name, b, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
print(f'{name:<30}{b / 2**20:12.1f}{b / n:14.1f}{b / 2**20 / (n / 1e6):16.1f}')" "$name" "$bytes" "$devices"
    done
    sql "DROP TABLE random_tokens"
}

if $ledger_only; then
    random_token_sizes
    exit 0
fi

# Starts K `retract serve --mode workers` processes and waits until each listens.
start_workers() {
    local k=$1 i
    worker_pids=()
    for i in $(seq 1 "$k"); do
        DATABASE_URL=$url APNS_CA_FILE=$work/sim/simulator-ca.pem "$bin/retract" serve --mode workers \
            --host 127.0.0.1 --port 0 --log-level warning --drain-timeout 2 "${engine[@]}" >"$work/workers-$k-$i.log" 2>&1 &
        worker_pids+=("$!")
    done
    for i in $(seq 1 "$k"); do
        for _ in $(seq 1 600); do
            grep -q 'listening on http://' "$work/workers-$k-$i.log" 2>/dev/null && break
            kill -0 "${worker_pids[$((i - 1))]}" 2>/dev/null || break
            sleep 0.1
        done
        if ! grep -q 'listening on http://' "$work/workers-$k-$i.log"; then
            echo "bench scale: workers process $i of $k did not start:" >&2
            cat "$work/workers-$k-$i.log" >&2
            exit 1
        fi
    done
}

# Peak RSS in MiB and CPU seconds of a running process.
peak_rss() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.1f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# work_items rows inserted, updated and deleted so far, and retractions rows
# updated (the server's statistics).
queue_counts() {
    sql "SELECT w.n_tup_ins, w.n_tup_upd, w.n_tup_del, r.n_tup_upd FROM pg_stat_user_tables w, pg_stat_user_tables r
         WHERE w.relname = 'work_items' AND r.relname = 'retractions'"
}

# One retraction of the reference with K workers processes, queued once they
# are up and idle. Sets rate (devices/s), seconds, rss and cpu (each
# process's, joined by /), and appends its row to $work/queue.txt.
retract_with() {
    local k=$1 run=$2 queue_before wal0 cpu0 out id state total sent pid limit deadline rss_all=() cpu_all=()
    start_workers "$k"
    queue_before=$(queue_counts)
    wal0=$(sql "SELECT pg_current_wal_lsn()")
    cpu0=$(pg_cpu)
    out=$(DATABASE_URL=$url APNS_CA_FILE=$work/sim/simulator-ca.pem "$bin/retract" notification "$reference" \
        --app "$app" --no-wait --json 2>"$work/notification.log") || { cat "$work/notification.log" >&2; exit 1; }
    id=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['id'])" "$out")
    # At least 200 devices/s, or the run is called off.
    limit=$((60 + devices / 200))
    deadline=$(($(date +%s) + limit))
    while :; do
        state=$(sql "SELECT state FROM retractions WHERE id = '$id'")
        if [ "$state" = done ] || [ "$state" = failed ]; then break; fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "bench scale: retraction $id still $state after ${limit}s" >&2
            exit 1
        fi
        sleep 0.2
    done
    for pid in "${worker_pids[@]}"; do rss_all+=("$(peak_rss "$pid")") cpu_all+=("$(cpu_seconds "$pid")"); done
    for pid in "${worker_pids[@]}"; do kill "$pid"; done
    for pid in "${worker_pids[@]}"; do wait "$pid" || true; done
    worker_pids=()
    # The exited backends have flushed their statistics; a moment for them to be gone.
    sleep 1
    IFS='|' read -r total sent seconds <<<"$(sql "SELECT total, sent, extract(epoch FROM finished_at - created_at) FROM retractions WHERE id = '$id'")"
    if [ "$state" != done ] || [ "$sent" != "$devices" ]; then
        echo "bench scale: retraction $id ended $state with $sent of $total devices sent" >&2
        exit 1
    fi
    rate=$(python3 -c "print(round($devices / $seconds))")
    rss=$(IFS=/; echo "${rss_all[*]}")
    cpu=$(IFS=/; echo "${cpu_all[*]}")
    python3 - "$run" "$k" "$devices" "$queue_before" "$(queue_counts)" \
        "$(sql "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')")" "$(minus "$cpu0" "$(pg_cpu)")" >>"$work/queue.txt" <<'PY'
import sys
run, k, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
before = [int(x) for x in sys.argv[4].split("|")]
after = [int(x) for x in sys.argv[5].split("|")]
wal, cpu = float(sys.argv[6]), sys.argv[7]
ins, upd, dele, rupd = (a - b for a, b in zip(after, before))
m = n / 1e6
per = f"{float(cpu) / m:.1f}" if cpu != "-" else "-"
print(f"{run:<5}{k:<11}{ins:10}{upd:10}{dele:10}{rupd:12}{wal / 2**20:10.1f}{wal / 2**20 / m:14.1f}{cpu:>10}{per:>14}")
PY
}

row() { printf '%-7s%-11s%10s%10s%12s%8s%18s%14s\n' "$@"; }
printf '\nretraction of the %s devices: one workers process, then two (devices/s from created_at to finished_at)\n' "$devices"
row run processes devices seconds devices/s two/one peakRSS-MiB cpu-s
: >"$work/queue.txt"
ones=() twos=() ratios=()
for run in $(seq 1 "$runs"); do
    retract_with 1 "$run"
    one=$rate
    row "$run" 1 "$devices" "$(printf '%.1f' "$seconds")" "$rate" "" "$rss" "$cpu"
    retract_with 2 "$run"
    two=$rate
    ratio=$(python3 -c "print(f'{$two / $one:.2f}')")
    row "$run" 2 "$devices" "$(printf '%.1f' "$seconds")" "$rate" "$ratio" "$rss" "$cpu"
    ones+=("$one") twos+=("$two") ratios+=("$ratio")
done
if [ "$runs" -gt 1 ]; then
    row median 1 "$devices" "" "$(median "${ones[@]}")" "" "" ""
    row median 2 "$devices" "" "$(median "${twos[@]}")" "$(median "${ratios[@]}")" "" ""
fi

printf '\nwhat each retraction cost PostgreSQL: work_items rows inserted, updated, deleted and retractions rows updated\n'
printf '(pg_stat_user_tables), WAL, CPU (from the workers idle to their stop)\n'
printf '%-5s%-11s%10s%10s%10s%12s%10s%14s%10s%14s\n' run processes inserted updated deleted retr-upd WAL-MiB WAL-MiB/mil pg-cpu-s cpu-s/mil
cat "$work/queue.txt"

random_token_sizes
