# shellcheck shell=bash
# A throwaway PostgreSQL cluster for tests: a temp folder, a free port on
# 127.0.0.1, trust auth, no durability. Source this file, then call
# start_throwaway_postgres; it exports RETRACT_TEST_DATABASE_URL and stops and
# removes the cluster when the calling shell exits, whatever the outcome.

# The folder holding initdb and pg_ctl: PATH first, then Debian's layout.
postgres_bin_dir() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return
    fi
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$dir" ] || [ ! -x "$dir/initdb" ]; then
        echo "throwaway-postgres: initdb not found on PATH or in /usr/lib/postgresql/*/bin; install PostgreSQL 15 (.ci/run does)" >&2
        return 1
    fi
    echo "$dir"
}

# PostgreSQL refuses to run as root: run its tools as the postgres user then.
as_postgres_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# shellcheck source=ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/ports.sh"

start_throwaway_postgres() {
    local bin
    bin=$(postgres_bin_dir) || return 1
    THROWAWAY_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/retract-postgres.XXXXXX")
    THROWAWAY_PG_BIN=$bin
    trap stop_throwaway_postgres EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    if [ "$(id -u)" = 0 ]; then chown postgres "$THROWAWAY_PG_DIR"; fi

    if ! as_postgres_user "$bin/initdb" -D "$THROWAWAY_PG_DIR/data" -U postgres -A trust -E UTF8 --no-sync \
        >"$THROWAWAY_PG_DIR/initdb.log" 2>&1; then
        echo "throwaway-postgres: initdb failed:" >&2
        cat "$THROWAWAY_PG_DIR/initdb.log" >&2
        return 1
    fi
    local port attempt
    for attempt in 1 2 3; do
        port=$(free_port)
        if as_postgres_user "$bin/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -l "$THROWAWAY_PG_DIR/postgres.log" -w -t 60 \
            -o "-p $port -k $THROWAWAY_PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
            start >/dev/null; then
            export RETRACT_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
            echo "throwaway-postgres: running on 127.0.0.1:$port ($THROWAWAY_PG_DIR)" >&2
            return 0
        fi
        echo "throwaway-postgres: start on port $port failed (attempt $attempt)" >&2
    done
    cat "$THROWAWAY_PG_DIR/postgres.log" >&2
    return 1
}

stop_throwaway_postgres() {
    [ -n "${THROWAWAY_PG_DIR:-}" ] || return 0
    if [ -f "$THROWAWAY_PG_DIR/data/postmaster.pid" ]; then
        as_postgres_user "$THROWAWAY_PG_BIN/pg_ctl" -D "$THROWAWAY_PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$THROWAWAY_PG_DIR"
    THROWAWAY_PG_DIR=
}
