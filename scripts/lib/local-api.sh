# shellcheck shell=bash disable=SC2154 # retract and work are the sourcing script's
# A local Retract HTTP API for scripts that drive it (scripts/fuzz-api,
# scripts/bench api): the APNs simulator with a signing key it trusts, apps
# that send to it, API keys, and `retract serve`, all on 127.0.0.1.
#
# Source it from the package root, set `retract` (retract_binary gives it),
# then call open_local_api, or set `work` (a scratch folder) and export
# DATABASE_URL yourself. The functions set simulator_port, server_port and
# server_pid; every process they start is in local_api_pids, and
# stop_local_api stops them (close_local_api does, from open_local_api's
# EXIT trap, before dropping the database).

local_api_pids=()

# The `retract` binary to drive: RETRACT_BINARY when set, else this
# package's, built first in configuration $1 (debug or release).
retract_binary() {
    if [ -n "${RETRACT_BINARY:-}" ]; then
        echo "$RETRACT_BINARY"
        return
    fi
    swift build -c "$1" --product retract >&2
    echo "$(swift build -c "$1" --show-bin-path)/retract"
}

# Opens what a script of the local API needs: a database named $1_<pid>
# (open_bench_database: on DATABASE_URL's server, else a throwaway cluster),
# a scratch folder in $work, DATABASE_URL exported to the database, and an
# EXIT trap (close_local_api) that stops what start_* started, drops the
# database and removes the folder. Needs bench-common.sh sourced.
open_local_api() {
    work=
    trap close_local_api EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    open_bench_database "$1"
    # Starting a throwaway cluster sets its own EXIT trap; this one stops it too.
    trap close_local_api EXIT
    work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    export DATABASE_URL=$url
}

# shellcheck disable=SC2317 # run by the EXIT trap
close_local_api() {
    stop_local_api
    if [ -n "${database:-}" ]; then
        drop_bench_database
    elif declare -F stop_throwaway_postgres >/dev/null; then
        stop_throwaway_postgres
    fi
    [ -z "${work:-}" ] || rm -rf "$work"
}

# The APNs key id and team id the simulator accepts tokens from.
local_api_key_id=LOCALKEY01
local_api_team_id=LOCALTEAM1

# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

# A P-256 signing key as Apple issues it (a PKCS#8 PEM .p8) at
# $work/signing-key.p8, and the simulator trusting it, with its certificate
# authority at $work/sim/simulator-ca.pem. The simulator keeps no inbox;
# arguments go to it (say --latency-ms 20).
start_simulator() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/signing-key.p8" 2>/dev/null
    simulator_port=$(free_port)
    "$retract" simulator --host 127.0.0.1 --port "$simulator_port" --cert-dir "$work/sim" --no-inbox \
        --key "$local_api_key_id:$local_api_team_id:$work/signing-key.p8" --max-streams 1000 "$@" >"$work/simulator.log" 2>&1 &
    local_api_pids+=("$!")
    # Up to 60 s, as for the server: a debug build on a loaded machine starts slowly.
    if ! wait_for_port "$simulator_port" 60 || [ ! -f "$work/sim/simulator-ca.pem" ]; then
        echo "local-api: the simulator did not start:" >&2
        cat "$work/simulator.log" >&2
        return 1
    fi
}

# Registers app $1, sending to the simulator with its key.
add_simulated_app() {
    "$retract" apps add "$1" --topic "com.example.$1" --environment sandbox \
        --endpoint "https://127.0.0.1:$simulator_port" \
        --key-id "$local_api_key_id" --team-id "$local_api_team_id" --key-path "$work/signing-key.p8" >&2
}

# `retract keys create "$@"` and prints the key: the last line of its output.
create_api_key() {
    local out key
    out=$("$retract" keys create "$@") || return 1
    key=${out##*$'\n'}
    if ! [[ $key =~ ^rk_[A-Za-z0-9_-]{43}$ ]]; then
        echo "local-api: retract keys create $*: the last line of its output is not a key:" >&2
        printf '%s\n' "$out" >&2
        return 1
    fi
    printf '%s\n' "${out%"$key"}" | sed '/^$/d' >&2
    printf '%s\n' "$key"
}

# Starts `retract serve "$@"` on a free port of 127.0.0.1, trusting the
# simulator, logging to $work/server.log, and waits up to 60 s for /healthz.
# Not in a subshell: server_pid must stay this shell's child.
start_server() {
    server_port=$(free_port)
    APNS_CA_FILE="$work/sim/simulator-ca.pem" "$retract" serve --host 127.0.0.1 --port "$server_port" \
        --drain-timeout 5 "$@" >"$work/server.log" 2>&1 &
    server_pid=$!
    local_api_pids+=("$server_pid")
    for _ in $(seq 1 600); do
        if curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$server_port/healthz" 2>/dev/null; then return 0; fi
        if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
        sleep 0.1
    done
    echo "local-api: retract serve did not answer /healthz on port $server_port:" >&2
    tail -n 50 "$work/server.log" >&2
    return 1
}

# Stops what the functions above started, newest first: SIGTERM, then SIGKILL
# after 15 s (the server drains for up to 5).
stop_local_api() {
    local i pid
    for ((i = ${#local_api_pids[@]} - 1; i >= 0; i--)); do
        pid=${local_api_pids[$i]}
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 1 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    local_api_pids=()
}
