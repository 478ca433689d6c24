#!/usr/bin/env bash
# Builds the benchmark corpus: real diffs of different shapes, each `git diff -M` between two
# releases of a package (unpacked, committed one after the other in a scratch repository).
# Nothing third-party is committed to this repository; the corpus is built at bench time.
#
#   scripts/bench-corpus.sh [DIR]     (default DIR: target/bench/corpus)
#
# Writes DIR/<name>.diff for each entry below and skips the ones already there. The Django
# diff is scripts/bench-input.sh's (the same file, copied). See docs/benchmarks.md for what
# each diff is.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
dir=${1:-target/bench/corpus}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-corpus.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# Fixed identity and dates so each diff is the same on every machine.
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
export GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z

# fetch KIND PACKAGE VERSION: downloads one wheel (KIND=wheel) or sdist (KIND=sdist) and prints
# its path. One call per version: pip refuses two versions of one package in a single resolve.
fetch() {
    local kind=$1 pkg=$2 version=$3 dest only
    if [[ $kind == wheel ]]; then only=(--only-binary=:all:); else only=(--no-binary=:all:); fi
    dest=$scratch/dl/$kind-$pkg-$version
    mkdir -p "$dest"
    pip download --quiet --no-deps "${only[@]}" --dest "$dest" "$pkg==$version" >&2
    ls "$dest"/* | head -1
}

# unpack KIND ARCHIVE INTO: a wheel is a zip; an sdist's single top directory is stripped, so
# the two versions' files have the same paths — except for KIND=sdist-as-is, which keeps it
# (`django-4.2.29/…` → `django-4.2.30/…`: every file is renamed, as in a directory move).
unpack() {
    case $1:$2 in
    wheel:*) unzip -q "$2" -d "$3" ;;
    sdist-as-is:*.tar.gz) tar -xzf "$2" -C "$3" ;;
    sdist:*.tar.gz) tar -xzf "$2" -C "$3" --strip-components=1 ;;
    *) echo "bench-corpus: cannot unpack $2 as $1" >&2 && exit 1 ;;
    esac
}

# pair NAME KIND PACKAGE OLD NEW: writes DIR/NAME.diff, the diff from OLD to NEW.
pair() {
    local name=$1 kind=$2 pkg=$3 old=$4 new=$5 out=$dir/$1.diff repo=$scratch/$1
    if [[ -s $out ]]; then
        echo "bench-corpus: $out already exists; skipped"
        return
    fi
    git init --quiet "$repo"
    for v in "$old" "$new"; do
        local archive
        archive=$(fetch "${kind%-as-is}" "$pkg" "$v")
        find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
        unpack "$kind" "$archive" "$repo"
        git -C "$repo" add -A
        git -C "$repo" -c core.autocrlf=false -c gc.auto=0 -c maintenance.auto=false commit --quiet --no-verify -m "$pkg $v"
    done
    # renameLimit: rename detection on every file, however many (git's default gives up early).
    git -C "$repo" -c core.quotePath=true -c diff.noprefix=false -c diff.renameLimit=100000 \
        diff -M --no-color --no-ext-diff HEAD~1 HEAD >"$out.tmp"
    mv "$out.tmp" "$out"
    rm -rf "$repo"
}

scripts/bench-input.sh "$root/target/bench/django.diff" >&2
[[ -s $dir/django.diff ]] || cp "$root/target/bench/django.diff" "$dir/django.diff"

# Non-UTF-8: chardet's test data is text in dozens of legacy encodings (Latin-1, cp1251, …).
pair non-utf8 sdist chardet 4.0.0 5.2.0
# Very long lines: the theme's minified CSS and JS (one line of tens of kilobytes each).
pair long-lines wheel sphinx_rtd_theme 1.0.0 2.0.0
# Thousands of small files: the OCI SDK is generated, one small module per model; a new year
# changed the copyright line of nearly every file.
pair many-files wheel oci 2.118.0 2.119.1
# One big file rewritten: typing_extensions is a single module.
pair single-file wheel typing_extensions 3.10.0.2 4.12.2
# Mostly renames: a Django patch release unpacked as published, under its versioned top
# directory; all but a few of its thousands of files are renamed unchanged.
pair renames sdist-as-is django 4.2.29 4.2.30

echo "bench-corpus: $dir"
printf '%-12s %10s %6s %6s %7s %8s %9s %s\n' name bytes files hunks renames binary max-line utf8
for f in "$dir"/*.diff; do
    python3 - "$f" <<'EOF'
import os, sys
path = sys.argv[1]
data = open(path, "rb").read()
lines = data.split(b"\n")
def valid(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False
bad = sum(1 for l in lines if not valid(l))
utf8 = f"invalid on {bad} lines" if bad else "valid"
count = lambda p: sum(1 for l in lines if l.startswith(p))
print(f"{os.path.basename(path)[:-5]:12} {len(data):10} {count(b'diff --git '):6} {count(b'@@ -'):6}"
      f" {count(b'rename from '):7} {count(b'Binary files ') + count(b'GIT binary patch'):8}"
      f" {max(len(l) for l in lines):9} {utf8}")
EOF
done
