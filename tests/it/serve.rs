//! `reviewbot serve` end to end: the real binary, signed real webhook payloads over TCP, the
//! stateful fake GitHub with the App (JWTs verified, installation tokens minted), and a real
//! store — SQLite in a temp dir, and PostgreSQL for the replica test.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fake_github::{FakeGithub, Fault, FileSpec, KeyForm, PrSpec, sha, test_key};

const APP_ID: u64 = 4242;
const SLUG: &str = "reviewbot-test";
const BOT: &str = "reviewbot-test[bot]";
const INSTALLATION: u64 = 77;
const REPO: &str = "octo/app";
const PR: u64 = 7;
const SECRET: &str = "webhook-secret-one";
const OLD_SECRET: &str = "webhook-secret-old";

/// A patch with a Python `breakpoint()` the builtin lens flags (blocking).
const PY_PATCH: &str =
    "@@ -10,3 +10,4 @@ def work():\n     x = load()\n+    breakpoint()\n     return x\n \n";
/// The next push: a leftover `pdb` import on another line.
const PY_PATCH_2: &str = "@@ -10,3 +10,5 @@ def work():\n     x = load()\n+    breakpoint()\n+    import pdb; pdb.set_trace()\n     return x\n \n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fake with the App installed and PR #7 (one Python file).
fn world() -> FakeGithub {
    world_with(PrSpec::default())
}

/// [`world`] with PR #7 made of `spec` (its number and files set).
fn world_with(spec: PrSpec) -> FakeGithub {
    let fake = FakeGithub::start();
    fake.add_app(APP_ID, SLUG, &test_key(KeyForm::Pkcs1).public_pem)
        .add_installation(INSTALLATION)
        .add_pr(
            REPO,
            PrSpec {
                number: PR,
                files: vec![FileSpec::modified("app/work.py", PY_PATCH)],
                ..spec
            },
        );
    fake
}

/// A scratch directory with a config and (by default) a SQLite database.
struct Site {
    dir: tempfile::TempDir,
    db: String,
}

impl Site {
    fn new(config: &str) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("sqlite://{}", dir.path().join("reviewbot.db").display());
        Site::with_db(dir, db, config)
    }

    fn with_db(dir: tempfile::TempDir, db: String, config: &str) -> Site {
        let site = Site { dir, db };
        site.set_config(config);
        site
    }

    /// Writes the config: short GitHub waits, then `config`.
    fn set_config(&self, config: &str) {
        let cfg = format!(
            "[github]\nmax_rate_limit_wait = \"10s\"\nrate_limit_floor = \"1s\"\n\n{config}"
        );
        std::fs::write(self.config(), cfg).unwrap();
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("reviewbot.toml")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// A running `reviewbot serve`; killed when dropped.
struct Serve {
    child: Option<Child>,
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Serve {
    fn start(site: &Site, fake: &FakeGithub) -> Serve {
        Serve::start_with(site, fake, &[("REVIEWBOT_WEBHOOK_SECRET", SECRET)])
    }

    fn start_with(site: &Site, fake: &FakeGithub, env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewbot"));
        cmd.arg("serve")
            .arg("--config")
            .arg(site.config())
            .current_dir(site.dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "reviewbot=debug")
            .env("REVIEWBOT_LISTEN", "127.0.0.1:0")
            .env("REVIEWBOT_DATABASE_URL", &site.db)
            .env("GITHUB_API_URL", fake.url())
            .env("REVIEWBOT_APP_ID", APP_ID.to_string())
            .env(
                "REVIEWBOT_PRIVATE_KEY",
                &test_key(KeyForm::Pkcs1).private_pem,
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn reviewbot serve");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(addr) = listening_addr(&line)
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(addr);
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "serve did not start listening:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
        };
        Serve {
            child: Some(child),
            addr,
            log,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Sends `signal` and waits for the exit, at most `limit`; the time it took.
    fn signal_and_wait(&mut self, signal: nix::sys::signal::Signal, limit: Duration) -> Duration {
        let mut child = self.child.take().expect("running");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let start = Instant::now();
        nix::sys::signal::kill(pid, signal).unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let took = start.elapsed();
                if signal == nix::sys::signal::Signal::SIGTERM {
                    assert!(
                        status.success(),
                        "serve exited with {status}:\n{}",
                        self.log()
                    );
                }
                return took;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!(
                    "serve did not exit within {limit:?} of {signal}:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The address from serve's "listening" log line (JSON).
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let v: Value = serde_json::from_str(line).ok()?;
    let fields = v.get("fields")?;
    (fields.get("message")?.as_str()? == "listening")
        .then(|| fields.get("addr")?.as_str()?.parse().ok())
        .flatten()
}

fn sign(secret: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

/// A real fixture payload, pointed at our repository, PR, head and installation.
fn payload(event: &str, name: &str, head: &str) -> Value {
    let path = root().join(format!("fixtures/github-webhooks/{event}/{name}"));
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["repository"]["full_name"] = json!(REPO);
    v["repository"]["name"] = json!("app");
    v["repository"]["owner"]["login"] = json!("octo");
    v["installation"] = json!({"id": INSTALLATION});
    if v.get("pull_request").is_some() {
        v["number"] = json!(PR);
        v["pull_request"]["number"] = json!(PR);
        v["pull_request"]["head"]["sha"] = json!(head);
        v["pull_request"]["draft"] = json!(false);
        v["pull_request"]["state"] = json!("open");
    }
    if v.get("issue").is_some() {
        v["issue"]["number"] = json!(PR);
    }
    v
}

/// POSTs a delivery signed with `secret`; the status.
async fn deliver(serve: &Serve, event: &str, id: &str, body: &Value, secret: &str) -> u16 {
    let body = serde_json::to_vec(body).unwrap();
    reqwest::Client::new()
        .post(serve.url("/webhook"))
        .header("X-GitHub-Event", event)
        .header("X-GitHub-Delivery", id)
        .header("X-Hub-Signature-256", sign(secret, &body))
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .expect("delivery")
        .status()
        .as_u16()
}

/// Waits until `done` holds (at most `limit`).
async fn until(limit: Duration, what: &str, mut done: impl FnMut() -> bool, serve: &Serve) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "timed out waiting for {what}; serve log:\n{}",
            serve.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Delivers `opened` for PR #7 (delivery `id`) and waits until round 1 is posted and the queue
/// is empty.
async fn round_one(fake: &FakeGithub, site: &Site, serve: &Serve, id: &str) {
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(serve, "pull_request", id, &opened, SECRET).await,
        202
    );
    reviews_reach(fake, PR, 1, serve).await;
    settled(site, serve).await;
}

/// PR #8 beside #7, with the same file and its own head.
fn add_second_pr(fake: &FakeGithub) {
    fake.add_pr(
        REPO,
        PrSpec {
            number: 8,
            head_sha: sha("other"),
            files: vec![FileSpec::modified("app/work.py", PY_PATCH)],
            ..PrSpec::default()
        },
    );
}

/// `opened` for PR #8.
fn second_pr_payload() -> Value {
    let mut v = payload("pull_request", "opened.payload.json", &sha("other"));
    v["number"] = json!(8);
    v["pull_request"]["number"] = json!(8);
    v
}

/// Waits until PR `pr` has `n` reviews (at most 60 s).
async fn reviews_reach(fake: &FakeGithub, pr: u64, n: usize, serve: &Serve) {
    let what = format!("{n} review(s) on #{pr}");
    until(
        Duration::from_secs(60),
        &what,
        || fake.reviews(REPO, pr).len() >= n,
        serve,
    )
    .await;
}

/// Waits until the store has no queued or running job.
async fn settled(site: &Site, serve: &Serve) {
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    let start = Instant::now();
    loop {
        let states = store.jobs_by_state().await.unwrap();
        let busy: i64 = states
            .iter()
            .filter(|(s, _)| matches!(s.as_str(), "queued" | "running"))
            .map(|(_, n)| n)
            .sum();
        if busy == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "jobs still busy: {states:?}\n{}",
            serve.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    store.close().await;
}

fn bodies(fake: &FakeGithub) -> Vec<String> {
    fake.reviews(REPO, PR)
        .iter()
        .map(|r| r["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn opened_posts_round_one_and_its_check_run_with_a_minted_installation_token() {
    let fake = world();
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "d-1").await;
    let reviews = fake.reviews(REPO, PR);
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["user"]["login"], BOT);
    assert_eq!(reviews[0]["commit_id"], sha("head"));
    let body = reviews[0]["body"].as_str().unwrap();
    assert!(body.starts_with("Round 1 — reviewed head "), "{body}");
    assert!(body.contains("Verdict: 1 blocking, 0 advisory."), "{body}");
    // The token was minted from a JWT the fake verified, once.
    assert_eq!(fake.minted().len(), 1);
    // Nothing in the log carries a token or the key.
    let log = serve.log();
    assert!(!log.contains(&fake.minted()[0].token), "token in the log");
    assert!(!log.contains("PRIVATE KEY"), "key in the log");
    assert!(!log.contains(SECRET), "secret in the log");

    // The worker started the round's check run on the reviewed head and completed it with the
    // verdict.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = &runs[0];
    assert_eq!(run["name"], "reviewbot");
    assert_eq!(run["head_sha"], sha("head"));
    assert_eq!(
        (run["status"].as_str(), run["conclusion"].as_str()),
        (Some("completed"), Some("neutral")),
        "a blocking finding, fail_on is never"
    );
    assert_eq!(run["output"]["title"], "Round 1: 1 blocking, 0 advisory");
    let body = &bodies(&fake)[0];
    let summary = run["output"]["summary"].as_str().unwrap();
    assert!(
        body.starts_with(summary.trim_end()),
        "{summary}\n---\n{body}"
    );
    assert_eq!(run["annotations"][0]["path"], "app/work.py");
    assert_eq!(run["annotations"][0]["annotation_level"], "failure");
    let id = run["id"].as_u64();
    let running = Some("in_progress".to_owned());
    let done = Some("completed".to_owned());
    assert_eq!(
        check_writes(&fake),
        [("POST", id, running, 201), ("PATCH", id, done, 200)]
    );
    // Written with the installation token the worker minted.
    let token = fake.minted()[0].token.clone();
    let other_token = |r: &&crate::fake_github::RequestRecord| {
        r.path.contains("/check-runs") && r.token.as_deref() != Some(token.as_str())
    };
    assert_eq!(fake.requests().iter().filter(other_token).count(), 0);
}

/// Each check-run write of the test's repository: method, run, the status it asked for, and
/// what the fake answered.
fn check_writes(fake: &FakeGithub) -> Vec<(&'static str, Option<u64>, Option<String>, u16)> {
    fake.check_run_writes(REPO)
        .into_iter()
        .map(|w| (w.method, w.run, w.status, w.answered))
        .collect()
}

/// The first attempt dies after its check run started (the opt-out re-check before posting is
/// refused): the retried job takes that run up and completes it; no second run is left
/// spinning.
#[tokio::test(flavor = "multi_thread")]
async fn a_retried_job_completes_the_check_run_its_failed_attempt_left_in_progress() {
    let fake = world();
    let labels = format!("/repos/{REPO}/issues/{PR}/labels");
    fake.fail_next(("GET", labels.as_str()), Fault::status(404), 1);
    let site = Site::new(
        "[review]\nfail_on = \"blocking\"\n[serve]\nmax_attempts = 2\nretry_after = \"1s\"\n",
    );
    let serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "r-1").await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1);

    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "the same run, not a second: {runs:#?}");
    assert_eq!(
        (runs[0]["status"].as_str(), runs[0]["conclusion"].as_str()),
        (Some("completed"), Some("failure")),
        "fail_on = \"blocking\" holds"
    );
    assert_eq!(
        runs[0]["output"]["title"],
        "Round 1: 1 blocking, 0 advisory"
    );
    // Created by the first attempt, taken up (in_progress again, with the round's title) and
    // completed by the second.
    let id = runs[0]["id"].as_u64();
    let running = Some("in_progress".to_owned());
    let done = Some("completed".to_owned());
    assert_eq!(
        check_writes(&fake),
        [
            ("POST", id, running.clone(), 201),
            ("PATCH", id, running, 200),
            ("PATCH", id, done, 200),
        ]
    );
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    let repo = reviewbot::github::model::RepoName::parse(REPO).unwrap();
    let jobs = store
        .jobs_for_pr(&repo, reviewbot::ids::PrNumber(PR))
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].attempts, 2, "{}", serve.log());
    store.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_delivery_three_times_is_one_round() {
    let fake = world();
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    let body = payload("pull_request", "opened.payload.json", &sha("head"));
    for _ in 0..3 {
        let status = deliver(&serve, "pull_request", "dup-1", &body, SECRET).await;
        assert!((200..300).contains(&status), "{status}");
    }
    reviews_reach(&fake, PR, 1, &serve).await;
    settled(&site, &serve).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    assert_eq!(store.delivery_count().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn synchronize_posts_round_two_on_the_new_head() {
    let fake = world();
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "s-1").await;

    fake.set_head(
        REPO,
        PR,
        &sha("head2"),
        vec![FileSpec::modified("app/work.py", PY_PATCH_2)],
    );
    let pushed = payload("pull_request", "synchronize.payload.json", &sha("head2"));
    assert_eq!(
        deliver(&serve, "pull_request", "s-2", &pushed, SECRET).await,
        202
    );
    reviews_reach(&fake, PR, 2, &serve).await;
    settled(&site, &serve).await;
    let bodies = bodies(&fake);
    assert!(
        bodies[1].starts_with(&format!("Round 2 — reviewed head {}", &sha("head2")[..8])),
        "{}",
        bodies[1]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_trigger_label_asks_for_a_new_round_and_comes_off() {
    let fake = world();
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "t-1").await;

    fake.set_labels(REPO, PR, &["reviewbot:review"]);
    let mut labeled = payload("pull_request", "labeled.payload.json", &sha("head"));
    labeled["label"]["name"] = json!("reviewbot:review");
    deliver(&serve, "pull_request", "t-2", &labeled, SECRET).await;
    reviews_reach(&fake, PR, 2, &serve).await;
    settled(&site, &serve).await;
    assert!(
        fake.labels(REPO, PR).is_empty(),
        "{:?}",
        fake.labels(REPO, PR)
    );
    // Another label on the same head asks for nothing.
    fake.set_labels(REPO, PR, &["bug"]);
    labeled["label"]["name"] = json!("bug");
    deliver(&serve, "pull_request", "t-3", &labeled, SECRET).await;
    settled(&site, &serve).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn opt_out_and_drafts_get_no_round_until_ready() {
    let fake = world();
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    // Opted out: nothing.
    fake.set_labels(REPO, PR, &["reviewbot:no-review"]);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    deliver(&serve, "pull_request", "o-1", &opened, SECRET).await;
    settled(&site, &serve).await;
    assert!(fake.reviews(REPO, PR).is_empty());

    // A draft: nothing, until ready_for_review.
    fake.set_labels(REPO, PR, &[]);
    fake.set_draft(REPO, PR, true);
    let mut draft = payload("pull_request", "reopened.payload.json", &sha("head"));
    draft["pull_request"]["draft"] = json!(true);
    deliver(&serve, "pull_request", "o-2", &draft, SECRET).await;
    settled(&site, &serve).await;
    assert!(fake.reviews(REPO, PR).is_empty());

    fake.set_draft(REPO, PR, false);
    let ready = payload(
        "pull_request",
        "ready_for_review.payload.json",
        &sha("head"),
    );
    deliver(&serve, "pull_request", "o-3", &ready, SECRET).await;
    reviews_reach(&fake, PR, 1, &serve).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_review_command_needs_write_access() {
    let fake = world();
    fake.set_role(REPO, "reader", "read");
    fake.set_role(REPO, "writer", "write");
    let site = Site::new("");
    let serve = Serve::start(&site, &fake);
    review_command(&serve, "c-1", "reader").await;
    settled(&site, &serve).await;
    assert!(
        fake.reviews(REPO, PR).is_empty(),
        "a reader's command was obeyed"
    );

    review_command(&serve, "c-2", "writer").await;
    reviews_reach(&fake, PR, 1, &serve).await;
}

/// A `/reviewbot review` comment by `user` on PR #7, delivered as `id`.
async fn review_command(serve: &Serve, id: &str, user: &str) -> u16 {
    let mut comment = payload(
        "issue_comment",
        "created.with-installation.payload.json",
        &sha("head"),
    );
    comment["comment"]["body"] = json!("/reviewbot review");
    comment["comment"]["user"]["login"] = json!(user);
    comment["sender"]["login"] = json!(user);
    comment["issue"]["pull_request"] = json!({"url": "x"});
    deliver(serve, "issue_comment", id, &comment, SECRET).await
}

/// Records that installation 77's lenses already cost `usd` today, as an earlier round of
/// another PR would have (its job done).
async fn spent_today(site: &Site, usd: f64) {
    use reviewbot::ids::{DeliveryId, InstallationId, PrNumber};
    use reviewbot::request::{Reason, ReviewRequest};
    use reviewbot::store::{NewDelivery, Store};
    let store = Store::connect(&site.db).await.unwrap();
    let request = ReviewRequest {
        repo: reviewbot::github::model::RepoName::parse(REPO).unwrap(),
        pr: PrNumber(99),
        head: reviewbot::ids::HeadSha::parse(&sha("earlier")),
        installation: Some(InstallationId(INSTALLATION)),
        reason: Reason::Opened,
        force: false,
        post: true,
        lenses: Vec::new(),
        ask: None,
        fail_on: None,
    };
    let delivery = NewDelivery {
        id: DeliveryId::parse("earlier-round").unwrap(),
        event: "pull_request".into(),
        action: Some("opened".into()),
    };
    store
        .accept_delivery(&delivery, Some(&request))
        .await
        .unwrap();
    let job = store
        .claim("earlier", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    store
        .complete(&job, "earlier", "round 1 posted")
        .await
        .unwrap();
    let run = crate::store::priced_run(job.id, Some(usd), Some(INSTALLATION));
    store.record_lens_run(&run).await.unwrap();
    store.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_daily_budget_a_round_waits_and_a_maintainers_command_still_runs() {
    let fake = world();
    fake.set_role(REPO, "maintainer", "maintain");
    let site = Site::new("[serve]\ndaily_budget_usd = 1.0\n");
    spent_today(&site, 1.25).await;
    let serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(&serve, "pull_request", "b-1", &opened, SECRET).await,
        202
    );

    // The push's round is deferred, not dropped: queued again, saying why.
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    let repo = reviewbot::github::model::RepoName::parse(REPO).unwrap();
    let start = Instant::now();
    let waiting = loop {
        let jobs = store
            .jobs_for_pr(&repo, reviewbot::ids::PrNumber(PR))
            .await
            .unwrap();
        if let Some(job) = jobs.into_iter().find(|j| j.outcome.is_some()) {
            break job;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", serve.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        waiting.state,
        reviewbot::store::JobState::Queued,
        "{}",
        serve.log()
    );
    assert_eq!(waiting.attempts, 0, "the wait is not a failed attempt");
    let note = waiting.outcome.unwrap_or_default();
    assert!(
        note.contains("daily review budget reached") && note.contains("$1.25"),
        "{note}"
    );
    assert!(fake.reviews(REPO, PR).is_empty());
    // The head's check run says why, without failing the PR.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(
        (runs[0]["status"].as_str(), runs[0]["conclusion"].as_str()),
        (Some("completed"), Some("neutral"))
    );
    assert_eq!(runs[0]["output"]["title"], "Daily review budget reached");
    let summary = runs[0]["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("$1.25") && summary.contains("$1.00"),
        "{summary}"
    );

    // A maintainer asks: that one round runs.
    review_command(&serve, "b-2", "maintainer").await;
    reviews_reach(&fake, PR, 1, &serve).await;
    let waiting = store.job(waiting.id).await.unwrap().unwrap();
    assert_eq!(
        waiting.state,
        reviewbot::store::JobState::Queued,
        "still waiting for tomorrow"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn either_of_two_secrets_is_accepted_and_a_wrong_one_is_401() {
    let fake = world();
    let site = Site::new("");
    let both = format!("{SECRET},{OLD_SECRET}");
    let serve = Serve::start_with(&site, &fake, &[("REVIEWBOT_WEBHOOK_SECRET", &both)]);
    let ping = serde_json::from_str::<Value>(
        &std::fs::read_to_string(root().join("fixtures/github-webhooks/ping/payload.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(deliver(&serve, "ping", "p-1", &ping, SECRET).await / 100, 2);
    assert_eq!(
        deliver(&serve, "ping", "p-2", &ping, OLD_SECRET).await / 100,
        2
    );
    assert_eq!(deliver(&serve, "ping", "p-3", &ping, "wrong").await, 401);
}

/// A command lens that marks when it starts, sleeps, then reports one finding.
fn slow_lens(site: &Site, secs: u32) -> String {
    let script = site.path("slow.sh");
    let started = site.path("started");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho run >> '{}'\nsleep {secs}\necho '{{\"findings\":[{{\"path\":\"app/work.py\",\"line\":11,\"severity\":\"advisory\",\"confidence\":\"high\",\"title\":\"Leftover breakpoint\",\"body\":\"Remove it.\"}}]}}'\n",
            started.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[[lens]]\nname = \"slow\"\nbackend = \"command\"\nbin = \"{}\"\ntimeout = \"60s\"\n\n[review]\nlenses = [\"slow\"]\n",
        script.display()
    )
}

/// Waits until the slow lens has started its first run.
async fn lens_started(site: &Site, serve: &Serve) {
    until(
        Duration::from_secs(30),
        "the lens to start",
        || runs(site) >= 1,
        serve,
    )
    .await;
}

/// A site whose one worker runs a lens that takes 3 s, with a short lease.
fn slow_single_worker() -> Site {
    let site = Site::new("");
    let config = format!(
        "{}\n[serve]\nworkers = 1\nlease = \"2s\"\n",
        slow_lens(&site, 3)
    );
    site.set_config(&config);
    site
}

fn runs(site: &Site) -> usize {
    std::fs::read_to_string(site.path("started"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_while_a_lens_is_slow_then_a_restart_posts_exactly_once() {
    let fake = world();
    let site = slow_single_worker();
    let mut serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(&serve, "pull_request", "k-1", &opened, SECRET).await,
        202
    );
    lens_started(&site, &serve).await;
    serve.signal_and_wait(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(5));
    assert!(fake.reviews(REPO, PR).is_empty());
    let spinning = fake.check_runs(REPO);
    assert_eq!(spinning.len(), 1, "{spinning:#?}");
    assert_eq!(spinning[0]["status"], "in_progress");

    let serve = Serve::start(&site, &fake);
    reviews_reach(&fake, PR, 1, &serve).await;
    settled(&site, &serve).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1, "posted once");
    assert_eq!(runs(&site), 2, "the lens ran again after the crash");
    // The run the crash left spinning is the one completed.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["id"], spinning[0]["id"]);
    assert_eq!(runs[0]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_asked_for_round_that_landed_just_before_a_crash_is_not_posted_again() {
    let fake = world();
    fake.set_role(REPO, "writer", "write");
    let site = Site::new("");
    site.set_config("[serve]\nworkers = 1\nlease = \"2s\"\n");
    let mut serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "o-1").await;

    // The command's round lands on GitHub, and the process dies before the answer comes back.
    let reviews = format!("/repos/{REPO}/pulls/{PR}/reviews");
    fake.fail_next(("POST", reviews.as_str()), Fault::ApplyThenHang, 1);
    assert_eq!(review_command(&serve, "c-1", "writer").await / 100, 2);
    reviews_reach(&fake, PR, 2, &serve).await;
    serve.signal_and_wait(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(5));

    // The restarted worker takes the job over once its lease expires: the command's round is
    // on the PR already, so it posts nothing more.
    let serve = Serve::start(&site, &fake);
    settled(&site, &serve).await;
    assert_eq!(
        fake.reviews(REPO, PR).len(),
        2,
        "the asked-for round was posted twice"
    );

    // A new command is a new ask: it gets its round.
    assert_eq!(review_command(&serve, "c-2", "writer").await / 100, 2);
    reviews_reach(&fake, PR, 3, &serve).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_the_round_in_hand_and_keeps_the_queue() {
    let fake = world();
    add_second_pr(&fake);
    let site = Site::new("");
    let config = format!("{}\n[serve]\nworkers = 1\n", slow_lens(&site, 2));
    site.set_config(&config);
    let mut serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    deliver(&serve, "pull_request", "term-1", &opened, SECRET).await;
    let other = second_pr_payload();
    lens_started(&site, &serve).await;
    deliver(&serve, "pull_request", "term-2", &other, SECRET).await;
    let took = serve.signal_and_wait(nix::sys::signal::Signal::SIGTERM, Duration::from_secs(30));
    assert!(took < Duration::from_secs(30), "{took:?}");
    // The round in hand was finished and posted; the queued one waits in the store.
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert!(fake.reviews(REPO, 8).is_empty());

    let serve = Serve::start(&site, &fake);
    reviews_reach(&fake, 8, 1, &serve).await;
    settled(&site, &serve).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
}

/// A fresh PostgreSQL database for this run (`None` outside CI without a server, said on
/// stderr), and the server's URL to drop it from.
async fn postgres_db(name: &str) -> Option<(String, String)> {
    use sqlx::Connection as _;
    let server = crate::store::postgres_url()?;
    let mut admin = sqlx::PgConnection::connect(&server)
        .await
        .expect("postgres");
    let db = format!("reviewbot_serve_{name}_{}", std::process::id());
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {db} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
        .execute(&mut admin)
        .await
        .unwrap();
    Some((crate::store::with_database(&server, &db), server))
}

async fn drop_db(server: &str, url: &str) {
    use sqlx::Connection as _;
    let name = url.rsplit('/').next().unwrap();
    let mut admin = sqlx::PgConnection::connect(server).await.expect("postgres");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_one_postgres_post_each_round_once() {
    let Some((db, server)) = postgres_db("replicas").await else {
        return;
    };
    let fake = world();
    add_second_pr(&fake);
    let dir = tempfile::tempdir().unwrap();
    let site = Site::with_db(dir, db, "");
    let config = format!("{}\n[serve]\nworkers = 2\n", slow_lens(&site, 1));
    site.set_config(&config);
    let a = Serve::start(&site, &fake);
    let b = Serve::start(&site, &fake);
    let first = payload("pull_request", "opened.payload.json", &sha("head"));
    let second = second_pr_payload();
    // GitHub may deliver (and redeliver) to any replica: every delivery goes to both.
    for (id, body) in [("r-1", &first), ("r-2", &second)] {
        let (sa, sb) = tokio::join!(
            deliver(&a, "pull_request", id, body, SECRET),
            deliver(&b, "pull_request", id, body, SECRET)
        );
        assert_eq!((sa / 100, sb / 100), (2, 2));
    }
    until(
        Duration::from_secs(60),
        "both rounds",
        || fake.reviews(REPO, PR).len() == 1 && fake.reviews(REPO, 8).len() == 1,
        &a,
    )
    .await;
    settled(&site, &a).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_eq!(fake.reviews(REPO, 8).len(), 1);
    assert_eq!(runs(&site), 2, "each lens ran once per round");
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    assert_eq!(store.delivery_count().await.unwrap(), 2);
    store.close().await;
    drop((a, b));
    drop_db(&server, &site.db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_keeps_failing_is_marked_failed_with_its_error() {
    let fake = world();
    fake.fail_next(
        crate::fake_github::Route::exact("GET", &format!("/repos/{REPO}/pulls/{PR}")),
        crate::fake_github::Fault::status(404),
        100,
    );
    let site = Site::new(
        "[review]\nfail_on = \"blocking\"\n[serve]\nmax_attempts = 2\nretry_after = \"1s\"\n",
    );
    let serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(&serve, "pull_request", "f-1", &opened, SECRET).await,
        202
    );
    settled(&site, &serve).await;
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    let jobs = store
        .jobs_for_pr(
            &reviewbot::github::model::RepoName::parse(REPO).unwrap(),
            reviewbot::ids::PrNumber(PR),
        )
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state.as_str(), "failed");
    assert_eq!(jobs[0].attempts, 2);
    let error = jobs[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("404"), "{error}");
    assert_eq!(fake.count("GET", &format!("/repos/{REPO}/pulls/{PR}")), 2);
    assert!(fake.reviews(REPO, PR).is_empty());
}

/// A command lens that writes its whole environment to `env.txt` and finds nothing; its config
/// asks for the App's secrets by name, which it must still not get.
fn env_lens(site: &Site) -> String {
    let script = site.path("env.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat >/dev/null\nenv >> '{}'\necho '{{\"findings\":[]}}'\n",
            site.path("env.txt").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[[lens]]\nname = \"env\"\nbackend = \"command\"\nbin = \"{}\"\nenv = [\"REVIEWBOT_WEBHOOK_SECRET\", \"REVIEWBOT_PRIVATE_KEY\", \"REVIEWBOT_PRIVATE_KEY_PATH\", \"REVIEWBOT_DATABASE_URL\", \"GITHUB_TOKEN\"]\n\n[review]\nlenses = [\"env\", \"builtin\"]\n",
        script.display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fork_pr_is_reviewed_by_the_base_config_and_no_lens_sees_an_app_secret() {
    let fake = world_with(PrSpec {
        fork_owner: Some("mallory".to_owned()),
        ..PrSpec::default()
    });
    // The fork's branch carries a config that would switch every lens off; the base's does not.
    let hostile = "[review]\nignore_paths = [\"**\"]\nlenses = []\n";
    fake.add_file_content(REPO, "changes", ".github/reviewbot.toml", hostile)
        .add_file_content(REPO, &sha("head"), ".github/reviewbot.toml", hostile)
        .add_file_content(
            REPO,
            "main",
            ".github/reviewbot.toml",
            "[review]\nopt_out_label = \"no-bots\"\n",
        );
    let site = Site::new("");
    site.set_config(&env_lens(&site));
    let serve = Serve::start_with(
        &site,
        &fake,
        &[
            ("REVIEWBOT_WEBHOOK_SECRET", SECRET),
            ("GITHUB_TOKEN", "ghp_operator_token_never_for_lenses"),
        ],
    );
    let mut opened = payload("pull_request", "opened.payload.json", &sha("head"));
    opened["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/app");
    opened["pull_request"]["head"]["repo"]["fork"] = json!(true);
    assert_eq!(
        deliver(&serve, "pull_request", "fork-1", &opened, SECRET).await,
        202
    );
    reviews_reach(&fake, PR, 1, &serve).await;
    settled(&site, &serve).await;

    // The config came from the base branch only.
    let asked: Vec<String> = fake
        .files_asked()
        .concat()
        .into_iter()
        .filter(|e| e.ends_with(":.github/reviewbot.toml"))
        .collect();
    assert_eq!(asked, ["main:.github/reviewbot.toml"]);
    let body = &bodies(&fake)[0];
    assert!(body.contains("reviewers: env, builtin"), "{body}");
    assert!(body.contains("`no-bots` label opts this PR out"), "{body}");

    // The lens saw its allow-list and nothing of the App's.
    let env = std::fs::read_to_string(site.path("env.txt")).unwrap();
    let key = &test_key(KeyForm::Pkcs1).private_pem;
    let key_line = key.lines().nth(1).unwrap();
    let mut never = vec![
        "REVIEWBOT_",
        "GITHUB_TOKEN",
        SECRET,
        key_line,
        &site.db,
        "ghp_operator_token_never_for_lenses",
    ];
    let minted = fake.minted();
    assert!(!minted.is_empty());
    never.extend(minted.iter().map(|m| m.token.as_str()));
    for secret in never {
        assert!(!env.contains(secret), "the lens saw {secret:?}:\n{env}");
    }
    assert!(env.contains("PATH="), "{env}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_installation_token_revoked_while_a_lens_runs_is_minted_again_and_posts_once() {
    let fake = world();
    let site = Site::new("");
    site.set_config(&format!("{}\n[serve]\nworkers = 1\n", slow_lens(&site, 2)));
    let serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    deliver(&serve, "pull_request", "mid-1", &opened, SECRET).await;
    lens_started(&site, &serve).await;
    // The reads are done; the token the job holds dies before the POST.
    assert_eq!(fake.minted().len(), 1);
    fake.revoke_installation_tokens(INSTALLATION);
    reviews_reach(&fake, PR, 1, &serve).await;
    settled(&site, &serve).await;
    assert_eq!(fake.reviews(REPO, PR).len(), 1, "posted once");
    assert_eq!(fake.minted().len(), 2, "minted again");
    // One request met the dead token; every later one, the POST too, carried the new one.
    let minted = fake.minted();
    let log = fake.requests();
    let refused: Vec<_> = log.iter().filter(|r| r.status == 401).collect();
    assert_eq!(refused.len(), 1, "{log:?}");
    assert_eq!(refused[0].token.as_deref(), Some(minted[0].token.as_str()));
    let posts: Vec<_> = log
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/reviews") && r.status == 200)
        .collect();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].token.as_deref(), Some(minted[1].token.as_str()));
}

/// The snapshot directories below `tmp` (serve's `TMPDIR`), of every process.
fn snapshots(tmp: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .flat_map(|parent| std::fs::read_dir(parent.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_a_kill_left_behind_is_swept_at_the_next_start() {
    let fake = world();
    let site = slow_single_worker();
    let tmp = site.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let env = [
        ("REVIEWBOT_WEBHOOK_SECRET", SECRET),
        ("TMPDIR", tmp.to_str().unwrap()),
    ];
    let mut serve = Serve::start_with(&site, &fake, &env);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(&serve, "pull_request", "s-1", &opened, SECRET).await,
        202
    );
    lens_started(&site, &serve).await;
    // The round's snapshot, with the PR's file, while its lens runs.
    let left = snapshots(&tmp);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].join("app/work.py").is_file(), "{left:?}");
    serve.signal_and_wait(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(5));
    assert!(left[0].exists(), "a kill leaves it behind");

    // The next start removes it before it listens, then the round runs again and cleans up.
    let serve = Serve::start_with(&site, &fake, &env);
    assert!(!left[0].exists(), "swept at start:\n{}", serve.log());
    reviews_reach(&fake, PR, 1, &serve).await;
    settled(&site, &serve).await;
    assert!(snapshots(&tmp).is_empty(), "{:?}", snapshots(&tmp));
    assert_eq!(fake.archive_requests(REPO), (2, 2));
}

/// A `talk` command lens for conversations: in a round it reports the leftover breakpoint on
/// `app/work.py` line 11; asked about a reply it withdraws the finding. Every request it gets
/// is appended to `prompts.txt`.
fn talking_lens(site: &Site) -> String {
    let script = site.path("talk.sh");
    let prompts = site.path("prompts.txt");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
req=$(cat)
printf '%s\n=====\n' "$req" >> '{}'
case "$req" in
  *"finding under discussion"*)
    echo '{{"findings":[],"summary":"Right: the breakpoint is behind the debug flag, so this is intended."}}'
    exit 0 ;;
esac
echo '{{"findings":[{{"path":"app/work.py","line":11,"severity":"advisory","confidence":"high","title":"Leftover breakpoint","body":"Remove it."}}]}}'
"#,
            prompts.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!(
        "[[lens]]\nname = \"talk\"\nbackend = \"command\"\nbin = \"{}\"\n\n[review]\nlenses = [\"talk\"]\n",
        script.display()
    )
}

/// The prompts the talking lens got, in order.
fn talk_prompts(site: &Site) -> Vec<String> {
    std::fs::read_to_string(site.path("prompts.txt"))
        .unwrap_or_default()
        .split("=====\n")
        .filter_map(|p| serde_json::from_str::<Value>(p).ok())
        .map(|v| v["prompt"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A `pull_request_review_comment` `created` delivery: `user` (a bot when it ends in `[bot]`)
/// wrote comment `id` in the thread of `root`.
fn reply_payload(id: u64, root: u64, user: &str) -> Value {
    let mut v = payload(
        "pull_request_review_comment",
        "created.payload.json",
        &sha("head"),
    );
    let kind = if user.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    v["comment"]["id"] = json!(id);
    v["comment"]["in_reply_to_id"] = json!(root);
    v["comment"]["user"]["login"] = json!(user);
    v["comment"]["user"]["type"] = json!(kind);
    v["sender"]["login"] = json!(user);
    v["sender"]["type"] = json!(kind);
    v
}

/// Our finding comment on PR #7 (a thread's root).
fn finding_comment(fake: &FakeGithub) -> u64 {
    fake.review_comments(REPO, PR)
        .iter()
        .find(|c| c["in_reply_to_id"].is_null() && c["user"]["login"] == BOT)
        .and_then(|c| c["id"].as_u64())
        .expect("a finding comment")
}

/// Our answers in threads on PR #7.
fn thread_answers(fake: &FakeGithub) -> Vec<String> {
    fake.review_comments(REPO, PR)
        .iter()
        .filter(|c| !c["in_reply_to_id"].is_null() && c["user"]["login"] == BOT)
        .map(|c| c["body"].as_str().unwrap_or_default().to_owned())
        .filter(|b| b.contains("<!-- reviewbot reply-to="))
        .collect()
}

/// A maintainer's dispute delivered three times is answered once, withdrawn; the check run
/// counts it no more; the ruling is kept and reaches the lens on the next PR; bots' replies
/// queue nothing.
async fn a_dispute_is_answered_once_and_kept(db: Option<String>) {
    let fake = world();
    add_second_pr(&fake);
    fake.set_role(REPO, "maintainer", "write");
    let dir = tempfile::tempdir().unwrap();
    let db = db.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("r.db").display()));
    let site = Site::with_db(dir, db, "");
    site.set_config(&talking_lens(&site));
    let serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "t-1").await;
    let root = finding_comment(&fake);
    assert_eq!(
        fake.check_runs(REPO)[0]["output"]["title"],
        "Round 1: 0 blocking, 1 advisory"
    );

    let reply = fake.add_reply(
        REPO,
        PR,
        root,
        "maintainer",
        "Intended: it is behind the flag.",
    );
    let event = reply_payload(reply, root, "maintainer");
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(deliver(&serve, "pull_request_review_comment", "t-2", &event, SECRET).await);
    }
    assert_eq!(statuses, [202, 200, 200], "{}", serve.log());
    until(
        Duration::from_secs(60),
        "the answer",
        || !thread_answers(&fake).is_empty(),
        &serve,
    )
    .await;
    settled(&site, &serve).await;
    let answers = thread_answers(&fake);
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert!(
        answers[0].starts_with("Withdrawn. Right: the breakpoint"),
        "{}",
        answers[0]
    );
    assert!(answers[0].contains(&format!("reply-to={reply} outcome=withdrawn")));
    let run = &fake.check_runs(REPO)[0];
    assert_eq!(run["output"]["title"], "Round 1: 0 blocking, 0 advisory");
    assert_eq!(run["conclusion"], "success");
    assert_eq!(
        fake.reviews(REPO, PR)
            .iter()
            .filter(|r| r["body"]
                .as_str()
                .is_some_and(|b| b.contains("<!-- reviewbot round=")))
            .count(),
        1,
        "no round"
    );

    // The ruling is a learning of the repository.
    let store = reviewbot::store::Store::connect(&site.db).await.unwrap();
    let repo = reviewbot::github::model::RepoName::parse(REPO).unwrap();
    // The answer's lens call is a lens run of the PR, of no round (it counts in budgets).
    let calls = store
        .lens_runs_for_pr(&repo, reviewbot::ids::PrNumber(PR))
        .await
        .unwrap();
    assert_eq!(
        calls.iter().map(|c| c.round).collect::<Vec<_>>(),
        [Some(1), None],
        "{calls:#?}"
    );
    let kept = store.learnings(&repo).await.unwrap();
    assert_eq!(kept.len(), 1, "{kept:#?}");
    assert_eq!(
        (
            kept[0].learning.path.as_str(),
            kept[0].learning.title.as_str(),
            kept[0].learning.author.as_str()
        ),
        ("app/work.py", "Leftover breakpoint", "maintainer")
    );
    store.close().await;

    // Replies by bots queue nothing, reviewbot's own included.
    for (id, who) in [("t-3", "dependabot[bot]"), ("t-4", BOT)] {
        let bot = fake.add_reply(REPO, PR, root, who, "noted");
        let status = deliver(
            &serve,
            "pull_request_review_comment",
            id,
            &reply_payload(bot, root, who),
            SECRET,
        )
        .await;
        assert_eq!(status, 200, "{who}");
    }

    // The next PR touching the file: its lens is told of the ruling.
    assert_eq!(
        deliver(&serve, "pull_request", "t-5", &second_pr_payload(), SECRET).await,
        202
    );
    reviews_reach(&fake, 8, 1, &serve).await;
    settled(&site, &serve).await;
    let last = talk_prompts(&site).pop().unwrap();
    assert!(
        last.contains("<untrusted label=\"maintainers' notes\">"),
        "{last}"
    );
    assert!(last.contains("\"Leftover breakpoint\" was withdrawn after maintainer replied: Intended: it is behind the flag."), "{last}");
    assert_eq!(thread_answers(&fake).len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dispute_is_answered_once_and_kept_on_sqlite() {
    a_dispute_is_answered_once_and_kept(None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dispute_is_answered_once_and_kept_on_postgres() {
    let Some((db, server)) = postgres_db("talk").await else {
        return;
    };
    a_dispute_is_answered_once_and_kept(Some(db.clone())).await;
    drop_db(&server, &db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_posted_just_before_a_crash_is_not_posted_again() {
    let fake = world();
    let site = Site::new("");
    site.set_config(&format!(
        "{}\n[serve]\nworkers = 1\nlease = \"2s\"\n",
        talking_lens(&site)
    ));
    let mut serve = Serve::start(&site, &fake);
    round_one(&fake, &site, &serve, "k-1").await;
    let root = finding_comment(&fake);

    // The answer lands on GitHub, and the process dies before the response comes back.
    let replies = format!("/repos/{REPO}/pulls/{PR}/comments/{root}/replies");
    fake.fail_next(("POST", replies.as_str()), Fault::ApplyThenHang, 1);
    let reply = fake.add_reply(REPO, PR, root, "alice", "This is fine.");
    let event = reply_payload(reply, root, "alice");
    assert_eq!(
        deliver(&serve, "pull_request_review_comment", "k-2", &event, SECRET).await,
        202
    );
    until(
        Duration::from_secs(60),
        "the answer to land",
        || !thread_answers(&fake).is_empty(),
        &serve,
    )
    .await;
    serve.signal_and_wait(nix::sys::signal::Signal::SIGKILL, Duration::from_secs(5));

    // The restarted worker takes the job over: the answer is in the thread, nothing more.
    let serve = Serve::start(&site, &fake);
    settled(&site, &serve).await;
    assert_eq!(thread_answers(&fake).len(), 1, "{}", serve.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_gives_up_completes_its_check_run_neutral_saying_why() {
    let fake = world();
    let labels = format!("/repos/{REPO}/issues/{PR}/labels");
    fake.fail_next(("GET", labels.as_str()), Fault::status(404), 100);
    let site = Site::new("[serve]\nmax_attempts = 2\nretry_after = \"1s\"\n");
    let serve = Serve::start(&site, &fake);
    let opened = payload("pull_request", "opened.payload.json", &sha("head"));
    assert_eq!(
        deliver(&serve, "pull_request", "g-1", &opened, SECRET).await,
        202
    );
    settled(&site, &serve).await;
    assert!(fake.reviews(REPO, PR).is_empty());
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(
        (runs[0]["status"].as_str(), runs[0]["conclusion"].as_str()),
        (Some("completed"), Some("neutral")),
        "{}",
        serve.log()
    );
    assert_eq!(runs[0]["output"]["title"], "Round not completed");
    let summary = runs[0]["output"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("gave up on this round after 2 attempts") && summary.contains("404"),
        "{summary}"
    );
}
