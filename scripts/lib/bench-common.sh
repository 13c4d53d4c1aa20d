# shellcheck shell=bash
# What the benchmark scripts share. Source it from the package root.

# The median of the arguments.
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Field $2 of the JSON object $1, rounded to two places.
field() { python3 -c "import json,sys; print(round(json.loads(sys.argv[1])[sys.argv[2]], 2))" "$1" "$2"; }

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

# Runs "$@" (a retract-bench engine-vs-client command printing JSON with
# enginePerSecond and clientPerSecond) $runs times; prints each run's rates and
# their ratio, then the medians.
engine_client_runs() {
    printf '%-7s%14s%14s%8s\n' run engine/s client/s ratio
    local engine_all=() client_all=() ratio_all=() out engine client ratio run
    for run in $(seq 1 "$runs"); do
        out=$("$@")
        engine=$(field "$out" enginePerSecond)
        client=$(field "$out" clientPerSecond)
        ratio=$(python3 -c "print(f'{$engine / $client:.2f}')")
        printf '%-7s%14.0f%14.0f%8s\n' "$run" "$engine" "$client" "$ratio"
        engine_all+=("$engine") client_all+=("$client") ratio_all+=("$ratio")
    done
    printf '%-7s%14.0f%14.0f%8s\n' median "$(median "${engine_all[@]}")" "$(median "${client_all[@]}")" "$(median "${ratio_all[@]}")"
}
