#!/usr/bin/env bash
# Two builds of reviewbot against each other and `git apply --numstat`, on the same diffs:
#
#   scripts/bench-ab.sh BIN_A BIN_B DIFF...      (ROUNDS=15 by default)
#
# For each diff, runs `BIN review --diff DIFF --lens builtin --format json` for both binaries
# and `git apply --numstat DIFF`, round by round, the order flipped every round (after 3
# warm-up rounds), and prints each command's median wall time and its ratio to git's. Both
# binaries run under the same load, which is how a change is measured on a shared machine.
set -euo pipefail

[[ $# -ge 3 ]] || {
    echo "usage: scripts/bench-ab.sh BIN_A BIN_B DIFF..." >&2
    exit 2
}
a=$(realpath "$1")
b=$(realpath "$2")
shift 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench-ab.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for d in "$@"; do
    [[ -s $d ]] || {
        echo "bench-ab: $d is missing; build the corpus with scripts/bench-corpus.sh" >&2
        exit 2
    }
    echo "== $d"
    path=$(realpath "$d")
    (cd "$scratch" && python3 - "${ROUNDS:-15}" "$path" "$a" "$b" <<'PY'
import statistics, subprocess, sys, time
rounds, diff, a, b = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
review = ["review", "--diff", diff, "--lens", "builtin", "--format", "json"]
cmds = {"A " + a: [a, *review], "B " + b: [b, *review], "git": ["git", "apply", "--numstat", diff]}
times = {k: [] for k in cmds}
for r in range(rounds + 3):
    for k in (list(cmds) if r % 2 == 0 else list(reversed(cmds))):
        t = time.perf_counter()
        subprocess.run(cmds[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r >= 3:
            times[k].append((time.perf_counter() - t) * 1000)
git = statistics.median(times["git"])
for k, ts in times.items():
    m = statistics.median(ts)
    print(f"{k:40} {m:8.2f} ms  {m / git:5.2f}x")
PY
    )
done
