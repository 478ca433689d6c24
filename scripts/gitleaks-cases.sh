#!/usr/bin/env bash
# Extracts the test strings of gitleaks' rules into data/gitleaks/cases.json, the corpus
# `tests/it/gitleaks.rs` holds reviewbot's secret rules to.
#
#   scripts/gitleaks-cases.sh GITLEAKS_DIR REGGEN_DIR
#
# GITLEAKS_DIR: a checkout of gitleaks at the commit data/gitleaks/NOTICE.md names.
# REGGEN_DIR: a checkout of lucasjones/reggen (MIT) at the commit the NOTICE names; gitleaks
# generates most of its test secrets with it.
# Needs Go 1.23 or later and no network: the harness builds gitleaks' rule files alone.
#
# Each rule's Go file builds its rule and hands `utils.Validate` the strings that must match
# (true positives) and those that must not (false positives). The harness replaces
# `Validate` with one that records them, stubs gitleaks' `config` types, and calls every
# rule gitleaks' own generator calls. Generated secrets come from fixed seeds and the strings are
# sorted, so a second run writes the same file.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
gitleaks=$(cd "$1" && pwd)
reggen=$(cd "$2" && pwd)
harness=$(mktemp -d "${TMPDIR:-/tmp}/reviewbot-gitleaks.XXXXXX")
trap 'rm -rf "$harness"' EXIT

mkdir -p "$harness/cmd/generate/config" "$harness/cmd/generate/secrets" "$harness/cmd/dump" \
    "$harness/config" "$harness/regexp" "$harness/reggen"
cp -r "$gitleaks/cmd/generate/config/rules" "$gitleaks/cmd/generate/config/utils" \
    "$gitleaks/cmd/generate/config/base" "$harness/cmd/generate/config/"
rm -f "$harness"/cmd/generate/config/*/*_test.go
cp "$gitleaks/cmd/generate/secrets/regen.go" "$harness/cmd/generate/secrets/"
cp "$gitleaks/regexp/stdlib_regex.go" "$harness/regexp/"
# A fixed seed sequence instead of the clock, so a second run writes the same file.
sed -e 's/rand.NewSource(time.Now().UnixNano())/rand.NewSource(nextSeed())/' \
    -e 's/^\t"time"$/\t_ "time"/' "$reggen/reggen.go" \
    > "$harness/reggen/reggen.go"
printf 'package reggen\n\nvar seed int64\n\nfunc nextSeed() int64 {\n\tseed++\n\treturn seed\n}\n' \
    > "$harness/reggen/seed.go"
cp scripts/gitleaks-cases/config.go "$harness/config/"
cp scripts/gitleaks-cases/validate.go "$harness/cmd/generate/config/utils/"
printf 'module github.com/lucasjones/reggen\n\ngo 1.18\n' > "$harness/reggen/go.mod"
cat > "$harness/go.mod" <<'MOD'
module github.com/zricethezav/gitleaks/v8

go 1.23

require github.com/lucasjones/reggen v0.0.0

replace github.com/lucasjones/reggen => ./reggen
MOD
# The rule list of gitleaks' generator, called by a main that writes what Validate recorded.
python3 - "$gitleaks/cmd/generate/config/main.go" "$harness/cmd/dump/main.go" <<'PY'
import sys
src = open(sys.argv[1]).read()
start = src.index("configRules := []*config.Rule{")
end = src.index("\n\t}\n", start) + 4
open(sys.argv[2], "w").write(f"""package main

import (
	"encoding/json"
	"os"

	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/rules"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	"github.com/zricethezav/gitleaks/v8/config"
)

func main() {{
	{src[start:end]}
	_ = configRules
	out, err := json.MarshalIndent(utils.Dump, "", " ")
	if err != nil {{
		panic(err)
	}}
	if err := os.WriteFile(os.Args[1], append(out, '\\n'), 0o644); err != nil {{
		panic(err)
	}}
}}
""")
PY
cd "$harness"
GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off \
    go run ./cmd/dump "$root/data/gitleaks/cases.json"
echo "wrote data/gitleaks/cases.json" >&2
