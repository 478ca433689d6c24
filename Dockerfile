# syntax=docker/dockerfile:1
# reviewbot serve — the GitHub App's webhook service.
#
#   docker build -t reviewbot .
#   docker run -p 3000:3000 -v reviewbot-data:/var/lib/reviewbot \
#     -e REVIEWBOT_APP_ID -e REVIEWBOT_PRIVATE_KEY -e REVIEWBOT_WEBHOOK_SECRET reviewbot
#
# Two stages: a Rust builder, then Debian slim with CA certificates, tini and the binary, run as
# an unprivileged user. The store defaults to SQLite on the volume; point REVIEWBOT_DATABASE_URL
# at PostgreSQL to run replicas.

FROM rust:1.95-trixie AS builder
WORKDIR /src
COPY . .
# Cache mounts keep the registry and the build between image builds (BuildKit).
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin reviewbot \
    && install -m 0755 target/release/reviewbot /usr/local/bin/reviewbot

FROM debian:trixie-slim
# ca-certificates: TLS to GitHub and the model APIs. tini: PID 1 that forwards SIGTERM (serve
# drains within 30 s) and reaps the lens CLIs' orphans. Unpinned on purpose: they should take
# Debian's security updates on every rebuild.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 reviewbot \
    && useradd --system --uid 10001 --gid reviewbot --home-dir /var/lib/reviewbot --shell /usr/sbin/nologin reviewbot \
    && install -d -o reviewbot -g reviewbot -m 0750 /var/lib/reviewbot
COPY --from=builder /usr/local/bin/reviewbot /usr/local/bin/reviewbot

ENV REVIEWBOT_LISTEN=0.0.0.0:3000 \
    REVIEWBOT_DATABASE_URL=sqlite:///var/lib/reviewbot/reviewbot.db
VOLUME ["/var/lib/reviewbot"]
WORKDIR /var/lib/reviewbot
USER 10001:10001
EXPOSE 3000

# GET /healthz (the store is reachable) with bash's own /dev/tcp, so the image needs no curl; it
# reads the whole answer, then checks the status. The port is the one REVIEWBOT_LISTEN names.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["bash", "-c", "exec 3<>\"/dev/tcp/127.0.0.1/${REVIEWBOT_LISTEN##*:}\" && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && read -r _ status _ <&3 && while read -r _; do :; done <&3; [ \"$status\" = 200 ]"]

ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/reviewbot"]
CMD ["serve"]
