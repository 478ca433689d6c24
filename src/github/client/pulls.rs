//! Pull requests: the PR, its diff and files, its labels, and comparing two commits.

use http::{Method, StatusCode};
use percent_encoding::utf8_percent_encode;

use super::error::{GithubError, error_codes};
use super::transport::{Call, Ctx, parse_json};
use super::wire::{ApiCompare, ApiFile, ApiLabel, ApiPull, PATH, repo_path};
use super::{
    ACCEPT_DIFF, ACCEPT_JSON, CONTENTS_READ, GithubClient, MAX_PR_FILES, PR_READ, PR_WRITE,
};
use crate::github::model::{Comparison, PrFile, PullRequest, RepoName};
use crate::ids::PrNumber;

impl GithubClient {
    /// `GET /repos/{o}/{r}/pulls/{n}`.
    pub async fn pull_request(
        &self,
        repo: &RepoName,
        n: PrNumber,
    ) -> Result<PullRequest, GithubError> {
        let ctx = Ctx {
            what: format!("reading pull request {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/pulls/{}", repo_path(repo), n.0);
        let raw = self.get(&ctx, path, ACCEPT_JSON).await?;
        if raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let pr: ApiPull = parse_json(&raw, &ctx)?;
        pr.into_model(&ctx)
    }

    /// The PR's unified diff (`Accept: application/vnd.github.diff`). `Ok(None)` when GitHub
    /// refuses it as too large (406 with `errors[].code == "too_large"`) or it exceeds
    /// [`MAX_BODY_BYTES`]: use [`Self::pull_request_files`] then.
    pub async fn pull_request_diff(
        &self,
        repo: &RepoName,
        n: PrNumber,
    ) -> Result<Option<String>, GithubError> {
        let ctx = Ctx {
            what: format!("reading the diff of {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/pulls/{}", repo_path(repo), n.0);
        let raw = match self.get(&ctx, path, ACCEPT_DIFF).await {
            Err(GithubError::TooLarge { .. }) => return Ok(None),
            other => other?,
        };
        match raw.status {
            StatusCode::OK => String::from_utf8(raw.body.to_vec()).map(Some).map_err(|_| {
                GithubError::InvalidResponse {
                    what: ctx.what.clone(),
                    message: "the diff is not UTF-8".into(),
                }
            }),
            StatusCode::NOT_ACCEPTABLE
                if error_codes(&raw.body).iter().any(|c| c == "too_large") =>
            {
                Ok(None)
            }
            _ => Err(self.error(&raw, &ctx)),
        }
    }

    /// `GET /repos/{o}/{r}/pulls/{n}/files`, 100 a page, stopping at `max_files` (at most
    /// [`MAX_PR_FILES`], GitHub's own cap).
    pub async fn pull_request_files(
        &self,
        repo: &RepoName,
        n: PrNumber,
        max_files: usize,
    ) -> Result<Vec<PrFile>, GithubError> {
        let ctx = Ctx {
            what: format!("listing the files of {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/pulls/{}/files", repo_path(repo), n.0);
        let files: Vec<ApiFile> = self
            .get_paged(&ctx, &path, max_files.min(MAX_PR_FILES))
            .await?;
        Ok(files.into_iter().map(ApiFile::into_model).collect())
    }

    /// Label names of issue/PR `n` (`GET /repos/{o}/{r}/issues/{n}/labels`).
    pub async fn labels(&self, repo: &RepoName, n: PrNumber) -> Result<Vec<String>, GithubError> {
        let ctx = Ctx {
            what: format!("reading the labels of {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/issues/{}/labels", repo_path(repo), n.0);
        let labels: Vec<ApiLabel> = self.get_paged(&ctx, &path, 1000).await?;
        Ok(labels.into_iter().map(|l| l.name).collect())
    }

    /// `DELETE /repos/{o}/{r}/issues/{n}/labels/{name}`: takes the trigger label off once its
    /// round is done. A label already gone (404) is fine.
    pub async fn remove_label(
        &self,
        repo: &RepoName,
        n: PrNumber,
        label: &str,
    ) -> Result<(), GithubError> {
        let ctx = Ctx {
            what: format!("removing the label `{label}` from {repo}{n}"),
            permission: PR_WRITE,
        };
        let call = Call {
            method: Method::DELETE,
            uri: format!(
                "{}/issues/{}/labels/{}",
                repo_path(repo),
                n.0,
                utf8_percent_encode(label, PATH)
            ),
            accept: ACCEPT_JSON,
            body: None,
            ctx: &ctx,
            retry_safe: false,
        };
        let raw = self.request(&call).await?;
        if raw.status.is_success() || raw.status == StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(self.error(&raw, &ctx))
        }
    }

    /// `GET /repos/{o}/{r}/compare/{base}...{head}`.
    pub async fn compare(
        &self,
        repo: &RepoName,
        base: &str,
        head: &str,
    ) -> Result<Comparison, GithubError> {
        let ctx = Ctx {
            what: format!("comparing {base}...{head} in {repo}"),
            permission: CONTENTS_READ,
        };
        let path = format!(
            "{}/compare/{}...{}",
            repo_path(repo),
            utf8_percent_encode(base, PATH),
            utf8_percent_encode(head, PATH)
        );
        let raw = self.get(&ctx, path, ACCEPT_JSON).await?;
        if raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let cmp: ApiCompare = parse_json(&raw, &ctx)?;
        Ok(Comparison {
            status: cmp.status,
            files: cmp.files.into_iter().map(ApiFile::into_model).collect(),
        })
    }
}
