//! The review flow every trigger shares: a [`ReviewRequest`] in, a posted (or printed) round
//! out. The CLI's flags, the Actions event and a webhook delivery each only build the request.
//!
//! [`review_pr`] reads top to bottom: `gather` (the PR and its settings) → admit the ask (the
//! trigger label, the commenter's permission) → `review::gate` → `gather` (files, past rounds)
//! → `review::scope` → `review::pipeline` (the panel) → `review::rounds::settle` → `post`.
//! GitHub is read only in `gather` and written only in `post`; every decision between is a
//! pure function of what was gathered.
//!
//! Requests for a first round of an F-file PR: the PR, one GraphQL query for the base branch's
//! files every round reads (`.github/reviewbot.toml`, `.gitattributes`, and the root's
//! `REVIEW.md`, `AGENTS.md` and `CLAUDE.md`), ⌈F/100⌉ file pages, the identity (unless
//! `bot_login` is set), the reviews, the label re-check and the POST: 5 + ⌈F/100⌉ with
//! `bot_login`. A round whose model lenses take the repository's rules adds one more query for
//! the `REVIEW.md` of every directory of a changed file (at most 40), when a changed file sits
//! below the root; and the repository's archive: the API's redirect and the download from the
//! host it points to. A later round adds the thread comments and the compare call, and — once
//! we have threads — each human replier's permission and one GraphQL query for who resolved
//! them; a command adds the commenter's permission. A posted round adds its check run
//! (`check`): a look for one left in progress, the create, and one completing update per 50
//! annotations.

mod check;
mod converse;
mod gather;
mod outcomes;
mod post;
mod round;
pub mod trigger;

pub use gather::REPO_CONFIG_PATH;

pub use crate::request::{Reason, ReviewRequest};

use crate::config::{Config, ConfigError, ReviewConfig};
use crate::diff::{Diff, ParseError};
use crate::github::client::{GithubClient, GithubError};
use crate::ids::HeadSha;
use crate::review::Report;
use crate::review::gate::{self, SkipReason};
use crate::review::notice::Notice;
use crate::review::panel::{Panel, PanelObserver};

/// What the flow works with: GitHub, the operator's settings, the panel (credentials, the
/// shared subscription slots, evidence) and who watches the lenses run. Nothing is read from
/// the process environment inside the flow.
pub struct FlowCtx<'a> {
    /// A client acting for the request's repository (the CLI's token, or the installation's).
    pub github: &'a GithubClient,
    /// Whether `github` sends a token; without one a round is printed, never posted.
    pub has_token: bool,
    pub config: &'a Config,
    pub panel: &'a Panel,
    pub observer: &'a dyn PanelObserver,
    /// Where learnings are kept (the App's store, or the CLI's when `REVIEWBOT_DATABASE_URL`
    /// is set); without one they are not kept.
    pub store: Option<&'a crate::store::Store>,
    /// Whether this is a GitHub Actions job (`GITHUB_ACTIONS`): there a token that cannot say
    /// who it is posts as `github-actions[bot]`, whose markers alone count.
    pub workflow: bool,
}

/// What one run of the flow did.
#[derive(Debug)]
pub struct FlowOutcome {
    /// One report per review (several in per-lens mode; one skipped report when gated).
    pub reports: Vec<Report>,
    /// The PR's diff (empty when gated before the files were read).
    pub diff: Diff,
    /// What to tell the caller, in order.
    pub notices: Vec<Notice>,
    /// The `[review]` settings that applied (operator's plus the repository's).
    pub review: ReviewConfig,
    /// The head actually reviewed: the PR's head when the flow read it, which can be newer
    /// than the request's.
    pub head: HeadSha,
    /// The lens calls that answered replies in threads (what they cost counts too).
    pub answers: Vec<crate::lens::Provenance>,
}

impl FlowOutcome {
    /// Whether any review was posted.
    pub fn posted(&self) -> bool {
        self.reports.iter().any(|r| r.posted)
    }

    /// Why no round ran, when none did.
    pub fn skipped(&self) -> Option<&SkipReason> {
        match self.reports.as_slice() {
            [] => None,
            reports if reports.iter().all(|r| r.skipped.is_some()) => reports[0].skipped.as_ref(),
            _ => None,
        }
    }
}

/// Why the flow could not run: GitHub refused or stayed unreachable, or a configuration (the
/// repository's, the lens selection) or GitHub's patch text is unusable.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    #[error(transparent)]
    Github(#[from] GithubError),
    #[error("the repository's {0}")]
    RepoConfig(ConfigError),
    #[error("GitHub's patch for {0}")]
    Patch(ParseError),
    #[error("{0}")]
    Lenses(String),
}

impl FlowError {
    /// A GitHub failure (worth retrying later); the others need a fix first.
    pub fn is_github(&self) -> bool {
        matches!(self, FlowError::Github(_))
    }
}

/// Reviews one pull request and, when asked, posts the round.
pub async fn review_pr(ctx: &FlowCtx<'_>, req: &ReviewRequest) -> Result<FlowOutcome, FlowError> {
    // The secrets the round remembers are its own: masked in what it posts, forgotten after.
    crate::redact::KnownSecrets::scoped(review_round(ctx, req)).await
}

async fn review_round(ctx: &FlowCtx<'_>, req: &ReviewRequest) -> Result<FlowOutcome, FlowError> {
    let (pull, settings, mut base) = gather::pull_and_settings(ctx, &req.repo, req.pr).await?;
    let run = round::Run::new(ctx, req, &pull);
    let mut out = run.outcome(settings.review, settings.raised);

    if let Err(reason) = run.admit(&out.review).await? {
        return Ok(skip(out, req, reason));
    }
    if let Some(reason) = gate::skip_reason(&pull, &out.review) {
        return Ok(gated(ctx, &run.site(), run.checks, out, req, reason).await);
    }
    let (diff, no_patch) = gather::files(ctx, &req.repo, req.pr, out.review.max_files).await?;
    out.diff = diff.clone();
    if gate::all_ignored(&diff, &no_patch, &out.review) {
        let reason = SkipReason::AllIgnored;
        return Ok(gated(ctx, &run.site(), run.checks, out, req, reason).await);
    }
    let lenses = run.lenses(&mut out)?;
    let mut past = run.past(&mut out.notices).await?;

    // Replies in our findings' threads are answered first, whatever else this run does (the
    // next round then counts what the answers settled).
    let at = round::Inputs {
        lenses: &lenses,
        diff: &diff,
        snapshot_enabled: settings.snapshot,
    };
    let snapshot = run.answer_replies(&at, &mut past, &mut out).await;
    if req.reason.is_reply() {
        if let Some(Ok(Some(snapshot))) = snapshot {
            snapshot.remove().await;
        }
        return Ok(out);
    }

    let todo = run.still_to_review(&lenses, &past, &mut out);
    if todo.groups.is_empty() {
        run.nothing_to_review(&todo, &past, &mut out).await;
        return Ok(out);
    }
    let prepared = run
        .prepare(&todo, &at, snapshot, &mut base, &mut out)
        .await?;
    run.settle_and_post(todo, prepared, &diff, &no_patch, &past, &mut out)
        .await?;
    Ok(out)
}

/// A PR its gate turned away: skipped as [`skip`], and its check run says so when the reason
/// is the PR's own state.
async fn gated(
    ctx: &FlowCtx<'_>,
    site: &check::Site<'_>,
    checks: bool,
    out: FlowOutcome,
    req: &ReviewRequest,
    reason: SkipReason,
) -> FlowOutcome {
    let shows = checks && check::shows_skip(&reason);
    let mut out = skip(out, req, reason);
    if shows && let Some(report) = out.reports.last() {
        let mut notices = Vec::new();
        check::skipped(ctx, site, report, &mut notices).await;
        out.notices.extend(notices);
    }
    out
}

/// A round that waits for its installation's daily budget (`[serve] daily_budget_usd` or
/// `daily_budget_tokens`, the one it reached in `over`): none runs now, and the check run on
/// the head the request names says why, `neutral`. What to tell about it comes back.
pub async fn wait_for_budget(
    ctx: &FlowCtx<'_>,
    req: &ReviewRequest,
    over: &crate::review::notice::Budget,
) -> Vec<Notice> {
    let mut notices = Vec::new();
    let Some(head) = req.head.as_ref().filter(|_| check::wanted(ctx, req.post)) else {
        return notices;
    };
    let site = check::Site {
        repo: &req.repo,
        pr: req.pr,
        head,
    };
    let summary = crate::render::check::budget_summary(over);
    check::waiting(ctx, &site, summary, &mut notices).await;
    notices
}

/// A job that gives up on its round after `attempts` failed ones (the last with `error`): the
/// check run it may have left `in_progress` on the head is completed `neutral`, saying so.
/// What to tell about it comes back.
pub async fn give_up(
    ctx: &FlowCtx<'_>,
    req: &ReviewRequest,
    attempts: u32,
    error: &str,
) -> Vec<Notice> {
    let mut notices = Vec::new();
    if !check::wanted(ctx, req.post) || req.reason.is_reply() {
        return notices;
    }
    let head = match &req.head {
        Some(head) => head.clone(),
        None => match ctx.github.pull_request(&req.repo, req.pr).await {
            Ok(pull) => pull.head,
            Err(_) => return notices,
        },
    };
    let site = check::Site {
        repo: &req.repo,
        pr: req.pr,
        head: &head,
    };
    check::abandoned(ctx, &site, attempts, error, &mut notices).await;
    notices
}

/// The outcome of a PR that gets no round: one skipped report, and a notice saying why.
fn skip(mut out: FlowOutcome, req: &ReviewRequest, reason: SkipReason) -> FlowOutcome {
    out.reports.push(skipped(reason.clone(), &out.head));
    out.notices.push(Notice::NotReviewing {
        repo: req.repo.clone(),
        pr: req.pr,
        reason,
    });
    out
}

fn skipped(reason: SkipReason, head: &HeadSha) -> Report {
    Report {
        head: Some(head.clone()),
        skipped: Some(reason),
        ..Report::empty()
    }
}
