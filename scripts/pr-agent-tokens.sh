#!/usr/bin/env bash
# Prompt tokens per round of a multi-push pull request: reviewbot against PR-Agent 0.49.0's
# incremental review, on the same local git history, counted the same way (the exact o200k
# count of every message text, and of the response_format schema where one is sent).
#
# Round 1 is BASE..C1; each later Ck is one push. reviewbot: examples/round_tokens.rs replays
# the history through the scope and planner a round uses and counts what the openai lens sends
# (diff alone, no tools). PR-Agent: scripts/pr_agent_replay/ serves the pull request from a
# fake GitHub backed by the git history (the head advancing one push at a time, PR-Agent's
# comments kept and served back) and answers from a fake model that records every request;
# `review` on push 1 and `review -i` on each later push, and, in a separate pull request,
# plain `review` on every push. PR-Agent runs with its default settings and default model,
# only its GitHub and OpenAI endpoints pointed at the fakes.
#
# Usage: scripts/pr-agent-tokens.sh REPO BASE C1 [C2 ...]
# Environment: OUT (where the recorded prompts and tables go; default a new temporary
# directory), REVIEWBOT_BENCH_DIR (where PR-Agent's virtualenv lives; default
# ~/.cache/reviewbot-bench).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 3 ] || { echo "usage: $0 REPO BASE C1 [C2 ...]" >&2; exit 2; }
repo="$(cd "$1" && pwd)"
shift

version=0.49.0
bench="${REVIEWBOT_BENCH_DIR:-$HOME/.cache/reviewbot-bench}/pr-agent"
venv="$bench/venv"
target="${CARGO_TARGET_DIR:-$root/target}"
out="${OUT:-$(mktemp -d -t pr-agent-tokens.XXXXXX)}"
mkdir -p "$out"

(cd "$root" && cargo build --quiet --release --example round_tokens)
round_tokens="$target/release/examples/round_tokens"

# PR-Agent in its own virtualenv. It declares Python >= 3.12; on 3.11 it installs with
# --ignore-requires-python and runs once py311.py has rewritten its few 3.12-only lines.
if [ "$("$venv/bin/python" -m pip show pr-agent 2>/dev/null | sed -n 's/^Version: //p')" != "$version" ] \
    || ! "$venv/bin/python" -c 'import github' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  flags=()
  "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' \
    || flags=(--ignore-requires-python)
  "$venv/bin/python" -m pip install --quiet "${flags[@]}" "pr-agent[github]==$version"
fi
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PYTHONPATH="$root/scripts" "$venv/bin/python" -m pr_agent_replay.py311 "$site"

# tiktoken's o200k table, which PR-Agent counts with and tiktoken would download: written from
# the tables reviewbot's dev-dependency ships, where tiktoken looks for its cached copy (it
# checks the file's published SHA-256 itself, so a wrong table cannot slip through).
export TIKTOKEN_CACHE_DIR="$bench/tiktoken"
mkdir -p "$TIKTOKEN_CACHE_DIR"
key="$("$venv/bin/python" -c 'import hashlib; print(hashlib.sha1(b"https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken").hexdigest())')"
if [ ! -s "$TIKTOKEN_CACHE_DIR/$key" ]; then
  "$round_tokens" --tiktoken-table "$TIKTOKEN_CACHE_DIR/$key.tmp"
  mv "$TIKTOKEN_CACHE_DIR/$key.tmp" "$TIKTOKEN_CACHE_DIR/$key"
fi
echo "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d  $TIKTOKEN_CACHE_DIR/$key" \
  | sha256sum --check --quiet

"$round_tokens" --dump "$out/reviewbot" "$repo" "$@" > "$out/reviewbot.tsv"
PYTHONPATH="$root/scripts" "$venv/bin/python" -m pr_agent_replay \
  --out "$out/pr-agent" "$repo" "$@" > "$out/pr-agent.tsv" \
  || { cat "$out/pr-agent.tsv" >&2; echo "PR-Agent failed: see $out/pr-agent/*.log" >&2; exit 1; }
"$round_tokens" --count "$out"/pr-agent/*/round* > "$out/counts.tsv"
"$venv/bin/python" "$root/scripts/pr_agent_replay/table.py" "$out"
echo "recorded prompts: $out"
