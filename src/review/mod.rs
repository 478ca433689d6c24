//! The review stages. The pure decisions: `gate` (whether a PR gets a round), `scope` (what a
//! later round reviews), `finding` (place each answer on the diff), `merge` (cluster and
//! decide), `rounds` (what was posted before; settle what to post now). `panel` runs the lenses
//! and `pipeline` chains one review; `notice` is what a run tells its caller, as data.

pub(crate) mod anchor;
pub mod finding;
pub(crate) mod gate;
pub(crate) mod markers;
pub(crate) mod merge;
pub mod notice;
pub mod panel;
pub mod pipeline;
pub(crate) mod rounds;
pub mod scope;
pub(crate) mod threads;
pub(crate) mod verdict;
pub mod verify;

use serde::Serialize;

/// The lens contract's grades, which every review stage speaks.
pub use crate::lens::contract::{Confidence, Severity};

pub use verdict::Verdict;

/// Why a file was left out of the review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NotReviewedReason {
    Binary,
    NoPatch,
    TooLarge,
    Ignored,
    OverBudget,
    /// Marked `linguist-generated` in the base branch's `.gitattributes`.
    Generated,
    /// Marked `linguist-vendored` in the base branch's `.gitattributes`.
    Vendored,
}

/// A file the review did not look at, and why — listed, never silently dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotReviewed {
    pub path: String,
    pub reason: NotReviewedReason,
}

/// The outcome of one review: what every renderer shows.
#[derive(Debug, Clone)]
pub struct Report {
    pub head: Option<crate::ids::HeadSha>,
    pub round: Option<u32>,
    /// The delivery that asked for this round (App jobs), named in its marker.
    pub ask: Option<crate::ids::DeliveryId>,
    pub posted: bool,
    /// Why no round ran (`opt_out`, `already_reviewed`, `draft`, …).
    pub skipped: Option<gate::SkipReason>,
    pub findings: Vec<finding::Finding>,
    pub lenses: Vec<crate::lens::Provenance>,
    pub not_reviewed: Vec<NotReviewed>,
    /// Findings of earlier rounds that still hold at this head (not posted again).
    pub carried_over: Vec<rounds::Carried>,
    /// What a later round looked at (the interdiff, or everything again and why).
    pub scope: Option<scope::Scope>,
    /// The verdict when it is not this report's own findings: the earlier round's on a head
    /// already reviewed (so a re-run keeps the exit status), or the sum of combined reviews.
    pub held_verdict: Option<Verdict>,
    /// The repository snapshot the lenses read, or why they had none.
    pub context: crate::context::ContextReport,
    /// Findings dropped because the file at the head holds nowhere the code they quote.
    pub dropped_unfounded: usize,
    /// The repository's review rules the lenses were given.
    pub repo_rules: Vec<crate::repo_rules::RuleFile>,
    /// What cross-examination checked and found; `None` when `[verify] mode = "off"` or no
    /// review ran.
    pub verification: Option<verify::Verification>,
}

impl Report {
    /// An empty report: nothing reviewed yet.
    pub fn empty() -> Report {
        Report {
            head: None,
            round: None,
            ask: None,
            posted: false,
            skipped: None,
            findings: Vec::new(),
            lenses: Vec::new(),
            not_reviewed: Vec::new(),
            carried_over: Vec::new(),
            scope: None,
            held_verdict: None,
            context: crate::context::ContextReport::default(),
            dropped_unfounded: 0,
            repo_rules: Vec::new(),
            verification: None,
        }
    }

    /// What the lenses cost in dollars, summed over those that reported it; `None` when none did.
    pub fn cost_usd(&self) -> Option<f64> {
        self.runs()
            .iter()
            .filter_map(|l| l.cost_usd)
            .reduce(|a, b| a + b)
    }

    /// Every lens call of the round: the reviews, then the verifiers' (role `verify`).
    pub fn runs(&self) -> Vec<crate::lens::Provenance> {
        let mut runs = self.lenses.clone();
        if let Some(v) = &self.verification {
            runs.extend(v.runs.iter().cloned());
        }
        runs
    }

    /// Every finding that holds: posted now and carried over (or, for a round skipped as
    /// already reviewed, that round's verdict).
    pub fn verdict(&self) -> Verdict {
        if let Some(v) = self.held_verdict {
            return v;
        }
        rounds::verdict(&self.findings, &self.carried_over)
    }

    /// Several reports (one per lens in per-lens mode) as one, for outputs that are a single
    /// document and for the exit status: the verdicts add up, and it is skipped only when every
    /// one was.
    pub fn combine(mut reports: Vec<Report>) -> Report {
        if reports.len() == 1 {
            return reports.remove(0);
        }
        let mut all = Report::empty();
        let mut verdict = Verdict::default();
        let all_skipped = reports.iter().all(|r| r.skipped.is_some());
        let verifications: Vec<verify::Verification> = reports
            .iter()
            .filter_map(|r| r.verification.clone())
            .collect();
        if !verifications.is_empty() {
            all.verification = Some(verify::Verification::combine(verifications));
        }
        for r in reports {
            let v = r.verdict();
            verdict.blocking += v.blocking;
            verdict.advisory += v.advisory;
            all.head = all.head.or(r.head);
            all.round = all.round.max(r.round);
            all.posted |= r.posted;
            if all_skipped && all.skipped.is_none() {
                all.skipped = r.skipped;
            }
            all.findings.extend(r.findings);
            all.carried_over.extend(r.carried_over);
            all.lenses.extend(r.lenses);
            for n in r.not_reviewed {
                if !all.not_reviewed.contains(&n) {
                    all.not_reviewed.push(n);
                }
            }
            all.scope = all.scope.or(r.scope);
            // Per-lens reviews share one placement of the round's findings.
            all.dropped_unfounded = all.dropped_unfounded.max(r.dropped_unfounded);
            // Every review of a round shares its one snapshot.
            if all.context == crate::context::ContextReport::default() {
                all.context = r.context;
            }
        }
        all.held_verdict = Some(verdict);
        all
    }

    /// True when lenses ran and every one of them failed.
    pub fn all_lenses_failed(&self) -> bool {
        !self.lenses.is_empty()
            && self
                .lenses
                .iter()
                .all(|l| l.status == crate::lens::LensStatus::Failed)
    }
}
