//! Check runs as GitHub keeps them: created on a commit, updated by id, listed per commit, with
//! GitHub's 422s (a conclusion with a status other than `completed`, `completed` without a
//! conclusion, an unknown status or conclusion, more than 50 annotations in one request, an
//! output without title or summary). A conclusion sent without a status completes the run, as
//! GitHub's docs say. Only an App's token may write them: a personal token, the read-only fork
//! token, and every token while [`super::FakeGithub::forbid_checks`] is on, get 403.
//!
//! A 422 is shaped as GitHub's checks API sends one: no `errors` array, `message` is
//! `Invalid request.` then a blank line and what is wrong (`No more than 50 items are allowed;
//! 51 were supplied.`), and `documentation_url` names the endpoint. Every write, refused or
//! not, is kept in [`World::check_run_writes`] so a test can see each request's share.

use serde_json::{Value, json};

use std::time::SystemTime;

use super::TokenKind;
use super::world::{World, timestamp};

/// GitHub's cap on annotations per request.
pub(super) const MAX_ANNOTATIONS: usize = 50;
const STATUSES: [&str; 3] = ["queued", "in_progress", "completed"];
/// What a client may set (`stale` is GitHub's own).
const CONCLUSIONS: [&str; 7] = [
    "action_required",
    "cancelled",
    "failure",
    "neutral",
    "success",
    "skipped",
    "timed_out",
];

/// One check-run write as the fake received it (refused ones too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunWrite {
    pub repo: String,
    /// `POST` (create) or `PATCH` (update).
    pub method: &'static str,
    /// The run written; `None` for a create that was refused.
    pub run: Option<u64>,
    /// The `status` and `conclusion` the request asked for.
    pub status: Option<String>,
    pub conclusion: Option<String>,
    /// How many annotations the request carried.
    pub annotations: usize,
    /// The status answered.
    pub answered: u16,
}

/// One stored check run.
#[derive(Debug, Clone)]
pub(super) struct CheckRun {
    pub id: u64,
    pub repo: String,
    pub name: String,
    pub head_sha: String,
    pub external_id: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<Value>,
    pub details_url: String,
    pub started_at: String,
    pub completed_at: Option<String>,
    /// The run's URL on the API.
    pub url: String,
    /// The App that created it (`integration`).
    pub app: Value,
}

impl CheckRun {
    /// The run as the API shows it (with every annotation, which the real API lists apart).
    pub fn to_json(&self) -> Value {
        let (owner_name, id) = (&self.repo, self.id);
        json!({
            "id": id,
            "node_id": super::json::node_id("CheckRun", id),
            "name": self.name,
            "head_sha": self.head_sha,
            "external_id": self.external_id,
            "url": self.url,
            "html_url": format!("https://github.com/{owner_name}/runs/{id}"),
            "details_url": self.details_url,
            "status": self.status,
            "conclusion": self.conclusion,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "output": {
                "title": self.title,
                "summary": self.summary,
                "text": self.text,
                "annotations_count": self.annotations.len(),
                "annotations_url": format!("{}/annotations", self.url),
            },
            "check_suite": {"id": super::json::user_id(&format!("suite:{}", self.head_sha))},
            "app": self.app,
            "pull_requests": [],
            "annotations": self.annotations,
        })
    }
}

const CREATE_DOCS: &str = "https://docs.github.com/rest/checks/runs#create-a-check-run";
const UPDATE_DOCS: &str = "https://docs.github.com/rest/checks/runs#update-a-check-run";

/// `(status, body)` for `POST /repos/{o}/{r}/check-runs`.
pub(super) fn create(w: &mut World, kind: &TokenKind, repo: &str, body: &[u8]) -> (u16, Value) {
    let req = serde_json::from_slice::<Value>(body).ok();
    let (status, answer) = create_run(w, kind, repo, req.as_ref());
    let run = (status == 201).then(|| answer["id"].as_u64()).flatten();
    record(w, repo, "POST", run, req.as_ref(), status);
    (status, answer)
}

fn create_run(w: &mut World, kind: &TokenKind, repo: &str, req: Option<&Value>) -> (u16, Value) {
    if let Some(refused) = refused(w, kind, CREATE_DOCS) {
        return refused;
    }
    let Some(req) = req else {
        return (400, error(400, "Problems parsing JSON"));
    };
    let text = |k: &str| req.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (name, head_sha) = (text("name"), text("head_sha"));
    if name.is_empty() {
        return (422, invalid(CREATE_DOCS, "\"name\" wasn't supplied."));
    }
    if head_sha.len() != 40 || !head_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        let message = format!("No commit found for SHA: {head_sha}");
        return (422, docs_error(422, &message, CREATE_DOCS));
    }
    let id = w.next_id();
    let mut run = CheckRun {
        id,
        repo: repo.to_owned(),
        name,
        head_sha,
        external_id: text("external_id"),
        status: "queued".to_owned(),
        conclusion: None,
        title: String::new(),
        summary: String::new(),
        text: None,
        annotations: Vec::new(),
        // GitHub's default: the App's homepage.
        details_url: "https://example.com".to_owned(),
        started_at: timestamp(SystemTime::now()),
        completed_at: None,
        url: format!("{}/repos/{repo}/check-runs/{id}", w.api),
        app: creator(w, kind),
    };
    if let Err(message) = apply(&mut run, req) {
        return (422, invalid(CREATE_DOCS, &message));
    }
    let shown = run.to_json();
    w.check_runs.push(run);
    (201, shown)
}

/// `(status, body)` for `PATCH /repos/{o}/{r}/check-runs/{id}`: annotations are added to the
/// run's own.
pub(super) fn update(
    w: &mut World,
    kind: &TokenKind,
    repo: &str,
    id: &str,
    body: &[u8],
) -> (u16, Value) {
    let req = serde_json::from_slice::<Value>(body).ok();
    let (status, answer) = update_run(w, kind, repo, id, req.as_ref());
    record(w, repo, "PATCH", id.parse().ok(), req.as_ref(), status);
    (status, answer)
}

fn update_run(
    w: &mut World,
    kind: &TokenKind,
    repo: &str,
    id: &str,
    req: Option<&Value>,
) -> (u16, Value) {
    if let Some(refused) = refused(w, kind, UPDATE_DOCS) {
        return refused;
    }
    let Some(req) = req else {
        return (400, error(400, "Problems parsing JSON"));
    };
    let Some(run) = w
        .check_runs
        .iter_mut()
        .find(|r| r.repo == repo && Some(r.id) == id.parse().ok())
    else {
        return (404, error(404, "Not Found"));
    };
    // Validated on a copy: a refused request changes nothing.
    let mut next = run.clone();
    if let Err(message) = apply(&mut next, req) {
        return (422, invalid(UPDATE_DOCS, &message));
    }
    *run = next;
    (200, run.to_json())
}

fn record(
    w: &mut World,
    repo: &str,
    method: &'static str,
    run: Option<u64>,
    req: Option<&Value>,
    answered: u16,
) {
    let field = |k: &str| {
        req.and_then(|r| r.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let annotations = req
        .and_then(|r| r.pointer("/output/annotations"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    w.check_run_writes.push(CheckRunWrite {
        repo: repo.to_owned(),
        method,
        run,
        status: field("status"),
        conclusion: field("conclusion"),
        annotations,
        answered,
    });
}

/// `GET /repos/{o}/{r}/commits/{ref}/check-runs`: `check_name` narrows by name; `filter=latest`
/// (the default) keeps the newest run of each name.
pub(super) fn list(w: &World, repo: &str, sha: &str, name: Option<&str>, filter: &str) -> Value {
    let mut runs: Vec<&CheckRun> = w
        .check_runs
        .iter()
        .filter(|r| r.repo == repo && r.head_sha == sha && name.is_none_or(|n| r.name == n))
        .collect();
    runs.sort_by_key(|r| std::cmp::Reverse(r.id));
    if filter != "all" {
        let mut seen = std::collections::HashSet::new();
        runs.retain(|r| seen.insert(r.name.clone()));
    }
    let shown: Vec<Value> = runs.iter().map(|r| r.to_json()).collect();
    json!({"total_count": shown.len(), "check_runs": shown})
}

/// The App whose installation token `kind` is: the registered App, or one named after the bot.
fn creator(w: &World, kind: &TokenKind) -> Value {
    let login = match kind {
        TokenKind::Installation(login) | TokenKind::User(login) => login.as_str(),
        TokenKind::ReadOnly => "github-actions[bot]",
    };
    let slug = login.strip_suffix("[bot]").unwrap_or(login);
    match &w.app {
        Some(app) if app.slug == slug => {
            super::json::integration(&w.api, app.id, &app.slug, &app.client_id)
        }
        _ => {
            let id = super::json::user_id(&format!("app:{slug}"));
            super::json::integration(&w.api, id, slug, &format!("Iv23fake{id}"))
        }
    }
}

/// 403 for a token that may not write check runs.
fn refused(w: &World, kind: &TokenKind, docs: &str) -> Option<(u16, Value)> {
    let message = match kind {
        _ if w.checks_forbidden => "Resource not accessible by integration",
        TokenKind::ReadOnly => "Resource not accessible by integration",
        TokenKind::User(_) => "You must authenticate via a GitHub App.",
        TokenKind::Installation(_) => return None,
    };
    Some((403, docs_error(403, message, docs)))
}

/// Applies a create or update request to `run`, with GitHub's rules; `Err` is the 422 message.
fn apply(run: &mut CheckRun, req: &Value) -> Result<(), String> {
    let status = match req.get("status") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().filter(|s| STATUSES.contains(s)) {
            Some(s) => Some(s.to_owned()),
            None => return Err(not_one_of("status", v, &STATUSES)),
        },
    };
    let conclusion = match req.get("conclusion") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().filter(|s| CONCLUSIONS.contains(s)) {
            Some(s) => Some(s.to_owned()),
            None => return Err(not_one_of("conclusion", v, &CONCLUSIONS)),
        },
    };
    // GitHub's docs: "Providing `conclusion` will automatically set the `status` parameter to
    // `completed`". Another status beside it is refused.
    let status = match (status, &conclusion) {
        (None, Some(_)) => Some("completed".to_owned()),
        (Some(s), Some(_)) if s != "completed" => {
            return Err(format!("Conclusion cannot be set when status is {s}"));
        }
        (status, _) => status,
    };
    if status.as_deref() == Some("completed") && conclusion.is_none() {
        return Err("Conclusion must be set when status is completed".to_owned());
    }
    if run.status == "completed" && status.as_deref().is_some_and(|s| s != "completed") {
        return Err(
            "A completed check run cannot go back to ".to_owned() + &status.unwrap_or_default()
        );
    }
    if let Some(output) = req.get("output") {
        if let Some(missing) = unsupplied(output, &["summary", "title"]) {
            return Err(missing);
        }
        let field = |k: &str| output.get(k).and_then(Value::as_str).unwrap_or_default();
        let (title, summary) = (field("title"), field("summary"));
        if summary.chars().count() > 65_535 {
            return Err("Output summary is too long (maximum is 65535 characters)".to_owned());
        }
        let annotations = match output.get("annotations") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err("Annotations is not an array".to_owned()),
        };
        if annotations.len() > MAX_ANNOTATIONS {
            return Err(format!(
                "No more than {MAX_ANNOTATIONS} items are allowed; {} were supplied.",
                annotations.len()
            ));
        }
        let problems: Vec<String> = annotations.iter().filter_map(check_annotation).collect();
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        run.title = title.to_owned();
        run.summary = summary.to_owned();
        run.text = output
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_owned);
        run.annotations.extend(annotations);
    }
    let time = |k: &str| req.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(url) = time("details_url") {
        run.details_url = url;
    }
    if let Some(started) = time("started_at") {
        run.started_at = started;
    }
    if let Some(status) = status {
        if status == "completed" && run.completed_at.is_none() {
            run.completed_at =
                Some(time("completed_at").unwrap_or_else(|| timestamp(SystemTime::now())));
        }
        run.status = status;
    }
    if conclusion.is_some() {
        run.conclusion = conclusion;
    }
    Ok(())
}

/// What is wrong with one annotation, in GitHub's words: the missing keys, alphabetically
/// (`"annotation_level", "path" weren't supplied.`), else the bad value.
fn check_annotation(a: &Value) -> Option<String> {
    let required = [
        "annotation_level",
        "end_line",
        "message",
        "path",
        "start_line",
    ];
    if let Some(missing) = unsupplied(a, &required) {
        return Some(missing);
    }
    let line = |k: &str| a.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (start, end) = (line("start_line"), line("end_line"));
    if start == 0 || end == 0 || start > end {
        return Some(format!(
            "Invalid lines: start_line {start}, end_line {end} (lines start at 1, start_line <= end_line)."
        ));
    }
    let level = &a["annotation_level"];
    match level.as_str() {
        Some("notice" | "warning" | "failure") => None,
        _ => Some(not_one_of(
            "annotations/annotation_level",
            level,
            &["notice", "warning", "failure"],
        )),
    }
}

/// The keys of `keys` (in alphabetical order) that `v` lacks, as GitHub words them:
/// `"path" wasn't supplied.`, `"annotation_level", "path" weren't supplied.`.
fn unsupplied(v: &Value, keys: &[&str]) -> Option<String> {
    let present = |k: &str| matches!(v.get(k), Some(Value::String(_) | Value::Number(_)));
    let missing: Vec<String> = keys
        .iter()
        .filter(|k| !present(k))
        .map(|k| format!("\"{k}\""))
        .collect();
    match missing.len() {
        0 => None,
        1 => Some(format!("{} wasn't supplied.", missing[0])),
        _ => Some(format!("{} weren't supplied.", missing.join(", "))),
    }
}

/// A JSON-schema enum miss as GitHub words one.
fn not_one_of(field: &str, value: &Value, allowed: &[&str]) -> String {
    let allowed: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        "For 'properties/{field}', {value} is not one of [{}].",
        allowed.join(", ")
    )
}

fn error(status: u16, message: &str) -> Value {
    super::json::error(status, message)
}

/// An error whose `documentation_url` names the endpoint, as the checks API's do.
fn docs_error(status: u16, message: &str, docs: &str) -> Value {
    json!({"message": message, "documentation_url": docs, "status": status.to_string()})
}

/// The checks API's 422 for a request that breaks its rules: `Invalid request.`, a blank line,
/// then what is wrong; no `errors` array.
fn invalid(docs: &str, detail: &str) -> Value {
    docs_error(422, &format!("Invalid request.\n\n{detail}"), docs)
}
