//! The one request every trigger builds: the CLI's flags, the Actions event and a webhook
//! delivery all become a [`ReviewRequest`], and the flow takes nothing else.

use serde::{Deserialize, Serialize};

use crate::config::FailOn;
use crate::github::model::RepoName;
use crate::ids::{DeliveryId, HeadSha, InstallationId, PrNumber};

/// Why a round was asked for. Stored with a queued job, so it serialises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// `reviewbot review --pr` from a terminal.
    Cli,
    /// The composite Action (`GITHUB_EVENT_PATH` named the PR).
    Action,
    /// `pull_request` `opened`.
    Opened,
    /// `pull_request` `reopened`.
    Reopened,
    /// `pull_request` `ready_for_review`.
    ReadyForReview,
    /// `pull_request` `synchronize`: a push.
    Synchronize,
    /// `pull_request` `labeled`; a round only when `label` is the (repository's) trigger label.
    Labeled { label: String },
    /// `issue_comment` `/reviewbot review`; a round only when `user` may write to the repository.
    Command { user: String },
    /// `pull_request_review_comment` `created`: `user` replied (comment `comment`) in a thread;
    /// no round, only the answers in the PR's threads.
    Reply { comment: u64, user: String },
}

impl Reason {
    /// A reply in a thread: its job answers, and runs no round.
    pub fn is_reply(&self) -> bool {
        matches!(self, Reason::Reply { .. })
    }

    /// The store's `jobs.kind`: reply jobs are superseded by nothing, and join only the PR's
    /// queued reply job.
    pub fn job_kind(&self) -> &'static str {
        match self {
            Reason::Reply { .. } => "reply",
            _ => "round",
        }
    }
}

/// What to review, why, and whether to post.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    pub repo: RepoName,
    pub pr: PrNumber,
    /// The head the trigger saw (a webhook names it); `None` when the trigger does not know it
    /// (the CLI). The flow reviews the PR's current head and records which one it reviewed.
    pub head: Option<HeadSha>,
    /// The App installation whose token the flow uses; `None` for the CLI and the Action.
    pub installation: Option<InstallationId>,
    pub reason: Reason,
    /// Review even a head already reviewed (`--again`; a confirmed trigger label or command).
    pub force: bool,
    pub post: bool,
    /// Lenses named on the command line (they win over every config); empty for the App.
    pub lenses: Vec<String>,
    /// The delivery that asked for this round (App jobs; set by the worker). Its round's marker
    /// names it, so a job run again after a crash sees that its round landed already, even
    /// when the ask (a command, the trigger label) would force a new one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<DeliveryId>,
    /// `--fail-on`, which wins over `[review] fail_on` (the check run's conclusion); `None`
    /// for the App.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_on: Option<FailOn>,
}
