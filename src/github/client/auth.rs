//! Where `Authorization` comes from: a [`TokenSource`], asked before every attempt.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use octocrab::secrecy::{ExposeSecret as _, SecretString};

use super::error::GithubError;
use crate::ids::InstallationId;

/// Signs the App's JWTs: the App's credentials ([`crate::github::app::AppCredentials`]).
pub trait AppJwt: Send + Sync {
    /// A fresh App JWT.
    fn app_jwt(&self) -> Result<SecretString, GithubError>;
    /// Who the JWT says issued it (the App ID or client ID), for `Debug`.
    fn app_issuer(&self) -> String;
}

/// Keeps installation tokens: one per installation, minted when none is fresh enough
/// ([`crate::github::app::GithubApp`], which mints through a client of its own).
pub trait InstallationTokens: Send + Sync {
    /// A valid token of `installation`.
    fn token(
        &self,
        installation: InstallationId,
    ) -> BoxFuture<'_, Result<SecretString, GithubError>>;
    /// GitHub answered 401 to `used`: forget it if it is still the cached one.
    fn refused<'a>(
        &'a self,
        installation: InstallationId,
        used: &'a SecretString,
    ) -> BoxFuture<'a, ()>;
}

/// A token minted for an installation, with when GitHub says it expires.
pub struct InstallationToken {
    pub token: SecretString,
    pub expires_at: SystemTime,
}

impl fmt::Debug for InstallationToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstallationToken")
            .field("token", &"[redacted]")
            .field(
                "expires_at",
                &humantime::format_rfc3339_seconds(self.expires_at),
            )
            .finish()
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
    App(Arc<dyn AppJwt>),
    /// An installation of the App: its cached installation token. A 401 drops the token and
    /// sends the request once more with a new one.
    Installation {
        app: Arc<dyn InstallationTokens>,
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
    pub fn installation<T: InstallationTokens + 'static>(
        app: &Arc<T>,
        installation: InstallationId,
    ) -> TokenSource {
        TokenSource::Installation {
            app: Arc::clone(app) as Arc<dyn InstallationTokens>,
            installation,
        }
    }

    /// The secret to send on the next attempt.
    ///
    /// Boxed: an installation token may have to be minted, through a request of the App's own
    /// client, and an async call cycle (request → token → request) needs a boxed future.
    pub(super) fn secret(&self) -> BoxFuture<'_, Result<Option<SecretString>, GithubError>> {
        Box::pin(async move {
            let secret = match self {
                TokenSource::None => return Ok(None),
                TokenSource::Static(token) => token.clone(),
                TokenSource::App(credentials) => credentials.app_jwt()?,
                TokenSource::Installation { app, installation } => app.token(*installation).await?,
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
    pub(super) fn unauthorized_hint(&self) -> &'static str {
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
            TokenSource::App(credentials) => write!(f, "App({})", credentials.app_issuer()),
            TokenSource::Installation { installation, .. } => {
                write!(f, "Installation({})", installation.0)
            }
        }
    }
}

pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether a token can go in a header as is (octocrab-free check: we build the header).
pub(super) fn sendable(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}
