//! A scripted HTTP server on 127.0.0.1 for the API backends' tests: each request gets the next
//! canned reply (the last one repeats), and every request is recorded.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap as AxHeaders, Method, StatusCode as AxStatus, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::lens::api_call::RetryPolicy;

/// A policy that retries like the real one, in milliseconds.
pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        base: Duration::from_millis(2),
        cap: Duration::from_millis(10),
        max_retry_after: Duration::from_secs(5),
    }
}

/// One canned reply of the fake server.
#[derive(Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: body.to_string(),
        }
    }
    pub fn raw(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// A request the fake server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub method: String,
    pub path: String,
    pub headers: AxHeaders,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct FakeState {
    replies: Mutex<VecDeque<Reply>>,
    last: Mutex<Option<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// An in-process HTTP server on 127.0.0.1 that answers every request with the next canned
/// reply (the last one repeats) and records what it received.
pub(crate) struct FakeServer {
    pub base: String,
    state: Arc<FakeState>,
}

impl FakeServer {
    pub async fn start(replies: Vec<Reply>) -> FakeServer {
        let state = Arc::new(FakeState {
            replies: Mutex::new(replies.into()),
            ..FakeState::default()
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeServer {
            base: format!("http://{addr}"),
            state,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().expect("lock").clone()
    }
}

async fn answer(
    State(state): State<Arc<FakeState>>,
    method: Method,
    uri: Uri,
    headers: AxHeaders,
    body: Bytes,
) -> Response {
    state.received.lock().expect("lock").push(Received {
        method: method.to_string(),
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let next = state.replies.lock().expect("lock").pop_front();
    let reply = {
        let mut last = state.last.lock().expect("lock");
        if let Some(next) = next {
            *last = Some(next);
        }
        last.clone()
    };
    let Some(reply) = reply else {
        return (AxStatus::INTERNAL_SERVER_ERROR, "no reply scripted").into_response();
    };
    let mut out = AxHeaders::new();
    for (name, value) in &reply.headers {
        out.insert(*name, value.parse().expect("header value"));
    }
    let status = AxStatus::from_u16(reply.status).expect("status");
    (status, out, reply.body).into_response()
}
