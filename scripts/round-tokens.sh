#!/usr/bin/env bash
# The prompt tokens each round of a multi-push pull request sends one lens, replayed from a
# local git history: round 1 reviews BASE..C1, round k what changed since C(k-1) within
# BASE..Ck (examples/round_tokens.rs). Per round: the planner's estimate, and the exact o200k
# count of what the openai lens sends (message and response_format schema), split into fixed
# text, changed lines and context lines. scripts/pr-agent-tokens.sh runs it beside PR-Agent.
# Usage: scripts/round-tokens.sh [--verify] REPO BASE C1 [C2 ...]  (--verify: a cross-examination
# call of 1, 3, 5 and up to 20 findings against each round's review)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --example round_tokens
target="${CARGO_TARGET_DIR:-target}"
"$target/release/examples/round_tokens" "$@"
