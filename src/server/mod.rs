//! `reviewbot serve`, the HTTP side: `POST /webhook` (intake), `GET /healthz`, `GET /metrics`.
//! The router knows the store only through [`Intake`]: it hands each verified, parsed delivery
//! over and answers 2xx once the store has it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::ids::JobId;
use crate::request::ReviewRequest;

pub(crate) mod budget;
pub mod http;
pub(crate) mod job;
pub(crate) mod metrics;
pub(crate) mod serve;
pub(crate) mod signature;
pub(crate) mod store_intake;
mod webhook;
pub(crate) mod worker;

pub use metrics::Metrics;
pub use signature::WebhookSecrets;

/// A delivery as the store keeps it (keyed by its id, so a redelivery adds nothing).
pub use crate::store::NewDelivery;

/// What the store did with a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// Stored now; `job` is the round it queued, if the delivery asked for one.
    New { job: Option<JobId> },
    /// This delivery id was stored before: nothing new starts.
    Duplicate,
}

/// The store could not take a delivery (GitHub then shows it failed, and it can be redelivered).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct IntakeError(pub anyhow::Error);

impl IntakeError {
    pub fn new(e: impl Into<anyhow::Error>) -> Self {
        Self(e.into())
    }
}

/// The store, as the router needs it.
pub trait Intake: Clone + Send + Sync + 'static {
    /// Stores `d` (and queues `req`, when there is one) durably, once per delivery id.
    fn accept(
        &self,
        d: &NewDelivery,
        req: Option<&ReviewRequest>,
    ) -> impl Future<Output = Result<Received, IntakeError>> + Send;
    /// The store answers.
    fn healthy(&self) -> impl Future<Output = bool> + Send;
    /// Jobs by state (`queued`, `running`, …), for `reviewbot_jobs`.
    fn job_counts(&self) -> impl Future<Output = Vec<(String, i64)>> + Send;
}

/// GitHub delivers nothing over 25 MB; a little headroom so every delivery it sends fits.
pub const BODY_LIMIT: usize = 26 * 1024 * 1024;

/// What the router is built with, once.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub secrets: WebhookSecrets,
    /// reviewbot's own login (`<slug>[bot]`): deliveries it caused start nothing.
    pub own_login: String,
    /// Largest body accepted (413 above it).
    pub body_limit: usize,
    /// The whole body must have arrived by then (408 after it), however it trickles in.
    pub body_deadline: Duration,
    /// Longest wait for the store to take a delivery, or answer `/healthz` (503 after it).
    pub store_deadline: Duration,
}

impl ServerConfig {
    /// The defaults: GitHub gives a delivery 10 s for its answer, so neither the body nor the
    /// store may use all of it.
    pub fn new(secrets: WebhookSecrets, own_login: impl Into<String>) -> Self {
        Self {
            secrets,
            own_login: own_login.into(),
            body_limit: BODY_LIMIT,
            body_deadline: Duration::from_secs(8),
            store_deadline: Duration::from_secs(5),
        }
    }
}

struct Shared<I> {
    intake: I,
    config: ServerConfig,
    metrics: Arc<Metrics>,
}

type AppState<I> = Arc<Shared<I>>;

/// The router, built once at start.
pub fn router<I: Intake>(intake: I, config: ServerConfig, metrics: Arc<Metrics>) -> Router {
    let state: AppState<I> = Arc::new(Shared {
        intake,
        config,
        metrics,
    });
    Router::new()
        .route("/webhook", post(webhook::webhook::<I>))
        .route("/healthz", get(healthz::<I>))
        .route("/metrics", get(metrics_text::<I>))
        .with_state(state)
}

async fn healthz<I: Intake>(State(s): State<AppState<I>>) -> Response {
    let healthy = tokio::time::timeout(s.config.store_deadline, s.intake.healthy()).await;
    match healthy {
        Ok(true) => (StatusCode::OK, "ok\n").into_response(),
        _ => {
            tracing::warn!("health check: the store did not answer");
            (StatusCode::SERVICE_UNAVAILABLE, "store unreachable\n").into_response()
        }
    }
}

async fn metrics_text<I: Intake>(State(s): State<AppState<I>>) -> Response {
    let counts = tokio::time::timeout(s.config.store_deadline, s.intake.job_counts())
        .await
        .unwrap_or_default();
    let text = s.metrics.render(&counts);
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}
