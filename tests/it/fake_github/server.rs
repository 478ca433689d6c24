//! The HTTP side: one fallback handler that logs the request, applies any queued fault, checks
//! the token, then routes on `(method, path segments)` to one function per endpoint.

use std::future::Future as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::archive;
use super::checks;
use super::hunks::{self, Side};
use super::openapi;
use super::world::{Pr, Repo, Violation, World};
use super::{Fault, FileSpec, RequestRecord, TokenKind, json, lock};

/// GitHub's primary limit for an installation, as the fake reports it.
const RATE_LIMIT: u64 = 5000;
/// Body cap, code points (not bytes).
const MAX_BODY_CHARS: usize = 65_536;
/// `.diff` limits.
const DIFF_MAX_FILES: usize = 300;
const DIFF_MAX_LINES: usize = 20_000;
/// The files endpoint lists at most this many.
const FILES_CAP: usize = 3000;

const SECONDARY_LIMIT: &str =
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
pub(super) const NOT_ACCESSIBLE: &str = "Resource not accessible by integration";

type Shared = Arc<Mutex<World>>;

/// The fake's router: everything goes through [`handle`].
pub(super) fn router(world: Shared) -> Router {
    Router::new().fallback(handle).with_state(world)
}

/// One incoming request, read in full.
struct Ctx {
    method: String,
    path: String,
    /// Raw `key=value` pairs as sent (not decoded), in order.
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Vec<u8>,
    token: Option<String>,
    /// Index of this request in the log.
    log_index: usize,
    /// The operation of GitHub's REST description the request is for, when it is checked.
    operation: Option<&'static openapi::Operation>,
}

impl Ctx {
    /// A query parameter, percent-decoded.
    fn param(&self, key: &str) -> Option<String> {
        self.query.iter().find(|(k, _)| k == key).map(|(_, v)| {
            percent_decode_str(&v.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        })
    }

    /// `http://host` from the `Host` header, for absolute `Link` URLs.
    fn origin(&self, world_api: &str) -> String {
        match self.headers.get(header::HOST).and_then(|h| h.to_str().ok()) {
            Some(host) => format!("http://{host}"),
            None => world_api.to_owned(),
        }
    }

    fn accept(&self) -> &str {
        self.headers
            .get(header::ACCEPT)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
    }
}

/// Logs, applies faults, answers, and stamps the rate-limit headers.
async fn handle(State(world): State<Shared>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = to_bytes(body, 64 << 20)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let raw_query = parts.uri.query().map(str::to_owned);
    let query: Vec<(String, String)> = raw_query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect();
    let token = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("token "))
        })
        .map(|t| t.trim().to_owned());
    let method = parts.method.as_str().to_owned();

    let operation = check_request(&world, &parts.headers, &method, &path, &query, &body);
    let (log_index, fault) = {
        let mut w = lock(&world);
        w.log.push(RequestRecord {
            method: method.clone(),
            path: path.clone(),
            query: raw_query,
            token: token.clone(),
            at: SystemTime::now(),
            status: 0,
        });
        (w.log.len() - 1, take_fault(&mut w, &method, &path))
    };
    let ctx = Ctx {
        method,
        path,
        query,
        headers: parts.headers,
        body,
        token,
        log_index,
        operation,
    };

    let mut primary_reset = None;
    let mut response = match fault {
        None => served(&world, &ctx).await,
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            served(&world, &ctx).await
        }
        Some(Fault::ApplyThenFail(status)) => {
            let _applied = served(&world, &ctx).await;
            default_error(status)
        }
        Some(Fault::Raw {
            status,
            content_type,
            body,
        }) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
            let mut r = (code, body).into_response();
            set_header(&mut r, "content-type", &content_type);
            r
        }
        Some(Fault::Truncated) => truncate(served(&world, &ctx).await).await,
        Some(Fault::Hang) => std::future::pending::<Response>().await,
        Some(Fault::ApplyThenHang) => {
            let _applied = served(&world, &ctx).await;
            std::future::pending::<Response>().await
        }
        Some(Fault::Status(status, body)) => match body {
            Some(b) => json_response(status, &b),
            None => default_error(status),
        },
        Some(Fault::SecondaryRateLimit { retry_after }) => {
            let mut r = json_response(403, &secondary_body());
            if let Some(s) = retry_after {
                set_header(&mut r, "retry-after", &s.to_string());
            }
            r
        }
        Some(Fault::TooManyRequests { retry_after }) => {
            let mut r = json_response(429, &secondary_body());
            set_header(&mut r, "retry-after", &retry_after.to_string());
            r
        }
        Some(Fault::PrimaryRateLimit { status, reset }) => {
            primary_reset = Some(reset);
            json_response(
                status,
                &json::error(status, "API rate limit exceeded for installation ID 1."),
            )
        }
    };

    let mut w = lock(&world);
    w.rate_used += 1;
    let (remaining, used, reset) = match primary_reset {
        Some(reset) => (0, RATE_LIMIT, reset),
        None => (
            RATE_LIMIT.saturating_sub(w.rate_used),
            w.rate_used,
            w.rate_reset,
        ),
    };
    w.log[log_index].status = response.status().as_u16();
    drop(w);
    set_header(&mut response, "x-ratelimit-limit", &RATE_LIMIT.to_string());
    set_header(
        &mut response,
        "x-ratelimit-remaining",
        &remaining.to_string(),
    );
    set_header(&mut response, "x-ratelimit-reset", &reset.to_string());
    set_header(&mut response, "x-ratelimit-used", &used.to_string());
    set_header(&mut response, "x-ratelimit-resource", "core");
    set_header(&mut response, "x-github-api-version-selected", "2022-11-28");
    set_header(
        &mut response,
        "x-github-request-id",
        &format!("FAKE:{log_index:08X}"),
    );
    response
}

/// Requests to the archive host are not REST API calls: codeload is another service, which
/// GitHub's REST description does not cover. Nor is `POST /graphql`: GitHub's GraphQL API has its
/// own schema. Everything else must be an operation of the description (see [`openapi`]),
/// the App's JWT routes included (`GET /app` and `POST /app/installations/{id}/access_tokens`
/// are in it); returns it, or records why not.
fn check_request(
    world: &Shared,
    headers: &HeaderMap,
    method: &str,
    path: &str,
    query: &[(String, String)],
    body: &[u8],
) -> Option<&'static openapi::Operation> {
    let description = openapi::description()?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let to_codeload = host.is_some_and(|h| lock(world).codeload.ends_with(&format!("//{h}")));
    if to_codeload || (method, path) == ("POST", "/graphql") {
        return None;
    }
    let Some(op) = description.operation(method, path) else {
        lock(world).violations.push(Violation::request(format!(
            "{method} {path}: no such operation in GitHub's REST description"
        )));
        return None;
    };
    let problems = description.check_request(op, query, body);
    let mut w = lock(world);
    for p in problems {
        w.violations
            .push(Violation::request(format!("{} ({path}): {p}", op.name())));
    }
    Some(op)
}

/// The fake's own answer to a request, held to the description when it is a 2xx.
async fn served(world: &Shared, ctx: &Ctx) -> Response {
    let response = dispatch(world, ctx);
    let status = response.status().as_u16();
    let (Some(op), Some(description)) = (ctx.operation, openapi::description()) else {
        return response;
    };
    if !(200..300).contains(&status) {
        return response;
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    let (parts, body) = response.into_parts();
    let bytes = to_bytes(body, 64 << 20).await.unwrap_or_default();
    let value = if json {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                let text = format!(
                    "{} ({}): answer {status} is not JSON: {e}",
                    op.name(),
                    ctx.path
                );
                lock(world).violations.push(Violation::answer(text));
                None
            }
        }
    } else {
        None
    };
    let problems = description.check_response(op, status, value.as_ref());
    let mut w = lock(world);
    for p in problems {
        w.violations.push(Violation::answer(format!(
            "{} ({}): {p}",
            op.name(),
            ctx.path
        )));
    }
    drop(w);
    Response::from_parts(parts, Body::from(bytes))
}

/// `response` with its full `content-length` but only half its body, then a dropped connection.
async fn truncate(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = to_bytes(body, 64 << 20).await.unwrap_or_default();
    parts.headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(bytes.len() as u64),
    );
    let half = bytes.slice(..bytes.len() / 2);
    Response::from_parts(
        parts,
        Body::new(CutBody {
            half: Some(half),
            pause: Box::pin(tokio::time::sleep(Duration::from_millis(50))),
        }),
    )
}

/// A body that sends its bytes, pauses (so they and the headers reach the client), then
/// fails: hyper closes the connection short of its `content-length`, as a dropped one does.
struct CutBody {
    half: Option<bytes::Bytes>,
    pause: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for CutBody {
    type Data = bytes::Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        if let Some(half) = self.half.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(half))));
        }
        match self.pause.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(()) => Poll::Ready(Some(Err(std::io::Error::other(
                "connection dropped mid-body",
            )))),
        }
    }
}

/// Takes one use of the first queued fault matching the request.
fn take_fault(w: &mut World, method: &str, path: &str) -> Option<Fault> {
    let i = w
        .faults
        .iter()
        .position(|(route, _, times)| *times > 0 && route.matches(method, path))?;
    let fault = w.faults[i].1.clone();
    w.faults[i].2 -= 1;
    if w.faults[i].2 == 0 {
        w.faults.remove(i);
    }
    Some(fault)
}

/// Authenticates, then routes to one handler per endpoint.
fn dispatch(world: &Shared, ctx: &Ctx) -> Response {
    let mut w = lock(world);
    let segments: Vec<&str> = ctx.path.trim_start_matches('/').split('/').collect();
    // The archive host authorises by the URL's own token, never a header.
    if let ("GET", [o, r, "legacy.tar.gz", sha]) = (ctx.method.as_str(), segments.as_slice()) {
        return codeload(&mut w, ctx, o, r, sha);
    }
    // The App's own routes authenticate with its JWT, not a token.
    if let Some((status, body)) =
        super::app::route(&mut w, &ctx.method, &segments, ctx.token.as_deref())
    {
        return json_response(status, &body);
    }
    let known = ctx
        .token
        .as_deref()
        .filter(|t| !super::app::refused(&w, t))
        .and_then(|t| w.tokens.get(t))
        .cloned();
    let Some(kind) = known else {
        return json_response(401, &json::error(401, "Bad credentials"));
    };
    match (ctx.method.as_str(), segments.as_slice()) {
        ("GET", ["user"]) => get_user(&w, &kind),
        ("GET", ["repos", o, r, "pulls", n]) => get_pull(&w, ctx, o, r, n),
        ("GET", ["repos", o, r, "pulls", n, "files"]) => list_files(&w, ctx, o, r, n),
        ("GET", ["repos", o, r, "pulls", n, "reviews"]) => list_reviews(&w, ctx, o, r, n),
        ("POST", ["repos", o, r, "pulls", n, "reviews"]) => {
            create_review(&mut w, ctx, &kind, o, r, n)
        }
        ("GET", ["repos", o, r, "pulls", n, "comments"]) => list_review_comments(&w, ctx, o, r, n),
        ("POST", ["repos", o, r, "pulls", n, "comments", id, "replies"]) => {
            match (n.parse::<u64>(), id.parse::<u64>()) {
                (Ok(n), Ok(id)) => {
                    let (status, body) =
                        super::threads::post_reply(&mut w, &kind, &key(o, r), n, id, &ctx.body);
                    json_response(status, &body)
                }
                _ => not_found(),
            }
        }
        ("POST", ["graphql"]) => {
            let (status, body) = super::threads::graphql(&mut w, &kind, &ctx.body);
            json_response(status, &body)
        }
        ("GET", ["repos", o, r, "issues", n, "labels"]) => list_labels(&w, ctx, o, r, n),
        ("DELETE", ["repos", o, r, "issues", n, "labels", name]) => {
            remove_label(&mut w, &kind, o, r, n, name)
        }
        ("GET", ["repos", o, r, "contents", path @ ..]) if !path.is_empty() => {
            get_contents(&w, ctx, o, r, &path.join("/"))
        }
        ("GET", ["repos", o, r, "compare", spec @ ..]) if !spec.is_empty() => {
            get_compare(&w, o, r, &spec.join("/"))
        }
        ("GET", ["repos", o, r, "collaborators", user, "permission"]) => {
            get_permission(&w, o, r, user)
        }
        ("GET", ["repos", o, r, "tarball", sha]) => get_tarball(&mut w, o, r, sha),
        ("POST", ["repos", o, r, "check-runs"]) => {
            let (status, body) = checks::create(&mut w, &kind, &key(o, r), &ctx.body);
            json_response(status, &body)
        }
        ("PATCH", ["repos", o, r, "check-runs", id]) => {
            let (status, body) = checks::update(&mut w, &kind, &key(o, r), id, &ctx.body);
            json_response(status, &body)
        }
        ("GET", ["repos", o, r, "commits", sha, "check-runs"]) => {
            let name = ctx.param("check_name");
            let filter = ctx.param("filter").unwrap_or_else(|| "latest".to_owned());
            let body = checks::list(&w, &key(o, r), sha, name.as_deref(), &filter);
            json_response(200, &body)
        }
        _ => {
            w.unexpected.push(ctx.log_index);
            json_response(404, &json::error(404, "Not Found"))
        }
    }
}

/// `GET /repos/{o}/{r}/tarball/{sha}`: 302 to a one-time URL on the archive host.
fn get_tarball(w: &mut World, o: &str, r: &str, sha: &str) -> Response {
    let repo_key = key(o, r);
    if archive::tree(w, &repo_key, sha).is_none() {
        return not_found();
    }
    let token = format!("CL{}", w.next_id());
    w.codeload_tokens.insert(token.clone());
    let Some(repo) = w.repos.get(&repo_key) else {
        return not_found();
    };
    let location = format!(
        "{}/{}/{}/legacy.tar.gz/{sha}?token={token}",
        w.codeload, repo.owner, repo.name
    );
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::FOUND;
    set_header(&mut response, "location", &location);
    response
}

/// The archive host: the tar.gz of `sha`, for a request with a token the API handed out, sent
/// to this host, without `Authorization`.
fn codeload(w: &mut World, ctx: &Ctx, o: &str, r: &str, sha: &str) -> Response {
    if ctx.headers.contains_key(header::AUTHORIZATION) {
        w.codeload_authorized += 1;
        return json_response(
            400,
            &json::error(400, "codeload takes no Authorization header"),
        );
    }
    let to_codeload = ctx
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| w.codeload.ends_with(&format!("//{h}")));
    let token_ok = ctx
        .param("token")
        .is_some_and(|t| w.codeload_tokens.contains(&t));
    let repo_key = key(o, r);
    match (to_codeload && token_ok, archive::tree(w, &repo_key, sha)) {
        (true, Some(tree)) => {
            let (owner, name) = w
                .repos
                .get(&repo_key)
                .map(|r| (r.owner.clone(), r.name.clone()))
                .unwrap_or_default();
            archive::gzip_response(archive::tarball(&owner, &name, sha, &tree))
        }
        _ => not_found(),
    }
}

/// `GET /user`: the PAT's user; 403 for installation and read-only tokens.
fn get_user(w: &World, kind: &TokenKind) -> Response {
    match kind {
        TokenKind::User(login) => json_response(200, &json::authenticated_user(&w.api, login)),
        TokenKind::Installation(_) | TokenKind::ReadOnly => {
            json_response(403, &json::error(403, NOT_ACCESSIBLE))
        }
    }
}

/// `GET /pulls/{n}`: the PR JSON, or the raw diff for `application/vnd.github[.v3].diff`.
fn get_pull(w: &World, ctx: &Ctx, o: &str, r: &str, n: &str) -> Response {
    let Some((repo, pr)) = find_pr(w, o, r, n) else {
        return not_found();
    };
    let accept = ctx.accept();
    if accept.contains("vnd.github.diff") || accept.contains("vnd.github.v3.diff") {
        return get_diff(pr);
    }
    json_response(200, &json::pull(&w.api, repo, pr))
}

/// The `.diff` media type: `diff --git` sections built from the files' patches; 406 `too_large`
/// over 300 files or 20,000 lines.
fn get_diff(pr: &Pr) -> Response {
    let files = pr.files();
    if files.len() > DIFF_MAX_FILES {
        return json_response(
            406,
            &json::diff_too_large(
                "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull requests files' API or locally cloning the repository instead.",
            ),
        );
    }
    let lines: usize = files
        .iter()
        .filter_map(|f| f.patch.as_deref())
        .map(|p| hunks::lines(p).len())
        .sum();
    if lines > DIFF_MAX_LINES {
        return json_response(
            406,
            &json::diff_too_large(
                "Sorry, the diff exceeded the maximum number of lines (20000). Consider using 'List pull requests files' API or locally cloning the repository instead.",
            ),
        );
    }
    let mut diff = String::new();
    for f in files {
        diff.push_str(&diff_section(f));
    }
    let mut response = Response::new(Body::from(diff));
    set_header(
        &mut response,
        "content-type",
        "application/vnd.github.diff; charset=utf-8",
    );
    response
}

/// One file's `diff --git` section.
fn diff_section(f: &FileSpec) -> String {
    let new = &f.filename;
    let old = f.previous_filename.as_ref().unwrap_or(new);
    let mut s = format!("diff --git a/{old} b/{new}\n");
    match f.status.as_str() {
        "added" => s.push_str("new file mode 100644\n"),
        "removed" => s.push_str("deleted file mode 100644\n"),
        "renamed" => s.push_str(&format!(
            "similarity index 90%\nrename from {old}\nrename to {new}\n"
        )),
        _ => {}
    }
    let Some(patch) = &f.patch else {
        if f.status != "renamed" {
            s.push_str("index 1111111..2222222 100644\n");
            s.push_str(&format!("Binary files a/{old} and b/{new} differ\n"));
        }
        return s;
    };
    s.push_str("index 1111111..2222222 100644\n");
    let from = if f.status == "added" {
        "/dev/null".to_owned()
    } else {
        format!("a/{old}")
    };
    let to = if f.status == "removed" {
        "/dev/null".to_owned()
    } else {
        format!("b/{new}")
    };
    s.push_str(&format!("--- {from}\n+++ {to}\n{patch}"));
    if !patch.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// `GET /pulls/{n}/files`: the current head's files, at most 3,000, paginated.
fn list_files(w: &World, ctx: &Ctx, o: &str, r: &str, n: &str) -> Response {
    let Some((repo, pr)) = find_pr(w, o, r, n) else {
        return not_found();
    };
    let items = pr
        .files()
        .iter()
        .take(FILES_CAP)
        .map(|f| json::file(&w.api, repo, pr.head_sha(), f))
        .collect();
    paginate(w, ctx, items)
}

/// `GET /pulls/{n}/reviews`: in creation order, paginated.
fn list_reviews(w: &World, ctx: &Ctx, o: &str, r: &str, n: &str) -> Response {
    match find_pr(w, o, r, n) {
        Some((_, pr)) => paginate(w, ctx, pr.reviews.clone()),
        None => not_found(),
    }
}

/// `GET /pulls/{n}/comments`: review comments and replies, paginated.
fn list_review_comments(w: &World, ctx: &Ctx, o: &str, r: &str, n: &str) -> Response {
    match find_pr(w, o, r, n) {
        Some((_, pr)) => paginate(w, ctx, pr.comments.clone()),
        None => not_found(),
    }
}

/// `GET /issues/{n}/labels`: label objects, paginated.
fn list_labels(w: &World, ctx: &Ctx, o: &str, r: &str, n: &str) -> Response {
    match find_pr(w, o, r, n) {
        Some((repo, pr)) => {
            let items = pr
                .spec
                .labels
                .iter()
                .map(|l| json::label(&w.api, repo, l))
                .collect();
            paginate(w, ctx, items)
        }
        None => not_found(),
    }
}

/// `DELETE /issues/{n}/labels/{name}`: the remaining labels; 404 "Label does not exist".
fn remove_label(
    w: &mut World,
    kind: &TokenKind,
    o: &str,
    r: &str,
    n: &str,
    name: &str,
) -> Response {
    if *kind == TokenKind::ReadOnly {
        return json_response(403, &json::error(403, NOT_ACCESSIBLE));
    }
    let name = decode(name);
    let api = w.api.clone();
    let Some(pr) = pr_mut(w, o, r, n) else {
        return not_found();
    };
    let before = pr.spec.labels.len();
    pr.spec.labels.retain(|l| *l != name);
    if pr.spec.labels.len() == before {
        return json_response(404, &json::error(404, "Label does not exist"));
    }
    let labels = pr.spec.labels.clone();
    let repo = &w.repos[&key(o, r)];
    let items: Vec<Value> = labels.iter().map(|l| json::label(&api, repo, l)).collect();
    json_response(200, &Value::Array(items))
}

/// `GET /collaborators/{user}/permission`: `role_name` is the role, `permission` its base
/// (`maintain` counts as `write`, `triage` as `read`, as on GitHub); 404 for an unknown user.
fn get_permission(w: &World, o: &str, r: &str, user: &str) -> Response {
    let Some(repo) = w.repos.get(&key(o, r)) else {
        return not_found();
    };
    let login = decode(user);
    let Some(role) = repo.roles.get(&login.to_ascii_lowercase()) else {
        return not_found();
    };
    json_response(200, &json::permission(&w.api, &login, role))
}

/// `GET /contents/{path}?ref=`: base64 content; 404 when the file is absent at that ref.
fn get_contents(w: &World, ctx: &Ctx, o: &str, r: &str, path: &str) -> Response {
    let Some(repo) = w.repos.get(&key(o, r)) else {
        return not_found();
    };
    let path = decode(path);
    let git_ref = ctx
        .param("ref")
        .unwrap_or_else(|| repo.default_branch.clone());
    match repo.contents.get(&(git_ref.clone(), path.clone())) {
        Some(content) => {
            json_response(200, &json::contents(&w.api, repo, &git_ref, &path, content))
        }
        None => json_response(
            404,
            &serde_json::json!({
                "message": "Not Found",
                "documentation_url": "https://docs.github.com/rest/repos/contents#get-repository-content",
                "status": "404",
            }),
        ),
    }
}

/// `GET /compare/{base}...{head}`: what `set_compare` stored; 404 otherwise.
fn get_compare(w: &World, o: &str, r: &str, spec: &str) -> Response {
    let Some(repo) = w.repos.get(&key(o, r)) else {
        return not_found();
    };
    let spec = decode(spec);
    let Some((base, head)) = spec.split_once("...") else {
        return not_found();
    };
    match repo.compares.get(&(base.to_owned(), head.to_owned())) {
        Some((status, files)) => {
            json_response(200, &json::compare(&w.api, repo, base, head, status, files))
        }
        None => not_found(),
    }
}

/// `POST /pulls/{n}/reviews` with GitHub's validation: one bad comment rejects the whole review
/// and nothing is stored.
fn create_review(
    w: &mut World,
    ctx: &Ctx,
    kind: &TokenKind,
    o: &str,
    r: &str,
    n: &str,
) -> Response {
    let author = match kind {
        TokenKind::User(login) | TokenKind::Installation(login) => login.clone(),
        TokenKind::ReadOnly => return json_response(403, &json::error(403, NOT_ACCESSIBLE)),
    };
    let Some((repo, pr)) = find_pr(w, o, r, n) else {
        return not_found();
    };
    let Ok(req) = serde_json::from_slice::<Value>(&ctx.body) else {
        return json_response(400, &json::error(400, "Problems parsing JSON"));
    };
    let review = match validate_review(&req, kind, &author, pr) {
        Ok(v) => v,
        Err(message) => return json_response(422, &json::unprocessable(&message)),
    };

    let (api, owner, name, number) = (
        w.api.clone(),
        repo.owner.clone(),
        repo.name.clone(),
        pr.spec.number,
    );
    let review_id = w.next_id();
    let comment_ids: Vec<u64> = review.anchors.iter().map(|_| w.next_id()).collect();
    let review_json = json::review(
        &api,
        &owner,
        &name,
        number,
        review_id,
        &author,
        &review.body,
        &review.commit_id,
        review.state,
    );
    let comments: Vec<Value> = review
        .anchors
        .iter()
        .zip(comment_ids)
        .map(|(a, id)| {
            json::review_comment(
                &api,
                &owner,
                &name,
                number,
                id,
                review_id,
                &author,
                &review.commit_id,
                a,
            )
        })
        .collect();
    let pr = pr_mut(w, o, r, n).expect("found above");
    pr.reviews.push(review_json.clone());
    pr.comments.extend(comments);
    json_response(200, &review_json)
}

/// A review request that passed validation.
struct ValidReview {
    state: &'static str,
    body: String,
    commit_id: String,
    anchors: Vec<json::Anchor>,
}

/// GitHub's checks on a new review, in roughly its order; `Err` is the 422 message.
fn validate_review(
    req: &Value,
    kind: &TokenKind,
    author: &str,
    pr: &Pr,
) -> Result<ValidReview, String> {
    let state = match req.get("event").and_then(Value::as_str) {
        None | Some("") => "PENDING",
        Some("COMMENT") => "COMMENTED",
        Some("APPROVE") => "APPROVED",
        Some("REQUEST_CHANGES") => "CHANGES_REQUESTED",
        Some(other) => return Err(format!("Event \"{other}\" is not a valid review event")),
    };
    let body = req
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if body.chars().count() > MAX_BODY_CHARS {
        return Err("Body is too long (maximum is 65536 characters)".to_owned());
    }
    if matches!(state, "COMMENTED" | "CHANGES_REQUESTED") && body.trim().is_empty() {
        return Err("Body can't be blank".to_owned());
    }
    if state == "APPROVED" && matches!(kind, TokenKind::Installation(_)) {
        return Err("GitHub Actions is not permitted to approve pull requests.".to_owned());
    }
    if author == pr.spec.author {
        match state {
            "APPROVED" => return Err("Can not approve your own pull request".to_owned()),
            "CHANGES_REQUESTED" => {
                return Err("Can not request changes on your own pull request".to_owned());
            }
            _ => {}
        }
    }
    let commit_id = match req.get("commit_id").and_then(Value::as_str) {
        Some(c) => c.to_owned(),
        None => pr.head_sha().to_owned(),
    };
    let Some(files) = pr.files_at(&commit_id) else {
        return Err("Commit id is not part of the pull request".to_owned());
    };
    let comments = match req.get("comments") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => return Err("Comments is not an array".to_owned()),
    };
    let anchors = comments
        .iter()
        .map(|c| resolve_comment(c, files))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ValidReview {
        state,
        body,
        commit_id,
        anchors,
    })
}

const PATH_INVALID: &str = "Pull request review thread path is invalid and Pull request review thread diff hunk can't be blank";
const LINE_UNRESOLVED: &str = "Line could not be resolved";

/// Anchors one comment of a review on the reviewed head's files, or says why GitHub would not.
fn resolve_comment(c: &Value, files: &[FileSpec]) -> Result<json::Anchor, String> {
    let body = c
        .get("body")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if body.chars().count() > MAX_BODY_CHARS {
        return Err("Body is too long (maximum is 65536 characters)".to_owned());
    }
    let path = c.get("path").and_then(Value::as_str).unwrap_or("");
    let file = files
        .iter()
        .find(|f| f.filename == path)
        .ok_or(PATH_INVALID)?;
    let patch = file.patch.as_deref().ok_or(LINE_UNRESOLVED)?;
    let hunks = hunks::parse(patch);

    let Some(line) = c.get("line").and_then(Value::as_u64) else {
        return resolve_position(c, path, patch, &hunks, body);
    };
    let side = match c.get("side").and_then(Value::as_str) {
        None => Side::Right,
        Some(s) => Side::parse(s).ok_or("Side is not included in the list")?,
    };
    let end_hunk = hunks
        .iter()
        .position(|h| h.contains(side, line))
        .ok_or(LINE_UNRESOLVED)?;
    let start = match c.get("start_line").and_then(Value::as_u64) {
        None => None,
        Some(start_line) => {
            let start_side = c
                .get("start_side")
                .and_then(Value::as_str)
                .ok_or("Start side can't be blank")?;
            let start_side =
                Side::parse(start_side).ok_or("Start side is not included in the list")?;
            if start_side == side && start_line >= line {
                return Err(
                    "Pull request review thread start line must precede the end line".to_owned(),
                );
            }
            let start_hunk = hunks
                .iter()
                .position(|h| h.contains(start_side, start_line))
                .ok_or(LINE_UNRESOLVED)?;
            if start_hunk != end_hunk {
                return Err(
                    "Pull request review thread start line must be part of the same hunk as the line."
                        .to_owned(),
                );
            }
            Some((start_line, start_side))
        }
    };
    let (position, diff_hunk) = hunks::locate(patch, &hunks[end_hunk], side, line);
    Ok(json::Anchor {
        path: path.to_owned(),
        line,
        side,
        start,
        position,
        diff_hunk,
        body,
    })
}

/// The legacy `position` anchor: an offset below the first `@@`, which must not land on a header.
fn resolve_position(
    c: &Value,
    path: &str,
    patch: &str,
    hunks: &[hunks::Hunk],
    body: String,
) -> Result<json::Anchor, String> {
    let position = c
        .get("position")
        .and_then(Value::as_u64)
        .ok_or(LINE_UNRESOLVED)?;
    let first = hunks.first().ok_or(LINE_UNRESOLVED)?.header;
    let index = first + position as usize;
    let hunk = hunks
        .iter()
        .find(|h| index > h.header && index < h.end)
        .ok_or(LINE_UNRESOLVED)?;
    let lines = hunks::lines(patch);
    // Walk the hunk to find the file line at `index`.
    let (mut old, mut new) = (hunk.old_start, hunk.new_start);
    for text in &lines[hunk.header + 1..index] {
        match text.as_bytes().first() {
            Some(b'+') => new += 1,
            Some(b'-') => old += 1,
            Some(b'\\') => {}
            _ => {
                old += 1;
                new += 1;
            }
        }
    }
    let (side, line) = if lines[index].starts_with('-') {
        (Side::Left, old)
    } else {
        (Side::Right, new)
    };
    Ok(json::Anchor {
        path: path.to_owned(),
        line,
        side,
        start: None,
        position,
        diff_hunk: lines[hunk.header..=index].join("\n"),
        body,
    })
}

/// Answers one page of `items` with GitHub's `Link` header (`per_page` ≤ 100, default 30).
fn paginate(w: &World, ctx: &Ctx, items: Vec<Value>) -> Response {
    let per_page = ctx
        .param("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100);
    let page = ctx
        .param("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let mut response = json_response(200, &Value::Array(slice));

    let url = |p: usize| {
        let mut pairs: Vec<String> = ctx
            .query
            .iter()
            .filter(|(k, _)| k != "page")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        pairs.push(format!("page={p}"));
        format!("<{}{}?{}>", ctx.origin(&w.api), ctx.path, pairs.join("&"))
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url((page - 1).min(last))));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    if !links.is_empty() {
        set_header(&mut response, "link", &links.join(", "));
    }
    response
}

fn find_pr<'w>(w: &'w World, o: &str, r: &str, n: &str) -> Option<(&'w Repo, &'w Pr)> {
    let repo = w.repos.get(&key(o, r))?;
    let pr = repo.prs.get(&n.parse().ok()?)?;
    Some((repo, pr))
}

fn pr_mut<'w>(w: &'w mut World, o: &str, r: &str, n: &str) -> Option<&'w mut Pr> {
    let n = n.parse().ok()?;
    w.pr_mut(&key(o, r), n)
}

fn key(o: &str, r: &str) -> String {
    super::repo_key(&format!("{}/{}", decode(o), decode(r)))
}

fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

fn secondary_body() -> Value {
    serde_json::json!({
        "message": SECONDARY_LIMIT,
        "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        "status": "403",
    })
}

fn not_found() -> Response {
    json_response(404, &json::error(404, "Not Found"))
}

/// `{"message": <reason phrase>}` for a bare status.
fn default_error(status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let reason = code.canonical_reason().unwrap_or("Server Error");
    json_response(status, &serde_json::json!({"message": reason}))
}

fn json_response(status: u16, body: &Value) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (code, body.to_string()).into_response();
    set_header(
        &mut response,
        "content-type",
        "application/json; charset=utf-8",
    );
    response
}

fn set_header(response: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, v);
    }
}
