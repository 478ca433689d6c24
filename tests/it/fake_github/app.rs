//! The GitHub App side of the fake: App JWTs checked as GitHub checks them, `GET /app`, and
//! installation tokens with an expiry that the repository endpoints honour.
//!
//! JWT rules (GitHub's "Generating a JSON Web Token (JWT) for a GitHub App"): RS256 signed by the App's key (verified with its public key),
//! `iss` the App ID or client ID, `iat` no more than 60 s in the future, `exp` in the future
//! and at most 10 minutes after `iat`. Anything else answers 401 with GitHub's wording.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::world::{World, timestamp};
use super::{TokenKind, hex, now_epoch};

/// The App the fake knows.
pub(super) struct AppState {
    pub id: u64,
    pub client_id: String,
    pub slug: String,
    pub key: DecodingKey,
    pub installations: BTreeSet<u64>,
    /// Lifetime of a minted token (GitHub: one hour).
    pub lifetime: Duration,
    pub minted: Vec<Minted>,
}

/// One minted installation token.
#[derive(Debug, Clone)]
pub struct Minted {
    pub token: String,
    pub installation: u64,
    pub expires: SystemTime,
    pub revoked: bool,
}

impl AppState {
    pub fn new(id: u64, slug: &str, public_key_pem: &str) -> AppState {
        AppState {
            id,
            client_id: format!("Iv23fake{id}"),
            slug: slug.to_owned(),
            key: DecodingKey::from_rsa_pem(public_key_pem.as_bytes())
                .expect("fake github: the App's public key must be an RSA PEM"),
            installations: BTreeSet::new(),
            lifetime: Duration::from_secs(3600),
            minted: Vec::new(),
        }
    }

    pub fn bot_login(&self) -> String {
        format!("{}[bot]", self.slug)
    }
}

/// Whether `token` is a minted installation token that expired or was revoked.
pub(super) fn refused(w: &World, token: &str) -> bool {
    w.app.as_ref().is_some_and(|app| {
        app.minted
            .iter()
            .any(|m| m.token == token && (m.revoked || m.expires <= SystemTime::now()))
    })
}

/// `/app…` routes: `Some(response)` when the path is one of them.
pub(super) fn route(
    w: &mut World,
    method: &str,
    segments: &[&str],
    token: Option<&str>,
) -> Option<(u16, Value)> {
    let known = matches!(
        (method, segments),
        ("GET", ["app"]) | ("POST", ["app", "installations", _, "access_tokens"])
    );
    if !known {
        return None;
    }
    let api = w.api.clone();
    let Some(app) = w.app.as_mut() else {
        return Some((404, error(404, "Not Found")));
    };
    let Some(token) = token else {
        return Some((401, error(401, "A JSON web token could not be decoded")));
    };
    if let Err(message) = verify_jwt(app, token) {
        return Some((401, error(401, message)));
    }
    Some(match segments {
        ["app"] => (200, app_json(&api, app)),
        [_, _, id, _] => match id.parse::<u64>() {
            Ok(id) if app.installations.contains(&id) => {
                let minted = mint(app, id);
                let bot = app.bot_login();
                let answer = json!({
                    "token": minted.token,
                    "expires_at": timestamp(minted.expires),
                    "permissions": {
                        "pull_requests": "write",
                        "contents": "read",
                        "metadata": "read",
                        "issues": "write",
                    },
                    "repository_selection": "all",
                });
                w.tokens.insert(minted.token, TokenKind::Installation(bot));
                (201, answer)
            }
            _ => (404, error(404, "Not Found")),
        },
        _ => unreachable!("matched above"),
    })
}

/// GitHub's checks on an App JWT; `Err` is its 401 message.
fn verify_jwt(app: &AppState, jwt: &str) -> Result<(), &'static str> {
    let mut validation = Validation::new(Algorithm::RS256);
    // The time rules are checked below, with GitHub's messages.
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Value>(jwt, &app.key, &validation)
        .map_err(|_| "A JSON web token could not be decoded")?
        .claims;
    let int = |name: &str| claims.get(name).and_then(Value::as_i64);
    let (Some(iat), Some(exp)) = (int("iat"), int("exp")) else {
        return Err("'Issued at' and 'Expiration time' claims must be Integers");
    };
    let now = now_epoch() as i64;
    if iat > now + 60 {
        return Err("'Issued at' claim ('iat') must be an Integer representing a time in the past");
    }
    if exp <= now {
        return Err(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        );
    }
    if exp - iat > 600 {
        return Err("'Expiration time' claim ('exp') is too far in the future");
    }
    let iss_ok = match claims.get("iss") {
        Some(Value::Number(n)) => n.as_u64() == Some(app.id),
        Some(Value::String(s)) => *s == app.id.to_string() || *s == app.client_id,
        _ => false,
    };
    if !iss_ok {
        return Err("Integration not found");
    }
    Ok(())
}

fn mint(app: &mut AppState, installation: u64) -> Minted {
    let n = app.minted.len();
    let seed = format!("{}:{installation}:{n}:{:?}", app.id, SystemTime::now());
    let minted = Minted {
        token: format!("ghs_{}", &hex(&Sha256::digest(seed.as_bytes()))[..36]),
        installation,
        expires: SystemTime::now() + app.lifetime,
        revoked: false,
    };
    app.minted.push(minted.clone());
    minted
}

fn app_json(api: &str, app: &AppState) -> Value {
    let mut v = super::json::integration(api, app.id, &app.slug, &app.client_id);
    v["installations_count"] = app.installations.len().into();
    v
}

fn error(status: u16, message: &str) -> Value {
    json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": status.to_string(),
    })
}
