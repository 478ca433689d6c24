//! Post: every GitHub write of the flow — the round's review, and taking the trigger label off.
//! Never blindly re-sends a write that may have landed: it looks for its marker first.

use crate::config::ReviewConfig;
use crate::flow::{FlowCtx, FlowError, gather};
use crate::github::client::GithubError;
use crate::github::model::{NewComment, NewReview, RepoName, Review, ReviewEvent};
use crate::ids::PrNumber;
use crate::render::markdown::{self, BodyOptions};
use crate::review::Report;
use crate::review::finding::Finding;
use crate::review::gate::{self, SkipReason};
use crate::review::markers::Identity;
use crate::review::notice::Notice;
use crate::review::rounds::History;
use crate::review::threads::Rulings;

/// Where a round goes and how it is told apart from others.
pub(super) struct Target<'a> {
    pub repo: &'a RepoName,
    pub pr: PrNumber,
    pub review: &'a ReviewConfig,
    pub per_lens: bool,
    pub identity: &'a Identity,
}

/// Posts one round: checks the opt-out label again, sends the review with its line comments,
/// and on a 422 sends it again with every finding in the body. Sets `report.posted` when the
/// review is on GitHub.
pub(super) async fn round(
    ctx: &FlowCtx<'_>,
    to: &Target<'_>,
    report: &mut Report,
    notices: &mut Vec<Notice>,
) -> Result<(), FlowError> {
    if !ctx.has_token {
        notices.push(Notice::NoToken);
        return Ok(());
    }
    let labels = gather::labels(ctx, to.repo, to.pr).await?;
    if gate::opted_out(&labels, to.review) {
        let label = to.review.opt_out_label.clone();
        notices.push(Notice::OptedOutMeanwhile {
            label: label.clone(),
        });
        report.skipped = Some(SkipReason::OptOut { label });
        return Ok(());
    }
    let opts = BodyOptions {
        opt_out_label: &to.review.opt_out_label,
        max_comments: to.review.max_comments,
        per_lens: to.per_lens,
    };
    let Some(head) = report.head.clone() else {
        return Ok(());
    };
    let event = if to.review.request_changes && report.verdict().blocking > 0 {
        ReviewEvent::RequestChanges
    } else {
        ReviewEvent::Comment
    };
    let full = NewReview {
        commit_id: head.to_string(),
        body: markdown::body(report, &opts),
        event,
        comments: markdown::attached(report, to.review.max_comments)
            .into_iter()
            .map(new_comment)
            .collect(),
    };
    match send(ctx, to, &full, report).await {
        Ok(()) => {}
        Err(GithubError::Unprocessable { errors, .. }) => {
            // GitHub named no comment: put every finding in the body (none is ever lost).
            notices.push(Notice::CommentsRefused { errors });
            let body_only = NewReview {
                body: markdown::body(
                    report,
                    &BodyOptions {
                        max_comments: 0,
                        ..opts
                    },
                ),
                comments: Vec::new(),
                ..full
            };
            send(ctx, to, &body_only, report).await?;
        }
        Err(e @ GithubError::Forbidden { .. }) => {
            notices.push(Notice::PostForbidden {
                error: e.to_string(),
            });
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    }
    report.posted = true;
    Ok(())
}

/// Takes the trigger label off once its round is posted, so the next push is a normal round.
/// A failure is a warning: the round is posted.
pub(super) async fn remove_trigger_label(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    label: &str,
) -> Option<Notice> {
    let e = ctx.github.remove_label(repo, pr, label).await.err()?;
    Some(Notice::LabelNotRemoved {
        label: label.to_owned(),
        error: e.to_string(),
    })
}

/// One review POST; when GitHub did not confirm it, looks for the round's marker before the
/// one retry, so a review that did land is never posted twice.
async fn send(
    ctx: &FlowCtx<'_>,
    to: &Target<'_>,
    review: &NewReview,
    report: &Report,
) -> Result<(), GithubError> {
    // In per-lens mode the report is that one lens's review.
    let lens = to
        .per_lens
        .then(|| report.lenses.first().map(|l| l.lens.as_str()))
        .flatten();
    let budget = ctx.config.github.max_rate_limit_wait;
    let mut waited = std::time::Duration::ZERO;
    let mut backoff = POST_BACKOFF;
    let mut tries = 1;
    loop {
        match ctx.github.create_review(to.repo, to.pr, review).await {
            Ok(_) => return Ok(()),
            Err(e @ GithubError::WriteUncertain { .. }) => {
                // It may have landed: look for the round's marker before any new POST.
                let reviews = gather::reviews(ctx, to.repo, to.pr).await?;
                if landed(&reviews, report, to.identity, lens) {
                    return Ok(());
                }
                if tries >= POST_ATTEMPTS || waited + backoff > budget {
                    return Err(e);
                }
                tracing::warn!(error = %e, wait_ms = backoff.as_millis() as u64, "the review POST went unconfirmed; trying again");
                tokio::time::sleep(backoff).await;
                waited += backoff;
                backoff *= 2;
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Tries of one review POST that GitHub leaves unconfirmed (5xx, a timeout), each after looking
/// for its marker, with a doubling wait between them (within `max_rate_limit_wait`).
const POST_ATTEMPTS: u32 = 5;
const POST_BACKOFF: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether a review of ours for this round and head exists (for `lens`, in per-lens mode).
fn landed(reviews: &[Review], report: &Report, identity: &Identity, lens: Option<&str>) -> bool {
    History::read(reviews, &[], identity, &Rulings::default(), lens)
        .rounds
        .iter()
        .any(|(_, m)| Some(m.round) == report.round && Some(&m.head) == report.head.as_ref())
}

fn new_comment(f: &Finding) -> NewComment {
    NewComment {
        path: f.path.clone(),
        body: markdown::comment(f),
        line: f.line,
        side: f.side,
        start_line: f.start_line,
        start_side: f.start_line.map(|_| f.side),
    }
}
