#!/usr/bin/env bash
# The wall time of `reviewbot eval` over the golden set the project ships (fixtures/eval/), the
# median of ROUNDS runs: the builtin lens alone, then with a scripted command lens beside it
# (tests/fixtures/lenses/oracle.sh), two cases at once (the default --jobs).
#
#   scripts/bench-eval.sh [BIN]        # BIN defaults to target/release/reviewbot
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-target/release/reviewbot}"
ROUNDS="${ROUNDS:-11}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
printf '[[lens]]\nname = "oracle"\nbackend = "command"\nbin = "%s"\n' \
  "$PWD/tests/fixtures/lenses/oracle.sh" >"$WORK/panel.toml"

median_ms() {
  local times=()
  for _ in $(seq "$ROUNDS"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    times+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f ms\n", a[int((NR+1)/2)]/1000}'
}

echo "builtin alone:        $(median_ms "$BIN" eval --set fixtures/eval --lens builtin)"
echo "builtin + oracle:     $(median_ms "$BIN" eval --set fixtures/eval --config "$WORK/panel.toml" --lens builtin,oracle)"
echo "builtin + oracle -j1: $(median_ms "$BIN" eval --set fixtures/eval --config "$WORK/panel.toml" --lens builtin,oracle --jobs 1)"
