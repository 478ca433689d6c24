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
mod post;
pub mod trigger;

pub use gather::REPO_CONFIG_PATH;

pub use crate::request::{Reason, ReviewRequest};
use std::sync::Arc;

use crate::config::{Config, ConfigError, PostMode, ReviewConfig};
use crate::context::Context;
use crate::diff::{Diff, ParseError};
use crate::evidence::Record;
use crate::github::client::{GithubClient, GithubError};
use crate::ids::{HeadSha, LensName};
use crate::lens::{BackendKind, LensSpec, LensStatus, PrInfo};
use crate::review::gate::{self, SkipReason};
use crate::review::markers::{ACTIONS_BOT, RoundMarker};
use crate::review::notice::Notice;
use crate::review::panel::{Panel, PanelObserver};
use crate::review::rounds::{History, settle};
use crate::review::scope;
use crate::review::threads::{Rulings, Thread};
use crate::review::{NotReviewed, NotReviewedReason, Report, pipeline};

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
    let head = pull.head.clone();
    let mut review = settings.review;
    if let Some(fail_on) = req.fail_on {
        review.fail_on = fail_on;
    }
    let site = check::Site {
        repo: &req.repo,
        pr: req.pr,
        head: &head,
    };
    let checks = check::wanted(ctx, req.post);
    let mut out = FlowOutcome {
        reports: Vec::new(),
        diff: Diff::default(),
        notices: Vec::new(),
        review,
        head: head.clone(),
        answers: Vec::new(),
    };
    out.notices
        .extend(settings.raised.into_iter().map(Notice::CapNotRaised));
    if let Some(asked) = req.head.as_ref().filter(|asked| **asked != head) {
        out.notices.push(Notice::HeadMoved {
            asked: asked.clone(),
            reviewed: head.clone(),
        });
    }

    // An event's ask counts only for the trigger label, or from someone who may write.
    let asked = match &req.reason {
        Reason::Labeled { label } => gate::labeled(label, &out.review),
        Reason::Command { user } => {
            let permission = gather::permission(ctx, &req.repo, user).await?;
            gate::command(user, permission)
        }
        _ => Ok(()),
    };
    if let Err(reason) = asked {
        return Ok(skip(out, req, reason));
    }
    if let Some(reason) = gate::skip_reason(&pull, &out.review) {
        return Ok(gated(ctx, &site, checks, out, req, reason).await);
    }

    let (diff, no_patch) = gather::files(ctx, &req.repo, req.pr, out.review.max_files).await?;
    out.diff = diff.clone();
    if gate::all_ignored(&diff, &no_patch, &out.review) {
        return Ok(gated(ctx, &site, checks, out, req, SkipReason::AllIgnored).await);
    }

    let selection = ctx
        .config
        .select_lenses(&out.review, &req.lenses)
        .map_err(FlowError::Lenses)?;
    if selection.fallback {
        out.notices.push(Notice::BuiltinOnly);
    }
    let lenses = selection.lenses;
    let (identity, assumed) = gather::identity(ctx).await?;
    let (reviews, mut comments) = gather::past_rounds(ctx, &req.repo, req.pr, &identity).await?;
    // An App's token given to the Action posts as the App's bot, not the workflow's: say what
    // to set when such rounds are passed over.
    if assumed {
        out.notices.extend(
            identity
                .other_bots_with_rounds(&reviews)
                .into_iter()
                .map(|login| Notice::RoundsNotCounted {
                    login,
                    own: ACTIONS_BOT,
                }),
        );
    }
    let pr_info = PrInfo {
        title: pull.title.clone(),
        body: pull.body.clone(),
        number: req.pr,
        head: head.clone(),
    };
    let wants_snapshot = lenses.iter().any(|l| l.backend != BackendKind::Builtin);
    let mut snapshot = None;

    // Replies in our findings' threads are answered first, whatever else this run does (the
    // next round then counts what the answers settled).
    // Only a writer's reply or resolution changes what counts: ask GitHub who wrote what.
    let ours = |id| {
        reviews
            .iter()
            .any(|r| r.id == id && RoundMarker::find(&r.body).is_some())
    };
    let unruled = Thread::collect(&comments, &identity, ours, &Rulings::default());
    let rulings = gather::rulings(ctx, &req.repo, req.pr, &identity, &unruled).await?;
    let threads = Thread::collect(&comments, &identity, ours, &rulings);
    let pending = converse::pending(&threads);
    let mut answered = converse::Answered::default();
    if req.post && !pending.is_empty() {
        let snap =
            gather::snapshot_once(ctx, &req.repo, &head, wants_snapshot, settings.snapshot).await;
        let at = converse::Site {
            repo: &req.repo,
            pr: req.pr,
            head: &head,
            pr_info: &pr_info,
            diff: &diff,
            checkout: match &snap {
                Ok(Some(snapshot)) => snapshot.context().root,
                _ => None,
            },
        };
        answered = converse::answer(ctx, &at, &pending, &lenses, &mut out.notices).await;
        comments.extend(answered.posted.iter().cloned());
        out.answers.extend(answered.lenses.iter().cloned());
        snapshot = Some(snap);
    }
    // The head's check run counts what the threads now leave standing: after answers, and
    // while a writer's dispute or resolution keeps a finding out.
    if checks && out.review.post != PostMode::PerLens {
        let history = History::read(&reviews, &comments, &identity, &rulings, None);
        if !answered.posted.is_empty() || history.any_settled() {
            let fail_on = out.review.fail_on;
            let withdrawn = answered.withdrawn;
            check::after_answers(ctx, &site, &history, withdrawn, fail_on, &mut out.notices).await;
        }
    }
    if req.reason.is_reply() {
        if let Some(Ok(Some(snapshot))) = snapshot {
            snapshot.remove().await;
        }
        return Ok(out);
    }

    let per_lens = out.review.post == PostMode::PerLens;
    let groups: Vec<Option<LensName>> = if per_lens {
        lenses.iter().map(|l| Some(l.name.clone())).collect()
    } else {
        vec![None]
    };
    let histories: Vec<History> = groups
        .iter()
        .map(|lens| {
            History::read(
                &reviews,
                &comments,
                &identity,
                &rulings,
                lens.as_ref().map(LensName::as_str),
            )
        })
        .collect();

    // The trigger label still on the PR and a permitted command ask for a round now, even on a
    // head already reviewed. A `labeled` event whose label is gone again was answered already
    // (a redelivery, or a retried job after we took it off): no second round for it.
    let label_asked = gate::trigger_label_on(&pull.labels, &out.review);
    let commanded = matches!(req.reason, Reason::Command { .. });
    let force = req.force || commanded || label_asked;
    // Which groups still need a round on this head. An ask that a round answered already (a
    // job run again after its round landed) forces nothing.
    let mut todo = Vec::new();
    let mut answered = false;
    for (lens, history) in groups.iter().zip(&histories) {
        let asked_again = req.ask.as_ref().is_some_and(|ask| history.answered(ask));
        answered |= asked_again;
        match history.reviewed(&head) {
            Some(done) if !force || asked_again => {
                let mut report = skipped(SkipReason::AlreadyReviewed, &head);
                report.round = Some(done.round);
                // A finding its thread took out (withdrawn, disputed, dismissed) no longer counts.
                report.held_verdict = Some(match history.any_settled() {
                    true => history.standing_verdict(),
                    false => done.verdict,
                });
                out.notices.push(Notice::AlreadyReviewed {
                    head: head.clone(),
                    lens: lens.clone(),
                    round: done.round,
                    trigger_label: out.review.trigger_label.clone(),
                });
                out.reports.push(report);
            }
            _ => todo.push((lens.clone(), history)),
        }
    }
    if todo.is_empty() {
        if checks {
            let done: Vec<&Report> = out.reports.iter().collect();
            let fail_on = out.review.fail_on;
            check::recover(ctx, &site, &done, &reviews, fail_on, &mut out.notices).await;
        }
        // The round landed before the label came off: take it off now.
        if label_asked
            && answered
            && let Some(n) =
                post::remove_trigger_label(ctx, &req.repo, req.pr, &out.review.trigger_label).await
        {
            out.notices.push(n);
        }
        return Ok(out);
    }
    let run_lenses: Vec<LensSpec> = match per_lens {
        true => lenses
            .iter()
            .filter(|l| todo.iter().any(|(n, _)| n.as_ref() == Some(&l.name)))
            .cloned()
            .collect(),
        false => lenses.clone(),
    };

    // A later round reviews the interdiff since the last reviewed head, when that head is an
    // ancestor of this one (all groups share the latest round's head in practice).
    let latest = todo
        .iter()
        .filter_map(|(_, h)| h.latest())
        .max_by_key(|m| m.round)
        .cloned();
    let (scoped, scope) = match &latest {
        Some(last) if last.head != head => {
            let cmp = gather::compare(ctx, &req.repo, &last.head, &head).await;
            let (d, s) = scope::interdiff(&diff, cmp.as_ref(), &last.head, last.round);
            (d, Some(s))
        }
        _ => (diff.clone(), None),
    };

    // The round starts: its check run says so while the panel runs.
    let round = todo
        .iter()
        .map(|(_, h)| h.last_round() + 1)
        .max()
        .unwrap_or(1);
    let run = match checks {
        true => check::start(ctx, &site, round, &run_lenses, &mut out.notices).await,
        false => None,
    };

    // One snapshot for the round, shared by every lens and call (and the answers before); none
    // when only the builtin lens runs (it reads the diff alone).
    let wants_snapshot = run_lenses.iter().any(|l| l.backend != BackendKind::Builtin);
    let snapshot = match snapshot {
        Some(snapshot) => snapshot,
        None => {
            gather::snapshot_once(ctx, &req.repo, &head, wants_snapshot, settings.snapshot).await
        }
    };
    let mut context = match &snapshot {
        Ok(Some(snapshot)) => snapshot.context(),
        Ok(None) => Context::default(),
        Err(why) => Context::missing(why.clone()),
    };
    // Rules are for prompts: the builtin lens alone takes none.
    if out.review.repo_rules && wants_snapshot {
        context.rules = gather::repo_rules(ctx, &req.repo, &mut base, &scoped).await?;
    }
    if wants_snapshot {
        context.notes = gather::notes(ctx, &req.repo, &mut out.notices).await;
    }
    context.attributes = Arc::new(gather::attributes(&base));
    out.notices.extend(Notice::for_context(&context.report));
    let reviewed = pipeline::review_with(
        scoped,
        Some(&diff),
        Some(pr_info),
        &run_lenses,
        &out.review,
        context,
        ctx.panel,
        ctx.observer,
    )
    .await;
    // The lenses are done with it; dropping it on an early return removes it too.
    if let Ok(Some(snapshot)) = snapshot {
        snapshot.remove().await;
    }
    let mut not_reviewed = reviewed.report.not_reviewed.clone();
    not_reviewed.extend(no_patch.iter().map(|p| NotReviewed {
        path: p.clone(),
        reason: NotReviewedReason::NoPatch,
    }));

    let target = post::Target {
        repo: &req.repo,
        pr: req.pr,
        review: &out.review,
        per_lens,
        identity: &identity,
    };
    let mut reports = Vec::new();
    let mut notices = Vec::new();
    for (lens, history) in todo {
        let (findings, provenance) =
            reviewed.for_lens(lens.as_ref(), out.review.min_blocking_confidence);
        let all_answered = provenance.iter().all(|p| p.status == LensStatus::Ok);
        let settled = settle(findings, history, &diff, all_answered);
        if let Some(ev) = &ctx.panel.evidence {
            for (f, why) in &settled.suppressed {
                ev.record(&Record::Suppressed {
                    fingerprint: &f.fingerprint,
                    title: &f.title,
                    reason: why,
                });
            }
        }
        // The pipeline's report, moved through: what the flow adds is set here, and every
        // other field (what was dropped unfounded, the snapshot, the rules) is the pipeline's.
        let mut report = Report {
            head: Some(head.clone()),
            round: Some(history.last_round() + 1),
            ask: req.ask.clone(),
            findings: settled.post,
            carried_over: settled.carried,
            lenses: provenance,
            not_reviewed: not_reviewed.clone(),
            scope: scope.clone(),
            ..reviewed.report.clone()
        };
        if req.post && !report.all_lenses_failed() {
            post::round(ctx, &target, &mut report, &mut notices).await?;
            if report.posted {
                converse::resolve(
                    ctx,
                    &req.repo,
                    req.pr,
                    &head,
                    &settled.addressed,
                    &mut notices,
                )
                .await;
            }
        } else if req.post {
            notices.push(Notice::AllLensesFailed);
        }
        reports.push(report);
    }
    if let Some(id) = run {
        let done: Vec<&Report> = reports.iter().collect();
        check::finish(ctx, &site, id, &done, &out.review, per_lens, &mut notices).await;
    }
    // The ask is answered: take the trigger label off, so the next push is a normal round.
    if label_asked
        && reports.iter().any(|r| r.posted)
        && let Some(n) =
            post::remove_trigger_label(ctx, &req.repo, req.pr, &out.review.trigger_label).await
    {
        notices.push(n);
    }
    out.reports.extend(reports);
    out.notices.extend(notices);
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
