#!/usr/bin/env bash
# Builds a git history from successive releases of a package on the Python package index: one
# commit a release (its sdist unpacked, the top directory stripped), with a fixed identity and
# dates, so the same versions give the same commits on every machine. For replaying as the
# pushes of one pull request (scripts/round-tokens.sh, scripts/pr-agent-tokens.sh): the first
# version is the base, each later one a push.
#
# Usage: scripts/pypi-history.sh DIR PACKAGE V0 V1 [V2 ...]
# Prints the commits, oldest first, one a line (the same order as the versions).
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 DIR PACKAGE V0 V1 [V2 ...]" >&2; exit 2; }
dir=$1 pkg=$2
shift 2
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z

rm -rf "$dir"
git init --quiet "$dir"
dl=$(mktemp -d "${TMPDIR:-/tmp}/pypi-history.XXXXXX")
trap 'rm -rf "$dl"' EXIT
for v in "$@"; do
    mkdir -p "$dl/$v"
    pip download --quiet --no-deps --no-binary=:all: --dest "$dl/$v" "$pkg==$v" >&2
    find "$dir" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
    archive=$(ls "$dl/$v"/*)
    case $archive in
    *.tar.gz) tar -xzf "$archive" -C "$dir" --strip-components=1 ;;
    *.zip) unzip -q "$archive" -d "$dl/$v/x" && cp -a "$dl/$v"/x/*/. "$dir"/ ;;
    *) echo "pypi-history: cannot unpack $archive" >&2 && exit 1 ;;
    esac
    git -C "$dir" add -A
    git -C "$dir" -c core.autocrlf=false -c gc.auto=0 -c maintenance.auto=false \
        commit --quiet --no-verify --allow-empty -m "$pkg $v"
    git -C "$dir" rev-parse HEAD
done
