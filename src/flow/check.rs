//! The round's check run, `reviewbot` on the reviewed head: created `in_progress` when a round
//! starts, completed when it is posted (`docs/contract.md` "Check run"). A check run never
//! stops a round: without `checks: write` the round posts and a notice says so, and any other
//! failure is a warning.
//!
//! reviewbot's runs carry `external_id` `reviewbot:pr=N`, which tells them from any other run
//! of the same name (a workflow job called `reviewbot`). A run left `in_progress` by a crash
//! is found by that tag and completed by the job that runs the round again.

use crate::config::{FailOn, ReviewConfig};
use crate::flow::FlowCtx;
use crate::github::client::{CheckWrite, GithubError};
use crate::github::model::{
    CheckConclusion, CheckOutput, CheckRun, CheckRunUpdate, CheckStatus,
    MAX_ANNOTATIONS_PER_REQUEST, NewCheckRun, RepoName, Review,
};
use crate::ids::{CheckRunId, HeadSha, PrNumber};
use crate::lens::LensSpec;
use crate::render::check as text;
use crate::render::markdown::BodyOptions;
use crate::review::Report;
use crate::review::gate::SkipReason;
use crate::review::markers::RoundMarker;
use crate::review::notice::Notice;

/// Where the round's check run lives.
pub(super) struct Site<'a> {
    pub repo: &'a RepoName,
    pub pr: PrNumber,
    pub head: &'a HeadSha,
}

impl Site<'_> {
    fn tag(&self) -> String {
        format!("reviewbot:pr={}", self.pr.0)
    }
}

/// Whether the flow writes a check run at all: only when it posts, with a token.
pub(super) fn wanted(ctx: &FlowCtx<'_>, post: bool) -> bool {
    post && ctx.has_token
}

/// How a round ends for its check run, decided from its reports.
pub(super) fn conclusion(reports: &[&Report], fail_on: FailOn) -> CheckConclusion {
    let ran: Vec<&Report> = reports
        .iter()
        .copied()
        .filter(|r| r.skipped.is_none())
        .collect();
    if ran.is_empty() {
        return CheckConclusion::Skipped;
    }
    if ran.iter().all(|r| r.all_lenses_failed()) {
        return CheckConclusion::Neutral;
    }
    judged(verdict(&ran), fail_on)
}

/// `failure` when `fail_on` holds, `success` when no finding holds, `neutral` otherwise.
fn judged(verdict: crate::review::Verdict, fail_on: FailOn) -> CheckConclusion {
    if verdict.fails(fail_on) {
        CheckConclusion::Failure
    } else if verdict.blocking + verdict.advisory == 0 {
        CheckConclusion::Success
    } else {
        CheckConclusion::Neutral
    }
}

fn verdict(reports: &[&Report]) -> crate::review::Verdict {
    reports
        .iter()
        .fold(crate::review::Verdict::default(), |mut v, r| {
            let one = r.verdict();
            v.blocking += one.blocking;
            v.advisory += one.advisory;
            v
        })
}

/// Whether a gate's skip shows as a `skipped` check run: the PR was asked about and turned
/// away by its own state. A head already reviewed keeps the run it has; an ask that did not
/// count (another label, a user without write access) and a closed PR show nothing.
pub(super) fn shows_skip(reason: &SkipReason) -> bool {
    match reason {
        SkipReason::Draft
        | SkipReason::OptOut { .. }
        | SkipReason::TooManyFiles { .. }
        | SkipReason::BotAuthor { .. }
        | SkipReason::AllIgnored => true,
        SkipReason::Closed
        | SkipReason::AlreadyReviewed
        | SkipReason::NotTriggerLabel { .. }
        | SkipReason::NotPermitted { .. } => false,
    }
}

/// Starts the round's check run: the one a crashed run left `in_progress`, else a new one.
/// `None` when there is none to finish (no permission, or GitHub failed; a notice says so).
pub(super) async fn start(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    round: u32,
    lenses: &[LensSpec],
    notices: &mut Vec<Notice>,
) -> Option<CheckRunId> {
    let output = CheckOutput {
        title: text::running_title(round, lenses),
        summary: text::running_summary(at.head, lenses),
        annotations: Vec::new(),
    };
    match existing(ctx, at).await {
        Ok(Some(run)) if run.status != CheckStatus::Completed => {
            let update = CheckRunUpdate {
                status: Some(CheckStatus::InProgress),
                conclusion: None,
                output,
            };
            let written = ctx.github.update_check_run(at.repo, run.id, &update).await;
            return note(written, notices).map(|()| run.id);
        }
        Ok(_) => {}
        Err(e) => {
            notices.push(Notice::CheckRunFailed {
                error: e.to_string(),
            });
            return None;
        }
    }
    create(ctx, at, CheckStatus::InProgress, None, output, notices).await
}

/// Completes the round's check run from its reports (one per lens in per-lens mode), with one
/// annotation per finding on the head's lines, [`MAX_ANNOTATIONS_PER_REQUEST`] per request.
pub(super) async fn finish(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    id: CheckRunId,
    reports: &[&Report],
    review: &ReviewConfig,
    per_lens: bool,
    notices: &mut Vec<Notice>,
) {
    let conclusion = conclusion(reports, review.fail_on);
    let round = reports.iter().filter_map(|r| r.round).max().unwrap_or(1);
    let (title, summary, annotations) = match conclusion {
        CheckConclusion::Skipped => {
            let first = reports.first().copied();
            (
                text::skipped_title(),
                first.map(text::skipped_summary).unwrap_or_default(),
                Vec::new(),
            )
        }
        _ if reports.iter().all(|r| r.all_lenses_failed()) => (
            text::failed_title(round),
            reports
                .first()
                .map(|r| text::failed_summary(r))
                .unwrap_or_default(),
            Vec::new(),
        ),
        _ => {
            let opts = BodyOptions {
                opt_out_label: &review.opt_out_label,
                max_comments: review.max_comments,
                per_lens,
            };
            let findings: Vec<_> = reports.iter().flat_map(|r| r.findings.clone()).collect();
            (
                text::done_title(round, verdict(reports)),
                text::summary(reports, &opts),
                text::annotations(&findings),
            )
        }
    };
    complete(
        ctx,
        at,
        id,
        conclusion,
        title,
        summary,
        annotations,
        notices,
    )
    .await;
}

/// A gated round: its check run says `skipped` and why. A run left `in_progress` on the head
/// is completed so; a completed one is left as it is (a reviewed head keeps its verdict).
pub(super) async fn skipped(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    report: &Report,
    notices: &mut Vec<Notice>,
) {
    let output = CheckOutput {
        title: text::skipped_title(),
        summary: text::skipped_summary(report),
        annotations: Vec::new(),
    };
    without_round(ctx, at, CheckConclusion::Skipped, output, notices).await;
}

/// A round that waits for its installation's daily budget: its check run says so, `neutral`
/// (`summary` says how much was spent of what).
pub(super) async fn waiting(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    summary: String,
    notices: &mut Vec<Notice>,
) {
    let output = CheckOutput {
        title: text::budget_title(),
        summary,
        annotations: Vec::new(),
    };
    without_round(ctx, at, CheckConclusion::Neutral, output, notices).await;
}

/// A head that gets no round now: its check run is completed with `conclusion` and `output`.
/// A run left `in_progress` is completed so; a completed one is left as it is (a reviewed head
/// keeps its verdict).
async fn without_round(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    conclusion: CheckConclusion,
    output: CheckOutput,
    notices: &mut Vec<Notice>,
) {
    match existing(ctx, at).await {
        Ok(Some(run)) if run.status == CheckStatus::Completed => {}
        Ok(Some(run)) => {
            let update = CheckRunUpdate {
                status: Some(CheckStatus::Completed),
                conclusion: Some(conclusion),
                output,
            };
            let written = ctx.github.update_check_run(at.repo, run.id, &update).await;
            note(written, notices);
        }
        Ok(None) => {
            let status = CheckStatus::Completed;
            create(ctx, at, status, Some(conclusion), output, notices).await;
        }
        Err(e) => notices.push(Notice::CheckRunFailed {
            error: e.to_string(),
        }),
    }
}

/// A head whose round is already posted: a check run still `in_progress` (the job stopped
/// between posting and completing it) is completed from the round's verdict and the posted
/// review's body.
pub(super) async fn recover(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    reports: &[&Report],
    reviews: &[Review],
    fail_on: FailOn,
    notices: &mut Vec<Notice>,
) {
    let Some(run) = spinning(ctx, at, notices).await else {
        return;
    };
    let round = reports.iter().filter_map(|r| r.round).max().unwrap_or(1);
    let verdict = verdict(reports);
    let needle = RoundMarker::prefix(round, at.head);
    let summary = reviews
        .iter()
        .rev()
        .find(|r| r.body.contains(&needle))
        .map(|r| text::without_marker(&r.body))
        .unwrap_or_else(|| text::verdict_summary(verdict));
    let conclusion = judged(verdict, fail_on);
    let title = text::done_title(round, verdict);
    complete(
        ctx,
        at,
        run.id,
        conclusion,
        title,
        summary,
        Vec::new(),
        notices,
    )
    .await;
}

/// A round whose job gives up: its check run, when one is still `in_progress`, is completed
/// `neutral` saying why, so it is never left spinning.
pub(super) async fn abandoned(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    attempts: u32,
    error: &str,
    notices: &mut Vec<Notice>,
) {
    let Some(run) = spinning(ctx, at, notices).await else {
        return;
    };
    let title = text::abandoned_title();
    let summary = text::abandoned_summary(attempts, error);
    let conclusion = CheckConclusion::Neutral;
    complete(
        ctx,
        at,
        run.id,
        conclusion,
        title,
        summary,
        Vec::new(),
        notices,
    )
    .await;
}

/// After answers in the threads of the head's round: its check run (when there is one) is
/// completed again with what the threads left standing.
pub(super) async fn after_answers(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    history: &crate::review::rounds::History,
    withdrawn: usize,
    fail_on: FailOn,
    notices: &mut Vec<Notice>,
) {
    let Some(latest) = history.latest().filter(|m| &m.head == at.head) else {
        return;
    };
    let Some(run) = found(ctx, at, notices).await else {
        return;
    };
    let verdict = history.standing_verdict();
    let summary = crate::render::conversation::check_summary(verdict, withdrawn);
    let title = text::done_title(latest.round, verdict);
    let conclusion = judged(verdict, fail_on);
    complete(
        ctx,
        at,
        run.id,
        conclusion,
        title,
        summary,
        Vec::new(),
        notices,
    )
    .await;
}

/// The run reviewbot left `in_progress` on the head for this PR, if any.
async fn spinning(ctx: &FlowCtx<'_>, at: &Site<'_>, notices: &mut Vec<Notice>) -> Option<CheckRun> {
    found(ctx, at, notices)
        .await
        .filter(|run| run.status != CheckStatus::Completed)
}

/// The last run reviewbot left on the head for this PR; when it cannot be read, a notice.
async fn found(ctx: &FlowCtx<'_>, at: &Site<'_>, notices: &mut Vec<Notice>) -> Option<CheckRun> {
    existing(ctx, at).await.unwrap_or_else(|e| {
        notices.push(Notice::CheckRunFailed {
            error: e.to_string(),
        });
        None
    })
}

/// The last run reviewbot left on the head for this PR.
async fn existing(ctx: &FlowCtx<'_>, at: &Site<'_>) -> Result<Option<CheckRun>, GithubError> {
    ctx.github
        .find_check_run(at.repo, at.head, text::NAME, &at.tag())
        .await
}

async fn create(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    status: CheckStatus,
    conclusion: Option<CheckConclusion>,
    output: CheckOutput,
    notices: &mut Vec<Notice>,
) -> Option<CheckRunId> {
    let run = NewCheckRun {
        name: text::NAME.to_owned(),
        head_sha: at.head.to_string(),
        external_id: at.tag(),
        status,
        conclusion,
        output,
    };
    let written = match ctx.github.create_check_run(at.repo, &run).await {
        // It may have landed: a second look finds it rather than making a twin.
        Err(e @ GithubError::WriteUncertain { .. }) => match existing(ctx, at).await {
            Ok(Some(run)) => return Some(run.id),
            _ => Err(e),
        },
        other => other,
    };
    note(written, notices).map(|run| run.id)
}

/// Completes run `id`; annotations past the first request's share follow in further updates.
#[allow(clippy::too_many_arguments)]
async fn complete(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    id: CheckRunId,
    conclusion: CheckConclusion,
    title: String,
    summary: String,
    annotations: Vec<crate::github::model::Annotation>,
    notices: &mut Vec<Notice>,
) {
    let mut pages = annotations.chunks(MAX_ANNOTATIONS_PER_REQUEST);
    let first = CheckRunUpdate {
        status: Some(CheckStatus::Completed),
        conclusion: Some(conclusion),
        output: CheckOutput {
            title: title.clone(),
            summary: summary.clone(),
            annotations: pages.next().map(<[_]>::to_vec).unwrap_or_default(),
        },
    };
    let written = ctx.github.update_check_run(at.repo, id, &first).await;
    if note(written, notices).is_none() {
        return;
    }
    for page in pages {
        let more = CheckRunUpdate {
            status: None,
            conclusion: None,
            output: CheckOutput {
                title: title.clone(),
                summary: summary.clone(),
                annotations: page.to_vec(),
            },
        };
        let written = ctx.github.update_check_run(at.repo, id, &more).await;
        if note(written, notices).is_none() {
            return;
        }
    }
}

/// What the write gave when it landed; otherwise the notice that says why not.
fn note<T>(written: Result<CheckWrite<T>, GithubError>, notices: &mut Vec<Notice>) -> Option<T> {
    match written {
        Ok(CheckWrite::Done(value)) => Some(value),
        Ok(CheckWrite::NotPermitted(e)) => {
            notices.push(Notice::CheckRunForbidden {
                error: e.to_string(),
            });
            None
        }
        Err(e) => {
            notices.push(Notice::CheckRunFailed {
                error: e.to_string(),
            });
            None
        }
    }
}
