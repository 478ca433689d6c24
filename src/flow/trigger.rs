//! The trigger stage for webhook deliveries (pure): which events ask for a round, as the App
//! events table in the README says. It decides only what the event itself shows; the flow
//! applies the gates (opt-out label, draft, trigger label, the commenter's permission).

use crate::github::events::{Event, IssueCommentEvent, PullRequestEvent, ReviewCommentEvent};
use crate::github::model::{RepoName, User};
use crate::ids::{HeadSha, InstallationId, PrNumber};
use crate::request::{Reason, ReviewRequest};

/// The comment that asks for a round.
const COMMAND: [&str; 2] = ["/reviewbot", "review"];

/// The round an event asks for, if any. `own_login` is reviewbot's identity (`<slug>[bot]`):
/// whatever it does itself (removing the trigger label, posting a round) starts nothing.
pub fn request_for(event: &Event, own_login: &str) -> Option<ReviewRequest> {
    match event {
        Event::PullRequest(e) if !is_own(&e.sender, own_login) => pull_request(e),
        Event::IssueComment(e)
            if !is_own(&e.sender, own_login) && !is_own(&e.author, own_login) =>
        {
            comment(e)
        }
        Event::ReviewComment(e) if !is_own(&e.sender, own_login) => reply(e),
        _ => None,
    }
}

/// A human's reply in a thread asks for answers (the flow finds which thread holds a finding
/// of ours); a bot's never does, so two bots cannot talk to each other.
fn reply(e: &ReviewCommentEvent) -> Option<ReviewRequest> {
    if e.action != "created" || e.in_reply_to.is_none() || e.author.is_bot() {
        return None;
    }
    if e.author.login.ends_with("[bot]") {
        return None;
    }
    let reason = Reason::Reply {
        comment: e.comment,
        user: e.author.login.clone(),
    };
    // Answers are about the PR's current head, whatever it is when the job runs.
    Some(request(
        e.repo.clone(),
        e.number,
        None,
        e.installation,
        reason,
    ))
}

/// What a delivery asks the flow for: posting, with the repository's own settings.
fn request(
    repo: RepoName,
    pr: PrNumber,
    head: Option<HeadSha>,
    installation: Option<InstallationId>,
    reason: Reason,
) -> ReviewRequest {
    ReviewRequest {
        repo,
        pr,
        head,
        installation,
        reason,
        // Set by the flow once an explicit ask is confirmed.
        force: false,
        post: true,
        lenses: Vec::new(),
        ask: None,
        fail_on: None,
    }
}

fn is_own(user: &User, own_login: &str) -> bool {
    !own_login.is_empty() && user.login.eq_ignore_ascii_case(own_login)
}

fn pull_request(e: &PullRequestEvent) -> Option<ReviewRequest> {
    if e.state != "open" {
        return None;
    }
    let reason = match e.action.as_str() {
        // A draft waits for `ready_for_review`.
        "opened" | "reopened" | "synchronize" if e.draft => return None,
        "opened" => Reason::Opened,
        "reopened" => Reason::Reopened,
        "synchronize" => Reason::Synchronize,
        "ready_for_review" => Reason::ReadyForReview,
        // Whether this is the trigger label is the repository's config, which the flow reads.
        "labeled" => Reason::Labeled {
            label: e.label.clone()?,
        },
        _ => return None,
    };
    Some(request(
        e.repo.clone(),
        e.number,
        Some(e.head.clone()),
        e.installation,
        reason,
    ))
}

fn comment(e: &IssueCommentEvent) -> Option<ReviewRequest> {
    if e.action != "created" || !e.on_pr || !is_command(&e.body) {
        return None;
    }
    let reason = Reason::Command {
        user: e.author.login.clone(),
    };
    // A comment does not name the head; the flow reviews the PR's current one.
    Some(request(
        e.repo.clone(),
        e.number,
        None,
        e.installation,
        reason,
    ))
}

/// The comment's first line is the command and nothing else (spacing aside): not a quote of it
/// (`> /reviewbot review`), not a mention inside a sentence.
fn is_command(body: &str) -> bool {
    let first = body.trim().lines().next().unwrap_or_default();
    first.split_whitespace().eq(COMMAND)
}

#[cfg(test)]
mod tests;
