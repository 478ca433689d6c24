#!/usr/bin/env bash
# Finds or installs the reviewbot the action runs, and writes `bin=<path>` to $GITHUB_OUTPUT.
#
# Fastest first:
#   1. a `reviewbot` on PATH;
#   2. the release asset of this action's own ref for the runner's OS and arch, from the runner's
#      tool cache when it holds that exact archive (same SHA-256), else downloaded from the
#      release, checked against its `.sha256` file (a mismatch fails and runs nothing) and cached;
#   3. a build from the action's source, only when there is no release asset to download (the
#      server answers 404, the ref is no tag, or the platform has no asset), saying so.
#
# Reads only what the step maps in (RB_ACTION_REPOSITORY, RB_ACTION_REF) and the runner's
# defaults (GITHUB_SERVER_URL, GITHUB_ACTION_PATH, GITHUB_OUTPUT, RUNNER_OS, RUNNER_ARCH,
# RUNNER_TOOL_CACHE, RUNNER_TEMP). No token: release assets of a public repository need none.
set -euo pipefail

fail() {
  echo "::error title=reviewbot::$1"
  exit 3
}

use() {
  "$1" --version
  echo "bin=$1" >>"$GITHUB_OUTPUT"
  exit 0
}

build_from_source() {
  local src
  src="$(cd "$GITHUB_ACTION_PATH/.." && pwd)"
  echo "::notice title=reviewbot::No reviewbot release to download: $1. Building it from source, which takes minutes."
  if ! command -v cargo >/dev/null; then
    echo "::error title=reviewbot::reviewbot is not on PATH and cargo is missing to build it; install reviewbot (or a Rust toolchain) before this step."
    exit 2
  fi
  echo "::group::Building reviewbot from $src"
  cargo build --release --locked --manifest-path "$src/Cargo.toml" --target-dir "$src/target"
  echo "::endgroup::"
  use "$src/target/release/reviewbot"
}

sha256_of() {
  local sum
  if command -v sha256sum >/dev/null; then
    read -r sum _ < <(sha256sum "$1")
  else
    read -r sum _ < <(shasum -a 256 "$1")
  fi
  echo "$sum"
}

# GET $1 into $2 and print the final HTTP status; a transport failure (after retries) fails the
# step. Called as `$(fetch …)`, so its error goes to stderr, which the runner reads too.
fetch() {
  local code
  if ! code="$(curl --silent --show-error --location --retry 3 --connect-timeout 20 \
    --max-time 600 --output "$2" --write-out '%{http_code}' "$1")"; then
    echo "::error title=reviewbot::could not download $1" >&2
    exit 3
  fi
  echo "$code"
}

if bin="$(command -v reviewbot)"; then
  echo "Using reviewbot from PATH: $bin"
  use "$bin"
fi

# The release target of this runner (the release workflow builds these four).
case "${RUNNER_OS:-}/${RUNNER_ARCH:-}" in
  Linux/X64) target=x86_64-unknown-linux-gnu ;;
  Linux/ARM64) target=aarch64-unknown-linux-gnu ;;
  macOS/X64) target=x86_64-apple-darwin ;;
  macOS/ARM64) target=aarch64-apple-darwin ;;
  *) build_from_source "no release asset is built for this runner (${RUNNER_OS:-?} ${RUNNER_ARCH:-?})" ;;
esac

# Which release. The runner unpacks `uses: OWNER/REPO/action@REF` into
# .../_actions/OWNER/REPO/REF/action, and that path is the surest answer: inside a composite
# action `github.action_repository` and `github.action_ref` may be empty, or name an outer action.
repo="${RB_ACTION_REPOSITORY:-}"
ref="${RB_ACTION_REF:-}"
if [[ "${GITHUB_ACTION_PATH:-}" =~ /_actions/([^/]+)/([^/]+)/(.+)/action/?$ ]]; then
  repo="${BASH_REMATCH[1]}/${BASH_REMATCH[2]}"
  ref="${BASH_REMATCH[3]}"
fi
if [ -z "$repo" ] || [ -z "$ref" ]; then
  build_from_source "the action does not run from a repository ref (a local action)"
fi
# A commit-SHA pin names no release: the release is the one of the version that the action's
# own repository declares at that commit (its Cargo.toml's [package] version), verified by its
# checksum like any other. The pin keeps the action's scripts immutable.
if [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
  manifest="${GITHUB_ACTION_PATH:-.}/../Cargo.toml"
  version="$(awk '/^\[/ { section = $0 } section == "[package]" && /^version = "/ { gsub(/^version = "|"$/, ""); print; exit }' "$manifest" 2>/dev/null || true)"
  if ! [[ "$version" =~ ^[0-9][0-9A-Za-z.+-]*$ ]]; then
    build_from_source "the action is pinned to commit $ref, whose Cargo.toml names no version"
  fi
  echo "The action is pinned to commit $ref (version $version): using release v$version"
  ref="v$version"
fi
# Both go into a URL and a cache path: only what a repository name and a release tag can be.
if ! [[ "$repo" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+$ ]] ||
  ! [[ "$ref" =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
  build_from_source "the action's ref is not a release tag"
fi

asset="reviewbot-$target.tar.gz"
base="${GITHUB_SERVER_URL:-https://github.com}/$repo/releases/download/$ref"
cache="${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}/tool-cache}/reviewbot/$ref/$target"
work="$(mktemp -d "${RUNNER_TEMP:-/tmp}/reviewbot-release.XXXXXXXX")"
trap 'rm -rf "$work"' EXIT

code="$(fetch "$base/$asset.sha256" "$work/sha256")"
case "$code" in
  200) ;;
  404) build_from_source "$repo has no release $ref with $asset" ;;
  *) fail "downloading $base/$asset.sha256 answered HTTP $code" ;;
esac
expected=""
read -r expected _ <"$work/sha256" || true
if ! [[ "$expected" =~ ^[0-9a-f]{64}$ ]]; then
  fail "$base/$asset.sha256 holds no SHA-256 checksum; not running anything from that release"
fi

# The tool cache keeps the binary with the checksum of the archive it came from, so a moved tag
# (a re-released v1) is downloaded again rather than served stale.
if [ -f "$cache.complete" ] && [ -x "$cache/reviewbot" ] &&
  [ "$(cat "$cache/archive.sha256" 2>/dev/null)" = "$expected" ]; then
  echo "Using reviewbot $ref from the tool cache: $cache/reviewbot"
  use "$cache/reviewbot"
fi

echo "Downloading reviewbot $ref ($asset) from $base"
code="$(fetch "$base/$asset" "$work/$asset")"
if [ "$code" != 200 ]; then
  fail "downloading $base/$asset answered HTTP $code, though its checksum is published"
fi
actual="$(sha256_of "$work/$asset")"
if [ "$actual" != "$expected" ]; then
  fail "checksum mismatch for $asset of release $ref: expected $expected, got $actual. The download is corrupt or was tampered with; nothing from it was run."
fi

mkdir "$work/unpacked"
if ! tar -xzf "$work/$asset" -C "$work/unpacked" reviewbot ||
  [ -L "$work/unpacked/reviewbot" ] || ! [ -f "$work/unpacked/reviewbot" ]; then
  fail "$asset of release $ref holds no reviewbot executable"
fi
chmod 0755 "$work/unpacked/reviewbot"
rm -rf "$cache" "$cache.complete"
mkdir -p "$cache"
mv "$work/unpacked/reviewbot" "$cache/reviewbot"
echo "$expected" >"$cache/archive.sha256"
touch "$cache.complete"
echo "Cached reviewbot $ref in the tool cache: $cache/reviewbot"
use "$cache/reviewbot"
