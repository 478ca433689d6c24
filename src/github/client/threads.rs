//! Conversations: answering in a review comment's thread (REST) and the PR's review threads,
//! which only GraphQL names and resolves.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::error::truncate;
use super::wire::ApiComment;
use super::{
    ACCEPT_JSON, Call, Ctx, GithubClient, GithubError, PR_READ, PR_WRITE, parse_json, repo_path,
};
use crate::github::model::{RepoName, ReviewComment, ReviewThread};
use crate::ids::PrNumber;

/// The PR's review threads, a page of 100 at a time; each thread's first comment names it.
const THREADS_QUERY: &str =
    "query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved resolvedBy { login } comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}";

const RESOLVE_MUTATION: &str = "mutation($id: ID!) {
  resolveReviewThread(input: { threadId: $id }) { thread { id isResolved } }
}";

/// At most this many pages of threads (10,000 threads) are read.
const MAX_THREAD_PAGES: usize = 100;

#[derive(Deserialize)]
struct GraphqlReply<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
struct GraphqlError {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct ThreadsData {
    repository: Option<RepositoryNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RepositoryNode {
    pull_request: Option<PullNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullNode {
    review_threads: ThreadPage,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadPage {
    page_info: PageInfo,
    #[serde(default)]
    nodes: Vec<ThreadNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadNode {
    id: String,
    is_resolved: bool,
    #[serde(default)]
    resolved_by: Option<Actor>,
    comments: CommentPage,
}

#[derive(Deserialize)]
struct Actor {
    login: String,
}

#[derive(Deserialize)]
struct CommentPage {
    #[serde(default)]
    nodes: Vec<CommentNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommentNode {
    database_id: Option<u64>,
}

impl GithubClient {
    /// `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies`: `body` as a reply in the thread
    /// of review comment `to`. Sent once, like every write: on
    /// [`GithubError::WriteUncertain`] look for the answer's marker before answering again.
    pub async fn reply_to_review_comment(
        &self,
        repo: &RepoName,
        n: PrNumber,
        to: u64,
        body: &str,
    ) -> Result<ReviewComment, GithubError> {
        let ctx = Ctx {
            what: format!("answering in a review thread on {repo}{n}"),
            permission: PR_WRITE,
        };
        let raw = self
            .request(&Call {
                method: Method::POST,
                uri: format!("{}/pulls/{}/comments/{to}/replies", repo_path(repo), n.0),
                accept: ACCEPT_JSON,
                body: Some(json!({ "body": body })),
                ctx: &ctx,
                retry_safe: false,
            })
            .await?;
        if !raw.status.is_success() {
            return Err(self.error(&raw, &ctx));
        }
        Ok(parse_json::<ApiComment>(&raw, &ctx)?.into_model())
    }

    /// The PR's review threads (GraphQL `reviewThreads`, every page).
    pub async fn review_threads(
        &self,
        repo: &RepoName,
        n: PrNumber,
    ) -> Result<Vec<ReviewThread>, GithubError> {
        let ctx = Ctx {
            what: format!("listing the review threads of {repo}{n}"),
            permission: PR_READ,
        };
        let mut threads = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..MAX_THREAD_PAGES {
            let variables = json!({
                "owner": repo.owner(),
                "name": repo.name(),
                "number": n.0,
                "after": after,
            });
            let data: ThreadsData = self.graphql(&ctx, THREADS_QUERY, variables).await?;
            let Some(page) = data
                .repository
                .and_then(|r| r.pull_request)
                .map(|p| p.review_threads)
            else {
                return Err(GithubError::InvalidResponse {
                    what: ctx.what,
                    message: "no such pull request".into(),
                });
            };
            threads.extend(page.nodes.into_iter().map(|t| ReviewThread {
                root: t.comments.nodes.first().and_then(|c| c.database_id),
                id: t.id,
                resolved: t.is_resolved,
                resolved_by: t.resolved_by.map(|a| a.login).filter(|_| t.is_resolved),
            }));
            match page.page_info {
                PageInfo {
                    has_next_page: true,
                    end_cursor: Some(cursor),
                } => after = Some(cursor),
                _ => return Ok(threads),
            }
        }
        Ok(threads)
    }

    /// Resolves review thread `id` (GraphQL `resolveReviewThread`). Resolving a resolved
    /// thread does no harm, so this is safe to send again.
    pub async fn resolve_review_thread(&self, id: &str) -> Result<(), GithubError> {
        let ctx = Ctx {
            what: "resolving a review thread".to_owned(),
            permission: PR_WRITE,
        };
        let _: serde_json::Value = self
            .graphql(&ctx, RESOLVE_MUTATION, json!({ "id": id }))
            .await?;
        Ok(())
    }

    /// One GraphQL request: GitHub answers 200 with `errors` for a query it refused.
    pub(super) async fn graphql<T: serde::de::DeserializeOwned>(
        &self,
        ctx: &Ctx,
        query: &str,
        variables: serde_json::Value,
    ) -> Result<T, GithubError> {
        let raw = self
            .request(&Call {
                method: Method::POST,
                uri: self.graphql_url(),
                accept: ACCEPT_JSON,
                body: Some(json!({ "query": query, "variables": variables })),
                ctx,
                // Queries change nothing; the one mutation sent is idempotent.
                retry_safe: true,
            })
            .await?;
        if !raw.status.is_success() {
            return Err(self.error(&raw, ctx));
        }
        let reply: GraphqlReply<T> = parse_json(&raw, ctx)?;
        match (reply.data, reply.errors.first()) {
            (_, Some(e)) => Err(GithubError::InvalidResponse {
                what: ctx.what.clone(),
                message: truncate(&e.message),
            }),
            (Some(data), None) => Ok(data),
            (None, None) => Err(GithubError::InvalidResponse {
                what: ctx.what.clone(),
                message: "no data".into(),
            }),
        }
    }

    /// GitHub's GraphQL endpoint: `/graphql` beside the REST API on github.com, and
    /// `/api/graphql` on GitHub Enterprise Server (whose REST API is under `/api/v3`).
    fn graphql_url(&self) -> String {
        let base = self.base.to_string();
        let base = base.trim_end_matches('/');
        match base.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{base}/graphql"),
        }
    }
}
