//! The App's own endpoints (with the App JWT): its slug and minting installation tokens.

use http::{Method, StatusCode};
use octocrab::secrecy::SecretString;
use serde::Deserialize;

use super::auth::InstallationToken;
use super::auth::sendable;
use super::error::{GithubError, truncate};
use super::transport::{Call, Ctx, parse_json};
use super::{ACCEPT_JSON, GithubClient};
use crate::ids::InstallationId;

impl GithubClient {
    /// `GET /app` (with the App JWT): the App's slug; its bot login is `<slug>[bot]`.
    pub async fn app_slug(&self) -> Result<String, GithubError> {
        #[derive(Deserialize)]
        struct ApiApp {
            slug: String,
        }
        let ctx = Ctx {
            what: "reading the GitHub App (GET /app)".into(),
            permission: "metadata: read",
        };
        let raw = self.get(&ctx, "/app".into(), ACCEPT_JSON).await?;
        if raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let app: ApiApp = parse_json(&raw, &ctx)?;
        let slug = app.slug.trim();
        if slug.is_empty()
            || !slug
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(GithubError::InvalidResponse {
                what: ctx.what,
                message: format!("not an App slug: {:?}", truncate(slug)),
            });
        }
        Ok(slug.to_owned())
    }

    /// `POST /app/installations/{id}/access_tokens` (with the App JWT): a new installation
    /// token and when it expires. Retried like a `GET`: a second token does no harm.
    pub async fn create_installation_token(
        &self,
        installation: InstallationId,
    ) -> Result<InstallationToken, GithubError> {
        #[derive(Deserialize)]
        struct ApiToken {
            token: String,
            expires_at: String,
        }
        let ctx = Ctx {
            what: format!("minting a token for installation {installation} of the App"),
            permission: "metadata: read",
        };
        let call = Call {
            method: Method::POST,
            uri: format!("/app/installations/{}/access_tokens", installation.0),
            accept: ACCEPT_JSON,
            body: None,
            ctx: &ctx,
            retry_safe: true,
        };
        let raw = self.request(&call).await?;
        if raw.status != StatusCode::CREATED && raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let invalid = |message: &str| GithubError::InvalidResponse {
            what: ctx.what.clone(),
            message: message.to_owned(),
        };
        // Never `parse_json` here: a serde error could quote the token.
        let api: ApiToken =
            serde_json::from_slice(&raw.body).map_err(|_| invalid("no token in the answer"))?;
        let token = api.token.trim().to_owned();
        // No length or shape check: GitHub's token formats vary (stateless tokens are long).
        if !sendable(&token) {
            return Err(invalid("the token is empty or not sendable in a header"));
        }
        let expires_at = humantime::parse_rfc3339_weak(api.expires_at.trim())
            .map_err(|_| invalid("`expires_at` is not an RFC 3339 time"))?;
        Ok(InstallationToken {
            token: SecretString::from(token),
            expires_at,
        })
    }
}
