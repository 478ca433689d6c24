//! Reviews: listing a PR's reviews and line comments, and posting a review.

use http::Method;

use super::error::GithubError;
use super::transport::{Call, Ctx, parse_json};
use super::wire::{ApiComment, ApiReview, repo_path};
use super::{ACCEPT_JSON, GithubClient, PR_READ, PR_WRITE};
use crate::github::model::{NewReview, RepoName, Review, ReviewComment};
use crate::ids::PrNumber;

impl GithubClient {
    /// The PR's reviews, oldest first.
    pub async fn reviews(&self, repo: &RepoName, n: PrNumber) -> Result<Vec<Review>, GithubError> {
        let ctx = Ctx {
            what: format!("listing the reviews of {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/pulls/{}/reviews", repo_path(repo), n.0);
        let reviews: Vec<ApiReview> = self.get_paged(&ctx, &path, 10_000).await?;
        Ok(reviews.into_iter().map(ApiReview::into_model).collect())
    }

    /// The PR's review (line) comments, replies included.
    pub async fn review_comments(
        &self,
        repo: &RepoName,
        n: PrNumber,
    ) -> Result<Vec<ReviewComment>, GithubError> {
        let ctx = Ctx {
            what: format!("listing the review comments of {repo}{n}"),
            permission: PR_READ,
        };
        let path = format!("{}/pulls/{}/comments", repo_path(repo), n.0);
        let comments: Vec<ApiComment> = self.get_paged(&ctx, &path, 10_000).await?;
        Ok(comments.into_iter().map(ApiComment::into_model).collect())
    }

    /// `POST /repos/{o}/{r}/pulls/{n}/reviews` with our own request body.
    ///
    /// One attempt (a rate-limit refusal is waited out and sent again, since GitHub did not
    /// apply it). On a 5xx, a timeout or a transport error this returns
    /// [`GithubError::WriteUncertain`]: the review may exist. The caller must then list the
    /// reviews ([`Self::reviews`]) and look for its round marker before posting again.
    /// A 422 returns [`GithubError::Unprocessable`] with GitHub's messages.
    pub async fn create_review(
        &self,
        repo: &RepoName,
        n: PrNumber,
        review: &NewReview,
    ) -> Result<Review, GithubError> {
        let ctx = Ctx {
            what: format!("posting a review on {repo}{n}"),
            permission: PR_WRITE,
        };
        let body = serde_json::to_value(review).map_err(|e| GithubError::InvalidResponse {
            what: ctx.what.clone(),
            message: format!("cannot encode the review: {e}"),
        })?;
        let call = Call {
            method: Method::POST,
            uri: format!("{}/pulls/{}/reviews", repo_path(repo), n.0),
            accept: ACCEPT_JSON,
            body: Some(body),
            ctx: &ctx,
            retry_safe: false,
        };
        let raw = self.request(&call).await?;
        if !raw.status.is_success() {
            return Err(self.error(&raw, &ctx));
        }
        let review: ApiReview = parse_json(&raw, &ctx)?;
        Ok(review.into_model())
    }
}
