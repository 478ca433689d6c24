//! `POST /webhook`: headers, then the whole body (bounded in size and time), then the
//! signature, then the payload, then the store, and only then the 2xx. Each refusal is counted
//! and logged with the delivery id, never with the body or the signature.

use std::borrow::Cow;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use tracing::Instrument;

use super::metrics::{DeliveryOutcome, event_label};
use super::{AppState, Intake, NewDelivery, Received};
use crate::flow::trigger::request_for;
use crate::github::events::Event;
use crate::ids::DeliveryId;

/// How a delivery was answered: the status, what it counts as, a terse line for GitHub's
/// delivery log.
struct Answer {
    status: StatusCode,
    outcome: DeliveryOutcome,
    text: Cow<'static, str>,
}

impl Answer {
    fn new(
        status: StatusCode,
        outcome: DeliveryOutcome,
        text: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self {
            status,
            outcome,
            text: text.into(),
        }
    }

    fn bad_request(text: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, DeliveryOutcome::bad_request, text)
    }

    /// The same answer for every signature failure.
    fn bad_signature() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            DeliveryOutcome::bad_signature,
            "bad signature\n",
        )
    }

    /// GitHub records a failed delivery, which can be redelivered.
    fn store_unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            DeliveryOutcome::store_error,
            "store unavailable\n",
        )
    }

    fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            DeliveryOutcome::too_large,
            "body too large\n",
        )
    }
}

pub(super) async fn webhook<I: Intake>(
    State(s): State<AppState<I>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let event = header_str(&headers, "x-github-event");
    let label = event.map_or("other", event_label);
    let span = tracing::info_span!(
        "webhook",
        delivery = tracing::field::Empty,
        event = label,
        action = tracing::field::Empty,
    );
    let answer = receive(&s, event, &headers, body)
        .instrument(span.clone())
        .await;
    s.metrics.delivery(label, answer.outcome);
    span.in_scope(|| {
        if answer.status.is_success() {
            tracing::info!(outcome = ?answer.outcome, status = answer.status.as_u16(), "delivery answered");
        } else {
            tracing::warn!(outcome = ?answer.outcome, status = answer.status.as_u16(), "delivery refused");
        }
    });
    (answer.status, answer.text).into_response()
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

async fn receive<I: Intake>(
    s: &super::Shared<I>,
    event: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Answer {
    // Every header first: no body is read for a request that cannot be a delivery.
    let Some(event) = event else {
        return Answer::bad_request("missing X-GitHub-Event\n");
    };
    let id = match header_str(headers, "x-github-delivery") {
        None => return Answer::bad_request("missing X-GitHub-Delivery\n"),
        Some(raw) => match DeliveryId::parse(raw) {
            Some(id) => id,
            None => return Answer::bad_request("malformed X-GitHub-Delivery\n"),
        },
    };
    tracing::Span::current().record("delivery", tracing::field::display(&id));
    let Some(signature) = headers.get("x-hub-signature-256") else {
        // A legacy SHA-1 signature alone is a signature we refuse, not a missing header.
        if headers.contains_key("x-hub-signature") {
            return Answer::bad_signature();
        }
        return Answer::bad_request("missing X-Hub-Signature-256\n");
    };

    let body = match read_body(s, headers, body).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };

    if s.config
        .secrets
        .verify(signature.as_bytes(), &body)
        .is_err()
    {
        return Answer::bad_signature();
    }

    let parsed = match Event::parse(event, &body) {
        Ok(parsed) => parsed,
        Err(e) => {
            // The path only: the message may quote a value from the payload.
            tracing::warn!(field = e.path(), "unreadable payload");
            return Answer::bad_request(format!("{e}\n"));
        }
    };
    drop(body);
    if let Some(action) = parsed.action() {
        tracing::Span::current().record("action", action);
    }
    let request = request_for(&parsed, &s.config.own_login);
    let delivery = NewDelivery {
        id,
        event: event.to_owned(),
        action: parsed.action().map(str::to_owned),
    };

    let stored = tokio::time::timeout(
        s.config.store_deadline,
        s.intake.accept(&delivery, request.as_ref()),
    )
    .await;
    match stored {
        Ok(Ok(Received::Duplicate)) => {
            Answer::new(StatusCode::OK, DeliveryOutcome::duplicate, "duplicate\n")
        }
        Ok(Ok(Received::New { job })) => match (&request, job) {
            (Some(req), job) => {
                tracing::info!(pr = %req.pr, repo = %req.repo, job = ?job, "round requested");
                Answer::new(
                    StatusCode::ACCEPTED,
                    DeliveryOutcome::accepted,
                    "accepted\n",
                )
            }
            (None, _) => Answer::new(StatusCode::OK, DeliveryOutcome::ignored, "ignored\n"),
        },
        Ok(Err(e)) => {
            tracing::error!(error = %e, "the store did not take the delivery");
            Answer::store_unavailable()
        }
        Err(_) => {
            tracing::error!("the store did not answer in time");
            Answer::store_unavailable()
        }
    }
}

/// The whole body, within the size limit and the deadline (which does not restart with each
/// byte, so a trickled body is cut off on time).
async fn read_body<I: Intake>(
    s: &super::Shared<I>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Bytes, Answer> {
    let limit = s.config.body_limit;
    let declared =
        header_str(headers, header::CONTENT_LENGTH.as_str()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Answer::too_large());
    }
    let collect = Limited::new(body, limit).collect();
    match tokio::time::timeout(s.config.body_deadline, collect).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(Answer::too_large()),
        Ok(Err(_)) => Err(Answer::bad_request("body: could not be read\n")),
        Err(_) => Err(Answer::new(
            StatusCode::REQUEST_TIMEOUT,
            DeliveryOutcome::timeout,
            "body too slow\n",
        )),
    }
}
