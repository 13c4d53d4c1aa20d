#!/usr/bin/env bash
# scripts/bench ledger: records N deliveries of one reference through
# RetractStore (batches of B), then loads the same rows into the same emptied
# table with psql \copy, in the same run; prints rows/s for both and the ratio
# store/copy; then the same with each label (thread, sender, recipient,
# campaign) on every delivery, one at a time and all four: what each index
# costs on ingest. Then streams every device of that reference and prints rows/s
# and the streaming process's peak RSS. Last, what the notification list
# costs recording: the same rows loaded with \copy with the trigger that
# keeps `notifications` (migration 0015) and without it, alternately, in one
# run (--list-only: that alone, needing no build). Uses DATABASE_URL's server
# when set, else a throwaway PostgreSQL that is removed at exit.
set -euo pipefail

rows=1000000
batch=10000
runs=3
list_only=false
while [ $# -gt 0 ]; do
    case "$1" in
        -n) rows=$2; shift 2 ;;
        --batch) batch=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --list-only) list_only=true; shift ;;
        *) echo "bench ledger: unknown argument $1" >&2; exit 64 ;;
    esac
done

if [ "$list_only" = false ]; then swift build -c release --product retract-bench >&2; fi
swift build -c release --product retract >&2
bin=$(swift build -c release --show-bin-path)

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
open_bench_database retract_bench
open_bench_work ledger
chmod 755 "$work"

# Rows/s of \copy of $work/list.csv into an emptied deliveries, with the list's trigger $1 (ENABLE or DISABLE).
copy_with_trigger() {
    psql "$url" -Xq -v ON_ERROR_STOP=1 >/dev/null <<SQL
TRUNCATE deliveries;
TRUNCATE notifications;
ALTER TABLE deliveries $1 TRIGGER deliveries_note_notifications;
SQL
    local started ended
    started=$(date +%s.%N)
    psql "$url" -Xq -v ON_ERROR_STOP=1 -c "\copy deliveries (app_id, reference, token, sent_on, sent_at, transport) FROM '$work/list.csv' WITH (FORMAT csv)"
    ended=$(date +%s.%N)
    python3 -c "print(round($rows / ($ended - $started)))"
}

notification_list_cost() {
    # $rows deliveries as a chat app records them: references of 10 devices each.
    psql "$url" -Xq -v ON_ERROR_STOP=1 >/dev/null <<SQL
INSERT INTO apps (name, topic, environment, auth_kind, key_id, team_id, key_path)
VALUES ('listbench', 'com.example.listbench', 'sandbox', 'token', 'LISTBENCH1', 'LISTBENCH1', '/dev/null') ON CONFLICT DO NOTHING;
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date);
\copy (SELECT a.id, 'msg-' || (n / 10), decode(lpad(to_hex(n % 10 + 1), 64, '0'), 'hex'), (now() AT TIME ZONE 'UTC')::date, now(), 'apns' FROM apps a, generate_series(0, $rows - 1) n WHERE a.name = 'listbench') TO '$work/list.csv' WITH (FORMAT csv)
SQL
    printf '\nwhat the notification list costs recording: \\copy of %s deliveries (references of 10 devices)\n' "$rows"
    printf '%-7s%14s%14s%8s\n' run with/s without/s ratio
    local with_all=() without_all=() ratio_all=() with without ratio run
    for run in $(seq 1 "$runs"); do
        with=$(copy_with_trigger ENABLE)
        without=$(copy_with_trigger DISABLE)
        ratio=$(python3 -c "print(f'{$with / $without:.2f}')")
        printf '%-7s%14s%14s%8s\n' "$run" "$with" "$without" "$ratio"
        with_all+=("$with") without_all+=("$without") ratio_all+=("$ratio")
    done
    printf '%-7s%14s%14s%8s\n' median "$(median "${with_all[@]}")" "$(median "${without_all[@]}")" "$(median "${ratio_all[@]}")"

    # Writers of one broadcast in parallel all update its one row: pgbench, 4 clients, batches of 1,000 of one reference.
    if command -v pgbench >/dev/null 2>&1; then
        cat >"$work/broadcast.sql" <<'SQL'
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT a.id, 'broadcast', decode(md5(random()::text || g), 'hex') || decode(md5(random()::text || g), 'hex'), (now() AT TIME ZONE 'UTC')::date, now(), 'apns'
FROM apps a, generate_series(1, 1000) g WHERE a.name = 'listbench';
SQL
        printf '\nfour writers of one broadcast at once (pgbench -c 4, batches of 1,000 deliveries of one reference, 8 s)\n'
        printf '%-7s%14s%14s%8s\n' run with/s without/s ratio
        with_all=() without_all=() ratio_all=()
        for run in $(seq 1 "$runs"); do
            for mode in ENABLE DISABLE; do
                psql "$url" -Xq -c "TRUNCATE deliveries" -c "TRUNCATE notifications" \
                    -c "ALTER TABLE deliveries $mode TRIGGER deliveries_note_notifications" >/dev/null
                rate=$(pgbench -n -c 4 -j 2 -T 8 -f "$work/broadcast.sql" "$url" 2>/dev/null | awk '/^tps/ {printf "%.0f", $3 * 1000}')
                if [ "$mode" = ENABLE ]; then with=$rate; else without=$rate; fi
            done
            ratio=$(python3 -c "print(f'{$with / $without:.2f}')")
            printf '%-7s%14s%14s%8s\n' "$run" "$with" "$without" "$ratio"
            with_all+=("$with") without_all+=("$without") ratio_all+=("$ratio")
        done
        printf '%-7s%14s%14s%8s\n' median "$(median "${with_all[@]}")" "$(median "${without_all[@]}")" "$(median "${ratio_all[@]}")"
    fi
    psql "$url" -Xqc "ALTER TABLE deliveries ENABLE TRIGGER deliveries_note_notifications" >/dev/null
}


echo "rows=$rows batch=$batch (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
if [ "$list_only" = true ]; then
    "$bin/retract" migrate --database-url "$url" >/dev/null
    notification_list_cost
    exit 0
fi
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

notification_list_cost
