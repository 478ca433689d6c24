#!/usr/bin/env bash
# Seeds each target's corpus (fuzz/corpus/<target>/, not committed) from the committed seeds
# and the project's fixtures. Safe to run again: files are copied by content hash.
set -euo pipefail
cd "$(dirname "$0")"
root=..
copy() { # target file...
  local target=$1; shift
  mkdir -p "corpus/$target"
  for f in "$@"; do
    [ -f "$f" ] || continue
    cp "$f" "corpus/$target/$(sha1sum "$f" | cut -c1-16)"
  done
}
copy diff_parse seeds/diff_parse/* "$root"/fixtures/diffs/*.diff "$root"/examples/*.patch "$root"/tests/fixtures/cli/*.diff
copy lens_response seeds/lens_response/*
copy sanitize seeds/sanitize/* "$root"/README.md "$root"/docs/*.md
# The event name is the first byte (see fuzz_targets/webhook_event.rs): 0 pull_request, 1 issue_comment.
seed_event() { # byte dir
  mkdir -p corpus/webhook_event
  for f in "$root"/fixtures/github-webhooks/"$2"/*.json; do
    { printf "\\$(printf '%03o' "$1")"; cat "$f"; } >"corpus/webhook_event/$1-$(sha1sum "$f" | cut -c1-16)"
  done
}
seed_event 0 pull_request
seed_event 1 issue_comment
echo "corpus seeded: $(ls corpus | tr '\n' ' ')"
