//! The API lenses' tool loop against scripted fakes of both wire formats: the model reads the
//! snapshot through reviewbot's own tools, never outside it; the budget ends a model that keeps
//! asking; a server without tools gets the diff alone.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::lens::anthropic::Anthropic;
use crate::lens::gemini::Gemini;
use crate::lens::openai::Openai;
use crate::lens::tools::BUDGET_SPENT;
use crate::lens::tools::tests::{COSTLY, costly_text};
use crate::testing::api_server::{FakeServer, Reply, fast_policy};
use crate::testing::fake_model::{FakeModel, ToolCall as Scripted, Turn};

const KEY: &str = "sk-test-key-for-the-fake-0123456789";
const MARKER: &str = "UNDIFFED_CALLER_MARKER_51";
const SECRET: &str = "OUTSIDE_SECRET_MARKER_77";
const LENS_JSON: &str = r#"{"findings":[{"path":"src/lib.rs","line":2,"start_line":null,"side":"RIGHT","severity":"advisory","confidence":"high","title":"b breaks its caller","body":"src/caller.rs calls b with two arguments."}],"summary":"Read src/caller.rs."}"#;

/// A snapshot with a file in no diff, and a secret beside it (outside the root).
struct Snapshot {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
}

/// A snapshot root holding `files` (path, content).
fn snapshot_of(files: &[(&str, String)]) -> Snapshot {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("snap");
    for (path, body) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(path, body).expect("file");
    }
    Snapshot { _dir: dir, root }
}

fn snapshot() -> Snapshot {
    let snap = snapshot_of(&[("src/caller.rs", format!("// {MARKER}\nb(1, 2);\n"))]);
    let outside = snap._dir.path().join("secret.txt");
    std::fs::write(&outside, SECRET).expect("secret");
    std::os::unix::fs::symlink(outside, snap.root.join("link")).expect("ln");
    snap
}

fn request(checkout: Option<&Path>) -> LensRequest {
    let mut req = crate::testing::fake_cli::request("Review this change.");
    req.checkout = checkout.map(Arc::from);
    req
}

fn spec(kind: BackendKind) -> LensSpec {
    let mut spec = LensSpec::new("api", kind);
    spec.model = Some("model-1".to_owned());
    spec
}

fn env(base: String) -> ApiEnv {
    ApiEnv::new(
        crate::lens::keys::EnvVars {
            key: "KEY",
            base_url: "BASE",
        },
        Some(KEY.to_owned()),
        Some(base),
    )
}

/// Reads inside, outside by `..`, by an absolute path and through a link; then answers.
fn reading_script() -> Vec<Turn> {
    vec![
        Turn::calls([
            Scripted::new(
                "inside",
                "read_file",
                json!({"path": "src/caller.rs", "start_line": null, "end_line": null}),
            ),
            Scripted::new(
                "dotdot",
                "read_file",
                json!({"path": "../secret.txt", "start_line": null, "end_line": null}),
            ),
            Scripted::new(
                "absolute",
                "read_file",
                json!({"path": "/etc/hostname", "start_line": null, "end_line": null}),
            ),
            Scripted::new(
                "link",
                "read_file",
                json!({"path": "link", "start_line": null, "end_line": null}),
            ),
            Scripted::new(
                "grep",
                "grep",
                json!({"pattern": "OUTSIDE_SECRET", "path": null}),
            ),
        ]),
        Turn::text(LENS_JSON),
    ]
}

fn assert_read_inside_only(fake: &FakeModel, answer: &Answer) {
    assert_eq!(answer.response.findings.len(), 1);
    assert_eq!(answer.tool_calls, Some(5));
    assert_eq!(answer.tool_records.len(), 5);
    let inside = fake.tool_result("inside").expect("the read's result");
    assert!(inside.text.contains(MARKER), "{}", inside.text);
    assert!(!inside.is_error);
    for id in ["dotdot", "absolute", "link"] {
        let r = fake.tool_result(id).expect(id);
        assert!(r.is_error || !r.text.contains(SECRET), "{id}: {r:?}");
    }
    for r in fake.tool_results() {
        assert!(!r.text.contains(SECRET), "{r:?}");
    }
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2);
    let mut tools = requests[0].tools.clone();
    tools.sort();
    assert_eq!(tools, ["grep", "list_files", "read_file"]);
    assert!(
        requests[0]
            .user_text
            .iter()
            .any(|t| t.contains("available to you read-only"))
    );
    // Usage is summed over the turns (the fake reports some on each).
    let usage = answer.usage.expect("usage");
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
}

#[tokio::test]
async fn anthropic_reads_the_snapshot_through_its_tools_and_nothing_outside() {
    let snap = snapshot();
    let fake = FakeModel::start(reading_script());
    let req = request(Some(&snap.root));
    let answer = run_with_policy::<Anthropic>(
        &spec(BackendKind::Anthropic),
        "model-1",
        &req,
        &env(fake.url()),
        &fast_policy(),
    )
    .await
    .expect("answer");
    assert_read_inside_only(&fake, &answer);
    // The second request sent the assistant turn back and the results as tool_result blocks.
    let second = &fake.model_requests()[1];
    let body: Value = serde_json::from_str(&second.body).expect("json");
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][1]["is_error"], true);
}

#[tokio::test]
async fn openai_reads_the_snapshot_through_its_tools_and_nothing_outside() {
    let snap = snapshot();
    let fake = FakeModel::start(reading_script());
    let req = request(Some(&snap.root));
    let answer = run_with_policy::<Openai>(
        &spec(BackendKind::Openai),
        "model-1",
        &req,
        &env(fake.v1_url()),
        &fast_policy(),
    )
    .await
    .expect("answer");
    assert_read_inside_only(&fake, &answer);
    let first: Value = serde_json::from_str(&fake.model_requests()[0].body).expect("json");
    assert_eq!(first["parallel_tool_calls"], false);
    assert_eq!(first["tools"][0]["function"]["strict"], true);
}

/// Gemini's turn goes back with its thought signature, each result as a `functionResponse`
/// answering its call's id.
#[tokio::test]
async fn gemini_reads_the_snapshot_through_its_tools_and_nothing_outside() {
    let snap = snapshot();
    let fake = FakeModel::start(reading_script());
    let req = request(Some(&snap.root));
    let answer = run_with_policy::<Gemini>(
        &spec(BackendKind::Gemini),
        "model-1",
        &req,
        &env(fake.url()),
        &fast_policy(),
    )
    .await
    .expect("answer");
    assert_read_inside_only(&fake, &answer);
    let requests = fake.model_requests();
    assert_eq!(requests[0].path, "/v1beta/models/model-1:generateContent");
    assert_eq!(requests[0].model.as_deref(), Some("model-1"));
    let second: Value = serde_json::from_str(&requests[1].body).expect("json");
    let contents = second["contents"].as_array().expect("contents");
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][0]["thoughtSignature"],
        "fake-signature-0"
    );
    let answers = contents[2]["parts"].as_array().expect("parts");
    assert_eq!(answers.len(), 5);
    assert_eq!(answers[0]["functionResponse"]["id"], "call_inside");
    assert!(
        answers[1]["functionResponse"]["response"]
            .get("error")
            .is_some()
    );
}

#[tokio::test]
async fn without_a_snapshot_no_tools_are_offered_and_the_prompt_says_diff_alone() {
    let fake = FakeModel::start(vec![Turn::text(LENS_JSON)]);
    let answer = run_with_policy::<Anthropic>(
        &spec(BackendKind::Anthropic),
        "model-1",
        &request(None),
        &env(fake.url()),
        &fast_policy(),
    )
    .await
    .expect("answer");
    assert_eq!(answer.tool_calls, None);
    let first = &fake.model_requests()[0];
    assert!(first.tools.is_empty(), "{:?}", first.tools);
    assert!(
        first
            .user_text
            .iter()
            .any(|t| t.contains("You see the diff alone"))
    );
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_is_stopped_by_the_budget() {
    let snap = snapshot();
    let list = |id: String| Scripted::new(&id, "list_files", json!({"path": null}));
    // Two calls a turn, on every turn the tools are offered; then the answer.
    let max_tool_calls = 3;
    let mut turns: Vec<Turn> = (0..=max_tool_calls + 1)
        .map(|t| Turn::calls([list(format!("a{t}")), list(format!("b{t}"))]))
        .collect();
    turns.push(Turn::text(LENS_JSON));
    let fake = FakeModel::start(turns);
    let answer = call_with::<Openai>(
        &spec(BackendKind::Openai),
        "model-1",
        &request(Some(&snap.root)),
        &env(fake.v1_url()),
        &fast_policy(),
        ToolCaps {
            max_tool_calls,
            ..ToolCaps::default()
        },
    )
    .await
    .expect("an answer once the tools are withdrawn");
    let spent = fake
        .tool_results()
        .iter()
        .filter(|r| r.text.contains(BUDGET_SPENT))
        .count();
    assert!(spent > 0, "no call was told the budget is spent");
    assert_eq!(
        fake.tool_results().len() - spent,
        usize::try_from(max_tool_calls).expect("small"),
        "more calls ran than the budget allows"
    );
    let requests = fake.model_requests();
    assert!(requests.last().expect("last").tools.is_empty());
    assert_eq!(answer.response.findings.len(), 1);
}

/// Each turn resends the conversation: once the turns' input tokens reach `max_call_tokens`,
/// the calls asked are answered "give your final answer", none runs, and no tools are offered.
#[tokio::test]
async fn a_tool_loop_past_its_input_tokens_is_asked_for_the_final_answer() {
    let snap = snapshot();
    let list = |id: &str| Scripted::new(id, "list_files", json!({"path": null}));
    // `turns` turns of one call each, then the answer.
    let run = |max_call_tokens: u64, turns: usize| {
        let snap = &snap;
        async move {
            let mut script: Vec<Turn> = (0..turns)
                .map(|t| Turn::calls([list(&format!("a{t}"))]))
                .collect();
            script.push(Turn::text(LENS_JSON));
            let fake = FakeModel::start(script);
            let answer = call_with::<Openai>(
                &spec(BackendKind::Openai),
                "model-1",
                &request(Some(&snap.root)),
                &env(fake.v1_url()),
                &fast_policy(),
                ToolCaps {
                    max_call_tokens,
                    ..ToolCaps::default()
                },
            )
            .await
            .expect("an answer");
            (answer, fake)
        }
    };
    // The first turn alone sends more than 10 tokens: its call is told to answer.
    let (answer, fake) = run(10, 1).await;
    let results = fake.tool_results();
    assert!(!results.is_empty());
    assert!(
        results.iter().all(|r| r.text.contains(TOKENS_SPENT)),
        "{results:?}"
    );
    assert_eq!(answer.tool_calls, Some(0), "no tool ran");
    assert!(fake.model_requests().last().expect("last").tools.is_empty());
    assert_eq!(answer.response.findings.len(), 1);
    // Within the default, both calls run.
    let (answer, fake) = run(crate::lens::tools::DEFAULT_MAX_CALL_TOKENS, 2).await;
    assert_eq!(answer.tool_calls, Some(2));
    assert!(
        !fake
            .tool_results()
            .iter()
            .any(|r| r.text.contains(TOKENS_SPENT))
    );
}

#[tokio::test]
async fn a_server_without_tools_reviews_the_diff_alone_and_says_so() {
    let snap = snapshot();
    let server = FakeServer::start(vec![
        Reply::json(400, json!({"error": {"message": "\"tools\" is not supported by this model", "type": "invalid_request_error"}})),
        Reply::json(200, json!({"id": "c1", "model": "local", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": LENS_JSON}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})),
    ])
    .await;
    let answer = call_with::<Openai>(
        &spec(BackendKind::Openai),
        "model-1",
        &request(Some(&snap.root)),
        &env(format!("{}/v1", server.base)),
        &fast_policy(),
        ToolCaps::default(),
    )
    .await
    .expect("answer");
    assert_eq!(answer.tool_calls, None);
    let notice = answer.notice.expect("a notice").to_string();
    assert!(notice.contains("does not take tools"), "{notice}");
    let received = server.received();
    assert_eq!(received.len(), 2);
    assert!(received[0].body.get("tools").is_some());
    assert!(received[1].body.get("tools").is_none());
    let prompt = received[1].body["messages"][0]["content"]
        .as_str()
        .expect("prompt");
    assert!(prompt.contains("You see the diff alone"), "{prompt}");
}

#[test]
fn anthropic_and_openai_take_the_lens_response_as_their_final_answer() {
    // The two vendors' answer readers still read a final answer with no tool use.
    assert!(
        Anthropic::tool_use(
            br#"{"stop_reason":"end_turn","content":[{"type":"text","text":"{}"}]}"#
        )
        .is_none()
    );
    assert!(
        Openai::tool_use(br#"{"choices":[{"message":{"content":"{}"},"finish_reason":"stop"}]}"#)
            .is_none()
    );
}

/// A GitHub token shape (`ghp_` and 36 characters) and a value remembered from the diff
/// that no rule matches by shape: both in the snapshot, neither may reach the model.
const TOKEN: &str = "ghp_R7kQ2mX9vB4nT1cZ8wL5yH3jD6fG0sA2pE4u";
const REMEMBERED: &str = "Qw3rTy9UiOp2AsDf";

fn secret_snapshot() -> Snapshot {
    snapshot_of(&[
        (
            "deploy/ci.env",
            format!("GITHUB_TOKEN={TOKEN}\nlet seed = \"{REMEMBERED}\";\n"),
        ),
        (&format!("deploy/{TOKEN}.md"), "named after it\n".to_owned()),
    ])
}

fn secret_script() -> Vec<Turn> {
    vec![
        Turn::calls([
            Scripted::new(
                "read",
                "read_file",
                json!({"path": "deploy/ci.env", "start_line": null, "end_line": null}),
            ),
            Scripted::new(
                "grep",
                "grep",
                json!({"pattern": "TOKEN|seed", "path": null}),
            ),
            Scripted::new("list", "list_files", json!({"path": "deploy"})),
        ]),
        Turn::text(LENS_JSON),
    ]
}

fn assert_no_secret_reached(fake: &FakeModel) {
    for id in ["read", "grep", "list"] {
        let r = fake.tool_result(id).expect(id);
        assert!(r.text.contains("[REDACTED github-pat]"), "{id}: {}", r.text);
    }
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2);
    for (i, request) in requests.iter().enumerate() {
        assert!(
            !request.body.contains(TOKEN),
            "request {i}: {}",
            request.body
        );
        assert!(
            !request.body.contains(REMEMBERED),
            "request {i}: {}",
            request.body
        );
    }
}

#[tokio::test]
async fn tool_results_are_masked_as_the_prompt_is_for_both_vendors() {
    let snap = secret_snapshot();
    // The review remembered the value from its diff, as the pipeline does before any lens.
    let review = crate::redact::KnownSecrets::new();
    review.remember([("generic-api-key", REMEMBERED)]);
    let req = request(Some(&snap.root));
    for kind in [BackendKind::Anthropic, BackendKind::Openai] {
        let fake = FakeModel::start(secret_script());
        let spec = spec(kind);
        let answer = match kind {
            BackendKind::Anthropic => {
                let env = env(fake.url());
                run_with_policy::<Anthropic>(&spec, "model-1", &req, &env, &fast_policy()).await
            }
            _ => {
                let env = env(fake.v1_url());
                run_with_policy::<Openai>(&spec, "model-1", &req, &env, &fast_policy()).await
            }
        };
        answer.expect("answer");
        assert_no_secret_reached(&fake);
    }
}

/// A snapshot of `files` files that [`COSTLY`] searches for seconds.
fn costly_snapshot(files: usize) -> Snapshot {
    let body = costly_text();
    let names: Vec<String> = (0..files).map(|i| format!("src/f{i:02}.txt")).collect();
    let files: Vec<(&str, String)> = names.iter().map(|n| (n.as_str(), body.clone())).collect();
    snapshot_of(&files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_costly_tool_call_ends_with_the_lens_timeout() {
    let snap = costly_snapshot(12);
    let grep = |id: &str| Scripted::new(id, "grep", json!({"pattern": COSTLY, "path": null}));
    let fake = FakeModel::start(vec![
        Turn::calls([grep("g1"), grep("g2")]),
        Turn::text(LENS_JSON),
    ]);
    let mut spec = spec(BackendKind::Openai);
    spec.timeout = Duration::from_secs(1);
    let (req, env, policy) = (request(Some(&snap.root)), env(fake.v1_url()), fast_policy());
    let started = std::time::Instant::now();
    let call = call_with::<Openai>(&spec, "model-1", &req, &env, &policy, ToolCaps::default());
    let result = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the lens outlived its timeout by far");
    let took = started.elapsed();
    let failure = result.expect_err("the tools cannot finish in a second");
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure:?}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
}
