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
//! [`crate::github::app::GithubApp`], so a job that outlives a token gets a new one). A 401 to
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

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use octocrab::Octocrab;
use octocrab::secrecy::{ExposeSecret as _, SecretString};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::config::GithubConfig;
use crate::diff::Side;
use crate::github::app::{AppCredentials, GithubApp, InstallationToken};
use crate::github::model::{
    Comparison, NewReview, Permission, PrFile, PullRequest, RepoName, Review, ReviewComment, User,
};
use crate::ids::{HeadSha, InstallationId, PrNumber};
use crate::redact::redact;

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

/// Where rate-limit notices go (a line for the user, e.g. on stderr).
pub type NoticeSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Waits, pacing and attempts of the client. Tests shorten them.
#[derive(Clone)]
pub struct ClientLimits {
    /// The longest single wait for a rate limit; a longer one fails with `RateLimited`.
    pub max_rate_limit_wait: Duration,
    /// The shortest wait for a secondary rate limit that gave no `retry-after`.
    pub rate_limit_floor: Duration,
    /// The least time between the end of one write and the start of the next.
    pub write_spacing: Duration,
    /// Attempts of a `GET` against transport errors and 5xx (1 = no retry).
    pub retries: u32,
    /// The first backoff after a failed `GET` (then doubled); also the short wait after a
    /// rate-limit reset that is already past.
    pub backoff_base: Duration,
    /// The longest one attempt may take, connect to last body byte (`github.request_timeout`);
    /// a server that accepts and never answers is a timeout after this.
    pub request_timeout: Duration,
    /// Told before every rate-limit wait. Default: a line on stderr.
    pub notice: NoticeSink,
    /// Told the status of every response (0 when none came): the App's request metrics.
    pub observe: ResponseSink,
}

/// Where each response's status goes (see [`ClientLimits::observe`]).
pub type ResponseSink = Arc<dyn Fn(u16) + Send + Sync>;

impl ClientLimits {
    /// The configured rate-limit bounds with the other defaults.
    pub fn from_config(config: &GithubConfig) -> Self {
        Self {
            max_rate_limit_wait: config.max_rate_limit_wait,
            rate_limit_floor: config.rate_limit_floor,
            request_timeout: config.request_timeout,
            ..Self::default()
        }
    }
}

impl Default for ClientLimits {
    fn default() -> Self {
        let config = GithubConfig::default();
        Self {
            max_rate_limit_wait: config.max_rate_limit_wait,
            rate_limit_floor: config.rate_limit_floor,
            write_spacing: Duration::from_secs(1),
            retries: 3,
            backoff_base: Duration::from_secs(1),
            request_timeout: config.request_timeout,
            notice: Arc::new(|line: &str| eprintln!("{line}")),
            observe: Arc::new(|_: u16| {}),
        }
    }
}

impl fmt::Debug for ClientLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLimits")
            .field("max_rate_limit_wait", &self.max_rate_limit_wait)
            .field("rate_limit_floor", &self.rate_limit_floor)
            .field("write_spacing", &self.write_spacing)
            .field("retries", &self.retries)
            .field("backoff_base", &self.backoff_base)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

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

fn request_id_suffix(id: &Option<String>) -> String {
    id.as_deref()
        .map(|id| format!(" (request id {id})"))
        .unwrap_or_default()
}

/// "The token needs …" for a workflow permission spelling.
fn permission_sentence(permission: &str) -> String {
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

fn fmt_wait(wait: Duration) -> String {
    if wait >= Duration::from_secs(1) {
        format!("{}s", wait.as_secs() + u64::from(wait.subsec_nanos() > 0))
    } else {
        format!("{}ms", wait.as_millis())
    }
}

/// Where a client's `Authorization` comes from. Asked before every attempt, so an
/// installation token that expires during a long job is renewed in the middle of it.
#[derive(Clone)]
pub enum TokenSource {
    /// No `Authorization` header (public data only).
    None,
    /// A fixed token: `GITHUB_TOKEN`, a personal access token.
    Static(SecretString),
    /// The App itself: a fresh App JWT per attempt (`GET /app`, minting tokens).
    App(Arc<AppCredentials>),
    /// An installation of the App: its cached installation token. A 401 drops the token and
    /// sends the request once more with a new one.
    Installation {
        app: Arc<GithubApp>,
        installation: InstallationId,
    },
}

impl TokenSource {
    /// A static token, trimmed; `None` when empty.
    pub fn token(token: Option<String>) -> TokenSource {
        match token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()) {
            Some(token) => TokenSource::Static(SecretString::from(token)),
            None => TokenSource::None,
        }
    }

    /// The installation `installation` of `app`.
    pub fn installation(app: &Arc<GithubApp>, installation: InstallationId) -> TokenSource {
        TokenSource::Installation {
            app: Arc::clone(app),
            installation,
        }
    }

    /// The secret to send on the next attempt.
    ///
    /// Boxed: an installation token may have to be minted, through a request of the App's own
    /// client, and an async call cycle (request → token → request) needs a boxed future.
    fn secret(&self) -> BoxFuture<'_, Result<Option<SecretString>, GithubError>> {
        Box::pin(async move {
            let secret = match self {
                TokenSource::None => return Ok(None),
                TokenSource::Static(token) => token.clone(),
                TokenSource::App(credentials) => credentials
                    .jwt()
                    .map_err(|e| GithubError::Setup(e.to_string()))?,
                TokenSource::Installation { app, installation } => {
                    app.installation_token(*installation).await?
                }
            };
            if !sendable(secret.expose_secret()) {
                return Err(GithubError::Setup(
                    "the token contains characters that cannot be sent in an HTTP header".into(),
                ));
            }
            Ok(Some(secret))
        })
    }

    /// What to check when GitHub answers 401.
    fn unauthorized_hint(&self) -> &'static str {
        match self {
            TokenSource::None | TokenSource::Static(_) => "check GITHUB_TOKEN",
            TokenSource::App(_) => {
                "the App JWT was refused: check REVIEWBOT_APP_ID and the App's private key, and \
                 that this machine's clock is right"
            }
            TokenSource::Installation { .. } => {
                "the installation token was refused even after minting a new one: check that the \
                 App is still installed on this repository"
            }
        }
    }
}

impl fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenSource::None => f.write_str("None"),
            TokenSource::Static(_) => f.write_str("Static([set])"),
            TokenSource::App(credentials) => write!(f, "App({})", credentials.issuer()),
            TokenSource::Installation { installation, .. } => {
                write!(f, "Installation({})", installation.0)
            }
        }
    }
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether a token can go in a header as is (octocrab-free check: we build the header).
fn sendable(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

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

/// One call's description, for errors: what it did and which permission it needs.
struct Ctx {
    what: String,
    permission: &'static str,
}

/// A request as [`GithubClient::request`] sends it (possibly several times).
struct Call<'a> {
    method: Method,
    /// A path below the base URL (`/repos/…`) or an absolute URL on the API's origin.
    uri: String,
    accept: &'static str,
    body: Option<serde_json::Value>,
    ctx: &'a Ctx,
    /// A non-`GET` that is safe to send again after a 5xx or transport error (minting a token:
    /// a second token does no harm) and needs no write pacing.
    retry_safe: bool,
}

/// A response read in full.
struct Raw {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
    /// The token (or JWT) this attempt sent, to scrub from errors built from the response.
    auth: Option<SecretString>,
}

enum AttemptError {
    Transport(String),
    TooLarge,
}

impl GithubClient {
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
    fn archive_url(&self, location: &str) -> Option<Uri> {
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

    // ---- transport -------------------------------------------------------------------------

    async fn get(&self, ctx: &Ctx, uri: String, accept: &'static str) -> Result<Raw, GithubError> {
        self.request(&Call {
            method: Method::GET,
            uri,
            accept,
            body: None,
            ctx,
            retry_safe: false,
        })
        .await
    }

    /// Follows `rel="next"` from `path?per_page=100`, stopping after `limit` items.
    async fn get_paged<T: DeserializeOwned>(
        &self,
        ctx: &Ctx,
        path: &str,
        limit: usize,
    ) -> Result<Vec<T>, GithubError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut next = Some(format!("{path}{sep}per_page=100"));
        let mut items = Vec::new();
        let mut pages = 0;
        while let Some(uri) = next.take() {
            if items.len() >= limit || pages >= MAX_PAGES {
                break;
            }
            pages += 1;
            let raw = self.get(ctx, uri, ACCEPT_JSON).await?;
            if raw.status != StatusCode::OK {
                return Err(self.error(&raw, ctx));
            }
            let page: Vec<T> = parse_json(&raw, ctx)?;
            items.extend(page);
            if let Some(link) = next_link(&raw.headers) {
                if !self.same_origin(&link) {
                    return Err(GithubError::InvalidResponse {
                        what: ctx.what.clone(),
                        message: "a pagination link points away from the API host".into(),
                    });
                }
                next = Some(link);
            }
        }
        items.truncate(limit);
        Ok(items)
    }

    fn same_origin(&self, link: &str) -> bool {
        let Ok(uri) = link.parse::<Uri>() else {
            return false;
        };
        uri.scheme_str() == self.base.scheme_str()
            && uri
                .authority()
                .zip(self.base.authority())
                .is_some_and(|(a, b)| a.as_str().eq_ignore_ascii_case(b.as_str()))
    }

    /// The one retry policy every request goes through (see the module docs).
    ///
    /// Returns the final response for any status that is not retried (the caller maps
    /// errors with [`Self::error`]); a 5xx after the last `GET` attempt is returned as well.
    async fn request(&self, call: &Call<'_>) -> Result<Raw, GithubError> {
        let write = call.method != Method::GET && call.method != Method::HEAD && !call.retry_safe;
        let mut gate = if write {
            let gate = self.write_gate.lock().await;
            if let Some(last) = *gate {
                tokio::time::sleep_until((last + self.limits.write_spacing).into()).await;
            }
            Some(gate)
        } else {
            None
        };
        let mut failures = 0u32;
        let mut limit_waits = 0u32;
        let mut secondary_hits = 0u32;
        let mut reauthorized = false;
        loop {
            let auth = self.source.secret().await?;
            let outcome = self.attempt(call, auth.as_ref()).await;
            (self.limits.observe)(match &outcome {
                Ok(raw) => raw.status.as_u16(),
                Err(_) => 0,
            });
            if let Some(gate) = gate.as_mut() {
                **gate = Some(Instant::now());
            }
            let what = &call.ctx.what;
            let raw = match outcome {
                Ok(raw) => raw,
                Err(AttemptError::TooLarge) => {
                    return Err(GithubError::TooLarge { what: what.clone() });
                }
                Err(AttemptError::Transport(reason)) => {
                    let reason = scrub(&reason, auth.as_ref()).into_owned();
                    if write {
                        return Err(GithubError::WriteUncertain {
                            what: what.clone(),
                            reason,
                        });
                    }
                    failures += 1;
                    if failures >= self.limits.retries.max(1) {
                        return Err(GithubError::Unreachable(format!(
                            "{what}: {reason} (after {failures} attempts)"
                        )));
                    }
                    let wait = self.backoff(failures);
                    self.retry_after_failure(what, &reason, wait).await;
                    continue;
                }
            };
            // A 401 means GitHub did not act on the request (even a write), so after dropping
            // a refused installation token it is sent once more with a new one.
            if raw.status == StatusCode::UNAUTHORIZED
                && !reauthorized
                && let (TokenSource::Installation { app, installation }, Some(used)) =
                    (&self.source, &raw.auth)
            {
                reauthorized = true;
                tracing::warn!(%what, installation = installation.0, "GitHub answered 401 to the installation token; minting a new one");
                app.invalidate(*installation, used).await;
                continue;
            }
            if matches!(raw.status.as_u16(), 403 | 429)
                && let Some(wait) = self.rate_limit_wait(&raw, &mut secondary_hits)
            {
                limit_waits += 1;
                if wait > self.limits.max_rate_limit_wait || limit_waits > MAX_RATE_LIMIT_WAITS {
                    tracing::warn!(%what, wait_s = wait.as_secs(), "GitHub rate limit: giving up");
                    return Err(GithubError::RateLimited { wait });
                }
                self.notify_wait(wait);
                tokio::time::sleep(wait).await;
                continue;
            }
            if raw.status.is_server_error() {
                let reason = format!(
                    "HTTP {}{}",
                    raw.status,
                    request_id_suffix(&request_id(&raw.headers))
                );
                if write {
                    return Err(GithubError::WriteUncertain {
                        what: what.clone(),
                        reason,
                    });
                }
                failures += 1;
                if failures >= self.limits.retries.max(1) {
                    return Ok(raw);
                }
                let wait = self.backoff(failures);
                self.retry_after_failure(what, &reason, wait).await;
                continue;
            }
            return Ok(raw);
        }
    }

    /// One HTTP request, read in full (up to [`MAX_BODY_BYTES`]).
    async fn attempt(
        &self,
        call: &Call<'_>,
        auth: Option<&SecretString>,
    ) -> Result<Raw, AttemptError> {
        let _permit = self.in_flight.acquire().await.ok();
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut builder = http::Request::builder()
            .method(call.method.clone())
            .uri(call.uri.as_str())
            .header(ACCEPT, call.accept);
        if let Some(secret) = auth {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", secret.expose_secret()))
                .map_err(|_| {
                    AttemptError::Transport("the token cannot be sent in a header".into())
                })?;
            value.set_sensitive(true);
            builder = builder.header(AUTHORIZATION, value);
        }
        let request = self
            .octo
            .build_request(builder, call.body.as_ref())
            .map_err(|e| AttemptError::Transport(error_chain(&e)))?;
        let exchange = async {
            let response = self
                .octo
                .execute(request)
                .await
                .map_err(|e| AttemptError::Transport(error_chain(&e)))?;
            let (parts, body) = response.into_parts();
            let body = http_body_util::Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        AttemptError::TooLarge
                    } else {
                        AttemptError::Transport(error_chain(&*e))
                    }
                })?
                .to_bytes();
            Ok(Raw {
                status: parts.status,
                headers: parts.headers,
                body,
                auth: auth.cloned(),
            })
        };
        match tokio::time::timeout(self.limits.request_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(AttemptError::Transport(format!(
                "no answer within {} (github.request_timeout)",
                fmt_wait(self.limits.request_timeout)
            ))),
        }
    }

    fn backoff(&self, failures: u32) -> Duration {
        self.limits
            .backoff_base
            .saturating_mul(1 << failures.saturating_sub(1).min(10))
    }

    /// `Some(wait)` when a 403/429 is a rate limit.
    fn rate_limit_wait(&self, raw: &Raw, secondary_hits: &mut u32) -> Option<Duration> {
        let header = |name: &str| {
            raw.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        if let Some(secs) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
            return Some(Duration::from_secs(secs));
        }
        if header("x-ratelimit-remaining") == Some("0") {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let wait = header("x-ratelimit-reset")
                .and_then(|v| v.parse::<u64>().ok())
                .map(|reset| Duration::from_secs(reset + 1).saturating_sub(now))
                .unwrap_or_default();
            return Some(if wait.is_zero() {
                self.limits.backoff_base
            } else {
                wait
            });
        }
        let secondary = raw.status == StatusCode::TOO_MANY_REQUESTS
            || error_message(&raw.body)
                .is_some_and(|m| m.to_ascii_lowercase().contains("secondary rate"));
        if secondary {
            *secondary_hits += 1;
            let floor = self.limits.rate_limit_floor;
            let factor = 1u32 << (*secondary_hits - 1).min(3);
            return Some(floor.saturating_mul(factor));
        }
        None
    }

    /// Waits out a backoff; the user is told first when it is longer than a few seconds.
    async fn retry_after_failure(&self, what: &str, reason: &str, wait: Duration) {
        tracing::warn!(%what, %reason, wait_ms = wait.as_millis() as u64, "GitHub request failed; retrying");
        if wait >= NOTICE_BACKOFF_AFTER {
            (self.limits.notice)(&format!(
                "notice: GitHub request failed ({reason}); retrying in {}",
                fmt_wait(wait)
            ));
        }
        tokio::time::sleep(wait).await;
    }

    fn notify_wait(&self, wait: Duration) {
        let until = humantime::format_rfc3339_seconds(SystemTime::now() + wait);
        let line = format!(
            "notice: GitHub rate limit; waiting {} (until {until})",
            fmt_wait(wait)
        );
        tracing::warn!(wait_ms = wait.as_millis() as u64, %until, "GitHub rate limit; waiting");
        (self.limits.notice)(&line);
    }

    /// Maps a final non-success response to an error.
    fn error(&self, raw: &Raw, ctx: &Ctx) -> GithubError {
        let request_id = request_id(&raw.headers);
        let message = format!(
            "{}{}",
            scrub(
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
                    .map(|e| scrub(&truncate(e), raw.auth.as_ref()).into_owned())
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

/// Redacts secrets and the token (or JWT) that was sent./// Redacts secrets and the token (or JWT) that was sent.
fn scrub<'a>(text: &'a str, token: Option<&SecretString>) -> std::borrow::Cow<'a, str> {
    let redacted = redact(text);
    match token.map(|t| t.expose_secret()) {
        Some(token) if !token.is_empty() && redacted.contains(token) => {
            std::borrow::Cow::Owned(redacted.replace(token, "[REDACTED token]"))
        }
        _ => redacted,
    }
}

/// The messages of an error and its sources, without octocrab's backtraces.
fn error_chain(error: &(dyn StdError + 'static)) -> String {
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

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn request_id(headers: &HeaderMap) -> Option<String> {
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

fn parse_json<T: DeserializeOwned>(raw: &Raw, ctx: &Ctx) -> Result<T, GithubError> {
    serde_json::from_slice(&raw.body).map_err(|e| GithubError::InvalidResponse {
        what: ctx.what.clone(),
        message: truncate(&redact(&html_page(raw).unwrap_or_else(|| e.to_string()))),
    })
}

/// "an HTML page (“title”) instead of JSON", for a body that is a web page: what a proxy or
/// GitHub's own error pages (a 502's "Unicorn!") send, which says more than a parse error.
fn html_page(raw: &Raw) -> Option<String> {
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
            t.chars().take(100).collect::<String>()
        ),
        None => "an HTML page instead of JSON".to_owned(),
    })
}

/// GitHub's error body: `message`, and `errors` as strings or objects.
#[derive(Deserialize)]
struct ApiError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    errors: Vec<serde_json::Value>,
}

fn error_message(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ApiError>(body).ok()?.message
}

/// `errors[].code` of an error body (e.g. `too_large`).
fn error_codes(body: &[u8]) -> Vec<String> {
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
fn unprocessable_errors(body: &[u8]) -> Vec<String> {
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

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(http::header::LINK)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|part| {
            let mut pieces = part.split(';');
            let url = pieces.next()?.trim();
            let url = url.strip_prefix('<')?.strip_suffix('>')?;
            let is_next = pieces.any(|p| {
                p.trim().strip_prefix("rel=").is_some_and(|rel| {
                    rel.trim_matches('"')
                        .split_whitespace()
                        .any(|r| r == "next")
                })
            });
            is_next.then(|| url.to_owned())
        })
}

/// Characters escaped in a path (`/` kept).
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'\\')
    .add(b'^')
    .add(b'|')
    .add(b'[')
    .add(b']');
/// Characters escaped in a query value.
const QUERY: &AsciiSet = &PATH.add(b'&').add(b'=').add(b'+').add(b'/').add(b';');

fn repo_path(repo: &RepoName) -> String {
    format!(
        "/repos/{}/{}",
        utf8_percent_encode(&repo.owner, PATH),
        utf8_percent_encode(&repo.name, PATH)
    )
}

// ---- wire types (our own: lenient, and octocrab's models are #[non_exhaustive]) -----------

#[derive(Deserialize)]
struct ApiPull {
    number: u64,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    draft: Option<bool>,
    head: ApiRef,
    base: ApiRef,
    #[serde(default)]
    labels: Vec<ApiLabel>,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    changed_files: Option<u64>,
}

#[derive(Deserialize)]
struct ApiRef {
    sha: String,
    #[serde(rename = "ref", default)]
    git_ref: String,
}

#[derive(Deserialize)]
struct ApiLabel {
    name: String,
}

impl ApiPull {
    fn into_model(self, ctx: &Ctx) -> Result<PullRequest, GithubError> {
        let sha = |s: &str| {
            HeadSha::parse(s).ok_or_else(|| GithubError::InvalidResponse {
                what: ctx.what.clone(),
                message: format!("not a commit SHA: {:?}", truncate(s)),
            })
        };
        Ok(PullRequest {
            number: PrNumber(self.number),
            title: self.title.unwrap_or_default(),
            body: self.body.unwrap_or_default(),
            state: self.state.unwrap_or_default(),
            draft: self.draft.unwrap_or(false),
            head: sha(&self.head.sha)?,
            base: sha(&self.base.sha)?,
            base_ref: self.base.git_ref,
            labels: self.labels.into_iter().map(|l| l.name).collect(),
            author: self.user.unwrap_or_else(|| User {
                login: "ghost".into(),
                kind: "User".into(),
            }),
            changed_files: self.changed_files.unwrap_or(0),
        })
    }
}

#[derive(Deserialize)]
struct ApiFile {
    filename: String,
    #[serde(default)]
    previous_filename: Option<String>,
    #[serde(default)]
    status: String,
    #[serde(default)]
    patch: Option<String>,
}

impl ApiFile {
    fn into_model(self) -> PrFile {
        PrFile {
            filename: self.filename,
            previous_filename: self.previous_filename,
            status: self.status,
            patch: self.patch,
        }
    }
}

#[derive(Deserialize)]
struct ApiReview {
    id: u64,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    commit_id: Option<String>,
    #[serde(default)]
    state: Option<String>,
}

impl ApiReview {
    fn into_model(self) -> Review {
        Review {
            id: self.id,
            user: self.user,
            body: self.body.unwrap_or_default(),
            commit_id: self.commit_id,
            state: self.state.unwrap_or_default().to_ascii_uppercase(),
        }
    }
}

#[derive(Deserialize)]
struct ApiComment {
    id: u64,
    #[serde(default)]
    pull_request_review_id: Option<u64>,
    #[serde(default)]
    in_reply_to_id: Option<u64>,
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    path: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    side: Option<String>,
    #[serde(default)]
    commit_id: Option<String>,
}

impl ApiComment {
    fn into_model(self) -> ReviewComment {
        let side = match self.side.as_deref().map(str::to_ascii_uppercase).as_deref() {
            Some("LEFT") => Some(Side::Left),
            Some("RIGHT") => Some(Side::Right),
            _ => None,
        };
        ReviewComment {
            id: self.id,
            review_id: self.pull_request_review_id,
            in_reply_to_id: self.in_reply_to_id,
            user: self.user,
            body: self.body.unwrap_or_default(),
            path: self.path,
            line: self.line,
            side,
            commit_id: self.commit_id,
        }
    }
}

#[derive(Deserialize)]
struct ApiCompare {
    status: String,
    #[serde(default)]
    files: Vec<ApiFile>,
}

#[derive(Deserialize)]
struct ApiContent {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    encoding: Option<String>,
}

mod checks;
pub use checks::CheckWrite;

#[cfg(test)]
mod tests;
