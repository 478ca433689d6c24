//! Webhook payloads, read into our own minimal types: only the fields reviewbot acts on, each
//! checked, so a delivery we cannot read is refused with the field that was wrong
//! (`pull_request.head.sha: missing`) instead of acting on half a payload.
//!
//! Parsing happens once, after the signature is verified, straight from the raw bytes.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use crate::github::model::{RepoName, User};
use crate::ids::{HeadSha, InstallationId, PrNumber};

/// One delivery, by its `X-GitHub-Event` header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    PullRequest(PullRequestEvent),
    IssueComment(IssueCommentEvent),
    ReviewComment(ReviewCommentEvent),
    Ping,
    /// Every other event (`installation`, `pull_request_review`, …): acknowledged, not acted on.
    Other {
        event: String,
        action: Option<String>,
    },
}

/// A `pull_request` delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub repo: RepoName,
    pub number: PrNumber,
    pub head: HeadSha,
    pub draft: bool,
    /// `open` or `closed`.
    pub state: String,
    /// The PR's labels after the action.
    pub labels: Vec<String>,
    /// The label added or removed, for `labeled` / `unlabeled`.
    pub label: Option<String>,
    /// Present in deliveries to a GitHub App.
    pub installation: Option<InstallationId>,
    pub sender: User,
}

/// An `issue_comment` delivery (issues and PRs share comments).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub repo: RepoName,
    /// The issue's number; a PR's number when `on_pr`.
    pub number: PrNumber,
    /// The issue is a pull request (`issue.pull_request` is present).
    pub on_pr: bool,
    pub body: String,
    pub author: User,
    pub installation: Option<InstallationId>,
    pub sender: User,
}

/// A `pull_request_review_comment` delivery: a comment on a PR's diff, or a reply in a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewCommentEvent {
    pub action: String,
    pub repo: RepoName,
    pub number: PrNumber,
    pub comment: u64,
    /// The thread's first comment, for a reply.
    pub in_reply_to: Option<u64>,
    pub author: User,
    pub installation: Option<InstallationId>,
    pub sender: User,
}

/// Why a payload could not be read. The message names the field; it never quotes the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("{0}: missing")]
    Missing(&'static str),
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: String },
    #[error("body: not JSON ({0})")]
    NotJson(String),
    #[error("body: not a JSON object")]
    NotObject,
}

impl EventError {
    /// The field at fault (`body` for a body that is not JSON), safe to log.
    pub fn path(&self) -> &str {
        match self {
            EventError::Missing(path) => path,
            EventError::Invalid { path, .. } => path,
            EventError::NotJson(_) | EventError::NotObject => "body",
        }
    }
}

impl Event {
    /// Reads a delivery's raw body, as the `X-GitHub-Event` header names it.
    pub fn parse(event: &str, body: &[u8]) -> Result<Event, EventError> {
        match event {
            "pull_request" => parse_pull_request(from_json(body)?).map(Event::PullRequest),
            "issue_comment" => parse_issue_comment(from_json(body)?).map(Event::IssueComment),
            "pull_request_review_comment" => {
                parse_review_comment(from_json(body)?).map(Event::ReviewComment)
            }
            "ping" => from_json::<IgnoredAny>(body).map(|_| Event::Ping),
            other => {
                let raw: ActionOnly = from_json(body)?;
                Ok(Event::Other {
                    event: other.to_owned(),
                    action: raw.action,
                })
            }
        }
    }

    /// The `X-GitHub-Event` name.
    pub fn name(&self) -> &str {
        match self {
            Event::PullRequest(_) => "pull_request",
            Event::IssueComment(_) => "issue_comment",
            Event::ReviewComment(_) => "pull_request_review_comment",
            Event::Ping => "ping",
            Event::Other { event, .. } => event,
        }
    }

    /// The payload's `action`; `ping` has none.
    pub fn action(&self) -> Option<&str> {
        match self {
            Event::PullRequest(e) => Some(&e.action),
            Event::IssueComment(e) => Some(&e.action),
            Event::ReviewComment(e) => Some(&e.action),
            Event::Ping => None,
            Event::Other { action, .. } => action.as_deref(),
        }
    }
}

/// Deserialises with the path of whatever did not fit (`pull_request.number: invalid type …`).
fn from_json<'de, T: Deserialize<'de>>(body: &'de [u8]) -> Result<T, EventError> {
    // serde would also read a struct from a JSON array; every payload is an object.
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') => return Err(EventError::NotObject),
        _ => {}
    }
    // The plain parse first: tracking the path costs on every key of a 28 KB payload, and it is
    // only needed to say where a payload that failed went wrong.
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = match e.path().to_string() {
            root if root == "." => "body".to_owned(),
            path => path,
        };
        let inner = e.into_inner();
        if inner.is_data() {
            EventError::Invalid {
                path,
                problem: inner.to_string(),
            }
        } else {
            EventError::NotJson(inner.to_string())
        }
    })?;
    de.end().map_err(|e| EventError::NotJson(e.to_string()))?;
    Ok(value)
}

fn need<T>(value: Option<T>, path: &'static str) -> Result<T, EventError> {
    value.ok_or(EventError::Missing(path))
}

fn repo(raw: Option<RawRepo>) -> Result<RepoName, EventError> {
    let full_name = need(raw.and_then(|r| r.full_name), "repository.full_name")?;
    RepoName::parse(&full_name).ok_or_else(|| EventError::Invalid {
        path: "repository.full_name".into(),
        problem: "not an owner/name".into(),
    })
}

fn user(raw: Option<RawUser>, path: &'static str) -> Result<User, EventError> {
    let raw = need(raw, path)?;
    Ok(User {
        login: need(raw.login, path)?,
        kind: raw.kind.unwrap_or_default(),
    })
}

fn installation(raw: Option<RawInstallation>) -> Result<Option<InstallationId>, EventError> {
    raw.map(|i| need(i.id, "installation.id").map(InstallationId))
        .transpose()
}

fn parse_pull_request(raw: PullRequestPayload) -> Result<PullRequestEvent, EventError> {
    let action = need(raw.action, "action")?;
    let pr = need(raw.pull_request, "pull_request")?;
    let sha = need(pr.head.and_then(|h| h.sha), "pull_request.head.sha")?;
    let head = HeadSha::parse(&sha).ok_or_else(|| EventError::Invalid {
        path: "pull_request.head.sha".into(),
        problem: "not a 40-hex commit SHA".into(),
    })?;
    let labels = pr
        .labels
        .unwrap_or_default()
        .into_iter()
        .map(|l| need(l.name, "pull_request.labels.name"))
        .collect::<Result<_, _>>()?;
    let label = raw.label.map(|l| need(l.name, "label.name")).transpose()?;
    if matches!(action.as_str(), "labeled" | "unlabeled") && label.is_none() {
        return Err(EventError::Missing("label"));
    }
    Ok(PullRequestEvent {
        number: PrNumber(need(raw.number.or(pr.number), "number")?),
        repo: repo(raw.repository)?,
        head,
        draft: pr.draft.unwrap_or(false),
        state: need(pr.state, "pull_request.state")?,
        labels,
        label,
        installation: installation(raw.installation)?,
        sender: user(raw.sender, "sender.login")?,
        action,
    })
}

fn parse_issue_comment(raw: IssueCommentPayload) -> Result<IssueCommentEvent, EventError> {
    let issue = need(raw.issue, "issue")?;
    let comment = need(raw.comment, "comment")?;
    Ok(IssueCommentEvent {
        action: need(raw.action, "action")?,
        repo: repo(raw.repository)?,
        number: PrNumber(need(issue.number, "issue.number")?),
        on_pr: issue.pull_request.is_some(),
        body: need(comment.body, "comment.body")?,
        author: user(comment.user, "comment.user.login")?,
        installation: installation(raw.installation)?,
        sender: user(raw.sender, "sender.login")?,
    })
}

fn parse_review_comment(raw: ReviewCommentPayload) -> Result<ReviewCommentEvent, EventError> {
    let pr = need(raw.pull_request, "pull_request")?;
    let comment = need(raw.comment, "comment")?;
    Ok(ReviewCommentEvent {
        action: need(raw.action, "action")?,
        repo: repo(raw.repository)?,
        number: PrNumber(need(pr.number, "pull_request.number")?),
        comment: need(comment.id, "comment.id")?,
        in_reply_to: comment.in_reply_to_id,
        author: user(comment.user, "comment.user.login")?,
        installation: installation(raw.installation)?,
        sender: user(raw.sender, "sender.login")?,
    })
}

// The wire shapes: every field optional, so a missing one is reported by name above rather than
// as serde's "missing field" without a path.

#[derive(Deserialize)]
struct ActionOnly {
    action: Option<String>,
}

#[derive(Deserialize)]
struct PullRequestPayload {
    action: Option<String>,
    number: Option<u64>,
    pull_request: Option<RawPull>,
    label: Option<RawLabel>,
    repository: Option<RawRepo>,
    installation: Option<RawInstallation>,
    sender: Option<RawUser>,
}

#[derive(Deserialize)]
struct RawPull {
    number: Option<u64>,
    head: Option<RawHead>,
    draft: Option<bool>,
    state: Option<String>,
    labels: Option<Vec<RawLabel>>,
}

#[derive(Deserialize)]
struct RawHead {
    sha: Option<String>,
}

#[derive(Deserialize)]
struct RawLabel {
    name: Option<String>,
}

#[derive(Deserialize)]
struct RawRepo {
    full_name: Option<String>,
}

#[derive(Deserialize)]
struct RawInstallation {
    id: Option<u64>,
}

#[derive(Deserialize)]
struct RawUser {
    login: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct IssueCommentPayload {
    action: Option<String>,
    issue: Option<RawIssue>,
    comment: Option<RawComment>,
    repository: Option<RawRepo>,
    installation: Option<RawInstallation>,
    sender: Option<RawUser>,
}

#[derive(Deserialize)]
struct ReviewCommentPayload {
    action: Option<String>,
    pull_request: Option<RawPull>,
    comment: Option<RawReviewComment>,
    repository: Option<RawRepo>,
    installation: Option<RawInstallation>,
    sender: Option<RawUser>,
}

#[derive(Deserialize)]
struct RawReviewComment {
    id: Option<u64>,
    in_reply_to_id: Option<u64>,
    user: Option<RawUser>,
}

#[derive(Deserialize)]
struct RawIssue {
    number: Option<u64>,
    /// Present (an object of URLs) only when the issue is a PR.
    pull_request: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RawComment {
    body: Option<String>,
    user: Option<RawUser>,
}

#[cfg(test)]
pub(crate) mod tests;
