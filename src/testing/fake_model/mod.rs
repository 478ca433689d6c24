//! A scripted model on 127.0.0.1 for tests: it speaks Anthropic Messages (streaming and not),
//! OpenAI Responses (streaming), OpenAI Chat Completions and Gemini `generateContent`, answers from a script of turns and
//! logs every request, so that a test can drive a real agent CLI through real tool loops with no
//! network and then prove from the log what the CLI advertised and sent back.
//!
//! Turn `i` answers a conversation that already holds `i` model turns (see [`wire`]), so
//! retries, sub-agents and parallel requests never shift the script.
//!
//! `real_claude` and `real_codex` run the real CLIs as the `claude-cli` and `codex-cli` lenses
//! run them (`agent_cli::run`) against this fake. What they did (claude 2.1.197, codex 0.171.0;
//! the tests assert all of it):
//!
//! - Claude sends `HEAD /`, then one `POST /v1/messages?beta=true` (`"stream": true`) per model
//!   turn, advertising exactly `Grep, Read` over a snapshot and no tool without one. A `Read`
//!   outside the cwd, through a symlink to a file or through a symlinked directory is refused
//!   with the `dontAsk` text and listed in the result's `permission_denials`; the run still
//!   succeeds. A hard link to an outside file is read (the check is on the path). `Grep` for the
//!   outside text answers "No files found". `Write`/`Bash` answer "No such tool available". No
//!   hook ran, no MCP server was spawned, and no `CLAUDE.md`, `CLAUDE.local.md` or settings text
//!   reached a request. `Glob` with an absolute pattern lists names anywhere, hence its absence.
//! - Claude's result: one object; `result` is the final text verbatim. `num_turns` is not the
//!   number of model requests (10 for 2 requests with 9 parallel calls): do not read it. An HTTP
//!   400 gives exit 1, `is_error: true`, `api_error_status: 400`, `result: "API Error: 400 …"`;
//!   `--max-turns 2` stops after 2 requests with exit 1 and `subtype: "error_max_turns"`.
//! - Codex sends one `POST /v1/responses` (`stream: true`) per turn and nothing else; the body
//!   has no `instructions` key, and `--output-schema` arrives verbatim as `text.format`
//!   (`json_schema`, `strict: true`). Tools: `exec_command`, `write_stdin`,
//!   `request_user_input`, `view_image`. Under the lens's permission profile, `cat` of an
//!   outside path, a symlink out, a symlinked directory or `$CODEX_HOME/auth.json` says "No such
//!   file or directory"; a hard link is read; `touch` fails "Read-only file system"; `env` holds
//!   no provider key.
//! - Codex's JSONL is not a complete record of commands: a command whose failure reads as a
//!   sandbox denial ("Read-only file system") is sometimes missing from stdout altogether (no
//!   `item.started` either; missing in every unloaded run, present under load) although the
//!   model got its output. The answer is the last `agent_message`, usage is `turn.completed`'s;
//!   the count of `command_execution` items is a sample.
//! - Without user namespaces, every Codex command fails with `bwrap: Creating new namespace
//!   failed…` (exit 1, that item did appear), the turn completes and the process exits 0 with
//!   the model's answer: only the probe (`codex sandbox -- true`, exit 1, its stderr led by a
//!   warning when `CODEX_HOME` is under `/tmp`) or a `bwrap:` item output tells. An HTTP 400
//!   gives exit 1, an `error` event and `turn.failed` whose message is the provider's error body
//!   re-encoded as JSON.

mod real_claude;
mod real_codex;
mod real_verify;
pub(crate) mod snapshot;
mod tests;
mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

pub(crate) use wire::Api;

/// One tool call the model makes. The `id` is the test's own name for the call; each API gets
/// it with its usual prefix (`toolu_`, `call_`), and the log strips the prefix again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) input: Value,
}

impl ToolCall {
    pub(crate) fn new(id: &str, name: &str, input: Value) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        }
    }
}

/// An HTTP error the model answers with instead of a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    /// The provider's error type, e.g. `overloaded_error`, `invalid_request_error`.
    pub(crate) kind: String,
    pub(crate) message: String,
}

/// One model turn: optional text, then tool calls (none makes it the final turn), or an error.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Turn {
    pub(crate) text: Option<String>,
    pub(crate) calls: Vec<ToolCall>,
    pub(crate) error: Option<ApiError>,
}

impl Turn {
    /// A final answer.
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Tool calls, made together (in parallel) in one turn.
    pub(crate) fn calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            calls: calls.into_iter().collect(),
            ..Self::default()
        }
    }

    pub(crate) fn error(status: u16, kind: &str, message: &str) -> Self {
        Self {
            error: Some(ApiError {
                status,
                kind: kind.to_owned(),
                message: message.to_owned(),
            }),
            ..Self::default()
        }
    }

    /// Text said before the calls.
    pub(crate) fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }
}

/// What a CLI sent back for one tool call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolResult {
    /// The call's id, without the API's prefix.
    pub(crate) id: String,
    pub(crate) text: String,
    pub(crate) is_error: bool,
}

/// One request as the fake saw it. Auth headers are logged by name only: their values are never
/// kept, so no assertion message can show them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Logged {
    pub(crate) method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub(crate) path: String,
    /// Header names, lowercase, in the order sent.
    pub(crate) header_names: Vec<String>,
    /// Values of headers that carry no credential.
    header_values: Vec<(String, String)>,
    /// Which API the path named (`None` for anything else, e.g. `HEAD /`).
    pub(crate) api: Option<Api>,
    pub(crate) stream: bool,
    pub(crate) model: Option<String>,
    /// Model turns already in the conversation: the script turn this request got.
    pub(crate) model_turns: usize,
    /// Names of the tools the request advertised (a tool with no name by its `type`).
    pub(crate) tools: Vec<String>,
    pub(crate) tool_results: Vec<ToolResult>,
    /// System prompt, instructions and developer messages, joined.
    pub(crate) system: String,
    /// Text of the user messages (not tool results).
    pub(crate) user_text: Vec<String>,
    /// The body as sent.
    pub(crate) body: String,
    /// The status the fake answered with.
    pub(crate) status: u16,
}

impl Logged {
    /// The value of a header that carries no credential (`None` for auth headers, always).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.header_values
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Whether a header may carry a credential: its value is never logged.
fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "cookie"
        || ["auth", "key", "token", "secret"]
            .iter()
            .any(|w| name.contains(w))
}

struct Shared {
    turns: Vec<Turn>,
    log: Mutex<Vec<Logged>>,
}

/// A running fake model; it stops when dropped.
pub(crate) struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeModel {
    /// Starts the fake on 127.0.0.1 (a free port), on its own thread and tokio runtime, so that
    /// synchronous tests can use it too.
    pub(crate) fn start(turns: Vec<Turn>) -> FakeModel {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind fake model");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            turns,
            log: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("fake-model".to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("fake model runtime");
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                    // Not a graceful shutdown: a CLI's idle keep-alive connection must not hold
                    // the test up; dropping the runtime ends every connection.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = rx => {}
                    }
                });
            })
            .expect("spawn fake model thread");
        FakeModel {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>` (no trailing slash): Anthropic's base URL.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:<port>/v1`: an OpenAI-style base URL.
    pub(crate) fn v1_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    fn log(&self) -> MutexGuard<'_, Vec<Logged>> {
        self.shared.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every request so far, in arrival order.
    pub(crate) fn requests(&self) -> Vec<Logged> {
        self.log().clone()
    }

    /// The requests to a model API (not `HEAD /` and the like).
    pub(crate) fn model_requests(&self) -> Vec<Logged> {
        self.log()
            .iter()
            .filter(|r| r.api.is_some())
            .cloned()
            .collect()
    }

    /// Every tool result sent back, in arrival order (a result re-sent in later requests of the
    /// same conversation appears once).
    pub(crate) fn tool_results(&self) -> Vec<ToolResult> {
        let mut out: Vec<ToolResult> = Vec::new();
        for r in self.log().iter() {
            for t in &r.tool_results {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        out
    }

    /// The result of the call named `id`, if one came back.
    pub(crate) fn tool_result(&self, id: &str) -> Option<ToolResult> {
        self.tool_results().into_iter().find(|t| t.id == id)
    }

    /// The first tool result whose text contains `needle`.
    pub(crate) fn tool_result_containing(&self, needle: &str) -> Option<ToolResult> {
        self.tool_results()
            .into_iter()
            .find(|t| t.text.contains(needle))
    }

    /// Every request and tool result, one line each, shortened: for a test's `--nocapture`.
    pub(crate) fn summary(&self) -> String {
        let mut out = String::new();
        for r in self.requests() {
            out.push_str(&format!(
                "{} {} -> {} tools={:?} turns={} stream={}\n",
                r.method, r.path, r.status, r.tools, r.model_turns, r.stream
            ));
        }
        for t in self.tool_results() {
            let text = crate::chars::head(&t.text, 300);
            out.push_str(&format!("result {} error={}: {text:?}\n", t.id, t.is_error));
        }
        out
    }

    /// Paths of the requests whose body contains `needle` anywhere (prompt, tools, results).
    pub(crate) fn bodies_containing(&self, needle: &str) -> Vec<String> {
        self.log()
            .iter()
            .filter(|r| r.body.contains(needle))
            .map(|r| r.path.clone())
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut logged = Logged {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
        body: String::from_utf8_lossy(&body).into_owned(),
        ..Logged::default()
    };
    for (name, value) in &headers {
        logged.header_names.push(name.as_str().to_owned());
        if !is_secret_header(name.as_str()) {
            logged.header_values.push((
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            ));
        }
    }
    let response = respond(&shared, &method, uri.path(), &body, &mut logged);
    logged.status = response.status().as_u16();
    shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(logged);
    response
}

fn respond(
    shared: &Shared,
    method: &Method,
    path: &str,
    body: &[u8],
    logged: &mut Logged,
) -> Response {
    // Claude Code checks the base URL is reachable before its first request.
    if method == Method::HEAD && path == "/" {
        return StatusCode::OK.into_response();
    }
    let Some(api) = Api::from_path(path).filter(|_| method == Method::POST) else {
        return (StatusCode::NOT_FOUND, "fake model: no such route").into_response();
    };
    logged.api = Some(api);
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            let err = ApiError {
                status: 400,
                kind: "invalid_request_error".to_owned(),
                message: format!("fake model: the body is not JSON: {e}"),
            };
            return error_response(api, &err);
        }
    };
    let mut seen = wire::read_request(api, &request);
    if api == Api::Gemini {
        seen.model = Api::gemini_model(path).map(str::to_owned);
    }
    logged.stream = seen.stream;
    logged.model = seen.model.clone();
    logged.model_turns = seen.model_turns;
    logged.tools = seen.tools;
    logged.tool_results = seen.tool_results;
    logged.system = seen.system;
    logged.user_text = seen.user_text;

    let Some(turn) = shared.turns.get(seen.model_turns) else {
        let err = ApiError {
            status: 400,
            kind: "invalid_request_error".to_owned(),
            message: format!(
                "fake model: the script has {} turns; none for a conversation with {} model turns",
                shared.turns.len(),
                seen.model_turns
            ),
        };
        return error_response(api, &err);
    };
    if let Some(err) = &turn.error {
        return error_response(api, err);
    }
    let model = seen.model.as_deref().unwrap_or("fake-model");
    let reply = wire::Reply {
        turn,
        number: seen.model_turns,
        model,
        input_tokens: u64::try_from(body.len() / 4).unwrap_or(u64::MAX),
    };
    match (api, seen.stream) {
        (Api::Anthropic, true) => sse(wire::anthropic_events(&reply)),
        (Api::Anthropic, false) => json(StatusCode::OK, &wire::anthropic_message(&reply)),
        (Api::Responses, true) => sse(wire::responses_events(&reply)),
        (Api::Responses, false) => json(StatusCode::OK, &wire::responses_object(&reply)),
        (Api::Chat, false) => json(StatusCode::OK, &wire::chat_completion(&reply)),
        (Api::Gemini, _) => json(StatusCode::OK, &wire::gemini_response(&reply)),
        (Api::Chat, true) => error_response(
            api,
            &ApiError {
                status: 400,
                kind: "invalid_request_error".to_owned(),
                message: "fake model: streaming chat completions are not scripted".to_owned(),
            },
        ),
    }
}

fn error_response(api: Api, err: &ApiError) -> Response {
    let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json(status, &wire::error_body(api, err))
}

fn json(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            // Anthropic's clients log it; harmless elsewhere.
            (header::HeaderName::from_static("request-id"), "req_fake"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A whole event stream at once: clients parse SSE the same whether it trickles or not.
fn sse(events: Vec<(&'static str, Value)>) -> Response {
    let mut text = String::new();
    for (event, data) in events {
        text.push_str("event: ");
        text.push_str(event);
        text.push_str("\ndata: ");
        text.push_str(&data.to_string());
        text.push_str("\n\n");
    }
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from(text),
    )
        .into_response()
}
