//! All user-facing text: terminal, JSON, Markdown, SARIF.
//!
//! Lens text is untrusted: every renderer passes it through [`clean`], which masks secrets and
//! disarms what could act on its own once posted or printed (hidden markers, mentions,
//! workflow commands).

pub mod json;
pub mod markdown;
pub mod progress;
pub mod sarif;
pub mod text;

use std::borrow::Cow;
use std::fmt::Write;

use crate::lens::{LensStatus, Provenance};
use crate::redact::redact;
use crate::review::{NotReviewedReason, Report, Severity, Verdict};

/// Output formats of `reviewbot review`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Sarif,
}

/// Untrusted text made safe to show or post: secrets masked, HTML comments (which could forge
/// a reviewbot marker or hide text) made visible, `@mentions` put in code spans so nobody is
/// pinged, and no line left starting a workflow command (`::`).
pub fn clean(text: &str) -> String {
    let text = redact(text);
    let text = reveal_invisible(&text);
    let text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;");
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line = if line.trim_start().starts_with("::") {
            Cow::Owned(format!(" {line}"))
        } else {
            Cow::Borrowed(line)
        };
        neutralise_mentions(&line, &mut out);
    }
    out
}

/// Bidi controls and invisible characters shown as `<U+202E>`: printed raw they reorder or
/// hide text in a terminal or a comment (Trojan Source).
pub fn reveal_invisible(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || !text.chars().any(is_invisible) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_invisible(c) {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Format characters that change how text displays without being seen: bidi controls,
/// zero-width characters, tag characters, variation selectors and the like.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{E0000}'..='\u{E007F}'
        | '\u{E0100}'..='\u{E01EF}')
}

/// `@user` and `@org/team` become `` `@user` `` — still readable, never a notification.
fn neutralise_mentions(line: &str, out: &mut String) {
    let bytes = line.as_bytes();
    let mut last = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'@', &bytes[i..]) {
        let at = i + off;
        // An email address or a `@` inside a word is not a mention.
        let starts_word =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'`');
        let mut end = at + 1;
        while end < bytes.len()
            && (bytes[end].is_ascii_alphanumeric() || matches!(bytes[end], b'-' | b'_' | b'/'))
        {
            end += 1;
        }
        let in_code = bytes[i..at].iter().filter(|&&b| b == b'`').count() % 2 == 1
            || line[..at].matches('`').count() % 2 == 1;
        if starts_word && end > at + 1 && !in_code {
            out.push_str(&line[last..at]);
            out.push('`');
            out.push_str(&line[at..end]);
            out.push('`');
            last = end;
        }
        i = end.max(at + 1);
    }
    out.push_str(&line[last..]);
}

/// `Verdict: 1 blocking, 3 advisory.`
pub fn verdict_line(v: Verdict) -> String {
    format!("Verdict: {} blocking, {} advisory.", v.blocking, v.advisory)
}

/// What a skipped review says instead of a body: why no round ran, and — for a head already
/// reviewed — that round's verdict.
pub fn skipped_text(report: &Report) -> Option<String> {
    let reason = report.skipped.as_deref()?;
    let why = match reason {
        "already_reviewed" => match (report.round, &report.head) {
            (Some(round), Some(head)) => format!(
                "Round {round} already reviewed head {}; nothing new to post. {}",
                head.short(),
                verdict_line(report.verdict())
            ),
            _ => "This head was already reviewed; nothing new to post.".to_owned(),
        },
        "opt_out" => "Not reviewed: the PR carries the opt-out label.".to_owned(),
        "draft" => "Not reviewed: the PR is a draft.".to_owned(),
        "closed" => "Not reviewed: the PR is closed.".to_owned(),
        "too_many_files" => "Not reviewed: the PR changes more files than max_files.".to_owned(),
        "all_ignored" => "Not reviewed: every changed file is in ignore_paths.".to_owned(),
        other => format!("Not reviewed ({other})."),
    };
    Some(format!("{why}\n"))
}

/// `Blocking` / `Advisory`.
pub fn severity_word(s: Severity) -> &'static str {
    match s {
        Severity::Blocking => "Blocking",
        Severity::Advisory => "Advisory",
    }
}

/// `claude (claude-opus-5), builtin` — who reviewed.
pub fn reviewers(lenses: &[Provenance]) -> String {
    let names: Vec<String> = lenses
        .iter()
        .map(|l| match &l.model {
            Some(model) => format!("{} ({model})", l.lens),
            None => l.lens.to_string(),
        })
        .collect();
    names.join(", ")
}

/// One line per failed lens, e.g. `terra failed: timed out after 300s`.
pub fn failed_lenses(report: &Report) -> Vec<String> {
    report
        .lenses
        .iter()
        .filter(|l| l.status == LensStatus::Failed)
        .map(|l| {
            format!(
                "{} failed: {}",
                l.lens,
                clean(l.error.as_deref().unwrap_or("no reason given"))
            )
        })
        .collect()
}

pub fn not_reviewed_reason(r: NotReviewedReason) -> &'static str {
    match r {
        NotReviewedReason::Binary => "binary file",
        NotReviewedReason::NoPatch => "no patch from GitHub",
        NotReviewedReason::TooLarge => "too large",
        NotReviewedReason::Ignored => "ignored by ignore_paths",
        NotReviewedReason::OverBudget => "over the token budget",
    }
}

/// `path:line` or `path:start-line`, with `(old)` for a finding on removed lines.
pub fn place(path: &str, start_line: Option<u32>, line: u32, side: crate::diff::Side) -> String {
    let mut s = String::new();
    let _ = match start_line {
        Some(start) => write!(s, "{path}:{start}-{line}"),
        None => write!(s, "{path}:{line}"),
    };
    if side == crate::diff::Side::Left {
        s.push_str(" (old)");
    }
    s
}

/// The error for a diff piped in with colour: its ANSI codes hide every header from the parser.
pub fn coloured_diff(input: &str) -> String {
    format!(
        "{input} is a coloured diff (ANSI colour codes, as `git diff --color=always` writes); \
         reviewbot reads plain diffs: use `git diff --no-color` (or `git diff` into a pipe, \
         without --color=always)"
    )
}

/// The notice when no lens was configured or named.
pub const NOTICE_BUILTIN_ONLY: &str = "notice: no lens configured; reviewing with the builtin lens (no model). See --lens and the config file.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_disarms_untrusted_text() {
        assert_eq!(
            clean("cc @alice and @org/team-x"),
            "cc `@alice` and `@org/team-x`"
        );
        assert_eq!(clean("mail me at a@b.com"), "mail me at a@b.com");
        assert_eq!(clean("in code `@alice` stays"), "in code `@alice` stays");
        assert_eq!(
            clean("<!-- reviewbot round=9 -->"),
            "&lt;!-- reviewbot round=9 --&gt;"
        );
        assert_eq!(
            clean("ok\n::set-output name=x::y"),
            "ok\n ::set-output name=x::y"
        );
        assert_eq!(clean("  ::add-mask::v"), "   ::add-mask::v");
        assert_eq!(clean("plain text"), "plain text");
        assert_eq!(clean("a\u{202E}b\u{200B}c"), "a<U+202E>b<U+200B>c");
        assert_eq!(clean("caf\u{e9}"), "caf\u{e9}");
    }
}
