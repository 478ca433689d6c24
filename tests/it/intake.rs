//! Webhook intake through the real router: in process (`oneshot`) and over TCP, with real
//! payloads signed as GitHub signs them. The store here is an in-memory [`Intake`] that keys
//! deliveries by id the way the real one does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use reviewbot::ids::JobId;
use reviewbot::request::{Reason, ReviewRequest};
use reviewbot::server::{
    BODY_LIMIT, Intake, IntakeError, Metrics, NewDelivery, Received, ServerConfig, WebhookSecrets,
    router,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

const SECRET: &str = "It's a Secret to Everybody";
const OWN: &str = "reviewbot-app[bot]";
/// GitHub's published test vector: [`SECRET`] over "Hello, World!".
const VECTOR: &str = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
const GUID: &str = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

type Stored = (NewDelivery, Option<ReviewRequest>);

/// Deliveries by id, in memory; `accepts` counts every call, `stored` what was kept.
#[derive(Clone, Default)]
struct MemoryIntake {
    stored: Arc<Mutex<HashMap<String, Stored>>>,
    accepts: Arc<Mutex<usize>>,
    failing: Arc<AtomicBool>,
    hanging: Arc<AtomicBool>,
}

impl MemoryIntake {
    fn stored(&self) -> Vec<Stored> {
        self.stored.lock().unwrap().values().cloned().collect()
    }
    fn accepts(&self) -> usize {
        *self.accepts.lock().unwrap()
    }
}

impl Intake for MemoryIntake {
    async fn accept(
        &self,
        d: &NewDelivery,
        req: Option<&ReviewRequest>,
    ) -> Result<Received, IntakeError> {
        *self.accepts.lock().unwrap() += 1;
        if self.hanging.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if self.failing.load(Ordering::SeqCst) {
            return Err(IntakeError::new(anyhow::anyhow!("database is locked")));
        }
        let mut stored = self.stored.lock().unwrap();
        if stored.contains_key(d.id.as_str()) {
            return Ok(Received::Duplicate);
        }
        let n = stored.len() as i64 + 1;
        stored.insert(d.id.as_str().to_owned(), (d.clone(), req.cloned()));
        Ok(Received::New {
            job: req.map(|_| JobId(n)),
        })
    }

    async fn healthy(&self) -> bool {
        !self.failing.load(Ordering::SeqCst)
    }

    async fn job_counts(&self) -> Vec<(String, i64)> {
        let queued = self.stored().iter().filter(|(_, r)| r.is_some()).count();
        vec![("queued".to_owned(), queued as i64)]
    }
}

struct Setup {
    intake: MemoryIntake,
    metrics: Arc<Metrics>,
    app: Router,
}

fn setup_with(secrets: &str, tune: impl FnOnce(&mut ServerConfig)) -> Setup {
    let intake = MemoryIntake::default();
    let metrics = Arc::new(Metrics::new());
    let mut config = ServerConfig::new(WebhookSecrets::from_list(secrets).unwrap(), OWN);
    tune(&mut config);
    let app = router(intake.clone(), config, metrics.clone());
    Setup {
        intake,
        metrics,
        app,
    }
}

fn setup() -> Setup {
    setup_with(SECRET, |_| {})
}

fn fixture(path: &str) -> Vec<u8> {
    let full = format!(
        "{}/fixtures/github-webhooks/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

fn sign(secret: &str, body: &[u8]) -> String {
    WebhookSecrets::from_list(secret).unwrap().sign(body)
}

/// A delivery as GitHub sends it: the three headers and the body, signed with [`SECRET`].
fn delivery(event: &str, id: &str, body: Vec<u8>) -> http::request::Builder {
    Request::post("/webhook")
        .header("content-type", "application/json")
        .header("user-agent", "GitHub-Hookshot/044aadd")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", sign(SECRET, &body))
}

async fn send(app: &Router, req: Request<Body>) -> (StatusCode, String) {
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

async fn post(app: &Router, event: &str, id: &str, body: Vec<u8>) -> (StatusCode, String) {
    let req = delivery(event, id, body.clone())
        .body(Body::from(body))
        .unwrap();
    send(app, req).await
}

async fn metrics(app: &Router) -> String {
    send(app, Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .1
}

fn counted(text: &str, event: &str, outcome: &str) -> u64 {
    let prefix =
        format!("reviewbot_webhook_deliveries_total{{event=\"{event}\",outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn githubs_test_vector_passes_the_signature_check() {
    // "Hello, World!" is not a JSON object: past the signature, it is refused as unreadable.
    let s = setup();
    let vector = |body: &'static str| {
        Request::post("/webhook")
            .header("x-github-event", "ping")
            .header("x-github-delivery", GUID)
            .header("x-hub-signature-256", VECTOR)
            .body(Body::from(body))
            .unwrap()
    };
    let (status, text) = send(&s.app, vector("Hello, World!")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.starts_with("body: not JSON"), "{text}");
    // One byte off: refused at the signature, before any parsing.
    let req = vector("Hello, World?");
    assert_eq!(
        send(&s.app, req).await,
        (StatusCode::UNAUTHORIZED, "bad signature\n".into())
    );
    assert_eq!(s.intake.accepts(), 0);
}

#[tokio::test]
async fn opened_is_stored_with_its_round_before_the_answer() {
    let s = setup();
    let body = fixture("pull_request/opened.payload.json");
    let (status, text) = post(&s.app, "pull_request", GUID, body).await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::ACCEPTED, "accepted\n")
    );
    let stored = s.intake.stored();
    assert_eq!(stored.len(), 1);
    let (d, req) = &stored[0];
    assert_eq!(d.id.as_str(), GUID);
    assert_eq!(d.event, "pull_request");
    assert_eq!(d.action.as_deref(), Some("opened"));
    let req = req.as_ref().unwrap();
    assert_eq!(req.reason, Reason::Opened);
    assert_eq!(req.pr.0, 2);
    assert_eq!(req.head.as_ref().unwrap().short(), "ec26c3e5");
    assert_eq!(req.installation.map(|i| i.0), Some(1));
    assert!(req.post);
    assert_eq!(
        counted(&metrics(&s.app).await, "pull_request", "accepted"),
        1
    );
}

#[tokio::test]
async fn a_redelivery_answers_2xx_and_starts_nothing() {
    let s = setup();
    let body = fixture("pull_request/synchronize.payload.json");
    for _ in 0..3 {
        let (status, _) = post(&s.app, "pull_request", GUID, body.clone()).await;
        assert!(status.is_success(), "{status}");
    }
    assert_eq!(s.intake.stored().len(), 1);
    let text = metrics(&s.app).await;
    assert_eq!(counted(&text, "pull_request", "accepted"), 1);
    assert_eq!(counted(&text, "pull_request", "duplicate"), 2);
    assert!(
        text.contains("reviewbot_jobs{state=\"queued\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn ping_other_events_and_reviewbots_own_actions_are_stored_and_ignored() {
    let s = setup();
    let own_label: serde_json::Value = {
        let mut v: serde_json::Value =
            serde_json::from_slice(&fixture("pull_request/labeled.payload.json")).unwrap();
        v["sender"]["login"] = OWN.into();
        v
    };
    let cases = [
        (
            "ping",
            "ping/payload.json".to_owned(),
            fixture("ping/payload.json"),
        ),
        (
            "installation",
            "installation".to_owned(),
            fixture("installation/created.payload.json"),
        ),
        (
            "pull_request",
            "own label".to_owned(),
            serde_json::to_vec(&own_label).unwrap(),
        ),
        (
            "pull_request",
            "closed".to_owned(),
            fixture("pull_request/closed.payload.json"),
        ),
        (
            "issue_comment",
            "plain comment".to_owned(),
            fixture("issue_comment/created.with-installation.payload.json"),
        ),
        (
            "made_up_event",
            "unknown".to_owned(),
            br#"{"action":"whatever"}"#.to_vec(),
        ),
    ];
    for (n, (event, what, body)) in cases.into_iter().enumerate() {
        let (status, text) = post(&s.app, event, &format!("guid-{n}"), body).await;
        assert_eq!(
            (status, text.as_str()),
            (StatusCode::OK, "ignored\n"),
            "{what}"
        );
    }
    let stored = s.intake.stored();
    assert_eq!(stored.len(), 6);
    assert!(stored.iter().all(|(_, req)| req.is_none()));
    let text = metrics(&s.app).await;
    assert_eq!(counted(&text, "ping", "ignored"), 1);
    assert_eq!(counted(&text, "other", "ignored"), 1, "{text}");
    assert!(!text.contains("made_up_event"));
}

#[tokio::test]
async fn the_command_comment_is_a_round_for_the_commenter() {
    let s = setup();
    let mut v: serde_json::Value = serde_json::from_slice(&fixture(
        "octocrab/issue_comment_deleted_webhook_event.json",
    ))
    .unwrap();
    v["action"] = "created".into();
    v["comment"]["body"] = "/reviewbot review".into();
    v["comment"]["user"]["login"] = "gagbo".into();
    let (status, _) = post(
        &s.app,
        "issue_comment",
        GUID,
        serde_json::to_vec(&v).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let req = s.intake.stored()[0].1.clone().unwrap();
    assert_eq!(
        req.reason,
        Reason::Command {
            user: "gagbo".into()
        }
    );
    assert_eq!(req.pr.0, 5);
}

#[tokio::test]
async fn two_secrets_configured_both_sign() {
    let s = setup_with(&format!("new-secret,{SECRET}"), |_| {});
    let body = fixture("pull_request/opened.payload.json");
    let signed_with = |secret: &str, id: &str| {
        let mut req = with_headers(&body, |h| {
            let sig = http::HeaderValue::from_str(&sign(secret, &body)).unwrap();
            h.insert("x-hub-signature-256", sig);
        });
        let id = http::HeaderValue::from_str(id).unwrap();
        req.headers_mut().insert("x-github-delivery", id);
        req
    };
    for (n, secret) in ["new-secret", SECRET].into_iter().enumerate() {
        let req = signed_with(secret, &format!("guid-{n}"));
        assert_eq!(send(&s.app, req).await.0, StatusCode::ACCEPTED, "{secret}");
    }
    let req = signed_with("retired-secret", "guid-2");
    assert_eq!(send(&s.app, req).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(s.intake.stored().len(), 2);
}

/// A header to set to a value, or (`None`) to remove.
type HeaderEdit<'a> = (&'static str, Option<&'a str>);

/// Builds a request from `delivery` with `change` applied to its headers.
fn with_headers(body: &[u8], change: impl FnOnce(&mut http::HeaderMap)) -> Request<Body> {
    let mut req = delivery("pull_request", GUID, body.to_vec())
        .body(Body::from(body.to_vec()))
        .unwrap();
    change(req.headers_mut());
    req
}

#[tokio::test]
async fn every_bad_input_gets_its_status_and_nothing_is_stored() {
    let s = setup();
    let body = fixture("pull_request/opened.payload.json");
    let sha1 = "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59";
    let good = sign(SECRET, &body);
    let truncated = &good[..good.len() - 2];
    let guessed = sign("guess", &body);
    // (header edits: a value to set, or `None` to remove; status; answer)
    let (bad, unauthorized) = (StatusCode::BAD_REQUEST, StatusCode::UNAUTHORIZED);
    let (event, id, sig) = ("x-github-event", "x-github-delivery", "x-hub-signature-256");
    let cases: &[(&[HeaderEdit<'_>], StatusCode, &str)] = &[
        (&[(event, None)], bad, "missing X-GitHub-Event"),
        (&[(event, Some(""))], bad, "missing X-GitHub-Event"),
        (&[(id, None)], bad, "missing X-GitHub-Delivery"),
        (
            &[(id, Some("../../etc/passwd"))],
            bad,
            "malformed X-GitHub-Delivery",
        ),
        (&[(sig, None)], bad, "missing X-Hub-Signature-256"),
        // A legacy SHA-1 signature alone is not enough.
        (
            &[(sig, None), ("x-hub-signature", Some(sha1))],
            unauthorized,
            "bad signature",
        ),
        (&[(sig, Some(sha1))], unauthorized, "bad signature"),
        (&[(sig, Some(""))], unauthorized, "bad signature"),
        (&[(sig, Some(truncated))], unauthorized, "bad signature"),
        (&[(sig, Some(&guessed))], unauthorized, "bad signature"),
    ];
    for (edits, status, text) in cases {
        let req = with_headers(&body, |h| {
            for (name, value) in *edits {
                match value {
                    Some(v) => h.insert(*name, http::HeaderValue::from_str(v).unwrap()),
                    None => h.remove(*name),
                };
            }
        });
        assert_eq!(
            send(&s.app, req).await,
            (*status, format!("{text}\n")),
            "{edits:?}"
        );
    }
    // A body altered after signing.
    let mut req = delivery("pull_request", GUID, body.clone())
        .body(Body::from([&body[..], b" "].concat()))
        .unwrap();
    req.headers_mut().remove("content-length");
    assert_eq!(send(&s.app, req).await.0, StatusCode::UNAUTHORIZED);
    // Signed, but not a payload we can read: the answer names the field.
    let mut v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    v["pull_request"]["head"]
        .as_object_mut()
        .unwrap()
        .remove("sha");
    let unreadable = serde_json::to_vec(&v).unwrap();
    assert_eq!(
        post(&s.app, "pull_request", GUID, unreadable).await,
        (
            StatusCode::BAD_REQUEST,
            "pull_request.head.sha: missing\n".into()
        )
    );
    assert_eq!(s.intake.accepts(), 0);
    let text = metrics(&s.app).await;
    assert_eq!(counted(&text, "pull_request", "bad_signature"), 6);
    assert_eq!(counted(&text, "pull_request", "bad_request"), 4);
    assert_eq!(counted(&text, "other", "bad_request"), 2, "{text}");
}

#[tokio::test]
async fn the_body_limit_is_just_over_githubs_cap() {
    let s = setup();
    // 25 MiB, signed: GitHub could send it, so it is read.
    let pad = 25 * 1024 * 1024 - 20;
    let mut big = Vec::with_capacity(pad + 20);
    big.extend_from_slice(b"{\"zen\":\"");
    big.resize(pad, b'a');
    big.extend_from_slice(b"\",\"hook_id\":1}");
    let (status, _) = post(&s.app, "ping", GUID, big).await;
    assert_eq!(status, StatusCode::OK);
    // One byte over the limit, with no content-length to refuse it by: cut off while reading.
    let over = vec![b' '; BODY_LIMIT + 1];
    let req = delivery("ping", "guid-2", Vec::new())
        .body(Body::from(over))
        .unwrap();
    assert_eq!(
        send(&s.app, req).await,
        (StatusCode::PAYLOAD_TOO_LARGE, "body too large\n".into())
    );
    assert_eq!(counted(&metrics(&s.app).await, "ping", "too_large"), 1);
}

#[tokio::test]
async fn a_store_failure_is_a_5xx_github_can_redeliver() {
    let s = setup_with(SECRET, |c| c.store_deadline = Duration::from_millis(300));
    let body = fixture("pull_request/opened.payload.json");
    s.intake.failing.store(true, Ordering::SeqCst);
    let (status, text) = post(&s.app, "pull_request", GUID, body.clone()).await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n")
    );
    let health = Request::get("/healthz").body(Body::empty()).unwrap();
    assert_eq!(
        send(&s.app, health).await.0,
        StatusCode::SERVICE_UNAVAILABLE
    );

    // A store that hangs is cut off too.
    s.intake.failing.store(false, Ordering::SeqCst);
    s.intake.hanging.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let (status, _) = post(&s.app, "pull_request", GUID, body.clone()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(started.elapsed() < Duration::from_secs(3));

    // Redelivered once the store is back: stored, a round.
    s.intake.hanging.store(false, Ordering::SeqCst);
    let (status, _) = post(&s.app, "pull_request", GUID, body).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let health = Request::get("/healthz").body(Body::empty()).unwrap();
    assert_eq!(send(&s.app, health).await, (StatusCode::OK, "ok\n".into()));
    let text = metrics(&s.app).await;
    assert_eq!(counted(&text, "pull_request", "store_error"), 2);
    assert_eq!(counted(&text, "pull_request", "accepted"), 1);
}

// ---- over TCP ----

/// The router served on 127.0.0.1:0, as `reviewbot serve` serves it.
async fn serve(app: Router) -> std::net::SocketAddr {
    serve_with(app, reviewbot::server::http::HEADER_DEADLINE).await
}

async fn serve_with(app: Router, header_deadline: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(reviewbot::server::http::listen(
        listener,
        app,
        header_deadline,
        std::future::pending(),
    ));
    addr
}

async fn post_tcp(addr: std::net::SocketAddr, event: &str, id: &str, body: Vec<u8>) -> u16 {
    let res = reqwest::Client::new()
        .post(format!("http://{addr}/webhook"))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", sign(SECRET, &body))
        .body(body)
        .send()
        .await
        .unwrap();
    res.status().as_u16()
}

#[tokio::test]
async fn over_tcp_deliveries_health_and_metrics() {
    let s = setup();
    let addr = serve(s.app.clone()).await;
    let body = fixture("pull_request/opened.payload.json");
    assert_eq!(
        post_tcp(addr, "pull_request", GUID, body.clone()).await,
        202
    );
    assert_eq!(post_tcp(addr, "pull_request", GUID, body).await, 200);
    assert_eq!(s.intake.stored().len(), 1);
    let health = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let res = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap();
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = res.text().await.unwrap();
    assert_eq!(counted(&text, "pull_request", "accepted"), 1);
    assert_eq!(counted(&text, "pull_request", "duplicate"), 1);
    assert!(
        s.metrics
            .render(&[])
            .contains("reviewbot_rounds_posted_total 0")
    );
}

/// Writes a delivery's head, then its body one byte a second; returns the half to read the
/// answer from.
async fn trickle(addr: std::net::SocketAddr, body: Vec<u8>) -> OwnedReadHalf {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /webhook HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         x-github-event: pull_request\r\nx-github-delivery: trickled-1\r\n\
         x-hub-signature-256: {}\r\ncontent-length: {}\r\n\r\n",
        sign(SECRET, &body),
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (read, mut write) = stream.into_split();
    tokio::spawn(async move {
        for byte in body {
            if write.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    read
}

#[tokio::test]
async fn a_trickled_body_is_cut_off_and_holds_up_no_other_delivery() {
    let s = setup_with(SECRET, |c| c.body_deadline = Duration::from_millis(1500));
    let addr = serve(s.app.clone()).await;
    let body = fixture("pull_request/opened.payload.json");
    let started = Instant::now();
    let mut slow = trickle(addr, body.clone()).await;

    // While the trickle is open, another delivery is answered at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = Instant::now();
    assert_eq!(post_tcp(addr, "pull_request", GUID, body).await, 202);
    assert!(
        other.elapsed() < Duration::from_millis(500),
        "{:?}",
        other.elapsed()
    );

    // The trickle gets 408 at its deadline, not after the 28 KB it would take 8 hours to send.
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 1024];
        loop {
            match slow.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to the trickled delivery");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1400) && elapsed < Duration::from_secs(4),
        "{elapsed:?}"
    );
    assert_eq!(s.intake.stored().len(), 1);
    let text = metrics(&s.app).await;
    assert_eq!(counted(&text, "pull_request", "timeout"), 1);
}

#[tokio::test]
async fn a_declared_oversize_body_is_refused_before_it_is_sent() {
    let s = setup();
    let addr = serve(s.app.clone()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /webhook HTTP/1.1\r\nhost: {addr}\r\nx-github-event: pull_request\r\n\
         x-github-delivery: {GUID}\r\nx-hub-signature-256: sha256={}\r\n\
         content-length: {}\r\n\r\n",
        "0".repeat(64),
        BODY_LIMIT + 1
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("answered without the body")
        .unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test(flavor = "current_thread")]
async fn logs_carry_the_delivery_id_and_never_a_body_signature_or_secret() {
    let (logs, _capture) = crate::log_capture::capture();

    let s = setup_with("rotated-away,It's a Secret to Everybody", |_| {});
    let mut v: serde_json::Value =
        serde_json::from_slice(&fixture("pull_request/opened.payload.json")).unwrap();
    v["pull_request"]["body"] = "BODY-MARKER".into();
    let body = serde_json::to_vec(&v).unwrap();
    let signature = sign(SECRET, &body);
    // Another thread, with no subscriber of its own, reaches the intake's log lines first:
    // what it logs is not this test's, and must not make this test's lines go unlogged.
    let elsewhere = {
        let (app, body) = (s.app.clone(), body.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(post(&app, "pull_request", "guid-elsewhere", body))
                .0
        })
        .join()
        .unwrap()
    };
    assert_eq!(elsewhere, StatusCode::ACCEPTED);
    assert_eq!(
        post(&s.app, "pull_request", "guid-good", body.clone())
            .await
            .0,
        StatusCode::ACCEPTED
    );
    let forged = with_headers(&body, |h| {
        h.insert(
            "x-github-delivery",
            http::HeaderValue::from_static("guid-forged"),
        );
        h.insert(
            "x-hub-signature-256",
            http::HeaderValue::from_str(&sign("guess", &body)).unwrap(),
        );
    });
    assert_eq!(send(&s.app, forged).await.0, StatusCode::UNAUTHORIZED);
    v["number"] = "VALUE-MARKER".into();
    let (status, text) = post(
        &s.app,
        "pull_request",
        "guid-unreadable",
        serde_json::to_vec(&v).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The sender is told what was wrong; the log names only the field.
    assert!(text.contains("VALUE-MARKER"), "{text}");

    let logged = logs.text();
    for id in ["guid-good", "guid-forged", "guid-unreadable"] {
        assert!(
            logged.contains(&format!("delivery={id}")),
            "{id} not in\n{logged}"
        );
    }
    assert!(logged.contains("field=\"number\""), "{logged}");
    assert!(!logged.contains("guid-elsewhere"), "{logged}");
    let forged_sig = sign("guess", &body);
    for secret in [
        "BODY-MARKER",
        "VALUE-MARKER",
        &signature[7..],
        &forged_sig[7..],
        "Secret to Everybody",
        "rotated-away",
    ] {
        assert!(!logged.contains(secret), "{secret} leaked into\n{logged}");
    }
}

#[tokio::test]
async fn trickled_headers_are_cut_off_and_hold_up_no_other_delivery() {
    let s = setup();
    let addr = serve_with(s.app.clone(), Duration::from_millis(800)).await;
    let started = Instant::now();
    let (mut slow, mut write) = TcpStream::connect(addr).await.unwrap().into_split();
    tokio::spawn(async move {
        for byte in b"POST /webhook HTTP/1.1\r\nhost: x\r\nx-github-event: ping\r\n" {
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });

    // While the headers trickle in, another delivery is answered at once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let other = Instant::now();
    let body = fixture("pull_request/opened.payload.json");
    assert_eq!(post_tcp(addr, "pull_request", GUID, body).await, 202);
    assert!(
        other.elapsed() < Duration::from_millis(500),
        "{:?}",
        other.elapsed()
    );

    // The trickle's connection is closed at the header deadline, not when its headers end.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 1024];
        while let Ok(n) = slow.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the trickled connection is still open");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(700) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(
        s.intake.stored().len(),
        1,
        "only the whole delivery was stored"
    );
}
