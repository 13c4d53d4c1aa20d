# shellcheck shell=bash
# What the benchmark scripts share. Source it from the package root.

# Builds retract-bench and retract (release); sets bin to the folder they are in.
build_release_binaries() {
    swift build -c release --product retract-bench >&2
    swift build -c release --product retract >&2
    bin=$(swift build -c release --show-bin-path)
}

# The median of the arguments.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Field $2 of the JSON object $1, rounded to two places.
field() { python3 -c "import json,sys; print(round(json.loads(sys.argv[1])[sys.argv[2]], 2))" "$1" "$2"; }

# CPU seconds PostgreSQL has used so far: the postmaster's own and its exited
# children's, plus its running children's. Only for the throwaway cluster
# (empty with DATABASE_URL: the server may be elsewhere).
pg_cpu() {
    [ -n "${THROWAWAY_PG_DIR:-}" ] || return 0
    local pm
    pm=$(head -1 "$THROWAWAY_PG_DIR/data/postmaster.pid")
    # A child may exit between pgrep and the read: its file is then skipped.
    # shellcheck disable=SC2046
    { cat "/proc/$pm/stat" $(pgrep -P "$pm" | sed 's|.*|/proc/&/stat|') 2>/dev/null || true; } |
        awk -v hz="$(getconf CLK_TCK)" -v pm="$pm" '
            { t += $14 + $15; if ($1 == pm) t += $16 + $17 }
            END { printf "%.1f", t / hz }'
}

# Makes a new database named $1_<pid> on DATABASE_URL's server, or on a
# throwaway PostgreSQL when DATABASE_URL is not set; sets server, database
# and url. drop_bench_database drops it (and stops the throwaway cluster).
open_bench_database() {
    if [ -z "${DATABASE_URL:-}" ]; then
        # shellcheck source=throwaway-postgres.sh
        source scripts/lib/throwaway-postgres.sh
        start_throwaway_postgres
        server=$RETRACT_TEST_DATABASE_URL
    else
        server=$DATABASE_URL
    fi
    database="$1_$$"
    psql "$server" -Xqc "CREATE DATABASE $database"
    url="${server%/*}/$database?sslmode=disable"
}

drop_bench_database() {
    psql "$server" -Xqc "DROP DATABASE IF EXISTS $database WITH (FORCE)" >/dev/null 2>&1 || true
    if declare -F stop_throwaway_postgres >/dev/null; then stop_throwaway_postgres 2>/dev/null || true; fi
}

# Makes a work folder named after $1 in $work and arranges for it, the
# process in $simulator_pid (when a script starts one) and the database to go
# at exit.
open_bench_work() {
    work=$(mktemp -d "${TMPDIR:-/tmp}/retract-bench-$1.XXXXXX")
    simulator_pid=
    trap cleanup_bench_work EXIT
}

cleanup_bench_work() {
    if [ -n "$simulator_pid" ]; then kill "$simulator_pid" 2>/dev/null || true; fi
    if [ -n "${h2o_pid:-}" ]; then kill "$h2o_pid" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$work"
    drop_bench_database
}

# Each run on a database of its own (the same references, nothing left from
# the last one), dropped after it, or at exit when a run fails. After
# open_bench_work: open_run_databases once; per run, new_run_database SUFFIX
# (sets run_database and run_url), then drop_run_database.
open_run_databases() {
    run_databases=()
    trap cleanup_run_databases EXIT
}

cleanup_run_databases() {
    for name in "${run_databases[@]}"; do psql "$server" -Xqc "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1 || true; done
    cleanup_bench_work
}

new_run_database() {
    run_database=${database}_$1
    run_url="${server%/*}/$run_database?sslmode=disable"
    run_databases+=("$run_database")
    psql "$server" -Xqc "CREATE DATABASE $run_database"
}

drop_run_database() {
    psql "$server" -Xqc "DROP DATABASE $run_database WITH (FORCE)"
}

# Runs "$@" (a retract-bench command printing JSON with the fields $1 and $2,
# rates of the same work done two ways) $runs times; prints each run's rates,
# headed $3 and $4, and their ratio, then the medians. With raw_log set, each
# run's JSON is also appended to that file.
ratio_runs() {
    local first=$1 second=$2 first_label=$3 second_label=$4
    shift 4
    printf '%-7s%14s%14s%8s\n' run "$first_label" "$second_label" ratio
    local first_all=() second_all=() ratio_all=() out a b ratio run
    for run in $(seq 1 "$runs"); do
        out=$("$@")
        if [ -n "${raw_log:-}" ]; then echo "$out" >>"$raw_log"; fi
        a=$(field "$out" "$first")
        b=$(field "$out" "$second")
        ratio=$(python3 -c "print(f'{$a / $b:.2f}')")
        printf '%-7s%14.0f%14.0f%8s\n' "$run" "$a" "$b" "$ratio"
        first_all+=("$a") second_all+=("$b") ratio_all+=("$ratio")
    done
    printf '%-7s%14.0f%14.0f%8s\n' median "$(median "${first_all[@]}")" "$(median "${second_all[@]}")" "$(median "${ratio_all[@]}")"
}

# Installs h2o and h2load (nghttp2-client) when this machine lacks them.
require_h2o_and_h2load() {
    local missing=()
    command -v h2o >/dev/null 2>&1 || missing+=(h2o)
    command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
    [ ${#missing[@]} -gt 0 ] || return 0
    echo "bench: installing ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# Starts h2o on a free port ($h2o_port) as a neutral HTTP/2 sink: one thread,
# TLS with $work/server.pem (retract-bench certs), and, under path prefix $1,
# a handler that reads the body and answers 200 with header $2: $3 and body $4.
# Its pid goes to h2o_pid.
start_h2o_sink() {
    local prefix=$1 header=$2 value=$3 body=$4
    h2o_port=$(free_port)
    cat >"$work/h2o.conf" <<CONF
num-threads: 1
http2-max-concurrent-requests-per-connection: 1000
listen:
  host: 127.0.0.1
  port: $h2o_port
  ssl:
    certificate-file: $work/server.pem
    key-file: $work/server-key.pem
error-log: $work/h2o-error.log
hosts:
  default:
    paths:
      $prefix:
        mruby.handler: |
          Proc.new do |env|
            env["rack.input"].read
            [200, {"$header" => "$value", "content-type" => "application/json"}, ['$body']]
          end
CONF
    h2o -c "$work/h2o.conf" >"$work/h2o.log" 2>&1 &
    h2o_pid=$!
    if ! wait_for_port "$h2o_port"; then
        cat "$work/h2o.log" "$work/h2o-error.log" >&2 2>/dev/null || true
        kill "$h2o_pid" 2>/dev/null || true
        return 1
    fi
}

# h2load's rate (requests/s, whole) for its arguments "$@"; fails unless
# every request succeeded.
h2load_rate() {
    h2load "$@" >"$work/h2load.out" 2>&1
    grep -q " 0 failed, 0 errored" "$work/h2load.out" || { cat "$work/h2load.out" >&2; return 1; }
    sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' "$work/h2load.out" | cut -d. -f1
}

# A table of runs: table_start COLUMN..., then table_row RUN VALUE... per
# run, then table_medians for each column's median.
table_start() {
    table_columns=("$@")
    declare -gA table_values=()
    printf '%-7s' run; printf '%13s' "$@"; echo
}

table_row() {
    local run=$1 i=0 value
    shift
    printf '%-7s' "$run"; printf '%13s' "$@"; echo
    for value in "$@"; do
        table_values[$i]+="$value "
        i=$((i + 1))
    done
}

table_medians() {
    local i
    printf '%-7s' median
    for i in "${!table_columns[@]}"; do
        # shellcheck disable=SC2086 # the values are words
        printf '%13s' "$(median ${table_values[$i]})"
    done
    echo
}

# Starts `retract simulator` ($bin/retract) keeping no inbox, answering after
# $2 ms, its certificates in folder $1 and its log at $1.log, trusting
# $work/signing-key.p8 (retract-bench certs) as BENCHKEY01/BENCHTEAM1. Sets
# sim_port and sim_pid; fails, showing the log, if it does not come up.
start_bench_simulator() {
    local folder=$1 latency=$2
    sim_port=$(free_port)
    "$bin/retract" simulator --port "$sim_port" --cert-dir "$folder" --no-inbox --latency-ms "$latency" \
        --key "BENCHKEY01:BENCHTEAM1:$work/signing-key.p8" --max-streams 1000 >"$folder.log" 2>&1 &
    sim_pid=$!
    for _ in $(seq 1 100); do
        [ -f "$folder/simulator-ca.pem" ] && (exec 3<>"/dev/tcp/127.0.0.1/$sim_port") 2>/dev/null && break
        sleep 0.1
    done
    if [ ! -f "$folder/simulator-ca.pem" ]; then
        echo "bench: the simulator at $latency ms did not start:" >&2
        cat "$folder.log" >&2
        kill "$sim_pid" 2>/dev/null || true
        return 1
    fi
}

# Installs wrk with apt when it is missing.
ensure_wrk() {
    command -v wrk >/dev/null 2>&1 && return 0
    echo "bench: installing wrk" >&2
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends wrk >/dev/null
}

# "requests/s p99-ms requests" from wrk's output $1 (run with --latency).
# An answer over 399 fails the benchmark (a 304 is an answer like a 200).
wrk_figures() {
    python3 - "$1" <<'PY'
import re, sys
out = sys.argv[1]
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
if bad:
    sys.exit(f"bench: {bad.group(1)} answers were 4xx or 5xx:\n{out}")
errors = re.search(r"Socket errors: (.*)", out)
if errors:
    print(f"bench: socket errors: {errors.group(1)}", file=sys.stderr)
rate = float(re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M).group(1))
value, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M).groups()
count = int(re.search(r"^\s+(\d+) requests in", out, re.M).group(1))
print(f"{rate:.0f} {float(value) * {'us': 0.001, 'ms': 1, 's': 1000, 'm': 60000}[unit]:.2f} {count}")
PY
}
