//! What reviewbot reads from and writes to GitHub, as its own types (converted once, at the
//! boundary; octocrab's models never travel further).

use serde::{Deserialize, Serialize};

use crate::diff::Side;
use crate::ids::{CheckRunId, HeadSha, PrNumber};

pub use crate::ids::RepoName;

/// A GitHub account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: String,
}

impl User {
    pub fn is_bot(&self) -> bool {
        self.kind.eq_ignore_ascii_case("bot")
    }
}

/// What a user may do in a repository: the collaborator permission API's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
    /// Not a collaborator (or a user GitHub does not know).
    None,
}

impl Permission {
    /// From the API's `role_name` (`admin`, `maintain`, `write`, `triage`, `read`, or an
    /// organisation's custom role) and `permission` (the base: `admin`, `write`, `read`,
    /// `none`). A custom role counts as its base permission.
    pub fn from_api(role_name: Option<&str>, permission: Option<&str>) -> Permission {
        let parse = |s: &str| match s {
            "admin" => Some(Permission::Admin),
            "maintain" => Some(Permission::Maintain),
            "write" => Some(Permission::Write),
            "triage" => Some(Permission::Triage),
            "read" => Some(Permission::Read),
            "none" => Some(Permission::None),
            _ => None,
        };
        role_name
            .and_then(parse)
            .or_else(|| permission.and_then(parse))
            .unwrap_or(Permission::None)
    }

    /// Whether this is write access or more: who may ask for a round with a command.
    pub fn can_write(self) -> bool {
        matches!(
            self,
            Permission::Admin | Permission::Maintain | Permission::Write
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Admin => "admin",
            Permission::Maintain => "maintain",
            Permission::Write => "write",
            Permission::Triage => "triage",
            Permission::Read => "read",
            Permission::None => "none",
        }
    }
}

/// The pull request fields reviewbot uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    pub number: PrNumber,
    pub title: String,
    pub body: String,
    /// `open` or `closed`.
    pub state: String,
    pub draft: bool,
    pub head: HeadSha,
    pub base: HeadSha,
    /// The base branch name (where `.github/reviewbot.toml` is read from).
    pub base_ref: String,
    pub labels: Vec<String>,
    pub author: User,
    pub changed_files: u64,
}

/// One file of a PR, as the files endpoint lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrFile {
    pub filename: String,
    pub previous_filename: Option<String>,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    pub status: String,
    /// Absent for binary files and diffs too large for GitHub to show.
    pub patch: Option<String>,
}

/// A submitted review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub id: u64,
    pub user: Option<User>,
    pub body: String,
    pub commit_id: Option<String>,
    /// Upper-case REST state: `COMMENTED`, `APPROVED`, `CHANGES_REQUESTED`, `DISMISSED`, `PENDING`.
    pub state: String,
}

/// A line comment (or a reply in its thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    pub review_id: Option<u64>,
    pub in_reply_to_id: Option<u64>,
    pub user: Option<User>,
    pub body: String,
    pub path: String,
    pub line: Option<u32>,
    pub side: Option<Side>,
    pub commit_id: Option<String>,
}

/// A PR's review thread, as GraphQL names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    /// The node id `resolveReviewThread` takes.
    pub id: String,
    pub resolved: bool,
    /// Who resolved it, while it is resolved (GitHub lets the PR's author resolve too).
    pub resolved_by: Option<String>,
    /// The REST id of its first comment (our finding comment, for a thread of ours).
    pub root: Option<u64>,
}

/// How two commits relate (the compare endpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// `ahead`, `behind`, `identical` or `diverged`.
    pub status: String,
    pub files: Vec<PrFile>,
}

/// A review to create: event `COMMENT` (or `REQUEST_CHANGES` when configured), on `commit_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewReview {
    pub commit_id: String,
    pub body: String,
    pub event: ReviewEvent,
    pub comments: Vec<NewComment>,
}

/// What a posted review does besides commenting: reviewbot never approves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewEvent {
    Comment,
    RequestChanges,
}

/// A line comment of a new review; a range when `start_line` is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewComment {
    pub path: String,
    pub body: String,
    pub line: u32,
    pub side: Side,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<Side>,
}

/// A check run's state (`status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed,
    /// A state GitHub added later (`waiting`, `pending`, `requested`): not ours to finish.
    #[serde(other)]
    Other,
}

/// How a completed check run ended (the ones reviewbot sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Skipped,
}

/// A check run as listed for a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub id: CheckRunId,
    pub name: String,
    pub status: CheckStatus,
    /// What its creator put in `external_id` (reviewbot: its own tag, see `flow::check`).
    pub external_id: Option<String>,
}

/// A check run to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewCheckRun {
    pub name: String,
    pub head_sha: String,
    pub external_id: String,
    pub status: CheckStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    pub output: CheckOutput,
}

/// A change to a check run; annotations are added to those it has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CheckStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conclusion: Option<CheckConclusion>,
    pub output: CheckOutput,
}

/// A check run's `output`: title and Markdown summary, and at most
/// [`MAX_ANNOTATIONS_PER_REQUEST`] annotations per request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckOutput {
    pub title: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
}

/// GitHub takes at most this many annotations in one create or update.
pub const MAX_ANNOTATIONS_PER_REQUEST: usize = 50;

/// How loud an annotation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// A note on lines of a file at the check run's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    pub title: String,
    pub message: String,
}
