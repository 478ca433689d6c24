//! Repository contents: a file at a ref, and the archive of a commit (followed to its
//! short-lived URL and streamed).

use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::ACCEPT;
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use percent_encoding::utf8_percent_encode;

use super::error::{GithubError, error_chain, fmt_wait};
use super::transport::{Ctx, Raw};
use super::wire::{ApiContent, PATH, QUERY, repo_path};
use super::{ACCEPT_JSON, CONTENTS_READ, GithubClient};
use crate::github::model::RepoName;
use crate::ids::HeadSha;

impl GithubClient {
    /// The text of `path` at `git_ref` (contents API, base64-decoded). `None` on 404.
    pub async fn file_at_ref(
        &self,
        repo: &RepoName,
        path: &str,
        git_ref: &str,
    ) -> Result<Option<String>, GithubError> {
        let ctx = Ctx {
            what: format!("reading {path} at {git_ref} in {repo}"),
            permission: CONTENTS_READ,
        };
        let uri = format!(
            "{}/contents/{}?ref={}",
            repo_path(repo),
            utf8_percent_encode(path.trim_start_matches('/'), PATH),
            utf8_percent_encode(git_ref, QUERY)
        );
        let raw = self.get(&ctx, uri, ACCEPT_JSON).await?;
        match raw.status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => return Ok(None),
            _ => return Err(self.error(&raw, &ctx)),
        }
        let invalid = |message: &str| GithubError::InvalidResponse {
            what: ctx.what.clone(),
            message: message.to_owned(),
        };
        let content: ApiContent =
            serde_json::from_slice(&raw.body).map_err(|_| invalid("not a file"))?;
        if content.kind.as_deref().is_some_and(|k| k != "file") {
            return Err(invalid("not a file"));
        }
        if content.encoding.as_deref() != Some("base64") {
            return Err(invalid("the file is too large for the contents API"));
        }
        let packed: String = content
            .content
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(packed)
            .map_err(|_| invalid("bad base64 content"))?;
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| invalid("the file is not UTF-8"))
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
