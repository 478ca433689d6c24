//! The words of a round's check run: its titles, its summary (the round's review body without
//! the hidden round marker) and one annotation per finding on the head's lines.

use std::fmt::Write;

use crate::chars::fit;
use crate::diff::Side;
use crate::github::model::{Annotation, AnnotationLevel};
use crate::ids::HeadSha;
use crate::lens::LensSpec;
use crate::render::markdown::{self, BodyOptions};
use crate::render::{clean, failed_lenses, skipped_text, verdict_line};
use crate::review::finding::Finding;
use crate::review::markers::RoundMarker;
use crate::review::notice::Budget;
use crate::review::{Report, Severity, Verdict};

/// The check run's name on every head.
pub const NAME: &str = "reviewbot";
/// GitHub's limit on `output.summary`.
pub const MAX_SUMMARY_CHARS: usize = 65_535;
/// GitHub's limit on an annotation's title.
const MAX_ANNOTATION_TITLE_CHARS: usize = 255;
/// The most characters of a finding's body an annotation carries.
const MAX_ANNOTATION_MESSAGE_CHARS: usize = 4_000;

/// While the panel runs: `Round 3: claude, terra reviewing`.
pub fn running_title(round: u32, lenses: &[LensSpec]) -> String {
    let names: Vec<&str> = lenses.iter().map(|l| l.name.as_str()).collect();
    format!("Round {round}: {} reviewing", names.join(", "))
}

/// While the panel runs: which head and who reviews it.
pub fn running_summary(head: &HeadSha, lenses: &[LensSpec]) -> String {
    let mut out = format!("Reviewing head {} with:\n\n", head.short());
    for l in lenses {
        let _ = match &l.model {
            Some(model) => writeln!(out, "- {} ({})", l.name, clean(model)),
            None => writeln!(out, "- {}", l.name),
        };
    }
    out.push_str("\nThe round's verdict replaces this when its review is posted.\n");
    out
}

/// Once posted: `Round 3: 1 blocking, 2 advisory`.
pub fn done_title(round: u32, verdict: Verdict) -> String {
    format!(
        "Round {round}: {} blocking, {} advisory",
        verdict.blocking, verdict.advisory
    )
}

/// When every lens failed: no review, and why.
pub fn failed_title(round: u32) -> String {
    format!("Round {round}: every lens failed")
}

/// Why a round with no answering lens posted nothing.
pub fn failed_summary(report: &Report) -> String {
    let mut out = String::from("No review was posted: every lens failed.\n\n");
    for line in failed_lenses(report) {
        let _ = writeln!(out, "- {line}");
    }
    cap(out)
}

/// A round whose job gave up: every attempt failed.
pub fn abandoned_title() -> String {
    "Round not completed".to_owned()
}

/// Why a round's job gave up, and how to ask again.
pub fn abandoned_summary(attempts: u32, error: &str) -> String {
    cap(format!(
        "No review was posted: reviewbot gave up on this round after {attempts} attempts. The last \
         one failed: {}\n\nA `/reviewbot review` comment from a maintainer, or the trigger label, \
         asks for a new round.\n",
        crate::render::clean(error)
    ))
}

/// A gated round: `Not reviewed`, and why.
pub fn skipped_title() -> String {
    "Not reviewed".to_owned()
}

/// A round waiting for its installation's daily budget.
pub fn budget_title() -> String {
    "Daily review budget reached".to_owned()
}

/// Why a round waits: what the installation's lenses cost today, of what budget.
pub fn budget_summary(over: &Budget) -> String {
    format!(
        "Not reviewed yet: daily review budget reached. This installation's reviews {} today \
         (UTC), so this round waits for the next UTC day. A `/reviewbot review` comment from a \
         maintainer runs one round now.\n",
        spending(over)
    )
}

/// What was spent of which budget: "cost $1.25 of a daily budget of $1.00", or for lenses
/// without a price "spent 2,000,512 tokens of a daily budget of 2,000,000".
pub fn spending(over: &Budget) -> String {
    match *over {
        Budget::Dollars { spent, budget } => format!(
            "cost {} of a daily budget of {}",
            crate::render::dollars(spent),
            crate::render::dollars(budget)
        ),
        Budget::Tokens { spent, budget } => format!(
            "spent {} tokens (lenses without a price) of a daily budget of {}",
            crate::render::thousands(spent),
            crate::render::thousands(budget)
        ),
    }
}

/// Why a gated round did not run.
pub fn skipped_summary(report: &Report) -> String {
    skipped_text(report).unwrap_or_else(|| "Not reviewed.\n".to_owned())
}

/// The summary of a posted round: each review's body (one per lens in per-lens mode) without
/// its round marker.
pub fn summary(reports: &[&Report], opts: &BodyOptions<'_>) -> String {
    let bodies: Vec<String> = reports
        .iter()
        .map(|r| without_marker(&markdown::body(r, opts)))
        .collect();
    cap(bodies.join("\n---\n\n"))
}

/// A posted review's body without its round marker (a round recovered from GitHub).
pub fn without_marker(body: &str) -> String {
    let mut out: String = body
        .lines()
        .filter(|l| !RoundMarker::is_line(l))
        .collect::<Vec<_>>()
        .join("\n");
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('\n');
    out
}

/// One annotation per finding on the head's lines (a finding on removed lines has no line at
/// the head, so it is in the summary only).
pub fn annotations(findings: &[Finding]) -> Vec<Annotation> {
    findings
        .iter()
        .filter(|f| f.in_diff && f.side == Side::Right)
        .map(|f| Annotation {
            path: f.path.clone(),
            start_line: f.start_line.unwrap_or(f.line).min(f.line),
            end_line: f.line,
            annotation_level: match f.severity {
                Severity::Blocking => AnnotationLevel::Failure,
                Severity::Advisory => AnnotationLevel::Warning,
            },
            title: fit(&markdown::title(f), MAX_ANNOTATION_TITLE_CHARS),
            message: format!(
                "{}\n\n({} confidence · {})",
                fit(&clean(f.body.trim()), MAX_ANNOTATION_MESSAGE_CHARS),
                f.confidence.as_str(),
                f.lenses
                    .iter()
                    .map(|l| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect()
}

/// The verdict line a summary repeats (for a round recovered without its body).
pub fn verdict_summary(verdict: Verdict) -> String {
    format!("{}\n", verdict_line(verdict))
}

fn cap(text: String) -> String {
    crate::chars::cut(
        &text,
        MAX_SUMMARY_CHARS - 40,
        "\n\n… (cut to fit GitHub's limit)\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LensName;
    use crate::lens::{AuthClass, BackendKind, LensStatus, Provenance};
    use crate::review::Confidence;
    use crate::review::gate::SkipReason;

    fn head() -> HeadSha {
        HeadSha::parse(&"d".repeat(40)).expect("sha")
    }

    fn finding(path: &str, line: u32, severity: Severity, side: Side) -> Finding {
        Finding {
            path: path.into(),
            line,
            start_line: None,
            side,
            severity,
            confidence: Confidence::High,
            title: "Wake dispatch skips the preflight.".into(),
            body: "Why, and what to do; ask @octocat.".into(),
            lenses: vec![LensName::new("claude")],
            in_diff: true,
            fingerprint: "fp".into(),
            suggestion: None,
            verified: None,
        }
    }

    fn lens(name: &str, error: Option<&str>) -> Provenance {
        Provenance {
            lens: LensName::new(name),
            role: Default::default(),
            requested_backend: BackendKind::Builtin,
            actual_backend: BackendKind::Builtin,
            auth_class: AuthClass::None,
            model: None,
            fallback_source: None,
            status: match error {
                Some(_) => LensStatus::Failed,
                None => LensStatus::Ok,
            },
            error: error.map(str::to_owned),
            latency_ms: 1,
            usage: None,
            cost_usd: None,
            calls: None,
            findings_dropped: None,
            tool_calls: None,
            summary: None,
        }
    }

    fn opts() -> BodyOptions<'static> {
        BodyOptions {
            opt_out_label: "reviewbot:no-review",
            max_comments: 30,
            per_lens: false,
        }
    }

    #[test]
    fn every_text_of_a_check_run() {
        let mut claude = LensSpec::new("claude", BackendKind::ClaudeCli);
        claude.model = Some("claude-opus-5".into());
        let lenses = [claude, LensSpec::new("builtin", BackendKind::Builtin)];
        let posted = Report {
            head: Some(head()),
            round: Some(3),
            findings: vec![
                finding("src/lib.rs", 42, Severity::Blocking, Side::Right),
                finding("src/old.rs", 7, Severity::Advisory, Side::Right),
            ],
            lenses: vec![lens("claude", None)],
            ..Report::empty()
        };
        let failed = Report {
            lenses: vec![lens("claude", Some("timed out after 300s"))],
            ..posted.clone()
        };
        let draft = Report {
            head: Some(head()),
            skipped: Some(SkipReason::Draft),
            ..Report::empty()
        };
        let texts = [
            running_title(3, &lenses),
            running_summary(&head(), &lenses),
            done_title(3, posted.verdict()),
            summary(&[&posted], &opts()),
            failed_title(3),
            failed_summary(&failed),
            skipped_title(),
            skipped_summary(&draft),
            budget_title(),
            budget_summary(&Budget::Dollars {
                spent: 1.25,
                budget: 1.0,
            }),
            abandoned_title(),
            abandoned_summary(3, "octo/app#7 was not found (404): Not Found."),
        ];
        insta::assert_snapshot!(texts.join("\n=====\n"));
    }

    #[test]
    fn the_summary_is_the_body_without_its_round_marker() {
        let report = Report {
            head: Some(head()),
            round: Some(2),
            lenses: vec![lens("claude", None)],
            ..Report::empty()
        };
        let body = markdown::body(&report, &opts());
        assert!(body.contains("<!-- reviewbot round=2"), "{body}");
        let summary = summary(&[&report], &opts());
        assert!(!summary.contains("<!-- reviewbot round="), "{summary}");
        assert!(
            summary.starts_with("Round 2 — reviewed head dddddddd"),
            "{summary}"
        );
        assert_eq!(without_marker(&body), summary);
    }

    #[test]
    fn annotations_cover_the_heads_lines_only() {
        let mut range = finding("src/a.rs", 12, Severity::Advisory, Side::Right);
        range.start_line = Some(10);
        range.title = "t".repeat(400);
        let mut off = finding("src/b.rs", 3, Severity::Blocking, Side::Right);
        off.in_diff = false;
        let removed = finding("src/c.rs", 5, Severity::Blocking, Side::Left);
        let on = finding("src/d.rs", 9, Severity::Blocking, Side::Right);
        let got = annotations(&[range, off, removed, on]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].start_line, got[0].end_line), (10, 12));
        assert_eq!(got[0].annotation_level, AnnotationLevel::Warning);
        assert!(got[0].title.chars().count() <= MAX_ANNOTATION_TITLE_CHARS);
        assert!(got[0].title.ends_with('…'), "{}", got[0].title);
        assert_eq!(got[1].path, "src/d.rs");
        assert_eq!(got[1].annotation_level, AnnotationLevel::Failure);
        assert!(
            got[1].message.contains("ask ＠octocat."),
            "{}",
            got[1].message
        );
    }
}
