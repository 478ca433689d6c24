//! Who may do what: the authenticated user, push access to a repository, a collaborator's
//! permission.

use http::StatusCode;
use percent_encoding::utf8_percent_encode;

use super::error::GithubError;
use super::transport::{Ctx, parse_json};
use super::wire::{PATH, repo_path};
use super::{ACCEPT_JSON, GithubClient};
use crate::github::model::{Permission, RepoName, User};

impl GithubClient {
    /// `GET /user`. `Ok(None)` on 403: Actions and installation tokens cannot read it.
    pub async fn current_user(&self) -> Result<Option<User>, GithubError> {
        let ctx = Ctx {
            what: "reading the authenticated user".into(),
            permission: "metadata: read",
        };
        let raw = self.get(&ctx, "/user".into(), ACCEPT_JSON).await?;
        match raw.status {
            StatusCode::OK => Ok(Some(parse_json(&raw, &ctx)?)),
            StatusCode::FORBIDDEN => Ok(None),
            _ => Err(self.error(&raw, &ctx)),
        }
    }

    /// `GET /repos/{o}/{r}`: whether the token can see the repository, and — for a user's token,
    /// whose answer carries `permissions` — whether it can write (`None` when GitHub does not
    /// say, as for installation and Actions tokens).
    pub async fn repository_push_access(
        &self,
        repo: &RepoName,
    ) -> Result<Option<bool>, GithubError> {
        #[derive(serde::Deserialize)]
        struct ApiRepo {
            permissions: Option<ApiPermissions>,
        }
        #[derive(serde::Deserialize)]
        struct ApiPermissions {
            push: Option<bool>,
        }
        let ctx = Ctx {
            what: format!("reading {repo}"),
            permission: "metadata: read",
        };
        let raw = self.get(&ctx, repo_path(repo), ACCEPT_JSON).await?;
        if raw.status != StatusCode::OK {
            return Err(self.error(&raw, &ctx));
        }
        let api: ApiRepo = parse_json(&raw, &ctx)?;
        Ok(api.permissions.and_then(|p| p.push))
    }

    /// `GET /repos/{o}/{r}/collaborators/{user}/permission`: what `user` may do in `repo`.
    /// GitHub answers 404 for a user it does not know: no permission.
    pub async fn collaborator_permission(
        &self,
        repo: &RepoName,
        user: &str,
    ) -> Result<Permission, GithubError> {
        #[derive(serde::Deserialize)]
        struct ApiPermission {
            permission: Option<String>,
            role_name: Option<String>,
        }
        let ctx = Ctx {
            what: format!("reading the permission of {user} on {repo}"),
            permission: "metadata: read",
        };
        let path = format!(
            "{}/collaborators/{}/permission",
            repo_path(repo),
            utf8_percent_encode(user, PATH)
        );
        let raw = self.get(&ctx, path, ACCEPT_JSON).await?;
        match raw.status {
            StatusCode::OK => {
                let api: ApiPermission = parse_json(&raw, &ctx)?;
                Ok(Permission::from_api(
                    api.role_name.as_deref(),
                    api.permission.as_deref(),
                ))
            }
            StatusCode::NOT_FOUND => Ok(Permission::None),
            _ => Err(self.error(&raw, &ctx)),
        }
    }
}
