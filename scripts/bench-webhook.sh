#!/usr/bin/env bash
# Webhook intake throughput: `reviewbot serve` (SQLite store, every accepted delivery stored)
# against a receiver built on the @octokit/webhooks npm package doing the same verify-and-parse
# (`webhooks.verifyAndReceive`), on loopback, with the same load:
#
#   wrk, 32 connections, a real signed ~28 KB `pull_request` payload (opened), each request with
#   its own X-GitHub-Delivery (so none is a duplicate)
#
# Prints, for both: requests/s, p50/p99 latency, non-2xx and socket errors, memory idle and at
# peak under load (VmRSS / VmHWM); for reviewbot also the deliveries stored against the 2xx
# answers (they must be equal); for both, the CPU a request of the receiver and of wrk, and the
# share of the machine left idle during the measured run.
#
#   scripts/bench-webhook.sh [--only node|reviewbot] [--duration 20s] [--threads 2] [--log FILTER] [--pin]
#
# --pin gives each side a core of its own: wrk on CPU 0, the receiver on CPU 1 (taskset). The
# octokit receiver runs on one thread either way; pinned, reviewbot gets the same one core, so
# the ratio is per core rather than per machine.
#
# --log sets reviewbot's RUST_LOG (default `warn`) and keeps its log as
# target/bench/webhook-serve.log; with `reviewbot::store=debug` it also prints the median
# SQLite batch: deliveries, time in its statements, time in its commit.
#
# Needs node + npm (the package is installed into a scratch directory, nothing is committed), GNU time,
# wrk (installed with apt-get when missing), python3, curl; cargo and openssl for reviewbot. Set
# REVIEWBOT_BIN to use an existing binary instead of building one.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
only=""
duration=20s
threads=2
connections=32
log_filter=warn
pin_load=()
pin_receiver=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --only) only=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --log) log_filter=$2; shift 2 ;;
    --pin) pin_load=(taskset -c 0); pin_receiver=(taskset -c 1); shift ;;
    *) echo "bench-webhook: unknown argument $1" >&2; exit 2 ;;
    esac
done
payload=$root/fixtures/github-webhooks/pull_request/opened.payload.json
secret="bench-secret-$RANDOM$RANDOM"

for tool in node npm python3 curl /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench-webhook: $tool not found" >&2; exit 2; }
done
if ! command -v wrk >/dev/null; then
    echo "bench-webhook: installing wrk" >&2
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo=sudo
    $sudo apt-get install -y -qq wrk >/dev/null || { $sudo apt-get update -qq && $sudo apt-get install -y -qq wrk >/dev/null; }
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench-webhook.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_healthy() { # URL PID
    for _ in $(seq 1 200); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        kill -0 "$2" 2>/dev/null || { echo "bench-webhook: the receiver exited" >&2; return 1; }
        sleep 0.05
    done
    echo "bench-webhook: $1 never answered" >&2
    return 1
}

rss_kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
# CPU time (user + system) the process has used, in clock ticks: steadier than requests/s on a
# shared machine, so each side's CPU per request is reported too.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# All CPUs' ticks, then their idle ticks (idle + iowait), from /proc/stat.
machine_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $5 + $6 }' /proc/stat; }

signature=$(python3 - "$secret" "$payload" <<'EOF'
import hashlib, hmac, sys
print("sha256=" + hmac.new(sys.argv[1].encode(), open(sys.argv[2], "rb").read(), hashlib.sha256).hexdigest())
EOF
)

# Each request: the same signed body (the signature covers only the body), its own delivery id.
cat >"$scratch/delivery.lua" <<EOF
local threads = {}
local run = "$RANDOM$RANDOM"
local f = assert(io.open("$payload", "rb"))
local body = f:read("*a")
f:close()

function setup(thread)
    thread:set("tid", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    -- Each wrk run (warm-up, measured) passes its own tag, so no delivery id repeats.
    run = (args[1] or "") .. run
    n = 0
    headers = {
        ["Content-Type"] = "application/json",
        ["User-Agent"] = "GitHub-Hookshot/bench",
        ["X-GitHub-Event"] = "pull_request",
        ["X-Hub-Signature-256"] = "$signature",
    }
end

function request()
    n = n + 1
    headers["X-GitHub-Delivery"] = string.format("bench-%s-%d-%d", run, tid, n)
    return wrk.format("POST", "/webhook", headers, body)
end

function done(summary, latency, requests)
    local e = summary.errors
    local sock = e.connect + e.read + e.write + e.timeout
    io.write(string.format("RESULT requests=%d seconds=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f non2xx=%d socket_errors=%d ok=%d\n",
        summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, e.status, sock,
        summary.requests - e.status - sock))
end
EOF

# Runs wrk at URL (a 3 s warm-up, then the measured run) while sampling PID; prints one line.
drive() { # NAME URL PID
    local name=$1 url=$2 pid=$3 idle warm result peak
    idle=$(rss_kb "$pid" VmRSS)
    warm=$("${pin_load[@]}" wrk -t"$threads" -c"$connections" -d3s -s "$scratch/delivery.lua" "$url" -- warm | sed -n 's/^RESULT //p')
    cpu0=$(cpu_ticks "$pid")
    read -r -a machine0 < <(machine_ticks)
    result=$(/usr/bin/time -f '%U %S' -o "$scratch/wrk.cpu" \
        "${pin_load[@]}" wrk -t"$threads" -c"$connections" -d"$duration" -s "$scratch/delivery.lua" "$url" -- run | sed -n 's/^RESULT //p')
    read -r -a machine1 < <(machine_ticks)
    cpu1=$(cpu_ticks "$pid")
    peak=$(rss_kb "$pid" VmHWM)
    local requests per cpu_us wrk_us idle_pct
    requests=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<<"$result")
    per=$((requests > 0 ? requests : 1))
    cpu_us=$(( (cpu1 - cpu0) * 1000000 / $(getconf CLK_TCK) / per ))
    # The load generator's own CPU a request, and how much of the machine stayed idle: on a
    # machine where wrk shares the cores, they say whether the receiver or the machine was the
    # limit.
    wrk_us=$(awk -v n="$per" '{ printf "%d", ($1 + $2) * 1000000 / n }' "$scratch/wrk.cpu")
    idle_pct=$(( (machine1[1] - machine0[1]) * 100 / ((machine1[0] - machine0[0]) > 0 ? (machine1[0] - machine0[0]) : 1) ))
    echo "$name $result warmup_ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$warm") cpu_us_per_request=$cpu_us wrk_cpu_us_per_request=$wrk_us machine_idle_pct=$idle_pct idle_rss_mb=$((idle / 1024)) peak_rss_mb=$((peak / 1024))"
}

results=()

if [[ $only != reviewbot ]]; then
    echo "== @octokit/webhooks (node $(node --version)) ==" >&2
    (cd "$scratch" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund @octokit/webhooks >/dev/null)
    octokit_version=$(node -p 'require(process.argv[1]).version' "$scratch/node_modules/@octokit/webhooks/package.json")
    cat >"$scratch/receiver.mjs" <<'EOF'
import http from "node:http";
import { Webhooks } from "@octokit/webhooks";

const webhooks = new Webhooks({ secret: process.env.SECRET });
let received = 0;
webhooks.on("pull_request", () => { received++; });

http.createServer(async (req, res) => {
    if (req.method === "GET" && req.url === "/healthz") return res.writeHead(200).end("ok\n");
    if (req.method !== "POST" || req.url !== "/webhook") return res.writeHead(404).end();
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    try {
        await webhooks.verifyAndReceive({
            id: req.headers["x-github-delivery"],
            name: req.headers["x-github-event"],
            signature: req.headers["x-hub-signature-256"],
            payload: Buffer.concat(chunks).toString("utf8"),
        });
        res.writeHead(200).end("ok\n");
    } catch (e) {
        res.writeHead(e.status ?? 400).end("refused\n");
    }
}).listen(Number(process.env.PORT), "127.0.0.1");
EOF
    port=$(free_port)
    (cd "$scratch" && SECRET=$secret PORT=$port exec "${pin_receiver[@]}" node receiver.mjs) &
    node_pid=$!
    pids+=("$node_pid")
    wait_healthy "http://127.0.0.1:$port/healthz" "$node_pid"
    # The receiver must refuse a bad signature, or the comparison means nothing.
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'x-github-event: pull_request' \
        -H 'x-github-delivery: check-1' -H 'x-hub-signature-256: sha256=00' \
        --data-binary "@$payload" "http://127.0.0.1:$port/webhook")
    [[ $code != 2* ]] || { echo "bench-webhook: the node receiver accepted a bad signature" >&2; exit 1; }
    results+=("$(drive "octokit@$octokit_version" "http://127.0.0.1:$port/webhook" "$node_pid")")
    kill "$node_pid"
fi

if [[ $only != node ]]; then
    echo "== reviewbot serve ==" >&2
    if [[ -n ${REVIEWBOT_BIN:-} ]]; then
        bin=$REVIEWBOT_BIN
    else
        cargo build --release --quiet --bin reviewbot
        bin=$root/target/release/reviewbot
    fi
    # A throwaway App identity, and a GitHub that refuses connections: queued rounds fail fast
    # and never reach the network; the intake path is what is measured.
    openssl genrsa -out "$scratch/app.pem" 2048 2>/dev/null
    cat >"$scratch/reviewbot.toml" <<'EOF'
[github]
bot_login = "reviewbot-bench[bot]"

[serve]
workers = 1
EOF
    port=$(free_port)
    db=$scratch/reviewbot.db
    (cd "$scratch" && REVIEWBOT_LISTEN=127.0.0.1:$port REVIEWBOT_DATABASE_URL=sqlite://$db \
        REVIEWBOT_WEBHOOK_SECRET=$secret REVIEWBOT_CONFIG=$scratch/reviewbot.toml \
        REVIEWBOT_APP_ID=1 REVIEWBOT_PRIVATE_KEY_PATH=$scratch/app.pem \
        GITHUB_API_URL=http://127.0.0.1:9 RUST_LOG=$log_filter \
        exec "${pin_receiver[@]}" "$bin" serve >"$scratch/serve.log" 2>&1) &
    serve_pid=$!
    pids+=("$serve_pid")
    wait_healthy "http://127.0.0.1:$port/healthz" "$serve_pid" || { tail -20 "$scratch/serve.log" >&2; exit 1; }
    line=$(drive "reviewbot" "http://127.0.0.1:$port/webhook" "$serve_pid")
    # The server's own count of 2xx answers (wrk misses the answers still in flight when it
    # stops): every one of them must be a stored delivery, so stored >= served_2xx. The few
    # stored beyond it are deliveries whose client hung up (wrk stopping) before the answer:
    # GitHub would show those as failed and redeliver them, answered then as duplicates.
    sleep 1
    served_2xx=$(curl -fsS "http://127.0.0.1:$port/metrics" | awk '
        /^reviewbot_webhook_deliveries_total/ && /outcome="(accepted|ignored)"/ { n += $NF }
        END { print n + 0 }')
    kill "$serve_pid"
    wait "$serve_pid" 2>/dev/null || true
    ok=$(sed -n 's/.* ok=\([0-9]*\).*/\1/p' <<<"$line")
    warm=$(sed -n 's/.*warmup_ok=\([0-9]*\).*/\1/p' <<<"$line")
    stored=$(python3 - "$db" "${DELIVERIES_TABLE:-deliveries}" <<'EOF'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(f"select count(*) from {sys.argv[2]}").fetchone()[0])
EOF
)
    results+=("$line stored=$stored served_2xx=$served_2xx wrk_counted_2xx=$((ok + warm))")
    mkdir -p "$root/target/bench"
    cp "$scratch/serve.log" "$root/target/bench/webhook-serve.log"
    batches=$(python3 - "$scratch/serve.log" <<'EOF'
import json, statistics, sys
rows = []
for line in open(sys.argv[1], errors="replace"):
    if "delivery batch written" in line:
        f = json.loads(line).get("fields", {})
        rows.append((f["deliveries"], f["statements_us"], f["commit_us"]))
if rows:
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"sqlite_batches={len(rows)} median_deliveries={med[0]:g} median_statements_ms={med[1] / 1000:.3f} median_commit_ms={med[2] / 1000:.3f}")
EOF
)
    [[ -z $batches ]] || results+=("reviewbot $batches")
fi

echo
echo "machine: $(nproc) cores, $(uname -m), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load: wrk -t$threads -c$connections -d$duration, $(wc -c <"$payload") B signed pull_request (opened), unique X-GitHub-Delivery${pin_load[*]:+, pinned: wrk on CPU 0, the receiver on CPU 1}"
for r in "${results[@]}"; do echo "$r"; done
