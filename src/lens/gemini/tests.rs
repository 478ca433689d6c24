//! The `gemini` backend against a scripted server speaking `generateContent` as the Gemini API
//! does: the request's shape, the answer's reading, its failures and retries. The tool loop
//! through the repository is in `lens/api/tests.rs`, beside the other vendors'.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::lens::api::run_with_policy;
use crate::lens::contract::response_schema;
use crate::lens::keys::ApiEnv;
use crate::lens::{FailureKind, LensRequest};
use crate::testing::api_server::{FakeServer, Reply, fast_policy};

const KEY: &str = "AIzaSyD-test-key-do-not-leak-0123456789ab";
const MODEL: &str = "gemini-2.5-pro";
const PROMPT: &str = "Review this change.\n\n+fn b() {}";

fn spec() -> LensSpec {
    let mut spec = LensSpec::new("gem", BackendKind::Gemini);
    spec.model = Some(MODEL.to_owned());
    spec.timeout = Duration::from_secs(10);
    spec
}

fn request() -> LensRequest {
    crate::testing::fake_cli::request(PROMPT)
}

fn env(server: &FakeServer) -> ApiEnv {
    ApiEnv::new(
        Gemini::VARS,
        Some(KEY.to_owned()),
        Some(server.base.clone()),
    )
}

fn lens_json() -> String {
    json!({"findings": [{"path": "src/lib.rs", "line": 2, "start_line": null, "side": "RIGHT",
        "severity": "advisory", "confidence": "medium", "title": "b is unused",
        "body": "Remove it or call it."}], "summary": "One finding."})
    .to_string()
}

/// A `generateContent` response as the API writes it: one candidate, usage with thinking.
fn response(parts: Value, finish: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish,
                        "index": 0}],
        "usageMetadata": {"promptTokenCount": 249, "candidatesTokenCount": 26,
                          "thoughtsTokenCount": 100, "totalTokenCount": 375},
        "modelVersion": "gemini-2.5-pro-preview-05",
        "responseId": "mDhcaO6bMriV1dkPwcbsyAI"
    })
}

fn ok() -> Reply {
    Reply::json(200, response(json!([{"text": lens_json()}]), "STOP"))
}

/// An error as Google's APIs write it: `code`, `message`, `status`.
fn error(code: u16, status: &str, message: &str) -> Reply {
    Reply::json(
        code,
        json!({"error": {"code": code, "message": message, "status": status}}),
    )
}

async fn go(server: &FakeServer) -> Result<Answer, Failure> {
    run_with_policy::<Gemini>(&spec(), MODEL, &request(), &env(server), &fast_policy()).await
}

#[tokio::test]
async fn a_structured_answer_is_read_and_the_key_is_in_a_header_never_the_url() {
    let server = FakeServer::start(vec![ok()]).await;
    let answer = go(&server).await.expect("ok");
    assert_eq!(answer.response.findings.len(), 1);
    assert_eq!(answer.response.findings[0].title, "b is unused");
    assert_eq!(answer.response.summary.as_deref(), Some("One finding."));
    // Thinking counts as output, as it is billed.
    assert_eq!(
        answer.usage,
        Some(Usage {
            input_tokens: 249,
            output_tokens: 126
        })
    );
    assert_eq!(answer.model.as_deref(), Some("gemini-2.5-pro-preview-05"));
    assert_eq!(answer.cost_usd, None);

    let got = server.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1beta/models/gemini-2.5-pro:generateContent");
    assert!(
        !r.path.contains(KEY) && !r.path.contains("key="),
        "{}",
        r.path
    );
    assert_eq!(r.header("x-goog-api-key"), Some(KEY));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["contents"][0]["role"], "user");
    let prompt = r.body["contents"][0]["parts"][0]["text"]
        .as_str()
        .expect("the prompt");
    assert!(prompt.starts_with("Review this change."), "{prompt}");
    let config = &r.body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseJsonSchema"], response_schema());
    assert_eq!(config["maxOutputTokens"], DEFAULT_MAX_OUTPUT_TOKENS);
    assert!(config.get("temperature").is_none(), "{config}");
    assert!(
        r.body.get("tools").is_none(),
        "no snapshot, no tools: {}",
        r.body
    );
}

#[tokio::test]
async fn temperature_and_max_tokens_come_from_the_spec() {
    let server = FakeServer::start(vec![ok()]).await;
    let mut spec = spec();
    spec.temperature = Some(0.25);
    spec.max_output_tokens = Some(1234);
    run_with_policy::<Gemini>(&spec, MODEL, &request(), &env(&server), &fast_policy())
        .await
        .expect("ok");
    let config = &server.received()[0].body["generationConfig"];
    assert_eq!(config["temperature"], 0.25);
    assert_eq!(config["maxOutputTokens"], 1234);
}

#[test]
fn the_model_is_one_encoded_path_segment() {
    assert_eq!(
        Gemini::path("models/gemini-2.5-flash"),
        "v1beta/models/gemini-2.5-flash:generateContent"
    );
    let odd = Gemini::path("x/../../v1/files?key=1#y");
    assert_eq!(
        odd,
        "v1beta/models/x%2F..%2F..%2Fv1%2Ffiles%3Fkey%3D1%23y:generateContent"
    );
}

/// Older models refuse JSON output while tools are offered; the question is asked again
/// without it, and the prompt's schema still shapes the answer.
#[tokio::test]
async fn a_model_without_structured_output_is_asked_again_without_it() {
    let fenced = format!("Here it is:\n```json\n{}\n```", lens_json());
    let server = FakeServer::start(vec![
        error(
            400,
            "INVALID_ARGUMENT",
            "Function calling with a response mime type: 'application/json' is unsupported",
        ),
        Reply::json(200, response(json!([{"text": fenced}]), "STOP")),
    ])
    .await;
    let answer = go(&server).await.expect("ok");
    assert_eq!(answer.response.findings.len(), 1);
    let got = server.received();
    assert_eq!(got.len(), 2);
    assert!(
        got[0].body["generationConfig"]
            .get("responseMimeType")
            .is_some()
    );
    let second = &got[1].body["generationConfig"];
    assert!(second.get("responseMimeType").is_none(), "{second}");
    assert!(second.get("responseJsonSchema").is_none(), "{second}");
}

#[tokio::test]
async fn unavailable_twice_then_an_answer() {
    let busy = || {
        error(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
        )
    };
    let server = FakeServer::start(vec![busy(), busy(), ok()]).await;
    let answer = go(&server).await.expect("ok");
    assert_eq!(answer.response.findings.len(), 1);
    assert_eq!(server.received().len(), 3);
}

/// Google answers a wrong key with a 400, not a 401: it fails at once, saying so, and the key
/// the server echoes is not repeated.
#[tokio::test]
async fn a_bad_key_fails_at_once_and_is_never_quoted() {
    let server = FakeServer::start(vec![error(
        400,
        "INVALID_ARGUMENT",
        &format!("API key not valid. Please pass a valid API key. ({KEY})"),
    )])
    .await;
    let err = go(&server).await.expect_err("fails");
    assert_eq!(err.kind, FailureKind::Fatal);
    assert!(err.message.contains("API key not valid"), "{}", err.message);
    assert!(!err.message.contains(KEY), "{}", err.message);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn the_ends_of_an_answer_that_holds_none_are_named() {
    for (reply, says) in [
        (
            response(json!([{"text": "{\"findings\": ["}]), "MAX_TOKENS"),
            "raise the lens's max_output_tokens",
        ),
        (response(json!([]), "SAFETY"), "withheld (SAFETY)"),
        (
            response(json!([]), "MALFORMED_FUNCTION_CALL"),
            "tool call it could not",
        ),
        (
            json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                   "usageMetadata": {"promptTokenCount": 10}}),
            "the prompt was blocked (PROHIBITED_CONTENT)",
        ),
        (response(json!([{"text": "  "}]), "STOP"), "answer is empty"),
    ] {
        let server = FakeServer::start(vec![Reply::json(200, reply)]).await;
        let err = go(&server).await.expect_err("fails");
        assert!(err.message.contains(says), "{says}: {}", err.message);
    }
}

/// Thought summaries are not the answer; the answer may come in several text parts.
#[tokio::test]
async fn thoughts_are_left_out_and_text_parts_are_joined() {
    let json = lens_json();
    let (a, b) = json.split_at(json.len() / 2);
    let parts = json!([
        {"text": "I should check b's callers first.", "thought": true},
        {"text": a},
        {"text": b},
    ]);
    let server = FakeServer::start(vec![Reply::json(200, response(parts, "STOP"))]).await;
    let answer = go(&server).await.expect("ok");
    assert_eq!(answer.raw, json);
}

/// The model's turn goes back as it came (its thought signature too); each result answers its
/// call by name, with the call's id when there is one.
#[test]
fn results_answer_their_calls_by_name_and_id() {
    let body = response(
        json!([
            {"functionCall": {"id": "c1", "name": "read_file", "args": {"path": "a.rs"}},
             "thoughtSignature": "c2lnbmF0dXJl"},
            {"functionCall": {"name": "grep", "args": {"pattern": "b("}}},
        ]),
        "STOP",
    );
    let turn = Gemini::tool_use(body.to_string().as_bytes()).expect("a tool turn");
    assert_eq!(turn.calls.len(), 2);
    assert_eq!(
        turn.usage,
        Some(Usage {
            input_tokens: 249,
            output_tokens: 126
        })
    );
    let mut contents = vec![Gemini::prompt_message("p")];
    let mut read = ToolResult::error("fn a() {}");
    read.is_error = false;
    let results = vec![read, ToolResult::error("bad pattern")];
    Gemini::push_results(&mut contents, turn, results);
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "c2lnbmF0dXJl");
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "c1", "name": "read_file",
                                  "response": {"output": "fn a() {}"}}},
            {"functionResponse": {"name": "grep", "response": {"error": "bad pattern"}}},
        ]})
    );
    let text_only = response(json!([{"text": lens_json()}]), "STOP");
    assert!(Gemini::tool_use(text_only.to_string().as_bytes()).is_none());
}
