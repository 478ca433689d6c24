//! Merging findings from several lenses (`docs/contract.md` "Merging").
//!
//! Two findings are one when they name the same file and side, their line ranges overlap or lie
//! within [`NEAR_LINES`] lines, and they speak of the same problem. "Same problem" cannot be the
//! same title — lenses word things differently — so it is judged from the words of title and
//! body: a shared problem category (injection, secret, race, …) or enough shared
//! significant words, and never two different categories.

use std::collections::BTreeSet;

use crate::review::finding::{Finding, disambiguate};
use crate::review::{Confidence, Severity};

/// How far apart (in lines) two findings may be and still be one.
pub const NEAR_LINES: u32 = 3;

/// The merged findings of a round, in a deterministic order.
pub fn merge(findings: Vec<Finding>, min_blocking_confidence: Confidence) -> Vec<Finding> {
    merge_explained(&findings, min_blocking_confidence)
        .into_iter()
        .map(|(f, _)| f)
        .collect()
}

/// Like [`merge`], with each merged finding's members: indices into `findings` (for evidence).
pub fn merge_explained(
    findings: &[Finding],
    min_blocking_confidence: Confidence,
) -> Vec<(Finding, Vec<usize>)> {
    // Most severe and most confident first, so each cluster's representative comes first.
    let mut order_idx: Vec<usize> = (0..findings.len()).collect();
    order_idx.sort_by(|&a, &b| order(&findings[a], &findings[b]));
    let signatures: Vec<Signature> = findings.iter().map(Signature::of).collect();

    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for &i in &order_idx {
        let f = &findings[i];
        let home = clusters.iter_mut().find(|c| {
            let lead = &findings[c[0]];
            // A lens that reported two findings meant two problems.
            !c.iter()
                .any(|&j| findings[j].lenses.iter().any(|l| f.lenses.contains(l)))
                && near(lead, f)
                && c.iter()
                    .any(|&j| signatures[j].same_problem(&signatures[i]))
        });
        match home {
            Some(c) => c.push(i),
            None => clusters.push(vec![i]),
        }
    }

    let mut merged: Vec<(Finding, Vec<usize>)> = clusters
        .into_iter()
        .map(|c| {
            (
                combine(c.iter().map(|&i| &findings[i]), min_blocking_confidence),
                c,
            )
        })
        .collect();
    merged.sort_by(|a, b| order(&a.0, &b.0));
    let mut seen = BTreeSet::new();
    for (f, _) in &mut merged {
        unique_fingerprint(f, &mut seen);
    }
    merged
}

/// Severity, confidence, path, line — the order every output shows.
fn order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (
        a.severity,
        a.confidence,
        &a.path,
        a.line,
        a.start_line,
        a.side,
        &a.title,
    )
        .cmp(&(
            b.severity,
            b.confidence,
            &b.path,
            b.line,
            b.start_line,
            b.side,
            &b.title,
        ))
}

fn near(a: &Finding, b: &Finding) -> bool {
    if a.path != b.path || a.side != b.side {
        return false;
    }
    let (a0, a1) = (a.start_line.unwrap_or(a.line), a.line);
    let (b0, b1) = (b.start_line.unwrap_or(b.line), b.line);
    a0 <= b1.saturating_add(NEAR_LINES) && b0 <= a1.saturating_add(NEAR_LINES)
}

/// One finding from a cluster: the wording and place of its most severe, most confident member
/// (preferring one on the diff), the most severe severity, the highest confidence raised a step
/// when two or more lenses agree, then demoted to advisory below `min_blocking_confidence`.
fn combine<'a>(members: impl Iterator<Item = &'a Finding>, min_blocking: Confidence) -> Finding {
    let members: Vec<&Finding> = members.collect();
    let lead = members.iter().find(|f| f.in_diff).unwrap_or(&members[0]);
    let mut out = (*lead).clone();
    out.severity = members
        .iter()
        .map(|f| f.severity)
        .min()
        .unwrap_or(out.severity);
    out.confidence = members
        .iter()
        .map(|f| f.confidence)
        .min()
        .unwrap_or(out.confidence);
    let mut lenses: Vec<_> = members
        .iter()
        .flat_map(|f| f.lenses.iter().cloned())
        .collect();
    lenses.sort();
    lenses.dedup();
    if lenses.len() >= 2 {
        out.confidence = out.confidence.raised();
    }
    out.lenses = lenses;
    // A member checked by cross-examination carries its verdict into the merge (per-lens
    // posting merges again after verification).
    if out.verified.is_none() {
        out.verified = members.iter().find_map(|f| f.verified.clone());
    }
    // A suggestion from another member fits only if it replaces the same lines.
    if out.suggestion.is_none() {
        out.suggestion = members
            .iter()
            .find(|f| {
                f.suggestion.is_some() && (f.line, f.start_line) == (out.line, out.start_line)
            })
            .and_then(|f| f.suggestion.clone());
    }
    // Confidence is ordered most confident first, so "below" is "greater than".
    if out.severity == Severity::Blocking && out.confidence > min_blocking {
        out.severity = Severity::Advisory;
    }
    out
}

/// Two different problems on the same lines share a base fingerprint; give the later ones
/// (in output order) a distinct one so markers and dedupe can tell them apart.
fn unique_fingerprint(f: &mut Finding, seen: &mut BTreeSet<String>) {
    if !seen.insert(f.fingerprint.clone()) {
        f.fingerprint = disambiguate(&f.fingerprint, &f.title);
        seen.insert(f.fingerprint.clone());
    }
}

/// What a finding is about, for "same problem" decisions.
#[derive(Debug)]
struct Signature {
    categories: u32,
    title: BTreeSet<String>,
    words: BTreeSet<String>,
}

/// Problem categories and the word stems that signal them. A finding may hit several.
const CATEGORIES: &[&[&str]] = &[
    &[
        "inject", "sql", "xss", "sanitiz", "escap", "unescap", "shell", "command", "interpol",
    ],
    &[
        "secret",
        "token",
        "credential",
        "password",
        "apikey",
        "key",
        "leak",
        "expos",
    ],
    &[
        "race",
        "concurren",
        "deadlock",
        "lock",
        "mutex",
        "atomic",
        "thread",
        "synchroniz",
    ],
    &[
        "null",
        "nil",
        "none",
        "unwrap",
        "panic",
        "crash",
        "dereferenc",
        "option",
    ],
    &["overflow", "underflow", "bound", "index", "off", "truncat"],
    &[
        "error",
        "exception",
        "fail",
        "ignor",
        "swallow",
        "propagat",
        "handl",
    ],
    &["leak", "resourc", "close", "drop", "free", "memory"],
    &[
        "perform",
        "slow",
        "quadratic",
        "alloc",
        "loop",
        "n+1",
        "ineffici",
    ],
    &[
        "debug",
        "dbg",
        "consol",
        "print",
        "breakpoint",
        "pdb",
        "debugger",
    ],
    &["conflict", "marker", "merg"],
    &[
        "bidi",
        "invisibl",
        "unicod",
        "trojan",
        "zero-width",
        "control",
    ],
    &[
        "auth", "permiss", "privileg", "access", "authoriz", "authent",
    ],
    &["test", "coverag", "assert"],
    &["nam", "typo", "spell", "comment", "doc", "style", "format"],
];

/// Words too common in review text to say what a finding is about.
const STOP: &[&str] = &[
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "be", "this",
    "that", "it", "its", "with", "as", "at", "by", "from", "not", "no", "can", "may", "will",
    "should", "could", "would", "when", "if", "then", "than", "which", "what", "where", "here",
    "there", "use", "using", "used", "line", "lines", "code", "function", "method", "value",
    "values", "call", "calls", "called", "change", "changes", "new", "old", "file", "instead",
    "make", "sure", "also", "but", "so", "do", "does", "have", "has", "was", "were", "been",
    "into", "out", "up", "only", "all", "any", "one", "two", "more", "less", "before", "after",
];

impl Signature {
    fn of(f: &Finding) -> Signature {
        let title = stems(&f.title);
        let mut words = title.clone();
        words.extend(stems(&f.body));
        let categories = CATEGORIES
            .iter()
            .enumerate()
            .filter(|(_, signals)| {
                title
                    .iter()
                    .any(|w| signals.iter().any(|s| w.starts_with(s)))
            })
            .fold(0u32, |acc, (i, _)| acc | (1 << i));
        Signature {
            categories,
            title,
            words,
        }
    }

    fn same_problem(&self, other: &Signature) -> bool {
        if self.categories != 0 && other.categories != 0 {
            // Categories come from titles, which name the problem; agreeing on one is enough,
            // and disagreeing on all is decisive.
            return self.categories & other.categories != 0;
        }
        overlap(&self.title, &other.title) >= 0.5 || jaccard(&self.words, &other.words) >= 0.3
    }
}

/// Lower-cased significant words, crudely stemmed so `injection`/`injected` meet.
fn stems(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '+'))
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .filter(|w| !STOP.contains(&w.as_str()))
        .map(|w| {
            for suffix in [
                "ations", "ation", "ions", "ion", "ing", "ed", "es", "s", "e",
            ] {
                if w.len() > suffix.len() + 3
                    && let Some(stem) = w.strip_suffix(suffix)
                {
                    return stem.to_owned();
                }
            }
            w
        })
        .collect()
}

fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let small = a.len().min(b.len());
    if small == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / small as f64
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Side;
    use crate::ids::LensName;

    fn finding(
        lens: &str,
        line: u32,
        sev: Severity,
        conf: Confidence,
        title: &str,
        body: &str,
    ) -> Finding {
        Finding {
            path: "src/db.rs".into(),
            line,
            start_line: None,
            side: Side::Right,
            severity: sev,
            confidence: conf,
            title: title.into(),
            body: body.into(),
            lenses: vec![LensName::new(lens)],
            in_diff: true,
            fingerprint: format!("fp{line}"),
            suggestion: None,
            verified: None,
        }
    }

    #[test]
    fn same_problem_worded_differently_merges_and_raises_confidence() {
        let a = finding(
            "claude",
            42,
            Severity::Blocking,
            Confidence::Medium,
            "SQL injection in user lookup",
            "The name is formatted into the query string; use a bound parameter.",
        );
        let b = finding(
            "terra",
            44,
            Severity::Advisory,
            Confidence::Medium,
            "User input concatenated into SQL",
            "Untrusted input reaches the database query unescaped. Parameterise it.",
        );
        let merged = merge(vec![a, b], Confidence::Medium);
        assert_eq!(merged.len(), 1, "{merged:#?}");
        let m = &merged[0];
        assert_eq!(m.severity, Severity::Blocking);
        assert_eq!(m.confidence, Confidence::High);
        assert_eq!(
            m.lenses,
            vec![LensName::new("claude"), LensName::new("terra")]
        );
        assert_eq!(m.title, "SQL injection in user lookup");
    }

    #[test]
    fn different_problems_on_the_same_line_stay_apart() {
        let a = finding(
            "claude",
            42,
            Severity::Blocking,
            Confidence::High,
            "SQL injection in user lookup",
            "Bind it.",
        );
        let b = finding(
            "terra",
            42,
            Severity::Advisory,
            Confidence::Medium,
            "Error from execute is silently ignored",
            "The Result is dropped; propagate the failure.",
        );
        assert_eq!(merge(vec![a, b], Confidence::Medium).len(), 2);
    }

    #[test]
    fn far_apart_or_other_file_stays_apart() {
        let a = finding(
            "claude",
            10,
            Severity::Advisory,
            Confidence::High,
            "Leftover dbg! macro",
            "Remove it.",
        );
        let b = finding(
            "terra",
            14,
            Severity::Advisory,
            Confidence::High,
            "Leftover dbg! macro",
            "Remove it.",
        );
        assert_eq!(
            merge(vec![a.clone(), b.clone()], Confidence::Medium).len(),
            2
        );
        let mut c = b.clone();
        c.line = 13;
        assert_eq!(merge(vec![a.clone(), c], Confidence::Medium).len(), 1);
        let mut d = b;
        d.line = 10;
        d.path = "src/other.rs".into();
        assert_eq!(merge(vec![a, d], Confidence::Medium).len(), 2);
    }

    #[test]
    fn one_lens_never_merges_with_itself() {
        let a = finding(
            "claude",
            10,
            Severity::Advisory,
            Confidence::High,
            "Leftover dbg! macro",
            "Remove it.",
        );
        let b = finding(
            "claude",
            11,
            Severity::Advisory,
            Confidence::High,
            "Leftover dbg! macro",
            "Remove it.",
        );
        assert_eq!(merge(vec![a, b], Confidence::Medium).len(), 2);
    }

    #[test]
    fn low_confidence_blocking_becomes_advisory() {
        let a = finding(
            "claude",
            3,
            Severity::Blocking,
            Confidence::Low,
            "Possible race on counter",
            "Maybe.",
        );
        let m = merge(vec![a], Confidence::Medium);
        assert_eq!(
            (m[0].severity, m[0].confidence),
            (Severity::Advisory, Confidence::Low)
        );
        // Two lenses agreeing lift it to medium, which keeps it blocking.
        let a = finding(
            "claude",
            3,
            Severity::Blocking,
            Confidence::Low,
            "Possible race on counter",
            "Maybe.",
        );
        let b = finding(
            "terra",
            4,
            Severity::Advisory,
            Confidence::Low,
            "Data race: counter is not atomic",
            "Two threads.",
        );
        let m = merge(vec![a, b], Confidence::Medium);
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0].severity, m[0].confidence),
            (Severity::Blocking, Confidence::Medium)
        );
    }

    #[test]
    fn order_is_severity_confidence_path_line() {
        let mut out = merge(
            vec![
                finding(
                    "a",
                    50,
                    Severity::Advisory,
                    Confidence::High,
                    "Typo in name",
                    "x",
                ),
                finding(
                    "a",
                    90,
                    Severity::Blocking,
                    Confidence::Medium,
                    "Unchecked index may panic",
                    "x",
                ),
                finding(
                    "a",
                    20,
                    Severity::Blocking,
                    Confidence::High,
                    "Token committed",
                    "x",
                ),
                finding(
                    "a",
                    10,
                    Severity::Blocking,
                    Confidence::Medium,
                    "Deadlock on lock order",
                    "x",
                ),
            ],
            Confidence::Low,
        );
        let lines: Vec<u32> = out.iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![20, 10, 90, 50]);
        out.reverse();
        let again = merge(out, Confidence::Low);
        assert_eq!(
            again.iter().map(|f| f.line).collect::<Vec<_>>(),
            vec![20, 10, 90, 50]
        );
    }

    #[test]
    fn fingerprints_are_unique_within_a_round() {
        let mut a = finding(
            "a",
            5,
            Severity::Blocking,
            Confidence::High,
            "SQL injection",
            "x",
        );
        let mut b = finding(
            "a",
            5,
            Severity::Advisory,
            Confidence::High,
            "Misspelled variable name",
            "x",
        );
        a.fingerprint = "same".into();
        b.fingerprint = "same".into();
        let m = merge(vec![a, b], Confidence::Medium);
        assert_eq!(m.len(), 2);
        assert_ne!(m[0].fingerprint, m[1].fingerprint);
        assert_eq!(m[0].fingerprint, "same");
    }
}
