# syntax=docker/dockerfile:1
# The `retract` command in a small image. It runs `retract serve` by default;
# any other command by name: `docker run --rm IMAGE migrate`,
# `docker run --rm IMAGE keys create --scopes admin --name ops`.
#
#   docker build -t retract .

# ---- build ----
# 6.3: what the project is built and tested with; Hummingbird and swift-prometheus need tools 6.2 at least.
FROM swift:6.3-jammy AS build
WORKDIR /build

# The dependencies in a layer of their own: fetched again only when the
# manifest or the pins change, not at every source edit.
COPY Package.* ./
RUN swift package resolve

# sql/ and docs/openapi.yaml are compiled into the binary (through symlinks in
# Sources/); .dockerignore keeps the rest of the context out.
COPY . .
RUN swift build -c release --product retract \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/retract" /staging/retract

# ---- run ----
FROM swift:6.3-jammy-slim
# ca-certificates: the system roots that api.push.apple.com's certificate is checked against.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -y -q --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 1000 --user-group --home-dir /var/lib/retract --create-home \
        --shell /usr/sbin/nologin retract
COPY --from=build /staging/retract /usr/local/bin/retract

USER retract:retract
WORKDIR /var/lib/retract
# Inside a container the server must listen on every interface; publish the
# port on the host's loopback (docker-compose.yml does) to keep it private.
ENV RETRACT_HOST=0.0.0.0
EXPOSE 8080

# No curl in the slim image: bash's /dev/tcp asks /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${RETRACT_PORT:-8080} && printf 'GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n' >&3 && read -r status <&3 && [[ $status == *' 200 '* ]]"]

# SIGTERM (docker stop) drains: give the container RETRACT_DRAIN_TIMEOUT
# (25 s) and a few more before SIGKILL, e.g. `docker stop -t 30`.
ENTRYPOINT ["retract"]
CMD ["serve"]
