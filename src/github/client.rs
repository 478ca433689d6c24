//! The GitHub REST client, on octocrab with octocrab's own retries off.
//!
//! Every request goes through one function, `GithubClient::request`, which owns the whole
//! retry policy (`docs/contract.md` "Retry rules", from GitHub's REST docs):
//! - a `GET` is retried on transport errors and 5xx, with exponential backoff
//!   (`backoff_base`, ×2 each time), `retries` attempts in all;
//! - a 403/429 rate limit is waited out, for any method: `retry-after` when present; else, with
//!   `x-ratelimit-remaining: 0`, until `x-ratelimit-reset` + 1 s (a reset already past gives a
//!   short wait of `backoff_base`); else, for a secondary limit (a 429, or a 403 whose message
//!   says "secondary rate limit"), at least `rate_limit_floor`, doubling on each new hit up to
//!   8 × the floor. A limited request was refused by GitHub, so sending it again is safe even
//!   for a write. A wait longer than `max_rate_limit_wait`, or more than
//!   [`MAX_RATE_LIMIT_WAITS`] waits for one call, fails at once with
//!   [`GithubError::RateLimited`]. Before every rate-limit wait the user is told, through
//!   `tracing::warn!` and the [`ClientLimits::notice`] sink (stderr by default);
//! - 400, 401, 403 (not a rate limit), 404, 410, 422 and 451 are never retried;
//! - a write (`POST`) is **never re-sent after a 5xx, a timeout or a transport error**: it
//!   fails with [`GithubError::WriteUncertain`], because GitHub may have applied it. The caller
//!   lists the PR's reviews and looks for its round marker before posting again;
//! - writes are serialised and spaced at least `write_spacing` apart (end of one to start of
//!   the next); at most [`MAX_IN_FLIGHT`] requests are in flight at once;
//! - a backoff of 4 s or more is announced on the notice sink too.
//!
//! Authentication comes from a [`TokenSource`], asked before every attempt: none, a static
//! token (`GITHUB_TOKEN`), the App's JWT, or an App installation's token (minted and cached by
//! the App (`github::app`), so a job that outlives a token gets a new one). A 401 to
//! an installation token drops it from the cache and sends the request once more with a new
//! one, a `POST` too: a 401 means GitHub did not act on it. `Authorization` is set by this
//! client, never by octocrab, and only on the API's own origin.
//!
//! Every attempt (retries included) is counted by [`GithubClient::request_count`]. Response
//! bodies are read up to [`MAX_BODY_BYTES`]; error messages are truncated to 500 characters,
//! passed through [`crate::redact::redact`] (and scrubbed of the token or JWT the attempt sent)
//! and carry GitHub's `x-github-request-id`. No token appears in `Debug`, logs or errors.
//!
//! Paginated lists ask for `per_page=100` and follow `Link: <…>; rel="next"`, only while the
//! link stays on the API's own scheme and host.
//!
//! About TLS: octocrab is built with rustls on the aws-lc-rs provider, the same provider
//! reqwest uses in this crate, so rustls is compiled with a single provider (no `ring`).
//! octocrab and reqwest both hand their provider to rustls explicitly
//! (`CryptoProvider::get_default()` falling back to their own), so neither panics even if a
//! second provider were ever compiled in; no process-wide default needs installing.
//!
//! The parts: `limits` ([`ClientLimits`]), `error` ([`GithubError`] and how a failed response
//! becomes one), `auth` ([`TokenSource`]; the App's JWT and installation tokens come through
//! the [`AppJwt`] and [`InstallationTokens`] traits, so this module does not depend on
//! `github::app`), `transport` (the retry engine), `wire` (paths and GitHub's JSON),
//! and the endpoints by resource: `pulls`, `reviews`, `contents` (files and archives),
//! `access` (users and permissions), `apps` (the App's own) and `checks`.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::Uri;
use octocrab::Octocrab;
use octocrab::secrecy::ExposeSecret as _;

mod access;
mod apps;
mod auth;
mod checks;
mod contents;
mod error;
mod exchange;
mod limits;
mod pulls;
mod reviews;
mod threads;
mod transport;
mod wire;

pub use auth::{AppJwt, BoxFuture, InstallationToken, InstallationTokens, TokenSource};
pub use checks::CheckWrite;
pub use contents::Download;
pub use error::GithubError;
pub use limits::{ClientLimits, NoticeSink, ResponseSink};

// What the endpoint modules build on, for each as `super::…`.
use auth::sendable;
use error::error_chain;
use transport::{Call, Ctx, parse_json};
use wire::{QUERY, repo_path};

/// Default API base URL.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// Largest response body read from GitHub.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Most rate-limit waits one call goes through before giving up.
pub const MAX_RATE_LIMIT_WAITS: u32 = 4;
/// Most requests in flight at once.
pub const MAX_IN_FLIGHT: usize = 10;
/// The files endpoint lists at most this many files of a PR.
pub const MAX_PR_FILES: usize = 3000;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(30);
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest error text kept from a response body.
const MAX_ERROR_CHARS: usize = 500;
/// A backoff at least this long is announced on the notice sink (rate-limit waits always are).
const NOTICE_BACKOFF_AFTER: Duration = Duration::from_secs(4);
/// Most pages one list follows (100 items a page).
const MAX_PAGES: usize = 100;

const ACCEPT_JSON: &str = "application/vnd.github+json";
const ACCEPT_DIFF: &str = "application/vnd.github.diff";

const PR_READ: &str = "pull-requests: read";
const PR_WRITE: &str = "pull-requests: write";
const CONTENTS_READ: &str = "contents: read";

/// The GitHub REST client. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct GithubClient {
    octo: Octocrab,
    base: Uri,
    source: TokenSource,
    limits: ClientLimits,
    requests: AtomicUsize,
    /// Serialises writes; holds when the last one ended.
    write_gate: tokio::sync::Mutex<Option<Instant>>,
    in_flight: tokio::sync::Semaphore,
}

impl fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubClient")
            .field("base", &self.base.to_string())
            .field(
                "token",
                &match &self.source {
                    TokenSource::None => None,
                    TokenSource::Static(_) => Some("[set]".to_owned()),
                    other => Some(format!("{other:?}")),
                },
            )
            .field("limits", &self.limits)
            .field("requests", &self.request_count())
            .finish_non_exhaustive()
    }
}

/// Reads `GITHUB_API_URL` (default `https://api.github.com`) and `GITHUB_TOKEN` (none when unset
/// or empty). Must run inside a Tokio runtime.
pub fn from_env(limits: ClientLimits) -> Result<GithubClient, GithubError> {
    let api_url = std::env::var("GITHUB_API_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
    let token = std::env::var("GITHUB_TOKEN")
        .ok()
        .filter(|t| !t.trim().is_empty());
    GithubClient::new(&api_url, token, limits)
}

impl GithubClient {
    /// Whether requests carry credentials at all (without, a round is printed, never posted).
    pub fn sends_token(&self) -> bool {
        !matches!(self.source, TokenSource::None)
    }

    /// Builds a client for `api_url` (`https://api.github.com`, `https://HOST/api/v3` on GHES,
    /// `http://127.0.0.1:PORT` in tests), sending `token` as `Authorization: Bearer`.
    ///
    /// Must be called inside a Tokio runtime (octocrab spawns its request buffer there).
    pub fn new(
        api_url: &str,
        token: Option<String>,
        limits: ClientLimits,
    ) -> Result<Self, GithubError> {
        let source = TokenSource::token(token);
        if let TokenSource::Static(token) = &source
            && !sendable(token.expose_secret())
        {
            return Err(GithubError::Setup(
                "GITHUB_TOKEN contains characters that cannot be sent in an HTTP header".into(),
            ));
        }
        Self::with_source(api_url, source, limits)
    }

    /// Builds a client for `api_url` whose `Authorization` comes from `source`, asked on every
    /// attempt. Must be called inside a Tokio runtime.
    pub fn with_source(
        api_url: &str,
        source: TokenSource,
        limits: ClientLimits,
    ) -> Result<Self, GithubError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(GithubError::Setup(
                "the GitHub client must be built inside a Tokio runtime".into(),
            ));
        }
        let trimmed = api_url.trim().trim_end_matches('/');
        let base: Uri = trimmed
            .parse()
            .map_err(|e| GithubError::Setup(format!("invalid GitHub API URL {trimmed:?}: {e}")))?;
        if !matches!(base.scheme_str(), Some("http" | "https")) || base.authority().is_none() {
            return Err(GithubError::Setup(format!(
                "invalid GitHub API URL {trimmed:?}: expected http(s)://host[/path]"
            )));
        }
        // No octocrab auth: `attempt` sets `Authorization` itself from the source, and only
        // ever on the API's own origin (pagination links are checked by `same_origin`).
        let octo = Octocrab::builder()
            .base_uri(base.clone())
            .map_err(|e| GithubError::Setup(error_chain(&e)))?
            .set_connect_timeout(Some(CONNECT_TIMEOUT))
            .set_read_timeout(Some(READ_TIMEOUT))
            .set_write_timeout(Some(WRITE_TIMEOUT))
            .build()
            .map_err(|e| GithubError::Setup(error_chain(&e)))?;
        Ok(Self::from_parts(octo, base, source, limits))
    }

    /// A client on the same API and connections with another token source and limits; its
    /// own request count, write pacing and in-flight cap. Cheap (no new connection pool).
    pub fn sibling(&self, source: TokenSource, limits: ClientLimits) -> Self {
        Self::from_parts(self.octo.clone(), self.base.clone(), source, limits)
    }

    fn from_parts(octo: Octocrab, base: Uri, source: TokenSource, limits: ClientLimits) -> Self {
        Self {
            octo,
            base,
            source,
            limits,
            requests: AtomicUsize::new(0),
            write_gate: tokio::sync::Mutex::new(None),
            in_flight: tokio::sync::Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    /// [`from_env`]: `GITHUB_API_URL` and `GITHUB_TOKEN`.
    pub fn from_env(limits: ClientLimits) -> Result<Self, GithubError> {
        from_env(limits)
    }

    /// HTTP requests made so far, retries included.
    pub fn request_count(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
