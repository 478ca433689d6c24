//! Conversations (`docs/contract.md` "Conversations"): answering the human replies in our
//! findings' threads, resolving the threads of findings that were addressed, and keeping the
//! maintainers' rulings as learnings.
//!
//! An answer is idempotent through GitHub itself: its hidden marker names the reply it
//! answers, and the threads are read again before each run, so a job run twice (a crash
//! between the POST and anything after it, a redelivered event) answers nothing twice.

use std::sync::Arc;

use crate::diff::Diff;
use crate::flow::FlowCtx;
use crate::github::client::GithubError;
use crate::github::model::{RepoName, ReviewComment};
use crate::ids::{HeadSha, PrNumber};
use crate::learning::Learning;
use crate::lens::{LensRequest, LensSpec, PrInfo, Provenance};
use crate::plan::{self, ThreadMessage};
use crate::redact::redact;
use crate::review::markers::{Outcome, ReplyMarker};
use crate::review::notice::Notice;
use crate::review::panel::PanelInput;
use crate::review::rounds::Addressed;
use crate::review::threads::{State, Thread};
use crate::sanitize::sanitize;
use crate::store::NewLearning;

/// The most characters of a maintainer's reply kept in a learning.
const MAX_LEARNING_CHARS: usize = 1_000;

/// Where the conversation happens.
pub(super) struct Site<'a> {
    pub repo: &'a RepoName,
    pub pr: PrNumber,
    pub head: &'a HeadSha,
    pub pr_info: &'a PrInfo,
    /// The PR's diff at `head`.
    pub diff: &'a Diff,
    /// The round's snapshot root, when there is one.
    pub checkout: Option<Arc<std::path::Path>>,
}

/// What the answers came to.
#[derive(Debug, Default)]
pub(super) struct Answered {
    /// Our answers as posted (the threads read again would hold them).
    pub posted: Vec<ReviewComment>,
    pub withdrawn: usize,
    /// Findings a writer disputed that no model lens can answer (their fingerprints).
    pub unanswerable: Vec<String>,
    /// Every answering lens call, answered or not.
    pub lenses: Vec<Provenance>,
}

/// The threads whose last human reply waits for an answer.
pub(super) fn pending(threads: &[Thread]) -> Vec<&Thread> {
    threads.iter().filter(|t| t.pending().is_some()).collect()
}

/// Answers every pending reply in `threads`, one lens call and one reply each.
pub(super) async fn answer(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    threads: &[&Thread],
    lenses: &[LensSpec],
    notices: &mut Vec<Notice>,
) -> Answered {
    let mut out = Answered::default();
    let mut unanswerable = 0;
    let mut told_no_store = false;
    for thread in threads {
        let Some(reply) = thread.pending() else {
            continue;
        };
        let Some(spec) = answering_lens(thread, lenses) else {
            unanswerable += 1;
            if thread.ruling_writer(reply.id).is_some() {
                out.unanswerable.push(thread.fingerprint.clone());
            }
            continue;
        };
        let title = thread.title();
        let outcome = match ask(ctx, at, thread, spec, &mut out.lenses).await {
            Ok(outcome) => outcome,
            Err(error) => {
                notices.push(Notice::AnswerFailed { title, error });
                continue;
            }
        };
        // Only an answer that settles a writer's dispute changes what counts.
        let ruling = match outcome.0 {
            Outcome::Withdrawn => thread.ruling_writer(reply.id),
            _ => None,
        };
        let marker = ReplyMarker {
            reply_to: reply.id,
            outcome: outcome.0,
            finding: thread.fingerprint.clone(),
        };
        let body = crate::render::conversation::answer(
            &marker,
            outcome.1.as_deref(),
            &spec.name,
            at.head,
            outcome.0 == Outcome::Withdrawn
                && ruling.is_none()
                && matches!(
                    thread.state(),
                    State::Open | State::Answered(Outcome::Holds)
                ),
        );
        match ctx
            .github
            .reply_to_review_comment(at.repo, at.pr, thread.root, &body)
            .await
        {
            Ok(comment) => out.posted.push(comment),
            Err(e) => {
                notices.push(Notice::AnswerFailed {
                    title,
                    error: e.to_string(),
                });
                continue;
            }
        }
        notices.push(Notice::Answered {
            title: title.clone(),
            outcome: outcome.0,
            lens: spec.name.clone(),
        });
        // A withdrawal after a writer's reply is their ruling: it counts, and is kept in their
        // own words under their name.
        let Some(writer) = ruling else {
            continue;
        };
        out.withdrawn += 1;
        let Some(store) = ctx.store else {
            if !told_no_store {
                notices.push(Notice::LearningsNotKept);
                told_no_store = true;
            }
            continue;
        };
        let learning = NewLearning {
            repo: at.repo.clone(),
            learning: Learning {
                path: thread.path.clone(),
                title,
                reply: capped(&redact(&sanitize(&writer.body))),
                author: writer.author.clone(),
            },
            fingerprint: thread.fingerprint.clone(),
            source: writer.id,
        };
        if let Err(e) = store.add_learning(&learning).await {
            notices.push(Notice::LearningFailed {
                error: e.to_string(),
            });
        }
    }
    if unanswerable > 0 {
        notices.push(Notice::NoLensToAnswer {
            replies: unanswerable,
        });
    }
    out
}

/// The lens that answers for a finding: the first of its lenses on this panel that takes
/// prompts; for a finding only the builtin lens raised (its rules cannot weigh an argument),
/// the panel's first model lens.
fn answering_lens<'a>(thread: &Thread, lenses: &'a [LensSpec]) -> Option<&'a LensSpec> {
    let model = |l: &&LensSpec| l.is_model();
    thread
        .lenses
        .iter()
        .filter_map(|name| lenses.iter().find(|l| &l.name == name))
        .find(model)
        .or_else(|| lenses.iter().find(model))
}

/// One lens call: the finding, its thread and its file's diff. `Holds` when the lens raised it
/// again, `Withdrawn` when it answered with no findings; with what it said.
async fn ask(
    ctx: &FlowCtx<'_>,
    at: &Site<'_>,
    thread: &Thread,
    spec: &LensSpec,
    calls: &mut Vec<Provenance>,
) -> Result<(Outcome, Option<String>), String> {
    let file = at.diff.subset(|_, f| f.path() == thread.path);
    let messages: Vec<ThreadMessage<'_>> = thread
        .messages
        .iter()
        .map(|m| ThreadMessage {
            author: &m.author,
            body: &m.body,
        })
        .collect();
    let pr = at.pr_info.clone().sanitized();
    let finding = crate::render::check::without_marker(&thread.text);
    let prompt = plan::answer_prompt(&file, Some(&pr), &finding, &messages);
    let request = LensRequest {
        prompt,
        diff: Arc::new(file),
        pr: Some(pr),
        checkout: at.checkout.clone(),
        answer: crate::lens::contract::AnswerKind::Review,
    };
    let input = Arc::new(PanelInput::single(request));
    let run = ctx
        .panel
        .run(std::slice::from_ref(spec), input, ctx.observer)
        .await
        .into_iter()
        .next();
    if let Some(run) = &run {
        calls.push(run.provenance.clone());
    }
    match run {
        Some(run) => match run.response {
            Some(response) => {
                let outcome = match response.findings.is_empty() {
                    true => Outcome::Withdrawn,
                    false => Outcome::Holds,
                };
                let said = response
                    .summary
                    .or_else(|| response.findings.first().map(|f| f.body.clone()));
                Ok((outcome, said))
            }
            None => Err(run
                .provenance
                .error
                .unwrap_or_else(|| "the lens did not answer".to_owned())),
        },
        None => Err("the lens did not run".to_owned()),
    }
}

/// Resolves the threads of addressed findings, each with a note saying at which head; a thread
/// already resolved is left as it is.
pub(super) async fn resolve(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    head: &HeadSha,
    addressed: &[Addressed],
    notices: &mut Vec<Notice>,
) {
    if addressed.is_empty() {
        return;
    }
    let threads = match ctx.github.review_threads(repo, pr).await {
        Ok(threads) => threads,
        Err(e) => {
            notices.push(Notice::ResolveFailed {
                error: e.to_string(),
            });
            return;
        }
    };
    let mut resolved = 0;
    for a in addressed {
        let Some(thread) = threads.iter().find(|t| t.root == Some(a.thread)) else {
            continue;
        };
        if thread.resolved {
            continue;
        }
        let marker = ReplyMarker {
            reply_to: a.thread,
            outcome: Outcome::Addressed,
            finding: a.fingerprint.clone(),
        };
        let note = crate::render::conversation::addressed(&marker, head);
        let done: Result<(), GithubError> = async {
            // A note posted by a run that stopped before resolving is not posted twice.
            if !a.noted {
                ctx.github
                    .reply_to_review_comment(repo, pr, a.thread, &note)
                    .await?;
            }
            ctx.github.resolve_review_thread(&thread.id).await
        }
        .await;
        match done {
            Ok(()) => resolved += 1,
            Err(e) => notices.push(Notice::ResolveFailed {
                error: e.to_string(),
            }),
        }
    }
    if resolved > 0 {
        notices.push(Notice::Addressed { threads: resolved });
    }
}

/// A reply cut to what a learning keeps.
fn capped(text: &str) -> String {
    crate::chars::cut(text.trim(), MAX_LEARNING_CHARS, "…")
}
