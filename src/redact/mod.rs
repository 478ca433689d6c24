//! Secret detection and masking: the one function every output goes through.
//!
//! [`redact`] masks every secret a rule matches with `[REDACTED <rule-id>]`. Every outbound
//! channel (terminal, JSON, Markdown, SARIF, prompts, posted comments, logs) calls it, so it is
//! cheap on clean text (one literal pre-filter pass, no allocation) and idempotent (it masks
//! until nothing matches, and a mask never matches a rule).
//!
//! [`find_secrets`] is the detector behind the `builtin` lens. Both run the same rules:
//! reviewbot's own token rules (`rules`, `contextual`) and gitleaks' catalog (`catalog`,
//! imported from data/gitleaks/ by scripts/import-gitleaks.py; `imported` runs it), with the
//! same checks: per-rule Shannon-entropy thresholds, plausibility checks (placeholders such
//! as `ghp_xxxx…` or `xoxb-your-token-here` are neither reported nor masked) and gitleaks'
//! global and per-rule allowlists.
//!
//! Choices made here:
//! - `generic-api-key` (gitleaks' rule: a keyword, an assignment and a 10–150 character value
//!   with entropy over 3.5, less a long allowlist) is **detection only**: `redact` runs on
//!   code shown to reviewers and on their findings, and a generic rule would garble cache
//!   keys, hashes and identifiers there. The builtin lens never shows a detected value,
//!   generic or not, and what it finds is remembered and masked on every channel after.
//! - `gitleaks:allow` markers are ignored: the PR author controls them.
//! - Boundaries survive ANSI colour codes (`\x1b[31m`) and JSON/string escapes (`\n`, `\t`)
//!   on both sides of a token (reviewbot's own rules).
//! - A multi-line private-key block keeps its line breaks (and a leading diff `+`/`-`/` `
//!   marker) when masked, so a masked diff keeps its line numbers.
//!
//! The parts: the token rules (`rules`), gitleaks' catalog and how it runs (`catalog`,
//! `imported`), the keyword index that decides which of them run on a text (`keywords`), the
//! rules that look past one token (`contextual`), the values remembered as secrets (`known`)
//! and the log writer (`writer`). The scan that runs them and the masking are here.

use std::borrow::Cow;
use std::ops::Range;

mod catalog;
mod contextual;
mod imported;
mod keywords;
mod known;
mod rule_data;
mod rules;
#[cfg(test)]
pub(crate) mod tests;
mod writer;

use contextual::{named_aws_secrets, paired_aws_secrets, private_keys, url_passwords};
use keywords::COMPILED;
use known::find_known;
use rules::compile;
use rules::{RULES, is_word};

pub use contextual::URL_PASSWORD_PATTERN;
pub use imported::pattern as catalog_pattern;
pub use keywords::{keyword_starts, prepare};
pub use known::{KnownSecrets, remember, remember_for_process, secret_values, secret_values_in};
pub use writer::{RedactingWriter, redacting_stderr};

/// One secret found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// Rule id, e.g. `github-pat`.
    pub rule: &'static str,
    /// Byte range of the secret in the scanned text.
    pub range: Range<usize>,
}

/// Masks every secret in `text`. Borrows when nothing matches.
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = scan(text, Mode::Redact, None);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = mask(text, &found);
    // Masking changes the context around a secret (a token that was glued to another one can
    // become free-standing), so repeat until nothing matches: that makes `redact` idempotent.
    for _ in 0..8 {
        let again = scan(&out, Mode::Redact, None);
        if again.is_empty() {
            break;
        }
        out = mask(&out, &again);
    }
    Cow::Owned(out)
}

/// `text` with every occurrence of one known secret value replaced by `mark` (the key or token
/// a request sent, which a server may echo whatever its shape). Borrows when it is absent.
pub fn mask_value<'t>(text: &'t str, secret: &str, mark: &str) -> Cow<'t, str> {
    if secret.is_empty() || !text.contains(secret) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace(secret, mark))
}

/// Every secret in `text`, in order, without overlaps (a specific rule wins over
/// `generic-api-key`). See the module documentation for how this differs from [`redact`].
pub fn find_secrets(text: &str) -> Vec<SecretMatch> {
    scan(text, Mode::Detect, None)
}

/// [`find_secrets`] in a text of the file at `path`: gitleaks' rules for some kinds of file
/// (Terraform passwords, Kubernetes secrets, NuGet configuration) run only here, and its
/// allowlisted paths (lock files, images) are left out.
pub fn find_secrets_in(path: &str, text: &str) -> Vec<SecretMatch> {
    scan(text, Mode::Detect, Some(path))
}

/// Whether one of gitleaks' rules for some kinds of file applies to the file at `path`
/// ([`find_file_secrets`]).
pub fn has_file_rules(path: &str) -> bool {
    imported::file_rules(path).next().is_some()
}

/// The secrets the rules for the kind of file at `path` find in `text`, all its added lines:
/// their values may be lines away from what names them (a Kubernetes secret's `data:`).
pub fn find_file_secrets(path: &str, text: &str) -> Vec<SecretMatch> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for i in imported::file_rules(path) {
        if imported::has_keyword(i, &lower) {
            imported::find(i, text, Mode::Detect, Some(path), &mut found);
        }
    }
    resolve(found, Mode::Detect)
}

/// A human name for a rule id (`github-pat` → `GitHub personal access token`).
pub fn rule_name(rule: &str) -> Option<&'static str> {
    match rule {
        PRIVATE_KEY => return Some("private key"),
        AWS_SECRET => return Some("AWS secret access key"),
        URL_PASSWORD => return Some("password in a URL"),
        _ => {}
    }
    RULES
        .iter()
        .find(|r| r.id == rule)
        .map(|r| r.name)
        .or_else(|| imported::name(rule))
}

/// Rule id of the `generic-api-key` rule, whose matches are less certain than the others.
pub const GENERIC: &str = "generic-api-key";
pub(super) const PRIVATE_KEY: &str = "private-key";
/// An AWS secret access key: named as one (`aws_secret_access_key = …`), or a 40-character
/// key-shaped value within a few lines of an AWS access key ID (the pair is how they leak).
pub(super) const AWS_SECRET: &str = "aws-secret-access-key";
/// The password of a `scheme://user:password@host` URL.
pub(super) const URL_PASSWORD: &str = "url-password";
/// Lines either side of an AWS access key ID searched for its secret key.
pub(super) const AWS_PAIR_LINES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Redact,
    Detect,
}

pub(super) fn scan(text: &str, mode: Mode, path: Option<&str>) -> Vec<SecretMatch> {
    let c = &*COMPILED;
    let mut found = Vec::new();
    if mode == Mode::Redact {
        find_known(text, &mut found);
    }
    let present = c.present(text);
    if !present.any() {
        return resolve(found, mode);
    }
    let bytes = text.as_bytes();
    for (i, (rule, re)) in RULES.iter().zip(&c.rules).enumerate() {
        if present.rules & (1 << i) == 0 {
            continue;
        }
        let re = re.get_or_init(|| compile(rule.pattern));
        let mut at = 0;
        while let Some(m) = re.find_at(text, at) {
            let mut range = m.range();
            if rule.id == "github-app-token" {
                // A sentence ending right after a token is not part of it.
                while range.end > range.start && bytes[range.end - 1] == b'.' {
                    range.end -= 1;
                }
            }
            let ok = (!rule.left || left_boundary(bytes, range.start))
                && rule
                    .right
                    .is_none_or(|f| bytes.get(range.end).is_none_or(|&b| !f(b)));
            if !ok {
                // Try again one character later: a longer candidate may hide a valid one.
                at = next_char(text, range.start);
                continue;
            }
            at = range.end.max(next_char(text, range.start));
            let token = &text[range.clone()];
            if rule.allow.is_some_and(|f| f(token))
                || entropy(token) < rule.min_entropy
                || rule.plausible.is_some_and(|f| !f(token))
                || imported::allowed_own(
                    rule.id,
                    token,
                    &text[imported::line_of(text, &range)],
                    path,
                )
            {
                continue;
            }
            found.push(SecretMatch {
                rule: rule.id,
                range,
            });
        }
    }
    for i in present.imported() {
        for window in keyword_windows(text, &present.imported_at, i) {
            let base = window.start;
            let before = found.len();
            imported::find(i, &text[window], mode, path, &mut found);
            for m in &mut found[before..] {
                m.range = base + m.range.start..base + m.range.end;
            }
        }
    }
    if present.private_key {
        private_keys(text, mode, &mut found);
    }
    if present.url {
        url_passwords(text, mode, &mut found);
    }
    if present.aws_secret_name {
        named_aws_secrets(text, &mut found);
    }
    if found.iter().any(|m| m.rule == "aws-access-token") {
        paired_aws_secrets(text, mode, &mut found);
    }
    resolve(found, mode)
}

/// The parts of `text` rule `rule` of gitleaks' catalog runs on: the line of each of its
/// keywords (in `at`, (rule, offset)) with the lines its matches may reach either side
/// ([`imported::reach`]), merged where they are close ([`WINDOW_GAP`]). Its matches hold a
/// keyword, and a long text (a file's diff) holds common keywords (`key`, `token`) all over:
/// searching every rule whose keyword is somewhere in it over all of it was most of a
/// review's time.
fn keyword_windows(text: &str, at: &[(usize, usize)], rule: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let line_start = |i: usize| memchr::memrchr(b'\n', &bytes[..i]).map_or(0, |n| n + 1);
    let line_end = |i: usize| memchr::memchr(b'\n', &bytes[i..]).map_or(bytes.len(), |n| i + n);
    let mut windows: Vec<Range<usize>> = Vec::new();
    for &(_, k) in at.iter().filter(|(r, _)| *r == rule) {
        if windows.last().is_some_and(|w| k < w.end) {
            continue;
        }
        let (mut start, mut end) = (line_start(k), line_end(k));
        for _ in 0..imported::reach(rule) {
            start = if start > 0 { line_start(start - 1) } else { 0 };
            end = if end < bytes.len() {
                line_end(end + 1)
            } else {
                end
            };
        }
        match windows.last_mut() {
            Some(last) if start <= last.end + WINDOW_GAP => last.end = end,
            _ => windows.push(start..end),
        }
    }
    windows
}

/// Windows of [`keyword_windows`] closer than this are searched as one: a search has a cost
/// of its own, and a file of code holds `key` or `token` every few lines (searching around
/// each one was several times slower than searching the stretch).
const WINDOW_GAP: usize = 4096;

/// Sorts matches and removes overlaps. Redaction merges overlapping ranges so every byte of
/// each is masked; detection keeps one match per place, preferring a specific rule.
fn resolve(mut found: Vec<SecretMatch>, mode: Mode) -> Vec<SecretMatch> {
    found.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
    });
    let mut out: Vec<SecretMatch> = Vec::with_capacity(found.len());
    for m in found {
        match out.last_mut() {
            Some(last) if m.range.start < last.range.end => match mode {
                Mode::Redact => last.range.end = last.range.end.max(m.range.end),
                Mode::Detect => {
                    if last.rule == GENERIC && m.rule != GENERIC {
                        *last = m;
                    }
                }
            },
            _ => out.push(m),
        }
    }
    out
}

fn mask(text: &str, found: &[SecretMatch]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for m in found {
        out.push_str(&text[at..m.range.start]);
        out.push_str("[REDACTED ");
        out.push_str(m.rule);
        out.push(']');
        // Keep line breaks so masked text keeps its line numbers; in a diff, keep each line's
        // `+`/`-`/` ` marker (recognised by the first line carrying the same marker).
        let secret = &text[m.range.clone()];
        let line_start = text[..m.range.start].rfind('\n').map_or(0, |i| i + 1);
        let marker = text.as_bytes()[line_start..m.range.start]
            .first()
            .copied()
            .filter(|b| matches!(b, b'+' | b'-' | b' '));
        let mut lines = secret.split('\n').peekable();
        while let Some(line) = lines.next() {
            let Some(next) = lines.peek() else { break };
            if line.ends_with('\r') {
                out.push('\r');
            }
            out.push('\n');
            if let Some(mk) = marker
                && next.as_bytes().first() == Some(&mk)
            {
                out.push(char::from(mk));
            }
        }
        at = m.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether a token starting at `start` is not glued to a preceding word. An ANSI colour code
/// (`\x1b[31m`, also written `\u001b[…m`) or a string escape (`\n`, `\r`, `\t`) counts as a
/// separator.
fn left_boundary(bytes: &[u8], start: usize) -> bool {
    let Some(&prev) = start.checked_sub(1).and_then(|i| bytes.get(i)) else {
        return true;
    };
    if !is_word(prev) {
        return true;
    }
    let before = &bytes[..start];
    if matches!(prev, b'n' | b'r' | b't') && before.len() >= 2 && before[before.len() - 2] == b'\\'
    {
        return true;
    }
    if prev == b'm' {
        let mut i = before.len() - 1;
        while i > 0 && (before[i - 1].is_ascii_digit() || before[i - 1] == b';') {
            i -= 1;
        }
        if i > 0 && before[i - 1] == b'[' {
            let esc = &before[..i - 1];
            return [
                &b"\x1b"[..],
                b"\\x1b",
                b"\\x1B",
                b"\\u001b",
                b"\\u001B",
                b"\\033",
                b"\\e",
            ]
            .iter()
            .any(|e| esc.ends_with(e));
        }
    }
    false
}

pub(super) fn next_char(text: &str, i: usize) -> usize {
    text[i..]
        .chars()
        .next()
        .map_or(text.len(), |c| i + c.len_utf8())
}

pub(super) fn floor_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn longest_digit_run(s: &str) -> usize {
    s.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// Shannon entropy of `s` in bits per byte.
pub fn entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}
