#!/usr/bin/env bash
# Builds the diff-parsing benchmark input: `git diff -M` between two Django releases
# (unpacked wheels committed one after the other in a scratch repo). Nothing third-party is
# committed to this repository; the input is built at bench time.
#
#   scripts/bench-input.sh [OUT]     (default OUT: target/bench/django.diff)
#
# Idempotent: does nothing when OUT already exists.
set -euo pipefail

OLD_VERSION=4.2.30
NEW_VERSION=5.1.15

cd "$(dirname "$0")/.."
out=${1:-target/bench/django.diff}
if [[ -s "$out" ]]; then
    echo "bench-input: $out already exists ($(wc -c <"$out") bytes); nothing to do"
    exit 0
fi
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# One call per version: pip refuses two versions of one package in a single resolve.
for v in "$OLD_VERSION" "$NEW_VERSION"; do
    pip download --quiet --no-deps --only-binary=:all: --dest "$scratch/wheels" "django==$v"
done

repo=$scratch/repo
git init --quiet "$repo"
# Fixed identity and dates so the diff is the same on every machine.
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z
for v in "$OLD_VERSION" "$NEW_VERSION"; do
    find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
    unzip -q "$scratch/wheels/Django-$v-py3-none-any.whl" -d "$repo" 2>/dev/null ||
        unzip -q "$scratch"/wheels/[Dd]jango-"$v"-py3-none-any.whl -d "$repo"
    git -C "$repo" add -A
    git -C "$repo" -c core.autocrlf=false commit --quiet -m "django $v"
done
git -C "$repo" -c core.quotePath=true -c diff.noprefix=false diff -M --no-color --no-ext-diff \
    HEAD~1 HEAD >"$out.tmp"
mv "$out.tmp" "$out"
echo "bench-input: wrote $out ($(wc -c <"$out") bytes, $(grep -c '^diff --git ' "$out") files)"
