#!/usr/bin/env bash
# Compares reviewbot's repository snapshot (the streamed download and the safe extraction,
# through the bench-only `snapshot_fetch` example) with `curl -s URL | tar -xz` of the same
# archive, served by a local HTTP server on 127.0.0.1. Runs alternate, ROUNDS of each; prints
# each run and the medians of wall time, CPU time and peak RSS (`/usr/bin/time -v`).
#
#   scripts/bench-snapshot.sh [ROUNDS]      (default 5)
#
# The archive is made at bench time and never committed: the crate sources under
# $CARGO_HOME/registry/src, committed as one git repository, then `git archive --format=tar.gz`
# with a GitHub-like top folder. It is kept in target/bench/snapshot/ for later runs.
set -euo pipefail

rounds=${1:-5}
cd "$(dirname "$0")/.."
work=$PWD/target/bench/snapshot
mkdir -p "$work"
archive=$work/repo.tar.gz

if [[ ! -s "$archive" ]]; then
    src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -n 1)
    git_dir=$work/repo.git
    rm -rf "$git_dir"
    export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.invalid
    export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.invalid
    git init --quiet --bare "$git_dir"
    # -f: the crates' own .gitignore files must not leave sources out.
    git --git-dir="$git_dir" --work-tree="$src" add -A -f .
    git --git-dir="$git_dir" --work-tree="$src" commit --quiet -m bench
    git --git-dir="$git_dir" archive --format=tar.gz --prefix=octo-bench-0000000/ HEAD >"$archive"
    rm -rf "$git_dir"
fi

cargo build --release --quiet --example snapshot_fetch
fetch=$PWD/target/release/examples/snapshot_fetch

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work" "$port" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work/tmp" "$work/tar-out"' EXIT
url=http://127.0.0.1:$port/repo.tar.gz
for _ in $(seq 50); do
    curl -sf -o /dev/null -r 0-0 "$url" && break
    sleep 0.1
done

# Both write below the same directory (same file system).
mkdir -p "$work/tmp"
export TMPDIR=$work/tmp

# Runs "$@" under /usr/bin/time; prints "<wall seconds> <max RSS KiB> <CPU seconds>" (user and
# system, of every process: curl, gzip and tar for the pipeline).
measure() {
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -v -o "$work/time.txt" "$@" >"$work/out.txt"
    end=$(date +%s.%N)
    local rss cpu
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
    cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$work/time.txt")
    echo "$(echo "$end - $start" | bc -l) $rss $cpu"
}

sync
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "archive: $(stat -c %s "$archive") bytes gzip'd, $(tar -tzf "$archive" | wc -l) entries"
: >"$work/results.txt"
for i in $(seq "$rounds"); do
    read -r t r c < <(measure "$fetch" "$url")
    echo "reviewbot $t $r $c" | tee -a "$work/results.txt"
    root=$(awk '{print $1}' "$work/out.txt")
    [[ $i == 1 ]] && echo "  $(cat "$work/out.txt")"
    rm -rf "$root"
    # Neither run pays for the other's write-back.
    sync

    mkdir -p "$work/tar-out"
    read -r t r c < <(measure bash -c "curl -s '$url' | tar -xz -C '$work/tar-out'")
    echo "tar       $t $r $c" | tee -a "$work/results.txt"
    rm -rf "$work/tar-out"
    sync
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/results.txt" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
med = {}
for who in ("reviewbot", "tar"):
    mine = [r for r in rows if r[0] == who]
    wall = statistics.median(float(r[1]) for r in mine)
    rss = statistics.median(int(r[2]) for r in mine)
    cpu = statistics.median(float(r[3]) for r in mine)
    med[who] = (wall, cpu)
    print(f"median {who:9}: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss / 1024:.1f} MiB")
print(f"reviewbot / tar: {med['reviewbot'][0] / med['tar'][0]:.2f}x wall, "
      f"{med['reviewbot'][1] / med['tar'][1]:.2f}x CPU")
PY
