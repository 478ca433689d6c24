#!/usr/bin/env bash
# A review's time by stage: runs `reviewbot review --diff F --lens builtin --format json`
# RUNS times (default 7) with RUST_LOG=reviewbot::timing=debug and prints, for each stage, the
# median time since `main` started and the median time the stage itself took.
#
#   scripts/bench-stages.sh DIFF [RUNS]
#
# Set REVIEWBOT_BIN to measure an existing binary instead of building the release one.
set -euo pipefail

cd "$(dirname "$0")/.."
diff=${1:?usage: scripts/bench-stages.sh DIFF [RUNS]}
runs=${2:-7}
if [[ -n ${REVIEWBOT_BIN:-} ]]; then
    bin=$REVIEWBOT_BIN
else
    cargo build --release --quiet --bin reviewbot
    bin=target/release/reviewbot
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench-stages.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for i in $(seq 1 "$runs"); do
    RUST_LOG=reviewbot::timing=debug NO_COLOR=1 "$bin" review --diff "$diff" --lens builtin \
        --format json 2>"$scratch/run$i.log" >/dev/null || true
done
python3 - "$scratch" "$runs" <<'PY'
import re, statistics, sys
scratch, runs = sys.argv[1], int(sys.argv[2])
order, marks = [], {}
for i in range(1, runs + 1):
    for line in open(f"{scratch}/run{i}.log", errors="replace"):
        m = re.search(r'stage="([^"]+)" us=(\d+)', line)
        if m:
            stage, us = m.group(1), int(m.group(2))
            if stage not in marks:
                order.append(stage)
                marks[stage] = []
            marks[stage].append(us)
prev = 0.0
print(f"{'stage':<22} {'since main':>11} {'stage took':>11}")
for stage in order:
    at = statistics.median(marks[stage]) / 1000
    print(f"{stage:<22} {at:>8.2f} ms {at - prev:>8.2f} ms")
    prev = at
PY
