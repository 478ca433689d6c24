//! One review, top to bottom: gate the files, plan the calls, run the panel, parse and place
//! each finding, merge, and keep the evidence.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::attributes::{Attributes, Guard};
use crate::config::ReviewConfig;
use crate::context::{Context, ContextReport, Source};
use crate::diff::Diff;
use crate::evidence::{Evidence, MergeMember, Record};
use crate::ids::LensName;
use crate::lens::backend::Runs;
use crate::lens::builtin::KeywordSearch;
use crate::lens::registry::backend;
use crate::lens::verdicts::VerdictKind;
use crate::lens::{LensRequest, LensRun, LensSpec, PrInfo, Provenance};
use crate::plan::{self, PlanOptions};
use crate::review::anchor::{Anchored, HeadText, anchor, suggestion_problem};
use crate::review::finding::{Checked, Finding, Fingerprints};
use crate::review::merge::{merge, merge_explained};
use crate::review::panel::{Panel, PanelInput, PanelObserver};
use crate::review::verify::{Verification, VerifyInput, cross_examine};
use crate::review::{Confidence, NotReviewed, NotReviewedReason, Report, Severity};

/// What a review reads: the diff, and the search for secret keywords in its bytes when one
/// began before it was parsed (the CLI begins one as it reads a diff file).
pub struct ReviewInput {
    pub diff: Diff,
    pub keywords: Option<KeywordSearch>,
}

impl From<Diff> for ReviewInput {
    fn from(diff: Diff) -> Self {
        ReviewInput {
            diff,
            keywords: None,
        }
    }
}

/// Reviews `diff` with `lenses`, which may read `context`, and returns the merged report (not
/// posted anywhere).
pub async fn review(
    diff: impl Into<ReviewInput>,
    pr: Option<PrInfo>,
    lenses: &[LensSpec],
    config: &ReviewConfig,
    context: Context,
    panel: &Panel,
    observer: &dyn PanelObserver,
) -> Report {
    let earlier = BTreeSet::new();
    let at = ReviewAt {
        anchors: None,
        earlier: &earlier,
    };
    review_with(diff, at, pr, lenses, config, context, panel, observer)
        .await
        .report
}

/// A review's merged report, and every lens's findings before merging (per-lens posting).
#[derive(Debug)]
pub struct Reviewed {
    pub report: Report,
    pub located: Vec<Finding>,
    /// What cross-examination refuted, kept out of both: the merged findings, and the lens
    /// findings they combined (what `eval` scores before cross-examination).
    pub refuted: Refuted,
}

/// Findings a verifier refuted.
#[derive(Debug, Default)]
pub struct Refuted {
    pub merged: Vec<Finding>,
    pub located: Vec<Finding>,
}

impl Reviewed {
    /// What one review posts: everything (`None`), or in per-lens mode one lens's findings,
    /// merged on their own, and its provenance.
    pub fn for_lens(
        &self,
        lens: Option<&LensName>,
        min_blocking_confidence: Confidence,
    ) -> (Vec<Finding>, Vec<Provenance>) {
        match lens {
            None => (self.report.findings.clone(), self.report.lenses.clone()),
            Some(name) => (
                merge(
                    self.located
                        .iter()
                        .filter(|f| f.lenses.contains(name))
                        .cloned()
                        .collect(),
                    min_blocking_confidence,
                ),
                self.report
                    .lenses
                    .iter()
                    .filter(|p| &p.lens == name)
                    .cloned()
                    .collect(),
            ),
        }
    }
}

/// Where in a PR's history a review sits.
#[derive(Debug, Clone, Copy)]
pub struct ReviewAt<'a> {
    /// The whole PR diff, when the review covers only part of it.
    pub anchors: Option<&'a Diff>,
    /// The fingerprints earlier rounds reported (cross-examination leaves them alone).
    pub earlier: &'a BTreeSet<String>,
}

/// Reviews `diff` — possibly only part of a PR, such as the interdiff of a later round — and
/// places each finding on `at.anchors` (the whole PR diff) when given, so a finding outside the
/// part reviewed but on the PR's diff can still be a line comment. Every lens request carries
/// `context`'s snapshot root, when there is one.
#[allow(clippy::too_many_arguments)]
pub async fn review_with(
    input: impl Into<ReviewInput>,
    at: ReviewAt<'_>,
    pr: Option<PrInfo>,
    lenses: &[LensSpec],
    config: &ReviewConfig,
    context: Context,
    panel: &Panel,
    observer: &dyn PanelObserver,
) -> Reviewed {
    if let Some(ev) = &panel.evidence {
        record_context(ev, &context.report);
        if !context.rules.is_empty() {
            ev.record(&Record::RepoRules {
                files: &context.rules,
            });
        }
    }
    let ReviewInput { diff, keywords } = input.into();
    let (diff, mut not_reviewed) = leave_out(diff, config, &context.attributes);
    // Before any prompt is built or anything printed: what the builtin lens would call a
    // secret is masked on every channel, whichever lenses run.
    crate::timing::mark("gated");
    let secret_keywords = Arc::new(crate::lens::builtin::remember_secrets(&diff, keywords));
    crate::timing::mark("secrets remembered");
    // Hidden text in the PR reaches no lens, whatever form it is given in.
    let pr = pr.map(PrInfo::sanitized);
    let diff = Arc::new(diff);
    // Only lenses that take prompts need a plan; the builtin lens reads the diff itself.
    let needs_plan = lenses
        .iter()
        .any(|l| backend(l.backend).runs() != Runs::InProcess);
    let mut nothing_fits = None;
    let calls = if needs_plan {
        let opts = PlanOptions {
            token_budget: config.token_budget,
            path_rules: &config.path,
            repo_rules: &context.rules,
            notes: &context.notes,
        };
        let planned = plan::plan(&diff, pr.as_ref(), &opts);
        not_reviewed.extend(planned.over_budget.into_iter().map(|path| NotReviewed {
            path,
            reason: NotReviewedReason::OverBudget,
        }));
        nothing_fits = planned.nothing_fits;
        planned
            .chunks
            .into_iter()
            .map(|c| {
                Arc::new(LensRequest {
                    prompt: c.prompt,
                    diff: Arc::new(c.diff),
                    pr: pr.clone(),
                    checkout: context.root.clone(),
                    answer: crate::lens::contract::AnswerKind::Review,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    let input = Arc::new(PanelInput {
        diff: Arc::clone(&diff),
        calls,
        secret_keywords: Some(secret_keywords),
        nothing_fits,
    });
    let runs = panel.run(lenses, input, observer).await;
    crate::timing::mark("lenses done");

    let place_on = at.anchors.unwrap_or(&diff);
    let head = HeadText {
        snapshot: context.root.as_deref(),
        diff: place_on,
    };
    let Placed {
        mut findings,
        provenance,
        dropped_unfounded,
    } = place(runs, &head, panel.evidence.as_deref());
    let explained = merge_explained(&findings, config.min_blocking_confidence);
    if let Some(ev) = &panel.evidence {
        record_merge(ev, &findings, &explained, config);
    }
    let mut merged: Vec<Finding> = explained.iter().map(|(f, _)| f.clone()).collect();
    crate::timing::mark("placed and merged");
    // Cross-examination runs on the merged findings, before any per-lens split.
    let verify = VerifyInput {
        lenses,
        runs: &provenance,
        diff: place_on,
        pr: pr.as_ref(),
        checkout: context.root.clone(),
        earlier: at.earlier,
    };
    let before: Vec<Finding> = explained.iter().map(|(f, _)| f.clone()).collect();
    let verification = cross_examine(&mut merged, &verify, panel).await;
    let mut refuted = Refuted::default();
    if let Some(v) = verification.as_ref().filter(|v| !v.runs.is_empty()) {
        refuted.located = apply_to_members(&mut findings, &explained, v);
        refuted.merged = before
            .into_iter()
            .filter(|f| !merged.iter().any(|m| m.fingerprint == f.fingerprint))
            .collect();
        crate::timing::mark("cross-examined");
    }
    let report = Report {
        findings: merged,
        lenses: provenance,
        not_reviewed,
        context: context.report,
        dropped_unfounded,
        repo_rules: context.rules,
        verification,
        ..Report::empty()
    };
    Reviewed {
        report,
        located: findings,
        refuted,
    }
}

/// Every lens's findings placed on the diff, with the runs' provenance.
struct Placed {
    findings: Vec<Finding>,
    provenance: Vec<Provenance>,
    /// Findings dropped because the file at the head holds nowhere the code they quote.
    dropped_unfounded: usize,
}

/// Anchors each finding of `runs` on `head` (its quote, when its line is off) and places it on
/// the diff; a finding whose quote is nowhere is dropped and counted.
fn place(runs: Vec<LensRun>, head: &HeadText<'_>, evidence: Option<&Evidence>) -> Placed {
    let place_on = head.diff;
    let mut findings = Vec::new();
    let mut provenance = Vec::with_capacity(runs.len());
    let mut dropped_unfounded = 0;
    let mut fingerprints = Fingerprints::default();
    for run in runs {
        if let Some(response) = run.response {
            let lens = &run.provenance.lens;
            for mut raw in response.findings {
                match anchor(&mut raw, head) {
                    Anchored::Unfounded => {
                        dropped_unfounded += 1;
                        if let Some(ev) = evidence {
                            ev.record(&Record::Unfounded {
                                lens: lens.as_str(),
                                path: &raw.path,
                                line: raw.line,
                                title: &raw.title,
                                quote: raw.quote.as_deref().unwrap_or_default(),
                            });
                        }
                        continue;
                    }
                    Anchored::Moved { .. } | Anchored::Kept => {}
                }
                let mut found = Finding::locate_among(raw, lens, place_on, &mut fingerprints);
                if let Some(problem) = suggestion_problem(&found, place_on) {
                    tracing::debug!(lens = %lens, title = %found.title, problem, "suggestion dropped");
                    found.suggestion = None;
                }
                findings.push(found);
            }
        }
        provenance.push(run.provenance);
    }
    Placed {
        findings,
        provenance,
        dropped_unfounded,
    }
}

/// The verdicts on merged findings carried to the lens findings they combined, which per-lens
/// posting merges again: a refuted finding's members are dropped, a checked one's carry the
/// verdict (a confirmed one's, one step more confidence). Returns the members dropped.
fn apply_to_members(
    located: &mut Vec<Finding>,
    explained: &[(Finding, Vec<usize>)],
    verification: &Verification,
) -> Vec<Finding> {
    let mut dropped = vec![false; located.len()];
    for (merged, members) in explained {
        let Some(c) = verification
            .checked
            .iter()
            .find(|c| c.fingerprint == merged.fingerprint)
        else {
            continue;
        };
        for &i in members {
            let f = &mut located[i];
            match c.verdict {
                VerdictKind::Refuted => dropped[i] = true,
                VerdictKind::Confirmed => f.confidence = f.confidence.raised(),
                VerdictKind::Unsure => {}
            }
            f.verified = Some(Checked {
                verdict: c.verdict,
                by: c.by.clone(),
                evidence: c.evidence.clone(),
            });
        }
    }
    let (kept, gone): (Vec<_>, Vec<_>) = std::mem::take(located)
        .into_iter()
        .zip(dropped)
        .partition(|(_, d)| !d);
    *located = kept.into_iter().map(|(f, _)| f).collect();
    gone.into_iter().map(|(f, _)| f).collect()
}

/// Evidence of the round's snapshot: where it came from and what it holds, or why there is none.
fn record_context(ev: &crate::evidence::Evidence, report: &ContextReport) {
    let note = report.note().map(|n| n.to_string());
    ev.record(&Record::Context {
        source: report.source.map(Source::as_str),
        files: report.files,
        bytes: report.bytes,
        left_out: report.left_out.total(),
        note: note.as_deref(),
    });
}

/// Evidence of the merge: for each output finding, the lens findings it combined and why its
/// severity changed, if it did.
fn record_merge(
    ev: &crate::evidence::Evidence,
    inputs: &[Finding],
    merged: &[(Finding, Vec<usize>)],
    config: &ReviewConfig,
) {
    for (m, members) in merged {
        let members: Vec<MergeMember<'_>> = members
            .iter()
            .map(|&i| &inputs[i])
            .map(|f| MergeMember {
                lens: f.lenses.first().map_or("", |l| l.as_str()),
                path: &f.path,
                line: f.line,
                title: &f.title,
                severity: f.severity.as_str(),
                confidence: f.confidence.as_str(),
            })
            .collect();
        let demoted =
            members.iter().any(|f| f.severity == "blocking") && m.severity == Severity::Advisory;
        let note = demoted.then(|| {
            format!(
                "blocking at {} confidence is below min_blocking_confidence ({}), so advisory",
                m.confidence.as_str(),
                config.min_blocking_confidence.as_str()
            )
        });
        ev.record(&Record::Merge {
            fingerprint: &m.fingerprint,
            members,
            severity: m.severity.as_str(),
            confidence: m.confidence.as_str(),
            note: note.as_deref(),
        });
    }
}

/// Drops what no lens should see — `ignore_paths`, generated and vendored files, binary files —
/// and lists each of them.
fn leave_out(
    mut diff: Diff,
    config: &ReviewConfig,
    attributes: &Attributes,
) -> (Diff, Vec<NotReviewed>) {
    let ignored = config.ignored();
    let mut not_reviewed = Vec::new();
    diff.retain(|file| {
        let reason = if ignored.is_match(file.path()) {
            NotReviewedReason::Ignored
        } else if let Some(guard) = attributes.guard(file.path()) {
            match guard {
                Guard::Generated => NotReviewedReason::Generated,
                Guard::Vendored => NotReviewedReason::Vendored,
            }
        } else if file.binary {
            NotReviewedReason::Binary
        } else {
            return true;
        };
        not_reviewed.push(NotReviewed {
            path: file.path().to_owned(),
            reason,
        });
        false
    });
    (diff, not_reviewed)
}
