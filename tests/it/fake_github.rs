//! A stateful fake of the GitHub REST API, in the style of the test "world" of rust-lang/bors.
//!
//! One `World` holds tokens, repositories, PRs (with every head they ever had), reviews, review
//! comments, file contents and compare results. Handlers read and mutate it, so a test can run the
//! real `reviewbot` binary against [`FakeGithub::url`] and then assert on what was stored and on
//! the request log. Faults (5xx, rate limits, delays, "applied but answered 502", HTML pages, a
//! body cut short, a connection that never answers) are queued per route with
//! [`FakeGithub::fail_next`]. Any route the fake does not know answers 404, is recorded in
//! [`FakeGithub::unexpected`] and fails the test when the fake is dropped (unless the test
//! called [`FakeGithub::allow_unserved_routes`]). With `REVIEWBOT_GITHUB_OPENAPI` set, requests
//! and answers are also held to GitHub's REST description ([`openapi`]).
//!
//! Wire shapes follow GitHub's REST docs as `docs/contract.md` sums them up ("Review rules" for the
//! 422s, "Diff media type" for `.diff` and its 406, "Retry rules" for rate limits).

// A support module: not every helper is used by every test binary build.
#![allow(dead_code)]

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

mod app;
#[path = "../support/app_keys.rs"]
mod app_keys;
mod archive;
mod checks;
mod hunks;
mod json;
pub mod openapi;
mod server;
mod tests;
mod threads;
mod world;

pub use app::Minted;
pub use app_keys::{KeyForm, test_key};
pub use archive::TreeEntry;
pub use checks::CheckRunWrite;
use world::{Pr, Repo, World};

/// What a token is, and so what it may do and who it acts as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// A personal access token: `GET /user` answers this login, and writes are authored by it.
    User(String),
    /// An App installation or Actions token: `GET /user` answers 403, writes are authored by this
    /// bot login (`name[bot]`, `type: Bot`) and `APPROVE` is refused.
    Installation(String),
    /// The read-only Actions token of a fork PR: reads work; `GET /user` and every write answer 403.
    ReadOnly,
}

impl TokenKind {
    /// A personal access token of `login`.
    pub fn user(login: &str) -> TokenKind {
        TokenKind::User(login.to_owned())
    }

    /// An installation token of the `reviewbot` App (author `reviewbot[bot]`).
    pub fn app() -> TokenKind {
        TokenKind::Installation("reviewbot[bot]".to_owned())
    }

    /// A workflow's own `GITHUB_TOKEN` (author `github-actions[bot]`).
    pub fn actions() -> TokenKind {
        TokenKind::Installation("github-actions[bot]".to_owned())
    }
}

/// One file of a PR head, as the files endpoint lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    pub status: String,
    /// The unified-diff hunks; `None` for a binary file or one too large to show.
    pub patch: Option<String>,
    pub previous_filename: Option<String>,
}

impl FileSpec {
    /// A modified file with this patch.
    pub fn modified(filename: &str, patch: &str) -> FileSpec {
        FileSpec::new(filename, "modified", Some(patch))
    }

    /// An added file with this patch (`@@ -0,0 +1,N @@`).
    pub fn added(filename: &str, patch: &str) -> FileSpec {
        FileSpec::new(filename, "added", Some(patch))
    }

    /// A modified file without a patch (binary, or too large for GitHub to show).
    pub fn binary(filename: &str) -> FileSpec {
        FileSpec::new(filename, "modified", None)
    }

    /// A file renamed from `from`, with an optional patch.
    pub fn renamed(from: &str, to: &str, patch: Option<&str>) -> FileSpec {
        FileSpec {
            previous_filename: Some(from.to_owned()),
            ..FileSpec::new(to, "renamed", patch)
        }
    }

    /// Any status, any patch.
    pub fn new(filename: &str, status: &str, patch: Option<&str>) -> FileSpec {
        FileSpec {
            filename: filename.to_owned(),
            status: status.to_owned(),
            patch: patch.map(str::to_owned),
            previous_filename: None,
        }
    }
}

/// A pull request to put in the world; `..PrSpec::default()` fills the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrSpec {
    pub number: u64,
    pub title: String,
    /// `None` is sent as JSON `null`, as GitHub does for an empty description.
    pub body: Option<String>,
    pub head_sha: String,
    pub base_sha: String,
    pub head_ref: String,
    /// The owner of the fork the head branch lives in; `None` for a branch of the repository.
    pub fork_owner: Option<String>,
    pub base_ref: String,
    pub draft: bool,
    /// `open` or `closed`.
    pub state: String,
    pub labels: Vec<String>,
    /// Login of the PR's author.
    pub author: String,
    pub files: Vec<FileSpec>,
}

impl Default for PrSpec {
    fn default() -> PrSpec {
        PrSpec {
            number: 1,
            title: "Update the README with new information.".to_owned(),
            body: Some("This is a pretty simple change.".to_owned()),
            head_sha: sha("head"),
            base_sha: sha("base"),
            head_ref: "changes".to_owned(),
            fork_owner: None,
            base_ref: "main".to_owned(),
            draft: false,
            state: "open".to_owned(),
            labels: Vec::new(),
            author: "octocat".to_owned(),
            files: Vec::new(),
        }
    }
}

/// What a queued fault does to a matching request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Answer this status instead, with this JSON body (default `{"message": <reason>}`).
    Status(u16, Option<Value>),
    /// 403 "You have exceeded a secondary rate limit…", with `retry-after` when given.
    SecondaryRateLimit { retry_after: Option<u64> },
    /// 403 or 429 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset: reset` (epoch seconds).
    PrimaryRateLimit { status: u16, reset: u64 },
    /// 429 with `retry-after: N` and the secondary-limit body.
    TooManyRequests { retry_after: u64 },
    /// Wait this long, then handle the request normally.
    Delay(Duration),
    /// Handle the request (store what it writes), then answer this status anyway.
    ApplyThenFail(u16),
    /// Answer this status with this `content-type` and these bytes as they are: an HTML error
    /// page from GitHub's edge (its "Unicorn!" 502), a proxy's page, a JSON body cut short.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// Handle the request (store what it writes), send the headers and half the body with the
    /// whole body's `content-length`, then drop the connection.
    Truncated,
    /// Read the request and never answer (the connection stays open until the client gives up).
    Hang,
    /// Handle the request (store what it writes), then never answer: the write landed, and the
    /// client is still waiting when its process dies.
    ApplyThenHang,
}

impl Fault {
    /// A bare status with GitHub's default body.
    pub fn status(code: u16) -> Fault {
        Fault::Status(code, None)
    }

    /// An HTML page with this status and `<title>`, as GitHub's edge serves when the API is
    /// down.
    pub fn html(status: u16, title: &str) -> Fault {
        Fault::Raw {
            status,
            content_type: "text/html; charset=utf-8".to_owned(),
            body: format!(
                "<!DOCTYPE html>\n<html>\n  <head>\n    <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n    <title>{title}</title>\n  </head>\n  <body>\n    <p>No server is currently available to service your request.</p>\n  </body>\n</html>\n"
            ),
        }
    }

    /// A primary limit whose reset lies `secs` from now (negative: already past).
    pub fn primary_reset_in(status: u16, secs: i64) -> Fault {
        let reset = now_epoch().saturating_add_signed(secs);
        Fault::PrimaryRateLimit { status, reset }
    }
}

/// Which requests a fault applies to: a method (`*` for any) and an exact path or a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: String,
    pub path: String,
    pub prefix: bool,
}

impl Route {
    /// Exactly this method and path (query excluded).
    pub fn exact(method: &str, path: &str) -> Route {
        Route {
            method: method.to_owned(),
            path: path.to_owned(),
            prefix: false,
        }
    }

    /// This method (`*` for any) and any path starting with `prefix`.
    pub fn prefix(method: &str, prefix: &str) -> Route {
        Route {
            prefix: true,
            ..Route::exact(method, prefix)
        }
    }

    /// Whether a request matches.
    pub fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = self.method == "*" || self.method.eq_ignore_ascii_case(method);
        let path_ok = if self.prefix {
            path.starts_with(&self.path)
        } else {
            path == self.path
        };
        method_ok && path_ok
    }
}

impl From<(&str, &str)> for Route {
    fn from((method, path): (&str, &str)) -> Route {
        Route::exact(method, path)
    }
}

/// One request as the fake saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    /// The token from `Authorization`, if any.
    pub token: Option<String>,
    pub at: SystemTime,
    /// The status answered (0 while the request is in flight).
    pub status: u16,
}

/// A running fake GitHub; it stops when dropped.
pub struct FakeGithub {
    world: Arc<Mutex<World>>,
    url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeGithub {
    /// Starts the fake on 127.0.0.1 (a free port), on its own thread and tokio runtime, and
    /// its archive host (codeload) on another loopback address, 127.0.0.2 (or, where that
    /// cannot be bound, another port of 127.0.0.1: another origin all the same).
    pub fn start() -> FakeGithub {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind fake github");
        let codeload = std::net::TcpListener::bind("127.0.0.2:0")
            .or_else(|_| std::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind fake codeload");
        for l in [&listener, &codeload] {
            l.set_nonblocking(true).expect("nonblocking listener");
        }
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let mut state = World::new(&url);
        state.codeload = format!("http://{}", codeload.local_addr().expect("local addr"));
        let world = Arc::new(Mutex::new(state));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = server::router(world.clone());
        std::thread::Builder::new()
            .name("fake-github".to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake github runtime");
                rt.block_on(async move {
                    let stop = tokio_util::sync::CancellationToken::new();
                    let serve = |l: std::net::TcpListener| {
                        let listener = tokio::net::TcpListener::from_std(l).expect("listener");
                        let stop = stop.clone();
                        axum::serve(listener, app.clone())
                            .with_graceful_shutdown(async move { stop.cancelled().await })
                            .into_future()
                    };
                    let api = tokio::spawn(serve(listener));
                    let archive = tokio::spawn(serve(codeload));
                    let _ = rx.await;
                    stop.cancel();
                    let _ = tokio::join!(api, archive);
                });
            })
            .expect("spawn fake github thread");
        FakeGithub {
            world,
            url,
            shutdown: Some(tx),
        }
    }

    /// The base URL to put in `GITHUB_API_URL` (no trailing slash).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Registers a token of the given kind.
    pub fn add_token(&self, token: &str, kind: TokenKind) -> &Self {
        self.world().tokens.insert(token.to_owned(), kind);
        self
    }

    /// Registers the GitHub App `app_id` (slug `slug`, client ID `Iv23fake<app_id>`): its JWTs
    /// are verified with `public_key_pem`, and its installation tokens act as `<slug>[bot]`.
    pub fn add_app(&self, app_id: u64, slug: &str, public_key_pem: &str) -> &Self {
        self.world().app = Some(app::AppState::new(app_id, slug, public_key_pem));
        self
    }

    /// Installs the App (see [`Self::add_app`]) as installation `id`.
    pub fn add_installation(&self, id: u64) -> &Self {
        self.with_app(|app| app.installations.insert(id));
        self
    }

    /// Tokens minted from now on live this long (default one hour, as on GitHub).
    pub fn set_token_lifetime(&self, lifetime: Duration) -> &Self {
        self.with_app(|app| app.lifetime = lifetime);
        self
    }

    /// Revokes every token minted so far for installation `id`: they answer 401 from now on.
    pub fn revoke_installation_tokens(&self, id: u64) -> &Self {
        self.with_app(|app| {
            for m in app.minted.iter_mut().filter(|m| m.installation == id) {
                m.revoked = true;
            }
        });
        self
    }

    /// Every installation token minted so far, oldest first.
    pub fn minted(&self) -> Vec<Minted> {
        self.with_app(|app| app.minted.clone())
    }

    fn with_app<T>(&self, f: impl FnOnce(&mut app::AppState) -> T) -> T {
        let mut w = self.world();
        let app = w.app.as_mut().expect("fake github: add_app first");
        f(app)
    }

    /// Adds a PR (and its repository `owner/name`, if new) with its first head.
    pub fn add_pr(&self, repo: &str, spec: PrSpec) -> &Self {
        let mut w = self.world();
        let id = w.next_id();
        let repo_id = w.next_id();
        let r = w
            .repos
            .entry(repo_key(repo))
            .or_insert_with(|| Repo::new(repo, repo_id, &spec.base_ref));
        r.prs.insert(spec.number, Pr::new(id, spec));
        self
    }

    /// Simulates a push: the PR's head becomes `sha` with `files`; older heads stay known.
    pub fn set_head(&self, repo: &str, n: u64, sha: &str, files: Vec<FileSpec>) -> &Self {
        self.with_pr(repo, n, |pr| {
            pr.heads.push((sha.to_owned(), files));
            pr.updated_at = world::timestamp(SystemTime::now());
        });
        self
    }

    /// Replaces the PR's labels.
    pub fn set_labels(&self, repo: &str, n: u64, labels: &[&str]) -> &Self {
        self.with_pr(repo, n, |pr| {
            pr.spec.labels = labels.iter().map(|l| (*l).to_owned()).collect();
        });
        self
    }

    /// Marks the PR draft or ready.
    pub fn set_draft(&self, repo: &str, n: u64, draft: bool) -> &Self {
        self.with_pr(repo, n, |pr| pr.spec.draft = draft);
        self
    }

    /// Stores a file for `GET /repos/{o}/{r}/contents/{path}?ref={git_ref}`.
    pub fn add_file_content(&self, repo: &str, git_ref: &str, path: &str, content: &str) -> &Self {
        let mut w = self.world();
        let r = w.repo_mut_or_new(repo);
        r.contents
            .insert((git_ref.to_owned(), path.to_owned()), content.to_owned());
        self
    }

    /// Sets what `GET /repos/{o}/{r}/compare/{base}...{head}` answers (`status`: `identical`,
    /// `ahead`, `behind` or `diverged`).
    pub fn set_compare(
        &self,
        repo: &str,
        base: &str,
        head: &str,
        status: &str,
        files: Vec<FileSpec>,
    ) -> &Self {
        let mut w = self.world();
        let r = w.repo_mut_or_new(repo);
        r.compares.insert(
            (base.to_owned(), head.to_owned()),
            (status.to_owned(), files),
        );
        self
    }

    /// Gives `user` a role on `repo` (`admin`, `maintain`, `write`, `triage`, `read`), as the
    /// collaborator permission endpoint reports it; a user never given one answers 404.
    pub fn set_role(&self, repo: &str, user: &str, role: &str) -> &Self {
        let mut w = self.world();
        let r = w.repo_mut_or_new(repo);
        r.roles.insert(user.to_ascii_lowercase(), role.to_owned());
        self
    }

    /// A human (or any `user`) replies in the thread of review comment `in_reply_to`; returns the
    /// reply's id. Like GitHub, the reply comes with its own (empty-bodied) review.
    pub fn add_reply(&self, repo: &str, n: u64, in_reply_to: u64, user: &str, body: &str) -> u64 {
        let mut w = self.world();
        w.add_reply(&repo_key(repo), n, in_reply_to, user, body)
            .unwrap_or_else(|e| panic!("add_reply: {e}"))
    }

    /// `user` submits a COMMENT review with `body` on `commit_id`; returns its id.
    pub fn add_review_by(
        &self,
        repo: &str,
        n: u64,
        user: &str,
        body: &str,
        commit_id: &str,
    ) -> u64 {
        let mut w = self.world();
        w.add_review(&repo_key(repo), n, user, body, commit_id, "COMMENTED")
            .unwrap_or_else(|e| panic!("add_review_by: {e}"))
    }

    /// The next `times` requests matching `route` get `fault`; queued faults apply in order.
    pub fn fail_next(&self, route: impl Into<Route>, fault: Fault, times: u32) -> &Self {
        self.world().faults.push((route.into(), fault, times));
        self
    }

    /// Sets the tree the archive of `sha` holds (default: the new side of the files of the PR
    /// head with that SHA).
    pub fn set_tree(&self, repo: &str, sha: &str, tree: Vec<TreeEntry>) -> &Self {
        let mut w = self.world();
        w.repo_mut_or_new(repo).trees.insert(sha.to_owned(), tree);
        self
    }

    /// The archive host's base URL.
    pub fn codeload_url(&self) -> String {
        self.world().codeload.clone()
    }

    /// Requests for archives: the API's redirects (`GET /repos/{o}/{r}/tarball/…`) and the
    /// downloads from the archive host.
    pub fn archive_requests(&self, repo: &str) -> (usize, usize) {
        let (owner, name) = repo.split_once('/').expect("owner/name");
        (
            self.count("GET", &format!("/repos/{repo}/tarball/")),
            self.count("GET", &format!("/{owner}/{name}/legacy.tar.gz/")),
        )
    }

    /// Requests to the archive host that carried `Authorization` (each refused).
    pub fn codeload_authorized(&self) -> usize {
        self.world().codeload_authorized
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.world().log.clone()
    }

    /// How many requests had this method (`*` for any) and a path starting with `path_prefix`.
    pub fn count(&self, method: &str, path_prefix: &str) -> usize {
        let route = Route::prefix(method, path_prefix);
        self.world()
            .log
            .iter()
            .filter(|r| route.matches(&r.method, &r.path))
            .count()
    }

    /// Requests to routes the fake does not implement (each answered 404).
    pub fn unexpected(&self) -> Vec<RequestRecord> {
        let w = self.world();
        w.unexpected.iter().map(|&i| w.log[i].clone()).collect()
    }

    /// This test sends requests to routes the fake does not serve, on purpose: they do not
    /// fail it (see [`Self::unexpected`]).
    pub fn allow_unserved_routes(&self) -> &Self {
        self.world().allow_unserved = true;
        self
    }

    /// This test sends requests GitHub's REST description does not allow, on purpose (to see
    /// how the fake refuses them): they do not fail it. The fake's answers are still checked.
    pub fn allow_invalid_requests(&self) -> &Self {
        self.world().allow_invalid_requests = true;
        self
    }

    /// What fails the test when the fake is dropped: requests to routes it does not serve, and
    /// departures from GitHub's REST description, each on one line.
    pub fn problems(&self) -> Vec<String> {
        let w = self.world();
        let unserved = w.unexpected.iter().filter(|_| !w.allow_unserved).map(|&i| {
            format!(
                "{} {}: a route the fake does not serve",
                w.log[i].method, w.log[i].path
            )
        });
        let violations = w
            .violations
            .iter()
            .filter(|v| !(v.request && w.allow_invalid_requests))
            .map(|v| v.text.clone());
        unserved.chain(violations).collect()
    }

    /// The PR's reviews as the list endpoint returns them, in creation order.
    pub fn reviews(&self, repo: &str, n: u64) -> Vec<Value> {
        self.with_pr(repo, n, |pr| pr.reviews.clone())
    }

    /// The PR's review comments (replies included), in creation order.
    /// The review threads resolved so far, by their first comment's id.
    pub fn resolved_threads(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.world().resolved_threads.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Each GraphQL query for files at a ref, with the `<ref>:<path>` expressions it asked for.
    pub fn files_asked(&self) -> Vec<Vec<String>> {
        self.world().files_asked.clone()
    }

    /// `login` resolves the thread whose first comment is `root`, as a person does on GitHub
    /// (the PR's author may, whatever their permission).
    pub fn resolve_thread(&self, root: u64, login: &str) {
        self.world().resolved_threads.insert(root, login.to_owned());
    }

    pub fn review_comments(&self, repo: &str, n: u64) -> Vec<Value> {
        self.with_pr(repo, n, |pr| pr.comments.clone())
    }

    /// The PR's current labels.
    pub fn labels(&self, repo: &str, n: u64) -> Vec<String> {
        self.with_pr(repo, n, |pr| pr.spec.labels.clone())
    }

    /// Every check run of `repo`, oldest first, as the API shows one (`annotations` holds all
    /// of them, which the real API lists at their own endpoint).
    pub fn check_runs(&self, repo: &str) -> Vec<Value> {
        let key = repo_key(repo);
        self.world()
            .check_runs
            .iter()
            .filter(|r| r.repo == key)
            .map(|r| r.to_json())
            .collect()
    }

    /// Every check-run create and update to `repo` (refused ones too), in arrival order: what
    /// each asked for and how many annotations it carried.
    pub fn check_run_writes(&self, repo: &str) -> Vec<CheckRunWrite> {
        let key = repo_key(repo);
        let mut writes = self.world().check_run_writes.clone();
        writes.retain(|w| w.repo == key);
        writes
    }

    /// While on, every check-run write answers 403, as for a token without `checks: write`
    /// (the Action without the permission, an App installed before it asked for it).
    pub fn forbid_checks(&self, on: bool) -> &Self {
        self.world().checks_forbidden = on;
        self
    }

    fn world(&self) -> MutexGuard<'_, World> {
        lock(&self.world)
    }

    fn with_pr<T>(&self, repo: &str, n: u64, f: impl FnOnce(&mut Pr) -> T) -> T {
        let mut w = self.world();
        let pr = w
            .pr_mut(&repo_key(repo), n)
            .unwrap_or_else(|| panic!("fake github: no PR {repo}#{n}"));
        f(pr)
    }
}

impl Drop for FakeGithub {
    /// Stops the fake, then fails the test (unless it already failed) on any request to a
    /// route the fake does not serve, and on any departure from GitHub's REST description.
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if std::thread::panicking() {
            return;
        }
        let problems = self.problems();
        assert!(
            problems.is_empty(),
            "fake github: {} problem(s):\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
}

/// A deterministic 40-hex commit SHA derived from `seed`.
pub fn sha(seed: &str) -> String {
    hex(&Sha256::digest(seed.as_bytes()))[..40].to_owned()
}

/// Locks the world, ignoring poisoning (a panicking test must not hide the next assertion).
fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(|e| e.into_inner())
}

/// GitHub compares `owner/name` case-insensitively.
fn repo_key(repo: &str) -> String {
    repo.to_ascii_lowercase()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_epoch() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
