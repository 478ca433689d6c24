//! Outcomes kept as they happen (`docs/contract.md` "Outcomes"): what a round posted and what
//! it addressed. Without a store nothing is kept, and one notice says so; a store that fails is
//! a warning, never a failed round.

use super::FlowCtx;
use crate::github::model::RepoName;
use crate::ids::PrNumber;
use crate::review::Report;
use crate::review::notice::Notice;
use crate::store::{Outcome, PostedFinding};

/// Keeps the findings a posted round holds, each under every lens that raised it.
pub(super) async fn posted(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    report: &Report,
    notices: &mut Vec<Notice>,
) {
    let (Some(store), Some(round)) = (ctx.store, report.round) else {
        if ctx.store.is_none() && !notices.contains(&Notice::OutcomesNotKept) {
            notices.push(Notice::OutcomesNotKept);
        }
        return;
    };
    let findings: Vec<PostedFinding> = report
        .findings
        .iter()
        .map(|f| PostedFinding {
            repo: repo.clone(),
            pr,
            fingerprint: f.fingerprint.clone(),
            lenses: f.lenses.clone(),
            round,
            severity: f.severity,
            verified: f.verified.as_ref().map(|c| c.verdict.as_str().to_owned()),
        })
        .collect();
    if let Err(e) = store.record_posted(&findings).await {
        notices.push(Notice::OutcomesFailed {
            error: e.to_string(),
        });
    }
}

/// Settles the findings `fingerprints` name with `outcome` (each only once, whatever comes
/// later).
pub(super) async fn settle(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    fingerprints: &[String],
    outcome: Outcome,
    notices: &mut Vec<Notice>,
) {
    let Some(store) = ctx.store else {
        return;
    };
    for fingerprint in fingerprints {
        if let Err(e) = store.settle(repo, pr, fingerprint, outcome).await {
            notices.push(Notice::OutcomesFailed {
                error: e.to_string(),
            });
            return;
        }
    }
}
