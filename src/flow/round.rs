//! The steps of one run of [`super::review_pr`], each a screen: admit the ask, pick the lenses,
//! read the past rounds and who may rule on them, answer the replies, decide which reviews
//! still need a round on this head, prepare what the lenses read, then settle and post. The
//! flow in `mod.rs` calls them in order; every GitHub read is `gather`'s, every write `post`'s,
//! `check`'s or `converse`'s.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{FlowCtx, FlowError, FlowOutcome, check, converse, gather, outcomes, post, skipped};
use crate::config::{PostMode, RaisedCap, ReviewConfig};
use crate::context::{Context, Snapshot, Unavailable};
use crate::diff::Diff;
use crate::evidence::Record;
use crate::github::model::{PullRequest, Review, ReviewComment};
use crate::ids::{CheckRunId, HeadSha, LensName};
use crate::lens::{LensSpec, LensStatus, PrInfo, wants_snapshot};
use crate::request::{Reason, ReviewRequest};
use crate::review::gate::{self, SkipReason};
use crate::review::markers::Outcome::Withdrawn as Withdrawal;
use crate::review::markers::{ACTIONS_BOT, Identity, RoundMarker};
use crate::review::notice::Notice;
use crate::review::rounds::{History, settle};
use crate::review::scope::{self, Scope};
use crate::review::threads::{Rulings, State, Thread};
use crate::review::{NotReviewed, NotReviewedReason, Report, pipeline};
use crate::store::Outcome;

/// The snapshot a run downloads at most once: for the answers, then the round.
pub(super) type OnceSnapshot = Option<Result<Option<Snapshot>, Unavailable>>;

/// What every step of one run shares.
pub(super) struct Run<'a, 'c> {
    ctx: &'a FlowCtx<'c>,
    req: &'a ReviewRequest,
    pull: &'a PullRequest,
    /// The PR's head as the flow read it (possibly newer than the request's).
    head: HeadSha,
    /// Whether the run keeps the head's check run.
    pub checks: bool,
}

/// What earlier rounds left on the PR, and who may change what counts.
pub(super) struct Past {
    identity: Identity,
    reviews: Vec<Review>,
    comments: Vec<ReviewComment>,
    rulings: Rulings,
}

/// What the answers and the round read beyond the run: the lenses, the PR's diff, and whether
/// they may have a snapshot.
pub(super) struct Inputs<'a> {
    pub lenses: &'a [LensSpec],
    pub diff: &'a Diff,
    /// `[context] enabled`, the operator's and the repository's.
    pub snapshot_enabled: bool,
}

/// The reviews that still need a round on this head: one, or one per lens in per-lens mode.
pub(super) struct Todo {
    pub groups: Vec<(Option<LensName>, History)>,
    /// The trigger label is on the PR: a round is asked for, and the label comes off after.
    label_asked: bool,
    /// A round of ours answered this run's ask already (a job run again after it landed).
    asked_again: bool,
}

/// What the round reviewed: the part of the diff, the panel's work.
pub(super) struct Prepared {
    scope: Option<Scope>,
    reviewed: pipeline::Reviewed,
    /// The round's check run, while the panel runs.
    check_run: Option<CheckRunId>,
}

impl<'a, 'c> Run<'a, 'c> {
    pub fn new(ctx: &'a FlowCtx<'c>, req: &'a ReviewRequest, pull: &'a PullRequest) -> Self {
        Run {
            ctx,
            req,
            pull,
            head: pull.head.clone(),
            checks: check::wanted(ctx, req.post),
        }
    }

    pub fn site(&self) -> check::Site<'_> {
        check::Site {
            repo: &self.req.repo,
            pr: self.req.pr,
            head: &self.head,
        }
    }

    /// The run's outcome so far: the settings that apply (with the request's `--fail-on`), the
    /// caps the repository could not raise, and whether the head moved since the request.
    pub fn outcome(&self, mut review: ReviewConfig, raised: Vec<RaisedCap>) -> FlowOutcome {
        if let Some(fail_on) = self.req.fail_on {
            review.fail_on = fail_on;
        }
        let mut notices: Vec<Notice> = raised.into_iter().map(Notice::CapNotRaised).collect();
        if let Some(asked) = self.req.head.as_ref().filter(|a| **a != self.head) {
            notices.push(Notice::HeadMoved {
                asked: asked.clone(),
                reviewed: self.head.clone(),
            });
        }
        FlowOutcome {
            reports: Vec::new(),
            diff: Diff::default(),
            notices,
            review,
            head: self.head.clone(),
            answers: Vec::new(),
        }
    }

    /// Whether the event's ask counts: the trigger label, or a command from someone who may
    /// write.
    pub async fn admit(&self, review: &ReviewConfig) -> Result<Result<(), SkipReason>, FlowError> {
        Ok(match &self.req.reason {
            Reason::Labeled { label } => gate::labeled(label, review),
            Reason::Command { user } => {
                let permission = gather::permission(self.ctx, &self.req.repo, user).await?;
                gate::command(user, permission)
            }
            _ => Ok(()),
        })
    }

    /// The lenses this run's settings and flags select.
    pub fn lenses(&self, out: &mut FlowOutcome) -> Result<Vec<LensSpec>, FlowError> {
        let selection = self
            .ctx
            .config
            .select_lenses(&out.review, &self.req.lenses)
            .map_err(FlowError::Lenses)?;
        if selection.fallback {
            out.notices.push(Notice::BuiltinOnly);
        }
        Ok(selection.lenses)
    }

    /// Whose rounds count, the PR's reviews and thread comments, and who may rule on them.
    pub async fn past(&self, notices: &mut Vec<Notice>) -> Result<Past, FlowError> {
        let (ctx, repo, pr) = (self.ctx, &self.req.repo, self.req.pr);
        let (identity, assumed) = gather::identity(ctx).await?;
        let (reviews, comments) = gather::past_rounds(ctx, repo, pr, &identity).await?;
        // An App's token given to the Action posts as the App's bot, not the workflow's: say
        // what to set when such rounds are passed over.
        if assumed {
            notices.extend(
                identity
                    .other_bots_with_rounds(&reviews)
                    .into_iter()
                    .map(|login| Notice::RoundsNotCounted {
                        login,
                        own: ACTIONS_BOT,
                    }),
            );
        }
        // Only a writer's reply or resolution changes what counts: ask GitHub who wrote what.
        let unruled = Thread::collect(&comments, &identity, ours(&reviews), &Rulings::default());
        let rulings = gather::rulings(ctx, repo, pr, &identity, &unruled).await?;
        Ok(Past {
            identity,
            reviews,
            comments,
            rulings,
        })
    }

    fn pr_info(&self) -> PrInfo {
        PrInfo {
            title: self.pull.title.clone(),
            body: self.pull.body.clone(),
            number: self.req.pr,
            head: self.head.clone(),
        }
    }

    /// Answers the pending replies in our findings' threads (when posting), and completes the
    /// head's check run with what the threads leave standing. The snapshot, when one was
    /// downloaded for the answers, comes back for the round.
    pub async fn answer_replies(
        &self,
        at: &Inputs<'_>,
        past: &mut Past,
        out: &mut FlowOutcome,
    ) -> OnceSnapshot {
        let (ctx, req) = (self.ctx, self.req);
        let threads = Thread::collect(
            &past.comments,
            &past.identity,
            ours(&past.reviews),
            &past.rulings,
        );
        let pending = converse::pending(&threads);
        let mut answered = converse::Answered::default();
        let mut snapshot = None;
        if req.post && !pending.is_empty() {
            let wanted = wants_snapshot(at.lenses);
            let snap =
                gather::snapshot_once(ctx, &req.repo, &self.head, wanted, at.snapshot_enabled)
                    .await;
            let pr_info = self.pr_info();
            let site = converse::Site {
                repo: &req.repo,
                pr: req.pr,
                head: &self.head,
                pr_info: &pr_info,
                diff: at.diff,
                checkout: match &snap {
                    Ok(Some(snapshot)) => snapshot.context().root,
                    _ => None,
                },
            };
            answered = converse::answer(ctx, &site, &pending, at.lenses, &mut out.notices).await;
            past.comments.extend(answered.posted.iter().cloned());
            self.settle_threads(past, &answered.unanswerable, out).await;
            out.answers.extend(answered.lenses.iter().cloned());
            snapshot = Some(snap);
        }
        // The head's check run counts what the threads now leave standing: after answers, and
        // while a writer's dispute or resolution keeps a finding out.
        if self.checks && out.review.post != PostMode::PerLens {
            let history = past.history(None);
            if !answered.posted.is_empty() || history.any_settled() {
                let (fail_on, withdrawn) = (out.review.fail_on, answered.withdrawn);
                let site = self.site();
                check::after_answers(ctx, &site, &history, withdrawn, fail_on, &mut out.notices)
                    .await;
            }
        }
        snapshot
    }

    /// Keeps what the threads settled (`docs/contract.md` "Outcomes"): a finding a writer
    /// resolved is dismissed, one its lens withdrew after a writer's reply is withdrawn, and one
    /// a writer disputed with no model lens to answer is disputed. The first outcome stands.
    async fn settle_threads(&self, past: &Past, unanswerable: &[String], out: &mut FlowOutcome) {
        if self.ctx.store.is_none() {
            return;
        }
        let threads = Thread::collect(
            &past.comments,
            &past.identity,
            ours(&past.reviews),
            &past.rulings,
        );
        let of = |wanted: State| -> Vec<String> {
            threads
                .iter()
                .filter(|t| t.state() == wanted)
                .map(|t| t.fingerprint.clone())
                .collect()
        };
        let (repo, pr, notices) = (&self.req.repo, self.req.pr, &mut out.notices);
        for (fingerprints, outcome) in [
            (of(State::Dismissed), Outcome::Dismissed),
            (of(State::Answered(Withdrawal)), Outcome::Withdrawn),
            (unanswerable.to_vec(), Outcome::Disputed),
        ] {
            outcomes::settle(self.ctx, repo, pr, &fingerprints, outcome, notices).await;
        }
    }

    /// Which reviews still need a round on this head; the others are reported as already
    /// reviewed, with the verdict that stands. The trigger label still on the PR and a
    /// permitted command ask for a round now, even on a head already reviewed; an ask a round
    /// answered already forces nothing.
    pub fn still_to_review(&self, lenses: &[LensSpec], past: &Past, out: &mut FlowOutcome) -> Todo {
        let groups: Vec<Option<LensName>> = match out.review.post {
            PostMode::PerLens => lenses.iter().map(|l| Some(l.name.clone())).collect(),
            PostMode::Merged => vec![None],
        };
        let label_asked = gate::trigger_label_on(&self.pull.labels, &out.review);
        let commanded = matches!(self.req.reason, Reason::Command { .. });
        let force = self.req.force || commanded || label_asked;
        let mut todo = Todo {
            groups: Vec::new(),
            label_asked,
            asked_again: false,
        };
        for lens in groups {
            let history = past.history(lens.as_ref().map(LensName::as_str));
            let asked_again = self.req.ask.as_ref().is_some_and(|a| history.answered(a));
            todo.asked_again |= asked_again;
            match history.reviewed(&self.head) {
                Some(done) if !force || asked_again => {
                    let mut report = skipped(SkipReason::AlreadyReviewed, &self.head);
                    report.round = Some(done.round);
                    // A finding its thread took out (withdrawn, disputed, dismissed) no longer
                    // counts.
                    report.held_verdict = Some(match history.any_settled() {
                        true => history.standing_verdict(),
                        false => done.verdict,
                    });
                    out.notices.push(Notice::AlreadyReviewed {
                        head: self.head.clone(),
                        lens: lens.clone(),
                        round: done.round,
                        trigger_label: out.review.trigger_label.clone(),
                    });
                    out.reports.push(report);
                }
                _ => todo.groups.push((lens, history)),
            }
        }
        todo
    }

    /// Every review had its round on this head: a check run left in progress is completed, and
    /// a trigger label a landed round did not take off comes off now.
    pub async fn nothing_to_review(&self, todo: &Todo, past: &Past, out: &mut FlowOutcome) {
        if self.checks {
            let done: Vec<&Report> = out.reports.iter().collect();
            let (site, fail_on) = (self.site(), out.review.fail_on);
            check::recover(
                self.ctx,
                &site,
                &done,
                &past.reviews,
                fail_on,
                &mut out.notices,
            )
            .await;
        }
        if todo.label_asked && todo.asked_again {
            self.take_label_off(&mut out.notices, &out.review.trigger_label)
                .await;
        }
    }

    async fn take_label_off(&self, notices: &mut Vec<Notice>, label: &str) {
        let (repo, pr) = (&self.req.repo, self.req.pr);
        if let Some(n) = post::remove_trigger_label(self.ctx, repo, pr, label).await {
            notices.push(n);
        }
    }

    /// The round's start: which lenses run, what they review (the interdiff since the last
    /// reviewed head, when it is an ancestor), its check run, the snapshot, the rules, notes
    /// and attributes — then the panel.
    pub async fn prepare(
        &self,
        todo: &Todo,
        at: &Inputs<'_>,
        snapshot: OnceSnapshot,
        base: &mut gather::BaseFiles,
        out: &mut FlowOutcome,
    ) -> Result<Prepared, FlowError> {
        let (ctx, req, lenses, diff) = (self.ctx, self.req, at.lenses, at.diff);
        let run_lenses: Vec<LensSpec> = match out.review.post {
            PostMode::PerLens => lenses
                .iter()
                .filter(|l| todo.groups.iter().any(|(n, _)| n.as_ref() == Some(&l.name)))
                .cloned()
                .collect(),
            PostMode::Merged => lenses.to_vec(),
        };
        let latest = todo
            .groups
            .iter()
            .filter_map(|(_, h)| h.latest())
            .max_by_key(|m| m.round)
            .cloned();
        let (scoped, scope) = match &latest {
            Some(last) if last.head != self.head => {
                let cmp = gather::compare(ctx, &req.repo, &last.head, &self.head).await;
                let (d, s) = scope::interdiff(diff, cmp.as_ref(), &last.head, last.round);
                (d, Some(s))
            }
            _ => (diff.clone(), None),
        };
        // The round starts: its check run says so while the panel runs.
        let round = todo
            .groups
            .iter()
            .map(|(_, h)| h.last_round() + 1)
            .max()
            .unwrap_or(1);
        let check_run = match self.checks {
            true => check::start(ctx, &self.site(), round, &run_lenses, &mut out.notices).await,
            false => None,
        };
        // One snapshot for the round, shared by every lens and call (and the answers before);
        // none when only the builtin lens runs (it reads the diff alone).
        let wanted = wants_snapshot(&run_lenses);
        let snapshot = match snapshot {
            Some(snapshot) => snapshot,
            None => {
                gather::snapshot_once(ctx, &req.repo, &self.head, wanted, at.snapshot_enabled).await
            }
        };
        let mut context = match &snapshot {
            Ok(Some(snapshot)) => snapshot.context(),
            Ok(None) => Context::default(),
            Err(why) => Context::missing(why.clone()),
        };
        // Rules and notes are for prompts: the builtin lens alone takes none.
        if out.review.repo_rules && wanted {
            context.rules = gather::repo_rules(ctx, &req.repo, base, &scoped).await?;
        }
        if wanted {
            context.notes = gather::notes(ctx, &req.repo, &mut out.notices).await;
        }
        context.attributes = Arc::new(gather::attributes(base));
        out.notices.extend(Notice::for_context(&context.report));
        // What earlier rounds reported is carried over, not cross-examined again.
        let earlier: BTreeSet<String> = todo
            .groups
            .iter()
            .flat_map(|(_, h)| h.findings.keys().cloned())
            .collect();
        let at_round = pipeline::ReviewAt {
            anchors: Some(diff),
            earlier: &earlier,
        };
        let reviewed = pipeline::review_with(
            scoped,
            at_round,
            Some(self.pr_info()),
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
        Ok(Prepared {
            scope,
            reviewed,
            check_run,
        })
    }

    /// Each review settles what to post and count against its history, posts (when asked and
    /// some lens answered), resolves the threads its round addressed; then the check run is
    /// completed and the trigger label comes off.
    pub async fn settle_and_post(
        &self,
        todo: Todo,
        prepared: Prepared,
        diff: &Diff,
        no_patch: &[String],
        past: &Past,
        out: &mut FlowOutcome,
    ) -> Result<(), FlowError> {
        let (ctx, req) = (self.ctx, self.req);
        let reviewed = &prepared.reviewed;
        let mut not_reviewed = reviewed.report.not_reviewed.clone();
        not_reviewed.extend(no_patch.iter().map(|p| NotReviewed {
            path: p.clone(),
            reason: NotReviewedReason::NoPatch,
        }));
        let per_lens = out.review.post == PostMode::PerLens;
        let target = post::Target {
            repo: &req.repo,
            pr: req.pr,
            review: &out.review,
            per_lens,
            identity: &past.identity,
        };
        let mut reports = Vec::new();
        let mut notices = Vec::new();
        for (lens, history) in &todo.groups {
            let (findings, provenance) =
                reviewed.for_lens(lens.as_ref(), out.review.min_blocking_confidence);
            let all_answered = provenance.iter().all(|p| p.status == LensStatus::Ok);
            let settled = settle(findings, history, diff, all_answered);
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
            // other field (what was dropped unfounded, the snapshot, the rules) is the
            // pipeline's.
            let mut report = Report {
                head: Some(self.head.clone()),
                round: Some(history.last_round() + 1),
                ask: req.ask.clone(),
                findings: settled.post,
                carried_over: settled.carried,
                lenses: provenance,
                not_reviewed: not_reviewed.clone(),
                scope: prepared.scope.clone(),
                // Per lens: the verdicts on its own findings, the calls it made as a verifier.
                verification: reviewed
                    .report
                    .verification
                    .as_ref()
                    .map(|v| v.for_lens(lens.as_ref())),
                ..reviewed.report.clone()
            };
            if req.post && !report.all_lenses_failed() {
                post::round(ctx, &target, &mut report, &mut notices).await?;
                if report.posted {
                    let (repo, pr, head) = (&req.repo, req.pr, &self.head);
                    outcomes::posted(ctx, repo, pr, &report, &mut notices).await;
                    converse::resolve(ctx, repo, pr, head, &settled.addressed, &mut notices).await;
                    let addressed: Vec<String> = settled
                        .addressed
                        .iter()
                        .map(|a| a.fingerprint.clone())
                        .collect();
                    outcomes::settle(ctx, repo, pr, &addressed, Outcome::Addressed, &mut notices)
                        .await;
                }
            } else if req.post {
                notices.push(Notice::AllLensesFailed);
            }
            reports.push(report);
        }
        if let Some(id) = prepared.check_run {
            let done: Vec<&Report> = reports.iter().collect();
            let (site, review) = (self.site(), &out.review);
            check::finish(ctx, &site, id, &done, review, per_lens, &mut notices).await;
        }
        // The ask is answered: take the trigger label off, so the next push is a normal round.
        if todo.label_asked && reports.iter().any(|r| r.posted) {
            self.take_label_off(&mut notices, &out.review.trigger_label)
                .await;
        }
        out.reports.extend(reports);
        out.notices.extend(notices);
        Ok(())
    }
}

impl Past {
    /// The history of our rounds (of one lens's, in per-lens mode) as the threads leave it.
    fn history(&self, lens: Option<&str>) -> History {
        History::read(
            &self.reviews,
            &self.comments,
            &self.identity,
            &self.rulings,
            lens,
        )
    }
}

/// Which reviews are our rounds: those carrying a round marker (only their comments root
/// threads).
fn ours(reviews: &[Review]) -> impl Fn(u64) -> bool + '_ {
    move |id| {
        reviews
            .iter()
            .any(|r| r.id == id && RoundMarker::find(&r.body).is_some())
    }
}
