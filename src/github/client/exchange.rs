//! One exchange with GitHub as the client describes it: the call (what it sends and why) and
//! the response read in full. Apart from the retry engine (`transport`) so that errors
//! (`error`) can be built from them without the two importing each other.

use bytes::Bytes;
use http::header::HeaderMap;
use http::{Method, StatusCode};
use octocrab::secrecy::SecretString;

/// One call's description, for errors: what it did and which permission it needs.
pub(super) struct Ctx {
    pub(super) what: String,
    pub(super) permission: &'static str,
}

/// A request as [`GithubClient::request`] sends it (possibly several times).
pub(super) struct Call<'a> {
    pub(super) method: Method,
    /// A path below the base URL (`/repos/…`) or an absolute URL on the API's origin.
    pub(super) uri: String,
    pub(super) accept: &'static str,
    pub(super) body: Option<serde_json::Value>,
    pub(super) ctx: &'a Ctx,
    /// A non-`GET` that is safe to send again after a 5xx or transport error (minting a token:
    /// a second token does no harm) and needs no write pacing.
    pub(super) retry_safe: bool,
}

/// A response read in full.
pub(super) struct Raw {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    /// The token (or JWT) this attempt sent, to scrub from errors built from the response.
    pub(super) auth: Option<SecretString>,
}
