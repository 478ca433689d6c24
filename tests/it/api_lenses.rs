//! API lenses through the real binary, against a scripted server that speaks Gemini's
//! `generateContent` and OpenAI's Chat Completions: a panel of a `gemini` lens reading the
//! checkout through its tools and an `openai` lens on a local server with a key variable of its
//! own; each call goes where its lens says with its own key, and `doctor` checks both without
//! calling them. Cross-examination is off here: the scripted server answers reviews only (the
//! verifier's calls are tested in `verify.rs`).

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b(x: u32) {}
 fn c() {}
";

const GEMINI_KEY: &str = "AIzaSy-gemini-key-for-the-fake-0123456789";
const LOCAL_KEY: &str = "local-server-key-5551212";
const OPENAI_KEY: &str = "sk-proj-the-vendor-key-never-sent-locally";
/// In the checkout only: the Gemini lens knows it only by reading the file.
const MARKER: &str = "CALLER_PASSES_TWO_ARGUMENTS_42";

/// One request as the server saw it; credentials are kept as "which one", never as text.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    /// `x-goog-api-key` held the Gemini key.
    goog_key: bool,
    /// `authorization` was `Bearer` with the local key, or with the vendor's.
    bearer_local: bool,
    bearer_vendor: bool,
    body: Value,
}

#[derive(Default)]
struct Log(Mutex<Vec<Seen>>);

/// A scripted API server on its own thread; it stops with the test process.
struct Server {
    addr: SocketAddr,
    log: Arc<Log>,
}

impl Server {
    fn start() -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let log = Arc::new(Log::default());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&log));
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        Server { addr, log }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.log.0.lock().expect("log").clone()
    }
}

async fn answer(
    State(log): State<Arc<Log>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri
        .path_and_query()
        .map_or(uri.path(), |p| p.as_str())
        .to_owned();
    let reply = match path.as_str() {
        "/v1beta/models/gemini-2.5-pro:generateContent" => gemini_turn(&body),
        "/local/v1/chat/completions" => Some(chat_answer()),
        _ => None,
    };
    log.0.lock().expect("log").push(Seen {
        path,
        goog_key: header("x-goog-api-key") == Some(GEMINI_KEY),
        bearer_local: header("authorization") == Some(&format!("Bearer {LOCAL_KEY}")),
        bearer_vendor: header("authorization") == Some(&format!("Bearer {OPENAI_KEY}")),
        body,
    });
    match reply {
        Some(v) => (StatusCode::OK, axum::Json(v)).into_response(),
        None => (StatusCode::NOT_FOUND, "no such route").into_response(),
    }
}

/// Gemini: first a call to read the caller, then (once its result is back) the finding.
fn gemini_turn(body: &Value) -> Option<Value> {
    let contents = body["contents"].as_array()?;
    let model_turns = contents.iter().filter(|c| c["role"] == "model").count();
    let parts = match model_turns {
        0 => json!([{"functionCall": {"id": "read-1", "name": "read_file",
            "args": {"path": "src/caller.rs", "start_line": null, "end_line": null}},
            "thoughtSignature": "c2ln"}]),
        1 => {
            let finding = json!({"findings": [{"path": "src/lib.rs", "line": 2,
                "start_line": null, "side": "RIGHT", "severity": "blocking",
                "confidence": "high", "title": "b's caller passes two arguments",
                "body": "src/caller.rs calls b(1, 2)."}],
                "summary": "Read src/caller.rs."});
            json!([{"text": finding.to_string()}])
        }
        _ => return None,
    };
    Some(json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 1200, "candidatesTokenCount": 40,
                          "thoughtsTokenCount": 10, "totalTokenCount": 1250},
        "modelVersion": "gemini-2.5-pro-002"
    }))
}

fn chat_answer() -> Value {
    let answer = json!({"findings": [{"path": "src/lib.rs", "line": 2, "start_line": null,
        "side": "RIGHT", "severity": "advisory", "confidence": "medium",
        "title": "x is unused", "body": "b never reads x."}], "summary": "Diff only."});
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen3-coder",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": answer.to_string()}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 30, "total_tokens": 930}
    })
}

fn config(dir: &Path, server: &Server) -> std::path::PathBuf {
    let path = dir.join("panel.toml");
    std::fs::write(
        &path,
        format!(
            "[[lens]]\nname = \"gem\"\nbackend = \"gemini\"\nmodel = \"gemini-2.5-pro\"\n\n\
             [[lens]]\nname = \"local\"\nbackend = \"openai\"\nmodel = \"qwen3-coder\"\n\
             base_url = \"{}/local/v1\"\napi_key_env = \"LOCAL_LLM_KEY\"\n\n\
             [review]\nlenses = [\"gem\", \"local\"]\n\n\
             [verify]\nmode = \"off\"\n",
            server.url()
        ),
    )
    .expect("config");
    path
}

fn reviewbot(dir: &Path, server: &Server, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .args(args)
        .current_dir(dir)
        .env("GEMINI_API_KEY", GEMINI_KEY)
        .env("GEMINI_BASE_URL", server.url())
        .env("LOCAL_LLM_KEY", LOCAL_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env_remove("OPENAI_BASE_URL")
        .env_remove("REVIEWBOT_CONFIG")
        .output()
        .expect("run reviewbot")
}

#[test]
fn a_gemini_lens_reads_the_checkout_beside_a_local_server_with_its_own_key() {
    let server = Server::start();
    let work = tempfile::tempdir().expect("dir");
    let config = config(work.path(), &server);
    let checkout = work.path().join("checkout");
    std::fs::create_dir_all(checkout.join("src")).expect("src");
    std::fs::write(
        checkout.join("src/lib.rs"),
        "fn a() {}\nfn b(x: u32) {}\nfn c() {}\n",
    )
    .expect("lib");
    std::fs::write(
        checkout.join("src/caller.rs"),
        format!("// {MARKER}\nfn main() {{ b(1, 2); }}\n"),
    )
    .expect("caller");
    let diff = work.path().join("change.diff");
    std::fs::write(&diff, DIFF).expect("diff");
    let o = reviewbot(
        work.path(),
        &server,
        &[
            "review",
            "--diff",
            &diff.display().to_string(),
            "--checkout",
            &checkout.display().to_string(),
            "--config",
            &config.display().to_string(),
            "--format",
            "json",
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");

    // Both lenses' findings, each under its lens.
    let titles: Vec<(&str, &str)> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["title"].as_str().unwrap_or(""),
                f["lenses"][0].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        titles.contains(&("b's caller passes two arguments", "gem")),
        "{titles:?}"
    );
    assert!(titles.contains(&("x is unused", "local")), "{titles:?}");

    let lenses = doc["lenses"].as_array().expect("lenses");
    let gem = lenses.iter().find(|l| l["lens"] == "gem").expect("gem");
    assert_eq!(gem["actual_backend"], "gemini");
    assert_eq!(gem["auth_class"], "api");
    assert_eq!(gem["status"], "ok");
    assert_eq!(gem["model"], "gemini-2.5-pro-002");
    assert_eq!(gem["tool_calls"], 1, "{gem:#}");
    // Two turns of 1,200 in and 50 out (thinking included).
    assert_eq!(
        gem["usage"],
        json!({"input_tokens": 2400, "output_tokens": 100})
    );
    let local = lenses.iter().find(|l| l["lens"] == "local").expect("local");
    assert_eq!(local["actual_backend"], "openai");
    assert_eq!(local["status"], "ok");

    let seen = server.seen();
    let gemini: Vec<&Seen> = seen.iter().filter(|s| s.path.contains("gemini")).collect();
    assert_eq!(gemini.len(), 2, "{seen:#?}");
    for s in &gemini {
        assert!(s.goog_key && !s.bearer_local && !s.bearer_vendor, "{s:?}");
        assert!(
            !s.path.contains(GEMINI_KEY) && !s.path.contains("key="),
            "{}",
            s.path
        );
    }
    // The read's result went back to the model: the file's text, as a functionResponse.
    let second = gemini[1].body.to_string();
    assert!(second.contains(MARKER), "{second}");
    assert!(second.contains("\"functionResponse\"") && second.contains("read-1"));
    let tools = &gemini[0].body["tools"][0]["functionDeclarations"];
    let mut names: Vec<&str> = tools
        .as_array()
        .expect("declarations")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["grep", "list_files", "read_file"]);

    // The local lens called its own server with its own key, never the vendor's.
    let locals: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.path.starts_with("/local/"))
        .collect();
    assert!(!locals.is_empty());
    assert!(
        locals
            .iter()
            .all(|s| s.bearer_local && !s.bearer_vendor && !s.goog_key)
    );
    // No key in what the user reads.
    let out = String::from_utf8_lossy(&o.stdout);
    for key in [GEMINI_KEY, LOCAL_KEY, OPENAI_KEY] {
        assert!(!out.contains(key) && !stderr.contains(key), "{key} leaked");
    }
}

#[test]
fn doctor_checks_each_api_lens_from_its_own_settings_without_calling_it() {
    let server = Server::start();
    let work = tempfile::tempdir().expect("dir");
    let config = config(work.path(), &server);
    let o = reviewbot(
        work.path(),
        &server,
        &["doctor", "--config", &config.display().to_string()],
    );
    let out = String::from_utf8_lossy(&o.stdout);
    let gem = out
        .lines()
        .find(|l| l.contains("lens gem"))
        .unwrap_or_default();
    assert!(
        gem.contains("gemini API at http://127.0.0.1") && gem.contains("GEMINI_API_KEY set"),
        "{out}"
    );
    let local = out
        .lines()
        .find(|l| l.contains("lens local"))
        .unwrap_or_default();
    assert!(
        local.contains("openai API at http://127.0.0.1") && local.contains("LOCAL_LLM_KEY set"),
        "{out}"
    );
    assert!(server.seen().is_empty(), "doctor called a model");
    for key in [GEMINI_KEY, LOCAL_KEY] {
        assert!(!out.contains(key));
    }
}
