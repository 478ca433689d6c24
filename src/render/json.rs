//! `--format json`: exactly one document (`docs/contract.md` "JSON output").

use serde::Serialize;

use crate::context::Source;
use crate::diff::Side;
use crate::ids::{HeadSha, LensName};
use crate::lens::Provenance;
use crate::lens::verdicts::VerdictKind;
use crate::render::clean;
use crate::render::markdown::suggestion_is_clean;
use crate::repo_rules::RuleFile;
use crate::review::gate::SkipReason;
use crate::review::rounds::Carried;
use crate::review::{Confidence, NotReviewed, Report, Severity, Verdict};

#[derive(Serialize)]
struct Document<'a> {
    verdict: Verdict,
    head: Option<&'a HeadSha>,
    round: Option<u32>,
    posted: bool,
    skipped: Option<&'a str>,
    findings: Vec<FindingOut<'a>>,
    lenses: Vec<Provenance>,
    not_reviewed: &'a [NotReviewed],
    carried_over: &'a [Carried],
    scope: Option<String>,
    context: ContextOut,
    /// Findings dropped because the file at the head holds nowhere the code they quote.
    dropped_unfounded: usize,
    /// The repository's review rules the lenses were given: path, scope, whether cut.
    repo_rules: &'a [RuleFile],
    /// What the lenses cost in dollars, where their backends say; null when none did.
    cost_usd: Option<f64>,
    /// What cross-examination checked; null when `[verify] mode = "off"`.
    verification: Option<VerificationOut<'a>>,
}

/// `docs/contract.md` "Cross-examination": the counts and who checked.
#[derive(Serialize)]
struct VerificationOut<'a> {
    checked: usize,
    confirmed: usize,
    refuted: usize,
    unsure: usize,
    verifier: Vec<&'a LensName>,
}

/// What the lenses could read beyond the diff (`docs/contract.md` "Repository context").
#[derive(Serialize)]
struct ContextOut {
    source: Option<Source>,
    files: u64,
    bytes: u64,
    left_out: u64,
    note: Option<String>,
}

#[derive(Serialize)]
struct FindingOut<'a> {
    path: &'a str,
    line: u32,
    start_line: Option<u32>,
    side: Side,
    severity: Severity,
    confidence: Confidence,
    title: String,
    body: String,
    lenses: &'a [LensName],
    in_diff: bool,
    fingerprint: &'a str,
    /// The committable replacement for its lines, when one is offered.
    suggestion: Option<&'a str>,
    /// `confirmed` or `unsure` when a verifier checked it; null when none did.
    verified: Option<VerdictKind>,
}

/// The JSON document, pretty-printed, with every lens-written string cleaned.
pub fn render(report: &Report) -> String {
    let doc = Document {
        verdict: report.verdict(),
        head: report.head.as_ref(),
        round: report.round,
        posted: report.posted,
        skipped: report.skipped.as_ref().map(SkipReason::as_str),
        findings: report
            .findings
            .iter()
            .map(|f| FindingOut {
                path: &f.path,
                line: f.line,
                start_line: f.start_line,
                side: f.side,
                severity: f.severity,
                confidence: f.confidence,
                title: clean(&f.title),
                body: clean(&f.body),
                lenses: &f.lenses,
                in_diff: f.in_diff,
                fingerprint: &f.fingerprint,
                suggestion: f.suggestion.as_deref().filter(|s| suggestion_is_clean(s)),
                verified: f.verified.as_ref().map(|c| c.verdict),
            })
            .collect(),
        lenses: report
            .runs()
            .iter()
            .map(|p| Provenance {
                error: p.error.as_deref().map(clean),
                summary: p.summary.as_deref().map(clean),
                ..p.clone()
            })
            .collect(),
        not_reviewed: &report.not_reviewed,
        carried_over: &report.carried_over,
        scope: report.scope.as_ref().map(ToString::to_string),
        context: ContextOut {
            source: report.context.source,
            files: report.context.files,
            bytes: report.context.bytes,
            left_out: report.context.left_out.total(),
            note: crate::render::notice::context_note(&report.context).map(|n| clean(&n)),
        },
        dropped_unfounded: report.dropped_unfounded,
        repo_rules: &report.repo_rules,
        cost_usd: report.cost_usd(),
        verification: report.verification.as_ref().map(|v| VerificationOut {
            checked: v.checked.len(),
            confirmed: v.count(VerdictKind::Confirmed),
            refuted: v.count(VerdictKind::Refuted),
            unsure: v.count(VerdictKind::Unsure),
            verifier: v.verifiers(),
        }),
    };
    // Serialising plain data with string keys cannot fail.
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}
