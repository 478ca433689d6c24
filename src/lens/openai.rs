//! The `openai` backend: Chat Completions over HTTPS (`docs/contract.md` "Backends"), which
//! OpenAI and every OpenAI-compatible server (vLLM, Ollama, LiteLLM, Azure, DeepSeek, Mistral)
//! speak.
//!
//! `POST {OPENAI_BASE_URL or https://api.openai.com/v1}/chat/completions` with
//! `Authorization: Bearer`. The base URL is read as the OpenAI SDKs read it, **with** `/v1`, so
//! a proxy's URL works unchanged. The answer is asked for with `response_format: json_schema`
//! (strict); a server that does not support it is asked once more without it, and the content
//! is always parsed tolerantly (fences, prose) since compatible servers do not all enforce it.
//!
//! Cost is not computed (`cost_usd` is always `None`): prices change with every model, and a
//! compatible server's model costs what its operator says, which we cannot know.

use std::borrow::Cow;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::{self, ApiVendor, ToolCall, ToolUse};
use super::api_call::{self, CallError, DEFAULT_MAX_OUTPUT_TOKENS};
use super::keys::{EnvVars, Sources};
use super::tools::{ToolDef, ToolResult};
use super::{Answer, BackendKind, Failure, LensSpec, Usage, Vendor};
use crate::lens::contract::LensResponse;

/// Used when `OPENAI_BASE_URL` is unset; like the SDKs, with `/v1`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The schema's name in `response_format` (`[a-zA-Z0-9_-]{1,64}`).
const SCHEMA_NAME: &str = "lens_response";

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Value]>,
    /// With tools: one call at a time (strict function schemas do not allow parallel calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    /// Covers visible and reasoning tokens (`max_tokens` is deprecated and refused by
    /// reasoning models).
    max_completion_tokens: u32,
    /// Sent only when the lens sets `temperature`: reasoning models (o-series, GPT-5) refuse
    /// any value but their default, so leaving it out of the config is how to serve them.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
}

#[derive(Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema,
}

#[derive(Serialize)]
struct JsonSchema {
    name: &'static str,
    schema: Value,
    strict: bool,
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    refusal: Option<String>,
}

/// A string, or (some compatible servers) a list of text parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

impl Content {
    fn text(self) -> String {
        match self {
            Content::Text(s) => s,
            Content::Parts(parts) => parts
                .into_iter()
                .filter_map(|p| p.text)
                .collect::<Vec<_>>()
                .join(""),
        }
    }
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// The `openai` backend's wire format.
pub struct Openai;

impl ApiVendor for Openai {
    const KIND: BackendKind = BackendKind::Openai;
    const VENDOR: Vendor = Vendor::Openai;
    const VARS: EnvVars = EnvVars {
        key: "OPENAI_API_KEY",
        base_url: "OPENAI_BASE_URL",
    };
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;

    fn path(_model: &str) -> Cow<'static, str> {
        Cow::Borrowed("chat/completions")
    }

    fn headers(key: &str, from: &Sources) -> Result<HeaderMap, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert(
            AUTHORIZATION,
            api_call::secret_header(&format!("Bearer {key}"), from)?,
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(headers)
    }

    /// `temperature` is sent only when `spec.temperature` is set: omit it in the lens's config
    /// for reasoning models, which reject any explicit value.
    fn body(
        spec: &LensSpec,
        model: &str,
        messages: &[Value],
        structured: Option<&Value>,
        tools: Option<&[Value]>,
    ) -> Result<Vec<u8>, Failure> {
        api::encode(&ChatRequest {
            model,
            messages,
            tools,
            parallel_tool_calls: tools.map(|_| false),
            max_completion_tokens: spec.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            temperature: spec.temperature,
            response_format: structured.map(|schema| ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchema {
                    name: SCHEMA_NAME,
                    schema: schema.clone(),
                    strict: true,
                },
            }),
        })
    }

    fn tool_def(def: &ToolDef) -> Value {
        def.openai_chat()
    }

    /// A message with `tool_calls`; it goes back verbatim, each result as a `tool` message.
    fn tool_use(body: &[u8]) -> Option<ToolUse> {
        let resp: Value = serde_json::from_slice(body).ok()?;
        let message = resp.get("choices")?.get(0)?.get("message")?;
        let calls: Vec<ToolCall> = message
            .get("tool_calls")?
            .as_array()?
            .iter()
            .filter_map(|c| {
                let function = c.get("function")?;
                Some(ToolCall {
                    id: c.get("id")?.as_str()?.to_owned(),
                    name: function.get("name")?.as_str()?.to_owned(),
                    input: function.get("arguments").cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        if calls.is_empty() {
            return None;
        }
        let usage = resp.get("usage").and_then(|u| {
            Some(Usage {
                input_tokens: u.get("prompt_tokens")?.as_u64()?,
                output_tokens: u.get("completion_tokens")?.as_u64()?,
            })
        });
        Some(ToolUse {
            assistant: message.clone(),
            calls,
            usage,
        })
    }

    fn push_results(messages: &mut Vec<Value>, turn: ToolUse, results: Vec<ToolResult>) {
        messages.push(turn.assistant);
        for (call, r) in turn.calls.iter().zip(results) {
            messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": r.content}));
        }
    }

    fn rejects_structured_output(err: &CallError) -> bool {
        rejects_structured_output(err)
    }

    fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
        answer(body, key)
    }
}

/// A 400 or 422 about `response_format`: a server or model without JSON-schema output
/// (DeepSeek, older local servers). The prompt carries the schema too.
fn rejects_structured_output(err: &CallError) -> bool {
    let detail = err.detail.to_ascii_lowercase();
    matches!(err.status, Some(400 | 422))
        && ["response_format", "json_schema", "structured output"]
            .iter()
            .any(|w| detail.contains(w))
}

/// Reads a 2xx Chat Completions response as the lens's answer.
fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
    let unreadable = |why: String| {
        let info = api_call::ErrorInfo::parse(body);
        Failure::fatal(format!("{why}: {}", api_call::scrub(&info.message, key)))
    };
    let resp: ChatResponse = serde_json::from_slice(body)
        .map_err(|e| unreadable(format!("unreadable Chat Completions response ({e})")))?;
    let Some(choice) = resp.choices.into_iter().next() else {
        // Some gateways answer an error with status 200.
        return Err(unreadable("no choices in the response".to_owned()));
    };
    let message = choice.message.unwrap_or(ChoiceMessage {
        content: None,
        refusal: None,
    });
    if let Some(refusal) = message.refusal.as_deref().filter(|r| !r.trim().is_empty()) {
        return Err(Failure::fatal(format!(
            "the model refused to answer: {}",
            api_call::scrub(&api_call::clean(refusal), key)
        )));
    }
    match choice.finish_reason.as_deref() {
        Some("length") => {
            return Err(Failure::fatal(
                "answer truncated at max_completion_tokens; raise the lens's max_output_tokens",
            ));
        }
        Some("content_filter") => {
            return Err(Failure::fatal(
                "the answer was withheld by a content filter",
            ));
        }
        _ => {}
    }
    let text = message.content.map(Content::text).unwrap_or_default();
    if text.trim().is_empty() {
        return Err(Failure::fatal("the model's answer is empty"));
    }
    let response = LensResponse::parse(&text).map_err(|e| {
        Failure::fatal(format!(
            "unreadable answer: {e}; it begins: {}",
            api_call::opening(&text, key)
        ))
    })?;
    // Compatible servers may leave usage out or send half of it: record it only when whole.
    let usage = resp.usage.and_then(|u| {
        Some(Usage {
            input_tokens: u.prompt_tokens?,
            output_tokens: u.completion_tokens?,
        })
    });
    Ok(Answer {
        response,
        usage,
        cost_usd: None,
        model: resp.model.filter(|m| !m.is_empty()),
        raw: text,
        tool_calls: None,
        tool_records: Vec::new(),
        notice: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::lens::api::run_with_policy;
    use crate::lens::contract::response_schema;
    use crate::lens::keys::ApiEnv;
    use crate::lens::{BackendKind, FailureKind, LensRequest};
    use crate::testing::api_server::{FakeServer, Reply, fast_policy};

    const KEY: &str = "sk-proj-test-key-do-not-leak-0123456789abcdef";
    const MODEL: &str = "gpt-4o-2024-08-06";
    const PROMPT: &str = "Review this change.\n\n+fn b() {}";

    fn spec() -> LensSpec {
        let mut spec = LensSpec::new("gpt", BackendKind::Openai);
        spec.model = Some(MODEL.to_owned());
        spec.timeout = Duration::from_secs(10);
        spec
    }

    fn request() -> LensRequest {
        crate::testing::fake_cli::request(PROMPT)
    }

    /// The server's base URL as the SDKs want it: with `/v1`.
    fn env(server: &FakeServer) -> ApiEnv {
        ApiEnv::new(
            Openai::VARS,
            Some(KEY.to_owned()),
            Some(format!("{}/v1", server.base)),
        )
    }

    fn lens_json() -> String {
        json!({"findings": [{"path": "src/lib.rs", "line": 2, "start_line": null, "side": "RIGHT",
            "severity": "blocking", "confidence": "high", "title": "b is unused",
            "body": "Remove it or call it."}], "summary": null})
        .to_string()
    }

    fn completion(content: Value, finish_reason: &str) -> Value {
        json!({"id": "chatcmpl-ABfvbtVnTu5DeC4EFnRYj8mtfOM99", "object": "chat.completion",
            "created": 1727346143, "model": MODEL,
            "choices": [{"index": 0,
                         "message": {"role": "assistant", "content": content, "refusal": null},
                         "logprobs": null, "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 79, "completion_tokens": 14, "total_tokens": 93,
                      "completion_tokens_details": {"reasoning_tokens": 0}}})
    }

    fn ok() -> Reply {
        Reply::json(200, completion(json!(lens_json()), "stop"))
    }

    fn error(status: u16, kind: &str, code: &str, msg: &str) -> Reply {
        Reply::json(
            status,
            json!({"error": {"message": msg, "type": kind, "param": null, "code": code}}),
        )
    }

    async fn go(server: &FakeServer) -> Result<Answer, Failure> {
        run_with_policy::<Openai>(&spec(), MODEL, &request(), &env(server), &fast_policy()).await
    }

    #[tokio::test]
    async fn a_structured_answer_is_read_and_the_request_is_right() {
        let server = FakeServer::start(vec![ok()]).await;
        let answer = go(&server).await.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(answer.response.summary, None);
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 79,
                output_tokens: 14
            })
        );
        assert_eq!(answer.model.as_deref(), Some(MODEL));
        assert_eq!(answer.cost_usd, None);

        let got = server.received();
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("x-api-key"), None);
        assert_eq!(r.body["model"], MODEL);
        assert_eq!(
            r.body["messages"],
            json!([{"role": "user", "content": crate::lens::contract::with_repository(PROMPT, false)}])
        );
        assert_eq!(r.body["max_completion_tokens"], DEFAULT_MAX_OUTPUT_TOKENS);
        assert!(r.body.get("max_tokens").is_none());
        assert!(r.body.get("temperature").is_none(), "{}", r.body);
        assert_eq!(
            r.body["response_format"],
            json!({"type": "json_schema",
                   "json_schema": {"name": "lens_response", "schema": response_schema(),
                                   "strict": true}})
        );
    }

    #[tokio::test]
    async fn temperature_and_max_tokens_come_from_the_spec() {
        let server = FakeServer::start(vec![ok()]).await;
        let mut spec = spec();
        spec.temperature = Some(0.5);
        spec.max_output_tokens = Some(4096);
        run_with_policy::<Openai>(&spec, MODEL, &request(), &env(&server), &fast_policy())
            .await
            .expect("ok");
        let body = &server.received()[0].body;
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(body["max_completion_tokens"], 4096);
    }

    #[tokio::test]
    async fn a_fenced_answer_and_content_parts_are_read() {
        let text = format!("```json\n{}\n```", lens_json());
        let server =
            FakeServer::start(vec![Reply::json(200, completion(json!(text), "stop"))]).await;
        assert_eq!(go(&server).await.expect("ok").response.findings.len(), 1);

        let parts = json!([{"type": "text", "text": lens_json()}]);
        let server = FakeServer::start(vec![Reply::json(200, completion(parts, "stop"))]).await;
        assert_eq!(go(&server).await.expect("ok").response.findings.len(), 1);
    }

    #[tokio::test]
    async fn a_rate_limit_is_retried_after_retry_after_ms() {
        let server = FakeServer::start(vec![
            error(
                429,
                "requests",
                "rate_limit_exceeded",
                "Rate limit reached.",
            )
            .header("retry-after-ms", "300"),
            ok(),
        ])
        .await;
        let started = Instant::now();
        go(&server).await.expect("ok after the wait");
        // The policy's own backoff is a few ms: only the header explains this wait.
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(server.received().len(), 2);
    }

    #[tokio::test]
    async fn insufficient_quota_is_fatal_and_not_retried() {
        let server = FakeServer::start(vec![
            error(
                429,
                "insufficient_quota",
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
            )
            .header("retry-after", "1"),
        ])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert!(
            err.message
                .starts_with("billing or quota limit reached (429 insufficient_quota)"),
            "{}",
            err.message
        );
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn a_mistral_rate_limit_with_a_string_code_is_retried() {
        let server = FakeServer::start(vec![
            Reply::json(
                429,
                json!({"object": "error", "message": "Rate limit exceeded",
                       "type": "rate_limited", "code": "1300"}),
            ),
            ok(),
        ])
        .await;
        go(&server).await.expect("ok");
        assert_eq!(server.received().len(), 2);
    }

    #[tokio::test]
    async fn a_vllm_unknown_model_is_named() {
        let server = FakeServer::start(vec![Reply::json(
            404,
            json!({"object": "error", "message": "The model `first` does not exist.",
                   "type": "NotFoundError", "param": null, "code": 404}),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(
            err.message,
            format!("unknown model `{MODEL}` (404): The model `first` does not exist.")
        );
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn a_gateway_string_error_is_read() {
        let server =
            FakeServer::start(vec![Reply::json(400, json!({"error": "missing model"}))]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(err.message, "request rejected (400): missing model");
    }

    #[tokio::test]
    async fn a_fastapi_validation_error_is_read() {
        let server = FakeServer::start(vec![Reply::json(
            422,
            json!({"detail": [{"loc": ["body", "messages"], "msg": "field required",
                               "type": "value_error.missing"}]}),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(
            err.message,
            "request rejected (422): body.messages: field required"
        );
    }

    #[tokio::test]
    async fn a_server_without_json_schema_is_asked_again_without_it() {
        let server = FakeServer::start(vec![
            error(
                400,
                "invalid_request_error",
                "invalid_request_error",
                "This response_format type is unavailable now",
            ),
            ok(),
        ])
        .await;
        // A real plan's prompt: the schema goes once — in `response_format` while it is sent,
        // else in the prompt.
        let diff = crate::diff::Diff::parse(
            "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1,2 @@\n x\n+y\n",
        )
        .unwrap();
        let prompt = crate::plan::build_prompt(&diff, None);
        let req = crate::testing::fake_cli::request(&prompt);
        run_with_policy::<Openai>(&spec(), MODEL, &req, &env(&server), &fast_policy())
            .await
            .expect("ok");
        let got = server.received();
        assert_eq!(got.len(), 2);
        let schema = response_schema().to_string();
        let content = |i: usize| {
            got[i].body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(got[0].body.get("response_format").is_some());
        assert!(!content(0).contains(&schema), "{}", content(0));
        assert!(content(0).contains("in the response format you were given"));
        assert!(got[1].body.get("response_format").is_none());
        assert!(content(1).contains(&schema), "{}", content(1));
    }

    #[tokio::test]
    async fn a_truncated_answer_fails() {
        let server = FakeServer::start(vec![Reply::json(
            200,
            completion(json!(r#"{"findings": [{"pa"#), "length"),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert!(
            err.message.starts_with("answer truncated"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn a_refusal_fails() {
        let mut body = completion(Value::Null, "stop");
        body["choices"][0]["message"]["refusal"] = json!("I'm sorry, I cannot help with that.");
        let server = FakeServer::start(vec![Reply::json(200, body)]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(
            err.message,
            "the model refused to answer: I'm sorry, I cannot help with that."
        );
    }

    #[tokio::test]
    async fn missing_or_partial_usage_is_tolerated() {
        let mut body = completion(json!(lens_json()), "stop");
        body.as_object_mut().expect("object").remove("usage");
        let server = FakeServer::start(vec![Reply::json(200, body)]).await;
        assert_eq!(go(&server).await.expect("ok").usage, None);

        let mut body = completion(json!(lens_json()), "stop");
        body["usage"] = json!({"prompt_tokens": 10});
        let server = FakeServer::start(vec![Reply::json(200, body)]).await;
        assert_eq!(go(&server).await.expect("ok").usage, None);
    }

    #[tokio::test]
    async fn an_empty_answer_or_an_error_with_status_200_fails() {
        let server =
            FakeServer::start(vec![Reply::json(200, completion(Value::Null, "stop"))]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.message, "the model's answer is empty");

        let server = FakeServer::start(vec![Reply::json(
            200,
            json!({"error": {"message": "upstream timed out", "type": "server_error"}}),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(
            err.message,
            "no choices in the response: upstream timed out"
        );
    }

    #[tokio::test]
    async fn base_urls_work_with_or_without_a_trailing_slash() {
        for suffix in ["/v1", "/v1/"] {
            let server = FakeServer::start(vec![ok()]).await;
            let env = ApiEnv::new(
                Openai::VARS,
                Some(KEY.to_owned()),
                Some(format!("{}{suffix}", server.base)),
            );
            run_with_policy::<Openai>(&spec(), MODEL, &request(), &env, &fast_policy())
                .await
                .expect("ok");
            assert_eq!(server.received()[0].path, "/v1/chat/completions");
        }
        // A proxy mounted under a prefix keeps it.
        let server = FakeServer::start(vec![ok()]).await;
        let env = ApiEnv::new(
            Openai::VARS,
            Some(KEY.to_owned()),
            Some(format!("{}/litellm/v1", server.base)),
        );
        run_with_policy::<Openai>(&spec(), MODEL, &request(), &env, &fast_policy())
            .await
            .expect("ok");
        assert_eq!(server.received()[0].path, "/litellm/v1/chat/completions");
    }

    #[tokio::test]
    async fn a_missing_key_fails_before_any_request() {
        let env = ApiEnv::new(Openai::VARS, Some(String::new()), None);
        let err = run_with_policy::<Openai>(&spec(), MODEL, &request(), &env, &fast_policy())
            .await
            .expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(err.message, "OPENAI_API_KEY is not set");
    }

    #[tokio::test]
    async fn server_errors_are_retried_then_reported() {
        let server = FakeServer::start(vec![Reply::raw(502, "<html>Bad Gateway</html>")]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Transient { retry_after: None });
        assert_eq!(
            err.message,
            "server error (502): <html>Bad Gateway</html> (gave up after 3 attempts)"
        );
        assert_eq!(server.received().len(), 3);
    }

    #[tokio::test]
    async fn the_key_never_appears_in_a_failure_or_debug_output() {
        let server = FakeServer::start(vec![
            error(
                401,
                "invalid_request_error",
                "invalid_api_key",
                &format!("Incorrect API key provided: {KEY}."),
            ),
            Reply::json(200, completion(json!(format!("key {KEY}")), "stop")),
            Reply::json(200, json!({"error": format!("bad key {KEY}")})),
        ])
        .await;
        let env = env(&server);
        let mut errs = Vec::new();
        for _ in 0..3 {
            errs.push(go(&server).await.expect_err("fails"));
        }
        assert!(errs[0].message.starts_with("authentication failed (401)"));
        for err in &errs {
            assert!(!err.message.contains(KEY), "{}", err.message);
            assert!(!format!("{err:?}").contains(KEY));
        }
        assert!(!format!("{env:?}").contains(KEY));
    }
}
