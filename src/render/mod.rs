//! All user-facing text: terminal, JSON, Markdown, SARIF, and the flow's notices.
//!
//! Lens text is untrusted: every renderer passes it through [`clean`], which masks secrets and
//! disarms what could act on its own once posted or printed (hidden markers, mentions,
//! workflow commands).

pub mod check;
pub mod conversation;
pub mod disarm;
pub mod eval;
pub mod json;
pub mod markdown;
pub mod notice;
pub mod progress;
pub mod sarif;
pub mod stats;
pub mod text;

use std::fmt::Write;

use crate::lens::{LensStatus, Provenance};
use crate::redact::redact;
use crate::review::gate::SkipReason;
use crate::review::{NotReviewedReason, Report, Severity, Verdict};
use crate::sanitize::sanitize;

/// Output formats of `reviewbot review`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Sarif,
}

/// Untrusted text made safe to show or post: hidden content removed ([`sanitize`]), secrets
/// masked, anything left that looks like an HTML comment (a forged reviewbot marker) escaped,
/// every `@` outside code that could notify someone made `＠`, and no line left that the
/// Actions runner would read as a workflow command ([`disarm::prose`]). Text that is cut to a
/// length is [`mask`]ed, cut, then disarmed: a cut through a code span could free a mention.
pub fn clean(text: &str) -> String {
    disarm::prose(&mask(text))
}

/// Untrusted text with hidden content removed and secrets masked: [`clean`] before disarming.
pub fn mask(text: &str) -> String {
    redact(&sanitize(text)).into_owned()
}

/// A file's path (or `path:line`) for a posted body, as one inline code span: sanitized on one
/// line, masked, and unable to notify anyone whatever text precedes it ([`disarm::code`]).
pub fn code_path(path: &str) -> String {
    let one_line = crate::sanitize::sanitize_line(path);
    disarm::code(&redact(&one_line))
}

/// Code from the diff made safe to print: secrets masked, never stripped — hidden characters
/// and control characters (ANSI escapes could rewrite a terminal) shown as `<U+202E>`.
pub fn clean_code(text: &str) -> String {
    let text = redact(text);
    let text = crate::unicode::escape(&text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\t' {
            let _ = write!(out, "<U+{:04X}>", u32::from(c));
        } else {
            out.push(c);
        }
    }
    disarm::commands(&out)
}

/// `Verdict: 1 blocking, 3 advisory.`
pub fn verdict_line(v: Verdict) -> String {
    format!("Verdict: {} blocking, {} advisory.", v.blocking, v.advisory)
}

/// What a skipped review says instead of a body: why no round ran, and — for a head already
/// reviewed — that round's verdict.
pub fn skipped_text(report: &Report) -> Option<String> {
    let reason = report.skipped.as_ref()?;
    let why = match reason {
        SkipReason::AlreadyReviewed => match (report.round, &report.head) {
            (Some(round), Some(head)) => format!(
                "Round {round} already reviewed head {}; nothing new to post. {}",
                head.short(),
                verdict_line(report.verdict())
            ),
            _ => "This head was already reviewed; nothing new to post.".to_owned(),
        },
        SkipReason::OptOut { .. } => "Not reviewed: the PR carries the opt-out label.".to_owned(),
        SkipReason::Draft => "Not reviewed: the PR is a draft.".to_owned(),
        SkipReason::Closed => "Not reviewed: the PR is closed.".to_owned(),
        SkipReason::TooManyFiles { .. } => {
            "Not reviewed: the PR changes more files than max_files.".to_owned()
        }
        SkipReason::AllIgnored => "Not reviewed: every changed file is in ignore_paths.".to_owned(),
        SkipReason::BotAuthor { .. } => {
            "Not reviewed: a bot account opened the PR (review_bots = true reviews such PRs)."
                .to_owned()
        }
        SkipReason::NotTriggerLabel { .. } => {
            "Not reviewed: the label added is not the trigger label.".to_owned()
        }
        SkipReason::NotPermitted { .. } => {
            "Not reviewed: only a user who may write to the repository can ask for a round."
                .to_owned()
        }
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

/// What the round cost, as the body's last visible line: each lens that reported its tokens or
/// its cost, e.g. `Cost: claude 12,340 in / 1,020 out tokens ($0.031); terra 8,100 in / 640
/// out tokens.` `None` when no lens reported either (the builtin lens alone).
pub fn cost_line(lenses: &[Provenance]) -> Option<String> {
    let parts: Vec<String> = lenses
        .iter()
        .filter_map(|l| {
            let tokens = l.usage.map(|u| {
                format!(
                    "{} in / {} out tokens",
                    thousands(u.input_tokens),
                    thousands(u.output_tokens)
                )
            });
            let cost = l.cost_usd.map(dollars);
            let said = match (tokens, cost) {
                (Some(t), Some(c)) => format!("{t} ({c})"),
                (Some(t), None) => t,
                (None, Some(c)) => c,
                (None, None) => return None,
            };
            // A verifier's call is named apart from the same lens's review.
            match l.role {
                crate::lens::Role::Verify => Some(format!("{} (verify) {said}", l.lens)),
                crate::lens::Role::Review => Some(format!("{} {said}", l.lens)),
            }
        })
        .collect();
    (!parts.is_empty()).then(|| format!("Cost: {}.", parts.join("; ")))
}

/// `12340` as `12,340`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A cost in dollars: cents from a dollar up, else to a tenth of a cent; what rounds to nothing
/// is said to be under it.
pub fn dollars(usd: f64) -> String {
    if usd > 0.0 && usd < 0.0005 {
        "<$0.001".to_owned()
    } else if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.3}")
    }
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

/// One line per lens whose findings were cut at the per-lens cap.
pub fn capped_lenses(report: &Report) -> Vec<String> {
    report
        .lenses
        .iter()
        .filter_map(|l| {
            let n = l.findings_dropped?;
            let s = if n == 1 { "" } else { "s" };
            Some(format!(
                "{} reported {n} more finding{s} than the {} a lens may contribute; they are not shown.",
                l.lens,
                crate::lens::parse::MAX_FINDINGS_PER_LENS
            ))
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
        NotReviewedReason::Generated => {
            "generated (Linguist's defaults or linguist-generated in .gitattributes)"
        }
        NotReviewedReason::Vendored => {
            "vendored (Linguist's defaults or linguist-vendored in .gitattributes)"
        }
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

    fn ran(lens: &str, usage: Option<(u64, u64)>, cost_usd: Option<f64>) -> Provenance {
        use crate::lens::{AuthClass, BackendKind, Usage};
        Provenance {
            lens: crate::ids::LensName::new(lens),
            role: Default::default(),
            requested_backend: BackendKind::ClaudeCli,
            actual_backend: BackendKind::ClaudeCli,
            auth_class: AuthClass::Subscription,
            model: None,
            fallback_source: None,
            status: LensStatus::Ok,
            error: None,
            latency_ms: 1,
            usage: usage.map(|(input_tokens, output_tokens)| Usage {
                input_tokens,
                output_tokens,
            }),
            cost_usd,
            calls: None,
            findings_dropped: None,
            tool_calls: None,
            summary: None,
        }
    }

    #[test]
    fn the_cost_line_names_each_lens_that_reported_usage_or_cost() {
        let lenses = [
            ran("claude", Some((12_340, 1_020)), Some(0.0314)),
            ran("terra", Some((8_100, 640)), None),
            ran("builtin", None, None),
            ran("cheap", Some((1_234_567, 0)), Some(0.0001)),
            ran("priced", None, Some(2.5)),
        ];
        insta::assert_snapshot!(cost_line(&lenses).unwrap_or_default());
        assert_eq!(cost_line(&lenses[2..3]), None);
        let report = Report {
            lenses: lenses.to_vec(),
            ..Report::empty()
        };
        let sum = report.cost_usd().unwrap_or_default();
        assert!((sum - 2.5315).abs() < 1e-9, "{sum}");
        assert_eq!(
            Report {
                lenses: lenses[1..3].to_vec(),
                ..Report::empty()
            }
            .cost_usd(),
            None
        );
    }

    #[test]
    fn the_cost_is_the_bodys_last_visible_line() {
        let report = Report {
            round: Some(2),
            head: crate::ids::HeadSha::parse(&"c".repeat(40)),
            lenses: vec![ran("claude", Some((10, 2)), Some(0.01))],
            not_reviewed: vec![crate::review::NotReviewed {
                path: "gen/a.pb.go".into(),
                reason: NotReviewedReason::Generated,
            }],
            ..Report::empty()
        };
        let opts = markdown::BodyOptions {
            opt_out_label: "reviewbot:no-review",
            max_comments: 30,
            per_lens: false,
        };
        let body = markdown::body(&report, &opts);
        let visible: Vec<&str> = body.lines().filter(|l| !l.is_empty()).collect();
        assert!(
            visible[visible.len() - 1].starts_with("<!-- reviewbot round=2 "),
            "{body}"
        );
        assert_eq!(
            visible[visible.len() - 2],
            "Cost: claude 10 in / 2 out tokens ($0.010).",
            "{body}"
        );
    }

    #[test]
    fn the_size_guards_read_well() {
        let report = Report {
            skipped: Some(SkipReason::BotAuthor {
                login: "dependabot[bot]".into(),
            }),
            ..Report::empty()
        };
        let text = [
            skipped_text(&report).unwrap_or_default(),
            not_reviewed_reason(NotReviewedReason::Generated).to_owned(),
            not_reviewed_reason(NotReviewedReason::Vendored).to_owned(),
        ];
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn clean_disarms_untrusted_text() {
        assert_eq!(
            clean("cc @alice and @org/team-x"),
            "cc ＠alice and ＠org/team-x"
        );
        assert_eq!(clean("mail me at a@b.com"), "mail me at a@b.com");
        assert_eq!(clean("in code `@alice` stays"), "in code `@alice` stays");
        assert_eq!(
            clean("text\n```\nping @alice in code\n```\nand @bob"),
            "text\n```\nping @alice in code\n```\nand ＠bob"
        );
        // Hidden comments (a forged marker among them) are removed; an escaped one stays so.
        assert_eq!(clean("a <!-- reviewbot round=9 --> b"), "a  b");
        assert_eq!(
            clean("a &lt;!-- reviewbot --> b"),
            "a &lt;!-- reviewbot --&gt; b"
        );
        assert_eq!(clean("plain text"), "plain text");
        assert_eq!(clean("a\u{202E}b\u{200B}c"), "abc");
        assert_eq!(clean("caf\u{e9}"), "caf\u{e9}");
    }

    #[test]
    fn no_line_starts_a_workflow_command() {
        for (text, want) in [
            ("ok\n::set-output name=x::y", "ok\n\\::set-output name=x::y"),
            ("  ::add-mask::v", "  \\::add-mask::v"),
            (
                "x\n```\n::stop-commands::t\n```",
                "x\n```\n\\::stop-commands::t\n```",
            ),
            ("a\r::error::x", "a\r\\::error::x"),
            ("a :: b", "a :: b"),
        ] {
            assert_eq!(clean(text), want, "{text:?}");
        }
        for text in ["::warning::x", "x\n\t::debug::y", "```\n  ::group::g"] {
            for line in clean(text).split(['\n', '\r']) {
                assert!(!line.trim_start().starts_with("::"), "{line:?}");
            }
            for line in clean_code(text).split(['\n', '\r']) {
                assert!(!line.trim_start().starts_with("::"), "{line:?}");
            }
        }
    }

    #[test]
    fn code_is_shown_escaped_not_stripped() {
        assert_eq!(
            clean_code("let a = \"\u{202E}x\u{200B}\"; \u{1b}[2J @alice"),
            "let a = \"<U+202E>x<U+200B>\"; <U+001B>[2J @alice"
        );
        assert_eq!(clean_code("\tif x {"), "\tif x {");
    }

    /// A suggestion's line breaks are its own; anything cleaning would change in a line, or a
    /// secret anywhere, keeps it from being posted.
    #[test]
    fn a_suggestion_is_clean_line_by_line() {
        use crate::render::markdown::suggestion_is_clean;
        let ten: String = (1..=10).map(|n| format!("\tlet x{n} = {n};\n")).collect();
        for text in [
            "a",
            "a\nb",
            "a\nb\n",
            "\tif x {\n\t\ty()\n\t}",
            ten.as_str(),
        ] {
            assert!(suggestion_is_clean(text), "{text:?}");
        }
        let token = format!("ghp_{}", "Zq7Xk2Lm9Pw4".repeat(3));
        for text in [
            "a\r\nb".to_owned(),
            "a\rb".to_owned(),
            "a\n\u{1b}[2J".to_owned(),
            "a\n\u{202E}b".to_owned(),
            "a\n::error::x".to_owned(),
            "a\n<!-- reviewbot round=9 -->".to_owned(),
            format!("let a = 1;\nlet t = \"{token}\";"),
        ] {
            assert!(!suggestion_is_clean(&text), "{text:?}");
        }
    }
}
