#!/usr/bin/env bash
# The whole offline review against `git apply --numstat` on the same diff:
#
#   reviewbot review --diff F --lens builtin --format json    vs    git apply --numstat F
#
# Wall time: hyperfine (warm-up, >= 10 runs each; hyperfine runs one command's runs as a block)
# and, because the machine is shared, our own loop that alternates the two commands round by
# round (order flipped every round) and reports medians. Peak memory: /usr/bin/time -v.
#
#   scripts/bench-review.sh [DIFF] [ROUNDS]   (defaults: target/bench/django.diff, 21)
#
# Both commands run from an empty scratch directory: outside any git repository (`git apply
# --numstat` only reads the patch and prints per-file stats, it applies nothing) and with no
# ./reviewbot.toml to pick up. Needs hyperfine, GNU time and python3.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
diff=$(realpath "${1:-target/bench/django.diff}")
rounds=${2:-21}
if [[ ! -s "$diff" ]]; then
    echo "bench-review: $diff is missing; build it with scripts/bench-input.sh" >&2
    exit 2
fi
for tool in hyperfine /usr/bin/time python3 git; do
    command -v "$tool" >/dev/null || {
        echo "bench-review: $tool not found (apt-get install -y hyperfine time python3 git)" >&2
        exit 2
    }
done

cargo build --release --quiet --bin reviewbot
bin=$root/target/release/reviewbot

scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench-review.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

review=("$bin" review --diff "$diff" --lens builtin --format json)
numstat=(git apply --numstat "$diff")

# Both must succeed on the file before anything is timed.
"${review[@]}" >review.json
"${numstat[@]}" >numstat.txt
echo "input: $diff ($(wc -c <"$diff") bytes); git apply --numstat lists $(wc -l <numstat.txt) files;" \
    "reviewbot: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["findings"]), "findings,", len(d["not_reviewed"]), "not reviewed, builtin latency_ms", d["lenses"][0]["latency_ms"])' review.json)"
echo "machine: $(nproc) cores, $(uname -m), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

echo "== hyperfine (warm-up 3, 15 runs each, no intermediate shell) =="
hyperfine -N --warmup 3 --runs 15 --export-json hyperfine.json \
    -n reviewbot "${review[*]}" -n "git apply --numstat" "${numstat[*]}" >/dev/null
python3 - hyperfine.json <<'EOF'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
rb, git = res["reviewbot"], res["git apply --numstat"]
for name, r in (("reviewbot", rb), ("git apply --numstat", git)):
    print(f"{name:22} median {r['median']*1e3:7.1f} ms  (min {r['min']*1e3:.1f}, max {r['max']*1e3:.1f}, {len(r['times'])} runs)")
print(f"ratio of medians (reviewbot / git): {rb['median'] / git['median']:.2f}")
EOF
echo

echo "== alternating loop ($rounds rounds, order flipped each round, after 3 warm-up rounds) =="
python3 - "$rounds" "${#review[@]}" "${review[@]}" "${numstat[@]}" <<'EOF'
import statistics, subprocess, sys, time
rounds, n = int(sys.argv[1]), int(sys.argv[2])
review, numstat = sys.argv[3:3 + n], sys.argv[3 + n:]
cmds = {"reviewbot": review, "git apply --numstat": numstat}
times = {k: [] for k in cmds}
def run(k):
    t = time.perf_counter()
    subprocess.run(cmds[k], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t
for _ in range(3):
    for k in cmds:
        run(k)
for i in range(rounds):
    order = list(cmds) if i % 2 == 0 else list(cmds)[::-1]
    for k in order:
        times[k].append(run(k))
med = {k: statistics.median(v) for k, v in times.items()}
for k, v in times.items():
    print(f"{k:22} median {med[k]*1e3:7.1f} ms  (min {min(v)*1e3:.1f}, max {max(v)*1e3:.1f}, {len(v)} runs)")
print(f"ratio of medians (reviewbot / git): {med['reviewbot'] / med['git apply --numstat']:.2f}")
EOF
echo

echo "== peak memory (/usr/bin/time -v, maximum resident set size; median of 5 runs) =="
peak() {
    local out=() kb
    for _ in 1 2 3 4 5; do
        kb=$(/usr/bin/time -v "$@" 2>&1 >/dev/null | awk -F': ' '/Maximum resident set size/ {print $2}')
        out+=("$kb")
    done
    printf '%s\n' "${out[@]}" | sort -n | sed -n 3p
}
rb_kb=$(peak "${review[@]}")
git_kb=$(peak "${numstat[@]}")
printf '%-22s %8.1f MB\n' reviewbot "$(echo "$rb_kb / 1000" | bc -l)" \
    "git apply --numstat" "$(echo "$git_kb / 1000" | bc -l)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
