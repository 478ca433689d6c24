//! What the API backends share on the wire: one HTTPS POST with a capped body, tolerant reading of error bodies, classification of failures, and the bounded
//! retry loop.
//!
//! Classification follows the vendors' SDKs (`docs/contract.md` "Backends"): the HTTP status
//! decides, the body refines. `x-should-retry` is obeyed; 408, 409, 429 and 5xx (529 included) are
//! retried after `retry-after-ms` / `retry-after` or an exponential backoff with jitter; a
//! billing or quota state is never retried, whatever its status, because waiting will not clear it.

use std::borrow::Cow;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Client, StatusCode, Url};
use serde_json::Value;

use super::keys::{Sources, origin_of};
use super::{Failure, FailureKind};
use crate::chars::one_line;
use crate::redact::redact;

/// `max_tokens` / `max_completion_tokens` when the lens does not set `max_output_tokens`.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u32 = 8000;

/// The most of a successful response body we read; more is a failure, never a truncated parse.
pub const MAX_BODY: usize = 8 << 20;

/// The most of an error body we read: only its message is wanted.
const MAX_ERROR_BODY: usize = 64 << 10;

/// The longest server-provided text quoted in a failure message.
pub const MAX_DETAIL_CHARS: usize = 300;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times a call is tried and how long to wait in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (at least 1).
    pub attempts: u32,
    /// The first backoff; each later one doubles, up to `cap`, minus up to 25 % jitter.
    pub base: Duration,
    pub cap: Duration,
    /// The longest `retry-after` we wait for; a server asking for more fails the call at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `failed + 1`, after `failed` failed attempts (1-based).
    pub(crate) fn backoff(&self, failed: u32) -> Duration {
        let exp = self
            .base
            .saturating_mul(1u32 << failed.saturating_sub(1).min(20))
            .min(self.cap);
        // Jitter spreads the retries of concurrent lenses so they do not hit the API together.
        exp.mul_f64(1.0 - 0.25 * random_unit())
    }
}

/// A number in [0, 1) from the standard library's per-process random hash keys: jitter needs
/// no more than that.
fn random_unit() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// What a failed call is about, for the backend to refine or report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub failure: Failure,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The server's own message (redacted, one line), when it gave one.
    pub detail: String,
}

impl CallError {
    fn plain(failure: Failure) -> Self {
        Self {
            failure,
            status: None,
            detail: String::new(),
        }
    }
}

/// One API call: where it goes and what it says, the same on every attempt.
pub(crate) struct Call<'a> {
    pub client: &'a Client,
    pub url: &'a Url,
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    pub from: &'a Sources,
    pub model: &'a str,
    /// The API key, scrubbed from every message even when the server echoes it in a form
    /// `redact` would not recognise (a gateway's own key format).
    pub key: &'a str,
}

/// The HTTP client for one lens run against `url`: no redirects (a redirect would carry the key
/// to another host, and turn the POST into a GET), a connect timeout, and the lens's timeout for
/// reads. Proxies come from the usual environment variables, except for a loopback server (a
/// local vLLM or Ollama), which no proxy can reach.
pub(crate) fn client(url: &Url, timeout: Duration) -> Result<Client, Failure> {
    let timeout = timeout.max(Duration::from_secs(1));
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let builder = if loopback {
        Client::builder().no_proxy()
    } else {
        Client::builder()
    };
    builder
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(timeout)
        .timeout(timeout)
        .user_agent(concat!("reviewbot/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Failure::fatal(format!("could not set up the HTTP client: {}", chain(&e))))
}

/// `base` joined with `path` (`v1/messages`, `chat/completions`), with or without a trailing
/// slash on `base`. Only http(s) URLs are accepted.
pub(crate) fn endpoint(base: &str, path: &str, from: &Sources) -> Result<Url, Failure> {
    let joined = format!("{}/{path}", base.trim_end_matches('/'));
    let bad = || {
        Failure::fatal(format!(
            "{} is not an http(s) URL: {}",
            from.base_url,
            one_line(&redact(base), 100)
        ))
    };
    let url = Url::parse(&joined).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad());
    }
    Ok(url)
}

/// A header value holding a secret: checked, and marked sensitive so no Debug output shows it.
pub(crate) fn secret_header(value: &str, from: &Sources) -> Result<HeaderValue, Failure> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        Failure::fatal(format!(
            "{} holds characters not allowed in an HTTP header",
            from.key
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// Sends `call`, retrying transient failures under `policy`; the body of the first 2xx answer.
pub(crate) async fn post_with_retries(
    call: &Call<'_>,
    policy: &RetryPolicy,
) -> Result<Vec<u8>, CallError> {
    let attempts = policy.attempts.max(1);
    let mut failed = 0;
    loop {
        let err = match attempt(call).await {
            Ok(body) => return Ok(body),
            Err(err) => err,
        };
        failed += 1;
        let FailureKind::Transient { retry_after } = err.failure.kind else {
            return Err(err);
        };
        if failed >= attempts {
            let mut err = err;
            if attempts > 1 {
                err.failure.message = format!(
                    "{} (gave up after {attempts} attempts)",
                    err.failure.message
                );
            }
            return Err(err);
        }
        let wait = match retry_after {
            Some(wait) if wait > policy.max_retry_after => {
                let mut err = err;
                err.failure.message = format!(
                    "{}; the server asks to wait {}, longer than the {} we wait",
                    err.failure.message,
                    secs(wait),
                    secs(policy.max_retry_after)
                );
                return Err(err);
            }
            Some(wait) => wait,
            None => policy.backoff(failed),
        };
        tokio::time::sleep(wait).await;
    }
}

/// One attempt: the 2xx body, or the classified failure.
async fn attempt(call: &Call<'_>) -> Result<Vec<u8>, CallError> {
    let sent = call
        .client
        .post(call.url.clone())
        .headers(call.headers.clone())
        .body(call.body.to_vec())
        .send()
        .await;
    let mut resp = match sent {
        Ok(resp) => resp,
        Err(e) => return Err(CallError::plain(transport_failure(&e, call))),
    };
    let status = resp.status();
    if status.is_success() {
        return match read_capped(&mut resp, MAX_BODY).await {
            Ok((body, false)) => Ok(body),
            Ok((_, true)) => Err(CallError::plain(Failure::fatal(format!(
                "the response body is over {} MiB",
                MAX_BODY >> 20
            )))),
            Err(e) => Err(CallError::plain(transport_failure(&e, call))),
        };
    }
    let headers = resp.headers().clone();
    // A body we cannot finish reading still has a status worth classifying.
    let body = read_capped(&mut resp, MAX_ERROR_BODY)
        .await
        .map(|(body, _)| body)
        .unwrap_or_default();
    Err(classify(status, &headers, &body, call))
}

/// Reads at most `cap` bytes of the body; the flag says whether there was more.
async fn read_capped(
    resp: &mut reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A failure before any status arrived, or while reading the body: the network's, so transient,
/// except for what retrying cannot fix.
fn transport_failure(e: &reqwest::Error, call: &Call<'_>) -> Failure {
    let origin = origin_of(call.url);
    let why = scrub(&chain(e), call.key).into_owned();
    if e.is_builder() {
        return Failure::fatal(format!("could not build the request to {origin}: {why}"));
    }
    let message = if e.is_timeout() {
        format!("the request to {origin} timed out")
    } else if e.is_connect() {
        format!("cannot connect to {origin}: {why}")
    } else {
        format!("the connection to {origin} failed: {why}")
    };
    Failure::new(FailureKind::Transient { retry_after: None }, message)
}

/// `e` and its sources, one line, without the URL (which could carry credentials).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        // reqwest puts the URL in its own message; the origin is named separately.
        let text = match text.find(" for url (") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    one_line(&parts.join(": "), MAX_DETAIL_CHARS)
}

/// The failure an error status stands for, with one line naming the cause.
pub(crate) fn classify(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    call: &Call<'_>,
) -> CallError {
    let info = ErrorInfo::parse(body);
    let detail = scrub(&info.message, call.key).into_owned();
    let code = status.as_u16();
    let said = |what: &str| {
        if detail.is_empty() {
            format!("{what} ({code})")
        } else {
            format!("{what} ({code}): {detail}")
        }
    };
    let failure = if info.is_billing(code) {
        // Never retried, whatever the status or headers say: it does not clear by waiting.
        let tag = info.tag().map(|t| format!(" {t}")).unwrap_or_default();
        let what = format!("billing or quota limit reached ({code}{tag})");
        let what = if detail.is_empty() {
            what
        } else {
            format!("{what}: {detail}")
        };
        Failure::fatal(format!(
            "{what}; retrying will not help, check the account's plan and billing"
        ))
    } else {
        let transient = match should_retry(headers) {
            Some(told) => told,
            None => matches!(code, 408 | 409 | 429) || code >= 500,
        };
        let what = match code {
            429 => "rate limited",
            529 => "the API is overloaded",
            408 => "the server timed out",
            409 => "conflict",
            500..=599 => "server error",
            _ => "",
        };
        if transient {
            let retry_after = retry_after(headers, SystemTime::now());
            let what = if what.is_empty() {
                "request failed"
            } else {
                what
            };
            Failure::new(FailureKind::Transient { retry_after }, said(what))
        } else if !what.is_empty() {
            Failure::fatal(format!("{}; the server says not to retry", said(what)))
        } else {
            Failure::fatal(fatal_message(code, &info, &detail, call))
        }
    };
    CallError {
        failure,
        status: Some(code),
        detail,
    }
}

/// One line for a permanent client error, naming what to fix.
fn fatal_message(code: u16, info: &ErrorInfo, detail: &str, call: &Call<'_>) -> String {
    let with = |what: String| {
        if detail.is_empty() {
            what
        } else {
            format!("{what}: {detail}")
        }
    };
    match code {
        401 => format!(
            "{}; check {}",
            with("authentication failed (401)".to_owned()),
            call.from.key
        ),
        403 => with("permission denied (403)".to_owned()),
        404 if info.mentions_model() => with(format!("unknown model `{}` (404)", call.model)),
        404 => format!(
            "{}; check {}",
            with(format!(
                "not found (404) at {}{}",
                origin_of(call.url),
                call.url.path()
            )),
            call.from.base_url
        ),
        413 => with("request too large (413)".to_owned()),
        300..=399 => format!(
            "{}; redirects are not followed, check {}",
            with(format!("unexpected redirect ({code})")),
            call.from.base_url
        ),
        _ => with(format!("request rejected ({code})")),
    }
}

/// `x-should-retry: true|false`, when the server says.
fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The wait a server asks for: `retry-after-ms`, then `retry-after` in seconds or as an HTTP
/// date (relative to `now`).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(1e12) / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date form servers must send.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as i64 + 1;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 || hms.next().is_some() {
        return None;
    }
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What an error body says, whatever its shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ErrorInfo {
    /// `error.type` (Anthropic, OpenAI) or a flat `type` (vLLM, Mistral).
    pub kind: Option<String>,
    /// `error.code` or a flat `code`, a string or a number.
    pub code: Option<String>,
    /// The message, redacted, on one line, at most [`MAX_DETAIL_CHARS`] characters.
    pub message: String,
}

impl ErrorInfo {
    /// Tries, in order: `error` as an object, `error` as a string, a top-level `message`,
    /// FastAPI's `detail`, and finally the raw text.
    pub(crate) fn parse(body: &[u8]) -> ErrorInfo {
        let text = String::from_utf8_lossy(body);
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(&text) else {
            return ErrorInfo {
                message: clean(&text),
                ..ErrorInfo::default()
            };
        };
        let string = |v: Option<&Value>| match v {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let (kind, code, message) = match top.get("error") {
            // Google's APIs name the kind `status` (`RESOURCE_EXHAUSTED`).
            Some(Value::Object(e)) => (
                string(e.get("type")).or_else(|| string(e.get("status"))),
                string(e.get("code")),
                string(e.get("message")),
            ),
            Some(Value::String(s)) => (None, string(top.get("code")), Some(s.clone())),
            _ => (
                string(top.get("type")).filter(|t| t != "error"),
                string(top.get("code")),
                string(top.get("message")).or_else(|| top.get("detail").and_then(detail_text)),
            ),
        };
        ErrorInfo {
            kind,
            code,
            // An empty object says nothing; any other unknown shape is quoted as it is.
            message: match message {
                Some(m) => clean(&m),
                None if top.is_empty() => String::new(),
                None => clean(&text),
            },
        }
    }

    /// A quota or spend state, which waiting does not clear.
    fn is_billing(&self, status: u16) -> bool {
        const TAGS: [&str; 5] = [
            "insufficient_quota",
            "billing_error",
            "enforced_spend_limit_reached",
            "billing_hard_limit_reached",
            "billing_not_active",
        ];
        let tagged = [&self.kind, &self.code]
            .into_iter()
            .flatten()
            .any(|t| TAGS.contains(&t.as_str()));
        let m = self.message.to_ascii_lowercase();
        // Only a 429's wording is trusted: a 400 saying "billing" is already fatal.
        let worded = status == 429
            && [
                "spend limit",
                "exceeded your current quota",
                "billing",
                "credit balance",
            ]
            .iter()
            .any(|w| m.contains(w));
        status == 402 || tagged || worded
    }

    /// Whether a 404 is about the model rather than the URL.
    fn mentions_model(&self) -> bool {
        let m = self.message.to_ascii_lowercase();
        m.contains("model") || self.code.as_deref() == Some("model_not_found")
    }

    /// The error's type or code, for a message: `insufficient_quota`.
    fn tag(&self) -> Option<&str> {
        self.code
            .as_deref()
            .filter(|c| c.chars().any(|ch| ch.is_ascii_alphabetic()))
            .or(self.kind.as_deref())
    }
}

/// FastAPI's `detail`: a string, or a list of `{loc, msg}` validation errors.
fn detail_text(detail: &Value) -> Option<String> {
    match detail {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .filter_map(|item| {
                    let msg = item.get("msg")?.as_str()?;
                    let loc = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .map(|p| match p {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect::<Vec<_>>()
                                .join(".")
                        })
                        .filter(|l| !l.is_empty());
                    Some(match loc {
                        Some(loc) => format!("{loc}: {msg}"),
                        None => msg.to_owned(),
                    })
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        }
        _ => None,
    }
}

/// Server text fit for a failure message: secrets masked, one line, bounded.
pub(crate) fn clean(text: &str) -> String {
    // Redact before cutting, so a secret cut in half is still recognised.
    one_line(&redact(text), MAX_DETAIL_CHARS)
}

/// How an unreadable answer begins, for its failure message: cleaned, the key masked.
pub(crate) fn opening(text: &str, key: &str) -> String {
    scrub(&clean(crate::chars::head(text, 200)), key).into_owned()
}

/// `text` with every occurrence of the API key masked.
pub(crate) fn scrub<'t>(text: &'t str, key: &str) -> Cow<'t, str> {
    crate::redact::mask_value(text, key, "[REDACTED api-key]")
}

/// A duration for a message: `1.5s`, `60s`.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

#[cfg(test)]
mod tests {
    //! Unit tests for the shared parts.

    use super::*;

    use crate::lens::keys::EnvVars;

    fn openai_vars() -> Sources {
        Sources::from(EnvVars {
            key: "OPENAI_API_KEY",
            base_url: "OPENAI_BASE_URL",
        })
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    fn test_call<'a>(
        client: &'a Client,
        url: &'a Url,
        empty: &'a HeaderMap,
        from: &'a Sources,
    ) -> Call<'a> {
        Call {
            client,
            url,
            headers: empty,
            body: b"{}",
            from,
            model: "m-1",
            key: "gateway-key-123",
        }
    }

    fn classify_body(status: u16, h: &HeaderMap, body: &str) -> CallError {
        let client = Client::new();
        let url = Url::parse("https://api.example.test/v1/chat/completions").expect("url");
        let empty = HeaderMap::new();
        let from = openai_vars();
        let call = test_call(&client, &url, &empty, &from);
        classify(
            StatusCode::from_u16(status).expect("status"),
            h,
            body.as_bytes(),
            &call,
        )
    }

    #[test]
    fn endpoints_join_with_or_without_a_trailing_slash() {
        for base in ["http://h:1/v1", "http://h:1/v1/", "http://h:1/v1//"] {
            let url = endpoint(base, "chat/completions", &openai_vars()).expect("url");
            assert_eq!(url.as_str(), "http://h:1/v1/chat/completions");
        }
        let err = endpoint("ftp://h/", "x", &openai_vars()).expect_err("scheme");
        assert!(
            err.message
                .starts_with("OPENAI_BASE_URL is not an http(s) URL")
        );
        assert!(endpoint("not a url", "x", &openai_vars()).is_err());
    }

    #[test]
    fn retry_after_reads_ms_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let ra = |pairs: &[(&'static str, &str)]| retry_after(&headers(pairs), now);
        assert_eq!(
            ra(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(ra(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            ra(&[("retry-after", "0.5")]),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            ra(&[("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")]),
            Some(Duration::from_secs(30))
        );
        // A date in the past means "now".
        assert_eq!(
            ra(&[("retry-after", "Sat, 05 Nov 1994 08:49:37 GMT")]),
            Some(Duration::ZERO)
        );
        assert_eq!(ra(&[("retry-after", "soon")]), None);
        assert_eq!(ra(&[("retry-after", "-3")]), None);
        assert_eq!(ra(&[("retry-after-ms", "NaN")]), None);
        assert_eq!(ra(&[]), None);
    }

    #[test]
    fn http_dates_match_the_epoch() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(951_825_600))
        );
        assert_eq!(parse_http_date("Tue, 29 Feb 2000 12:00:00 CET"), None);
        assert_eq!(parse_http_date("Tue, 29 Foo 2000 12:00:00 GMT"), None);
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_jitter() {
        let p = RetryPolicy {
            attempts: 3,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
        };
        for _ in 0..50 {
            let first = p.backoff(1);
            assert!(first <= Duration::from_secs(1) && first >= Duration::from_millis(750));
            let second = p.backoff(2);
            assert!(second <= Duration::from_secs(2) && second >= Duration::from_millis(1500));
            let late = p.backoff(40);
            assert!(late <= Duration::from_secs(20) && late >= Duration::from_secs(15));
        }
    }

    #[test]
    fn error_bodies_of_every_shape_are_read() {
        let anthropic = ErrorInfo::parse(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
        );
        assert_eq!(anthropic.kind.as_deref(), Some("overloaded_error"));
        assert_eq!(anthropic.message, "Overloaded");

        let openai = ErrorInfo::parse(
            br#"{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        );
        assert_eq!(openai.code.as_deref(), Some("insufficient_quota"));

        let vllm = ErrorInfo::parse(
            br#"{"object":"error","message":"The model `first` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
        );
        assert_eq!(vllm.message, "The model `first` does not exist.");
        assert_eq!(vllm.kind.as_deref(), Some("NotFoundError"));
        assert_eq!(vllm.code.as_deref(), Some("404"));

        let mistral = ErrorInfo::parse(
            br#"{"object":"error","message":"Rate limit exceeded","type":"rate_limited","code":"1300"}"#,
        );
        assert_eq!(mistral.code.as_deref(), Some("1300"));
        assert_eq!(mistral.message, "Rate limit exceeded");

        let gateway = ErrorInfo::parse(br#"{"error":"missing model"}"#);
        assert_eq!(gateway.message, "missing model");

        let fastapi = ErrorInfo::parse(
            br#"{"detail":[{"loc":["body","model"],"msg":"field required","type":"value_error.missing"},{"loc":["body",0],"msg":"bad"}]}"#,
        );
        assert_eq!(fastapi.message, "body.model: field required; body.0: bad");

        let plain = ErrorInfo::parse(b"<html>\n<body>502 Bad   Gateway</body>\n</html>");
        assert_eq!(plain.message, "<html> <body>502 Bad Gateway</body> </html>");

        let unknown = ErrorInfo::parse(br#"{"status":"nope"}"#);
        assert_eq!(unknown.message, r#"{"status":"nope"}"#);
    }

    #[test]
    fn error_text_is_bounded_and_redacted() {
        let long = "x".repeat(5000);
        let info = ErrorInfo::parse(long.as_bytes());
        assert_eq!(info.message.chars().count(), MAX_DETAIL_CHARS);
        assert!(info.message.ends_with('…'));

        let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
        let body = format!(r#"{{"error":{{"message":"bad token {token} sent"}}}}"#);
        let info = ErrorInfo::parse(body.as_bytes());
        assert!(!info.message.contains(&token), "{}", info.message);
    }

    #[test]
    fn statuses_classify_as_the_sdks_do() {
        let none = HeaderMap::new();
        let kind = |status: u16, body: &str| classify_body(status, &none, body).failure.kind;
        let transient = FailureKind::Transient { retry_after: None };
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert_eq!(kind(status, "{}"), transient, "{status}");
        }
        for status in [400, 401, 402, 403, 404, 413, 422] {
            assert_eq!(kind(status, "{}"), FailureKind::Fatal, "{status}");
        }
        let told = headers(&[("x-should-retry", "true")]);
        assert_eq!(classify_body(400, &told, "{}").failure.kind, transient);
        let told = headers(&[("x-should-retry", "false")]);
        let err = classify_body(503, &told, "{}").failure;
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(
            err.message,
            "server error (503); the server says not to retry"
        );
        let wait = headers(&[("retry-after", "3")]);
        assert_eq!(
            classify_body(429, &wait, "{}").failure.kind,
            FailureKind::Transient {
                retry_after: Some(Duration::from_secs(3))
            }
        );
    }

    #[test]
    fn billing_states_are_never_retried() {
        let told = headers(&[("x-should-retry", "true"), ("retry-after", "1")]);
        for body in [
            r#"{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"You exceeded your current quota, please check your plan and billing details."}}"#,
            r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low."}}"#,
            r#"{"error":{"type":"rate_limit_error","message":"You have reached your spend limit."}}"#,
            r#"{"error":{"code":"enforced_spend_limit_reached","message":"no"}}"#,
        ] {
            let err = classify_body(429, &told, body).failure;
            assert_eq!(err.kind, FailureKind::Fatal, "{body}");
            assert!(
                err.message
                    .starts_with("billing or quota limit reached (429"),
                "{}",
                err.message
            );
        }
        let err = classify_body(402, &HeaderMap::new(), "{}").failure;
        assert_eq!(err.kind, FailureKind::Fatal);
        assert!(err.message.contains("billing"));
    }

    #[test]
    fn fatal_messages_name_the_cause() {
        let none = HeaderMap::new();
        let msg = |status: u16, body: &str| classify_body(status, &none, body).failure.message;
        assert_eq!(
            msg(
                401,
                r#"{"error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "authentication failed (401): invalid x-api-key; check OPENAI_API_KEY"
        );
        assert_eq!(
            msg(
                404,
                r#"{"object":"error","message":"The model `m-1` does not exist.","type":"NotFoundError","code":404}"#
            ),
            "unknown model `m-1` (404): The model `m-1` does not exist."
        );
        assert_eq!(
            msg(404, "Not Found"),
            "not found (404) at https://api.example.test/v1/chat/completions: Not Found; check OPENAI_BASE_URL"
        );
        assert_eq!(msg(413, ""), "request too large (413)");
        assert_eq!(
            msg(301, ""),
            "unexpected redirect (301); redirects are not followed, check OPENAI_BASE_URL"
        );
        assert_eq!(
            msg(400, r#"{"error":"missing model"}"#),
            "request rejected (400): missing model"
        );
        // The key is masked even in a form `redact` does not know.
        assert_eq!(
            msg(401, r#"{"error":"bad key gateway-key-123"}"#),
            "authentication failed (401): bad key [REDACTED api-key]; check OPENAI_API_KEY"
        );
    }

    #[test]
    fn one_line_keeps_short_text_and_cuts_long_text() {
        assert_eq!(one_line(" a \n b\t", 10), "a b");
        assert_eq!(one_line("ééééé", 3), "éé…");
    }

    #[test]
    fn server_text_loses_its_control_characters() {
        // A terminal escape in an error body would recolour or rewrite the log line it lands in.
        assert_eq!(
            clean("quota \u{1b}[2K\u{1b}[31mexceeded\u{7}\r\n retry"),
            "quota [2K[31mexceeded retry"
        );
    }
}
