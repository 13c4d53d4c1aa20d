# shellcheck shell=bash
# Ports on 127.0.0.1, for the scripts that start servers there.

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits up to $2 seconds (default 10) for something to listen on 127.0.0.1:$1.
wait_for_port() {
    local tries=$((${2:-10} * 10))
    for _ in $(seq 1 "$tries"); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    return 1
}
