//! Tests of the client against a small scripted in-process server.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::body::Bytes as AxBytes;
use axum::extract::State;
use axum::http::{
    HeaderMap as AxHeaders, Method as AxMethod, StatusCode as AxStatus, Uri as AxUri,
};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::HeaderMap;

use super::error::unprocessable_errors;
use super::transport::next_link;
use super::*;
use crate::diff::Side;
use crate::github::app::{AppCredentials, GithubApp};
use crate::github::model::{NewComment, NewReview, RepoName};
use crate::ids::{InstallationId, PrNumber};

const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
const HEAD: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
const BASE: &str = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";

#[derive(Clone)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
    delay: Duration,
}

fn reply(status: u16, body: impl Into<String>) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body: body.into(),
        delay: Duration::ZERO,
    }
}

impl Reply {
    /// Answers only after `delay`.
    fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

#[derive(Clone)]
struct Received {
    method: String,
    /// Path and query.
    uri: String,
    headers: AxHeaders,
    body: String,
    at: Instant,
}

#[derive(Default)]
struct FakeState {
    base: Mutex<String>,
    replies: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// Answers each request with the next scripted reply (`{base}` in a body or header value
/// becomes the server's URL, `{auth}` in a body the credential the request sent); a 599 once
/// the script runs out.
struct Fake {
    base: String,
    state: Arc<FakeState>,
}

impl Fake {
    async fn start(replies: Vec<Reply>) -> Fake {
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
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        *state.base.lock().unwrap() = base.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { base, state }
    }

    fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }

    fn client(&self, limits: ClientLimits) -> GithubClient {
        GithubClient::new(&self.base, Some(TOKEN.to_owned()), limits).expect("client")
    }
}

async fn answer(
    State(state): State<Arc<FakeState>>,
    method: AxMethod,
    uri: AxUri,
    headers: AxHeaders,
    body: AxBytes,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_owned();
    state.received.lock().unwrap().push(Received {
        method: method.to_string(),
        uri: uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at: Instant::now(),
    });
    let base = state.base.lock().unwrap().clone();
    let Some(reply) = state.replies.lock().unwrap().pop_front() else {
        return (AxStatus::from_u16(599).unwrap(), "no reply scripted").into_response();
    };
    let mut out = AxHeaders::new();
    for (name, value) in &reply.headers {
        out.append(
            *name,
            value.replace("{base}", &base).parse().expect("header"),
        );
    }
    let status = AxStatus::from_u16(reply.status).expect("status");
    tokio::time::sleep(reply.delay).await;
    let body = reply.body.replace("{base}", &base).replace("{auth}", &auth);
    (status, out, body).into_response()
}

/// Fast limits; notices are collected in the returned vector.
fn limits() -> (ClientLimits, Arc<Mutex<Vec<String>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let limits = ClientLimits {
        max_rate_limit_wait: Duration::from_secs(5),
        rate_limit_floor: Duration::from_millis(200),
        write_spacing: Duration::ZERO,
        retries: 3,
        backoff_base: Duration::from_millis(10),
        notice: Arc::new(move |line: &str| sink.lock().unwrap().push(line.to_owned())),
        ..ClientLimits::default()
    };
    (limits, notices)
}

fn repo() -> RepoName {
    RepoName::parse("octo/hello").unwrap()
}

fn pr_json() -> String {
    json!({
        "number": 7, "title": "Add a thing", "body": null, "state": "open", "draft": false,
        "head": {"sha": HEAD, "ref": "feature"},
        "base": {"sha": BASE, "ref": "main"},
        "labels": [{"name": "bug"}],
        "user": {"login": "alice", "type": "User"},
        "changed_files": 2
    })
    .to_string()
}

fn review_json(id: u64) -> String {
    json!({"id": id, "user": {"login": "reviewbot[bot]", "type": "Bot"}, "body": "Round 1",
           "commit_id": HEAD, "state": "commented"})
    .to_string()
}

fn new_review() -> NewReview {
    NewReview {
        commit_id: HEAD.into(),
        body: "Round 1 <!-- reviewbot -->".into(),
        event: crate::github::model::ReviewEvent::Comment,
        comments: vec![NewComment {
            path: "src/lib.rs".into(),
            body: "range".into(),
            line: 44,
            side: Side::Right,
            start_line: Some(40),
            start_side: Some(Side::Right),
        }],
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

const SECONDARY: &str = r#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest"}"#;

#[tokio::test]
async fn get_is_retried_on_502_then_succeeds() {
    let fake = Fake::start(vec![
        reply(502, "bad"),
        reply(502, "bad"),
        reply(200, pr_json()),
    ])
    .await;
    let (limits, notices) = limits();
    let client = fake.client(limits);
    let pr = client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    assert_eq!(pr.number, PrNumber(7));
    assert_eq!(pr.body, "", "a null body becomes empty");
    assert_eq!(pr.head.as_str(), HEAD);
    assert_eq!(pr.base_ref, "main");
    assert_eq!(pr.labels, ["bug"]);
    assert_eq!(pr.author.login, "alice");
    assert_eq!(client.request_count(), 3);
    let received = fake.received();
    assert_eq!(received.len(), 3);
    assert!(
        received
            .iter()
            .all(|r| r.uri == "/repos/octo/hello/pulls/7")
    );
    let headers = &received[0].headers;
    assert_eq!(headers["authorization"], format!("Bearer {TOKEN}").as_str());
    assert_eq!(headers["accept"], "application/vnd.github+json");
    assert_eq!(headers["x-github-api-version"], "2022-11-28");
    assert_eq!(headers.get_all("accept").iter().count(), 1);
    assert_eq!(headers.get_all("x-github-api-version").iter().count(), 1);
    assert_eq!(headers.get_all("authorization").iter().count(), 1);
    assert!(
        notices.lock().unwrap().is_empty(),
        "backoff is not a rate-limit notice"
    );
}

#[tokio::test]
async fn get_gives_up_after_the_configured_attempts() {
    let fake = Fake::start(vec![reply(503, "a"), reply(503, "b"), reply(503, "c")]).await;
    let client = fake.client(limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(
        matches!(err, GithubError::Other { status: 503, .. }),
        "{err:?}"
    );
    assert_eq!(client.request_count(), 3);
}

#[tokio::test]
async fn transport_errors_are_retried_then_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = GithubClient::new(&format!("http://127.0.0.1:{port}"), None, limits().0).unwrap();
    let err = client.pull_request(&repo(), PrNumber(1)).await.unwrap_err();
    assert!(matches!(err, GithubError::Unreachable(_)), "{err:?}");
    assert_eq!(client.request_count(), 3);
}

#[tokio::test]
async fn post_500_is_write_uncertain_after_one_request() {
    let fake = Fake::start(vec![
        reply(500, "oops").header("x-github-request-id", "AB12:CD34"),
    ])
    .await;
    let client = fake.client(limits().0);
    let err = client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap_err();
    match &err {
        GithubError::WriteUncertain { reason, .. } => {
            assert!(reason.contains("500"), "{reason}");
            assert!(reason.contains("AB12:CD34"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("round marker"));
    assert_eq!(client.request_count(), 1);
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn post_timeout_or_transport_error_is_write_uncertain() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = GithubClient::new(&format!("http://127.0.0.1:{port}"), None, limits().0).unwrap();
    let err = client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap_err();
    assert!(matches!(err, GithubError::WriteUncertain { .. }), "{err:?}");
    assert_eq!(client.request_count(), 1);
}

#[tokio::test]
async fn create_review_posts_our_body_and_parses_the_review() {
    let fake = Fake::start(vec![reply(200, review_json(80))]).await;
    let client = fake.client(limits().0);
    let review = client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap();
    assert_eq!(review.id, 80);
    assert_eq!(review.state, "COMMENTED");
    let received = fake.received();
    assert_eq!(received[0].method, "POST");
    assert_eq!(received[0].uri, "/repos/octo/hello/pulls/7/reviews");
    let sent: serde_json::Value = serde_json::from_str(&received[0].body).unwrap();
    assert_eq!(
        sent,
        json!({"commit_id": HEAD, "body": "Round 1 <!-- reviewbot -->", "event": "COMMENT",
               "comments": [{"path": "src/lib.rs", "body": "range", "line": 44, "side": "RIGHT",
                             "start_line": 40, "start_side": "RIGHT"}]})
    );
}

#[tokio::test]
async fn secondary_limit_with_retry_after_waits_and_tells_the_user() {
    let fake = Fake::start(vec![
        reply(403, SECONDARY).header("retry-after", "1"),
        reply(200, pr_json()),
    ])
    .await;
    let (limits, notices) = limits();
    let client = fake.client(limits);
    let started = Instant::now();
    client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    assert!(waited < Duration::from_millis(1800), "{waited:?}");
    assert_eq!(client.request_count(), 2);
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("notice: GitHub rate limit; waiting 1s (until "),
        "{}",
        notices[0]
    );
}

#[tokio::test]
async fn secondary_limit_without_headers_waits_the_floor() {
    let fake = Fake::start(vec![reply(403, SECONDARY), reply(200, pr_json())]).await;
    let (limits, notices) = limits();
    let client = fake.client(limits);
    let started = Instant::now();
    client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(waited < Duration::from_secs(1), "{waited:?}");
    assert_eq!(client.request_count(), 2);
    assert!(notices.lock().unwrap()[0].contains("waiting 200ms"));
}

#[tokio::test]
async fn secondary_limit_backs_off_exponentially_on_a_write_too() {
    // A rate-limited write was refused, so it is sent again after the wait.
    let fake = Fake::start(vec![
        reply(403, SECONDARY),
        reply(403, SECONDARY),
        reply(200, review_json(3)),
    ])
    .await;
    let (mut limits, notices) = limits();
    limits.rate_limit_floor = Duration::from_millis(50);
    let client = fake.client(limits);
    let started = Instant::now();
    client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(client.request_count(), 3);
    let notices = notices.lock().unwrap();
    assert!(notices[0].contains("waiting 50ms"), "{notices:?}");
    assert!(notices[1].contains("waiting 100ms"), "{notices:?}");
}

#[tokio::test]
async fn primary_limit_with_reset_in_the_past_waits_briefly() {
    let fake = Fake::start(vec![
        reply(429, r#"{"message":"API rate limit exceeded"}"#)
            .header("x-ratelimit-remaining", "0")
            .header("x-ratelimit-reset", (now_secs() - 100).to_string()),
        reply(200, pr_json()),
    ])
    .await;
    let (limits, notices) = limits();
    let client = fake.client(limits);
    let started = Instant::now();
    client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(10), "{waited:?}");
    assert!(waited < Duration::from_millis(500), "{waited:?}");
    assert_eq!(client.request_count(), 2);
    assert_eq!(notices.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_wait_beyond_the_maximum_fails_at_once() {
    let fake = Fake::start(vec![
        reply(
            403,
            r#"{"message":"API rate limit exceeded for installation"}"#,
        )
        .header("x-ratelimit-remaining", "0")
        .header("x-ratelimit-reset", (now_secs() + 3600).to_string()),
        reply(429, "{}").header("retry-after", "120"),
    ])
    .await;
    let (limits, notices) = limits();
    let client = fake.client(limits);
    let started = Instant::now();
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    match err {
        GithubError::RateLimited { wait } => {
            assert!(wait > Duration::from_secs(3500), "{wait:?}")
        }
        other => panic!("{other:?}"),
    }
    let err = client.labels(&repo(), PrNumber(7)).await.unwrap_err();
    match &err {
        GithubError::RateLimited { wait } => assert_eq!(*wait, Duration::from_secs(120)),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("120s"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(300));
    assert_eq!(client.request_count(), 2);
    assert!(notices.lock().unwrap().is_empty());
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let fake = Fake::start(vec![
        reply(401, r#"{"message":"Bad credentials"}"#).header("x-github-request-id", "R1"),
    ])
    .await;
    let client = fake.client(limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(matches!(err, GithubError::Unauthorized { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "GitHub rejected the token (401): check GITHUB_TOKEN (request id R1)"
    );
    assert_eq!(client.request_count(), 1);
}

#[tokio::test]
async fn not_found_and_forbidden_name_the_permission() {
    let fake = Fake::start(vec![
        reply(404, r#"{"message":"Not Found","documentation_url":"x"}"#)
            .header("x-github-request-id", "R404"),
        reply(
            403,
            r#"{"message":"Resource not accessible by integration"}"#,
        ),
        reply(410, r#"{"message":"Gone"}"#),
    ])
    .await;
    let client = fake.client(limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(
        err,
        GithubError::NotFound {
            permission: "pull-requests: read",
            ..
        }
    ));
    assert!(text.contains("R404"), "{text}");
    assert!(
        text.ends_with(
            "the token needs the \"Pull requests\" permission with read access \
             (`pull-requests: read` in a workflow's `permissions:`)."
        ),
        "{text}"
    );
    let err = client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(
        err,
        GithubError::Forbidden {
            permission: "pull-requests: write",
            ..
        }
    ));
    assert!(
        text.contains("Resource not accessible by integration"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "with read and write access (`pull-requests: write` in a workflow's `permissions:`)."
        ),
        "{text}"
    );
    let err = client.reviews(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(
        matches!(err, GithubError::Other { status: 410, .. }),
        "{err:?}"
    );
    assert_eq!(client.request_count(), 3, "none of these is retried");
}

#[tokio::test]
async fn too_large_diff_is_none() {
    let body = json!({
        "message": "Sorry, the diff exceeded the maximum number of files (300).",
        "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
        "status": "406"
    });
    let fake = Fake::start(vec![
        reply(406, body.to_string()),
        reply(200, "diff --git a/x b/x\n"),
        reply(
            406,
            r#"{"message":"Not acceptable","errors":[{"code":"other"}]}"#,
        ),
    ])
    .await;
    let client = fake.client(limits().0);
    assert_eq!(
        client
            .pull_request_diff(&repo(), PrNumber(7))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        client
            .pull_request_diff(&repo(), PrNumber(7))
            .await
            .unwrap()
            .as_deref(),
        Some("diff --git a/x b/x\n")
    );
    let err = client
        .pull_request_diff(&repo(), PrNumber(7))
        .await
        .unwrap_err();
    assert!(
        matches!(err, GithubError::Other { status: 406, .. }),
        "{err:?}"
    );
    assert_eq!(
        fake.received()[0].headers["accept"],
        "application/vnd.github.diff"
    );
}

#[tokio::test]
async fn unprocessable_parses_both_error_shapes() {
    let fake = Fake::start(vec![
        reply(
            422,
            r#"{"message":"Unprocessable Entity","errors":["Line could not be resolved"],"status":"422"}"#,
        ),
        reply(
            422,
            r#"{"message":"Validation Failed","errors":[{"resource":"PullRequestReviewComment","code":"custom","field":"pull_request_review_thread.line","message":"could not be resolved"}]}"#,
        ),
        reply(422, r#"{"message":"Body is too long"}"#),
    ])
    .await;
    let client = fake.client(limits().0);
    let errors = |e: GithubError| match e {
        GithubError::Unprocessable { errors, .. } => errors,
        other => panic!("{other:?}"),
    };
    let review = new_review();
    let first = client.create_review(&repo(), PrNumber(7), &review).await;
    assert_eq!(errors(first.unwrap_err()), ["Line could not be resolved"]);
    let second = client.create_review(&repo(), PrNumber(7), &review).await;
    assert_eq!(
        errors(second.unwrap_err()),
        ["pull_request_review_thread.line could not be resolved"]
    );
    let third = client.create_review(&repo(), PrNumber(7), &review).await;
    assert_eq!(errors(third.unwrap_err()), ["Body is too long"]);
    assert_eq!(client.request_count(), 3);
}

#[test]
fn unprocessable_object_codes_are_kept() {
    let body = br#"{"errors":[{"field":"path","code":"invalid"},{"code":"missing"},42]}"#;
    assert_eq!(
        unprocessable_errors(body),
        ["path is invalid (invalid)", "error code missing"]
    );
}

#[tokio::test]
async fn files_follow_link_pages() {
    let page = |from: usize, n: usize| {
        let files: Vec<_> = (from..from + n)
            .map(|i| json!({"filename": format!("f{i}.rs"), "status": "modified", "patch": "@@"}))
            .collect();
        serde_json::Value::Array(files).to_string()
    };
    let path = "/repos/octo/hello/pulls/7/files";
    let fake = Fake::start(vec![
        reply(200, page(0, 100)).header(
            "link",
            format!(r#"<{{base}}{path}?per_page=100&page=2>; rel="next", <{{base}}{path}?per_page=100&page=3>; rel="last""#),
        ),
        reply(200, page(100, 100)).header(
            "link",
            format!(r#"<{{base}}{path}?per_page=100&page=1>; rel="prev", <{{base}}{path}?per_page=100&page=3>; rel="next""#),
        ),
        reply(200, page(200, 5)),
        // Second call: stops at max_files.
        reply(200, page(0, 100)).header(
            "link",
            format!(r#"<{{base}}{path}?per_page=100&page=2>; rel="next""#),
        ),
        reply(200, page(100, 100)).header(
            "link",
            format!(r#"<{{base}}{path}?per_page=100&page=3>; rel="next""#),
        ),
    ])
    .await;
    let client = fake.client(limits().0);
    let files = client
        .pull_request_files(&repo(), PrNumber(7), 3000)
        .await
        .unwrap();
    assert_eq!(files.len(), 205);
    assert_eq!(files[204].filename, "f204.rs");
    let uris: Vec<String> = fake.received().into_iter().map(|r| r.uri).collect();
    assert_eq!(
        uris,
        [
            format!("{path}?per_page=100"),
            format!("{path}?per_page=100&page=2"),
            format!("{path}?per_page=100&page=3"),
        ]
    );
    let files = client
        .pull_request_files(&repo(), PrNumber(7), 150)
        .await
        .unwrap();
    assert_eq!(files.len(), 150);
    assert_eq!(client.request_count(), 5, "stops once max_files are read");
}

#[tokio::test]
async fn pagination_never_leaves_the_api_host() {
    let fake =
        Fake::start(vec![reply(200, "[]").header(
            "link",
            r#"<https://evil.example/steal?page=2>; rel="next""#,
        )])
        .await;
    let client = fake.client(limits().0);
    let err = client.labels(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(
        matches!(err, GithubError::InvalidResponse { .. }),
        "{err:?}"
    );
    assert_eq!(client.request_count(), 1);
}

#[test]
fn link_header_parsing() {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::LINK,
        r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=3>; rel="next""#
            .parse()
            .unwrap(),
    );
    assert_eq!(
        next_link(&headers).as_deref(),
        Some("https://api.github.com/x?page=3")
    );
    headers.insert(
        http::header::LINK,
        r#"<https://api.github.com/x?page=1>; rel="first""#.parse().unwrap(),
    );
    assert_eq!(next_link(&headers), None);
}

#[tokio::test]
async fn writes_are_spaced() {
    let fake = Fake::start(vec![reply(200, review_json(1)), reply(200, review_json(2))]).await;
    let (mut limits, _) = limits();
    limits.write_spacing = Duration::from_millis(200);
    let client = Arc::new(fake.client(limits));
    let (repo, review) = (repo(), new_review());
    let (a, b) = tokio::join!(
        client.create_review(&repo, PrNumber(7), &review),
        client.create_review(&repo, PrNumber(7), &review),
    );
    a.unwrap();
    b.unwrap();
    let received = fake.received();
    assert_eq!(received.len(), 2);
    let gap = received[1].at.duration_since(received[0].at);
    assert!(gap >= Duration::from_millis(200), "{gap:?}");
}

#[tokio::test]
async fn the_token_never_appears_in_errors() {
    // A server that echoes the token back in every kind of error body.
    let echo = format!(r#"{{"message":"bad token {TOKEN} here","errors":["{TOKEN}"]}}"#);
    let plain = "plain-secret-value-without-a-known-shape";
    let plain_echo = format!(r#"{{"message":"bad token {plain} here"}}"#);
    let fake = Fake::start(vec![
        reply(401, echo.clone()),
        reply(403, echo.clone()),
        reply(404, echo.clone()),
        reply(422, echo.clone()),
        reply(400, echo.clone()),
        reply(502, echo.clone()),
        reply(500, echo.clone()),
        reply(400, plain_echo),
    ])
    .await;
    let mut limits = limits().0;
    limits.retries = 1;
    let client = fake.client(limits.clone());
    let mut errors = Vec::new();
    for _ in 0..5 {
        errors.push(client.pull_request(&repo(), PrNumber(7)).await.unwrap_err());
    }
    errors.push(client.reviews(&repo(), PrNumber(7)).await.unwrap_err());
    errors.push(
        client
            .create_review(&repo(), PrNumber(7), &new_review())
            .await
            .unwrap_err(),
    );
    let other = GithubClient::new(&fake.base, Some(plain.to_owned()), limits).unwrap();
    errors.push(other.pull_request(&repo(), PrNumber(7)).await.unwrap_err());
    assert_eq!(errors.len(), 8);
    for err in &errors {
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains(TOKEN), "{text}");
            assert!(!text.contains(plain), "{text}");
        }
    }
    assert!(!format!("{client:?}").contains(TOKEN));
    assert!(!format!("{other:?}").contains(plain));
}

#[tokio::test]
async fn error_bodies_are_truncated() {
    let long = "x".repeat(5000);
    let fake = Fake::start(vec![reply(400, format!(r#"{{"message":"{long}"}}"#))]).await;
    let client = fake.client(limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(err.to_string().len() < 700, "{}", err.to_string().len());
}

#[tokio::test]
async fn current_user_403_is_none() {
    let fake = Fake::start(vec![
        reply(
            403,
            r#"{"message":"Resource not accessible by integration"}"#,
        ),
        reply(200, r#"{"login":"octocat","type":"User","id":1}"#),
    ])
    .await;
    let client = fake.client(limits().0);
    assert_eq!(client.current_user().await.unwrap(), None);
    let user = client.current_user().await.unwrap().unwrap();
    assert_eq!(user.login, "octocat");
    assert_eq!(fake.received()[0].uri, "/user");
}

#[tokio::test]
async fn files_at_ref_reads_many_files_in_one_query_and_passes_over_what_is_not_text() {
    let text = "[review]\ntrigger_label = \"ai-review\"\n";
    let fake = Fake::start(vec![reply(
        200,
        json!({"data": {"repository": {
            "f0": {"text": text, "isBinary": false, "isTruncated": false},
            "f1": null,
            "f2": {},
            "f3": {"text": null, "isBinary": true, "isTruncated": false},
            "f4": {"text": "cut", "isBinary": false, "isTruncated": true},
        }}})
        .to_string(),
    )])
    .await;
    let client = fake.client(limits().0);
    let paths: Vec<String> = [
        ".github/reviewbot.toml",
        "REVIEW.md",
        "docs",
        "logo.png",
        "huge.md\") { x }",
    ]
    .map(str::to_owned)
    .to_vec();
    let got = client
        .files_at_ref(&repo(), "feature/x y", &paths)
        .await
        .unwrap();
    assert_eq!(got, vec![Some(text.to_owned()), None, None, None, None]);
    let sent = fake.received();
    assert_eq!(sent.len(), 1, "one query for every file");
    assert_eq!(sent[0].uri, "/graphql");
    let body: serde_json::Value = serde_json::from_str(&sent[0].body).unwrap();
    assert_eq!(
        body["variables"]["e0"],
        "feature/x y:.github/reviewbot.toml"
    );
    assert_eq!(body["variables"]["e4"], "feature/x y:huge.md\") { x }");
    // Paths travel as variables, never inside the query's text.
    let query = body["query"].as_str().unwrap();
    assert!(
        !query.contains("reviewbot.toml") && !query.contains("huge"),
        "{query}"
    );
}

#[tokio::test]
async fn reviews_comments_labels_and_compare_convert() {
    let fake = Fake::start(vec![
        reply(200, format!("[{}]", review_json(5))),
        reply(
            200,
            json!([{"id": 11, "pull_request_review_id": 5, "in_reply_to_id": null,
                    "user": {"login": "reviewbot[bot]", "type": "Bot"}, "body": "b",
                    "path": "src/a.rs", "line": 3, "side": "LEFT", "commit_id": HEAD},
                   {"id": 12, "pull_request_review_id": null, "in_reply_to_id": 11,
                    "user": null, "body": "reply", "path": "src/a.rs", "line": null,
                    "side": null, "commit_id": HEAD}])
            .to_string(),
        ),
        reply(200, r#"[{"name":"bug"},{"name":"ai-review"}]"#),
        reply(
            200,
            json!({"status": "diverged", "files": [{"filename": "b.rs", "status": "renamed",
                   "previous_filename": "a.rs"}]})
            .to_string(),
        ),
    ])
    .await;
    let client = fake.client(limits().0);
    let reviews = client.reviews(&repo(), PrNumber(7)).await.unwrap();
    assert_eq!(reviews[0].state, "COMMENTED");
    assert!(reviews[0].user.as_ref().unwrap().is_bot());
    let comments = client.review_comments(&repo(), PrNumber(7)).await.unwrap();
    assert_eq!(comments[0].side, Some(Side::Left));
    assert_eq!(comments[0].review_id, Some(5));
    assert_eq!(comments[1].in_reply_to_id, Some(11));
    assert_eq!(comments[1].side, None);
    assert_eq!(
        client.labels(&repo(), PrNumber(7)).await.unwrap(),
        ["bug", "ai-review"]
    );
    let cmp = client.compare(&repo(), BASE, HEAD).await.unwrap();
    assert_eq!(cmp.status, "diverged");
    assert_eq!(cmp.files[0].previous_filename.as_deref(), Some("a.rs"));
    let uris: Vec<String> = fake.received().into_iter().map(|r| r.uri).collect();
    assert_eq!(
        uris,
        [
            "/repos/octo/hello/pulls/7/reviews?per_page=100".to_owned(),
            "/repos/octo/hello/pulls/7/comments?per_page=100".to_owned(),
            "/repos/octo/hello/issues/7/labels?per_page=100".to_owned(),
            format!("/repos/octo/hello/compare/{BASE}...{HEAD}"),
        ]
    );
}

#[tokio::test]
async fn an_https_client_builds_beside_reqwest_without_a_crypto_provider_panic() {
    // rustls panics at run time when two providers are compiled in and code asks for the
    // process default without one installed; octocrab and reqwest must both build here.
    let client = GithubClient::new("https://github.example.com/api/v3/", None, limits().0).unwrap();
    assert_eq!(client.base.to_string(), "https://github.example.com/api/v3");
    let _http = reqwest::Client::builder().build().unwrap();
    let again = GithubClient::new(DEFAULT_API_URL, Some(TOKEN.into()), limits().0).unwrap();
    assert!(format!("{again:?}").contains("[set]"));
}

#[tokio::test]
async fn bad_urls_are_setup_errors() {
    for url in ["", "api.github.com", "ftp://x", "http://"] {
        let err = GithubClient::new(url, None, limits().0).unwrap_err();
        assert!(matches!(err, GithubError::Setup(_)), "{url}: {err:?}");
    }
}

#[tokio::test]
async fn tokens_are_trimmed_and_checked() {
    let fake = Fake::start(vec![reply(200, r#"{"login":"octocat"}"#)]).await;
    let padded = format!("  {TOKEN}\n");
    let client = GithubClient::new(&fake.base, Some(padded), limits().0).unwrap();
    client.current_user().await.unwrap();
    assert_eq!(
        fake.received()[0].headers["authorization"],
        format!("Bearer {TOKEN}").as_str()
    );
    let err = GithubClient::new(&fake.base, Some("ab\ncd-secret".into()), limits().0).unwrap_err();
    assert!(matches!(err, GithubError::Setup(_)), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");
    let anonymous = GithubClient::new(&fake.base, Some("  ".into()), limits().0).unwrap();
    assert!(format!("{anonymous:?}").contains("token: None"));
}

#[test]
fn building_outside_a_runtime_is_an_error_not_a_panic() {
    let err = GithubClient::new(DEFAULT_API_URL, None, ClientLimits::default()).unwrap_err();
    assert!(matches!(err, GithubError::Setup(_)));
}

// ---- the App: JWT, installation tokens, the 401 path -----------------------------------------

const INSTALLATION: InstallationId = InstallationId(42);
const MINT_PATH: &str = "/app/installations/42/access_tokens";

/// `POST …/access_tokens`'s answer: `token`, expiring `secs` from now.
fn minted(token: &str, secs: u64) -> Reply {
    let expires = humantime::format_rfc3339_seconds(SystemTime::now() + Duration::from_secs(secs));
    reply(
        201,
        json!({"token": token, "expires_at": expires.to_string(),
               "permissions": {"pull_requests": "write"}, "repository_selection": "all"})
        .to_string(),
    )
}

fn app_key() -> &'static crate::github::app::tests::app_keys::TestKey {
    crate::github::app::tests::test_key(false)
}

fn app(fake: &Fake) -> Arc<GithubApp> {
    let creds = AppCredentials::from_pem(
        crate::github::app::AppIssuer::Id(99),
        &app_key().private_pem,
        "REVIEWBOT_PRIVATE_KEY",
    )
    .unwrap();
    Arc::new(GithubApp::new(&fake.base, creds, limits().0).unwrap())
}

fn bearer(r: &Received) -> String {
    r.headers["authorization"]
        .to_str()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn an_installation_token_is_minted_with_the_jwt_once_and_reused() {
    let fake = Fake::start(vec![
        minted("ghs_first", 3600),
        reply(200, pr_json()),
        reply(200, pr_json()),
    ])
    .await;
    let app = app(&fake);
    let client = app.installation_client(INSTALLATION, limits().0);
    client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    let received = fake.received();
    let calls: Vec<(&str, &str)> = received
        .iter()
        .map(|r| (r.method.as_str(), r.uri.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", MINT_PATH),
            ("GET", "/repos/octo/hello/pulls/7"),
            ("GET", "/repos/octo/hello/pulls/7")
        ]
    );
    // The mint carried an App JWT that the App's public key verifies.
    let key = jsonwebtoken::DecodingKey::from_rsa_pem(app_key().public_pem.as_bytes()).unwrap();
    let validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    let jwt = jsonwebtoken::decode::<serde_json::Value>(&bearer(&received[0]), &key, &validation)
        .unwrap();
    assert_eq!(jwt.claims["iss"], 99);
    assert_eq!(bearer(&received[1]), "ghs_first");
    assert_eq!(bearer(&received[2]), "ghs_first");
    assert_eq!(app.tokens_minted(), 1);
    assert_eq!(
        client.request_count(),
        2,
        "the mint counts on the App's client"
    );
    assert_eq!(app.app_client().request_count(), 1);
}

#[tokio::test]
async fn concurrent_callers_share_one_mint() {
    let fake = Fake::start(vec![
        minted("ghs_shared", 3600).after(Duration::from_millis(200)),
    ])
    .await;
    let app = app(&fake);
    let calls = (0..8).map(|_| {
        let app = Arc::clone(&app);
        tokio::spawn(async move { app.installation_token(INSTALLATION).await })
    });
    for call in calls.collect::<Vec<_>>() {
        let token = call.await.unwrap().unwrap();
        assert_eq!(token.expose_secret(), "ghs_shared");
    }
    assert_eq!(fake.received().len(), 1, "one mint, not a stampede");
}

#[tokio::test]
async fn a_token_within_the_margin_of_its_expiry_is_renewed() {
    let fake = Fake::start(vec![
        // Expires in 2 min: inside the 5 min margin.
        minted("ghs_short", 120),
        reply(200, pr_json()),
        minted("ghs_fresh", 3600),
        reply(200, pr_json()),
        reply(200, pr_json()),
    ])
    .await;
    let app = app(&fake);
    let client = app.installation_client(INSTALLATION, limits().0);
    for _ in 0..3 {
        client.pull_request(&repo(), PrNumber(7)).await.unwrap();
    }
    let tokens: Vec<String> = fake.received().iter().map(bearer).collect();
    assert_eq!(
        tokens[1], "ghs_short",
        "the call that minted it still uses it"
    );
    assert_eq!(tokens[3..], ["ghs_fresh", "ghs_fresh"]);
    assert_eq!(app.tokens_minted(), 2);
}

#[tokio::test]
async fn a_401_drops_the_token_and_a_review_is_posted_once_with_a_new_one() {
    let fake = Fake::start(vec![
        minted("ghs_revoked", 3600),
        reply(401, r#"{"message":"Bad credentials"}"#),
        minted("ghs_renewed", 3600),
        reply(200, review_json(5)),
    ])
    .await;
    let app = app(&fake);
    let client = app.installation_client(INSTALLATION, limits().0);
    let review = client
        .create_review(&repo(), PrNumber(7), &new_review())
        .await
        .unwrap();
    assert_eq!(review.id, 5);
    let received = fake.received();
    let posts: Vec<(&str, String)> = received
        .iter()
        .map(|r| (r.uri.as_str(), bearer(r)))
        .filter(|(uri, _)| !uri.starts_with("/app/"))
        .collect();
    assert_eq!(
        posts,
        [
            (
                "/repos/octo/hello/pulls/7/reviews",
                "ghs_revoked".to_owned()
            ),
            (
                "/repos/octo/hello/pulls/7/reviews",
                "ghs_renewed".to_owned()
            )
        ]
    );
    assert_eq!(received.len(), 4);
}

#[tokio::test]
async fn a_second_401_fails_with_the_installation_hint_and_no_third_try() {
    let fake = Fake::start(vec![
        minted("ghs_a", 3600),
        reply(401, r#"{"message":"Bad credentials"}"#),
        minted("ghs_b", 3600),
        reply(401, r#"{"message":"Bad credentials"}"#).header("x-github-request-id", "R9"),
    ])
    .await;
    let app = app(&fake);
    let client = app.installation_client(INSTALLATION, limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "GitHub rejected the token (401): the installation token was refused even after minting \
         a new one: check that the App is still installed on this repository (request id R9)"
    );
    assert_eq!(fake.received().len(), 4);
}

#[tokio::test]
async fn a_refused_jwt_says_to_check_the_app_settings_and_is_not_retried() {
    let fake = Fake::start(vec![reply(
        401,
        r#"{"message":"A JSON web token could not be decoded {auth}"}"#,
    )])
    .await;
    let app = app(&fake);
    let err = app.bot_login().await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the App JWT was refused: check REVIEWBOT_APP_ID"),
        "{text}"
    );
    let jwt = bearer(&fake.received()[0]);
    assert!(jwt.len() > 100);
    assert!(!text.contains(&jwt) && !format!("{err:?}").contains(&jwt));
    let client = app.installation_client(INSTALLATION, limits().0);
    let err = client.pull_request(&repo(), PrNumber(7)).await.unwrap_err();
    assert!(
        matches!(err, GithubError::Other { status: 599, .. }),
        "{err:?}"
    );
    assert_eq!(
        fake.received().len(),
        1 + 3,
        "a failed mint is retried like a GET"
    );
}

#[tokio::test]
async fn installation_tokens_and_jwts_are_scrubbed_from_errors_and_debug() {
    let token = "ghs_plainplainplain";
    let fake = Fake::start(vec![
        minted(token, 3600),
        reply(400, r#"{"message":"echo {auth}","errors":["{auth}"]}"#),
        reply(
            422,
            r#"{"message":"Validation Failed","errors":["{auth}"]}"#,
        ),
        reply(404, r#"{"message":"no {auth}"}"#),
    ])
    .await;
    let app = app(&fake);
    let client = app.installation_client(INSTALLATION, limits().0);
    let mut errors = Vec::new();
    for _ in 0..3 {
        errors.push(client.pull_request(&repo(), PrNumber(7)).await.unwrap_err());
    }
    for err in &errors {
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(!text.contains("plainplain"), "{text}");
        }
    }
    assert!(
        errors[0].to_string().contains("[REDACTED token]"),
        "{}",
        errors[0]
    );
    for shown in [format!("{client:?}"), format!("{app:?}")] {
        assert!(
            !shown.contains("plainplain") && !shown.contains("PRIVATE"),
            "{shown}"
        );
    }
    assert!(format!("{client:?}").contains("Installation(42)"));
}

#[tokio::test]
async fn a_mint_answer_without_a_usable_expiry_is_an_error_without_the_token() {
    let fake = Fake::start(vec![reply(
        201,
        r#"{"token":"ghs_leakleakleak","expires_at":"soon"}"#,
    )])
    .await;
    let app = app(&fake);
    let err = app.installation_token(INSTALLATION).await.unwrap_err();
    assert!(
        matches!(err, GithubError::InvalidResponse { .. }),
        "{err:?}"
    );
    assert!(!format!("{err} {err:?}").contains("leak"), "{err}");
}

#[tokio::test]
async fn the_bot_login_is_the_slug_asked_once() {
    let fake = Fake::start(vec![reply(200, r#"{"id":99,"slug":"my-review-app"}"#)]).await;
    let app = app(&fake);
    assert_eq!(app.bot_login().await.unwrap(), "my-review-app[bot]");
    assert_eq!(app.bot_login().await.unwrap(), "my-review-app[bot]");
    assert_eq!(fake.received().len(), 1);
    assert_eq!(fake.received()[0].uri, "/app");
}

#[tokio::test]
async fn pagination_links_carry_the_token_on_the_api_host() {
    let path = "/repos/octo/hello/pulls/7/files";
    let fake = Fake::start(vec![
        reply(200, "[]").header("link", format!(r#"<{{base}}{path}?page=2>; rel="next""#)),
        reply(200, "[]"),
    ])
    .await;
    let client = fake.client(limits().0);
    client
        .pull_request_files(&repo(), PrNumber(7), 3000)
        .await
        .unwrap();
    let received = fake.received();
    assert_eq!(received.len(), 2);
    assert!(received.iter().all(|r| bearer(r) == TOKEN));
}

#[tokio::test]
async fn an_archive_redirect_stays_off_plain_http_unless_the_api_is() {
    let https = GithubClient::new("https://api.github.com", None, limits().0).unwrap();
    let url = |client: &GithubClient, l: &str| client.archive_url(l).map(|u| u.to_string());
    assert_eq!(
        url(
            &https,
            "https://codeload.github.com/o/r/legacy.tar.gz/abc?token=T"
        )
        .as_deref(),
        Some("https://codeload.github.com/o/r/legacy.tar.gz/abc?token=T")
    );
    // Never from https to plain http: the URL's own token would travel in clear.
    assert_eq!(
        url(&https, "http://codeload.github.com/o/r/x?token=T"),
        None
    );
    assert_eq!(url(&https, "ftp://codeload.github.com/x"), None);
    // A relative redirect stays on the API's origin.
    assert_eq!(
        url(&https, "/_codeload/o/r/x?token=T").as_deref(),
        Some("https://api.github.com/_codeload/o/r/x?token=T")
    );
    let http = GithubClient::new("http://127.0.0.1:9", None, limits().0).unwrap();
    assert_eq!(
        url(&http, "http://127.0.0.2:9/o/r/x").as_deref(),
        Some("http://127.0.0.2:9/o/r/x")
    );
}
