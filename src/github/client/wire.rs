//! GitHub's spelling: paths and query values escaped, and the wire types (our own: lenient,
//! and octocrab's models are `#[non_exhaustive]`).

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde::Deserialize;

use super::error::{GithubError, truncate};
use super::transport::Ctx;
use crate::diff::Side;
use crate::github::model::{PrFile, PullRequest, RepoName, Review, ReviewComment, User};
use crate::ids::{HeadSha, PrNumber};

/// Characters escaped in a path (`/` kept).
pub(super) const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');

/// Characters escaped in a query value.
pub(super) const QUERY: &AsciiSet = &PATH.add(b'&').add(b'=').add(b'+').add(b'/').add(b';');

pub(super) fn repo_path(repo: &RepoName) -> String {
    format!(
        "/repos/{}/{}",
        utf8_percent_encode(repo.owner(), PATH),
        utf8_percent_encode(repo.name(), PATH)
    )
}

#[derive(Deserialize)]
pub(super) struct ApiPull {
    pub(super) number: u64,
    #[serde(default)]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) body: Option<String>,
    #[serde(default)]
    pub(super) state: Option<String>,
    #[serde(default)]
    pub(super) draft: Option<bool>,
    pub(super) head: ApiRef,
    pub(super) base: ApiRef,
    #[serde(default)]
    pub(super) labels: Vec<ApiLabel>,
    #[serde(default)]
    pub(super) user: Option<User>,
    #[serde(default)]
    pub(super) changed_files: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct ApiRef {
    pub(super) sha: String,
    #[serde(rename = "ref", default)]
    pub(super) git_ref: String,
}

#[derive(Deserialize)]
pub(super) struct ApiLabel {
    pub(super) name: String,
}

impl ApiPull {
    pub(super) fn into_model(self, ctx: &Ctx) -> Result<PullRequest, GithubError> {
        let sha = |s: &str| {
            HeadSha::parse(s).ok_or_else(|| GithubError::InvalidResponse {
                what: ctx.what.clone(),
                message: format!("not a commit SHA: {:?}", truncate(s)),
            })
        };
        Ok(PullRequest {
            number: PrNumber(self.number),
            title: self.title.unwrap_or_default(),
            body: self.body.unwrap_or_default(),
            state: self.state.unwrap_or_default(),
            draft: self.draft.unwrap_or(false),
            head: sha(&self.head.sha)?,
            base: sha(&self.base.sha)?,
            base_ref: self.base.git_ref,
            labels: self.labels.into_iter().map(|l| l.name).collect(),
            author: self.user.unwrap_or_else(|| User {
                login: "ghost".into(),
                kind: "User".into(),
            }),
            changed_files: self.changed_files.unwrap_or(0),
        })
    }
}

#[derive(Deserialize)]
pub(super) struct ApiFile {
    pub(super) filename: String,
    #[serde(default)]
    pub(super) previous_filename: Option<String>,
    #[serde(default)]
    pub(super) status: String,
    #[serde(default)]
    pub(super) patch: Option<String>,
}

impl ApiFile {
    pub(super) fn into_model(self) -> PrFile {
        PrFile {
            filename: self.filename,
            previous_filename: self.previous_filename,
            status: self.status,
            patch: self.patch,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ApiReview {
    pub(super) id: u64,
    #[serde(default)]
    pub(super) user: Option<User>,
    #[serde(default)]
    pub(super) body: Option<String>,
    #[serde(default)]
    pub(super) commit_id: Option<String>,
    #[serde(default)]
    pub(super) state: Option<String>,
}

impl ApiReview {
    pub(super) fn into_model(self) -> Review {
        Review {
            id: self.id,
            user: self.user,
            body: self.body.unwrap_or_default(),
            commit_id: self.commit_id,
            state: self.state.unwrap_or_default().to_ascii_uppercase(),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ApiComment {
    pub(super) id: u64,
    #[serde(default)]
    pub(super) pull_request_review_id: Option<u64>,
    #[serde(default)]
    pub(super) in_reply_to_id: Option<u64>,
    #[serde(default)]
    pub(super) user: Option<User>,
    #[serde(default)]
    pub(super) body: Option<String>,
    #[serde(default)]
    pub(super) path: String,
    #[serde(default)]
    pub(super) line: Option<u32>,
    #[serde(default)]
    pub(super) side: Option<String>,
    #[serde(default)]
    pub(super) commit_id: Option<String>,
}

impl ApiComment {
    pub(super) fn into_model(self) -> ReviewComment {
        let side = match self.side.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("LEFT") => Some(Side::Left),
            Some("RIGHT") => Some(Side::Right),
            _ => None,
        };
        ReviewComment {
            id: self.id,
            review_id: self.pull_request_review_id,
            in_reply_to_id: self.in_reply_to_id,
            user: self.user,
            body: self.body.unwrap_or_default(),
            path: self.path,
            line: self.line,
            side,
            commit_id: self.commit_id,
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ApiCompare {
    pub(super) status: String,
    #[serde(default)]
    pub(super) files: Vec<ApiFile>,
}
