//! gitleaks' rules ([`CATALOG`], imported from data/gitleaks/ by scripts/import-gitleaks.py),
//! run as gitleaks runs them: a keyword lets the pattern run, the secret is its capture group,
//! then the entropy threshold and the global and per-rule allowlists decide.
//!
//! Masking and detection apply the same checks to these rules: a value gitleaks' tests call a
//! false positive (too little entropy, an allowlisted example) is neither reported nor masked.

use std::ops::Range;
use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;
use regex::Regex;

use super::catalog::{CATALOG, GLOBAL_ALLOW};
use super::rule_data::{Allow, Imported, Target};
use super::{Mode, SecretMatch, entropy};

/// gitleaks rules reviewbot implements itself, each better for what reviewbot needs: boundaries
/// that survive ANSI colour codes and string escapes, the stateless `ghs_` installation tokens
/// and longer tokens than gitleaks' fixed lengths (`rules.rs`), multi-line private keys that
/// keep a masked diff's line numbers and AWS secret keys paired with their key ID
/// (`contextual.rs`). Their gitleaks test strings hold them to gitleaks
/// (`lens::builtin::gitleaks`).
pub(super) const OWN: &[&str] = &[
    "github-pat",
    "github-oauth",
    "github-app-token",
    "github-refresh-token",
    "github-fine-grained-pat",
    "aws-access-token",
    "slack-webhook-url",
    "gcp-api-key",
    "openai-api-key",
    "anthropic-api-key",
    "gitlab-pat",
    "npm-access-token",
    "huggingface-access-token",
    "pypi-upload-token",
    "stripe-access-token",
    "private-key",
];

/// Rules that only detect: masking runs on code shown to reviewers and on their findings, and
/// a generic rule would garble cache keys, hashes and identifiers there. The builtin lens never
/// shows a detected value, generic or not, and what it finds is remembered and masked
/// everywhere after ([`super::remember`]).
const DETECT_ONLY: &[&str] = &["generic-api-key"];

/// Reviewbot's rules named otherwise than the gitleaks rules they stand for: (reviewbot's,
/// gitleaks').
const RENAMED: &[(&str, &str)] = &[
    ("npm-token", "npm-access-token"),
    ("huggingface-token", "huggingface-access-token"),
    ("pypi-token", "pypi-upload-token"),
    ("stripe-key", "stripe-access-token"),
];

/// Whether gitleaks' allowlists (the global one, and those of the rule reviewbot's rule `id`
/// stands for) drop `secret`, found on `line`: known example values, placeholders, paths.
pub(super) fn allowed_own(id: &str, secret: &str, line: &str, path: Option<&str>) -> bool {
    let f = Found {
        secret,
        whole: secret,
        line,
    };
    if GLOBAL.allows(&f, path) {
        return true;
    }
    let id = RENAMED.iter().find(|r| r.0 == id).map_or(id, |r| r.1);
    let Some(i) = CATALOG.iter().position(|r| r.id == id) else {
        return false;
    };
    compiled(i).is_some_and(|c| c.allow.iter().any(|a| a.allows(&f, path)))
}

fn compiled(i: usize) -> Option<&'static Compiled> {
    COMPILED[i]
        .get_or_init(|| compile(&CATALOG[i]).ok())
        .as_ref()
}

/// The pattern of gitleaks' rule `id`, as compiled here.
pub fn pattern(id: &str) -> Option<&'static str> {
    CATALOG.iter().find(|r| r.id == id).map(|r| r.pattern)
}

/// The catalog's rules that run, by index in [`CATALOG`]: all but [`OWN`] and the rules with
/// no pattern (gitleaks' file-name-only rules).
pub(super) fn active() -> impl Iterator<Item = (usize, &'static Imported)> {
    CATALOG
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.pattern.is_empty() && !OWN.contains(&r.id))
}

/// Lines either side of a keyword that rule `i`'s matches may reach: one (a value under its
/// name) for most, more for the patterns that read several lines (`curl` with its options on
/// continuation lines, a Kubernetes secret's `data:`).
pub(super) fn reach(i: usize) -> usize {
    let p = CATALOG[i].pattern;
    match p.contains(r"[\r\n]") || p.contains("(?s") {
        true => 6,
        false => 1,
    }
}

/// The assignment gitleaks' keyword-and-value rules (the generic rule, `adafruit = …`) put
/// between the name holding their keyword and the value.
const ASSIGNMENT: &str = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)";

/// Bytes after a keyword's end within which such a rule's assignment starts: the rest of the
/// name and blanks (`[ \t\w.-]{0,20}`), quotes or a line break (`[\s'"]{0,3}`).
const ASSIGNMENT_REACH: usize = 24;

/// Whether `keyword` of rule `i` is in the name its pattern assigns a value to (`adafruit`
/// in `adafruit_key = …`; not lob's `test_`, which is in the value): then a match holds an
/// assignment right after it ([`assignment_follows`]).
pub(super) fn names_a_value(i: usize, keyword: &str) -> bool {
    let pattern = CATALOG[i].pattern;
    pattern.find(ASSIGNMENT).is_some_and(|end| {
        pattern[..end]
            .to_ascii_lowercase()
            .contains(&keyword.to_ascii_lowercase())
    })
}

/// Whether an assignment byte follows `from` in `text`, on the same line, closely enough for a
/// rule that assigns a value to a name. Code says `key` and `token` all the time, and most of
/// them assign nothing. (A name with its `=` at the start of the next line, which gitleaks'
/// patterns allow, is not looked for: a keyword is a line's own, so that a text searched in
/// pieces of whole lines gives the keywords the whole text does.)
pub(super) fn assignment_follows(text: &[u8], from: usize) -> bool {
    let from = from.min(text.len());
    let to = (from + ASSIGNMENT_REACH).min(text.len());
    text[from..to]
        .iter()
        .take_while(|&&b| b != b'\n')
        .any(|b| matches!(b, b'=' | b'>' | b':' | b'|' | b','))
}

/// A rule's name for findings, by id.
pub(super) fn name(id: &str) -> Option<&'static str> {
    CATALOG.iter().find(|r| r.id == id).map(|r| r.name)
}

/// An allowlist compiled: its regexes as one pattern, its stopwords as one automaton.
struct AllowSet {
    target: Target,
    all: bool,
    regex: Option<Regex>,
    paths: Option<Regex>,
    stopwords: Option<AhoCorasick>,
}

/// One alternation of `patterns`, or none for none. The patterns are the catalog's constants
/// (a test compiles every one): failing here is a programming error.
fn one_of(patterns: &[&str]) -> Option<Regex> {
    if patterns.is_empty() {
        return None;
    }
    let joined = patterns
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    Some(Regex::new(&joined).unwrap_or_else(|e| panic!("bad allowlist pattern {joined}: {e}")))
}

impl AllowSet {
    fn new(a: &Allow) -> AllowSet {
        AllowSet {
            target: a.target,
            all: a.all,
            regex: one_of(a.regexes),
            paths: one_of(a.paths),
            stopwords: (!a.stopwords.is_empty()).then(|| {
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .build(a.stopwords)
                    .unwrap_or_else(|e| panic!("stopwords: {e}"))
            }),
        }
    }

    /// Whether this allowlist drops `found`. Without a path (masking), a path check fails.
    fn allows(&self, found: &Found<'_>, path: Option<&str>) -> bool {
        let target = match self.target {
            Target::Secret => found.secret,
            Target::Match => found.whole,
            Target::Line => found.line,
        };
        let checks = [
            self.regex.as_ref().map(|r| r.is_match(target)),
            self.stopwords.as_ref().map(|s| s.is_match(found.secret)),
            self.paths
                .as_ref()
                .map(|p| path.is_some_and(|path| p.is_match(path))),
        ];
        let mut present = checks.iter().flatten();
        match self.all {
            true => present.clone().next().is_some() && present.all(|&c| c),
            false => present.any(|&c| c),
        }
    }
}

/// What one match of a rule's pattern gives the allowlists.
struct Found<'t> {
    secret: &'t str,
    whole: &'t str,
    line: &'t str,
}

/// A rule compiled on first need.
pub(super) struct Compiled {
    /// Over bytes and without Unicode classes, as RE2 reads gitleaks' patterns (`\w`, `(?i)`
    /// are ASCII there): an automaton several times smaller, which compiles and runs faster.
    re: regex::bytes::Regex,
    allow: Vec<AllowSet>,
}

static GLOBAL: LazyLock<AllowSet> = LazyLock::new(|| AllowSet::new(&GLOBAL_ALLOW));

/// Compiles `rule`, or says why its pattern does not compile (a test holds the catalog to
/// compiling whole).
pub(super) fn compile(rule: &Imported) -> Result<Compiled, regex::Error> {
    Ok(Compiled {
        re: regex::bytes::RegexBuilder::new(rule.pattern)
            .unicode(false)
            .build()?,
        allow: rule.allow.iter().map(AllowSet::new).collect(),
    })
}

/// The compiled rules, by index in [`CATALOG`], each compiled on first use.
pub(super) static COMPILED: LazyLock<Vec<OnceLock<Option<Compiled>>>> =
    LazyLock::new(|| CATALOG.iter().map(|_| OnceLock::new()).collect());

/// The compiled path patterns of the rules that have one, by index in [`CATALOG`]: checked
/// before a rule's own pattern is compiled.
static PATHS: LazyLock<Vec<Option<Regex>>> = LazyLock::new(|| {
    CATALOG
        .iter()
        .map(|r| {
            r.path
                .map(|p| Regex::new(p).unwrap_or_else(|e| panic!("{p}: {e}")))
        })
        .collect()
});

/// Whether rule `i` may run on the file at `path` (on any text, for a rule with no path).
fn path_allows(i: usize, path: Option<&str>) -> bool {
    match &PATHS[i] {
        Some(p) => path.is_some_and(|path| p.is_match(path)),
        None => true,
    }
}

/// Rule `i` of [`CATALOG`]'s secrets in `text` (the file at `path`, when known).
pub(super) fn find(
    i: usize,
    text: &str,
    mode: Mode,
    path: Option<&str>,
    found: &mut Vec<SecretMatch>,
) {
    let rule = &CATALOG[i];
    if mode == Mode::Redact && DETECT_ONLY.contains(&rule.id) {
        return;
    }
    if !path_allows(i, path)
        || path.is_some_and(|path| GLOBAL.paths.as_ref().is_some_and(|p| p.is_match(path)))
    {
        return;
    }
    let Some(compiled) = compiled(i) else {
        return;
    };
    for caps in compiled.re.captures_iter(text.as_bytes()) {
        let Some(whole) = caps.get(0) else { continue };
        // gitleaks trims line breaks off a match (a pattern's `\s` may take one).
        let whole_range = trim_newlines(text, whole.range());
        let secret = match rule.secret_group {
            0 => caps.iter().skip(1).flatten().find(|m| !m.is_empty()),
            g => caps.get(g),
        }
        .map_or(whole_range.clone(), |m| m.range());
        // A byte class may stop inside a character of a non-ASCII text.
        let ends = [secret.start, secret.end, whole_range.start, whole_range.end];
        if !ends.iter().all(|&e| text.is_char_boundary(e)) {
            continue;
        }
        let value = &text[secret.clone()];
        if rule.entropy != 0.0 && entropy(value) <= rule.entropy {
            continue;
        }
        let line = line_of(text, &whole_range);
        let f = Found {
            secret: value,
            whole: &text[whole_range],
            line: &text[line],
        };
        if GLOBAL.allows(&f, path) || compiled.allow.iter().any(|a| a.allows(&f, path)) {
            continue;
        }
        found.push(SecretMatch {
            rule: rule.id,
            range: secret,
        });
    }
}

/// The rules of [`CATALOG`] for files at some paths (Kubernetes manifests, Terraform, NuGet
/// configuration) that apply to `path`, by index.
pub(super) fn file_rules(path: &str) -> impl Iterator<Item = usize> + '_ {
    active()
        .filter(|(_, r)| r.path.is_some())
        .filter(move |(i, _)| path_allows(*i, Some(path)))
        .map(|(i, _)| i)
}

/// Whether `text` holds one of rule `i`'s keywords, in any case.
pub(super) fn has_keyword(i: usize, lower: &str) -> bool {
    let keywords = CATALOG[i].keywords;
    keywords.is_empty()
        || keywords
            .iter()
            .any(|k| lower.contains(&k.text.to_ascii_lowercase()))
}

fn trim_newlines(text: &str, mut r: Range<usize>) -> Range<usize> {
    let b = text.as_bytes();
    while r.start < r.end && b[r.start] == b'\n' {
        r.start += 1;
    }
    while r.end > r.start && b[r.end - 1] == b'\n' {
        r.end -= 1;
    }
    r
}

/// The whole lines `r` is on.
pub(super) fn line_of(text: &str, r: &Range<usize>) -> Range<usize> {
    let start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[r.end..].find('\n').map_or(text.len(), |i| r.end + i);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_of_the_catalog_compiles() {
        let failed: Vec<String> = CATALOG
            .iter()
            .filter(|r| !r.pattern.is_empty())
            .filter_map(|r| compile(r).err().map(|e| format!("{}: {e}", r.id)))
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
        LazyLock::force(&GLOBAL);
        LazyLock::force(&PATHS);
    }
}
