//! Repository contents: a file at a ref, many files at a ref in one GraphQL query, and the
//! archive of a commit (followed to its short-lived URL and streamed).

use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::header::ACCEPT;
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;

use super::error::{GithubError, error_chain, fmt_wait};
use super::transport::{Ctx, Raw};
use super::wire::repo_path;
use super::{ACCEPT_JSON, CONTENTS_READ, GithubClient};
use crate::github::model::RepoName;
use crate::ids::HeadSha;

/// The most files one GraphQL query reads (GitHub's node limit leaves room for far more; 100
/// keeps a query small).
const FILES_PER_QUERY: usize = 100;

impl GithubClient {
    /// The text of each of `paths` at `git_ref`, in order, read in one GraphQL query per 100
    /// paths (`object(expression: "<ref>:<path>")`, the path passed as a variable, never
    /// spliced into the query). `None` where there is no such file, and where GitHub does not
    /// serve it whole as text (a directory, a binary, a blob past what GraphQL returns).
    pub async fn files_at_ref(
        &self,
        repo: &RepoName,
        git_ref: &str,
        paths: &[String],
    ) -> Result<Vec<Option<String>>, GithubError> {
        let ctx = Ctx {
            what: format!("reading {} files at {git_ref} in {repo}", paths.len()),
            permission: CONTENTS_READ,
        };
        let mut out = Vec::with_capacity(paths.len());
        for chunk in paths.chunks(FILES_PER_QUERY) {
            let mut params = String::from("$owner: String!, $name: String!");
            let mut fields = String::new();
            let mut variables = serde_json::json!({ "owner": repo.owner(), "name": repo.name() });
            for (i, path) in chunk.iter().enumerate() {
                params.push_str(&format!(", $e{i}: String!"));
                fields.push_str(&format!(
                    " f{i}: object(expression: $e{i}) {{ ... on Blob {{ text isBinary isTruncated }} }}"
                ));
                variables[format!("e{i}")] =
                    format!("{git_ref}:{}", path.trim_start_matches('/')).into();
            }
            let query = format!(
                "query({params}) {{ repository(owner: $owner, name: $name) {{{fields} }} }}"
            );
            let data: serde_json::Value = self.graphql(&ctx, &query, variables).await?;
            let Some(found) = data.get("repository").filter(|r| r.is_object()) else {
                return Err(GithubError::InvalidResponse {
                    what: ctx.what,
                    message: "no such repository".into(),
                });
            };
            for (i, path) in chunk.iter().enumerate() {
                let blob = &found[format!("f{i}")];
                let text = blob["text"]
                    .as_str()
                    .filter(|_| blob["isBinary"] == false && blob["isTruncated"] == false);
                if blob.is_object() && text.is_none() {
                    tracing::warn!(%repo, path, "repository file passed over: not text GitHub serves whole");
                }
                out.push(text.map(str::to_owned));
            }
        }
        Ok(out)
    }

    /// The archive of `repo` at `sha` (a gzip'd tar with one top folder), as a body to read
    /// chunk by chunk. `GET /repos/{o}/{r}/tarball/{sha}` answers with a redirect to a
    /// short-lived URL on another host (`codeload.github.com`), which is followed **without**
    /// the token: that URL carries its own. Both steps retry 5xx and transport errors like any
    /// `GET`; a 401, 403 or 404 is an error at once.
    pub async fn tarball(&self, repo: &RepoName, sha: &HeadSha) -> Result<Download, GithubError> {
        let ctx = Ctx {
            what: format!("downloading the archive of {repo} at {}", sha.short()),
            permission: CONTENTS_READ,
        };
        let path = format!("{}/tarball/{}", repo_path(repo), sha.as_str());
        let raw = self.get(&ctx, path, ACCEPT_JSON).await?;
        if !raw.status.is_redirection() {
            return Err(match raw.status {
                StatusCode::OK => GithubError::InvalidResponse {
                    what: ctx.what,
                    message: "expected a redirect to the archive".into(),
                },
                _ => self.error(&raw, &ctx),
            });
        }
        let location = raw
            .headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| self.archive_url(l))
            .ok_or_else(|| GithubError::InvalidResponse {
                what: ctx.what.clone(),
                message: "the redirect has no usable `Location`".into(),
            })?;
        self.download(&location, &ctx.what).await
    }

    /// The redirect's target as an absolute URL: relative ones are on the API's origin; an
    /// `http` target is refused unless the API itself is `http` (tests), so the archive's
    /// own token never crosses the network in clear.
    pub(super) fn archive_url(&self, location: &str) -> Option<Uri> {
        let uri: Uri = location.trim().parse().ok()?;
        if uri.authority().is_none() {
            let origin = format!(
                "{}://{}",
                self.base.scheme_str()?,
                self.base.authority()?.as_str()
            );
            return format!("{origin}{}", uri.path_and_query()?.as_str())
                .parse()
                .ok();
        }
        match (uri.scheme_str(), self.base.scheme_str()) {
            (Some("https"), _) | (Some("http"), Some("http")) => Some(uri),
            _ => None,
        }
    }

    /// `GET url` with no `Authorization`, for a body to stream: an archive's URL, which
    /// authorises itself. 5xx and transport errors are retried like any `GET` (until the
    /// headers arrive; a body that stops part-way is the caller's error).
    pub async fn download(&self, url: &Uri, what: &str) -> Result<Download, GithubError> {
        let mut failures = 0u32;
        loop {
            self.requests.fetch_add(1, Ordering::Relaxed);
            let request = http::Request::builder()
                .method(Method::GET)
                .uri(url.clone())
                .header(ACCEPT, "*/*");
            let sent = match self.octo.build_request::<()>(request, None) {
                Ok(request) => {
                    tokio::time::timeout(self.limits.request_timeout, self.octo.execute(request))
                        .await
                }
                Err(e) => return Err(GithubError::Setup(error_chain(&e))),
            };
            let reason = match sent {
                Ok(Ok(response)) => {
                    let status = response.status();
                    (self.limits.observe)(status.as_u16());
                    if status.is_success() {
                        return Ok(Download {
                            body: response.into_body(),
                            stall: self.limits.request_timeout,
                            what: what.to_owned(),
                        });
                    }
                    if !status.is_server_error() {
                        let (parts, body) = response.into_parts();
                        let body = http_body_util::Limited::new(body, 64 << 10)
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let raw = Raw {
                            status,
                            headers: parts.headers,
                            body,
                            auth: None,
                        };
                        let ctx = Ctx {
                            what: what.to_owned(),
                            permission: CONTENTS_READ,
                        };
                        return Err(self.error(&raw, &ctx));
                    }
                    format!("HTTP {status}")
                }
                Ok(Err(e)) => {
                    (self.limits.observe)(0);
                    error_chain(&e)
                }
                Err(_) => {
                    (self.limits.observe)(0);
                    format!(
                        "no answer within {} (github.request_timeout)",
                        fmt_wait(self.limits.request_timeout)
                    )
                }
            };
            failures += 1;
            if failures >= self.limits.retries.max(1) {
                return Err(GithubError::Unreachable(format!(
                    "{what}: {reason} (after {failures} attempts)"
                )));
            }
            self.retry_after_failure(what, &reason, self.backoff(failures))
                .await;
        }
    }
}

/// A response body being downloaded (see [`GithubClient::tarball`]).
pub struct Download {
    body: http_body_util::combinators::BoxBody<Bytes, octocrab::Error>,
    /// The longest wait for the next chunk.
    stall: Duration,
    what: String,
}

impl fmt::Debug for Download {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Download")
            .field("what", &self.what)
            .finish_non_exhaustive()
    }
}

impl Download {
    /// The next chunk of the body; `None` at its end. A connection that drops or stalls
    /// (`github.request_timeout` without a byte) is [`GithubError::Unreachable`].
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, GithubError> {
        loop {
            let frame = match tokio::time::timeout(self.stall, self.body.frame()).await {
                Ok(Some(Ok(frame))) => frame,
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => {
                    return Err(GithubError::Unreachable(format!(
                        "{}: the download stopped: {}",
                        self.what,
                        error_chain(&e)
                    )));
                }
                Err(_) => {
                    return Err(GithubError::Unreachable(format!(
                        "{}: the download stalled for {}",
                        self.what,
                        fmt_wait(self.stall)
                    )));
                }
            };
            // Trailers carry no data.
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }
}
