#!/usr/bin/env bash
# The whole offline review against `git apply --numstat` on the same diff:
#
#   reviewbot review --diff F --lens builtin --format json    vs    git apply --numstat F
#
# For each diff: wall time from our own loop that alternates the two commands round by round
# (order flipped every round, after 3 warm-up rounds) and reports medians — the machine may be
# shared, and alternating puts both commands under the same load; peak memory from
# /usr/bin/time -v (median of 5 runs); and, with valgrind installed, instructions executed
# (callgrind, all threads; does not depend on the load). HYPERFINE=1 adds hyperfine's figures
# (it runs one command's runs as a block, so they move with the load more).
#
#   scripts/bench-review.sh [DIFF...]     (default: target/bench/django.diff; ROUNDS=21)
#   scripts/bench-review.sh target/bench/corpus/*.diff      # after scripts/bench-corpus.sh
#
# Both commands run from an empty scratch directory: outside any git repository (`git apply
# --numstat` only reads the patch and prints per-file stats, it applies nothing) and with no
# ./reviewbot.toml to pick up. Needs GNU time and python3; valgrind and hyperfine optional.
# Set REVIEWBOT_BIN to measure an existing binary instead of building the release one.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
rounds=${ROUNDS:-21}
[[ $# -gt 0 ]] || set -- target/bench/django.diff
diffs=()
for d in "$@"; do
    if [[ ! -s $d ]]; then
        echo "bench-review: $d is missing; build it with scripts/bench-input.sh or scripts/bench-corpus.sh" >&2
        exit 2
    fi
    diffs+=("$(realpath "$d")")
done
for tool in /usr/bin/time python3 git; do
    command -v "$tool" >/dev/null || {
        echo "bench-review: $tool not found (apt-get install -y time python3 git)" >&2
        exit 2
    }
done

if [[ -n ${REVIEWBOT_BIN:-} ]]; then
    bin=$REVIEWBOT_BIN
else
    cargo build --release --quiet --bin reviewbot
    bin=${CARGO_TARGET_DIR:-$root/target}/release/reviewbot
fi
bin=$(realpath "$bin")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench-review.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

echo "machine: $(nproc) cores, $(uname -m), $(git --version); binary $(du -h "$bin" | cut -f1)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
summary=()

peak() {
    local out=() kb
    for _ in 1 2 3 4 5; do
        kb=$(/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}')
        out+=("$kb")
    done
    printf '%s\n' "${out[@]}" | sort -n | sed -n 3p
}

instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
        awk '/Collected :/ {print $NF}'
}

for diff in "${diffs[@]}"; do
    name=$(basename "$diff" .diff)
    review=("$bin" review --diff "$diff" --lens builtin --format json)
    numstat=(git apply --numstat "$diff")
    # Both must succeed on the file before anything is timed.
    "${review[@]}" >review.json 2>review.err
    "${numstat[@]}" >numstat.txt
    echo
    echo "== $name: $diff ($(wc -c <"$diff") bytes); git apply --numstat lists $(wc -l <numstat.txt) files;" \
        "reviewbot: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["findings"]), "findings,", len(d["not_reviewed"]), "not reviewed, builtin latency_ms", d["lenses"][0]["latency_ms"])' review.json)"
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

    if [[ ${HYPERFINE:-0} == 1 ]] && command -v hyperfine >/dev/null; then
        hyperfine -N --warmup 3 --runs 15 --export-json hyperfine.json \
            -n reviewbot "${review[*]}" -n "git apply --numstat" "${numstat[*]}" >/dev/null
        python3 - hyperfine.json <<'EOF'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rb, git = res["reviewbot"], res["git apply --numstat"]
print(f"hyperfine: reviewbot {rb['median']*1e3:.1f} ms, git {git['median']*1e3:.1f} ms, ratio {rb['median'] / git['median']:.2f}")
EOF
    fi

    line=$(python3 - "$rounds" "${#review[@]}" "${review[@]}" "${numstat[@]}" <<'EOF'
import statistics, subprocess, sys, time
rounds, n = int(sys.argv[1]), int(sys.argv[2])
review, numstat = sys.argv[3:3 + n], sys.argv[3 + n:]
cmds = {"reviewbot": review, "git": numstat}
times = {k: [] for k in cmds}
def run(k):
    t = time.perf_counter()
    subprocess.run(cmds[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t
for _ in range(3):
    for k in cmds:
        run(k)
for i in range(rounds):
    order = list(cmds) if i % 2 == 0 else list(cmds)[::-1]
    for k in order:
        times[k].append(run(k))
med = {k: statistics.median(v) for k, v in times.items()}
print(f"{med['reviewbot']*1e3:.1f} {med['git']*1e3:.1f} {med['reviewbot'] / med['git']:.2f}"
      f" {min(times['reviewbot'])*1e3:.1f} {min(times['git'])*1e3:.1f}")
EOF
)
    read -r rb_ms git_ms ratio rb_min git_min <<<"$line"
    echo "alternating, $rounds rounds: reviewbot median $rb_ms ms (min $rb_min), git median $git_ms ms (min $git_min), ratio $ratio"
    rb_mb=$(echo "$(peak "${review[@]}") / 1000" | bc -l | xargs printf '%.1f')
    git_mb=$(echo "$(peak "${numstat[@]}") / 1000" | bc -l | xargs printf '%.1f')
    echo "peak RSS: reviewbot $rb_mb MB, git $git_mb MB"
    ins="-"
    if command -v valgrind >/dev/null; then
        rb_i=$(instructions "${review[@]}")
        git_i=$(instructions "${numstat[@]}")
        ins=$(python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); print(f'{a/1e6:.0f}M / {b/1e6:.0f}M = {a/b:.2f}')" "$rb_i" "$git_i")
        echo "instructions (callgrind): reviewbot / git = $ins"
    fi
    summary+=("| $name | $rb_ms ms | $git_ms ms | **${ratio}×** | $rb_mb MB | $git_mb MB | $ins |")
done

echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| diff | reviewbot (median) | git apply --numstat (median) | ratio | reviewbot peak RSS | git peak RSS | instructions reviewbot / git |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
