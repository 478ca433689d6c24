//! Check runs as GitHub keeps them: created on a commit, updated by id, listed per commit, with
//! GitHub's 422s (a conclusion without `status: completed`, `completed` without a conclusion,
//! an unknown status or conclusion, more than 50 annotations in one request, an output without
//! title or summary). Only an App's token may write them: a personal token, the read-only fork
//! token, and every token while [`super::FakeGithub::forbid_checks`] is on, get 403.

use serde_json::{Value, json};

use super::TokenKind;
use super::world::World;

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
    pub annotations: Vec<Value>,
}

impl CheckRun {
    /// The run as the API shows it (with every annotation, which the real API lists apart).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "head_sha": self.head_sha,
            "external_id": self.external_id,
            "status": self.status,
            "conclusion": self.conclusion,
            "output": {
                "title": self.title,
                "summary": self.summary,
                "annotations_count": self.annotations.len(),
            },
            "annotations": self.annotations,
        })
    }
}

/// `(status, body)` for `POST /repos/{o}/{r}/check-runs`.
pub(super) fn create(w: &mut World, kind: &TokenKind, repo: &str, body: &[u8]) -> (u16, Value) {
    if let Some(refused) = refused(w, kind) {
        return refused;
    }
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return (400, error(400, "Problems parsing JSON"));
    };
    let text = |k: &str| req.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (name, head_sha) = (text("name"), text("head_sha"));
    if name.is_empty() {
        return (422, invalid("name wasn't supplied."));
    }
    if head_sha.len() != 40 || !head_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return (
            422,
            invalid(&format!("No commit found for SHA: {head_sha}")),
        );
    }
    let mut run = CheckRun {
        id: w.next_id(),
        repo: repo.to_owned(),
        name,
        head_sha,
        external_id: text("external_id"),
        status: "queued".to_owned(),
        conclusion: None,
        title: String::new(),
        summary: String::new(),
        annotations: Vec::new(),
    };
    if let Err(message) = apply(&mut run, &req) {
        return (422, invalid(&message));
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
    if let Some(refused) = refused(w, kind) {
        return refused;
    }
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
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
    if let Err(message) = apply(&mut next, &req) {
        return (422, invalid(&message));
    }
    *run = next;
    (200, run.to_json())
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

/// 403 for a token that may not write check runs.
fn refused(w: &World, kind: &TokenKind) -> Option<(u16, Value)> {
    let message = match kind {
        _ if w.checks_forbidden => "Resource not accessible by integration",
        TokenKind::ReadOnly => "Resource not accessible by integration",
        TokenKind::User(_) => "You must authenticate via a GitHub App.",
        TokenKind::Installation(_) => return None,
    };
    Some((403, error(403, message)))
}

/// Applies a create or update request to `run`, with GitHub's rules; `Err` is the 422 message.
fn apply(run: &mut CheckRun, req: &Value) -> Result<(), String> {
    let status = match req.get("status") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().filter(|s| STATUSES.contains(s)) {
            Some(s) => Some(s.to_owned()),
            None => return Err(format!("Invalid value for status: {v}")),
        },
    };
    let conclusion = match req.get("conclusion") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().filter(|s| CONCLUSIONS.contains(s)) {
            Some(s) => Some(s.to_owned()),
            None => return Err(format!("Invalid value for conclusion: {v}")),
        },
    };
    if conclusion.is_some() && status.as_deref() != Some("completed") {
        return Err("Conclusion can only be set when status is completed".to_owned());
    }
    if status.as_deref() == Some("completed") && conclusion.is_none() {
        return Err("Conclusion must be set when status is completed".to_owned());
    }
    if run.status == "completed" && status.as_deref().is_some_and(|s| s != "completed") {
        return Err(
            "A completed check run cannot go back to ".to_owned() + &status.unwrap_or_default()
        );
    }
    if let Some(output) = req.get("output") {
        let field = |k: &str| output.get(k).and_then(Value::as_str);
        let (Some(title), Some(summary)) = (field("title"), field("summary")) else {
            return Err("Output must have a title and a summary".to_owned());
        };
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
                "Only {MAX_ANNOTATIONS} annotations are allowed per request; {} were sent",
                annotations.len()
            ));
        }
        for a in &annotations {
            check_annotation(a)?;
        }
        run.title = title.to_owned();
        run.summary = summary.to_owned();
        run.annotations.extend(annotations);
    }
    if let Some(status) = status {
        run.status = status;
    }
    if conclusion.is_some() {
        run.conclusion = conclusion;
    }
    Ok(())
}

fn check_annotation(a: &Value) -> Result<(), String> {
    let text = |k: &str| a.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let line = |k: &str| a.get(k).and_then(Value::as_u64).filter(|n| *n >= 1);
    if text("path").is_none() || text("message").is_none() {
        return Err("An annotation needs a path and a message".to_owned());
    }
    let (Some(start), Some(end)) = (line("start_line"), line("end_line")) else {
        return Err("An annotation needs start_line and end_line".to_owned());
    };
    if start > end {
        return Err("An annotation's start_line is after its end_line".to_owned());
    }
    match text("annotation_level") {
        Some("notice" | "warning" | "failure") => Ok(()),
        other => Err(format!("Invalid annotation_level: {other:?}")),
    }
}

fn error(status: u16, message: &str) -> Value {
    super::json::error(status, message)
}

/// The checks API's 422: `message` says what is wrong.
fn invalid(message: &str) -> Value {
    json!({
        "message": message,
        "documentation_url": "https://docs.github.com/rest/checks/runs",
        "status": "422",
    })
}
