//! Check runs: create one on a commit, update it, and find the one reviewbot left on a head.
//! Every call goes through the client's one retry policy; a 403 (a token without
//! `checks: write`) comes back as [`CheckWrite::NotPermitted`], apart from every other error,
//! because a round goes on without its check run.

use http::{Method, StatusCode};
use percent_encoding::utf8_percent_encode;
use serde::Deserialize;

use super::{ACCEPT_JSON, Call, Ctx, GithubClient, GithubError, QUERY, parse_json, repo_path};
use crate::github::model::{CheckRun, CheckRunUpdate, CheckStatus, NewCheckRun, RepoName};
use crate::ids::{CheckRunId, HeadSha};

const CHECKS_WRITE: &str = "checks: write";
const CHECKS_READ: &str = "checks: read";

/// What a check-run write came to.
#[derive(Debug)]
pub enum CheckWrite<T> {
    Done(T),
    /// 403: the token may not write check runs (GitHub's message, with the permission named).
    NotPermitted(GithubError),
}

#[derive(Deserialize)]
struct ApiCheckRun {
    id: u64,
    #[serde(default)]
    name: String,
    status: CheckStatus,
    #[serde(default)]
    external_id: Option<String>,
}

impl ApiCheckRun {
    fn into_model(self) -> CheckRun {
        CheckRun {
            id: CheckRunId(self.id),
            name: self.name,
            status: self.status,
            external_id: self.external_id.filter(|e| !e.is_empty()),
        }
    }
}

#[derive(Deserialize)]
struct ApiCheckRuns {
    #[serde(default)]
    check_runs: Vec<ApiCheckRun>,
}

impl GithubClient {
    /// `POST /repos/{o}/{r}/check-runs`. Sent once, like every write: a 5xx or a timeout is
    /// [`GithubError::WriteUncertain`] (look with [`Self::find_check_run`] before creating
    /// another).
    pub async fn create_check_run(
        &self,
        repo: &RepoName,
        run: &NewCheckRun,
    ) -> Result<CheckWrite<CheckRun>, GithubError> {
        let ctx = Ctx {
            what: format!("creating the check run `{}` on {repo}", run.name),
            permission: CHECKS_WRITE,
        };
        let body = encode(&ctx, run)?;
        let raw = self
            .request(&Call {
                method: Method::POST,
                uri: format!("{}/check-runs", repo_path(repo)),
                accept: ACCEPT_JSON,
                body: Some(body),
                ctx: &ctx,
                retry_safe: false,
            })
            .await?;
        match raw.status {
            s if s.is_success() => Ok(CheckWrite::Done(
                parse_json::<ApiCheckRun>(&raw, &ctx)?.into_model(),
            )),
            StatusCode::FORBIDDEN => Ok(CheckWrite::NotPermitted(self.error(&raw, &ctx))),
            _ => Err(self.error(&raw, &ctx)),
        }
    }

    /// `PATCH /repos/{o}/{r}/check-runs/{id}`. Sent again after a 5xx: setting a state twice
    /// is harmless (annotations would be added twice, which is better than a run left
    /// spinning).
    pub async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        update: &CheckRunUpdate,
    ) -> Result<CheckWrite<()>, GithubError> {
        let ctx = Ctx {
            what: format!("updating check run {id} on {repo}"),
            permission: CHECKS_WRITE,
        };
        let body = encode(&ctx, update)?;
        let raw = self
            .request(&Call {
                method: Method::PATCH,
                uri: format!("{}/check-runs/{}", repo_path(repo), id.0),
                accept: ACCEPT_JSON,
                body: Some(body),
                ctx: &ctx,
                retry_safe: true,
            })
            .await?;
        match raw.status {
            s if s.is_success() => Ok(CheckWrite::Done(())),
            StatusCode::FORBIDDEN => Ok(CheckWrite::NotPermitted(self.error(&raw, &ctx))),
            _ => Err(self.error(&raw, &ctx)),
        }
    }

    /// The newest check run named `name` on `head` whose `external_id` is `tag` (one page of
    /// `GET /repos/{o}/{r}/commits/{head}/check-runs?check_name=…&filter=all`). The tag tells
    /// reviewbot's runs from others of the same name, such as a workflow job's.
    pub async fn find_check_run(
        &self,
        repo: &RepoName,
        head: &HeadSha,
        name: &str,
        tag: &str,
    ) -> Result<Option<CheckRun>, GithubError> {
        let ctx = Ctx {
            what: format!("listing the check runs of {repo} at {}", head.short()),
            permission: CHECKS_READ,
        };
        let uri = format!(
            "{}/commits/{}/check-runs?check_name={}&filter=all&per_page=100",
            repo_path(repo),
            head.as_str(),
            utf8_percent_encode(name, QUERY)
        );
        let raw = self.get(&ctx, uri, ACCEPT_JSON).await?;
        if raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let list: ApiCheckRuns = parse_json(&raw, &ctx)?;
        Ok(list
            .check_runs
            .into_iter()
            .map(ApiCheckRun::into_model)
            .filter(|r| r.name == name && r.external_id.as_deref() == Some(tag))
            .max_by_key(|r| r.id.0))
    }
}

fn encode(ctx: &Ctx, value: &impl serde::Serialize) -> Result<serde_json::Value, GithubError> {
    serde_json::to_value(value).map_err(|e| GithubError::InvalidResponse {
        what: ctx.what.clone(),
        message: format!("cannot encode the request: {e}"),
    })
}
