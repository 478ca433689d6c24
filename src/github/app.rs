//! reviewbot as a GitHub App: its credentials, the App JWT, its identity (`GET /app`) and the
//! installation tokens it mints.
//!
//! - [`AppCredentials`]: the App ID (or client ID) and the RSA private key, from
//!   `REVIEWBOT_APP_ID` and `REVIEWBOT_PRIVATE_KEY` (PEM text) or `REVIEWBOT_PRIVATE_KEY_PATH`.
//!   GitHub issues PKCS#1 keys (`BEGIN RSA PRIVATE KEY`); PKCS#8 (`BEGIN PRIVATE KEY`) works
//!   too. The key is checked when loaded by signing a JWT with it, so a bad key fails at start,
//!   not on the first webhook. No error or `Debug` output ever shows the key.
//! - The App JWT: RS256, `iat` 60 s in the past (clock drift), `exp` 9 min ahead (GitHub allows
//!   at most 10), `iss` the App ID. Signed fresh for each request that needs it.
//! - [`GithubApp`]: one per process. It asks `GET /app` for the slug once (the bot login is
//!   `<slug>[bot]`) and keeps one installation token per installation, renewed
//!   [`DEFAULT_RENEW_MARGIN`] before it expires. Concurrent callers for one installation wait
//!   for a single mint. A token GitHub answers 401 to is dropped (see
//!   [`crate::github::client::TokenSource`]) and the next caller mints a new one.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use octocrab::secrecy::{ExposeSecret as _, SecretString};
use serde::Serialize;

pub use crate::github::client::InstallationToken;
use crate::github::client::{
    AppJwt, BoxFuture, ClientLimits, GithubClient, GithubError, InstallationTokens, TokenSource,
};
use crate::ids::InstallationId;

/// The variable holding the App ID (or client ID).
pub const APP_ID_VAR: &str = "REVIEWBOT_APP_ID";
/// The variable holding the private key as PEM text.
pub const PRIVATE_KEY_VAR: &str = "REVIEWBOT_PRIVATE_KEY";
/// The variable holding the path of the private key's PEM file.
pub const PRIVATE_KEY_PATH_VAR: &str = "REVIEWBOT_PRIVATE_KEY_PATH";

/// How far in the past `iat` is set, to absorb clock drift.
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// How far ahead `exp` is set (GitHub refuses more than 10 minutes).
pub const JWT_LIFETIME: Duration = Duration::from_secs(9 * 60);
/// An installation token is renewed this long before it expires.
pub const DEFAULT_RENEW_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Largest key file read (a 4096-bit PEM key is about 3.3 KB).
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// Who the App JWT says issued it: the numeric App ID or the App's client ID (`Iv…`).
#[derive(Clone, PartialEq, Eq)]
pub enum AppIssuer {
    Id(u64),
    ClientId(String),
}

impl fmt::Display for AppIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppIssuer::Id(id) => write!(f, "{id}"),
            AppIssuer::ClientId(id) => f.write_str(id),
        }
    }
}

impl fmt::Debug for AppIssuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

// A numeric ID goes out as a JSON number (as octocrab sends it), a client ID as a string.
impl Serialize for AppIssuer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AppIssuer::Id(id) => s.serialize_u64(*id),
            AppIssuer::ClientId(id) => s.serialize_str(id),
        }
    }
}

impl AppIssuer {
    /// A positive number, or a client ID (`Iv` + letters, digits, `.`, `_`, `-`).
    pub fn parse(text: &str) -> Option<AppIssuer> {
        let text = text.trim();
        if let Ok(id) = text.parse::<u64>() {
            return (id > 0).then_some(AppIssuer::Id(id));
        }
        let client_id = text.starts_with("Iv")
            && text.len() <= 64
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        client_id.then(|| AppIssuer::ClientId(text.to_owned()))
    }
}

/// Why the App's credentials could not be loaded. No variant carries key material.
#[derive(Debug, thiserror::Error)]
pub enum AppCredentialsError {
    #[error("{APP_ID_VAR} is not set: give the GitHub App's ID (a number) or its client ID")]
    MissingAppId,
    #[error("{APP_ID_VAR} must be the GitHub App's numeric ID or its client ID (`Iv…`), not {0:?}")]
    BadAppId(String),
    #[error(
        "the GitHub App's private key is missing: set {PRIVATE_KEY_VAR} (the PEM text) or \
         {PRIVATE_KEY_PATH_VAR} (the path of the .pem file GitHub generated)"
    )]
    MissingKey,
    #[error("set only one of {PRIVATE_KEY_VAR} and {PRIVATE_KEY_PATH_VAR}")]
    BothKeys,
    #[error("cannot read the private key file {path} ({PRIVATE_KEY_PATH_VAR}): {reason}")]
    KeyFile { path: PathBuf, reason: String },
    /// The key text is not a usable RSA private key; `var` names where it came from.
    #[error(
        "{var} does not hold a usable GitHub App private key: {reason}. Expected the RSA key in \
         PEM form, `-----BEGIN RSA PRIVATE KEY-----` (as GitHub issues it) or \
         `-----BEGIN PRIVATE KEY-----` (PKCS#8)"
    )]
    BadKey { var: &'static str, reason: String },
    /// Signing failed after the key was loaded (should not happen: loading signs once).
    #[error("signing the GitHub App JWT failed: {0}")]
    Signing(String),
}

/// The App's identity: its ID and RSA private key. `Debug` shows the ID only.
pub struct AppCredentials {
    issuer: AppIssuer,
    key: EncodingKey,
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.issuer)
            .field("private_key", &"[redacted]")
            .finish()
    }
}

/// The claims of an App JWT.
#[derive(Debug, Serialize)]
struct Claims<'a> {
    iat: u64,
    exp: u64,
    iss: &'a AppIssuer,
}

impl AppCredentials {
    /// Reads [`APP_ID_VAR`] and [`PRIVATE_KEY_VAR`] or [`PRIVATE_KEY_PATH_VAR`].
    pub fn from_env() -> Result<Self, AppCredentialsError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Like [`Self::from_env`], reading variables through `var` (tests pass a map). Empty
    /// values count as unset.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, AppCredentialsError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let id = get(APP_ID_VAR).ok_or(AppCredentialsError::MissingAppId)?;
        let issuer = AppIssuer::parse(&id).ok_or_else(|| {
            AppCredentialsError::BadAppId(crate::chars::head(id.trim(), 40).into())
        })?;
        let (pem, source) = match (get(PRIVATE_KEY_VAR), get(PRIVATE_KEY_PATH_VAR)) {
            (Some(_), Some(_)) => return Err(AppCredentialsError::BothKeys),
            (None, None) => return Err(AppCredentialsError::MissingKey),
            (Some(pem), None) => (SecretString::from(pem), PRIVATE_KEY_VAR),
            (None, Some(path)) => (
                read_key_file(PathBuf::from(path.trim()))?,
                PRIVATE_KEY_PATH_VAR,
            ),
        };
        Self::from_pem(issuer, pem.expose_secret(), source)
    }

    /// From PEM text; `source` names where the text came from, for errors.
    pub fn from_pem(
        issuer: AppIssuer,
        pem: &str,
        source: &'static str,
    ) -> Result<Self, AppCredentialsError> {
        // An env file often holds the PEM on one line with `\n` escapes.
        let unescaped;
        let pem = if !pem.contains('\n') && pem.contains("\\n") {
            unescaped = pem.replace("\\n", "\n");
            unescaped.as_str()
        } else {
            pem
        };
        let bad = |reason: &str| AppCredentialsError::BadKey {
            var: source,
            reason: reason.to_owned(),
        };
        match pem_label(pem) {
            None => return Err(bad("it is not PEM text (no `-----BEGIN …-----` line)")),
            Some("RSA PRIVATE KEY" | "PRIVATE KEY") => {}
            Some("ENCRYPTED PRIVATE KEY") => {
                return Err(bad("the key is encrypted; give the unencrypted key"));
            }
            Some("PUBLIC KEY" | "RSA PUBLIC KEY") => {
                return Err(bad("it is a public key, not the private key"));
            }
            Some(_) => return Err(bad("it is not an RSA private key")),
        }
        let key = EncodingKey::from_rsa_pem(pem.as_bytes())
            .map_err(|_| bad("the PEM block is damaged or not an RSA key"))?;
        let creds = AppCredentials { issuer, key };
        // Sign once now: a key that parses as PEM can still be unusable (and a missing crypto
        // backend only shows when signing).
        creds
            .jwt()
            .map_err(|_| bad("the key cannot sign (damaged or not an RSA key)"))?;
        Ok(creds)
    }

    /// The App ID (or client ID) the JWT names as `iss`.
    pub fn issuer(&self) -> &AppIssuer {
        &self.issuer
    }

    /// A fresh App JWT valid from 60 s ago for 9 min from now.
    pub fn jwt(&self) -> Result<SecretString, AppCredentialsError> {
        self.jwt_at(SystemTime::now())
    }

    /// The App JWT as signed at `now`.
    pub fn jwt_at(&self, now: SystemTime) -> Result<SecretString, AppCredentialsError> {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let claims = Claims {
            iat: now.saturating_sub(JWT_BACKDATE.as_secs()),
            exp: now + JWT_LIFETIME.as_secs(),
            iss: &self.issuer,
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map(SecretString::from)
            // The error kind only: never any key bytes.
            .map_err(|e| AppCredentialsError::Signing(format!("{:?}", e.kind())))
    }
}

fn read_key_file(path: PathBuf) -> Result<SecretString, AppCredentialsError> {
    let fail = |reason: String| AppCredentialsError::KeyFile {
        path: path.clone(),
        reason,
    };
    let meta = std::fs::metadata(&path).map_err(|e| fail(e.kind().to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a file".into()));
    }
    if meta.len() > MAX_KEY_BYTES {
        return Err(fail(format!("{} bytes is too large for a key", meta.len())));
    }
    let bytes = std::fs::read(&path).map_err(|e| fail(e.kind().to_string()))?;
    String::from_utf8(bytes)
        .map(SecretString::from)
        .map_err(|_| AppCredentialsError::BadKey {
            var: PRIVATE_KEY_PATH_VAR,
            reason: "the file is not PEM text".into(),
        })
}

/// The label of the first `-----BEGIN <label>-----` line.
fn pem_label(pem: &str) -> Option<&str> {
    let start = pem.find("-----BEGIN ")? + "-----BEGIN ".len();
    let rest = &pem[start..];
    let end = rest.find("-----")?;
    Some(rest[..end].trim())
}

type Slot = Arc<tokio::sync::Mutex<Option<InstallationToken>>>;

/// The App as a whole: one per process, shared behind an `Arc` by every job.
pub struct GithubApp {
    credentials: Arc<AppCredentials>,
    /// Authenticated with the App JWT: `GET /app` and the mints.
    client: GithubClient,
    renew_margin: Duration,
    /// One slot per installation; its async lock is held across a mint, so concurrent callers
    /// of one installation share it.
    slots: Mutex<HashMap<InstallationId, Slot>>,
    bot_login: tokio::sync::OnceCell<String>,
    minted: AtomicU64,
}

impl fmt::Debug for GithubApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubApp")
            .field("credentials", &self.credentials)
            .field("renew_margin", &self.renew_margin)
            .field("tokens_minted", &self.tokens_minted())
            .finish_non_exhaustive()
    }
}

impl GithubApp {
    /// The App talking to `api_url`. Must be called inside a Tokio runtime.
    pub fn new(
        api_url: &str,
        credentials: AppCredentials,
        limits: ClientLimits,
    ) -> Result<Self, GithubError> {
        let credentials = Arc::new(credentials);
        let client =
            GithubClient::with_source(api_url, TokenSource::App(credentials.clone()), limits)?;
        Ok(GithubApp {
            credentials,
            client,
            renew_margin: DEFAULT_RENEW_MARGIN,
            slots: Mutex::new(HashMap::new()),
            bot_login: tokio::sync::OnceCell::new(),
            minted: AtomicU64::new(0),
        })
    }

    /// Renews tokens this long before they expire instead of [`DEFAULT_RENEW_MARGIN`].
    pub fn with_renew_margin(mut self, margin: Duration) -> Self {
        self.renew_margin = margin;
        self
    }

    /// The App's credentials.
    pub fn credentials(&self) -> &AppCredentials {
        &self.credentials
    }

    /// The client authenticated as the App itself (JWT), e.g. for
    /// `GET /repos/{o}/{r}/installation`.
    pub fn app_client(&self) -> &GithubClient {
        &self.client
    }

    /// The bot's login, `<slug>[bot]`, from `GET /app`; asked once, then remembered.
    pub async fn bot_login(&self) -> Result<String, GithubError> {
        self.bot_login
            .get_or_try_init(|| async {
                let slug = self.client.app_slug().await?;
                Ok::<_, GithubError>(format!("{slug}[bot]"))
            })
            .await
            .cloned()
    }

    /// A client acting as `installation`: it asks this App for the token on every attempt, so
    /// a long job outlives a token. Cheap: it shares the App client's connections.
    pub fn installation_client(
        self: &Arc<Self>,
        installation: InstallationId,
        limits: ClientLimits,
    ) -> GithubClient {
        self.client
            .sibling(TokenSource::installation(self, installation), limits)
    }

    /// Tokens minted so far (for metrics and tests).
    pub fn tokens_minted(&self) -> u64 {
        self.minted.load(Ordering::Relaxed)
    }

    /// A valid token of `installation`: the cached one while it is more than the renew margin
    /// from expiry, else a new one (one mint, however many callers wait for it).
    pub async fn installation_token(
        &self,
        installation: InstallationId,
    ) -> Result<SecretString, GithubError> {
        let slot = self.slot(installation);
        let mut cached = slot.lock().await;
        if let Some(token) = cached.as_ref()
            && token.expires_at > SystemTime::now() + self.renew_margin
        {
            return Ok(token.token.clone());
        }
        let minted = self.client.create_installation_token(installation).await?;
        self.minted.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            installation = installation.0,
            expires_at = %humantime::format_rfc3339_seconds(minted.expires_at),
            "minted an installation token"
        );
        let token = minted.token.clone();
        // Even a token that expires within the margin serves the call that minted it.
        *cached = Some(minted);
        Ok(token)
    }

    /// Forgets `used` if it is still the cached token of `installation` (GitHub answered 401
    /// to it); a token another caller already renewed is kept.
    pub async fn invalidate(&self, installation: InstallationId, used: &SecretString) {
        let slot = self.slot(installation);
        let mut cached = slot.lock().await;
        if cached
            .as_ref()
            .is_some_and(|t| t.token.expose_secret() == used.expose_secret())
        {
            tracing::info!(
                installation = installation.0,
                "GitHub refused the installation token; a new one will be minted"
            );
            *cached = None;
        }
    }

    fn slot(&self, installation: InstallationId) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(slots.entry(installation).or_default())
    }
}

impl AppJwt for AppCredentials {
    fn app_jwt(&self) -> Result<SecretString, GithubError> {
        self.jwt().map_err(|e| GithubError::Setup(e.to_string()))
    }

    fn app_issuer(&self) -> String {
        self.issuer().to_string()
    }
}

impl InstallationTokens for GithubApp {
    fn token(
        &self,
        installation: InstallationId,
    ) -> BoxFuture<'_, Result<SecretString, GithubError>> {
        Box::pin(self.installation_token(installation))
    }

    fn refused<'a>(
        &'a self,
        installation: InstallationId,
        used: &'a SecretString,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.invalidate(installation, used))
    }
}

#[cfg(test)]
pub(crate) mod tests;
