#!/usr/bin/env bash
# scripts/bench lists: a read-only key's lists against everything else. A
# release build of `retract serve` (mode all) on 127.0.0.1 over a ledger of N
# deliveries (REFERENCES references of N/REFERENCES devices each, written
# with SQL in one statement, then ANALYZEd), with the APNs simulator behind
# it. Each run: P clients call GET /v1/notifications (no range, no app) in a
# loop for D seconds with one read key, while a probe times POST
# /v1/retractions (a dry run) and GET /readyz every half second. Prints, per
# run, what the list calls got and the probes' median and slowest answers and
# how many took over 1 s or failed; the goal is none. Extra arguments after
# `--` go to `retract serve` (say `--key-read-rate 0`, or nothing for an old
# binary that lacks the flags). Uses DATABASE_URL's server when set, else a
# throwaway PostgreSQL; RETRACT_BINARY instead of the build when set.
#
#   scripts/bench lists [-n DELIVERIES] [--references R] [-p PARALLEL] [-d SECONDS] [--runs R] [--honour-retry-after] [-- SERVE FLAGS]
set -euo pipefail

deliveries=2000000
references=2000
parallel=40
duration=20
runs=1
honour=()
serve_flags=()
while [ $# -gt 0 ]; do
    case "$1" in
        -n) deliveries=$2; shift 2 ;;
        --references) references=$2; shift 2 ;;
        -p) parallel=$2; shift 2 ;;
        -d) duration=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --honour-retry-after) honour=(--honour-retry-after); shift ;;
        --) shift; serve_flags=("$@"); break ;;
        *) echo "bench lists: unknown argument $1" >&2; exit 64 ;;
    esac
done
devices=$((deliveries / references))

# shellcheck source=bench-common.sh
source scripts/lib/bench-common.sh
# shellcheck source=local-api.sh
source scripts/lib/local-api.sh
retract=$(retract_binary release)

open_local_api retract_bench_lists

"$retract" migrate >/dev/null
start_simulator
add_simulated_app bench
read_key=$(create_api_key --app bench --scopes read --name dashboard)
retract_key=$(create_api_key --app bench --scopes record,retract --name backend)

# ref-1 … ref-R, each to devices 1 … N/R, sent over the last minutes; `probe`, the probes' dry run, to one device.
started=$(date +%s)
psql "$url" -Xq -v ON_ERROR_STOP=1 >/dev/null <<SQL
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date);
SELECT retract_ensure_delivery_partition((now() AT TIME ZONE 'UTC')::date - 1);
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT a.id, 'ref-' || r, decode(lpad(to_hex(d), 64, '0'), 'hex'),
       ((now() - r * interval '100 ms') AT TIME ZONE 'UTC')::date, now() - r * interval '100 ms', 'apns'
FROM apps a, generate_series(1, $references) r, generate_series(1, $devices) d
WHERE a.name = 'bench';
INSERT INTO deliveries (app_id, reference, token, sent_on, sent_at, transport)
SELECT id, 'probe', decode(lpad('ff', 64, '0'), 'hex'), (now() AT TIME ZONE 'UTC')::date, now(), 'apns' FROM apps WHERE name = 'bench';
ANALYZE;
SQL
echo "ledger: $deliveries deliveries ($references references x $devices devices) written in $(($(date +%s) - started)) s" >&2

start_server --mode all --log-level warning "${serve_flags[@]}"
base="http://127.0.0.1:$server_port"

echo "deliveries=$deliveries references=$references parallel=$parallel duration=${duration}s serve flags: ${serve_flags[*]:-(none)} (release build, $(nproc) cores, PostgreSQL $(psql "$server" -XAtc 'show server_version'))"
printf '%-5s %-38s %8s %22s %22s\n' run "list answers" "list-ms" "retract p50/max ms,bad" "readyz p50/max ms,bad"
for run in $(seq 1 "$runs"); do
    out=$(python3 scripts/lib/read-load.py "$base" "$read_key" "$retract_key" bench "$parallel" "$duration" "${honour[@]}")
    python3 - "$run" "$out" <<'PY'
import json, sys
run, out = sys.argv[1], json.loads(sys.argv[2])
answers = " ".join(f"{status}:{count}" for status, count in sorted(out["list"]["statuses"].items()))
def probe(p):
    return f'{p["median_ms"]}/{p["max_ms"]},{p["late_or_failed"]}/{p["calls"]}'
print(f'{run:<5} {answers:<38} {out["list"]["median_ms"]!s:>8} {probe(out["retract"]):>22} {probe(out["readyz"]):>22}')
PY
done
