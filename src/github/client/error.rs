//! [`GithubError`], and how a response that failed becomes one: GitHub's message, truncated,
//! redacted, scrubbed of the token, with its request id.

use std::error::Error as StdError;
use std::time::Duration;

use http::header::HeaderMap;
use octocrab::secrecy::{ExposeSecret as _, SecretString};
use serde::Deserialize;

use super::exchange::{Ctx, Raw};
use super::{GithubClient, MAX_BODY_BYTES, MAX_ERROR_CHARS};
use crate::redact::redact;

/// What can go wrong talking to GitHub, in the shapes a caller branches on.
///
/// Every message is truncated, redacted and free of the token.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    /// 401: the token is missing, expired or revoked (for an installation token: even after
    /// minting a new one). `hint` says what to check for this client's kind of token.
    #[error(
        "GitHub rejected the token (401): {hint}{}",
        request_id_suffix(request_id)
    )]
    Unauthorized {
        request_id: Option<String>,
        hint: &'static str,
    },
    /// 403 that is not a rate limit. Display ends with the permission the call needs.
    #[error(
        "GitHub refused {what} (403): {message}. {}",
        permission_sentence(permission)
    )]
    Forbidden {
        what: String,
        /// The workflow spelling, e.g. `pull-requests: write`.
        permission: &'static str,
        message: String,
    },
    /// A 404. Display ends with the permission the call needs: a private repository that the
    /// token cannot see answers 404, not 403.
    #[error(
        "{what} was not found (404): {message}. If the repository is private, the token may not \
         be able to see it: {}",
        permission_sentence(permission)
    )]
    NotFound {
        what: String,
        permission: &'static str,
        message: String,
    },
    /// A rate-limit wait would be longer than `max_rate_limit_wait` (or too many waits).
    #[error(
        "GitHub rate limit: the next attempt would have to wait {}, more than allowed \
         (github.max_rate_limit_wait)",
        fmt_wait(*wait)
    )]
    RateLimited { wait: Duration },
    /// 422: GitHub validated the request and refused it (e.g. a line outside the diff).
    #[error("GitHub rejected {what} (422): {}", errors.join("; "))]
    Unprocessable { what: String, errors: Vec<String> },
    /// A write got a 5xx, a timeout or a transport error: it may or may not have been applied.
    /// Never re-send blindly: list the PR's reviews, look for the round marker, then decide.
    #[error(
        "{what}: GitHub did not confirm the write ({reason}); it may have been applied, so look \
         for the round marker before posting again"
    )]
    WriteUncertain { what: String, reason: String },
    /// Transport errors (connect, TLS, timeout) after every retry.
    #[error("GitHub is unreachable: {0}")]
    Unreachable(String),
    /// The response was larger than [`MAX_BODY_BYTES`].
    #[error("{what}: GitHub's response is larger than {} MiB", MAX_BODY_BYTES >> 20)]
    TooLarge { what: String },
    /// A success response that reviewbot could not read.
    #[error("{what}: unexpected response from GitHub: {message}")]
    InvalidResponse { what: String, message: String },
    /// The client could not be built (bad URL, no Tokio runtime).
    #[error("GitHub client setup: {0}")]
    Setup(String),
    /// Any other status (400, 409, 410, 451, 5xx after retries, …).
    #[error("{what} failed with HTTP {status}: {message}")]
    Other {
        what: String,
        status: u16,
        message: String,
    },
}

pub(super) fn request_id_suffix(id: &Option<String>) -> String {
    id.as_deref()
        .map(|id| format!(" (request id {id})"))
        .unwrap_or_default()
}

/// "The token needs …" for a workflow permission spelling.
pub(super) fn permission_sentence(permission: &str) -> String {
    let (scope, access) = permission.split_once(':').unwrap_or((permission, "read"));
    let label = match scope.trim() {
        "pull-requests" => "Pull requests",
        "contents" => "Contents",
        "issues" => "Issues",
        "metadata" => "Metadata",
        "checks" => "Checks",
        other => other,
    };
    let access = match access.trim() {
        "write" => "read and write",
        other => other,
    };
    format!(
        "the token needs the \"{label}\" permission with {access} access (`{permission}` in a \
         workflow's `permissions:`)."
    )
}

pub(super) fn fmt_wait(wait: Duration) -> String {
    if wait >= Duration::from_secs(1) {
        format!("{}s", wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
    } else {
        format!("{}ms", wait.as_millis())
    }
}

impl GithubClient {
    /// Maps a final non-success response to an error.
    pub(super) fn error(&self, raw: &Raw, ctx: &Ctx) -> GithubError {
        let request_id = request_id(&raw.headers);
        let message = format!(
            "{}{}",
            redact_with_token(
                &truncate(&error_message(&raw.body).unwrap_or_else(|| {
                    html_page(raw)
                        .unwrap_or_else(|| String::from_utf8_lossy(&raw.body).trim().to_owned())
                })),
                raw.auth.as_ref()
            ),
            request_id_suffix(&request_id)
        );
        let what = ctx.what.clone();
        match raw.status.as_u16() {
            401 => GithubError::Unauthorized {
                request_id,
                hint: self.source.unauthorized_hint(),
            },
            403 => GithubError::Forbidden {
                what,
                permission: ctx.permission,
                message,
            },
            404 => GithubError::NotFound {
                what,
                permission: ctx.permission,
                message,
            },
            422 => {
                let mut errors: Vec<String> = unprocessable_errors(&raw.body)
                    .iter()
                    .map(|e| redact_with_token(&truncate(e), raw.auth.as_ref()).into_owned())
                    .collect();
                if errors.is_empty() {
                    errors.push(message);
                } else if let Some(id) = request_id {
                    errors.push(format!("request id {id}"));
                }
                GithubError::Unprocessable { what, errors }
            }
            status => GithubError::Other {
                what,
                status,
                message,
            },
        }
    }
}

/// Redacts secrets by their shape, and the token (or JWT) that was sent by its value.
pub(super) fn redact_with_token<'a>(
    text: &'a str,
    token: Option<&SecretString>,
) -> std::borrow::Cow<'a, str> {
    let redacted = redact(text);
    if let Some(token) = token
        && let std::borrow::Cow::Owned(masked) =
            crate::redact::mask_value(&redacted, token.expose_secret(), "[REDACTED token]")
    {
        return std::borrow::Cow::Owned(masked);
    }
    redacted
}

/// The messages of an error and its sources, without octocrab's backtraces.
pub(super) fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(e) = next {
        let text = e.to_string();
        let line = text
            .split("\n\nFound at")
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        if !line.is_empty() && !parts.iter().any(|p| p.contains(&line)) {
            parts.push(line);
        }
        next = e.source();
    }
    truncate(&parts.join(": "))
}

pub(super) fn truncate(text: &str) -> String {
    crate::chars::cut(text, MAX_ERROR_CHARS, "…")
}

pub(super) fn request_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("x-github-request-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect()
        })
}

/// "an HTML page (“title”) instead of JSON", for a body that is a web page: what a proxy or
/// GitHub's own error pages (a 502's "Unicorn!") send, which says more than a parse error.
pub(super) fn html_page(raw: &Raw) -> Option<String> {
    let html_type = raw
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("html"));
    let head = String::from_utf8_lossy(&raw.body[..raw.body.len().min(4096)]).into_owned();
    // ASCII lowering keeps byte offsets, so the title is cut from `head` as written.
    let lower = head.to_ascii_lowercase();
    let starts_html = ["<!doctype html", "<html"]
        .iter()
        .any(|p| lower.trim_start().starts_with(p));
    if !html_type && !starts_html {
        return None;
    }
    let title = lower
        .find("<title>")
        .map(|at| at + "<title>".len())
        .and_then(|from| Some(from..from + lower[from..].find("</title>")?))
        .map(|span| head[span].split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|t| !t.is_empty());
    Some(match title {
        Some(t) => format!(
            "an HTML page (\u{201c}{}\u{201d}) instead of JSON",
            crate::chars::head(&t, 100)
        ),
        None => "an HTML page instead of JSON".to_owned(),
    })
}

/// GitHub's error body: `message`, and `errors` as strings or objects.
#[derive(Deserialize)]
pub(super) struct ApiError {
    #[serde(default)]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) errors: Vec<serde_json::Value>,
}

pub(super) fn error_message(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ApiError>(body).ok()?.message
}

/// `errors[].code` of an error body (e.g. `too_large`).
pub(super) fn error_codes(body: &[u8]) -> Vec<String> {
    serde_json::from_slice::<ApiError>(body)
        .map(|e| {
            e.errors
                .iter()
                .filter_map(|v| v.get("code").and_then(|c| c.as_str()).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A 422's messages, from either shape: `["Line could not be resolved"]` (reviews) or
/// `[{"resource","code","field","message"}]` (single comments).
pub(super) fn unprocessable_errors(body: &[u8]) -> Vec<String> {
    let Ok(parsed) = serde_json::from_slice::<ApiError>(body) else {
        return Vec::new();
    };
    let mut out: Vec<String> = parsed
        .errors
        .iter()
        .filter_map(|e| match e {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Object(o) => {
                let get = |k: &str| o.get(k).and_then(|v| v.as_str()).filter(|s| !s.is_empty());
                let text = match (get("field"), get("message")) {
                    (Some(field), Some(message)) => format!("{field} {message}"),
                    (None, Some(message)) => message.to_owned(),
                    (Some(field), None) => format!("{field} is invalid"),
                    (None, None) => return get("code").map(|c| format!("error code {c}")),
                };
                Some(match get("code") {
                    Some(code) if code != "custom" => format!("{text} ({code})"),
                    _ => text,
                })
            }
            _ => None,
        })
        .collect();
    if out.is_empty()
        && let Some(message) = parsed.message
    {
        out.push(message);
    }
    out
}
