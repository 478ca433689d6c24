#!/usr/bin/env python3
"""Turns gitleaks' rule catalog into the data reviewbot's secret rules are compiled from.

    scripts/import-gitleaks.py            (reads data/gitleaks/gitleaks.toml,
                                           writes src/redact/catalog.rs)

The input is gitleaks' generated `config/gitleaks.toml`, pinned in data/gitleaks/ (see the
NOTICE there for the release and licence). The output is plain Rust data, so a build needs no
TOML parsing and no step of its own, and a diff of the output shows what an update changed.

What the import does to each rule:
- Go's RE2 and the regex crate read the same syntax but for three things, translated here:
  `\\w`, `\\d`, `\\s` and `\\b` are ASCII in Go and Unicode in Rust (the ASCII forms are also
  much smaller automata), and Go reads a `{` that starts no repetition as a literal.
- Keywords are lower case in gitleaks and matched on lower-cased text. A keyword the pattern
  spells with a fixed case outside any case-insensitive part (`SK` for `sk`) is kept in that
  case, and one every match starts a word with (`\\b(ey…`) is looked for at word starts
  only: a two-letter keyword matched anywhere in any case runs its pattern on nearly every
  line.
- Path rules and path allowlists are kept (the diff names every file).
Rules reviewbot implements itself are still imported; src/redact/imported.rs says which it
skips and why.
"""

import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "data" / "gitleaks" / "gitleaks.toml"
TARGET = ROOT / "src" / "redact" / "catalog.rs"

ASCII_CLASSES = {"w": "0-9A-Za-z_", "d": "0-9", "s": "\\t\\n\\f\\r "}
NEGATED = {"W": "w", "D": "d", "S": "s"}
REPEAT = re.compile(r"\{\d+(?:,\d*)?\}")


def translate(pattern: str) -> str:
    """An RE2 pattern as the regex crate reads it with the same meaning."""
    out = []
    i = 0
    in_class = False
    class_start = -1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            e = pattern[i + 1]
            if e in ASCII_CLASSES:
                body = ASCII_CLASSES[e]
                out.append(body if in_class else f"[{body}]")
            elif e in NEGATED and not in_class:
                out.append(f"[^{ASCII_CLASSES[NEGATED[e]]}]")
            elif e in "bB" and not in_class:
                out.append(f"(?-u:\\{e})")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            # `]` right after `[` or `[^` is a literal in both syntaxes.
            if c == "]" and i > class_start:
                in_class = False
            elif c == "[" and pattern.startswith("[:", i):
                end = pattern.index(":]", i) + 2
                out.append(pattern[i:end])
                i = end
                continue
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            class_start = i + 1
            if pattern.startswith("[^", i):
                class_start += 1
            out.append(c)
            i += 1
            continue
        if c == "{":
            m = REPEAT.match(pattern, i)
            if m:
                out.append(m.group(0))
                i = m.end()
                continue
            out.append("\\{")
            i += 1
            continue
        if c == "}":
            out.append("\\}")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def starts_word(keyword: str, pattern: str) -> bool:
    """Whether every match holds `keyword` at a word start: the pattern starts with `\\b`
    and then with the keyword (in one of its first alternatives). `ey` (JWTs) and `s.` (Vault
    tokens) would otherwise stand in most lines of code (`key`, `this.`)."""
    if not pattern.startswith("\\b"):
        return False
    plain = pattern[2:]
    while True:
        for lead in ("(?:", "(?i)", "("):
            if plain.startswith(lead):
                plain = plain[len(lead):]
                break
        else:
            break
    plain = plain.replace("\\", "").lower()
    return plain.startswith(keyword) or ("|" + keyword) in plain


def keyword_case(keyword: str, pattern: str) -> tuple[str, bool]:
    """The keyword as matched: (literal, whether its case must match exactly)."""
    if pattern.startswith("(?i)"):
        return keyword, False
    plain = pattern.replace("\\", "")
    for form in (keyword.upper(), keyword):
        at = plain.find(form)
        # Not after an inline `(?i)`, nor inside a `(?i:…)` group: either makes it
        # case-insensitive.
        if at >= 0 and "(?i)" not in plain[:at] and not in_insensitive_group(plain, at):
            return form, True
    return keyword, False


def in_insensitive_group(plain: str, at: int) -> bool:
    """Whether `at` of a pattern (escapes dropped) is inside an open `(?i:` group."""
    groups = []
    for i, c in enumerate(plain[:at]):
        if c == "(":
            groups.append(plain.startswith("(?i:", i))
        elif c == ")" and groups:
            groups.pop()
    return any(groups)


# Words spelled as their owners spell them in the names the lens's findings show.
NAMES = {
    "api": "API", "aws": "AWS", "gcp": "GCP", "jwt": "JWT", "id": "ID", "pat": "PAT",
    "url": "URL", "ssh": "SSH", "tf": "Terraform", "github": "GitHub", "gitlab": "GitLab",
    "openai": "OpenAI", "npm": "npm", "pypi": "PyPI", "ci": "CI", "oauth": "OAuth",
    "sdk": "SDK", "dsn": "DSN", "scim": "SCIM", "cli": "CLI", "ai": "AI", "aad": "AAD",
    "iam": "IAM", "sas": "SAS", "rsa": "RSA", "pkcs12": "PKCS#12", "1password": "1Password",
    "digitalocean": "DigitalOcean", "huggingface": "Hugging Face", "jfrog": "JFrog",
    "linkedin": "LinkedIn", "launchdarkly": "LaunchDarkly", "messagebird": "MessageBird",
    "newrelic": "New Relic", "planetscale": "PlanetScale", "sendgrid": "SendGrid",
    "sourcegraph": "Sourcegraph", "clickhouse": "ClickHouse", "gocardless": "GoCardless",
    "rubygems": "RubyGems", "hubspot": "HubSpot", "easypost": "EasyPost", "flyio": "Fly.io",
    "settlemint": "SettleMint", "sendinblue": "Sendinblue", "freshbooks": "FreshBooks",
    "rapidapi": "RapidAPI", "droneci": "Drone CI", "travisci": "Travis CI", "nytimes": "NYTimes",
    "yaml": "YAML", "hashicorp": "HashiCorp", "nuget": "NuGet", "octopus": "Octopus",
    "mailchimp": "Mailchimp", "privateai": "Private AI", "definednetworking": "Defined Networking",
}


def name(rule_id: str) -> str:
    words = [NAMES.get(w, w) for w in rule_id.split("-")]
    first = words[0]
    if first == first.lower():
        words[0] = first[:1].upper() + first[1:]
    return " ".join(words)


def rust_bool(b: bool) -> str:
    return "true" if b else "false"


def rust_str(s: str) -> str:
    hashes = "#"
    while f'"{hashes}' in s:
        hashes += "#"
    return f'r{hashes}"{s}"{hashes}'


def rust_strs(items) -> str:
    return "&[" + ", ".join(rust_str(s) for s in items) + "]"


def allow(a: dict) -> str:
    target = {"match": "Target::Match", "line": "Target::Line"}.get(
        a.get("regexTarget", ""), "Target::Secret"
    )
    regexes = [translate(r) for r in a.get("regexes", [])]
    paths = [translate(p) for p in a.get("paths", [])]
    return (
        "Allow { "
        f"target: {target}, "
        f"all: {'true' if a.get('condition') == 'AND' else 'false'}, "
        f"regexes: {rust_strs(regexes)}, "
        f"paths: {rust_strs(paths)}, "
        f"stopwords: {rust_strs(a.get('stopwords', []))} "
        "}"
    )


def rule(r: dict) -> str:
    pattern = r.get("regex", "")
    keywords = ", ".join(
        f"Keyword {{ text: {rust_str(text)}, exact: {rust_bool(exact)}, "
        f"word_start: {rust_bool(starts_word(k, pattern))} }}"
        for k in r.get("keywords", [])
        for text, exact in [keyword_case(k, pattern)]
    )
    path = r.get("path")
    fields = [
        f"id: {rust_str(r['id'])}",
        f"name: {rust_str(name(r['id']))}",
        f"pattern: {rust_str(translate(pattern))}",
        f"keywords: &[{keywords}]",
        f"entropy: {float(r.get('entropy', 0.0))!r}",
        f"secret_group: {int(r.get('secretGroup', 0))}",
        f"path: {'Some(' + rust_str(translate(path)) + ')' if path else 'None'}",
        "allow: &[" + ", ".join(allow(a) for a in r.get("allowlists", [])) + "]",
    ]
    return "    Imported {\n" + "".join(f"        {f},\n" for f in fields) + "    },\n"


def main() -> int:
    config = tomllib.loads(SOURCE.read_text())
    rules = config["rules"]
    head = [
        "//! gitleaks' rule catalog as reviewbot compiles it. Generated by",
        "//! scripts/import-gitleaks.py from data/gitleaks/gitleaks.toml: do not edit by hand.",
        "",
        "use super::rule_data::{Allow, Imported, Keyword, Target};",
        "",
        "/// The global allowlist: values no rule reports.",
        f"pub(super) const GLOBAL_ALLOW: Allow = {allow(config['allowlist'])};",
        "",
        f"pub(super) const CATALOG: &[Imported] = &[",
    ]
    body = "".join(rule(r) for r in rules)
    TARGET.write_text("\n".join(head) + "\n" + body + "];\n")
    # In the house style, so `cargo fmt` leaves the generated file as it is.
    subprocess.run(["rustfmt", "--edition", "2024", str(TARGET)], check=True)
    print(f"{len(rules)} rules written to {TARGET.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
