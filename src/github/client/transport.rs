//! The retry engine: every request goes through [`GithubClient::request`] (the policy is
//! described on the module above), one attempt at a time, and pages are followed here.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::header::{ACCEPT, AUTHORIZATION, HeaderMap, HeaderValue};
use http::{Method, StatusCode, Uri};
use http_body_util::BodyExt as _;
use octocrab::secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;

use super::auth::TokenSource;
use super::error::{
    GithubError, error_chain, error_message, fmt_wait, html_page, redact_with_token, request_id,
    request_id_suffix, truncate,
};
use super::{
    ACCEPT_JSON, GithubClient, MAX_BODY_BYTES, MAX_PAGES, MAX_RATE_LIMIT_WAITS,
    NOTICE_BACKOFF_AFTER,
};
use crate::redact::redact;

pub(super) use super::exchange::{Call, Ctx, Raw};

pub(super) enum AttemptError {
    Transport(String),
    TooLarge,
}

impl GithubClient {
    pub(super) async fn get(
        &self,
        ctx: &Ctx,
        uri: String,
        accept: &'static str,
    ) -> Result<Raw, GithubError> {
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
    pub(super) async fn get_paged<T: DeserializeOwned>(
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

    pub(super) fn same_origin(&self, link: &str) -> bool {
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
    pub(super) async fn request(&self, call: &Call<'_>) -> Result<Raw, GithubError> {
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
                    let reason = redact_with_token(&reason, auth.as_ref()).into_owned();
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
                app.refused(*installation, used).await;
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
    pub(super) async fn attempt(
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

    pub(super) fn backoff(&self, failures: u32) -> Duration {
        self.limits
            .backoff_base
            .saturating_mul(1 << failures.saturating_sub(1).min(10))
    }

    /// `Some(wait)` when a 403/429 is a rate limit.
    pub(super) fn rate_limit_wait(&self, raw: &Raw, secondary_hits: &mut u32) -> Option<Duration> {
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
    pub(super) async fn retry_after_failure(&self, what: &str, reason: &str, wait: Duration) {
        tracing::warn!(%what, %reason, wait_ms = wait.as_millis() as u64, "GitHub request failed; retrying");
        if wait >= NOTICE_BACKOFF_AFTER {
            (self.limits.notice)(&format!(
                "notice: GitHub request failed ({reason}); retrying in {}",
                fmt_wait(wait)
            ));
        }
        tokio::time::sleep(wait).await;
    }

    pub(super) fn notify_wait(&self, wait: Duration) {
        let until = humantime::format_rfc3339_seconds(SystemTime::now() + wait);
        let line = format!(
            "notice: GitHub rate limit; waiting {} (until {until})",
            fmt_wait(wait)
        );
        tracing::warn!(wait_ms = wait.as_millis() as u64, %until, "GitHub rate limit; waiting");
        (self.limits.notice)(&line);
    }
}

pub(super) fn parse_json<T: DeserializeOwned>(raw: &Raw, ctx: &Ctx) -> Result<T, GithubError> {
    serde_json::from_slice(&raw.body).map_err(|e| GithubError::InvalidResponse {
        what: ctx.what.clone(),
        message: truncate(&redact(&html_page(raw).unwrap_or_else(|| e.to_string()))),
    })
}

/// The `rel="next"` URL of a `Link` header.
pub(super) fn next_link(headers: &HeaderMap) -> Option<String> {
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
